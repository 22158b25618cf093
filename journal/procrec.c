/* SPDX-License-Identifier: MIT
 *
 * procrec.c - who ran what: EXEC, PROC and EXIT records, their argv and environment
 * redacted (redact.h) before they are encoded.
 *
 * Allocation-free and async-signal-safe like the rest of capture: records are built in
 * the thread's scratch, or in an mmap'd buffer when argv and environment do not fit
 * (up to BBX_REC_MAX_LEN); /proc files are read with raw system calls.
 */
#include "capture.h"
#include "sys.h"
#include "redact.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

bool bbx_results_all = true;

void bbx_cap_outcome(struct bbx_run *run, const char *op, uint64_t seq, long ret, int err)
{
	if (!seq || (ret >= 0 && !bbx_results_all))
		return;
	(void)bbx_cap_result_later(run, op, seq, ret, err);
}

/* A list field: tag, u32 length, redacted strings back to back.  kind 0: argv (char
 * *const[]), 1: envp, 2: argv block of blen bytes, 3: env block. */
static void enc_list(struct bbx_enc *e, int tag, int kind, const void *list, size_t blen)
{
	if (e->err)
		return;
	if (e->len + 6 + BBX_REC_TRAILER_LEN > e->cap) {
		e->err = -ENAMETOOLONG;
		return;
	}
	uint8_t *p = e->buf + e->len;
	char *o = (char *)p + 6;
	size_t room = e->cap - e->len - 6 - BBX_REC_TRAILER_LEN, n;
	switch (kind) {
	case 0: n = bbx_redact_argv((char *const *)list, o, room); break;
	case 1: n = bbx_redact_envp((char *const *)list, o, room); break;
	default: n = bbx_redact_block(list, blen, kind == 3, o, room); break;
	}
	if (n > room || n > UINT32_MAX) {
		e->err = -ENAMETOOLONG;
		return;
	}
	bbx_enc_commit(e, tag, n);
}

/* The buffer for one record: the scratch's, else a mapping of *cap bytes. */
static void *get_buf(size_t *cap, bool own)
{
	struct bbx_scratch *s = bbx_scratch();
	if (*cap <= sizeof s->rec && !own)
		return s->rec;
	void *b = mmap(NULL, *cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return b == MAP_FAILED ? NULL : b;
}

static void put_buf(void *b, size_t cap)
{
	if (b != bbx_scratch()->rec)
		munmap(b, cap);
}

/* Calls build(e) into ever larger buffers until the record fits, then emits it. */
struct job {
	const char *op, *exe;
	char *const *argv, *const *envp;
	const char *cmdline, *environ_blk, *cwd;
	size_t cmdline_len;
	bool self_exe; /* exe: this process's own program, read into the record */
};

/* The kernel's name of this process's program (/proc/self/exe) straight into the
 * record, like the working directory below: no PATH_MAX array on the stack.  As many
 * bytes as PATH_MAX - 1 allows; none when the link cannot be read. */
static void enc_self_exe(struct bbx_enc *e)
{
	size_t room;
	uint8_t *p = bbx_enc_room(e, &room);
	if (!p || room < 2) {
		if (!e->err)
			e->err = -ENAMETOOLONG;
		return;
	}
	size_t lim = room - 1 < PATH_MAX - 1 ? room - 1 : PATH_MAX - 1;
	long n = bbx_sys_raw4(SYS_readlinkat, AT_FDCWD, (long)"/proc/self/exe", (long)p,
			      (long)lim);
	if (n <= 0)
		return;
	if ((size_t)n == lim && lim < PATH_MAX - 1) {
		e->err = -ENAMETOOLONG; /* perhaps cut short by the room left: grow */
		return;
	}
	p[n] = 0;
	bbx_enc_commit(e, BBX_T_EXE, (size_t)n + 1);
}

/* The directory a spawned program starts in when it is not this process's
 * (posix_spawn_file_actions_addchdir_np): copied as getcwd would, NUL included.  Its
 * length with the NUL, or -ERANGE. */
static long given_cwd(uint8_t *out, size_t room, const char *dir)
{
	size_t l = strlen(dir) + 1;
	if (l > room)
		return -ERANGE;
	memcpy(out, dir, l);
	return (long)l;
}

static void build_exec(struct bbx_enc *e, const struct job *j, int type)
{
	bbx_enc_str(e, BBX_T_OP, j->op);
	if (j->self_exe)
		enc_self_exe(e);
	else if (j->exe)
		bbx_enc_str(e, BBX_T_EXE, j->exe);
	/* The working directory straight into the record: a PATH_MAX array here would take
	 * a fork child's exec a stack page deeper, one more page fault (issue 5).  Too
	 * little room left: grow the record (ERANGE), as for any other field. */
	size_t room;
	uint8_t *cwd = bbx_enc_room(e, &room);
	long n = !cwd ? -ERANGE
		 : j->cwd ? given_cwd(cwd, room, j->cwd)
			  : bbx_sys_raw4(SYS_getcwd, (long)cwd, (long)room, 0, 0);
	if (n > 0)
		bbx_enc_commit(e, BBX_T_CWD, (size_t)n);
	else if (n == -ERANGE && (!cwd || room < PATH_MAX) && !e->err)
		e->err = -ENAMETOOLONG;
	(void)type;
	if (j->cmdline)
		enc_list(e, BBX_T_ARGV, 2, j->cmdline, j->cmdline_len);
	else
		enc_list(e, BBX_T_ARGV, 0, j->argv, 0);
	if (j->envp)
		enc_list(e, BBX_T_ENV, 1, j->envp, 0);
}

/* own: never the scratch's buffer (the PROC prologue runs while it holds a record). */
static int emit_grow(struct bbx_run *run, const struct job *j, int type, uint64_t *seq,
		     bool own)
{
	if (!bbx_scratch())
		return -ENOMEM;
	size_t cap = own ? 1 << 16 : sizeof bbx_scratch()->rec;
	for (;;) {
		void *buf = get_buf(&cap, own);
		if (!buf)
			return -ENOMEM;
		struct bbx_enc e;
		bbx_enc_begin(&e, buf, cap, type);
		build_exec(&e, j, type);
		if (e.err == -ENAMETOOLONG && cap < BBX_REC_MAX_LEN) {
			put_buf(buf, cap);
			cap *= 4;
			continue;
		}
		uint64_t s = bbx_state_next_seq(run->st);
		int rc = bbx_run_emit(run, &e, s);
		put_buf(buf, cap);
		if (seq)
			*seq = s;
		return rc;
	}
}

int bbx_cap_exec_env(struct bbx_run *run, const char *op, const char *exe, char *const argv[],
		     char *const envp[], uint64_t *seq)
{
	return bbx_cap_exec_in(run, op, exe, NULL, argv, envp, seq);
}

int bbx_cap_exec_in(struct bbx_run *run, const char *op, const char *exe, const char *cwd,
		    char *const argv[], char *const envp[], uint64_t *seq)
{
	struct job j = {.op = op, .exe = exe, .argv = argv, .envp = envp, .cwd = cwd};
	return emit_grow(run, &j, BBX_REC_EXEC, seq, false);
}

/* Reads a whole small /proc file into a mapping; *len gets its size.  NULL on error. */
static char *read_proc(const char *path, size_t *len, size_t *cap)
{
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	*cap = 1 << 16;
	char *b = NULL;
	for (;;) {
		b = mmap(NULL, *cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (b == MAP_FAILED) {
			b = NULL;
			break;
		}
		size_t got = 0;
		long r;
		while (got < *cap && (r = syscall(SYS_pread64, fd, b + got, *cap - got, (long)got)) > 0)
			got += (size_t)r;
		if (got < *cap) {
			*len = got;
			break;
		}
		munmap(b, *cap);
		b = NULL;
		if (*cap >= BBX_REC_MAX_LEN)
			break;
		*cap *= 4;
	}
	syscall(SYS_close, fd);
	return b;
}

int bbx_cap_proc(struct bbx_run *run, struct bbx_enc *e, uint8_t *buf, size_t cap,
		 const char *saved, size_t saved_len, char *const envp[])
{
	size_t len = 0, mcap = 0;
	char *cmd = saved ? NULL : read_proc("/proc/self/cmdline", &len, &mcap);
	static char *const none[] = {NULL};
	struct job j = {.op = "start", .self_exe = true, .argv = none, .envp = envp,
			.cmdline = saved ? saved : cmd, .cmdline_len = saved ? saved_len : len};
	int built = 0;
	if (buf) {
		bbx_enc_begin(e, buf, cap, BBX_REC_PROC);
		build_exec(e, &j, BBX_REC_PROC);
		built = !e->err;
	}
	if (!built) /* a lost PROC loses no undo information */
		(void)emit_grow(run, &j, BBX_REC_PROC, NULL, true);
	if (cmd)
		munmap(cmd, mcap);
	return built;
}

/* Encoded on the stack, not in the thread scratch: a shell or make writes an EXIT after
 * each child it forked, and the fork had made the scratch's record page copy-on-write,
 * so writing it there cost the parent a page fault per child (perf, issue 5).  The
 * stack page in use is one the wait call itself has just written. */
int bbx_cap_exit(struct bbx_run *run, const char *op, long pid, uint64_t ref, int status)
{
	uint8_t buf[BBX_REC_MIN_LEN + 160];
	struct bbx_enc e;
	bbx_enc_begin(&e, buf, sizeof buf, BBX_REC_EXIT);
	bbx_enc_str(&e, BBX_T_OP, op);
	if (pid > 0)
		bbx_enc_u64(&e, BBX_T_PID, (uint64_t)pid);
	if (ref)
		bbx_enc_u64(&e, BBX_T_REF, ref);
	bbx_enc_u32(&e, BBX_T_STATUS, (uint32_t)status);
	return bbx_run_emit(run, &e, bbx_state_next_seq(run->st));
}

int bbx_cap_note_redacted(struct bbx_run *run, const char *op, const char *path,
			  const char *text)
{
	if (!bbx_scratch())
		return -ENOMEM;
	char t[4096];
	bbx_redact_text(text, t, sizeof t);
	return bbx_cap_note(run, op, path, t);
}

int bbx_cap_spawned(struct bbx_run *run, const char *op, uint64_t seq, long pid)
{
	if (!seq || !bbx_results_all)
		return 0;
	if (!bbx_scratch())
		return -ENOMEM;
	struct bbx_enc e;
	bbx_enc_begin(&e, bbx_scratch()->rec, sizeof bbx_scratch()->rec, BBX_REC_RESULT);
	bbx_enc_str(&e, BBX_T_OP, op);
	bbx_enc_u64(&e, BBX_T_REF, seq);
	bbx_enc_i64(&e, BBX_T_RET, 0);
	bbx_enc_u32(&e, BBX_T_ERR, 0);
	if (pid > 0)
		bbx_enc_u64(&e, BBX_T_PID, (uint64_t)pid);
	/* Held back like any RESULT (run.h): it goes out with the spawner's next record,
	 * most often the EXIT of the child it reaps, in the same write(2). */
	return bbx_run_emit_later(run, &e, bbx_state_next_seq(run->st));
}
