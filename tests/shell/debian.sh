#!/bin/bash
# debian.sh - what the Debian package ships, checked without building it
# (./setup.sh check --full builds, lintians and installs it: docs/systemd.md):
# every systemd unit passes `systemd-analyze verify` in a scratch root
# holding the units, the built cafs as /usr/bin/cafs and cafs(1), and a unit
# with a missing command or a bad value is refused; the tmpfiles line makes
# the system cache 0700 root (tightening a loose one), and cafs uses it as a
# cache; debian/libcafs2.symbols is exactly what core/api/libcafs.sym
# generates (a name added to the script alone is told); the package's
# version is configure.ac's.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
need systemd-analyze systemd-tmpfiles

S=$top_srcdir/systemd
units=(cafs-mount@.service cafs-prune.service cafs-prune.timer)

# a root with what the units name: /bin/sh, /usr/bin/cafs, the system's own
# units (sysinit.target, ...), the man page their Documentation= names
R=$T/root
mkdir -p "$R/usr/bin" "$R/usr/lib/systemd" "$R/usr/share/man/man1"
ln -s usr/bin "$R/bin"
ln -s usr/lib "$R/lib"
cp -a /usr/lib/systemd/system "$R/usr/lib/systemd/"
cp "$(readlink -f /bin/sh)" "$R/usr/bin/sh"
cp "$CAFS" "$R/usr/bin/cafs"
cp "$top_srcdir/docs/cafs.1" "$R/usr/share/man/man1/"
for u in "${units[@]}"; do cp "$S/$u" "$R/usr/lib/systemd/system/"; done

# verify UNIT...: systemd-analyze verify in $R, which must exit 0 and say
# nothing (a value it cannot parse is only a warning to it, not to us)
verify() {
	local out rc=0
	out=$(MANPATH=$R/usr/share/man systemd-analyze verify --root="$R" "$@" 2>&1) || rc=$?
	printf '%s\n' "$out"
	[ "$rc" -eq 0 ] && [ -z "$out" ]
}
ok "systemd-analyze verify: cafs-mount@rootfs.service (the template, one instance)" verify cafs-mount@rootfs.service
ok "systemd-analyze verify: cafs-prune.service, cafs-prune.timer" verify cafs-prune.service cafs-prune.timer
ok "... the prune timer fires daily" \
	grep -qx 'OnCalendar=daily' "$S/cafs-prune.timer"
mv "$R/usr/bin/cafs" "$R/usr/bin/cafs.away"
fails "... refused: a unit whose command is missing" verify cafs-prune.service
mv "$R/usr/bin/cafs.away" "$R/usr/bin/cafs"
sed -i 's/^Restart=on-failure$/Restart=sometimes/' "$R/usr/lib/systemd/system/cafs-mount@.service"
fails "... refused: a value systemd cannot parse (Restart=sometimes)" verify cafs-mount@rootfs.service
cp "$S/cafs-mount@.service" "$R/usr/lib/systemd/system/"
ok "... the restored unit passes again" verify cafs-mount@rootfs.service

# the unit's ExecStartPre as sh runs it: a plain directory is left alone, a
# missing one is made
pre=$(sed -n "s/^ExecStartPre=\/bin\/sh -c '\(.*\)'\$/\1/p" "$S/cafs-mount@.service" | sed 's/\$\$/$/g')
ok "ExecStartPre makes a missing mountpoint" \
	bash -c 'MOUNTPOINT=$1 sh -c "$2" && test -d "$1"' _ "$T/mp/deep" "$pre"
touch "$T/mp/deep/keep"
ok "... and leaves an existing one as it is" \
	bash -c 'MOUNTPOINT=$1 sh -c "$2" && test -f "$1/keep"' _ "$T/mp/deep" "$pre"

# tmpfiles: the system cache, 0700 root
TR=$T/tmproot
mkdir -p "$TR"
ok "systemd-tmpfiles --create --root: the tmpfiles line applies" \
	systemd-tmpfiles --create --root="$TR" "$S/tmpfiles.d/cafs.conf"
ok "... /var/cache/cafs is a directory, mode 0700, owner root:root" \
	test "$(stat -c '%F %a %U:%G' "$TR/var/cache/cafs")" = "directory 700 root:root"
chmod 0755 "$TR/var/cache/cafs"
ok "... a cache made loose (0755) is made private again" \
	bash -c 'systemd-tmpfiles --create --root="$1" "$2" && test "$(stat -c %a "$1/var/cache/cafs")" = 700' \
	_ "$TR" "$S/tmpfiles.d/cafs.conf"
if [ "$(id -u)" -eq 0 ]; then
	ok "... and cafs takes it as its cache" "$CAFS" cache stat --cache="$TR/var/cache/cafs"
else
	skip "... and cafs takes it as its cache" "not root (the directory is root's)"
fi

# symbols: one line per libcafs.sym name under its node, and the node
gen_symbols() { # SYM: the symbols file SYM makes
	echo "libcafs.so.2 libcafs2 #MINVER#"
	echo "* Build-Depends-Package: libcafs-dev"
	perl -0pe 's{/\*.*?\*/}{}gs' "$1" | awk -v ver=0.1.0 '
		/^[A-Z][A-Z0-9_]*[ \t]*\{/ { node = $1; print " " node "@" node " " ver; next }
		/^[ \t]*cafs_[a-z0-9_]+;/ { s = $1; sub(/;$/, "", s); print " " s "@" node " " ver }' |
		LC_ALL=C sort
}
same_symbols() { diff -u <(gen_symbols "$1") "$2"; }
ok "debian/libcafs2.symbols is what core/api/libcafs.sym generates" \
	same_symbols "$top_srcdir/core/api/libcafs.sym" "$top_srcdir/debian/libcafs2.symbols"
sed 's/^\tcafs_version;$/&\n\tcafs_new_thing;/' "$top_srcdir/core/api/libcafs.sym" >"$T/planted.sym"
fails "... a name added to libcafs.sym alone is told" \
	same_symbols "$T/planted.sym" "$top_srcdir/debian/libcafs2.symbols"
# the soname's number is libtool's CURRENT - AGE (Makefile.am -version-info)
vi=$(sed -n 's/.*-version-info \([0-9]*\):[0-9]*:\([0-9]*\).*/\1 \2/p' "$top_srcdir/Makefile.am")
major=$((${vi% *} - ${vi#* }))
ok "... it is for the library's soname, libcafs.so.$major, in package libcafs$major" \
	grep -qx "libcafs.so.$major libcafs$major #MINVER#" "$top_srcdir/debian/libcafs2.symbols"

# one version: configure.ac's AC_INIT and debian/changelog's top entry
acver=$(sed -n 's/^AC_INIT(\[cafs\], \[\([^]]*\)\].*/\1/p' "$top_srcdir/configure.ac")
debver=$(sed -n '1s/^cafs (\([^)]*\)).*/\1/p' "$top_srcdir/debian/changelog")
ok "debian/changelog's version ($debver) is configure.ac's ($acver)" test -n "$acver" -a "$acver" = "$debver"

done_testing
