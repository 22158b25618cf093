#!/bin/bash
# SPDX-License-Identifier: MIT
# t-captured.sh - the captured set at scale (journal-format.md 9.2): a run that makes and
# removes 280,000 temporary files (more than the 262,144 slots a version 7 state file
# began with, and three segments of a version 8 one: 65,536, then 131,072 and 262,144
# slots, each filled to three quarters before the next is added; in a tmpfs,
# which never reuses an inode number, each leaves a forgotten slot behind) still knows
# every one as its own when it removes it: no pre-image is kept for any (before version
# 7 of the state file, the last 17,856 were kept by hard links in objects/), the state
# file has grown, a file that was there before the run is still kept when removed after
# them, and bbx-undo brings the workspace back byte for byte.
. "${BBX_SRCDIR:?is set by make check (tests/local.mk)}/tests/e2e/lib.sh" || exit 99
plan 8

N=280000
# A tmpfs where there is one (the worst case: new inode numbers only), else TMPDIR.
SHM=$(mktemp -d /dev/shm/bbx-captured.XXXXXX 2>/dev/null) || SHM=
trap 'rm -rf "$T_TMP" ${SHM:+"$SHM"}' EXIT
W=${SHM:-$(new_ws)}
diag "workspace $W ($(stat -f -c %T "$W"))"
printf 'kept before the run\n' >"$W/before"
mkdir "$W/tmp"
snap "$W" >"$T_TMP/snap.before"
J="$T_TMP/j"
printf '[paths]\nwrite = %s\n' "$W" >"$T_TMP/p.ini"
bbx-run -q --policy "$T_TMP/p.ini" --journal "$J" -- \
	sh -c '"$1" "$2/tmp" "$3" && rm "$2/before"' sh "$BBX_BUILDDIR/tests/progs/tmpchurn" "$W" "$N" \
	2>"$T_TMP/err"
ok $? "$N temporary files made and removed under bbx-run"

bbx-log --records "$J" >"$T_TMP/records" 2>&1
creates=$(grep -c ' CREATE open ' "$T_TMP/records")
none=$(grep ' PRESERVE unlink' "$T_TMP/records" | grep -c 'how=none')
kept=$(grep ' PRESERVE unlink' "$T_TMP/records" | grep -vc 'how=none')
diag "CREATE $creates, PRESERVE how=none $none, kept $kept"
[ "$creates" -eq "$N" ]
ok $? "one CREATE per file ($creates)"
[ "$none" -eq "$N" ]
ok $? "every removal found the file the run's own: no pre-image ($none of $N)"
[ "$kept" -eq 1 ] && grep ' PRESERVE unlink' "$T_TMP/records" | grep -v 'how=none' | grep -q "$W/before"
ok $? "the file from before the run is still kept when removed after them"
# What bbx-log --stats counts as preserved (links, copies, reflinks, packed copies): the
# one file from before the run, nothing else.
bbx-log --stats "$J" >"$T_TMP/stats" 2>&1
kept=$(awk '/^preserved:/ {on = 1; next} on && /^ +[0-9]+ +(link|copy|reflink|packed) / {n += $1} /^[a-z]/ {on = 0} END {print n + 0}' "$T_TMP/stats")
[ "$kept" -eq 1 ]
ok $? "bbx-log --stats: one pre-image kept in all ($kept)"
size=$(stat -c %s "$J/state")
# the first segment's size from the file's own header (nslots, u32 at 16; 9)
nslots=$(od -An -tu4 -j16 -N4 "$J/state" | tr -d ' ')
first=$((4096 + 16 * ${nslots:-0}))
[ "${nslots:-0}" -gt 0 ] && [ "$size" -gt "$first" ]
ok $? "the state file grew past its first segment ($size bytes, the first $first)"

bbx-undo "$J" >"$T_TMP/undo.out" 2>&1
ok $? "bbx-undo"
snap "$W" >"$T_TMP/snap.after"
same_snap "$T_TMP/snap.before" "$T_TMP/snap.after" "the workspace is back byte for byte"
finish
