/* SPDX-License-Identifier: MIT
 *
 * check_chain.c - the journal's hash chain (journal/writer.c, bbx_writer_append_chained):
 * records appended by several processes at once chain in file order; the shared head,
 * count and byte total in the state file match the journal; and a process killed while
 * it holds the journal lock (before its write, after it, or in the middle of it) leaves
 * a chain the next writer continues correctly (EOWNERDEAD recovery).  Each case ends
 * with bbx_verify() (tools/verify.c) on the directory as well as with its own walk.
 */
#include "reader.h"
#include "record.h"
#include "run.h"
#include "state.h"
#include "sys.h"
#include "writer.h"
#include "tools/verify.h"
#include "unit.h"

#include <signal.h>
#include <stdlib.h>
#include <stdint.h>
#include <sys/wait.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

static void new_run(char *dir, size_t cap, const char *tag)
{
	char base[PATH_MAX];
	unit_mkdtemp(base, sizeof base, tag);
	char want[PATH_MAX + 8];
	snprintf(want, sizeof want, "%s/J", base);
	ck_assert_int_eq(bbx_run_create(want, "unit test", NULL, 1, dir, cap), 0);
}

static int emit_note(struct bbx_run *run, const char *text)
{
	uint8_t buf[512];
	struct bbx_enc e;
	bbx_enc_begin(&e, buf, sizeof buf, BBX_REC_NOTE);
	bbx_enc_str(&e, BBX_T_OP, "unit");
	bbx_enc_str(&e, BBX_T_TEXT, text);
	return bbx_run_emit(run, &e, bbx_state_next_seq(run->st));
}

struct walk {
	size_t n, bad_chain, torn_bytes;
	uint64_t head;
};

/* Walks the journal in file order: every record's CHAIN must be the trailer of the
 * record before it (0 first).  Damaged ranges are counted, not chained through. */
static struct walk walk_chain(const char *dir)
{
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s/journal", dir);
	struct bbx_reader r;
	ck_assert_int_eq(bbx_reader_open(&r, p), 0);
	struct walk w = {0};
	struct bbx_rec rec;
	size_t off;
	while (bbx_reader_next(&r, &rec, &off) == BBX_READ_OK) {
		ck_assert(rec.has_chain);
		if (rec.chain != w.head)
			w.bad_chain++;
		uint64_t t = 0;
		for (int i = 7; i >= 0; i--)
			t = t << 8 | r.map[off + rec.len - 8 + (size_t)i];
		ck_assert_uint_eq(t, XXH64(r.map + off, rec.len - 8, 0));
		w.head = t;
		w.n++;
	}
	w.torn_bytes = r.bad_bytes + r.torn_len;
	bbx_reader_close(&r);
	return w;
}

static int verify_quiet(const char *dir)
{
	FILE *f = fopen("/dev/null", "w");
	ck_assert_ptr_nonnull(f);
	int rc = bbx_verify(dir, f, false);
	fclose(f);
	return rc;
}

static void check_state_matches(const char *dir, const struct walk *w)
{
	struct bbx_run run;
	ck_assert_int_eq(bbx_run_open(&run, dir), 0);
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s/journal", dir);
	ck_assert_uint_eq(run.st->nrec, w->n);
	ck_assert_uint_eq(run.st->chain, w->head);
	ck_assert_uint_eq(run.st->end, (uint64_t)unit_file_size(p));
	bbx_run_close(&run);
}

/* ---- several processes append at once ---- */

#define NPROC 6
#define PER 400

/* NPROC processes each run body(run, k) on the run at dir (0, or their exit status),
 * then the file must be one clean chain of NPROC * PER records, matching the state's
 * head, count and end, and pass bbx_verify. */
static void writers_then_check(const char *dir, int (*body)(struct bbx_run *, int))
{
	pid_t kids[NPROC];
	for (int k = 0; k < NPROC; k++) {
		kids[k] = fork();
		ck_assert_int_ge(kids[k], 0);
		if (kids[k] == 0) {
			struct bbx_run run;
			if (bbx_run_open(&run, dir))
				_exit(2);
			int rc = body(&run, k);
			bbx_run_close(&run);
			_exit(rc);
		}
	}
	for (int k = 0; k < NPROC; k++) {
		int st;
		ck_assert_int_eq(waitpid(kids[k], &st, 0), kids[k]);
		ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	struct walk w = walk_chain(dir);
	ck_assert_uint_eq(w.n, NPROC * PER);
	ck_assert_uint_eq(w.bad_chain, 0);
	ck_assert_uint_eq(w.torn_bytes, 0);
	check_state_matches(dir, &w);
	ck_assert_int_eq(verify_quiet(dir), 0);
}

static int notes_one_by_one(struct bbx_run *run, int k)
{
	char text[64];
	for (int i = 0; i < PER; i++) {
		snprintf(text, sizeof text, "proc %d note %d", k, i);
		if (emit_note(run, text))
			return 3;
	}
	return 0;
}

START_TEST(test_concurrent_appends_chain)
{
	char dir[PATH_MAX];
	new_run(dir, sizeof dir, "conc");
	writers_then_check(dir, notes_one_by_one);
}
END_TEST

/* Even-numbered writers batch their notes (~200 bytes each: 400 fill three batches),
 * odd ones append them one at a time. */
static int notes_batched_or_not(struct bbx_run *run, int k)
{
	struct bbx_run_batch *b = malloc(sizeof *b);
	if (!b)
		return 4;
	b->len = 0;
	char text[256];
	int rc = 0;
	for (int i = 0; !rc && i < PER; i++) {
		snprintf(text, sizeof text, "proc %d note %d %0120d", k, i, 0);
		if (k % 2) {
			rc = emit_note(run, text);
		} else {
			uint8_t buf[512];
			struct bbx_enc e;
			bbx_enc_begin(&e, buf, sizeof buf, BBX_REC_NOTE);
			bbx_enc_str(&e, BBX_T_OP, "unit");
			bbx_enc_str(&e, BBX_T_TEXT, text);
			rc = bbx_run_batch_add(run, b, &e, bbx_state_next_seq(run->st));
		}
	}
	if (rc)
		rc = 3;
	else if (bbx_run_batch_flush(run, b) || b->len)
		rc = 5;
	free(b);
	return rc;
}

/* Batches (bbx_run_batch_add/flush: the seal's FINAL records, one write(2) per 64 KiB)
 * from some processes while others append one record at a time: every record of every
 * batch is linked to the one before it in the file, batches that fill up flush on
 * their own, and the state's head, count and end match the file. */
START_TEST(test_batches_chain_with_singles)
{
	char dir[PATH_MAX];
	new_run(dir, sizeof dir, "batch");
	writers_then_check(dir, notes_batched_or_not);
}
END_TEST

/* Without the lock the same load would break the chain: proof that the test above can
 * fail.  Two processes each keep their own idea of the head (state file version 1,
 * no lock) by appending unchained records patched with a private head. */
START_TEST(test_unlocked_appends_break_chain)
{
	char dir[PATH_MAX];
	new_run(dir, sizeof dir, "nolock");
	pid_t kids[2];
	for (int k = 0; k < 2; k++) {
		kids[k] = fork();
		ck_assert_int_ge(kids[k], 0);
		if (kids[k] == 0) {
			struct bbx_writer w;
			if (bbx_writer_open(&w, dir))
				_exit(2);
			uint64_t head = 0;
			for (int i = 0; i < PER; i++) {
				uint8_t buf[256];
				struct bbx_enc e;
				bbx_enc_begin(&e, buf, sizeof buf, BBX_REC_NOTE);
				bbx_enc_str(&e, BBX_T_TEXT, "unlocked");
				struct bbx_rec_hdr h = {.seq = (uint64_t)(k * PER + i + 1)};
				long len = bbx_enc_finish(&e, &h);
				head = bbx_rec_set_chain(buf, (size_t)len, head);
				if (bbx_writer_append(&w, buf, (size_t)len))
					_exit(3);
			}
			_exit(0);
		}
	}
	for (int k = 0; k < 2; k++) {
		int st;
		ck_assert_int_eq(waitpid(kids[k], &st, 0), kids[k]);
		ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	struct walk w = walk_chain(dir);
	ck_assert_uint_eq(w.n, 2 * PER);
	ck_assert_uint_gt(w.bad_chain, 0); /* the second process's first record at least */
	ck_assert_int_eq(verify_quiet(dir), 1);
}
END_TEST

/* ---- a holder of the lock is killed ---- */

static void die_now(void) { raise(SIGKILL); }

static ssize_t half_write(int fd, const void *buf, size_t n)
{
	return write(fd, buf, n / 2);
}

enum { DIE_BEFORE, DIE_AFTER, DIE_TORN };

/* Appends three notes, then a child dies holding the lock (how), then the parent
 * appends three more: the chain must hold across the dead holder. */
static void killed_holder(int how, size_t *n_out, struct walk *w_out, char *dir, size_t cap)
{
	new_run(dir, cap, "dead");
	struct bbx_run run;
	ck_assert_int_eq(bbx_run_open(&run, dir), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(emit_note(&run, "before"), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct bbx_run cr;
		if (bbx_run_open(&cr, dir))
			_exit(2);
		if (how == DIE_BEFORE) {
			pthread_mutex_lock(bbx_state_lock(cr.st));
			raise(SIGKILL);
		}
		if (how == DIE_TORN)
			bbx_sys.write = half_write;
		bbx_writer_test_hook = die_now;
		emit_note(&cr, "the dying process's record");
		_exit(4); /* not reached */
	}
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(emit_note(&run, "after"), 0);
	bbx_run_close(&run);
	struct walk w = walk_chain(dir);
	*n_out = w.n;
	*w_out = w;
}

START_TEST(test_holder_killed_before_write)
{
	char dir[PATH_MAX];
	size_t n;
	struct walk w;
	killed_holder(DIE_BEFORE, &n, &w, dir, sizeof dir);
	ck_assert_uint_eq(n, 6);
	ck_assert_uint_eq(w.bad_chain, 0);
	ck_assert_uint_eq(w.torn_bytes, 0);
	check_state_matches(dir, &w);
	ck_assert_int_eq(verify_quiet(dir), 0);
}
END_TEST

START_TEST(test_holder_killed_after_write)
{
	/* The dead process's record is in the file but the head was never moved past it:
	 * the next writer must chain after it, re-reading its trailer from the file. */
	char dir[PATH_MAX];
	size_t n;
	struct walk w;
	killed_holder(DIE_AFTER, &n, &w, dir, sizeof dir);
	ck_assert_uint_eq(n, 7);
	ck_assert_uint_eq(w.bad_chain, 0);
	ck_assert_uint_eq(w.torn_bytes, 0);
	check_state_matches(dir, &w);
	ck_assert_int_eq(verify_quiet(dir), 0);
}
END_TEST

START_TEST(test_holder_killed_mid_write)
{
	/* Half a record reached the file: those bytes are skipped, and the next record
	 * chains to the last complete one. */
	char dir[PATH_MAX];
	size_t n;
	struct walk w;
	killed_holder(DIE_TORN, &n, &w, dir, sizeof dir);
	ck_assert_uint_eq(n, 6);
	ck_assert_uint_eq(w.bad_chain, 0);
	ck_assert_uint_gt(w.torn_bytes, 0);
	check_state_matches(dir, &w);
	/* verify reports the damaged bytes (a problem) but no chain break */
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s/out", dir);
	FILE *f = fopen(p, "w+");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(bbx_verify(dir, f, false), 1);
	rewind(f);
	char line[1024];
	int damaged = 0, chain = 0;
	while (fgets(line, sizeof line, f)) {
		damaged += strstr(line, "damaged bytes") != NULL;
		chain += strstr(line, "chain mismatch") != NULL;
	}
	fclose(f);
	ck_assert_int_eq(damaged, 1);
	ck_assert_int_eq(chain, 0);
}
END_TEST

/* ---- the record layout the writer patches ---- */

START_TEST(test_set_chain_patches_in_place)
{
	uint8_t buf[256];
	struct bbx_enc e;
	bbx_enc_begin(&e, buf, sizeof buf, BBX_REC_NOTE);
	bbx_enc_str(&e, BBX_T_TEXT, "x");
	struct bbx_rec_hdr h = {.seq = 9};
	long len = bbx_enc_finish(&e, &h);
	ck_assert_int_gt(len, 0);
	uint64_t t = bbx_rec_set_chain(buf, (size_t)len, 0x1122334455667788ull);
	struct bbx_rec r;
	ck_assert_int_eq(bbx_rec_decode(buf, (size_t)len, &r), 0); /* checksum redone */
	ck_assert(r.has_chain);
	ck_assert_uint_eq(r.chain, 0x1122334455667788ull);
	ck_assert_uint_eq(t, XXH64(buf, (size_t)len - 8, 0));
	ck_assert_str_eq(r.text, "x");
	/* A record without the reserved field is left alone; its trailer is returned. */
	uint8_t raw[128];
	memcpy(raw, buf, (size_t)len);
	raw[BBX_REC_CHAIN_OFF] = BBX_T_COUNT; /* no longer a CHAIN tag */
	uint8_t copy[128];
	memcpy(copy, raw, sizeof copy);
	bbx_rec_set_chain(raw, (size_t)len, 42);
	ck_assert_mem_eq(raw, copy, (size_t)len);
}
END_TEST

static Suite *chain_suite(void)
{
	Suite *s = suite_create("chain");
	TCase *tc = tcase_create("chain");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_set_chain_patches_in_place);
	tcase_add_test(tc, test_concurrent_appends_chain);
	tcase_add_test(tc, test_batches_chain_with_singles);
	tcase_add_test(tc, test_unlocked_appends_break_chain);
	tcase_add_test(tc, test_holder_killed_before_write);
	tcase_add_test(tc, test_holder_killed_after_write);
	tcase_add_test(tc, test_holder_killed_mid_write);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return unit_main(chain_suite()); }
