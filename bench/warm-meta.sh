#!/bin/bash
# bench/warm-meta.sh - issue 24 goal 1's warm metadata rows alone, for two
# cafs binaries side by side (A/B, interleaved, best of N), against the
# plain directory: warm `find | wc -l`, `ls -lR` and `find | xargs stat` of
# a mounted root file system, and the FUSE requests the warm runs left
# (`cafs stats`' fuse_* counters; fuse_getxattr is ls -l's security.selinux
# probe). Two images: the tree as it is (a debootstrap minbase has no
# xattr at all) and, with BENCH_XATTR=1 (default), the same tree with one
# user.* xattr on one file, so that the mount must answer getxattr.
#
# Image: BENCH_ROOTFS, else BENCH_CACHE/minbase-bookworm as bench/minbase.sh
# builds it (run that once first). The store is local (`cafs make`, with
# its metadata sidecar): warm figures do not touch it.
#
#   CAFS=/tmp/new-cafs CAFS_OLD=/tmp/old-cafs bench/warm-meta.sh
#
# Env: CAFS (default ./cafs), CAFS_OLD (optional: the A side), BENCH_DIR
# (/var/tmp), BENCH_CACHE, BENCH_ROOTFS, BENCH_WARM_RUNS (5: rounds; each
# round times every binary once, in turn), BENCH_XATTR (1). Needs root
# (FUSE) and fusermount3. Not part of make check.
set -u
export LC_ALL=C
CAFS=${CAFS:-./cafs}
CAFS=$(cd "$(dirname "$CAFS")" && pwd)/$(basename "$CAFS")
OLD=${CAFS_OLD:-}
[ -z "$OLD" ] || OLD=$(cd "$(dirname "$OLD")" && pwd)/$(basename "$OLD")
ROUNDS=${BENCH_WARM_RUNS:-5}
CAP=120
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "bench/warm-meta.sh: $*" >&2; exit 1; }
[ -x "$CAFS" ] || die "no cafs binary at $CAFS (set CAFS)"
[ -z "$OLD" ] || [ -x "$OLD" ] || die "no cafs binary at $OLD (CAFS_OLD)"
command -v fusermount3 >/dev/null || die "fusermount3 is not installed"
img=${BENCH_ROOTFS:-${BENCH_CACHE:-${BENCH_DIR:-/var/tmp}/cafs-bench-cache}/minbase-bookworm}
[ -d "$img" ] || die "no image at $img (run bench/minbase.sh once, or set BENCH_ROOTFS)"

. "$here/workdir.sh"
bench_workdir warm-meta || die "cannot make a work dir"
cd "$T" || exit 1
echo "# bench/warm-meta.sh: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# new: $CAFS ($("$CAFS" --version))${OLD:+; old: $OLD ($("$OLD" --version))}"
cp -a "$img/." plain/ || die "cannot copy $img"
images=plain
if [ "${BENCH_XATTR:-1}" = 1 ]; then
	cp -a plain xattr/ && setfattr -n user.bench -v 1 xattr/etc/os-release || die "cannot make the xattr tree"
	images="plain xattr"
fi
for i in $images; do
	"$CAFS" make -q --store=store "$i.caidx" "$i" >/dev/null || die "cafs make of $i failed"
done
echo "# image: $img, $(find plain | wc -l) entries; xattr: the same plus user.bench on etc/os-release"

# sides: "key binary" pairs
sides="new $CAFS"
[ -n "$OLD" ] && sides="old $OLD
$sides"
pids=()
mnt_cleanup() {
	local m
	for m in "$T"/mnt.*; do is_mounted "$m" && fusermount3 -u -z "$m"; done
	for p in "${pids[@]}"; do kill "$p"; wait "$p"; done
}
at_cleanup mnt_cleanup
while read -r key bin; do
	for i in $images; do
		m=$T/mnt.$key.$i
		mkdir -p "$m"
		"$bin" mount -f --store=store "$i.caidx" "$m" >"$T/log.$key.$i" 2>&1 &
		pids+=($!)
		for ((n = 0; n < 500; n++)); do is_mounted "$m" && break; sleep 0.02; done
		is_mounted "$m" || die "$key mount of $i did not come up: $(cat "$T/log.$key.$i")"
		# warm: the kernel's caches filled by one of each first
		find "$m" >/dev/null
		ls -lR "$m" >/dev/null 2>&1
		find "$m" -print0 | xargs -0 stat >/dev/null
	done
done <<<"$sides"

declare -A B=()
keep() { if [ -z "${B[$1]:-}" ] || awk -v a="$2" -v b="${B[$1]}" 'BEGIN { exit !(a < b) }'; then B[$1]=$2; fi; }
t1() { local t0; t0=$(now); timeout "$CAP" sh -c "$1" >/dev/null 2>&1; since "$t0"; }
for ((r = 0; r < ROUNDS; r++)); do
	for d in plain $(for i in $images; do while read -r key bin; do echo "mnt.$key.$i"; done <<<"$sides"; done); do
		keep "$d.find" "$(t1 "find '$d' | wc -l")"
		keep "$d.ls" "$(t1 "ls -lR '$d' | wc -l")"
		keep "$d.stat" "$(t1 "find '$d' -print0 | xargs -0 stat | wc -l")"
	done
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
printf '%-22s | %-16s | %-16s | %-16s | %s\n' "best of $ROUNDS" "warm find" "warm ls -lR" "warm stat" "requests after all runs"
printf '%-22s | %-16s | %-16s | %-16s |\n' plain "${B[plain.find]} s" "${B[plain.ls]} s" "${B[plain.stat]} s"
for i in $images; do
	while read -r key bin; do
		d=mnt.$key.$i
		ops=$("$CAFS" stats "$d" 2>/dev/null | awk -F': ' '/^fuse_/ && $2 > 0 { sub(/^fuse_/, "", $1); printf "%s %s ", $1, $2 }')
		printf '%-22s | %-16s | %-16s | %-16s | %s\n' "$key, $i image" \
			"${B[$d.find]} = $(ratio "${B[$d.find]}" "${B[plain.find]}")" \
			"${B[$d.ls]} = $(ratio "${B[$d.ls]}" "${B[plain.ls]}")" \
			"${B[$d.stat]} = $(ratio "${B[$d.stat]}" "${B[plain.stat]}")" "$ops"
	done <<<"$sides"
done
