#!/bin/bash
# bench/ctr-ab.sh - A/B of cafs binaries on bench/minbase.sh's container
# start without a profile (issue 24 goal 2), interleaved in one run: each
# round starts the container once per binary (in turn), each on a fresh
# mount (page cache dropped, empty --cache dir, `ls MNT` first: only the
# crun run is timed), and once from the plain dir (warm). Prints every
# time, then the best and the median of each, and the ratio to the plain
# dir's best; with CTR_AB_STATS=1 also `cafs stats` of each start; with
# CTR_AB_WARM_SERVER=1 the store's files are read back into the page cache
# after it is dropped (what the start costs beside nginx's cold disk reads);
# with CTR_AB_LOGS=DIR each mount's output is kept there (mount.K.ROUND.log);
# with CTR_AB_PERF=DIR a perf record of the mount during each start is.
#
#   CAFS_A=old/cafs CAFS_B=new/cafs BENCH_CTR_RUNS=10 bench/ctr-ab.sh
#
# Image as bench/minbase.sh (BENCH_ROOTFS, else BENCH_CACHE/minbase-bookworm,
# which must exist: run bench/minbase.sh once to build it). The store is
# made by CAFS_A. Needs root, nginx, fusermount3, crun, overlayfs.
set -u
export LC_ALL=C
RUNS=${BENCH_CTR_RUNS:-10}
CAP=${BENCH_CAP:-60}
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "$here/.." && pwd)
die() { echo "bench/ctr-ab.sh: $*" >&2; exit 1; }
bins=()
for v in CAFS_A CAFS_B CAFS_C CAFS_D CAFS_E; do
	[ -n "${!v:-}" ] || continue
	b=$(cd "$(dirname "${!v}")" && pwd)/$(basename "${!v}")
	[ -x "$b" ] || die "$v: no binary at ${!v}"
	bins+=("$b")
done
[ ${#bins[@]} -gt 0 ] || die "set CAFS_A (and CAFS_B .. CAFS_E)"
img=${BENCH_ROOTFS:-${BENCH_CACHE:-${BENCH_DIR:-/var/tmp}/cafs-bench-cache}/minbase-bookworm}
[ -x "$img/bin/sh" ] || die "no root file system at $img"
. "$here/workdir.sh"
bench_workdir ctrab || die "cannot make a work dir"
need() { :; }
. "$top_srcdir/tests/lib-http.sh"
. "$top_srcdir/tests/lib-crun.sh"
cd "$T" || exit 1
mkdir -p www
cp -a "$img/." plain/ || die "cannot copy $img"
"${bins[0]}" make --store=www/default.castr www/minbase.caidx plain >/dev/null || die "cafs make failed"
nginx_start "$T/www" || die "nginx did not start"
U=$NGINX_URL
export CRUN_ROOT _crun_hybrid
export -f _crun
echo "# bench/ctr-ab.sh: $(date -u +%H:%M:%SZ), load $(cut -d' ' -f1-3 /proc/loadavg), $RUNS rounds"

mnt_pid= mnt_dir=
cleanup_mnt() { [ -n "$mnt_dir" ] && fusermount3 -u -z "$mnt_dir"; [ -n "$mnt_pid" ] && kill "$mnt_pid" && wait "$mnt_pid"; }
at_cleanup cleanup_mnt
n=0
# start LOWER: one container start over an overlay of LOWER; its time in t
start() {
	n=$((n + 1))
	local o=$T/ovl.$n t0 rc=0
	mkdir -p "$o/upper" "$o/work" "$o/merged"
	mount -t overlay overlay -o "lowerdir=$1,upperdir=$o/upper,workdir=$o/work" "$o/merged" || die "overlayfs"
	crun_bundle "$T/bundle.$n" "$o/merged" sh -c 'echo; cat /etc/os-release' || die "crun spec failed"
	t0=$(now)
	timeout "$CAP" bash -c '"$@"' bash _crun run --bundle="$T/bundle.$n" "ctr.$n" >"$T/out" 2>"$T/err" </dev/null || rc=$?
	t=$(since "$t0")
	crun --root="$CRUN_ROOT" delete -f "ctr.$n" >/dev/null 2>&1
	umount "$o/merged" || umount -l "$o/merged"
	rm -rf "$o" "$T/bundle.$n"
	{ [ "$rc" = 0 ] && { echo; cat plain/etc/os-release; } | cmp -s - "$T/out"; } || { t=FAILED; head -c 300 "$T/err" >&2; }
}
# cpu_ms PID: the user + system time so far of PID and its children (a
# keeper's server), in ms
cpu_ms() {
	local p t=0
	for p in $1 $(pgrep -P "$1"); do
		t=$((t + $(awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print int(($12 + $13) * 1000 / hz) }' "/proc/$p/stat" 2>/dev/null || echo 0)))
	done
	echo "$t"
}
declare -A times=()
for ((round = 0; round < RUNS; round++)); do
	for ((k = 0; k < ${#bins[@]}; k++)); do
		m=$T/mnt
		mkdir -p "$m"
		drop_caches
		# the server's disk out of the figure: its chunk files read back in
		[ -n "${CTR_AB_WARM_SERVER:-}" ] && find www -type f -exec cat {} + >/dev/null
		rm -rf "$T/cache"
		"${bins[$k]}" mount -f --cache="$T/cache" "$U/minbase.caidx" "$m" >"$T/mount.log" 2>&1 &
		mnt_pid=$! mnt_dir=$m
		for ((i = 0; i < 3000; i++)); do
			[ -n "$(ls "$m" 2>/dev/null)" ] && break
			sleep 0.01
		done
		[ -n "${CTR_AB_STATS:-}" ] && s0=$("${bins[$k]}" stats "$m" 2>/dev/null)
		c0=$(cpu_ms "$mnt_pid")
		if [ -n "${CTR_AB_PERF:-}" ]; then
			perf record -q -g -o "$CTR_AB_PERF/perf.$k.$round" -p "$(echo $mnt_pid $(pgrep -P "$mnt_pid") | tr ' ' ,)" 2>/dev/null &
			perf_pid=$!
			sleep 0.5
		fi
		start "$m"
		c1=$(cpu_ms "$mnt_pid")
		[ -n "${CTR_AB_PERF:-}" ] && { kill -INT "$perf_pid"; wait "$perf_pid"; }
		times[$k]+=" $t"
		if [ -n "${CTR_AB_STATS:-}" ]; then
			echo "## ${bins[$k]} round $round: $t s, the mount's cpu $((c1 - c0)) ms"
			diff <(echo "$s0") <("${bins[$k]}" stats "$m" 2>/dev/null) | grep '^>' | head -60
		fi
		fusermount3 -u "$m" 2>/dev/null || fusermount3 -u -z "$m"
		wait "$mnt_pid" 2>/dev/null
		mnt_pid= mnt_dir=
		[ -n "${CTR_AB_LOGS:-}" ] && cp "$T/mount.log" "$CTR_AB_LOGS/mount.$k.$round.log"
	done
	start "$T/plain"
	times[p]+=" $t"
done
summary() { tr ' ' '\n' | grep -E '^[0-9.]+$' | sort -n | awk '{ a[NR] = $1 } END { printf "%s %s", a[1], a[int((NR + 1) / 2)] }'; }
read -r pb pm < <(echo "${times[p]}" | summary)
echo "plain dir (warm):$(echo "${times[p]}") -> best $pb, median $pm"
for ((k = 0; k < ${#bins[@]}; k++)); do
	read -r b md < <(echo "${times[$k]}" | summary)
	echo "${bins[$k]}:${times[$k]} -> best $b ($(awk -v a="$b" -v p="$pb" 'BEGIN { printf "%.2fx", a / p }') plain), median $md ($(awk -v a="$md" -v p="$pm" 'BEGIN { printf "%.2fx", a / p }') plain)"
done
echo "# load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
