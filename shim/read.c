/* SPDX-License-Identifier: MIT
 *
 * read.c - the calls that reveal what is under a path without changing it: the stat
 * family (and the __xstat entry points of binaries built against glibc < 2.33),
 * readlink, opendir.  Only a policy with deny_read paths has anything to say about
 * them; otherwise each costs a flag test (issue 5: read-only calls).  With deny_read,
 * an absolute path's words are checked before the call and the identity of what the
 * call reached after it, so symlinks, "..", hard links and dirfds lead nowhere.
 *
 * Also syscall(): the numbers that mutate, exec, connect or read (stat, readlink, openat2) go to our own wrappers of
 * the libc functions that issue them; io_uring_setup is refused with ENOSYS (programs
 * then fall back to calls we see); every other number passes through untouched.
 */
#include "shim.h"
#include "policy/policy.h"

#include <stdarg.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>

/* A stat-like call: T the result type, ok when it succeeded, sb the struct stat-like
 * result (st_dev and st_ino are all that is read). */
#define STAT_BODY(opname, path, realcall, DEV, INO)                                         \
	do {                                                                                \
		int saved_, rc_;                                                            \
		if (!bbx_reads_checked())                                                   \
			return realcall;                                                    \
		const char *wp_ = (path);                                                   \
		__asm__("" : "+r"(wp_)); /* nonnull in the prototype, NULL in the wild */  \
		if (bbx_rf_ready() && wp_ && bbx_rf_words(wp_)) {                           \
			/* cleared by its words (shim.h, bbx_rfilt): the identity decides */ \
			int f_ = realcall;                                                  \
			if (f_ != 0 || bbx_rf_ino(INO) || !bbx_enter(&saved_))              \
				return f_;                                                  \
			struct stat fid_ = {.st_dev = (DEV), .st_ino = (INO)};              \
			if ((rc_ = bbx_read_post(opname, path, -1, &fid_)))                 \
				return bbx_refuse(rc_);                                     \
			bbx_leave(saved_);                                                  \
			return 0;                                                           \
		}                                                                           \
		if (!bbx_enter(&saved_))                                                    \
			return realcall;                                                    \
		rc_ = bbx_read_pre(opname, path);                                           \
		if (rc_)                                                                    \
			return bbx_refuse(rc_);                                             \
		unsigned gen_ = bbx_call_begin(saved_);                                     \
		int r_ = realcall;                                                          \
		int e_ = errno;                                                             \
		(void)bbx_call_end(gen_);                                                   \
		if (r_ == 0) {                                                              \
			struct stat id_ = {.st_dev = (DEV), .st_ino = (INO)};               \
			rc_ = bbx_read_post(opname, path, -1, &id_);                        \
			if (rc_)                                                            \
				return bbx_refuse(rc_);                                     \
		}                                                                           \
		bbx_leave(r_ == 0 ? saved_ : e_);                                           \
		return r_;                                                                  \
	} while (0)

BBX_EXPORT int stat(const char *path, struct stat *sb)
{
	STAT_BODY("stat", path, BBX_REAL(stat)(path, sb), sb->st_dev, sb->st_ino);
}

BBX_EXPORT int stat64(const char *path, struct stat64 *sb)
{
	STAT_BODY("stat64", path, BBX_REAL(stat64)(path, sb), sb->st_dev, sb->st_ino);
}

BBX_EXPORT int lstat(const char *path, struct stat *sb)
{
	STAT_BODY("lstat", path, BBX_REAL(lstat)(path, sb), sb->st_dev, sb->st_ino);
}

BBX_EXPORT int lstat64(const char *path, struct stat64 *sb)
{
	STAT_BODY("lstat64", path, BBX_REAL(lstat64)(path, sb), sb->st_dev, sb->st_ino);
}

BBX_EXPORT int fstatat(int dirfd, const char *path, struct stat *sb, int flags)
{
	STAT_BODY("fstatat", path, BBX_REAL(fstatat)(dirfd, path, sb, flags), sb->st_dev,
		  sb->st_ino);
}

BBX_EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *sb, int flags)
{
	STAT_BODY("fstatat64", path, BBX_REAL(fstatat64)(dirfd, path, sb, flags), sb->st_dev,
		  sb->st_ino);
}

BBX_EXPORT int statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *sx)
{
	STAT_BODY("statx", path, BBX_REAL(statx)(dirfd, path, flags, mask, sx),
		  makedev(sx->stx_dev_major, sx->stx_dev_minor), sx->stx_ino);
}

BBX_EXPORT int __xstat(int ver, const char *path, struct stat *sb)
{
	STAT_BODY("__xstat", path, BBX_REAL(__xstat)(ver, path, sb), sb->st_dev, sb->st_ino);
}

BBX_EXPORT int __xstat64(int ver, const char *path, struct stat64 *sb)
{
	STAT_BODY("__xstat64", path, BBX_REAL(__xstat64)(ver, path, sb), sb->st_dev,
		  sb->st_ino);
}

BBX_EXPORT int __lxstat(int ver, const char *path, struct stat *sb)
{
	STAT_BODY("__lxstat", path, BBX_REAL(__lxstat)(ver, path, sb), sb->st_dev, sb->st_ino);
}

BBX_EXPORT int __lxstat64(int ver, const char *path, struct stat64 *sb)
{
	STAT_BODY("__lxstat64", path, BBX_REAL(__lxstat64)(ver, path, sb), sb->st_dev,
		  sb->st_ino);
}

BBX_EXPORT int __fxstatat(int ver, int dirfd, const char *path, struct stat *sb, int flags)
{
	STAT_BODY("__fxstatat", path, BBX_REAL(__fxstatat)(ver, dirfd, path, sb, flags),
		  sb->st_dev, sb->st_ino);
}

BBX_EXPORT int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *sb, int flags)
{
	STAT_BODY("__fxstatat64", path, BBX_REAL(__fxstatat64)(ver, dirfd, path, sb, flags),
		  sb->st_dev, sb->st_ino);
}

/* readlink: the link itself is what is read (lstat gives its identity). */
static ssize_t do_readlink(const char *op, int dirfd, const char *path, char *buf, size_t len)
{
	int saved;
	if (!bbx_reads_checked() || !bbx_enter(&saved))
		return dirfd == AT_FDCWD ? BBX_REAL(readlink)(path, buf, len)
					 : BBX_REAL(readlinkat)(dirfd, path, buf, len);
	int rc = bbx_read_pre(op, path);
	if (rc)
		return bbx_refuse(rc);
	struct stat sb;
	if (fstatat(dirfd, path, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
		rc = bbx_read_post(op, path, -1, &sb);
		if (rc)
			return bbx_refuse(rc);
	}
	unsigned gen = bbx_call_begin(saved);
	ssize_t r = dirfd == AT_FDCWD ? BBX_REAL(readlink)(path, buf, len)
				      : BBX_REAL(readlinkat)(dirfd, path, buf, len);
	int e = errno;
	(void)bbx_call_end(gen);
	bbx_leave(r < 0 ? e : saved);
	return r;
}

BBX_EXPORT ssize_t readlink(const char *path, char *buf, size_t len)
{
	return do_readlink("readlink", AT_FDCWD, path, buf, len);
}

BBX_EXPORT ssize_t readlinkat(int dirfd, const char *path, char *buf, size_t len)
{
	return do_readlink("readlinkat", dirfd, path, buf, len);
}

static DIR *dir_checked(const char *op, const char *path, DIR *d, int saved, int e)
{
	if (d) {
		int rc = bbx_read_post(op, path, dirfd(d), NULL);
		if (rc) {
			closedir(d);
			bbx_refuse(rc);
			return NULL;
		}
	}
	bbx_leave(d ? saved : e);
	return d;
}

BBX_EXPORT DIR *opendir(const char *path)
{
	int saved;
	if (!bbx_reads_checked() || !bbx_enter(&saved))
		return BBX_REAL(opendir)(path);
	int rc = bbx_read_pre("opendir", path);
	if (rc) {
		bbx_refuse(rc);
		return NULL;
	}
	unsigned gen = bbx_call_begin(saved);
	DIR *d = BBX_REAL(opendir)(path);
	int e = errno;
	(void)bbx_call_end(gen);
	return dir_checked("opendir", path, d, saved, e);
}

/* A descriptor an open of this process returned, checked then (its mark: capture.h,
 * BBX_FDID_READ), is not checked again: gnulib's fts (rm -r, find, grep -r, chmod -R)
 * opens each directory and then lists it through fdopendir.  Any other descriptor (one
 * inherited, received, or opened by a raw system call) is checked by its identity. */
BBX_EXPORT DIR *fdopendir(int fd)
{
	int saved;
	if (!bbx_reads_checked() || bbx_fdid_read_ok(fd) || !bbx_enter(&saved))
		return BBX_REAL(fdopendir)(fd);
	int rc = bbx_read_post("fdopendir", NULL, fd, NULL);
	if (rc) {
		bbx_refuse(rc);
		return NULL;
	}
	bbx_leave(saved);
	return BBX_REAL(fdopendir)(fd);
}

/* closedir closes its descriptor inside libc, where no close wrapper sees it: the
 * descriptor's mark goes first, as close's does (fd.c), so that the number, reused,
 * carries none. */
BBX_EXPORT int closedir(DIR *d)
{
	DIR *wd = d;
	__asm__("" : "+r"(wd)); /* nonnull in the prototype, NULL in the wild */
	if (wd) {
		int fd = dirfd(wd);
		bbx_fdid_forget(fd, fd);
	}
	return BBX_REAL(closedir)(d);
}
