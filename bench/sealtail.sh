#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/sealtail.sh - what a run costs after its command has ended: from the command's
# last instruction to bbx-run's exit (the EXIT record and the seal, journal/seal.c).
# The command is churn.sh's workload (tar -x of its tree, sed -i, rm -rf), ending by
# writing the time; bbx-run's end is read in this shell.  Since
# session 46 bbx-run reads the journal while the command runs (on a second CPU), so that
# the seal after it reads only the rest.  Variants: bbx, and old with BENCH_OLD_BUILDDIR,
# alternating; also the command's own time under each.
# Usage: bench/sealtail.sh [ROUNDS]
. "$(dirname "$0")/lib.sh"
ROUNDS=${1:-$ROUNDS}
T="$CACHE/churn-tree.tar"
[ -f "$T" ] || { echo "sealtail: $T missing: run bench/churn.sh once" >&2; exit 1; }
churn_work "$T" "${BENCH_CHURN_EDITS:-1100}"
vs=bbx
[ -x "${BENCH_OLD_BUILDDIR:-}/tools/bbx-run" ] && vs="old bbx"
for r in $(seq "$ROUNDS"); do
	for v in $vs; do
		case $v in
		bbx) run=$RUN ;;
		old) run=$BENCH_OLD_BUILDDIR/tools/bbx-run ;;
		esac
		rm -rf "$WD" "$J"
		mkdir -p "$WD"
		now t0
		(cd "$WD" && "$run" -q --journal "$J" -- bash -c "$CHURN_CMD"' && echo "${EPOCHREALTIME/,/.}" >"'"$W"'/end"') >/dev/null 2>&1
		now t1
		echo "($t1 - $(cat "$W/end")) * 1000" | bc >>"$W/tail.$v"
		echo "$(cat "$W/end") - $t0" | bc >>"$W/cmd.$v"
		JK=$(kib "$J")
		discard "$WD" "$J"
	done
done
echo "sealtail: churn ($CHURN_TOTAL files, journal directory $JK KiB), $ROUNDS rounds alternating, $(nproc) CPUs"
printf '%-8s %22s %26s\n' variant "after the command, ms" "bbx-run start + command, s"
for v in $vs; do
	printf '%-8s %8.1f (%s) %12.3f (%s)\n' "$v" "$(med "$W/tail.$v")" "$(mm "$W/tail.$v" %.1f)" \
		"$(med "$W/cmd.$v")" "$(mm "$W/cmd.$v")"
done
