/* SPDX-License-Identifier: MIT
 *
 * sandbox.c - the kernel layers bbx-run puts under the shim (DESIGN.md, Coverage), in
 * the child just before it executes the command, inherited by every descendant and
 * escaped by no raw syscall:
 *
 *  - seccomp (libseccomp): io_uring_setup/enter/register fail with ENOSYS (io_uring
 *    submits file operations no wrapper sees; libuv and others fall back to ordinary
 *    calls), and mount, pivot_root, kexec, bpf, module loading, reboot, swap,
 *    open_by_handle_at (opens a file without a path, past every path rule) and ptrace
 *    (another process's memory, hence its shim) fail with EPERM.
 *  - Landlock: in enforce mode, creating, removing, renaming and writing files is
 *    allowed by the kernel only beneath the write roots and the journal directory, and
 *    writing (not creating) in /dev (terminals, /dev/null) and /proc.  A second line
 *    behind the shim for programs the shim cannot enter (static, setuid); the shim
 *    refuses first, with a DENY record and an explanation, for everything it sees.
 *    Protect entries inside write roots remain the shim's alone (Landlock cannot take
 *    back a right below a granted directory).
 *  - Truncation, with Landlock: LANDLOCK_ACCESS_FS_TRUNCATE is deliberately not handled.
 *    Handling it makes the kernel walk every opened path up to the root, read-only
 *    opens included (it decides at open whether a later ftruncate may be allowed):
 *    +0.8 us on a 2.6 us open+close here, against issue 5's budget of 1.10 for read-only
 *    calls.  Opening for writing still needs WRITE_FILE, so ftruncate is confined by
 *    the descriptor's open; the two ways left to truncate by path - truncate(2), and
 *    open/openat with O_RDONLY|O_TRUNC - are refused here by seccomp with EACCES (what
 *    Landlock would answer) unless they carry the run's mark (bbx_run_mark) in an
 *    unused argument, which the shim adds after journaling them.  openat2, whose flags
 *    the filter cannot read, gets ENOSYS without the mark (callers fall back to
 *    openat).  The cost: a program the shim cannot enter cannot truncate a file by
 *    path even inside the write roots (ftruncate on a descriptor opened for writing
 *    works); the seccomp check is a few BPF instructions on open/openat.
 *
 * Each layer degrades gracefully: where the kernel lacks it, bbx-run says so once and
 * goes on.
 */
#include "sandbox.h"

#include "journal/record.h"
#include "journal/run.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Refusals of truncation by path from code that does not carry the run's mark (see
 * the top of this file).  0 or -errno. */
static int truncation_rules(scmp_filter_ctx ctx, uint64_t mark)
{
	const scmp_datum_t m = (scmp_datum_t)mark, mask = O_ACCMODE | O_TRUNC;
	int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(truncate), 1,
				  SCMP_A2(SCMP_CMP_NE, m));
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(open), 2,
				      SCMP_A1(SCMP_CMP_MASKED_EQ, mask, O_TRUNC),
				      SCMP_A3(SCMP_CMP_NE, m));
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(openat), 2,
				      SCMP_A2(SCMP_CMP_MASKED_EQ, mask, O_TRUNC),
				      SCMP_A4(SCMP_CMP_NE, m));
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 1,
				      SCMP_A4(SCMP_CMP_NE, m));
	/* Every other system call is answered from the kernel's per-syscall cache (its
	 * action does not depend on the arguments) without running the filter; openat,
	 * the most frequent call there is, runs it.  Tested first, it takes 8 BPF
	 * instructions instead of 30 (seccomp_export_pfc; check_sandbox counts 37 without
	 * the priority). */
	if (!rc)
		rc = seccomp_syscall_priority(ctx, SCMP_SYS(openat), 255);
	/* openat2 next: the shim's own read-only opens by words (shim.h, bbx_rf_open) are
	 * openat2 calls carrying the mark, and ran 34 instructions at the end of the
	 * filter. */
	if (!rc)
		rc = seccomp_syscall_priority(ctx, SCMP_SYS(openat2), 254);
	return rc;
}

/* The filter, built (not loaded): NULL with msg set on failure. */
static scmp_filter_ctx seccomp_filter(char *msg, size_t cap, uint64_t mark)
{
	static const char *const enosys[] = {"io_uring_setup", "io_uring_enter",
					     "io_uring_register"};
	static const char *const eperm[] = {
		"mount",	 "umount2",	  "pivot_root",	   "move_mount",
		"open_tree",	 "fsopen",	  "fsmount",	   "kexec_load",
		"kexec_file_load", "bpf",	  "init_module",   "finit_module",
		"delete_module", "reboot",	  "swapon",	   "swapoff",
		"open_by_handle_at", "ptrace",	  "process_vm_writev"};
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx) {
		snprintf(msg, cap, "seccomp unavailable (seccomp_init failed)");
		return NULL;
	}
	int rc = 0;
	for (size_t i = 0; !rc && i < sizeof enosys / sizeof enosys[0]; i++) {
		int nr = seccomp_syscall_resolve_name(enosys[i]);
		if (nr != __NR_SCMP_ERROR)
			rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
	}
	for (size_t i = 0; !rc && i < sizeof eperm / sizeof eperm[0]; i++) {
		int nr = seccomp_syscall_resolve_name(eperm[i]);
		if (nr != __NR_SCMP_ERROR)
			rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
	}
	if (!rc && mark)
		rc = truncation_rules(ctx, mark);
	if (rc) {
		snprintf(msg, cap, "seccomp filter not built: %s", strerror(-rc));
		seccomp_release(ctx);
		return NULL;
	}
	return ctx;
}

int bbx_sandbox_export_bpf(uint64_t mark, int fd)
{
	char msg[128];
	scmp_filter_ctx ctx = seccomp_filter(msg, sizeof msg, mark);
	if (!ctx)
		return -EINVAL;
	int rc = seccomp_export_bpf(ctx, fd);
	seccomp_release(ctx);
	return rc;
}

static int seccomp_layer(char *msg, size_t cap, uint64_t mark)
{
	scmp_filter_ctx ctx = seccomp_filter(msg, cap, mark);
	if (!ctx)
		return -1;
	int rc = 0;
	/* Without CAP_SYS_ADMIN the kernel takes a filter only from a process that cannot
	 * gain privileges by exec (setuid programs then run unprivileged). */
	if (geteuid() != 0)
		rc = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ? -errno : 0;
	if (!rc)
		rc = seccomp_load(ctx);
	seccomp_release(ctx);
	if (rc) {
		snprintf(msg, cap, "seccomp filter not loaded: %s", strerror(-rc));
		return -1;
	}
	return 0;
}

static int ll_add(int ruleset, const char *path, __u64 access)
{
	int fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return 0; /* a root that does not exist (yet): nothing to grant */
	struct landlock_path_beneath_attr pb = {.allowed_access = access, .parent_fd = fd};
	long r = syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
	int e = errno;
	/* EINVAL: access rights that do not apply to a file root (e.g. MAKE_DIR): retry
	 * with the file subset, through the same descriptor. */
	if (r < 0 && e == EINVAL) {
		pb.allowed_access = access & LANDLOCK_ACCESS_FS_WRITE_FILE;
		r = syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
		e = errno;
	}
	close(fd);
	return r < 0 ? -e : 0;
}

static int landlock_layer(const struct bbx_pol_hdr *p, const char *jdir, char *msg, size_t cap)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < 1) {
		snprintf(msg, cap, "Landlock unavailable in this kernel: write roots enforced by "
				   "the shim alone");
		return -1;
	}
	__u64 w = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
		  LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
		  LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
		  LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
		  LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
	if (abi >= 2)
		w |= LANDLOCK_ACCESS_FS_REFER;
	struct landlock_ruleset_attr ra = {.handled_access_fs = w};
	int rs = (int)syscall(SYS_landlock_create_ruleset, &ra, sizeof ra, 0);
	if (rs < 0) {
		snprintf(msg, cap, "Landlock ruleset not created: %s", strerror(errno));
		return -1;
	}
	int rc = 0;
	const struct bbx_pol_rule *r = bbx_pol_rules(p);
	for (uint32_t i = 0; !rc && i < p->n_rules; i++)
		if (r[i].section == BBX_PS_WRITE && p->mode == BBX_MODE_ENFORCE)
			rc = ll_add(rs, bbx_pol_str(p, r[i].value), w);
	if (!rc)
		rc = ll_add(rs, jdir, w);
	/* /dev: writing to terminals and /dev/null; /proc: a process's own settings
	 * (oom_score_adj, uid_map of a user namespace).  Nothing is created in either;
	 * other /proc writes are the shim's to refuse (Landlock cannot say "own pid"). */
	if (!rc)
		rc = ll_add(rs, "/dev", LANDLOCK_ACCESS_FS_WRITE_FILE);
	if (!rc)
		rc = ll_add(rs, "/proc", LANDLOCK_ACCESS_FS_WRITE_FILE);
	if (!rc && geteuid() != 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		rc = -errno;
	if (!rc && syscall(SYS_landlock_restrict_self, rs, 0) < 0)
		rc = -errno;
	close(rs);
	if (rc) {
		snprintf(msg, cap, "Landlock not applied: %s", strerror(-rc));
		return -1;
	}
	return 0;
}

int bbx_sandbox_apply(const struct bbx_pol_hdr *p, const char *jdir, char *msg, size_t cap)
{
	msg[0] = 0;
	/* Landlock only where the policy restricts writes to roots and refuses: with no
	 * write root at all, or in audit mode, there is nothing for the kernel to enforce. */
	int confine = p && p->mode != BBX_MODE_AUDIT && (p->n_write || p->mode == BBX_MODE_SAFE);
	uint64_t mark = 0;
	struct stat jsb;
	if (confine && stat(jdir, &jsb) == 0)
		mark = bbx_run_mark(jsb.st_dev, jsb.st_ino);
	int bad = seccomp_layer(msg, cap, mark) < 0;
	if (confine) {
		size_t n = strlen(msg);
		if (landlock_layer(p, jdir, msg + n + (n ? 2 : 0), cap - n - 2) < 0) {
			if (n)
				msg[n] = ';', msg[n + 1] = ' ';
			bad = 1;
		}
	}
	return bad ? -1 : 0;
}
