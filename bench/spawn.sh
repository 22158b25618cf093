#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/spawn.sh - the spawn workload: N starts of /bin/true (a small dynamic program)
# from a bash loop, under every variant of lib.sh, alternating; and the per-process
# start-up cost of each variant in us ((median - bare median) / N).  bench/micro.sh
# gives the same cost from a C driver (posix_spawn), without bash's fork.
# Usage: bench/spawn.sh [ROUNDS] [N]     (N default 2000, or BENCH_SPAWN_N)
. "$(dirname "$0")/lib.sh"
ROUNDS=${1:-$ROUNDS}
N=${2:-${BENCH_SPAWN_N:-2000}}
setup() { mkdir -p "$WD"; }
teardown() { discard "$WD"; }
echo "spawn: bash loop of $N x /bin/true" >&2
bench spawn bash -c "for i in \$(seq $N); do /bin/true; done"
table spawn "spawn ($N x true)"
base=$(med "$W/t.spawn.bare")
cbase=$(med "$W/c.spawn.bare")
for v in $ACTIVE; do
	[ "$v" = bare ] && continue
	printf '  %s: %+.0f us elapsed, %+.0f us CPU per process' "$v" \
		"$(echo "($(med "$W/t.spawn.$v") - $base) * 1000000 / $N" | bc -l)" \
		"$(echo "($(med "$W/c.spawn.$v") - $cbase) * 1000000 / $N" | bc -l)"
	if [ -s "$W/f.spawn.$v" ] && [ -s "$W/f.spawn.bare" ]; then
		printf ', %+.1f page faults per process' \
			"$(echo "($(med "$W/f.spawn.$v") - $(med "$W/f.spawn.bare")) / $N" | bc -l)"
	fi
	echo
done
