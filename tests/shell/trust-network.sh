#!/bin/bash
# trust-network.sh - a client a hostile or failing server cannot hurt, and
# no secrets in what cafs shows:
#  1. a URL's password and token never reach /proc/mounts, messages (of
#     list, extract, info, mount -v, a 404, a 401), stats; the accepted
#     case (nginx with basic auth) reads the data; ~/.netrc works too;
#  2. a server dripping bytes times out (low speed, then the deadline)
#     and a mount's read is EIO, quickly; the mount stays up;
#  3. a redirect from https to http is refused, https to https followed;
#  4. Retry-After is honoured (seconds and HTTP date; beyond the deadline
#     it ends the request), and a chunk a server keeps failing costs
#     retries+1 requests and then one probe at a time, however many
#     readers ask for it.
# The small servers are python3 on 127.0.0.1 (tests/shell/trust-network.sh
# writes them), plus nginx (tests/lib-http.sh) for basic auth and TLS.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"
need python3 openssl timeout

W=$T/www
src=$T/src
mkdir -p "$W" "$src/d"
"$GEN" 300K 1 >"$src/d/big"
printf 'a small file\n' >"$src/a.txt"
"$CAFS" make --store="$W/default.castr" "$W/img.caidx" "$src" >/dev/null || exit 1
"$GEN" 20K 2 >"$T/one.img" # one chunk
"$CAFS" make --store="$W/default.castr" "$W/one.caibx" "$T/one.img" >/dev/null || exit 1
"$CAFS" list "$W/img.caidx" >"$T/list.want" || exit 1

# ---- the python server: plain files, and misbehaviour by path prefix ----
#   /drip/P     P at 2 bytes a second        /e503/P  always 503
#   /flaky/P    503 with Retry-After: 1 the first time, then P
#   /flakydate/P  the same with an HTTP date 2 s ahead
#   /e503ra/P   always 503 with Retry-After: 100
# Every request is logged as "METHOD PATH STATUS" to $T/py.log.
cat >"$T/server.py" <<'PY'
import email.utils, http.server, os, sys, threading, time
root, portfile, logfile = sys.argv[1:4]
seen = set()
lock = threading.Lock()
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def log(self, status):
        with lock, open(logfile, "a") as f:
            f.write("%s %s %d %.3f\n" % (self.command, self.path, status, time.time()))
    def fail(self, retry_after=None):
        self.log(503)
        self.send_response(503)
        if retry_after is not None:
            self.send_header("Retry-After", retry_after)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def do_HEAD(self):
        self.do_GET()
    def do_GET(self):
        parts = self.path.split("?")[0].split("/")
        mode = parts[1] if len(parts) > 2 and parts[1] in ("drip", "flaky", "flakydate", "e503", "e503ra") else ""
        rel = "/".join(parts[2:] if mode else parts[1:])
        if mode == "e503":
            return self.fail()
        if mode == "e503ra":
            return self.fail("100")
        with lock:
            first = (mode, rel) not in seen
            seen.add((mode, rel))
        if mode == "flaky" and first:
            return self.fail("1")
        if mode == "flakydate" and first:
            return self.fail(email.utils.formatdate(time.time() + 2, usegmt=True))
        try:
            data = open(os.path.join(root, rel), "rb").read()
        except OSError:
            self.log(404)
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.log(200)
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command == "HEAD":
            return
        try:
            if mode == "drip":
                for b in data:
                    self.wfile.write(bytes([b]))
                    self.wfile.flush()
                    time.sleep(0.5)
            else:
                self.wfile.write(data)
        except OSError:
            pass
class S(http.server.ThreadingHTTPServer):
    daemon_threads = True
s = S(("127.0.0.1", 0), H)
with open(portfile + ".tmp", "w") as f:
    f.write(str(s.server_address[1]))
os.rename(portfile + ".tmp", portfile)
s.serve_forever()
PY
: >"$T/py.log"
py_server_start "$T/py.port" python3 "$T/server.py" "$W" "$T/py.port" "$T/py.log" || exit 1
P=$PY_SERVER_URL
py_count() { grep -c "^GET $1 " "$T/py.log"; }
# secs CMD...: run CMD, print its wall time in seconds (2 decimals) on fd 3
secs() {
	local t0 t1 rc=0
	t0=$(date +%s.%N)
	"$@" || rc=$?
	t1=$(date +%s.%N)
	echo "$t0 $t1" | awk '{ printf "%.2f\n", $2 - $1 }' >&3
	return $rc
}

# ---- 1. secrets ----
PW=s3cr3tPW0rd
TOKEN=T0kenXYZ42
printf 'user:%s\n' "$(openssl passwd -apr1 "$PW")" >"$T/htpasswd"
NGINX_EXTRA="auth_basic \"cafs\"; auth_basic_user_file $T/htpasswd;"
nginx_start "$W" || exit 1
H=127.0.0.1:$NGINX_PORT
SU="http://user:$PW@$H/img.caidx?token=$TOKEN"
no_secret() { # FILE...: neither secret in any of them
	if grep -lE "$PW|$TOKEN" "$@"; then
		grep -hE "$PW|$TOKEN" "$@" | head -5
		return 1
	fi
}
ok "list with credentials in the URL works" sh -c "'$CAFS' list -vv '$SU' >'$T/list.out' 2>'$T/e.list'"
ok "... and lists the image" cmp "$T/list.want" "$T/list.out"
ok "... with no secret in its messages (-vv)" no_secret "$T/e.list" "$T/list.out"
ok "extract with credentials works" sh -c "'$CAFS' extract -v --cache='$T/xcache' '$SU' '$T/x' 2>'$T/e.extract'"
ok "... the data is right" diff -r "$src" "$T/x"
ok "... no secret in its messages" no_secret "$T/e.extract"
ok "info with credentials and a store URL works" sh -c "'$CAFS' info -v --store='http://user:$PW@$H/default.castr?token=$TOKEN' 'http://user:$PW@$H/one.caibx?token=$TOKEN' >'$T/info.out' 2>'$T/e.info'"
ok "... no secret in its output" no_secret "$T/info.out" "$T/e.info"
fails "a 404 with credentials fails" sh -c "'$CAFS' list -vv 'http://user:$PW@$H/none.caidx?token=$TOKEN' 2>'$T/e.404'"
ok "... saying so, with no secret" sh -c "grep -q 'not found' '$T/e.404' && ! grep -qE '$PW|$TOKEN' '$T/e.404'"
fails "a wrong password is refused (401)" sh -c "'$CAFS' list 'http://user:wrong$PW@$H/img.caidx?token=$TOKEN' 2>'$T/e.401'"
ok "... with no secret in the message" sh -c "grep -q 401 '$T/e.401' && ! grep -qE '$PW|$TOKEN' '$T/e.401'"
fails "no credentials: refused" "$CAFS" list "http://$H/img.caidx"
fails "a bad SOURCE (usage error) quoting the URL fails" sh -c "'$CAFS' mount 'http://user:$PW@$H/img.tar?token=$TOKEN' '$T' 2>'$T/e.usage'"
ok "... with no secret in the message" no_secret "$T/e.usage"

mnt=$T/mnt
mount_start "mount -f -v with credentials in the URL" "$mnt" "$T/log.mount" -v --no-cache "$SU"
ok "the mount reads the data" cmp "$mnt/d/big" "$src/d/big"
ok "/proc/mounts shows the server, not the secrets" sh -c "grep -q ' $mnt ' /proc/mounts && grep ' $mnt ' /proc/mounts | grep -q '$H' && ! grep -qE '$PW|$TOKEN' /proc/mounts"
ok "cafs stats has no secret" sh -c "'$CAFS' stats '$mnt' >'$T/stats' 2>&1 && grep -q http_requests '$T/stats' && ! grep -qE '$PW|$TOKEN' '$T/stats'"
mount_stop "unmount" "$mnt"
ok "the mount's messages (-v) have no secret" no_secret "$T/log.mount"

mkdir -p "$T/home"
printf 'machine 127.0.0.1 login user password %s\n' "$PW" >"$T/home/.netrc"
chmod 600 "$T/home/.netrc"
ok "~/.netrc: a URL without credentials works" sh -c "HOME='$T/home' '$CAFS' list 'http://$H/img.caidx' >'$T/list.netrc'"
ok "... and lists the image" cmp "$T/list.want" "$T/list.netrc"
nginx_stop
NGINX_EXTRA=

# ---- 2. a server that drips ----
export CAFS_HTTP_TIMEOUT=2 CAFS_HTTP_DEADLINE=5 CAFS_HTTP_RETRIES=3
: >"$T/py.log"
exec 3>"$T/t.drip"
fails "an index dripped at 2 bytes/s: times out" secs timeout 60 sh -c "'$CAFS' list '$P/drip/img.caidx' 2>'$T/e.drip'"
took=$(cat "$T/t.drip")
ok "... within the deadline (${took} s, CAFS_HTTP_DEADLINE=5)" awk -v t="$took" 'BEGIN { exit !(t >= 2 && t < 9) }'
ok "... saying it timed out" grep -qi "timed out" "$T/e.drip"
exec 3>&-
mount_start "mount with a dripping store" "$mnt" "$T/log.drip" --no-cache --store="$P/drip/default.castr" "$P/one.caibx"
exec 3>"$T/t.mdrip"
ok "a read of a dripped chunk is EIO" secs timeout 60 python3 -c "$EXPECT_ERRNO_PY" EIO cat "$mnt/one"
exec 3>&-
took=$(cat "$T/t.mdrip")
ok "... within the deadline (${took} s)" awk -v t="$took" 'BEGIN { exit !(t < 9) }'
ok "... and the mount stays up" is_mounted "$mnt"
mount_stop "unmount" "$mnt"

# ---- 3. redirects: https never downgraded ----
port=$(_nginx_free_port)
NGINX_EXTRA="location /down/ { rewrite ^/down/(.*)\$ $P/\$1 redirect; }
	location /up/ { rewrite ^/up/(.*)\$ https://127.0.0.1:$port/\$1 redirect; }"
NGINX_SSL=1 nginx_start "$W" "$port" || exit 1
export CAFS_HTTP_CAINFO=$NGINX_CA
: >"$T/py.log"
fails "https redirected to http: refused" sh -c "'$CAFS' list '$NGINX_URL/down/img.caidx' 2>'$T/e.down'"
ok "... with one line saying so" sh -c "test \$(wc -l <'$T/e.down') = 1 && grep -q 'redirected from https to another scheme: refused' '$T/e.down'"
ok "... and the http server was never asked" test "$(py_count /img.caidx)" = 0
ok "https redirected to https: followed" sh -c "'$CAFS' list '$NGINX_URL/up/img.caidx' >'$T/list.up'"
ok "... and lists the image" cmp "$T/list.want" "$T/list.up"
nginx_stop
unset CAFS_HTTP_CAINFO NGINX_EXTRA

# ---- 4. retries ----
export CAFS_HTTP_DEADLINE=10
: >"$T/py.log"
exec 3>"$T/t.flaky"
ok "503 + Retry-After: 1, then 200: succeeds" secs "$CAFS" info "$P/flaky/one.caibx"
took=$(cat "$T/t.flaky")
ok "... after waiting about a second (${took} s)" awk -v t="$took" 'BEGIN { exit !(t >= 0.9 && t < 5) }'
ok "... in two requests" test "$(py_count /flaky/one.caibx)" = 2
exec 3>"$T/t.flakydate"
ok "503 + Retry-After as an HTTP date 2 s ahead, then 200: succeeds" secs "$CAFS" info "$P/flakydate/one.caibx"
took=$(cat "$T/t.flakydate")
ok "... after waiting for it (${took} s)" awk -v t="$took" 'BEGIN { exit !(t >= 0.9 && t < 6) }'
exec 3>"$T/t.ra"
fails "Retry-After: 100 past the deadline: fails at once" secs "$CAFS" info "$P/e503ra/one.caibx"
took=$(cat "$T/t.ra")
ok "... in one request, quickly (${took} s)" sh -c "test $(py_count /e503ra/one.caibx) = 1 && awk -v t=$took 'BEGIN { exit !(t < 3) }'"
exec 3>&-

# a store that always answers 503: many readers, few requests (remote.h,
# outages: readers wait for the failing store's probe, one at a time, and
# give up after the deadline; no failure is remembered as an answer)
export CAFS_HTTP_RETRIES=2 CAFS_HTTP_DEADLINE=3
: >"$T/py.log"
mount_start "mount with a store that always answers 503" "$mnt" "$T/log.503" --no-cache --store="$P/e503/default.castr" "$P/one.caibx"
eio() { cat "$mnt/one" 2>&1 >/dev/null | grep -q 'Input/output error'; }
readers() {
	local i pids=() rc=0
	for i in 1 2 3 4 5 6; do
		eio &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || rc=1; done
	return $rc
}
exec 3>"$T/t.503"
ok "six concurrent readers: each gets EIO" secs readers
took=$(cat "$T/t.503")
# (the kernel lets one reader at a time retry the file's one page, so the
# six end one after another, each after the next probe)
ok "... after the deadline, and at most a second a reader later (${took} s, CAFS_HTTP_DEADLINE=3)" \
	awk -v t="$took" 'BEGIN { exit !(t >= 2.5 && t < 12) }'
n=$(grep -c '^GET /e503/.*\.cacnk ' "$T/py.log")
max=$(awk -v t="$took" 'BEGIN { print 3 + int(t) + 1 }')
ok "... for retries+1 = 3 requests, then at most a probe a second ($n, at most $max)" \
	sh -c "test $n -ge 3 -a $n -le $max || { grep cacnk '$T/py.log'; false; }"
ok "... and again: EIO" secs readers
took=$(tail -n 1 "$T/t.503")
n2=$(grep -c '^GET /e503/.*\.cacnk ' "$T/py.log")
ok "... asking the server again, at most a probe a second ($n -> $n2 in ${took} s)" \
	test "$n2" -gt "$n" -a "$n2" -le $((n + ${took%.*} + 2))
exec 3>&-
ok "... and the mount stays up" is_mounted "$mnt"
mount_stop "unmount" "$mnt"

mount_done_testing
