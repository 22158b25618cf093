#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/spawn.sh - N starts of a small dynamic program (/bin/true) from a shell loop,
# bare and under bbx-run, alternating.  Usage: bench/spawn.sh [RUNS] [N]
. "$(dirname "$0")/lib.sh"
RUNS=${1:-5}
N=${2:-1000}
loop="for i in \$(seq $N); do /bin/true; done"
: >"$W/bare"; : >"$W/bbx"
for i in $(seq "$RUNS"); do
	timeit "$W/bare" bash -c "$loop"
	timeit "$W/bbx" "$RUN" -q --journal "$W/j.$i" -- bash -c "$loop"
	rm -rf "$W/j.$i"
done
header
row "spawn ($N x /bin/true)" "$W/bare" "$W/bbx"
