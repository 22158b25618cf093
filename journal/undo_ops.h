/* SPDX-License-Identifier: MIT
 *
 * undo_ops.h - the filesystem operations bbx-undo performs, each journaled into the
 * undo's own run before it happens (invariant 3: the undo can be undone).  Same
 * contract as capture.h: 0 or -errno; on a capture error the operation is not done.
 * With dry_run set nothing is changed or journaled.
 */
#ifndef BBX_UNDO_OPS_H
#define BBX_UNDO_OPS_H

#include "capture.h"

#include <sys/types.h>

struct bbx_uops {
	struct bbx_run *run; /* the undo's journal (NULL in dry-run) */
	int dry_run;
};

int bbx_uop_unlink(struct bbx_uops *u, const char *path);
int bbx_uop_rmdir(struct bbx_uops *u, const char *path);
int bbx_uop_rename(struct bbx_uops *u, const char *from, const char *to, unsigned flags);
/* Removes path, another name of an inode that survives as other (keeps no object). */
int bbx_uop_unlink_alias(struct bbx_uops *u, const char *path, const char *other);
/* A new name path for the inode at existing. */
int bbx_uop_link(struct bbx_uops *u, const char *existing, const char *path);
int bbx_uop_mkdir(struct bbx_uops *u, const char *path, mode_t mode);
int bbx_uop_symlink(struct bbx_uops *u, const char *target, size_t tlen, const char *path);
int bbx_uop_mknod(struct bbx_uops *u, const char *path, mode_t mode, dev_t rdev);
/* Where a pre-image's bytes are: the whole of obj (len = BBX_UOP_WHOLE; a new inode
 * made from it also gets obj's extended attributes), or len bytes at off of obj (a
 * packed pre-image, PRESERVE how=packed: the file had none). */
#define BBX_UOP_WHOLE UINT64_MAX
/* Creates path (must not exist) with obj's content and mode 0600. */
int bbx_uop_copy_new(struct bbx_uops *u, const char *obj, uint64_t off, uint64_t len,
		     const char *path);
/* Rewrites the existing regular file path in place with obj's content. */
int bbx_uop_copy_into(struct bbx_uops *u, const char *obj, uint64_t off, uint64_t len,
		      const char *path);
int bbx_uop_truncate(struct bbx_uops *u, const char *path, off_t len);
/* Sets mode, owner and times from st; nofollow acts on a symlink itself.  Returns 0,
 * or -EPERM when only the owner could not be set (reported, not fatal). */
int bbx_uop_setmeta(struct bbx_uops *u, const char *path, const struct bbx_stat *st,
		    int nofollow, int set_mode, int set_owner);
int bbx_uop_xattr(struct bbx_uops *u, const char *path, const char *name, const void *val,
		  size_t len, int present, int nofollow);
/* A free name beside path for a conflict copy: path.bbx-conflict[.N]. */
int bbx_uop_conflict_name(const char *path, char *out, size_t cap);
/* Copies path's current version (file or symlink) beside it as a conflict. */
int bbx_uop_keep_copy(struct bbx_uops *u, const char *path, char *kept, size_t cap);

#endif
