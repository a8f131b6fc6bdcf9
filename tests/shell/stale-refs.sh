#!/bin/bash
# stale-refs.sh - a path the tree names is a path the tree has: every
# token of the form DIR/..., DIR one of the source folders below, in a
# tracked text file (docs, README.md, setup.sh, .ci/run, comments, tests)
# names a tracked file or folder, or begins one (a module named without
# its suffix, `tools/cmd_cache*.c`, a program built from its .c). Files
# move (core/ became one folder per layer; the keeper moved to fs/); this
# keeps the words that point at them from rotting.
#
# Not checked: build products (.la, .o, .libs), a path after another path
# component ($T/core/x.c: inside a test's scratch tree), bare file names
# (source.h: many are system headers or casync's), and placeholders (NAME,
# foo, L, X).
# The checker runs on the tree, then on a copy with one stale path
# planted, which it must refuse.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

# the top of a checkout itself: distcheck unpacks the tarball inside one
[ "$(git -C "$top_srcdir" rev-parse --show-toplevel 2>/dev/null)" = "$(cd "$top_srcdir" && pwd -P)" ] ||
	skip_all "not a git checkout (a dist tarball): the tracked files are unknown"

DIRS='core|fs|tools|tests|docs|bench|\.ci|build-aux|m4'

# Paths that name nothing in the tree on purpose, each with why.
ALLOWED='
tests/demo.sh docs/README.md      the sample tree the demo builds has one
tests/lib.sh tests/shell/foo.sh   an example of running one test
tests/shell/layers.sh core/loose.c the file its refusal plants
'

# check ROOT: prints FILE:LINE: TOKEN for each stale path; fails if any.
check() {
	local root=$1
	(
		cd "$root" || exit 1
		# every tracked path and every folder on the way to one
		git ls-files | awk -F/ '{ p = $1; print p; for (i = 2; i <= NF; i++) { p = p "/" $i; print p } }' |
			sort -u >"$T/paths"
		# what is read: text, not fuzz inputs, not .gitignore (it names what is not
		# tracked), not this file (its examples and its planted path are stale)
		git ls-files | grep -vE '^tests/fuzz/(corpus|regress)/|(^|/)\.gitignore$|^tests/shell/stale-refs\.sh$' >"$T/files"
		while read -r f; do
			[ -f "$f" ] && grep -Iq . "$f" 2>/dev/null || continue
			grep -noE "(^|[^A-Za-z0-9_./\$-])(top_srcdir\\}?/|srcdir\\)/)?($DIRS)/[A-Za-z0-9_./-]*[A-Za-z0-9_]" "$f" |
				sed -E "s/^([0-9]+):.*(^|[^A-Za-z0-9_./\$-])(top_srcdir\\}?\\/|srcdir\\)\\/)?/\\1:/; s/^([0-9]+):[^A-Za-z0-9_.]/\\1:/" |
				sed "s|^|$f:|"
		done <"$T/files" | awk -F: -v allowed="$ALLOWED" '
			BEGIN {
				n = split(allowed, a, "\n")
				for (i = 1; i <= n; i++) { split(a[i], w, " "); if (w[2] != "") ok[w[1] " " w[2]] = 1 }
				while ((getline p < "'"$T/paths"'") > 0) path[p] = 1
			}
			{
				tok = $3
				if ((tok in path) || ($1 " " tok) in ok) next
				if (tok ~ /(^|[\/-])(NAME|foo|L|X)([\/.-]|$)/) next
				if (tok ~ /\.(la|lo|o)$|\/\.libs$/) next # build products
				print
			}
		' >"$T/stale.unsorted"
		# a prefix of a tracked path (a module without its suffix, a glob's stem)
		while IFS=: read -r f ln tok; do
			grep -q "^$tok" "$T/paths" || echo "$f:$ln: $tok names nothing in the tree"
		done <"$T/stale.unsorted"
	) | tee "$T/stale.$$"
	[ ! -s "$T/stale.$$" ]
}

ok "every source path the tree names exists" check "$top_srcdir"

# The refusal: a clone of the tree (its committed files, plus the working
# tree's changes) where one comment names a file that moved.
git clone -q --no-hardlinks "$top_srcdir" "$T/copy" 2>/dev/null
(cd "$top_srcdir" && git diff HEAD) | (cd "$T/copy" && git apply --allow-empty 2>/dev/null)
(cd "$top_srcdir" && git ls-files --others --exclude-standard -z) |
	(cd "$top_srcdir" && xargs -0r cp --parents -t "$T/copy") 2>/dev/null
(cd "$T/copy" && git add -A >/dev/null 2>&1)
sed -i '0,/^ \* /s|^ \* | * (core/source.c, a stale path) |' "$T/copy/fs/fs.h"
refused() { ! check "$T/copy" >"$T/out" 2>&1 && grep -q '^fs/fs.h:[0-9]*: core/source.c names nothing' "$T/out"; }
ok "a stale path (core/source.c, now core/image/source.c) is refused, by file and line" refused

done_testing
