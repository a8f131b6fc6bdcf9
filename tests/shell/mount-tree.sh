#!/bin/bash
# mount-tree.sh - `cafs mount` of archives (.caidx by casync and by cafs, a
# local .catar): the mounted tree equals the source tree (contents, types,
# modes, owners, ns times, symlinks, devices, xattrs), read-only, and
# corrupt archives are refused at mount time with one line.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
need casync python3 setfattr getfattr mknod
[ "$(id -u)" = 0 ] || skip_all "needs root (devices, owners, trusted xattrs)"
touch "$T/probe"
setfattr -n user.probe -v 1 "$T/probe" 2>/dev/null || skip_all "no user xattrs on $T"

tree=$T/tree
bash "$top_srcdir/tests/fixtures/mktorture.sh" "$tree" >"$T/mktorture.log" 2>&1 ||
	{ cat "$T/mktorture.log"; echo "Bail out! mktorture.sh failed"; exit 1; }
# .caexclude rules are make's business (tree-make.sh): keep the tree plain
rm -rf "$tree/excl"
touch -d '2000-01-01 00:00:01.5' "$tree"

casync make --store="$T/cs.castr" "$T/casync.caidx" "$tree" >/dev/null
"$CAFS" make --store="$T/s.castr" "$T/cafs.caidx" "$tree" >/dev/null
"$CAFS" make "$T/cafs.catar" "$tree" >/dev/null

# nodump files are left out by make (default --exclude-nodump)
treecmp() {
	python3 "$top_srcdir/tests/fixtures/treecmp.py" "$tree" "$1" \
		--missing-ok attrs/nodump --missing-ok attrs/nodump-dir
}

mnt=$T/mnt
check_mount() {
	local name=$1
	ok "$name: equals the source tree" treecmp "$mnt"
	ok "$name: getfattr -d shows the xattrs" test \
		"$(cd "$tree" && getfattr -h -d -m '^(user|trusted)\.' xattrs/file xattrs/dir)" = \
		"$(cd "$mnt" && getfattr -h -d -m '^(user|trusted)\.' xattrs/file xattrs/dir)"
	ok "$name: a 2000-entry directory lists in name order" test \
		"$(ls -f "$mnt/wide" | grep -v '^\.' | head -3 | tr '\n' ' ')" = "e0000 e0001 e0002 "
	ok "$name: 30-level path" test "$(cat "$mnt/deep/l01/l02/l03/l04/l05/l06/l07/l08/l09/l10/l11/l12/l13/l14/l15/l16/l17/l18/l19/l20/l21/l22/l23/l24/l25/l26/l27/l28/l29/l30/bottom")" = bottom
	ok "$name: readlink" test "$(readlink "$mnt/types/symlink-rel")" = file
	ok "$name: missing name is ENOENT" expect_errno ENOENT stat "$mnt/types/nope"
	ok "$name: a file is no directory: ENOTDIR" expect_errno ENOTDIR stat "$mnt/types/file/x"
	ok "$name: mkdir is refused: EROFS" expect_errno EROFS mkdir "$mnt/new"
	ok "$name: writing is refused: EROFS" expect_errno EROFS append "$mnt/types/file"
	ok "$name: rm is refused: EROFS" expect_errno EROFS rm "$mnt/types/file"
	ok "$name: ... the file is still there, unchanged" cmp "$mnt/types/file" "$tree/types/file"
	if command -v lsattr >/dev/null; then
		ok "$name: lsattr shows the archived chattr flags" test \
			"$(cd "$tree" && lsattr -d attrs/* | awk '$2 !~ /nodump/ { gsub("e", "-", $1); print }')" = \
			"$(cd "$mnt" && lsattr -d attrs/*)"
	fi
	ok "$name: 300 random reads of a 3 MiB file" rand_reads "$mnt/sizes/s3145733" "$tree/sizes/s3145733" 300 2
}

mount_start "casync .caidx mounts" "$mnt" "$T/log1" --store="$T/cs.castr" --no-cache "$T/casync.caidx"
check_mount casync.caidx
"$CAFS" stats "$mnt" >"$T/stats" 2>&1
# inodes known: at least the ones still looked up (the kernel may have
# forgotten most of the walk's under memory pressure: not 1000 every time)
ok "stats: chunks fetched, inodes known" sh -c "grep -Eq '^chunks_fetched: [1-9]' '$T/stats' &&
	grep -Eq '^inodes: [1-9]' '$T/stats'" || sed 's/^/# /' "$T/stats"
mount_stop "casync .caidx: unmount, daemon exits 0" "$mnt"

mount_start "cafs .caidx mounts (file:// URL, cache)" "$mnt" "$T/log2" --store="file://$T/s.castr" \
	--cache="$T/cache" "file://$T/cafs.caidx"
check_mount cafs.caidx
mount_stop "cafs .caidx: unmount, daemon exits 0" "$mnt"

mount_start "local .catar mounts" "$mnt" "$T/log3" "$T/cafs.catar"
check_mount .catar
ok ".catar: stats without a chunk source" "$CAFS" stats "$mnt"
mount_stop ".catar: unmount, daemon exits 0" "$mnt"

# ACLs are served as system.posix_acl_* and enforced by the kernel.
if command -v setfacl >/dev/null && command -v getfacl >/dev/null && command -v setpriv >/dev/null &&
	setfacl -m u:4242:r "$T/probe" 2>/dev/null; then
	chmod 755 "$T" # let the other uids reach the trees
	mkdir -p "$T/acltree"
	printf 'for 4242 only\n' >"$T/acltree/secret"
	chmod 600 "$T/acltree/secret"
	setfacl -m u:4242:r "$T/acltree/secret"
	chmod 755 "$T/acltree"
	"$CAFS" make "$T/acl.catar" "$T/acltree" >/dev/null
	as() { local u=$1; shift; setpriv --reuid="$u" --regid=4343 --clear-groups "$@"; }
	mount_start "ACL tree mounts" "$mnt" "$T/log-acl" "$T/acl.catar"
	ok "getfacl shows the same ACLs" test "$(cd "$T/acltree" && getfacl -n secret . 2>&1)" = \
		"$(cd "$mnt" && getfacl -n secret . 2>&1)"
	ok "the ACL lets uid 4242 read (source)" as 4242 cat "$T/acltree/secret"
	ok "the ACL lets uid 4242 read (mount)" as 4242 cat "$mnt/secret"
	fails "uid 4343 may not read (source)" as 4343 cat "$T/acltree/secret"
	fails "uid 4343 may not read (mount)" as 4343 cat "$mnt/secret"
	mount_stop "ACL tree: unmount" "$mnt"
fi

# A second mount of the same image while the first is up: independent.
mount_start "two mounts at once (1)" "$T/m1" "$T/log4" --store="$T/s.castr" --no-cache "$T/cafs.caidx"
mount_start "two mounts at once (2)" "$T/m2" "$T/log5" "$T/cafs.catar"
ok "two mounts: same content" diff -r "$T/m1/sizes" "$T/m2/sizes"
mount_stop "two mounts: unmount 1" "$T/m1"
mount_stop "two mounts: unmount 2" "$T/m2"

# Missing chunks under the tree's metadata: every lookup that needs one is
# EIO, never ENOENT (which the kernel would cache as "no such file"); put
# back, everything is found again in the same mount.
cp -a "$T/s.castr" "$T/dmg.castr"
mapfile -t all < <(find "$T/dmg.castr" -name '*.cacnk' | sort)
mkdir -p "$T/held"
for k in 1 $((${#all[@]} / 3)) $((${#all[@]} / 2)) $((${#all[@]} - 2)); do mv "${all[$k]}" "$T/held/"; done
# and, whatever the data, the chunk that holds the entry wide/e1000 (the
# archive stream is cafs.catar's; the index's items are end offsets + ids)
meta=$(python3 - "$T/cafs.catar" "$T/cafs.caidx" <<'PY'
import sys
at = open(sys.argv[1], 'rb').read().find(b'e1000\0')
idx = open(sys.argv[2], 'rb').read()
for off in range(64, len(idx) - 40, 40):
    if int.from_bytes(idx[off:off + 8], 'little') > at >= 0:
        print(idx[off + 8:off + 40].hex())
        break
PY
)
[ -z "$meta" ] || [ ! -e "$T/dmg.castr/${meta:0:4}/$meta.cacnk" ] || mv "$T/dmg.castr/${meta:0:4}/$meta.cacnk" "$T/held/"
ok "the chunk with the entry wide/e1000 was found" test -n "$meta"
stat_all() {
	python3 - "$tree" "$mnt" "$1" <<'PY'
import errno, os, sys
src, mnt, want_errors = sys.argv[1], sys.argv[2], sys.argv[3] == "errors"
ok = eio = 0
for dirpath, dirs, files in os.walk(src):
    for n in dirs + files:
        rel = os.path.relpath(os.path.join(dirpath, n), src)
        if rel.startswith('attrs/nodump'):
            continue
        try:
            os.lstat(os.path.join(mnt, rel))
            ok += 1
        except OSError as e:
            if e.errno != errno.EIO:
                sys.exit("%r: %s" % (rel, e))
            eio += 1
print(ok, eio)
if want_errors and eio == 0:
    sys.exit("no lookup failed")
if not want_errors and eio:
    sys.exit("%d lookups still fail" % eio)
PY
}
# (with the metadata sidecar cafs make wrote, a lookup reads no chunk: all are found)
mount_start "mount with chunks missing, with the sidecar" "$mnt" "$T/log6s" --store="$T/dmg.castr" --no-cache "$T/cafs.caidx"
ok "missing chunks, sidecar: every lookup still answers" stat_all clean
mount_stop "missing chunks, sidecar: unmount" "$mnt"
mv "$T/cafs.caidx.cameta" "$T/held.cameta" # walk the archive
mount_start "mount with chunks missing" "$mnt" "$T/log6" --store="$T/dmg.castr" --no-cache "$T/cafs.caidx"
ok "missing chunks: lookups fail with EIO, never ENOENT" stat_all errors
for p in "${all[@]}"; do [ -e "$p" ] || mv "$T/held/$(basename "$p")" "$p"; done
ok "chunks back: every path is found in the same mount" stat_all clean
mount_stop "missing chunks: unmount" "$mnt"
mv "$T/held.cameta" "$T/cafs.caidx.cameta"

# Corrupt archives are refused before mounting: one line, exit 1.
mkdir -p "$T/m3"
mount_err() {
	local rc=0
	"$CAFS" mount "$@" "$T/m3" >"$T/err.out" 2>&1 || rc=$?
	[ "$rc" = 1 ] && [ "$(wc -l <"$T/err.out")" = 1 ] && grep -q '^cafs: ' "$T/err.out" &&
		! is_mounted "$T/m3" || { cat "$T/err.out"; echo "exit $rc"; return 1; }
}
head -c 1000 "$T/cafs.catar" >"$T/trunc.catar"
ok "truncated .catar: refused" mount_err "$T/trunc.catar"
printf 'not an archive at all, just text that is long enough to look at\n' >"$T/text.catar"
ok "text as .catar: refused" mount_err "$T/text.catar"
"$CAFS" make --store="$T/b.castr" "$T/blob.caibx" "$tree/sizes/s65537" >/dev/null
cp "$T/blob.caibx" "$T/blob.caidx"
ok "a blob's index as .caidx: refused" mount_err --store="$T/b.castr" "$T/blob.caidx"

mount_done_testing
