#!/bin/bash
# SPDX-License-Identifier: MIT
# t-rt-programs.sh - round trips through real programs that do their own file juggling:
# python3 (open('w'), os.replace, shutil.rmtree, tempfile), git (init, add, commit,
# checkout, reset --hard, clean, gc) and make driving gcc.  Each case: workspace,
# snapshot, workload under bbx-run, the tree changed, bbx-undo, the first snapshot again
# (DESIGN.md invariants 3 and 4).
. "${BBX_SRCDIR:?is set by make check (tests/local.mk)}/tests/e2e/lib.sh" || exit 99
. "$BBX_SRCDIR/tests/e2e/roundtrip.sh"

ws() { local d; d=$(new_ws); rt_project "$d"; echo "$d"; }

# --- python3 --------------------------------------------------------------------------
cat >"$T_TMP/work.py" <<'EOF'
import os, shutil, tempfile
with open('docs/README.md', 'w') as f:          # O_TRUNC of an existing file
    f.write('rewritten by python\n')
with open('new.txt', 'w') as f:                 # a new file
    f.write('new\n')
with open('docs/guide.txt', 'a') as f:          # O_APPEND
    f.write('appended\n')
with open('data/blob.bin', 'r+b') as f:         # in place, no truncation
    f.seek(100)
    f.write(b'\0' * 10)
with open('src/main.c.tmp', 'w') as f:          # the atomic-replace idiom
    f.write('int main(void) { return 1; }\n')
os.replace('src/main.c.tmp', 'src/main.c')
os.replace('docs', 'documentation')             # a directory rename
shutil.rmtree('deep')
shutil.rmtree('wide')
fd, p = tempfile.mkstemp(dir='.', prefix='tmp-')
os.write(fd, b'temp')
os.close(fd)
with tempfile.NamedTemporaryFile('w', dir='data', delete=False) as t:
    t.write('named temporary')
os.replace(t.name, 'data/one-byte')
with tempfile.TemporaryDirectory(dir='.') as td:
    with open(os.path.join(td, 'x'), 'w') as f:
        f.write('x')
tempfile.mkdtemp(dir='.', prefix='kept-')
with tempfile.TemporaryFile(dir='src') as tf:   # O_TMPFILE or create+unlink
    tf.write(b'anonymous')
os.chmod('script.sh', 0o700)
os.utime('secret.txt', (0, 0))
os.symlink('new.txt', 'new-link')
os.link('new.txt', 'new-hard')
os.truncate('src/util.c', 3)
os.makedirs('a/b/c', exist_ok=True)
os.remove('dangling')
shutil.copytree('src', 'src-copy')
shutil.move('hl/a', 'moved-a')
os.rmdir('empty')
EOF
W=$(ws)
rt_case "python3 open/os.replace/shutil.rmtree/tempfile" "$W" \
	'"$PY" -B "$T/work.py"' \
	'[ ! -e deep ] && [ -d documentation ] && [ "$(cat data/one-byte)" = "named temporary" ] && [ -f src-copy/util.h ]'

# --- git ------------------------------------------------------------------------------
W=$(ws)
rt_case "git init, add, commit, checkout, reset --hard" "$W" \
	'git init -q && git add -A && git commit -qm initial &&
	 git checkout -q -b feature && echo feature >> src/main.c && git rm -q docs/guide.txt &&
	 chmod +x src/util.c && git commit -qam feature && git checkout -q main &&
	 echo dirty > src/util.c && git reset -q --hard && git checkout -q feature &&
	 git reset -q --hard main && git log --oneline >/dev/null' \
	'[ -d .git ] && git rev-parse -q --verify feature >/dev/null && [ -f docs/guide.txt ]'

# An existing repository with history and two branches, built outside bbx.
W=$(ws)
(
	cd "$W" && git init -q && git add -A && git commit -qm one &&
	git checkout -q -b other && echo 'other branch' >src/main.c && git rm -qr wide &&
	mkdir -p lib && echo 'lib' >lib/l.c && git add lib && chmod 700 script.sh &&
	git commit -qam two && git checkout -q main && echo 'three' >>docs/README.md &&
	git commit -qam three && echo untracked >untracked.txt && mkdir -p build &&
	echo obj >build/x.o && git status --porcelain >/dev/null
) || diag "git setup failed"
git -C "$W" rev-parse HEAD >"$T_TMP/git.head"
rt_case "git checkout of another branch, reset --hard, clean, gc" "$W" \
	'git checkout -q other && git checkout -q -b topic && echo t > t.txt && git add t.txt &&
	 git commit -qm t && git checkout -q main && git reset -q --hard HEAD~1 &&
	 git clean -fdq && git gc -q && git branch -q -D topic' \
	'[ ! -e untracked.txt ] && [ ! -e build ] && [ -n "$(ls .git/objects/pack/*.pack)" ]'
(cd "$W" && git fsck --no-dangling --no-progress >/dev/null && [ "$(git rev-parse HEAD)" = "$(cat "$T_TMP/git.head")" ])
ok $? "git: after undo the repository is consistent (git fsck) and HEAD is back"

# --- make + gcc -----------------------------------------------------------------------
mkfile() {
	printf '%s\n' 'CC = gcc' 'CFLAGS = -O1 -Wall' 'OBJS = build/main.o build/util.o' \
		'prog: $(OBJS)' '	$(CC) -o $@ $(OBJS)' \
		'build/%.o: src/%.c src/util.h | build' '	$(CC) $(CFLAGS) -Isrc -c -o $@ $<' \
		'build:' '	mkdir -p build' 'clean:' '	rm -rf build prog' '.PHONY: clean' >"$1/Makefile"
}

W=$(ws)
mkfile "$W"
rt_case "make of a small C project (gcc)" "$W" \
	'make -s && ./prog > out.txt' \
	'[ -x prog ] && [ -f build/util.o ] && grep -q "foo 42" out.txt'

# A built project: after undo, make must see the old world (restored mtimes) and have
# nothing to do.
W=$(ws)
mkfile "$W"
(cd "$W" && make -s >/dev/null) || diag "make setup failed"
rt_case "make after a header change, make clean, rebuild" "$W" \
	'echo "/* changed */" >> src/util.h && make -s && ./prog > out.txt && make -s clean &&
	 sed -i s/42/43/ src/util.c && make -s && ./prog >> out.txt' \
	'grep -q "foo 43" out.txt'
(cd "$W" && make -q)
ok $? "make: after undo the restored build is up to date (make -q)"

rt_done
