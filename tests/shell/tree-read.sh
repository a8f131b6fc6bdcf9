#!/bin/bash
# tree-read.sh - cafs extract/list/mtree of archives casync made (.catar and
# .caidx): the extracted tree equals the source (content, type, mode, owner,
# mtime in ns, symlink target, rdev, xattrs via getfattr -d -m-, ACLs via
# getfacl) and casync's own extraction of the torture tree; list and mtree
# print what casync prints; extracting over an existing, different tree
# replaces what differs; crafted archives ('../x', '..', a symlink and a
# directory under one name) cannot write outside DEST.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
need casync python3 setfattr setfacl getfattr getfacl mknod
[ "$(id -u)" = 0 ] || skip_all "needs root (devices, owners, trusted xattrs)"
touch "$T/probe"
setfattr -n user.probe -v 1 "$T/probe" 2>/dev/null || skip_all "no user xattrs on $T"
setfacl -m u:4242:r "$T/probe" 2>/dev/null || skip_all "no ACLs on $T"

# describe DIR [LIST]: one sorted line per path with everything we compare;
# with LIST (`casync list` output) only the paths it names
describe() {
	python3 - "$@" <<'PY'
import hashlib, os, re, stat, sys
root = sys.argv[1]
paths = ['.']
for d, dirs, files in os.walk(root):
    for n in dirs + files:
        paths.append(os.path.relpath(os.path.join(d, n), root))
if len(sys.argv) > 2:
    keep = set()
    for line in open(sys.argv[2], 'rb').read().split(b'\n'):
        if line:
            keep.add(re.sub(rb'\\([0-7]{3})', lambda m: bytes([int(m.group(1), 8)]), line.split(b' ', 1)[1]))
    paths = [p for p in paths if os.fsencode(p) in keep]
for rel in sorted(paths, key=os.fsencode):
    p = os.path.join(root, rel)
    st = os.lstat(p)
    f = [repr(rel), oct(st.st_mode), str(st.st_uid), str(st.st_gid)]
    # directory mtimes are compared too: they are set after the children
    f.append(str(st.st_mtime_ns))
    if stat.S_ISREG(st.st_mode):
        h = hashlib.sha256()
        with open(p, 'rb') as fh:
            for b in iter(lambda: fh.read(1 << 20), b''):
                h.update(b)
        f += [str(st.st_size), h.hexdigest()]
    elif stat.S_ISLNK(st.st_mode):
        f.append('-> ' + repr(os.readlink(p)))
    elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        f.append('dev %d,%d' % (os.major(st.st_rdev), os.minor(st.st_rdev)))
    try:
        names = sorted(os.listxattr(p, follow_symlinks=False))
    except OSError:
        names = []
    for n in names:
        v = os.getxattr(p, n, follow_symlinks=False)
        if n == 'security.selinux':
            v = v.rstrip(b'\0')  # the archive's label record is NUL-terminated either way
        f.append('%s=%s' % (n, v.hex()))
    print(' '.join(f))
PY
}

# blocksort: getfattr/getfacl print "# file: NAME" blocks in walk order; sort them
blocksort() {
	python3 -c '
import re, sys
keep = None
if len(sys.argv) > 1:
    keep = set()
    for line in open(sys.argv[1], "rb").read().split(b"\n"):
        if line:
            p = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), line.split(b" ", 1)[1])
            keep.add(p)
blocks, cur = [], []
for line in sys.stdin.buffer.read().split(b"\n"):
    if line.startswith(b"# file: ") and cur:
        blocks.append(b"\n".join(cur)); cur = []
    if line:
        cur.append(line)
if cur:
    blocks.append(b"\n".join(cur))
if keep is not None:
    def name(b):
        n = b.split(b"\n", 1)[0][len(b"# file: "):]
        n = n[2:] if n.startswith(b"./") else n
        return re.sub(rb"\\(\\|[0-7]{3})", lambda m: b"\\" if m.group(1) == b"\\" else bytes([int(m.group(1), 8)]), n)
    blocks = [b for b in blocks if name(b) in keep]
sys.stdout.buffer.write(b"\n\n".join(sorted(blocks)) + b"\n")' "$@"
}

# same_tree A B [LIST]: describe, getfattr -d -m- and getfacl agree (for A, only what LIST names)
same_tree() {
	describe "$1" ${3:+"$3"} >"$T/cmp.d1" && describe "$2" >"$T/cmp.d2" &&
		(cd "$1" && getfattr -R -h -d -m- . 2>/dev/null) | blocksort ${3:+"$3"} >"$T/cmp.x1" &&
		(cd "$2" && getfattr -R -h -d -m- . 2>/dev/null) | blocksort >"$T/cmp.x2" &&
		(cd "$1" && getfacl -R -P -p -n . 2>/dev/null) | blocksort ${3:+"$3"} >"$T/cmp.a1" &&
		(cd "$2" && getfacl -R -P -p -n . 2>/dev/null) | blocksort >"$T/cmp.a2" &&
		test "$(wc -l <"$T/cmp.d1")" -gt 5 &&
		diff "$T/cmp.d1" "$T/cmp.d2" && diff "$T/cmp.x1" "$T/cmp.x2" && diff "$T/cmp.a1" "$T/cmp.a2"
}

# ---- a small varied tree, compared with its source ----
src=$T/src
mkdir -p "$src/sub/deeper" "$src/empty" "$src/dacl"
printf 'hi\n' >"$src/a.txt"
: >"$src/empty.txt"
gen_data "$src/sub/rand.bin" 100000 1
gen_data "$src/sub/bigger.bin" 300000 2
printf 'x\n' >"$src/sub/deeper/x"
printf 'abcd\n' >"$src/abcd"
printf 'ab\n' >"$src/ab"
printf 's\n' >"$src/suid"
chmod 4755 "$src/suid"
chmod 2750 "$src/sub"
ln -s a.txt "$src/link"
ln -s /nonexistent/abs/target "$src/sub/abs"
mkfifo "$src/fifo"
python3 -c "import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])" "$src/sock"
mknod "$src/cdev" c 1 3
mknod "$src/bdev" b 7 200
printf 'u\n' >"$src/$(printf '\303\274')"
printf 'sp\n' >"$src/with space"
setfattr -n user.foo -v bar "$src/a.txt"
setfattr -n user.empty "$src/a.txt"
setfattr -n trusted.t -v secret "$src/a.txt"
setfattr -n user.dir -v d "$src/sub"
setfacl -m u:4242:rw,g:4343:r "$src/a.txt"
setfacl -d -m u:4242:rx,g:4343:rwx "$src/dacl"
setfacl -m u:4242:rwx "$src/dacl"
printf 'in\n' >"$src/dacl/inherited"
chown 4242:4343 "$src/sub/rand.bin" "$src/empty"
chown -h 4242:4343 "$src/link"
find "$src" -depth -exec touch -h -d '2021-03-04 05:06:07.123456789' {} +
touch -d '1969-12-31 23:59:58.5' "$src/sub/deeper/x"
touch -h -d '2000-02-29 12:00:00.999999999' "$src/link" "$src/sub"

casync make "$T/s.catar" "$src" >/dev/null
casync make --chunk-size=4096:16384:65536 --store="$T/st" "$T/s.caidx" "$src" >/dev/null

ok "extract .catar" "$CAFS" extract "$T/s.catar" "$T/x1"
ok ".catar: the tree equals the source" same_tree "$src" "$T/x1"
ok "extract .caidx" "$CAFS" extract --store="$T/st" "$T/s.caidx" "$T/x2"
ok ".caidx: the tree equals the source" same_tree "$src" "$T/x2"
ok ".caidx: default store beside the index" sh -c \
	"ln -s st '$T/default.castr' && '$CAFS' extract '$T/s.caidx' '$T/x2b' && rm '$T/default.castr'"
ok ".caidx default store: the tree equals the source" same_tree "$src" "$T/x2b"

for a in "$T/s.catar" "$T/s.caidx"; do
	s=${a##*.}
	ok "$s: list = casync list" diff <(casync --store="$T/st" list "$a") <("$CAFS" list -s "$T/st" "$a")
	ok "$s: mtree = casync mtree" diff <(casync --store="$T/st" mtree "$a") <("$CAFS" mtree -s "$T/st" "$a")
	for p in sub sub/deeper a.txt link dacl; do
		ok "$s: list $p = casync" diff <(casync --store="$T/st" list "$a" "$p") <("$CAFS" list -s "$T/st" "$a" "$p")
		ok "$s: mtree $p = casync" diff <(casync --store="$T/st" mtree "$a" "$p") <("$CAFS" mtree -s "$T/st" "$a" "$p")
	done
	fails "$s: list of a missing path" "$CAFS" list -s "$T/st" "$a" no/such/path
done
ok "list -l shows owners and link targets" sh -c "'$CAFS' list -l '$T/s.catar' | grep -q '^lrwxrwxrwx 4242 .* link -> a.txt$'"
ok "digest .catar = casync digest" test "$("$CAFS" digest "$T/s.catar")" = "$(casync digest "$T/s.catar")"

# ---- other feature sets: list/mtree agree, extraction keeps the contents ----
for opts in --with=unix --without=all "--with=sec-time --with=read-only" "--with=2sec-time --with=read-only" \
	--with=fat "--with=16bit-uids --with=user-names" "--with=32bit-uids --with=user-names" --digest=sha256 \
	--without=acl --with=fuse --without=xattrs "--with=symlinks --with=nsec-time"; do
	rm -rf "$T/fl.catar" "$T/flx"
	# shellcheck disable=SC2086
	casync make $opts "$T/fl.catar" "$src" >/dev/null
	ok "$opts: list = casync list" diff <(casync list "$T/fl.catar") <("$CAFS" list "$T/fl.catar")
	ok "$opts: mtree = casync mtree" diff <(casync mtree "$T/fl.catar") <("$CAFS" mtree "$T/fl.catar")
	ok "$opts: extract keeps every file's content" sh -c \
		"'$CAFS' extract '$T/fl.catar' '$T/flx' && test \"\$(cd '$T/flx' && find . -type f -exec sha256sum {} + | sort)\" = \
		\"\$(cd '$src' && find . -type f -exec sha256sum {} + | sort)\""
done
# casync's decoder wants usec-time mtimes in whole milliseconds (it divides by
# 10^6, not 10^3) and so refuses its own archives; we check the real granularity
casync make --with=usec-time "$T/us.catar" "$src" >/dev/null
ok "usec-time: cafs reads what casync wrote" "$CAFS" mtree "$T/us.catar"
ok "usec-time: mtimes truncated to microseconds" sh -c "'$CAFS' mtree '$T/us.catar' | grep -q 'time=[0-9]*\.[0-9]*000 '"

# ---- a subtree: extract IN OUT PATH ----
ok "subtree of a .catar" "$CAFS" extract "$T/s.catar" "$T/sub1" sub
ok "... equals the source's sub/" same_tree "$src/sub" "$T/sub1"
ok "subtree of a .caidx, path spelled ./sub/" "$CAFS" extract --store="$T/st" "$T/s.caidx" "$T/sub2" ./sub/
ok "... equals the source's sub/" same_tree "$src/sub" "$T/sub2"
ok "subtree two levels down" "$CAFS" extract "$T/s.catar" "$T/sub3" sub/deeper
ok "... equals the source's sub/deeper (content, pre-1970 mtime)" sh -c "diff -r '$src/sub/deeper' '$T/sub3' &&
	test \"\$(stat -c %y '$src/sub/deeper/x')\" = \"\$(stat -c %y '$T/sub3/x')\""
out=$("$CAFS" extract "$T/s.catar" "$T/sub4" sub/nothing 2>&1)
ok "a path not in the archive: one line, nothing made" test $? != 0 -a "$(printf '%s\n' "$out" | wc -l)" = 1 -a ! -e "$T/sub4"
out=$("$CAFS" extract "$T/s.catar" "$T/sub5" a.txt 2>&1)
ok "a file as PATH: one line" test $? != 0 -a "$out" = "cafs: $T/s.catar: a.txt: not a directory (extract takes one)"
fails "PATH with a blob index is a usage error" "$CAFS" extract "$T/s.caidx.not-there.caibx" "$T/sub6" sub

# ---- over an existing tree that differs ----
mkdir -p "$T/x3" "$T/outside"
cp -a "$T/x1/." "$T/x3/"
rm -rf "$T/x3/sub" "$T/x3/a.txt" "$T/x3/link" "$T/x3/empty"
ln -s "$T/outside" "$T/x3/sub"          # a directory in the archive: must not go through the link
mkdir -p "$T/x3/a.txt/inner"            # a file in the archive
printf 'old\n' >"$T/x3/link"            # a symlink in the archive
printf 'file\n' >"$T/x3/empty"          # a directory in the archive
printf 'extra\n' >"$T/x3/not-in-archive"
mkdir -p "$T/x3/extra-dir/deep"
printf 'changed\n' >"$T/x3/ab"
chmod 600 "$T/x3/abcd"
ok "extract over a different tree" "$CAFS" extract "$T/s.catar" "$T/x3"
ok "the tree equals the source again" same_tree "$src" "$T/x3"
ok "nothing was written through the symlink" test -z "$(ls -A "$T/outside")"
ok "extract over an identical tree" "$CAFS" extract "$T/s.caidx" --store="$T/st" "$T/x3"
ok "still equal" same_tree "$src" "$T/x3"

# a mount inside DEST where the archive has nothing (or a file) is never emptied
mkdir -p "$T/x14" "$T/mounted"
printf 'keep\n' >"$T/mounted/keep"
"$CAFS" extract "$T/s.catar" "$T/x14"
mkdir "$T/x14/sub/mnt"
if mount --bind "$T/mounted" "$T/x14/sub/mnt" 2>/dev/null; then
	at_cleanup "umount '$T/x14/sub/mnt'"
	fails "extract over a tree with a mount where the archive has nothing" "$CAFS" extract "$T/s.catar" "$T/x14"
	ok "the mounted tree is untouched" test -f "$T/mounted/keep"
	umount "$T/x14/sub/mnt"
fi

# ---- not root: owners are skipped with one warning ----
if command -v setpriv >/dev/null; then
	mkdir -p "$T/nr/src/d" "$T/nr/out"
	printf 'a\n' >"$T/nr/src/f"
	printf 'b\n' >"$T/nr/src/d/g"
	ln -s f "$T/nr/src/l"
	chown 4242:4343 "$T/nr/src/f" "$T/nr/src/d"
	chmod 555 "$T/nr/src/d" # read-only once complete: its file must be in before
	casync make "$T/nr/s.catar" "$T/nr/src" >/dev/null
	chown 65534:65534 "$T/nr/out"
	chmod 755 "$T" "$T/nr"
	out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$CAFS" extract "$T/nr/s.catar" "$T/nr/out/x" 2>&1)
	ok "not root: extract succeeds" test $? = 0
	ok "not root: exactly one warning, about owners" test "$out" = \
		"cafs: warning: cannot restore file owners (not running as root), skipping them"
	ok "not root: contents and mtimes restored" sh -c "cmp '$T/nr/src/d/g' '$T/nr/out/x/d/g' &&
		test \"\$(stat -c %Y.%y '$T/nr/src/f')\" = \"\$(stat -c %Y.%y '$T/nr/out/x/f')\" &&
		test \"\$(readlink '$T/nr/out/x/l')\" = f && test \"\$(stat -c %u '$T/nr/out/x/f')\" = 65534 &&
		test \"\$(stat -c %a '$T/nr/out/x/d')\" = 555"
fi

# ---- quota project ids, on XFS (this kernel's ext4 may lack quota support) ----
if command -v mkfs.xfs >/dev/null && grep -qw xfs /proc/filesystems; then
	truncate -s 320M "$T/xfs.img"
	mkdir -p "$T/xfs"
	if mkfs.xfs -q -f "$T/xfs.img" 2>/dev/null && mount -o loop "$T/xfs.img" "$T/xfs"; then
		at_cleanup "umount '$T/xfs'"
		X=$T/xfs
		mkdir -p "$X/src/d" "$X/inh"
		printf 'f\n' >"$X/src/f"
		printf 'h\n' >"$X/src/h"
		chattr -p 42 "$X/src/f"
		chattr +P -p 7 "$X/src/d"  # project-inherit: g below gets 7 when created
		printf 'g\n' >"$X/src/d/g"
		casync make "$X/p.catar" "$X/src" >/dev/null
		projids() { for p in f h d d/g; do lsattr -p -d "$1/$p" | awk '{ printf "%s ", $1 }'; done; }
		ok "projid: the source has them" test "$(projids "$X/src")" = "42 0 7 7 "
		ok "projid: extract" "$CAFS" extract "$X/p.catar" "$X/out"
		ok "projid: restored" test "$(projids "$X/out")" = "42 0 7 7 "
		# into a directory whose project id new files would inherit: 0 stays 0
		chattr +P -p 5 "$X/inh"
		ok "projid: extract into a project-inherit directory" "$CAFS" extract "$X/p.catar" "$X/inh"
		ok "projid: what the archive says, not what was inherited" test "$(projids "$X/inh")" = "42 0 7 7 "
		umount "$X"
	fi
fi

# ---- crafted archives: nothing outside DEST ----
# patch NAME NEW IN OUT: rename a FILENAME record in place (same length)
patch_name() {
	python3 - "$@" <<'PY'
import struct, sys
old, new, src, dst = sys.argv[1].encode(), sys.argv[2].encode(), sys.argv[3], sys.argv[4]
assert len(old) == len(new)
b = bytearray(open(src, 'rb').read())
rec = struct.pack('<QQ', 16 + len(old) + 1, 0x6dbb6ebcb3161f0b) + old + b'\0'
i = b.find(rec)
assert i >= 0, 'record not found'
b[i + 16:i + 16 + len(new)] = new
open(dst, 'wb').write(b)
PY
}
patch_name abcd ../x "$T/s.catar" "$T/dotdot-x.catar"
mkdir -p "$T/x4"
fails "a '../x' name is refused" "$CAFS" extract "$T/dotdot-x.catar" "$T/x4/dest"
ok "nothing named x outside DEST" test ! -e "$T/x4/x" -a ! -e "$T/x"
fails "list refuses it too" "$CAFS" list "$T/dotdot-x.catar"
patch_name ab .. "$T/s.catar" "$T/dotdot.catar"
fails "a '..' name is refused" "$CAFS" extract "$T/dotdot.catar" "$T/x5"
fails "random access refuses it" "$CAFS" list "$T/dotdot.catar" ..

# a symlink to a directory outside, then a directory of the same name with a file
mkdir -p "$T/src6/d2" "$T/victim"
ln -s "$T/victim" "$T/src6/d1"
printf 'evil\n' >"$T/src6/d2/f"
casync make "$T/s6.catar" "$T/src6" >/dev/null
patch_name d2 d1 "$T/s6.catar" "$T/twice.catar"
fails "a symlink and a directory under one name are refused" "$CAFS" extract "$T/twice.catar" "$T/x6"
ok "nothing was written through the symlink" test -z "$(ls -A "$T/victim")"
# a symlink to a file outside, then a regular file of the same name
mkdir -p "$T/src7" "$T/victim2"
ln -s "$T/victim2/target" "$T/src7/s1"
printf 'evil\n' >"$T/src7/s2"
casync make "$T/s7.catar" "$T/src7" >/dev/null
patch_name s2 s1 "$T/s7.catar" "$T/twice-file.catar"
fails "a symlink and a file under one name are refused" "$CAFS" extract "$T/twice-file.catar" "$T/x12"
ok "nothing was written through that symlink" test ! -e "$T/victim2/target"
mkdir -p "$T/x13"
ln -s "$T/victim2/target" "$T/x13/s2"
ok "a symlink already in DEST is replaced, not followed" "$CAFS" extract "$T/s7.catar" "$T/x13"
ok "nothing was written through it" test ! -e "$T/victim2/target" -a -f "$T/x13/s2" -a ! -L "$T/x13/s2"
out=$("$CAFS" extract "$T/twice.catar" "$T/x7" 2>&1)
ok "one-line error starting with 'cafs: '" test "$(printf '%s\n' "$out" | wc -l)" = 1 -a "${out#cafs: }" != "$out"

# corrupt data and missing chunks: clean errors
head -c 1000 "$T/s.catar" >"$T/trunc.catar"
fails "a truncated archive is refused" "$CAFS" extract "$T/trunc.catar" "$T/x8"
fails "a missing store is an error" "$CAFS" extract --store="$T/nowhere" "$T/s.caidx" "$T/x9"
mkdir -p "$T/emptystore"
fails "missing chunks: extract fails" "$CAFS" extract --store="$T/emptystore" "$T/s.caidx" "$T/x10"
out=$("$CAFS" extract --store="$T/emptystore" "$T/s.caidx" "$T/x10" 2>&1)
ok "missing chunks: one line naming the chunk" test "$(printf '%s\n' "$out" | wc -l)" = 1 -a \
	"${out%not found in any store}" != "$out"
fails "missing chunks: list PATH fails" "$CAFS" list --store="$T/emptystore" "$T/s.caidx" sub
cp -a "$T/st" "$T/badstore"
chmod -R u+w "$T/badstore"
for c in $(find "$T/badstore" -name '*.cacnk'); do printf 'garbage' >"$c"; done
out=$("$CAFS" mtree --store="$T/badstore" "$T/s.caidx" 2>&1 >/dev/null)
ok "corrupt chunks: mtree fails with one line" test $? != 0 -a "$(printf '%s\n' "$out" | wc -l)" = 1
fails "corrupt chunks: extract fails" "$CAFS" extract --store="$T/badstore" "$T/s.caidx" "$T/x11"

# ---- new directories show only once complete ----
# A tree whose last chunk is missing fails near its end: a new DEST must
# not exist then, nor any temporary directory; in an existing DEST, the
# new directory that was complete is there, the failed one is not.
mkdir -p "$T/late/a/ro" "$T/late/z"
for i in $(seq 1 12); do gen_data "$T/late/a/f$i" 20000 $((100 + i)); done
# z/ is far larger than a chunk can be (256 KiB): some chunk lies wholly inside it
for i in $(seq 1 48); do gen_data "$T/late/z/f$i" 20000 $((200 + i)); done
printf 'x\n' >"$T/late/a/ro/inside"
chmod 555 "$T/late/a/ro"  # the clean-up must get through it
casync make --store="$T/late.castr" "$T/late.caidx" "$T/late" >/dev/null
last=$(python3 -c "import sys; b = open(sys.argv[1], 'rb').read(); print(b[-40 - 32:-40].hex())" "$T/late.caidx")
# and a chunk in the middle of z/ (starting past 500000, a/ ends near 250000; not the last)
mid=$(index_chunk_after 500000 "$T/late.caidx")
cp -a "$T/late.castr" "$T/mid.castr"
rm -f "$T/mid.castr/${mid:0:4}/$mid.cacnk"
rm -f "$T/late.castr/${last:0:4}/$last.cacnk"
no_tmp() { test -z "$(find "$1" -maxdepth 3 -name '.#cafs*')"; }
fails "missing last chunk: extract into a new DEST fails" "$CAFS" extract --store="$T/late.castr" "$T/late.caidx" "$T/x15"
ok "... and DEST does not exist" test ! -e "$T/x15"
ok "... and no temporary directory is left beside it" no_tmp "$T"
# (the root's GOODBYE table is at the very end: random access always needs the last chunk)
ok "subtree: a chunk wholly inside z/ was found" test -n "$mid" -a "$mid" != "$last"
ok "... a/ extracts from a store without it" "$CAFS" extract --store="$T/mid.castr" "$T/late.caidx" "$T/x18" a
ok "... and equals the source's a/" diff -r "$T/late/a" "$T/x18"
fails "... while z/ needs it" "$CAFS" extract --store="$T/mid.castr" "$T/late.caidx" "$T/x19" z
mkdir "$T/x16"
fails "missing last chunk: extract into an existing DEST fails" \
	"$CAFS" extract --store="$T/late.castr" "$T/late.caidx" "$T/x16"
ok "... the complete new directory is there" diff -r "$T/late/a" "$T/x16/a"
ok "... the failed one is not, nor any temporary directory" sh -c "test ! -e '$T/x16/z' && test -z \"\$(ls -A '$T/x16' | grep -v '^a\$')\""
# interrupted while a chunk read hangs (the last chunk is only in a store
# whose server never answers)
mute_start
# the thread stuck on the fetch, and what it uses, are left to the exit on
# purpose: under the sanitizers, LeakSanitizer must not count that
ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" CAFS_HTTP_TIMEOUT=120 \
	"$CAFS" extract --store="$T/late.castr" --store="http://127.0.0.1:$MUTE_PORT/s" "$T/late.caidx" "$T/x17" \
	2>"$T/x17.err" &
pid=$!
at_cleanup "kill -KILL $pid 2>/dev/null"
ok "interrupted extract: blocked on the chunk (before the signal)" wait_until 10 "$pid" mute_accepted
kill -TERM "$pid"
for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -KILL "$pid" 2>/dev/null # still there after 10 s: it hung (and fails below)
rc=0
wait "$pid" || rc=$?
ok "interrupted extract: exits 128+SIGTERM" test "$rc" -eq 143
ok "... says it was interrupted" interrupted_by "$T/x17.err" TERM
ok "... DEST does not exist" test ! -e "$T/x17"
ok "... nor any temporary directory" no_tmp "$T"
# what a killed extract leaves (a temporary directory) goes with the next one
mkdir "$T/x16/.#cafs0123456789abcdef0"
ok "extract into that DEST (with a leftover temporary directory)" "$CAFS" extract --store="$T/st" "$T/s.caidx" "$T/x16"
ok "... the leftover is gone" no_tmp "$T/x16"
ok "... and the tree equals the source" same_tree "$src" "$T/x16"
if command -v setpriv >/dev/null; then
	# not root, the clean-up has to open up the read-only directory first
	mkdir -p "$T/nr2"
	chown 65534:65534 "$T/nr2"
	chmod 755 "$T"
	setpriv --reuid=65534 --regid=65534 --clear-groups "$CAFS" extract --store="$T/late.castr" "$T/late.caidx" \
		"$T/nr2/y" 2>/dev/null
	ok "not root: a failing extract fails" test $? != 0
	ok "... and leaves nothing behind" test -z "$(ls -A "$T/nr2")"
fi

# ---- the torture tree (casync itself cannot extract it: names too long) ----
tree=$T/torture
if bash "$top_srcdir/tests/fixtures/mktorture.sh" "$tree" >"$T/mktorture.log" 2>&1; then
	casync make --store="$T/tst" "$T/t.caidx" "$tree" >/dev/null
	casync make "$T/t.catar" "$tree" >/dev/null
	casync list "$T/t.catar" >"$T/t.list"
	# the SELinux label is applied only on a host running SELinux (man cafs: SECURITY)
	[ -e /sys/fs/selinux/enforce ] || setfattr -h -x security.selinux "$tree/xattrs/labelled" 2>/dev/null
	ok "torture: extract .catar" "$CAFS" extract "$T/t.catar" "$T/tf"
	ok "torture: the tree equals what casync archived of the source" same_tree "$tree" "$T/tf" "$T/t.list"
	ok "torture: extract .caidx" "$CAFS" extract --store="$T/tst" "$T/t.caidx" "$T/tf2"
	ok "torture: .caidx tree equal" same_tree "$tree" "$T/tf2" "$T/t.list"
	ok "torture: list = casync list" diff "$T/t.list" <("$CAFS" list "$T/t.catar")
	ok "torture: mtree = casync mtree" diff <(casync mtree "$T/t.catar") <("$CAFS" mtree "$T/t.catar")
	for p in names deep wide types acl xattrs modes sizes "deep/l01/l02/l03/l04/l05/l06/l07/l08/l09/l10"; do
		ok "torture: mtree of $p = casync" diff <(casync --store="$T/tst" mtree "$T/t.caidx" "$p") \
			<("$CAFS" mtree --store="$T/tst" "$T/t.caidx" "$p")
	done
	ok "torture: digest = casync digest" test "$("$CAFS" digest "$T/t.catar")" = "$(casync digest "$T/t.catar")"
else
	fails "mktorture.sh failed: $(tail -n 1 "$T/mktorture.log")" true
fi

done_testing
