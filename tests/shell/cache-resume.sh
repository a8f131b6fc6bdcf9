#!/bin/bash
# An interrupted cache fill (SIGKILL mid-way) loses at most the chunks in
# flight; the next run skips what is there and completes.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

. "$top_srcdir/tests/lib-cache.sh" # rand
n_chunks() { find "$1" -name '*.cacnk' 2>/dev/null | wc -l; }

cd "$T"
rand a.bin 6000000 31
$CAFS make -q --store S a.caibx a.bin >/dev/null
total=$(n_chunks S)

# 6 MB at 1.5 MB/s: about 4 s, killed after a second or so
$CAFS cache fill -q --cache C --store S --rate-limit-bps 1.5M -j 4 a.caibx &
pid=$!
at_cleanup "kill -9 $pid"
for ((i = 0; i < 200; i++)); do
	[ "$(n_chunks C)" -ge 12 ] && break
	sleep 0.02
done
exec 3>&2 2>/dev/null # no "Killed" notice from bash
kill -9 $pid
wait $pid
exec 2>&3 3>&-
have=$(n_chunks C)
ok "the fill was killed part-way ($have of $total chunks)" test "$have" -ge 12 -a "$have" -lt "$total"
ok "what it stored verifies" $CAFS cache verify --cache C
ok "stat counts no temporary file as a chunk" bash -c "$CAFS cache stat --cache C | grep -qx 'Chunks: $have'"
ok "the next fill fetches only the rest" bash -c "$CAFS cache fill --cache C --store S a.caibx >out && grep -q '^fetched $((total - have)) chunks.*, $have already cached, 0 failed' out"
ok "the cache is complete" test "$(n_chunks C)" = "$total"
ok "extract from the cache alone" bash -c "$CAFS extract --store C a.caibx out.bin && cmp a.bin out.bin"

# the rate limit holds: 6 MB at 3 MB/s takes at least ~2 s
rm -rf C2
start=$(date +%s%N)
$CAFS cache fill -q --cache C2 --store S --rate-limit-bps 3M a.caibx
ms=$((($(date +%s%N) - start) / 1000000))
ok "--rate-limit-bps slows the fill down (${ms} ms)" test "$ms" -ge 1500

done_testing
