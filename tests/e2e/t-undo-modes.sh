#!/bin/bash
# SPDX-License-Identifier: MIT
# t-undo-modes.sh - the ways bbx-undo and bbx-run --transaction are used around a round
# trip: undo twice (the second is a no-op), --dry-run changes nothing, a failed
# transaction rolls itself back, undo of the undo brings back the post-run tree
# (invariant 3: undo journals what it overwrites), and conflicts with later changes
# made outside the shim (exit 3, the later version kept beside as PATH.bbx-conflict[.N]).
. "${BBX_SRCDIR:?is set by make check (tests/local.mk)}/tests/e2e/lib.sh" || exit 99
. "$BBX_SRCDIR/tests/e2e/roundtrip.sh"

ws() { local d; d=$(new_ws); rt_project "$d"; echo "$d"; }

DAMAGE='rm -rf deep && echo overwritten > docs/README.md && echo more >> docs/guide.txt &&
	mv wide wide2 && chmod 600 script.sh && ln -sf src current && mkdir made && echo n > made/n'

# --- undo twice -----------------------------------------------------------------------
W=$(ws)
rt_case "undo twice" "$W" "$DAMAGE"
J=$RT_J
cp "$T_TMP/snap.after" "$T_TMP/snap.post-run"
rt_undo "$J"
rc=$?
[ $rc -eq 0 ] || rt_showerr "$T_TMP/undo.out"
expect_rc $rc 0 "undo twice: the second bbx-undo exits 0"
again=$(rt_snap "$W" again)
same_snap "$T_TMP/snap.before" "$again" "undo twice: the second bbx-undo changed nothing"
# A no-op must not have clobbered the first undo's own journal.
rt_undo "$J/undo"
rc=$?
[ $rc -eq 0 ] || rt_showerr "$T_TMP/undo.out"
expect_rc $rc 0 "undo twice: bbx-undo J/undo still exits 0"
redone=$(rt_snap "$W" redone)
same_snap "$T_TMP/snap.post-run" "$redone" "undo twice: J/undo still brings back the post-run tree"

# --- --dry-run ------------------------------------------------------------------------
W=$(ws)
J=$(rt_journal)
before=$(rt_snap "$W" before)
rt_run "$J" "$W" "$DAMAGE"
expect_rc $? 0 "dry-run: workload exits 0 under bbx-run"
after=$(rt_snap "$W" after)
differ "$before" "$after" "dry-run: workload changed the tree"
rt_undo --dry-run "$J"
rc=$?
[ $rc -eq 0 ] || rt_showerr "$T_TMP/undo.out"
expect_rc $rc 0 "dry-run: bbx-undo --dry-run exits 0"
dry=$(rt_snap "$W" dry)
same_snap "$after" "$dry" "dry-run: bbx-undo --dry-run changed nothing"
[ ! -e "$J/undo" ] || [ -z "$(ls -A "$J/undo")" ] || [ ! -s "$J/undo/journal" ]
ok $? "dry-run: no undo journal with records was written"
rt_undo "$J"
expect_rc $? 0 "dry-run: a real bbx-undo afterwards exits 0"
undone=$(rt_snap "$W" undone)
same_snap "$before" "$undone" "dry-run: the real bbx-undo afterwards restores the tree"

# --- --transaction --------------------------------------------------------------------
W=$(ws)
J=$(rt_journal)
before=$(rt_snap "$W" before)
rt_run "$J" "$W" "$DAMAGE"' && [ ! -e deep ] && echo damaged; exit 1' --transaction
expect_rc $? 1 "transaction: bbx-run --transaction exits with the command's status 1"
grep -qx damaged "$T_TMP/run.out"
ok $? "transaction: the command really did its damage before failing"
tx=$(rt_snap "$W" tx)
same_snap "$before" "$tx" "transaction: a failed transaction leaves the tree identical"

W=$(ws)
J=$(rt_journal)
before=$(rt_snap "$W" before)
rt_run "$J" "$W" "$DAMAGE"' && kill -TERM $$' --transaction
expect_rc $? 143 "transaction: a command killed by SIGTERM makes bbx-run exit 143"
tx=$(rt_snap "$W" tx)
same_snap "$before" "$tx" "transaction: a command killed by a signal is rolled back"

W=$(ws)
before=$(rt_snap "$W" before)
(cd "$W" && bbx-run --transaction -- sh -c "$DAMAGE; exit 1") >"$T_TMP/run.out" 2>"$T_TMP/run.err"
expect_rc $? 1 "transaction: without --journal (default state dir) exits 1"
tx=$(rt_snap "$W" tx)
same_snap "$before" "$tx" "transaction: without --journal the tree is identical"

W=$(ws)
J=$(rt_journal)
before=$(rt_snap "$W" before)
rt_run "$J" "$W" "$DAMAGE" --transaction
expect_rc $? 0 "transaction: a successful transaction exits 0"
tx=$(rt_snap "$W" tx)
differ "$before" "$tx" "transaction: a successful transaction keeps its changes"
rt_undo "$J"
expect_rc $? 0 "transaction: the kept transaction can still be undone"
undone=$(rt_snap "$W" undone)
same_snap "$before" "$undone" "transaction: undo of the kept transaction restores the tree"

# --- undo of the undo -----------------------------------------------------------------
W=$(ws)
rt_case "undo of the undo" "$W" "$DAMAGE"'; "$PY" -B -c "open(\"data/blob.bin\", \"r+b\").write(b\"PY\")"'
J=$RT_J
[ -d "$J/undo" ]
ok $? "undo of the undo: bbx-undo left its own journal in J/undo"
rt_undo "$J/undo"
rc=$?
[ $rc -eq 0 ] || rt_showerr "$T_TMP/undo.out"
expect_rc $rc 0 "undo of the undo: bbx-undo J/undo exits 0"
redone=$(rt_snap "$W" redone)
same_snap "$T_TMP/snap.after" "$redone" "undo of the undo: the post-run tree is back"

# --- conflicts ------------------------------------------------------------------------
# The run rewrites docs/README.md and src/main.c, deletes docs/guide.txt, appends to
# data/one-byte and rewrites src/util.c.  Then, outside the shim, README.md and main.c
# are changed again, guide.txt is re-created and one-byte rewritten; util.c is left
# alone (no conflict: plainly restored).  src/main.c.bbx-conflict already existed in
# the workspace, so undo must pick another name for that conflict copy.
# Not compared byte for byte: the conflict copies themselves, the mtime of the
# directories undo added them to (they did gain an entry), and data/one-byte (an
# append is recorded as a length only, so its original bytes may be gone: see below).
W=$(ws)
echo 'pre-existing conflict file' >"$W/src/main.c.bbx-conflict"
rt_oldtimes "$W"
J=$(rt_journal)
before=$(rt_snap "$W" before)
rt_run "$J" "$W" 'echo run-version > docs/README.md && rm docs/guide.txt && echo run > src/main.c &&
	echo run >> data/one-byte && echo run > src/util.c'
expect_rc $? 0 "conflict: workload exits 0 under bbx-run"
after=$(rt_snap "$W" after)
differ "$before" "$after" "conflict: workload changed the tree"
echo 'later version' >"$W/docs/README.md"
echo 'recreated later' >"$W/docs/guide.txt"
echo 'later main' >"$W/src/main.c"
echo 'later one-byte' >"$W/data/one-byte"
rt_undo "$J"
rc=$?
expect_rc $rc 3 "conflict: bbx-undo exits 3"
[ $rc -eq 3 ] || rt_showerr "$T_TMP/undo.out"
undone=$(rt_snap "$W" undone)
# cfnew: paths of conflict copies present after undo but not before.
cfnew() {
	awk -F'\t' 'NR == FNR { seen[$1] = 1; next }
		$1 ~ /\.bbx-conflict(\.[0-9]+)?$/ && !($1 in seen) { print $1 }' "$before" "$undone"
}
cfnew >"$T_TMP/cf.new"
# comparable SNAP: SNAP without the new conflict copies, without data/one-byte, and
# with the mtime of each directory that gained a conflict copy blanked.
comparable() {
	awk -F'\t' -v OFS='\t' 'NR == FNR {
			seen[$1] = 1; d = $1; if (sub(/\/[^\/]*$/, "", d) == 0) d = "."; cfdir[d] = 1; next }
		($1 in seen) || $1 == "data/one-byte" { next }
		$2 == 4 && ($1 in cfdir) { $7 = "-" }
		{ print }' "$T_TMP/cf.new" "$1"
}
comparable "$before" >"$T_TMP/before.cmp"
comparable "$undone" >"$T_TMP/undone.cmp"
same_snap "$T_TMP/before.cmp" "$T_TMP/undone.cmp" \
	"conflict: every other path restored to its original, byte for byte"
# conflict_copy PATH CONTENT DESC: exactly one new PATH.bbx-conflict[.N], holding CONTENT.
conflict_copy() {
	local found
	found=$(grep -E "^$1\\.bbx-conflict(\\.[0-9]+)?\$" "$T_TMP/cf.new")
	if [ "$(echo "$found" | grep -c .)" -eq 1 ] && [ "$(cat "$W/$found")" = "$2" ]; then ok 0 "$3"; else
		diag "new conflict copies of $1: ${found:-none}"; ok 1 "$3"; fi
}
conflict_copy docs/README.md 'later version' "conflict: the later README.md is kept as README.md.bbx-conflict"
conflict_copy docs/guide.txt 'recreated later' "conflict: the re-created guide.txt is kept beside it"
conflict_copy src/main.c 'later main' "conflict: the later main.c is kept as main.c.bbx-conflict.N"
grep -qx 'src/main.c.bbx-conflict' "$T_TMP/cf.new"
[ $? -ne 0 ] && [ "$(cat "$W/src/main.c.bbx-conflict")" = 'pre-existing conflict file' ]
ok $? "conflict: the pre-existing main.c.bbx-conflict is untouched"
# data/one-byte: the run only appended (a SIZE record, no pre-image), then it was
# rewritten outside.  Undo cannot know its original bytes; whatever it does, it must
# not leave a mix - the result is the original or the later version, whole.
c=$(cat "$W/data/one-byte")
[ "$c" = x ] || [ "$c" = 'later one-byte' ]
ok $? "conflict: an appended-then-rewritten file is the original or the later version, not '$c'"

# --- a large seal ---------------------------------------------------------------------
# The seal states the paths of a directory relative to it, opened once and kept among
# the last 16 directories (a depth-first walk comes back to a directory after its
# subdirectory: here 50 files, a subdirectory of 5, 50 files more), and a path alone in
# its directory as it is; a directory found missing makes the paths below its highest
# missing ancestor absent without a stat each (journal/seal.c): every path the run
# touched still gets one FINAL holding its own state at the end of the run, in the
# journal's order (the removed trees' paths absent, and g2's present: g is gone, not
# every name that starts with it), and a later change to one of them is still a
# conflict.
W=$(new_ws)
J=$(rt_journal)
rt_run "$J" "$W" 'for d in $(seq 30); do mkdir d$d; for f in $(seq 50); do echo $d.$f >d$d/f$f; done
	mkdir d$d/s; for f in $(seq 5); do echo s$f >d$d/s/g$f; done
	for f in $(seq 51 100); do echo $d.$f >d$d/f$f; done; done; rm -r d3
	mkdir -p g/a/b/c && echo x >g/a/b/c/x && echo y >g/a/b/c/y && rm -r g
	mkdir g2 && echo z >g2/z && echo w >g2/w'
expect_rc $? 0 "large seal: 3,152 files made in 61 directories, two trees removed again"
"$PY" "$BBX_SRCDIR/tests/e2e/jdecode.py" "$J/journal" >"$T_TMP/seal.json"
"$PY" - "$T_TMP/seal.json" <<'EOF'
import json, os, stat, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
created = [r["path"] for r in recs if r["type"] == "CREATE"]
finals = [r for r in recs if r["type"] == "FINAL"]
paths = [r["path"] for r in finals]
order, seen = [], set()
for p in created:
    if p not in seen:
        seen.add(p)
        order.append(p)
bad = []
if len(order) != 3219 or paths != order:
    bad.append("FINAL paths: %d, created: %d, same order: %s" % (len(paths), len(order), paths == order))
for r in finals:
    try:
        st = os.lstat(r["path"])
    except FileNotFoundError:
        if r.get("kind") != 0 or ("/d3/" not in r["path"] + "/" and "/g/" not in r["path"] + "/"):
            bad.append("absent %s: kind %s" % (r["path"], r.get("kind")))
        continue
    s = r.get("stat")
    if not s or s[5] != st.st_ino or s[4] != st.st_dev or s[12] != int(st.st_ctime) or \
            r.get("kind") != (2 if stat.S_ISDIR(st.st_mode) else 1):
        bad.append("%s: FINAL %s, lstat ino %d" % (r["path"], s and s[5], st.st_ino))
print("\n".join(bad[:5]))
sys.exit(1 if bad else 0)
EOF
ok $? "large seal: one FINAL per path made, in order, each with that path's own kind, inode and ctime (absent: the removed directory's)"
sleep 1.1 # the later change's ctime is past the FINAL's second
echo later >"$W/d30/f99"
rt_undo "$J"
expect_rc $? 3 "large seal: bbx-undo exits 3 (a file of the last directory changed after the run)"
# d30 itself is then kept as d30.bbx-conflict (it holds an entry the run did not make).
[ "$(cat "$W/d30.bbx-conflict/f99.bbx-conflict" 2>/dev/null)" = later ] && [ "$(find "$W" | wc -l)" -eq 3 ]
ok $? "large seal: the later d30/f99 is kept as its conflict copy; everything else the run made is gone"

rt_done
