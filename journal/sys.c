/* SPDX-License-Identifier: MIT
 * sys.c - the default OS call table (see sys.h). */
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* write(2) by the instruction: the record of a fork child's exec is written before the
 * exec, and libc's write would be one more page of libc's text for that child to fault
 * in (issue 5, spawn cost).  Not a cancellation point, unlike libc's: a record is not
 * left half-written by pthread_cancel. */
static ssize_t raw_write(int fd, const void *buf, size_t len)
{
	long r = bbx_sys_raw4(SYS_write, fd, (long)buf, (long)len, 0);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* pwrite(2) likewise: into the run's shared object, never through a wrapper. */
static ssize_t raw_pwrite(int fd, const void *buf, size_t len, off_t off)
{
	long r = bbx_sys_raw4(SYS_pwrite64, fd, (long)buf, (long)len, (long)off);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* fdatasync(2) and fsync(2) likewise: a pointer to libc's in this table was resolved
 * when the object was loaded, a symbol lookup through every library of the process
 * (~600 instructions each, more in a program with many libraries) in every process,
 * for calls made only under [journal] sync. */
static int raw_fd_call(long nr, int fd)
{
	long r = bbx_sys_raw4(nr, fd, 0, 0, 0);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return 0;
}

static int raw_fdatasync(int fd) { return raw_fd_call(SYS_fdatasync, fd); }
static int raw_fsync(int fd) { return raw_fd_call(SYS_fsync, fd); }

struct bbx_sys bbx_sys = {
	.write = raw_write,
	.pwrite = raw_pwrite,
	.copy_file_range = copy_file_range,
	.linkat = linkat,
	.fdatasync = raw_fdatasync,
	.fsync = raw_fsync,
};
