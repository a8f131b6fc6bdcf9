#!/bin/bash
# bench/update.sh - what an OS-style update costs to download.
#
# v1 is a generated tree (text and binary files), v2 = v1 with ~6% of the
# files changed, ~2% removed and a few added. Both are packed as images
# (deterministic tars). The server is a real nginx on 127.0.0.1; bytes are
# read from its access log. Compared, for the v1 -> v2 update:
#   cafs      cache seed (v1 image) + cache fill (v2)
#   casync    casync extract --seed=v1 image
#   rsync     rsync --stats --no-whole-file (delta against a v1 copy; plain and -z)
#   tarball   the whole v2 image as .tar.zst (zstd -3)
# then the same as trees (.caidx seeded from the v1 directory, casync
# extract --seed=DIR, rsync -a),
# and the time of a full fill (empty cache) against casync extract over the
# same nginx. Percentages are of the full v2.tar.zst.
#
#   bench/update.sh [SCALE]    SCALE 1 is a ~13 MB tree (default 4)
#
# Needs: cafs (built; $CAFS or ./cafs), casync, nginx, zstd, rsync, python3.
set -u
scale=${1:-4}
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "$here/.." && pwd)
CAFS=${CAFS:-$(command -v cafs || echo ./cafs)}
CAFS=$(cd "$(dirname "$CAFS")" && pwd)/$(basename "$CAFS")
export LC_ALL=C

. "$here/workdir.sh"
bench_workdir update "${TMPDIR:-/tmp}" || { echo "bench/update.sh: cannot make a work dir" >&2; exit 1; }
need() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || { echo "bench/update.sh: $c is not installed" >&2; exit 1; }
	done
}
need casync nginx zstd rsync python3
[ -x "$CAFS" ] || { echo "bench/update.sh: no cafs binary (set CAFS)" >&2; exit 1; }
. "$top_srcdir/tests/lib-cache.sh"
. "$top_srcdir/tests/lib-http.sh"

now_ms() { echo $(($(date +%s%N) / 1000000)); }
log_bytes() { nginx_log | awk '$3 == 200 { s += $4 } END { print s + 0 }'; }
log_reqs() { nginx_log | wc -l; }
mib() { awk -v b="$1" 'BEGIN { printf "%.2f MiB", b / 1048576 }'; }

cd "$T"
gen_tree v1 1 "$scale"
update_tree v1 v2 2
tar_image v1 v1.tar
tar_image v2 v2.tar
mkdir www
"$CAFS" make -q --store www/store www/v2.caibx v2.tar >/dev/null
nginx_start www
U=$NGINX_URL
size_v2=$(stat -c %s v2.tar)
echo "update: v1 $(mib "$(stat -c %s v1.tar)") -> v2 $(mib "$size_v2") image, $(find v1 -type f | wc -l) -> $(find v2 -type f | wc -l) files"
echo

# cafs: seed the cache with v1, fill v2
t0=$(now_ms)
"$CAFS" cache seed -q --cache cache1 "$U/v2.caibx" v1.tar
t1=$(now_ms)
nginx_log_reset
"$CAFS" cache fill -q --cache cache1 --store "$U/store" "$U/v2.caibx"
t2=$(now_ms)
cafs_bytes=$(log_bytes) cafs_reqs=$(log_reqs)
"$CAFS" extract --store cache1 www/v2.caibx out.cafs && cmp -s out.cafs v2.tar || echo "cafs: WRONG RESULT" >&2

# casync extract --seed
nginx_log_reset
t3=$(now_ms)
casync extract --seed=v1.tar --store="$U/store" "$U/v2.caibx" out.casync >/dev/null
t4=$(now_ms)
casync_bytes=$(log_bytes) casync_reqs=$(log_reqs)
cmp -s out.casync v2.tar || echo "casync: WRONG RESULT" >&2

# rsync delta against a v1 copy (local, delta algorithm forced)
cp v1.tar basis.tar
rsync_bytes=$(rsync --stats --no-whole-file v2.tar basis.tar | awk -F': ' '/^Total bytes sent/ { gsub(/,/, "", $2); print $2 + 0 }')
cp v1.tar basis.tar
rsyncz_bytes=$(rsync --stats --no-whole-file -z v2.tar basis.tar | awk -F': ' '/^Total bytes sent/ { gsub(/,/, "", $2); print $2 + 0 }')
cmp -s basis.tar v2.tar || echo "rsync: WRONG RESULT" >&2
tarball_bytes=$(zstd -3 -q -c v2.tar | wc -c)

printf '%-44s %14s %12s\n' "method (v1 -> v2)" "downloaded" "of tar.zst"
row() { printf '%-44s %14s %11.1f%%\n' "$1" "$(mib "$2")" "$(awk -v a="$2" -v b="$tarball_bytes" 'BEGIN { print 100 * a / b }')"; }
row "cafs cache seed + fill ($cafs_reqs requests)" "$cafs_bytes"
row "casync extract --seed ($casync_reqs requests)" "$casync_bytes"
row "rsync --no-whole-file (bytes sent)" "$rsync_bytes"
row "rsync --no-whole-file -z (bytes sent)" "$rsyncz_bytes"
row "full v2.tar.zst (zstd -3)" "$tarball_bytes"
echo
echo "cafs: seed $((t1 - t0)) ms, fill $((t2 - t1)) ms; casync extract --seed $((t4 - t3)) ms"

# the same update as trees: .caidx, seeded from the v1 directory itself
"$CAFS" make -q --store www/tstore www/v2.caidx v2 >/dev/null
nginx_log_reset
t0=$(now_ms)
"$CAFS" cache seed -q --cache cache3 "$U/v2.caidx" v1
"$CAFS" cache fill -q --cache cache3 --store "$U/tstore" "$U/v2.caidx"
t1=$(now_ms)
tcafs_bytes=$(log_bytes) tcafs_reqs=$(log_reqs)
"$CAFS" extract --store cache3 www/v2.caidx tout.cafs && diff -r -q tout.cafs v2 >/dev/null || echo "cafs tree: WRONG RESULT" >&2
nginx_log_reset
t2=$(now_ms)
casync extract --seed=v1 --store="$U/tstore" "$U/v2.caidx" tout.casync >/dev/null
t3=$(now_ms)
tcasync_bytes=$(log_bytes) tcasync_reqs=$(log_reqs)
diff -r -q tout.casync v2 >/dev/null || echo "casync tree: WRONG RESULT" >&2
cp -a v1 basis.tree
trsync_bytes=$(rsync -a --delete --stats --no-whole-file v2/ basis.tree/ | awk -F': ' '/^Total bytes sent/ { gsub(/,/, "", $2); print $2 + 0 }')
echo
echo "as trees (.caidx, seeded from the v1 directory):"
row "cafs cache seed DIR + fill ($tcafs_reqs requests)" "$tcafs_bytes"
row "casync extract --seed=DIR ($tcasync_reqs requests)" "$tcasync_bytes"
row "rsync -a --no-whole-file (bytes sent)" "$trsync_bytes"
echo "cafs: seed + fill $((t1 - t0)) ms; casync extract --seed $((t3 - t2)) ms"
echo "(requests and bytes include the index: cafs fetches it twice, in seed and in fill)"
echo

# full download: cafs cache fill (empty cache) vs casync extract, same server
nginx_log_reset
t0=$(now_ms)
"$CAFS" cache fill -q --cache cache2 --store "$U/store" "$U/v2.caibx"
t1=$(now_ms)
casync extract --store="$U/store" "$U/v2.caibx" out.casync2 >/dev/null
t2=$(now_ms)
"$CAFS" extract --store "$U/store" "$U/v2.caibx" out.cafs3
t3=$(now_ms)
cmp -s out.cafs3 v2.tar || echo "cafs extract: WRONG RESULT" >&2
"$CAFS" extract --store cache2 www/v2.caibx out.cafs2 && cmp -s out.cafs2 v2.tar || echo "cafs fill: WRONG RESULT" >&2
fill_ms=$((t1 - t0)) casync_ms=$((t2 - t1)) extract_ms=$((t3 - t2))
echo "full download of v2 ($(mib "$(find www/store -name '*.cacnk' -printf '%s\n' | awk '{s+=$1} END {print s}')") of chunks over nginx):"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / (b ? b : 1) }'; }
echo "  cafs cache fill (chunks into the cache) ${fill_ms} ms; casync/cafs $(ratio "$casync_ms" "$fill_ms")"
echo "  cafs extract (image out)                ${extract_ms} ms; casync/cafs $(ratio "$casync_ms" "$extract_ms")"
echo "  casync extract (image out)              ${casync_ms} ms"
