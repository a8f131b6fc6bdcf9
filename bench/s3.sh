#!/bin/bash
# bench/s3.sh - a cold read of a tree image over plain HTTP (nginx) and
# over S3 (moto_server, every request SigV4-signed and checked), side by
# side in one run, from the same chunks, both on 127.0.0.1.
#
# The image is made once into a local store (served by nginx) and once
# into a bucket with `cafs make --store s3+http://...` (the upload is
# timed too). Then, best of BENCH_RUNS (default 3): `cafs extract` of the
# whole tree, index and chunks from the server, each run with a fresh
# empty cache, into a fresh directory; the outputs are compared
# with the tree once. moto is a Python server, far slower than a real S3 or
# MinIO: the ratio says what the S3 path costs over moto, not over S3.
#
#   bench/s3.sh
#   BENCH_TREE=/usr/include bench/s3.sh
#
# Env: CAFS (default ./cafs), BENCH_TREE (default: the debootstrap
# minbase in /var/tmp/cafs-bench-cache/minbase-bookworm if there, else
# /usr/include), BENCH_RUNS, BENCH_DIR (parent of the work dir). Needs
# nginx, moto_server (tests/lib-s3.sh finds it), python3, curl.
set -u
export LC_ALL=C
CAFS=${CAFS:-./cafs}
CAFS=$(cd "$(dirname "$CAFS")" && pwd)/$(basename "$CAFS")
RUNS=${BENCH_RUNS:-3}
TREE=${BENCH_TREE:-}
if [ -z "$TREE" ]; then
	TREE=/usr/include
	[ -d /var/tmp/cafs-bench-cache/minbase-bookworm/usr ] && TREE=/var/tmp/cafs-bench-cache/minbase-bookworm
fi
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "$here/.." && pwd)

die() { echo "bench/s3.sh: $*" >&2; exit 1; }
[ -x "$CAFS" ] || die "no cafs binary at $CAFS (set CAFS)"
[ -d "$TREE" ] || die "no tree at $TREE (set BENCH_TREE)"
for c in nginx python3 curl; do command -v $c >/dev/null || die "$c is not installed"; done

. "$here/workdir.sh"
bench_workdir s3 || die "cannot make a work dir"
need() { :; }
. "$top_srcdir/tests/lib-http.sh"
. "$top_srcdir/tests/lib-s3.sh"

cd "$T" || exit 1
mkdir www
"$CAFS" make --store=www/default.castr www/t.caidx "$TREE" >/dev/null 2>err || die "make failed: $(cat err)"
chunks=$(find www/default.castr -name '*.cacnk' | wc -l)
stored=$(du -sk www/default.castr | cut -f1)
nginx_start www >/dev/null || die "nginx did not start"
s3_start >/dev/null || die "moto_server did not start"
t0=$(now)
"$CAFS" make --store="$S3_URL/bkt/store" "$S3_URL/bkt/t.caidx" "$TREE" >/dev/null 2>err || die "make to S3 failed: $(cat err)"
upload=$(since "$t0")

echo "# bench/s3.sh: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs; best of $RUNS; cold extract (fresh cache each run)"
echo "# tree $TREE: $chunks chunks, $((stored / 1024)) MiB stored; upload to moto (make --store s3+http://): $upload s"

# best_of NAME SOURCE STORE: best wall time of a cold extract; checks the output once
best_of() {
	local name=$1 src=$2 store=$3 best= i t0 d
	for ((i = 0; i < RUNS; i++)); do
		rm -rf "out.$name" "cache.$name"
		t0=$(now)
		"$CAFS" extract --cache="cache.$name" --store="$store" "$src" "out.$name" >/dev/null 2>"err.$name" ||
			die "$name: extract failed: $(head -c 300 "err.$name")"
		d=$(since "$t0")
		if [ -z "$best" ] || awk -v a="$d" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$d; fi
	done
	[ "$("$CAFS" digest "out.$name" 2>&1)" = "$want" ] || echo "# $name: output differs from the tree" >&2
	rm -rf "out.$name" "cache.$name"
	echo "$best"
}

want=$("$CAFS" digest "$TREE" 2>&1)
gets0=$(s3_requests GET)
http=$(best_of http "$NGINX_URL/t.caidx" "$NGINX_URL/default.castr")
s3=$(best_of s3 "$S3_URL/bkt/t.caidx" "$S3_URL/bkt/store")
gets=$(( ($(s3_requests GET) - gets0) / RUNS ))
printf '  %-32s %8s s\n' "extract over nginx (http://)" "$http"
printf '  %-32s %8s s   (%d signed GETs a run)\n' "extract over moto (s3+http://)" "$s3" "$gets"
awk -v a="$s3" -v b="$http" 'BEGIN { if (b > 0) printf "  ratio s3/http: %.2f (> 1: S3 over moto slower)\n", a / b }'
