/* SPDX-License-Identifier: MIT
 *
 * syscall.c - syscall(): the numbers that mutate files, start programs, connect, change
 * directory, close descriptors, or read what deny_read guards (stat, statx, readlink,
 * openat2) are handed to our own
 * wrappers of the libc functions that issue them (same arguments,
 * same -1/errno convention), so a program that calls syscall(SYS_unlink, p) is
 * journaled and decided like one that calls unlink(p).  io_uring_setup is refused with
 * ENOSYS: io_uring submits file operations the shim would never see, and libuv and
 * others fall back to ordinary calls.  Every other number passes through untouched,
 * with all six argument registers (DESIGN.md, Coverage).
 */
#include "shim.h"

#include <stdarg.h>
#include <sys/syscall.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <unistd.h>

#define A(i) ((long)a[i])
#define P(i) ((const char *)a[i])

BBX_EXPORT long syscall(long nr, ...)
{
	va_list ap;
	va_start(ap, nr);
	unsigned long a[6];
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, unsigned long);
	va_end(ap);
	if (bbx_guard)
		return BBX_REAL(syscall)(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	switch (nr) {
	case SYS_exit_group:
	case SYS_exit:
		bbx_flush_pending(); /* then the call itself, below */
		break;
	case SYS_io_uring_setup: {
		int saved;
		if (bbx_enter(&saved)) {
			const struct bbx_pol_hdr *p = bbx_policy();
			if (p && !bbx_usable())
				bbx_cap_note(&bbx_run, "syscall", NULL,
					     "io_uring_setup refused with ENOSYS");
			bbx_leave(saved);
		}
		errno = ENOSYS;
		return -1;
	}
	/* The working directory: its wrappers keep the name held for it honest (cwd.c). */
	case SYS_chdir: return chdir(P(0));
	case SYS_fchdir: return fchdir((int)A(0));
	case SYS_setns: return setns((int)A(0), (int)A(1));
	/* Closes and replacements: their wrappers forget descriptor marks (fd.c). */
	case SYS_close: return close((int)A(0));
	case SYS_dup: return dup((int)A(0));
	case SYS_dup2: return dup2((int)A(0), (int)A(1));
	case SYS_dup3: return dup3((int)A(0), (int)A(1), (int)A(2));
	case SYS_close_range: return close_range((unsigned)A(0), (unsigned)A(1), (int)A(2));
	case SYS_open: return open(P(0), (int)A(1), (mode_t)A(2));
	case SYS_openat: return openat((int)A(0), P(1), (int)A(2), (mode_t)A(3));
	case SYS_creat: return creat(P(0), (mode_t)A(1));
	case SYS_unlink: return unlink(P(0));
	case SYS_unlinkat: return unlinkat((int)A(0), P(1), (int)A(2));
	case SYS_rmdir: return rmdir(P(0));
	case SYS_rename: return rename(P(0), P(1));
	case SYS_renameat: return renameat((int)A(0), P(1), (int)A(2), P(3));
	case SYS_renameat2: return renameat2((int)A(0), P(1), (int)A(2), P(3), (unsigned)A(4));
	case SYS_mkdir: return mkdir(P(0), (mode_t)A(1));
	case SYS_mkdirat: return mkdirat((int)A(0), P(1), (mode_t)A(2));
	case SYS_mknod: return mknod(P(0), (mode_t)A(1), (dev_t)A(2));
	case SYS_mknodat: return mknodat((int)A(0), P(1), (mode_t)A(2), (dev_t)A(3));
	case SYS_link: return link(P(0), P(1));
	case SYS_linkat: return linkat((int)A(0), P(1), (int)A(2), P(3), (int)A(4));
	case SYS_symlink: return symlink(P(0), P(1));
	case SYS_symlinkat: return symlinkat(P(0), (int)A(1), P(2));
	case SYS_truncate: return truncate(P(0), (off_t)A(1));
	case SYS_ftruncate: return ftruncate((int)A(0), (off_t)A(1));
	case SYS_fallocate: return fallocate((int)A(0), (int)A(1), (off_t)A(2), (off_t)A(3));
	case SYS_chmod: return chmod(P(0), (mode_t)A(1));
	case SYS_fchmod: return fchmod((int)A(0), (mode_t)A(1));
	case SYS_fchmodat: return fchmodat((int)A(0), P(1), (mode_t)A(2), 0);
	case SYS_chown: return chown(P(0), (uid_t)A(1), (gid_t)A(2));
	case SYS_lchown: return lchown(P(0), (uid_t)A(1), (gid_t)A(2));
	case SYS_fchown: return fchown((int)A(0), (uid_t)A(1), (gid_t)A(2));
	case SYS_fchownat: return fchownat((int)A(0), P(1), (uid_t)A(2), (gid_t)A(3), (int)A(4));
	case SYS_utimensat:
		return utimensat((int)A(0), P(1), (const struct timespec *)a[2], (int)A(3));
	case SYS_setxattr:
		return setxattr(P(0), P(1), (const void *)a[2], (size_t)A(3), (int)A(4));
	case SYS_lsetxattr:
		return lsetxattr(P(0), P(1), (const void *)a[2], (size_t)A(3), (int)A(4));
	case SYS_fsetxattr:
		return fsetxattr((int)A(0), P(1), (const void *)a[2], (size_t)A(3), (int)A(4));
	case SYS_removexattr: return removexattr(P(0), P(1));
	case SYS_lremovexattr: return lremovexattr(P(0), P(1));
	case SYS_fremovexattr: return fremovexattr((int)A(0), P(1));
	case SYS_execve:
		return execve(P(0), (char *const *)a[1], (char *const *)a[2]);
	case SYS_execveat:
		return execveat((int)A(0), P(1), (char *const *)a[2], (char *const *)a[3],
				(int)A(4));
	case SYS_connect:
		return connect((int)A(0), (const struct sockaddr *)a[1], (socklen_t)A(2));
	case SYS_sendto:
		return sendto((int)A(0), (const void *)a[1], (size_t)A(2), (int)A(3),
			      (const struct sockaddr *)a[4], (socklen_t)A(5));
	case SYS_sendmsg:
		return sendmsg((int)A(0), (const struct msghdr *)a[1], (int)A(2));
	case SYS_sendmmsg:
		return sendmmsg((int)A(0), (struct mmsghdr *)a[1], (unsigned)A(2), (int)A(3));
	case SYS_bind:
		return bind((int)A(0), (const struct sockaddr *)a[1], (socklen_t)A(2));
	/* reads a deny_read policy decides */
	case SYS_newfstatat:
		return fstatat((int)A(0), P(1), (struct stat *)a[2], (int)A(3));
	case SYS_stat: return stat(P(0), (struct stat *)a[1]);
	case SYS_lstat: return lstat(P(0), (struct stat *)a[1]);
	case SYS_statx:
		return statx((int)A(0), P(1), (int)A(2), (unsigned)A(3), (struct statx *)a[4]);
	case SYS_readlink: return readlink(P(0), (char *)a[1], (size_t)A(2));
	case SYS_readlinkat: return readlinkat((int)A(0), P(1), (char *)a[2], (size_t)A(3));
	case SYS_openat2: {
		/* glibc 2.36 has no openat2(): programs reach it only here.  Without RESOLVE_*
		 * flags it is openat; with them the shim could not honour both the flags and
		 * its own resolution, so it answers ENOSYS, which every caller of openat2
		 * already handles (older kernels) by falling back to openat. */
		const struct open_how *how = (const struct open_how *)a[2];
		if (!how || (size_t)A(3) < sizeof *how) {
			errno = EINVAL;
			return -1;
		}
		if (how->resolve) {
			errno = ENOSYS;
			return -1;
		}
		return openat((int)A(0), P(1), (int)how->flags, (mode_t)how->mode);
	}
	}
	return BBX_REAL(syscall)(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
