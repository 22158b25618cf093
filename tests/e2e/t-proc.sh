#!/bin/bash
# SPDX-License-Identifier: MIT
# t-proc.sh - who ran what, when, with what result: PROC, EXEC, EXIT and RESULT
# records of a real process tree, and secrets redacted before anything is written.
#
# One bbx-run of a shell script that starts subshells, a pipeline, a python3
# subprocess, a child killed by SIGKILL, an `env -i` child, and commands with secrets
# in their argv and environment.  The journal is decoded by tests/e2e/jdecode.py (not
# by our own reader) and checked: every process that journaled has a PROC or EXEC
# record with the right argv, every reaped child an EXIT with its exact status,
# successful calls a RESULT with their return value; and no secret appears anywhere in
# the journal directory or on bbx-run's stderr, while the redaction marker stands where
# each was.
. "${BBX_SRCDIR:?is set by make check (tests/local.mk)}/tests/e2e/lib.sh" || exit 99

plan 41

PY=${PYTHON3:-python3}
W=$(new_ws)
J="$T_TMP/j"
PW=hunter2xyz
GH=ghp_Zq8wN3vK5tY7uB1cD4eF6gH9jK2mL0pQ4rS6
URLPW=s3cretUrlPass
TOK=tok_8f3a9c2e7d1b6045
AWS=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzz99SECRET
printf 'old\n' >"$W/old.txt"
printf 'pre\n' >"$W/pre.txt"

# The whole script is one argv element of bbx-run's command: it, too, must come out
# of the journal redacted.
SCRIPT='
echo a > f1
chmod 600 pre.txt
rm old.txt
( echo sub > f2 )
sh -c "echo nested > f3; exit 3"
echo p | tr p q > f4
'"$PY"' -c "import subprocess; subprocess.run([\"sh\", \"-c\", \"echo py > f5; exit 4\"])"
sh -c "kill -9 \$\$"
env -i /bin/sh -c "echo clean > f6"
sh -c "( sleep 0.3; echo orphan > f9; exit 5 ) &"
sleep 0.8
sh -c "echo tool > f7" tool --password='"$PW"' '"$GH"' https://alice:'"$URLPW"'@example.com/r.git
MY_API_TOKEN='"$TOK"' AWS_SECRET_ACCESS_KEY='"$AWS"' sh -c "echo envsecret > f8"
exit 7
'
(cd "$W" && bbx-run --journal "$J" -- sh -c "$SCRIPT") >"$T_TMP/out" 2>"$T_TMP/err"
rc=$?
[ $rc -eq 7 ]
ok $? "the run exits with the script's status 7 (got $rc)"

"$PY" "$BBX_SRCDIR/tests/e2e/jdecode.py" "$J/journal" >"$T_TMP/recs"
ok $? "the journal decodes"

# check NAME PYTHON-EXPR-OVER-recs: one TAP line; the expression may print diagnostics.
check() {
	local name=$1 expr=$2
	"$PY" - "$T_TMP/recs" "$PY" >"$T_TMP/chk" 2>&1 <<PYEOF
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
M = "***REDACTED***"
failed = {r["ref"] for r in recs if r["type"] == "RESULT" and r.get("ret", 0) < 0}
def execs(argv):
    """EXEC records of argv, leaving out attempts whose RESULT says they failed (a
    PATH search tries one directory after another)."""
    return [r for r in recs if r["type"] == "EXEC" and r.get("argv") == argv
            and r["seq"] not in failed]
def exits(pid):
    return [r for r in recs if r["type"] == "EXIT" and r.get("pid") == pid]
def one_exec(argv):
    e = execs(argv)
    if len(e) != 1:
        print("EXEC of %r: %d records" % (argv, len(e)))
        sys.exit(1)
    return e[0]
def exit_status(argv):
    e = one_exec(argv)
    x = exits(e["hpid"])
    print("EXIT of", argv, "pid", e["hpid"], [r.get("status") for r in x])
    return [r["status"] for r in x]
ok = bool($expr)
sys.exit(0 if ok else 1)
PYEOF
	local r=$?
	[ $r -ne 0 ] && sed 's/^/#   /' "$T_TMP/chk" | head -20 >&2
	ok $r "$name"
}

# ---- who: a PROC or EXEC for every process that wrote a record
check "every writer pid has a PROC or EXEC record" \
	'all(any(q["hpid"] == p and q["type"] in ("PROC", "EXEC") for q in recs) for p in {r["hpid"] for r in recs if r.get("op") not in ("seal", "bbx-run")}) or print(sorted({r["hpid"] for r in recs}))'
check "the script shell's PROC: exe, argv sh -c SCRIPT (redacted), cwd" \
	'[r for r in recs if r["type"] == "PROC" and r["argv"][:2] == ["sh", "-c"] and "echo a > f1" in r["argv"][2] and r["exe"].startswith("/") and r["cwd"] == "'"$W"'" and len(r["env"]) > 3]'
check "the subshell (a fork child that journaled): its first record is its PROC" \
	'[c for c in recs if c["type"] == "CREATE" and c["path"].endswith("/f2") and [q for q in recs if q["hpid"] == c["hpid"]][0]["type"] == "PROC"]'
check "env, whose first record is its EXEC of /bin/sh, writes no PROC" \
	'[e for e in recs if e["type"] == "EXEC" and e["argv"][:2] == ["env", "-i"] and [q["type"] + ":" + q.get("argv", ["-"])[0] for q in recs if q["hpid"] == e["hpid"]][:3] == ["EXEC:env", "EXEC:/bin/sh", "PROC:/bin/sh"]]'
# ---- what and when it ended: EXIT with the raw wait status
check "EXIT of sh -c 'exit 3': status 3<<8" \
	'exit_status(["sh", "-c", "echo nested > f3; exit 3"]) == [3 << 8]'
check "EXIT of a child killed by SIGKILL: status 9" \
	'exit_status(["sh", "-c", "kill -9 $$"]) == [9]'
check "python3 subprocess: EXEC argv and EXIT status 4<<8 recorded by python" \
	'exit_status(["sh", "-c", "echo py > f5; exit 4"]) == [4 << 8]'
check "pipeline: tr's EXEC and its EXIT status 0" \
	'exit_status(["tr", "p", "q"]) == [0]'
check "env -i child: EXEC of /bin/sh with an empty environment" \
	'[r for r in execs(["/bin/sh", "-c", "echo clean > f6"]) if r.get("env") == []]'
check "bbx-run's EXIT for its command: the script shell's pid, status 7<<8" \
	'[r for r in recs if r["type"] == "EXIT" and r["op"] == "bbx-run" and r["status"] == 7 << 8 and any(p["type"] == "PROC" and p["hpid"] == r["pid"] and p["argv"][:2] == ["sh", "-c"] for p in recs)]'
check "an orphan of the run (its parent gone) is reaped by bbx-run, its subreaper: EXIT with its status 5<<8" \
	'[r for r in recs if r["type"] == "EXIT" and r["op"] == "bbx-run" and r["status"] == 5 << 8 and any(c["type"] == "CREATE" and c["path"].endswith("/f9") and c["hpid"] == r["pid"] for c in recs)] or print([r for r in recs if r["type"] == "EXIT"])'
# ---- result: success RESULTs name their record and return value
# (chmod of a file that existed before the run: a file the run created has no META,
# undo removes it whatever its mode.)
check "RESULT of the successful chmod: ret 0, err 0, REF = its META" \
	'[r for r in recs if r["type"] == "RESULT" and r["op"] == "fchmodat" or r["type"] == "RESULT" and r["op"] == "chmod" if r["ret"] == 0 and r["err"] == 0 and any(m["seq"] == r["ref"] and m["type"] == "META" and m["path"].endswith("/pre.txt") for m in recs)]'
check "RESULT of the successful unlink: ret 0, REF = its PRESERVE" \
	'[r for r in recs if r["type"] == "RESULT" and r["ret"] == 0 and r["err"] == 0 and any(m["seq"] == r["ref"] and m["type"] == "PRESERVE" and m["path"].endswith("/old.txt") for m in recs)]'
# ---- redaction: markers where the secrets were, and the secrets nowhere
check "the tool's EXEC argv: --password, ghp_ token and URL password redacted, rest kept" \
	'one_exec(["sh", "-c", "echo tool > f7", "tool", "--password=" + M, M, "https://alice:" + M + "@example.com/r.git"])'
check "the env secrets' EXEC: MY_API_TOKEN and AWS_SECRET_ACCESS_KEY redacted in ENV" \
	'[r for r in execs(["sh", "-c", "echo envsecret > f8"]) if "MY_API_TOKEN=" + M in r["env"] and "AWS_SECRET_ACCESS_KEY=" + M in r["env"] and any(e.startswith("PATH=/") for e in r["env"])]'
hits=0
for s in "$PW" "$GH" "$URLPW" "$TOK" "$AWS"; do
	if grep -rqaF -- "$s" "$J"; then diag "secret ${s:0:4}... found in the journal directory"; hits=1; fi
done
ok $hits "no secret anywhere in the journal directory (grep -r)"
hits=0
for s in "$PW" "$GH" "$URLPW" "$TOK" "$AWS"; do
	if grep -qaF -- "$s" "$T_TMP/err"; then diag "secret ${s:0:4}... on bbx-run's stderr"; hits=1; fi
done
ok $hits "no secret on bbx-run's stderr"
# The test is only meaningful if the secrets did reach the programs.
grep -qx "tool" "$W/f7" && grep -qx "envsecret" "$W/f8"
ok $? "the commands carrying secrets ran"

# A process that writes over its argv before its first record (perl's $0, node's
# process.title) is still recorded with the command it was started with.
J2="$T_TMP/j.renamed"
(cd "$W" && bbx-run -q --journal "$J2" -- perl -e '$0 = "innocent-looking-title"; open(F, ">", "renamed.txt"); close F') &&
	bbx-log --json "$J2" | python3 -c '
import json, sys
procs = [r for r in map(json.loads, sys.stdin) if r.get("type") == "PROC" and r.get("exe", "").endswith("/perl")]
sys.exit(0 if procs and procs[0]["argv"][:2] == ["perl", "-e"] and "innocent" not in procs[0]["argv"][0] else 1)'
ok $? "PROC of a process that renamed itself (perl \$0): the argv it was started with"

# Spawn cost (issue 5): a process that forks (perl here; dash uses vfork, bash opens the run at start-up) without mutating opens the run and maps the
# policy once, before its first fork, and its children inherit both.  So no child
# opens the state file, the journal or the policy between its fork and its exec, while
# every child's EXEC is still recorded (strace outside the run: the sandbox refuses
# ptrace inside it).
J3="$T_TMP/j.forks"
if command -v strace >/dev/null; then
	(cd "$W" && strace -f -qq -e trace=openat,execve -o "$T_TMP/st.forks" \
		bbx-run -q --journal "$J3" -- perl -e 'for (1..5) { my $p = fork; exec "/bin/true" unless $p; waitpid($p, 0) }') \
		>/dev/null 2>&1
	python3 - "$T_TMP/st.forks" "$J3" <<'PY'
import re, sys
run = sys.argv[2]
seen = {}   # pid -> list of (syscall, path)
for line in open(sys.argv[1]):
    m = re.match(r"(\d+)\s+(openat|execve)\((?:AT_FDCWD, )?\"([^\"]*)\"", line)
    if m:
        seen.setdefault(m.group(1), []).append((m.group(2), m.group(3)))
children = 0
for pid, calls in seen.items():
    ex = [i for i, c in enumerate(calls) if c == ("execve", "/bin/true")]
    if not ex:
        continue
    children += 1
    before = calls[:ex[0]]
    bad = [p for c, p in before if c == "openat" and p.startswith(run)]
    if bad:
        print("# child %s opened %s before its exec" % (pid, bad))
        sys.exit(1)
sys.exit(0 if children == 5 else 2)
PY
	ok $? "fork children of a non-mutating process open nothing of the run before their exec"
	[ "$(bbx-log --json "$J3" | grep -c '"type": *"EXEC".*"exe": *"/bin/true"')" = 5 ]
	ok $? "... and each one's EXEC is recorded"
else
	skip "strace not installed"
	skip "strace not installed"
fi

# Header ids of exec records (issue 5 moved them: a fork child inherits its parent's
# ppid and uid and asks only its pid, and an exec record asks the pid again because a
# vfork child writes it in its parent's memory).  bash forks its children, dash vforks
# them, and dash's ( ) subshell is a fork child that execs its last command itself.
# Each EXEC of /bin/true must carry the child's own pid (the one its parent's EXIT
# names, never the parent's) and the parent's pid as ppid.
J4="$T_TMP/j.ids"
(cd "$W" && bbx-run -q --journal "$J4" -- bash -c 'echo $$ > bash.pid; /bin/true bash-child
dash -c "echo \$\$ > dash.pid; /bin/true dash-child; /bin/true dash-child2; (/bin/true dash-sub)"') \
	>/dev/null 2>&1
"$PY" "$BBX_SRCDIR/tests/e2e/jdecode.py" "$J4/journal" >"$T_TMP/recs.ids"
"$PY" - "$T_TMP/recs.ids" "$(cat "$W/bash.pid")" "$(cat "$W/dash.pid")" >"$T_TMP/chk" 2>&1 <<'PY'
import json, os, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
bash, dash = int(sys.argv[2]), int(sys.argv[3])
def ex(tag):
    e = [r for r in recs if r["type"] == "EXEC" and r.get("argv") == ["/bin/true", tag]]
    assert len(e) == 1, (tag, len(e))
    return e[0]
bad = []
for tag, parent in (("bash-child", bash), ("dash-child", dash), ("dash-child2", dash)):
    e = ex(tag)
    reaped = [r["pid"] for r in recs if r["type"] == "EXIT" and r.get("pid") == e["hpid"] and r["hpid"] == parent]
    if e["hppid"] != parent or e["hpid"] == parent or not reaped:
        bad.append((tag, e["hpid"], e["hppid"], parent, reaped))
s = ex("dash-sub")
if s["hppid"] != dash or s["hpid"] in (bash, dash):
    bad.append(("dash-sub", s["hpid"], s["hppid"], dash))
if any(r["type"] == "EXEC" and r["huid"] != os.getuid() for r in recs):
    bad.append("uid")
print(bad)
sys.exit(1 if bad else 0)
PY
r=$?
[ $r -ne 0 ] && sed 's/^/#   /' "$T_TMP/chk" | head -20 >&2
ok $r "exec records of fork (bash), vfork (dash) and subshell children: own pid, parent's pid as ppid"
grep -q '"type": "EXEC"' "$T_TMP/recs.ids" && [ -s "$W/dash.pid" ]
ok $? "... the run recorded them (dash ran)"
[ "$(grep -c '"argv": \["/bin/true", "dash-child' "$T_TMP/recs.ids")" = 2 ]
ok $? "... both of dash's vforked children have an EXEC"

# Fork children after the parent opened the run (issue 5: the shim's fork handlers are
# registered on first need, shim/init.c: by the wrappers of fork(), forkpty() and
# daemon(), before the real call; no longer when the run is opened).  Each parent
# creates x.parent (its first record: the run is opened), forks, and the child creates
# x: the child's records carry its own pid and the parent's as ppid, its PROC first.
# callwrap fork goes through the shim's fork(); callwrap forkpty and python's pty.fork()
# through glibc's forkpty(), whose fork is libc's own and passes the fork wrapper by:
# there only the forkpty wrapper's registration holds (without it, the child's CREATE
# went under the parent's pid, with no PROC).  daemon: python calls glibc's daemon()
# (through ctypes, so the shim's wrapper), whose fork is libc's too; its parent ends
# inside the call, and the daemon, holding stdout, prints its own pid.
cat >"$T_TMP/ptyfork.py" <<'PY'
import os, pty, sys
x = sys.argv[1]
open(x + ".parent", "w").close()
pid, fd = pty.fork()
if pid == 0:
    open(x, "w").close()
    os._exit(0)
os.waitpid(pid, 0)
print("child", pid)
PY
cat >"$T_TMP/daemonfork.py" <<'PY'
import ctypes, os, sys
x = sys.argv[1]
open(x + ".parent", "w").close()
if ctypes.CDLL(None).daemon(1, 1) != 0:
    sys.exit(1)
open(x, "w").close()
print("child", os.getpid(), flush=True)
PY
for how in callwrap cwpty pty daemon; do
	J6="$T_TMP/j.fork.$how"
	rm -f "$W/x" "$W/x.parent"
	if [ $how = callwrap ]; then
		out=$(cd "$W" && bbx-run -q --journal "$J6" -- "$BBX_BUILDDIR/tests/progs/callwrap" fork "$W/x" 2>&1)
	elif [ $how = cwpty ]; then
		out=$(cd "$W" && bbx-run -q --journal "$J6" -- "$BBX_BUILDDIR/tests/progs/callwrap" forkpty "$W/x" 2>&1)
	elif [ $how = pty ]; then
		out=$(cd "$W" && bbx-run -q --journal "$J6" -- "$PY" "$T_TMP/ptyfork.py" "$W/x" 2>&1)
	else # $(...) waits for the daemon, which holds its stdout
		out=$(cd "$W" && bbx-run -q --journal "$J6" -- "$PY" "$T_TMP/daemonfork.py" "$W/x" 2>&1)
	fi
	child=${out#child }
	"$PY" "$BBX_SRCDIR/tests/e2e/jdecode.py" "$J6/journal" >"$T_TMP/recs.fork"
	"$PY" - "$T_TMP/recs.fork" "$child" "$W/x" >"$T_TMP/chk" 2>&1 <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]  # journal order (a PROC takes its seq after the record it precedes)
child, x = int(sys.argv[2]), sys.argv[3]
par = [r for r in recs if r["type"] == "CREATE" and r.get("path") == x + ".parent"]
kid = [r for r in recs if r["type"] == "CREATE" and r.get("path") == x]
assert len(par) == 1 and len(kid) == 1, (par, kid)
parent = par[0]["hpid"]
mine = [r for r in recs if r["hpid"] == child]
bad = []
if kid[0]["hpid"] != child or kid[0]["hppid"] != parent or child == parent:
    bad.append(("child's CREATE", kid[0]["hpid"], kid[0]["hppid"], child, parent))
if not mine or mine[0]["type"] != "PROC" or mine[0]["hppid"] != parent:
    bad.append(("child's first record", mine[:1]))
print(bad)
sys.exit(1 if bad else 0)
PY
	r=$?
	[ $r -ne 0 ] && { echo "# $how: $out" >&2; sed 's/^/#   /' "$T_TMP/chk" | head -20 >&2; }
	ok $r "fork ($how) after the parent's first record: the child's records carry its own pid, its PROC first"
done

# RESULTs held back (journal/run.h): a RESULT goes out with its thread's next record, or
# at the latest when the process forks, execs or ends (exit, _exit).  Every creation
# must keep exactly one RESULT, written by the process that made the call, before the
# fork child's records and before the exec'd program's; a process killed by a signal
# loses its pending RESULT, and undo still restores the tree without it.
W5=$(new_ws)
J5="$T_TMP/j.defer"
snap "$W5" >"$T_TMP/w5.before"
(cd "$W5" && bbx-run -q --journal "$J5" -- bash -c 'echo $$ > /dev/null; echo a > d1; ( echo b > d2 ); echo c > d3
'"$PY"' -c "
import threading
open(\"t0\", \"w\").close()
def w(i): open(\"t%d\" % i, \"w\").close()
ts = [threading.Thread(target=w, args=(i,)) for i in range(1, 5)]
[t.start() for t in ts]; [t.join() for t in ts]"
exec dash -c "echo e > d4; kill -9 \$\$"') >/dev/null 2>&1
"$PY" "$BBX_SRCDIR/tests/e2e/jdecode.py" "$J5/journal" >"$T_TMP/recs.defer"
"$PY" - "$T_TMP/recs.defer" "$W5" >"$T_TMP/chk5" 2>&1 <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
ws = sys.argv[2]
def create(name):
    c = [r for r in recs if r["type"] == "CREATE" and r.get("path") == ws + "/" + name]
    assert len(c) == 1, (name, len(c))
    return c[0]
def results(c):
    return [(i, r) for i, r in enumerate(recs) if r["type"] == "RESULT" and r.get("ref") == c["seq"]]
bad = []
for n in ("d1", "d2", "d3", "t0", "t1", "t2", "t3", "t4"):
    c = create(n)
    res = results(c)
    if len(res) != 1 or res[0][1]["hpid"] != c["hpid"]:
        bad.append((n, "results", [(i, r["hpid"]) for i, r in res], c["hpid"]))
d1, d2 = create("d1"), create("d2")
(i1, _), = results(d1)
sub = min(i for i, r in enumerate(recs) if r["hpid"] == d2["hpid"])
if i1 > sub:
    bad.append(("d1's RESULT after the fork child's first record", i1, sub))
(i3, _), = results(create("d3"))
dash = [i for i, r in enumerate(recs) if r["type"] == "EXEC" and (r.get("argv") or [""])[0] == "dash"]
if len(dash) != 1 or i3 > dash[0]:
    bad.append(("d3's RESULT after the EXEC of dash", i3, dash))
print(bad)
sys.exit(1 if bad else 0)
PY
r=$?
[ $r -ne 0 ] && sed 's/^/#   /' "$T_TMP/chk5" | head -20 >&2
ok $r "held-back RESULTs: one per creation, by its own process, before a fork child's records and an exec (bash, subshell, python threads)"
"$PY" - "$T_TMP/recs.defer" "$W5" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
c = [r for r in recs if r["type"] == "CREATE" and r.get("path") == sys.argv[2] + "/d4"]
sys.exit(0 if len(c) == 1 and not any(r["type"] == "RESULT" and r.get("ref") == c[0]["seq"] for r in recs) else 1)
PY
ok $? "a process killed by SIGKILL after a creation: CREATE journaled, its held-back RESULT lost"
bbx-log -V "$J5" >/dev/null 2>&1
ok $? "... the journal verifies (chain, seqs, seal)"
bbx-undo "$J5" >"$T_TMP/undo5" 2>&1
r=$?
[ $r -ne 0 ] && sed "s/^/#   /" "$T_TMP/undo5" | head -30 >&2
ok $r "... bbx-undo exits 0"
snap "$W5" >"$T_TMP/w5.after"
same_snap "$T_TMP/w5.before" "$T_TMP/w5.after" "... the tree is restored, d4 (no RESULT) removed too"

# The main thread holds a RESULT back (one thread so far), starts a thread and leaves
# with pthread_exit, which frees its scratch (the buffer); the other thread creates a
# file and calls exit.  Both RESULTs must be in the journal (a thread's buffer is written
# when it goes away, and nothing points at it afterwards).
cat >"$T_TMP/pexit.c" <<'CEOF'
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
static void *worker(void *a)
{
	(void)a;
	usleep(100000);
	int fd = creat("by-worker", 0644);
	if (fd >= 0)
		close(fd);
	exit(0);
}
int main(void)
{
	int fd = creat("by-main", 0644);
	if (fd >= 0)
		close(fd);
	pthread_t t;
	if (pthread_create(&t, NULL, worker, NULL))
		return 2;
	pthread_exit(NULL);
}
CEOF
if gcc -pthread -o "$T_TMP/pexit" "$T_TMP/pexit.c" 2>"$T_TMP/gcc.err"; then
	W6=$(new_ws)
	(cd "$W6" && bbx-run -q --journal "$T_TMP/j.pexit" -- "$T_TMP/pexit") >/dev/null 2>&1
	bbx-log -r "$T_TMP/j.pexit" >"$T_TMP/pexit.log" 2>&1
	n=$(grep -cE " RESULT creat $W6/by-(main|worker)( |\$)" "$T_TMP/pexit.log")
	[ "$n" = 2 ] && [ -e "$W6/by-main" ] && [ -e "$W6/by-worker" ]
	r=$?
	[ $r -ne 0 ] && sed "s/^/#   /" "$T_TMP/pexit.log" | head -30 >&2
	ok $r "held-back RESULT of a main thread that leaves with pthread_exit: written when its scratch goes"
else
	sed "s/^/#   /" "$T_TMP/gcc.err" | head -30 >&2
	skip "gcc not available"
fi


# Removals of what the run made are held back past the thread's buffer, in the
# process's overflow (journal/run.c, defer_spill): 300 files made, 150 removed, a fork
# (whose child makes a file), 150 more removed; every 50th removal is of a file 1,200
# bytes deep, whose record is too big to hold back and goes at once.  Each removal must
# be in the journal exactly once, in the order made (the big ones too: the held-back
# ones go first), those before the fork ahead of the child's records; and a process
# killed with removals held back loses only those records: the journal verifies and
# undo restores the tree.
W7=$(new_ws)
J7="$T_TMP/j.spill"
snap "$W7" >"$T_TMP/w7.before"
(cd "$W7" && bbx-run -q --journal "$J7" -- "$PY" -c '
import os
L = "/".join(["l" * 200] * 6)
os.makedirs(L)
for i in range(300): open("r%03d" % i, "w").close()
for i in range(6): open(L + "/x%d" % i, "w").close()
def rm(i):
    os.unlink("r%03d" % i)
    if i % 50 == 49: os.unlink(L + "/x%d" % (i // 50))
for i in range(150): rm(i)
pid = os.fork()
if pid == 0:
    open("child", "w").close()
    os._exit(0)
os.waitpid(pid, 0)
for i in range(150, 300): rm(i)
os.unlink("child")') >/dev/null 2>&1
"$PY" "$BBX_SRCDIR/tests/e2e/jdecode.py" "$J7/journal" >"$T_TMP/recs.spill"
"$PY" - "$T_TMP/recs.spill" "$W7" >"$T_TMP/chk7" 2>&1 <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
ws = sys.argv[2]
rm = [(i, r) for i, r in enumerate(recs) if r["type"] == "PRESERVE" and r.get("op") == "unlink"
      and r.get("path", "").startswith(ws + "/") and r["path"] != ws + "/child"]
names = [r["path"][len(ws) + 1:] for _, r in rm]
L = "/".join(["l" * 200] * 6)
want = []
for i in range(300):
    want.append("r%03d" % i)
    if i % 50 == 49:
        want.append(L + "/x%d" % (i // 50))
bad = []
if names != want:
    bad.append(("removals, in file order", len(names), [n[-8:] for n in names[:3]],
                [(k, n[-8:], w[-8:]) for k, (n, w) in enumerate(zip(names, want)) if n != w][:3]))
seqs = [r["seq"] for _, r in rm]
if seqs != sorted(seqs):
    bad.append("removals' seqs out of file order")
child = [i for i, r in enumerate(recs) if r["type"] == "CREATE" and r.get("path") == ws + "/child"]
last = [i for (i, r), n in zip(rm, names) if n == L + "/x2"]
if len(child) != 1 or len(last) != 1 or last[0] > child[0]:
    bad.append(("the fork's last removal after the child's CREATE", last, child))
res = {r.get("ref") for r in recs if r["type"] == "RESULT" and r.get("ret") == 0}
if any(r["seq"] not in res for _, r in rm):
    bad.append("a removal without its RESULT")
print(bad)
sys.exit(1 if bad else 0)
PY
r=$?
[ $r -ne 0 ] && sed 's/^/#   /' "$T_TMP/chk7" | head -20 >&2
ok $r "removals held back past the buffer: 306 in the journal once each, in order (6 too big to hold back among them), with outcomes, those before a fork ahead of its child's records"
bbx-log -V "$J7" >/dev/null 2>&1 && bbx-undo "$J7" >"$T_TMP/undo7" 2>&1
r=$?
[ $r -ne 0 ] && sed "s/^/#   /" "$T_TMP/undo7" | head -30 >&2
ok $r "... the journal verifies and bbx-undo exits 0"
snap "$W7" >"$T_TMP/w7.after"
same_snap "$T_TMP/w7.before" "$T_TMP/w7.after" "... the tree is restored"
W8=$(new_ws)
J8="$T_TMP/j.spillkill"
printf 'kept\n' >"$W8/old.txt"
snap "$W8" >"$T_TMP/w8.before"
(cd "$W8" && bbx-run -q --journal "$J8" -- "$PY" -c '
import os, signal
for i in range(100): open("k%03d" % i, "w").close()
os.unlink("old.txt")
for i in range(100): os.unlink("k%03d" % i)
os.kill(os.getpid(), signal.SIGKILL)') >/dev/null 2>&1
n=$("$PY" "$BBX_SRCDIR/tests/e2e/jdecode.py" "$J8/journal" |
	grep -c "\"type\": \"PRESERVE\", .*\"path\": \"$W8/k[0-9]*\"")
bbx-log -V "$J8" >/dev/null 2>&1 && bbx-undo "$J8" >"$T_TMP/undo8" 2>&1
r=$?
[ $r -ne 0 ] && sed "s/^/#   /" "$T_TMP/undo8" | head -30 >&2
snap "$W8" >"$T_TMP/w8.after"
[ $r -eq 0 ] && [ "$n" -ge 70 ] && [ "$n" -le 100 ] && cmp -s "$T_TMP/w8.before" "$T_TMP/w8.after"
ok $? "a process killed with removals held back: at most ~25 removal records lost ($((100 - n)) of 100), the journal verifies, undo restores the tree (old.txt back)"

# The run's cache of strings known clean (journal/redact.c) holds argv elements too,
# shared by every process: a word first met as a plain argument, and so entered, must
# still be redacted after --password, in the EXEC the shell's fork child writes and in
# the PROC of the program it became; and a flag entered nowhere makes its value a
# secret every time.
W9=$(new_ws)
J9="$T_TMP/j.argcache"
(cd "$W9" && bbx-run -q --journal "$J9" -- sh -c '
sh -c "echo a > g1" tool plainword77 --password
sh -c "echo b > g2" tool plainword77
sh -c "echo c > g3" tool --password plainword77
sh -c "echo d > g4" tool --password plainword77') >/dev/null 2>&1
"$PY" "$BBX_SRCDIR/tests/e2e/jdecode.py" "$J9/journal" >"$T_TMP/recs.argcache"
"$PY" - "$T_TMP/recs.argcache" >"$T_TMP/chk" 2>&1 <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
M = "***REDACTED***"
def argvs(kind, script):
    return [r["argv"] for r in recs if r["type"] == kind and r.get("argv", [None] * 3)[2:3] == [script]]
want = {
    "echo a > g1": ["sh", "-c", "echo a > g1", "tool", "plainword77", "--password"],
    "echo b > g2": ["sh", "-c", "echo b > g2", "tool", "plainword77"],
    "echo c > g3": ["sh", "-c", "echo c > g3", "tool", "--password", M],
    "echo d > g4": ["sh", "-c", "echo d > g4", "tool", "--password", M],
}
bad = 0
for script, argv in want.items():
    for kind in ("EXEC", "PROC"):
        got = argvs(kind, script)
        if not got or any(a != argv for a in got):
            print("%s of %r: %r" % (kind, script, got))
            bad = 1
sys.exit(bad)
PY
r=$?
[ $r -ne 0 ] && sed 's/^/#   /' "$T_TMP/chk" | head -20 >&2
[ $r -eq 0 ] && [ -s "$W9/g4" ]
ok $? "an argument the clean cache holds is redacted after --password, in EXEC and PROC records"
finish
