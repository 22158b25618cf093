/* SPDX-License-Identifier: MIT
 *
 * sys.h - the OS calls through which the journal writes anything durable.
 *
 * Every write of a record and every byte of a pre-image goes through this table, so a
 * test can make the Nth call fail with a chosen errno (SQLite's aSyscall[] idea) and
 * prove invariant 2 (fail closed): the mutation is refused, nothing is half-recorded.
 * The functions are the raw libc ones (write: the system call itself, sys.c); the shim
 * never wraps write/pwrite/read, and the mutating ones it does wrap are reached here
 * only under its re-entry guard.
 */
#ifndef BBX_SYS_H
#define BBX_SYS_H

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#if !defined(__x86_64__)
#include <errno.h>
#include <unistd.h>
#endif

struct bbx_sys {
	ssize_t (*write)(int fd, const void *buf, size_t n);
	ssize_t (*pwrite)(int fd, const void *buf, size_t n, off_t off);
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

/* A system call made here, by the instruction, not through libc's syscall(): a fork
 * child on its way to exec reaches the code of every libc function it calls through a
 * page fault of its own (the child inherits no page table entries for libc's text), and
 * the shim's few raw calls on that path (getcwd, the stat of the capture) should not
 * each bring one more (issue 5, spawn cost).  Returns the result or -errno, and leaves
 * errno alone. */
static inline long bbx_sys_raw4(long nr, long a, long b, long c, long d)
{
#if defined(__x86_64__)
	long r;
	register long r10 __asm__("r10") = d;
	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return r;
#else
	long r = syscall(nr, a, b, c, d);
	return r == -1 ? -errno : r;
#endif
}

/* Five arguments (e: r8). */
static inline long bbx_sys_raw5(long nr, long a, long b, long c, long d, long e)
{
#if defined(__x86_64__)
	long r;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
			 : "rcx", "r11", "memory");
	return r;
#else
	long r = syscall(nr, a, b, c, d, e);
	return r == -1 ? -errno : r;
#endif
}

/* Six arguments (f: r9): mmap. */
static inline long bbx_sys_raw6(long nr, long a, long b, long c, long d, long e, long f)
{
#if defined(__x86_64__)
	long r;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return r;
#else
	long r = syscall(nr, a, b, c, d, e, f);
	return r == -1 ? -errno : r;
#endif
}

/* madvise(MADV_POPULATE_WRITE) by the instruction: the pages of [p, p + len) mapped
 * writable in one call, where touching them would take a page fault each (20-40 us on
 * the VM of issue 5, the call ~10 a page).  A hint: a kernel before 5.14 refuses the
 * advice, and the pages fault in as they always did. */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
static inline void bbx_sys_populate_write(const void *p, size_t len)
{
	(void)bbx_sys_raw4(SYS_madvise, (long)p, (long)len, MADV_POPULATE_WRITE, 0);
}

/* No read-around for a mapping whose pages are used by hash, not in order: a first
 * fault on a page of the state file (a file of unwritten, preallocated blocks) read
 * around it as much as the device's read_ahead_kb allowed, 8 MiB on the reference VM:
 * the whole file (4 MiB then) allocated and zeroed in the page cache on the run's first
 * touch, ~6 % of a no-op transaction (perf: filemap_fault -> page_cache_ra_order;
 * issue 5).  Advice only: a failure changes nothing else. */
static inline void bbx_sys_random_access(const void *p, size_t len)
{
	(void)bbx_sys_raw4(SYS_madvise, (long)p, (long)len, MADV_RANDOM, 0);
}

/* openat(2) and close(2) by the instruction (the fd or -errno; errno left alone): what
 * opening the run takes in every process that records (its state file, its journal,
 * its directory's proof), where libc's would each be a lazy binding, ~1 k instructions
 * and, deep in the capture's frames, the resolver's saved register state (~2.7 KB of
 * stack here) on a page of its own: a page fault (perf, page faults by address; issue 5). */
static inline int bbx_sys_openat(int dirfd, const char *path, int flags, int mode)
{
	return (int)bbx_sys_raw4(SYS_openat, dirfd, (long)path, flags, mode);
}

static inline void bbx_sys_close(int fd)
{
	(void)bbx_sys_raw4(SYS_close, fd, 0, 0, 0);
}

/* newfstatat(2) by the instruction: 0, or -errno (errno left alone).  fstat is
 * (fd, "", AT_EMPTY_PATH), as glibc makes it. */
static inline int bbx_sys_fstatat(int dirfd, const char *path, struct stat *sb, int flags)
{
	return (int)bbx_sys_raw4(SYS_newfstatat, dirfd, (long)path, (long)sb, flags);
}

#endif
