#!/bin/bash
# bench/mount.sh - the FUSE mount: `cafs mount` against `casync mount`, side
# by side in one run, both reading from the same nginx on 127.0.0.1.
#
# Image: an OS-like tree copied once into the work dir: /usr/include,
# /usr/share/doc and shared libraries (< 8 MiB each, BENCH_LIB_MB MiB of
# them) from /usr/lib/x86_64-linux-gnu; `cafs make` turns it into a .caidx
# and store (checked first: `casync list` must list every entry and
# `casync digest` must print cafs's digest; the tree `cafs extract`s back
# identical). A blob: `gen-data BENCH_BLOB 3 mixed` as a .caibx.
#
# Every "cold" figure is on a fresh mount after `sync; echo 3 >
# /proc/sys/vm/drop_caches`, with an empty --cache dir for cafs (casync
# keeps fetched chunks in a fresh /var/tmp/*.carem of its own per run).
# "warm" is the same command again on the same mount, best of
# BENCH_WARM_RUNS (default 3) runs.
#   mount -> ls      from starting the mount command until `ls MNT` lists
#                    the root (both run in the foreground, in the background
#                    of this shell, polled)
#   find | wc -l     the metadata walk, right after that first ls
#   tar cold / warm  `tar -cf - MNT | cat >/dev/null` (GNU tar does not read
#                    files when writing to /dev/null itself)
#   small file       `cat` of one small file deep in the tree
#   dd blob          `dd bs=1M` of the blob's file, cafs only: casync mount
#                    takes only archives, and casync exposes a blob through
#                    nbd (`casync mkdev`), not FUSE
#   local disk       the same tar / dd on the extracted copy, warm
# HTTP requests and bytes (nginx's log) are counted per step: the mount's up
# to its first ls, then find's, tar's and the small file's, each after it.
# Times are wall seconds; ratio is casync/cafs (> 1: cafs faster). A casync
# step is capped at BENCH_CAP seconds (shown as "> CAP").
#
#   bench/mount.sh                                 (about 4 minutes)
#   BENCH_LIB_MB=0 BENCH_BLOB=64M bench/mount.sh   (a smaller image)
#
# Env: CAFS (default ./cafs), GEN_DATA (default tests/gen-data beside CAFS),
# BENCH_DIR (parent of the work dir, default /var/tmp; removed at exit),
# BENCH_LIB_MB (default 100), BENCH_BLOB (default 256M), BENCH_CAP (default
# 180), BENCH_WARM_RUNS (default 3). Needs root (drop_caches, FUSE), casync,
# nginx, fusermount3, python3.
set -u
export LC_ALL=C
CAFS=${CAFS:-./cafs}
CAFS=$(cd "$(dirname "$CAFS")" && pwd)/$(basename "$CAFS")
GEN=${GEN_DATA:-$(dirname "$CAFS")/tests/gen-data}
LIB_MB=${BENCH_LIB_MB:-100}
BLOB=${BENCH_BLOB:-256M}
CAP=${BENCH_CAP:-180}
WARM=${BENCH_WARM_RUNS:-3}
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "$here/.." && pwd)

die() { echo "bench/mount.sh: $*" >&2; exit 1; }
[ -x "$CAFS" ] || die "no cafs binary at $CAFS (set CAFS)"
[ -x "$GEN" ] || die "no gen-data at $GEN (run make in the build dir, or set GEN_DATA)"
for c in casync nginx fusermount3 python3 timeout; do command -v $c >/dev/null || die "$c is not installed"; done
[ -w /proc/sys/vm/drop_caches ] || die "cannot drop the page cache (run as root)"
[ -c /dev/fuse ] || die "no /dev/fuse"

. "$here/workdir.sh"
bench_workdir mount || die "cannot make a work dir"
need() { :; }
. "$top_srcdir/tests/lib-http.sh"

cd "$T" || exit 1

echo "# bench/mount.sh: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs ($(lscpu | sed -n 's/^Model name: *//p' | head -n 1)), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# cafs: $("$CAFS" --version)  casync: $(casync --version 2>&1 | head -n 1) (Debian $(dpkg-query -W -f='${Version}' casync 2>/dev/null)), kernel $(uname -r)"

# ---- the images ----
mkdir -p src/lib www
cp -a /usr/include src/include && cp -a /usr/share/doc src/doc || die "cannot copy the tree"
if [ "$LIB_MB" -gt 0 ]; then
	(cd /usr/lib/x86_64-linux-gnu && find . -maxdepth 1 -type f -name '*.so*' -size -8M -printf '%s %P\n' | sort -k2 |
		awk -v max=$((LIB_MB << 20)) '{ n += $1; if (n > max) exit; print $2 }' | tar -cf - -T -) |
		tar -xf - -C src/lib || die "cannot copy the libraries"
fi
entries=$(find src | wc -l)
tree_bytes=$(du -sb --apparent-size src | cut -f1)
digest=$("$CAFS" make --store=www/default.castr www/tree.caidx src) || die "cafs make of the tree failed"
chunks=$(find www/default.castr -name '*.cacnk' | wc -l)
[ "$(casync list www/tree.caidx 2>/dev/null | wc -l)" = "$entries" ] || die "casync list does not list the $entries entries of our .caidx"
[ "$(casync digest --store=www/default.castr www/tree.caidx 2>/dev/null)" = "$digest" ] || die "casync digest differs from cafs's"
"$CAFS" extract --store=www/default.castr www/tree.caidx ext || die "cafs extract of the tree failed"
diff -r --no-dereference src ext >/dev/null || die "the extracted tree differs from its source"
rm -rf src
# a small file deep in the tree (most path components, then name)
small=$(cd ext && find . -type f -size -4k -printf '%d %p\n' | sort -k1,1n -k2 | tail -n 1 | cut -d' ' -f2-)
small=${small#./}
"$GEN" "$BLOB" 3 mixed >blob || die "gen-data failed"
"$CAFS" make --store=www/default.castr www/blob.caibx blob >/dev/null || die "cafs make of the blob failed"
blob_bytes=$(stat -c %s blob)
echo "# tree: $entries entries, $((tree_bytes >> 20)) MiB, $chunks chunks ($(du -sm www/default.castr | cut -f1) MiB store incl. blob); small file: $small ($(stat -c %s "ext/$small") bytes)"
echo "# blob: $((blob_bytes >> 20)) MiB (gen-data $BLOB 3 mixed), cafs only (casync mount takes archives; casync mkdev is nbd)"

nginx_start "$T/www" || die "nginx did not start"
U=$NGINX_URL

# ---- mounts ----
# mnt_start TOOL INDEX MNT: start TOOL's mount in the background; sets
# mnt_pid, mnt_dir and mnt_t0. Cold: page cache dropped, fresh cache dir.
# One mount at a time; mnt_pid is cleared once it is reaped, so the exit
# trap never signals a PID that may have been reused.
mnt_n=0 mnt_pid= mnt_dir=
mnt_cleanup() {
	[ -n "$mnt_dir" ] || return 0
	fusermount3 -u -z "$mnt_dir" || umount -l "$mnt_dir"
	if [ -n "$mnt_pid" ]; then
		kill "$mnt_pid"
		wait "$mnt_pid"
	fi
}
at_cleanup mnt_cleanup
mnt_start() {
	local tool=$1 index=$2 mnt=$3
	mnt_n=$((mnt_n + 1))
	mkdir -p "$mnt"
	drop_caches
	nginx_log_reset
	mnt_t0=$(now)
	if [ "$tool" = cafs ]; then
		"$CAFS" mount -f --cache="$T/cache.$mnt_n" --store="$U/default.castr" "$U/$index" "$mnt" \
			>"$T/mount.$mnt_n.log" 2>&1 &
	else
		casync mount --store="$U/default.castr" "$U/$index" "$mnt" >"$T/mount.$mnt_n.log" 2>&1 &
	fi
	mnt_pid=$!
	mnt_dir=$mnt
}
# mnt_wait_ls MNT: until `ls MNT` lists something (cap 60 s); sets mnt_ls_s
mnt_wait_ls() {
	local mnt=$1 i
	for ((i = 0; i < 6000; i++)); do
		if [ -n "$(ls "$mnt" 2>/dev/null)" ]; then
			mnt_ls_s=$(since "$mnt_t0")
			return 0
		fi
		kill -0 "$mnt_pid" 2>/dev/null || break
		sleep 0.01
	done
	cat "$T/mount.$mnt_n.log" >&2
	die "mount of $mnt did not come up"
}
mnt_stop() {
	local mnt=$1 i
	fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -u -z "$mnt" 2>/dev/null
	for ((i = 0; i < 200; i++)); do
		kill -0 "$mnt_pid" 2>/dev/null || break
		sleep 0.05
	done
	kill "$mnt_pid" 2>/dev/null # still our unreaped child at worst: no reuse
	wait "$mnt_pid" 2>/dev/null
	mnt_pid=
	is_mounted "$mnt" && umount -l "$mnt"
	mnt_dir=
}

reqs() { nginx_log | awk '{ n++; b += $4 } END { printf "%d GETs, %.1f MB", n, b / 1e6 }'; }

for tool in casync cafs; do
	m=$T/mnt.$tool
	# mount -> ls, then the metadata walk
	mnt_start $tool tree.caidx "$m"
	mnt_wait_ls "$m"
	R[$tool.ls]=$mnt_ls_s
	R[$tool.lsreqs]=$(reqs)
	nginx_log_reset
	timed $tool.find "find '$m' | wc -l"
	R[$tool.findreqs]=$(reqs)
	case ${R[$tool.find]} in
	[0-9]*) [ "$(cat "$T/out.$tool.find")" = "$entries" ] || R[$tool.find]="WRONG($(cat "$T/out.$tool.find"))" ;;
	esac
	mnt_stop "$m"

	# tar, cold then warm; requests of the cold one
	mnt_start $tool tree.caidx "$m"
	mnt_wait_ls "$m"
	nginx_log_reset
	timed $tool.tarcold "tar -cf - -C '$m' . | cat >/dev/null"
	R[$tool.reqs]=$(reqs)
	[ $tool = cafs ] && "$CAFS" stats "$m" >"$T/stats.tar" 2>&1
	best $tool.tarwarm "$WARM" "tar -cf - -C '$m' . | cat >/dev/null"
	mnt_stop "$m"

	# one small file, cold
	mnt_start $tool tree.caidx "$m"
	mnt_wait_ls "$m"
	nginx_log_reset
	timed $tool.small "cat '$m/$small' >/dev/null"
	R[$tool.smallreqs]=$(reqs)
	cmp -s "$m/$small" "ext/$small" || R[$tool.small]=WRONG
	mnt_stop "$m"
done

# the blob (cafs only)
m=$T/mnt.blob
mnt_start cafs blob.caibx "$m"
mnt_wait_ls "$m"
timed cafs.ddcold "dd if='$m/blob' of=/dev/null bs=1M"
best cafs.ddwarm "$WARM" "dd if='$m/blob' of=/dev/null bs=1M"
cmp -s "$m/blob" blob || R[cafs.ddwarm]=WRONG
mnt_stop "$m"

# local disk, warm
tar -cf - -C ext . | cat >/dev/null
best local.tarwarm "$WARM" "tar -cf - -C ext . | cat >/dev/null"
cat blob >/dev/null
best local.ddwarm "$WARM" "dd if=blob of=/dev/null bs=1M"

nginx_stop

# ---- the table ----
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.2f", a / b; else if (a ~ /^>/) printf "> %.2f", substr(a, 3) / b; else print "-" }'; }
row() { # NAME CASYNC CAFS [LOCAL]
	printf '%-22s %10s %10s %9s %10s\n' "$1" "$2" "$3" "$(ratio "$2" "$3")" "${4:--}"
}
echo
printf '%-22s %10s %10s %9s %10s\n' "step (wall s)" casync cafs ratio "local disk"
row "mount -> ls" "${R[casync.ls]}" "${R[cafs.ls]}"
row "find | wc -l (cold)" "${R[casync.find]}" "${R[cafs.find]}"
row "tar cold" "${R[casync.tarcold]}" "${R[cafs.tarcold]}"
row "tar warm" "${R[casync.tarwarm]}" "${R[cafs.tarwarm]}" "${R[local.tarwarm]}"
row "small file (cold)" "${R[casync.small]}" "${R[cafs.small]}"
row "dd blob cold" "n/a" "${R[cafs.ddcold]}"
row "dd blob warm" "n/a" "${R[cafs.ddwarm]}" "${R[local.ddwarm]}"
echo
echo "mount -> ls, HTTP:  casync ${R[casync.lsreqs]}; cafs ${R[cafs.lsreqs]}"
echo "find, HTTP:         casync ${R[casync.findreqs]}; cafs ${R[cafs.findreqs]}"
echo "tar cold, HTTP:     casync ${R[casync.reqs]}; cafs ${R[cafs.reqs]} ($chunks chunks in the store)"
echo "small file, HTTP:   casync ${R[casync.smallreqs]}; cafs ${R[cafs.smallreqs]}"
mbs() { awk -v b="$1" -v t="$2" 'BEGIN { if (t ~ /^[0-9.]+$/ && t > 0) printf "%.0f MB/s", b / t / 1e6; else print "-" }'; }
echo "throughput:         tar cold casync $(mbs "$tree_bytes" "${R[casync.tarcold]}"), cafs $(mbs "$tree_bytes" "${R[cafs.tarcold]}"); dd cold cafs $(mbs "$blob_bytes" "${R[cafs.ddcold]}"), warm $(mbs "$blob_bytes" "${R[cafs.ddwarm]}")"
echo "cafs tar warm / local disk: $(ratio "${R[cafs.tarwarm]}" "${R[local.tarwarm]}")x (goal: within 2x)"
echo "cafs stats after the cold tar: $(grep -E '^(chunks_fetched|cache_hits|http_requests|prefetches|prefetch_hits):' "$T/stats.tar" | tr '\n' ' ')"
echo "# load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
