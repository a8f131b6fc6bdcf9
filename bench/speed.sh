#!/bin/bash
# bench/speed.sh - issue 13's make and extract rows: cafs against casync,
# side by side in one run, with wall time, CPU user/sys and peak RSS.
#
#   make blob        `make X.caibx` of `gen-data 512M 3 mixed` (35% random,
#                    30% text, 15% zero runs, 20% repeats), fresh store
#   make tree        `make X.caidx` of a debootstrap minbase (see below),
#                    fresh store
#   extract blob     of casync's .caibx, from casync's store, to a new file
#   extract tree     of casync's .caidx, from casync's store, to a new
#                    directory: on tmpfs, then on a fresh ext4 every run
#                    (bench/scratch.sh)
# Inputs, stores and outputs are on tmpfs (/dev/shm) except the ext4 row.
# Each tool runs BENCH_RUNS times (default 3), alternating which goes
# first; the row shows each tool's best wall time and that run's CPU
# (user + sys, from /usr/bin/time) and peak RSS. Ratios: wall casync/cafs
# and CPU casync/cafs (> 1: cafs faster / cheaper). Outputs are checked:
# identical indexes and printed digests; extracted blobs cmp equal;
# extracted trees have the same `casync digest` as the source.
# Then callgrind instruction counts (all threads) of both on small inputs
# (make and extract of a CALLGRIND_SIZE blob, default 16M).
#
# The tree: BENCH_TREE if set, else a debootstrap --variant=minbase
# bookworm cached in BENCH_CACHE (default /var/tmp/cafs-bench-cache/minbase-bookworm;
# built once through apt's configured mirror), else, if debootstrap cannot
# run, /usr/share (said in the output).
#
#   bench/speed.sh
#   BENCH_RUNS=5 BENCH_SIZE=256M bench/speed.sh
#
# Env: CAFS (default ./cafs), GEN_DATA (default tests/gen-data beside CAFS),
# BENCH_SIZE, BENCH_RUNS, BENCH_TREE, BENCH_CACHE, CALLGRIND_SIZE. Needs
# root, casync, python3, ~4x BENCH_SIZE + 4x the tree of RAM; valgrind
# (else no instruction counts).
set -u
export LC_ALL=C
CAFS=${CAFS:-./cafs}
CAFS=$(cd "$(dirname "$CAFS")" && pwd)/$(basename "$CAFS")
GEN=${GEN_DATA:-$(dirname "$CAFS")/tests/gen-data}
SIZE=${BENCH_SIZE:-512M}
RUNS=${BENCH_RUNS:-3}
CG_SIZE=${CALLGRIND_SIZE:-16M}
CACHE=${BENCH_CACHE:-/var/tmp/cafs-bench-cache/minbase-bookworm}
here=$(cd "$(dirname "$0")" && pwd)

die() { echo "bench/speed.sh: $*" >&2; exit 1; }
[ -x "$CAFS" ] || die "no cafs binary at $CAFS (set CAFS)"
[ -x "$GEN" ] || die "no gen-data at $GEN (run make in the build dir, or set GEN_DATA)"
for c in casync python3; do command -v $c >/dev/null || die "$c is not installed"; done

# the tree: built before the work dir exists, so an interrupted build leaves only CACHE.tmp
tree_note=
if [ -n "${BENCH_TREE:-}" ]; then
	TREE=$BENCH_TREE
elif [ -d "$CACHE" ]; then
	TREE=$CACHE tree_note="debootstrap minbase (cached)"
elif command -v debootstrap >/dev/null && [ "$(id -u)" = 0 ]; then
	mkdir -p "$(dirname "$CACHE")"
	(
		flock 9 # another bench may be building the same cache
		[ -d "$CACHE" ] && exit 0
		rm -rf "$CACHE.tmp"
		echo "# building $CACHE with debootstrap (once)" >&2
		debootstrap --variant=minbase bookworm "$CACHE.tmp" >"$(dirname "$CACHE")/debootstrap.log" 2>&1 &&
			mv "$CACHE.tmp" "$CACHE"
	) 9>"$CACHE.lock"
	if [ -d "$CACHE" ]; then
		TREE=$CACHE tree_note="debootstrap minbase"
	else
		TREE=/usr/share tree_note="debootstrap failed (see $(dirname "$CACHE")/debootstrap.log): /usr/share instead"
	fi
else
	TREE=/usr/share tree_note="no debootstrap: /usr/share instead"
fi
[ -d "$TREE" ] || die "no tree at $TREE"

. "$here/workdir.sh"
. "$here/scratch.sh"
bench_workdir speed /dev/shm || die "cannot make a work dir"
at_cleanup scratch_done
W=$T

# measured NAME CMD...: run CMD; append "wall user sys rssKiB" to $W/NAME.runs
measured() {
	local name=$1
	shift
	/usr/bin/time -f '%e %U %S %M' -o "$W/time.out" "$@" >"$W/$name.out" 2>"$W/$name.err" ||
		{ cat "$W/$name.err" >&2; die "$name failed: $*"; }
	tail -n 1 "$W/time.out" >>"$W/$name.runs"
}

# row LABEL NAME: the best run of casync-NAME and cafs-NAME side by side
row() {
	python3 - "$1" "$W/casync-$2.runs" "$W/cafs-$2.runs" <<'EOF'
import sys
def best(path):
    runs = [tuple(float(x) for x in l.split()) for l in open(path) if l.strip()]
    return min(runs)  # fastest wall
label, c, f = sys.argv[1], best(sys.argv[2]), best(sys.argv[3])
def cell(r):
    return f"{r[0]:6.2f} s {r[1]:5.2f}+{r[2]:4.2f} {r[3] / 1024:5.0f} MB"
print(f"{label:<22} {cell(c)}   {cell(f)}   {c[0] / f[0]:5.2f}x  {(c[1] + c[2]) / (f[1] + f[2]):5.2f}x")
EOF
}

# both NAME CASYNC_CMD CAFS_CMD [PREP]: RUNS runs of each, alternating order;
# PREP (a shell command; $who is the tool about to run) runs before every timed run
both() {
	local name=$1 ccmd=$2 fcmd=$3 prep=${4:-:} i
	rm -f "$W/casync-$name.runs" "$W/cafs-$name.runs"
	for ((i = 0; i < RUNS; i++)); do
		if ((i % 2 == 0)); then
			who=casync && eval "$prep" && eval "measured casync-$name $ccmd"
			who=cafs && eval "$prep" && eval "measured cafs-$name $fcmd"
		else
			who=cafs && eval "$prep" && eval "measured cafs-$name $fcmd"
			who=casync && eval "$prep" && eval "measured casync-$name $ccmd"
		fi
	done
}

echo "# bench/speed.sh: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs ($(lscpu | sed -n 's/^Model name: *//p' | head -n 1)), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# cafs: $("$CAFS" --version)  casync: $(casync --version 2>&1 | head -n 1) (Debian $(dpkg-query -W -f='${Version}' casync 2>/dev/null))"
"$GEN" "$SIZE" 3 mixed >"$W/blob" || die "gen-data failed"
tar -cf - -C "$TREE" . 2>/dev/null | cat >/dev/null # into the page cache, for both alike
tree_mb=$(du -sm --apparent-size "$TREE" | cut -f1)
echo "# blob: gen-data $SIZE 3 mixed; tree: $TREE ($tree_mb MB, $(find "$TREE" | wc -l) entries${tree_note:+; $tree_note})"
echo "# best wall of $RUNS runs each; CPU = user+sys s of that run; ratios casync/cafs (> 1: cafs faster)"
scratch_init "$W" $((tree_mb * 3 + 256)) >/dev/null

printf '%-22s %-27s   %-27s   %6s  %6s\n' "" "casync: wall, CPU u+s, RSS" "cafs: wall, CPU u+s, RSS" wall CPU

both make-blob 'casync make --store="$W/cs" "$W/c.caibx" "$W/blob"' \
	'"$CAFS" make --store="$W/fs" "$W/f.caibx" "$W/blob"' 'if [ $who = casync ]; then rm -rf "$W/cs"; else rm -rf "$W/fs"; fi'
cmp -s "$W/c.caibx" "$W/f.caibx" || die "make blob: the two indexes differ"
cmp -s "$W/casync-make-blob.out" "$W/cafs-make-blob.out" || die "make blob: the printed digests differ"
row "make blob $SIZE" make-blob
rm -rf "$W/fs"

both make-tree 'casync make --store="$W/ct" "$W/c.caidx" "$TREE"' \
	'"$CAFS" make --store="$W/ft" "$W/f.caidx" "$TREE"' 'if [ $who = casync ]; then rm -rf "$W/ct"; else rm -rf "$W/ft"; fi'
cmp -s "$W/c.caidx" "$W/f.caidx" || die "make tree: the two indexes differ"
cmp -s "$W/casync-make-tree.out" "$W/cafs-make-tree.out" || die "make tree: the printed digests differ"
row "make tree" make-tree
rm -rf "$W/ft" "$W"/f.caidx.cameta

both extract-blob 'casync extract --store="$W/cs" "$W/c.caibx" "$W/out"' \
	'"$CAFS" extract --store="$W/cs" "$W/c.caibx" "$W/out"' 'rm -f "$W/out"'
cmp -s "$W/blob" "$W/out" || die "extract blob: output differs"
row "extract blob" extract-blob
rm -f "$W/out" "$W/blob"

want=$(casync digest "$TREE") || die "casync digest failed"
check_tree() { # DIR WHO
	[ "$(casync digest "$1")" = "$want" ] || die "extract tree ($2): the extracted tree differs"
}
both extract-tree 'casync extract --store="$W/ct" "$W/c.caidx" "$W/out"' \
	'"$CAFS" extract --store="$W/ct" "$W/c.caidx" "$W/out"' 'rm -rf "$W/out"'
row "extract tree tmpfs" extract-tree
"$CAFS" extract --store="$W/ct" "$W/c.caidx" "$W/out" && check_tree "$W/out" cafs
rm -rf "$W/out"
casync extract --store="$W/ct" "$W/c.caidx" "$W/out" && check_tree "$W/out" casync
rm -rf "$W/out"

both extract-ext4 'casync extract --store="$W/ct" "$W/c.caidx" "$S/out"' \
	'"$CAFS" extract --store="$W/ct" "$W/c.caidx" "$S/out"' 'S=$(scratch_fresh)'
check_tree "$S/out" "last run, ext4"
row "extract tree ext4" extract-ext4
scratch_done

if command -v valgrind >/dev/null; then
	"$GEN" "$CG_SIZE" 5 mixed >"$W/small"
	ir() { awk '/^(summary|totals):/ { print $2; exit }' "$1"; }
	cg() { # NAME CMD...
		local name=$1
		shift
		valgrind --tool=callgrind --callgrind-out-file="$W/cg.$name" "$@" >/dev/null 2>"$W/cg.$name.err" ||
			{ cat "$W/cg.$name.err" >&2; die "callgrind $name failed"; }
	}
	cg casync-make casync make --store="$W/cgs1" "$W/cg1.caibx" "$W/small"
	cg cafs-make "$CAFS" make --store="$W/cgs2" "$W/cg2.caibx" "$W/small"
	cmp -s "$W/cg1.caibx" "$W/cg2.caibx" || die "callgrind runs: the two indexes differ"
	cg casync-extract casync extract --store="$W/cgs1" "$W/cg1.caibx" "$W/cgo1"
	cg cafs-extract "$CAFS" extract --store="$W/cgs1" "$W/cg1.caibx" "$W/cgo2"
	cmp -s "$W/cgo1" "$W/cgo2" || die "callgrind runs: the two outputs differ"
	for step in make extract; do
		a=$(ir "$W/cg.casync-$step") b=$(ir "$W/cg.cafs-$step")
		printf '%-22s casync %14s Ir   cafs %14s Ir   casync/cafs %5.2fx (%s blob, all threads)\n' \
			"callgrind $step" "$a" "$b" "$(python3 -c "print($a / $b)")" "$CG_SIZE"
	done
else
	echo "# valgrind not installed: no instruction counts"
fi
