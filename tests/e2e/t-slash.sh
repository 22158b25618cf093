#!/bin/bash
# SPDX-License-Identifier: MIT
# t-slash.sh - a name keeps its meaning under the shim.  A writing open of "x/", "f/."
# or "" fails in the kernel (EISDIR, ENOTDIR, ENOENT) and must fail the same way under
# bbx: the capture resolves a name into a directory and a last component, and once
# called the kernel with what it resolved, so that open("x/", O_CREAT) created a file
# "x" and open("f/.", O_WRONLY) opened the file f.  gnulib's configure check "whether
# open recognizes a trailing slash" then answered no, and GNU projects configured under
# bbx built its open replacement (gzip 1.12: lib/open.o).  Here: every open entry point
# with such names, each call's outcome and the tree after them compared with the same
# calls made bare; gnulib's check, compiled and run; 163 mutating calls on awkward names
# (tests/progs/pathcases) bare and under bbx; and bbx-undo's round trips.
. "$BBX_SRCDIR/tests/e2e/lib.sh"
plan 8

CW=${BBX_CALLWRAP:?}
# NAME ARG...: one call each, in a workspace holding a file f, a symlink lnk to it and
# a directory d.  The last two succeed (O_TMPFILE in d/, O_PATH), the rest must fail.
cat >"$T_TMP/cases" <<'CASES'
open nf/ wronly,creat 0644
open nf/ wronly,creat,excl 0644
open nf/ rdonly,creat 0644
open f/ wronly 0
open f/ wronly,trunc 0
open f/ rdonly,trunc 0
open f/ rdwr,creat 0644
open lnk/ wronly 0
open d/ wronly 0
open d/ rdonly,creat 0644
open64 nf/ wronly,creat 0644
openat AT_FDCWD nf/ wronly,creat 0644
openat64 AT_FDCWD f/ wronly,trunc 0
creat nf/ 0644
creat64 f/ 0644
__open_2 f/ wronly
__open64_2 f/ rdwr
__openat_2 AT_FDCWD f/ wronly
__openat64_2 AT_FDCWD lnk/ rdwr
fopen nf/ w
fopen64 f/ a
freopen nf/ w
freopen64 f/ r+
open f/. wronly 0
open f/.. wronly 0
open d/. wronly 0
open d/.. rdwr,creat 0644
open nf/. wronly,creat 0644
open . wronly 0
open .. rdonly,trunc 0
openat AT_FDCWD f/. rdwr 0
fopen f/. w
freopen64 d/. a
creat '' 0644
openat AT_FDCWD '' wronly,creat 0644
open d/ wronly,tmpfile 0600
open d/ wronly,path 0
CASES
setup() { echo data >"$1/f" && ln -s f "$1/lnk" && mkdir "$1/d"; }
# calls DIR: every case in DIR, "NAME ARGS: STATUS MESSAGE" per line
calls() {
	(cd "$1" && while read -r line; do
		eval "set -- $line" # the case's words, '' an empty name
		out=$("$CW" "$@" 2>&1)
		echo "$line: $? ${out##*: }"
	done <"$T_TMP/cases")
}
a=$(new_ws) b=$(new_ws)
setup "$a" && setup "$b"
snap "$b" >"$T_TMP/before"
calls "$a" >"$T_TMP/bare.out"
# one run for all the calls, so that a file made by one would change the next's outcome
cat >"$T_TMP/all.sh" <<EOF2
while read -r line; do
	eval "set -- \$line"
	out=\$("$CW" "\$@" 2>&1)
	echo "\$line: \$? \${out##*: }"
done <"$T_TMP/cases"
EOF2
(cd "$b" && bbx-run --quiet --journal "$T_TMP/j" -- bash "$T_TMP/all.sh") >"$T_TMP/bbx.out"
diff "$T_TMP/bare.out" "$T_TMP/bbx.out" >&2
ok $? "each of $(wc -l <"$T_TMP/cases") writing opens of a name ending in '/', '.' or '..' fails (or succeeds) under bbx as it does bare"
n=$(grep -c ': 0 ' "$T_TMP/bare.out")
[ "$n" -eq 2 ] && [ "$(grep -c ': 0 ' "$T_TMP/bbx.out")" -eq 2 ]
ok $? "only O_TMPFILE in d/ and O_PATH succeed ($n bare)"
# names, types and contents (two workspaces: their times differ)
tree() { (cd "$1" && find . -printf '%p %y %l\n' | sort && cat f); }
tree "$a" >"$T_TMP/a.after"
tree "$b" >"$T_TMP/b.after"
diff "$T_TMP/a.after" "$T_TMP/b.after" >&2 && ! grep -q '^./nf ' "$T_TMP/b.after"
ok $? "the calls leave the tree as they leave it bare: no file nf, f unchanged"

# gnulib's check (m4/open-slash.m4), as configure compiles and runs it
cat >"$T_TMP/openslash.c" <<'C'
#include <fcntl.h>
#if HAVE_UNISTD_H
# include <unistd.h>
#endif
int main (void)
{
  int result = 0;
  if (open ("conftest.lnk/", O_RDONLY) != -1)
    result |= 1;
  if (open ("conftest.sl/", O_CREAT, 0600) >= 0)
    result |= 2;
  return result;
}
C
c=$(new_ws)
if command -v gcc >/dev/null 2>&1; then
	(cd "$c" && touch conftest.tmp && ln -s conftest.tmp conftest.lnk &&
		bbx-run --quiet --journal "$T_TMP/jc" -- sh -c "gcc -o conftest $T_TMP/openslash.c && ./conftest")
	rc=$?
	[ $rc -eq 0 ] && [ ! -e "$c/conftest.sl" ]
	ok $? "gnulib's configure check: open recognizes a trailing slash under bbx (status $rc)"
else
	skip "gcc not installed"
fi

# 163 mutating calls on awkward names (tests/progs/pathcases.c), bare and under bbx:
# the same outcomes, the same trees (the workspace's own name taken out).
PC="$(dirname "$CW")/pathcases"
p=$(new_ws) q=$(new_ws)
"$PC" "$p" | sed "s|$p||" >"$T_TMP/pc.bare"
(cd "$q" && bbx-run --quiet --journal "$T_TMP/jp" -- "$PC" "$q") | sed "s|$q||" >"$T_TMP/pc.bbx"
diff "$T_TMP/pc.bare" "$T_TMP/pc.bbx" >&2
ok $? "$(grep -c ' = ' "$T_TMP/pc.bare") calls on awkward names: the same outcomes and trees under bbx as bare"
bbx-undo --quiet "$T_TMP/jp"
[ -z "$(ls -A "$q")" ]
ok $? "bbx-undo of those calls leaves their workspace empty, as it was"

# The flags a descriptor reports (fcntl F_GETFL) are the ones the program asked for:
# the capture opens a new name relative to its checked directory without following a
# symlink put there since, by openat2's RESOLVE_NO_SYMLINKS, not O_NOFOLLOW, which the
# descriptor would carry.
cat >"$T_TMP/fl.py" <<'PY'
import fcntl, os
for name, fl in (("new", os.O_WRONLY | os.O_CREAT), ("old", os.O_WRONLY | os.O_TRUNC),
                 ("old", os.O_RDWR | os.O_APPEND), ("new2", os.O_RDWR | os.O_CREAT | os.O_EXCL)):
    fd = os.open(name, fl, 0o644)
    print(name, hex(fcntl.fcntl(fd, fcntl.F_GETFL)), os.lseek(fd, 0, os.SEEK_CUR))
    os.close(fd)
PY
f1=$(new_ws) f2=$(new_ws)
echo old >"$f1/old" && echo old >"$f2/old"
(cd "$f1" && python3 "$T_TMP/fl.py") >"$T_TMP/fl.bare"
(cd "$f2" && bbx-run --quiet --journal "$T_TMP/jf" -- python3 "$T_TMP/fl.py") >"$T_TMP/fl.bbx"
diff "$T_TMP/fl.bare" "$T_TMP/fl.bbx" >&2 && [ -s "$T_TMP/fl.bare" ]
ok $? "descriptors report the flags the program asked for, bare and under bbx ($(tr '\n' ' ' <"$T_TMP/fl.bare"))"

bbx-undo --quiet "$T_TMP/j" && snap "$b" >"$T_TMP/b.undone"
same_snap "$T_TMP/before" "$T_TMP/b.undone" "bbx-undo leaves the workspace as it was before the calls"
finish
