#!/bin/bash
# bench/oci.sh - a cold mount + container start from an OCI registry
# (Debian's docker-registry, distribution 2.8, on 127.0.0.1) beside the
# same image over plain HTTP (nginx on 127.0.0.1), issue 22 item 4.
#
# Image: BENCH_ROOTFS (a directory), else the debootstrap minbase that
# bench/minbase.sh keeps in BENCH_CACHE/minbase-bookworm (BENCH_CACHE
# default BENCH_DIR/cafs-bench-cache). It is `cafs make`d once into a
# local store served by nginx, and once into the registry
# (oci+http://127.0.0.1:PORT/bench/minbase: index and chunks as artifacts).
#
# Rows, each the best of BENCH_RUNS (3) fresh mounts with an empty cache
# and the page cache dropped:
#   mount + ls     from the mount command until `ls MNT` lists the root
#   + container    then crun runs `sh -c 'cat /etc/os-release'` with
#                  root.path an overlayfs over the mount (tests/lib-crun.sh)
#   cold extract   `cafs extract URL DIR` of the whole image, once, for scale
# with the requests the server answered (nginx's access log; the
# registry's "response completed" lines: manifests and blobs, tokens none
# here) and the seconds, side by side.
#
#   bench/oci.sh                         (about half a minute)
# Env: CAFS (default ./cafs), BENCH_DIR (default /var/tmp), BENCH_ROOTFS,
# BENCH_CACHE, BENCH_RUNS. Needs root, docker-registry, nginx, crun,
# overlayfs, fusermount3, python3.
set -u
export LC_ALL=C
CAFS=${CAFS:-./cafs}
CAFS=$(cd "$(dirname "$CAFS")" && pwd)/$(basename "$CAFS")
RUNS=${BENCH_RUNS:-3}
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "$here/.." && pwd)

die() { echo "bench/oci.sh: $*" >&2; exit 1; }
[ -x "$CAFS" ] || die "no cafs binary at $CAFS (set CAFS)"
for c in nginx crun fusermount3 python3 timeout docker-registry; do
	command -v $c >/dev/null || die "$c is not installed"
done
[ -w /proc/sys/vm/drop_caches ] || die "cannot drop the page cache (run as root)"
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || die "no overlayfs"

. "$here/workdir.sh"
bench_workdir oci || die "cannot make a work dir"
need() { :; }
. "$top_srcdir/tests/lib-http.sh"
. "$top_srcdir/tests/lib-oci.sh"
. "$top_srcdir/tests/lib-crun.sh"
cd "$T" || exit 1

root=${BENCH_ROOTFS:-${BENCH_CACHE:-${BENCH_DIR:-/var/tmp}/cafs-bench-cache}/minbase-bookworm}
[ -f "$root/etc/os-release" ] || die "no root file system at $root (run bench/minbase.sh once, or set BENCH_ROOTFS)"
echo "# bench/oci.sh: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
mkdir -p www
"$CAFS" make --store=www/default.castr www/minbase.caidx "$root" >/dev/null || die "cafs make (local) failed"
echo "# image: $root, $(du -sm --apparent-size "$root" | cut -f1) MiB, $(find www/default.castr -name '*.cacnk' | wc -l) chunks"
nginx_start "$T/www" || die "nginx did not start"
registry_start bench || die "docker-registry did not start"
REG=oci+http://127.0.0.1:$REGISTRY_PORT/bench/minbase
t0=$(now)
"$CAFS" make "$REG/minbase.caidx" "$root" >/dev/null || die "cafs make (registry) failed"
echo "# make to the registry: $(since "$t0") s"

mnt=$T/mnt
mkdir -p "$mnt"
mnt_pid=
at_cleanup 'umount -l "$T/ovl/merged"; fusermount3 -u -z "$mnt"; [ -z "$mnt_pid" ] || { kill $mnt_pid; wait $mnt_pid; }'
n=0
reg_requests() { grep -c 'msg="response completed"' "$REGISTRY_LOG"; }
# one cold mount + ls + container start: ONE="MOUNT_S TOTAL_S REQUESTS"
# (no subshell: a failure dies here, and the cleanup knows the mount)
one() {
	local url=$1 t0 tm tt r0 req
	n=$((n + 1))
	drop_caches
	nginx_log_reset
	r0=$(reg_requests)
	t0=$(now)
	"$CAFS" mount -f --cache="$T/cache.$n" "$url" "$mnt" >"$T/mount.$n.log" 2>&1 &
	mnt_pid=$!
	for _ in $(seq 3000); do [ -n "$(ls "$mnt" 2>/dev/null)" ] && break; sleep 0.01; done
	[ -n "$(ls "$mnt" 2>/dev/null)" ] || { cat "$T/mount.$n.log" >&2; die "the mount of $url did not come up"; }
	tm=$(since "$t0")
	rm -rf "$T/ovl" "$T/bundle"
	mkdir -p "$T/ovl/upper" "$T/ovl/work" "$T/ovl/merged"
	mount -t overlay overlay -o "lowerdir=$mnt,upperdir=$T/ovl/upper,workdir=$T/ovl/work" "$T/ovl/merged" ||
		die "overlayfs failed"
	crun_bundle "$T/bundle" "$T/ovl/merged" sh -c 'cat /etc/os-release >/dev/null' >/dev/null || die "crun spec"
	crun_run "ctr$n" "$T/bundle" >/dev/null || die "the container failed"
	tt=$(since "$t0")
	umount "$T/ovl/merged" || die "overlay busy"
	fusermount3 -u "$mnt" || fusermount3 -u -z "$mnt"
	wait "$mnt_pid"
	mnt_pid=
	case $url in
	oci+*) req=$(($(reg_requests) - r0)) ;;
	*) req=$(nginx_log | wc -l) ;;
	esac
	ONE="$tm $tt $req"
}
# best URL: BEST = the run with the shortest container start of BENCH_RUNS
best() {
	BEST=
	for _ in $(seq "$RUNS"); do
		one "$1"
		if [ -z "$BEST" ] || awk -v a="${ONE#* }" -v b="${BEST#* }" 'BEGIN { exit !(a + 0 < b + 0) }'; then
			BEST=$ONE
		fi
	done
}
best "$NGINX_URL/minbase.caidx"
h=$BEST
best "$REG/minbase.caidx"
o=$BEST
read -r hm ht hr <<<"$h"
read -r om ot orq <<<"$o"
# a whole cold extract of each, for scale (every chunk: one GET vs two)
xt() {
	drop_caches
	rm -rf "$T/x"
	local t0
	t0=$(now)
	"$CAFS" extract "$1" "$T/x" >/dev/null 2>"$T/x.err" || { cat "$T/x.err" >&2; die "extract of $1 failed"; }
	since "$t0"
}
hx=$(xt "$NGINX_URL/minbase.caidx")
ox=$(xt "$REG/minbase.caidx")
rm -rf "$T/x"
printf '%-28s %16s %16s\n' "cold, best of $RUNS" "plain HTTP" "OCI registry"
printf '%-28s %14s s %14s s\n' "mount + ls" "$hm" "$om"
printf '%-28s %14s s %14s s\n' "mount + container start" "$ht" "$ot"
printf '%-28s %16s %16s\n' "requests (mount + start)" "$hr" "$orq"
printf '%-28s %14s s %14s s\n' "cold extract (all chunks)" "$hx" "$ox"
