/* SPDX-License-Identifier: MIT
 *
 * sys.h - the OS calls through which the journal writes anything durable.
 *
 * Every write of a record and every byte of a pre-image goes through this table, so a
 * test can make the Nth call fail with a chosen errno (SQLite's aSyscall[] idea) and
 * prove invariant 2 (fail closed): the mutation is refused, nothing is half-recorded.
 * The functions are the raw libc ones; the shim never wraps write/pwrite/read, and
 * the mutating ones it does wrap are reached here only under its re-entry guard.
 */
#ifndef BBX_SYS_H
#define BBX_SYS_H

#include <sys/types.h>

struct bbx_sys {
	ssize_t (*write)(int fd, const void *buf, size_t n);
	ssize_t (*copy_file_range)(int in, off_t *inoff, int out, off_t *outoff, size_t n,
				   unsigned flags);
	int (*linkat)(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
		      int flags);
	/* [journal] sync = group | always: the journal (fdatasync), objects and their
	 * directories (fsync). */
	int (*fdatasync)(int fd);
	int (*fsync)(int fd);
};

extern struct bbx_sys bbx_sys;

#endif
