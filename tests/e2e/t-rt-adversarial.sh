#!/bin/bash
# SPDX-License-Identifier: MIT
# t-rt-adversarial.sh - round trips through workloads chosen to break the journal: paths
# with "..", magic /proc links, sockets, hard links with the journal on another
# filesystem, processes killed inside link(), two runs undone newest first, children that
# outlive the run, other preloaded libraries (fakeroot), writes to /proc, fifos,
# posix_spawn's addchdir_np; and the hard cases that must keep working (a no-op rename,
# odd names, long paths, renameat2 exchange, node, sqlite, O_TMPFILE, user nobody with
# mode 000/500, closed and dup2()ed descriptors, threads, SIGKILL at random points,
# interrupted undo).  Each case: workspace, snapshot, workload under bbx-run, the tree
# changed, bbx-undo, the first snapshot again (DESIGN.md invariants 3, 4 and 5).
#
# Part 1 holds the minimal reproductions of the bugs this file found.  Each comment says
# what was wrong; all are fixed now and stay as regression tests.  A bug found and not
# yet fixed is marked TODO (counted as an expected failure, XFAIL; a pass becomes XPASS
# and fails the suite, so the marker must then go).
. "${BBX_SRCDIR:?is set by make check (tests/local.mk)}/tests/e2e/lib.sh" || exit 99
. "$BBX_SRCDIR/tests/e2e/roundtrip.sh"

ws() { local d; d=$(new_ws); rt_project "$d"; echo "$d"; }

# A second filesystem for the journal (tmpfs), when there is one: the pre-images are then
# copies, not hard links to the very inode.
XD=
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
	XD=$(mktemp -d /dev/shm/bbx-adv.XXXXXX) || XD=
fi
trap 'rm -rf "$T_TMP" ${XD:+"$XD"}' EXIT
# rt_journal from roundtrip.sh, with the directory choosable (RT_JDIR).
rt_journal() { mktemp -u "${RT_JDIR:-$T_TMP}/journal.XXXXXX"; }


# ======================================================================================
# Part 1 - reproductions of the bugs found (fixed unless marked TODO)
# ======================================================================================

# Paths are made absolute lexically (bbx_path_abs keeps ".."): `mv ../docs ../documentation`
# run inside docs is recorded as RENAME ws/docs/../docs -> ws/docs/../documentation.  Once
# docs is gone, ws/docs/.. no longer resolves: the undo cannot rename it back, and says
# nothing (0 errors, exit 0).
W=$(ws)
rt_case "'..' through the directory being renamed (cd docs && mv ../docs ../documentation)" "$W" \
	'cd docs && mv ../docs ../documentation' \
	'[ -d documentation ] && [ ! -e docs ]'

# Same cause: RMDIR ws/deep/level1/../level1 cannot be recreated (ENOENT), so neither can
# anything under it.
W=$(ws)
rt_case "'..' through the directory being removed (cd deep/level1 && rm -rf ../level1)" "$W" \
	'cd deep/level1 && rm -rf ../level1' \
	'[ ! -e deep/level1 ]'

# Magic links inside a path are not resolved either: /proc/self/cwd/x is recorded as is,
# and bbx-undo then acts on ITS OWN cwd (it restored secret.txt there and failed on
# docs/README.md), not on the workspace.
W=$(ws)
mkdir -p "$T_TMP/undo-cwd"
here=$PWD
cd "$T_TMP/undo-cwd" || exit 1
rt_case "paths through /proc/self/cwd" "$W" \
	'echo new > /proc/self/cwd/docs/README.md && rm /proc/self/cwd/secret.txt &&
	 echo c > /proc/self/cwd/created' \
	'[ -f created ] && [ ! -e secret.txt ]'
cd "$here" || exit 1
[ -z "$(ls -A "$T_TMP/undo-cwd")" ]
ok $? "paths through /proc/self/cwd: bbx-undo wrote nothing into its own cwd"

# bind(2) of a unix socket creates a directory entry, but bind is not wrapped: no CREATE
# record, the socket survives the undo (and its directory's mtime is not restored).
W=$(ws)
rt_case "unix socket created by bind()" "$W" \
	'"$PY" -c "import socket; socket.socket(socket.AF_UNIX).bind(\"app.sock\")"' \
	'[ -S app.sock ]'

# A child that outlives bbx-run keeps journaling (records after SEAL): its changes to
# paths the run had already captured each write a NOTE, so undo takes them for the
# run's own and restores the start, with no conflict.
W=$(ws)
rt_case "a background child outlives the run (its later changes are journaled)" "$W" \
	'(sleep 0.3; echo late >> docs/README.md; echo late >> docs/guide.txt; rm -f wide/w2) \
	   </dev/null >/dev/null 2>&1 &
	 echo early > docs/README.md; echo early >> docs/guide.txt; rm wide/w1' \
	'sleep 1; grep -q late docs/guide.txt && [ ! -e wide/w2 ]'

# A background child creates a file (and a directory for it) before bbx-run seals the
# run, and writes it through its descriptor after: no record names the path after the
# seal but the open's RESULT, which it holds back until it ends.  That counts as the
# run's own doing: undo removes both, no conflict (t-crash found it: tar extracting on
# after its shell was killed).
W=$(ws)
rt_case "a background child writes after the seal into a file it opened before" "$W" \
	'"$PY" -c "import os, time
os.mkdir(\"late\")
f = open(\"late/f\", \"w\")
time.sleep(0.6)
f.write(\"written after the seal\\n\")
f.close()" </dev/null >/dev/null 2>&1 &
	 sleep 0.3' \
	'sleep 1; grep -q "after the seal" late/f'

# The agent's usual `cmd > log &`: the shell opens the log before the seal, the command
# writes it after, through a descriptor no wrapper sees.  bbx-run, the run's subreaper,
# finds the file open for writing in a process that outlived the command and notes it
# after its FINAL record: undo restores the log, no conflict (it was kept as a
# .bbx-conflict before, and undo exited 3).
W=$(ws)
rt_case "a background job writes after the seal to the log its shell opened before" "$W" \
	'(sleep 0.6; echo late) >docs/README.md 2>/dev/null </dev/null &
	 sleep 0.3' \
	'sleep 1; grep -q late docs/README.md'
grep -Eq "^bbx-run: [0-9]+ process(es)? of the run still running" "$T_TMP/run.err"
ok $? "bbx-run says a process of the run outlived it"
bbx-log -r --no-pager "$RT_J" | grep -q "NOTE seal $W/docs/README.md text=open for writing by pid"
ok $? "the journal notes the log as open for writing by the straggler at the seal"

# The same through a shared writable mapping, its descriptor closed before the seal:
# stores into it make no system call at all (/proc/PID/maps gives the file).  libc's
# mmap by ctypes: python's mmap module keeps a duplicate of the descriptor, which the
# descriptor scan would find instead.
W=$(ws)
rt_case "a background job stores into a shared mapping after the seal" "$W" \
	'"$PY" -c "import ctypes, os, time
libc = ctypes.CDLL(None)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
fd = os.open(\"data/blob.bin\", os.O_RDWR)
p = libc.mmap(None, 4096, 3, 1, fd, 0)
os.close(fd)
assert p and p != ctypes.c_void_p(-1).value and not os.listdir(\"/proc/self/fd\").count(str(fd))
time.sleep(0.6)
ctypes.memmove(p, b\"LATE!\", 5)
libc.msync(ctypes.c_void_p(p), ctypes.c_size_t(4096), 4)" </dev/null >/dev/null 2>&1 &
	 sleep 0.3' \
	'sleep 1; [ "$(head -c 5 data/blob.bin)" = "LATE!" ]'

# A file older than the run, removed while a process of the run still writes it through
# a descriptor: the removal keeps the inode (a hard link into objects/), which then grows.
# That is the run's own doing (its SIZE capture came first, and undo replays it after
# the link), so bbx-log --verify notes the size, it does not call the journal damaged
# (t-crash: make deleting an object file its killed compiler's assembler still wrote).
W=$(ws)
rt_case "a file removed while the run's shell still appends to it" "$W" \
	'exec 3>>docs/guide.txt; rm docs/guide.txt; echo "written after the removal" >&3; exec 3>&-' \
	'[ ! -e docs/guide.txt ]' \
	'bbx-log --verify "$RT_J" >"$T_TMP/verify.out" 2>&1 &&
	 grep -q "note: .*record says [0-9]* (the run had the file open for writing" "$T_TMP/verify.out"'

# fakeroot puts libfakeroot before the shim in LD_PRELOAD: the shim's own lstat() is
# answered by libfakeroot, so META records hold the faked (already changed) owner and
# mode; undo "restores" the changed values.
if command -v fakeroot >/dev/null 2>&1; then
	W=$(ws)
	rt_case "fakeroot chmod/chown (another LD_PRELOAD library before the shim)" "$W" \
		'fakeroot sh -c "chmod 700 script.sh && chown -R 1234:1234 src"' \
		'[ "$(stat -c %a script.sh)" = 700 ] && [ "$(stat -c %u src/main.c)" = 1234 ]'
else
	skip "fakeroot is not installed"
fi

# Writes to procfs are journaled as SIZE/PRESERVE of /proc/self/...; the undo then tries to
# restore (or move aside) /proc/self/oom_score_adj of bbx-undo itself and exits 1.
# (unshare -Ur, bwrap and newuidmap do the same with /proc/self/uid_map.)
W=$(ws)
rt_case "a write to /proc/self/oom_score_adj" "$W" \
	'echo 1000 > /proc/self/oom_score_adj && echo x > docs/README.md'

# posix_spawn_file_actions_addchdir_np then a relative addopen: the shim resolved the name
# against the parent's cwd, captured README.md at the top, and the child truncated
# docs/README.md unrecorded (fixed: shim/spawnfa.c follows the list's directory).
cat >"$T_TMP/spawnchdir.c" <<'EOF'
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
extern char **environ;
int main(void)
{
	posix_spawn_file_actions_t fa;
	char *argv[] = {"echo", "spawned", 0};
	pid_t p;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addchdir_np(&fa, "docs");
	posix_spawn_file_actions_addopen(&fa, 1, "README.md", O_WRONLY | O_TRUNC, 0644);
	if (posix_spawnp(&p, "echo", &fa, 0, argv, environ))
		return 1;
	return waitpid(p, 0, 0) == p ? 0 : 1;
}
EOF
if gcc -o "$T_TMP/spawnchdir" "$T_TMP/spawnchdir.c" 2>"$T_TMP/gcc.err"; then
	W=$(ws)
	echo '# top-level readme' >"$W/README.md"
	rt_oldtimes "$W"
	rt_case "posix_spawn with addchdir_np, then a relative addopen O_TRUNC" "$W" \
		'"$T/spawnchdir"' \
		'[ "$(cat docs/README.md)" = spawned ]'
else
	rt_showerr "$T_TMP/gcc.err"
	ok 1 "posix_spawn with addchdir_np: test program builds"
fi

# The other ways a file-action list moves the child (shim/spawnfa.c), each against the
# directory the list is in when the action runs: addfchdir_np by a descriptor of the
# parent; a relative program name after addchdir_np (found, recorded and started in that
# directory); addfchdir_np onto a descriptor that an earlier open of the same list
# replaces (the shim cannot tell where the child will be: the relative open that would
# truncate is refused, and nothing changes).
cat >"$T_TMP/spawnfa.c" <<'EOF'
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
extern char **environ;
int main(int argc, char **argv)
{
	posix_spawn_file_actions_t fa;
	char *echo[] = {"echo", "spawned", 0}, *tool[] = {"./tool.sh", 0}, *ptool[] = {"tool.sh", 0};
	char *const *av = echo;
	const char *prog = "/bin/echo";
	int usep = 0; /* posix_spawnp */
	int r = posix_spawn_file_actions_init(&fa);
	if (argc < 2 || r)
		return 2;
	if (!strcmp(argv[1], "fchdir")) {
		int d = open("docs", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		r = d < 0 ? errno : posix_spawn_file_actions_addfchdir_np(&fa, d);
		if (!r)
			r = posix_spawn_file_actions_addopen(&fa, 1, "README.md", O_WRONLY | O_TRUNC, 0);
	} else if (!strcmp(argv[1], "relprog")) {
		r = posix_spawn_file_actions_addchdir_np(&fa, "docs");
		prog = "./tool.sh", av = tool;
	} else if (!strcmp(argv[1], "pathrel")) {
		/* posix_spawnp of a bare name, $PATH with a relative entry (the caller's) */
		r = posix_spawn_file_actions_addchdir_np(&fa, "docs");
		prog = "tool.sh", av = ptool, usep = 1;
	} else if (!strncmp(argv[1], "unknown", 7)) {
		/* the child's directory unknown (as "replaced" below), then a program by a
		 * relative name ("unknownrel"), by a relative $PATH entry ("unknownpath"),
		 * or by an absolute one ("unknownabs", allowed) */
		r = posix_spawn_file_actions_addopen(&fa, 7, "docs", O_RDONLY | O_DIRECTORY, 0);
		if (!r)
			r = posix_spawn_file_actions_addfchdir_np(&fa, 7);
		if (!strcmp(argv[1], "unknownrel"))
			prog = "./tool.sh", av = tool;
		else if (!strcmp(argv[1], "unknownpath"))
			prog = "tool.sh", av = ptool, usep = 1;
		else
			prog = "echo", usep = 1;
	} else if (!strcmp(argv[1], "full")) {
		/* 17 lists alive, each with an open: the 17th finds the shim's table full
		 * (its addchdir_np: ENOMEM); all destroyed, a new list whose first action is
		 * addfchdir_np is followed as any other */
		posix_spawn_file_actions_t many[17];
		for (int i = 0; i < 17; i++)
			if (posix_spawn_file_actions_init(&many[i]) ||
			    posix_spawn_file_actions_addopen(&many[i], 9, "/dev/null", O_RDONLY, 0))
				return 5;
		if (posix_spawn_file_actions_addchdir_np(&many[16], "docs") != ENOMEM)
			return 4;
		for (int i = 0; i < 17; i++)
			posix_spawn_file_actions_destroy(&many[i]);
		int d = open("docs", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		r = d < 0 ? errno : posix_spawn_file_actions_addfchdir_np(&fa, d);
		if (!r)
			r = posix_spawn_file_actions_addopen(&fa, 1, "README.md", O_WRONLY | O_TRUNC, 0);
	} else if (!strncmp(argv[1], "replaced", 8)) {
		/* "replaced": a truncating open; "replacedro": a read-only one (deny_read) */
		int ro = !strcmp(argv[1], "replacedro");
		r = posix_spawn_file_actions_addopen(&fa, 7, "docs", O_RDONLY | O_DIRECTORY, 0);
		if (!r)
			r = posix_spawn_file_actions_addfchdir_np(&fa, 7);
		if (!r)
			r = posix_spawn_file_actions_addopen(&fa, ro ? 0 : 1, "README.md",
							     ro ? O_RDONLY : O_WRONLY | O_TRUNC, 0);
		if (r == EACCES)
			return 3; /* refused, as it must be */
	}
	pid_t p;
	if (!r)
		r = (usep ? posix_spawnp : posix_spawn)(&p, prog, &fa, 0, av, environ);
	if (r == EACCES && !strncmp(argv[1], "unknown", 7))
		return 3; /* refused, as it must be */
	if (r) {
		fprintf(stderr, "spawnfa: %s\n", strerror(r));
		return 1;
	}
	return waitpid(p, 0, 0) == p ? 0 : 1;
}
EOF
# exec_is OP EXE CWD: the last round trip's journal ($RT_J) has exactly one EXEC by OP,
# naming EXE as the program and CWD as its directory.
exec_is() {
	bbx-log --json "$RT_J" >"$T_TMP/exec.json" 2>&1
	"$PY" - "$T_TMP/exec.json" "$@" <<-'PYEOF'
	import json, sys
	op, exe, cwd = sys.argv[2:5]
	ex = [e for e in map(json.loads, open(sys.argv[1]))
	      if e.get("type") == "EXEC" and e.get("op") == op]
	ok = len(ex) == 1 and ex[0].get("exe") == exe and ex[0].get("cwd") == cwd
	if not ok:
	    print("# " + json.dumps(ex))
	sys.exit(0 if ok else 1)
	PYEOF
}
if gcc -o "$T_TMP/spawnfa" "$T_TMP/spawnfa.c" 2>"$T_TMP/gcc.err"; then
	W=$(ws)
	rt_oldtimes "$W"
	rt_case "posix_spawn with addfchdir_np, then a relative addopen O_TRUNC" "$W" \
		'"$T/spawnfa" fchdir' \
		'[ "$(cat docs/README.md)" = spawned ]'

	W=$(ws)
	rt_oldtimes "$W"
	rt_case "posix_spawn after the file-action table was full: addfchdir_np first, then a relative addopen O_TRUNC" "$W" \
		'"$T/spawnfa" full' \
		'[ "$(cat docs/README.md)" = spawned ]'

	W=$(ws)
	printf '#!/bin/sh\necho ran in "$PWD" > ran.txt\n' >"$W/docs/tool.sh"
	chmod 755 "$W/docs/tool.sh"
	rt_oldtimes "$W"
	rt_case "posix_spawn of ./tool.sh after addchdir_np" "$W" \
		'"$T/spawnfa" relprog' \
		'[ "$(cat docs/ran.txt)" = "ran in $PWD/docs" ]'
	exec_is posix_spawn "$W/docs/tool.sh" "$W/docs"
	ok $? "posix_spawn of ./tool.sh after addchdir_np: EXEC names docs/tool.sh, started in docs"

	# posix_spawnp searches the caller's $PATH in the child, after the chdir: a relative
	# entry is a directory under docs (a bin/tool.sh at the top, which the shim found
	# before, is another program).
	W=$(ws)
	mkdir -p "$W/docs/bin" "$W/bin"
	printf '#!/bin/sh\necho ran in "$PWD" > ran.txt\n' >"$W/docs/bin/tool.sh"
	printf '#!/bin/sh\necho the top one > ran.txt\n' >"$W/bin/tool.sh"
	chmod 755 "$W/docs/bin/tool.sh" "$W/bin/tool.sh"
	rt_oldtimes "$W"
	rt_case "posix_spawnp of a name on a relative \$PATH entry after addchdir_np" "$W" \
		'PATH=bin:$PATH "$T/spawnfa" pathrel' \
		'[ "$(cat docs/ran.txt)" = "ran in $PWD/docs" ] && [ ! -e ran.txt ]'
	exec_is posix_spawnp "$W/docs/bin/tool.sh" "$W/docs"
	ok $? "posix_spawnp of tool.sh on \$PATH bin after addchdir_np: EXEC names docs/bin/tool.sh, not bin/tool.sh"

	# The child's directory unknown: a program found by a relative name there is not
	# started (neither the exec rules nor deny_read could be applied to it); one found
	# on an absolute $PATH entry is.
	W=$(ws)
	printf '#!/bin/sh\necho ran > ran.txt\n' >"$W/docs/tool.sh"
	chmod 755 "$W/docs/tool.sh"
	before=$(rt_snap "$W" fa-unknown)
	rt_run "$(rt_journal)" "$W" '"$T/spawnfa" unknownrel'
	rc=$?
	grep -q "refused posix_spawn of ./tool.sh: the child's directory is unknown" "$T_TMP/run.err"
	ok $((rc == 3 ? $? : 1)) "the child's directory unknown: posix_spawn of ./tool.sh is refused (EACCES), and stderr says why"
	rt_run "$(rt_journal)" "$W" 'PATH=.:$PATH "$T/spawnfa" unknownpath'
	expect_rc $? 3 "the child's directory unknown: posix_spawnp of tool.sh with . on \$PATH is refused"
	same_snap "$before" "$(rt_snap "$W" fa-unknown-after)" \
		"the child's directory unknown: neither tool.sh ran"
	rt_run "$(rt_journal)" "$W" '"$T/spawnfa" unknownabs'
	expect_rc $? 0 "the child's directory unknown: posix_spawnp of echo on an absolute \$PATH runs"

	W=$(ws)
	before=$(rt_snap "$W" fa-replaced)
	J=$(rt_journal)
	rt_run "$J" "$W" '"$T/spawnfa" replaced'
	expect_rc $? 3 "addfchdir_np onto a descriptor the list replaced: the relative addopen O_TRUNC is refused"
	same_snap "$before" "$(rt_snap "$W" fa-replaced-after)" \
		"addfchdir_np onto a descriptor the list replaced: nothing changed"
	grep -q "child's directory is unknown" "$T_TMP/run.err"
	ok $? "addfchdir_np onto a descriptor the list replaced: the refusal says why"
	# deny_read (the default policy has some): a read-only relative addopen there is
	# not handed to the child unchecked either
	rt_run "$(rt_journal)" "$W" '"$T/spawnfa" replacedro'
	expect_rc $? 3 "addfchdir_np onto a descriptor the list replaced: a read-only relative addopen is refused"
else
	rt_showerr "$T_TMP/gcc.err"
	ok 1 "posix_spawn file actions: test program builds"
fi

# Writing into a fifo changes the fifo's mtime; opening a fifo is not a capture, so the
# old mtime is never put back.
W=$(ws)
mkfifo "$W/pipe"
rt_oldtimes "$W"
rt_case "data written through a fifo" "$W" \
	'(cat pipe > /dev/null &) ; echo hello > pipe'

# A process killed between link(2) and its RESULT record leaves CREATE kind=hardlink with
# no RESULT.  Undo then judges the new name by the inode's birth time ("only remove what
# was born after the record") - but a hard link's inode is the old file's, born long
# before: the name is moved aside as NAME.bbx-conflict instead of removed (exit 3).  Eight
# processes are each killed 0.2 s into a link() loop; about half the kills land in that
# window.  (bbx-undo killed midway leaves the same in its own journal: undoing that undo
# then reports "predates this run's creation record".)
W=$(ws)
rt_case "processes SIGKILLed in a loop of link() of an existing file" "$W" \
	'for i in 1 2 3 4 5 6 7 8; do
	   "$PY" -c "
import os, sys
n = 0
while True:
    n += 1
    os.link(\"hl/a\", \"L%s_%d\" % (sys.argv[1], n))
" $i & p=$!; sleep 0.2; kill -9 $p; wait $p; done; true' \
	'ls | grep -q "^L[0-9]*_1$"'

# Two runs, undone newest first (what a user does after two bad agent commands, or an
# orchestrator running each command as its own run).  Undoing the second run cannot set
# ctime back, and the first run's FINAL records use ctime as the witness of "changed
# after the run": every path both runs touched becomes a conflict (.bbx-conflict files,
# an appended file left as it is, a created file not removed, exit 3).
W=$(ws)
J1=$(rt_journal)
J2=$(rt_journal)
before=$(rt_snap "$W" before)
rt_run "$J1" "$W" 'echo r1 > docs/README.md && echo a >> docs/guide.txt && echo new > created.txt'
expect_rc $? 0 "two runs undone newest first: first run exits 0"
rt_run "$J2" "$W" 'echo r2 >> docs/README.md && sed -i s/line/LINE/ docs/guide.txt && echo more > created.txt'
expect_rc $? 0 "two runs undone newest first: second run exits 0"
rt_undo "$J2"
rc=$?
[ $rc -eq 0 ] || rt_showerr "$T_TMP/undo.out"
expect_rc $rc 0 "two runs undone newest first: bbx-undo of the second run exits 0"
rt_undo "$J1"
rc=$?
[ $rc -eq 0 ] || rt_showerr "$T_TMP/undo.out"
expect_rc $rc 0 "two runs undone newest first: bbx-undo of the first run exits 0"
undone=$(rt_snap "$W" undone)
same_snap "$before" "$undone" "two runs undone newest first: tree restored byte for byte"

# Journal on another filesystem (tmpfs): pre-images are copies.  A file with two links is
# appended to through one name, then the other name is removed: the copy taken at the
# unlink already holds the appended bytes.  Undo gives hl/b back as a new link to hl/a,
# which holds the same inode (journal/undo.c, sibling_link: was a separate inode), and
# undoing the append then shortens both.  The same when both names go (rm -rf: the
# second name comes back as a link to the first one's copy).
links_cases() {
	W=$(ws)
	rt_case "journal on another filesystem: hard-linked file appended, other name removed" "$W" \
		'echo more >> hl/a && rm hl/b' \
		'[ ! -e hl/b ] && grep -q more hl/a'
	same_inode "$W/hl/a" "$W/hl/b" "journal on another filesystem: hl/a and hl/b are one inode again"
	W=$(ws)
	rt_case "journal on another filesystem: both names of a hard-linked file removed" "$W" \
		'rm -rf hl' '[ ! -e hl ]'
	same_inode "$W/hl/a" "$W/hl/b" "journal on another filesystem, rm -rf: hl/a and hl/b are one inode again"
}
if [ -n "$XD" ] && [ "$(stat -c %d "$XD")" != "$(stat -c %d "$T_TMP")" ]; then
	RT_JDIR=$XD
	links_cases
	# sed -i replaces one name and never names the other: undo finds hl/b in hl/a's
	# directory by the recorded inode number, holding exactly the pre-image, and links
	# hl/a to it (journal/undo.c, sibling_in_dir: was a separate inode).
	W=$(ws)
	rt_case "journal on another filesystem: sed -i on one of two hard links" "$W" \
		'sed -i s/shared/SHARED/ hl/a' \
		'grep -q SHARED hl/a && grep -q "^shared" hl/b'
	same_inode "$W/hl/a" "$W/hl/b" "journal on another filesystem, sed -i: hl/a and hl/b are one inode again"
	# ... but not when that inode no longer holds the pre-image (changed after the run
	# by someone else): hl/a then comes back as a copy of what it held.
	W=$(ws)
	J=$(rt_journal)
	rt_run "$J" "$W" 'sed -i s/shared/SHARED/ hl/a'
	echo 'changed outside the run' >>"$W/hl/b"
	rt_undo "$J"
	rc=$?
	[ $rc -eq 0 ] && [ "$(cat "$W/hl/a")" = 'shared content' ] && ! [ "$W/hl/a" -ef "$W/hl/b" ] &&
		grep -q 'changed outside' "$W/hl/b"
	ok $? "journal on another filesystem, sed -i, the other name changed after the run: hl/a is its own pre-image, not linked (undo exit $rc)"

	# ... and the copies do not carry the xattrs of the files they preserve.
	if command -v setfattr >/dev/null && setfattr -n user.bbx -v one "$W/docs/README.md" &&
		setfattr -n user.bbx -v two "$W/src/main.c"; then
		rt_oldtimes "$W"
		rt_case "journal on another filesystem: files with xattrs removed and replaced" "$W" \
			'rm docs/README.md && sed -i s/foo/FOO/ src/main.c'
		[ "$(getfattr --only-values -n user.bbx "$W/docs/README.md" 2>/dev/null)" = one ] &&
			[ "$(getfattr --only-values -n user.bbx "$W/src/main.c" 2>/dev/null)" = two ]
		ok $? "journal on another filesystem: the user.bbx xattrs are back"
	else
		skip "no user xattrs on this filesystem"
	fi
	RT_JDIR=
else
	diag "no second filesystem for the journal: the next cases run on one filesystem"
	links_cases
fi

# A directory's name, once proved (journal/path.c, bbx_dname: by its descriptor or by
# openat2 of canonical words), is trusted on later calls while an lstat of the name finds
# the same directory.  With a/ renamed to c/ and a symlink a -> c put in its place, a/b
# still reaches that directory: without the run's namespace generation (raised by the
# rename), the unlink through the descriptor after the swap would be recorded as
# .../a/b/f2, words the kernel does not use for it.  It must name c/b, the descriptor's
# name.  (A call naming a path is recorded by its own words, .../a/b/f4: the undo walks
# back through the same symlink.)
W=$(ws)
rt_case "a proved directory name after its parent was renamed and replaced by a symlink" "$W" \
	'mkdir -p a/b && for f in 1 2 3 4; do echo $f >a/b/f$f; done && python3 -c "
import os
d = os.open(\"a/b\", os.O_RDONLY | os.O_DIRECTORY)
os.unlink(\"f1\", dir_fd=d)
os.unlink(\"a/b/f3\")
os.rename(\"a\", \"c\")
os.symlink(\"c\", \"a\")
os.unlink(\"f2\", dir_fd=d)
os.unlink(\"a/b/f4\")
"' \
	'bbx-log "$RT_J" | grep -q "delete unlinkat .*/c/b/f2 "' \
	'! bbx-log "$RT_J" | grep -q "delete unlinkat .*/a/b/f2 "'

# The same with the symlink made before the proof and renamed into place: that rename
# moves no directory and raises nothing, so only the directory's own rename (a -> c)
# voids the proof of a/b.
W=$(ws)
rt_case "a proved directory name after its parent was renamed and a symlink renamed into its place" "$W" \
	'mkdir -p a/b && for f in 1 2; do echo $f >a/b/f$f; done && python3 -c "
import os
os.symlink(\"c\", \"s\")
d = os.open(\"a/b\", os.O_RDONLY | os.O_DIRECTORY)
os.unlink(\"f1\", dir_fd=d)
os.rename(\"a\", \"c\")
os.rename(\"s\", \"a\")
os.unlink(\"f2\", dir_fd=d)
"' \
	'bbx-log "$RT_J" | grep -q "delete unlinkat .*/c/b/f2 "' \
	'! bbx-log "$RT_J" | grep -q "delete unlinkat .*/a/b/f2 "'

# The open family opens by those proved words (openat2 with RESOLVE_NO_SYMLINKS, shim.h
# BBX_POL_BYPATH), and a rename of a file over a file keeps the proofs (capture.c,
# bbx_cap_rename).  The directory's own rename still voids them: f3 is opened through
# the symlink after the swap, decided on c/b like any first create there, and undone.
W=$(ws)
rt_case "creates in a proved directory around a file renamed over a file and the directory swapped for a symlink" "$W" \
	'mkdir -p a/b && python3 -c "
import os
open(\"a/b/f1\", \"w\").write(\"1\")
open(\"a/b/t\", \"w\").write(\"t\")
os.rename(\"a/b/t\", \"a/b/f1\")
open(\"a/b/f2\", \"w\").write(\"2\")
os.rename(\"a\", \"c\")
os.symlink(\"c\", \"a\")
open(\"a/b/f3\", \"w\").write(\"3\")
"' \
	'[ -L a ] && [ "$(cat c/b/f1)$(cat c/b/f2)$(cat c/b/f3)" = t23 ]'

# The same swap made by a process outside the run, between two creates in a/b: the
# proof, checked by identity, still holds (the lstat follows the new symlink to the same
# directory), and openat2 refuses the symlink with ELOOP.  The create must not fail: the
# shim decides once more by the descriptor route, which opens c/b.  Undo then removes
# both files through the words it recorded.  (Not a byte-for-byte round trip: the swap
# itself was made outside the run.)
W=$(new_ws)
mkdir -p "$W/a/b"
J=$(rt_journal)
coproc SWAP { cd "$W" && exec bbx-run --quiet --journal "$J" -- python3 -u -c "
import os, sys
open('a/b/f1', 'w').write('1')
print('proved')
sys.stdin.readline()
try:
    open('a/b/f2', 'w').write('2')
    print('created')
except OSError as e:
    print('failed', e)
" 2>&1; }
read -r -t 30 line <&"${SWAP[0]}"
mv "$W/a" "$W/c" && ln -s c "$W/a"
echo go >&"${SWAP[1]}"
read -r -t 30 line <&"${SWAP[0]}"
wait "$SWAP_PID"
rc=$?
[ $rc -eq 0 ] && [ "$line" = created ] && [ "$(cat "$W/c/b/f2")" = 2 ]
ok $? "an ancestor swapped for a symlink outside the run: the next create in the proved directory succeeds ($line)"
bbx-log "$J" | grep -E " create [a-z0-9]+ .*/b/f2 = [0-9]+" >/dev/null
ok $? "an ancestor swapped outside the run: the create's successful outcome is recorded"
rt_undo "$J"
rc=$?
[ $rc -eq 0 ] && [ -z "$(ls -A "$W/c/b")" ]
ok $? "an ancestor swapped outside the run: bbx-undo exits 0 ($rc) and removes both files"

# ======================================================================================
# Part 2 - adversarial workloads that round-trip today (keep them working)
# ======================================================================================

# rename(a, b) where a and b are hard links to one inode is a no-op (POSIX).  It used to be
# journaled as RENAME a -> b, and the undo then "renamed b back" onto the existing a: b was
# gone and a moved aside as a.bbx-conflict, an undo damaging a tree the run had not changed
# (shutil.move of two hard links does this).  Fixed in 98ae08b; kept as a regression test.
W=$(ws)
rt_case "rename() between two hard links of one inode (a no-op)" "$W" \
	'"$PY" -c "import os; os.rename(\"hl/a\", \"hl/b\")" && echo done > marker' \
	'[ -f hl/a ] && [ -f hl/b ]'

# Creations in many directories in turn (journal/capture.h, bbx_dtab: the proofs of
# their names the thread's four slots give up).  dirsturn.py N LEN MODE: N directories
# under t/ with names of LEN bytes, three files created in each, in turn.  MODE rename:
# after the first pass the run renames t to t2 and puts a symlink t in its place (the old
# words reach the same directories through it; the rename voids every proof).  MODE fd:
# the files are created relative to a descriptor of their directory, whose name
# (journal/path.c, dir_name) is the table's words for its identity, taken as they are.
cat >"$T_TMP/dirsturn.py" <<'PY'
import os, sys
n, width, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
names = ["t/%03d%s" % (k, "x" * (width - 3)) for k in range(n)]
for d in names:
    os.makedirs(d)
for r in range(3):
    for d in names:
        if mode == "fd":
            dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
            fd = os.open("f%d" % r, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=dfd)
            os.close(dfd)
        else:
            fd = os.open("%s/f%d" % (d, r), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, ("%s %d\n" % (d[2:5], r)).encode())
        os.close(fd)
    if r == 0 and mode == "rename":
        os.rename("t", "t2")
        os.symlink("t2", "t")
PY
# dirsturn DESC N LEN MODE CHECK: the round trip, then each of the 3N creations
# journaled once, by the words the call gave (a symlink inside them stays: the backward
# replay meets it still in place).
dirsturn() {
	local W n
	W=$(ws)
	rt_case "$1" "$W" "\"\$PY\" \"\$T/dirsturn.py\" $2 $3 $4" "$5"
	bbx-log --records "$RT_J" >"$T_TMP/dirsturn.log" 2>&1
	n=$(grep -cE " CREATE [a-z0-9]+ $W/t/[0-9]{3}x*/f[012] " "$T_TMP/dirsturn.log")
	[ "$n" -eq $(($2 * 3)) ]
	ok $? "... each of the $(($2 * 3)) creations journaled once, under its own directory ($n)"
}
dirsturn "creates in 40 directories in turn, their parent renamed and replaced by a symlink" \
	40 3 rename '[ -L t ] && [ -f t2/039/f2 ] && [ "$(cat t/007/f1)" = "007 1" ]'
# 600 names of 150 bytes: 90 KB of words overflow the arena (64 KiB), which starts over;
# an entry of the lapsed round must not lend its offset to new words (with the round
# check removed, the run itself fails).
dirsturn "600 directories with long names in turn, through descriptors (the table's arena starts over)" \
	600 150 fd '[ "$(ls t | wc -l)" = 600 ] && [ "$(cat t/599x*/f2)" = "599 2" ]'

W=$(ws)
rt_case "perl -i, -pi.bak, -ni" "$W" \
	'perl -i -pe "s/foo/FOO/g" src/main.c docs/guide.txt hl/a &&
	 perl -pi.bak -e "s/bar/BAR/" docs/README.md && perl -ni -e "print unless /5/" wide/w5 wide/w15 &&
	 perl -e "rename q(src/util.c), q(src/u.c); unlink q(secret.txt); symlink q(x), q(pl-link);
	          chmod 0700, q(script.sh); utime 1, 2, q(docs/guide.txt); truncate q(data/blob.bin), 7"' \
	'grep -q FOO src/main.c && [ -f docs/README.md.bak ] && [ -f src/u.c ]'

cat >"$T_TMP/pathlib.py" <<'EOF'
import os, pathlib, shutil
p = pathlib.Path('.')
(p / 'docs/README.md').write_text('new readme')
(p / 'new/a/b').mkdir(parents=True)
(p / 'new/a/b/f.txt').write_bytes(b'x' * 100)
(p / 'src/main.c').rename('main_moved.c')
(p / 'wide/w1').unlink()
(p / 'wide/w2').replace('wide/w3')
shutil.rmtree('deep/level1/level2')
shutil.copytree('docs', 'docs-copy')
shutil.move('wide', 'new/wide')
shutil.copy2('script.sh', 'hl/a')
shutil.copystat('secret.txt', 'docs/guide.txt')
shutil.copy('current', 'curcopy')
shutil.copyfile('docs/guide.txt', 'secret.txt')
os.symlink('target', 'sl')
os.replace('sl', 'current')
(p / 'hl/b').chmod(0o400)
os.mkfifo('fifo')
EOF
W=$(ws)
rt_case "python pathlib and shutil (copytree, move, copy2, copystat)" "$W" \
	'"$PY" -B "$T/pathlib.py"' \
	'[ -f main_moved.c ] && [ -d new/wide ] && [ -L current ] && [ -p fifo ]'

# git: stash, rebase, cherry-pick, merge, worktree, gc --prune=now on an existing repo.
W=$(ws)
(
	cd "$W" && git init -q && git add -A && git commit -qm one && git checkout -qb feat &&
	echo f >>src/main.c && git commit -qam f && echo f2 >docs/new && git add docs/new &&
	git commit -qm f2 && git checkout -q main && echo m >>docs/guide.txt && git commit -qam m &&
	echo dirty >>src/util.c && echo untracked >u.txt
) || diag "git setup failed"
rt_oldtimes "$W"
rt_case "git stash, rebase, cherry-pick, merge, worktree, gc --prune=now" "$W" \
	'git stash -q && git stash pop -q && git stash -q -u && git checkout -q feat &&
	 git rebase -q main && git checkout -q main && git cherry-pick feat~1 >/dev/null &&
	 git merge -q --no-edit feat && git worktree add -q wt feat~1 2>/dev/null && echo x > wt/x &&
	 git worktree remove --force wt && git reflog expire --expire=now --all &&
	 git gc -q --prune=now && git stash pop -q' \
	'[ -n "$(ls .git/objects/pack/*.pack)" ] && [ -f u.txt ]'

# Names: spaces, newline, tab, leading dashes, glob characters, backslash, control bytes,
# UTF-8, invalid UTF-8, NAME_MAX.
cat >"$T_TMP/names.py" <<'EOF'
import os
names = [b'with space', b'-leading-dash', b'--', b'new\nline', b'tab\there', b'\xc3\xa9t\xc3\xa9',
         b'\xff\xfe invalid', b'*?[glob]', b"quote'\"", b'back\\slash', b' lead', b'trail ',
         b'..dots', b'\x01ctrl', b'a' * 255]
for n in names:
    os.makedirs(b'names/d-' + n[:200], exist_ok=True)
    with open(b'names/' + n, 'wb') as f:
        f.write(n)
    os.symlink(n, b'names/d-' + n[:200] + b'/l')
EOF
W=$(ws)
(cd "$W" && "$PY" "$T_TMP/names.py") || diag "names setup failed"
rt_oldtimes "$W"
rt_case "odd names (newline, invalid UTF-8, leading dash, NAME_MAX): rename, sed -i, rm -rf" "$W" \
	'cd names && for f in ./*; do [ -f "$f" ] && sed -i s/a/b/ "$f"; done &&
	 for d in ./d-*; do mv -- "$d" "./X${d#./}"; done && cd .. && cp -a names names2 &&
	 rm -rf -- names/-leading-dash names/Xd-* && find names -type f -exec mv -- {} {}.r \; 2>/dev/null;
	 true' \
	'[ -d names2 ] && [ ! -e "names/-leading-dash" ]'

# Paths close to PATH_MAX: a chain of 200-byte directory names, about 3,900 bytes deep.
W=$(ws)
(cd "$W" && "$PY" - <<-'EOF'
	import os
	n = 'd' * 200
	total = len(os.getcwd()) + 5
	os.mkdir('long'); os.chdir('long')
	while total + 201 < 3950:
	    os.mkdir(n); os.chdir(n); total += 201
	with open('f' * 60, 'w') as f:
	    f.write('deep')
	os.symlink('x' * 1000, 'sl')
	EOF
) || diag "long path setup failed"
rt_oldtimes "$W"
rt_case "paths near PATH_MAX: rename at the top, rewrite, rename and delete at the bottom" "$W" \
	'mv long long2 && "$PY" -c "
import os
os.chdir(\"long2\")
while \"d\" * 200 in os.listdir(\".\"):
    os.chdir(\"d\" * 200)
open(\"f\" * 60, \"w\").write(\"changed\")
os.rename(\"f\" * 60, \"g\" * 60)
os.unlink(\"sl\")
os.mkdir(\"n\" * 40)
" && cp -r long2 long3 && rm -rf long3' \
	'[ -d long2 ] && [ ! -e long ]'

W=$(ws)
rt_case "rename chains, swaps, renameat2 RENAME_EXCHANGE and NOREPLACE" "$W" \
	'mv src/main.c t && mv src/util.c src/main.c && mv t src/util.c && mv docs tmpd &&
	 mv wide docs && mv tmpd wide && for i in 1 2 3; do mv src s$i && mv s$i src; done &&
	 "$PY" -c "
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
assert libc.renameat2(-100, b\"deep\", -100, b\"hl\", 2) == 0, ctypes.get_errno()
assert libc.renameat2(-100, b\"current\", -100, b\"secret.txt\", 2) == 0, ctypes.get_errno()
assert libc.renameat2(-100, b\"script.sh\", -100, b\"new.sh\", 1) == 0, ctypes.get_errno()
"' \
	'[ -d hl/level1 ] && [ -L secret.txt ] && [ -f new.sh ]'

W=$(ws)
rt_case "directory renamed, then emptied, deleted and its name reused" "$W" \
	'echo a >> docs/README.md && mv docs d2 && rm d2/guide.txt && echo x > d2/README.md &&
	 mv d2 wide/d3 && rm -rf wide && mkdir docs && echo new > docs/README.md && rm secret.txt &&
	 echo new > secret.txt && rm secret.txt && mv script.sh secret.txt && mv src/main.c script.sh' \
	'[ ! -e wide ] && [ "$(cat docs/README.md)" = new ]'
# docs carried an extended attribute (rt_project) when rm -rf removed it as wide/d3: its
# RMDIR kept it, and the snapshot above saw it back.
bbx-log -r --no-pager "$RT_J" | grep -Eq " RMDIR [a-z0-9]+ $W/wide/d3 .*xattrs=1"
ok $? "a removed directory's RMDIR record holds its extended attribute"

W=$(ws)
mkfifo "$W/fifo"
mknod "$W/null" c 1 3 2>/dev/null || :
"$PY" -c "import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])" "$W/old.sock"
rt_oldtimes "$W"
rt_case "special files: fifo, device, socket removed; fifo and device made" "$W" \
	'rm -f fifo null old.sock && mkfifo fifo2 && mknod zero c 1 5 && mv fifo2 fifo' \
	'[ -p fifo ] && [ ! -e old.sock ]'

W=$(ws)
if setfattr -n user.a -v 1 "$W/src/main.c" 2>/dev/null && setfattr -n user.b -v 2 "$W/docs"; then
	rt_oldtimes "$W"
	rt_case "xattrs set, changed, removed, and on files deleted or replaced" "$W" \
		'setfattr -n user.a -v changed src/main.c && setfattr -x user.b docs &&
		 setfattr -n user.new -v z secret.txt && cp -a src/main.c m2 && sed -i s/foo/FOO/ src/main.c &&
		 rm m2 src/main.c'
else
	skip "no user xattrs here"
fi

W=$(ws)
rt_case "descriptors closed (closerange), dup2()ed over 3..1023, ulimit -n 64" "$W" \
	'"$PY" -c "
import os
os.closerange(0, 4096)
open(\"x\", \"w\").write(\"x\")
open(\"docs/README.md\", \"w\").write(\"after closerange\")
os.unlink(\"secret.txt\")
" && "$PY" -c "
import os
fd = os.open(\"data/blob.bin\", os.O_RDONLY)
for t in range(3, 1024):
    try: os.dup2(fd, t)
    except OSError: pass
open(\"docs/guide.txt\", \"w\").write(\"after dup2 flood\")
os.rename(\"src\", \"src2\")
" && (ulimit -n 64; exec 3>new3; echo hi >&3; rm -f wide/w1; exec 4>>script.sh; echo a >&4; mv wide wide2)' \
	'[ -d src2 ] && [ -d wide2 ] && [ ! -e secret.txt ]'

W=$(ws)
rt_case "threads that write, fork and spawn concurrently" "$W" \
	'"$PY" -c "
import os, subprocess, threading
def w(i):
    for j in range(10):
        with open(\"t%d_%d\" % (i, j % 3), \"w\") as f: f.write(\"x\" * j)
        with open(\"docs/guide.txt\", \"a\") as f: f.write(\"%d %d\\n\" % (i, j))
        if j % 3 == 0:
            subprocess.run([\"sh\", \"-c\", \"rm -f wide/w%d\" % (i * 10 + j + 1)], check=True)
        pid = os.fork()
        if pid == 0:
            open(\"c%d_%d\" % (i, j), \"w\").write(\"c\")
            os._exit(0)
        os.waitpid(pid, 0)
ts = [threading.Thread(target=w, args=(i,)) for i in range(6)]
[t.start() for t in ts]; [t.join() for t in ts]
"' \
	'[ "$(grep -c "^[0-9]" docs/guide.txt)" -eq 60 ]'

if command -v node >/dev/null 2>&1; then
	cat >"$T_TMP/fs.js" <<'EOF'
const fs = require('fs'), fsp = require('fs/promises');
fs.writeFileSync('docs/README.md', 'node rewrote');
fs.appendFileSync('docs/guide.txt', 'node append\n');
fs.renameSync('src/main.c', 'src/main2.c');
fs.rmSync('wide', {recursive: true, force: true});
fs.mkdirSync('n/a/b', {recursive: true});
fs.symlinkSync('target', 'n/sl');
fs.cpSync('deep/level1/level2', 'deep-copy', {recursive: true});
(async () => {
  await fsp.copyFile('data/blob.bin', 'src/util.c');
  await fsp.unlink('hl/a');
  await fsp.truncate('hl/b', 2);
  await fsp.chmod('script.sh', 0o600);
  await fsp.utimes('secret.txt', 1, 2);
  const fh = await fsp.open('data/blob.bin', 'r+');
  await fh.write('ZZZZ', 10);
  await fh.close();
  await Promise.all([...Array(20).keys()].map(i => fsp.writeFile('n/p' + i, 'p' + i)));
  await fsp.rm('deep/level1/level2', {recursive: true});
  await fsp.rmdir('empty');
})();
EOF
	W=$(ws)
	rt_case "node fs (sync and fs/promises)" "$W" \
		'node "$T/fs.js"' \
		'[ -f n/p19 ] && [ ! -e wide ] && [ ! -e empty ]'
else
	skip "node is not installed"
fi

W=$(ws)
(cd "$W" && "$PY" -c "
import sqlite3
c = sqlite3.connect('db.sqlite'); c.execute('create table t(a, b)')
c.executemany('insert into t values(?, ?)', [(i, 'x' * 100) for i in range(2000)]); c.commit()") ||
	diag "sqlite setup failed"
rt_oldtimes "$W"
rt_case "sqlite: insert, update, WAL mode, vacuum, a new database" "$W" \
	'"$PY" -c "
import sqlite3
c = sqlite3.connect(\"db.sqlite\")
c.execute(\"update t set b = \x27y\x27 where a % 3 = 0\"); c.execute(\"delete from t where a < 100\"); c.commit()
c.execute(\"pragma journal_mode=wal\"); c.execute(\"insert into t values(1, 2)\"); c.commit()
c.execute(\"vacuum\"); c.close()
d = sqlite3.connect(\"new.db\"); d.execute(\"create table x(y)\"); d.commit(); d.close()
"' \
	'[ -f new.db ]'

W=$(ws)
# A patch made outside the run: changes util.c, adds new.c, deletes docs/guide.txt.
mkdir -p "$T_TMP/pa" "$T_TMP/pb"
cp -r "$W/src" "$W/docs" "$T_TMP/pa/" && cp -r "$W/src" "$W/docs" "$T_TMP/pb/"
sed -i s/42/43/ "$T_TMP/pb/src/util.c" && echo new >"$T_TMP/pb/src/new.c" && rm "$T_TMP/pb/docs/guide.txt"
(cd "$T_TMP" && diff -ruN pa pb >"$T_TMP/p.diff")
rt_case "tar --overwrite and --recursive-unlink, then patch -p1 (modify, add, delete)" "$W" \
	'tar cf "$T/src.tar" src docs && echo changed > src/main.c && rm docs/README.md &&
	 tar --overwrite -xf "$T/src.tar" && echo changed > src/util.c &&
	 tar --recursive-unlink -xf "$T/src.tar" && patch -s -p1 < "$T/p.diff"' \
	'[ -f src/new.c ] && grep -q 43 src/util.c && [ ! -e docs/guide.txt ] && [ -f docs/README.md ]'

W=$(ws)
rt_case "O_TMPFILE materialised by linkat (AT_EMPTY_PATH, /proc/self/fd), then renamed over" "$W" \
	'"$PY" -c "
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(\"src\", os.O_TMPFILE | os.O_WRONLY, 0o644); os.write(fd, b\"anon\")
assert libc.linkat(-100, b\"/proc/self/fd/%d\" % fd, -100, b\"src/materialised\", 0x400) == 0
fd = os.open(\"docs\", os.O_TMPFILE | os.O_WRONLY, 0o600); os.write(fd, b\"anon2\")
assert libc.linkat(fd, b\"\", -100, b\"docs/viaempty\", 0x1000) == 0, ctypes.get_errno()
fd = os.open(\"data\", os.O_TMPFILE | os.O_RDWR, 0o600); os.write(fd, b\"replacement\")
assert libc.linkat(-100, b\"/proc/self/fd/%d\" % fd, -100, b\"data/tmpname\", 0x400) == 0
os.rename(\"data/tmpname\", \"data/blob.bin\")
"' \
	'[ -f src/materialised ] && [ "$(cat data/blob.bin)" = replacement ]'

# O_CREAT|O_EXCL is recorded without a lookup of the name first (issue 5: a negative
# lookup per file tar extracts), as HOW = excl.  On a name that exists the call fails with
# EEXIST, and a CREATE stands in the journal for a file the run did not make: undo must
# leave it alone.  The failure's RESULT is written at once, even when the process is
# killed right after the call (src/main.c).  A file the call did make, its process killed
# before the (deferred) RESULT, is removed by its birth time.  (A CREATE how=excl with no
# RESULT on an older file: check_undo, undo_excl_without_result.)
W=$(ws)
rt_case "O_CREAT|O_EXCL on existing names (EEXIST), one process killed before its RESULT" "$W" \
	'"$PY" -c "
import os
for p in (\"docs/README.md\", \"src\", \"data/blob.bin\"):
    try:
        os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        raise SystemExit(\"created \" + p)
    except FileExistsError:
        pass
" && "$PY" -c "
import os, signal
try:
    os.open(\"src/main.c\", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
except FileExistsError:
    os.kill(os.getpid(), signal.SIGKILL)
"; "$PY" -c "
import os, signal
os.open(\"docs/made-then-killed\", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
os.kill(os.getpid(), signal.SIGKILL)
"; echo made > new-file' \
	'[ -f new-file ] && [ -f src/main.c ] && [ -f docs/README.md ] && [ -f docs/made-then-killed ]'
bbx-log --records "$RT_J" >"$T_TMP/excl.log" 2>&1
grep -qE " RESULT [^ ]+ $W/docs/README\.md .*err=EEXIST" "$T_TMP/excl.log" &&
	grep -qE " CREATE [^ ]+ $W/src/main\.c .*how=excl" "$T_TMP/excl.log" &&
	grep -qE " RESULT [^ ]+ $W/src/main\.c .*err=EEXIST" "$T_TMP/excl.log" &&
	grep -qE " CREATE [^ ]+ $W/docs/made-then-killed .*how=excl" "$T_TMP/excl.log" &&
	! grep -qE " RESULT [^ ]+ $W/docs/made-then-killed " "$T_TMP/excl.log"
rc=$?
[ $rc -ne 0 ] && rt_showerr "$T_TMP/excl.log"
ok $rc "O_CREAT|O_EXCL: CREATE how=excl; EEXIST's RESULT written at once, even before a kill; none for a create killed after the call"

W=$(ws)
rt_case "posix_spawn file actions: O_TRUNC, O_APPEND and O_CREAT opens in the child" "$W" \
	'"$PY" -c "
import os
fa = [(os.POSIX_SPAWN_OPEN, 1, \"docs/README.md\", os.O_WRONLY | os.O_TRUNC, 0o644),
      (os.POSIX_SPAWN_OPEN, 2, \"docs/guide.txt\", os.O_WRONLY | os.O_APPEND, 0o644)]
pid = os.posix_spawn(\"/bin/sh\", [\"sh\", \"-c\", \"echo out; echo err >&2\"], os.environ, file_actions=fa)
os.waitpid(pid, 0)
fa = [(os.POSIX_SPAWN_OPEN, 1, \"new-out\", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640)]
os.waitpid(os.posix_spawnp(\"echo\", [\"echo\", \"hello\"], os.environ, file_actions=fa), 0)
"' \
	'[ "$(cat docs/README.md)" = out ] && [ -f new-out ]'

W=$(ws)
rt_case "hard links made in the run, then written through (cp -al, ln, ln -f, cp -l, install -m)" "$W" \
	'cp -al src src-hl && echo hacked > src-hl/main.c && echo app >> src-hl/util.c &&
	 ln docs/README.md r2 && "$PY" -c "open(\"r2\", \"r+\").write(\"XX\")" &&
	 ln -f docs/guide.txt hl/a && cp -l secret.txt s2 && echo s >> s2 &&
	 install -m 0444 docs/README.md script.sh && install -D -m 0640 src/util.h inst/x/y.h' \
	'[ "$(cat src/main.c)" = hacked ] && [ hl/a -ef docs/guide.txt ]'
same_inode "$W/hl/a" "$W/hl/b" "hard links made in the run: hl/a and hl/b are one inode again"

W=$(ws)
rt_case "find -delete, find -exec chmod {} +, xargs -0 rm" "$W" \
	'find . -name "w1*" -delete && find . -type f -name "*.c" -exec chmod 600 {} + &&
	 find deep -type l -print0 | xargs -0 rm -f && find . -type d -empty -delete' \
	'[ ! -e wide/w1 ] && [ ! -e empty ] && [ ! -e deep/level1/link1 ]'

W=$(ws)
rt_case "children appending in the background during the run" "$W" \
	'(for i in $(seq 1 30); do echo bg$i >> docs/guide.txt; echo $i > counter; done) &
	 for i in $(seq 1 30); do echo fg$i >> docs/guide.txt; echo $i >> data/one-byte; done; wait' \
	'[ "$(grep -c "^[bf]g" docs/guide.txt)" -eq 60 ]'

W=$(ws)
rt_case "the cwd is removed during the run (absolute paths afterwards)" "$W" \
	'mkdir t && cd t && rmdir "$W/t" && echo x > "$W/docs/README.md" && rm "$W/secret.txt" &&
	 mkdir "$W/nd" && touch rel 2>/dev/null; true' \
	'[ -d nd ] && [ ! -e t ]'

# A relative --journal, a workload that changes directory, closes every descriptor and
# then mutates (the journal is reopened by its path).
W=$(ws)
before=$(rt_snap "$W" before)
(cd "$W/.." && W=$W exec bbx-run --journal "rel-journal.$$" -- sh -c '
	cd "$W/src" && echo x > main.c && cd ../docs && rm guide.txt &&
	"$PY" -c "import os; os.closerange(0, 4096); os.chdir(\"../data\");
open(\"blob.bin\", \"w\").write(\"y\"); os.rename(\"../wide\", \"../wide2\")"') \
	>"$T_TMP/run.out" 2>"$T_TMP/run.err"
expect_rc $? 0 "relative --journal: workload exits 0"
after=$(rt_snap "$W" after)
differ "$before" "$after" "relative --journal: workload changed the tree"
(cd "$W/.." && bbx-undo "rel-journal.$$") >"$T_TMP/undo.out" 2>&1
expect_rc $? 0 "relative --journal: bbx-undo of the relative path exits 0"
undone=$(rt_snap "$W" undone)
same_snap "$before" "$undone" "relative --journal: tree restored byte for byte"
rm -rf "$W/../rel-journal.$$"

# --- user nobody, modes 000 and 500 ---------------------------------------------------
# (src/util.c is rewritten in place and made mode 0 through the descriptor that wrote
# it: that fchmod's META must be kept, so that undo as nobody can make the file writable
# again before it writes the content back; journal/capture.c, BBX_FDID_KEPT.)
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
	NBG=$(id -gn nobody)
	NB="setpriv --reuid=nobody --regid=$NBG --clear-groups"
	chmod 755 "$T_TMP"
	NBD=$(mktemp -d "$T_TMP/nobody.XXXXXX")
	chmod 755 "$NBD"
	W=$NBD/ws
	mkdir "$W" && rt_project "$W"
	chmod 000 "$W/secret.txt"
	mkdir "$W/ro" "$W/nox" && echo r >"$W/ro/f" && echo n >"$W/nox/f"
	chown -R "nobody:$NBG" "$NBD" # a group nobody is in: it may put it back
	chmod 500 "$W/ro" && chmod 000 "$W/nox"
	rt_oldtimes "$W"
	J=$NBD/journal
	before=$(rt_snap "$W" before)
	(cd "$W" && exec $NB env HOME="$NBD" bbx-run --journal "$J" -- sh -c '
		chmod 600 secret.txt && echo x > secret.txt && chmod 0 secret.txt &&
		chmod 700 ro && rm ro/f && echo y > ro/g && chmod 500 ro && chmod 700 nox &&
		mv nox/f nox/g && chmod 0 nox && rm -rf wide && sed -i s/foo/FOO/ src/main.c &&
		{ [ ! -x /usr/bin/python3 ] || /usr/bin/python3 -c "import os
fd = os.open(\"src/util.c\", os.O_WRONLY); os.write(fd, b\"//\"); os.fchmod(fd, 0); os.close(fd)"; } &&
		chmod 0 docs/guide.txt && chmod 0 src') >"$T_TMP/run.out" 2>"$T_TMP/run.err"
	rc=$?
	[ $rc -eq 0 ] || rt_showerr "$T_TMP/run.err"
	expect_rc $rc 0 "user nobody, modes 000/500: workload exits 0"
	after=$(rt_snap "$W" after)
	differ "$before" "$after" "user nobody, modes 000/500: workload changed the tree"
	(exec $NB env HOME="$NBD" bbx-undo "$J") >"$T_TMP/undo.out" 2>&1
	rc=$?
	[ $rc -eq 0 ] || rt_showerr "$T_TMP/undo.out"
	expect_rc $rc 0 "user nobody, modes 000/500: bbx-undo (as nobody) exits 0"
	undone=$(rt_snap "$W" undone)
	same_snap "$before" "$undone" "user nobody, modes 000/500: tree restored byte for byte"
else
	skip "user nobody case needs root and setpriv"
fi

# --- SIGKILL at random points, three times --------------------------------------------
kill_case() {
	local n=$1 delay=$2 W J before after undone rc pid
	W=$(ws)
	J=$(rt_journal)
	before=$(rt_snap "$W" before)
	(cd "$W" && exec setsid bbx-run --journal "$J" -- sh -c '
		i=0
		while :; do
			i=$((i + 1))
			sed -i "s/foo/f$i/" wide/w* docs/guide.txt
			mv deep d2 && cp -r d2/level1/level2 c$i && mv d2 deep && rm -rf c$i
			rm -rf deep/level1/level2/level3; mkdir -p deep/level1/level2/level3
			echo $i > deep/level1/level2/level3/f
			"$PY" -c "import shutil; shutil.copytree(\"src\", \"s$i\"); shutil.rmtree(\"s$i\")"
			echo $i >> docs/README.md; echo $i > data/one-byte; rm -f wide/w$i
		done') >/dev/null 2>&1 &
	pid=$!
	sleep "$delay"
	kill -9 -- "-$pid" 2>/dev/null || kill -9 "$pid"
	wait "$pid" 2>/dev/null
	sleep 0.1
	after=$(rt_snap "$W" after)
	differ "$before" "$after" "SIGKILL #$n after ${delay}s: the run changed the tree"
	rt_undo "$J"
	rc=$?
	[ $rc -eq 0 ] || rt_showerr "$T_TMP/undo.out"
	expect_rc $rc 0 "SIGKILL #$n: bbx-undo exits 0"
	undone=$(rt_snap "$W" undone)
	same_snap "$before" "$undone" "SIGKILL #$n: tree restored byte for byte"
}
for n in 1 2 3; do
	kill_case $n "0.$((RANDOM % 8 + 2))$((RANDOM % 10))"
done

# --- bbx-undo itself killed midway, three times, then run to the end -------------------
W=$(ws)
mkdir "$W/big"
(cd "$W/big" && for d in $(seq 1 15); do mkdir d$d; for f in $(seq 1 200); do echo "$d-$f" >d$d/f$f; done; done)
ln -s d1 "$W/big/link"
mkdir "$W/big/d1/m" && chmod 500 "$W/big/d1/m"
rt_oldtimes "$W"
J=$(rt_journal)
before=$(rt_snap "$W" before)
rt_run "$J" "$W" 'rm -rf big && mkdir big && echo new > big/x'
expect_rc $? 0 "interrupted undo: rm -rf of 3,000 files exits 0"
for n in 1 2 3; do
	bbx-undo "$J" >/dev/null 2>&1 &
	pid=$!
	sleep "0.0$((RANDOM % 9 + 1))"
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
done
rt_undo "$J"
rc=$?
[ $rc -eq 0 ] || rt_showerr "$T_TMP/undo.out"
expect_rc $rc 0 "interrupted undo: the last bbx-undo exits 0"
undone=$(rt_snap "$W" undone)
same_snap "$before" "$undone" "interrupted undo: tree restored byte for byte"

# Killed at one instant above (CI, session 19's submission): while bbx-undo made its own
# journal directory, DIR/undo, after objects/ and state but before the journal file.  The
# next bbx-undo then refused the non-empty DIR/undo ("Directory not empty") and undid
# nothing.  That instant, made by hand (a copy of the run's own state file is one that
# bbx_state_create finished): bbx-undo must clear the half-made directory and go on.
W=$(ws)
J=$(rt_journal)
before=$(rt_snap "$W" before)
rt_run "$J" "$W" 'rm -rf deep && echo new > docs/README.md'
expect_rc $? 0 "undo killed while making DIR/undo: workload exits 0"
mkdir -p "$J/undo/objects" && cp "$J/state" "$J/undo/state"
rt_undo "$J"
rc=$?
[ $rc -eq 0 ] || rt_showerr "$T_TMP/undo.out"
expect_rc $rc 0 "undo killed while making DIR/undo: the next bbx-undo exits 0"
undone=$(rt_snap "$W" undone)
same_snap "$before" "$undone" "undo killed while making DIR/undo: tree restored byte for byte"


# link(2) is recorded without looking the new name up first (CREATE how=excl,
# shim/names.c, LINK_BODY): a link onto an existing name fails by itself, its RESULT
# says so, and undo must leave that name alone; the link that succeeded is removed.
# Its RESULT carries the source's inode, taken before the call (no lstat of the new
# name after it).
W=$(ws)
rt_case "ln onto an existing name fails, undo leaves that name alone" "$W" \
	'ln src/main.c main.hl && ! ln src/util.c src/main.c 2>/dev/null && echo more >>main.hl' \
	'[ main.hl -ef src/main.c ]'
"$PY" "$BBX_SRCDIR/tests/e2e/jdecode.py" "$RT_J/journal" >"$T_TMP/ln.json"
"$PY" - "$T_TMP/ln.json" "$W" <<'PY'
import json, os, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ws = sys.argv[2]
res = {r["ref"]: r for r in recs if r["type"] == "RESULT"}
ok = {c["path"]: res.get(c["seq"]) for c in recs if c["type"] == "CREATE" and c.get("kind") == 8}
good, bad = ok.get(ws + "/main.hl"), ok.get(ws + "/src/main.c")
sys.exit(0 if good and good["ret"] == 0 and good.get("ino") == os.lstat(ws + "/src/main.c").st_ino
         and bad and bad["ret"] == -1 and bad["err"] == 17 and "ino" not in bad else 1)
PY
ok $? "ln: the link's RESULT names the source's inode; the failed one's says EEXIST"


# Known limitation (libbbxshim(7), LIMITATIONS): a directory renamed by a process
# outside the run between two calls of the run.  Each call checks by identity that it
# acts in the directory proved, and trusts its proved name while the run's namespace
# generation holds (journal/path.c, cwd_kept): the second unlink is recorded under the
# old name, and undo fails there (exit 1, ENOENT) instead of restoring into the new one.
# Kept as a test so that a change to this trade-off is seen.  The first call is a chmod,
# which keeps no object, so the second call's hard link makes the run's first shard of
# objects/: its retry once refused the unlink with ENOENT (it named the entry by the
# stale absolute words, capture.c, bbx_cap_remove).  (A removal first would make that
# shard, which raises the generation, capture.c make_shard, and so, by chance, has the
# second call prove the name again.)
W=$(new_ws)
mkdir -p "$W/d" && echo a >"$W/d/a.txt" && echo b >"$W/d/b.txt"
mkfifo "$T_TMP/or.go" "$T_TMP/or.done"
(read -r _ <"$T_TMP/or.go"; mv "$W/d" "$W/e"; echo moved >"$T_TMP/or.done") &
J=$(rt_journal)
(cd "$W" && bbx-run --quiet --journal "$J" -- "$PY" -c "
import os, sys
os.chdir('d')
os.chmod('a.txt', 0o600)
open(sys.argv[1], 'w').write('go\\n')
open(sys.argv[2]).read()
os.unlink('b.txt')
" "$T_TMP/or.go" "$T_TMP/or.done")
expect_rc $? 0 "outside rename between two calls: the run exits 0"
wait
"$PY" "$BBX_SRCDIR/tests/e2e/jdecode.py" "$J/journal" | grep -c "\"path\": \"$W/d/b.txt\"" >"$T_TMP/or.n"
[ "$(cat "$T_TMP/or.n")" -ge 1 ]
ok $? "outside rename between two calls: the second unlink is recorded under the old name"
rt_undo "$J"
rc=$?
[ $rc -eq 1 ] && grep -q "restoring $W/d/b.txt: No such file or directory" "$T_TMP/undo.out" &&
	[ ! -e "$W/e/b.txt" ]
ok $? "outside rename between two calls: undo fails on the old name (exit $rc) and writes nothing into the new one"

rt_done
