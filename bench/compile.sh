#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/compile.sh - build of a real C project (bbx itself: configure + make -j2), bare
# and under bbx-run, alternating A B A B in one invocation; prints medians, min-max, the
# ratio and the journal size.  Usage: bench/compile.sh [RUNS]   (BBX_BUILDDIR: a built tree)
. "$(dirname "$0")/lib.sh"
RUNS=${1:-5}
git -C "$SRC" archive --format=tar HEAD | (mkdir -p "$W/tpl" && tar -x -C "$W/tpl")
(cd "$W/tpl" && autoreconf -fi >/dev/null 2>&1)
build='./configure -q >/dev/null && make -j2 >/dev/null 2>&1'
: >"$W/bare"; : >"$W/bbx"; : >"$W/jsize"
for i in $(seq "$RUNS"); do
	cp -a "$W/tpl" "$W/src.$i"
	(cd "$W/src.$i" && timeit "$W/bare" sh -c "$build")
	rm -rf "$W/src.$i"
	cp -a "$W/tpl" "$W/src.$i"
	(cd "$W/src.$i" && timeit "$W/bbx" "$RUN" -q --journal "$W/j.$i" -- sh -c "$build")
	du -sk "$W/j.$i" | cut -f1 >>"$W/jsize"
	rm -rf "$W/src.$i" "$W/j.$i"
done
header
row "compile (configure+make -j2)" "$W/bare" "$W/bbx"
echo "journal: $(med "$W/jsize") KiB (median)"
