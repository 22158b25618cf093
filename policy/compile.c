/* SPDX-License-Identifier: MIT
 *
 * compile.c - the policy compiler (policy.h; tools only): policy.ini text to the blob
 * every process of a run maps.  It expands variables, checks every value, resolves
 * paths as the kernel will see them, lists the inodes under deny_read roots, appends
 * the built-in exec rules, and lays out the blob.  It must never hand out half a
 * policy: any error leaves no blob, and the message says FILE:LINE and what was
 * expected (bbx-policy(5)).  It allocates and reads files freely; nothing here is ever
 * linked into the shim.
 */
#include "policy.h"
#include "ini.h"
#include "compile.h"
#include "journal/record.h"
#include "journal/state.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* Messages and values live in bounded buffers; a message cut short is still a refusal
 * (the policy is rejected either way), so truncation is accepted here, not checked. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

/* The built-in default policy: the top-level policy.ini, embedded at build time
 * (policy/local.mk generates default-ini.c from it). */
extern const char bbx_pol_default_ini[];

#define DENY_READ_CAP 100000 /* inodes listed per deny_read root */

struct rule {
	struct bbx_pol_rule r;
	char *value, *loc;
};

struct comp {
	const char *src;  /* the file as given ("built-in" for the default) */
	const char *base; /* its basename, for loc strings */
	char ws[PATH_MAX], home[PATH_MAX], tmp[PATH_MAX], uid[32];
	struct rule *rules;
	size_t n_rules, cap_rules;
	struct bbx_pol_inode *inodes;
	size_t n_inodes, cap_inodes;
	bool reads_inexact; /* see bbx_pol_hdr.reads_exact */
	const char *section; /* current section (ours, static) */
	uint32_t mode, explain, static_action, results_all, fingerprint;
	int mode_line, explain_line, static_line, results_line, fingerprint_line;
	char *static_loc;
	/* [journal] */
	uint64_t max_preserve; /* UINT64_MAX: unlimited */
	uint32_t over_max, sync;
	int max_preserve_line, over_max_line, sync_line;
	char *max_preserve_loc, *over_max_loc;
	bool oom;
};

static const char *const sections[] = {"general", "paths", "network", "exec", "journal",
				       "redact"};

static char *xstrdup(struct comp *c, const char *s)
{
	char *d = strdup(s);
	if (!d)
		c->oom = true;
	return d;
}

static char *xasprintf(struct comp *c, const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0) {
		c->oom = true;
		return NULL;
	}
	return s;
}

static struct rule *add_rule(struct comp *c)
{
	if (c->n_rules == c->cap_rules) {
		size_t nc = c->cap_rules ? 2 * c->cap_rules : 32;
		struct rule *n = realloc(c->rules, nc * sizeof *n);
		if (!n) {
			c->oom = true;
			return NULL;
		}
		c->rules = n;
		c->cap_rules = nc;
	}
	struct rule *r = &c->rules[c->n_rules++];
	memset(r, 0, sizeof *r);
	return r;
}

/* ---- variables and paths ------------------------------------------------------------ */

/* Expands ${WORKSPACE} ${HOME} ${TMPDIR} ${UID} in v into out.  -1 with a message. */
static int expand(struct comp *c, const char *v, char *out, size_t cap, char *err,
		  size_t ecap)
{
	size_t n = 0;
	for (const char *p = v; *p;) {
		const char *add = NULL;
		size_t alen = 1;
		if (p[0] == '$' && p[1] == '{') {
			const char *end = strchr(p + 2, '}');
			if (!end) {
				snprintf(err, ecap, "unterminated \"${\" in \"%s\"", v);
				return -1;
			}
			size_t l = (size_t)(end - p - 2);
			if (l == 9 && !strncmp(p + 2, "WORKSPACE", 9))
				add = c->ws;
			else if (l == 4 && !strncmp(p + 2, "HOME", 4))
				add = c->home;
			else if (l == 6 && !strncmp(p + 2, "TMPDIR", 6))
				add = c->tmp;
			else if (l == 3 && !strncmp(p + 2, "UID", 3))
				add = c->uid;
			else {
				snprintf(err, ecap,
					 "unknown variable ${%.*s} (known: WORKSPACE, HOME, TMPDIR, "
					 "UID)",
					 (int)l, p + 2);
				return -1;
			}
			alen = strlen(add);
			p = end + 1;
		} else {
			add = p++;
		}
		if (n + alen >= cap) {
			snprintf(err, ecap, "value too long after expanding variables");
			return -1;
		}
		memcpy(out + n, add, alen);
		n += alen;
	}
	out[n] = 0;
	return 0;
}

/* Lexical normalisation of an absolute path in place: no "//", "." or ".." component,
 * no trailing '/' (except "/" itself).  ".." at the root stays at the root. */
void bbx_pol_normalise(char *path)
{
	char *out = path;
	const char *p = path;
	while (*p) {
		while (*p == '/')
			p++;
		const char *e = p;
		while (*e && *e != '/')
			e++;
		size_t l = (size_t)(e - p);
		if (l == 0)
			break;
		if (l == 1 && p[0] == '.') {
			/* skip */
		} else if (l == 2 && p[0] == '.' && p[1] == '.') {
			while (out > path && *--out != '/')
				;
		} else {
			*out++ = '/';
			memmove(out, p, l);
			out += l;
		}
		p = e;
	}
	if (out == path)
		*out++ = '/';
	*out = 0;
}

/* Directories found not to be symlinks (readlink: EINVAL) while one compile runs:
 * the default policy's ~40 roots share their first components (/root, /work/...), and
 * realpath read the link of every component of every root again - 177 readlinks, 0.3
 * of the 0.5 ms a compile took here, in every bbx-run (issue 5, transaction).  Only
 * during bbx_pol_compile (resolve_memo_on), freed at its end: nothing is trusted from
 * one compile to the next. */
#define RESOLVE_MEMO 128
static char *resolve_memo[RESOLVE_MEMO];
static size_t resolve_memo_n;
static bool resolve_memo_on;

static bool memo_has(const char *p)
{
	for (size_t i = 0; i < resolve_memo_n; i++)
		if (!strcmp(resolve_memo[i], p))
			return true;
	return false;
}

static void memo_add(const char *p)
{
	if (resolve_memo_n < RESOLVE_MEMO && (resolve_memo[resolve_memo_n] = strdup(p)))
		resolve_memo_n++;
}

static void memo_end(void)
{
	for (size_t i = 0; i < resolve_memo_n; i++)
		free(resolve_memo[i]);
	resolve_memo_n = 0;
	resolve_memo_on = false;
}

/* An absolute, normalised path: the deepest existing ancestor resolved (cur, "" for
 * the root) component by component, each known directory taken from the memo; at a
 * symlink realpath resolves what the walk has reached (chains, relative targets),
 * then the walk goes on from its answer.  The rest, from the first component that
 * does not exist (or cannot be resolved), is kept as written: what realpath of the
 * deepest existing ancestor gave, without its readlink of every component of every
 * ancestor tried. */
static void resolve_walk(char *path, size_t cap)
{
	char cur[PATH_MAX], cand[PATH_MAX], link[8];
	size_t cl = 0;
	const char *p = path;
	cur[0] = 0;
	while (*p == '/') {
		const char *c = p + 1, *e = strchr(c, '/');
		size_t n = e ? (size_t)(e - c) : strlen(c);
		if (!n)
			break; /* a trailing '/' (normalised paths have no "//") */
		if (cl + 1 + n >= sizeof cand)
			break;
		memcpy(cand, cur, cl);
		cand[cl] = '/';
		memcpy(cand + cl + 1, c, n);
		cand[cl + 1 + n] = 0;
		if (!resolve_memo_on || !memo_has(cand)) {
			ssize_t r = readlink(cand, link, sizeof link);
			if (r >= 0) {
				char real[PATH_MAX];
				if (!realpath(cand, real))
					break; /* dangling, a loop: its parent is as deep as exists */
				cl = strcmp(real, "/") ? strlen(real) : 0;
				memcpy(cur, real, cl);
				cur[cl] = 0;
				p = c + n;
				continue;
			}
			if (errno != EINVAL)
				break; /* ENOENT, ENOTDIR, EACCES: the rest is kept as written */
			if (resolve_memo_on)
				memo_add(cand);
		}
		cl += 1 + n;
		memcpy(cur, cand, cl + 1);
		p = c + n;
	}
	if (cl + strlen(p) >= cap)
		return;
	char tmp[PATH_MAX * 2];
	snprintf(tmp, sizeof tmp, "%s%s", cur, cl || *p ? p : "/");
	if (strlen(tmp) < cap)
		strcpy(path, tmp);
}

/* Normalises path and resolves its deepest existing ancestor, so the rule names what
 * the kernel will resolve (a /tmp that is a symlink, a /var/run -> /run).  The part
 * that does not exist yet is kept as written. */
void bbx_pol_resolve_path(char *path, size_t cap)
{
	bbx_pol_normalise(path);
	/* /proc/self names whichever process looks: resolving it here would name the
	 * compiler's pid.  Kept as written; the matcher compares a process's own
	 * /proc/PID as /proc/self. */
	static const char *const selfs[] = {"/proc/self", "/proc/thread-self"};
	for (size_t i = 0; i < 2; i++) {
		size_t l = strlen(selfs[i]);
		if (!strncmp(path, selfs[i], l) && (path[l] == 0 || path[l] == '/'))
			return;
	}
	if (path[0] == '/') {
		resolve_walk(path, cap);
		return;
	}
	char head[PATH_MAX], real[PATH_MAX];
	snprintf(head, sizeof head, "%s", path);
	size_t hl = strlen(head);
	for (;;) {
		if (realpath(head, real)) {
			const char *rest = path + hl;
			if (!strcmp(real, "/") && *rest)
				real[0] = 0;
			char tmp[PATH_MAX * 2];
			snprintf(tmp, sizeof tmp, "%s%s", real, rest);
			if (strlen(tmp) < cap)
				strcpy(path, tmp);
			return;
		}
		char *slash = strrchr(head, '/');
		if (!slash || slash == head)
			return; /* nothing resolvable: keep the normalised form */
		*slash = 0;
		hl = (size_t)(slash - head);
	}
}

/* ---- deny_read inode listing --------------------------------------------------------- */

static struct comp *walk_c; /* nftw has no user pointer; the compiler is single-threaded */
static uint32_t walk_rule;
static size_t walk_count;
static bool walk_partial;
static bool walk_linked; /* a listed non-directory has another hard link */

static int add_inode(struct comp *c, const struct stat *sb, uint32_t rule)
{
	if (c->n_inodes == c->cap_inodes) {
		size_t nc = c->cap_inodes ? 2 * c->cap_inodes : 256;
		struct bbx_pol_inode *n = realloc(c->inodes, nc * sizeof *n);
		if (!n) {
			c->oom = true;
			return -1;
		}
		c->inodes = n;
		c->cap_inodes = nc;
	}
	c->inodes[c->n_inodes++] = (struct bbx_pol_inode){
		.dev = (uint64_t)sb->st_dev, .ino = (uint64_t)sb->st_ino, .rule = rule};
	return 0;
}

/* Is the filesystem of dev mounted exactly once (no bind mount shows the same files at
 * a second place)?  From /proc/self/mountinfo; false when it cannot tell. */
static bool mounted_once(dev_t dev)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return false;
	char line[4096];
	int n = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned maj, min;
		if (sscanf(line, "%*d %*d %u:%u", &maj, &min) == 2 && maj == major(dev) &&
		    min == minor(dev))
			n++;
	}
	fclose(f);
	return n == 1;
}

static int walk_one(const char *fpath, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)fpath;
	(void)ftw;
	if (type == FTW_NS)
		return 0; /* cannot stat: nothing to list */
	if (walk_count >= DENY_READ_CAP) {
		walk_partial = true;
		return 1;
	}
	walk_count++;
	if (!S_ISDIR(sb->st_mode) && sb->st_nlink > 1)
		walk_linked = true;
	return add_inode(walk_c, sb, walk_rule) ? -1 : 0;
}

static void list_inodes(struct comp *c, struct rule *r, uint32_t idx)
{
	walk_c = c;
	walk_rule = idx;
	walk_count = 0;
	walk_partial = false;
	walk_linked = false;
	nftw(r->value, walk_one, 32, FTW_PHYS);
	if (walk_partial)
		r->r.flags |= BBX_RF_PARTIAL;
	struct stat sb;
	if (walk_partial || walk_linked || (stat(r->value, &sb) == 0 && !mounted_once(sb.st_dev)))
		c->reads_inexact = true;
}

static int inode_cmp(const void *a, const void *b)
{
	const struct bbx_pol_inode *x = a, *y = b;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return x->rule < y->rule ? -1 : x->rule > y->rule;
}

/* ---- values ------------------------------------------------------------------------- */

static int parse_onoff(const char *v, uint32_t *out)
{
	if (!strcmp(v, "on"))
		*out = 1;
	else if (!strcmp(v, "off"))
		*out = 0;
	else
		return -1;
	return 0;
}

/* A byte count: digits, then optionally one of K, M, G, T (binary multiples, either
 * case), or "unlimited" (UINT64_MAX).  -1 if malformed, -2 if 16 EiB or more. */
static int parse_size(const char *s, uint64_t *out)
{
	if (!strcmp(s, "unlimited")) {
		*out = UINT64_MAX;
		return 0;
	}
	uint64_t n = 0;
	const char *p = s;
	for (; isdigit((unsigned char)*p); p++) {
		if (n > (UINT64_MAX - 9) / 10)
			return isdigit((unsigned char)p[1]) || !p[1] || strchr("KMGTkmgt", p[1]) ? -2 : -1;
		n = n * 10 + (uint64_t)(*p - '0');
	}
	if (p == s)
		return -1;
	unsigned shift = 0;
	if (*p) {
		const char *u = strchr("KMGT", toupper((unsigned char)*p));
		if (!u || p[1])
			return -1;
		shift = 10 * (unsigned)(u - "KMGT" + 1);
	}
	if (shift && n > (UINT64_MAX >> shift))
		return -2;
	n <<= shift;
	if (n == UINT64_MAX)
		return -2; /* reserved for "unlimited" */
	*out = n;
	return 0;
}

/* The shortest form parse_size() reads back: 256M, 1536K, 1000. */
static void print_size(uint64_t n, char *out, size_t cap)
{
	static const char suf[] = "KMGT";
	int u = -1;
	while (u < 3 && n && !(n & 1023))
		n >>= 10, u++;
	if (u < 0)
		snprintf(out, cap, "%llu", (unsigned long long)n);
	else
		snprintf(out, cap, "%llu%c", (unsigned long long)n, suf[u]);
}

static int parse_port(const char *s, uint16_t *port)
{
	if (!*s || strlen(s) > 5)
		return -1;
	unsigned long n = 0;
	for (const char *p = s; *p; p++) {
		if (!isdigit((unsigned char)*p))
			return -1;
		n = n * 10 + (unsigned long)(*p - '0');
	}
	if (n < 1 || n > 65535)
		return -1;
	*port = (uint16_t)n;
	return 0;
}

static int parse_prefix(const char *s, unsigned max, uint8_t *out)
{
	if (!*s || strlen(s) > 3)
		return -1;
	unsigned n = 0;
	for (const char *p = s; *p; p++) {
		if (!isdigit((unsigned char)*p))
			return -1;
		n = n * 10 + (unsigned)(*p - '0');
	}
	if (n > max)
		return -1;
	*out = (uint8_t)n;
	return 0;
}

static void mask(uint8_t *addr, unsigned bytes, unsigned prefix)
{
	for (unsigned i = 0; i < bytes; i++) {
		unsigned bits = prefix > 8 * i ? prefix - 8 * i : 0;
		if (bits < 8)
			addr[i] &= (uint8_t)(0xff00u >> bits);
	}
}

static bool is_v4ish(const char *s)
{
	for (; *s; s++)
		if (!isdigit((unsigned char)*s) && *s != '.')
			return false;
	return true;
}

static bool host_ok(const char *s)
{
	if (!*s || strlen(s) > 253)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr(".-_*?", *s))
			return false;
	return true;
}

/* One [network] value into r (kind, addr, prefix, port) and *val (the string part).
 * Returns 0, or -1 with the complaint in err. */
static int parse_net(const char *v, struct bbx_pol_rule *r, char *val, size_t vcap, char *err,
		     size_t ecap)
{
	char buf[1024];
	val[0] = 0;
	if (!strncmp(v, "unix:", 5)) {
		const char *p = v + 5;
		if (p[0] != '/' && p[0] != '@') {
			snprintf(err, ecap,
				 "bad unix socket \"%s\" (expected unix:/absolute/path or "
				 "unix:@abstract)",
				 v);
			return -1;
		}
		if (p[0] == '@' && !p[1]) {
			snprintf(err, ecap, "bad unix socket \"%s\" (empty abstract name)", v);
			return -1;
		}
		r->kind = BBX_NK_UNIX;
		snprintf(val, vcap, "%s", p);
		return 0;
	}
	if (!strcmp(v, "*") || !strncmp(v, "*:", 2)) {
		r->kind = BBX_NK_ANY;
		if (v[1] && parse_port(v + 2, &r->port))
			goto badport;
		return 0;
	}
	const char *portstr = NULL;
	if (v[0] == '[') {
		const char *end = strchr(v, ']');
		if (!end) {
			snprintf(err, ecap, "bad address \"%s\" (expected [IPv6]:PORT)", v);
			return -1;
		}
		if (end[1] && end[1] != ':') {
			snprintf(err, ecap, "bad address \"%s\" (expected [IPv6]:PORT)", v);
			return -1;
		}
		if (end[1])
			portstr = end + 2;
		snprintf(buf, sizeof buf, "%.*s", (int)(end - v - 1), v + 1);
		if (!strchr(buf, ':')) {
			snprintf(err, ecap, "bad address \"%s\" (brackets are for IPv6 addresses)",
				 v);
			return -1;
		}
	} else {
		snprintf(buf, sizeof buf, "%s", v);
		const char *c1 = strchr(buf, ':');
		if (c1 && !strchr(c1 + 1, ':')) {
			/* HOST:PORT or a.b.c.d[/n]:PORT */
			buf[c1 - buf] = 0;
			portstr = v + (c1 - buf) + 1;
		}
		/* two or more ':' : a bare IPv6 address, no port */
	}
	if (portstr && parse_port(portstr, &r->port))
		goto badport;
	char *slash = strchr(buf, '/');
	if (strchr(buf, ':')) {
		if (slash)
			*slash = 0;
		if (inet_pton(AF_INET6, buf, r->addr) != 1) {
			snprintf(err, ecap, "bad IPv6 address \"%s\"", v);
			return -1;
		}
		r->kind = BBX_NK_V6;
		r->prefix = 128;
		if (slash && parse_prefix(slash + 1, 128, &r->prefix)) {
			snprintf(err, ecap, "bad CIDR \"%s\" (prefix must be 0..128)", v);
			return -1;
		}
		mask(r->addr, 16, r->prefix);
		return 0;
	}
	if (slash || is_v4ish(buf)) {
		if (slash)
			*slash = 0;
		struct in_addr a;
		if (inet_pton(AF_INET, buf, &a) != 1) {
			snprintf(err, ecap, "bad IPv4 address \"%s\"", v);
			return -1;
		}
		memcpy(r->addr, &a, 4);
		r->kind = BBX_NK_V4;
		r->prefix = 32;
		if (slash && parse_prefix(slash + 1, 32, &r->prefix)) {
			snprintf(err, ecap, "bad CIDR \"%s\" (prefix must be 0..32)", v);
			return -1;
		}
		mask(r->addr, 4, r->prefix);
		return 0;
	}
	if (!host_ok(buf)) {
		snprintf(err, ecap,
			 "bad host \"%s\" (expected a name of letters, digits, '.', '-', '_', "
			 "with '*' or '?' globs)",
			 v);
		return -1;
	}
	r->kind = BBX_NK_HOST;
	for (char *p = buf; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	snprintf(val, vcap, "%s", buf);
	return 0;
badport:
	snprintf(err, ecap, "bad port in \"%s\" (must be 1..65535)", v);
	return -1;
}

static int parse_class(const char *s, uint16_t *k)
{
	static const char *const names[] = {"safe", "risky", "dangerous", "destructive"};
	for (unsigned i = 0; i < 4; i++)
		if (!strcmp(s, names[i])) {
			*k = (uint16_t)(BBX_CLASS_SAFE + i);
			return 0;
		}
	return -1;
}

static const char *class_name(unsigned k)
{
	static const char *const names[] = {"none", "safe", "risky", "dangerous", "destructive"};
	return k < 5 ? names[k] : "?";
}

static bool is_prefix_glob(const char *g, size_t len)
{
	if (len == 0 || g[len - 1] != '*')
		return false;
	for (size_t i = 0; i + 1 < len; i++)
		if (strchr("*?[\\", g[i]))
			return false;
	return true;
}

/* ---- the INI callbacks ----------------------------------------------------------------- */

static int on_section(void *user, const char *name, int line, char *err, size_t cap)
{
	struct comp *c = user;
	(void)line;
	for (size_t i = 0; i < sizeof sections / sizeof *sections; i++)
		if (!strcmp(name, sections[i])) {
			c->section = sections[i];
			return 0;
		}
	snprintf(err, cap,
		 "unknown section [%s] (expected general, paths, network, exec, journal or "
		 "redact)",
		 name);
	return -1;
}

#define FAIL(...)                                                                           \
	do {                                                                                \
		int k_ = snprintf(err, cap, "[%s] %s: ", section, key);                       \
		snprintf(err + (k_ > 0 && (size_t)k_ < cap ? k_ : 0),                          \
			 cap - (k_ > 0 && (size_t)k_ < cap ? (size_t)k_ : 0), __VA_ARGS__);  \
		return -1;                                                                  \
	} while (0)

/* A single-valued key seen twice is an error: which one wins would be a guess. */
static int once(int *seen, int line, const char *section, const char *key, char *err,
		size_t cap)
{
	if (*seen)
		FAIL("set twice (first at line %d)", *seen);
	*seen = line;
	return 0;
}

static struct rule *new_rule(struct comp *c, int section_id, const char *section,
			     const char *key, const char *value, int line)
{
	struct rule *r = add_rule(c);
	if (!r)
		return NULL;
	r->r.section = (uint16_t)section_id;
	r->value = xstrdup(c, value);
	r->loc = xasprintf(c, "%s:%d [%s] %s", c->base, line, section, key);
	return r;
}

static int on_pair(void *user, const char *section, const char *key, const char *raw,
		   int line, char *err, size_t cap)
{
	struct comp *c = user;
	if (!*section) {
		snprintf(err, cap, "\"%s\" before any [section]", key);
		return -1;
	}
	if (!*raw)
		FAIL("empty value");
	char v[PATH_MAX * 2], why[768];
	if (expand(c, raw, v, sizeof v, why, sizeof why))
		FAIL("%s", why);
	const char *s = c->section;

	if (!strcmp(s, "general")) {
		if (!strcmp(key, "mode")) {
			if (once(&c->mode_line, line, section, key, err, cap))
				return -1;
			if (!strcmp(v, "enforce"))
				c->mode = BBX_MODE_ENFORCE;
			else if (!strcmp(v, "audit"))
				c->mode = BBX_MODE_AUDIT;
			else if (!strcmp(v, "safe"))
				c->mode = BBX_MODE_SAFE;
			else
				FAIL("bad value \"%s\" (expected enforce, audit or safe)", v);
			return 0;
		}
		if (!strcmp(key, "explain")) {
			if (once(&c->explain_line, line, section, key, err, cap))
				return -1;
			if (parse_onoff(v, &c->explain))
				FAIL("bad value \"%s\" (expected on or off)", v);
			return 0;
		}
		FAIL("unknown key (expected mode or explain)");
	}

	if (!strcmp(s, "paths")) {
		int id = !strcmp(key, "write")	   ? BBX_PS_WRITE
			 : !strcmp(key, "protect")   ? BBX_PS_PROTECT
			 : !strcmp(key, "deny_read") ? BBX_PS_DENY_READ
						     : 0;
		if (!id)
			FAIL("unknown key (expected write, protect or deny_read)");
		if (v[0] != '/')
			FAIL("relative path \"%s\" (must be absolute after expanding variables)",
			     v);
		bbx_pol_resolve_path(v, sizeof v);
		struct rule *nr = new_rule(c, id, section, key, v, line);
		struct stat psb;
		if (nr && id == BBX_PS_PROTECT && lstat(v, &psb) < 0 && errno == ENOENT)
			nr->r.flags |= BBX_RF_ABSENT;
		return nr ? 0 : -1;
	}

	if (!strcmp(s, "network")) {
		int id = !strcmp(key, "allow") ? BBX_PS_NET_ALLOW
			 : !strcmp(key, "deny") ? BBX_PS_NET_DENY
						: 0;
		if (!id)
			FAIL("unknown key (expected allow or deny)");
		struct bbx_pol_rule nr = {0};
		char val[1024];
		if (parse_net(v, &nr, val, sizeof val, why, sizeof why))
			FAIL("%s", why);
		nr.action = id == BBX_PS_NET_ALLOW ? BBX_ACT_ALLOW : BBX_ACT_DENY;
		if (nr.kind == BBX_NK_UNIX && val[0] == '/' && !strpbrk(val, "*?[")) {
			/* The literal path and its resolved form (/var/run/docker.sock and
			 * /run/docker.sock): a connect names either. */
			char res[PATH_MAX];
			snprintf(res, sizeof res, "%s", val);
			bbx_pol_resolve_path(res, sizeof res);
			if (strcmp(res, val)) {
				struct rule *r2 = new_rule(c, id, section, key, res, line);
				if (!r2)
					return -1;
				nr.section = (uint16_t)id;
				r2->r = nr;
			}
		}
		struct rule *r = new_rule(c, id, section, key, val, line);
		if (!r)
			return -1;
		nr.section = (uint16_t)id;
		r->r = nr;
		return 0;
	}

	if (!strcmp(s, "exec")) {
		if (!strcmp(key, "static")) {
			if (once(&c->static_line, line, section, key, err, cap))
				return -1;
			if (!strcmp(v, "allow"))
				c->static_action = BBX_ACT_ALLOW;
			else if (!strcmp(v, "warn"))
				c->static_action = BBX_ACT_WARN;
			else if (!strcmp(v, "deny"))
				c->static_action = BBX_ACT_DENY;
			else
				FAIL("bad value \"%s\" (expected allow, warn or deny)", v);
			free(c->static_loc);
			c->static_loc = xasprintf(c, "%s:%d [exec] static", c->base, line);
			return 0;
		}
		/* ACTION or ACTION.CLASS */
		char act[32];
		const char *dot = strchr(key, '.');
		size_t al = dot ? (size_t)(dot - key) : strlen(key);
		snprintf(act, sizeof act, "%.*s", (int)(al < sizeof act ? al : sizeof act - 1), key);
		uint16_t action, klass;
		if (!strcmp(act, "deny"))
			action = BBX_ACT_DENY, klass = BBX_CLASS_DANGEROUS;
		else if (!strcmp(act, "log"))
			action = BBX_ACT_LOG, klass = BBX_CLASS_RISKY;
		else if (!strcmp(act, "allow"))
			action = BBX_ACT_ALLOW, klass = BBX_CLASS_SAFE;
		else if (!strcmp(act, "ask"))
			action = BBX_ACT_ASK, klass = BBX_CLASS_DANGEROUS;
		else
			FAIL("unknown key (expected deny, log, allow, ask, ACTION.CLASS or static)");
		if (dot && parse_class(dot + 1, &klass))
			FAIL("unknown class \"%s\" (expected safe, risky, dangerous or "
			     "destructive)",
			     dot + 1);
		struct rule *r = new_rule(c, BBX_PS_EXEC, section, key, v, line);
		if (!r)
			return -1;
		r->r.action = action;
		r->r.klass = klass;
		return 0;
	}

	if (!strcmp(s, "journal")) {
		if (!strcmp(key, "results")) {
			if (once(&c->results_line, line, section, key, err, cap))
				return -1;
			if (!strcmp(v, "all"))
				c->results_all = 1;
			else if (!strcmp(v, "failures"))
				c->results_all = 0;
			else
				FAIL("bad value \"%s\" (expected all or failures)", v);
			return 0;
		}
		if (!strcmp(key, "max_preserve")) {
			if (once(&c->max_preserve_line, line, section, key, err, cap))
				return -1;
			int ps = parse_size(v, &c->max_preserve);
			if (ps == -2)
				FAIL("size \"%s\" too large (must be below 16 EiB; or unlimited)", v);
			if (ps)
				FAIL("bad size \"%s\" (expected a number of bytes with an optional "
				     "K, M, G or T suffix, e.g. 256M, or unlimited)",
				     v);
			free(c->max_preserve_loc);
			c->max_preserve_loc = xasprintf(c, "%s:%d [journal] max_preserve", c->base,
							line);
			return 0;
		}
		if (!strcmp(key, "over_max_preserve")) {
			if (once(&c->over_max_line, line, section, key, err, cap))
				return -1;
			if (!strcmp(v, "refuse"))
				c->over_max = BBX_OVER_REFUSE;
			else if (!strcmp(v, "allow"))
				c->over_max = BBX_OVER_ALLOW;
			else
				FAIL("bad value \"%s\" (expected refuse or allow)", v);
			free(c->over_max_loc);
			c->over_max_loc = xasprintf(c, "%s:%d [journal] over_max_preserve", c->base,
						    line);
			return 0;
		}
		if (!strcmp(key, "sync")) {
			if (once(&c->sync_line, line, section, key, err, cap))
				return -1;
			if (!strcmp(v, "off"))
				c->sync = BBX_SYNC_OFF;
			else if (!strcmp(v, "group"))
				c->sync = BBX_SYNC_GROUP;
			else if (!strcmp(v, "always"))
				c->sync = BBX_SYNC_ALWAYS;
			else
				FAIL("bad value \"%s\" (expected off, group or always)", v);
			return 0;
		}
		FAIL("unknown key (expected results, sync, max_preserve or over_max_preserve)");
	}

	/* redact */
	if (!strcmp(key, "env") || !strcmp(key, "argv")) {
		struct rule *r = new_rule(c, !strcmp(key, "env") ? BBX_PS_REDACT_ENV
								 : BBX_PS_REDACT_ARGV,
					  section, key, v, line);
		return r ? 0 : -1;
	}
	if (!strcmp(key, "fingerprint")) {
		if (once(&c->fingerprint_line, line, section, key, err, cap))
			return -1;
		if (parse_onoff(v, &c->fingerprint))
			FAIL("bad value \"%s\" (expected on or off)", v);
		return 0;
	}
	FAIL("unknown key (expected env, argv or fingerprint)");
}

/* ---- built-in exec rules ------------------------------------------------------------- */

/* Command lines no coding agent should run, appended after the file's rules (so a file
 * rule that matches first, e.g. "allow = git push --force-with-lease STAR", overrides
 * one; STAR stands for an asterisk).  Globs are
 * over argv joined by single spaces, after the shell expanded it: "rm -rf /STAR" arrives
 * as "rm -rf /bin /boot ...", hence the per-directory rules.  A pipeline ("curl | sh")
 * is never one exec; it is only seen when passed whole to "sh -c". */
struct builtin {
	uint16_t action, klass;
	const char *glob;
};
#define B_DENY(k, g) {BBX_ACT_DENY, BBX_CLASS_##k, g}
#define B_LOG(k, g) {BBX_ACT_LOG, BBX_CLASS_##k, g}
static const char *const rm_roots[] = {"/",	"/bin", "/boot", "/dev", "/etc", "/home",
				       "/lib",	"/opt", "/root", "/sbin", "/srv", "/usr",
				       "/var", "${HOME}"};
static const struct builtin builtins[] = {
	B_DENY(DESTRUCTIVE, "mkfs*"),
	B_DENY(DESTRUCTIVE, "*/mkfs*"),
	B_DENY(DESTRUCTIVE, "mke2fs *"),
	B_DENY(DESTRUCTIVE, "wipefs *"),
	B_DENY(DESTRUCTIVE, "dd *of=/dev/sd*"),
	B_DENY(DESTRUCTIVE, "dd *of=/dev/nvme*"),
	B_DENY(DESTRUCTIVE, "dd *of=/dev/vd*"),
	B_DENY(DESTRUCTIVE, "dd *of=/dev/mmcblk*"),
	B_DENY(DESTRUCTIVE, "chmod -R * /"),
	B_DENY(DESTRUCTIVE, "chown -R * /"),
	B_DENY(DESTRUCTIVE, "chgrp -R * /"),
	B_DENY(DESTRUCTIVE, "*:(){ :|:& };:*"),
	B_DENY(DANGEROUS, "git push --force*"),
	B_DENY(DANGEROUS, "git push * --force*"),
	B_DENY(DANGEROUS, "git push -f"),
	B_DENY(DANGEROUS, "git push -f *"),
	B_DENY(DANGEROUS, "git push * -f"),
	B_DENY(DANGEROUS, "git push * -f *"),
	B_DENY(DANGEROUS, "git push * +*"),
	B_LOG(RISKY, "git push*"),
	B_LOG(RISKY, "git reset --hard*"),
	B_LOG(RISKY, "git clean *"),
	B_LOG(RISKY, "sh -c *curl *|*sh*"),
	B_LOG(RISKY, "bash -c *curl *|*sh*"),
	B_LOG(RISKY, "sh -c *wget *|*sh*"),
	B_LOG(RISKY, "bash -c *wget *|*sh*"),
};

static int add_builtin(struct comp *c, uint16_t action, uint16_t klass, const char *glob)
{
	char v[PATH_MAX + 64], why[256];
	if (expand(c, glob, v, sizeof v, why, sizeof why))
		return -1;
	for (size_t i = 0; i < c->n_rules; i++) /* rm of ${HOME} when HOME is /root */
		if ((c->rules[i].r.flags & BBX_RF_BUILTIN) && !strcmp(c->rules[i].value, v))
			return 0;
	struct rule *r = add_rule(c);
	if (!r)
		return -1;
	r->r.section = BBX_PS_EXEC;
	r->r.action = action;
	r->r.klass = klass;
	r->r.flags = BBX_RF_BUILTIN;
	r->value = xstrdup(c, v);
	r->loc = xstrdup(c, action == BBX_ACT_DENY ? "built-in [exec] deny" : "built-in [exec] log");
	return c->oom ? -1 : 0;
}

static int add_builtins(struct comp *c)
{
	/* rm of a system directory or of $HOME, as the last argument or among others, by
	 * name or by path (/bin/rm). */
	for (size_t i = 0; i < sizeof rm_roots / sizeof *rm_roots; i++) {
		static const char *const pre[] = {"rm * ", "rm * ", "*/rm * ", "*/rm * "};
		static const char *const post[] = {"", " *", "", " *"};
		for (size_t f = 0; f < 4; f++) {
			char g[128];
			snprintf(g, sizeof g, "%s%s%s", pre[f], rm_roots[i], post[f]);
			if (add_builtin(c, BBX_ACT_DENY, BBX_CLASS_DESTRUCTIVE, g))
				return -1;
		}
	}
	for (size_t i = 0; i < sizeof builtins / sizeof *builtins; i++)
		if (add_builtin(c, builtins[i].action, builtins[i].klass, builtins[i].glob))
			return -1;
	return 0;
}

/* ---- layout -------------------------------------------------------------------------- */

struct strtab {
	char *buf;
	size_t len, cap;
};

static int st_add(struct strtab *t, const char *s, uint32_t *off)
{
	size_t l = strlen(s) + 1;
	if (t->len + l > t->cap) {
		size_t nc = t->cap ? 2 * t->cap : 4096;
		while (nc < t->len + l)
			nc *= 2;
		char *n = realloc(t->buf, nc);
		if (!n)
			return -1;
		t->buf = n;
		t->cap = nc;
	}
	memcpy(t->buf + t->len, s, l);
	*off = (uint32_t)t->len;
	t->len += l;
	return 0;
}

static size_t align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

static int layout(struct comp *c, void **blob, size_t *len)
{
	struct strtab t = {0};
	uint32_t off;
	int rc = -1;
	struct bbx_pol_hdr h = {
		.magic = BBX_POL_MAGIC,
		.version = BBX_POL_VERSION,
		.mode = c->mode,
		.explain = c->explain,
		.static_action = c->static_action,
		.results_all = c->results_all,
		.redact_fingerprint = c->fingerprint,
		.n_rules = (uint32_t)c->n_rules,
		.n_inodes = (uint32_t)c->n_inodes,
		.over_max = c->over_max,
		.sync = c->sync,
		.reads_exact = !c->reads_inexact,
	};
	if (st_add(&t, "", &off) || st_add(&t, c->src, &h.src) ||
	    st_add(&t, c->ws, &h.workspace) ||
	    st_add(&t, c->static_loc ? c->static_loc : "built-in", &h.static_loc))
		goto out;
	/* max_preserve applies when its origin is not the empty string (offset 0). */
	if (c->max_preserve != UINT64_MAX) {
		h.max_preserve_lo = (uint32_t)c->max_preserve;
		h.max_preserve_hi = (uint32_t)(c->max_preserve >> 32);
		if (st_add(&t, c->max_preserve_loc, &h.max_preserve_loc))
			goto out;
	}
	if (c->over_max_loc && st_add(&t, c->over_max_loc, &h.over_max_loc))
		goto out;
	struct bbx_pol_rule *rules = calloc(c->n_rules ? c->n_rules : 1, sizeof *rules);
	if (!rules)
		goto out;
	for (size_t i = 0; i < c->n_rules; i++) {
		rules[i] = c->rules[i].r;
		rules[i].value_len = (uint32_t)strlen(c->rules[i].value);
		if (st_add(&t, c->rules[i].value, &rules[i].value) ||
		    st_add(&t, c->rules[i].loc, &rules[i].loc)) {
			free(rules);
			goto out;
		}
		switch (rules[i].section) {
		case BBX_PS_WRITE: h.n_write++; break;
		case BBX_PS_PROTECT: h.n_protect++; break;
		case BBX_PS_DENY_READ: h.n_deny_read++; break;
		case BBX_PS_NET_ALLOW:
		case BBX_PS_NET_DENY: h.n_net++; break;
		case BBX_PS_EXEC: h.n_exec++; break;
		}
	}
	h.rules_off = (uint32_t)align8(sizeof h);
	h.inodes_off = (uint32_t)align8(h.rules_off + c->n_rules * sizeof *rules);
	h.strings_off = (uint32_t)(h.inodes_off + c->n_inodes * sizeof(struct bbx_pol_inode));
	h.strings_len = (uint32_t)t.len;
	/* The matcher's index after the strings (policy.h, ix_off), built below from the
	 * finished rules and strings. */
	h.ix_off = (uint32_t)align8(h.strings_off + t.len);
	h.ix_len = (uint32_t)bbx_pol_ix_size();
	size_t total = (size_t)h.ix_off + h.ix_len;
	if (total > UINT32_MAX / 2) {
		free(rules);
		goto out;
	}
	h.size = (uint32_t)total;
	char *b = calloc(1, total);
	if (!b) {
		free(rules);
		goto out;
	}
	memcpy(b, &h, sizeof h);
	memcpy(b + h.rules_off, rules, c->n_rules * sizeof *rules);
	if (c->n_inodes)
		memcpy(b + h.inodes_off, c->inodes, c->n_inodes * sizeof *c->inodes);
	memcpy(b + h.strings_off, t.buf, t.len);
	bbx_pol_ix_build((const struct bbx_pol_hdr *)b, b + h.ix_off);
	free(rules);
	*blob = b;
	*len = total;
	rc = 0;
out:
	free(t.buf);
	return rc;
}

/* ---- entry points -------------------------------------------------------------------- */

static void set_vars(struct comp *c, const struct bbx_pol_vars *vars)
{
	const char *e;
	if (vars && vars->workspace)
		snprintf(c->ws, sizeof c->ws, "%s", vars->workspace);
	else if ((e = getenv("BBX_WORKSPACE")) && *e)
		snprintf(c->ws, sizeof c->ws, "%s", e);
	else if (!getcwd(c->ws, sizeof c->ws))
		snprintf(c->ws, sizeof c->ws, "/");
	if (c->ws[0] == '/')
		bbx_pol_resolve_path(c->ws, sizeof c->ws);
	if (vars && vars->home)
		snprintf(c->home, sizeof c->home, "%s", vars->home);
	else if ((e = getenv("HOME")) && *e)
		snprintf(c->home, sizeof c->home, "%s", e);
	else {
		struct passwd *pw = getpwuid(getuid());
		snprintf(c->home, sizeof c->home, "%s", pw && pw->pw_dir ? pw->pw_dir : "/");
	}
	if (vars && vars->tmpdir)
		snprintf(c->tmp, sizeof c->tmp, "%s", vars->tmpdir);
	else if ((e = getenv("TMPDIR")) && *e)
		snprintf(c->tmp, sizeof c->tmp, "%s", e);
	else
		snprintf(c->tmp, sizeof c->tmp, "/tmp");
	if (vars && vars->uid)
		snprintf(c->uid, sizeof c->uid, "%s", vars->uid);
	else
		snprintf(c->uid, sizeof c->uid, "%u", (unsigned)getuid());
}

static void comp_free(struct comp *c)
{
	for (size_t i = 0; i < c->n_rules; i++) {
		free(c->rules[i].value);
		free(c->rules[i].loc);
	}
	free(c->rules);
	free(c->inodes);
	free(c->static_loc);
	free(c->max_preserve_loc);
	free(c->over_max_loc);
}

int bbx_pol_compile(const char *file, const struct bbx_pol_vars *vars, void **blob,
		    size_t *len, char *err, size_t errcap)
{
	struct comp c = {.src = file ? file : "built-in",
			 .explain = 1,
			 .static_action = BBX_ACT_WARN,
			 .results_all = 1,
			 .max_preserve = UINT64_MAX};
	const char *slash = file ? strrchr(file, '/') : NULL;
	c.base = slash ? slash + 1 : c.src;
	resolve_memo_on = true;
	set_vars(&c, vars);
	*blob = NULL;
	*len = 0;
	int rc = -1;

	FILE *f = file ? fopen(file, "re")
		       : fmemopen((void *)bbx_pol_default_ini, strlen(bbx_pol_default_ini), "r");
	if (!f) {
		snprintf(err, errcap, "%s: %s", c.src, strerror(errno));
		memo_end();
		return -1;
	}
	struct bbx_ini_cb cb = {.section = on_section, .pair = on_pair, .user = &c};
	int pr = bbx_ini_parse(f, c.src, &cb, err, errcap);
	fclose(f);
	if (pr)
		goto out;
	if (c.oom || add_builtins(&c))
		goto oom;
	for (size_t i = 0; i < c.n_rules; i++)
		if (c.rules[i].r.section == BBX_PS_DENY_READ) {
			list_inodes(&c, &c.rules[i], (uint32_t)i);
			if (c.oom)
				goto oom;
		}
	if (c.n_inodes) {
		qsort(c.inodes, c.n_inodes, sizeof *c.inodes, inode_cmp);
		size_t k = 1; /* one entry per inode: the first rule that lists it */
		for (size_t i = 1; i < c.n_inodes; i++)
			if (c.inodes[i].dev != c.inodes[k - 1].dev ||
			    c.inodes[i].ino != c.inodes[k - 1].ino)
				c.inodes[k++] = c.inodes[i];
		c.n_inodes = k;
	}
	for (size_t i = 0; i < c.n_rules; i++)
		if (c.rules[i].r.section == BBX_PS_EXEC &&
		    is_prefix_glob(c.rules[i].value, strlen(c.rules[i].value)))
			c.rules[i].r.flags |= BBX_RF_PREFIX;
	if (layout(&c, blob, len))
		goto oom;
	rc = 0;
	goto out;
oom:
	snprintf(err, errcap, "%s: out of memory", c.src);
out:
	comp_free(&c);
	memo_end();
	return rc;
}

char *bbx_pol_lookup(const char *explicit_path)
{
	const char *e;
	char p[PATH_MAX];
	if (explicit_path && *explicit_path)
		return strdup(explicit_path);
	if ((e = getenv("BBX_POLICY")) && *e)
		return strdup(e);
	if ((e = getenv("XDG_CONFIG_HOME")) && *e == '/')
		snprintf(p, sizeof p, "%s/bbx/policy.ini", e);
	else if ((e = getenv("HOME")) && *e)
		snprintf(p, sizeof p, "%s/.config/bbx/policy.ini", e);
	else
		p[0] = 0;
	if (p[0] && access(p, F_OK) == 0)
		return strdup(p);
	if (access("/etc/bbx/policy.ini", F_OK) == 0)
		return strdup("/etc/bbx/policy.ini");
	return NULL;
}

/* Writes the blob next to path under a temporary name, then renames it over path: a
 * reader maps either nothing or the whole policy.  durable: fsync before the rename. */
static int write_file(const char *path, const void *blob, size_t len, int durable)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp)
		return -ENAMETOOLONG;
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = 0;
	const char *p = blob;
	size_t left = len;
	while (left) {
		ssize_t n = write(fd, p, left);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		p += n;
		left -= (size_t)n;
	}
	if (!rc && fchmod(fd, 0444) < 0)
		rc = -errno;
	if (!rc && durable && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path) < 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

int bbx_pol_write_file(const char *path, const void *blob, size_t len)
{
	return write_file(path, blob, len, 1);
}

/* A run's copy is as durable as the run's journal: with [journal] sync off (the
 * default) nothing of the run is flushed (not the journal, nor meta), and the fsync
 * of this one file cost 1.4 ms of every bbx-run on ext4 here (issue 5, the no-op
 * transaction).  With sync on, it is flushed before the run starts, and
 * bbx_run_set_sync flushes the directory that names it. */
int bbx_pol_install(const char *dir, const void *blob, size_t len)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof path, "%s/%s", dir, BBX_POL_FILE) >= (int)sizeof path)
		return -ENAMETOOLONG;
	const struct bbx_pol_hdr *h = blob;
	return write_file(path, blob, len, len < sizeof *h || h->sync != BBX_SYNC_OFF);
}

/* ---- printing ------------------------------------------------------------------------ */

void bbx_pol_rule_value(const struct bbx_pol_hdr *p, const struct bbx_pol_rule *r, char *out,
			size_t cap)
{
	if (r->section != BBX_PS_NET_ALLOW && r->section != BBX_PS_NET_DENY) {
		snprintf(out, cap, "%s", bbx_pol_str(p, r->value));
		return;
	}
	char a[INET6_ADDRSTRLEN], port[8] = "";
	if (r->port)
		snprintf(port, sizeof port, ":%u", r->port);
	switch (r->kind) {
	case BBX_NK_V4:
		inet_ntop(AF_INET, r->addr, a, sizeof a);
		snprintf(out, cap, "%s/%u%s", a, r->prefix, port);
		break;
	case BBX_NK_V6:
		inet_ntop(AF_INET6, r->addr, a, sizeof a);
		if (r->port)
			snprintf(out, cap, "[%s/%u]%s", a, r->prefix, port);
		else
			snprintf(out, cap, "%s/%u", a, r->prefix);
		break;
	case BBX_NK_UNIX:
		snprintf(out, cap, "unix:%s", bbx_pol_str(p, r->value));
		break;
	case BBX_NK_HOST:
		snprintf(out, cap, "%s%s", bbx_pol_str(p, r->value), port);
		break;
	default:
		snprintf(out, cap, "*%s", port);
	}
}

static void print_rule(FILE *out, const char *key, const char *value, const char *loc)
{
	int n = fprintf(out, "%s = %s", key, value);
	fprintf(out, "%*s ; %s\n", n < 40 ? 40 - n : 0, "", loc);
}

void bbx_pol_print(const struct bbx_pol_hdr *p, FILE *out)
{
	static const char *const modes[] = {"enforce", "audit", "safe"};
	static const char *const acts[] = {"allow", "log", "deny", "ask", "warn"};
	const struct bbx_pol_rule *r = bbx_pol_rules(p);
	fprintf(out, "; effective policy: %s\n", bbx_pol_str(p, p->src));
	fprintf(out, "; ${WORKSPACE} = %s\n", bbx_pol_str(p, p->workspace));
	uint32_t nb = 0;
	for (uint32_t i = 0; i < p->n_rules; i++)
		nb += (r[i].flags & BBX_RF_BUILTIN) != 0;
	fprintf(out, "; %u rules (%u of them built-in exec rules), %u deny_read inodes\n",
		p->n_rules, nb, p->n_inodes);
	fprintf(out, "\n[general]\nmode = %s\nexplain = %s\n",
		p->mode <= BBX_MODE_SAFE ? modes[p->mode] : "?", p->explain ? "on" : "off");

	fprintf(out, "\n[paths]\n");
	for (uint32_t i = 0; i < p->n_rules; i++) {
		const char *key = r[i].section == BBX_PS_WRITE	       ? "write"
				  : r[i].section == BBX_PS_PROTECT   ? "protect"
				  : r[i].section == BBX_PS_DENY_READ ? "deny_read"
								      : NULL;
		if (!key)
			continue;
		char loc[1024];
		if (r[i].section == BBX_PS_DENY_READ) {
			uint32_t n = 0;
			const struct bbx_pol_inode *in = bbx_pol_inodes(p);
			for (uint32_t k = 0; k < p->n_inodes; k++)
				n += in[k].rule == i;
			snprintf(loc, sizeof loc, "%s (%u inodes%s)", bbx_pol_str(p, r[i].loc), n,
				 r[i].flags & BBX_RF_PARTIAL ? ", partial: too many files" : "");
		} else {
			snprintf(loc, sizeof loc, "%s%s", bbx_pol_str(p, r[i].loc),
				 r[i].flags & BBX_RF_ABSENT ? " (absent: not enforced this run)" : "");
		}
		print_rule(out, key, bbx_pol_str(p, r[i].value), loc);
	}

	fprintf(out, "\n[network]\n");
	for (uint32_t i = 0; i < p->n_rules; i++) {
		if (r[i].section != BBX_PS_NET_ALLOW && r[i].section != BBX_PS_NET_DENY)
			continue;
		char v[PATH_MAX + 16];
		bbx_pol_rule_value(p, &r[i], v, sizeof v);
		print_rule(out, r[i].section == BBX_PS_NET_ALLOW ? "allow" : "deny", v,
			   bbx_pol_str(p, r[i].loc));
	}

	fprintf(out, "\n[exec]\n");
	for (uint32_t i = 0; i < p->n_rules; i++) {
		if (r[i].section != BBX_PS_EXEC)
			continue;
		char key[64];
		snprintf(key, sizeof key, "%s.%s", r[i].action < 5 ? acts[r[i].action] : "?",
			 class_name(r[i].klass));
		print_rule(out, key, bbx_pol_str(p, r[i].value), bbx_pol_str(p, r[i].loc));
	}
	print_rule(out, "static", p->static_action < 5 ? acts[p->static_action] : "?",
		   bbx_pol_str(p, p->static_loc));

	fprintf(out, "\n[journal]\nresults = %s\n", p->results_all ? "all" : "failures");
	static const char *const syncs[] = {"off", "group", "always"};
	fprintf(out, "sync = %s\n", p->sync <= BBX_SYNC_ALWAYS ? syncs[p->sync] : "?");
	if (bbx_pol_max_preserve(p) == UINT64_MAX) {
		fprintf(out, "max_preserve = unlimited\n");
	} else {
		char v[32];
		print_size(bbx_pol_max_preserve(p), v, sizeof v);
		print_rule(out, "max_preserve", v, bbx_pol_str(p, p->max_preserve_loc));
	}
	const char *ov = p->over_max == BBX_OVER_ALLOW ? "allow" : "refuse";
	if (p->over_max_loc)
		print_rule(out, "over_max_preserve", ov, bbx_pol_str(p, p->over_max_loc));
	else
		fprintf(out, "over_max_preserve = %s\n", ov);

	fprintf(out, "\n[redact]\n");
	for (uint32_t i = 0; i < p->n_rules; i++)
		if (r[i].section == BBX_PS_REDACT_ENV || r[i].section == BBX_PS_REDACT_ARGV)
			print_rule(out, r[i].section == BBX_PS_REDACT_ENV ? "env" : "argv",
				   bbx_pol_str(p, r[i].value), bbx_pol_str(p, r[i].loc));
	fprintf(out, "fingerprint = %s\n", p->redact_fingerprint ? "on" : "off");
}
