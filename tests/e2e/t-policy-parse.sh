#!/bin/bash
# SPDX-License-Identifier: MIT
# t-policy-parse.sh - the policy compiler through bbx-policy and bbx-run: every malformed
# fixture (tests/policy/bad-*.ini) is refused with exactly the FILE:LINE message of its
# .expect file; a fixture using every key prints exactly good-full.expect; the blob's
# header counts; the lookup order; bbx-run refuses to start on a malformed policy; and
# explain's decisions over compiled rules (built-in and file ones).
. "${BBX_SRCDIR:?is set by make check (tests/local.mk)}/tests/e2e/lib.sh" || exit 99

FIX="$BBX_SRCDIR/tests/policy"
bads=("$FIX"/bad-*.ini)
plan $((${#bads[@]} + 28))
unset BBX_POLICY BBX_WORKSPACE
export XDG_CONFIG_HOME="$T_TMP/xdg" # empty: no user policy unless a test puts one there
mkdir -p "$XDG_CONFIG_HOME"

# 1. malformed fixtures: exit 1, nothing on stdout, the exact message on stderr
for f in "${bads[@]}"; do
	b=$(basename "$f" .ini)
	(cd "$FIX" && bbx-policy check "$b.ini") >"$T_TMP/out" 2>"$T_TMP/err"
	rc=$?
	if [ $rc -eq 1 ] && [ ! -s "$T_TMP/out" ] && cmp -s "$T_TMP/err" "$FIX/$b.expect"; then
		ok 0 "$b: refused with $(head -c 60 "$FIX/$b.expect")"
	else
		diag "rc=$rc" "got: $(cat "$T_TMP/err")" "want: $(cat "$FIX/$b.expect")"
		ok 1 "$b: refused with the expected FILE:LINE message"
	fi
done

# 2. every key: the effective policy, variables expanded, each rule's origin
T=$(realpath "$T_TMP")
mkdir -p "$T/ws" "$T/tmp" "$T/home/.ssh/keys"
touch "$T/home/.ssh/id_ed25519" "$T/home/.ssh/keys/a"
ln -s id_ed25519 "$T/home/.ssh/link"
export BBX_WORKSPACE="$T/ws" HOME="$T/home" TMPDIR="$T/tmp"
(cd "$FIX" && bbx-policy check good-full.ini) >"$T/full.out" 2>"$T/err"
ok $? "good-full.ini: check exits 0"
# (the column of the origin comments depends on the length of $T: blanks squeezed)
sed -e "s|$T|@T@|g" -e "s|/run/user/$(id -u)/|/run/user/@UID@/|g" -e 's/  *; / ; /' "$T/full.out" >"$T/full.norm"
sed -e 's/  *; / ; /' "$FIX/good-full.expect" >"$T/full.want"
if cmp -s "$T/full.norm" "$T/full.want"; then ok 0 "good-full.ini: effective policy as expected"
else diff "$T/full.want" "$T/full.norm" | head -20 | sed 's/^/# /' >&2; ok 1 "good-full.ini: effective policy as expected"; fi

# check's output is itself a policy with the same rules (the built-in ones, now in the
# file, come out twice: the repeats are dropped before comparing)
bbx-policy check "$T/full.out" >"$T/full2.out" 2>"$T/err"
rc=$?
rules() { grep -v '^;' "$1" | sed 's/ *;.*//' | awk '/^\[|^$/ || !seen[$0]++'; }
[ $rc -eq 0 ] && cmp -s <(rules "$T/full.out") <(rules "$T/full2.out")
ok $? "check's output parses back to the same rules"

# 3. the built-in default is the top-level policy.ini, and is safe for agents
bbx-policy check >"$T/builtin.out" 2>"$T/err"
ok $? "no policy anywhere: the built-in default compiles"
grep -q '^; effective policy: built-in$' "$T/builtin.out" &&
	grep -q "^deny_read = $T/home/.ssh " "$T/builtin.out" &&
	grep -q "^write = $T/ws " "$T/builtin.out" &&
	grep -q "^protect = $T/ws/.git/hooks .*(absent: not enforced this run)" "$T/builtin.out" &&
	grep -q '^allow = 127.0.0.0/8 ' "$T/builtin.out" &&
	grep -q '^deny = unix:/run/docker.sock ' "$T/builtin.out" &&
	! grep -q '^allow = \*' "$T/builtin.out" &&
	grep -qx 'sync = off' "$T/builtin.out" && grep -qx 'max_preserve = unlimited' "$T/builtin.out" &&
	grep -q '^over_max_preserve = refuse ' "$T/builtin.out"
ok $? "built-in default: workspace writable, ~/.ssh unreadable, .git/hooks protected once it exists, loopback only, journal unsynced and unlimited"
bbx-policy check "$BBX_SRCDIR/policy.ini" | sed -e 's/^; effective policy: .*//' \
	-e 's/; policy\.ini:\([0-9]*\) /; built-in:\1 /' >"$T/top.out"
sed -e 's/^; effective policy: .*//' "$T/builtin.out" | cmp -s - "$T/top.out"
ok $? "the built-in default is policy.ini as shipped"

# 4. lookup order: --policy/BBX_POLICY, then $XDG_CONFIG_HOME/bbx/policy.ini
mkdir -p "$XDG_CONFIG_HOME/bbx"
printf '[general]\nmode = safe\n' >"$XDG_CONFIG_HOME/bbx/policy.ini"
bbx-policy check | grep -qx 'mode = safe'
ok $? "lookup: \$XDG_CONFIG_HOME/bbx/policy.ini is used when present"
printf '[general]\nmode = audit\n' >"$T/env.ini"
BBX_POLICY="$T/env.ini" bbx-policy check | grep -qx 'mode = audit'
ok $? "lookup: \$BBX_POLICY beats \$XDG_CONFIG_HOME"
BBX_POLICY="$T/env.ini" bbx-policy check "$FIX/good-full.ini" | grep -q '^; effective policy: .*good-full.ini$'
ok $? "lookup: an explicit FILE beats \$BBX_POLICY"
rm -r "$XDG_CONFIG_HOME/bbx"

# 5. the compiled blob: header counts and layout
(cd "$FIX" && bbx-policy compile good-full.ini -o "$T/blob")
ok $? "compile -o writes the blob"
nexec=$(grep -c '^\(deny\|log\|allow\|ask\)\.' "$T/full.out")
"${PYTHON3:-python3}" - "$T/blob" "$T" "$nexec" <<'EOF'
import os, stat, struct, sys
path, T, nexec = sys.argv[1], sys.argv[2], int(sys.argv[3])
b = open(path, 'rb').read()
h = struct.unpack_from('<31I', b)
names = ('magic version size mode explain static_action static_loc results_all fingerprint '
         'n_rules rules_off n_inodes inodes_off strings_off strings_len src workspace '
         'n_write n_protect n_deny_read n_net n_exec '
         'max_preserve_lo max_preserve_hi max_preserve_loc over_max over_max_loc sync').split()
h = dict(zip(names, h))
def s(off):
    o = h['strings_off'] + off
    return b[o:b.index(b'\0', o)].decode()
want = dict(magic=0x4c4f5042, version=1, size=len(b), mode=1, explain=0, static_action=2,
            results_all=0, fingerprint=1, n_write=3, n_protect=1, n_deny_read=2, n_net=12,
            n_exec=nexec, n_inodes=5, n_rules=3 + 1 + 2 + 12 + nexec + 2,
            max_preserve_lo=256 << 20, max_preserve_hi=0, over_max=1, sync=1)
bad = {k: (h[k], v) for k, v in want.items() if h[k] != v}
RULE = '<HHHHIII HBB16s'.replace(' ', '')
rs = struct.calcsize(RULE)
rules = [struct.unpack_from(RULE, b, h['rules_off'] + i * rs) for i in range(h['n_rules'])]
if rs != 40: bad['rule size'] = rs
if (s(rules[0][4]), s(rules[0][6])) != (T + '/ws', 'good-full.ini:7 [paths] write'):
    bad['rule 0'] = (s(rules[0][4]), s(rules[0][6]))
if s(h['workspace']) != T + '/ws': bad['workspace'] = s(h['workspace'])
if s(h['static_loc']) != 'good-full.ini:35 [exec] static': bad['static_loc'] = s(h['static_loc'])
if s(h['max_preserve_loc']) != 'good-full.ini:40 [journal] max_preserve': bad['max_preserve_loc'] = s(h['max_preserve_loc'])
if s(h['over_max_loc']) != 'good-full.ini:41 [journal] over_max_preserve': bad['over_max_loc'] = s(h['over_max_loc'])
ino = [struct.unpack_from('<QQII', b, h['inodes_off'] + 24 * i) for i in range(h['n_inodes'])]
if ino != sorted(ino): bad['inodes'] = 'not sorted'
real = set()
for d, ds, fs in os.walk(T + '/home/.ssh'):
    for p in [d] + [os.path.join(d, n) for n in ds + fs]:
        st = os.lstat(p)
        real.add((st.st_dev, st.st_ino))
if {(i[0], i[1]) for i in ino} != real: bad['inode set'] = (len(ino), len(real))
if stat.S_IMODE(os.stat(path).st_mode) != 0o444: bad['mode'] = oct(os.stat(path).st_mode)
for k, v in bad.items(): print('#', k, v, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
ok $? "blob: header counts, first rule, static origin, [journal] limit/origin/sync, sorted inode table = lstat of ~/.ssh, mode 0444"
(cd "$FIX" && bbx-policy compile bad-cidr.ini -o "$T/blob2") 2>/dev/null
[ $? -eq 1 ] && [ ! -e "$T/blob2" ]
ok $? "compile of a malformed policy: exit 1, no blob"

# 6. bbx-run refuses to start on a malformed policy
ws=$(new_ws)
(cd "$ws" && bbx-run --policy "$FIX/bad-port.ini" -- touch x) 2>"$T/err"
rc=$?
[ $rc -eq 2 ] && [ ! -e "$ws/x" ] && grep -qxF "bbx-run: $FIX/$(cat "$FIX/bad-port.expect")" "$T/err"
ok $? "bbx-run --policy bad.ini: exit 2, the message, the command never ran (rc=$rc)"
(cd "$ws" && BBX_POLICY="$FIX/bad-class.ini" bbx-run -- touch y) 2>/dev/null
rc=$?
[ $rc -eq 2 ] && [ ! -e "$ws/y" ]
ok $? "BBX_POLICY=bad.ini bbx-run: exit 2, the command never ran"
(cd "$ws" && bbx-run -q --journal "$T/j1" --policy "$FIX/good-full.ini" -- true &&
	bbx-policy compile "$FIX/good-full.ini" -o "$T/blob3")
cmp -s "$T/j1/policy" "$T/blob3"
ok $? "bbx-run installs the compiled policy in the run directory (same bytes as compile)"

# 7. explain: decisions over compiled rules
ex() { bbx-policy explain "$@" 2>&1; }
out=$(ex -- exec rm -rf /)
grep -q 'decision: deny (EPERM)' <<<"$out" && grep -q 'rule: built-in \[exec\] deny = rm \* /$' <<<"$out" &&
	grep -q 'class: destructive' <<<"$out"
ok $? "explain exec rm -rf /: denied by a built-in rule, class destructive"
out=$(ex -- exec rm -rf /bin /boot /dev /etc)
grep -q 'decision: deny (EPERM)' <<<"$out"
ok $? "explain exec rm -rf /* as the shell expands it: denied"
out=$(ex -- exec rm -rf "$T/ws/build")
grep -q 'decision: allow$' <<<"$out" && grep -q 'rule: none' <<<"$out"
ok $? "explain exec rm -rf WORKSPACE/build: allowed (no rule)"
out=$(ex -- exec git push origin main)
grep -q 'decision: log$' <<<"$out" && grep -q 'class: risky' <<<"$out"
ok $? "explain exec git push: logged, risky"
out=$(ex -- exec git push --force origin main)
grep -q 'decision: deny (EPERM)' <<<"$out" && grep -q 'class: dangerous' <<<"$out"
ok $? "explain exec git push --force: denied, dangerous"
out=$(cd "$FIX" && ex good-full.ini -- exec git push --force-with-lease origin)
grep -q 'decision: allow$' <<<"$out" && grep -q 'rule: good-full.ini:33 \[exec\] allow = git push --force-with-lease\*' <<<"$out"
ok $? "explain: a file rule before the built-ins overrides them"
out=$(ex -- write /etc/passwd)
grep -q 'decision: deny (EACCES)' <<<"$out" && grep -q 'reason: outside write roots' <<<"$out"
ok $? "explain write /etc/passwd: EACCES, outside write roots"
out=$(cd "$FIX" && ex good-full.ini -- write /etc/passwd)
grep -q 'decision: audit' <<<"$out"
ok $? "explain under mode = audit: would refuse, lets through"
out=$(cd "$T/ws" && ex -- write ../ws/new.txt)
grep -q "^write $T/ws/new.txt\$" <<<"$out" && grep -q 'decision: allow$' <<<"$out"
ok $? "explain write of a relative path with ..: resolved, allowed under the workspace"
ln -s "$T/home/.ssh" "$T/ws/innocent"
out=$(ex -- read "$T/ws/innocent/id_ed25519")
grep -q 'decision: deny (EACCES)' <<<"$out" && grep -q "deny_read = $T/home/.ssh" <<<"$out"
ok $? "explain read through a symlink into ~/.ssh: EACCES"
ln "$T/home/.ssh/keys/a" "$T/ws/hardlink"
out=$(ex -- read "$T/ws/hardlink")
grep -q 'decision: deny (EACCES)' <<<"$out"
ok $? "explain read of a hard link to a file under ~/.ssh: EACCES (inode table)"

# 8. usage
bbx-policy >/dev/null 2>&1; r1=$?
bbx-policy --help | grep -q '^usage: bbx-policy check'; r2=$?
bbx-policy frobnicate >/dev/null 2>&1; r3=$?
bbx-policy compile "$FIX/good-full.ini" >/dev/null 2>&1; r4=$?
[ $r1 -eq 2 ] && [ $r2 -eq 0 ] && [ $r3 -eq 2 ] && [ $r4 -eq 2 ]
ok $? "usage: no verb 2, --help 0, unknown verb 2, compile without -o 2"
# 9. roots through symlinks: each resolved to the deepest existing ancestor's real name,
# the rest kept as written (a directory symlink, a chain with a relative target, an
# absolute one, dangling, a loop, a file in the middle, "." and "..", the root, a top
# that does not exist).  The compiler walks the components once, with a memo of the
# directories it has read (policy/compile.c, resolve_walk).
R="$T/rs"
mkdir -p "$R/real/sub" "$R/d2"
ln -s real "$R/lnk"
ln -s ./lnk/sub "$R/lnk2"
ln -s "$R/real" "$R/abs"
ln -s missing "$R/dang"
ln -s loop1 "$R/loop2"
ln -s loop2 "$R/loop1"
touch "$R/real/file"
ln -s ../real "$R/d2/up"
printf '[paths]\n' >"$T/rs.ini"
for w in lnk lnk/sub/x/y lnk2/z abs/sub dang/q loop1/q real/file/under d2/up/sub nothere/a/b \
	real/./sub/../sub real/sub/; do
	printf 'write = %s/%s\n' "$R" "$w" >>"$T/rs.ini"
done
printf 'write = /\nwrite = /nonexistent-top/x\nprotect = %s/lnk/file\n' "$R" >>"$T/rs.ini"
bbx-policy check "$T/rs.ini" | sed -n 's/^\(write\|protect\) = \([^ ]*\).*/\1 \2/p' |
	sed "s|$R|@R@|" >"$T/rs.out"
cat >"$T/rs.want" <<'EOF'
write @R@/real
write @R@/real/sub/x/y
write @R@/real/sub/z
write @R@/real/sub
write @R@/dang/q
write @R@/loop1/q
write @R@/real/file/under
write @R@/real/sub
write @R@/nothere/a/b
write @R@/real/sub
write @R@/real/sub
write /
write /nonexistent-top/x
protect @R@/real/file
EOF
diff "$T/rs.want" "$T/rs.out" >"$T/rs.diff"
ok $? "roots through symlinks, dangling links, loops, files and missing parts resolve as the kernel would ($(grep -c '^[<>]' "$T/rs.diff") lines differ)"

finish
