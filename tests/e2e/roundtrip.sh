# SPDX-License-Identifier: MIT
# tests/e2e/roundtrip.sh - round-trip helpers for the t-rt-*.sh and t-undo-*.sh tests
# (sourced after lib.sh, bash).
#
# A round trip: build a realistic workspace, snapshot it, run a real workload under
# `bbx-run --journal J -- sh -c SCRIPT`, require that the tree changed (a case that
# cannot fail proves nothing), run `bbx-undo J` and require the snapshot of the start
# (DESIGN.md invariant 4, backward replay restores; invariant 3, nothing lost).
#
# The plan is printed at the end (rt_done), so a script that dies midway is reported
# as a missing plan rather than a silent pass.

# The real interpreter, not a pyenv shim script: faster, and the workloads under the
# shim run only the program we mean to test.
PY=${PYTHON3:-$(python3 -c 'import sys; print(sys.executable)')}
PYTHON3=$PY
export PYTHON3 PY

# Temporary files of gcc, sed, python's tempfile and git stay inside the test's
# directory; git sees no user or system configuration.
export TMPDIR="$T_TMP/tmp"
export HOME="$T_TMP/home"
mkdir -p "$TMPDIR" "$HOME"
export GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME='bbx test' GIT_AUTHOR_EMAIL='bbx@example.invalid'
export GIT_COMMITTER_NAME='bbx test' GIT_COMMITTER_EMAIL='bbx@example.invalid'
export GIT_AUTHOR_DATE='2021-03-04T05:06:07Z' GIT_COMMITTER_DATE='2021-03-04T05:06:07Z'
# No background auto-gc that could outlive the run; a fixed default branch name.
export GIT_CONFIG_COUNT=3
export GIT_CONFIG_KEY_0=gc.auto GIT_CONFIG_VALUE_0=0
export GIT_CONFIG_KEY_1=init.defaultBranch GIT_CONFIG_VALUE_1=main
export GIT_CONFIG_KEY_2=advice.detachedHead GIT_CONFIG_VALUE_2=false
export LC_ALL=C

# rt_journal: print a fresh, not yet existing journal directory path (outside every
# workspace, so the snapshots never see it).
rt_journal() { mktemp -u "$T_TMP/journal.XXXXXX"; }

# rt_snap WS NAME: snapshot WS into $T_TMP/snap.NAME and print that file name.
rt_snap() { snap "$1" >"$T_TMP/snap.$2"; echo "$T_TMP/snap.$2"; }

# differ A B DESC: the two snapshot files differ (the workload really did something).
differ() {
	if cmp -s "$1" "$2"; then diag "snapshots $1 and $2 are identical"; ok 1 "$3"; else ok 0 "$3"; fi
}

# rt_showerr FILE: copy a captured stderr into the TAP log as comments.
rt_showerr() { [ -s "$1" ] && head -20 "$1" | sed 's/^/# /' >&2; return 0; }

# rt_run J WS SCRIPT [BBX-RUN-OPTION...]: run `sh -c SCRIPT` under bbx-run in WS with
# $W=WS; stdout and stderr go to $T_TMP/run.out and run.err.  Returns the run's status.
rt_run() {
	local j=$1 ws=$2 script=$3
	shift 3
	(cd "$ws" && W=$ws T=$T_TMP exec bbx-run "$@" --journal "$j" -- sh -c "$script") \
		>"$T_TMP/run.out" 2>"$T_TMP/run.err"
}

# rt_undo ARG...: bbx-undo ARG..., output in $T_TMP/undo.out; returns its status.
rt_undo() { bbx-undo "$@" >"$T_TMP/undo.out" 2>&1; }

# expect_rc GOT WANT DESC
expect_rc() {
	if [ "$1" -eq "$2" ]; then ok 0 "$3"; else diag "exit status $1, expected $2"; ok 1 "$3"; fi
}

# rt_case DESC WS SCRIPT [CHECK...]: the full round trip, one TAP case each:
#   the workload exits 0; each CHECK (a shell command run in WS right after the
#   workload) holds; the tree changed; bbx-undo exits 0; the tree is restored byte for
#   byte.  Leaves the journal in RT_J and the post-run snapshot in $T_TMP/snap.after.
rt_case() {
	local desc=$1 ws=$2 script=$3 check rc before after undone
	shift 3
	RT_J=$(rt_journal)
	before=$(rt_snap "$ws" before)
	rt_run "$RT_J" "$ws" "$script"
	rc=$?
	[ $rc -eq 0 ] || rt_showerr "$T_TMP/run.err"
	expect_rc $rc 0 "$desc: workload exits 0 under bbx-run"
	for check in "$@"; do
		(cd "$ws" && eval "$check")
		ok $? "$desc: after the run, $(printf '%s' "$check" | tr -s '\n\t#' '  ')"
	done
	after=$(rt_snap "$ws" after)
	differ "$before" "$after" "$desc: workload changed the tree"
	rt_undo "$RT_J"
	rc=$?
	[ $rc -eq 0 ] || rt_showerr "$T_TMP/undo.out"
	expect_rc $rc 0 "$desc: bbx-undo exits 0"
	undone=$(rt_snap "$ws" undone)
	T_TODO=${RT_TODO:-} same_snap "$before" "$undone" "$desc: tree restored byte for byte"
}

# rt_project DIR: a realistic workspace - sources, docs, binary data, a deep tree, a
# wide directory, an empty directory, symlinks (to a file, to a directory, dangling),
# a hard-linked pair, odd modes, and old, distinct timestamps (so that restored mtimes
# are really checked: a re-created file would carry "now").
rt_project() {
	local d=$1 i p
	mkdir -p "$d/src" "$d/docs" "$d/data" "$d/wide" "$d/empty" "$d/hl"
	cat >"$d/src/main.c" <<-'EOF'
	#include <stdio.h>
	#include "util.h"
	int main(void) { printf("foo %d\n", util_answer()); return 0; }
	EOF
	cat >"$d/src/util.c" <<-'EOF'
	#include "util.h"
	int util_answer(void) { return 42; } /* foo */
	EOF
	printf '#ifndef UTIL_H\n#define UTIL_H\nint util_answer(void);\n#endif\n' >"$d/src/util.h"
	printf '# Project\n\nfoo bar baz\n' >"$d/docs/README.md"
	for i in $(seq 1 40); do echo "line $i of the guide: foo"; done >"$d/docs/guide.txt"
	head -c 65536 /dev/urandom >"$d/data/blob.bin"
	printf 'x' >"$d/data/one-byte"
	: >"$d/data/empty-file"
	p=$d/deep
	for i in $(seq 1 15); do
		p=$p/level$i
		mkdir -p "$p"
		echo "file at depth $i" >"$p/f$i.txt"
		ln -s "f$i.txt" "$p/link$i"
	done
	for i in $(seq 1 100); do echo "wide file $i foo" >"$d/wide/w$i"; done
	printf '#!/bin/sh\necho hi\n' >"$d/script.sh"
	chmod 755 "$d/script.sh"
	echo 'top secret' >"$d/secret.txt"
	chmod 600 "$d/secret.txt"
	chmod 2750 "$d/data"
	ln -s docs/README.md "$d/current"
	ln -s src "$d/srcdir"
	ln -s does/not/exist "$d/dangling"
	echo 'shared content' >"$d/hl/a"
	ln "$d/hl/a" "$d/hl/b"
	# Extended attributes (snapshot.py compares them) on files the workloads rewrite,
	# truncate, remove or rename, and on a directory.
	"$PY" - "$d" <<-'EOF' || diag "no user xattrs in $d: not checked there"
	import os, sys
	for p, v in (("docs/guide.txt", b"guide"), ("src/util.c", b"\x00bin\xff"),
	             ("wide/w1", b"w1"), ("deep/level1/level2/f2.txt", b"deep"),
	             ("data/blob.bin", b"blob"), ("secret.txt", b"s"), ("docs", b"dir"),
	             ("hl/a", b"shared")):
	    os.setxattr(os.path.join(sys.argv[1], p), "user.bbx", v)
	EOF
	rt_oldtimes "$d"
}

# rt_oldtimes DIR: give every path under DIR (symlinks too) an old timestamp, distinct
# per path, with nanoseconds.
rt_oldtimes() {
	"$PY" - "$1" <<-'EOF'
	import os, sys
	paths = []
	for d, dirs, files in os.walk(sys.argv[1]):
	    paths += [os.path.join(d, n) for n in dirs + files]
	paths.sort()
	# children first, so setting a directory's times is not undone by its entries
	for i, p in enumerate(reversed(paths)):
	    t = 1500000000_123456789 + i * 1_000_000_007
	    os.utime(p, ns=(t, t), follow_symlinks=False)
	t = 1400000000_987654321
	os.utime(sys.argv[1], ns=(t, t))
	EOF
}

# rt_done: print the plan (the number of cases run) and exit 1 if any failed.
rt_done() { plan "$T_N"; finish; }

# same_inode A B DESC: A and B are one inode (hard links), not two equal files.
same_inode() {
	if [ "$1" -ef "$2" ]; then ok 0 "$3"; else
		diag "$(stat -c '%n inode %i links %h' "$1" "$2" 2>&1)"; ok 1 "$3"; fi
}
