/* SPDX-License-Identifier: MIT
 *
 * check_undo.c - undo planning (journal/undo.c: bbx_undo_plan) on synthetic journals,
 * and bbx_undo_run on a real directory built by the capture layer.
 */
#include "journal/capture.h"
#include "journal/pathmap.h"
#include "journal/reader.h"
#include "journal/undo.h"
#include "unit.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

static uint8_t jbuf[1 << 16];
static size_t jlen;
static uint64_t seqn;

static uint64_t add(int type, const char *path, void (*fill)(struct bbx_enc *, void *), void *arg)
{
	struct bbx_enc e;
	bbx_enc_begin(&e, jbuf + jlen, sizeof jbuf - jlen, type);
	bbx_enc_str(&e, BBX_T_OP, "test");
	bbx_enc_str(&e, BBX_T_PATH, path);
	if (fill)
		fill(&e, arg);
	struct bbx_rec_hdr h = {.seq = ++seqn, .pid = 1};
	long n = bbx_enc_finish(&e, &h);
	ck_assert_int_gt(n, 0);
	jlen += (size_t)n;
	return seqn;
}

static void f_kind(struct bbx_enc *e, void *a) { bbx_enc_u32(e, BBX_T_KIND, *(uint32_t *)a); }
static void f_how(struct bbx_enc *e, void *a)
{
	bbx_enc_u32(e, BBX_T_KIND, BBX_KIND_FILE);
	bbx_enc_u32(e, BBX_T_HOW, *(uint32_t *)a);
	bbx_enc_str(e, BBX_T_OBJECT, "1");
}
struct res { uint64_t ref; int64_t ret; uint64_t ino; };
static void f_res(struct bbx_enc *e, void *a)
{
	struct res *r = a;
	bbx_enc_u64(e, BBX_T_REF, r->ref);
	bbx_enc_i64(e, BBX_T_RET, r->ret);
	if (r->ret >= 0)
		bbx_enc_u64(e, BBX_T_INO, r->ino);
}

START_TEST(plan_order_and_actions)
{
	jlen = 0;
	seqn = 0;
	uint32_t file = BBX_KIND_FILE, anon = BBX_KIND_ANON, link = BBX_HOW_LINK,
		 copy = BBX_HOW_COPY, none = BBX_HOW_NONE, lost = BBX_HOW_LOST;
	add(BBX_REC_EXEC, "/bin/sh", NULL, NULL);                  /* 1: skip */
	add(BBX_REC_DIRMETA, "/w", NULL, NULL);                    /* 2: dirmeta */
	uint64_t c_ok = add(BBX_REC_CREATE, "/w/new", f_kind, &file);  /* 3: remove */
	add(BBX_REC_RESULT, "/w/new", f_res, &(struct res){c_ok, 3, 77});
	uint64_t c_bad = add(BBX_REC_CREATE, "/w/x", f_kind, &file);   /* 5: skip (failed) */
	add(BBX_REC_RESULT, "/w/x", f_res, &(struct res){c_bad, -1, 0});
	add(BBX_REC_CREATE, "/w/nores", f_kind, &file);            /* 7: remove, no result */
	add(BBX_REC_CREATE, "/tmp", f_kind, &anon);                /* 8: skip (anon) */
	add(BBX_REC_PRESERVE, "/w/a", f_how, &link);               /* 9: restore-link */
	add(BBX_REC_PRESERVE, "/w/b", f_how, &copy);               /* 10: restore-copy */
	add(BBX_REC_PRESERVE, "/w/c", f_how, &none);               /* 11: skip */
	add(BBX_REC_PRESERVE, "/w/d", f_how, &lost);               /* 12: lost */
	add(BBX_REC_SIZE, "/w/log", NULL, NULL);                   /* 13: truncate */
	add(BBX_REC_RMDIR, "/w/dir", NULL, NULL);                  /* 14: mkdir */
	add(BBX_REC_RENAME, "/w/m", NULL, NULL);                   /* 15: rename-back */
	add(BBX_REC_META, "/w/a", NULL, NULL);                     /* 16: meta */
	add(BBX_REC_FINAL, "/w/a", NULL, NULL);                    /* 17: skip */
	add(BBX_REC_SEAL, "", NULL, NULL);                         /* 18: skip */

	struct bbx_reader r;
	bbx_reader_init_mem(&r, jbuf, jlen);
	struct bbx_undo_step *s;
	size_t n;
	ck_assert_int_eq(bbx_undo_plan(&r, &s, &n), 0);
	ck_assert_uint_eq(n, 18);
	/* Reverse file order: the plan starts with the last record. */
	static const int want[18] = {
		BBX_UNDO_SKIP, BBX_UNDO_SKIP, BBX_UNDO_META, BBX_UNDO_RENAME_BACK, BBX_UNDO_MKDIR,
		BBX_UNDO_TRUNCATE, BBX_UNDO_LOST, BBX_UNDO_SKIP, BBX_UNDO_RESTORE_COPY,
		BBX_UNDO_RESTORE_LINK, BBX_UNDO_SKIP, BBX_UNDO_REMOVE, BBX_UNDO_SKIP, BBX_UNDO_SKIP,
		BBX_UNDO_SKIP, BBX_UNDO_REMOVE, BBX_UNDO_DIRMETA, BBX_UNDO_SKIP};
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(s[i].action == want[i], "step %zu: %s, want %s", i,
			      bbx_undo_action_name(s[i].action), bbx_undo_action_name(want[i]));
	/* The successful creation carries its inode; the one without RESULT has none. */
	ck_assert(s[15].has_result && s[15].has_ino && s[15].ino == 77);
	ck_assert(!s[11].has_result);
	ck_assert(s[13].has_result && s[13].ret == -1);
	for (size_t i = 1; i < n; i++)
		ck_assert_uint_lt(s[i].off, s[i - 1].off);
	free(s);
}
END_TEST

START_TEST(plan_torn_tail_still_plans)
{
	jlen = 0;
	seqn = 0;
	uint32_t file = BBX_KIND_FILE;
	add(BBX_REC_CREATE, "/w/one", f_kind, &file);
	size_t keep = jlen;
	add(BBX_REC_CREATE, "/w/two", f_kind, &file);
	struct bbx_reader r;
	bbx_reader_init_mem(&r, jbuf, jlen - 5); /* the last record is torn */
	struct bbx_undo_step *s;
	size_t n;
	ck_assert_int_eq(bbx_undo_plan(&r, &s, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(s[0].off, 0);
	ck_assert_uint_eq(r.torn_off, keep);
	free(s);
}
END_TEST

START_TEST(plan_failed_calls_are_skipped)
{
	jlen = 0;
	seqn = 0;
	uint64_t rn = add(BBX_REC_RENAME, "/w/a", NULL, NULL);
	add(BBX_REC_RESULT, "/w/a", f_res, &(struct res){rn, -1, 0});
	uint64_t rd = add(BBX_REC_RMDIR, "/w/d", NULL, NULL);
	add(BBX_REC_RESULT, "/w/d", f_res, &(struct res){rd, -1, 0});
	add(BBX_REC_RENAME, "/w/b", NULL, NULL); /* no RESULT: it happened (or may have) */
	struct bbx_reader r;
	bbx_reader_init_mem(&r, jbuf, jlen);
	struct bbx_undo_step *s;
	size_t n;
	ck_assert_int_eq(bbx_undo_plan(&r, &s, &n), 0);
	ck_assert_uint_eq(n, 5);
	ck_assert_int_eq(s[0].action, BBX_UNDO_RENAME_BACK);
	ck_assert_int_eq(s[2].action, BBX_UNDO_SKIP); /* failed rmdir */
	ck_assert_int_eq(s[4].action, BBX_UNDO_SKIP); /* failed rename */
	free(s);
}
END_TEST

/* A scratch tree for a real run: TMP (unit_mkdtemp), TMP/ws (made) and TMP/j (not yet). */
struct tree {
	char tmp[PATH_MAX], ws[PATH_MAX + 8], jd[PATH_MAX + 8];
};

static void tree_make(struct tree *t, const char *tag)
{
	unit_mkdtemp(t->tmp, sizeof t->tmp, tag);
	snprintf(t->ws, sizeof t->ws, "%s/ws", t->tmp);
	snprintf(t->jd, sizeof t->jd, "%s/j", t->tmp);
	ck_assert_int_eq(mkdir(t->ws, 0755), 0);
}

/* Creates the run's journal directory and opens it. */
static void tree_run(const struct tree *t, struct bbx_run *run)
{
	char out[4096];
	ck_assert_int_eq(bbx_run_create(t->jd, "test", NULL, 1, out, sizeof out), 0);
	ck_assert_int_eq(bbx_run_open(run, t->jd), 0);
}

static void put_file(const char *path, const char *text)
{
	unit_write_file(path, text, strlen(text));
}

static void assert_file(const char *path, const char *text)
{
	size_t len;
	char *got = unit_read_file(path, &len);
	ck_assert_str_eq(got, text);
	free(got);
}

/* Undoes the tree's run: no error, no conflict, `removed` paths removed. */
static void undo_clean(const struct tree *t, struct bbx_undo_stats *st, uint64_t removed)
{
	struct bbx_undo_opts o = {0};
	ck_assert_int_eq(bbx_undo_run(t->jd, &o, st), 0);
	ck_assert_uint_eq(st->errors, 0);
	ck_assert_uint_eq(st->conflicts, 0);
	ck_assert_uint_eq(st->removed, removed);
}

/* A real directory: the capture layer records, the calls happen, undo restores. */
START_TEST(undo_run_restores_real_tree)
{
	struct tree t;
	tree_make(&t, "realtree");
	char a[PATH_MAX + 16], b[PATH_MAX + 16], d[PATH_MAX + 16];
	snprintf(a, sizeof a, "%s/a", t.ws);
	snprintf(b, sizeof b, "%s/b", t.ws);
	snprintf(d, sizeof d, "%s/d", t.ws);
	put_file(a, "original\n");
	struct bbx_run run;
	tree_run(&t, &run);
	char res[4096];
	struct bbx_pending p;
	/* truncate a, create b, mkdir d */
	ck_assert_int_eq(bbx_cap_open(&run, "open", a, O_WRONLY | O_TRUNC, 0, res, &p), 0);
	put_file(a, "changed\n");
	ck_assert_int_eq(bbx_cap_open(&run, "open", b, O_WRONLY | O_CREAT, 0644, res, &p), 0);
	int fd = open(b, O_WRONLY | O_CREAT, 0644);
	bbx_cap_done(&run, "open", &p, fd, 0, fd);
	close(fd);
	ck_assert_int_eq(bbx_cap_create(&run, "mkdir", d, BBX_KIND_DIR, 0755, NULL, &p), 0);
	ck_assert_int_eq(mkdir(d, 0755), 0);
	bbx_cap_done(&run, "mkdir", &p, 0, 0, -1);
	bbx_run_close(&run);

	struct bbx_undo_stats st;
	undo_clean(&t, &st, 2);
	ck_assert_int_eq(access(b, F_OK), -1);
	ck_assert_int_eq(access(d, F_OK), -1);
	assert_file(a, "original\n");
	/* Idempotent: a second run is a no-op. */
	struct bbx_undo_opts o = {0};
	ck_assert_int_eq(bbx_undo_run(t.jd, &o, &st), 0);
	ck_assert(st.already_done);
	unit_rm_rf(t.tmp);
}
END_TEST

/* CREATE how=excl (O_CREAT|O_EXCL: the name is not looked up first) without a RESULT,
 * as when the process is killed right after the call: a file born well before the record
 * was there already (the call failed) and stays; one born after it is removed. */
START_TEST(undo_excl_without_result)
{
	struct tree t;
	tree_make(&t, "excl");
	char old[PATH_MAX + 16], made[PATH_MAX + 16], res[4096];
	snprintf(old, sizeof old, "%s/old", t.ws);
	snprintf(made, sizeof made, "%s/made", t.ws);
	put_file(old, "someone else's\n");
	usleep(60000); /* born 60 ms before the records: beyond undo's 20 ms slack */
	struct bbx_run run;
	tree_run(&t, &run);
	struct bbx_pending p;
	ck_assert_int_eq(bbx_cap_open(&run, "open", old, O_WRONLY | O_CREAT | O_EXCL, 0600, res,
				      &p), 0);
	ck_assert_uint_gt(p.seq, 0); /* recorded without a lookup: a CREATE */
	ck_assert_int_eq(open(old, O_WRONLY | O_CREAT | O_EXCL, 0600), -1);
	ck_assert_int_eq(errno, EEXIST); /* and no RESULT: killed */
	ck_assert_int_eq(bbx_cap_open(&run, "open", made, O_WRONLY | O_CREAT | O_EXCL, 0600, res,
				      &p), 0);
	int fd = open(made, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0); /* made, and no RESULT: killed */
	close(fd);
	bbx_run_close(&run);

	struct bbx_undo_stats st;
	undo_clean(&t, &st, 1);
	ck_assert_int_eq(access(made, F_OK), -1);
	assert_file(old, "someone else's\n");
	unit_rm_rf(t.tmp);
}
END_TEST

/* git's loose object: a temporary file created, linked to the object's name, removed.
 * Killed before the link's RESULT (held back until the process's next record) and with
 * the temporary's removal held back too, undo has no outcome for the link and its source
 * is gone: the link is the run's because its inode is the one the run's creation of the
 * source made (found by tests/e2e/t-crash.sh, 7 of 40 points of git). */
START_TEST(undo_link_without_result_source_gone)
{
	struct tree t;
	tree_make(&t, "linkgone");
	char tmp[PATH_MAX + 16], obj[PATH_MAX + 16], res[4096];
	snprintf(tmp, sizeof tmp, "%s/tmp_obj", t.ws);
	snprintf(obj, sizeof obj, "%s/object", t.ws);
	struct bbx_run run;
	tree_run(&t, &run);
	struct bbx_pending p;
	ck_assert_int_eq(bbx_cap_open(&run, "open", tmp, O_WRONLY | O_CREAT | O_EXCL, 0444, res,
				      &p), 0);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0444);
	ck_assert_int_ge(fd, 0);
	bbx_cap_done(&run, "open", &p, fd, 0, fd); /* RESULT with the inode */
	close(fd);
	ck_assert_int_eq(bbx_cap_link(&run, "link", obj, tmp, &p), 0);
	ck_assert_int_eq(link(tmp, obj), 0); /* no RESULT: killed */
	ck_assert_int_eq(unlink(tmp), 0);      /* its record held back, lost */
	bbx_run_close(&run);

	struct bbx_undo_stats st;
	undo_clean(&t, &st, 1); /* the object's name; the temporary is gone already */
	ck_assert_int_eq(access(obj, F_OK), -1);
	ck_assert_int_eq(access(tmp, F_OK), -1);
	unit_rm_rf(t.tmp);
}
END_TEST

/* A link source the shim could not make absolute is recorded as the program passed it.
 * Without the link's RESULT, undo cannot tell which directory it was relative to: even
 * where its own working directory happens to be the right one, the new name is kept as
 * a conflict rather than removed on a guess. */
START_TEST(undo_link_without_result_relative_source)
{
	struct tree t;
	tree_make(&t, "linkrel");
	char src[PATH_MAX + 16], obj[PATH_MAX + 16], cwd[PATH_MAX];
	snprintf(src, sizeof src, "%s/src", t.ws);
	snprintf(obj, sizeof obj, "%s/object", t.ws);
	put_file(src, "linked\n");
	struct bbx_run run;
	tree_run(&t, &run);
	struct bbx_pending p;
	ck_assert_int_eq(bbx_cap_link(&run, "link", obj, "src", &p), 0);
	ck_assert_int_eq(link(src, obj), 0); /* no RESULT: killed */
	bbx_run_close(&run);

	ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
	ck_assert_int_eq(chdir(t.ws), 0); /* "src" would name the source from here */
	struct bbx_undo_opts o = {0};
	struct bbx_undo_stats st;
	ck_assert_int_eq(bbx_undo_run(t.jd, &o, &st), 0);
	ck_assert_int_eq(chdir(cwd), 0);
	ck_assert_uint_eq(st.conflicts, 1);
	ck_assert_int_eq(access(obj, F_OK), -1); /* moved aside, not removed */
	assert_file(src, "linked\n");
	struct stat sb;
	ck_assert_int_eq(lstat(src, &sb), 0);
	ck_assert_uint_eq(sb.st_nlink, 2); /* its other name is the kept conflict */
	unit_rm_rf(t.tmp);
}
END_TEST

/* A file a process of the run still held open for writing at the seal (bbx-run finds
 * it in /proc: tools/straggle.c) gets a NOTE after its FINAL: the process's later
 * writes, which make no record, are the run's own.  Undo restores the file without a
 * conflict; the same run sealed without the held list keeps the later version as one. */
START_TEST(seal_held_file_noted)
{
	for (int held = 0; held < 2; held++) {
		struct tree t;
		tree_make(&t, "held");
		char a[PATH_MAX + 16], res[4096];
		snprintf(a, sizeof a, "%s/log", t.ws);
		put_file(a, "before\n");
		struct bbx_run run;
		tree_run(&t, &run);
		struct bbx_pending p;
		ck_assert_int_eq(bbx_cap_open(&run, "open", a, O_WRONLY | O_TRUNC, 0, res, &p), 0);
		int fd = open(a, O_WRONLY | O_TRUNC);
		ck_assert_int_ge(fd, 0);
		bbx_cap_done(&run, "open", &p, fd, 0, fd);
		ck_assert_int_eq(write(fd, "early\n", 6), 6);
		struct stat sb;
		ck_assert_int_eq(fstat(fd, &sb), 0);
		struct bbx_held h = {.dev = sb.st_dev, .ino = sb.st_ino, .pid = 42, .comm = "straggler"};
		size_t n = 0;
		ck_assert_int_eq(bbx_seal_run(&run, t.jd, &n, NULL, held ? &h : NULL, held), 0);
		bbx_run_close(&run);
		ck_assert_int_eq(write(fd, "written after the seal\n", 23), 23);
		close(fd);

		struct bbx_undo_opts o = {0};
		struct bbx_undo_stats st;
		ck_assert_int_eq(bbx_undo_run(t.jd, &o, &st), 0);
		ck_assert_uint_eq(st.errors, 0);
		ck_assert_uint_eq(st.conflicts, held ? 0 : 1);
		assert_file(a, "before\n");
		unit_rm_rf(t.tmp);
	}
}
END_TEST

/* A removed directory's extended attributes go into its RMDIR record and come back
 * with it (an access ACL is one): here 40 of them, whose names overflow the capture's
 * first buffer (1 KiB), one value of 1,500 bytes and an empty one. */
START_TEST(undo_rmdir_restores_xattrs)
{
	struct tree t;
	tree_make(&t, "dirx");
	char d[PATH_MAX + 16], big[1500], name[64], v[2048];
	snprintf(d, sizeof d, "%s/d", t.ws);
	ck_assert_int_eq(mkdir(d, 0750), 0);
	memset(big, 'v', sizeof big);
	if (setxattr(d, "user.big", big, sizeof big, 0) < 0) {
		unit_rm_rf(t.tmp);
		return; /* no user xattrs on this file system: nothing to check */
	}
	ck_assert_int_eq(setxattr(d, "user.empty", "", 0, 0), 0);
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof name, "user.attribute-number-%02d-padded", i);
		ck_assert_int_eq(setxattr(d, name, name + 22, 2, 0), 0);
	}
	struct bbx_run run;
	tree_run(&t, &run);
	ck_assert_int_eq(bbx_cap_remove(&run, "rmdir", d), 0);
	ck_assert_int_eq(rmdir(d), 0);
	bbx_run_close(&run);

	struct bbx_undo_stats st;
	undo_clean(&t, &st, 0);
	ck_assert_int_eq(getxattr(d, "user.big", v, sizeof v), (ssize_t)sizeof big);
	ck_assert_int_eq(memcmp(v, big, sizeof big), 0);
	ck_assert_int_eq(getxattr(d, "user.empty", v, sizeof v), 0);
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof name, "user.attribute-number-%02d-padded", i);
		ck_assert_int_eq(getxattr(d, name, v, sizeof v), 2);
		ck_assert_int_eq(memcmp(v, name + 22, 2), 0);
	}
	ck_assert_int_eq(listxattr(d, v, sizeof v), 9 + 11 + 40 * 32); /* no more, no fewer */
	struct stat sb;
	ck_assert_int_eq(stat(d, &sb), 0);
	ck_assert_uint_eq(sb.st_mode & 07777, 0750);
	unit_rm_rf(t.tmp);
}
END_TEST

/* A pre-image copy carries every extended attribute: a list of names longer than 4 KiB
 * and a value of 10,000 bytes too (they were dropped: bbx_copy_xattrs read them into
 * 4 KiB buffers).  On a tmpfs, which allows both; skipped where there is none. */
START_TEST(copy_xattrs_large)
{
	char a[64], b[64], name[96], v[16384];
	snprintf(a, sizeof a, "/dev/shm/bbx-xa.%d", (int)getpid());
	snprintf(b, sizeof b, "/dev/shm/bbx-xb.%d", (int)getpid());
	int fa = open(a, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int fb = open(b, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	memset(v, 'v', 10000);
	if (fa < 0 || fb < 0 || fsetxattr(fa, "user.big", v, 10000, 0) < 0) {
		if (fa >= 0)
			close(fa), unlink(a);
		if (fb >= 0)
			close(fb), unlink(b);
		return;
	}
	for (int i = 0; i < 150; i++) {
		snprintf(name, sizeof name, "user.attribute-%03d-with-a-long-name", i);
		ck_assert_int_eq(fsetxattr(fa, name, name + 15, 3, 0), 0);
	}
	ck_assert_int_gt(flistxattr(fa, NULL, 0), 4096);
	bbx_copy_xattrs(fa, fb);
	memset(v, 0, sizeof v);
	ck_assert_int_eq(fgetxattr(fb, "user.big", v, sizeof v), 10000);
	ck_assert_int_eq(v[0], 'v');
	ck_assert_int_eq(v[9999], 'v');
	for (int i = 0; i < 150; i++) {
		snprintf(name, sizeof name, "user.attribute-%03d-with-a-long-name", i);
		ck_assert_int_eq(fgetxattr(fb, name, v, sizeof v), 3);
		ck_assert_int_eq(memcmp(v, name + 15, 3), 0);
	}
	close(fa);
	close(fb);
	unlink(a);
	unlink(b);
}
END_TEST

/* Killed between a removal's PRESERVE (how=link) and the removal: the inode is still at
 * its path and objects/ holds a second link to it.  Undo leaves the file as it was, link
 * count included (invariant 7; found by tests/e2e/t-crash.sh). */
START_TEST(undo_kept_link_of_file_still_there)
{
	struct tree t;
	tree_make(&t, "keptlink");
	char a[PATH_MAX + 16];
	snprintf(a, sizeof a, "%s/a", t.ws);
	put_file(a, "still here\n");
	struct bbx_run run;
	tree_run(&t, &run);
	ck_assert_int_eq(bbx_cap_remove(&run, "unlink", a), 0);
	bbx_run_close(&run); /* killed: the unlink never made */
	struct stat sb;
	ck_assert_int_eq(lstat(a, &sb), 0);
	ck_assert_uint_eq(sb.st_nlink, 2); /* the file and its kept link */

	struct bbx_undo_stats st;
	undo_clean(&t, &st, 0);
	ck_assert_int_eq(lstat(a, &sb), 0);
	ck_assert_uint_eq(sb.st_nlink, 1);
	assert_file(a, "still here\n");
	ck_assert_uint_eq(st.orphans, 0);
	/* Undoing the undo puts the kept link back, as the killed run left it. */
	char u[PATH_MAX + 16];
	snprintf(u, sizeof u, "%s/undo", t.jd);
	struct bbx_undo_opts o = {0};
	ck_assert_int_eq(bbx_undo_run(u, &o, &st), 0);
	ck_assert_uint_eq(st.errors, 0);
	ck_assert_int_eq(lstat(a, &sb), 0);
	ck_assert_uint_eq(sb.st_nlink, 2);
	unit_rm_rf(t.tmp);
}
END_TEST

/* Killed between keeping a pre-image in objects/ and appending the record that names
 * it: no record names the object.  A link (its inode still in the tree) is removed; a
 * copy (one link, only space) stays; an object a record names is left to the replay. */
START_TEST(undo_drops_orphan_links)
{
	struct tree t;
	tree_make(&t, "orphans");
	char a[PATH_MAX + 16], b[PATH_MAX + 16], obj[PATH_MAX + 32], copy[PATH_MAX + 32];
	snprintf(a, sizeof a, "%s/a", t.ws);
	snprintf(b, sizeof b, "%s/b", t.ws);
	put_file(a, "linked, never recorded\n");
	put_file(b, "removed with its record\n");
	struct bbx_run run;
	tree_run(&t, &run);
	ck_assert_int_eq(bbx_cap_remove(&run, "unlink", b), 0);
	ck_assert_int_eq(unlink(b), 0);
	bbx_run_close(&run);
	snprintf(obj, sizeof obj, "%s/objects/00/900", t.jd);
	snprintf(copy, sizeof copy, "%s/objects/00/901", t.jd);
	ck_assert_int_eq(link(a, obj), 0);
	put_file(copy, "a copy never recorded\n");

	struct bbx_undo_opts dry = {.dry_run = 1};
	struct bbx_undo_stats st;
	ck_assert_int_eq(bbx_undo_run(t.jd, &dry, &st), 0);
	ck_assert_uint_eq(st.orphans, 1);
	ck_assert_int_eq(access(obj, F_OK), 0); /* a dry run removes nothing */

	undo_clean(&t, &st, 0);
	ck_assert_uint_eq(st.orphans, 1);
	struct stat sb;
	ck_assert_int_eq(lstat(a, &sb), 0);
	ck_assert_uint_eq(sb.st_nlink, 1);
	ck_assert_int_eq(access(obj, F_OK), -1);
	ck_assert_int_eq(access(copy, F_OK), 0);
	assert_file(b, "removed with its record\n");
	unit_rm_rf(t.tmp);
}
END_TEST

/* The lexical test bbx_path_abs's output and the shim's policy rely on (path.c). */
START_TEST(path_clean)
{
	const char *clean[] = {"/", "/a/b", "a", "a/b", ".config", "a/.hidden", "a/..b", "/a/...",
			       "x."};
	const char *not_clean[] = {".", "..", "./a", "../a", "a/.", "a/..", "a/./b", "a/../b",
				   "a//b", "//a", "/a/./b", "/a/.."};
	for (size_t i = 0; i < sizeof clean / sizeof *clean; i++)
		ck_assert_msg(bbx_path_clean(clean[i]), "%s", clean[i]);
	for (size_t i = 0; i < sizeof not_clean / sizeof *not_clean; i++)
		ck_assert_msg(!bbx_path_clean(not_clean[i]), "%s", not_clean[i]);
}
END_TEST

/* The tools' path map (seal, undo, bbx-diff): keys found again with their values across
 * every growth, past the size from which its table is a populated mapping (pathmap.c),
 * and keys that differ in their last byte only. */
START_TEST(pathmap_grows_and_finds)
{
	enum { N = 20000 };
	static char keys[N][48];
	struct bbx_pathmap m = {0};
	size_t *slot;
	for (int i = 0; i < N; i++) {
		snprintf(keys[i], sizeof keys[i], "/work/ws/node_modules/p%d/f%d", i / 7, i % 7);
		ck_assert_int_eq(bbx_pathmap_put(&m, keys[i], &slot), 1);
		*slot = (size_t)i + 1;
	}
	ck_assert_uint_eq(m.len, N);
	ck_assert_uint_ge(m.cap, 2 * N);
	for (int i = 0; i < N; i++) {
		char again[48];
		memcpy(again, keys[i], sizeof again); /* another pointer, the same words */
		size_t *v = bbx_pathmap_get(&m, again);
		ck_assert_ptr_nonnull(v);
		ck_assert_uint_eq(*v, (size_t)i + 1);
		ck_assert_int_eq(bbx_pathmap_put(&m, again, &slot), 0);
		ck_assert_ptr_eq(slot, v);
	}
	ck_assert_ptr_null(bbx_pathmap_get(&m, "/work/ws/node_modules/p0/f7"));
	ck_assert_ptr_null(bbx_pathmap_get(&m, "/work/ws/node_modules/p0/f"));
	ck_assert_uint_eq(m.len, N);
	bbx_pathmap_free(&m);
	ck_assert_ptr_null(bbx_pathmap_get(&m, keys[0]));
}
END_TEST

/* The seal's first pass done while the run still writes (bbx_seal_pre_step, as bbx-run
 * does while it waits for the command): the FINAL records must be exactly one per
 * touched path, in the order the journal first names them, as when the seal reads the
 * whole journal itself - here with the prescan having taken all of it in two steps, and
 * (torn) with damaged bytes after its first step, which it stops at and the seal's
 * reader resynchronises past. */
static const char *seal_touched[] = {"CREATE", "PRESERVE", "SIZE", "RMDIR", "RENAME", "META"};

/* The journal's touched paths in first-named order, and its FINAL paths, as one string
 * each ("a\nb\n"); the offset of the first FINAL. */
static void seal_lists(const char *jd, char **touched, char **finals, size_t *first_final)
{
	char jp[PATH_MAX + 16];
	snprintf(jp, sizeof jp, "%s/journal", jd);
	struct bbx_reader r;
	ck_assert_int_eq(bbx_reader_open(&r, jp), 0);
	struct bbx_pathmap m = {0};
	size_t tl = 0, fl = 0, tc = 1 << 20, fc = 1 << 20, off, *slot;
	char *t = calloc(1, tc), *f = calloc(1, fc);
	ck_assert(t && f);
	*first_final = 0;
	struct bbx_rec rec;
	while (bbx_reader_next(&r, &rec, &off) == BBX_READ_OK) {
		const char *ty = bbx_rec_type_name(rec.type);
		if (!strcmp(ty, "FINAL")) {
			if (!*first_final)
				*first_final = off;
			fl += (size_t)snprintf(f + fl, fc - fl, "%s\n", rec.path);
			continue;
		}
		if (*first_final)
			continue;
		int hit = 0;
		for (size_t i = 0; i < sizeof seal_touched / sizeof *seal_touched; i++)
			hit |= !strcmp(ty, seal_touched[i]);
		if (!hit || (rec.type == BBX_REC_CREATE && rec.kind == BBX_KIND_ANON))
			continue;
		const char *two[2] = {rec.path, rec.type == BBX_REC_RENAME ? rec.path2 : NULL};
		for (int i = 0; i < 2; i++)
			if (two[i] && bbx_pathmap_put(&m, two[i], &slot) == 1)
				tl += (size_t)snprintf(t + tl, tc - tl, "%s\n", two[i]);
	}
	ck_assert_uint_lt(tl, tc - 1);
	ck_assert_uint_lt(fl, fc - 1);
	bbx_pathmap_free(&m);
	bbx_reader_close(&r);
	*touched = t;
	*finals = f;
}

/* n files made in dir (CREATE and its RESULT, as the shim records them). */
static void make_files(struct bbx_run *run, const char *dir, const char *tag, int n)
{
	char p[PATH_MAX + 64], res[4096];
	struct bbx_pending pend = {0};
	for (int i = 0; i < n; i++) {
		snprintf(p, sizeof p, "%s/%s%d", dir, tag, i);
		ck_assert_int_eq(bbx_cap_open(run, "open", p, O_WRONLY | O_CREAT, 0644, res, &pend), 0);
		int fd = open(p, O_WRONLY | O_CREAT, 0644);
		ck_assert_int_ge(fd, 0);
		bbx_cap_done(run, "open", &pend, fd, 0, fd);
		close(fd);
	}
}

static void seal_prescan(int torn)
{
	struct tree t;
	tree_make(&t, torn ? "pretorn" : "prescan");
	char a[PATH_MAX + 16], b[PATH_MAX + 16], from[PATH_MAX + 64], to[PATH_MAX + 64];
	snprintf(a, sizeof a, "%s/a", t.ws);
	snprintf(b, sizeof b, "%s/b", t.ws);
	ck_assert_int_eq(mkdir(a, 0755), 0);
	struct bbx_run run;
	tree_run(&t, &run);
	make_files(&run, a, "f", 300);
	struct bbx_seal_pre *pre = bbx_seal_pre_new(&run, t.jd);
	cpu_set_t cpus;
	int ncpu = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
	if (ncpu < 2) {
		ck_assert_ptr_null(pre); /* one CPU: no prescan, the seal reads it all */
	} else {
		ck_assert_ptr_nonnull(pre);
		bbx_seal_pre_step(pre);
		ck_assert_uint_eq(bbx_seal_pre_taken(pre), run.st->end);
	}
	size_t taken = pre ? bbx_seal_pre_taken(pre) : 0;
	if (torn) {
		/* Bytes of no record, accounted for as a short write's are (writer.c). */
		char jp[PATH_MAX + 16];
		snprintf(jp, sizeof jp, "%s/journal", t.jd);
		int fd = open(jp, O_WRONLY | O_APPEND);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, "BBX1 torn record, not one", 25), 25);
		close(fd);
		__atomic_add_fetch(&run.st->end, 25, __ATOMIC_RELEASE);
	}
	/* The rest of the run: new files in a new directory, renames and removals of the
	 * first part's files, with paths named before and not. */
	struct bbx_pending pend = {0};
	ck_assert_int_eq(bbx_cap_create(&run, "mkdir", b, BBX_KIND_DIR, 0755, NULL, &pend), 0);
	ck_assert_int_eq(mkdir(b, 0755), 0);
	bbx_cap_done(&run, "mkdir", &pend, 0, 0, -1);
	make_files(&run, b, "g", 200);
	for (int i = 0; i < 300; i += 7) {
		snprintf(from, sizeof from, "%s/f%d", a, i);
		snprintf(to, sizeof to, "%s/r%d", b, i);
		ck_assert_int_eq(bbx_cap_rename(&run, "rename", from, to, 0), 0);
		ck_assert_int_eq(rename(from, to), 0);
		snprintf(from, sizeof from, "%s/f%d", a, i + 1);
		ck_assert_int_eq(bbx_cap_remove(&run, "unlink", from), 0);
		ck_assert_int_eq(unlink(from), 0);
	}
	if (pre) {
		/* Clean: all of it taken by the prescan, every record type above through it.
		 * Torn: it stops at the torn bytes, the seal's reader reads on. */
		bbx_seal_pre_step(pre);
		ck_assert_uint_eq(bbx_seal_pre_taken(pre), torn ? taken : run.st->end);
	}
	size_t n = 0;
	ck_assert_int_eq(bbx_seal_run(&run, t.jd, &n, pre, NULL, 0), 0);
	bbx_run_close(&run);

	char *touched, *finals;
	size_t first_final;
	seal_lists(t.jd, &touched, &finals, &first_final);
	ck_assert_uint_gt(first_final, 0);
	if (pre) {
		ck_assert_uint_gt(taken, 0);
		ck_assert_uint_lt(taken, first_final); /* the second part was read after it */
	}
	/* Compared whole, named in the message only by their first difference. */
	size_t d = 0;
	while (finals[d] && finals[d] == touched[d])
		d++;
	ck_assert_msg(!finals[d] && !touched[d], "FINAL and touched paths differ at byte %zu: %.80s / %.80s",
		      d, finals + d, touched + d);
	size_t lines = 0;
	for (const char *c = touched; *c; c++)
		lines += *c == '\n';
	ck_assert_uint_eq(lines, n);
	/* a/f*, b/, b/g*, b/r* (the removed files were named when made) */
	ck_assert_uint_eq(n, 300 + 1 + 200 + 43);
	free(touched);
	free(finals);
	struct bbx_undo_stats st;
	struct bbx_undo_opts o = {0};
	ck_assert_int_eq(bbx_undo_run(t.jd, &o, &st), 0);
	ck_assert_uint_eq(st.errors, 0);
	ck_assert_uint_eq(st.conflicts, 0);
	ck_assert_int_eq(access(b, F_OK), -1);
	unit_rm_rf(t.tmp);
}

START_TEST(seal_prescan_finals)
{
	seal_prescan(0);
}
END_TEST

START_TEST(seal_prescan_torn_between)
{
	seal_prescan(1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("undo");
	TCase *tc = tcase_create("plan");
	tcase_add_test(tc, plan_order_and_actions);
	tcase_add_test(tc, plan_torn_tail_still_plans);
	tcase_add_test(tc, plan_failed_calls_are_skipped);
	tcase_add_test(tc, undo_run_restores_real_tree);
	tcase_add_test(tc, undo_excl_without_result);
	tcase_add_test(tc, undo_kept_link_of_file_still_there);
	tcase_add_test(tc, undo_link_without_result_source_gone);
	tcase_add_test(tc, undo_link_without_result_relative_source);
	tcase_add_test(tc, undo_drops_orphan_links);
	tcase_add_test(tc, seal_held_file_noted);
	tcase_add_test(tc, undo_rmdir_restores_xattrs);
	tcase_add_test(tc, copy_xattrs_large);
	tcase_add_test(tc, path_clean);
	tcase_add_test(tc, pathmap_grows_and_finds);
	tcase_add_test(tc, seal_prescan_finals);
	tcase_add_test(tc, seal_prescan_torn_between);
	suite_add_tcase(s, tc);
	return unit_main(s);
}
