#!/bin/bash
# stats-cache-size.sh - the disk cache's size in a mount's metrics
# (cafs_cache_size_bytes, cafs_cache_chunks, cafs_cache_size_age_seconds):
# counted by a background walk the first scrape starts, then again at
# most once per interval; a scrape in between gives the last count (it
# does not walk the cache), a later count sees chunks pruned by another
# process. The metrics parse with prometheus_client's OpenMetrics parser.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"
PY=/usr/bin/python3
$PY -c 'import prometheus_client.openmetrics.parser' 2>/dev/null ||
	skip_all "no python3-prometheus-client for /usr/bin/python3"

cd "$T" || exit 1
mkdir -p www src
for i in 0 1 2; do "$GEN" 512K $((i + 60)) >src/f$i; done
"$CAFS" make -q --store=www/default.castr www/img.caidx src >/dev/null || exit 1
nginx_start www || exit 1
mnt=$T/mnt

# metric NAME: its value in a scrape (empty when absent)
metric() { "$CAFS" stats --format=openmetrics "$mnt" | awk -v n="$1" 'index($1, n "{") == 1 { print $2 }'; }
files() { find C -name '*.cacnk' -type f | wc -l; }
bytes() { find C -name '*.cacnk' -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }
counted() { [ "$(metric cafs_cache_chunks)" = "$(files)" ] && [ "$(metric cafs_cache_size_bytes)" = "$(bytes)" ]; }

mount_start "mount with --cache" "$mnt" log1 --cache=C --profile=none "$NGINX_URL/img.caidx"
ok "reads the files" bash -c "cat '$mnt'/f0 '$mnt'/f1 '$mnt'/f2 | cmp - <(cat src/f0 src/f1 src/f2)"
# the mount writes its cache behind its readers (a chunk waits while reads
# go on, chunksrc.c): the files are there once the count stops growing
settled() { local n; n=$(files); sleep 0.2; [ "$n" -gt 3 ] && [ "$(files)" = "$n" ]; }
ok "the cache holds chunks" wait_until 5 "$MOUNT_PID" settled
ok "the first scrape starts the count; a later one has it: $(files) chunk files, $(bytes) bytes" \
	wait_until 10 "$MOUNT_PID" counted
"$CAFS" stats --format=openmetrics "$mnt" >om
ok "it parses as OpenMetrics: gauges, bytes and seconds" $PY -c "
from prometheus_client.openmetrics.parser import text_string_to_metric_families
f = {m.name: m for m in text_string_to_metric_families(open('om').read())}
assert f['cafs_cache_size_bytes'].type == 'gauge' and f['cafs_cache_size_bytes'].unit == 'bytes'
assert f['cafs_cache_chunks'].type == 'gauge'
age = f['cafs_cache_size_age_seconds']
assert age.unit == 'seconds' and 0 <= age.samples[0].value < 60, age
"
before=$(metric cafs_cache_chunks)
# another process prunes half of the cache
find C -name '*.cacnk' -type f | sort | awk 'NR % 2' | xargs rm -f
ok "scrapes within the interval (5 min) do not walk: still $before chunks, not $(files)" \
	bash -c "for i in 1 2 3 4 5; do [ \"\$(\"$CAFS\" stats --format=openmetrics '$mnt' | awk 'index(\$1, \"cafs_cache_chunks{\") == 1 { print \$2 }')\" = $before ] || exit 1; sleep 0.1; done"
mount_stop "unmounts" "$mnt"

CAFS_TEST_CACHE_SIZE_INTERVAL_S=1 mount_start "mount again, counting every second" "$mnt" log2 --cache=C --profile=none "$NGINX_URL/img.caidx"
ok "the count has the chunks left: $(files)" wait_until 10 "$MOUNT_PID" counted
ok "reads the files again" bash -c "cat '$mnt'/f0 '$mnt'/f1 '$mnt'/f2 | cmp - <(cat src/f0 src/f1 src/f2)"
ok "a later count has the chunks fetched again: $(files)" wait_until 10 "$MOUNT_PID" counted
mount_stop "unmounts" "$mnt"

mount_start "mount without a cache" "$mnt" log3 --no-cache --profile=none "$NGINX_URL/img.caidx"
ok "no cache, no size" test -z "$(metric cafs_cache_chunks)" -a -n "$(metric cafs_reads_total)"
mount_stop "unmounts" "$mnt"
mount_done_testing
