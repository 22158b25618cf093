#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/churn.sh - rm -rf of a tree of FILES files (100 directories), bare and under
# bbx-run, alternating; then the undo of each bbx run, reported as files per second.
# Usage: bench/churn.sh [RUNS] [FILES]
. "$(dirname "$0")/lib.sh"
RUNS=${1:-3}
FILES=${2:-10000}
per=$((FILES / 100))
mkdir "$W/tpl"
for d in $(seq 100); do
	mkdir "$W/tpl/d$d"
	for f in $(seq "$per"); do printf '%*s' "$f" x >"$W/tpl/d$d/f$f"; done
done
: >"$W/bare"; : >"$W/bbx"; : >"$W/undo"
for i in $(seq "$RUNS"); do
	cp -a "$W/tpl" "$W/t"
	timeit "$W/bare" rm -rf "$W/t"
	cp -a "$W/tpl" "$W/t"
	timeit "$W/bbx" "$RUN" -q --journal "$W/j" -- rm -rf "$W/t"
	timeit "$W/undo" "$UNDO" -q "$W/j"
	diff -r "$W/tpl" "$W/t" >/dev/null || { echo "churn: undo did not restore the tree" >&2; exit 1; }
	rm -rf "$W/t" "$W/j"
done
header
row "churn (rm -rf of $FILES files)" "$W/bare" "$W/bbx"
printf '%-36s %8s %13s %8.3f %13s %7s\n' "undo of that rm -rf" - - "$(med "$W/undo")" \
	"$(mm "$W/undo")" "-"
printf 'undo: %.0f files/s (median)\n' "$(echo "$FILES / $(med "$W/undo")" | bc -l)"
