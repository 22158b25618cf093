#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""diffsnap.py BEFORE AFTER - summarise how two tests/e2e/snapshot.py outputs differ.

One line per change, a removed or added directory collapsed with the paths below it:
    removed   docs/  (and 25 paths below it)
    changed   src/main.c  (content)
Prints nothing when the snapshots are identical.  Exit status 0 either way.
"""
import sys

KINDS = {"10": "file", "4": "dir", "12": "symlink", "1": "fifo", "2": "chr", "6": "blk",
         "14": "sock"}


def load(path):
    entries = {}
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) < 8:
                continue
            rel, kind, mode, uid, gid, size, mtime, extra = fields[:8]
            entries[rel] = {"kind": kind, "mode": mode, "owner": uid + ":" + gid,
                            "size": size, "mtime": mtime, "extra": extra}
    return entries


def collapse(paths, table):
    """Directories whose subtree is entirely in paths are shown once, with a count."""
    out, skip = [], None
    for p in sorted(paths):
        if skip and p.startswith(skip):
            out[-1][1] += 1
            continue
        skip = None
        name = p + ("/" if table[p]["kind"] == "4" else "")
        out.append([name, 0])
        if table[p]["kind"] == "4":
            skip = p + "/"
    return out


def describe(a, b):
    what = []
    if a["kind"] != b["kind"]:
        what.append("%s -> %s" % (KINDS.get(a["kind"], a["kind"]), KINDS.get(b["kind"], b["kind"])))
    elif a["extra"] != b["extra"]:
        what.append("target" if a["kind"] == "12" else "content")
    if a["mode"] != b["mode"]:
        what.append("mode %s -> %s" % (a["mode"], b["mode"]))
    if a["owner"] != b["owner"]:
        what.append("owner")
    if not what and a["size"] != b["size"]:
        what.append("size")
    if not what and a["mtime"] != b["mtime"]:
        what.append("mtime")
    return ", ".join(what)


def main():
    before, after = load(sys.argv[1]), load(sys.argv[2])
    gone = [p for p in before if p not in after]
    new = [p for p in after if p not in before]
    for name, n in collapse(gone, before):
        print("  removed   %s%s" % (name, "  (and %d paths below it)" % n if n else ""))
    for name, n in collapse(new, after):
        print("  added     %s%s" % (name, "  (and %d paths below it)" % n if n else ""))
    for p in sorted(p for p in before if p in after and before[p] != after[p]):
        if before[p]["kind"] == "4" and describe(before[p], after[p]) == "mtime":
            continue  # a directory whose entries changed: shown through them
        print("  changed   %s  (%s)" % (p, describe(before[p], after[p])))


main()
