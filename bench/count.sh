#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/count.sh - instructions, not time.  Every process of a workload runs under
# valgrind's callgrind (--trace-children=yes): bare, under `layers` (bbx-run preloading
# an empty library: its seccomp filter, its Landlock ruleset, one more object for the
# loader) and under bbx-run (the default policy, full journaling).  callgrind counts
# the instructions each process executes in user space; a workload gives the same count
# to a fraction of a per cent on any machine, loaded or not, which a shared VM's timings
# cannot.  It does not count the kernel's side: system calls (tests/e2e/t-cost.sh counts
# those per call) and page faults (lib.sh's faults column).
#
# Workloads (BENCH_COUNT, default "configure compile churn spawn"):
#   configure  zlib's ./configure: ~120 processes, most of them shells, gcc, sed, cat
#   compile    gcc -O2 -c of zlib's deflate.c: gcc, cc1, as
#   churn      churn.sh's workload: tar -x of its tree, sed -i of every 10th file
#              (BENCH_COUNT_EDITS, default 1100), rm -rf
#   spawn      bash starting /bin/true BENCH_COUNT_SPAWNS times (default 50)
#   cmake      json-c 0.16, a CMake project from Debian's archive (fetched once): cmake's
#              configure step and make of the shared library and its apps, ~1,600
#              processes (not in the default set: ~40 minutes for the three variants).
#              Its counts vary by about a per cent from run to run: cmake and make
#              decide by file times within one second, and a run has a few processes
#              more or fewer (cmake 380-385, the shells 274-280, session 43)
#
# callgrind dumps its counts before every fork and exec (--dump-before), so that what a
# fork child runs before its exec (there the shim writes the EXEC record) is counted,
# under its parent's program.  A "run" is one process running one program's code: a
# fork child that execs makes two, its parent's program's and its own.  The runs can
# differ by variant: a shell's vfork child that calls the shim's execve is dumped there,
# where bare its few instructions before the exec may go uncounted (valgrind runs vfork
# as a fork).  Two things differ from the timed runs, both printed with
# the results:
#   - the bbx variant's policy is the default one with [exec] static = allow.
#     valgrind's tool is a static program, which the default policy runs with a
#     warning on stderr; zlib's configure reads a compiler's stderr, so the warnings
#     changed what it decided and ran (+2.4 % instead of +1.6 % in session 42);
#   - valgrind 3.19 has no openat2 (ENOSYS): the shim's reads of absolute names take
#     the general path instead of one openat2, so reads count somewhat high.
# Usage: bench/count.sh        (needs valgrind; zlib's tarball is fetched once, as in
#                               compile.sh; churn needs churn.sh's tree in the cache)
. "$(dirname "$0")/lib.sh"
command -v valgrind >/dev/null 2>&1 || { echo "count: valgrind is not installed" >&2; exit 1; }
POL="$W/policy-static-allow.ini"
sed 's/^static = warn$/static = allow/' "$SRC/policy.ini" >"$POL"
grep -q '^static = allow$' "$POL" || { echo "count: no 'static = warn' line in $SRC/policy.ini" >&2; exit 1; }
CVARIANTS=bare
[ -n "$EMPTY" ] && CVARIANTS="$CVARIANTS layers"
CVARIANTS="$CVARIANTS bbx"

# counted NAME PREP CMD: PREP (a shell command, untimed and uncounted) makes $WD ready,
# then CMD runs there under callgrind in each variant; the profiles' parts go to
# $W/cg.NAME.VARIANT and are summed per program into $W/sum.NAME.VARIANT ("program runs
# instructions" lines).
counted() {
	local name=$1 prep=$2 v d
	shift 2
	for v in $CVARIANTS; do
		discard "$WD"
		mkdir -p "$WD"
		(cd "$WD" && sh -c "$prep") || { echo "count: $name: set-up failed" >&2; return 1; }
		d="$W/cg.$name.$v"
		rm -rf "$d" "$J"
		mkdir -p "$d"
		# A dump (which also zeroes the counts) before each fork and each exec: a fork
		# child's instructions before its exec (the shim's EXEC record is made there)
		# are then a part of their own, not lost when the new program's profile takes
		# the pid's file, nor counted twice through the counts a child inherits.
		local vg=(valgrind --tool=callgrind --trace-children=yes --dump-before=fork
			--dump-before=vfork '--dump-before=execv*' '--dump-before=execl*' --dump-before=fexecve
			"--callgrind-out-file=$d/cg.%p.%n"
			--log-file=/dev/null)
		case $v in
		bare) (cd "$WD" && "${vg[@]}" "$@") ;;
		layers) (cd "$WD" && BBX_SHIM=$EMPTY $BBX_RUN --journal "$J" -- "${vg[@]}" "$@") ;;
		bbx) (cd "$WD" && $BBX_RUN --policy "$POL" --journal "$J" -- "${vg[@]}" "$@") ;;
		esac >/dev/null 2>&1 || echo "count: $name ($v) exited non-zero" >&2
		# Per program (the first word of a part's command line; a fork child's part
		# before its exec is its parent's program's): the processes that ran its code
		# and their instructions.
		awk 'function done() {
				if (cmd != "") {if (!((pid, cmd) in seen)) {seen[pid, cmd] = 1; c[cmd]++}; s[cmd] += n}
				cmd = ""; n = 0
			}
			FNR == 1 {done(); pid = FILENAME; sub(/.*\/cg\./, "", pid); sub(/\..*/, "", pid)}
			/^cmd:/ {cmd = $2} /^summary:/ {n = $2}
			END {done(); for (k in c) print k, c[k], s[k]}' "$d"/cg.* | LC_ALL=C sort >"$W/sum.$name.$v"
		rm -f "$d"/cg.*
	done
	report "$name"
}

# report NAME: totals per variant, and the programs whose instructions grew most under
# bbx (per process, against bare).
report() {
	local name=$1 v tb t line
	tb=$(awk '{s += $3} END {print s}' "$W/sum.$name.bare")
	printf '%s:\n' "$name"
	for v in $CVARIANTS; do
		t=$(awk '{s += $3} END {print s}' "$W/sum.$name.$v")
		printf '  %-7s %5d runs %12.1f M instructions  %s\n' "$v" \
			"$(awk '{s += $2} END {print s}' "$W/sum.$name.$v")" "$(echo "$t" | awk '{print $1 / 1e6}')" \
			"$(awk -v a="$t" -v b="$tb" 'BEGIN {printf "%.4f x bare (%+.1f M)", a / b, (a - b) / 1e6}')"
	done
	echo "  bbx against bare, by program (the 8 largest differences; a fork child's instructions before its exec are its parent program's):"
	LC_ALL=C join -a2 -e 0 -o 0,1.2,1.3,2.2,2.3 "$W/sum.$name.bare" "$W/sum.$name.bbx" |
		awk '{d = $5 - $3; printf "%d %s %d %.1f %.1f %+.1f %+.1f\n", (d < 0 ? -d : d), $1, $4, $3 / 1e6, $5 / 1e6, d / 1e6, ($4 ? d / $4 / 1e3 : 0)}' |
		sort -rn | head -n 8 | while read -r _ line; do
			set -- $line
			printf '    %-44s %4d x  %10.1f -> %10.1f M  %+8.1f M  %+9.1f k a process\n' "$@"
		done
}

for wl in ${BENCH_COUNT:-configure compile churn spawn}; do
	case $wl in
	configure | compile)
		if ! t=$(debian_tarball "$ZLIB_ORIG"); then
			echo "count: no zlib tarball in $CACHE and $DEBIAN_POOL unreachable: $wl skipped" >&2
			continue
		fi
		if [ "$wl" = configure ]; then
			counted configure "tar -xf '$t' --strip-components=1" ./configure
		else
			counted compile "tar -xf '$t' --strip-components=1 && ./configure >/dev/null" \
				gcc -O2 -c deflate.c
		fi ;;
	churn)
		T="$CACHE/churn-tree.tar"
		if [ ! -f "$T" ]; then
			echo "count: no $T (bench/churn.sh makes it): churn skipped" >&2
			continue
		fi
		churn_work "$T" "${BENCH_COUNT_EDITS:-1100}"
		counted churn : sh -c "$CHURN_CMD" ;;
	cmake)
		command -v cmake >/dev/null 2>&1 || { echo "count: no cmake: cmake skipped" >&2; continue; }
		if ! t=$(debian_tarball "$JSONC_ORIG"); then
			echo "count: no json-c tarball in $CACHE and $DEBIAN_POOL unreachable: cmake skipped" >&2
			continue
		fi
		counted cmake "mkdir src && tar -xf '$t' -C src --strip-components=1" \
			sh -c 'cmake -S src -B b -DBUILD_TESTING=OFF -DBUILD_STATIC_LIBS=OFF >/dev/null 2>&1 && make -C b >/dev/null' ;;
	spawn)
		counted spawn : bash -c "for i in \$(seq ${BENCH_COUNT_SPAWNS:-50}); do /bin/true; done" ;;
	*) echo "count: unknown workload $wl" >&2; exit 2 ;;
	esac
done
echo "(callgrind, user-space instructions of every process; bbx's policy: the default with [exec] static = allow; valgrind $(valgrind --version | sed 's/valgrind-//') has no openat2, so the shim's reads by name take the general path)"
