/* SPDX-License-Identifier: MIT
 *
 * unit.h - helpers shared by the check_*.c unit tests: a scratch directory per test
 * binary, small file helpers, and the TAP main.
 *
 * Every test binary prints TAP and nothing else on stdout (automake's tap-driver counts
 * each case).  Helpers never print; failures go through ck_assert so check reports them.
 */
#ifndef BBX_UNIT_H
#define BBX_UNIT_H

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The binary's scratch directory: made by unit_main(), removed when the suite ends. */
static char unit_base[PATH_MAX];

static inline int unit_rm_one(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
	(void)sb;
	(void)f;
	if (flag == FTW_DP)
		(void)rmdir(p);
	else
		(void)unlink(p);
	return 0;
}

static inline void unit_rm_rf(const char *path)
{
	(void)nftw(path, unit_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh directory under the scratch directory, named after the test. */
static inline void unit_mkdtemp(char *out, size_t cap, const char *tag)
{
	int n = snprintf(out, cap, "%s/%s.XXXXXX", unit_base, tag);
	ck_assert(n > 0 && (size_t)n < cap);
	ck_assert_ptr_nonnull(mkdtemp(out));
}

static inline void unit_write_file(const char *path, const void *data, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, data, n), (ssize_t)n);
	ck_assert_int_eq(close(fd), 0);
}

/* Whole file into a malloc'd buffer (NUL-terminated for convenience). */
static inline void *unit_read_file(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	struct stat sb;
	ck_assert_int_eq(fstat(fd, &sb), 0);
	char *buf = malloc((size_t)sb.st_size + 1);
	ck_assert_ptr_nonnull(buf);
	size_t got = 0;
	while (got < (size_t)sb.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)sb.st_size - got);
		ck_assert_int_gt(n, 0);
		got += (size_t)n;
	}
	buf[got] = 0;
	close(fd);
	*len = got;
	return buf;
}

static inline off_t unit_file_size(const char *path)
{
	struct stat sb;
	ck_assert_int_eq(stat(path, &sb), 0);
	return sb.st_size;
}

/* Runs the suite with TAP on stdout; exit status 1 if any case failed. */
static inline int unit_main(Suite *s)
{
	const char *t = getenv("TMPDIR");
	snprintf(unit_base, sizeof unit_base, "%s/bbx-unit.XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(unit_base)) {
		perror("mkdtemp");
		return 99;
	}
	SRunner *sr = srunner_create(s);
	srunner_set_tap(sr, "-");
	srunner_run_all(sr, CK_SILENT);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	unit_rm_rf(unit_base);
	return failed != 0 ? 1 : 0;
}

#endif
