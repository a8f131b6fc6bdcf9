#!/bin/bash
# failover.sh - several stores and failover groups over real nginx servers
# on 127.0.0.1: stores are tried in the order given (a chunk only in the
# second is served, one in none is EIO on its file only, a corrupt copy in
# the first is replaced by the second's); a group "URL1|URL2" survives
# its first server being killed half-way through a tree, and one that
# answers 503, without EIO and without a retry storm; a group whose every
# member is down is EIO with one line, and reads again once one is back.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"
need python3 timeout

# The image: 40 x 200 KiB of noise (about 130 chunks) and a small file.
W=$T/www
src=$T/src
mkdir -p "$W" "$src/d"
for i in $(seq -w 0 39); do "$GEN" 200K $((10#$i + 500)) >"$src/d/f$i"; done
printf 'a small file\n' >"$src/a.txt"
"$CAFS" make --store="$W/full.castr" "$W/img.caidx" "$src" >/dev/null || exit 1
n_chunks=$(find "$W/full.castr" -name '*.cacnk' | wc -l)
export CAFS_HTTP_TIMEOUT=3 CAFS_HTTP_RETRIES=1
mnt=$T/mnt

# srv NAME [NGINX_EXTRA] [PORT]: one more nginx on $W, its own directory
# and log; URL[NAME], PID[NAME]. Runs in this shell (not in ok), so the
# cleanup knows its PID.
declare -A URL=() PID=()
srv() {
	local name=$1
	NGINX_CONF_DIR=$T/nginx-$name NGINX_EXTRA=${2:-} nginx_start "$W" ${3:+"$3"} || return 1
	URL[$name]=$NGINX_URL
	PID[$name]=$NGINX_PID
	at_cleanup "kill $NGINX_PID; wait $NGINX_PID"
}
srv_kill() { kill "${PID[$1]}" && wait "${PID[$1]}"; PID[$1]=; return 0; }
slog() { cat "$T/nginx-$1/access.log" 2>/dev/null; }
chunk_gets() { slog "$1" | awk '$2 ~ /\.cacnk$/' | wc -l; }
# read_all FROM TO: files d/fFROM..d/fTO of the mount equal the source's
read_all() {
	local i
	for i in $(seq -w "$1" "$2"); do
		cmp "$mnt/d/f$i" "$src/d/f$i" || return 1
	done
}

srv one
_tap "first server" $?

# ---- several stores, in order ----

# the chunks of three files, from the log of a cold read of each
file_chunks() {
	: >"$T/nginx-one/access.log"
	cat "$mnt/d/$1" >/dev/null
	slog one | awk '$2 ~ /\.cacnk$/ { print $2 }' | sed 's|.*/||; s|\.cacnk$||'
}
mount_start "mount to find the chunks of three files" "$mnt" "$T/log0" --no-cache --lru-size=0 \
	--store="${URL[one]}/full.castr" "${URL[one]}/img.caidx"
X=$(file_chunks f05 | sed -n 2p)
Y=$(file_chunks f06 | sed -n 2p)
Z=$(file_chunks f07 | sed -n 2p)
mount_stop "... unmount" "$mnt"
ok "three chunks picked ($X $Y $Z)" test -n "$X" -a -n "$Y" -a -n "$Z" -a "$X" != "$Y" -a "$Y" != "$Z"

chunk_file() { echo "$1/${2:0:4}/$2.cacnk"; }
# first: all but X and Y, Z corrupt; second: X and a good Z; third: Y
cp -a "$W/full.castr" "$W/first.castr"
rm -f "$(chunk_file "$W/first.castr" "$X")" "$(chunk_file "$W/first.castr" "$Y")"
f=$(chunk_file "$W/first.castr" "$Z")
chmod u+w "$f" && "$GEN" 3000 5 >"$f"
for c in "$X" "$Z"; do
	mkdir -p "$W/second.castr/${c:0:4}" && cp "$(chunk_file "$W/full.castr" "$c")" "$W/second.castr/${c:0:4}/"
done
mkdir -p "$W/third.castr/${Y:0:4}" && cp "$(chunk_file "$W/full.castr" "$Y")" "$W/third.castr/${Y:0:4}/"

: >"$T/nginx-one/access.log"
mount_start "mount with two stores" "$mnt" "$T/log1" --no-cache \
	--store="${URL[one]}/first.castr" --store="${URL[one]}/second.castr" "${URL[one]}/img.caidx"
ok "a chunk only in the second store: its file reads right" cmp "$mnt/d/f05" "$src/d/f05"
ok "... asked of the first (404), then of the second (200)" sh -c "
	grep -q '^GET /first.castr/.*/$X.cacnk 404' '$T/nginx-one/access.log' &&
	grep -q '^GET /second.castr/.*/$X.cacnk 200' '$T/nginx-one/access.log'"
ok "a chunk corrupt in the first store, good in the second: its file reads right" cmp "$mnt/d/f07" "$src/d/f07"
ok "a chunk in neither store: its file is EIO" expect_errno EIO cat "$mnt/d/f06"
ok "... and only that file: its neighbours read right" sh -c "cmp '$mnt/d/f04' '$src/d/f04' &&
	cmp '$mnt/d/f08' '$src/d/f08'"
ok "... still mounted" is_mounted "$mnt"
mount_stop "two stores: unmount" "$mnt"

# the same lists given to extract and to cache fill (local paths)
ok "extract with three stores, the third holding the last chunk: the whole tree" \
	"$CAFS" extract --store="$W/first.castr" --store="$W/second.castr" --store="$W/third.castr" \
	"$W/img.caidx" "$T/x3"
ok "... equals the source" diff -r "$src" "$T/x3"
fails "extract with the first two only: one line, exit 1" \
	"$CAFS" extract --store="$W/first.castr" --store="$W/second.castr" "$W/img.caidx" "$T/x2"
ok "cache fill with the three stores over HTTP: every chunk" "$CAFS" cache fill --cache="$T/fillcache" \
	--store="${URL[one]}/first.castr" --store="${URL[one]}/second.castr" --store="${URL[one]}/third.castr" \
	"${URL[one]}/img.caidx"
ok "... the cache holds them all" test "$(find "$T/fillcache" -name '*.cacnk' | wc -l)" -ge "$n_chunks"

# info: how much the stores hold together
have_line() { "$CAFS" info "$@" 2>/dev/null | grep '^In '; }
got=$(have_line --store="$W/first.castr" --store="${URL[one]}/second.castr" "$W/img.caidx")
ok "info with two stores: what either holds ($got)" test "${got%%,*}" = \
	"In the stores given: $((n_chunks - 1)) of $n_chunks chunks"
got=$(have_line --store="http://127.0.0.1:1/full.castr|$W/full.castr" "$W/img.caidx")
ok "info with a group whose first member is down: the second's ($got)" test "${got%%,*}" = \
	"In store http://127.0.0.1:1/full.castr|$W/full.castr: $n_chunks of $n_chunks chunks"

# a group of relative local paths, mounted (the daemon leaves the directory)
cd "$W" || exit 1
mount_start "mount with a group of relative local stores" "$mnt" "$T/logr" --no-cache \
	--store="full.castr|first.castr" img.caidx
cd - >/dev/null || exit 1
ok "... reads right" diff -r "$src" "$mnt"
mount_stop "... unmount" "$mnt"

# ---- a failover group: the first server is killed half-way ----

srv two
_tap "second server" $?
: >"$T/nginx-one/access.log"
group="${URL[one]}/full.castr|${URL[two]}/full.castr"
mount_start "mount over a group of two servers" "$mnt" "$T/log2" --no-cache --lru-size=0 \
	--store="$group" "$W/img.caidx"
ok "half the files read right" read_all 00 19
ok "... all from the first server" sh -c "test $(chunk_gets one) -gt 0 -a $(chunk_gets two) = 0"
srv_kill one
start=$(date +%s)
ok "first server killed: the other half reads right (no EIO)" read_all 20 39
took=$(($(date +%s) - start))
ok "... and the small file" cmp "$mnt/a.txt" "$src/a.txt"
ok "... quickly (${took}s)" test "$took" -le 10
ok "... the second server took over ($(chunk_gets two) chunk GETs)" test "$(chunk_gets two)" -gt 0
"$CAFS" stats "$mnt" >"$T/stats2"
ok "stats: the second member is active, after one switch" sh -c "
	grep -qx 'failover_active: ${URL[two]}/full.castr' '$T/stats2' && grep -qx 'failover_switches: 1' '$T/stats2'"
ok "the switch is said once" test "$(grep -c 'failed (.*): using' "$T/log2")" = 1
ok "no read error" sh -c "! grep -q 'read of' '$T/log2'"
mount_stop "group: unmount" "$mnt"

# ---- a group whose first member answers 503 ----

srv bad 'location / { return 503; }'
_tap "a server that answers 503" $?
mount_start "mount over a group whose first member answers 503" "$mnt" "$T/log3" --no-cache \
	--store="${URL[bad]}/full.castr|${URL[two]}/full.castr" "$W/img.caidx"
ok "every file reads right" diff -r "$src" "$mnt"
n503=$(slog bad | grep -c ' 503 ')
ok "a bounded number of requests to the 503 member ($n503)" test "$n503" -ge 1 -a "$n503" -le 16
"$CAFS" stats "$mnt" >"$T/stats3"
ok "stats: the second member is active" grep -qx "failover_active: ${URL[two]}/full.castr" "$T/stats3"
mount_stop "503 group: unmount" "$mnt"
# extract asks for hundreds of chunks ahead: none of that goes to a member
# before it has answered
: >"$T/nginx-bad/access.log"
ok "extract through the group whose first member answers 503: the whole tree" "$CAFS" extract \
	--store="${URL[bad]}/full.castr|${URL[two]}/full.castr" "$W/img.caidx" "$T/x503"
ok "... equals the source" diff -r "$src" "$T/x503"
n503=$(slog bad | grep -c ' 503 ')
ok "... with a bounded number of requests to the 503 member ($n503 for $n_chunks chunks)" \
	test "$n503" -ge 1 -a "$n503" -le 16

# ---- a group whose every member is down ----

port_two=${URL[two]##*:}
srv_kill two
mount_start "mount over a group whose members are all down" "$mnt" "$T/log4" --no-cache \
	--store="${URL[one]}/full.castr|${URL[two]}/full.castr" "$W/img.caidx"
lines=$(wc -l <"$T/log4")
start=$(date +%s)
ok "all down: a read is EIO" expect_errno EIO cat "$mnt/d/f10"
took=$(($(date +%s) - start))
ok "... quickly (${took}s)" test "$took" -le 5
ok "... with one line" test "$(($(wc -l <"$T/log4") - lines))" = 1
ok "... still mounted" is_mounted "$mnt"
srv two "" "$port_two"
_tap "second server back on its port" $?
# (failures are remembered for 5 s: reads fail at once until then)
ok "one member back: the file reads right" wait_until 15 "" cmp -s "$mnt/d/f10" "$src/d/f10"
mount_stop "all down: unmount" "$mnt"

# ---- a bad group string: one line ----
fails_one() {
	local rc=0
	"$CAFS" extract "$@" "$T/xbad" >"$T/bad.out" 2>&1 || rc=$?
	[ "$rc" != 0 ] && [ "$(wc -l <"$T/bad.out")" = 1 ] && grep -q '^cafs: ' "$T/bad.out" ||
		{ cat "$T/bad.out"; return 1; }
}
ok "a group with an empty member: one line, exit non-zero" fails_one --store="$W/full.castr|" "$W/img.caidx"
ok "a group of two local stores: extract works" "$CAFS" extract --store="$W/full.castr|$W/first.castr" \
	"$W/img.caidx" "$T/xg"
ok "... equals the source" diff -r "$src" "$T/xg"
ok "a group with a local member that does not exist: one line" fails_one \
	--store="$W/nope.castr|$W/full.castr" "$W/img.caidx"
ok "make into a group: refused in one line, nothing written" sh -c "! '$CAFS' make --store='$T/mk1|$T/mk2' \
	'$T/mk.caidx' '$src' >'$T/mk.out' 2>&1 && test \$(wc -l <'$T/mk.out') = 1 &&
	grep -q 'failover group' '$T/mk.out' && test ! -e '$T/mk1|$T/mk2' -a ! -e '$T/mk.caidx'"
ok "... make into one of its stores works" "$CAFS" make --store="$T/mk1" "$T/mk.caidx" "$src"

mount_done_testing
