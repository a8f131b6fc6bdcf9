#!/bin/bash
# stats-metrics.sh - `cafs stats --format=openmetrics|prometheus|json` and
# --textfile on a real mount over nginx: the output parses with
# prometheus_client's OpenMetrics and 0.0.4 parsers, counters rise after
# reads, the latency histogram is consistent, a store's label shows no
# credential, the textfile is replaced whole (a reader never sees half of
# it) and node_exporter's textfile collector takes it, every sample names its mount point, and the plain text stats are
# as before.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"
need python3 timeout
PY=/usr/bin/python3
$PY -c 'import prometheus_client.openmetrics.parser' 2>/dev/null ||
	skip_all "no python3-prometheus-client for /usr/bin/python3"

W=$T/www
mkdir -p "$W" "$T/src"
for i in 0 1 2 3; do "$GEN" 1M $((i + 40)) >"$T/src/f$i"; done
"$CAFS" make --store="$W/default.castr" "$W/img.caidx" "$T/src" >/dev/null || exit 1
nginx_start "$W" || exit 1
host=${NGINX_URL#http://}

# check.py FILE PARSER PREV HOST MOUNTPOINT: the metrics in FILE parse with PARSER (om:
# OpenMetrics, prom: 0.0.4); their samples go to FILE.json; with PREV (an
# earlier FILE.json, or "") every counter is >= before and reads, read bytes and
# store requests have risen.
cat >"$T/check.py" <<'PYEOF'
import json, sys
path, parser = sys.argv[1], sys.argv[2]
text = open(path).read()
if parser == "om":
    from prometheus_client.openmetrics.parser import text_string_to_metric_families
else:
    from prometheus_client.parser import text_string_to_metric_families
fams = {f.name: f for f in text_string_to_metric_families(text)}
def fail(msg):
    print("# " + msg); sys.exit(1)
# the 0.0.4 parser names a counter family with its _total
def fam(name):
    return fams.get(name) or fams.get(name + "_total") or fail("no family " + name)
for name, kind in [("cafs_reads", "counter"), ("cafs_read_bytes", "counter"), ("cafs_read_errors", "counter"),
                   ("cafs_cache_hits", "counter"), ("cafs_cache_misses", "counter"),
                   ("cafs_http_requests", "counter"), ("cafs_http_errors", "counter"),
                   ("cafs_http_retries", "counter"), ("cafs_store_bytes", "counter"),
                   ("cafs_http_request_duration_seconds", "histogram"), ("cafs_store_up", "gauge"),
                   ("cafs_memory_bytes", "gauge"), ("cafs_memory_limit_bytes", "gauge"),
                   ("cafs_cache_fs_avail_bytes", "gauge"), ("cafs_fill_chunks_done", "gauge")]:
    if fam(name).type != kind:
        fail("%s is a %s, not a %s" % (name, fam(name).type, kind))
if parser == "om":
    if not text.endswith("# EOF\n"):
        fail("no # EOF at the end")
    if fams["cafs_read_bytes"].unit != "bytes":
        fail("cafs_read_bytes has unit %r" % fams["cafs_read_bytes"].unit)
samples = {}
for f in fams.values():
    for s in f.samples:
        key = s.name + json.dumps(sorted(s.labels.items()))
        samples[key] = s.value
        for v in s.labels.values():
            if "secret" in v or "token" in v or "@" in v or "?" in v:
                fail("a credential in a label: %r" % v)
mnts = {s.labels.get("mountpoint") for f in fams.values() for s in f.samples}
if mnts != {sys.argv[5]}:
    fail("mountpoint labels %r, not %r" % (mnts, sys.argv[5]))
stores = {s.labels["store"] for s in fam("cafs_http_requests").samples}
if stores != {"http://%s/default.castr" % sys.argv[4]}:
    fail("store labels %r" % stores)
# the histogram: buckets cumulative, +Inf == _count, sum > 0, count <= requests
h = fam("cafs_http_request_duration_seconds")
for store in stores:
    b = [(float(s.labels["le"]), s.value) for s in h.samples if s.name.endswith("_bucket") and s.labels["store"] == store]
    count = [s.value for s in h.samples if s.name.endswith("_count") and s.labels["store"] == store][0]
    total = [s.value for s in h.samples if s.name.endswith("_sum") and s.labels["store"] == store][0]
    req = [s.value for s in fam("cafs_http_requests").samples if s.labels["store"] == store][0]
    if [x for x, _ in b] != sorted(x for x, _ in b) or b[-1][0] != float("inf"):
        fail("buckets out of order: %r" % b)
    if any(b[i][1] > b[i + 1][1] for i in range(len(b) - 1)):
        fail("buckets not cumulative: %r" % b)
    if b[-1][1] != count or not (1 <= count <= req) or total <= 0:
        fail("histogram: +Inf %s, count %s, sum %s, requests %s" % (b[-1][1], count, total, req))
up = [s.value for s in fam("cafs_store_up").samples]
if up != [1]:
    fail("cafs_store_up %r" % up)
rss = fam("cafs_memory_resident_bytes").samples[0].value
budget = fam("cafs_memory_budget_bytes").samples[0].value
if not 0 < rss < budget or budget != 64 * 2**20 + 192 * 2**20:
    fail("resident %s, budget %s" % (rss, budget))
json.dump(samples, open(path + ".json", "w"))
if len(sys.argv) > 3 and sys.argv[3]:
    prev = json.load(open(sys.argv[3]))
    for k, v in prev.items():
        if ("_total" in k or "_bucket" in k or "_count" in k) and samples.get(k, -1) < v:
            fail("%s went down: %s -> %s" % (k, v, samples.get(k)))
    rising = [k for k in samples if k.startswith(("cafs_reads_total[", "cafs_read_bytes_total["))]
    if len(rising) != 2:
        fail("reads and read bytes: %r" % rising)
    for k in rising:
        if not samples[k] > prev[k]:
            fail("%s did not rise: %s -> %s" % (k, prev[k], samples[k]))
    key = [k for k in samples if k.startswith("cafs_http_requests_total")][0]
    if not samples[key] > prev[key]:
        fail("%s did not rise" % key)
PYEOF

mnt=$T/mnt
mkdir -p "$mnt"
rmnt=$(realpath "$mnt")
# credentials in the store's URL (userinfo, query): never in a label
mount_start "mount over nginx, credentials in the store URL" "$mnt" "$T/log" --cache="$T/cache" \
	--store="http://user:secret@$host/default.castr?token=x" "$NGINX_URL/img.caidx"
ok "a file reads right" cmp "$mnt/f0" "$T/src/f0"
"$CAFS" stats --format=openmetrics "$mnt" >"$T/m1"
ok "openmetrics: parses; types, units, # EOF; histogram consistent; no credential" \
	$PY "$T/check.py" "$T/m1" om "" "$host" "$rmnt"
ok "another file reads right" cmp "$mnt/f2" "$T/src/f2"
"$CAFS" stats --format=openmetrics "$mnt" >"$T/m2"
ok "openmetrics: reads, read bytes and store requests rose, no counter fell" \
	$PY "$T/check.py" "$T/m2" om "$T/m1.json" "$host" "$rmnt"
"$CAFS" stats --format=prometheus "$mnt" >"$T/p1"
ok "prometheus text 0.0.4: parses with the same samples" $PY "$T/check.py" "$T/p1" prom "" "$host" "$rmnt"

# --textfile: replaced whole while a reader reads it over and over
tf=$T/textfile/cafs.prom
mkdir -p "$T/textfile"
ok "--textfile writes the metrics" "$CAFS" stats --textfile="$tf" "$mnt"
cp "$tf" "$T/tf1"
ok "... in the 0.0.4 format, which parses" $PY "$T/check.py" "$T/tf1" prom "" "$host" "$rmnt"
( for _ in $(seq 30); do "$CAFS" stats --textfile="$tf" "$mnt" || exit 1; done ) &
writer=$!
at_cleanup "kill $writer 2>/dev/null"
torn=0 reads=0
while kill -0 "$writer" 2>/dev/null; do
	t=$(cat "$tf") || torn=$((torn + 1))
	case $t in *'# EOF') ;; *) torn=$((torn + 1)) ;; esac
	reads=$((reads + 1))
done
wait "$writer"
ok "... rewritten 30 times: the writer succeeded" test $? = 0
ok "... and none of $reads reads saw a torn file" test "$torn" = 0
ok "... no temporary file left beside it" test "$(ls -A "$T/textfile")" = cafs.prom

# the real collector: node_exporter's textfile collector reads the file
# without error and serves its counters with their types
if command -v prometheus-node-exporter >/dev/null && command -v curl >/dev/null; then
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	prometheus-node-exporter --web.listen-address="127.0.0.1:$port" --collector.disable-defaults \
		--collector.textfile --collector.textfile.directory="$T/textfile" >"$T/ne.log" 2>&1 &
	ne=$!
	at_cleanup "kill $ne 2>/dev/null; wait $ne 2>/dev/null"
	for _ in $(seq 50); do
		curl -sf "http://127.0.0.1:$port/metrics" >"$T/ne.out" 2>/dev/null && break
		sleep 0.1
	done
	ok "node_exporter's textfile collector reads it without error" \
		grep -qx 'node_textfile_scrape_error 0' "$T/ne.out"
	ok "... and serves its counters, typed, with their labels" sh -c "
		grep -qx '# TYPE cafs_reads_total counter' '$T/ne.out' &&
		grep -q '^cafs_reads_total{mountpoint=\"$rmnt\"} [1-9]' '$T/ne.out' &&
		grep -q '^cafs_http_request_duration_seconds_bucket{mountpoint=\"$rmnt\",store=.*,le=\"+Inf\"} [1-9]' '$T/ne.out'"
	kill "$ne" && wait "$ne" 2>/dev/null
else
	skip "node_exporter's textfile collector reads it" "no prometheus-node-exporter or curl"
fi

"$CAFS" stats --json "$mnt" >"$T/j1"
ok "--json: parses, every family has name/type/unit/help/samples" $PY -c '
import json, sys
d = json.load(open(sys.argv[1]))
fams = {f["name"]: f for f in d["metrics"]}
for f in d["metrics"]:
    assert set(f) == {"name", "type", "unit", "help", "samples"}, f
    for s in f["samples"]:
        assert set(s) == {"name", "labels", "value"}, s
        assert isinstance(s["value"], (int, float)), s
assert fams["cafs_reads"]["samples"][0]["value"] >= 2
assert fams["cafs_reads"]["samples"][0]["labels"] == {"mountpoint": sys.argv[2]}
assert fams["cafs_http_request_duration_seconds"]["type"] == "histogram"
' "$T/j1" "$rmnt"
"$CAFS" stats "$mnt" >"$T/text"
ok "the plain text stats are as before" grep -Eq '^http_requests: [1-9]' "$T/text"
ok "--format=bogus is refused" sh -c "'$CAFS' stats --format=bogus '$mnt' 2>'$T/err'; test \$? = 2"
ok "... with one cafs: line" grep -q '^cafs: stats: --format=bogus: expected' "$T/err"
ok "--textfile with --format=text is refused" sh -c "'$CAFS' stats --format=text --textfile=x '$mnt' 2>/dev/null; test \$? = 2"
ok "--format=openmetrics on a directory that is no mount fails" \
	sh -c "'$CAFS' stats --format=openmetrics '$T' 2>'$T/err'; test \$? = 1 && grep -q 'not a cafs mount' '$T/err'"
mount_stop "unmount" "$mnt"
mount_done_testing
