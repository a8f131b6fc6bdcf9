#!/bin/bash
# mount-readahead.sh - a sequential reader of a blob mounted over HTTP
# finds its chunks decoded ahead by the chunk source's read-ahead threads
# (cafs stats: readahead_decoded), the data is right cold and warm, with a
# small LRU (at most half of it queued for decoding) and offline from the
# cache; the kernel reads in 1 MiB requests (as root, which may raise the
# mount's kernel readahead); and an unmount in the middle of a read-ahead
# stream stops its threads: the daemon exits 0 promptly.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"
need python3 timeout dd

W=$T/www
mkdir -p "$W"
"$GEN" 48M 7 mixed >"$T/blob.img"
"$CAFS" make --store="$W/default.castr" "$W/blob.caibx" "$T/blob.img" >/dev/null || exit 1
n_chunks=$("$CAFS" info "$W/blob.caibx" | sed -n 's/^Chunks: //p')
nginx_start "$W" || exit 1
U=$NGINX_URL
stat_of() { "$CAFS" stats "$1" | sed -n "s/^$2: //p"; }

mnt=$T/mnt
mount_start "cold blob mount over HTTP" "$mnt" "$T/log1" --cache="$T/cache" "$U/blob.caibx"
ok "a sequential read (dd bs=1M) is right" sh -c "dd if='$mnt/blob' bs=1M 2>/dev/null | cmp - '$T/blob.img'"
ra=$(stat_of "$mnt" readahead_decoded)
fetched=$(stat_of "$mnt" chunks_fetched)
# most chunks were made ready by the read-ahead threads, not by the readers
ok "read-ahead threads decoded most of the $fetched fetched chunks ($ra)" test "${ra:-0}" -ge $((fetched / 2))
ok "... with no errors" test "$(stat_of "$mnt" chunk_errors)" = 0
# root raises the mount's kernel readahead: 1 MiB requests, not 128 KiB ones
if [ "$(id -u)" = 0 ]; then
	reads=$(stat_of "$mnt" reads)
	ok "the kernel asked in 1 MiB reads ($reads for 48 MiB)" test "${reads:-999}" -le 60
fi
ok "random reads are right too" rand_reads "$mnt/blob" "$T/blob.img" 300 4
ok "a warm sequential read is right" cmp "$mnt/blob" "$T/blob.img"
mount_stop "unmount" "$mnt"

# an LRU too small for the window: at most half of it is queued for decoding
mount_start "mount with a 1 MiB LRU" "$mnt" "$T/log2" --no-cache --lru-size=1M "$U/blob.caibx"
ok "a sequential read is right" cmp "$mnt/blob" "$T/blob.img"
mount_stop "small LRU: unmount" "$mnt"

# offline: the read-ahead threads decode from the cache
mount_start "offline mount on the cache" "$mnt" "$T/log3" --cache="$T/cache" --offline "$U/blob.caibx"
ok "offline: a sequential read is right" cmp "$mnt/blob" "$T/blob.img"
ok "offline: decoded ahead from the cache" test "$(stat_of "$mnt" readahead_decoded)" -gt 0
mount_stop "offline: unmount" "$mnt"

# unmount while the threads have a long queue: they stop, the daemon exits
mount_start "mount for an unmount mid-stream" "$mnt" "$T/log4" --no-cache "$U/blob.caibx"
dd if="$mnt/blob" of=/dev/null bs=1M count=4 2>/dev/null
t0=$(date +%s.%N)
mount_stop "unmount with read-ahead queued: daemon exits 0" "$mnt"
ok "... within 10 s" awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { exit !(b - a < 10) }'
ok "... and said nothing" test ! -s "$T/log4"
echo "# $n_chunks chunks"

mount_done_testing
