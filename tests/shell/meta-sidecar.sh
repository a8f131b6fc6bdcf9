#!/bin/bash
# meta-sidecar.sh - the metadata sidecar (X.caidx.cameta) over a real nginx
# and a real mount: cafs make writes one (and the index and store stay
# casync's), `cafs meta make` makes the same for a casync-made image;
# with it, list and a metadata walk of the mount fetch no chunk and show
# exactly what they show without it (stat, xattrs, ACLs, symlinks,
# devices, fifos, sockets, long names, empty dirs, a many-chunk file); a
# stale or corrupt sidecar is ignored with one warning; and a URL's index
# and sidecar kept by `cache fill` serve list, extract and an offline
# mount with the server gone.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"
need casync getfattr python3

W=$T/www
src=$T/src
mkdir -p "$W/nometa" "$W/stale" "$W/bad"
bash "$top_srcdir/tests/fixtures/mktorture.sh" "$src" >/dev/null 2>&1 || exit 1
mkdir -p "$src/empty" "$src/big"
"$GEN" 3M 7 >"$src/big/file"

# the image by casync, then by cafs into another directory
(cd "$T" && casync make --store="$W/default.castr" "$W/img.caidx" "$src") >/dev/null 2>&1 || exit 1
ok "casync made no sidecar" test ! -e "$W/img.caidx.cameta"
ok "cafs meta make: a sidecar for the casync-made image" "$CAFS" meta make "$W/img.caidx"
ok "... beside it" test -s "$W/img.caidx.cameta"
mkdir -p "$T/c"
ok "cafs make writes one too" "$CAFS" make --store="$T/c/default.castr" "$T/c/img.caidx" "$src"
ok "... its index is casync's, byte for byte" cmp "$T/c/img.caidx" "$W/img.caidx"
ok "... and the sidecar is the same file" cmp "$T/c/img.caidx.cameta" "$W/img.caidx.cameta"
ok "make --meta=no writes none" sh -c "'$CAFS' make --meta=no --store='$T/c/default.castr' '$T/c/n.caidx' '$src/empty' >/dev/null && test ! -e '$T/c/n.caidx.cameta'"
# make builds its sidecar from the encoder as it writes (no read-back):
# exclusions decide what follows a directory's metadata (the first
# stored child's FILENAME, or the GOODBYE), so they are where the two
# could differ; `meta make` reads the store back and must agree
x=$T/excl
mkdir -p "$x/tree/a/d" "$x/tree/c/e" "$x/tree/f" "$x/root"
touch "$x/tree/a/-first" "$x/tree/a/z" "$x/tree/c/e/k" "$x/tree/c/y" "$x/tree/z"
printf -- '-first\n' >"$x/tree/a/.caexclude"
printf 'e/\ny\n.caexclude\n' >"$x/tree/c/.caexclude"
printf 'f/\n' >"$x/tree/.caexclude"
for t in tree root; do
	ok "sidecar as made = read back ($t)" sh -c "'$CAFS' make '$x/$t.caidx' '$x/$t' >/dev/null &&
		mv '$x/$t.caidx.cameta' '$x/$t.made' && '$CAFS' meta make '$x/$t.caidx' &&
		cmp '$x/$t.made' '$x/$t.caidx.cameta'"
done
ok "... and the exclusions were applied" sh -c "'$CAFS' list '$x/tree.caidx' | awk '{print \$2}' | tr '\\n' ' ' >'$x/l' &&
	test \"\$(cat '$x/l')\" = '. .caexclude a a/.caexclude a/d a/z c z '"

# the same index without a sidecar, one with a stale one, one with a corrupt one
for d in nometa stale bad; do
	cp "$W/img.caidx" "$W/$d/img.caidx"
	ln -s ../default.castr "$W/$d/default.castr"
done
"$CAFS" make --store="$T/c/default.castr" "$T/c/other.caidx" "$src/xattrs" >/dev/null
cp "$T/c/other.caidx.cameta" "$W/stale/img.caidx.cameta"
python3 - "$W/img.caidx.cameta" "$W/bad/img.caidx.cameta" <<'EOF'
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
b[len(b) // 2] ^= 0x55
open(sys.argv[2], 'wb').write(b)
EOF

nginx_start "$W" || exit 1
U=$NGINX_URL
chunk_gets() { nginx_log | awk '$2 ~ /\.cacnk$/' | wc -l; }

# list: none of the store with the sidecar, the same lines as without
"$CAFS" list -l "$U/nometa/img.caidx" >"$T/list.without" 2>"$T/err.without"
nginx_log_reset
ok "list -l of the URL with the sidecar" sh -c "'$CAFS' list -l '$U/img.caidx' >'$T/list.with'"
ok "... fetched no chunk" test "$(chunk_gets)" = 0
ok "... two GETs: index and sidecar" test "$(nginx_log | wc -l)" = 2
ok "... the same lines as walking the archive" cmp "$T/list.with" "$T/list.without"
ok "... which are many" test "$(wc -l <"$T/list.with")" -gt 2000
ok "mtree: the same with and without" sh -c "'$CAFS' mtree '$U/img.caidx' >'$T/m1' && '$CAFS' mtree '$U/nometa/img.caidx' >'$T/m2' && cmp '$T/m1' '$T/m2'"
ok "list PATH: the same with and without" sh -c "'$CAFS' list '$U/img.caidx' xattrs >'$T/p1' && '$CAFS' list '$U/nometa/img.caidx' xattrs >'$T/p2' && cmp '$T/p1' '$T/p2'"

# a stale and a corrupt sidecar: one warning, then the archive is walked
ok "stale sidecar: list still right" sh -c "'$CAFS' list -l '$U/stale/img.caidx' >'$T/l.stale' 2>'$T/e.stale' && cmp '$T/l.stale' '$T/list.without'"
ok "... one warning saying so" sh -c "test \$(wc -l <'$T/e.stale') = 1 && grep -q 'belongs to another index' '$T/e.stale'"
ok "corrupt sidecar: list still right" sh -c "'$CAFS' list -l '$U/bad/img.caidx' >'$T/l.bad' 2>'$T/e.bad' && cmp '$T/l.bad' '$T/list.without'"
ok "... one warning saying so" sh -c "test \$(wc -l <'$T/e.bad') = 1 && grep -q 'not a valid metadata sidecar' '$T/e.bad'"
ok "no sidecar (404): nothing said" test ! -s "$T/err.without"

# the mount: a metadata walk fetches no chunk, and shows what walking shows
describe() { # DIR: every entry's stat, link target and xattrs, sorted
	(cd "$1" && find . -printf '%p %y %m %U %G %s %T@ %n %l\n' | LC_ALL=C sort &&
		find . ! -type l -exec stat -c '%n %t %T' {} + | LC_ALL=C sort &&
		getfattr -R -P -d -m - -e hex . 2>/dev/null)
}
m1=$T/m1dir m2=$T/m2dir
nginx_log_reset
mount_start "mount with the sidecar" "$m1" "$T/log1" --cache="$T/cache1" "$U/img.caidx"
describe "$m1" >"$T/d.with"
ok "metadata walk (find, stat, getfattr) fetched no chunk" test "$(chunk_gets)" = 0
mount_start "mount without it" "$m2" "$T/log2" --cache="$T/cache2" "$U/nometa/img.caidx"
describe "$m2" >"$T/d.without"
ok "... stat, links and xattrs are the same" cmp "$T/d.with" "$T/d.without"
ok "... and cover what the tree has" sh -c "grep -q 'user.text' '$T/d.with' && grep -q 'posix_acl' '$T/d.with' && grep -q ' p ' '$T/d.with' && grep -q ' s ' '$T/d.with' && grep -q ' b ' '$T/d.with'"
nginx_log_reset
ok "a many-chunk file reads right through the sidecar mount" cmp "$m1/big/file" "$src/big/file"
n=$(chunk_gets)
ok "... fetching only its own chunks ($n)" test "$n" -ge 30 -a "$n" -le 60
ok "file contents agree" sh -c "cd '$m1' && find . -type f -size -64k -print0 | xargs -0 -n 50 sh -c 'for f; do cmp \"\$f\" \"$m2/\$f\" || exit 255; done' sh"
mount_stop "unmount (with)" "$m1"
mount_stop "unmount (without)" "$m2"

# offline by URL: cache fill keeps index and sidecar; then the server goes
C=$T/fillcache
ok "cache fill by URL" "$CAFS" cache fill --cache="$C" "$U/img.caidx"
ok "... kept the index and the sidecar, privately" sh -c "test \$(stat -c %a '$C/indexes') = 700 && test \$(ls '$C/indexes' | grep -vc '\.validator\$') = 2 && test -z \"\$(find '$C/indexes' -type f ! -perm 600)\""
nginx_stop
ok "server gone: list --offline by URL" sh -c "'$CAFS' list -l --offline --cache='$C' '$U/img.caidx' >'$T/l.off' && cmp '$T/l.off' '$T/list.without'"
ok "server gone: extract --offline by URL" "$CAFS" extract --offline --cache="$C" "$U/img.caidx" "$T/x" big
ok "... the right files" diff -r "$src/big" "$T/x"
mount_start "server gone: mount --offline by URL" "$T/m3" "$T/log3" --offline --cache="$C" "$U/img.caidx"
ok "... reads a file" cmp "$T/m3/big/file" "$src/big/file"
mount_stop "unmount (offline)" "$T/m3"
ok "offline with an empty cache: one line saying to fill it" sh -c "! '$CAFS' list --offline --cache='$T/empty' '$U/img.caidx' 2>'$T/e.empty' && grep -q 'cache fill' '$T/e.empty' && test \$(wc -l <'$T/e.empty') = 1"

mount_done_testing
