/* SPDX-License-Identifier: MIT
 * writer.c - journal appends with descriptor identity checks (see writer.h). */
#include "writer.h"
#include "str.h"
#include "hot.h"
#include "record.h"
#include "state.h"
#include "sys.h"

#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* The journal's name, w->dir + "/journal", into a buffer of the caller's frame sized
 * for it (JOURNAL_PATH): never a PATH_MAX array, which would push every frame below it
 * a page deeper into the stack (issue 5).  bbx_writer_open checked the length. */
#define JOURNAL_PATH(w, name)                                                               \
	char name[strlen((w)->dir) + sizeof "/journal"];                                    \
	(void)bbx_sjoin(name, sizeof name, (w)->dir, "journal")

static int writer_reopen(struct bbx_writer *w)
{
	/* The generation before the open: a descriptor change the shim sees after it (close,
	 * dup2, fcntl... bump it) still makes the next record check. */
	unsigned g = __atomic_load_n(&bbx_writer_fd_gen, __ATOMIC_ACQUIRE);
	/* By system calls of its own (sys.h): every process that records opens it. */
	JOURNAL_PATH(w, path);
	int fd = bbx_sys_openat(AT_FDCWD, path, O_WRONLY | O_APPEND | O_CLOEXEC, 0);
	if (fd < 0)
		return fd;
	struct stat sb;
	int e = bbx_sys_fstatat(fd, "", &sb, AT_EMPTY_PATH);
	if (e || !S_ISREG(sb.st_mode)) {
		bbx_sys_close(fd);
		return e ? e : -EIO;
	}
	int hi = (int)bbx_sys_raw4(SYS_fcntl, fd, F_DUPFD_CLOEXEC, BBX_WRITER_FD_MIN, 0);
	if (hi >= 0) {
		bbx_sys_close(fd);
		fd = hi;
	}
	w->dev = sb.st_dev;
	w->ino = sb.st_ino;
	int old = __atomic_exchange_n(&w->fd, fd, __ATOMIC_ACQ_REL);
	(void)old; /* never close old: it may already be a program's descriptor */
	/* Just opened for appending, a regular file, its identity taken from this very
	 * descriptor: the first record need not check it again (an fstat and an fcntl in
	 * every process that opens the run, issue 5). */
	__atomic_store_n(&w->gen_ok, g, __ATOMIC_RELAXED);
	return 0;
}

int bbx_writer_open(struct bbx_writer *w, const char *dir)
{
	if (strlen(dir) + sizeof "/journal" > PATH_MAX)
		return -ENAMETOOLONG;
	w->dir = dir;
	w->fd = -1;
	w->gen_ok = 0; /* never a generation (they start at 1); writer_reopen sets it */
	int rc = writer_reopen(w);
	if (rc != -ENOENT)
		return rc;
	JOURNAL_PATH(w, path);
	int fd = bbx_sys_openat(AT_FDCWD, path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return fd;
	bbx_sys_close(fd);
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

/* One write(2) of the record; *done = the bytes that reached the file. */
static int writer_write(struct bbx_writer *w, const void *rec, size_t len, size_t *done)
{
	*done = 0;
	int fd = __atomic_load_n(&w->fd, __ATOMIC_ACQUIRE);
	unsigned g = __atomic_load_n(&bbx_writer_fd_gen, __ATOMIC_ACQUIRE);
	if (!(bbx_writer_gen_mode && fd >= 0 && __atomic_load_n(&w->gen_ok, __ATOMIC_RELAXED) == g)) {
		if (!writer_fd_ok(w, fd)) {
			int rc = writer_reopen(w);
			if (rc)
				return rc;
			fd = __atomic_load_n(&w->fd, __ATOMIC_ACQUIRE);
		}
		__atomic_store_n(&w->gen_ok, g, __ATOMIC_RELAXED);
	}
	ssize_t n;
	do
		n = bbx_sys.write(fd, rec, len);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EBADF) {
		int rc = writer_reopen(w);
		if (rc)
			return rc;
		fd = __atomic_load_n(&w->fd, __ATOMIC_ACQUIRE);
		do
			n = bbx_sys.write(fd, rec, len);
		while (n < 0 && errno == EINTR);
	}
	if (n < 0)
		return -errno;
	*done = (size_t)n;
	if ((size_t)n != len)
		return -EIO; /* torn record: readers resynchronise past it */
	return 0;
}

int bbx_writer_append(struct bbx_writer *w, const void *rec, size_t len)
{
	size_t done;
	return writer_write(w, rec, len, &done);
}

unsigned bbx_writer_fd_gen = 1;
/* Weak: the shim's definition (shim/init.c) is statically 1 (see capture.c's hooks). */
__attribute__((weak)) int bbx_writer_gen_mode;

void bbx_writer_fd_touched(const struct bbx_writer *w, int lo, int hi)
{
	int fd = __atomic_load_n(&w->fd, __ATOMIC_ACQUIRE);
	if (fd >= lo && fd <= hi)
		__atomic_add_fetch(&bbx_writer_fd_gen, 1, __ATOMIC_ACQ_REL);
}

BBX_HOT void (*bbx_writer_test_hook)(void);

static uint64_t get64le(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return le64toh(v);
}

/* Is the record of len bytes at off in fd complete, with a valid checksum?  Read in
 * pieces through a stack buffer: no allocation, whatever the record's size. */
static int record_ok(int fd, uint64_t off, uint32_t len, uint64_t *trailer)
{
	XXH64_state_t x;
	XXH64_reset(&x, 0);
	uint8_t buf[4096];
	uint64_t pos = 0, body = len - BBX_REC_TRAILER_LEN;
	while (pos < body) {
		size_t want = body - pos < sizeof buf ? (size_t)(body - pos) : sizeof buf;
		ssize_t n = pread(fd, buf, want, (off_t)(off + pos));
		if (n <= 0)
			return 0;
		XXH64_update(&x, buf, (size_t)n);
		pos += (uint64_t)n;
	}
	uint8_t t[8];
	if (pread(fd, t, 8, (off_t)(off + body)) != 8)
		return 0;
	*trailer = get64le(t);
	return XXH64_digest(&x) == *trailer;
}

/* The previous holder of the lock died holding it (EOWNERDEAD).  It may have died
 * before its write, after it (the record is in the file but the head was not moved on),
 * or in the middle (torn bytes).  The head is rebuilt from the file itself: every
 * complete record past the bytes already accounted for moves the head to its trailer;
 * anything else there is torn and only counted as bytes. */
static void chain_recover(struct bbx_writer *w, struct bbx_state *st)
{
	JOURNAL_PATH(w, path);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return; /* keep the head: at worst verify reports one break */
	struct stat sb;
	if (fstat(fd, &sb) == 0) {
		uint64_t size = (uint64_t)sb.st_size, end = st->end;
		while (end < size) {
			uint8_t h[16];
			uint64_t t;
			uint32_t len = 0;
			if (size - end >= BBX_REC_MIN_LEN && pread(fd, h, 16, (off_t)end) == 16 &&
			    (uint32_t)get64le(h) == BBX_REC_MAGIC)
				len = (uint32_t)(get64le(h + 8) & 0xffffffffu);
			if (len < BBX_REC_MIN_LEN || len > BBX_REC_MAX_LEN || len > size - end ||
			    !record_ok(fd, end, len, &t)) {
				end = size; /* torn: the next record starts after these bytes */
				break;
			}
			st->chain = t;
			st->nrec++;
			end += len;
		}
		__atomic_store_n(&st->end, end, __ATOMIC_RELEASE);
	}
	close(fd);
}

/* The length of the record at b (its header says), within the len bytes left. */
static size_t rec_len_at(const uint8_t *b, size_t left)
{
	if (left < 16)
		return left;
	size_t l = (size_t)(get64le(b + 8) & 0xffffffffu);
	return l >= BBX_REC_MIN_LEN && l <= left ? l : left;
}

int bbx_writer_append_chained(struct bbx_writer *w, struct bbx_state *st, void *rec,
			      size_t len, struct bbx_chain_pos *pos)
{
	return bbx_writer_append_chained_n(w, st, rec, len, pos);
}

int bbx_writer_append_chained_n(struct bbx_writer *w, struct bbx_state *st, void *recs,
				size_t len, struct bbx_chain_pos *pos)
{
	uint8_t *b = recs;
	pthread_mutex_t *mu = st ? bbx_state_lock(st) : NULL;
	if (!mu) {
		/* No chain to link into: each record's checksum only (unsummed records). */
		for (size_t off = 0, l; off < len; off += l) {
			l = rec_len_at(b + off, len - off);
			if (l >= BBX_REC_TRAILER_LEN)
				bbx_rec_sum(b + off, l);
		}
		int rc = bbx_writer_append(w, recs, len);
		if (pos) {
			pos->chain = get64le(b + len - BBX_REC_TRAILER_LEN);
			pos->count = pos->end = 0;
		}
		return rc;
	}
	/* Bounded wait: a holder that can never release it must not hang the run; the
	 * mutation is refused instead (fail closed, invariant 2).  (A vfork child killed
	 * holding it holds it under its parent's thread id, which the parent's vfork
	 * releases: bbx_writer_vfork_reclaim.) */
	int e = pthread_mutex_trylock(mu);
	if (e == EBUSY) { /* the deadline only when there is a wait (no clock read else) */
		struct timespec dl;
		clock_gettime(CLOCK_MONOTONIC, &dl);
		dl.tv_sec += BBX_WRITER_LOCK_TIMEOUT;
		e = pthread_mutex_clocklock(mu, CLOCK_MONOTONIC, &dl);
	}
	if (e == EOWNERDEAD) {
		chain_recover(w, st);
		pthread_mutex_consistent(mu);
	} else if (e) {
		return -e;
	}
	/* Each record is linked to the one before it, the first to the file's head. */
	uint64_t t = st->chain;
	for (size_t off = 0, l; off < len; off += l) {
		l = rec_len_at(b + off, len - off);
		t = bbx_rec_set_chain(b + off, l, t);
	}
	size_t done;
	int rc = writer_write(w, recs, len, &done);
	if (rc == -EIO && done > 0 && done < len) {
		/* A short write.  When the filesystem is full (the usual cause), we hold the
		 * lock, so nothing follows the torn bytes: take them back, keep the journal
		 * clean, and refuse the call with the real cause (invariant 2). */
		int fd = __atomic_load_n(&w->fd, __ATOMIC_ACQUIRE);
		struct stat sb;
		struct statvfs vs;
		if (fstatvfs(fd, &vs) == 0 && vs.f_bavail == 0 && fstat(fd, &sb) == 0 &&
		    (uint64_t)sb.st_size >= done && ftruncate(fd, sb.st_size - (off_t)done) == 0) {
			done = 0;
			rc = -ENOSPC;
		}
	}
	if (bbx_writer_test_hook)
		bbx_writer_test_hook();
	/* Under the lock like every access to end, but atomic: group commit reads it
	 * without the lock (run.c). */
	__atomic_store_n(&st->end, st->end + done, __ATOMIC_RELEASE);
	/* The head moves past every record that reached the file whole (all of them,
	 * unless the write was short). */
	for (size_t off = 0, l; off < done; off += l) {
		l = rec_len_at(b + off, len - off);
		if (off + l > done)
			break;
		st->chain = get64le(b + off + l - BBX_REC_TRAILER_LEN);
		st->nrec++;
	}
	if (pos) {
		pos->chain = st->chain;
		pos->count = st->nrec;
		pos->end = st->end;
	}
	pthread_mutex_unlock(mu);
	return rc;
}

/* Releases mu when it is held under thread id self and listed first in this thread's
 * robust list with no list operation pending: taken by a vfork child, which ran on this
 * thread's memory (glibc's thread id and robust list included), and killed before it
 * released it.  Any other state (a child killed inside glibc's own bookkeeping, a few
 * instructions) is left as it is.  Returns 1 if released. */
static int release_for_child(pthread_mutex_t *mu, pid_t self)
{
	if (!mu || (__atomic_load_n(&mu->__data.__lock, __ATOMIC_ACQUIRE) & FUTEX_TID_MASK) !=
			   (unsigned)self)
		return 0;
	struct robust_list_head *head = NULL;
	size_t len = 0;
	if (bbx_sys_raw4(SYS_get_robust_list, 0, (long)&head, (long)&len, 0) != 0 || !head ||
	    head->list_op_pending ||
	    (struct robust_list *)((uintptr_t)head->list.next & ~(uintptr_t)1) !=
		    (struct robust_list *)&mu->__data.__list.__next)
		return 0;
	return pthread_mutex_unlock(mu) == 0;
}

/* What the kernel does for a robust mutex whose holder died: the holder's id replaced by
 * FUTEX_OWNER_DIED (the waiters bit kept) and one waiter woken; the next locker gets
 * EOWNERDEAD and recovers (bbx_writer_append_chained_n). */
static void mark_owner_died(pthread_mutex_t *mu, pid_t self)
{
	int *word = &mu->__data.__lock;
	int v = __atomic_load_n(word, __ATOMIC_ACQUIRE);
	while ((v & FUTEX_TID_MASK) == self) {
		int nv = (v & FUTEX_WAITERS) | FUTEX_OWNER_DIED;
		if (__atomic_compare_exchange_n(word, &v, nv, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			if (v & FUTEX_WAITERS)
				bbx_sys_raw6(SYS_futex, (long)word, FUTEX_WAKE, 1, 0, 0, 0);
			return;
		}
	}
}

void bbx_writer_vfork_reclaim(struct bbx_writer *w, struct bbx_state *st, int solo)
{
	pthread_mutex_t *mu = bbx_state_lock(st), *sync = bbx_state_sync_lock(st);
	unsigned mask = FUTEX_TID_MASK;
	/* Not locked (the usual case): nothing to ask the kernel. */
	if ((!mu || !(__atomic_load_n(&mu->__data.__lock, __ATOMIC_ACQUIRE) & mask)) &&
	    (!sync || !(__atomic_load_n(&sync->__data.__lock, __ATOMIC_ACQUIRE) & mask)))
		return;
	pid_t self = (pid_t)bbx_sys_raw4(SYS_gettid, 0, 0, 0, 0);
	if (solo) {
		/* Every entry of this thread's robust list is the child's (this thread holds
		 * no robust mutex of its own), and the child had its own mapping of the
		 * state: the list is emptied, and a lock under this thread's id is handed to
		 * the kernel's treatment of a dead holder. */
		struct robust_list_head *head = NULL;
		size_t len = 0;
		if (bbx_sys_raw4(SYS_get_robust_list, 0, (long)&head, (long)&len, 0) == 0 && head) {
			head->list_op_pending = NULL;
			head->list.next = &head->list;
		}
		if (sync)
			mark_owner_died(sync, self);
		if (mu)
			mark_owner_died(mu, self);
		return;
	}
	/* The sync lock guards nothing (run.c); the journal lock guards the head, which
	 * the child may have left behind the file (its record written, the head not moved
	 * on): rebuilt from the file, as after EOWNERDEAD. */
	release_for_child(sync, self);
	if (mu && (__atomic_load_n(&mu->__data.__lock, __ATOMIC_ACQUIRE) & mask) == (unsigned)self) {
		chain_recover(w, st);
		release_for_child(mu, self);
	}
}

int bbx_writer_sync(struct bbx_writer *w)
{
	int fd = __atomic_load_n(&w->fd, __ATOMIC_ACQUIRE);
	if (bbx_sys.fdatasync(fd) == 0)
		return 0;
	if (errno != EBADF)
		return -errno;
	/* Closed under us (a program's close of every descriptor): the journal reopened
	 * is the same inode, and syncing it is the same. */
	int rc = writer_reopen(w);
	if (rc)
		return rc;
	fd = __atomic_load_n(&w->fd, __ATOMIC_ACQUIRE);
	return bbx_sys.fdatasync(fd) == 0 ? 0 : -errno;
}

void bbx_writer_close(struct bbx_writer *w)
{
	int fd = __atomic_exchange_n(&w->fd, -1, __ATOMIC_ACQ_REL);
	if (fd >= 0 && writer_fd_ok(w, fd))
		close(fd);
}
