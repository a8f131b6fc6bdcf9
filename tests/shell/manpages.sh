#!/bin/bash
# manpages.sh - the man page and the built-in help agree, and the help
# tells no lies:
#  - for every command `cafs --help` lists, the options (long and short)
#    that `cafs help CMD` names are those the .TP entries of the man page's
#    `.SS "cafs CMD"` section name, plus its COMMON OPTIONS;
#  - `cafs CMD --help` prints the same as `cafs help CMD`;
#  - every option the help names is accepted by the command's parser (for
#    cache, by the verbs its description names: "fill: ...");
#  - the mount -o keys cafs handles itself (tools/cmd_mount.c parse_o) are the ones
#    the man page lists, and the help names them.
# MAN=path overrides the page (to check that the test fails when an option
# is left out).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

MAN=${MAN:-$top_srcdir/docs/cafs.1}
[ -r "$MAN" ] || skip_all "no man page at $MAN"
export XDG_CACHE_HOME="$T/xdg" HOME="$T/home" TMPDIR="$T"
mkdir -p "$HOME" "$XDG_CACHE_HOME"
cd "$T" || exit 1

BOGUS=--cafs-no-such-option
CACHE_VERBS="stat fill prune verify seed"

# help_opts CMD: "TOKEN ARG VERBS" per option the help names, ARG 1 if it
# takes an argument; VERBS (cache only) the verbs it is for, or "-" for all.
# Option lines are the ones starting with blanks and a dash, or (cache)
# "  cache VERB ..."; only their first column (up to two blanks) is read.
help_opts() {
	"$CAFS" help "$1" | awk -v verbs="$CACHE_VERBS" '
	function flush(   i, v, n, k) {
		if (!ntok)
			return
		v = vv == "" ? "-" : vv
		for (i = 1; i <= ntok; i++) {
			k = toks[i]
			print k, (k ~ /^--/ ? arg[k] : sarg), v
		}
		ntok = 0
	}
	function scanverbs(text,   n, w, i) {
		n = split(verbs, w, " ")
		for (i = 1; i <= n; i++)
			if (index(text, w[i] ":") && index(" " vv " ", " " w[i] " ") == 0)
				vv = vv (vv == "" ? "" : " ") w[i]
	}
	/^ +(-|cache [a-z]+)/ {
		flush()
		line = $0
		sub(/^ +/, "", line)
		first = line
		desc = ""
		p = index(line, "  ")
		if (p) {
			first = substr(line, 1, p - 1)
			desc = substr(line, p)
		}
		vv = ""
		if (match(first, /^cache [a-z]+/)) {
			vv = substr(first, 7, RLENGTH - 6)
		} else {
			scanverbs(desc)
		}
		sarg = 0
		rest = " " first
		while (match(rest, /[ ,\[]-(-[a-z0-9][a-z0-9-]*|[a-zA-Z0-9])/)) {
			t = substr(rest, RSTART + 1, RLENGTH - 1)
			after = substr(rest, RSTART + RLENGTH, 1)
			toks[++ntok] = t
			if (t ~ /^--/) {
				arg[t] = after == "=" ? 1 : 0
				if (arg[t])
					sarg = 1
			} else if (after == " " && substr(rest, RSTART + RLENGTH + 1, 1) ~ /[A-Z]/) {
				sarg = 1
			}
			rest = substr(rest, RSTART + RLENGTH)
		}
		next
	}
	/^ +[^ -]/ { if (ntok) { scanverbs($0); next } }
	{ flush() }
	END { flush() }'
}

# man_section_opts NAME: the option tokens in the tag lines (the line after
# .TP or .TQ) of the man page section .SS "NAME" (or .SH "NAME")
man_section_opts() {
	awk -v want="$1" '
	/^\.S[SH] / {
		h = $0
		sub(/^\.S[SH] +/, "", h)
		gsub(/"/, "", h)
		on = h == want
		next
	}
	!on { next }
	/^\.T[PQ]/ { tag = 1; next }
	tag {
		tag = 0
		l = $0
		gsub(/\\f[BIRP]/, "", l)
		gsub(/\\-/, "-", l)
		gsub(/"/, " ", l)
		sub(/^\.[A-Z]+ */, " ", l)
		l = " " l
		while (match(l, /[ ,\[(]-(-[a-z0-9][a-z0-9-]*|[a-zA-Z0-9])/)) {
			print substr(l, RSTART + 1, RLENGTH - 1)
			l = substr(l, RSTART + RLENGTH)
		}
	}' "$MAN" | sort -u
}

# same_options CMD: help's set equals the man section's plus COMMON OPTIONS
same_options() {
	local cmd=$1
	help_opts "$cmd" | awk '{ print $1 }' | sort -u >"$T/help.$cmd"
	{ man_section_opts "cafs $cmd"; man_section_opts "COMMON OPTIONS"; } | sort -u >"$T/man.$cmd"
	[ -s "$T/help.$cmd" ] || { echo "no options found in 'cafs help $cmd'"; return 1; }
	if ! grep -qx -- "--help" "$T/help.$cmd"; then
		echo "'cafs help $cmd' does not name --help"
		return 1
	fi
	local only_help only_man
	only_help=$(comm -23 "$T/help.$cmd" "$T/man.$cmd" | tr '\n' ' ')
	only_man=$(comm -13 "$T/help.$cmd" "$T/man.$cmd" | tr '\n' ' ')
	[ -z "$only_help$only_man" ] && return 0
	[ -z "$only_help" ] || echo "only in 'cafs help $cmd': $only_help"
	[ -z "$only_man" ] || echo "only in the man page (section cafs $cmd): $only_man"
	return 1
}

# same_help CMD: `cafs CMD --help` is `cafs help CMD`
same_help() {
	"$CAFS" help "$1" >"$T/h1" 2>&1
	"$CAFS" "$1" --help >"$T/h2" 2>&1
	diff -u "$T/h1" "$T/h2"
}

# rejected TOKEN: did the last run's stderr ($T/err) complain about TOKEN?
# (getopt names the option it rejects; the extra $BOGUS option after it
# is expected to be rejected and is not looked at)
rejected() {
	local tok=$1
	grep -v -e "$BOGUS" "$T/err" |
		grep -E -e "unrecognized option|invalid option|doesn't allow an argument|requires an argument|is ambiguous|are for extract" |
		grep -F -e "'$tok" -e "'${tok#-}'" -e "are for extract"
}

# accepted CMD...: every option `cafs help CMD` names is accepted by the
# parser of CMD (cache: of each verb the option is for). Each is tried
# with a dummy argument if it takes one, followed by $BOGUS, so that
# nothing runs: the command stops at the value or at $BOGUS.
accepted() {
	local cmd=$1 tok argf verbs v bad=0 try
	while read -r tok argf verbs; do
		if [ "$cmd" = cache ]; then
			[ "$verbs" = - ] && verbs=$CACHE_VERBS
		else
			verbs=-
		fi
		for v in $verbs; do
			if [ "$v" = - ]; then try=("$cmd"); else try=(cache "$v"); fi
			if [ "$argf" = 1 ]; then
				if [ "${tok#--}" != "$tok" ]; then
					try+=("$tok=x")
				else
					try+=("$tok" x)
				fi
			else
				try+=("$tok")
			fi
			try+=("$BOGUS")
			local rc=0
			"$CAFS" "${try[@]}" >"$T/out" 2>"$T/err" </dev/null || rc=$?
			if rejected "$tok" >/dev/null; then
				echo "cafs ${try[*]}: rejects $tok:"
				sed 's/^/    /' "$T/err"
				bad=1
			elif [ "$rc" -ne 0 ] && [ "$rc" -ne 2 ]; then
				echo "cafs ${try[*]}: exit $rc (expected 0 or a usage error)"
				sed 's/^/    /' "$T/err"
				bad=1
			fi
		done
	done < <(help_opts "$cmd")
	return $bad
}

# the detector itself: an unknown option is seen as rejected
bogus_detected() {
	"$CAFS" make "$BOGUS" >/dev/null 2>"$T/err" || true
	cp "$T/err" "$T/err.bogus"
	grep -q "unrecognized option '$BOGUS'" "$T/err.bogus" || { cat "$T/err.bogus"; return 1; }
	"$CAFS" make --no-such-thing=1 "$BOGUS" >/dev/null 2>"$T/err" || true
	rejected --no-such-thing >/dev/null || { echo "not detected:"; cat "$T/err"; return 1; }
}
ok "an unknown option is detected as rejected" bogus_detected

cmds=$("$CAFS" --help | awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { on = 0 }' |
	grep -v '^help$' | sort -u)
ok "the help lists commands" test -n "$cmds"

has_section() { grep -q "^\\.SS \"cafs $1\"" "$MAN" || { echo "no .SS \"cafs $1\" in $MAN"; return 1; }; }
common_section() {
	local want got
	want=$(printf '%s\n' --help --quiet --verbose -h -q -v)
	got=$(man_section_opts "COMMON OPTIONS")
	[ "$want" = "$got" ] || { echo "COMMON OPTIONS names:" $got; return 1; }
}
ok "man page: COMMON OPTIONS names -v -q -h" common_section

for c in $cmds; do
	ok "$c: man page has a section" has_section "$c"
	ok "$c: help and man page name the same options" same_options "$c"
	ok "$c: '$c --help' is 'help $c'" same_help "$c"
	ok "$c: every option in its help is accepted" accepted "$c"
done

# mount -o: the keys parse_o handles itself, against the man page's list
o_keys_src() {
	awk '/^static int parse_o\(/ { on = 1 } on && /"defaults"/ { exit } on' "$top_srcdir/tools/cmd_mount.c" |
		grep -oE '(strncmp\(opt, |opt_is\(opt, len, )"[a-z_]+=?"' | grep -oE '"[a-z_]+=?"' | tr -d '"' | sort -u
}
# the .TP tags in the mount section that are not options: "store= DIR" -> store=
o_keys_man() {
	awk '/^\.SS / { on = $0 == ".SS \"cafs mount\""; next } /^\.SH / { on = 0 }
	     on && /^\.T[PQ]/ { tag = 1; next }
	     on && tag { tag = 0; if ($0 !~ /\\-/) { l = $0; sub(/^\.[A-Z]+ +/, "", l); gsub(/"/, "", l); split(l, w, " "); print w[1] } }' "$MAN" |
		sort -u
}
o_keys() {
	local src man
	src=$(o_keys_src)
	man=$(o_keys_man)
	[ -n "$src" ] || { echo "no -o keys found in tools/cmd_mount.c"; return 1; }
	[ "$src" = "$man" ] || { echo "tools/cmd_mount.c parse_o:" $src; echo "man page:" $man; return 1; }
	local k missing=
	for k in $src; do
		"$CAFS" help mount | grep -qE "(^|[ ,])$k([ ,;]|$)" || missing="$missing $k"
	done
	[ -z "$missing" ] || { echo "not in 'cafs help mount':$missing"; return 1; }
}
ok "mount -o keys: tools/cmd_mount.c, man page and help agree" o_keys

# cafs.conf(5): the keys the parser knows (core/net/storeconf.c keys[]) are the
# ones the SETTINGS section lists
conf_keys() {
	local src man
	src=$(awk '/^static const struct key keys\[\]/ { on = 1; next } on && /^};/ { exit }
		on { if (match($0, /\{ "[a-z-]+"/)) print substr($0, RSTART + 3, RLENGTH - 4) }' \
		"$top_srcdir/core/net/storeconf.c" | sort -u)
	man=$(awk '/^\.SH / { on = $0 == ".SH SETTINGS"; next }
		on && /^\.T[PQ]/ { tag = 1; next }
		on && tag { tag = 0; l = $0; sub(/^\.[A-Z]+ +/, "", l); gsub(/\\/, "", l); split(l, w, " "); print w[1] }' \
		"$top_srcdir/docs/cafs.conf.5" | sort -u)
	[ -n "$src" ] || { echo "no keys found in core/net/storeconf.c"; return 1; }
	[ "$src" = "$man" ] || { echo "core/net/storeconf.c:" $src; echo "cafs.conf.5:" $man; return 1; }
}
ok "cafs.conf keys: core/net/storeconf.c and cafs.conf(5) agree" conf_keys

done_testing
