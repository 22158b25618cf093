#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A signal handler that mutates while the program is blocked inside a wrapped call
# (open of a FIFO for writing, with no reader) is journaled, and undo restores what it destroyed.
. "$BBX_SRCDIR/tests/e2e/lib.sh"
plan 4
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
finish
