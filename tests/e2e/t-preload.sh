#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# LD_PRELOAD alone (no bbx-run) starts a run under the state directory with a `latest`
# link; its children, even through `env -i`, join that run; `bbx-log` and `bbx-undo`
# without a journal argument act on the latest run.  bbx-run without --journal makes a
# new run and moves `latest` to it.
. "${BBX_SRCDIR:?is set by make check (tests/local.mk)}/tests/e2e/lib.sh" || exit 99
plan 13
W=$(new_ws)
mkdir -p "$W/d/e"
echo one >"$W/d/e/f"
echo keep >"$W/f"
before=$(mktemp "$T_TMP/snap.XXXXXX"); snap "$W" >"$before"

(cd "$W" && LD_PRELOAD="$BBX_SHIM" sh -c 'rm -rf d; echo x > f; env -i /bin/sh -c "echo y > g"')
ok $? "the workload ran under LD_PRELOAD alone"
[ -L "$BBX_STATE_DIR/latest" ] && [ -f "$BBX_STATE_DIR/latest/journal" ]
ok $? "a run was created under BBX_STATE_DIR with a latest link"
grep -qx 'origin=preload' "$BBX_STATE_DIR/latest/meta"
ok $? "its meta says it was started by the preload"
[ "$(ls "$BBX_STATE_DIR" | grep -vc '^latest$')" -eq 1 ]
ok $? "exactly one run: the children joined it"
bbx-log --records >"$T_TMP/log" 2>&1
grep -qE "^[0-9]+ [^ ]+ [0-9]+ CREATE [a-z0-9_]+ $W/g " "$T_TMP/log"
ok $? "bbx-log (latest) shows the env -i grandchild's file"
grep -qE "^[0-9]+ [^ ]+ [0-9]+ PRESERVE [a-z]+ $W/d/e/f " "$T_TMP/log"
ok $? "bbx-log (latest) shows the pre-image of the removed file"
bbx-undo -q >"$T_TMP/undo" 2>&1
ok $? "bbx-undo (latest) exits 0"
after=$(mktemp "$T_TMP/snap.XXXXXX"); snap "$W" >"$after"
same_snap "$before" "$after" "the tree is restored byte for byte"

first=$(readlink "$BBX_STATE_DIR/latest")
(cd "$W" && bbx-run -q -- sh -c 'echo z > h')
ok $? "bbx-run without --journal"
[ "$(readlink "$BBX_STATE_DIR/latest")" != "$first" ] && [ -e "$W/h" ]
ok $? "it made a new run and moved latest to it"
bbx-undo -q >/dev/null 2>&1 && [ ! -e "$W/h" ] && [ "$(cat "$W/f")" = keep ]
ok $? "bbx-undo (latest) undoes that run, not the first one again"

# The exec wrappers keep LD_PRELOAD as they find it when it names the shim (shim/env.c,
# preload_has_shim: the last component of one of its entries), and put the shim first
# when a program's own value leaves it out: never the shim twice, nor a value lost.
libc=$(ldd /bin/sh | awk '$1 ~ /^libc\.so/ {print $3}')
got=$(cd "$W" && bbx-run -q --journal "$T_TMP/jp" -- sh -c 'sh -c "printenv LD_PRELOAD"')
want=$(cd "$W" && bbx-run -q --journal "$T_TMP/jp0" -- printenv LD_PRELOAD)
diag "LD_PRELOAD two execs down: '$got' (the run's: '$want')"
[ -n "$want" ] && [ "$got" = "$want" ]
ok $? "two execs down, LD_PRELOAD is the run's, unchanged"
got=$(cd "$W" && bbx-run -q --journal "$T_TMP/jp2" -- sh -c "LD_PRELOAD=$libc sh -c 'printenv LD_PRELOAD'")
diag "a program's own LD_PRELOAD=$libc, one exec down: '$got'"
[ "$got" = "$want $libc" ]
ok $? "a program's own LD_PRELOAD without the shim: the shim first, the program's after"
finish
