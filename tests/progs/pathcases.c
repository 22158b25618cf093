/* SPDX-License-Identifier: MIT
 *
 * pathcases.c - 163 mutating calls on awkward names, each printed with its outcome, then
 * the tree they leave (t-slash.sh runs it bare and under bbx-run and compares).  A name
 * ending in '/', ".", "..", an empty one, dangling and looping symlinks, a file used as
 * a directory, renames into themselves, over directories and files, exchanges, links to
 * directories and symlinks, metadata through dangling links.  The shim must change
 * none of these outcomes: it resolves names to capture them, and a name it resolves
 * differently from the kernel is a call it changes (a trailing slash once lost made
 * open("x/", O_CREAT) create x).  Four groups, each in a fresh directory.
 *
 *   pathcases DIR   runs the groups in DIR/1 .. DIR/4 (made here)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

/* A call and its outcome: 1 for any positive result (descriptors differ run to run). */
#define T(expr)                                                                             \
	do {                                                                                \
		errno = 0;                                                                  \
		long r_ = (long)(expr);                                                     \
		printf("%-60s = %ld %s\n", #expr, r_ > 0 ? 1 : r_, r_ < 0 ? strerror(errno) : ""); \
	} while (0)

static void put(const char *p, const char *s)
{
	int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (fd < 0 || write(fd, s, strlen(s)) != (ssize_t)strlen(s) || close(fd) < 0) {
		perror(p);
		exit(2);
	}
}

static void fopen_close(const char *p, const char *mode, long *r)
{
	FILE *f = fopen(p, mode);
	*r = f ? 1 : -1;
	if (f)
		fclose(f);
}
static long fopen_r(const char *p, const char *mode)
{
	long r;
	fopen_close(p, mode, &r);
	return r;
}

/* The tree below the working directory: name, type, size (regular files), mode, link
 * count, symlink target, sorted by name (scandir), depth first. */
static void list(const char *dir)
{
	struct dirent **e;
	int n = scandir(dir, &e, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		char p[4096];
		if (strcmp(e[i]->d_name, ".") && strcmp(e[i]->d_name, "..")) {
			snprintf(p, sizeof p, "%s/%s", dir, e[i]->d_name);
			struct stat sb;
			char l[256] = "";
			if (lstat(p, &sb) == 0) {
				if (S_ISLNK(sb.st_mode)) {
					ssize_t k = readlink(p, l, sizeof l - 1);
					l[k > 0 ? k : 0] = 0;
				}
				printf("%s %o %lld %lu %s\n", p, (unsigned)sb.st_mode,
				       S_ISREG(sb.st_mode) ? (long long)sb.st_size : 0LL,
				       (unsigned long)sb.st_nlink, l);
				if (S_ISDIR(sb.st_mode))
					list(p);
			}
		}
		free(e[i]);
	}
	free(e);
}

static void group1(void)
{

	close(open("f", O_CREAT | O_WRONLY, 0600));
	symlink("f", "lnk");
	mkdir("d", 0755);
	T(open("nf/", O_CREAT | O_WRONLY, 0600));
	T(open("nf2/", O_CREAT | O_EXCL | O_WRONLY, 0600));
	T(open("f/", O_RDONLY));
	T(open("lnk/", O_RDONLY));
	T(open("f/", O_WRONLY));
	T(open("f/", O_WRONLY | O_TRUNC));
	T(open("f/", O_CREAT | O_WRONLY, 0600));
	T(openat(AT_FDCWD, "nf3/", O_CREAT | O_WRONLY, 0600));
	T(creat("nf4/", 0600));
	T(open("d/", O_RDONLY));
	T(open("d/", O_WRONLY));
	T(unlink("f/"));
	T(unlink("lnk/"));
	T(rename("f/", "g"));
	T(rename("f", "g/"));
	T(mkdir("nd/", 0755));
	T(rmdir("nd/"));
	T(link("f", "h/"));
	T(symlink("f", "s/"));
	T(mknod("n/", S_IFIFO | 0600, 0));
	T(truncate("f/", 0));
	T(chmod("f/", 0644));
	T(access("nf", F_OK));
	T(access("nf2", F_OK));
	T(access("nf3", F_OK));
	T(access("nf4", F_OK));
	T(access("h", F_OK));
	T(access("s", F_OK));
	T(access("n", F_OK));
	T(access("g", F_OK));
}

static void group2(void)
{

	close(open("f", O_CREAT | O_WRONLY, 0600));
	symlink("f", "lnk");
	symlink("d", "dl");
	symlink("nowhere", "dangling");
	mkdir("d", 0755);
	T(open("f/.", O_WRONLY));
	T(open("f/..", O_WRONLY));
	T(open("f/../n1", O_CREAT | O_WRONLY, 0600));
	T(open("nx/../n2", O_CREAT | O_WRONLY, 0600));
	T(open("d/../n3", O_CREAT | O_WRONLY, 0600));
	T(open("dl/../n4", O_CREAT | O_WRONLY, 0600));
	T(open("d/./n5", O_CREAT | O_WRONLY, 0600));
	T(open("d//n6", O_CREAT | O_WRONLY, 0600));
	T(open("lnk/../n7", O_CREAT | O_WRONLY, 0600));
	T(open("d/.", O_WRONLY));
	T(open("d/..", O_CREAT | O_WRONLY, 0600));
	T(open("dangling", O_CREAT | O_WRONLY, 0600));
	T(open("dl/n8", O_CREAT | O_WRONLY, 0600));
	T(mkdir("f/../m1", 0755));
	T(mkdir("nx/../m2", 0755));
	T(unlink("nx/../f"));
	T(rename("f", "nx/../g"));
	T(rename("nx/../f", "g2"));
	T(symlink("x", "nx/../s1"));
	T(link("f", "nx/../h1"));
	T(truncate("nx/../f", 0));
	T(chmod("nx/../f", 0600));
	T(access("n1", F_OK)); T(access("n2", F_OK)); T(access("n3", F_OK)); T(access("n4", F_OK));
	T(access("d/n5", F_OK)); T(access("d/n6", F_OK)); T(access("n7", F_OK)); T(access("nowhere", F_OK));
	T(access("d/n8", F_OK)); T(access("m1", F_OK)); T(access("m2", F_OK)); T(access("f", F_OK));
	T(access("g", F_OK)); T(access("g2", F_OK)); T(access("s1", F_OK)); T(access("h1", F_OK));
}

static void group3(void)
{

	put("f", "file f\n"); put("g", "file g\n"); put("ro", "read only\n"); chmod("ro", 0444);
	symlink("f", "lnk"); symlink("nowhere", "dangling"); symlink("d", "dl");
	mkdir("d", 0755); mkdir("e", 0755); put("e/x", "x\n"); mkdir("d/sub", 0755);
	mkfifo("fifo", 0644); link("f", "f2");
	T(open("dangling", O_CREAT | O_EXCL | O_WRONLY, 0600));
	T(open("lnk", O_NOFOLLOW | O_WRONLY));
	T(open("lnk", O_NOFOLLOW | O_CREAT | O_WRONLY, 0600));
	T(open("newdir_c", O_CREAT | O_DIRECTORY | O_RDWR, 0600));
	T(open("fifo", O_WRONLY | O_NONBLOCK));
	T(open("d", O_WRONLY | O_TRUNC));
	T(open("ro", O_WRONLY | O_APPEND));
	T(open("", O_WRONLY | O_CREAT, 0600));
	T(openat(AT_FDCWD, "e/x", O_WRONLY | O_TRUNC));
	T(openat(open("d", O_RDONLY), "../g", O_WRONLY | O_APPEND));
	T(openat(open("f", O_RDONLY), "x", O_WRONLY | O_CREAT, 0600));
	T(truncate("d", 0));
	T(truncate("dangling", 0));
	T(truncate("lnk", 3));
	T(rename("d", "d/sub/x"));
	T(rename("e", "d"));
	T(rename("f", "d"));
	T(rename("d", "g"));
	T(rename("f", "f2"));
	T(rename("f", "f"));
	T(renameat2(AT_FDCWD, "g", AT_FDCWD, "ro", RENAME_NOREPLACE));
	T(renameat2(AT_FDCWD, "g", AT_FDCWD, "missing", RENAME_EXCHANGE));
	T(renameat2(AT_FDCWD, "g", AT_FDCWD, "ro", RENAME_EXCHANGE));
	T(rmdir("."));
	T(rmdir("e"));
	T(rmdir("f"));
	T(rmdir("dl"));
	T(unlink("d"));
	T(unlink("dl"));
	T(unlinkat(AT_FDCWD, "f2", AT_REMOVEDIR));
	T(link("d", "dlink"));
	T(link("lnk", "lnk2"));
	T(linkat(AT_FDCWD, "lnk", AT_FDCWD, "lnk3", AT_SYMLINK_FOLLOW));
	T(link("missing", "m2"));
	T(link("f", "g"));
	T(mkdir("f", 0755));
	T(mkdir("dangling", 0755));
	T(mkdir("lnk/x", 0755));
	T(mknod("reg", S_IFREG | 0600, 0));
	T(symlink("whatever", "f"));
	T(symlink("", "emptylink"));
	T(chmod("dangling", 0600));
	T(chmod("lnk", 0600));
	T(fchmodat(AT_FDCWD, "lnk", 0644, AT_SYMLINK_NOFOLLOW));
	T(lchown("dangling", 0, 0));
	T(utimensat(AT_FDCWD, "dangling", NULL, AT_SYMLINK_NOFOLLOW));
	T(utimensat(AT_FDCWD, "dangling", NULL, 0));
	T(setxattr("lnk", "user.a", "v", 1, 0));
	T(lsetxattr("lnk", "user.a", "v", 1, 0));
	T(removexattr("f", "user.none"));
	T(access("x", F_OK)); T(access("newdir_c", F_OK)); T(access("nowhere", F_OK));
}

static void group4(void)
{

	close(open("f", O_CREAT | O_WRONLY, 0644)); mkdir("d", 0755);
	int dfd = open("d", O_RDONLY | O_DIRECTORY);
	T(unlink("")); T(rmdir("")); T(mkdir("", 0755)); T(rename("", "x")); T(rename("f", ""));
	T(link("f", "")); T(link("", "y")); T(symlink("x", "")); T(truncate("", 0)); T(chmod("", 0600));
	T(creat("", 0600)); T(fopen_r("", "w")); T(mknod("", S_IFIFO | 0600, 0));
	T(utimensat(AT_FDCWD, "", NULL, 0)); T(chown("", 0, 0)); T(setxattr("", "user.a", "v", 1, 0));
	T(openat(dfd, "", O_WRONLY | O_CREAT, 0600)); T(unlinkat(dfd, "", 0)); T(mkdirat(dfd, "", 0755));
	T(fchmodat(dfd, "", 0700, 0)); T(fchownat(dfd, "", 0, 0, AT_EMPTY_PATH)); T(utimensat(dfd, "", NULL, AT_EMPTY_PATH));
	T(linkat(dfd, "", AT_FDCWD, "dl2", AT_EMPTY_PATH)); T(renameat(dfd, "", AT_FDCWD, "z"));
	T(open(".", O_WRONLY)); T(open("..", O_RDWR)); T(mkdir(".", 0755)); T(unlink(".")); T(rename(".", "q"));
	T(rename("f", ".")); T(link("f", ".")); T(symlink("x", ".")); T(mknod(".", S_IFIFO | 0600, 0));
	T(mkdir("nd/.", 0755)); T(mkdir("nd2/..", 0755)); T(unlink("f/.")); T(rename("f/.", "q2")); T(rename("d/.", "q3"));
	T(rmdir("d/.")); T(rmdir("d/..")); T(symlink("x", "s/.")); T(link("f", "h/."));
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: pathcases DIR\n");
		return 2;
	}
	void (*groups[])(void) = {group1, group2, group3, group4};
	for (int g = 0; g < 4; g++) {
		char d[4096];
		snprintf(d, sizeof d, "%s/%d", argv[1], g + 1);
		if (mkdir(d, 0755) < 0 || chdir(d) < 0) {
			perror(d);
			return 2;
		}
		printf("== group %d\n", g + 1);
		groups[g]();
		list(".");
	}
	return 0;
}
