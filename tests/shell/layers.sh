#!/bin/bash
# layers.sh - the include map keeps the house's shape (docs/design.md,
# "Layers"):
#  - core/ has one folder per layer, in this order, and no loose source;
#  - a file in core/L/ includes "config.h", system headers, and headers of
#    L or of a layer before L, each named with its folder ("base/log.h"):
#    imports only go down, so no two folders include each other; api/, the
#    last, also includes the public headers it implements;
#  - the public headers (core/include/cafs) include only each other;
#  - fs/ includes core/ only through its face, image/fs_face.h (the one
#    list of what the mount uses from the library, each with a reason),
#    besides its own headers, libfuse and system headers;
#  - tools/ includes the public face (cafs/...), fs/ as ../fs/X.h, and of
#    core/'s internal headers only the short list below, each with its
#    reason (a command's work is one core call; the list names what the
#    public face does not serve yet); core/ never includes fs/ or tools/.
# The checker runs on the tree, then on a copy with one upward include
# planted, which it must refuse (a checker that passes everything would
# otherwise pass here too).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

LAYERS="base format chunk catar store net trust image api"

# The internal headers tools/ may include, one a line: HEADER REASON.
TOOLS_ALLOW=$(cat <<'LIST'
base/log.h            the one logger: "cafs: what: why" lines and -v/-q levels, the library's own
base/location.h       operands classified by core's rules (image kind by suffix, URLs redacted in messages)
base/stop_signals.h   the signals that stop a command (interrupt.c)
base/clock.h          the monotonic clock: progress lines' rates and their redraw interval (progress.c)
base/atomic_file.h    stats --textfile: the metrics file replaced whole (temp + rename), never read half-written
base/json_out.h           --json outputs: file names and URLs as JSON strings (escaped, not-UTF-8 bytes shown as U+FFFD)
format/feature.h      the feature flags stat prints (cmd_tree_read.c)
image/image_make.h    make, meta make, sign, digest, a directory's archive stream (list/mtree/stat): one call each; make's options by name (--chunk-size, --with, --compression)
image/image_seed.h    extract (with --seed, --cache) and cache seed: one call each
image/source.h        an image's options for the commands that open one (mount, cache fill, delta), the default cache directory (cache_util.c); --trusted-key's key read (common.c)
image/tree_walk.h     list/mtree/stat/digest of an archive or a directory's stream: one walk each, tools/ prints
image/delta.h         delta make and delta info (static delta packs): one call each
image/store_ops.h     gc, cache stat/fill/prune/verify, the settings check at start-up: one call each
net/caremote.h        the casync front end's pull/push: casync's remote protocol over ssh's pipes
LIST
)

# check_tree ROOT: prints one line per broken rule; fails if any.
check_tree() {
	local root=$1
	(
		cd "$root" || exit 1
		# folders: exactly the layers, plus the public headers
		local dirs want
		dirs=$(find core -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort | tr '\n' ' ')
		want=$(printf '%s\n' $LAYERS include | sort | tr '\n' ' ')
		[ "$dirs" = "$want" ] || echo "core/ folders are '$dirs', want '$want'"
		find core -maxdepth 1 -type f -name '*.[ch]' -printf 'core/%f: a source outside every layer\n'
		awk -v layers="$LAYERS" -v allow="$(printf '%s\n' "$TOOLS_ALLOW" | awk '{ print $1 }' | tr '\n' ' ')" '
			BEGIN {
				n = split(layers, l, " "); for (i = 1; i <= n; i++) rank[l[i]] = i
				n = split(allow, a, " "); for (i = 1; i <= n; i++) allowed[a[i]] = 1
			}
			FNR == 1 {
				split(FILENAME, p, "/")
				if (p[1] == "core" && p[2] == "include") kind = "public"
				else if (p[1] == "core") { kind = "core"; own = p[2] }
				else kind = p[1]
			}
			/^[ \t]*#[ \t]*include[ \t]*"/ {
				match($0, /"[^"]*"/)
				h = substr($0, RSTART + 1, RLENGTH - 2)
				if (h == "config.h") next
				split(h, q, "/")
				if (kind == "public") {
					if (q[1] != "cafs" && index(h, "/") != 0)
						printf "%s:%d: public header includes %s\n", FILENAME, FNR, h
					next
				}
				if (kind == "core") {
					if (own == "api" && q[1] == "cafs") next
					if (index(h, "/") == 0 || !(q[1] in rank)) {
						printf "%s:%d: %s names no layer folder\n", FILENAME, FNR, h
						next
					}
					if (rank[q[1]] > rank[own])
						printf "%s:%d: %s (layer %s) includes %s above it\n", FILENAME, FNR, h, own, q[1]
					next
				}
				# fs/: its own headers and its face, nothing else of core/
				if (kind == "fs") {
					if (index(h, "/") == 0 || h == "image/fs_face.h") next
					printf "%s:%d: %s: fs/ reaches core/ only through image/fs_face.h\n", FILENAME, FNR, h
					next
				}
				# tools/: its own headers, the public face, the internal headers
				# on its list, or fs/
				if (kind == "tools" && (q[1] in rank) && !(h in allowed)) {
					printf "%s:%d: %s is not on the internal headers tools/ may include\n", FILENAME, FNR, h
					next
				}
				if (index(h, "/") == 0 || (q[1] in rank) || q[1] == "cafs") next
				if (kind == "tools" && h ~ /^\.\.\/fs\/[a-z_]+\.h$/) next
				printf "%s:%d: unexpected include %s\n", FILENAME, FNR, h
			}
		' $(find core fs tools -name '*.[ch]' | sort)
	) | tee "$T/broken.$$"
	[ ! -s "$T/broken.$$" ]
}

ok "the tree keeps the layers" check_tree "$top_srcdir"

# The refusal: an upward include (store/ reaching into net/) in a copy.
mkdir -p "$T/copy"
cp -r "$top_srcdir/core" "$top_srcdir/fs" "$top_srcdir/tools" "$T/copy/"
sed -i '0,/^#include "store\/store.h"/s//#include "net\/http.h"\n&/' "$T/copy/core/store/store.c"
refused() { ! check_tree "$T/copy" >"$T/out" 2>&1 && grep -q 'store/store.c:.*includes net' "$T/out"; }
ok "an upward include (store/ -> net/) is refused, by file and line" refused

# A loose file in core/ is refused as well.
rm -rf "$T/copy"/*; cp -r "$top_srcdir/core" "$top_srcdir/fs" "$top_srcdir/tools" "$T/copy/"
echo 'int x;' >"$T/copy/core/loose.c"
refused_loose() { ! check_tree "$T/copy" >"$T/out" 2>&1 && grep -q 'core/loose.c: a source outside' "$T/out"; }
ok "a source outside every layer folder is refused" refused_loose

# fs/ reaching past its face into a core header is refused; the tree above
# (fs/ through image/fs_face.h) is the accepted case.
rm -rf "$T/copy"/*; cp -r "$top_srcdir/core" "$top_srcdir/fs" "$top_srcdir/tools" "$T/copy/"
sed -i '0,/^#include "fs_private.h"/s//#include "store\/store.h"\n&/' "$T/copy/fs/tree.c"
refused_fs() { ! check_tree "$T/copy" >"$T/out" 2>&1 && grep -q 'fs/tree.c:[0-9]*: store/store.h: fs/ reaches core/ only through' "$T/out"; }
ok "fs/ including a core header past its face (fs/tree.c -> store/store.h) is refused" refused_fs

# tools/ reaching past its list: a command including a store internal.
rm -rf "$T/copy"/*; cp -r "$top_srcdir/core" "$top_srcdir/fs" "$top_srcdir/tools" "$T/copy/"
sed -i '0,/^#include "cmd.h"/s//#include "store\/blob.h"\n&/' "$T/copy/tools/cmd_gc.c"
refused_tools() { ! check_tree "$T/copy" >"$T/out" 2>&1 && grep -q 'tools/cmd_gc.c:.*store/blob.h is not on' "$T/out"; }
ok "tools/ including an internal header off its list is refused, by file and line" refused_tools
ok "each internal header tools/ may include has its reason" \
	bash -c '! printf "%s\n" "$1" | awk "NF < 3" | grep .' _ "$TOOLS_ALLOW"

done_testing
