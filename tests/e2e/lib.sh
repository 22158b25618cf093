# SPDX-License-Identifier: MIT
# tests/e2e/lib.sh - shared helpers for the end-to-end tests (sourced, bash).
#
# Every t-*.sh speaks TAP: plan N, then ok/not ok lines; the automake tap-driver
# counts each.  Paths come from the test environment (tests/local.mk):
#   BBX_BUILDDIR BBX_SRCDIR BBX_SHIM BBX_CALLWRAP, and PATH has the built tools.
set -u
T_N=0
T_FAIL=0
# Without a scratch directory every workspace path below would be empty, and the
# workloads would run wherever the test was started: stop instead.
T_TMP=$(mktemp -d "${TMPDIR:-/tmp}/bbx-e2e.XXXXXX") && [ -d "$T_TMP" ] || exit 99
export BBX_STATE_DIR="$T_TMP/state"
# git must never walk up out of a test's tree: if a test's own .git were unreadable
# (a shim bug), git would otherwise find and commit into whatever repository holds
# TMPDIR, the project's own checkout included.
export GIT_CEILING_DIRECTORIES="$T_TMP"
trap 'rm -rf "$T_TMP"' EXIT

plan() { echo "1..$1"; }
# ok COND-EXIT-STATUS DESCRIPTION   (use: cmd; ok $? "desc")
# With T_TODO set (a known, documented defect), the line carries "# TODO reason": the
# tap-driver counts a failure as XFAIL and a pass as XPASS, which fails the suite so the
# marker is removed once the defect is fixed.
ok() {
	T_N=$((T_N + 1))
	local todo=${T_TODO:+ # TODO $T_TODO}
	if [ "$1" -eq 0 ]; then echo "ok $T_N - $2$todo"; else
		echo "not ok $T_N - $2$todo"
		[ -n "$todo" ] || T_FAIL=$((T_FAIL + 1))
	fi
}
diag() { printf '# %s\n' "$@" >&2; }
skip() { T_N=$((T_N + 1)); echo "ok $T_N # SKIP $1"; }

# snap DIR > FILE: type, mode, owner, size, sha256, link target, mtime(ns) of every path.
snap() { "${PYTHON3:-python3}" "$BBX_SRCDIR/tests/e2e/snapshot.py" "$1"; }

# same_snap A B DESC: the two snapshot files are identical (prints a diff if not).
same_snap() {
	if cmp -s "$1" "$2"; then ok 0 "$3"; else diff "$1" "$2" | head -20 | sed 's/^/# /' >&2; ok 1 "$3"; fi
}

# A fresh workspace directory.
new_ws() { local d; d=$(mktemp -d "$T_TMP/ws.XXXXXX"); echo "$d"; }

finish() { exit $((T_FAIL > 0 ? 1 : 0)); }
