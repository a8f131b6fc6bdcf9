#!/bin/bash
# mount-restart-kept.sh - a restarted or taken-over server serves the image
# the mount was made with, from what the keeper kept (fs/keeper.h): the
# index, its metadata sidecar and its prefetch profile, with no network
# request for any of them. With nginx stopped, a server killed and started
# again answers `ls -lR` and `getfattr` from the kept sidecar with no chunk
# anywhere (no cache, the store down). A takeover after the index at the
# URL was replaced by a newer image says so in one line and serves the
# mounted image; without a change, no such line. With a trusted key, the
# kept signed sidecar and profile are used by a restarted server (their
# signatures were checked on those bytes at mount; nothing is refused).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"
need python3 getfattr setfattr
keeper_setup
# kill_server MNT LOG: SIGKILL the server; wait for the next one to serve
kill_server() {
	local n
	n=$(grep -c 'serving .* again' "$2")
	kill -KILL "$(server_of "$1")" || return 1
	wait_until 10 "" sh -c "test \$(grep -c 'serving .* again' '$2') -gt $n"
}

src=$T/src W=$T/www
mkdir -p "$src/a/b" "$src/c" "$W"
for i in 0 1 2 3; do "$GEN" $((100 + 50 * i))K $((i + 40)) >"$src/a/f$i"; done
"$GEN" 300K 50 >"$src/a/b/deep"
"$GEN" 200K 51 >"$src/c/g"
XATTR=yes
setfattr -n user.kept -v sidecar "$src/a/f1" 2>/dev/null || XATTR=
"$CAFS" make -q --store="$W/default.castr" "$W/img.caidx" "$src" >/dev/null || exit 1
ok "the image has a sidecar" test -s "$W/img.caidx.cameta"
nginx_start "$W" || exit 1
U=$NGINX_URL

# a prefetch profile published beside the index: recorded by a mount
m=$T/m0
mount_start "mount recording a profile" "$m" "$T/log.0" --no-cache --record-profile="$W/img.caidx.caprofile" \
	"$U/img.caidx" || exit 1
cat "$m/a/f0" "$m/c/g" >/dev/null
mount_stop "unmount writes the profile" "$m"
ok "... beside the index" test -s "$W/img.caidx.caprofile"

ls -lR "$src" | sed -n 's/^\([-dl][^ ]*\) .* \([^ ]*\)$/\1 \2/p' | sort >"$T/ls.want"
lsr() { (cd "$1" && timeout -s KILL 10 ls -lR .) | sed -n 's/^\([-dl][^ ]*\) .* \([^ ]*\)$/\1 \2/p' | sort; }

# ---- a restart makes no request for the index, sidecar or profile ----
m=$T/m1
# reads of chunks fail after 3 s with the store down (the soft deadline), and so
# does the profile's prefetch the unmount waits for
CAFS_HTTP_DEADLINE=3 mount_start "tree mount, no cache, with the sidecar and the profile" "$m" "$T/log.1" -v --no-cache "$U/img.caidx" || exit 1
ok "the first server used the profile" grep -q 'prefetch profile: [1-9]' "$T/log.1"
nginx_log_reset
ok "SIGKILL: a new server serves" kill_server "$m" "$T/log.1"
ok "... it says it serves the kept index, nothing fetched" \
	grep -q 'serving the index kept since the mount (sha256 [0-9a-f]*), its sidecar and profile: nothing fetched' "$T/log.1"
ok "... and it asked nginx for no index, sidecar or profile" \
	sh -c "! grep -E 'img\.caidx(\.cameta|\.caprofile)? ' '$NGINX_CONF_DIR/access.log'"
ok "... it replays the kept profile" test "$(grep -c 'prefetch profile: [1-9]' "$T/log.1")" = 2

nginx_stop
ok "nginx stopped: SIGKILL, a new server serves" kill_server "$m" "$T/log.1"
ok "... said no warning about the sidecar or the profile" \
	sh -c "! grep -E 'ignoring the (metadata sidecar|prefetch profile)|walking the archive' '$T/log.1'"
ok "... ls -lR answers from the kept sidecar (no chunk anywhere)" cmp <(lsr "$m") "$T/ls.want"
if [ -n "$XATTR" ]; then
	ok "... getfattr too" sh -c "timeout -s KILL 10 getfattr --only-values -n user.kept '$m/a/f1' | grep -qx sidecar"
else
	skip "... getfattr too" "no user xattrs on $T"
fi
ok "... and a file's bytes need the store: EIO, the mount stays up" \
	sh -c "! timeout -s KILL 10 cat '$m/a/b/deep' >/dev/null 2>&1 && timeout -s KILL 10 stat -c %F '$m/c' | grep -q directory"
nginx_start "$W" || exit 1
U=$NGINX_URL
mount_stop "unmount, keeper exits 0" "$m"

# ---- the same with a trusted key: signed index, sidecar and profile ----
if command -v minisign >/dev/null; then
	export XDG_CACHE_HOME=$T/xdg # the rollback record: this test's own
	K=$T/keys
	mkdir -p "$K" "$W/s"
	minisign -G -W -p "$K/k.pub" -s "$K/k.key" >/dev/null || exit 1
	ln -s ../default.castr "$W/s/default.castr"
	for f in img.caidx{,.cameta,.caprofile}; do
		cp "$W/$f" "$W/s/$f" && minisign -S -s "$K/k.key" -m "$W/s/$f" >/dev/null || exit 1
	done
	m=$T/m3
	CAFS_HTTP_DEADLINE=3 mount_start "signed: tree mount with a trusted key, no cache" "$m" "$T/log.3" -v --no-cache \
		--trusted-key="$K/k.pub" "$U/s/img.caidx" || exit 1
	ok "... the signed sidecar and profile used" \
		sh -c "grep -q 'prefetch profile: [1-9]' '$T/log.3' && ! grep -qE 'not used|walking the archive' '$T/log.3'"
	nginx_stop
	ok "... nginx stopped: SIGKILL, a new server serves" kill_server "$m" "$T/log.3"
	ok "... from the kept bytes, nothing fetched, nothing refused" sh -c "grep -q 'its sidecar and profile: nothing fetched' '$T/log.3' &&
		! grep -qE 'not used|walking the archive|refused' '$T/log.3' && test \$(grep -c 'prefetch profile: [1-9]' '$T/log.3') = 2"
	ok "... ls -lR answers from the kept sidecar" cmp <(lsr "$m") "$T/ls.want"
	nginx_start "$W" || exit 1
	U=$NGINX_URL
	mount_stop "unmount, keeper exits 0" "$m"
else
	skip "signed: the sidecar and profile kept with a trusted key" "minisign not installed"
fi

# ---- takeover: the index at the URL unchanged, then replaced ----
m=$T/m2
mount_start "tree mount with a cache" "$m" "$T/log.2" --cache="$T/cache" "$U/img.caidx" || exit 1
kp=$MOUNT_PID
ok "takeover, index unchanged: exit 0" sh -c "'$CAFS2' mount --takeover '$m' 2>'$T/to1.err'"
ok "... no line about a change" sh -c "! grep -q 'changed since it was mounted' '$T/to1.err'"
wait "$kp"
# a newer image at the same URL: other files, other chunks
mkdir -p "$T/src2"
"$GEN" 64K 99 >"$T/src2/new"
"$CAFS" make -q --store="$W/default.castr" "$W/img.caidx" "$T/src2" >/dev/null || exit 1
ok "takeover after the index changed: exit 0" sh -c "'$CAFS' mount --takeover '$m' 2>'$T/to2.err'"
ok "... it says so in one line" \
	sh -c "test \$(wc -l <'$T/to2.err') = 1 && grep -q '$m: the index at .*img.caidx changed since it was mounted; still serving the mounted one (sha256 [0-9a-f]*, now [0-9a-f]*); remount to switch' '$T/to2.err'"
cat "$T/to2.err" | sed 's/^/# /'
ok "... the mounted image is still served" diff -r "$m" "$src"
ok "... with the sidecar (no warning)" sh -c "! grep -q 'walking the archive' '$T/to2.err' '$T/log.2'"
k=$(keeper_of "$m")
kill "$k"
ok "SIGTERM to the new keeper unmounts" wait_until 10 "" sh -c "! grep -q ' $m ' /proc/mounts"

mount_done_testing
