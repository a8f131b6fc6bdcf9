#!/bin/bash
# trust-xattr.sh - the xattr policy (core/catar/xattr_policy.h): extract applies
# and the mount serves only user.*, trusted.* (root only), fcaps from the
# FCAPS record, SELinux labels on a SELinux host, ACLs from the ACL
# records; trusted.overlay.* / user.overlay.* only when asked
# (extract --overlay-xattrs, mount -o overlay_xattrs); security.* and
# system.* in generic XATTR records never. An overlayfs stacked on the
# mount does not take the archive's trusted.overlay.opaque.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
need python3 setfattr getfattr setpriv
[ "$(id -u)" = 0 ] || skip_all "needs root (trusted xattrs, overlayfs)"
touch "$T/probe"
setfattr -n trusted.probe -v 1 "$T/probe" 2>/dev/null || skip_all "no trusted xattrs on $T"
chmod 755 "$T" # nobody reads the archive and the mount below

CAPS=0x0100000200200000000000000000000000000000 # vfs_cap_data v2: cap_net_raw, effective
# an ACL with a named user (the kernel keeps it as an xattr, unlike one the mode says all of)
ACL=0x0200000001000700ffffffff02000400e803000004000400ffffffff10000400ffffffff20000400ffffffff

src=$T/src
mkdir -p "$src/d" "$src/plain"
printf 'f\n' >"$src/f"
setfattr -n user.x -v 1 "$src/f"
setfattr -n user.overlay.x -v ov "$src/f"
setfattr -n trusted.foo -v t "$src/f"
setfattr -n trusted.overlay.opaque -v y "$src/d"
printf 'in d\n' >"$src/d/mine"
# generic XATTR records casync never writes: user.* names of the same
# length, renamed in the archive's bytes below
printf 'c\n' >"$src/cap"
setfattr -n user.zzzzcapability -v "$CAPS" "$src/cap"   # -> security.capability
printf 's\n' >"$src/sel"
setfattr -n user.zzzzselinux -v "system_u:object_r:x_t:s0" "$src/sel" # -> security.selinux
printf 'a\n' >"$src/acl"
setfattr -n user.zzzzzzzzzzzzzzzzzz -v "$ACL" "$src/acl" # -> system.posix_acl_access
# the records of their own: FCAPS and SELINUX
printf 'k\n' >"$src/fc"
setfattr -n security.capability -v "$CAPS" "$src/fc"
printf 'l\n' >"$src/lab"
setfattr -n security.selinux -v "system_u:object_r:lab_t:s0" "$src/lab" 2>/dev/null
touch -d '2000-01-01' "$src"/* "$src"

"$CAFS" make "$T/clean.catar" "$src" >/dev/null
python3 - "$T/clean.catar" "$T/a.catar" <<'PY'
import sys
b = open(sys.argv[1], 'rb').read()
for old, new in ((b'user.zzzzcapability\0', b'security.capability\0'),
                 (b'user.zzzzselinux\0', b'security.selinux\0'),
                 (b'user.zzzzzzzzzzzzzzzzzz\0', b'system.posix_acl_access\0')):
    assert len(old) == len(new) and b.count(old) == 1, old
    b = b.replace(old, new)
open(sys.argv[2], 'wb').write(b)
PY
ok "the crafted archive is valid (list, mtree describe it)" sh -c "'$CAFS' list '$T/a.catar' >/dev/null && '$CAFS' mtree '$T/a.catar' >/dev/null"

# names NODE: the xattr names getfattr shows, space-separated
names() { getfattr -h --absolute-names -d -m - "$1" 2>/dev/null | sed -n 's/=.*//p' | grep -v '^#' | sort | tr '\n' ' '; }
val() { getfattr -h --absolute-names --only-values -n "$2" "$1" 2>/dev/null; }

selinux=no
[ -e /sys/fs/selinux/enforce ] && selinux=yes
lab_names="security.selinux "
[ $selinux = yes ] || lab_names=""

# ---- extract as root ----
"$CAFS" extract "$T/a.catar" "$T/x" 2>"$T/x.err"
ok "extract succeeds" test $? = 0 -a -d "$T/x"
ok "user.* and trusted.* are applied, user.overlay.* is not" test "$(names "$T/x/f")" = "trusted.foo user.x "
ok "trusted.overlay.opaque is not applied" test "$(names "$T/x/d")" = ""
ok "security.capability from a generic XATTR record is not applied" test "$(names "$T/x/cap")" = ""
ok "security.selinux from a generic XATTR record is not applied" test "$(names "$T/x/sel")" = ""
ok "system.posix_acl_access from a generic XATTR record is not applied" test "$(names "$T/x/acl")" = ""
ok "security.capability from the FCAPS record is applied" test "$(names "$T/x/fc")" = "security.capability "
ok "security.selinux from the SELINUX record: applied only with SELinux on ($selinux)" \
	test "$(names "$T/x/lab")" = "$lab_names"
nskip=5
[ $selinux = yes ] || nskip=$((nskip + 1))
ok "one warning counting what was skipped" sh -c "test \$(wc -l <'$T/x.err') = 1 &&
	grep -q '^cafs: warning: $nskip extended attributes skipped by policy: ' '$T/x.err'"
"$CAFS" extract -v -v "$T/a.catar" "$T/xv" 2>"$T/xv.err"
ok "a debug line per skipped attribute" test "$(grep -c 'extended attribute .* skipped: ' "$T/xv.err")" = $nskip
ok "... naming the path and why" grep -q "/xv/d: extended attribute trusted.overlay.opaque skipped: overlayfs attribute" "$T/xv.err"

# ---- extract --overlay-xattrs ----
ok "extract --overlay-xattrs" "$CAFS" extract --overlay-xattrs "$T/a.catar" "$T/xo"
ok "... applies trusted.overlay.opaque" test "$(val "$T/xo/d" trusted.overlay.opaque)" = y
ok "... and user.overlay.*" test "$(names "$T/xo/f")" = "trusted.foo user.overlay.x user.x "
ok "... but still no generic security.*" test "$(names "$T/xo/cap")$(names "$T/xo/sel")" = ""

# ---- extract as another user: no trusted.* ----
mkdir "$T/nb" && chown 65534:65534 "$T/nb"
setpriv --reuid=65534 --regid=65534 --clear-groups "$CAFS" extract "$T/a.catar" "$T/nb/x" 2>"$T/nb.err"
ok "extract as nobody succeeds" test $? = 0 -a -f "$T/nb/x/f"
ok "... with user.x and without trusted.foo" test "$(names "$T/nb/x/f")" = "user.x "
ok "... saying trusted.foo was skipped" grep -q "skipped by policy: .*trusted.foo" "$T/nb.err"

# ---- the mount ----
mnt=$T/mnt
mount_start "mount the archive" "$mnt" "$T/mnt.log" "$T/a.catar"
ok "mount: user.* and trusted.* are served to root, user.overlay.* is not" test "$(names "$mnt/f")" = "trusted.foo user.x "
ok "mount: trusted.overlay.opaque is not listed" test "$(names "$mnt/d")" = ""
ok "mount: nor given by name" sh -c "! getfattr -n trusted.overlay.opaque '$mnt/d' 2>&1 | grep -q opaque="
ok "mount: generic security.capability / selinux / system.* are not served" \
	test "$(names "$mnt/cap")$(names "$mnt/sel")$(names "$mnt/acl")" = ""
ok "mount: nor given by name (security.capability)" sh -c "! getfattr -n security.capability '$mnt/cap' 2>/dev/null | grep -q ."
ok "mount: the FCAPS record's security.capability is" test "$(names "$mnt/fc")" = "security.capability "
ok "mount: security.selinux only with SELinux on ($selinux)" test "$(names "$mnt/lab")" = "$lab_names"
ok "mount: a user sees user.x, not trusted.foo's name" \
	test "$(setpriv --reuid=65534 --regid=65534 --clear-groups getfattr --absolute-names -d -m - "$mnt/f" | sed -n 's/=.*//p' | grep -v '^#' | tr '\n' ' ')" = "user.x "
ok "mount: nor its value" sh -c "! setpriv --reuid=65534 --regid=65534 --clear-groups getfattr -n trusted.foo '$mnt/f' 2>/dev/null | grep -q ."

# ---- overlayfs over the mount: the archive's opaque flag is not taken ----
if grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null; then
	mkdir -p "$T/base/d" "$T/ov"
	printf 'below\n' >"$T/base/d/below"
	if mount -t overlay overlay -o "lowerdir=$mnt:$T/base" "$T/ov" 2>"$T/ov.err"; then
		at_cleanup "umount -l '$T/ov'"
		ok "overlayfs over the mount: d/ is not opaque (the lower layer's file shows)" test -f "$T/ov/d/below"
		ok "... and the mount's own file too" test -f "$T/ov/d/mine"
		umount "$T/ov"
	else
		skip "overlayfs over the mount" "$(head -1 "$T/ov.err")"
	fi
fi
mount_stop "unmount" "$mnt"

mount_start "mount -o overlay_xattrs" "$mnt" "$T/mnt2.log" -o overlay_xattrs "$T/a.catar"
ok "mount -o overlay_xattrs: trusted.overlay.opaque is served" test "$(val "$mnt/d" trusted.overlay.opaque)" = y
ok "... and user.overlay.x" test "$(names "$mnt/f")" = "trusted.foo user.overlay.x user.x "
if [ -d "$T/base/d" ] && mount -t overlay overlay -o "lowerdir=$mnt:$T/base" "$T/ov" 2>/dev/null; then
	at_cleanup "umount -l '$T/ov'"
	ok "... and an overlay over it takes d/ as opaque (so the option matters)" test ! -e "$T/ov/d/below" -a -f "$T/ov/d/mine"
	umount "$T/ov"
fi
mount_stop "unmount" "$mnt"

# ---- what describes the archive is unaffected ----
ok "cafs mtree: the crafted archive reads whole (same as the clean one but the names)" \
	test "$("$CAFS" mtree "$T/a.catar" | wc -l)" = "$("$CAFS" mtree "$T/clean.catar" | wc -l)"

mount_done_testing
