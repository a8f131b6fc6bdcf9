#!/bin/bash
# containers.sh - a container started from a lazily fetched root file
# system (docs/containers.md): a small real rootfs (busybox-static and its
# applets, /etc/os-release, /etc/passwd, two data files nobody reads at
# start) is `cafs make`d into a store served by nginx on 127.0.0.1, mounted
# with cafs, and stacked as the read-only lower layer of an overlayfs whose
# upper layer takes the container's writes; crun runs a shell in it.
# Checked: the container's output; its write lands in the upper dir, not in
# the image; from nginx's log, only chunks of what the container read were
# fetched (fewer than all); a chunk missing from the store for a file the
# container reads is an EIO inside the container (non-zero exit, one error
# line) while the mount stays up and serves the next container. A profile
# recorded at one start (mount --record-profile) is replayed on a fresh
# mount: its chunks come before any read, and the container fetches nothing.
# Everything (container, overlay, FUSE mount, nginx) goes in the trap.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"
need crun busybox python3 unshare
[ "$(id -u)" = 0 ] || skip_all "needs root (overlayfs, crun)"
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null
grep -qw overlay /proc/filesystems || skip_all "the kernel has no overlayfs"
bb=$(command -v busybox)
# the rootfs has no libc: busybox must be static (Debian: busybox-static)
grep -qa '/ld-linux' "$bb" && skip_all "$bb is dynamically linked (install busybox-static)"
"$bb" --list >/dev/null 2>&1 || skip_all "busybox does not list its applets"

# ---- the root file system ----
r=$T/rootfs
mkdir -p "$r/bin" "$r/etc" "$r/tmp" "$r/proc" "$r/sys" "$r/dev" "$r/root" "$r/opt/app" "$r/usr/share/big"
chmod 1777 "$r/tmp"
cp "$bb" "$r/bin/busybox"
for a in $("$bb" --list); do
	[ "$a" = busybox ] || ln -s busybox "$r/bin/$a"
done
printf 'PRETTY_NAME="cafs test rootfs"\nNAME="cafs-test"\nID=cafstest\nVERSION_ID=1\n' >"$r/etc/os-release"
echo 'root:x:0:0:root:/root:/bin/sh' >"$r/etc/passwd"
echo 'root:x:0:' >"$r/etc/group"
echo cafs-test >"$r/etc/hostname"
"$GEN" 1M 7 >"$r/opt/app/app.conf"    # read only in the failure case
"$GEN" 4M 8 >"$r/usr/share/big/data"  # never read
W=$T/www
mkdir -p "$W"
"$CAFS" make --store="$W/default.castr" "$W/rootfs.caidx" "$r" >/dev/null || { echo "Bail out! cafs make failed"; exit 1; }
ok "the image has a metadata sidecar (metadata needs no chunk)" test -s "$W/rootfs.caidx.cameta"

nginx_start "$W" || { echo "Bail out! nginx did not start"; exit 1; }
U=$NGINX_URL
# chunk ids GET from the store since the last nginx_log_reset, sorted
fetched_ids() { nginx_log | awk '$1 == "GET" && $2 ~ /\.cacnk$/ && $3 == 200 { n = split($2, p, "/"); sub(/\.cacnk$/, "", p[n]); print p[n] }' | sort -u; }
# the chunks of one directory of the image: what `cafs extract URL OUT DIR` fetches (no cache)
dir_ids() {
	nginx_log_reset
	"$CAFS" extract --store="$U/default.castr" "$U/rootfs.caidx" "$T/x.$1" "$1" >/dev/null 2>&1 || return 1
	rm -rf "$T/x.$1"
	fetched_ids
}
all=$T/ids.all
find "$W/default.castr" -name '*.cacnk' -printf '%f\n' | sed 's/\.cacnk$//' | sort >"$all"
for d in bin etc opt usr; do dir_ids $d >"$T/ids.$d" || { echo "Bail out! cafs extract $d failed"; exit 1; }; done
# chunks that hold nothing but the unread files (no byte of bin/ or etc/)
cat "$T/ids.bin" "$T/ids.etc" | sort -u >"$T/ids.read"
sort -u "$T/ids.opt" "$T/ids.usr" | comm -23 - "$T/ids.read" >"$T/ids.unread"
comm -23 "$T/ids.opt" "$T/ids.usr" | comm -23 - "$T/ids.read" >"$T/ids.app"
ok "the unread files have chunks of their own (the test can tell)" test -s "$T/ids.unread" -a -s "$T/ids.app"

# ---- the container runtime ----
. "$top_srcdir/tests/lib-crun.sh"
# ctr NAME BUNDLE: crun run, its stdout in $T/NAME.out, stderr $T/NAME.err, status $T/NAME.rc
ctr() {
	local rc=0
	crun_run "$1" "$2" >"$T/$1.out" 2>"$T/$1.err" || rc=$?
	echo "$rc" >"$T/$1.rc"
}

# ---- mount, overlay, container ----
mnt=$T/mnt merged=$T/merged
mount_start "cafs mounts the image from nginx" "$mnt" "$T/mount.log" --cache="$T/cache" "$U/rootfs.caidx" || exit 1
mkdir -p "$T/upper" "$T/work" "$merged"
at_cleanup "umount '$merged' || umount -l '$merged'"
ok "overlayfs: the mount as lower layer, upper and work in the test dir" \
	mount -t overlay overlay -o "lowerdir=$mnt,upperdir=$T/upper,workdir=$T/work" "$merged"

nginx_log_reset
crun_bundle "$T/b1" "$merged" sh -c 'echo hello > /tmp/x; cat /etc/os-release; cat /tmp/x' || exit 1
ctr c1 "$T/b1"
ok "crun run exits 0" sh -c "test \"\$(cat '$T/c1.rc')\" = 0 || { cat '$T/c1.err'; exit 1; }"
ok "the container printed os-release and what it wrote" \
	sh -c "{ cat '$r/etc/os-release'; echo hello; } | cmp - '$T/c1.out'"
ok "... and nothing on stderr" test ! -s "$T/c1.err"
ok "crun removed the container" crun_none
ok "the write landed in the upper dir" test "$(cat "$T/upper/tmp/x" 2>&1)" = hello
ok "... not in the image (the mount has no tmp/x)" test ! -e "$mnt/tmp/x" -a ! -e "$r/tmp/x"
fetched_ids >"$T/ids.c1"
n_all=$(wc -l <"$all") n_c1=$(wc -l <"$T/ids.c1")
echo "# container start fetched $n_c1 of the $n_all chunks"
ok "chunks were fetched lazily: some, fewer than all" test "$n_c1" -gt 0 -a "$n_c1" -lt "$n_all"
ok "... only chunks of bin/ and etc/ (what the container read)" \
	sh -c "test -z \"\$(comm -23 '$T/ids.c1' '$T/ids.read')\""
ok "... including os-release's" sh -c "test -n \"\$(comm -12 '$T/ids.c1' '$T/ids.etc')\""
ok "... and none of the unread files' own chunks" \
	sh -c "test -z \"\$(comm -12 '$T/ids.c1' '$T/ids.unread')\""

# ---- a chunk missing from the store ----
# one chunk of opt/app/app.conf only, taken out of the store: it was never
# fetched (nothing read the file), so the cache does not have it either
gone=$(head -n 1 "$T/ids.app")
gone_file=$(find "$W/default.castr" -name "$gone.cacnk")
mv "$gone_file" "$T/held.cacnk"
at_cleanup "mv '$T/held.cacnk' '$gone_file'"
crun_bundle "$T/b2" "$merged" sh -c 'cat /opt/app/app.conf >/dev/null' || exit 1
ctr c2 "$T/b2"
ok "a missing chunk: the container's read fails (non-zero exit)" test "$(cat "$T/c2.rc")" != 0
ok "... with one error line, EIO (Input/output error)" \
	sh -c "test \"\$(wc -l <'$T/c2.err')\" = 1 && grep -q 'Input/output error' '$T/c2.err' || { cat '$T/c2.err'; exit 1; }"
ok "... the mount daemon is still running" kill -0 "$MOUNT_PID"
ok "... the mount is still mounted" is_mounted "$mnt"
ctr c3 "$T/b1"
ok "... and the next container starts and reads from it" \
	sh -c "test \"\$(cat '$T/c3.rc')\" = 0 && { cat '$r/etc/os-release'; echo hello; } | cmp - '$T/c3.out'"
"$CAFS" stats "$mnt" >"$T/stats" 2>&1
echo "# stats: $(grep -E '^(chunks_fetched|http_requests|errors|read_errors):' "$T/stats" | tr '\n' ' ')"
mv "$T/held.cacnk" "$gone_file"

# ---- with a prefetch profile ----
# PROFILE CASE (issue 11 items 3 and 6): record a profile at one container
# start (`cafs mount --record-profile`, written at unmount), replay it on a
# second mount with a fresh cache (`--profile`): from nginx's log, its
# chunks are fetched up front, before anything reads, and the container
# started then waits on no fetch of them. Runs when `cafs help mount` lists
# the options (helper prefetch's branch).
stat_of() { "$CAFS" stats "$1" | awk -v k="$2:" '$1 == k { print $2 }'; }
replayed() { [ -n "$(stat_of "$1" profile_chunks)" ] && [ "$(stat_of "$1" profile_chunks_done)" = "$(stat_of "$1" profile_chunks)" ]; }
# overlay_on LOWER NAME: an overlayfs of LOWER at $T/NAME.merged (upper, work beside it)
overlay_on() {
	mkdir -p "$T/$2.upper" "$T/$2.work" "$T/$2.merged"
	at_cleanup "umount '$T/$2.merged' || umount -l '$T/$2.merged'"
	mount -t overlay overlay -o "lowerdir=$1,upperdir=$T/$2.upper,workdir=$T/$2.work" "$T/$2.merged"
}
profile_case() {
	local prof=$T/rootfs.caprofile pm=$T/mnt.p
	crun_bundle "$T/bp1" "$T/p1.merged" sh -c 'echo; cat /etc/os-release' || return 1
	crun_bundle "$T/bp2" "$T/p2.merged" sh -c 'echo; cat /etc/os-release' || return 1
	mount_start "profile: mount --record-profile (fresh cache)" "$pm" "$T/mount.p1.log" \
		--cache="$T/cache.p1" --record-profile="$prof" "$U/rootfs.caidx" || return 1
	overlay_on "$pm" p1
	nginx_log_reset
	ctr p1 "$T/bp1"
	fetched_ids >"$T/ids.p1"
	ok "profile: the recorded container start ran" sh -c "test \"\$(cat '$T/p1.rc')\" = 0 && { echo; cat '$r/etc/os-release'; } | cmp - '$T/p1.out'"
	umount "$T/p1.merged"
	mount_stop "profile: unmount writes the profile" "$pm"
	ok "... it names what the container read (bin/busybox, etc/os-release)" \
		sh -c "grep -q ' bin/busybox\$' '$prof' && grep -q ' etc/os-release\$' '$prof'"

	nginx_log_reset
	mount_start "profile: mount --profile (another fresh cache)" "$pm" "$T/mount.p2.log" \
		--cache="$T/cache.p2" --profile="$prof" "$U/rootfs.caidx" || return 1
	ok "... the profile's chunks are fetched up front, before any read" wait_until 20 "$MOUNT_PID" replayed "$pm"
	fetched_ids >"$T/ids.p2"
	echo "# replay fetched $(wc -l <"$T/ids.p2") chunks up front; the recorded start fetched $(wc -l <"$T/ids.p1")"
	ok "... chunks of what the container read, none of the unread files' own" \
		sh -c "test -s '$T/ids.p2' && test -z \"\$(comm -23 '$T/ids.p2' '$T/ids.read')\" && test -z \"\$(comm -12 '$T/ids.p2' '$T/ids.unread')\""
	overlay_on "$pm" p2
	nginx_log_reset
	ctr p2 "$T/bp2"
	fetched_ids >"$T/ids.p2c"
	ok "... the container starts from it" sh -c "test \"\$(cat '$T/p2.rc')\" = 0 && cmp '$T/p1.out' '$T/p2.out'"
	ok "... and fetches no chunk: the profile brought all it reads" sh -c "test ! -s '$T/ids.p2c' || { cat '$T/ids.p2c'; exit 1; }"
	umount "$T/p2.merged"
	mount_stop "profile: unmount" "$pm"
}
profile_case

# ---- tear down: nothing left ----
ok "the overlay unmounts" umount "$merged"
mount_stop "the FUSE mount unmounts, daemon exits 0" "$mnt"
nginx_stop
ok "nothing left: no container, no overlay, no FUSE mount" \
	sh -c "test -z \"\$(crun --root='$CRUN_ROOT' list -q 2>/dev/null)\" && ! grep -qF '$T/' /proc/self/mountinfo"
mount_done_testing
