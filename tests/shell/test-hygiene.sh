#!/usr/bin/env bash
# test-hygiene.sh - no test passes by printing ok for something it did not
# check: a check whose command cannot fail (`ok "..." true`, `ok "..." :`),
# a C check of a constant (check(1), check(true)), or a TAP line printed by
# hand (`echo "ok ...`) instead of through lib.sh's ok, fails, todo and skip
# (a check that cannot run here is `skip DESC REASON`, a TAP SKIP) or
# tap.h's check and tap_skip. Shown refusing planted copies of each, and
# passing the real tree.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

# hygiene DIR: print each offending line (file:line: text) under DIR/tests;
# exit 0 when there is none
hygiene() {
	local dir=$1 bad
	bad=$(
		cd "$dir" || exit 1
		# a shell check whose command is true or : (the description is one
		# quoted string or one word)
		grep -rnE "^[[:space:]]*(ok|todo[[:space:]]+(\"[^\"]*\"|'[^']*'|[^[:space:]]+))[[:space:]]+(\"[^\"]*\"|'[^']*'|[^[:space:]]+)[[:space:]]+(true|:|(ba)?sh -c ['\"](true|:)['\"])[[:space:]]*(;.*|#.*)?$" \
			--include='*.sh' --exclude=test-hygiene.sh tests
		# a TAP line by hand: only lib.sh's helpers (and lib-mount.sh's _tap,
		# which reports a real exit status) print them
		grep -rnE "(echo|printf)[[:space:]]+(-e[[:space:]]+)?[\"']?(not )?ok[[:space:]\"'$]" \
			--include='*.sh' --exclude=test-hygiene.sh tests | grep -vE '^tests/lib(-mount)?\.sh:'
		# a C check of a constant
		grep -rnE '\<(check|tap_result)[[:space:]]*\([[:space:]]*(1|true|!0|!!1|0 *== *0)[[:space:]]*[,)]' \
			--include='*.c' --include='*.h' tests
		# a C TAP line by hand: tap.h prints them
		grep -rnE "printf[[:space:]]*\([[:space:]]*\"(not )?ok " --include='*.c' tests
	)
	[ -z "$bad" ] && return 0
	printf '%s\n' "$bad"
	return 1
}

ok "the tests under $top_srcdir/tests hold no check that cannot fail" hygiene "$top_srcdir"

# planted copies: each must be refused, each with its own line
P=$T/planted
mkdir -p "$P/tests/shell" "$P/tests/unit"
plant() { # plant FILE TEXT: a tree holding just FILE
	rm -rf "${P:?}/tests" && mkdir -p "$P/tests/shell" "$P/tests/unit" && printf '%s\n' "$2" >"$P/tests/$1"
}
refused() { # refused FILE TEXT: hygiene fails on it and names it
	plant "$1" "$2"
	! hygiene "$P" >"$T/out" && grep -q "^tests/$1:1:" "$T/out"
}
ok 'refused: ok "... (skipped ...)" true' refused shell/a.sh 'ok "full disk (skipped: needs root)" true'
ok "refused: ok ... :" refused shell/a.sh "	ok 'loop device' :"
ok "refused: ok \$desc true" refused shell/a.sh 'ok "$desc" true # nothing to do'
ok "refused: todo REASON DESC true" refused shell/a.sh 'todo "issue 9" "left for later" true'
ok "refused: ok ... sh -c true" refused shell/a.sh "ok 'x' sh -c 'true'"
ok 'refused: echo "ok N ..." by hand' refused shell/a.sh 'echo "ok $((++_tap_n)) # SKIP no minisign"'
ok "refused: printf 'ok ...' by hand" refused shell/a.sh "printf 'ok %d - x\\n' \$_tap_n"
ok "refused: check(1) in a unit test" refused unit/test-x.c '	check(1); /* counted a truncation */'
ok "refused: check(true)" refused unit/test-x.c 'check( true );'
ok "refused: printf(\"ok ...\") in a unit test" refused unit/test-x.c '	printf("ok %u - skipped\n", ++tap_n);'
# and what is fine passes: real commands, skip, a description that says
# true, a command ending in true whose output is compared (casync-compat.sh),
# checks of expressions, tap_skip
accepted() {
	plant shell/a.sh 'ok "true is printed" grep -q true f
skip "block device" "no loop device"
compat '"'"'$C extract --seed=tree img.caidx out && linked tree; true'"'"'
fails "bad input" "$CAFS" extract
echo "# ok, a comment"' && hygiene "$P" &&
		plant unit/test-x.c 'check(n == 1);
check_int(rc, ==, 1);
tap_skip("the smallest archive", "needs root");' && hygiene "$P"
}
ok "accepted: real commands, skip, checks of expressions" accepted

done_testing
