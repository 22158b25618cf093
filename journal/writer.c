/* SPDX-License-Identifier: MIT
 * writer.c - journal appends with descriptor identity checks (see writer.h). */
#include "writer.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int writer_reopen(struct bbx_writer *w)
{
	int fd = open(w->path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat sb;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		int e = errno ? errno : EIO;
		close(fd);
		return -e;
	}
	int hi = fcntl(fd, F_DUPFD_CLOEXEC, BBX_WRITER_FD_MIN);
	if (hi >= 0) {
		close(fd);
		fd = hi;
	}
	w->dev = sb.st_dev;
	w->ino = sb.st_ino;
	int old = __atomic_exchange_n(&w->fd, fd, __ATOMIC_ACQ_REL);
	(void)old; /* never close old: it may already be a program's descriptor */
	return 0;
}

int bbx_writer_open(struct bbx_writer *w, const char *dir)
{
	int n = snprintf(w->path, sizeof w->path, "%s/journal", dir);
	if (n < 0 || (size_t)n >= sizeof w->path)
		return -ENAMETOOLONG;
	w->fd = -1;
	int rc = writer_reopen(w);
	if (rc != -ENOENT)
		return rc;
	int fd = open(w->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	close(fd);
	return writer_reopen(w);
}

/* Ours only if it is the journal (device, inode) AND open for appending: a descriptor
 * to the journal put there by someone else (read-only, or without O_APPEND) would fail
 * or overwrite the head of the log. */
static int writer_fd_ok(struct bbx_writer *w, int fd)
{
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) < 0)
		return 0;
	if (sb.st_dev != w->dev || sb.st_ino != w->ino)
		return 0;
	int fl = fcntl(fd, F_GETFL);
	return fl >= 0 && (fl & O_APPEND) && (fl & O_ACCMODE) != O_RDONLY;
}

int bbx_writer_append(struct bbx_writer *w, const void *rec, size_t len)
{
	int fd = __atomic_load_n(&w->fd, __ATOMIC_ACQUIRE);
	if (!writer_fd_ok(w, fd)) {
		int rc = writer_reopen(w);
		if (rc)
			return rc;
		fd = __atomic_load_n(&w->fd, __ATOMIC_ACQUIRE);
	}
	ssize_t n;
	do
		n = bbx_sys.write(fd, rec, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if ((size_t)n != len)
		return -EIO; /* torn record: readers resynchronise past it */
	return 0;
}

void bbx_writer_close(struct bbx_writer *w)
{
	int fd = __atomic_exchange_n(&w->fd, -1, __ATOMIC_ACQ_REL);
	if (fd >= 0 && writer_fd_ok(w, fd))
		close(fd);
}
