#!/bin/bash
# libcafs.sh - the public library as a third party gets it: a DESTDIR
# install, pkg-config, the example program of docs/ built against the
# installed tree only and run against nginx on 127.0.0.1; only cafs_ names
# exported; every public header compiles alone as C and as C++ with
# warnings as errors; chunk errors reach the caller as their own errnos.
# The ABI (docs/design.md, "The public ABI"): the exported names, libcafs.sym
# and libcafs.3 name the same functions; the public structs and enums are
# laid out as tests/abi/layout.txt records; each check is also shown to
# refuse a copy with one thing changed. docs/example-make.c makes, reads
# and extracts an image through the installed library.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-http.sh"
need cc c++ pkg-config nm make perl casync

D=$T/dest
W=$T/www
# a make inside make check must not join the outer one's job server
ok "make install DESTDIR=..." env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
	make -s -C "$top_builddir" install DESTDIR="$D"
pcdir=$(dirname "$(find "$D" -name cafs.pc | head -n 1)")
so=$(find "$D" -name 'libcafs.so.*.*' | head -n 1)
inc=$(dirname "$(find "$D" -path '*/cafs/cafs.h' | head -n 1)")
ok "installed: cafs.pc, libcafs.so.N, include/cafs/cafs.h, man page, mount.cafs" \
	test -f "$pcdir/cafs.pc" -a -f "$so" -a -f "$inc/cafs.h" -a -n "$(find "$D" -name cafs.1)" \
	-a -n "$(find "$D" -name mount.cafs)"
pc() { PKG_CONFIG_SYSROOT_DIR=$D PKG_CONFIG_PATH=$pcdir pkg-config "$@"; }
ok "pkg-config --cflags --libs cafs" pc --cflags --libs cafs
ok "pkg-config points into the install" bash -c '[[ "$1" == *"$2"* ]]' _ "$(pc --cflags --libs cafs)" "$D"

# only the public face is exported
nm -D --defined-only "$so" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' >"$T/syms"
ok "libcafs exports cafs_ names ($(wc -l <"$T/syms"))" test "$(grep -c '^cafs_' "$T/syms")" -ge 28
ok "... cafs_ctx_add_trusted_key among them" grep -qx cafs_ctx_add_trusted_key "$T/syms"
ok "... and nothing else" bash -c '! grep -v "^cafs_" "$1"' _ "$T/syms"
ok "the soname carries the interface number" bash -c 'objdump -p "$1" | grep -q "SONAME.*libcafs\.so\.[0-9]"' _ "$so"
ok "... every export carries the symbol version LIBCAFS_1" \
	bash -c '! nm -D --defined-only "$1" | awk "\$2 != \"A\"" | grep -v "@@LIBCAFS_1\$"' _ "$so"

# abi_lists SO SYM PAGE: the library's exports, the names its version
# script lists and the functions the man page's SYNOPSIS declares are one
# list, and the page describes each below its SYNOPSIS. Prints one line per
# kind of difference, "WHERE: NAME...", naming every name missing; fails
# if there is any.
abi_lists() {
	local so=$1 sym=$2 page=$3 d=$T/lists
	local s p y
	s=$(basename "$so") y=$(basename "$sym") p=$(basename "$page")
	mkdir -p "$d"
	nm -D --defined-only "$so" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' | sort -u >"$d/so"
	perl -0pe 's{/\*.*?\*/}{}gs' "$sym" | grep -oE '\<cafs_[a-z0-9_]+\>' | sort -u >"$d/sym"
	awk '/^\.SH/ { syn = ($2 == "SYNOPSIS") } syn' "$page" | grep -oE '\<cafs_[a-z0-9_]+\(' | tr -d '(' |
		sort -u >"$d/page"
	awk '/^\.SH/ { after = after || syn; syn = ($2 == "SYNOPSIS") } after' "$page" >"$d/body"
	while read -r n; do grep -q "\<$n\>" "$d/body" || echo "$n"; done <"$d/page" >"$d/undescribed"
	names() { # WHERE: the names on stdin, if any
		local l
		l=$(tr '\n' ' ')
		[ -z "$l" ] || echo "$1: $l"
	}
	{
		comm -23 "$d/so" "$d/sym" | names "exported by $s, missing from $y"
		comm -13 "$d/so" "$d/sym" | names "in $y, not exported by $s"
		comm -23 "$d/so" "$d/page" | names "exported by $s, missing from the SYNOPSIS of $p"
		comm -13 "$d/so" "$d/page" | names "in the SYNOPSIS of $p, not exported by $s"
		names "in the SYNOPSIS of $p, described nowhere below it" <"$d/undescribed"
	} | tee "$d/missing"
	[ ! -s "$d/missing" ] && [ -s "$d/so" ]
}
man3=$(find "$D" -name libcafs.3 | head -n 1)
ok "exports, libcafs.sym and libcafs.3 name the same $(wc -l <"$T/syms") functions" \
	abi_lists "$so" "$top_srcdir/core/api/libcafs.sym" "$man3"
# the refusals: a page without one name, a version script without another
sed '/cafs_image_ref(/d' "$man3" >"$T/libcafs.3"
refused() { ! abi_lists "$so" "$top_srcdir/core/api/libcafs.sym" "$T/libcafs.3" >"$T/out" 2>&1 && cat "$T/out" &&
	grep -qx 'exported by libcafs.so.*, missing from the SYNOPSIS of libcafs.3: cafs_image_ref ' "$T/out"; }
ok "... a page that lacks cafs_image_ref is refused, naming it" refused
grep -v 'cafs_node_get_image;' "$top_srcdir/core/api/libcafs.sym" >"$T/libcafs.sym"
refused() { ! abi_lists "$so" "$T/libcafs.sym" "$man3" >"$T/out" 2>&1 && cat "$T/out" &&
	grep -qx 'exported by libcafs.so.*, missing from libcafs.sym: cafs_node_get_image ' "$T/out"; }
ok "... a version script that lacks cafs_node_get_image is refused, naming it" refused

# the layout of every public struct and enum is the recorded one
layout=$top_srcdir/tests/abi/layout.txt
incroot=$(dirname "$inc")
if [ "$(uname -m)" = "$(sed -n '1s/.* machine //p' "$layout")" ]; then
	bash "$top_srcdir/tests/abi/layout.sh" "$incroot" >"$T/layout"
	same_layout() {
		diff -u "$layout" "$T/layout" && return
		echo "the public layout changed (above). A member in the middle, a changed type or value breaks the ABI;"
		echo "an appended member or a new struct does not: record it with"
		echo "  tests/abi/layout.sh \$DESTDIR/usr/local/include >tests/abi/layout.txt"
		return 1
	}
	ok "the public structs and enums are laid out as tests/abi/layout.txt records ($(grep -c . "$T/layout") lines)" \
		same_layout
	# the refusal: a member added in the middle of a public struct
	mkdir -p "$T/inc2" && cp -r "$incroot/cafs" "$T/inc2/"
	sed -i 's/^\tsize_t n_stores;/&\n\tint added;/' "$T/inc2/cafs/image.h"
	bash "$top_srcdir/tests/abi/layout.sh" "$T/inc2" >"$T/layout2"
	refused() { ! diff -u "$layout" "$T/layout2" >"$T/out" && cat "$T/out" &&
		grep -q '^+struct cafs_image_options.cache_mode offset 28' "$T/out"; }
	ok "... a member added in the middle of cafs_image_options is refused" refused
else
	skip "the public layout" "tests/abi/layout.txt is for $(sed -n '1s/.* machine //p' "$layout"), not $(uname -m)"
fi

# each public header alone, C and C++, warnings as errors
for h in "$inc"/*.h; do
	n=$(basename "$h")
	printf '#include <cafs/%s>\nint main(void) { return 0; }\n' "$n" >"$T/h.c"
	ok "cafs/$n compiles alone as C11" cc -std=c11 -Wall -Wextra -Wpedantic -Werror $(pc --cflags cafs) \
		-c "$T/h.c" -o "$T/h.o"
	cp "$T/h.c" "$T/h.cc"
	ok "cafs/$n compiles alone as C++11" c++ -std=c++11 -Wall -Wextra -Wpedantic -Werror $(pc --cflags cafs) \
		-c "$T/h.cc" -o "$T/h.o"
done

# the example, from the installed tree only (no -I into the source)
ok "docs/example.c builds against the installed library" cc -std=gnu11 -Wall -Wextra -Werror \
	"$top_srcdir/docs/example.c" $(pc --cflags --libs cafs) -o "$T/example"
example() { LD_LIBRARY_PATH=$(dirname "$so") "$T/example" "$@"; }

# make, read without mounting, extract: the installed library alone
ok "docs/example-make.c builds against the installed library" cc -std=gnu11 -Wall -Wextra -Werror \
	"$top_srcdir/docs/example-make.c" $(pc --cflags --libs cafs) -o "$T/example-make"
mkdir -p "$T/src/d" "$T/made"
gen_data "$T/src/d/data" 300000 3
printf 'hello\n' >"$T/src/hello"
ln -s d/data "$T/src/link"
LD_LIBRARY_PATH=$(dirname "$so") "$T/example-make" "$T/src" "$T/made/x.caidx" d/data "$T/out-dir" >"$T/made/out" 2>"$T/err"
ok "example-make makes, reads and extracts" test $? -eq 0
ok "... its digest is casync's for the tree" bash -c '[ "$(head -n 1 "$1")" = "$(casync digest "$2")" ]' \
	_ "$T/made/out" "$T/src"
ok "... its index is casync make's, byte for byte" bash -c \
	'casync make --store="$1/c.castr" "$1/c.caidx" "$2" >/dev/null && cmp "$1/c.caidx" "$1/x.caidx"' _ "$T/made" "$T/src"
ok "... the file it read is the file" bash -c 'tail -n +2 "$1" | cmp - "$2"' _ "$T/made/out" "$T/src/d/data"
ok "... the tree it extracted is the tree" diff -r --no-dereference "$T/src" "$T/out-dir"
fails "... a name the image lacks fails" env LD_LIBRARY_PATH="$(dirname "$so")" "$T/example-make" "$T/src" \
	"$T/made/y.caidx" nope "$T/out-dir2"

# an archive served by nginx
mkdir -p "$T/tree/etc/sub" "$W"
printf 'NAME=cafs\nID=test\n' >"$T/tree/etc/os-release"
gen_data "$T/tree/etc/big" 400000 7
ln -s os-release "$T/tree/etc/link"
"$CAFS" make -q --chunk-size 4096 "$W/x.caidx" "$T/tree" >/dev/null || exit 1
nginx_start "$W"

example "$NGINX_URL/x.caidx" etc etc/os-release >"$T/out" 2>"$T/err"
ok "the example lists a remote directory and prints a file" test $? -eq 0
ok "... the listing names every entry" bash -c 'diff <(awk "NR > 1 { print \$4 }" "$1" | sed -n "1,4p") <(printf "big\nlink\nos-release\nsub\n")' _ "$T/out"
ok "... the symlink and the directory show as such" bash -c 'grep -q "^l .* link$" "$1" && grep -q "^d .* sub$" "$1"' _ "$T/out"
ok "... the file's bytes" bash -c 'tail -n 2 "$1" | cmp - "$2"' _ "$T/out" "$T/tree/etc/os-release"
ok "... fetched only some chunks" test "$(nginx_log | grep -c cacnk)" -lt "$(find "$W/default.castr" -name '*.cacnk' | wc -l)"
example "$NGINX_URL/x.caidx" etc etc/big >"$T/out" 2>"$T/err"
ok "a larger file reads whole" bash -c 'tail -c 400000 "$1" | cmp - "$2"' _ "$T/out" "$T/tree/etc/big"

# errors come back as errnos, and the messages through the log function
fails "a missing index fails" example "$NGINX_URL/nope.caidx" etc etc/os-release
ok "... its message comes through the context's log function" \
	bash -c 'example() { LD_LIBRARY_PATH="$1" "$2" "$3" etc etc/os-release; }; example "$@" 2>&1 | grep -q "^example: .*nope.caidx: not found on the server"' \
	_ "$(dirname "$so")" "$T/example" "$NGINX_URL/nope.caidx"
fails "a missing name fails" example "$NGINX_URL/x.caidx" etc etc/nope
ok "... as no such file" bash -c 'LD_LIBRARY_PATH="$1" "$2" "$3" etc etc/nope 2>&1 | grep -q "etc/nope: No such file or directory"' \
	_ "$(dirname "$so")" "$T/example" "$NGINX_URL/x.caidx"
# take away a chunk of big's payload (not its metadata): the read, not the lookup, fails
cp -a "$W/default.castr" "$T/saved.castr"
"$CAFS" list "$W/x.caidx" >/dev/null
for c in $(find "$W/default.castr" -name '*.cacnk' | sort); do
	mv "$c" "$c.away"
	if LD_LIBRARY_PATH=$(dirname "$so") "$T/example" "$NGINX_URL/x.caidx" etc etc/os-release >/dev/null 2>&1 &&
		! LD_LIBRARY_PATH=$(dirname "$so") "$T/example" "$NGINX_URL/x.caidx" etc etc/big >/dev/null 2>&1; then
		break
	fi
	mv "$c.away" "$c"
done
example "$NGINX_URL/x.caidx" etc etc/big >/dev/null 2>"$T/err"
ok "a chunk missing from the store is CAFS_ECHUNKMISSING, not a missing name" \
	grep -q "the store lacks a chunk" "$T/err"
ok "... and the library said which chunk" grep -q "chunk [0-9a-f]\{64\}: not found in any store" "$T/err"
done_testing
