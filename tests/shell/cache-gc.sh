#!/bin/bash
# cafs gc: removes exactly what casync gc removes.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
need casync

. "$top_srcdir/tests/lib-cache.sh" # rand
listing() { (cd "$1" && find . -mindepth 1 | sort); }

cd "$T"
rand a.bin 1200000 21
rand b.bin 1200000 22
head -c 600000 a.bin >c.bin && cat b.bin >>c.bin   # shares chunks with both
casync make --store=S a.caibx a.bin >/dev/null
casync make --store=S b.caibx b.bin >/dev/null
$CAFS make -q --store S c.caibx c.bin >/dev/null
# things casync gc leaves alone: a bare chunk, a temporary file
id=$(find S -name '*.cacnk' | head -n1 | xargs basename | sed 's/\.cacnk$//')
echo bare >S/${id:0:4}/0000000000000000000000000000000000000000000000000000000000000000
echo tmp >S/${id:0:4}/$id.0123456789abcdef.tmp

for keep in "a.caibx" "b.caibx c.caibx" "c.caibx"; do
	rm -rf S1 S2
	cp -a S S1
	cp -a S S2
	casync gc --store=S2 $keep
	ok "gc $keep: succeeds" $CAFS gc --store S1 $keep
	ok "gc $keep: same result as casync gc" test "$(listing S1)" = "$(listing S2)"
done
rm -rf S1 && cp -a S S1
ok "gc keeping every index" $CAFS gc --store S1 a.caibx b.caibx c.caibx
ok "... removes nothing" test "$(listing S1)" = "$(listing S)"

rm -rf S1 && cp -a S S1
n_before=$(find S1 -name '*.cacnk' | wc -l)
n_a=$(rm -rf S2 && cp -a S S2 && casync gc --store=S2 a.caibx && find S2 -name '*.cacnk' | wc -l)
ok "dry run lists what would go" bash -c "$CAFS gc --store S1 -n a.caibx >out && test \$(grep -c '^would remove [0-9a-f]\{4\}/[0-9a-f]\{64\}\.cacnk\$' out) = $((n_before - n_a))"
ok "dry run removes nothing" test "$(listing S1)" = "$(listing S)"

# default store: default.castr beside the first index
mkdir D && cp a.caibx D/ && cp -a S D/default.castr
ok "gc with the default store" bash -c "$CAFS gc D/a.caibx && test \$(find D/default.castr -name '*.cacnk' | wc -l) = $n_a"

fails "a missing index fails" $CAFS gc --store S1 a.caibx missing.caibx
ok "... with one line" bash -c "! $CAFS gc --store S1 a.caibx missing.caibx 2>err && test \$(wc -l <err) = 1"
ok "... removing nothing" test "$(listing S1)" = "$(listing S)"
head -c 100 a.bin >broken.caibx
fails "a broken index fails" $CAFS gc --store S1 broken.caibx
ok "... removing nothing" test "$(listing S1)" = "$(listing S)"
rc=0; $CAFS gc --store S1 2>/dev/null || rc=$?
ok "gc without an index is a usage error" test "$rc" = 2

done_testing
