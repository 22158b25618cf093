/* SPDX-License-Identifier: MIT
 *
 * vfork.c - vfork, so that a child killed inside the shim cannot take its parent's
 * journaling with it.
 *
 * A vfork child runs on its parent's memory, thread-local variables included, until it
 * execs or exits; dash starts every simple command that way.  The shim's exec wrappers
 * (exec.c) work there, and leave the parent's memory as they found it on every path
 * that returns.  A child killed in one of them (SIGKILL, the OOM killer, a crash) leaves
 * it half-way, and the parent resumes with:
 *
 *   - the re-entry guard set: every later wrapper of the parent's thread took itself
 *     for the shim's own call and went straight to libc, unjournaled (found by
 *     tests/e2e/t-crash.sh: a shell's CREATE and EXEC records stopped after `ln`'s
 *     child was killed, and its changes could not be undone);
 *   - the run half-opened (open_state 1, init.c): the parent would wait for an opener
 *     that no longer exists, for ever;
 *   - the journal lock (or the group-commit lock) held: glibc took it for the child
 *     under the thread id it keeps in the thread's memory, the parent's, and listed it
 *     in the parent's robust list.  The kernel marks a dead holder's robust mutexes
 *     from that holder's own list, and the child had none registered; so the lock
 *     stayed the parent's, which never released it, and every writer of the run waited
 *     10 s per record and refused its call.
 *
 * So vfork is wrapped.  Like glibc's, the wrapper keeps nothing on the stack across the
 * system call (the child returns from it first and reuses that stack): the return
 * address is held in a register, as is the guard's value before the call.  The child
 * returns straight away.  The parent, once the kernel has resumed it (the child exec'd
 * or died), sets the guard back and calls bbx_vfork_parent: an open begun by the child's
 * thread id is forgotten, and a lock under the parent's own id released
 * (bbx_writer_vfork_reclaim).  x86_64 only (the target); elsewhere libc's vfork is used
 * as before.
 */
#include "shim.h"
#include "journal/state.h"
#include "journal/writer.h"

#include <errno.h>
#include <sys/syscall.h>

#if defined(__x86_64__)

#define BBX_STR_(x) #x
#define BBX_STR(x) BBX_STR_(x)

/* Called by the wrapper below in the parent, with the child's pid (its only thread's id),
 * the guard as it was before the call, and whether the parent still owed its PROC then
 * (no run open yet, or one open with its PROC pending); returns the pid, errno
 * untouched. */
pid_t bbx_vfork_parent(pid_t child, int guard, int owes_proc);
pid_t bbx_vfork_parent(pid_t child, int guard, int owes_proc)
{
	int saved = errno;
	bbx_guard = guard;
	bbx_run_forget_opener(child);
	/* The status first: it lies in the data page every process writes, bbx_run in a
	 * page of its own that a process which never journals has not touched (shim.h,
	 * bbx_journal_fd). */
	if (!__atomic_load_n(&bbx_status, __ATOMIC_ACQUIRE)) {
		struct bbx_state *st = __atomic_load_n(&bbx_run.st, __ATOMIC_ACQUIRE);
		if (st)
			bbx_writer_vfork_reclaim(&bbx_run.w, st, 0);
		/* The child's EXEC, the first record of its pid, took the PROC flag off (an
		 * EXEC names its process: exec.c), on this memory, and the run it opened for
		 * that is this process's too: this process's own first record still needs
		 * its PROC (a subshell whose first command is a program wrote none;
		 * tests/e2e/t-proc.sh). */
		if (owes_proc)
			__atomic_store_n(&bbx_run_proc_pending, 1, __ATOMIC_RELEASE);
	}
	errno = saved;
	return child;
}

long bbx_vfork_error(long err);
long bbx_vfork_error(long err)
{
	errno = (int)err;
	return -1;
}

/* %rdi: the return address (kept by the system call, and the child's registers are its
 * own); %esi: the guard; %edx: the PROC still owed (bbx_status not 0, the run not open;
 * or bbx_run_proc_pending).  The parent's result goes to bbx_vfork_parent by a tail
 * jump, with the return address back on the stack as at entry. */
__asm__(".hidden bbx_status\n"
	".hidden bbx_run_proc_pending\n"
	".text\n"
	".globl vfork\n"
	".type vfork, @function\n"
	".globl __vfork\n"
	".type __vfork, @function\n"
	"vfork:\n"
	"__vfork:\n"
	"	.cfi_startproc\n"
	"	popq %rdi\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	.cfi_register %rip, %rdi\n"
	"	movq bbx_guard@gottpoff(%rip), %rax\n"
	"	movl %fs:(%rax), %esi\n"
	"	movl bbx_run_proc_pending(%rip), %edx\n"
	"	cmpl $0, bbx_status(%rip)\n"
	"	je 3f\n"
	"	movl $1, %edx\n"
	"3:	movl $" BBX_STR(SYS_vfork) ", %eax\n"
	"	syscall\n"
	"	pushq %rdi\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_rel_offset %rip, 0\n"
	"	cmpl $-4095, %eax\n"
	"	jae 1f\n"
	"	testl %eax, %eax\n"
	"	jz 2f\n"
	"	movl %eax, %edi\n"
	"	jmp bbx_vfork_parent\n"
	"2:	ret\n"
	"1:	negl %eax\n"
	"	movslq %eax, %rdi\n"
	"	jmp bbx_vfork_error\n"
	"	.cfi_endproc\n"
	".size vfork, .-vfork\n"
	".size __vfork, .-__vfork\n");

#endif
