#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""jtool.py - damage a copy of a journal file on purpose, for tests/e2e/t-verify.sh.

  jtool.py list J            one line per record: INDEX OFFSET LEN SEQ TYPE CHAIN TRAILER
  jtool.py check J           every trailer equals this file's own XXH64 (self-test)
  jtool.py flip J OFF        flip the low bit of the byte at OFF
  jtool.py delete J I        remove record I (0-based)
  jtool.py swap J I          exchange records I and I+1
  jtool.py dup J I           insert a copy of record I right after it
  jtool.py edit J I          add 1 ns to record I's realtime_ns and recompute its
                             checksum: valid on its own, but the chain no longer holds
  jtool.py truncate J N      cut the file to N bytes

XXH64 is written out here (no python xxhash module on the target) so the edited
record's checksum is recomputed independently of the C code under test.
"""
import struct
import sys

M = (1 << 64) - 1
P1, P2, P3, P4, P5 = (11400714785074694791, 14029467366897019727, 1609587929392839161,
                      9650029242287828579, 2870177450012600261)


def rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M


def rnd(acc, lane):
    acc = (acc + lane * P2) & M
    return (rotl(acc, 31) * P1) & M


def merge(h, v):
    h ^= rnd(0, v)
    return (h * P1 + P4) & M


def xxh64(b, seed=0):
    n, i = len(b), 0
    if n >= 32:
        v = [(seed + P1 + P2) & M, (seed + P2) & M, seed, (seed - P1) & M]
        while i + 32 <= n:
            for k in range(4):
                v[k] = rnd(v[k], struct.unpack_from('<Q', b, i + 8 * k)[0])
            i += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & M
        for k in range(4):
            h = merge(h, v[k])
    else:
        h = (seed + P5) & M
    h = (h + n) & M
    while i + 8 <= n:
        h ^= rnd(0, struct.unpack_from('<Q', b, i)[0])
        h = (rotl(h, 27) * P1 + P4) & M
        i += 8
    if i + 4 <= n:
        h ^= (struct.unpack_from('<I', b, i)[0] * P1) & M
        h = (rotl(h, 23) * P2 + P3) & M
        i += 4
    while i < n:
        h ^= (b[i] * P5) & M
        h = (rotl(h, 11) * P1) & M
        i += 1
    h ^= h >> 33
    h = (h * P2) & M
    h ^= h >> 29
    h = (h * P3) & M
    return h ^ (h >> 32)


def records(data):
    """(offset, bytes) of each record, walking lengths from the start (undamaged file)."""
    out, o = [], 0
    while o + 64 <= len(data):
        ln = struct.unpack_from('<I', data, o + 8)[0]
        if ln < 64 or o + ln > len(data):
            break
        out.append((o, data[o:o + ln]))
        o += ln
    return out


def chain_of(rec):
    # The CHAIN field is the first one, at offset 56: tag u16, length u32, u64.
    tag, ln = struct.unpack_from('<HI', rec, 56)
    return struct.unpack_from('<Q', rec, 62)[0] if (tag, ln) == (32, 8) else None


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    data = bytearray(open(path, 'rb').read())
    recs = records(data)
    if cmd == 'list':
        for i, (o, r) in enumerate(recs):
            seq, = struct.unpack_from('<Q', r, 16)
            typ, = struct.unpack_from('<H', r, 6)
            ch = chain_of(r)
            print(i, o, len(r), seq, typ, '%016x' % (ch or 0), '%016x' % struct.unpack_from('<Q', r, len(r) - 8)[0])
        return 0
    if cmd == 'check':
        bad = [o for o, r in recs if xxh64(bytes(r[:-8])) != struct.unpack_from('<Q', r, len(r) - 8)[0]]
        print('%d records, %d bad' % (len(recs), len(bad)))
        return 1 if bad or not recs else 0
    arg = int(sys.argv[3])
    if cmd == 'flip':
        data[arg] ^= 1
    elif cmd == 'truncate':
        del data[arg:]
    else:
        o, r = recs[arg]
        if cmd == 'delete':
            del data[o:o + len(r)]
        elif cmd == 'swap':
            o2, r2 = recs[arg + 1]
            data[o:o2 + len(r2)] = r2 + r
        elif cmd == 'dup':
            data[o + len(r):o + len(r)] = r
        elif cmd == 'edit':
            r = bytearray(r)
            rt, = struct.unpack_from('<Q', r, 24)
            struct.pack_into('<Q', r, 24, rt + 1)
            struct.pack_into('<Q', r, len(r) - 8, xxh64(bytes(r[:-8])))
            data[o:o + len(r)] = r
        else:
            print('jtool: unknown command ' + cmd, file=sys.stderr)
            return 2
    open(path, 'wb').write(data)
    return 0


if __name__ == '__main__':
    sys.exit(main())
