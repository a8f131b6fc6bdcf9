#!/bin/bash
# casync-seed-reflink.sh - extract --seed clones (reflinks) the blocks a
# seed file shares with the blob instead of writing them, as casync's
# --reflink=yes (its default) does; --reflink=no copies them. On a
# loop-mounted xfs with reflink=1: the output's extents shared with the
# seed are counted with filefrag -v (flag "shared"), for cafs, for cafs as
# casync and for the real casync; the bytes are checked with cmp.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
need casync mkfs.xfs filefrag losetup
[ "$(id -u)" -eq 0 ] || skip_all "needs root (a loop mount)"

reflink_fs # M: an xfs that can clone (lib.sh)

mkdir -p "$T/bin" && ln -s "$CAFS" "$T/bin/casync"
FAKE=$T/bin/casync
cd "$M" || exit 1
# an old image, and the new one: the same but 7 bytes at 7 MB
gen_data old.img 20000000 1
cp old.img new.img
printf 'changed' | dd of=new.img bs=1 seek=7000000 conv=notrunc status=none
casync make new.caibx new.img >/dev/null || { echo "Bail out! casync make failed"; exit 1; }
SIZE=$(stat -c %s new.img)

# shared FILE: bytes of FILE in extents it shares with another file
shared() { filefrag -v "$1" | awk '/shared/ { n += $6 + 0 } END { print n * 4096 }'; }

# the output is the new image, and at least MIN bytes of it are shared
check() {
	local out=$1 min=$2 max=$3 s
	cmp "$out" new.img || return 1
	s=$(shared "$out")
	echo "$out: $s of $SIZE bytes shared"
	[ "$s" -ge "$min" ] && [ "$s" -le "$max" ]
}

# run_check BIN OUT MIN MAX ARGS...: BIN extract ARGS OUT, then check
run_check() {
	local bin=$1 out=$2 min=$3 max=$4
	shift 4
	"$bin" extract "$@" "$out" || return 1
	check "$out" "$min" "$max"
}
# free KiB on the mount
free_k() { sync && df -k --output=avail "$M" | tail -n 1; }

MOST=$((SIZE * 9 / 10))
ok "cafs extract --seed: the blocks the seed has are shared with it" \
	run_check "$CAFS" a.img "$MOST" "$SIZE" --seed=old.img new.caibx
ok "cafs extract --seed --reflink=no: none shared" \
	run_check "$CAFS" b.img 0 0 --reflink=no --seed=old.img new.caibx
ok "cafs as casync: extract --seed (RAUC's line) shares them, as casync" \
	run_check "$FAKE" c.img "$MOST" "$SIZE" --seed old.img --store default.castr --seed-output=no new.caibx
ok "casync itself: extract --seed shares them too" \
	run_check casync d.img "$MOST" "$SIZE" --seed old.img --store default.castr --seed-output=no new.caibx
ok "cafs as casync: --reflink=no, none shared" run_check "$FAKE" e.img 0 0 --reflink=no --seed=old.img new.caibx
ok "casync: --reflink=no, none shared" run_check casync f.img 0 0 --reflink=no --seed=old.img new.caibx
# the disk space: a reflinked copy takes only what differs
space() {
	local before after
	before=$(free_k)
	"$CAFS" extract --seed=old.img new.caibx h.img || return 1
	after=$(free_k)
	echo "took $((before - after)) KiB for $((SIZE / 1024)) KiB"
	[ $((before - after)) -lt $((SIZE / 1024 / 10)) ]
}
ok "the reflinked output takes little space" space
# a seed elsewhere (another file system): copied, the same bytes
ok "a seed on another file system: copied, the same bytes" \
	bash -c 'cp old.img "$1/old.img"' _ "$T"
ok "... extract from it" run_check "$CAFS" g.img 0 0 --seed="$T/old.img" new.caibx
done_testing
