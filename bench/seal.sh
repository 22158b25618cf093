#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/seal.sh - the seal alone (journal/seal.c: the FINAL records bbx-run writes once
# the command has ended), timed on copies of one run's directory.  The run is the edit
# workload's first half (git init, add and commit of the tree, sed -i on 400 files,
# commit), made once under this build's bbx-run; each round seals a fresh copy of it
# again with bench/sealtime linked against this build and, with BENCH_OLD_BUILDDIR,
# against that one, alternating which goes first.  Twice: with the tree as the run left
# it (every path stated), and with its .git moved away (every path below it then in a
# removed directory, as after an rm -rf).  Usage: bench/seal.sh [ROUNDS]
. "$(dirname "$0")/lib.sh"
ROUNDS=${1:-$ROUNDS}
XX=$(pkg-config --libs libxxhash 2>/dev/null || echo -lxxhash)
# sealtime BUILDDIR OUT: bench/sealtime.c linked against that build's journal libraries.
sealtime() {
	${CC:-cc} -O2 -Wall -Wextra -Werror -I"$SRC" -I"$SRC/journal" "$SRC/bench/sealtime.c" \
		"$1/journal/.libs/libbbxundo.a" "$1/journal/.libs/libbbxjournal.a" $XX -lpthread -o "$2"
}
builds=bbx
sealtime "$B" "$W/sealtime.bbx"
if [ -n "${BENCH_OLD_BUILDDIR:-}" ]; then
	builds="old bbx"
	sealtime "$(cd "$BENCH_OLD_BUILDDIR" && pwd)" "$W/sealtime.old"
fi
what=$(real_tree "$WD")
find "$WD" -type f | sed "s|^$WD/||" | awk 'NR % 14 == 0 && c < 400 {print; c++}' >"$W/edits"
g='git -c user.name=bench -c user.email=bench@localhost -c gc.auto=0'
(cd "$WD" && $BBX_RUN --journal "$J" -- sh -c "$g init -q . && $g add -A && $g commit -qm one &&
	xargs -a '$W/edits' sed -i 's/e/E/' && $g commit -qam two") >/dev/null
echo "seal: $what; its run: git init/add/commit, sed -i on $(wc -l <"$W/edits") files, commit ($(du -k "$J/journal" | cut -f1) KiB of journal)"
# rounds STATE: every build, ROUNDS times, on fresh copies; ms into $W/ms.STATE.BUILD.
rounds() {
	local r b order
	for ((r = 0; r < ROUNDS; r++)); do
		order=$builds
		[ $((r % 2)) = 1 ] && [ "$builds" = "old bbx" ] && order="bbx old"
		for b in $order; do
			rm -rf "$W/c"
			cp -a "$J" "$W/c"
			"$W/sealtime.$b" "$W/c" >"$W/out"
			read -r _ paths _ ms <"$W/out"
			echo "$ms" >>"$W/ms.$1.$b"
			echo "$paths" >"$W/paths.$1"
		done
	done
}
rounds kept
mv "$WD/.git" "$W/git.aside"
rounds gone
mv "$W/git.aside" "$WD/.git"
printf '%-44s %-8s %8s %15s %7s\n' "the tree at the seal" build median_ms min-max ratio
for s in kept gone; do
	case $s in
	kept) label="as the run left it ($(cat "$W/paths.$s") paths)" ;;
	gone) label=".git moved away ($(cat "$W/paths.$s") paths)" ;;
	esac
	for b in $builds; do
		ratio=-
		[ "$b" = bbx ] && [ -f "$W/ms.$s.old" ] && ratio=$(printf '%.3f' "$(div "$(med "$W/ms.$s.bbx")" "$(med "$W/ms.$s.old")")")
		printf '%-44s %-8s %8.1f %15s %7s\n' "$label" "$b" "$(med "$W/ms.$s.$b")" "$(mm "$W/ms.$s.$b" %.1f)" "$ratio"
	done
done
echo "  ($ROUNDS rounds, alternating; ratio = bbx / old; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
