/* SPDX-License-Identifier: MIT
 *
 * meta.c - mode, owner, times and extended attributes: chmod, fchmod, fchmodat, lchmod,
 * chown, fchown, lchown, fchownat, utime, utimes, lutimes, futimes, futimesat,
 * utimensat, futimens, setxattr, lsetxattr, fsetxattr, removexattr, lremovexattr,
 * fremovexattr.
 *
 * Each records a META with the old mode, owner and times (and the old value of the
 * attribute for xattr calls) before the change.  O(1): everything is in the record.
 */
#include "shim.h"

#include <sys/xattr.h>

/* Guard held.  path == NULL: the object is fd. */
static int cap_meta_at(const char *op, int dirfd, const char *path, int fd, uint32_t mask,
		       const char *xname)
{
	if (!path && fd == AT_FDCWD)
		path = "."; /* fchownat(AT_FDCWD, "", ..., AT_EMPTY_PATH): the cwd itself */
	if (!path)
		return bbx_cap_meta(&bbx_run, op, NULL, fd, mask, xname);
	/* A relative name is looked up first the way the call names it: an object this run
	 * created needs no record, no policy and so no absolute name (bbx_cap_meta decides
	 * by its identity alone), and the stat of the name's directory that proves the
	 * absolute name (journal/path.c, cwd_kept) is not made.  tar -x, cp -a and rsync -a
	 * set times, owner and mode by name on every directory they made, install and
	 * chmod +x on the files a build made: one system call each instead of two (issue 5).
	 * Any other object: the same lstat is the capture's first answer (the memo), so
	 * nothing is asked twice. */
	struct stat sb;
	int early = path[0] != '/' && *path && bbx_scratch();
	/* A directory the run made and this thread proved (tar's directories, each of
	 * which gets its times, owner and mode set by name at the end): its identity on
	 * trust from the proof, as its creations had (journal/path.c, cwd_kept). */
	uint64_t dev, ino;
	if (early && dirfd == AT_FDCWD && bbx_run.st && bbx_dname_trusted_rel(path, &dev, &ino) &&
	    bbx_state_level(bbx_run.st, dev, ino) == BBX_LVL_CREATED)
		return 0;
	int e = early ? bbx_sys_fstatat(dirfd, path, &sb, AT_SYMLINK_NOFOLLOW) : 0;
	if (early && !e && (!S_ISLNK(sb.st_mode) || (mask & BBX_META_NOFOLLOW)) &&
	    bbx_run.st && bbx_state_level(bbx_run.st, sb.st_dev, sb.st_ino) == BBX_LVL_CREATED)
		return 0; /* (through a symlink: the object is its target, asked below) */
	int rc = bbx_path_abs(dirfd, path, bbx_tp.a, PATH_MAX);
	if (rc)
		return rc;
	if (path[0] != '/') {
		bbx_at_set(dirfd, path, bbx_tp.a); /* stat it the way the call names it */
		if (early) /* its answer, a missing name's included */
			bbx_stat_memo_put(bbx_tp.a, 0, e ? -1 : 0, -e, &sb);
	}
	return bbx_cap_meta(&bbx_run, op, bbx_tp.a, -1, mask, xname);
}

#define META_BODY(opname, dirfd, path, fd, mask, xname, realcall)                           \
	BBX_CAPTURE_THEN_CALL(opname, cap_meta_at(opname, dirfd, path, fd, mask, xname), realcall)

#define NOFOLLOW(flags) (((flags) & AT_SYMLINK_NOFOLLOW) ? BBX_META_NOFOLLOW : 0)
/* *at calls with AT_EMPTY_PATH and "" act on dirfd itself. */
/* glibc declares some of these paths nonnull, but callers do pass NULL (utimensat,
 * futimesat) and the check must stay; GCC warns or not depending on inlining. */
#pragma GCC diagnostic ignored "-Wnonnull-compare"
#define AT_PATH(path, flags) (((flags) & AT_EMPTY_PATH) && (path) && !*(path) ? NULL : (path))

BBX_EXPORT int chmod(const char *path, mode_t mode)
{
	META_BODY("chmod", AT_FDCWD, path, -1, BBX_META_MODE, NULL, BBX_REAL(chmod)(path, mode));
}

BBX_EXPORT int fchmod(int fd, mode_t mode)
{
	META_BODY("fchmod", AT_FDCWD, NULL, fd, BBX_META_MODE, NULL, BBX_REAL(fchmod)(fd, mode));
}

BBX_EXPORT int fchmodat(int dirfd, const char *path, mode_t mode, int flags)
{
	META_BODY("fchmodat", dirfd, path, -1, BBX_META_MODE | NOFOLLOW(flags), NULL,
		  BBX_REAL(fchmodat)(dirfd, path, mode, flags));
}

BBX_EXPORT int lchmod(const char *path, mode_t mode)
{
	META_BODY("lchmod", AT_FDCWD, path, -1, BBX_META_MODE | BBX_META_NOFOLLOW, NULL,
		  BBX_REAL(lchmod)(path, mode));
}

BBX_EXPORT int chown(const char *path, uid_t uid, gid_t gid)
{
	META_BODY("chown", AT_FDCWD, path, -1, BBX_META_OWNER, NULL,
		  BBX_REAL(chown)(path, uid, gid));
}

BBX_EXPORT int fchown(int fd, uid_t uid, gid_t gid)
{
	META_BODY("fchown", AT_FDCWD, NULL, fd, BBX_META_OWNER, NULL,
		  BBX_REAL(fchown)(fd, uid, gid));
}

BBX_EXPORT int lchown(const char *path, uid_t uid, gid_t gid)
{
	META_BODY("lchown", AT_FDCWD, path, -1, BBX_META_OWNER | BBX_META_NOFOLLOW, NULL,
		  BBX_REAL(lchown)(path, uid, gid));
}

BBX_EXPORT int fchownat(int dirfd, const char *path, uid_t uid, gid_t gid, int flags)
{
	META_BODY("fchownat", dirfd, AT_PATH(path, flags), dirfd, BBX_META_OWNER | NOFOLLOW(flags),
		  NULL, BBX_REAL(fchownat)(dirfd, path, uid, gid, flags));
}

BBX_EXPORT int utime(const char *path, const struct utimbuf *t)
{
	META_BODY("utime", AT_FDCWD, path, -1, BBX_META_TIMES, NULL, BBX_REAL(utime)(path, t));
}

BBX_EXPORT int utimes(const char *path, const struct timeval t[2])
{
	META_BODY("utimes", AT_FDCWD, path, -1, BBX_META_TIMES, NULL, BBX_REAL(utimes)(path, t));
}

BBX_EXPORT int lutimes(const char *path, const struct timeval t[2])
{
	META_BODY("lutimes", AT_FDCWD, path, -1, BBX_META_TIMES | BBX_META_NOFOLLOW, NULL,
		  BBX_REAL(lutimes)(path, t));
}

BBX_EXPORT int futimes(int fd, const struct timeval t[2])
{
	META_BODY("futimes", AT_FDCWD, NULL, fd, BBX_META_TIMES, NULL, BBX_REAL(futimes)(fd, t));
}

BBX_EXPORT int futimesat(int dirfd, const char *path, const struct timeval t[2])
{
	META_BODY("futimesat", dirfd, path, dirfd, BBX_META_TIMES, NULL,
		  BBX_REAL(futimesat)(dirfd, path, t));
}

/* utimensat(fd, NULL, ...) is futimens(fd) (glibc and the kernel both allow it). */
BBX_EXPORT int utimensat(int dirfd, const char *path, const struct timespec t[2], int flags)
{
	META_BODY("utimensat", dirfd, path, dirfd, BBX_META_TIMES | NOFOLLOW(flags), NULL,
		  BBX_REAL(utimensat)(dirfd, path, t, flags));
}

BBX_EXPORT int futimens(int fd, const struct timespec t[2])
{
	META_BODY("futimens", AT_FDCWD, NULL, fd, BBX_META_TIMES, NULL, BBX_REAL(futimens)(fd, t));
}

BBX_EXPORT int setxattr(const char *path, const char *name, const void *v, size_t n, int fl)
{
	META_BODY("setxattr", AT_FDCWD, path, -1, BBX_META_XATTR, name,
		  BBX_REAL(setxattr)(path, name, v, n, fl));
}

BBX_EXPORT int lsetxattr(const char *path, const char *name, const void *v, size_t n, int fl)
{
	META_BODY("lsetxattr", AT_FDCWD, path, -1, BBX_META_XATTR | BBX_META_NOFOLLOW, name,
		  BBX_REAL(lsetxattr)(path, name, v, n, fl));
}

BBX_EXPORT int fsetxattr(int fd, const char *name, const void *v, size_t n, int fl)
{
	META_BODY("fsetxattr", AT_FDCWD, NULL, fd, BBX_META_XATTR, name,
		  BBX_REAL(fsetxattr)(fd, name, v, n, fl));
}

BBX_EXPORT int removexattr(const char *path, const char *name)
{
	META_BODY("removexattr", AT_FDCWD, path, -1, BBX_META_XATTR, name,
		  BBX_REAL(removexattr)(path, name));
}

BBX_EXPORT int lremovexattr(const char *path, const char *name)
{
	META_BODY("lremovexattr", AT_FDCWD, path, -1, BBX_META_XATTR | BBX_META_NOFOLLOW, name,
		  BBX_REAL(lremovexattr)(path, name));
}

BBX_EXPORT int fremovexattr(int fd, const char *name)
{
	META_BODY("fremovexattr", AT_FDCWD, NULL, fd, BBX_META_XATTR, name,
		  BBX_REAL(fremovexattr)(fd, name));
}
