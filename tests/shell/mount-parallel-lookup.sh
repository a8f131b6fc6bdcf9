#!/bin/bash
# mount-parallel-lookup.sh - lookups in one directory run in parallel
# (issue 21.9). libfuse 3.14 computes FUSE_CAP_PARALLEL_DIROPS but leaves
# FUSE_PARALLEL_DIROPS out of its INIT reply, so the kernel held the
# directory's lock for each lookup: 64 stats of distinct names in one
# directory behind a slow server took 64 round trips. cafs now amends the
# reply (fs/init.c). Behind a proxy that adds 200 ms a round trip, with
# every child's ENTRY in a chunk of its own and no sidecar, 64 parallel
# stats take well under half the time of 64 one after another (about one
# round trip per HTTP connection's share: 64 / 8 here).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"
cd "$T"

mkdir -p src/dir www
for i in $(seq -w 1 72); do head -c 262144 /dev/urandom >src/dir/f$i; done
"$CAFS" make --meta=no --store www/s.castr www/img.caidx src >/dev/null || exit 1
nginx_start www
lagproxy_start 100
U=$LAG_URL
if mount_start "mount through a 200 ms round trip proxy" mnt mount.log -vv --no-cache --store "$U/s.castr" "$U/img.caidx"; then
	flags=$(sed -n 's/.*INIT answered, flags //p' mount.log)
	ok "INIT: the reply carries FUSE_PARALLEL_DIROPS (flags ${flags:-none})" test $((${flags:-0} & 0x40000)) -ne 0
	stat mnt/dir >/dev/null
	now() { date +%s%N; }
	# 8 lookups one after another: the time of one
	t0=$(now)
	for i in 65 66 67 68 69 70 71 72; do stat mnt/dir/f$i >/dev/null; done
	one=$((($(now) - t0) / 8))
	t0=$(now)
	pids=()
	for i in $(seq -w 1 64); do
		stat mnt/dir/f$i >/dev/null &
		pids+=($!)
	done
	rc=0
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	par=$(($(now) - t0))
	ok "64 parallel stats all succeed" test "$rc" = 0
	ok "64 parallel stats: $((par / 1000000)) ms, one alone $((one / 1000000)) ms (64 in a row: $((64 * one / 1000000)) ms)" \
		test "$par" -lt $((32 * one))
	mount_stop "unmount" mnt
fi
mount_done_testing
