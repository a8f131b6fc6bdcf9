#!/bin/bash
# bench/tree-read.sh - reading archives: cafs against casync, side by side
# in one run, on the same .catar / .caidx (made by casync).
#
# Input: a directory tree (default /usr/include: many small files).
#   extract .catar / .caidx   each timed run into a fresh ext4 (see
#                             bench/scratch.sh); the outputs are then
#                             compared once, untimed
#   list, mtree, digest       of the .catar
#   list PATH                 of the .caidx: random access; besides the
#                             time, the number of chunk files each opened
#                             (strace) out of the index's total
# Times are wall seconds (best of BENCH_RUNS, default 3, runs alternating
# which tool goes first); ratio is casync/cafs (> 1: cafs faster).
#
#   bench/tree-read.sh
#   BENCH_TREE=/usr/share/doc BENCH_PATH=some/dir bench/tree-read.sh
#
# Env: CAFS (default ./cafs), BENCH_TREE, BENCH_PATH (default: the
# deepest directory of the tree), BENCH_DIR (parent of the work dir,
# default /var/tmp; removed at exit), BENCH_RUNS, BENCH_SCRATCH (see
# bench/scratch.sh). Needs casync, strace, python3, RAM for 3x the tree.
# Run as root so both restore owners alike (and for the fresh file systems).
set -u
export LC_ALL=C
CAFS=${CAFS:-./cafs}
CAFS=$(cd "$(dirname "$CAFS")" && pwd)/$(basename "$CAFS")
TREE=${BENCH_TREE:-/usr/include}
RUNS=${BENCH_RUNS:-3}

die() { echo "bench/tree-read.sh: $*" >&2; exit 1; }
[ -x "$CAFS" ] || die "no cafs binary at $CAFS (set CAFS)"
[ -d "$TREE" ] || die "no tree at $TREE (set BENCH_TREE)"
for c in casync strace python3; do command -v $c >/dev/null || die "$c is not installed"; done

W=$(mktemp -d "${BENCH_DIR:-/var/tmp}/cafs-bench-tree.XXXXXX") || die "cannot make a work dir"
. "$(dirname "$0")/scratch.sh"
trap 'scratch_done; rm -rf "$W"' EXIT
trap 'exit 130' INT TERM

casync make "$W/t.catar" "$TREE" >/dev/null || die "casync make .catar failed"
casync make --store="$W/st" "$W/t.caidx" "$TREE" >/dev/null || die "casync make .caidx failed"
PATH_IN=${BENCH_PATH:-$(cd "$TREE" && find . -type d | awk -F/ '{ print NF - 1, substr($0, 3) }' | sort -n | tail -n 1 | cut -d' ' -f2-)}
chunks=$(find "$W/st" -name '*.cacnk' | wc -l)
echo "# bench/tree-read.sh: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs; best of $RUNS, ratio casync/cafs (> 1: cafs faster)"
echo "# tree $TREE: $(stat -c %s "$W/t.catar") bytes of catar, $chunks chunks; random access to '$PATH_IN'"
scratch_init "$W" $(($(du -sm "$TREE" | cut -f1) * 2 + 512))

# best TIMEFORMAT-free wall time of "$@" over RUNS runs, each after PREP
now() { date +%s.%N; }
best=
timeit() {
	local t0 t1 d
	t0=$(now)
	"$@" >/dev/null 2>"$W/err" || { cat "$W/err" >&2; die "failed: $*"; }
	t1=$(now)
	d=$(python3 -c "print(f'{$t1 - $t0:.3f}')")
	if [ -z "$best" ] || python3 -c "import sys; sys.exit(0 if $d < $best else 1)"; then best=$d; fi
}

row() { # NAME CASYNC_SECONDS CAFS_SECONDS
	python3 -c "print(f'{\"$1\":<22} casync {float($2):8.3f} s   cafs {float($3):8.3f} s   ratio {float($2)/max(float($3),1e-9):6.2f}')"
}

bench() { # NAME PREP_CASYNC PREP_CAFS "casync args" "cafs args"
	local name=$1 pc=$2 pf=$3 c=$4 f=$5 bc bf i
	bc= bf=
	for ((i = 0; i < RUNS; i++)); do # alternating which goes first
		if ((i % 2)); then
			eval "$pf"
			best=$bf; eval "timeit \"$CAFS\" $f"; bf=$best
		fi
		eval "$pc"
		best=$bc; eval "timeit casync $c"; bc=$best
		if ((i % 2 == 0)); then
			eval "$pf"
			best=$bf; eval "timeit \"$CAFS\" $f"; bf=$best
		fi
	done
	row "$name" "$bc" "$bf"
}

fresh() { S=$(scratch_fresh) || die "cannot make a fresh file system"; }
S=
sync
bench "extract .catar" fresh fresh 'extract "$W/t.catar" "$S/out"' 'extract "$W/t.catar" "$S/out"'
bench "extract .caidx" fresh fresh \
	'extract --store="$W/st" "$W/t.caidx" "$S/out"' 'extract --store="$W/st" "$W/t.caidx" "$S/out"'
fresh
casync extract "$W/t.catar" "$S/c" && "$CAFS" extract "$W/t.catar" "$S/f" && "$CAFS" extract --store="$W/st" "$W/t.caidx" "$S/g" ||
	die "extract failed"
diff -r --no-dereference "$S/c" "$S/f" >/dev/null && diff -r --no-dereference "$S/c" "$S/g" >/dev/null ||
	die "the extracted trees differ"
echo "  (extracted trees identical: diff -r)"
bench "list .catar" : : 'list "$W/t.catar"' 'list "$W/t.catar"'
bench "mtree .catar" : : 'mtree "$W/t.catar"' 'mtree "$W/t.catar"'
bench "digest .catar" : : 'digest "$W/t.catar"' 'digest "$W/t.catar"'
bench "list .caidx PATH" : : 'list --store="$W/st" "$W/t.caidx" "$PATH_IN"' \
	'list --store="$W/st" "$W/t.caidx" "$PATH_IN"'

opened() { strace -f -e trace=openat -o "$W/strace" "$@" >/dev/null 2>&1; grep -c '\.cacnk"' "$W/strace"; }
echo "chunk files opened by list .caidx PATH: casync $(opened casync list --store="$W/st" "$W/t.caidx" "$PATH_IN")," \
	"cafs $(opened "$CAFS" list --store="$W/st" "$W/t.caidx" "$PATH_IN") (of $chunks)"
