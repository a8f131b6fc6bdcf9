#!/bin/bash
# mount-urgent.sh - a read waits for no download queued before it: the
# first read of a file up to 4 MiB queues the download of every chunk of
# it, in the file's order (fs.c, whole-file fetch); a read of its end,
# which a loader's page fault may be, then moves its own chunk's download
# ahead of them (http.h CA_HTTP_URGENT, ca_http_hurry). With one
# connection (CAFS_HTTP_CONNECTIONS=1) the server sees the requests in
# queue order: the chunk holding the file's last byte comes among the
# first few of some 250, not last, and the stats count it (http_urgent);
# the bytes are right, and so is the whole file read after.
# Readers first for the CPU too: the cache writer holds the chunks of a
# cold read back while reads go on (chunksrc.c, 50 ms quiet): right after
# the read none is in the cache yet (a SKIP when the check itself came
# too late to tell), and soon after all of them are.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"

W=$T/www
src=$T/src
mkdir -p "$W" "$src"
"$GEN" 3900K 24 >"$src/lib.so"
"$CAFS" make --chunk-size=16K --store="$W/default.castr" "$W/img.caidx" "$src" >/dev/null || exit 1
# the chunk that holds the file's last byte: the archive ends with the
# root directory's goodbye record (64 bytes: one item and the tail) right
# after the file's payload
last=$(/usr/bin/python3 - "$W/img.caidx" <<'PY'
import struct, sys
d = open(sys.argv[1], 'rb').read()
t = d[64:len(d) - 40]
start, want = 0, struct.unpack_from('<Q', t, len(t) - 40)[0] - 64 - 1
for i in range(0, len(t), 40):
    end = struct.unpack_from('<Q', t, i)[0]
    if start <= want < end:
        print(t[i + 8:i + 40].hex())
    start = end
PY
)
n=$(find "$W/default.castr" -name '*.cacnk' | wc -l)
ok "the file is some 250 chunks ($n), the last byte's chunk known" test "$n" -ge 150 -a -n "$last"
nginx_start "$W" || exit 1
stat_of() { "$CAFS" stats "$1" | awk -v k="$2:" '$1 == k { print $2 }'; }

mnt=$T/mnt
CAFS_HTTP_CONNECTIONS=1 mount_start "mount, one connection" "$mnt" "$T/log" --cache="$T/c" "$NGINX_URL/img.caidx"
ok "nothing urgent before a read" test "$(stat_of "$mnt" http_urgent)" = 0
nginx_log_reset
ok "the file's last 4 KiB read right" cmp <(tail -c 4096 "$mnt/lib.so") <(tail -c 4096 "$src/lib.so")
pos=$(nginx_log | awk '$2 ~ /\.cacnk$/ { print $2 }' | grep -n "$last" | head -n 1 | cut -d: -f1)
ok "its chunk went out among the first 4 GETs, not behind the file's others (GET number ${pos:-none})" \
	test -n "$pos" -a "${pos:-999}" -le 4
ok "the stats count it (http_urgent $(stat_of "$mnt" http_urgent))" test "$(stat_of "$mnt" http_urgent)" -ge 1
ok "the whole file reads right" cmp "$mnt/lib.so" "$src/lib.so"
ok "every chunk downloaded once" test "$(nginx_log | awk '$2 ~ /\.cacnk$/' | sort -u | wc -l)" = "$(nginx_log | awk '$2 ~ /\.cacnk$/' | wc -l)"
mount_stop "unmount" "$mnt"

"$GEN" 300K 25 >"$src/small.so"
"$CAFS" make --chunk-size=16K --store="$W/default.castr" "$W/img2.caidx" "$src" >/dev/null || exit 1
cached() { find "$T/c2" -name '*.cacnk' 2>/dev/null | wc -l; }
mount_start "mount for the cache writer" "$mnt" "$T/log2" --cache="$T/c2" "$NGINX_URL/img2.caidx"
ok "a cold read of a small file is right" cmp "$mnt/small.so" "$src/small.so"
t0=$(date +%s%N)
n0=$(cached)
dt=$((($(date +%s%N) - t0) / 1000000))
if [ "$dt" -lt 30 ]; then
	ok "right after it, its chunks are not written to the cache yet ($n0)" test "$n0" = 0
else
	skip "right after it, its chunks are not written to the cache yet" "the count took $dt ms"
fi
fetched=$(stat_of "$mnt" chunks_fetched)
ok "soon after, all $fetched of them are" wait_until 5 "" sh -c "test \"\$(find '$T/c2' -name '*.cacnk' | wc -l)\" -ge '$fetched'"
ok "... and some were ($fetched)" test "${fetched:-0}" -ge 5
mount_stop "unmount" "$mnt"
done_testing
