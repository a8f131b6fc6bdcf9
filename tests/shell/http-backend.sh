#!/bin/bash
# http-backend.sh - runs tests/unit/test-remote (the HTTP engine and the
# remote chunk backend through their C API) against a real nginx: a store,
# the same store throttled to 50 KB/s, a location answering 503, a file.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-http.sh"
prog=$top_builddir/tests/unit/test-remote
[ -x "$prog" ] || skip_all "tests/unit/test-remote is not built"

W=$T/www
mkdir -p "$W"
gen_data "$T/img" 1000000 5
gen_data "$W/f.bin" 300000 6
"$CAFS" make -q --store "$W/s.castr" "$T/s.caibx" "$T/img" >/dev/null || exit 1
ids=$(find "$W/s.castr" -name '*.cacnk' | sort | head -n 8 | xargs -n1 basename | sed 's/\.cacnk$//')

NGINX_EXTRA="
		location /slow/ { alias $W/; limit_rate 50k; }
		location /e503/ { return 503; }"
nginx_start "$W" || exit 1
# shellcheck disable=SC2086
"$prog" "$NGINX_URL" $ids
