#!/bin/bash
# cafs cache stat / fill from local stores: what is fetched, offline
# extraction from the cache, a corrupt and a missing chunk at the source.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

. "$top_srcdir/tests/lib-cache.sh" # rand, index_ids, store_ids
count() { "$@" | wc -l; }

cd "$T"
rand a.bin 3000000 1
rand b.bin 2000000 2
cat a.bin b.bin >ab.bin
$CAFS make -q --store S a.caibx a.bin >/dev/null
$CAFS make -q --store S b.caibx b.bin >/dev/null
$CAFS make -q --store S ab.caibx ab.bin >/dev/null
n_a=$(count index_ids a.caibx)

ok "stat of a missing cache" bash -c "$CAFS cache stat --cache C a.caibx >out && grep -qx 'Chunks: 0' out && grep -q '^a.caibx: 0 of [0-9]* chunks, 0 of 3000000 bytes, 0.0%' out"
ok "fill from a store" $CAFS cache fill --cache C --store S a.caibx
ok "the cache holds exactly the index's chunks" test "$(store_ids C)" = "$(index_ids a.caibx)"
ok "stat counts them" bash -c "$CAFS cache stat --cache C a.caibx b.caibx >out && grep -qx 'Chunks: $n_a' out && grep -q '^a.caibx: [0-9]* of [0-9]* chunks, 3000000 of 3000000 bytes, 100.0%' out && grep -q '^b.caibx: 0 of' out"
ok "a second fill fetches nothing" bash -c "$CAFS cache fill --cache C --store S a.caibx >out && grep -q '^fetched 0 chunks.*, $n_a already cached, 0 failed' out"
mv S S.away
ok "extract --store CACHE works without the source" $CAFS extract --store C a.caibx a.out
ok "... and is identical" cmp a.bin a.out
fails "b is not in the cache" $CAFS extract --store C b.caibx b.out
mv S.away S

# several sources at once, the default store beside each index, overlap counted once
mkdir D && cp a.caibx b.caibx ab.caibx D/ && cp -a S D/default.castr
ok "fill several sources from their default stores" bash -c "$CAFS cache fill --cache C2 D/a.caibx D/b.caibx D/ab.caibx >out && grep -q '^fetched [0-9]* chunks' out"
ok "... every chunk of all of them" test "$(store_ids C2)" = "$(cat <(index_ids a.caibx) <(index_ids b.caibx) <(index_ids ab.caibx) | sort -u)"
ok "no temporary files left" test -z "$(find C2 -name '*.tmp')"

# a corrupt chunk at the source: a valid zstd frame holding other data,
# and a chunk that is garbage; plus one missing
cp -a S Sbad
mapfile -t ids < <(index_ids a.caibx)
bad1=${ids[3]} bad2=${ids[7]} gone=${ids[11]}
f() { echo "Sbad/${1:0:4}/$1.cacnk"; }
chmod u+w "$(f $bad1)" "$(f $bad2)"
cp "$(f ${ids[5]})" "$(f $bad1)"
gen_data "$(f $bad2)" 1000 3
rm "$(f $gone)"
rc=0
$CAFS cache fill --cache C3 --store Sbad a.caibx >out 2>err || rc=$?
ok "fill with bad chunks exits 1" test "$rc" = 1
ok "the corrupt chunk is named in one line" test "$(grep -c "chunk $bad1: " err)" = 1
ok "the garbage chunk is named in one line" test "$(grep -c "chunk $bad2: " err)" = 1
ok "the missing chunk is named" grep -q "chunk $gone: not found" err
ok "errors are one line each, nothing else" test "$(wc -l <err)" = 3
ok "nothing corrupt was stored" bash -c "! test -e C3/${bad1:0:4}/$bad1.cacnk && ! test -e C3/${bad2:0:4}/$bad2.cacnk"
ok "everything else was" test "$(store_ids C3 | wc -l)" = "$((n_a - 3))"
ok "the cache verifies" $CAFS cache verify --cache C3
ok "a fill from the good store completes it" bash -c "$CAFS cache fill --cache C3 --store S a.caibx >out && grep -q '^fetched 3 chunks' out"
ok "... and extract from it is identical" bash -c "$CAFS extract --store C3 a.caibx a3.out && cmp a.bin a3.out"

# a store that is not there: a bounded number of lines, then a count
rc=0
$CAFS cache fill -q --cache C4 --store Snone a.caibx 2>err || rc=$?
ok "fill from a missing store exits 1" test "$rc" = 1
ok "... with 20 chunk lines and a count ($n_a chunks)" bash -c "test \$(grep -c ': not found in any store' err) = 20 && grep -qx 'cafs: $((n_a - 20)) more chunks failed' err && test \$(wc -l <err) = 21"

# the default cache directory
ok "default cache: XDG_CACHE_HOME" bash -c "XDG_CACHE_HOME=$T/xdg $CAFS cache fill --store S b.caibx >/dev/null && test -d $T/xdg/cafs && XDG_CACHE_HOME=$T/xdg $CAFS cache stat | grep -qx 'Cache: $T/xdg/cafs'"
if [ "$(id -u)" = 0 ]; then
	ok "default cache for root is /var/cache/cafs" bash -c "env -u XDG_CACHE_HOME $CAFS cache stat | grep -qx 'Cache: /var/cache/cafs'"
fi
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	ok "default cache for a user is ~/.cache/cafs" bash -c "env -u XDG_CACHE_HOME HOME=/nonexistent/cafs-home setpriv --reuid=65534 --regid=65534 --clear-groups $CAFS cache stat | grep -qx 'Cache: /nonexistent/cafs-home/.cache/cafs'"
fi

# usage errors
rc=0; $CAFS cache fill --cache C 2>/dev/null || rc=$?
ok "fill without a source is a usage error" test "$rc" = 2
rc=0; $CAFS cache frobnicate 2>/dev/null || rc=$?
ok "an unknown verb is a usage error" test "$rc" = 2
rc=0; $CAFS cache fill --cache C --store S nonexistent.caibx 2>err || rc=$?
ok "a missing index fails with one line" bash -c "test $rc = 1 && test \$(wc -l <err) = 1 && grep -q '^cafs: .*nonexistent.caibx' err"
# one option table for all verbs: each verb's parser takes only the
# options its table entries name it for (-s is fill's, --keep prune's)
rc=0; $CAFS cache stat --cache C -s S 2>err || rc=$?
ok "stat refuses fill's -s (getopt names it, usage error)" bash -c "test $rc = 2 && grep -qx \"cafs: cache stat: invalid option -- 's'\" err"
rc=0; $CAFS cache fill --cache C --keep a.caibx a.caibx 2>err || rc=$?
ok "fill refuses prune's --keep" bash -c "test $rc = 2 && grep -q \"^cafs: cache fill: unrecognized option '--keep\" err"
ok "... the verbs they are for take them" bash -c "$CAFS cache fill -q --cache C7 -s S a.caibx && $CAFS cache prune --cache C7 --max-size=0 --keep a.caibx | grep -q '^removed 0 chunks'"
rc=0; $CAFS cache 2>err || rc=$?
ok "no verb: a usage error naming the verbs" bash -c "test $rc = 2 && grep -qx 'cafs: cache: expected a verb: stat, fill, prune, verify or seed' err"

done_testing
