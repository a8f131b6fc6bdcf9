#!/bin/bash
# mount-xattr-off.sh - an image with no attribute to show answers getxattr
# ENOSYS once and the kernel asks no more (fs.c, op_getxattr): a warm
# `ls -lR`, whose `ls -l` probes security.selinux on every entry, leaves
# fuse_getxattr at 0 or 1 (it was one per entry); getfattr -d, tar --xattrs
# and cp -a still work and say nothing; a getxattr by name is "Operation
# not supported". `cafs stats` goes through FS_IOC_STATS on the root (fs.h)
# in every format, also in pages of a few bytes, and falls back to the
# xattrs for a server without the ioctl. An image with xattrs still shows
# them (and its user.cafs.stats). A takeover keeps the kernel's
# no-getxattr state, and the new server's stats read.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
need python3 getfattr setfattr tar
export CAFS_RUNTIME_DIR=$T/run # the takeover sockets: this test's own
mkdir -p "$CAFS_RUNTIME_DIR"

# two trees of 60 entries: one without any attribute, one with user.* xattrs
for t in plain attr; do
	mkdir -p "$T/$t/d1/d2" "$T/$t/e"
	for i in $(seq 1 20); do
		echo "$t $i" >"$T/$t/d1/f$i"
		echo "$i" >"$T/$t/d1/d2/g$i"
		ln -s "../d1/f$i" "$T/$t/e/l$i"
	done
done
XATTR=yes
setfattr -n user.k -v value-of-k "$T/attr/d1/f1" 2>/dev/null || XATTR=
for t in plain attr; do
	"$CAFS" make -q --store="$T/store" "$T/$t.caidx" "$T/$t" >/dev/null || exit 1
done
ok "both images have a sidecar" test -s "$T/plain.caidx.cameta" -a -s "$T/attr.caidx.cameta"

# modes and names of ls -lR (no "total" lines: block counts differ)
lsr() { (cd "$1" && ls -lR .) | awk '$1 != "total" { print $1, $NF }'; }
getxattrs() { "$CAFS" stats "$1" | awk '/^fuse_getxattr:/ { print $2 }'; }

# ---- no attribute anywhere ----
m=$T/m1
mount_start "tree mount of the image without attributes" "$m" "$T/log.1" -vv --store="$T/store" "$T/plain.caidx" ||
	exit 1
ok "... the server says getxattr is ENOSYS" grep -q 'getxattr is ENOSYS' "$T/log.1"
ls -lR "$m" >/dev/null
ls -lR "$m" >"$T/ls.out"
n=$(getxattrs "$m")
ok "two ls -lR of $(grep -c . "$T/ls.out") lines: fuse_getxattr is 0 or 1 (was $n)" test "${n:-x}" -le 1
ok "... and the listing is right" cmp <(lsr "$m") <(lsr "$T/plain")
ok "getfattr -n: Operation not supported" \
	sh -c "! getfattr -n user.k '$m/d1/f1' 2>'$T/gf.err' && grep -q 'Operation not supported' '$T/gf.err'"
ok "getfattr -R -d: no attribute, no complaint, exit 0" \
	sh -c "out=\$(getfattr -R -d -m - '$m' 2>&1) && test -z \"\$out\""
ok "tar --xattrs --acls --selinux: no warning, exit 0" \
	sh -c "out=\$(tar --xattrs --acls --selinux -cf '$T/t.tar' -C '$m' . 2>&1) && test -z \"\$out\""
ok "cp -a: no complaint, exit 0, same bytes" \
	sh -c "out=\$(cp -a '$m/d1' '$T/cp' 2>&1) && test -z \"\$out\" && diff -r '$T/cp' '$T/plain/d1'"
ok "fuse_getxattr still 0 or 1 after them" test "$(getxattrs "$m")" -le 1

# ---- cafs stats through the ioctl ----
ok "stats (text): through the ioctl, with the counters" sh -c "'$CAFS' stats '$m' | grep -q '^fuse_readdirplus: [1-9]'"
for f in openmetrics prometheus json; do
	"$CAFS" stats --format=$f "$m" >"$T/s.$f" 2>&1
	CAFS_TEST_STATS_PAGE=97 "$CAFS" stats --format=$f "$m" >"$T/p.$f" 2>&1
done
ok "stats --format=openmetrics: ends in # EOF, names the mount" \
	sh -c "tail -n 1 '$T/s.openmetrics' | grep -qx '# EOF' && grep -q 'mountpoint=\"$(realpath "$m")\"' '$T/s.openmetrics'"
ok "stats --format=prometheus" grep -q '^cafs_reads_total{' "$T/s.prometheus"
ok "stats --format=json parses" python3 -c "import json; json.load(open('$T/s.json'))"
ok "in pages of 97 bytes: the same documents (names and shape)" python3 - "$T" <<'EOF'
import json, re, sys
t = sys.argv[1]
shape = lambda s: re.sub(r'[0-9.e+-]+(\n|$)', r'N\1', s)
for f in ("openmetrics", "prometheus"):
    a, b = open("%s/s.%s" % (t, f)).read(), open("%s/p.%s" % (t, f)).read()
    if len(b) < 1000 or shape(a) != shape(b):
        sys.exit("%s differs in pages" % f)
a, b = json.load(open(t + "/s.json")), json.load(open(t + "/p.json"))
names = lambda d: sorted(x["name"] for x in d["metrics"]) if isinstance(d, dict) and "metrics" in d else sorted(map(str, d))
if names(a) != names(b):
    sys.exit("json differs in pages")
EOF
ok "--textfile through the ioctl" sh -c "'$CAFS' stats --textfile='$T/tf.prom' '$m' && grep -q '^cafs_reads_total{' '$T/tf.prom'"

# ---- a takeover keeps the kernel's no-getxattr state ----
ok "takeover" "$CAFS" mount --takeover "$m"
ls -lR "$m" >/dev/null
ok "... the new server's stats read; ls -lR sent it no getxattr" test "$(getxattrs "$m")" = 0
ok "... the listing is right" cmp <(lsr "$m") <(lsr "$T/plain")
mount_stop "unmount" "$m"

# ---- an image with xattrs ----
m=$T/m2
mount_start "tree mount of the image with xattrs" "$m" "$T/log.2" -vv --store="$T/store" "$T/attr.caidx" || exit 1
if [ -n "$XATTR" ]; then
	ok "... the server answers getxattr" grep -q 'getxattr is answered' "$T/log.2"
	ok "... getfattr shows the xattr" test "$(getfattr --absolute-names -n user.k --only-values "$m/d1/f1")" = value-of-k
	ok "... getfattr -d too" sh -c "getfattr --absolute-names -d '$m/d1/f1' | grep -qx 'user.k=\"value-of-k\"'"
	ok "... and user.cafs.stats" sh -c "getfattr -n user.cafs.stats --only-values '$m' | grep -q '^fuse_getxattr: [1-9]'"
else
	skip "... the xattr shows" "no user xattrs on $T"
fi
ok "... cafs stats through the ioctl" sh -c "'$CAFS' stats --format=json '$m' | grep -q cafs_reads"
mount_stop "unmount" "$m"

# ---- a server without the ioctl: cafs stats reads the xattrs ----
m=$T/m3
CAFS_TEST_NO_STATS_IOCTL=1 mount_start "a server without FS_IOC_STATS" "$m" "$T/log.3" --store="$T/store" \
	"$T/attr.caidx" || exit 1
if [ -n "$XATTR" ]; then
	ok "... cafs stats falls back to the xattr (text, json)" sh -c "'$CAFS' stats '$m' | grep -q '^fuse_getxattr:' &&
		'$CAFS' stats --format=json '$m' | python3 -c 'import json, sys; json.load(sys.stdin)'"
else
	skip "... cafs stats falls back to the xattr" "no user xattrs on $T"
fi
mount_stop "unmount" "$m"
ok "not a mount: 'not a cafs mount'" \
	sh -c "'$CAFS' stats '$T/plain' 2>'$T/err'; test \$? = 1 && grep -q 'not a cafs mount' '$T/err'"

# ---- a blob mount: no xattrs either ----
"$GEN" 300K 7 >"$T/blob"
"$CAFS" make -q --store="$T/store" "$T/blob.caibx" "$T/blob" >/dev/null || exit 1
m=$T/m4
mount_start "blob mount" "$m" "$T/log.4" --store="$T/store" "$T/blob.caibx" || exit 1
ok "... reads right" cmp "$m/blob" "$T/blob"
ok "... stats through the ioctl" sh -c "'$CAFS' stats '$m' | grep -q '^bytes_read: 307200'"
mount_stop "unmount" "$m"
mount_done_testing
