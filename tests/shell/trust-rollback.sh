#!/bin/bash
# trust-rollback.sh - a signature is bound to what it signs and when
# (issue 21.6): with trusted keys, an index older than the newest accepted
# for the same URL or path, or one whose signature names another file, is
# refused with one line; --allow-downgrade accepts the older one and makes
# it the record. Real nginx, real minisign (its default trusted comment)
# and cafs sign, over HTTP and for local paths.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-http.sh"
. "$top_srcdir/tests/lib-mount.sh"
need minisign

W=$T/www
S=$T/stage
mkdir -p "$W" "$S/v1" "$S/v2" "$S/other" "$T/keys.d"
printf 'version one\n' >"$S/v1/f"
printf 'version two\n' >"$S/v2/f"
printf 'another image\n' >"$S/other/f"
minisign -G -W -p "$T/keys.d/k.pub" -s "$T/k.key" >/dev/null || exit 1
export CAFS_TRUSTED_KEYS_DIR=$T/keys.d XDG_CACHE_HOME=$T/xdg
# each release is made as img.caidx in its own directory, as a publisher would
for v in v1 v2 other; do
	"$CAFS" make -q --store="$W/default.castr" "$S/$v/img.caidx" "$S/$v" >/dev/null || exit 1
	rm -f "$S/$v/img.caidx.cameta"
done
# v1 by plain minisign (its default comment), v2 a second later by cafs sign
minisign -S -s "$T/k.key" -m "$S/v1/img.caidx" >/dev/null || exit 1
mv "$S/other/img.caidx" "$S/other/other.caidx"
minisign -S -s "$T/k.key" -m "$S/other/other.caidx" >/dev/null || exit 1
sleep 1.1
"$CAFS" sign -s "$T/k.key" "$S/v2/img.caidx" || exit 1
ts() { sed -n 3p "$1" | sed 's/.*timestamp:\([0-9]*\).*/\1/'; }
T1=$(ts "$S/v1/img.caidx.minisig")
T2=$(ts "$S/v2/img.caidx.minisig")
ok "v1 (minisign -S) is signed before v2 (cafs sign): $T1 < $T2" test "$T1" -lt "$T2"
ok "cafs sign writes minisign's default trusted comment" \
	grep -qP "^trusted comment: timestamp:$T2\tfile:img.caidx\thashed$" "$S/v2/img.caidx.minisig"

publish() { cp "$S/$1/img.caidx" "$S/$1/img.caidx.minisig" "$W/"; }
nginx_start "$W" || exit 1
U=$NGINX_URL

# one_line_refusal PATTERN CMD...: exit 1, exactly one stderr line matching PATTERN, nothing on stdout
one_line_refusal() {
	local pat=$1 rc=0
	shift
	"$@" >"$T/out" 2>"$T/err" </dev/null || rc=$?
	[ "$rc" = 1 ] && [ "$(wc -l <"$T/err")" = 1 ] && grep -qE -- "$pat" "$T/err" && [ ! -s "$T/out" ] ||
		{ echo "exit $rc:"; cat "$T/err"; return 1; }
}
lists() { "$CAFS" list "$@" >"$T/out" 2>"$T/err" && grep -q ' f$' "$T/out" || { cat "$T/err"; return 1; }; }
content() { rm -rf "$T/x"; "$CAFS" extract "$@" "$T/x" >/dev/null 2>"$T/err" && grep -qx "$LAST" "$T/x/f"; }

# ---- over HTTP: v2, then v1 at the same URL ----
publish v2
ok "v2 at $U/img.caidx: accepted" lists "$U/img.caidx"
ok "... and said nothing" test ! -s "$T/err"
ok "... its time is recorded, privately" bash -c "f=\$(ls '$XDG_CACHE_HOME'/cafs/signed/*) && grep -qP '^$T2\t$U/img.caidx\$' \$f &&
	[ \$(stat -c %a \$f) = 600 ] && [ \$(stat -c %a '$XDG_CACHE_HOME/cafs/signed') = 700 ]"
publish v1
ok "v1 at the same URL: refused, one line naming both timestamps" one_line_refusal \
	"^cafs: $U/img.caidx: refused: signed at timestamp $T1 \(.*\), older than the index accepted from it before, signed at timestamp $T2 \(.*\): a rollback\? \(--allow-downgrade accepts it\)$" \
	"$CAFS" list "$U/img.caidx"
ok "... extract too, writing nothing" bash -c "one_line_refusal() { :; }; ! '$CAFS' extract '$U/img.caidx' '$T/x1' 2>/dev/null && [ ! -e '$T/x1' ]"
ok "... and the same URL with a query (a pre-signed URL's, rotating) is the same index" one_line_refusal \
	"refused: signed at timestamp $T1" "$CAFS" list "$U/img.caidx?X-Token=abc"
mkdir -p "$T/mnt"
ok "... mount too" one_line_refusal "refused: signed at timestamp $T1" "$CAFS" mount -f "$U/img.caidx" "$T/mnt"
ok "... and mounted nothing" bash -c "! mountpoint -q '$T/mnt'"
LAST="version one"
ok "--allow-downgrade accepts v1" content --allow-downgrade "$U/img.caidx"
ok "... with one warning" bash -c "[ \$(wc -l <'$T/err') = 1 ] && grep -q 'accepted a downgrade' '$T/err'"
ok "... and made it the record: v1 now opens without the override" lists "$U/img.caidx"
publish v2
LAST="version two"
ok "v2 again: newer, accepted" content "$U/img.caidx"
publish v1
mount_start "mount -o allow_downgrade of v1" "$T/mnt" "$T/mlog" -o allow_downgrade "$U/img.caidx"
ok "... reads v1" grep -qx "version one" "$T/mnt/f"
mount_stop "... unmounts" "$T/mnt"
publish v2
ok "v2 again" lists "$U/img.caidx"

# ---- another image signed by the same key ----
cp "$S/other/other.caidx" "$W/img.caidx" && cp "$S/other/other.caidx.minisig" "$W/img.caidx.minisig"
ok "another image of the same key served as img.caidx: refused, naming both files" one_line_refusal \
	"^cafs: $U/img.caidx: refused: its signature is for the file 'other.caidx', not img.caidx" "$CAFS" list "$U/img.caidx"
cp "$S/other/other.caidx" "$W/img2.caidx" && cp "$S/other/other.caidx.minisig" "$W/img2.caidx.minisig"
ok "--signed-name=other.caidx accepts it (the user says which file is meant)" \
	lists --signed-name=other.caidx "$U/img2.caidx"
ok "a --signed-name with a slash is a usage error" \
	bash -c "'$CAFS' list --signed-name=a/b '$U/img2.caidx' 2>/dev/null; [ \$? = 2 ]"
publish v2
cp "$S/v2/img.caidx" "$W/latest.caidx" && cp "$S/v2/img.caidx.minisig" "$W/latest.caidx.minisig"
ok "a copy under another name (latest.caidx) is refused with img.caidx's signature" \
	one_line_refusal "for the file 'img.caidx', not latest.caidx" "$CAFS" list "$U/latest.caidx"
cp "$S/v2/img.caidx" "$T/latest.caidx"
"$CAFS" sign -s "$T/k.key" --name=latest.caidx "$T/latest.caidx" && cp "$T/latest.caidx.minisig" "$W/"
ok "... and accepted once signed for its name (cafs sign --name=latest.caidx)" lists "$U/latest.caidx"

# ---- a plain minisign -t comment binds nothing ----
cp "$S/v2/img.caidx" "$W/plain.caidx"
minisign -S -s "$T/k.key" -t "just text" -m "$W/plain.caidx" >/dev/null
ok "a signature whose trusted comment has no time or name: accepted" lists "$U/plain.caidx"
ok "... with one warning saying what cannot be detected" \
	bash -c "[ \$(wc -l <'$T/err') = 1 ] && grep -q 'names no time and no file: a rollback or another image' '$T/err'"
cp "$S/v2/img.caidx" "$W/img.caidx"
minisign -S -s "$T/k.key" -t "just text" -m "$W/img.caidx" >/dev/null
ok "... but refused where a time was recorded" one_line_refusal \
	"refused: its signature names no time, and an index signed at timestamp $T2" "$CAFS" list "$U/img.caidx"
publish v2

# ---- the record lives in the cache in use ----
ok "--cache=C: v2 accepted, recorded in C" bash -c "'$CAFS' list --cache='$T/C' '$U/img.caidx' >/dev/null && ls '$T/C/signed/' | grep -q ."
publish v1
ok "... v1 refused there too" one_line_refusal "refused: signed at timestamp $T1" "$CAFS" list --cache="$T/C" "$U/img.caidx"
ok "... a fresh cache (another record) accepts v1: the record is per cache" lists --cache="$T/C2" "$U/img.caidx"
ok "mount --no-cache still uses the default cache's record" one_line_refusal "refused: signed at timestamp $T1" \
	"$CAFS" mount -f --no-cache "$U/img.caidx" "$T/mnt"
publish v2

# ---- a local path ----
L=$T/local
mkdir -p "$L"
cp "$S/v2/img.caidx" "$S/v2/img.caidx.minisig" "$L/"
cp -r "$W/default.castr" "$L/"
ok "local: v2 accepted" lists "$L/img.caidx"
cp "$S/v1/img.caidx" "$S/v1/img.caidx.minisig" "$L/"
ok "local: v1 at the same path refused, naming both timestamps" one_line_refusal \
	"^cafs: $L/img.caidx: refused: signed at timestamp $T1 .* signed at timestamp $T2 " "$CAFS" list "$L/img.caidx"
ok "local: ... through a relative path, the same record" bash -c "cd '$L' && ! '$CAFS' list ./img.caidx >/dev/null 2>'$T/err3' && grep -q 'timestamp $T1' '$T/err3'"
ok "local: --allow-downgrade accepts v1" lists --allow-downgrade "$L/img.caidx"
mkdir -p "$L/rel"
cp "$S/v2/img.caidx" "$L/rel/v2.caidx" && cp "$S/v2/img.caidx" "$L/rel/img.caidx"
"$CAFS" sign -s "$T/k.key" "$L/rel/v2.caidx"
ln -s v2.caidx "$L/rel/current.caidx" && ln -s v2.caidx.minisig "$L/rel/current.caidx.minisig"
ok "local: a symlink current.caidx to a signed v2.caidx: accepted (the file it names is v2.caidx)" \
	lists --store="$L/default.castr" "$L/rel/current.caidx"
cp "$L/rel/v2.caidx.minisig" "$L/rel/img.caidx.minisig"
ok "local: v2.caidx's signature beside a copy named img.caidx: refused" one_line_refusal \
	"for the file 'v2.caidx', not img.caidx" "$CAFS" list --store="$L/default.castr" "$L/rel/img.caidx"

# ---- a cache that cannot keep the record refuses, it does not skip the check ----
mkdir -m 0777 "$T/open" && chmod 0777 "$T/open"
ok "a record cache writable by others: the signed index is refused (one line)" one_line_refusal \
	"cache $T/open: writable by group or others" "$CAFS" list --cache="$T/open" "$L/img.caidx"

mount_done_testing
