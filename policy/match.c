/* SPDX-License-Identifier: MIT
 *
 * match.c - decisions over a compiled policy (policy.h): paths and exec.  Used by the
 * shim inside its wrappers, so: no allocation, no locks, no syscalls except in
 * bbx_pol_map(), nothing that is not async-signal-safe.  The network matcher is in
 * match_net.c.
 */
#include "policy.h"
#include "journal/record.h"
#include "journal/hot.h"
#include "journal/sys.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The string pool ends with a NUL (checked once), so any offset inside it names a
 * terminated string within the blob: a bound check per string, no scan.  This runs in
 * every process of a run (start-up budget). */
static bool str_ok(const struct bbx_pol_hdr *p, uint32_t off)
{
	return off < p->strings_len;
}

int bbx_pol_check(const void *blob, size_t len)
{
	const struct bbx_pol_hdr *p = blob;
	if (len < sizeof *p || p->magic != BBX_POL_MAGIC || p->version != BBX_POL_VERSION ||
	    p->size != len)
		return -EINVAL;
	uint64_t rend = (uint64_t)p->rules_off + (uint64_t)p->n_rules * sizeof(struct bbx_pol_rule);
	uint64_t iend = (uint64_t)p->inodes_off +
			(uint64_t)p->n_inodes * sizeof(struct bbx_pol_inode);
	uint64_t send = (uint64_t)p->strings_off + p->strings_len;
	uint64_t xend = (uint64_t)p->ix_off + p->ix_len;
	if (p->ix_off && ((p->ix_off % 8) || p->ix_off < send || xend > len || !p->ix_len))
		return -EINVAL;
	if (!p->ix_off && p->ix_len)
		return -EINVAL;
	if (rend > len || iend > len || send > len || p->strings_len == 0 ||
	    (p->rules_off % 8) || (p->inodes_off % 8) || p->rules_off < sizeof *p ||
	    (p->n_inodes && p->inodes_off < sizeof *p) || p->strings_off < sizeof *p)
		return -EINVAL;
	if (((const char *)p)[send - 1] != 0 || !str_ok(p, p->src) || !str_ok(p, p->workspace) ||
	    !str_ok(p, p->static_loc) || p->mode > BBX_MODE_SAFE ||
	    !str_ok(p, p->max_preserve_loc) || !str_ok(p, p->over_max_loc) ||
	    p->over_max > BBX_OVER_ALLOW || p->sync > 2 /* BBX_SYNC_ALWAYS */)
		return -EINVAL;
	const struct bbx_pol_rule *r = bbx_pol_rules(p);
	for (uint32_t i = 0; i < p->n_rules; i++) {
		/* value_len bytes of the value lie inside the pool (the matcher reads no
		 * further: strncmp stops at the value's own NUL in any case). */
		if (!str_ok(p, r[i].loc) || (uint64_t)r[i].value + r[i].value_len >= p->strings_len)
			return -EINVAL;
	}
	const struct bbx_pol_inode *in = bbx_pol_inodes(p);
	for (uint32_t i = 0; i < p->n_inodes; i++) {
		if (in[i].rule >= p->n_rules)
			return -EINVAL;
		if (i && (in[i - 1].dev > in[i].dev ||
			  (in[i - 1].dev == in[i].dev && in[i - 1].ino > in[i].ino)))
			return -EINVAL;
	}
	return 0;
}

/* By system calls of its own (journal/sys.h), not libc's open, fstat, mmap and close:
 * in the shim those were the first calls of each in most processes, a lazy binding
 * each (~500 instructions, a symbol lookup through every library of the process), and
 * open and close went through the shim's own wrappers. */
int bbx_pol_map(const char *path, const struct bbx_pol_hdr **out)
{
	long fd = bbx_sys_raw4(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return (int)fd;
	struct stat sb;
	if (bbx_sys_fstatat((int)fd, "", &sb, AT_EMPTY_PATH) < 0 ||
	    sb.st_size < (off_t)sizeof(struct bbx_pol_hdr) || sb.st_size > (64 << 20)) {
		bbx_sys_raw4(SYS_close, fd, 0, 0, 0);
		return -EINVAL;
	}
	/* Populated: every process that asks the policy anything reads its header and
	 * tables at once (bbx_pol_check reads all of it), and the mapping, placed anywhere,
	 * often straddles a 64 KiB fault-around window: two page faults, ~20 us each here,
	 * against a few microseconds for mmap to map the cached pages itself (issue 5). */
	long m = bbx_sys_raw6(SYS_mmap, 0, (long)sb.st_size, PROT_READ,
			      MAP_PRIVATE | MAP_POPULATE, fd, 0);
	bbx_sys_raw4(SYS_close, fd, 0, 0, 0);
	if (m < 0 && m > -4096)
		return (int)m;
	if (bbx_pol_check((const void *)m, (size_t)sb.st_size)) {
		bbx_sys_raw4(SYS_munmap, m, (long)sb.st_size, 0, 0);
		return -EINVAL;
	}
	*out = (const struct bbx_pol_hdr *)m;
	return 0;
}

bool bbx_path_under(const char *path, const char *root, size_t root_len)
{
	if (root_len == 1 && root[0] == '/')
		return path[0] == '/';
	/* The first two bytes settle most pairs (every read-only call tries each deny_read
	 * root) without a call into libc. */
	if (path[0] != root[0] || (root_len > 1 && path[1] != root[1]))
		return false;
	return !strncmp(path, root, root_len) && (path[root_len] == 0 || path[root_len] == '/');
}

static int fold(int c, int flags)
{
	return (flags & BBX_GLOB_CASEFOLD) && c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* One bracket expression at *pp against c; advances *pp past it.  -1: malformed (the
 * '[' is then literal). */
static int bracket(const char **pp, int c, int flags)
{
	const char *p = *pp + 1;
	bool neg = false, hit = false;
	if (*p == '!' || *p == '^') {
		neg = true;
		p++;
	}
	const char *first = p;
	while (*p && (*p != ']' || p == first)) {
		int lo = fold((unsigned char)*p, flags), hi = lo;
		if (p[1] == '-' && p[2] && p[2] != ']') {
			hi = fold((unsigned char)p[2], flags);
			p += 2;
		}
		if (c >= lo && c <= hi)
			hit = true;
		p++;
	}
	if (*p != ']')
		return -1;
	*pp = p + 1;
	return hit != neg;
}

/* Iterative glob with single-star backtracking: linear in practice, no recursion, no
 * allocation.  '*' matches any run of bytes including '/' (command lines and host
 * names are not paths). */
bool bbx_glob(const char *pat, const char *s, int flags)
{
	const char *star = NULL, *resume = NULL;
	while (*s) {
		if (*pat == '*') {
			while (*pat == '*')
				pat++;
			if (!*pat)
				return true;
			star = pat;
			resume = s;
			continue;
		}
		int c = fold((unsigned char)*s, flags);
		if (*pat == '?') {
			pat++;
			s++;
			continue;
		}
		if (*pat == '[') {
			const char *q = pat;
			int m = bracket(&q, c, flags);
			if (m == 1) {
				pat = q;
				s++;
				continue;
			}
			if (m == 0)
				goto backtrack;
			/* malformed: literal '[' */
		}
		if (*pat == '\\' && pat[1])
			pat++;
		if (*pat && fold((unsigned char)*pat, flags) == c) {
			pat++;
			s++;
			continue;
		}
	backtrack:
		if (!star)
			return false;
		pat = star;
		s = ++resume;
	}
	while (*pat == '*')
		pat++;
	return !*pat;
}

static void verdict(struct bbx_pol_verdict *v, int decision, int err, const struct bbx_pol_rule *r,
		    const char *reason)
{
	v->decision = decision;
	v->err = err;
	v->rule = r;
	v->reason = reason;
	v->klass = r ? r->klass : BBX_CLASS_NONE;
}

/* Refusal under the mode: audit turns it into a recorded allow. */
static void refuse(const struct bbx_pol_hdr *p, struct bbx_pol_verdict *v, int err,
		   const struct bbx_pol_rule *r, const char *reason)
{
	verdict(v, p->mode == BBX_MODE_AUDIT ? BBX_DEC_AUDIT : BBX_DEC_DENY,
		p->mode == BBX_MODE_AUDIT ? 0 : err, r, reason);
}

/* The path rules of one blob by section ([paths] write, protect, deny_read): every
 * decision walks a section, and the default policy has 134 rules of which 20-odd are
 * paths (under_any was a fifth of a micro benchmark's instructions, callgrind).  Used for
 * a blob that stays mapped for the life of the process (the shim's run policy,
 * bbx_pol_index); other blobs, and sections too long for the index, are scanned whole.
 * No lock (signal handlers decide too): readers use it once it is ready.
 *
 * The index is built by the policy compiler and carried in the blob (bbx_pol_ix_build,
 * hdr.ix_off): built in each process instead, it was ~6 KiB of zero pages written by
 * every process that decided anything, 2,712 of the 38,000 page faults bbx added to a
 * ./configure (issue 5), where the blob's own pages come with the one fault that maps
 * the header (file pages, fault-around).  A blob without one (an older compiler, the
 * shim's built-in safe blob) is indexed in the process, as before. */
#define IDX_SECTIONS 4 /* sections 1..3 */
#define IDX_MAX 128
/* Each section's roots are also hashed (FNV-1a of the root's bytes, with its length):
 * a path is then matched in one pass over its bytes, probing at each '/' and at its end
 * for a root equal to the prefix so far, instead of comparing it with every root (17
 * deny_read roots cost ~700 instructions per stat, callgrind; the read-only budget of
 * issue 5).  The first rule in file order wins, as in the scan.  A section with more
 * than HX_MAX roots (or a table that fills up) is scanned. */
#define HX_SLOTS 64
#define HX_MAX 32
struct hx_slot {
	uint32_t h;
	uint16_t len;
	uint16_t rule1; /* rule index + 1; 0: empty */
};
/* The roots' distinct first components ("/root", "/etc"): a path whose first component
 * is none of them is under no root, decided after its first word. */
#define HX_FIRST 8
/* And the [exec] rules, each with the longest literal run of its pattern before any
 * '[' or '\\' (a string the command line must contain for the glob to match): 82
 * built-ins are tried on every exec, and half of them ("*\/rm * /etc *") pass the
 * first-byte test for an absolute program name (56 globs per exec, callgrind). */
#define XIDX_MAX 512
#define IX_MAGIC 0x34584950u /* "PIX4": bump with any change of struct bbx_pol_ix */
struct bbx_pol_ix {
	uint32_t magic, size; /* IX_MAGIC, sizeof (struct bbx_pol_ix) */
	uint32_t ok;	      /* 0: some section did not fit: scan everything */
	uint16_t idx_n[IDX_SECTIONS], idx_rule[IDX_SECTIONS][IDX_MAX];
	struct hx_slot hx[IDX_SECTIONS][HX_SLOTS];
	uint16_t hx_all[IDX_SECTIONS]; /* rule index + 1 of the first "/" root */
	uint8_t hx_ok[IDX_SECTIONS];
	uint8_t hx_nfirst[IDX_SECTIONS]; /* HX_FIRST + 1: too many to filter on */
	uint32_t hx_first_h[IDX_SECTIONS][HX_FIRST];
	uint16_t hx_first_len[IDX_SECTIONS][HX_FIRST];
	/* The byte after the leading '/' of every root: a path whose second byte is none
	 * of them ("/usr/..." against roots under "/root" and "/home") is under no root,
	 * decided before any hashing (stat under the default policy: 135 -> ~40
	 * instructions in under_any). */
	uint64_t hx_byte1[IDX_SECTIONS][4];
	/* The longest root (no prefix of a path longer than that can be one), and the rule
	 * index + 1 of the section's first root in file order (once it matches, no other
	 * can win): a path is hashed only as far as a root could still match it, not to
	 * its end (the write decision of a file in the workspace, ${WORKSPACE} being the
	 * first write root: under_any's three sections ~710 -> ~575 instructions a
	 * create, callgrind of tar -x of 10,000 files). */
	uint16_t hx_maxlen[IDX_SECTIONS], hx_first1[IDX_SECTIONS];
	uint16_t xidx_n, xidx_rule[XIDX_MAX], xidx_off[XIDX_MAX];
	uint8_t xidx_len[XIDX_MAX];
	/* Each rule's first byte, 0 when it is a wildcard ('*', '?', '[', '\\') or the
	 * pattern is empty: the first-byte test read from one array, without the rule or
	 * its pattern (78 built-in rules at every exec: ~1,700 of the ~2,900 instructions
	 * a short command line cost, callgrind). */
	uint8_t xidx_first[XIDX_MAX];
	struct bbx_pol_rf rf; /* the read filter's policy part (policy.h) */
	uint32_t red_first[2], red_n[2], red_runs; /* bbx_pol_redact_runs */
};
BBX_HOT static const struct bbx_pol_hdr *idx_blob;
BBX_HOT static const struct bbx_pol_ix *idx; /* the index of idx_blob once idx_state is 2 */
BBX_HOT static int idx_state; /* 0 none, 1 building, 2 ready, 3 unusable */
static struct bbx_pol_ix own_ix; /* for a blob that carries none */

#define FNV_BASIS 0xcbf29ce484222325ull
static inline uint64_t fnv_step(uint64_t h, unsigned char c)
{
	return (h ^ c) * 0x100000001b3ull;
}

static void hx_first_add(struct bbx_pol_ix *x, int s, const char *root, uint32_t len)
{
	uint64_t h = FNV_BASIS;
	uint32_t k = 0;
	do
		h = fnv_step(h, (unsigned char)root[k]);
	while (++k < len && root[k] != '/');
	for (unsigned j = 0; j < x->hx_nfirst[s] && j < HX_FIRST; j++)
		if (x->hx_first_h[s][j] == (uint32_t)h && x->hx_first_len[s][j] == k)
			return;
	if (x->hx_nfirst[s] >= HX_FIRST) {
		x->hx_nfirst[s] = HX_FIRST + 1;
		return;
	}
	x->hx_first_h[s][x->hx_nfirst[s]] = (uint32_t)h;
	x->hx_first_len[s][x->hx_nfirst[s]++] = (uint16_t)k;
}

static unsigned hx_home(uint64_t h)
{
	return (unsigned)(h ^ (h >> 29)) & (HX_SLOTS - 1);
}

/* 0, or -1 when the section's table is full. */
static int hx_add(struct bbx_pol_ix *x, const struct bbx_pol_hdr *p, int s, uint32_t i)
{
	const struct bbx_pol_rule *r = &bbx_pol_rules(p)[i];
	const char *root = bbx_pol_str(p, r->value);
	if (r->value_len == 1 && root[0] == '/') {
		if (!x->hx_all[s])
			x->hx_all[s] = (uint16_t)(i + 1);
		return 0;
	}
	if (r->value_len < 2 || r->value_len > 65535)
		return -1;
	uint64_t h = FNV_BASIS;
	for (uint32_t k = 0; k < r->value_len; k++)
		h = fnv_step(h, (unsigned char)root[k]);
	hx_first_add(x, s, root, r->value_len);
	if (r->value_len > x->hx_maxlen[s])
		x->hx_maxlen[s] = (uint16_t)r->value_len;
	unsigned char b1 = (unsigned char)root[1];
	x->hx_byte1[s][b1 >> 6] |= 1ull << (b1 & 63);
	unsigned n = 0;
	for (unsigned j = hx_home(h);; j = (j + 1) & (HX_SLOTS - 1)) {
		struct hx_slot *e = &x->hx[s][j];
		if (!e->rule1) {
			e->h = (uint32_t)h;
			e->len = (uint16_t)r->value_len;
			e->rule1 = (uint16_t)(i + 1);
			return 0;
		}
		const struct bbx_pol_rule *o = &bbx_pol_rules(p)[e->rule1 - 1];
		if (e->h == (uint32_t)h && e->len == r->value_len &&
		    !memcmp(bbx_pol_str(p, o->value), root, r->value_len))
			return 0; /* the same root again: the earlier rule wins */
		if (++n == HX_SLOTS)
			return -1;
	}
}

static const struct bbx_pol_rule *hx_under(const struct bbx_pol_ix *x, const struct bbx_pol_hdr *p,
					   int s, const char *path)
{
	const struct bbx_pol_rule *r = bbx_pol_rules(p);
	unsigned best = x->hx_all[s] ? x->hx_all[s] : 0xffffffffu; /* rule index + 1 */
	if (path[0] != '/')
		best = 0xffffffffu; /* "/" is under_any's only for absolute paths */
	else if (!x->hx_all[s]) {
		unsigned char b1 = (unsigned char)path[1];
		if (!(x->hx_byte1[s][b1 >> 6] >> (b1 & 63) & 1))
			return NULL;
	}
	const unsigned first1 = x->hx_first1[s], maxlen = x->hx_maxlen[s];
	uint64_t h = FNV_BASIS;
	int first = x->hx_nfirst[s] <= HX_FIRST;
	for (size_t i = 0; best != first1; i++) {
		unsigned char c = (unsigned char)path[i];
		if ((c == '/' || c == 0) && i > 0 && i <= 65535) {
			if (first) {
				unsigned j = 0;
				while (j < x->hx_nfirst[s] &&
				       !(x->hx_first_h[s][j] == (uint32_t)h && x->hx_first_len[s][j] == i))
					j++;
				if (j == x->hx_nfirst[s])
					break; /* no root starts with this word */
				first = 0;
			}
			for (unsigned j = hx_home(h);; j = (j + 1) & (HX_SLOTS - 1)) {
				const struct hx_slot *e = &x->hx[s][j];
				if (!e->rule1)
					break;
				if (e->h == (uint32_t)h && e->len == i && e->rule1 < best &&
				    !memcmp(bbx_pol_str(p, r[e->rule1 - 1].value), path, i))
					best = e->rule1;
			}
		}
		if (!c || i >= maxlen)
			break; /* the next place to probe would be longer than every root */
		h = fnv_step(h, c);
	}
	return best == 0xffffffffu ? NULL : &r[best - 1];
}
static void exec_needle(const char *g, uint16_t *off, uint8_t *len)
{
	size_t best = 0, best_len = 0, run = 0, i = 0;
	for (; g[i] && g[i] != '[' && g[i] != '\\' && i < 65535; i++) {
		if (g[i] == '*' || g[i] == '?') {
			run = i + 1;
			continue;
		}
		if (i + 1 - run > best_len && i + 1 - run <= 255) {
			best = run;
			best_len = i + 1 - run;
		}
	}
	*off = (uint16_t)best;
	*len = (uint8_t)best_len;
}

/* Does s contain the n bytes at lit (n >= 1)?  The candidates by strchr (vectorised:
 * a 1,500-byte link line scanned byte by byte cost ~4,500 instructions a needle). */
static int has_literal(const char *s, const char *lit, size_t n)
{
	if (!lit[0])
		return 0;
	for (; (s = strchr(s, lit[0])); s++) {
		size_t k = 1;
		while (k < n && s[k] == lit[k])
			k++;
		if (k == n)
			return 1;
	}
	return 0;
}

/* One prefix into the filter's table.  0, or -1 when the table would be too full. */
static int rf_pfx_put(struct bbx_pol_rf *f, uint32_t h, int whole)
{
	uint32_t k = h & ~3u, v = k | 1u | (whole ? 2u : 0u);
	for (unsigned j = bbx_rf_pfx_home(h);; j = (j + 1) & (BBX_RF_PFX_SLOTS - 1)) {
		uint32_t *e = &f->pfx[j];
		if (!*e) {
			if (++f->npfx > BBX_RF_PFX_MAX)
				return -1;
			*e = v;
			return 0;
		}
		if ((*e & ~3u) == k) {
			*e |= v & 2u; /* a root and another's prefix: the root wins */
			return 0;
		}
	}
}

/* Every deny_read root's component prefixes, and the root itself: all of them, whatever
 * the rule's flags (a root the general path skips only makes the filter send more
 * reads its way).  A root that is not absolute (none is, compiled), or more prefixes than
 * fit: no table, the second byte alone decides. */
static void rf_pfx_build(const struct bbx_pol_hdr *p, struct bbx_pol_rf *f)
{
	const struct bbx_pol_rule *r = bbx_pol_rules(p);
	for (uint32_t i = 0; i < p->n_rules; i++) {
		if (r[i].section != BBX_PS_DENY_READ)
			continue;
		const char *v = bbx_pol_str(p, r[i].value);
		uint32_t h = BBX_RF_FNV0, len = r[i].value_len;
		if (len < 2 || v[0] != '/')
			goto none;
		for (uint32_t k = 0; k < len; k++) {
			if (v[k] == '/' && k > 0 && rf_pfx_put(f, h, 0))
				goto none;
			h = bbx_rf_fnv(h, (unsigned char)v[k]);
		}
		if (rf_pfx_put(f, h, 1))
			goto none;
	}
	return;
none:
	memset(f->pfx, 0, sizeof f->pfx);
	f->npfx = 0;
}

/* The read filter's policy part (policy.h, struct bbx_pol_rf), for x built so far. */
static void rf_build(const struct bbx_pol_hdr *p, struct bbx_pol_ix *x)
{
	const int s = BBX_PS_DENY_READ;
	struct bbx_pol_rf *f = &x->rf;
	if (bbx_pol_partial_roots(p))
		return; /* an opened object's kernel name is checked too: no filter */
	if (!x->ok || !x->hx_ok[s] || x->hx_all[s])
		return;
	memcpy(f->words, x->hx_byte1[s], sizeof f->words);
	f->words['.' >> 6] |= 1ull << ('.' & 63);
	f->words['/' >> 6] |= 1ull << ('/' & 63);
	rf_pfx_build(p, f);
	const struct bbx_pol_inode *in = bbx_pol_inodes(p);
	for (uint32_t i = 0; i < p->n_inodes; i++) {
		unsigned b = bbx_rf_ino_bit(in[i].ino);
		f->ino[b >> 6] |= 1ull << (b & 63);
	}
	f->ok = 1;
}

/* [redact]'s runs (bbx_pol_redact_runs). */
static void red_build(const struct bbx_pol_hdr *p, struct bbx_pol_ix *x)
{
	const struct bbx_pol_rule *r = bbx_pol_rules(p);
	uint32_t last[2] = {0, 0};
	for (uint32_t i = 0; i < p->n_rules; i++) {
		int k = r[i].section == BBX_PS_REDACT_ENV    ? 0
			: r[i].section == BBX_PS_REDACT_ARGV ? 1
							     : -1;
		if (k < 0)
			continue;
		if (!x->red_n[k]++)
			x->red_first[k] = i;
		last[k] = i;
	}
	x->red_runs = (!x->red_n[0] || last[0] - x->red_first[0] + 1 == x->red_n[0]) &&
		      (!x->red_n[1] || last[1] - x->red_first[1] + 1 == x->red_n[1]);
}

/* The index of p into x (zeroed here).  Reads only p's rules and strings. */
static void ix_build(const struct bbx_pol_hdr *p, struct bbx_pol_ix *x)
{
	memset(x, 0, sizeof *x);
	x->magic = IX_MAGIC;
	x->size = (uint32_t)sizeof *x;
	const struct bbx_pol_rule *r = bbx_pol_rules(p);
	int ok = p->n_rules < 65536;
	for (uint32_t i = 0; ok && i < p->n_rules; i++) {
		int s = (int)r[i].section;
		if (s == BBX_PS_EXEC) {
			if (x->xidx_n == XIDX_MAX) {
				ok = 0;
				continue;
			}
			const char *g = bbx_pol_str(p, r[i].value);
			exec_needle(g, &x->xidx_off[x->xidx_n], &x->xidx_len[x->xidx_n]);
			x->xidx_first[x->xidx_n] =
				g[0] == '*' || g[0] == '?' || g[0] == '[' || g[0] == '\\' ? 0 : (uint8_t)g[0];
			x->xidx_rule[x->xidx_n++] = (uint16_t)i;
			continue;
		}
		if (s < 1 || s >= IDX_SECTIONS)
			continue;
		if (x->idx_n[s] == IDX_MAX)
			ok = 0;
		else
			x->idx_rule[s][x->idx_n[s]++] = (uint16_t)i;
	}
	for (int s = 1; ok && s < IDX_SECTIONS; s++) {
		unsigned roots = 0;
		for (unsigned k = 0; k < x->idx_n[s]; k++)
			roots += !(r[x->idx_rule[s][k]].flags & BBX_RF_ABSENT);
		if (roots > HX_MAX)
			continue;
		int good = 1;
		for (unsigned k = 0; good && k < x->idx_n[s]; k++)
			if (!(r[x->idx_rule[s][k]].flags & BBX_RF_ABSENT)) {
				if (!x->hx_first1[s])
					x->hx_first1[s] = (uint16_t)(x->idx_rule[s][k] + 1);
				good = hx_add(x, p, s, x->idx_rule[s][k]) == 0;
			}
		x->hx_ok[s] = (uint8_t)good;
	}
	x->ok = (uint32_t)ok;
	rf_build(p, x);
	red_build(p, x);
}

size_t bbx_pol_ix_size(void)
{
	return sizeof(struct bbx_pol_ix);
}

void bbx_pol_ix_build(const struct bbx_pol_hdr *p, void *out)
{
	struct bbx_pol_ix x;
	ix_build(p, &x);
	memcpy(out, &x, sizeof x);
}

/* The index p carries, when it is one this matcher can use: every rule index within
 * the rules, every hashed root's length its rule's, every exec needle inside its
 * pattern (a blob is checked before use; an index that fails is not used, and the
 * process builds its own).  NULL otherwise. */
static const struct bbx_pol_ix *ix_carried(const struct bbx_pol_hdr *p)
{
	if (!p->ix_off || p->ix_len != sizeof(struct bbx_pol_ix))
		return NULL; /* bbx_pol_check: then it lies inside the blob, 8-aligned */
	const struct bbx_pol_ix *x = (const void *)((const char *)p + p->ix_off);
	const struct bbx_pol_rule *r = bbx_pol_rules(p);
	uint32_t n = p->n_rules;
	if (x->magic != IX_MAGIC || x->size != sizeof *x || x->xidx_n > XIDX_MAX)
		return NULL;
	for (int s = 0; s < IDX_SECTIONS; s++) {
		if (x->idx_n[s] > IDX_MAX || x->hx_all[s] > n || x->hx_nfirst[s] > HX_FIRST + 1)
			return NULL;
		for (unsigned k = 0; k < x->idx_n[s]; k++)
			if (x->idx_rule[s][k] >= n)
				return NULL;
		/* The early stops must not stop before a root: every root within the bounds. */
		if (x->hx_all[s] && x->hx_all[s] < x->hx_first1[s])
			return NULL;
		for (unsigned j = 0; j < HX_SLOTS; j++) {
			const struct hx_slot *e = &x->hx[s][j];
			if (e->rule1 && (e->rule1 > n || e->len != r[e->rule1 - 1].value_len ||
					 e->len > x->hx_maxlen[s] || e->rule1 < x->hx_first1[s]))
				return NULL;
		}
	}
	for (unsigned k = 0; k < x->xidx_n; k++)
		if (x->xidx_rule[k] >= n ||
		    (uint32_t)x->xidx_off[k] + x->xidx_len[k] > r[x->xidx_rule[k]].value_len)
			return NULL;
	/* The prefix table's probes end at an empty slot; the redaction runs lie within
	 * the rules, each of its own section when it is one run. */
	unsigned used = 0;
	for (unsigned j = 0; j < BBX_RF_PFX_SLOTS; j++)
		used += x->rf.pfx[j] != 0;
	if (x->rf.npfx > BBX_RF_PFX_MAX || used > BBX_RF_PFX_MAX || x->red_runs > 1)
		return NULL;
	for (int k = 0; k < 2; k++)
		if (x->red_n[k] > n || x->red_first[k] > n - x->red_n[k] ||
		    (x->red_runs && x->red_n[k] &&
		     (r[x->red_first[k]].section != (k ? BBX_PS_REDACT_ARGV : BBX_PS_REDACT_ENV) ||
		      r[x->red_first[k] + x->red_n[k] - 1].section !=
			      (k ? BBX_PS_REDACT_ARGV : BBX_PS_REDACT_ENV))))
			return NULL;
	return x;
}

void bbx_pol_index(const struct bbx_pol_hdr *p)
{
	int expect = 0;
	if (!__atomic_compare_exchange_n(&idx_state, &expect, 1, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return;
	const struct bbx_pol_ix *x = ix_carried(p);
	if (!x) {
		ix_build(p, &own_ix);
		x = &own_ix;
	}
	idx = x;
	idx_blob = p;
	__atomic_store_n(&idx_state, x->ok ? 2 : 3, __ATOMIC_RELEASE);
}

const struct bbx_pol_rf *bbx_pol_read_filter(const struct bbx_pol_hdr *p)
{
	if (__atomic_load_n(&idx_state, __ATOMIC_ACQUIRE) != 2 || idx_blob != p || !idx->rf.ok)
		return NULL;
	return &idx->rf;
}

int bbx_pol_redact_runs(const struct bbx_pol_hdr *p, uint32_t first[2], uint32_t n[2])
{
	int st = __atomic_load_n(&idx_state, __ATOMIC_ACQUIRE);
	if ((st != 2 && st != 3) || idx_blob != p)
		return -1;
	for (int k = 0; k < 2; k++) {
		first[k] = idx->red_first[k];
		n[k] = idx->red_n[k];
	}
	return (int)idx->red_runs;
}

int bbx_pol_index_source(void)
{
	if (__atomic_load_n(&idx_state, __ATOMIC_ACQUIRE) < 2)
		return 0;
	return idx == &own_ix ? 2 : 1;
}

static const struct bbx_pol_rule *under_any(const struct bbx_pol_hdr *p, int section,
					    const char *path)
{
	const struct bbx_pol_rule *r = bbx_pol_rules(p);
	if (__atomic_load_n(&idx_state, __ATOMIC_ACQUIRE) == 2 && idx_blob == p && section >= 1 &&
	    section < IDX_SECTIONS) {
		const struct bbx_pol_ix *ix = idx;
		if (ix->hx_ok[section])
			return hx_under(ix, p, section, path);
		for (unsigned k = 0; k < ix->idx_n[section]; k++) {
			const struct bbx_pol_rule *x = &r[ix->idx_rule[section][k]];
			if (!(x->flags & BBX_RF_ABSENT) &&
			    bbx_path_under(path, bbx_pol_str(p, x->value), x->value_len))
				return x;
		}
		return NULL;
	}
	for (uint32_t i = 0; i < p->n_rules; i++)
		if (r[i].section == section && !(r[i].flags & BBX_RF_ABSENT) &&
		    bbx_path_under(path, bbx_pol_str(p, r[i].value), r[i].value_len))
			return &r[i];
	return NULL;
}

void bbx_pol_write(const struct bbx_pol_hdr *p, const char *path, struct bbx_pol_verdict *v)
{
	const struct bbx_pol_rule *r;
	if (p->mode == BBX_MODE_SAFE) {
		verdict(v, BBX_DEC_DENY, EPERM, NULL, "safe mode: every mutation is refused");
		return;
	}
	if (p->n_deny_read && (r = under_any(p, BBX_PS_DENY_READ, path))) {
		refuse(p, v, EACCES, r, "under a deny_read path");
		return;
	}
	if ((r = under_any(p, BBX_PS_PROTECT, path))) {
		refuse(p, v, EACCES, r, "protected path");
		return;
	}
	if ((r = under_any(p, BBX_PS_WRITE, path))) {
		verdict(v, BBX_DEC_ALLOW, 0, r, "under a write root");
		return;
	}
	refuse(p, v, EACCES, NULL, "outside write roots");
}

/* The lengths of the roots' parent directories ("/" counts 1), as a set of the lengths
 * below 64 and whether any is longer, for the last blob asked about: a directory whose
 * length is none of them holds no root, decided without reading a rule (a directory
 * met for the first time paid a walk of some 36 roots, ~740 instructions, callgrind of
 * rm -r).  Recomputed when another blob is asked about.  seq is odd while a thread
 * (which took it by compare-and-swap) rewrites the rest; a reader that meets it odd,
 * or changed after its read, computes the set itself. */
static struct {
	unsigned seq;
	const struct bbx_pol_hdr *p;
	uint64_t lens;
	bool longer;
} plen;

static void plen_fill(const struct bbx_pol_hdr *p, uint64_t *lens, bool *longer)
{
	const struct bbx_pol_rule *r = bbx_pol_rules(p);
	*lens = 0;
	*longer = false;
	for (uint32_t i = 0; i < p->n_rules; i++) {
		if (r[i].section < BBX_PS_WRITE || r[i].section > BBX_PS_DENY_READ ||
		    (r[i].flags & BBX_RF_ABSENT))
			continue;
		/* The last slash by hand: memrchr is a libc call the shim's prebind (init.c)
		 * does not bind, which every subshell's child would bind lazily (t-cost). */
		const char *v = bbx_pol_str(p, r[i].value);
		size_t vl = r[i].value_len, k = vl;
		while (k && v[k - 1] != '/')
			k--;
		if (!k || k == vl)
			continue; /* no slash, or "/" itself: no entry of any directory */
		size_t pl = k == 1 ? 1 : k - 1;
		if (pl < 64)
			*lens |= 1ull << pl;
		else
			*longer = true;
	}
}

bool bbx_pol_dir_uniform(const struct bbx_pol_hdr *p, const char *dir, size_t dl)
{
	if (!dl || dir[0] != '/')
		return false;
	uint64_t lens;
	bool longer;
	unsigned seq = __atomic_load_n(&plen.seq, __ATOMIC_ACQUIRE);
	const struct bbx_pol_hdr *cp = __atomic_load_n(&plen.p, __ATOMIC_RELAXED);
	lens = __atomic_load_n(&plen.lens, __ATOMIC_RELAXED);
	longer = __atomic_load_n(&plen.longer, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if ((seq & 1) || cp != p || __atomic_load_n(&plen.seq, __ATOMIC_RELAXED) != seq) {
		plen_fill(p, &lens, &longer);
		if (!(seq & 1) && __atomic_compare_exchange_n(&plen.seq, &seq, seq + 1, false,
							      __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			__atomic_store_n(&plen.p, p, __ATOMIC_RELAXED);
			__atomic_store_n(&plen.lens, lens, __ATOMIC_RELAXED);
			__atomic_store_n(&plen.longer, longer, __ATOMIC_RELAXED);
			__atomic_store_n(&plen.seq, seq + 2, __ATOMIC_RELEASE);
		}
	}
	if (dl < 64 ? !(lens >> dl & 1) : !longer)
		return true;
	size_t base = dl == 1 ? 0 : dl; /* "/": the roots' own leading slash follows it */
	const struct bbx_pol_rule *r = bbx_pol_rules(p);
	/* The index's rule lists when it is this blob's (the default policy has 134 rules,
	 * some 36 of them roots), else every rule. */
	const struct bbx_pol_ix *ix = __atomic_load_n(&idx_state, __ATOMIC_ACQUIRE) == 2 &&
					      idx_blob == p ? idx : NULL;
	for (int sec = BBX_PS_WRITE; sec <= BBX_PS_DENY_READ; sec++) {
		uint32_t n = ix ? ix->idx_n[sec] : p->n_rules;
		for (uint32_t k = 0; k < n; k++) {
			const struct bbx_pol_rule *x = ix ? &r[ix->idx_rule[sec][k]] : &r[k];
			if ((int)x->section != sec || (x->flags & BBX_RF_ABSENT))
				continue;
			const char *v = bbx_pol_str(p, x->value);
			size_t vl = x->value_len;
			if (vl > base + 1 && v[base] == '/' && !memcmp(v, dir, base) &&
			    !memchr(v + base + 1, '/', vl - base - 1))
				return false; /* dir/NAME is a root: NAME is not decided as its siblings */
		}
	}
	return true;
}

void bbx_pol_read(const struct bbx_pol_hdr *p, const char *path, struct bbx_pol_verdict *v)
{
	const struct bbx_pol_rule *r;
	if (p->n_deny_read && (r = under_any(p, BBX_PS_DENY_READ, path))) {
		refuse(p, v, EACCES, r, "under a deny_read path");
		return;
	}
	verdict(v, BBX_DEC_ALLOW, 0, NULL, NULL);
}

bool bbx_pol_read_inode(const struct bbx_pol_hdr *p, uint64_t dev, uint64_t ino,
			struct bbx_pol_verdict *v)
{
	const struct bbx_pol_inode *in = bbx_pol_inodes(p);
	size_t lo = 0, hi = p->n_inodes;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (in[mid].dev < dev || (in[mid].dev == dev && in[mid].ino < ino))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < p->n_inodes && in[lo].dev == dev && in[lo].ino == ino) {
		refuse(p, v, EACCES, &bbx_pol_rules(p)[in[lo].rule], "under a deny_read path");
		return true;
	}
	verdict(v, BBX_DEC_ALLOW, 0, NULL, NULL);
	return false;
}

/* The byte pairs of a command line, hashed into a 2,048-bit set: a rule whose needle
 * (its longest literal run) holds a pair the line lacks cannot match, and is passed
 * over without scanning the line for the needle.  The line is read once per exec
 * instead of once per rule that survives the first-byte test: a gcc command line of
 * 25 arguments passed all 28 built-in rules that start with a star (rm of a system
 * directory by any path to rm, mkfs, the fork bomb), each scanning its ~350 bytes:
 * ~81,000 instructions an exec (callgrind, issue 5). */
#define PAIR_BITS BBX_POL_PAIR_BITS
static unsigned pair_hash(unsigned char a, unsigned char b)
{
	return ((unsigned)a * 33u + b) & (PAIR_BITS - 1);
}

static void pairs_of(const char *s, uint64_t set[PAIR_BITS / 64])
{
	memset(set, 0, PAIR_BITS / 8);
	for (; s[0] && s[1]; s++) {
		unsigned h = pair_hash((unsigned char)s[0], (unsigned char)s[1]);
		set[h / 64] |= (uint64_t)1 << (h % 64);
	}
}

/* May s (whose pairs are set) contain the n bytes at lit?  false: it does not. */
static bool pairs_may(const uint64_t set[PAIR_BITS / 64], const char *lit, size_t n)
{
	for (size_t i = 0; i + 1 < n; i++) {
		unsigned h = pair_hash((unsigned char)lit[i], (unsigned char)lit[i + 1]);
		if (!(set[h / 64] & (uint64_t)1 << (h % 64)))
			return false;
	}
	return true;
}

/* May the glob g match s, by its literal runs?  Each run of two bytes or more between
 * wildcards ('*', '?'), up to g's first '[' or '\\' (as exec_needle reads it), must occur
 * in s for g to match it (bbx_glob matches case-sensitively here), so a run s lacks
 * rules g out before the glob runs.  The index keeps one needle a rule, its longest
 * run: the built-in rule against rm of /usr by any path to rm kept " /usr", which every
 * link line holds, and the glob then backtracked over the whole line for the "/rm " it
 * lacks: ~28,000 instructions for each such rule, twice an exec of ld (callgrind, a
 * 1,500-byte line).  false: it cannot. */
static bool runs_may(const char *g, const char *s, const uint64_t pairs[PAIR_BITS / 64])
{
	const char *run = g;
	for (const char *q = g;; q++) {
		char c = *q;
		if (c != '*' && c != '?' && c && c != '[' && c != '\\')
			continue;
		size_t n = (size_t)(q - run);
		if (n >= 2 && (!pairs_may(pairs, run, n) || !has_literal(s, run, n)))
			return false;
		if (!c || c == '[' || c == '\\')
			return true;
		run = q + 1;
	}
}

void bbx_pol_exec(const struct bbx_pol_hdr *p, const char *cmdline, struct bbx_pol_verdict *v)
{
	struct bbx_pol_pairs pp;
	pp.ready = 0;
	bbx_pol_exec_pairs(p, cmdline, &pp, v);
}

void bbx_pol_exec_pairs(const struct bbx_pol_hdr *p, const char *cmdline,
			struct bbx_pol_pairs *pp, struct bbx_pol_verdict *v)
{
	const struct bbx_pol_rule *r = bbx_pol_rules(p);
	const struct bbx_pol_ix *ix =
		__atomic_load_n(&idx_state, __ATOMIC_ACQUIRE) == 2 && idx_blob == p ? idx : NULL;
	uint32_t n = ix ? ix->xidx_n : p->n_rules;
	uint64_t *pairs = pp->set;
	for (uint32_t k = 0; k < n; k++) {
		if (ix && ix->xidx_first[k] && ix->xidx_first[k] != (unsigned char)cmdline[0])
			continue;
		uint32_t i = ix ? ix->xidx_rule[k] : k;
		if (r[i].section != BBX_PS_EXEC)
			continue;
		const char *g = bbx_pol_str(p, r[i].value);
		/* Most rules start with a literal word ("rm ", "git push"): a different first
		 * byte rejects them without running the glob (82 built-ins, every exec). */
		if (g[0] != cmdline[0] && g[0] != '*' && g[0] != '?' && g[0] != '[' && g[0] != '\\')
			continue;
		if (ix && ix->xidx_len[k]) {
			const char *lit = g + ix->xidx_off[k];
			if (!pp->ready) {
				pairs_of(cmdline, pairs);
				pp->ready = 1;
			}
			if (!pairs_may(pairs, lit, ix->xidx_len[k]) ||
			    !has_literal(cmdline, lit, ix->xidx_len[k]) ||
			    (!(r[i].flags & BBX_RF_PREFIX) && !runs_may(g, cmdline, pairs)))
				continue;
		}
		bool hit = (r[i].flags & BBX_RF_PREFIX)
				   ? !strncmp(cmdline, g, r[i].value_len - 1)
				   : bbx_glob(g, cmdline, 0);
		if (!hit)
			continue;
		switch (r[i].action) {
		case BBX_ACT_ALLOW:
			verdict(v, BBX_DEC_ALLOW, 0, &r[i], "allowed by rule");
			return;
		case BBX_ACT_LOG:
			verdict(v, BBX_DEC_LOG, 0, &r[i], "logged by rule");
			return;
		default: /* deny, and ask until approvals exist */
			refuse(p, v, EPERM, &r[i], r[i].action == BBX_ACT_ASK
							  ? "needs approval (not available: refused)"
							  : "denied command");
			return;
		}
	}
	verdict(v, BBX_DEC_ALLOW, 0, NULL, NULL);
	v->klass = BBX_CLASS_SAFE;
}
