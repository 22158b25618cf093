/* SPDX-License-Identifier: MIT
 *
 * proc.c - process records: this process's PROC, and the EXIT of each child it reaps.
 *
 * The wait family is wrapped only to learn outcomes: the real call runs first, without
 * the guard (it blocks, and a signal handler during it is journaled like any code),
 * and a child that was reaped - not merely stopped or continued, not peeked at with
 * WNOWAIT - gets an EXIT record with its pid and raw wait status.  A process outside
 * any run, or whose journal is unusable, pays one load and compare.  glibc's system()
 * and pclose() reap with internal calls, so exec.c and pclose() here record those
 * EXITs by the seq of the EXEC record instead of a pid (glibc does not expose it).
 */
#include "shim.h"
#include "journal/sys.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>

extern char **environ;

int bbx_proc_prologue(struct bbx_run *run, struct bbx_enc *e, uint8_t *buf, size_t cap)
{
	return bbx_cap_proc(run, e, buf, cap, bbx_argv_len ? bbx_argv_saved : NULL, bbx_argv_len,
			    environ);
}

/* Records an EXIT when this process journals (or belongs to a run and can open its
 * journal).  errno is preserved. */
static void record_exit(const char *op, long pid, uint64_t ref, int status)
{
	int st = __atomic_load_n(&bbx_status, __ATOMIC_ACQUIRE);
	if (st != 0 && !(st == BBX_STATUS_CLOSED && bbx_env_journal))
		return;
	int saved;
	if (!bbx_enter(&saved))
		return;
	if (!bbx_usable()) {
		bbx_run_last_seq = 0;
		(void)bbx_cap_exit(&bbx_run, op, pid, ref, status);
	}
	bbx_leave(saved);
}

static int ended(int status) { return !WIFSTOPPED(status) && !WIFCONTINUED(status); }

BBX_EXPORT pid_t wait(int *status)
{
	int st;
	pid_t r = BBX_REAL(wait)(status ? status : &st);
	if (r > 0 && ended(status ? *status : st))
		record_exit("wait", r, 0, status ? *status : st);
	return r;
}

BBX_EXPORT pid_t waitpid(pid_t pid, int *status, int options)
{
	int st;
	pid_t r = BBX_REAL(waitpid)(pid, status ? status : &st, options);
	if (r > 0 && ended(status ? *status : st))
		record_exit("waitpid", r, 0, status ? *status : st);
	return r;
}

BBX_EXPORT pid_t wait3(int *status, int options, struct rusage *ru)
{
	int st;
	pid_t r = BBX_REAL(wait3)(status ? status : &st, options, ru);
	if (r > 0 && ended(status ? *status : st))
		record_exit("wait3", r, 0, status ? *status : st);
	return r;
}

BBX_EXPORT pid_t wait4(pid_t pid, int *status, int options, struct rusage *ru)
{
	int st;
	pid_t r = BBX_REAL(wait4)(pid, status ? status : &st, options, ru);
	if (r > 0 && ended(status ? *status : st))
		record_exit("wait4", r, 0, status ? *status : st);
	return r;
}

/* waitid reports a siginfo: the raw status is rebuilt the way the kernel encodes it. */
BBX_EXPORT int waitid(idtype_t idtype, id_t id, siginfo_t *info, int options)
{
	siginfo_t own;
	if (!info) {
		own.si_pid = 0;
		info = &own;
	}
	int r = BBX_REAL(waitid)(idtype, id, info, options);
	if (r == 0 && !(options & WNOWAIT) && info->si_pid > 0) {
		int status = -1;
		if (info->si_code == CLD_EXITED)
			status = (info->si_status & 0xff) << 8;
		else if (info->si_code == CLD_KILLED)
			status = info->si_status & 0x7f;
		else if (info->si_code == CLD_DUMPED)
			status = (info->si_status & 0x7f) | 0x80;
		if (status >= 0)
			record_exit("waitid", info->si_pid, 0, status);
	}
	return r;
}

/* popen'd streams and the seq of their EXEC record, for pclose's EXIT.  A full table
 * only loses the link (the EXIT then has neither pid nor ref). */
#define NPOPEN 64
static struct {
	FILE *f;
	uint64_t seq;
} popens[NPOPEN];

void bbx_popen_note(FILE *f, uint64_t seq)
{
	for (int i = 0; i < NPOPEN; i++) {
		FILE *none = NULL;
		if (__atomic_compare_exchange_n(&popens[i].f, &none, f, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			__atomic_store_n(&popens[i].seq, seq, __ATOMIC_RELEASE);
			return;
		}
	}
}

static uint64_t popen_take(FILE *f)
{
	for (int i = 0; i < NPOPEN; i++) {
		if (__atomic_load_n(&popens[i].f, __ATOMIC_ACQUIRE) != f)
			continue;
		uint64_t seq = __atomic_load_n(&popens[i].seq, __ATOMIC_ACQUIRE);
		FILE *expect = f;
		if (__atomic_compare_exchange_n(&popens[i].f, &expect, NULL, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return seq;
	}
	return 0;
}

BBX_EXPORT int pclose(FILE *f)
{
	uint64_t seq = popen_take(f);
	int r = BBX_REAL(pclose)(f);
	if (r != -1 && seq)
		record_exit("pclose", 0, seq, r);
	return r;
}

/* For system() in exec.c. */
void bbx_system_exit(uint64_t seq, int status)
{
	record_exit("system", 0, seq, status);
}

/* The system call itself, as glibc's _exit makes it: no lookup of the real function
 * (dlsym) in a vfork child, where dash calls _exit after a failed exec. */
static _Noreturn void exit_now(int status)
{
	for (;;)
		(void)bbx_sys_raw4(SYS_exit_group, status, 0, 0, 0);
}

/* dash ends every process with _exit (the destructors that write what is held back
 * never run), as do many fork children.  No record of their own. */
BBX_EXPORT void _exit(int status)
{
	bbx_flush_pending();
	exit_now(status);
}

BBX_EXPORT void _Exit(int status)
{
	bbx_flush_pending();
	exit_now(status);
}
