#!/bin/bash
# old-times.sh - mtimes before 1970 and far ahead: what make writes (as
# casync does, byte for byte), extract and the mount read back. The ENTRY's u64 holds
# signed nanoseconds (two's complement), as casync writes them: -1 ns is
# all ones, which casync's own reader refuses ("Bad message": a casync
# bug, so its extract is not compared here, only its make and its mtree).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
need casync python3
[ "$(id -u)" = 0 ] || skip_all "needs root (a tmpfs: 64-bit times whatever \$T is on)"
mkdir -p "$T/tm"
mount -t tmpfs -o size=64m tmpfs "$T/tm" || skip_all "cannot mount a tmpfs"
at_cleanup "umount -l '$T/tm'"
W=$T/tm

src=$W/src
mkdir -p "$src/old-dir"
for f in m1ns m1500ms y1901 y2200 old-dir/inner; do printf '%s\n' "$f" >"$src/$f"; done
ln -s m1ns "$src/old-link"
touch -d '1969-12-31 23:59:59.999999999 UTC' "$src/m1ns"
touch -d '1969-12-31 23:59:58.5 UTC' "$src/m1500ms"
touch -d '1901-06-01 12:00:00.25 UTC' "$src/y1901"
touch -d '2200-01-01 00:00:00.123456789 UTC' "$src/y2200"
touch -d '1950-01-01 UTC' "$src/old-dir/inner"
touch -h -d '1960-05-05 05:05:05.5 UTC' "$src/old-link"
touch -d '1965-01-01 00:00:00.75 UTC' "$src/old-dir"
touch -d '1969-12-31 23:59:59.999999999 UTC' "$src"
ok "the tmpfs keeps those times" test "$(stat -c %y "$src/y1901")" = "1901-06-01 12:00:00.250000000 +0000"

# stamps DIR: each node's mtime, in name order
stamps() { (cd "$1" && find . | sort | while read -r p; do printf '%s %s\n' "$p" "$(stat -c %y "$p")"; done); }
stamps "$src" >"$T/src.stamps"

casync make "$W/casync.catar" "$src" >/dev/null
"$CAFS" make "$W/cafs.catar" "$src" >/dev/null
ok "cafs make = casync make, byte for byte" cmp "$W/casync.catar" "$W/cafs.catar"
"$CAFS" make "$W/cafs.caidx" "$src" >/dev/null # its store: default.castr beside it

for a in casync.catar cafs.caidx; do
	ok "$a: extract succeeds" "$CAFS" extract "$W/$a" "$W/x-$a"
	ok "$a: every mtime equals the source's" diff "$T/src.stamps" <(stamps "$W/x-$a")
done
ok "mtree reads them (times as casync prints them: the u64)" sh -c "'$CAFS' mtree '$W/cafs.catar' | grep -q '^m1ns .* time=18446744073.709551615 '"
# casync's mtree refuses the -1 ns entry: compare on a tree without it
mkdir "$W/src2"
cp -a "$src/m1500ms" "$src/y1901" "$src/y2200" "$src/old-dir" "$W/src2/"
touch -d '1969-12-31 23:59:59 UTC' "$W/src2"
casync make "$W/c2.catar" "$W/src2" >/dev/null
ok "cafs mtree = casync mtree" diff <(casync mtree "$W/c2.catar") <("$CAFS" mtree "$W/c2.catar")

mnt=$T/mnt
mount_start "mount the archive" "$mnt" "$T/mnt.log" "$W/cafs.catar"
ok "mount: every mtime equals the source's" diff "$T/src.stamps" <(stamps "$mnt")
mount_stop "unmount" "$mnt"

# a coarser granularity floors the u64, as casync does (identical archives):
# before 1970 that is up to 2^64 mod 10^9 ns off the signed floor, and read back as written
casync make --with=sec-time "$W/csec.catar" "$src" >/dev/null
"$CAFS" make --with=sec-time "$W/sec.catar" "$src" >/dev/null
ok "sec-time: cafs make = casync make" cmp "$W/csec.catar" "$W/sec.catar"
ok "sec-time: extract succeeds" "$CAFS" extract "$W/sec.catar" "$W/x-sec"
# as_written SRC OUT: OUT's mtimes are SRC's floored on the u64 to the second
as_written() {
	python3 - "$1" "$2" <<'PY'
import os, sys
a, b = sys.argv[1:]
for d, dirs, files in os.walk(a):
    for n in dirs + files:
        p = os.path.join(d, n)
        if os.path.islink(p):
            continue  # sec-time alone stores no symlinks
        u = os.lstat(p).st_mtime_ns % 2**64 // 10**9 * 10**9
        want = u - 2**64 if u >= 2**63 else u
        got = os.lstat(os.path.join(b, os.path.relpath(p, a))).st_mtime_ns
        if got != want:
            sys.exit('%s: %d, not %d' % (p, got, want))
PY
}
ok "sec-time: every mtime is what the archive holds" as_written "$src" "$W/x-sec"

# past what an int64 of ns holds (2262-04-11): written as casync writes it,
# the u64 count; it reads back as the signed one says (before 1970), since
# the format cannot tell them apart
printf 'far\n' >"$W/far"
touch -d '2500-01-01 UTC' "$W/far"
mkdir "$W/src3" && mv "$W/far" "$W/src3/"
casync make "$W/cfar.catar" "$W/src3" >/dev/null
"$CAFS" make "$W/far.catar" "$W/src3" >/dev/null
ok "after 2262: cafs make = casync make" cmp "$W/cfar.catar" "$W/far.catar"
ok "after 2262: extract succeeds" "$CAFS" extract "$W/far.catar" "$W/x-far"
ok "after 2262: read as the signed count" test "$(stat -c %Y "$W/x-far/far")" = "$(( $(stat -c %Y "$W/src3/far") - 18446744073 - 1 ))"

mount_done_testing
