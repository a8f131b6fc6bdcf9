#!/bin/bash
# bench/http.sh - extracting a blob over HTTP: cafs against casync, side by
# side in one run, from the same nginx on 127.0.0.1.
#
# Input: `gen-data SIZE 3 mixed` made into an index and store by casync
# (default chunk sizes). For each round-trip time (0 = straight to nginx,
# else through bench/lagproxy.py adding RTT/2 each way):
#   casync extract URL     (its casync-http helper)
#   cafs extract URL       (default -j; curl multi, 8 connections)
#   cafs, CAFS_HTTP_CONNECTIONS=16
#   cafs over https (HTTP/2: streams multiplexed on one connection)
# Outputs are compared with the input; requests are counted in nginx's log.
# Throughput is image bytes / wall time (MB/s, 10^6); ratio is cafs/casync.
#
#   bench/http.sh                          256 MiB, RTT 0 and 20 ms
#   BENCH_SIZE=64M BENCH_RTT="0 10 50" bench/http.sh
#
# Env: CAFS (default ./cafs), GEN_DATA (default tests/gen-data beside
# CAFS), BENCH_DIR (parent of the work dir, default /var/tmp). Needs casync,
# nginx, python3, openssl.
set -u
export LC_ALL=C
CAFS=${CAFS:-./cafs}
CAFS=$(cd "$(dirname "$CAFS")" && pwd)/$(basename "$CAFS")
GEN=${GEN_DATA:-$(dirname "$CAFS")/tests/gen-data}
SIZE=${BENCH_SIZE:-256M}
RTTS=${BENCH_RTT:-0 20}
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "$here/.." && pwd)

die() { echo "bench/http.sh: $*" >&2; exit 1; }
[ -x "$CAFS" ] || die "no cafs binary at $CAFS (set CAFS)"
[ -x "$GEN" ] || die "no gen-data at $GEN (run make in the build dir, or set GEN_DATA)"
for c in casync nginx python3 openssl; do command -v $c >/dev/null || die "$c is not installed"; done

. "$here/workdir.sh"
bench_workdir http || die "cannot make a work dir"
need() { :; }
. "$top_srcdir/tests/lib-http.sh"

cd "$T" || exit 1
"$GEN" "$SIZE" 3 mixed >img || die "gen-data failed"
mkdir www
casync make --store=www/default.castr www/img.caibx img >/dev/null || die "casync make failed"
bytes=$(stat -c %s img)
chunks=$(find www/default.castr -name '*.cacnk' | wc -l)
echo "image: $(awk -v b="$bytes" 'BEGIN { printf "%.0f MiB", b / 1048576 }'), $chunks distinct chunks"

mbps() { awk -v b="$bytes" -v t="$1" 'BEGIN { printf "%.1f", b / t / 1e6 }'; }
# run NAME CMD...: time CMD, check its output file out.NAME, print a row; sets $secs
run() {
	local name=$1 t0 t1 reqs
	shift
	rm -f "out.$name"
	nginx_log_reset
	t0=$(now)
	"$@" >/dev/null 2>"err.$name" || { echo "$name: FAILED: $(head -c 300 "err.$name")"; secs=0; return; }
	t1=$(now)
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
	cmp -s img "out.$name" || echo "$name: WRONG RESULT"
	reqs=$(nginx_log | awk '$2 ~ /\.cacnk/' | wc -l)
	printf '  %-34s %8.2f s %8s MB/s %7d chunk GETs\n' "$name" "$secs" "$(mbps "$secs")" "$reqs"
	rm -f "out.$name"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "-" }'; }

# lag_start RTT: $U is nginx itself (RTT 0) or a lagproxy in front of it
lag_pid=
lag_start() {
	local scheme=${NGINX_URL%%://*} port
	U=$NGINX_URL
	lag_pid=
	[ "$1" = 0 ] && return
	port=$(_nginx_free_port)
	rm -f lag.out
	python3 "$here/lagproxy.py" "$port" "$NGINX_PORT" "$(awk -v r="$1" 'BEGIN { print r / 2 }')" >lag.out &
	lag_pid=$!
	at_cleanup "kill $lag_pid; wait $lag_pid"
	for _ in $(seq 50); do grep -q ready lag.out 2>/dev/null && break; sleep 0.1; done
	U=$scheme://127.0.0.1:$port
}
lag_stop() {
	if [ -n "$lag_pid" ]; then
		kill "$lag_pid"
		wait "$lag_pid" 2>/dev/null
	fi
}

nginx_start www || die "nginx did not start"
for rtt in $RTTS; do
	lag_start "$rtt"
	echo "RTT $rtt ms:"
	run casync casync extract "$U/img.caibx" out.casync
	t_casync=$secs
	run cafs "$CAFS" extract "$U/img.caibx" out.cafs
	t_cafs=$secs
	run cafs-16-connections env CAFS_HTTP_CONNECTIONS=16 "$CAFS" extract "$U/img.caibx" out.cafs-16-connections
	echo "  ratio cafs/casync (throughput): $(ratio "$t_casync" "$t_cafs")"
	lag_stop
done

nginx_stop
NGINX_SSL=1 nginx_start www || die "nginx (https) did not start"
for rtt in $RTTS; do
	lag_start "$rtt"
	echo "https, HTTP/2, RTT $rtt ms:"
	run cafs-https env CAFS_HTTP_CAINFO="$NGINX_CA" "$CAFS" extract "$U/img.caibx" out.cafs-https
	echo "  connections used: $(nginx_log | awk '{print $6}' | sort -u | wc -l)"
	lag_stop
done
