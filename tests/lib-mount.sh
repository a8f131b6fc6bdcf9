# tests/lib-mount.sh - FUSE mounts for the tests. Source it after tests/lib.sh:
#
#   . "$top_srcdir/tests/lib-mount.sh"     # skips the file without FUSE
#   mount_start "mounts" "$T/mnt" "$T/log" --store "$T/s" "$T/img.caibx"
#   ...                                    # $MOUNT_PID is the daemon
#   mount_stop "unmounts, daemon exits 0" "$T/mnt"
#   mount_done_testing                     # done_testing + daemon logs on failure
#
# The daemon runs with -f in the background of this shell, so $! is the
# daemon itself; mount_start/mount_stop/mount_kill print their own TAP
# line and must not run inside ok (a subshell cannot wait for it). Every mount registers its own cleanup (lazy unmount, kill,
# wait), which runs even when the test dies half-way.

[ -c /dev/fuse ] && [ -r /dev/fuse ] && [ -w /dev/fuse ] || skip_all "/dev/fuse is not usable"
grep -qw fuse /proc/filesystems || skip_all "the kernel has no FUSE"
need fusermount3

declare -A _mount_pid=() _mount_log=()
MOUNT_PID=

# is_mounted DIR: DIR is a mount point (from the kernel's table: never
# blocks on a daemon that does not answer)
is_mounted() {
	local d
	d=$(cd "$1" 2>/dev/null && pwd -P) || d=$1
	awk -v d="$d" '$5 == d { f = 1 } END { exit !f }' /proc/self/mountinfo
}

# wait_mounted DIR PID: up to 10 s; fails early if PID (when given) died
wait_mounted() {
	local dir=$1 pid=${2:-} i
	for ((i = 0; i < 200; i++)); do
		is_mounted "$dir" && return 0
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
			return 1
		fi
		sleep 0.05
	done
	return 1
}

# _tap DESC RC [OUTPUT]: one TAP line, as ok does (for steps that must run in
# this shell, not in ok's command substitution: starting and waiting for
# the daemon, whose PID only this shell can wait for)
_tap() {
	_tap_n=$((_tap_n + 1))
	if [ "$2" = 0 ]; then
		echo "ok $_tap_n - $1"
	else
		echo "not ok $_tap_n - $1"
		_tap_failed=$((_tap_failed + 1))
		[ -z "${3:-}" ] || printf '%s\n' "$3" | tail -n 20 | sed 's/^/#   /'
	fi
}

# mount_start DESC MNT LOG ARGS...: one TAP line for `cafs mount -f ARGS...
# MNT` starting in the background and the mount appearing. Sets MOUNT_PID.
# Returns non-zero (after printing the log) if the daemon died or the mount
# did not appear.
mount_start() {
	local desc=$1 mnt=$2 log=$3
	shift 3
	mkdir -p "$mnt"
	if is_mounted "$mnt"; then
		_tap "$desc" 1 "$mnt is already mounted"
		return 1
	fi
	"$CAFS" mount -f "$@" "$mnt" >"$log" 2>&1 &
	MOUNT_PID=$!
	_mount_pid[$mnt]=$MOUNT_PID
	_mount_log[$mnt]=$log
	at_cleanup "fusermount3 -u -z '$mnt'; kill $MOUNT_PID; wait $MOUNT_PID"
	if wait_mounted "$mnt" "$MOUNT_PID"; then
		_tap "$desc" 0
	else
		_tap "$desc" 1 "$(echo "daemon log:"; cat "$log")"
		return 1
	fi
}

# mount_stop DESC MNT: one TAP line for a plain unmount after which the
# daemon exits 0.
mount_stop() {
	local desc=$1 mnt=$2 pid=${_mount_pid[$2]:-} rc=0 out
	if ! out=$(fusermount3 -u "$mnt" 2>&1); then
		_tap "$desc" 1 "$out"
		return 1
	fi
	if [ -n "$pid" ]; then
		wait "$pid" || rc=$?
		unset "_mount_pid[$mnt]"
	fi
	_tap "$desc" "$rc" "daemon exited $rc"
}

# mount_kill DESC MNT SIGNAL: one TAP line for the daemon exiting 0 on
# SIGNAL and leaving nothing mounted.
mount_kill() {
	local desc=$1 mnt=$2 sig=$3 pid=${_mount_pid[$2]:-} rc=0 i
	kill "-$sig" "$pid" || rc=$?
	# bounded: a signal the daemon does not handle must fail, not hang
	for ((i = 0; i < 200; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$pid" 2>/dev/null; then
		_tap "$desc" 1 "daemon still running 10 s after SIG$sig"
		return 1
	fi
	wait "$pid" || rc=$?
	unset "_mount_pid[$mnt]"
	if [ "$rc" = 0 ] && ! is_mounted "$mnt"; then
		_tap "$desc" 0
	else
		_tap "$desc" 1 "daemon exited $rc; mounted: $(is_mounted "$mnt" && echo yes || echo no)"
	fi
}

# mount_server_pid MNT: the process serving MNT now: the keeper ($MOUNT_PID)
# holds the connection and runs the server as its child (fs/keeper.h)
mount_server_pid() {
	local k=${_mount_pid[$1]:-}
	[ -n "$k" ] && pgrep -P "$k" | head -n 1
}

# mount_log MNT: the daemon's output so far
mount_log() { cat "${_mount_log[$1]}"; }

# mount_done_testing: done_testing, printing every daemon log if anything failed
mount_done_testing() {
	local m
	if [ "$_tap_failed" -ne 0 ]; then
		for m in "${!_mount_log[@]}"; do
			echo "# daemon log for $m:"
			sed 's/^/#   /' "${_mount_log[$m]}" 2>/dev/null
		done
	fi
	done_testing
}

# rand_reads FILE REF [COUNT] [SEED]: COUNT preads at random offsets and
# lengths (some crossing the end) must equal the reference file.
rand_reads() {
	python3 - "$1" "$2" "${3:-1000}" "${4:-1}" <<'PY'
import os, random, sys
path, ref, count, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rnd = random.Random(seed)
a = os.open(path, os.O_RDONLY)
want = open(ref, 'rb').read()
size = len(want)
if os.fstat(a).st_size != size:
    sys.exit("size %d != %d" % (os.fstat(a).st_size, size))
for i in range(count):
    off = rnd.randrange(0, size + 1000)
    n = rnd.choice([1, 7, 512, 4096, 65536, 200000, 1 << 20, rnd.randrange(1, 3 << 20)])
    got = os.pread(a, n, off)
    if got != want[off:off + n]:
        sys.exit("read %d at %d differs (%d bytes back)" % (n, off, len(got)))
PY
}

# ---- mounts that outlive their server (fs/keeper.h) ----
#
#   keeper_setup                           # $LOAD, $CAFS2, keeper_of, cleanup
#   serve_images "$src" "$T/bref/disk"     # $W/img.caidx, $W/disk.caibx at $U
#   mount_start "mounts" "$T/m1" "$T/log.1" "$U/img.caidx"
#   "$CAFS2" mount --takeover "$T/m1"; stop_keeper "$T/m1"

# keeper_setup: what the tests of a keeper share: $LOAD (keeper-load.py:
# the pids serving a mount, the reader loads), a takeover socket directory
# of the test's own ($CAFS_RUNTIME_DIR), $CAFS2 (a copy of the binary: a
# takeover by another binary), and a cleanup that stops whichever keeper
# serves each mount under $T/m* and in $KEEPER_MOUNTS (mount_start's own
# cleanup knows only the first keeper; a takeover's is another process).
keeper_setup() {
	LOAD="python3 $top_srcdir/tests/keeper-load.py"
	export CAFS_RUNTIME_DIR=$T/run
	mkdir -p "$CAFS_RUNTIME_DIR" "$T/bin2"
	cp "$CAFS" "$T/bin2/cafs"
	CAFS2=$T/bin2/cafs
	at_cleanup 'for m in "$T"/m* ${KEEPER_MOUNTS:-}; do k=$(keeper_of "$m"); [ "$k" != 0 ] && kill "$k"; done; sleep 0.3'
}

# keeper_of MNT, server_of MNT: the keeper of MNT now (it changes with each
# takeover) and the server it runs; 0 when there is none
keeper_of() { $LOAD pids "$1" | cut -d' ' -f1; }
server_of() { $LOAD pids "$1" | cut -d' ' -f2; }

# stop_keeper MNT: SIGTERM to whichever keeper serves MNT; within 10 s it is
# gone and MNT is not mounted
stop_keeper() {
	local k i
	k=$(keeper_of "$1")
	[ "$k" != 0 ] || return 1
	kill -TERM "$k" || return 1
	for ((i = 0; i < 200; i++)); do
		! is_mounted "$1" && ! kill -0 "$k" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# serve_images SRC [BLOB]: the tree SRC made into $W/img.caidx and the file
# BLOB (if given) into $W/disk.caibx, both in the store $W/default.castr,
# and $W served by nginx (lib-http.sh) at $U, with /slow/ the same store at
# 100 KB/s a connection (reads that stay in flight). Sets W and U.
serve_images() {
	W=$T/www
	mkdir -p "$W"
	"$CAFS" make -q --store="$W/default.castr" "$W/img.caidx" "$1" >/dev/null || return 1
	if [ -n "${2:-}" ]; then
		"$CAFS" make -q --store="$W/default.castr" "$W/disk.caibx" "$2" >/dev/null || return 1
	fi
	NGINX_EXTRA="location /slow/ { alias $W/default.castr/; limit_rate 100k; } ${NGINX_EXTRA:-}" \
		nginx_start "$W" || return 1
	U=$NGINX_URL
}
