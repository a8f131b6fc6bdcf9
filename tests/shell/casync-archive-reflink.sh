#!/bin/bash
# casync-archive-reflink.sh - extract of an archive with a seed directory
# clones (reflinks) the blocks each file shares with the file at the same
# path in the seed, as casync's --reflink=yes (its default) clones a
# file's ranges that came from a seed file; --reflink=no writes them. On
# a loop-mounted xfs with reflink=1, the extents shared are counted with
# filefrag -v, for cafs, for cafs as casync and for the real casync; the
# trees are compared with diff -r and their mtimes kept.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
need casync mkfs.xfs filefrag losetup
[ "$(id -u)" -eq 0 ] || skip_all "needs root (a loop mount)"

reflink_fs # M: an xfs that can clone (lib.sh)

mkdir -p "$T/bin" && ln -s "$CAFS" "$T/bin/casync"
FAKE=$T/bin/casync
cd "$M" || exit 1
# the old tree (the seed), and the new one: 7 bytes changed in big, a
# file of other bytes at the same path, a new file
mkdir -p old/sub
gen_data old/big 8000000 1
gen_data old/sub/mid 3000000 2
gen_data old/other 1000000 3
cp -a old new
printf 'changed' | dd of=new/big bs=1 seek=4000000 conv=notrunc status=none
gen_data new/other 1000000 4
gen_data new/fresh 500000 5
casync make new.caidx new >/dev/null || { echo "Bail out! casync make failed"; exit 1; }

# shared FILE: bytes of FILE in extents it shares with another file
shared() { sync && filefrag -v "$1" | awk '/shared/ { n += $6 + 0 } END { print n * 4096 }'; }

# run_check BIN OUT MIN ARGS...: BIN extract ARGS new.caidx OUT; the tree
# is new's (contents, mtimes), big and sub/mid share at least MIN% of
# their bytes, other and fresh nothing
run_check() {
	local bin=$1 out=$2 min=$3 f s
	shift 3
	"$bin" extract "$@" new.caidx "$out" || return 1
	diff -r new "$out" || return 1
	[ "$(cd new && find . -printf '%p %T@\n' | sort)" = "$(cd "$out" && find . -printf '%p %T@\n' | sort)" ] ||
		{ echo "mtimes differ"; return 1; }
	for f in big sub/mid; do
		s=$(shared "$out/$f")
		echo "$out/$f: $s of $(stat -c %s "$out/$f") bytes shared"
		[ $((s * 100)) -ge $(($(stat -c %s "$out/$f") * min)) ] || return 1
	done
	for f in other fresh; do
		s=$(shared "$out/$f")
		[ "$s" = 0 ] || { echo "$out/$f: $s bytes shared"; return 1; }
	done
}

ok "cafs extract --seed DIR: each file shares the blocks its seed has" run_check "$CAFS" a 95 --seed=old
ok "cafs as casync: the same (RAUC's line to a directory)" \
	run_check "$FAKE" c 95 --seed old --store default.castr --seed-output=no
ok "casync itself shares them too" run_check casync d 95 --seed old --store default.castr --seed-output=no
ok "cafs extract --reflink=no: nothing shared" run_check "$CAFS" b 0 --reflink=no --seed=old
ok "... and none shared indeed" test "$(shared b/big)" = 0
ok "a subtree: its files' paths in the seed are their archive paths" \
	bash -c '"$1" extract --seed=old new.caidx s sub && cmp s/mid new/sub/mid && [ "$(filefrag -v s/mid | grep -c shared)" -gt 0 ]' _ "$CAFS"
# with --hardlink=yes too: identical files are linked, the rest cloned
ok "--hardlink=yes --seed DIR: sub/mid linked, big cloned" \
	bash -c '"$1" extract --hardlink=yes --seed old new.caidx h && [ h/sub/mid -ef old/sub/mid ] && ! [ h/big -ef old/big ] && [ "$(filefrag -v h/big | grep -c shared)" -gt 0 ] && diff -r new h' _ "$FAKE"

done_testing
