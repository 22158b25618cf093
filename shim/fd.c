/* SPDX-License-Identifier: MIT
 *
 * fd.c - close, dup2, dup3, close_range, closefrom, fclose, dup: calls that close or
 * replace descriptors.  They change nothing on disk and record nothing.  They tell the
 * writer (journal/writer.h, descriptor generation) that its descriptor must be verified
 * again before the next record, which lets every other record skip that check (two of
 * its three system calls); and they forget the marks of descriptors a file was created
 * (or found kept whole) through (journal/capture.h, bbx_fdid) before the number can be
 * reused, dup2 and dup3 giving the new number the old one's mark.  A program
 * that closes all descriptors, or dup2()s over ours, is caught here; one that does so
 * with a raw system call is caught by the EBADF of the next write, or - if it also
 * reopened something at that very number - is the limitation the writer's comment
 * states.
 */
#include "shim.h"

#include <stdio.h>
#include <unistd.h>

/* Bumps the generation if our descriptor is in [lo, hi]. */
static inline void touched(int lo, int hi)
{
	if (bbx_journal_fd() >= 0)
		bbx_writer_fd_touched(&bbx_run.w, lo, hi);
}

BBX_EXPORT int close(int fd)
{
	bbx_fdid_forget(fd, fd);
	int ours = bbx_journal_fd();
	if (__builtin_expect(fd != ours || ours < 0, 1))
		return BBX_REAL(close)(fd);
	touched(fd, fd);
	int r = BBX_REAL(close)(fd);
	int e = errno;
	touched(fd, fd);
	errno = e;
	return r;
}

BBX_EXPORT int dup2(int oldfd, int newfd)
{
	if (oldfd != newfd)
		bbx_fdid_forget(newfd, newfd);
	int ours = bbx_journal_fd();
	if (__builtin_expect(newfd != ours || ours < 0, 1)) {
		int r = BBX_REAL(dup2)(oldfd, newfd);
		if (r >= 0 && oldfd != newfd)
			bbx_fdid_copy(oldfd, newfd); /* GNU touch: open, dup2 to 0, futimens */
		return r;
	}
	touched(newfd, newfd);
	int r = BBX_REAL(dup2)(oldfd, newfd);
	int e = errno;
	touched(newfd, newfd);
	errno = e;
	return r;
}

BBX_EXPORT int dup3(int oldfd, int newfd, int flags)
{
	bbx_fdid_forget(newfd, newfd);
	int ours = bbx_journal_fd();
	if (__builtin_expect(newfd != ours || ours < 0, 1)) {
		int r = BBX_REAL(dup3)(oldfd, newfd, flags);
		if (r >= 0)
			bbx_fdid_copy(oldfd, newfd);
		return r;
	}
	touched(newfd, newfd);
	int r = BBX_REAL(dup3)(oldfd, newfd, flags);
	int e = errno;
	touched(newfd, newfd);
	errno = e;
	return r;
}

BBX_EXPORT int close_range(unsigned lo, unsigned hi, int flags)
{
	int ilo = lo > (unsigned)INT_MAX ? INT_MAX : (int)lo;
	int ihi = hi > (unsigned)INT_MAX ? INT_MAX : (int)hi;
	if (!(flags & CLOSE_RANGE_CLOEXEC))
		bbx_fdid_forget(ilo, ihi);
	touched(ilo, ihi);
	int r = BBX_REAL(close_range)(lo, hi, flags);
	int e = errno;
	touched(ilo, ihi);
	errno = e;
	return r;
}

BBX_EXPORT void closefrom(int lo)
{
	bbx_fdid_forget(lo, INT_MAX);
	touched(lo, INT_MAX);
	BBX_REAL(closefrom)(lo);
	touched(lo, INT_MAX);
}

/* Streams close their descriptors inside libc, where close() above never sees it.
 * (glibc's fcloseall only flushes: it closes no descriptor, and is not wrapped.) */
BBX_EXPORT int fclose(FILE *f)
{
	if (f) {
		int fd = fileno_unlocked(f);
		bbx_fdid_forget(fd, fd);
	}
	return BBX_REAL(fclose)(f);
}

/* A new number can only carry a mark a close behind libc's back left (a raw system call,
 * or a vfork child's create, whose memory is its parent's): forgotten on reuse. */
BBX_EXPORT int dup(int fd)
{
	int r = BBX_REAL(dup)(fd);
	if (r >= 0) {
		bbx_fdid_forget(r, r);
		bbx_fdid_copy(fd, r);
	}
	return r;
}
