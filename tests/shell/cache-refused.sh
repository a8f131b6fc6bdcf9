#!/bin/bash
# cache-refused.sh - a cache that cafs refuses (writable by others, or
# whose indexes/ is) is refused in ONE line by every command that takes
# --cache, with a non-zero exit, and nothing is asked of the server after
# it (issue 21.2: the refusal was printed five times, plus two warnings
# that the index could not be kept). The same commands with a private
# cache work.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-http.sh"
. "$top_srcdir/tests/lib-mount.sh"

W=$T/www
mkdir -p "$W" "$T/src/d"
"$GEN" 300K 1 >"$T/src/d/a"
"$GEN" 200K 2 >"$T/src/b"
"$CAFS" make -q --store="$W/store" "$W/img.caidx" "$T/src" >/dev/null || exit 1
nginx_start "$W" || exit 1
U=$NGINX_URL

mkdir -m 0777 "$T/open" && chmod 0777 "$T/open"
mkdir -m 0700 "$T/half" && mkdir -m 0777 "$T/half/indexes" && chmod 0777 "$T/half/indexes"

# the commands that take --cache, with a remote image (the cache is used)
cmds=(
	"extract --store=$U/store $U/img.caidx $T/out"
	"extract --store=$U/store $W/img.caidx $T/out"
	"list $U/img.caidx"
	"mtree $U/img.caidx"
	"mount -f --store=$U/store $U/img.caidx $T/mnt"
	"cache fill --store=$U/store $U/img.caidx"
	"cache seed $U/img.caidx $T/src"
	"cache stat"
	"cache verify"
	"cache prune --max-size=1M"
)
mkdir -p "$T/mnt"

# refused CACHE WHY CMD...: exit 1, exactly one stderr line (cafs: cache ...:
# WHY), no request to the server
refused() {
	local cache=$1 why=$2 rc=0
	shift 2
	nginx_log_reset
	# shellcheck disable=SC2086 # the command line is split on purpose
	timeout 30 "$CAFS" $* --cache="$cache" >"$T/stdout" 2>"$T/stderr" || rc=$?
	[ "$rc" = 1 ] || { echo "exit $rc"; cat "$T/stderr"; return 1; }
	[ "$(wc -l <"$T/stderr")" = 1 ] || { echo "stderr has $(wc -l <"$T/stderr") lines:"; cat "$T/stderr"; return 1; }
	grep -q "^cafs: cache $cache.*$why" "$T/stderr" || { cat "$T/stderr"; return 1; }
	[ -z "$(nginx_log)" ] || { echo "the server was asked:"; nginx_log; return 1; }
}

for c in "${cmds[@]}"; do
	short=${c//$T/}
	short=${short//$U/URL}
	ok "cafs $short --cache=OPEN (0777): one line, exit 1, nothing fetched" \
		refused "$T/open" "writable by group or others (mode 0777)" "$c"
	# copies of a remote index are kept in indexes/: the commands that
	# open one check it too
	case $c in
	cache\ s* | cache\ v* | cache\ p* | *\ $W/img.caidx*) ;;
	*) ok "cafs $short --cache=HALF (its indexes/ 0777): the same" \
		refused "$T/half" "indexes: not a private directory of ours" "$c" ;;
	esac
done
ok "the open cache was left as it was (empty, 0777)" \
	test "$(stat -c %a "$T/open")" = 777 -a -z "$(ls -A "$T/open")"

# the default cache ($XDG_CACHE_HOME/cafs) is checked the same way
mkdir -m 0777 -p "$T/xdg/cafs" && chmod 0777 "$T/xdg/cafs"
ok "a mount with the default cache writable by others: one line, exit 1" \
	bash -c "! XDG_CACHE_HOME='$T/xdg' timeout 30 '$CAFS' mount -f --store='$U/store' '$U/img.caidx' '$T/mnt' 2>'$T/e' &&
		[ \$(wc -l <'$T/e') = 1 ] && grep -q 'xdg/cafs: writable by group or others' '$T/e'"

# accepted: a private cache
P=$T/private
ok "extract with a private cache" "$CAFS" extract -q --cache="$P" --store="$U/store" "$U/img.caidx" "$T/out1"
ok "... the files are right" diff -r "$T/src" "$T/out1"
ok "... the cache kept the index and chunks" \
	test -n "$(ls "$P/indexes")" -a -n "$(find "$P" -name '*.cacnk')"
ok "list with it" bash -c "'$CAFS' list --cache='$P' '$U/img.caidx' | grep -q ' d/a\$'"
ok "mtree with it" bash -c "'$CAFS' mtree --cache='$P' '$U/img.caidx' | grep -q '^b type=file'"
ok "cache fill into it" "$CAFS" cache fill -q --cache="$P" --store="$U/store" "$U/img.caidx"
ok "cache seed into it" "$CAFS" cache seed -q --cache="$P" "$U/img.caidx" "$T/src"
ok "cache stat of it" "$CAFS" cache stat --cache="$P"
ok "cache verify of it" "$CAFS" cache verify -q --cache="$P"
ok "cache prune of it" "$CAFS" cache prune -q --cache="$P" --max-size=100M
mount_start "mount with it" "$T/mnt" "$T/mlog" --cache="$P" --store="$U/store" "$U/img.caidx"
ok "... reads the files" diff -r "$T/src" "$T/mnt"
mount_stop "... unmounts" "$T/mnt"
ok "... and the daemon said nothing on stderr" test ! -s "$T/mlog"

mount_done_testing
