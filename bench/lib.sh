# SPDX-License-Identifier: MIT
# bench/lib.sh - shared helpers for the benchmarks (sourced, bash): A/B runs alternated
# in one invocation, medians and min-max, ratios.  Timings never gate tests.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=${BBX_BUILDDIR:-$SRC}
RUN="$B/tools/bbx-run"
UNDO="$B/tools/bbx-undo"
W=$(mktemp -d "${TMPDIR:-/tmp}/bbx-bench.XXXXXX")
trap 'rm -rf "$W"' EXIT
export BBX_STATE_DIR="$W/state"
now() { date +%s.%N; }
# timeit FILE CMD...: append the elapsed seconds of CMD to FILE.
timeit() {
	local f=$1 t0 t1
	shift
	t0=$(now)
	"$@" >/dev/null 2>&1
	t1=$(now)
	echo "$t1 - $t0" | bc >>"$f"
}
med() { sort -n "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mm() { sort -n "$1" | awk 'NR==1{mn=$1} {mx=$1} END {printf "%.3f-%.3f", mn, mx}'; }
header() { printf '%-36s %8s %13s %8s %13s %7s\n' workload bare_s min-max bbx_s min-max ratio; }
# row NAME BAREFILE BBXFILE
row() {
	printf '%-36s %8.3f %13s %8.3f %13s %7.3f\n' "$1" "$(med "$2")" "$(mm "$2")" \
		"$(med "$3")" "$(mm "$3")" "$(echo "$(med "$3") / $(med "$2")" | bc -l)"
}
