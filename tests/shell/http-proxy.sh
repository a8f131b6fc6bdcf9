#!/bin/bash
# http-proxy.sh - cafs behind a caching proxy: an nginx proxy_cache in
# front of an origin nginx configured as cafs(1) tells an operator to
# (chunks immutable with a long max-age, the index revalidated). A second
# client's cold read of the whole image makes no chunk GET at the origin,
# and its index comes from the proxy's revalidated copy (a conditional
# request at the origin, 304) or its cache; the same read through a path
# the proxy does not cache reaches the origin (the check can fail).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"
need python3

W=$T/www
src=$T/src
mkdir -p "$W" "$src/d"
for i in $(seq -w 0 29); do "$GEN" 200K $((10#$i + 700)) >"$src/d/f$i"; done
printf 'a small file\n' >"$src/a.txt"
"$CAFS" make "$W/img.caidx" "$src" >/dev/null || exit 1
n_chunks=$(find "$W/default.castr" -name '*.cacnk' | wc -l)
mnt=$T/mnt

# The origin: what cafs(1) says to serve.
NGINX_CONF_DIR=$T/origin NGINX_EXTRA='
	location ~ \.cacnk$ { add_header Cache-Control "public, max-age=31536000, immutable"; }
	location ~ \.(ca[ib]dx|cameta|minisig)$ { add_header Cache-Control "no-cache"; }' nginx_start "$W"
_tap "origin server" $?
origin=$NGINX_URL origin_pid=$NGINX_PID
at_cleanup "kill $origin_pid; wait $origin_pid"

# The proxy: caches what the origin allows (the chunks, a year); the
# index kept one second, then revalidated with a conditional request.
# /nocache/ passes everything through uncached.
NGINX_CONF_DIR=$T/proxy NGINX_HTTP_EXTRA="proxy_cache_path $T/proxy/cache levels=1:2 keys_zone=c:10m inactive=1h;
	log_format hdrs '\$request_uri cookie=[\$http_cookie] cc=[\$http_cache_control] pragma=[\$http_pragma] ua=[\$http_user_agent]';" \
	NGINX_EXTRA="
	access_log $T/proxy/access.log cafs;
	access_log $T/proxy/headers.log hdrs;
	location / { proxy_pass $origin; proxy_cache c; }
	location ~ \.(ca[ib]dx|cameta|minisig)\$ {
		proxy_pass $origin; proxy_cache c; proxy_cache_revalidate on;
		proxy_ignore_headers Cache-Control; proxy_cache_valid 200 1s;
	}
	location ^~ /nocache/ { proxy_pass $origin/; }" nginx_start "$W"
_tap "caching proxy in front of it" $?
proxy=$NGINX_URL proxy_pid=$NGINX_PID
at_cleanup "kill $proxy_pid; wait $proxy_pid"

olog() { cat "$T/origin/access.log"; }
origin_chunk_gets() { olog | awk '$2 ~ /\.cacnk$/' | wc -l; }

# client A: its own empty cache, cold, the whole image
mount_start "client A mounts through the proxy" "$mnt" "$T/logA" --cache="$T/cacheA" "$proxy/img.caidx"
ok "client A: the whole image reads right" diff -r "$src" "$mnt"
mount_stop "client A: unmount" "$mnt"
got=$(origin_chunk_gets)
ok "client A: each chunk fetched from the origin once ($got of $n_chunks)" test "$got" = "$n_chunks"
ok "client A: the origin sent the index once" test "$(olog | grep -c '^GET /img.caidx 200')" = 1

sleep 1.2 # past the proxy's second on the index: it must revalidate
: >"$T/origin/access.log"
mount_start "client B mounts through the proxy" "$mnt" "$T/logB" --cache="$T/cacheB" "$proxy/img.caidx"
ok "client B: the whole image reads right" diff -r "$src" "$mnt"
mount_stop "client B: unmount" "$mnt"
ok "client B: no chunk GET at the origin" test "$(origin_chunk_gets)" = 0
ok "client B: the index and its sidecar were revalidated (304) or served by the proxy, not sent again" \
	sh -c "! grep -Eq '^GET /img.caidx(.cameta)? 200' '$T/origin/access.log'"
# what a cache keys on or obeys: nothing that differs per client
clean_headers() {
	local h=$T/proxy/headers.log
	test "$(grep -c '\.cacnk ' "$h")" -ge "$n_chunks" &&
		! grep '\.cacnk ' "$h" | grep -v 'cookie=\[-\] cc=\[-\] pragma=\[-\]' &&
		test "$(grep '\.cacnk ' "$h" | sed 's/.*ua=//' | sort -u | wc -l)" = 1
}
ok "chunk GETs carry no cookie, no Cache-Control, no Pragma, one User-Agent" clean_headers
ok "client B's chunks came from the proxy: $n_chunks or more GETs there" \
	test "$(awk '$2 ~ /\.cacnk$/ && $3 == 200' "$T/proxy/access.log" | wc -l)" -ge $((2 * n_chunks))

# the same cold read where the proxy does not cache: the origin sees it
: >"$T/origin/access.log"
ok "client C, through the uncached path: the whole image" "$CAFS" extract --cache="$T/cacheC" \
	"$proxy/nocache/img.caidx" "$T/outC"
ok "... reads right" diff -r "$src" "$T/outC"
ok "... and every chunk GET reached the origin" test "$(origin_chunk_gets)" = "$n_chunks"
ok "... the index too" grep -q '^GET /img.caidx 200' "$T/origin/access.log"

mount_done_testing
