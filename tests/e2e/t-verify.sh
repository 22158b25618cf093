#!/bin/bash
# SPDX-License-Identifier: MIT
# t-verify.sh - journal integrity (bbx_verify, tools/verify.c): a real run verifies
# clean; then copies of its journal directory, each damaged one way (a flipped byte, a
# deleted record, a reordered pair, an inserted copy, a record edited with a valid
# checksum, an edited SEAL, a missing object, a truncated tail), are each caught, with
# the exact message at the exact offset.  The expected offsets and chain values come
# from tests/e2e/jtool.py, which parses the journal and computes XXH64 on its own.
. "${BBX_SRCDIR:?is set by make check (tests/local.mk)}/tests/e2e/lib.sh" || exit 99

V=$BBX_BUILDDIR/tests/progs/verify-run
JT() { "${PYTHON3:-python3}" "$BBX_SRCDIR/tests/e2e/jtool.py" "$@"; }
plan 37

W=$(new_ws)
J=$T_TMP/J
printf 'hello\nworld\n' >"$W/a"
echo gone >"$W/b"
(cd "$W" && bbx-run -q --journal "$J" -- sh -c '
	cp a c && sed -i s/hello/bye/ a && rm b &&
	python3 -c "import os; open(\"d\", \"w\").write(\"1\"); os.rename(\"d\", \"e\")"')
ok $? "bbx-run with cp, sed, rm, python3"

# --- the clean journal
"$V" "$J" >"$T_TMP/clean.out"
ok $? "verify: clean journal, exit 0"
grep -q "^verify: $J: [0-9]* records, chained, sealed, 0 problem(s): OK\$" "$T_TMP/clean.out"
ok $? "verify: summary line says chained, sealed, OK"
JT check "$J/journal" >/dev/null
ok $? "jtool's own XXH64 agrees with every record's checksum"
JT list "$J/journal" >"$T_TMP/recs"
N=$(wc -l <"$T_TMP/recs")
"$V" "$J" json | python3 -c '
import json, sys
d = json.load(sys.stdin)
n = int(sys.argv[1])
assert d["ok"] is True and d["problems"] == 0, d
assert d["records"] == n and d["sealed_count"] == n and d["chained"] and d["sealed"], d
assert all(f["level"] == "note" for f in d["findings"]), d' "$N"
ok $? "verify --json: ok, $N records, sealed_count = $N"
# The chain itself: record 0 chains to 0, every next one to the trailer before it.
awk 'NR == 1 { ok = ($6 == "0000000000000000") } NR > 1 { ok = ok && ($6 == prev) }
     { prev = $7 } END { exit !ok }' "$T_TMP/recs"
ok $? "every record's CHAIN is the previous record's trailer (0 for the first)"
[ "$(sed -n 's/^sealed_chain=//p' "$J/meta")" = "$(tail -n 1 "$T_TMP/recs" | cut -d' ' -f7)" ] &&
	[ "$(sed -n 's/^sealed_count=//p' "$J/meta")" = "$N" ] &&
	[ "$(sed -n 's/^sealed_end=//p' "$J/meta")" = "$(stat -c %s "$J/journal")" ]
ok $? "meta: sealed_chain, sealed_count, sealed_end match the journal"

# A copy of the journal directory: objects hard-linked (same inodes, as how=link needs),
# the journal, meta and state copied (so damaging them leaves J alone).
cpj() {
	rm -rf "$2" && mkdir "$2" && cp -al "$1/objects" "$2/objects" &&
		cp "$1/journal" "$1/meta" "$1/state" "$2/"
}
# rec I FIELD: field of record I (0-based) from jtool list: 2 offset 3 len 4 seq 5 type
# 6 chain 7 trailer
rec() { awk -v i="$1" -v f="$2" '$1 == i { print $f }' "$T_TMP/recs"; }
K=$((N / 2)) # a record in the middle, far from the SEAL
# expect CASE EXIT PATTERN DESC: verify's exit status and one exact line
expect() {
	"$V" "$T_TMP/$1" >"$T_TMP/$1.out"
	local rc=$?
	ok $((rc != $2)) "$4: exit $2"
	if grep -qxF -- "$3" "$T_TMP/$1.out"; then ok 0 "$4: reported"; else
		sed 's/^/# /' "$T_TMP/$1.out" >&2
		diag "expected: $3"
		ok 1 "$4: reported"
	fi
}

# --- a flipped byte inside record K's header (its realtime_ns): the checksum fails, and
# nothing else (the next record still chains to K's stored trailer)
cpj "$J" "$T_TMP/flip"
JT flip "$T_TMP/flip/journal" $(($(rec $K 2) + 30))
H=$("${PYTHON3:-python3}" -c '
import sys; sys.path.insert(0, sys.argv[1]); import jtool
d = open(sys.argv[2], "rb").read(); o, l = int(sys.argv[3]), int(sys.argv[4])
print("%016x" % jtool.xxh64(d[o:o + l - 8]))' "$BBX_SRCDIR/tests/e2e" "$T_TMP/flip/journal" \
	"$(rec $K 2)" "$(rec $K 3)")
expect flip 1 "journal:$(rec $K 2): seq $(rec $K 4): checksum mismatch (computed $H, record says $(rec $K 7))" \
	"flipped byte"
grep -q ", 1 problem(s): DAMAGED\$" "$T_TMP/flip.out"
ok $? "flipped byte: exactly one problem"

# --- record K deleted: record K+1 now sits at K's offset and chains to K's trailer
cpj "$J" "$T_TMP/del"
JT delete "$T_TMP/del/journal" $K
expect del 1 "journal:$(rec $K 2): seq $(rec $((K + 1)) 4): chain mismatch (expected $(rec $((K - 1)) 7), record says $(rec $K 7)): the record it follows is missing or was changed" \
	"deleted record"
grep -qxF "meta: $N records at the seal, the journal has $((N - 1))" "$T_TMP/del.out"
ok $? "deleted record: the sealed record count no longer matches"

# --- records K and K+1 swapped
cpj "$J" "$T_TMP/swap"
JT swap "$T_TMP/swap/journal" $K
expect swap 1 "journal:$(rec $K 2): seq $(rec $((K + 1)) 4): chain mismatch (expected $(rec $((K - 1)) 7), record says $(rec $K 7)): it follows seq $(rec $K 4) at offset $(($(rec $K 2) + $(rec $((K + 1)) 3))) (moved)" \
	"reordered pair"
grep -qxF "journal:$(($(rec $K 2) + $(rec $((K + 1)) 3))): seq $(rec $K 4): chain mismatch (expected $(rec $((K + 1)) 7), record says $(rec $((K - 1)) 7)): it follows seq $(rec $((K - 1)) 4) at offset $(rec $((K - 1)) 2)" \
	"$T_TMP/swap.out"
ok $? "reordered pair: the second record of the pair reported too"

# --- a copy of record K inserted after it
cpj "$J" "$T_TMP/dup"
JT dup "$T_TMP/dup/journal" $K
expect dup 1 "journal:$(rec $((K + 1)) 2): seq $(rec $K 4): chain mismatch (expected $(rec $K 7), record says $(rec $K 6)): it follows seq $(rec $((K - 1)) 4) at offset $(rec $((K - 1)) 2)" \
	"inserted record"
grep -qxF "journal:$(rec $((K + 1)) 2): seq $(rec $K 4): repeated seq (also at offset $(rec $K 2))" "$T_TMP/dup.out"
ok $? "inserted record: repeated seq reported"

# --- record K edited (1 ns added to its time) and its checksum recomputed: no
# checksum error, the chain breaks at the next record
cpj "$J" "$T_TMP/edit"
JT edit "$T_TMP/edit/journal" $K
E=$(JT list "$T_TMP/edit/journal" | awk -v i=$K '$1 == i { print $7 }')
expect edit 1 "journal:$(rec $((K + 1)) 2): seq $(rec $((K + 1)) 4): chain mismatch (expected $E, record says $(rec $K 7)): the record it follows is missing or was changed" \
	"edited and re-checksummed record"
! grep -q "checksum mismatch" "$T_TMP/edit.out"
ok $? "edited record: its own checksum is valid (no checksum report)"

# --- the SEAL record edited and re-checksummed: only meta's sealed head catches it
L=$((N - 1))
cpj "$J" "$T_TMP/seal"
JT edit "$T_TMP/seal/journal" $L
E=$(JT list "$T_TMP/seal/journal" | awk -v i=$L '$1 == i { print $7 }')
expect seal 1 "journal:$(rec $L 2): seq $(rec $L 4): sealed chain head mismatch (meta says $(rec $L 7), journal has $E)" \
	"edited SEAL record"

# --- an object removed
O=$(awk '$5 == 3' "$T_TMP/recs" | head -n 1)
set -- $O
OBJ=$(printf '%02x/%d' $((($4 >> 10) & 255)) "$4")
cpj "$J" "$T_TMP/obj"
rm "$T_TMP/obj/objects/$OBJ"
expect obj 1 "journal:$2: seq $4: object $OBJ missing" "missing object"

# --- the tail cut in the middle of the SEAL record
cpj "$J" "$T_TMP/trunc"
JT truncate "$T_TMP/trunc/journal" $(($(rec $L 2) + 20))
expect trunc 1 "journal:$(rec $L 2): torn tail of 20 bytes before the seal was reached" "truncated tail"
grep -qxF "meta: $N records at the seal, the journal has $((N - 1))" "$T_TMP/trunc.out"
ok $? "truncated tail: sealed record count reported"

# --- a crashed (unsealed) run with a torn tail: reported, not a problem
cpj "$J" "$T_TMP/crash"
grep -v '^sealed_' "$J/meta" >"$T_TMP/crash/meta"
JT truncate "$T_TMP/crash/journal" $(($(rec $L 2) + 20))
expect crash 0 "note: journal:$(rec $L 2): torn tail: 20 bytes of an incomplete last record" \
	"unsealed run with a torn tail"

# --- a straggler: a background process writes after bbx-run sealed the run
W2=$(new_ws)
(cd "$W2" && bbx-run -q --journal "$T_TMP/S" -- sh -c '(sleep 1; echo late > late) &')
for _ in $(seq 50); do [ -e "$W2/late" ] && break; sleep 0.1; done
sleep 0.2
"$V" "$T_TMP/S" >"$T_TMP/S.out"
ok $? "straggler after seal: verify passes"
grep -q "^note: journal:[0-9]*: seq [0-9]*: after seal (CREATE by pid [0-9]*)\$" "$T_TMP/S.out"
ok $? "straggler after seal: its records reported as after seal"

# --- after bbx-undo: the run's journal still verifies (the objects it moved back into
# the tree are notes), and the undo's own journal is chained and sealed too
bbx-undo "$J" >/dev/null 2>&1
ok $? "bbx-undo of the run"
"$V" "$J" >"$T_TMP/undone.out"
ok $? "after undo: the run's journal verifies"
"$V" "$J/undo" >"$T_TMP/undo.out" &&
	grep -q "^verify: $J/undo: [0-9]* records, chained, sealed, 0 problem(s): OK\$" "$T_TMP/undo.out"
ok $? "after undo: the undo journal is chained, sealed and verifies"

# --- not a journal
"$V" "$W" >"$T_TMP/none.out"
ok $((($? != 2))) "not a journal directory: exit 2"
finish
