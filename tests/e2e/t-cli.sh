#!/bin/bash
# SPDX-License-Identifier: MIT
# t-cli.sh - every tool's command line: --help (usage on stdout, exit 0), --version (the
# package version configure set, and the journal format that a run's meta really
# begins with), an unknown option (exit 2, usage on stderr, nothing on stdout), and the
# dispatcher's errors (an unknown verb or option: exit 2 and a message naming it).
. "${BBX_SRCDIR:?is set by make check (tests/local.mk)}/tests/e2e/lib.sh" || exit 99
TOOLS="bbx bbx-run bbx-undo bbx-log bbx-diff bbx-policy"
plan 20

# The version configure.ac declares (AC_INIT's second argument).
want=$(sed -n 's/^AC_INIT(\[bbx\], \[\([^]]*\)\].*/\1/p' "$BBX_SRCDIR/configure.ac")
[ -n "$want" ]; ok $? "configure.ac declares a version ($want)"

# The journal format a real run writes: the first line of its meta.
W=$(new_ws)
(cd "$W" && bbx-run -q --journal "$T_TMP/j" -- touch f) && fmt=$(head -1 "$T_TMP/j/meta")
[[ "$fmt" == format=bbx-journal\ * ]]; ok $? "a run's meta begins with its format ($fmt)"

for t in $TOOLS; do
	out=$("$t" --version 2>"$T_TMP/err"); rc=$?
	l1=$(sed -n 1p <<<"$out"); l2=$(sed -n 2p <<<"$out")
	[ $rc -eq 0 ] && [ "$l1" = "$t (bbx) $want" ] && [ "$l2" = "journal format: ${fmt#format=}" ] &&
		[ ! -s "$T_TMP/err" ]
	ok $? "$t --version: exit 0, '$t (bbx) $want' and the format runs write"
done

for t in $TOOLS; do
	"$t" --help >"$T_TMP/out" 2>"$T_TMP/err"; rc=$?
	[ $rc -eq 0 ] && grep -q "^usage: $t" "$T_TMP/out" && grep -q -- '--version' "$T_TMP/out" &&
		[ ! -s "$T_TMP/err" ]
	ok $? "$t --help: exit 0, usage (naming --version) on stdout only"
done

# An unknown option: exit 2, the usage on stderr, nothing on stdout.  (bbx-policy
# takes a verb first; its unknown option is given after one.)
for t in bbx bbx-run bbx-undo bbx-log bbx-diff; do
	"$t" --no-such-option >"$T_TMP/out" 2>"$T_TMP/err"; rc=$?
	[ $rc -eq 2 ] && [ ! -s "$T_TMP/out" ] && grep -q "usage: $t" "$T_TMP/err"
	ok $? "$t --no-such-option: exit 2, usage on stderr, nothing on stdout"
done

# The dispatcher: a verb that does not exist is named, and nothing is run.
bbx frobnicate >"$T_TMP/out" 2>"$T_TMP/err"; rc=$?
[ $rc -eq 2 ] && [ ! -s "$T_TMP/out" ] && grep -q "'frobnicate' is not a bbx verb" "$T_TMP/err"
ok $? "bbx frobnicate: exit 2, 'frobnicate' is not a bbx verb"
finish
