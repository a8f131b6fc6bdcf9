#!/bin/bash
# completion.sh - the bash completion (tools/completion.c), as the build
# writes it: sourced in bash and asked as bash asks it (COMP_WORDS,
# COMP_CWORD, _cafs), it offers every command `cafs --help` lists, every
# option `cafs help CMD` shows and no other (per verb for cache and delta), and
# arguments: directories for DIR, the words of "yes|no".
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
export HOME=$T/home XDG_CACHE_HOME=$T/xdg # an option tried below must touch no real cache
mkdir -p "$HOME" "$XDG_CACHE_HOME"
cd "$T" || exit 1

file=$top_builddir/completion/cafs
ok "make built the completion file" test -r "$file" || { done_testing; exit 1; }
ok "the built completion file is what cafs completion bash writes" \
	sh -c "'$CAFS' completion bash | cmp -s - '$file'"
ok "cafs completion with another shell is refused" sh -c "'$CAFS' completion zsh 2>/dev/null; test \$? = 2"
# shellcheck disable=SC1090
. "$file"
ok "bash reads it: _cafs is the completion of cafs" sh -c "complete -p cafs 2>/dev/null | grep -q '_cafs cafs' ||
	bash -c '. \"$file\"; complete -p cafs' | grep -q -- '-F _cafs cafs'"

# comp WORD...: what completing the last word (possibly "") offers
comp() {
	COMP_WORDS=(cafs "$@")
	COMP_CWORD=$#
	COMPREPLY=()
	_cafs
	printf '%s\n' "${COMPREPLY[@]}"
}

commands=$("$CAFS" --help | awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } /^$/ && on { on = 0 }')
ok "cafs --help lists commands ($(echo $commands | wc -w))" test "$(echo $commands | wc -w)" -ge 10
offered=$(comp "")
missing=
for c in $commands; do
	grep -qx "$c" <<<"$offered" || missing="$missing $c"
done
ok "every command is offered${missing:+ (missing:$missing)}" test -z "$missing"
ok "cafs st<TAB> is stats" test "$(comp st)" = stats
ok "cafs help <TAB> offers the commands" sh -c "test '$(comp help "" | wc -l)' -ge $(echo $commands | wc -w)"

# help_opts CMD: the option words `cafs help CMD` shows: "--name" or
# "--name=" (takes an argument) and "-x"
help_opts() {
	"$CAFS" help "$1" | awk '/^ +-/ {
		line = $0; sub(/^ +/, "", line); p = index(line, "  "); if (p) line = substr(line, 1, p - 1)
		n = split(line, t, ", ")
		for (i = 1; i <= n; i++) { w = t[i]; if (w ~ /^--[^=]*=/) sub(/=.*/, "=", w); print w }
	}'
}
cache_verbs=$(comp cache "")
ok "cafs cache <TAB> offers its verbs" test "$(echo $cache_verbs)" = "stat fill prune verify seed"
for c in $commands; do
	[ "$c" = help ] && continue
	want=$(help_opts "$c")
	if [ "$c" = cache ] || [ "$c" = delta ]; then
		# per verb: the options whose help names the verb, and those for
		# every verb (no "VERB:"); --max-size and --repair are in the
		# verbs' lines of the help
		got_all=
		bad=
		verbs=$(comp "$c" "")
		[ -n "$verbs" ] || bad=" (no verbs offered)"
		for v in $verbs; do
			got=$(comp "$c" "$v" -)
			got_all="$got_all $got"
			for w in $("$CAFS" help "$c" | awk -v v="$v" '/^ +-/ {
				line = $0; sub(/^ +/, "", line); p = index(line, "  ")
				desc = p ? substr(line, p) : ""; if (p) line = substr(line, 1, p - 1)
				if (desc ~ /^ +[a-z]+:/ && index(desc, v ":") == 0) next
				n = split(line, t, ", ")
				for (i = 1; i <= n; i++) { w = t[i]; if (w ~ /^--[^=]*=/) sub(/=.*/, "=", w); print w }
			}'); do
				grep -qx -- "$w" <<<"$got" || bad="$bad $v:$w"
			done
		done
		if [ "$c" = cache ]; then
			grep -qx -- --max-size= <<<"$(comp cache prune -)" || bad="$bad prune:--max-size="
			grep -qx -- --repair <<<"$(comp cache verify -)" || bad="$bad verify:--repair"
		else
			# a verb's own option is not offered to the other verb
			grep -qx -- --level= <<<"$(comp delta info -)" && bad="$bad info:--level="
		fi
		ok "$c: each verb offers its options${bad:+ (missing:$bad)}" test -z "$bad"
		continue
	fi
	got=$(comp "$c" -)
	missing=
	for w in $want; do
		grep -qx -- "$w" <<<"$got" || missing="$missing $w"
	done
	extra=
	for w in $got; do
		grep -qx -- "$w" <<<"$want" || extra="$extra $w"
	done
	ok "$c: offers every option of its help${missing:+ (missing:$missing)}${extra:+ (not in the help:$extra)}" \
		test -z "$missing$extra"
done

# (every option the help shows is one the parser takes: manpages.sh; so
# is every option offered, as the two sets are equal above)

# arguments
mkdir -p "$T/dir1" "$T/dir2"
: >"$T/file1"
ok "cafs mount --cache=<TAB> offers directories" test "$(comp mount "--cache=$T/di" | sort | tr '\n' ' ')" = \
	"--cache=$T/dir1 --cache=$T/dir2 "
ok "cafs list --recursive=<TAB> offers no" test "$(comp list --recursive=)" = --recursive=no
ok "cafs info -s DIR <TAB>: DIR is -s's argument, the next word a file" \
	test "$(comp info -s "$T/dir1" "$T/fil")" = "$T/file1"
ok "cafs info -s <TAB> offers -s's argument: directories and files" \
	sh -c "test '$(comp info -s "$T/dir" | wc -l)' -ge 2"
done_testing
