/* SPDX-License-Identifier: MIT
 * run.c - journal directories (see run.h). */
#include "run.h"
#include "str.h"
#include "capture.h"
#include "sys.h"
#include "hot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/single_threaded.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

static int mkdir_p(char *path, mode_t mode)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		int rc = mkdir(path, mode);
		*p = '/';
		if (rc < 0 && errno != EEXIST)
			return -errno;
	}
	if (mkdir(path, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int bbx_run_state_dir(char *out, size_t cap)
{
	const char *s = getenv("BBX_STATE_DIR");
	int n;
	if (s && *s)
		n = snprintf(out, cap, "%s", s);
	else if ((s = getenv("XDG_STATE_HOME")) && *s == '/')
		n = snprintf(out, cap, "%s/bbx/runs", s);
	else if ((s = getenv("HOME")) && *s == '/')
		n = snprintf(out, cap, "%s/.local/state/bbx/runs", s);
	else
		return -ENOENT;
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	size_t n = strlen(text);
	ssize_t w = write(fd, text, n);
	int rc = w == (ssize_t)n ? 0 : (w < 0 ? -errno : -EIO);
	close(fd);
	return rc;
}

/* 1 if the entry name of the directory at dfd is what bbx_run_create makes before the
 * journal, with its contents recognisable: objects/ (still empty: rmdir says), state
 * (state.c, bbx_state_unfinished), meta (begins with the format line). */
static int unfinished_entry(int dfd, const char *name)
{
	struct stat sb;
	if (!strcmp(name, "objects"))
		return fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(sb.st_mode);
	int st = !strcmp(name, "state");
	if (!st && strcmp(name, "meta"))
		return 0;
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	static const char fmt[] = "format=bbx-journal ";
	char head[sizeof fmt - 1];
	int ours = st ? bbx_state_unfinished(fd)
		      : fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) &&
				(sb.st_size == 0 || (pread(fd, head, sizeof head, 0) == sizeof head &&
						     !memcmp(head, fmt, sizeof head)));
	close(fd);
	return ours;
}

/* An existing --journal directory must be empty, or hold only a creation that was
 * killed before its journal existed (the journal comes last: until then no record was
 * written, so nothing is lost).  That one is cleared; anything else is -ENOTEMPTY.
 * bbx-undo depends on this: killed while it made DIR/undo, it must resume. */
static int clear_unfinished(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	struct dirent *de;
	int rc = 0, found = 0;
	while (!rc && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		found = 1;
		if (!unfinished_entry(dirfd(d), de->d_name))
			rc = -ENOTEMPTY;
	}
	/* objects/ first: a non-empty one stops the clearing before anything is removed. */
	if (!rc && found && unlinkat(dirfd(d), "objects", AT_REMOVEDIR) < 0 && errno != ENOENT)
		rc = errno == EEXIST ? -ENOTEMPTY : -errno;
	for (const char *f = "state\0meta\0"; !rc && found && *f; f += strlen(f) + 1)
		if (unlinkat(dirfd(d), f, 0) < 0 && errno != ENOENT)
			rc = -errno;
	closedir(d);
	return rc;
}

int bbx_run_create(const char *dir, const char *cmdline, const char *extra_meta, int nolatest,
		   char *out, size_t cap)
{
	char base[PATH_MAX], p[PATH_MAX + 32];
	int rc, n;
	char id[96];
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	unsigned rnd = 0;
	if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != sizeof rnd)
		rnd = (unsigned)ts.tv_nsec ^ (unsigned)getpid();
	n = snprintf(id, sizeof id, "%04d%02d%02dT%02d%02d%02dZ-%d-%04x", tm.tm_year + 1900,
		     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)getpid(),
		     rnd & 0xffff);
	if (dir) {
		n = snprintf(out, cap, "%s", dir);
		if (n < 0 || (size_t)n >= cap)
			return -ENAMETOOLONG;
		snprintf(base, sizeof base, "%s", dir);
		if ((rc = mkdir_p(base, 0700)))
			return rc;
		snprintf(p, sizeof p, "%s/journal", dir);
		if (access(p, F_OK) == 0)
			return -EEXIST;
		if ((rc = clear_unfinished(dir)))
			return rc; /* never mix a journal with other files */
	} else {
		if ((rc = bbx_run_state_dir(base, sizeof base)))
			return rc;
		if ((rc = mkdir_p(base, 0700)))
			return rc;
		n = snprintf(out, cap, "%s/%s", base, id);
		if (n < 0 || (size_t)n >= cap)
			return -ENAMETOOLONG;
		if (mkdir(out, 0700) < 0)
			return -errno;
	}
	snprintf(p, sizeof p, "%s/objects", out);
	if (mkdir(p, 0700) < 0 && errno != EEXIST) {
		rc = -errno;
		goto fail;
	}
	snprintf(p, sizeof p, "%s/state", out);
	if ((rc = bbx_state_create(p)))
		goto fail;

	char cwd[PATH_MAX] = "?";
	if (!getcwd(cwd, sizeof cwd))
		strcpy(cwd, "?");
	struct utsname u;
	if (uname(&u) < 0)
		strcpy(u.nodename, "?");
	char when[64];
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
	/* The command line can be as long as ARG_MAX allows: sized to fit.  (Never in a
	 * wrapper: only bbx-run, bbx-undo and a shim's start-up create runs.) */
	size_t msz = 2 * PATH_MAX + 512 + (cmdline ? strlen(cmdline) : 0) +
		     (extra_meta ? strlen(extra_meta) : 0);
	char *meta = malloc(msz);
	if (!meta) {
		rc = -ENOMEM;
		goto fail;
	}
	n = snprintf(meta, msz,
		     "format=bbx-journal " BBX_JOURNAL_FORMAT
		     "\nrun=%s\nstart=%s\nstart_ns=%lld\nuid=%u\nhost=%s\ncwd=%s\n"
		     "command=%s\n%s",
		     id, when, (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec, (unsigned)getuid(),
		     u.nodename, cwd, cmdline ? cmdline : "", extra_meta ? extra_meta : "");
	snprintf(p, sizeof p, "%s/meta", out);
	rc = n < 0 || (size_t)n >= msz ? -ENAMETOOLONG : write_file(p, meta);
	free(meta);
	if (rc)
		goto fail;
	/* The journal last: its presence means the directory is complete. */
	snprintf(p, sizeof p, "%s/journal", out);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		goto fail;
	}
	close(fd);

	if (!dir && !nolatest) {
		char tmp[PATH_MAX + 64], lnk[PATH_MAX + 16];
		snprintf(tmp, sizeof tmp, "%s/.latest.%d", base, (int)getpid());
		snprintf(lnk, sizeof lnk, "%s/latest", base);
		unlink(tmp);
		if (symlink(id, tmp) < 0 || rename(tmp, lnk) < 0) {
			rc = -errno;
			unlink(tmp);
			return rc;
		}
	}
	return 0;
fail:
	/* Leave nothing half-made: a retry with the same --journal must find it empty. */
	for (const char *f = "meta\0state\0objects\0"; *f; f += strlen(f) + 1) {
		snprintf(p, sizeof p, "%s/%s", out, f);
		if (unlink(p) < 0 && errno == EISDIR)
			rmdir(p);
	}
	if (!dir)
		rmdir(out);
	return rc;
}

BBX_HOT uint64_t *bbx_nsgen;

/* 1 if dir, absolute, without '.', '..', '//' or a trailing '/', names a directory
 * through no symbolic link (then it is its own canonical name), with its stat in *sb.  One stat and
 * one openat2(RESOLVE_NO_SYMLINKS) instead of realpath's readlink of every component:
 * every program that records opens the run (issue 5).  The openat2 carries the run's
 * mark, which bbx-run's seccomp filter asks of it (tools/sandbox.c); 0 whenever it
 * cannot answer (an old kernel, a symlink on the way), and realpath decides. */
static int dir_canonical(const char *dir, struct stat *sb)
{
	size_t len = strlen(dir);
	if (dir[0] != '/' || dir[len - 1] == '/' || !bbx_path_clean(dir) ||
	    bbx_sys_fstatat(AT_FDCWD, dir, sb, 0) || !S_ISDIR(sb->st_mode))
		return 0;
	struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
			       .resolve = RESOLVE_NO_SYMLINKS};
	long fd = bbx_sys_raw5(SYS_openat2, AT_FDCWD, (long)dir, (long)&how, sizeof how,
			       (long)bbx_run_mark(sb->st_dev, sb->st_ino));
	if (fd < 0)
		return 0;
	bbx_sys_close((int)fd);
	return 1;
}

/* dir made canonical into out (realpath), with its stat: 0 or -errno.  A frame of its
 * own: its PATH_MAX buffer is needed only for a name that is not canonical already. */
__attribute__((noinline)) static int canonical_into(const char *dir, char *out, size_t cap,
						   struct stat *sb)
{
	char canon[PATH_MAX];
	if (realpath(dir, canon))
		dir = canon;
	if (stat(dir, sb) < 0)
		return -errno;
	int n = bbx_scopy(out, cap, dir);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

int bbx_run_open(struct bbx_run *run, const char *dir)
{
	/* Not the path buffer (run.h): a string, emptied here and written below; cleared
	 * whole, it was one more page written in every process that opens the run. */
	memset(run, 0, offsetof(struct bbx_run, dir));
	run->dir[0] = 0;
	/* Canonical, so the "never write into the journal directory" check compares like
	 * with like. */
	struct stat sb;
	int n;
	if (!dir_canonical(dir, &sb)) {
		int rc = canonical_into(dir, run->dir, sizeof run->dir, &sb);
		if (rc)
			return rc;
		n = (int)strlen(run->dir);
	} else {
		n = bbx_scopy(run->dir, sizeof run->dir, dir);
	}
	if (n < 0 || (size_t)n >= sizeof run->dir - 32) {
		run->dir[0] = 0;
		return -ENAMETOOLONG;
	}
	dir = run->dir;
	run->dirlen = (size_t)n;
	/* Sized for the names joined below (the longest, "objects"), not PATH_MAX: every
	 * frame under this one (the state's mapping, the writer's open) would otherwise run
	 * a page deeper into the stack, a page fault in every process that opens the run
	 * (issue 5). */
	char p[(size_t)n + sizeof "/objects"];
	run->jdev = sb.st_dev;
	run->jino = sb.st_ino;
	bbx_sjoin(p, sizeof p, dir, "objects");
	if (bbx_sys_fstatat(AT_FDCWD, p, &sb, 0) == 0) {
		run->odev = sb.st_dev;
		run->oino = sb.st_ino;
	}
	bbx_sjoin(p, sizeof p, dir, "state");
	int rc = bbx_state_map(p, &run->st);
	if (rc)
		return rc;
	bbx_state_attach(run->st, run->dir); /* where its captured set grows (state.h) */
	__atomic_store_n(&bbx_nsgen, bbx_state_nsgen(run->st), __ATOMIC_RELEASE);
	rc = bbx_writer_open(&run->w, run->dir);
	if (rc) {
		bbx_state_unmap(run->st);
		run->st = NULL;
	}
	return rc;
}

void bbx_run_close(struct bbx_run *run)
{
	bbx_writer_close(&run->w);
	bbx_state_unmap(run->st);
	run->st = NULL;
}

int bbx_run_resolve(const char *arg, char *out, size_t cap)
{
	char p[PATH_MAX + 16];
	if (arg && strcmp(arg, "latest") != 0) {
		if (!realpath(arg, out))
			return -errno;
	} else {
		char base[PATH_MAX];
		int rc = bbx_run_state_dir(base, sizeof base);
		if (rc)
			return rc;
		snprintf(p, sizeof p, "%s/latest", base);
		if (!realpath(p, out))
			return -errno;
	}
	(void)cap;
	snprintf(p, sizeof p, "%s/journal", out);
	if (access(p, F_OK) < 0)
		return -ENOENT;
	return 0;
}

__thread uint64_t bbx_run_last_seq __attribute__((tls_model("initial-exec")));
__thread struct bbx_chain_pos bbx_run_last_pos __attribute__((tls_model("initial-exec")));

BBX_HOT int bbx_run_proc_pending;
/* Weak, as is bbx_run_defer_on: the shim's definitions (shim/init.c) are initialised
 * statically, not stored by its constructor (a page fault per process, issue 5). */
__attribute__((weak)) int (*bbx_run_prologue)(struct bbx_run *run, struct bbx_enc *e,
					      uint8_t *buf, size_t cap);

/* The header's pid, ppid and uid are asked of the kernel once per process, not three
 * system calls per record.  ppid is therefore the parent the process started under (not
 * a later reaper), and uid the one it had at its first record.  A fork child inherits
 * them through bbx_run_ids_forked (the shim's fork handler): its ppid is the parent's
 * pid, its uid the parent's, and only its own pid is asked (one system call, where an
 * exec record used to ask all three: issue 5, spawn cost).  Exec records set
 * bbx_run_fresh_ids, because a vfork child writes them sharing this memory, the cache
 * included: the pid is then asked again, and the cache serves only a process whose pid
 * it holds. */
BBX_HOT static int32_t ids_pid, ids_ppid;
BBX_HOT static uint32_t ids_uid;
BBX_HOT static int ids_ok;
__thread int bbx_run_fresh_ids __attribute__((tls_model("initial-exec")));

/* The ids asked of the kernel itself: the same system calls as libc's, without three
 * lazily bound library calls in each process's first record (~700 instructions each,
 * callgrind), and the real uid even under another preloaded library that fakes
 * getuid (fakeroot), as journal-format.md says the header holds. */
static int32_t k_getpid(void) { return (int32_t)bbx_sys_raw4(SYS_getpid, 0, 0, 0, 0); }
static int32_t k_getppid(void) { return (int32_t)bbx_sys_raw4(SYS_getppid, 0, 0, 0, 0); }
static uint32_t k_getuid(void) { return (uint32_t)bbx_sys_raw4(SYS_getuid, 0, 0, 0, 0); }

void bbx_run_ids_learn(void)
{
	if (__atomic_load_n(&ids_ok, __ATOMIC_ACQUIRE))
		return;
	ids_pid = k_getpid(), ids_ppid = k_getppid(), ids_uid = k_getuid();
	__atomic_store_n(&ids_ok, 1, __ATOMIC_RELEASE);
}

void bbx_run_ids_forked(void)
{
	if (!__atomic_load_n(&ids_ok, __ATOMIC_ACQUIRE))
		return;
	ids_ppid = ids_pid;
	ids_pid = k_getpid();
}

static int write_ahead_type(int type);

/* The header (times, ids) filled in and the record finished: its length, or -errno. */
static long finish_rec(struct bbx_enc *e, uint64_t seq)
{
	struct timespec rt, mono;
	if (__builtin_expect(bbx_run_fresh_ids, 0)) {
		/* An exec's record, most often in a fork child: the vDSO and libc's
		 * clock_gettime are two pages that child would fault in for the times alone
		 * (~2 us each here), where two system calls cost well under one. */
		(void)bbx_sys_raw4(SYS_clock_gettime, CLOCK_REALTIME, (long)&rt, 0, 0);
		(void)bbx_sys_raw4(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&mono, 0, 0);
	} else {
		clock_gettime(CLOCK_REALTIME, &rt);
		clock_gettime(CLOCK_MONOTONIC, &mono);
	}
	struct bbx_rec_hdr h = {
		.seq = seq,
		.realtime_ns = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec,
		.mono_ns = (uint64_t)mono.tv_sec * 1000000000ull + (uint64_t)mono.tv_nsec,
	};
	int ok = __atomic_load_n(&ids_ok, __ATOMIC_ACQUIRE);
	if (__builtin_expect(bbx_run_fresh_ids || !ok, 0)) {
		h.pid = k_getpid();
		if (ok && h.pid == ids_pid) {
			h.ppid = ids_ppid, h.uid = ids_uid; /* this process's own exec */
		} else {
			h.ppid = k_getppid();
			h.uid = k_getuid();
			if (!bbx_run_fresh_ids) {
				ids_pid = h.pid, ids_ppid = h.ppid, ids_uid = h.uid;
				__atomic_store_n(&ids_ok, 1, __ATOMIC_RELEASE);
			}
		}
	} else {
		h.pid = ids_pid, h.ppid = ids_ppid, h.uid = ids_uid;
	}
	/* Summed by the writer, under the journal lock, once its CHAIN value is in. */
	return bbx_enc_finish_unsummed(e, &h);
}

/* Whether this is the process's first record and the prologue is still to come (the
 * flag is taken: exactly one record per process sees 1). */
static inline int prologue_due(void)
{
	return __builtin_expect(__atomic_load_n(&bbx_run_proc_pending, __ATOMIC_RELAXED), 0) &&
	       __atomic_exchange_n(&bbx_run_proc_pending, 0, __ATOMIC_ACQ_REL) &&
	       bbx_run_prologue;
}

/* The prologue's record encoded into buf and finished: its length, or 0 when there is
 * none to write here (it wrote its own, or failed: a lost PROC loses no undo
 * information).  Its seq is taken after the caller's, as when it was emitted from
 * inside the caller's emit. */
static long prologue_build(struct bbx_run *run, uint8_t *buf, size_t cap)
{
	struct bbx_enc pe;
	if (!bbx_run_prologue(run, &pe, buf, cap))
		return 0;
	long n = finish_rec(&pe, bbx_state_next_seq(run->st));
	return n > 0 ? n : 0;
}

static int append_finished(struct bbx_run *run, void *rec, size_t len);

/* For the emits other than bbx_run_emit (a deferred record, a batch): the prologue's
 * record written alone, before theirs.  A frame of its own, as emit_first's. */
__attribute__((noinline)) static void prologue_alone(struct bbx_run *run)
{
	uint8_t buf[BBX_RUN_PROLOGUE_BUF];
	long n = prologue_build(run, buf, sizeof buf);
	if (n > 0)
		(void)append_finished(run, buf, (size_t)n);
}

static void prologue_if_pending(struct bbx_run *run)
{
	if (prologue_due())
		prologue_alone(run);
}

__attribute__((weak)) int bbx_run_defer_on;
__thread struct bbx_defer *bbx_run_defer_tls __attribute__((tls_model("initial-exec")));
/* The buffer records were last deferred in, and the run they belong to.  Records are
 * deferred only while the process has a single thread, which never changes back once a
 * second one started (glibc), and a fork's parent writes its buffer first: this is the
 * one buffer that can hold anything. */
BBX_HOT static struct bbx_defer *defer_main;
BBX_HOT static struct bbx_run *defer_run;

/* Takes d's pending records: their length (0: none), copied to out. */
static uint32_t defer_take(struct bbx_defer *d, uint8_t *out)
{
	uint32_t n = d ? __atomic_exchange_n(&d->len, 0, __ATOMIC_ACQ_REL) : 0;
	if (n > BBX_DEFER_CAP)
		return 0; /* never: a torn buffer is dropped, not written */
	if (n)
		memcpy(out, d->buf, n);
	return n;
}

/* The overflow of the held-back records (run.h, BBX_DEFER_SPILL): when a record does
 * not fit the thread's buffer, what the buffer holds moves here instead of being
 * written, up to BBX_DEFER_SPILL bytes; the next write takes this first, then the
 * buffer, in one write(2) (rm -r of a tree the run made: one write per ~25 removals
 * instead of one per two).  Mapped on the first overflow (most processes never fill
 * their buffer), never populated: only a process that spills touches its pages.  One
 * per process: records are held back only while the process has a single thread, so
 * only that thread fills it; any thread may take it (exit, fork), by exchanging len.
 * Room past BBX_DEFER_SPILL for the buffer and a record of ordinary size, so that
 * both go out from here without a copy to the stack. */
struct defer_more {
	uint32_t len;
	uint8_t buf[BBX_DEFER_SPILL + BBX_DEFER_CAP + 2048];
};
BBX_HOT static struct defer_more *defer_more;

/* Moves d's have bytes to the overflow.  0 when there is no room (or no mapping):
 * the caller writes instead. */
static int defer_spill(struct bbx_defer *d, uint32_t have)
{
	struct defer_more *m = __atomic_load_n(&defer_more, __ATOMIC_ACQUIRE);
	if (!m) {
		void *p = mmap(NULL, sizeof *m, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			return 0;
		m = p;
		__atomic_store_n(&defer_more, m, __ATOMIC_RELEASE);
	}
	uint32_t ml = __atomic_load_n(&m->len, __ATOMIC_ACQUIRE);
	if (ml + have > BBX_DEFER_SPILL)
		return 0;
	uint32_t n = defer_take(d, m->buf + ml);
	__atomic_store_n(&m->len, ml + n, __ATOMIC_RELEASE);
	return 1;
}

/* Takes the overflow with d's records after it, then (when it fits) rec: written in
 * one append, straight from the overflow.  *took: the bytes of rec that went (0 or
 * len).  -1 when the overflow holds nothing (the caller goes on as without it). */
static int more_write(struct bbx_run *run, struct bbx_defer *d, const void *rec, size_t len,
		      size_t *took)
{
	*took = 0;
	struct defer_more *m = __atomic_load_n(&defer_more, __ATOMIC_ACQUIRE);
	uint32_t ml = m ? __atomic_exchange_n(&m->len, 0, __ATOMIC_ACQ_REL) : 0;
	if (!ml)
		return -1;
	if (ml > BBX_DEFER_SPILL)
		return 0; /* never: a torn overflow is dropped, not written */
	size_t n = ml + defer_take(d, m->buf + ml);
	if (rec && n + len <= sizeof m->buf) {
		memcpy(m->buf + n, rec, len);
		n += len;
		*took = len;
	}
	return bbx_writer_append_chained_n(&run->w, run->st, m->buf, n,
					   *took ? &bbx_run_last_pos : NULL);
}

static int defer_write(struct bbx_run *run, struct bbx_defer *d)
{
	size_t took;
	int rc = more_write(run, d, NULL, 0, &took);
	if (rc != -1)
		return rc;
	uint8_t tmp[BBX_DEFER_CAP];
	uint32_t n = defer_take(d, tmp);
	return n ? bbx_writer_append_chained_n(&run->w, run->st, tmp, n, NULL) : 0;
}

int bbx_run_deferred(void)
{
	struct bbx_defer *m = __atomic_load_n(&defer_main, __ATOMIC_ACQUIRE);
	struct defer_more *o = __atomic_load_n(&defer_more, __ATOMIC_ACQUIRE);
	return (m && __atomic_load_n(&m->len, __ATOMIC_ACQUIRE)) ||
	       (o && __atomic_load_n(&o->len, __ATOMIC_ACQUIRE));
}

int bbx_run_flush(struct bbx_run *run)
{
	return defer_write(run, __atomic_load_n(&defer_main, __ATOMIC_ACQUIRE));
}

/* The thread's pending records, then rec: one write(2) when together they fit in a page
 * (the usual RESULT and intent: 130-300 bytes each), else two.  A frame of its own: the
 * common emit (nothing pending: every fork child's EXEC) touches no page more. */
__attribute__((noinline)) static int emit_after_pending(struct bbx_run *run,
							struct bbx_defer *d, void *rec,
							size_t len)
{
	size_t took;
	int rc = more_write(run, d, rec, len, &took);
	if (rc != -1) {
		if (took)
			return rc;
		/* a lost RESULT only makes undo more careful: the record still goes */
		return bbx_writer_append_chained(&run->w, run->st, rec, len, &bbx_run_last_pos);
	}
	uint8_t buf[4096];
	uint32_t n = defer_take(d, buf);
	if (n + len <= sizeof buf) {
		memcpy(buf + n, rec, len);
		return bbx_writer_append_chained_n(&run->w, run->st, buf, n + len,
						   &bbx_run_last_pos);
	}
	if (n) /* a lost RESULT only makes undo more careful: the record still goes */
		(void)bbx_writer_append_chained_n(&run->w, run->st, buf, n, NULL);
	return bbx_writer_append_chained(&run->w, run->st, rec, len, &bbx_run_last_pos);
}

int bbx_run_emit_later(struct bbx_run *run, struct bbx_enc *e, uint64_t seq)
{
	struct bbx_defer *d = bbx_run_defer_tls;
	if (!bbx_run_defer_on || !d || !__libc_single_threaded ||
	    bbx_run_sync_mode(run) != BBX_SYNC_OFF)
		return bbx_run_emit(run, e, seq);
	prologue_if_pending(run);
	long len = finish_rec(e, seq);
	if (len < 0)
		return (int)len;
	uint32_t have = __atomic_load_n(&d->len, __ATOMIC_ACQUIRE);
	if (have + (size_t)len > BBX_DEFER_CAP) {
		/* A record too big to hold back goes at once, so what is held goes first,
		 * the overflow with it: never moved there to be written after it. */
		if ((size_t)len > BBX_DEFER_CAP || !defer_spill(d, have)) {
			int rc = defer_write(run, d);
			if (rc)
				return rc;
		}
		have = 0;
		if ((size_t)len > BBX_DEFER_CAP)
			return bbx_writer_append_chained(&run->w, run->st, e->buf, (size_t)len,
							 NULL);
	}
	memcpy(d->buf + have, e->buf, (size_t)len);
	/* Only a signal handler of this thread can have taken the buffer meanwhile (it
	 * ran to its end before we went on): then the record starts it afresh. */
	if (!__atomic_compare_exchange_n(&d->len, &have, have + (uint32_t)len, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		memmove(d->buf, d->buf + have, (size_t)len);
		__atomic_store_n(&d->len, (uint32_t)len, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&defer_run, run, __ATOMIC_RELEASE);
	__atomic_store_n(&defer_main, d, __ATOMIC_RELEASE);
	return 0;
}

void bbx_run_defer_release(struct bbx_defer *d)
{
	struct bbx_run *run = __atomic_load_n(&defer_run, __ATOMIC_ACQUIRE);
	if (run)
		(void)defer_write(run, d);
	struct bbx_defer *expect = d;
	__atomic_compare_exchange_n(&defer_main, &expect, NULL, 0, __ATOMIC_ACQ_REL,
				    __ATOMIC_ACQUIRE);
	if (bbx_run_defer_tls == d)
		bbx_run_defer_tls = NULL;
}

/* Finished records (len bytes, after the thread's held-back ones if it has any). */
static int append_finished(struct bbx_run *run, void *rec, size_t len)
{
	struct bbx_defer *d = __atomic_load_n(&defer_main, __ATOMIC_ACQUIRE);
	return d && bbx_run_deferred() ? emit_after_pending(run, d, rec, len)
		       : bbx_writer_append_chained(&run->w, run->st, rec, len,
						   &bbx_run_last_pos);
}

/* After e (seq) was appended with rc: the call's RESULT points at it, and a
 * write-ahead record is made durable when the run syncs. */
static int emitted(struct bbx_run *run, const struct bbx_enc *e, uint64_t seq, int rc)
{
	if (rc == 0)
		bbx_run_last_seq = seq;
	if (rc == 0 && bbx_run_sync_mode(run) != BBX_SYNC_OFF &&
	    write_ahead_type(e->buf[6] | e->buf[7] << 8))
		rc = bbx_run_sync(run, bbx_run_last_pos.end);
	return rc;
}

/* A process's first record, with the prologue's (its PROC) encoded on this frame in
 * front of it: one write(2) for both, and no buffer mapped and unmapped for the PROC
 * (both were paid by every process that changes anything: a compiler's .s and .o,
 * ld's output, the rm of a configure test: a new program's first create 204 -> 181 us
 * here; issue 5).  A PROC too big for the frame is written by the prologue
 * itself, and one too big to go with e goes alone, first. */
__attribute__((noinline)) static int emit_first(struct bbx_run *run, struct bbx_enc *e,
						uint64_t seq)
{
	uint8_t buf[BBX_RUN_PROLOGUE_BUF];
	long n = prologue_build(run, buf, sizeof buf);
	long len = finish_rec(e, seq);
	if (len < 0) {
		if (n > 0)
			(void)append_finished(run, buf, (size_t)n);
		return (int)len;
	}
	int rc;
	if (n > 0 && (size_t)n + (size_t)len <= sizeof buf) {
		memcpy(buf + n, e->buf, (size_t)len);
		rc = append_finished(run, buf, (size_t)n + (size_t)len);
	} else {
		if (n > 0)
			(void)append_finished(run, buf, (size_t)n);
		rc = append_finished(run, e->buf, (size_t)len);
	}
	return emitted(run, e, seq, rc);
}

int bbx_run_emit(struct bbx_run *run, struct bbx_enc *e, uint64_t seq)
{
	if (prologue_due())
		return emit_first(run, e, seq);
	long len = finish_rec(e, seq);
	if (len < 0)
		return (int)len;
	return emitted(run, e, seq, append_finished(run, e->buf, (size_t)len));
}

int bbx_run_batch_add(struct bbx_run *run, struct bbx_run_batch *b, struct bbx_enc *e,
		      uint64_t seq)
{
	prologue_if_pending(run);
	long len = finish_rec(e, seq);
	if (len < 0)
		return (int)len;
	if (b->len + (size_t)len > sizeof b->buf) {
		int rc = bbx_run_batch_flush(run, b);
		if (rc)
			return rc;
	}
	if ((size_t)len > sizeof b->buf)
		return bbx_writer_append_chained(&run->w, run->st, e->buf, (size_t)len,
						 &bbx_run_last_pos);
	memcpy(b->buf + b->len, e->buf, (size_t)len);
	b->len += (size_t)len;
	return 0;
}

int bbx_run_batch_flush(struct bbx_run *run, struct bbx_run_batch *b)
{
	if (!b->len)
		return 0;
	int rc = bbx_writer_append_chained_n(&run->w, run->st, b->buf, b->len,
					     &bbx_run_last_pos);
	b->len = 0;
	return rc;
}

/* ---- [journal] sync ------------------------------------------------------------------ */

BBX_HOT unsigned long bbx_run_syncs;
BBX_HOT static int sync_lock_broken; /* this process gave up on the sync lock (stuck holder) */

/* The records written right before a mutation that undo needs: [journal] sync makes
 * them durable before the call is issued.  DIRMETA is not among them: the record of
 * the entry change itself always follows it before the call, and the fdatasync made
 * for that one covers both.  Nor are EXEC, RESULT, DENY, NOTE, PROC, EXIT, NET and
 * RESOLVE: nothing an undo needs is lost with them. */
static int write_ahead_type(int type)
{
	switch (type) {
	case BBX_REC_CREATE: case BBX_REC_PRESERVE: case BBX_REC_SIZE: case BBX_REC_RMDIR:
	case BBX_REC_RENAME: case BBX_REC_META:
		return 1;
	}
	return 0;
}

int bbx_run_sync_mode(const struct bbx_run *run)
{
	return run->st ? (int)__atomic_load_n(&run->st->sync, __ATOMIC_RELAXED) : BBX_SYNC_OFF;
}

int bbx_run_sync(struct bbx_run *run, uint64_t end)
{
	int mode = bbx_run_sync_mode(run);
	if (mode == BBX_SYNC_OFF)
		return 0;
	struct bbx_state *st = run->st;
	uint64_t upto = 0;
	pthread_mutex_t *mu = NULL;
	/* Group commit.  end is where this thread's record ends (0: an unchained version 1
	 * state file, which counts nothing: sync).  An fdatasync that began after a record
	 * was accounted in st->end covers it, so whoever syncs publishes the end it saw
	 * before syncing, and a writer whose record lies below that skips its own.
	 * Writers that arrive while an fdatasync runs queue on the sync lock; the first
	 * to get it syncs everything written meanwhile, and the others find their record
	 * covered when their turn comes.  The lock only saves work, it guards nothing:
	 * when it cannot be had (a holder stuck for BBX_WRITER_LOCK_TIMEOUT seconds, a
	 * version 2 state file) the writer syncs without it. */
	if (mode == BBX_SYNC_GROUP && end) {
		if (__atomic_load_n(&st->synced, __ATOMIC_ACQUIRE) >= end)
			return 0;
		mu = __atomic_load_n(&sync_lock_broken, __ATOMIC_RELAXED) ? NULL
									 : bbx_state_sync_lock(st);
		if (mu) {
			struct timespec dl;
			clock_gettime(CLOCK_MONOTONIC, &dl);
			dl.tv_sec += BBX_WRITER_LOCK_TIMEOUT;
			int e = pthread_mutex_clocklock(mu, CLOCK_MONOTONIC, &dl);
			if (e == EOWNERDEAD) /* died syncing: synced was not raised, we sync */
				e = pthread_mutex_consistent(mu);
			if (e) {
				if (e == ETIMEDOUT || e == ENOTRECOVERABLE)
					__atomic_store_n(&sync_lock_broken, 1, __ATOMIC_RELAXED);
				mu = NULL;
			} else if (__atomic_load_n(&st->synced, __ATOMIC_ACQUIRE) >= end) {
				pthread_mutex_unlock(mu); /* the holder before us synced for us */
				return 0;
			}
		}
		upto = __atomic_load_n(&st->end, __ATOMIC_ACQUIRE);
	}
	int rc = bbx_writer_sync(&run->w);
	if (rc == 0) {
		__atomic_add_fetch(&bbx_run_syncs, 1, __ATOMIC_RELAXED);
		uint64_t cur = __atomic_load_n(&st->synced, __ATOMIC_ACQUIRE);
		while (cur < upto && !__atomic_compare_exchange_n(&st->synced, &cur, upto, false,
								  __ATOMIC_ACQ_REL,
								  __ATOMIC_ACQUIRE))
			;
	}
	if (mu)
		pthread_mutex_unlock(mu);
	return rc; /* not durable: the caller refuses the mutation (invariant 2) */
}

int bbx_run_fsync_path(const char *p)
{
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = bbx_sys.fsync(fd) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

int bbx_run_set_sync(const char *dir, int mode)
{
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s/state", dir);
	struct bbx_state *st;
	int rc = bbx_state_map(p, &st);
	if (rc)
		return rc;
	__atomic_store_n(&st->sync, (uint32_t)mode, __ATOMIC_RELEASE);
	bbx_state_unmap(st);
	if (mode == BBX_SYNC_OFF)
		return 0;
	/* The directory's own entries (journal, objects/, meta, policy) and its entry in
	 * its parent: a durable record in a journal nobody can find is no use. */
	const char *files[] = {"journal", "meta", NULL};
	for (int i = 0; files[i]; i++) {
		snprintf(p, sizeof p, "%s/%s", dir, files[i]);
		if ((rc = bbx_run_fsync_path(p)))
			return rc;
	}
	if ((rc = bbx_run_fsync_path(dir)))
		return rc;
	snprintf(p, sizeof p, "%s/..", dir);
	return bbx_run_fsync_path(p);
}

/* "%02x/%llu" of the shard and seq, after at bytes of out (str.h: no printf on a
 * capture's path). */
static int object_name_at(uint64_t seq, char *out, size_t cap, size_t at)
{
	size_t n = bbx_str_hex2(out, cap, at, bbx_run_object_shard(seq));
	n = bbx_str_put(out, cap, n, "/", 1);
	n = bbx_str_udec(out, cap, n, (unsigned long long)seq);
	bbx_str_end(out, cap, n);
	return n >= cap ? -ENAMETOOLONG : 0;
}

int bbx_run_object_name(uint64_t seq, char *out, size_t cap)
{
	return object_name_at(seq, out, cap, 0);
}

int bbx_run_object_path(const struct bbx_run *run, uint64_t seq, char *out, size_t cap)
{
	size_t n = bbx_str_put(out, cap, 0, run->dir, strlen(run->dir));
	return object_name_at(seq, out, cap, bbx_str_put(out, cap, n, "/objects/", 9));
}

int bbx_run_pack_path(const struct bbx_run *run, char *out, size_t cap)
{
	size_t n = bbx_str_put(out, cap, 0, run->dir, strlen(run->dir));
	n = bbx_str_put(out, cap, n, "/objects/" BBX_PACK_OBJECT, sizeof "/objects/" BBX_PACK_OBJECT - 1);
	bbx_str_end(out, cap, n);
	return n >= cap ? -ENAMETOOLONG : 0;
}

int bbx_run_meta_append(const char *dir, const char *key, const char *value)
{
	char p[PATH_MAX + 16], line[PATH_MAX + 256];
	snprintf(p, sizeof p, "%s/meta", dir);
	int n = snprintf(line, sizeof line, "%s=%s\n", key, value);
	if (n < 0 || (size_t)n >= sizeof line)
		return -ENAMETOOLONG;
	int fd = open(p, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t w = write(fd, line, (size_t)n);
	int rc = w == n ? 0 : (w < 0 ? -errno : -EIO);
	close(fd);
	return rc;
}

int bbx_run_meta_get(const char *dir, const char *key, char *out, size_t cap)
{
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s/meta", dir);
	FILE *f = fopen(p, "re");
	if (!f)
		return -errno;
	char *line = NULL;
	size_t lcap = 0, klen = strlen(key);
	int rc = -ENOENT;
	ssize_t n;
	/* The last occurrence wins: meta is appended to as the run progresses. */
	while ((n = getline(&line, &lcap, f)) > 0) {
		if ((size_t)n > klen && strncmp(line, key, klen) == 0 && line[klen] == '=') {
			if (line[n - 1] == '\n')
				line[n - 1] = 0;
			snprintf(out, cap, "%s", line + klen + 1);
			rc = 0;
		}
	}
	free(line);
	fclose(f);
	return rc;
}

uint64_t bbx_run_mark(uint64_t jdev, uint64_t jino)
{
	const uint64_t id[2] = {jdev, jino};
	return XXH64(id, sizeof id, 0x626278206d61726bull) | 1; /* never 0 */
}
