#!/bin/bash
# mount-outage.sh - a mount over a real nginx on 127.0.0.1 through server
# outages (remote.h, "Outages"; cafs(1), OUTAGES):
#  - soft (the default): a read during an outage fails with EIO after the
#    deadline (CAFS_HTTP_DEADLINE), not at once and not later; the server
#    back on the same port: the same file reads right at once (no
#    remembered failure answers for it); cafs stats shows the store
#    failing, then up;
#  - many readers during an outage (the server answers 503) share one
#    probe at a time: a bounded number of requests in nginx's log;
#  - -o hard: a read blocks through the outage and completes after it;
#    killing the reader ends its wait (FUSE INTERRUPT: the daemon says
#    so), and SIGTERM stops the mount while a read waits.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"
need python3 timeout

W=$T/www
src=$T/src
mkdir -p "$W" "$src/d"
for i in $(seq -w 0 23); do "$GEN" 150K $((10#$i + 700)) >"$src/d/f$i"; done
"$CAFS" make --store="$W/default.castr" "$W/img.caidx" "$src" >/dev/null || exit 1
# "$W/down" present: every chunk is a 503 (a server in trouble, still logging)
NGINX_EXTRA="location /default.castr/ { if (-f $W/down) { return 503; } }"
nginx_start "$W" || exit 1
U=$NGINX_URL
PORT=$NGINX_PORT
chunk_gets() { nginx_log | awk '$2 ~ /\.cacnk$/' | wc -l; }
# the soft deadline is the HTTP deadline; quick connection failures
export CAFS_HTTP_TIMEOUT=2 CAFS_HTTP_RETRIES=1 CAFS_HTTP_DEADLINE=3
mnt=$T/mnt
# ms CMD...: run CMD, its wall time in ms into $T/ms
ms() {
	local t0 rc=0
	t0=$(date +%s%N)
	"$@" || rc=$?
	echo $((($(date +%s%N) - t0) / 1000000)) >"$T/ms"
	return $rc
}
stat_line() { "$CAFS" stats "$mnt" | grep '^store_state: '; }

# ---- soft: the outage of issue 20 (server stopped, then back on its port) ----
mount_start "mount with a cache" "$mnt" "$T/log1" --cache="$T/cache" "$U/img.caidx"
ok "before the outage" cmp "$mnt/d/f00" "$src/d/f00"
ok "stats: the store is up" sh -c "'$CAFS' stats '$mnt' | grep -qx 'store_state: $U/default.castr up'"
nginx_stop
ok "server down: a read is EIO" ms expect_errno EIO cat "$mnt/d/f01"
took=$(cat "$T/ms")
ok "... after the soft deadline, not at once (${took} ms, CAFS_HTTP_DEADLINE=3)" \
	test "$took" -ge 2500 -a "$took" -le 8000
stat_line >"$T/st1"; cat "$T/st1"
ok "stats: failing since, next probe" grep -Eq "^store_state: $U/default.castr failing since 20[0-9-]+T[0-9:]+Z \([0-9]+ s: Connection refused\), (next probe in [0-9]+ s|probing now)$" "$T/st1"
ok "... and the daemon said so once" test "$(grep -c 'not answering' "$T/log1")" = 1
ok "still mounted" is_mounted "$mnt"
nginx_start "$W" "$PORT"
_tap "server back on the same port" $?
ok "at once: the file that failed reads right" ms cmp "$mnt/d/f01" "$src/d/f01"
ok "... quickly ($(cat "$T/ms") ms)" test "$(cat "$T/ms")" -lt 3000
ok "stats: the store is up again" sh -c "'$CAFS' stats '$mnt' | grep -qx 'store_state: $U/default.castr up'"
ok "... and the daemon said it is back" grep -q 'answering again after' "$T/log1"

# ---- many readers during an outage: one probe at a time ----
touch "$W/down"
ok "503: a read is EIO after the deadline" expect_errno EIO cat "$mnt/d/f02"
nginx_log_reset
readers() {
	local i pids=() rc=0
	for i in $(seq -w 3 18); do
		python3 -c "$EXPECT_ERRNO_PY" EIO cat "$mnt/d/f$i" &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || rc=1; done
	return $rc
}
ok "16 readers of 16 files during the outage: each gets EIO" ms readers
took=$(cat "$T/ms")
n=$(chunk_gets)
ok "... soon: the next probe, not a deadline each (${took} ms, 16 python start-ups included)" test "$took" -le 8000
ok "... for at most 8 requests in all ($n), not 16 or more" test "$n" -ge 1 -a "$n" -le 8
rm -f "$W/down"
ok "the server answers again: all 16 read right at once" sh -c "for i in \$(seq -w 3 18); do cmp '$mnt/d/f'\$i '$src/d/f'\$i || exit 1; done"
mount_stop "unmount" "$mnt"

# ---- hard: blocks through the outage, ends on a signal ----
mount_start "mount -o hard" "$mnt" "$T/log2" -v --no-cache -o hard "$U/img.caidx"
ok "before the outage" cmp "$mnt/d/f00" "$src/d/f00"
nginx_stop
cat "$mnt/d/f19" >"$T/f19" 2>"$T/f19.err" &
cat_pid=$!
sleep 5 # past the soft deadline (3 s)
ok "hard: a read during the outage still waits after 5 s" kill -0 "$cat_pid"
ok "stats answer meanwhile: failing" grep -q failing <(stat_line)
nginx_start "$W" "$PORT"
_tap "server back on the same port" $?
rc=0
timeout 10 tail --pid="$cat_pid" -f /dev/null || rc=1
wait "$cat_pid" || rc=1
ok "hard: the read completes after the outage, with the right bytes" sh -c "[ $rc = 0 ] && cmp '$T/f19' '$src/d/f19'"

# an interrupt: a page fault of a MADV_RANDOM mapping is one synchronous
# FUSE read (no readahead), which the kernel interrupts (INTERRUPT) when
# the reader gets a signal
nginx_stop
python3 -c 'import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
m.madvise(mmap.MADV_RANDOM)
m[70000]' "$mnt/d/f08" 2>"$T/py.err" &
py_pid=$!
sleep 1.5
ok "hard: a page fault's read waits" kill -0 "$py_pid"
kill -TERM "$py_pid"
gone() { ! kill -0 "$py_pid" 2>/dev/null; }
ok "... killing the reader ends it" wait_until 5 "" gone
wait "$py_pid" 2>/dev/null
ok "... and the daemon says the read was interrupted" wait_until 5 "" grep -q 'read of .*: Interrupted system call' "$T/log2"
# the stop signal while a read waits
cat "$mnt/d/f13" >/dev/null 2>&1 &
cat_pid=$!
sleep 1
ok "hard: another read waits" kill -0 "$cat_pid"
mount_kill "SIGTERM stops the mount while a read waits" "$mnt" TERM
ok "... the daemon's own message" grep -q 'mount: SIGTERM: unmounting' "$T/log2"
ok "... and the reader is released" wait_until 5 "" sh -c "! kill -0 $cat_pid 2>/dev/null"
wait "$cat_pid" 2>/dev/null

mount_done_testing
