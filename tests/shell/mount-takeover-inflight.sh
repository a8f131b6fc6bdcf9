#!/bin/bash
# mount-takeover-inflight.sh - reads in flight when a mount is taken over
# (fs/keeper.h) end with the right bytes: the old server, told to stop,
# ends its waits for the store (ca_image_abort_waits), and a read that
# fails for that must not be answered (the error reached the reader as EIO,
# or, past the first page of a read, as a short read: seen under load in
# mount-restart.sh); it is left to the kernel's resend and the next server.
# On a slow store (100 KB/s a connection) every takeover finds reads
# waiting for chunks:
#  - blob and tree mounts: 4 reads of 512 KiB in flight, a takeover, each
#    read completes with the right bytes, and the old server's log shows
#    it stopped with reads in flight (not answered);
#  - the readers of keeper-load.py (4 threads, random ranges, pages
#    dropped first) over 6 takeovers by two copies of the binary: 0
#    failed reads, 0 wrong bytes (20 takeovers, and 20 more on the fast
#    store, with CAFS_TEST_FULL=1).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"
need python3 timeout
keeper_setup

src=$T/src
mkdir -p "$src/d" "$T/bref"
for i in 0 1 2 3; do "$GEN" 1M $((i + 60)) >"$src/d/f$i"; done
"$GEN" 6M 30 >"$T/bref/disk"
serve_images "$src" "$T/bref/disk" || exit 1
TAKEOVERS=6
[ -n "${CAFS_TEST_FULL:-}" ] && TAKEOVERS=20

# inflight DESC MNT LOG FILE...: the i-th 512 KiB block of MNT/FILE, i =
# STRIDE * n + 1 for the n-th FILE, read (and compared with REF/FILE) with
# a takeover while it is in flight
inflight() {
	local desc=$1 mnt=$2 log=$3 f i=0 pids=() rc
	shift 3
	for f in "$@"; do
		dd if="$mnt/$f" of="$T/out.$i" bs=512K skip=$((STRIDE * i + 1)) count=1 status=none &
		pids+=($!)
		i=$((i + 1))
	done
	sleep 0.5
	ok "$desc: the reads are in flight" kill -0 "${pids[@]}"
	ok "$desc: takeover" "$CAFS2" mount --takeover "$mnt"
	rc=0
	for ((i = 0; i < ${#pids[@]}; i++)); do
		wait "${pids[$i]}" || rc=1
	done
	ok "$desc: every read completes" test "$rc" = 0
	rc=0 i=0
	for f in "$@"; do
		cmp -s "$T/out.$i" <(dd if="$REF/$f" bs=512K skip=$((STRIDE * i + 1)) count=1 status=none) || rc=1
		i=$((i + 1))
	done
	ok "$desc: ... with the right bytes" test "$rc" = 0
	ok "$desc: the old server stopped with reads unanswered" grep -q 'stopping: .* not answered' "$log"
	ok "$desc: ... and said no read failed" sh -c "! grep -q 'read of .*: ' '$log'"
}

# ---- reads in flight at a takeover ----
m=$T/mb1
mount_start "blob mount on a slow store" "$m" "$T/log.b1" -v --no-cache --lru-size=1 --store="$U/slow" \
	"$U/disk.caibx" || exit 1
kp=$MOUNT_PID
REF=$T/bref STRIDE=3
inflight "blob" "$m" "$T/log.b1" disk disk disk disk
wait "$kp"
ok "... the first keeper exited 0" test $? = 0
ok "SIGTERM to the new keeper unmounts" stop_keeper "$m"

m=$T/mt1
mount_start "tree mount on a slow store" "$m" "$T/log.t1" -v --no-cache --lru-size=1 --store="$U/slow" \
	"$U/img.caidx" || exit 1
kp=$MOUNT_PID
REF=$src STRIDE=0
ls -R "$m" >/dev/null
inflight "tree" "$m" "$T/log.t1" d/f0 d/f1 d/f2 d/f3
wait "$kp"
ok "... the first keeper exited 0" test $? = 0
ok "SIGTERM to the new keeper unmounts" stop_keeper "$m"

# ---- readers across takeovers ----
# load DESC MNT REF STORE: keeper-load.py's readers over $TAKEOVERS takeovers
load() {
	local desc=$1 mnt=$2 out
	out=$($LOAD load "$mnt" "$3" takeover "$TAKEOVERS" "$CAFS2" "$CAFS" 2>&1)
	echo "# $desc: $out"
	ok "$desc: $TAKEOVERS events, 0 failed reads, 0 wrong bytes" \
		grep -q "failed=0 wrong=0 events=$TAKEOVERS " <<<"$out"
}
m=$T/mb2
mount_start "blob mount on a slow store, for the readers" "$m" "$T/log.b2" -v --no-cache --lru-size=1 \
	--store="$U/slow" "$U/disk.caibx" || exit 1
load "blob, slow store, takeovers" "$m" "$T/bref"
ok "SIGTERM to the last keeper unmounts" stop_keeper "$m"
if [ -n "${CAFS_TEST_FULL:-}" ]; then
	m=$T/mb3
	mount_start "blob mount, for the readers" "$m" "$T/log.b3" -v --no-cache --lru-size=1 "$U/disk.caibx" || exit 1
	load "blob, takeovers" "$m" "$T/bref"
	ok "SIGTERM to the last keeper unmounts" stop_keeper "$m"
else
	skip "blob, takeovers on the fast store" "CAFS_TEST_FULL=1"
fi

mount_done_testing
