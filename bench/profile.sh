#!/bin/bash
# bench/profile.sh - prefetch profiles and background fill (issue 11, items 3
# and 4), against nginx on 127.0.0.1.
#
# Image: an OS-like tree as bench/mount.sh builds it (/usr/include,
# /usr/share/doc, BENCH_LIB_MB MiB of shared libraries), made by `cafs make`
# (with its metadata sidecar). The "start" workload reads BENCH_FILES files
# spread over the tree (every Nth regular file in name order), one after
# the other with `cat`, as a loader would.
#
# Profile rows, through bench/lagproxy.py at BENCH_RTT ms (default 20):
#   record      a mount with --record-profile running the workload
#   no profile  a fresh mount (empty cache, --profile=none): from the mount
#               command to the end of the workload
#   replay      the same with --profile (what was recorded): the profile's
#               chunks come in parallel bursts before the reads ask
# And, for scale, the mount alone coming up and the workload on a warm mount.
# "round trips" is that time over the RTT (the mount's own index and
# sidecar GETs included).
# Fill rows, on loopback (no proxy; the issue's goal: cold tar with --fill
# within 2.5x of a warm tar of the same mount):
#   cold tar, no fill   `tar -cf - MNT | cat >/dev/null` on a fresh mount
#   cold tar, --fill    the same with --fill (tar starts right after the mount)
#   warm tar            again on that mount, best of 3
#   fill alone          a fresh mount with --fill and no reader: from the mount
#                       command until stats says done (what bounds the cold tar)
# and the cold tar's demand counters from `cafs stats` (demand_fetches: its
# chunks it fetched itself; demand_joins, demand_join_wait_ms: those it
# waited for a fetch under way for, and how long; background_waits: fill
# fetches held back for its own).
# Every cold figure is after dropping the page cache, with an empty cache.
#
#   bench/profile.sh                    (about a minute)
# Env: CAFS (default ./cafs), BENCH_DIR (default /var/tmp), BENCH_LIB_MB
# (default 60), BENCH_RTT (default 20), BENCH_FILES (default 50). Needs root,
# nginx, fusermount3, python3.
set -u
export LC_ALL=C
CAFS=${CAFS:-./cafs}
CAFS=$(cd "$(dirname "$CAFS")" && pwd)/$(basename "$CAFS")
LIB_MB=${BENCH_LIB_MB:-60}
RTT=${BENCH_RTT:-20}
NFILES=${BENCH_FILES:-50}
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "$here/.." && pwd)

die() { echo "bench/profile.sh: $*" >&2; exit 1; }
[ -x "$CAFS" ] || die "no cafs binary at $CAFS (set CAFS)"
for c in nginx fusermount3 python3 timeout; do command -v $c >/dev/null || die "$c is not installed"; done
[ -w /proc/sys/vm/drop_caches ] || die "cannot drop the page cache (run as root)"

. "$here/workdir.sh"
bench_workdir profile || die "cannot make a work dir"
need() { :; }
. "$top_srcdir/tests/lib-http.sh"
cd "$T" || exit 1

echo "# bench/profile.sh: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
mkdir -p src/lib www
cp -a /usr/include src/include && cp -a /usr/share/doc src/doc || die "cannot copy the tree"
if [ "$LIB_MB" -gt 0 ]; then
	(cd /usr/lib/x86_64-linux-gnu && find . -maxdepth 1 -type f -name '*.so*' -size -8M -printf '%s %P\n' | sort -k2 |
		awk -v max=$((LIB_MB << 20)) '{ n += $1; if (n > max) exit; print $2 }' | tar -cf - -T -) |
		tar -xf - -C src/lib || die "cannot copy the libraries"
fi
"$CAFS" make --store=www/default.castr www/tree.caidx src >/dev/null || die "cafs make failed"
total=$(find src -type f | wc -l)
step=$((total / NFILES)); [ "$step" -ge 1 ] || step=1
(cd src && find . -type f | sort | awk -v s="$step" -v n="$NFILES" 'NR % s == 0 && c < n { c++; print substr($0, 3) }') >files
echo "# tree: $(find src | wc -l) entries, $(du -sm --apparent-size src | cut -f1) MiB, $(find www/default.castr -name '*.cacnk' | wc -l) chunks; workload: cat of $(wc -l <files) files"
rm -rf src

nginx_start "$T/www" || die "nginx did not start"
lag_pid=
port=$(_nginx_free_port)
python3 "$here/lagproxy.py" "$port" "$NGINX_PORT" "$(awk -v r="$RTT" 'BEGIN { print r / 2 }')" >lag.out &
lag_pid=$!
at_cleanup "kill $lag_pid; wait $lag_pid"
for _ in $(seq 50); do grep -q ready lag.out 2>/dev/null && break; sleep 0.1; done
LAG=http://127.0.0.1:$port

mnt=$T/mnt
mkdir -p "$mnt"
mnt_pid=
at_cleanup 'fusermount3 -u -z "$mnt"; [ -z "$mnt_pid" ] || { kill $mnt_pid; wait $mnt_pid; }'
n=0
# mnt_up ARGS...: a fresh cold mount (foreground daemon in the background),
# t0 set before it starts; waits for the root to list
mnt_up() {
	n=$((n + 1))
	drop_caches
	nginx_log_reset
	t0=$(now)
	"$CAFS" mount -f --cache="$T/cache.$n" "$@" "$mnt" >"$T/mount.$n.log" 2>&1 &
	mnt_pid=$!
	for _ in $(seq 3000); do [ -n "$(ls "$mnt" 2>/dev/null)" ] && return 0; sleep 0.01; done
	cat "$T/mount.$n.log" >&2
	die "the mount did not come up"
}
mnt_down() {
	fusermount3 -u "$mnt" || fusermount3 -u -z "$mnt"
	wait "$mnt_pid"
	mnt_pid=
}
workload() { while read -r f; do cat "$mnt/$f" >/dev/null || echo "read failed: $f" >&2; done <files; }
gets() { nginx_log | awk '$2 ~ /\.cacnk$/' | wc -l; }
row() { printf '  %-22s %8s s %8s round trips %6s chunk GETs\n' "$1" "$2" "$(awk -v s="$2" -v r="$RTT" 'BEGIN { printf "%.1f", s * 1000 / r }')" "$3"; }

echo "profile replay at RTT $RTT ms (bench/lagproxy.py):"
mnt_up --profile=none --record-profile="$T/start.caprofile" "$LAG/tree.caidx"
workload
mnt_down
echo "  recorded: $(($(wc -l <"$T/start.caprofile") - 2)) items, $(stat -c %s "$T/start.caprofile") bytes"
mnt_up --profile=none "$LAG/tree.caidx"
workload
row "no profile" "$(since "$t0")" "$(gets)"
mnt_down
mnt_up --profile="$T/start.caprofile" "$LAG/tree.caidx"
workload
row "replay" "$(since "$t0")" "$(gets)"
t=$(now); workload; warmw=$(since "$t")
mnt_down
mnt_up --profile=none "$LAG/tree.caidx"; up=$(since "$t0")
mnt_down
echo "  (of which: the mount coming up ${up} s; the workload on a warm mount ${warmw} s)"

echo "background fill on loopback:"
tarit() { tar -cf - -C "$mnt" . | cat >/dev/null; }
mnt_up --profile=none "$NGINX_URL/tree.caidx"
t=$(now); tarit; cold0=$(since "$t")
mnt_down
mnt_up --profile=none --fill "$NGINX_URL/tree.caidx"
t=$(now); tarit; cold=$(since "$t")
demand=$("$CAFS" stats "$mnt" | awk '$1 ~ /^(demand_fetches|demand_joins|demand_join_wait_ms|background_waits):$/ { printf "%s %s ", $1, $2 }')
warm=
for _ in 1 2 3; do
	t=$(now); tarit; w=$(since "$t")
	if [ -z "$warm" ] || awk -v a="$w" -v b="$warm" 'BEGIN { exit !(a < b) }'; then warm=$w; fi
done
fillstate=$("$CAFS" stats "$mnt" | awk '$1 == "fill:" { print $2 }')
mnt_down
mnt_up --profile=none --fill "$NGINX_URL/tree.caidx"
for _ in $(seq 6000); do [ "$("$CAFS" stats "$mnt" | awk '$1 == "fill:" { print $2 }')" = running ] || break; sleep 0.02; done
alone=$(since "$t0")
mnt_down
printf '  %-22s %8s s\n' "cold tar, no fill" "$cold0" "cold tar, --fill" "$cold" "warm tar" "$warm" "fill alone" "$alone"
echo "  cold tar with --fill, demand counters: ${demand:-none}"
echo "  cold tar with --fill / warm tar: $(awk -v a="$cold" -v b="$warm" 'BEGIN { printf "%.2f", a / b }')x (goal <= 2.5x); fill after the warm tars: $fillstate"
