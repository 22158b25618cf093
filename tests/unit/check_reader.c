/* SPDX-License-Identifier: MIT
 *
 * check_reader.c - unit tests of journal iteration (journal/reader.c).
 *
 * Invariant 7: any prefix of a journal is a valid journal.  A journal cut at every byte
 * of its last record must read back every earlier record intact and report the rest as
 * a torn tail; damage in the middle must be skipped and counted, never stop the reader.
 * Buffers handed to the reader are malloc'd to their exact size, so valgrind sees any
 * read past the end.
 */
#include "reader.h"
#include "record.h"
#include "unit.h"

#include <stdint.h>
#include <sys/mman.h>

/* An in-memory journal under construction. */
#define JB_MAX 8
struct jb {
	uint8_t b[65536];
	size_t len;
	int n;
	size_t off[JB_MAX], rlen[JB_MAX];
	uint64_t seq[JB_MAX];
};

/* Encodes one record: path and an optional binary xattr value (which may hold anything,
 * including a magic or a whole record). */
static long enc_rec(uint8_t *buf, size_t cap, int type, uint64_t seq, const char *path,
		    const void *xv, size_t xvlen)
{
	struct bbx_enc e;
	bbx_enc_begin(&e, buf, cap, type);
	bbx_enc_str(&e, BBX_T_OP, "test");
	bbx_enc_str(&e, BBX_T_PATH, path);
	if (xv)
		bbx_enc_bytes(&e, BBX_T_XVALUE, xv, xvlen);
	struct bbx_rec_hdr h = {.seq = seq, .pid = 4242};
	long len = bbx_enc_finish(&e, &h);
	ck_assert_int_gt(len, 0);
	return len;
}

static void jb_add(struct jb *j, int type, uint64_t seq, const char *path, const void *xv,
		   size_t xvlen)
{
	ck_assert_int_lt(j->n, JB_MAX);
	long len = enc_rec(j->b + j->len, sizeof j->b - j->len, type, seq, path, xv, xvlen);
	j->off[j->n] = j->len;
	j->rlen[j->n] = (size_t)len;
	j->seq[j->n] = seq;
	j->n++;
	j->len += (size_t)len;
}

static const char *path_of(uint64_t seq)
{
	static char p[64];
	snprintf(p, sizeof p, "/ws/file-%llu BBX1", (unsigned long long)seq);
	return p;
}

/* Five records of different types and sizes; paths and values contain the magic, so
 * resynchronisation has false candidates to reject. */
static void jb_five(struct jb *j)
{
	memset(j, 0, sizeof *j);
	uint8_t xv[300];
	for (size_t i = 0; i < sizeof xv; i++)
		xv[i] = (uint8_t)(i * 7);
	memcpy(xv + 100, "BBX1", 4);
	jb_add(j, BBX_REC_CREATE, 1, path_of(1), NULL, 0);
	jb_add(j, BBX_REC_META, 2, path_of(2), xv, sizeof xv);
	jb_add(j, BBX_REC_PRESERVE, 3, path_of(3), "BBX1BBX1", 8);
	jb_add(j, BBX_REC_RENAME, 4, path_of(4), NULL, 0);
	jb_add(j, BBX_REC_META, 5, path_of(5), xv, 200);
}

/* A private copy of exactly n bytes (valgrind catches any overread). */
static uint8_t *dup_exact(const void *p, size_t n)
{
	uint8_t *c = malloc(n ? n : 1);
	ck_assert_ptr_nonnull(c);
	memcpy(c, p, n);
	return c;
}

static void expect_rec(struct bbx_reader *r, const struct jb *j, int i)
{
	struct bbx_rec rec;
	size_t off = (size_t)-1;
	int rc = bbx_reader_next(r, &rec, &off);
	ck_assert_msg(rc == BBX_READ_OK, "record %d: reader returned %d", i, rc);
	ck_assert_uint_eq(off, j->off[i]);
	ck_assert_uint_eq(rec.len, j->rlen[i]);
	ck_assert_uint_eq(rec.h.seq, j->seq[i]);
	ck_assert_int_eq(rec.h.pid, 4242);
	ck_assert_str_eq(rec.path, path_of(j->seq[i]));
}

static void write_journal(const char *path, const void *b, size_t n)
{
	unit_write_file(path, b, n);
}

START_TEST(test_empty_journal)
{
	char dir[PATH_MAX], p[PATH_MAX + 16];
	unit_mkdtemp(dir, sizeof dir, "empty");
	snprintf(p, sizeof p, "%s/journal", dir);
	write_journal(p, "", 0);
	struct bbx_reader r;
	ck_assert_int_eq(bbx_reader_open(&r, p), 0);
	struct bbx_rec rec;
	ck_assert_int_eq(bbx_reader_next(&r, &rec, NULL), BBX_READ_END);
	ck_assert_int_eq(bbx_reader_next(&r, &rec, NULL), BBX_READ_END);
	ck_assert_uint_eq(r.torn_len, 0);
	ck_assert_uint_eq(r.bad_ranges, 0);
	bbx_reader_close(&r);

	ck_assert_int_eq(bbx_reader_open(&r, p), 0);
	size_t *offs = NULL, n = 99;
	ck_assert_int_eq(bbx_reader_index(&r, &offs, &n), 0);
	ck_assert_uint_eq(n, 0);
	free(offs);
	bbx_reader_close(&r);

	bbx_reader_init_mem(&r, NULL, 0);
	ck_assert_int_eq(bbx_reader_next(&r, &rec, NULL), BBX_READ_END);

	snprintf(p, sizeof p, "%s/missing", dir);
	ck_assert_int_eq(bbx_reader_open(&r, p), -ENOENT);
}
END_TEST

/* The whole journal, and every cut inside its last record. */
START_TEST(test_torn_tail_every_offset)
{
	struct jb *j = malloc(sizeof *j);
	ck_assert_ptr_nonnull(j);
	jb_five(j);
	const int last = j->n - 1;
	const size_t start = j->off[last], end = j->len;
	for (size_t cut = start; cut <= end; cut++) {
		uint8_t *c = dup_exact(j->b, cut);
		struct bbx_reader r;
		struct bbx_rec rec;
		bbx_reader_init_mem(&r, c, cut);
		for (int i = 0; i < last; i++)
			expect_rec(&r, j, i);
		int rc = bbx_reader_next(&r, &rec, NULL);
		if (cut == start) {
			ck_assert_msg(rc == BBX_READ_END, "cut at boundary %zu: %d", cut, rc);
			ck_assert_uint_eq(r.torn_len, 0);
		} else if (cut == end) {
			ck_assert_int_eq(rc, BBX_READ_OK);
			ck_assert_uint_eq(rec.h.seq, j->seq[last]);
			ck_assert_int_eq(bbx_reader_next(&r, &rec, NULL), BBX_READ_END);
			ck_assert_uint_eq(r.torn_len, 0);
		} else {
			ck_assert_msg(rc == BBX_READ_TORN, "cut %zu (+%zu): %d", cut, cut - start, rc);
			ck_assert_uint_eq(r.torn_off, start);
			ck_assert_uint_eq(r.torn_len, cut - start);
			/* A torn tail ends the log for good. */
			ck_assert_int_eq(bbx_reader_next(&r, &rec, NULL), BBX_READ_END);
		}
		ck_assert_uint_eq(r.bad_ranges, 0);
		ck_assert_uint_eq(r.bad_bytes, 0);
		free(c);
	}
	free(j);
}
END_TEST

/* The same through a real file and bbx_reader_open/bbx_reader_index. */
START_TEST(test_torn_tail_file_and_index)
{
	struct jb *j = malloc(sizeof *j);
	ck_assert_ptr_nonnull(j);
	jb_five(j);
	char dir[PATH_MAX], p[PATH_MAX + 16];
	unit_mkdtemp(dir, sizeof dir, "tornfile");
	snprintf(p, sizeof p, "%s/journal", dir);
	const int last = j->n - 1;
	for (size_t cut = j->off[last]; cut <= j->len; cut++) {
		write_journal(p, j->b, cut);
		struct bbx_reader r;
		ck_assert_int_eq(bbx_reader_open(&r, p), 0);
		for (int i = 0; i < last; i++)
			expect_rec(&r, j, i);
		struct bbx_rec rec;
		int rc = bbx_reader_next(&r, &rec, NULL);
		int want = cut == j->off[last] ? BBX_READ_END
			   : cut == j->len     ? BBX_READ_OK
					       : BBX_READ_TORN;
		ck_assert_int_eq(rc, want);
		if (want == BBX_READ_TORN) {
			ck_assert_uint_eq(r.torn_off, j->off[last]);
			ck_assert_uint_eq(r.torn_len, cut - j->off[last]);
		}
		bbx_reader_close(&r);

		ck_assert_int_eq(bbx_reader_open(&r, p), 0);
		size_t *offs = NULL, n = 0;
		ck_assert_int_eq(bbx_reader_index(&r, &offs, &n), 0);
		ck_assert_uint_eq(n, cut == j->len ? (size_t)j->n : (size_t)last);
		for (size_t i = 0; i < n; i++)
			ck_assert_uint_eq(offs[i], j->off[i]);
		ck_assert_uint_eq(r.torn_len, want == BBX_READ_TORN ? cut - j->off[last] : 0);
		free(offs);
		bbx_reader_close(&r);
	}
	free(j);
}
END_TEST

/* Reads 0,1,3,4 of jb_five's records from buf: record 2 was damaged. */
static void expect_skip_third(const struct jb *j, const uint8_t *buf, size_t len,
			      size_t bad_bytes, const char *what, size_t at)
{
	uint8_t *c = dup_exact(buf, len);
	struct bbx_reader r;
	struct bbx_rec rec;
	bbx_reader_init_mem(&r, c, len);
	expect_rec(&r, j, 0);
	expect_rec(&r, j, 1);
	size_t off;
	int rc = bbx_reader_next(&r, &rec, &off);
	ck_assert_msg(rc == BBX_READ_OK, "%s %zu: after damage reader returned %d", what, at, rc);
	ck_assert_msg(rec.h.seq == 4, "%s %zu: got seq %llu", what, at,
		      (unsigned long long)rec.h.seq);
	ck_assert_uint_eq(off, j->off[3] - (j->len - len));
	rc = bbx_reader_next(&r, &rec, &off);
	ck_assert_int_eq(rc, BBX_READ_OK);
	ck_assert_uint_eq(rec.h.seq, 5);
	ck_assert_int_eq(bbx_reader_next(&r, &rec, NULL), BBX_READ_END);
	ck_assert_uint_eq(r.bad_ranges, 1);
	ck_assert_uint_eq(r.bad_bytes, bad_bytes);
	ck_assert_uint_eq(r.torn_len, 0);
	free(c);
}

/* Any byte of a middle record damaged: that record alone is skipped and counted. */
START_TEST(test_damaged_middle_every_byte)
{
	struct jb *j = malloc(sizeof *j);
	ck_assert_ptr_nonnull(j);
	jb_five(j);
	uint8_t *c = malloc(j->len);
	ck_assert_ptr_nonnull(c);
	const uint8_t masks[] = {0x01, 0x80, 0xff};
	for (size_t i = j->off[2]; i < j->off[3]; i++) {
		for (size_t m = 0; m < sizeof masks; m++) {
			memcpy(c, j->b, j->len);
			c[i] ^= masks[m];
			expect_skip_third(j, c, j->len, j->rlen[2], "flipped byte", i - j->off[2]);
		}
	}
	free(c);
	free(j);
}
END_TEST

/* A short write followed by further appends: the partial record is a bad range in the
 * middle (not a torn tail), for every possible partial length. */
START_TEST(test_short_write_then_append)
{
	struct jb *j = malloc(sizeof *j);
	ck_assert_ptr_nonnull(j);
	jb_five(j);
	uint8_t *c = malloc(j->len);
	ck_assert_ptr_nonnull(c);
	for (size_t k = 1; k < j->rlen[2]; k++) {
		size_t n = 0;
		memcpy(c, j->b, j->off[2] + k);
		n = j->off[2] + k;
		memcpy(c + n, j->b + j->off[3], j->len - j->off[3]);
		n += j->len - j->off[3];
		expect_skip_third(j, c, n, k, "partial length", k);
	}
	free(c);
	free(j);
}
END_TEST

/* Garbage at the start, between records, and two separate damaged ranges. */
START_TEST(test_garbage_ranges)
{
	struct jb *j = malloc(sizeof *j);
	ck_assert_ptr_nonnull(j);
	jb_five(j);
	static const uint8_t junk1[13] = {0};
	static const char junk2[] = "BBX1BBX1 not a record BB";
	uint8_t *c = malloc(j->len + sizeof junk1 + sizeof junk2);
	ck_assert_ptr_nonnull(c);
	size_t n = 0;
	memcpy(c + n, junk1, sizeof junk1);
	n += sizeof junk1;
	memcpy(c + n, j->b, j->off[2]);
	n += j->off[2];
	memcpy(c + n, junk2, sizeof junk2);
	n += sizeof junk2;
	memcpy(c + n, j->b + j->off[2], j->len - j->off[2]);
	n += j->len - j->off[2];
	struct bbx_reader r;
	struct bbx_rec rec;
	bbx_reader_init_mem(&r, c, n);
	for (uint64_t seq = 1; seq <= 5; seq++) {
		ck_assert_int_eq(bbx_reader_next(&r, &rec, NULL), BBX_READ_OK);
		ck_assert_uint_eq(rec.h.seq, seq);
	}
	ck_assert_int_eq(bbx_reader_next(&r, &rec, NULL), BBX_READ_END);
	ck_assert_uint_eq(r.bad_ranges, 2);
	ck_assert_uint_eq(r.bad_bytes, sizeof junk1 + sizeof junk2);
	ck_assert_uint_eq(r.torn_len, 0);
	free(c);
	free(j);
}
END_TEST

/* Damage in the middle and a torn tail in the same journal. */
START_TEST(test_damaged_then_torn)
{
	struct jb *j = malloc(sizeof *j);
	ck_assert_ptr_nonnull(j);
	jb_five(j);
	size_t n = j->off[4] + 10;
	uint8_t *c = dup_exact(j->b, n);
	c[j->off[2] + 60] ^= 0x40;
	struct bbx_reader r;
	struct bbx_rec rec;
	bbx_reader_init_mem(&r, c, n);
	const uint64_t want[] = {1, 2, 4};
	for (size_t i = 0; i < 3; i++) {
		ck_assert_int_eq(bbx_reader_next(&r, &rec, NULL), BBX_READ_OK);
		ck_assert_uint_eq(rec.h.seq, want[i]);
	}
	ck_assert_int_eq(bbx_reader_next(&r, &rec, NULL), BBX_READ_TORN);
	ck_assert_uint_eq(r.torn_off, j->off[4]);
	ck_assert_uint_eq(r.torn_len, 10);
	ck_assert_uint_eq(r.bad_ranges, 1);
	ck_assert_uint_eq(r.bad_bytes, j->rlen[2]);
	free(c);
	free(j);
}
END_TEST

/* bbx_reader_index: every record's offset in file order, past the first realloc. */
START_TEST(test_index_many)
{
	const size_t count = 3000;
	uint8_t *buf = malloc(count * 128);
	size_t *want = malloc(count * sizeof *want);
	ck_assert_ptr_nonnull(buf);
	ck_assert_ptr_nonnull(want);
	size_t len = 0;
	for (size_t i = 0; i < count; i++) {
		want[i] = len;
		len += (size_t)enc_rec(buf + len, count * 128 - len, BBX_REC_SIZE, i + 1,
				       i % 2 ? "/a" : "/bb/cc", NULL, 0);
	}
	/* Damage record 1500: it must be absent from the index and nothing else. */
	buf[want[1500] + 20] ^= 1;
	struct bbx_reader r;
	bbx_reader_init_mem(&r, buf, len);
	size_t *offs = NULL, n = 0;
	ck_assert_int_eq(bbx_reader_index(&r, &offs, &n), 0);
	ck_assert_uint_eq(n, count - 1);
	for (size_t i = 0, k = 0; i < count; i++) {
		if (i == 1500)
			continue;
		ck_assert_uint_eq(offs[k], want[i]);
		k++;
	}
	ck_assert_uint_eq(r.bad_ranges, 1);
	free(offs);
	free(want);
	free(buf);
}
END_TEST

/* bbx_reader_close() on a reader made by bbx_reader_init_mem() must leave the caller's
 * buffer alone: it was not mapped by the reader. */
START_TEST(test_close_mem_reader_keeps_buffer)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *m = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert(m != MAP_FAILED);
	long len = enc_rec(m, (size_t)pg, BBX_REC_NOTE, 1, "/x", NULL, 0);
	struct bbx_reader r;
	struct bbx_rec rec;
	bbx_reader_init_mem(&r, m, (size_t)len);
	ck_assert_int_eq(bbx_reader_next(&r, &rec, NULL), BBX_READ_OK);
	bbx_reader_close(&r);
	unsigned char vec[2];
	int rc = mincore(m, (size_t)pg, vec);
	ck_assert_msg(rc == 0, "bbx_reader_close() unmapped the caller's memory buffer");
	munmap(m, (size_t)pg * 2);
}
END_TEST

/* A record's payload may hold bytes that form a complete, checksummed record (an xattr
 * value is arbitrary binary).  When that record is torn, resynchronisation must not
 * return the embedded bytes as a record that was never appended.
 * One cut is undecidable from the bytes alone: the one that ends the file exactly where
 * the embedded record ends (it is then indistinguishable from a real last record after
 * damage).  Closing that needs the hash chain of the forensics milestone (each record
 * carrying its predecessor's hash); until then it is excluded here and documented in
 * doc/journal-format.md. */
START_TEST(test_torn_record_hides_no_phantom)
{
	uint8_t inner[512];
	long ilen = enc_rec(inner, sizeof inner, BBX_REC_CREATE, 999, "/home/victim", NULL, 0);
	struct jb *j = malloc(sizeof *j);
	ck_assert_ptr_nonnull(j);
	memset(j, 0, sizeof *j);
	jb_add(j, BBX_REC_CREATE, 1, path_of(1), NULL, 0);
	jb_add(j, BBX_REC_META, 2, path_of(2), inner, (size_t)ilen);
	size_t phantoms = 0, first = 0;
	/* where the embedded record ends inside the host record */
	const uint8_t *at = memmem(j->b + j->off[1], j->len - j->off[1], inner, (size_t)ilen);
	ck_assert_ptr_nonnull(at);
	size_t undecidable = (size_t)(at - j->b) + (size_t)ilen;
	for (size_t cut = j->off[1]; cut < j->len; cut++) {
		if (cut == undecidable)
			continue;
		uint8_t *c = dup_exact(j->b, cut);
		struct bbx_reader r;
		struct bbx_rec rec;
		bbx_reader_init_mem(&r, c, cut);
		expect_rec(&r, j, 0);
		int rc;
		while ((rc = bbx_reader_next(&r, &rec, NULL)) == BBX_READ_OK)
			if (rec.h.seq == 999 && !phantoms++)
				first = cut - j->off[1];
		free(c);
	}
	size_t cuts = j->len - j->off[1];
	free(j);
	ck_assert_msg(phantoms == 0,
		      "a torn META record yielded the record embedded in its xattr value "
		      "(seq 999, /home/victim) at %zu of %zu cuts, first at +%zu",
		      phantoms, cuts, first);
}
END_TEST




static Suite *reader_suite(void)
{
	Suite *s = suite_create("reader");
	TCase *tc = tcase_create("torn");
	tcase_add_test(tc, test_empty_journal);
	tcase_add_test(tc, test_torn_tail_every_offset);
	tcase_add_test(tc, test_torn_tail_file_and_index);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);

	tc = tcase_create("resync");
	tcase_add_test(tc, test_damaged_middle_every_byte);
	tcase_add_test(tc, test_short_write_then_append);
	tcase_add_test(tc, test_garbage_ranges);
	tcase_add_test(tc, test_damaged_then_torn);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);

	tc = tcase_create("index");
	tcase_add_test(tc, test_index_many);
	tcase_add_test(tc, test_close_mem_reader_keeps_buffer);
	suite_add_tcase(s, tc);

	tc = tcase_create("phantom");
	tcase_add_test(tc, test_torn_record_hides_no_phantom);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return unit_main(reader_suite()); }
