#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/edit.sh - the edit workload under every variant of lib.sh, alternating, timed as
# one command on a real tree (the node_modules tree of npm.sh's project when its cache is
# there, else bbx's own `git archive` copied 4 times): git init, add, commit; sed -i on
# BENCH_EDIT_FILES files (default 400) and commit -a; checkout of the first commit
# (rewrites those files); sed -i on the same files again.
# Usage: bench/edit.sh [ROUNDS]
. "$(dirname "$0")/lib.sh"
ROUNDS=${1:-$ROUNDS}
N=${BENCH_EDIT_FILES:-400}
what=$(real_tree "$W/tpl")
(cd "$W/tpl" && find . -type f \( -name '*.js' -o -name '*.c' -o -name '*.h' -o -name '*.md' \) |
	sort | awk -v n="$N" 'NR % 3 == 0 && c < n {print; c++}') >"$W/edits"
echo "edit: $what: $(find "$W/tpl" -type f | wc -l) files, $(du -sm "$W/tpl" | cut -f1) MB; sed -i on $(wc -l <"$W/edits") files" >&2
setup() { cp -a "$W/tpl" "$WD"; }
teardown() { discard "$WD"; }
g='git -c user.name=bench -c user.email=bench@localhost -c gc.auto=0'
bench edit sh -c "$g init -q . && $g add -A && $g commit -qm one &&
	xargs -a '$W/edits' sed -i 's/e/E/' && $g commit -qam two &&
	$g checkout -q HEAD~1 && xargs -a '$W/edits' sed -i 's/a/A/'"
table edit
