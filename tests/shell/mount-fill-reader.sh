#!/bin/bash
# mount-fill-reader.sh - a reader beside `cafs mount --fill`, over a real
# nginx and a real mount, seen through `cafs stats`' demand counters
# (demand_fetches: reads that fetched a chunk themselves; demand_joins and
# demand_join_wait_ms: reads that waited for a fetch under way; and the
# fill's background_waits):
#  - a sequential reader (tar of the whole mount) started with the fill:
#    every chunk is downloaded once (the nginx log), the data is right, the
#    fill completes, and the reader fetched few chunks itself;
#  - a read of a chunk the fill is downloading (slow server) waits for that
#    download (a join, with its wait time) instead of fetching it again;
#  - without a fill, a cold read fetches its chunks itself.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"
need python3 timeout

W=$T/www
src=$T/src
mkdir -p "$W" "$src/big" "$src/small"
for i in $(seq -w 0 23); do "$GEN" 512K $((10#$i + 900)) >"$src/big/f$i"; done
for i in $(seq -w 0 199); do printf 'small file %s\n' "$i" >"$src/small/s$i"; done
"$CAFS" make --store="$W/default.castr" "$W/img.caidx" "$src" >/dev/null || exit 1
n_chunks=$(find "$W/default.castr" -name '*.cacnk' | wc -l)

nginx_start "$W" || exit 1
U=$NGINX_URL
stat_of() { "$CAFS" stats "$1" | awk -v k="$2:" '$1 == k { print $2 }'; }
fill_is() { [ "$(stat_of "$1" fill)" = "$2" ]; }
gets() { nginx_log | awk '$2 ~ /\.cacnk$/' | wc -l; }
mnt=$T/mnt

nginx_log_reset
mount_start "mount --fill (cold cache)" "$mnt" "$T/log.tar" --cache="$T/c1" --profile=none --fill "$U/img.caidx"
mkdir -p "$T/out"
ok "a tar of the whole mount during the fill" sh -c "tar -cf - -C '$mnt' . | tar -xf - -C '$T/out'"
ok "... reads every file right" diff -r "$T/out" "$src"
ok "the fill completes" wait_until 60 "$MOUNT_PID" fill_is "$mnt" done
ok "every chunk was downloaded once ($n_chunks chunks)" test "$(gets)" = "$n_chunks"
ok "... as the stats count them" test "$(stat_of "$mnt" chunks_fetched)" = "$n_chunks"
ok "stats: demand counters are there" sh -c "'$CAFS' stats '$mnt' | grep -q '^demand_fetches: ' && '$CAFS' stats '$mnt' | grep -q '^demand_joins: ' && '$CAFS' stats '$mnt' | grep -q '^demand_join_wait_ms: ' && '$CAFS' stats '$mnt' | grep -q '^background_waits: '"
df=$(stat_of "$mnt" demand_fetches)
# the fill (6 workers) runs ahead of a single reader: most chunks reach it
# from the fill (or by joining its downloads), loose enough for a busy machine
ok "... the reader fetched few chunks itself ($df of $n_chunks)" test $((2 * df)) -lt "$n_chunks"
ok "... no read failed" test "$(stat_of "$mnt" read_errors)" = 0
mount_stop "unmount" "$mnt"

# slow transfers (20 KB/s each): the fill's first six downloads (its
# workers') take seconds each. The first file's bytes from 100000 on are
# past the first chunk and within those six (chunks are 16 KiB or more).
nginx_log_reset
mount_start "mount --fill (cold cache, slow server)" "$mnt" "$T/log.slow" --cache="$T/c2" --profile=none --fill --rate-limit-bps=20K "$U/img.caidx"
first=$(find "$src" -type f | sort | head -1)
first=${first#"$src"/}

rd() { dd if="$1" bs=4096 count=1 iflag=skip_bytes skip=100000 status=none; }
export -f rd
ok "a read of a chunk the fill is downloading" bash -c "cmp <(rd '$mnt/$first') <(rd '$src/$first')"
ok "... joined that download" test "$(stat_of "$mnt" demand_joins)" -ge 1
ok "... and waited for it" test "$(stat_of "$mnt" demand_join_wait_ms)" -gt 0
ok "... no chunk was downloaded twice" test "$(nginx_log | awk '$2 ~ /\.cacnk$/ { print $2 }' | sort | uniq -d | wc -l)" = 0
mount_stop "unmount (the downloads under way finish first)" "$mnt"

# without a fill: a cold read fetches its chunks itself (no background fill)
mount_start "mount without --fill" "$mnt" "$T/log.nofill" --cache="$T/c3" --profile=none "$U/img.caidx"
ok "a cold read" cmp "$mnt/$first" "$src/$first"
# its own reads bring the chunks in: a demand fetch, or a join of the
# download the mount's read-ahead for this reader started first (which
# of the two wins is a race: seen both ways)
ok "... fetched its chunks itself (or joined its read-ahead)" \
	test $(($(stat_of "$mnt" demand_fetches) + $(stat_of "$mnt" demand_joins))) -ge 1
ok "... stats has no fill" sh -c "! '$CAFS' stats '$mnt' | grep -q '^background_waits'"
mount_stop "unmount" "$mnt"

mount_done_testing
