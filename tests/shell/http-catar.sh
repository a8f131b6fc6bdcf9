#!/bin/bash
# http-catar.sh - a .catar behind http:// read by range requests: list,
# mtree, digest equal the local file's (and casync's); extract whole and of
# one directory equal the tree; list of a small directory fetches a small
# part of the archive, list of all no payload block after a header; a mount reads files; a 404 URL, a server that ignores
# Range, a file truncated on the server and one truncated under a mount
# fail cleanly, with one line; a file replaced by another of the same size
# under a mount, or between a command's reads, is EIO / one line, never
# bytes of both (If-Range and the 206's validator).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"
need python3 timeout

# The tree: 24 x 512 KiB of noise (12 MiB) and a small corner.
W=$T/www
src=$T/src
mkdir -p "$W/norange" "$src/big" "$src/small/deep/er" "$src/other"
for i in $(seq -w 0 23); do "$GEN" 512K $((10#$i + 100)) >"$src/big/f$i"; done
printf 'a small file\n' >"$src/small/a.txt"
printf 'another\n' >"$src/small/deep/b.txt"
"$GEN" 70K 7 >"$src/small/deep/er/c.bin"
ln -s ../other/x "$src/small/link"
printf 'x\n' >"$src/other/x"
"$CAFS" make "$W/x.catar" "$src" >/dev/null || exit 1
size=$(stat -c %s "$W/x.catar")
have_casync=
if command -v casync >/dev/null; then
	casync make "$W/c.catar" "$src" >/dev/null && have_casync=1
fi
# small: fits in one 256 KiB block; big: does not
mkdir -p "$T/tiny"
printf 'tiny\n' >"$T/tiny/t"
"$CAFS" make "$W/norange/small.catar" "$T/tiny" >/dev/null || exit 1
cp "$W/x.catar" "$W/norange/big.catar"
head -c $((size / 2)) "$W/x.catar" >"$W/trunc.catar"
cp "$W/x.catar" "$W/shrinks.catar"
cp "$W/x.catar" "$W/swaps.catar"
# the same tree but for one file's bytes: an archive of the same size
cp -a "$src" "$T/src2"
"$GEN" 512K 999 >"$T/src2/big/f20"
"$CAFS" make "$W/y.catar" "$T/src2" >/dev/null || exit 1
[ "$(stat -c %s "$W/y.catar")" = "$size" ] || { echo "y.catar is not $size bytes"; exit 1; }
: >"$W/empty.catar"

NGINX_EXTRA='location /norange/ { max_ranges 0; }'
nginx_start "$W" || exit 1
U=$NGINX_URL
export CAFS_HTTP_TIMEOUT=3 CAFS_HTTP_RETRIES=1
bytes_sent() { nginx_log | awk '{ n += $4 } END { print n + 0 }'; }

# fails_cleanly CMD...: exit 1, one "cafs: what: why" line, within 20 s
fails_cleanly() {
	local rc=0
	timeout 20 "$@" >"$T/stdout" 2>"$T/stderr" || rc=$?
	[ "$rc" -eq 1 ] || { echo "exit $rc, expected 1"; cat "$T/stderr"; return 1; }
	[ "$(wc -l <"$T/stderr")" -eq 1 ] || { echo "expected one line:"; cat "$T/stderr"; return 1; }
	grep -q '^cafs: ..*: ' "$T/stderr" || { echo "not 'cafs: what: why':"; cat "$T/stderr"; return 1; }
}
mentions() { grep -qF -- "$1" "$T/stderr" || { echo "message does not name $1:"; cat "$T/stderr"; return 1; }; }

for c in list mtree digest; do
	ok "$c URL = $c of the local file" diff <("$CAFS" $c "$W/x.catar") <("$CAFS" $c "$U/x.catar")
done
ok "list URL PATH = local" diff <("$CAFS" list "$W/x.catar" small/deep) <("$CAFS" list "$U/x.catar" small/deep)
ok "mtree URL PATH = local" diff <("$CAFS" mtree "$W/x.catar" small) <("$CAFS" mtree "$U/x.catar" small)
only_206() { nginx_log | grep -q ' 206 ' && ! nginx_log | grep -v ' 206 '; }
ok "only range requests were made (206)" only_206
if [ -n "$have_casync" ]; then
	ok "casync's archive: list URL = casync list" diff <(casync list "$W/c.catar") <("$CAFS" list "$U/c.catar")
	ok "casync's archive: mtree URL = casync mtree" diff <(casync mtree "$W/c.catar") <("$CAFS" mtree "$U/c.catar")
	ok "casync's archive: digest URL = casync digest" test "$(casync digest "$W/c.catar")" = "$("$CAFS" digest "$U/c.catar")"
	ok "casync's archive: list URL PATH = casync" diff <(casync list "$W/c.catar" small) <("$CAFS" list "$U/c.catar" small)
else
	for c in list mtree digest "list URL PATH"; do skip "casync's archive: $c URL = casync $c" "casync not installed"; done
fi

nginx_log_reset
ok "extract URL" "$CAFS" extract "$U/x.catar" "$T/all"
ok "... equals the tree" diff -r --no-dereference "$src" "$T/all"
ok "extract URL PATH" "$CAFS" extract "$U/x.catar" "$T/part" small
ok "... equals the directory" diff -r --no-dereference "$src/small" "$T/part"

nginx_log_reset
ok "list URL of a small directory" "$CAFS" list "$U/x.catar" small/deep
got=$(bytes_sent)
reqs=$(nginx_log | wc -l)
echo "# list small/deep: $reqs requests, $got bytes of a $size-byte archive"
ok "... fetched a small part of the archive ($got of $size bytes, $reqs requests)" \
	test "$got" -gt 0 -a "$got" -le $((size / 8)) -a "$reqs" -le 8

# list of the whole archive skips payloads: it fetches the blocks holding
# headers (here one per 512 KiB file, so about half), not the ones after
nginx_log_reset
ok "list URL of the whole archive" sh -c '"$0" list "$1" >/dev/null' "$CAFS" "$U/x.catar"
got=$(bytes_sent)
reqs=$(nginx_log | wc -l)
echo "# list of all: $reqs requests, $got bytes of a $size-byte archive"
ok "... fetched no payload block past a header ($got of $size bytes)" test "$got" -le $((size * 6 / 10))

mnt=$T/mnt
nginx_log_reset
mount_start "mount URL" "$mnt" "$T/log1" "$U/x.catar"
ok "a small file reads right" cmp "$mnt/small/a.txt" "$src/small/a.txt"
ok "a deep file reads right" cmp "$mnt/small/deep/er/c.bin" "$src/small/deep/er/c.bin"
ok "a 512 KiB file reads right" cmp "$mnt/big/f13" "$src/big/f13"
ok "parallel readers read right" bash -c "for i in 01 05 09 17 21; do cmp '$mnt/big/f'\$i '$src/big/f'\$i & done; wait; for j in 1 2 3 4 5; do wait -n 2>/dev/null; done; diff -r '$src' '$mnt'"
ok "the whole tree equals the source" diff -r "$src" "$mnt"
mount_stop "unmount" "$mnt"

ok "a 404 URL fails with one line" fails_cleanly "$CAFS" list "$U/nonexistent.catar"
ok "... that says so" mentions "not found"
ok "a 404 URL: extract too" fails_cleanly "$CAFS" extract "$U/nonexistent.catar" "$T/none"
ok "a 404 URL: mount fails, exit 1" fails_cleanly "$CAFS" mount -f "$U/nonexistent.catar" "$mnt"

# A server that ignores Range answers with the whole file: fine when the
# whole archive fits in the first block; a larger one is streamed, with
# one GET, by what reads it front to back (list, mtree, digest, extract of
# all of it), as casync; what needs random access (a PATH, the mount) is
# refused, without downloading the body.
ok "no Range support, archive of one block: list works" \
	diff <("$CAFS" list "$W/norange/small.catar") <("$CAFS" list "$U/norange/small.catar")
for c in list mtree digest; do
	ok "no Range support, larger archive: $c streams it, = local" \
		diff <("$CAFS" $c "$W/norange/big.catar") <("$CAFS" $c "$U/norange/big.catar")
done
ok "... extract too" bash -c '"$1" extract "$2" "$3/nr" && diff -r "$4" "$3/nr"' _ "$CAFS" "$U/norange/big.catar" "$T" "$src"
nginx_log_reset
ok "no Range support, larger archive, a PATH in it: one line" fails_cleanly "$CAFS" list "$U/norange/big.catar" small
ok "... that says why" mentions "range requests"
ok "... and the body was not downloaded" test "$(bytes_sent)" -lt "$size"
ok "no Range support, larger archive: mount refused, one line" fails_cleanly "$CAFS" mount -f "$U/norange/big.catar" "$mnt"
ok "... that says why" mentions "range requests"

ok "a truncated archive: one line" fails_cleanly "$CAFS" list "$U/trunc.catar"
ok "... that says it is not an archive" mentions "not a valid archive"
ok "an empty file: one line" fails_cleanly "$CAFS" list "$U/empty.catar"
ok "a truncated archive: extract fails cleanly" fails_cleanly "$CAFS" extract "$U/trunc.catar" "$T/tr"

# Truncated on the server under a running mount: reads are EIO, not short
# or hung, and the mount stays.
mount_start "mount of an archive about to shrink" "$mnt" "$T/log2" --lru-size=4M "$U/shrinks.catar"
ok "it reads before" cmp "$mnt/big/f00" "$src/big/f00"
truncate -s $((size / 3)) "$W/shrinks.catar"
ok "after truncation, a file past the new end is EIO" timeout 20 python3 -c "$EXPECT_ERRNO_PY" EIO cat "$mnt/big/f22"
ok "... still mounted" is_mounted "$mnt"
ok "... and the daemon said why" grep -q "changed on the server" "$T/log2"
mount_stop "unmount" "$mnt"

# Replaced on the server by another archive of the same size under a
# running mount (another mtime, so another ETag and Last-Modified): the
# next range GET's If-Range gets a 200, refused; reads are EIO, never the
# new file's bytes among the old's.
mount_start "mount of an archive about to be replaced" "$mnt" "$T/log3" --lru-size=4M "$U/swaps.catar"
ok "it reads before" cmp "$mnt/small/a.txt" "$src/small/a.txt"
cp "$W/y.catar" "$W/swaps.tmp"
touch -d '2001-02-03 04:05:06' "$W/swaps.tmp"
mv "$W/swaps.tmp" "$W/swaps.catar"
ok "after a same-size replacement, reading another file is EIO" \
	timeout 20 python3 -c "$EXPECT_ERRNO_PY" EIO cat "$mnt/big/f20"
ok "... still mounted" is_mounted "$mnt"
ok "... and the daemon said why" grep -q "changed on the server while being read" "$T/log3"
ok "... once" test "$(grep -c "changed on the server" "$T/log3")" -eq 1
mount_stop "unmount" "$mnt"
mount_start "mount of the replacing archive" "$mnt" "$T/log4" --lru-size=4M "$U/swaps.catar"
ok "... its changed file reads right" cmp "$mnt/big/f20" "$T/src2/big/f20"
ok "... and the whole tree equals its source" diff -r "$T/src2" "$mnt"
mount_stop "unmount" "$mnt"

# A server whose 206s lie: every lie is caught, one line, no hang.
cat >"$T/liar.py" <<'PY'
import http.server, os, re, sys, time
root, port_file = sys.argv[1], sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def do_GET(self):
        mode, name = self.path.strip("/").split("/", 1)
        data = open(os.path.join(root, name), "rb").read()
        # etag: honest with an ETag; swap200, swap206: another file of the
        # same size after the first request, answered as If-Range asks
        # (200, whole file) or ignoring it (206 with the new ETag)
        # drip, cut: Range ignored (200, the whole file's Content-Length),
        # then 1 byte every 0.3 s after the first 300000, or the
        # connection closed half-way
        if mode in ("drip", "cut"):
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.close_connection = True
            try:
                if mode == "cut":
                    self.wfile.write(data[:len(data) // 2])
                    return
                self.wfile.write(data[:300000])
                for b in data[300000:]:
                    self.wfile.write(bytes([b]))
                    self.wfile.flush()
                    time.sleep(0.3)
            except OSError:
                pass
            return
        etag = '"v1"'
        if mode.startswith("swap") and self.headers.get("If-Range"):
            data, etag = open(os.path.join(root, "y.catar"), "rb").read(), '"v2"'
            if mode == "swap200":
                self.send_response(200)
                self.send_header("ETag", etag)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
        m = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range", ""))
        first, last = int(m.group(1)), min(int(m.group(2)), len(data) - 1)
        body, cr = data[first:last + 1], "bytes %d-%d/%d" % (first, last, len(data))
        lie = mode == "later" and first > 0 or mode not in ("later", "honest", "etag", "swap200", "swap206")
        if lie and mode in ("offset", "later"):
            cr = "bytes %d-%d/%d" % (first + 1, last + 1, len(data))
        elif lie and mode == "short":
            body = body[:len(body) // 2]
            cr = "bytes %d-%d/%d" % (first, first + len(body) - 1, len(data))
        elif lie and mode == "long":
            body = data[first:last + 1 + 100]
        elif lie and mode == "nototal":
            cr = "bytes %d-%d/*" % (first, last)
        self.send_response(206)
        self.send_header("Content-Range", cr)
        if mode in ("etag", "swap200", "swap206"):
            self.send_header("ETag", etag)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(port_file + ".tmp", "w").write(str(s.server_address[1]))
os.rename(port_file + ".tmp", port_file)
s.serve_forever()
PY
python3 "$T/liar.py" "$W" "$T/liar.port" &
liar=$!
at_cleanup "kill $liar; wait $liar"
wait_until 10 "$liar" test -s "$T/liar.port"
L=http://127.0.0.1:$(cat "$T/liar.port")
ok "a range server in Python: honest, list works" diff <("$CAFS" list "$W/x.catar") <("$CAFS" list "$L/honest/x.catar")
for m in offset short long nototal later; do
	ok "a 206 that lies ($m): one line" fails_cleanly "$CAFS" list "$L/$m/x.catar"
done
ok "... the last one names the bytes" mentions "bytes "
ok "with ETags and If-Range, unchanged: list works" diff <("$CAFS" list "$W/x.catar") <("$CAFS" list "$L/etag/x.catar")
ok "replaced by a same-size file between reads (If-Range: 200): one line" fails_cleanly "$CAFS" list "$L/swap200/x.catar"
ok "... that says so" mentions "changed on the server while being read"
ok "replaced, the server ignoring If-Range (206, another ETag): one line" fails_cleanly "$CAFS" list "$L/swap206/x.catar"
ok "... that says so" mentions "changed on the server while being read"
ok "... extract too, leaving nothing behind" fails_cleanly "$CAFS" extract "$L/swap206/x.catar" "$T/sw"
ok "... (no directory)" test ! -e "$T/sw"
# streamed (no Range) from a server that drips, or stops half-way: bounded, one line
ok "ignoring Range and dripping: list gives up after the stall time, one line" \
	env CAFS_HTTP_TIMEOUT=2 bash -c 'fails_cleanly() { "$@" >/dev/null 2>"$0"; r=$?; [ $r = 1 ] && [ "$(wc -l <"$0")" = 1 ]; }
		s=$SECONDS; fails_cleanly "$1" list "$2" && [ $((SECONDS - s)) -le 10 ]' "$T/stderr" "$CAFS" "$L/drip/x.catar"
ok "... that says why" mentions "slower than the low speed limit"
ok "ignoring Range and closing half-way: list fails, one line" fails_cleanly "$CAFS" list "$L/cut/x.catar"
ok "... extract too, leaving nothing behind" fails_cleanly "$CAFS" extract "$L/cut/x.catar" "$T/cut"
ok "... (no directory)" test ! -e "$T/cut"

done_testing
