#!/bin/bash
# SPDX-License-Identifier: MIT
# t-seal.sh - the run's closing FINAL records (journal/seal.c) for a run that touched
# more paths than one of the seal's blocks (8,192): with more than one CPU to run on, a
# helper thread states the rest of a block when most of its first 256 paths needed a
# system call (here the first block's; the second is too short), and none for paths in
# a directory the run removed.  Threads are counted with strace (skipped without it).  Whatever the threads, there must be one FINAL per path
# the run touched, in the order the journal first names them, each agreeing with the
# path's lstat after the run (absent, or its type, mode, size, inode, link count and
# mtime), and bbx-undo, which compares FINAL with what it finds, must restore the tree
# with no conflict.  The thread counts depend on the tree only, not on timing.
. "${BBX_SRCDIR:?is set by make check (tests/local.mk)}/tests/e2e/lib.sh" || exit 99
plan 14
# st FILE CMD...: CMD under strace, its clones, opens, preads and waits (bbx-run's own)
# into FILE; CMD alone, with FILE empty, when strace is not installed.
st() {
	local f=$1
	shift
	if command -v strace >/dev/null 2>&1; then strace -o "$f" -e trace=clone,clone3,openat,pread64,wait4 "$@"; else : >"$f"; "$@"; fi
}
# threads_are N DESC: the CLONE_THREAD calls in FILE are N (skipped without strace).
threads_are() {
	if ! command -v strace >/dev/null 2>&1; then skip "strace not installed"; return; fi
	local n
	n=$(grep -c 'CLONE_THREAD' "$1")
	[ "$n" -eq "$2" ]; ok $? "$3 ($n made)"
}

w=$(new_ws)
mkdir "$w/c"
for i in $(seq 300); do echo "old $i" >"$w/c/o$i"; done
snap "$w" >"$T_TMP/before"
# 2 directories of 4,600 new files each, a tenth of them removed again, one rewritten,
# one made a symlink; 30 older files overwritten, 30 removed, one renamed over another.
(cd "$w" && st "$T_TMP/run.st" bbx-run --quiet --journal "$T_TMP/j" -- sh -c '
	mkdir a b
	(cd a && seq 4600 | xargs touch) && (cd b && seq 4600 | xargs touch)
	rm a/*7 b/*3
	printf "%0100d" 0 >a/1; ln -s 1 a/link
	for i in $(seq 30); do echo new >c/o$i; rm c/o$((i + 100)); done
	mv c/o200 c/o201')
ok $? "the run touching 9,265 paths ends with status 0"

# The thread is made in bbx-run's own process (strace without -f: not the command's).
if [ "$(nproc)" -gt 1 ]; then
	threads_are "$T_TMP/run.st" 1 "with $(nproc) CPUs the seal shares its first block with a helper thread"
else
	threads_are "$T_TMP/run.st" 0 "with one CPU the seal makes no thread"
fi

# While the command ran (over a second: 9,200 creations), bbx-run read the journal ahead
# of the seal (journal/undo.h, bbx_seal_pre_step): preads of the journal before its wait
# for the command returned.  Only with a second CPU.
if ! command -v strace >/dev/null 2>&1; then
	skip "strace not installed"
else
	# the journal opened read-only, then preads of that descriptor before the wait4
	ahead=$(awk '/^openat\(.*\/journal", O_RDONLY/ {fd = $NF} /^wait4\(/ {exit}
		fd != "" && index($0, "pread64(" fd ",") == 1 {n++} END {print n + 0}' "$T_TMP/run.st")
	if [ "$(nproc)" -gt 1 ]; then
		[ "$ahead" -gt 0 ]
		ok $? "with $(nproc) CPUs bbx-run read the journal while the command ran ($ahead preads)"
	else
		[ "$ahead" -eq 0 ]
		ok $? "with one CPU bbx-run read nothing ahead"
	fi
fi

bbx-log --json "$T_TMP/j" >"$T_TMP/j.json"
python3 - "$T_TMP/j.json" >"$T_TMP/check" <<'EOF'
import json, os, stat, sys
touched = ("CREATE", "PRESERVE", "SIZE", "RMDIR", "RENAME", "META")
first, seen, finals = [], set(), []
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["type"] == "FINAL":
        finals.append(r)
    elif r["type"] in touched and not (r["type"] == "CREATE" and r.get("kind") == "anon"):
        for k in ("path", "path2"):
            p = r.get(k)
            if p and p not in seen:
                seen.add(p)
                first.append(p)
print("count", len(finals), len(first))
print("order", int([f["path"] for f in finals] == first))
kinds = {stat.S_IFREG: "file", stat.S_IFDIR: "dir", stat.S_IFLNK: "symlink"}
bad, absent = [], 0
for f in finals:
    p = f["path"]
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        absent += 1
        if f["kind"] != "none":
            bad.append(p + ": absent, FINAL says " + f["kind"])
        continue
    s = f.get("stat", {})
    want = (kinds.get(stat.S_IFMT(st.st_mode)), st.st_mode, st.st_size, st.st_ino, st.st_nlink, st.st_mtime_ns)
    got = (f["kind"], s.get("mode"), s.get("size"), s.get("ino"), s.get("nlink"), s.get("mtime_ns"))
    if want != got:
        bad.append("%s: lstat %s, FINAL %s" % (p, want, got))
print("absent", absent)
print("bad", len(bad))
for b in bad[:5]:
    print("#", b)
EOF
grep '^#' "$T_TMP/check" >&2
read -r _ nfin nfirst < <(grep '^count' "$T_TMP/check")
diag "FINAL records: $nfin; paths the journal names: $nfirst"
[ "$nfin" -eq "$nfirst" ] && [ "$nfin" -eq 9265 ]; ok $? "one FINAL per path the run touched ($nfin of $nfirst; 9,200 new files, 2 directories, a symlink, 62 older files)"
grep -qx 'order 1' "$T_TMP/check"; ok $? "the FINAL records come in the order the journal first names their paths"
grep -qx 'bad 0' "$T_TMP/check"; ok $? "every FINAL agrees with its path's lstat after the run"
# Absent: 460 + 460 new files removed, 30 older files removed, and c/o200 renamed away.
grep -qx 'absent 951' "$T_TMP/check"; ok $? "the FINAL records of removed paths say so ($(grep '^absent' "$T_TMP/check"))"

bbx-undo --quiet "$T_TMP/j" >"$T_TMP/undo.out" 2>&1
rc=$?
grep -i conflict "$T_TMP/undo.out" | sed 's/^/# /' >&2
[ "$rc" -eq 0 ] && ! find "$w" -name '*.bbx-conflict' | grep -q .
ok $? "bbx-undo after the large seal: status $rc, no conflict"
snap "$w" >"$T_TMP/after"
same_snap "$T_TMP/before" "$T_TMP/after" "the tree is byte-identical to its snapshot before the run"

# A run that removes all it made: every path lies below a directory found removed, is
# answered without a system call, and gets no thread.
w=$(new_ws)
(cd "$w" && st "$T_TMP/gone.st" bbx-run --quiet --journal "$T_TMP/jg" -- sh -c '
	mkdir -p t/d && (cd t/d && seq 3000 | xargs touch) && rm -rf t')
ok $? "a run making 3,000 files and removing them ends with status 0"
threads_are "$T_TMP/gone.st" 0 "the seal of paths in a removed directory makes no thread"
read -r nfin nnone < <(bbx-log --json "$T_TMP/jg" | python3 -c '
import json, sys
f = [json.loads(l) for l in sys.stdin]
f = [r for r in f if r["type"] == "FINAL"]
print(len(f), sum(r["kind"] == "none" for r in f))')
[ "$nfin" -eq 3002 ] && [ "$nnone" -eq 3002 ]; ok $? "one FINAL per path, each saying absent ($nnone of $nfin, 3,002 expected)"
bbx-undo --quiet "$T_TMP/jg" && [ -z "$(ls -A "$w")" ]
ok $? "bbx-undo leaves the workspace as empty as it was"

# A run whose paths lie in 700 directories: the seal's two threads each hold a
# directory open per directory they state in (up to 512), so together they open
# descriptors far past the table a process starts with (64).  The table is grown
# before the helper starts (journal/seal.c, fd_table_room: one descriptor duplicated
# high, then closed): grown while the helper shared it, each step waited for an RCU
# grace period, several ms.  bbx-run's own threads are traced (-f would follow the
# command too, so its pids are filtered): the duplication comes before the helper's
# clone, and no descriptor bbx-run opened after it lies past the duplicated one.
if ! command -v strace >/dev/null 2>&1; then
	skip "strace not installed"
elif [ "$(nproc)" -lt 2 ]; then
	skip "one CPU: the seal makes no thread"
else
	w=$(new_ws)
	(cd "$w" && strace -f -o "$T_TMP/fd.st" -e trace=clone,clone3,fcntl,openat \
		bbx-run --quiet --journal "$T_TMP/jfd" -- sh -c '
		for i in $(seq 700); do echo "d$i/a d$i/b"; done | xargs mkdir -p
		for i in $(seq 700); do echo "d$i/a/f d$i/b/f"; done | xargs touch')
	rc=$?
	python3 - "$T_TMP/fd.st" >"$T_TMP/fd.chk" <<'EOF'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
run = lines[0].split()[0]  # bbx-run's pid: the first line's
mine, dup, clone_at, after = {run}, None, None, []
for i, l in enumerate(lines):
    pid = l.split()[0]
    if pid not in mine:
        continue
    m = re.search(r'clone3?\(.*CLONE_THREAD.*= (\d+)', l)
    if m:
        mine.add(m.group(1))
        clone_at = i if clone_at is None else clone_at
        continue
    m = re.search(r'fcntl\(\d+, F_DUPFD_CLOEXEC, (\d+)\)\s+=\s+(\d+)$', l)
    if m and clone_at is None:
        dup = max(dup or 0, int(m.group(2)))
    m = re.search(r'(openat\(|openat resumed>).*\s=\s(\d+)$', l)
    if m and clone_at is not None:
        after.append(int(m.group(2)))
print("dup", dup, "clone", clone_at is not None, "opened", len(after), "max", max(after or [0]))
sys.exit(0 if dup is not None and clone_at is not None and len(after) > 200 and max(after) <= dup else 1)
EOF
	r=$?
	[ $rc -eq 0 ] && [ $r -eq 0 ]
	ok $? "the seal grew the descriptor table before its helper thread, never after it ($(cat "$T_TMP/fd.chk"))"
fi
finish
