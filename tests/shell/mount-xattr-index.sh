#!/bin/bash
# mount-xattr-index.sh - the xattrs of entries with big metadata come from
# an index of their XATTR records (fs/tree.c): a getxattr reads one value,
# a listxattr the names, with and without the metadata sidecar. Checked
# against the source tree: the same names in the same order (records by
# name, then ACLs), the same values, the policy (user.overlay.* hidden),
# and getxattr(2)/listxattr(2) size rules (0 asks the length, too small is
# ERANGE, a missing name ENODATA); each big entry is loaded once.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
need python3 setfattr getfattr
cd "$T"
mkdir -p src/d
printf 'hello\n' >src/f
setfattr -n user.probe -v 1 src/f 2>/dev/null || skip_all "no user xattrs on $T"
setfattr -x user.probe src/f
printf 'small\n' >src/small
printf 'inner\n' >src/d/inner
python3 - <<'EOF' || exit 1
import os
def put(p, n, size):
    for i in range(n):
        os.setxattr(p, 'user.k%03d' % i, bytes((i + j) % 251 for j in range(size(i))))
# (ext4 keeps an inode's xattrs in one 4 KiB block)
put('src/f', 20, lambda i: (i * 37) % 150)     # thin: > 1 KiB of metadata
put('src/d', 18, lambda i: 80 + i)            # a directory, thin
put('src/d/inner', 20, lambda i: 3)           # < 1 KiB, 20 records
put('src/small', 2, lambda i: 1)
os.setxattr('src/f', 'user.overlay.x', b'hidden')  # the policy hides it
os.setxattr('src/f', 'user.empty', b'')
EOF
# ACLs, where the file system keeps them: they come after the records
acl=no
if setfacl -m u:1234:r src/f 2>/dev/null && setfacl -d -m u:1234:rx src/d 2>/dev/null; then
	acl=yes
fi

ok "cafs make writes the image and its sidecar" sh -c "'$CAFS' make --store=s.castr img.caidx src >/dev/null && test -s img.caidx.cameta"
mkdir nosc
cp img.caidx nosc/

# the checks, in python: the mount against the source
cat >check.py <<'EOF'
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
mnt, src = sys.argv[1], sys.argv[2]
def want(p):
    names = [n for n in os.listxattr(p) if n.startswith('user.') and not n.startswith('user.overlay.')]
    acls = [n for n in ('system.posix_acl_access', 'system.posix_acl_default') if n in os.listxattr(p)]
    return sorted(names) + acls
def raw_list(p, size):
    buf = ctypes.create_string_buffer(max(size, 1))
    k = libc.listxattr(p.encode(), buf if size else None, ctypes.c_size_t(size))
    return (k, ctypes.get_errno(), buf.raw[:max(k, 0)])
def raw_get(p, n, size):
    buf = ctypes.create_string_buffer(max(size, 1))
    k = libc.getxattr(p.encode(), n.encode(), buf if size else None, ctypes.c_size_t(size))
    return (k, ctypes.get_errno(), buf.raw[:max(k, 0)])
bad = []
for rel in ('.', 'f', 'd', 'd/inner', 'small'):
    m, s = os.path.join(mnt, rel), os.path.join(src, rel)
    names = want(s)
    got = list(os.listxattr(m))
    if got != names:
        bad.append('%s: names %s, want %s' % (rel, got, names))
        continue
    for n in names:
        if n.startswith('user.') and os.getxattr(m, n) != os.getxattr(s, n):
            bad.append('%s: %s differs' % (rel, n))
    if 'system.posix_acl_access' in names and os.getxattr(m, 'system.posix_acl_access') != os.getxattr(s, 'system.posix_acl_access'):
        bad.append('%s: ACL differs' % rel)
    total = sum(len(n) + 1 for n in names)
    k, e, _ = raw_list(m, 0)
    if k != total:
        bad.append('%s: listxattr(0) = %d, want %d' % (rel, k, total))
    if total:
        k, e, _ = raw_list(m, total - 1)
        if k != -1 or e != errno.ERANGE:
            bad.append('%s: listxattr(total - 1) = %d errno %d' % (rel, k, e))
        k, e, b = raw_list(m, total)
        if k != total or b != b''.join(n.encode() + b'\0' for n in names):
            bad.append('%s: listxattr(total) = %d' % (rel, k))
    for n in [x for x in names if x.startswith('user.')][:40]:
        v = os.getxattr(s, n)
        k, e, _ = raw_get(m, n, 0)
        if k != len(v):
            bad.append('%s: getxattr(%s, 0) = %d, want %d' % (rel, n, k, len(v)))
        if len(v) > 1:  # (size 0 asks the length)
            k, e, _ = raw_get(m, n, len(v) - 1)
            if k != -1 or e != errno.ERANGE:
                bad.append('%s: getxattr(%s, size - 1) = %d errno %d' % (rel, n, k, e))
        k, e, b = raw_get(m, n, len(v))
        if k != len(v) or b != v:
            bad.append('%s: getxattr(%s, size) wrong' % (rel, n))
    for n in ('user.nope', 'user.k0005x', 'user.a', 'user.zzz', 'user.overlay.x'):
        k, e, _ = raw_get(m, n, 100)
        if k != -1 or e != errno.ENODATA:
            bad.append('%s: getxattr(%s) = %d errno %d, want ENODATA' % (rel, n, k, e))
print('\n'.join(bad))
sys.exit(1 if bad else 0)
EOF

for kind in sidecar nosidecar; do
	idx=img.caidx
	[ $kind = nosidecar ] && idx=nosc/img.caidx
	if mount_start "$kind: mount" "m.$kind" "log.$kind" --store s.castr "$idx"; then
		ok "$kind: names, values, policy and size rules as the source (ACLs: $acl)" python3 check.py "m.$kind" src
		ok "$kind: twice (from the records cache)" python3 check.py "m.$kind" src
		loads=$("$CAFS" stats "m.$kind" | awk '/^metadata_loads:/ { print $2 }')
		if [ $kind = sidecar ]; then
			ok "sidecar: no entry read from the image ($loads)" test "$loads" = 0
		else
			# f and d have more than 1 KiB of metadata: each read once
			ok "no sidecar: the two big entries read once each ($loads)" test "$loads" = 2
		fi
		mount_stop "$kind: unmounts" "m.$kind"
	fi
done
mount_done_testing
