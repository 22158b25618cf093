#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/compile.sh - build of a real C project (bbx itself: configure + make -j2), bare
# and under bbx-run, alternating A B A B in one invocation; prints medians, min-max and
# the ratio.  Usage: bench/compile.sh [RUNS]   (needs a built tree: BBX_BUILDDIR)
set -euo pipefail
RUNS=${1:-5}
SRC=$(cd "$(dirname "$0")/.." && pwd)
B=${BBX_BUILDDIR:-$SRC}
RUN="$B/tools/bbx-run"
W=$(mktemp -d "${TMPDIR:-/tmp}/bbx-bench.XXXXXX")
trap 'rm -rf "$W"' EXIT
export BBX_STATE_DIR="$W/state"
git -C "$SRC" archive --format=tar HEAD | (mkdir -p "$W/tpl" && tar -x -C "$W/tpl")
(cd "$W/tpl" && autoreconf -fi >/dev/null 2>&1)
now() { date +%s.%N; }
one() { # $1 = bare|bbx, $2 = trial
	local d="$W/$1.$2" j="$W/j.$2" t0 t1
	cp -a "$W/tpl" "$d"
	cd "$d"
	t0=$(now)
	if [ "$1" = bare ]; then
		sh -c './configure -q >/dev/null && make -j2 >/dev/null 2>&1'
	else
		"$RUN" --quiet --journal "$j" -- sh -c './configure -q >/dev/null && make -j2 >/dev/null 2>&1'
	fi
	t1=$(now)
	cd "$W"
	echo "$t1 - $t0" | bc
	if [ "$1" = bbx ]; then
		du -sk "$j" | cut -f1 >>"$W/jsize"
		rm -rf "$j"
	fi
	rm -rf "$d"
}
: >"$W/bare"; : >"$W/bbx"; : >"$W/jsize"
for i in $(seq "$RUNS"); do
	one bare "$i" >>"$W/bare"
	one bbx "$i" >>"$W/bbx"
done
med() { sort -n "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mm() { sort -n "$1" | awk 'NR==1{mn=$1} {mx=$1} END {printf "%.2f-%.2f", mn, mx}'; }
mb=$(med "$W/bare"); mx=$(med "$W/bbx")
printf '%-28s %8s %13s %8s %13s %7s %10s\n' workload bare_s min-max bbx_s min-max ratio journal
printf '%-28s %8.2f %13s %8.2f %13s %7.3f %8sKiB\n' "compile (configure+make -j2)" "$mb" "$(mm "$W/bare")" \
	"$mx" "$(mm "$W/bbx")" "$(echo "$mx / $mb" | bc -l)" "$(med "$W/jsize")"
