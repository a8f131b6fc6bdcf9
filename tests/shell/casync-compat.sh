#!/bin/bash
# casync-compat.sh - cafs invoked as `casync` (a symlink named casync to
# $CAFS) is a drop-in for casync's command line: a table of casync command
# lines runs once with the real casync and once with cafs-as-casync, each
# in its own copy of one fixture directory, and must give the same exit
# code, the same stdout and the same files (diff -r of the two directories,
# and their file types, modes and sizes: indexes, stores, extracted trees).
#
# Where outputs legitimately differ, the case compares less and says why
# (see also docs/cafs.1, CASYNC COMPATIBILITY):
#  - stderr: never compared (cafs's messages are "cafs: <what>: <why>");
#  - gc: cafs prints its own summary line, so only the store is compared;
#  - make -c: casync's encoder cache (and no digest printed with it);
#  - extract of a missing input: casync makes OUT before failing;
#  - extract into an existing blob without --seed-output=no: casync 2
#    fails there ("Stale file handle"), cafs uses it as a seed and succeeds;
#  - stat of a directory: casync's encoder adds the project id;
#  - list --recursive=no of a directory: casync 2 fails half-way, cafs lists;
#  - extract to stdout: casync 2 refuses a pipe and leaves a file opened
#    with >> untouched; cafs writes to both (checked on their own);
#  - make of an index to stdout: casync appends the digest line to the
#    index, cafs writes the index alone (checked on its own);
#  - --version: "casync 2 (cafs VERSION)".
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
need casync
export TZ=UTC

mkdir -p "$T/bin" && ln -s "$CAFS" "$T/bin/casync"
REAL=$(command -v casync)
FAKE=$T/bin/casync
[ "$("$FAKE" --version | cut -d' ' -f1-2)" = "casync 2" ] || { echo "Bail out! $FAKE does not answer as casync"; exit 1; }

# ---- the fixture: a tree, a blob, and what real casync made of them ----
FX=$T/fx
mkdir -p "$FX/tree/sub/deep" "$FX/empty.castr"
gen_data "$FX/tree/a" 300000 1
gen_data "$FX/tree/sub/b" 50000 2 text
gen_data "$FX/tree/sub/deep/z" 200000 3 zeros
# larger than a job of extract's workers, ending in a hole: its size is set at the end
gen_data "$T/t1" 300000 7 && gen_data "$T/t2" 10000 8 zeros && cat "$T/t1" "$T/t2" >"$FX/tree/sub/tail"
: >"$FX/tree/empty"
ln -s ../a "$FX/tree/sub/link"
chmod 0750 "$FX/tree/sub/deep"
gen_data "$FX/blob.img" 1500000 4 mixed
# an older version of the blob: the seed RAUC would pass
cp "$FX/blob.img" "$FX/seed.img"
printf 'changed' | dd of="$FX/seed.img" bs=1 seek=700000 conv=notrunc status=none
# a blob that ends in zeros: a skipped zero chunk at the end of a file on
# stdout must still be written (or the file sized)
gen_data "$T/z1" 300000 5 mixed && gen_data "$T/z2" 700000 6 zeros && cat "$T/z1" "$T/z2" >"$FX/zeros.img"
(cd "$FX" && "$REAL" make zeros.caibx zeros.img && "$REAL" make img.caidx tree && "$REAL" make blob.caibx blob.img && "$REAL" make tree.catar tree &&
	"$REAL" make --store=other.castr old.caibx seed.img) >/dev/null ||
	{ echo "Bail out! casync could not make the fixture"; exit 1; }
# blob.caibx's chunks only, in a store of its own (for --extra-store)
mkdir -p "$FX/blobonly" && cp "$FX/blob.caibx" "$FX/blobonly/" &&
	(cd "$FX/blobonly" && "$REAL" extract blob.caibx /dev/null --store=../default.castr >/dev/null 2>&1 || true)

# run WHICH SNIPPET: in a fresh copy of the fixture ($T/w.WHICH), run
# SNIPPET with $C the casync under test; its stdout in $T/out.WHICH, exit
# code in $T/rc.WHICH.
run() {
	local which=$1 snippet=$2 bin
	[ "$which" = real ] && bin=$REAL || bin=$FAKE
	rm -rf "$T/w.$which"
	cp -a "$FX" "$T/w.$which"
	local rc=0
	(cd "$T/w.$which" && C=$bin && eval "$snippet") >"$T/out.$which" 2>"$T/err.$which" </dev/null || rc=$?
	echo "$rc" >"$T/rc.$which"
}

# what files a work dir holds: type, mode, size per path (the work dirs'
# own mtimes change as they are written to: not listed)
tree_of() { (cd "$1" && find . -mindepth 1 -printf '%p %y %m %s %l\n' | sort); }

# same WHAT SNIPPET: WHAT is "all" (exit code, stdout, files) or "files"
# (exit code and files)
same() {
	local what=$1 snippet=$2 bad=0 pid
	# the two sides at once: each in its own copy of the fixture, with its
	# own output files (a snippet names only paths inside its work dir)
	run real "$snippet" &
	pid=$!
	run fake "$snippet"
	wait "$pid"
	if ! cmp -s "$T/rc.real" "$T/rc.fake"; then
		echo "exit: casync $(cat "$T/rc.real"), cafs $(cat "$T/rc.fake")"
		bad=1
	fi
	if [ "$what" = all ] && ! cmp -s "$T/out.real" "$T/out.fake"; then
		echo "stdout differs:"
		diff -u "$T/out.real" "$T/out.fake" | head -n 20
		bad=1
	fi
	if ! diff -r --no-dereference "$T/w.real" "$T/w.fake" >"$T/diff" 2>&1; then
		echo "files differ:"
		head -n 20 "$T/diff"
		bad=1
	fi
	if ! diff -u <(tree_of "$T/w.real") <(tree_of "$T/w.fake") >"$T/diff"; then
		echo "types, modes or sizes differ:"
		head -n 20 "$T/diff"
		bad=1
	fi
	if [ "$bad" = 1 ]; then
		echo "casync stderr:"; head -n 5 "$T/err.real"
		echo "cafs stderr:"; head -n 5 "$T/err.fake"
	fi
	return $bad
}

# compat SNIPPET [all|files]: one line of the table
compat() { ok "casync ${1//\$C /}" same "${2:-all}" "$1"; }

# ---- make ----
compat '$C make x.caidx tree'
compat '$C make --store=s.castr x.caidx tree'
compat '$C make x.catar tree'
compat '$C make b.caibx blob.img'
compat '$C --chunk-size=32K make y.caibx blob.img'
compat '$C make y.caidx tree --digest=sha256'
compat '$C make --chunk-size=16K:64K:256K --digest=sha512-256 y.caidx tree'
compat '$C make --with=unix u.caidx tree'
compat '$C --without=user-names make u.caidx tree'
compat '$C make --with=best --without=fat-attrs --without=privileged u.caidx tree'
compat '$C make --without=all u.catar tree'
compat '$C make --with=fuse u.caidx tree'
compat '$C make --with=2sec-time --with=permissions --with=symlinks u.catar tree'
compat '$C make --exclude-nodump=no --exclude-submounts=yes --exclude-file=no u.caidx tree'
compat '$C make --compression=zstd --rate-limit-bps=1000 u.caidx tree'
# xz and gzip chunks: casync's encoder settings, so the stores are byte-identical
compat '$C make --compression=xz x.caibx blob.img'
compat '$C --compression=gzip make x.caibx blob.img'
compat '$C make --compression=xz --store=s.castr x.caidx tree && $C extract --store=s.castr x.caidx out'
compat '$C make --compression=gzip x.caidx tree && $C list x.caidx'
compat '$C make --compression=default x.caibx blob.img'
compat '$C make --compression=lz4 x.caibx blob.img'
# -c: casync writes its encoder cache (tree/.cacac) there, and prints no
# digest when it uses it; cafs keeps its make cache out of the tree
# (~/.cache/cafs/make, tree-make-cache.sh)
export XDG_CACHE_HOME=$T/xdg # not the user's own
compat '$C make -c u.caidx tree && rm -rf tree/.cacac' files
compat '$C make --what=archive-index u.caidx tree'
compat 'cd tree && $C make ../d.caidx'                # INPUT defaults to .
compat 'cd tree && $C make ../d.catar'
compat '$C make x.txt tree'                           # bad suffix: exit 1
compat '$C make x.caidx no-such-dir'

# ---- extract ----
compat '$C extract img.caidx out'
compat '$C extract tree.catar out'
compat '$C extract blob.caibx out.img'
compat '$C extract img.caidx out sub'
compat '$C extract img.caidx out sub/deep/'
compat '$C extract tree.catar out/x/ ./sub'
compat 'mkdir o && cd o && $C extract ../img.caidx'    # OUT defaults to .
compat '$C extract --store=default.castr img.caidx out'
compat '$C extract img.caidx out --store=default.castr'
compat '$C extract --store=empty.castr --extra-store=default.castr blob.caibx e.img'
compat '$C extract --punch-holes=no --reflink=no --delete=no --undo-immutable=no img.caidx out'
# into a directory that has more than the archive: removed by default, kept with --delete=no
compat 'mkdir -p out/more && echo x >out/extra && $C extract img.caidx out'
compat 'mkdir -p out/more && echo x >out/extra && $C extract --delete=no img.caidx out'
compat 'mkdir -p out/more && echo x >out/extra && $C extract tree.catar out --delete=no'
compat '$C extract --hardlink=yes --seed=seed.img blob.caibx h.img'
# --hardlink=yes: a file a seed directory has with the same contents and
# metadata becomes a hard link to it; a different mtime, mode or byte, or
# no --hardlink, and it is written
linked() { for f in a empty sub/b sub/deep/z; do [ out/$f -ef "$1/$f" ] && echo "$f linked"; done; true; }
compat '$C extract --hardlink=yes --seed=tree img.caidx out && linked tree'
compat 'cp -a tree old && $C extract --hardlink=yes --seed old --seed-output=no img.caidx out && linked old'
compat 'cp -a tree old && touch -d @0 old/a && chmod 600 old/sub/b && $C extract --hardlink=yes --seed=old img.caidx out && linked old'
compat 'cp -a tree old && printf X | dd of=old/a conv=notrunc status=none && touch -r tree/a old/a && $C extract --hardlink=yes --seed=old img.caidx out && linked old'
compat '$C extract --seed=tree img.caidx out && linked tree'
compat '$C extract --hardlink=yes --seed=tree img.caidx out sub && for f in b deep/z; do [ out/sub/$f -ef tree/sub/$f ] && echo $f; done; true'
compat 'mkdir -p out && cp tree/a out/a && $C extract --hardlink=yes --seed=tree img.caidx out && linked tree'
compat '$C extract --seed=old.caibx --store=default.castr --extra-store=other.castr blob.caibx h.img'
# the output as a seed (--seed-output=yes, the default): casync 2 fails
# ("Stale file handle") where cafs extracts; cafs-only check at the end
compat 'cp seed.img d.img && $C extract --seed-output=no blob.caibx d.img'
# RAUC: casync extract [--seed SEED] [--store STORE] --seed-output=no IMAGE DEST|-
compat '$C extract --seed seed.img --store default.castr --seed-output=no blob.caibx dest.img'
compat '$C extract --seed seed.img --store default.castr --seed-output=no blob.caibx - >dest.img'
compat '$C extract --store default.castr --seed-output=no blob.caibx - >dest.img'
compat '$C extract blob.caibx >dest.img'               # OUT defaults to stdout for a blob
# ... and to a directory (an archive index; the seed the slot's old tree)
compat '$C extract --seed tree --store default.castr --seed-output=no img.caidx dest'
compat 'mkdir -p dest/old && echo x >dest/a && $C extract --seed tree --store default.castr --seed-output=no img.caidx dest'
compat 'cp -a tree old && echo changed >old/sub/b && $C extract --seed old --seed-output=no img.caidx dest'
# stdout a regular file: wherever a sequential writer would put the blob
compat '$C extract zeros.caibx - >dest.img'
compat '{ echo header; $C extract zeros.caibx -; echo trailer; } >dest.img'
compat 'cp seed.img dest.img && $C extract --seed-output=no zeros.caibx - 1<>dest.img'
# casync 2 leaves a file opened with >> as it was, and refuses a pipe:
# cafs appends, and writes to the pipe (cafs-only checks at the end)
# a missing input: casync has made OUT before it fails, cafs makes nothing
compat '$C extract no-such.caidx out; r=$?; rmdir out; exit $r'
compat '$C extract img.txt out'

# ---- list, mtree, stat, digest ----
compat '$C list img.caidx'
compat '$C list tree.catar'
compat '$C list tree'
compat 'cd tree && $C list'
compat '$C list img.caidx sub'
compat '$C list --store=default.castr img.caidx'
compat '$C -v list img.caidx'
compat '$C list --what=directory tree'
compat '$C list --what=archive-index img.caidx'
compat '$C list --with=unix tree'
compat '$C list --recursive=no img.caidx'
compat '$C list --recursive=no tree.catar sub'
# (of a directory, casync 2 fails: "Failed to seek to next sibling")
compat '$C --recursive=no list tree; exit 0' files
compat '$C mtree --recursive=no img.caidx'
compat '$C mtree img.caidx'
compat '$C mtree tree.catar'
compat '$C mtree tree'
compat 'cd tree && $C mtree'
compat '$C mtree img.caidx sub'
compat '$C mtree --without=user-names tree'
compat '$C digest img.caidx'
compat '$C digest blob.caibx'
compat '$C digest blob.img'
compat '$C digest tree.catar'
compat '$C digest tree'
compat 'cd tree && $C digest'
compat '$C digest --digest=sha256 blob.img'
compat '$C stat tree.catar'
compat '$C stat img.caidx'
# of a directory, casync's encoder adds the filesystem's project id; cafs
# stats the archive it makes of the tree, where a zero id has no record
compat 'set -o pipefail; $C stat tree | grep -v "^  ProjID: 0$"'
compat '$C stat tree.catar a'
compat '$C stat img.caidx sub/link'
compat '$C stat img.caidx sub/deep/z'
compat '$C stat tree.catar no-such'
compat '$C stat tree.catar sub'

# ---- --what=, standard input and output, $CASYNC_STORE ----
compat '$C make --what=archive-index x.bin tree'
compat '$C make --what=archive x.bin tree'
compat '$C make --what=blob-index --store=s.castr x.bin blob.img'
compat '$C make --what=blob x.caidx tree'
compat '$C make --what=archive x.catar blob.img'
compat '$C make --what=blob-index x.caibx tree'
compat '$C make - tree >x.catar'
compat 'cd tree && $C make --what=archive >../x.catar'
# an index on stdout: casync appends the digest line to it (cafs-only check below)
compat '$C make - <blob.img >/dev/null' files
compat '$C make --what=archive-index --store=s.castr - tree >/dev/null' files
compat 'CASYNC_STORE=s.castr $C make x.caibx blob.img'
compat 'CASYNC_STORE=default.castr $C extract --store=empty.castr blob.caibx e.img'
compat 'CASYNC_STORE=other.castr $C extract blob.caibx e.img'
compat '$C extract --extra-store=empty.castr blob.caibx e.img'
compat 'cp img.caidx img.bin && $C extract --what=archive-index img.bin out'
compat 'cp tree.catar t.bin && $C extract --what=archive t.bin out sub'
compat '$C extract --what=blob-index - out.img <blob.caibx'
compat 'cat tree.catar | $C extract --what=archive - out'
compat 'cat blob.caibx | $C extract --what=blob-index - >out.img'
compat 'mkdir out && $C extract - out <img.caidx'
compat '$C extract <blob.caibx >out.img'
compat '$C extract - out <tree.catar'
compat '$C extract --what=blob img.caidx out'
compat '$C extract --what=archive img.caidx out; r=$?; rmdir out; exit $r'
compat '$C extract --what=blob-index img.caidx out'
compat '$C list - <tree.catar'
compat 'cat tree.catar | $C list -'
compat '$C list --what=archive-index - <img.caidx'
compat '$C list --what=archive-index - <img.caidx sub'
compat 'cp tree.catar t.bin && $C list --what=archive t.bin'
compat '$C list blob.img'
compat '$C list blob.caibx'
compat '$C list --what=archive img.caidx'
compat '$C mtree --what=archive - <tree.catar'
compat '$C mtree --digest=sha256 img.caidx'
compat '$C mtree --digest=sha256 tree'
compat '$C make --digest=sha256 s.caidx tree >/dev/null && $C mtree s.caidx sub'
compat '$C stat - <tree.catar'
compat '$C stat --what=archive-index - sub/b <img.caidx'
compat '$C digest - <tree.catar'
compat '$C digest - <blob.img'
compat '$C digest --what=blob tree.catar'
compat '$C digest --what=blob-index - <blob.caibx'
compat '$C digest --what=directory tree'
compat '$C digest --what=archive tree'
compat '$C digest tree.catar sub'
compat '$C digest img.caidx sub/b'
compat '$C digest img.caidx /'
compat '$C digest img.caidx no-such'
compat '$C digest blob.caibx sub'

# ---- owners shifted (--uid-shift, --uid-range), the rate limit, mount's --mkdir ----
compat 'chown -R 100000:100000 tree && chown 100005:100007 tree/a && $C make --uid-shift=100000 u.caidx tree && $C mtree u.caidx'
compat 'chown -R 100000:100000 tree && $C make --uid-shift=100000 --uid-range=65536 u.catar tree && $C mtree u.catar && $C stat u.catar a'
compat 'chown 5:5 tree/a && $C make --uid-shift=100 u.caidx tree'
compat 'chown 70000:70000 tree/a && $C make --uid-range=65536 u.catar tree && $C mtree u.catar'
compat '$C make --uid-shift=maybe u.caidx tree'
compat '$C extract --uid-shift=200000 img.caidx out && find out -printf "%p %U %G\n" | sort'
compat '$C extract --uid-shift=7 --uid-range=10 tree.catar out && find out -printf "%p %U %G\n" | sort'
compat '$C extract --uid-shift=yes img.caidx out && find out -printf "%p %U %G\n" | sort'
compat '$C extract --uid-range=0 img.caidx out'
# immutable files in the way (chattr +i): refused, or cleared with --undo-immutable
# (casync leaves its temporary file behind there: removed before comparing)
compat '$C extract img.caidx out && chattr +i out/a && $C extract img.caidx out; r=$?; lsattr out/a | cut -c1-20; chattr -i out/a; rm -f out/.#*; exit $r'
compat '$C extract img.caidx out && chattr +i out/a && $C extract --undo-immutable=yes img.caidx out; r=$?; lsattr out/a | cut -c1-20; chattr -i out/a; exit $r'
compat 'mkdir -p out/extra && touch out/extra/x && chattr +i out/extra/x && $C extract img.caidx out; r=$?; chattr -i out/extra/x; exit $r'
compat 'mkdir -p out/extra && touch out/extra/x && chattr +i out/extra/x && $C extract --undo-immutable=yes img.caidx out; r=$?; chattr -i out/extra/x 2>/dev/null; exit $r'
compat '$C extract --undo-immutable=maybe img.caidx out'
# zero blocks: holes by default (casync punches them), written with --punch-holes=no
compat '$C extract img.caidx out && stat -c "%n %s %b" out/sub/deep/z'
compat '$C extract --punch-holes=no img.caidx out && stat -c "%n %s %b" out/sub/deep/z'
compat '$C extract img.caidx out && stat -c "%n %s" out/sub/tail out/a && cmp tree/sub/tail out/sub/tail'
compat '$C extract zeros.caibx o.img && [ $(($(stat -c %b o.img) * 512)) -lt 700000 ] && echo sparse'
compat '$C extract --punch-holes=no zeros.caibx o.img && stat -c "%s %b" o.img'
compat '$C extract --punch-holes=no tree.catar out sub && stat -c "%n %s %b" out/sub/deep/z'
compat '$C extract --rate-limit-bps=1M img.caidx out'
compat '$C extract --rate-limit-bps=0 img.caidx out'

# ---- gc: the store is compared; the summary line is cafs's own ----
compat '$C gc -n img.caidx' files
compat '$C -n gc img.caidx blob.caibx' files
compat '$C gc img.caidx' files
compat '$C gc --store=default.castr blob.caibx' files
compat '$C gc' files

# ---- the command line itself ----
compat '$C frobnicate'
compat '$C --frobnicate list img.caidx'
compat '$C'
compat '$C --what=blob list img.caidx'
compat '$C --exclude-nodump=maybe make x.caidx tree'
compat '$C -l debug digest tree'
compat '$C --log-level=err digest tree'
compat '$C --uid-shift=0 list img.caidx'
compat '$C --mkdir=no --recursive=yes list img.caidx'

# cafs-only: what has no casync counterpart to compare with
ok "extract into an existing blob, itself a seed" bash -c 'cd "$1" && cp seed.img d.img && "$2" extract blob.caibx d.img && cmp d.img blob.img' _ "$FX" "$FAKE"
ok "extract - >>FILE appends" bash -c 'cd "$1" && cp seed.img d.img && "$2" extract zeros.caibx - >>d.img && cat seed.img zeros.img | cmp - d.img' _ "$FX" "$FAKE"
ok "extract - | a pipe" bash -c 'cd "$1" && "$2" extract zeros.caibx - | cmp - zeros.img' _ "$FX" "$FAKE"
# an index on stdout is the index alone: casync appends its digest line
# (which casync digest then refuses)
ok "make - <blob >stdout: casync's bytes but its digest line" bash -c 'cd "$1" && "$2" make - <blob.img >"$4/i.real" && "$3" make - <blob.img >"$4/i.fake" && head -c -65 "$4/i.real" | cmp - "$4/i.fake"' _ "$FX" "$REAL" "$FAKE" "$T"
ok "mount --mkdir=no: a missing mount point is not made" bash -c 'cd "$1" && ! "$2" --mkdir=no mount img.caidx "$3/nomnt" 2>/dev/null && [ ! -e "$3/nomnt" ]' _ "$FX" "$FAKE" "$T"
ok "mkdev: one line, exit 1" bash -c '! "$1" mkdev blob.caibx 2>"$2/err" && [ "$(wc -l <"$2/err")" = 1 ]' _ "$FAKE" "$T"
ok "--help on stdout, exit 0" bash -c '"$1" --help | grep -q "casync \[OPTIONS...\] extract"' _ "$FAKE"
ok "cafs: casync's options before the command" bash -c 'cd "$1" && "$2" -v --store=default.castr --digest=sha512-256 list img.caidx | cmp - <(casync list img.caidx)' _ "$FX" "$CAFS"
ok "make --compression=xz|gzip: casync extracts what cafs made" bash -c 'cd "$1" && for c in xz gzip; do "$2" --compression=$c --store=$c.castr make $c.caibx blob.img >/dev/null && "$3" --store=$c.castr extract $c.caibx $c.img && cmp $c.img blob.img || exit 1; done' _ "$T/w.fake" "$FAKE" "$REAL"
# every option of casync --help (each --with=/--without= name too), with a
# valid value: the same exit code and standard output as casync's
every_option() {
	local o rc bad=0
	local -a opts=(-lerr --log-level=info -v --verbose -n --dry-run --store=x.castr --extra-store=x.castr
		--chunk-size=64K --digest=sha256 --compression=xz --seed=blob.img --cache=c --cache-auto -c
		--rate-limit-bps=1M --exclude-nodump=no --exclude-submounts=yes --exclude-file=no --reflink=no
		--hardlink=yes --punch-holes=no --delete=no --undo-immutable=yes --seed-output=no --recursive=no
		--mkdir=no --uid-shift=0 --uid-range=65536 --what=blob)
	for o in $("$REAL" --help | grep -oE -- '--with=[a-z0-9-]+' | sort -u); do
		opts+=("$o" "--without=${o#--with=}")
	done
	[ ${#opts[@]} -gt 100 ] || { echo "only ${#opts[@]} options found"; return 1; }
	cd "$T/w.fake" || return 1
	for o in "${opts[@]}"; do
		"$REAL" "$o" digest blob.img >"$T/o.real" 2>/dev/null; rc=$?
		"$FAKE" "$o" digest blob.img >"$T/o.fake" 2>/dev/null
		if [ $? != $rc ] || ! cmp -s "$T/o.real" "$T/o.fake"; then echo "$o differs"; bad=1; fi
	done
	return $bad
}
ok "every option of casync --help parses as casync's" every_option
ok "cafs: -l after list is still --long" bash -c 'cd "$1" && "$2" -v list img.caidx -l | grep -q "^-rw"' _ "$FX" "$CAFS"

# a block device as DEST, and as stdout (RAUC writes a slot either way):
# the device's bytes after casync and after cafs-as-casync; stale 0xff
# where the blob has zeros shows that zeros are written
dev_case() {
	local which=$1 snippet=$2 bin
	[ "$which" = real ] && bin=$REAL || bin=$FAKE
	head -c 2097152 /dev/zero | tr '\0' '\377' | dd of="$LOOP" bs=1M conv=fsync status=none
	(cd "$FX" && C=$bin && BLK=$T/blk && eval "$snippet") >/dev/null 2>"$T/err.$which" || return 1
	head -c "$(stat -c %s "$FX/zeros.img")" "$LOOP" >"$T/dev.$which"
}
dev_same() {
	dev_case real "$1" || { echo "casync failed:"; cat "$T/err.real"; return 1; }
	dev_case fake "$1" || { echo "cafs failed:"; cat "$T/err.fake"; return 1; }
	cmp "$T/dev.real" "$T/dev.fake" && cmp "$T/dev.fake" "$FX/zeros.img"
}
if [ "$(id -u)" -eq 0 ] && command -v losetup >/dev/null && head -c 2097152 /dev/zero >"$T/disk" &&
	LOOP=$(losetup -f --show "$T/disk" 2>/dev/null); then
	at_cleanup "losetup -d $LOOP"
	mm=$(stat -c '%t %T' "$LOOP")
	mknod "$T/blk" b $((0x${mm% *})) $((0x${mm#* }))
	ok "casync extract --seed seed.img --store default.castr --seed-output=no zeros.caibx BLOCKDEV" \
		dev_same '$C extract --seed seed.img --store default.castr --seed-output=no zeros.caibx "$BLK"'
	ok "casync extract --seed seed.img --store default.castr --seed-output=no zeros.caibx - >BLOCKDEV" \
		dev_same '$C extract --seed seed.img --store default.castr --seed-output=no zeros.caibx - >"$BLK"'
	ok "casync extract zeros.caibx BLOCKDEV (the device is a seed too)" dev_same '$C extract zeros.caibx "$BLK"'
fi

# mount: casync's stays in the foreground until unmounted; the tree it
# shows is the one made (casync 2's own mount is not run: FUSE 2); a
# missing mount point is made (--mkdir=yes, casync's default)
# env_store S CMD...: CMD with $CASYNC_STORE=S
env_store() { local CASYNC_STORE=$1; export CASYNC_STORE; shift; "$@"; }
# mount_check [ARGS...]: casync mount ARGS MNT (default ARGS: img.caidx),
# standard input from $MOUNT_STDIN (default /dev/null)
mount_check() {
	local mnt=$T/mnt pid rc=0 i
	rmdir "$mnt" 2>/dev/null
	[ $# -gt 0 ] || set -- img.caidx
	(cd "$FX" && exec "$FAKE" mount "$@" "$mnt") 2>"$T/mount.err" <"${MOUNT_STDIN:-/dev/null}" &
	pid=$!
	at_cleanup "fusermount3 -u -z '$mnt'; kill $pid"
	for ((i = 0; i < 200; i++)); do
		awk -v d="$mnt" '$5 == d { f = 1 } END { exit !f }' /proc/self/mountinfo && break
		kill -0 "$pid" 2>/dev/null || { echo "mount exited:"; cat "$T/mount.err"; return 1; }
		sleep 0.05
	done
	diff -r --no-dereference "$FX/tree" "$mnt" || rc=1
	kill -0 "$pid" 2>/dev/null || { echo "not in the foreground"; rc=1; }
	fusermount3 -u "$mnt" || rc=1
	wait "$pid" || { echo "mount exited $?"; cat "$T/mount.err"; rc=1; }
	return $rc
}
if [ -c /dev/fuse ] && [ -w /dev/fuse ] && command -v fusermount3 >/dev/null && grep -qw fuse /proc/filesystems; then
	ok "mount img.caidx MNT: in the foreground, the tree" mount_check
	cp "$FX/img.caidx" "$FX/img.bin"
	ok "mount --what=archive-index img.bin MNT" mount_check --what=archive-index img.bin
	# standard input: an index with $CASYNC_STORE, an archive
	mount_stdin() { local f=$1; shift; MOUNT_STDIN=$f mount_check "$@"; }
	ok "CASYNC_STORE=S mount --what=archive-index - MNT <img.caidx" \
		env_store "$FX/default.castr" mount_stdin "$FX/img.caidx" --what=archive-index -
	ok "mount - MNT <tree.catar" mount_stdin "$FX/tree.catar" -
fi

# ---- issue 21: casync's own test script's findings, and its smaller ones ----
# extract of a .catar with --seed: no chunks to take, but the seed's
# identical files hard-linked (--hardlink=yes), directory times kept
compat '$C extract tree.catar s && $C extract tree.catar --seed=s --hardlink=yes out && stat -c "%h %n" out/a out/sub/b && $C mtree out'
compat '$C extract tree.catar s && $C extract tree.catar --seed=s --hardlink=no out && stat -c "%h %n" out/a out/sub/b && $C mtree out'
compat '$C extract img.caidx s && $C extract img.caidx --seed=s --hardlink=yes out && stat -c "%h %n" out/a && $C mtree out'
# no destination: an empty current directory is extracted into, as casync
compat 'mkdir e && cd e && $C extract ../tree.catar && cd .. && $C mtree e'
compat 'mkdir e && cd e && $C extract ../img.caidx --store=../default.castr && cd .. && $C mtree e'
# a non-empty one only when named: casync's --delete=yes would empty it
# (cafs(1), CASYNC COMPATIBILITY)
ok "extract with no destination refuses a non-empty current directory, and leaves it be" bash -c '
	mkdir -p "$1/ws" && cd "$1/ws" && echo work >mine && ! "$2" extract "$3/tree.catar" 2>"$1/refuse.err" &&
	[ "$(cat mine)" = work ] && [ "$(ls)" = mine ] && [ "$(wc -l <"$1/refuse.err")" = 1 ] &&
	grep -q "current directory is not empty" "$1/refuse.err"' _ "$T" "$FAKE" "$FX"
ok "... but extracts into it named as '.' (deleting what the archive lacks, as casync)" bash -c '
	mkdir -p "$1/ws2" && cd "$1/ws2" && echo work >mine && "$2" extract "$3/tree.catar" . &&
	[ ! -e mine ] && diff -r --no-dereference "$3/tree" .' _ "$T" "$FAKE" "$FX"
ok "... and into an empty current directory" bash -c '
	mkdir -p "$1/ws3" && cd "$1/ws3" && "$2" extract "$3/tree.catar" && diff -r --no-dereference "$3/tree" .' _ "$T" "$FAKE" "$FX"
# list/mtree/stat of a directory: its archive stream decoded as it is made,
# nothing written to $TMPDIR (which need not even exist); the table above
# compares their output with casync's
for v in list mtree stat; do
	ok "$v of a directory writes no archive copy (TMPDIR missing)" bash -c '
		cd "$1" && TMPDIR="$2/no-such-tmp" "$3" '"$v"' tree >"$2/o.'"$v"'" && [ -s "$2/o.'"$v"'" ]' _ "$FX" "$T" "$FAKE"
done
ok "list of a directory: TMPDIR stays empty" bash -c '
	mkdir -p "$2/ptmp" && cd "$1" && TMPDIR="$2/ptmp" "$3" list tree | cmp - <("$4" list tree) &&
	[ -z "$(ls -A "$2/ptmp")" ]' _ "$FX" "$T" "$FAKE" "$REAL"

# a remote .catar from a server that ignores Range (Python's http.server):
# streamed with one GET for list, mtree, digest and extract, as casync
if command -v python3 >/dev/null; then
	PY_LOG=$T/py.log
	python3 -c 'import http.server, socketserver, sys, functools
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
s = S(("127.0.0.1", 0), h)
print(s.server_address[1], flush=True)
s.serve_forever()' "$FX" >"$PY_LOG.port" 2>"$PY_LOG" &
	py_pid=$!
	at_cleanup "kill $py_pid; wait $py_pid"
	for ((i = 0; i < 100; i++)); do [ -s "$PY_LOG.port" ] && break; sleep 0.05; done
	PY=http://127.0.0.1:$(cat "$PY_LOG.port")
	compat '$C list $PY/tree.catar'
	compat '$C mtree $PY/tree.catar'
	compat '$C digest $PY/tree.catar'
	compat '$C extract $PY/tree.catar out && $C mtree out'
	compat '$C list $PY/img.caidx'
	# the range probe (its 200 dropped at the headers), then the one GET read through
	ok "a streamed list: two requests, the file sent once" bash -c '
		n0=$(grep -c "GET /tree.catar" "$1"); "$2" list "$3/tree.catar" >/dev/null &&
		[ $(($(grep -c "GET /tree.catar" "$1") - n0)) = 2 ]' _ "$PY_LOG" "$FAKE" "$PY"
	ok "random access (list URL PATH) refused with the reason, in one line" bash -c '
		! "$1" list "$2/tree.catar" sub 2>"$3/ra.err" && [ "$(wc -l <"$3/ra.err")" = 1 ] &&
		grep -q "does not support range requests (needed to read parts of a .catar)" "$3/ra.err"' _ "$FAKE" "$PY" "$T"
	# stderr as casync's: nothing after a remote command without -v (the
	# per-store summary is -v's)
	for c in "list $PY/img.caidx" "digest $PY/img.caidx" "mtree $PY/tree.catar" "extract $PY/img.caidx $T/q.out"; do
		ok "casync $c: nothing on stderr" bash -c 'cd "$1" && rm -rf "$3/q.out" && "$2" $4 >/dev/null 2>"$3/q.err" && [ ! -s "$3/q.err" ]' _ "$FX" "$FAKE" "$T" "$c"
	done
	ok "... -v prints the per-store summary" bash -c 'cd "$1" && "$2" -v list "$3/img.caidx" 2>&1 >/dev/null | grep -q "requests (0 retries)"' _ "$FX" "$FAKE" "$PY"
fi

done_testing
