#!/bin/bash
# SPDX-License-Identifier: MIT
# t-diff.sh - bbx-diff against known edits made by real programs under bbx-run:
# created, modified (exact hunks, from a link, a copy and an append pre-image),
# deleted, renamed, chmod, binary; --name-only, --stat, path filters, errors.
. "${BBX_SRCDIR:?is set by make check (tests/local.mk)}/tests/e2e/lib.sh" || exit 99
plan 17

W=$(new_ws)
J="$T_TMP/j"
printf 'l1\nl2\nl3\n' >"$W/mod.txt"
printf 'gone\n' >"$W/del.txt"
printf 'r\n' >"$W/ren.txt"
printf 'base\n' >"$W/app.txt"
printf 'old\n' >"$W/cw.txt"
printf '#!/bin/sh\n' >"$W/exe.sh"
printf 'a\0b' >"$W/bin.dat"
printf 'same\n' >"$W/keep.txt"
chmod 644 "$W"/*
(cd "$W" && bbx-run --journal "$J" -- bash -c '
	sed -i s/l2/L2/ mod.txt
	rm del.txt
	mv ren.txt renamed.txt
	echo more >> app.txt
	echo rewritten > cw.txt
	chmod 755 exe.sh
	printf "\0\1\2x" > bin.dat
	echo new > new.txt
	mkdir nd
	echo tmp > tmpf; rm tmpf
	cat keep.txt > /dev/null') >"$T_TMP/run.out" 2>&1
ok $? "the edits ran under bbx-run"

bbx-diff "$J" >"$T_TMP/d" 2>"$T_TMP/d.err"
ok $? "bbx-diff exits 0"
sed -n '1,/^$/p' "$T_TMP/d" >"$T_TMP/status"
cat >"$T_TMP/status.want" <<EOS
M $W/app.txt
M $W/bin.dat
M $W/cw.txt
D $W/del.txt
M $W/exe.sh
M $W/mod.txt
A $W/nd
A $W/new.txt
R $W/ren.txt -> $W/renamed.txt

EOS
cmp -s "$T_TMP/status" "$T_TMP/status.want" || diff "$T_TMP/status.want" "$T_TMP/status" | sed 's/^/# /' >&2
ok $? "status: every change, nothing for the temporary or the file only read"

# hunk FILE: the lines of the diff block of FILE, from --- to the next 'diff --bbx'.
hunk() { awk -v f="$1" '/^diff --bbx /{on = index($0, "b" f) > 0; next} on' "$T_TMP/d"; }
printf -- '--- a%s\n+++ b%s\n@@ -1,3 +1,3 @@\n l1\n-l2\n+L2\n l3\n' "$W/mod.txt" "$W/mod.txt" >"$T_TMP/want"
hunk "$W/mod.txt" | cmp -s - "$T_TMP/want"
ok $? "sed -i: the exact hunk, from the pre-image kept by link"
printf -- '--- a%s\n+++ b%s\n@@ -1 +1,2 @@\n base\n+more\n' "$W/app.txt" "$W/app.txt" >"$T_TMP/want"
hunk "$W/app.txt" | cmp -s - "$T_TMP/want"
ok $? "append: the pre-image is the first SIZE bytes"
printf -- '--- a%s\n+++ b%s\n@@ -1 +1 @@\n-old\n+rewritten\n' "$W/cw.txt" "$W/cw.txt" >"$T_TMP/want"
hunk "$W/cw.txt" | cmp -s - "$T_TMP/want"
ok $? "truncating write: the pre-image kept by copy"
printf -- 'deleted file mode 100644\n--- a%s\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n' "$W/del.txt" >"$T_TMP/want"
hunk "$W/del.txt" | cmp -s - "$T_TMP/want"
ok $? "deleted: mode and the removed lines"
printf -- 'old mode 100644\nnew mode 100755\n' >"$T_TMP/want"
hunk "$W/exe.sh" | cmp -s - "$T_TMP/want"
ok $? "chmod: old and new mode, no content diff"
printf -- 'rename from %s\nrename to %s\n' "$W/ren.txt" "$W/renamed.txt" >"$T_TMP/want"
hunk "$W/renamed.txt" | cmp -s - "$T_TMP/want"
ok $? "renamed: from and to, no content diff"
printf -- 'new file mode 100644\n--- /dev/null\n+++ b%s\n@@ -0,0 +1 @@\n+new\n' "$W/new.txt" >"$T_TMP/want"
hunk "$W/new.txt" | cmp -s - "$T_TMP/want"
ok $? "created: mode and the added lines"
[ "$(hunk "$W/bin.dat")" = "Binary files a$W/bin.dat and b$W/bin.dat differ" ]
ok $? "binary: 'Binary files ... differ'"

bbx diff --name-only "$J" >"$T_TMP/names"
sed -n 's/^[AMD] //; s/^R .* -> //; /^$/q; p' "$T_TMP/status.want" | sort >"$T_TMP/names.want"
cmp -s "$T_TMP/names" "$T_TMP/names.want"
ok $? "bbx diff --name-only (through the dispatcher): the paths"
if command -v patch >/dev/null; then
	hunk "$W/mod.txt" >"$T_TMP/mod.patch"
	(cd / && patch -s -R -p1 <"$T_TMP/mod.patch") && [ "$(cat "$W/mod.txt")" = "$(printf 'l1\nl2\nl3')" ]
	ok $? "the hunk applies: patch -R -p1 from / gives the original back"
	MODLEFT=0
else
	MODLEFT=1
	skip "patch(1) not installed"
fi

bbx-diff --stat "$J" >"$T_TMP/stat"
grep -qxF " $W/app.txt | 1 +1 -0" "$T_TMP/stat" && grep -qxF " $W/bin.dat | Bin" "$T_TMP/stat" &&
	tail -1 "$T_TMP/stat" | grep -qx " $((8 + MODLEFT)) paths changed, $((3 + MODLEFT)) insertions(+), $((2 + MODLEFT)) deletions(-)"
ok $? "--stat: per path and totals (mod.txt, reverted by patch, is no change any more)"
[ "$(cd "$W" && bbx-diff --name-only "$J" -- cw.txt)" = "$W/cw.txt" ] &&
	[ "$(bbx-diff --name-only "$J" -- "$W/ne*" "$W/del.txt" | tr '\n' ' ')" = "$W/del.txt $W/new.txt " ]
ok $? "path filters: a relative path, a glob and an absolute path"
# Whole-file hunks (created, deleted) are written without running diff: the same text.
W2=$(new_ws)
printf 'a\nb\nc\n' >"$W2/d3"
printf 'no newline' >"$W2/dn"
(cd "$W2" && bbx-run --journal "$T_TMP/j2" -- sh -c 'printf "x\ny\n" > c2; printf z > cn; rm d3 dn') >/dev/null 2>&1
bbx-diff "$T_TMP/j2" >"$T_TMP/d"
m=0
for f in c2 cn; do
	diff -u --label /dev/null --label "b$W2/$f" /dev/null "$W2/$f" >"$T_TMP/want"
	hunk "$W2/$f" | tail -n +2 | cmp -s - "$T_TMP/want" || { diag "$f differs"; m=1; }
done
printf 'a\nb\nc\n' >"$T_TMP/d3"; printf 'no newline' >"$T_TMP/dn"
for f in d3 dn; do
	diff -u --label "a$W2/$f" --label /dev/null "$T_TMP/$f" /dev/null >"$T_TMP/want"
	hunk "$W2/$f" | tail -n +2 | cmp -s - "$T_TMP/want" || { diag "$f differs"; m=1; }
done
ok $m "created and deleted files: the hunks diff(1) itself writes (also without a last newline)"

bbx-diff --bogus >/dev/null 2>&1; a=$?
bbx-diff "$T_TMP/nope" >/dev/null 2>"$T_TMP/e"; b=$?
[ $a -eq 2 ] && [ $b -eq 1 ] && grep -q "not a journal directory" "$T_TMP/e"
ok $? "a bad option exits 2, a missing journal exits 1 with a message"
finish
