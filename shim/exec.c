/* SPDX-License-Identifier: MIT
 *
 * exec.c - the exec family, posix_spawn, system and popen.
 *
 * Each records an EXEC (program, argv, cwd; pid and parent in the header) before the
 * new program starts, hands it an environment that keeps it journaled (env.c), and
 * records a RESULT when the exec fails.  glibc's execvp, system and popen call its own
 * internals without the PLT, so each needs its own wrapper.  Safe in vfork children:
 * the guard is released before the real exec (a vfork child shares our memory, and an
 * exec that succeeds never returns to release it), and nothing here allocates.
 */
#include "shim.h"
#include "journal/str.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/xattr.h>

#include "policy/policy.h"
#include "journal/sys.h"

#include <stddef.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

extern char **environ;

/* strchr(s, '/'), by hand: libc's strchr is a page of its own that a fork child on its
 * way to exec would otherwise fault in for this alone (issue 5, spawn cost). */
static int has_slash(const char *s)
{
	for (; *s; s++)
		if (*s == '/')
			return 1;
	return 0;
}

static const char *last_slash(const char *s)
{
	const char *r = NULL;
	for (; *s; s++)
		if (*s == '/')
			r = s;
	return r;
}

/* ---- policy (bbx-policy(5), [exec] and deny_read) ---------------------------------- */

/* Room for the name of the file an exec of exe will run: none when exe names it itself
 * (it has a '/'), else the longest directory of $PATH, a '/', exe and its NUL (at most
 * PATH_MAX).  Sized to what is needed, not PATH_MAX always: this buffer is on the stack
 * of a fork child on its way to exec, and every stack page it reaches below its parent's
 * is one more page fault (issue 5, spawn cost). */
static size_t program_room(const char *exe, const char **pathp)
{
	*pathp = NULL;
	if (has_slash(exe))
		return 1;
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/bin:/usr/bin";
	*pathp = path;
	size_t longest = 0, el = strlen(exe);
	for (const char *d = path;; d++) {
		const char *e = strchrnul(d, ':');
		if ((size_t)(e - d) > longest)
			longest = (size_t)(e - d);
		if (!*e)
			break;
		d = e;
	}
	return longest + el + 2 < PATH_MAX ? longest + el + 2 : PATH_MAX;
}

/* The file an exec of exe will run: exe itself when it has a '/', else the first
 * executable match on path (execvp's search), made in out.  NULL if there is none.
 * from: the directory the search is made from, when it is not this process's working
 * directory (posix_spawnp after a chdir action: a relative entry of path, or an empty
 * one, names a directory under from); NULL for the working directory. */
static const char *find_program(const char *exe, const char *path, char *out, size_t cap,
				const char *from)
{
	if (!path)
		return exe;
	for (const char *d = path;; d++) {
		const char *e = strchrnul(d, ':');
		size_t n = 0;
		if (from && *d != '/')
			n = bbx_str_put(out, cap, bbx_str_put(out, cap, 0, from, strlen(from)), "/", 1);
		n = bbx_str_put(out, cap, n, d, (size_t)(e - d));
		n = e == d ? n : bbx_str_put(out, cap, n, "/", 1);
		n = bbx_str_put(out, cap, n, exe, strlen(exe));
		if (bbx_str_end(out, cap, n) > 0 && n < cap && access(out, X_OK) == 0)
			return out;
		if (!*e)
			break;
		d = e;
	}
	return NULL;
}

/* 1 when $PATH (as program_room found it) has an entry that is not absolute: "",
 * ".", "bin". */
static int path_has_relative(const char *path)
{
	for (const char *d = path;; d++) {
		if (*d != '/')
			return 1;
		const char *e = strchrnul(d, ':');
		if (!*e)
			return 0;
		d = e;
	}
}

static const char *const why_text[] = {
	NULL, "setuid/setgid program: the shim cannot enter it",
	"program with file capabilities: the shim cannot enter it",
	"statically linked program: the shim cannot enter it"};

/* What unenterable() found for programs already started, by identity and change time:
 * a build or an agent's tool loop starts the same programs again and again, so the ELF
 * header and the capability xattr are read once (5 system calls saved per exec).  The
 * table is the run's (state.h: every fork child finds what its siblings found), else
 * this process's own.  An entry is valid when its tag is the hash of its fields
 * (written before the tag, read after it), so writers racing on a slot, in threads or
 * processes, only ever cost a miss. */
#define SEEN_LOCAL 16
static struct bbx_state_prog seen_local[SEEN_LOCAL];

static uint64_t seen_tag(const struct bbx_state_prog *e)
{
	return XXH64(e, offsetof(struct bbx_state_prog, tag), 0x62627865) | 1;
}

static const char *unenterable_read(const char *file, int *code);

/* A program the shim will not be loaded into: statically linked (no PT_INTERP), or
 * setuid/setgid or with file capabilities (the loader drops LD_PRELOAD for those).
 * sb: the file's stat (the caller's, or NULL to take it here). */
static const char *unenterable(const char *file, const struct stat *given)
{
	struct stat own;
	const struct stat *sbp = given;
	if (!sbp) {
		if (bbx_sys_fstatat(AT_FDCWD, file, &own, 0)) /* not libc: sys.h */
			return NULL;
		sbp = &own;
	}
	const struct stat sb = *sbp;
	if (!S_ISREG(sb.st_mode))
		return NULL;
	if (sb.st_mode & (S_ISUID | S_ISGID))
		return why_text[1];
	struct bbx_state_prog k = {.dev = sb.st_dev, .ino = sb.st_ino,
			      .mtime = (uint64_t)sb.st_mtim.tv_sec * 1000000000u + sb.st_mtim.tv_nsec,
			      .ctime = (uint64_t)sb.st_ctim.tv_sec * 1000000000u + sb.st_ctim.tv_nsec};
	struct bbx_state_prog *tab = bbx_status == 0 && bbx_run.st ? bbx_state_progs(bbx_run.st) : NULL;
	size_t n = tab ? bbx_state_progs_n(bbx_run.st) : SEEN_LOCAL;
	if (!tab)
		tab = seen_local;
	struct bbx_state_prog *e = &tab[(k.ino ^ k.dev) % n];
	uint64_t tag = __atomic_load_n(&e->tag, __ATOMIC_ACQUIRE);
	struct bbx_state_prog c = *e;
	if (tag && c.tag == tag && seen_tag(&c) == tag && c.dev == k.dev && c.ino == k.ino &&
	    c.mtime == k.mtime && c.ctime == k.ctime && c.why < 4)
		return why_text[c.why];
	int code = 0;
	const char *why = unenterable_read(file, &code);
	k.why = (uint64_t)code;
	__atomic_store_n(&e->tag, 0, __ATOMIC_RELEASE);
	e->dev = k.dev, e->ino = k.ino, e->mtime = k.mtime, e->ctime = k.ctime, e->why = k.why;
	__atomic_store_n(&e->tag, seen_tag(&k), __ATOMIC_RELEASE);
	return why;
}

static const char *unenterable_read(const char *file, int *code)
{
	if (getxattr(file, "security.capability", NULL, 0) > 0) {
		*code = 2;
		return why_text[2];
	}
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	const char *why = NULL;
	unsigned char eh[64];
	if (pread(fd, eh, sizeof eh, 0) == (ssize_t)sizeof eh && !memcmp(eh, "\177ELF", 4) &&
	    eh[4] == 2 /* ELFCLASS64 */) {
		uint64_t phoff;
		uint16_t phentsize, phnum;
		memcpy(&phoff, eh + 32, 8);
		memcpy(&phentsize, eh + 54, 2);
		memcpy(&phnum, eh + 56, 2);
		unsigned char ph[56 * 64];
		size_t want = (size_t)phentsize * phnum;
		int interp = 0;
		if (phentsize >= 4 && want <= sizeof ph &&
		    pread(fd, ph, want, (off_t)phoff) == (ssize_t)want) {
			for (unsigned i = 0; i < phnum; i++) {
				uint32_t type;
				memcpy(&type, ph + (size_t)i * phentsize, 4);
				interp |= type == 3; /* PT_INTERP */
			}
			if (!interp) {
				why = why_text[3];
				*code = 3;
			}
		}
	}
	close(fd);
	return why;
}

static void join(char *const argv[], size_t from, char *out, size_t cap, int base0)
{
	size_t n = 0;
	for (size_t i = from; argv && argv[i] && n + 1 < cap; i++) {
		const char *a = argv[i], *sl = i == from && base0 ? last_slash(a) : NULL;
		if (sl)
			a = sl + 1;
		if (i > from)
			out[n++] = ' ';
		size_t l = strnlen(a, cap - n - 1);
		memcpy(out + n, a, l);
		n += l;
	}
	out[n] = 0;
}

/* The room join(argv, 0, ...) needs, at most 4096 (the rules see the first 4 KiB). */
static size_t join_room(char *const argv[])
{
	size_t n = 1;
	for (size_t i = 0; argv[i] && n < 4096; i++)
		n += strlen(argv[i]) + 1;
	return n < 4096 ? n : 4096;
}

/* exec_policy's parts with buffers of their own, each a frame of its own and each
 * buffer of the size its contents need, not PATH_MAX: a fork child on its way to exec
 * runs the policy and the record on the stack pages its parent's frames had written
 * (copy-on-write), and every page reached below those is one more page fault (issue
 * 5).  Each returns 1 when the decision is made (*rc: 0 or -errno), else 0. */

/* deny_read on the program file by its absolute name, made in room bytes: the name's
 * own length for an absolute name (bbx_path_abs then drops "." and empty components;
 * if the kernel's help makes it longer, again with PATH_MAX). */
__attribute__((noinline)) static int exec_deny_name(const struct bbx_pol_hdr *p, const char *op,
						    const char *file, char *const argv[],
						    size_t room, int *rc)
{
	struct bbx_pol_verdict v;
	char abs[room];
	int r = bbx_path_abs(AT_FDCWD, file, abs, room);
	if (r == -ENAMETOOLONG && room < PATH_MAX)
		return exec_deny_name(p, op, file, argv, PATH_MAX, rc);
	if (r)
		return 0;
	bbx_pol_read(p, abs, &v);
	if (v.decision == BBX_DEC_ALLOW)
		return 0;
	*rc = bbx_pol_report(op, BBX_ACC_EXEC, abs, NULL, NULL, NULL, argv, &v);
	return 1;
}

/* deny_read on the program file: by its absolute name, then by identity (sb). */
static int exec_deny_read(const struct bbx_pol_hdr *p, const char *op, const char *file,
			  char *const argv[], struct stat *sb, int *have_sb, int *rc)
{
	size_t room = file[0] == '/' ? strlen(file) + 2 : PATH_MAX;
	if (exec_deny_name(p, op, file, argv, room < PATH_MAX ? room : PATH_MAX, rc))
		return 1;
	struct bbx_pol_verdict v;
	*have_sb = bbx_sys_fstatat(AT_FDCWD, file, sb, 0) == 0;
	if (*have_sb && bbx_pol_read_inode(p, sb->st_dev, sb->st_ino, &v)) {
		*rc = bbx_pol_report(op, BBX_ACC_EXEC, file, NULL, NULL, NULL, argv, &v);
		return 1;
	}
	return 0;
}

/* The [exec] rules on the command line: as given, with argv[0]'s directory dropped, and
 * the script of "sh -c SCRIPT". */
__attribute__((noinline)) static int exec_rules(const struct bbx_pol_hdr *p, const char *op,
						char *const argv[], int *rc)
{
	struct bbx_pol_verdict v;
	size_t room = join_room(argv);
	char cmd[room];
	/* Each form is a suffix of the one before, unless the line was cut at 4 KiB: then
	 * each form computes its own pairs (a shorter form reaches further into argv). */
	struct bbx_pol_pairs pp;
	pp.ready = 0;
	const char *forms = "gbs"; /* given, basename, shell script */
	for (const char *f = forms; *f; f++) {
		if (*f == 'b' && !has_slash(argv[0]))
			continue;
		if (*f == 's') {
			const char *sl = last_slash(argv[0]), *b = sl ? sl + 1 : argv[0];
			if (!argv[1] || !argv[2] || strcmp(argv[1], "-c") ||
			    (strcmp(b, "sh") && strcmp(b, "bash") && strcmp(b, "dash") &&
			     strcmp(b, "zsh")))
				continue;
			join(argv, 2, cmd, sizeof cmd, 0);
		} else {
			join(argv, 0, cmd, sizeof cmd, *f == 'b');
		}
		if (room >= 4096)
			pp.ready = 0;
		bbx_pol_exec_pairs(p, cmd, &pp, &v);
		if (v.decision == BBX_DEC_ALLOW && !v.rule)
			continue;
		*rc = bbx_pol_report(op, BBX_ACC_EXEC, NULL, NULL, NULL, NULL, argv, &v);
		if (*rc || v.decision != BBX_DEC_ALLOW)
			return 1;
		break; /* an explicit allow rule */
	}
	return 0;
}

/* Decides an exec: deny_read on the program file, the [exec] rules on the command line
 * (as given, with argv[0]'s directory dropped, and the script of "sh -c SCRIPT"), and
 * [exec] static for programs the shim cannot enter.  Guard held.  0 or -errno. */
static int exec_policy(const char *op, const char *exe, char *const argv[])
{
	const struct bbx_pol_hdr *p = bbx_policy();
	if (!p || !exe)
		return 0;
	struct bbx_pol_verdict v;
	const char *path;
	char buf[program_room(exe, &path)];
	const char *file = find_program(exe, path, buf, sizeof buf, NULL);
	struct stat sb;
	int have_sb = 0;
	int rc = 0;
	if (file && p->n_deny_read && exec_deny_read(p, op, file, argv, &sb, &have_sb, &rc))
		return rc;
	if (p->n_exec && argv && argv[0] && exec_rules(p, op, argv, &rc))
		return rc;
	if (file && p->static_action != BBX_ACT_ALLOW) {
		const char *why = unenterable(file, have_sb ? &sb : NULL);
		if (why) {
			const struct bbx_pol_rule r = {.loc = p->static_loc};
			(void)r;
			v.decision = p->static_action == BBX_ACT_DENY
					     ? (p->mode == BBX_MODE_AUDIT ? BBX_DEC_AUDIT : BBX_DEC_DENY)
					     : BBX_DEC_AUDIT;
			v.err = v.decision == BBX_DEC_DENY ? EPERM : 0;
			v.klass = BBX_CLASS_RISKY;
			v.rule = NULL;
			v.reason = why;
			return bbx_pol_report(op, BBX_ACC_EXEC, file, NULL, NULL, NULL, argv, &v);
		}
	}
	return 0;
}

/* Records the exec (argv and the environment the program passes, both redacted);
 * returns its seq (0 if nothing was recorded) or -errno to refuse.  spawner: the call
 * starts the program in a child of its own (posix_spawn, system, popen), so this is the
 * process itself, never a vfork child. */
static long record_exec_in(const char *op, const char *exe, const char *cwd,
			   char *const argv[], char *const envp[], int spawner)
{
	/* Possibly in a vfork child: the header's ids are asked afresh, not taken from
	 * (nor left in) the parent's cache; reset before the exec, which never returns.
	 * A spawner's own ids and the vDSO's clocks serve (3 system calls a spawn). */
	bbx_run_fresh_ids = !spawner;
	/* The run first (opened on a process's first record anyway): exec_policy then
	 * finds the run's program table. */
	int urc = bbx_usable();
	/* The state file's head page, which a record writes: mapped in one call in a fork
	 * child, which inherited no page table entry for it.  A process that opened the run
	 * mapped it then (bbx_state_map), and a vfork child shares its parent's page
	 * tables: one madvise a spawn saved in a make or an agent spawning commands. */
	if (!urc && bbx_run.st && __atomic_load_n(&bbx_child_fresh, __ATOMIC_RELAXED))
		bbx_state_prefault(bbx_run.st); /* a record follows, written or refused */
	int prc = exec_policy(op, exe, argv);
	if (prc || urc) {
		bbx_run_fresh_ids = 0;
		return prc ? prc : urc;
	}
	/* If this is the process's first record, the EXEC names it: no PROC needed. */
	__atomic_store_n(&bbx_run_proc_pending, 0, __ATOMIC_RELEASE);
	uint64_t seq;
	int rc = bbx_cap_exec_in(&bbx_run, op, exe, cwd, argv, envp, &seq);
	bbx_run_fresh_ids = 0;
	return rc ? rc : (long)seq;
}

static long record_exec(const char *op, const char *exe, char *const argv[],
			char *const envp[])
{
	return record_exec_in(op, exe, NULL, argv, envp, 0);
}

static void record_failure(const char *op, long seq, int err)
{
	int saved;
	if (seq > 0 && bbx_enter(&saved)) {
		bbx_run_fresh_ids = 1; /* maybe a vfork child */
		bbx_cap_result(&bbx_run, op, (uint64_t)seq, -1, err);
		bbx_run_fresh_ids = 0;
		bbx_leave(err);
	}
}

/* RESULT of a call that started a program and returned (spawn, popen, system): ret, and
 * for posix_spawn the child's pid.  errno is preserved. */
static void record_success(const char *op, long seq, long ret)
{
	int saved;
	if (seq > 0 && bbx_enter(&saved)) {
		if (!strncmp(op, "posix_spawn", 11))
			bbx_cap_spawned(&bbx_run, op, (uint64_t)seq, ret);
		else
			bbx_cap_outcome(&bbx_run, op, (uint64_t)seq, ret, 0);
		bbx_leave(saved);
	}
}

/* The new program's environment.  One that already keeps the program journaled (the
 * usual case: a shell passes on the environment bbx-run gave it) is passed as it is.
 * Otherwise its pointers and the strings made for it share one variable-length array,
 * allocated here, after the EXEC record: a fixed array would be part of the wrapper's
 * frame from its entry, and the policy and the record would run 8 KiB deeper.  Each
 * stack page a fork child reaches below its parent's frames is one more page fault
 * (issue 5, spawn cost). */
#define ENV_ON_STACK(envp, name)                                                            \
	int name##_as_is = bbx_env_complete(envp);                                          \
	size_t name##_n = name##_as_is ? 1 : bbx_env_count(envp) + BBX_ENV_EXTRA + 1;       \
	char *name##_v[name##_as_is ? 1 : name##_n + BBX_ENV_SCRATCH / sizeof(char *)];     \
	char **name = name##_as_is ? (char **)(envp)                                        \
				   : bbx_env_build((envp), name##_v, (char *)(name##_v + name##_n))

BBX_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	int saved;
	if (!bbx_enter(&saved))
		return BBX_REAL(execve)(path, argv, envp);
	long seq = record_exec("execve", path, argv, envp);
	if (seq < 0)
		return bbx_refuse((int)seq);
	bbx_leave(saved);
	ENV_ON_STACK(envp, env);
	int r = BBX_REAL(execve)(path, argv, env);
	record_failure("execve", seq, errno);
	return r;
}

BBX_EXPORT int execv(const char *path, char *const argv[])
{
	int saved;
	if (!bbx_enter(&saved))
		return BBX_REAL(execv)(path, argv);
	long seq = record_exec("execv", path, argv, environ);
	if (seq < 0)
		return bbx_refuse((int)seq);
	bbx_leave(saved);
	ENV_ON_STACK(environ, env);
	int r = BBX_REAL(execve)(path, argv, env);
	record_failure("execv", seq, errno);
	return r;
}

static int do_execvpe(const char *op, const char *file, char *const argv[], char *const envp[])
{
	int saved;
	if (!bbx_enter(&saved))
		return BBX_REAL(execvpe)(file, argv, envp);
	long seq = record_exec(op, file, argv, envp);
	if (seq < 0)
		return bbx_refuse((int)seq);
	bbx_leave(saved);
	ENV_ON_STACK(envp, env);
	int r = BBX_REAL(execvpe)(file, argv, env);
	record_failure(op, seq, errno);
	return r;
}

BBX_EXPORT int execvp(const char *file, char *const argv[])
{
	return do_execvpe("execvp", file, argv, environ);
}

BBX_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	return do_execvpe("execvpe", file, argv, envp);
}

/* execl*: the variable arguments become an argv on the stack. */
#define ARGV_FROM_VA(arg0, ap, argv)                                              \
	size_t argc_ = 1;                                                                   \
	{                                                                                   \
		va_list cp_;                                                                \
		va_copy(cp_, ap);                                                           \
		while (va_arg(cp_, const char *))                                           \
			argc_++;                                                            \
		va_end(cp_);                                                                \
	}                                                                                   \
	char *argv[argc_ + 1];                                                              \
	argv[0] = (char *)(arg0);                                                           \
	for (size_t i_ = 1; i_ <= argc_; i_++)                                              \
		argv[i_] = va_arg(ap, char *);

BBX_EXPORT int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	ARGV_FROM_VA(arg, ap, argv);
	va_end(ap);
	int saved;
	if (!bbx_enter(&saved))
		return BBX_REAL(execve)(path, argv, environ);
	long seq = record_exec("execl", path, argv, environ);
	if (seq < 0)
		return bbx_refuse((int)seq);
	bbx_leave(saved);
	ENV_ON_STACK(environ, env);
	int r = BBX_REAL(execve)(path, argv, env);
	record_failure("execl", seq, errno);
	return r;
}

BBX_EXPORT int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	ARGV_FROM_VA(arg, ap, argv);
	char *const *envp = va_arg(ap, char *const *); /* follows the NULL */
	va_end(ap);
	int saved;
	if (!bbx_enter(&saved))
		return BBX_REAL(execve)(path, argv, envp);
	long seq = record_exec("execle", path, argv, envp);
	if (seq < 0)
		return bbx_refuse((int)seq);
	bbx_leave(saved);
	ENV_ON_STACK(envp, env);
	int r = BBX_REAL(execve)(path, argv, env);
	record_failure("execle", seq, errno);
	return r;
}

BBX_EXPORT int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	ARGV_FROM_VA(arg, ap, argv);
	va_end(ap);
	return do_execvpe("execlp", file, argv, environ);
}

BBX_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	int saved;
	if (!bbx_enter(&saved))
		return BBX_REAL(fexecve)(fd, argv, envp);
	char exe[PATH_MAX];
	if (bbx_path_fd(fd, exe, PATH_MAX))
		bbx_fd_path(exe, PATH_MAX, fd);
	long seq = record_exec("fexecve", exe, argv, envp);
	if (seq < 0)
		return bbx_refuse((int)seq);
	bbx_leave(saved);
	ENV_ON_STACK(envp, env);
	int r = BBX_REAL(fexecve)(fd, argv, env);
	record_failure("fexecve", seq, errno);
	return r;
}

BBX_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
			int flags)
{
	int saved;
	if (!bbx_enter(&saved))
		return BBX_REAL(execveat)(dirfd, path, argv, envp, flags);
	char exe[PATH_MAX];
	int rc = (flags & AT_EMPTY_PATH) && !*path ? bbx_path_fd(dirfd, exe, PATH_MAX)
							      : bbx_path_abs(dirfd, path, exe, PATH_MAX);
	if (rc)
		bbx_scopy(exe, PATH_MAX, path);
	long seq = record_exec("execveat", exe, argv, envp);
	if (seq < 0)
		return bbx_refuse((int)seq);
	bbx_leave(saved);
	ENV_ON_STACK(envp, env);
	int r = BBX_REAL(execveat)(dirfd, path, argv, env, flags);
	record_failure("execveat", seq, errno);
	return r;
}

static int do_spawn(const char *op, int use_path, pid_t *pid, const char *file,
		    const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
		    char *const argv[], char *const envp[])
{
	int saved;
	int (*real)(pid_t *, const char *, const posix_spawn_file_actions_t *,
		    const posix_spawnattr_t *, char *const[], char *const[]) =
		use_path ? BBX_REAL(posix_spawnp) : BBX_REAL(posix_spawn);
	if (!bbx_enter(&saved))
		return real(pid, file, fa, attr, argv, envp);
	/* A chdir in the file actions (spawnfa.c): the program starts there, and a
	 * relative name of it (posix_spawn's, or posix_spawnp's with a '/') is found
	 * there; so is a bare name of posix_spawnp's on a relative (or empty) entry of the
	 * caller's $PATH, which glibc's child searches after its file actions.  Where that
	 * directory is unknown, such a program is refused (which program would run cannot
	 * be told: neither the exec rules nor deny_read could be applied to it), and one
	 * found by an absolute name is recorded with the parent's directory. */
	char dir[PATH_MAX], prog[PATH_MAX];
	const char *exe = file, *cwd = NULL;
	int where = bbx_spawn_dir(fa, dir, sizeof dir);
	if (where != BBX_SPAWN_CWD && file[0] != '/') {
		const char *path = NULL;
		int named = !use_path || has_slash(file);
		int searched = !named && program_room(file, &path) && path_has_relative(path);
		if (where == BBX_SPAWN_UNKNOWN && (named || searched)) {
			bbx_spawn_unknown(op, file);
			bbx_leave(saved);
			return EACCES;
		}
		if (where == BBX_SPAWN_DIR &&
		    (named ? bbx_spawn_abs(fa, file, prog) == 0
			   : searched && find_program(file, path, prog, sizeof prog, dir)))
			exe = prog;
	}
	if (where == BBX_SPAWN_DIR)
		cwd = dir;
	long seq = record_exec_in(op, exe, cwd, argv, envp, 1);
	if (seq < 0) {
		bbx_leave(saved);
		return (int)-seq; /* posix_spawn reports errors by return value */
	}
	bbx_leave(saved);
	ENV_ON_STACK(envp, env);
	pid_t child = 0;
	if (!pid)
		pid = &child; /* the child's pid goes into the RESULT */
	int r = real(pid, file, fa, attr, argv, env);
	if (r)
		record_failure(op, seq, r);
	else
		record_success(op, seq, *pid);
	errno = saved;
	return r;
}

BBX_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			   const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	return do_spawn("posix_spawn", 0, pid, path, fa, attr, argv, envp);
}

BBX_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			    const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	return do_spawn("posix_spawnp", 1, pid, file, fa, attr, argv, envp);
}

/* system() and popen() spawn /bin/sh with glibc's internal posix_spawn and the current
 * environ.  If environ lacks our variables (hidden by env.c, or unset by the program),
 * it is swapped for a complete copy for the duration of the call.  The copy is on the
 * heap (neither function is async-signal-safe, so malloc is allowed here): if another
 * thread setenv()s meanwhile, environ keeps pointing into it, so it is then left alone
 * rather than freed.  Another thread reading environ sees a superset of it. */
struct env_swap {
	char **old, **env;
	void *block;
};

static int env_swap_in(struct env_swap *w)
{
	w->block = NULL;
	if (bbx_env_complete(environ))
		return 0;
	size_t n = bbx_env_count(environ) + BBX_ENV_EXTRA + 1;
	w->block = malloc(n * sizeof(char *) + BBX_ENV_SCRATCH);
	if (!w->block)
		return -ENOMEM;
	w->env = bbx_env_build(environ, w->block, (char *)w->block + n * sizeof(char *));
	w->old = environ;
	environ = w->env;
	return 0;
}

static void env_swap_out(struct env_swap *w)
{
	if (!w->block)
		return;
	if (environ == w->env) {
		environ = w->old;
		free(w->block);
	} /* else: setenv() replaced environ with an array that points into the block */
}

BBX_EXPORT int system(const char *cmd)
{
	int saved;
	if (!bbx_enter(&saved))
		return BBX_REAL(system)(cmd);
	char *argv[] = {"sh", "-c", (char *)cmd, NULL};
	long seq = cmd ? record_exec_in("system", "/bin/sh", NULL, argv, environ, 1) : 0;
	if (seq < 0)
		return bbx_refuse((int)seq);
	struct env_swap w;
	int rc = env_swap_in(&w);
	if (rc)
		return bbx_refuse(rc);
	bbx_leave(saved);
	int r = BBX_REAL(system)(cmd);
	int e = errno;
	env_swap_out(&w);
	if (r == -1) {
		record_failure("system", seq, e);
	} else if (seq > 0) {
		record_success("system", seq, r);
		bbx_system_exit((uint64_t)seq, r); /* glibc reaped the shell internally */
	}
	errno = e;
	return r;
}

BBX_EXPORT FILE *popen(const char *cmd, const char *mode)
{
	int saved;
	if (!bbx_enter(&saved))
		return BBX_REAL(popen)(cmd, mode);
	char *argv[] = {"sh", "-c", (char *)cmd, NULL};
	long seq = record_exec_in("popen", "/bin/sh", NULL, argv, environ, 1);
	if (seq < 0) {
		bbx_refuse((int)seq);
		return NULL;
	}
	struct env_swap w;
	int rc = env_swap_in(&w);
	if (rc) {
		bbx_refuse(rc);
		return NULL;
	}
	bbx_leave(saved);
	FILE *f = BBX_REAL(popen)(cmd, mode);
	int e = errno;
	env_swap_out(&w);
	errno = e;
	if (!f) {
		record_failure("popen", seq, e);
	} else if (seq > 0) {
		record_success("popen", seq, fileno(f));
		bbx_popen_note(f, (uint64_t)seq);
	}
	errno = e;
	return f;
}
