/* SPDX-License-Identifier: MIT
 *
 * redact.c - rewriting secrets out of argv, environment and text (redact.h).
 *
 * A scanner over one string: at each position it asks whether a known secret shape
 * starts there; if so the part to keep ("Bearer ", "https://user:") is copied, the
 * secret is replaced by the marker and the scan goes on after it.  No allocation, no
 * locks, no libc beyond pure string functions: safe in signal handlers and vfork
 * children.  Configured patterns live in static storage written once at start-up.
 */
#include "redact.h"
#include "hot.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

/* ---- patterns ----------------------------------------------------------------- */

/* Environment names whose values are secrets: the globs *TOKEN*, *SECRET*, *PASSWORD*,
 * *PASSWD*, *KEY*, *CREDENTIAL* and *AUTH* (any case), matched by default_secret_name()
 * in one pass; [redact] env adds more. */
static const char *const default_argv[] = {
	"--password=*", "--passwd=*", "--*-password=*", "--token=*", "--*-token=*",
	"--api-key=*",  "--apikey=*", "--secret=*",     "--*-secret=*",
	/* the same flags with the value in the next element */
	"--password", "--passwd", "--token", "--api-key", "--apikey", "--secret",
	"--client-secret", "--access-token", "--auth-token",
};
/* Tools whose "-pVALUE" is a password (not a port or a path). */
static const char *const p_tools[] = {
	"mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlshow", "mysqlcheck",
	"mariadb", "mariadb-dump", "mariadb-admin", "sshpass",
};

#define MAX_EXTRA 64
static char pool[4096];
BBX_HOT static size_t pool_used;
static const char *extra_env[MAX_EXTRA], *extra_argv[MAX_EXTRA];
BBX_HOT static size_t n_extra_env, n_extra_argv;
/* bbx_redact_use: the patterns got from the caller, not copied (NULL: the arrays) */
BBX_HOT static const char *(*extra_got)(int kind, size_t i);

static const char *extra(int kind, size_t i)
{
	return extra_got ? extra_got(kind, i) : kind ? extra_argv[i] : extra_env[i];
}
BBX_HOT static bool fingerprint;
/* The fewest '-' any argv glob starts with (a glob starting with anything else counts
 * 0): an argument with fewer leading dashes matches none of them, and argv_glob passes
 * it over without running a glob.  The built-in ones all start with "--", and most
 * arguments of a compiler's or a shell's command line do not (issue 5: ~40 glob runs
 * per argument, 89,000 instructions for an exec of 25 arguments, callgrind). */
BBX_HOT static unsigned argv_dashes = 2;
/* Which extra patterns can match anything the built-in ones do not (extra_learn): bit i
 * for env glob i, bit 31 + i for argv glob i.  The default policy's [redact] lines
 * repeat the built-ins ("*TOKEN*", "--password=*"): run at every name and flag, they
 * were ~7 k instructions of each gcc driver's records (callgrind).  EXTRA_KNOWN clear
 * until learnt, on first use (a process that redacts nothing never pays for it).  One
 * word of the hot data: that page has room for little more (tests/e2e/t-layout.sh). */
BBX_HOT static uint64_t extra_live; /* EXTRA_KNOWN | argv bits << 31 | env bits */
#define EXTRA_KNOWN (1ull << 63)
#define EXTRA_BITS 31 /* patterns past the first 31 of a kind are always run */

static unsigned lead_dashes(const char *s, unsigned most)
{
	unsigned n = 0;
	while (n < most && s[n] == '-')
		n++;
	return n;
}

static void argv_dashes_learn(void)
{
	unsigned d = 2; /* the built-in globs' */
	for (size_t i = 0; i < n_extra_argv && d; i++) {
		const char *g = extra(1, i);
		unsigned k = lead_dashes(g, d);
		if (k < d)
			d = k;
	}
	argv_dashes = d;
}

static const char *pool_copy(const char *s)
{
	size_t l = strlen(s) + 1;
	if (pool_used + l > sizeof pool)
		return NULL;
	char *p = memcpy(pool + pool_used, s, l);
	pool_used += l;
	return p;
}

int bbx_redact_configure(const char *const *env_globs, size_t nenv,
			 const char *const *argv_globs, size_t nargv, bool fp)
{
	int rc = 0;
	fingerprint = fp;
	if (extra_got)
		n_extra_env = n_extra_argv = 0; /* the patterns used so far were not ours */
	extra_got = NULL;
	for (size_t i = 0; i < nenv; i++) {
		const char *c = n_extra_env < MAX_EXTRA ? pool_copy(env_globs[i]) : NULL;
		if (!c)
			rc = -ENOSPC;
		else
			extra_env[n_extra_env++] = c;
	}
	for (size_t i = 0; i < nargv; i++) {
		const char *c = n_extra_argv < MAX_EXTRA ? pool_copy(argv_globs[i]) : NULL;
		if (!c)
			rc = -ENOSPC;
		else
			extra_argv[n_extra_argv++] = c;
	}
	argv_dashes_learn();
	__atomic_store_n(&extra_live, 0, __ATOMIC_RELEASE);
	return rc;
}

void bbx_redact_use(const char *(*got)(int kind, size_t i), size_t nenv, size_t nargv, bool fp)
{
	fingerprint = fp;
	n_extra_env = nenv;
	n_extra_argv = nargv;
	extra_got = got;
	argv_dashes_learn();
	__atomic_store_n(&extra_live, 0, __ATOMIC_RELEASE);
}

void bbx_redact_reset(void)
{
	extra_got = NULL;
	pool_used = n_extra_env = n_extra_argv = 0;
	fingerprint = false;
	argv_dashes = 2;
	__atomic_store_n(&extra_live, 0, __ATOMIC_RELEASE);
}

static char lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c + 32) : c; }

/* Iterative wildcard match with one backtrack point: linear enough, no recursion. */
bool bbx_redact_glob(const char *g, const char *s)
{
	const char *star = NULL, *resume = NULL;
	while (*s) {
		if (*g == '*') {
			star = ++g;
			resume = s;
		} else if (*g && (*g == '?' || lower(*g) == lower(*s))) {
			g++;
			s++;
		} else if (star) {
			g = star;
			s = ++resume;
		} else {
			return false;
		}
	}
	while (*g == '*')
		g++;
	return !*g;
}

/* A loop, not strpbrk: in a fork child's exec path each libc page touched is a fault. */
static bool has_wild(const char *g)
{
	for (; *g; g++)
		if (*g == '*' || *g == '?')
			return true;
	return false;
}

/* Does s contain the n bytes at lit, ignoring ASCII case?  What "*LIT*" means. */
static bool icontains(const char *s, const char *lit, size_t n)
{
	char f = lower(lit[0]);
	for (; *s; s++) {
		if (lower(*s) != f)
			continue;
		size_t i = 1;
		while (i < n && s[i] && lower(s[i]) == lower(lit[i]))
			i++;
		if (i == n)
			return true;
	}
	return false;
}

/* bbx_redact_glob, with the common name glob "*LITERAL*" (every default) answered by
 * one substring scan instead of the backtracking match: redaction runs on every
 * environment entry of every exec record (issue 5: spawn cost). */
static bool name_glob(const char *g, const char *s)
{
	size_t gl = strlen(g);
	if (gl >= 3 && g[0] == '*' && g[gl - 1] == '*' && !memchr(g + 1, '*', gl - 2) &&
	    !memchr(g + 1, '?', gl - 2))
		return icontains(s, g + 1, gl - 2);
	return bbx_redact_glob(g, s);
}

/* ---- output ------------------------------------------------------------------- */

struct out {
	char *p;
	size_t cap, len;
};

/* Appends n bytes, as many as fit (one byte is kept for the NUL); o->len counts all. */
static void put(struct out *o, const char *s, size_t n)
{
	size_t room = o->len + 1 < o->cap ? o->cap - 1 - o->len : 0, k = n < room ? n : room;
	if (k == 1)
		o->p[o->len] = *s;
	else if (k)
		memcpy(o->p + o->len, s, k);
	o->len += n;
}

static size_t finish(struct out *o)
{
	if (o->cap)
		o->p[o->len < o->cap ? o->len : o->cap - 1] = 0;
	return o->len;
}

static void mark(struct out *o, const char *secret, size_t n)
{
	if (!fingerprint) {
		put(o, BBX_REDACT_MARK, sizeof BBX_REDACT_MARK - 1);
		return;
	}
	static const char hex[] = "0123456789abcdef";
	uint64_t h = XXH64(secret, n, 0);
	char m[] = "***REDACTED:00000000***";
	for (int i = 0; i < 8; i++)
		m[12 + i] = hex[(h >> (60 - 4 * i)) & 15];
	put(o, m, sizeof m - 1);
}

/* ---- shapes ------------------------------------------------------------------- */

/* The scanner's character classes in one table (a bit each): the scan asks them of
 * every byte, and as calls and compare chains they were most of its cost (callgrind: a
 * 63-byte path took 4,500 instructions, 4 of every 10 in these tests).  In .rodata,
 * which hot.ld packs with the hot text: no page a fork child would fault in for it. */
enum { C_ALNUM = 1, C_SPACE = 2, C_WORD_END = 4, C_WORD_SEP = 8 };
static const unsigned char cls_tab[256] = {
	['a' ... 'z'] = C_ALNUM, ['A' ... 'Z'] = C_ALNUM, ['0' ... '9'] = C_ALNUM,
	[0] = C_WORD_END | C_WORD_SEP,
	[' '] = C_SPACE | C_WORD_END | C_WORD_SEP, ['\t'] = C_SPACE | C_WORD_END | C_WORD_SEP,
	['\n'] = C_SPACE | C_WORD_END | C_WORD_SEP, ['\r'] = C_SPACE | C_WORD_END | C_WORD_SEP,
	[';'] = C_WORD_END | C_WORD_SEP, ['&'] = C_WORD_END | C_WORD_SEP,
	['|'] = C_WORD_END | C_WORD_SEP, ['('] = C_WORD_END | C_WORD_SEP,
	['`'] = C_WORD_END | C_WORD_SEP,
	[')'] = C_WORD_END, ['<'] = C_WORD_END, ['>'] = C_WORD_END, ['\''] = C_WORD_END,
	['"'] = C_WORD_END,
};
static inline __attribute__((always_inline)) bool cls_is(char c, unsigned bits)
{
	return cls_tab[(unsigned char)c] & bits;
}

static inline __attribute__((always_inline)) bool is_alnum(char c) { return cls_is(c, C_ALNUM); }
static bool is_upnum(char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
static bool is_b64url(char c) { return is_alnum(c) || c == '-' || c == '_'; }
static bool is_b64(char c) { return is_alnum(c) || c == '+' || c == '/' || c == '='; }
static inline __attribute__((always_inline)) bool is_space(char c) { return cls_is(c, C_SPACE); }

/* always_inline: the class test is then inlined too (the scanner runs per byte). */
static inline __attribute__((always_inline)) size_t span(const char *s, bool (*cls)(char))
{
	size_t n = 0;
	while (s[n] && cls(s[n]))
		n++;
	return n;
}

static inline bool starts(const char *s, const char *prefix)
{
	for (; *prefix; s++, prefix++)
		if (*s != *prefix)
			return false;
	return true;
}

static bool istarts(const char *s, const char *prefix)
{
	for (; *prefix; s++, prefix++)
		if (lower(*s) != lower(*prefix))
			return false;
	return true;
}

static bool gh_class(char c) { return is_alnum(c) || c == '_'; }
static bool sk_class(char c) { return is_alnum(c) || c == '-' || c == '_'; }
static bool slack_class(char c) { return is_alnum(c) || c == '-'; }
static bool bearer_class(char c)
{
	return is_alnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '+' ||
	       c == '/' || c == '=';
}
static bool scheme_class(char c) { return is_alnum(c) || c == '+' || c == '-' || c == '.'; }

/* URL password: at s a scheme "://" userinfo with ':' before the last '@' of the
 * authority.  *keep: bytes through the ':', *len: through the password. */
static bool url_at(const char *s, size_t *keep, size_t *len)
{
	if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
		return false;
	size_t n = span(s, scheme_class);
	if (!starts(s + n, "://"))
		return false;
	const char *a = s + n + 3, *at = NULL;
	for (const char *p = a; *p && *p != '/' && *p != '?' && *p != '#' && !is_space(*p); p++)
		if (*p == '@')
			at = p;
	if (!at)
		return false;
	const char *colon = memchr(a, ':', (size_t)(at - a));
	if (!colon || colon + 1 == at)
		return false;
	*keep = (size_t)(colon + 1 - s);
	*len = (size_t)(at - s);
	return true;
}

/* A PEM private key block from s: to the end of its END line, or of the string. */
static bool pem_at(const char *s, size_t *len)
{
	if (!starts(s, "-----BEGIN "))
		return false;
	const char *eol = s + 11;
	while (*eol && *eol != '\n' && eol - s < 80)
		eol++;
	const char *pk = NULL;
	for (const char *p = s + 11; p + 16 <= eol; p++)
		if (starts(p, "PRIVATE KEY-----"))
			pk = p;
	if (!pk)
		return false;
	const char *end = strstr(pk, "-----END ");
	if (end) {
		const char *close = strstr(end + 9, "-----");
		end = close ? close + 5 : end + strlen(end);
	} else {
		end = s + strlen(s);
	}
	*len = (size_t)(end - s);
	return true;
}

/* Does a secret start at s[0]?  prev: the character before (0 at the start); url:
 * whether the text holds a "://" at all (else no URL can start anywhere in it).
 * *keep: leading bytes to copy as they are; *len: bytes consumed in all.  The token
 * prefixes are tested only under their first letter (a switch, where eight prefix
 * tests ran at every word: a third of a path's scan, callgrind); the order of the
 * tests that can match at one place is unchanged. */
static bool shape_at(const char *s, char prev, bool url, bool *aws_seen, size_t *keep,
		     size_t *len)
{
	*keep = 0;
	if (s[0] == '-' && pem_at(s, len))
		return true;
	if (is_alnum(prev))
		return false; /* token prefixes start a word: "task-..." is no "sk-" key */
	if (!*aws_seen && !is_alnum(s[0]))
		return false; /* every shape below starts with a letter or a digit */
	size_t n;
	if ((starts(s, "AKIA") || starts(s, "ASIA")) && (n = span(s + 4, is_upnum)) == 16) {
		*aws_seen = true;
		*len = 20;
		return true;
	}
	if (*aws_seen && prev != '/' && prev != '+' && span(s, is_b64) == 40) {
		*len = 40;
		return true;
	}
	switch (s[0]) {
	case 'g':
		if (s[1] == 'h' && s[2] && strchr("pousr", s[2]) && s[3] == '_' &&
		    (n = span(s + 4, is_alnum)) >= 20) {
			*len = 4 + n;
			return true;
		}
		if (starts(s, "github_pat_") && (n = span(s + 11, gh_class)) >= 20) {
			*len = 11 + n;
			return true;
		}
		break;
	case 's':
		if (starts(s, "sk-") && (n = span(s + 3, sk_class)) >= 20) {
			*len = 3 + n;
			return true;
		}
		break;
	case 'x':
		if (starts(s, "xox") && s[3] && strchr("baprs", s[3]) && s[4] == '-' &&
		    (n = span(s + 5, slack_class)) >= 10) {
			*len = 5 + n;
			return true;
		}
		break;
	case 'e':
		if (starts(s, "eyJ")) {
			size_t a = span(s, is_b64url);
			if (a >= 10 && s[a] == '.') {
				size_t b = span(s + a + 1, is_b64url);
				if (b >= 10 && s[a + 1 + b] == '.') {
					*len = a + 2 + b + span(s + a + 2 + b, is_b64url);
					return true;
				}
			}
		}
		break;
	case 'A':
		if (starts(s, "AIza") && (n = span(s + 4, sk_class)) >= 30) {
			*len = 4 + n;
			return true;
		}
		break;
	case 'b':
	case 'B':
		if (istarts(s, "bearer ")) {
			size_t sp = 6;
			while (s[sp] == ' ')
				sp++;
			if ((n = span(s + sp, bearer_class)) >= 8) {
				*keep = sp;
				*len = sp + n;
				return true;
			}
		}
		break;
	}
	if (url && !scheme_class(prev) && url_at(s, keep, len))
		return true;
	return false;
}

static bool secret_name(const char *name);
static const char *argv_glob(const char *s, bool want_flag);

/* Does a shell word end at c: NUL, blanks, ; & | ( ) < > ` ' " */
static inline __attribute__((always_inline)) bool word_end(char c) { return cls_is(c, C_WORD_END); }

/* Can a shell word start after prev: NUL, blanks, ; & | ( ` */
static inline __attribute__((always_inline)) bool word_sep(char c) { return cls_is(c, C_WORD_SEP); }
static bool ident(char c) { return is_alnum(c) || c == '_'; }

/* Shell text (sh -c "...", a NOTE): at the start of a word, NAME=VALUE with a secret
 * NAME, --flag=VALUE matching an argv glob, or the word after a secret flag ("--password
 * VALUE").  *next_secret carries the last case from one word to the next. */
static bool word_at(const char *s, bool *next_secret, size_t *keep, size_t *len)
{
	size_t wl = 0;
	if (*s == '"' || *s == '\'') { /* a quoted word: to its closing quote */
		const char *q = strchr(s + 1, *s);
		wl = q ? (size_t)(q + 1 - s) : strlen(s);
	} else {
		while (!word_end(s[wl]))
			wl++;
	}
	if (!wl)
		return false;
	if (*next_secret) {
		*next_secret = false;
		*keep = 0;
		*len = wl;
		return true;
	}
	char w[256]; /* a longer word is judged by its first 255 bytes */
	size_t cl = wl < sizeof w ? wl : sizeof w - 1;
	memcpy(w, s, cl);
	w[cl] = 0;
	char *eq = strchr(w, '=');
	if (!eq) {
		*next_secret = w[0] == '-' && argv_glob(w, true);
		return false;
	}
	size_t nl = (size_t)(eq - w), vl;
	const char *v = s + nl + 1;
	if (*v == '"' || *v == '\'') {
		const char *q = strchr(v + 1, *v);
		vl = q ? (size_t)(q + 1 - v) : strlen(v);
	} else {
		vl = 0;
		while (!word_end(v[vl]))
			vl++;
	}
	bool id = nl && !(w[0] >= '0' && w[0] <= '9');
	for (size_t i = 0; i < nl && id; i++)
		id = ident(w[i]);
	*eq = 0;
	bool secret = id ? secret_name(w) : false;
	*eq = '=';
	if (!secret && w[0] == '-')
		secret = argv_glob(w, false) != NULL;
	if (!secret || !vl)
		return false;
	*keep = nl + 1;
	*len = nl + 1 + vl;
	return true;
}

static void text(struct out *o, const char *s)
{
	bool aws = false, next_secret = false, url = false;
	char prev = 0;
	size_t i = 0, from = 0; /* s[from..i) is clean and not yet put */
	for (const char *p = s; *p && !url; p++) /* a loop: no libc page in a fork child */
		url = p[0] == ':' && p[1] == '/' && p[2] == '/';
	while (s[i]) {
		size_t keep, len;
		bool at_word = word_sep(prev) && !is_space(s[i]);
		if ((at_word && word_at(s + i, &next_secret, &keep, &len)) ||
		    shape_at(s + i, prev, url, &aws, &keep, &len)) {
			put(o, s + from, i + keep - from);
			mark(o, s + i + keep, len - keep);
			i += len;
			from = i;
			prev = s[i - 1];
			continue;
		}
		/* After a letter or digit, a following run of them can start neither a word nor
		 * a shape (shapes start a word; a PEM block starts with '-'): passed at once. */
		size_t r = i + 1;
		if (is_alnum(s[i]))
			while (is_alnum(s[r]))
				r++;
		prev = s[r - 1];
		i = r;
	}
	/* One put for each clean stretch, not one per run: the same bytes in the same
	 * order, so the same output, truncation included (put appends what fits). */
	put(o, s + from, i - from);
}

size_t bbx_redact_text(const char *s, char *out, size_t cap)
{
	struct out o = {out, cap, 0};
	text(&o, s);
	return finish(&o);
}

/* ---- environment -------------------------------------------------------------- */

static bool default_secret_name(const char *name);

/* An env glob that can only match names with a built-in word in them: each of its
 * pieces between wildcards must appear in a name it matches, so a piece in which
 * default_secret_name finds a word ("*_KEY", "*APIKEY*") makes the glob say no more
 * than it.  (A piece is judged by its first 255 bytes: a word found there is in the
 * whole piece, and one not found only leaves the glob to run.) */
static bool env_glob_redundant(const char *g)
{
	for (const char *c = g; *c;) {
		size_t n = strcspn(c, "*?");
		char piece[256];
		size_t k = n < sizeof piece ? n : sizeof piece - 1;
		memcpy(piece, c, k);
		piece[k] = 0;
		if (k && default_secret_name(piece))
			return true;
		c += n;
		if (*c)
			c++;
	}
	return false;
}

/* An argv glob equal to a built-in one (ignoring case, as the match does): the
 * built-in is tried first and answers the same. */
static bool argv_glob_redundant(const char *g)
{
	for (size_t i = 0; i < sizeof default_argv / sizeof *default_argv; i++) {
		const char *d = default_argv[i];
		size_t k = 0;
		while (d[k] && lower(g[k]) == lower(d[k]))
			k++;
		if (!d[k] && !g[k])
			return true;
	}
	return false;
}

/* extra_live, learnt (idempotent: threads racing here store the same word). */
static uint64_t extra_learn(void)
{
	uint64_t live = EXTRA_KNOWN;
	for (size_t i = 0; i < n_extra_env && i < EXTRA_BITS; i++)
		if (!env_glob_redundant(extra(0, i)))
			live |= 1ull << i;
	for (size_t i = 0; i < n_extra_argv && i < EXTRA_BITS; i++)
		if (!argv_glob_redundant(extra(1, i)))
			live |= 1ull << (EXTRA_BITS + i);
	__atomic_store_n(&extra_live, live, __ATOMIC_RELEASE);
	return live;
}

void bbx_redact_prepare(void)
{
	if (!(__atomic_load_n(&extra_live, __ATOMIC_ACQUIRE) & EXTRA_KNOWN))
		extra_learn();
}

/* Whether extra pattern i of kind (0 env, 1 argv) can matter. */
static inline bool extra_matters(int kind, size_t i)
{
	if (i >= EXTRA_BITS)
		return true;
	uint64_t live = __atomic_load_n(&extra_live, __ATOMIC_ACQUIRE);
	if (!(live & EXTRA_KNOWN))
		live = extra_learn();
	return live >> (kind ? EXTRA_BITS + i : i) & 1;
}

/* The default environment globs in one pass: does name contain one of their words,
 * ignoring case? */
static bool default_secret_name(const char *name)
{
	for (const char *s = name; *s; s++) {
		switch (lower(*s)) {
		case 't': if (istarts(s, "token")) return true; break;
		case 's': if (istarts(s, "secret")) return true; break;
		case 'p': if (istarts(s, "password") || istarts(s, "passwd")) return true; break;
		case 'k': if (istarts(s, "key")) return true; break;
		case 'c': if (istarts(s, "credential")) return true; break;
		case 'a': if (istarts(s, "auth")) return true; break;
		}
	}
	return false;
}

static bool secret_name(const char *name)
{
	if (default_secret_name(name))
		return true;
	for (size_t i = 0; i < n_extra_env; i++)
		if (extra_matters(0, i) && name_glob(extra(0, i), name))
			return true;
	return false;
}

/* NAME=VALUE into o; false (nothing written) when s is not of that form. */
static bool env_entry(struct out *o, const char *s, bool need_ident)
{
	const char *eq = strchr(s, '=');
	if (!eq || eq == s)
		return false;
	char name[256];
	size_t nl = (size_t)(eq - s);
	if (nl >= sizeof name)
		nl = sizeof name - 1; /* a longer name is matched on its first 255 bytes */
	for (size_t i = 0; i < nl; i++) {
		char c = s[i];
		if (need_ident && !(is_alnum(c) || c == '_'))
			return false;
		name[i] = c;
	}
	if (need_ident && s[0] >= '0' && s[0] <= '9')
		return false;
	name[nl] = 0;
	put(o, s, (size_t)(eq + 1 - s));
	if (secret_name(name))
		mark(o, eq + 1, strlen(eq + 1));
	else
		text(o, eq + 1);
	return true;
}

size_t bbx_redact_env(const char *nv, char *out, size_t cap)
{
	struct out o = {out, cap, 0};
	if (!env_entry(&o, nv, false))
		text(&o, nv);
	return finish(&o);
}

/* ---- argv --------------------------------------------------------------------- */

static const char *base(const char *p)
{
	const char *b = strrchr(p, '/');
	return b ? b + 1 : p;
}

/* The argv glob (with wildcard) that s matches, or NULL; with want_flag, the
 * wildcard-free glob equal to s (a flag whose value is the next element). */
static const char *argv_glob(const char *s, bool want_flag)
{
	if (lead_dashes(s, argv_dashes) < argv_dashes)
		return NULL;
	size_t nd = sizeof default_argv / sizeof *default_argv;
	for (size_t i = 0; i < nd + n_extra_argv; i++) {
		if (i >= nd && !extra_matters(1, i - nd))
			continue;
		const char *g = i < nd ? default_argv[i] : extra(1, i - nd);
		/* the glob first: it fails at once on most arguments, has_wild reads all of g */
		if (bbx_redact_glob(g, s) && has_wild(g) != want_flag)
			return g;
	}
	return NULL;
}

static bool p_tool(const char *tool)
{
	if (!tool)
		return false;
	const char *b = base(tool);
	for (size_t i = 0; i < sizeof p_tools / sizeof *p_tools; i++)
		if (strcmp(b, p_tools[i]) == 0)
			return true;
	return false;
}

/* One argv element into o, after an element that is (pf) or is not a flag whose value
 * is secret (argv_glob(prev, true)). */
static void arg_into(struct out *o, const char *tool, bool pf, const char *arg)
{
	const char *g;
	if (pf) {
		mark(o, arg, strlen(arg));
	} else if ((g = argv_glob(arg, false))) {
		/* Keep the flag: through the '=' when there is one, else the glob's literal
		 * prefix ("-p" of "-p*"). */
		const char *eq = strchr(arg, '=');
		size_t keep = eq ? (size_t)(eq + 1 - arg) : strcspn(g, "*?");
		put(o, arg, keep);
		mark(o, arg + keep, strlen(arg + keep));
	} else if (arg[0] == '-' && arg[1] == 'p' && arg[2] && p_tool(tool)) {
		put(o, arg, 2);
		mark(o, arg + 2, strlen(arg + 2));
	} else if (!env_entry(o, arg, true)) {
		text(o, arg);
	}
}

size_t bbx_redact_arg(const char *tool, const char *prev, const char *arg, char *out,
		      size_t cap)
{
	struct out o = {out, cap, 0};
	arg_into(&o, tool, prev && argv_glob(prev, true), arg);
	return finish(&o);
}

#define CLEAN_WAYS 4 /* slots a group (below) */
BBX_HOT static uint64_t *clean_slots;
BBX_HOT static size_t clean_n; /* groups of CLEAN_WAYS slots: a power of two, or 0 */
BBX_HOT static uint64_t clean_seed;

void bbx_redact_set_cache(uint64_t *slots, size_t n, uint64_t seed)
{
	clean_seed = seed;
	/* The groups a power of two (the state file's 256 or 1024 slots are), so that a
	 * hash picks one with a mask: a 64-bit division was ~40 cycles at each of the
	 * ~80 entries of an exec's and a new process's records. */
	size_t g = slots ? n / CLEAN_WAYS : 0;
	while (g & (g - 1))
		g &= g - 1;
	clean_n = g;
	clean_slots = slots;
}

/* The clean cache is four-way: an entry's hash may sit in any slot of its group of
 * four (one 32-byte run of the table), and a hash is only ever stored into an empty
 * slot.  Entries that never repeat (bash's "_=/path/of/the/command") or several
 * entries of one group would otherwise evict each other at every exec: a write to the
 * shared page each time, and the redaction redone.  The group comes from the hash
 * without its lowest bit, which is always set (0 marks an empty slot): taken from the
 * whole hash, as the two-way table did, half of its pairs were never used, and in an
 * environment of 45 entries three were scanned at every exec, ~12k instructions of the
 * ~55k an EXEC record cost (callgrind, issue 5).
 *
 * argv elements share the table, hashed with another seed (an element and an
 * environment entry of the same bytes are two keys), and are stored only in the last
 * CLEAN_ARGV_WAYS slots of a group: a build's one-off arguments (each compile's source,
 * object and temporary names) fill those and stay, never displacing the environment's. */
#define CLEAN_ARGV_WAYS 2
#define CLEAN_ARGV_SEED 0x6172677620636c6eull /* "argv cln" */

static inline uint64_t *clean_group(uint64_t h)
{
	return &clean_slots[((h >> 1) & (clean_n - 1)) * CLEAN_WAYS];
}

static inline bool clean_hit(const uint64_t *grp, int from, uint64_t h)
{
	for (int k = from; k < CLEAN_WAYS; k++)
		if (__atomic_load_n(&grp[k], __ATOMIC_RELAXED) == h)
			return true;
	return false;
}

/* h into the first empty slot of grp from slot from on, unless it is there already.
 * Each slot is looked at before any compare-and-swap: a locked cmpxchg writes even when
 * it fails, and a full group would then cost every fork child a write fault on the
 * shared page (issue 5). */
static void clean_store(uint64_t *grp, int from, uint64_t h)
{
	for (int k = from; k < CLEAN_WAYS; k++) {
		uint64_t cur = __atomic_load_n(&grp[k], __ATOMIC_RELAXED), empty = 0;
		if (cur == h) /* another process stored it meanwhile */
			return;
		if (cur == 0 && (__atomic_compare_exchange_n(&grp[k], &empty, h, false,
							    __ATOMIC_RELAXED, __ATOMIC_RELAXED) ||
				 empty == h))
			return;
	}
}

/* s whole into out (room bytes): what a clean entry redacts to. */
static size_t copy_clean(const char *s, size_t sl, char *out, size_t room)
{
	struct out o = {out, room, 0};
	put(&o, s, sl);
	return finish(&o);
}

size_t bbx_redact_envp(char *const envp[], char *out, size_t cap)
{
	size_t len = 0;
	bool full = false;
	for (size_t i = 0; envp && envp[i]; i++) {
		size_t room = full || len >= cap ? 0 : cap - len;
		const char *s = envp[i];
		size_t n = 0, sl = 0;
		uint64_t h = 0, *grp = NULL;
		if (clean_n) {
			sl = strlen(s);
			/* XXH3, not the journal's XXH64: on an environment's short entries it
			 * takes ~60 % of the instructions (callgrind: 37 entries, 1,359 bytes,
			 * 3.7 k against 6.3 k, every exec); the table lives for one run. */
			h = XXH3_64bits_withSeed(s, sl, clean_seed) | 1; /* 0: an empty slot */
			grp = clean_group(h);
			if (clean_hit(grp, 0, h)) {
				n = copy_clean(s, sl, room ? out + len : NULL, room);
				goto next;
			}
		}
		n = bbx_redact_env(s, room ? out + len : NULL, room);
		/* Clean: the output is the entry itself, whole (not cut short by the room). */
		if (grp && n == sl && n + 1 <= room && !memcmp(out + len, s, n))
			clean_store(grp, 0, h);
next:
		if (n + 1 > room)
			full = true;
		len += n + 1;
	}
	return len;
}

/* One argv element s into out (room bytes), after an element that is (pf) or is not a
 * flag whose value is secret; *flag says the same of s, for the element after it.
 * What the cache holds of an element: redacted after a non-flag it is itself, and it
 * is not such a flag.  An element "-pX" is a password under some tools (p_tool) and
 * nothing under the others: under those it is neither looked up nor entered, so what
 * the cache says of it holds for the others (gcc's "-pie", "-plugin-opt=...");
 * *ptool caches p_tool(tool) for the argv (-1: not asked yet). */
static size_t arg_elem(const char *tool, bool pf, const char *s, char *out, size_t room,
		       bool *flag, int *ptool)
{
	uint64_t h = 0, *grp = NULL;
	size_t sl = 0;
	if (!pf && clean_n) {
		bool keyed = true;
		if (s[0] == '-' && s[1] == 'p' && s[2]) {
			if (*ptool < 0)
				*ptool = p_tool(tool);
			keyed = !*ptool;
		}
		if (keyed) {
			sl = strlen(s);
			h = XXH3_64bits_withSeed(s, sl, clean_seed ^ CLEAN_ARGV_SEED) | 1;
			grp = clean_group(h);
			if (clean_hit(grp, CLEAN_WAYS - CLEAN_ARGV_WAYS, h)) {
				*flag = false;
				return copy_clean(s, sl, out, room);
			}
		}
	}
	*flag = argv_glob(s, true) != NULL;
	struct out o = {out, room, 0};
	arg_into(&o, tool, pf, s);
	size_t n = finish(&o);
	if (grp && !*flag && n == sl && n + 1 <= room && !memcmp(out, s, n))
		clean_store(grp, CLEAN_WAYS - CLEAN_ARGV_WAYS, h);
	return n;
}

size_t bbx_redact_argv(char *const argv[], char *out, size_t cap)
{
	size_t len = 0;
	bool full = false, pf = false;
	int ptool = -1;
	for (size_t i = 0; argv && argv[i]; i++) {
		size_t room = full || len >= cap ? 0 : cap - len;
		size_t n = arg_elem(argv[0], pf, argv[i], room ? out + len : NULL, room, &pf,
				    &ptool);
		if (n + 1 > room)
			full = true; /* later elements must not shift into its place */
		len += n + 1;
	}
	return len;
}

size_t bbx_redact_block(const char *blk, size_t len, bool env, char *out, size_t cap)
{
	size_t olen = 0;
	bool full = false, pf = false; /* pf: the element before is a secret flag */
	int ptool = -1;
	const char *tool = NULL;
	char last[256]; /* an unterminated last string, copied to terminate it */
	for (size_t i = 0; i < len;) {
		const char *s = blk + i;
		const char *nul = memchr(s, 0, len - i);
		size_t sl = nul ? (size_t)(nul - s) : len - i;
		if (!nul) {
			if (sl >= sizeof last)
				sl = sizeof last - 1;
			memcpy(last, s, sl);
			last[sl] = 0;
			s = last;
		}
		if (!tool)
			tool = s;
		size_t room = full || olen >= cap ? 0 : cap - olen;
		char *o = room ? out + olen : NULL;
		size_t n = env ? bbx_redact_env(s, o, room) : arg_elem(tool, pf, s, o, room, &pf, &ptool);
		if (n + 1 > room)
			full = true;
		olen += n + 1;
		i += (nul ? (size_t)(nul - (blk + i)) : len - i) + 1;
	}
	return olen;
}
