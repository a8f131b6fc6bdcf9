#!/bin/bash
# cafs cache prune (LRU by mtime, pinned indexes, temporary files) and
# cafs cache verify (--repair).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

. "$top_srcdir/tests/lib-cache.sh" # rand, store_ids
chunk() { echo "C/${1:0:4}/$1.cacnk"; }

cd "$T"
rand a.bin 1500000 11
rand b.bin 1500000 12
$CAFS make -q --store SA a.caibx a.bin >/dev/null
$CAFS make -q --store SB b.caibx b.bin >/dev/null
$CAFS cache fill -q --cache C --store SA a.caibx
$CAFS cache fill -q --cache C --store SB b.caibx
mapfile -t A < <(store_ids SA)
mapfile -t B < <(store_ids SB)

# B's chunks get distinct ages: B[0] oldest ... B[n-1] newest; A's are all older still
i=0
for id in "${A[@]}"; do touch -d "2001-01-01 00:00:00" "$(chunk "$id")"; done
for id in "${B[@]}"; do touch -d "2020-01-01 00:00:00 UTC + $i minutes" "$(chunk "$id")"; i=$((i + 1)); done
size_of() { local s=0 id; for id in "$@"; do s=$((s + $(stat -c %s "$(chunk "$id")"))); done; echo $s; }
sizeA=$(size_of "${A[@]}")
n=${#B[@]}
keepB=("${B[@]:n-5}")          # the 5 most recently used chunks of B
limit=$((sizeA + $(size_of "${keepB[@]}")))

# stale and fresh temporary files: not chunks, the stale one is cleaned up
tmpdir=$(dirname "$(chunk "${B[0]}")")
echo x >"$tmpdir/${B[0]}.0123456789abcdef.tmp"
touch -d "2 hours ago" "$tmpdir/${B[0]}.0123456789abcdef.tmp"
echo y >"$tmpdir/${B[1]}.fedcba9876543210.tmp"
ok "temporary files are not counted as chunks" bash -c "$CAFS cache stat --cache C | grep -qx 'Chunks: $(( ${#A[@]} + n ))'"

ok "dry run" bash -c "$CAFS cache prune --cache C --max-size $limit --keep a.caibx -n >out && grep -c '^would remove [0-9a-f]\{64\}\$' out | grep -qx $((n - 5))"
ok "dry run removed nothing" test "$(find C -name '*.cacnk' | wc -l)" = "$(( ${#A[@]} + n ))"
ok "prune to a size with a pinned index" $CAFS cache prune --cache C --max-size "$limit" --keep a.caibx
ok "pinned chunks all stay, although they are the oldest" bash -c "for id in ${A[*]}; do test -e C/\${id:0:4}/\$id.cacnk || exit 1; done"
ok "the 5 most recently used of the rest stay, nothing else" test "$(store_ids C)" = "$(printf '%s\n' "${A[@]}" "${keepB[@]}" | sort)"
ok "the stale temporary file is gone" test ! -e "$tmpdir/${B[0]}.0123456789abcdef.tmp"
ok "the fresh one is left alone" test -e "$tmpdir/${B[1]}.fedcba9876543210.tmp"
ok "the cache is within the limit" test "$(find C -name '*.cacnk' -printf '%s\n' | awk '{s+=$1} END {print s}')" -le "$limit"

# without pins: the oldest (A's) go first, down to B's newest chunk alone
last=$(size_of "${B[n-1]}")
ok "prune to the size of the newest chunk, without pins" $CAFS cache prune --cache C --max-size "$last"
ok "... leaves exactly that chunk" test "$(store_ids C)" = "${B[n-1]}"
ok "sizes take suffixes" bash -c "$CAFS cache prune --cache C --max-size 1K && test -z \"\$(find C -name '*.cacnk')\""

# recently used chunks are spared unless --min-age 0
rm -rf C
$CAFS cache fill -q --cache C --store SA a.caibx
ok "prune spares chunks used recently (--min-age)" bash -c "$CAFS cache prune --cache C --max-size 0 --min-age 600 2>err && test \$(find C -name '*.cacnk' | wc -l) = ${#A[@]} && grep -q 'still above' err"
ok "--min-age 0 evicts them" bash -c "$CAFS cache prune --cache C --max-size 0 --min-age 0 && test \$(find C -name '*.cacnk' | wc -l) = 0"
ok "a fill touches chunks it finds (LRU)" bash -c "$CAFS cache fill -q --cache C --store SA a.caibx && touch -d 2001-01-01 C/*/*.cacnk && $CAFS cache fill -q --cache C --store SA a.caibx && test -z \"\$(find C -name '*.cacnk' ! -newermt 2002-01-01)\""

rc=0; $CAFS cache prune --cache C 2>/dev/null || rc=$?
ok "prune without --max-size is a usage error" test "$rc" = 2
rc=0; $CAFS cache prune --cache C --max-size 12Q 2>/dev/null || rc=$?
ok "a bad size is a usage error" test "$rc" = 2
ok "prune with a missing --keep index fails and removes nothing" bash -c "! $CAFS cache prune --cache C --max-size 0 --min-age 0 --keep nope.caibx 2>/dev/null && test \$(find C -name '*.cacnk' | wc -l) = ${#A[@]}"

# ---- verify ----
ok "a good cache verifies" bash -c "$CAFS cache verify --cache C >out && grep -qx '${#A[@]} chunks verified, 0 corrupt' out"
bad1=${A[0]} bad2=${A[1]}
chmod u+w "$(chunk "$bad1")" "$(chunk "$bad2")"
cp "$(chunk "${A[2]}")" "$(chunk "$bad1")"                     # valid zstd, wrong data
printf 'garbage' | dd of="$(chunk "$bad2")" bs=1 seek=20 conv=notrunc 2>/dev/null
rc=0
$CAFS cache verify --cache C >out 2>err || rc=$?
ok "verify finds the corrupt chunks (exit 1)" test "$rc" = 1
ok "... names each in one line" bash -c "test \$(wc -l <err) = 2 && grep -q 'chunk $bad1: corrupt' err && grep -q 'chunk $bad2: corrupt' err"
ok "... and does not remove them" test -e "$(chunk "$bad1")"
ok "verify --repair removes them" bash -c "$CAFS cache verify --cache C --repair >out 2>err; grep -qx '${#A[@]} chunks verified, 2 corrupt, 2 removed' out"
ok "... only them" test "$(store_ids C)" = "$(printf '%s\n' "${A[@]:2}" | sort)"
ok "after repair the cache verifies" $CAFS cache verify --cache C
ok "a refill brings them back" bash -c "$CAFS cache fill --cache C --store SA a.caibx | grep -q '^fetched 2 chunks'"

# sha256 chunks and bare (uncompressed) chunks verify too; --digest pins one
$CAFS make -q --digest sha256 --store S256 c.caibx a.bin >/dev/null
ok "sha256 chunks verify" $CAFS cache verify --cache S256
ok "... but not when sha512-256 is required" bash -c "! $CAFS cache verify --cache S256 --digest sha512-256 >/dev/null 2>&1"
id=${A[2]}
mkdir -p bare/${id:0:4} && zstd -dq <"$(chunk "$id")" >bare/${id:0:4}/$id
ok "a bare uncompressed chunk verifies" bash -c "$CAFS cache verify --cache bare | grep -qx '1 chunks verified, 0 corrupt'"

done_testing
