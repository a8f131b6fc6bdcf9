#!/bin/bash
# bench/tree-make.sh - making archives of a directory tree: cafs against
# casync, side by side in one run, on the same real OS tree.
#
# For each tree (default /usr/share/doc, then /usr/include):
#   make .catar   casync make / cafs make of the tree into one .catar
#   make .caidx   casync make / cafs make into a fresh store each run
# The outputs of the two must be byte-identical (cmp), else the bench
# fails. Every timed run writes to a fresh ext4 (bench/scratch.sh). Times are wall seconds, best of BENCH_RUNS (default 2), the runs
# alternating which tool goes first; MB/s is the .catar stream size
# (10^6 bytes) over that time; ratio is casync/cafs (> 1: cafs faster).
# The tree is read once before timing so both find it in the page cache.
#
#   bench/tree-make.sh
#   BENCH_TREE=/usr/lib/python3 BENCH_RUNS=3 bench/tree-make.sh
#
# Env: CAFS (default ./cafs), BENCH_TREE (one or more directories,
# separated by spaces), BENCH_RUNS, BENCH_DIR (parent of the work dir,
# default /var/tmp; removed at exit), BENCH_SCRATCH (see bench/scratch.sh).
# Needs casync, python3, about 3x the tree's size of free disk and RAM.
# Run as root so both read every file (and for the fresh file systems).
set -u
export LC_ALL=C
CAFS=${CAFS:-./cafs}
CAFS=$(cd "$(dirname "$CAFS")" && pwd)/$(basename "$CAFS")
TREES=${BENCH_TREE:-/usr/share/doc /usr/include}
RUNS=${BENCH_RUNS:-2}

die() { echo "bench/tree-make.sh: $*" >&2; exit 1; }
[ -x "$CAFS" ] || die "no cafs binary at $CAFS (set CAFS)"
for c in casync python3; do command -v $c >/dev/null || die "$c is not installed"; done
for t in $TREES; do [ -d "$t" ] || die "no tree at $t (set BENCH_TREE)"; done

W=$(mktemp -d "${BENCH_DIR:-/var/tmp}/cafs-bench-make.XXXXXX") || die "cannot make a work dir"
. "$(dirname "$0")/scratch.sh"
trap 'scratch_done; rm -rf "$W"' EXIT
trap 'exit 130' INT TERM

now() { date +%s.%N; }
# timeit NAME CMD...: run CMD, keep the smaller of its wall time and $W/NAME.best
timeit() {
	local name=$1 t0 t1 d
	shift
	t0=$(now)
	"$@" >"$W/$name.out" 2>"$W/err" || { cat "$W/err" >&2; die "failed: $*"; }
	t1=$(now)
	d=$(python3 -c "print(f'{$t1 - $t0:.3f}')")
	if [ ! -s "$W/$name.best" ] || python3 -c "import sys; sys.exit(0 if $d < $(cat "$W/$name.best") else 1)"; then
		echo "$d" >"$W/$name.best"
	fi
}

row() { # NAME BYTES CASYNC_SECONDS CAFS_SECONDS
	python3 -c "
b, c, f = $2, float($3), float($4)
print(f'{\"$1\":<34} casync {c:8.3f} s {b / 1e6 / c:8.1f} MB/s   cafs {f:8.3f} s {b / 1e6 / f:8.1f} MB/s   ratio {c / max(f, 1e-9):6.2f}')"
}

# one_run TOOL KIND: make TOOL.KIND of $TREE on a fresh file system (.caidx
# with a fresh store there), then keep the output as $W/TOOL.KIND and, for
# .caidx, the number of chunk files as $W/TOOL.chunks
one_run() {
	local tool=$1 kind=$2 bin=casync s
	[ "$tool" = cafs ] && bin=$CAFS
	s=$(scratch_fresh) || die "cannot make a fresh file system"
	if [ "$kind" = catar ]; then
		timeit "$tool-$kind" "$bin" make "$s/out.$kind" "$TREE"
	else
		timeit "$tool-$kind" "$bin" make --store="$s/st.castr" "$s/out.$kind" "$TREE"
		find "$s/st.castr" -name '*.cacnk' | wc -l >"$W/$tool.chunks"
	fi
	cp "$s/out.$kind" "$W/$tool.$kind"
}

echo "# bench/tree-make.sh: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs ($(lscpu | sed -n 's/^Model name: *//p' | head -n 1))"
echo "# cafs: $("$CAFS" --version)  casync: $(casync --version 2>&1 | head -n 1) (Debian $(dpkg-query -W -f='${Version}' casync 2>/dev/null))"
echo "# best of $RUNS runs, alternating order; ratio casync/cafs (> 1: cafs faster); work dir $W"
mib=0
for t in $TREES; do m=$(du -sm "$t" | cut -f1); ((m > mib)) && mib=$m; done
scratch_init "$W" $((mib * 3 + 512))

for TREE in $TREES; do
	tar -cf - -C "$TREE" . 2>/dev/null | cat >/dev/null # into the page cache, for both alike
	files=$(find "$TREE" | wc -l)
	bytes=
	for kind in catar caidx; do
		rm -f "$W"/*.best
		for ((i = 0; i < RUNS; i++)); do
			if ((i % 2 == 0)); then
				one_run casync $kind
				one_run cafs $kind
			else
				one_run cafs $kind
				one_run casync $kind
			fi
			cmp -s "$W/casync.$kind" "$W/cafs.$kind" || die "$TREE: the two .$kind differ"
			cmp -s "$W/casync-$kind.out" "$W/cafs-$kind.out" || die "$TREE: the printed digests differ (.$kind)"
			[ "$kind" = catar ] || cmp -s "$W/casync.chunks" "$W/cafs.chunks" || die "$TREE: the stores differ"
			[ "$kind" = catar ] && bytes=$(stat -c %s "$W/cafs.catar")
		done
		row "make .$kind $TREE" "$bytes" "$(cat "$W/casync-$kind.best")" "$(cat "$W/cafs-$kind.best")"
	done
	chunks=$(cat "$W/cafs.chunks")
	echo "  ($files entries, $bytes bytes of catar, $chunks chunks; outputs identical)"
	rm -rf "$W"/casync.* "$W"/cafs.*
done
