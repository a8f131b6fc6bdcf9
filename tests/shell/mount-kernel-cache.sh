#!/bin/bash
# mount-kernel-cache.sh - what the kernel keeps of an immutable image is
# right, and it does keep it (issue 24): directory listings (FOPEN_CACHE_DIR,
# with no OPENDIR round trip), entries and attributes (a day's timeouts) and
# symlink targets (FUSE_CACHE_SYMLINKS). Counted with the stats' fuse_*
# request counters: a second find, ls -lR, stat of every entry and readlink
# of every symlink make no request at all. Across a takeover the kernel's
# copy stays right (same listing, attributes, targets) and a new server
# still gets no OPENDIR. The cache written off the readers' path (one
# writer thread) holds every chunk read once the unmount returns: an
# offline mount of that cache alone gives the whole tree. A corrupt chunk
# is EIO on that read, never cached, and the mount stays up.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"
need python3
keeper_setup

src=$T/src
mkdir -p "$src/a/b/c" "$src/d" "$src/e"
for i in 0 1 2 3 4 5; do "$GEN" $((20 + 40 * i))K $((i + 10)) >"$src/a/f$i"; done
"$GEN" 300K 20 >"$src/a/b/c/deep"
for i in $(seq 1 40); do echo "$i" >"$src/e/n$i"; done
ln -s ../a/f1 "$src/d/rel"
ln -s /etc/hostname "$src/d/abs"
ln -s b/c/deep "$src/a/deeplink"
chmod 0751 "$src/a/f2"
chmod 0700 "$src/e"
touch -d '2001-02-03 04:05:06' "$src/a/f3"
serve_images "$src" || exit 1
# a copy of the image whose chunks are all damaged (the sidecar has the tree)
cp -r "$W/default.castr" "$W/bad.castr"
find "$W/bad.castr" -name '*.cacnk' -exec python3 -c '
import sys
for p in sys.argv[1:]:
    b = bytearray(open(p, "rb").read()); b[len(b) // 2] ^= 0xff; open(p, "wb").write(b)' {} +

# a directory's size is not archived (0 on the mount): left out
listing() { (cd "$1" && find . -printf '%p %y %m %s %T@ %U %G %l\n' | awk '$2 == "d" { $4 = "-" } 1' | sort); }
listing "$src" >"$T/want"
links() { for l in d/rel d/abs a/deeplink; do readlink "$1/$l"; done; }
links "$src" >"$T/links.want"
# ops MNT: the FUSE request counters, one line
ops() { "$CAFS" stats "$1" | grep -E '^fuse_(lookup|getattr|readlink|opendir|readdir|readdirplus):' | tr '\n' ' '; }
walk() { find "$1" >/dev/null && ls -lR "$1" >/dev/null && find "$1" -print0 | xargs -0 stat >/dev/null && links "$1" >/dev/null; }

m=$T/m1
mount_start "tree mount with a cache" "$m" "$T/log.1" --cache="$T/cache" "$U/img.caidx" || exit 1
ok "every entry's type, mode, size, mtime, owner and target as in the tree" cmp <(listing "$m") "$T/want"
ok "symlink targets as in the tree" cmp <(links "$m") "$T/links.want"
walk "$m"
before=$(ops "$m")
walk "$m"
after=$(ops "$m")
ok "warm find, ls -lR, stat and readlink of everything: no request reaches the server" test "$before" = "$after"
echo "# $after"
ok "... and one OPENDIR in all: its ENOSYS tells the kernel to open directories itself" \
	sh -c "echo '$after' | grep -q 'fuse_opendir: 1 '"
ok "a second listing is still right (from the kernel's caches)" cmp <(listing "$m") "$T/want"

kp=$MOUNT_PID
ok "takeover: exit 0" "$CAFS2" mount --takeover "$m"
wait "$kp"
ok "... the listing and attributes after it are right" cmp <(listing "$m") "$T/want"
ok "... and the symlink targets" cmp <(links "$m") "$T/links.want"
walk "$m"
ok "... the new server got no OPENDIR either" sh -c "'$CAFS' stats '$m' | grep -qx 'fuse_opendir: 0'"
ok "every file's bytes as in the tree" diff -r "$m" "$src"
k=$(keeper_of "$m")
kill "$k"
ok "SIGTERM to the new keeper unmounts" wait_until 10 "" sh -c "! grep -q ' $m ' /proc/mounts"
ok "... and the server is gone (the cache writer drained)" wait_until 10 "" sh -c "test \"\$($LOAD pids '$m' | cut -d' ' -f1)\" = 0"

nginx_stop
m=$T/m2
mount_start "offline mount of the cache alone" "$m" "$T/log.2" --offline --cache="$T/cache" "$U/img.caidx" || exit 1
ok "... every chunk read before is there: the whole tree" diff -r "$m" "$src"
mount_stop "unmount" "$m"
nginx_start "$W" || exit 1
U=$NGINX_URL

m=$T/m3
mount_start "tree mount of the damaged store, with a cache" "$m" "$T/log.3" --cache="$T/cache3" \
	--store="$U/bad.castr" "$U/img.caidx" || exit 1
ok "a file over a corrupt chunk: EIO" expect_errno EIO cat "$m/a/f4"
ok "... the mount stays up: the listing is right" cmp <(listing "$m") "$T/want"
ok "... and another file's read is EIO too" expect_errno EIO cat "$m/a/f0"
mount_stop "unmount" "$m"
ok "... nothing corrupt was cached" sh -c "test -z \"\$(find '$T/cache3' -name '*.cacnk' 2>/dev/null)\""

mount_done_testing
