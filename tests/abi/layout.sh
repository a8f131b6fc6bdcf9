#!/bin/bash
# layout.sh INCLUDEDIR [CC] - print the binary layout of libcafs's public
# headers as installed under INCLUDEDIR (INCLUDEDIR/cafs/*.h): the size and
# alignment of every public struct and enum, the offset and size of every
# struct member, the value of every enum constant and of every CAFS_ number
# macro. tests/abi/layout.txt is its output for the last release; libcafs.sh
# compares the two, so a change of the ABI shows as a diff.
#
# The program that measures is written from the headers themselves (an awk
# over their struct, enum and #define lines: one member per line, as they
# are written), so a new struct or member is measured without being named
# here. After a deliberate change (a member added at a struct's end, a new
# struct), regenerate the file and commit it:
#   tests/abi/layout.sh DESTDIR/usr/local/include >tests/abi/layout.txt
set -eu
inc=${1:?usage: layout.sh INCLUDEDIR [CC]}
cc=${2:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

{
	echo '#include <stddef.h>'
	echo '#include <stdio.h>'
	for h in "$inc"/cafs/*.h; do echo "#include <cafs/$(basename "$h")>"; done
	echo 'int main(void)'
	echo '{'
	awk '
		# comments go first (they may hold "{", ";" or a whole line)
		{
			line = $0
			while (incomment || index(line, "/*")) {
				if (incomment) {
					e = index(line, "*/")
					if (!e) { line = ""; break }
					line = substr(line, e + 2); incomment = 0
				} else {
					b = index(line, "/*"); rest = substr(line, b + 2); e = index(rest, "*/")
					if (e) line = substr(line, 1, b - 1) " " substr(rest, e + 2)
					else { line = substr(line, 1, b - 1); incomment = 1; break }
				}
			}
		}
		kind == "" && match(line, /^(typedef[ \t]+)?struct[ \t]+cafs_[a-z0-9_]+[ \t]*\{/) {
			t = line; sub(/^(typedef[ \t]+)?struct[ \t]+/, "", t); sub(/[ \t]*\{.*/, "", t)
			kind = "struct"; type = "struct " t
			printf "\tprintf(\"%s size %%zu align %%zu\\n\", sizeof(%s), _Alignof(%s));\n", type, type, type
			next
		}
		kind == "" && match(line, /^(typedef[ \t]+)?enum[ \t]+cafs_[a-z0-9_]+[ \t]*\{/) {
			t = line; sub(/^(typedef[ \t]+)?enum[ \t]+/, "", t); sub(/[ \t]*\{.*/, "", t)
			kind = "enum"; type = "enum " t
			printf "\tprintf(\"%s size %%zu\\n\", sizeof(%s));\n", type, type
			next
		}
		kind != "" && line ~ /^[ \t]*\}/ { kind = ""; next }
		kind == "struct" && line ~ /;/ {
			m = line; sub(/;.*/, "", m); gsub(/\[[^]]*\]/, "", m)
			if (match(m, /\([ \t]*\*[ \t]*[A-Za-z_][A-Za-z0-9_]*[ \t]*\)/)) # a function pointer
				m = substr(m, RSTART, RLENGTH)
			match(m, /[A-Za-z_][A-Za-z0-9_]*[^A-Za-z0-9_]*$/)
			name = substr(m, RSTART); sub(/[^A-Za-z0-9_].*/, "", name)
			printf "\tprintf(\"%s.%s offset %%zu size %%zu\\n\", offsetof(%s, %s), sizeof(((%s *)0)->%s));\n",
				type, name, type, name, type, name
			next
		}
		kind == "enum" && match(line, /^[ \t]*[A-Z_][A-Z0-9_]*/) {
			name = substr(line, RSTART, RLENGTH); gsub(/[ \t]/, "", name)
			printf "\tprintf(\"%s %s = %%lld\\n\", (long long)%s);\n", type, name, name
			next
		}
		# object-like number macros; the version macros change by design
		kind == "" && match(line, /^#[ \t]*define[ \t]+CAFS_[A-Z0-9_]+[ \t]+[^ \t"]/) {
			name = line; sub(/^#[ \t]*define[ \t]+/, "", name); sub(/[ \t].*/, "", name)
			if (name !~ /^CAFS_VERSION_/)
				printf "\tprintf(\"define %s = %%lld\\n\", (long long)(%s));\n", name, name
		}
	' $(ls "$inc"/cafs/*.h | sort)
	echo '	return 0;'
	echo '}'
} >"$tmp/layout.c"

# every struct or enum the headers define is measured (one the awk did not
# recognize would silently drop out of the comparison)
defined=$(cat "$inc"/cafs/*.h | grep -cE '(struct|enum)[[:space:]]+cafs_[a-z0-9_]+[[:space:]]*\{' || true)
measured=$(grep -cF '", sizeof(' "$tmp/layout.c" || true)
if [ "$defined" != "$measured" ]; then
	echo "layout.sh: the headers define $defined structs and enums, the program measures $measured" >&2
	exit 1
fi
"$cc" -std=c11 -Wall -Werror -I"$inc" "$tmp/layout.c" -o "$tmp/layout"
echo "# libcafs public layout, tests/abi/layout.sh; machine $(uname -m)"
"$tmp/layout"
