# tests/lib.sh - sourced by the shell tests: TAP output, a private work dir,
# and cleanup that runs even on failure.
#
#   . "$top_srcdir/tests/lib.sh"
#   need casync                       # skip the whole file if missing
#   ok "make is identical" cmp a b    # one TAP line per check
#   at_cleanup 'kill $pid'            # runs from the EXIT trap, in reverse order
#   done_testing
#
# $CAFS is the binary under test; $T is a fresh directory removed at exit.
# $GEN is tests/gen-data, the test data generator (gen_data below).
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
# absolute, so that tests may cd (top_srcdir=.. given by hand works too)
top_srcdir=$(cd "$top_srcdir" && pwd) || exit 1
# run alone (tests/shell/foo.sh), a test takes the binary of ./setup.sh's build
[ -n "${CAFS:-}" ] || [ ! -x "$top_srcdir/build/cafs" ] || CAFS=$top_srcdir/build/cafs
: "${CAFS:?CAFS must point at the cafs binary}"
: "${top_builddir:=$(dirname "$CAFS")}"
top_builddir=$(cd "$top_builddir" && pwd) || exit 1
case $CAFS in /*) ;; *) CAFS=$PWD/$CAFS ;; esac
: "${GEN:=$top_builddir/tests/gen-data}"
export GEN
[ -x "$GEN" ] || { echo "Bail out! no test data generator at $GEN (make builds it)"; exit 1; }
export LC_ALL=C

_tap_n=0
_tap_failed=0
_cleanups=()

T=$(mktemp -d "${TMPDIR:-/tmp}/cafs-test.XXXXXX")
# the default cache (and its rollback records) is the test's own, not the
# machine's /var/cache/cafs that tests running at once (make -j2 check) and
# other users share; a test of the default location itself unsets it
export XDG_CACHE_HOME=$T/xdg-cache

at_cleanup() { _cleanups+=("$1"); }

_run_cleanups() {
	local i
	for ((i = ${#_cleanups[@]} - 1; i >= 0; i--)); do
		eval "${_cleanups[$i]}" >/dev/null 2>&1 || true
	done
	rm -rf "$T" 2>/dev/null || true
}
trap _run_cleanups EXIT
trap 'exit 130' INT TERM

# ok DESCRIPTION COMMAND...: run COMMAND; pass if it exits 0.
ok() {
	local desc=$1
	shift
	_tap_n=$((_tap_n + 1))
	local out
	if out=$("$@" 2>&1); then
		echo "ok $_tap_n - $desc"
	else
		echo "not ok $_tap_n - $desc"
		_tap_failed=$((_tap_failed + 1))
		printf '%s\n' "$out" | tail -n 20 | sed 's/^/#   /'
	fi
}

# todo REASON DESCRIPTION COMMAND...: like ok, for a known gap: a failure is
# reported as "# TODO REASON" and not counted; a pass shows up as XPASS
# (then turn it into ok).
todo() {
	local reason=$1 desc=$2
	shift 2
	_tap_n=$((_tap_n + 1))
	local out
	if out=$("$@" 2>&1); then
		echo "ok $_tap_n - $desc # TODO $reason"
	else
		echo "not ok $_tap_n - $desc # TODO $reason"
		printf '%s\n' "$out" | tail -n 5 | sed 's/^/#   /'
	fi
}

# fails DESCRIPTION COMMAND...: pass if COMMAND exits non-zero (not by a signal).
fails() {
	local desc=$1
	shift
	_tap_n=$((_tap_n + 1))
	local rc=0 out
	out=$("$@" 2>&1) || rc=$?
	if [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ]; then
		echo "ok $_tap_n - $desc"
	else
		echo "not ok $_tap_n - $desc (exit $rc)"
		_tap_failed=$((_tap_failed + 1))
		printf '%s\n' "$out" | tail -n 20 | sed 's/^/#   /'
	fi
}

# cafs_for_others: a copy of $CAFS that another user can run (the build
# may sit in a directory only root can enter, as a mktemp -d clone does):
# $T/bin/cafs, with $T opened to others. Prints its path.
cafs_for_others() {
	chmod 755 "$T"
	mkdir -p "$T/bin"
	[ -x "$T/bin/cafs" ] || install -m 0755 "$CAFS" "$T/bin/cafs"
	echo "$T/bin/cafs"
}

# skip DESCRIPTION REASON: one check that cannot run here, a TAP SKIP
# (never an ok: a skipped check has not passed)
skip() {
	_tap_n=$((_tap_n + 1))
	echo "ok $_tap_n - $1 # SKIP $2"
}

# skip_all REASON: the whole file is skipped
skip_all() {
	echo "1..0 # SKIP $*"
	exit 0
}

need() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || skip_all "$c not installed"
	done
}

done_testing() {
	echo "1..$_tap_n"
	[ "$_tap_failed" -eq 0 ]
}

# wait_until SECONDS PID COMMAND...: poll COMMAND (every 20 ms) until it
# succeeds. Fails after SECONDS, or as soon as PID (unless empty) is gone:
# for "the command is really running" before a test signals it.
wait_until() {
	local secs=$1 pid=$2 i
	shift 2
	for ((i = 0; i < secs * 50; i++)); do
		"$@" && return 0
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
			echo "# wait_until: process $pid is gone before: $*" >&2
			return 1
		fi
		sleep 0.02
	done
	echo "# wait_until: no $* after $secs s" >&2
	return 1
}

# opening_fifo PID: a thread of PID is blocked opening a FIFO that has no
# writer (the kernel's wait channel for that is wait_for_partner). Opening
# the FIFO to find out would wake the reader up; /proc does not.
opening_fifo() { grep -qx wait_for_partner /proc/"$1"/task/*/wchan 2>/dev/null; }

# mute_start: a TCP server on 127.0.0.1 that accepts connections and never
# answers, so a chunk fetched from a store there blocks (until the HTTP
# stall timeout); sets MUTE_PORT and MUTE_LOG (one line per connection: see
# mute_accepted). Stopped at exit. (A FIFO in a local store no longer
# blocks: chunk files are opened O_NONBLOCK.)
mute_start() {
	MUTE_LOG=$(mktemp "$T/mute.XXXXXX")
	python3 -c 'import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64)
print(s.getsockname()[1], flush=True)
held = []
while True:
    c, _ = s.accept(); held.append(c)
    with open(sys.argv[1], "a") as f: f.write("accepted\n")' "$MUTE_LOG" >"$MUTE_LOG.port" &
	local pid=$! i
	at_cleanup "kill $pid; wait $pid"
	for ((i = 0; i < 100; i++)); do [ -s "$MUTE_LOG.port" ] && break; sleep 0.05; done
	MUTE_PORT=$(cat "$MUTE_LOG.port")
}
# mute_accepted: the mute server has had a connection
mute_accepted() { [ -s "$MUTE_LOG" ]; }

# interrupted_by STDERR SIGNAME: STDERR (a file) has the line a cafs command
# prints when SIGNAME stopped it (tools/interrupt.c): proof that it caught
# the signal, which 128+N alone is not (the default action gives that too).
interrupted_by() {
	local text
	case $2 in
	TERM) text=Terminated ;;
	INT) text=Interrupt ;;
	HUP) text=Hangup ;;
	*) echo "interrupted_by: unknown signal $2"; return 1 ;;
	esac
	grep -qxF "cafs: interrupted by $text" "$1" || { echo "no 'cafs: interrupted by $text' in:"; cat "$1"; return 1; }
}

# expect_errno ERRNO OP PATH: OP on PATH fails with errno ERRNO (a name:
# EIO, EROFS, ENOENT, ...), told from the errno itself, not from a message
# or a non-zero status. OP: cat (open and read to the end), append (open
# for appending, write a byte), touch (create), mkdir, rm, chmod, stat.
EXPECT_ERRNO_PY='
import errno, os, sys
want, op, path = sys.argv[1:4]
if not hasattr(errno, want):
    sys.exit("expect_errno: no errno %s" % want)
def cat():
    fd = os.open(path, os.O_RDONLY)
    try:
        while os.read(fd, 1 << 20):
            pass
    finally:
        os.close(fd)
def append():
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, b"x")
    finally:
        os.close(fd)
def touch():
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o644))
ops = {"cat": cat, "append": append, "touch": touch, "mkdir": lambda: os.mkdir(path),
       "rm": lambda: os.unlink(path), "chmod": lambda: os.chmod(path, 0o600), "stat": lambda: os.stat(path)}
if op not in ops:
    sys.exit("expect_errno: unknown op %s" % op)
try:
    ops[op]()
except OSError as e:
    if e.errno == getattr(errno, want):
        sys.exit(0)
    sys.exit("%s %s: %s (%s), not %s" % (op, path, errno.errorcode.get(e.errno, e.errno), e.strerror, want))
sys.exit("%s %s: succeeded, expected %s" % (op, path, want))
'
expect_errno() { python3 -c "$EXPECT_ERRNO_PY" "$@"; }

# index_chunk_after OFFSET INDEX: the id (hex) of the first chunk of INDEX
# (.caidx/.caibx) that starts at or past OFFSET and is not the last one;
# nothing when there is none.
index_chunk_after() {
	python3 - "$1" "$2" <<'PY'
import struct, sys
off, b = int(sys.argv[1]), open(sys.argv[2], 'rb').read()
items = b[48 + 16:-40]
ends = [struct.unpack('<Q', items[i:i + 8])[0] for i in range(0, len(items), 40)]
for i in range(1, len(ends) - 1):
    if ends[i - 1] >= off:
        print(items[i * 40 + 8:i * 40 + 40].hex())
        break
PY
}

# gen_data FILE SIZE SEED [MODE]: deterministic test data, from the one
# generator (tests/unit/testdata.h through tests/gen-data; $GEN): MODE
# random (default: the xorshift32 stream), text, zeros or mixed.
gen_data() {
	"$GEN" "$2" "$3" ${4:+"$4"} >"$1"
}

# reflink_fs: a 300 MB xfs with reflink=1 on a loop device, mounted at
# M=$T/mnt and undone at exit (the test is skipped where that cannot be had)
reflink_fs() {
	truncate -s 300M "$T/xfs.img" && mkfs.xfs -q -m reflink=1 "$T/xfs.img" 2>/dev/null ||
		skip_all "mkfs.xfs -m reflink=1 failed"
	LOOP=$(losetup -f --show "$T/xfs.img" 2>/dev/null) || skip_all "no loop device"
	at_cleanup "losetup -d $LOOP"
	M=$T/mnt
	mkdir -p "$M"
	mount -t xfs "$LOOP" "$M" 2>/dev/null || skip_all "cannot mount xfs"
	at_cleanup "umount -l '$M'"
}
