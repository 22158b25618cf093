#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/micro.sh - bench/micro (ns per call) bare, under bbx-run with an empty preloaded
# library instead of the shim ("layers": bbx-run's seccomp filter and Landlock ruleset
# alone), and under bbx-run, alternating, ROUNDS invocations each; per op the median over
# rounds of each invocation's median batch, the ratio to bare, and the cost split into
# the kernel layers' (layers - bare) and the shim's (bbx - layers).  The sys: rows are
# the floor (syscall(2), unseen by the shim) measured bare.  Then posix_spawn of
# /bin/true, us per start.  The layers column needs a C compiler ($CC, default cc).
# Usage: bench/micro.sh [ROUNDS]   (BENCH_MICRO_ARGS: default "-b 9 -n 20000";
#                                    BENCH_SPAWN_N: default 2000;
#                                    BENCH_CPU: pin every variant to that CPU;
#                                    BENCH_MICRO_HOME=1: $HOME beside the files)
# BENCH_CPU: on a shared VM the CPUs can differ by 40 % in system-call cost, and a run
# lands on either; pinned, the variants meet the same one (taskset, util-linux).
. "$(dirname "$0")/lib.sh"
ROUNDS=${1:-$ROUNDS}
M="$B/bench/micro"
[ -x "$M" ] || make -C "$B" bench/micro >/dev/null || { echo "micro: cannot build $M" >&2; exit 1; }
ARGS=${BENCH_MICRO_ARGS:--b 9 -n 20000}
SN=${BENCH_SPAWN_N:-2000}
PIN=${BENCH_CPU:+taskset -c $BENCH_CPU}
# BENCH_MICRO_HOME=1: every variant runs with $HOME set to the bench's directory, so the
# default policy's deny_read roots ($HOME/.ssh, ...) share their first components with
# the files the calls name - a project under $HOME, the common layout, where the read
# filter walks the roots' prefixes (shim.h, bbx_rf_walk) instead of clearing a path by
# its second byte.
H=()
[ -n "${BENCH_MICRO_HOME:-}" ] && H=(env HOME="$W")
mkdir -p "$W/d"
# EMPTY: lib.sh's empty library, when BENCH_VARIANTS has layers (the default)
for _ in $(seq "$ROUNDS"); do
	# shellcheck disable=SC2086
	"${H[@]}" $PIN "$M" $ARGS "$W/d" >>"$W/m.bare"
	if [ -n "$EMPTY" ]; then
		rm -rf "$J"
		# shellcheck disable=SC2086
		BBX_SHIM=$EMPTY "${H[@]}" $PIN $BBX_RUN --journal "$J" -- "$M" $ARGS "$W/d" >>"$W/m.layers"
	fi
	rm -rf "$J"
	# shellcheck disable=SC2086
	"${H[@]}" $PIN $BBX_RUN --journal "$J" -- "$M" $ARGS "$W/d" >>"$W/m.bbx"
	echo $(($(stat -c %s "$J/journal") / 1024)) >>"$W/jk"
	rm -rf "$J"
	$PIN "$M" -s "$SN" >>"$W/s.bare"
	$PIN $BBX_RUN --journal "$J" -- "$M" -s "$SN" >>"$W/s.bbx"
	rm -rf "$J"
done
echo "micro: $M $ARGS DIR, $ROUNDS rounds alternating bare/layers/bbx${PIN:+ ($PIN)}${H:+, HOME=$W}; ns per call (median)"
printf '%-32s %9s %9s %9s %7s %9s %9s\n' op bare_ns layers_ns bbx_ns ratio layers+ shim+
awk '$1 == "op" {print $2}' "$W/m.bare" | awk '!s[$0]++' | while read -r op; do
	awk -v o="$op" '$1 == "op" && $2 == o {print $3}' "$W/m.bare" >"$W/a"
	case $op in
	sys:*) printf '%-32s %9.0f %9s %9s %7s %9s %9s\n' "$op" "$(med "$W/a")" - - - - - ;;
	*)
		awk -v o="$op" '$1 == "op" && $2 == o {print $3}' "$W/m.bbx" >"$W/b"
		a=$(med "$W/a") b=$(med "$W/b") l=- ld=- sd=-
		if [ -n "$EMPTY" ]; then
			awk -v o="$op" '$1 == "op" && $2 == o {print $3}' "$W/m.layers" >"$W/l"
			l=$(med "$W/l")
			ld=$(printf '%.0f' "$(echo "$l - $a" | bc)")
			sd=$(printf '%.0f' "$(echo "$b - $l" | bc)")
			l=$(printf '%.0f' "$l")
		fi
		printf '%-32s %9.0f %9s %9.0f %7.2f %9s %9s\n' "$op" "$a" "$l" "$b" \
			"$(div "$b" "$a")" "$ld" "$sd" ;;
	esac
done
[ -n "$EMPTY" ] && echo "layers: bbx-run with an empty preloaded library (its seccomp filter and Landlock" \
	"ruleset, no shim); layers+ = layers - bare, shim+ = bbx - layers"
echo "journal of one micro run under bbx: $(med "$W/jk") KiB (median)"
awk '{print $2}' "$W/s.bare" >"$W/a"
awk '{print $2}' "$W/s.bbx" >"$W/b"
printf 'posix_spawn+wait of /bin/true (%s per run): bare %.0f us, bbx %.0f us per start (%s / %s); shim start-up +%.0f us per process\n' \
	"$SN" "$(med "$W/a")" "$(med "$W/b")" "$(mm "$W/a")" "$(mm "$W/b")" "$(echo "$(med "$W/b") - $(med "$W/a")" | bc)"
# What the shim's memory layout decisions rest on: a page fault's cost here.
echo "writing k fresh pages of a 14-page mapping, us (page faults, or MAP_POPULATE):"
"$M" -f 2000 | sed 's/^/  /'
echo "  ($(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
