#!/usr/bin/env bash
# tests/demo.sh CAFS - the built-in demo that `./setup.sh demo` runs:
# make an image of a sample tree, serve it with nginx on 127.0.0.1, mount it
# lazily with cafs, read a little, and show how few chunks that fetched.
# Everything (server, mount, files) is cleaned up on exit, even on failure.
set -euo pipefail
CAFS=$(readlink -f "${1:?usage: demo.sh PATH-TO-CAFS}")
top_srcdir=$(cd "$(dirname "$0")/.." && pwd)
export CAFS top_srcdir
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/lib-http.sh"
set +u

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "1. A sample tree: documentation, licenses, a 64 MiB disk-like file, a symlink"
src=$T/sample
mkdir -p "$src/docs" "$src/licenses" "$src/data"
cp "$top_srcdir/README.md" "$top_srcdir/docs/design.md" "$src/docs/"
cp -r /usr/share/common-licenses/. "$src/licenses/" 2>/dev/null || true
echo "Hello from a lazily mounted cafs image." >"$src/hello.txt"
"$GEN" 64M 7 mixed >"$src/data/disk.img"
ln -s docs/README.md "$src/README"
du -sh "$src"

say "2. cafs make: archive index + chunk store, served over HTTP"
mkdir -p "$T/www"
"$CAFS" make --store "$T/www/sample.castr" "$T/www/sample.caidx" "$src"
"$CAFS" info --store "$T/www/sample.castr" "$T/www/sample.caidx" | sed 's/^/   /'
total=$(find "$T/www/sample.castr" -name '*.cacnk' | wc -l)
nginx_start "$T/www"
echo "   nginx on $NGINX_URL (pid $NGINX_PID)"

say "3. cafs mount: returns as soon as the mount answers"
mnt=$T/mnt
mkdir -p "$mnt"
t0=$(date +%s%N)
"$CAFS" mount --store "$NGINX_URL/sample.castr/" --cache "$T/cache" \
	"$NGINX_URL/sample.caidx" "$mnt"
at_cleanup "fusermount3 -u -z '$mnt'"
t1=$(date +%s%N)
echo "   mounted in $(((t1 - t0) / 1000000)) ms"
ls -la "$mnt" | sed 's/^/   /'
echo "   $ cat $mnt/hello.txt"
sed 's/^/   /' "$mnt/hello.txt"
echo "   $ head -c 100 $mnt/licenses/GPL-3"
head -c 100 "$mnt/licenses/GPL-3" 2>/dev/null | sed 's/^/   /'; echo

fetched=$(nginx_log | grep -c '\.cacnk 200' || true)
say "4. Lazy: $fetched of $total chunks fetched so far"
"$CAFS" stats "$mnt" | sed 's/^/   /'

say "5. Reading everything gives back exactly the source tree"
if diff -r "$src" "$mnt" >/dev/null; then echo "   diff -r: identical"; else echo "   diff -r: DIFFERENT"; exit 1; fi
fetched=$(nginx_log | grep -c '\.cacnk 200' || true)
echo "   now $fetched of $total chunks fetched (each at most once)"

fusermount3 -u "$mnt"
say "Done: unmounted, nginx stopped, $T removed."
