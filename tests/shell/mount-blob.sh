#!/bin/bash
# mount-blob.sh - `cafs mount` of a .caibx: one file equal to the image,
# read whole and at random, read-only, from local stores and file:// URLs;
# missing and corrupt chunks are EIO on that range only; start-up errors;
# the daemon mode, mount.cafs and mount -t fuse.cafs.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
need python3 casync

# 3 MiB of noise, 1 MiB of zeros (repeated chunks), 1.5 MiB of noise
gen_data "$T/a" 3145728 7
head -c 1048576 /dev/zero >>"$T/a"
gen_data "$T/b" 1572864 11
cat "$T/b" >>"$T/a"
mv "$T/a" "$T/data"
"$CAFS" make --store="$T/s" "$T/disk.caibx" "$T/data" >/dev/null

mnt=$T/mnt
mount_start "mount -f starts" "$mnt" "$T/log1" --store="$T/s" --cache="$T/cache" "$T/disk.caibx"
ok "one file, named after the index" test "$(ls -A "$mnt")" = disk
ok "size is the image's" test "$(stat -c %s "$mnt/disk")" = "$(stat -c %s "$T/data")"
ok "mode 0444 regular file, root 0555 dir" test "$(stat -c '%F %a' "$mnt/disk") $(stat -c '%F %a' "$mnt")" = \
	"regular file 444 directory 555"
ok "content equals the source" cmp "$mnt/disk" "$T/data"
ok "1000 random reads equal the source" rand_reads "$mnt/disk" "$T/data" 1000 1
ok "no such name: ENOENT" expect_errno ENOENT stat "$mnt/nope"
ok "cannot create files: EROFS" expect_errno EROFS touch "$mnt/new"
ok "cannot write the file: EROFS" expect_errno EROFS append "$mnt/disk"
ok "cannot remove the file: EROFS" expect_errno EROFS rm "$mnt/disk"
ok "cannot chmod: EROFS" expect_errno EROFS chmod "$mnt/disk"
ok "... and the file is unchanged" cmp "$mnt/disk" "$T/data"
ok "statfs: read-only, blocks cover the image" sh -c \
	"test \"\$(stat -f -c '%b %S' '$mnt')\" = \"$(( ($(stat -c %s "$T/data") + 4095) / 4096 )) 4096\""
"$CAFS" stats "$mnt" >"$T/stats" 2>&1
ok "cafs stats reports fetched chunks" grep -Eq '^chunks_fetched: [1-9]' "$T/stats"
ok "cafs stats reports no errors" grep -q '^chunk_errors: 0$' "$T/stats"
ok "no listed xattrs" test -z "$(getfattr -d -m - "$mnt/disk" 2>/dev/null)"
mount_stop "unmount, daemon exits 0" "$mnt"
ok "the cache holds the chunks" test "$(find "$T/cache" -name '*.cacnk' | wc -l)" -gt 5
fails "cafs stats on a non-mount" "$CAFS" stats "$T"

# The last of --cache and --no-cache wins
mount_start "--cache then --no-cache" "$mnt" "$T/log1b" --store="$T/s" --cache="$T/c2" --no-cache "$T/disk.caibx"
ok "... reads" cmp "$mnt/disk" "$T/data"
mount_stop "... unmount" "$mnt"
ok "... made no cache" test ! -e "$T/c2"

# casync's index and store; a file:// URL; the default store beside it
mkdir -p "$T/cs"
casync make --store="$T/cs/default.castr" "$T/cs/img.caibx" "$T/data" >/dev/null
mount_start "casync-made index over file:// (default store beside it)" "$mnt" "$T/log2" --no-cache "file://$T/cs/img.caibx"
ok "casync-made: content equals" cmp "$mnt/img" "$T/data"
mount_stop "casync-made: unmount" "$mnt"

# SIGTERM and SIGHUP unmount and exit 0 (SIGINT too, but a script's
# background jobs start with SIGINT ignored, and the daemon keeps that)
mount_start "mount for SIGTERM" "$mnt" "$T/log2b" -v --store="$T/s" --no-cache "$T/disk.caibx"
mount_kill "SIGTERM: unmounted, daemon exits 0" "$mnt" TERM
ok "... its handler said so" grep -q 'mount: SIGTERM: unmounting' "$T/log2b"
mount_start "mount for SIGHUP" "$mnt" "$T/log2c" -v --store="$T/s" --no-cache "$T/disk.caibx"
mount_kill "SIGHUP: unmounted, daemon exits 0" "$mnt" HUP
ok "... its handler said so" grep -q 'mount: SIGHUP: unmounting' "$T/log2c"
# a stop signal that arrives while the daemon is busy reading still ends it
mount_start "mount for a signal during reads" "$mnt" "$T/log2d" -v --store="$T/s" --no-cache "$T/disk.caibx"
(while cat "$mnt/disk" >/dev/null 2>&1; do :; done) &
reader=$!
sleep 0.3
mount_kill "SIGTERM during reads: unmounted, daemon exits 0" "$mnt" TERM
kill "$reader" 2>/dev/null
wait "$reader" 2>/dev/null
ok "... its handler said so" grep -q 'mount: SIGTERM: unmounting' "$T/log2d"

# Damage: a missing chunk and a corrupt one. Reads touching them fail with
# EIO; the rest still reads; the mount stays up.
cp -a "$T/s" "$T/bad"
mapfile -t chunks < <(find "$T/bad" -name '*.cacnk' | sort)
rm -f "${chunks[0]}"
printf 'garbage' >"${chunks[1]}"
mount_start "damaged store mounts" "$mnt" "$T/log3" --store="$T/bad" --no-cache "$T/disk.caibx"
ok "reading all of it fails with EIO" expect_errno EIO cat "$mnt/disk"
damaged="$(basename "${chunks[0]}" .cacnk) $(basename "${chunks[1]}" .cacnk)"
check_damage() {
	python3 - "$mnt/disk" "$T/data" "$T/disk.caibx" "$damaged" <<'PY'
import errno, os, sys
# Every chunk's range read on its own. Damaged chunks fail with EIO. The
# kernel reads whole pages, so a good chunk sharing a page with a damaged
# one may lose that page (EIO or a short, correct prefix); any other chunk
# reads whole and right.
path, ref, idx, damaged = sys.argv[1:5]
damaged = set(damaged.split())
raw = open(idx, 'rb').read()
items = raw[48 + 16:-40]  # index header, table header ... table tail
chunks, start = [], 0
for i in range(0, len(items), 40):
    end = int.from_bytes(items[i:i + 8], 'little')
    chunks.append((start, end, items[i + 8:i + 40].hex()))
    start = end
bad_pages = set()
for s, e, cid in chunks:
    if cid in damaged:
        bad_pages.update(range(s // 4096, (e - 1) // 4096 + 1))
want = open(ref, 'rb').read()
fd = os.open(path, os.O_RDONLY)
nbad = 0
for s, e, cid in chunks:
    near = any(p in bad_pages for p in range(s // 4096, (e - 1) // 4096 + 1))
    try:
        got = os.pread(fd, e - s, s)
    except OSError as err:
        if err.errno != errno.EIO or not near:
            sys.exit("chunk %s at %d: %s" % (cid, s, err))
        nbad += cid in damaged
        continue
    if cid in damaged:
        sys.exit("damaged chunk %s at %d read" % (cid, s))
    if got != want[s:s + len(got)] or (len(got) != e - s and not near):
        sys.exit("chunk %s at %d: wrong data (%d of %d bytes)" % (cid, s, len(got), e - s))
if nbad == 0:
    sys.exit("no damaged chunk was read")
PY
}
ok "EIO exactly on the damaged chunks' ranges, everything else reads" check_damage
ok "still mounted after the errors" is_mounted "$mnt"
ok "the error is logged once, not per read" test "$(grep -c 'read of disk' "$T/log3")" = 1
mount_stop "damaged: unmount, daemon exits 0" "$mnt"

# Start-up errors: one line, exit 1 (2 for usage)
mkdir -p "$T/m2"
mount_err() {
	local want=$1 rc=0
	shift
	"$CAFS" mount "$@" >"$T/err.out" 2>&1 || rc=$?
	[ "$rc" = "$want" ] && [ "$(wc -l <"$T/err.out")" = 1 ] && grep -q '^cafs: ' "$T/err.out" &&
		! is_mounted "$T/m2" || { cat "$T/err.out"; echo "exit $rc"; return 1; }
}
ok "missing index: one line, exit 1" mount_err 1 --store="$T/s" "$T/none.caibx" "$T/m2"
head -c 100 "$T/disk.caibx" >"$T/trunc.caibx"
ok "corrupt index: one line, exit 1" mount_err 1 --store="$T/s" "$T/trunc.caibx" "$T/m2"
ok "missing mountpoint: one line, exit 1" mount_err 1 --store="$T/s" "$T/disk.caibx" "$T/nodir"
ok "the same in the foreground" mount_err 1 -f --store="$T/s" "$T/none.caibx" "$T/m2"
ok "unknown URL scheme: exit 1" mount_err 1 --store="$T/s" "gopher://x/disk.caibx" "$T/m2"
fails "not an index name: usage error" "$CAFS" mount "$T/data" "$T/m2"
fails "bad option value: usage error" "$CAFS" mount --lru-size=lots "$T/disk.caibx" "$T/m2"

# Without -f: returns once the mount answers; the first read needs no wait.
ok "daemon mode returns 0" "$CAFS" mount --store="$T/s" --no-cache "$T/disk.caibx" "$mnt"
at_cleanup "fusermount3 -u -z '$mnt'"
ok "daemon mode: readable at once" cmp "$mnt/disk" "$T/data"
ok "daemon mode: unmount" fusermount3 -u "$mnt"

# `cafs SOURCE MOUNTPOINT`: mount is the default command
ok "cafs SOURCE MOUNTPOINT (no command word)" "$CAFS" "$T/disk.caibx" "$mnt" --store="$T/s" --no-cache
ok "... content equals" cmp "$mnt/disk" "$T/data"
ok "... unmount" fusermount3 -u "$mnt"

# Daemon mode keeps its messages with --log
ok "daemon mode with --log" "$CAFS" mount --log="$T/daemon.log" --store="$T/bad" --no-cache "$T/disk.caibx" "$mnt"
ok "... a damaged image fails to read: EIO" expect_errno EIO cat "$mnt/disk"
ok "... unmount" fusermount3 -u "$mnt"
ok "... the error is in the log" grep -Eq '^cafs: read of disk at [0-9]+: (a chunk is in no store|a chunk is corrupt)' \
	"$T/daemon.log"

# mount.cafs (mount(8)'s argument order, options through -o)
mkdir -p "$T/bin"
ln -s "$CAFS" "$T/bin/mount.cafs"
ln -s "$CAFS" "$T/bin/cafs"
ok "mount.cafs SOURCE DIR -o store=,no_cache" "$T/bin/mount.cafs" "$T/disk.caibx" "$mnt" \
	-o "ro,store=$T/s,no_cache"
ok "mount.cafs: content equals" cmp "$mnt/disk" "$T/data"
ok "mount.cafs: mounted read-only as fuse.cafs" sh -c \
	"grep ' $(cd "$mnt" && pwd -P) ' /proc/self/mountinfo | grep -q ' - fuse.cafs .* ro'"
ok "mount.cafs: unmount" fusermount3 -u "$mnt"

# mount -t fuse.cafs: mount(8) -> mount.fuse3 -> /bin/sh -c 'cafs SOURCE DIR -o ...'.
# mount(8) drops PATH, so cafs must be in the standard one: in a private
# mount namespace, put our binary over /usr/local/bin.
cat >"$T/mount-t.sh" <<EOF
trap 'umount -l "$mnt" 2>/dev/null' EXIT
mount --bind "$T/bin" /usr/local/bin || exit 1
mount -t fuse.cafs -o "store=$T/s,no_cache" "$T/disk.caibx" "$mnt" || exit 1
grep -q ' - fuse.cafs ' /proc/self/mountinfo || exit 1
cmp "$mnt/disk" "$T/data" || exit 1
umount "$mnt"
EOF
if unshare -m --propagation private true 2>/dev/null; then
	ok "mount -t fuse.cafs: mounts, reads, umounts" unshare -m --propagation private sh "$T/mount-t.sh"
else
	echo "# skipped mount -t fuse.cafs: cannot make a mount namespace"
fi

mount_done_testing
