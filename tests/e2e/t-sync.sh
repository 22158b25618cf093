#!/bin/bash
# SPDX-License-Identifier: MIT
# t-sync.sh - [journal] sync = off | group | always (bbx-policy(5), journal-format.md
# 7.1): the same workload (sequential changes of every kind, then four processes
# writing at once) under each mode must leave a journal that verifies and an undo
# that restores the tree byte for byte; and, counted by strace -f -c, the syncs must
# really happen: none under off, one fdatasync per record written before a mutation
# (plus the seal's) under always, between one and that many under group, and the
# objects fsynced under both.
. "${BBX_SRCDIR:?is set by make check (tests/local.mk)}/tests/e2e/lib.sh" || exit 99
. "$BBX_SRCDIR/tests/e2e/roundtrip.sh"

WORK='echo overwritten > docs/README.md && echo more >> docs/guide.txt && rm -rf deep &&
mv wide wide2 && chmod 600 script.sh && mkdir made && echo n > made/n &&
for i in 1 2 3 4; do (for k in 1 2 3 4 5 6 7 8 9 10; do echo $i.$k > made/f$i.$k; echo x >> docs/guide.txt; done) & done; wait &&
mv made/f1.1 made/g && rm made/f2.1'

have_strace=0
strace -f -c -o /dev/null true 2>/dev/null && have_strace=1

# count FILE SYSCALL: calls of SYSCALL in an strace -c summary (0 when absent).
count() { awk -v s="$2" '$NF == s { print $4; f = 1 } END { if (!f) print 0 }' "$1"; }

declare -A FDS
for mode in off always group; do
	W=$(new_ws)
	rt_project "$W"
	printf '[paths]\nwrite = ${WORKSPACE}\n[journal]\nsync = %s\n' "$mode" >"$T_TMP/$mode.ini"
	J=$(rt_journal)
	before=$(rt_snap "$W" "before.$mode")
	if [ $have_strace = 1 ]; then
		(cd "$W" && exec strace -f -c -e trace=fsync,fdatasync -o "$T_TMP/strace.$mode" \
			bbx-run -q --policy "$T_TMP/$mode.ini" --journal "$J" -- sh -c "$WORK") \
			>"$T_TMP/run.out" 2>"$T_TMP/run.err"
	else
		(cd "$W" && exec bbx-run -q --policy "$T_TMP/$mode.ini" --journal "$J" -- sh -c "$WORK") \
			>"$T_TMP/run.out" 2>"$T_TMP/run.err"
	fi
	rc=$?
	[ $rc -eq 0 ] || rt_showerr "$T_TMP/run.err"
	expect_rc $rc 0 "sync=$mode: the workload exits 0"
	"$PY" -c '
import struct, sys
print(struct.unpack_from("<I", open(sys.argv[1], "rb").read(32), 28)[0])' "$J/state" >"$T_TMP/word"
	[ "$(cat "$T_TMP/word")" = "$(case $mode in off) echo 0 ;; group) echo 1 ;; always) echo 2 ;; esac)" ]
	ok $? "sync=$mode: bbx-run put the mode in the state file (word at offset 28 = $(cat "$T_TMP/word"))"
	after=$(rt_snap "$W" "after.$mode")
	differ "$before" "$after" "sync=$mode: the workload changed the tree"
	bbx-log --verify "$J" >"$T_TMP/verify.out" 2>&1
	rc=$?
	[ $rc -eq 0 ] || rt_showerr "$T_TMP/verify.out"
	expect_rc $rc 0 "sync=$mode: the journal verifies (checksums, chain, seal, objects)"
	# write-ahead records: one fdatasync each under always (journal-format.md 7.1)
	"$PY" "$BBX_SRCDIR/tests/e2e/jdecode.py" "$J/journal" | "$PY" -c '
import json, sys
print(sum(json.loads(l)["type"] in ("CREATE", "PRESERVE", "SIZE", "RMDIR", "RENAME", "META") for l in sys.stdin))' >"$T_TMP/nwa"
	NWA=$(cat "$T_TMP/nwa")
	rt_undo "$J"
	rc=$?
	[ $rc -eq 0 ] || rt_showerr "$T_TMP/undo.out"
	expect_rc $rc 0 "sync=$mode: bbx-undo exits 0"
	undone=$(rt_snap "$W" "undone.$mode")
	same_snap "$before" "$undone" "sync=$mode: bbx-undo restores the tree byte for byte"
	if [ $have_strace = 0 ]; then
		skip "strace cannot trace here: sync counts not checked"
		continue
	fi
	fds=$(count "$T_TMP/strace.$mode" fdatasync)
	fs=$(count "$T_TMP/strace.$mode" fsync)
	FDS[$mode]=$fds
	case $mode in
	off)
		# not even the compiled policy's install: it is as durable as the journal
		[ "$fds" -eq 0 ] && [ "$fs" -eq 0 ]
		ok $? "sync=off: no fdatasync, no fsync (fdatasync=$fds fsync=$fs)"
		;;
	always)
		[ "$fds" -eq $((NWA + 1)) ] && [ "$fs" -ge 6 ]
		ok $? "sync=always: one fdatasync per write-ahead record ($NWA) plus the seal's, objects fsynced (fdatasync=$fds fsync=$fs)"
		;;
	group)
		[ "$fds" -ge 1 ] && [ "$fds" -le $((NWA + 1)) ] && [ "$fs" -ge 6 ]
		ok $? "sync=group: between 1 and $((NWA + 1)) fdatasyncs (shared across processes), objects fsynced (fdatasync=$fds fsync=$fs)"
		;;
	esac
done

plan "$T_N"
finish
