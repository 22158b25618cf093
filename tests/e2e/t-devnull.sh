#!/bin/bash
# SPDX-License-Identifier: MIT
# t-devnull.sh - the shim's short way for an open of /dev/null that can write (shim/open.c,
# devnull_open): a shell's "> /dev/null" in a fork child, open(2)'s flags as they would
# be without it, and a /dev/null that is not the null device (a file bind-mounted over
# it, in a private mount namespace) taken the ordinary way: its content kept by a
# PRESERVE before the truncation, and bbx-undo puts it back byte for byte.
. "${BBX_SRCDIR:?is set by make check (tests/local.mk)}/tests/e2e/lib.sh" || exit 99
plan 7

W=$(new_ws)
J="$T_TMP/j1"
# shell redirections in fork children and in the shell itself, and python's os.open
cat >"$T_TMP/dn.py" <<'PY'
import errno, os
fd = os.open("/dev/null", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
assert os.write(fd, b"x" * 100) == 100
fl = __import__("fcntl").fcntl(fd, __import__("fcntl").F_GETFL)
assert fl & os.O_ACCMODE == os.O_WRONLY, fl
os.close(fd)
fd = os.open("/dev/null", os.O_RDWR | os.O_APPEND | os.O_CLOEXEC)
assert __import__("fcntl").fcntl(fd, __import__("fcntl").F_GETFL) & os.O_APPEND
assert __import__("fcntl").fcntl(fd, __import__("fcntl").F_GETFD) & __import__("fcntl").FD_CLOEXEC
os.close(fd)
print("python ok")
PY
# O_EXCL goes the ordinary way (its failed CREATE is recorded): a run of its own
cat >"$T_TMP/excl.py" <<'PY'
import errno, os
try:
    os.open("/dev/null", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    raise SystemExit("O_EXCL on /dev/null succeeded")
except OSError as e:
    assert e.errno == errno.EEXIST, e
print("excl ok")
PY
(cd "$W" && bbx-run --quiet --journal "$J" -- bash -c \
	'( echo a >/dev/null ); echo b >/dev/null 2>&1; exec 3>/dev/null; echo c >&3; echo d >made; "${PYTHON3:-python3}" "$1"' \
	bash "$T_TMP/dn.py") >"$T_TMP/out1" 2>&1
ok $? "redirections to /dev/null and python's opens of it, under bbx-run: exit 0" ||
	sed 's/^/# /' "$T_TMP/out1" >&2
(cd "$W" && bbx-run --quiet --journal "$T_TMP/jx" -- "${PYTHON3:-python3}" "$T_TMP/excl.py") >>"$T_TMP/out1" 2>&1
grep -qx "python ok" "$T_TMP/out1" && grep -qx "excl ok" "$T_TMP/out1"
ok $? "open(2) of /dev/null keeps the caller's flags (access mode, O_APPEND, O_CLOEXEC); O_EXCL fails with EEXIST"
[ -c /dev/null ] && [ "$(stat -c %t:%T /dev/null)" = "1:3" ]
ok $? "/dev/null is still the null device"
# recs J: the records' type and path, one "TYPE PATH" line each (bbx-log --json)
recs() {
	bbx-log --json "$1" | "${PYTHON3:-python3}" -c '
import json, sys
for line in sys.stdin:
    if not line.strip():
        continue
    r = json.loads(line)
    print(r.get("type"), r.get("path", "-"), r.get("how", "-"))'
}
recs "$J" >"$T_TMP/recs1"
! grep -q " /dev/null " "$T_TMP/recs1" && grep -q "^CREATE $W/made " "$T_TMP/recs1"
ok $? "the journal names no /dev/null (nothing to undo there), and the workspace's file made beside them" ||
	sed 's/^/# /' "$T_TMP/recs1" >&2

# A /dev/null that is a regular file: the short way must not take it.
if unshare -m true 2>/dev/null; then
	printf 'precious %s\n' {1..50} >"$T_TMP/fake"
	cp "$T_TMP/fake" "$T_TMP/fake.orig"
	J2="$T_TMP/j2"
	unshare -m bash -c '
		mount --bind "$1/fake" /dev/null || exit 9
		cd "$2" && bbx-run --quiet --journal "$3" -- sh -c "echo x >first; (echo gone >/dev/null)" || exit 8
		cmp -s /dev/null "$1/fake.orig" && exit 7
		bbx-undo --quiet "$3" >"$1/undo2" 2>&1 || { cat "$1/undo2" >&2; exit 6; }
		cmp -s /dev/null "$1/fake.orig" || exit 5
		exit 0' bash "$T_TMP" "$W" "$J2"
	rc=$?
	# read outside the namespace: a program run in it after the run (a python3 that is
	# a pyenv shell script) may write to the bind-mounted file
	recs "$J2" >"$T_TMP/recs2"
	[ $rc -ne 9 ] || diag "mount --bind over /dev/null failed"
	[ $rc -eq 0 ] || [ $rc -eq 5 ] || [ $rc -eq 6 ]
	ok $? "a file bind-mounted over /dev/null: 'echo x >first; (echo gone >/dev/null)' under bbx-run truncated it in the fork child of a process with the run open (rc $rc)"
	grep -qE "^PRESERVE /dev/null (copy|packed|reflink)$" "$T_TMP/recs2" 2>/dev/null
	ok $? "its journal keeps the file's content before the truncation (PRESERVE /dev/null)" ||
		sed 's/^/# /' "$T_TMP/recs2" >&2
	[ $rc -eq 0 ] && cmp -s "$T_TMP/fake" "$T_TMP/fake.orig"
	ok $? "bbx-undo put the file back byte for byte (rc $rc)" ||
		sed 's/^/# /' "$T_TMP/undo2" >&2
else
	skip "unshare -m not permitted here: the bind-mounted /dev/null cases"
	skip "unshare -m not permitted here"
	skip "unshare -m not permitted here"
fi
finish
