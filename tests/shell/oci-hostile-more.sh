#!/bin/bash
# oci-hostile-more.sh - a registry that lies (tests/oci-hostile.py), more:
# `cafs gc` of a store whose tag list has "tags" that is not a list, or
# pages whose Links go round, ends in a one-line error, not a loop for
# ever; a Link to another host that begins with the registry's URL is not
# followed (the honest repository's tag list is collected as before).
# Blobs redirected to another host are fetched there without the
# registry's bearer token. An auth file that someone else could have
# written (another user's, or writable by others) is not believed: it
# would choose the credentials sent. A host name too long to be one is
# refused (cut short, it would have found another host's credentials).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-http.sh"
need timeout
[ -x /usr/bin/python3 ] || skip_all "no /usr/bin/python3"

src=$T/src
mkdir -p "$src"
"$GEN" 100K 7 >"$src/a.bin"
"$CAFS" make --store="$T/st.castr" "$T/app.caidx" "$src" >/dev/null || exit 1
py_server_start "$T/port" /usr/bin/python3 "$top_srcdir/tests/oci-hostile.py" "$T/st.castr" "$T/app.caidx" "$T/port" ||
	exit 1
H=oci+${PY_SERVER_URL}
export CAFS_HTTP_TIMEOUT=2 CAFS_HTTP_RETRIES=0 CAFS_HTTP_DEADLINE=3
stat_of() { curl -s "$PY_SERVER_URL/stats" | /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
one_line() { test "$(printf '%s\n' "$1" | wc -l)" = 1 && grep -q -- "$2" <<<"$1"; }

ok "gc of the honest repository (one page, nothing to remove)" "$CAFS" gc --dry-run --store="$H/good" "$T/app.caidx"

out=$(timeout 10 "$CAFS" gc --dry-run --store="$H/tagsnum" "$T/app.caidx" 2>&1)
rc=$?
ok "\"tags\" that is not a list: fails, not a loop for ever (exit $rc)" test "$rc" -ne 0 -a "$rc" -ne 124
ok "... in one line" one_line "$out" "the tag list is not one"

before=$(stat_of pages)
out=$(timeout 10 "$CAFS" gc --dry-run --store="$H/loop" "$T/app.caidx" 2>&1)
rc=$?
pages=$(($(stat_of pages) - before))
ok "pages whose Links go round: fails, not a loop for ever (exit $rc)" test "$rc" -ne 0 -a "$rc" -ne 124
ok "... after asking for each page once ($pages)" test "$pages" = 2
ok "... in one line" one_line "$out" "go round in a loop"

out=$(timeout 10 "$CAFS" gc --dry-run --store="$H/elsewhere" "$T/app.caidx" 2>&1)
rc=$?
ok "a next page on another host that begins with the registry's URL: refused (exit $rc)" test "$rc" -ne 0 -a "$rc" -ne 124
ok "... not asked for" test "$(stat_of elsewhere)" = 0
ok "... in one line" one_line "$out" "next page is elsewhere"
ok "blobs redirected to another host: extract" "$CAFS" extract "$H/redir/app.caidx" "$T/x1"
ok "... equals the source" diff -r "$src" "$T/x1"
ok "... fetched there ($(stat_of away) blobs)" test "$(stat_of away)" -gt 0
ok "... without the registry's token ($(stat_of away_auth) with one)" test "$(stat_of away_auth)" = 0

long=$(printf 'a%.0s' $(seq 300))
out=$("$CAFS" extract "oci+http://$long:1/r/app.caidx" "$T/l1" 2>&1)
ok "a registry host longer than a host name can be: refused as such" grep -q "not a registry's repository" <<<"$out"

hostport=${PY_SERVER_URL#http://}
printf '{"auths":{"%s":{"auth":"%s"}}}\n' "$hostport" "$(printf bob:pw-of-bob | base64)" >"$T/auth.json"
chmod 600 "$T/auth.json"
ok "an auth file of yours (0600): its credentials open the private repository" \
	env REGISTRY_AUTH_FILE="$T/auth.json" "$CAFS" extract "$H/private/app.caidx" "$T/a1"
ok "... equals the source" diff -r "$src" "$T/a1"
chmod 666 "$T/auth.json"
out=$(REGISTRY_AUTH_FILE="$T/auth.json" "$CAFS" extract "$H/private/app.caidx" "$T/a2" 2>&1)
ok "an auth file others can write: not used (access denied)" grep -q "access denied (no credentials found)" <<<"$out"
ok "... with a warning that says why" grep -q "auth.json: refused: writable by group or others" <<<"$out"
chmod 600 "$T/auth.json"
if [ "$(id -u)" = 0 ] && chown nobody "$T/auth.json" 2>/dev/null; then
	out=$(REGISTRY_AUTH_FILE="$T/auth.json" "$CAFS" extract "$H/private/app.caidx" "$T/a3" 2>&1)
	ok "another user's auth file: not used (access denied)" grep -q "access denied (no credentials found)" <<<"$out"
	ok "... with a warning that says why" grep -q "auth.json: refused: owned by another user" <<<"$out"
else
	skip "another user's auth file: not used" "needs root to give the file away"
	skip "... with a warning that says why" "needs root"
fi
done_testing
