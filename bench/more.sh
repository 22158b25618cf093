#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/more.sh - workloads beyond the issue's five, each on a fresh copy of a real tree
# whose files are older than the run (the node_modules tree of npm.sh's project when its
# cache is there, else bbx's own `git archive` copied 4 times), under every variant of
# lib.sh, alternating: where an agent's everyday commands meet capture rules the five
# rows do not exercise (copies of overwritten files, META records, removals of files
# from before the run, git rewriting a work tree).  Found outliers: `cp -a` over a tree
# (session 30), GNU touch and chmod -R (README, Known limitations).
#   cpr        cp -r of the tree into a new directory (creations only)
#   cpaover    cp -a of the tree over an existing copy of it (every file overwritten)
#   cpal       cp -al of the tree into a new directory (a hard link each, named through
#              the tree's subdirectories: session 47)
#   tarover    tar -x of the tree over itself
#   touch      GNU touch of every file (an open for writing of each: a copy each)
#   chmod      chmod -R g+w (a META record each)
#   rmold      rm -rf of the tree (a hard link each)
#   finddel    find -name '*.md' -delete
#   gitswitch  git switch between two commits 300 files apart, and back
#   patch      patch -p1 of a 300-file diff
#   scan       find -name '*.json' and grep -r of the tree: read-only traversals (an
#              open, an fdopendir and a listing of every directory; grep opens every file;
#              its pattern, written with a bracket, does not match this script in the
#              git-archive fallback tree)
# Usage: bench/more.sh [ROUNDS]   (BENCH_MORE: which of them, default all, in this order)
. "$(dirname "$0")/lib.sh"
ROUNDS=${1:-$ROUNDS}
what=$(real_tree "$W/tpl/t")
# Older than any run: an mtime in the past, as a checked-out or installed tree has.
find "$W/tpl/t" -exec touch -h -d '2024-01-02 03:04:05' {} +
tar -cf "$W/tree.tar" -C "$W/tpl" t
(cd "$W/tpl/t" && find . -type f \( -name '*.js' -o -name '*.c' -o -name '*.h' -o -name '*.md' \) |
	sort | awk 'NR % 3 == 0 && c < 300 {print; c++}') >"$W/edits"
echo "more: $what: $(find "$W/tpl/t" -type f | wc -l) files, $(du -sm "$W/tpl/t" | cut -f1) MB" >&2
g='git -c user.name=bench -c user.email=bench@localhost -c gc.auto=0 -c advice.detachedHead=false'
# A repository of the tree with a second commit changing 300 files; tpl/repo, made once.
mkrepo() {
	[ -d "$W/tpl/repo" ] && return
	cp -a "$W/tpl/t" "$W/tpl/repo"
	(cd "$W/tpl/repo" && $g init -q -b main . && $g add -A && $g commit -qm one &&
		xargs -a "$W/edits" sed -i 's/e/E/' && $g commit -qam two &&
		$g diff HEAD~1 HEAD >"$W/d.patch" && $g checkout -q HEAD~1)
	find "$W/tpl/repo" -path "$W/tpl/repo/.git" -prune -o -exec touch -h -d '2024-01-02 03:04:05' {} +
}
teardown() { discard "$WD"; }
for w in ${BENCH_MORE:-cpr cpaover cpal tarover touch chmod rmold finddel gitswitch patch scan}; do
	case $w in
	cpr) setup() { mkdir -p "$WD" && cp -a "$W/tpl/t" "$WD/t"; }
	     bench cpr cp -r t copy ;;
	cpaover) setup() { mkdir -p "$WD" && cp -a "$W/tpl/t" "$WD/t" && cp -a "$W/tpl/t" "$WD/copy"; }
	     bench cpaover cp -a t/. copy/ ;;
	cpal) setup() { mkdir -p "$WD" && cp -a "$W/tpl/t" "$WD/t"; }
	     bench cpal cp -al t copy ;;
	tarover) setup() { mkdir -p "$WD" && cp -a "$W/tpl/t" "$WD/t"; }
	     bench tarover tar -xf "$W/tree.tar" ;;
	touch) setup() { mkdir -p "$WD" && cp -a "$W/tpl/t" "$WD/t"; }
	     bench touch sh -c 'find t -type f -exec touch {} +' ;;
	chmod) setup() { mkdir -p "$WD" && cp -a "$W/tpl/t" "$WD/t"; }
	     bench chmod chmod -R g+w t ;;
	rmold) setup() { mkdir -p "$WD" && cp -a "$W/tpl/t" "$WD/t"; }
	     bench rmold rm -rf t ;;
	finddel) setup() { mkdir -p "$WD" && cp -a "$W/tpl/t" "$WD/t"; }
	     bench finddel find t -name '*.md' -delete ;;
	gitswitch) mkrepo
	     setup() { mkdir -p "$WD" && cp -a "$W/tpl/repo" "$WD/repo"; }
	     bench gitswitch sh -c "cd repo && $g switch -q main && $g switch -q --detach HEAD~1" ;;
	patch) mkrepo
	     setup() { mkdir -p "$WD" && cp -a "$W/tpl/repo" "$WD/repo"; }
	     bench patch sh -c "patch -s -p1 -d repo <'$W/d.patch'" ;;
	scan) setup() { mkdir -p "$WD" && cp -a "$W/tpl/t" "$WD/t"; }
	     bench scan sh -c "find t -name '*.json' >/dev/null && ! grep -rq 'no such text[,] anywhere' t" ;;
	*) echo "more: unknown workload $w" >&2; exit 2 ;;
	esac
	table "$w"
done
