#!/bin/bash
# cafs cache over a real nginx on 127.0.0.1: fill, an OS-style update
# (seed with v1, fill v2 downloads exactly what v1 lacks, checked in the
# access log), a corrupt chunk on the server, a killed fill that resumes.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-cache.sh"
. "$top_srcdir/tests/lib-http.sh"

# GETs of chunks in the access log: "id bytes" per line, sorted
chunk_gets() { nginx_log | awk '$1 == "GET" && $2 ~ /\.cacnk$/ && $3 == 200 { n = split($2, p, "/"); sub(/\.cacnk$/, "", p[n]); print p[n], $4 }' | sort; }

cd "$T"
gen_tree v1 51 0.6
update_tree v1 v2 52
tar_image v1 v1.tar
tar_image v2 v2.tar
mkdir www
$CAFS make -q --store www/store www/v2.caibx v2.tar >/dev/null
$CAFS make -q --store www/store www/v2.caidx v2 >/dev/null
$CAFS make -q --store S1 v1.caibx v1.tar >/dev/null
$CAFS make -q --store S1 v1.caidx v1 >/dev/null
nginx_start www
U=$NGINX_URL

# ---- a plain fill ----
ok "fill over HTTP" $CAFS cache fill --cache C0 --store "$U/store" "$U/v2.caibx"
ok "... one GET per chunk, each once" test "$(chunk_gets | awk '{print $1}')" = "$(index_ids www/v2.caibx)"
ok "... the cache extracts v2 with the server gone" bash -c "$CAFS extract --store C0 www/v2.caibx out0 && cmp out0 v2.tar"

# ---- the update: image ----
expect=$(comm -13 <(index_ids v1.caibx) <(index_ids www/v2.caibx))
n_expect=$(echo "$expect" | grep -c .)
bytes_expect=$(store_bytes www/store $expect)
ok "seed the cache with the old image" $CAFS cache seed -q --cache C "$U/v2.caibx" v1.tar
nginx_log_reset
ok "fill v2" $CAFS cache fill -q --cache C --store "$U/store" "$U/v2.caibx"
ok "image update: only the $n_expect chunks v1 lacks were downloaded" test "$(chunk_gets | awk '{print $1}')" = "$expect"
ok "image update: $bytes_expect bytes of chunks" test "$(chunk_gets | awk '{s += $2} END {print s + 0}')" = "$bytes_expect"
ok "image update: two more requests, the index and its prefetch profile (none)" test "$(nginx_log | wc -l)" = "$((n_expect + 2))"
ok "image update: the result is v2" bash -c "$CAFS extract --store C www/v2.caibx out1 && cmp out1 v2.tar"

# ---- the update: tree (.caidx), seeded from the old directory itself ----
expect=$(comm -13 <(index_ids v1.caidx) <(index_ids www/v2.caidx))
n_expect=$(echo "$expect" | grep -c .)
ok "seed the cache with the old tree" $CAFS cache seed -q --cache CT "$U/v2.caidx" v1
nginx_log_reset
ok "fill the new tree" $CAFS cache fill -q --cache CT --store "$U/store" "$U/v2.caidx"
ok "tree update: only the $n_expect chunks v1 lacks were downloaded" test "$(chunk_gets | awk '{print $1}')" = "$expect"
ok "tree update: $(store_bytes www/store $expect) bytes of chunks" test "$(chunk_gets | awk '{s += $2} END {print s + 0}')" = "$(store_bytes www/store $expect)"
ok "tree update: the cache holds the whole new archive" test "$(store_ids CT)" = "$(index_ids www/v2.caidx)"

# ---- extract --seed over HTTP: the same saving ----
nginx_log_reset
ok "extract --seed over HTTP" $CAFS extract --seed v1.tar --store "$U/store" "$U/v2.caibx" out2
ok "... is v2" cmp out2 v2.tar
ok "... and downloaded only what v1 lacks" test "$(chunk_gets | awk '{print $1}')" = "$(comm -13 <(index_ids v1.caibx) <(index_ids www/v2.caibx))"

# ---- a corrupt chunk on the server ----
cp -a www/store www/bad
mapfile -t ids < <(index_ids www/v2.caibx)
bad=${ids[4]}
chmod u+w www/bad/${bad:0:4}/$bad.cacnk
cp www/bad/${ids[9]:0:4}/${ids[9]}.cacnk www/bad/${bad:0:4}/$bad.cacnk
rc=0
$CAFS cache fill -q --cache CB --store "$U/bad" "$U/v2.caibx" 2>err || rc=$?
ok "a corrupt chunk on the server: exit 1" test "$rc" = 1
ok "... named in the one error line" bash -c "test \$(wc -l <err) = 1 && grep -q 'chunk $bad: corrupt' err"
ok "... not stored, everything else is" test "$(store_ids CB)" = "$(index_ids www/v2.caibx | grep -v "$bad")"
ok "... the cache verifies" $CAFS cache verify -q --cache CB

# ---- a killed fill over a slow server resumes ----
nginx_stop
NGINX_EXTRA='limit_rate 64k;'
nginx_start www
U=$NGINX_URL
total=$(index_ids www/v2.caibx | wc -l)
$CAFS cache fill -q -j 8 --cache CK --store "$U/store" "$U/v2.caibx" &
pid=$!
at_cleanup "kill -9 $pid"
for ((i = 0; i < 300; i++)); do
	[ "$(store_ids CK | wc -l)" -ge 10 ] && break
	sleep 0.05
done
exec 3>&2 2>/dev/null # no "Killed" notice from bash
kill -9 $pid
wait $pid
exec 2>&3 3>&-
have=$(store_ids CK | wc -l)
ok "killed part-way ($have of $total chunks)" test "$have" -ge 10 -a "$have" -lt "$total"
ok "what it stored verifies" $CAFS cache verify -q --cache CK
nginx_stop
NGINX_EXTRA=
nginx_start www
U=$NGINX_URL
nginx_log_reset
ok "the next fill completes" $CAFS cache fill -q --cache CK --store "$U/store" "$U/v2.caibx"
ok "... fetching only the rest" test "$(chunk_gets | wc -l)" = "$((total - have))"
ok "... and the cache extracts v2" bash -c "$CAFS extract --store CK www/v2.caibx out3 && cmp out3 v2.tar"

done_testing
