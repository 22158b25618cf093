#!/bin/bash
# SPDX-License-Identifier: MIT
# t-policy.sh - path and exec enforcement by real programs under fixture policies
# (issue 3; bbx-policy(5)).  Every refusal must: fail the program's call (EACCES for
# paths, EPERM for exec and safe mode), leave the target untouched, write a DENY record
# naming the rule, and print one "bbx: refused ..." line.  Everything the policy allows
# must still work.
. "${BBX_SRCDIR:?is set by make check (tests/local.mk)}/tests/e2e/lib.sh" || exit 99
plan 133

STATIC="$BBX_BUILDDIR/tests/progs/staticprog"
# Outside every write root of the fixtures (which name only the workspace).
OUT=$(mktemp -d /var/tmp/bbx-out.XXXXXX)
trap 'rm -rf "$T_TMP" "$OUT"' EXIT
FAKEHOME="$T_TMP/home"
mkdir -p "$FAKEHOME/.ssh"
SECRET="SECRET-KEY-$RANDOM$RANDOM"
echo "$SECRET" >"$FAKEHOME/.ssh/id_rsa"
echo keep >"$OUT/existing"
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@e GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@e
export GIT_CONFIG_NOSYSTEM=1

# pol NAME BODY: a fixture policy file.
pol() { printf '%b' "$2" >"$T_TMP/$1.ini"; echo "$T_TMP/$1.ini"; }
ENFORCE=$(pol enforce "[general]\nmode = enforce\n[paths]\nwrite = \${WORKSPACE}\nprotect = \${WORKSPACE}/.git/hooks\ndeny_read = $FAKEHOME/.ssh\n[exec]\ndeny = touch */forbidden-marker\nlog = git push*\nstatic = deny\n")

# run POLICY J CMD...: in the workspace $W, under bbx-run; stdout+stderr to $T_TMP/o.
N=0
run() {
	local p=$1
	shift
	N=$((N + 1))
	J="$T_TMP/j.$N"
	(cd "$W" && HOME="$FAKEHOME" bbx-run --quiet --policy "$p" --journal "$J" -- "$@") >"$T_TMP/o" 2>&1
}
# denied OP SUBSTR: the journal J has a DENY record of op OP whose path (or path2, or
# argv) contains SUBSTR, with a rule or reason.
denied() {
	bbx-log --json "$J" 2>/dev/null | python3 -c '
import json, sys
op, sub = sys.argv[1], sys.argv[2]
for line in sys.stdin:
    r = json.loads(line)
    if r.get("type") != "DENY" or (op and r.get("op") != op):
        continue
    hay = [str(r.get("path", "")), str(r.get("path2", "")), " ".join(r.get("argv") or [])]
    if any(sub in h for h in hay) and (r.get("rule") or r.get("reason")):
        sys.exit(0)
sys.exit(1)' "$1" "$2"
}
# okv DESC: like ok $?, and shows the run's output when it failed.
okv() { local rc=$?; [ $rc -ne 0 ] && sed 's/^/#   /' "$T_TMP/o" | head -12 >&2; ok $rc "$1"; }
said() { grep -q "$1" "$T_TMP/o" || { diag "stderr lacks: $1"; sed 's/^/#   /' "$T_TMP/o" | head -8 >&2; return 1; }; }

# ---- writes outside the write roots, by several programs ------------------------------
W=$(new_ws)
run "$ENFORCE" sh -c "echo x > $OUT/a"
[ $? -ne 0 ] && [ ! -e "$OUT/a" ]; ok $? "sh redirection outside the workspace: refused, nothing created"
denied "" "$OUT/a"; ok $? "... DENY record"
said "bbx: refused write to $OUT/a (.*\[paths\] write: outside write roots)"; ok $? "... one explanation line naming the rule"
run "$ENFORCE" cp /etc/hostname "$OUT/b"
[ $? -ne 0 ] && [ ! -e "$OUT/b" ] && said "Permission denied"; ok $? "cp outside: refused with EACCES"
denied "" "$OUT/b"; ok $? "... DENY record"
run "$ENFORCE" python3 -c "open('$OUT/c', 'w').write('x')"
[ $? -ne 0 ] && [ ! -e "$OUT/c" ] && said PermissionError; ok $? "python3 open('w') outside: PermissionError"
run "$ENFORCE" python3 -c "import os; os.remove('$OUT/existing')"
[ $? -ne 0 ] && [ "$(cat "$OUT/existing")" = keep ]; ok $? "python3 os.remove outside: refused, file intact"
run "$ENFORCE" git init -q "$OUT/repo"
[ $? -ne 0 ] && [ ! -e "$OUT/repo/.git/HEAD" ]; ok $? "git init outside: refused"
run "$ENFORCE" sed -i s/keep/gone/ "$OUT/existing"
[ $? -ne 0 ] && [ "$(cat "$OUT/existing")" = keep ]; ok $? "sed -i outside: refused, file intact"
run "$ENFORCE" env -i /bin/sh -c "echo x > $OUT/d"
[ $? -ne 0 ] && [ ! -e "$OUT/d" ]; ok $? "env -i child: still enforced"
run "$ENFORCE" mv "$OUT/existing" "$W/moved"
[ $? -ne 0 ] && [ -e "$OUT/existing" ] && [ ! -e "$W/moved" ]; ok $? "mv from outside into the workspace: refused (the source is a mutation too)"

# ---- indirection: symlinks and ".." out of the write root ------------------------------
ln -s "$OUT" "$W/esc"
run "$ENFORCE" sh -c "echo x > esc/e"
[ $? -ne 0 ] && [ ! -e "$OUT/e" ]; ok $? "write through a symlink that leaves the workspace: refused"
ln -s "$OUT/f" "$W/dangling"
run "$ENFORCE" sh -c "echo x > dangling"
[ $? -ne 0 ] && [ ! -e "$OUT/f" ]; ok $? "O_CREAT through a dangling symlink pointing outside: refused"
ln -s "$OUT/existing" "$W/outlink"
run "$ENFORCE" python3 -c "open('$W/outlink', 'w').write('overwritten')"
[ $? -ne 0 ] && [ "$(cat "$OUT/existing")" = keep ]; ok $? "O_TRUNC through a final symlink to an existing file outside: refused, file intact"
run "$ENFORCE" python3 -c "open('$W/outlink', 'a').write('appended')"
[ $? -ne 0 ] && [ "$(cat "$OUT/existing")" = keep ]; ok $? "O_APPEND through a final symlink to an existing file outside: refused, file intact"
rm -f "$W/outlink"
run "$ENFORCE" sh -c "echo x > ../$(basename "$W")/../g"
[ $? -ne 0 ] && [ ! -e "$(dirname "$W")/g" ]; ok $? "write via .. out of the workspace: refused"
run "$ENFORCE" python3 -c "import os; os.symlink('x', '$OUT/h')"
[ $? -ne 0 ] && [ ! -L "$OUT/h" ]; ok $? "symlink created outside: refused"
run "$ENFORCE" chmod 777 "$OUT/existing"
[ $? -ne 0 ] && [ "$(stat -c %a "$OUT/existing")" != 777 ]; ok $? "chmod outside: refused"
# The resolution's shortcuts (issue 5): a second name is resolved anew unless its
# directory is, word for word, one this call already opened without a symlink; a
# missing parent is decided on the words.
run "$ENFORCE" python3 -c "import os; open('$W/r1', 'w').write('x'); os.rename('$W/r1', '$W/esc/r1')"
[ $? -ne 0 ] && [ -e "$W/r1" ] && [ ! -e "$OUT/r1" ] && said PermissionError; ok $? "rename into a symlinked directory that leaves the workspace: refused"
run "$ENFORCE" python3 -c "open('$OUT/nodir/x', 'w')"
[ $? -ne 0 ] && said PermissionError; ok $? "O_CREAT in a missing directory outside: refused (EACCES), not merely ENOENT"
run "$ENFORCE" python3 -c "open('$W/nodir/x', 'w')"
[ $? -ne 0 ] && said FileNotFoundError && [ ! -e "$W/nodir" ]; ok $? "O_CREAT in a missing directory inside: ENOENT, as bare"

# ---- what the policy allows still works --------------------------------------------------
run "$ENFORCE" sh -c 'echo fine > inside && cp inside copy && mkdir -p a/b && mv copy a/b/ && rm inside && cat a/b/copy'
[ $? -eq 0 ] && grep -q fine "$T_TMP/o" && [ -f "$W/a/b/copy" ]; ok $? "writes inside the workspace: allowed"
# .git/hooks is protected, but did not exist when this run started: git init may make it.
run "$ENFORCE" sh -c 'git init -q . && echo a > a.txt && git add a.txt && git commit -qm one && git log --oneline | wc -l'
[ $? -eq 0 ] && [ -d "$W/.git" ]; okv "git init/add/commit inside the workspace: allowed"
run "$ENFORCE" python3 -c "open('py.txt','w').write('ok'); import subprocess; subprocess.run(['cat','py.txt'], check=True)"
[ $? -eq 0 ] && [ "$(cat "$W/py.txt")" = ok ]; ok $? "python3 writes and subprocesses inside: allowed"
run "$ENFORCE" sh -c 'echo quiet > /dev/null && ls / >/dev/null'
[ $? -eq 0 ]; ok $? "/dev/null and reading outside: allowed"

# ---- protect ------------------------------------------------------------------------------
[ -d "$W/.git/hooks" ] || mkdir -p "$W/.git/hooks"
run "$ENFORCE" sh -c 'echo evil > .git/hooks/pre-commit'
[ $? -ne 0 ] && [ ! -e "$W/.git/hooks/pre-commit" ]; ok $? "protected path inside a write root: refused"
denied "" ".git/hooks/pre-commit"; ok $? "... DENY record"
said "protected"; ok $? "... explained as protected"
# The write decisions' cache (shim/policy.c, wcache_hit): a process that has written
# many entries of .git/ and of the workspace, its decisions cached, is still refused
# the protected entry directly in .git/ and a name outside through "..".
run "$ENFORCE" python3 -c "
import os, errno
os.mkdir('wd')
for i in range(40):
    open('.git/warm%d' % i, 'w').close()
    open('wd/warm%d' % i, 'w').close()
res = []
for f in (lambda: os.rename('.git/hooks', '.git/h2'), lambda: open('.git/hooks/post-merge', 'w'),
          lambda: open('wd/..' + '/..' * (os.getcwd().count('/')) + '$OUT/cached', 'w')):
    try:
        f()
        res.append('allowed')
    except OSError as e:
        res.append(errno.errorcode[e.errno])
print(' '.join(res))"
grep -qx 'EACCES EACCES EACCES' "$T_TMP/o" && [ -d "$W/.git/hooks" ] && [ -f "$W/.git/warm39" ] &&
	[ ! -e "$W/.git/h2" ] && [ ! -e "$W/.git/hooks/post-merge" ] && [ ! -e "$OUT/cached" ]
okv "after 80 allowed writes in .git/ and the workspace: .git/hooks renamed, a hook made, a file outside through ..: all refused"

# ---- deny_read: directly, through a symlink, through "..", by several programs -----------
run "$ENFORCE" cat "$FAKEHOME/.ssh/id_rsa"
[ $? -ne 0 ] && ! grep -q "$SECRET" "$T_TMP/o"; ok $? "cat of a deny_read file: refused, secret not shown"
denied "" ".ssh/id_rsa"; ok $? "... DENY record"
said "bbx: refused read of"; ok $? "... explained"
ln -s "$FAKEHOME/.ssh" "$W/keys"
run "$ENFORCE" cat keys/id_rsa
[ $? -ne 0 ] && ! grep -q "$SECRET" "$T_TMP/o"; ok $? "cat through a symlink into deny_read: refused"
run "$ENFORCE" sh -c "cat $W/../$(basename "$T_TMP")/home/.ssh/id_rsa 2>&1; cd $T_TMP/home/.ssh/.. && cat .ssh/../.ssh/id_rsa"
! grep -q "$SECRET" "$T_TMP/o"; ok $? "cat through .. into deny_read: refused"
run "$ENFORCE" python3 -c "print(open('keys/id_rsa').read())"
[ $? -ne 0 ] && ! grep -q "$SECRET" "$T_TMP/o"; ok $? "python3 open through a symlink: refused"
run "$ENFORCE" ls keys/
[ $? -ne 0 ] && ! grep -q id_rsa "$T_TMP/o"; ok $? "listing a deny_read directory through a symlink: refused"
run "$ENFORCE" cp keys/id_rsa stolen
[ $? -ne 0 ] && [ ! -s "$W/stolen" ]; ok $? "cp of a secret into the workspace: refused, nothing copied"
# The exact read path (no deny_read inode has a second link yet, so the compiled policy
# says words decide): an absolute canonical path is opened with openat2 and
# RESOLVE_NO_SYMLINKS, anything else takes the identity check.
echo public >"$W/public"
run "$ENFORCE" sh -c "cat $FAKEHOME//.ssh/id_rsa; cat $FAKEHOME/./.ssh/id_rsa; cat $W/keys/id_rsa; cat $W/./keys/../.ssh/id_rsa"
! grep -q "$SECRET" "$T_TMP/o" && [ "$(grep -c 'bbx: refused read' "$T_TMP/o")" -ge 4 ]; okv "exact reads: '//', '/./', an absolute symlink and '..' into deny_read: all refused"
# (-ff: one trace file a process, so that no call of cat's is split by one of bbx-run's)
rm -f "$T_TMP"/st.abs.*
(cd "$W" && HOME="$FAKEHOME" strace -ff -e trace=openat2 -o "$T_TMP/st.abs" bbx-run --quiet --policy "$ENFORCE" --journal "$T_TMP/j.st" -- cat "$W/public") >"$T_TMP/o" 2>&1
grep -q '^public$' "$T_TMP/o" && cat "$T_TMP"/st.abs.* | grep -q "openat2(AT_FDCWD, \"$W/public\".*RESOLVE_NO_SYMLINKS.* = [0-9]"; okv "... an allowed absolute read is one openat2 (no identity check after it)"
# The read filter (shim.h, bbx_rfilt): a path whose first component is under no
# deny_read root ($OUT is in /var/tmp, the root in /tmp) is cleared by its words, and a
# stat then by the reached inode's number against a Bloom filter of the listed ones.
# Through a symlink, "..", or a magic link such a path still reaches the secret: open
# (ELOOP, "..") and stat (the inode) must take the general way and refuse.  Each call
# is tried alone, so one refusal cannot hide another's pass.
ln -s "$FAKEHOME/.ssh/id_rsa" "$OUT/key"
# label=path: a symlink in /var/tmp, "..", a magic link, and "//" or "/./" first (the
# second byte the filter would see is '/' or '.').
for how in "symlink=$OUT/key" "dotdot=/var/..$FAKEHOME/.ssh/id_rsa" \
	"magic=/proc/self/root$FAKEHOME/.ssh/id_rsa" "slashslash=/$FAKEHOME/.ssh/id_rsa" \
	"slashdot=/.$FAKEHOME/.ssh/id_rsa"; do
	for call in open stat; do
		run "$ENFORCE" python3 -c "
import os, sys
try:
    if sys.argv[1] == 'open':
        print(open(sys.argv[2]).read())
    else:
        print('ino', os.stat(sys.argv[2]).st_ino)
except PermissionError:
    print('refused')" "$call" "${how#*=}"
		! grep -q "$SECRET" "$T_TMP/o" && ! grep -q '^ino' "$T_TMP/o" && said '^refused' &&
			said 'bbx: refused read of'
		okv "read filter: $call of the secret, ${how%%=*}: refused"
	done
done
run "$ENFORCE" sh -c "cat $OUT/existing && stat -c %s $OUT/existing && stat -L -c %i $OUT/key"
[ "$(head -2 "$T_TMP/o" | tr '\n' ' ')" = "keep 5 " ] && said "bbx: refused read of"
okv "read filter: an allowed open and stat under another first component work; stat -L of the symlink is refused"
# The prefix walk (shim.h, bbx_rf_walk): the workspace and the root share their first
# components here ($T_TMP), as a project and ~/.ssh share /home/ann.  Paths beside the
# root are cleared where they leave the roots' prefixes; the root itself, a name that
# only extends the root's ("$FAKEHOME/.sshx"), "..", "." and "" after a cleared or a
# shared component, and a symlink beside the root must each get the right answer.
# (python3 makes many opens before the script's: the run's mark is known by then, so
# its open takes the inline openat2 of bbx_rf_open when the words clear the path.)
mkdir -p "$FAKEHOME/pub" "$FAKEHOME/.sshx"
echo notes >"$FAKEHOME/notes"
echo sibling >"$FAKEHOME/.sshx/f"
ln -sf "$FAKEHOME/.ssh/id_rsa" "$FAKEHOME/lnk"
for how in "allow:notes=$FAKEHOME/notes" "allow:sibling=$FAKEHOME/.sshx/f" \
	"deny:inroot=$FAKEHOME/.ssh/id_rsa" \
	"deny:dotdot=$FAKEHOME/pub/../.ssh/id_rsa" "deny:dot=$FAKEHOME/./.ssh/id_rsa" \
	"deny:empty=$FAKEHOME//.ssh/id_rsa" "deny:symlink=$FAKEHOME/lnk" \
	"deny:root=$FAKEHOME/.ssh" "deny:rootslash=$FAKEHOME/.ssh/"; do
	want=${how%%:*} label=${how#*:} label=${label%%=*} verb=allowed
	[ "$want" = allow ] || verb=refused
	for call in open stat; do
		run "$ENFORCE" python3 -c "
import os, sys
try:
    if sys.argv[1] == 'open' and not sys.argv[3].startswith('root'):
        print(open(sys.argv[2]).read().strip())
    elif sys.argv[1] == 'open':
        print(os.listdir(sys.argv[2]))
    else:
        print('ino', os.stat(sys.argv[2]).st_ino)
except PermissionError:
    print('refused')" "$call" "${how#*=}" "$label"
		if [ "$want" = allow ]; then
			! said '^refused' >/dev/null 2>&1 && { grep -q -e '^notes$' -e '^sibling$' -e '^ino' "$T_TMP/o"; }
		else
			! grep -q "$SECRET" "$T_TMP/o" && ! grep -q -e '^ino' -e "'id_rsa'" "$T_TMP/o" &&
				said '^refused'
		fi
		okv "read filter, shared prefix: $call of $label: $verb"
	done
done
# Relative read-only opens decided by their words (shim.h, bbx_rf_open_rel): the
# workspace's subtree is under no root, so a name relative to it (or to a directory
# descriptor opened clean) is opened with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS and not
# checked after; one that climbs by ".." only within the clean levels of the directory
# (sub: 1, up to the workspace; the workspace: 0, $T_TMP is a prefix of the root) with
# RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV.  Each way out of that must take the general
# path and refuse, each tried alone: "..", a symlink, a chdir or fchdir after the
# verdict on the working directory (in the same thread, or in a thread with a working
# directory of its own), setns into a mount namespace (the working directory becomes
# its root), ".." beyond a descriptor's levels (straight, from
# a descriptor itself opened by ".." whose levels must have dropped, or from one
# opened by absolute words with a "." in them, which is no level), a
# descriptor of a directory above the root (opened by an absolute name, by a relative
# one from there, or given the number a clean one had), and "." of it.
mkdir -p "$W/sub"
echo inside >"$W/sub/f"
UP=$(python3 -c 'import os, sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))' "$FAKEHOME/.ssh/id_rsa" "$W")
for how in "allow:plain" "allow:dirfd" "allow:dirfd-up" "deny:dotdot" "deny:symlink" \
	"deny:chdir" "deny:fchdir" "deny:dirfd-dotdot" "deny:dirfd-beyond" "deny:dirfd-climb" \
	"deny:thread-cwd" "deny:setns" "deny:dirfd-absdot" "deny:dirfd-above" "deny:dirfd-relabove" \
	"deny:dirfd-reused" "deny:dirfd-dot"; do
	want=${how%%:*} label=${how#*:} verb=allowed
	[ "$want" = allow ] || verb=refused
	run "$ENFORCE" python3 -c "
import os, sys
how, up, home, ws = sys.argv[1:5]
def rd(fd):
    with os.fdopen(fd) as f:
        return f.read().strip()
D = os.O_RDONLY | os.O_DIRECTORY
try:
    print(open('sub/f').read().strip())  # the verdict on the working directory, taken
    if how == 'plain':
        print(rd(os.open('sub/f', os.O_RDONLY)))
    elif how == 'dirfd':
        d = os.open('sub', D)
        print(rd(os.open('f', os.O_RDONLY, dir_fd=d)))
    elif how == 'dirfd-up':
        d = os.open('sub', D)
        print(rd(os.open('../sub/f', os.O_RDONLY, dir_fd=d)))
    elif how == 'dirfd-beyond':
        d = os.open('sub', D)
        print(rd(os.open('../' + up, os.O_RDONLY, dir_fd=d)))
    elif how == 'dirfd-climb':
        d = os.open('..', D, dir_fd=os.open('sub', D))
        print(rd(os.open(up, os.O_RDONLY, dir_fd=d)))
    elif how == 'thread-cwd':
        # a thread with a working directory of its own (unshare(CLONE_FS)) moves it
        # above the root; the main thread then takes its verdict on its own (clean)
        # one in the new cwd generation: the thread's read must not be given it
        import threading, ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        ev1, ev2, out = threading.Event(), threading.Event(), []
        def other():
            if libc.unshare(0x200) != 0:
                out.append('unshare failed')
                ev1.set()
                return
            os.chdir(home)
            ev1.set()
            ev2.wait()
            try:
                out.append(rd(os.open('.ssh/id_rsa', os.O_RDONLY)))
            except PermissionError:
                out.append('refused')
        t = threading.Thread(target=other)
        t.start()
        ev1.wait()
        os.close(os.open('sub/f', os.O_RDONLY))
        ev2.set()
        t.join()
        print(out[0])
    elif how == 'setns':
        # into its own mount namespace: the working directory becomes its root, "/"
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.setns(os.open('/proc/self/ns/mnt', os.O_RDONLY), 0x20000) != 0:
            print('setns failed %d' % ctypes.get_errno())
        print(rd(os.open(home.lstrip('/') + '/.ssh/id_rsa', os.O_RDONLY)))
    elif how == 'dirfd-absdot':
        d = os.open(ws + '/./sub', D)
        print(rd(os.open('../' + up, os.O_RDONLY, dir_fd=d)))
    elif how == 'dotdot':
        print(rd(os.open(up, os.O_RDONLY)))
    elif how == 'symlink':
        print(rd(os.open('keys/id_rsa', os.O_RDONLY)))
    elif how == 'chdir':
        os.chdir(home)
        print(rd(os.open('.ssh/id_rsa', os.O_RDONLY)))
    elif how == 'fchdir':
        os.fchdir(os.open(home, D))
        print(rd(os.open('.ssh/id_rsa', os.O_RDONLY)))
    elif how == 'dirfd-dotdot':
        d = os.open(ws, D)
        print(rd(os.open(up, os.O_RDONLY, dir_fd=d)))
    elif how == 'dirfd-above':
        d = os.open(home, D)
        print(rd(os.open('.ssh/id_rsa', os.O_RDONLY, dir_fd=d)))
    elif how == 'dirfd-relabove':
        os.chdir(os.path.dirname(home))
        d = os.open(os.path.basename(home), D)
        print(rd(os.open('.ssh/id_rsa', os.O_RDONLY, dir_fd=d)))
    elif how == 'dirfd-reused':
        c = os.open('sub', D)
        os.close(c)
        d = os.open(home, D)
        assert d == c, (c, d)
        print(rd(os.open('.ssh/id_rsa', os.O_RDONLY, dir_fd=d)))
    elif how == 'dirfd-dot':
        d = os.open('.', D, dir_fd=os.open(home, D))
        print(rd(os.open('.ssh/id_rsa', os.O_RDONLY, dir_fd=d)))
except PermissionError:
    print('refused')" "$label" "$UP" "$FAKEHOME" "$W"
	if [ "$want" = allow ]; then
		[ "$(tr '\n' ' ' <"$T_TMP/o")" = "inside inside " ]
	else
		! grep -q "$SECRET" "$T_TMP/o" && [ "$(grep -c '^inside$' "$T_TMP/o")" -eq 1 ] &&
			said '^refused$' && said 'bbx: refused read of'
	fi
	okv "relative read-only open, $label: $verb"
done
# ... and the allowed ones are decided by the words: one openat2 without symlinks each,
# no identity check (fstat) after it; the working directory's verdict is one getcwd.
# A name without ".." is opened RESOLVE_NO_SYMLINKS alone (it cannot leave the
# directory), one with ".." that stays beneath it RESOLVE_BENEATH too, and one that
# climbs RESOLVE_NO_XDEV too.
# One trace file a process (-ff): with -f into one file, a call of python's that
# overlaps one of bbx-run's is split into "unfinished" and "resumed" lines, which the
# counts below would miss (a fresh-clone CI run in session 50 counted 6 of 7).
rm -f "$T_TMP"/st.rel.*
(cd "$W" && HOME="$FAKEHOME" strace -ff -o "$T_TMP/st.rel" bbx-run --quiet --policy "$ENFORCE" --journal "$T_TMP/j.strel" -- python3 -c "
import os
print(open('sub/f').read().strip()); print(open('sub/f').read().strip())
os.write(1, b'BBX-REL-BEGIN\n')
for i in range(3):
    os.close(os.open('sub/f', os.O_RDONLY))
d = os.open('sub', os.O_RDONLY | os.O_DIRECTORY)
for i in range(3):
    os.close(os.open('f', os.O_RDONLY, dir_fd=d))
os.close(os.open('../sub/f', os.O_RDONLY, dir_fd=d))
os.close(os.open('sub/../sub/f', os.O_RDONLY))
os.write(1, b'BBX-REL-END\n')") >"$T_TMP/o" 2>&1
cat "$T_TMP"/st.rel.* | awk '/BBX-REL-BEGIN/ {f = 1; next} /BBX-REL-END/ {f = 0} f' >"$T_TMP/st.rel"
n0=$(grep -c 'openat2(.*resolve=RESOLVE_NO_SYMLINKS}.* = [0-9]' "$T_TMP/st.rel")
n2=$(grep -c 'openat2(AT_FDCWD, "sub/\.\./sub/f".*RESOLVE_BENEATH.* = [0-9]' "$T_TMP/st.rel")
nx=$(grep -c 'openat2([0-9]*, "\.\./sub/f".*RESOLVE_NO_XDEV.* = [0-9]' "$T_TMP/st.rel")
nst=$(grep -cE 'fstat|newfstatat\([0-9]+, ""' "$T_TMP/st.rel")
nop=$(grep -cE '(^|[0-9] )openat\(' "$T_TMP/st.rel")
diag "relative opens: $n0 openat2 without symlinks alone, $n2 beneath, $nx up by '..', $nop openat, $nst fstat between the markers"
[ "$n0" -eq 7 ] && [ "$n2" -eq 1 ] && [ "$nx" -eq 1 ] && [ "$nst" -eq 0 ] && [ "$nop" -eq 0 ]
okv "relative read-only opens from the workspace and through a clean descriptor: openat2 without symlinks (beneath it with '..'; up by '..' within its levels: not across a mount), no fstat"
# More roots than the prefix table holds (BBX_RF_PFX_MAX): no table, the second byte
# alone clears, the general path decides the rest - the same answers.
MANY=$(pol many "[general]\nmode = enforce\n[paths]\nwrite = \${WORKSPACE}\n$(for i in $(seq 60); do printf 'deny_read = %s/d%s\\n' "$FAKEHOME" "$i"; done)deny_read = $FAKEHOME/.ssh\n")
mkdir -p "$FAKEHOME/d7"
echo "$SECRET" >"$FAKEHOME/d7/k"
run "$MANY" python3 -c "
import sys
out = []
for p in sys.argv[1:]:
    try:
        out.append(open(p).read().strip())
    except PermissionError:
        out.append('refused')
print(' '.join(out))" "$FAKEHOME/notes" "$FAKEHOME/d7/k" "$FAKEHOME/.ssh/id_rsa"
said '^notes refused refused$'; okv "read filter, 61 deny_read roots (no prefix table): the same answers"
rm -f "$FAKEHOME/lnk"
stat_home=$(cd "$W" && HOME="$FAKEHOME" bbx-run --quiet --policy "$ENFORCE" --journal "$T_TMP/j.home" -- stat -c %i "$FAKEHOME" 2>&1)
[ "$stat_home" = "$(stat -c %i "$FAKEHOME")" ]; ok $? "read filter, shared prefix: stat of the roots' parent itself: allowed"
run "$ENFORCE" python3 -c "
import os
try:
    os.link('$FAKEHOME/.ssh/id_rsa', '$W/linked')
except PermissionError:
    print('rc=1')
print(open('$W/linked').read())"
[ ! -e "$W/linked" ] && ! grep -q "$SECRET" "$T_TMP/o" && said "rc=1" && denied link ".ssh/id_rsa"; okv "a hard link to a deny_read file, made in the run: refused as a read, DENY record"
ln "$FAKEHOME/.ssh/id_rsa" "$T_TMP/hardlink" 2>/dev/null
run "$ENFORCE" cat "$T_TMP/hardlink"
[ $? -ne 0 ] && ! grep -q "$SECRET" "$T_TMP/o"; ok $? "cat of a hard link to a deny_read file (made before the run): refused by identity"
run "$ENFORCE" tar cf - -C "$FAKEHOME" .ssh
! grep -aq "$SECRET" "$T_TMP/o"; ok $? "tar of the deny_read directory: secret not in the archive"
# A program inside deny_read is not run, by any name: absolute, through "..", relative, a
# name found on $PATH by execvp (env), and a /proc name the kernel resolves to a longer
# one (exec.c sizes its buffer for the name given and must retry with PATH_MAX).
printf '#!/bin/sh\necho RAN-%s\n' "$SECRET" >"$FAKEHOME/.ssh/tool"
chmod +x "$FAKEHOME/.ssh/tool"
REL=$(python3 -c "import os,sys; print(os.path.relpath(sys.argv[1], sys.argv[2]))" "$FAKEHOME/.ssh/tool" "$W")
run "$ENFORCE" sh -c "$FAKEHOME/.ssh/tool; $FAKEHOME/.ssh/../.ssh/tool; $REL; PATH=$FAKEHOME/.ssh:/usr/bin:/bin env tool; cd $FAKEHOME && /proc/self/cwd/.ssh/tool; echo done"
n=$(bbx-log --json "$J" | python3 -c '
import json, sys
print(sum(1 for l in sys.stdin for r in [json.loads(l)]
          if r.get("type") == "DENY" and r.get("op", "").startswith("exec") and r.get("path") == sys.argv[1]))' "$FAKEHOME/.ssh/tool")
! grep -q "RAN-" "$T_TMP/o" && grep -q '^done$' "$T_TMP/o" && [ "$n" -eq 5 ]; okv "exec of a program under deny_read by 5 names (absolute, .., relative, execvp on \$PATH, /proc/self/cwd): each refused, its DENY naming the file's real path ($n of 5)"

# ---- exec rules ---------------------------------------------------------------------------
run "$ENFORCE" sh -c "touch $W/forbidden-marker; echo rc=\$?"
[ ! -e "$W/forbidden-marker" ] && said "Operation not permitted"; ok $? "denied command line: EPERM, never ran"
denied "" "forbidden-marker"; ok $? "... DENY record with the argv"
said "bbx: refused exec of touch $W/forbidden-marker (.*enforce.ini:8 \[exec\] deny"; ok $? "... explained with file:line"
run "$ENFORCE" python3 -c "import subprocess; subprocess.run(['touch', '$W/forbidden-marker'])"
[ ! -e "$W/forbidden-marker" ]; ok $? "denied command from python3 subprocess: never ran"
run "$ENFORCE" python3 -c "import os; os.system('touch $W/forbidden-marker')"
[ ! -e "$W/forbidden-marker" ]; ok $? "denied command from system(): never ran"
run "$ENFORCE" env -i /usr/bin/touch "$W/forbidden-marker"
[ ! -e "$W/forbidden-marker" ]; ok $? "denied command from an env -i parent: never ran"
run "$ENFORCE" touch "$W/forbidden-marker"
[ $? -ne 0 ] && [ ! -e "$W/forbidden-marker" ]; ok $? "denied command as bbx-run's own command: never ran"
run "$ENFORCE" touch "$W/allowed-marker"
[ $? -eq 0 ] && [ -e "$W/allowed-marker" ]; ok $? "a command no rule denies: runs"
run "$ENFORCE" sh -c 'git push --dry-run 2>/dev/null; true'
bbx-log --json "$J" 2>/dev/null | grep -q '"git push'; ok $? "log rule: git push recorded"

# A refused command line with secrets in it: neither its DENY record nor the explanation
# on stderr carries them (redaction before anything is written).
PW="pw-$RANDOM$RANDOM"
run "$ENFORCE" sh -c "touch --password=$PW ghp_Zq8wN3vK5tY7uB1cD4eF6gH9jK2mL0pQ4rS6 $W/forbidden-marker"
! grep -rqa -e "$PW" -e ghp_Zq8wN3vK5tY7uB1cD4eF6gH9jK2mL0pQ4rS6 "$J" "$T_TMP/o" && said "REDACTED"
ok $? "a refused command's secrets reach neither the journal nor stderr"

# The policy's own [redact] patterns, beside the built-in ones, in every record a run's
# processes write: each kind of line together (used where they lie in the mapped
# policy, shim/policy.c, redact_load) and interleaved (copied, bbx_redact_configure).
for layout in together interleaved; do
	if [ $layout = together ]; then
		R="[redact]\nenv = *_DOORCODE\nenv = VAULT_*\nargv = --doorcode=*\nargv = --vault\n"
	else
		R="[redact]\nenv = *_DOORCODE\nargv = --doorcode=*\nenv = VAULT_*\nargv = --vault\n"
	fi
	RP=$(pol "redact-$layout" "[paths]\nwrite = \${WORKSPACE}\n$R")
	S1="dc-$RANDOM$RANDOM" S2="va-$RANDOM$RANDOM" S3="ar-$RANDOM$RANDOM" S4="vv-$RANDOM$RANDOM"
	run "$RP" env FRONT_DOORCODE="$S1" VAULT_X="$S2" sh -c "sh -c 'touch \"\$4\"' x --doorcode=$S3 --vault $S4 redact-$layout"
	n=$(bbx-log --records "$J" | grep -c ' EXEC ')
	[ -e "$W/redact-$layout" ] && [ "$n" -ge 3 ] && ! grep -rqa -e "$S1" -e "$S2" -e "$S3" -e "$S4" "$J"
	ok $? "[redact] patterns of the policy ($layout): none of four secrets in the journal or meta ($n EXEC records)"
done

# ---- programs the shim cannot enter --------------------------------------------------------
run "$ENFORCE" sh -c "$STATIC $W/static-out"
[ ! -e "$W/static-out" ] && said "statically linked"; ok $? "static = deny: a static binary is refused"
denied "" "staticprog"; ok $? "... DENY record"
WARN=$(pol warn "[paths]\nwrite = \${WORKSPACE}\n[exec]\nstatic = warn\n")
run "$WARN" sh -c "$STATIC $W/static-in && echo ran"
grep -q ran "$T_TMP/o" && [ -e "$W/static-in" ] && said "bbx: warning: "; ok $? "static = warn: runs, with a warning"
run "$WARN" sh -c "$STATIC $OUT/static-out"
[ ! -e "$OUT/static-out" ]; ok $? "static binary writing outside the write roots: stopped by Landlock"
# A file as a write root: Landlock takes only the file rights for it (the directory
# rights are refused with EINVAL and the file's alone added through the same
# descriptor, tools/sandbox.c, ll_add): a program the shim cannot enter may write that
# file, and nothing beside it.
echo old >"$OUT/file-root"
FROOT=$(pol froot "[paths]\nwrite = \${WORKSPACE}\nwrite = $OUT/file-root\n[exec]\nstatic = warn\n")
run "$FROOT" sh -c "$STATIC $OUT/file-root; $STATIC $OUT/beside-file-root"
[ "$(cat "$OUT/file-root")" = static ] && [ ! -e "$OUT/beside-file-root" ]
ok $? "a file write root: a static binary writes it (Landlock's file rights), not beside it"
# Truncation by path is the seccomp filter's (Landlock's TRUNCATE right is not handled:
# it would cost every open a path walk, tools/sandbox.c): a program the shim cannot
# enter gets EACCES for truncate(2) and O_RDONLY|O_TRUNC, outside and inside the roots;
# the same calls through the shim are journaled and allowed inside, undone by bbx-undo.
echo keep-out >"$OUT/trunc-me"
echo keep-in >"$W/trunc-in"
run "$WARN" sh -c "$STATIC truncate $OUT/trunc-me; $STATIC rdtrunc $OUT/trunc-me; $STATIC truncate $W/trunc-in; $STATIC rdtrunc $W/trunc-in"
[ "$(cat "$OUT/trunc-me")" = keep-out ] && [ "$(cat "$W/trunc-in")" = keep-in ] &&
	[ "$(grep -c 'Permission denied' "$T_TMP/o")" = 4 ]; okv "static binary: truncate(2) and O_RDONLY|O_TRUNC refused with EACCES (outside and inside the roots)"
run "$WARN" python3 -c "
import os
os.truncate('$W/trunc-in', 2)
os.close(os.open('$W/trunc-in', os.O_RDONLY | os.O_TRUNC))
try:
    os.truncate('$OUT/trunc-me', 0)
except PermissionError:
    print('refused-out')
"
[ "$(stat -c %s "$W/trunc-in")" = 0 ] && [ "$(cat "$OUT/trunc-me")" = keep-out ] && said refused-out; okv "through the shim: truncate and O_RDONLY|O_TRUNC inside the roots work, outside refused"
bbx-undo -q "$J" >/dev/null 2>&1 && [ "$(cat "$W/trunc-in")" = keep-in ]; okv "... and bbx-undo restores the truncated file"
ALLOWS=$(pol allows "[paths]\nwrite = \${WORKSPACE}\n[exec]\nstatic = allow\n")
run "$ALLOWS" sh -c "$STATIC $W/static-ok"
[ $? -eq 0 ] && [ -e "$W/static-ok" ] && ! said "bbx:" 2>/dev/null; ok $? "static = allow: runs silently"

# ---- modes ------------------------------------------------------------------------------
AUDIT=$(pol audit "[general]\nmode = audit\n[paths]\nwrite = \${WORKSPACE}\ndeny_read = $FAKEHOME/.ssh\n[exec]\ndeny = touch */forbidden-marker\n")
run "$AUDIT" sh -c "echo x > $OUT/audited; cat $FAKEHOME/.ssh/id_rsa; touch $W/forbidden-marker"
[ -e "$OUT/audited" ] && [ -e "$W/forbidden-marker" ] && grep -q "$SECRET" "$T_TMP/o"; ok $? "mode = audit: nothing refused"
denied "" "$OUT/audited" && denied "" ".ssh/id_rsa" && denied "" "forbidden-marker"; ok $? "... but each would-be refusal recorded"
said "bbx: audit: would refuse write to $OUT/audited"; ok $? "... and explained as audit"
rm -f "$OUT/audited" "$W/forbidden-marker"
SAFE=$(pol safe "[general]\nmode = safe\n")
echo before >"$W/s.txt"
run "$SAFE" sh -c "echo after > s.txt"
[ $? -ne 0 ] && [ "$(cat "$W/s.txt")" = before ]; ok $? "mode = safe: an overwrite is refused"
run "$SAFE" rm s.txt
[ $? -ne 0 ] && [ -e "$W/s.txt" ] && said "Operation not permitted"; ok $? "mode = safe: rm refused with EPERM"
run "$SAFE" mkdir newdir
[ $? -ne 0 ] && [ ! -e "$W/newdir" ]; ok $? "mode = safe: mkdir refused"
run "$SAFE" sh -c 'cat s.txt && ls >/dev/null'
[ $? -eq 0 ] && grep -q before "$T_TMP/o"; ok $? "mode = safe: reading still works"

# ---- explanations -----------------------------------------------------------------------
QUIET=$(pol quiet "[general]\nexplain = off\n[paths]\nwrite = \${WORKSPACE}\n")
run "$QUIET" sh -c "echo x > $OUT/q"
[ ! -e "$OUT/q" ] && ! grep -q '^bbx:' "$T_TMP/o"; ok $? "explain = off: refused silently"
denied "" "$OUT/q"; ok $? "... still recorded"
run "$ENFORCE" sh -c "for i in \$(seq 1 60); do echo x > $OUT/loop\$i; done"
n=$(grep -c '^bbx: refused' "$T_TMP/o")
[ "$n" -ge 1 ] && [ "$n" -le 11 ]; ok $? "a loop of 60 refusals prints at most 11 lines (printed $n)"
c=$(bbx-log --json "$J" 2>/dev/null | grep -c '"DENY"')
[ "$c" -ge 60 ]; ok $? "... while all 60 are recorded ($c DENY records)"

# ---- the policy file itself ----------------------------------------------------------------
BAD=$(pol bad "[paths]\nwrite = relative/path\n")
(cd "$W" && bbx-run --quiet --policy "$BAD" --journal "$T_TMP/j.bad" -- touch "$W/never") >"$T_TMP/o" 2>&1
rc=$?
[ $rc -eq 2 ] && [ ! -e "$W/never" ] && said "bad.ini:2:"; ok $? "a malformed policy: refused before anything runs (exit 2, file:line)"
run "$ENFORCE" sh -c 'echo x > "$BBX_JOURNAL/journal"'
[ $? -ne 0 ]; ok $? "the journal directory is always protected"
# A preserved object opened for reading, then changed through its descriptor: the META by
# descriptor is refused by the identity of the object's directory (capture.c,
# protected_fd_entry), without a lookup of its name.  OBJMETA FILE OBJDIR: rewrites FILE
# (its old content becomes an object under OBJDIR), then tries fchmod and futimens of
# that object through a read-only descriptor; prints each outcome, the mode and whether
# the mtime is still its own.
OBJMETA='
import glob, os, sys
open(sys.argv[1], "w").write("after\n")
obj = glob.glob(sys.argv[2] + "/objects/*/*")[0]
fd = os.open(obj, os.O_RDONLY)
res = []
for f in (lambda: os.fchmod(fd, 0o777), lambda: os.utime(fd, ns=(0, 0))):
    try:
        f()
        res.append("changed")
    except PermissionError:
        res.append("refused")
print(" ".join(res), oct(os.fstat(fd).st_mode & 0o777), os.fstat(fd).st_mtime_ns != 0)
'
echo before >"$W/pre.txt"
run "$ENFORCE" sh -c 'python3 -c "$1" pre.txt "$BBX_JOURNAL"' sh "$OBJMETA"
grep -q '^refused refused 0o[0-6][0-7][0-7] True$' "$T_TMP/o"; ok $? "fchmod and futimens of a preserved object through a descriptor: refused ($(tail -1 "$T_TMP/o"))"
[ "$(cat "$W/pre.txt")" = after ]; ok $? "... the run itself went on"
# The same in a run without a policy (LD_PRELOAD alone, bbx-policy not found: journaled
# only), where nothing but the capture's check by identity stands in the way.
echo before >"$W/pre2.txt"
(cd "$W" && BBX_STATE_DIR="$T_TMP/st.nopol" BBX_POLICY_TOOL=/nonexistent PATH=/usr/bin:/bin \
	LD_PRELOAD="$BBX_SHIM" python3 -c "$OBJMETA" pre2.txt "$T_TMP/st.nopol/latest") >"$T_TMP/o" 2>&1
grep -q '^refused refused 0o[0-6][0-7][0-7] True$' "$T_TMP/o"; ok $? "... and in a run without a policy, by the object's identity ($(tail -1 "$T_TMP/o"))"
grep -q 'no policy is enforced' "$T_TMP/o"; ok $? "... (that run said it had no policy)"
# A directory found neither the journal directory nor objects/ nor a shard is remembered
# so by its identity (capture.c, unprot_known): chmod -R and appends then skip its stat.
# A shard must never be: after chmods through a descriptor of the workspace (its verdict
# remembered), an object's chmod through a descriptor of its shard, twice (the second
# finds the shard's name proved, its identity taken on trust), and by its name, are
# refused.
SHARDMETA='
import glob, os, sys
for n in ("w1", "w2"):
    open(n, "w").write("x\n")
d = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
os.chmod("w1", 0o600, dir_fd=d)
os.chmod("w2", 0o600, dir_fd=d)
open(sys.argv[1], "w").write("after\n")
obj = glob.glob(sys.argv[2] + "/objects/*/*")[0]
sd = os.open(os.path.dirname(obj), os.O_RDONLY | os.O_DIRECTORY)
name = os.path.basename(obj)
res = []
for f in (lambda: os.chmod(name, 0o777, dir_fd=sd), lambda: os.chmod(name, 0o777, dir_fd=sd),
          lambda: os.chmod(obj, 0o777)):
    try:
        f()
        res.append("changed")
    except PermissionError:
        res.append("refused")
print(" ".join(res), oct(os.stat(obj).st_mode & 0o777), oct(os.stat("w2").st_mode & 0o777))
'
echo before >"$W/pre3.txt"
run "$ENFORCE" sh -c 'python3 -c "$1" pre3.txt "$BBX_JOURNAL"' sh "$SHARDMETA"
grep -q '^refused refused refused 0o[0-6][0-7][0-7] 0o600$' "$T_TMP/o"; ok $? "chmod of an object through its shard's descriptor, twice, and by name, after chmods in the workspace: refused ($(tail -1 "$T_TMP/o"))"
# The same with the journal reached by another name, a bind mount of its parent inside
# the workspace: the policy sees words in the workspace, and only the capture's checks by
# identity stand in the way (the second chmod: the shard's identity taken on trust from
# its proved name, which a remembered verdict would have let through).
if unshare -m true 2>/dev/null; then
	mkdir -p "$T_TMP/jb" "$W/jview"
	echo before >"$W/pre4.txt"
	(cd "$W" && HOME="$FAKEHOME" unshare -m sh -c 'mount --bind "$1" "$2" &&
		exec bbx-run --quiet --policy "$3" --journal "$1/run" -- python3 -c "$4" pre4.txt jview/run' \
		sh "$T_TMP/jb" "$W/jview" "$ENFORCE" "$SHARDMETA") >"$T_TMP/o" 2>&1
	grep -q '^refused refused refused 0o[0-6][0-7][0-7] 0o600$' "$T_TMP/o"; ok $? "... and through a bind mount of the journal's directory inside the workspace ($(tail -1 "$T_TMP/o"))"
else
	skip "unshare -m not permitted here: the journal reached through a bind mount"
fi
# The forms of one command line share a pair set only while the whole line fits in
# 4 KiB (shim/exec.c, exec_rules): cut there, the form with argv[0]'s directory dropped
# reaches further into argv, past where the pairs were taken.  Here the given form's
# 4 KiB ends inside a long argument, and only the shorter form holds the denied word.
LONGPOL=$(pol long "[exec]\ndeny = *ZZQQ*\n")
run "$LONGPOL" python3 -c '
import os, sys
prog = "/" + "./" * 300 + "bin/echo"
try:
    os.execv(prog, [prog, "a" * 3700, "ZZ" + "QQ"])
except PermissionError:
    print("refused")
    sys.exit(3)'
rc=$?
[ $rc -eq 3 ] && grep -qx refused "$T_TMP/o"
ok $? "exec whose line is cut at 4 KiB: the basename form, which reaches the denied word, is refused (exit $rc)"

finish
