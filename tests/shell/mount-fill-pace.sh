#!/bin/bash
# mount-fill-pace.sh - `cafs mount --fill` keeps pace with a reader that
# follows it, so that each chunk is decompressed and verified once: a fill
# far ahead had its chunks evicted from the memory LRU before the reader
# came, and the reader decoded them again from the cache (`cafs stats`'
# cache_hits). A 12 MiB tree through a 2 MiB LRU; the fill downloads at
# 8 MB/s (--rate-limit-bps) and the reader, a tar piped into a consumer
# holding it to 4 MB/s, falls behind it from the start.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"
need python3 tar

W=$T/www
src=$T/src
mkdir -p "$W" "$src/big"
for i in $(seq -w 0 23); do "$GEN" 512K $((10#$i + 900)) >"$src/big/f$i"; done
"$CAFS" make --store="$W/default.castr" "$W/img.caidx" "$src" >/dev/null || exit 1
n_chunks=$(find "$W/default.castr" -name '*.cacnk' | wc -l)
nginx_start "$W" || exit 1
stat_of() { "$CAFS" stats "$1" | awk -v k="$2:" '$1 == k { print $2 }'; }
fill_is() { [ "$(stat_of "$1" fill)" = "$2" ]; }
mnt=$T/mnt

cat >"$T/slow.py" <<'PY'
import sys, time
out = open(sys.argv[1], "wb")
t0, n = time.monotonic(), 0
while True:
    b = sys.stdin.buffer.read(65536)
    if not b:
        break
    out.write(b)
    n += len(b)
    d = t0 + n / 4e6 - time.monotonic()
    if d > 0:
        time.sleep(d)
PY

mount_start "mount --fill, a 2 MiB LRU, 8 MB/s" "$mnt" "$T/log" --cache="$T/cache" --profile=none --fill \
	--lru-size=2M --rate-limit-bps=8M "$NGINX_URL/img.caidx"
ok "a tar of the mount read at 4 MB/s" sh -c "tar -cf - -C '$mnt' . | python3 '$T/slow.py' '$T/img.tar'"
mkdir -p "$T/out"
ok "... reads every file right" sh -c "tar -xf '$T/img.tar' -C '$T/out' && diff -r '$T/out' '$src'"
ok "the fill completes" wait_until 30 "$MOUNT_PID" fill_is "$mnt" done
hits=$(stat_of "$mnt" cache_hits)
# unpaced, the fill ran ahead and about 150 of the 181 chunks came back
# from the cache; paced, none (a quarter of them: room for a busy machine)
ok "the reader decoded few chunks a second time from the cache ($hits of $n_chunks)" \
	test "$((4 * hits))" -lt "$n_chunks"
ok "... no read failed" test "$(stat_of "$mnt" read_errors)" = 0
mount_stop "unmount" "$mnt"
mount_done_testing
