#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/transaction.sh - what `bbx-run --transaction` costs, and that it does not grow
# with the workspace: a no-op (true) and a failing no-op (false, so the run is undone)
# under `bbx-run --transaction`, in a workspace of BENCH_TX_MB MiB (1 MiB files of random
# bytes) and in an empty one, alternating, each round with a fresh journal.  bbx copies
# nothing up front: a transaction is the journal, and undo replays only what the
# command changed (issue 5 budget: < 20 ms for a no-op in a 1 GB workspace).
# Usage: bench/transaction.sh [ROUNDS]   (BENCH_TX_MB default 1024; ROUNDS default 9)
. "$(dirname "$0")/lib.sh"
R=${1:-${BENCH_TX_ROUNDS:-9}}
MB=${BENCH_TX_MB:-1024}
mkdir -p "$W/big" "$W/small"
echo "transaction: a ${MB} MiB workspace ($MB files) and an empty one, $R alternating rounds" >&2
for i in $(seq "$MB"); do head -c 1048576 /dev/urandom >"$W/big/f$i"; done
sum() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum | sha256sum); }
before=$(sum "$W/big")
for r in $(seq "$R"); do
	for ws in big small; do
		for cmd in true false; do
			rm -rf "$J"
			# Two clocks: the command as a shell times it (`time bbx-run ...`: the
			# shell's fork, bbx-run, the command, the seal), and the same with the
			# harness's subshell and cd around it, as this script measured before
			# session 24 (that subshell alone is 4-6 ms on a slow VM).
			now o0
			(cd "$W/$ws" && now t0 && { BBX_WORKSPACE="$W/$ws" $BBX_RUN --transaction --journal "$J" -- "$cmd" \
				>/dev/null 2>&1 || true; } && now t1 && echo "$t1 - $t0" >"$W/inner")
			now o1
			bc <"$W/inner" >>"$W/t.$ws.$cmd"
			echo "$o1 - $o0" | bc >>"$W/o.$ws.$cmd"
		done
	done
	# The floor on this machine: the bare command, timed the same two ways.
	now o0
	(cd "$W/small" && now t0 && { /bin/true >/dev/null 2>&1; } && now t1 && echo "$t1 - $t0" >"$W/inner")
	now o1
	bc <"$W/inner" >>"$W/t.bare"
	echo "$o1 - $o0" | bc >>"$W/o.bare"
done
ms() { sort -n "$1" | awk '{a[NR] = $1} END {printf "%.1f", 1000 * (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}'; }
range() { sort -n "$1" | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.1f-%.1f", 1000 * lo, 1000 * hi}'; }
printf '%-34s %12s %12s %12s\n' "bbx-run --transaction of" "${MB} MiB ms" "empty ms" "ratio"
for cmd in true false; do
	what=$([ "$cmd" = true ] && echo "true (kept)" || echo "false (undone)")
	printf '%-34s %12s %12s %12s\n' "$what" "$(ms "$W/t.big.$cmd")" "$(ms "$W/t.small.$cmd")" \
		"$(echo "$(ms "$W/t.big.$cmd") / $(ms "$W/t.small.$cmd")" | bc -l | xargs printf '%.2f')"
	printf '%-34s %12s %12s\n' "  min-max" "$(range "$W/t.big.$cmd")" "$(range "$W/t.small.$cmd")"
done
printf '%-34s %12s\n' "bare /bin/true, timed the same way" "$(ms "$W/t.bare")"
printf '%-34s %12s %12s   (%s ms bare)\n' "with the subshell, true / false" "$(ms "$W/o.small.true")" \
	"$(ms "$W/o.small.false")" "$(ms "$W/o.bare")"
[ "$(sum "$W/big")" = "$before" ] && echo "  the ${MB} MiB workspace is unchanged after $((2 * R)) transactions" ||
	echo "  the ${MB} MiB workspace CHANGED" >&2
echo "  (medians of $R rounds; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
