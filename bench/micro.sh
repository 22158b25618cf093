#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/micro.sh - bench/micro (ns per call) bare, under bbx-run with an empty preloaded
# library instead of the shim ("layers": bbx-run's seccomp filter and Landlock ruleset
# alone), and under bbx-run, alternating, ROUNDS invocations each; per op the median over
# rounds of each invocation's median batch, the ratio to bare, and the cost split into
# the kernel layers' (layers - bare) and the shim's (bbx - layers).  The sys: rows are
# the floor (syscall(2), unseen by the shim) measured bare.  Then posix_spawn of
# /bin/true, us per start, bare, layers and bbx, with the CPU and page faults of the
# spawning process and of the started one.  The layers variant needs a C compiler ($CC,
# default cc).
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
	if [ -n "$EMPTY" ]; then
		# shellcheck disable=SC2086
		BBX_SHIM=$EMPTY $PIN $BBX_RUN --journal "$J" -- "$M" -s "$SN" >>"$W/s.layers"
		rm -rf "$J"
	fi
	# shellcheck disable=SC2086
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
# posix_spawn: per start, elapsed, and the CPU and page faults of the spawning process
# (under the shim: the EXEC record, written before the start) and of the started program
# (under the shim: its start-up), medians over the rounds.  The shim's cost is bbx -
# layers: bare -> layers is what bbx-run's seccomp filter and Landlock ruleset and the
# preloading of any library cost each process.
echo "posix_spawn+wait of /bin/true ($SN per run), per start (median of the rounds; min-max):"
printf '  %-7s %16s %9s %9s %8s %8s\n' variant us parent_us child_us p_flt c_flt
for v in bare layers bbx; do
	[ -s "$W/s.$v" ] || continue
	for k in 2 4 6 8 10; do awk -v k=$k '{print $k}' "$W/s.$v" >"$W/s.$v.$k"; done
	printf '  %-7s %6.0f %9s %9.0f %9.0f %8.1f %8.1f\n' "$v" "$(med "$W/s.$v.2")" "($(mm "$W/s.$v.2" %.0f))" \
		"$(med "$W/s.$v.4")" "$(med "$W/s.$v.6")" "$(med "$W/s.$v.8")" "$(med "$W/s.$v.10")"
done
sb=$(med "$W/s.bbx.2") sa=$(med "$W/s.bare.2")
if [ -s "$W/s.layers" ]; then
	sl=$(med "$W/s.layers.2")
	printf '  layers+ %+.0f us per start; shim start-up (bbx - layers) %+.0f us per start: %+.0f us CPU in the parent, %+.0f in the child\n' \
		"$(echo "$sl - $sa" | bc)" "$(echo "$sb - $sl" | bc)" \
		"$(echo "$(med "$W/s.bbx.4") - $(med "$W/s.layers.4")" | bc)" \
		"$(echo "$(med "$W/s.bbx.6") - $(med "$W/s.layers.6")" | bc)"
else
	printf '  bbx - bare %+.0f us per start (no layers variant: the shim and the kernel layers together)\n' \
		"$(echo "$sb - $sa" | bc)"
fi
# What the shim's memory layout decisions rest on: a page fault's cost here.
echo "writing k fresh pages of a 14-page mapping, us (page faults, or MAP_POPULATE):"
"$M" -f 2000 | sed 's/^/  /'
echo "  ($(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
