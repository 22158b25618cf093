#!/bin/bash
# SPDX-License-Identifier: MIT
# t-failclosed.sh - DESIGN.md invariant 2, fail closed: when the pre-image of a
# mutation cannot be stored, the mutation is refused with that errno and nothing is
# mutated unrecorded.  A 16 MiB tmpfs holds both the workspace and the journal; once
# the run has started it is filled to the last block (from outside the shim), and the
# run then tries to truncate a big existing file: `>` in sh, open('w') in python3 and
# truncate(1) must all be refused with ENOSPC and the file must be intact.

# Run in a private mount namespace, so the tmpfs never outlives the test.
if [ -z "${BBX_E2E_MNTNS:-}" ] && unshare -m --propagation private true 2>/dev/null; then
	BBX_E2E_MNTNS=1 exec unshare -m --propagation private "$BASH" "$0" "$@"
fi
. "${BBX_SRCDIR:?is set by make check (tests/local.mk)}/tests/e2e/lib.sh" || exit 99
. "$BBX_SRCDIR/tests/e2e/roundtrip.sh"

NCASES=12
M=$T_TMP/mnt
mkdir -p "$M"
if ! mount -t tmpfs -o size=16m bbx-e2e-failclosed "$M" 2>"$T_TMP/mount.err"; then
	diag "cannot mount a tmpfs: $(cat "$T_TMP/mount.err")"
	for i in $(seq 1 $NCASES); do skip "fail closed: cannot mount a tmpfs here"; done
	rt_done
fi
trap 'umount -l "$M" 2>/dev/null; rm -rf "$T_TMP"' EXIT

W=$M/ws
J=$M/journal
mkdir -p "$W/sub"
head -c 196608 /dev/urandom >"$W/big"
echo small >"$W/sub/small"
rt_oldtimes "$W"
sum=$(sha256sum <"$W/big")
before=$(rt_snap "$W" before)

# The run signals that it has started, waits until the filesystem is full, then tries
# three ways of truncating big.  Its reports go to stdout, which the test opened:
# creating a report file would itself need a journal record on the full filesystem.
# A small environment: EXEC records carry the environment passed to the program, and
# on the full filesystem only records that fit the journal's last page can be written.
(cd "$W" && exec env -i PATH="$PATH" HOME="$HOME" T="$T_TMP" PY="$PY" \
	bbx-run --journal "$J" -- sh -c '
	# python3 starts before the filesystem fills (an exec whose EXEC record cannot be
	# written is refused too), then waits for it like the shell.
	"$PY" -B -c "
import os, time
n = 0
while not os.path.exists(os.environ[\"T\"] + \"/filled\") and n < 400:
    time.sleep(0.05); n += 1
try:
    open(\"big\", \"w\")
    print(\"py-opened\", flush=True)
except OSError as e:
    print(\"py-errno=%d\" % e.errno, flush=True)" &
	: > "$T/ready"
	n=0
	while [ ! -e "$T/filled" ] && [ $n -lt 400 ]; do sleep 0.05; n=$((n + 1)); done
	echo truncated > big
	echo "sh-status=$?"
	wait
	truncate -s 0 big
	echo "truncate-status=$?"
	exit 0') >"$T_TMP/run.out" 2>"$T_TMP/run.err" &
pid=$!
n=0
while [ ! -e "$T_TMP/ready" ] && [ $n -lt 200 ] && kill -0 $pid 2>/dev/null; do
	sleep 0.05; n=$((n + 1))
done
[ -e "$T_TMP/ready" ]
ok $? "fail closed: the run started on the small tmpfs"
dd if=/dev/zero of="$M/fill" bs=4k 2>/dev/null
dd if=/dev/zero of="$M/fill2" bs=512 2>/dev/null
df -k "$M" | sed 's/^/# /' >&2
[ "$(df -k --output=avail "$M" | tail -1 | tr -d ' ')" -eq 0 ]
ok $? "fail closed: the tmpfs is full"
: >"$T_TMP/filled"
wait $pid
expect_rc $? 0 "fail closed: bbx-run exits 0"
sed 's/^/# out: /' "$T_TMP/run.out" >&2
rt_showerr "$T_TMP/run.err"

grep -q '^sh-status=[1-9]' "$T_TMP/run.out"
ok $? "fail closed: sh's > on big failed"
grep -q 'cannot create big: No space left on device' "$T_TMP/run.err"
ok $? "fail closed: the shell reports ENOSPC (No space left on device)"
grep -qx 'py-errno=28' "$T_TMP/run.out"
ok $? "fail closed: python3 open('big', 'w') fails with errno 28 (ENOSPC)"
grep -q '^truncate-status=[1-9]' "$T_TMP/run.out" && grep -q 'No space left on device' "$T_TMP/run.err"
ok $? "fail closed: truncate -s 0 big fails with ENOSPC"
[ "$(sha256sum <"$W/big")" = "$sum" ]
ok $? "fail closed: big is intact"
after=$(rt_snap "$W" after)
same_snap "$before" "$after" "fail closed: the workspace is unchanged"

# With room again, the journal is still a valid journal and undo has nothing to break.
rm -f "$M/fill" "$M/fill2"
rt_undo "$J"
rc=$?
[ $rc -eq 0 ] || rt_showerr "$T_TMP/undo.out"
expect_rc $rc 0 "fail closed: bbx-undo of the refused run exits 0"
undone=$(rt_snap "$W" undone)
same_snap "$before" "$undone" "fail closed: after undo the workspace is still the original"
[ ! -e "$T_TMP/ready" ]
ok $? "fail closed: undo removed the file the run did create"

rt_done
