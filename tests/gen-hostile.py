#!/usr/bin/env python3
# gen-hostile.py - archives made to exhaust a reader's memory, for
# tests/shell/trust-memory.sh. Nothing here is valid beyond what a reader
# checks before it would run out of memory.
#
#   gen-hostile.py deep DIR DEPTH META_KIB
#       DIR/deep.caidx + DIR/deep.castr: a chain of DEPTH nested
#       directories "d", each carrying META_KIB KiB of xattrs, then the
#       GOODBYEs. Every level's bytes are identical and are one chunk, so
#       the index is 40 bytes a level and the store three small chunk files.
#   gen-hostile.py wide DIR N META_KIB
#       DIR/wide.caidx + DIR/wide.castr: a root with N directories
#       "d000".."dN-1", each holding one directory "x" with META_KIB KiB of
#       xattrs unique to it (a chunk per top directory): N parallel
#       readers each need a node with big metadata at once.
#   gen-hostile.py pad CHUNK MIB
#       append MIB MiB of zstd skippable frames to the chunk file CHUNK.
#   gen-hostile.py xz IN OUT DICT_MIB
#       OUT: IN as one xz stream whose header claims a DICT_MIB MiB
#       dictionary (what the decoder must allocate); the data is the same.
import hashlib
import os
import struct
import subprocess
import sys

ENTRY = 0x1396fabcea5bbb51
XATTR = 0xb8157091f80bc486
FILENAME = 0x6dbb6ebcb3161f0b
GOODBYE = 0xdfd35c5e8327c403
GOODBYE_TAIL = 0x57446fa533702943
INDEX = 0x96824d9c7b129ff9
TABLE = 0xe75b9e112f17417d
TABLE_TAIL = 0x4b4f050e5549ecd1
# 32-bit uids, ns times, permissions, xattrs
FLAGS = 0x2 | 0x20 | 0x100 | 0x10000000


def rec(t, body):
    return struct.pack('<QQ', 16 + len(body), t) + body


def entry():
    return rec(ENTRY, struct.pack('<QQQQQQ', FLAGS, 0o40755, 0, 0, 0, 10**18))


def xattrs(kib, tag=b''):
    out = []
    val = (tag + b'v' * 65536)[:65536]
    left = kib * 1024
    i = 0
    while left > 0:
        v = val[:min(len(val), left)]
        out.append(rec(XATTR, b'user.x%05d\0' % i + v))
        left -= len(v)
        i += 1
    return b''.join(out)


M64 = 2**64 - 1


def _rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & M64


def siphash24(key, data):
    k0, k1 = struct.unpack('<QQ', key)
    v = [k0 ^ 0x736f6d6570736575, k1 ^ 0x646f72616e646f6d, k0 ^ 0x6c7967656e657261, k1 ^ 0x7465646279746573]

    def rnd():
        v[0] = (v[0] + v[1]) & M64; v[1] = _rotl(v[1], 13); v[1] ^= v[0]; v[0] = _rotl(v[0], 32)
        v[2] = (v[2] + v[3]) & M64; v[3] = _rotl(v[3], 16); v[3] ^= v[2]
        v[0] = (v[0] + v[3]) & M64; v[3] = _rotl(v[3], 21); v[3] ^= v[0]
        v[2] = (v[2] + v[1]) & M64; v[1] = _rotl(v[1], 17); v[1] ^= v[2]; v[2] = _rotl(v[2], 32)
    tail = len(data) % 8
    for i in range(0, len(data) - tail, 8):
        m, = struct.unpack('<Q', data[i:i + 8])
        v[3] ^= m; rnd(); rnd(); v[0] ^= m
    b = (len(data) & 0xff) << 56
    for i, c in enumerate(data[len(data) - tail:]):
        b |= c << (8 * i)
    v[3] ^= b; rnd(); rnd(); v[0] ^= b
    v[2] ^= 0xff
    for _ in range(4):
        rnd()
    return v[0] ^ v[1] ^ v[2] ^ v[3]


HASH_KEY = bytes([0xb3, 0x84, 0x1d, 0x0f, 0x2b, 0x44, 0x74, 0x85, 0xc1, 0x2e, 0xc2, 0xd1, 0x30, 0xed, 0x36, 0x27])


def compress(data):
    return subprocess.run(['zstd', '-q', '-c', '-3'], input=data, stdout=subprocess.PIPE, check=True).stdout


def put(store, data):
    cid = hashlib.sha256(data).hexdigest()
    d = os.path.join(store, cid[:4])
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, cid + '.cacnk'), 'wb') as f:
        f.write(compress(data))
    return bytes.fromhex(cid)


def deep(outdir, depth, kib):
    store = os.path.join(outdir, 'deep.castr')
    os.makedirs(store, exist_ok=True)
    meta = xattrs(kib)
    root = entry() + meta
    level = rec(FILENAME, b'd\0') + entry() + meta
    # then the GOODBYEs, innermost first: each names its one child "d"
    # (the innermost none) and points back at its directory's ENTRY
    h = siphash24(HASH_KEY, b'd')
    last, g = b'', len(root) + depth * len(level)
    for i in range(depth, -1, -1):
        entry_at = 0 if i == 0 else len(root) + (i - 1) * len(level) + 18
        child_at = len(root) + i * len(level)
        items = b'' if i == depth else struct.pack('<QQQ', g - child_at, g - child_at, h)
        size = 16 + len(items) + 24
        last += rec(GOODBYE, items + struct.pack('<QQQ', g - entry_at, size, GOODBYE_TAIL))
        g += size
    write_index(outdir, 'deep.caidx', store, [root] + [level] * depth + [last])


def write_index(outdir, name, store, chunks):
    items, end = [], 0
    for c in chunks:
        end += len(c)
        items.append(struct.pack('<Q', end) + put(store, c))
    big = max(len(c) for c in chunks)
    head = struct.pack('<QQQQQQ', 48, INDEX, FLAGS, 1, big // 2, big)
    table = struct.pack('<QQ', 2**64 - 1, TABLE) + b''.join(items)
    tail = struct.pack('<QQQQQ', 0, 0, 48, 16 + 40 * len(items) + 40, TABLE_TAIL)
    with open(os.path.join(outdir, name), 'wb') as f:
        f.write(head + table + tail)


def layout(n):
    # casync's GOODBYE order: the sorted items as a binary search tree
    # in array form (the encoder's ca_catar_goodbye_layout)
    perm, nxt = [0] * n, [0]

    def fill(i):
        while i < n:
            fill(2 * i + 1)
            perm[i] = nxt[0]
            nxt[0] += 1
            i = 2 * i + 2
    fill(0)
    return perm


def goodbye(g, entry_at, children):
    # children: (start, end, name) of each child; g: where this GOODBYE starts
    its = sorted((siphash24(HASH_KEY, nm), st, en) for st, en, nm in children)
    body = b''.join(struct.pack('<QQQ', g - its[p][1], its[p][2] - its[p][1], its[p][0])
                    for p in layout(len(its)))
    size = 16 + len(body) + 24
    return rec(GOODBYE, body + struct.pack('<QQQ', g - entry_at, size, GOODBYE_TAIL))


def wide(outdir, n, kib):
    store = os.path.join(outdir, 'wide.castr')
    os.makedirs(store, exist_ok=True)
    chunks = [entry()]
    off, kids = len(chunks[0]), []
    for i in range(n):
        nm = b'd%03d' % i
        start = off
        fn = rec(FILENAME, nm + b'\0')
        d_entry = start + len(fn)
        part = fn + entry()
        x_start = start + len(part)
        xfn = rec(FILENAME, b'x\0')
        x_entry = x_start + len(xfn)
        part += xfn + entry() + xattrs(kib, b'%05d' % i)
        part += goodbye(start + len(part), x_entry, [])
        x_end = start + len(part)
        part += goodbye(start + len(part), d_entry, [(x_start, x_end, b'x')])
        off += len(part)
        kids.append((start, off, nm))
        chunks.append(part)
    chunks.append(goodbye(off, 0, kids))
    write_index(outdir, 'wide.caidx', store, chunks)


def pad(chunk, mib):
    with open(chunk, 'ab') as f:
        left = mib << 20
        while left > 0:
            n = min(left, 16 << 20)
            f.write(struct.pack('<II', 0x184D2A50, n) + bytes(n))
            left -= n


def xz(inp, out, dict_mib):
    import lzma
    import zlib
    with open(inp, 'rb') as f:
        data = f.read()
    x = bytearray(lzma.compress(data, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64,
                                filters=[{'id': lzma.FILTER_LZMA2, 'dict_size': 4096}]))
    # the block header after the 12-byte stream header: size, flags,
    # optional sizes (varints), then the LZMA2 filter: id 0x21, 1, props
    hsize = (x[12] + 1) * 4
    pos, flags = 14, x[13]
    for bit in (0x40, 0x80):
        if flags & bit:
            while x[pos] & 0x80:
                pos += 1
            pos += 1
    assert x[pos] == 0x21 and x[pos + 1] == 1
    # props p: 2^(p/2 + 12) bytes for even p
    x[pos + 2] = 2 * ((dict_mib << 20).bit_length() - 1 - 12)
    x[12 + hsize - 4:12 + hsize] = struct.pack('<I', zlib.crc32(bytes(x[12:12 + hsize - 4])))
    with open(out, 'wb') as f:
        f.write(x)


if __name__ == '__main__':
    if sys.argv[1] == 'deep':
        deep(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif sys.argv[1] == 'wide':
        wide(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif sys.argv[1] == 'pad':
        pad(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1] == 'xz':
        xz(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        sys.exit('usage: gen-hostile.py deep DIR DEPTH META_KIB | wide DIR N META_KIB | pad CHUNK MIB | xz IN OUT DICT_MIB')
