#!/bin/bash
# http.sh - indexes and chunk stores over HTTP, from a real nginx on
# 127.0.0.1: correct output for cafs- and casync-made images, one GET per
# chunk, casync's chunk URL rule (query dropped, trailing '/' ignored),
# redirects, parallel transfers, and every failure as one line and exit 1
# within a bounded time (404 chunk, corrupt chunk, 404 index, 5xx with
# retries, 403, server gone, server that never answers).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-http.sh"
need casync cmp timeout

W=$T/www
mkdir -p "$W" "$T/o"

gen_data "$T/a.img" 3000000 1
gen_data "$T/b.img" 2000000 2

"$CAFS" make -q --chunk-size 16384 --store "$W/x.castr" "$W/x.caibx" "$T/a.img" >/dev/null || exit 1
# an image that repeats itself: the repeat's chunks are in the index twice
head -c 1000000 "$T/b.img" >"$T/rep.img"
cat "$T/a.img" "$T/rep.img" "$T/a.img" >"$T/r.img"
"$CAFS" make -q --chunk-size 16384 --store "$W/r.castr" "$W/r.caibx" "$T/r.img" >/dev/null || exit 1
mkdir -p "$W/cas"
casync make --store="$W/cas/default.castr" "$W/cas/b.caibx" "$T/b.img" >/dev/null || exit 1
n_chunks=$(find "$W/x.castr" -name '*.cacnk' | wc -l)

# a copy with one chunk missing, and one with a chunk overwritten by garbage
cp -a "$W/x.castr" "$W/missing.castr"
gone=$(find "$W/missing.castr" -name '*.cacnk' | sort | sed -n 7p)
rm -f "$gone"
gone=$(basename "$gone" .cacnk)
cp -a "$W/x.castr" "$W/corrupt.castr"
bad=$(find "$W/corrupt.castr" -name '*.cacnk' | sort | sed -n 11p)
chmod u+w "$bad"
gen_data "$bad" 3000 3
bad=$(basename "$bad" .cacnk)
# and one whose chunk file claims 140 MiB (sparse): refused, not downloaded
cp -a "$W/x.castr" "$W/huge.castr"
huge=$(find "$W/huge.castr" -name '*.cacnk' | sort | sed -n 3p)
rm -f "$huge"
truncate -s 140M "$huge"
huge=$(basename "$huge" .cacnk)
cp "$W/x.caibx" "$T/local.caibx"
gen_data "$W/junk.caibx" 5000 4

NGINX_EXTRA='
		location /e503/ { return 503; }
		location /e403/ { return 403; }
		location /moved/ { rewrite ^/moved/(.*)$ /$1 redirect; }'
nginx_start "$W" || exit 1
U=$NGINX_URL

# chunk_gets: the .cacnk lines of the access log
chunk_gets() { nginx_log | awk '$2 ~ /\.cacnk/'; }

# each_chunk_once N: N chunk GETs, all 200, no id twice
each_chunk_once() {
	local got dup
	got=$(chunk_gets | awk '$3 == 200' | wc -l)
	dup=$(chunk_gets | awk '{print $2}' | sort | uniq -d)
	[ "$got" -eq "$1" ] && [ -z "$dup" ] && [ "$(chunk_gets | wc -l)" -eq "$1" ] ||
		{ echo "expected $1 chunk GETs, got $got ok, duplicates: $dup"; chunk_gets | head; return 1; }
}

# expect_fail MAX_SECONDS PATTERN COMMAND...: exit 1 with exactly one line
# on stderr matching PATTERN, within MAX_SECONDS, nothing left in $T/o.
expect_fail() {
	local max=$1 pat=$2 rc=0 start ms
	shift 2
	start=$(date +%s%N)
	timeout 120 "$@" >"$T/stdout" 2>"$T/stderr" || rc=$?
	ms=$((($(date +%s%N) - start) / 1000000))
	cat "$T/stderr"
	[ "$rc" -eq 1 ] || { echo "exit $rc, wanted 1"; return 1; }
	[ "$(wc -l <"$T/stderr")" -eq 1 ] || { echo "wanted one line on stderr"; return 1; }
	grep -q -- "$pat" "$T/stderr" || { echo "no '$pat' in the message"; return 1; }
	[ "$ms" -le $((max * 1000)) ] || { echo "took $ms ms, limit $max s"; return 1; }
	[ -z "$(ls -A "$T/o")" ] || { echo "left behind:"; ls -A "$T/o"; return 1; }
}

nginx_log_reset
ok "cafs image: extract from an index URL and a store URL equals the source" \
	eval '"$CAFS" extract "$U/x.caibx" "$T/out1" --store "$U/x.castr/" && cmp "$T/a.img" "$T/out1"'
ok "each chunk was requested exactly once ($n_chunks chunks)" each_chunk_once "$n_chunks"
ok "the index was one GET" eval '[ "$(nginx_log | grep -c "^GET /x.caibx 200")" -eq 1 ]'

nginx_log_reset
ok "an image with repeated chunks: extract -j 8 equals the source" \
	eval '"$CAFS" extract -j 8 "$U/r.caibx" "$T/out9" --store "$U/r.castr" && cmp "$T/r.img" "$T/out9"'
ok "... each distinct chunk requested once, though the index lists some twice" \
	eval 'each_chunk_once "$(find "$W/r.castr" -name "*.cacnk" | wc -l)" &&
	      [ "$("$CAFS" info "$W/r.caibx" | awk "/^Chunks:/ { print \$2 }")" -gt "$(chunk_gets | wc -l)" ]'

nginx_log_reset
ok "casync image: extract with the default store beside the index URL" \
	eval '"$CAFS" extract "$U/cas/b.caibx" "$T/out2" && cmp "$T/b.img" "$T/out2"'
ok "casync image: chunks came from cas/default.castr" \
	eval '[ "$(chunk_gets | grep -vc "^GET /cas/default.castr/[0-9a-f]\{4\}/[0-9a-f]\{64\}\.cacnk 200")" -eq 0 ] &&
	      [ "$(chunk_gets | wc -l)" -eq "$(find "$W/cas/default.castr" -name "*.cacnk" | wc -l)" ]'

nginx_log_reset
ok "a store URL with ?query and trailing '/' works" \
	eval '"$CAFS" extract "$U/x.caibx" "$T/out3" --store "$U/x.castr/?token=abc;x=1" && cmp "$T/a.img" "$T/out3"'
ok "the query is not part of the chunk URLs (as casync)" \
	eval '[ "$(chunk_gets | grep -c "?\|token")" -eq 0 ] && [ "$(chunk_gets | wc -l)" -eq "$n_chunks" ]'

nginx_log_reset
ok "8 parallel transfers (-j 8) produce the right image" \
	eval '"$CAFS" extract -j 8 "$T/local.caibx" "$T/out4" --store "$U/x.castr" && cmp "$T/a.img" "$T/out4"'
ok "-j 8: still one GET per chunk" each_chunk_once "$n_chunks"

ok "redirects are followed" \
	eval '"$CAFS" extract "$U/moved/x.caibx" "$T/out5" --store "$U/moved/x.castr" && cmp "$T/a.img" "$T/out5"'
ok "file:// index and store are local paths" \
	eval '"$CAFS" extract "file://$W/x.caibx" "$T/out6" --store "file://$W/x.castr" && cmp "$T/a.img" "$T/out6"'

nginx_log_reset
ok "info --store URL counts what the server holds (HEAD requests)" \
	eval '"$CAFS" info --store "$U/missing.castr" "$U/x.caibx" | grep -qx "In store $U/missing.castr: $((n_chunks - 1)) of $n_chunks chunks, .*"'
ok "... without downloading a chunk" eval '[ "$(chunk_gets | awk "\$1 != \"HEAD\"" | wc -l)" -eq 0 ] && [ "$(chunk_gets | wc -l)" -eq "$n_chunks" ]'
mkdir -p "$T/mk"
ok "make cannot write to an http store: usage error, nothing created" \
	eval '(cd "$T/mk" && "$CAFS" make --store "$U/new.castr" out.caibx "$T/a.img"; [ $? -eq 2 ]) &&
	      [ -z "$(ls -A "$T/mk")" ] && [ ! -e "$W/new.castr" ]'
ok "make cannot write an index to a URL" \
	eval '(cd "$T/mk" && "$CAFS" make "$U/new.caibx" "$T/a.img"; [ $? -eq 2 ]) && [ -z "$(ls -A "$T/mk")" ]'
ok "make with file:// index and store writes those paths (no ./file: directory)" \
	eval '(cd "$T/mk" && "$CAFS" make -q --store "file://$T/mk/s.castr" "file://$T/mk/y.caibx" "$T/a.img" >/dev/null) &&
	      [ ! -e "$T/mk/file:" ] && "$CAFS" extract "$T/mk/y.caibx" "$T/mk/y.img" --store "$T/mk/s.castr" &&
	      cmp "$T/a.img" "$T/mk/y.img"'
rm -rf "$T/mk"
ok "404 on one chunk: one line naming the chunk, exit 1, no output" \
	expect_fail 20 "chunk $gone" "$CAFS" extract "$U/x.caibx" "$T/o/out" --store "$U/missing.castr"
ok "404 on one chunk with -j 8: the same single line" \
	expect_fail 20 "chunk $gone" "$CAFS" extract -j 8 "$U/x.caibx" "$T/o/out" --store "$U/missing.castr"
ok "corrupt chunk on the server: one line naming the chunk, exit 1, no output" \
	expect_fail 20 "chunk $bad: corrupt" "$CAFS" extract "$U/x.caibx" "$T/o/out" --store "$U/corrupt.castr"
nginx_log_reset
ok "a chunk file over 132 MiB: refused, one line naming the chunk, exit 1" \
	expect_fail 20 "chunk $huge: File too large" "$CAFS" extract "$U/x.caibx" "$T/o/out" --store "$U/huge.castr"
ok "... without downloading it" eval '[ "$(nginx_log | awk "\$2 ~ /$huge/ { s += \$4 } END { print s + 0 }")" -lt 10485760 ]'
ok "404 index: one line, exit 1" \
	expect_fail 20 "nope.caibx: not found" "$CAFS" extract "$U/nope.caibx" "$T/o/out"
ok "an index URL that is not an index: one line, exit 1" \
	expect_fail 20 "junk.caibx: not a valid casync index" "$CAFS" extract "$U/junk.caibx" "$T/o/out"

nginx_log_reset
ok "5xx: retried, then one line and exit 1" \
	expect_fail 20 "chunk" env CAFS_HTTP_RETRIES=2 "$CAFS" extract -q -j 1 "$T/local.caibx" "$T/o/out" --store "$U/e503/x.castr"
ok "5xx: the chunk was tried 1 + 2 times" \
	eval '[ "$(chunk_gets | awk "{print \$2}" | sort | uniq -c | sort -rn | awk "NR==1{print \$1}")" -eq 3 ]'
nginx_log_reset
ok "403: not retried, exit 1" \
	eval 'expect_fail 20 "chunk" "$CAFS" extract -q -j 1 "$T/local.caibx" "$T/o/out" --store "$U/e403/x.castr" &&
	      [ "$(chunk_gets | wc -l)" -ge 1 ] && [ -z "$(chunk_gets | awk "{print \$2}" | sort | uniq -d)" ]'

port=$NGINX_PORT
nginx_stop
ok "server down: one line, exit 1, within 10 s" \
	expect_fail 10 "Connection refused" env CAFS_HTTP_TIMEOUT=2 "$CAFS" extract "$T/local.caibx" "$T/o/out" --store "$U/x.castr"
ok "server down, index URL: one line, exit 1, within 10 s" \
	expect_fail 10 "x.caibx: Connection refused" env CAFS_HTTP_TIMEOUT=2 "$CAFS" extract "$U/x.caibx" "$T/o/out"

# a server that accepts connections and never answers: only the stall timeout ends it
python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64)
print(s.getsockname()[1], flush=True); time.sleep(100)' >"$T/mute.port" &
mute_pid=$!
at_cleanup "kill $mute_pid; wait $mute_pid"
for _ in $(seq 50); do [ -s "$T/mute.port" ] && break; sleep 0.1; done
mute=$(cat "$T/mute.port")
ok "server that never answers: timeout, one line, exit 1, within 10 s (CAFS_HTTP_TIMEOUT=1)" \
	expect_fail 10 "timed out" env CAFS_HTTP_TIMEOUT=1 CAFS_HTTP_RETRIES=1 "$CAFS" extract "$T/local.caibx" "$T/o/out" \
	--store "http://127.0.0.1:$mute/x.castr"

nginx_start "$W" "$port"
ok "nginx back on the same port: extract works again" \
	eval '"$CAFS" extract "$U/x.caibx" "$T/out7" --store "$U/x.castr" && cmp "$T/a.img" "$T/out7"'

# https: HTTP/2 when the server offers it, all transfers multiplexed on one connection
nginx_stop
NGINX_SSL=1 nginx_start "$W" || exit 1
S=$NGINX_URL
nginx_log_reset
ok "https (HTTP/2): extract -j 8 with CAFS_HTTP_CAINFO equals the source" \
	eval 'CAFS_HTTP_CAINFO="$NGINX_CA" "$CAFS" extract -j 8 "$S/x.caibx" "$T/out8" --store "$S/x.castr" &&
	      cmp "$T/a.img" "$T/out8"'
ok "https: HTTP/2 was used, on one connection for all chunks, one GET each" \
	eval 'each_chunk_once "$n_chunks" && [ "$(chunk_gets | awk "{print \$5}" | sort -u)" = HTTP/2.0 ] &&
	      [ "$(chunk_gets | awk "{print \$6}" | sort -u | wc -l)" -eq 1 ]'
ok "https: an untrusted certificate fails, exit 1" \
	eval 'env -u CAFS_HTTP_CAINFO "$CAFS" extract -q "$S/x.caibx" "$T/o/out"; [ $? -eq 1 ] && [ ! -e "$T/o/out" ]'

done_testing
