#!/bin/bash
# SPDX-License-Identifier: MIT
# t-preserve.sh - [journal] max_preserve and over_max_preserve (bbx-policy(5)) with real
# calls from python3: a mutation that would need a copy of a file over the limit is
#   refuse: refused with EFBIG (errno checked in the program), the file byte-identical,
#           a DENY record naming the max_preserve line, one explanation on stderr;
#   allow:  let through uncopied, a PRESERVE how=lost record (with the rule, the size),
#           bbx-log shows it, --verify notes it, bbx-undo lists the path as lost, exits
#           4 and restores everything else byte for byte;
#   audit:  copied anyway (DENY decision audit), restored exactly.
# What needs no copy (append, removal by hard link, files under the limit) is never
# limited, and a large copy within the limit carries its size and duration (bbx-log
# says why the call took long).
. "${BBX_SRCDIR:?is set by make check (tests/local.mk)}/tests/e2e/lib.sh" || exit 99
. "$BBX_SRCDIR/tests/e2e/roundtrip.sh"

# Another filesystem than the journal's (tmpfs): removal there cannot keep a hard link.
SHM=$(mktemp -d /dev/shm/bbx-preserve.XXXXXX) || SHM=
trap 'rm -rf "$T_TMP" ${SHM:+"$SHM"}' EXIT
cross_fs() { [ -n "$SHM" ] && [ "$(stat -c %d "$SHM")" != "$(stat -c %d "$T_TMP")" ]; }

pol() { printf '%b' "$2" >"$T_TMP/$1.ini"; echo "$T_TMP/$1.ini"; }
# Without /dev/shm the cross-device cases are skipped and the policy names no second root
# (an empty "write =" would be a malformed policy); a comment keeps the line numbers the
# expected rule locations below count on.
ROOT2="; no second filesystem"
[ -n "$SHM" ] && ROOT2="write = $SHM"
BASE="[paths]\nwrite = \${WORKSPACE}\n$ROOT2\n[journal]\nmax_preserve = 1M\n"
REFUSE=$(pol refuse "$BASE")                                        # max_preserve: line 5
ALLOW=$(pol allow "$BASE""over_max_preserve = allow\n")             # over_max_preserve: line 6
AUDIT=$(pol audit "[general]\nmode = audit\n$BASE")                 # max_preserve: line 7
UNLIM=$(pol unlim "[paths]\nwrite = \${WORKSPACE}\n[journal]\nmax_preserve = 1G\n")

# mkfile PATH KIB: a file of random bytes.
mkfile() { head -c $(($2 * 1024)) /dev/urandom >"$1"; }
# A fresh workspace: big (2 MiB), big2 (3 MiB), small (512 KiB), limit (exactly 1 MiB,
# which is not over the limit), log (2 MiB, appended to), gone (2 MiB, removed).
setup() {
	W=$(new_ws)
	mkfile "$W/big" 2048; mkfile "$W/big2" 3072; mkfile "$W/small" 512; mkfile "$W/limit" 1024
	mkfile "$W/log" 2048; mkfile "$W/gone" 2048
	touch -d '2020-01-02 03:04:05' "$W"/*
	rm -rf "$T_TMP/orig" && mkdir "$T_TMP/orig" && cp -p "$W"/* "$T_TMP/orig/"
	if [ -n "$SHM" ]; then rm -f "$SHM"/*; mkfile "$SHM/far" 2048; cp "$SHM/far" "$T_TMP/orig.far"; fi
}
N=0
# run POLICY PYTHON-CODE: the code runs in $W under bbx-run; it prints one line per call:
# NAME ok | NAME ERRNO-NAME.  Output in $T_TMP/out, stderr in $T_TMP/err, journal $J.
run() {
	N=$((N + 1))
	J="$T_TMP/j.$N"
	(cd "$W" && SHM=$SHM bbx-run -q --policy "$1" --journal "$J" -- "$PY" -c "
import errno, os, sys
def t(name, f):
    try:
        f()
        print(name, 'ok')
    except OSError as e:
        print(name, errno.errorcode[e.errno])
$2") >"$T_TMP/out" 2>"$T_TMP/err"
}
said() { grep -qxF "$1" "$T_TMP/out" || { diag "program said:" "$(cat "$T_TMP/out")" "stderr: $(cat "$T_TMP/err")"; return 1; }; }
# jq-like checks over bbx-log --json: python expression over the list ev of records.
jcheck() {
	bbx-log --json "$J" >"$T_TMP/j.json" 2>/dev/null
	"$PY" -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
sys.exit(0 if eval(sys.argv[2]) else 1)' "$T_TMP/j.json" "$@" || {
		diag "journal check failed: $1" "$(bbx-log "$J" 2>&1 | tail -n 30)"
		return 1
	}
}
same() { cmp -s "$1" "$2" || { diag "$1 differs from $2"; return 1; }; }

# ---- refuse (the default) ------------------------------------------------------------
setup
before=$(rt_snap "$W" before)
run "$REFUSE" '
t("trunc-open", lambda: open("big", "w"))
t("truncate", lambda: os.truncate("big2", 10))
t("inplace", lambda: open("big", "r+b").write(b"X"))
t("fd-ftruncate", lambda: os.ftruncate(os.open("big2", os.O_WRONLY | os.O_APPEND), 0))
t("small", lambda: open("small", "w").write("new small"))
t("limit", lambda: open("limit", "w").write("exactly at the limit: copied"))
t("append", lambda: open("log", "a").write("appended"))
t("unlink-link", lambda: os.unlink("gone"))
if os.environ["SHM"]: t("unlink-far", lambda: os.unlink(os.environ["SHM"] + "/far"))
'
rc=$?
[ $rc -eq 0 ] && said "trunc-open EFBIG" && said "truncate EFBIG" && said "inplace EFBIG" &&
	said "fd-ftruncate EFBIG"
ok $? "refuse: O_TRUNC open, truncate, in-place open, ftruncate of an inherited-style fd: EFBIG in the program"
same "$W/big" "$T_TMP/orig/big" && same "$W/big2" "$T_TMP/orig/big2"
ok $? "refuse: the refused files are intact, byte for byte"
said "small ok" && said "limit ok" && said "append ok" && said "unlink-link ok"
ok $? "refuse: under the limit, exactly at it, append, removal by hard link: allowed"
if cross_fs; then
	said "unlink-far EFBIG" && same "$SHM/far" "$T_TMP/orig.far"
	ok $? "refuse: removal on another filesystem (a copy would be needed): EFBIG, file kept"
else
	skip "no second filesystem for a cross-device removal"
fi
jcheck 'sum(e["type"] == "DENY" for e in ev) == 4 + int(sys.argv[3]) and all(e["rule"] == "refuse.ini:5 [journal] max_preserve" and e["errno"] == "EFBIG" and e["access"] == "write" and e["decision"] == "deny" for e in ev if e["type"] == "DENY") and [(e["op"][:4], e["reason"]) for e in ev if e["type"] == "DENY" and e["path"].endswith("/big")][:1] == [("open", "2 MiB file over the 1 MiB preserve limit")]' "$(cross_fs && echo 1 || echo 0)"
ok $? "refuse: DENY records (decision deny, EFBIG) name refuse.ini:5 [journal] max_preserve and the sizes"
grep -qxF "bbx: refused write to $W/big (refuse.ini:5 [journal] max_preserve: 2 MiB file over the 1 MiB preserve limit)" "$T_TMP/err" &&
	grep -qF "bbx: refused write to $W/big2 (refuse.ini:5 [journal] max_preserve: 3 MiB file over the 1 MiB preserve limit)" "$T_TMP/err"
ok $? "refuse: one explanation line per refusal on stderr, naming the rule" || diag "$(cat "$T_TMP/err")"
jcheck 'not any(e["type"] == "PRESERVE" and e["path"].endswith(("/big", "/big2")) for e in ev) and not any(e.get("how") == "lost" for e in ev)'
ok $? "refuse: nothing recorded as kept or lost for the refused files"
jcheck 'any(e["type"] == "PRESERVE" and e["path"].endswith("/small") and e["how"] in ("copy", "packed") and e["size"] == 512 * 1024 and e["duration_ns"] > 0 for e in ev) and any(e["type"] == "PRESERVE" and e["path"].endswith("/limit") and e["how"] in ("copy", "packed") and e["size"] == 1 << 20 for e in ev)'
ok $? "refuse: the copies within the limit are PRESERVE how=copy (or packed, 1 MiB and less) with their size and duration"
rt_undo "$J"
rc=$?
[ $rc -eq 0 ] || rt_showerr "$T_TMP/undo.out"
expect_rc $rc 0 "refuse: bbx-undo exits 0 (nothing was lost)"
after=$(rt_snap "$W" after)
same_snap "$before" "$after" "refuse: bbx-undo restores the workspace byte for byte (small, limit, log, gone)"

# ---- allow -----------------------------------------------------------------------------
setup
before=$(rt_snap "$W" before)
run "$ALLOW" '
t("trunc-open", lambda: open("big", "w").write("replaced"))
t("truncate", lambda: os.truncate("big2", 100))
t("small", lambda: open("small", "w").write("new small"))
t("append", lambda: open("log", "a").write("appended"))
t("unlink-link", lambda: os.unlink("gone"))
t("create", lambda: open("new", "w").write("new file"))
if os.environ["SHM"]: t("unlink-far", lambda: os.unlink(os.environ["SHM"] + "/far"))
'
rc=$?
[ $rc -eq 0 ] && said "trunc-open ok" && said "truncate ok" && said "small ok" && said "append ok" &&
	[ "$(cat "$W/big")" = replaced ] && [ "$(stat -c %s "$W/big2")" -eq 100 ]
ok $? "allow: the calls over the limit go ahead (big replaced, big2 truncated to 100 bytes)"
jcheck '[(e["op"][:4], e["how"], e["size"], e["rule"], e["reason"], e["restorable"]) for e in ev if e["type"] == "PRESERVE" and e["path"].endswith("/big")] == [("open", "lost", 2 << 20, "allow.ini:6 [journal] over_max_preserve", "2 MiB file over the 1 MiB preserve limit", False)] and any(e["type"] == "PRESERVE" and e["path"].endswith("/big2") and e["how"] == "lost" and e["op"].startswith("truncate") and e["size"] == 3 << 20 for e in ev) and not any(e["type"] == "DENY" for e in ev)'
ok $? "allow: PRESERVE how=lost records with the size, the over_max_preserve rule and the reason; no DENY"
"$PY" "$BBX_SRCDIR/tests/e2e/jdecode.py" "$J/journal" >"$T_TMP/raw.json" &&
	"$PY" -c '
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
lost = [r for r in rs if r["type"] == "PRESERVE" and r.get("how") == 5]
sys.exit(0 if len(lost) == 2 + (1 if sys.argv[2] else 0) and all("object" not in r for r in lost) else 1)' "$T_TMP/raw.json" "$(cross_fs && echo 1)"
ok $? "allow: the journal's bytes (independent decoder) hold how=5 (lost) records without an object"
grep -qxF "bbx: warning: not preserved, cannot be undone: $W/big (allow.ini:6 [journal] over_max_preserve: 2 MiB file over the 1 MiB preserve limit)" "$T_TMP/err"
ok $? "allow: one warning line on stderr per unrecoverable change" || diag "$(cat "$T_TMP/err")"
bbx-log --no-pager "$J" >"$T_TMP/log.txt" 2>&1
grep -qE "write open(64)? $W/big NOT PRESERVED 2 MiB, cannot be undone \(2 MiB file over the 1 MiB preserve limit\) rule allow.ini:6 \[journal\] over_max_preserve( (ok|= [0-9]+))?\$" "$T_TMP/log.txt"
ok $? "allow: bbx-log shows the change as NOT PRESERVED, with the reason and the rule" || grep big "$T_TMP/log.txt" | sed 's/^/# /' >&2
bbx-log --verify "$J" >"$T_TMP/verify.out" 2>&1
rc=$?
[ $rc -eq 0 ] && grep -qF "$W/big not preserved (how=lost, allow.ini:6 [journal] over_max_preserve): bbx-undo cannot restore it" "$T_TMP/verify.out"
ok $? "allow: bbx-log --verify notes the lost pre-images (a note, exit 0)" || rt_showerr "$T_TMP/verify.out"
bbx-diff "$J" >"$T_TMP/diff.out" 2>&1
grep -qxF "(the pre-image of $W/big was not kept: over [journal] max_preserve, allowed by over_max_preserve)" "$T_TMP/diff.out" &&
	grep -qxF "M $W/big" "$T_TMP/diff.out" && grep -qxF "M $W/small" "$T_TMP/diff.out"
rc=$?
[ $rc -eq 0 ] || rt_showerr "$T_TMP/diff.out"
ok $rc "allow: bbx-diff lists the lost paths as modified and says their pre-images were not kept"
cp "$W/big" "$T_TMP/big.run"; cp "$W/big2" "$T_TMP/big2.run"
rt_undo "$J"
rc=$?
expect_rc $rc 4 "allow: bbx-undo exits 4 (finished, some paths not restorable)"
grep -qF "lost: $W/big cannot be restored: the run changed it without keeping a copy (2 MiB file over the 1 MiB preserve limit; allow.ini:6 [journal] over_max_preserve); left as the run left it" "$T_TMP/undo.out" &&
	grep -qF "lost: $W/big2 cannot be restored" "$T_TMP/undo.out" &&
	grep -qE "^bbx-undo: .* 0 errors, $(cross_fs && echo 3 || echo 2) lost \(not restorable\)" "$T_TMP/undo.out"
ok $? "allow: bbx-undo lists each lost path and counts them in its summary" || rt_showerr "$T_TMP/undo.out"
same "$W/big" "$T_TMP/big.run" && same "$W/big2" "$T_TMP/big2.run"
ok $? "allow: the lost paths are left as the run left them"
after=$(rt_snap "$W" after)
grep -vE '^(big|big2)	' "$before" >"$T_TMP/b.rest"; grep -vE '^(big|big2)	' "$after" >"$T_TMP/a.rest"
same_snap "$T_TMP/b.rest" "$T_TMP/a.rest" "allow: everything else is restored byte for byte (small, log, gone, new removed, the directory)"
if cross_fs; then
	[ ! -e "$SHM/far" ] && grep -qF "lost: $SHM/far cannot be restored" "$T_TMP/undo.out"
	ok $? "allow: a removal on another filesystem over the limit is lost and reported"
else
	skip "no second filesystem for a cross-device removal"
fi
grep -q '^lost=' "$J/undone" && grep -qx "lost=$(cross_fs && echo 3 || echo 2)" "$J/undone"
ok $? "allow: J/undone records the lost count"

# ---- audit: refuses nothing, so the copy is made ---------------------------------------
setup
before=$(rt_snap "$W" before)
run "$AUDIT" 't("trunc-open", lambda: open("big", "w").write("audited"))'
said "trunc-open ok" && [ "$(cat "$W/big")" = audited ] &&
	jcheck 'any(e["type"] == "DENY" and e["decision"] == "audit" and e["rule"] == "audit.ini:7 [journal] max_preserve" for e in ev) and any(e["type"] == "PRESERVE" and e["path"].endswith("/big") and e["how"] == "copy" and e["size"] == 2 << 20 for e in ev)' &&
	grep -qF "bbx: audit: would refuse write to $W/big (audit.ini:7 [journal] max_preserve" "$T_TMP/err"
ok $? "audit: the call goes ahead, DENY with decision audit, and the file is copied anyway"
rt_undo "$J"
expect_rc $? 0 "audit: bbx-undo exits 0"
after=$(rt_snap "$W" after)
same_snap "$before" "$after" "audit: bbx-undo restores the file over the limit exactly"

# ---- a large copy within the limit says why its call took long ---------------------------
setup
head -c 70000000 /dev/urandom >"$W/large"
before=$(rt_snap "$W" before)
run "$UNLIM" 't("large", lambda: open("large", "w").write("small now"))'
said "large ok" &&
	jcheck 'any(e["type"] == "PRESERVE" and e["path"].endswith("/large") and e["how"] in ("copy", "reflink") and e["size"] == 70000000 and (e["how"] == "reflink" or e["duration_ns"] > 0) for e in ev)'
ok $? "large copy: its PRESERVE carries size and duration"
jcheck '[e["type"] for e in ev if e.get("path", "").endswith("/large")][:2] == ["NOTE", "PRESERVE"] and any(e["type"] == "NOTE" and e["text"] == "preserving 66.8 MiB by copy before the call" for e in ev)' ||
	jcheck 'any(e.get("how") == "reflink" for e in ev)'
ok $? "large copy: a NOTE announces a copy of 64 MiB or more before it starts"
bbx-log --no-pager "$J" | grep -qE "write open(64)? $W/large \(kept 66.8 MiB by (copy in [0-9]+\.[0-9]{2} s|reflink)\)"
ok $? "large copy: bbx-log shows how much was kept and how long the copy took"
rt_undo "$J"
expect_rc $? 0 "large copy: bbx-undo exits 0"
after=$(rt_snap "$W" after)
same_snap "$before" "$after" "large copy: restored byte for byte"

# ---- the limit is the run's: bbx-undo's own copies are never limited ---------------------
setup
run "$REFUSE" 't("grow", lambda: open("small", "w").write("G" * (2 << 20)))'
cp "$W/small" "$T_TMP/small.run"
rt_undo "$J"
rc=$?
same "$W/small" "$T_TMP/orig/small" && [ $rc -eq 0 ] && rt_undo "$J/undo" && same "$W/small" "$T_TMP/small.run"
ok $? "bbx-undo overwrites a 2 MiB version over a 1 MiB limit, keeping it: undo of the undo brings it back"

# ---- names of an inode the run created need no copy, whatever its link count -------------
# git's object store: write tmp_obj_X, link it to its hash name, unlink the temporary.  And
# the opposite, which must still be kept: a second name for a file that was there before.
setup
before=$(rt_snap "$W" before)
run "$UNLIM" '
def gitlike():
    with open("tmp_obj", "w") as f: f.write("object")
    os.link("tmp_obj", "obj"); os.unlink("tmp_obj")
def created_twice():
    with open("c1", "w") as f: f.write("mine")
    os.link("c1", "c2"); os.unlink("c1")
    with open("c2", "w") as f: f.write("rewritten through the other name")
def old_alias():
    os.link("small", "alias"); os.unlink("small")
t("gitlike", gitlike)
t("created_twice", created_twice)
t("old_alias", old_alias)'
said "gitlike ok" && said "created_twice ok" && said "old_alias ok" &&
	jcheck '[e["how"] for e in ev if e["type"] == "PRESERVE" and e["path"].endswith(("/tmp_obj", "/c1"))] == ["none", "none"]'
ok $? "created inode with a second name: unlinking one name keeps nothing (PRESERVE how=none)"
jcheck 'not any(e["type"] == "PRESERVE" and e["path"].endswith("/c2") for e in ev) and not any(e["type"] == "SIZE" for e in ev)'
ok $? "created inode: rewriting it through its other name keeps nothing either (still the run's own)"
jcheck '[e["how"] for e in ev if e["type"] == "PRESERVE" and e["path"].endswith("/small")] == ["link"]' &&
	[ "$(find "$J/objects" -type f | wc -l)" = 1 ]
ok $? "a file that was there before, given a second name, is still kept when its old name goes (one object in all)"
rt_undo "$J"
expect_rc $? 0 "second names: bbx-undo exits 0"
after=$(rt_snap "$W" after)
same_snap "$before" "$after" "second names: the tree is back byte for byte (obj, c2, alias gone; small restored)"

# ---- descriptors of files kept whole (journal/capture.h, BBX_FDID_KEPT) ----------------
# A writing open of a file that was there before keeps its content and metadata (a
# PRESERVE, or an empty file's SIZE); futimens through the descriptor it returned (or a
# dup2/dup3 of it), or utime by a name the policy allows, then needs no record: undo's
# restore of the PRESERVE puts the times back.  Mode changes are still recorded.  Once
# the file's last name is gone (its inode lives on as an object), the same descriptor
# spares nothing: the change is recorded again.
setup
: >"$W/empty" && touch -d '2020-01-02 03:04:05' "$W/empty"
before=$(rt_snap "$W" before)
run "$UNLIM" '
def touch_dup2():
    fd = os.open("small", os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY, 0o666)
    os.dup2(fd, 50); os.close(fd)
    os.utime(50); os.fchmod(50, 0o600); os.close(50)
def rw_dup3():
    fd = os.open("limit", os.O_RDWR)
    os.pwrite(fd, b"in place", 100)
    os.dup2(fd, 51, inheritable=False); os.close(fd)
    os.fchmod(51, 0o640); os.utime(51, ns=(7, 7)); os.close(51)
def empty_kept():
    fd = os.open("empty", os.O_WRONLY)
    os.write(fd, b"now something"); os.fchmod(fd, 0o604); os.close(fd)
def kept_then_removed():
    fd = os.open("log", os.O_WRONLY)
    os.unlink("log")
    os.utime(fd, ns=(3, 3)); os.close(fd)
def append_only():
    fd = os.open("big", os.O_WRONLY | os.O_APPEND)
    os.write(fd, b"more"); os.utime(fd, ns=(4, 4)); os.close(fd)
def copy2_over():
    import shutil
    os.chmod("big2", 0o751)
    shutil.copy2("big2", "gone")
    os.symlink("gone", "to_gone"); os.chmod("to_gone", 0o700)
t("touch_dup2", touch_dup2)
t("rw_dup3", rw_dup3)
t("empty_kept", empty_kept)
t("kept_then_removed", kept_then_removed)
t("append_only", append_only)
t("copy2_over", copy2_over)'
said "touch_dup2 ok" && said "rw_dup3 ok" && said "empty_kept ok" && said "kept_then_removed ok" && said "append_only ok" && said "copy2_over ok"
ok $? "kept descriptors: every call succeeded"
kept='e.get("path", "").endswith(("/small", "/limit", "/empty", "/gone"))'
jcheck "[e['type'] for e in ev if $kept and e['type'] in ('PRESERVE', 'SIZE')] == ['PRESERVE', 'PRESERVE', 'SIZE', 'PRESERVE'] and not any(e['type'] == 'META' and 'times' in e['changes'] for e in ev if $kept)"
ok $? "times set through the descriptor of a file kept whole (and its dup2, dup3), or by its name (shutil.copy2 over it): no META, its PRESERVE (or an empty file's SIZE) restores them"
jcheck "sorted(e['op'] + ':' + e['path'].rsplit('/', 1)[1] for e in ev if $kept and e['type'] == 'META') == ['chmod:gone', 'chmod:gone', 'fchmod:empty', 'fchmod:limit', 'fchmod:small']"
ok $? "... but a mode change of it is recorded (by descriptor, by name, through a symlink): it can leave the file unwritable for an undo that is not root"
jcheck 'any(e["type"] == "META" and e["op"] == "futimens" and "/log" in e["path"] for e in ev) and any(e["type"] == "META" and e["op"] == "futimens" and e["path"].endswith("/big") for e in ev)'
ok $? "... and times are recorded once the file left the tree (its inode now an object), and after an append (only the length kept)"
rt_undo "$J"
expect_rc $? 0 "kept descriptors: bbx-undo exits 0"
after=$(rt_snap "$W" after)
same_snap "$before" "$after" "kept descriptors: the tree is back byte for byte, modes and times included"

# ---- packed pre-images (journal-format.md 4.2, how=packed) --------------------------
# Once a copy found that the objects directory's filesystem cannot reflink, every
# later pre-image of a small file (1 MiB or less) without extended attributes goes into
# the run's shared object, objects/pack, at a range reserved for it alone (no inode of
# its own); a larger file, or one with extended attributes, still gets an object.  Two
# processes at once (cp -a and python3 truncating), then undo byte for byte; a damaged
# pack is found by --verify and leaves its files as the run left them.
W=$(new_ws)
mkdir "$W/src"
for i in $(seq 30); do
	head -c $((i * 700)) /dev/urandom | base64 >"$W/p$i"
	head -c $((i * 300 + 1)) /dev/urandom | base64 >"$W/src/p$i"
done
mkfile "$W/pbig" 1100
printf 'attributed\n' >"$W/pattr"
XATTR=0
"$PY" -c 'import os, sys; os.setxattr(sys.argv[1], "user.bbx", b"kept")' "$W/pattr" 2>/dev/null && XATTR=1
OLD20=$(head -1 "$W/p20")
before=$(rt_snap "$W" before)
J=$(rt_journal)
rt_run "$J" "$W" 'cp -a src/p1 src/p2 src/p3 src/p4 src/p5 src/p6 src/p7 src/p8 src/p9 src/p10 . &
python3 -c "
for i in range(11, 31):
    open(\"p%d\" % i, \"w\").write(\"rewritten %d\" % i)
open(\"pbig\", \"w\").write(\"small now\")
open(\"pattr\", \"w\").write(\"changed\")
" && wait'
expect_rc $? 0 "packed: cp -a and python3 side by side under bbx-run exit 0"
if jcheck 'any(e["type"] == "PRESERVE" and e["how"] == "reflink" for e in ev)'; then
	skip "the journal's filesystem reflinks: nothing is packed there"
	skip "the journal's filesystem reflinks"
	skip "the journal's filesystem reflinks"
else
	# Each process finds out once (its first copy, an object) unless the run knew.
	jcheck '(lambda p: len(p) >= 28 and all(e["object"] == "pack" and e["size"] == e["stat"]["size"] for e in p) and all(a["offset"] + a["size"] <= b["offset"] for a, b in zip(p, p[1:])))(sorted((e for e in ev if e["type"] == "PRESERVE" and e["how"] == "packed"), key=lambda e: e["offset"]))'
	ok $? "packed: the small files' pre-images are ranges of objects/pack, each its file's whole length, none overlapping another"
	jcheck '[e["how"] for e in ev if e["type"] == "PRESERVE" and e["path"].endswith("/pbig")] == ["copy"] and (not int(sys.argv[3]) or [e["how"] for e in ev if e["type"] == "PRESERVE" and e["path"].endswith("/pattr")] == ["copy"])' "$XATTR"
	ok $? "packed: a file over 1 MiB, and one with extended attributes, still get an object of their own"
	[ -f "$J/objects/pack" ] && [ "$(find "$J/objects" -mindepth 2 -type f | wc -l)" -le 4 ]
	ok $? "packed: one shared object, and at most four of their own ($(find "$J/objects" -mindepth 2 -type f | wc -l))"
fi
bbx-log --verify "$J" >"$T_TMP/verify.out" 2>&1
expect_rc $? 0 "packed: bbx-log --verify finds every range in the shared object"
bbx-log --records "$J" | grep -E "PRESERVE.* $W/p2[0-9] .* how=packed obj=pack offset=[0-9]+ size=[0-9]+ " >"$T_TMP/rec.out"
[ "$(wc -l <"$T_TMP/rec.out")" -eq 10 ] || jcheck 'any(e["type"] == "PRESERVE" and e["how"] == "reflink" for e in ev)'
ok $? "packed: bbx-log --records names the shared object, the offset and the size ($(wc -l <"$T_TMP/rec.out") of 10)"
bbx-diff "$J" >"$T_TMP/diff.out" 2>&1
grep -qxF -- "-$OLD20" "$T_TMP/diff.out"
ok $? "packed: bbx-diff shows a packed file's old content"
rt_undo "$J"
expect_rc $? 0 "packed: bbx-undo exits 0"
after=$(rt_snap "$W" after)
same_snap "$before" "$after" "packed: the tree is back byte for byte"
# The same run again, its shared object then cut short: the ranges past the cut are
# problems for --verify, and undo restores none of those files partly (each is left
# as the run left it, checked before anything is truncated).
J=$(rt_journal)
rt_run "$J" "$W" 'python3 -c "
for i in range(1, 31):
    open(\"p%d\" % i, \"w\").write(\"rewritten %d\" % i)
"'
expect_rc $? 0 "damaged pack: the run exits 0"
if [ -f "$J/objects/pack" ]; then
	truncate -s 100 "$J/objects/pack"
	bbx-log --verify "$J" >"$T_TMP/verify.out" 2>&1
	rc=$?
	[ $rc = 1 ] && grep -q "object pack has 100 bytes, record says .* (how=packed)" "$T_TMP/verify.out"
	ok $? "damaged pack: bbx-log --verify exits 1 and names the ranges past the end (rc $rc)"
	rt_undo "$J"
	rc=$?
	[ $rc != 0 ] && [ "$(cat "$W/p30")" = "rewritten 30" ] && grep -q "restoring $W/p30: Input/output error" "$T_TMP/undo.out"
	ok $? "damaged pack: bbx-undo fails those steps (rc $rc) and leaves p30 as the run left it"
else
	skip "nothing packed here"
	skip "nothing packed here"
fi
# The pack's descriptor is kept open from one copy to the next (capture.c, pack_out)
# and checked before each use: a program that puts a file of its own at that number
# (here dup2) gets nothing of the journal's written into it, the next copy goes to the
# pack, opened again, and undo brings every file back.
W=$(new_ws)
for i in 1 2 3; do echo "old $i" >"$W/q$i"; done
cat >"$T_TMP/packfd.py" <<'PY'
import os, sys
def packfd():
    for x in os.listdir("/proc/self/fd"):
        try:
            if os.readlink("/proc/self/fd/" + x).endswith("/objects/pack"):
                return int(x)
        except OSError:
            pass
    return -1
open("q1", "w").write("new 1")  # a copy of its own: the filesystem's reflink is asked once
open("q2", "w").write("new 2")  # packed where there is no reflink: the pack opened and kept
p = packfd()
if p < 0:
    print("nopack")
    sys.exit(0)
mine = os.open("mine", os.O_RDWR | os.O_CREAT, 0o644)
os.write(mine, b"the program's own bytes\n")
os.dup2(mine, p)  # the program's file now stands at the pack's number
open("q3", "w").write("new 3")  # packed again: must not go into "mine"
os.lseek(mine, 0, 0)
got = os.read(mine, 4096)
print("pack", p, "then", packfd(), "mine", len(got))
sys.exit(0 if got == b"the program's own bytes\n" and packfd() >= 0 else 3)
PY
before=$(rt_snap "$W" before)
J=$(rt_journal)
rt_run "$J" "$W" 'python3 "$T/packfd.py"'
rc=$?
if grep -q '^nopack' "$T_TMP/run.out"; then
	skip "nothing packed here (a filesystem with reflinks)"
	skip "nothing packed here (a filesystem with reflinks)"
else
	rt_showerr "$T_TMP/run.err"
	sed 's/^/# /' "$T_TMP/run.out" >&2
	expect_rc $rc 0 "pack descriptor replaced by the program: its file untouched, the pack opened again"
	rt_undo "$J"
	after=$(rt_snap "$W" after)
	same_snap "$before" "$after" "pack descriptor replaced: the tree is back byte for byte"
fi
# Format 2 (PRESERVE how=packed): bbx-undo refuses a directory of a format it does not
# know rather than skip records it cannot read.
J=$(rt_journal)
rt_run "$J" "$W" 'echo x > p1'
head -1 "$J/meta" | grep -qx "format=bbx-journal 2"
ok $? "a run's meta says format=bbx-journal 2"
sed -i '1s/.*/format=bbx-journal 9/' "$J/meta"
rt_undo "$J"
rc=$?
[ $rc = 1 ] && grep -q "not one this bbx-undo knows" "$T_TMP/undo.out" && [ "$(cat "$W/p1")" = x ]
ok $? "bbx-undo refuses format 9 (rc $rc) and changes nothing"

plan "$T_N"
finish
