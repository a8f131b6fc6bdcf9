#!/bin/bash
# extract-cleanup.sh - an extract that fails part-way (a corrupt chunk in
# the middle) leaves nothing behind: no hidden .#cafs* tree beside OUT,
# even when what it had extracted already carries chattr +i / +a (files
# and a directory), and an OUT that existed keeps what it had.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
need python3 chattr lsattr
[ "$(id -u)" = 0 ] || skip_all "needs root (chattr +i)"
touch "$T/probe"
chattr +i "$T/probe" 2>/dev/null || skip_all "no chattr +i on $T"
chattr -i "$T/probe"
# whatever a failure leaves, $T must still go
at_cleanup "chattr -R -i -a '$T'"

src=$T/src
mkdir -p "$src/a/ro" "$src/a/pinned" "$src/z"
printf 'imm\n' >"$src/a/imm"
printf 'app\n' >"$src/a/app"
printf 'x\n' >"$src/a/ro/inside"
printf 'y\n' >"$src/a/pinned/inside"
for i in $(seq 1 12); do gen_data "$src/a/f$i" 20000 $((100 + i)); done
# z/ is far larger than a chunk can be (256 KiB): some chunk lies wholly inside it
for i in $(seq 1 48); do gen_data "$src/z/f$i" 20000 $((200 + i)); done
chmod 555 "$src/a/ro"
chattr +i "$src/a/imm" "$src/a/pinned"
chattr +a "$src/a/app"
"$CAFS" make --store="$T/st" "$T/s.caidx" "$src" >/dev/null
chattr -i "$src/a/imm" "$src/a/pinned"
chattr -a "$src/a/app"

# a chunk in the middle of z/ (starting past 500000, a/ ends near 250000; not the last)
mid=$(index_chunk_after 500000 "$T/s.caidx")
ok "a chunk in the middle was found" test -n "$mid"
chunk=${mid:0:4}/$mid.cacnk
cp -a "$T/st" "$T/flipped"
cp -a "$T/st" "$T/truncated"
chmod -R u+w "$T/flipped" "$T/truncated"
printf 'XXXXXXXX' | dd of="$T/flipped/$chunk" bs=1 seek=100 conv=notrunc 2>/dev/null
truncate -s 50 "$T/truncated/$chunk"

ok "the intact store extracts, chattr flags included" "$CAFS" extract --store="$T/st" "$T/s.caidx" "$T/good"
ok "... +i on a/imm" sh -c "lsattr -d '$T/good/a/imm' | cut -d' ' -f1 | grep -q i"
no_tmp() { test -z "$(find "$1" -maxdepth 3 -name '.#cafs*')"; }

for kind in flipped truncated; do
	mkdir -p "$T/$kind.out"
	out=$("$CAFS" extract --store="$T/$kind" "$T/s.caidx" "$T/$kind.out/new" 2>&1)
	rc=$?
	ok "$kind chunk: extract fails" test "$rc" -ne 0 -a "$rc" -lt 128
	ok "$kind chunk: one line, 'cafs: '" test "$(printf '%s\n' "$out" | wc -l)" = 1 -a "${out#cafs: }" != "$out"
	ok "$kind chunk: naming the chunk, no clean-up warning" sh -c "printf '%s\n' '$out' | grep -q 'chunk $mid: corrupt data\$'"
	ok "$kind chunk: OUT was not created" test ! -e "$T/$kind.out/new"
	ok "$kind chunk: no .#cafs* left beside it" no_tmp "$T/$kind.out"
done

# into an existing OUT: what it had stays; the complete a/ is in, the failed z/ is not
mkdir -p "$T/old/keep"
printf 'mine\n' >"$T/old/keep/file"
fails "existing OUT: extract fails" "$CAFS" extract --store="$T/flipped" "$T/s.caidx" "$T/old"
ok "... what OUT had is untouched" test "$(cat "$T/old/keep/file")" = mine
ok "... the complete a/ is there" diff -r "$src/a" "$T/old/a"
ok "... z/ is not, nor any temporary name" sh -c "test ! -e '$T/old/z' && no_tmp() { test -z \"\$(find \"\$1\" -maxdepth 3 -name '.#cafs*')\"; } && no_tmp '$T/old'"

# --delete removing an immutable file of the user's own fails, saying why
mkdir -p "$T/del/a"
printf 'theirs\n' >"$T/del/extra"
chattr +i "$T/del/extra"
out=$("$CAFS" extract --store="$T/st" "$T/s.caidx" "$T/del" 2>&1)
ok "--delete stops at an immutable file of OUT's, with its real error" \
	sh -c "printf '%s\n' '$out' | grep -q 'del/extra: Operation not permitted'"
ok "... and leaves it (its flags are not extract's to lift)" test "$(cat "$T/del/extra")" = theirs
chattr -i "$T/del/extra"

done_testing
