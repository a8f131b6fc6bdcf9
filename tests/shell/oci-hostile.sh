#!/bin/bash
# oci-hostile.sh - a registry that lies (tests/oci-hostile.py, bearer
# tokens): the honest repository reads right through an anonymous bearer
# token fetched once and cached; a chunk manifest whose layer digest is
# not its blob's, or whose size is not the blob's, is a verification
# error, never data; a 16 MiB manifest is refused at 64 KiB with bounded
# memory; a token endpoint that never answers ends in the deadline. Each
# is a one-line error.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-http.sh"
need timeout
[ -x /usr/bin/python3 ] || skip_all "no /usr/bin/python3"

src=$T/src
mkdir -p "$src"
"$GEN" 600K 31 >"$src/a.bin"
printf 'small\n' >"$src/b.txt"
"$CAFS" make --store="$T/st.castr" "$T/app.caidx" "$src" >/dev/null || exit 1
py_server_start "$T/port" /usr/bin/python3 "$top_srcdir/tests/oci-hostile.py" "$T/st.castr" "$T/app.caidx" "$T/port" ||
	exit 1
H=oci+${PY_SERVER_URL}
export CAFS_HTTP_TIMEOUT=2 CAFS_HTTP_RETRIES=0 CAFS_HTTP_DEADLINE=3
stat_of() { curl -s "$PY_SERVER_URL/stats" | /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
one_line() { test "$(printf '%s\n' "$1" | wc -l)" = 1 && grep -q -- "$2" <<<"$1"; }

ok "bearer token (anonymous): extract from the honest repository" "$CAFS" extract "$H/good/app.caidx" "$T/x1"
ok "... equals the source" diff -r "$src" "$T/x1"
n_chunks=$(find "$T/st.castr" -name '*.cacnk' | wc -l)
# one per client of the repository (the index's, the store's), never one per chunk
ok "... tokens cached: $(stat_of tokens) for $n_chunks chunks" test "$(stat_of tokens)" -le 3 -a "$n_chunks" -gt 3

out=$("$CAFS" extract "$H/private/app.caidx" "$T/p1" 2>&1)
ok "a token service that wants credentials: refused without them" test $? -ne 0
ok "... in one line: access denied" one_line "$out" "access denied (no credentials found)"
ok "authenticated bearer token (CAFS_REGISTRY_USER/PASSWORD)" env CAFS_REGISTRY_USER=bob \
	CAFS_REGISTRY_PASSWORD=pw-of-bob "$CAFS" extract "$H/private/app.caidx" "$T/p2"
ok "... equals the source" diff -r "$src" "$T/p2"
out=$(CAFS_REGISTRY_USER=bob CAFS_REGISTRY_PASSWORD=wrong-pw "$CAFS" extract "$H/private/app.caidx" "$T/p3" 2>&1)
ok "a wrong password: refused" test $? -ne 0
ok "... in one line that shows no password" bash -c 'one_line() { test "$(printf "%s\n" "$1" | wc -l)" = 1 && grep -q -- "$2" <<<"$1"; }; one_line "$1" "access denied (credentials sent)" && ! grep -q -e wrong-pw -e pw-of-bob <<<"$1"' _ "$out"

out=$("$CAFS" extract --store="$H/liar" "$T/app.caidx" "$T/x2" 2>&1)
ok "a layer that is not what its manifest says: refused" test $? -ne 0
ok "... as a blob that does not match its digest" grep -q "blob does not match its digest" <<<"$out"
ok "... no wrong data written" sh -c "! cmp -s '$src/a.bin' '$T/x2/a.bin'"
out=$("$CAFS" extract --store="$H/short" "$T/app.caidx" "$T/x3" 2>&1)
ok "a layer longer than its manifest says: refused" grep -q "not the size its manifest says" <<<"$out"

out=$(/usr/bin/time -f 'maxrss %M' "$CAFS" extract "$H/huge/app.caidx" "$T/x4" 2>&1)
rc=$?
err=$(grep -v -e '^maxrss' -e '^Command exited' <<<"$out")
ok "a 16 MiB manifest: refused" test "$rc" -ne 0
ok "... in one line" one_line "$err" "manifest larger than 64 KiB"
rss=$(sed -n 's/^maxrss //p' <<<"$out")
ok "... with bounded memory (max RSS ${rss} KiB < 60 MiB)" test "${rss:-999999}" -lt 61440

start=$(date +%s)
out=$(timeout 30 "$CAFS" extract "$H/slow/app.caidx" "$T/x5" 2>&1)
rc=$?
took=$(($(date +%s) - start))
ok "a token endpoint that never answers: fails (exit $rc)" test "$rc" -ne 0 -a "$rc" -ne 124
ok "... within the deadline (${took} s)" test "$took" -le 10
ok "... in one line" one_line "$out" "cafs: "
done_testing
