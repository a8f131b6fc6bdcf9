#!/bin/bash
# trust-memory.sh - the memory budget (cafs(1), SECURITY, "Memory budget")
# holds whatever the archive:
#  - a 120-deep chain of directories with 8 MiB of xattrs each, whose index
#    and store are a few KB (every level one repeated chunk): list, extract
#    and mtree refuse it in one line with a peak RSS under 256 MiB (a GiB
#    before); a mount serves it, stays up, and its VmHWM stays under 256 MiB;
#  - a chunk padded with 50 MiB of zstd skippable frames on an HTTP store
#    is refused and never reaches the cache; once the store is fixed the
#    cache holds the good chunk; an xz chunk whose header asks for a 64 MiB
#    dictionary is refused, one with casync's 8 MiB still reads;
#  - the accepted cases: a tree with large xattrs and long names still
#    round-trips through make, extract and a mount.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
. "$top_srcdir/tests/lib-mount.sh"
. "$top_srcdir/tests/lib-http.sh"
need python3 zstd getfattr setfattr
[ -x /usr/bin/time ] || skip_all "/usr/bin/time (Debian package time) is not installed"

BUDGET_KB=$((256 * 1024))
HOSTILE=$top_srcdir/tests/gen-hostile.py
cd "$T"

# peak RSS in KiB of a command: "rc kib" (its output in $1.out, errors in $1.err)
peak() {
	local name=$1
	shift
	/usr/bin/time -o "$name.time" -f %M "$@" >"$name.out" 2>"$name.err"
	echo "$? $(tail -n 1 "$name.time")"
}
one_line() { [ "$(wc -l <"$1")" -eq 1 ] && grep -q '^cafs: ' "$1"; }

# ---- the hostile archive ----
python3 "$HOSTILE" deep "$T" 120 8000 || exit 1
ok "hostile archive: index and store are a few KB" \
	test "$(stat -c %s deep.caidx)" -lt 8192 -a "$(du -sb deep.castr | cut -f1)" -lt 65536

for cmd in list mtree; do
	read -r rc kb < <(peak "$cmd" "$CAFS" "$cmd" --store deep.castr deep.caidx)
	ok "$cmd: refused (exit $rc)" test "$rc" -ne 0
	ok "... in one line: $(head -c 120 "$cmd.err")" one_line "$cmd.err"
	ok "... peak RSS ${kb} KiB under the budget" test "$kb" -lt "$BUDGET_KB"
done
mkdir out
read -r rc kb < <(peak extract "$CAFS" extract --store deep.castr deep.caidx out/x)
ok "extract: refused (exit $rc)" test "$rc" -ne 0
ok "... in one line: $(head -c 120 extract.err)" one_line extract.err
ok "... peak RSS ${kb} KiB under the budget" test "$kb" -lt "$BUDGET_KB"

# the mount: random access keeps a budget for nodes with big metadata
# (past it they are thin and read again), so it serves the archive
if mount_start "mount the hostile archive" mnt mount.log --store deep.castr deep.caidx; then
	mpid=$(mount_server_pid mnt) # the server, not its keeper
	find mnt >find.out 2>find.err
	ok "find walks it (or fails in the bad part only)" test "$(grep -c . find.out)" -ge 1
	ls -R mnt >/dev/null 2>&1
	deepest=$(tail -n 1 find.out)
	ok "the deepest directory's xattrs read (a thin node, read again)" \
		bash -c "getfattr -n user.x00000 --only-values '$deepest' | head -c 4 | grep -qx vvvv"
	ok "the mount is still up" is_mounted mnt
	ok "the root still lists" test "$(ls mnt)" = d
	hwm=$(awk '/^VmHWM/ { print $2 }' /proc/"$mpid"/status)
	ok "mount VmHWM ${hwm} KiB under the budget" test "$hwm" -lt "$BUDGET_KB"
	mount_stop "unmount" mnt
fi

# ---- a padded chunk on an HTTP store ----
mkdir -p src www
"$GEN" 37K 5 >src/f
printf 'small\n' >src/g
"$CAFS" make -q --store www/store www/p.caidx src >/dev/null || exit 1
good=$(find www/store -name '*.cacnk' -size +30k | head -n 1)
ok "the archive has a ~37 KB chunk" test -n "$good"
cp "$good" good.cacnk
python3 "$HOSTILE" pad "$good" 50
ok "... padded with 50 MiB of skippable frames" test "$(stat -c %s "$good")" -gt $((50 << 20))
nginx_start www || exit 1
U=$NGINX_URL
read -r rc kb < <(peak padded "$CAFS" extract --cache C --store "$U/store" "$U/p.caidx" pout)
ok "extract with the padded chunk: refused (exit $rc)" test "$rc" -ne 0
ok "... in one line: $(head -c 120 padded.err)" one_line padded.err
ok "... the padded chunk is not in the cache" bash -c "! find C -name '$(basename "$good")' | grep -q ."
ok "... nothing big in the cache" test -z "$(find C -name '*.cacnk' -size +1M 2>/dev/null)"
read -r rc kb < <(peak padlocal "$CAFS" extract --cache C --store www/store www/p.caidx lout)
ok "... from a local store too (exit $rc)" test "$rc" -ne 0
ok "... in one line: $(head -c 120 padlocal.err)" one_line padlocal.err
ok "... still not in the cache" bash -c "! find C -name '$(basename "$good")' | grep -q ."
cp good.cacnk "$good"
ok "the store fixed: extract works" bash -c "$CAFS extract --cache C --store '$U/store' '$U/p.caidx' pout2 && cmp pout2/f src/f"
ok "... the cache holds the good chunk" cmp good.cacnk "C/$(basename "$(dirname "$good")")/$(basename "$good")"

# ---- xz chunks: the decoder's memory is capped ----
zstd -q -d -c good.cacnk >good.raw
python3 "$HOSTILE" xz good.raw "$good" 64
read -r rc kb < <(peak xz64 "$CAFS" extract --store www/store www/p.caidx xout)
ok "an xz chunk asking for a 64 MiB dictionary: refused (exit $rc)" test "$rc" -ne 0
ok "... in one line: $(head -c 120 xz64.err)" one_line xz64.err
python3 "$HOSTILE" xz good.raw "$good" 8
ok "an xz chunk with casync's 8 MiB dictionary still reads" \
	bash -c "$CAFS extract --store www/store www/p.caidx xout2 && cmp xout2/f src/f"
cp good.cacnk "$good"

# ---- the accepted case: large xattrs and long names ----
# (ext4 keeps all of a file's xattrs in one block: tmpfs takes 64 KB values)
B=
if [ -d /dev/shm ] && B=$(mktemp -d /dev/shm/cafs-trust-memory.XXXXXX); then
	at_cleanup "rm -rf '$B'"
	mkdir "$B/big"
	long=$(printf 'n%.0s' $(seq 255))
	"$GEN" 4K 9 >"$B/big/$long"
	v=$(head -c 60000 /dev/zero | tr '\0' a)
	for i in 1 2 3; do setfattr -n "user.big$i" -v "$v$i" "$B/big/$long" 2>/dev/null || B=; done
fi
if [ -n "$B" ]; then
	ok "a tree with 3 x 60 KB xattrs and a 255-byte name: make" "$CAFS" make -q --store bs big.caidx "$B/big"
	ok "... extract round-trips the xattrs" bash -c "$CAFS extract --store bs big.caidx '$B/out' && \
		getfattr -d -m user. '$B/big/$long' | tail -n +2 >a && \
		getfattr -d -m user. '$B/out/$long' | tail -n +2 >b && cmp a b && cmp '$B/big/$long' '$B/out/$long'"
	if mount_start "... mount it" bmnt bmount.log --store bs big.caidx; then
		ok "... the mount serves the xattrs" bash -c "getfattr -n user.big2 --only-values 'bmnt/$long' | \
			cmp - <(getfattr -n user.big2 --only-values '$B/big/$long')"
		mount_stop "... unmount" bmnt
	fi
else
	skip "large xattrs" "no filesystem here takes 60 KB user xattrs"
fi

mount_done_testing
