#!/bin/bash
# casync-rate-limit.sh - --rate-limit-bps caps a store's download rate, as
# casync's does. casync hands it to its HTTP helper (casync-http), which
# sets it as curl's CURLOPT_MAX_RECV_SPEED_LARGE (and _SEND_) on its one
# handle and fetches one chunk at a time per store: the store's downloads
# together go no faster than the limit. cafs, which fetches 8 chunks at a
# time, used to apply it to each transfer, so 8 times the limit.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-http.sh"
need casync

mkdir -p "$T/bin" "$T/www" && ln -s "$CAFS" "$T/bin/casync"
FAKE=$T/bin/casync
cd "$T/www"
gen_data blob.img 1200000 11
casync make blob.caibx blob.img >/dev/null || { echo "Bail out! casync make failed"; exit 1; }
nginx_start "$T/www"
cd "$T"

# elapsed_ms CMD...: run CMD, print how long it took
elapsed_ms() { local s=$(date +%s%N); "$@" >/dev/null || return 1; echo $((($(date +%s%N) - s) / 1000000)); }

# the accepted case: unlimited, the image comes in well under a second
ms=$(elapsed_ms "$FAKE" --store="$NGINX_URL/default.castr" extract "$NGINX_URL/blob.caibx" free.img)
ok "without a limit: extracted in ${ms} ms" bash -c "cmp free.img www/blob.img && [ $ms -lt 1500 ]"
# 1.2 MB at 400 KB/s: 3 s; at least 2.4 s allowed for (casync's own runs
# take 2 s or so: curl lets each short transfer start with a burst)
ms=$(elapsed_ms "$FAKE" --rate-limit-bps=400K --store="$NGINX_URL/default.castr" extract "$NGINX_URL/blob.caibx" slow.img)
ok "--rate-limit-bps=400K: 1.2 MB took ${ms} ms (at least 2400)" bash -c "cmp slow.img www/blob.img && [ $ms -ge 2400 ]"
# the limit slows it to that rate, not below: well under twice the time
ok "and not far slower than the limit (${ms} ms)" test "$ms" -lt 6000
# cafs extract under its own name: the same
ms=$(elapsed_ms "$CAFS" extract --rate-limit-bps=400K --store="$NGINX_URL/default.castr" "$NGINX_URL/blob.caibx" c.img)
ok "cafs extract --rate-limit-bps=400K: ${ms} ms" bash -c "cmp c.img www/blob.img && [ $ms -ge 2400 ]"
ok "--rate-limit-bps=0 is refused, as casync" bash -c "! '$FAKE' --rate-limit-bps=0 extract '$NGINX_URL/blob.caibx' z.img 2>/dev/null"

done_testing
