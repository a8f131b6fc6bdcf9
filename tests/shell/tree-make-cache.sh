#!/bin/bash
# tree-make-cache.sh - `cafs make --cache DIR` (incremental make): after
# every kind of change the index and the store are byte for byte those of
# a make without the cache; a warm re-make really reads nothing unchanged;
# an untrusted cache is ignored with one warning; casync's -c/--cache.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib.sh"
need python3 cmp diff

tree=$T/tree
mkdir -p "$tree/etc" "$tree/usr/lib" "$tree/usr/share/doc"
python3 - "$tree" <<'EOF'
import os, random, sys
random.seed(7)
root = sys.argv[1]
for i in range(300):
    d = ("etc", "usr/lib", "usr/share/doc")[i % 3]
    n = random.choice((50, 700, 4000, 20000, 90000))
    with open(os.path.join(root, d, "f%03d" % i), "wb") as f:
        f.write(random.randbytes(n))
with open(os.path.join(root, "usr/lib/big"), "wb") as f:
    f.write(random.randbytes(2 << 20))
EOF
ln -s f001 "$tree/etc/link"
: >"$tree/etc/empty"
setfattr -n user.k -v 1 "$tree/etc/f003" 2>/dev/null || true
head -c 2000000 /dev/urandom >"$T/blob"
# a make does not trust a timestamp within 2 s of itself (a change in the
# same tick would not show): let the tree be older than that
sleep 2.1

cache=$T/cache
# same NAME [OPTS...]: the tree made with the cache (store S.c) and without
# (store S.r): same index, same store, same digest line when one is printed
same() {
	local name=$1
	shift
	"$CAFS" make "$@" -s "$T/S.r" "$T/r.caidx" "$tree" >"$T/r.out" 2>"$T/r.err" || return 1
	"$CAFS" -v make "$@" --cache "$cache" -s "$T/S.c" "$T/c.caidx" "$tree" >"$T/c.out" 2>"$T/c.err" ||
		{ cat "$T/c.err"; return 1; }
	cmp "$T/r.caidx" "$T/c.caidx" && diff -r "$T/S.r" "$T/S.c" || { cat "$T/c.err"; return 1; }
	# a digest printed is the right one
	[ ! -s "$T/c.out" ] || cmp "$T/r.out" "$T/c.out"
}
# bytes of files the last cached make read, and the bytes it took unread
read_bytes() { sed -n 's/.*taken unread, \([0-9]*\) bytes of files read.*/\1/p' "$T/c.err"; }
unread_bytes() { sed -n 's/.*make cache: \([0-9]*\) bytes in.*/\1/p' "$T/c.err"; }
total_bytes() { sed -n 's/^cafs: \([0-9]*\) bytes, .*/\1/p' "$T/c.err"; }
warnings() { grep -c 'warning\|ignored\|not used' "$T/c.err"; }

ok "cold make with a new cache: same index and store" same cold
ok "the cache directory is private (0700)" test "$(stat -c %a "$cache")" = 700
ok "warm make, nothing changed: same index, store and digest" same warm
ok "warm make: the digest is printed (the stream is the recorded one)" test -s "$T/c.out"
ok "warm make: at most one chunk of file bytes read" test "$(read_bytes)" -le $((256 << 10))
ok "warm make: nearly all the stream taken unread" test "$(unread_bytes)" -ge $(($(total_bytes) * 9 / 10))

cp "$T/c.caidx" "$T/prev.caidx"
f=$tree/usr/lib/f001
python3 -c "import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[10]^=0xff; open(p,'r+b').write(b)" "$f"
touch -d @"$(stat -c %Y "$tree/etc/f000")" "$f"
touch -d @"$(stat -c %Y "$tree/etc/f000")" "$T/stamp"
ok "edited in place, mtime restored: same index and store" same edit
ok "  and the edit is in the index" sh -c "! cmp -s '$T/c.caidx' '$T/prev.caidx'"
ok "warm make after an edit: only what changed was read" test "$(read_bytes)" -le $((1 << 20))

cp "$tree/usr/lib/f004" "$T/new" && printf 'changed' >>"$T/new" && mv "$T/new" "$tree/usr/lib/f004"
ok "file replaced by rename: same index and store" same rename
rm "$tree/usr/share/doc/f005"
ok "deleted file: same index and store" same delete
head -c 30000 /dev/urandom >"$tree/usr/share/doc/added"
ok "added file: same index and store" same add
if setfattr -n user.k -v 2 "$tree/etc/f003" 2>/dev/null; then
	ok "changed xattr: same index and store" same xattr
else
	skip "changed xattr: same index and store" "no user xattrs here"
fi
chmod 600 "$tree/etc/f006"
ok "changed mode: same index and store" same mode
if [ "$(id -u)" = 0 ]; then
	chown 4242:4242 "$tree/etc/f009"
	ok "changed owner: same index and store" same owner
else
	skip "changed owner: same index and store" "needs root"
fi
python3 -c "import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[1<<20]^=1; open(p,'r+b').write(b)" \
	"$tree/usr/lib/big"
ok "a byte changed in the middle of a big file: same index and store" same bigedit

# another tree at the same path (the same cache file): nothing of it trusted
mv "$tree" "$T/tree.a"
cp -a "$T/tree.a" "$tree"
ok "another tree at the same path: same index and store" same other
rm -rf "$tree" && mv "$T/tree.a" "$tree"
ok "back to the first tree: same index and store" same back

# untrusted cache files: exactly one warning, then the make is the same
cf=$(ls "$cache"/*.camake | head -n 1)
python3 -c "import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[len(b)//2]^=1; open(p,'r+b').write(b)" "$cf"
ok "corrupt cache file: same index and store" same corrupt
ok "  with exactly one warning" test "$(warnings)" = 1
ok "  and it was replaced: the next make takes chunks unread again" \
	sh -c "'$CAFS' -v make --cache '$cache' -s '$T/S.c' '$T/c.caidx' '$tree' 2>&1 >/dev/null | grep -q 'make cache: [1-9]'"
truncate -s 1000 "$cf"
ok "truncated cache file: same index and store" same truncated
ok "  with exactly one warning" test "$(warnings)" = 1
python3 -c "import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[8]=9; open(p,'r+b').write(b)" "$cf"
ok "cache file of another format version: same index and store" same version
ok "  with exactly one warning" test "$(warnings)" = 1
ok "cache of another chunk size: same index and store" same chunksize --chunk-size 32K
ok "  with exactly one warning" test "$(warnings)" = 1
ok "and back: same index and store" same chunksize-back
chmod 755 "$cache"
ok "a cache directory open to others: same index and store" same open
ok "  with exactly one warning, and nothing taken from it" \
	sh -c "test \"\$(grep -c 'not used' '$T/c.err')\" = 1 && ! grep -q 'make cache: [1-9]' '$T/c.err'"
chmod 700 "$cache"

# a blob: the file is the only entry
"$CAFS" make --cache "$cache" -s "$T/B.c" "$T/b1.caibx" "$T/blob" >/dev/null 2>&1
"$CAFS" make -s "$T/B.r" "$T/b0.caibx" "$T/blob" >"$T/b0.out" 2>/dev/null
"$CAFS" -v make --cache "$cache" -s "$T/B.c" "$T/b1.caibx" "$T/blob" >"$T/b1.out" 2>"$T/c.err"
ok "blob, unchanged: same index, store and digest" \
	sh -c "cmp '$T/b0.caibx' '$T/b1.caibx' && diff -r '$T/B.r' '$T/B.c' && cmp '$T/b0.out' '$T/b1.out'"
ok "blob, unchanged: at most one chunk read" test "$(read_bytes)" -le $((256 << 10))
printf 'x' | dd of="$T/blob" bs=1 seek=1000 conv=notrunc status=none
"$CAFS" make -s "$T/B.r" "$T/b0.caibx" "$T/blob" >/dev/null 2>&1
"$CAFS" make --cache "$cache" -s "$T/B.c" "$T/b1.caibx" "$T/blob" >/dev/null 2>&1
ok "blob, changed: same index and store" sh -c "cmp '$T/b0.caibx' '$T/b1.caibx' && diff -r '$T/B.r' '$T/B.c'"

# casync's command line: --cache=DIR and -c ($XDG_CACHE_HOME/cafs/make)
ln -s "$CAFS" "$T/casync"
"$T/casync" make --store="$T/S.c" --cache="$T/cc" "$T/k.caidx" "$tree" >/dev/null 2>&1
"$T/casync" -v make --store="$T/S.c" --cache="$T/cc" "$T/k.caidx" "$tree" >/dev/null 2>"$T/c.err"
ok "casync --cache=DIR: accepted and effective" \
	sh -c "cmp '$T/k.caidx' '$T/r.caidx' && grep -q 'make cache: [1-9][0-9]\{5,\} bytes' '$T/c.err'"
XDG_CACHE_HOME=$T/xdg "$T/casync" make --store="$T/S.c" -c "$T/a.caidx" "$tree" >/dev/null 2>&1
XDG_CACHE_HOME=$T/xdg "$T/casync" -v make --store="$T/S.c" -c "$T/a.caidx" "$tree" >/dev/null 2>"$T/c.err"
ok "casync -c: the cache in \$XDG_CACHE_HOME/cafs/make, effective" \
	sh -c "test -d '$T/xdg/cafs/make' && cmp '$T/a.caidx' '$T/r.caidx' && grep -q 'make cache: [1-9]' '$T/c.err'"

# full tier: random changes, small chunks (cuts inside every file, chunks
# across many), 3 chunk settings including min < 48 and fixed size
if [ -n "${CAFS_TEST_FULL:-}" ]; then
	random_round() { # CS SEED
		local cs=$1 it w=$T/rnd.$1
		mkdir -p "$w" && cd "$w" || return 1
		python3 - <<'P'
import os, random
random.seed(1)
for d in ("a", "b", "c/d"):
    os.makedirs("t/" + d, exist_ok=True)
for i in range(120):
    d = random.choice(("a", "b", "c/d"))
    open("t/%s/f%d" % (d, i), "wb").write(random.randbytes(random.choice((0, 10, 300, 2000, 9000, 30000))))
P
		sleep 2.1
		for it in $(seq 1 15); do
			python3 - "$it" <<'P'
import os, random, sys
random.seed(int(sys.argv[1]) * 7919)
files = [os.path.join(dp, f) for dp, dn, fn in os.walk("t") for f in fn]
for _ in range(random.randint(0, 4)):
    op = random.randint(0, 6); f = random.choice(files)
    if not os.path.exists(f):
        continue
    st = os.stat(f)
    if op == 0:
        b = bytearray(open(f, "rb").read())
        if b:
            b[random.randrange(len(b))] ^= 0x55
        open(f, "r+b").write(b); os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    elif op == 1: open(f, "ab").write(random.randbytes(random.randint(1, 5000)))
    elif op == 2: os.unlink(f)
    elif op == 3: open(f + "n", "wb").write(random.randbytes(random.randint(0, 20000)))
    elif op == 4: os.chmod(f, 0o600 if st.st_mode & 0o44 else 0o644)
    elif op == 5:
        open(f + ".tmp", "wb").write(open(f, "rb").read() + b"z"); os.rename(f + ".tmp", f)
    elif op == 6:
        try: os.setxattr(f, "user.s", random.randbytes(4))
        except OSError: pass
P
			"$CAFS" make --chunk-size "$cs" -s Sr r.caidx t >/dev/null 2>&1 &&
				"$CAFS" make --chunk-size "$cs" --cache cc -s Sc c.caidx t >/dev/null 2>&1 &&
				cmp r.caidx c.caidx && diff -r Sr Sc >/dev/null || { echo "round $it differs"; return 1; }
			sleep 0.3
		done
	}
	for cs in 256:1K:4K 16:64:256 4K:4K:4K; do
		ok "random changes, chunk size $cs: 15 rounds, all the same" random_round "$cs"
	done
else
	skip "random changes against a make without the cache" "full tier (CAFS_TEST_FULL)"
fi

done_testing
