#!/bin/bash
# bench/blob-http.sh - a blob over HTTP: the cold sequential read of a
# mounted blob (`dd bs=1M`), beside `cafs extract` and `casync extract` of
# the same blob from the same nginx on 127.0.0.1, in one run.
#
# Input: `gen-data SIZE 3 mixed` (see bench/blob.sh), `cafs make` into a
# store served by nginx (one worker, as tests/lib-http.sh starts it).
# Every run is cold: page cache dropped, a fresh mount with an empty
# --cache dir (cafs), no chunk cache (extract). Output is checked (cmp).
#
#   dd cold        `dd if=MNT/blob of=/dev/null bs=1M` on a fresh mount
#   cafs extract   `cafs extract --store=URL URL/blob.caibx FILE`
#   casync extract `casync extract --store=URL URL/blob.caibx FILE`
#
# A/B: CAFS_B=path/to/other/cafs adds that binary's rows, run interleaved
# with CAFS's (A B A B ...) so a busy machine weighs on both alike; each
# figure is the best of BENCH_RUNS (default 3) runs, the median in brackets.
# The mount process's CPU (user+sys s, from /proc) is shown for dd.
#
#   bench/blob-http.sh                           (1 GiB, about 3 minutes)
#   BENCH_SIZE=256M BENCH_RUNS=1 bench/blob-http.sh
#   CAFS=./cafs CAFS_B=/work/old/build/cafs bench/blob-http.sh
#
# Env: CAFS (default ./cafs), CAFS_B, GEN_DATA (default tests/gen-data
# beside CAFS), BENCH_DIR (parent of the work dir, default /var/tmp;
# removed at exit), BENCH_SIZE (default 1G), BENCH_RUNS (default 3),
# BENCH_CASYNC (default 1; 0 skips casync). Needs root (drop_caches, FUSE),
# nginx, fusermount3, python3, casync.
set -u
export LC_ALL=C
CAFS=${CAFS:-./cafs}
CAFS=$(cd "$(dirname "$CAFS")" && pwd)/$(basename "$CAFS")
CAFS_B=${CAFS_B:-}
[ -n "$CAFS_B" ] && CAFS_B=$(cd "$(dirname "$CAFS_B")" && pwd)/$(basename "$CAFS_B")
GEN=${GEN_DATA:-$(dirname "$CAFS")/tests/gen-data}
GEN=$(cd "$(dirname "$GEN")" && pwd)/$(basename "$GEN")
SIZE=${BENCH_SIZE:-1G}
RUNS=${BENCH_RUNS:-3}
CASYNC=${BENCH_CASYNC:-1}
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "$here/.." && pwd)

die() { echo "bench/blob-http.sh: $*" >&2; exit 1; }
[ -x "$CAFS" ] || die "no cafs binary at $CAFS (set CAFS)"
[ -z "$CAFS_B" ] || [ -x "$CAFS_B" ] || die "no cafs binary at $CAFS_B (CAFS_B)"
[ -x "$GEN" ] || die "no gen-data at $GEN (run make in the build dir, or set GEN_DATA)"
for c in nginx fusermount3 python3; do command -v $c >/dev/null || die "$c is not installed"; done
[ "$CASYNC" = 0 ] || command -v casync >/dev/null || die "casync is not installed (BENCH_CASYNC=0 skips it)"
[ -w /proc/sys/vm/drop_caches ] || die "cannot drop the page cache (run as root)"

. "$here/workdir.sh"
bench_workdir blob-http || die "cannot make a work dir"
need() { :; }
. "$top_srcdir/tests/lib-http.sh"
cd "$T" || exit 1

echo "# bench/blob-http.sh: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs ($(lscpu | sed -n 's/^Model name: *//p' | head -n 1)), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# A: $CAFS ($("$CAFS" --version))"
[ -n "$CAFS_B" ] && echo "# B: $CAFS_B ($("$CAFS_B" --version))"
mkdir -p www
"$GEN" "$SIZE" 3 mixed >blob || die "gen-data failed"
"$CAFS" make --store=www/default.castr www/blob.caibx blob >/dev/null || die "cafs make of the blob failed"
bytes=$(stat -c %s blob)
echo "# blob: $bytes bytes (gen-data $SIZE 3 mixed), store $(du -sb www/default.castr | cut -f1) bytes, $("$CAFS" info www/blob.caibx | sed -n 's/^Chunks: //p') chunks"
nginx_start "$T/www" || die "nginx did not start"
U=$NGINX_URL

mnt_pid= mnt=$T/mnt
mnt_cleanup() {
	[ -n "$mnt_pid" ] || return 0
	fusermount3 -u -z "$mnt" || umount -l "$mnt"
	kill "$mnt_pid"
	wait "$mnt_pid"
}
at_cleanup mnt_cleanup
mkdir -p "$mnt"

# cpu_of PID: user+sys seconds of a live process and its live children (the
# mount command is the keeper; the server, which does the work, is its child)
cpu_of() {
	local p
	for p in "$1" $(pgrep -P "$1"); do cat "/proc/$p/stat" 2>/dev/null; done |
		awk -v hz="$(getconf CLK_TCK)" '{ s += $14 + $15 } END { printf "%.2f", s / hz }'
}

declare -A R=() CPU=()
# add KEY VALUE: one more figure for KEY
add() { R[$1]="${R[$1]:-} $2"; }

run_dd() { # LABEL BIN
	local label=$1 bin=$2 t0 i
	rm -rf "$T/cache"
	drop_caches
	"$bin" mount -f --cache="$T/cache" --store="$U/default.castr" "$U/blob.caibx" "$mnt" >"$T/mount.log" 2>&1 &
	mnt_pid=$!
	for ((i = 0; i < 1000; i++)); do
		[ -e "$mnt/blob" ] && break
		kill -0 "$mnt_pid" 2>/dev/null || { cat "$T/mount.log" >&2; die "$label: the mount did not come up"; }
		sleep 0.01
	done
	t0=$(now)
	dd if="$mnt/blob" of=/dev/null bs=1M 2>/dev/null || die "$label: dd failed"
	add "$label.dd" "$(since "$t0")"
	CPU[$label.dd]="${CPU[$label.dd]:-} $(cpu_of "$mnt_pid")"
	cmp -s "$mnt/blob" blob || die "$label: the mounted blob differs"
	fusermount3 -u "$mnt" || fusermount3 -u -z "$mnt"
	wait "$mnt_pid"
	mnt_pid=
}
run_extract() { # LABEL BIN
	local label=$1 bin=$2 t0
	rm -f "$T/out"
	drop_caches
	t0=$(now)
	"$bin" extract --store="$U/default.castr" "$U/blob.caibx" "$T/out" >/dev/null 2>"$T/extract.err" ||
		{ cat "$T/extract.err" >&2; die "$label: extract failed"; }
	add "$label.extract" "$(since "$t0")"
	cmp -s "$T/out" blob || die "$label: the extracted blob differs"
	rm -f "$T/out"
}

for ((run = 0; run < RUNS; run++)); do
	run_dd A "$CAFS"
	[ -n "$CAFS_B" ] && run_dd B "$CAFS_B"
	run_extract A "$CAFS"
	[ -n "$CAFS_B" ] && run_extract B "$CAFS_B"
	[ "$CASYNC" = 0 ] || run_extract casync casync
done
nginx_stop

# best and median of a list of seconds
stat_of() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{ v[NR] = $1 } END { printf "%s %s", v[1], v[int((NR + 1) / 2)] }'; }
row() { # NAME KEY
	[ -n "${R[$2]:-}" ] || return 0
	local best med cpu=
	read -r best med <<<"$(stat_of "${R[$2]}")"
	[ -n "${CPU[$2]:-}" ] && cpu=$(tr ' ' '\n' <<<"${CPU[$2]}" | grep . | sort -g | head -n 1)
	printf '%-26s %8s %8s %9s %9s %8s\n' "$1" "$best" "$med" \
		"$(awk -v b="$bytes" -v t="$best" 'BEGIN { printf "%.0f", b / t / 1e6 }')" \
		"$(awk -v b="$bytes" -v t="$med" 'BEGIN { printf "%.0f", b / t / 1e6 }')" "${cpu:--}"
}
echo
printf '%-26s %8s %8s %9s %9s %8s\n' "cold, over HTTP" "best s" "median" "MB/s" "(median)" "CPU s"
row "dd of the mounted blob A" A.dd
row "dd of the mounted blob B" B.dd
row "cafs extract A" A.extract
row "cafs extract B" B.extract
row "casync extract" casync.extract
echo "# $RUNS run(s) each; CPU: the mount process's user+sys over the whole mount, least of the runs; load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
