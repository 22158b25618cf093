#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/churn.sh - the churn workload, timed as one command under every variant of
# lib.sh, alternating: untar a tree of ~10k files, edit 1,100 of them in place with
# `sed -i` (a new file renamed over each), rm -rf the tree.  The tree is
# bench/.cache/churn-tree.tar, made once: two copies of the node_modules tree of npm.sh's
# project if its cache is there (real files: ~11k), else a generated tree of
# BENCH_CHURN_FILES files (default 10000) in 100 directories.
# Usage: bench/churn.sh [ROUNDS]      (BENCH_CHURN_EDITS: files edited, default 1100)
. "$(dirname "$0")/lib.sh"
ROUNDS=${1:-$ROUNDS}
EDITS=${BENCH_CHURN_EDITS:-1100}
T="$CACHE/churn-tree.tar"
if [ ! -f "$T" ]; then
	mkdir -p "$CACHE" "$W/mk"
	nm="$CACHE/npmproj/node_modules"
	if [ -d "$nm" ]; then
		cp -a "$nm" "$W/mk/a" && cp -a "$nm" "$W/mk/b"
	else
		n=${BENCH_CHURN_FILES:-10000}
		for d in $(seq 100); do
			mkdir -p "$W/mk/t/d$d"
			for f in $(seq $((n / 100))); do
				printf 'line %s of file %s\nsecond line\n' "$f" "$d" >"$W/mk/t/d$d/f$f.txt"
			done
		done
	fi
	tar -cf "$T.tmp" -C "$W/mk" . && mv "$T.tmp" "$T"
	rm -rf "$W/mk"
fi
churn_work "$T" "$EDITS"
echo "churn: $(basename "$T"): $CHURN_TOTAL files, $(wc -l <"$W/edits") edited with sed -i, then rm -rf" >&2
setup() { mkdir -p "$WD"; }
teardown() { discard "$WD"; }
bench churn sh -c "$CHURN_CMD"
table churn
