#!/bin/bash
# SPDX-License-Identifier: MIT
# t-crash.sh - a run killed at a chosen instant is undone to the start state (DESIGN.md
# invariant 7), the instant chosen among every point where the shim changes something.
#
# The shim built with crash points (shim/crash.c, libbbxshim-crash.so) counts, across
# all the run's processes, each real function it calls and each durable write of the
# journal, before and after; at point N it sends SIGKILL to the whole run (bbx-run
# included: it leads its process group), or, at every other point, to the process that
# reached it alone (BBX_CRASH_SELF=1: the rest of the run goes on, finds the journal
# lock its holder died with, and bbx-run seals the run).  For each workload a first run
# counts its points (M), then the run is repeated, killed at points spread over 1..M;
# after each, bbx-log --verify must accept the killed run's journal (sealed, when bbx-run
# survived), no wait for the journal lock may have timed out, bbx-undo must exit 0 and
# the tree must equal the start's snapshot byte for byte.
#
# Which points: BBX_CRASH_POINTS per workload (default 80; 40 for git and for make),
# evenly spaced from an offset drawn from BBX_CRASH_SEED (default: random, printed, so a
# failure can be replayed); BBX_CRASH_POINTS=all runs every point (~11,000 here, at
# 0.15-0.3 s a point).  A failing
# point's journal and undo output are kept in $BBX_CRASH_KEEP if set.  BBX_CRASH_MODE:
# alt (default: the run and one process in turn), run, or one.  BBX_CRASH_ONLY=WORDS:
# only the workloads whose name holds WORDS.
. "${BBX_SRCDIR:?is set by make check (tests/local.mk)}/tests/e2e/lib.sh" || exit 99
. "$BBX_SRCDIR/tests/e2e/roundtrip.sh"

CRASHLIB=$BBX_BUILDDIR/shim/.libs/libbbxshim-crash.so
if [ ! -f "$CRASHLIB" ]; then
	diag "$CRASHLIB not built (make check builds it)"
	ok 1 "the shim with crash points is built"
	rt_done
fi
SEED=${BBX_CRASH_SEED:-$RANDOM}
diag "BBX_CRASH_SEED=$SEED"
WANT=${BBX_CRASH_POINTS:-80}
CTR=$T_TMP/crash-counter

# crashrun WS J AT SCRIPT: SCRIPT under bbx-run with the crash-point shim, killed at
# point AT (0: never), in its own process group (so the kill reaches the run and nothing
# else), and waits until no process of it is left (zombies do not count: they cannot
# write).  Returns bbx-run's exit status.
# With SELF=1 in the environment, the process that reaches the point dies alone.
crashrun() {
	local pid rc n=0
	head -c 8 /dev/zero >"$CTR"
	(cd "$1" && T=$T_TMP BBX_SHIM=$CRASHLIB BBX_CRASH_COUNTER=$CTR BBX_CRASH_AT=$3 \
		BBX_CRASH_SELF=${SELF:-0} exec setsid bbx-run --journal "$2" -- sh -c "$4") \
		>"$T_TMP/run.out" 2>"$T_TMP/run.err" &
	pid=$!
	wait $pid
	rc=$?
	while ps -e -o pgid=,stat= | awk -v g="$pid" '$1 == g && $2 !~ /^Z/' | grep -q . &&
		[ $n -lt 100 ]; do
		sleep 0.02
		n=$((n + 1))
	done
	return $rc
}
points() { od -An -tu8 "$CTR" | tr -d ' '; }

# sweep NAME TEMPLATE SCRIPT [POINTS [MODE]]: the cases above for one workload (POINTS
# and MODE default to BBX_CRASH_POINTS and BBX_CRASH_MODE).  TEMPLATE is copied (cp -a)
# into a fresh workspace for every run.
sweep() {
	local name=$1 tmpl=$2 script=$3 want=${4:-$WANT} mode=${5:-${BBX_CRASH_MODE:-alt}}
	local before ws j m n at rc urc bad=0 reached=0 i self who what
	case $name in *"${BBX_CRASH_ONLY:-}"*) ;; *) return ;; esac
	before=$(rt_snap "$tmpl" "$name.tmpl")
	ws=$(new_ws) && rmdir "$ws" && cp -a "$tmpl" "$ws"
	cmp -s "$before" "$(rt_snap "$ws" "$name.copy")"
	ok $? "$name: a copy of the start tree snapshots as the start tree"
	j=$(rt_journal)
	crashrun "$ws" "$j" 0 "$script"
	rc=$?
	m=$(points)
	[ $rc -eq 0 ] || rt_showerr "$T_TMP/run.err"
	[ $rc -eq 0 ] && [ "${m:-0}" -gt 20 ]
	ok $? "$name: the workload runs to the end under the crash-point shim ($m points)"
	rm -rf "$ws" "$j"
	[ "${m:-0}" -gt 20 ] || return
	if [ "$want" = all ]; then n=$m; else n=$((want < m ? want : m)); fi
	for i in $(seq 0 $((n - 1))); do
		# evenly spaced, shifted by the seed within one spacing
		at=$((1 + (i * m + (SEED % 1000) * m / 1000) / n))
		[ "$at" -le "$m" ] || at=$m
		ws=$(new_ws) && rmdir "$ws" && cp -a "$tmpl" "$ws"
		j=$(rt_journal)
		case $mode in
		run) self=0 ;;
		one) self=1 ;;
		*) self=$((i % 2)) ;;
		esac
		SELF=$self crashrun "$ws" "$j" "$at" "$script"
		rc=$?
		# reached: the whole run died there, or (alone) the counter went past it
		if [ $self -eq 0 ]; then [ $rc -eq 137 ]; else [ "$(points)" -ge "$at" ]; fi &&
			reached=$((reached + 1))
		urc=0
		bbx-log --verify "$j" >"$T_TMP/verify.out" 2>&1 || urc=1
		# One process killed: bbx-run (never preloaded) outlives it and seals the run,
		# whatever lock the dead process held.
		[ $urc -eq 0 ] && [ $self -eq 1 ] && grep -q "not sealed" "$T_TMP/verify.out" && urc=3
		# No process waited out the journal lock (10 s, then refused): a dead holder's
		# lock is recovered, whoever held it (shim/vfork.c).
		[ $urc -eq 0 ] && grep -q "timed out" "$T_TMP/run.err" && urc=4
		[ $urc -eq 0 ] && { rt_undo "$j" || urc=2; }
		if [ $urc -ne 0 ] || ! cmp -s "$before" "$(rt_snap "$ws" undone)"; then
			bad=$((bad + 1))
			who="the run"
			[ $self -eq 1 ] && who="one process"
			what="the tree differs after undo"
			[ $urc -eq 1 ] && what="the journal does not verify"
			[ $urc -eq 2 ] && what="bbx-undo failed"
			[ $urc -eq 3 ] && what="bbx-run did not seal the run"
			[ $urc -eq 4 ] && what="a wait for the journal lock timed out"
			diag "$name: $who killed at point $at of $m (run exit $rc): $what"
			[ $urc -eq 1 ] && rt_showerr "$T_TMP/verify.out"
			[ $urc -eq 2 ] && rt_showerr "$T_TMP/undo.out"
			[ $urc -ge 3 ] && rt_showerr "$T_TMP/run.err"
			[ $urc -eq 0 ] && diff "$before" "$T_TMP/snap.undone" | head -10 | sed 's/^/# /' >&2
			if [ -n "${BBX_CRASH_KEEP:-}" ]; then
				mkdir -p "$BBX_CRASH_KEEP/$name.$at.$self" &&
					cp -a "$j" "$T_TMP/undo.out" "$T_TMP/snap.undone" "$T_TMP/run.err" \
						"$BBX_CRASH_KEEP/$name.$at.$self/"
			fi
		fi
		rm -rf "$ws" "$j"
	done
	case $mode in
	run) who="the whole run" ;;
	one) who="the process there alone" ;;
	*) who="the whole run, or the process there alone, in turn" ;;
	esac
	[ $bad -eq 0 ]
	ok $? "$name: killed at $n points of $m ($who), every journal verifies and undo restores the start ($bad failed)"
	# Most points are reached: a run that outlives its point was not killed at all.
	[ $reached -ge $((n * 9 / 10)) ]
	ok $? "$name: $reached of the $n runs reached their point"
}

# --- 1. the shell loop of t-rt-procs, two rounds --------------------------------------
# Overwrites (O_TRUNC pre-images), rm -rf of a subtree, mkdir -p, rename of a
# directory, appends: sh's builtins and coreutils.
T1=$T_TMP/tmpl1
mkdir "$T1" && rt_project "$T1"
sweep "shell loop" "$T1" '
	i=0
	while [ $i -lt 2 ]; do
		i=$((i + 1))
		for f in wide/w1 wide/w2 wide/w3 wide/w4 wide/w5; do echo "round $i" > "$f"; done
		rm -rf deep/level1/level2/level3
		mkdir -p gen/$i && echo $i > gen/$i/f && mv gen/$i gen/done$i && rm -f wide/w$i
		echo "$i" >> docs/guide.txt
		echo "$i" > docs/README.md
	done'

# --- 2. real programs: tar over the tree, sed -i, cp -a, ln, chmod, touch, truncate,
# python's os.replace and shutil.rmtree, mv and rm -rf of a directory ------------------
T2=$T_TMP/tmpl2
mkdir "$T2" && rt_project "$T2"
mkdir -p "$T_TMP/over/src" "$T_TMP/over/newdir"
echo 'int main(void) { return 1; }' >"$T_TMP/over/src/main.c"
echo 'fresh' >"$T_TMP/over/newdir/fresh.txt"
tar -C "$T_TMP/over" -cf "$T_TMP/over.tar" src newdir
sweep "real programs" "$T2" '
	tar -xf "$T/over.tar"
	sed -i "s/foo/bar/g" docs/guide.txt src/util.c
	cp -a docs docs.bak
	ln -f hl/a hl/c
	chmod 640 secret.txt
	touch -d @1000000000 data/one-byte
	truncate -s 100 data/blob.bin
	"$PY" -c "import os, shutil; os.replace(\"docs/README.md\", \"README.new\"); shutil.rmtree(\"deep/level1/level2\")"
	mv wide wide.old && mkdir wide && echo new > wide/w1
	rm -rf wide.old'

# --- 3. git, and four writers at once ------------------------------------------------
# git's lock files, renamed index and loose objects; then xargs -P 4 appending to 40
# files concurrently (the counter's order between them is the scheduler's).  40 points.
T4=$T_TMP/tmpl4
mkdir "$T4" && rt_project "$T4"
sweep "git and xargs -P 4" "$T4" '
	git init -q
	git add -A
	git commit -qm one
	sed -i "s/foo/bar/" src/util.c docs/guide.txt
	git commit -qam two
	git checkout -q HEAD~1 -- src/util.c
	ls wide | head -40 | xargs -P 4 -I{} sh -c "echo x >> wide/{}"' "${BBX_CRASH_POINTS:-40}"

# --- 4. make and gcc: objects, a static library, a link, a rebuild, make clean -------
# make's children (cc, cc1, as, collect2, ld, ar) create objects beside their sources
# and temporaries in $TMPDIR, ld replaces the program, ar builds an archive in place;
# the rebuild overwrites what the first build made, and clean removes it.  40 points.
T5=$T_TMP/tmpl5
mkdir "$T5" && rt_project "$T5"
mkdir "$T5/cproj"
printf '#define N %s\nint a(void);\nint b(void);\n' 1 >"$T5/cproj/h.h"
printf '#include <stdio.h>\n#include "h.h"\nint main(void) { printf("%%d\\n", a() + b()); return 0; }\n' \
	>"$T5/cproj/main.c"
printf '#include "h.h"\nint a(void) { return N; }\n' >"$T5/cproj/a.c"
printf '#include "h.h"\nint b(void) { return N + 1; }\n' >"$T5/cproj/b.c"
printf 'prog: main.o a.o libb.a\n\t$(CC) -o $@ main.o a.o libb.a\nlibb.a: b.o\n\tar rcs $@ b.o\n%%.o: %%.c h.h\n\t$(CC) -O0 -c -o $@ $<\nclean:\n\trm -f *.o libb.a\n' \
	>"$T5/cproj/Makefile"
echo 'stale' >"$T5/cproj/prog"
sweep "make and gcc" "$T5" '
	make -s -C cproj -j2
	./cproj/prog > cproj/out1
	sed -i "s/N + 1/N + 2/" cproj/b.c
	make -s -C cproj -j2
	./cproj/prog > cproj/out2
	make -s -C cproj clean' "${BBX_CRASH_POINTS:-40}"

# --- 5. a vfork child killed at each of its points ------------------------------------
# dash starts /bin/true in a vfork child, which runs the shim's exec wrapper on the
# shell's memory.  Killed there, alone, it must not take the shell's journaling with it
# (shim/vfork.c): the shell's next overwrite and symlink are undone like any other.
# Every point of this short run, the killed process alone.
T3=$T_TMP/tmpl3
mkdir "$T3" && rt_project "$T3"
sweep "vfork child" "$T3" '
	/bin/true
	echo after > docs/README.md
	ln -s docs newlink' all one

rt_done
