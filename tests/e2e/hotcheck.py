#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# hotcheck.py SHIM CALLGRIND_FILE... - t-layout.sh: every function of SHIM that
# callgrind saw run in a fork child (after its atfork handler) or in a process the child
# became lies in SHIM's .text.bbx_hot section (shim/hot.ld).  Prints the ones that do not
# and exits 1; exits 2 if no child's profile names any SHIM function (no measure).  The
# parent is the one process whose final profile (no .N suffix) is a bash's.
import re
import subprocess
import sys

shim, files = sys.argv[1], sys.argv[2:]
tops = []
for path in files:
    m = re.fullmatch(r"[^.]+\.(\d+)", path.split("/")[-1])
    if m and re.search(r"^cmd:.*\bbash\b", open(path, errors="replace").read(), re.M):
        tops.append(m.group(1))
if len(tops) != 1:
    print("cannot tell the parent bash among", files)
    sys.exit(2)
top = tops[0]
lo = hi = None
for line in subprocess.run(["readelf", "-SW", shim], capture_output=True, text=True,
                           check=True).stdout.splitlines():
    m = re.search(r"\]\s+\.text\.bbx_hot\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", line)
    if m:
        lo = int(m.group(1), 16)
        hi = lo + int(m.group(2), 16)
if lo is None:
    print("no .text.bbx_hot section in", shim)
    sys.exit(1)
addrs = {}
for line in subprocess.run(["nm", shim], capture_output=True, text=True,
                           check=True).stdout.splitlines():
    p = line.split()
    if len(p) == 3 and p[1] in "tTwW":
        addrs.setdefault(p[2], []).append(int(p[0], 16))

# Callgrind names an object or function once per process and then by number alone, in
# the later parts (.1 .2 ...) too: each process's files are read in order.
byproc = {}
for path in files:
    m = re.search(r"\.(\d+)(?:\.(\d+))?$", path)
    if m and m.group(1) != top:
        byproc.setdefault(m.group(1), []).append((int(m.group(2) or 1 << 30), path))
# libc functions the shim must not call between fork and exec (each is one more window
# of libc's code for the child to fault in): errno's address is cached per thread
# (bbx_errno_loc).
FORBIDDEN = {"__errno_location"}
seen, calls = set(), set()
for parts in byproc.values():
    obs, fns = {}, {}
    for _, path in sorted(parts):
        text = open(path, errors="replace").read()
        # the parent's history up to the fork, which the child inherits, is not counted
        count = "Trigger: --dump-before=atfork_child" not in text
        # the calls checked only between the fork and the exec (a new program faults in
        # libc's code anyway)
        child = "Trigger: --dump-before=execve" in text
        ob, infn = None, ""
        for line in text.splitlines():
            m = re.match(r"^(ob|fn|cob|cfn)=\((\d+)\)(?: (.*))?$", line)
            if not m:
                continue
            kind, idx, name = m.groups()
            table = obs if kind in ("ob", "cob") else fns
            if name:
                table[idx] = name
            if kind == "ob":
                ob = obs.get(idx, "")
            elif kind == "cfn" and child and infn and fns.get(idx, "") in FORBIDDEN:
                calls.add("%s->%s" % (infn, fns[idx]))
            elif kind == "fn":
                infn = ""
            # valgrind names no object for code outside the shim's .text output section
            # (.text.bbx_hot included): "???"; such names count if they are the shim's
            if kind == "fn" and count and (ob == "???" or ob.endswith("/" + shim.split("/")[-1])):
                fn = re.sub(r"'\d+$", "", fns.get(idx, ""))
                if fn and (fn in addrs or (ob != "???" and fn.startswith("0x"))):
                    seen.add(fn)
                    infn = fn
if not seen:
    print("no profile of a fork child names a function of", shim)
    sys.exit(2)
out = []
for fn in sorted(seen):
    if fn.startswith("0x"):
        places = [int(fn, 16)]
    else:
        places = addrs.get(fn, [])
    if not any(lo <= a < hi for a in places):
        out.append(fn)
print("%d functions ran in fork children and the programs they became; outside "
      ".text.bbx_hot: %s; calls into %s: %s" % (len(seen), " ".join(out) or "none",
                                               "/".join(sorted(FORBIDDEN)),
                                               " ".join(sorted(calls)) or "none"))
sys.exit(1 if out or calls else 0)
