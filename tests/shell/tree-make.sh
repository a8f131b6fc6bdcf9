#!/bin/bash
# tree-make.sh - `cafs make` of directories (.catar, .caidx) and `cafs digest`
# against casync, byte for byte, on the torture tree and under many flag sets.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
need casync python3 setfattr setfacl mknod
[ "$(id -u)" = 0 ] || skip_all "needs root (devices, owners, trusted xattrs)"
touch "$T/probe"
setfattr -n user.probe -v 1 "$T/probe" 2>/dev/null || skip_all "no user xattrs on $T"
setfacl -m u:4242:r "$T/probe" 2>/dev/null || skip_all "no ACLs on $T"

tree=$T/tree
bash "$top_srcdir/tests/fixtures/mktorture.sh" "$tree" >"$T/mktorture.log" 2>&1 ||
	{ cat "$T/mktorture.log"; echo "Bail out! mktorture.sh failed"; exit 1; }

# same_archive OPTS...: cafs and casync make the same .catar and print the same digest
same_archive() {
	rm -f "$T/c.catar" "$T/s.catar"
	casync make "$@" "$T/c.catar" "$tree" >"$T/c.out" 2>"$T/c.err" &&
		"$CAFS" make "$@" "$T/s.catar" "$tree" >"$T/s.out" 2>"$T/s.err" &&
		cmp "$T/c.catar" "$T/s.catar" && cmp "$T/c.out" "$T/s.out"
}

# ---- the smallest archive (reference section 12) ----
mkdir "$T/small"
printf 'hi\n' >"$T/small/a"
chmod 755 "$T/small"
chmod 644 "$T/small/a"
touch -d '2020-01-01T00:00:00Z' "$T/small/a" "$T/small"
ok "smallest archive: digest" test "$("$CAFS" make "$T/small.catar" "$T/small")" = \
	23a1ac3d4ec147f2685c8963dc1c05fb4ee78ca297d080419d83a4cffc57a900
ok "smallest archive: 229 bytes" test "$(stat -c %s "$T/small.catar")" = 229
ok "smallest archive: cafs digest DIR" test "$("$CAFS" digest "$T/small")" = \
	23a1ac3d4ec147f2685c8963dc1c05fb4ee78ca297d080419d83a4cffc57a900
mkdir "$T/emptydir"
"$CAFS" make "$T/empty.catar" "$T/emptydir" >/dev/null
ok "empty directory: 104 bytes" test "$(stat -c %s "$T/empty.catar")" = 104

# ---- the torture tree, .catar, under many flag sets ----
ok "catar: default flags" same_archive
for opts in --without=acl --without=xattrs --with=unix --without=all --digest=sha256 --exclude-nodump=no \
	--with=fat --with=fuse --without=privileged --with=sec-time --with=read-only \
	"--with=2sec-time --with=read-only" "--with=usec-time --with=symlinks" \
	"--with=32bit-uids --with=user-names" "--with=16bit-uids --with=permissions --with=acl" \
	"--with=xattrs --with=fcaps --with=selinux" --with=chattr --exclude-submounts=yes "--without=user-names" \
	--with=user-names --with=acl "--with=16bit-uids --with=user-names" "--with=flag-nodump --exclude-nodump=no"; do
	# shellcheck disable=SC2086
	ok "catar: $opts" same_archive $opts
done
ok "catar: mode of the output follows the input's rw bits" test "$(stat -c %a "$T/s.catar")" = 644

# ---- .caidx: index and store identical ----
for opts in "" --digest=sha256 --chunk-size=4096:16384:65536 --without=all; do
	rm -rf "$T/cs" "$T/ss" "$T/c.caidx" "$T/s.caidx"
	# shellcheck disable=SC2086
	casync make $opts --store="$T/cs" "$T/c.caidx" "$tree" >"$T/c.out" 2>"$T/c.err"
	# shellcheck disable=SC2086
	"$CAFS" make $opts --store="$T/ss" "$T/s.caidx" "$tree" >"$T/s.out" 2>"$T/s.err"
	ok "caidx ${opts:-default}: index identical" cmp "$T/c.caidx" "$T/s.caidx"
	ok "caidx ${opts:-default}: store identical" diff -r "$T/cs" "$T/ss"
	ok "caidx ${opts:-default}: digest printed" cmp "$T/c.out" "$T/s.out"
done
rm -rf "$T/cd" "$T/c.caidx"
mkdir "$T/cd"
casync make "$T/cd/x.caidx" "$tree" >/dev/null 2>&1
"$CAFS" make "$T/s.caidx" "$tree" >/dev/null
ok "caidx: default store beside the index" cmp "$T/cd/x.caidx" "$T/s.caidx"
ok "caidx: default store content" diff -r "$T/cd/default.castr" "$T/default.castr"

# ---- digests ----
want=$(casync digest "$tree")
ok "digest DIR equals casync's" test "$("$CAFS" digest "$tree")" = "$want"
casync make "$T/c.catar" "$tree" >/dev/null
ok "digest of a .catar equals casync's" test "$("$CAFS" digest "$T/c.catar")" = "$(casync digest "$T/c.catar")"
ok "digest of a .catar is that of the directory" test "$("$CAFS" digest "$T/c.catar")" = "$want"
ok "digest of a .caidx equals casync's" test "$("$CAFS" digest --store="$T/cd/default.castr" "$T/cd/x.caidx")" = \
	"$(casync digest --store="$T/cd/default.castr" "$T/cd/x.caidx")"
casync make --digest=sha256 "$T/c256.catar" "$tree" >/dev/null
ok "digest of a sha256 .catar" test "$("$CAFS" digest "$T/c256.catar")" = "$(casync digest "$T/c256.catar")"

# ---- .caexclude and --exclude-file=no (honoured, as upstream casync does since 2019) ----
"$CAFS" make --exclude-file=no "$T/nx.catar" "$tree" >/dev/null
casync list "$T/nx.catar" >"$T/nx.list"
ok "--exclude-file=no keeps excluded files" grep -q '^-rw-r--r-- excl/sub/spaced.tmp$' "$T/nx.list"
"$CAFS" make "$T/x.catar" "$tree" >/dev/null
casync list "$T/x.catar" >"$T/x.list"
ok "default keeps the rest" grep -q '^-rw-r--r-- excl/kept$' "$T/x.list"
fails "default excludes them" grep -q 'spaced.tmp' "$T/x.list"
ok "--exclude-file=no flags" test "$(od -An -tx8 -j16 -N8 "$T/nx.catar" | tr -d ' ')" = a0000001ffeffe26
casync make --exclude-file=no "$T/c.catar" "$tree/sizes" >/dev/null
"$CAFS" make --exclude-file=no "$T/s.catar" "$tree/sizes" >/dev/null
ok "--exclude-file=no identical without .caexclude files" cmp "$T/c.catar" "$T/s.catar"

# nested rules: anchored paths, '!' in a deeper file, character classes, dot files
ex=$T/ex
mkdir -p "$ex/a/b/c" "$ex/a/x/c" "$ex/b/a/b" "$ex/x/y" "$ex/.dot/a"
for f in a/b/c/f a/x/c/f a/f b/a/b/f x/y/f x/f .dot/a/f f .f a/b/.hid a/b/c/g.txt x/y/g.txt; do
	printf '%s\n' "$f" >"$ex/$f"
done
printf 'a/*/c\n!a/x/c\n/x/\n*.txt\n!x/y/g.txt\n.dot\nb/a/\n[a-b]/f\n' >"$ex/.caexclude"
printf 'c/\n' >"$ex/a/b/.caexclude"
printf '!f\n' >"$ex/b/.caexclude"
find "$ex" -exec touch -d 2020-01-01 {} +
casync make "$T/c.catar" "$ex" >/dev/null
"$CAFS" make "$T/s.catar" "$ex" >/dev/null
ok ".caexclude: nested rules as casync applies them" cmp "$T/c.catar" "$T/s.catar"
ok ".caexclude: a/x/c/f kept by '!'" sh -c "casync list '$T/s.catar' | grep -q ' a/x/c/f\$'"

# ---- virtual filesystems and submounts ----
v=$T/vt
mkdir -p "$v/proc" "$v/tmp" "$v/plain"
printf 'x\n' >"$v/plain/f"
if mount -t proc proc "$v/proc" 2>/dev/null; then
	at_cleanup "umount -l '$v/proc'"
	mount -t tmpfs -o size=1m tmpfs "$v/tmp" && at_cleanup "umount -l '$v/tmp'"
	printf 'on tmpfs\n' >"$v/tmp/t"
	touch -d '2021-01-01' "$v" "$v/tmp" "$v/plain" "$v/plain/f" "$v/tmp/t"
	for opts in "" --exclude-submounts=yes; do
		rm -f "$T/c.catar" "$T/s.catar"
		casync make $opts "$T/c.catar" "$v" >/dev/null 2>&1
		"$CAFS" make $opts "$T/s.catar" "$v" >/dev/null
		ok "virtual fs and mounts ${opts:-default}: identical" cmp "$T/c.catar" "$T/s.catar"
	done
	fails "proc is not descended into" grep -q cpuinfo "$T/s.catar"
fi

# ---- a FUSE filesystem (casync mount): FAT attributes and project ids are asked for there ----
if [ -e /dev/fuse ] && command -v mountpoint >/dev/null; then
	mkdir -p "$T/mnt"
	casync make --with=fuse "$T/fz.catar" "$tree" >/dev/null
	casync mount "$T/fz.catar" "$T/mnt" >/dev/null 2>&1 &
	mpid=$!
	at_cleanup "umount -l '$T/mnt'; kill $mpid"
	for _ in $(seq 1 50); do mountpoint -q "$T/mnt" && break; sleep 0.1; done
	if mountpoint -q "$T/mnt"; then
		ok "on FUSE: digest equals casync's" test "$("$CAFS" digest "$T/mnt")" = "$(casync digest "$T/mnt")"
		tree_saved=$tree
		tree=$T/mnt
		ok "on FUSE: --with=fat" same_archive --with=fat
		ok "on FUSE: --with=quota-projid --with=fat-attrs" same_archive --with=quota-projid --with=fat-attrs
		tree=$tree_saved
	fi
	umount "$T/mnt" 2>/dev/null || umount -l "$T/mnt" 2>/dev/null
	kill "$mpid" 2>/dev/null
	wait "$mpid" 2>/dev/null
fi

# ---- errors ----
fails "input must be a directory" "$CAFS" make "$T/f.catar" "$tree/types/file"
fails "missing input" "$CAFS" make "$T/f.catar" "$T/nonexistent"
fails "output directory must exist" "$CAFS" make "$T/no/such/dir/f.catar" "$tree/sizes"
mkdir -p "$T/bad"
printf 'ok\n' >"$T/bad/f"
printf '/\n' >"$T/bad/.caexclude"
fails "bad .caexclude line fails (as casync does)" "$CAFS" make "$T/bad.catar" "$T/bad"
ok "no output left behind" test -z "$(ls -A "$T" | grep -e '^bad.catar' -e '^\.#bad')"
fails "bad .caexclude: .caidx fails too" "$CAFS" make --store="$T/bads" "$T/bad.caidx" "$T/bad"
ok "bad .caexclude: no index left behind" test ! -e "$T/bad.caidx"
msg=$("$CAFS" make "$T/bad.catar" "$T/bad" 2>&1 >/dev/null)
ok "error names the file" test "$msg" = "cafs: $T/bad/.caexclude: Invalid argument"
mkdir -p "$T/full"
if mount -t tmpfs -o size=1m tmpfs "$T/full" 2>/dev/null; then
	at_cleanup "umount -l '$T/full'"
	msg=$("$CAFS" make "$T/full/x.catar" "$tree" 2>&1 >/dev/null)
	ok "full disk: the error names the output" test "$msg" = "cafs: $T/full/x.catar: No space left on device"
	ok "full disk: no temporary file left" test -z "$(ls -A "$T/full")"
	fails "full disk: .caidx fails too" "$CAFS" make --store="$T/full/s" "$T/full/x.caidx" "$tree"
fi
mkdir -p "$T/big"
printf 'x\n' >"$T/big/f"
chown 100000 "$T/big/f"
fails "16bit-uids refuses a larger uid" "$CAFS" make --with=16bit-uids "$T/big.catar" "$T/big"

# ---- deeper than casync's 64 levels ----
p=$T/deep
for i in $(seq 1 100); do p=$p/d; done
mkdir -p "$p"
ok "100 levels deep" "$CAFS" make "$T/deep.catar" "$T/deep"
ok "100 levels: digest of the archive is the printed one" test \
	"$("$CAFS" digest "$T/deep.catar")" = "$("$CAFS" digest "$T/deep")"

done_testing
