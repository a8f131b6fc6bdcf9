# tests/lib-cache.sh - data and chunk-listing helpers for the cache tests and
# bench/update.sh. Source after tests/lib.sh (or define $T yourself).
#
#   rand FILE SIZE SEED          deterministic random bytes (tests/gen-data)
#   index_ids INDEX              distinct chunk ids of a .caibx/.caidx, sorted hex
#   store_ids STORE              ids of the *.cacnk in a store, sorted hex
#   store_bytes STORE ID...      total size of those chunk files
#   gen_tree DIR SEED [SCALE]    an OS-like tree: text and binary files, a few big ones
#   update_tree V1 V2 SEED       V2 = V1 with some files changed, added, removed (as an update does)
#   tar_image DIR FILE           a deterministic tar of DIR: a disk-image-like blob

# every byte and every choice below comes from tests/gen-data ($GEN, the
# tests' one generator; tests/lib.sh sets it, bench/ scripts get the default)
: "${GEN:=${GEN_DATA:-$(dirname "${CAFS:?}")/tests/gen-data}}"
export GEN

rand() { "$GEN" "$2" "$3" >"$1"; }

# python3 prelude: Gen(seed).below(n) / .random() / .choice(seq) /
# .bytes(n) / .text(n), all from gen-data
_GEN_PY='
import os, subprocess
class Gen:
    def __init__(self, seed):
        self.seed, self.buf, self.at = seed, b"", 0
    def _u32(self):
        if self.at + 4 > len(self.buf):
            self.buf = gen(max(65536, 2 * len(self.buf)), self.seed)
        v = int.from_bytes(self.buf[self.at:self.at + 4], "little")
        self.at += 4
        return v
    def below(self, n):
        return self._u32() % n
    def randint(self, lo, hi):
        return lo + self.below(hi - lo + 1)
    def random(self):
        return self._u32() / 2**32
    def choice(self, seq):
        return seq[self.below(len(seq))]
    def bytes(self, n, mode="random"):
        return gen(n, self._u32(), mode)
def gen(n, seed, mode="random"):
    return subprocess.run([os.environ["GEN"], str(n), str(seed), mode], stdout=subprocess.PIPE, check=True).stdout
'

index_ids() {
	python3 - "$1" <<'PY' | sort -u
import sys
d = open(sys.argv[1], 'rb').read()
for off in range(64, len(d) - 40, 40):
    print(d[off + 8:off + 40].hex())
PY
}

store_ids() { find "$1" -name '*.cacnk' -printf '%f\n' 2>/dev/null | sed 's/\.cacnk$//' | sort; }

store_bytes() {
	local store=$1 id s=0
	shift
	for id in "$@"; do
		s=$((s + $(stat -c %s "$store/${id:0:4}/$id.cacnk")))
	done
	echo $s
}

gen_tree() {
	python3 - "$1" "$2" "${3:-1}" <<PY
$_GEN_PY
import sys
root, seed, scale = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
r = Gen(seed)
for d in range(int(12 * scale) or 1):
    dd = os.path.join(root, 'usr', 'lib%02d' % d)
    os.makedirs(dd, exist_ok=True)
    for f in range(r.randint(8, 20)):
        kind = r.random()
        if kind < 0.5:
            data = r.bytes(r.randint(200, 40000), "text")
        elif kind < 0.95:
            data = r.bytes(r.randint(1000, 120000))
        else:
            data = r.bytes(r.randint(400000, 1500000))
        with open(os.path.join(dd, 'f%03d' % f), 'wb') as fh:
            fh.write(data)
PY
}

update_tree() {
	cp -a "$1" "$2"
	python3 - "$2" "$3" <<PY
$_GEN_PY
import sys
root, seed = sys.argv[1], int(sys.argv[2])
r = Gen(seed)
files = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)
for p in files:
    x = r.random()
    if x < 0.06:                     # a new version of the file
        data = bytearray(open(p, 'rb').read())
        for _ in range(r.randint(1, 4)):
            at = r.below(len(data) or 1)
            data[at:at + r.randint(1, 200)] = r.bytes(r.randint(1, 300))
        open(p, 'wb').write(data)
    elif x < 0.08:                   # removed
        os.unlink(p)
dirs = sorted({os.path.dirname(p) for p in files})
for i in range(max(1, len(files) // 30)):  # added
    with open(os.path.join(r.choice(dirs), 'new%03d' % i), 'wb') as fh:
        fh.write(r.bytes(r.randint(2000, 100000)))
PY
}

tar_image() {
	tar -C "$1" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=gnu -cf "$2" .
}

# usable inside `ok "..." bash -c '...'` too
export -f rand index_ids store_ids store_bytes
