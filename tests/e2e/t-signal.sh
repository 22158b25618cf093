#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A signal handler that mutates while the program is blocked inside a wrapped call
# (open of a FIFO for writing, with no reader) is journaled, and undo restores what it destroyed.
. "${BBX_SRCDIR:?is set by make check (tests/local.mk)}/tests/e2e/lib.sh" || exit 99
plan 8
W=$(new_ws)
mkfifo "$W/fifo"
echo precious >"$W/victim"
before=$(mktemp "$T_TMP/snap.XXXXXX"); snap "$W" >"$before"
J="$T_TMP/j"
bbx-run --journal "$J" -- "$BBX_BUILDDIR/tests/progs/sighandler" "$W/fifo" "$W/victim"
ok $? "the handler's unlink ran during the blocked open"
bbx-log --records "$J" | grep -qE "^[0-9]+ [^ ]+ [0-9]+ PRESERVE unlink $W/victim kind=file how=link"
ok $? "the handler's unlink is journaled with its pre-image"
bbx-undo -q "$J" >/dev/null
ok $? "bbx-undo exits 0"
after=$(mktemp "$T_TMP/snap.XXXXXX"); snap "$W" >"$after"
same_snap "$before" "$after" "the victim is back, byte for byte"

# SIGTERM to bbx-run reaches the command (tools/bbx-run.c, forward): the command ends by
# it, bbx-run exits 128+15 and still seals the journal with the command's EXIT.  bbx-run
# starts the command from a vfork child and holds SIGTERM and SIGHUP blocked until the
# child's pid is known, so a signal during the child's set-up is forwarded, not lost.
J2="$T_TMP/j2"
(cd "$W" && exec bbx-run --quiet --journal "$J2" -- sleep 31.25) &
p=$!
for _ in $(seq 200); do
	bbx-log --records "$J2" 2>/dev/null | grep -q ' EXEC .*"sleep" "31.25"' && break
	sleep 0.05
done
kill -TERM $p
wait $p
rc=$?
[ $rc -eq 143 ]; ok $? "SIGTERM to bbx-run ends the command and bbx-run exits 143 (got $rc)"
bbx-log --records "$J2" | grep -qE "EXIT bbx-run - pid=[0-9]+ status=killed SIGTERM"
ok $? "the journal records the command's end by SIGTERM"
bbx-log --records "$J2" | tail -1 | grep -q " SEAL "
ok $? "and is sealed after it"
# ... and the command starts with the signal mask bbx-run was given, nothing held.
want=$(grep '^SigBlk' /proc/self/status)
got=$(cd "$W" && bbx-run --quiet --journal "$T_TMP/j3" -- grep '^SigBlk' /proc/self/status)
[ -n "$got" ] && [ "$got" = "$want" ]; ok $? "the command's blocked signals are bbx-run's caller's ($got)"
finish
