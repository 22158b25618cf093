/* SPDX-License-Identifier: MIT
 *
 * policy.c - the shim's side of the policy (policy/policy.h, bbx-policy(5)): the compiled
 * policy mapped once per process, decisions on resolved targets, DENY records and the
 * one-line explanations on stderr.
 *
 * The compiled policy is J/policy, written by bbx-run before the agent starts; a run
 * without it (bare LD_PRELOAD) is journaled but not restricted.  A policy file that is
 * present but unreadable or damaged puts the process in safe mode: refusing every
 * mutation is the only decision that cannot be wrong (invariant 2's spirit).
 *
 * Decisions are made on what the call will reach, as the kernel resolves it: the real
 * parent directory (".." and symlinks in the directory part resolved by opening it
 * O_PATH), and the final symlink followed when the call follows it.  Reads are decided
 * after the real open/stat, on the identity of what was reached (policy.h, inodes), so
 * no indirection and no race between check and use can get around a deny_read path.
 */
#include "shim.h"
#include "journal/str.h"
#include "policy/policy.h"
#include "journal/redact.h"
#include "journal/hot.h"

#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

/* A policy that refuses every mutation: used when J/policy exists but cannot be used. */
static const struct {
	struct bbx_pol_hdr h;
	char strings[32];
} safe_blob = {
	.h = {.magic = BBX_POL_MAGIC,
	      .version = BBX_POL_VERSION,
	      .size = sizeof safe_blob,
	      .mode = BBX_MODE_SAFE,
	      .explain = 1,
	      .static_action = BBX_ACT_ALLOW,
	      .results_all = 1,
	      .rules_off = sizeof(struct bbx_pol_hdr),
	      .inodes_off = sizeof(struct bbx_pol_hdr),
	      .strings_off = sizeof(struct bbx_pol_hdr),
	      .strings_len = 32,
	      .src = 1},
	.strings = "\0J/policy (damaged)",
};

BBX_HOT static const struct bbx_pol_hdr *pol;
BBX_HOT static int pol_state; /* 0 not mapped, 1 mapping, 2 done */
/* 1 while unknown or when reads must be checked (deny_read paths exist): the read-only
 * fast path of open/stat tests only this. */
int bbx_pol_reads = 1;

BBX_HOT struct bbx_rfilt bbx_rfilt;

/* shim.h, struct bbx_rfilt, from the index's part (policy.h, bbx_pol_read_filter).  Not
 * built (the general path decides every read) when a root is too large to list or the
 * index cannot answer for the words. */
static void rfilt_build(const struct bbx_pol_hdr *p)
{
	const struct bbx_pol_rf *f = bbx_pol_read_filter(p);
	if (!f)
		return;
	memcpy(bbx_rfilt.words, f->words, sizeof bbx_rfilt.words);
	memcpy(bbx_rfilt.ino, f->ino, sizeof bbx_rfilt.ino);
	bbx_rfilt.npfx = f->npfx;
	memcpy(bbx_rfilt.pfx, f->pfx, sizeof bbx_rfilt.pfx);
	/* The mark only when it costs nothing here: learnt otherwise by the first open that
	 * takes the general path (bbx_read_open_exact), not by a stat of the journal
	 * directory in every process that only stats (1,700 system calls in a configure +
	 * make of bbx). */
	if (!__atomic_load_n(&bbx_status, __ATOMIC_ACQUIRE) && bbx_run.jino)
		bbx_rfilt.mark = bbx_mark();
	bbx_rfilt.exact = p->reads_exact != 0;
	__atomic_store_n(&bbx_rfilt.ready, 1, __ATOMIC_RELEASE);
}

/* This thread's verdict on its working directory (bbx_rf_cwd), one word: the cwd
 * generation (capture.h, bbx_cwd_gen) + 1 it was taken in, in the high half; in the
 * low half 0 (not clean) or its clean levels + 1 (bbx_rf_levels).  0: none.  Per
 * thread, for a thread whose working directory is its own; a vfork child shares its
 * parent's memory, this word included (README, Known limitations). */
static __thread uint64_t rf_cwd_eval __attribute__((tls_model("initial-exec")));

int bbx_rf_cwd(unsigned *gen)
{
	if (__atomic_load_n(&bbx_cwd_untrusted, __ATOMIC_RELAXED))
		return 0;
	unsigned g = __atomic_load_n(&bbx_cwd_gen, __ATOMIC_ACQUIRE);
	uint64_t v = rf_cwd_eval;
	if (v >> 32 != (uint64_t)g + 1) {
		/* Once per cwd generation: the system call itself (libc's getcwd would set
		 * errno on failure), whose answer for a directory out of reach of this
		 * process's root begins "(unreachable)", and for a removed one fails. */
		char cwd[PATH_MAX];
		long n = bbx_sys_raw4(SYS_getcwd, (long)cwd, sizeof cwd, 0, 0);
		int lv = n > 1 && cwd[0] == '/' && bbx_path_clean(cwd) ? bbx_rf_levels(cwd) : -1;
		if (lv > (int)BBX_FDID_LVL_MAX)
			lv = (int)BBX_FDID_LVL_MAX;
		if (__atomic_load_n(&bbx_cwd_gen, __ATOMIC_ACQUIRE) != g)
			return 0; /* a chdir meanwhile: the answer may be the old directory's */
		v = ((uint64_t)g + 1) << 32 | (uint32_t)(lv + 1);
		rf_cwd_eval = v;
	}
	*gen = g;
	return (int)(uint32_t)v;
}

void bbx_rf_learn(void)
{
	if (bbx_rf_ready() && bbx_rfilt.exact && !__atomic_load_n(&bbx_rfilt.mark, __ATOMIC_RELAXED))
		__atomic_store_n(&bbx_rfilt.mark, bbx_mark(), __ATOMIC_RELAXED);
}

/* [redact]'s patterns are used where they lie, in the mapped policy, when each kind is
 * a run of consecutive rules (one [redact] section with its env lines together and its
 * argv lines together, as the default policy has them): where each run starts.  Copied
 * (bbx_redact_configure) they cost every process that maps the policy a page of .bss
 * (issue 5: 87 page faults in a zlib ./configure). */
BBX_HOT static uint32_t redact_first[2];

static const char *redact_got(int kind, size_t i)
{
	const struct bbx_pol_hdr *p = pol;
	return bbx_pol_str(p, bbx_pol_rules(p)[redact_first[kind != 0] + i].value);
}

static void redact_load(const struct bbx_pol_hdr *p)
{
	uint32_t n[2] = {0, 0};
	int runs = bbx_pol_redact_runs(p, redact_first, n); /* -1: not indexed (never here) */
	int fp = p->redact_fingerprint != 0;
	if (runs > 0) {
		if (n[0] || n[1] || fp)
			bbx_redact_use(redact_got, n[0], n[1], fp);
		return;
	}
	const char *env[64], *argv[64];
	size_t ne, na;
	bbx_pol_redact_globs(p, env, argv, 64, &ne, &na);
	if (ne || na || fp)
		(void)bbx_redact_configure(env, ne, argv, na, fp);
}

static void pol_load(void)
{
	const struct bbx_pol_hdr *p = NULL;
	if (bbx_journal_dir && *bbx_journal_dir) {
		char path[PATH_MAX];
		int n = bbx_sjoin(path, sizeof path, bbx_journal_dir, BBX_POL_FILE);
		if (n > 0 && (size_t)n < sizeof path) {
			int rc = bbx_pol_map(path, &p);
			if (rc && rc != -ENOENT) {
				static const char msg[] =
					"bbx: the run's compiled policy is unusable: safe mode\n";
				(void)!write(2, msg, sizeof msg - 1);
				p = &safe_blob.h;
			}
		}
	}
	pol = p;
	if (p)
		bbx_pol_index(p); /* mapped until the process ends */
	if (p) {
		bbx_results_all = p->results_all != 0; /* [journal] results */
		redact_load(p); /* [redact]: the policy's patterns beside the built-in ones */
	}
	if (p && p->n_deny_read)
		rfilt_build(p);
	__atomic_store_n(&bbx_pol_reads, p && p->n_deny_read ? 1 : 0, __ATOMIC_RELEASE);
}

/* fork copies the page-table entries of a private file mapping only once the mapping
 * holds an anonymous (copied) page (the kernel's vma_needs_copy()); the policy, mapped
 * read-only, never does, so each fork child faulted in again the policy pages its exec
 * checks read (issue 5, spawn).  Rewriting one byte in place, under a moment of
 * PROT_WRITE, gives the mapping that page: one copy-on-write fault and two mprotects,
 * once per process that forks, then none in any of its children.  The byte keeps its
 * value, so a thread reading it meanwhile sees no change. */
void bbx_pol_share_with_children(void)
{
	const struct bbx_pol_hdr *p = pol;
	if (!p || p == &safe_blob.h || __atomic_load_n(&pol_state, __ATOMIC_ACQUIRE) != 2)
		return;
	void *m = (void *)(uintptr_t)p;
	if (mprotect(m, p->size, PROT_READ | PROT_WRITE) == 0) {
		volatile unsigned char *b = m;
		*b = *b;
		(void)mprotect(m, p->size, PROT_READ);
	}
}

const struct bbx_pol_hdr *bbx_policy(void)
{
	int st = __atomic_load_n(&pol_state, __ATOMIC_ACQUIRE);
	if (__builtin_expect(st == 2, 1))
		return pol;
	int expect = 0;
	if (__atomic_compare_exchange_n(&pol_state, &expect, 1, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		pol_load();
		__atomic_store_n(&pol_state, 2, __ATOMIC_RELEASE);
	} else {
		while (__atomic_load_n(&pol_state, __ATOMIC_ACQUIRE) != 2)
			__builtin_ia32_pause();
	}
	return pol;
}

/* ---- explanations -------------------------------------------------------------- */

/* At most 10 lines per 10 s per process, then one line saying how many were not shown. */
#define EXPLAIN_BURST 10
#define EXPLAIN_WINDOW_NS 10000000000ull
BBX_HOT static unsigned long long explain_t0;
BBX_HOT static unsigned explain_n, explain_dropped;
BBX_HOT static uint64_t explain_last;

static const char *verb(int access)
{
	switch (access) {
	case BBX_ACC_WRITE: return "write to";
	case BBX_ACC_READ: return "read of";
	case BBX_ACC_EXEC: return "exec of";
	case BBX_ACC_CONNECT: return "connection to";
	case BBX_ACC_SYSCALL: return "system call";
	}
	return "access to";
}

/* Section of rules that decide an access when none matched. */
static const char *default_where(int access)
{
	switch (access) {
	case BBX_ACC_WRITE: return "[paths] write";
	case BBX_ACC_READ: return "[paths] deny_read";
	case BBX_ACC_EXEC: return "[exec] static";
	case BBX_ACC_CONNECT: return "[network] allow";
	}
	return "[general]";
}

/* Appends s to buf[*n..cap), escaping control bytes so one refusal is one line. */
static void put(char *buf, size_t *n, size_t cap, const char *s)
{
	for (; s && *s && *n + 4 < cap; s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x20 || c == 0x7f) {
			static const char hex[] = "0123456789abcdef";
			buf[(*n)++] = '\\';
			buf[(*n)++] = 'x';
			buf[(*n)++] = hex[c >> 4];
			buf[(*n)++] = hex[c & 15];
		} else {
			buf[(*n)++] = (char)c;
		}
	}
}

static void explain(const struct bbx_pol_hdr *p, int access, const char *target,
		    const struct bbx_pol_verdict *v)
{
	if (!p->explain)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	unsigned long long now = (unsigned long long)ts.tv_sec * 1000000000ull + ts.tv_nsec;
	char line[1024];
	size_t n = 0;
	if (now - explain_t0 > EXPLAIN_WINDOW_NS) {
		if (explain_dropped) {
			int k = snprintf(line, sizeof line,
					 "bbx: %u more refusals not shown (see bbx-log --denied)\n",
					 explain_dropped);
			if (k > 0)
				(void)!write(2, line, (size_t)k);
		}
		explain_t0 = now;
		explain_n = 0;
		explain_dropped = 0;
	}
	if (explain_n >= EXPLAIN_BURST) {
		explain_dropped++;
		return;
	}
	explain_n++;
	put(line, &n, sizeof line,
	    v->decision != BBX_DEC_AUDIT ? "bbx: refused "
	    : access == BBX_ACC_EXEC && !v->rule && p->mode != BBX_MODE_AUDIT ? "bbx: warning: "
									       : "bbx: audit: would refuse ");
	put(line, &n, sizeof line, verb(access));
	put(line, &n, sizeof line, " ");
	put(line, &n, sizeof line, target);
	put(line, &n, sizeof line, " (");
	if (v->rule) {
		put(line, &n, sizeof line, bbx_pol_str(p, v->rule->loc));
	} else if (access == BBX_ACC_EXEC && *bbx_pol_str(p, p->static_loc)) {
		put(line, &n, sizeof line, bbx_pol_str(p, p->static_loc));
	} else {
		put(line, &n, sizeof line, bbx_pol_str(p, p->src));
		put(line, &n, sizeof line, " ");
		put(line, &n, sizeof line, p->mode == BBX_MODE_SAFE ? "[general] mode = safe"
								     : default_where(access));
	}
	if (v->reason) {
		put(line, &n, sizeof line, ": ");
		put(line, &n, sizeof line, v->reason);
	}
	put(line, &n, sizeof line, ")");
	line[n++] = '\n'; /* put() leaves room for it */
	/* The same refusal again (a shell trying each $PATH entry, a retry loop) is
	 * counted, not repeated. */
	uint64_t h = XXH64(line, n, 0);
	if (h == explain_last) {
		explain_n--;
		explain_dropped++;
		return;
	}
	explain_last = h;
	(void)!write(2, line, n);
}

/* The command line of argv joined by spaces, truncated to cap. */
static void join_argv(char *const argv[], char *out, size_t cap)
{
	size_t n = 0;
	out[0] = 0;
	for (size_t i = 0; argv && argv[i] && n + 1 < cap; i++) {
		if (i)
			out[n++] = ' ';
		size_t l = strnlen(argv[i], cap - n - 1);
		memcpy(out + n, argv[i], l);
		n += l;
	}
	out[n < cap ? n : cap - 1] = 0;
}

/* argv redacted (journal/redact.h) into out, strings back to back; the bytes used (only
 * whole strings: an argv too long for out is cut between elements). */
static size_t redacted_argv(char *const argv[], char *out, size_t cap)
{
	memset(out, 0, cap);
	size_t need = bbx_redact_argv(argv, out, cap);
	if (need <= cap)
		return need;
	size_t n = 0;
	while (n < cap && out[n]) {
		size_t l = strnlen(out + n, cap - n);
		if (n + l >= cap)
			break;
		n += l + 1;
	}
	return n;
}

int bbx_pol_report(const char *op, int access, const char *path, const char *path2,
		   const char *addr, const char *host, char *const argv[],
		   const struct bbx_pol_verdict *v)
{
	const struct bbx_pol_hdr *p = bbx_policy();
	if (!p || v->decision == BBX_DEC_ALLOW)
		return 0;
	if (!bbx_usable()) {
		struct bbx_enc e;
		struct bbx_scratch *s = bbx_scratch();
		bbx_enc_begin(&e, s->rec, sizeof s->rec,
			      v->decision == BBX_DEC_LOG ? BBX_REC_NOTE : BBX_REC_DENY);
		bbx_enc_str(&e, BBX_T_OP, op);
		bbx_enc_u32(&e, BBX_T_ACCESS, (uint32_t)access);
		if (path)
			bbx_enc_str(&e, BBX_T_PATH, path);
		if (path2)
			bbx_enc_str(&e, BBX_T_PATH2, path2);
		if (addr)
			bbx_enc_str(&e, BBX_T_ADDR, addr);
		if (host)
			bbx_enc_str(&e, BBX_T_HOST, host);
		if (argv) {
			char av[4096];
			size_t n = redacted_argv(argv, av, sizeof av); /* secrets never written */
			bbx_enc_bytes(&e, BBX_T_ARGV, av, n);
		}
		bbx_enc_u32(&e, BBX_T_DECISION, (uint32_t)v->decision);
		if (v->klass)
			bbx_enc_u32(&e, BBX_T_CLASS, (uint32_t)v->klass);
		if (v->rule) {
			bbx_enc_str(&e, BBX_T_RULE, bbx_pol_str(p, v->rule->loc));
		} else {
			/* Decided by the absence of a matching rule: name the section. */
			char where[PATH_MAX];
			if (access == BBX_ACC_EXEC && *bbx_pol_str(p, p->static_loc))
				snprintf(where, sizeof where, "%s", bbx_pol_str(p, p->static_loc));
			else
				snprintf(where, sizeof where, "%s %s", bbx_pol_str(p, p->src),
					 p->mode == BBX_MODE_SAFE ? "[general] mode = safe"
								  : default_where(access));
			bbx_enc_str(&e, BBX_T_RULE, where);
		}
		if (v->reason)
			bbx_enc_str(&e, BBX_T_REASON, v->reason);
		bbx_enc_u32(&e, BBX_T_ERR, (uint32_t)v->err);
		(void)bbx_run_emit(&bbx_run, &e, bbx_state_next_seq(bbx_run.st));
	}
	if (v->decision == BBX_DEC_LOG)
		return 0;
	char cmd[512];
	const char *target = path ? path : addr ? addr : host;
	if (!target && argv) {
		/* redacted, then joined: no secret on stderr either */
		char av[4096];
		size_t n = redacted_argv(argv, av, sizeof av), k = 0;
		char *red[64];
		for (size_t i = 0; i < n && k < 63; i += strlen(av + i) + 1)
			red[k++] = av + i;
		red[k] = NULL;
		join_argv(red, cmd, sizeof cmd);
		target = cmd;
	}
	explain(p, access, target ? target : op, v);
	return v->decision == BBX_DEC_DENY ? -(v->err ? v->err : EACCES) : 0;
}

/* ---- mutations ------------------------------------------------------------------ */

/* Character devices every program writes to (a shell's "> /dev/null", a terminal): not
 * part of any tree, nothing to undo, never worth a refusal. */
static int always_writable(const char *p)
{
	static const char *const dev[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random",
					  "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts"};
	/* The process's own /proc entries (oom_score_adj, comm, attr/...): settings of the
	 * process itself, not files of any tree. */
	if (p[0] == '/' && p[1] == 'p' && !strncmp(p, "/proc/", 6)) {
		char own[32];
		int n = snprintf(own, sizeof own, "/proc/%d", (int)getpid());
		return bbx_path_under(p, "/proc/self", 10) ||
		       bbx_path_under(p, "/proc/thread-self", 17) ||
		       (n > 0 && bbx_path_under(p, own, (size_t)n));
	}
	if (p[0] != '/' || p[1] != 'd' || strncmp(p, "/dev/", 5))
		return 0;
	/* The first byte of the device's name first: a workspace in /dev/shm (the
	 * benchmarks' tmpfs) was compared with all eight on every call. */
	for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
		if (p[5] == dev[i][5] && bbx_path_under(p, dev[i], strlen(dev[i])))
			return 1;
	return 0;
}

static int canonical(const char *path);

/* The directory dir opened O_PATH, its name as the kernel knows it in out (PATH_MAX):
 * with openat2(RESOLVE_NO_SYMLINKS) when the words are canonical (canon: the caller's
 * canonical(dir); then they are the name, and no readlink of /proc/self/fd is needed),
 * else open and readlink.  Returns the descriptor, or -1. */
static int open_dir_named(char *dir, char *out, int canon)
{
	if (canon) {
		struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				       .resolve = RESOLVE_NO_SYMLINKS};
		int fd = (int)BBX_REAL(syscall)(SYS_openat2, AT_FDCWD, dir, &how, sizeof how,
						bbx_mark());
		if (fd >= 0) {
			strcpy(out, dir);
			return fd;
		}
		/* A missing component or a non-directory met before any symlink (a symlink
		 * would have answered ELOOP first): the plain open walks the same components
		 * and fails the same way.  (git creates in .git/objects/xx before mkdir.) */
		if (errno == ENOENT || errno == ENOTDIR)
			return -1;
	}
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0 && bbx_path_fd(fd, out, PATH_MAX)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The common case first: the parent directory opened (one path walk, no symlink on the
 * way when the words are canonical), then the name looked up relative to it.  When the
 * name is absent or not a symlink (or the call does not follow one), that is the whole
 * answer: the call lands on parent + name.  What was learnt goes into the capture's stat
 * memo (capture.h), which would otherwise walk the whole path twice more (the target's
 * lstat, the parent's stat for DIRMETA).  Returns 1 when it answered, -1 when the
 * parent does not exist (ENOENT, ENOTDIR: the call will fail by itself), 0 to take the
 * general route (a final symlink to follow, "." or "..", a refusal). */
static int resolve_parent_first(const char *cur, int follow, char *out, char *tmp, int *hold_fd,
				char *hold_name)
{
	/* BBX_POL_NEWNAME: neither the decision nor the capture looks at the name itself. */
	int look = follow != BBX_POL_NEWNAME;
	follow = follow == 1;
	const char *slash = strrchr(cur, '/');
	if (!slash)
		return 0;
	const char *last = slash + 1;
	size_t ll = strlen(last);
	if (!ll || ll > NAME_MAX || !strcmp(last, ".") || !strcmp(last, ".."))
		return 0;
	size_t pl = slash == cur ? 1 : (size_t)(slash - cur);
	memcpy(tmp, cur, pl);
	tmp[pl] = 0;
	struct stat sb;
	int canon = canonical(tmp);
	/* A directory this thread proved before, still the same and no rename or rmdir in
	 * the run since (journal/capture.h, bbx_dname): its lstat (which the capture needs
	 * anyway) stands for the openat2, fstat and close.  The open family then opens
	 * the canonical words decided on, by openat2(RESOLVE_NO_SYMLINKS) (BBX_POL_BYPATH,
	 * shim.h) instead of relative to a descriptor: a create in a directory written to
	 * before costs two system calls less (tar -x, npm, issue 5). */
	if (canon && (!hold_fd || bbx_pol_hold < 2) && bbx_dname_known(tmp, &sb)) {
		if (look) {
			int r = bbx_k_lstat(cur, &sb);
			int e = r < 0 ? errno : 0;
			if (follow &&
			    ((r == 0 && S_ISLNK(sb.st_mode)) || (r < 0 && e != ENOENT)))
				return 0;
		}
		strcpy(out, cur);
		if (hold_fd) {
			*hold_fd = BBX_POL_BYPATH;
			strcpy(hold_name, cur);
		}
		return 1;
	}
	if (bbx_stat_memo_get(tmp, 1, &sb) == -1 && (errno == ENOENT || errno == ENOTDIR)) {
		/* Found missing in this epoch already (journal/path.c, cwd_kept). */
		bbx_stat_memo_put(cur, 0, -1, errno, NULL);
		return -1;
	}
	uint64_t gen = bbx_dname_gen();
	int fd = open_dir_named(tmp, out, canon);
	if (fd < 0) {
		/* No such parent: the call fails by itself, with or without a symlink to
		 * follow at the end; the general route would only open it again.  The
		 * capture's lstat of the name and stat of the parent (DIRMETA) would walk to
		 * the same missing component and fail the same way: the memo answers them. */
		int e = errno;
		if (e != ENOENT && e != ENOTDIR)
			return 0;
		bbx_stat_memo_put(tmp, 1, -1, e, NULL);
		bbx_stat_memo_put(cur, 0, -1, e, NULL);
		errno = e;
		return -1;
	}
	size_t ol = strlen(out);
	if (ol + 1 + ll >= PATH_MAX) {
		close(fd);
		return 0;
	}
	/* The caller may just have asked (mkdir, link: does the name exist?). */
	int r = !look ? -3 : strcmp(out, tmp) ? -2 : bbx_stat_memo_get(cur, 0, &sb);
	if (r == -2)
		r = (int)BBX_REAL(syscall)(SYS_newfstatat, fd, last, &sb, AT_SYMLINK_NOFOLLOW);
	int e = r < 0 ? errno : 0;
	if (follow && ((r == 0 && S_ISLNK(sb.st_mode)) || (r < 0 && e != ENOENT))) {
		close(fd);
		return 0;
	}
	struct stat pb;
	if (BBX_REAL(syscall)(SYS_fstat, fd, &pb) == 0) {
		/* follow 2: also the kernel's own name for it, in this epoch (the words
		 * were opened without a symlink on the way): a second name in the same
		 * directory (rename, link) needs no resolving (parent_resolved). */
		bbx_stat_memo_put(out, strcmp(out, tmp) ? 1 : 2, 0, 0, &pb);
		bbx_dname_put(out, &pb, gen); /* out: the kernel's name, either way */
	}
	if (ol > 1)
		out[ol++] = '/';
	memcpy(out + ol, last, ll + 1);
	if (look)
		bbx_stat_memo_put(out, 0, r, e, &sb);
	if (hold_fd) {
		*hold_fd = fd;
		memcpy(hold_name, last, ll + 1);
	} else {
		close(fd);
	}
	return 1;
}

/* Where a call naming path really lands: the parent directory as the kernel resolves
 * it, plus the last component; with follow, a final symlink (dangling ones included:
 * O_CREAT through them creates the target) is followed.  out and tmp hold PATH_MAX.
 * With hold (the open family), the O_PATH descriptor decided on is kept in *hold_fd
 * and s->pol names what to open relative to it ("" = the descriptor itself), so the
 * call reaches exactly what was decided (no check-then-use race on the path). */
static int resolve_target(const char *path, int follow, char *out, char *tmp, int *hold_fd,
			  char *hold_name)
{
	char cur[PATH_MAX];
	size_t l = strnlen(path, PATH_MAX);
	if (l >= PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(cur, path, l + 1);
	int pf = resolve_parent_first(cur, follow, out, tmp, hold_fd, hold_name);
	if (pf > 0)
		return 0;
	if (pf < 0) {
		memcpy(out, cur, l + 1); /* no such parent: decide on the words */
		return 0;
	}
	if (follow == 1) {
		int fd = open(cur, O_PATH | O_CLOEXEC);
		if (fd >= 0) {
			int rc = bbx_path_fd(fd, out, PATH_MAX);
			if (!rc && hold_fd) {
				*hold_fd = fd;
				hold_name[0] = 0;
				return 0;
			}
			close(fd);
			if (!rc)
				return 0;
		}
		for (int hops = 0; hops < 40; hops++) {
			ssize_t n = readlink(cur, tmp, PATH_MAX - 1);
			if (n < 0)
				break;
			tmp[n] = 0;
			if (tmp[0] == '/') {
				memcpy(cur, tmp, (size_t)n + 1);
			} else {
				char *slash = strrchr(cur, '/');
				size_t dl = (size_t)(slash - cur) + 1;
				if (dl + (size_t)n >= PATH_MAX)
					return -ENAMETOOLONG;
				memcpy(cur + dl, tmp, (size_t)n + 1);
			}
		}
	}
	char *slash = strrchr(cur, '/');
	if (!slash)
		return -EINVAL;
	const char *last = slash + 1;
	size_t pl = slash == cur ? 1 : (size_t)(slash - cur);
	memcpy(tmp, cur, pl);
	tmp[pl] = 0;
	int fd = open_dir_named(tmp, out, canonical(tmp));
	if (fd < 0) {
		/* No such parent: the call fails by itself; decide on the words. */
		memcpy(out, cur, strlen(cur) + 1);
		return 0;
	}
	if (hold_fd && *last && strlen(last) <= NAME_MAX) {
		*hold_fd = fd;
		strcpy(hold_name, last);
	} else {
		close(fd);
	}
	if (!*last || !strcmp(last, ".") || !strcmp(last, ".."))
		return 0;
	size_t ol = strlen(out);
	if (ol + 1 + strlen(last) >= PATH_MAX)
		return -ENAMETOOLONG;
	if (ol > 1)
		out[ol++] = '/';
	strcpy(out + ol, last);
	return 0;
}

__thread int bbx_pol_fd __attribute__((tls_model("initial-exec"))) = -1;
__thread int bbx_pol_hold __attribute__((tls_model("initial-exec")));

/* Is path's directory part already the kernel's own name for it in this call, so that
 * nothing is left to resolve?  Either the working directory as getcwd named it
 * (bbx_path_cwd's memo: "x", "./x", both names of a rename there), or a directory this
 * call opened by exactly these words without a symlink on the way (resolve_parent_first,
 * memo follow 2: the second name of a rename or link in one directory - sed -i, git's
 * lock files and objects).  Only for a path ending in a real name. */
static int parent_resolved(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash || !slash[1] || !strcmp(slash + 1, ".") || !strcmp(slash + 1, ".."))
		return 0;
	size_t dl = slash == path ? 1 : (size_t)(slash - path);
	struct bbx_scratch *s = bbx_scratch();
	if (bbx_stat_epoch && s->cwd_epoch == bbx_stat_epoch && strlen(s->cwd) == dl &&
	    !strncmp(path, s->cwd, dl))
		return 1;
	return bbx_stat_memo_kname(path, dl);
}

/* The write-decision cache: tar -x, rm -r, npm and git decide one entry after another
 * in the same directory, and each decision walked the three [paths] sections (~600
 * instructions a call, callgrind of rm -r; policy/match.c, hx_under).  The last four
 * directories decided in are kept, each with whether every entry of it is allowed (one
 * allowed entry stands for all when no root lies directly in it: bbx_pol_dir_uniform),
 * in the thread's table of proofs (journal/capture.h, struct bbx_dtab), which a
 * process mapping it only for this does so once it has been busy (WCACHE_AFTER): a
 * process that creates one file pays no mapping for it.  The words compared are res, the name
 * the decision itself is taken on, so a hit decides exactly what bbx_pol_write would. */
#define WCACHE_AFTER 32 /* the stat memo's entries put so far: 2-4 a mutation */

/* dl: the length of res's directory part ("/" is 1), or 0 when res's last component
 * is not an entry name (empty, "." or ".."): then the cache is not used. */
static size_t wcache_dl(const char *res)
{
	const char *sl = strrchr(res, '/');
	if (res[0] != '/' || !sl || !sl[1] || !strcmp(sl + 1, ".") || !strcmp(sl + 1, ".."))
		return 0;
	return sl == res ? 1 : (size_t)(sl - res);
}

/* 1: allowed by the cache; 0: decide (*known: the directory is cached as one whose
 * entries are decided one by one, so wcache_put need not scan the roots again). */
static int wcache_hit(const struct bbx_scratch *s, const struct bbx_pol_hdr *p,
		      const char *res, size_t dl, int *known)
{
	const struct bbx_dtab *t = s->dtab;
	*known = 0;
	if (!t || !dl || t->wpol != p)
		return 0;
	unsigned seq = __atomic_load_n(&t->wseq, __ATOMIC_RELAXED);
	if (seq & 1)
		return 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	int found = -1;
	for (int i = 0; i < BBX_WCACHE_N && found < 0; i++)
		if (t->w[i].len == dl && !memcmp(t->w[i].dir, res, dl))
			found = i;
	int ok = found >= 0 && t->w[found].ok;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (found < 0 || __atomic_load_n(&t->wseq, __ATOMIC_RELAXED) != seq)
		return 0;
	*known = 1;
	return ok;
}

static void wcache_put(struct bbx_scratch *s, const struct bbx_pol_hdr *p, const char *res,
		       size_t dl)
{
	if (!dl || dl >= sizeof s->dtab->w[0].dir || (!s->dtab && s->memo_next < WCACHE_AFTER))
		return;
	struct bbx_dtab *t = bbx_dtab_map(s);
	if (!t)
		return;
	int ok = bbx_pol_dir_uniform(p, res, dl);
	/* Odd: a put is under way in the context this signal handler interrupted.  Writing
	 * now would make the count even over that half-written entry, and the interrupted
	 * put would then leave it odd for good: this one writes nothing. */
	unsigned seq = __atomic_load_n(&t->wseq, __ATOMIC_RELAXED);
	if (seq & 1)
		return;
	__atomic_store_n(&t->wseq, seq + 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (t->wpol != p) {
		for (int i = 0; i < BBX_WCACHE_N; i++)
			t->w[i].len = 0;
		t->wpol = p;
	}
	struct bbx_wdir *w = &t->w[t->wnext++ % BBX_WCACHE_N];
	memcpy(w->dir, res, dl);
	w->len = (unsigned)dl;
	w->ok = (unsigned)ok;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&t->wseq, seq + 2, __ATOMIC_RELAXED);
}

static int write_hook(const char *op, const char *path, int fd, int follow)
{
	const struct bbx_pol_hdr *p = bbx_policy();
	if (!p)
		return 0;
	struct bbx_scratch *s = bbx_scratch();
	char *res = s->lnk;
	s->lnk_fd1 = 0; /* lnk is about to hold another name (capture.c, fd_name_after_policy) */
	int nofollow = !follow || follow == BBX_POL_NEWNAME;
	if (path && nofollow &&
	    (path == bbx_path_parent_real || parent_resolved(path)) &&
	    strlen(path) < PATH_MAX) {
		/* Its directory is already the kernel's name (bbx_path_abs): nothing to
		 * resolve, and the call acts on the name itself. */
		strcpy(res, path);
	} else if (path) {
		int hold = bbx_pol_hold && bbx_pol_fd == -1;
		int rc = resolve_target(path, follow, res, s->tmp, hold ? &bbx_pol_fd : NULL,
					s->pol);
		if (rc)
			return rc;
	} else if (bbx_path_fd(fd, res, PATH_MAX)) {
		return 0; /* a pipe, socket or anonymous file: not part of any tree */
	} else {
		s->lnk_fd1 = fd + 1; /* the capture's name of it in this call (capture.c) */
	}
	if (always_writable(res))
		return 0;
	struct bbx_pol_verdict v;
	if (bbx_journal_dir && *bbx_journal_dir &&
	    bbx_path_under(res, bbx_journal_dir, strlen(bbx_journal_dir))) {
		/* Always protected (capture.c also refuses it by identity, hard links and
		 * bind mounts included); here it is recorded and explained too. */
		v = (struct bbx_pol_verdict){.decision = BBX_DEC_DENY, .err = EACCES,
					     .reason = "the run's own journal is never writable"};
		return bbx_pol_report(op, BBX_ACC_WRITE, path ? path : res, NULL, NULL, NULL, NULL,
				      &v);
	}
	size_t dl = wcache_dl(res);
	int known;
	if (wcache_hit(s, p, res, dl, &known))
		return 0;
	bbx_pol_write(p, res, &v);
	if (v.decision == BBX_DEC_ALLOW) {
		if (!known)
			wcache_put(s, p, res, dl);
		return 0;
	}
	int rc = bbx_pol_report(op, BBX_ACC_WRITE, path ? path : res,
			      path && strcmp(path, res) ? res : NULL, NULL, NULL, NULL, &v);
	if (rc && bbx_pol_fd != -1) {
		if (bbx_pol_fd >= 0)
			close(bbx_pol_fd);
		bbx_pol_fd = -1;
	}
	return rc;
}

size_t bbx_pol_take_room(void)
{
	return bbx_pol_fd == -1 ? 1 : strnlen(bbx_scratch()->pol, PATH_MAX - 1) + 1;
}

int bbx_pol_take(char *name, size_t cap)
{
	int fd = bbx_pol_fd;
	bbx_pol_fd = -1;
	bbx_pol_hold = 0;
	if (cap)
		name[0] = 0;
	if (fd != -1 && cap) {
		const char *w = bbx_scratch()->pol;
		size_t l = strnlen(w, cap - 1);
		memcpy(name, w, l);
		name[l] = 0;
	}
	return fd;
}

/* path opened relative to dirfd without following a symlink on the way: openat2's
 * RESOLVE_NO_SYMLINKS (try2), with the mark that lets it through bbx-run's seccomp
 * filter (tools/sandbox.c), so that the descriptor keeps the flags the program asked
 * for.  openat2 refuses what open(2) would ignore (unknown flag bits, a mode without
 * O_CREAT): then, where there is no openat2, or without try2, the last component
 * alone is not followed (O_NOFOLLOW, which fcntl's F_GETFL then reports). */
static int open_nofollow(int dirfd, const char *path, int flags, mode_t mode, int try2)
{
	if (try2) {
		int creates = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
		struct open_how how = {.flags = (uint64_t)(unsigned)flags,
				       .mode = creates ? (uint64_t)(mode & 07777) : 0,
				       .resolve = RESOLVE_NO_SYMLINKS};
		long r = BBX_REAL(syscall)(SYS_openat2, dirfd, path, &how, sizeof how, bbx_mark());
		if (r >= 0 || (errno != EINVAL && errno != E2BIG && errno != ENOSYS))
			return (int)r;
	}
	if (!(flags & O_EXCL))
		flags |= O_NOFOLLOW;
	return bbx_rdtrunc(flags) ? bbx_marked_openat(dirfd, path, flags, mode)
				  : BBX_REAL(openat)(dirfd, path, flags, mode);
}

int bbx_pol_openat(int fd, const char *name, int flags, mode_t mode)
{
	int r;
	/* BBX_POL_BYPATH: the canonical words decided on, walked without following any
	 * symlink (shim.h); without openat2, the check-then-use window of the calls that
	 * act on a path (unlink, rename), which the proof just made keeps to microseconds. */
	if (fd == BBX_POL_BYPATH)
		return open_nofollow(AT_FDCWD, name, flags, mode, 1);
	if (name[0]) {
		/* The name was found absent or not a symlink when the decision was taken (a
		 * symlink is decided on through its target, held as the object itself): one
		 * put there since is not followed out of what was decided.  (O_EXCL never
		 * follows anyway.)  openat2 where the name is one component (fcntl's F_GETFL
		 * reported O_NOFOLLOW on every file a program created under bbx). */
		r = open_nofollow(fd, name, flags, mode, !(flags & O_EXCL) && !strchr(name, '/'));
	} else {
		char self[40];
		bbx_fd_path(self, sizeof self, fd);
		r = bbx_rdtrunc(flags) ? bbx_marked_openat(AT_FDCWD, self, flags, mode)
				       : BBX_REAL(open)(self, flags, mode);
	}
	int e = errno;
	close(fd);
	errno = e;
	return r;
}

/* The capture's policy hook (journal/capture.h): this definition replaces the weak one
 * there, set at load time rather than by a constructor's store. */
int (*bbx_cap_policy)(const char *op, const char *path, int fd, int follow) = write_hook;

/* ---- reads ---------------------------------------------------------------------- */

static int has_partial = -1;

int bbx_read_pre(const char *op, const char *path)
{
	const struct bbx_pol_hdr *p = bbx_policy();
	if (!p || !p->n_deny_read || !path || path[0] != '/')
		return 0; /* relative paths: decided after the call, by identity */
	struct bbx_pol_verdict v;
	bbx_pol_read(p, path, &v);
	/* With "..", what the words name may not be what the call reaches: decided after
	 * the call too.  (Looked for only when the words would refuse: most reads are of
	 * paths no deny_read root starts like, answered at their first word.) */
	if (v.decision == BBX_DEC_ALLOW || strstr(path, "/.."))
		return 0;
	return bbx_pol_report(op, BBX_ACC_READ, path, NULL, NULL, NULL, NULL, &v);
}

/* Absolute, without "//", "." or ".." components: the form the compiled roots have, so a
 * prefix compare is the whole lexical decision. */
static int canonical(const char *path)
{
	return path[0] == '/' && bbx_path_clean(path);
}

int bbx_read_open_exact(const char *path, int flags, int saved, int *fd)
{
	const struct bbx_pol_hdr *p = bbx_policy();
	if (!p || !p->n_deny_read || !p->reads_exact || !path || !canonical(path))
		return 0;
	struct bbx_pol_verdict v;
	bbx_pol_read(p, path, &v);
	if (v.decision != BBX_DEC_ALLOW)
		return 0; /* the general path refuses and explains */
	struct open_how how = {.flags = (uint64_t)(unsigned)flags,
			       .resolve = RESOLVE_NO_SYMLINKS};
	long mark = bbx_mark(); /* guard held: its stat of the journal directory is ours */
	__atomic_store_n(&bbx_rfilt.mark, mark, __ATOMIC_RELAXED); /* for bbx_rf_open */
	unsigned gen = bbx_call_begin(saved);
	long r = BBX_REAL(syscall)(SYS_openat2, AT_FDCWD, path, &how, sizeof how, mark);
	int e = errno;
	(void)bbx_call_end(gen);
	if (r < 0 && bbx_openat2_refused(e))
		return 0; /* a symlink on the way, or flags or a kernel openat2 does not take */
	bbx_leave(r < 0 ? e : saved);
	*fd = (int)r;
	return 1;
}

/* After the call reached an object: decided by its identity (and, for deny_read roots
 * too large to list, by the kernel's name for fd). */
int bbx_read_post(const char *op, const char *path, int fd, const struct stat *sb)
{
	const struct bbx_pol_hdr *p = bbx_policy();
	if (!p || !p->n_deny_read)
		return 0;
	struct stat own;
	int by_fd = !sb;
	if (by_fd) {
		if (fstat(fd, &own) < 0)
			return 0;
		sb = &own;
	}
	struct bbx_pol_verdict v;
	if (bbx_pol_read_inode(p, sb->st_dev, sb->st_ino, &v))
		return bbx_pol_report(op, BBX_ACC_READ, path, NULL, NULL, NULL, NULL, &v);
	if (has_partial < 0)
		has_partial = bbx_pol_partial_roots(p);
	if (has_partial && fd >= 0) {
		char real[PATH_MAX];
		if (!bbx_path_fd(fd, real, sizeof real)) {
			bbx_pol_read(p, real, &v);
			if (v.decision != BBX_DEC_ALLOW)
				return bbx_pol_report(op, BBX_ACC_READ, path, real, NULL, NULL,
						      NULL, &v);
		}
	}
	/* A directory's descriptor that passed: its fdopendir needs no second check
	 * (capture.h, BBX_FDID_READ). */
	if (by_fd && S_ISDIR(own.st_mode))
		bbx_fdid_set(fd, (uint64_t)own.st_dev | BBX_FDID_READ, own.st_ino);
	return 0;
}
