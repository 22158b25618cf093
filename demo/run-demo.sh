#!/bin/bash
# SPDX-License-Identifier: MIT
#
# run-demo.sh - "make demo": an agent has a bad day in a sample project, bbx-undo puts
# every byte back, and the demo proves it by comparing snapshots of the whole tree.
#
# Steps: copy demo/workspace to a temporary directory; snapshot it (path, type, mode,
# owner, size, sha256, link target, mtime of every path: tests/e2e/snapshot.py); run
# demo/agent-bad-day.sh under `bbx-run --journal J`; show the damage and what the
# journal recorded; run `bbx-undo J`; snapshot again and require the two snapshots to
# be byte-identical.  Then run bbx-undo once more to show that undo is idempotent.
#
# Environment (set by `make demo`): BBX_SRCDIR (absolute source dir), BBX_BUILDDIR
# (absolute build dir).  Optional: BBX_SHIM (default: the freshly built shim),
# BBX_DEMO_KEEP=1 keeps the temporary directory, PYTHON3.
# Exit status: 0 when the workspace was restored identically, 1 otherwise.
set -u

die() { printf 'run-demo: %s\n' "$*" >&2; exit 1; }
section() { printf '\n=== %s\n\n' "$*"; }

[ -n "${BBX_SRCDIR:-}" ] && [ -n "${BBX_BUILDDIR:-}" ] ||
	die "BBX_SRCDIR and BBX_BUILDDIR must be set (run it as: make demo)"
TOOLS=$BBX_BUILDDIR/tools
export BBX_SHIM=${BBX_SHIM:-$BBX_BUILDDIR/shim/.libs/libbbxshim.so}
PY=${PYTHON3:-python3}
for t in bbx-run bbx-log bbx-undo; do
	[ -x "$TOOLS/$t" ] || die "$TOOLS/$t is not built (run make first)"
done
[ -f "$BBX_SHIM" ] || die "$BBX_SHIM is not built (run make first)"
SNAPSHOT=$BBX_SRCDIR/tests/e2e/snapshot.py
DIFFSNAP=$BBX_SRCDIR/demo/diffsnap.py
AGENT=$BBX_SRCDIR/demo/agent-bad-day.sh
[ -f "$SNAPSHOT" ] || die "$SNAPSHOT is missing"

# A clean slate: no run of an outer bbx, and runs made by accident stay in the temp dir.
unset LD_PRELOAD BBX_JOURNAL BBX_HIDE
T=$(mktemp -d "${TMPDIR:-/tmp}/bbx-demo.XXXXXX") || die "cannot create a temporary directory"
export BBX_STATE_DIR=$T/state
WS=$T/workspace
J=$T/journal
status=1
cleanup() {
	if [ "$status" -eq 0 ] && [ "${BBX_DEMO_KEEP:-0}" = 0 ]; then
		rm -rf "$T"
	else
		printf '\n(demo files kept in %s)\n' "$T"
	fi
}
trap cleanup EXIT

snap() { "$PY" "$SNAPSHOT" "$1"; }
# Journal paths are absolute; show them relative to the workspace.
shorten() { while IFS= read -r l; do printf '%s\n' "${l//"$WS"/.}"; done; }

section "1. a sample project"
# cp without -p: files from a read-only source tree (make distcheck) become writable.
cp -R "$BBX_SRCDIR/demo/workspace" "$WS" || die "cannot copy the workspace"
chmod -R u+w "$WS"
chmod 755 "$WS/scripts/fetch.sh" "$WS/scripts/plot.py"
ln -s data/readings.csv "$WS/latest.csv"   # a symlink (dist tarballs cannot carry one)
snap "$WS" > "$T/before.snap" || die "snapshot failed"
npaths=$(wc -l < "$T/before.snap")
printf 'workspace: %s (%d paths)\n' "$WS" "$npaths"
(cd "$WS" && find . -maxdepth 2 -not -path './docs/*' | sort | sed 's/^/  /')
printf '  ... and %d files under docs/\n' "$(find "$WS/docs" -type f | wc -l)"

section "2. the agent has a bad day (under bbx-run --journal J)"
(cd "$WS" && "$TOOLS/bbx-run" --journal "$J" -- "$AGENT")
rc=$?
printf 'bbx-run exited %d\n' "$rc"
[ "$rc" -eq 0 ] || die "the agent run failed (bbx-run exit $rc)"
snap "$WS" > "$T/damaged.snap" || die "snapshot failed"

section "3. the damage"
"$PY" "$DIFFSNAP" "$T/before.snap" "$T/damaged.snap" | shorten
cmp -s "$T/before.snap" "$T/damaged.snap" && die "the agent changed nothing?"

section "4. what the journal recorded (bbx-log J)"
"$TOOLS/bbx-log" --records "$J" > "$T/log.txt" 2> "$T/log.err"
rc=$?
[ "$rc" -eq 0 ] || { cat "$T/log.err" >&2; die "bbx-log failed (exit $rc)"; }
printf '%d records:' "$(wc -l < "$T/log.txt")"
awk '{ n[$4]++ }
     END { split("EXEC CREATE PRESERVE SIZE RMDIR RENAME META DIRMETA RESULT FINAL SEAL NOTE", o)
           for (i = 1; i in o; i++) if (o[i] in n) printf " %s=%d", o[i], n[o[i]]
           printf "\n" }' "$T/log.txt"
printf 'objects/ holds %d preserved pre-images\n\n' "$(ls -A "$J/objects" | wc -l)"
# The programs and the mutations, without the RESULT and FINAL/SEAL bookkeeping; a long
# run of records of one process under one top-level directory is cut after 6 lines.
grep -Ev '^[^ ]+ [^ ]+ [^ ]+ (RESULT|FINAL|SEAL) ' "$T/log.txt" | shorten |
awk -v keep=6 -v limit=8 '
	function flush(   i) {
		if (n > limit) {
			for (i = 1; i <= keep; i++) print buf[i]
			printf "    ... %d more records like these\n", n - keep
		} else {
			for (i = 1; i <= n; i++) print buf[i]
		}
		n = 0
	}
	{ split($6, p, "/"); key = $3 " " p[1] "/" p[2] }
	key != prev { flush(); prev = key }
	{ buf[++n] = $0 }
	END { flush() }'
[ -s "$T/log.err" ] && sed 's/^/bbx-log: /' "$T/log.err"

section "5. bbx-undo J"
"$TOOLS/bbx-undo" "$J"
rc=$?
printf 'bbx-undo exited %d\n' "$rc"
[ "$rc" -eq 0 ] || die "bbx-undo failed (exit $rc)"

section "6. proof"
snap "$WS" > "$T/after.snap" || die "snapshot failed"
if ! cmp -s "$T/before.snap" "$T/after.snap"; then
	echo "workspace NOT restored; what still differs:"
	"$PY" "$DIFFSNAP" "$T/before.snap" "$T/after.snap" | shorten
	diff "$T/before.snap" "$T/after.snap" | head -n 40
	exit 1
fi
printf 'workspace restored: identical to before (%d paths compared)\n' "$npaths"

# Undo is idempotent: a second run finds nothing to do and changes nothing.
"$TOOLS/bbx-undo" --quiet "$J"
rc=$?
snap "$WS" > "$T/again.snap" || die "snapshot failed"
if [ "$rc" -ne 0 ] || ! cmp -s "$T/before.snap" "$T/again.snap"; then
	echo "a second bbx-undo was not a no-op (exit $rc):"
	diff "$T/before.snap" "$T/again.snap" | head -n 40
	exit 1
fi
echo "bbx-undo again: nothing to do, tree unchanged"
echo "(and bbx-undo $J/undo would undo the undo: bbx journals its own changes too)"
status=0
exit 0
