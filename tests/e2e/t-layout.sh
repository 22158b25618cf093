#!/bin/bash
# SPDX-License-Identifier: MIT
# t-layout.sh - what keeps the shim cheap to start and to fork (issue 5, spawn), held as
# structure rather than time: the code a fork child runs before its exec, and a new
# process runs at start and exit, lies in .text.bbx_hot (shim/hot.ld) and does not call
# __errno_location, seen by callgrind; the capture path lies in .text.bbx_warm;
# the loader writes one data page; the policy's page tables reach fork children; a
# capture's scratch comes populated, the one mapped for fork children does not; the
# variables most processes touch lie in the data segment's page.
. "${BBX_SRCDIR:?is set by make check (tests/local.mk)}/tests/e2e/lib.sh" || exit 99
plan 15

SO="$BBX_SHIM"
# 1. Every function named in hot.ld that the shim has lies in the section that names it
# (.text.bbx_hot: the fork child and a new process; .text.bbx_warm: the capture path): a
# name whose section was renamed (a clone suffix, a new attribute) would otherwise fall
# out silently.
section_names() { # SECTION: the function names listed in hot.ld's block for it
	awk -v s="$1" '$1 == s && $2 == ":" {f = 1; next} f && /^\t}/ {f = 0} f' "$BBX_SRCDIR/shim/hot.ld" |
		grep -oE '\.text\.[A-Za-z0-9_.]+' | grep -v '\.\*$' |
		sed -E 's/^\.text\.(startup\.|exit\.|unlikely\.)?//' | sort -u
}
section_at() { # SECTION: its address and size (hex), from the shim's section headers
	readelf -SW "$SO" | sed -n "s/.*\] \\$1 *[A-Z]* *\([0-9a-f]*\) *[0-9a-f]* *\([0-9a-f]*\).*/\1 \2/p"
}
nm "$SO" >"$T_TMP/nm"
out="" n=0 missing=""
for sec in .text.bbx_hot .text.bbx_warm; do
	read -r lo size < <(section_at "$sec")
	[ -n "${lo:-}" ] || { missing="$missing $sec"; continue; }
	for f in $(section_names "$sec"); do
		a=$(awk -v f="$f" '$3 == f && ($2 == "t" || $2 == "T") {print $1; exit}' "$T_TMP/nm")
		[ -n "$a" ] || continue # inlined everywhere: nothing to place
		n=$((n + 1))
		(((16#$a) >= (16#$lo) && (16#$a) < (16#$lo) + (16#$size))) || out="$out $f@$a($sec)"
	done
	diag "$sec at $lo, 0x$size bytes"
done
diag "hot.ld names $n functions of the shim; missing sections:${missing:- none}; outside their section:${out:- none}"
[ -z "$out" ] && [ -z "$missing" ] && [ "$n" -ge 150 ]
ok $? "hot.ld: the $n functions it names lie in the section that names them"

# 2. The data segment's file-backed part is one page: the loader writes it whole
# (relocations, .dynamic, the zeroed tail before .bss); a second page is two more page
# faults in every process (a pointer table's relocations once took one).
read -r off fsz < <(readelf -lW "$SO" | awk '$1 == "LOAD" && $7 ~ /W/ {print $2, $5; exit}')
diag "writable LOAD segment: offset $off, $fsz bytes from the file; $(readelf -rW "$SO" | grep -c R_X86_64_RELATIVE) relative relocations"
[ -n "$off" ] && [ $(((off % 4096) + fsz)) -le 4096 ]
ok $? "the data segment the loader writes is one page"

# 2b. The shim's thread-local variables use the initial-exec model (a preloaded object's
# TLS is static): one extern declaration without tls_model("initial-exec") made its users
# general-dynamic, and the object then needed ld-linux-x86-64.so.2 for __tls_get_addr -
# one more NEEDED entry, version check and lazy slot in every process (~1,000 loader
# instructions a start, callgrind of /bin/true), though the linker relaxed every call.
needed=$(readelf -dW "$SO" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
diag "NEEDED: $needed"
[ "$needed" = "libc.so.6 " ] && ! readelf -rW "$SO" | grep -q __tls_get_addr
ok $? "the shim needs libc.so.6 alone, and no __tls_get_addr"

# 3, 4. callgrind: every shim function run in a shell's fork child (from its atfork
# handler to the exec), and in the program the child became, lies in .text.bbx_hot.  The
# run first executes the program once, so that the policy's first look at it (an open of
# the file, once per program and run) is not in the profile.  The command line is a link
# line's kind: " /usr" in it takes the exec rules past their needles (has_literal) and
# its paths take redaction's scanner through its cases.
if command -v valgrind >/dev/null 2>&1 && command -v readelf >/dev/null 2>&1; then
	mkdir "$T_TMP/cg"
	bbx-run --quiet --journal "$T_TMP/j.cg" -- bash -c "/bin/true; valgrind -q --tool=callgrind \
		--dump-before=atfork_child --dump-before=execve --trace-children=yes \
		--callgrind-out-file=$T_TMP/cg/cg.%p bash -c 'for i in 1 2 3; do /bin/true -o a.out -L/usr/lib /usr/lib/crt1.o ./a/b.o --x=y; done; :'" \
		2>"$T_TMP/cg.err"
	ok $? "bash under callgrind under bbx-run"
	python3 "$BBX_SRCDIR/tests/e2e/hotcheck.py" "$SO" "$T_TMP"/cg/cg.* >"$T_TMP/hot.out" 2>&1
	rc=$?
	diag "$(cat "$T_TMP/hot.out")"
	ok $rc "fork child and new process: the shim functions they run lie in .text.bbx_hot, none calls __errno_location"
else
	skip "valgrind or readelf not installed"
	skip "valgrind or readelf not installed"
fi

# 5, 6. The policy after a fork: still read-only, and holding the one copied page that
# makes fork copy its page tables (bbx_pol_share_with_children); none before.
cat >"$T_TMP/pol.py" <<'PY'
import os, re
def policy():
    found, cur = [], None
    for line in open("/proc/self/smaps"):
        m = re.match(r"^[0-9a-f]+-[0-9a-f]+ (\S+) \S+ \S+ \S+\s*(\S*)", line)
        if m:
            cur = m.groups()
        elif cur and cur[1].endswith("/policy") and line.startswith("Anonymous:"):
            found.append("%s %s" % (cur[0], line.split()[1]))
    return ",".join(found) or "none"
open("made", "w").close()  # a record: the run and its policy are open
print("before", policy())
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
print("after", policy())
PY
w=$(new_ws)
(cd "$w" && bbx-run --quiet --journal "$T_TMP/j.pol" -- python3 "$T_TMP/pol.py") >"$T_TMP/pol.out" 2>&1
sed "s/^/# /" "$T_TMP/pol.out" >&2
grep -qx 'before r--p 0' "$T_TMP/pol.out"
ok $? "policy before the first fork: mapped read-only, no copied page"
grep -qx 'after r--p 4' "$T_TMP/pol.out"
ok $? "policy after it: still read-only, one copied page (fork copies its page tables)"

# 7, 8. The thread scratch: the mapping that appears with a process's first record has
# its hot part resident (journal/capture.h, BBX_SCRATCH_HOT: its first 9 pages, made
# writable in one call instead of 8 or 9 page faults for an rm or a create) and its 5
# cold pages not (a create writes none of them), and the one that appears with a fork
# before any record has none (the fork
# handler maps it for the children to inherit: populating it would cost every forking
# shell what its children never use).  The scratch is found as the run of 14 pages
# newly mapped (it may merge with a neighbouring mapping), its pages' presence read
# from /proc/self/pagemap.
cat >"$T_TMP/scr.py" <<'PY'
import os, sys
PG = os.sysconf("SC_PAGE_SIZE")
def pages():
    got = set()
    for line in open("/proc/self/maps"):
        lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
        got.update(range(lo // PG, hi // PG))
    return got
def present(pg):
    with open("/proc/self/pagemap", "rb") as f:
        f.seek(pg * 8)
        return int.from_bytes(f.read(8), "little") >> 63
before = pages()
if sys.argv[1] == "record":
    open("made", "w").close()
else:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
new = sorted(pages() - before)
runs, run = [], []
for pg in new:  # runs of newly mapped pages (a new mapping may merge with an old one)
    if run and pg != run[-1] + 1:
        runs.append(run)
        run = []
    run.append(pg)
if run:
    runs.append(run)
out = ["%x:%d/%d:%s" % (r[0] * PG, sum(present(p) for p in r), len(r),
                        "".join(str(present(p)) for p in r)) for r in runs if len(r) == 14]
print(sys.argv[1], " ".join(out) or "none")
PY
# In about one run in four the scratch lands beside another mapping made in the same
# call and merges with it (where ASLR put them): no run of 14 pages then, "none".  Each
# probe is tried up to 4 times (ASLR places the mappings anew), and the first answer
# that names a run of 14 counts.
w=$(new_ws)
: >"$T_TMP/scr.out"
for mode in record fork; do
	for try in 1 2 3 4; do
		rm -rf "$T_TMP/j.scr.$mode"
		(cd "$w" && bbx-run --quiet --journal "$T_TMP/j.scr.$mode" -- python3 "$T_TMP/scr.py" $mode) \
			>"$T_TMP/scr.one" 2>&1
		grep -q " none$" "$T_TMP/scr.one" || break
		sed "s/^/# (try $try) /" "$T_TMP/scr.one" >&2
	done
	cat "$T_TMP/scr.one" >>"$T_TMP/scr.out"
done
sed "s/^/# /" "$T_TMP/scr.out" >&2
grep -qE '^record [0-9a-f]+:9/14:11111111100000$' "$T_TMP/scr.out"
ok $? "a capture's scratch (14 pages): its 9 hot pages resident after the first record, its 5 cold ones not"
grep -qE '^fork [0-9a-f]+:0/14:0+$' "$T_TMP/scr.out"
ok $? "the scratch the fork handler maps for the children has no page resident"

# 9. The variables marked BBX_HOT (journal/hot.h) lie in the data segment's file-backed
# page, which the loader writes in every process, not in .bss: a name that lost the mark,
# or a section the default linker script stopped gathering into .data, fails here.
read -r vaddr filesz < <(readelf -lW "$SO" | awk '$1 == "LOAD" && $7 ~ /W/ {print $3, $5; exit}')
nm "$SO" >"$T_TMP/nm.hot"
hot=$(grep -hE '^BBX_HOT ' "$BBX_SRCDIR"/journal/*.c "$BBX_SRCDIR"/shim/*.c "$BBX_SRCDIR"/policy/*.c |
	sed -E 's/[;=].*//; s/\[.*//; s/\).*//' | tr ',' '\n' | grep -oE '[A-Za-z_][A-Za-z0-9_]*[[:space:]]*$' | sort -u)
out="" n=0
for v in $hot; do
	a=$(awk -v f="$v" '$3 == f {print $1; exit}' "$T_TMP/nm.hot")
	[ -n "$a" ] || continue # unused in the shim (a tool's variable)
	n=$((n + 1))
	(((16#$a) >= vaddr && (16#$a) < vaddr + filesz)) || out="$out $v@$a"
done
diag "$n BBX_HOT variables of the shim; outside the data segment's file-backed part:${out:- none}"
[ -z "$out" ] && [ "$n" -ge 15 ]
ok $? "the BBX_HOT variables lie in the page the loader writes"

# The run (shim/init.c, bbx_run) starts on a page of its own, in .lbss, after .bss: its
# small fields and the head of its directory's path share that page (the writer keeps no
# copy of the path: journal/writer.h; it had the next page to itself).  And
# .bss keeps its own alignment, so that its head (crtstuff's exit flag, the init states)
# stays in the data segment's file-backed page.
run=$(awk '$3 == "bbx_run" {print $1; exit}' "$T_TMP/nm.hot")
bss=$(readelf -SW "$SO" | awk '{for (i = 1; i < NF; i++) if ($i == ".bss") {print $(i + 2); exit}}')
diag "bbx_run at 0x$run, .bss at 0x$bss, the data segment's file part 0x$(printf %x $((vaddr))) + $((filesz))"
[ -n "$run" ] && [ -n "$bss" ] && [ $((16#$run % 4096)) -eq 0 ] && [ $((16#$bss)) -lt $(((vaddr / 4096 + 1) * 4096)) ]
ok $? "bbx_run starts on a page boundary, and .bss where the loader's page still holds its head"
# Every process writes the start-up arena's head (BBX_JOURNAL=, LD_PRELOAD=, its argv:
# shim/init.c): what of it the loader's page holds is written for free, and past that
# page is one more fault in every process (a spawn loop: 104.6 against 103.4 a process
# when 24 bytes more of BBX_HOT left it 64 bytes).
arena=$(awk '$3 == "bbx_env_arena" {print $1; exit}' "$T_TMP/nm.hot")
room=$((((vaddr / 4096 + 1) * 4096) - 16#$arena))
diag "the start-up arena's room in the loader's page: $room bytes"
[ "$room" -ge 160 ]; ok $? "the start-up arena has at least 160 bytes in the loader's page ($room)"

# A process that never journals maps none of bbx_run: its closes, dup2s and
# close_ranges, and the policy's read filter, ask bbx_status first (shim.h,
# bbx_journal_fd); reading the descriptor's number cost each such process a fault on
# the zero page.  Once it journals, the run's first page is there, and not the next.
cat >"$T_TMP/run.py" <<'PY'
import os, sys
PG = os.sysconf("SC_PAGE_SIZE")
off = int(sys.argv[1], 16)
base = None
for line in open("/proc/self/maps"):
    f = line.split()
    if f[-1].endswith("libbbxshim.so") and int(f[2], 16) == 0:
        base = int(f[0].split("-")[0], 16)
        break
def present(addr):
    with open("/proc/self/pagemap", "rb") as m:
        m.seek(addr // PG * 8)
        return int.from_bytes(m.read(8), "little") >> 63
def both():
    return "%d%d" % (present(base + off), present(base + off + PG))
fd = os.open("/etc/hostname", os.O_RDONLY)
os.dup2(fd, 50)
os.close(50)
os.close(fd)
os.stat("/etc/hostname")
print("reader", both())
open("made", "w").close()
print("writer", both())
PY
w=$(new_ws)
(cd "$w" && bbx-run --quiet --journal "$T_TMP/j.run" -- python3 -B "$T_TMP/run.py" "$run") >"$T_TMP/run.out" 2>&1
sed "s/^/# /" "$T_TMP/run.out" >&2
grep -qx "reader 00" "$T_TMP/run.out"
ok $? "a process that only reads, closes and dup2s maps no page of bbx_run"
grep -qx "writer 10" "$T_TMP/run.out"
ok $? "one that journals has its first page, and not the next"
# 14. The tools link libseccomp and libinih statically when configure found the archives
# (configure.ac, BBX_STATIC_DEP; BBX_TOOL_LIBS is what it chose): bbx-run starts before
# every command, and each shared library is an open, four mmaps and ~5 page faults more.
# Either way the binary must match the choice: a build that fell back to the shared
# library while configure reported the archive fails here.
bad=""
for lib in seccomp inih; do
	case " ${BBX_TOOL_LIBS:-} " in
	*"/lib$lib.a "*) want=static ;;
	*) want=shared ;;
	esac
	if readelf -dW "$BBX_BUILDDIR/tools/bbx-run" | grep -q "NEEDED.*\[lib$lib\.so"; then
		got=shared
	else got=static; fi
	diag "lib$lib: configure chose $want, bbx-run has it $got"
	[ "$want" = "$got" ] || bad="$bad lib$lib"
done
[ -z "$bad" ]
ok $? "bbx-run links libseccomp and libinih as configure chose (static when the archives are installed)"
finish
