#!/bin/bash
# mount-fill.sh - `cafs mount --fill` over a real nginx and a real mount:
# the whole image comes into the cache in the background, with its
# progress in `cafs stats`; a demand read during the fill is served at
# once (the fill gives way to it); once stats says done, the server can
# go: every file reads right, and an --offline mount of the cache works.
# Without a cache, or for a .catar, --fill is refused in one line.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"
need python3 timeout

W=$T/www
src=$T/src
mkdir -p "$W" "$src/big" "$src/zz"
for i in $(seq -w 0 39); do "$GEN" 512K $((10#$i + 700)) >"$src/big/f$i"; done
printf 'the last small file\n' >"$src/zz/last"
"$CAFS" make --store="$W/default.castr" "$W/img.caidx" "$src" >/dev/null || exit 1
"$CAFS" make --store="$W/default.castr" "$W/img.catar" "$src/zz" >/dev/null || exit 1
n_chunks=$(find "$W/default.castr" -name '*.cacnk' | wc -l)

nginx_start "$W" || exit 1
U=$NGINX_URL
stat_of() { "$CAFS" stats "$1" | awk -v k="$2:" '$1 == k { print $2 }'; }
fill_is() { [ "$(stat_of "$1" fill)" = "$2" ]; }
mnt=$T/mnt

# refused DESC PATTERN CMD...: CMD fails (not by a signal) saying PATTERN in
# one line (and perhaps where to find help)
refused() {
	local desc=$1 pat=$2 rc=0 out
	shift 2
	out=$("$@" 2>&1) || rc=$?
	ok "$desc" sh -c '[ "$1" -ne 0 ] && [ "$1" -lt 128 ] && [ "$(printf "%s\n" "$2" | grep -vc "^Try ")" = 1 ] && printf "%s\n" "$2" | grep -q -- "$3" || { echo "exit $1: $2"; false; }' _ "$rc" "$out" "$pat"
}
mkdir -p "$mnt"
refused "--fill without a cache is refused" "needs a chunk cache" timeout 10 "$CAFS" mount -f --fill --no-cache "$U/img.caidx" "$mnt"
refused "--fill of a .catar is refused" "need an index" timeout 10 "$CAFS" mount -f -o fill "$U/img.catar" "$mnt"
ok "... nothing mounted" sh -c "! grep -q ' $mnt ' /proc/self/mountinfo"

# slow transfers (1 MB/s each), so that the fill is seen running
mount_start "mount --fill (cold cache, slow server)" "$mnt" "$T/log.fill" --cache="$T/c1" --fill --rate-limit-bps=1M "$U/img.caidx"
ok "stats: the fill is running" fill_is "$mnt" running
ok "... with the image's chunk count" test "$(stat_of "$mnt" fill_chunks)" -ge "$n_chunks"
ok "... and its size" test "$(stat_of "$mnt" fill_bytes)" -ge $((40 * 512 * 1024))
ok "... some done, not all" sh -c "d=\$('$CAFS' stats '$mnt' | awk '\$1 == \"fill_chunks_done:\" { print \$2 }'); test \"\$d\" -lt $n_chunks"
# a read the fill has not reached (the last file in index order): served at once
start=$(date +%s%N)
ok "a demand read during the fill" grep -qx 'the last small file' "$mnt/zz/last"
ms=$((($(date +%s%N) - start) / 1000000))
ok "... completes quickly (${ms} ms)" test "$ms" -lt 1500
ok "... while the fill still runs" fill_is "$mnt" running
ok "... whose progress grows" sh -c "a=\$('$CAFS' stats '$mnt' | awk '\$1 == \"fill_bytes_done:\" { print \$2 }'); sleep 0.5; b=\$('$CAFS' stats '$mnt' | awk '\$1 == \"fill_bytes_done:\" { print \$2 }'); test \"\$b\" -gt \"\$a\""
ok "stats says done" wait_until 120 "$MOUNT_PID" fill_is "$mnt" done
ok "... every chunk" test "$(stat_of "$mnt" fill_chunks_done)" = "$(stat_of "$mnt" fill_chunks)"
ok "... every byte" test "$(stat_of "$mnt" fill_bytes_done)" = "$(stat_of "$mnt" fill_bytes)"
ok "... no errors" test "$(stat_of "$mnt" background_errors)" = 0
nginx_stop
ok "with the server gone, every file reads right" diff -r "$mnt" "$src"
ok "... and nothing failed" test "$(stat_of "$mnt" read_errors)" = 0
mount_stop "unmount" "$mnt"
mount_start "an --offline mount of the filled cache" "$mnt" "$T/log.off" --cache="$T/c1" --offline "$U/img.caidx"
ok "... reads every file right" diff -r "$mnt" "$src"
mount_stop "unmount" "$mnt"

# -o fill (fstab), on a warm cache: done at once, nothing to fetch
nginx_start "$W" || exit 1
U=$NGINX_URL
nginx_log_reset
mount_start "-o fill on a filled cache" "$mnt" "$T/log.o" -o fill,cache="$T/c1" "$U/img.caidx"
ok "... done" wait_until 20 "$MOUNT_PID" fill_is "$mnt" done
ok "... without a chunk download" test "$(nginx_log | awk '$2 ~ /\.cacnk$/' | wc -l)" = 0
mount_stop "unmount" "$mnt"
mount_start "without --fill" "$mnt" "$T/log.nofill" --cache="$T/c2" "$U/img.caidx"
ok "... stats has no fill" sh -c "! '$CAFS' stats '$mnt' | grep -q '^fill'"
mount_stop "unmount" "$mnt"

mount_done_testing
