#!/bin/bash
# containers-restart.sh - a crun container whose root is an overlayfs on a
# cafs mount (as in containers.sh) reads files in a loop, checking their
# digests, while the mount's server is SIGKILLed 10 times and the mount is
# taken over 10 times by a copy of the binary (page cache dropped after
# each, so the reads reach the new server); told to stop (SIGTERM), it
# exits 0. Everything goes in the trap.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"
need crun busybox python3 unshare
[ "$(id -u)" = 0 ] || skip_all "needs root (overlayfs, crun)"
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null
grep -qw overlay /proc/filesystems || skip_all "the kernel has no overlayfs"
bb=$(command -v busybox)
grep -qa '/ld-linux' "$bb" && skip_all "$bb is dynamically linked (install busybox-static)"
"$bb" --list >/dev/null 2>&1 || skip_all "busybox does not list its applets"
LOAD="python3 $top_srcdir/tests/keeper-load.py"
export CAFS_RUNTIME_DIR=$T/run
mkdir -p "$CAFS_RUNTIME_DIR"
cp "$CAFS" "$T/cafs2"

r=$T/rootfs
mkdir -p "$r/bin" "$r/etc" "$r/tmp" "$r/proc" "$r/sys" "$r/dev" "$r/root" "$r/data"
chmod 1777 "$r/tmp"
cp "$bb" "$r/bin/busybox"
for a in $("$bb" --list); do
	[ "$a" = busybox ] || ln -s busybox "$r/bin/$a"
done
printf 'NAME="cafs-test"\nID=cafstest\n' >"$r/etc/os-release"
echo 'root:x:0:0:root:/root:/bin/sh' >"$r/etc/passwd"
for i in 1 2 3; do "$GEN" $((i * 300))K $((i + 40)) >"$r/data/f$i"; done
# the loop: each file's digest as at the start, until SIGTERM (exit 0);
# a wrong digest or a failed read ends it with 3
cat >"$r/bin/loop" <<'EOF'
#!/bin/sh
trap 'exit 0' TERM
for f in /data/f1 /data/f2 /data/f3 /etc/os-release; do md5sum "$f"; done >/tmp/want
while :; do
	for f in /data/f1 /data/f2 /data/f3 /etc/os-release; do md5sum "$f"; done >/tmp/got || exit 3
	cmp -s /tmp/want /tmp/got || exit 3
	: $((n += 1))
	echo "$n" >/tmp/rounds
done
EOF
chmod 755 "$r/bin/loop"
W=$T/www
mkdir -p "$W"
"$CAFS" make -q --store="$W/default.castr" "$W/rootfs.caidx" "$r" >/dev/null || { echo "Bail out! cafs make failed"; exit 1; }
nginx_start "$W" || { echo "Bail out! nginx did not start"; exit 1; }
U=$NGINX_URL

. "$top_srcdir/tests/lib-crun.sh"
mnt=$T/mnt merged=$T/merged
mount_start "cafs mounts the rootfs from nginx" "$mnt" "$T/mount.log" -v --cache="$T/cache" "$U/rootfs.caidx" || exit 1
kp=$MOUNT_PID
at_cleanup 'k=$($LOAD pids "$mnt" | cut -d" " -f1); [ "$k" != 0 ] && kill "$k"; sleep 0.3'
mkdir -p "$T/upper" "$T/work" "$merged"
at_cleanup "umount '$merged' || umount -l '$merged'"
ok "overlayfs on the mount" \
	mount -t overlay overlay -o "lowerdir=$mnt,upperdir=$T/upper,workdir=$T/work" "$merged"
crun_bundle "$T/b" "$merged" /bin/loop || exit 1
crun_run loop "$T/b" >"$T/c.out" 2>"$T/c.err" &
cp=$!
at_cleanup "crun --root='$CRUN_ROOT' delete -f loop" # (crun_run ran in a subshell)
rounds() { cat "$T/upper/tmp/rounds" 2>/dev/null || echo 0; }
rounds_gt() { [ "$(rounds)" -gt "$1" ]; }
ok "the container loops" wait_until 20 "$cp" rounds_gt 2

# 10 kills and 10 takeovers, alternating; after each, some rounds must pass
TREE_TODO= # fs/ derives node ids from the image: a fresh server answers for them
bad=
for i in $(seq 1 10); do
	read -r k s < <($LOAD pids "$mnt")
	kill -KILL "$s" 2>/dev/null
	sync; echo 3 >/proc/sys/vm/drop_caches
	n=$(rounds)
	wait_until 10 "$cp" rounds_gt "$((n + 1))" 2>/dev/null || { bad="after kill $i"; break; }
	"$T/cafs2" mount --takeover "$mnt" || { bad="takeover $i failed"; break; }
	echo 3 >/proc/sys/vm/drop_caches
	n=$(rounds)
	wait_until 10 "$cp" rounds_gt "$((n + 1))" 2>/dev/null || { bad="after takeover $i"; break; }
done
echo "# container: $(rounds) rounds${bad:+, stopped $bad}: $(head -c 200 "$T/c.err" | tr "\n" " ")"
ok "the container reads on through 10 kills and 10 takeovers" test -z "$bad"
crun --root="$CRUN_ROOT" kill loop TERM 2>/dev/null
rc=0
timeout 20 tail --pid="$cp" -f /dev/null
wait "$cp" || rc=$?
ok "told to stop, the container exits 0" test "$rc" = 0
ok "the keeper that took over still serves the mount" is_mounted "$mnt"
umount "$merged" 2>/dev/null || umount -l "$merged"
k=$($LOAD pids "$mnt" | cut -d' ' -f1)
ok "SIGTERM to the last keeper unmounts" sh -c "kill -TERM $k && sleep 1 && ! grep -q ' $mnt ' /proc/mounts"
wait "$kp" 2>/dev/null
mount_done_testing
