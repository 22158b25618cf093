#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/compile.sh - the build workload: configure + make -j2 of real C projects, under
# every variant of lib.sh, alternating.  Projects (BENCH_BUILD_PROJECTS, default
# "zlib lua bbx sqlite"):
#   zlib    configure + make -j2 of zlib (the issue's anchor), Debian's orig tarball
#   lua     make -j2 of Lua 5.4 (the issue's other anchor), Debian's orig tarball
#   bbx     bbx itself from a `git archive` of HEAD (autoreconf'd once, untimed)
#   sqlite  the SQLite autoconf tarball shipped in the npm package sqlite3
#           (deps/sqlite-autoconf-*), fetched with `npm pack`
#   debian:POOL-PATH   any other autoconf'd C project from Debian's archive, by its path
#           under pool/main, e.g. debian:g/gzip/gzip_1.12.orig.tar.xz: configure +
#           make -j2 of the tarball's top directory (a project not written for here)
# Each tarball is fetched once into bench/.cache (BENCH_CACHE); a project whose tarball
# is absent and cannot be fetched is skipped with a message.
# Usage: bench/compile.sh [ROUNDS]
. "$(dirname "$0")/lib.sh"
ROUNDS=${1:-$ROUNDS}
SQLITE_NPM=${BENCH_SQLITE_NPM:-sqlite3@6.0.1}
LUA_ORIG=${BENCH_LUA_ORIG:-l/lua5.4/lua5.4_5.4.4.orig.tar.gz}
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

for p in ${BENCH_BUILD_PROJECTS:-zlib lua bbx sqlite}; do
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
	zlib | lua | debian:*)
		orig=$ZLIB_ORIG; [ "$p" = lua ] && orig=$LUA_ORIG
		case $p in debian:*) orig=${p#debian:}; p=${orig##*/}; p=${p%%_*} ;; esac
		if ! t=$(debian_tarball "$orig"); then
			echo "compile: no $p tarball in $CACHE and $DEBIAN_POOL unreachable: $p skipped" >&2
			continue
		fi
		tar -xf "$t" -C "$W/tpl" --strip-components=1
		# a tarball without configure (a git snapshot) is autoreconf'd once, untimed
		if [ ! -x "$W/tpl/configure" ] && [ "$p" != lua ] &&
			! (cd "$W/tpl" && autoreconf -fi >/dev/null 2>&1); then
			echo "compile: $p has no configure and autoreconf failed: skipped" >&2
			continue
		fi ;;
	*) echo "compile: unknown project $p" >&2; exit 2 ;;
	esac
	# SQLite's configure (autosetup) has no -q; Lua has no configure (its Makefile
	# guesses the platform)
	q=; [ "$p" = bbx ] && q=-q
	build="./configure $q >/dev/null && make -j2 >/dev/null"
	[ "$p" = lua ] && build="make -j2 >/dev/null"
	echo "build-$p: $(find "$W/tpl" -name '*.c' | wc -l) C files, timed: $build" >&2
	bench "build-$p" sh -c "$build"
	table "build-$p"
done
