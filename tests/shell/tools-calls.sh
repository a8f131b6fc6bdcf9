#!/bin/bash
# tools-calls.sh - inside tools/, calls go one way (docs/design.md, "Module
# map"; the head of tools/main.c): main -> parser -> request -> run, and
# main -> casync_cli -> request -> run.
#  - tools/main.c defines nothing but static functions and main(): no
#    file can call back up into it;
#  - tools/casync_cli.c builds no argv for a cafs command: it neither runs
#    a command from an argv (cafs_command_main) nor writes a cafs option
#    as text ("--store=%s"); the only argv it builds is ssh's, for the
#    remote end (ssh_open);
#  - a casync option reaches the command through the command's own set():
#    a bad value is reported in the same words under either syntax.
# The checker runs on the tree, then on copies with one violation planted,
# which it must refuse.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

# check_tree ROOT: prints one line per broken rule; fails if any.
check_tree() {
	local root=$1
	(
		cd "$root/tools" || exit 1
		# a definition starts at column 0 with a type and a name followed by "("
		awk '/^[a-z][a-z_ ]*[ *]+[a-z_][a-z_0-9]*\(/ && !/^static / && !/;[ \t]*$/ && !/^int main\(/ {
			printf "tools/main.c:%d: not static: %s\n", FNR, $0
		}' main.c
		awk 'FNR == 1 { in_ssh = 0 }
			/^static int ssh_open\(/ { in_ssh = 1 }
			in_ssh && /^}/ { in_ssh = 0 }
			/cafs_command_main\(/ { printf "tools/casync_cli.c:%d: runs a cafs command from an argv\n", FNR }
			/"--[a-z][a-z-]*=%s"/ && !in_ssh {
				printf "tools/casync_cli.c:%d: writes a cafs option as text: %s\n", FNR, $0
			}' casync_cli.c
	) | tee "$T/broken.$$"
	[ ! -s "$T/broken.$$" ]
}

ok "tools/ calls only down, and the casync front end builds no argv" check_tree "$top_srcdir"

mkdir -p "$T/copy"
copy() { rm -rf "$T/copy/tools"; cp -r "$top_srcdir/tools" "$T/copy/"; }

# The refusals: a public function in main.c ...
copy
printf 'int cafs_from_main(void)\n{\n\treturn 0;\n}\n' >>"$T/copy/tools/main.c"
refused_main() { ! check_tree "$T/copy" >"$T/out" 2>&1 && grep -q 'main.c:.*not static: int cafs_from_main' "$T/out"; }
ok "a function other parts could call back in main.c is refused" refused_main

# ... a rebuilt option in the casync front end ...
copy
sed -i '0,/^static void apply_options(/s//static const char *const planted = "--store=%s";\n&/' "$T/copy/tools/casync_cli.c"
refused_argv() { ! check_tree "$T/copy" >"$T/out" 2>&1 && grep -q 'casync_cli.c:.*writes a cafs option as text' "$T/out"; }
ok "a cafs option written as text in casync_cli.c is refused" refused_argv

# ... and a command run from an argv there.
copy
printf 'static int planted(char **v)\n{\n\treturn cafs_command_main(NULL, 1, v);\n}\n' >>"$T/copy/tools/casync_cli.c"
refused_run() { ! check_tree "$T/copy" >"$T/out" 2>&1 && grep -q 'casync_cli.c:.*runs a cafs command from an argv' "$T/out"; }
ok "a cafs command run from an argv in casync_cli.c is refused" refused_run

# The same set() behind both syntaxes: a bad value, one message; a good
# one works through both.
cd "$T" || exit 1
mkdir -p casync-bin && ln -sf "$CAFS" casync-bin/casync
echo data >in.txt
same_words() {
	"$CAFS" make --chunk-size=7 x.caibx in.txt 2>own.err
	local own=$?
	casync-bin/casync --chunk-size=7 make y.caibx in.txt 2>casync.err
	local theirs=$?
	# cafs's usage error is 2, casync's 1 (casync exits 1 on every failure)
	[ $own = 2 ] && [ $theirs = 1 ] && grep -q "^cafs: make: invalid chunk size '7'" own.err && cmp own.err casync.err
}
ok "casync's --chunk-size goes through make's own check: the same message" same_words
accepted() {
	"$CAFS" make --chunk-size=16K:64K:256K x.caibx in.txt >own.out &&
		casync-bin/casync --chunk-size=16K:64K:256K make y.caibx in.txt >casync.out && cmp own.out casync.out
}
ok "... and a good one makes the same index under both" accepted

done_testing
