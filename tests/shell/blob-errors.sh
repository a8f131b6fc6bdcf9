#!/bin/bash
# blob-errors.sh - bad input and failing disks on the blob paths: every
# failure is one "cafs: ..." line on stderr and exit 1 (not a signal, not a
# usage error), and nothing half-written is left under the final name, nor
# any temporary file.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"

# leftovers DIR...: temporary files of index, output or chunk writes
leftovers() { find "$@" \( -name '.#*' -o -name '*.tmp' \) 2>/dev/null; }

# fails_cleanly OUT CMD...: CMD exits 1 with one "cafs: " line on stderr,
# OUT (the path it was to write; "-" for none) does not exist afterwards
# and no temporary file is left under $T.
fails_cleanly() {
	local out=$1 rc=0
	shift
	"$@" >"$T/stdout" 2>"$T/stderr" || rc=$?
	[ "$rc" -eq 1 ] || { echo "exit $rc, expected 1"; cat "$T/stderr"; return 1; }
	[ "$(wc -l <"$T/stderr")" -eq 1 ] || { echo "expected one line:"; cat "$T/stderr"; return 1; }
	grep -q '^cafs: ..*: ' "$T/stderr" || { echo "not 'cafs: what: why':"; cat "$T/stderr"; return 1; }
	if [ "$out" != - ] && [ -e "$out" ]; then echo "$out exists"; return 1; fi
	if leftovers "$T" | grep .; then echo "(temporary files left)"; return 1; fi
}

# mentions WORD: the last failure's message names WORD
mentions() { grep -qF -- "$1" "$T/stderr" || { echo "message does not name $1:"; cat "$T/stderr"; return 1; }; }

# a good image: 2 MiB of mixed data, 14 chunks
"$GEN" 2M 3 mixed >"$T/in"
ok "setup: make" "$CAFS" make --store="$T/s" "$T/good.caibx" "$T/in"
n_chunks=$(find "$T/s" -name '*.cacnk' | wc -l)
ok "setup: several chunks" test "$n_chunks" -ge 5

# ---- bad indexes ----
head -c 100 "$T/good.caibx" >"$T/trunc.caibx"
gen_data "$T/garbage.caibx" 1000 21
cp "$T/good.caibx" "$T/magic.caibx"
printf '\x00' | dd of="$T/magic.caibx" bs=1 seek=8 conv=notrunc status=none
: >"$T/zero.caibx"
cp "$T/good.caibx" "$T/tail.caibx"
printf '\x00' | dd of="$T/tail.caibx" bs=1 seek=$(($(stat -c %s "$T/good.caibx") - 1)) conv=notrunc status=none
for bad in trunc garbage magic zero tail; do
	ok "extract: $bad index" fails_cleanly "$T/out" "$CAFS" extract --store="$T/s" "$T/$bad.caibx" "$T/out"
	ok "digest: $bad index" fails_cleanly - "$CAFS" digest --store="$T/s" "$T/$bad.caibx"
	ok "info: $bad index" fails_cleanly - "$CAFS" info "$T/$bad.caibx"
done
ok "extract: nonexistent index" fails_cleanly "$T/out" "$CAFS" extract --store="$T/s" "$T/nonexistent.caibx" "$T/out"
ok "... names it" mentions nonexistent.caibx
mkdir "$T/dir.caibx"
ok "extract: index is a directory" fails_cleanly "$T/out" "$CAFS" extract --store="$T/s" "$T/dir.caibx" "$T/out"

# ---- bad chunks: in copies of the store ----
first=$(find "$T/s" -name '*.cacnk' | sort | head -n 1)
rel=${first#"$T/s/"}
id=$(basename "$rel" .cacnk)

cp -a "$T/s" "$T/s-corrupt"
chmod u+w "$T/s-corrupt/$rel"
printf 'X' | dd of="$T/s-corrupt/$rel" bs=1 seek=100 conv=notrunc status=none
ok "extract: corrupt chunk" fails_cleanly "$T/out" "$CAFS" extract --store="$T/s-corrupt" "$T/good.caibx" "$T/out"
ok "... names the chunk" mentions "$id"
ok "digest: corrupt chunk" fails_cleanly - "$CAFS" digest --store="$T/s-corrupt" "$T/good.caibx"

cp -a "$T/s" "$T/s-trunc"
chmod u+w "$T/s-trunc/$rel"
truncate -s $(($(stat -c %s "$first") / 2)) "$T/s-trunc/$rel"
ok "extract: truncated chunk" fails_cleanly "$T/out" "$CAFS" extract --store="$T/s-trunc" "$T/good.caibx" "$T/out"
ok "... names the chunk" mentions "$id"

cp -a "$T/s" "$T/s-garbage"
chmod u+w "$T/s-garbage/$rel"
gen_data "$T/s-garbage/$rel" 5000 22
ok "extract: garbage chunk" fails_cleanly "$T/out" "$CAFS" extract --store="$T/s-garbage" "$T/good.caibx" "$T/out"

cp -a "$T/s" "$T/s-missing"
rm -f "$T/s-missing/$rel"
ok "extract: missing chunk" fails_cleanly "$T/out" "$CAFS" extract --store="$T/s-missing" "$T/good.caibx" "$T/out"
ok "... names the chunk" mentions "$id"
ok "extract: missing chunk, to stdout" fails_cleanly - "$CAFS" extract --store="$T/s-missing" "$T/good.caibx" -
ok "digest: missing chunk" fails_cleanly - "$CAFS" digest --store="$T/s-missing" "$T/good.caibx"

# a failed extract leaves a file that was already there alone
echo "precious" >"$T/existing"
ok "extract over an existing file: fails" fails_cleanly - \
	"$CAFS" extract --store="$T/s-corrupt" "$T/good.caibx" "$T/existing"
ok "... the old file is intact" test "$(cat "$T/existing")" = precious

ok "extract: nonexistent store" fails_cleanly "$T/out" "$CAFS" extract --store="$T/nonexistent.castr" "$T/good.caibx" "$T/out"
ok "extract: store is a file" fails_cleanly "$T/out" "$CAFS" extract --store="$T/in" "$T/good.caibx" "$T/out"
ok "extract: output directory missing" fails_cleanly "$T/nodir/out" \
	"$CAFS" extract --store="$T/s" "$T/good.caibx" "$T/nodir/out"
ok "extract: output is a directory" fails_cleanly - "$CAFS" extract --store="$T/s" "$T/good.caibx" "$T/dir.caibx"

# an output that is neither a regular file nor a block device is refused
# (as casync does), and left as it is
if [ "$(id -u)" -eq 0 ] && mknod "$T/chardev" c 1 3 2>/dev/null; then
	ok "extract: onto a character device" fails_cleanly - \
		"$CAFS" extract --store="$T/s" "$T/good.caibx" "$T/chardev"
	ok "... still the character device" test -c "$T/chardev"
	rm -f "$T/chardev"
fi
mkfifo "$T/fifo-out"
ok "extract: onto a FIFO" fails_cleanly - timeout 20 "$CAFS" extract --store="$T/s" "$T/good.caibx" "$T/fifo-out"
ok "... still the FIFO" test -p "$T/fifo-out"
rm -f "$T/fifo-out"

# ---- make: bad sources and destinations ----
ok "make: nonexistent input" fails_cleanly "$T/m.caibx" "$CAFS" make --store="$T/s2" "$T/m.caibx" "$T/nonexistent"
ok "... names it" mentions nonexistent
ok "make: input is a directory" fails_cleanly "$T/m.caibx" "$CAFS" make --store="$T/s2" "$T/m.caibx" "$T/dir.caibx"
# /proc/self/mem opens fine, then reading at offset 0 fails with EIO
ok "make: unreadable input" fails_cleanly "$T/m.caibx" "$CAFS" make --store="$T/s2" "$T/m.caibx" /proc/self/mem
ok "make: index directory missing" fails_cleanly "$T/nodir/m.caibx" \
	"$CAFS" make --store="$T/s2" "$T/nodir/m.caibx" "$T/in"
ok "make: store is a file" fails_cleanly "$T/m.caibx" "$CAFS" make --store="$T/in" "$T/m.caibx" "$T/in"
ok "... names the store" mentions "$T/in:"

# ---- a full disk ----
if [ "$(id -u)" -eq 0 ] && mkdir "$T/full" && mount -t tmpfs -o size=1m tmpfs "$T/full" 2>/dev/null; then
	at_cleanup "umount '$T/full'"
	"$GEN" 2M 9 >"$T/rand" # incompressible: 2 MiB of chunks do not fit
	ok "full disk: make with the store on it" fails_cleanly "$T/m.caibx" \
		"$CAFS" make --store="$T/full/s" "$T/m.caibx" "$T/rand"
	ok "... names the store" mentions "$T/full/s"
	ok "... says why" mentions "No space left on device"
	rm -rf "$T/full/s"

	"$CAFS" make --store="$T/s-rand" "$T/rand.caibx" "$T/rand" >/dev/null
	ok "full disk: extract onto it" fails_cleanly "$T/full/out" \
		"$CAFS" extract --store="$T/s-rand" "$T/rand.caibx" "$T/full/out"
	ok "... says why" mentions "No space left on device"
	ok "... the space is given back" test -z "$(ls -A "$T/full")"

	# the index itself cannot be written
	head -c 1048576 /dev/zero >"$T/full/filler" 2>/dev/null
	ok "full disk: make with the index on it" fails_cleanly "$T/full/m.caibx" \
		"$CAFS" make --store="$T/s3" "$T/full/m.caibx" "$T/in"
	rm -f "$T/full/filler"
else
	skip "full disk" "needs root and tmpfs"
fi

# ---- interrupted: SIGTERM half-way (casync cleans up on SIGINT/SIGTERM) ----
# make: the input is a FIFO that delivers 4 MiB, then stalls. The signal
# goes only once cafs has read (nearly) all of it: it opens its input after
# installing its handler, and the 4 MiB cannot all fit in the pipe.
mkfifo "$T/slow-in"
"$CAFS" make --store="$T/s-int" "$T/int.caibx" "$T/slow-in" >/dev/null 2>"$T/int.err" &
pid=$!
at_cleanup "kill $pid"
exec 3<>"$T/slow-in" # read-write: never blocks, and the pipe stays open after gen-data
"$GEN" 4M 12 >&3 &
gpid=$!
at_cleanup "kill $gpid"
gen_done() { ! kill -0 "$gpid" 2>/dev/null; }
ok "interrupted make: cafs read its input (before the signal)" wait_until 10 "$pid" gen_done
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
exec 3>&-
ok "interrupted make: exits 128+SIGTERM" test "$rc" -eq 143
ok "interrupted make: says it was interrupted" interrupted_by "$T/int.err" TERM
ok "interrupted make: no index" test ! -e "$T/int.caibx"
ok "interrupted make: no temporary files" bash -c '! find "$1" \( -name ".#*" -o -name "*.tmp" \) | grep .' _ "$T"
find "$T" \( -name '.#*' -o -name '*.tmp' \) -delete

# extract: one chunk is only in a store whose server never answers, so a
# worker blocks fetching it; the signal goes once it does
cp -a "$T/s" "$T/s-fifo"
rm -f "$T/s-fifo/$rel"
mute_start
CAFS_HTTP_TIMEOUT=120 "$CAFS" extract --store="$T/s-fifo" --store="http://127.0.0.1:$MUTE_PORT/s" \
	"$T/good.caibx" "$T/int.out" >/dev/null 2>"$T/int.err" &
pid=$!
at_cleanup "kill $pid"
ok "interrupted extract: cafs waits for the stuck chunk (before the signal)" wait_until 10 "$pid" mute_accepted
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
ok "interrupted extract: exits 128+SIGTERM" test "$rc" -eq 143
ok "interrupted extract: says it was interrupted" interrupted_by "$T/int.err" TERM
ok "interrupted extract: no output" test ! -e "$T/int.out"
ok "interrupted extract: no temporary files" bash -c '! find "$1" -name ".#*" | grep .' _ "$T"
find "$T" \( -name '.#*' -o -name '*.tmp' \) -delete
rm -rf "$T/s-fifo"

ok "no temporary files anywhere" bash -c '! find "$1" \( -name ".#*" -o -name "*.tmp" \) | grep -q .' _ "$T"
done_testing
