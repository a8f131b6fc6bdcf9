#!/bin/bash
# mount-ino-rebuild.sh - a tree mount answers for any inode number of its
# archive, handed out by this process or not (issue 20.3), with and
# without the metadata sidecar. Node ids are archive positions, directory
# handles hold no memory (fh 0), and a node is rebuilt from its number
# alone (the sidecar's entry, or a walk down from the root). The test hook
# CAFS_TEST_INODES_MAX=1 lets the node table keep (almost) nothing, so
# nearly every request must rebuild its node, as a fresh server on a live
# FUSE connection (the keeper's respawn) must:
#  - the same inode numbers as a mount with a normal table;
#  - contents, symlinks and xattrs equal the source;
#  - an open file, an open directory and a cwd inside the mount keep
#    working after everything else was walked (their nodes long dropped).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
need python3 getfattr setfattr
touch "$T/probe"
setfattr -n user.probe -v 1 "$T/probe" 2>/dev/null || skip_all "no user xattrs on $T"
cd "$T"

mkdir -p src/a/b/c src/d src/e
for i in $(seq 1 40); do printf 'file %d\n' "$i" >"src/e/f$i"; done
head -c 300000 /dev/urandom >src/a/b/c/big
echo deep >src/a/b/c/small
ln -s ../d src/a/link
setfattr -n user.k -v value-of-k src/a/b/c/small
"$CAFS" make --store s.castr sc.caidx src >/dev/null || exit 1
"$CAFS" make --meta=no --store s.castr nosc.caidx src >/dev/null || exit 1
ok "one image with a sidecar, one without" test -s sc.caidx.cameta -a ! -e nosc.caidx.cameta

for img in sc nosc; do
	mount_start "$img: mount with a normal table" ref.$img ref.$img.log --store s.castr $img.caidx || continue
	(cd ref.$img && find . -printf '%i %p\n' | sort -k2) >ino.ref.$img
	CAFS_TEST_INODES_MAX=1 mount_start "$img: mount keeping no nodes" m.$img m.$img.log --store s.castr $img.caidx ||
		continue
	# hold a file, a directory and a cwd before anything else is looked up
	exec 7<m.$img/a/b/c/big
	python3 - m.$img/e >dir.$img.out 2>&1 <<'PY' &
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
time.sleep(3) # the walk below drops every node meanwhile
print(len(os.listdir(fd)))
PY
	dirpid=$!
	(cd m.$img/a/b && sleep 3 && cat c/small && ls c) >cwd.$img.out 2>&1 &
	cwdpid=$!
	(cd m.$img && find . -printf '%i %p\n' | sort -k2) >ino.$img
	ok "$img: the same inode numbers without the table" cmp ino.$img ino.ref.$img
	ok "$img: the contents equal the source" diff -r src m.$img
	ok "$img: a symlink reads" test "$(readlink m.$img/a/link)" = ../d
	ok "$img: an xattr reads" test "$(getfattr -n user.k --only-values m.$img/a/b/c/small)" = value-of-k
	ok "$img: the file held open reads right" cmp /dev/fd/7 src/a/b/c/big
	exec 7<&-
	wait $dirpid
	ok "$img: the directory held open lists" test "$(cat dir.$img.out)" = 40
	wait $cwdpid
	ok "$img: the cwd inside the mount works" test "$(cat cwd.$img.out)" = "$(printf 'deep\nbig\nsmall')"
	ok "$img: statfs answers" stat -f m.$img
	inodes=$(getfattr -n user.cafs.stats --only-values m.$img | awk '/^inodes:/ { print $2 }')
	ok "$img: the table kept $inodes nodes (the root and one more)" test "$inodes" -le 2
	mount_stop "$img: unmount" m.$img
	mount_stop "$img: unmount the reference" ref.$img
done
mount_done_testing
