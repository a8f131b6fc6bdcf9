#!/bin/bash
# delta-pack-hostile.sh - delta packs a hostile writer made, or a FIFO
# planted under a pack's name (tests/delta-hostile.py): a FIFO beside the
# index does not hang the extract; a pack of 200000 ranges to merge is
# dealt with at once, not in a pass per merge; a pack whose entries'
# bytes overlap is refused as a corrupt table. Each falls back to the
# chunk store with one warning; an honest pack still serves.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
need timeout
[ -x /usr/bin/python3 ] || skip_all "no /usr/bin/python3"
cd "$T"

"$GEN" 300K 71 >v1.bin
{ head -c 100000 v1.bin; "$GEN" 20K 72; tail -c +100001 v1.bin; } >v2.bin
$CAFS make -q --store st v1.caibx v1.bin >/dev/null
$CAFS make -q --store new v2.caibx v2.bin >/dev/null
ok "delta make" $CAFS delta make -q --from-store st --store new v1.caibx v2.caibx v2.pack
ok "an honest pack serves: extract --seed --delta, no new chunk from the store" bash -c \
	"$CAFS extract --seed v1.bin --delta v2.pack --store st v2.caibx out1 2>err1 && cmp out1 v2.bin && ! grep -q warning err1"

V1SUM=$(sha256sum v1.caibx | cut -c1-64)
mkfifo "v2.caibx.cadelta-$V1SUM"
out=$(timeout 10 $CAFS extract --seed v1.caibx --store new v2.caibx out2 2>&1)
rc=$?
ok "a FIFO under the pack's name beside the index: no hang (exit $rc)" test "$rc" = 0
ok "... the right data" cmp out2 v2.bin
ok "... one warning" bash -c 'test "$(printf "%s\n" "$1" | grep -c warning)" = 1 && grep -q "not a regular file" <<<"$1"' _ "$out"
rm "v2.caibx.cadelta-$V1SUM"

/usr/bin/python3 "$top_srcdir/tests/delta-hostile.py" spread 200000 spread.caibx spread.pack
start=$(date +%s)
out=$(timeout 30 $CAFS extract --delta spread.pack --store st spread.caibx out3 2>&1)
rc=$?
took=$(($(date +%s) - start))
ok "a pack of 200000 ranges to merge: done with (exit $rc, not the timeout's)" test "$rc" -ne 124
ok "... in ${took} s (< 10)" test "$took" -lt 10
ok "... falls back to the store" grep -q "fetching from the chunk store instead" <<<"$out"

/usr/bin/python3 "$top_srcdir/tests/delta-hostile.py" overlapping 4 over.caibx over.pack
out=$($CAFS extract --delta over.pack --store st over.caibx out4 2>&1)
ok "a pack whose entries' bytes overlap: refused as a corrupt table" grep -q "over.pack: corrupt table" <<<"$out"
done_testing
