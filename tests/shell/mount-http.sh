#!/bin/bash
# mount-http.sh - `cafs mount` over a real nginx on 127.0.0.1: lazy (one
# small file of a 100 MiB image costs a few chunks), the cache serves an
# --offline mount, a corrupt or missing chunk is EIO on its file only, a
# dead server fails reads quickly and a restarted one serves them again,
# parallel cold readers get the right data, blob images, bad SOURCE URLs;
# and extract of one directory over HTTP fetches only its chunks.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"
need python3 timeout

# The image: 50 x 2 MiB of noise, 8 x 1 MiB, two small files.
W=$T/www
src=$T/src
mkdir -p "$W" "$src/big" "$src/mid" "$src/other"
for i in $(seq -w 0 49); do "$GEN" 2M $((10#$i + 100)) >"$src/big/f$i"; done
for i in 0 1 2 3 4 5 6 7; do "$GEN" 1M $((i + 200)) >"$src/mid/m$i"; done
printf 'a small file\n' >"$src/other/a.txt"
printf 'another small file\n' >"$src/other/b.txt"
"$CAFS" make --store="$W/default.castr" "$W/img.caidx" "$src" >/dev/null || exit 1
n_chunks=$(find "$W/default.castr" -name '*.cacnk' | wc -l)
"$GEN" 6M 300 >"$T/disk.img"
"$CAFS" make --store="$W/default.castr" "$W/disk.caibx" "$T/disk.img" >/dev/null || exit 1

nginx_start "$W" || exit 1
U=$NGINX_URL
chunk_gets() { nginx_log | awk '$2 ~ /\.cacnk$/' | wc -l; }
# few, quick retries: the failure cases must not take long
export CAFS_HTTP_TIMEOUT=3 CAFS_HTTP_RETRIES=1

# extract of one directory: random access finds it, only its chunks come
nginx_log_reset
ok "extract of one directory over HTTP" "$CAFS" extract --cache="$T/xcache" "$U/img.caidx" "$T/other" other
ok "... equals the source's" diff -r "$src/other" "$T/other"
got=$(chunk_gets)
ok "... and fetched only a few of the $n_chunks chunks ($got)" test "$got" -ge 1 -a "$got" -le 8

mnt=$T/mnt
nginx_log_reset
mount_start "mount over HTTP (default store beside the index)" "$mnt" "$T/log1" --cache="$T/cache" "$U/img.caidx"
ok "one small file reads right" cmp "$mnt/other/a.txt" "$src/other/a.txt"
got=$(chunk_gets)
ok "... and cost only a few of the $n_chunks chunks ($got)" test "$got" -ge 1 -a "$got" -le 8
ok "a 2 MiB file reads right" cmp "$mnt/big/f07" "$src/big/f07"
"$CAFS" stats "$mnt" >"$T/stats1"
ok "stats: HTTP requests and fetched chunks" sh -c "grep -Eq '^http_requests: [1-9]' '$T/stats1' &&
	grep -Eq '^chunks_fetched: [1-9]' '$T/stats1' && grep -q '^http_errors: 0$' '$T/stats1'"
mount_stop "unmount, daemon exits 0" "$mnt"

# The same cache, offline: what was read is there, the rest is EIO.
nginx_log_reset
mount_start "offline mount on the same cache" "$mnt" "$T/log2" --offline --cache="$T/cache" "$U/img.caidx"
ok "offline: the file read before" cmp "$mnt/other/a.txt" "$src/other/a.txt"
ok "offline: the big file read before" cmp "$mnt/big/f07" "$src/big/f07"
ok "offline: a file never read is EIO" expect_errno EIO cat "$mnt/big/f30"
ok "offline: still mounted" is_mounted "$mnt"
ok "offline: no chunk was requested" test "$(chunk_gets)" = 0
mount_stop "offline: unmount" "$mnt"

# Which chunks hold a file's middle: read it cold and look at the log.
middle_chunk() {
	nginx_log_reset
	cat "$mnt/$1" >/dev/null
	nginx_log | awk '$2 ~ /\.cacnk$/ { print $2 }' | sed 's|.*/||; s|\.cacnk$||' >"$T/ids"
	sed -n "$(($(wc -l <"$T/ids") / 2))p" "$T/ids"
}
mount_start "mount to find the chunks of two files" "$mnt" "$T/log3" --no-cache --lru-size=0 "$U/img.caidx"
corrupt=$(middle_chunk big/f03)
missing=$(middle_chunk big/f05)
ok "... both read right while their chunks are there" sh -c "cmp '$mnt/big/f03' '$src/big/f03' &&
	cmp '$mnt/big/f05' '$src/big/f05'"
mount_stop "... unmount" "$mnt"
cp -a "$W/default.castr" "$W/bad.castr"
f=$(find "$W/bad.castr" -name "$corrupt.cacnk")
chmod u+w "$f" && "$GEN" 3000 5 >"$f"
rm -f "$(find "$W/bad.castr" -name "$missing.cacnk")"
ok "a corrupt and a missing chunk were picked" test -n "$corrupt" -a -n "$missing" -a "$corrupt" != "$missing"

mount_start "mount over a damaged store" "$mnt" "$T/log4" --no-cache --store="$U/bad.castr" "$U/img.caidx"
ok "corrupt chunk: its file is EIO" expect_errno EIO cat "$mnt/big/f03"
ok "missing chunk (404): its file is EIO" expect_errno EIO cat "$mnt/big/f05"
ok "the neighbours read right" sh -c "cmp '$mnt/big/f02' '$src/big/f02' && cmp '$mnt/big/f04' '$src/big/f04' &&
	cmp '$mnt/big/f06' '$src/big/f06'"
ok "still mounted after the errors" is_mounted "$mnt"
"$CAFS" stats "$mnt" >"$T/stats4"
ok "stats count the corrupt chunk and the 404" sh -c "grep -Eq '^corrupt_chunks: [1-9]' '$T/stats4' &&
	grep -Eq '^http_missing: [1-9]' '$T/stats4'"
ok "the errors are logged once per file" test "$(grep -c 'read of the entry' "$T/log4")" = 2
mount_stop "damaged: unmount" "$mnt"

# The server goes away: uncached reads fail after the deadline (soft,
# mount-outage.sh has the rest); it comes back: they work at once.
export CAFS_HTTP_DEADLINE=3
mount_start "mount for the outage" "$mnt" "$T/log5" --no-cache "$U/img.caidx"
ok "before the outage" cmp "$mnt/big/f10" "$src/big/f10"
nginx_stop
start=$(date +%s)
timeout 60 python3 -c 'import sys
try:
    open(sys.argv[1], "rb").read()
except OSError:
    sys.exit(0)
sys.exit(1)' "$mnt/big/f20"
rc=$?
took=$(($(date +%s) - start))
ok "server down: the read fails (rc $rc) within the deadline (${took}s)" test "$rc" = 0 -a "$took" -le 20
ok "server down: still mounted" is_mounted "$mnt"
# (not inside ok: its subshell would lose NGINX_PID, and the cleanup the server)
nginx_start "$W" "${U##*:}"
_tap "server back on the same port" $?
# (no failure is remembered: the first read after the server is back goes to it)
ok "server back: the same file reads right" \
	wait_until 15 "" cmp -s "$mnt/big/f20" "$src/big/f20"
mount_stop "outage: unmount" "$mnt"
unset CAFS_HTTP_DEADLINE

# Eight readers at once on a cold mount: different files and the same one.
mount_start "cold mount for parallel readers" "$mnt" "$T/log6" --no-cache "$U/img.caidx"
par() {
	local pids=() i rc=0
	for i in 0 1 2 3 4 5 6 7; do
		cmp "$mnt/mid/m$i" "$src/mid/m$i" &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || rc=1; done
	pids=()
	for i in 0 1 2 3 4 5 6 7; do
		cmp "$mnt/big/f33" "$src/big/f33" &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || rc=1; done
	return $rc
}
ok "8 parallel readers of 8 files, then of one file: all right" par
ok "parallel: 300 random reads" rand_reads "$mnt/big/f41" "$src/big/f41" 300 3
mount_stop "parallel: unmount" "$mnt"

# A blob image over HTTP.
mount_start "blob mount over HTTP" "$mnt" "$T/log7" --no-cache "$U/disk.caibx"
ok "blob over HTTP: content" cmp "$mnt/disk" "$T/disk.img"
ok "blob over HTTP: random reads" rand_reads "$mnt/disk" "$T/disk.img" 300 4
mount_stop "blob over HTTP: unmount" "$mnt"

# Bad SOURCE URLs: one line, exit 1, nothing mounted.
mkdir -p "$T/m3"
mount_err() {
	local rc=0
	timeout 60 "$CAFS" mount "$@" "$T/m3" >"$T/err.out" 2>&1 || rc=$?
	[ "$rc" = 1 ] && [ "$(wc -l <"$T/err.out")" = 1 ] && grep -q '^cafs: ' "$T/err.out" &&
		! is_mounted "$T/m3" || { cat "$T/err.out"; echo "exit $rc"; return 1; }
}
ok "404 index: one line, exit 1" mount_err "$U/nope.caidx"
head -c 200 "$W/img.caidx" >"$W/trunc.caidx"
ok "corrupt index: one line, exit 1" mount_err "$U/trunc.caidx"
ok "no server: one line, exit 1" mount_err "http://127.0.0.1:1/img.caidx"
ok "same in the foreground" mount_err -f "$U/nope.caidx"

mount_done_testing
