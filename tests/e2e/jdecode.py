#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# tests/e2e/jdecode.py - a small, independent decoder of a bbx journal (format in
# doc/journal-format.md), for the e2e tests: one JSON object per record on stdout.
# Independent of bbx-log on purpose, so a test checks the bytes, not our own reader.
# Verifies magic, lengths and the field layout; the XXH64 trailer is not checked
# (no xxhash module in the standard library).
import json
import struct
import sys

TYPES = {1: "EXEC", 2: "CREATE", 3: "PRESERVE", 4: "SIZE", 5: "RMDIR", 6: "RENAME",
         7: "META", 8: "DIRMETA", 9: "RESULT", 10: "FINAL", 11: "SEAL", 12: "NOTE",
         13: "DENY", 14: "PROC", 15: "EXIT", 16: "NET", 17: "RESOLVE"}
STR = {1: "op", 2: "path", 3: "path2", 5: "object", 6: "cwd", 19: "xname", 21: "text",
       23: "exe", 24: "rule", 25: "reason", 28: "addr", 29: "host"}
LIST = {7: "argv", 33: "env"}
U64 = {9: "size", 12: "ref", 15: "dev", 16: "ino", 22: "count", 30: "pid", 32: "chain"}
U32 = {10: "kind", 11: "how", 17: "flags", 18: "mask", 26: "decision", 27: "class",
       31: "status", 34: "access"}


def records(data):
    off = 0
    while off + 64 <= len(data):
        magic, ver, typ, ln, hl = struct.unpack_from("<IHHII", data, off)
        if magic != 0x31584242 or ln < 64 or off + ln > len(data) or hl < 56:
            raise SystemExit("bad record at offset %d" % off)
        seq, rt, mono, pid, ppid, uid = struct.unpack_from("<QQQiiI", data, off + 16)
        r = {"type": TYPES.get(typ, typ), "seq": seq, "hpid": pid, "hppid": ppid, "huid": uid}
        p, end = off + hl, off + ln - 8
        while p < end:
            tag, n = struct.unpack_from("<HI", data, p)
            v = data[p + 6:p + 6 + n]
            if p + 6 + n > end:
                raise SystemExit("field overruns record at offset %d" % off)
            if tag in STR:
                r[STR[tag]] = v[:-1].decode("utf-8", "surrogateescape")
            elif tag in LIST:
                r[LIST[tag]] = [s.decode("utf-8", "surrogateescape")
                                for s in v.split(b"\0")[:-1]]
            elif tag in U64:
                r[U64[tag]] = struct.unpack("<Q", v)[0]
            elif tag in U32:
                r[U32[tag]] = struct.unpack("<I", v)[0]
            elif tag == 8 and n == 112:
                # mode uid gid size dev ino rdev nlink atime(s, ns) mtime(s, ns) ctime(s, ns)
                r["stat"] = list(struct.unpack("<14Q", v))
            elif tag == 13:
                r["ret"] = struct.unpack("<q", v)[0]
            elif tag == 14:
                r["err"] = struct.unpack("<i", v)[0]
            p += 6 + n
        yield r
        off += ln


if __name__ == "__main__":
    with open(sys.argv[1], "rb") as f:
        for rec in records(f.read()):
            print(json.dumps(rec, ensure_ascii=False))
