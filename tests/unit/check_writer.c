/* SPDX-License-Identifier: MIT
 *
 * check_writer.c - fault injection into the journal writer and the capture layer
 * (journal/writer.c, journal/capture.c), and the writer's descriptor identity checks.
 *
 * Faults go through the bbx_sys table (journal/sys.h): the Nth write(), every
 * copy_file_range() or linkat() fails with a chosen errno, or the Nth write() is short.
 * Invariant 2 (fail closed): the function returns the negative errno so that the caller
 * refuses the mutation, and the run directory stays consistent: no complete record
 * names an object that is missing, and no object is left behind in objects/ that no
 * record names (the capture code unlinks the object when its record cannot be written,
 * so the tests assert an empty objects/ after every failure).
 */
#include "capture.h"
#include "reader.h"
#include "record.h"
#include "run.h"
#include "state.h"
#include "sys.h"
#include "writer.h"
#include "str.h"
#include "unit.h"

#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/wait.h>
#include <sys/resource.h>

/* ---- fault injection ---- */

enum { INJ_NONE, INJ_ERRNO, INJ_SHORT };

static struct bbx_sys real_sys;
static struct {
	int mode;           /* what the fail_at'th write() does */
	int calls, fail_at; /* 1-based */
	int err;
	size_t short_len;   /* INJ_SHORT: bytes actually written (clamped to n - 1) */
	int cfr_calls, cfr_err;   /* cfr_err != 0: every copy_file_range fails */
	size_t cfr_first_limit;   /* > 0: the first call copies at most this much */
	int link_calls, link_err; /* link_err != 0: every linkat fails */
	int failed_fd;            /* the descriptor of the injected write, or -1 */
	int fdatasync_calls, fdatasync_err; /* [journal] sync: the journal */
	int fsync_calls, fsync_err;         /* objects and directories */
} inj;

/* The nth write-like call (write, or pwrite into the run's shared object): -1 with
 * errno set, or how many of its n bytes to write (fewer for INJ_SHORT). */
static ssize_t inj_len(int fd, size_t n)
{
	int call = ++inj.calls;
	if (call == inj.fail_at && inj.mode != INJ_NONE)
		inj.failed_fd = fd;
	if (call == inj.fail_at && inj.mode == INJ_ERRNO) {
		errno = inj.err;
		return -1;
	}
	if (call == inj.fail_at && inj.mode == INJ_SHORT && n > 1) {
		size_t k = inj.short_len ? inj.short_len : n / 2;
		return (ssize_t)(k < n ? k : n - 1);
	}
	return (ssize_t)n;
}

static ssize_t inj_write(int fd, const void *buf, size_t n)
{
	ssize_t k = inj_len(fd, n);
	return k < 0 ? -1 : real_sys.write(fd, buf, (size_t)k);
}

static ssize_t inj_pwrite(int fd, const void *buf, size_t n, off_t off)
{
	ssize_t k = inj_len(fd, n);
	return k < 0 ? -1 : real_sys.pwrite(fd, buf, (size_t)k, off);
}

static ssize_t inj_cfr(int in, off_t *inoff, int out, off_t *outoff, size_t n, unsigned fl)
{
	int call = ++inj.cfr_calls;
	if (call == 1 && inj.cfr_first_limit && n > inj.cfr_first_limit)
		return real_sys.copy_file_range(in, inoff, out, outoff, inj.cfr_first_limit, fl);
	if (inj.cfr_err && !(call == 1 && inj.cfr_first_limit)) {
		errno = inj.cfr_err;
		return -1;
	}
	return real_sys.copy_file_range(in, inoff, out, outoff, n, fl);
}

static int inj_linkat(int od, const char *op, int nd, const char *np, int fl)
{
	inj.link_calls++;
	if (inj.link_err) {
		errno = inj.link_err;
		return -1;
	}
	return real_sys.linkat(od, op, nd, np, fl);
}

static int inj_fdatasync(int fd)
{
	inj.fdatasync_calls++;
	if (inj.fdatasync_err) {
		errno = inj.fdatasync_err;
		return -1;
	}
	return real_sys.fdatasync(fd);
}

static int inj_fsync(int fd)
{
	inj.fsync_calls++;
	if (inj.fsync_err) {
		errno = inj.fsync_err;
		return -1;
	}
	return real_sys.fsync(fd);
}

static void inj_reset(void)
{
	memset(&inj, 0, sizeof inj);
	inj.failed_fd = -1;
}

static void inj_setup(void)
{
	real_sys = bbx_sys;
	inj_reset();
	bbx_sys.write = inj_write;
	bbx_sys.pwrite = inj_pwrite;
	bbx_sys.copy_file_range = inj_cfr;
	/* The tests below that count an object's writes want an object of its own; the
	 * packed ones raise this again. */
	bbx_pack_max = 0;
	bbx_sys.linkat = inj_linkat;
	bbx_sys.fdatasync = inj_fdatasync;
	bbx_sys.fsync = inj_fsync;
}

static void inj_teardown(void)
{
	bbx_sys = real_sys;
	bbx_preserve_max = UINT64_MAX;
	bbx_pack_max = 1u << 20;
	bbx_cap_oversize = NULL;
}

/* ---- records ---- */

static long enc_rec(uint8_t *buf, size_t cap, uint64_t seq, const char *text)
{
	struct bbx_enc e;
	bbx_enc_begin(&e, buf, cap, BBX_REC_NOTE);
	bbx_enc_str(&e, BBX_T_OP, "unit");
	bbx_enc_str(&e, BBX_T_TEXT, text);
	struct bbx_rec_hdr h = {.seq = seq};
	long len = bbx_enc_finish(&e, &h);
	ck_assert_int_gt(len, 0);
	return len;
}

/* Appends a NOTE record with seq and a text whose length varies with seq. */
static int append_seq(struct bbx_writer *w, uint64_t seq)
{
	char text[128];
	uint8_t buf[512];
	snprintf(text, sizeof text, "record %llu %.*s", (unsigned long long)seq, (int)(seq * 7 % 50),
		 "..................................................");
	long len = enc_rec(buf, sizeof buf, seq, text);
	return bbx_writer_append(w, buf, (size_t)len);
}

/* What a journal holds: its complete records' seqs, torn tail, damaged ranges. */
struct jscan {
	int n;
	uint64_t seq[64];
	int type[64];
	int torn;
	size_t torn_len, bad_ranges, bad_bytes;
};

static void scan_journal(const char *path, struct jscan *js)
{
	memset(js, 0, sizeof *js);
	struct bbx_reader r;
	ck_assert_int_eq(bbx_reader_open(&r, path), 0);
	struct bbx_rec rec;
	int rc;
	while ((rc = bbx_reader_next(&r, &rec, NULL)) == BBX_READ_OK) {
		ck_assert_int_lt(js->n, 64);
		js->seq[js->n] = rec.h.seq;
		js->type[js->n] = rec.type;
		js->n++;
	}
	js->torn = rc == BBX_READ_TORN;
	js->torn_len = r.torn_len;
	js->bad_ranges = r.bad_ranges;
	js->bad_bytes = r.bad_bytes;
	bbx_reader_close(&r);
}

/* ---- the writer ---- */

struct wctx {
	char dir[PATH_MAX];
	char journal[PATH_MAX + 16];
	char other[PATH_MAX + 16]; /* a program's own file */
	struct bbx_writer w;
};

static struct wctx *wctx_new(const char *tag)
{
	struct wctx *c = calloc(1, sizeof *c);
	ck_assert_ptr_nonnull(c);
	unit_mkdtemp(c->dir, sizeof c->dir, tag);
	snprintf(c->journal, sizeof c->journal, "%s/journal", c->dir);
	snprintf(c->other, sizeof c->other, "%s/precious", c->dir);
	unit_write_file(c->other, "precious data\n", 14);
	ck_assert_int_eq(bbx_writer_open(&c->w, c->dir), 0);
	return c;
}

static void assert_other_intact(const struct wctx *c)
{
	size_t n;
	char *d = unit_read_file(c->other, &n);
	ck_assert_uint_eq(n, 14);
	ck_assert_str_eq(d, "precious data\n");
	free(d);
}

/* The writer's descriptor is the journal, opened for appending. */
static void assert_fd_is_journal(const struct wctx *c)
{
	struct stat a, b;
	ck_assert_int_eq(fstat(c->w.fd, &a), 0);
	ck_assert_int_eq(stat(c->journal, &b), 0);
	ck_assert_uint_eq(a.st_ino, b.st_ino);
	ck_assert_uint_eq(a.st_dev, b.st_dev);
	int fl = fcntl(c->w.fd, F_GETFL);
	ck_assert(fl & O_APPEND);
	ck_assert_int_eq(fl & O_ACCMODE, O_WRONLY);
	ck_assert(fcntl(c->w.fd, F_GETFD) & FD_CLOEXEC);
}

START_TEST(test_writer_appends_exact_bytes)
{
	struct wctx *c = wctx_new("wbytes");
	struct stat sb;
	ck_assert_int_eq(stat(c->journal, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 07777, 0600);
	ck_assert_int_eq(sb.st_size, 0);
	assert_fd_is_journal(c);
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur > BBX_WRITER_FD_MIN + 16)
		ck_assert_int_ge(c->w.fd, BBX_WRITER_FD_MIN);

	uint8_t want[2048], buf[512];
	size_t wlen = 0;
	for (uint64_t s = 1; s <= 3; s++) {
		long len = enc_rec(buf, sizeof buf, s, s == 2 ? "two" : "one or three");
		ck_assert_int_eq(bbx_writer_append(&c->w, buf, (size_t)len), 0);
		memcpy(want + wlen, buf, (size_t)len);
		wlen += (size_t)len;
	}
	ck_assert_int_eq(inj.calls, 3); /* one write(2) per record */
	size_t n;
	uint8_t *got = unit_read_file(c->journal, &n);
	ck_assert_uint_eq(n, wlen);
	ck_assert_mem_eq(got, want, wlen);
	free(got);

	/* Reopening an existing journal appends after what is there. */
	bbx_writer_close(&c->w);
	ck_assert_int_eq(bbx_writer_open(&c->w, c->dir), 0);
	ck_assert_int_eq(append_seq(&c->w, 4), 0);
	struct jscan js;
	scan_journal(c->journal, &js);
	ck_assert_int_eq(js.n, 4);
	ck_assert_uint_eq(js.seq[3], 4);
	bbx_writer_close(&c->w);
	free(c);
}
END_TEST

START_TEST(test_writer_open_errors)
{
	struct bbx_writer w;
	char dir[PATH_MAX], p[PATH_MAX + 16];
	unit_mkdtemp(dir, sizeof dir, "wopen");
	snprintf(p, sizeof p, "%s/no/such/dir", dir);
	ck_assert_int_eq(bbx_writer_open(&w, p), -ENOENT);
	char *longp = malloc(PATH_MAX + 10);
	ck_assert_ptr_nonnull(longp);
	memset(longp, 'a', PATH_MAX + 9);
	longp[0] = '/';
	longp[PATH_MAX + 9] = 0;
	ck_assert_int_eq(bbx_writer_open(&w, longp), -ENAMETOOLONG);
	free(longp);
}
END_TEST

/* The Nth write fails with ENOSPC or EIO: that append returns the error, and the
 * journal holds exactly the other records, all complete. */
START_TEST(test_writer_nth_write_fails)
{
	const int errs[] = {ENOSPC, EIO, EDQUOT};
	for (size_t e = 0; e < sizeof errs / sizeof errs[0]; e++) {
		for (int nth = 1; nth <= 5; nth++) {
			struct wctx *c = wctx_new("wnth");
			inj_reset();
			inj.mode = INJ_ERRNO;
			inj.fail_at = nth;
			inj.err = errs[e];
			for (int s = 1; s <= 5; s++) {
				int rc = append_seq(&c->w, (uint64_t)s);
				ck_assert_int_eq(rc, s == nth ? -errs[e] : 0);
			}
			struct jscan js;
			scan_journal(c->journal, &js);
			ck_assert_int_eq(js.n, 4);
			for (int i = 0, s = 1; s <= 5; s++) {
				if (s == nth)
					continue;
				ck_assert_uint_eq(js.seq[i], (uint64_t)s);
				i++;
			}
			ck_assert(!js.torn);
			ck_assert_uint_eq(js.bad_ranges, 0);
			bbx_writer_close(&c->w);
			free(c);
		}
	}
}
END_TEST

/* A short write is -EIO; its bytes are a torn tail, and once later records follow, a
 * damaged range the reader skips. */
START_TEST(test_writer_short_write)
{
	const size_t shorts[] = {1, 3, 11, 12, 56, 0 /* half */};
	for (size_t i = 0; i < sizeof shorts / sizeof shorts[0]; i++) {
		struct wctx *c = wctx_new("wshort");
		inj_reset();
		inj.mode = INJ_SHORT;
		inj.fail_at = 3;
		inj.short_len = shorts[i];
		ck_assert_int_eq(append_seq(&c->w, 1), 0);
		ck_assert_int_eq(append_seq(&c->w, 2), 0);
		off_t before = unit_file_size(c->journal);
		ck_assert_int_eq(append_seq(&c->w, 3), -EIO);
		size_t torn = (size_t)(unit_file_size(c->journal) - before);
		ck_assert_uint_gt(torn, 0);
		if (shorts[i])
			ck_assert_uint_eq(torn, shorts[i]);
		struct jscan js;
		scan_journal(c->journal, &js);
		ck_assert_int_eq(js.n, 2);
		ck_assert(js.torn);
		ck_assert_uint_eq(js.torn_len, torn);
		ck_assert_uint_eq(js.bad_ranges, 0);

		ck_assert_int_eq(append_seq(&c->w, 4), 0);
		scan_journal(c->journal, &js);
		ck_assert_int_eq(js.n, 3);
		ck_assert_uint_eq(js.seq[2], 4);
		ck_assert(!js.torn);
		ck_assert_uint_eq(js.bad_ranges, 1);
		ck_assert_uint_eq(js.bad_bytes, torn);
		bbx_writer_close(&c->w);
		free(c);
	}
}
END_TEST

/* EINTR before anything was written is retried: the record lands exactly once. */
START_TEST(test_writer_eintr_retried)
{
	struct wctx *c = wctx_new("weintr");
	inj.mode = INJ_ERRNO;
	inj.fail_at = 2;
	inj.err = EINTR;
	ck_assert_int_eq(append_seq(&c->w, 1), 0);
	ck_assert_int_eq(append_seq(&c->w, 2), 0);
	ck_assert_int_eq(inj.calls, 3);
	struct jscan js;
	scan_journal(c->journal, &js);
	ck_assert_int_eq(js.n, 2);
	ck_assert_uint_eq(js.seq[1], 2);
	ck_assert_uint_eq(js.bad_ranges, 0);
	bbx_writer_close(&c->w);
	free(c);
}
END_TEST

/* ---- descriptor identity ---- */

/* The program dup2()s one of its own files over the writer's number. */
START_TEST(test_identity_dup2_over_fd)
{
	struct wctx *c = wctx_new("wdup2");
	ck_assert_int_eq(append_seq(&c->w, 1), 0);
	int old = c->w.fd;
	int u = open(c->other, O_WRONLY | O_APPEND | O_CLOEXEC);
	ck_assert_int_ge(u, 0);
	ck_assert_int_eq(dup2(u, old), old);
	close(u);
	ck_assert_int_eq(append_seq(&c->w, 2), 0);
	assert_other_intact(c);
	struct jscan js;
	scan_journal(c->journal, &js);
	ck_assert_int_eq(js.n, 2);
	ck_assert_uint_eq(js.seq[1], 2);
	assert_fd_is_journal(c);
	ck_assert_int_ne(c->w.fd, old);
	/* The program's descriptor is still its own: not closed, not moved. */
	struct stat a, b;
	ck_assert_int_eq(fstat(old, &a), 0);
	ck_assert_int_eq(stat(c->other, &b), 0);
	ck_assert_uint_eq(a.st_ino, b.st_ino);
	/* bbx_writer_close() closes the journal, never the program's descriptor. */
	int cur = c->w.fd;
	ck_assert_int_eq(dup2(old, cur), cur);
	bbx_writer_close(&c->w);
	ck_assert_int_ne(fcntl(cur, F_GETFD), -1);
	ck_assert_int_ne(fcntl(old, F_GETFD), -1);
	close(cur);
	close(old);
	assert_other_intact(c);
	free(c);
}
END_TEST

/* A program that closes all its descriptors, ours included. */
START_TEST(test_identity_closed_fd_reopened)
{
	struct wctx *c = wctx_new("wclose");
	ck_assert_int_eq(append_seq(&c->w, 1), 0);
	ck_assert_int_eq(close(c->w.fd), 0);
	ck_assert_int_eq(append_seq(&c->w, 2), 0);
	assert_fd_is_journal(c);
	ck_assert_int_eq(append_seq(&c->w, 3), 0);
	struct jscan js;
	scan_journal(c->journal, &js);
	ck_assert_int_eq(js.n, 3);
	ck_assert_uint_eq(js.seq[1], 2);
	ck_assert_uint_eq(js.seq[2], 3);
	bbx_writer_close(&c->w);
	free(c);
}
END_TEST

/* Closed, then the number reused by a file of the program's (close + reopen). */
START_TEST(test_identity_number_reused)
{
	struct wctx *c = wctx_new("wreuse");
	ck_assert_int_eq(append_seq(&c->w, 1), 0);
	int old = c->w.fd;
	ck_assert_int_eq(close(old), 0);
	int u = open(c->other, O_RDWR | O_CLOEXEC); /* not O_APPEND: would overwrite */
	ck_assert_int_ge(u, 0);
	ck_assert_int_eq(dup2(u, old), old);
	close(u);
	ck_assert_int_eq(append_seq(&c->w, 2), 0);
	assert_other_intact(c);
	struct jscan js;
	scan_journal(c->journal, &js);
	ck_assert_int_eq(js.n, 2);
	ck_assert_uint_eq(js.bad_ranges, 0);
	close(old);
	bbx_writer_close(&c->w);
	free(c);
}
END_TEST

/* Closed and the journal gone: the reopen fails and so does the append (fail closed);
 * the journal is not silently recreated empty. */
START_TEST(test_identity_reopen_fails_closed)
{
	struct wctx *c = wctx_new("wgone");
	ck_assert_int_eq(append_seq(&c->w, 1), 0);
	ck_assert_int_eq(close(c->w.fd), 0);
	ck_assert_int_eq(unlink(c->journal), 0);
	ck_assert_int_eq(append_seq(&c->w, 2), -ENOENT);
	ck_assert_int_eq(access(c->journal, F_OK), -1);
	free(c);
}
END_TEST

/* The journal itself, opened read-only by the program (bbx-log, cat) and dup2()ed to
 * the writer's number: same inode, but not a descriptor the writer can append with.
 * The append must still land in the journal. */
START_TEST(test_identity_journal_rdonly_at_fd)
{
	struct wctx *c = wctx_new("wrdonly");
	ck_assert_int_eq(append_seq(&c->w, 1), 0);
	int old = c->w.fd;
	int u = open(c->journal, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(u, 0);
	ck_assert_int_eq(dup2(u, old), old);
	close(u);
	int rc = append_seq(&c->w, 2);
	struct jscan js;
	scan_journal(c->journal, &js);
	close(old);
	bbx_writer_close(&c->w);
	free(c);
	ck_assert_msg(rc == 0, "append through a read-only journal descriptor at w->fd: %d", rc);
	ck_assert_int_eq(js.n, 2);
}
END_TEST

/* The journal opened without O_APPEND at the writer's number: same inode, so the
 * identity check passes, but the write goes to the descriptor's offset (0) and
 * overwrites the first records instead of appending (invariant 1). */
START_TEST(test_identity_journal_noappend_at_fd)
{
	struct wctx *c = wctx_new("wnoappend");
	for (uint64_t s = 1; s <= 3; s++)
		ck_assert_int_eq(append_seq(&c->w, s), 0);
	int old = c->w.fd;
	int u = open(c->journal, O_WRONLY | O_CLOEXEC);
	ck_assert_int_ge(u, 0);
	ck_assert_int_eq(dup2(u, old), old);
	close(u);
	ck_assert_int_eq(append_seq(&c->w, 4), 0);
	struct jscan js;
	scan_journal(c->journal, &js);
	close(old);
	bbx_writer_close(&c->w);
	free(c);
	ck_assert_msg(js.n == 4 && js.seq[0] == 1 && js.seq[3] == 4 && js.bad_ranges == 0,
		      "journal after append through a non-O_APPEND journal descriptor: %d records, "
		      "first seq %llu, %zu damaged ranges (the record overwrote the head)",
		      js.n, (unsigned long long)(js.n ? js.seq[0] : 0), js.bad_ranges);
}
END_TEST

/* ---- the capture layer ---- */

#define CAP_FILE_LEN 40000 /* three 16 KiB copy buffers when copying by write() */

struct cctx {
	char base[PATH_MAX];
	char rundir[PATH_MAX + 8], out[PATH_MAX + 8];
	char journal[PATH_MAX + 16], objects[PATH_MAX + 16];
	char ws[PATH_MAX + 8], file[PATH_MAX + 16];
	uint8_t orig[CAP_FILE_LEN];
	struct stat fst; /* the workspace file before the capture */
	struct stat dst; /* the workspace directory */
	struct bbx_run run;
	int open;
	size_t bad_ok; /* damaged ranges expected (a torn record followed by more) */
};

static struct cctx *cctx_new(const char *tag, size_t flen)
{
	struct cctx *c = calloc(1, sizeof *c);
	ck_assert_ptr_nonnull(c);
	unit_mkdtemp(c->base, sizeof c->base, tag);
	snprintf(c->rundir, sizeof c->rundir, "%s/run", c->base);
	snprintf(c->journal, sizeof c->journal, "%s/journal", c->rundir);
	snprintf(c->objects, sizeof c->objects, "%s/objects", c->rundir);
	snprintf(c->ws, sizeof c->ws, "%s/ws", c->base);
	snprintf(c->file, sizeof c->file, "%s/file", c->ws);
	ck_assert_int_eq(bbx_run_create(c->rundir, "unit test", NULL, 1, c->out, sizeof c->out), 0);
	ck_assert_str_eq(c->out, c->rundir);
	ck_assert_int_eq(bbx_run_open(&c->run, c->rundir), 0);
	c->open = 1;
	ck_assert_int_eq(mkdir(c->ws, 0755), 0);
	for (size_t i = 0; i < flen; i++)
		c->orig[i] = (uint8_t)(i * 31 + i / 251);
	unit_write_file(c->file, c->orig, flen);
	ck_assert_int_eq(lstat(c->file, &c->fst), 0);
	ck_assert_int_eq(lstat(c->ws, &c->dst), 0);
	return c;
}

static void cctx_free(struct cctx *c)
{
	if (c->open)
		bbx_run_close(&c->run);
	free(c);
}

/* Names of the objects under objects/, as records name them ("ab/123"): objects live
 * in shard directories; an empty shard directory is not an object. */
static int list_objects(const struct cctx *c, char names[][32], int max)
{
	DIR *d = opendir(c->objects);
	ck_assert_ptr_nonnull(d);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!strcmp(de->d_name, BBX_PACK_OBJECT))
			continue; /* the shared object: its ranges are checked by the packed tests */
		char sub[PATH_MAX + 512];
		snprintf(sub, sizeof sub, "%s/%s", c->objects, de->d_name);
		DIR *sd = opendir(sub);
		ck_assert_msg(sd != NULL, "objects/%s is not a shard directory", de->d_name);
		struct dirent *se;
		while ((se = readdir(sd))) {
			if (!strcmp(se->d_name, ".") || !strcmp(se->d_name, ".."))
				continue;
			ck_assert_int_lt(n, max);
			ck_assert_uint_lt(strlen(de->d_name) + 1 + strlen(se->d_name), 32);
			snprintf(names[n++], 32, "%.2s/%.28s", de->d_name, se->d_name);
		}
		closedir(sd);
	}
	closedir(d);
	return n;
}

/* What a capture left in the run directory. */
struct cscan {
	struct jscan js;
	int nobj;        /* files in objects/ */
	int npreserve;
	uint32_t how;    /* of the last PRESERVE */
	char object[32]; /* of the last PRESERVE ("" if none) */
	uint64_t size;   /* st.size of the last PRESERVE */
};

/* Checks the run's consistency whatever happened: no damaged range (beyond bad_ok),
 * every object a complete record names exists, every object in objects/ is named by a
 * complete record. */
static void scan_run(const struct cctx *c, struct cscan *cs)
{
	memset(cs, 0, sizeof *cs);
	scan_journal(c->journal, &cs->js);
	ck_assert_uint_le(cs->js.bad_ranges, c->bad_ok);
	char named[64][32];
	int nnamed = 0;
	struct bbx_reader r;
	struct bbx_rec rec;
	ck_assert_int_eq(bbx_reader_open(&r, c->journal), 0);
	while (bbx_reader_next(&r, &rec, NULL) == BBX_READ_OK) {
		if (rec.type == BBX_REC_PRESERVE) {
			cs->npreserve++;
			cs->how = rec.how;
			cs->size = rec.st.size;
			snprintf(cs->object, sizeof cs->object, "%s", rec.object ? rec.object : "");
		}
		if (!rec.object)
			continue;
		char p[PATH_MAX + 64];
		snprintf(p, sizeof p, "%s/%s", c->objects, rec.object);
		struct stat sb;
		ck_assert_msg(lstat(p, &sb) == 0, "record seq %llu names missing object %s",
			      (unsigned long long)rec.h.seq, rec.object);
		ck_assert_int_lt(nnamed, 64);
		snprintf(named[nnamed++], 32, "%s", rec.object);
	}
	bbx_reader_close(&r);
	char objs[64][32];
	cs->nobj = list_objects(c, objs, 64);
	for (int i = 0; i < cs->nobj; i++) {
		int found = 0;
		for (int k = 0; k < nnamed; k++)
			found |= !strcmp(objs[i], named[k]);
		ck_assert_msg(found, "stray object %s in objects/ named by no record", objs[i]);
	}
}

static int level_of_path(struct cctx *c, const char *path)
{
	struct stat sb;
	ck_assert_int_eq(lstat(path, &sb), 0);
	return bbx_state_level(c->run.st, sb.st_dev, sb.st_ino);
}

/* The workspace file still holds its original bytes (captures only read it). */
static void assert_file_intact(const struct cctx *c, size_t flen)
{
	size_t n;
	uint8_t *d = unit_read_file(c->file, &n);
	ck_assert_uint_eq(n, flen);
	ck_assert_mem_eq(d, c->orig, flen);
	free(d);
}

/* The object holds the file's original content. */
static void assert_object_is_preimage(const struct cctx *c, const char *object, size_t flen)
{
	char p[PATH_MAX + 64];
	snprintf(p, sizeof p, "%s/%s", c->objects, object);
	size_t n;
	uint8_t *d = unit_read_file(p, &n);
	ck_assert_uint_eq(n, flen);
	ck_assert_mem_eq(d, c->orig, flen);
	free(d);
}

static int cap_trunc(struct cctx *c)
{
	char resolved[PATH_MAX];
	struct bbx_pending pend;
	int rc = bbx_cap_open(&c->run, "open", c->file, O_WRONLY | O_TRUNC, 0, resolved, &pend);
	ck_assert_uint_eq(pend.seq, 0); /* an existing file: no creation pending */
	return rc;
}

/* Checks a failed capture left nothing behind and raised nothing. */
static void assert_failed_clean(struct cctx *c, int rc, int want, const char *what, int nth)
{
	ck_assert_msg(rc == -want, "%s, write %d: returned %d, want %d", what, nth, rc, -want);
	struct cscan cs;
	scan_run(c, &cs);
	ck_assert_msg(cs.nobj == 0, "%s, write %d: %d object(s) left in objects/", what, nth,
		      cs.nobj);
	ck_assert_int_eq(cs.npreserve, 0);
	ck_assert_int_eq(level_of_path(c, c->file), BBX_LVL_NONE);
	assert_file_intact(c, CAP_FILE_LEN);
}

/* open(O_TRUNC) of a 40000-byte file with copy_file_range unavailable (EXDEV), so the
 * pre-image is copied by write(): writes 1-3 are the object, write 4 the PRESERVE
 * record.  Each of them failing (errno, or short) must fail the capture cleanly. */
START_TEST(test_cap_open_trunc_nth_write)
{
	static const struct { int mode, err; const char *name; } modes[] = {
		{INJ_ERRNO, ENOSPC, "ENOSPC"},
		{INJ_ERRNO, EIO, "EIO"},
		{INJ_SHORT, 0, "short"},
	};
	for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
		int nth, failures = 0, copied = 0;
		for (nth = 1; nth < 20; nth++) {
			struct cctx *c = cctx_new("trunc", CAP_FILE_LEN);
			inj_reset();
			inj.cfr_err = EXDEV;
			inj.mode = modes[m].mode;
			inj.err = modes[m].err;
			inj.fail_at = nth;
			int rc = cap_trunc(c);
			int injected = inj.calls >= nth;
			if (!injected) {
				ck_assert_int_eq(rc, 0);
				struct cscan cs;
				scan_run(c, &cs);
				ck_assert_int_eq(cs.js.n, 1);
				ck_assert_int_eq(cs.npreserve, 1);
				ck_assert_int_eq(cs.nobj, 1);
				ck_assert(cs.how == BBX_HOW_COPY || cs.how == BBX_HOW_REFLINK);
				copied = cs.how == BBX_HOW_COPY;
				ck_assert_uint_eq(cs.size, CAP_FILE_LEN);
				assert_object_is_preimage(c, cs.object, CAP_FILE_LEN);
				ck_assert_int_eq(level_of_path(c, c->file), BBX_LVL_CONTENT);
				cctx_free(c);
				break;
			}
			failures++;
			/* A short object write is reported as ENOSPC, a short record as EIO. */
			int torn_record = modes[m].mode == INJ_SHORT && inj.failed_fd == c->run.w.fd;
			int want = modes[m].mode == INJ_ERRNO ? modes[m].err : torn_record ? EIO : ENOSPC;
			assert_failed_clean(c, rc, want, modes[m].name, nth);
			struct jscan js;
			scan_journal(c->journal, &js);
			ck_assert_int_eq(js.n, 0);
			ck_assert_int_eq(js.torn, torn_record); /* a torn record is no record */
			c->bad_ok = (size_t)torn_record;

			/* Still the same run: a retry without faults captures normally. */
			inj_reset();
			ck_assert_int_eq(cap_trunc(c), 0);
			struct cscan cs;
			scan_run(c, &cs);
			ck_assert_int_eq(cs.npreserve, 1);
			ck_assert_int_eq(cs.nobj, 1);
			assert_object_is_preimage(c, cs.object, CAP_FILE_LEN);
			cctx_free(c);
		}
		ck_assert_int_lt(nth, 20);
		/* Three object writes and the record failed in turn (only the record when the
		 * filesystem reflinked). */
		ck_assert_int_eq(failures, copied ? 4 : 1);
	}
}
END_TEST

/* copy_file_range failing with ENOSPC (after copying part of the file, or at once). */
/* The same truncation once the run knows its objects directory cannot reflink: the
 * pre-image is packed into objects/pack (copy_file_range unavailable: pwrite, three
 * calls of 16 KiB at most, then the record).  Each write failing in turn fails the
 * capture cleanly (no PRESERVE, the file intact and not raised); the retry packs it
 * at a range of its own after the failed attempts' reserved ones, byte for byte. */
START_TEST(test_cap_open_trunc_pack_nth_write)
{
	int nth, failures = 0;
	for (nth = 1; nth < 20; nth++) {
		struct cctx *c = cctx_new("pack", CAP_FILE_LEN);
		uint64_t *pk = bbx_state_pack(c->run.st);
		ck_assert_ptr_nonnull(pk);
		pk[BBX_PACK_FLAGS] |= BBX_PACK_NOCLONE;
		bbx_pack_max = 1u << 20;
		inj_reset();
		inj.cfr_err = EXDEV;
		inj.mode = INJ_ERRNO;
		inj.err = ENOSPC;
		inj.fail_at = nth;
		int rc = cap_trunc(c);
		int injected = inj.calls >= nth;
		if (injected) {
			failures++;
			ck_assert_int_eq(rc, -ENOSPC);
			struct cscan cs;
			scan_run(c, &cs);
			ck_assert_int_eq(cs.npreserve, 0);
			ck_assert_int_eq(level_of_path(c, c->file), BBX_LVL_NONE);
			assert_file_intact(c, CAP_FILE_LEN);
			inj_reset();
			ck_assert_int_eq(cap_trunc(c), 0);
		} else {
			ck_assert_int_eq(rc, 0);
		}
		struct bbx_reader r;
		struct bbx_rec rec;
		int n = 0;
		ck_assert_int_eq(bbx_reader_open(&r, c->journal), 0);
		while (bbx_reader_next(&r, &rec, NULL) == BBX_READ_OK) {
			if (rec.type != BBX_REC_PRESERVE)
				continue;
			n++;
			ck_assert_uint_eq(rec.how, BBX_HOW_PACKED);
			ck_assert_str_eq(rec.object, BBX_PACK_OBJECT);
			ck_assert(rec.has_offset && rec.has_size);
			ck_assert_uint_eq(rec.size, CAP_FILE_LEN);
			/* after the failed attempt's range, if there was one */
			ck_assert_uint_eq(rec.offset, injected ? CAP_FILE_LEN : 0);
			char p[PATH_MAX + 64];
			snprintf(p, sizeof p, "%s/" BBX_PACK_OBJECT, c->objects);
			size_t len;
			uint8_t *d = unit_read_file(p, &len);
			ck_assert_uint_ge(len, rec.offset + rec.size);
			ck_assert_mem_eq(d + rec.offset, c->orig, CAP_FILE_LEN);
			free(d);
		}
		bbx_reader_close(&r);
		ck_assert_int_eq(n, 1);
		ck_assert_int_eq(level_of_path(c, c->file), BBX_LVL_CONTENT);
		cctx_free(c);
		if (!injected)
			break;
	}
	ck_assert_int_lt(nth, 20);
	ck_assert_int_eq(failures, 4); /* three writes into the pack, then the record */
}
END_TEST

START_TEST(test_cap_open_trunc_cfr_enospc)
{
	for (int partial = 0; partial <= 1; partial++) {
		struct cctx *c = cctx_new("cfr", CAP_FILE_LEN);
		inj.cfr_err = ENOSPC;
		inj.cfr_first_limit = partial ? 1000 : 0;
		int rc = cap_trunc(c);
		if (inj.cfr_calls == 0) {
			/* Reflinked: no copy was needed; still consistent. */
			ck_assert_int_eq(rc, 0);
			struct cscan cs;
			scan_run(c, &cs);
			ck_assert_uint_eq(cs.how, BBX_HOW_REFLINK);
		} else {
			ck_assert_int_eq(inj.cfr_calls, partial ? 2 : 1);
			assert_failed_clean(c, rc, ENOSPC, partial ? "cfr partial" : "cfr", 0);
			struct jscan js;
			scan_journal(c->journal, &js);
			ck_assert_int_eq(js.n, 0);
			ck_assert(!js.torn);
			ck_assert_int_eq(inj.calls, 0); /* no record was even attempted */
		}
		cctx_free(c);
	}
}
END_TEST

/* open(O_TRUNC) of an empty file only records its size: a failed record is refused. */
START_TEST(test_cap_open_trunc_empty_file)
{
	struct cctx *c = cctx_new("trempty", 0);
	inj.mode = INJ_ERRNO;
	inj.fail_at = 1;
	inj.err = ENOSPC;
	ck_assert_int_eq(cap_trunc(c), -ENOSPC);
	ck_assert_int_eq(level_of_path(c, c->file), BBX_LVL_NONE);
	struct cscan cs;
	scan_run(c, &cs);
	ck_assert_int_eq(cs.js.n, 0);
	inj_reset();
	ck_assert_int_eq(cap_trunc(c), 0);
	scan_run(c, &cs);
	ck_assert_int_eq(cs.js.n, 1);
	ck_assert_int_eq(cs.js.type[0], BBX_REC_SIZE);
	ck_assert_int_eq(level_of_path(c, c->file), BBX_LVL_CONTENT);
	cctx_free(c);
}
END_TEST

/* A second O_TRUNC of a captured file writes nothing. */
START_TEST(test_cap_open_trunc_once)
{
	struct cctx *c = cctx_new("tronce", CAP_FILE_LEN);
	ck_assert_int_eq(cap_trunc(c), 0);
	off_t size = unit_file_size(c->journal);
	int calls = inj.calls;
	ck_assert_int_eq(cap_trunc(c), 0);
	ck_assert_int_eq(inj.calls, calls);
	ck_assert_int_eq(unit_file_size(c->journal), size);
	struct cscan cs;
	scan_run(c, &cs);
	ck_assert_int_eq(cs.npreserve, 1);
	ck_assert_int_eq(cs.nobj, 1);
	assert_object_is_preimage(c, cs.object, CAP_FILE_LEN);
	cctx_free(c);
}
END_TEST

/* unlink: write 1 is DIRMETA of the parent, then the file is hard-linked into objects/,
 * write 2 is PRESERVE.  Either failing: refused, no object left. */
START_TEST(test_cap_remove_nth_write)
{
	const int errs[] = {ENOSPC, EIO};
	for (size_t e = 0; e < 2; e++) {
		int nth;
		for (nth = 1; nth < 10; nth++) {
			struct cctx *c = cctx_new("rm", CAP_FILE_LEN);
			inj_reset();
			inj.mode = INJ_ERRNO;
			inj.fail_at = nth;
			inj.err = errs[e];
			int rc = bbx_cap_remove(&c->run, "unlink", c->file);
			struct stat sb;
			ck_assert_int_eq(lstat(c->file, &sb), 0);
			if (inj.calls < nth) {
				ck_assert_int_eq(rc, 0);
				struct cscan cs;
				scan_run(c, &cs);
				ck_assert_int_eq(cs.js.n, 2);
				ck_assert_int_eq(cs.js.type[0], BBX_REC_DIRMETA);
				ck_assert_int_eq(cs.js.type[1], BBX_REC_PRESERVE);
				ck_assert_uint_eq(cs.how, BBX_HOW_LINK);
				char p[PATH_MAX + 64];
				snprintf(p, sizeof p, "%s/%s", c->objects, cs.object);
				struct stat ob;
				ck_assert_int_eq(lstat(p, &ob), 0);
				ck_assert_uint_eq(ob.st_ino, c->fst.st_ino); /* the inode itself */
				ck_assert_uint_eq(sb.st_nlink, 2);
				cctx_free(c);
				break;
			}
			assert_failed_clean(c, rc, errs[e], "unlink", nth);
			ck_assert_uint_eq(sb.st_nlink, 1); /* the object link was removed */
			struct jscan js;
			scan_journal(c->journal, &js);
			ck_assert_int_eq(js.n, nth - 1); /* DIRMETA only if it was written */
			ck_assert(!js.torn);
			/* The parent's DIRMETA counts only once durable. */
			ck_assert_int_eq(level_of_path(c, c->ws),
					 nth == 1 ? BBX_LVL_NONE : BBX_LVL_CONTENT);
			cctx_free(c);
		}
		ck_assert_int_eq(nth, 3);
	}
}
END_TEST

/* unlink with linkat failing with EIO: refused, nothing in objects/. */
START_TEST(test_cap_remove_linkat_eio)
{
	struct cctx *c = cctx_new("rmlink", CAP_FILE_LEN);
	inj.link_err = EIO;
	int rc = bbx_cap_remove(&c->run, "unlink", c->file);
	ck_assert_int_eq(inj.link_calls, 1);
	assert_failed_clean(c, rc, EIO, "linkat", 0);
	struct jscan js;
	scan_journal(c->journal, &js);
	ck_assert_int_eq(js.n, 1);
	ck_assert_int_eq(js.type[0], BBX_REC_DIRMETA);
	cctx_free(c);
}
END_TEST

/* unlink where linkat cannot link (EXDEV: objects/ on another filesystem), so the
 * content is copied; copy_file_range then fails with ENOSPC. */
START_TEST(test_cap_remove_copy_cfr_enospc)
{
	struct cctx *c = cctx_new("rmcfr", CAP_FILE_LEN);
	inj.link_err = EXDEV;
	inj.cfr_err = ENOSPC;
	int rc = bbx_cap_remove(&c->run, "unlink", c->file);
	if (inj.cfr_calls == 0) {
		ck_assert_int_eq(rc, 0); /* reflinked */
	} else {
		assert_failed_clean(c, rc, ENOSPC, "unlink copy", 0);
		struct jscan js;
		scan_journal(c->journal, &js);
		ck_assert_int_eq(js.n, 1);
		ck_assert_int_eq(js.type[0], BBX_REC_DIRMETA);
	}
	cctx_free(c);
}
END_TEST

/* unlink by copy with write(): DIRMETA, three object writes, PRESERVE. */
START_TEST(test_cap_remove_copy_nth_write)
{
	int nth, failures = 0, copied = 0;
	for (nth = 1; nth < 20; nth++) {
		struct cctx *c = cctx_new("rmcopy", CAP_FILE_LEN);
		inj_reset();
		inj.link_err = EXDEV;
		inj.cfr_err = EXDEV;
		inj.mode = INJ_ERRNO;
		inj.err = ENOSPC;
		inj.fail_at = nth;
		int rc = bbx_cap_remove(&c->run, "unlink", c->file);
		if (inj.calls < nth) {
			ck_assert_int_eq(rc, 0);
			struct cscan cs;
			scan_run(c, &cs);
			ck_assert_int_eq(cs.npreserve, 1);
			ck_assert(cs.how == BBX_HOW_COPY || cs.how == BBX_HOW_REFLINK);
			copied = cs.how == BBX_HOW_COPY;
			assert_object_is_preimage(c, cs.object, CAP_FILE_LEN);
			cctx_free(c);
			break;
		}
		failures++;
		assert_failed_clean(c, rc, ENOSPC, "unlink copy", nth);
		struct jscan js;
		scan_journal(c->journal, &js);
		ck_assert_int_eq(js.n, nth == 1 ? 0 : 1);
		cctx_free(c);
	}
	/* DIRMETA, three object writes, PRESERVE (DIRMETA, PRESERVE when reflinked). */
	ck_assert_int_eq(failures, copied ? 5 : 2);
}
END_TEST

/* The PRESERVE record of an unlink written short: -EIO, the torn bytes are no record,
 * and the object link is removed. */
START_TEST(test_cap_remove_short_record)
{
	struct cctx *c = cctx_new("rmshort", CAP_FILE_LEN);
	inj.mode = INJ_SHORT;
	inj.fail_at = 2;
	inj.short_len = 40;
	int rc = bbx_cap_remove(&c->run, "unlink", c->file);
	assert_failed_clean(c, rc, EIO, "unlink short", 2);
	struct jscan js;
	scan_journal(c->journal, &js);
	ck_assert_int_eq(js.n, 1);
	ck_assert(js.torn);
	ck_assert_uint_eq(js.torn_len, 40);
	cctx_free(c);
}
END_TEST

/* ---- [journal] sync ---- */

static void set_sync(struct cctx *c, int mode)
{
	ck_assert_int_eq(bbx_run_set_sync(c->rundir, mode), 0);
	ck_assert_int_eq(bbx_run_sync_mode(&c->run), mode);
	inj_reset(); /* set_sync's own fsyncs of the directory are not counted below */
}

/* off: not one fsync or fdatasync, whatever is captured. */
START_TEST(test_sync_off)
{
	struct cctx *c = cctx_new("syncoff", CAP_FILE_LEN);
	ck_assert_int_eq(bbx_run_sync_mode(&c->run), BBX_SYNC_OFF);
	ck_assert_int_eq(cap_trunc(c), 0);
	ck_assert_int_eq(bbx_cap_remove(&c->run, "unlink", c->file), 0);
	ck_assert_int_eq(inj.fdatasync_calls, 0);
	ck_assert_int_eq(inj.fsync_calls, 0);
	cctx_free(c);
}
END_TEST

/* always: the PRESERVE's fdatasync, and before it the object, its new shard and
 * objects/ fsynced; a removal's hard link: its shard directory, then the record. */
START_TEST(test_sync_always)
{
	struct cctx *c = cctx_new("syncalw", CAP_FILE_LEN);
	set_sync(c, BBX_SYNC_ALWAYS);
	unsigned long syncs = bbx_run_syncs;
	ck_assert_int_eq(cap_trunc(c), 0);
	ck_assert_int_eq(inj.fdatasync_calls, 1);
	ck_assert_int_eq(inj.fsync_calls, 3); /* objects/ (new shard), the object, the shard */
	ck_assert_uint_eq(bbx_run_syncs, syncs + 1);
	struct cscan cs;
	scan_run(c, &cs);
	assert_object_is_preimage(c, cs.object, CAP_FILE_LEN);
	inj_reset();
	ck_assert_int_eq(bbx_cap_remove(&c->run, "unlink", c->file), 0);
	/* DIRMETA is covered by the PRESERVE's sync: one fdatasync for both */
	ck_assert_int_eq(inj.fdatasync_calls, 1);
	ck_assert_int_ge(inj.fsync_calls, 1);
	/* a NOTE (no mutation follows it) is not synced */
	inj_reset();
	ck_assert_int_eq(bbx_cap_note(&c->run, "unit", NULL, "no sync"), 0);
	ck_assert_int_eq(inj.fdatasync_calls, 0);
	cctx_free(c);
}
END_TEST

/* group: a record that an fdatasync begun after it already covered is not synced
 * again; with always it is. */
START_TEST(test_sync_group_shares)
{
	struct cctx *c = cctx_new("syncgrp", CAP_FILE_LEN);
	set_sync(c, BBX_SYNC_GROUP);
	/* record A (a NOTE: written, not synced), then B (a CREATE: synced) */
	ck_assert_int_eq(bbx_cap_note(&c->run, "unit", NULL, "record A"), 0);
	uint64_t end_a = bbx_run_last_pos.end;
	ck_assert_uint_gt(end_a, 0);
	ck_assert_int_eq(inj.fdatasync_calls, 0);
	char path[PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/new", c->ws);
	struct bbx_pending pend;
	ck_assert_int_eq(bbx_cap_create(&c->run, "mkdir", path, BBX_KIND_DIR, 0755, NULL, &pend), 0);
	ck_assert_int_eq(inj.fdatasync_calls, 1);
	uint64_t end_b = bbx_run_last_pos.end;
	ck_assert_uint_gt(end_b, end_a);
	ck_assert_uint_eq(c->run.st->synced, end_b);
	/* A's writer, syncing late: covered by B's fdatasync, nothing to do */
	ck_assert_int_eq(bbx_run_sync(&c->run, end_a), 0);
	ck_assert_int_eq(bbx_run_sync(&c->run, end_b), 0);
	ck_assert_int_eq(inj.fdatasync_calls, 1);
	/* a record past the durable offset is synced, and raises it */
	ck_assert_int_eq(bbx_cap_note(&c->run, "unit", NULL, "record C"), 0);
	uint64_t end_c = bbx_run_last_pos.end;
	ck_assert_int_eq(bbx_run_sync(&c->run, end_c), 0);
	ck_assert_int_eq(inj.fdatasync_calls, 2);
	ck_assert_uint_eq(c->run.st->synced, end_c);
	/* always does not share */
	set_sync(c, BBX_SYNC_ALWAYS);
	ck_assert_int_eq(bbx_run_sync(&c->run, end_a), 0);
	ck_assert_int_eq(inj.fdatasync_calls, 1);
	cctx_free(c);
}
END_TEST

/* group: a writer that arrives while another holds the sync lock (its fdatasync
 * running) waits, and when that sync covered its record it makes none of its own. */
START_TEST(test_sync_group_queue)
{
	struct cctx *c = cctx_new("syncq", CAP_FILE_LEN);
	set_sync(c, BBX_SYNC_GROUP);
	pthread_mutex_t *mu = bbx_state_sync_lock(c->run.st);
	ck_assert_ptr_nonnull(mu);
	ck_assert_int_eq(bbx_cap_note(&c->run, "unit", NULL, "queued record"), 0);
	uint64_t end = bbx_run_last_pos.end;
	ck_assert_int_eq(pthread_mutex_lock(mu), 0); /* "another process is syncing" */
	int pfd[2];
	ck_assert_int_eq(pipe(pfd), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		inj_reset();
		int rc = bbx_run_sync(&c->run, end);
		char r = (char)(rc == 0 ? inj.fdatasync_calls : 99);
		(void)!write(pfd[1], &r, 1);
		_exit(0);
	}
	usleep(100000); /* the child is now waiting on the lock */
	char r = 0;
	struct pollfd pf = {.fd = pfd[0], .events = POLLIN};
	ck_assert_int_eq(poll(&pf, 1, 0), 0); /* ... and has not returned */
	__atomic_store_n(&c->run.st->synced, end, __ATOMIC_RELEASE); /* our "sync" covered it */
	ck_assert_int_eq(pthread_mutex_unlock(mu), 0);
	ck_assert_int_eq(read(pfd[0], &r, 1), 1);
	ck_assert_int_eq(r, 0); /* it returned without an fdatasync of its own */
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	close(pfd[0]);
	close(pfd[1]);
	/* A version 2 state file has no sync lock: group commit without the queue. */
	c->run.st->version = 2;
	ck_assert_ptr_null(bbx_state_sync_lock(c->run.st));
	ck_assert_int_eq(bbx_cap_note(&c->run, "unit", NULL, "v2 record"), 0);
	inj_reset();
	ck_assert_int_eq(bbx_run_sync(&c->run, bbx_run_last_pos.end), 0);
	ck_assert_int_eq(inj.fdatasync_calls, 1);
	ck_assert_uint_eq(c->run.st->synced, bbx_run_last_pos.end);
	c->run.st->version = BBX_STATE_VERSION;
	cctx_free(c);
}
END_TEST

/* A failed fdatasync refuses the call; the record (written) still names an object that
 * exists.  A failed fsync of the object refuses before any record. */
START_TEST(test_sync_failures)
{
	struct cctx *c = cctx_new("syncfail", CAP_FILE_LEN);
	set_sync(c, BBX_SYNC_ALWAYS);
	inj.fdatasync_err = EIO;
	ck_assert_int_eq(cap_trunc(c), -EIO);
	struct cscan cs;
	scan_run(c, &cs); /* consistent: the record's object exists */
	ck_assert_int_eq(cs.npreserve, 1);
	ck_assert_int_eq(cs.nobj, 1);
	ck_assert_int_eq(level_of_path(c, c->file), BBX_LVL_NONE);
	assert_file_intact(c, CAP_FILE_LEN);
	cctx_free(c);

	c = cctx_new("syncfail2", CAP_FILE_LEN);
	set_sync(c, BBX_SYNC_GROUP);
	inj.fsync_err = EIO;
	assert_failed_clean(c, cap_trunc(c), EIO, "object fsync", 0);
	scan_run(c, &cs);
	ck_assert_int_eq(cs.js.n, 0);
	cctx_free(c);
}
END_TEST

/* ---- [journal] max_preserve (the capture side; the shim's policy is t-preserve.sh) ---- */

static struct {
	int calls, ret;
	uint64_t size;
} ovh;

static int test_oversize(const char *op, const char *path, const struct stat *sb,
			 struct bbx_oversize *out)
{
	(void)op;
	(void)path;
	ovh.calls++;
	ovh.size = (uint64_t)sb->st_size;
	out->rule = "unit.ini:3 [journal] over_max_preserve";
	snprintf(out->reason, sizeof out->reason, "over the limit");
	return ovh.ret;
}

static void set_limit(uint64_t max, int ret)
{
	memset(&ovh, 0, sizeof ovh);
	ovh.ret = ret;
	bbx_preserve_max = max;
	bbx_cap_oversize = test_oversize;
}

START_TEST(test_oversize_refused)
{
	struct cctx *c = cctx_new("ovref", CAP_FILE_LEN);
	set_limit(CAP_FILE_LEN - 1, -EFBIG);
	int rc = cap_trunc(c);
	struct cscan cs;
	if (ovh.calls == 0) { /* reflinked: free, never limited */
		ck_assert_int_eq(rc, 0);
		scan_run(c, &cs);
		ck_assert_uint_eq(cs.how, BBX_HOW_REFLINK);
	} else {
		ck_assert_int_eq(ovh.calls, 1);
		ck_assert_uint_eq(ovh.size, CAP_FILE_LEN);
		ck_assert_int_eq(inj.cfr_calls, 0); /* decided before any byte was copied */
		assert_failed_clean(c, rc, EFBIG, "oversize", 0);
		scan_run(c, &cs);
		ck_assert_int_eq(cs.js.n, 0);
	}
	cctx_free(c);
}
END_TEST

START_TEST(test_oversize_lost)
{
	struct cctx *c = cctx_new("ovlost", CAP_FILE_LEN);
	set_limit(1000, 1);
	ck_assert_int_eq(cap_trunc(c), 0);
	struct cscan cs;
	scan_run(c, &cs);
	if (ovh.calls) {
		ck_assert_int_eq(cs.npreserve, 1);
		ck_assert_uint_eq(cs.how, BBX_HOW_LOST);
		ck_assert_int_eq(cs.nobj, 0);
		ck_assert_str_eq(cs.object, "");
		struct bbx_reader r;
		struct bbx_rec rec;
		ck_assert_int_eq(bbx_reader_open(&r, c->journal), 0);
		ck_assert_int_eq(bbx_reader_next(&r, &rec, NULL), BBX_READ_OK);
		ck_assert(rec.has_size && rec.size == CAP_FILE_LEN);
		ck_assert_str_eq(rec.rule, "unit.ini:3 [journal] over_max_preserve");
		ck_assert_str_eq(rec.reason, "over the limit");
		ck_assert(!rec.has_duration);
		bbx_reader_close(&r);
		/* nothing later keeps it either */
		ck_assert_int_eq(level_of_path(c, c->file), BBX_LVL_CONTENT);
	}
	cctx_free(c);
}
END_TEST

/* At the limit: copied, hook not asked; the record has SIZE and DURATION. */
START_TEST(test_oversize_at_limit)
{
	struct cctx *c = cctx_new("ovat", CAP_FILE_LEN);
	set_limit(CAP_FILE_LEN, -EFBIG);
	ck_assert_int_eq(cap_trunc(c), 0);
	ck_assert_int_eq(ovh.calls, 0);
	struct bbx_reader r;
	struct bbx_rec rec;
	ck_assert_int_eq(bbx_reader_open(&r, c->journal), 0);
	ck_assert_int_eq(bbx_reader_next(&r, &rec, NULL), BBX_READ_OK);
	ck_assert_int_eq(rec.type, BBX_REC_PRESERVE);
	ck_assert(rec.has_size && rec.size == CAP_FILE_LEN);
	ck_assert(rec.how == BBX_HOW_REFLINK || rec.has_duration);
	bbx_reader_close(&r);
	cctx_free(c);
}
END_TEST

/* A removal keeps a hard link (free: never limited); when the link is impossible
 * (EXDEV: another filesystem) the copy is limited like any other. */
START_TEST(test_oversize_remove)
{
	struct cctx *c = cctx_new("ovrm", CAP_FILE_LEN);
	set_limit(1000, -EFBIG);
	ck_assert_int_eq(bbx_cap_remove(&c->run, "unlink", c->file), 0);
	ck_assert_int_eq(ovh.calls, 0);
	cctx_free(c);

	c = cctx_new("ovrm2", CAP_FILE_LEN);
	set_limit(1000, -EFBIG);
	inj.link_err = EXDEV;
	int rc = bbx_cap_remove(&c->run, "unlink", c->file);
	if (ovh.calls) {
		ck_assert_int_eq(rc, -EFBIG);
		struct cscan cs;
		scan_run(c, &cs);
		ck_assert_int_eq(cs.npreserve, 0);
		ck_assert_int_eq(cs.nobj, 0);
	}
	cctx_free(c);

	c = cctx_new("ovrm3", CAP_FILE_LEN);
	set_limit(1000, 1);
	inj.link_err = EXDEV;
	ck_assert_int_eq(bbx_cap_remove(&c->run, "unlink", c->file), 0);
	if (ovh.calls) {
		struct cscan cs;
		scan_run(c, &cs);
		ck_assert_int_eq(cs.npreserve, 1);
		ck_assert_uint_eq(cs.how, BBX_HOW_LOST);
		ck_assert_int_eq(cs.nobj, 0);
	}
	cctx_free(c);
}
END_TEST

/* A creation killed before its journal existed (bbx-undo killed while it made
 * DIR/undo: CI, session 19) leaves objects/, state and maybe meta: the next
 * bbx_run_create into that directory clears them and succeeds.  Anything else in the
 * directory (a foreign file, a meta that is not ours, a non-empty objects/, a state
 * file with another first word) is still -ENOTEMPTY, and nothing is removed. */
static void make_unfinished(const char *run, int with_meta)
{
	char p[PATH_MAX + 32], done[PATH_MAX + 16];
	char tmp[PATH_MAX + 16];
	snprintf(tmp, sizeof tmp, "%s.full", run);
	ck_assert_int_eq(bbx_run_create(tmp, "unit test", NULL, 1, done, sizeof done), 0);
	ck_assert_int_eq(mkdir(run, 0700), 0);
	snprintf(p, sizeof p, "%s/objects", run);
	ck_assert_int_eq(mkdir(p, 0700), 0);
	char src[PATH_MAX + 32];
	for (const char *f = with_meta ? "state\0meta\0" : "state\0"; *f; f += strlen(f) + 1) {
		snprintf(src, sizeof src, "%s/%s", tmp, f);
		snprintf(p, sizeof p, "%s/%s", run, f);
		ck_assert_int_eq(rename(src, p), 0);
	}
}

START_TEST(test_run_create_after_kill)
{
	char base[PATH_MAX], run[PATH_MAX + 16], out[PATH_MAX + 16], p[PATH_MAX + 32];
	unit_mkdtemp(base, sizeof base, "rkill");
	struct stat sb;
	/* killed after the state file, and after meta: both resume */
	for (int m = 0; m < 2; m++) {
		snprintf(run, sizeof run, "%s/run%d", base, m);
		make_unfinished(run, m);
		ck_assert_int_eq(bbx_run_create(run, "unit test", NULL, 1, out, sizeof out), 0);
		struct bbx_run r;
		ck_assert_int_eq(bbx_run_open(&r, run), 0);
		bbx_run_close(&r);
		snprintf(p, sizeof p, "%s/journal", run);
		ck_assert_int_eq(stat(p, &sb), 0);
	}
	/* killed inside bbx_state_create: allocated, header not yet written */
	snprintf(run, sizeof run, "%s/zero", base);
	make_unfinished(run, 0);
	snprintf(p, sizeof p, "%s/state", run);
	int fd = open(p, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	uint32_t zero = 0;
	ck_assert_int_eq(pwrite(fd, &zero, sizeof zero, 0), (ssize_t)sizeof zero);
	close(fd);
	ck_assert_int_eq(bbx_run_create(run, "unit test", NULL, 1, out, sizeof out), 0);

	/* not ours: refused, and every entry stays */
	static const char *const foreign[] = {"notes.txt", "meta", "objects/x", "state"};
	/* an "objects" that is a file is not ours either */
	snprintf(run, sizeof run, "%s/objfile", base);
	ck_assert_int_eq(mkdir(run, 0700), 0);
	snprintf(p, sizeof p, "%s/objects", run);
	fd = open(p, O_WRONLY | O_CREAT, 0600);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(bbx_run_create(run, "unit test", NULL, 1, out, sizeof out), -ENOTEMPTY);
	ck_assert_int_eq(stat(p, &sb), 0);
	ck_assert(S_ISREG(sb.st_mode));
	for (size_t i = 0; i < sizeof foreign / sizeof *foreign; i++) {
		snprintf(run, sizeof run, "%s/foreign%zu", base, i);
		make_unfinished(run, 0);
		snprintf(p, sizeof p, "%s/%s", run, foreign[i]);
		fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, "user data", 9), 9);
		close(fd);
		ck_assert_int_eq(bbx_run_create(run, "unit test", NULL, 1, out, sizeof out),
				 -ENOTEMPTY);
		ck_assert_int_eq(stat(p, &sb), 0);
		ck_assert_int_eq(sb.st_size, 9);
		snprintf(p, sizeof p, "%s/state", run);
		ck_assert_int_eq(stat(p, &sb), 0);
		snprintf(p, sizeof p, "%s/objects", run);
		ck_assert_int_eq(stat(p, &sb), 0);
	}
}
END_TEST

/* bbx_run_open names the run by its canonical path however it is given: as it is (one
 * openat2 with RESOLVE_NO_SYMLINKS proves it), or through realpath when the words hold
 * a symlink, a '.', a '//' or a trailing '/'.  The "never write into the journal"
 * checks compare canonical paths with it. */
START_TEST(test_run_open_canonical)
{
	char base[PATH_MAX], canon[PATH_MAX], run[PATH_MAX + 16], out[PATH_MAX + 16];
	char link[PATH_MAX + 16], given[PATH_MAX + 64];
	unit_mkdtemp(base, sizeof base, "rcanon");
	ck_assert_ptr_nonnull(realpath(base, canon));
	snprintf(run, sizeof run, "%s/run", canon);
	ck_assert_int_eq(bbx_run_create(run, "unit test", NULL, 1, out, sizeof out), 0);
	snprintf(link, sizeof link, "%s/link", canon);
	ck_assert_int_eq(symlink(canon, link), 0);
	struct stat sb;
	ck_assert_int_eq(stat(run, &sb), 0);
	static const char *const tails[] = {"/run", "/link/run", "/run/", "/./run", "//run",
					    "/run/../run"};
	for (size_t i = 0; i < sizeof tails / sizeof *tails; i++) {
		snprintf(given, sizeof given, "%s%s", canon, tails[i]);
		struct bbx_run r;
		ck_assert_int_eq(bbx_run_open(&r, given), 0);
		ck_assert_msg(!strcmp(r.dir, run), "%s opened as %s, not %s", given, r.dir, run);
		ck_assert_uint_eq(r.dirlen, strlen(run));
		ck_assert_uint_eq(r.jdev, sb.st_dev);
		ck_assert_uint_eq(r.jino, sb.st_ino);
		bbx_run_close(&r);
	}
	struct bbx_run r;
	snprintf(given, sizeof given, "%s/missing", canon);
	ck_assert_int_eq(bbx_run_open(&r, given), -ENOENT);
}
END_TEST

/* ---- the kept proofs of directory names (journal/path.c, bbx_dtab) ---- */

/* Two directories whose inode numbers meet in the table (ino % BBX_DTAB_N) and a third
 * that takes their slot of the four: both proofs given up must be found again, by name
 * (bbx_dname_known) and by identity (bbx_path_abs through a descriptor).  Direct-mapped,
 * the second evicted overwrote the first (t-cost's shards case failed ~1 run in 25). */
START_TEST(test_dtab_collision)
{
	struct cctx *c = cctx_new("dtab", 16);
	enum { MAXD = BBX_DTAB_N + 8 };
	static uint64_t ino[MAXD];
	char p[PATH_MAX + 64];
	int a = -1, b = -1, n;
	for (n = 0; n < MAXD && b < 0; n++) {
		struct stat sb;
		snprintf(p, sizeof p, "%s/d%d", c->ws, n);
		ck_assert_int_eq(mkdir(p, 0755), 0);
		ck_assert_int_eq(lstat(p, &sb), 0);
		ino[n] = sb.st_ino;
		for (int i = 0; i < n && b < 0; i++)
			if (ino[i] % BBX_DTAB_N == ino[n] % BBX_DTAB_N)
				a = i, b = n;
	}
	ck_assert_int_ge(b, 0); /* pigeonhole: BBX_DTAB_N + 1 directories suffice */
	int k = -1; /* a third directory in the same slot of the four, elsewhere in the table */
	for (int i = 0; i < n && k < 0; i++)
		if (i != a && i != b && ino[i] % BBX_DNAME_SLOTS == ino[a] % BBX_DNAME_SLOTS &&
		    ino[i] % BBX_DTAB_N != ino[a] % BBX_DTAB_N)
			k = i;
	if (k < 0) {
		for (; k < 0 && n < MAXD + 64; n++) {
			struct stat sb;
			snprintf(p, sizeof p, "%s/d%d", c->ws, n);
			ck_assert_int_eq(mkdir(p, 0755), 0);
			ck_assert_int_eq(lstat(p, &sb), 0);
			if (sb.st_ino % BBX_DNAME_SLOTS == ino[a] % BBX_DNAME_SLOTS &&
			    sb.st_ino % BBX_DTAB_N != ino[a] % BBX_DTAB_N)
				k = n;
		}
	}
	ck_assert_int_ge(k, 0);
	bbx_stat_epoch = 1;
	uint64_t gen = bbx_dname_gen();
	ck_assert_uint_ne(gen, 0);
	char pa[PATH_MAX + 64], pb[PATH_MAX + 64], pk[PATH_MAX + 64];
	snprintf(pa, sizeof pa, "%s/d%d", c->ws, a);
	snprintf(pb, sizeof pb, "%s/d%d", c->ws, b);
	snprintf(pk, sizeof pk, "%s/d%d", c->ws, k);
	struct stat sa, sbb, sk;
	ck_assert_int_eq(lstat(pa, &sa), 0);
	ck_assert_int_eq(lstat(pb, &sbb), 0);
	ck_assert_int_eq(lstat(pk, &sk), 0);
	bbx_dname_put(pa, &sa, gen);
	bbx_dname_put(pb, &sbb, gen); /* A given up to the table */
	bbx_dname_put(pk, &sk, gen);  /* B given up, to A's place in it */
	struct stat got;
	ck_assert_int_eq(bbx_dname_known(pa, &got), 1);
	ck_assert_uint_eq(got.st_ino, sa.st_ino);
	ck_assert_int_eq(bbx_dname_known(pb, &got), 1);
	ck_assert_uint_eq(got.st_ino, sbb.st_ino);
	ck_assert_int_eq(bbx_dname_known(pk, &got), 1);
	/* By identity: a descriptor's name comes from the kept proof, not from /proc (the
	 * words are the ones kept: a second name of the directory, through a symlink, so
	 * that what was read shows). */
	const char *pp[2] = {pa, pb};
	char via[2][PATH_MAX + 64];
	for (int i = 0; i < 2; i++) {
		snprintf(via[i], sizeof via[i], "%s/via%d", c->ws, i);
		ck_assert_int_eq(symlink(pp[i], via[i]), 0);
		struct stat vs;
		ck_assert_int_eq(stat(via[i], &vs), 0);
		bbx_dname_put(via[i], &vs, gen); /* proved under the symlink's words ... */
		bbx_dname_put(pk, &sk, gen);     /* ... and given up to the table again */
	}
	for (int i = 0; i < 2; i++) {
		char out[PATH_MAX], want[3 * PATH_MAX];
		int fd = open(pp[i], O_RDONLY | O_DIRECTORY);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(bbx_path_abs(fd, "x", out, sizeof out), 0);
		snprintf(want, sizeof want, "%s/x", via[i]);
		ck_assert_str_eq(out, want);
		close(fd);
	}
	bbx_stat_epoch = 0;
	cctx_free(c);
}
END_TEST

/* ---- journal/str.h: the copy and the join, as snprintf would make them ---- */

START_TEST(test_str_as_snprintf)
{
	const char *v[] = {"", "a", "/", "/run/x", "0123456789abcdef"};
	for (size_t cap = 0; cap < 40; cap++)
		for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
			char want[40] = "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~", got[40];
			memcpy(got, want, sizeof got);
			int a = snprintf(want, cap, "%s", v[i]), b = bbx_scopy(got, cap, v[i]);
			ck_assert_int_eq(a, b);
			ck_assert_mem_eq(want, got, sizeof got);
			for (size_t j = 0; j < sizeof v / sizeof *v; j++) {
				memset(want, '~', sizeof want);
				memset(got, '~', sizeof got);
				a = snprintf(want, cap, "%s/%s", v[i], v[j]);
				b = bbx_sjoin(got, cap, v[i], v[j]);
				ck_assert_int_eq(a, b);
				ck_assert_mem_eq(want, got, sizeof got);
			}
		}
	/* a descriptor's name, "/proc/self/fd/%d" */
	const int fds[] = {0, 7, 48, 1000, 1234567, INT_MAX, -1, -100, INT_MIN};
	for (size_t i = 0; i < sizeof fds / sizeof *fds; i++)
		for (size_t cap = 0; cap < 40; cap++) {
			char want[40] = "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~", got[40];
			memcpy(got, want, sizeof got);
			int a = snprintf(want, cap, "/proc/self/fd/%d", fds[i]);
			ck_assert_int_eq(bbx_fd_path(got, cap, fds[i]), a);
			ck_assert_mem_eq(want, got, sizeof got);
		}
	/* the preserved copies' names, "%02x/%llu" and "%s/objects/%02x/%llu" */
	const uint64_t seqs[] = {0, 1, 9, 10, 255, 256, 123456789, UINT64_MAX};
	struct bbx_run r = {0};
	snprintf(r.dir, sizeof r.dir, "/j");
	for (size_t i = 0; i < sizeof seqs / sizeof *seqs; i++)
		for (size_t cap = 1; cap < 40; cap++) {
			char want[40], got[40];
			int a = snprintf(want, cap, "%02x/%llu", bbx_run_object_shard(seqs[i]),
					 (unsigned long long)seqs[i]);
			ck_assert_int_eq(bbx_run_object_name(seqs[i], got, cap),
					 (size_t)a >= cap ? -ENAMETOOLONG : 0);
			ck_assert_str_eq(got, want);
			a = snprintf(want, cap, "/j/objects/%02x/%llu", bbx_run_object_shard(seqs[i]),
				     (unsigned long long)seqs[i]);
			ck_assert_int_eq(bbx_run_object_path(&r, seqs[i], got, cap),
					 (size_t)a >= cap ? -ENAMETOOLONG : 0);
			ck_assert_str_eq(got, want);
		}
}
END_TEST

static Suite *writer_suite(void)
{
	Suite *s = suite_create("writer");
	TCase *tc = tcase_create("writer");
	tcase_add_checked_fixture(tc, inj_setup, inj_teardown);
	tcase_add_test(tc, test_writer_appends_exact_bytes);
	tcase_add_test(tc, test_writer_open_errors);
	tcase_add_test(tc, test_writer_nth_write_fails);
	tcase_add_test(tc, test_writer_short_write);
	tcase_add_test(tc, test_writer_eintr_retried);
	tcase_add_test(tc, test_run_open_canonical);
	tcase_add_test(tc, test_run_create_after_kill);
	suite_add_tcase(s, tc);

	tc = tcase_create("identity");
	tcase_add_checked_fixture(tc, inj_setup, inj_teardown);
	tcase_add_test(tc, test_identity_dup2_over_fd);
	tcase_add_test(tc, test_identity_closed_fd_reopened);
	tcase_add_test(tc, test_identity_number_reused);
	tcase_add_test(tc, test_identity_reopen_fails_closed);
	tcase_add_test(tc, test_identity_journal_rdonly_at_fd);
	tcase_add_test(tc, test_identity_journal_noappend_at_fd);
	suite_add_tcase(s, tc);

	tc = tcase_create("capture");
	tcase_add_checked_fixture(tc, inj_setup, inj_teardown);
	tcase_add_test(tc, test_cap_open_trunc_nth_write);
	tcase_add_test(tc, test_cap_open_trunc_cfr_enospc);
	tcase_add_test(tc, test_cap_open_trunc_pack_nth_write);
	tcase_add_test(tc, test_cap_open_trunc_empty_file);
	tcase_add_test(tc, test_cap_open_trunc_once);
	tcase_add_test(tc, test_cap_remove_nth_write);
	tcase_add_test(tc, test_cap_remove_linkat_eio);
	tcase_add_test(tc, test_cap_remove_copy_cfr_enospc);
	tcase_add_test(tc, test_cap_remove_copy_nth_write);
	tcase_add_test(tc, test_cap_remove_short_record);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);

	tc = tcase_create("str");
	tcase_add_test(tc, test_str_as_snprintf);
	suite_add_tcase(s, tc);

	tc = tcase_create("dtab");
	tcase_add_test(tc, test_dtab_collision);
	suite_add_tcase(s, tc);

	tc = tcase_create("sync");
	tcase_add_checked_fixture(tc, inj_setup, inj_teardown);
	tcase_add_test(tc, test_sync_off);
	tcase_add_test(tc, test_sync_always);
	tcase_add_test(tc, test_sync_group_shares);
	tcase_add_test(tc, test_sync_group_queue);
	tcase_add_test(tc, test_sync_failures);
	suite_add_tcase(s, tc);

	tc = tcase_create("max_preserve");
	tcase_add_checked_fixture(tc, inj_setup, inj_teardown);
	tcase_add_test(tc, test_oversize_refused);
	tcase_add_test(tc, test_oversize_lost);
	tcase_add_test(tc, test_oversize_at_limit);
	tcase_add_test(tc, test_oversize_remove);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return unit_main(writer_suite()); }
