# SPDX-License-Identifier: MIT
# bench/lib.sh - shared harness for the benchmarks (sourced, bash).  Each workload script
# defines its untimed set-up/tear-down and calls `bench NAME CMD...`: every round runs
# CMD once under each variant, alternating, each round starting one variant later
# (A B C D E, B C D E A, ...), and `table` prints
# per variant the median, min-max, the ratio of medians to bare, the median of the
# rounds' own ratios to bare (paired: each round's run over the same round's bare run)
# and, for bbx, the journal size and the bytes preserved.  cpu_s is the user+system CPU time of the
# command and its waited-for children (bash's `time`): less sensitive to other load on a
# shared machine than elapsed time, but blind to daemons (fakeroot's faked).  faults is
# the same tree's minor page faults (GNU time's %R), when /usr/bin/time is installed:
# the one figure that repeats exactly on a noisy machine, and most of what starting a
# process costs.  Timings never gate tests.
#
# Environment knobs (all optional):
#   BBX_BUILDDIR     a built tree (default: the source tree)
#   BENCH_ROUNDS     rounds (default 5; scripts may take it as $1 too)
#   BENCH_VARIANTS   which variants, in order (default "bare layers bbx installwatch
#                    fakeroot strace"); layers is bbx-run preloading an empty library
#                    instead of the shim: its seccomp filter and Landlock ruleset and the
#                    cost of preloading any library, the floor under the bbx row; two
#                    more split that floor: kernel (bbx-run's seccomp filter and Landlock
#                    ruleset, nothing preloaded) and preload (the empty library preloaded,
#                    no bbx-run)
#   BENCH_BBX_RUN    the bbx invocation before "--journal DIR -- CMD" (default "$B/tools/bbx-run -q");
#                    set it to add a policy option once bbx-run has one
#   BENCH_OLD_BUILDDIR  another built tree (e.g. a git worktree of an earlier commit):
#                    the variant "old" runs its bbx-run, beside this tree's "bbx", so that
#                    a change is measured old against new in one alternating run
#                    (BENCH_VARIANTS="bare old bbx"); its ratio is to bare, as bbx's
#   BENCH_TMPDIR     where the work directory goes (default: the build tree; not /tmp,
#                    which installwatch never backs up)
#   BENCH_CACHE      one-time downloads (default bench/.cache in the source tree)
#   BENCH_SYNC       1 (default): sync(1) after each set-up, before the clock starts, so
#                    that the writeback of a copied tree is not paid by the timed run
#   BENCH_JOURNAL_DIR  where bbx's journals go (default: beside the work directory).  On
#                    another filesystem than BENCH_TMPDIR (say BENCH_TMPDIR=/dev/shm/x
#                    and this on the disk: a workspace in a tmpfs /tmp, the state
#                    directory in $HOME) no pre-image can be a hard link: every removal
#                    and every rename over a file older than the run is a byte copy
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=$(cd "${BBX_BUILDDIR:-$SRC}" && pwd)
RUN="$B/tools/bbx-run"
UNDO="$B/tools/bbx-undo"
LOG="$B/tools/bbx-log"
BBX_RUN=${BENCH_BBX_RUN:-"$RUN -q"}
ROUNDS=${BENCH_ROUNDS:-5}
VARIANTS=${BENCH_VARIANTS:-"bare layers bbx installwatch fakeroot strace"}
CACHE=${BENCH_CACHE:-$SRC/bench/.cache}
[ -x "$RUN" ] || { echo "bench: $RUN not built (set BBX_BUILDDIR)" >&2; exit 1; }
W=$(mktemp -d "${BENCH_TMPDIR:-$B}/bbx-bench.XXXXXX")
# The work directory sits inside the build tree by default: git must not walk up
# into the project's repository from it.
export GIT_CEILING_DIRECTORIES="$W"
JW=$W
[ -n "${BENCH_JOURNAL_DIR:-}" ] && JW=$(mktemp -d "$BENCH_JOURNAL_DIR/bbx-bench-j.XXXXXX")
trap 'chmod -R u+w "$W" 2>/dev/null; rm -rf "$W"; [ "$JW" = "$W" ] || rm -rf "$JW"' EXIT
export BBX_STATE_DIR="$W/state"
WD="$W/wd"	# the timed command runs here
# bbx-run's default policy makes ${WORKSPACE} (the directory the run starts in, unless
# BBX_WORKSPACE says otherwise) writable: the bench's scratch directory is the workspace.
export BBX_WORKSPACE="$W"
J="$JW/j"	# the bbx journal of the current run
IW="$W/iw"	# the installwatch root (log and BACKUP/) of the current run

DEBIAN_POOL=${BENCH_DEBIAN_POOL:-http://deb.debian.org/debian/pool/main}
ZLIB_ORIG=${BENCH_ZLIB_ORIG:-z/zlib/zlib_1.2.13.dfsg.orig.tar.bz2}
JSONC_ORIG=${BENCH_JSONC_ORIG:-j/json-c/json-c_0.16.orig.tar.gz}
# debian_tarball POOL-PATH: the cached copy of a tarball from Debian's archive (the one
# network this machine class reaches besides npm), fetched once.
debian_tarball() {
	local t="$CACHE/${1##*/}"
	if [ ! -s "$t" ]; then
		mkdir -p "$CACHE"
		echo "bench: fetching ${1##*/} once into $CACHE" >&2
		curl -sSf --max-time 120 -o "$t.part" "$DEBIAN_POOL/$1" && mv "$t.part" "$t" ||
			{ rm -f "$t.part"; return 1; }
	fi
	echo "$t"
}

# churn_work TAR EDITS: the churn workload's files to edit, every k-th regular file of
# TAR, EDITS of them, into $W/edits; CHURN_TOTAL the tree's regular files and CHURN_CMD
# the workload (for `sh -c`): untar, sed -i those files, rm -rf the tree.
churn_work() {
	tar -tvf "$1" | awk '$1 ~ /^-/ {print $NF}' >"$W/all"
	CHURN_TOTAL=$(wc -l <"$W/all")
	awk -v k=$((CHURN_TOTAL / $2)) -v n="$2" 'NR % k == 0 && c < n {print; c++}' "$W/all" >"$W/edits"
	CHURN_CMD="tar -xf '$1' && xargs -a '$W/edits' sed -i 's/e/E/' && rm -rf ./*"
}

# discard PATH...: out of the way, deleted at exit rather than now.  ext4 without a
# journal (this machine's root filesystem) allocates new inodes past the ones freed in
# the last minutes, checking each of them (recently_deleted(), seen with perf): after a
# round deleted thousands of files, the next round's creations took seconds more system
# time, in whichever variant came next (edit bare: 1.9 s or 5.8 s by turns).  Between
# rounds nothing is freed, so no variant pays for another's clean-up.  With less than
# BENCH_GRAVE_MIN_GB (default 20) free, paths are removed at once (and said so).
GRAVE="$W/.grave"
GRAVE_OK=1
if [ "$(df -Pk "$W" | awk 'NR == 2 {print int($4 / 1048576)}')" -lt "${BENCH_GRAVE_MIN_GB:-20}" ]; then
	GRAVE_OK=0
	echo "bench: less than ${BENCH_GRAVE_MIN_GB:-20} GB free: trees are removed between rounds" >&2
fi
discard() {
	local p d
	for p in "$@"; do
		[ -e "$p" ] || continue
		if [ "$GRAVE_OK" = 1 ] && mkdir -p "$GRAVE" && d=$(mktemp -d "$GRAVE/d.XXXXXX") &&
			mv "$p" "$d/"; then
			continue
		fi
		chmod -R u+w "$p" 2>/dev/null
		rm -rf "$p"
	done
}

# now VAR: the wall clock into VAR, read by the shell itself.  $(date +%s.%N) counted a
# fork and an exec of date(1) into every interval (the second reading is taken in a new
# process after the command ended): ~3 ms on the session-18 VM, 15 % of a no-op
# transaction.  bash >= 5 has $EPOCHREALTIME; older shells fall back to date(1).
now() {
	if [ -n "${EPOCHREALTIME:-}" ]; then
		printf -v "$1" '%s' "${EPOCHREALTIME/,/.}"
	else
		printf -v "$1" '%s' "$(date +%s.%N)"
	fi
}
# timeit FILE CMD...: append the elapsed seconds of CMD to FILE.
timeit() {
	local f=$1 t0 t1
	shift
	now t0
	"$@" >/dev/null 2>&1
	now t1
	echo "$t1 - $t0" | bc >>"$f"
}
med() { sort -n "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mm() { sort -n "$1" | awk -v f="${2:-%.3f}" 'NR==1{mn=$1} {mx=$1} END {printf f "-" f, mn, mx}'; }
div() { echo "$1 / $2" | bc -l; }
# pmed A B: the median of the rounds' own ratios, A's round i over B's round i (the files
# hold one time per round, in round order).  A round's two runs are minutes apart at
# most, so a slow spell of the shared machine slows both; the ratio of medians can pair
# one variant's fast round with another's slow one.
pmed() { paste "$1" "$2" | awk '$2 > 0 {printf "%.6f\n", $1 / $2}' | sort -n |
	awk '{a[NR]=$1} END {if (NR) printf "%.3f", a[int((NR+1)/2)]; else printf "-"}'; }

# real_tree DIR: a real tree copied into DIR (made): the node_modules tree of npm.sh's
# project when its cache is there, else bbx's own `git archive` 4 times; prints which.
# The node_modules tree is installed once from npm.sh's cache (offline, untimed) and
# kept beside its lock file: npm.sh itself leaves none there.
real_tree() {
	local p="$CACHE/npmproj" nm="$CACHE/npmproj/node_modules" i
	if [ ! -d "$nm" ] && [ -f "$p/package-lock.json" ] && [ -d "$CACHE/npm" ] &&
		command -v npm >/dev/null 2>&1; then
		(cd "$p" && npm ci --offline --cache "$CACHE/npm" --no-audit --no-fund \
			--omit-lockfile-registry-resolved=false --loglevel=error) >/dev/null 2>&1 ||
			rm -rf "$nm"
	fi
	mkdir -p "$1"
	if [ -d "$nm" ]; then
		cp -a "$nm/." "$1/"
		echo "node_modules of npm.sh's project"
	else
		for i in 1 2 3 4; do
			mkdir "$1/c$i" && git -C "$SRC" archive --format=tar HEAD | tar -x -C "$1/c$i"
		done
		echo "bbx's git archive x4 (npm.sh cache absent)"
	fi
}

# The "layers" variant's library: nothing in it, so a run under it costs what bbx-run's
# kernel layers and the loader's handling of one more preloaded library cost.
EMPTY=
if [[ " $VARIANTS " == *" layers "* || " $VARIANTS " == *" kernel "* ||
	" $VARIANTS " == *" preload "* ]]; then
	echo 'int bbx_bench_empty;' >"$W/empty.c"
	${CC:-cc} -shared -fPIC -o "$W/empty.so" "$W/empty.c" 2>/dev/null && EMPTY="$W/empty.so"
fi

# The variants that can run here; a peer that is not installed is skipped, said once.
ACTIVE=
for v in $VARIANTS; do
	case $v in
	bare | bbx) ACTIVE="$ACTIVE $v" ;;
	old)
		if [ -x "${BENCH_OLD_BUILDDIR:-}/tools/bbx-run" ]; then ACTIVE="$ACTIVE $v"
		else echo "bench: BENCH_OLD_BUILDDIR has no built tools/bbx-run, variant old skipped" >&2; fi ;;
	layers | kernel | preload)
		if [ -n "$EMPTY" ]; then ACTIVE="$ACTIVE $v"
		else echo "bench: no C compiler for the layers variant's empty library, skipped" >&2; fi ;;
	installwatch | fakeroot | strace)
		if command -v "$v" >/dev/null 2>&1; then ACTIVE="$ACTIVE $v"
		else echo "bench: $v not installed, variant skipped" >&2; fi ;;
	*) echo "bench: unknown variant $v" >&2; exit 2 ;;
	esac
done

# vrun VARIANT CMD...: CMD under VARIANT.  installwatch -b copies every original it
# would change into $IW/BACKUP (checked by hand: content identical), its log in $IW.
vrun() {
	local v=$1
	shift
	# shellcheck disable=SC2086 # BBX_RUN is a command line, split on purpose
	case $v in
	bare) "$@" ;;
	bbx) $BBX_RUN --journal "$J" -- "$@" ;;
	old) "$BENCH_OLD_BUILDDIR/tools/bbx-run" -q --journal "$J" -- "$@" ;;
	layers) BBX_SHIM=$EMPTY $BBX_RUN --journal "$J" -- "$@" ;;
	kernel) BBX_SHIM=$EMPTY $BBX_RUN --journal "$J" -- env -u LD_PRELOAD "$@" ;;
	preload) LD_PRELOAD=$EMPTY "$@" ;;
	installwatch) mkdir -p "$IW" && installwatch -b -r "$IW" -o "$IW/log" "$@" ;;
	fakeroot) fakeroot -- "$@" ;;
	strace) strace -f -e trace=file,process -o /dev/null "$@" ;;
	esac
}

# Overridable hooks: setup before each timed run (untimed, cwd $W), teardown after;
# check after a run that exited 0 (untimed, cwd $W, before teardown): non-zero marks the
# round failed, as a non-zero exit does (a workload that can fail quietly says what a
# real result looks like).
setup() { :; }
check() { :; }
teardown() { :; }

kib() { du -sk "$1" 2>/dev/null | cut -f1 || echo 0; }

# How bench calls vrun: through GNU time, for the command's minor page faults, inside a
# bash that calls vrun (the same extra bash start in every variant, outside bbx-run).
if [ -x /usr/bin/time ]; then
	export -f vrun
	export BBX_RUN J IW EMPTY BENCH_OLD_BUILDDIR
	VRUN=(/usr/bin/time -f %R -o "$W/flt" bash -c 'vrun "$@"' vrun)
else
	VRUN=(vrun)
fi

# bench NAME CMD...: ROUNDS rounds of CMD (run in $WD) under every active variant.
bench() {
	local name=$1 r v rc real user sys TIMEFORMAT='%3R %3U %3S'
	shift
	local order n=0
	for r in $(seq "$ROUNDS"); do
		# Each round starts one variant later (A B C, B C A, C A B, ...): no variant
		# always runs first, right after the previous round's tear-down.
		order=$(echo $ACTIVE | awk -v k=$n '{for (i = 0; i < NF; i++) printf "%s ", $((i + k) % NF + 1)}')
		n=$((n + 1))
		for v in $order; do
			discard "$J" "$IW"
			(cd "$W" && setup)
			# What set-up wrote (edit and build copy a tree of thousands of files) is
			# flushed before the clock starts, not during the next variant's run.
			[ "${BENCH_SYNC:-1}" = 1 ] && sync
			rc=0
			rm -f "$W/flt"
			{ time { (cd "$WD" && "${VRUN[@]}" "$v" "$@") >"$W/out" 2>&1 || rc=$?; }; } 2>"$W/tm"
			read -r real user sys <"$W/tm"
			echo "$real" >>"$W/t.$name.$v"
			echo "$user + $sys" | bc >>"$W/c.$name.$v"
			[ -s "$W/flt" ] && tail -n 1 "$W/flt" >>"$W/f.$name.$v"
			if [ "$rc" = 0 ] && ! (cd "$W" && check) >>"$W/out" 2>&1; then
				rc="0 but its result failed the check"
			fi
			if [ "$rc" != 0 ]; then
				echo "bench: $name under $v exited $rc (round $r); its last output:" >&2
				tail -n 5 "$W/out" >&2
				echo "$r" >>"$W/fail.$name.$v"
			fi
			case $v in
			bbx)
				if [ -f "$J/journal" ]; then
					echo $(($(stat -c %s "$J/journal") / 1024)) >>"$W/jk.$name"
					kib "$J/objects" >>"$W/ok.$name"
					find "$J/objects" -type f 2>/dev/null | wc -l >>"$W/on.$name"
					if "$LOG" --help 2>&1 | grep -q -- --stats; then
						"$LOG" --stats "$J" >"$W/stats.$name" 2>&1 || true
					fi
				fi ;;
			installwatch)
				kib "$IW/BACKUP" >>"$W/iwk.$name"
				find "$IW/BACKUP" -path "$IW/BACKUP/no-backup" -prune -o -type f -print 2>/dev/null |
					wc -l >>"$W/iwn.$name" ;;
			esac
			(cd "$W" && teardown)
			discard "$J" "$IW"
		done
	done
}

# table NAME [LABEL]: the rows of workload NAME, one per variant.
table() {
	local name=$1 label=${2:-$1} v f c base cbase extra
	base= cbase=
	[ -s "$W/t.$name.bare" ] && base=$(med "$W/t.$name.bare") && cbase=$(med "$W/c.$name.bare")
	printf '%-22s %-12s %9s %17s %7s %7s %7s %7s %9s  %s\n' workload variant median_s min-max ratio paired cpu_s cpu_rt faults kept
	for v in $ACTIVE; do
		f="$W/t.$name.$v"
		extra=-
		case $v in
		bbx) [ -s "$W/jk.$name" ] && extra="journal $(med "$W/jk.$name") KiB, objects $(med "$W/ok.$name") KiB ($(med "$W/on.$name") files)" ;;
		installwatch) [ -s "$W/iwk.$name" ] && extra="BACKUP $(med "$W/iwk.$name") KiB ($(med "$W/iwn.$name") originals)" ;;
		esac
		[ -s "$W/fail.$name.$v" ] && extra="$extra; FAILED in $(wc -l <"$W/fail.$name.$v") of $ROUNDS rounds"
		c="$W/c.$name.$v"
		printf '%-22s %-12s %9.3f %17s %7s %7s %7.2f %7s %9s  %s\n' "$label" "$v" "$(med "$f")" "$(mm "$f")" \
			"$([ -n "$base" ] && printf '%.3f' "$(div "$(med "$f")" "$base")" || echo -)" \
			"$([ -n "$base" ] && pmed "$f" "$W/t.$name.bare" || echo -)" \
			"$(med "$c")" "$([ -n "$cbase" ] && printf '%.2f' "$(div "$(med "$c")" "$cbase")" || echo -)" \
			"$([ -s "$W/f.$name.$v" ] && med "$W/f.$name.$v" || echo -)" "$extra"
	done
	if [ -s "$W/t.$name.layers" ] && [ -s "$W/t.$name.bbx" ]; then
		printf '  the shim alone (bbx / layers): %.3f elapsed (paired %s), %.3f CPU\n' \
			"$(div "$(med "$W/t.$name.bbx")" "$(med "$W/t.$name.layers")")" \
			"$(pmed "$W/t.$name.bbx" "$W/t.$name.layers")" \
			"$(div "$(med "$W/c.$name.bbx")" "$(med "$W/c.$name.layers")")"
	fi
	[ -s "$W/stats.$name" ] && sed 's/^/  bbx-log --stats: /' "$W/stats.$name"
	echo "  ($ROUNDS rounds, alternating$(printf ' %s' $ACTIVE), each round starting one later; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
}
