#!/bin/bash
# bench/delta.sh - what an update costs a device holding FROM, side by side:
# by chunk store, by a static delta pack (cafs delta make), against
# `zstd --patch-from` and `rsync -z` of the same pair. Bytes and requests
# of cafs are read from a real nginx's access log on 127.0.0.1 (the
# index's own GET included); zstd is one file (one request); rsync's are
# its "bytes sent" (local, delta algorithm forced).
#
# Pairs:
#   minbase   a Debian bookworm minbase (bench/minbase.sh's, or
#             BENCH_ROOTFS) and the same with a point release's upgrades
#             unpacked over it: the packages it has whose newer .deb is in
#             /var/cache/apt/archives (or BENCH_DEBS, a list of .deb files),
#             as a tar image (.caibx, RAUC style: the old image as --seed)
#             and as a tree (.caidx: the old directory as --seed)
#   blob      a 1 GiB VM-disk-like blob (1 MiB blocks, half text, half
#             random) and the same with 300 scattered 4 KiB writes, 40
#             edited 64 KiB regions and 8 MiB appended (BENCH_BLOB_MIB: size)
#
#   bench/delta.sh [minbase|blob|all]    (default all)
#
# Env: CAFS, BENCH_DIR (work dir parent, default /var/tmp), BENCH_ZSTD_LEVEL
# (zstd --patch-from's level, default 19; BENCH_ZSTD=0: not run, it takes
# minutes), BENCH_LEVEL (the pack's, default 19), BENCH_MOUNT=0: no mount rows
# (a cold read of TO through `cafs mount` with FROM's chunks in its cache,
# without and with the pack; needs FUSE).
# Needs: cafs, nginx, zstd, rsync, python3, tar; dpkg-deb for minbase.
set -u
what=${1:-all}
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "$here/.." && pwd)
CAFS=${CAFS:-$(command -v cafs || echo ./cafs)}
CAFS=$(cd "$(dirname "$CAFS")" && pwd)/$(basename "$CAFS")
export LC_ALL=C
die() { echo "bench/delta.sh: $*" >&2; exit 1; }
[ -x "$CAFS" ] || die "no cafs binary (set CAFS)"
for c in nginx zstd rsync python3 tar; do command -v $c >/dev/null || die "$c is not installed"; done
zlevel=${BENCH_ZSTD_LEVEL:-19}
plevel=${BENCH_LEVEL:-19}

. "$here/workdir.sh"
bench_workdir delta || die "cannot make a work dir"
need() { :; }
. "$top_srcdir/tests/lib-cache.sh"
. "$top_srcdir/tests/lib-http.sh"
cd "$T" || exit 1

now_ms() { echo $(($(date +%s%N) / 1000000)); }
log_bytes() { nginx_log | awk '$1 == "GET" && ($3 == 200 || $3 == 206) { s += $4 } END { print s + 0 }'; }
log_reqs() { nginx_log | awk '$1 == "GET"' | wc -l; }
mb() { awk -v b="$1" 'BEGIN { printf "%.2f MB", b / 1e6 }'; }

echo "# bench/delta.sh: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $("$CAFS" --version); $(zstd --version)"
mkdir -p www
nginx_start "$T/www" || die "nginx did not start"
U=$NGINX_URL

row() { printf '  %-46s %12s %9s\n' "$1" "$(mb "$2")" "$3"; }

# mount_rows NAME EXT KIND: a cold read of all of TO (tar of the tree,
# cat of the blob) through `cafs mount` whose cache holds FROM's chunks,
# without and with the pack (--delta): bytes and requests (the access log)
mount_pass() {
	local name=$1 ext=$2 kind=$3 cache=$4 mnt=$T/mnt
	shift 4
	mkdir -p "$mnt"
	"$CAFS" mount -f --cache "$cache" --profile=none --store "$U/store" "$@" "$U/$name.$ext" "$mnt" 2>"$cache.log" &
	local pid=$! i
	at_cleanup "fusermount3 -u -z '$mnt'; kill $pid"
	for ((i = 0; i < 200; i++)); do is_mounted "$mnt" && break; sleep 0.05; done
	is_mounted "$mnt" || die "mount did not appear: $(cat "$cache.log")"
	local t0 t1 got
	t0=$(now_ms)
	if [ "$kind" = tree ]; then
		got=$(tar -cf - -C "$mnt" . | wc -c)
	else
		got=$(cat "$mnt/$name" | wc -c)
	fi
	t1=$(now_ms)
	fusermount3 -u "$mnt"
	wait "$pid"
	grep -q warning "$cache.log" && echo "  mount: $(grep warning "$cache.log")" >&2
	echo "$((t1 - t0)) $got"
}
mount_rows() {
	local name=$1 ext=$2 kind=$3 mb mr pb pr x
	command -v fusermount3 >/dev/null && [ -c /dev/fuse ] || { echo "  (no FUSE: mount rows skipped)"; return; }
	# a cache holding FROM's chunks (from the device's own store)
	"$CAFS" cache fill -q --cache "$name/cfrom" --store "$name/default.castr" "$name/from.$ext" || die "cache fill FROM"
	cp -a "$name/cfrom" "$name/cpack"
	nginx_log_reset
	x=$(mount_pass "$name" "$ext" "$kind" "$name/cfrom")
	mb=$(log_bytes) mr=$(log_reqs)
	nginx_log_reset
	x="$x / $(mount_pass "$name" "$ext" "$kind" "$name/cpack" --delta "$U/$name.pack")"
	pb=$(log_bytes) pr=$(log_reqs)
	row "cafs mount, cold read of TO, by chunk store" "$mb" "$mr"
	row "cafs mount --delta (pack), cold read of TO" "$pb" "$pr"
	echo "  mount reads (ms, bytes read): $x"
	rm -rf "$name/cfrom" "$name/cpack"
}

# compare NAME FROM TO KIND: FROM/TO files (blob) or directories (tree);
# for trees, FROM.tar/TO.tar are what zstd and rsync get
compare() {
	local name=$1 from=$2 to=$3 kind=$4 ext seed_from zfrom zto t0 t1
	if [ "$kind" = tree ]; then ext=caidx; zfrom=$from.tar; zto=$to.tar; else ext=caibx; zfrom=$from; zto=$to; fi
	mkdir -p "$name"
	"$CAFS" make -q "$name/from.$ext" "$from" >/dev/null || die "make FROM"
	"$CAFS" make -q --store www/store "www/$name.$ext" "$to" >/dev/null || die "make TO"
	t0=$(now_ms)
	"$CAFS" delta make -v --level "$plevel" --from-store "$name/default.castr" --store www/store \
		"$name/from.$ext" "www/$name.$ext" "www/$name.pack" 2>"$name/make.log" || die "delta make"
	t1=$(now_ms)
	local make_ms=$((t1 - t0))
	"$CAFS" delta info --from-store "$name/default.castr" --store www/store "$name/from.$ext" "www/$name.$ext" \
		"www/$name.pack" >"$name/info.txt"
	local out=$name/out.$kind
	nginx_log_reset
	"$CAFS" extract --seed "$from" --store "$U/store" "$U/$name.$ext" "$out.store" || die "extract (store)"
	local sb sr
	sb=$(log_bytes) sr=$(log_reqs)
	nginx_log_reset
	t0=$(now_ms)
	"$CAFS" extract --seed "$from" --delta "$U/$name.pack" --store "$U/store" "$U/$name.$ext" "$out.pack" || die "extract (pack)"
	t1=$(now_ms)
	local pb pr
	pb=$(log_bytes) pr=$(log_reqs)
	if [ "$kind" = tree ]; then
		# casync's digest of the trees (special files, hard links and all)
		local want
		want=$("$CAFS" digest "$to")
		[ "$("$CAFS" digest "$out.store")" = "$want" ] && [ "$("$CAFS" digest "$out.pack")" = "$want" ] ||
			echo "  WRONG RESULT" >&2
	else
		cmp -s "$out.store" "$to" && cmp -s "$out.pack" "$to" || echo "  WRONG RESULT" >&2
	fi
	rm -rf "$out.store" "$out.pack"
	local zb zt0 zt1
	zt0=$(now_ms)
	if [ "${BENCH_ZSTD:-1}" = 0 ]; then zb=0; else
		zb=$(nice zstd -q -"$zlevel" --ultra --long=31 -T1 --patch-from="$zfrom" -c "$zto" 2>/dev/null | wc -c)
	fi
	zt1=$(now_ms)
	cp "$zfrom" "$name/basis"
	local rz
	rz=$(rsync --stats --no-whole-file -z "$zto" "$name/basis" | awk -F': ' '/^Total bytes sent/ { gsub(/,/, "", $2); print $2 + 0 }')
	cmp -s "$name/basis" "$zto" || echo "  rsync: WRONG RESULT" >&2
	rm -f "$name/basis"
	echo "$name ($kind): $(sed -n 's/^Image: //p' "$name/info.txt")"
	printf '  %-46s %12s %9s\n' "method" "bytes" "requests"
	row "cafs extract --seed, by chunk store" "$sb" "$sr"
	row "cafs extract --seed --delta (pack)" "$pb" "$pr"
	row "  the pack file ($(stat -c %s "www/$name.pack") bytes)" "$(stat -c %s "www/$name.pack")" 1
	row "zstd -$zlevel --long=31 --patch-from" "$zb" 1
	row "rsync -z --no-whole-file (bytes sent)" "$rz" -
	[ "${BENCH_MOUNT:-1}" = 0 ] || mount_rows "$name" "$ext" "$kind"
	echo "  delta info: $(sed -n 's/^By chunk store: //p' "$name/info.txt" | tr -d '\n'); pack: $(sed -n 's/^By delta pack: //p' "$name/info.txt")"
	echo "  delta make: $make_ms ms; $(sed -n 's/^cafs: //p' "$name/make.log")"
	echo "  extract with the pack: $((t1 - t0)) ms; zstd --patch-from: $((zt1 - zt0)) ms"
}

if [ "$what" = all ] || [ "$what" = minbase ]; then
	img=${BENCH_ROOTFS:-${BENCH_CACHE:-${BENCH_DIR:-/var/tmp}/cafs-bench-cache}/minbase-bookworm}
	[ -x "$img/bin/sh" ] || die "no minbase at $img: run bench/minbase.sh once, or set BENCH_ROOTFS"
	command -v dpkg-deb >/dev/null || die "dpkg-deb is not installed"
	cp -a "$img/." mb1/ && cp -a "$img/." mb2/ || die "cannot copy $img"
	debs=${BENCH_DEBS:-$(awk '/^Package:/ { p = $2 } /^Version:/ { print p, $2 }' mb1/var/lib/dpkg/status |
		while read -r p v; do
			for f in /var/cache/apt/archives/"${p}"_*.deb; do
				[ -e "$f" ] || continue
				nv=$(dpkg-deb -f "$f" Version)
				[ "$nv" != "$v" ] && dpkg --compare-versions "$nv" gt "$v" && echo "$f"
			done
		done)}
	[ -n "$debs" ] || die "no newer .deb of a minbase package in /var/cache/apt/archives (set BENCH_DEBS)"
	files=0
	for f in $debs; do
		dpkg-deb -x "$f" mb2 || die "dpkg-deb -x $f"
		files=$((files + $(dpkg-deb -c "$f" | grep -vc '/$')))
		p=$(dpkg-deb -f "$f" Package) v=$(dpkg-deb -f "$f" Version)
		# the status file says so too, as dpkg would
		python3 - mb2/var/lib/dpkg/status "$p" "$v" <<'PY'
import sys
path, pkg, ver = sys.argv[1:]
out, cur = [], None
for line in open(path):
    if line.startswith('Package: '): cur = line.split()[1]
    if cur == pkg and line.startswith('Version: '): line = 'Version: %s\n' % ver
    out.append(line)
open(path, 'w').writelines(out)
PY
	done
	echo "minbase update: $(echo $debs | wc -w) packages upgraded ($(for f in $debs; do basename "$f" .deb; done | tr '\n' ' ')), $files files"
	tar_image mb1 mb1.tar
	tar_image mb2 mb2.tar
	compare minbase-image mb1.tar mb2.tar blob
	compare minbase-tree mb1 mb2 tree
	rm -rf mb1 mb2 mb1.tar mb2.tar minbase-* www/minbase-* www/store
	echo
fi

if [ "$what" = all ] || [ "$what" = blob ]; then
	mib=${BENCH_BLOB_MIB:-1024}
	python3 - "$mib" <<PY
$_GEN_PY
import sys
n = int(sys.argv[1])
with open('disk1.img', 'wb') as f:
    for i in range(n):
        f.write(gen(1 << 20, 1000 + i, "text" if i % 2 else "random"))
r = Gen(7)
with open('disk1.img', 'rb') as f, open('disk2.img', 'wb') as g:
    while True:
        b = f.read(64 << 20)
        if not b: break
        g.write(b)
size = n << 20
with open('disk2.img', 'r+b') as g:
    for _ in range(300):                     # scattered 4 KiB block writes
        g.seek(r.below(size // 4096) * 4096); g.write(r.bytes(4096))
    for _ in range(40):                      # edited regions: small changes in 64 KiB
        at = r.below(size - 65536); g.seek(at); d = bytearray(g.read(65536))
        for _ in range(20):
            o = r.below(65536 - 64); d[o:o + 32] = r.bytes(32, "text")
        g.seek(at); g.write(d)
    g.seek(0, 2); g.write(r.bytes(8 << 20))  # grown at the end
PY
	echo "blob update: ${mib} MiB, 300 4 KiB writes, 40 edited 64 KiB regions, 8 MiB appended"
	compare blob disk1.img disk2.img blob
fi
