/* SPDX-License-Identifier: MIT
 *
 * env.c - keeping LD_PRELOAD and BBX_* alive across exec, invisibly.
 *
 * A program may exec with a cleaned environment (env -i) or a rewritten LD_PRELOAD; the
 * new program must still be journaled, so the exec wrappers re-insert the shim's
 * variables.  Transparency: what the shim inserted on its own is listed in BBX_HIDE,
 * and the new process's shim removes those entries from environ before main() runs,
 * so a program that passed an empty environment finds an empty one in its child.
 * Runs in vfork children: no allocation, only the caller's stack and static strings.
 */
#include "shim.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

static char *env_preload = ""; /* "LD_PRELOAD=<shim>", in the start-up arena */
static char *env_journal = ""; /* "BBX_JOURNAL=<run dir>" or "" */
static const char *shim_base = "libbbxshim.so";
static size_t shim_base_len = sizeof "libbbxshim.so" - 1;

/* The first byte first: most entries of an environment start with neither L nor B, and
 * strncmp per entry and name was ~3.7k instructions of an EXEC record (callgrind). */
static int has_prefix(const char *s, const char *p, size_t n)
{
	return s[0] == p[0] && strncmp(s, p, n) == 0;
}

/* Does an LD_PRELOAD value name our library: is shim_base the last component of one of
 * its entries (separated by ' ' or ':')?  One pass, comparing at each entry's end only:
 * a match tried at every byte cost ~7 instructions a byte (callgrind: 904 for a value
 * of three entries, 130 bytes), twice in every process start.  No libc (no strstr,
 * memcmp): in a fork child on its way to exec that is one more page of code to fault in
 * (issue 5). */
static int preload_has_shim(const char *v)
{
	const char *base = v; /* the current entry's last component */
	for (const char *p = v;; p++) {
		char c = *p;
		if ((unsigned char)c > ':') /* letters and most else: '/', ':', ' ', NUL are below */
			continue;
		if (c == '/') {
			base = p + 1;
			continue;
		}
		if (c && c != ' ' && c != ':')
			continue;
		if ((size_t)(p - base) == shim_base_len) {
			size_t k = 0;
			while (k < shim_base_len && base[k] == shim_base[k])
				k++;
			if (k == shim_base_len)
				return 1;
		}
		if (!c)
			return 0;
		base = p + 1;
	}
}

size_t bbx_env_put(char *out, size_t cap, const char *prefix, const char *val)
{
	size_t a = strlen(prefix), b = strlen(val);
	if (!cap)
		return 0;
	if (a + b >= cap) {
		/* Truncated (callers refuse or accept it): a terminated prefix of the whole. */
		size_t k = a < cap - 1 ? a : cap - 1;
		memcpy(out, prefix, k);
		size_t m = cap - 1 - k < b ? cap - 1 - k : b;
		memcpy(out + k, val, m);
		out[k + m] = 0;
		return 0;
	}
	memcpy(out, prefix, a);
	memcpy(out + a, val, b + 1);
	return a + b;
}

void bbx_env_init(void)
{
	const char *path = NULL;
	const char *pre = getenv("LD_PRELOAD");
	/* Our own file name: LD_PRELOAD names it in every process a run starts.  Only
	 * otherwise (a renamed copy, a dlopen) ask dladdr, which costs ~10k instructions
	 * per process start (callgrind). */
	Dl_info self;
	int named = pre && preload_has_shim(pre);
	if (!named && dladdr((void *)bbx_env_init, &self) &&
	    self.dli_fname && self.dli_fname[0]) {
		path = self.dli_fname;
		const char *b = strrchr(path, '/');
		shim_base = b ? b + 1 : path;
		shim_base_len = strlen(shim_base);
		named = pre && preload_has_shim(pre); /* a renamed copy the value names */
	}
	size_t cap = sizeof bbx_env_arena - bbx_env_used;
	env_preload = bbx_env_arena + bbx_env_used;
	const char *val = named ? pre : path ? path : shim_base;
	size_t pn = bbx_env_put(env_preload, cap < PATH_MAX + 16 ? cap : PATH_MAX + 16,
				"LD_PRELOAD=", val);
	if (!pn) /* too long: truncated, as snprintf did */
		pn = strnlen(env_preload, cap);
	bbx_env_used += pn + 1; /* the arena goes on after it */
	if (bbx_env_journal)
		env_journal = (char *)bbx_env_journal;

	/* Take back out what our parent's shim inserted. */
	const char *hide = getenv("BBX_HIDE");
	if (!hide || !environ)
		return;
	char names[256];
	snprintf(names, sizeof names, "%s", hide);
	size_t w = 0;
	for (size_t r = 0; environ[r]; r++) {
		const char *e = environ[r];
		int drop = has_prefix(e, "BBX_HIDE=", 9);
		for (char *n = names; !drop && *n;) {
			char *c = strchr(n, ',');
			size_t l = c ? (size_t)(c - n) : strlen(n);
			if (l && has_prefix(e, n, l) && e[l] == '=')
				drop = 1;
			n += l + (c ? 1 : 0);
		}
		if (!drop)
			environ[w++] = environ[r];
	}
	environ[w] = NULL;
}

size_t bbx_env_count(char *const *envp)
{
	size_t n = 0;
	while (envp && envp[n])
		n++;
	return n;
}

int bbx_env_complete(char *const *envp)
{
	int pre = 0, jr = 0;
	for (size_t i = 0; envp && envp[i]; i++) {
		if (has_prefix(envp[i], "LD_PRELOAD=", 11))
			pre = preload_has_shim(envp[i] + 11);
		else if (has_prefix(envp[i], "BBX_JOURNAL=", 12))
			jr = !env_journal[0] || strcmp(envp[i], env_journal) == 0;
		else if (has_prefix(envp[i], "BBX_HIDE=", 9))
			return 0;
	}
	return pre && (jr || !env_journal[0]);
}

char **bbx_env_build(char *const *envp, char **out, char *scratch)
{
	size_t n = 0;
	int have_pre = 0, have_jr = 0;
	char *pbuf = scratch;
	for (size_t i = 0; envp && envp[i]; i++) {
		char *e = envp[i];
		if (has_prefix(e, "LD_PRELOAD=", 11)) {
			have_pre = 1;
			if (!preload_has_shim(e + 11)) {
				/* Keep the program's own preloads, after ours. */
				int m = snprintf(pbuf, PATH_MAX, "%s %s", env_preload, e + 11);
				if (m > 0 && m < PATH_MAX)
					e = pbuf;
				else
					e = env_preload; /* too long to merge: ours wins */
			}
		} else if (has_prefix(e, "BBX_JOURNAL=", 12)) {
			/* A child may not leave this run for another journal. */
			have_jr = 1;
			if (env_journal[0])
				e = env_journal;
		} else if (has_prefix(e, "BBX_HIDE=", 9)) {
			continue;
		}
		out[n++] = e;
	}
	char *hide = scratch + PATH_MAX;
	size_t hl = 0;
	hide[0] = 0;
	if (!have_pre) {
		out[n++] = env_preload;
		hl += (size_t)snprintf(hide + hl, 64, "%sLD_PRELOAD", hl ? "," : "BBX_HIDE=");
	}
	if (!have_jr && env_journal[0]) {
		out[n++] = env_journal;
		hl += (size_t)snprintf(hide + hl, 64, "%sBBX_JOURNAL", hl ? "," : "BBX_HIDE=");
	}
	if (hl)
		out[n++] = hide;
	out[n] = NULL;
	return out;
}
