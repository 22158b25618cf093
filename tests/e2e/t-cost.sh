#!/bin/bash
# SPDX-License-Identifier: MIT
# t-cost.sh - what bbx adds to each call, counted in system calls (strace), not timed:
# counts are exact on any machine, so the per-call design claims of bench/ and the
# README (issue 5) are held here against regressions.  Each case runs N calls of one kind
# bare and under bbx-run (default policy, full journaling) and compares the system calls
# between two markers; a budget is the figure measured when it was set.
. "${BBX_SRCDIR:?is set by make check (tests/local.mk)}/tests/e2e/lib.sh" || exit 99
PLAN=98
plan $PLAN

N=100
# The journal's descriptor number (journal/writer.h, BBX_WRITER_FD_MIN): the journaled
# run's writes to it are the records.
export JFD=48
SUMPOPS=0
OPS="$BBX_SRCDIR/tests/e2e/costops.py"
if ! command -v strace >/dev/null 2>&1; then
	for _ in $(seq "$PLAN"); do skip "strace not installed"; done
	exit 0
fi
# between FILE: the system calls between the markers (signals and exits not counted, nor
# getrandom: glibc's mkstemp asks it for random bits on 4 to 10 of 100 calls, in the bare
# run and the journaled one alike, which made the mkstemp case's difference vary by +-6).
# Nor bbx-run's own (the first process of a journaled run's trace: it reads the journal
# while the command runs, journal/undo.h); the command's cost is in its own calls.  A call
# another process interrupted in the trace ("<unfinished ...>", then "<... resumed>") is
# counted once, by its first line.
between() {
	awk 'NR == 1 && /execve\("[^"]*bbx-run"/ {run = $1} /BBX-COST-BEGIN/ {f = 1; next} /BBX-COST-END/ {f = 0} f && $1 != run' "$1" |
		grep -v -E '^[0-9]+ +(\+\+\+|---|getrandom\(|<\.\.\. [a-z0-9_]+ resumed>)'
}
# cost OP: sets EXTRA (system calls added per call, x100) and WRITES (journal writes per
# call, x100), from one bare and one journaled run in fresh workspaces.
# XWS: when set, the workspaces are made there instead (another filesystem than the
# journal's).
ws() { if [ -n "${XWS:-}" ]; then mktemp -d "$XWS/ws.XXXXXX"; else new_ws; fi; }
cost() {
	local w
	w=$(ws)
	(cd "$w" && python3 "$OPS" --prep "$1" $N && strace -f -o "$T_TMP/bare.st" python3 "$OPS" "$1" $N)
	w=$(ws)
	CWS=$w # the journaled run's workspace
	local rc=0
	(cd "$w" && python3 "$OPS" --prep "$1" $N) || rc=$?
	(cd "$w" && strace -f -o "$T_TMP/bbx.st" bbx-run --quiet --journal "$T_TMP/j.$1" -- python3 "$OPS" "$1" $N) || rc=$?
	local b j
	b=$(between "$T_TMP/bare.st" | wc -l)
	j=$(between "$T_TMP/bbx.st" | wc -l)
	# The madvise that maps a page of the state's slot table writable, once per page a
	# process's lookups reach (journal/state.c, slot_page_ready: one call for the read
	# fault and the write fault it saves), is counted apart: which case's files first
	# reach a page is chance (a page holds the slots of BBX_STATE_GROUP neighbouring inode
	# numbers, and ext4 spreads new directories over its block groups: 13 per 100 calls
	# seen for mkdirfill).  budget allows 20 per 100 calls.
	POPS=$(between "$T_TMP/bbx.st" | grep -c 'MADV_POPULATE_WRITE')
	EXTRA=$(((j - POPS - b) * 100 / N))
	# A journaled run that failed, or whose trace lacks the calls the bare one made, is
	# no measure: every budget fails rather than pass on a short count.
	if [ $rc -ne 0 ] || [ "$j" -lt "$b" ] || ! grep -q 'BBX-COST-END' "$T_TMP/bbx.st"; then
		diag "$1: the journaled run failed (exit $rc) or its trace is short ($j calls, bare $b)"
		EXTRA=99999 WRITES=99999
	fi
	WRITES=$(($(between "$T_TMP/bbx.st" | grep -c "write($JFD,") * 100 / N))
	PROCFD=$(between "$T_TMP/bbx.st" | grep -c 'readlink("/proc/self/fd/')
	# The entry itself stated or linked by an absolute path, when the call named it
	# relative to a descriptor (bbx_at_set: the lookup the call makes, not a walk from /).
	ABSENTRY=$(between "$T_TMP/bbx.st" | grep -cE '(newfstatat|linkat)\(AT_FDCWD, "/[^"]*/f[0-9]+"')
	diag "$1: $b system calls bare, $j under bbx: +$EXTRA/100 per call, $WRITES/100 journal writes per call"
}
# budget OP MAX_EXTRA MAX_WRITES DESC [MIN_WRITES] (all x100 per call; MIN_WRITES is 100
# when MAX_WRITES is not 0: a journaled kind of call writes its record ahead of it)
budget() {
	cost "$1"
	SUMPOPS=$((SUMPOPS + POPS))
	[ "$EXTRA" -le "$2" ] && [ "$POPS" -le 20 ]
	ok $? "$1: at most $(($2 / 100)).$(printf %02d $(($2 % 100))) system calls added per call ($EXTRA/100, and $POPS/100 madvise of a slot page): $4"
	# A journaled kind of call writes its record: at most one write, and not none.
	local min=${5:-$(($3 > 0 ? 100 : 0))}
	[ "$WRITES" -le "$3" ] && [ "$WRITES" -ge "$min" ]
	ok $? "$1: $(($min / 100)).$(printf %02d $(($min % 100)))-$(($3 / 100)).$(printf %02d $(($3 % 100))) journal writes per call ($WRITES/100)"
}
# A journaled call: its directory's state, the target's, its one record (the previous
# call's RESULT travels in the same write).  The working directory's name and identity
# are kept from the first call while no chdir moves it (journal/path.c, cwd_kept), and
# the directory, older than the run but on the journal's filesystem, needs no stat of
# its own once its metadata is kept (a DIRMETA: level CONTENT, capture.c,
# trusted_unprotected).  Each case below was one stat more before: the capture's
# check that the directory is not a shard of objects/.  A process that has taken a few
# write decisions maps its table of proofs once (an mmap: +0.01 a call here) for the
# write decisions' cache, which then decides the next entry of a directory decided
# before without walking the policy's roots (shim/policy.c, wcache_hit).  Where a
# process has mapped the table already (a proof given up by one of its four slots), the
# cache adds no call: the cases below allow the one mmap either way.
budget rename 301 100 "lstat of both names, one write"
# O_CREAT|O_EXCL fails on any existing name by itself: the name is not looked up first
# (CREATE how=excl, journal-format.md 5.3).
budget create 201 100 "one write, fstat of the new descriptor"
# The unlink of a file the run created keeps nothing (PRESERVE how=none, which undo
# skips): its record is held back like a RESULT and goes out with the next ones
# (capture.c, bbx_cap_remove); a full buffer moves to the process's overflow (run.c,
# defer_spill), so ~25 removals go out in a write: 4 writes for these 100 (it was 50,
# two a write, before the overflow; run.h, BBX_DEFER_CAP and BBX_DEFER_SPILL).  Every
# one of them is in the journal when the run ends.
budget unlink 110 10 "lstat of the name; the record held back" 2
n=$(bbx-log "$T_TMP/j.unlink" | grep -cE " delete unlink [^ ]*/f[0-9]+ ok$")
[ "$n" -eq $N ]; ok $? "unlink: every held-back removal is in the journal at the end, with its outcome ($n of $N)"
# The unlink of a file that was there before the run: its inode is kept (a hard link
# into objects/), and the record naming it is written before the call.  (The first
# link into a shard of objects/ makes the shard: a few calls once.)
budget unlinkold 310 100 "lstat of the name, the hard link into objects/, one write"
# The rmdir of a directory older than the run: its RMDIR, written before the call, holds
# its stat and its extended attributes (none here: one llistxattr says so).  A removed
# directory's name may be a symlink next (journal/path.c, bbx_nsgen_bump), so the next
# call proves the working directory again: a getcwd and its identity.
budget rmdirold 501 100 "getcwd and the working directory's identity, lstat of the name, llistxattr, one write"
# link(2) fails on an existing name by itself: the new name is not looked up first
# (CREATE how=excl), and the source's identity, taken for deny_read, is the link's
# (shim/names.c, LINK_BODY): was 5, with an lstat of the new name before and after.
budget link 201 100 "the source's identity (deny_read), one write"
# The same with the source older than the run in a subdirectory (cp -al): its directory
# part is stated relative to the working directory, whose name is trusted while no chdir
# has moved it, and that stat answers the check that the source is no journal object
# (journal/path.c, cwd_kept): was 5, with a getcwd and a stat of the directory by its
# absolute name at every link.
budget linkold 301 100 "lstat of the source's directory, the source's identity, one write"
n=$(between "$T_TMP/bbx.st" | grep -c 'getcwd(')
[ "$n" -eq 0 ]; ok $? "linkold: no getcwd ($n for $N links)"
# tar, sed -i and cp -p set mode, owner and times through the descriptor of the file they
# have just made: found CREATED by the descriptor's mark, without even an fstat
# (journal/capture.h, bbx_fdid).
budget createmeta 201 100 "as create; fchmod, fchown and futimens of the new descriptor add nothing"
# rm -r, find -delete, shutil.rmtree: names relative to a directory descriptor.  Its name
# is learnt once (readlink of /proc/self/fd); on later calls the descriptor's fstat finds
# it by the directory's identity, and the name is trusted while the run's namespace
# generation holds (journal/path.c, dir_name: an lstat of the name was one more).  A
# descriptor whose open took the directory's identity (the deny_read check's mark,
# kept through dup and fcntl's F_DUPFD as rm's fts uses them) needs no fstat either,
# when the run made the directory (capture.c, trusted_unprotected; this one it did).
budget unlinkat 110 10 "lstat of the entry; the directory's identity from its descriptor's mark, the record held back" 2
n=$(bbx-log "$T_TMP/j.unlinkat" | grep -cE " delete unlinkat [^ ]*/f[0-9]+ ok$")
[ "$n" -eq $N ]; ok $? "unlinkat: every held-back removal is in the journal at the end, with its outcome ($n of $N)"
[ "$PROCFD" -le 1 ]; ok $? "unlinkat: the directory descriptor's name read from /proc/self/fd at most once ($PROCFD times for $N calls)"
[ "$ABSENTRY" -eq 0 ]; ok $? "unlinkat: the entries stated and linked through the descriptor, never by absolute path ($ABSENTRY times)"
# rm -r's own way: the directory's descriptor copied by fcntl(F_DUPFD_CLOEXEC) and the
# first closed; the copy carries the mark (shim/size.c, do_fcntl).
budget unlinkatdup 110 10 "as unlinkat, through fcntl's copy of the descriptor" 2
# chmod of a file older than the run: its META (old mode, owner, times) written ahead.
# The capture's first question, whether the run created it, is a stat that follows a
# symlink; it is asked as an lstat, whose answer stands for both unless the name is a
# symlink, so the policy's and the capture's lstat that follow are in the memo (capture.c,
# k_statat).  Through a descriptor (chmod -R), the directory's name proved by its fstat
# stands for the policy's check of the parent (journal/path.c, bbx_dname_known), and
# the entry is stated relative to the descriptor, as the call names it (shim/meta.c,
# bbx_at_set): was 4 stats, three of them by absolute path.
budget chmodold 201 100 "lstat of the name, one write"
# An append to a file older than the run, after the first (its SIZE record): covered,
# no record.  What is left is the lstat of the name (the write decision's, which finds
# the inode covered) and the stat of its directory (the journal-directory check); a
# process that never creates or removes anything in its working directory now learns
# the directory's identity from that stat (capture.c, cwd_learn), so the name needs no
# getcwd (it was 3 a call, the shell loop `echo $i >>old.log` 1.78 x bare).  The stat
# of the directory is the first call's only: its identity, found neither the journal
# directory nor objects/ nor a shard, is remembered for the namespace generation
# (capture.c, unprot_known; was 2.01 a call).
budget appendold 101 0 "lstat of the name; no record"
n=$(between "$T_TMP/bbx.st" | grep -c 'getcwd(')
[ "$n" -eq 0 ]; ok $? "appendold: no getcwd after the first append ($n for $N appends)"
# The descriptor's fstat (the check that its directory is not a shard of objects/) is
# the first call's only, as appendold's stat (was 3.05 a call).
budget chmodatold 205 100 "lstat of the entry, one write; the descriptor's fstat and name read once"
[ "$PROCFD" -le 1 ]; ok $? "chmodatold: the directory descriptor's name read from /proc/self/fd at most once ($PROCFD times for $N calls)"
[ "$ABSENTRY" -eq 0 ]; ok $? "chmodatold: the entries stated through the descriptor, never by absolute path ($ABSENTRY times)"
# touch of a file older than the run (GNU touch: open O_WRONLY|O_CREAT, futimens, close):
# the open keeps the content and metadata (a copy: open for writing without O_TRUNC),
# and marks the descriptor it returns (journal/capture.h, BBX_FDID_KEPT); the futimens
# through it is then one fstat that finds the same inode still kept whole, with no
# record: the PRESERVE's restore puts the times back.  (Was 17 calls, then 13 with a
# META: the descriptor's name, a stat of its directory and a write.)  A filesystem
# without reflinks is asked for one once a process (capture.c, no_clone).  A shard
# directory the copies make raises the namespace generation (capture.c, make_shard), so
# the working directory's name is proved again once (+0.04 a call here; was 8.10).
budget touchold 812 200 "lstat of the name, the copy (5 calls), one write; an fstat of the descriptor"
[ "$PROCFD" -eq 0 ]; ok $? "touchold: no descriptor's name read from /proc/self/fd ($PROCFD times for $N calls)"
# (On a filesystem with reflinks, btrfs or XFS, every clone succeeds and none is wasted.)
CLONES=$(between "$T_TMP/bbx.st" | grep 'FICLONE' | grep -c '= -1 ')
[ "$CLONES" -le 1 ]; ok $? "touchold: a reflink the filesystem refused asked for at most once ($CLONES refusals for $N copies)"
n=$(bbx-log "$T_TMP/j.touchold" | grep -cE " meta futimens ")
k=$(bbx-log "$T_TMP/j.touchold" | grep -cE " write open(64)? [^ ]*/f[0-9]+ ")
[ "$n" -eq 0 ] && [ "$k" -eq $N ]; ok $? "touchold: every file kept whole by its open ($k of $N), no futimens recorded ($n)"
# The removal of files older than the run from another filesystem than the journal's
# (a workspace in a tmpfs, the state directory on the disk): no hard link into objects/
# can be made, so each file is kept by a byte copy into objects/pack.  The link's EXDEV
# and copy_file_range's are each met once a process, then not tried again for that pair
# of filesystems (capture.c, no_link and no_cfr), and the pack stays open from one copy
# to the next, checked by an fstat (capture.c, pack_out): was 12 calls per file (the
# link and copy_file_range refused, the pack opened and closed, the file opened by its
# absolute path).
XFS=""
if [ -d /dev/shm ] && [ -w /dev/shm ] &&
	[ "$(stat -c %d /dev/shm)" != "$(stat -c %d "$T_TMP")" ]; then
	XFS=$(mktemp -d /dev/shm/bbx-xdev.XXXXXX) &&
		trap 'rm -rf "$T_TMP" "$XFS"' EXIT # lib.sh's trap, and this directory
fi
if [ -n "$XFS" ]; then
	# (+0.02 a call since a new shard raises the namespace generation: touchold above.)
	XWS=$XFS budget unlinkxdev 813 100 "lstat of the name, the copy (open, flistxattr, the pack's fstat, pread, pwrite, close), one write"
	st=$(between "$T_TMP/bbx.st")
	nl=$(grep -c 'linkat(.*EXDEV' <<<"$st")
	nc=$(grep -c 'copy_file_range(.*EXDEV' <<<"$st")
	np=$(grep -cE 'open(at)?\(.*/objects/pack"' <<<"$st")
	[ "$nl" -le 1 ] && [ "$nc" -le 1 ] && [ "$np" -le 1 ]
	ok $? "unlinkxdev: the link into objects/ and copy_file_range refused at most once each ($nl, $nc), the pack opened at most once ($np) for $N files"
	# The files come back from the pack, byte for byte.
	d=$CWS
	bbx-undo "$T_TMP/j.unlinkxdev" >/dev/null 2>&1
	bad=0
	for i in $(seq 0 $((N - 1))); do
		[ "$(cat "$d/f$i" 2>/dev/null)" = "old $i" ] || bad=$((bad + 1))
	done
	[ "$bad" -eq 0 ]; ok $? "unlinkxdev: bbx-undo brings back every file from the pack ($bad of $N missing or different)"
	rm -rf "$XFS"
else
	for _ in 1 2 3 4; do skip "unlinkxdev: no tmpfs at /dev/shm on another filesystem than $T_TMP"; done
fi
# git's loose object (create in .git/objects/xx, link to its name, unlink): the second and
# third calls find the directory proved by the first (journal/path.c, bbx_dname), and
# take its name and identity on trust, with no stat of it, while the working directory
# has not moved and no directory was renamed or removed (cwd_kept; shim/cwd.c).  Per
# object, three records.
budget object 505 300 "create, link and unlink in a subdirectory: 2 + 2 + 1 (was 21, then 16, then 14, then 9)"
# tar -x, npm: creates in a subdirectory written to before.  Its name was proved once;
# a stat of the directory by the call's own relative words finds the identity proved,
# and the call then goes as it was made (journal/path.c, cwd_kept): was 6 (getcwd, then
# openat2, fstat and close of the directory), then 4 (getcwd and an lstat by the
# absolute words, the create by openat2 of those words), then 3 (a stat of the
# directory by the call's own relative words, to find the identity proved): now the
# proof's identity is trusted in its generation, the working directory's name while no
# chdir has moved it (shim/cwd.c), and the run made the directory (capture.c,
# trusted_unprotected).
budget subcreate 201 100 "one write, fstat of the new descriptor"
# Creates in 16 directories in turn (git's object shards, at random there): the four
# slots of proved names give up a proof to the next directory, and the table keeps it
# (journal/capture.h, bbx_dtab): with the slots alone, each create cost 7 (getcwd,
# then openat2, fstat and close of the directory).
budget shards 201 100 "as subcreate, in 16 directories in turn"
# A directory made in one proved in the same call, then a file created in it: the new
# directory's words are proved by its creation (capture.c, create_record and
# bbx_cap_done): the create costs what a create in a known directory costs (it was 4
# more: getcwd, openat2, fstat, close).  Per iteration: mkdir (lstat of the name, one
# write, the RESULT's lstat; the working directory's stat was one more, see rename),
# then the create (one write, fstat of the new descriptor).
budget mkdirfill 510 200 "mkdir (3) then a create in the new directory (2); the table of proofs mapped once"
# tar -x, cp -a, rsync -a: times, owner and mode set by name on each directory the run
# made.  The name is looked up first as the call names it; an object the run created
# needs no record and no absolute name (shim/meta.c, cap_meta_at): was two system calls
# (the stat of the name's directory proving its absolute name, then the lstat), then
# one (the lstat); now none: the directory's words are a proof of this generation, and
# its identity is taken from it (journal/path.c, bbx_dname_trusted_rel).
budget dirmeta 0 0 "utimensat, chown and chmod by name of a directory the run made: nothing"
# sed -i: a temporary file beside each file, renamed over it.  Renaming a file moves no
# directory, so the proofs of the run's directory names stand (capture.c,
# bbx_cap_rename): was 14, the create and the rename each re-proving the directory.
# The PRESERVE of the file replaced and the RENAME go out in one write (capture.c,
# preserve_before_rename).
budget sedi 500 200 "create (2), rename over a file (3: two stats, one write with the pre-image's PRESERVE and the RENAME; a pre-image this small is kept inline); three records in two writes"
# mkstemp(3) in a directory written to before: the shim makes the name itself (so its
# CREATE comes first, shim/tmp.c), and like glibc asks the kernel for no random bytes
# per name (an O_EXCL create needs names that differ, not secret ones): the process's
# first name seeds the sequence with one getrandom, before the measured calls or in the
# first of them.
budget mkstemp 201 100 "as subcreate: one write, fstat of the new descriptor"
n=$(between "$T_TMP/bbx.st" | grep -c 'getrandom(')
[ "$n" -le 1 ]; ok $? "mkstemp: at most one getrandom for $N names ($n)"
# O_CREAT in a directory that does not exist: the relative stat finds it missing, and
# the policy and the capture take that answer (the memo), the intent written.
budget missing 201 100 "one stat of the missing parent, one write"
# Read-only calls outside every deny_read root: nothing added.
budget stat 0 0 "nothing"
budget statabs 0 0 "nothing (the read filter: shim.h, bbx_rfilt)"
# An absolute read-only open is one openat2 in place of the openat; so is a relative
# one in a working directory whose subtree is under no deny_read root (RESOLVE_NO_SYMLINKS:
# shim.h, bbx_rf_open_rel), after one getcwd per process for that verdict (it was an
# identity check, fstat, after every open); one through a symlink tries the openat2
# (ELOOP), then opens and checks the identity: that openat2 is made once (it was twice).
budget readabs 0 0 "nothing (openat2 instead of openat)"
budget read 1 0 "one getcwd for the working directory's verdict; no fstat"
budget readsym 200 0 "openat2 refused (ELOOP), then fstat of the descriptor"
# Through a directory's descriptor opened by its words (BBX_FDID_CLEAN): one openat2
# beneath it each (it was an fstat after each open, and one after the directory's).
budget readat 0 0 "nothing (openat2 beneath the clean descriptor instead of openat)"
# A directory opened by a relative name and listed (gnulib's fts: rm -r, find, grep -r):
# opened by its words beneath the clean working directory, the descriptor is marked
# clean and its fdopendir needs no check (capture.h, BBX_FDID_CLEAN; it was 2 per
# directory, then 1, the open's fstat).
budget dirlist 1 0 "one getcwd for the working directory's verdict; the open, fdopendir and closedir add nothing"
# The slot pages' madvise (above) happens at all: the mutating cases' lookups reach pages
# of the slot table, each mapped writable in one call (journal/state.c, slot_page_ready).
[ "$SUMPOPS" -ge 1 ]; ok $? "the state's slot pages mapped by madvise, not faulted in ($SUMPOPS calls over the cases)"

# A fork child on its way to exec (bash starting /bin/true 20 times): between its fork
# and its execve, bbx adds the program's stat (deny_read by identity), getcwd, the two
# clocks (system calls, not the vDSO: a fork child would fault in its pages), getpid
# twice (the fork handler's, for the child's later records, and the exec record's own,
# which a vfork child sharing its parent's memory needs), and the EXEC record's one
# write; the first exec of a program also reads its ELF header (5 calls), which the run
# then remembers (state.h, program table).  And one madvise that maps the state file's
# head page writable (journal/state.c, head_populate): the child inherits no page table
# entries for that shared mapping, and the call costs ~10 us here where the page fault
# it replaces cost ~20-40 (issue 5).
child_calls() {
	python3 - "$1" <<'EOF'
import os, re, sys
calls, writes, pops, done = {}, {}, {}, set()
for line in open(sys.argv[1]):
    m = re.match(r"(\d+) +(.*)", line)
    if not m or m.group(2).startswith(("<...", "+++", "---")):
        continue
    pid, call = m.groups()
    if pid in done:
        continue
    if call.startswith('execve("/bin/true"'):
        done.add(pid)
    else:
        calls[pid] = calls.get(pid, 0) + 1
        writes[pid] = writes.get(pid, 0) + call.startswith("write(%s," % os.environ["JFD"])
        pops[pid] = pops.get(pid, 0) + ("MADV_POPULATE_WRITE" in call)
kids = [calls.get(p, 0) for p in done]
print(sum(kids) * 100 // max(len(kids), 1), len(kids), max([writes.get(p, 0) for p in done] or [0]),
      min([writes.get(p, 0) for p in done] or [0]),
      min([pops.get(p, 0) for p in done] or [0]), max([pops.get(p, 0) for p in done] or [0]))
EOF
}
LOOP='for i in $(seq 20); do /bin/true; done'
w=$(new_ws)
(cd "$w" && strace -f -o "$T_TMP/fb.st" bash -c "$LOOP")
(cd "$w" && strace -f -o "$T_TMP/fj.st" bbx-run --quiet --journal "$T_TMP/j.fork" -- bash -c "$LOOP")
read -r fb nb _ _ _ _ < <(child_calls "$T_TMP/fb.st")
read -r fj nj wmax wmin pmin pmax < <(child_calls "$T_TMP/fj.st")
diag "fork child before exec: $fb/100 system calls bare, $fj/100 under bbx ($nb, $nj children)"
[ "$nb" -eq 20 ] && [ "$nj" -eq 20 ] && [ $((fj - fb)) -le 850 ]; ok $? "fork child before exec: at most 8.50 system calls added ($(((fj - fb) / 100)).$(printf %02d $(((fj - fb) % 100)))): stat, getcwd, two clocks, getpid twice, one write, one madvise, the ELF header once per program"
[ "$pmin" -eq 1 ] && [ "$pmax" -eq 1 ]; ok $? "fork child before exec: the state's head page mapped by one madvise, not faulted in ($pmin..$pmax per child)"
[ "$wmax" -eq 1 ] && [ "$wmin" -eq 1 ]; ok $? "fork child before exec: the EXEC record is the child's one journal write ($wmin..$wmax per child)"

# The other way programs start: posix_spawn from a process past its first record (make,
# an agent's tool loop, python's os.posix_spawn), then waitpid.  In the spawner bbx adds
# the program's stat, getcwd, the EXEC's write, and one write for the spawn's RESULT and
# the child's EXIT together (the RESULT held back, journal/run.h); no madvise (the state's
# head page is mapped since the run was opened here), and the spawner's own ids and the
# vDSO's clocks (no getpid or clock_gettime system call).  Counted in the spawner alone,
# each call once (strace's resumed halves dropped).  It was 9 calls and 3 writes.
spawner() { awk '/BBX-COST-BEGIN/ {p = $1; f = 1; next} /BBX-COST-END/ {f = 0} f && $1 == p' "$1" |
	grep -v -E '^[0-9]+ +(\+\+\+|---)|resumed>'; }
cost spawn
sb=$(spawner "$T_TMP/bare.st" | wc -l)
sj=$(spawner "$T_TMP/bbx.st" | wc -l)
sw=$(spawner "$T_TMP/bbx.st" | grep -c "write($JFD,")
sx=$(spawner "$T_TMP/bbx.st" | grep -cE 'madvise|clock_gettime|getpid')
diag "posix_spawn + waitpid in the spawner: $sb system calls bare, $sj under bbx, $sw journal writes"
[ "$sb" -ge $((6 * N)) ] && [ $(((sj - sb) * 100 / N)) -le 420 ] && [ "$sx" -eq 0 ]
ok $? "posix_spawn in the spawner: at most 4.20 system calls added ($(((sj - sb) * 100 / N))/100), none a madvise, clock or getpid ($sx): stat, getcwd, two writes"
# (One more when the first EXEC and the create's RESULT held back from before the loop
# do not fit in one page together: a large environment, as under make check.)
[ "$sw" -ge $((2 * N)) ] && [ "$sw" -le $((2 * N + 1)) ]
ok $? "posix_spawn in the spawner: two journal writes a spawn, the EXEC and the RESULT with the EXIT ($sw for $N)"

# A subshell's redirection (bash "( echo x > f )": the fork child creates the file, a
# truncation over an existing one preserves it first).  The child binds none of the
# shim's libc calls lazily (shim/init.c, prebind: getcwd alone, bound there, cost each
# child 9 page faults in ld.so's resolver and three libraries' symbol tables), and its
# first capture maps the thread scratch's hot part in one call (bbx_capture_ready_slow:
# 9 of its 14 pages, each a fault of its own before).
w=$(new_ws)
echo old >"$w/e"
SUB='( echo x > f1 ); ( echo y > f2 ); ( exec 3>e; echo q >&3 )'
(cd "$w" && LD_DEBUG=bindings LD_DEBUG_OUTPUT="$T_TMP/ldb" strace -f -e trace=madvise,openat,openat2,clone,clone3 -o "$T_TMP/sub.st" bbx-run --quiet --journal "$T_TMP/j.sub" -- bash -c "$SUB")
read -r nkid nbind npop nhead < <(python3 - "$T_TMP" <<'EOF2'
import glob, re, sys
t = sys.argv[1]
kids, created, pops = set(), set(), {}
parent, head, opened, pages = {}, {}, set(), {}
for line in open(t + "/sub.st"):
    m = re.match(r"(\d+) +(.*)", line)
    if not m:
        continue
    pid, call = m.groups()
    # "clone(...) = N", or, when a child's call came between, "<... clone resumed>...) = N"
    r = re.match(r"(?:clone3?\(|<\.\.\. clone3? resumed>).*= (\d+)$", call)
    if r:
        kids.add(r.group(1))
        parent[r.group(1)] = pid
    # the create, by openat2 relative to the checked directory (or openat without it)
    if call.startswith(("openat(", "openat2(")) and "O_CREAT" in call and '"/' not in call:
        created.add(pid)
    if call.startswith("openat(") and '/state"' in call:
        opened.add(pid)  # its next one-page madvise is the state's head, at map time
    s = re.match(r"madvise\((0x[0-9a-f]+), (\d+), MADV_POPULATE_WRITE", call)
    if s and int(s.group(2)) > 4096:
        pops[pid] = pops.get(pid, 0) + 1
    elif s:
        pages.setdefault(pid, set()).add(s.group(1))
        if pid in opened:
            head[pid] = s.group(1)
            opened.discard(pid)
subs = created & kids
nbind = 0
for f in glob.glob(t + "/ldb.*"):
    for line in open(f):
        b = re.match(r"\s*(\d+):\s+binding file \S*libbbxshim\.so", line)
        if b and b.group(1) in subs:
            nbind += 1
# the state's head page, mapped by the parent, populated in the child by one call
# (bbx_capture_ready_slow: it took a read fault, then a write fault)
nhead = sum(1 for p in subs if head.get(parent[p]) in pages.get(p, ()))
print(len(subs), nbind, sum(1 for p in subs if pops.get(p) == 1), nhead)
EOF2
)
diag "subshell redirections: $nkid children created a file, $nbind lazy bindings of the shim's calls in them, $npop mapped the scratch in one call"
[ "$nkid" -eq 3 ] && [ "$nbind" -eq 0 ]; ok $? "a subshell's redirection binds none of the shim's calls in the child ($nbind in $nkid children)"
[ "$nkid" -eq 3 ] && [ "$npop" -eq 3 ]; ok $? "a subshell's first capture maps the thread scratch in one call ($npop of $nkid children)"
[ "$nkid" -eq 3 ] && [ "$nhead" -eq 3 ]; ok $? "a subshell's first capture maps the state's head page in one call ($nhead of $nkid children)"

# A subshell's "> /dev/null" (shim/open.c, devnull_open): the null device is opened
# without O_TRUNC and checked by one fstat; no capture, so the child makes the scratch and
# the state's head page writable by no madvise and writes nothing to the journal.
# Before, 5 calls were added (the fork handler's getpid, the first capture's two
# madvises making 15 pages writable, the directory's stat, an lstat; openat2 for
# openat).  The shell first opens the run with a file of its own.
w=$(new_ws)
DN='echo a >made; for i in 1 2 3 4 5; do ( : >/dev/null ); done'
(cd "$w" && strace -f -o "$T_TMP/dnb.st" bash -c "$DN")
(cd "$w" && rm -f made && strace -f -o "$T_TMP/dnj.st" bbx-run --quiet --journal "$T_TMP/j.dn" -- bash -c "$DN")
dn_calls() {
	python3 - "$1" <<'EOF2'
import re, sys
kids, calls, extra, execs = set(), {}, {}, set()
for line in open(sys.argv[1]):
    m = re.match(r"(\d+) +(.*)", line)
    if not m or m.group(2).startswith(("<...", "+++", "---")):
        continue
    pid, call = m.groups()
    if re.match(r'(openat2?|open)\((AT_FDCWD, )?"/dev/null"', call):
        kids.add(pid)  # the subshells: the only processes that open it
    if call.startswith("execve("):
        execs.add(pid)
    calls[pid] = calls.get(pid, 0) + 1
    if call.startswith(("madvise(", "write(9")) or '"/dev/null"' in call and "openat2" in call:
        extra[pid] = extra.get(pid, 0) + 1
k = [p for p in kids if p not in execs]
print(len(k), sum(calls.get(p, 0) for p in k) * 100 // max(len(k), 1),
      sum(extra.get(p, 0) for p in k))
EOF2
}
read -r dnk dnb _ < <(dn_calls "$T_TMP/dnb.st")
read -r dnkj dnj dnx < <(dn_calls "$T_TMP/dnj.st")
diag "subshell > /dev/null: $dnb/100 system calls a child bare, $dnj/100 under bbx ($dnk, $dnkj children; $dnx madvise, journal write or openat2 in them)"
[ "$dnk" -eq 5 ] && [ "$dnkj" -eq 5 ] && [ "$dnx" -eq 0 ] && [ $((dnj - dnb)) -le 200 ]
ok $? "a subshell's > /dev/null: at most 2 system calls added (the fstat, the fork handler's getpid; $(((dnj - dnb) / 100)).$(printf %02d $(((dnj - dnb) % 100)))), no madvise, no journal write"

# A new program's first record goes out with its PROC in one write(2), the PROC encoded
# on the stack (journal/run.c, emit_first): touch, which creates its file and writes
# nothing else until its held-back RESULT at exit, makes two journal writes after its
# exec and maps no buffer for the PROC (before: three, and a 64 KiB mapping).  The shell
# writes the directory's DIRMETA first, so that no touch has one of its own.  The
# environment is the run's own and a few variables (make check's is large enough to
# vary); with a 10 KB variable the PROC does not fit the frame's 8 KiB and goes alone,
# from a mapping, as before.
first_run() { # ST JOURNAL [VAR=VALUE]: strace of touch a, b, c in a fresh workspace
	local w
	w=$(new_ws)
	(cd "$w" && env -i PATH="$PATH" HOME="$HOME" BBX_SHIM="$BBX_SHIM" BBX_STATE_DIR="$BBX_STATE_DIR" ${3:+"$3"} \
		strace -f -o "$1" bbx-run --quiet --journal "$2" -- sh -c ': >z; touch a; touch b; touch c')
}
first_count() { # ST: programs after their exec, journal writes each, 64 KiB mappings
	python3 - "$1" <<'EOF2'
import os, re, sys
after, writes, maps, touch = set(), {}, {}, set()
for line in open(sys.argv[1]):
    m = re.match(r"(\d+) +(.*)", line)
    if not m:
        continue
    pid, call = m.groups()
    if call.startswith("execve("):
        (touch.add if call.startswith('execve("/usr/bin/touch"') else touch.discard)(pid)
    if pid in touch and re.match(r"(<\.\.\. execve resumed>|execve\().*= 0$", call):
        after.add(pid)
    elif pid in after and call.startswith("write(%s," % os.environ["JFD"]):
        writes[pid] = writes.get(pid, 0) + 1
    elif pid in after and re.match(r"mmap\(NULL, 65536, PROT_READ\|PROT_WRITE, MAP_PRIVATE\|MAP_ANONYMOUS, -1", call):
        maps[pid] = maps.get(pid, 0) + 1
print(len(after), ",".join(str(writes.get(p, 0)) for p in sorted(after)) or "-", sum(maps.values()))
EOF2
}
first_run "$T_TMP/first.st" "$T_TMP/j.first"
read -r nfirst fwrites fmaps < <(first_count "$T_TMP/first.st")
diag "touch a/b/c: $nfirst programs after their exec, journal writes each: $fwrites; 64 KiB mappings: $fmaps"
[ "$nfirst" -eq 3 ] && [ "$fwrites" = "2,2,2" ] && [ "$fmaps" -eq 0 ]
ok $? "a new program's PROC goes out with its first record: touch makes 2 journal writes (PROC and CREATE, then its RESULT at exit), maps no PROC buffer ($fwrites; $fmaps)"
big=$(head -c 10000 /dev/zero | tr '\0' x)
first_run "$T_TMP/firstbig.st" "$T_TMP/j.firstbig" "BBX_T_BIG=$big"
read -r nbig bwrites bmaps < <(first_count "$T_TMP/firstbig.st")
nbigenv=$(python3 "$BBX_SRCDIR/tests/e2e/jdecode.py" "$T_TMP/j.firstbig/journal" 2>/dev/null |
	python3 -c '
import json, sys
big = "BBX_T_BIG=" + "x" * 10000
print(sum(1 for l in sys.stdin for r in [json.loads(l)]
          if r["type"] == "PROC" and r.get("exe", "").endswith("/touch") and big in r.get("env", [])))')
diag "with a 10 KB variable: journal writes each: $bwrites; 64 KiB mappings: $bmaps; touch PROCs holding the variable: $nbigenv"
[ "$nbig" -eq 3 ] && [ "$bwrites" = "3,3,3" ] && [ "$bmaps" -eq 3 ] && [ "$nbigenv" -eq 3 ]
ok $? "a PROC too big for the frame goes alone from a mapping, the variable in it ($bwrites; $bmaps; $nbigenv PROCs)"

# Files read whole are mapped with their pages in one call (MAP_POPULATE), not faulted in
# a window at a time: the compiled policy, in every process that maps it (policy/match.c:
# its 5 pages straddled two fault-around windows), and the journal in its readers
# (journal/reader.c, up to 256 MiB: bbx-log, bbx-undo, the seal).
w=$(new_ws)
(cd "$w" && strace -f -e trace=openat,mmap -o "$T_TMP/pop.st" bbx-run --quiet --journal "$T_TMP/j.pop" -- sh -c 'touch a; touch b')
strace -e trace=openat,mmap -o "$T_TMP/popl.st" bbx-log "$T_TMP/j.pop" >/dev/null
read -r npol npolpop njr njrpop < <(python3 - "$T_TMP/pop.st" "$T_TMP/popl.st" "$BBX_SRCDIR/tests/e2e" <<'EOF2'
import sys
sys.path.insert(0, sys.argv[3])
from stcalls import mappings
def maps(path, name):
    # (mmaps of the file opened read-only, those with MAP_POPULATE), per opening
    m = [fl for _, prot, fl, _, _ in mappings(path, name, "O_RDONLY") if prot == "PROT_READ"]
    return len(m), sum("MAP_POPULATE" in fl for fl in m)
print(*maps(sys.argv[1], "policy"), *maps(sys.argv[2], "journal"))
EOF2
)
diag "compiled policy mapped $npol times ($npolpop populated); journal mapped by bbx-log $njr times ($njrpop populated)"
[ "$npol" -ge 2 ] && [ "$npolpop" -eq "$npol" ] && [ "$njr" -ge 1 ] && [ "$njrpop" -eq "$njr" ]
ok $? "the compiled policy ($npolpop of $npol) and a journal read by bbx-log ($njrpop of $njr) are mapped with MAP_POPULATE"

# The state file is used by hash, never in order, so every mapping of it is advised
# MADV_RANDOM before its first fault: without it, the first fault read around it as far
# as the device's read_ahead_kb (8 MiB on the reference VM), allocating and zeroing the
# whole 4 MiB file in the page cache in every run, a no-op one included (journal/sys.h,
# bbx_sys_random_access; issue 5).  Seen two ways: every MAP_SHARED mapping of the
# state (bbx-run's, the lock's, each journaling process's) is followed by that advice on
# its address; and after a no-op transaction the page cache holds a few pages of the
# file, not all of them (fincore; not on tmpfs, whose fallocate allocates every page).
w=$(new_ws)
(cd "$w" && strace -f -e trace=openat,mmap,madvise -o "$T_TMP/rnd.st" bbx-run --quiet --journal "$T_TMP/j.rnd" -- sh -c 'touch a; (touch b)')
read -r nst nrnd < <(python3 - "$T_TMP/rnd.st" "$BBX_SRCDIR/tests/e2e" <<'EOF2'
import sys
sys.path.insert(0, sys.argv[2])
from stcalls import mappings
m = [(addr, after) for _, prot, fl, addr, after in mappings(sys.argv[1], "state", "O_RDWR")
     if prot == "PROT_READ|PROT_WRITE" and fl == "MAP_SHARED"]
n = len(m)
# the advice is the process's next call after the mmap, on the mapping's address
rnd = sum(bool(after) and after[0].startswith("madvise(%s, " % addr) and
          "MADV_RANDOM) = 0" in after[0] for addr, after in m)
print(n, rnd)
EOF2
)
diag "state file mapped $nst times, $nrnd of them advised MADV_RANDOM"
[ "$nst" -ge 3 ] && [ "$nrnd" -eq "$nst" ]
ok $? "every mapping of the state file is advised MADV_RANDOM ($nrnd of $nst)"
# ... and every opening of it to map it asks for O_NOATIME (journal/state.c, state_open):
# relatime would otherwise update its access time at each mapping, since every write
# fault on it moves its modification time, a dirty inode and, on ext4, a journal
# handle in every process that records.  (Its creation, O_CREAT, is not a mapping.)
read -r nop nna < <(awk '/openat\(AT_FDCWD, "[^"]*\/state", O_RDWR/ && !/O_CREAT/ {
	n++; if (/O_NOATIME/) a++ } END {print n + 0, a + 0}' "$T_TMP/rnd.st")
[ "$nop" -ge 3 ] && [ "$nna" -eq "$nop" ]
ok $? "every opening of the state file to map it is O_NOATIME ($nna of $nop)"
w=$(new_ws)
(cd "$w" && bbx-run --quiet --transaction --journal "$T_TMP/j.rnd2" -- true)
fstype=$(stat -f -c %T "$T_TMP/j.rnd2" 2>/dev/null || echo unknown)
if ! command -v fincore >/dev/null 2>&1; then
	skip "fincore (util-linux) not installed"
elif [ "$fstype" = tmpfs ]; then
	skip "journal on tmpfs: its fallocate puts every page in the page cache"
else
	read -r cached total < <(fincore --bytes --noheadings --output PAGES,SIZE "$T_TMP/j.rnd2/state")
	diag "after a no-op transaction ($fstype): $cached pages of the state file cached, file of $total bytes"
	[ -n "$cached" ] && [ "$cached" -le 16 ] && [ "$total" -ge $((1 << 20)) ]
	ok $? "a no-op transaction leaves $cached pages of the state file in the page cache, not all of it"
fi

# The seal (journal/seal.c) states every path the run touched, relative to its
# directory, opened once for the whole seal: git's objects name 256 shard directories in
# turn (a tmp_obj and the object it became, then the next object's shard), which the
# seal's 16 directories in least recently used order missed every time (an open and a
# close per object).  Here 64 directories, each given two new files in turn, three
# times: 64 opens, not 192.  Counted in bbx-run's own process (no -f: the seal runs
# there once the command has ended).  The table is 128 sets of 4 chosen by a hash of
# the name, which the workspace's random name changes: a set that draws 5 or more of
# these directories (about 3 runs in 100) reopens them each round, up to some 30 more.
w=$(new_ws)
(cd "$w" && strace -e trace=openat -o "$T_TMP/seal.st" bbx-run --quiet --journal "$T_TMP/j.seal" -- \
	sh -c 'for d in $(seq 64); do mkdir d$d; done; for r in 1 2 3; do for d in $(seq 64); do : >d$d/t$r; : >d$d/f$r; done; done')
nso=$(grep -c 'O_PATH|O_DIRECTORY' "$T_TMP/seal.st")
nfin=$(bbx-log --json "$T_TMP/j.seal" | grep -c '"type": *"FINAL"')
diag "the seal of 64 directories x 6 new files: $nso directories opened, $nfin FINAL records"
[ "$nfin" -eq $((64 + 64 * 6)) ]; ok $? "the seal writes a FINAL for each directory and file made ($nfin of $((64 + 64 * 6)))"
[ "$nso" -ge 64 ] && [ "$nso" -le 100 ]; ok $? "the seal opens a directory about once, whatever the order its paths come in ($nso opens for 64 directories, 193 before)"

# A run starts its command with one exec: bbx-run's child loads the shim with dlopen
# and executes the command through the shim's execvp (tools/bbx-run.c,
# exec_through_shim), not by executing bbx-run a second time under it (a program start,
# 3-4 ms on a slow VM).  The command's EXEC record is still the shim's, with its pid.
w=$(new_ws)
(cd "$w" && strace -f -e trace=execve -o "$T_TMP/ex.st" bbx-run --quiet --journal "$T_TMP/j.ex" -- /bin/true)
nexec=$(grep -c 'execve(.*= 0$' "$T_TMP/ex.st")
diag "successful execve calls of bbx-run -- /bin/true: $nexec"
[ "$nexec" -eq 2 ]; ok $? "bbx-run starts its command with one exec after its own ($nexec in all)"
python3 "$BBX_SRCDIR/tests/e2e/jdecode.py" "$T_TMP/j.ex/journal" >"$T_TMP/ex.json"
python3 - "$T_TMP/ex.json" "$T_TMP/ex.st" <<'PY'
import json, re, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
pid = [int(l.split()[0]) for l in open(sys.argv[2]) if re.search(r'execve\("/bin/true".*= 0$', l)]
ex = [r for r in recs if r["type"] == "EXEC" and r.get("exe") == "/bin/true"]
sys.exit(0 if len(ex) == 1 and pid and ex[0]["hpid"] == pid[0] else 1)
PY
ok $? "its EXEC record is written by the shim in the process that became the command"
# And in instructions, where a count of system calls cannot tell the paths apart: a stat
# cleared by the read filter (shim.h, bbx_rfilt) makes the same system call as one the
# general path decides.  callgrind's count of one call (N=2000 minus N=1000, so the
# program's start and the shim's loading cancel out), under the default policy with
# $HOME in this test's directory: the workspace and every deny_read root then share
# their first components, the common layout (a project and ~/.ssh under /home/ann).  The
# same path with a "/./" among the components it shares with the roots must take the
# general path; the filter's must cost less than half of that.
if command -v valgrind >/dev/null 2>&1; then
	RL="$BBX_BUILDDIR/tests/progs/readloop"
	CGH="$T_TMP/cghome"
	mkdir -p "$CGH/.ssh"
	echo secret >"$CGH/.ssh/id_rsa"
	cgw=$(new_ws)
	echo x >"$cgw/file"
	# percall PATH: instructions per stat of PATH (empty when a run failed).
	percall() {
		local n c=()
		for n in 1000 2000; do
			c+=("$(cd "$cgw" && HOME="$CGH" bbx-run --quiet --journal "$T_TMP/j.cg.$n.$RANDOM" -- \
				valgrind --tool=callgrind --callgrind-out-file=/dev/null "$RL" stat $n "$1" 2>&1 |
				sed -n 's/.*Collected : \([0-9]*\).*/\1/p')")
		done
		[ -n "${c[0]}" ] && [ -n "${c[1]}" ] && echo $(((c[1] - c[0]) / 1000))
	}
	fast=$(percall "$cgw/file")
	slowp="${T_TMP}/./${cgw#"$T_TMP"/}/file"
	slow=$(percall "$slowp")
	diag "instructions per stat, the workspace under \$HOME: $cgw/file ${fast:-?}, $slowp ${slow:-?}"
	[ -n "$fast" ] && [ -n "$slow" ]; ok $? "stat under callgrind under bbx-run: both paths counted"
	[ -n "$fast" ] && [ -n "$slow" ] && [ $((2 * fast)) -lt "$slow" ]
	ok $? "stat of a path sharing its first components with the deny_read roots: cleared by the read filter (${fast:-?} instructions, the general path ${slow:-?})"
	ufast=$(percall /usr/bin/env)
	uslow=$(percall //usr/bin/env)
	diag "instructions per stat: /usr/bin/env ${ufast:-?}, //usr/bin/env ${uslow:-?}"
	[ -n "$ufast" ] && [ -n "$uslow" ] && [ $((2 * ufast)) -lt "$uslow" ]
	ok $? "stat of a path whose first component no root has: cleared by the read filter (${ufast:-?} instructions, the general path ${uslow:-?})"
	# The write decisions' cache (shim/policy.c, wcache_hit) in use, which a count of
	# system calls cannot see: a shell making 200 files in one directory takes 200 write
	# decisions, and the walk of the policy's roots (bbx_pol_write) runs only for those
	# taken before the process is busy enough to map the cache's table (WCACHE_AFTER)
	# and for a miss.  callgrind's call counts, from any caller.
	cgd=$(new_ws)
	(cd "$cgd" && bbx-run --quiet --journal "$T_TMP/j.cgw" -- valgrind --tool=callgrind \
		--callgrind-out-file="$T_TMP/cgw.out" sh -c 'i=0; while [ $i -lt 200 ]; do : >w$i; i=$((i + 1)); done') \
		>"$T_TMP/cgw.log" 2>&1
	read -r wh pw < <(python3 "$BBX_SRCDIR/tests/e2e/cgcalls.py" "$T_TMP/cgw.out" write_hook bbx_pol_write 2>/dev/null)
	diag "200 creations in one directory: ${wh:-?} write decisions, ${pw:-?} walks of the roots"
	[ -f "$cgd/w199" ] && [ "${wh:-0}" -ge 200 ] && [ "${pw:-999}" -le 50 ]
	ok $? "a shell's 200 creations in one directory: at most 50 of its ${wh:-?} write decisions walk the policy's roots (${pw:-?}); the rest come from the cache"
else
	for _ in 1 2 3 4; do skip "valgrind not installed"; done
fi
finish
