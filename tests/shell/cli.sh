#!/bin/bash
# cli.sh - the command line contract: help and version on stdout with exit
# 0; usage errors exit 2 with nothing on stdout and every stderr line a
# "cafs: ..." message (or the "Try 'cafs ... --help'." hint).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

# helpful CMD...: exit 0, something on stdout, nothing on stderr
helpful() {
	local rc=0
	"$CAFS" "$@" >"$T/out" 2>"$T/err" || rc=$?
	[ "$rc" -eq 0 ] || { echo "exit $rc"; cat "$T/err"; return 1; }
	[ -s "$T/out" ] || { echo "no output on stdout"; return 1; }
	[ ! -s "$T/err" ] || { echo "stderr:"; cat "$T/err"; return 1; }
}

# usage_error CMD...: exit 2 (not a signal, not 1), stdout empty, stderr
# non-empty and made of "cafs: " lines, the first one a "cafs: " line
usage_error() {
	local rc=0
	"$CAFS" "$@" >"$T/out" 2>"$T/err" || rc=$?
	[ "$rc" -eq 2 ] || { echo "exit $rc, expected 2"; cat "$T/err"; return 1; }
	[ ! -s "$T/out" ] || { echo "stdout:"; cat "$T/out"; return 1; }
	[ -s "$T/err" ] || { echo "no message"; return 1; }
	head -n 1 "$T/err" | grep -q '^cafs: ' || { echo "first line:"; head -n 1 "$T/err"; return 1; }
	if grep -v -e '^cafs: ' -e "^Try 'cafs" "$T/err"; then
		echo "(lines above do not start with 'cafs: ')"
		return 1
	fi
}

# ---- help and version ----
ok "--help" helpful --help
ok "-h" helpful -h
ok "help" helpful help
ok "--version" helpful --version
ok "--version says cafs VERSION" bash -c '"$CAFS" --version | grep -Eq "^cafs [0-9]"'
ok "--help lists make and extract" bash -c '"$CAFS" --help | grep -q "make" && "$CAFS" --help | grep -q "extract"'

# every command the help lists: help CMD and CMD --help
cmds=$("$CAFS" --help | awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { on = 0 }' |
	grep -v '^help$' | sort -u)
ok "the help lists commands" test -n "$cmds"
for c in $cmds; do
	ok "help $c" helpful help "$c"
	ok "$c --help" helpful "$c" --help
	ok "$c -h" helpful "$c" -h
	ok "help $c shows its usage" bash -c '"$CAFS" help "$1" | grep -q "^Usage: cafs $1"' _ "$c"
	ok "$c: unknown option" usage_error "$c" --no-such-option
	ok "$c: unknown short option" usage_error "$c" -Z
done

# ---- usage errors ----
# no arguments: the usage text, on stderr, exit 2
no_args() {
	local rc=0
	"$CAFS" >"$T/out" 2>"$T/err" || rc=$?
	[ "$rc" -eq 2 ] && [ ! -s "$T/out" ] && grep -q '^Usage: cafs' "$T/err"
}
ok "no arguments" no_args
ok "unknown command" usage_error frobnicate
ok "unknown global option" usage_error --frobnicate
ok "help for an unknown command" usage_error help frobnicate
ok "make: no arguments" usage_error make
ok "make: one argument" usage_error make "$T/a.caibx"
ok "make: three arguments" usage_error make "$T/a.caibx" /dev/null extra
ok "make: unknown output suffix" usage_error make "$T/a.txt" /dev/null
ok "make: option without its argument" usage_error make "$T/a.caibx" /dev/null --store
ok "make: -s without its argument" usage_error make -s
ok "make: chunk size 0" usage_error make --chunk-size=0 "$T/a.caibx" /dev/null
ok "make: chunk size max < 48" usage_error make --chunk-size=3 "$T/a.caibx" /dev/null
ok "make: chunk size min > avg" usage_error make --chunk-size=300:200:400 "$T/a.caibx" /dev/null
ok "make: chunk size over 128M" usage_error make --chunk-size=1:2:200M "$T/a.caibx" /dev/null
ok "make: chunk size garbage" usage_error make --chunk-size=lots "$T/a.caibx" /dev/null
ok "make: unknown digest" usage_error make --digest=md5 "$T/a.caibx" /dev/null
ok "make: bad thread count" usage_error make -j abc "$T/a.caibx" /dev/null
ok "make: unknown feature" usage_error make --with=frobs "$T/a.caidx" /dev/null
ok "make: bad boolean" usage_error make --exclude-nodump=maybe "$T/a.caidx" /dev/null
ok "extract: no arguments" usage_error extract
ok "extract: one argument" usage_error extract "$T/a.caibx"
ok "extract: unknown input suffix" usage_error extract "$T/a.txt" "$T/out"
ok "extract: bad thread count" usage_error extract -j -1 "$T/a.caibx" "$T/out"
ok "digest: no arguments" usage_error digest
ok "digest: two arguments" usage_error digest a b
ok "digest: unknown digest" usage_error digest --digest=crc32 /dev/null
ok "info: no arguments" usage_error info
ok "info: two arguments" usage_error info a.caibx b.caibx

# a usage error touches nothing
ok "nothing was created" bash -c '[ -z "$(ls -A "$T" | grep -v -e "^out$" -e "^err$")" ]'

done_testing
