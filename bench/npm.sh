#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/npm.sh - the npm workload: `npm install --offline` of a project depending on
# jest, eslint and typescript (337 packages, ~5,600 files) from a local cache, under
# every variant of lib.sh, alternating; node_modules removed between runs (untimed).
# The cache (bench/.cache/npm) and the lock file are made once, online; afterwards the
# script works offline.  Skipped with a message if npm is missing or the cache cannot be
# made.   Usage: bench/npm.sh [ROUNDS]
. "$(dirname "$0")/lib.sh"
ROUNDS=${1:-$ROUNDS}
command -v npm >/dev/null || { echo "npm: npm not installed, skipped" >&2; exit 0; }
P="$CACHE/npmproj"
if [ ! -f "$P/package-lock.json" ] || [ ! -d "$CACHE/npm" ]; then
	mkdir -p "$P"
	cat >"$P/package.json" <<'JSON'
{"name":"bbx-bench-npm","version":"1.0.0","private":true,
 "dependencies":{"jest":"29.7.0","eslint":"8.57.0","typescript":"5.4.5"}}
JSON
	echo "npm: populating $CACHE/npm once (online)" >&2
	(cd "$P" && npm install --cache "$CACHE/npm" --no-audit --no-fund >/dev/null 2>&1) ||
		{ echo "npm: cannot populate the cache (offline?), skipped" >&2; exit 0; }
fi
setup() { mkdir -p "$WD" && cp "$P/package.json" "$P/package-lock.json" "$WD/"; }
teardown() { rm -rf "$WD"; }
echo "npm: npm install --offline of jest+eslint+typescript ($(grep -c '"resolved"' "$P/package-lock.json") packages)" >&2
bench npm npm install --offline --cache "$CACHE/npm" --no-audit --no-fund --loglevel=error
table npm "npm install --offline"
