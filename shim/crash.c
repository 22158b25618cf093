/* SPDX-License-Identifier: MIT
 *
 * crash.c - crash points: the test build of the shim only (shim/libbbxshim-crash.la,
 * built by `make check`, never installed).  Invariant 7 says a run killed at any
 * instant can be undone; this is how the tests choose the instant.
 *
 * A crash point is every place where the shim is about to make a call that can change
 * something: each real function it calls (BBX_REAL, shim.h) and each durable write of
 * the journal, before it and after it (the bbx_sys table, journal/sys.h: a record, a
 * pre-image copied or linked, a sync).  Between two consecutive points the process runs
 * only its own memory, so killing it at every point covers every state of the files a
 * kill at any instant could leave.
 *
 * The run's processes share one counter: an 8-byte file named by BBX_CRASH_COUNTER,
 * mapped shared by each process when it loads the library.  Every point adds one to it;
 * the point that brings it to BBX_CRASH_AT (1 or more) sends SIGKILL to the caller's
 * process group (bbx-run and the whole run, when bbx-run leads its group) and to the
 * caller; with BBX_CRASH_SELF=1, to the caller alone, and the rest of the run goes on
 * (with the journal lock, when the point is inside it, left to its robust recovery).
 * BBX_CRASH_AT=0 only counts, so a first run learns how many points a workload has
 * (tests/e2e/t-crash.sh).  Without BBX_CRASH_COUNTER, or when the file cannot be
 * mapped, nothing counts.  The calls here are raw system calls: no wrapper, no record.
 */
#include "shim.h"
#include "journal/sys.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>

static uint64_t *crash_ctr;
static uint64_t crash_at;
static int crash_self;
static struct bbx_sys crash_real;

void bbx_crashpoint(void)
{
	uint64_t *c = __atomic_load_n(&crash_ctr, __ATOMIC_ACQUIRE);
	if (!c)
		return;
	uint64_t n = __atomic_add_fetch(c, 1, __ATOMIC_SEQ_CST);
	if (crash_at && n == crash_at) {
		int e = errno;
		if (!crash_self)
			bbx_sys_raw4(SYS_kill, 0, SIGKILL, 0, 0);
		bbx_sys_raw4(SYS_kill, bbx_sys_raw4(SYS_getpid, 0, 0, 0, 0), SIGKILL, 0, 0);
		errno = e; /* not reached */
	}
}

/* The journal's durable calls, each between two points (errno kept across the second). */
#define AROUND(type, call)                                                                  \
	bbx_crashpoint();                                                                   \
	type r_ = call;                                                                     \
	int e_ = errno;                                                                     \
	bbx_crashpoint();                                                                   \
	errno = e_;                                                                         \
	return r_

static ssize_t c_write(int fd, const void *buf, size_t n)
{
	AROUND(ssize_t, crash_real.write(fd, buf, n));
}

static ssize_t c_pwrite(int fd, const void *buf, size_t n, off_t off)
{
	AROUND(ssize_t, crash_real.pwrite(fd, buf, n, off));
}

static ssize_t c_copy_file_range(int in, off_t *inoff, int out, off_t *outoff, size_t n,
				 unsigned flags)
{
	AROUND(ssize_t, crash_real.copy_file_range(in, inoff, out, outoff, n, flags));
}

static int c_linkat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
		    int flags)
{
	AROUND(int, crash_real.linkat(olddirfd, oldpath, newdirfd, newpath, flags));
}

static int c_fdatasync(int fd) { AROUND(int, crash_real.fdatasync(fd)); }
static int c_fsync(int fd) { AROUND(int, crash_real.fsync(fd)); }

__attribute__((constructor)) static void crash_init(void)
{
	const char *path = getenv("BBX_CRASH_COUNTER");
	const char *at = getenv("BBX_CRASH_AT");
	if (!path || !*path)
		return;
	long fd = bbx_sys_raw4(SYS_openat, AT_FDCWD, (long)path, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0)
		return;
	long m = bbx_sys_raw6(SYS_mmap, 0, sizeof(uint64_t), PROT_READ | PROT_WRITE,
			      MAP_SHARED, fd, 0);
	bbx_sys_raw4(SYS_close, fd, 0, 0, 0);
	if (m < 0 && m > -4096)
		return;
	crash_at = at ? strtoull(at, NULL, 10) : 0;
	const char *self = getenv("BBX_CRASH_SELF");
	crash_self = self && *self == '1';
	crash_real = bbx_sys;
	bbx_sys.write = c_write;
	bbx_sys.pwrite = c_pwrite;
	bbx_sys.copy_file_range = c_copy_file_range;
	bbx_sys.linkat = c_linkat;
	bbx_sys.fdatasync = c_fdatasync;
	bbx_sys.fsync = c_fsync;
	__atomic_store_n(&crash_ctr, (uint64_t *)m, __ATOMIC_RELEASE);
}
