#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# cgcalls.py CALLGRIND_FILE FUNCTION... - t-cost.sh: how many times each FUNCTION was
# called in the profile, from any caller (the sum of its `calls=` lines), one number
# per FUNCTION on one line.  callgrind's files compress names: "cfn=(12) name" the
# first time, "cfn=(12)" after; a name never called reads 0.
import re
import sys

names = {}
calls = {}
callee = None


def name(field):
    m = re.match(r"\((\d+)\)(?: (.*))?", field)
    if not m:
        return field
    if m.group(2):
        names[m.group(1)] = m.group(2)
    return names.get(m.group(1), "?")


with open(sys.argv[1], errors="replace") as f:
    for line in f:
        if line.startswith("fn="):
            name(line[3:].strip())  # learns the id a later cfn= may use
        elif line.startswith("cfn="):
            callee = name(line[4:].strip())
        elif line.startswith("calls=") and callee is not None:
            calls[callee] = calls.get(callee, 0) + int(line[6:].split()[0])
print(" ".join(str(calls.get(fn, 0)) for fn in sys.argv[2:]))
