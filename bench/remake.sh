#!/bin/bash
# bench/remake.sh - issue 23 item 1: a publisher's re-make, side by side in
# one run. On a debootstrap minbase tree (BENCH_ROOTFS, else the one
# bench/minbase.sh builds into BENCH_CACHE/minbase-bookworm; copied into
# the work dir, never changed in place) and on a 1 GiB VM-disk-like blob
# (half random, half the tree's tar repeated), each row is the wall time of
#   casync make           (casync's own store, already holding the chunks)
#   cafs make             without --cache (its store already holding them)
#   cafs make --cache     warm cache, nothing changed
#   ... 1% changed        every 100th regular file rewritten (a byte
#                         flipped and one appended); for the blob, 1% of its
#                         4 MiB blocks rewritten (the blob's identity changes:
#                         a full make, see docs/design.md)
# and every cafs --cache output is checked against the no-cache one (cmp of
# the index, diff -r of the store) and against casync's index.
# Ends with `perf report` of a warm unchanged tree make (what is left).
#
#   sudo CAFS=build/cafs bench/remake.sh
# Env: CAFS (default ./cafs), BENCH_ROOTFS, BENCH_CACHE, BENCH_DIR (work
# dir parent, default /var/tmp; removed at exit), BENCH_BLOB_MB (1024).
set -u
CAFS=$(realpath "${CAFS:-./cafs}")
die() { echo "remake.sh: $*" >&2; exit 1; }
command -v casync >/dev/null || die "no casync"
img=${BENCH_ROOTFS:-${BENCH_CACHE:-${BENCH_DIR:-/var/tmp}/cafs-bench-cache}/minbase-bookworm}
[ -d "$img" ] || die "no $img: run bench/minbase.sh once (it builds it) or set BENCH_ROOTFS"
W=$(mktemp -d "${BENCH_DIR:-/var/tmp}/cafs-remake.XXXXXX") || die "mktemp"
trap 'rm -rf "$W"' EXIT
cp -a "$img" "$W/tree" || die "copy of $img"
blob_mb=${BENCH_BLOB_MB:-1024}
{
	head -c $((blob_mb / 2))M /dev/urandom
	tar -cf "$W/tree.tar" -C "$W/tree" . 2>/dev/null
	n=$(( (blob_mb - blob_mb / 2) * 1048576 / $(stat -c %s "$W/tree.tar") + 1 ))
	for ((i = 0; i < n; i++)); do cat "$W/tree.tar"; done | head -c $((blob_mb - blob_mb / 2))M
	rm -f "$W/tree.tar"
} >"$W/blob"
sleep 2.1 # a make trusts no timestamp within 2 s of itself

# t CMD...: wall seconds of CMD (its output to $W/last.*)
t() {
	local s e
	s=$(date +%s.%N)
	"$@" >"$W/last.out" 2>"$W/last.err" || { cat "$W/last.err" >&2; die "failed: $*"; }
	e=$(date +%s.%N)
	echo "$e - $s" | bc
}
ratio() { echo "scale=1; $1 / $2" | bc; }
same() { # IDX_A IDX_B STORE_A STORE_B
	cmp -s "$1" "$2" && diff -r "$3" "$4" >/dev/null && echo identical || echo DIFFERENT
}

# row KIND INPUT SUFFIX: the four timings for one input
row() {
	local kind=$1 in=$2 sfx=$3 tc tn tw tch r1 r2
	# populate every store and the cache (untimed), then time
	casync make --store="$W/$kind.sc" "$W/$kind.c$sfx" "$in" >/dev/null 2>&1
	"$CAFS" make -s "$W/$kind.sn" "$W/$kind.n$sfx" "$in" >/dev/null 2>&1
	"$CAFS" make --cache "$W/$kind.cache" -s "$W/$kind.sk" "$W/$kind.k$sfx" "$in" >/dev/null 2>&1
	tc=$(t casync make --store="$W/$kind.sc" "$W/$kind.c$sfx" "$in")
	tn=$(t "$CAFS" make -s "$W/$kind.sn" "$W/$kind.n$sfx" "$in")
	tw=$(t "$CAFS" -v make --cache "$W/$kind.cache" -s "$W/$kind.sk" "$W/$kind.k$sfx" "$in")
	local stat_w
	stat_w=$(grep 'make cache' "$W/last.err" | sed 's/^cafs: //')
	r1=$(same "$W/$kind.n$sfx" "$W/$kind.k$sfx" "$W/$kind.sn" "$W/$kind.sk")
	cmp -s "$W/$kind.c$sfx" "$W/$kind.n$sfx" || r1="$r1 (casync's index DIFFERS)"
	printf '%-6s %-28s %8.2f s\n' "$kind" "casync make" "$tc"
	printf '%-6s %-28s %8.2f s\n' "$kind" "cafs make (no cache)" "$tn"
	printf '%-6s %-28s %8.2f s   %sx vs casync, %sx vs cafs; %s\n' "$kind" "cafs make --cache, unchanged" \
		"$tw" "$(ratio "$tc" "$tw")" "$(ratio "$tn" "$tw")" "$r1"
	echo "#        $stat_w"
	# 1% changed
	if [ "$kind" = tree ]; then
		find "$in" -type f -size +0 | sort | awk 'NR % 100 == 0' | while read -r f; do
			python3 -c "import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[len(b)//2]^=1; b+=b'x'; open(p,'wb').write(b)" "$f"
		done
	else
		local blocks=$((blob_mb / 4)) i
		for ((i = 0; i < blocks; i += 100)); do
			head -c 4M /dev/urandom | dd of="$in" bs=4M seek=$i conv=notrunc status=none
		done
	fi
	tc=$(t casync make --store="$W/$kind.sc" "$W/$kind.c$sfx" "$in")
	tn=$(t "$CAFS" make -s "$W/$kind.sn" "$W/$kind.n$sfx" "$in")
	tch=$(t "$CAFS" -v make --cache "$W/$kind.cache" -s "$W/$kind.sk" "$W/$kind.k$sfx" "$in")
	stat_w=$(grep 'make cache' "$W/last.err" | sed 's/^cafs: //')
	r2=$(same "$W/$kind.n$sfx" "$W/$kind.k$sfx" "$W/$kind.sn" "$W/$kind.sk")
	cmp -s "$W/$kind.c$sfx" "$W/$kind.n$sfx" || r2="$r2 (casync's index DIFFERS)"
	printf '%-6s %-28s %8.2f s   (casync %.2f s, cafs %.2f s)\n' "$kind" "cafs make --cache, 1% changed" "$tch" "$tc" "$tn"
	printf '%-6s %-28s %8s     %sx vs casync, %sx vs cafs; %s\n' "$kind" "" "" "$(ratio "$tc" "$tch")" \
		"$(ratio "$tn" "$tch")" "$r2"
	echo "#        $stat_w"
}

echo "# $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); tree $(du -sh "$W/tree" | cut -f1), $(find "$W/tree" -type f | wc -l) files; blob ${blob_mb} MiB"
row tree "$W/tree" .caidx
row blob "$W/blob" .caibx

if command -v perf >/dev/null; then
	echo "# perf: warm unchanged tree make (after the 1% run, cache warm again)"
	"$CAFS" make --cache "$W/tree.cache" -s "$W/tree.sk" "$W/p.caidx" "$W/tree" >/dev/null 2>&1
	perf record -q -g -o "$W/perf.data" "$CAFS" make --cache "$W/tree.cache" -s "$W/tree.sk" "$W/p.caidx" "$W/tree" \
		>/dev/null 2>&1
	perf report -i "$W/perf.data" --stdio --no-children --sort dso,symbol 2>/dev/null | grep -v '^#' | grep '%' | head -n 15
fi
