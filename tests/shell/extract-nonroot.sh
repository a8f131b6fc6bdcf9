#!/bin/bash
# extract-nonroot.sh - extract as a user who is not root, of an archive made
# as root, does what GNU tar does: a set-user-ID (set-group-ID) bit stays
# only on a file whose owner (group) is kept, i.e. is the extracting user's;
# an entry that cannot be created (a device node) is skipped with one line,
# the rest is extracted, and the exit code is non-zero. The accepted cases:
# the user's own setuid file keeps its bits, and root extracts everything.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
[ "$(id -u)" -eq 0 ] || skip_all "needs root to make the archive (device nodes, owners) and to switch users"
need setpriv
export TZ=UTC

NOBODY=65534
chmod 755 "$T"
mkdir -p "$T/src/d" "$T/out"
echo root-suid >"$T/src/suid" && chmod 4755 "$T/src/suid"          # root's: bit must go
echo root-sgid >"$T/src/sgid" && chmod 2755 "$T/src/sgid"          # root's group: bit must go
echo mine >"$T/src/mine" && chown $NOBODY:$NOBODY "$T/src/mine" && chmod 6755 "$T/src/mine" # the user's: kept
mknod "$T/src/null" c 1 3
mknod "$T/src/d/loop" b 7 0
echo after >"$T/src/d/z"
echo last >"$T/src/zz"
mkfifo "$T/src/fifo"
"$CAFS" make "$T/a.catar" "$T/src" >/dev/null 2>&1 || { echo "Bail out! cafs make failed"; exit 1; }
chmod 644 "$T/a.catar"
chmod 1777 "$T/out"

as_nobody() { setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "$@"; }
mode_of() { stat -c %a "$1"; }

rc=0
as_nobody "$CAFS" extract "$T/a.catar" "$T/out/x" 2>"$T/err" || rc=$?
ok "as non-root: extract exits non-zero (entries were skipped)" [ "$rc" -eq 1 ]
ok "... one line per device node it could not create" bash -c '
	grep -c "cannot create a character device here, skipped" "$1" | grep -qx 1 &&
	grep -c "cannot create a block device here, skipped" "$1" | grep -qx 1 &&
	grep -q "2 entries of the archive could not be created" "$1"' _ "$T/err"
ok "... and everything else is there (files after the devices too)" bash -c '
	cd "$1" && [ "$(cat d/z)" = after ] && [ "$(cat zz)" = last ] && [ -p fifo ] &&
	[ ! -e null ] && [ ! -e d/loop ]' _ "$T/out/x"
ok "... root's setuid file: the user owns it now, without the bit" [ "$(mode_of "$T/out/x/suid")" = 755 ]
ok "... root's group's setgid file: without the bit" [ "$(mode_of "$T/out/x/sgid")" = 755 ]
ok "... the user's own setuid+setgid file keeps both" [ "$(mode_of "$T/out/x/mine")" = 6755 ]
ok "... owned by the user" [ "$(stat -c %u "$T/out/x/suid")" = $NOBODY ]

# into an existing directory (entries made under temporary names first)
mkdir -p "$T/out/y" && chown $NOBODY:$NOBODY "$T/out/y" && echo old >"$T/out/y/zz" && chown $NOBODY "$T/out/y/zz"
rc=0
as_nobody "$CAFS" extract "$T/a.catar" "$T/out/y" 2>"$T/err2" || rc=$?
ok "as non-root into an existing directory: the same (non-zero, devices skipped, bits cleared)" bash -c '
	[ "$1" -eq 1 ] && [ "$(cat "$2/zz")" = last ] && [ "$(stat -c %a "$2/suid")" = 755 ] &&
	[ "$(stat -c %a "$2/mine")" = 6755 ] && [ ! -e "$2/null" ] &&
	[ "$(grep -c "skipped" "$3")" = 2 ]' _ "$rc" "$T/out/y" "$T/err2"

# the casync front end: the same
mkdir -p "$T/bin" && ln -s "$CAFS" "$T/bin/casync"
rc=0
as_nobody "$T/bin/casync" extract "$T/a.catar" "$T/out/c" 2>/dev/null || rc=$?
ok "casync extract as non-root: non-zero, the rest extracted, setuid cleared" bash -c '
	[ "$1" -eq 1 ] && [ "$(cat "$2/d/z")" = after ] && [ "$(stat -c %a "$2/suid")" = 755 ]' _ "$rc" "$T/out/c"

# as root: all of it, bits and devices
ok "as root: everything, with its bits and device nodes" bash -c '
	"$1" extract "$2/a.catar" "$2/out/r" && [ -c "$2/out/r/null" ] && [ -b "$2/out/r/d/loop" ] &&
	[ "$(stat -c %a "$2/out/r/suid")" = 4755 ] && [ "$(stat -c %a "$2/out/r/sgid")" = 2755 ] &&
	[ "$(stat -c %u "$2/out/r/mine")" = 65534 ]' _ "$CAFS" "$T"
done_testing
