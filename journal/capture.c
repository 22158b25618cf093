/* SPDX-License-Identifier: MIT
 *
 * capture.c - undo records and pre-images, taken before each mutation (see capture.h).
 *
 * Invariants relied on (DESIGN.md): 1 write-ahead (every record below is appended before
 * the caller issues its syscall), 2 fail closed (every error is returned for the caller
 * to refuse the call), 3 nothing lost (the pre-image is stored before the record that
 * names it).  The captured set only ever grows after a record is durable in the file.
 */
#include "capture.h"
#include "str.h"
#include "sys.h"
#include "hot.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#define COPY_BUF 16384
#define XATTR_INLINE 4096

/* Thread-local storage holds only a pointer: a large static TLS block would be zeroed
 * and faulted in by every process and thread at start, mutating or not. */
static __thread struct bbx_scratch *scratch_tls __attribute__((tls_model("initial-exec")));
BBX_HOT static pthread_key_t scratch_key;
BBX_HOT static int scratch_key_state; /* 0 none, 1 being created, 2 ready, 3 unavailable */

static void scratch_free(void *p)
{
	bbx_run_defer_release(&((struct bbx_scratch *)p)->defer);
	bbx_dtab_free(p);
	if (scratch_tls == p)
		scratch_tls = NULL;
	munmap(p, sizeof(struct bbx_scratch));
}

/* The mapping, populated or not.  A thread's first capture writes a record, a path or
 * two, the stat memos, the working directory and the held-back RESULTs: 8 or 9 of the
 * 14 pages for an rm of one file (perf, page faults by address), each a page fault of
 * its own.  Writing 8 fresh pages of such a mapping costs ~110 us here when each one
 * faults, ~85 us when mmap populates all 14 (bench/micro -f: the break-even is ~5
 * pages; issue 5), so a capture's scratch comes populated: its hot 9 pages, which a
 * first capture writes nearly all of, not the 5 it never reaches (session 33, the
 * same VM whose faults had become ~10 times cheaper: micro -f 14-30 us for 4-8 pages
 * faulted against 26-34 for 14 populated; a new program's first create 195 -> 188 us,
 * medians of 8 alternating rounds of 1,000).  Not the one atfork_prepare
 * maps for its fork children (shim/init.c): a child that only executes writes one page
 * of it, and its copy-on-write fault costs the same whether the parent's page was
 * there or not. */
static struct bbx_scratch *scratch_map(int populate)
{
	struct bbx_scratch *s = scratch_tls;
	if (s)
		return s;
	s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s == MAP_FAILED)
		return NULL;
	if (populate) /* its hot part (capture.h); the cold pages fault in if ever written */
		bbx_sys_populate_write(s, BBX_SCRATCH_HOT);
	int st = 0;
	if (__atomic_compare_exchange_n(&scratch_key_state, &st, 1, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		st = pthread_key_create(&scratch_key, scratch_free) == 0 ? 2 : 3;
		__atomic_store_n(&scratch_key_state, st, __ATOMIC_RELEASE);
	}
	while (st == 1)
		st = __atomic_load_n(&scratch_key_state, __ATOMIC_ACQUIRE);
	/* Unmapped when the thread exits.  (Once per thread; glibc allocates here only
	 * for a key index of 32 or more, i.e. in a program that made 32 keys first.) */
	if (st == 2)
		pthread_setspecific(scratch_key, s);
	bbx_run_defer_tls = &s->defer;
	scratch_tls = s;
	return s;
}

struct bbx_scratch *bbx_scratch(void)
{
	struct bbx_scratch *s = scratch_tls;
	return s ? s : scratch_map(1);
}

struct bbx_scratch *bbx_scratch_lazy(void)
{
	return scratch_map(0);
}

void bbx_scratch_populate(void)
{
	struct bbx_scratch *s = scratch_tls;
	if (s) {
		bbx_sys_populate_write(s, BBX_SCRATCH_HOT);
		/* A fork child's first capture (shim/init.c): the count of memo entries it
		 * inherited is its parent's activity, not its own, and the write decisions'
		 * cache maps its table only for a process busy itself (shim/policy.c,
		 * WCACHE_AFTER).  The page is written here anyway. */
		s->memo_next = 0;
	}
}

void bbx_scratch_atfork_child(void)
{
	/* Looked at first: a compare-and-exchange writes its page even when it fails, and
	 * in a fork child that write is a copy-on-write fault (issue 5, spawn cost). */
	int st = 1;
	if (__atomic_load_n(&scratch_key_state, __ATOMIC_ACQUIRE) == 1)
		__atomic_compare_exchange_n(&scratch_key_state, &st, 3, 0, __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE); /* key creation cut off */
}

/* Inside the capture functions: the caller (shim wrapper or tool) obtained the scratch
 * already, so this cannot fail here. */
#define tls (*scratch_tls)

/* Weak, as are bbx_preserve_max and bbx_cap_oversize below: the shim defines its own,
 * initialised statically (shim/policy.c, shim/preserve.c), so that no constructor has to
 * write them in every process the shim is loaded into.  A statically initialised
 * pointer is set by the dynamic linker on a page it relocates anyway; a constructor's
 * store was a copy-on-write page fault of its own, two per process (issue 5). */
__attribute__((weak)) int (*bbx_cap_policy)(const char *op, const char *path, int fd,
					    int follow);

/* The policy's say, first thing in every capture (NULL in the tools: bbx-undo restores
 * what the run was allowed to change). */
#define POLICY(op, path, fd, follow)                                                        \
	do {                                                                                \
		if (bbx_cap_policy) {                                                       \
			int prc_ = bbx_cap_policy((op), (path), (fd), (follow));            \
			if (prc_)                                                           \
				return prc_;                                                \
		}                                                                           \
	} while (0)

static int in_journal_dir(const struct bbx_run *run, const char *path)
{
	return strncmp(path, run->dir, run->dirlen) == 0 &&
	       (path[run->dirlen] == '/' || path[run->dirlen] == 0);
}

/* stat through the kernel, not through whatever else is preloaded: under fakeroot,
 * libfakeroot answers stat() with the owner and mode it pretends, and the undo record
 * must hold the real ones. */
__thread uint64_t bbx_stat_epoch __attribute__((tls_model("initial-exec")));

void bbx_at_set(int fd, const char *name, const char *abs)
{
	struct bbx_scratch *s = scratch_tls;
	if (!s || !bbx_stat_epoch || !abs || !name || !*name || name[0] == '/')
		return;
	size_t l = strnlen(abs, BBX_MEMO_PATH);
	if (l >= BBX_MEMO_PATH)
		return;
	struct bbx_at *a = &s->at[s->at_next++ & 1];
	memcpy(a->path, abs, l + 1);
	a->fd = fd;
	a->name = name;
	a->epoch = bbx_stat_epoch;
}

/* A relative name whose directory part is the directory abs's parent names (bbx_path_abs
 * drops "." and "//" and resolves ".."): none of those, and no trailing slash.  Never
 * empty (bbx_at_set). */
static int clean_relative(const char *name)
{
	return name[0] != '/' && name[strlen(name) - 1] != '/' && bbx_path_clean(name);
}

/* The directory and name to reach p by: the call's own (bbx_at_set), or p itself.  p may
 * also be the parent directory of a name set there (the capture's DIRMETA stat): then
 * the name's directory part, copied into dir (BBX_MEMO_PATH), or "" for the directory
 * descriptor itself (AT_EMPTY_PATH in *flags). */
static int at_of_dir(const char *p, const char **name, char *dir, int *flags)
{
	struct bbx_scratch *s = scratch_tls;
	size_t l = dir ? strlen(p) : 0;
	for (int i = 0; s && bbx_stat_epoch && i < 2; i++) {
		const struct bbx_at *a = &s->at[i];
		if (a->epoch != bbx_stat_epoch)
			continue;
		if (!strcmp(p, a->path)) {
			*name = a->name;
			return a->fd;
		}
		if (!dir || !l || strncmp(p, a->path, l) || a->path[l] != '/' ||
		    strchr(a->path + l + 1, '/') || !clean_relative(a->name))
			continue;
		const char *slash = strrchr(a->name, '/');
		if (!slash) {
			dir[0] = 0;
			*flags |= AT_EMPTY_PATH;
		} else {
			memcpy(dir, a->name, (size_t)(slash - a->name));
			dir[slash - a->name] = 0;
		}
		*name = dir;
		return a->fd;
	}
	*name = p;
	return AT_FDCWD;
}

static int at_of(const char *p, const char **name)
{
	return at_of_dir(p, name, NULL, NULL);
}

/* newfstatat through the memo (capture.h): the same question in the same epoch gets
 * the same answer, errno included.  A stat that follows is asked as an lstat first:
 * unless the name is a symlink the answer is the same (a missing or unreachable name
 * fails both ways alike), and the lstat the capture or the policy asks next in the
 * same call is then in the memo (a chmod -R of files older than the run: four path
 * walks a call became two, issue 5).  A symlink costs the second call. */
static int k_statat(const char *p, struct stat *sb, int follow)
{
	int r = bbx_stat_memo_get(p, follow, sb);
	if (r != -2)
		return r;
	const char *name;
	char dir[BBX_MEMO_PATH];
	int flags = AT_SYMLINK_NOFOLLOW;
	int dfd = at_of_dir(p, &name, dir, &flags);
	int e = bbx_sys_fstatat(dfd, name, sb, flags);
	r = e ? -1 : 0;
	if (e)
		errno = -e;
	bbx_stat_memo_put(p, 0, r, errno, sb);
	if (!follow || r < 0 || !S_ISLNK(sb->st_mode))
		return r;
	e = bbx_sys_fstatat(dfd, name, sb, flags & ~AT_SYMLINK_NOFOLLOW);
	r = e ? -1 : 0;
	if (e)
		errno = -e;
	bbx_stat_memo_put(p, 1, r, errno, sb);
	return r;
}

int bbx_k_lstat(const char *p, struct stat *sb) { return k_statat(p, sb, 0); }

int bbx_stat_memo_get(const char *p, int follow, struct stat *sb)
{
	struct bbx_scratch *s = scratch_tls;
	uint64_t ep = bbx_stat_epoch;
	size_t l = ep && s ? strnlen(p, BBX_MEMO_PATH) : BBX_MEMO_PATH;
	if (l >= BBX_MEMO_PATH)
		return -2;
	for (int i = 0; i < BBX_MEMO_SLOTS; i++) {
		struct bbx_stat_memo *m = &s->memo[i];
		if (m->epoch == ep &&
		    (m->follow == follow || m->follow == 2 ||
		     (follow == 1 && m->follow == 0 && (m->ret || !S_ISLNK(m->sb.st_mode)))) &&
		    !memcmp(m->path, p, l + 1)) {
			if (m->ret == 0)
				*sb = m->sb;
			else
				errno = m->err;
			return m->ret;
		}
	}
	return -2;
}

/* The entry for the first l bytes of p put with follow 2 in this epoch, a directory
 * (the kernel's own name for it), or NULL. */
static const struct bbx_stat_memo *memo_kname(const char *p, size_t l)
{
	struct bbx_scratch *s = scratch_tls;
	uint64_t ep = bbx_stat_epoch;
	if (!ep || !s || l >= BBX_MEMO_PATH)
		return NULL;
	for (int i = 0; i < BBX_MEMO_SLOTS; i++) {
		const struct bbx_stat_memo *m = &s->memo[i];
		if (m->epoch == ep && m->follow >= 2 && m->ret == 0 && S_ISDIR(m->sb.st_mode) &&
		    !memcmp(m->path, p, l) && m->path[l] == 0)
			return m;
	}
	return NULL;
}

int bbx_stat_memo_kname(const char *p, size_t l)
{
	return memo_kname(p, l) != NULL;
}

int bbx_stat_memo_kname_stat(const char *p, struct stat *sb)
{
	const struct bbx_stat_memo *m = memo_kname(p, strnlen(p, BBX_MEMO_PATH));
	if (m)
		*sb = m->sb;
	return m != NULL;
}

void bbx_stat_memo_ident(const char *p, uint64_t dev, uint64_t ino)
{
	struct stat sb = {.st_dev = (dev_t)dev, .st_ino = (ino_t)ino, .st_mode = S_IFDIR};
	int e = errno;
	bbx_stat_memo_put(p, 3, 0, 0, &sb);
	errno = e;
}

void bbx_stat_memo_put(const char *p, int follow, int ret, int err, const struct stat *sb)
{
	struct bbx_scratch *s = scratch_tls;
	uint64_t ep = bbx_stat_epoch;
	size_t l = ep && s ? strnlen(p, BBX_MEMO_PATH) : BBX_MEMO_PATH;
	if (l >= BBX_MEMO_PATH)
		return;
	struct bbx_stat_memo *m = &s->memo[s->memo_next++ % BBX_MEMO_SLOTS];
	m->epoch = ep, m->follow = follow, m->ret = ret, m->err = err;
	if (ret == 0)
		m->sb = *sb;
	memcpy(m->path, p, l + 1);
	errno = err;
}

/* bbx_fdid (capture.h).  A sequence count per entry (odd while it is written) lets a
 * reader see a whole (dev, ino) or none; fdid_hi bounds the scans, so that a process
 * that never created a file through a descriptor only reads one variable per close. */
static struct {
	unsigned seq;
	uint64_t dev, ino;
} fdid[BBX_FDID_N];
BBX_HOT static int fdid_hi; /* one past the highest descriptor ever marked */

static void fdid_store(int fd, uint64_t dev, uint64_t ino)
{
	/* Not read first: on a page of the table no descriptor has marked yet, a load and
	 * then the compare-and-swap are two page faults (the zero page mapped, then
	 * replaced), where the compare-and-swap alone, a write even when it fails, is one
	 * (issue 5: two in every process that creates a file through a descriptor).  Its
	 * failure gives the entry's count, as the load did. */
	unsigned s = 0;
	for (;;) {
		s &= ~1u;
		if (__atomic_compare_exchange_n(&fdid[fd].seq, &s, s + 1, 0, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			break;
		__builtin_ia32_pause();
	}
	__atomic_store_n(&fdid[fd].dev, dev, __ATOMIC_RELAXED);
	__atomic_store_n(&fdid[fd].ino, ino, __ATOMIC_RELAXED);
	__atomic_store_n(&fdid[fd].seq, s + 2, __ATOMIC_RELEASE);
}

void bbx_fdid_set(int fd, uint64_t dev, uint64_t ino)
{
	if (fd < 0 || fd >= BBX_FDID_N || !ino)
		return;
	int hi = __atomic_load_n(&fdid_hi, __ATOMIC_RELAXED);
	while (hi <= fd && !__atomic_compare_exchange_n(&fdid_hi, &hi, fd + 1, 0,
						       __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	fdid_store(fd, dev, ino);
}

/* The mark of fd, whatever its kind: 1 and (dev with its flags, ino), or 0. */
static int fdid_load(int fd, uint64_t *dev, uint64_t *ino)
{
	if (fd < 0 || fd >= __atomic_load_n(&fdid_hi, __ATOMIC_RELAXED))
		return 0;
	unsigned s = __atomic_load_n(&fdid[fd].seq, __ATOMIC_ACQUIRE);
	if (s & 1)
		return 0;
	*dev = __atomic_load_n(&fdid[fd].dev, __ATOMIC_RELAXED);
	*ino = __atomic_load_n(&fdid[fd].ino, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return *ino && __atomic_load_n(&fdid[fd].seq, __ATOMIC_RELAXED) == s;
}

int bbx_fdid_get(int fd, uint64_t *dev, uint64_t *ino)
{
	return fdid_load(fd, dev, ino) && !(*dev & (BBX_FDID_READ | BBX_FDID_CLEAN));
}

int bbx_fdid_read_ok(int fd)
{
	uint64_t dev, ino;
	return fdid_load(fd, &dev, &ino) && (dev & (BBX_FDID_READ | BBX_FDID_CLEAN));
}

int bbx_fdid_clean(int fd)
{
	uint64_t dev, ino;
	if (!fdid_load(fd, &dev, &ino) || !(dev & BBX_FDID_CLEAN))
		return 0;
	return (int)((dev & BBX_FDID_LVL_MASK) >> BBX_FDID_LVL_SHIFT) + 1;
}

void bbx_fdid_identify(int fd, uint64_t dev, uint64_t ino)
{
	uint64_t md, mi;
	if (fdid_load(fd, &md, &mi) && (md & BBX_FDID_CLEAN) && !(md & BBX_FDID_READ))
		bbx_fdid_set(fd, (dev & ~BBX_FDID_LVL_MASK) | (md & BBX_FDID_LVL_MASK) |
				     BBX_FDID_READ | BBX_FDID_CLEAN,
			     ino);
}

void bbx_fdid_copy(int from, int to)
{
	uint64_t dev, ino;
	if (fdid_load(from, &dev, &ino))
		bbx_fdid_set(to, dev, ino);
}

int bbx_fdid_dir(int fd, uint64_t *dev, uint64_t *ino)
{
	if (!fdid_load(fd, dev, ino) || !(*dev & BBX_FDID_READ))
		return 0;
	*dev &= ~(BBX_FDID_READ | BBX_FDID_KEPT | BBX_FDID_CLEAN | BBX_FDID_LVL_MASK);
	return 1;
}

void bbx_fdid_forget(int lo, int hi)
{
	int top = __atomic_load_n(&fdid_hi, __ATOMIC_RELAXED);
	if (lo < 0)
		lo = 0;
	if (hi >= top)
		hi = top - 1;
	for (int fd = lo; fd <= hi; fd++)
		if (__atomic_load_n(&fdid[fd].ino, __ATOMIC_RELAXED) ||
		    (__atomic_load_n(&fdid[fd].seq, __ATOMIC_RELAXED) & 1))
			fdid_store(fd, 0, 0);
}

/* After the capture changed something (nlink and ctime of a linked target, a new
 * shard): what it asked before no longer holds. */
static void memo_forget(void)
{
	if (bbx_stat_epoch)
		bbx_stat_epoch++;
}

static int k_stat(const char *p, struct stat *sb) { return k_statat(p, sb, 1); }

static int k_lstat(const char *p, struct stat *sb) { return k_statat(p, sb, 0); }

static int k_fstat(int fd, struct stat *sb)
{
	int e = bbx_sys_fstatat(fd, "", sb, AT_EMPTY_PATH);
	if (e)
		errno = -e;
	return e ? -1 : 0;
}

/* procfs and sysfs: kernel state, not files.  A write there (oom_score_adj, uid_map
 * of a user namespace, a cgroup knob) has no pre-image an undo could put back, and an
 * undo - another process - would write its own /proc/self.  Not journaled. */
static int pseudo_fs(const char *path)
{
	/* The second byte first: every call of the capture asks, and two strncmp calls
	 * were ~50 instructions of each (callgrind, rm -r). */
	return path[0] == '/' && ((path[1] == 'p' && !strncmp(path, "/proc/", 6)) ||
				  (path[1] == 's' && !strncmp(path, "/sys/", 5)));
}

static int is_journal_dir(const struct bbx_run *run, const struct stat *sb)
{
	return S_ISDIR(sb->st_mode) &&
	       ((sb->st_dev == run->jdev && sb->st_ino == run->jino) ||
		(sb->st_dev == run->odev && sb->st_ino == run->oino));
}

/* Shards of objects/ carry the sticky bit (mode 01700), which user directories almost
 * never have: a cheap filter before the one stat that proves it (the parent is
 * objects/), whatever name or symlink the path reached the shard by. */
#define SHARD_MODE 01700

/* dir (whose stat is sb) is the journal directory, objects/, or one of its shards. */
static int is_protected_dir(const struct bbx_run *run, const char *dir, const struct stat *sb)
{
	if (is_journal_dir(run, sb))
		return 1;
	if (!S_ISDIR(sb->st_mode) || !(sb->st_mode & S_ISVTX) || sb->st_dev != run->odev)
		return 0;
	char up[PATH_MAX];
	struct stat ub;
	int n = bbx_sjoin(up, sizeof up, dir, "..");
	return n > 0 && (size_t)n < sizeof up && k_stat(up, &ub) == 0 &&
	       ub.st_dev == run->odev && ub.st_ino == run->oino;
}

/* Directories this thread stated and found to be neither the journal directory nor
 * objects/ nor a shard (protected_parent), by identity, with the namespace generation
 * of the finding (bbx_dname_gen).  The finding holds while the generation does: only a
 * rename can carry a directory into objects/, and only an inode number freed (rmdir)
 * and taken again by a new shard can make that identity a shard's; the run raises the
 * generation at each of those (bbx_nsgen_bump: renames, rmdir, make_shard).  A chmod -R
 * or a touch of files older than the run, in the default layout (the journal under
 * $HOME, on the workspace's filesystem), otherwise stated the directory again for
 * every entry: 1 system call of 3 the shim added to each META of chmod -R. */
#define UNPROT_SLOTS 16
static __thread struct {
	uint64_t dev, ino, gen;
} unprot[UNPROT_SLOTS] __attribute__((tls_model("initial-exec")));

static void unprot_put(const struct stat *sb)
{
	uint64_t gen = bbx_dname_gen();
	if (!gen || !S_ISDIR(sb->st_mode))
		return;
	unsigned k = (unsigned)sb->st_ino % UNPROT_SLOTS;
	unprot[k].dev = sb->st_dev;
	unprot[k].ino = sb->st_ino;
	unprot[k].gen = gen;
}

static int unprot_known(uint64_t dev, uint64_t ino)
{
	unsigned k = (unsigned)ino % UNPROT_SLOTS;
	uint64_t gen = unprot[k].gen;
	return gen && unprot[k].ino == ino && unprot[k].dev == dev && gen == bbx_dname_gen();
}

/* A directory whose words and identity were taken on trust (m: its memo entry, follow
 * 3; journal/path.c, cwd_kept): 1 when that identity alone shows it is neither the
 * journal directory nor objects/ nor a shard of it - which only a mode and a stat tell
 * apart, on the objects' device.  There, a directory the run made qualifies, and so
 * does one whose metadata the run has kept (a DIRMETA, level CONTENT): that capture
 * stated it and found it unprotected (cap_parent), and a shard is a new directory
 * which the shim makes in objects/, never a capture's; so does one this thread found
 * unprotected in this namespace generation (unprot_known).  An inode number the state
 * still lists is forgotten when the run removes the directory (bbx_cap_remove), so
 * the level cannot pass to a shard that reuses the number.  Without this, every
 * creation and removal in a directory that was there before the run paid one stat
 * of it whenever the journal shared its filesystem (the default: both under $HOME). */
static int trusted_unprotected(const struct bbx_run *run, const struct bbx_stat_memo *m)
{
	return m && m->follow == 3 && !is_journal_dir(run, &m->sb) &&
	       (m->sb.st_dev != run->odev || unprot_known(m->sb.st_dev, m->sb.st_ino) ||
		bbx_state_level(run->st, m->sb.st_dev, m->sb.st_ino) >= BBX_LVL_CONTENT);
}

/* dir, just stated (sb), is the working directory getcwd named in this very call: its
 * identity, for the next calls' check (path.c, cwd_kept), at no cost of its own.  From
 * the stat of a creation's or removal's directory (cap_parent), and from the
 * journal-directory check of an open for writing (protected_parent): a shell that only
 * appends to a file older than the run ("echo x >> log" in a loop) otherwise paid a
 * getcwd at every append, never having created anything there. */
static void cwd_learn(const char *dir, const struct stat *sb)
{
	if (!tls.cwd_ino && tls.cwd_gen && tls.cwd_epoch == bbx_stat_epoch &&
	    S_ISDIR(sb->st_mode) && !strcmp(dir, tls.cwd)) {
		tls.cwd_dev = sb->st_dev;
		tls.cwd_ino = sb->st_ino;
	}
}

/* Is path's parent the journal directory, objects/ or a shard (or path spelled inside
 * the journal directory)?  By identity of the parent, so "..", symlinked directories and
 * other spellings are caught, not only the literal prefix. */
static int protected_parent(const struct bbx_run *run, const char *path)
{
	if (in_journal_dir(run, path))
		return 1;
	const char *slash = strrchr(path, '/');
	if (!slash)
		return 0;
	size_t n = slash == path ? 1 : (size_t)(slash - path);
	char parent[PATH_MAX];
	if (n >= sizeof parent)
		return 0;
	memcpy(parent, path, n);
	parent[n] = 0;
	if (trusted_unprotected(run, memo_kname(parent, n)))
		return 0;
	struct stat sb;
	if (k_stat(parent, &sb) != 0)
		return 0;
	cwd_learn(parent, &sb);
	if (is_protected_dir(run, parent, &sb))
		return 1;
	unprot_put(&sb);
	return 0;
}

/* Is the entry at path inside the journal directory (or that directory itself)? */
static int protected_entry(const struct bbx_run *run, const char *path)
{
	struct stat sb;
	return protected_parent(run, path) ||
	       (k_lstat(path, &sb) == 0 && is_protected_dir(run, path, &sb));
}

/* The same for a call through a descriptor, named path by the kernel: the object the
 * call changes is the descriptor's (sb, its fstat), not whatever the name reaches now,
 * so no lstat of the name (issue 5: touch, an fd's truncate or META). */
static int protected_fd_entry(const struct bbx_run *run, const char *path,
			      const struct stat *sb)
{
	return protected_parent(run, path) || is_protected_dir(run, path, sb);
}

/* The kernel's name of the descriptor fd, right after POLICY in the same call: the name
 * the shim's policy read (shim/policy.c, write_hook: bbx_scratch lnk and lnk_fd1) when
 * there is one, else readlink of /proc/self/fd (~3-5 us, the dearest call of a
 * capture).  The policy sets lnk_fd1 on every decision, and every other writer of lnk
 * clears it, so it can only name this call's descriptor.  Two reads of the name would
 * not close the race with another thread renaming the file either. */
static int fd_name_after_policy(int fd, char *out, size_t cap)
{
	struct bbx_scratch *s = scratch_tls;
	if (s && s->lnk_fd1 == fd + 1 && fd >= 0) {
		s->lnk_fd1 = 0; /* used once */
		size_t l = strnlen(s->lnk, PATH_MAX);
		if (l < cap && s->lnk[0] == '/') {
			memcpy(out, s->lnk, l + 1);
			return 0;
		}
	}
	return bbx_path_fd(fd, out, cap);
}

/* The path a following call (open, truncate) really reaches when path is a symlink:
 * undo must restore the target, not replace the link with a file. */
static int resolve_final_symlink(const char *path, char *out, size_t cap)
{
	int fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = bbx_path_fd(fd, out, cap);
	close(fd);
	return rc;
}

static int level_of(struct bbx_run *run, const struct stat *sb)
{
	return bbx_state_level(run->st, sb->st_dev, sb->st_ino);
}

static void raise_to(struct bbx_run *run, const struct stat *sb, int lvl)
{
	(void)bbx_state_raise(run->st, sb->st_dev, sb->st_ino, lvl);
}

static void begin(struct bbx_enc *e, int type, const char *op, const char *path)
{
	bbx_enc_begin(e, tls.rec, sizeof tls.rec, type);
	bbx_enc_str(e, BBX_T_OP, op);
	bbx_enc_str(e, BBX_T_PATH, path);
}

static void enc_stat(struct bbx_enc *e, const struct stat *sb)
{
	struct bbx_stat s;
	bbx_stat_from(&s, sb);
	bbx_enc_stat(e, &s);
}

/* DIRMETA: the parent directory's metadata, once per run, before its first entry change,
 * so undo can put its mode and mtime back after restoring the entries. */
static int cap_parent(struct bbx_run *run, const char *op, const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return 0;
	size_t n = slash == path ? 1 : (size_t)(slash - path);
	if (n >= sizeof tls.tmp)
		return -ENAMETOOLONG;
	memcpy(tls.tmp, path, n);
	tls.tmp[n] = 0;
	struct stat sb;
	/* Proved earlier in the run's namespace generation, its identity trusted without
	 * a stat (path.c, cwd_kept): enough when that identity needs no DIRMETA either
	 * (made by the run, or kept already). */
	const struct bbx_stat_memo *m = memo_kname(tls.tmp, n);
	if (trusted_unprotected(run, m) && level_of(run, &m->sb) >= BBX_LVL_CONTENT)
		return 0;
	if (k_stat(tls.tmp, &sb) < 0 || !S_ISDIR(sb.st_mode))
		return 0; /* the call itself will fail */
	cwd_learn(tls.tmp, &sb);
	if (is_protected_dir(run, tls.tmp, &sb))
		return -EACCES; /* never an entry of the run's own journal directory */
	unprot_put(&sb);
	if (level_of(run, &sb) >= BBX_LVL_CONTENT)
		return 0;
	struct bbx_enc e;
	begin(&e, BBX_REC_DIRMETA, op, tls.tmp);
	enc_stat(&e, &sb);
	int rc = bbx_run_emit(run, &e, bbx_state_next_seq(run->st));
	if (rc == 0)
		raise_to(run, &sb, BBX_LVL_CONTENT);
	return rc;
}

/* Every extended attribute of from set on to.  The usual few fit the stack buffers; a
 * longer list or a larger value (up to the kernel's 64 KiB each, on file systems that
 * allow them) is read into a mapping (no malloc in a wrapper), not dropped.  An
 * attribute to cannot take (a namespace its file system or this process may not set) is
 * left out, as before. */
void bbx_copy_xattrs(int from, int to)
{
	char names_small[4096], val_small[4096], *names = names_small, *val = val_small;
	size_t ncap = sizeof names_small, vcap = sizeof val_small;
	void *big = NULL;
	const size_t bigsz = 2 * 65536;
	ssize_t n = flistxattr(from, names, ncap);
	if (n < 0 && errno == ERANGE) {
		big = mmap(NULL, bigsz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (big == MAP_FAILED)
			return;
		names = big;
		ncap = 65536;
		val = (char *)big + 65536;
		vcap = 65536;
		n = flistxattr(from, names, ncap);
	}
	for (ssize_t i = 0; n > 0 && i < n; i += (ssize_t)strlen(names + i) + 1) {
		ssize_t v = fgetxattr(from, names + i, val, vcap);
		if (v < 0 && errno == ERANGE && !big) {
			big = mmap(NULL, bigsz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				   -1, 0);
			if (big == MAP_FAILED) {
				big = NULL;
				continue;
			}
			val = (char *)big + 65536;
			vcap = 65536;
			v = fgetxattr(from, names + i, val, vcap);
		}
		if (v >= 0)
			(void)fsetxattr(to, names + i, val, (size_t)v, 0);
	}
	if (big)
		munmap(big, bigsz);
}

/* [journal] sync = group | always: an object and its directory entry are durable
 * before the record that names them is written (a durable record naming a lost object
 * would be worse than no record).  fsync of the directory holding path. */
/* The directory part of path into d (PATH_MAX).  0 or -ENAMETOOLONG. */
static int dir_of(const char *path, char *d)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0;
	if (!n || n >= PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(d, path, n);
	d[n] = 0;
	return 0;
}

static int sync_dir_of(const char *path)
{
	char d[PATH_MAX];
	if (dir_of(path, d))
		return -ENAMETOOLONG;
	int fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = bbx_sys.fsync(fd) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

/* The shard directory of an object path, made on its first use (and, when the run
 * syncs, made durable in objects/). */
static int make_shard(struct bbx_run *run, const char *objpath)
{
	char d[PATH_MAX];
	if (dir_of(objpath, d))
		return -ENAMETOOLONG;
	int r = mkdir(d, SHARD_MODE);
	memo_forget();
	if (r < 0)
		return errno == EEXIST ? 0 : -errno;
	/* a new shard may have taken the inode number of a directory found unprotected
	 * (unprot_known) and since removed behind the run's back */
	bbx_nsgen_bump();
	return bbx_run_sync_mode(run) != BBX_SYNC_OFF ? sync_dir_of(d) : 0;
}

__attribute__((weak)) uint64_t bbx_preserve_max = UINT64_MAX;
__attribute__((weak)) int (*bbx_cap_oversize)(const char *op, const char *path,
					      const struct stat *sb, struct bbx_oversize *out);

/* A copy this large gets a NOTE before it starts: the call it precedes waits for it,
 * and bbx-log (--follow too) then shows why. */
#define PRESERVE_NOTICE (64ull << 20)

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A pair of filesystems (the file's, the objects directory's) between which FICLONE
 * failed for good - the filesystem has no reflinks (ext4, tmpfs: EOPNOTSUPP, or ENOTTY
 * from an older one) or they are two (EXDEV) - so that the next copies between them in
 * this process skip the ioctl (one system call a preserved copy: touch, an in-place
 * edit).  Not EINVAL, which can be the file's own case.  A pair is packed into one word
 * (written and read whole: threads never see half of one); two pairs that pack alike
 * only cost a clone that is not tried, and a byte copy is as good a pre-image. */
static uint64_t no_clone;

static uint64_t clone_pair(uint64_t src, uint64_t dst)
{
	return (src * 0x9e3779b97f4a7c15ull) ^ dst ^ 1;
}

/* The same for the two other ways of keeping a file that only work within one
 * filesystem: a pair whose hard link into objects/ (no_link) or copy_file_range
 * (no_cfr) failed with EXDEV, so that the next pre-images between them in this process
 * go straight to the byte copy (issue 5: a workspace on a tmpfs /tmp with the state
 * directory on the disk, where every removal or rename over a file tried both, two
 * system calls of ~9 per file kept).  Only pairs of two different filesystems are
 * remembered: between two mounts of one filesystem (a bind mount) linkat fails with
 * EXDEV too, while another directory of the same st_dev may link - that failure is the
 * file's own case.  A pair that packs like another only costs a link or a
 * copy_file_range that is not tried: a byte copy is as good a pre-image. */
static uint64_t no_link, no_cfr;

static int xdev_known(const uint64_t *memo, uint64_t src, uint64_t dst)
{
	return src != dst && __atomic_load_n(memo, __ATOMIC_RELAXED) == clone_pair(src, dst);
}

static void xdev_learn(uint64_t *memo, uint64_t src, uint64_t dst, int err)
{
	if (err == EXDEV && src != dst)
		__atomic_store_n(memo, clone_pair(src, dst), __ATOMIC_RELAXED);
}

/* Pre-images up to this size go into the run's shared object when no reflink is to be
 * had (weak: the unit tests that inject faults into an object file's writes set 0). */
#define PACK_MAX (1u << 20)
__attribute__((weak)) uint64_t bbx_pack_max = PACK_MAX;

/* [journal] max_preserve for a byte copy of sb's size: 0 to copy, > 0 to go on
 * without one (*ov says why), -errno when refused (DENY written). */
static int over_limit(const char *op, const char *path, const struct stat *sb,
		      struct bbx_oversize *ov)
{
	if ((uint64_t)sb->st_size <= __atomic_load_n(&bbx_preserve_max, __ATOMIC_RELAXED) ||
	    !bbx_cap_oversize)
		return 0;
	return bbx_cap_oversize(op, path, sb, ov);
}

/* Whether the file at fd has extended attributes (an ACL is one) that a copy must
 * carry: a packed range cannot.  An error other than "none here" counts as yes. */
static int has_xattrs(int fd)
{
	ssize_t n = flistxattr(fd, NULL, 0);
	return n > 0 || (n < 0 && errno != ENOTSUP);
}

/* One step of a byte copy by pread and write (at_out: pwrite at *out_off): the bytes
 * copied (both offsets advanced), 0 at the end of srcfd, or -1 with errno (a short
 * write is ENOSPC). */
static ssize_t copy_chunk(int srcfd, int out, off_t *in_off, off_t *out_off, size_t want,
			  int at_out)
{
	char buf[COPY_BUF];
	ssize_t n = pread(srcfd, buf, want < sizeof buf ? want : sizeof buf, *in_off);
	if (n <= 0)
		return n;
	ssize_t w = at_out ? bbx_sys.pwrite(out, buf, (size_t)n, *out_off)
			   : bbx_sys.write(out, buf, (size_t)n);
	if (w != n)
		return w < 0 ? -1 : (errno = ENOSPC, -1);
	*in_off += n;
	*out_off += n;
	return n;
}

int bbx_copy_range(int in, off_t *in_off, int out, off_t *out_off, uint64_t len,
		   uint64_t *copied)
{
	int cfr = 1, err = 0;
	return bbx_copy_range_cfr(in, in_off, out, out_off, len, copied, &cfr, &err);
}

int bbx_copy_range_cfr(int in, off_t *in_off, int out, off_t *out_off, uint64_t len,
		       uint64_t *copied, int *cfr, int *cfr_err)
{
	uint64_t left = len;
	int use_cfr = *cfr;
	while (left > 0) {
		size_t want = left > (1u << 30) ? (1u << 30) : (size_t)left;
		ssize_t n;
		if (use_cfr) {
			n = bbx_sys.copy_file_range(in, in_off, out, out_off, want, 0);
			if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
				      errno == EOPNOTSUPP)) {
				*cfr = use_cfr = 0;
				*cfr_err = errno;
				continue;
			}
		} else {
			n = copy_chunk(in, out, in_off, out_off, want, 1);
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			*copied = len - left;
			return -errno;
		}
		if (n == 0)
			break;
		left -= (uint64_t)n;
	}
	*copied = len - left;
	return 0;
}

/* The process's descriptor to objects/pack, kept open from one packed copy to the next
 * (O_CLOEXEC, moved up among the journal's): an open and a close of the object by its
 * absolute path per pre-image were two of the ~9 system calls of a small file kept by
 * copy (issue 5: a removal across filesystems, touch or an O_TRUNC rewrite of a file
 * older than the run).  Trusted only after an fstat finds the pack's identity at that
 * number, still linked: a program may have closed it and opened something else there
 * (closefrom, a raw close), a vfork child that opened it leaves its number, valid in
 * its own table only, in the memory it shares with its parent, and a tool may open
 * another run (same struct, a journal directory removed and made again).  Each time
 * the check fails and the pack is opened again; the descriptor found there is never
 * closed (it may be the program's).  pack_id: the objects directory (dev, ino) and the
 * pack's, as found when it was opened.  pack_out returns the descriptor to write the
 * copy through (*opened: 1 when it is this copy's alone, to be closed after it), or
 * -errno. */
static int pack_fd = -1;
static uint64_t pack_id[4];

static int pack_out(struct bbx_run *run, int *opened)
{
	*opened = 0;
	int fd = __atomic_load_n(&pack_fd, __ATOMIC_ACQUIRE);
	struct stat sb;
	if (fd >= 0 && __atomic_load_n(&pack_id[0], __ATOMIC_RELAXED) == run->odev &&
	    __atomic_load_n(&pack_id[1], __ATOMIC_RELAXED) == run->oino &&
	    bbx_sys_fstatat(fd, "", &sb, AT_EMPTY_PATH) == 0 && S_ISREG(sb.st_mode) &&
	    sb.st_nlink > 0 && sb.st_dev == __atomic_load_n(&pack_id[2], __ATOMIC_RELAXED) &&
	    sb.st_ino == __atomic_load_n(&pack_id[3], __ATOMIC_RELAXED))
		return fd;
	int rc = bbx_run_pack_path(run, tls.obj, sizeof tls.obj);
	if (rc)
		return rc;
	int o = open(tls.obj, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (o < 0)
		return -errno;
	*opened = 1;
	if (bbx_sys_fstatat(o, "", &sb, AT_EMPTY_PATH) != 0)
		return o; /* used once, not kept */
	int hi = fcntl(o, F_DUPFD_CLOEXEC, BBX_WRITER_FD_MIN);
	if (hi < 0)
		return o;
	close(o);
	/* Another thread that opened one meanwhile keeps its own; this one is used once. */
	if (!__atomic_compare_exchange_n(&pack_fd, &fd, -1, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return hi;
	__atomic_store_n(&pack_id[0], run->odev, __ATOMIC_RELAXED);
	__atomic_store_n(&pack_id[1], run->oino, __ATOMIC_RELAXED);
	__atomic_store_n(&pack_id[2], (uint64_t)sb.st_dev, __ATOMIC_RELAXED);
	__atomic_store_n(&pack_id[3], (uint64_t)sb.st_ino, __ATOMIC_RELAXED);
	fd = -1;
	*opened = !__atomic_compare_exchange_n(&pack_fd, &fd, hi, 0, __ATOMIC_ACQ_REL,
					       __ATOMIC_ACQUIRE);
	return hi;
}

/* Keeps the first size bytes of srcfd in the run's shared object (objects/pack), in a
 * range reserved for them alone by raising the state's BBX_PACK_END: no inode and no
 * directory entry of its own.  A byte copy of a small file into an object of its own
 * cost a new inode, and on a filesystem without a journal the inode allocator reads
 * the inode table past every inode freed in the last seconds (ext4's recently_deleted:
 * cp -a over a tree of 5,600 files right after an rm -rf took 4.7 times as long as
 * bare, 60 % of it there; issue 5).  *off: where the range starts; *kept: the bytes
 * copied (fewer if the file shrank meanwhile: the rest of the range stays a hole that
 * no record names).  Concurrent processes write disjoint ranges; the object is only
 * ever written at reserved offsets, never truncated. */
static int pack_copy(struct bbx_run *run, uint64_t *pk, int srcfd, uint64_t sdev,
		     uint64_t size, uint64_t *off, uint64_t *kept)
{
	int sync = bbx_run_sync_mode(run) != BBX_SYNC_OFF, once;
	int out = pack_out(run, &once);
	if (out < 0)
		return out;
	*off = __atomic_fetch_add(&pk[BBX_PACK_END], size, __ATOMIC_RELAXED);
	off_t in_off = 0, out_off = (off_t)*off;
	/* (A file that shrank under us: what is there is the pre-image.) */
	int cfr = !xdev_known(&no_cfr, sdev, run->odev), err = 0;
	int rc = bbx_copy_range_cfr(srcfd, &in_off, out, &out_off, size, kept, &cfr, &err);
	xdev_learn(&no_cfr, sdev, run->odev, err);
	if (!rc && sync && bbx_sys.fsync(out) < 0)
		rc = -errno;
	if (once && close(out) < 0 && !rc)
		rc = -errno;
	if (!rc && sync && (rc = bbx_run_pack_path(run, tls.obj, sizeof tls.obj)) == 0)
		rc = sync_dir_of(tls.obj); /* the object's name, made by the first copy */
	return rc;
}

/* Keeps srcfd's content (the regular file at path, status sb) as a new object: a reflink
 * where the filesystem can, else a byte copy - unless the copy would exceed
 * [journal] max_preserve, when the policy (bbx_cap_oversize) decides: copy anyway
 * (audit), refuse (-errno, DENY written), or go on without a copy (*how = LOST, *ov
 * says why, no object).  *ns gets the time a byte copy took.  The caller must not hold
 * a record in the thread's buffer: a NOTE or a DENY may be written here. */
static int preserve_copy(struct bbx_run *run, uint64_t seq, int srcfd, const struct stat *sb,
			 const char *op, const char *path, int *how, uint64_t *ns,
			 struct bbx_oversize *ov, uint64_t *off, uint64_t *kept)
{
	*ns = 0;
	*off = 0;
	*kept = (uint64_t)sb->st_size;
	uint64_t pair = clone_pair(sb->st_dev, run->odev);
	uint64_t *pk = bbx_state_pack(run->st);
	/* No reflink to be had (known to this process for this pair of filesystems, or to
	 * the run for its objects directory): a small file without extended attributes is
	 * packed. */
	if (pk && (uint64_t)sb->st_size <= __atomic_load_n(&bbx_pack_max, __ATOMIC_RELAXED) &&
	    (__atomic_load_n(&no_clone, __ATOMIC_RELAXED) == pair ||
	     (__atomic_load_n(&pk[BBX_PACK_FLAGS], __ATOMIC_RELAXED) & BBX_PACK_NOCLONE)) &&
	    !has_xattrs(srcfd)) {
		int d = over_limit(op, path, sb, ov);
		if (d) {
			if (d < 0)
				return d; /* refused: DENY written, the call fails */
			*how = BBX_HOW_LOST;
			return 0;
		}
		uint64_t t0 = mono_ns();
		int rc = pack_copy(run, pk, srcfd, sb->st_dev, (uint64_t)sb->st_size, off, kept);
		if (rc)
			return rc;
		*ns = mono_ns() - t0;
		*how = BBX_HOW_PACKED;
		return 0;
	}
	int rc = bbx_run_object_path(run, seq, tls.obj, sizeof tls.obj);
	if (rc)
		return rc;
	int sync = bbx_run_sync_mode(run) != BBX_SYNC_OFF;
	int out = open(tls.obj, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0 && errno == ENOENT && make_shard(run, tls.obj) == 0)
		out = open(tls.obj, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0)
		return -errno;
	bbx_copy_xattrs(srcfd, out); /* a copy is a new inode: it must carry them */
	uint64_t size = (uint64_t)sb->st_size;
	if (__atomic_load_n(&no_clone, __ATOMIC_RELAXED) != pair) {
		if (ioctl(out, FICLONE, srcfd) == 0) {
			/* Shared extents cost no space and no time: never limited. */
			*how = BBX_HOW_REFLINK;
			goto done;
		}
		if (errno == EOPNOTSUPP || errno == EXDEV || errno == ENOTTY)
			__atomic_store_n(&no_clone, pair, __ATOMIC_RELAXED);
		/* Not EXDEV (the file's own filesystem elsewhere): the objects directory's
		 * filesystem has no reflinks at all, and the whole run may know it. */
		if (pk && (errno == EOPNOTSUPP || errno == ENOTTY))
			__atomic_fetch_or(&pk[BBX_PACK_FLAGS], BBX_PACK_NOCLONE, __ATOMIC_RELAXED);
	}
	/* The size from the stat the caller already made: no system call more. */
	int d = over_limit(op, path, sb, ov);
	if (d) {
		close(out);
		unlink(tls.obj);
		if (d < 0)
			return d; /* refused: DENY written, the call fails */
		*how = BBX_HOW_LOST;
		return 0;
	}
	if (size >= PRESERVE_NOTICE) {
		char hs[32], text[96];
		bbx_fmt_size(size, hs, sizeof hs);
		snprintf(text, sizeof text, "preserving %s by copy before the call", hs);
		if ((rc = bbx_cap_note(run, op, path, text)))
			goto fail;
	}
	*how = BBX_HOW_COPY;
	uint64_t t0 = mono_ns();
	off_t in_off = 0, out_off = 0;
	uint64_t left = size;
	int use_cfr = !xdev_known(&no_cfr, sb->st_dev, run->odev);
	while (left > 0 || !use_cfr) {
		ssize_t n;
		if (use_cfr) {
			n = bbx_sys.copy_file_range(srcfd, &in_off, out, &out_off,
						    left > (1u << 30) ? (1u << 30) : left, 0);
			if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
				      errno == EOPNOTSUPP)) {
				xdev_learn(&no_cfr, sb->st_dev, run->odev, errno);
				use_cfr = 0;
				continue;
			}
			if (n == 0)
				break; /* file shrank under us: what is there is the pre-image */
		} else {
			/* At out_off, where copy_file_range left off if it copied a part
			 * before it was refused (it does not move the file offset). */
			n = copy_chunk(srcfd, out, &in_off, &out_off, COPY_BUF, 1);
			if (n == 0)
				break; /* end of file (also covers growth while copying) */
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			goto fail;
		}
		if (use_cfr)
			left -= (uint64_t)n;
	}
	*ns = mono_ns() - t0;
done:
	if (sync && bbx_sys.fsync(out) < 0) {
		rc = -errno;
		goto fail;
	}
	if (close(out) < 0) {
		rc = -errno;
		out = -1;
		goto fail;
	}
	out = -1;
	if (sync && (rc = sync_dir_of(tls.obj)))
		goto fail;
	return 0;
fail:
	if (out >= 0)
		close(out);
	unlink(tls.obj);
	return rc;
}

/* The fields a PRESERVE gets from preserve_copy: OBJECT (unless lost), SIZE (the
 * length kept, or not kept), DURATION of a byte copy, and for a lost pre-image the
 * policy's RULE and REASON; a packed one names the shared object, its OFFSET there
 * and, as SIZE, the bytes it copied. */
static void enc_kept(struct bbx_enc *e, uint64_t seq, int how, uint64_t size, uint64_t ns,
		     const struct bbx_oversize *ov, uint64_t off, uint64_t kept)
{
	if (how == BBX_HOW_LOST) {
		bbx_enc_u64(e, BBX_T_SIZE, size);
		if (ov->rule)
			bbx_enc_str(e, BBX_T_RULE, ov->rule);
		if (ov->reason[0])
			bbx_enc_str(e, BBX_T_REASON, ov->reason);
		return;
	}
	if (how == BBX_HOW_PACKED) {
		bbx_enc_str(e, BBX_T_OBJECT, BBX_PACK_OBJECT);
		bbx_enc_u64(e, BBX_T_OFFSET, off);
		bbx_enc_u64(e, BBX_T_SIZE, kept);
		bbx_enc_u64(e, BBX_T_DURATION, ns);
		return;
	}
	char name[32];
	bbx_run_object_name(seq, name, sizeof name);
	bbx_enc_str(e, BBX_T_OBJECT, name);
	bbx_enc_u64(e, BBX_T_SIZE, size);
	if (how == BBX_HOW_COPY)
		bbx_enc_u64(e, BBX_T_DURATION, ns);
}

/* PRESERVE of an existing regular file's content (O_TRUNC, in-place write, shrink). */
static int preserve_content(struct bbx_run *run, const char *op, const char *path, int fd,
			    const struct stat *sb)
{
	int src = fd, rc;
	if (src < 0 || (fcntl(src, F_GETFL) & O_ACCMODE) == O_WRONLY) {
		/* Read through a fresh descriptor: the caller's may be write-only. */
		if (fd >= 0) {
			char fdp[64];
			bbx_fd_path(fdp, sizeof fdp, fd);
			src = open(fdp, O_RDONLY | O_CLOEXEC);
		} else {
			src = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		}
		if (src < 0)
			return -errno; /* cannot read what we would destroy: refuse */
	}
	uint64_t seq = bbx_state_next_seq(run->st), ns;
	int how;
	struct bbx_oversize ov = {0};
	uint64_t off, kept;
	rc = preserve_copy(run, seq, src, sb, op, path, &how, &ns, &ov, &off, &kept);
	if (src != fd)
		close(src);
	if (rc)
		return rc;
	struct bbx_enc e;
	begin(&e, BBX_REC_PRESERVE, op, path);
	bbx_enc_u32(&e, BBX_T_KIND, BBX_KIND_FILE);
	bbx_enc_u32(&e, BBX_T_HOW, (uint32_t)how);
	enc_kept(&e, seq, how, (uint64_t)sb->st_size, ns, &ov, off, kept);
	enc_stat(&e, sb);
	rc = bbx_run_emit(run, &e, seq);
	if (rc) {
		/* (A record appended but not made durable - sync - still names its object.
		 * A packed range is left as a hole nothing names.) */
		if (how != BBX_HOW_LOST && how != BBX_HOW_PACKED && bbx_run_last_seq != seq) {
			bbx_run_object_path(run, seq, tls.obj, sizeof tls.obj);
			unlink(tls.obj);
		}
		return rc;
	}
	/* A lost pre-image is not kept later either: what the file held at the run's
	 * start is gone with this call, and undo reports the path as not restorable. */
	raise_to(run, sb, BBX_LVL_CONTENT);
	return 0;
}

/* SIZE: the original length, enough to undo growth and appends. */
static int record_size(struct bbx_run *run, const char *op, const char *path,
		       const struct stat *sb)
{
	struct bbx_enc e;
	begin(&e, BBX_REC_SIZE, op, path);
	bbx_enc_u64(&e, BBX_T_SIZE, (uint64_t)sb->st_size);
	enc_stat(&e, sb);
	int rc = bbx_run_emit(run, &e, bbx_state_next_seq(run->st));
	if (rc == 0)
		/* An empty file's whole content is its length: that is a full pre-image. */
		raise_to(run, sb, sb->st_size == 0 ? BBX_LVL_CONTENT : BBX_LVL_SIZE);
	return rc;
}

/* CREATE, once the policy has allowed it. */
static int create_record(struct bbx_run *run, const char *op, const char *path, int kind,
			 uint32_t mode, const char *target, int how, struct bbx_pending *pend);

int bbx_cap_create(struct bbx_run *run, const char *op, const char *path, int kind,
		   uint32_t mode, const char *target, struct bbx_pending *pend)
{
	if (!bbx_scratch())
		return -ENOMEM;
	if (kind == BBX_KIND_SYMLINK)
		bbx_nsgen_bump(); /* it may stand where a directory of a proved name was */
	POLICY(op, path, -1, 0);
	return create_record(run, op, path, kind, mode, target, BBX_HOW_NONE, pend);
}

int bbx_cap_create_excl(struct bbx_run *run, const char *op, const char *path, int kind,
			uint32_t mode, struct bbx_pending *pend)
{
	if (!bbx_scratch())
		return -ENOMEM;
	POLICY(op, path, -1, BBX_POL_NEWNAME);
	return create_record(run, op, path, kind, mode, NULL, BBX_HOW_EXCL, pend);
}

int bbx_cap_link(struct bbx_run *run, const char *op, const char *path, const char *source,
		 struct bbx_pending *pend)
{
	if (!bbx_scratch())
		return -ENOMEM;
	POLICY(op, path, -1, BBX_POL_NEWNAME);
	uint64_t dev = pend->dev, ino = pend->ino;
	int rc = create_record(run, op, path, BBX_KIND_HARDLINK, 0, source, BBX_HOW_EXCL, pend);
	pend->dev = dev, pend->ino = ino;
	return rc;
}

static int create_record(struct bbx_run *run, const char *op, const char *path, int kind,
			 uint32_t mode, const char *target, int how, struct bbx_pending *pend)
{
	if (pseudo_fs(path))
		return 0;
	pend->seq = 0;
	pend->pgen = 0;
	if (in_journal_dir(run, path))
		return -EACCES;
	/* A second name for a journal file would let it be changed.  (Only its parent can
	 * be protected: a directory cannot be hard-linked.) */
	if (kind == BBX_KIND_HARDLINK && target && protected_parent(run, target))
		return -EACCES;
	int rc = kind == BBX_KIND_ANON ? 0 : cap_parent(run, op, path);
	if (rc)
		return rc;
	struct bbx_enc e;
	begin(&e, BBX_REC_CREATE, op, path);
	bbx_enc_u32(&e, BBX_T_KIND, (uint32_t)kind);
	bbx_enc_u32(&e, BBX_T_FLAGS, mode);
	if (how != BBX_HOW_NONE)
		bbx_enc_u32(&e, BBX_T_HOW, (uint32_t)how);
	if (target && kind == BBX_KIND_SYMLINK)
		bbx_enc_bytes(&e, BBX_T_TARGET, target, strlen(target));
	else if (target)
		bbx_enc_str(&e, BBX_T_PATH2, target);
	uint64_t seq = bbx_state_next_seq(run->st);
	rc = bbx_run_emit(run, &e, seq);
	if (rc)
		return rc;
	pend->seq = seq;
	pend->kind = kind;
	pend->excl = how == BBX_HOW_EXCL;
	pend->path = path;
	/* A new directory in one whose words the policy proved in this epoch (opened by
	 * exactly these words, no symlink on the way): once made, its own words are proved
	 * too (bbx_cap_done).  The next creation in it then needs no getcwd, no opening of
	 * the directory and no fstat (git's object shards, tar -x, npm; issue 5). */
	const char *sl = kind == BBX_KIND_DIR ? strrchr(path, '/') : NULL;
	if (sl && sl[1] && bbx_stat_memo_kname(path, sl == path ? 1 : (size_t)(sl - path)))
		pend->pgen = bbx_dname_gen();
	return 0;
}

void bbx_cap_done(struct bbx_run *run, const char *op, struct bbx_pending *pend, long ret,
		  int err, int fd)
{
	if (pend->kino && ret >= 0 && fd >= 0)
		bbx_fdid_set(fd, pend->kdev | BBX_FDID_KEPT, pend->kino);
	if (!bbx_scratch())
		return;
	if (!pend->seq)
		return;
	struct stat sb;
	int have = 0;
	/* path NULL: the caller's scratch was reused during its call (a signal handler);
	 * without an inode in its RESULT, undo falls back to the birth-time check. */
	if (ret >= 0 && pend->kind == BBX_KIND_HARDLINK && pend->ino) {
		sb.st_dev = (dev_t)pend->dev, sb.st_ino = (ino_t)pend->ino;
		have = 1;
	} else if (ret >= 0 && pend->kind != BBX_KIND_ANON && (fd >= 0 || pend->path)) {
		have = (fd >= 0 ? k_fstat(fd, &sb) : k_lstat(pend->path, &sb)) == 0;
	}
	struct bbx_enc e;
	begin(&e, BBX_REC_RESULT, op, pend->path);
	bbx_enc_u64(&e, BBX_T_REF, pend->seq);
	bbx_enc_i64(&e, BBX_T_RET, ret);
	bbx_enc_u32(&e, BBX_T_ERR, (uint32_t)(ret < 0 ? err : 0));
	if (have) {
		bbx_enc_u64(&e, BBX_T_DEV, sb.st_dev);
		bbx_enc_u64(&e, BBX_T_INO, sb.st_ino);
	}
	/* A lost RESULT only makes undo more careful (it then checks birth time), so an
	 * error here does not undo the call that already happened.  An exclusive create
	 * that failed writes its RESULT at once: that name was not looked up before, and
	 * without the RESULT undo could tell the file that was there only by its birth time
	 * (journal-format.md 5.3), so the window in which a kill loses it stays microseconds
	 * long, not until the process's next record. */
	uint64_t rseq = bbx_state_next_seq(run->st);
	int erc = pend->excl && ret < 0 ? bbx_run_emit(run, &e, rseq)
					: bbx_run_emit_later(run, &e, rseq);
	/* The directory made where the words led, in a namespace generation nothing has
	 * changed since its parent was proved: the words name it (the lstat above made the
	 * call's own lookup, bbx_at_set). */
	if (have && ret == 0 && pend->kind == BBX_KIND_DIR && pend->pgen && pend->path &&
	    S_ISDIR(sb.st_mode) && pend->pgen == bbx_dname_gen())
		bbx_dname_put(pend->path, &sb, pend->pgen);
	if (erc == 0 && have && pend->kind != BBX_KIND_HARDLINK) {
		raise_to(run, &sb, BBX_LVL_CREATED);
		if (fd >= 0)
			bbx_fdid_set(fd, sb.st_dev, sb.st_ino);
	}
	pend->seq = 0;
}

/* Where O_CREAT through a dangling symlink will create the file. */
static int follow_dangling(const char *path, char *out, size_t cap)
{
	char cur[PATH_MAX];
	bbx_scopy(cur, sizeof cur, path);
	tls.lnk_fd1 = 0; /* lnk holds a link's target now (fd_name_after_policy) */
	for (int hops = 0; hops < 40; hops++) {
		ssize_t n = readlink(cur, tls.lnk, sizeof tls.lnk - 1);
		if (n < 0) {
			if (errno != EINVAL && errno != ENOENT)
				return -errno;
			break; /* not a symlink (or absent): cur is the name to be created */
		}
		tls.lnk[n] = 0;
		if (tls.lnk[0] == '/') {
			bbx_scopy(cur, sizeof cur, tls.lnk);
		} else {
			char *slash = strrchr(cur, '/');
			size_t dl = slash ? (size_t)(slash - cur) : 0;
			if (dl + 1 + (size_t)n + 1 > sizeof cur)
				return -ENAMETOOLONG;
			memmove(cur + dl + 1, tls.lnk, (size_t)n + 1);
			cur[dl] = '/';
		}
	}
	int m = bbx_scopy(out, cap, cur);
	return m < 0 || (size_t)m >= cap ? -ENAMETOOLONG : 0;
}

/* A change to an already-captured file costs nothing while the run lasts.  After the
 * run was sealed (a process of it outlived bbx-run), it is worth one NOTE: undo then
 * knows the path changed after its FINAL record by the run itself, not by a stranger. */
static int covered(struct bbx_run *run, const char *op, const char *path)
{
	if (!(__atomic_load_n(&run->st->flags, __ATOMIC_ACQUIRE) & BBX_STATE_SEALED))
		return 0;
	return bbx_cap_note(run, op, path, "changed after the run was sealed");
}

int bbx_cap_open(struct bbx_run *run, const char *op, const char *path, int oflags,
		 uint32_t mode, char *resolved, struct bbx_pending *pend)
{
	if (!bbx_scratch())
		return -ENOMEM;
	int excl = (oflags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL);
	POLICY(op, path, -1, excl ? BBX_POL_NEWNAME : !(oflags & O_NOFOLLOW));
	pend->seq = 0;
	pend->kino = 0;
	int acc = oflags & O_ACCMODE;
	int writes = acc != O_RDONLY || (oflags & O_TRUNC);
	if (!writes && !(oflags & O_CREAT))
		return 0;
	if ((oflags & O_TMPFILE) == O_TMPFILE)
		return 0; /* unnamed until linkat(), which is captured then */
	if (in_journal_dir(run, path))
		return -EACCES;
	/* O_CREAT|O_EXCL makes a new name or fails with EEXIST: it follows no final
	 * symlink and leaves whatever is there alone, so nothing can need a pre-image and
	 * the name is not looked up first (a negative lookup, 2.3 us here, for every file
	 * tar extracts and every temporary file mkstemp makes).  When the name exists, the
	 * CREATE's RESULT says the call failed and undo passes over it; a RESULT that never
	 * came (the process killed in between) leaves undo its birth-time check. */
	if (excl) {
		if (path != resolved)
			bbx_scopy(resolved, PATH_MAX, path);
		return create_record(run, op, resolved, BBX_KIND_FILE, mode, NULL, BBX_HOW_EXCL,
				     pend);
	}
	struct stat sb;
	int rc = k_lstat(path, &sb), dangling = 0;
	if (rc == 0 && S_ISLNK(sb.st_mode) && !(oflags & O_NOFOLLOW)) {
		/* Decide and record on what the call reaches. */
		if (k_stat(path, &sb) < 0) {
			rc = -1, errno = ENOENT; /* dangling: O_CREAT creates the target */
			dangling = 1;
		} else if (!S_ISREG(sb.st_mode)) {
			return 0; /* /dev/stdout -> a pipe, a tty: nothing on disk to keep */
		} else if (resolve_final_symlink(path, resolved, PATH_MAX) == 0) {
			path = resolved;
		}
	}
	if (pseudo_fs(path))
		return 0;
	if (rc < 0) {
		if (errno != ENOENT || !(oflags & O_CREAT))
			return 0; /* the call fails the same way */
		const char *target = path;
		/* Only a dangling symlink has a target to follow (lstat found nothing else). */
		if (dangling && !(oflags & (O_EXCL | O_NOFOLLOW))) {
			rc = follow_dangling(path, resolved, PATH_MAX);
			if (rc)
				return rc;
			target = resolved;
			if (in_journal_dir(run, target))
				return -EACCES;
		}
		if (target != resolved)
			bbx_scopy(resolved, PATH_MAX, target);
		/* The policy decided above on what the call reaches (a dangling symlink
		 * followed): no second decision. */
		return create_record(run, op, resolved, BBX_KIND_FILE, mode, NULL, BBX_HOW_NONE,
				     pend);
	}
	if (S_ISFIFO(sb.st_mode) && writes && level_of(run, &sb) < BBX_LVL_CONTENT) {
		/* Data through a fifo leaves nothing behind but the fifo's times: keep them. */
		struct bbx_enc e;
		begin(&e, BBX_REC_META, op, path);
		bbx_enc_u32(&e, BBX_T_MASK, BBX_META_TIMES);
		enc_stat(&e, &sb);
		rc = bbx_run_emit(run, &e, bbx_state_next_seq(run->st));
		if (rc == 0)
			raise_to(run, &sb, BBX_LVL_CONTENT);
		return rc;
	}
	if (!S_ISREG(sb.st_mode) || !writes)
		return 0; /* devices, ttys: nothing an undo could restore */
	int lvl = level_of(run, &sb);
	if (lvl < BBX_LVL_CONTENT && protected_entry(run, path))
		return -EACCES;
	/* O_APPEND alone only ever adds bytes, so the length is a full pre-image; but a
	 * read-write descriptor can be mapped and written in place (mmap ignores
	 * O_APPEND): that is an in-place write. */
	if ((oflags & O_TRUNC) || !(oflags & O_APPEND) || acc == O_RDWR) {
		if (lvl > BBX_LVL_CONTENT)
			return covered(run, op, path);
		rc = lvl == BBX_LVL_CONTENT ? covered(run, op, path)
		     : sb.st_size == 0	    ? record_size(run, op, path, &sb)
					    : preserve_content(run, op, path, -1, &sb);
		if (rc == 0) {
			pend->kdev = sb.st_dev;
			pend->kino = sb.st_ino;
		}
		return rc;
	}
	if (lvl >= BBX_LVL_SIZE)
		return covered(run, op, path);
	return record_size(run, op, path, &sb);
}

/* Set by bbx_cap_rename around its PRESERVE of the name a rename replaces: the record
 * is held back (bbx_run_emit_later) and goes out in one write(2) with the RENAME that
 * follows it at once, both before the call (sed -i, git's lock files: one write a
 * rename less).  The deferral applies only where it may (one thread, [journal] sync
 * off: run.c), else the record is written at once as before. */
static __thread int preserve_before_rename __attribute__((tls_model("initial-exec")));

/* A directory about to be removed: its extended attributes (POSIX ACLs and SELinux
 * labels among them) go into its RMDIR record, which undo recreates it from (its
 * entries were each kept when removed; journal-format.md 5.6).  Most directories have
 * none, which costs one llistxattr.  When they do not fit the thread's buffer the
 * record moves to a mapping (*map, *mapsz: the caller unmaps it), as a META's large
 * old value does.  0, or -errno: the removal is then refused rather than made without
 * them (-EAGAIN: they changed while being read). */
/* llistxattr(2) by its system call: the shim imports no more libc symbols for it (each
 * import is a word of the loader's data page; tests/e2e/t-layout.sh). */
static ssize_t k_llistxattr(const char *path, char *buf, size_t size)
{
	long r = bbx_sys_raw4(SYS_llistxattr, (long)path, (long)buf, (long)size, 0);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

static int enc_dir_xattrs(struct bbx_enc *e, const char *path, void **map, size_t *mapsz)
{
	char small[1024], *names = small;
	void *nmap = NULL;
	size_t nmapsz = 0;
	ssize_t nl = k_llistxattr(path, small, sizeof small);
	if (nl < 0 && errno == ERANGE && (nl = k_llistxattr(path, NULL, 0)) > 0) {
		nmapsz = (size_t)nl + 4096;
		nmap = mmap(NULL, nmapsz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (nmap == MAP_FAILED)
			return -ENOMEM;
		names = nmap;
		nl = k_llistxattr(path, names, nmapsz);
	}
	int rc = 0;
	if (nl < 0) {
		rc = errno == ENOTSUP || errno == ENOENT ? 0 : errno == ERANGE ? -EAGAIN : -errno;
		goto out;
	}
	size_t total = 0;
	for (ssize_t i = 0; i < nl; i += (ssize_t)strlen(names + i) + 1) {
		ssize_t v = lgetxattr(path, names + i, NULL, 0);
		if (v >= 0)
			total += strlen(names + i) + 1 + 4 + (size_t)v;
	}
	if (!total)
		goto out;
	if (e->len + 6 + total + BBX_REC_TRAILER_LEN + 64 > e->cap) {
		size_t sz = e->len + total + PATH_MAX + 256;
		void *m = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED) {
			rc = -ENOMEM;
			goto out;
		}
		memcpy(m, e->buf, e->len);
		e->buf = m;
		e->cap = sz;
		*map = m;
		*mapsz = sz;
	}
	size_t room = 0, at = 0;
	uint8_t *dst = bbx_enc_room(e, &room);
	if (!dst || room < total) {
		rc = -ENAMETOOLONG;
		goto out;
	}
	for (ssize_t i = 0; i < nl; i += (ssize_t)strlen(names + i) + 1) {
		size_t l = strlen(names + i) + 1;
		if (at + l + 4 > total) {
			rc = -EAGAIN; /* one more attribute than counted */
			goto out;
		}
		ssize_t v = lgetxattr(path, names + i, dst + at + l + 4, total - at - l - 4);
		if (v < 0) {
			if (errno == ENODATA)
				continue; /* removed meanwhile */
			rc = errno == ERANGE ? -EAGAIN : -errno;
			goto out;
		}
		memcpy(dst + at, names + i, l);
		uint32_t n = (uint32_t)v;
		for (int k = 0; k < 4; k++)
			dst[at + l + k] = (uint8_t)(n >> (8 * k));
		at += l + 4 + (size_t)v;
	}
	if (at)
		bbx_enc_commit(e, BBX_T_XATTRS, at);
out:
	if (nmap)
		munmap(nmap, nmapsz);
	return rc;
}

/* PRESERVE of a name about to disappear (unlink, rename-over) or RMDIR. */
int bbx_cap_remove(struct bbx_run *run, const char *op, const char *path)
{
	if (!bbx_scratch())
		return -ENOMEM;
	POLICY(op, path, -1, 0);
	if (pseudo_fs(path))
		return 0;
	if (in_journal_dir(run, path))
		return -EACCES;
	struct stat sb;
	if (k_lstat(path, &sb) < 0)
		return 0;
	if (is_protected_dir(run, path, &sb))
		return -EACCES;
	int rc = cap_parent(run, op, path);
	if (rc)
		return rc;
	struct bbx_enc e;
	uint64_t seq = bbx_state_next_seq(run->st);
	if (S_ISDIR(sb.st_mode)) {
		bbx_nsgen_bump(); /* its name may be taken by a symlink next (bbx_dname) */
		begin(&e, BBX_REC_RMDIR, op, path);
		enc_stat(&e, &sb);
		void *xmap = NULL;
		size_t xmapsz = 0;
		rc = enc_dir_xattrs(&e, path, &xmap, &xmapsz);
		if (rc == 0)
			rc = bbx_run_emit(run, &e, seq);
		if (xmap)
			munmap(xmap, xmapsz);
		/* Its inode number is about to be free for reuse by anyone: a stale "captured"
		 * mark would make a stranger's new file look already preserved.  (If the
		 * rmdir fails, forgetting only costs a second DIRMETA later.) */
		if (rc == 0)
			bbx_state_forget(run->st, sb.st_dev, sb.st_ino);
		return rc;
	}
	int how = BBX_HOW_INLINE, lvl = level_of(run, &sb);
	ssize_t tlen = 0;
	uint64_t ns = 0, off = 0, kept = 0;
	struct bbx_oversize ov = {0};
	if (S_ISLNK(sb.st_mode)) {
		tls.lnk_fd1 = 0; /* lnk holds the link's target now (fd_name_after_policy) */
		tlen = readlink(path, tls.lnk, sizeof tls.lnk);
		if (tlen < 0)
			return -errno;
	}
	if (S_ISREG(sb.st_mode) && lvl == BBX_LVL_CREATED) {
		/* The run created this inode, so every name it has was made by the run and
		 * undo removes each of them (CREATE, or a hard link's CREATE): nothing to
		 * keep, whatever its link count.  (git writes every object as tmp_obj_X,
		 * links it to its hash name and unlinks the temporary: no copy of that.) */
		how = BBX_HOW_NONE;
	} else {
		/* Keep the inode itself (files, symlinks, fifos, devices alike): O(1), and undo
		 * gets the same inode back, with its other hard links, xattrs and times, so a
		 * later rename-back still recognises it by inode number. */
		if ((rc = bbx_run_object_path(run, seq, tls.obj, sizeof tls.obj)))
			return rc;
		const char *name;
		int dfd = at_of(path, &name);
		int lk = -1;
		errno = EXDEV;
		if (!xdev_known(&no_link, sb.st_dev, run->odev)) {
			lk = bbx_sys.linkat(dfd, name, AT_FDCWD, tls.obj, 0);
			/* No shard yet.  The retry names the entry as the first try did, the
			 * way the call names it: the shard ended the epoch, and with it the
			 * call's relative form (bbx_at_set), but not what that form reaches.
			 * By the absolute words it failed with ENOENT, and so refused the call,
			 * where the working directory's name was stale (renamed by a process
			 * outside the run: t-rt-adversarial). */
			if (lk < 0 && errno == ENOENT && k_lstat(path, &(struct stat){0}) == 0 &&
			    make_shard(run, tls.obj) == 0)
				lk = bbx_sys.linkat(dfd, name, AT_FDCWD, tls.obj, 0);
			if (lk < 0)
				xdev_learn(&no_link, sb.st_dev, run->odev, errno);
			memo_forget(); /* the target's link count and ctime moved */
		}
		if (lk == 0) {
			how = BBX_HOW_LINK;
			if (bbx_run_sync_mode(run) != BBX_SYNC_OFF && (rc = sync_dir_of(tls.obj))) {
				unlink(tls.obj);
				return rc;
			}
		} else if (errno != EXDEV && errno != EPERM && errno != EMLINK) {
			return -errno;
		} else if (S_ISREG(sb.st_mode)) {
			/* No link possible (another filesystem): a copy, which max_preserve
			 * limits like any other.  Opened the way the call names it (relative
			 * to its directory descriptor: rm -r), as the link was tried. */
			int src = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
			if (src < 0)
				return -errno;
			rc = preserve_copy(run, seq, src, &sb, op, path, &how, &ns, &ov, &off, &kept);
			close(src);
			if (rc)
				return rc;
		} /* else inline: the target or type and rdev are in the record */
	}
	/* Encoded only now: preserve_copy may have written a NOTE or a DENY meanwhile. */
	begin(&e, BBX_REC_PRESERVE, op, path);
	bbx_enc_u32(&e, BBX_T_KIND, (uint32_t)bbx_kind_of_mode(sb.st_mode));
	if (S_ISLNK(sb.st_mode))
		bbx_enc_bytes(&e, BBX_T_TARGET, tls.lnk, (size_t)tlen);
	if (how == BBX_HOW_LINK) {
		char name[32];
		bbx_run_object_name(seq, name, sizeof name);
		bbx_enc_str(&e, BBX_T_OBJECT, name);
	} else if (how == BBX_HOW_COPY || how == BBX_HOW_REFLINK || how == BBX_HOW_LOST ||
		   how == BBX_HOW_PACKED)
		enc_kept(&e, seq, how, (uint64_t)sb.st_size, ns, &ov, off, kept);
	bbx_enc_u32(&e, BBX_T_HOW, (uint32_t)how);
	enc_stat(&e, &sb);
	/* Held back too when it keeps nothing (how=none: a name of an inode the run
	 * created, which undo skips): such a record is evidence only, not an undo step,
	 * and it goes out with the thread's next record or at the process's end like a
	 * RESULT (run.h; rm -r of a tree the run made, a compiler's temporary files: one
	 * write(2) per several removals instead of one per removal). */
	if (preserve_before_rename || how == BBX_HOW_NONE) {
		rc = bbx_run_emit_later(run, &e, seq);
		if (rc == 0 && how == BBX_HOW_NONE)
			bbx_run_last_seq = seq; /* the call's RESULT points at it (shim.h) */
	} else {
		rc = bbx_run_emit(run, &e, seq);
	}
	if (rc && (how == BBX_HOW_LINK || how == BBX_HOW_COPY || how == BBX_HOW_REFLINK) &&
	    bbx_run_last_seq != seq)
		unlink(tls.obj);
	/* The inode is freed by this unlink only when this is its last name; while other
	 * names keep it, its "created" mark still holds (and must: a write through one of
	 * them needs no copy either).  A file kept before (content or length) leaves the
	 * tree with its last name too: it lives on only as this object (or not at all,
	 * after a copy, and its number may be reused), and a change through a descriptor
	 * still open to it must be checked and recorded again (BBX_FDID_KEPT). */
	if (rc == 0 && sb.st_nlink == 1 && S_ISREG(sb.st_mode) && lvl != BBX_LVL_NONE)
		bbx_state_forget(run->st, sb.st_dev, sb.st_ino);
	return rc;
}

int bbx_cap_remove_alias(struct bbx_run *run, const char *op, const char *path,
			 const char *other)
{
	if (!bbx_scratch())
		return -ENOMEM;
	POLICY(op, path, -1, 0);
	struct stat sb, so;
	if (in_journal_dir(run, path) || k_lstat(path, &sb) < 0 || S_ISDIR(sb.st_mode) ||
	    k_lstat(other, &so) < 0 || so.st_ino != sb.st_ino || so.st_dev != sb.st_dev)
		return bbx_cap_remove(run, op, path);
	int rc = cap_parent(run, op, path);
	if (rc)
		return rc;
	struct bbx_enc e;
	begin(&e, BBX_REC_PRESERVE, op, path);
	bbx_enc_u32(&e, BBX_T_KIND, (uint32_t)bbx_kind_of_mode(sb.st_mode));
	bbx_enc_u32(&e, BBX_T_HOW, BBX_HOW_ALIAS);
	bbx_enc_str(&e, BBX_T_PATH2, other);
	enc_stat(&e, &sb);
	return bbx_run_emit(run, &e, bbx_state_next_seq(run->st));
}

__thread int bbx_cap_rename_keeps_dirs __attribute__((tls_model("initial-exec")));

/* Which directory a path of directories reaches changes only when a directory moves
 * (or is removed, or a symlink takes a freed name: rmdir and symlink creation bump for
 * those).  A rename whose source is not a directory cannot move one - it can replace
 * only a non-directory (EISDIR otherwise) - unless it is an exchange: so sed -i, git's
 * lock files and npm's temporary files, which rename a file over a file, leave the
 * run's proofs standing, and the creations that follow in the same directory keep
 * their one-lstat proof (issue 5, churn).  The source's type is the lstat the capture
 * makes anyway.  What that lstat cannot see is the source replaced by a directory
 * between it and the call: with no bump, a name proved before for that directory would
 * still be trusted (journal/path.c: the directory a call acts in is checked by
 * identity, its recorded name by the generation), so later records would name it by
 * its old name.  That takes a process racing the rename on purpose, and the shim is no
 * barrier against such a process (raw system calls pass it by). */
int bbx_cap_rename(struct bbx_run *run, const char *op, const char *from, const char *to,
		   unsigned flags)
{
	if (!bbx_scratch())
		return -ENOMEM;
	bbx_cap_rename_keeps_dirs = 0;
	POLICY(op, from, -1, 0);
	POLICY(op, to, -1, 0);
	struct stat sf, st;
	int skip = pseudo_fs(from) || pseudo_fs(to);
	int own = !skip && (in_journal_dir(run, from) || in_journal_dir(run, to));
	int gone = skip || own || k_lstat(from, &sf) < 0;
	int moves_dir = gone || S_ISDIR(sf.st_mode) || (flags & RENAME_EXCHANGE);
	if (moves_dir)
		bbx_nsgen_bump(); /* directories' proved names (bbx_dname) may stop holding */
	if (own)
		return -EACCES;
	if (gone)
		return 0;
	if (is_protected_dir(run, from, &sf))
		return -EACCES;
	int rc = cap_parent(run, op, from);
	if (!rc)
		rc = cap_parent(run, op, to);
	if (rc)
		return rc;
	int to_exists = k_lstat(to, &st) == 0;
	if (to_exists && st.st_dev == sf.st_dev && st.st_ino == sf.st_ino)
		return 0; /* two names of one inode: rename(2) does nothing, nothing to undo */
	if (to_exists && !(flags & (RENAME_NOREPLACE | RENAME_EXCHANGE))) {
		preserve_before_rename = 1;
		rc = bbx_cap_remove(run, op, to);
		preserve_before_rename = 0;
		if (rc)
			return rc;
	}
	struct bbx_enc e;
	begin(&e, BBX_REC_RENAME, op, from);
	bbx_enc_str(&e, BBX_T_PATH2, to);
	bbx_enc_u32(&e, BBX_T_FLAGS, flags);
	bbx_enc_u32(&e, BBX_T_KIND, (uint32_t)bbx_kind_of_mode(sf.st_mode));
	bbx_enc_u64(&e, BBX_T_DEV, sf.st_dev);
	bbx_enc_u64(&e, BBX_T_INO, sf.st_ino);
	rc = bbx_run_emit(run, &e, bbx_state_next_seq(run->st));
	bbx_cap_rename_keeps_dirs = !rc && !moves_dir;
	return rc;
}

int bbx_cap_resize(struct bbx_run *run, const char *op, const char *path, int fd,
		   int64_t newlen, int punch)
{
	if (!bbx_scratch())
		return -ENOMEM;
	/* Through a descriptor open for writing, the open was the decision. */
	if (fd < 0)
		POLICY(op, path, -1, 1);
	struct stat sb;
	if ((fd >= 0 ? k_fstat(fd, &sb) : k_stat(path, &sb)) < 0 || !S_ISREG(sb.st_mode))
		return 0;
	int destroys = punch || newlen < (int64_t)sb.st_size;
	if (sb.st_nlink == 0)
		return 0; /* already unlinked: no name an undo could restore */
	if (fd >= 0) {
		int rc = bbx_path_fd(fd, tls.tmp, sizeof tls.tmp);
		if (rc)
			return rc;
		path = tls.tmp;
	} else {
		struct stat lsb;
		if (k_lstat(path, &lsb) == 0 && S_ISLNK(lsb.st_mode) &&
		    resolve_final_symlink(path, tls.tmp, sizeof tls.tmp) == 0)
			path = tls.tmp;
	}
	if (pseudo_fs(path))
		return 0;
	int lvl = level_of(run, &sb);
	if (lvl >= BBX_LVL_CONTENT)
		return covered(run, op, path);
	if (fd >= 0 ? protected_fd_entry(run, path, &sb) : protected_entry(run, path))
		return -EACCES;
	if (!destroys || sb.st_size == 0)
		return lvl >= BBX_LVL_SIZE ? covered(run, op, path) : record_size(run, op, path, &sb);
	return preserve_content(run, op, path, fd, &sb);
}

int bbx_cap_fdwrite(struct bbx_run *run, const char *op, int fd, int inplace)
{
	if (!bbx_scratch())
		return -ENOMEM;
	struct stat sb;
	if (k_fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_nlink == 0)
		return 0;
	int lvl = level_of(run, &sb);
	if (lvl >= BBX_LVL_CONTENT)
		return 0;
	int fl = fcntl(fd, F_GETFL);
	int appends = !inplace && fl >= 0 && (fl & O_APPEND);
	if (appends && lvl >= BBX_LVL_SIZE)
		return 0;
	int rc = bbx_path_fd(fd, tls.tmp, sizeof tls.tmp);
	if (rc)
		return rc == -EBADF ? 0 : rc;
	if (pseudo_fs(tls.tmp))
		return 0;
	if (protected_fd_entry(run, tls.tmp, &sb))
		return -EACCES;
	if (appends || sb.st_size == 0)
		return record_size(run, op, tls.tmp, &sb);
	return preserve_content(run, op, tls.tmp, fd, &sb);
}

int bbx_cap_meta(struct bbx_run *run, const char *op, const char *path, int fd, uint32_t mask,
		 const char *xname)
{
	if (!bbx_scratch())
		return -ENOMEM;
	struct stat sb;
	int rc;
	uint64_t mdev, mino;
	/* An object this run created: undo removes it whatever its metadata, so a chmod,
	 * chown, utimes or xattr change of it costs nothing more (tar sets all three on
	 * every file it makes).  Its creation was decided by the policy, and its final
	 * state is in its FINAL record when the run is sealed.  Through the descriptor it
	 * was created by, not even an fstat (bbx_fdid). */
	int marked = fd >= 0 && bbx_fdid_get(fd, &mdev, &mino);
	if (marked && !(mdev & BBX_FDID_KEPT) &&
	    bbx_state_level(run->st, mdev, mino) == BBX_LVL_CREATED)
		return 0;
	int have = (fd >= 0 ? k_fstat(fd, &sb)
			    : (mask & BBX_META_NOFOLLOW) ? k_lstat(path, &sb) : k_stat(path, &sb)) == 0;
	int lvl = have ? level_of(run, &sb) : BBX_LVL_NONE;
	if (lvl == BBX_LVL_CREATED)
		return 0;
	/* A change of times alone, through the descriptor a writing open returned for this
	 * regular file, kept whole then (BBX_FDID_KEPT) and still: its times come back with
	 * its PRESERVE, and the open's policy decision stands (by name, see below).  A
	 * mode or owner change is recorded all the same: it can leave the file unwritable
	 * for an undo that is not root, whose META step makes it writable again before the
	 * PRESERVE's restore writes the content back (chmod 0 after a rewrite, undone as
	 * nobody: t-rt-adversarial).  So is an xattr change (its old value). */
	int times_only = (mask & ~(uint32_t)BBX_META_NOFOLLOW) == BBX_META_TIMES;
	if (times_only && marked && (mdev & BBX_FDID_KEPT) && lvl == BBX_LVL_CONTENT &&
	    S_ISREG(sb.st_mode) && (mdev & ~BBX_FDID_KEPT) == (uint64_t)sb.st_dev &&
	    mino == (uint64_t)sb.st_ino)
		return 0;
	POLICY(op, fd >= 0 ? NULL : path, fd, !(mask & BBX_META_NOFOLLOW));
	if (fd >= 0) {
		/* The descriptor's stat above stands (the policy changes nothing), and its
		 * name is the one the policy read (fd_name_after_policy): each was read a
		 * second time per call (touch of a file older than the run). */
		if (!have)
			return 0;
		if ((rc = fd_name_after_policy(fd, tls.tmp, sizeof tls.tmp)))
			return rc == -EBADF ? 0 : rc; /* pipe, socket, anon inode: not on disk */
		path = tls.tmp;
	} else {
		/* The times of a regular file kept whole, by a name the policy has just
		 * allowed: its PRESERVE restores them (Python's shutil.copy2 over an
		 * existing file: open(dst, "wb"), then utime by name). */
		if (times_only && lvl == BBX_LVL_CONTENT && S_ISREG(sb.st_mode) &&
		    !protected_entry(run, path))
			return 0;
		if (k_lstat(path, &sb) < 0)
			return 0;
		if (S_ISLNK(sb.st_mode) && !(mask & BBX_META_NOFOLLOW)) {
			/* record the object the call changes: the symlink's target */
			if (resolve_final_symlink(path, tls.tmp, sizeof tls.tmp) < 0 ||
			    k_stat(tls.tmp, &sb) < 0)
				return 0; /* dangling: the call fails */
			path = tls.tmp;
		}
	}
	if (pseudo_fs(path))
		return 0;
	if (fd >= 0 ? protected_fd_entry(run, path, &sb)
		    : protected_entry(run, path) || is_protected_dir(run, path, &sb))
		return -EACCES;
	struct bbx_enc e;
	begin(&e, BBX_REC_META, op, path);
	bbx_enc_u32(&e, BBX_T_MASK, mask);
	enc_stat(&e, &sb);
	void *big = NULL, *recbuf = NULL;
	size_t bigsz = 0, recsz = 0;
	if ((mask & BBX_META_XATTR) && xname) {
		bbx_enc_str(&e, BBX_T_XNAME, xname);
		char small[XATTR_INLINE];
		ssize_t n;
		if (fd >= 0)
			n = fgetxattr(fd, xname, small, sizeof small);
		else if (mask & BBX_META_NOFOLLOW)
			n = lgetxattr(path, xname, small, sizeof small);
		else
			n = getxattr(path, xname, small, sizeof small);
		if (n < 0 && errno == ERANGE) {
			bigsz = 65536;
			big = mmap(NULL, bigsz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				   -1, 0);
			if (big == MAP_FAILED)
				return -ENOMEM;
			if (fd >= 0)
				n = fgetxattr(fd, xname, big, bigsz);
			else if (mask & BBX_META_NOFOLLOW)
				n = lgetxattr(path, xname, big, bigsz);
			else
				n = getxattr(path, xname, big, bigsz);
		}
		if (n >= 0 && e.len + (size_t)n + 64 > e.cap) {
			/* An old value larger than the thread buffer (up to 64 KiB): move the
			 * record into a mapping that fits it (no malloc in a wrapper). */
			recsz = e.len + (size_t)n + PATH_MAX + 256;
			recbuf = mmap(NULL, recsz, PROT_READ | PROT_WRITE,
				      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (recbuf == MAP_FAILED) {
				recbuf = NULL;
				rc = -ENOMEM;
				goto out;
			}
			memcpy(recbuf, e.buf, e.len);
			e.buf = recbuf;
			e.cap = recsz;
		}
		if (n >= 0) {
			bbx_enc_bytes(&e, BBX_T_XVALUE, big ? big : small, (size_t)n);
		} else if (errno != ENODATA && errno != ENOTSUP) {
			rc = -errno;
			goto out;
		}
	}
	rc = bbx_run_emit(run, &e, bbx_state_next_seq(run->st));
out:
	if (big)
		munmap(big, bigsz);
	if (recbuf)
		munmap(recbuf, recsz);
	return rc;
}

int bbx_cap_exec(struct bbx_run *run, const char *op, const char *exe, char *const argv[],
		 uint64_t *seq)
{
	return bbx_cap_exec_env(run, op, exe, argv, NULL, seq); /* procrec.c */
}

static int result_rec(struct bbx_run *run, const char *op, uint64_t ref, long ret, int err,
		      int later)
{
	if (!bbx_scratch())
		return -ENOMEM;
	struct bbx_enc e;
	begin(&e, BBX_REC_RESULT, op, NULL);
	bbx_enc_u64(&e, BBX_T_REF, ref);
	bbx_enc_i64(&e, BBX_T_RET, ret);
	bbx_enc_u32(&e, BBX_T_ERR, (uint32_t)(ret < 0 ? err : 0));
	uint64_t seq = bbx_state_next_seq(run->st);
	return later ? bbx_run_emit_later(run, &e, seq) : bbx_run_emit(run, &e, seq);
}

int bbx_cap_result(struct bbx_run *run, const char *op, uint64_t ref, long ret, int err)
{
	return result_rec(run, op, ref, ret, err, 0);
}

int bbx_cap_result_later(struct bbx_run *run, const char *op, uint64_t ref, long ret, int err)
{
	return result_rec(run, op, ref, ret, err, 1);
}

int bbx_cap_note(struct bbx_run *run, const char *op, const char *path, const char *text)
{
	if (!bbx_scratch())
		return -ENOMEM;
	struct bbx_enc e;
	begin(&e, BBX_REC_NOTE, op, path);
	bbx_enc_str(&e, BBX_T_TEXT, text);
	return bbx_run_emit(run, &e, bbx_state_next_seq(run->st));
}
