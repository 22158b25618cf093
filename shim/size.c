/* SPDX-License-Identifier: MIT
 *
 * size.c - size changes and writes that bypass open-time capture: truncate, ftruncate,
 * fallocate, posix_fallocate (and their 64 forms), copy_file_range, sendfile.
 *
 * A shrink or a hole punch destroys data: the content is preserved first.  Growth only
 * records the original length.  copy_file_range and sendfile capture their output file
 * only when the run has not already captured it at open (an inherited descriptor).
 */
#include "shim.h"
#include "journal/hot.h"

#include <linux/falloc.h>
#include <stdint.h>
#include <sys/sendfile.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define PUNCH_MODES (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE | FALLOC_FL_COLLAPSE_RANGE | \
		     FALLOC_FL_INSERT_RANGE)

/* Captures (guard held, journal usable); returns 0 or -errno. */
static int cap_resize(const char *op, const char *path, int fd, int64_t newlen, int punch)
{
	int rc = path ? bbx_path_abs(AT_FDCWD, path, bbx_tp.a, PATH_MAX) : 0;
	if (!rc)
		rc = bbx_cap_resize(&bbx_run, op, path ? bbx_tp.a : NULL, fd, newlen, punch);
	return rc;
}

#define RESIZE_BODY(opname, path, fd, newlen, punch, realcall)                              \
	BBX_CAPTURE_THEN_CALL(opname, cap_resize(opname, (path), (fd), (newlen), (punch)), realcall)

BBX_EXPORT int truncate(const char *path, off_t len)
{
	RESIZE_BODY("truncate", path, -1, len, 0, bbx_marked_truncate(path, len));
}

BBX_EXPORT int truncate64(const char *path, off64_t len)
{
	RESIZE_BODY("truncate64", path, -1, len, 0, bbx_marked_truncate(path, len));
}

BBX_EXPORT int ftruncate(int fd, off_t len)
{
	RESIZE_BODY("ftruncate", NULL, fd, len, 0, BBX_REAL(ftruncate)(fd, len));
}

BBX_EXPORT int ftruncate64(int fd, off64_t len)
{
	RESIZE_BODY("ftruncate64", NULL, fd, len, 0, BBX_REAL(ftruncate64)(fd, len));
}

BBX_EXPORT int fallocate(int fd, int mode, off_t off, off_t len)
{
	RESIZE_BODY("fallocate", NULL, fd, (mode & FALLOC_FL_KEEP_SIZE) ? INT64_MAX : off + len,
		    (mode & PUNCH_MODES) != 0, BBX_REAL(fallocate)(fd, mode, off, len));
}

BBX_EXPORT int fallocate64(int fd, int mode, off64_t off, off64_t len)
{
	RESIZE_BODY("fallocate64", NULL, fd, (mode & FALLOC_FL_KEEP_SIZE) ? INT64_MAX : off + len,
		    (mode & PUNCH_MODES) != 0, BBX_REAL(fallocate64)(fd, mode, off, len));
}

/* posix_fallocate returns an error number instead of setting errno. */
#define PFALLOC_BODY(opname, fd, off, len, realcall)                                        \
	do {                                                                                \
		int saved_;                                                                 \
		if (!bbx_enter(&saved_))                                                    \
			return realcall;                                                    \
		int rc_ = bbx_usable_mut();                                                 \
		if (!rc_)                                                                   \
			rc_ = cap_resize(opname, NULL, (fd), (off) + (len), 0);             \
		if (rc_) {                                                                  \
			bbx_leave(saved_);                                                  \
			return -rc_;                                                        \
		}                                                                           \
		unsigned gen_ = bbx_call_begin(saved_);                                     \
		int r_ = realcall;                                                          \
		(void)bbx_call_end(gen_);                                                   \
		bbx_leave(saved_);                                                          \
		return r_;                                                                  \
	} while (0)

BBX_EXPORT int posix_fallocate(int fd, off_t off, off_t len)
{
	PFALLOC_BODY("posix_fallocate", fd, off, len, BBX_REAL(posix_fallocate)(fd, off, len));
}

BBX_EXPORT int posix_fallocate64(int fd, off64_t off, off64_t len)
{
	PFALLOC_BODY("posix_fallocate64", fd, off, len, BBX_REAL(posix_fallocate64)(fd, off, len));
}

#define FDWRITE_INPLACE(opname, fd, realcall)                                               \
	BBX_CAPTURE_THEN_CALL(opname, bbx_cap_fdwrite(&bbx_run, opname, (fd), 1), realcall)

#define FDWRITE_BODY(opname, fd, realcall)                                                  \
	BBX_CAPTURE_THEN_CALL(opname, bbx_cap_fdwrite(&bbx_run, opname, (fd), 0), realcall)

BBX_EXPORT ssize_t copy_file_range(int in, off64_t *inoff, int out, off64_t *outoff, size_t n,
				   unsigned flags)
{
	FDWRITE_BODY("copy_file_range", out,
		     BBX_REAL(copy_file_range)(in, inoff, out, outoff, n, flags));
}

BBX_EXPORT ssize_t sendfile(int out, int in, off_t *off, size_t n)
{
	FDWRITE_BODY("sendfile", out, BBX_REAL(sendfile)(out, in, off, n));
}

BBX_EXPORT ssize_t sendfile64(int out, int in, off64_t *off, size_t n)
{
	FDWRITE_BODY("sendfile64", out, BBX_REAL(sendfile64)(out, in, off, n));
}

/* An O_APPEND descriptor was captured by its length only.  These two are the ways to
 * write inside the existing data through it anyway: capture the content first. */
BBX_EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	if (!(flags & RWF_NOAPPEND))
		return BBX_REAL(pwritev2)(fd, iov, cnt, off, flags);
	FDWRITE_INPLACE("pwritev2", fd, BBX_REAL(pwritev2)(fd, iov, cnt, off, flags));
}

BBX_EXPORT ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
	if (!(flags & RWF_NOAPPEND))
		return BBX_REAL(pwritev64v2)(fd, iov, cnt, off, flags);
	FDWRITE_INPLACE("pwritev64v2", fd, BBX_REAL(pwritev64v2)(fd, iov, cnt, off, flags));
}

/* fcntl(F_SETFL) clearing O_APPEND on a writable descriptor.  Every other command goes
 * straight through: one compare on a hot call. */
static int do_fcntl(const char *op, int (*real)(int, int, ...), int fd, int cmd, void *arg)
{
	int saved;
	if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) {
		int r = real(fd, cmd, arg);
		if (r >= 0) {
			bbx_fdid_forget(r, r); /* as dup() (fd.c) */
			bbx_fdid_copy(fd, r);  /* rm -r works through such a copy */
		}
		return r;
	}
	if (cmd == F_SETFL && fd == bbx_journal_fd() && fd >= 0)
		bbx_writer_fd_touched(&bbx_run.w, fd, fd); /* our O_APPEND may be going */
	if (cmd != F_SETFL || ((long)arg & O_APPEND) || !bbx_enter(&saved))
		return real(fd, cmd, arg);
	int fl = real(fd, F_GETFL);
	int rc = 0;
	if (fl >= 0 && (fl & O_APPEND) && (fl & O_ACCMODE) != O_RDONLY) {
		rc = bbx_usable_mut();
		if (!rc)
			rc = bbx_cap_fdwrite(&bbx_run, op, fd, 1);
	}
	if (rc)
		return bbx_refuse(rc);
	bbx_leave(saved);
	return real(fd, cmd, arg);
}

BBX_EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *); /* as glibc reads it: int or pointer, one register */
	va_end(ap);
	return do_fcntl("fcntl", BBX_REAL(fcntl), fd, cmd, arg);
}

BBX_EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return do_fcntl("fcntl64", BBX_REAL(fcntl64), fd, cmd, arg);
}

/* The mark once known: in the loader's data page, not a .bss page of its own in every
 * process that asks (issue 5). */
BBX_HOT static long mark_known;

long bbx_mark(void)
{
	long v = __atomic_load_n(&mark_known, __ATOMIC_RELAXED);
	if (v)
		return v;
	struct stat sb;
	if (!__atomic_load_n(&bbx_status, __ATOMIC_ACQUIRE) && bbx_run.jino)
		v = (long)bbx_run_mark(bbx_run.jdev, bbx_run.jino);
	else if (bbx_env_journal && stat(bbx_journal_dir, &sb) == 0) /* guard held */
		v = (long)bbx_run_mark(sb.st_dev, sb.st_ino);
	__atomic_store_n(&mark_known, v, __ATOMIC_RELAXED);
	return v;
}

int bbx_marked_truncate(const char *path, off_t len)
{
	return (int)BBX_REAL(syscall)(SYS_truncate, path, (long)len, bbx_mark());
}

int bbx_marked_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	return (int)BBX_REAL(syscall)(SYS_openat, (long)dirfd, path, (long)flags, (long)mode,
				      bbx_mark());
}
