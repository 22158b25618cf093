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
# (tests/progs/pathcases) bare and under bbx; a script of real programs' operations,
# bare and under bbx, by the trees they leave; and bbx-undo's round trips.
. "${BBX_SRCDIR:?is set by make check (tests/local.mk)}/tests/e2e/lib.sh" || exit 99
plan 9

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

# Real programs: a script of coreutils, tar, gzip, python3's shutil and git operations
# (links of every kind, fifos, installs, in-place edits, splits, renames with spaces and
# non-ASCII names) leaves the same tree under bbx as bare: names, types, modes, link
# counts, sizes, contents and symlink targets (the workspace's own name taken out;
# times and git's internals, which carry times, left out).
cat >"$T_TMP/ops.sh" <<'OPS'
set +e
mkdir -p a/b/c d; echo one > a/f; echo two > a/b/g; printf 'x%.0s' $(seq 5000) > big
ln -s f a/lf; ln -s ../a d/la; ln a/f d/hard; mkfifo d/fifo
cp -a a e; cp -r a/ e2/; cp -l a/f e/hl; cp --preserve=all a/b/g d/; cp -s "$PWD/a/f" d/sym
mv a/b/g a/b/c/; mv d/la d/la2; mv e2 a/b/c/; install -D -m 0640 a/f i/j/k/f; install -d -m 0700 i/m
ln -sf f a/lf2; ln -sfn a d/la2; ln -f a/f d/hard2; touch -d '2001-02-03 04:05:06' a/f; touch -h -d '2002-01-01' a/lf
chmod -R g+w a; chmod 0600 d/hard; chown -R 0:0 e; truncate -s 100 big; truncate -s 10 a/b/c/g
sed -i 's/one/uno/' a/f; sed -i.bak 's/x/y/g' big; echo more >> a/f; : > d/sym; tee -a a/b/c/g <<< tee >/dev/null
rm -f d/hard2 a/lf2; rm -rf e2 a/b/c/e2; rmdir i/m; unlink d/fifo; rm -r e/b
split -b 1000 big part.; csplit -s -f cs big 2 2>/dev/null; sort -o sorted a/f; dd if=big of=dd.out bs=7 count=3 2>/dev/null
mkdir -p "sp ace/é"; echo u > "sp ace/é/ü"; mv "sp ace" "space"; ln -s "space/é/ü" uu; cp -P uu uu2; cp -L uu uu3
tar -cf t.tar a d; mkdir x; tar -xf t.tar -C x; tar -xf t.tar -C x --overwrite; gzip -k big; gunzip -c big.gz > big2; rm big.gz
find . -name '*.bak' -delete; find x -type l -exec rm {} +; mktemp -p . tmp.XXXX >/dev/null; mktemp -d -p . dtmp.XXXX >/dev/null
python3 -c "
import os, shutil
shutil.copytree('a', 'py/a', symlinks=True); os.replace('py/a/f', 'py/f'); os.rename('py/a', 'py/b')
with open('py/new', 'x') as f: f.write('n')
os.truncate('py/new', 0); shutil.rmtree('py/b'); os.symlink('new', 'py/ln'); os.link('py/new', 'py/hl'); os.unlink('py/new')
"
{ echo x >nf2/; } 2>&1 | sed 's/^.*: //'; python3 -c "open('nf3/', 'w')" 2>&1 | tail -1
git init -q g 2>/dev/null; cp a/f g/; (cd g && git add f && git -c user.email=a@b -c user.name=n commit -qm m && git mv f f2 && git -c user.email=a@b -c user.name=n commit -qm m2 && git checkout -q HEAD~1 && git gc -q)
OPS
cat >"$T_TMP/tree.py" <<'PY'
import hashlib, os, stat, sys
root = sys.argv[1]
for dp, dns, fns in sorted(os.walk(root)):
    dns.sort()
    for n in sorted(dns + fns):
        p = os.path.join(dp, n)
        r = os.path.relpath(p, root)
        if r == "g/.git" or r.startswith("g/.git/"):
            continue
        st = os.lstat(p)
        extra = ""
        if stat.S_ISLNK(st.st_mode):
            extra = os.readlink(p).replace(root, "WS")
        elif stat.S_ISREG(st.st_mode) and r != "t.tar":  # tar keeps times
            extra = hashlib.sha256(open(p, "rb").read()).hexdigest()[:16]
        if r.startswith(("tmp.", "dtmp.")):
            r = r.split(".")[0] + ".XXXX"
        print(r, oct(st.st_mode), st.st_nlink, "" if stat.S_ISDIR(st.st_mode) else st.st_size, extra)
PY
o1=$(new_ws) o2=$(new_ws)
(cd "$o1" && bash "$T_TMP/ops.sh") >"$T_TMP/ops.bare" 2>&1
(cd "$o2" && bbx-run --quiet --journal "$T_TMP/jo" -- bash "$T_TMP/ops.sh") >"$T_TMP/ops.bbx" 2>&1
python3 "$T_TMP/tree.py" "$o1" >"$T_TMP/tree.bare"
python3 "$T_TMP/tree.py" "$o2" >"$T_TMP/tree.bbx"
diff "$T_TMP/ops.bare" "$T_TMP/ops.bbx" >&2 && diff "$T_TMP/tree.bare" "$T_TMP/tree.bbx" >&2 &&
	[ "$(wc -l <"$T_TMP/tree.bare")" -gt 40 ] && grep -q "^py/hl " "$T_TMP/tree.bare" && grep -q "^x/d/hard " "$T_TMP/tree.bare"
ok $? "coreutils, tar, gzip, python3 and git leave the same tree under bbx as bare ($(wc -l <"$T_TMP/tree.bare") entries)"

bbx-undo --quiet "$T_TMP/j" && snap "$b" >"$T_TMP/b.undone"
same_snap "$T_TMP/before" "$T_TMP/b.undone" "bbx-undo leaves the workspace as it was before the calls"
finish
