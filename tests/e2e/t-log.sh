#!/bin/bash
# SPDX-License-Identifier: MIT
# t-log.sh - bbx-log, the forensic view: real programs under bbx-run, then the JSON,
# the process tree, the totals, the filters and the OCSF output checked against what
# the test knows happened (pids the processes wrote down themselves, argv, paths,
# results).  The record types the shim may not write yet (DENY, PROC, EXIT, NET,
# RESOLVE) come from a journal built by tests/progs/mkjournal with known fields.
. "${BBX_SRCDIR:?is set by make check (tests/local.mk)}/tests/e2e/lib.sh" || exit 99
PY=${PYTHON3:-python3}
plan 47

W=$(new_ws)
J="$T_TMP/j"
printf 'hello\n' >"$W/a"
printf 'one\ntwo\n' >"$W/t"
printf '12345\n' >"$W/w"
(cd "$W" && bbx-run --journal "$J" -- bash -c '
	echo $$ > sh.pid
	cp a b
	sed -i s/hello/bye/ a
	(echo $BASHPID > sub.pid; echo sub > c)
	echo x | (echo $BASHPID > pipe.pid; cat > d)
	rm b
	mkdir dd
	mv c dd/c2
	rmdir dd 2>/dev/null
	chmod 755 t
	echo rewritten > w
	python3 -c "import os; open(os.fsencode(\"bad\") + b\"\\xff\\n\\\"q\", \"w\").write(\"z\")"
	true') >"$T_TMP/run.out" 2>&1
ok $? "the workload ran under bbx-run"
SH=$(cat "$W/sh.pid") SUB=$(cat "$W/sub.pid") PIPE=$(cat "$W/pipe.pid")

bbx-log --json "$J" >"$T_TMP/j.json" 2>"$T_TMP/j.err"
ok $? "bbx-log --json exits 0"

# check NAME PYTHON-EXPR: the expression, over ev (the list of JSON events), is true.
check() {
	local name=$1 expr=$2 file=${3:-$T_TMP/j.json}
	W="$W" SH="$SH" SUB="$SUB" PIPE="$PIPE" "$PY" - "$file" "$expr" <<'EOF' >"$T_TMP/check.out" 2>&1
import json, os, sys
raw = open(sys.argv[1], 'rb').read()
raw.decode('utf-8')                       # the output is valid UTF-8, whatever the paths
ev = [json.loads(l) for l in raw.decode('utf-8').splitlines()]
W, SH, SUB, PIPE = os.environ['W'], int(os.environ['SH']), int(os.environ['SUB']), int(os.environ['PIPE'])
def one(pred):
    m = [e for e in ev if pred(e)]
    assert len(m) == 1, "%d matches" % len(m)
    return m[0]
def b(s): return s.encode('utf-8', 'surrogateescape')
ok = eval(sys.argv[2])
if not ok:
    print("false:", sys.argv[2]); sys.exit(1)
EOF
	local rc=$?
	[ $rc -ne 0 ] && sed 's/^/# /' "$T_TMP/check.out" >&2
	ok $rc "$name"
}

check "no RESULT is an event of its own: each is folded into its record" \
	'all(e["type"] != "RESULT" for e in ev)'
check "cp: one EXEC by a child of the shell, argv and cwd as run" \
	'(lambda x: x["argv"] == ["cp", "a", "b"] and x["ppid"] == SH and x["cwd"] == W and x["program"] == "bash")(one(lambda e: e["type"] == "EXEC" and e.get("exe", "").endswith("/cp")))'
check "cp's CREATE of b: same pid as its EXEC, program cp, result a descriptor" \
	'(lambda x, c: c["pid"] == x["pid"] and c["program"] == "cp" and c["kind"] == "file" and c["ret"] >= 0 and c["result"] == "= %d" % c["ret"] and "errno" not in c)(one(lambda e: e["type"] == "EXEC" and e.get("exe", "").endswith("/cp")), one(lambda e: e["type"] == "CREATE" and e["path"] == W + "/b"))'
check "sed -i: argv, and its rename of the temporary over a, by program sed" \
	'(lambda x, r: x["argv"] == ["sed", "-i", "s/hello/bye/", "a"] and r["pid"] == x["pid"] and r["program"] == "sed" and os.path.dirname(r["path"]) == W)(one(lambda e: e["type"] == "EXEC" and e.get("exe", "").endswith("/sed")), one(lambda e: e["type"] == "RENAME" and e.get("path2") == W + "/a"))'
check "sed's replaced a: PRESERVE how=link with the old size in stat" \
	'(lambda p: p["how"] == "link" and p["object"] and p["stat"]["size"] == 6 and p["program"] == "sed")(one(lambda e: e["type"] == "PRESERVE" and e["path"] == W + "/a"))'
check "the subshell's own pid wrote sub.pid and c; its parent is the shell" \
	'all(one(lambda e: e["type"] == "CREATE" and e["path"] == W + "/" + n)["pid"] == SUB for n in ("sub.pid", "c")) and one(lambda e: e["type"] == "CREATE" and e["path"] == W + "/c")["ppid"] == SH'
check "the pipeline element wrote pipe.pid; d was made by it or its child (cat)" \
	'one(lambda e: e["type"] == "CREATE" and e["path"] == W + "/pipe.pid")["pid"] == PIPE and (lambda d: d["pid"] == PIPE or d["ppid"] == PIPE)(one(lambda e: e["type"] == "CREATE" and e["path"] == W + "/d"))'
check "rm b: a delete by program rm, ppid the shell" \
	'(lambda p: p["program"] == "rm" and p["verb"] == "delete" and p["ppid"] == SH and p["op"] in ("unlinkat", "unlink"))(one(lambda e: e["type"] == "PRESERVE" and e["path"] == W + "/b"))'
check "mkdir dd: CREATE kind dir, result ok" \
	'(lambda c: c["kind"] == "dir" and c["result"] == "ok" and c["ret"] == 0 and c["program"] == "mkdir")(one(lambda e: e["type"] == "CREATE" and e["path"] == W + "/dd"))'
check "mv c dd/c2: RENAME by program mv" \
	'one(lambda e: e["type"] == "RENAME" and e["path"] == W + "/c")["path2"] == W + "/dd/c2" and one(lambda e: e["type"] == "RENAME" and e["path"] == W + "/c")["program"] == "mv"'
check "rmdir of a non-empty dir: the RMDIR carries errno ENOTEMPTY" \
	'(lambda r: r["errno"] == "ENOTEMPTY" and r["result"] == "ENOTEMPTY" and r["ret"] == -1 and r["program"] == "rmdir")(one(lambda e: e["type"] == "RMDIR" and e["path"] == W + "/dd"))'
check "chmod 755 t: META changes mode, old mode 0644 in stat" \
	'(lambda m: "mode" in m["changes"] and m["stat"]["mode"] & 0o7777 == 0o644 and m["program"] == "chmod")(one(lambda e: e["type"] == "META" and e["path"] == W + "/t"))'
check "a name with 0xff, a newline and a quote: the JSON escape gives its bytes back" \
	'one(lambda e: e["type"] == "CREATE" and b(e["path"]) == os.fsencode(W) + b"/bad\xff\n\"q")["program"].startswith("python3")'
grep -q '\\udcff\\n\\"q' "$T_TMP/j.json"
ok $? "the byte 0xff is written as the escape \\udcff (next to \\n and \\\")"
check "time, time_ns and mono_ns agree and increase with file order" \
	'all(e["time"].startswith(__import__("time").strftime("%Y-%m-%dT%H:%M:%S", __import__("time").gmtime(e["time_ns"] // 10**9))) and e["time"].endswith("%09dZ" % (e["time_ns"] % 10**9)) for e in ev) and all(type(e["mono_ns"]) is int and e["uid"] == os.getuid() for e in ev)'

# ---- the default view
bbx-log --no-pager "$J" >"$T_TMP/text" 2>&1
N_TEXT=$(wc -l <"$T_TMP/text")
grep -qE "^[0-9:.]+ [0-9]+ rmdir rmdir rmdir $W/dd ENOTEMPTY\$" "$T_TMP/text"
ok $? "text: the failed rmdir reads 'TIME PID rmdir rmdir rmdir PATH ENOTEMPTY'"
grep -qF "$W/bad\\xff\\x0a\"q" "$T_TMP/text"
ok $? "text: undecodable and control bytes are escaped as \\xNN"
! grep -q $'\033' "$T_TMP/text" && bbx-log --color=always "$J" | grep -q $'\033\\[' &&
	! NO_COLOR=1 bbx-log --color=auto "$J" | grep -q $'\033'
ok $? "colour: none to a pipe or with NO_COLOR, ANSI with --color=always"

# on a terminal (script(1) gives one): paged through $PAGER, coloured unless NO_COLOR
if command -v script >/dev/null; then
	# The pager writes what it received to a file: a terminal's output can be cut short
	# when script(1) sees its child exit before the pty is drained (seen under load).
	script -qec "PAGER='sed s/^/PAGED:/ >$T_TMP/tty1' bbx-log '$J'" /dev/null >/dev/null 2>&1
	NO_COLOR=1 script -qec "PAGER='sed s/^/PAGED:/ >$T_TMP/tty2' bbx-log '$J'" /dev/null >/dev/null 2>&1
	# Read off the pty itself: under load script(1) can exit before draining it, so
	# up to three tries (the product's behaviour is the same each time).  (The check
	# once read '\033' inside single quotes, which grep takes for the text "033": any
	# timestamp or pid with 033 in it failed the test.)
	for _ in 1 2 3; do
		script -qec "bbx-log --no-pager --color=never '$J'" /dev/null >"$T_TMP/tty3" 2>&1
		[ "$(wc -l <"$T_TMP/tty3")" -eq "$N_TEXT" ] && break
	done
	[ "$(grep -c '^PAGED:' "$T_TMP/tty1")" -eq "$N_TEXT" ] && grep -q $'\033\\[' "$T_TMP/tty1" &&
		[ "$(grep -c '^PAGED:' "$T_TMP/tty2")" -eq "$N_TEXT" ] && ! grep -q $'\033' "$T_TMP/tty2" &&
		! grep -q -e 'PAGED:' -e $'\033' "$T_TMP/tty3" && [ "$(wc -l <"$T_TMP/tty3")" -eq "$N_TEXT" ]
	rc=$?
	[ $rc -ne 0 ] && diag "text $N_TEXT lines; paged $(grep -c '^PAGED:' "$T_TMP/tty1") and $(grep -c '^PAGED:' "$T_TMP/tty2"); tty $(wc -l <"$T_TMP/tty3");" \
		"colour in tty1: $(grep -c $'\033\\[' "$T_TMP/tty1"), in tty2: $(grep -c $'\033' "$T_TMP/tty2"), PAGED/ESC in tty3: $(grep -c -e 'PAGED:' -e $'\033' "$T_TMP/tty3")" \
		"first lines: $(head -c 300 "$T_TMP/tty1" | od -c | head -5 | tr '\n' ' ')"
	ok $rc "a terminal: every line through PAGER, in colour; NO_COLOR: none; --no-pager --color=never"
else
	skip "script(1) not installed"
fi

# ---- tree
bbx-log --tree "$J" >"$T_TMP/tree"
grep -qE "^\`- $SH bash " "$T_TMP/tree" && grep -qE "^   [|\`]- $SUB bash .*creates=2" "$T_TMP/tree" &&
	grep -qE "^   [|\`]- $PIPE " "$T_TMP/tree"
ok $? "--tree: the shell under bbx-run, the subshell (2 creates) and the pipeline under the shell"
grep -qE "^   [|\`]- [0-9]+ rm b  \[[^]]*\] deletes=1 execs=1\$" "$T_TMP/tree" &&
	grep -qE "^   [|\`]- [0-9]+ sed -i s/hello/bye/ a " "$T_TMP/tree" && grep -qE "^\`- $SH .*\[exit 0\]" "$T_TMP/tree"
ok $? "--tree: each child's argv and counts; the command's exit status"
bbx-log --tree --json "$J" >"$T_TMP/tree.json"
check "--tree --json: depth and ppid of the shell, subshell and pipeline" \
	'(lambda d: d[SH]["depth"] == 1 and d[SUB]["depth"] == 2 and d[SUB]["ppid"] == SH and d[PIPE]["ppid"] == SH and d[SH]["exit_code"] == 0)({e["pid"]: e for e in ev})' \
	"$T_TMP/tree.json"

# ---- stats
bbx-log --stats --json "$J" >"$T_TMP/stats.json"
check "--stats: preserved: a by link (6 bytes), w by copy or reflink (6 bytes); b was the run's own" \
	'(lambda p: p["link"] == {"count": 1, "bytes": 6} and p["copy"]["count"] + p["reflink"]["count"] == 1 and p["copy"]["bytes"] + p["reflink"]["bytes"] == 6)(ev[0]["preserved"])' "$T_TMP/stats.json"
N_CREATE=$(grep -c '"type":"CREATE"' "$T_TMP/j.json")
N_EV=$(wc -l <"$T_TMP/j.json")
check "--stats: event and CREATE totals match the JSON lines; 1 failed call; sealed" \
	"ev[0]['events'] == $N_EV and ev[0]['by_type']['CREATE'] == $N_CREATE and ev[0]['failed'] == 1 and ev[0]['sealed'] and ev[0]['by_op']['renameat2'] + ev[0]['by_op'].get('rename', 0) >= 2" \
	"$T_TMP/stats.json"
check "--stats: top programs and paths" \
	'["sed", 5] in [list(x) for x in ev[0]["top_programs"]] or any(p == "sed" for p, n in ev[0]["top_programs"])' "$T_TMP/stats.json"
bbx-log --stats "$J" | grep -qE "^ +1  link \(6 bytes\)\$"
ok $? "--stats (text): '1  link (6 bytes)'"

# ---- filters
CP=$(grep '"exe":"/usr/bin/cp"' "$T_TMP/j.json" | sed 's/.*"pid":\([0-9]*\),.*/\1/' | sort -u | head -1)
bbx-log --json --pid "$CP" "$J" >"$T_TMP/f.json"
check "--pid: only that process's events, all of them" \
	"len(ev) == $(grep -cE "\"(exit_)?pid\":$CP," "$T_TMP/j.json") and all(e['pid'] == $CP or e.get('exit_pid') == $CP for e in ev) and len(ev) >= 2" "$T_TMP/f.json"
bbx-log --json --op RENAME --op unlinkat "$J" >"$T_TMP/f.json"
check "--op: record type or call name, repeatable" \
	'len(ev) >= 3 and all(e["type"] == "RENAME" or e["op"] == "unlinkat" for e in ev)' "$T_TMP/f.json"
bbx-log --json --path "$W/dd*" "$J" >"$T_TMP/f.json"
check "--path GLOB: path or second path" \
	'set(e["type"] for e in ev) >= {"CREATE", "RENAME", "RMDIR"} and all(e.get("path", "").startswith(W + "/dd") or e.get("path2", "").startswith(W + "/dd") for e in ev)' "$T_TMP/f.json"
bbx-log --json --exec "$J" >"$T_TMP/f.json"
check "--exec: EXEC records only here (no PROC/EXIT writer in this run)" \
	'len(ev) >= 8 and all(e["type"] in ("EXEC", "PROC", "EXIT") for e in ev)' "$T_TMP/f.json"
bbx-log --json --since seq:5 --until seq:9 "$J" >"$T_TMP/f.json"
check "--since/--until seq:N: the seqs in [5, 9]" \
	'len(ev) >= 1 and all(5 <= e["seq"] <= 9 for e in ev)' "$T_TMP/f.json"
[ -z "$(bbx-log --since 2099-01-01T00:00:00Z "$J")" ] &&
	[ "$(bbx-log --json --since 1h "$J" | wc -l)" -eq "$N_EV" ] &&
	[ -z "$(bbx-log --until 2000-01-01 "$J")" ]
ok $? "--since/--until with a date-time and an age"
bbx-log --since yesterday "$J" >/dev/null 2>&1
[ $? -eq 2 ]
ok $? "a bad --since is a usage error (exit 2)"

# ---- a journal of every record type, with known fields
MJ="$T_TMP/mj"
"$BBX_BUILDDIR/tests/progs/mkjournal" "$MJ" && bbx-log --json "$MJ" >"$T_TMP/m.json"
ok $? "bbx-log --json reads the constructed journal"
check "PROC: exe, argv, cwd, env" \
	'(lambda p: p["exe"] == "/bin/sh" and p["argv"] == ["sh", "-c", "rm -rf /w/x; curl x"] and p["cwd"] == "/w" and p["env"] == ["HOME=/home/u", "LANG=C"] and p["program"] == "sh" and p["pid"] == 100)(one(lambda e: e["type"] == "PROC"))' "$T_TMP/m.json"
check "EXEC with a rule: decision, class, rule" \
	'(lambda x: x["decision"] == "log" and x["class"] == "destructive" and x["rule"] == "policy.ini:12 [exec] destructive = rm -rf" and x["program"] == "sh")(one(lambda e: e["type"] == "EXEC"))' "$T_TMP/m.json"
check "DENY of a write: path bytes, rule, reason, decision, class, access, errno; program rm" \
	'(lambda d: b(d["path"]) == b"/w/x/f\xff\n\"q\xc3\xa9" and d["rule"] == "policy.ini:3 [write] deny = /w/x/**" and d["reason"] == "outside write roots" and d["decision"] == "deny" and d["class"] == "none" and d["access"] == "write" and d["errno"] == "EACCES" and d["program"] == "rm" and d["seq"] == 3 and d["time"] == "2023-11-14T22:13:20.003000000Z")(one(lambda e: e["type"] == "DENY" and e["op"] == "unlinkat"))' "$T_TMP/m.json"
check "NET, RESOLVE, DENY connect, DENY exec (audit) with argv" \
	'one(lambda e: e["type"] == "NET")["addr"] == "127.0.0.1:8080" and one(lambda e: e["type"] == "NET")["host"] == "localhost" and one(lambda e: e["type"] == "RESOLVE")["addr"] == "127.0.0.1" and one(lambda e: e["type"] == "DENY" and e["op"] == "connect")["errno"] == "ECONNREFUSED" and one(lambda e: e["type"] == "DENY" and e["op"] == "execve")["argv"] == ["curl", "http://example.org/"] and one(lambda e: e["type"] == "DENY" and e["op"] == "execve")["decision"] == "audit"' "$T_TMP/m.json"
check "RESULTs folded: CREATE = 3 (result_seq 5), failed unlink ENOENT; EXIT statuses" \
	'(lambda c, p: c["result_seq"] == 5 and c["result"] == "= 3" and p["errno"] == "ENOENT" and p["result"] == "ENOENT")(one(lambda e: e["type"] == "CREATE"), one(lambda e: e["type"] == "PRESERVE")) and one(lambda e: e.get("exit_pid") == 101)["signal"] == "SIGKILL" and one(lambda e: e.get("exit_pid") == 100)["exit_code"] == 3 and len(ev) == 11' "$T_TMP/m.json"
bbx-log --tree "$MJ" >"$T_TMP/mtree"
grep -qx "\`- 100 sh -c 'rm -rf /w/x; curl x'  \[exit 3\] denials=2 connects=1" "$T_TMP/mtree" &&
	grep -qx "   \`- 101 rm -rf /w/x  \[killed SIGKILL\] creates=1 deletes=1 execs=1 denials=1" "$T_TMP/mtree"
ok $? "--tree: argv, exit code and signal name from EXIT, counts of denials"
[ "$(bbx-log --denied "$MJ" | wc -l)" -eq 3 ] && bbx-log --denied "$MJ" | grep -q "denied unlinkat /w/x/f\\\\xff\\\\x0a\"qé deny EACCES (outside write roots) rule policy.ini:3"
ok $? "--denied: the three DENY records, with decision, errno, reason and rule"
[ "$(bbx-log --records "$MJ" | grep -c ' RESULT ')" -eq 2 ] && [ "$(bbx-log --records "$MJ" | wc -l)" -eq 13 ]
ok $? "--records: every record, RESULTs included"

# a torn tail (the last record cut short) is the end of the log, not an error
TJ="$T_TMP/tj"
mkdir "$TJ" && head -c -7 "$MJ/journal" >"$TJ/journal"
bbx-log --json "$TJ" >"$T_TMP/t.json" 2>"$T_TMP/t.err"
rc=$?
[ $rc -eq 0 ] && [ "$(wc -l <"$T_TMP/t.json")" -eq 10 ] && grep -q "torn tail" "$T_TMP/t.err" &&
	! grep -q '"exit_pid":100' "$T_TMP/t.json"
ok $? "torn tail: reported on stderr, exit 0, every record before it shown (exit $rc)"

# ---- OCSF: the required attributes of each class claimed
bbx-log --format ocsf "$J" >"$T_TMP/o1.json" && bbx-log --format ocsf "$MJ" >"$T_TMP/o2.json"
"$PY" - "$T_TMP/o1.json" "$T_TMP/o2.json" <<'EOF' >"$T_TMP/ocsf.out" 2>&1
import json, sys
REQ = {  # OCSF 1.1 required attributes (base event, category and class)
    1001: ["activity_id", "category_uid", "class_uid", "type_uid", "severity_id", "time", "metadata", "actor", "device", "file"],
    1007: ["activity_id", "category_uid", "class_uid", "type_uid", "severity_id", "time", "metadata", "actor", "device", "process"],
    4001: ["activity_id", "category_uid", "class_uid", "type_uid", "severity_id", "time", "metadata", "dst_endpoint"],
}
ACT = {1001: {1, 2, 3, 4, 5, 6, 7}, 1007: {1, 2, 99}, 4001: {1, 5}}
seen = set()
for f in sys.argv[1:]:
    for l in open(f, encoding="utf-8"):
        e = json.loads(l)
        c = e["class_uid"]
        seen.add(c)
        for k in REQ[c]:
            assert k in e, (k, e)
        assert e["category_uid"] == c // 1000 and e["type_uid"] == c * 100 + e["activity_id"], e
        assert e["activity_id"] in ACT[c], e
        assert e["metadata"]["product"]["name"] == "bbx" and e["metadata"]["product"]["vendor_name"]
        assert e["metadata"]["version"].startswith("1.")
        assert isinstance(e["time"], int) and e["time"] > 1.6e12 and e["severity_id"] in range(0, 7)
        assert e["status_id"] in (1, 2) and e["status"] == {1: "Success", 2: "Failure"}[e["status_id"]]
        if c == 1001:
            assert e["file"]["path"] and "name" in e["file"] and "type_id" in e["file"]
        if c == 1007:
            assert isinstance(e["process"]["pid"], int)
        if c == 4001:
            assert "ip" in e["dst_endpoint"] and "port" in e["dst_endpoint"]
        assert isinstance(e["actor"]["process"]["pid"], int)
assert seen == {1001, 1007, 4001}, seen
o2 = [json.loads(l) for l in open(sys.argv[2])]
d = [e for e in o2 if e["class_uid"] == 4001 and e["activity_id"] == 5]
assert len(d) == 1 and d[0]["dst_endpoint"] == {"ip": "::1", "port": 443} and d[0]["disposition"] == "Blocked" and d[0]["status_id"] == 2
x = [e for e in o2 if e["class_uid"] == 1007 and e["activity_id"] == 2]
assert len(x) == 2 and {e["process"]["pid"] for e in x} == {100, 101} and [e for e in x if e["process"]["pid"] == 100][0]["exit_code"] == 3
EOF
rc=$?; [ $rc -ne 0 ] && sed 's/^/# /' "$T_TMP/ocsf.out" >&2
ok $rc "--format ocsf: classes 1001, 1007, 4001 with their required attributes"

# ---- follow: a live run, to its seal
FJ="$T_TMP/fj"
(cd "$W" && bbx-run --journal "$FJ" -- sh -c 'sleep 1; echo late > late.txt') >/dev/null 2>&1 &
for i in $(seq 50); do [ -f "$FJ/journal" ] && break; sleep 0.1; done
timeout 20 bbx-log --follow "$FJ" >"$T_TMP/follow" 2>&1
rc=$?
wait
[ $rc -eq 0 ] && grep -q "create open.* $W/late.txt" "$T_TMP/follow" && tail -1 "$T_TMP/follow" | grep -q " SEAL seal "
ok $? "--follow: prints what the live run appends, stops at its SEAL (exit $rc)"

finish
