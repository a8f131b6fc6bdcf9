#!/bin/bash
# remote-open-errors.sh - a remote store that cannot be opened (a registry
# URL without a repository, an URL of no remote kind) is one "cafs: ..."
# line and exit 1, alone or as a failover group's member, for extract and
# info --store: ca_remote_store_open says it and its callers do not say it
# again (it was two lines: the reason, then "...: Invalid argument").
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

# one_line CMD...: CMD exits 1 with exactly one "cafs: what: why" line
one_line() {
	local rc=0
	"$@" >"$T/stdout" 2>"$T/stderr" || rc=$?
	[ "$rc" -eq 1 ] || { echo "exit $rc, expected 1"; cat "$T/stderr"; return 1; }
	[ "$(wc -l <"$T/stderr")" -eq 1 ] || { echo "expected one line:"; cat "$T/stderr"; return 1; }
	grep -q '^cafs: ..*: ' "$T/stderr" || { echo "not 'cafs: what: why':"; cat "$T/stderr"; return 1; }
}

echo hello >"$T/in"
ok "setup: make" "$CAFS" make --store="$T/s" "$T/x.caibx" "$T/in"
ok "a local store extracts (the accepted case)" "$CAFS" extract --store="$T/s" "$T/x.caibx" "$T/out"
ok "and its bytes" cmp "$T/in" "$T/out"
rm -f "$T/out"
bad=oci+http://127.0.0.1:1
ok "extract: a registry URL without a repository: one line" one_line "$CAFS" extract --store=$bad "$T/x.caibx" "$T/out"
ok "the line says why" grep -q "not a registry's repository" "$T/stderr"
ok "extract: a group with such a member: one line" \
	one_line "$CAFS" extract --store="$T/s|$bad" "$T/x.caibx" "$T/out"
ok "info --store: one line" one_line "$CAFS" info --store=$bad "$T/x.caibx"
ok "info --store with the local store works" "$CAFS" info --store="$T/s" "$T/x.caibx"
done_testing
