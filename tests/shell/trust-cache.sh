#!/bin/bash
# Another local user (issue 10): the chunk cache is as private as the
# images in it (0700 dirs, 0400 chunks; another user's or a group-writable
# cache is refused; an older cafs's cache is tightened; no /var/tmp
# fallback), a blob mount shows the index file's owner and mode, a FIFO or
# symlink at a chunk path is a miss that is repaired (no hang), and make
# syncs the store and the index before the index is renamed into place and
# replaces empty or non-regular chunk files.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-cache.sh"
. "$top_srcdir/tests/lib-mount.sh"

[ "$(id -u)" = 0 ] || skip_all "needs root (to act as nobody)"
need setpriv
need zstd
need strace

NOBODY=65534
as_nobody() { setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "$@"; }
mode_of() { stat -c %a "$1"; }
PY3=$(command -v /usr/bin/python3 || command -v python3) # one nobody may run (not a shim under /root)
# every directory of DIR has mode $2 and every file mode $3
all_modes() {
	[ -z "$(find "$1" -type d ! -perm "$2")" ] && [ -z "$(find "$1" -type f ! -perm "$3")" ] &&
		[ -n "$(find "$1" -type f -name '*.cacnk')" ]
}

cd "$T"
chmod 0755 "$T" # nobody must reach what the tests give it
umask 022

# an image with a secret only root may read, and a public file
mkdir -p src www
printf 'TOPSECRET-%s\n' "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >src/secret
chmod 0600 src/secret
gen_data src/public 300000 5
$CAFS make -q --store www/store www/img.caidx src >/dev/null
chmod -R a+rX www
marker=$(cut -c1-20 src/secret)

# ---- 1. the cache does not leak what the mount protects ----

mount_start "root mounts the tree with a cache" mnt1 log1 --cache "$T/C" --store www/store www/img.caidx
ok "... root reads everything (fills the cache)" diff -r mnt1 src
ok "... nobody may not read the 0600 file through the mount" as_nobody "$PY3" -c "$EXPECT_ERRNO_PY" EACCES cat mnt1/secret
mount_stop "... unmounts" mnt1
ok "the cache holds the secret's chunk (root can decompress it)" \
	bash -c "cat C/*/*.cacnk | zstd -dcq 2>/dev/null | grep -qF '$marker'"
ok "cache dirs are 0700 and chunk files 0400" all_modes C 0700 0400
ok "nobody cannot read the secret through the cache" \
	bash -c "! setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups bash -c 'cat C/*/*.cacnk 2>/dev/null | zstd -dcq 2>/dev/null' | grep -qF '$marker'"
ok "nobody can read no file of the cache" \
	bash -c "[ -z \"\$(setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups find C -type f -readable 2>/dev/null)\" ]"

# the default cache is private too (its parents made 0700)
ok "cache fill into the default cache (XDG_CACHE_HOME)" \
	env XDG_CACHE_HOME="$T/xdg/c" $CAFS cache fill -q --store www/store www/img.caidx
ok "... made private: $T/xdg/c/cafs 0700, its new parent 0700" \
	bash -c "[ \$(stat -c %a xdg/c/cafs) = 700 ] && [ \$(stat -c %a xdg/c) = 700 ]"

# an unprivileged user's own cache works, and is private
mkdir -m 0755 nb && chown $NOBODY:$NOBODY nb
ok "nobody extracts with its own new cache" \
	as_nobody $CAFS extract --cache "$T/nb/cache" --store www/store www/img.caidx "$T/nb/out"
ok "... the public file is right" cmp nb/out/public src/public
ok "... its cache is nobody's, 0700/0400" \
	bash -c "all_modes() { [ -z \"\$(find \"\$1\" -type d ! -perm \$2)\" ] && [ -z \"\$(find \"\$1\" -type f ! -perm \$3)\" ]; }; all_modes nb/cache 0700 0400 && [ \$(stat -c %u nb/cache) = $NOBODY ]"

# refused: a cache owned by someone else, or writable by group/others
mkdir -m 0700 theirs && chown $NOBODY:$NOBODY theirs
out=$($CAFS cache fill -q --cache "$T/theirs" --store www/store www/img.caidx 2>&1)
rc=$?
ok "root refuses a cache owned by nobody" test "$rc" = 1
ok "... with one line naming the owner" \
	bash -c "[ \$(printf '%s\n' \"\$1\" | wc -l) = 1 ] && printf '%s\n' \"\$1\" | grep -q '^cafs: cache $T/theirs: owned by uid $NOBODY, not by you'" _ "$out"
ok "... and wrote nothing in it" test -z "$(ls -A theirs)"
out=$(as_nobody $CAFS cache fill -q --cache "$T/C" --store www/store www/img.caidx 2>&1)
ok "nobody refuses (cannot use) root's cache" test $? = 1
mkdir -m 0777 open && chmod 0777 open
out=$($CAFS cache fill -q --cache "$T/open" --store www/store www/img.caidx 2>&1)
rc=$?
ok "a cache writable by others is refused" test "$rc" = 1
ok "... with one line" bash -c "printf '%s\n' \"\$1\" | grep -q '^cafs: cache $T/open: writable by group or others (mode 0777)'" _ "$out"
ok "... left as it was" test "$(mode_of open)" = 777
ln -s C Clink
ok "a cache path that is a symlink is refused" \
	bash -c "! $CAFS cache fill -q --cache '$T/Clink' --store www/store www/img.caidx 2>err && grep -q 'symbolic link' err"

# an older cafs's cache (0755 dirs, 0444 chunks) is made private in place, once
cp -a C old
find old -type d -exec chmod 0755 {} + && find old -type f -exec chmod 0444 {} +
ok "a cache of an older cafs is accepted" bash -c "$CAFS extract --cache '$T/old' --store www/store www/img.caidx x1 2>err1"
ok "... and tightened with one warning" bash -c "[ \$(grep -c 'made it private' err1) = 1 ]"
ok "... to 0700/0400" all_modes old 0700 0400
ok "... the second use says nothing" bash -c "$CAFS extract --cache '$T/old' --store www/store www/img.caidx x2 2>err2 && ! [ -s err2 ]"

# no shared fallback when there is no home: a user with no passwd entry
pre=$( [ -e /var/tmp/cafs-cache ] && echo yes || echo no)
[ "$pre" = no ] && at_cleanup "rm -rf /var/tmp/cafs-cache"
ok "no home and no XDG_CACHE_HOME: refused, no /var/tmp fallback" \
	bash -c "! env -u HOME -u XDG_CACHE_HOME setpriv --reuid=54321 --regid=54321 --clear-groups $CAFS cache fill -q --store www/store www/img.caidx 2>err3 && grep -q 'no home directory' err3"
[ "$pre" = no ] && ok "... /var/tmp/cafs-cache was not made" test ! -e /var/tmp/cafs-cache

# ---- 2. a blob mount shows the index file's owner and mode ----

gen_data disk.img 200000 7
cp disk.img disk.pub # what nobody compares with
chmod 0600 disk.img
$CAFS make -q --store www/store www/disk.caibx disk.img >/dev/null
chmod 0600 www/disk.caibx
mkdir -p mnt2
mount_start "root mounts a 0600 blob index" mnt2 log2 --store www/store www/disk.caibx
ok "... the file is root's, mode 0400" test "$(stat -c '%u %a' mnt2/disk)" = "0 400"
ok "... root reads it" cmp mnt2/disk disk.img
ok "... nobody may not" as_nobody "$PY3" -c "$EXPECT_ERRNO_PY" EACCES cat mnt2/disk
mount_stop "... unmounts" mnt2
mount_start "the same with -o mode=0444" mnt2 log3 -o mode=0444 --store www/store www/disk.caibx
ok "... nobody reads it" as_nobody cmp mnt2/disk disk.pub
mount_stop "... unmounts" mnt2
mount_start "-o uid=nobody,mode=0400" mnt2 log4 -o uid=nobody,mode=0400 --store www/store www/disk.caibx
ok "... nobody owns and reads it" bash -c "[ \"\$(stat -c '%u %a' mnt2/disk)\" = '$NOBODY 400' ] && setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups cmp mnt2/disk disk.pub"
mount_stop "... unmounts" mnt2
ok "mode= on a tree mount is refused" bash -c "! $CAFS mount -o mode=0444 --store www/store www/img.caidx mnt2 2>err4 && grep -q 'blob mounts' err4"
fails "a bad mode is refused" $CAFS mount -f -o mode=999 --store www/store www/disk.caibx mnt2

# ---- 3. a FIFO or a symlink at a chunk path: a miss, repaired, no hang ----

# unblock_fifos DIR: open every FIFO of DIR for writing and close it, so a
# reader blocked on one gets EOF (only needed when the fix is missing)
unblock_fifos() {
	local f
	for f in "$T/$1"/*/*.cacnk; do
		[ -p "$f" ] && timeout 5 bash -c ': >"$1"' _ "$f"
	done
	return 0
}

$CAFS extract -q --cache "$T/C3" --store www/store www/disk.caibx d0
mapfile -t chunks < <(cd C3 && ls */*.cacnk | sort)
rm "C3/${chunks[0]}" && mkfifo -m 0600 "C3/${chunks[0]}"
rm "C3/${chunks[1]}" && ln -s /etc/passwd "C3/${chunks[1]}"
ok "extract over a FIFO and a symlink in the cache finishes" \
	timeout 30 $CAFS extract --cache "$T/C3" --store www/store www/disk.caibx d1
ok "... with the right data" cmp d1 disk.img
ok "... the bad entries were replaced by chunks" test -f "C3/${chunks[0]}" -a ! -L "C3/${chunks[1]}" -a -f "C3/${chunks[1]}"
rm "C3/${chunks[2]}" && mkfifo -m 0600 "C3/${chunks[2]}"
mount_start "mount with a FIFO at a chunk path in the cache" mnt3 log5 --cache "$T/C3" --store www/store www/disk.caibx
# (should the daemon block on a FIFO, a writer lets it go: bounded either way)
at_cleanup "unblock_fifos C3"
ok "... a whole read finishes, right" timeout 30 cmp mnt3/disk disk.img
unblock_fifos C3
mount_stop "... unmounts" mnt3
ok "... said once" bash -c "[ \$(grep -c 'not a regular file' log5) = 1 ]"
ok "... repaired" test -f "C3/${chunks[2]}" -a ! -p "C3/${chunks[2]}"

# ---- 4. make: durable, replaces bad chunk files, the store follows the umask ----

gen_data big.img 600000 9
$CAFS make -q --store S0 i0.caibx big.img >/dev/null
mapfile -t mk < <(cd S0 && ls */*.cacnk | sort)
mkdir -p "S/${mk[0]%/*}" "S/${mk[1]%/*}"
: >"S/${mk[0]}"
mkfifo "S/${mk[1]}"
ok "make over an empty and a FIFO chunk file finishes" timeout 30 $CAFS make -q --store S i.caibx big.img
ok "... they are real chunks now" bash -c "test -s 'S/${mk[0]}' -a -f 'S/${mk[1]}' && cmp 'S/${mk[0]}' 'S0/${mk[0]}' && cmp 'S/${mk[1]}' 'S0/${mk[1]}'"
ok "... the store extracts right" bash -c "$CAFS extract --store S i.caibx out.img && cmp out.img big.img"
if command -v casync >/dev/null; then
	ok "... and casync reads it" bash -c "casync extract --store=S i.caibx out2.img && cmp out2.img big.img"
fi
ok "the store follows the umask (0755 dirs, 0444 chunks)" all_modes S 0755 0444

strace -f -qq -o trace -e trace=fsync,fdatasync,syncfs,rename,renameat,renameat2 \
	$CAFS make -q --store S2 i2.caibx big.img >/dev/null 2>&1
order=$(sed -n 's/^[0-9]* *//p' trace | grep -v 'resumed\|unfinished' |
	sed -n -e 's/^syncfs.*/syncfs/p' -e 's/^fsync.*/fsync/p' -e 's/^rename.*i2\.caibx.*/rename/p' | uniq | tr '\n' ' ')
ok "make: syncfs (chunks), fsync (index), rename, fsync (dir) [$order]" test "$order" = "syncfs fsync rename fsync "

mount_done_testing
