#!/bin/bash
# mount-stats-others.sh - FS_IOC_STATS on an allow_other mount (a root
# mount) answers another user too, but that user asking for fresh
# renderings again and again does not push out the one root is paging
# through: a new rendering replaces its own user's oldest (fs_private.h).
# Before, four of the other user's requests evicted root's, and cafs stats
# failed ("the stats changed while being read, 8 times").
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"

[ "$(id -u)" = 0 ] || { skip "another user's stats requests" "needs root (allow_other, setuid)"; done_testing; exit 0; }
mkdir -p "$T/src"
"$GEN" 100K 3 >"$T/src/f"
"$CAFS" make --store="$T/s" "$T/img.caidx" "$T/src" >/dev/null || exit 1
mnt=$T/mnt
mount_start "mount" "$mnt" "$T/log" --store="$T/s" "$T/img.caidx"

# the other user: root opens the mount's root, then becomes nobody and
# asks for page 0 (a new rendering) as fast as it can; it counts answers
cat >"$T/spam.py" <<'PY'
import fcntl, os, struct, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
out = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
def say(n):
    os.ftruncate(out, 0)
    os.pwrite(out, str(n).encode(), 0)
os.setgroups([]); os.setgid(65534); os.setuid(65534)
size = 32 + 16320
req = (3 << 30) | (size << 16) | (0xCA << 8) | 0x24
buf = bytearray(size)
n = 0
end = time.monotonic() + float(sys.argv[3])
while time.monotonic() < end:
    struct.pack_into("<IIQQII", buf, 0, 0, 1, 0, 0, 0, 0)
    fcntl.ioctl(fd, req, buf)
    n += 1
    if n % 100 == 0:
        say(n)
say(n)
PY
/usr/bin/python3 "$T/spam.py" "$mnt" "$T/spam.n" 8 2>"$T/spam.err" &
spam=$!
at_cleanup "kill $spam 2>/dev/null; wait $spam 2>/dev/null"
ok "the other user's requests are answered" wait_until 5 "$spam" test -s "$T/spam.n"
fails=0
for i in 1 2 3 4 5; do
	CAFS_TEST_STATS_PAGE=64 "$CAFS" stats --format=openmetrics "$mnt" >"$T/out.$i" 2>"$T/err.$i" || fails=$((fails + 1))
done
ok "root's cafs stats, in pages of 64 bytes meanwhile: 5 of 5 ($fails failed)" test "$fails" = 0
ok "... whole documents" grep -q '^# EOF' "$T/out.1"
ok "the other user was still asking ($(cat "$T/spam.n") answers)" kill -0 "$spam"
kill "$spam" 2>/dev/null
wait "$spam" 2>/dev/null
ok "... without an error of its own" test ! -s "$T/spam.err"
mount_stop "unmount" "$mnt"
done_testing
