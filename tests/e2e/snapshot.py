#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""snapshot.py DIR - print one line per path under DIR (DIR itself included):
relative path, type, mode, uid, gid, size, sha256 (regular files), link target
(symlinks), mtime in ns, rdev (devices), and the link count of non-directories (so an
undo that leaves a stray hard link somewhere - in its journal, say - shows); then one
line per extended attribute the caller can list (user.*, and trusted.* as root), with
its value.  Sorted, so two snapshots of identical trees are byte-identical."""
import hashlib, os, stat, sys

def line(root, p):
    st = os.lstat(p)
    rel = os.path.relpath(p, root)
    kind = stat.S_IFMT(st.st_mode)
    extra = ""
    if stat.S_ISREG(st.st_mode):
        h = hashlib.sha256()
        with open(p, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        extra = h.hexdigest()
    elif stat.S_ISLNK(st.st_mode):
        extra = "-> " + os.readlink(p)
    elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        extra = "rdev=%d" % st.st_rdev
    mtime = str(st.st_mtime_ns)
    links = "-" if stat.S_ISDIR(st.st_mode) else str(st.st_nlink)
    out = ["%s\t%o\t%o\t%d\t%d\t%d\t%s\t%s\tnlink=%s" % (
        rel, kind >> 12, stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid,
        st.st_size if not stat.S_ISDIR(st.st_mode) else 0, mtime, extra, links)]
    try:
        names = os.listxattr(p, follow_symlinks=False)
    except OSError:  # a filesystem without extended attributes
        names = []
    for n in names:
        out.append("%s\txattr\t%s=%r" % (rel, n, os.getxattr(p, n, follow_symlinks=False)))
    return out

def main():
    root = sys.argv[1]
    out = line(root, root)
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            out.extend(line(root, os.path.join(d, n)))
    out.sort()
    sys.stdout.write("\n".join(out) + "\n")

main()
