#!/bin/bash
# trust-sign.sh - signed indexes, with the real minisign: keys from
# `minisign -G -W`, signatures from `minisign -S` (prehashed) and
# `minisign -S -l` (legacy). With a trusted key (--trusted-key, or the
# directory $CAFS_TRUSTED_KEYS_DIR), a well-signed index works for list,
# extract, mount and cache fill, local and over nginx; every bad case
# (tampered index, wrong key, missing, foreign, truncated or garbage
# signature, altered trusted comment, key id mismatch, a .catar) is refused
# with one line and a non-zero exit before any chunk is asked of nginx.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"
need minisign python3

W=$T/www
K=$T/keys
src=$T/src
mkdir -p "$W" "$K" "$src/d"
"$GEN" 3M 41 >"$src/d/big"
printf 'signed hello\n' >"$src/d/small"
"$CAFS" make --store="$W/default.castr" "$W/img.caidx" "$src" >/dev/null || exit 1
"$CAFS" make --store="$W/default.castr" "$W/other.caidx" "$src/d" >/dev/null || exit 1
"$CAFS" make "$W/img.catar" "$src" >/dev/null || exit 1
for k in k1 k2; do
	minisign -G -W -p "$K/$k.pub" -s "$K/$k.key" >/dev/null || exit 1
done
# the signed copies: prehashed (minisign's default) and legacy
cp "$W/img.caidx" "$W/hashed.caidx"
cp "$W/img.caidx" "$W/legacy.caidx"
minisign -S -s "$K/k1.key" -m "$W/hashed.caidx" >/dev/null || exit 1
minisign -S -l -s "$K/k1.key" -m "$W/legacy.caidx" >/dev/null || exit 1
minisign -S -s "$K/k1.key" -m "$W/other.caidx" >/dev/null || exit 1
grep -q '^RU' "$W/hashed.caidx.minisig" && grep -q '^RW' "$W/legacy.caidx.minisig" || exit 1
# a bad copy of the signed index for each case
bad() { cp "$W/img.caidx" "$W/$1.caidx" && cp "$W/hashed.caidx.minisig" "$W/$1.caidx.minisig"; }
bad tampered
# one byte of a chunk id in the middle of the index
python3 -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[len(b)//2]^=1; open(p,"wb").write(b)' \
	"$W/tampered.caidx"
cp "$W/img.caidx" "$W/unsigned.caidx"
bad foreign && cp "$W/other.caidx.minisig" "$W/foreign.caidx.minisig"
bad truncated && head -c 80 "$W/hashed.caidx.minisig" >"$W/truncated.caidx.minisig"
bad garbage && "$GEN" 300 7 >"$W/garbage.caidx.minisig"
bad comment && sed -i 's/^trusted comment: /trusted comment: x/' "$W/comment.caidx.minisig"
# k1's key with another key id: the signature names k1's id, so no trusted key matches
python3 - "$K/k1.pub" "$K/k1-id.pub" <<'EOF'
import base64, sys
lines = open(sys.argv[1]).read().splitlines()
b = bytearray(base64.b64decode(lines[1]))
b[2] ^= 1
open(sys.argv[2], "w").write(lines[0] + "\n" + base64.b64encode(bytes(b)).decode() + "\n")
EOF

nginx_start "$W" || exit 1
U=$NGINX_URL
chunk_gets() { nginx_log | awk '$2 ~ /\.cacnk$/' | wc -l; }
export CAFS_HTTP_TIMEOUT=3 CAFS_HTTP_RETRIES=1 XDG_CACHE_HOME=$T/xdg
# no system keys unless a case sets them
export CAFS_TRUSTED_KEYS_DIR=$T/no-keys
mkdir -p "$CAFS_TRUSTED_KEYS_DIR"
K1=(--trusted-key "$K/k1.pub")

# refused DESC PATTERN CMD...: CMD fails (not by a signal) with exactly one
# line on stderr matching PATTERN, and nginx saw no chunk request.
refused() {
	local desc=$1 pat=$2 rc=0
	shift 2
	nginx_log_reset
	"$@" >"$T/out" 2>"$T/err" </dev/null || rc=$?
	local lines gets
	lines=$(wc -l <"$T/err")
	gets=$(chunk_gets)
	ok "$desc" bash -c '[ "$1" -ne 0 ] && [ "$1" -lt 128 ] && [ "$2" = 1 ] && grep -qE -- "$3" "$4" && [ "$5" = 0 ] ||
		{ echo "exit $1, $2 lines, $5 chunk GETs:"; cat "$4"; exit 1; }' _ "$rc" "$lines" "$pat" "$T/err" "$gets"
}

# ---- accepted ----
for v in hashed legacy; do
	nginx_log_reset
	ok "$v: list of a local index (remote store)" "$CAFS" list "${K1[@]}" --store="$U/default.castr" "$W/$v.caidx"
	ok "$v: list over HTTP" "$CAFS" list "${K1[@]}" "$U/$v.caidx"
	ok "$v: extract over HTTP" "$CAFS" extract "${K1[@]}" "$U/$v.caidx" "$T/x-$v"
	ok "... equals the source" diff -r "$src" "$T/x-$v"
	ok "$v: cache fill over HTTP" "$CAFS" cache fill -q "${K1[@]}" --cache="$T/cache-$v" "$U/$v.caidx"
	ok "... fetched chunks" test "$(chunk_gets)" -gt 0
	mount_start "$v: mount over HTTP" "$T/mnt" "$T/mount-$v.log" --no-cache "${K1[@]}" "$U/$v.caidx" &&
		ok "... reads back" cmp "$src/d/big" "$T/mnt/d/big" && mount_stop "... unmounts" "$T/mnt"
done
ok "mtree, digest and info of a signed index" bash -c '"$1" mtree "$2" "$3" "$4" >/dev/null &&
	"$1" digest "$2" "$3" "$4" >/dev/null && "$1" info "$2" "$3" "$4" >/dev/null' _ "$CAFS" "${K1[@]}" "$W/hashed.caidx"
ok "-v shows the trusted comment" bash -c '"$1" list -v "$2" "$3" "$4" 2>&1 >/dev/null | grep -q "signed by key .*timestamp:"' \
	_ "$CAFS" "${K1[@]}" "$W/hashed.caidx"
ok "several trusted keys, one matches" "$CAFS" list --trusted-key "$K/k2.pub" "${K1[@]}" "$U/hashed.caidx"
ok "no trusted key: unsigned indexes as before" "$CAFS" list "$U/unsigned.caidx"
ok "no trusted key: a bad signature is not looked at" "$CAFS" list "$U/garbage.caidx"

# ---- refused, local index (remote store) and over HTTP ----
for where in local http; do
	for c in tampered unsigned foreign truncated garbage comment; do
		if [ $where = local ]; then in=$W/$c.caidx; st=(--store="$U/default.castr"); else in=$U/$c.caidx; st=(); fi
		case $c in
		tampered | foreign) pat='refused: bad signature' ;;
		unsigned) pat='refused: not signed \(no .*unsigned\.caidx\.minisig\)' ;;
		truncated | garbage) pat='refused: its signature is not a minisign signature' ;;
		comment) pat='refused: the signature.s trusted comment was altered' ;;
		esac
		refused "$where: $c: list refused" "^cafs: .*$c\.caidx: $pat" "$CAFS" list "${K1[@]}" "${st[@]}" "$in"
	done
	refused "$where: wrong key refused" "signed by key [0-9A-F]{16}, which is not trusted" \
		"$CAFS" list --trusted-key "$K/k2.pub" "${st[@]}" "${in%/*}/hashed.caidx"
	refused "$where: key id mismatch refused" "which is not trusted" \
		"$CAFS" list --trusted-key "$K/k1-id.pub" "${st[@]}" "${in%/*}/hashed.caidx"
done
refused "extract refused" "refused: bad signature" "$CAFS" extract "${K1[@]}" "$U/tampered.caidx" "$T/x-bad"
ok "... and wrote nothing" test ! -e "$T/x-bad"
refused "cache fill refused" "refused: not signed" "$CAFS" cache fill "${K1[@]}" --cache="$T/cache-bad" "$U/unsigned.caidx"
refused "digest refused" "refused" "$CAFS" digest "${K1[@]}" "$U/comment.caidx"
refused "info refused" "refused" "$CAFS" info "${K1[@]}" "$U/foreign.caidx"
refused "mtree refused" "refused" "$CAFS" mtree "${K1[@]}" "$U/garbage.caidx"
refused "mount refused" "refused: bad signature" "$CAFS" mount "${K1[@]}" "$U/tampered.caidx" "$T/mnt"
ok "... and mounted nothing" bash -c '! mountpoint -q "$1"' _ "$T/mnt"
refused "mount -o trusted_key= refused" "refused: not signed" \
	"$CAFS" mount -o "trusted_key=$K/k1.pub" "$U/unsigned.caidx" "$T/mnt"
refused "a .catar with trusted keys" "img\.catar: cannot verify an archive, sign an index" \
	"$CAFS" list "${K1[@]}" "$W/img.catar"
ok "a bad --trusted-key file is a usage error" bash -c '"$1" list --trusted-key "$2" "$3" 2>"$4"; [ $? = 2 ] &&
	grep -q "^cafs: list: --trusted-key .*k1.key: not a minisign public key$" "$4"' _ "$CAFS" "$K/k1.key" "$U/hashed.caidx" "$T/err"

# ---- the trusted key directory ----
mkdir -p "$T/keys.d"
cp "$K/k1.pub" "$T/keys.d/"
cp "$W/img.caidx" "$T/keys.d/ignored.txt"
export CAFS_TRUSTED_KEYS_DIR=$T/keys.d
ok "key dir: a signed index is accepted" "$CAFS" list "$U/hashed.caidx"
refused "key dir: an unsigned one is refused" "refused: not signed" "$CAFS" list "$U/unsigned.caidx"
refused "key dir: and a .catar" "cannot verify an archive" "$CAFS" list "$W/img.catar"
ok "key dir plus --trusted-key: either key" "$CAFS" list --trusted-key "$K/k2.pub" "$U/hashed.caidx"
cp "$W/img.caidx" "$T/keys.d/broken.pub"
refused "key dir: a broken key file is an error, not skipped" "broken\.pub: not a minisign public key" \
	"$CAFS" list "$U/hashed.caidx"
export CAFS_TRUSTED_KEYS_DIR=$T/empty-keys.d
refused "a missing \$CAFS_TRUSTED_KEYS_DIR is an error" "trusted keys: .*empty-keys.d: No such file" \
	"$CAFS" list "$U/unsigned.caidx"
mkdir -p "$CAFS_TRUSTED_KEYS_DIR"
ok "an empty key dir: unsigned indexes open" "$CAFS" list "$U/unsigned.caidx"

# ---- cafs sign: what minisign -V and cafs accept ----
export CAFS_TRUSTED_KEYS_DIR=$T/no-keys
for v in prehashed legacy; do
	cp "$W/img.caidx" "$W/cs-$v.caidx"
	l=()
	[ $v = legacy ] && l=(-l)
	ok "cafs sign ($v, unencrypted key)" "$CAFS" sign -s "$K/k1.key" "${l[@]}" -t "cafs $v" "$W/cs-$v.caidx"
	ok "... minisign -V accepts it" minisign -V -p "$K/k1.pub" -m "$W/cs-$v.caidx"
	ok "... and so does cafs over HTTP" "$CAFS" list "${K1[@]}" "$U/cs-$v.caidx"
done
ok "... legacy writes 'Ed', prehashed 'ED'" bash -c 'sed -n 2p "$1" | grep -q ^RW && sed -n 2p "$2" | grep -q ^RU' _ \
	"$W/cs-legacy.caidx.minisig" "$W/cs-prehashed.caidx.minisig"
# an encrypted key (minisign's default: scrypt, 1 GiB): the password from standard input
printf 'pass word\npass word\n' | minisign -G -p "$K/enc.pub" -s "$K/enc.key" >/dev/null 2>&1
cp "$W/img.caidx" "$W/cs-enc.caidx"
ok "cafs sign with an encrypted key" bash -c 'echo "pass word" | "$1" sign -s "$2" "$3"' _ "$CAFS" "$K/enc.key" "$W/cs-enc.caidx"
ok "... minisign -V accepts it" minisign -V -p "$K/enc.pub" -m "$W/cs-enc.caidx"
rm -f "$W/cs-enc.caidx.minisig"
ok "a wrong password: one line, no signature written" bash -c 'echo nope | "$1" sign -s "$2" "$3" 2>"$4"; [ $? = 1 ] &&
	[ "$(cat "$4")" = "cafs: $2: wrong password" ] && [ ! -e "$3.minisig" ]' _ "$CAFS" "$K/enc.key" "$W/cs-enc.caidx" "$T/err"
ok "a public key is not a secret key" bash -c '"$1" sign -s "$2" "$3" 2>"$4"; [ $? = 1 ] &&
	grep -qx "cafs: .*k1.pub: not a minisign secret key" "$4"' _ "$CAFS" "$K/k1.pub" "$W/cs-enc.caidx" "$T/err"

mount_done_testing
