#!/bin/bash
# bench/crypt.sh - make throughput to an encrypted local store against a
# plain one, side by side in one run: the same input made into a fresh
# store each time, plain, XChaCha20-Poly1305 and AES-256-GCM, the three
# interleaved so that a busy machine slows them alike; best of BENCH_RUNS
# (default 3), wall time and CPU time (user + system: what encryption costs
# itself, less at the mercy of a busy machine than the wall time). Then an
# extract from each, the read side. The aim (issue 22) is encryption within
# 10% of plain.
#
#   bench/crypt.sh                       # a 256 MiB blob and /usr/include
#   BENCH_TREE=/some/dir BENCH_BLOB_MB=512 bench/crypt.sh
#
# Env: CAFS (default ./cafs), GEN (tests/gen-data beside CAFS), BENCH_TREE,
# BENCH_BLOB_MB, BENCH_RUNS, BENCH_DIR (parent of the work dir).
set -u
export LC_ALL=C
CAFS=${CAFS:-./cafs}
CAFS=$(cd "$(dirname "$CAFS")" && pwd)/$(basename "$CAFS")
GEN=${GEN:-$(dirname "$CAFS")/tests/gen-data}
RUNS=${BENCH_RUNS:-3}
TREE=${BENCH_TREE:-/usr/include}
BLOB_MB=${BENCH_BLOB_MB:-256}
here=$(cd "$(dirname "$0")" && pwd)

die() { echo "bench/crypt.sh: $*" >&2; exit 1; }
[ -x "$CAFS" ] || die "no cafs binary at $CAFS (set CAFS)"
[ -x "$GEN" ] || die "no test data generator at $GEN (set GEN)"
[ -d "$TREE" ] || die "no tree at $TREE (set BENCH_TREE)"
. "$here/workdir.sh"
bench_workdir crypt || die "cannot make a work dir"
cd "$T" || exit 1

umask 077
openssl rand -hex 32 >key
cat >cafs.conf <<EOF
[$T/store.xchacha20]
encryption = xchacha20-poly1305
encryption-key-file = $T/key
[$T/store.aes256gcm]
encryption = aes-256-gcm
encryption-key-file = $T/key
EOF
export CAFS_CONFIG=$T/cafs.conf
"$GEN" "${BLOB_MB}M" 42 mixed >blob || die "gen-data failed"
tree_bytes=$(du -sb --apparent-size "$TREE" | cut -f1)
names=(plain xchacha20 aes256gcm)

# one_make NAME INPUT OUT: "WALL CPU" seconds of a make of INPUT into a fresh store.NAME
one_make() {
	rm -rf "store.$1" "$3"
	/usr/bin/time -f '%e %U %S' -o "time.$1" "$CAFS" make --store="store.$1" "$3" "$2" >/dev/null 2>"err.$1" ||
		die "$1: make failed: $(head -c 300 "err.$1")"
	awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }' "time.$1"
}

# min A B: the smaller number (A may be empty)
min() { if [ -z "$1" ] || awk -v a="$2" -v b="$1" 'BEGIN { exit !(a < b) }'; then echo "$2"; else echo "$1"; fi; }

# bench_make WHAT INPUT STEM EXT BYTES: best of RUNS per store kind, interleaved;
# the indexes are STEM-NAME.EXT
bench_make() {
	local what=$1 in=$2 stem=$3 ext=$4 bytes=$5 i n d wall cpu
	declare -A best=() bcpu=()
	for ((i = 0; i < RUNS; i++)); do
		for n in "${names[@]}"; do
			d=$(one_make "$n" "$in" "$stem-$n.$ext") || exit 1
			read -r wall cpu <<<"$d"
			best[$n]=$(min "${best[$n]:-}" "$wall")
			bcpu[$n]=$(min "${bcpu[$n]:-}" "$cpu")
		done
	done
	for n in "${names[@]}"; do
		cmp -s "$stem-plain.$ext" "$stem-$n.$ext" || echo "# $n: the index differs from the plain store's" >&2
		awk -v n="$n" -v w="$what" -v t="${best[$n]}" -v b="$bytes" -v p="${best[plain]}" -v c="${bcpu[$n]}" \
			-v pc="${bcpu[plain]}" 'BEGIN {
			printf "  make %-5s %-10s wall %7.3f s %7.1f MiB/s %+6.1f%%   cpu %7.3f s %+6.1f%%  (vs plain)\n",
			       w, n, t, b / t / 1048576, (t / p - 1) * 100, c, (c / pc - 1) * 100 }'
	done
}

echo "# bench/crypt.sh: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, $(openssl version | cut -d' ' -f1-2); best of $RUNS"
echo "# blob: ${BLOB_MB} MiB (gen-data mixed); tree: $TREE, $((tree_bytes / 1048576)) MiB"
bench_make blob blob b caibx $((BLOB_MB * 1048576))
bench_make tree "$TREE" t caidx "$tree_bytes"
want=$("$CAFS" digest "$TREE" 2>&1)
for n in "${names[@]}"; do
	best=
	for ((i = 0; i < RUNS; i++)); do
		rm -rf "out.$n"
		t0=$(now)
		"$CAFS" extract --store="store.$n" "t-$n.caidx" "out.$n" >/dev/null 2>"err.$n" ||
			die "$n: extract failed: $(head -c 300 "err.$n")"
		d=$(since "$t0")
		if [ -z "$best" ] || awk -v a="$d" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$d; fi
	done
	[ "$("$CAFS" digest "out.$n" 2>&1)" = "$want" ] || echo "# $n: extract differs from the tree" >&2
	rm -rf "out.$n"
	printf '  extract tree %-11s %7.3f s\n' "$n" "$best"
done
