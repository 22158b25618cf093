/* SPDX-License-Identifier: MIT
 *
 * check_sandbox.c - the seccomp filter bbx-run loads (tools/sandbox.c), exported as raw
 * BPF and run here by a small classic-BPF interpreter over made-up seccomp_data: what it
 * answers for each call the sandbox cares about, and how many instructions openat, the
 * most frequent call a program makes and one the kernel cannot answer from its cache,
 * costs (issue 5: openat is tested first, seccomp_syscall_priority).
 */
#include "tools/sandbox.h"
#include "unit.h"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#define MARK 0x1234567ull

static struct sock_filter prog[4096];
static size_t prog_n;

static void load(uint64_t mark)
{
	int fd = memfd_create("bpf", 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bbx_sandbox_export_bpf(mark, fd), 0);
	off_t len = lseek(fd, 0, SEEK_END);
	ck_assert_int_gt(len, 0);
	ck_assert_int_eq(len % (off_t)sizeof prog[0], 0);
	ck_assert_int_le(len, (off_t)sizeof prog);
	ck_assert_int_eq(pread(fd, prog, (size_t)len, 0), len);
	prog_n = (size_t)len / sizeof prog[0];
	close(fd);
}

/* Runs the program on data; *steps: instructions executed.  Returns the action word.
 * Only what a seccomp filter may contain (the kernel's seccomp_check_filter). */
static uint32_t run(const struct seccomp_data *d, unsigned *steps)
{
	uint32_t A = 0, X = 0, M[BPF_MEMWORDS] = {0};
	const uint8_t *data = (const uint8_t *)d;
	*steps = 0;
	for (size_t pc = 0; pc < prog_n; pc++) {
		const struct sock_filter *f = &prog[pc];
		++*steps;
		uint32_t k = f->k;
		switch (f->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			ck_assert_uint_le(k + 4, sizeof *d);
			memcpy(&A, data + k, 4);
			break;
		case BPF_LD | BPF_W | BPF_LEN: A = sizeof *d; break;
		case BPF_LDX | BPF_W | BPF_LEN: X = sizeof *d; break;
		case BPF_LD | BPF_IMM: A = k; break;
		case BPF_LDX | BPF_IMM: X = k; break;
		case BPF_LD | BPF_MEM: A = M[k % BPF_MEMWORDS]; break;
		case BPF_LDX | BPF_MEM: X = M[k % BPF_MEMWORDS]; break;
		case BPF_ST: M[k % BPF_MEMWORDS] = A; break;
		case BPF_STX: M[k % BPF_MEMWORDS] = X; break;
		case BPF_MISC | BPF_TAX: X = A; break;
		case BPF_MISC | BPF_TXA: A = X; break;
		case BPF_ALU | BPF_AND | BPF_K: A &= k; break;
		case BPF_ALU | BPF_OR | BPF_K: A |= k; break;
		case BPF_ALU | BPF_AND | BPF_X: A &= X; break;
		case BPF_JMP | BPF_JA: pc += k; break;
		case BPF_JMP | BPF_JEQ | BPF_K: pc += A == k ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JGT | BPF_K: pc += A > k ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JGE | BPF_K: pc += A >= k ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JSET | BPF_K: pc += (A & k) ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JEQ | BPF_X: pc += A == X ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JGT | BPF_X: pc += A > X ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JGE | BPF_X: pc += A >= X ? f->jt : f->jf; break;
		case BPF_RET | BPF_K: return k;
		case BPF_RET | BPF_A: return A;
		default: ck_abort_msg("BPF opcode 0x%x at %zu not interpreted", f->code, pc);
		}
	}
	ck_abort_msg("the program ran off its end");
	return 0;
}

static uint32_t call(int nr, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
		     unsigned *steps)
{
	struct seccomp_data d = {.nr = nr, .arch = AUDIT_ARCH_X86_64,
				 .args = {a0, a1, a2, a3, a4, 0}};
	unsigned s;
	return run(&d, steps ? steps : &s);
}

#define ALLOW SECCOMP_RET_ALLOW
#define ERR(e) (SECCOMP_RET_ERRNO | (uint32_t)(e))

START_TEST(test_answers)
{
	load(MARK);
	unsigned st;
	/* Reads and writes by descriptor: allowed. */
	ck_assert_uint_eq(call(SYS_openat, AT_FDCWD, 0, O_RDONLY, 0, 0, NULL), ALLOW);
	ck_assert_uint_eq(call(SYS_openat, AT_FDCWD, 0, O_WRONLY | O_TRUNC, 0, 0, NULL), ALLOW);
	ck_assert_uint_eq(call(SYS_read, 0, 0, 0, 0, 0, NULL), ALLOW);
	ck_assert_uint_eq(call(SYS_execve, 0, 0, 0, 0, 0, NULL), ALLOW);
	/* Truncation by path without the run's mark: EACCES; with it (the shim, after
	 * journaling): allowed. */
	ck_assert_uint_eq(call(SYS_openat, AT_FDCWD, 0, O_RDONLY | O_TRUNC, 0, 0, NULL), ERR(EACCES));
	ck_assert_uint_eq(call(SYS_openat, AT_FDCWD, 0, O_RDONLY | O_TRUNC, 0, MARK, NULL), ALLOW);
	ck_assert_uint_eq(call(SYS_open, 0, O_RDONLY | O_TRUNC, 0, 0, 0, NULL), ERR(EACCES));
	ck_assert_uint_eq(call(SYS_open, 0, O_RDONLY | O_TRUNC, 0, MARK, 0, NULL), ALLOW);
	ck_assert_uint_eq(call(SYS_truncate, 0, 0, 0, 0, 0, NULL), ERR(EACCES));
	ck_assert_uint_eq(call(SYS_truncate, 0, 0, MARK, 0, 0, NULL), ALLOW);
	ck_assert_uint_eq(call(SYS_openat2, AT_FDCWD, 0, 0, 24, 0, NULL), ERR(ENOSYS));
	ck_assert_uint_eq(call(SYS_openat2, AT_FDCWD, 0, 0, 24, MARK, NULL), ALLOW);
	/* The mark is compared whole: its high word too. */
	ck_assert_uint_eq(call(SYS_truncate, 0, 0, MARK | 1ull << 40, 0, 0, NULL), ERR(EACCES));
	/* io_uring (file operations no wrapper sees): ENOSYS; the rest: EPERM. */
	ck_assert_uint_eq(call(SYS_io_uring_setup, 0, 0, 0, 0, 0, NULL), ERR(ENOSYS));
	ck_assert_uint_eq(call(SYS_ptrace, 0, 0, 0, 0, 0, NULL), ERR(EPERM));
	ck_assert_uint_eq(call(SYS_mount, 0, 0, 0, 0, 0, NULL), ERR(EPERM));
	ck_assert_uint_eq(call(SYS_open_by_handle_at, 0, 0, 0, 0, 0, NULL), ERR(EPERM));
	/* Another architecture's calling convention is not let through. */
	struct seccomp_data d = {.nr = SYS_openat, .arch = AUDIT_ARCH_I386};
	ck_assert_uint_ne(run(&d, &st) & SECCOMP_RET_ACTION_FULL, SECCOMP_RET_ALLOW);
	/* Without a mark (no write roots): no truncation rules. */
	load(0);
	ck_assert_uint_eq(call(SYS_openat, AT_FDCWD, 0, O_RDONLY | O_TRUNC, 0, 0, NULL), ALLOW);
	ck_assert_uint_eq(call(SYS_ptrace, 0, 0, 0, 0, 0, NULL), ERR(EPERM));
}
END_TEST

/* openat runs the filter on every call (its answer depends on its arguments, so the
 * kernel cannot cache it): tested first, it costs a few instructions, not a walk past
 * every other rule.  So does openat2, the shim's own read-only open by words (a relative
 * read from a clean directory, shim.h bbx_rf_open), tested second.  The figures are
 * those of libseccomp 2.5 when this was written (12 for openat, 11 for openat2 with the
 * mark, 37 for open; openat2 was 34 before its priority); the bounds leave room for
 * another libseccomp's layout but not for losing the priorities. */
START_TEST(test_openat_first)
{
	load(MARK);
	unsigned s_openat, s_trunc, s_open, s_openat2;
	call(SYS_openat, AT_FDCWD, 0, O_RDONLY, 0, 0, &s_openat);
	call(SYS_openat, AT_FDCWD, 0, O_RDONLY | O_TRUNC, 0, MARK, &s_trunc);
	call(SYS_open, 0, O_RDONLY, 0, 0, 0, &s_open);
	call(SYS_openat2, AT_FDCWD, 0, 0, 24, MARK, &s_openat2);
	ck_assert_msg(s_openat <= 12 && s_trunc <= 16,
		      "openat costs %u BPF instructions (%u with O_TRUNC and the mark)", s_openat,
		      s_trunc);
	ck_assert_msg(s_openat2 <= 16, "openat2 with the mark costs %u BPF instructions",
		      s_openat2);
	ck_assert_msg(s_openat * 2 < s_open, "openat %u, open %u BPF instructions", s_openat,
		      s_open);
}
END_TEST

static Suite *sandbox_suite(void)
{
	Suite *s = suite_create("sandbox");
	TCase *tc = tcase_create("seccomp");
	tcase_add_test(tc, test_answers);
	tcase_add_test(tc, test_openat_first);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return unit_main(sandbox_suite()); }
