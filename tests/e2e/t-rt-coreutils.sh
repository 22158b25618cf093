#!/bin/bash
# SPDX-License-Identifier: MIT
# t-rt-coreutils.sh - round trips through the everyday coreutils and shell: rm -rf, mv,
# cp -a, sed -i, tar x, > and >>, chmod -R, chown -R, touch -d, ln -s, truncate,
# dd conv=notrunc, and hard links.  Each case: workspace, snapshot, workload under
# bbx-run, the tree changed, bbx-undo, the tree is the first snapshot again
# (DESIGN.md invariants 3 and 4).
. "${BBX_SRCDIR:?is set by make check (tests/local.mk)}/tests/e2e/lib.sh" || exit 99
. "$BBX_SRCDIR/tests/e2e/roundtrip.sh"

ws() { local d; d=$(new_ws); rt_project "$d"; echo "$d"; }

W=$(ws)
rt_case "rm -rf of a deep tree" "$W" \
	'rm -rf deep wide hl src/util.c && rm -r empty' \
	'[ ! -e deep ] && [ ! -e wide ] && [ ! -e empty ]'

W=$(ws)
rt_case "mv of directories" "$W" \
	'mv deep/level1/level2 moved && mv docs src/docs2 && mkdir -p new/sub && mv wide new/sub/ &&
	 mv -T data empty && mv srcdir srcdir2' \
	'[ -d moved/level3 ] && [ -f empty/blob.bin ] && [ ! -e data ] && [ -d new/sub/wide ]'

# The moved directory's own entries change after the move: its mtime was recorded
# under its new name, and must still be put back once it is back at the old one.
W=$(ws)
rt_case "mv of a directory, then an entry moved out of it" "$W" \
	'mv deep/level1/level2 moved && mv moved/level3 deep/level1/level3' \
	'[ -d deep/level1/level3/level4 ] && [ ! -e moved/level3 ]'

W=$(ws)
I=$T_TMP/incoming
mkdir -p "$I/src" "$I/docs/extra"
echo 'int main(void) { return 7; }' >"$I/src/main.c"
printf 'incoming readme\n' >"$I/docs/README.md"
chmod 640 "$I/docs/README.md"
echo 'brand new' >"$I/docs/extra/new.md"
chmod 711 "$I/docs"
touch -d '2003-04-05 06:07:08.9' "$I/docs/README.md" "$I/src/main.c" "$I/docs" "$I/src"
rt_case "cp -a over existing files" "$W" \
	'cp -a "$T/incoming/." . && cp -a src/main.c src/util.c && cp -a docs/guide.txt current &&
	 cp -a wide/w1 wide/w2 wide/w3 data/' \
	'grep -q "return 7" src/util.c && grep -q "line 1 of" docs/README.md && [ -f data/w3 ]'

W=$(ws)
rt_case "sed -i" "$W" \
	'sed -i "s/foo/FOO/g" src/main.c src/util.c docs/guide.txt wide/w1 wide/w2 &&
	 sed -i.bak "s/bar/BAR/" docs/README.md && sed -i 1d secret.txt script.sh &&
	 sed -i --follow-symlinks "s/Project/Proj/" current' \
	'grep -q FOO src/main.c && [ -f docs/README.md.bak ] && grep -q Proj docs/README.md &&
	 [ -L current ] && [ "$(stat -c %a secret.txt)" = 600 ]'

W=$(ws)
A=$T_TMP/alt
cp -a "$W" "$A"
echo 'changed by tar' >"$A/src/main.c"
echo 'tar hard link' >"$A/hl/a"      # both links of the pair
mkdir -p "$A/newdir/sub" && echo n >"$A/newdir/sub/n"
ln -s ../src/main.c "$A/newdir/link"
chmod 700 "$A/src"
chmod 644 "$A/script.sh"
rm -f "$A/current" && echo 'now a file' >"$A/current"
touch -d '2010-10-10 10:10:10' "$A/docs/guide.txt" "$A"
tar -C "$A" -cf "$T_TMP/alt.tar" .
rt_case "tar x over an existing tree" "$W" \
	'tar xf "$T/alt.tar"' \
	'grep -q "changed by tar" src/main.c && [ -f newdir/sub/n ] && [ ! -L current ] && [ hl/a -ef hl/b ]'

W=$(ws)
rt_case "shell redirections > and >>" "$W" \
	'echo new > docs/README.md; echo more >> docs/guide.txt; date >> newlog.txt;
	 echo again >> newlog.txt; : > data/blob.bin; echo via-link > current;
	 exec 3>>wide/w5; echo fd3 >&3; exec 3>&-; echo x > data/one-byte;
	 cat docs/guide.txt > copy.txt; echo a >> wide/w7; echo b > wide/w7;
	 echo c > wide/w8; echo d >> wide/w8; echo e >> data/empty-file' \
	'[ ! -s data/blob.bin ] && grep -q via-link docs/README.md && [ "$(cat wide/w7)" = b ]'

W=$(ws)
rt_case "chmod -R" "$W" \
	'chmod -R go-rwx . && chmod -R u-w docs && chmod 4755 script.sh && chmod -R a+X deep &&
	 chmod 0 data/one-byte' \
	'[ "$(stat -c %a docs/guide.txt)" = 400 ] && [ "$(stat -c %a .)" = 700 ]'

W=$(ws)
rt_case "chown -R" "$W" \
	'chown -R 1234:5678 src deep && chown -h 42:42 current && chgrp 99 docs/README.md' \
	'[ "$(stat -c %u:%g src/main.c)" = 1234:5678 ] && [ "$(stat -c %u current)" = 42 ]'

W=$(ws)
rt_case "touch -d" "$W" \
	'touch -d "2001-02-03 04:05:06.5" docs/* src && touch -h -d @1000000000 current dangling &&
	 touch -m -d yesterday data/blob.bin && touch brand-new && touch -r script.sh wide/w9' \
	'[ "$(stat -c %Y docs/guide.txt)" = "$(date -d "2001-02-03 04:05:06" +%s)" ] && [ -f brand-new ]'

W=$(ws)
rt_case "ln -s" "$W" \
	'ln -s docs/guide.txt guide-link && ln -sf src/main.c current && ln -sfn docs srcdir &&
	 ln -s /nonexistent/x dangling2 && ln -sf ../../README deep/level1/link1 &&
	 mkdir links && ln -s ../wide/w1 ../wide/w2 links/ && ln -sf docs/README.md script.sh' \
	'[ "$(readlink current)" = src/main.c ] && [ "$(readlink srcdir)" = docs ] && [ -L script.sh ]'

W=$(ws)
rt_case "truncate" "$W" \
	'truncate -s 10 data/blob.bin && truncate -s 1M docs/guide.txt && truncate -s 0 src/util.c &&
	 truncate -s 100 new.sparse && truncate -s +5 secret.txt && truncate -s -3 docs/README.md &&
	 truncate -s 4096 data/empty-file' \
	'[ "$(stat -c %s data/blob.bin)" = 10 ] && [ "$(stat -c %s docs/guide.txt)" = 1048576 ]'

W=$(ws)
rt_case "dd conv=notrunc" "$W" \
	'dd if=/dev/zero of=data/blob.bin bs=512 seek=3 count=2 conv=notrunc 2>/dev/null &&
	 printf XYZ | dd of=docs/README.md bs=1 seek=5 conv=notrunc 2>/dev/null &&
	 dd if=/dev/urandom of=data/blob.bin bs=1k seek=100 count=1 conv=notrunc 2>/dev/null &&
	 dd if=data/blob.bin of=copy.bin bs=4k count=2 2>/dev/null &&
	 printf Q | dd of=data/one-byte conv=notrunc 2>/dev/null' \
	'[ "$(stat -c %s data/blob.bin)" = 103424 ] && [ "$(head -c 8 docs/README.md)" = "# ProXYZ" ]'

# Hard links: the pair hl/a, hl/b is one inode with two names.  After undo it must be
# one inode again, not two files with equal content.

W=$(ws)
rt_case "hard link modified in place" "$W" \
	'printf PATCH | dd of=hl/a conv=notrunc 2>/dev/null && echo appended >> hl/b' \
	'grep -q appended hl/a && grep -q PATCH hl/b'
same_inode "$W/hl/a" "$W/hl/b" "hard link modified in place: hl/a and hl/b are one inode again"

W=$(ws)
rt_case "one of two hard links deleted, the other modified" "$W" \
	'rm hl/b && printf ZZZZ | dd of=hl/a conv=notrunc 2>/dev/null && echo tail >> hl/a' \
	'[ ! -e hl/b ] && grep -q ZZZZ hl/a'
same_inode "$W/hl/a" "$W/hl/b" "one hard link deleted: hl/a and hl/b are one inode again"

W=$(ws)
rt_case "sed -i breaks a hard link" "$W" \
	'sed -i s/shared/SHARED/ hl/a' \
	'grep -q SHARED hl/a && grep -q shared hl/b'
same_inode "$W/hl/a" "$W/hl/b" "sed -i on a hard link: hl/a and hl/b are one inode again"

rt_done
