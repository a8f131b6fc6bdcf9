#!/bin/bash
# bench/blob.sh - cafs against casync on a blob, side by side in one run.
#
# Input: `gen-data SIZE 3 mixed`, deterministic: segments of 64 KiB..2 MiB,
# each random (35%), text-like words and lines (30%, compresses ~4:1), a
# zero run (15%), or a byte-exact repeat of an earlier segment (20%, so
# chunks dedup). Default chunk sizes (16K:64K:256K), zstd, SHA-512/256.
#
# For each file system in BENCH_FS (default "tmpfs ext4"):
#   make      casync make / cafs make of the input into a fresh store on it
#             (the input, in the work dir, is in the page cache for both);
#             the two indexes and printed digests must be identical
#   extract   casync extract / cafs extract of that one index from one
#             store (in the work dir, cached) to a fresh file on it
#             (outputs checked)
# tmpfs is a fresh directory in /dev/shm per run; ext4 a fresh file system
# per run (bench/scratch.sh: a loop image in /dev/shm). Before every timed
# run: sync, drop the page cache (as root), read the input back in, so
# neither tool pays for the other's writeback. Best of BENCH_RUNS (default
# 3) by wall time, the runs alternating which tool goes first; user and
# system CPU seconds are that run's.
#   callgrind instruction counts (Ir, all threads) of `casync make` and
#             `cafs make` on a smaller input of the same kind (CALLGRIND_SIZE=0: skipped)
#
# Throughput is input bytes / wall time, in MB/s (10^6 bytes); ratio is
# casync/cafs wall time (> 1: cafs faster; for Ir < 1: cafs executes fewer).
#
#   bench/blob.sh                       512 MiB, callgrind on 32 MiB
#   BENCH_SIZE=256M BENCH_FS=tmpfs CALLGRIND_SIZE=0 bench/blob.sh
#
# Env: CAFS (default ./cafs), GEN_DATA (default tests/gen-data beside
# CAFS), BENCH_DIR (parent of the work dir, default /var/tmp; the work
# dir is removed at exit), BENCH_FS, BENCH_RUNS, BENCH_SCRATCH, CAFS_BEFORE
# (another cafs binary, an earlier build: timed in the same runs, a row
# "STEP/before" each, for before/after tables from one run). Needs
# casync, valgrind (else callgrind is skipped), about 3.5x SIZE of free
# disk and 3x SIZE of RAM.
set -u
export LC_ALL=C
CAFS=${CAFS:-./cafs}
CAFS=$(cd "$(dirname "$CAFS")" && pwd)/$(basename "$CAFS")
GEN=${GEN_DATA:-$(dirname "$CAFS")/tests/gen-data}
SIZE=${BENCH_SIZE:-512M}
CG_SIZE=${CALLGRIND_SIZE:-32M}
RUNS=${BENCH_RUNS:-3}
FSS=${BENCH_FS:-tmpfs ext4}
BEFORE=${CAFS_BEFORE:-}
TOOLS="casync cafs${BEFORE:+ before}"

die() { echo "bench/blob.sh: $*" >&2; exit 1; }
[ -x "$CAFS" ] || die "no cafs binary at $CAFS (set CAFS)"
[ -x "$GEN" ] || die "no gen-data at $GEN (run make in the build dir, or set GEN_DATA)"
command -v casync >/dev/null || die "casync is not installed"

W=$(mktemp -d "${BENCH_DIR:-/var/tmp}/cafs-bench-blob.XXXXXX") || die "cannot make a work dir"
SHM=
. "$(dirname "$0")/scratch.sh"
trap 'scratch_done; rm -rf "$W" ${SHM:+"$SHM"}' EXIT
trap 'exit 130' INT TERM

# quiesce FILE...: no dirty pages of the last run left to write back, the
# page cache dropped (where allowed), the files named read back in
quiesce() {
	sync
	[ -w /proc/sys/vm/drop_caches ] && echo 3 >/proc/sys/vm/drop_caches
	for f in "$@"; do
		if [ -d "$f" ]; then tar -cf - -C "$f" . | cat >/dev/null; else cat "$f" >/dev/null; fi
	done
}

# fresh FS: an empty directory on file system FS, printed
fresh() {
	case $1 in
	tmpfs) rm -rf "$SHM/t" && mkdir "$SHM/t" && echo "$SHM/t" ;;
	ext4) scratch_fresh ;;
	esac
}

# timed NAME CMD...: run CMD; keep "wall user sys" of the fastest run so far in $W/NAME.best
timed() {
	local name=$1 t
	shift
	/usr/bin/time -f '%e %U %S' -o "$W/$name.time" "$@" >"$W/$name.out" 2>"$W/$name.err" ||
		{ cat "$W/$name.err" >&2; die "$name failed: $*"; }
	t=$(cat "$W/$name.time")
	if [ ! -s "$W/$name.best" ] || awk -v a="${t%% *}" -v b="$(cut -d' ' -f1 "$W/$name.best")" 'BEGIN { exit !(a < b) }'; then
		echo "$t" >"$W/$name.best"
	fi
}

# one FS STEP TOOL: one timed run of STEP by TOOL onto a fresh FS
one() {
	local fs=$1 step=$2 tool=$3 bin=casync d
	[ "$tool" = cafs ] && bin=$CAFS
	[ "$tool" = before ] && bin=$BEFORE
	d=$(fresh "$fs") || die "cannot make a fresh $fs"
	if [ "$step" = make ]; then
		quiesce "$W/input"
		timed "$fs-make-$tool" "$bin" make --store="$d/st" "$d/x.caibx" "$W/input"
		cp "$d/x.caibx" "$W/$tool.caibx"
	else
		quiesce "$W/cs" "$W/c.caibx"
		timed "$fs-extract-$tool" "$bin" extract --store="$W/cs" "$W/c.caibx" "$d/out"
		cmp -s "$W/input" "$d/out" || die "$tool extract: output differs"
	fi
	rm -rf "${d:?}"/*
}

echo "# bench/blob.sh: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs ($(lscpu | sed -n 's/^Model name: *//p' | head -n 1))"
echo "# cafs: $("$CAFS" --version)  casync: $(casync --version 2>&1 | head -n 1) (Debian $(dpkg-query -W -f='${Version}' casync 2>/dev/null))"
echo "# input: gen-data $SIZE 3 mixed; work dir $W; best of $RUNS runs, alternating order"
[ -w /proc/sys/vm/drop_caches ] || echo "# not root: the page cache is not dropped between runs"

"$GEN" "$SIZE" 3 mixed >"$W/input" || die "gen-data failed"
bytes=$(stat -c %s "$W/input")
echo "# input: $bytes bytes, $(zstd -q -3 -c "$W/input" 2>/dev/null | wc -c) bytes as one zstd -3 stream"
casync make --store="$W/cs" "$W/c.caibx" "$W/input" >/dev/null || die "casync make failed"
chunks=$("$CAFS" info "$W/c.caibx" | sed -n 's/^Chunks: //p')
echo "# $chunks chunks, store $(du -sb "$W/cs" | cut -f1) bytes"
for fs in $FSS; do
	case $fs in
	tmpfs) SHM=$(mktemp -d /dev/shm/cafs-bench-blob.XXXXXX) || die "no /dev/shm" ;;
	ext4) scratch_init "$W" $(((bytes >> 20) * 3 + 512)) ;;
	*) die "BENCH_FS: unknown file system $fs (tmpfs, ext4)" ;;
	esac
done

printf '%-6s %-14s %22s %22s %11s %10s %7s\n' fs step "casync s (user/sys)" "cafs s (user/sys)" "casync MB/s" "cafs MB/s" ratio
for fs in $FSS; do
	for step in make extract; do
		for ((i = 0; i < RUNS; i++)); do
			tools=$TOOLS
			((i % 2 == 0)) || tools=$(echo "$TOOLS" | tr ' ' '\n' | tac | tr '\n' ' ')
			for tool in $tools; do
				one "$fs" $step "$tool"
			done
			for tool in $TOOLS; do
				[ $step = make ] && [ "$tool" != casync ] || continue
				cmp -s "$W/casync.caibx" "$W/$tool.caibx" || die "$tool: the two indexes differ"
				cmp -s "$W/$fs-make-casync.out" "$W/$fs-make-$tool.out" || die "$tool: the printed digests differ"
			done
		done
		read -r cw cu cs <"$W/$fs-$step-casync.best"
		for tool in $TOOLS; do
			[ "$tool" = casync ] && continue
			read -r fw fu fsy <"$W/$fs-$step-$tool.best"
			name=$step
			[ "$tool" = before ] && name=$step/before
			awk -v fs="$fs" -v step="$name" -v b="$bytes" -v cw="$cw" -v cu="$cu" -v cs="$cs" -v fw="$fw" -v fu="$fu" \
				-v fsy="$fsy" 'BEGIN { printf "%-6s %-14s %6.2f (%5.2f/%5.2f) %6.2f (%5.2f/%5.2f) %11.1f %10.1f %7.2f\n",
					fs, step, cw, cu, cs, fw, fu, fsy, b / 1e6 / cw, b / 1e6 / fw, cw / fw }'
		done
	done
done
rm -rf "$W/cs" "$W/input" "$W"/*.caibx

if [ "$CG_SIZE" != 0 ] && command -v valgrind >/dev/null; then
	ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
	"$GEN" "$CG_SIZE" 3 mixed >"$W/small"
	ir() { awk '/^(summary|totals):/ { print $2; exit }' "$1"; }
	valgrind --tool=callgrind --callgrind-out-file="$W/cg.casync" \
		casync make --store="$W/cgs1" "$W/cg1.caibx" "$W/small" >/dev/null 2>"$W/cg.casync.err" ||
		die "callgrind casync make failed"
	valgrind --tool=callgrind --callgrind-out-file="$W/cg.cafs" \
		"$CAFS" make --store="$W/cgs2" "$W/cg2.caibx" "$W/small" >/dev/null 2>"$W/cg.cafs.err" ||
		die "callgrind cafs make failed"
	cmp -s "$W/cg1.caibx" "$W/cg2.caibx" || die "callgrind runs: the two indexes differ"
	a=$(ir "$W/cg.casync")
	b=$(ir "$W/cg.cafs")
	printf '%-9s %16s %16s %7s   (make, %s input, Ir all threads; ratio cafs/casync)\n' callgrind "$a" "$b" \
		"$(ratio "$b" "$a")" "$CG_SIZE"
elif [ "$CG_SIZE" != 0 ]; then
	echo "# valgrind not installed: no instruction counts"
fi
