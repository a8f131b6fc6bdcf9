#!/bin/bash
# libcafs.sh - the public library as a third party gets it: a DESTDIR
# install, pkg-config, the example program of docs/ built against the
# installed tree only and run against nginx on 127.0.0.1; only cafs_ names
# exported; every public header compiles alone as C and as C++ with
# warnings as errors; chunk errors reach the caller as their own errnos.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-http.sh"
need cc c++ pkg-config nm make

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
nm -D --defined-only "$so" | awk '{ print $3 }' >"$T/syms"
ok "libcafs exports cafs_ names ($(wc -l <"$T/syms"))" test "$(grep -c '^cafs_' "$T/syms")" -ge 28
ok "... cafs_ctx_add_trusted_key among them" grep -qx cafs_ctx_add_trusted_key "$T/syms"
ok "... and nothing else" bash -c '! grep -v "^cafs_" "$1"' _ "$T/syms"
ok "the soname carries the interface number" bash -c 'objdump -p "$1" | grep -q "SONAME.*libcafs\.so\.[0-9]"' _ "$so"

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
