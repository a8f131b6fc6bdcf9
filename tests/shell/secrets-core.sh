#!/bin/bash
# secrets-core.sh - credentials stay out of core dumps (issue 21.9): a
# mount whose store needs a bearer header from the settings file, killed
# with SIGABRT (a real kernel core dump, core_pattern permitting) leaves no
# core holding the token; the same mount without a secret does dump core,
# and that core holds a marker (so the check can see what a core holds);
# CAFS_DUMPABLE=1 brings the core back, token and all (which shows the
# check would see a token in a core: it fails without the fix).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-http.sh"
. "$top_srcdir/tests/lib-mount.sh"

# a kernel core of the process, in its working directory
case $(cat /proc/sys/kernel/core_pattern) in
core | core.*) ;;
*) skip_all "core_pattern is '$(cat /proc/sys/kernel/core_pattern)', not a file in the working directory" ;;
esac
ulimit -c unlimited 2>/dev/null || skip_all "cannot raise the core size limit"
[ "$(ulimit -c)" = unlimited ] || skip_all "core size limit stuck at $(ulimit -c)"

W=$T/www
mkdir -p "$W/open" "$T/src"
"$GEN" 300K 1 >"$T/src/a"
"$CAFS" make -q --store="$W/open/default.castr" "$W/open/img.caidx" "$T/src" >/dev/null || exit 1
cp -a "$W/open" "$W/auth"
TOK=tok-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')-SECRET
NGINX_EXTRA="location /auth/ { if (\$http_authorization != 'Bearer $TOK') { return 403; } }"
nginx_start "$W" || exit 1
U=$NGINX_URL
export CAFS_CONFIG=$T/cafs.conf XDG_CACHE_HOME=$T/xdg CAFS_HTTP_RETRIES=0
printf '[%s/auth/]\nheader = Authorization: Bearer %s\n' "$U" "$TOK" >"$CAFS_CONFIG"
chmod 600 "$CAFS_CONFIG"
unset CAFS_DUMPABLE

# abort_mount NAME URL: mount URL (no cache) with its working directory
# $T/NAME, read the file (the token goes out with every request), SIGABRT
# its server; its core, if any, is $T/NAME/core*
MARKER=MARKER-$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')
abort_mount() {
	local name=$1 url=$2 mnt=$T/mnt-$1-$MARKER
	mkdir -p "$T/$name" "$mnt"
	cd "$T/$name" || return 1
	if mount_start "$name: mount $url" "$mnt" "$T/$name.log" --no-cache "$url"; then
		ok "$name: ... reads the file" cmp "$T/src/a" "$mnt/a"
		# the server holds the token, not its keeper (which then starts
		# another server: stop it and the mount with SIGTERM)
		local srv
		srv=$(mount_server_pid "$mnt")
		[ -n "$srv" ] && kill -ABRT "$srv"
		wait_until 10 "" test ! -d "/proc/$srv" || true
		kill -TERM "$MOUNT_PID"
		{ wait "$MOUNT_PID"; } 2>/dev/null
	fi
	cd "$T" || return 1
	fusermount3 -u -z "$mnt" 2>/dev/null
	return 0
}
core_of() { ls "$T/$1"/core* 2>/dev/null | head -n 1; }

abort_mount plain "$U/open/img.caidx"
c=$(core_of plain)
ok "without a secret: SIGABRT leaves a core" test -n "$c"
ok "... which holds the marker (the mount point's name): a core shows what it holds" grep -qaF "$MARKER" "$c"

abort_mount secret "$U/auth/img.caidx"
ok "... (the token was needed: without the settings file the index is refused)" \
	bash -c "! CAFS_CONFIG= '$CAFS' list '$U/auth/img.caidx' >/dev/null 2>&1"
c=$(core_of secret)
ok "... no core holds the token" bash -c "[ -z '$c' ] || ! grep -qaF '$TOK' '$c'"
ok "... (the process made itself not dumpable: no core at all)" test -z "$c"

export CAFS_DUMPABLE=1
abort_mount dumpable "$U/auth/img.caidx"
c=$(core_of dumpable)
ok "CAFS_DUMPABLE=1: the core is back" test -n "$c"
ok "... and it does hold the token (which is why it is off by default)" grep -qaF "$TOK" "${c:-/dev/null}"
unset CAFS_DUMPABLE

mount_done_testing
