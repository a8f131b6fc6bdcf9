#!/bin/bash
# mount-takeover-socket.sh - the takeover socket is only where nobody else
# can put one (fs/keeper.c): a runtime directory that others may write is
# refused (one warning; the mount serves, without takeovers), and a taker
# refuses a keeper socket that another user listens on (it would hand over
# the arguments the new server runs with). The accepted case, a 0700
# directory of ours, takes over.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
need python3 timeout setpriv
[ "$(id -u)" = 0 ] || skip_all "needs root (a listener of another user)"

src=$T/src
mkdir -p "$src"
"$GEN" 200K 1 >"$src/f"
"$CAFS" make -q --store="$T/store" "$T/img.caidx" "$src" >/dev/null || exit 1
at_cleanup 'for m in "$T"/m*; do fusermount3 -u -z "$m" 2>/dev/null; done'

# ---- a directory others may write: no socket, the mount serves ----
mkdir -p "$T/open"
chmod 0777 "$T/open"
m=$T/m1
CAFS_RUNTIME_DIR=$T/open mount_start "mount with a world-writable runtime directory" "$m" "$T/log1" \
	--store="$T/store" "$T/img.caidx" || exit 1
ok "... serves the image" cmp "$m/f" "$src/f"
ok "... one warning names the directory and why" \
	test "$(grep -c "$T/open: refused: writable by group or others.*no takeover socket" "$T/log1")" = 1
ok "... and puts no socket there" test -z "$(ls -A "$T/open")"
ok "a takeover then finds no socket" sh -c "! CAFS_RUNTIME_DIR='$T/open' timeout 20 '$CAFS' mount --takeover '$m' 2>'$T/err1'"
ok "... in one line" test "$(wc -l <"$T/err1")" = 1
mount_stop "unmount" "$m"

# ---- the accepted case: a 0700 directory of ours ----
mkdir -p "$T/run"
chmod 0700 "$T/run"
m=$T/m2
CAFS_RUNTIME_DIR=$T/run mount_start "mount with a private runtime directory" "$m" "$T/log2" \
	--store="$T/store" "$T/img.caidx" || exit 1
ok "... has its socket" test -S "$(ls -d "$T"/run/mnt-*.sock)"
ok "... and is taken over" env CAFS_RUNTIME_DIR="$T/run" timeout 30 "$CAFS" mount --takeover "$m"
ok "... serving the image after it" cmp "$m/f" "$src/f"
ok "... with no warning about the directory" sh -c "! grep -q 'no takeover socket' '$T/log2'"
# the keeper that took over is not mount_start's child: end it by its pid
k=$(python3 "$top_srcdir/tests/keeper-load.py" pids "$m" | cut -d' ' -f1)
[ "${k:-0}" != 0 ] && kill "$k"
for ((i = 0; i < 100; i++)); do is_mounted "$m" || break; sleep 0.05; done
ok "... and ends on SIGTERM" sh -c "! grep -q ' $m ' /proc/self/mounts"

# ---- a keeper socket another user listens on ----
# bound by root where the mountpoint's socket goes, then listened on as
# nobody (SO_PEERCRED is taken at listen): it offers a handover
mkdir -p "$T/run3" "$T/m3"
chmod 0700 "$T/run3"
cat >"$T/fake.py" <<'PY'
import os, socket, sys, array
d, mnt = sys.argv[1], sys.argv[2]
h = 14695981039346656037
for c in mnt.encode():
    h = ((h ^ c) * 1099511628211) & 0xffffffffffffffff
path = "%s/mnt-%016x.sock" % (d, h)
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(path)
os.chmod(path, 0o666)
os.setgid(65534); os.setuid(65534)
s.listen(1)
print("ready", flush=True)
s.settimeout(20)
c, _ = s.accept()
fds = [os.open("/dev/null", os.O_RDWR) for _ in range(3)]
c.sendmsg([b"HAND"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
c.recv(16)
PY
python3 "$T/fake.py" "$T/run3" "$T/m3" >"$T/fake.out" 2>&1 &
fake=$!
at_cleanup "kill $fake 2>/dev/null"
for ((i = 0; i < 100; i++)); do grep -q ready "$T/fake.out" && break; sleep 0.05; done
ok "a taker refuses a keeper socket that is another user's" \
	sh -c "! CAFS_RUNTIME_DIR='$T/run3' timeout 20 '$CAFS' mount --takeover '$T/m3' 2>'$T/err3'"
ok "... saying so in one line" sh -c "test \$(wc -l <'$T/err3') = 1 && grep -q \"another user's (uid 65534)\" '$T/err3'"
kill "$fake" 2>/dev/null
wait "$fake" 2>/dev/null
done_testing
