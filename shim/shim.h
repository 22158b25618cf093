/* SPDX-License-Identifier: MIT
 *
 * shim.h - internals shared by the wrapper files of libbbxshim.so.
 *
 * Every wrapper has the same skeleton (STYLE.md): make sure the real function is
 * known, take the re-entry guard (bbx_enter), resolve the path, record through
 * journal/capture.h, call the real function, restore errno, release the guard.
 * Nothing here allocates or takes a lock; state that must be shared between processes
 * lives in the run's mmap'd state file.
 */
#ifndef BBX_SHIM_H
#define BBX_SHIM_H

#include <dirent.h>
#include <fts.h>
#include <ftw.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <pty.h> /* forkpty's termios and winsize, for wrappers.def */
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <utime.h>
#include <signal.h>
#include <bits/types/idtype_t.h>

#include "journal/capture.h"
#include "policy/policy.h"
#include "journal/sys.h"
#include <linux/openat2.h>
#include <sys/syscall.h>

struct rusage; /* wait3, wait4: only pointers to it */

#define BBX_EXPORT __attribute__((visibility("default")))

/* Fortified entry points glibc declares only under _FORTIFY_SOURCE. */
int __open_2(const char *, int);
pid_t __vfork(void); /* vfork.c */
int __open64_2(const char *, int);
int __openat_2(int, const char *, int);
int __openat64_2(int, const char *, int);
int lchmod(const char *, mode_t);
/* The stat entry points of binaries built against glibc < 2.33 (no longer declared). */
int __xstat(int, const char *, struct stat *);
int __xstat64(int, const char *, struct stat64 *);
int __lxstat(int, const char *, struct stat *);
int __lxstat64(int, const char *, struct stat64 *);
int __fxstatat(int, int, const char *, struct stat *, int);
int __fxstatat64(int, int, const char *, struct stat64 *, int);

#define BBX_WRAP(name, ret, params) extern ret(*bbx_real_##name) params;
#include "wrappers.def"
#undef BBX_WRAP

/* The real functions' slots live in the data segment's file-backed page, which the
 * loader has written anyway (BBX_HOT, journal/hot.h; init.c), but for those few programs
 * call, named here: slots.c defines them in .bss.  That page has no room to spare
 * (t-layout: the start-up arena's head must stay in it).  BBX_IF_COLD(name, a, b) is a
 * when BBX_COLD_name is defined (as a comma), else b. */
#define BBX_COLD_posix_spawn_file_actions_init ,
#define BBX_COLD_posix_spawn_file_actions_destroy ,
#define BBX_COLD_posix_spawn_file_actions_addopen ,
#define BBX_COLD_posix_spawn_file_actions_adddup2 ,
#define BBX_COLD_posix_spawn_file_actions_addchdir_np ,
#define BBX_COLD_posix_spawn_file_actions_addfchdir_np ,
#define BBX_COLD_closedir ,
#define BBX_COLD_gethostbyname ,
#define BBX_COLD_gethostbyname2 ,
#define BBX_COLD_gethostbyname_r ,
#define BBX_COLD_gethostbyname2_r ,
#define BBX_COLD___xstat ,
#define BBX_COLD___xstat64 ,
#define BBX_COLD___lxstat ,
#define BBX_COLD___lxstat64 ,
#define BBX_COLD___fxstatat ,
#define BBX_COLD___fxstatat64 ,
#define BBX_PICK_(x, a, b, ...) b
#define BBX_PICK(...) BBX_PICK_(__VA_ARGS__)
#define BBX_IF_COLD(name, a, b) BBX_PICK(BBX_COLD_##name ~, a, b, ~)

enum {
#define BBX_WRAP(name, ret, params) BBX_IDX_##name,
#include "wrappers.def"
#undef BBX_WRAP
	BBX_NWRAP
};
/* Resolves one real function with dlsym(RTLD_NEXT), on first use: a process pays only
 * for what it calls (start-up budget).  Aborts if the lookup finds our own wrapper. */
void bbx_resolve(int idx);
/* In the test build with crash points (shim/crash.c), every real call is one. */
#ifdef BBX_CRASHPOINTS
void bbx_crashpoint(void);
#define BBX_CRASHPOINT() bbx_crashpoint(),
#else
#define BBX_CRASHPOINT()
#endif
#define BBX_REAL(name)                                                                      \
	(BBX_CRASHPOINT() __atomic_load_n(&bbx_real_##name, __ATOMIC_ACQUIRE)               \
		 ? bbx_real_##name                                                          \
		 : (bbx_resolve(BBX_IDX_##name), bbx_real_##name))

/* Truncation by path with the run's mark (bbx_run_mark, tools/sandbox.c): issued by the
 * wrappers after journaling, so bbx-run's seccomp filter lets them through.  Same
 * results and errno as truncate(2) and openat(2). */
int bbx_marked_truncate(const char *path, off_t len);
int bbx_marked_openat(int dirfd, const char *path, int flags, mode_t mode);
/* An open that truncates without asking for write access: only such opens need the mark
 * (write-mode opens are Landlock's, and the filter leaves them alone). */
static inline int bbx_rdtrunc(int flags) { return (flags & (O_ACCMODE | O_TRUNC)) == O_TRUNC; }

/* The run this process journals into, and whether journaling works. */
extern struct bbx_run bbx_run;
/* 0 = journaling, BBX_STATUS_CLOSED = not opened yet (opened on first use), else the
 * -errno that made the journal unusable. */
#define BBX_STATUS_CLOSED 1
extern int bbx_status;
/* The journal's descriptor here, or -1 while this process has not opened the run.  The
 * state is read first: it lies in the data page every process has written, bbx_run in
 * .bss, whose page a process that never journals (a compiler, a grep) would map for the
 * first time (a page fault, the zero page) only to find the number in each close, dup2
 * or close_range it makes (issue 5: ~86 faults in a zlib ./configure). */
static inline int bbx_journal_fd(void)
{
	if (__atomic_load_n(&bbx_status, __ATOMIC_ACQUIRE))
		return -1;
	return __atomic_load_n(&bbx_run.w.fd, __ATOMIC_RELAXED);
}
#define BBX_ENV_ARENA (3 * PATH_MAX + 64)
extern char bbx_env_arena[BBX_ENV_ARENA];
extern size_t bbx_env_used;
/* The process's arguments as it started (NUL-terminated, back to back), copied by the
 * constructor into the arena before the program can write over its argv; length 0 when
 * they did not fit (the PROC record then reads /proc/self/cmdline). */
extern const char *bbx_argv_saved;
extern size_t bbx_argv_len;
extern const char *bbx_journal_dir;
extern const char *bbx_env_journal;
int bbx_open_run(void);
/* vfork.c: the parent's repairs after a child that shared its memory. */
void bbx_run_forget_opener(pid_t child);

extern __thread int bbx_guard __attribute__((tls_model("initial-exec")));
/* Counts the guard's takings on this thread: a wrapper that sees it move across its
 * real call knows a signal handler's wrapper used the thread's scratch meanwhile. */
extern __thread unsigned bbx_enter_gen __attribute__((tls_model("initial-exec")));

/* Per-thread path scratch (journal/capture.h); valid once bbx_usable() returned 0. */
#define bbx_tp (*bbx_scratch())

void bbx_init(void);
extern int bbx_inited;
/* Registers the fork handlers once, from the wrappers of the calls that fork (init.c). */
void bbx_fork_hooks(void);
/* Writes the RESULTs this process still holds back (journal/run.h, deferred records):
 * before fork, at exit, _exit and exit_group.  Nothing when none waits. */
void bbx_flush_pending(void);

/* PROC (proc.c): bbx_run_proc_pending (journal/run.h) is set when the journal is opened
 * and in a fork child; the process's first record is then preceded by its PROC, encoded
 * by this prologue and written in the same write(2) (journal/run.h).  A process whose first record is an EXEC skips it: the EXEC (same
 * pid) names it. */
int bbx_proc_prologue(struct bbx_run *run, struct bbx_enc *e, uint8_t *buf, size_t cap);
/* (proc.c) popen: remembers the stream's EXEC seq for pclose's EXIT; system: its EXIT. */
void bbx_popen_note(FILE *f, uint64_t seq);
void bbx_system_exit(uint64_t seq, int status);

/* Takes the guard.  Returns 1 when the caller must journal, 0 when it must simply call
 * the real function (re-entry from the shim itself). *saved gets errno. */
/* errno's address, asked of libc once per thread: a fork child on its way to exec would
 * otherwise call __errno_location, one more window of libc's code to fault in (issue 5,
 * spawn).  The address is the thread's own; a fork child's one thread is a copy of the
 * thread that forked, at the same address, and a new program starts with none cached. */
extern __thread int *bbx_errno_p __attribute__((tls_model("initial-exec")));
static inline int *bbx_errno_loc(void)
{
	int *p = bbx_errno_p;
	if (__builtin_expect(!p, 0))
		bbx_errno_p = p = &errno;
	return p;
}

static inline int bbx_enter(int *saved)
{
	if (bbx_guard)
		return 0;
	if (__builtin_expect(!__atomic_load_n(&bbx_inited, __ATOMIC_ACQUIRE), 0))
		bbx_init();
	*saved = *bbx_errno_loc();
	bbx_guard = 1;
	bbx_enter_gen++;
	bbx_stat_epoch++; /* capture.h: what earlier calls saw no longer holds */
	return 1;
}

/* Releases the guard and sets errno. */
static inline void bbx_leave(int err)
{
	bbx_guard = 0;
	*bbx_errno_loc() = err;
}

/* Around the real call the guard is dropped: a signal handler that runs during a long
 * call (open of a FIFO, a slow network filesystem) is journaled like any other code.
 * glibc's functions reach each other without the PLT, so the real call itself never
 * re-enters our wrappers.  (A handler that interrupts the capture itself, a few
 * microseconds, still passes through unjournaled: README, limitations.) */
static inline unsigned bbx_call_begin(int saved)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	bbx_stat_epoch++; /* the real call changes what the capture saw */
	bbx_guard = 0;
	errno = saved;
	return bbx_enter_gen;
}

/* Takes the guard back.  True when the scratch (paths in it) was reused meanwhile. */
static inline int bbx_call_end(unsigned gen)
{
	bbx_guard = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	bbx_stat_epoch++;
	return gen != bbx_enter_gen;
}

/* Refusal (invariant 2): guard released, errno = -rc, returns -1. */
static inline int bbx_refuse(int rc)
{
	bbx_leave(-rc);
	return -1;
}

/* 0 when this thread can journal; else the -errno every mutation is refused with
 * (journal unusable since start-up, or no scratch memory). */
static inline int bbx_usable(void)
{
	int st = __atomic_load_n(&bbx_status, __ATOMIC_ACQUIRE);
	if (__builtin_expect(st == BBX_STATUS_CLOSED, 0))
		st = bbx_open_run();
	if (st)
		return st;
	return bbx_scratch() ? 0 : -ENOMEM;
}

/* Set by the fork child handler (init.c): this process is a fork child that has not
 * captured yet.  Its first capture then maps in one call each what it is about to write
 * page by page: the thread scratch's hot part (journal/capture.h, BBX_SCRATCH_HOT;
 * inherited copy-on-write, or mapped by the fork
 * handler without its pages), and the state file's head page, of which the child
 * inherited no page table entry (bbx_capture_ready_slow; a bash subshell's "> file"
 * wrote ~10 scratch pages and took 2 faults on the head page, ~20 us a fault here
 * against ~8 per page populated). */
extern int bbx_child_fresh;
void bbx_capture_ready_slow(void);

/* bbx_usable() for a mutation (not for an exec, which writes one page of the scratch). */
static inline int bbx_usable_mut(void)
{
	int rc = bbx_usable();
	if (!rc && __builtin_expect(__atomic_load_n(&bbx_child_fresh, __ATOMIC_RELAXED), 0))
		bbx_capture_ready_slow();
	return rc;
}

/* The common wrapper body (STYLE.md) for calls that return -1 and set errno: guard,
 * capture (an expression giving 0 or -errno, evaluated with the guard held and only
 * when this thread can journal), the real call with the caller's errno in place, and
 * errno preserved on success (invariant 5).  A capture error refuses the call
 * (invariant 2).  After the call a RESULT gives its outcome (bbx_cap_outcome: always
 * for a failure, so the journal never shows as done what did not happen; for a
 * success unless bbx_results_all is off). */
#define BBX_CAPTURE_THEN_CALL(opname, capture, realcall)                                    \
	do {                                                                                \
		int saved_;                                                                 \
		if (!bbx_enter(&saved_))                                                    \
			return realcall;                                                    \
		int rc_ = bbx_usable_mut();                                             \
		bbx_run_last_seq = 0;                                                       \
		if (!rc_)                                                                   \
			rc_ = (capture);                                                    \
		if (rc_)                                                                    \
			return bbx_refuse(rc_);                                             \
		uint64_t seq_ = bbx_run_last_seq;                                           \
		unsigned gen_ = bbx_call_begin(saved_);                                     \
		__typeof__(realcall) r_ = realcall;                                         \
		int e_ = errno;                                                             \
		(void)bbx_call_end(gen_);                                                   \
		if (seq_)                                                                   \
			bbx_cap_outcome(&bbx_run, (opname), seq_, r_ < 0 ? -1 : (long)r_, e_); \
		bbx_leave(r_ < 0 ? e_ : saved_);                                            \
		return r_;                                                                  \
	} while (0)

/* policy (shim/policy.c).  bbx_policy(): the run's compiled policy, mapped on first use;
 * NULL when the run has none (journaling only).  Guard held for all of these. */
struct bbx_pol_hdr;
struct bbx_pol_verdict;
const struct bbx_pol_hdr *bbx_policy(void);
/* Before a process's first fork: makes fork copy the policy's page-table entries to the
 * children, which would otherwise fault every policy page they read in again. */
void bbx_pol_share_with_children(void);
/* Reports a decision other than a plain allow: a DENY record (decision deny or audit)
 * naming op, the access (enum bbx_access), the target (path/path2, or addr/host, or
 * argv for exec) and the rule, plus the one-line stderr explanation (rate-limited,
 * [general] explain).  Returns 0 when the call may go ahead (audit, log), else the
 * -errno to refuse it with. */
int bbx_pol_report(const char *op, int access, const char *path, const char *path2,
		   const char *addr, const char *host, char *const argv[],
		   const struct bbx_pol_verdict *v);

/* The open family's reopen (policy.c): with bbx_pol_hold set before the capture, the
 * policy keeps the O_PATH descriptor it decided on in bbx_pol_fd.  bbx_pol_take()
 * (guard held) hands it over with the name to open relative to it ("" = the object
 * itself, reopened through /proc/self/fd), or returns -1; bbx_pol_openat() then opens
 * exactly what was decided (no check-then-use race on the path) and closes it.
 * BBX_POL_BYPATH instead of a descriptor: the decision was on a directory this thread
 * had proved (bbx_dname), and name holds the whole canonical path decided on, which
 * bbx_pol_openat() opens with openat2(RESOLVE_NO_SYMLINKS): the kernel walks exactly
 * those words, and a symlink met on the way is never followed out of what was decided.
 * It fails the open with ELOOP; the open family then decides once more with
 * bbx_pol_hold = 2, which takes the descriptor route: a proof checked by identity
 * still holds when a process outside the run has put a symlink in place of an
 * ancestor (path.c), and the descriptor route names the directory as the kernel does. */
#define BBX_POL_BYPATH (-2)
extern __thread int bbx_pol_fd __attribute__((tls_model("initial-exec")));
extern __thread int bbx_pol_hold __attribute__((tls_model("initial-exec")));
int bbx_pol_take(char *name, size_t cap);
/* The room bbx_pol_take's name needs (its length + 1; 1 when there is none): the open
 * family sizes its buffer by it instead of PATH_MAX, which sat in every open wrapper's
 * frame from its entry, read-only opens included, and put every call under it a page
 * deeper into the stack (issue 5). */
size_t bbx_pol_take_room(void);
int bbx_pol_openat(int fd, const char *name, int flags, mode_t mode);

/* Reads (deny_read).  bbx_pol_reads is 0 once the policy is known to have nothing to
 * say about reads: the read-only fast path tests only that.  bbx_read_pre decides on an
 * absolute path's words before the call; bbx_read_post on the identity of what the call
 * reached (sb, or fstat of fd).  Both return 0 or -errno (DENY written). */
extern int bbx_pol_reads;
int bbx_read_pre(const char *op, const char *path);
/* A read-only open decided by its words alone, when the compiled policy says words are
 * enough (bbx_pol_hdr.reads_exact) and path is absolute and canonical: opened with
 * openat2(RESOLVE_NO_SYMLINKS), so what it reaches is what it names, and no identity
 * check follows.  Guard held (saved: errno on entry).  Returns 1 when it answered (*fd:
 * the descriptor, or -1 with errno set and the guard left), 0 to take the general path
 * (a symlink on the way, "..", a refusal to explain, a kernel without openat2). */
int bbx_read_open_exact(const char *path, int flags, int saved, int *fd);
/* The run's mark (bbx_run_mark): from the open run, else from the journal directory. */
long bbx_mark(void);
int bbx_read_post(const char *op, const char *path, int fd, const struct stat *sb);
/* The policy has deny_read roots (or is not loaded yet): reads are decided. */
static inline int bbx_reads_policed(void)
{
	return __builtin_expect(__atomic_load_n(&bbx_pol_reads, __ATOMIC_RELAXED), 0);
}

/* ... and this call is not the shim's own (guard not held). */
static inline int bbx_reads_checked(void) { return bbx_reads_policed() && !bbx_guard; }

/* The read filter: what a read-only call needs to know that the policy has nothing to
 * say about it, in the shim's hot data (built with the policy, shim/policy.c).  The
 * general path reads the guard and the policy's header, index and inode list: 332
 * instructions per stat of an absolute path (callgrind; 85 through the filter, 24
 * with an empty preloaded library).  The filter answers most reads from its own
 * cache lines and sends the rest there.
 *   words: the second byte of every deny_read root (policy.h, struct bbx_pol_rf): an
 *     absolute path whose second byte is none of them is under no root by its words,
 *     as bbx_read_pre would find;
 *   pfx: the roots' words as a table of component prefixes ("/home", "/home/ann",
 *     "/home/ann/.ssh" the root itself): a path whose second byte is some root's (the
 *     workspace and the secrets both under $HOME, the common case) is cleared at its
 *     first component prefix no root begins with (bbx_rf_walk).  npfx 0: not built
 *     (more prefixes than fit), the second byte alone decides;
 *   ino: a 1024-bit Bloom filter of the listed inodes' numbers: a reached object whose
 *     number misses it is no listed inode, as bbx_pol_read_inode would find.
 * ready: 1 once built (the policy has deny_read roots, the index answers for them and
 * none is too large to list); exact: the policy's reads_exact. */
struct bbx_rfilt {
	int ready, exact;
	long mark; /* bbx_mark() once known (0 before: the general path learns it) */
	uint64_t words[4];
	uint64_t ino[16];
	/* a prefix's 32-bit FNV-1a hash with its two low bits replaced: bit 0 set (an
	 * entry), bit 1 set when the prefix is a whole root.  0: empty slot. */
	uint32_t npfx, pfx[BBX_RF_PFX_SLOTS];
};
extern struct bbx_rfilt bbx_rfilt;

/* 0: no root begins with the prefix hashed to h; 1: some root begins with it; 2: it is
 * a root (or a hash shared with one: the general path decides). */
static inline int bbx_rf_pfx(uint32_t h)
{
	uint32_t k = h & ~3u;
	for (unsigned j = bbx_rf_pfx_home(h);; j = (j + 1) & (BBX_RF_PFX_SLOTS - 1)) {
		uint32_t v = bbx_rfilt.pfx[j];
		if (!v)
			return 0;
		if ((v & ~3u) == k)
			return v & 2 ? 2 : 1;
	}
}

/* The walk of the absolute path, component by component, through the prefix table:
 * 1 when it reaches a prefix no deny_read root begins with (*end: the index just past
 * that component), before any root and any "", "." or ".." component (those, and a
 * path that reaches a root, go the general way: 0); 2 when the path ends as a proper
 * prefix of roots ("/home/ann" itself: under none of them, but not its whole
 * subtree).  Hashes collide only towards 0 or on: a prefix of a real root is always
 * found. */
static inline int bbx_rf_walk_to(const char *path, size_t *end)
{
	uint32_t h = bbx_rf_fnv(BBX_RF_FNV0, '/');
	size_t s = 1; /* where the current component starts */
	for (size_t i = 1;; i++) {
		unsigned char c = (unsigned char)path[i];
		if (c == '/' || !c) {
			size_t n = i - s;
			if (!n || (path[s] == '.' && (n == 1 || (n == 2 && path[s + 1] == '.'))))
				return 0;
			int k = bbx_rf_pfx(h);
			if (k != 1) {
				*end = i;
				return k == 0;
			}
			if (!c)
				return 2;
			s = i + 1;
		}
		h = bbx_rf_fnv(h, c);
	}
}

/* 1: the absolute path is under no deny_read root by the walk (above). */
static inline int bbx_rf_walk(const char *path)
{
	size_t end;
	return bbx_rf_walk_to(path, &end) != 0;
}

static inline int bbx_rf_ready(void)
{
	return __atomic_load_n(&bbx_rfilt.ready, __ATOMIC_ACQUIRE);
}

/* 1: path (not NULL) is under no deny_read root by its words, or relative (decided by
 * identity alone, as bbx_read_pre does). */
static inline int bbx_rf_words(const char *path)
{
	if (path[0] != '/')
		return 1;
	unsigned char b1 = (unsigned char)path[1];
	if (!(bbx_rfilt.words[b1 >> 6] >> (b1 & 63) & 1))
		return 1;
	return bbx_rfilt.npfx && bbx_rf_walk(path);
}

/* The absolute canonical path (not NULL) is clean when nothing named beneath it, nor
 * the path itself, is under a deny_read root: some component prefix of it is one no
 * root begins with (by its first byte, or bbx_rf_walk_to).  Returns -1
 * when it is not, else its clean levels: how many of its components follow the first
 * such prefix, the ".." steps up from it that stay clean ("/work/a/b": 2;
 * "/home/ann/proj" beside the root "/home/ann/.ssh": 0). */
static inline int bbx_rf_levels(const char *path)
{
	unsigned char b1 = (unsigned char)path[1];
	if (path[0] != '/' || !b1)
		return -1;
	size_t i = 1;
	if (bbx_rfilt.words[b1 >> 6] >> (b1 & 63) & 1) {
		if (!bbx_rfilt.npfx || bbx_rf_walk_to(path, &i) != 1)
			return -1;
	} else {
		while (path[i] && path[i] != '/')
			i++;
	}
	/* path[i]: the end of the first clean prefix; count the names after it (an
	 * absolute open's words are not always canonical: "" and "." name no level) */
	int lv = 0;
	while (path[i]) {
		while (path[i] == '/')
			i++;
		size_t s = i;
		while (path[i] && path[i] != '/')
			i++;
		size_t n = i - s;
		if (n == 2 && path[s] == '.' && path[s + 1] == '.')
			return -1;
		if (n && !(n == 1 && path[s] == '.'))
			lv++;
	}
	return lv;
}

/* 1: the absolute path has a ".." component.  From '.' to '.' with strchr, not byte
 * by byte: a header's name (~50 bytes, a dot or two) in ~60 instructions instead of
 * ~250, at each of a compiler's ~200 opens (callgrind of cc1). */
static inline int bbx_rf_dotdot(const char *path)
{
	for (const char *c = path; (c = strchr(c + 1, '.'));)
		if (c[-1] == '/' && c[1] == '.' && (!c[2] || c[2] == '/'))
			return 1;
	return 0;
}

/* An openat2 error that says nothing of the path (a symlink on the way, flags or a
 * kernel it does not take): the general path decides instead. */
static inline int bbx_openat2_refused(long e)
{
	return e == ELOOP || e == EINVAL || e == ENOSYS || e == E2BIG || e == EPERM ||
	       e == EXDEV || e == EAGAIN;
}

#define BBX_RF_GENERAL (-4096L)
#define BBX_RF_TRIED (-4097L)
/* When the working directory is clean (bbx_rf_levels of getcwd's answer, taken once
 * per cwd generation by each thread: a thread may have a working directory of its
 * own, unshare(CLONE_FS)): its levels + 1, with *gen set to that cwd generation; else
 * 0 (not clean, or not trusted: the generation moved, or bbx_cwd_untrusted).
 * shim/policy.c. */
int bbx_rf_cwd(unsigned *gen);
/* The run's mark (bbx_mark) for bbx_rf_open, learnt by a process whose first read-only
 * open took the general path (a relative name: bbx_read_open_exact, which learns it
 * for an absolute one, is not asked).  Guard held. */
void bbx_rf_learn(void);
/* A clean mark's levels, as dev bits (capture.h, BBX_FDID_LVL_SHIFT), capped. */
static inline uint64_t bbx_rf_lvbits(int lv)
{
	unsigned u = lv > (int)BBX_FDID_LVL_MAX ? BBX_FDID_LVL_MAX : (unsigned)lv;
	return (uint64_t)u << BBX_FDID_LVL_SHIFT;
}

/* The levels a relative name moves by, read lexically (no symlink will be followed):
 * +1 a name, -1 "..", 0 "." or an empty component.  *low: the lowest it reaches on
 * the way (0 when it never goes above its directory); *ups: how many ".." it has. */
static inline int bbx_rf_climb(const char *path, int *low, int *ups)
{
	int d = 0, m = 0, u = 0;
	for (const char *c = path; *c;) {
		const char *e = c;
		while (*e && *e != '/')
			e++;
		size_t n = (size_t)(e - c);
		if (n == 2 && c[0] == '.' && c[1] == '.') {
			u++;
			if (--d < m)
				m = d;
		} else if (n && !(n == 1 && c[0] == '.')) {
			d++;
		}
		c = *e ? e + 1 : e;
	}
	*low = m;
	*ups = u;
	return d;
}

/* A read-only open by a relative name: its words decide when the directory it is
 * relative to is clean (the working directory by bbx_rf_cwd, a descriptor by its
 * BBX_FDID_CLEAN mark) and the kernel follows the very words, without a symlink
 * (RESOLVE_NO_SYMLINKS): no magic link, no second name of a listed inode
 * (reads_exact), and each ".." is the parent by name, so the words say where the
 * object lies.  A name with ".." that stays beneath the directory is opened
 * RESOLVE_BENEATH as well ("a/.." while a is renamed away would reach a's new
 * parent); one without any needs nothing more, as it cannot leave the directory
 * without a symlink (RESOLVE_BENEATH added ~55 ns to each open here, on a relative
 * open+close of ~720 ns: bench/micro's relative rows); one whose ".." go up is taken
 * only while they stay within the directory's clean levels (gnulib's fts climbs back
 * to a parent by ".."), and not across a mount (RESOLVE_NO_XDEV).  A directory opened
 * so (O_DIRECTORY) is clean too, and marked with its own levels; any other descriptor
 * number it returns loses a stale mark.  A chdir between the verdict and the call
 * voids it: the descriptor is closed and the general path decides (errno untouched
 * throughout). */
static inline long bbx_rf_open_rel(int dirfd, const char *path, int flags, long mark)
{
	unsigned g = 0;
	int base = !path[0] ? 0 : dirfd == AT_FDCWD ? bbx_rf_cwd(&g) : bbx_fdid_clean(dirfd);
	if (!base--)
		return BBX_RF_GENERAL;
	int low, ups, lv = base + bbx_rf_climb(path, &low, &ups);
	if (low < -base)
		return BBX_RF_GENERAL;
	struct open_how how = {.flags = (uint64_t)(unsigned)flags,
			       .resolve = RESOLVE_NO_SYMLINKS |
					  (low < 0 ? RESOLVE_NO_XDEV : ups ? RESOLVE_BENEATH : 0)};
	long r = bbx_sys_raw5(SYS_openat2, dirfd, (long)path, (long)&how, sizeof how, mark);
	if (r < 0 && bbx_openat2_refused(-r))
		return BBX_RF_TRIED;
	if (dirfd == AT_FDCWD && __atomic_load_n(&bbx_cwd_gen, __ATOMIC_ACQUIRE) != g) {
		if (r >= 0)
			bbx_sys_raw4(SYS_close, r, 0, 0, 0);
		return BBX_RF_TRIED;
	}
	if (r >= 0) {
		if (flags & O_DIRECTORY)
			bbx_fdid_set((int)r, BBX_FDID_CLEAN | bbx_rf_lvbits(lv), BBX_FDID_NOID);
		else
			bbx_fdid_forget((int)r, (int)r);
	}
	return r;
}

/* A read-only open that bbx_read_open_exact would answer (an absolute name; a relative
 * one goes to bbx_rf_open_rel), answered without the guard, the policy's pages or a
 * verdict: the words clear it (bbx_rf_words: its first
 * component is under no deny_read root, and '.' and '/' are in the set, so "/./" and
 * "//" go the general way), it has no "..", and openat2 with RESOLVE_NO_SYMLINKS
 * reaches what the words name (reads_exact: no listed inode has another name).
 * Returns the descriptor or -errno; BBX_RF_GENERAL to take the general path without
 * trying; BBX_RF_TRIED when openat2 refused (a symlink on the way, flags it does not
 * take): the general path then skips bbx_read_open_exact, which would make the same
 * call (a build's opens through /lib -> usr/lib made it twice, 1,700 system calls in a
 * configure + make of bbx).  errno untouched.  (Inline, by the
 * instruction: out of line, through libc's syscall() and strstr, open+close cost ~100
 * ns more here, pinned A/B runs; code brought back into the cache after the system
 * call, not instructions.)  A directory opened so (O_DIRECTORY) whose whole subtree
 * the words clear (bbx_rf_levels) is marked BBX_FDID_CLEAN, for the relative opens
 * through it. */
static inline long bbx_rf_open(int dirfd, const char *path, int flags)
{
	long mark = __atomic_load_n(&bbx_rfilt.mark, __ATOMIC_RELAXED);
	if (!bbx_rf_ready() || !bbx_rfilt.exact || !mark || !path)
		return BBX_RF_GENERAL;
	if (path[0] != '/')
		return bbx_rf_open_rel(dirfd, path, flags, mark);
	if (!bbx_rf_words(path) || bbx_rf_dotdot(path))
		return BBX_RF_GENERAL;
	struct open_how how = {.flags = (uint64_t)(unsigned)flags,
			       .resolve = RESOLVE_NO_SYMLINKS};
	long r = bbx_sys_raw5(SYS_openat2, AT_FDCWD, (long)path, (long)&how, sizeof how, mark);
	if (r < 0 && bbx_openat2_refused(-r))
		return BBX_RF_TRIED;
	if (r >= 0 && (flags & O_DIRECTORY)) {
		int lv = bbx_rf_levels(path);
		if (lv >= 0)
			bbx_fdid_set((int)r, BBX_FDID_CLEAN | bbx_rf_lvbits(lv), BBX_FDID_NOID);
		else
			bbx_fdid_forget((int)r, (int)r);
	}
	return r;
}

/* 1: an object with this inode number is no listed deny_read inode. */
static inline int bbx_rf_ino(uint64_t ino)
{
	unsigned b = bbx_rf_ino_bit(ino);
	return !(bbx_rfilt.ino[b >> 6] >> (b & 63) & 1);
}

/* posix_spawn's file actions (spawnfa.c): where fa's list will be when its next action
 * runs, BBX_SPAWN_CWD (this process's working directory), BBX_SPAWN_DIR (its absolute
 * name copied into dir) or BBX_SPAWN_UNKNOWN; and name resolved against it, made
 * absolute in out (PATH_MAX): 0, -EACCES (unknown) or another -errno.  Guard held for
 * bbx_spawn_abs. */
enum { BBX_SPAWN_CWD, BBX_SPAWN_DIR, BBX_SPAWN_UNKNOWN };
int bbx_spawn_dir(const posix_spawn_file_actions_t *fa, char *dir, size_t cap);
int bbx_spawn_abs(const posix_spawn_file_actions_t *fa, const char *name, char *out);
/* The line on stderr that says why what (a call's name) of path was refused: the
 * child's directory is unknown. */
void bbx_spawn_unknown(const char *what, const char *path);

/* exec support (env.c) */
#define BBX_ENV_EXTRA 4
#define BBX_ENV_SCRATCH (2 * PATH_MAX)
/* Number of entries in envp (without the NULL). */
size_t bbx_env_count(char *const *envp);
/* Builds into out (room for bbx_env_count(envp) + BBX_ENV_EXTRA + 1 pointers) the
 * environment for a new program: LD_PRELOAD (with the shim) and BBX_JOURNAL (this run)
 * re-inserted, and BBX_HIDE naming what was inserted so the new process can take it
 * back out of its environ (DESIGN.md, Coverage: transparency of the environment).
 * scratch holds BBX_ENV_SCRATCH bytes.  Returns out. */
char **bbx_env_build(char *const *envp, char **out, char *scratch);
/* True when envp already carries everything a child needs (no rebuild). */
int bbx_env_complete(char *const *envp);
/* At start-up: remembers our values, then removes from environ what BBX_HIDE names. */
void bbx_env_init(void);
/* out = prefix followed by val (no printf machinery at start-up).  Returns the length,
 * or 0 when it does not fit in cap (out then holds a terminated truncation). */
size_t bbx_env_put(char *out, size_t cap, const char *prefix, const char *val);

#endif
