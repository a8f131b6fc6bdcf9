#!/bin/bash
# bench/minbase.sh - issue 11's table in one run: casync's mount and cafs's
# side by side on a Debian bookworm minbase root file system, both reading
# the same store from one nginx on 127.0.0.1.
#
# Image: BENCH_ROOTFS (a directory), else a debootstrap minbase built once
# into BENCH_CACHE/minbase-bookworm (kept across runs; BENCH_CACHE default
# BENCH_DIR/cafs-bench-cache) with
#   debootstrap --variant=minbase bookworm DIR BENCH_MIRROR
# (BENCH_MIRROR default: the first http URI of apt's sources, else
# http://deb.debian.org/debian). It is copied into the work dir (the
# "plain dir") and `cafs make`d into a store there.
#
# Every "cold" figure is on a fresh mount after `sync; echo 3 >
# /proc/sys/vm/drop_caches`, with an empty --cache dir for cafs (casync
# keeps chunks in a fresh /var/tmp/*.carem of its own per mount). "warm" is
# the same command again on the same mount, best of BENCH_WARM_RUNS (3).
# A container start is the best of BENCH_CTR_RUNS (3), each on a fresh mount.
# Every timed step's user and system time (the command's) is kept; the
# metadata and tar rows print them.
# Rows (issue 11):
#   mount + first ls      from the mount command until `ls MNT` lists the root
#   cold find | wc -l     right after: seconds, % of the store's bytes fetched, GETs
#   warm find             same mount, vs the plain dir (warm)
#   warm ls -lR, stat     `ls -lR` and `find | xargs stat` of every entry, the same way
#                         (cafs only; the FUSE requests they left are printed at the end)
#   cold tar              `tar -cf - -C MNT . | cat >/dev/null` on a fresh mount: MB/s
#                         of tree bytes, and its time / the warm tar's
#   warm tar              vs the plain dir's
#   container start       crun runs `sh -c 'echo; cat /etc/os-release'` with
#                         root.path = an overlayfs (upper in the work dir) over a
#                         fresh mount (mounted and listed first: the start alone is
#                         timed), and over the plain dir (cold: page cache dropped;
#                         warm). GETs are the container's.
#   ... at RTT            the same through bench/lagproxy.py adding BENCH_RTT_MS
#                         (20) per round trip; "round trips" = (time - the plain
#                         dir's cold time) / RTT
#   offline by URL        `cafs cache fill --cache C URL`, nginx stopped,
#                         `cafs mount --offline --cache C URL MNT`, then a tar of it
# When this cafs has them (`cafs help mount`), also:
#   cold tar with --fill  (goal: within 2.5x of the warm tar, or >= 70% of the
#                         throughput of `cafs extract` of the image from the same
#                         nginx, the row after it)
#   container with --profile  a profile recorded (--record-profile) at one
#                         container start, replayed (--profile) on a fresh mount
#
#   bench/minbase.sh      (about 10 minutes; debootstrap adds 1-2 the first time)
#
# Env: CAFS (default ./cafs), BENCH_ROOTFS, BENCH_CACHE, BENCH_MIRROR,
# BENCH_DIR (parent of the work dir, default /var/tmp; removed at exit),
# BENCH_CAP (a casync step's cap, default 240 s), BENCH_WARM_RUNS (3), BENCH_CTR_RUNS (3),
# BENCH_RTT_MS (20; 0 skips those rows), BENCH_CASYNC (1; 0 leaves casync's rows out: an A/B
# run of two cafs binaries), BENCH_ROWS (all; else the groups named, of: mount (cold/warm
# metadata, tar, container), plain, fill (cold tar --fill, cafs extract), profile, rtt,
# offline (cache fill, offline mount): e.g. BENCH_ROWS="fill offline" BENCH_CASYNC=0
# BENCH_RTT_MS=0, about a minute, for A/B runs of the cold read path), BENCH_ONLY (ctr: of
# those, only the container rows, with and without a profile, and the plain dir's). Needs root (drop_caches, FUSE,
# overlayfs, crun), casync, nginx, fusermount3, crun, python3, and
# debootstrap unless the image is there. Not part of make check.
set -u
export LC_ALL=C
CAFS=${CAFS:-./cafs}
CAFS=$(cd "$(dirname "$CAFS")" && pwd)/$(basename "$CAFS")
CAP=${BENCH_CAP:-240}
WARM=${BENCH_WARM_RUNS:-3}
CTR_RUNS=${BENCH_CTR_RUNS:-3}
RTT=${BENCH_RTT_MS:-20}
TOOLS="casync cafs"
[ "${BENCH_CASYNC:-1}" = 0 ] && TOOLS=cafs
# rows GROUP: whether BENCH_ROWS asks for GROUP's rows (all when unset)
rows() { [ -z "${BENCH_ROWS:-}" ] || [[ " $BENCH_ROWS " == *" $1 "* ]]; }
rows mount || TOOLS=
ONLY=${BENCH_ONLY:-}
case $ONLY in '' | ctr) ;; *) echo "bench/minbase.sh: BENCH_ONLY: only ctr is known" >&2; exit 1 ;; esac
rows rtt || RTT=0
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "$here/.." && pwd)

die() { echo "bench/minbase.sh: $*" >&2; exit 1; }
[ -x "$CAFS" ] || die "no cafs binary at $CAFS (set CAFS)"
for c in casync nginx fusermount3 crun python3 timeout unshare; do command -v $c >/dev/null || die "$c is not installed"; done
[ -w /proc/sys/vm/drop_caches ] || die "cannot drop the page cache (run as root)"
[ -c /dev/fuse ] || die "no /dev/fuse"
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || die "no overlayfs"

# ---- the image, built once ----
img=${BENCH_ROOTFS:-}
if [ -z "$img" ]; then
	cache=${BENCH_CACHE:-${BENCH_DIR:-/var/tmp}/cafs-bench-cache}
	img=$cache/minbase-bookworm
	if [ ! -d "$img" ]; then
		command -v debootstrap >/dev/null || die "no $img and no debootstrap (apt-get install debootstrap, or set BENCH_ROOTFS)"
		mirror=${BENCH_MIRROR:-$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
			awk '$1 == "deb" && $2 ~ /^http/ && $3 == "bookworm" { print $2; exit }')}
		[ -n "$mirror" ] || mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
			awk '/^URIs:/ && $2 ~ /debian\/?$/ { print $2; exit }')
		mirror=${mirror:-http://deb.debian.org/debian}
		echo "# building $img: debootstrap --variant=minbase bookworm $mirror" >&2
		mkdir -p "$cache" && rm -rf "$img.tmp" &&
			debootstrap --variant=minbase bookworm "$img.tmp" "$mirror" >"$cache/debootstrap.log" 2>&1 &&
			mv "$img.tmp" "$img" ||
			die "debootstrap failed (log: $cache/debootstrap.log); set BENCH_ROOTFS to a root file system instead"
	fi
fi
[ -x "$img/bin/sh" ] && [ -r "$img/etc/os-release" ] || die "$img has no /bin/sh or /etc/os-release: not a root file system"

. "$here/workdir.sh"
bench_workdir minbase || die "cannot make a work dir"
need() { :; }
. "$top_srcdir/tests/lib-http.sh"
. "$top_srcdir/tests/lib-crun.sh"
cd "$T" || exit 1

echo "# bench/minbase.sh: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs ($(lscpu | sed -n 's/^Model name: *//p' | head -n 1)), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# cafs: $("$CAFS" --version)  casync: $(casync --version 2>&1 | head -n 1), crun $(crun --version | sed -n 's/^crun version //p'), kernel $(uname -r)"
mkdir -p www
cp -a "$img/." plain/ || die "cannot copy $img"
entries=$(find plain | wc -l)
tree_bytes=$(du -sb --apparent-size plain | cut -f1)
"$CAFS" make --store=www/default.castr www/minbase.caidx plain >/dev/null || die "cafs make failed"
chunks=$(find www/default.castr -name '*.cacnk' | wc -l)
store=$(find www/default.castr -name '*.cacnk' -printf '%s\n' | awk '{ s += $1 } END { print s }')
meta=$(stat -c %s www/minbase.caidx.cameta 2>/dev/null || echo 0)
echo "# image: $img, $entries entries, $((tree_bytes >> 20)) MiB; store $(awk -v s="$store" 'BEGIN { printf "%.1f", s / 1048576 }') MiB in $chunks chunks; sidecar $((meta >> 10)) KiB"

nginx_start "$T/www" || die "nginx did not start"
U=$NGINX_URL
has_opt() { "$CAFS" help mount 2>&1 | grep -q -- "$1"; }

# ---- mounts (one at a time) ----
# mnt_start TOOL URL MNT [CAFS-OPTION...]: start TOOL's mount of URL's
# minbase.caidx in the background; cold (page cache dropped, fresh cache
# dir, nginx log emptied). mnt_pid is cleared once reaped, so the exit trap
# never signals a PID that may have been reused.
mnt_n=0 mnt_pid= mnt_dir=
mnt_cleanup() {
	[ -n "$mnt_dir" ] || return 0
	fusermount3 -u -z "$mnt_dir" || umount -l "$mnt_dir"
	if [ -n "$mnt_pid" ]; then
		kill "$mnt_pid"
		wait "$mnt_pid"
	fi
}
at_cleanup mnt_cleanup
mnt_start() {
	local tool=$1 url=$2 mnt=$3
	shift 3
	mnt_n=$((mnt_n + 1))
	mkdir -p "$mnt"
	drop_caches
	nginx_log_reset
	mnt_t0=$(now)
	if [ "$tool" = cafs ]; then
		"$CAFS" mount -f --cache="$T/cache.$mnt_n" "$@" "$url/minbase.caidx" "$mnt" >"$T/mount.$mnt_n.log" 2>&1 &
	else
		casync mount --store="$url/default.castr" "$url/minbase.caidx" "$mnt" >"$T/mount.$mnt_n.log" 2>&1 &
	fi
	mnt_pid=$!
	mnt_dir=$mnt
	local i
	for ((i = 0; i < 6000; i++)); do
		if [ -n "$(ls "$mnt" 2>/dev/null)" ]; then
			mnt_ls_s=$(since "$mnt_t0")
			mnt_ls_gets=$(gets)
			return 0
		fi
		kill -0 "$mnt_pid" 2>/dev/null || break
		sleep 0.01
	done
	cat "$T/mount.$mnt_n.log" >&2
	die "$tool mount of $url did not come up"
}
mnt_stop() {
	local i
	fusermount3 -u "$mnt_dir" 2>/dev/null || fusermount3 -u -z "$mnt_dir" 2>/dev/null
	for ((i = 0; i < 600; i++)); do
		kill -0 "$mnt_pid" 2>/dev/null || break
		sleep 0.05
	done
	kill "$mnt_pid" 2>/dev/null # still our unreaped child at worst: no reuse
	wait "$mnt_pid" 2>/dev/null
	mnt_pid=
	is_mounted "$mnt_dir" && umount -l "$mnt_dir"
	mnt_dir=
}

# ---- measuring: timed, best (workdir.sh) ----
# gets: the store's chunks fetched since the last nginx_log_reset
gets() { nginx_log | awk -v s="$store" '$2 ~ /\.cacnk$/ { n++; b += $4 } END { printf "%.1f%% of the store, %d GETs", 100 * b / s, n }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.1fx", a / b; else print "-" }'; }
mbs() { awk -v b="$1" -v t="$2" 'BEGIN { if (t ~ /^[0-9.]+$/ && t > 0) printf "%.0f MB/s", b / t / 1e6; else print t }'; }
secs() { case $1 in [0-9]*) echo "$1 s" ;; *) echo "$1" ;; esac; }

# overlay LOWER: an overlayfs over LOWER, upper and work in the work dir; sets ovl
ovl_n=0
overlay_up() {
	ovl_n=$((ovl_n + 1))
	ovl=$T/ovl.$ovl_n
	mkdir -p "$ovl/upper" "$ovl/work" "$ovl/merged"
	at_cleanup "umount -l '$ovl/merged'"
	mount -t overlay overlay -o "lowerdir=$1,upperdir=$ovl/upper,workdir=$ovl/work" "$ovl/merged" ||
		die "overlayfs over $1 failed"
}
overlay_down() { umount "$ovl/merged" || umount -l "$ovl/merged"; }
# container KEY LOWER: one container start over an overlay of LOWER, timed into R[KEY]
ctr_n=0
container() {
	local key=$1 t0 rc=0
	ctr_n=$((ctr_n + 1))
	overlay_up "$2"
	crun_bundle "$T/bundle.$ctr_n" "$ovl/merged" sh -c 'echo; cat /etc/os-release' || die "crun spec failed"
	t0=$(now)
	timeout "$CAP" bash -c '"$@"' bash _crun run --bundle="$T/bundle.$ctr_n" "ctr.$ctr_n" \
		>"$T/out.$key" 2>"$T/err.$key" </dev/null || rc=$?
	R[$key]=$(since "$t0")
	crun --root="$CRUN_ROOT" delete -f "ctr.$ctr_n" >/dev/null 2>&1
	if [ "$rc" != 0 ] || ! { echo; cat "$T/plain/etc/os-release"; } | cmp -s - "$T/out.$key"; then
		echo "# $key failed ($rc): $(head -c 300 "$T/err.$key")"
		R[$key]=FAILED
	fi
	overlay_down
}
export -f _crun
# ctr_best KEY TOOL URL MNT [CAFS-OPTION...]: CTR_RUNS container starts, each
# on a fresh mount (cold); the best time into R[KEY], its GETs into
# R[KEY.gets] (the container's and, from the mount command on, R[KEY.all])
ctr_best() {
	local key=$1 tool=$2 url=$3 mnt=$4 i b= g= ga=
	shift 4
	for ((i = 0; i < CTR_RUNS; i++)); do
		mnt_start "$tool" "$url" "$mnt" "$@"
		local lsgets=$mnt_ls_gets lss=$mnt_ls_s
		nginx_log_reset
		local ops0=
		[ "$tool" = cafs ] && ops0=$("$CAFS" stats "$mnt" 2>/dev/null | grep '^fuse_')
		container "$key.try" "$mnt"
		# the FUSE requests of the start (the stats' own getxattr left out)
		[ "$tool" = cafs ] && R[$key.ops]=$("$CAFS" stats "$mnt" 2>/dev/null | grep '^fuse_' |
			awk -v before="$ops0" 'BEGIN { n = split(before, b, "\n"); for (i = 1; i <= n; i++) { split(b[i], f, ": "); was[f[1]] = f[2] } }
				{ k = $1; sub(":", "", k); d = $2 - was[k] - (k == "fuse_getxattr"); if (d > 0) printf "%s%s %d", sep, substr(k, 6), d; sep = ", " }')
		mnt_stop
		[ "${R[$key.try]}" = FAILED ] && { R[$key]=FAILED; return; }
		if [ -z "$b" ] || awk -v a="${R[$key.try]}" -v b="$b" 'BEGIN { exit !(a < b) }'; then
			b=${R[$key.try]} g=$(gets) ga="$lsgets in $lss s"
		fi
	done
	R[$key]=$b R[$key.gets]=$g R[$key.lsgets]=$ga
}
export CRUN_ROOT _crun_hybrid

# ---- casync and cafs ----
for tool in $TOOLS; do
	m=$T/mnt.$tool
	[ "$ONLY" = ctr ] && { ctr_best $tool.ctr $tool "$U" "$m"; continue; }
	mnt_start $tool "$U" "$m"
	R[$tool.ls]=$mnt_ls_s
	R[$tool.lsgets]=$mnt_ls_gets
	nginx_log_reset
	timed $tool.find "find '$m' | wc -l"
	R[$tool.findgets]=$(gets)
	case ${R[$tool.find]} in
	[0-9]*) [ "$(cat "$T/out.$tool.find")" = "$entries" ] || R[$tool.find]="WRONG($(cat "$T/out.$tool.find"))" ;;
	esac
	best $tool.findwarm "$WARM" "find '$m' | wc -l"
	# the rest of issue 24's warm metadata, cafs only (casync's mount
	# answers no attribute from a cache: minutes): a long listing and a
	# stat of every entry
	if [ $tool = cafs ]; then
		ls -lR "$m" >/dev/null 2>&1
		best $tool.lswarm "$WARM" "ls -lR '$m' | wc -l"
		best $tool.statwarm "$WARM" "find '$m' -print0 | xargs -0 stat | wc -l"
		"$CAFS" stats "$m" 2>/dev/null | grep '^fuse_' | tr '\n' ' ' >"$T/fuseops"
	fi
	mnt_stop

	mnt_start $tool "$U" "$m"
	nginx_log_reset
	timed $tool.tarcold "tar -cf - -C '$m' . | cat >/dev/null"
	R[$tool.targets]=$(gets)
	best $tool.tarwarm "$WARM" "tar -cf - -C '$m' . | cat >/dev/null"
	mnt_stop

	ctr_best $tool.ctr $tool "$U" "$m"
done

# ---- the plain dir ----
if rows plain; then
find plain >/dev/null
best plain.find "$WARM" "find plain | wc -l"
ls -lR plain >/dev/null
best plain.ls "$WARM" "ls -lR plain | wc -l"
best plain.stat "$WARM" "find plain -print0 | xargs -0 stat | wc -l"
tar -cf - -C plain . | cat >/dev/null
best plain.tar "$WARM" "tar -cf - -C plain . | cat >/dev/null"
# cold: page cache dropped before each; warm: right after
for ((i = 0; i < CTR_RUNS; i++)); do
	drop_caches
	container plain.try "$T/plain"
	if [ -z "${R[plain.ctrcold]:-}" ] || awk -v a="${R[plain.try]}" -v b="${R[plain.ctrcold]}" 'BEGIN { exit !(a < b) }'; then R[plain.ctrcold]=${R[plain.try]}; fi
	container plain.try "$T/plain"
	if [ -z "${R[plain.ctr]:-}" ] || awk -v a="${R[plain.try]}" -v b="${R[plain.ctr]}" 'BEGIN { exit !(a < b) }'; then R[plain.ctr]=${R[plain.try]}; fi
done
fi

# ---- prefetch profile and background fill (once cafs has them) ----
if rows fill && has_opt --fill; then
	m=$T/mnt.fill
	mnt_start cafs "$U" "$m" --fill
	nginx_log_reset
	timed fill.tarcold "tar -cf - -C '$m' . | cat >/dev/null"
	R[fill.targets]=$(gets)
	best fill.tarwarm "$WARM" "tar -cf - -C '$m' . | cat >/dev/null"
	mnt_stop
	# the other bound of issue 24's goal 3: `cafs extract` of the image from the same nginx
	drop_caches
	nginx_log_reset
	timed fill.extract "'$CAFS' extract '$U/minbase.caidx' '$T/extracted'"
	rm -rf "$T/extracted"
fi
if rows profile && has_opt --record-profile; then
	m=$T/mnt.prof
	mnt_start cafs "$U" "$m" --record-profile="$T/minbase.caprofile"
	container prof.rec "$m"
	mnt_stop
	[ -s "$T/minbase.caprofile" ] || echo "# --record-profile wrote no profile"
	ctr_best prof.ctr cafs "$U" "$m" --profile="$T/minbase.caprofile"
fi

# ---- at RTT: the container start through a proxy that delays each way ----
if [ "$RTT" -gt 0 ]; then
	lport=$(_nginx_free_port)
	python3 "$here/lagproxy.py" "$lport" "$NGINX_PORT" "$(awk -v r="$RTT" 'BEGIN { print r / 2 }')" >"$T/lag.out" 2>&1 &
	lag_pid=$!
	at_cleanup "kill $lag_pid; wait $lag_pid"
	for ((i = 0; i < 100; i++)); do grep -qs ready "$T/lag.out" && break; sleep 0.05; done
	L=http://127.0.0.1:$lport
	for tool in $TOOLS; do
		ctr_best $tool.lag $tool "$L" "$T/mnt.lag"
	done
	rows profile && has_opt --record-profile && ctr_best prof.lag cafs "$L" "$T/mnt.lag" --profile="$T/minbase.caprofile"
	kill "$lag_pid"
	wait "$lag_pid" 2>/dev/null
fi
trips() { awk -v t="$1" -v p="${R[plain.ctrcold]}" -v r="$RTT" 'BEGIN { if (t ~ /^[0-9.]+$/) { n = (t - p) * 1000 / r; if (n < 0.5) printf "< 1 round trip"; else printf "~%.0f round trips", n } }'; }

# ---- offline by URL (last: nginx goes) ----
if rows offline; then
C=$T/cache.offline
t0=$(now)
nginx_log_reset
if "$CAFS" cache fill --cache="$C" "$U/minbase.caidx" >"$T/fill.log" 2>&1; then
	R[off.fill]="cache fill $(since "$t0") s ($(gets))"
else
	R[off.fill]="cache fill FAILED: $(head -c 200 "$T/fill.log")"
fi
nginx_stop
mkdir -p "$T/mnt.off"
t0=$(now)
"$CAFS" mount -f --offline --cache="$C" "$U/minbase.caidx" "$T/mnt.off" >"$T/mount.off.log" 2>&1 &
mnt_pid=$! mnt_dir=$T/mnt.off
for ((i = 0; i < 1000; i++)); do
	[ -n "$(ls "$T/mnt.off" 2>/dev/null)" ] && break
	kill -0 "$mnt_pid" 2>/dev/null || break
	sleep 0.01
done
if is_mounted "$T/mnt.off" && [ -n "$(ls "$T/mnt.off" 2>/dev/null)" ]; then
	R[off.ls]=$(since "$t0")
	timed off.tar "tar -cf - -C '$T/mnt.off' . | cat >/dev/null"
	if [ "${R[off.tar]}" != FAILED ] && cmp -s "$T/mnt.off/etc/os-release" plain/etc/os-release; then
		R[off]="works: mount + ls ${R[off.ls]} s, then a tar of all of it $(mbs "$tree_bytes" "${R[off.tar]}")"
	else
		R[off]="FAILED: tar ${R[off.tar]}"
	fi
	mnt_stop
else
	R[off]="FAILED: $(head -c 200 "$T/mount.off.log")"
	mnt_stop
fi
fi

# ---- the table ----
set +u # rows left out (BENCH_CASYNC=0, no RTT) print empty
echo
w=36
row() { printf "%-28s | %-${w}s | %-${w}s | %s\n" "$@"; }
row work casync cafs "plain dir / goal"
if [ "$ONLY" != ctr ]; then
row "mount + first ls" "$(secs "${R[casync.ls]}")" "$(secs "${R[cafs.ls]}")" "keep"
row "  fetched" "${R[casync.lsgets]}" "${R[cafs.lsgets]}" ""
row "cold find | wc -l" "$(secs "${R[casync.find]}")" "$(secs "${R[cafs.find]}")" "goal <= 0.3 s"
row "  fetched" "${R[casync.findgets]}" "${R[cafs.findgets]}" "goal <= 5% of the store"
row "warm find (same mount)" "$(secs "${R[casync.findwarm]}") = $(ratio "${R[casync.findwarm]}" "${R[plain.find]}") plain" \
	"$(secs "${R[cafs.findwarm]}") = $(ratio "${R[cafs.findwarm]}" "${R[plain.find]}") plain" "${R[plain.find]} s; goal <= 1.2x"
row "warm ls -lR" "-" \
	"$(secs "${R[cafs.lswarm]}") = $(ratio "${R[cafs.lswarm]}" "${R[plain.ls]}") plain" "${R[plain.ls]} s; goal <= 1.2x"
row "warm stat of every entry" "-" \
	"$(secs "${R[cafs.statwarm]}") = $(ratio "${R[cafs.statwarm]}" "${R[plain.stat]}") plain" "${R[plain.stat]} s; goal <= 1.2x"
row "  (cpu of the best: find, ls, stat)" "${R[casync.findwarm.us]}" \
	"${R[cafs.findwarm.us]}; ${R[cafs.lswarm.us]}; ${R[cafs.statwarm.us]}" \
	"${R[plain.find.us]}; ${R[plain.ls.us]}; ${R[plain.stat.us]}"
row "cold tar" "$(mbs "$tree_bytes" "${R[casync.tarcold]}") = $(ratio "${R[casync.tarcold]}" "${R[casync.tarwarm]}") warm" \
	"$(mbs "$tree_bytes" "${R[cafs.tarcold]}") = $(ratio "${R[cafs.tarcold]}" "${R[cafs.tarwarm]}") warm" "(with --fill: goal <= 2.5x warm)"
row "  fetched" "${R[casync.targets]}" "${R[cafs.targets]}" ""
row "warm tar" "$(secs "${R[casync.tarwarm]}") = $(ratio "${R[casync.tarwarm]}" "${R[plain.tar]}") plain" \
	"$(secs "${R[cafs.tarwarm]}") = $(ratio "${R[cafs.tarwarm]}" "${R[plain.tar]}") plain" "${R[plain.tar]} s; goal <= 2x"
fi # not BENCH_ONLY=ctr
row "container start (crun)" "$(secs "${R[casync.ctr]}") = $(ratio "${R[casync.ctr]}" "${R[plain.ctr]}") plain" \
	"$(secs "${R[cafs.ctr]}") = $(ratio "${R[cafs.ctr]}" "${R[plain.ctr]}") plain" \
	"${R[plain.ctr]} s warm, ${R[plain.ctrcold]} s cold; goal <= 2x (no profile)"
row "  fetched" "${R[casync.ctr.gets]}" "${R[cafs.ctr.gets]}" ""
row "  (its mount + ls before)" "${R[casync.ctr.lsgets]}" "${R[cafs.ctr.lsgets]}" ""
row "  FUSE requests (the last start)" "" "${R[cafs.ctr.ops]}" ""
if [ "$RTT" -gt 0 ]; then
	row "container start, $RTT ms RTT" "$(secs "${R[casync.lag]}"), $(trips "${R[casync.lag]}")" \
		"$(secs "${R[cafs.lag]}"), $(trips "${R[cafs.lag]}")" "goal <= 4 round trips (with a profile)"
	row "  (its mount + ls before)" "${R[casync.lag.lsgets]}" "${R[cafs.lag.lsgets]}" ""
fi
if [ "$ONLY" != ctr ]; then
row "offline by URL" "-" "${R[off]}" "works"
row "  (before)" "" "${R[off.fill]}" ""
fi
if has_opt --fill && [ "$ONLY" != ctr ]; then
	row "cold tar with --fill" "-" "$(mbs "$tree_bytes" "${R[fill.tarcold]}") = $(ratio "${R[fill.tarcold]}" "${R[fill.tarwarm]}") warm" "goal <= 2.5x warm"
	row "  fetched" "" "${R[fill.targets]}" ""
	row "  (cpu of tar: cold, warm)" "" "${R[fill.tarcold.us]}; ${R[fill.tarwarm.us]}" ""
	row "cafs extract, same nginx" "-" "$(mbs "$tree_bytes" "${R[fill.extract]}") (${R[fill.extract.us]})" \
		"goal: cold tar --fill >= 70% of it, or the 2.5x above"
fi
if has_opt --record-profile; then
	row "container with --profile" "-" "$(secs "${R[prof.ctr]}") = $(ratio "${R[prof.ctr]}" "${R[plain.ctr]}") plain" "goal <= 1.2x plain"
	row "  fetched" "" "${R[prof.ctr.gets]}" ""
	row "  (its mount + ls before)" "" "${R[prof.ctr.lsgets]}" ""
	row "  FUSE requests (the last start)" "" "${R[prof.ctr.ops]}" ""
	if [ "$RTT" -gt 0 ]; then
		row "  at $RTT ms RTT" "-" "$(secs "${R[prof.lag]}"), $(trips "${R[prof.lag]}")" "goal <= 4 round trips"
		row "  (its mount + ls before)" "" "${R[prof.lag.lsgets]}" ""
	fi
fi
[ "$ONLY" = ctr ] || echo "# cafs's FUSE requests after the warm metadata runs (cafs stats): $(cat "$T/fuseops" 2>/dev/null)"
echo "# load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
