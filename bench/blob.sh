#!/bin/bash
# bench/blob.sh - cafs against casync on a blob, side by side in one run.
#
# Input: `gen-data SIZE 3 mixed`, deterministic: segments of 64 KiB..2 MiB,
# each random (35%), text-like words and lines (30%, compresses ~4:1), a
# zero run (15%), or a byte-exact repeat of an earlier segment (20%, so
# chunks dedup). Default chunk sizes (16K:64K:256K), zstd, SHA-512/256.
#
#   make      casync make, then cafs make, of the same input into fresh
#             stores (the input is in the page cache for both; nothing is
#             dropped); the two indexes must be identical
#   extract   casync extract, then cafs extract, of that one index from
#             that one store, to a fresh file each (outputs checked)
#   callgrind instruction counts (Ir, all threads) of `casync make` and
#             `cafs make` on a smaller input of the same kind
#
# Throughput is input bytes / wall time, in MB/s (10^6 bytes); ratio is
# cafs/casync (> 1: cafs faster; for Ir < 1: cafs executes fewer).
#
#   bench/blob.sh                       1 GiB, callgrind on 32 MiB
#   BENCH_SIZE=256M CALLGRIND_SIZE=8M bench/blob.sh
#
# Env: CAFS (default ./cafs), GEN_DATA (default tests/gen-data beside
# CAFS), BENCH_DIR (parent of the work dir, default /var/tmp; the work
# dir is removed at exit). Needs casync, valgrind (else callgrind is skipped),
# about 3.5x SIZE of free disk.
set -u
export LC_ALL=C
CAFS=${CAFS:-./cafs}
CAFS=$(cd "$(dirname "$CAFS")" && pwd)/$(basename "$CAFS")
GEN=${GEN_DATA:-$(dirname "$CAFS")/tests/gen-data}
SIZE=${BENCH_SIZE:-1G}
CG_SIZE=${CALLGRIND_SIZE:-32M}

die() { echo "bench/blob.sh: $*" >&2; exit 1; }
[ -x "$CAFS" ] || die "no cafs binary at $CAFS (set CAFS)"
[ -x "$GEN" ] || die "no gen-data at $GEN (run make in the build dir, or set GEN_DATA)"
command -v casync >/dev/null || die "casync is not installed"

W=$(mktemp -d "${BENCH_DIR:-/var/tmp}/cafs-bench-blob.XXXXXX") || die "cannot make a work dir"
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT TERM

now() { date +%s.%N; }
# timed NAME CMD...: run CMD, keep its wall time in $W/NAME.t and its peak RSS (KiB) in $W/NAME.rss
timed() {
	local name=$1 t0 t1
	shift
	t0=$(now)
	/usr/bin/time -f %M -o "$W/$name.rss" "$@" >"$W/$name.out" 2>"$W/$name.err" ||
		{ cat "$W/$name.err" >&2; die "$name failed: $*"; }
	t1=$(now)
	echo "$t0 $t1" | awk '{ printf "%.3f\n", $2 - $1 }' >"$W/$name.t"
}
mbps() { awk -v b="$1" -v t="$(cat "$W/$2.t")" 'BEGIN { printf "%.1f", b / 1e6 / t }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

echo "# bench/blob.sh: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs ($(lscpu | sed -n 's/^Model name: *//p' | head -n 1))"
echo "# cafs: $("$CAFS" --version)  casync: $(casync --version 2>&1 | head -n 1) (Debian $(dpkg-query -W -f='${Version}' casync 2>/dev/null))"
echo "# input: gen-data $SIZE 3 mixed; work dir $W"

"$GEN" "$SIZE" 3 mixed >"$W/input" || die "gen-data failed"
bytes=$(stat -c %s "$W/input")
echo "# input: $bytes bytes, $(zstd -q -3 -c "$W/input" 2>/dev/null | wc -c) bytes as one zstd -3 stream"
cat "$W/input" >/dev/null # into the page cache, for both alike

timed casync-make casync make --store="$W/cs" "$W/c.caibx" "$W/input"
timed cafs-make "$CAFS" make --store="$W/fs" "$W/f.caibx" "$W/input"
cmp -s "$W/c.caibx" "$W/f.caibx" || die "the two indexes differ"
cmp -s "$W/casync-make.out" "$W/cafs-make.out" || die "the printed digests differ"
chunks=$("$CAFS" info "$W/c.caibx" | sed -n 's/^Chunks: //p')
stored=$(du -sb "$W/cs" | cut -f1)
rm -rf "$W/fs"

timed casync-extract casync extract --store="$W/cs" "$W/c.caibx" "$W/out"
cmp -s "$W/input" "$W/out" || die "casync extract: output differs"
rm -f "$W/out"
timed cafs-extract "$CAFS" extract --store="$W/cs" "$W/c.caibx" "$W/out"
cmp -s "$W/input" "$W/out" || die "cafs extract: output differs"
rm -f "$W/out"

echo "# $chunks chunks, store $stored bytes; identical indexes and digests"
printf '%-9s %10s %10s %11s %10s %7s %14s %14s\n' step "casync s" "cafs s" "casync MB/s" "cafs MB/s" ratio \
	"casync RSS" "cafs RSS"
for step in make extract; do
	printf '%-9s %10s %10s %11s %10s %7s %10s KiB %10s KiB\n' "$step" \
		"$(cat "$W/casync-$step.t")" "$(cat "$W/cafs-$step.t")" \
		"$(mbps "$bytes" "casync-$step")" "$(mbps "$bytes" "cafs-$step")" \
		"$(ratio "$(cat "$W/casync-$step.t")" "$(cat "$W/cafs-$step.t")")" \
		"$(cat "$W/casync-$step.rss")" "$(cat "$W/cafs-$step.rss")"
done
rm -rf "$W/cs" "$W/input" "$W"/*.caibx

if command -v valgrind >/dev/null; then
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
else
	echo "# valgrind not installed: no instruction counts"
fi
