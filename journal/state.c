/* SPDX-License-Identifier: MIT
 * state.c - shared run state (see state.h). */
#include "state.h"
#include "hot.h"
#include "sys.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define DEVMASK ((1ull << 56) - 1)
#define MAXPROBE 128
#define TOMBSTONE UINT64_MAX

static size_t state_bytes(uint32_t nslots)
{
	return sizeof(struct bbx_state) + (size_t)nslots * sizeof(struct bbx_state_slot);
}

size_t bbx_state_lock_off(uint32_t nslots)
{
	return (state_bytes(nslots) + 63) & ~(size_t)63;
}

#define LOCK_SPAN ((sizeof(pthread_mutex_t) + 63) & ~(size_t)63)

#define SPAN(n, size) (((n) * (size) + 63) & ~(size_t)63)
#define PROGS_SPAN_V4 SPAN(BBX_STATE_PROGS_V4, sizeof(struct bbx_state_prog))
#define CLEAN_SPAN_V4 SPAN(BBX_STATE_CLEAN_V4, sizeof(uint64_t))

/* Version 5: the head page.  Everything an exec's record touches besides the slots (the
 * sequence counter, the journal lock, the program table, the clean table) in the
 * file's first page, and the slots after it: a fork child faults in each page of this
 * shared mapping that it touches, and it touched three (issue 5, spawn cost). */
#define HEAD_LOCK_OFF ((sizeof(struct bbx_state) + 63) & ~(size_t)63)
#define HEAD_PROGS_OFF (HEAD_LOCK_OFF + 2 * LOCK_SPAN)
#define HEAD_CLEAN_OFF (HEAD_PROGS_OFF + SPAN(BBX_STATE_PROGS, sizeof(struct bbx_state_prog)))
#define HEAD_NSGEN_OFF (HEAD_CLEAN_OFF + BBX_STATE_CLEAN * sizeof(uint64_t))
#define HEAD_PACK_OFF (HEAD_NSGEN_OFF + sizeof(uint64_t))
/* its own cache line: written by every claim, while nsgen's is read on every call */
#define HEAD_GROW_OFF ((HEAD_PACK_OFF + 2 * sizeof(uint64_t) + 63) & ~(size_t)63)
#define HEAD_END (HEAD_GROW_OFF + (2 + BBX_STATE_SEGS) * sizeof(uint64_t))
_Static_assert(HEAD_END <= BBX_STATE_HEAD, "the head fits in its page");

static struct bbx_state_slot *slots(struct bbx_state *st)
{
	return st->version >= 5 ? (struct bbx_state_slot *)((char *)st + BBX_STATE_HEAD)
				: st->slot;
}

/* Version 2: the journal lock after the slots; version 3: the sync lock after it;
 * version 4: the program table after that; version 5: all of them before the slots. */
static size_t state_total_v(uint32_t nslots, uint32_t version)
{
	if (version >= 5)
		return BBX_STATE_HEAD + (size_t)nslots * sizeof(struct bbx_state_slot);
	return bbx_state_lock_off(nslots) + (version >= 3 ? 2 : 1) * LOCK_SPAN +
	       (version >= 4 ? PROGS_SPAN_V4 + CLEAN_SPAN_V4 : 0);
}

static size_t state_total(uint32_t nslots)
{
	return state_total_v(nslots, BBX_STATE_VERSION);
}

/* Mapped length of st: version 2 files carry the lock after the slots. */
static size_t state_len(const struct bbx_state *st)
{
	return st->version >= 2 ? state_total_v(st->nslots, st->version) : state_bytes(st->nslots);
}

static size_t lock_off(const struct bbx_state *st)
{
	return st->version >= 5 ? HEAD_LOCK_OFF : bbx_state_lock_off(st->nslots);
}

pthread_mutex_t *bbx_state_lock(struct bbx_state *st)
{
	if (st->version < 2)
		return NULL;
	return (pthread_mutex_t *)((char *)st + lock_off(st));
}

pthread_mutex_t *bbx_state_sync_lock(struct bbx_state *st)
{
	if (st->version < 3)
		return NULL;
	return (pthread_mutex_t *)((char *)st + lock_off(st) + LOCK_SPAN);
}

struct bbx_state_prog *bbx_state_progs(struct bbx_state *st)
{
	if (st->version < 4)
		return NULL;
	return (struct bbx_state_prog *)((char *)st + lock_off(st) + 2 * LOCK_SPAN);
}

size_t bbx_state_progs_n(const struct bbx_state *st)
{
	return st->version >= 5 ? BBX_STATE_PROGS : st->version == 4 ? BBX_STATE_PROGS_V4 : 0;
}

uint64_t *bbx_state_clean(struct bbx_state *st)
{
	struct bbx_state_prog *p = bbx_state_progs(st);
	return p ? (uint64_t *)((char *)p + SPAN(bbx_state_progs_n(st), sizeof *p)) : NULL;
}

uint64_t *bbx_state_nsgen(struct bbx_state *st)
{
	return st->version >= 5 ? (uint64_t *)((char *)st + HEAD_NSGEN_OFF) : NULL;
}

uint64_t *bbx_state_pack(struct bbx_state *st)
{
	/* Zero in any version 5 or 6 file (the head page is zero-filled); an older shim
	 * simply does not pack. */
	return st->version >= 5 ? (uint64_t *)((char *)st + HEAD_PACK_OFF) : NULL;
}

size_t bbx_state_clean_n(const struct bbx_state *st)
{
	return st->version >= 5 ? BBX_STATE_CLEAN : st->version == 4 ? BBX_STATE_CLEAN_V4 : 0;
}

/* The journal lock: shared by every process of the run, and robust, so that a process
 * killed while holding it (kill -9 in the middle of an append) hands it to the next
 * one with EOWNERDEAD instead of hanging the run (writer.c recovers the chain head).
 * The sync lock (version 3, [journal] sync = group) is made the same way. */
static int init_lock(int fd)
{
	char *m = mmap(NULL, BBX_STATE_HEAD, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	bbx_sys_random_access(m, BBX_STATE_HEAD);
	pthread_mutexattr_t a;
	int e = pthread_mutexattr_init(&a);
	if (!e)
		e = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	if (!e)
		e = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	if (!e)
		e = pthread_mutex_init((pthread_mutex_t *)(m + HEAD_LOCK_OFF), &a);
	if (!e)
		e = pthread_mutex_init((pthread_mutex_t *)(m + HEAD_LOCK_OFF + LOCK_SPAN), &a);
	pthread_mutexattr_destroy(&a);
	munmap(m, BBX_STATE_HEAD);
	return -e;
}

int bbx_state_create(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	struct bbx_state h = {.magic = BBX_STATE_MAGIC, .version = BBX_STATE_VERSION, .seq = 1,
			      .nslots = BBX_STATE_SLOTS};
	int rc = 0;
	/* Allocated up front, not sparse: a page of a MAP_SHARED file that has no block
	 * behind it raises SIGBUS when the filesystem is full, and the shim must refuse
	 * with ENOSPC instead (invariant 2).  So a full disk fails the run's creation. */
	int e = posix_fallocate(fd, 0, (off_t)state_total(BBX_STATE_SLOTS));
	if (e == EOPNOTSUPP || e == EINVAL)
		e = ftruncate(fd, (off_t)state_total(BBX_STATE_SLOTS)) < 0 ? errno : 0;
	if (e)
		rc = -e;
	else if ((rc = init_lock(fd)))
		;
	else if (pwrite(fd, &h, sizeof h, 0) != (ssize_t)sizeof h)
		rc = errno ? -errno : -EIO;
	close(fd);
	if (rc)
		unlink(path);
	return rc;
}

int bbx_state_unfinished(int fd)
{
	struct stat sb;
	uint32_t magic = 0;
	/* the largest any version made at creation (a killed older bbx-run's too) */
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) ||
	    (size_t)sb.st_size > state_total(BBX_STATE_SLOTS_V7))
		return 0;
	ssize_t got = pread(fd, &magic, sizeof magic, 0);
	return got >= 0 && (magic == 0 || magic == BBX_STATE_MAGIC);
}

/* Version 7: the captured set in segments (journal-format.md 9.2).  Segment 0 is the
 * slot array after the head page; segment k (1 <= k < BBX_STATE_SEGS) holds nslots << k
 * slots, at file offset BBX_STATE_HEAD + 16 * nslots * (2^k - 1), allocated (fallocate,
 * as at creation: no hole for SIGBUS) by the process whose claim took three quarters of
 * the newest segment's slots.  In the head page: the number of segments in use, the pid
 * of the process allocating the next one, and each segment's claimed slots.  Without
 * it a run's set was full after 262,144 inodes (tombstones included: a tmpfs never
 * reuses an inode number), and from then on every file the run made and removed was
 * kept by a hard link as if it had been there before (issue 5: 350,000 temporary files
 * made and removed in a tmpfs kept 87,858 of them, 344 MB, in objects/). */
uint64_t *bbx_state_grow(struct bbx_state *st)
{
	return st->version >= 7 ? (uint64_t *)((char *)st + HEAD_GROW_OFF) : NULL;
}

#define GROW_FAILED UINT64_MAX /* BBX_GROW_OWNER: an allocation failed; no more tries */

static uint32_t seg_slots(const struct bbx_state *st, unsigned k)
{
	return st->nslots << k;
}

static off_t seg_off(const struct bbx_state *st, unsigned k)
{
	return (off_t)BBX_STATE_HEAD +
	       (off_t)sizeof(struct bbx_state_slot) * st->nslots * (((off_t)1 << k) - 1);
}

/* Version 8 grows to BBX_STATE_SEGS segments; a version 7 file to 5, the limit its
 * other processes (an older shim's) know: past it they would miss the later segments'
 * entries (a forget there left undone). */
static unsigned max_segs(const struct bbx_state *st)
{
	return st->version >= 8 ? BBX_STATE_SEGS : st->version == 7 ? BBX_STATE_SEGS_V7 : 1;
}

unsigned bbx_state_nsegs(const struct bbx_state *st)
{
	if (st->version < 7)
		return 1;
	const uint64_t *g = (const uint64_t *)((const char *)st + HEAD_GROW_OFF);
	uint64_t n = __atomic_load_n(&g[BBX_GROW_NSEG], __ATOMIC_ACQUIRE);
	return n < 1 ? 1 : n > max_segs(st) ? max_segs(st) : (unsigned)n;
}

/* The one mapping of this process that may use segments past the first, its run
 * directory, and the segments mapped so far (their own mappings; inherited by a fork
 * child with the rest of the address space).  The two words are in the data page the
 * loader writes anyway; segp, in .bss, is touched only once a run has grown. */
BBX_HOT static struct bbx_state *att_st;
BBX_HOT static const char *att_dir;
static struct bbx_state_slot *segp[BBX_STATE_SEGS];

void bbx_state_attach(struct bbx_state *st, const char *dir)
{
	if (att_st && att_st != st)
		for (unsigned k = 1; k < BBX_STATE_SEGS; k++) {
			struct bbx_state_slot *m = __atomic_exchange_n(&segp[k], NULL,
								      __ATOMIC_ACQ_REL);
			if (m)
				munmap(m, (size_t)seg_slots(att_st, k) * sizeof *m);
		}
	__atomic_store_n(&att_dir, dir, __ATOMIC_RELEASE);
	__atomic_store_n(&att_st, st, __ATOMIC_RELEASE);
}

/* The run's state file opened read-write, by raw system calls (no wrapper of the shim,
 * async-signal-safe).  Returns the descriptor or -errno. */
static int open_state(void)
{
	const char *dir = __atomic_load_n(&att_dir, __ATOMIC_ACQUIRE);
	char p[PATH_MAX];
	size_t l = dir ? strnlen(dir, PATH_MAX) : PATH_MAX;
	if (l + sizeof "/state" > sizeof p)
		return -ENAMETOOLONG;
	memcpy(p, dir, l);
	memcpy(p + l, "/state", sizeof "/state");
	/* O_NOATIME as in state_open below, for the same reason (a segment's mapping) */
	int fd = (int)bbx_sys_raw4(SYS_openat, AT_FDCWD, (long)p,
				   O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NOATIME, 0);
	return fd == -EPERM ? (int)bbx_sys_raw4(SYS_openat, AT_FDCWD, (long)p,
						O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0)
			    : fd;
}

/* Segment k of st (k < bbx_state_nsegs(st)), mapped on first use; NULL when it cannot
 * be (st not attached, no memory): the caller then acts as if it were empty, which a
 * lookup may (towards capturing again) and a forget cannot help. */
static struct bbx_state_slot *seg_base(struct bbx_state *st, unsigned k)
{
	if (k == 0)
		return slots(st);
	if (st != __atomic_load_n(&att_st, __ATOMIC_ACQUIRE))
		return NULL;
	struct bbx_state_slot *m = __atomic_load_n(&segp[k], __ATOMIC_ACQUIRE);
	if (m)
		return m;
	int fd = open_state();
	if (fd < 0)
		return NULL;
	size_t len = (size_t)seg_slots(st, k) * sizeof *m;
	void *v = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, seg_off(st, k));
	(void)bbx_sys_raw4(SYS_close, fd, 0, 0, 0);
	if (v == MAP_FAILED)
		return NULL;
	bbx_sys_random_access(v, len);
	struct bbx_state_slot *none = NULL;
	if (!__atomic_compare_exchange_n(&segp[k], &none, (struct bbx_state_slot *)v, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		munmap(v, len); /* another thread mapped it first */
		return none;
	}
	return v;
}

/* Allocates segment n (the set has n) when this process wins the right to.  A process
 * killed while allocating leaves its pid, which the next one replaces once that pid is
 * gone; an allocation that fails (a full disk) stops growth for the run: the set then
 * behaves as before version 7, full meaning "capture again". */
static void grow(struct bbx_state *st, unsigned n)
{
	uint64_t *g = bbx_state_grow(st);
	if (!g || n >= max_segs(st) || st != __atomic_load_n(&att_st, __ATOMIC_ACQUIRE))
		return;
	uint64_t cur = __atomic_load_n(&g[BBX_GROW_OWNER], __ATOMIC_ACQUIRE);
	if (cur == GROW_FAILED)
		return;
	uint64_t me = (uint64_t)bbx_sys_raw4(SYS_getpid, 0, 0, 0, 0);
	if (cur && (cur == me || bbx_sys_raw4(SYS_kill, (long)cur, 0, 0, 0) != -ESRCH))
		return; /* being allocated (or this process is at it, in a signal handler) */
	if (!__atomic_compare_exchange_n(&g[BBX_GROW_OWNER], &cur, me, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return;
	uint64_t fail = 0;
	if (bbx_state_nsegs(st) == n) {
		int fd = open_state();
		long r = fd;
		if (fd >= 0) {
			off_t off = seg_off(st, n);
			off_t len = (off_t)seg_slots(st, n) * (off_t)sizeof(struct bbx_state_slot);
			r = bbx_sys_raw4(SYS_fallocate, fd, 0, off, len);
			if (r == -EOPNOTSUPP)
				r = bbx_sys_raw4(SYS_ftruncate, fd, off + len, 0, 0);
			(void)bbx_sys_raw4(SYS_close, fd, 0, 0, 0);
		}
		/* From n to n + 1 only: a process that took over from an owner it wrongly
		 * believed gone (another pid namespace) allocates the same range again,
		 * harmlessly, and must not set the count back. */
		uint64_t w = __atomic_load_n(&g[BBX_GROW_NSEG], __ATOMIC_ACQUIRE);
		if (r < 0)
			fail = GROW_FAILED;
		else if ((w < 1 ? 1 : w) == n)
			__atomic_compare_exchange_n(&g[BBX_GROW_NSEG], &w, (uint64_t)n + 1, 0,
						    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	}
	__atomic_store_n(&g[BBX_GROW_OWNER], fail, __ATOMIC_RELEASE);
}

/* The head page, mapped writable in one call.  Every mapper reads it (the magic) and
 * writes it (the sequence counter, the journal lock): touched, a MAP_SHARED file page
 * faults twice (read, then the filesystem's write notification), and a fork child
 * that inherits no page table entries for this mapping faults once more; each fault
 * costs ~20-40 us here, the call ~10 (issue 5; bench/micro -f).  By the instruction
 * (sys.h): libc's madvise would cost a fork child a fault on its page. */
static void head_populate(struct bbx_state *st, size_t size)
{
	bbx_sys_populate_write(st, size < BBX_STATE_HEAD ? size : BBX_STATE_HEAD);
}

/* The state file opened read-write, O_NOATIME when the kernel lets us (the file's owner
 * or CAP_FOWNER; else EPERM, and it is opened without).  Its mapping otherwise updates
 * its access time in every process that maps it: relatime updates it whenever it is
 * older than the modification time, which every write fault on the mapping moves, so
 * on ext4 each process that records paid a dirty inode and a journal handle for the
 * mmap alone (perf stat -a -e ext4:ext4_mark_inode_dirty; issue 5). */
static int state_open(const char *path)
{
	int fd = bbx_sys_openat(AT_FDCWD, path, O_RDWR | O_CLOEXEC | O_NOATIME, 0);
	return fd == -EPERM ? bbx_sys_openat(AT_FDCWD, path, O_RDWR | O_CLOEXEC, 0) : fd;
}

/* By system calls of its own (sys.h): every process that records maps it. */
int bbx_state_map(const char *path, struct bbx_state **out)
{
	int fd = state_open(path);
	if (fd < 0)
		return fd;
	struct stat sb;
	int rc = bbx_sys_fstatat(fd, "", &sb, AT_EMPTY_PATH);
	if (rc)
		goto out;
	if ((size_t)sb.st_size < sizeof(struct bbx_state)) {
		rc = -EINVAL;
		goto out;
	}
	long m = bbx_sys_raw6(SYS_mmap, 0, (long)sb.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
			      fd, 0);
	if (m < 0 && m > -4096) {
		rc = (int)m;
		goto out;
	}
	struct bbx_state *st = (struct bbx_state *)m;
	bbx_sys_random_access(st, (size_t)sb.st_size); /* before the first fault */
	head_populate(st, (size_t)sb.st_size);
	if (st->magic != BBX_STATE_MAGIC || st->nslots == 0 ||
	    (st->nslots & (st->nslots - 1)) != 0 || state_len(st) > (size_t)sb.st_size) {
		(void)bbx_sys_raw4(SYS_munmap, (long)st, (long)sb.st_size, 0, 0);
		rc = -EINVAL;
		goto out;
	}
	/* A grown file (version 7): the head and the first segment only; later segments
	 * are mapped each on its own when first used (seg_base), like the ones added
	 * after this mapping. */
	if (st->version >= 7 && state_len(st) < (size_t)sb.st_size)
		(void)bbx_sys_raw4(SYS_munmap, (long)((char *)st + state_len(st)),
				   (long)((size_t)sb.st_size - state_len(st)), 0, 0);
	*out = st;
out:
	bbx_sys_close(fd);
	return rc;
}

void bbx_state_unmap(struct bbx_state *st)
{
	if (!st)
		return;
	if (st == __atomic_load_n(&att_st, __ATOMIC_ACQUIRE))
		bbx_state_attach(NULL, NULL); /* unmaps its segments */
	munmap(st, state_len(st));
}

void bbx_state_prefault(struct bbx_state *st)
{
	_Static_assert(sizeof(pthread_mutex_t) + sizeof(uint64_t) <= LOCK_SPAN,
		       "the lock's span has room for the word written here");
	head_populate(st, BBX_STATE_HEAD);
	__atomic_fetch_add(&st->seq, 0, __ATOMIC_RELAXED);
	pthread_mutex_t *mu = bbx_state_lock(st);
	if (mu)
		__atomic_fetch_or((uint64_t *)((char *)mu + LOCK_SPAN - sizeof(uint64_t)), 0,
				  __ATOMIC_RELAXED);
}

uint64_t bbx_state_next_seq(struct bbx_state *st)
{
	return __atomic_fetch_add(&st->seq, 1, __ATOMIC_SEQ_CST);
}

static uint64_t hash2(uint64_t dev, uint64_t ino)
{
	uint64_t h = ino * 0x9E3779B97F4A7C15ull ^ (dev + 0x632BE59BD9B4E019ull);
	h ^= h >> 29;
	h *= 0xBF58476D1CE4E5B9ull;
	return h ^ (h >> 32);
}

/* The probe sequence (journal-format 9.1).  Versions 1-5: linear from hash2(dev, ino).
 * Version 6: slots in groups of BBX_STATE_GROUP (one page of the mapping); probe n of
 * an inode is slot (ino mod GROUP) of group hash2(dev + n, ino / GROUP).  Inode numbers
 * come in runs (a directory's files, a tar's or a git's output, tmpfs's per-CPU
 * batches), and a run of GROUP of them then shares one page: a process that looks up or
 * raises 400 files of one tree touches a few pages of the table instead of ~400, each
 * a page fault (sed -i over 400 files: 47 % of all its page faults were in this table,
 * issue 5).  A collision moves the whole colliding run to another group together, at
 * the same offsets, so the runs stay together; linear probing from a grouped start would
 * instead spill one run into the next group's (a simulation of 100,000 sequential
 * inodes: 12 % of them past 128 probes, against none here, longest sequence 6). */
struct probe {
	uint64_t dev, blk;
	uint32_t i, mask, off, grouped;
};

static uint32_t probe_first(struct probe *p, const struct bbx_state *st, uint32_t nslots,
			    uint64_t dev, uint64_t ino)
{
	p->mask = nslots - 1;
	p->grouped = st->version >= 6 && nslots >= BBX_STATE_GROUP;
	if (!p->grouped)
		return p->i = (uint32_t)hash2(dev, ino) & p->mask;
	p->dev = dev;
	p->blk = ino / BBX_STATE_GROUP;
	p->off = (uint32_t)(ino % BBX_STATE_GROUP);
	return p->i = (((uint32_t)hash2(dev, p->blk) * BBX_STATE_GROUP) | p->off) & p->mask;
}

static uint32_t probe_next(struct probe *p, int n)
{
	if (!p->grouped)
		return p->i = (p->i + 1) & p->mask;
	return p->i = (((uint32_t)hash2(p->dev + (uint64_t)n, p->blk) * BBX_STATE_GROUP) | p->off) &
		      p->mask;
}

/* The slot pages this process mapped writable in one call (slot_page_ready).  A hint
 * only: a bit set wrongly (another state file mapped at the same address, a fork child,
 * which inherits the bits but no page table entries for a MAP_SHARED mapping, until
 * bbx_state_forget_ready) costs the page faults every lookup paid before, nothing
 * else.  In the data page the loader writes anyway (hot.h): a page of .bss of their
 * own would cost the fault they save. */
BBX_HOT static struct bbx_state *ready_map;
/* one bit per page of the state file, by its page number in the file: the head, then
 * the slot pages of the segments in order, as far as the first 4 MiB (1,025 pages: 17
 * words, a version 7 file's segment 0, a version 8 file's segments 0 and 1 and part of
 * 2; each word more of the data page is one less for the start-up arena after it,
 * whose overflow is a page fault in every process, shim/init.c) */
#define READY_PAGES (BBX_STATE_SLOTS_V7 * sizeof(struct bbx_state_slot) / 4096 + 1)
BBX_HOT static uint64_t ready_bits[(READY_PAGES + 63) / 64];

/* A lookup is most often followed by a raise of the same slot (the first change of a
 * file): a read fault, then the filesystem's write fault on the same page, ~45 us here.
 * One populating call maps the page writable at once for ~10 (head_populate).  s is a
 * slot of segment k, mapped at base. */
static void slot_page_ready(struct bbx_state *st, const struct bbx_state_slot *base, unsigned k,
			    const struct bbx_state_slot *s)
{
	/* segment 0 lies in st's mapping (after the head, or in a version 4 file at 64);
	 * a later one in its own, which starts at its first page */
	const char *map = k ? (const char *)base : (const char *)st;
	size_t in = (size_t)((const char *)s - map) / 4096;
	size_t pg = (k ? (size_t)seg_off(st, k) / 4096 : 0) + in;
	if (pg >= 64 * (sizeof ready_bits / sizeof ready_bits[0]))
		return;
	if (__atomic_load_n(&ready_map, __ATOMIC_ACQUIRE) != st) {
		for (size_t w = 0; w < sizeof ready_bits / sizeof ready_bits[0]; w++)
			__atomic_store_n(&ready_bits[w], 0, __ATOMIC_RELAXED);
		__atomic_store_n(&ready_map, st, __ATOMIC_RELEASE);
	}
	uint64_t bit = (uint64_t)1 << (pg % 64);
	if (__atomic_load_n(&ready_bits[pg / 64], __ATOMIC_RELAXED) & bit ||
	    __atomic_fetch_or(&ready_bits[pg / 64], bit, __ATOMIC_RELAXED) & bit)
		return;
	bbx_sys_populate_write(map + in * 4096, 4096);
}

void bbx_state_forget_ready(void)
{
	__atomic_store_n(&ready_map, NULL, __ATOMIC_RELEASE);
}

/* Slot keys use ino+1 so that inode 0 (never valid, but cheap to be safe) is not "empty". */
static int seg_level(struct bbx_state *st, struct bbx_state_slot *base, unsigned k,
		     uint64_t dev, uint64_t ino)
{
	uint64_t key = ino + 1, d = dev & DEVMASK;
	struct probe pr;
	uint32_t first = probe_first(&pr, st, seg_slots(st, k), dev, ino);
	slot_page_ready(st, base, k, &base[first]);
	for (uint32_t n = 0, i = first; n < MAXPROBE;
	     i = probe_next(&pr, (int)++n)) {
		struct bbx_state_slot *s = &base[i];
		uint64_t kk = __atomic_load_n(&s->ino, __ATOMIC_ACQUIRE);
		if (kk == 0)
			return -1;
		if (kk != key)
			continue;
		uint64_t dl = __atomic_load_n(&s->devlvl, __ATOMIC_ACQUIRE);
		if (dl != TOMBSTONE && (dl & DEVMASK) == d)
			return (int)(dl >> 56);
	}
	return -1;
}

/* Newest segment first: an entry made since a segment was added is found in one. */
int bbx_state_level(struct bbx_state *st, uint64_t dev, uint64_t ino)
{
	for (unsigned k = bbx_state_nsegs(st); k-- > 0;) {
		struct bbx_state_slot *base = seg_base(st, k);
		int lvl = base ? seg_level(st, base, k, dev, ino) : -1;
		if (lvl >= 0)
			return lvl;
	}
	return BBX_LVL_NONE;
}

/* Raises (dev, ino) in segment k: its slot if it has one (a tombstone of it revived),
 * else, with claim, the first empty slot of its probe sequence.  0 done, 1 not there
 * (without claim), -ENOSPC. */
static int seg_raise(struct bbx_state *st, struct bbx_state_slot *base, unsigned k,
		     uint64_t dev, uint64_t ino, int lvl, int claim)
{
	uint64_t key = ino + 1, d = dev & DEVMASK;
	uint64_t want = d | (uint64_t)lvl << 56;
	struct probe pr;
	uint32_t first = probe_first(&pr, st, seg_slots(st, k), dev, ino);
	slot_page_ready(st, base, k, &base[first]); /* a creation's */
	for (uint32_t n = 0, i = first; n < MAXPROBE;
	     i = probe_next(&pr, (int)++n)) {
		struct bbx_state_slot *s = &base[i];
		uint64_t kk = __atomic_load_n(&s->ino, __ATOMIC_ACQUIRE);
		if (kk == 0) {
			if (!claim)
				return 1;
			uint64_t zero = 0;
			/* Claim the slot; the dev word is 0 (matches nothing) until stored. */
			if (!__atomic_compare_exchange_n(&s->ino, &zero, key, false,
							 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
				if (zero != key)
					continue;
			} else {
				__atomic_store_n(&s->devlvl, want, __ATOMIC_RELEASE);
				uint64_t *g = bbx_state_grow(st);
				if (g && __atomic_add_fetch(&g[BBX_GROW_COUNT + k], 1, __ATOMIC_RELAXED) >=
						 (uint64_t)seg_slots(st, k) / 4 * 3 &&
				    k + 1 == bbx_state_nsegs(st))
					grow(st, k + 1);
				return 0;
			}
		} else if (kk != key) {
			continue;
		}
		uint64_t dl = __atomic_load_n(&s->devlvl, __ATOMIC_ACQUIRE);
		if (dl == TOMBSTONE &&
		    __atomic_compare_exchange_n(&s->devlvl, &dl, want, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return 0; /* a forgotten slot of the same inode number: reuse it */
		for (;;) {
			if (dl == 0 || dl == TOMBSTONE || (dl & DEVMASK) != d)
				break; /* being filled, forgotten, or another device */
			if ((int)(dl >> 56) >= lvl)
				return 0;
			if (__atomic_compare_exchange_n(&s->devlvl, &dl, want, false,
							__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
				return 0;
		}
	}
	return claim ? -ENOSPC : 1;
}

/* An inode already in an older segment is raised there; a new one goes into the
 * newest, the only segment that takes new entries (two processes racing past the
 * moment a segment is added may each enter it once, in two segments: a lookup takes
 * the newer, at worst the lower level, and a forget clears both). */
int bbx_state_raise(struct bbx_state *st, uint64_t dev, uint64_t ino, int lvl)
{
	unsigned n = bbx_state_nsegs(st);
	for (unsigned k = n - 1; k-- > 0;) {
		struct bbx_state_slot *base = seg_base(st, k);
		if (base && seg_raise(st, base, k, dev, ino, lvl, 0) == 0)
			return 0;
	}
	struct bbx_state_slot *base = seg_base(st, n - 1);
	int rc = base ? seg_raise(st, base, n - 1, dev, ino, lvl, 1) : -ENOSPC;
	if (rc == -ENOSPC && n > 1) /* the newest full, or not mapped here */
		rc = seg_raise(st, slots(st), 0, dev, ino, lvl, 1);
	return rc;
}

void bbx_state_forget(struct bbx_state *st, uint64_t dev, uint64_t ino)
{
	uint64_t key = ino + 1, d = dev & DEVMASK;
	for (unsigned k = bbx_state_nsegs(st); k-- > 0;) {
		struct bbx_state_slot *base = seg_base(st, k);
		if (!base)
			continue;
		struct probe pr;
		for (uint32_t n = 0, i = probe_first(&pr, st, seg_slots(st, k), dev, ino);
		     n < MAXPROBE; i = probe_next(&pr, (int)++n)) {
			struct bbx_state_slot *s = &base[i];
			uint64_t kk = __atomic_load_n(&s->ino, __ATOMIC_ACQUIRE);
			if (kk == 0)
				break;
			uint64_t dl = __atomic_load_n(&s->devlvl, __ATOMIC_ACQUIRE);
			if (kk == key && dl != TOMBSTONE && (dl & DEVMASK) == d) {
				__atomic_store_n(&s->devlvl, TOMBSTONE, __ATOMIC_RELEASE);
				break;
			}
		}
	}
}
