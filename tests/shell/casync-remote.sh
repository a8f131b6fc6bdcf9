#!/bin/bash
# casync-remote.sh - casync's SSH remoting (HOST:PATH, core/net/caremote.h)
# between cafs and the real casync, both ways: make HOST:PATH pushes the
# index (or archive) and the chunks the remote lacks, extract/list/digest
# HOST:PATH pull them, --store=HOST:PATH pulls chunks only. As casync's
# own test does, $CASYNC_SSH_PATH is a pseudo-ssh that drops the host and
# runs the command here; $CASYNC_REMOTE_PATH picks the casync at the other
# end. Then hostile peers: a message larger than the protocol allows, one
# cut short, an ABORT with control characters, a peer that stops talking
# (the timeout, $CAFS_REMOTE_TIMEOUT), a chunk whose data is not its id;
# and a hostile client in front of `casync pull`.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
need casync python3

mkdir -p "$T/bin"
ln -s "$CAFS" "$T/bin/casync"
CAFS_CASYNC=$T/bin/casync
REAL=$(command -v casync)
# the pseudo-ssh: ssh HOST COMMAND... runs COMMAND here
printf '#!/bin/sh\nshift\nexec "$@"\n' >"$T/bin/ssh"
chmod +x "$T/bin/ssh"
export CASYNC_SSH_PATH=$T/bin/ssh

# a tree of ~120 chunks (more than the request window of 64: make checks it)
mkdir -p "$T/src/sub"
gen_data "$T/src/big" 6000000 1
gen_data "$T/src/sub/mid" 1500000 2
gen_data "$T/src/small" 5000 3
ln -s big "$T/src/link"
cd "$T/src" || exit 1
"$REAL" make "$T/ref.catar" . >/dev/null || { echo "Bail out! casync make failed"; exit 1; }
REF_DIGEST=$("$REAL" digest "$T/ref.catar")
"$REAL" list "$T/ref.catar" >"$T/ref.list"

name() { [ "$1" = "$REAL" ] && echo casync || echo cafs; }

# pair CLIENT SERVER: the checks for one direction
pair() {
	local cli=$1 srv=$2 d
	d=$T/$(name "$cli")-to-$(name "$srv")
	mkdir -p "$d"
	export CASYNC_REMOTE_PATH=$srv
	local tag="$(name "$cli") client, $(name "$srv") remote"
	ok "$tag: make localhost:PATH.caidx pushes the index and its chunks" \
		bash -c '"$1" make "localhost:$2/img.caidx" . >/dev/null &&
			[ "$("$3" digest "$2/img.caidx")" = "$4" ] &&
			[ "$(find "$2/default.castr" -name "*.cacnk" | wc -l)" -gt 64 ]' _ "$cli" "$d" "$REAL" "$REF_DIGEST"
	ok "$tag: make again (the chunks all there) succeeds, same index" \
		bash -c '"$1" make "localhost:$2/img2.caidx" . >/dev/null && cmp "$2/img.caidx" "$2/img2.caidx"' _ "$cli" "$d"
	ok "$tag: extract localhost:PATH.caidx pulls index and chunks, tree identical" \
		bash -c '"$1" extract "localhost:$2/img.caidx" "$2/out" && diff -r --no-dereference . "$2/out"' _ "$cli" "$d"
	ok "$tag: list localhost:PATH.caidx is casync's list" \
		bash -c '"$1" list "localhost:$2/img.caidx" | cmp - "$3/ref.list"' _ "$cli" "$d" "$T"
	ok "$tag: make localhost:PATH.catar pushes the archive, casync's bytes" \
		bash -c '"$1" make "localhost:$2/img.catar" . >/dev/null && cmp "$2/img.catar" "$3/ref.catar"' _ "$cli" "$d" "$T"
	ok "$tag: digest localhost:PATH.catar pulls the archive" \
		bash -c '[ "$("$1" digest "localhost:$2/img.catar")" = "$3" ]' _ "$cli" "$d" "$REF_DIGEST"
	ok "$tag: extract local.caidx --store=localhost:STORE pulls the chunks only" \
		bash -c '"$1" extract --store="localhost:$2/default.castr" "$2/img.caidx" "$2/out2" &&
			diff -r --no-dereference . "$2/out2"' _ "$cli" "$d"
}
pair "$CAFS_CASYNC" "$CAFS_CASYNC"
pair "$CAFS_CASYNC" "$REAL"
pair "$REAL" "$CAFS_CASYNC"

# mount HOST:PATH.caidx: pulled, then mounted; the stage goes at unmount
remote_mount() {
	local m=$T/mnt pid rc=0
	mkdir -p "$m" "$T/tmp-mount"
	CASYNC_REMOTE_PATH=$CAFS_CASYNC TMPDIR=$T/tmp-mount "$CAFS_CASYNC" mount \
		"localhost:$T/cafs-to-cafs/img.caidx" "$m" 2>"$T/mount.err" &
	pid=$!
	at_cleanup "fusermount3 -uz '$m' 2>/dev/null; kill $pid 2>/dev/null; wait $pid 2>/dev/null"
	wait_until 10 $pid mountpoint -q "$m" || { cat "$T/mount.err"; return 1; }
	diff -r --no-dereference . "$m" || rc=1
	fusermount3 -u "$m" && wait $pid || rc=1
	cat "$T/mount.err"
	[ $rc -eq 0 ] && [ -z "$(ls -A "$T/tmp-mount")" ]
}
if [ -w /dev/fuse ] && command -v fusermount3 >/dev/null && grep -qw fuse /proc/filesystems; then
	ok "mount localhost:PATH.caidx: the tree, and nothing left in TMPDIR after unmount" remote_mount
else
	skip "mount localhost:PATH.caidx" "no usable FUSE here"
fi

ok "CASYNC_REMOTE_PATH naming cafs itself (not as casync): the remote end still runs" \
	bash -c 'CASYNC_REMOTE_PATH=$1 "$2" --rate-limit-bps=100000000 digest "localhost:$3/img.catar" | grep -qx "$4"' \
	_ "$CAFS" "$CAFS_CASYNC" "$T/cafs-to-cafs" "$REF_DIGEST"

# ---- hostile remotes (cafs as the client) ----
# hostile.py MODE: a remote end that misbehaves on standard input/output
cat >"$T/bin/hostile.py" <<'EOF'
#!/usr/bin/env python3
import os, struct, sys, time
HELLO, ABORT = 0x3c71d0948ca5fbee, 0xe7d9136b7efea352
out = sys.stdout.buffer
mode = os.environ["HOSTILE"]
def msg(t, body=b""):
    out.write(struct.pack("<QQ", 16 + len(body), t) + body)
    out.flush()
if mode == "huge":      # a header announcing 1 GiB
    out.write(struct.pack("<QQ", 1 << 30, HELLO)); out.flush(); time.sleep(30)
elif mode == "cut":     # half a HELLO, then gone
    out.write(struct.pack("<QQ", 24, HELLO)[:10]); out.flush()
elif mode == "silent":  # never says anything
    time.sleep(60)
elif mode == "stubborn":  # never says anything, and shrugs off SIGTERM
    import signal
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(60)
elif mode == "abort":   # an ABORT whose reason would paint the terminal
    msg(HELLO, struct.pack("<Q", 0x4 | 0x1))
    msg(ABORT, struct.pack("<Q", 0) + b"evil\x1b[31m red\nsecond line\0")
    time.sleep(30)
EOF
chmod +x "$T/bin/hostile.py"
export CASYNC_REMOTE_PATH=$T/bin/hostile.py

# hostile MODE PATTERN MAXSECONDS: cafs list localhost:... fails within
# MAXSECONDS with one line on stderr matching PATTERN, no hostile.py left
hostile() {
	local mode=$1 pat=$2 max=$3 start end rc
	start=$(date +%s)
	HOSTILE=$mode CAFS_REMOTE_TIMEOUT=2 "$CAFS_CASYNC" list "localhost:$T/cafs-to-cafs/img.caidx" \
		>/dev/null 2>"$T/hostile-$mode.err"
	rc=$?
	end=$(date +%s)
	cat "$T/hostile-$mode.err"
	[ $rc -ne 0 ] || { echo "exit 0"; return 1; }
	[ $((end - start)) -le "$max" ] || { echo "took $((end - start)) s"; return 1; }
	[ "$(wc -l <"$T/hostile-$mode.err")" -eq 1 ] && grep -q "$pat" "$T/hostile-$mode.err" || return 1
	! grep -q $'\x1b' "$T/hostile-$mode.err" || { echo "control characters passed through"; return 1; }
	! ps -eo args | grep -v grep | grep -qF "$T/bin/hostile.py" || { echo "hostile.py left running"; return 1; }
}
ok "a remote announcing a 1 GiB message: refused at once, one line" \
	hostile huge 'a message of 1073741824 bytes' 5
ok "a remote cut off mid-message: one line" \
	hostile cut 'connection closed in the middle of a message' 5
ok "a remote that stops talking: the timeout (CAFS_REMOTE_TIMEOUT=2), one line, killed" \
	hostile silent 'no answer for 2 s' 8
ok "a silent remote that ignores SIGTERM: the timeout, one line, killed all the same (no hang)" \
	hostile stubborn 'no answer for 2 s' 10
ok "a remote's ABORT: its reason on one line, control characters replaced" \
	hostile abort 'the other end gave up: evil?\[31m red?second line' 5

# Ctrl-C while the remote says nothing: the handler's own line, 130, no
# stage directory left in $TMPDIR, the remote command ended
interrupted() {
	local pid rc
	mkdir -p "$T/tmp-int"
	HOSTILE=silent TMPDIR=$T/tmp-int "$CAFS_CASYNC" list "localhost:$T/cafs-to-cafs/img.caidx" \
		>/dev/null 2>"$T/int.err" &
	pid=$!
	wait_until 5 $pid bash -c 'ps -eo args | grep -v grep | grep -qF "$1"' _ "$T/bin/hostile.py" || return 1
	kill -INT $pid
	wait $pid
	rc=$?
	cat "$T/int.err"
	[ $rc -eq 130 ] && interrupted_by "$T/int.err" INT && [ -z "$(ls -A "$T/tmp-int")" ] &&
		! ps -eo args | grep -v grep | grep -qF "$T/bin/hostile.py"
}
ok "Ctrl-C during a pull: interrupted (130), nothing left behind" interrupted

# a chunk whose bytes are another chunk's, served by casync and by cafs
export CASYNC_REMOTE_PATH=$CAFS_CASYNC
cp -r "$T/cafs-to-cafs" "$T/corrupt"
mapfile -t cks < <(find "$T/corrupt/default.castr" -name '*.cacnk' | sort | head -n 2)
[ "${#cks[@]}" -lt 2 ] || cp -f "${cks[1]}" "${cks[0]}"
# (casync's remote checks what it reads from its store: it says so on its
# stderr, passed through by ssh, and hangs up; cafs says one line)
for srv in "$CAFS_CASYNC" "$REAL"; do
	[ "$srv" = "$REAL" ] && pat="connection closed before the transfer ended" || pat="does not match its id"
	ok "a $(name "$srv") remote with a chunk that is not its id: refused, one line of cafs, nothing extracted" \
		bash -c 'CASYNC_REMOTE_PATH=$1 "$2" extract "localhost:$3/img.caidx" "$3/out-$4" 2>"$3/err-$4"
			rc=$?; cat "$3/err-$4"; [ $rc -ne 0 ] && [ "$(grep -c "^cafs:" "$3/err-$4")" -eq 1 ] &&
			grep -q "^cafs: .*$5" "$3/err-$4" && [ ! -e "$3/out-$4/big" ]' \
		_ "$srv" "$CAFS_CASYNC" "$T/corrupt" "$(name "$srv")" "$pat"
done

# ---- a hostile client in front of cafs's `casync pull` ----
cat >"$T/client.py" <<'EOF'
import struct, subprocess, sys, time
casync, mode, index = sys.argv[1:4]
p = subprocess.Popen([casync, "pull", "-", "-", index, "-"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
t = time.time()
if mode == "huge":
    p.stdin.write(struct.pack("<QQ", 1 << 40, 0x3c71d0948ca5fbee)); p.stdin.flush()
elif mode == "cut":
    p.stdin.write(struct.pack("<QQQ", 24, 0x3c71d0948ca5fbee, 0x40)[:20]); p.stdin.close()
try:
    p.wait(timeout=15)  # silent: standard input stays open, says nothing
except subprocess.TimeoutExpired:
    p.kill(); print("server still running after 15 s"); sys.exit(1)
err = p.stderr.read()
sys.stdout.write(err.decode(errors="replace"))
print("exit %d after %.0f s" % (p.returncode, time.time() - t))
sys.exit(0 if p.returncode != 0 and err.count(b"\n") == 1 else 1)
EOF
ok "cafs's pull end, a client announcing a 1 TiB message: exits, one line" \
	bash -c 'CAFS_REMOTE_TIMEOUT=2 python3 "$1/client.py" "$2" huge "$1/cafs-to-cafs/img.caidx" | tee /dev/stderr | grep -q "a message of 1099511627776 bytes"' \
	_ "$T" "$CAFS_CASYNC"
ok "cafs's pull end, a client cut off mid-message: exits, one line" \
	bash -c 'CAFS_REMOTE_TIMEOUT=2 python3 "$1/client.py" "$2" cut "$1/cafs-to-cafs/img.caidx" | tee /dev/stderr | grep -q "connection closed in the middle of a message"' \
	_ "$T" "$CAFS_CASYNC"
ok "cafs's pull end, a client that says nothing: exits after the timeout, one line" \
	bash -c 'CAFS_REMOTE_TIMEOUT=2 python3 "$1/client.py" "$2" silent "$1/cafs-to-cafs/img.caidx" | tee /dev/stderr | grep -q "no answer for 2 s"' \
	_ "$T" "$CAFS_CASYNC"
done_testing
