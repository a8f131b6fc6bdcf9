#!/bin/bash
# mount-profile-warm.sh - a replayed profile's files are warmed into the
# kernel's caches through the mount itself (fs/warm.c): once the stats say
# the warm is done, reading the profile's files again, through a symlink
# and after probing for a name the image does not have (recorded as "l"
# items), asks the server for no read, no lookup and no readlink (the
# kernel has the names, the links and the pages), and gives the right bytes; without a profile the same reads are requests (so the
# counts can fail). A recording mount warms nothing (the recorder must see
# the reads); items that reach outside the image or through a symlink are
# not opened, and the mount works.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"

W=$T/www
src=$T/src
mkdir -p "$W" "$src/usr/bin" "$src/usr/lib" "$src/etc"
"$GEN" 300K 11 >"$src/usr/bin/prog"
"$GEN" 1200K 12 >"$src/usr/lib/libbig.so"
printf 'root:x:0:0\n' >"$src/etc/passwd"
ln -s usr/lib "$src/lib"
"$CAFS" make --store="$W/default.castr" "$W/img.caidx" "$src" >/dev/null || exit 1
nginx_start "$W" || exit 1
U=$NGINX_URL
mnt=$T/mnt
stat_of() { "$CAFS" stats "$1" | awk -v k="$2:" '$1 == k { print $2 }'; }
# the start: what a shell and a loader do: probe PATH, the program, a
# library in parts through a symlink, a file
start() { [ ! -e "$1/usr/sbin/prog" ] && cat "$1/usr/bin/prog" >/dev/null &&
	tail -c 100000 "$1/lib/libbig.so" >/dev/null && head -c 200000 "$1/usr/lib/libbig.so" >/dev/null &&
	cat "$1/etc/passwd" >/dev/null; }
# requests of a kind the server saw, settled (the kernel's background reads
# arrive after the calls that asked for them returned)
settled() {
	local a b
	a=$(stat_of "$1" "$2")
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		sleep 0.2
		b=$(stat_of "$1" "$2")
		[ "$a" = "$b" ] && { echo "$b"; return; }
		a=$b
	done
	echo "$b"
}
warmed() { [ -n "$(stat_of "$1" warm_files)" ] && [ "$(stat_of "$1" warm_files_done)" = "$(stat_of "$1" warm_files)" ]; }

mount_start "mount --record-profile" "$mnt" "$T/log.rec" --cache="$T/c0" --record-profile="$T/p" "$U/img.caidx"
ok "the start reads through the mount" start "$mnt"
mount_stop "unmount" "$mnt"
ok "the profile names the files" test "$(grep -c '^f ' "$T/p")" -ge 3
ok "... the name probed for, and the symlink followed" sh -c "grep -qx '#l usr/sbin' '$T/p' && grep -qx '#l lib' '$T/p'"

# without a profile: the start is requests (what the warm saves)
mount_start "mount --profile=none" "$mnt" "$T/log.none" --cache="$T/c1" --profile=none "$U/img.caidx"
r0=$(settled "$mnt" fuse_read) l0=$(settled "$mnt" fuse_lookup)
start "$mnt"
r1=$(settled "$mnt" fuse_read) l1=$(settled "$mnt" fuse_lookup)
ok "without a profile the start asks for reads ($((r1 - r0))) and lookups ($((l1 - l0)))" \
	test "$((r1 - r0))" -gt 0 -a "$((l1 - l0))" -gt 0
ok "... no warm in the stats" test -z "$(stat_of "$mnt" warm_files)"
mount_stop "unmount" "$mnt"

# with it: warmed at mount, the start is the kernel's alone. Three tries at most:
# a page cache dropped by another process between the warm and the start
# (drop_caches in a parallel test) would ask again, rightly
for try in 1 2 3; do
	mount_start "mount --profile FILE (try $try)" "$mnt" "$T/log.p" --cache="$T/c2.$try" --profile="$T/p" "$U/img.caidx"
	ok "the profile's files are warmed" wait_until 10 "$MOUNT_PID" warmed "$mnt"
	r0=$(settled "$mnt" fuse_read) l0=$(settled "$mnt" fuse_lookup) k0=$(settled "$mnt" fuse_readlink)
	start "$mnt"
	r1=$(settled "$mnt" fuse_read) l1=$(settled "$mnt" fuse_lookup) k1=$(settled "$mnt" fuse_readlink)
	[ "$r1" = "$r0" ] && [ "$l1" = "$l0" ] && [ "$k1" = "$k0" ] && break
	[ "$try" != 3 ] && { mount_stop "unmount" "$mnt"; echo "# the start asked for $((r1 - r0)) reads, $((l1 - l0)) lookups: again"; }
done
ok "... through the mount (reads $r0, lookups $l0)" test "$r0" -gt 0 -a "$l0" -ge 5
ok "the start after it asks for no read ($((r1 - r0)))" test "$r1" = "$r0"
ok "... and no lookup ($((l1 - l0)))" test "$l1" = "$l0"
ok "... and no readlink ($((k1 - k0)))" test "$k1" = "$k0"
ok "... and reads the right bytes" sh -c "cmp '$mnt/usr/bin/prog' '$src/usr/bin/prog' && cmp '$mnt/usr/lib/libbig.so' '$src/usr/lib/libbig.so' && cmp '$mnt/etc/passwd' '$src/etc/passwd'"
mount_stop "unmount" "$mnt"

# a recording mount with a profile: no warm (its reads would hide the start's)
mount_start "mount --profile and --record-profile" "$mnt" "$T/log.pr" --cache="$T/c3" --profile="$T/p" --record-profile="$T/p2" "$U/img.caidx"
ok "... warms nothing" test -z "$(stat_of "$mnt" warm_files)"
mount_stop "unmount" "$mnt"

# items outside the image or through its symlink: not opened, the rest is
{ head -n 2 "$T/p"; echo "f 0 4096 ../../../../../../etc/hostname"; echo "f 0 4096 lib/libbig.so"
	echo "f 0 11 etc/passwd"; } >"$T/hostile"
mount_start "mount --profile with items outside or through a symlink" "$mnt" "$T/log.h" --cache="$T/c4" --profile="$T/hostile" "$U/img.caidx"
ok "... the warm ends" wait_until 10 "$MOUNT_PID" warmed "$mnt"
ok "... reading only the image's own file (reads $(settled "$mnt" fuse_read))" test "$(settled "$mnt" fuse_read)" = 1
ok "... looking up lib (refused: a symlink), etc, passwd" test "$(settled "$mnt" fuse_lookup)" = 3
ok "... and the mount works" cmp "$mnt/lib/libbig.so" "$src/usr/lib/libbig.so"
mount_stop "unmount" "$mnt"
done_testing
