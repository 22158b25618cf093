# SPDX-License-Identifier: MIT
"""stcalls.py - reading `strace -f -o FILE` output in the cost tests (t-cost.sh).

calls(path): the (pid, call) of each call ("0" as the pid of a trace without -f), a call
split by another process's lines joined into one.
mappings(path, name, mode): for each openat of a file whose last component is name,
with flags starting with mode (O_RDONLY, O_RDWR), the first mmap of the descriptor it
returned, in the same process: (pid, the mmap's protection, its flags, its address, the
calls of that process after it)."""
import re


def calls(path):
    # A call another process interrupted is traced in two lines ("call(args <unfinished
    # ...>", later "<... call resumed>rest"): joined here into one, in its process's
    # order, so that a split mmap or madvise reads as a whole one (bbx-run reads the
    # journal while the command runs, which made the state's madvise split in ~1 run of
    # 25: "6 of 7 advised MADV_RANDOM").
    pending = {}
    for line in open(path):
        m = re.match(r"(?:(\d+) +)?(.*)", line)
        pid, call = m.group(1) or "0", m.group(2)
        if call.endswith(" <unfinished ...>"):
            pending[pid] = call[: -len(" <unfinished ...>")]
            continue
        r = re.match(r"<\.\.\. [a-z0-9_]+ resumed>(.*)", call)
        if r and pid in pending:
            call = pending.pop(pid) + re.sub(r"\s+= ", " = ", r.group(1), count=1)
        yield pid, call


def mappings(path, name, mode):
    seen = list(calls(path))
    out, want = [], {}
    for i, (pid, call) in enumerate(seen):
        o = re.match(r'openat\(AT_FDCWD, "[^"]*/' + re.escape(name) + r'", ' + mode +
                     r'[^)]*\) = (\d+)$', call)
        if o:
            want[pid] = o.group(1)
            continue
        mm = re.match(r"mmap\(NULL, \d+, ([A-Z_|]+), ([A-Z_|]+), (\d+), 0\) = (0x[0-9a-f]+)$", call)
        if mm and want.get(pid) == mm.group(3):
            del want[pid]
            after = [c for p, c in seen[i + 1:] if p == pid]
            out.append((pid, mm.group(1), mm.group(2), mm.group(4), after))
    return out
