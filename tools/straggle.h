/* SPDX-License-Identifier: MIT
 *
 * straggle.h - the files a run's remaining processes hold open for writing when its
 * command ends (straggle.c; bbx-run, which must be the run's child subreaper).
 */
#ifndef BBX_STRAGGLE_H
#define BBX_STRAGGLE_H

#include "journal/undo.h"

#include <stddef.h>

/* Every regular file this process's descendants hold open for writing or map shared
 * and writable, once each (device and inode), in *out (malloc'd, NULL when none);
 * returns their count.  *nprocs (if not NULL) gets the number of descendants looked
 * at.  Call it after the command was reaped: its descendants are then the run's
 * processes that outlived it. */
size_t bbx_stragglers_held(struct bbx_held **out, size_t *nprocs);

#endif
