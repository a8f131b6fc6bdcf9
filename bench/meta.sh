#!/bin/bash
# bench/meta.sh - the metadata sidecar (X.caidx.cameta): what a metadata
# walk of a remote image costs with and without it, served by nginx on
# 127.0.0.1, fresh mount and empty cache each time.
#
# Image: BENCH_ROOTFS (a directory, e.g. a debootstrap minbase you built:
# `debootstrap --variant=minbase bookworm /var/tmp/rootfs http://...`), or
# by default a copy of /usr/include. `cafs make` writes the index, store and
# sidecar; the same index is also served from a directory without the
# sidecar (nometa/). Rows:
#   sidecar / store        sizes, and the sidecar as % of the store
#   mount + first ls       cold, from the mount command to `ls MNT`
#   cold find | wc -l      right after: seconds, .cacnk GETs and bytes, % of the store
#   cold find -ls          the same with a stat of every entry (fresh mount)
#   warm find | wc -l      same mount again, best of 3, vs the plain directory
#   list URL               `cafs list` of the URL: seconds and .cacnk GETs
# Env: CAFS (default ./cafs), BENCH_ROOTFS, BENCH_DIR (default /var/tmp).
# Needs root (drop_caches, FUSE), nginx, fusermount3.
set -u
export LC_ALL=C
CAFS=${CAFS:-./cafs}
CAFS=$(cd "$(dirname "$CAFS")" && pwd)/$(basename "$CAFS")
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "$here/.." && pwd)
die() { echo "bench/meta.sh: $*" >&2; exit 1; }
[ -x "$CAFS" ] || die "no cafs binary at $CAFS (set CAFS)"
for c in nginx fusermount3; do command -v $c >/dev/null || die "$c is not installed"; done
[ -w /proc/sys/vm/drop_caches ] || die "cannot drop the page cache (run as root)"

. "$here/workdir.sh"
bench_workdir meta || die "cannot make a work dir"
need() { :; }
. "$top_srcdir/tests/lib-http.sh"
cd "$T" || exit 1

src=${BENCH_ROOTFS:-/usr/include}
[ -d "$src" ] || die "$src is not a directory"
mkdir -p www/nometa plain
cp -a "$src/." plain/ || die "cannot copy $src"
"$CAFS" make --store=www/default.castr www/tree.caidx plain >/dev/null || die "cafs make failed"
cp www/tree.caidx www/nometa/tree.caidx
ln -s ../default.castr www/nometa/default.castr
entries=$(find plain | wc -l)
store=$(du -sb --apparent-size www/default.castr | cut -f1)
chunks=$(find www/default.castr -name '*.cacnk' | wc -l)
meta=$(stat -c %s www/tree.caidx.cameta)
echo "# bench/meta.sh: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# image: $src, $entries entries, store $((store >> 10)) KiB in $chunks chunks"
awk -v m="$meta" -v s="$store" 'BEGIN { printf "sidecar / store: %d KiB / %d KiB = %.2f%%\n", m / 1024, s / 1024, 100 * m / s }'

nginx_start "$T/www" || die "nginx did not start"
U=$NGINX_URL
gets() { nginx_log | awk '$2 ~ /\.cacnk$/ { n++; b += $4 } END { printf "%d GETs, %d KiB = %.1f%% of the store", n, b / 1024, 100 * b / '"$store"' }'; }

mnt=$T/mnt
mnt_pid=
mnt_cleanup() {
	is_mounted "$mnt" && fusermount3 -u -z "$mnt"
	[ -n "$mnt_pid" ] && { kill "$mnt_pid"; wait "$mnt_pid"; }
}
at_cleanup mnt_cleanup
n=0
mount_cold() { # INDEX-PATH: fresh cache, dropped caches; sets t_ls
	n=$((n + 1))
	mkdir -p "$mnt"
	drop_caches
	nginx_log_reset
	local t0
	t0=$(now)
	"$CAFS" mount -f --cache="$T/cache.$n" "$U/$1" "$mnt" >"$T/mount.$n.log" 2>&1 &
	mnt_pid=$!
	for ((i = 0; i < 3000; i++)); do
		[ -n "$(ls "$mnt" 2>/dev/null)" ] && break
		sleep 0.01
	done
	t_ls=$(since "$t0")
}
umount_it() { fusermount3 -u "$mnt"; wait "$mnt_pid"; mnt_pid=; }
best3() { # CMD...: best wall time of 3 runs
	local best= t0 t
	for k in 1 2 3; do
		t0=$(now)
		"$@" >/dev/null 2>&1
		t=$(since "$t0")
		best=$(awk -v a="${best:-$t}" -v b="$t" 'BEGIN { print (b < a ? b : a) }')
	done
	echo "$best"
}
find_count() { find "$1" | wc -l; }
find_ls() { find "$1" -ls | wc -l; }

plain_warm=$(find_count plain >/dev/null; best3 find_count plain)
for v in with without; do
	idx=tree.caidx
	[ $v = without ] && idx=nometa/tree.caidx
	mount_cold "$idx"
	nginx_log_reset
	t0=$(now)
	got=$(find "$mnt" | wc -l)
	t=$(since "$t0")
	echo "$v sidecar: mount + first ls ${t_ls} s; cold find | wc -l: $t s ($got entries), $(gets)"
	warm=$(best3 find_count "$mnt")
	awk -v w="$warm" -v p="$plain_warm" -v v="$v" 'BEGIN { printf "%s sidecar: warm find | wc -l: %.4f s = %.1fx the plain directory (%.4f s)\n", v, w, w / p, p }'
	umount_it
	mount_cold "$idx"
	nginx_log_reset
	t0=$(now)
	find "$mnt" -ls >/dev/null
	echo "$v sidecar: cold find -ls: $(since "$t0") s, $(gets)"
	umount_it
	nginx_log_reset
	t0=$(now)
	"$CAFS" list "$U/$idx" >/dev/null
	echo "$v sidecar: cafs list URL: $(since "$t0") s, $(gets)"
done
