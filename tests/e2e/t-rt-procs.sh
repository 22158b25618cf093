#!/bin/bash
# SPDX-License-Identifier: MIT
# t-rt-procs.sh - round trips across process trees: children started with a cleaned
# environment (env -i) are still journaled (DESIGN.md Coverage, across exec); a dozen
# processes mutating concurrently (invariant 4, "even when many processes wrote
# concurrently"); and a run killed with SIGKILL midway (invariant 7, a torn tail is the
# end of the log, and undo still restores the start state).
. "${BBX_SRCDIR:?is set by make check (tests/local.mk)}/tests/e2e/lib.sh" || exit 99
. "$BBX_SRCDIR/tests/e2e/roundtrip.sh"

ws() { local d; d=$(new_ws); rt_project "$d"; echo "$d"; }

# --- env -i ---------------------------------------------------------------------------
# The child, grandchild and great-grandchild all run with an empty environment; what they
# do must still be undone.  The great-grandchild's environment must also look empty to
# it (transparency: the shim's own variables are hidden from environ).
W=$(ws)
rt_case "env -i children and grandchildren" "$W" \
	'env -i /bin/sh -c "/bin/rm -f docs/README.md; echo child > src/main.c;
	   /usr/bin/env -i /bin/sh -c \"/bin/mv wide wide2; echo grandchild >> docs/guide.txt;
	     /bin/rm -rf deep/level1/level2; /usr/bin/env -i /usr/bin/env > envdump\""' \
	'[ -d wide2 ] && [ ! -e docs/README.md ] && [ ! -e deep/level1/level2 ] && grep -q grandchild docs/guide.txt' \
	'[ -f envdump ] && [ ! -s envdump ]'

# --- a dozen concurrent writers -------------------------------------------------------
W=$(ws)
mkdir "$W/jobs"
for i in $(seq 1 120); do echo "job $i" >"$W/jobs/j$i"; done
rt_oldtimes "$W"
rt_case "12 processes writing concurrently (xargs -P 12)" "$W" \
	'seq 1 120 | xargs -P 12 -n 10 sh -c '\''
	   for n; do
	     case $((n % 4)) in
	     0) rm -f jobs/j$n ;;
	     1) echo "rewritten $n" > jobs/j$n ;;
	     2) mkdir -p out/d$((n % 7)) && mv jobs/j$n out/d$((n % 7))/ ;;
	     3) sed -i "s/job/JOB/" jobs/j$n && echo "new $n" > jobs/new$n && chmod 600 jobs/new$n ;;
	     esac
	     echo "$n" >> shared.log
	     echo "$n" >> docs/guide.txt
	     touch -d @$n wide/w$(( (n % 100) + 1 ))
	   done'\'' sh' \
	'[ "$(wc -l < shared.log)" -eq 120 ] && [ "$(ls jobs | wc -l)" -eq 90 ] && [ "$(ls out/d* | grep -c ^j)" -eq 30 ]'

# --- SIGKILL midway -------------------------------------------------------------------
# The run loops forever overwriting, deleting, creating and renaming; once it has made
# progress the whole process group (bbx-run included) is killed with SIGKILL.
W=$(ws)
J=$(rt_journal)
before=$(rt_snap "$W" before)
(cd "$W" && T=$T_TMP exec setsid bbx-run --journal "$J" -- sh -c '
	i=0
	while :; do
		i=$((i + 1))
		for f in wide/w*; do echo "round $i" > "$f"; done
		rm -rf deep/level1/level2/level3
		mkdir -p gen/$i && echo $i > gen/$i/f && mv gen/$i gen/done$i && rm -f wide/w$i
		echo "$i" >> docs/guide.txt
		echo "$i" > docs/README.md
		[ $i -eq 3 ] && : > "$T/progress"
	done') >"$T_TMP/run.out" 2>"$T_TMP/run.err" &
pid=$!
n=0
while [ ! -e "$T_TMP/progress" ] && [ $n -lt 200 ] && kill -0 $pid 2>/dev/null; do
	sleep 0.05; n=$((n + 1))
done
[ -e "$T_TMP/progress" ]
ok $? "SIGKILL: the run made progress before the kill"
sleep 0.2
pgid=$(ps -o pgid= -p $pid | tr -d ' ')
if [ "$pgid" = "$pid" ]; then
	kill -9 -- "-$pgid"
else
	diag "bbx-run ($pid) is not its own process group leader (pgid '$pgid'); killing it alone"
	kill -9 $pid
fi
wait $pid 2>/dev/null
expect_rc $? 137 "SIGKILL: bbx-run died of SIGKILL"
# Zombies not yet reaped by init do not count: they cannot write.
alive() { ps -e -o pgid=,stat= | awk -v g="$1" '$1 == g && $2 !~ /^Z/' | grep -q .; }
n=0
while alive "$pid" && [ $n -lt 50 ]; do sleep 0.02; n=$((n + 1)); done
! alive "$pid"
ok $? "SIGKILL: no process of the run survived"
after=$(rt_snap "$W" after)
differ "$before" "$after" "SIGKILL: the killed run changed the tree"
rt_undo "$J"
rc=$?
[ $rc -eq 0 ] || rt_showerr "$T_TMP/undo.out"
expect_rc $rc 0 "SIGKILL: bbx-undo of the killed run exits 0"
undone=$(rt_snap "$W" undone)
if ! cmp -s "$before" "$undone"; then
	# A rare failure here (once in session 49, its diff lost) needs the journal's end and
	# undo's account to be understood: both go to the log with the diff below.
	diag "the killed run's last records and bbx-undo's output:"
	bbx-log --records "$J" 2>&1 | tail -40 | sed 's/^/# /' >&2
	rt_showerr "$T_TMP/undo.out"
fi
same_snap "$before" "$undone" "SIGKILL: tree restored to the start state"

rt_done
