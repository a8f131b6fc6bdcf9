#!/bin/bash
# store-crypt.sh - chunk stores encrypted at rest (desync's format): cafs.conf
# sections turn encryption on for a local, an HTTP (nginx) and an S3
# (moto_server) store, with both algorithms; make, extract, mount, cache fill
# and gc work on them, and the index stays the plain one casync reads. The
# format is checked both ways against independent code (/usr/bin/python3:
# PyNaCl for XChaCha20-Poly1305, cryptography for AES-256-GCM): its chunks
# decrypt to the plain store's, and chunks it seals are read by cafs. A wrong
# key finds nothing and says which key id it tried, a flipped byte is a
# verification error (EIO on a mount), an index is refused where the settings
# encrypt, a readable key file is refused, and no key ever shows in output.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"
. "$top_srcdir/tests/lib-s3.sh"
need nginx python3 casync
PY=/usr/bin/python3
$PY -c 'import nacl.bindings, cryptography' 2>/dev/null || skip_all "python3-nacl and python3-cryptography are needed"

ALL=$T/all-output # everything cafs printed: searched for the keys at the end
run() { "$@" 2>&1 | tee -a "$ALL"; return "${PIPESTATUS[0]}"; }
keyid() { $PY -c 'import hashlib, sys; print(hashlib.sha256(bytes.fromhex(sys.argv[1])).hexdigest()[:8])' "$1"; }
K1=$(openssl rand -hex 32) K2=$(openssl rand -hex 32) K3=$(openssl rand -hex 32)
ID1=$(keyid "$K1") ID2=$(keyid "$K2") ID3=$(keyid "$K3")
XS=.cacnk.xchacha20-poly1305-$ID1 AS=.cacnk.aes-256-gcm-$ID2

src=$T/src
mkdir -p "$src/d"
gen_data "$src/d/a" 300K 1
gen_data "$src/d/b" 200K 2 text
echo hello >"$src/c.txt"

nginx_start "$T/www" || exit 1
s3_start || exit 1
H=$NGINX_URL S=$S3_URL/bkt
umask 077
printf '%s\n' "$K2" >"$T/key2"
# xchacha20 under K1 inline, AES-256-GCM under K2 from a key file (local,
# HTTP) and from the environment (S3): the same stores by every road
cat >"$T/cafs.conf" <<EOF
[$T/www/sx]
encryption = xchacha20-poly1305
encryption-key = $K1
[$T/www/sa]
encryption = aes-256-gcm
encryption-key-file = $T/key2
[$T/px]
encryption = xchacha20-poly1305
encryption-key = $K1
[$T/pa]
encryption = aes-256-gcm
encryption-key-file = $T/key2
[$T/bad]
encryption = xchacha20-poly1305
encryption-key = $K1
[$H/sx]
encryption = xchacha20-poly1305
encryption-key = $K1
[$H/sa]
encryption = aes-256-gcm
encryption-key-file = $T/key2
[$S/sx]
encryption = xchacha20-poly1305
encryption-key = $K1
[$S/sa]
encryption = aes-256-gcm
EOF
export CAFS_CONFIG=$T/cafs.conf CAFS_ENCRYPTION_KEY=$K2 CAFS_HTTP_RETRIES=1

# ---- local: make and extract, both algorithms; the index is the plain one ----
ok "make to a plain store" run "$CAFS" make --store="$T/plain" "$T/img.caidx" "$src"
for a in x a; do
	suf=$XS
	[ $a = a ] && suf=$AS
	ok "make to an encrypted local store (s$a)" run "$CAFS" make --store="$T/www/s$a" "$T/img-$a.caidx" "$src"
	ok "... the index is the plain store's (indexes stay plain)" cmp "$T/img.caidx" "$T/img-$a.caidx"
	ok "... every chunk named <id>$suf, none plain" sh -c "
		[ \$(find '$T/www/s$a' -type f -name '*$suf' | wc -l) = \$(find '$T/plain' -type f -name '*.cacnk' | wc -l) ] &&
		[ \$(find '$T/www/s$a' -type f ! -name '*$suf' | wc -l) = 0 ]"
	ok "... extract from it equals the source" run "$CAFS" extract --store="$T/www/s$a" "$T/img.caidx" "$T/x-$a"
	ok "... (the tree)" diff -r "$src" "$T/x-$a"
done
ok "casync reads the index (with the plain store)" casync extract --store="$T/plain" "$T/img.caidx" "$T/x-casync"
ok "... equals the source" diff -r "$src" "$T/x-casync"

# ---- the format, both ways, against independent code ----
cat >"$T/fmt.py" <<'EOF'
import os, sys
from nacl.bindings import crypto_aead_xchacha20poly1305_ietf_encrypt as xenc, \
    crypto_aead_xchacha20poly1305_ietf_decrypt as xdec
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
op, alg, key, a, b, suf = sys.argv[1:7]
key = bytes.fromhex(key)
def seal(p):
    if alg == "x":
        n = os.urandom(24)
        return n + xenc(p, None, n, key)
    n = os.urandom(12)
    return n + AESGCM(key).encrypt(n, p, None)
def unseal(c):
    if alg == "x":
        return xdec(c[24:], None, c[:24], key)
    return AESGCM(key).decrypt(c[:12], c[12:], None)
n = 0
for d, _, files in os.walk(a):
    for f in files:
        if op == "seal" and f.endswith(".cacnk"):
            rel = os.path.relpath(os.path.join(d, f), a)
            os.makedirs(os.path.dirname(os.path.join(b, rel)), exist_ok=True)
            open(os.path.join(b, rel[:-6] + suf), "wb").write(seal(open(os.path.join(d, f), "rb").read()))
            n += 1
        elif op == "open" and f.endswith(suf):
            rel = os.path.relpath(os.path.join(d, f), a)
            plain = open(os.path.join(b, rel[:-len(suf)] + ".cacnk"), "rb").read()
            if unseal(open(os.path.join(d, f), "rb").read()) != plain:
                sys.exit("%s: not the plain store's chunk" % rel)
            n += 1
if n == 0:
    sys.exit("no chunk files")
EOF
ok "cafs's xchacha20 chunks open with PyNaCl to the plain store's" $PY "$T/fmt.py" open x "$K1" "$T/www/sx" "$T/plain" "$XS"
ok "cafs's aes-256-gcm chunks open with cryptography to the plain store's" $PY "$T/fmt.py" open a "$K2" "$T/www/sa" "$T/plain" "$AS"
ok "chunks sealed by PyNaCl (xchacha20)" $PY "$T/fmt.py" seal x "$K1" "$T/plain" "$T/px" "$XS"
ok "... are read by cafs" run "$CAFS" extract --store="$T/px" "$T/img.caidx" "$T/x-px"
ok "... (the tree)" diff -r "$src" "$T/x-px"
ok "chunks sealed by cryptography (aes-256-gcm)" $PY "$T/fmt.py" seal a "$K2" "$T/plain" "$T/pa" "$AS"
ok "... are read by cafs" run "$CAFS" extract --store="$T/pa" "$T/img.caidx" "$T/x-pa"
ok "... (the tree)" diff -r "$src" "$T/x-pa"

# ---- HTTP (nginx serves $T/www) ----
ok "extract over HTTP (xchacha20)" run "$CAFS" extract --store="$H/sx" "$T/img.caidx" "$T/x-hx"
ok "... (the tree)" diff -r "$src" "$T/x-hx"
ok "cache fill over HTTP (aes-256-gcm)" run "$CAFS" cache fill --cache="$T/cache" --store="$H/sa" "$T/img.caidx"
ok "... the cache keeps them plain and private (.cacnk, 0400)" sh -c "
	[ \$(find '$T/cache' -type f -name '*.cacnk' -perm 0400 | wc -l) = \$(find '$T/plain' -type f -name '*.cacnk' | wc -l) ] &&
	[ \$(find '$T/cache' -type f -name '*gcm*' | wc -l) = 0 ]"
mnt=$T/mnt
mount_start "mount over HTTP (aes-256-gcm)" "$mnt" "$T/m1.log" --no-cache -o "store=$H/sa" "$T/img.caidx" || exit 1
ok "... every file reads right" diff -r "$src" "$mnt"
mount_stop "... unmount" "$mnt"

# ---- S3 (moto_server) ----
for a in x a; do
	suf=$XS
	[ $a = a ] && suf=$AS
	ok "make to an encrypted S3 store (s$a)" run "$CAFS" make --store="$S/s$a" "$T/img-s$a.caidx" "$src"
	s3_keys "s$a/" >"$T/keys-$a"
	ok "... the bucket holds <id>$suf only" test "$(grep -c -- "$suf\$" "$T/keys-$a")" = "$(wc -l <"$T/keys-$a")" -a \
		"$(wc -l <"$T/keys-$a")" = "$(find "$T/plain" -type f -name '*.cacnk' | wc -l)"
	ok "... extract from it equals the source" run "$CAFS" extract --store="$S/s$a" "$T/img.caidx" "$T/x-s$a"
	ok "... (the tree)" diff -r "$src" "$T/x-s$a"
done
mount_start "mount from S3 (aes-256-gcm, the key from CAFS_ENCRYPTION_KEY)" "$mnt" "$T/m3.log" --no-cache \
	-o "store=$S/sa" "$T/img.caidx" || exit 1
ok "... every file reads right" diff -r "$src" "$mnt"
ok "... no key in /proc/mounts" sh -c "grep -q ' $mnt ' /proc/mounts && ! grep -qi -e '$K1' -e '$K2' /proc/mounts"
mount_stop "... unmount" "$mnt"
gen_data "$src/d/extra" 150K 7
ok "make of a bigger tree to S3 (xchacha20)" run "$CAFS" make --store="$S/sx" "$T/img-big.caidx" "$src"
ok "gc of the S3 store keeping the first index" run "$CAFS" gc --store="$S/sx" "$T/img.caidx"
ok "... the first index still extracts" run "$CAFS" extract --store="$S/sx" "$T/img.caidx" "$T/x-gc-s3"
ok "... (the tree)" diff -r "$T/x-hx" "$T/x-gc-s3"
fails "... the bigger one lost its own chunks" "$CAFS" extract --store="$S/sx" "$T/img-big.caidx" "$T/x-gc-s3b"

# ---- gc of a local store: only its key's chunks are its chunks ----
ok "make of the bigger tree to the local store" run "$CAFS" make --store="$T/www/sx" "$T/img-big.caidx" "$src"
one=$(find "$T/www/sx" -type f -name "*$XS" | head -n 1)
cp "$one" "${one%"$XS"}.cacnk.xchacha20-poly1305-00000000" # "another key's" chunk of an id gc would keep
n_other=$(find "$T/www/sx" -type f | wc -l)
"$CAFS" gc -n --store="$T/www/sx" "$T/img.caidx" >"$T/gc-n.out" 2>&1
ok "gc --dry-run names the files it would remove as they are" grep -q "^would remove [0-9a-f]\{4\}/[0-9a-f]\{64\}$XS\$" "$T/gc-n.out"
ok "gc keeping the first index" run "$CAFS" gc --store="$T/www/sx" "$T/img.caidx"
ok "... removed the bigger tree's own chunks" test "$(find "$T/www/sx" -type f | wc -l)" -lt "$n_other"
ok "... left the other key's chunk alone" test -f "${one%"$XS"}.cacnk.xchacha20-poly1305-00000000"
ok "... the first index still extracts" run "$CAFS" extract --store="$T/www/sx" "$T/img.caidx" "$T/x-gc"
ok "... (the tree)" diff -r "$T/x-hx" "$T/x-gc"
rm -f "$src/d/extra"

# ---- a wrong key ----
sed "/^\[$(printf '%s' "$T/www/sx" | sed 's|[/.]|\\&|g')\]/,/^\[/s/^encryption-key = .*/encryption-key = $K3/" \
	"$T/cafs.conf" >"$T/wrong.conf"
CAFS_CONFIG=$T/wrong.conf "$CAFS" extract --store="$T/www/sx" "$T/img.caidx" "$T/x-wrong" >"$T/wrong.out" 2>&1
rc=$?
cat "$T/wrong.out" >>"$ALL"
ok "under a wrong key no chunk is found (exit $rc)" test "$rc" -ne 0 -a "$rc" -lt 128
ok "... and the error names the key id tried and says so" \
	grep -q "not under key id $ID3 (xchacha20-poly1305): wrong key?" "$T/wrong.out"
sed "/^\[$(printf '%s' "$H/sa" | sed 's|[/.:]|\\&|g')\]/,/^\[/s|^encryption-key-file = .*|encryption-key = $K3|" \
	"$T/cafs.conf" >"$T/wrong2.conf"
CAFS_CONFIG=$T/wrong2.conf "$CAFS" extract --store="$H/sa" "$T/img.caidx" "$T/x-wrong3" >"$T/wrong2.out" 2>&1
cat "$T/wrong2.out" >>"$ALL"
ok "over HTTP a wrong key finds nothing and names the key id tried" grep -q "under key id $ID3 (aes-256-gcm)" "$T/wrong2.out"

# ---- a flipped byte in a ciphertext ----
cp -r "$T/px" "$T/bad"
for f in $(find "$T/bad" -type f); do
	$PY - "$f" <<'EOF'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[len(b) // 2] ^= 0x01
open(sys.argv[1], "wb").write(b)
EOF
done
fails "extract from a store whose ciphertexts have a flipped byte fails" run "$CAFS" extract --store="$T/bad" "$T/img.caidx" "$T/x-bad"
ok "... and says the chunk is corrupt" grep -q "corrupt\|bad message\|Bad message" "$ALL"
mount_start "mount it" "$mnt" "$T/m2.log" --no-cache -o "store=$T/bad" "$T/img.caidx" || exit 1
ok "... a read is EIO, not wrong data" expect_errno EIO cat "$mnt/d/a"
ok "... and the mount stays up" is_mounted "$mnt"
ok "... (its daemon too)" kill -0 "$MOUNT_PID"
mount_stop "... unmount" "$mnt"

# ---- refusals ----
fails "an index is refused where the settings encrypt" run "$CAFS" make --store="$T/plain" "$T/www/sx/img.caidx" "$src"
ok "... saying why" grep -q "indexes are never encrypted" "$ALL"
ok "... (the accepted case: beside it)" run "$CAFS" make --store="$T/plain" "$T/www/img.caidx" "$src"
chmod 0640 "$T/key2"
fails "a key file others may read is refused" run "$CAFS" extract --store="$T/www/sa" "$T/img.caidx" "$T/x-perm"
ok "... saying so" grep -q "key2: refused: readable by group or others" "$ALL"
chmod 0600 "$T/key2"
ok "... (accepted again at 0600)" run "$CAFS" extract --store="$T/www/sa" "$T/img.caidx" "$T/x-perm2"
printf '[%s]\nencryption = aes-256-gcm\n' "$T/nokey" >"$T/nokey.conf"
fails "encryption without any key is refused" env -u CAFS_ENCRYPTION_KEY CAFS_CONFIG="$T/nokey.conf" \
	"$CAFS" make --store="$T/nokey" "$T/nk.caidx" "$src"
ok "no key in any output" sh -c "! grep -qi -e '$K1' -e '$K2' -e '$K3' '$ALL' '$T/m1.log' '$T/m2.log' '$T/m3.log'"

mount_done_testing
