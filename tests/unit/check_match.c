/* SPDX-License-Identifier: MIT
 *
 * check_match.c - the policy matcher (policy/match.c) over blobs built here by hand, so
 * the decisions are tested independently of the INI compiler: globs, path containment,
 * write/read/exec precedence, modes, inode identity, and bbx_pol_check's refusal of
 * damaged blobs.
 */
#include "unit.h"

#include "journal/record.h"
#include "policy/policy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A tiny blob builder: rules and strings appended, then laid out per policy.h. */
struct b {
	struct bbx_pol_rule r[32];
	struct bbx_pol_inode in[8];
	char s[4096];
	size_t nr, ni, sl;
	uint32_t mode;
};

static uint32_t str(struct b *b, const char *x)
{
	uint32_t off = (uint32_t)b->sl;
	memcpy(b->s + b->sl, x, strlen(x) + 1);
	b->sl += strlen(x) + 1;
	return off;
}

static void rule(struct b *b, int sect, int act, int klass, const char *value)
{
	struct bbx_pol_rule *r = &b->r[b->nr++];
	memset(r, 0, sizeof *r);
	r->section = (uint16_t)sect;
	r->action = (uint16_t)act;
	r->klass = (uint16_t)klass;
	r->value = str(b, value);
	r->value_len = (uint32_t)strlen(value);
	char loc[128];
	snprintf(loc, sizeof loc, "t.ini:%zu [s] k = %s", b->nr, value);
	r->loc = str(b, loc);
}

static void init(struct b *b, uint32_t mode)
{
	memset(b, 0, sizeof *b);
	b->sl = 1; /* offset 0 = "" */
	b->mode = mode;
}

static struct bbx_pol_hdr *build(struct b *b)
{
	uint32_t src = str(b, "t.ini");
	size_t roff = (sizeof(struct bbx_pol_hdr) + 7) & ~(size_t)7;
	size_t ioff = roff + b->nr * sizeof(struct bbx_pol_rule);
	size_t soff = ioff + b->ni * sizeof(struct bbx_pol_inode);
	size_t len = soff + b->sl;
	struct bbx_pol_hdr *h = calloc(1, len);
	ck_assert_ptr_nonnull(h);
	*h = (struct bbx_pol_hdr){.magic = BBX_POL_MAGIC, .version = BBX_POL_VERSION,
				  .size = (uint32_t)len, .mode = b->mode, .explain = 1,
				  .static_loc = src, .src = src, .workspace = 0,
				  .n_rules = (uint32_t)b->nr, .rules_off = (uint32_t)roff,
				  .n_inodes = (uint32_t)b->ni, .inodes_off = (uint32_t)ioff,
				  .strings_off = (uint32_t)soff, .strings_len = (uint32_t)b->sl};
	for (size_t i = 0; i < b->nr; i++) {
		h->n_write += b->r[i].section == BBX_PS_WRITE;
		h->n_protect += b->r[i].section == BBX_PS_PROTECT;
		h->n_deny_read += b->r[i].section == BBX_PS_DENY_READ;
		h->n_exec += b->r[i].section == BBX_PS_EXEC;
	}
	memcpy((char *)h + roff, b->r, b->nr * sizeof(struct bbx_pol_rule));
	memcpy((char *)h + ioff, b->in, b->ni * sizeof(struct bbx_pol_inode));
	memcpy((char *)h + soff, b->s, b->sl);
	ck_assert_int_eq(bbx_pol_check(h, len), 0);
	return h;
}

START_TEST(test_glob)
{
	ck_assert(bbx_glob("rm -rf /", "rm -rf /", 0));
	ck_assert(!bbx_glob("rm -rf /", "rm -rf /tmp", 0));
	ck_assert(bbx_glob("rm -rf /*", "rm -rf /home/user", 0)); /* '*' crosses '/' */
	ck_assert(bbx_glob("git push*", "git push --force origin main", 0));
	ck_assert(!bbx_glob("git push*", "git pull", 0));
	ck_assert(bbx_glob("mkfs*", "mkfs.ext4 /dev/sda1", 0));
	ck_assert(bbx_glob("dd * of=/dev/sd*", "dd if=/dev/zero bs=1M of=/dev/sda", 0));
	ck_assert(!bbx_glob("dd * of=/dev/sd*", "dd if=/dev/zero of=/tmp/x", 0));
	ck_assert(bbx_glob("a?c", "abc", 0));
	ck_assert(!bbx_glob("a?c", "ac", 0));
	ck_assert(bbx_glob("[ab]x", "bx", 0));
	ck_assert(!bbx_glob("[!ab]x", "bx", 0));
	ck_assert(bbx_glob("[a-c]*", "cat", 0));
	ck_assert(bbx_glob("*.NPMJS.org", "registry.npmjs.ORG", BBX_GLOB_CASEFOLD));
	ck_assert(!bbx_glob("*.npmjs.org", "npmjs.org", 0));
	ck_assert(bbx_glob("*a*a*a*", "aaaa", 0));
	ck_assert(!bbx_glob("*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 0));
	ck_assert(bbx_glob("\\*", "*", 0));
	ck_assert(!bbx_glob("\\*", "x", 0));
	ck_assert(bbx_glob("[", "[", 0)); /* malformed bracket: literal */
	ck_assert(bbx_glob("", "", 0));
	ck_assert(!bbx_glob("", "x", 0));
}
END_TEST

START_TEST(test_path_under)
{
	ck_assert(bbx_path_under("/a/b", "/a", 2));
	ck_assert(bbx_path_under("/a", "/a", 2));
	ck_assert(!bbx_path_under("/ab", "/a", 2));
	ck_assert(!bbx_path_under("/", "/a", 2));
	ck_assert(bbx_path_under("/anything", "/", 1));
}
END_TEST

START_TEST(test_write_precedence)
{
	struct b b;
	init(&b, BBX_MODE_ENFORCE);
	rule(&b, BBX_PS_WRITE, 0, 0, "/ws");
	rule(&b, BBX_PS_WRITE, 0, 0, "/tmp");
	rule(&b, BBX_PS_PROTECT, 0, 0, "/ws/.git/hooks");
	rule(&b, BBX_PS_DENY_READ, 0, 0, "/ws/secrets");
	struct bbx_pol_hdr *p = build(&b);
	struct bbx_pol_verdict v;
	bbx_pol_write(p, "/ws/src/a.c", &v);
	ck_assert_int_eq(v.decision, BBX_DEC_ALLOW);
	bbx_pol_write(p, "/wsx/a", &v);
	ck_assert_int_eq(v.decision, BBX_DEC_DENY);
	ck_assert_int_eq(v.err, EACCES);
	ck_assert_ptr_null(v.rule);
	ck_assert_str_eq(v.reason, "outside write roots");
	bbx_pol_write(p, "/ws/.git/hooks/pre-commit", &v);
	ck_assert_int_eq(v.decision, BBX_DEC_DENY);
	ck_assert_str_eq(bbx_pol_str(p, v.rule->loc), "t.ini:3 [s] k = /ws/.git/hooks");
	bbx_pol_write(p, "/ws/.git/hooksx", &v);
	ck_assert_int_eq(v.decision, BBX_DEC_ALLOW);
	((struct bbx_pol_rule *)bbx_pol_rules(p))[2].flags |= BBX_RF_ABSENT;
	bbx_pol_write(p, "/ws/.git/hooks/pre-commit", &v); /* absent at start: not enforced */
	ck_assert_int_eq(v.decision, BBX_DEC_ALLOW);
	((struct bbx_pol_rule *)bbx_pol_rules(p))[2].flags &= ~BBX_RF_ABSENT;
	bbx_pol_write(p, "/ws/secrets/k", &v); /* deny_read beats write */
	ck_assert_int_eq(v.decision, BBX_DEC_DENY);
	bbx_pol_read(p, "/ws/secrets", &v);
	ck_assert_int_eq(v.decision, BBX_DEC_DENY);
	bbx_pol_read(p, "/ws/secretsx", &v);
	ck_assert_int_eq(v.decision, BBX_DEC_ALLOW);
	bbx_pol_read(p, "/etc/passwd", &v);
	ck_assert_int_eq(v.decision, BBX_DEC_ALLOW);
	free(p);
}
END_TEST

/* The shim's decision cache stands one allowed entry of a directory for all of them
 * when bbx_pol_dir_uniform says so: held here against the decisions themselves, for
 * every directory and entry name the roots below make interesting (a root directly in
 * the directory, one above, a write root only at an entry, "/" itself). */
static void uniform_pass(const struct bbx_pol_hdr *p)
{
	static const char *const dirs[] = {"/", "/ws", "/ws/src", "/ws/.git", "/ws/.git/hooks",
					   "/srv", "/srv/only", "/top", "/etc", "/wsx"};
	static const char *const names[] = {"a", "secret", "hooks", "only", "top", "ws",
					    "gone", ".git", "src"};
	int uniform = 0, mixed = 0;
	for (size_t d = 0; d < sizeof dirs / sizeof *dirs; d++) {
		size_t dl = strlen(dirs[d]);
		int u = bbx_pol_dir_uniform(p, dirs[d], dl), first = -1, same = 1;
		for (size_t n = 0; n < sizeof names / sizeof *names; n++) {
			char path[64];
			snprintf(path, sizeof path, "%s/%s", dl == 1 ? "" : dirs[d], names[n]);
			struct bbx_pol_verdict v;
			bbx_pol_write(p, path, &v);
			if (first < 0)
				first = v.decision;
			same &= v.decision == first;
		}
		ck_assert_msg(!u || same, "%s: called uniform, but its entries are decided apart",
			      dirs[d]);
		uniform += u;
		mixed += !same;
	}
	/* Both kinds were met: the check above was not empty either way. */
	ck_assert_int_gt(uniform, 3);
	ck_assert_int_gt(mixed, 2);
	/* Roots directly in the directory, each section's; an absent protect entry is not
	 * one (bbx_pol_write does not enforce it). */
	ck_assert(!bbx_pol_dir_uniform(p, "/ws/src", 7));
	ck_assert(!bbx_pol_dir_uniform(p, "/ws/.git", 8));
	ck_assert(!bbx_pol_dir_uniform(p, "/srv", 4));
	ck_assert(!bbx_pol_dir_uniform(p, "/", 1));
	ck_assert(bbx_pol_dir_uniform(p, "/ws", 3));
	ck_assert(bbx_pol_dir_uniform(p, "/ws/src/x", 9));
	ck_assert(bbx_pol_dir_uniform(p, "/wsx", 4));
	/* Only the first dl bytes are the directory. */
	ck_assert(!bbx_pol_dir_uniform(p, "/ws/src/a.c", 7));
	ck_assert(!bbx_pol_dir_uniform(p, "ws", 2));
}

START_TEST(test_dir_uniform)
{
	struct b b;
	init(&b, BBX_MODE_ENFORCE);
	rule(&b, BBX_PS_WRITE, 0, 0, "/ws");
	rule(&b, BBX_PS_WRITE, 0, 0, "/srv/only");
	rule(&b, BBX_PS_WRITE, 0, 0, "/top");
	rule(&b, BBX_PS_PROTECT, 0, 0, "/ws/.git/hooks");
	rule(&b, BBX_PS_PROTECT, 0, 0, "/ws/gone");
	rule(&b, BBX_PS_DENY_READ, 0, 0, "/ws/src/secret");
	struct bbx_pol_hdr *p = build(&b);
	((struct bbx_pol_rule *)bbx_pol_rules(p))[4].flags |= BBX_RF_ABSENT;
	/* Scanning the rules, then through the index the shim builds (the process's first
	 * indexed blob: Check runs each test in a process of its own). */
	uniform_pass(p);
	bbx_pol_index(p);
	ck_assert_int_ne(bbx_pol_index_source(), 0);
	uniform_pass(p);
	free(p);
}
END_TEST

START_TEST(test_modes)
{
	struct b b;
	init(&b, BBX_MODE_AUDIT);
	rule(&b, BBX_PS_WRITE, 0, 0, "/ws");
	rule(&b, BBX_PS_EXEC, BBX_ACT_DENY, BBX_CLASS_DESTRUCTIVE, "rm -rf /");
	struct bbx_pol_hdr *p = build(&b);
	struct bbx_pol_verdict v;
	bbx_pol_write(p, "/etc/x", &v);
	ck_assert_int_eq(v.decision, BBX_DEC_AUDIT);
	ck_assert_int_eq(v.err, 0);
	bbx_pol_exec(p, "rm -rf /", &v);
	ck_assert_int_eq(v.decision, BBX_DEC_AUDIT);
	ck_assert_int_eq(v.klass, BBX_CLASS_DESTRUCTIVE);
	free(p);

	init(&b, BBX_MODE_SAFE);
	rule(&b, BBX_PS_WRITE, 0, 0, "/ws");
	p = build(&b);
	bbx_pol_write(p, "/ws/a", &v);
	ck_assert_int_eq(v.decision, BBX_DEC_DENY);
	ck_assert_int_eq(v.err, EPERM);
	bbx_pol_read(p, "/ws/a", &v);
	ck_assert_int_eq(v.decision, BBX_DEC_ALLOW);
	free(p);
}
END_TEST

START_TEST(test_exec_first_match)
{
	struct b b;
	init(&b, BBX_MODE_ENFORCE);
	rule(&b, BBX_PS_EXEC, BBX_ACT_ALLOW, BBX_CLASS_SAFE, "git push --dry-run*");
	rule(&b, BBX_PS_EXEC, BBX_ACT_DENY, BBX_CLASS_DANGEROUS, "git push --force*");
	rule(&b, BBX_PS_EXEC, BBX_ACT_LOG, BBX_CLASS_RISKY, "git push*");
	rule(&b, BBX_PS_EXEC, BBX_ACT_ASK, BBX_CLASS_RISKY, "npm publish*");
	struct bbx_pol_hdr *p = build(&b);
	struct bbx_pol_verdict v;
	bbx_pol_exec(p, "git push --dry-run --force", &v);
	ck_assert_int_eq(v.decision, BBX_DEC_ALLOW);
	ck_assert_ptr_nonnull(v.rule);
	bbx_pol_exec(p, "git push --force origin", &v);
	ck_assert_int_eq(v.decision, BBX_DEC_DENY);
	ck_assert_int_eq(v.err, EPERM);
	ck_assert_int_eq(v.klass, BBX_CLASS_DANGEROUS);
	bbx_pol_exec(p, "git push origin", &v);
	ck_assert_int_eq(v.decision, BBX_DEC_LOG);
	ck_assert_int_eq(v.klass, BBX_CLASS_RISKY);
	bbx_pol_exec(p, "npm publish", &v); /* ask: refused until approvals exist */
	ck_assert_int_eq(v.decision, BBX_DEC_DENY);
	bbx_pol_exec(p, "ls -la", &v);
	ck_assert_int_eq(v.decision, BBX_DEC_ALLOW);
	ck_assert_ptr_null(v.rule);
	ck_assert_int_eq(v.klass, BBX_CLASS_SAFE);
	free(p);
}
END_TEST

START_TEST(test_inodes)
{
	struct b b;
	init(&b, BBX_MODE_ENFORCE);
	rule(&b, BBX_PS_DENY_READ, 0, 0, "/home/u/.ssh");
	b.in[b.ni++] = (struct bbx_pol_inode){.dev = 5, .ino = 10, .rule = 0};
	b.in[b.ni++] = (struct bbx_pol_inode){.dev = 5, .ino = 99, .rule = 0};
	b.in[b.ni++] = (struct bbx_pol_inode){.dev = 7, .ino = 1, .rule = 0};
	struct bbx_pol_hdr *p = build(&b);
	struct bbx_pol_verdict v;
	ck_assert(bbx_pol_read_inode(p, 5, 10, &v));
	ck_assert_int_eq(v.err, EACCES);
	ck_assert(bbx_pol_read_inode(p, 5, 99, &v));
	ck_assert(bbx_pol_read_inode(p, 7, 1, &v));
	ck_assert(!bbx_pol_read_inode(p, 5, 11, &v));
	ck_assert(!bbx_pol_read_inode(p, 6, 10, &v));
	ck_assert(!bbx_pol_read_inode(p, 7, 0, &v));
	free(p);
}
END_TEST

START_TEST(test_check_rejects)
{
	struct b b;
	init(&b, BBX_MODE_ENFORCE);
	rule(&b, BBX_PS_WRITE, 0, 0, "/ws");
	struct bbx_pol_hdr *p = build(&b);
	size_t len = p->size;
	ck_assert_int_eq(bbx_pol_check(p, len - 1), -EINVAL); /* size mismatch */
	p->magic ^= 1;
	ck_assert_int_eq(bbx_pol_check(p, len), -EINVAL);
	p->magic ^= 1;
	((struct bbx_pol_rule *)bbx_pol_rules(p))[0].value = 10000; /* dangling offset */
	ck_assert_int_eq(bbx_pol_check(p, len), -EINVAL);
	free(p);
	p = build(&b);
	((struct bbx_pol_rule *)bbx_pol_rules(p))[0].value_len = 100000; /* past the pool */
	ck_assert_int_eq(bbx_pol_check(p, len), -EINVAL);
	free(p);
	p = build(&b);
	p->mode = 9;
	ck_assert_int_eq(bbx_pol_check(p, len), -EINVAL);
	free(p);
}
END_TEST

static Suite *match_suite(void)
{
	Suite *s = suite_create("match");
	TCase *tc = tcase_create("match");
	tcase_add_test(tc, test_glob);
	tcase_add_test(tc, test_path_under);
	tcase_add_test(tc, test_write_precedence);
	tcase_add_test(tc, test_dir_uniform);
	tcase_add_test(tc, test_modes);
	tcase_add_test(tc, test_exec_first_match);
	tcase_add_test(tc, test_inodes);
	tcase_add_test(tc, test_check_rejects);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return unit_main(match_suite()); }
