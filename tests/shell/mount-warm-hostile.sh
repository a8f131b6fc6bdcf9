#!/bin/bash
# mount-warm-hostile.sh - a hostile profile against the warm of a replayed
# profile (fs/warm.c): a range of 2^62 bytes is warmed within the file (it
# was 2^45 posix_fadvise calls, a core busy for the mount's life, and the
# items after it never warmed), and the image's device node and FIFO are
# looked up, never opened (a root mount has no nodev: opening the image's
# device opens the host's). The regular files named are still warmed.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"

src=$T/src
mkdir -p "$src/usr/bin" "$src/dev"
"$GEN" 300K 11 >"$src/usr/bin/prog"
printf 'root:x:0:0\n' >"$src/passwd"
mkfifo "$src/fifo"
have_dev=0
mknod "$src/dev/null0" c 1 3 2>/dev/null && have_dev=1
"$CAFS" make --store="$T/s" "$T/img.caidx" "$src" >/dev/null || exit 1
mnt=$T/mnt
stat_of() { "$CAFS" stats "$1" | awk -v k="$2:" '$1 == k { print $2 }'; }
warmed() { [ -n "$(stat_of "$1" warm_files)" ] && [ "$(stat_of "$1" warm_files_done)" = "$(stat_of "$1" warm_files)" ]; }
{ printf 'cafs-profile 1\nindex -\n'; echo "f 0 4096 fifo"; [ $have_dev = 1 ] && echo "f 0 4096 dev/null0"
	echo "f 0 4611686018427387904 usr/bin/prog"; echo "f 0 11 passwd"; } >"$T/p"

# under strace when there is one: its log shows which paths were opened
real=$CAFS
if command -v strace >/dev/null; then
	printf '#!/bin/sh\nexec strace -f -qq -e trace=openat2 -o "%s" "%s" "$@"\n' "$T/trace" "$real" >"$T/cafs"
	chmod +x "$T/cafs"
	CAFS=$T/cafs
fi
mount_start "mount --profile with a huge range, a FIFO and a device" "$mnt" "$T/log" --store="$T/s" \
	--cache="$T/c" --profile="$T/p" "$T/img.caidx"
CAFS=$real
ok "the warm ends (a 2^62-byte range within the file)" wait_until 10 "$MOUNT_PID" warmed "$mnt"
ok "... and warmed the file after it (the server read it)" test "$(stat_of "$mnt" fuse_read)" -ge 2
ok "the mount works" cmp "$mnt/usr/bin/prog" "$src/usr/bin/prog"
mount_stop "unmount" "$mnt"
if [ -s "$T/trace" ]; then
	ok "the FIFO was looked up only (O_PATH)" sh -c "grep -F '\"fifo\"' '$T/trace' | grep -q O_PATH && ! grep -F '\"fifo\"' '$T/trace' | grep -v O_PATH | grep -q ."
	if [ $have_dev = 1 ]; then
		ok "the device node was looked up only (O_PATH)" sh -c "grep -F 'dev/null0' '$T/trace' | grep -q O_PATH && ! grep -F 'dev/null0' '$T/trace' | grep -v O_PATH | grep -q ."
	else
		skip "the device node was looked up only" "mknod needs root"
	fi
else
	skip "the FIFO and device were looked up only" "no strace"
fi
done_testing
