/* SPDX-License-Identifier: MIT
 *
 * cwd.c - chdir, fchdir, and the libc calls that change directory inside libc (nftw,
 * fts_open, fts64_open, daemon).  They change nothing on disk and record nothing.
 * They keep the name the shim holds for the working directory honest
 * (journal/capture.h, bbx_cwd_bump): a relative name is made absolute with the
 * words getcwd gave, trusted without a stat of the directory on every call (issue 5:
 * one system call of three in a create by relative name - tar -x, git, sed -i) only
 * while no chdir has happened since.  chdir and fchdir raise the process's cwd
 * generation before and after the call (a call made meanwhile by another thread
 * reads the name again).  The calls that go on to change directory where no wrapper
 * sees it - nftw with FTW_CHDIR, fts without FTS_NOCHDIR - daemon(), and setns() into
 * a mount namespace end the trust for the process's life: every later relative name
 * is checked by a stat, as before, and every relative read by its identity.
 */
#include "shim.h"

#include <fts.h>
#include <ftw.h>
#include <sched.h>
#include <unistd.h>

/* The real call between two raises of the cwd generation, its errno kept. */
#define MOVE_BODY(realcall)                                                                 \
	do {                                                                                \
		bbx_cwd_bump();                                                             \
		int r_ = realcall;                                                          \
		int e_ = errno;                                                             \
		bbx_cwd_bump();                                                             \
		errno = e_;                                                                 \
		return r_;                                                                  \
	} while (0)

BBX_EXPORT int chdir(const char *path) { MOVE_BODY(BBX_REAL(chdir)(path)); }

BBX_EXPORT int fchdir(int fd) { MOVE_BODY(BBX_REAL(fchdir)(fd)); }

static void cwd_untrusted(void)
{
	__atomic_store_n(&bbx_cwd_untrusted, 1, __ATOMIC_RELEASE);
	bbx_cwd_bump();
}

BBX_EXPORT int nftw(const char *dir, __nftw_func_t fn, int fds, int flags)
{
	if (flags & FTW_CHDIR)
		cwd_untrusted();
	return BBX_REAL(nftw)(dir, fn, fds, flags);
}

BBX_EXPORT int nftw64(const char *dir, __nftw64_func_t fn, int fds, int flags)
{
	if (flags & FTW_CHDIR)
		cwd_untrusted();
	return BBX_REAL(nftw64)(dir, fn, fds, flags);
}

BBX_EXPORT FTS *fts_open(char *const *argv, int options,
			 int (*compar)(const FTSENT **, const FTSENT **))
{
	if (!(options & FTS_NOCHDIR))
		cwd_untrusted();
	return BBX_REAL(fts_open)(argv, options, compar);
}

BBX_EXPORT FTS64 *fts64_open(char *const *argv, int options,
			     int (*compar)(const FTSENT64 **, const FTSENT64 **))
{
	if (!(options & FTS_NOCHDIR))
		cwd_untrusted();
	return BBX_REAL(fts64_open)(argv, options, compar);
}

/* setns(2) into a mount namespace (or of any type, 0) moves the calling thread's root
 * and working directory to the namespace's root, inside the kernel: the trust ends for
 * the process's life.  Other namespace types leave both where they are. */
BBX_EXPORT int setns(int fd, int nstype)
{
	if (!nstype || (nstype & CLONE_NEWNS))
		cwd_untrusted();
	return BBX_REAL(setns)(fd, nstype);
}

BBX_EXPORT int daemon(int nochdir, int noclose)
{
	bbx_fork_hooks(); /* its fork is libc's own, past the fork wrapper (shim/init.c) */
	if (!nochdir)
		cwd_untrusted();
	return BBX_REAL(daemon)(nochdir, noclose);
}
