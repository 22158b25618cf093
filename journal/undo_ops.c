/* SPDX-License-Identifier: MIT
 *
 * undo_ops.c - journaled primitives for bbx-undo (see undo_ops.h).  Each captures into
 * the undo's run with the same functions the shim uses, then acts.
 */
#include "undo_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#define OP "bbx-undo"

int bbx_uop_unlink(struct bbx_uops *u, const char *path)
{
	if (u->dry_run)
		return 0;
	int rc = bbx_cap_remove(u->run, OP, path);
	if (rc)
		return rc;
	return unlink(path) < 0 ? -errno : 0;
}

int bbx_uop_rmdir(struct bbx_uops *u, const char *path)
{
	if (u->dry_run)
		return 0;
	int rc = bbx_cap_remove(u->run, OP, path);
	if (rc)
		return rc;
	return rmdir(path) < 0 ? -errno : 0;
}

int bbx_uop_rename(struct bbx_uops *u, const char *from, const char *to, unsigned flags)
{
	if (u->dry_run)
		return 0;
	int rc = bbx_cap_rename(u->run, OP, from, to, flags);
	if (rc)
		return rc;
	return renameat2(AT_FDCWD, from, AT_FDCWD, to, flags) < 0 ? -errno : 0;
}

/* CREATE, the creating call, RESULT. */
#define CREATE_OP(path, kind, mode, target, call)                                           \
	do {                                                                                \
		if (u->dry_run)                                                             \
			return 0;                                                           \
		struct bbx_pending p_ = {0};                                                \
		int rc_ = bbx_cap_create(u->run, OP, (path), (kind), (mode), (target), &p_); \
		if (rc_)                                                                    \
			return rc_;                                                         \
		int r_ = (call);                                                            \
		int e_ = errno;                                                             \
		bbx_cap_done(u->run, OP, &p_, r_, e_, -1);                                  \
		return r_ < 0 ? -e_ : 0;                                                    \
	} while (0)

int bbx_uop_unlink_alias(struct bbx_uops *u, const char *path, const char *other)
{
	if (u->dry_run)
		return 0;
	int rc = bbx_cap_remove_alias(u->run, OP, path, other);
	if (rc)
		return rc;
	return unlink(path) < 0 ? -errno : 0;
}

int bbx_uop_link(struct bbx_uops *u, const char *existing, const char *path)
{
	CREATE_OP(path, BBX_KIND_HARDLINK, 0, existing, link(existing, path));
}

int bbx_uop_mkdir(struct bbx_uops *u, const char *path, mode_t mode)
{
	CREATE_OP(path, BBX_KIND_DIR, mode, NULL, mkdir(path, mode));
}

int bbx_uop_symlink(struct bbx_uops *u, const char *target, size_t tlen, const char *path)
{
	char t[PATH_MAX];
	if (tlen >= sizeof t)
		return -ENAMETOOLONG;
	memcpy(t, target, tlen);
	t[tlen] = 0;
	CREATE_OP(path, BBX_KIND_SYMLINK, 0777, t, symlink(t, path));
}

int bbx_uop_mknod(struct bbx_uops *u, const char *path, mode_t mode, dev_t rdev)
{
	CREATE_OP(path, bbx_kind_of_mode(mode), mode, NULL, mknod(path, mode, rdev));
}

/* len bytes at off of in into out, from its start; -EIO if in ends before them (an
 * object shorter than its record says: nothing short is ever restored as complete). */
static int fill_range(int in, int out, uint64_t off, uint64_t len)
{
	off_t ioff = (off_t)off, ooff = 0;
	uint64_t got;
	int rc = bbx_copy_range(in, &ioff, out, &ooff, len, &got);
	return rc ? rc : got < len ? -EIO : 0;
}

/* Content from obj into out: a whole object by reflink where possible, else
 * copy_file_range; a packed range by copy.  A new inode (xattrs: 1) made from a whole
 * object also gets the object's extended attributes. */
static int fill(int out, const char *obj, uint64_t off, uint64_t len, int xattrs)
{
	int in = open(obj, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	int rc = 0;
	if (len != BBX_UOP_WHOLE) {
		rc = fill_range(in, out, off, len);
	} else {
		if (xattrs)
			bbx_copy_xattrs(in, out);
		if (ioctl(out, FICLONE, in) < 0) {
			struct stat sb;
			rc = fstat(in, &sb) < 0 ? -errno : fill_range(in, out, 0, (uint64_t)sb.st_size);
		}
	}
	close(in);
	return rc;
}

int bbx_uop_copy_new(struct bbx_uops *u, const char *obj, uint64_t off, uint64_t len,
		     const char *path)
{
	if (u->dry_run)
		return 0;
	struct bbx_pending p = {0};
	int rc = bbx_cap_create(u->run, OP, path, BBX_KIND_FILE, 0600, NULL, &p);
	if (rc)
		return rc;
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	int e = errno;
	bbx_cap_done(u->run, OP, &p, fd, e, fd);
	if (fd < 0)
		return -e;
	rc = fill(fd, obj, off, len, 1);
	if (close(fd) < 0 && !rc)
		rc = -errno;
	return rc;
}

int bbx_uop_copy_into(struct bbx_uops *u, const char *obj, uint64_t off, uint64_t len,
		      const char *path)
{
	if (u->dry_run)
		return 0;
	char resolved[PATH_MAX];
	struct bbx_pending p = {0};
	int rc = bbx_cap_open(u->run, OP, path, O_WRONLY | O_TRUNC, 0, resolved, &p);
	if (rc)
		return rc;
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	rc = fill(fd, obj, off, len, 0);
	if (close(fd) < 0 && !rc)
		rc = -errno;
	return rc;
}

int bbx_uop_truncate(struct bbx_uops *u, const char *path, off_t len)
{
	if (u->dry_run)
		return 0;
	int rc = bbx_cap_resize(u->run, OP, path, -1, len, 0);
	if (rc)
		return rc;
	return truncate(path, len) < 0 ? -errno : 0;
}

int bbx_uop_setmeta(struct bbx_uops *u, const char *path, const struct bbx_stat *st,
		    int nofollow, int set_mode, int set_owner)
{
	if (u->dry_run)
		return 0;
	struct stat cur;
	if ((nofollow ? lstat(path, &cur) : stat(path, &cur)) < 0)
		return -errno;
	int chg_mode = set_mode && !S_ISLNK(cur.st_mode) &&
		       (cur.st_mode & 07777) != (st->mode & 07777);
	int chg_owner = set_owner && (cur.st_uid != st->uid || cur.st_gid != st->gid);
	int flag = nofollow ? AT_SYMLINK_NOFOLLOW : 0;
	uint32_t mask = BBX_META_TIMES | (chg_mode ? BBX_META_MODE : 0) |
			(chg_owner ? BBX_META_OWNER : 0) | (nofollow ? BBX_META_NOFOLLOW : 0);
	int rc = bbx_cap_meta(u->run, OP, path, -1, mask, NULL);
	if (rc)
		return rc;
	int owner_rc = 0;
	/* Owner first: chown clears set-id bits that the mode then puts back. */
	if (chg_owner && fchownat(AT_FDCWD, path, st->uid, st->gid, flag) < 0)
		owner_rc = errno == EPERM ? -EPERM : -errno;
	if (chg_mode && fchmodat(AT_FDCWD, path, st->mode & 07777, 0) < 0)
		return -errno;
	struct timespec ts[2] = {{st->atime_sec, st->atime_nsec}, {st->mtime_sec, st->mtime_nsec}};
	if (utimensat(AT_FDCWD, path, ts, flag) < 0)
		return -errno;
	return owner_rc;
}

int bbx_uop_xattr(struct bbx_uops *u, const char *path, const char *name, const void *val,
		  size_t len, int present, int nofollow)
{
	if (u->dry_run)
		return 0;
	int rc = bbx_cap_meta(u->run, OP, path, -1,
			      BBX_META_XATTR | (nofollow ? BBX_META_NOFOLLOW : 0), name);
	if (rc)
		return rc;
	int r;
	if (present)
		r = nofollow ? lsetxattr(path, name, val, len, 0) : setxattr(path, name, val, len, 0);
	else {
		r = nofollow ? lremovexattr(path, name) : removexattr(path, name);
		if (r < 0 && errno == ENODATA)
			r = 0;
	}
	return r < 0 ? -errno : 0;
}

int bbx_uop_conflict_name(const char *path, char *out, size_t cap)
{
	struct stat sb;
	for (int i = 0; i < 1000; i++) {
		int n = i ? snprintf(out, cap, "%s.bbx-conflict.%d", path, i)
			  : snprintf(out, cap, "%s.bbx-conflict", path);
		if (n < 0 || (size_t)n >= cap)
			return -ENAMETOOLONG;
		if (lstat(out, &sb) < 0 && errno == ENOENT)
			return 0;
	}
	return -EEXIST;
}

int bbx_uop_keep_copy(struct bbx_uops *u, const char *path, char *kept, size_t cap)
{
	struct stat sb;
	if (lstat(path, &sb) < 0)
		return -errno;
	int rc = bbx_uop_conflict_name(path, kept, cap);
	if (rc || u->dry_run)
		return rc;
	struct bbx_stat st;
	bbx_stat_from(&st, &sb);
	if (S_ISLNK(sb.st_mode)) {
		char t[PATH_MAX];
		ssize_t n = readlink(path, t, sizeof t);
		if (n < 0)
			return -errno;
		return bbx_uop_symlink(u, t, (size_t)n, kept);
	}
	if (!S_ISREG(sb.st_mode))
		return bbx_uop_rename(u, path, kept, 0);
	if ((rc = bbx_uop_copy_new(u, path, 0, BBX_UOP_WHOLE, kept)))
		return rc;
	rc = bbx_uop_setmeta(u, kept, &st, 0, 1, 1);
	return rc == -EPERM ? 0 : rc;
}
