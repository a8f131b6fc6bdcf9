#!/usr/bin/python3
# delta-hostile.py KIND N INDEX PACK - a blob index of N chunks of 32
# bytes (chunk sizes 16:32:64) and a delta pack for it that a hostile
# writer made (the table's digest right, so only the entries' checks
# stand in the way):
#   spread       N plain entries of 1 byte, 70000 bytes apart: N ranges
#                to merge (data sparse: the file is large, not its blocks)
#   overlapping  two entries whose bytes overlap (the second begins inside
#                the first)
import hashlib, os, struct, sys

kind, n, index, pack = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
FLAGS = 0xB000000000000000  # a blob index's (sha512-256)
out = bytearray(struct.pack("<QQQQQQ", 48, 0x96824D9C7B129FF9, FLAGS, 16, 32, 64))
out += struct.pack("<QQ", 0xFFFFFFFFFFFFFFFF, 0xE75B9E112F17417D)
for i in range(n):
    out += struct.pack("<Q", 32 * (i + 1)) + hashlib.sha256(b"c%d" % i).digest()
out += struct.pack("<QQQQQ", 0, 0, 48, 16 + 40 * n + 40, 0x4B4F050E5549ECD1)
with open(index, "wb") as f:
    f.write(out)
to_digest = hashlib.sha256(out).digest()

if kind == "spread":
    ents, step = [(70000 * i, 1) for i in range(n)], 70000
    data_size = 70000 * n
else:
    ents = [(0, 100), (10, 20)]
    data_size = 200
table = bytearray()
for i, (off, ln) in enumerate(ents):
    table += hashlib.sha256(b"new%d" % i).digest() + bytes(8) + struct.pack("<QQQ", 32, off, ln)
tsize = len(table) + 32
hdr = b"CADELTA\n" + struct.pack("<IIQ", 1, 128, FLAGS) + bytes(32) + to_digest
hdr += struct.pack("<QQQQQ", 0, 32 * n, len(ents), tsize, data_size)
assert len(hdr) == 128
with open(pack, "wb") as f:
    f.write(hdr + table + hashlib.sha256(hdr + table).digest())
    f.truncate(128 + tsize + data_size)
