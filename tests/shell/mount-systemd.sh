#!/bin/bash
# mount-systemd.sh - systemd/cafs-mount@.service's life, played without
# systemd (not PID 1 here): its ExecStartPre, ExecStart and ExecReload lines,
# read from the unit and expanded from a /etc/cafs/mounts/NAME.conf-style
# file, run with $NOTIFY_SOCKET naming a socket this test reads as systemd
# would (SO_PASSCRED). The mount answers once ExecStart returns; the keeper
# tells its own pid (MAINPID=, sent by that process); the reload (a
# takeover) leaves the mount up, an open file reading on, and the new keeper
# tells its pid while the old one exits; without the unit's
# CAFS_NOTIFY_MAINPID=1 nothing is sent (a mount made under some other
# service that passes $NOTIFY_SOCKET on). The stop (SIGTERM to the unit's processes) unmounts. A keeper
# killed with its server leaves a dead mount, which ExecStartPre detaches so
# that ExecStart mounts again; on a live mount ExecStartPre changes nothing.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"
need python3
UNIT=$top_srcdir/systemd/cafs-mount@.service
M=$T/srv/img KEEPER_MOUNTS=$T/srv/img
at_cleanup 'fusermount3 -u -z "$M"' # after the keeper's cleanup: a dead mount left behind
keeper_setup
# gone PID...: none of them runs (a zombie nobody reaped yet counts as gone)
gone() {
	local p
	for p; do
		[ -r "/proc/$p/stat" ] && ! grep -q '^[0-9]* (.*) Z' "/proc/$p/stat" 2>/dev/null && return 1
	done
	return 0
}

src=$T/src
mkdir -p "$src/d"
"$GEN" 3M 61 >"$src/d/big"
echo hello >"$src/hello"
serve_images "$src" || exit 1

# the instance's file, as EnvironmentFile= reads it
cat >"$T/img.conf" <<EOF
URL=$NGINX_URL/img.caidx
MOUNTPOINT=$M
OPTIONS=--cache=$T/cache --log=$T/mount.log
EOF
declare -A conf
while IFS='=' read -r k v; do conf[$k]=$v; done <"$T/img.conf"

# unit_cmd KEY: the unit's KEY= command line as systemd runs it: $OPTIONS
# split at spaces, ${URL} and ${MOUNTPOINT} one word each, /usr/bin/cafs
# the built one (into the array CMD)
unit_cmd() {
	local line w
	line=$(sed -n "s/^$1=//p" "$UNIT")
	CMD=()
	for w in $line; do
		case $w in
		/usr/bin/cafs) CMD+=("$CAFS") ;;
		'$OPTIONS') CMD+=(${conf[OPTIONS]}) ;;
		'${URL}') CMD+=("${conf[URL]}") ;;
		'${MOUNTPOINT}') CMD+=("${conf[MOUNTPOINT]}") ;;
		*) CMD+=("$w") ;;
		esac
	done
	[ ${#CMD[@]} -gt 0 ]
}
# ExecStartPre is `/bin/sh -c '...'` with $$ for the shell's $
start_pre() {
	MOUNTPOINT=${conf[MOUNTPOINT]} sh -c "$(sed -n "s/^ExecStartPre=\/bin\/sh -c '\(.*\)'\$/\1/p" "$UNIT" | sed 's/\$\$/$/g')"
}
# the unit's Environment= lines (CAFS_NOTIFY_MAINPID=1), as words for env
UNIT_ENV=($(sed -n 's/^Environment=//p' "$UNIT"))
exec_start() { unit_cmd ExecStart && env "${UNIT_ENV[@]}" NOTIFY_SOCKET="$T/notify" "${CMD[@]}"; }
exec_reload() { unit_cmd ExecReload && env "${UNIT_ENV[@]}" NOTIFY_SOCKET="$T/notify" "${CMD[@]}"; }

# systemd's side of $NOTIFY_SOCKET: each datagram as "SENDER-PID MESSAGE"
python3 - "$T/notify" "$T/notes" <<'EOF' &
import socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
out = open(sys.argv[2], "a", buffering=1)
while True:
    msg, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(12))
    pid = 0
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
            pid = struct.unpack("iII", data[:12])[0]
    out.write("%d %s\n" % (pid, msg.decode(errors="replace")))
EOF
NOTIFY_PID=$!
at_cleanup "kill $NOTIFY_PID"
: >"$T/notes"
wait_until 5 "$NOTIFY_PID" test -S "$T/notify" || exit 1
notes() { wc -l <"$T/notes"; }
# told PID: the last note is PID's own MAINPID=PID
told() { [ "$(tail -n 1 "$T/notes")" = "$1 MAINPID=$1" ]; }

# ---- start ----
ok "ExecStartPre makes the missing mountpoint" bash -c "$(declare -f start_pre); $(declare -p conf UNIT); start_pre && test -d '$M'"
ok "ExecStart (cafs mount \$OPTIONS \${URL} \${MOUNTPOINT}) returns 0" exec_start
ok "... and the mount answers" cmp "$src/d/big" "$M/d/big"
k1=$(keeper_of "$M")
ok "the keeper told systemd its pid, from itself (MAINPID=$k1)" wait_until 5 "" told "$k1"

# ---- reload: the takeover, no unmount ----
exec 7<"$M/d/big"
head -c 1000000 <&7 >"$T/part1"
n=$(notes)
ok "ExecReload (cafs mount --takeover \${MOUNTPOINT}) returns 0" exec_reload
k2=$(keeper_of "$M")
ok "... a new keeper ($k2, was $k1)" test "$k2" != 0 -a "$k2" != "$k1"
ok "... which told systemd its pid (MAINPID=$k2) before the reload returned" \
	bash -c "[ \$(wc -l <'$T/notes') -gt $n ] && [ \"\$(tail -n 1 '$T/notes')\" = '$k2 MAINPID=$k2' ]"
ok "... the old keeper is gone" wait_until 5 "" gone "$k1"
ok "... the mount stayed: the file opened before the reload reads on" \
	bash -c 'cat "$1" - <&7 | cmp - "$2"' _ "$T/part1" "$src/d/big"
exec 7<&-
n=$(notes)
ok "a takeover with \$NOTIFY_SOCKET but not the unit's CAFS_NOTIFY_MAINPID=1 (another service's) works" \
	env NOTIFY_SOCKET="$T/notify" "$CAFS" mount --takeover "$M"
k3=$(keeper_of "$M")
ok "... and does not claim the main pid" bash -c "sleep 0.2; [ \$(wc -l <'$T/notes') -eq $n ] && [ '$k3' != 0 ] && [ '$k3' != '$k2' ]"
ok "... the mount answers" cmp "$src/hello" "$M/hello"

# ---- ExecStartPre on a live mount: nothing changes ----
ok "ExecStartPre on the live mount leaves it mounted and answering" \
	bash -c "$(declare -f start_pre); $(declare -p conf UNIT); start_pre && cmp '$src/hello' '$M/hello'"

# ---- stop: KillMode=control-group, SIGTERM to the keeper and its server ----
s3=$(server_of "$M")
kill -TERM "$k3" "$s3"
ok "stop (SIGTERM to keeper $k3 and server $s3): both exit" \
	wait_until 10 "" gone "$k3" "$s3"
ok "... and the image is unmounted" bash -c "$(declare -f is_mounted); ! is_mounted '$M'"
ok "... the mountpoint is a plain directory again" test -d "$M"

# ---- a killed keeper: the restart's ExecStartPre detaches the dead mount ----
ok "start again" exec_start
k4=$(keeper_of "$M") s4=$(server_of "$M")
kill -KILL "$k4" "$s4"
wait_until 5 "" gone "$k4" "$s4"
ok "SIGKILL to keeper and server: a dead mount (ENOTCONN) is left" \
	bash -c "! test -e '$M' && grep -q ' $M ' /proc/self/mountinfo"
# start_on_dead: ExecStart fails on the dead mount (bounded), saying where
start_on_dead() {
	local out
	if out=$(timeout 10 bash -c "$(declare -f unit_cmd exec_start); $(declare -p conf UNIT UNIT_ENV CAFS T); exec_start" 2>&1); then
		echo "ExecStart succeeded on a dead mount"
		return 1
	fi
	printf '%s\n' "$out"
	grep -q -- "$M" <<<"$out"
}
ok "... on which ExecStart alone fails, naming the mountpoint" start_on_dead
ok "ExecStartPre detaches it" bash -c "$(declare -f start_pre); $(declare -p conf UNIT); start_pre && test -d '$M'"
ok "... and ExecStart mounts again" exec_start
ok "... answering" cmp "$src/d/big" "$M/d/big"
k5=$(keeper_of "$M")
ok "... its keeper told its pid (MAINPID=$k5)" wait_until 5 "" told "$k5"
kill -TERM "$k5"
ok "the keeper's SIGTERM: it exits" wait_until 10 "" gone "$k5"
ok "... having unmounted" bash -c "$(declare -f is_mounted); ! is_mounted '$M'"

done_testing
