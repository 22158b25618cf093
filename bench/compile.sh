#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/compile.sh - the build workload: configure + make -j2 of real C projects, under
# every variant of lib.sh, alternating.  Projects (BENCH_BUILD_PROJECTS, default
# "bbx sqlite"): bbx itself from a `git archive` of HEAD (autoreconf'd once, untimed), and
# the SQLite autoconf tarball shipped in the npm package sqlite3 (deps/sqlite-autoconf-*),
# fetched once with `npm pack` into bench/.cache; skipped with a message if it is absent
# and the registry cannot be reached.
# Usage: bench/compile.sh [ROUNDS]
. "$(dirname "$0")/lib.sh"
ROUNDS=${1:-$ROUNDS}
SQLITE_NPM=${BENCH_SQLITE_NPM:-sqlite3@6.0.1}
setup() { cp -a "$W/tpl" "$WD"; }
teardown() { discard "$WD"; }

sqlite_tarball() {
	local t
	t=$(ls "$CACHE"/sqlite-autoconf-*.tar.gz 2>/dev/null | head -n 1)
	if [ -z "$t" ]; then
		mkdir -p "$CACHE"
		echo "compile: fetching $SQLITE_NPM once (npm pack) into $CACHE" >&2
		(cd "$CACHE" && npm pack --silent "$SQLITE_NPM" >/dev/null 2>&1 &&
			tar -xzf sqlite3-*.tgz --strip-components=2 --wildcards 'package/deps/sqlite-autoconf-*.tar.gz' &&
			rm -f sqlite3-*.tgz) || return 1
		t=$(ls "$CACHE"/sqlite-autoconf-*.tar.gz 2>/dev/null | head -n 1)
	fi
	[ -n "$t" ] && echo "$t"
}

for p in ${BENCH_BUILD_PROJECTS:-bbx sqlite}; do
	rm -rf "$W/tpl"
	mkdir -p "$W/tpl"
	case $p in
	bbx)
		git -C "$SRC" archive --format=tar HEAD | tar -x -C "$W/tpl"
		(cd "$W/tpl" && autoreconf -fi >/dev/null 2>&1) ;;
	sqlite)
		if ! t=$(sqlite_tarball); then
			echo "compile: no SQLite tarball in $CACHE and npm pack failed: sqlite skipped" >&2
			continue
		fi
		tar -xzf "$t" -C "$W/tpl" --strip-components=1 ;;
	*) echo "compile: unknown project $p" >&2; exit 2 ;;
	esac
	# SQLite's configure (autosetup) has no -q
	q=; [ "$p" = bbx ] && q=-q
	build="./configure $q >/dev/null && make -j2 >/dev/null"
	echo "build-$p: $(find "$W/tpl" -name '*.c' | wc -l) C files, timed: $build" >&2
	bench "build-$p" sh -c "$build"
	table "build-$p"
done
