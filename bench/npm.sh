#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/npm.sh - the npm workload: `npm install --offline` of a project depending on
# jest, eslint and typescript (337 packages, ~5,600 files) from a local cache, under
# every variant of lib.sh, alternating; node_modules removed between runs (untimed).
# The cache (bench/.cache/npm) and the lock file are made once, online; afterwards the
# script works offline.  Skipped with a message if npm is missing or the cache cannot be
# made.   Usage: bench/npm.sh [ROUNDS]
#
# The lock file must carry `resolved` (and `integrity`) for every package: then an
# offline install takes each tarball from the cache by its integrity and needs no
# packument.  A lock made with omit-lockfile-registry-resolved=true (a user npmrc may set
# it) has no `resolved`, and `npm install --offline` then asks for the abbreviated
# ("corgi") packuments to find the tarballs; the online install without a lock cached only
# full packuments (npm 11 builds the ideal tree with fullMetadata, Accept:
# application/json), and make-fetch-happen serves a cached response only to a request
# with the same Accept, so every run failed with ENOTCACHED.  Hence the option, given
# explicitly, at both steps.
. "$(dirname "$0")/lib.sh"
ROUNDS=${1:-$ROUNDS}
command -v npm >/dev/null || { echo "npm: npm not installed, skipped" >&2; exit 0; }
P="$CACHE/npmproj"
NPMC="$CACHE/npm"
# npm writes a debug log per run into its cache, outside bbx-run's default write roots
# (bbx refuses it, EACCES, and npm carries on without it): every variant writes it into
# the project instead, a fresh directory each run (no pruning of older logs), so all do
# the same work.
NPMOPT=(--cache "$NPMC" --omit-lockfile-registry-resolved=false --no-audit --no-fund)
OFFLINE=(install --offline "${NPMOPT[@]}" --logs-dir "$WD/.npm-logs" --loglevel=error)
# lockok: every package of the lock file has resolved and integrity.
lockok() {
	node -e '
const l = require(process.argv[1]), k = Object.keys(l.packages || {}).filter(x => x)
const bad = k.filter(x => !l.packages[x].resolved || !l.packages[x].integrity)
process.exit(k.length > 0 && bad.length === 0 ? 0 : 1)' "$P/package-lock.json" 2>/dev/null
}
if [ ! -f "$P/package-lock.json" ] || [ ! -d "$NPMC" ] || ! lockok; then
	rm -rf "$P" "$NPMC"
	mkdir -p "$P"
	cat >"$P/package.json" <<'JSON'
{"name":"bbx-bench-npm","version":"1.0.0","private":true,
 "dependencies":{"jest":"29.7.0","eslint":"8.57.0","typescript":"5.4.5"}}
JSON
	echo "npm: populating $NPMC once (online)" >&2
	if ! (cd "$P" && npm install "${NPMOPT[@]}" >"$W/populate.out" 2>&1) || ! lockok; then
		tail -n 5 "$W/populate.out" >&2
		rm -f "$P/package-lock.json"
		echo "npm: cannot populate the cache (offline?), skipped" >&2
		exit 0
	fi
	rm -rf "$P/node_modules"
fi
setup() { mkdir -p "$WD" && cp "$P/package.json" "$P/package-lock.json" "$WD/"; }
# check: every package of the lock file (the pristine copy) is in node_modules at its version (an optional
# package for another platform, fsevents, may be missing), and tsc, jest, eslint run.
check() {
	node -e '
const path = require("path"), fs = require("fs"), wd = process.argv[1]
const l = require(process.argv[2])
let n = 0, bad = []
for (const [k, e] of Object.entries(l.packages)) {
	if (!k) continue
	const f = path.join(wd, k, "package.json")
	if (!fs.existsSync(f)) { if (!e.optional) bad.push(k + " missing"); continue }
	const v = JSON.parse(fs.readFileSync(f, "utf8")).version
	if (v !== e.version) bad.push(k + " " + v + " != " + e.version); else n++
}
if (bad.length) { console.log("npm: install incomplete: " + bad.slice(0, 5).join(", ")); process.exit(1) }
if (n < 300) { console.log("npm: only " + n + " packages installed"); process.exit(1) }' "$WD" "$P/package-lock.json" &&
		[ "$("$WD/node_modules/.bin/tsc" --version)" = "Version 5.4.5" ] &&
		[ "$("$WD/node_modules/.bin/jest" --version)" = 29.7.0 ] &&
		[ "$("$WD/node_modules/.bin/eslint" --version)" = v8.57.0 ]
}
teardown() { discard "$WD"; }
# Untimed: one offline install, bare, to check the cache answers and to warm the page
# cache, so the first timed variant does not pay for a cold cache.
setup
(cd "$WD" && npm "${OFFLINE[@]}" >"$W/out" 2>&1) && check >>"$W/out" 2>&1 ||
	{ tail -n 5 "$W/out" >&2; echo "npm: the offline install from $NPMC failed (delete it to make it again)" >&2; exit 1; }
teardown
echo "npm: npm install --offline of jest+eslint+typescript ($(grep -c '"resolved"' "$P/package-lock.json") packages in the lock file)" >&2
bench npm npm "${OFFLINE[@]}"
table npm "npm install --offline"
