#!/bin/bash
# http-drip.sh - one deadline for a command against a server that drips
# its answers a byte a second (http.h, the shared progress clock; cafs(1),
# CAFS_HTTP_DEADLINE): extract, list and mount each fail with one line
# within the deadline, however many files they ask for one after another
# (index, sidecar, chunks: the deadlines used to add up); a mount's read of
# a dripping store is EIO within its own bound; and a slow transfer that
# keeps moving (nginx at 200 KB/s, one connection) still succeeds though
# it takes longer than the deadline.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"
need python3 timeout

W=$T/www
src=$T/src
mkdir -p "$W" "$src/d"
"$GEN" 1600K 31 >"$src/d/big"
printf 'a small file\n' >"$src/a.txt"
"$CAFS" make --store="$W/default.castr" "$W/img.caidx" "$src" >/dev/null || exit 1

# The drip server: /all/P drips every byte of the answer (status line and
# headers too) a second apart; /fi/P the same, except that an index comes
# at once (so the sidecar and the chunks are what drips).
cat >"$T/drip.py" <<'PY'
import os, socket, sys, threading, time
root, portfile = sys.argv[1:3]
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
with open(portfile + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
os.rename(portfile + ".tmp", portfile)
def serve(c):
    try:
        req = b""
        while b"\r\n\r\n" not in req:
            d = c.recv(4096)
            if not d:
                return
            req += d
        path = req.split(b" ")[1].decode("latin1").split("?")[0]
        mode, _, rel = path.lstrip("/").partition("/")
        try:
            data = open(os.path.join(root, rel), "rb").read()
            ans = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(data) + data
        except OSError:
            ans = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
        if mode == "fi" and rel.endswith(".caidx"):
            c.sendall(ans)
            return
        for b in ans:
            c.sendall(bytes([b]))
            time.sleep(1)
    except OSError:
        pass
    finally:
        c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
py_server_start "$T/drip.port" timeout 300 python3 "$T/drip.py" "$W" "$T/drip.port" || exit 1
P=$PY_SERVER_URL

# the deadline: 4 s without progress; a transfer below 1 KB/s for 2 s is
# a stall (retried while the deadline allows)
export CAFS_HTTP_DEADLINE=4 CAFS_HTTP_TIMEOUT=2 CAFS_HTTP_RETRIES=3
mkdir -p "$T/o"
# one_line_within MAX_MS NAME CMD...: exit 1, exactly one line "cafs: ...",
# within MAX_MS; the time goes to $T/NAME.ms
one_line_within() {
	local max=$1 name=$2 rc=0 t0 ms
	shift 2
	t0=$(date +%s%N)
	timeout 60 "$@" >/dev/null 2>"$T/$name.err" || rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	echo "$ms" >"$T/$name.ms"
	cat "$T/$name.err"
	[ "$rc" = 1 ] || { echo "exit $rc, wanted 1"; return 1; }
	[ "$(wc -l <"$T/$name.err")" = 1 ] && grep -q '^cafs: .*timed out' "$T/$name.err" || { echo "wanted one line"; return 1; }
	[ "$ms" -le "$max" ] || { echo "took $ms ms, more than $max"; return 1; }
}
# 4 s deadline + the last transfer's stall check (about a second) + start-up
B=7000
# The five commands wait on the dripping server, not on the CPU: they run at
# once (each its own output, its own connection; the server serves each
# connection in its own thread), and each is judged on its own.
bg_pids=()
bg() { # bg NAME CMD...: one_line_within $B NAME CMD... in the background; its exit code in $T/NAME.rc
	local name=$1
	shift
	{ one_line_within $B "$name" "$@" >"$T/$name.out" 2>&1; echo $? >"$T/$name.rc"; } &
	bg_pids+=($!)
}
judged() { cat "$T/$1.out"; test "$(cat "$T/$1.rc")" = 0; } # judged NAME: what bg said
mkdir -p "$T/m1"
bg x1 "$CAFS" extract "$P/fi/img.caidx" "$T/o/x1"
bg x2 "$CAFS" extract "$P/all/img.caidx" "$T/o/x2"
bg l1 "$CAFS" list "$P/fi/img.caidx"
bg x3 "$CAFS" extract --store="$P/all/default.castr" "$W/img.caidx" "$T/o/x3"
bg m1 "$CAFS" mount --no-cache "$P/fi/img.caidx" "$T/m1"
wait "${bg_pids[@]}" # (not the drip server)
ok "extract, index at once, sidecar and chunks drip: one line within the deadline" judged x1
echo "# extract (sidecar and chunks dripping): $(cat "$T/x1.ms") ms to the error"
ok "extract, everything drips: one line within the deadline" judged x2
echo "# extract (everything dripping): $(cat "$T/x2.ms") ms to the error"
ok "list, index at once, the rest drips: one line within the deadline" judged l1
echo "# list: $(cat "$T/l1.ms") ms to the error"
ok "extract of a local index from a dripping store: one line within the deadline" judged x3
echo "# extract (store dripping): $(cat "$T/x3.ms") ms to the error"
ok "mount, index at once, the rest drips: one line within the deadline, nothing mounted" judged m1
echo "# mount: $(cat "$T/m1.ms") ms to the error"
ok "... nothing mounted" eval "! is_mounted \"$T/m1\""

# a mount whose store drips: a read is EIO within the deadline (plus the
# kernel's own retry of the page: one more probe, a stall at most)
mnt=$T/mnt
mount_start "mount with a dripping store" "$mnt" "$T/log.m2" --no-cache --store="$P/all/default.castr" "$W/img.caidx"
t0=$(date +%s%N)
ok "a read is EIO" expect_errno EIO cat "$mnt/a.txt"
ms=$((($(date +%s%N) - t0) / 1000000))
echo "# mount read: $ms ms to EIO"
ok "... within the deadline and one probe (${ms} ms)" test "$ms" -le 9000
mount_stop "unmount" "$mnt"

# the accepted case: slow but moving, longer than the deadline in all
NGINX_EXTRA='limit_rate 200k;'
nginx_start "$W" || exit 1
t0=$(date +%s%N)
ok "nginx at 200 KB/s, one connection: extract succeeds" \
	env CAFS_HTTP_CONNECTIONS=1 "$CAFS" extract "$NGINX_URL/img.caidx" "$T/slow"
ms=$((($(date +%s%N) - t0) / 1000000))
ok "... with the right data" diff -r "$src" "$T/slow"
echo "# slow extract: $ms ms"
ok "... and took longer than the deadline (${ms} ms > 4000)" test "$ms" -gt 4000

done_testing
