#!/bin/bash
# cafs cache seed and cafs extract --seed/--cache: the chunks of v2 that
# local v1 data yields come from the seed, exactly those and no others.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-cache.sh"

cd "$T"
gen_tree v1 41 0.5
update_tree v1 v2 42
tar_image v1 v1.tar
tar_image v2 v2.tar
$CAFS make -q --store S1 v1.caibx v1.tar >/dev/null
$CAFS make -q --store S2 v2.caibx v2.tar >/dev/null
shared=$(comm -12 <(index_ids v1.caibx) <(index_ids v2.caibx))
n_shared=$(echo "$shared" | grep -c .)
n_v2=$(index_ids v2.caibx | wc -l)
ok "the update shares chunks ($n_shared of $n_v2)" test "$n_shared" -gt 0 -a "$n_shared" -lt "$n_v2"

ok "seed from the old image" $CAFS cache seed --cache C v2.caibx v1.tar
ok "... puts exactly the shared chunks into the cache" test "$(store_ids C)" = "$shared"
ok "... that verify" $CAFS cache verify --cache C
ok "a fill then fetches only the others" bash -c "$CAFS cache fill --cache C --store S2 v2.caibx >out && grep -q '^fetched $((n_v2 - n_shared)) chunks.*, $n_shared already cached, 0 failed' out"
ok "... and extract from the cache is v2" bash -c "$CAFS extract --store C v2.caibx out && cmp out v2.tar"
ok "seeding again adds nothing" bash -c "$CAFS cache seed --cache C v2.caibx v1.tar | grep -q '^seeded 0 chunks'"

# a block device holding the old image (a loop device over it)
if [ "$(id -u)" = 0 ] && command -v losetup >/dev/null && loop=$(losetup -f --show -r v1.tar 2>/dev/null); then
	at_cleanup "losetup -d $loop"
	ok "seed from a block device ($loop)" $CAFS cache seed -q --cache CL v2.caibx "$loop"
	ok "... gives the shared chunks" test "$(store_ids CL)" = "$shared"
	losetup -d "$loop"
fi

# an index seed with the same chunking: chunks copied from its store
mkdir I && cp v1.caibx I/ && cp -a S1 I/default.castr
ok "seed from an index and its store" $CAFS cache seed -q --cache C2 v2.caibx I/v1.caibx
ok "... gives the shared chunks" test "$(store_ids C2)" = "$shared"
ok "--seed-store names the seed's store" $CAFS cache seed -q --cache C3 --seed-store S1 v2.caibx v1.caibx
ok "... same chunks" test "$(store_ids C3)" = "$shared"
# with other chunk sizes the seed's stream is read back and re-chunked
$CAFS make -q --chunk-size 8K:32K:128K --store S1b v1b.caibx v1.tar >/dev/null
ok "seed from an index with other chunk sizes" $CAFS cache seed -q --cache C4 --seed-store S1b v2.caibx v1b.caibx
ok "... re-chunked: same chunks" test "$(store_ids C4)" = "$shared"
# a corrupt chunk in a seed store is skipped, never stored
id=$(echo "$shared" | head -n1)
cp -a S1 S1bad && chmod u+w S1bad/${id:0:4}/$id.cacnk && printf 'XXXX' | dd of=S1bad/${id:0:4}/$id.cacnk bs=1 seek=30 conv=notrunc 2>/dev/null
ok "a corrupt chunk in a seed store is skipped" $CAFS cache seed -q --cache C5 --seed-store S1bad v2.caibx v1.caibx
ok "... not stored" test "$(store_ids C5)" = "$(echo "$shared" | grep -v "$id")"
ok "... the cache verifies" $CAFS cache verify -q --cache C5
# several seeds: a file that has nothing, then the real one
rand junk.bin 300000 5
ok "several seeds" $CAFS cache seed -q --cache C6 v2.caibx junk.bin v1.tar
ok "... same chunks" test "$(store_ids C6)" = "$shared"
ok "a missing seed fails" bash -c "! $CAFS cache seed --cache C7 v2.caibx nope.bin 2>err && grep -q 'nope.bin' err"
rc=0; $CAFS cache seed --cache C7 v2.caibx 2>/dev/null || rc=$?
ok "seed without a seed is a usage error" test "$rc" = 2

# trees: a .caidx seeded from the old directory (encoded with the index's
# feature flags) or from the old .catar
$CAFS make -q --store T1 v1.caidx v1 >/dev/null
$CAFS make -q --store T2 v2.caidx v2 >/dev/null
$CAFS make -q v1.catar v1 >/dev/null
shared_t=$(comm -12 <(index_ids v1.caidx) <(index_ids v2.caidx))
ok "the tree update shares chunks" test -n "$shared_t"
ok "seed a .caidx from the old directory" $CAFS cache seed -q --cache CD v2.caidx v1
ok "... gives exactly the shared chunks" test "$(store_ids CD)" = "$shared_t"
ok "seed a .caidx from the old .catar" $CAFS cache seed -q --cache CA v2.caidx v1.catar
ok "... same chunks" test "$(store_ids CA)" = "$shared_t"
ok "... the tree extracts from cache + fill" bash -c "$CAFS cache fill -q --cache CD --store T2 v2.caidx && $CAFS extract --store CD v2.caidx v2x && diff -r v2 v2x"
fails "a directory cannot seed a blob index" $CAFS cache seed -q --cache CE v2.caibx v1

# sha256 and other chunk sizes in the target: the seed follows the target's header
$CAFS make -q --digest sha256 --chunk-size 16K --store S2s v2s.caibx v2.tar >/dev/null
$CAFS make -q --digest sha256 --chunk-size 16K --store S1s v1s.caibx v1.tar >/dev/null
shared_s=$(comm -12 <(index_ids v1s.caibx) <(index_ids v2s.caibx))
ok "seed for a sha256 index with 16K chunks" $CAFS cache seed -q --cache C8 v2s.caibx v1.tar
ok "... follows the target's digest and chunk sizes" test "$(store_ids C8)" = "$shared_s"
ok "... (and that is a different set)" test "$shared_s" != "$shared"

# extract --seed: works from a store that lacks every shared chunk
cp -a S2 S2only
for id in $shared; do rm -f S2only/${id:0:4}/$id.cacnk; done
fails "without the seed the reduced store is not enough" $CAFS extract --store S2only v2.caibx x.out
mkdir tmp
ok "extract --seed takes the rest from the old image" env TMPDIR="$T/tmp" $CAFS extract --seed v1.tar --store S2only v2.caibx x.out
ok "... correctly" cmp x.out v2.tar
ok "... and leaves no temporary store behind" test -z "$(ls tmp)"
ok "extract --seed --cache" $CAFS extract --seed v1.tar --cache C9 --store S2only v2.caibx y.out
ok "... correctly" cmp y.out v2.tar
ok "... keeps every chunk in the cache" test "$(store_ids C9)" = "$(index_ids v2.caibx)"
ok "extract --cache alone then works offline" bash -c "$CAFS extract --cache C9 --store S.none v2.caibx z.out && cmp z.out v2.tar"
ok "extract --cache" $CAFS extract --cache C10 --store S2 v2.caibx w.out
ok "... fills the cache on the way" test "$(store_ids C10)" = "$(index_ids v2.caibx)"
# archive extract: --seed DIR and --cache, from a store that lacks the shared tree chunks
cp -a T2 T2only
for id in $shared_t; do rm -f T2only/${id:0:4}/$id.cacnk; done
fails "without the seed the reduced tree store is not enough" $CAFS extract --store T2only v2.caidx t0
ok "tree extract --seed DIR takes the rest from the old tree" env TMPDIR="$T/tmp" $CAFS extract --seed v1 --store T2only v2.caidx t1
ok "... correctly" diff -r v2 t1
ok "... and leaves no temporary store behind" test -z "$(ls tmp)"
ok "tree extract --seed .catar --cache" bash -c "$CAFS extract --seed v1.catar --cache CT --store T2only v2.caidx t2 && diff -r v2 t2"
ok "... keeps every chunk in the cache" test "$(store_ids CT)" = "$(index_ids v2.caidx)"
$CAFS make -q v2.catar v2 >/dev/null
# a .catar has no chunks: its seed directories serve --hardlink/--reflink
# (as casync's); --cache has nothing to keep and is refused
ok "--seed with a .catar input is taken (for --hardlink), as casync" bash -c "$CAFS extract --seed v1 --hardlink=yes v2.catar t3 && diff -r v2 t3"
rc=0; $CAFS extract --cache CT v2.catar t4 2>err || rc=$?
ok "--cache with a .catar input is refused, one line" bash -c "test $rc = 1 && test \$(wc -l <err) = 1 && grep -q '^cafs: .*--cache needs an index' err"

rc=0; $CAFS digest --seed v1.tar v2.caibx >/dev/null 2>&1 || rc=$?
ok "--seed is refused by other commands" test "$rc" = 2

done_testing
