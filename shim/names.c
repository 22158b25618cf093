/* SPDX-License-Identifier: MIT
 *
 * names.c - calls that add, remove or move directory entries: unlink, unlinkat, remove,
 * rmdir, rename, renameat, renameat2, link, linkat, symlink, symlinkat, mkdir, mkdirat,
 * mknod, mknodat, mkfifo, mkfifoat.
 *
 * Removal and rename-over keep the old inode by a hard link into objects/ (O(1));
 * creations record a CREATE, then a RESULT naming the new inode so undo removes only
 * what this run made.
 */
#include "shim.h"

#include <stdio.h>
#include <unistd.h>

/* Guard held: absolute path, then the capture of a name about to disappear. */
static int cap_remove_at(const char *op, int dirfd, const char *path)
{
	int rc = bbx_path_abs(dirfd, path, bbx_tp.a, PATH_MAX);
	if (rc)
		return rc;
	if (path[0] != '/')
		bbx_at_set(dirfd, path, bbx_tp.a); /* stat and link it the way the call names it */
	return bbx_cap_remove(&bbx_run, op, bbx_tp.a);
}

#define REMOVE_BODY(opname, dirfd, path, realcall)                                          \
	BBX_CAPTURE_THEN_CALL(opname, cap_remove_at(opname, dirfd, path), realcall)

/* After a call that may have changed which directory a path reaches (a directory
 * removed or renamed): the run's proofs of directory names made meanwhile, by any
 * process, are void (journal/capture.h, bbx_dname).  The capture raised the generation
 * before the call too. */
static inline int ns_after(int r)
{
	bbx_nsgen_bump();
	return r;
}

/* The same after a rename, unless its capture found that it moves no directory
 * (bbx_cap_rename_keeps_dirs: a file renamed over a file).  The mark is taken whatever
 * happens, so a rename made without a capture (inside the shim, with the guard held)
 * bumps. */
static inline int ns_after_rename(int r)
{
	if (!bbx_cap_rename_keeps_dirs)
		bbx_nsgen_bump();
	bbx_cap_rename_keeps_dirs = 0;
	return r;
}

BBX_EXPORT int unlink(const char *path)
{
	REMOVE_BODY("unlink", AT_FDCWD, path, BBX_REAL(unlink)(path));
}

BBX_EXPORT int unlinkat(int dirfd, const char *path, int flags)
{
	if (flags & AT_REMOVEDIR)
		REMOVE_BODY("unlinkat", dirfd, path, ns_after(BBX_REAL(unlinkat)(dirfd, path, flags)));
	REMOVE_BODY("unlinkat", dirfd, path, BBX_REAL(unlinkat)(dirfd, path, flags));
}

BBX_EXPORT int remove(const char *path)
{
	REMOVE_BODY("remove", AT_FDCWD, path, ns_after(BBX_REAL(remove)(path)));
}

BBX_EXPORT int rmdir(const char *path)
{
	REMOVE_BODY("rmdir", AT_FDCWD, path, ns_after(BBX_REAL(rmdir)(path)));
}

static int cap_rename_at(const char *op, int ofd, const char *from, int nfd, const char *to,
			 unsigned flags)
{
	int rc = bbx_path_abs(ofd, from, bbx_tp.a, PATH_MAX);
	if (!rc)
		rc = bbx_path_abs(nfd, to, bbx_tp.b, PATH_MAX);
	if (rc)
		return rc;
	if (from[0] != '/')
		bbx_at_set(ofd, from, bbx_tp.a);
	if (to[0] != '/')
		bbx_at_set(nfd, to, bbx_tp.b);
	return bbx_cap_rename(&bbx_run, op, bbx_tp.a, bbx_tp.b, flags);
}

#define RENAME_BODY(opname, ofd, from, nfd, to, flags, realcall)                           \
	BBX_CAPTURE_THEN_CALL(opname, cap_rename_at(opname, ofd, from, nfd, to, flags), realcall)

BBX_EXPORT int rename(const char *from, const char *to)
{
	RENAME_BODY("rename", AT_FDCWD, from, AT_FDCWD, to, 0,
		    ns_after_rename(BBX_REAL(rename)(from, to)));
}

BBX_EXPORT int renameat(int ofd, const char *from, int nfd, const char *to)
{
	RENAME_BODY("renameat", ofd, from, nfd, to, 0,
		    ns_after_rename(BBX_REAL(renameat)(ofd, from, nfd, to)));
}

BBX_EXPORT int renameat2(int ofd, const char *from, int nfd, const char *to, unsigned flags)
{
	RENAME_BODY("renameat2", ofd, from, nfd, to, flags,
		    ns_after_rename(BBX_REAL(renameat2)(ofd, from, nfd, to, flags)));
}

/* Body for calls that create one name.  check: 0 or -errno, a refusal decided before
 * anything is recorded, in the same guarded call; capture: the capture's call (pend_
 * its pending creation, bbx_tp.a the new name made absolute). */
#define NAME_BODY(opname, dirfd, path, check, capture, realcall)                             \
	do {                                                                                \
		int saved_;                                                                 \
		if (!bbx_enter(&saved_))                                                    \
			return realcall;                                                    \
		struct bbx_pending pend_ = {0};                                             \
		int rc_ = (check);                                                          \
		if (!rc_)                                                                   \
			rc_ = bbx_usable_mut();                                             \
		if (!rc_)                                                                   \
			rc_ = bbx_path_abs((dirfd), (path), bbx_tp.a, PATH_MAX);            \
		if (!rc_ && (path)[0] != '/')                                               \
			bbx_at_set((dirfd), (path), bbx_tp.a);                              \
		if (!rc_)                                                                   \
			rc_ = (capture);                                                    \
		if (rc_)                                                                    \
			return bbx_refuse(rc_);                                             \
		unsigned gen_ = bbx_call_begin(saved_);                                     \
		int r_ = realcall;                                                          \
		int e_ = errno;                                                             \
		if (bbx_call_end(gen_))                                                     \
			pend_.path = NULL; /* scratch reused by a signal handler */        \
		else if (r_ == 0 && pend_.path && (path)[0] != '/')                         \
			bbx_at_set((dirfd), (path), pend_.path); /* the RESULT's lstat */  \
		bbx_cap_done(&bbx_run, opname, &pend_, r_, e_, -1);                         \
		bbx_leave(r_ < 0 ? e_ : saved_);                                            \
		return r_;                                                                  \
	} while (0)

/* An existing name makes the call fail with EEXIST, so nothing is recorded for it
 * (mkdir -p walks existing directories). */
static int create_if_absent(const char *op, int kind, mode_t mode, const char *target,
			    struct bbx_pending *pend)
{
	struct stat sb;
	return bbx_k_lstat(bbx_tp.a, &sb) < 0
		       ? bbx_cap_create(&bbx_run, op, bbx_tp.a, kind, mode, target, pend)
		       : 0;
}

#define CREATE_BODY(opname, dirfd, path, kind, mode, target, realcall)                      \
	NAME_BODY(opname, dirfd, path, 0, create_if_absent(opname, kind, mode, target, &pend_), \
		  realcall)

static int node_kind(mode_t mode)
{
	int k = bbx_kind_of_mode(mode);
	return k == BBX_KIND_NONE ? BBX_KIND_FILE : k;
}

BBX_EXPORT int mkdir(const char *path, mode_t mode)
{
	CREATE_BODY("mkdir", AT_FDCWD, path, BBX_KIND_DIR, mode, NULL, BBX_REAL(mkdir)(path, mode));
}

BBX_EXPORT int mkdirat(int dirfd, const char *path, mode_t mode)
{
	CREATE_BODY("mkdirat", dirfd, path, BBX_KIND_DIR, mode, NULL,
		    BBX_REAL(mkdirat)(dirfd, path, mode));
}

BBX_EXPORT int mknod(const char *path, mode_t mode, dev_t dev)
{
	CREATE_BODY("mknod", AT_FDCWD, path, node_kind(mode), mode, NULL,
		    BBX_REAL(mknod)(path, mode, dev));
}

BBX_EXPORT int mknodat(int dirfd, const char *path, mode_t mode, dev_t dev)
{
	CREATE_BODY("mknodat", dirfd, path, node_kind(mode), mode, NULL,
		    BBX_REAL(mknodat)(dirfd, path, mode, dev));
}

BBX_EXPORT int mkfifo(const char *path, mode_t mode)
{
	CREATE_BODY("mkfifo", AT_FDCWD, path, BBX_KIND_FIFO, mode, NULL,
		    BBX_REAL(mkfifo)(path, mode));
}

BBX_EXPORT int mkfifoat(int dirfd, const char *path, mode_t mode)
{
	CREATE_BODY("mkfifoat", dirfd, path, BBX_KIND_FIFO, mode, NULL,
		    BBX_REAL(mkfifoat)(dirfd, path, mode));
}

BBX_EXPORT int symlink(const char *target, const char *path)
{
	CREATE_BODY("symlink", AT_FDCWD, path, BBX_KIND_SYMLINK, 0777, target,
		    BBX_REAL(symlink)(target, path));
}

BBX_EXPORT int symlinkat(const char *target, int dirfd, const char *path)
{
	CREATE_BODY("symlinkat", dirfd, path, BBX_KIND_SYMLINK, 0777, target,
		    BBX_REAL(symlinkat)(target, dirfd, path));
}

/* The link source, absolute (it is recorded, and checked against the journal). */
static const char *abs_source(int ofd, const char *old, int flags)
{
	char *out = bbx_tp.c;
	int rc = (flags & AT_EMPTY_PATH) && !*old ? bbx_path_fd(ofd, out, PATH_MAX)
						   : bbx_path_abs(ofd, old, out, PATH_MAX);
	return rc ? old : out;
}

/* A hard link to a deny_read object is a second name for it, readable where the first
 * is not: linking is decided as a read of the source (words, then identity), before
 * anything is recorded.  The source's identity then goes into pend: the link's RESULT
 * needs no lstat of the new name (bbx_cap_link).  Guard held.  0 or -errno (EACCES; 0
 * in audit mode, with the DENY record). */
static int link_source_readable(const char *op, int ofd, const char *old, int flags,
				struct bbx_pending *pend)
{
	if (!bbx_reads_policed())
		return 0;
	char abs[PATH_MAX];
	int rc = bbx_path_abs(ofd, old, abs, sizeof abs) ? 0 : bbx_read_pre(op, abs);
	struct stat sb;
	int stflags = (flags & AT_EMPTY_PATH) | (flags & AT_SYMLINK_FOLLOW ? 0 : AT_SYMLINK_NOFOLLOW);
	if (!rc && fstatat(ofd, old, &sb, stflags) == 0) {
		rc = bbx_read_post(op, abs, -1, &sb);
		pend->dev = sb.st_dev, pend->ino = sb.st_ino;
	}
	return rc;
}

/* link(2) fails on any existing name by itself: the new name is not looked up first
 * (CREATE how=excl, as mkstemp's; journal-format.md 5.3). */
#define LINK_BODY(opname, ofd, old, nfd, path, flags, realcall)                              \
	NAME_BODY(opname, nfd, path, link_source_readable(opname, ofd, old, flags, &pend_),    \
		  bbx_cap_link(&bbx_run, opname, bbx_tp.a, abs_source(ofd, old, flags), &pend_), \
		  realcall)

BBX_EXPORT int link(const char *old, const char *path)
{
	LINK_BODY("link", AT_FDCWD, old, AT_FDCWD, path, 0, BBX_REAL(link)(old, path));
}

BBX_EXPORT int linkat(int ofd, const char *old, int nfd, const char *path, int flags)
{
	LINK_BODY("linkat", ofd, old, nfd, path, flags,
		  BBX_REAL(linkat)(ofd, old, nfd, path, flags));
}
