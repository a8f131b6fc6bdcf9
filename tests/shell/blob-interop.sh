#!/bin/bash
# blob-interop.sh - cafs and casync side by side on blobs (.caibx): for the
# same input and parameters the index files and the stores are
# byte-identical and the printed digests equal; each one extracts what the
# other made; zero chunks become holes.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
need casync cmp diff du

# inputs: empty, 1 byte, 16 MiB of mixed data (random, text, zero runs,
# repeats: segments of 64 KiB..2 MiB, a few hundred chunks at the default
# size, a thousand at the small one), 16 MiB of zeros, and the reference
# blob of the format notes (more bytes would only cost time: every
# parameter set and both tools see each kind of segment several times)
"$GEN" 0 1 >"$T/empty"
"$GEN" 1 1 >"$T/one"
"$GEN" 16M 5 mixed >"$T/mixed"
"$GEN" 16M 0 zeros >"$T/zeros"
"$GEN" 4M 1 >"$T/ref"
chmod 0640 "$T/mixed" # the index takes the input's mode & 0666

# listing PATH: every file under it with its mode, to compare trees
listing() { (cd "$1" && find . -printf '%P %y %m\n' | sort); }

# same_tree A B: both absent, or same files, modes and bytes
same_tree() {
	if [ ! -e "$1" ] && [ ! -e "$2" ]; then return 0; fi
	[ -d "$1" ] && [ -d "$2" ] || { echo "only one of $1 $2 exists"; return 1; }
	diff <(listing "$1") <(listing "$2") && diff -r "$1" "$2"
}

n=0
for input in empty one mixed zeros; do
	for opts in "" "--chunk-size=8192:32768:131072" "--digest=sha256"; do
		n=$((n + 1))
		what="$input ${opts:-defaults}"
		rc=0
		casync make $opts --store="$T/cs$n" "$T/c$n.caibx" "$T/$input" >"$T/c$n.digest" 2>"$T/c$n.err" || rc=$?
		ok "$what: casync make" test "$rc" -eq 0
		rc=0
		"$CAFS" make $opts --store="$T/fs$n" "$T/f$n.caibx" "$T/$input" >"$T/f$n.digest" 2>"$T/f$n.err" || rc=$?
		ok "$what: cafs make" test "$rc" -eq 0
		ok "$what: identical index" cmp "$T/c$n.caibx" "$T/f$n.caibx"
		ok "$what: identical store" same_tree "$T/cs$n" "$T/fs$n"
		ok "$what: same printed digest" cmp "$T/c$n.digest" "$T/f$n.digest"
		ok "$what: same index mode" test "$(stat -c %a "$T/c$n.caibx")" = "$(stat -c %a "$T/f$n.caibx")"
		if [ "$opts" = "--digest=sha256" ]; then
			ok "$what: the digest is the input's sha256" \
				test "$(cat "$T/f$n.digest")" = "$(sha256sum <"$T/$input" | cut -d' ' -f1)"
		fi
		ok "$what: cafs digest of the index" \
			test "$("$CAFS" digest --store="$T/fs$n" "$T/f$n.caibx")" = "$(cat "$T/f$n.digest")"

		# each extracts the other's (the big inputs with defaults and sha256)
		if [ "$input" = empty ] || [ "$input" = one ] || [ "$opts" != "--chunk-size=8192:32768:131072" ]; then
			ok "$what: casync extracts cafs's" casync extract --store="$T/fs$n" "$T/f$n.caibx" "$T/x-c$n"
			ok "$what: ... identical" cmp "$T/$input" "$T/x-c$n"
			ok "$what: cafs extracts casync's" "$CAFS" extract --store="$T/cs$n" "$T/c$n.caibx" "$T/x-f$n"
			ok "$what: ... identical" cmp "$T/$input" "$T/x-f$n"
			rm -f "$T/x-c$n" "$T/x-f$n"
		fi
		[ "$input" = zeros ] || [ "$input" = mixed ] && rm -rf "$T/cs$n" # keep the disk use down
	done
done

# the corners of the chunker on 384 KiB (text, a zero run, random): min < 48,
# min == avg, fixed size, small and odd sizes
{ "$GEN" 256K 3 mixed && "$GEN" 128K 8; } >"$T/small"
for cs in 20:64:300 48:200:800 100:100:5000 4096:4096:4096 1000:4000:9000 1024:65536:131072; do
	rm -rf "$T/scs" "$T/sfs"
	casync make --chunk-size=$cs --store="$T/scs" "$T/sc.caibx" "$T/small" >"$T/sc.digest" 2>/dev/null
	"$CAFS" make --chunk-size=$cs --store="$T/sfs" "$T/sf.caibx" "$T/small" >"$T/sf.digest"
	ok "chunk size $cs: identical index" cmp "$T/sc.caibx" "$T/sf.caibx"
	ok "chunk size $cs: identical store" same_tree "$T/scs" "$T/sfs"
done
rm -rf "$T/scs" "$T/sfs"

# stores casync wrote with its other compressions read fine
for comp in xz gzip; do
	ok "casync --compression=$comp: make" casync make --compression=$comp --store="$T/$comp" "$T/$comp.caibx" "$T/small"
	ok "casync --compression=$comp: cafs extract" "$CAFS" extract --store="$T/$comp" "$T/$comp.caibx" "$T/$comp.out"
	ok "casync --compression=$comp: ... identical" cmp "$T/small" "$T/$comp.out"
done

# an empty blob writes no chunk and no store directory (reference 4.3)
ok "empty: no store created" test ! -e "$T/fs1"

# the reference blob (format notes, section 12): digest, chunk count,
# first chunk's file in the store
ok "reference blob: cafs make" "$CAFS" make --store="$T/rs" "$T/r.caibx" "$T/ref"
ok "reference blob: digest" test "$("$CAFS" make --store="$T/rs" "$T/r2.caibx" "$T/ref")" = \
	e90e4498fe5d40c9325f3c1b0fd9be85845cb415636e9c6b27051493a145563e
ok "reference blob: 55 chunks" bash -c '"$CAFS" info "$1" | grep -qx "Chunks: 55"' _ "$T/r.caibx"
ok "reference blob: first chunk stored" \
	test -f "$T/rs/c3b9/c3b9478cb8804fb6024305191288948b07c9307b26d0f65db45d068a9637344c.cacnk"
ok "reference blob: index size 104 + 40 * 55" test "$(stat -c %s "$T/r.caibx")" -eq 2304

# the default store: default.castr beside the index, for both
mkdir "$T/d1" "$T/d2"
ok "default store: casync make" casync make "$T/d1/x.caibx" "$T/ref"
ok "default store: cafs make" "$CAFS" make "$T/d2/x.caibx" "$T/ref"
ok "default store: identical trees" same_tree "$T/d1" "$T/d2"
ok "default store: cafs extract finds it" "$CAFS" extract "$T/d1/x.caibx" "$T/d1.out"
ok "default store: ... identical" cmp "$T/ref" "$T/d1.out"

# cafs digest of a plain file is casync's
ok "digest of a file: same as casync" test "$("$CAFS" digest "$T/mixed")" = "$(casync digest "$T/mixed")"

# extract to stdout, and over an existing file
ok "extract to stdout" bash -c '"$CAFS" extract --store="$1" "$2" - | cmp - "$3"' _ "$T/rs" "$T/r.caibx" "$T/ref"
echo "old contents" >"$T/over"
ok "extract over an existing file" "$CAFS" extract --store="$T/rs" "$T/r.caibx" "$T/over"
ok "... replaced" cmp "$T/ref" "$T/over"

# zero chunks are holes: a zero image takes (almost) no blocks
ok "zeros: cafs extract" "$CAFS" extract --store="$T/fs10" "$T/f10.caibx" "$T/zeros.out"
ok "zeros: ... identical" cmp "$T/zeros" "$T/zeros.out"
ok "zeros: ... sparse" test "$(du -k "$T/zeros.out" | cut -f1)" -lt 1024
ok "zeros: ... apparent size 16 MiB" test "$(stat -c %s "$T/zeros.out")" -eq 16777216
ok "mixed: cafs extract is sparser than the input" bash -c '
	"$CAFS" extract --store="$1" "$2" "$3" && cmp "$3" "$4" &&
	test "$(du -k "$3" | cut -f1)" -lt "$(du -k "$4" | cut -f1)"' _ "$T/fs7" "$T/f7.caibx" "$T/mixed.out" "$T/mixed"
# a block device as the output: written in place, zero chunks included
# (casync does so), never replaced by a regular file
if [ "$(id -u)" -eq 0 ] && command -v losetup >/dev/null; then
	{ "$GEN" 1M 13 && head -c 1048576 /dev/zero && "$GEN" 512K 14; } >"$T/dev-in"
	"$CAFS" make --store="$T/dev-s" "$T/dev.caibx" "$T/dev-in" >/dev/null
	head -c 3145728 /dev/zero | tr '\0' '\377' >"$T/disk" # stale data where the zeros go
	if loopdev=$(losetup -f --show "$T/disk" 2>/dev/null); then
		at_cleanup "losetup -d $loopdev"
		mm=$(stat -c '%t %T' "$loopdev")
		mknod "$T/blk" b $((0x${mm% *})) $((0x${mm#* }))
		ok "block device: casync extract writes into it" casync extract --store="$T/dev-s" "$T/dev.caibx" "$T/blk"
		ok "... (checks the check)" cmp -n 2621440 "$T/dev-in" "$T/disk"
		ok "block device as the input: casync make" casync make --store="$T/bd-cs" "$T/bd-c.caibx" "$T/blk"
		ok "block device as the input: cafs make" "$CAFS" make --store="$T/bd-fs" "$T/bd-f.caibx" "$T/blk"
		ok "... identical index" cmp "$T/bd-c.caibx" "$T/bd-f.caibx"
		ok "... identical store" same_tree "$T/bd-cs" "$T/bd-fs"
		head -c 3145728 /dev/zero | tr '\0' '\377' | dd of="$loopdev" bs=1M conv=fsync status=none
		ok "block device: cafs extract" "$CAFS" extract --store="$T/dev-s" "$T/dev.caibx" "$T/blk"
		ok "... it is still the block device" test -b "$T/blk"
		ok "... the image is on the device, zeros included" cmp -n 2621440 "$T/dev-in" "$loopdev"
		ok "... the rest of the device is untouched" \
			bash -c 'tail -c 524288 "$1" | cmp -s - <(head -c 524288 /dev/zero | tr "\0" "\377")' _ "$loopdev"
		ok "block device smaller than the image: refused" bash -c '
			! "$CAFS" extract --store="$1" "$2" "$3" 2>"$4" && grep -q "^cafs: .*smaller than the image" "$4"' \
			_ "$T/rs" "$T/r.caibx" "$T/blk" "$T/blk.err"
		rm -f "$T/blk"
	else
		skip "block device" "no loop device"
	fi
else
	skip "block device" "needs root and losetup"
fi

ok "no temp files left" bash -c '! find "$1" -name ".#*" -o -name "*.tmp" | grep -q .' _ "$T"

done_testing
