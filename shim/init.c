/* SPDX-License-Identifier: MIT
 *
 * init.c - process start-up of the shim: real symbols, the run, the environment.
 *
 * Runs as a constructor and, lazily, from the first wrapper called before it (another
 * library's constructor).  Joins the run named by BBX_JOURNAL or, when there is none,
 * creates one under the state directory (DESIGN.md: "LD_PRELOAD alone creates a run").
 * When the journal cannot be used the shim fails closed: every mutation is refused
 * with the reason (invariant 2), and one line says so on stderr.
 */
#include "shim.h"
#include "journal/redact.h"
#include "journal/hot.h"

#include <dlfcn.h>
#include <sys/wait.h> /* the wait family, for the table below */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <sys/wait.h>

extern char **environ;

/* The real functions' slots: BBX_HOT (journal/hot.h), but for the few that shim.h
 * names cold (BBX_COLD_), which slots.c defines in plain .bss. */
#define BBX_WRAP(name, ret, params) BBX_IF_COLD(name, extern, BBX_HOT) ret(*bbx_real_##name) params;
#include "wrappers.def"
#undef BBX_WRAP

/* From a page boundary: a process that opens the run writes its identities, the
 * writer's fields and the head of the directory's name (struct bbx_run: the small
 * fields, then the name), one page from its start; the writer keeps no copy of the name
 * (writer.h), which was a second page.  Where the linker put it in .bss, 32 bytes
 * before a page boundary, its head alone took another page (issue 5: 3 of a journaling
 * process's page faults, now 1).  In .lbss, the x86-64 ABI's
 * zero-initialised section after .bss: aligned in .bss it would align all of .bss and
 * move the small variables at its head (crtstuff's exit flag, the init states) off the
 * data page the loader writes anyway.  Read only once the run is open here (bbx_status,
 * bbx_journal_fd): a process that never journals maps none of it. */
struct bbx_run bbx_run __attribute__((section(".lbss"), aligned(4096)));
int bbx_status = BBX_STATUS_CLOSED;
/* The strings built at start-up share one arena, so they dirty one page, not three. */
char bbx_env_arena[BBX_ENV_ARENA];
size_t bbx_env_used;
const char *bbx_journal_dir = "";
const char *bbx_env_journal; /* "BBX_JOURNAL=<dir>", NULL when there is no run */
int bbx_inited;
__thread int bbx_guard __attribute__((tls_model("initial-exec")));
__thread unsigned bbx_enter_gen __attribute__((tls_model("initial-exec")));
__thread int *bbx_errno_p __attribute__((tls_model("initial-exec")));

/* One entry of wrappers.def: its name (returned), where its real address goes and our
 * own wrapper's address.  A switch, not a table of pointers: the table took three
 * relocations per entry (405), which the loader wrote at every process start into a
 * second page of the shim's data segment - two more page faults per process (a read,
 * then the copy), issue 5.  The switch's code addresses everything PC-relative. */
static const char *entry(int idx, void ***slot, void **self)
{
	switch (idx) {
#define BBX_WRAP(name, ret, params)                                                          \
	case BBX_IDX_##name:                                                                 \
		*slot = (void **)&bbx_real_##name;                                           \
		*self = (void *)name;                                                        \
		return #name;
#include "wrappers.def"
#undef BBX_WRAP
	}
	abort(); /* an index not from wrappers.def */
}

static void **slot_of(int idx)
{
	void **slot, *self;
	(void)entry(idx, &slot, &self);
	return slot;
}

void bbx_resolve(int idx)
{
	void **slot, *self;
	void *p = dlsym(RTLD_NEXT, entry(idx, &slot, &self));
	/* proxychains-ng's lesson: RTLD_NEXT must never hand back our own wrapper (it would
	 * recurse forever).  A pointer compare, no dladdr(): dladdr scans symbol tables
	 * and would cost every process start-up a millisecond. */
	if (p && p == self) {
		static const char msg[] = "bbx: dlsym(RTLD_NEXT) returned the shim itself\n";
		(void)!write(2, msg, sizeof msg - 1);
		abort();
	}
	__atomic_store_n(slot, p, __ATOMIC_RELEASE);
}

static void warn_once(const char *what, int err)
{
	char line[PATH_MAX + 160];
	int n = snprintf(line, sizeof line,
			 "bbx: journal unavailable (%s: %s); mutations will be refused\n", what,
			 strerror(err));
	if (n > 0)
		(void)!write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* A run the shim creates itself (LD_PRELOAD alone) gets its policy the way bbx-run's
 * do: bbx-policy compiles it once (the lookup order of bbx-policy(5): BBX_POLICY,
 * $XDG_CONFIG_HOME/bbx, /etc/bbx, the built-in default) into the run directory, and
 * every process of the run maps the result (no INI parsing here).  If the policy is
 * malformed, an empty J/policy is left: every process then refuses all mutations
 * (bbx-policy's message says why).  Without the tool, the run is journaled only, and
 * one line says so. */
static void compile_policy(const char *dir)
{
	char out[PATH_MAX], tool[PATH_MAX];
	if (snprintf(out, sizeof out, "%s/policy", dir) >= (int)sizeof out)
		return;
	const char *t = getenv("BBX_POLICY_TOOL");
	snprintf(tool, sizeof tool, "%s", t && *t ? t : BBX_BINDIR "/bbx-policy");
	if (access(tool, X_OK))
		snprintf(tool, sizeof tool, "bbx-policy"); /* from $PATH */
	char *argv[] = {"bbx-policy", "compile", "-o", out, NULL};
	/* The compiler runs without the shim (it is not part of the run). */
	size_t n = 0;
	while (environ[n])
		n++;
	char *env[n + 1];
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11))
			env[k++] = environ[i];
	env[k] = NULL;
	pid_t pid;
	int st = -1;
	if (posix_spawnp(&pid, tool, NULL, NULL, argv, env)) {
		static const char msg[] = "bbx: bbx-policy not found: this run is journaled "
					  "but no policy is enforced\n";
		(void)!write(2, msg, sizeof msg - 1);
		return;
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		int fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
		if (fd >= 0)
			close(fd);
		static const char msg[] =
			"bbx: no usable policy for this run (bbx-policy compile failed): "
			"every mutation will be refused\n";
		(void)!write(2, msg, sizeof msg - 1);
	}
}

/* The run named by dir becomes this process's (the environment its children get). */
static void join_run(const char *dir);

/* LD_PRELOAD alone: a new run.  Its own function, so that the 12 KiB of this path's
 * buffers are not in choose_run's frame, where every process of a run would touch one
 * more stack page at start-up (issue 5). */
__attribute__((noinline, cold)) static void create_run(void)
{
	char made[PATH_MAX];
	int rc = bbx_run_create(NULL, "(LD_PRELOAD)", "origin=preload\n", 0, made, sizeof made);
	if (rc) {
		bbx_status = rc;
		warn_once("creating a run under the state directory", -rc);
		return;
	}
	compile_policy(made);
	join_run(made);
}

/* At start-up: which run this process belongs to.  Only a process started without
 * BBX_JOURNAL (LD_PRELOAD alone) does real work here: it creates the run, so that its
 * children (which inherit BBX_JOURNAL through env.c) join it. */
static void choose_run(void)
{
	const char *dir = getenv("BBX_JOURNAL");
	if (!dir || !*dir)
		create_run();
	else
		join_run(dir);
}

static void join_run(const char *dir)
{
	/* No snprintf: every process of a run starts here, and printf's machinery is
	 * three pages of libc (page faults, perf) that most programs never touch. */
	size_t n = bbx_env_put(bbx_env_arena, PATH_MAX + 16, "BBX_JOURNAL=", dir);
	if (!n) {
		bbx_status = -ENAMETOOLONG;
		return;
	}
	bbx_env_journal = bbx_env_arena;
	bbx_journal_dir = bbx_env_arena + 12;
	bbx_env_used = n + 1;
}

/* On the first mutation or exec, not at start-up: most processes of a build or an agent
 * (compilers' readers, grep, cat) never mutate, and then pay nothing but the load. */
static int open_state; /* 0 idle, 1 opening, 2 done */
static pid_t open_tid;  /* the thread opening it (asked of the kernel: a vfork child's own) */
static int init_state; /* 0 idle, 1 running, 2 done */

/* The libc functions a first record calls (the path's string functions, the records'
 * clock, the journal lock), bound here, where the run is opened, at the depth of the
 * wrapper that opens it: bound lazily where the record first calls them, deep in the
 * capture's frames, the resolver's saved register state (~2.7 KB) reached a page of the
 * stack the program had not, a page fault (perf, page faults by address; issue 5).  A
 * process that opens the run records, so each would be bound anyway; nothing here makes
 * a system call. */
static void prebind_record(void)
{
	const char *a = "a", *b = "b";
	size_t one = 1;
	__asm__ volatile("" : "+r"(a), "+r"(b), "+r"(one));
	volatile long sink = strncmp(a, b, one) + memcmp(a, b, one) +
			     (memchr(a, 'a', one) != NULL) + (strchr(a, 'a') != NULL) +
			     (strrchr(a, 'a') != NULL) + (int)strnlen(a, one);
	(void)sink;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	if (pthread_mutex_trylock(&m) == 0)
		pthread_mutex_unlock(&m);
}

int bbx_open_run(void)
{
	int expect = 0;
	if (__atomic_compare_exchange_n(&open_state, &expect, 1, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		__atomic_store_n(&open_tid, (pid_t)bbx_sys_raw4(SYS_gettid, 0, 0, 0, 0),
				 __ATOMIC_RELEASE);
		prebind_record();
		int rc = bbx_status == BBX_STATUS_CLOSED ? bbx_run_open(&bbx_run, bbx_journal_dir)
							 : bbx_status;
		if (rc && bbx_status == BBX_STATUS_CLOSED)
			warn_once(bbx_journal_dir, -rc);
		if (!rc) {
			__atomic_store_n(&bbx_run_proc_pending, 1, __ATOMIC_RELEASE); /* PROC */
			/* The run's table of environment entries and argv elements known
			 * clean (EXEC and PROC records).
			 * Set here, in the process that opens the run, so that its fork
			 * children inherit it without writing a page of their own.  Entries
			 * go in only while a record is redacted, which is always after the
			 * process loaded the policy and with it the run's redaction rules
			 * (exec.c's check, a write hook's, or the fork handler's): a record
			 * redacted before would itself hold what the rules hide. */
			uint64_t *c = bbx_state_clean(bbx_run.st);
			if (c)
				bbx_redact_set_cache(c, bbx_state_clean_n(bbx_run.st),
						     bbx_run_mark(bbx_run.jdev, bbx_run.jino));
		}
		__atomic_store_n(&bbx_status, rc, __ATOMIC_RELEASE);
		__atomic_store_n(&open_state, 2, __ATOMIC_RELEASE);
	} else {
		while (__atomic_load_n(&open_state, __ATOMIC_ACQUIRE) != 2)
			__builtin_ia32_pause();
	}
	return __atomic_load_n(&bbx_status, __ATOMIC_ACQUIRE);
}

/* A vfork child that died while it opened the run (vfork.c): the parent starts over. */
void bbx_run_forget_opener(pid_t child)
{
	if (__atomic_load_n(&open_state, __ATOMIC_ACQUIRE) == 1 &&
	    __atomic_load_n(&open_tid, __ATOMIC_ACQUIRE) == child) {
		bbx_status = BBX_STATUS_CLOSED;
		__atomic_store_n(&open_state, 0, __ATOMIC_RELEASE);
	}
}

/* The libc functions a fork child's exec path calls that nothing before it did are bound
 * lazily, in the child, by the dynamic linker: ld.so's resolver, the symbol lookup in
 * libc's hash tables and a copy of our GOT page, ~7 page faults per child (perf), and the
 * binding is lost at the exec.  Calling each once here binds it in the parent, and every
 * child inherits the bound slot.  The arguments are hidden from the compiler so that it
 * emits the calls (rather than folding them as builtins); every call is harmless.
 *
 * Likewise what a subshell's redirection reaches (LD_DEBUG=bindings, a bash child of
 * "( echo x > f )": getcwd, in every such child; a truncation's preserved copy adds
 * flistxattr, ioctl (FICLONE), copy_file_range and, the run's first, mkdir of the objects
 * directory; a PROC record's buffer, munmap) and an exec's first look at a program
 * (pread and getxattr of its header), and the journal lock's trylock.  Bound in the
 * child, the one getcwd cost 9 page faults there (ld.so's resolver and its extended
 * state on the stack, the lookup through bash's, libtinfo's and libc's tables; perf).
 * Each call below fails at once (a bad descriptor, an empty name, a 1-byte buffer, a
 * length of 0). */
static void prebind(void)
{
	prebind_record(); /* the string functions, the clock, the lock's trylock and unlock */
	const char *a = "a", *b = "b";
	size_t one = 1;
	int bad = -1;
	__asm__ volatile("" : "+r"(a), "+r"(b), "+r"(one), "+r"(bad));
	char c;
	volatile long sink = strcmp(a, b);
	sink += getcwd(&c, one) != NULL;
	sink += pread(bad, &c, one, 0) + getxattr("", "", &c, one) + flistxattr(bad, &c, one);
	sink += ioctl(bad, 0) + copy_file_range(bad, NULL, bad, NULL, one, 0);
	sink += munmap(NULL, 0) + mkdir("", 0); /* a PROC's own buffer; the objects directory */
	(void)sink;
	bbx_run_ids_learn(); /* pid, ppid and uid: the answers kept for the children */
	(void)bbx_errno_loc(); /* errno's address, kept for this thread and its fork children */
	(void)syscall(SYS_gettid);
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	struct timespec ts = {0, 0};
	if (pthread_mutex_clocklock(&m, CLOCK_REALTIME, &ts) == 0)
		pthread_mutex_unlock(&m);
}

/* Before fork(), in the parent: the real functions a fork child typically reaches
 * through the shim (a shell's redirections, then the exec) are looked up here, once,
 * if this process has not needed them yet.  Otherwise every child would look them up
 * again with dlsym - symbol-table walks and copy-on-write faults in the loader's data,
 * about 10 page faults per child measured with perf (issue 5: spawn cost) - and lose
 * the answer at exec. */
static void atfork_prepare(void)
{
	static const int child_set[] = {
		BBX_IDX_execve, BBX_IDX_execvpe, BBX_IDX_fexecve, BBX_IDX_execveat,
		BBX_IDX_open,	BBX_IDX_open64,	 BBX_IDX_openat,  BBX_IDX_close,
		BBX_IDX_dup2,	BBX_IDX_dup3,	 BBX_IDX_fcntl,
	};
	static int done;
	bbx_flush_pending(); /* else the parent's and the child's copies would both go */
	if (__atomic_load_n(&done, __ATOMIC_ACQUIRE))
		return;
	for (size_t i = 0; i < sizeof child_set / sizeof *child_set; i++)
		if (!__atomic_load_n(slot_of(child_set[i]), __ATOMIC_ACQUIRE))
			bbx_resolve(child_set[i]);
	/* Likewise the run and the compiled policy: a shell or make that forks without
	 * ever mutating would otherwise have every child open the journal, map the state
	 * file and the policy, and build the policy's index, only to exec (realpath, two
	 * stats, three opens, two mmaps and ~30 page faults per child, perf: issue 5).
	 * Opened here once, all of it is inherited.  Nothing is written: a process's PROC
	 * still waits for its first record.  Not from inside the shim (a wrapper that
	 * forks, e.g. system(), holds the guard and has opened the run already). */
	if (!bbx_guard && __atomic_load_n(&bbx_inited, __ATOMIC_ACQUIRE)) {
		int saved = errno;
		bbx_guard = 1;
		if (bbx_open_run() == 0) {
			(void)bbx_policy();
			bbx_redact_prepare();
			bbx_pol_share_with_children();
			(void)bbx_scratch_lazy(); /* its mmap and thread key */
			prebind();
		}
		bbx_guard = 0;
		errno = saved;
	}
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
}

/* A fork child's first capture (shim.h, bbx_usable_mut). */
BBX_HOT int bbx_child_fresh;

void bbx_capture_ready_slow(void)
{
	__atomic_store_n(&bbx_child_fresh, 0, __ATOMIC_RELAXED);
	bbx_scratch_populate();
	bbx_state_forget_ready();
	if (bbx_run.st)
		bbx_state_prefault(bbx_run.st);
}

/* fork() while another thread was half-way through opening the run (or starting up):
 * that thread does not exist in the child, which would wait for it forever.  The child
 * starts those steps over. */
static void atfork_child(void)
{
	bbx_child_fresh = 1; /* in the page written below anyway (hot.h) */
	if (__atomic_load_n(&open_state, __ATOMIC_ACQUIRE) == 1) {
		bbx_status = BBX_STATUS_CLOSED;
		__atomic_store_n(&open_state, 0, __ATOMIC_RELEASE);
	}
	else if (__atomic_load_n(&bbx_status, __ATOMIC_ACQUIRE) == 0)
		bbx_run_proc_pending = 1; /* a new process: its PROC before its first record */
	bbx_scratch_atfork_child();
	bbx_run_ids_forked();
}

/* The fork handlers, registered on first need rather than at start-up: registering
 * writes two pages of libc's data (its handler list and lock) that a process which
 * never forks touches otherwise, two page faults in every /bin/true, cc1 or sed of a
 * run (perf, page faults by address; issue 5, spawn).  The need is a fork, so they are
 * registered by the wrappers of the calls that fork and run atfork handlers: fork(),
 * and glibc's daemon() and forkpty(), whose fork is libc's own and passes the fork
 * wrapper by.  Each registers before the real call, so the handlers run for that very
 * fork, and for every fork after it.  (posix_spawn, system and popen clone with
 * CLONE_VFORK and run no handlers; _Fork and a raw clone run none by definition; vfork
 * children are handled in exec.c.)  What a fork child must fix - open_state or
 * bbx_status caught half-way by another thread, the ids, the PROC still due, the
 * scratch's key and held-back records - exists only in a process that will reach one
 * of these wrappers before it forks.
 *
 * They used to be registered also when the run is opened and when the capture's scratch
 * is made, writing those pages in every program that records, forking or not: a page
 * fault more where nothing else of the program writes them (a trivial program's first
 * symlink: 64.3 against 63.3 faults), none where it does (GNU touch).
 *
 * Registered late, the handlers run after those registered before them: a library
 * whose child handler mutates a file, before ours fixed the child's ids, would record
 * it under the parent's pid.  No library we know of does. */
BBX_HOT static int fork_hooks_done;

void bbx_fork_hooks(void)
{
	if (__builtin_expect(__atomic_load_n(&fork_hooks_done, __ATOMIC_ACQUIRE), 1))
		return;
	static int claim;
	if (__atomic_exchange_n(&claim, 1, __ATOMIC_ACQ_REL)) {
		while (!__atomic_load_n(&fork_hooks_done, __ATOMIC_ACQUIRE))
			__builtin_ia32_pause();
		return;
	}
	pthread_atfork(atfork_prepare, NULL, atfork_child);
	__atomic_store_n(&fork_hooks_done, 1, __ATOMIC_RELEASE);
}

BBX_EXPORT pid_t fork(void)
{
	bbx_fork_hooks();
	return BBX_REAL(fork)();
}

BBX_EXPORT int forkpty(int *amaster, char *name, const struct termios *termp,
		       const struct winsize *winp)
{
	bbx_fork_hooks();
	return BBX_REAL(forkpty)(amaster, name, termp, winp);
}

void bbx_flush_pending(void)
{
	/* Nothing waits unless the run is open (bbx_status, on a page the loader wrote
	 * anyway: a process that never opened it, most of them, reads no other page here
	 * on its way out), nor while a capture of this thread is half-way (run.h). */
	if (!bbx_run_defer_on || bbx_guard || __atomic_load_n(&bbx_status, __ATOMIC_ACQUIRE) ||
	    !bbx_run_deferred())
		return;
	int saved = errno;
	bbx_guard = 1;
	(void)bbx_run_flush(&bbx_run);
	bbx_guard = 0;
	errno = saved;
}

/* exit() and a return from main: the RESULTs still waiting (a process that ends with
 * _exit goes through its wrapper, proc.c). */
__attribute__((destructor)) static void bbx_dtor(void)
{
	bbx_flush_pending();
}

void bbx_init(void)
{
	int expect = 0;
	if (!__atomic_compare_exchange_n(&init_state, &expect, 1, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		/* Another thread is initialising: wait for it.  The initialising thread itself
		 * never gets here, its guard is set and its wrappers go straight to libc. */
		while (__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) != 2)
			__builtin_ia32_pause();
		return;
	}
	int saved = errno, g = bbx_guard;
	bbx_guard = 1;
	choose_run();
	bbx_env_init();
	bbx_guard = g;
	errno = saved;
	__atomic_store_n(&bbx_inited, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&init_state, 2, __ATOMIC_RELEASE);
}

/* The journal library's process-wide settings, as the shim has them: these definitions
 * replace the weak ones of journal/ (which the tools use) at link time, set by the
 * dynamic linker on a page it writes anyway.  Stores from the constructor would cost
 * every process one more page fault, on a page most never touch again (issue 5). */
int bbx_writer_gen_mode = 1; /* fd.c tells the writer when to re-verify its descriptor */
int bbx_run_defer_on = 1;    /* RESULTs go out with the next record (run.h) */
int (*bbx_run_prologue)(struct bbx_run *run, struct bbx_enc *e, uint8_t *buf,
			size_t cap) = bbx_proc_prologue; /* PROC (proc.c) */

const char *bbx_argv_saved;
size_t bbx_argv_len;

/* argv into the arena, right after the strings start-up put there (the same page, for
 * the usual command line: no page fault of its own).  A program may write over its
 * argv before its first record (node's process.title does), and PROC must name what
 * was started, not what the program says it is. */
static void save_argv(int argc, char **argv)
{
	if (argc <= 0 || !argv || bbx_env_used >= sizeof bbx_env_arena)
		return;
	char *dst = bbx_env_arena + bbx_env_used;
	size_t room = sizeof bbx_env_arena - bbx_env_used, n = 0;
	for (int i = 0; i < argc && argv[i]; i++) {
		size_t l = strlen(argv[i]) + 1;
		if (l > room - n)
			return; /* too long: PROC reads /proc/self/cmdline */
		memcpy(dst + n, argv[i], l);
		n += l;
	}
	bbx_env_used += n;
	bbx_argv_saved = dst;
	bbx_argv_len = n;
}

/* glibc passes a library's constructors the program's argc, argv and environment. */
__attribute__((constructor)) static void bbx_ctor(int argc, char **argv, char **envp)
{
	(void)envp;
	if (!__atomic_load_n(&bbx_inited, __ATOMIC_ACQUIRE))
		bbx_init();
	if (!bbx_argv_saved)
		save_argv(argc, argv);
}
