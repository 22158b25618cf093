#!/bin/bash
# SPDX-License-Identifier: MIT
# t-memcheck.sh - the shim's own memory errors, seen by valgrind's memcheck in real
# programs under bbx-run (default policy): sed -i (mkostemp, rename over the file),
# tar -x and -c, cp, mv, ln, mkdir -p, chmod, touch, rm -rf, shell redirections, exec
# through sh and env, and tmpfile and mkdtemp (tests/progs/callwrap).  --error-exitcode makes any read of an uninitialised value, any
# invalid read or write, fail the program; then bbx-undo must give back the tree as it
# was.  (Session 42: mkstemp's pending creation was left uninitialised on the stack, and
# its garbage "kept" identity could mark the new descriptor; memcheck found it.)
# valgrind 3.19 has no openat2: the shim's reads take their general path under it.
. "${BBX_SRCDIR:?is set by make check (tests/local.mk)}/tests/e2e/lib.sh" || exit 99
plan 4
if ! command -v valgrind >/dev/null 2>&1; then
	for _ in 1 2 3 4; do skip "valgrind not installed"; done
	exit 0
fi
W=$(new_ws)
mkdir -p "$W/src/d1/d2" "$W/old"
for i in $(seq 20); do printf 'line e %s\nmore e\n' "$i" >"$W/src/d1/f$i.txt"; done
printf 'keep e\n' >"$W/old/a" && printf 'keep b\n' >"$W/old/b" && ln -s a "$W/old/l"
tar -cf "$T_TMP/in.tar" -C "$W/src" .
snap "$W" >"$T_TMP/before"
J="$T_TMP/j"
script='set -e
tar -xf "$1"
sed -i "s/e/E/" d1/f1.txt d1/f2.txt d1/f3.txt old/a
cp -r d1 d3 && mv d3 d4 && ln -s d4 d5 && mkdir -p x/y/z
chmod 600 old/b && touch -d 2001-01-01 old/b && echo more >>old/b && echo new >x/y/z/n
env true && sh -c "echo sub >x/s"
tar -cf x/out.tar d4
"$2" tmpfile data >/dev/null && "$2" mkdtemp "$PWD/x/tdXXXXXX" >/dev/null
rm -rf d1 d4 d5 old/l x/td*'
(cd "$W" && bbx-run --quiet --journal "$J" -- valgrind -q --error-exitcode=99 \
	--trace-children=yes sh -c "$script" sh "$T_TMP/in.tar" "$BBX_CALLWRAP") >"$T_TMP/out" 2>&1
rc=$?
grep -E '^==[0-9]+== ' "$T_TMP/out" | head -30 | sed 's/^/# /' >&2
[ $rc -eq 0 ] && ! grep -qE '^==[0-9]+== (Invalid|Conditional|Use of uninit|Syscall param)' "$T_TMP/out"
ok $? "coreutils, sed -i, tar, redirections and execs under memcheck under bbx-run: no memory error (exit $rc)"
[ -f "$W/x/y/z/n" ] && [ -f "$W/x/out.tar" ] && grep -qx 'kEep e' "$W/old/a" && [ ! -e "$W/d1" ]
ok $? "... and the programs did their work"
n=$(bbx-log "$J" 2>/dev/null | grep -cE ' sed create mkostemp(64)? .*/sed[^/]* = [0-9]+$')
[ "$n" -ge 4 ]
ok $? "... sed's temporary files are in the journal ($n mkstemp records)"
bbx-undo "$J" >/dev/null 2>&1
snap "$W" >"$T_TMP/after"
same_snap "$T_TMP/before" "$T_TMP/after" "bbx-undo: the tree as it was, byte for byte"
finish
