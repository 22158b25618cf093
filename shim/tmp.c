/* SPDX-License-Identifier: MIT
 *
 * tmp.c - mkstemp and friends, mkdtemp, tmpfile.
 *
 * The name a mkstemp creates is unknown until it exists, which would make a CREATE
 * record late (invariant 1).  So the shim makes the name itself, as glibc's
 * __gen_tempname does: fill the Xs, record the CREATE, create with O_EXCL, retry on
 * EEXIST.  tmpfile() makes an unnamed file (O_TMPFILE): there is nothing to undo, but
 * the call is recorded.
 */
#include "shim.h"

#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define ATTEMPTS 1000

static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/* The six letters.  Each name is made with O_EXCL (a file) or mkdir (a directory), so a
 * name someone guessed and took first costs a retry, never a file of theirs opened: the
 * letters need to differ, not to be unpredictable.  So, as glibc's __gen_tempname does
 * for these calls, no getrandom(2) per name (one system call per sed -i file, per
 * compiler temporary: issue 5): a splitmix64 sequence, seeded by the process's first
 * name from getrandom (or the clock and pid without it), each step also mixing in the
 * time-stamp counter, so that a fork child and its parent, which share the state,
 * part at once.  (Two processes of the run are unlikely to meet; if they do, the
 * create fails with EEXIST and the next name is tried, as with any other name.) */
static uint64_t tmp_state;

static uint64_t next_bits(void)
{
	if (!__atomic_load_n(&tmp_state, __ATOMIC_RELAXED)) {
		uint64_t seed;
		if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != (ssize_t)sizeof seed)
			seed = __builtin_ia32_rdtsc() ^ (uint64_t)getpid() << 32;
		__atomic_store_n(&tmp_state, seed | 1, __ATOMIC_RELAXED);
	}
	uint64_t z = __atomic_add_fetch(&tmp_state, 0x9e3779b97f4a7c15ull, __ATOMIC_RELAXED) ^
		     __builtin_ia32_rdtsc();
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void fill_random(char *x)
{
	uint64_t r = next_bits();
	for (int i = 0; i < 6; i++, r >>= 8)
		x[i] = letters[(r & 0xff) % (sizeof letters - 1)];
}

/* dir: mkdtemp; else a file opened O_RDWR|O_CREAT|O_EXCL|flags.  Returns fd, 0, or -1. */
static int gen_temp(const char *op, char *tmpl, int suffixlen, int flags, int dir)
{
	size_t len = strlen(tmpl);
	if (suffixlen < 0 || len < 6 + (size_t)suffixlen ||
	    memcmp(tmpl + len - 6 - suffixlen, "XXXXXX", 6) != 0) {
		bbx_leave(EINVAL);
		return -1;
	}
	char *x = tmpl + len - 6 - suffixlen;
	int rc = bbx_usable_mut();
	if (rc)
		return bbx_refuse(rc);
	for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
		fill_random(x);
		struct bbx_pending pend = {0};
		rc = bbx_path_abs(AT_FDCWD, tmpl, bbx_tp.a, PATH_MAX);
		if (!rc)
			rc = bbx_cap_create_excl(&bbx_run, op, bbx_tp.a,
						 dir ? BBX_KIND_DIR : BBX_KIND_FILE,
						 dir ? 0700 : 0600, &pend);
		if (rc)
			return bbx_refuse(rc);
		int r = dir ? BBX_REAL(mkdir)(tmpl, 0700)
			    : BBX_REAL(open)(tmpl, (flags & ~O_ACCMODE) | O_RDWR | O_CREAT | O_EXCL,
					     0600);
		int e = errno;
		bbx_stat_epoch++; /* capture.h: the call created what the capture saw absent */
		bbx_cap_done(&bbx_run, op, &pend, r, e, dir ? -1 : r);
		if (r >= 0) {
			bbx_leave(0);
			return r;
		}
		if (e != EEXIST) {
			bbx_leave(e);
			return -1;
		}
	}
	bbx_leave(EEXIST);
	return -1;
}

#define TEMP_WRAPPER(name, args, suffix, flags)                                             \
	{                                                                                   \
		int saved_;                                                                 \
		if (!bbx_enter(&saved_))                                                    \
			return BBX_REAL(name) args;                                         \
		int r_ = gen_temp(#name, tmpl, (suffix), (flags), 0);                       \
		if (r_ >= 0)                                                                \
			errno = saved_;                                                     \
		return r_;                                                                  \
	}

BBX_EXPORT int mkstemp(char *tmpl) TEMP_WRAPPER(mkstemp, (tmpl), 0, 0)
BBX_EXPORT int mkstemp64(char *tmpl) TEMP_WRAPPER(mkstemp64, (tmpl), 0, 0)
BBX_EXPORT int mkostemp(char *tmpl, int flags) TEMP_WRAPPER(mkostemp, (tmpl, flags), 0, flags)
BBX_EXPORT int mkostemp64(char *tmpl, int flags) TEMP_WRAPPER(mkostemp64, (tmpl, flags), 0, flags)
BBX_EXPORT int mkstemps(char *tmpl, int suffixlen) TEMP_WRAPPER(mkstemps, (tmpl, suffixlen), suffixlen, 0)
BBX_EXPORT int mkstemps64(char *tmpl, int suffixlen)
	TEMP_WRAPPER(mkstemps64, (tmpl, suffixlen), suffixlen, 0)
BBX_EXPORT int mkostemps(char *tmpl, int suffixlen, int flags)
	TEMP_WRAPPER(mkostemps, (tmpl, suffixlen, flags), suffixlen, flags)
BBX_EXPORT int mkostemps64(char *tmpl, int suffixlen, int flags)
	TEMP_WRAPPER(mkostemps64, (tmpl, suffixlen, flags), suffixlen, flags)

BBX_EXPORT char *mkdtemp(char *tmpl)
{
	int saved;
	if (!bbx_enter(&saved))
		return BBX_REAL(mkdtemp)(tmpl);
	int r = gen_temp("mkdtemp", tmpl, 0, 0, 1);
	if (r < 0)
		return NULL;
	errno = saved;
	return tmpl;
}

static FILE *do_tmpfile(const char *op, FILE *(*real)(void))
{
	int saved;
	if (!bbx_enter(&saved))
		return real();
	struct bbx_pending pend = {0};
	int rc = bbx_usable_mut();
	if (!rc)
		rc = bbx_cap_create(&bbx_run, op, P_tmpdir, BBX_KIND_ANON, 0600, NULL, &pend);
	if (rc) {
		bbx_refuse(rc);
		return NULL;
	}
	unsigned gen = bbx_call_begin(saved);
	FILE *f = real();
	int e = errno;
	(void)bbx_call_end(gen); /* anonymous: its RESULT names no path */
	bbx_cap_done(&bbx_run, op, &pend, f ? fileno(f) : -1, e, -1);
	bbx_leave(f ? saved : e);
	return f;
}

BBX_EXPORT FILE *tmpfile(void) { return do_tmpfile("tmpfile", BBX_REAL(tmpfile)); }
BBX_EXPORT FILE *tmpfile64(void) { return do_tmpfile("tmpfile64", BBX_REAL(tmpfile64)); }
