# SPDX-License-Identifier: MIT
"""netrec.py JOURNAL_DIR: the DENY, NET and RESOLVE records of a run, one per line:
TYPE op=OP addr=ADDR host=HOST decision=N rule=RULE (doc/journal-format.md; fields
absent from a record are left out).  Independent of bbx-log's output format."""
import struct, sys

TYPES = {13: "DENY", 16: "NET", 17: "RESOLVE"}
TAGS = {1: "op", 28: "addr", 29: "host", 24: "rule", 26: "decision", 34: "access"}
data = open(sys.argv[1] + "/journal", "rb").read()
off = 0
while off + 64 <= len(data):
    magic, ver, typ, ln, hl = struct.unpack_from("<IHHII", data, off)
    if magic != 0x31584242 or ln < 64 or off + ln > len(data):
        break
    if typ in TYPES:
        f, p, out = {}, off + hl, [TYPES[typ]]
        while p + 6 <= off + ln - 8:
            tag, n = struct.unpack_from("<HI", data, p)
            v = data[p + 6:p + 6 + n]
            if tag in (26, 34):
                f[TAGS[tag]] = str(struct.unpack("<I", v)[0])
            elif tag in TAGS:
                f[TAGS[tag]] = v.rstrip(b"\0").decode(errors="replace")
            p += 6 + n
        for k in ("op", "addr", "host", "decision", "access", "rule"):
            if k in f:
                out.append("%s=%s" % (k, f[k]))
        print(" ".join(out))
    off += ln
