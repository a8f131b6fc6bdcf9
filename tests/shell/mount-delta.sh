#!/bin/bash
# mount-delta.sh - `cafs mount` of a new release (TO) whose cache holds
# the last one (FROM), over a real nginx and a real FUSE mount: the delta
# pack named for the index the cache kept (or given by --delta) builds the
# chunks the mount must fetch from the cached ones, so reading all of TO
# downloads fewer bytes (the access log) and gives the same data (cmp);
# no pack: as before (one silent 404); references the cache lacks: from
# the store, quietly; a corrupt pack: exactly one warning, the right
# data; --fill reads the pack's entries in a few merged ranges; the
# stats and metrics count what the pack built (not as fetched) and say
# its state; an unmount during a slow pack fill is prompt.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-cache.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"

log_bytes() { nginx_log | awk '$1 == "GET" { s += $4 } END { print s + 0 }'; }
chunk_gets() { nginx_log | awk '$1 == "GET" && $2 ~ /\.cacnk$/' | wc -l; }
pack_gets() { nginx_log | awk '$1 == "GET" && $2 ~ /cadelta|\.pack$/ && $3 ~ /^2/' | wc -l; }
warnings() { grep -c 'warning' "$1"; }
stat_of() { "$CAFS" stats "$1" | awk -v k="$2:" '$1 == k { print $2 }'; }
fill_is() { [ "$(stat_of "$1" fill)" = "$2" ]; }
delta_is() { [ "$(stat_of "$1" delta_pack)" = "$2" ]; }

cd "$T"
gen_tree v1 71 0.4
update_tree v1 v2 72
"$GEN" 600K 73 >v2/new.bin # new, incompressible: the pack's data is over a 256 KiB window
tar_image v1 v1.tar
tar_image v2 v2.tar
mkdir www
$CAFS make -q --store www/store www/v1.caibx v1.tar >/dev/null
$CAFS make -q --store www/store www/v2.caibx v2.tar >/dev/null
$CAFS delta make -q --store www/store www/v1.caibx www/v2.caibx www/v2.pack >/dev/null || exit 1
V1SUM=$(sha256sum www/v1.caibx | cut -c1-64)
# the pack's data at 4 KiB/s past its first 300 KiB (its table is in those)
NGINX_EXTRA="location /slow/ { alias $T/www/; limit_rate_after 300k; limit_rate 4k; }"
nginx_start www || exit 1
U=$NGINX_URL
mnt=$T/mnt

# the release at one URL, v1 first: the cache reads it all (and keeps its index)
cp www/v1.caibx www/cur.caibx
mount_start "mount release v1 (cold cache)" "$mnt" log.v1 --cache=C --profile=none --store "$U/store" "$U/cur.caibx"
ok "... reads v1" cmp "$mnt/cur" v1.tar
mount_stop "... unmounts" "$mnt"
for c in C.none C.bad C.fill C.part C.slow; do cp -a C $c; done
# a cache holding only part of FROM: every other chunk file gone
find C.part -name '*.cacnk' | sort | awk 'NR % 2' | xargs rm -f
cp www/v2.caibx www/cur.caibx

# no pack: as before
nginx_log_reset
mount_start "mount release v2, no pack" "$mnt" log.none --cache=C.none --profile=none --store "$U/store" "$U/cur.caibx"
ok "... reads v2" cmp "$mnt/cur" v2.tar
plain=$(log_bytes)
plain_gets=$(chunk_gets)
ok "... the pack's name asked once (404), no warning" test "$(nginx_log | grep -c 'cadelta-.* 404')" = 1 -a "$(warnings log.none)" = 0
ok "... stats: delta_pack none, nothing built" test "$(stat_of "$mnt" delta_pack)" = none -a "$(stat_of "$mnt" delta_chunks)" = 0
mount_stop "... unmounts" "$mnt"

# the pack named for the kept index
cp www/v2.pack "www/cur.caibx.cadelta-$V1SUM"
nginx_log_reset
mount_start "mount release v2, a pack beside it" "$mnt" log.pack --cache=C --profile=none --store "$U/store" "$U/cur.caibx"
ok "... reads v2" cmp "$mnt/cur" v2.tar
ok "... fewer bytes ($(log_bytes) < $plain), fewer chunks ($(chunk_gets) < $plain_gets)" test "$(log_bytes)" -lt "$plain" -a "$(chunk_gets)" -lt "$plain_gets"
ok "... no warning" test "$(warnings log.pack)" = 0
# what the pack built counts as built, not fetched: the chunks TO needs
# are the cache's, the store's and the pack's, once each
"$CAFS" stats "$mnt" >st.pack
"$CAFS" stats --format=openmetrics "$mnt" >om.pack
"$CAFS" stats --json "$mnt" >js.pack
built=$(awk '$1 == "delta_chunks:" { print $2 }' st.pack)
fetched=$(awk '$1 == "chunks_fetched:" { print $2 }' st.pack)
ok "... stats: delta_pack ready, $built chunks built, $fetched fetched (= $(chunk_gets) chunk GETs)" \
	test "$(awk '$1 == "delta_pack:" { print $2 }' st.pack)" = ready -a "$built" -gt 0 -a "$fetched" = "$(chunk_gets)"
ok "... stats: the pack's requests ($(pack_gets) + the table's) and bytes" \
	test "$(awk '$1 == "delta_requests:" { print $2 }' st.pack)" -ge "$(pack_gets)" -a "$(awk '$1 == "delta_pack_bytes:" { print $2 }' st.pack)" -gt 0
ok "... openmetrics: cafs_delta_chunks_total $built, state ready" bash -c "grep -q '^cafs_delta_chunks_total{mountpoint=\"[^\"]*\"} $built\$' om.pack && grep -q '^cafs_delta_pack_state{.*state=\"ready\"} 1\$' om.pack && grep -q '^cafs_delta_pack_bytes_total{' om.pack && grep -q '^cafs_delta_pack_requests_total{' om.pack"
ok "... json: cafs_delta_chunks $built" /usr/bin/python3 -c "
import json, sys
m = {f['name']: f for f in json.load(open('js.pack'))['metrics']}
assert m['cafs_delta_chunks']['samples'][0]['value'] == $built, m['cafs_delta_chunks']
st = {s['labels']['state']: s['value'] for s in m['cafs_delta_pack_state']['samples']}
assert st == {'none': 0, 'loading': 0, 'filling': 0, 'ready': 1, 'unusable': 0}, st
"
# the data in 256 KiB windows: a request per window, not per chunk
windows=$(( ($(stat -c %s www/v2.pack) + 262143) / 262144 ))
ok "... the pack in at most $windows + 1 requests ($(pack_gets))" test "$(pack_gets)" -le $((windows + 1))
mount_stop "... unmounts" "$mnt"
ok "... the cache extracts v2 offline" bash -c "$CAFS extract --offline --cache C $U/cur.caibx out1 && cmp out1 v2.tar"

# the release the cache kept: nothing to update, no pack asked for
# (told by the loader's thread, off the mount's start)
nginx_log_reset
mount_start "mount release v2 again (the cache kept it)" "$mnt" log.same --cache=C --profile=none --store "$U/store" "$U/cur.caibx"
ok "... delta_pack none" wait_until 5 "$MOUNT_PID" delta_is "$mnt" none
ok "... reads v2" cmp "$mnt/cur" v2.tar
ok "... no pack asked for, no warning" test "$(nginx_log | grep -c cadelta)" = 0 -a "$(warnings log.same)" = 0
mount_stop "... unmounts" "$mnt"

# references the cache lacks: those chunks from the store, quietly
nginx_log_reset
mount_start "mount release v2, a pack, a cache with half of v1" "$mnt" log.part --cache=C.part --profile=none --store "$U/store" "$U/cur.caibx"
ok "... reads v2" cmp "$mnt/cur" v2.tar
ok "... the pack used ($(pack_gets) requests), the rest from the store ($(chunk_gets) chunks), no warning" test "$(pack_gets)" -ge 1 -a "$(chunk_gets)" -gt "$plain_gets" -a "$(warnings log.part)" = 0
mount_stop "... unmounts" "$mnt"

# a corrupt pack: one warning for the mount's life, the right data
size=$(stat -c %s www/v2.pack)
cp www/v2.pack "www/cur.caibx.cadelta-$V1SUM"
printf 'XXXXXXXXXXXXXXXX' | dd of="www/cur.caibx.cadelta-$V1SUM" bs=1 seek=$((size - 5000)) conv=notrunc status=none
printf 'XXXXXXXXXXXXXXXX' | dd of="www/cur.caibx.cadelta-$V1SUM" bs=1 seek=$((size - 9000)) conv=notrunc status=none
mount_start "mount release v2, a corrupt pack" "$mnt" log.bad --cache=C.bad --profile=none --store "$U/store" "$U/cur.caibx"
ok "... reads v2" cmp "$mnt/cur" v2.tar
ok "... again" cmp "$mnt/cur" v2.tar
ok "... exactly one warning" test "$(warnings log.bad)" = 1
ok "... stats: delta_pack unusable" test "$(stat_of "$mnt" delta_pack)" = unusable
mount_stop "... unmounts" "$mnt"

# --delta given, with --fill: the pack's entries in a few ranges
nginx_log_reset
mount_start "mount v2 --delta --fill" "$mnt" log.fill --cache=C.fill --profile=none --fill --delta "$U/v2.pack" --store "$U/store" "$U/v2.caibx"
ok "... the fill completes" wait_until 10 "$MOUNT_PID" fill_is "$mnt" done
ok "... the pack in at most 4 requests ($(pack_gets)), fewer chunks ($(chunk_gets) < $plain_gets)" test "$(pack_gets)" -le 4 -a "$(chunk_gets)" -lt "$plain_gets"
ok "... reads v2" cmp "$mnt/v2" v2.tar
ok "... no warning" test "$(warnings log.fill)" = 0
mount_stop "... unmounts" "$mnt"

# an unmount during a slow pack fill: the run stops, its request is cancelled
nginx_log_reset
mount_start "mount v2 --delta (slow) --fill" "$mnt" log.slow --cache=C.slow --profile=none --fill --delta "$U/slow/v2.pack" --store "$U/store" "$U/v2.caibx"
ok "... the pack's fill runs" wait_until 10 "$MOUNT_PID" delta_is "$mnt" filling
# a read meanwhile waits for the slow run a while, not to its end: the stores serve it
t0=$(date +%s%N)
ok "... a read during the slow run gives v2" timeout 20 cmp "$mnt/v2" v2.tar
ms=$((($(date +%s%N) - t0) / 1000000))
ok "... within 10 s (${ms} ms)" test "$ms" -lt 10000
ok "... still filling" delta_is "$mnt" filling
sleep 0.5
t0=$(date +%s%N)
mount_stop "... unmounts" "$mnt"
ms=$((($(date +%s%N) - t0) / 1000000))
ok "... within 3 s (${ms} ms; the rest of the pack takes ~25 s)" test "$ms" -lt 3000
ok "... no warning" test "$(warnings log.slow)" = 0

mount_done_testing
