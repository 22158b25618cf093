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

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

/* Records the exec (argv and the environment the program passes, both redacted);
 * returns its seq (0 if nothing was recorded) or -errno to refuse. */
static long record_exec(const char *op, const char *exe, char *const argv[],
			char *const envp[])
{
	if (bbx_usable())
		return bbx_usable();
	/* If this is the process's first record, the EXEC names it: no PROC needed. */
	__atomic_store_n(&bbx_run_proc_pending, 0, __ATOMIC_RELEASE);
	uint64_t seq;
	int rc = bbx_cap_exec_env(&bbx_run, op, exe, argv, envp, &seq);
	return rc ? rc : (long)seq;
}

static void record_failure(const char *op, long seq, int err)
{
	int saved;
	if (seq > 0 && bbx_enter(&saved)) {
		bbx_cap_result(&bbx_run, op, (uint64_t)seq, -1, err);
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

#define ENV_ON_STACK(envp, name)                                                            \
	char *name##_v[bbx_env_count(envp) + BBX_ENV_EXTRA + 1];                            \
	char name##_s[BBX_ENV_SCRATCH];                                                     \
	char **name = bbx_env_build((envp), name##_v, name##_s)

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
		snprintf(exe, PATH_MAX, "/proc/self/fd/%d", fd);
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
		snprintf(exe, PATH_MAX, "%s", path);
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
	long seq = record_exec(op, file, argv, envp);
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

/* The child opens the file with glibc's internal open, which we never see: capture
 * when the action is registered.  Capturing early is safe: the pre-image is the file
 * as it was before any of this run's changes to it. */
BBX_EXPORT int posix_spawn_file_actions_addopen(posix_spawn_file_actions_t *fa, int fd,
						const char *path, int oflag, mode_t mode)
{
	int saved;
	if (!bbx_enter(&saved))
		return BBX_REAL(posix_spawn_file_actions_addopen)(fa, fd, path, oflag, mode);
	int acc = oflag & O_ACCMODE;
	if (acc != O_RDONLY || (oflag & (O_TRUNC | O_CREAT))) {
		int rc = bbx_usable();
		struct bbx_pending pend = {0};
		if (!rc)
			rc = bbx_path_abs(AT_FDCWD, path, bbx_tp.a, PATH_MAX);
		if (!rc)
			rc = bbx_cap_open(&bbx_run, "posix_spawn_file_actions_addopen", bbx_tp.a,
					  oflag, mode, bbx_tp.b, &pend);
		if (rc) {
			bbx_leave(saved);
			return -rc;
		}
		/* The creation happens later in the child; no RESULT can be written, so undo
		 * falls back to the birth-time check for this name. */
	}
	bbx_leave(saved);
	return BBX_REAL(posix_spawn_file_actions_addopen)(fa, fd, path, oflag, mode);
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
	long seq = cmd ? record_exec("system", "/bin/sh", argv, environ) : 0;
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
	long seq = record_exec("popen", "/bin/sh", argv, environ);
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
