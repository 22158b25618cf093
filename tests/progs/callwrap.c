/* SPDX-License-Identifier: MIT
 *
 * callwrap.c - calls exactly one wrapped libc entry point, by its exported name.
 *
 *   callwrap NAME ARG...   call NAME with arguments from the command line; exit 0 if it
 *                          succeeded, else print the errno and exit 1
 *   callwrap --list        print every NAME implemented, one per line
 *   callwrap NAME --help   print the arguments NAME takes
 *
 * This is the "small program that calls it" half of STYLE.md's rule that every entry of
 * shim/wrappers.def is proven by a test (tests/e2e/t-entrypoints.sh is the other half).
 * It must call the very symbol it is named after: it is built without
 * _FILE_OFFSET_BITS=64 (so open and open64 stay distinct symbols) and without
 * _FORTIFY_SOURCE (so open stays open and the fortified __open_2 is called only where
 * asked for).  tests/e2e/t-entrypoints.sh checks the result with nm.
 *
 * Helper descriptors (the directory of an *at call, the file of an f* call) are opened
 * with the raw openat syscall, so the shim never sees them: the only journaled call is
 * NAME itself, and a write descriptor counts as one the run did not open (what
 * copy_file_range and sendfile must capture).  "fd:N" instead of a path uses the
 * inherited descriptor N; "AT_FDCWD" as a directory means the current directory.
 * Exec-family names run ARG... as the new program (argv[0] = PROG as given), so
 * `callwrap execv /bin/sh sh -c 'echo x > f'` leaves a journaled child behind.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#undef _FILE_OFFSET_BITS

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <sched.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <sys/uio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stddef.h>
#include <unistd.h>
#include <utime.h>
#include <dirent.h>
#include <linux/openat2.h>
#include <fts.h>
#include <ftw.h>
#include <pty.h>

/* The stat entry points of binaries built against glibc < 2.33 (no longer declared). */
int __xstat(int, const char *, struct stat *);
int __xstat64(int, const char *, struct stat64 *);
int __lxstat(int, const char *, struct stat *);
int __lxstat64(int, const char *, struct stat64 *);
int __fxstatat(int, int, const char *, struct stat *, int);
int __fxstatat64(int, int, const char *, struct stat64 *, int);

extern char **environ;

/* Declared by glibc only under _FORTIFY_SOURCE, which this program is built without. */
extern int __open_2(const char *, int);
extern int __open64_2(const char *, int);
extern int __openat_2(int, const char *, int);
extern int __openat64_2(int, const char *, int);
/* Declared by glibc only for some feature sets; spelled out so the symbol is certain. */
extern int lchmod(const char *, mode_t);
extern int futimesat(int, const char *, const struct timeval[2]);
extern int execveat(int, const char *, char *const[], char *const[], int);

static const char *prog = "callwrap";
static const char *cur = "?"; /* the entry point being called, for messages */

/* Exit status 1 with a message that is not an errno (bad argument, child status). */
#define FAILED (-1)

static void fail(const char *what, const char *arg)
{
	fprintf(stderr, "%s: %s: %s '%s'\n", prog, cur, what, arg);
}

/* ---- argument parsing -------------------------------------------------------------- */

static const struct {
	const char *name;
	long value;
} flag_names[] = {
	{"rdonly", O_RDONLY},     {"wronly", O_WRONLY},       {"rdwr", O_RDWR},
	{"creat", O_CREAT},       {"excl", O_EXCL},           {"trunc", O_TRUNC},
	{"append", O_APPEND},     {"nofollow", O_NOFOLLOW},   {"cloexec", O_CLOEXEC},
	{"directory", O_DIRECTORY}, {"tmpfile", O_TMPFILE},   {"path", O_PATH},
	{"sync", O_SYNC},         {"noctty", O_NOCTTY},       {"nonblock", O_NONBLOCK},
	{"largefile", O_LARGEFILE},
	/* *at flags */
	{"symlink_nofollow", AT_SYMLINK_NOFOLLOW}, {"symlink_follow", AT_SYMLINK_FOLLOW},
	{"removedir", AT_REMOVEDIR}, {"empty_path", AT_EMPTY_PATH},
	/* renameat2 */
	{"noreplace", RENAME_NOREPLACE}, {"exchange", RENAME_EXCHANGE},
	{"whiteout", RENAME_WHITEOUT},
	/* fallocate */
	{"keep_size", FALLOC_FL_KEEP_SIZE}, {"punch_hole", FALLOC_FL_PUNCH_HOLE},
	{"zero_range", FALLOC_FL_ZERO_RANGE}, {"collapse_range", FALLOC_FL_COLLAPSE_RANGE},
	{"insert_range", FALLOC_FL_INSERT_RANGE},
	/* setxattr */
	{"xcreate", XATTR_CREATE}, {"xreplace", XATTR_REPLACE},
	/* mknod file types */
	{"fifo", S_IFIFO}, {"reg", S_IFREG}, {"chr", S_IFCHR}, {"blk", S_IFBLK},
	{"sock", S_IFSOCK},
};

/* A number (strtoll base 0), or names from flag_names joined by ',' or '|'.
 * Returns 0, or FAILED after printing what was wrong. */
static int parse_num(const char *s, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 0);
	if (*s && !*end && !errno) {
		*out = v;
		return 0;
	}
	v = 0;
	char buf[256];
	snprintf(buf, sizeof buf, "%s", s);
	for (char *save = NULL, *t = strtok_r(buf, ",|", &save); t; t = strtok_r(NULL, ",|", &save)) {
		size_t i;
		for (i = 0; i < sizeof flag_names / sizeof flag_names[0]; i++)
			if (strcmp(t, flag_names[i].name) == 0)
				break;
		if (i == sizeof flag_names / sizeof flag_names[0]) {
			fail("not a number or flag name", t);
			return FAILED;
		}
		v |= flag_names[i].value;
	}
	*out = v;
	return 0;
}

/* Octal mode. */
static int parse_mode(const char *s, mode_t *out)
{
	char *end;
	unsigned long v = strtoul(s, &end, 8);
	if (!*s || *end) {
		fail("not an octal mode", s);
		return FAILED;
	}
	*out = (mode_t)v;
	return 0;
}

#define NUM(var, s)                                                                         \
	long long var;                                                                      \
	if (parse_num((s), &var))                                                           \
		return FAILED
#define MODE(var, s)                                                                        \
	mode_t var;                                                                         \
	if (parse_mode((s), &var))                                                          \
		return FAILED

/* A descriptor the shim never sees open: "fd:N" (inherited) or the raw openat syscall. */
/* A system call the shim cannot see: not syscall(3), which the shim decodes (and
 * routes openat through its open wrapper), but the instruction itself (x86_64). */
static long raw_openat(int dirfd, const char *path, int flags)
{
	long ret;
	register long r10 __asm__("r10") = 0;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"((long)SYS_openat), "D"((long)dirfd), "S"(path), "d"((long)flags),
			   "r"(r10)
			 : "rcx", "r11", "memory");
	if (ret < 0) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
}

/* close(2) and fcntl(F_DUPFD) without libc: a descriptor closed where the shim cannot
 * see it. */
static long raw_syscall3(long nr, long a, long b, long c)
{
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	if (ret < 0) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
}

static int raw_open(const char *path, int flags)
{
	if (strncmp(path, "fd:", 3) == 0)
		return atoi(path + 3);
	int fd = (int)raw_openat(AT_FDCWD, path, flags | O_CLOEXEC);
	if (fd < 0)
		fprintf(stderr, "%s: %s: opening helper descriptor '%s': %s\n", prog, cur, path,
			strerror(errno));
	return fd;
}

/* Directory descriptor for *at calls ("AT_FDCWD" = the current directory). */
static int dir_open(const char *path)
{
	if (strcmp(path, "AT_FDCWD") == 0)
		return AT_FDCWD;
	return raw_open(path, O_RDONLY | O_DIRECTORY);
}

#define RAWFD(var, path, flags)                                                             \
	int var = raw_open((path), (flags));                                                \
	if (var < 0)                                                                        \
		return FAILED
#define DIRFD(var, path)                                                                    \
	int var = dir_open(path);                                                           \
	if (var < 0 && var != AT_FDCWD)                                                     \
		return FAILED

/* Result of a call that returns -1 and sets errno. */
static int rc_of(long r) { return r < 0 ? errno : 0; }

/* Optional TEXT argument: written to fd after an open, so appends and in-place writes
 * really change the file.  write(2) itself is not wrapped (covered at open time). */
static int write_text(int fd, int argc, char **argv, int at)
{
	if (argc <= at)
		return 0;
	size_t n = strlen(argv[at]);
	if (write(fd, argv[at], n) != (ssize_t)n)
		return errno ? errno : EIO;
	return 0;
}

static int close_checked(int fd) { return close(fd) < 0 ? errno : 0; }

/* Result of an open: writes TEXT (argv[at], if given) and closes. */
static int opened(int fd, int argc, char **argv, int at)
{
	if (fd < 0)
		return errno;
	int r = write_text(fd, argc, argv, at);
	int c = close_checked(fd);
	return r ? r : c;
}

/* Waits for a spawned child and turns its status into success or FAILED. */
static int child_status(int st)
{
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (WIFEXITED(st))
		fprintf(stderr, "%s: %s: child exited with status %d\n", prog, cur, WEXITSTATUS(st));
	else
		fprintf(stderr, "%s: %s: child died of signal %d\n", prog, cur,
			WIFSIGNALED(st) ? WTERMSIG(st) : -1);
	return FAILED;
}

static int wait_child(pid_t pid)
{
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return errno;
	return child_status(st);
}

/* ---- open family --------------------------------------------------------------------- */

/* open PATH FLAGS MODE [TEXT] */
static int c_open(int argc, char **argv)
{
	NUM(fl, argv[1]);
	MODE(m, argv[2]);
	int fd = open(argv[0], (int)fl, m);
	return opened(fd, argc, argv, 3);
}

static int c_open64(int argc, char **argv)
{
	NUM(fl, argv[1]);
	MODE(m, argv[2]);
	int fd = open64(argv[0], (int)fl, m);
	return opened(fd, argc, argv, 3);
}

/* openat DIR PATH FLAGS MODE [TEXT] */
static int c_openat(int argc, char **argv)
{
	DIRFD(d, argv[0]);
	NUM(fl, argv[2]);
	MODE(m, argv[3]);
	int fd = openat(d, argv[1], (int)fl, m);
	return opened(fd, argc, argv, 4);
}

static int c_openat64(int argc, char **argv)
{
	DIRFD(d, argv[0]);
	NUM(fl, argv[2]);
	MODE(m, argv[3]);
	int fd = openat64(d, argv[1], (int)fl, m);
	return opened(fd, argc, argv, 4);
}

/* creat PATH MODE [TEXT] */
static int c_creat(int argc, char **argv)
{
	MODE(m, argv[1]);
	int fd = creat(argv[0], m);
	return opened(fd, argc, argv, 2);
}

static int c_creat64(int argc, char **argv)
{
	MODE(m, argv[1]);
	int fd = creat64(argv[0], m);
	return opened(fd, argc, argv, 2);
}

/* __open_2 PATH FLAGS [TEXT]   (glibc aborts on O_CREAT/O_TMPFILE: no mode argument) */
static int c___open_2(int argc, char **argv)
{
	NUM(fl, argv[1]);
	int fd = __open_2(argv[0], (int)fl);
	return opened(fd, argc, argv, 2);
}

static int c___open64_2(int argc, char **argv)
{
	NUM(fl, argv[1]);
	int fd = __open64_2(argv[0], (int)fl);
	return opened(fd, argc, argv, 2);
}

/* __openat_2 DIR PATH FLAGS [TEXT] */
static int c___openat_2(int argc, char **argv)
{
	DIRFD(d, argv[0]);
	NUM(fl, argv[2]);
	int fd = __openat_2(d, argv[1], (int)fl);
	return opened(fd, argc, argv, 3);
}

static int c___openat64_2(int argc, char **argv)
{
	DIRFD(d, argv[0]);
	NUM(fl, argv[2]);
	int fd = __openat64_2(d, argv[1], (int)fl);
	return opened(fd, argc, argv, 3);
}

/* ---- stdio ----------------------------------------------------------------------------- */

static int stream_text(FILE *f, int argc, char **argv, int at)
{
	if (argc > at && fputs(argv[at], f) == EOF)
		return errno ? errno : EIO;
	return fclose(f) == EOF ? errno : 0;
}

/* fopen PATH MODE [TEXT] */
static int c_fopen(int argc, char **argv)
{
	FILE *f = fopen(argv[0], argv[1]);
	return f ? stream_text(f, argc, argv, 2) : errno;
}

static int c_fopen64(int argc, char **argv)
{
	FILE *f = fopen64(argv[0], argv[1]);
	return f ? stream_text(f, argc, argv, 2) : errno;
}

/* freopen PATH|- MODE [TEXT]: reopens a stream first opened read-only on /dev/null, or
 * with "-" (freopen(NULL, MODE, f)) a stream first opened read-only on FILE from
 * $CALLWRAP_FREOPEN_FILE: the mode change alone truncates it for "w". */
static FILE *reopen_source(const char *path)
{
	const char *src = "/dev/null";
	if (strcmp(path, "-") == 0 && !(src = getenv("CALLWRAP_FREOPEN_FILE"))) {
		fail("needs $CALLWRAP_FREOPEN_FILE for path", path);
		return NULL;
	}
	int fd = raw_open(src, O_RDONLY);
	return fd < 0 ? NULL : fdopen(fd, "r");
}

static int c_freopen(int argc, char **argv)
{
	FILE *s = reopen_source(argv[0]);
	if (!s)
		return FAILED;
	FILE *f = freopen(strcmp(argv[0], "-") ? argv[0] : NULL, argv[1], s);
	return f ? stream_text(f, argc, argv, 2) : errno;
}

static int c_freopen64(int argc, char **argv)
{
	FILE *s = reopen_source(argv[0]);
	if (!s)
		return FAILED;
	FILE *f = freopen64(strcmp(argv[0], "-") ? argv[0] : NULL, argv[1], s);
	return f ? stream_text(f, argc, argv, 2) : errno;
}

/* ---- temporary files: the generated name is printed on stdout ---------------------------- */

static int temp_done(int fd, const char *name)
{
	if (fd < 0)
		return errno;
	printf("%s\n", name);
	return close_checked(fd);
}

/* mkstemp TEMPLATE */
static int c_mkstemp(int argc, char **argv) { return temp_done(mkstemp(argv[0]), argv[0]); }
static int c_mkstemp64(int argc, char **argv) { return temp_done(mkstemp64(argv[0]), argv[0]); }

/* mkostemp TEMPLATE FLAGS */
static int c_mkostemp(int argc, char **argv)
{
	NUM(fl, argv[1]);
	return temp_done(mkostemp(argv[0], (int)fl), argv[0]);
}

static int c_mkostemp64(int argc, char **argv)
{
	NUM(fl, argv[1]);
	return temp_done(mkostemp64(argv[0], (int)fl), argv[0]);
}

/* mkstemps TEMPLATE SUFFIXLEN */
static int c_mkstemps(int argc, char **argv)
{
	NUM(sl, argv[1]);
	return temp_done(mkstemps(argv[0], (int)sl), argv[0]);
}

static int c_mkstemps64(int argc, char **argv)
{
	NUM(sl, argv[1]);
	return temp_done(mkstemps64(argv[0], (int)sl), argv[0]);
}

/* mkostemps TEMPLATE SUFFIXLEN FLAGS */
static int c_mkostemps(int argc, char **argv)
{
	NUM(sl, argv[1]);
	NUM(fl, argv[2]);
	return temp_done(mkostemps(argv[0], (int)sl, (int)fl), argv[0]);
}

static int c_mkostemps64(int argc, char **argv)
{
	NUM(sl, argv[1]);
	NUM(fl, argv[2]);
	return temp_done(mkostemps64(argv[0], (int)sl, (int)fl), argv[0]);
}

/* mkdtemp TEMPLATE */
static int c_mkdtemp(int argc, char **argv)
{
	if (!mkdtemp(argv[0]))
		return errno;
	printf("%s\n", argv[0]);
	return 0;
}

/* tmpfile [TEXT] */
static int c_tmpfile(int argc, char **argv)
{
	FILE *f = tmpfile();
	return f ? stream_text(f, argc, argv, 0) : errno;
}

static int c_tmpfile64(int argc, char **argv)
{
	FILE *f = tmpfile64();
	return f ? stream_text(f, argc, argv, 0) : errno;
}

/* ---- names ------------------------------------------------------------------------------ */

/* unlink PATH */
static int c_unlink(int argc, char **argv) { return rc_of(unlink(argv[0])); }

/* unlinkat DIR PATH [FLAGS] */
static int c_unlinkat(int argc, char **argv)
{
	DIRFD(d, argv[0]);
	NUM(fl, argc > 2 ? argv[2] : "0");
	return rc_of(unlinkat(d, argv[1], (int)fl));
}

/* remove PATH */
static int c_remove(int argc, char **argv) { return rc_of(remove(argv[0])); }

/* rmdir PATH */
static int c_rmdir(int argc, char **argv) { return rc_of(rmdir(argv[0])); }

/* rename FROM TO */
static int c_rename(int argc, char **argv) { return rc_of(rename(argv[0], argv[1])); }

/* renameat DIR FROM DIR TO */
static int c_renameat(int argc, char **argv)
{
	DIRFD(od, argv[0]);
	DIRFD(nd, argv[2]);
	return rc_of(renameat(od, argv[1], nd, argv[3]));
}

/* renameat2 DIR FROM DIR TO FLAGS */
static int c_renameat2(int argc, char **argv)
{
	DIRFD(od, argv[0]);
	DIRFD(nd, argv[2]);
	NUM(fl, argv[4]);
	return rc_of(renameat2(od, argv[1], nd, argv[3], (unsigned)fl));
}

/* link OLD NEW */
static int c_link(int argc, char **argv) { return rc_of(link(argv[0], argv[1])); }

/* linkat DIR OLD DIR NEW [FLAGS] */
static int c_linkat(int argc, char **argv)
{
	DIRFD(od, argv[0]);
	DIRFD(nd, argv[2]);
	NUM(fl, argc > 4 ? argv[4] : "0");
	return rc_of(linkat(od, argv[1], nd, argv[3], (int)fl));
}

/* symlink TARGET PATH */
static int c_symlink(int argc, char **argv) { return rc_of(symlink(argv[0], argv[1])); }

/* symlinkat TARGET DIR PATH */
static int c_symlinkat(int argc, char **argv)
{
	DIRFD(d, argv[1]);
	return rc_of(symlinkat(argv[0], d, argv[2]));
}

/* mkdir PATH MODE */
static int c_mkdir(int argc, char **argv)
{
	MODE(m, argv[1]);
	return rc_of(mkdir(argv[0], m));
}

/* mkdirat DIR PATH MODE */
static int c_mkdirat(int argc, char **argv)
{
	DIRFD(d, argv[0]);
	MODE(m, argv[2]);
	return rc_of(mkdirat(d, argv[1], m));
}

/* mknod PATH TYPE MODE [DEV] */
static int c_mknod(int argc, char **argv)
{
	NUM(type, argv[1]);
	MODE(m, argv[2]);
	NUM(dev, argc > 3 ? argv[3] : "0");
	return rc_of(mknod(argv[0], (mode_t)type | m, (dev_t)dev));
}

/* mknodat DIR PATH TYPE MODE [DEV] */
static int c_mknodat(int argc, char **argv)
{
	DIRFD(d, argv[0]);
	NUM(type, argv[2]);
	MODE(m, argv[3]);
	NUM(dev, argc > 4 ? argv[4] : "0");
	return rc_of(mknodat(d, argv[1], (mode_t)type | m, (dev_t)dev));
}

/* mkfifo PATH MODE */
static int c_mkfifo(int argc, char **argv)
{
	MODE(m, argv[1]);
	return rc_of(mkfifo(argv[0], m));
}

/* mkfifoat DIR PATH MODE */
static int c_mkfifoat(int argc, char **argv)
{
	DIRFD(d, argv[0]);
	MODE(m, argv[2]);
	return rc_of(mkfifoat(d, argv[1], m));
}

/* ---- size ------------------------------------------------------------------------------- */

/* truncate PATH LEN */
static int c_truncate(int argc, char **argv)
{
	NUM(len, argv[1]);
	return rc_of(truncate(argv[0], (off_t)len));
}

static int c_truncate64(int argc, char **argv)
{
	NUM(len, argv[1]);
	return rc_of(truncate64(argv[0], (off64_t)len));
}

/* ftruncate FILE LEN */
static int c_ftruncate(int argc, char **argv)
{
	NUM(len, argv[1]);
	RAWFD(fd, argv[0], O_WRONLY);
	return rc_of(ftruncate(fd, (off_t)len));
}

static int c_ftruncate64(int argc, char **argv)
{
	NUM(len, argv[1]);
	RAWFD(fd, argv[0], O_WRONLY);
	return rc_of(ftruncate64(fd, (off64_t)len));
}

/* fallocate FILE MODE OFFSET LEN */
static int c_fallocate(int argc, char **argv)
{
	NUM(m, argv[1]);
	NUM(off, argv[2]);
	NUM(len, argv[3]);
	RAWFD(fd, argv[0], O_RDWR);
	return rc_of(fallocate(fd, (int)m, (off_t)off, (off_t)len));
}

static int c_fallocate64(int argc, char **argv)
{
	NUM(m, argv[1]);
	NUM(off, argv[2]);
	NUM(len, argv[3]);
	RAWFD(fd, argv[0], O_RDWR);
	return rc_of(fallocate64(fd, (int)m, (off64_t)off, (off64_t)len));
}

/* posix_fallocate FILE OFFSET LEN   (returns the error number, errno untouched) */
static int c_posix_fallocate(int argc, char **argv)
{
	NUM(off, argv[1]);
	NUM(len, argv[2]);
	RAWFD(fd, argv[0], O_RDWR);
	return posix_fallocate(fd, (off_t)off, (off_t)len);
}

static int c_posix_fallocate64(int argc, char **argv)
{
	NUM(off, argv[1]);
	NUM(len, argv[2]);
	RAWFD(fd, argv[0], O_RDWR);
	return posix_fallocate64(fd, (off64_t)off, (off64_t)len);
}

/* Both data movers copy LEN bytes (default: all of IN) to the start of OUT. */
static long long in_size(int fd, int argc, char **argv, int at)
{
	long long n;
	if (argc > at)
		return parse_num(argv[at], &n) ? -1 : n;
	struct stat sb;
	return fstat(fd, &sb) < 0 ? -1 : (long long)sb.st_size;
}

/* copy_file_range IN OUT [LEN]   (OUT opened O_WRONLY, outside the shim's view) */
static int c_copy_file_range(int argc, char **argv)
{
	RAWFD(in, argv[0], O_RDONLY);
	RAWFD(out, argv[1], O_WRONLY);
	long long n = in_size(in, argc, argv, 2);
	if (n < 0)
		return FAILED;
	off64_t ioff = 0, ooff = 0;
	ssize_t r = copy_file_range(in, &ioff, out, &ooff, (size_t)n, 0);
	return r < 0 ? errno : r != n ? EIO : 0;
}

/* sendfile OUT IN [LEN] */
static int c_sendfile(int argc, char **argv)
{
	RAWFD(out, argv[0], O_WRONLY);
	RAWFD(in, argv[1], O_RDONLY);
	long long n = in_size(in, argc, argv, 2);
	if (n < 0)
		return FAILED;
	off_t off = 0;
	ssize_t r = sendfile(out, in, &off, (size_t)n);
	return r < 0 ? errno : r != n ? EIO : 0;
}

static int c_sendfile64(int argc, char **argv)
{
	RAWFD(out, argv[0], O_WRONLY);
	RAWFD(in, argv[1], O_RDONLY);
	long long n = in_size(in, argc, argv, 2);
	if (n < 0)
		return FAILED;
	off64_t off = 0;
	ssize_t r = sendfile64(out, in, &off, (size_t)n);
	return r < 0 ? errno : r != n ? EIO : 0;
}

/* ---- writes inside an O_APPEND descriptor's data ---------------------------------------- */

/* An append-only open (captured by its length), then the call that lets a write land
 * inside the existing bytes anyway, then TEXT written at offset 0. */
static int append_fd(const char *path)
{
	return open(path, O_WRONLY | O_APPEND);
}

/* fcntl FILE TEXT: clear O_APPEND with F_SETFL, overwrite the start */
static int c_fcntl(int argc, char **argv)
{
	int fd = append_fd(argv[0]);
	if (fd < 0 || fcntl(fd, F_SETFL, 0) < 0)
		return errno;
	return pwrite(fd, argv[1], strlen(argv[1]), 0) < 0 ? errno : 0;
}

/* fcntl64 FILE TEXT */
static int c_fcntl64(int argc, char **argv)
{
	int fd = append_fd(argv[0]);
	if (fd < 0 || fcntl64(fd, F_SETFL, 0) < 0)
		return errno;
	return pwrite(fd, argv[1], strlen(argv[1]), 0) < 0 ? errno : 0;
}

/* pwritev2 FILE TEXT: RWF_NOAPPEND at offset 0 through an O_APPEND descriptor */
static int c_pwritev2(int argc, char **argv)
{
	int fd = append_fd(argv[0]);
	if (fd < 0)
		return errno;
	struct iovec v = {argv[1], strlen(argv[1])};
	return pwritev2(fd, &v, 1, 0, RWF_NOAPPEND) < 0 ? errno : 0;
}

/* pwritev64v2 FILE TEXT */
static int c_pwritev64v2(int argc, char **argv)
{
	int fd = append_fd(argv[0]);
	if (fd < 0)
		return errno;
	struct iovec v = {argv[1], strlen(argv[1])};
	return pwritev64v2(fd, &v, 1, 0, RWF_NOAPPEND) < 0 ? errno : 0;
}

/* ---- a unix socket's name ------------------------------------------------------------------ */

/* bind PATH: a unix socket bound to PATH (the file stays after close) */
static int c_bind(int argc, char **argv)
{
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0)
		return errno;
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof a.sun_path, "%s", argv[0]);
	int r = bind(fd, (struct sockaddr *)&a, sizeof a);
	int e = errno;
	close(fd);
	return r < 0 ? e : 0;
}

/* ---- egress and name lookups ([network] policy) -------------------------------------------- */

/* ADDR: "1.2.3.4:PORT", "[v6]:PORT", "unix:/path" or "unix:@abstract".  Returns the
 * address length, 0 if ADDR is malformed. */
static socklen_t parse_addr(const char *text, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof *ss);
	if (strncmp(text, "unix:", 5) == 0) {
		struct sockaddr_un *un = (struct sockaddr_un *)ss;
		const char *p = text + 5;
		size_t n = strlen(p);
		if (n >= sizeof un->sun_path)
			return 0;
		un->sun_family = AF_UNIX;
		memcpy(un->sun_path, p, n);
		if (p[0] == '@') {
			un->sun_path[0] = 0; /* abstract: no trailing NUL counted */
			return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
		}
		return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
	}
	char host[64];
	const char *colon = strrchr(text, ':');
	if (!colon || (size_t)(colon - text) >= sizeof host)
		return 0;
	memcpy(host, text, (size_t)(colon - text));
	host[colon - text] = 0;
	uint16_t port = htons((uint16_t)atoi(colon + 1));
	if (host[0] == '[') {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
		size_t l = strlen(host);
		if (l < 2 || host[l - 1] != ']')
			return 0;
		host[l - 1] = 0;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = port;
		return inet_pton(AF_INET6, host + 1, &in6->sin6_addr) == 1 ? sizeof *in6 : 0;
	}
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	in->sin_family = AF_INET;
	in->sin_port = port;
	return inet_pton(AF_INET, host, &in->sin_addr) == 1 ? sizeof *in : 0;
}

/* A socket of the family of ss: stream or datagram. */
static int sock_for(const struct sockaddr_storage *ss, int type)
{
	return socket(ss->ss_family, type | SOCK_CLOEXEC, 0);
}

/* connect ADDR: a stream socket connected to ADDR */
static int c_connect(int argc, char **argv)
{
	(void)argc;
	struct sockaddr_storage ss;
	socklen_t len = parse_addr(argv[0], &ss);
	if (!len)
		return EINVAL;
	int fd = sock_for(&ss, SOCK_STREAM);
	if (fd < 0)
		return errno;
	int r = connect(fd, (struct sockaddr *)&ss, len);
	int e = errno;
	close(fd);
	return r < 0 ? e : 0;
}

/* sendto ADDR [TEXT]: one datagram to ADDR */
static int c_sendto(int argc, char **argv)
{
	struct sockaddr_storage ss;
	socklen_t len = parse_addr(argv[0], &ss);
	const char *t = argc > 1 ? argv[1] : "datagram";
	if (!len)
		return EINVAL;
	int fd = sock_for(&ss, SOCK_DGRAM);
	if (fd < 0)
		return errno;
	ssize_t r = sendto(fd, t, strlen(t), 0, (struct sockaddr *)&ss, len);
	int e = errno;
	close(fd);
	return r < 0 ? e : 0;
}

/* sendmsg ADDR [TEXT]: one datagram to ADDR (msg_name) */
static int c_sendmsg(int argc, char **argv)
{
	struct sockaddr_storage ss;
	socklen_t len = parse_addr(argv[0], &ss);
	char *t = argc > 1 ? argv[1] : "datagram";
	if (!len)
		return EINVAL;
	int fd = sock_for(&ss, SOCK_DGRAM);
	if (fd < 0)
		return errno;
	struct iovec v = {t, strlen(t)};
	struct msghdr m = {.msg_name = &ss, .msg_namelen = len, .msg_iov = &v, .msg_iovlen = 1};
	ssize_t r = sendmsg(fd, &m, 0);
	int e = errno;
	close(fd);
	return r < 0 ? e : 0;
}

/* sendmmsg ADDR... : one datagram to each ADDR in one call; prints how many were sent */
static int c_sendmmsg(int argc, char **argv)
{
	struct sockaddr_storage ss[8];
	struct mmsghdr vec[8];
	struct iovec v[8];
	int n = argc < 8 ? argc : 8, fd = -1;
	memset(vec, 0, sizeof vec);
	for (int i = 0; i < n; i++) {
		socklen_t len = parse_addr(argv[i], &ss[i]);
		if (!len || (i && ss[i].ss_family != ss[0].ss_family))
			return EINVAL;
		v[i] = (struct iovec){argv[i], strlen(argv[i])};
		vec[i].msg_hdr = (struct msghdr){.msg_name = &ss[i], .msg_namelen = len,
						 .msg_iov = &v[i], .msg_iovlen = 1};
	}
	fd = sock_for(&ss[0], SOCK_DGRAM);
	if (fd < 0)
		return errno;
	int r = sendmmsg(fd, vec, (unsigned)n, 0);
	int e = errno;
	close(fd);
	if (r >= 0)
		printf("sent %d\n", r);
	return r < 0 ? e : 0;
}

static void print_hostent(const struct hostent *h)
{
	char t[INET6_ADDRSTRLEN];
	for (char **a = h->h_addr_list; *a; a++)
		if (inet_ntop(h->h_addrtype, *a, t, sizeof t))
			printf("%s\n", t);
}

/* getaddrinfo HOST: prints each address (a failure: ENOENT, with the resolver's words) */
static int c_getaddrinfo(int argc, char **argv)
{
	(void)argc;
	struct addrinfo *res, hints = {.ai_socktype = SOCK_STREAM};
	int r = getaddrinfo(argv[0], NULL, &hints, &res);
	if (r) {
		fprintf(stderr, "%s: getaddrinfo: %s\n", prog, gai_strerror(r));
		return ENOENT;
	}
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		char t[INET6_ADDRSTRLEN];
		const void *a = ai->ai_family == AF_INET
					? (const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr
					: (const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
		if (inet_ntop(ai->ai_family, a, t, sizeof t))
			printf("%s\n", t);
	}
	freeaddrinfo(res);
	return 0;
}

/* gethostbyname HOST: prints each address */
static int c_gethostbyname(int argc, char **argv)
{
	(void)argc;
	struct hostent *h = gethostbyname(argv[0]);
	if (!h)
		return ENOENT;
	print_hostent(h);
	return 0;
}

/* gethostbyname2 HOST: prints each IPv4 address */
static int c_gethostbyname2(int argc, char **argv)
{
	(void)argc;
	struct hostent *h = gethostbyname2(argv[0], AF_INET);
	if (!h)
		return ENOENT;
	print_hostent(h);
	return 0;
}

/* gethostbyname_r HOST: prints each address */
static int c_gethostbyname_r(int argc, char **argv)
{
	(void)argc;
	struct hostent h, *res = NULL;
	char buf[4096];
	int herr = 0;
	int r = gethostbyname_r(argv[0], &h, buf, sizeof buf, &res, &herr);
	if (r || !res)
		return r ? r : ENOENT;
	print_hostent(res);
	return 0;
}

/* gethostbyname2_r HOST: prints each IPv4 address */
static int c_gethostbyname2_r(int argc, char **argv)
{
	(void)argc;
	struct hostent h, *res = NULL;
	char buf[4096];
	int herr = 0;
	int r = gethostbyname2_r(argv[0], AF_INET, &h, buf, sizeof buf, &res, &herr);
	if (r || !res)
		return r ? r : ENOENT;
	print_hostent(res);
	return 0;
}

/* ---- reads a deny_read policy decides ---------------------------------------------------- */

/* Each prints what it learnt (so a refused call is seen to reveal nothing). */
static int stat_out(long r, unsigned long long ino)
{
	if (r < 0)
		return errno;
	printf("ino %llu\n", ino);
	return 0;
}
static int c_stat(int argc, char **argv) { (void)argc; struct stat sb; long r = stat(argv[0], &sb); return stat_out(r, sb.st_ino); }
static int c_stat64(int argc, char **argv) { (void)argc; struct stat64 sb; long r = stat64(argv[0], &sb); return stat_out(r, sb.st_ino); }
static int c_lstat(int argc, char **argv) { (void)argc; struct stat sb; long r = lstat(argv[0], &sb); return stat_out(r, sb.st_ino); }
static int c_lstat64(int argc, char **argv) { (void)argc; struct stat64 sb; long r = lstat64(argv[0], &sb); return stat_out(r, sb.st_ino); }
/* fstatat DIR PATH [FLAGS] */
static int c_fstatat(int argc, char **argv)
{
	DIRFD(d, argv[0]);
	NUM(fl, argc > 2 ? argv[2] : "0");
	struct stat sb;
	long r = fstatat(d, argv[1], &sb, (int)fl); return stat_out(r, sb.st_ino);
}
static int c_fstatat64(int argc, char **argv)
{
	DIRFD(d, argv[0]);
	NUM(fl, argc > 2 ? argv[2] : "0");
	struct stat64 sb;
	long r = fstatat64(d, argv[1], &sb, (int)fl); return stat_out(r, sb.st_ino);
}
static int c_statx(int argc, char **argv)
{
	DIRFD(d, argv[0]);
	NUM(fl, argc > 2 ? argv[2] : "0");
	struct statx sx;
	long r = statx(d, argv[1], (int)fl, STATX_BASIC_STATS, &sx); return stat_out(r, sx.stx_ino);
}
static int c___xstat(int argc, char **argv) { (void)argc; struct stat sb; long r = __xstat(1, argv[0], &sb); return stat_out(r, sb.st_ino); }
static int c___xstat64(int argc, char **argv) { (void)argc; struct stat64 sb; long r = __xstat64(1, argv[0], &sb); return stat_out(r, sb.st_ino); }
static int c___lxstat(int argc, char **argv) { (void)argc; struct stat sb; long r = __lxstat(1, argv[0], &sb); return stat_out(r, sb.st_ino); }
static int c___lxstat64(int argc, char **argv) { (void)argc; struct stat64 sb; long r = __lxstat64(1, argv[0], &sb); return stat_out(r, sb.st_ino); }
static int c___fxstatat(int argc, char **argv)
{
	DIRFD(d, argv[0]);
	(void)argc;
	struct stat sb;
	long r = __fxstatat(1, d, argv[1], &sb, 0); return stat_out(r, sb.st_ino);
}
static int c___fxstatat64(int argc, char **argv)
{
	DIRFD(d, argv[0]);
	(void)argc;
	struct stat64 sb;
	long r = __fxstatat64(1, d, argv[1], &sb, 0); return stat_out(r, sb.st_ino);
}
static int link_out(ssize_t n, const char *buf)
{
	if (n < 0)
		return errno;
	printf("%.*s\n", (int)n, buf);
	return 0;
}
static int c_readlink(int argc, char **argv)
{
	(void)argc;
	char buf[4096];
	return link_out(readlink(argv[0], buf, sizeof buf), buf);
}
static int c_readlinkat(int argc, char **argv)
{
	(void)argc;
	DIRFD(d, argv[0]);
	char buf[4096];
	return link_out(readlinkat(d, argv[1], buf, sizeof buf), buf);
}
static int list_dir(DIR *d)
{
	if (!d)
		return errno;
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			printf("%s\n", e->d_name);
	closedir(d);
	return 0;
}
static int c_opendir(int argc, char **argv) { (void)argc; return list_dir(opendir(argv[0])); }
/* fdopendir FD: a directory descriptor the caller's shell opened (inherited). */
static int c_fdopendir(int argc, char **argv)
{
	(void)argc;
	NUM(fd, argv[0]);
	return list_dir(fdopendir((int)fd));
}
/* closedir DIR1 DIR2 [NAME1 NAME2]: DIR1 opened (a wrapped open), listed through
 * fdopendir and closed with closedir (the wrapped call); then DIR2 opened at the same
 * number with a raw system call, which no wrapper sees, and listed through fdopendir.
 * With NAME1 and NAME2, NAME1 is removed through DIR1's descriptor before the closedir
 * and NAME2 through DIR2's instead of the second listing: its record must name DIR2,
 * whatever the number's mark said of DIR1.  Fails if the number was not reused. */
static int c_closedir(int argc, char **argv)
{
	int fd = open(argv[0], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (argc > 3 && unlinkat(fd, argv[2], 0) < 0)
		return errno;
	DIR *d = fdopendir(fd);
	if (!d)
		return errno;
	if (closedir(d))
		return errno;
	int fd2 = (int)raw_openat(AT_FDCWD, argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd2 < 0)
		return errno;
	if (fd2 != fd) {
		fprintf(stderr, "%s: %s: %s opened at %d, not at %d\n", prog, cur, argv[1], fd2, fd);
		return FAILED;
	}
	if (argc > 3)
		return rc_of(unlinkat(fd2, argv[3], 0));
	return list_dir(fdopendir(fd2));
}
/* syscall NAME [ARGS]: unlink PATH | mkdir PATH MODE | rename FROM TO | io_uring_setup |
 * getpid (a number passed through) */
static int syscall_close_scenario(char **argv);
static int cwd_first(const char *first);
static int c_syscall(int argc, char **argv)
{
	long r;
	if (!strcmp(argv[0], "unlink") && argc > 1) {
		r = syscall(SYS_unlink, argv[1]);
	} else if (!strcmp(argv[0], "mkdir") && argc > 2) {
		MODE(m, argv[2]);
		r = syscall(SYS_mkdir, argv[1], m);
	} else if (!strcmp(argv[0], "rename") && argc > 2) {
		r = syscall(SYS_rename, argv[1], argv[2]);
	} else if (!strcmp(argv[0], "io_uring_setup")) {
		char params[120] = {0};
		r = syscall(SYS_io_uring_setup, 4, params);
		if (r >= 0)
			close((int)r);
	} else if (!strcmp(argv[0], "openat2") && argc > 1) {
		/* openat2 PATH [resolve]: O_RDONLY; with "resolve", RESOLVE_NO_SYMLINKS */
		struct open_how how = {.flags = O_RDONLY,
				       .resolve = argc > 2 ? RESOLVE_NO_SYMLINKS : 0};
		r = syscall(SYS_openat2, AT_FDCWD, argv[1], &how, sizeof how);
		if (r >= 0) {
			char buf[256];
			ssize_t n = read((int)r, buf, sizeof buf);
			if (n > 0)
				fwrite(buf, 1, (size_t)n, stdout);
			close((int)r);
		}
	} else if (!strcmp(argv[0], "newfstatat") && argc > 1) {
		struct stat sb;
		r = syscall(SYS_newfstatat, AT_FDCWD, argv[1], &sb, 0);
		if (r == 0)
			printf("ino %llu\n", (unsigned long long)sb.st_ino);
	} else if (!strcmp(argv[0], "close") && argc > 2) {
		/* close new:NEW OLD: see mark_scenario */
		return syscall_close_scenario(argv + 1);
	} else if (!strcmp(argv[0], "chdir") && argc > 3) {
		/* chdir FIRST DIR NAME: as callwrap chdir, with SYS_chdir */
		int rc = cwd_first(argv[1]);
		if (rc)
			return rc;
		r = syscall(SYS_chdir, argv[2]);
		if (r == 0)
			r = unlink(argv[3]);
	} else if (!strcmp(argv[0], "getpid")) {
		r = syscall(SYS_getpid);
		if (r != getpid())
			return EPROTO;
	} else {
		return EINVAL;
	}
	return rc_of(r);
}

/* ---- descriptors that may be the journal's ------------------------------------------------- */

/* The shim's journal descriptor in this process, once a first mutation opened it: the
 * descriptor whose /proc/self/fd link names $BBX_JOURNAL/journal.  -1 if none. */
static int journal_fd(void)
{
	const char *j = getenv("BBX_JOURNAL");
	char want[4096], got[4096], lnk[64];
	if (!j)
		return -1;
	snprintf(want, sizeof want, "%s/journal", j);
	for (int fd = 0; fd < 4096; fd++) {
		snprintf(lnk, sizeof lnk, "/proc/self/fd/%d", fd);
		ssize_t n = readlink(lnk, got, sizeof got - 1);
		if (n > 0) {
			got[n] = 0;
			if (!strcmp(got, want))
				return fd;
		}
	}
	return -1;
}

/* The common scenario: APPEND to G (opens the journal), find its descriptor J, do what
 * `op` does to J, put an O_APPEND descriptor of X exactly at J's number (a program's own
 * file where the journal was), then truncate and rewrite F.  The shim must notice that J
 * is no longer the journal: F's PRESERVE goes to the journal, X stays as it was. */
static int fd_scenario(char **argv, int (*op)(int j, int xfd))
{
	int g = raw_open(argv[0], O_WRONLY | O_APPEND);
	if (g < 0)
		return FAILED;
	int fg = open(argv[0], O_WRONLY | O_APPEND); /* wrapped: the first record */
	if (fg < 0 || write(fg, "more\n", 5) != 5)
		return errno;
	close(fg);
	close(g);
	int j = journal_fd();
	if (j < 0) {
		fprintf(stderr, "%s: %s: no journal descriptor found\n", prog, cur);
		return EPROTO;
	}
	int x = raw_open(argv[1], O_WRONLY | O_APPEND);
	if (x < 0)
		return FAILED;
	int r = op(j, x);
	if (r)
		return r;
	int f = open(argv[2], O_WRONLY | O_TRUNC);
	if (f < 0 || write(f, "new\n", 4) != 4)
		return errno;
	return rc_of(close(f));
}
static int at_j(int j, int x) { return fcntl(x, F_DUPFD, j) == j ? 0 : EPROTO; }
static int op_close(int j, int x) { return close(j) ? errno : at_j(j, x); }
static int op_dup2(int j, int x) { return dup2(x, j) == j ? 0 : errno; }
static int op_dup3(int j, int x) { return dup3(x, j, O_CLOEXEC) == j ? 0 : errno; }
static int op_close_range(int j, int x)
{
	int keep = fcntl(x, F_DUPFD, 3000); /* out of the range closed */
	if (keep < 0 || close_range(3, 2999, 0))
		return errno;
	return at_j(j, keep);
}
static int op_closefrom(int j, int x)
{
	int keep = dup2(x, 2); /* below the range closed: stderr becomes X */
	if (keep != 2)
		return errno;
	closefrom(3);
	return at_j(j, 2);
}
/* The second scenario of the descriptor calls, "new:NEW OLD -": NEW is created through
 * the shim (its descriptor D is marked: journal/capture.h, bbx_fdid), `op` closes or
 * replaces D by the entry point under test, OLD (which existed before the run) comes to
 * number D (opened without libc, or put there by the op itself), and fchmod(D) changes
 * OLD's mode.  The mark must have been forgotten: fchmod records OLD's META, and undo
 * puts its mode back.  With a stale mark, fchmod would find NEW's inode CREATED and
 * record nothing. */
static int mark_scenario(const char *made, const char *old, int (*op)(int d, const char *old))
{
	int d = open(made, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (d < 0)
		return errno;
	/* The shim's own descriptors of the capture, closed since, left free numbers below
	 * d: filled (without libc), so that d is the lowest free number once closed. */
	for (;;) {
		int fill = raw_open("/", O_RDONLY);
		if (fill < 0)
			return FAILED;
		if (fill > d) {
			raw_syscall3(SYS_close, fill, 0, 0);
			break;
		}
	}
	int r = op(d, old);
	if (r)
		return r;
	return rc_of(fchmod(d, 0600));
}
/* OLD opened without libc until it lands at d (numbers below it freed by the op, as
 * a shim capture may leave, are filled on the way). */
static int old_at(int d, const char *old)
{
	int x;
	while ((x = raw_open(old, O_RDONLY)) >= 0 && x < d)
		;
	return x == d ? 0 : x < 0 ? FAILED : EPROTO;
}
static int mk_close(int d, const char *old) { return close(d) ? errno : old_at(d, old); }
static int mk_dup2(int d, const char *old)
{
	int x = raw_open(old, O_RDONLY);
	return x < 0 ? FAILED : dup2(x, d) == d ? 0 : errno;
}
static int mk_dup3(int d, const char *old)
{
	int x = raw_open(old, O_RDONLY);
	return x < 0 ? FAILED : dup3(x, d, O_CLOEXEC) == d ? 0 : errno;
}
static int mk_close_range(int d, const char *old)
{
	return close_range((unsigned)d, (unsigned)d, 0) ? errno : old_at(d, old);
}
static int mk_closefrom(int d, const char *old)
{
	closefrom(d);
	return old_at(d, old);
}
static int mk_fclose(int d, const char *old)
{
	FILE *f = fdopen(d, "w");
	return !f ? errno : fclose(f) ? errno : old_at(d, old);
}
/* dup: D closed behind libc's back (a stale mark), OLD parked at a high number, then
 * dup() hands D out again; the wrapper forgets what D carried. */
static int mk_dup(int d, const char *old)
{
	if (raw_syscall3(SYS_close, d, 0, 0))
		return errno;
	int x = raw_open(old, O_RDONLY);
	if (x != d)
		return x < 0 ? FAILED : EPROTO;
	long h = raw_syscall3(SYS_fcntl, x, F_DUPFD, 100);
	if (h < 0 || raw_syscall3(SYS_close, x, 0, 0))
		return errno;
	return dup((int)h) == d ? 0 : EPROTO;
}
static int mk_syscall_close(int d, const char *old)
{
	return syscall(SYS_close, d) ? errno : old_at(d, old);
}
#define MARKED(argv, op)                                                                    \
	(strncmp((argv)[0], "new:", 4) == 0 ? mark_scenario((argv)[0] + 4, (argv)[1], op) : -1)
static int syscall_close_scenario(char **argv)
{
	int r = MARKED(argv, mk_syscall_close);
	return r == -1 ? EINVAL : r;
}

/* close G X F / dup2 G X F / ...: see fd_scenario; close new:NEW OLD - / ...: see
 * mark_scenario */
static int fd_or_mark(char **argv, int (*op)(int, int), int (*mk)(int, const char *))
{
	int r = MARKED(argv, mk);
	return r != -1 ? r : fd_scenario(argv, op);
}
static int c_close(int argc, char **argv) { (void)argc; return fd_or_mark(argv, op_close, mk_close); }
static int c_dup2(int argc, char **argv) { (void)argc; return fd_or_mark(argv, op_dup2, mk_dup2); }
static int c_dup3(int argc, char **argv) { (void)argc; return fd_or_mark(argv, op_dup3, mk_dup3); }
static int c_close_range(int argc, char **argv) { (void)argc; return fd_or_mark(argv, op_close_range, mk_close_range); }
static int c_closefrom(int argc, char **argv) { (void)argc; return fd_or_mark(argv, op_closefrom, mk_closefrom); }
/* fclose new:NEW OLD / dup new:NEW OLD: see mark_scenario */
static int c_fclose(int argc, char **argv) { (void)argc; return MARKED(argv, mk_fclose); }
static int c_dup(int argc, char **argv) { (void)argc; return MARKED(argv, mk_dup); }

/* ---- the working directory ----------------------------------------------------------------
 * Each first removes FIRST by a name relative to the directory it starts in (so the
 * shim has read and trusts that directory's name: journal/path.c, cwd_kept), then moves
 * to DIR its own way and removes NAME by a name relative to DIR.  Had the shim kept
 * the old name, the record would name FIRST's directory + NAME, and undo would put the
 * file back in the wrong place. */

static int cwd_first(const char *first)
{
	if (unlink(first) < 0) {
		fprintf(stderr, "callwrap: unlink %s: %s\n", first, strerror(errno));
		return errno;
	}
	return 0;
}

/* chdir FIRST DIR NAME */
static int c_chdir(int argc, char **argv)
{
	(void)argc;
	int rc = cwd_first(argv[0]);
	if (!rc)
		rc = rc_of(chdir(argv[1]));
	return rc ? rc : rc_of(unlink(argv[2]));
}

/* fchdir FIRST DIR NAME (DIR opened with the raw system call) */
static int c_fchdir(int argc, char **argv)
{
	(void)argc;
	int rc = cwd_first(argv[0]);
	if (rc)
		return rc;
	DIRFD(d, argv[1]);
	rc = rc_of(fchdir(d));
	return rc ? rc : rc_of(unlink(argv[2]));
}

/* nftw, nftw64 FIRST DIR NAME: a walk of DIR with FTW_CHDIR; the callback removes the
 * regular file called NAME by its base name (relative to the directory nftw moved to). */
static const char *walk_name;
static int walk_rc = ENOENT;
static int walk_cb(const char *path, const struct stat *sb, int type, struct FTW *f)
{
	(void)sb;
	if (type == FTW_F && !strcmp(path + f->base, walk_name))
		walk_rc = rc_of(unlink(path + f->base));
	return 0;
}
static int walk_cb64(const char *path, const struct stat64 *sb, int type, struct FTW *f)
{
	(void)sb;
	if (type == FTW_F && !strcmp(path + f->base, walk_name))
		walk_rc = rc_of(unlink(path + f->base));
	return 0;
}
static int c_nftw(int argc, char **argv)
{
	(void)argc;
	int rc = cwd_first(argv[0]);
	walk_name = argv[2];
	if (!rc)
		rc = rc_of(nftw(argv[1], walk_cb, 8, FTW_PHYS | FTW_CHDIR));
	return rc ? rc : walk_rc;
}
static int c_nftw64(int argc, char **argv)
{
	(void)argc;
	int rc = cwd_first(argv[0]);
	walk_name = argv[2];
	if (!rc)
		rc = rc_of(nftw64(argv[1], walk_cb64, 8, FTW_PHYS | FTW_CHDIR));
	return rc ? rc : walk_rc;
}

/* fts_open, fts64_open FIRST DIR NAME: glibc's fts over DIR, changing directory as it
 * goes (no FTS_NOCHDIR); the regular file called NAME is removed by fts_accpath. */
static int c_fts_open(int argc, char **argv)
{
	(void)argc;
	int rc = cwd_first(argv[0]);
	char *roots[] = {argv[1], NULL};
	FTS *t = rc ? NULL : fts_open(roots, FTS_PHYSICAL, NULL);
	if (!t)
		return rc ? rc : errno;
	rc = ENOENT;
	for (FTSENT *e; (e = fts_read(t));)
		if (e->fts_info == FTS_F && !strcmp(e->fts_name, argv[2]))
			rc = rc_of(unlink(e->fts_accpath));
	fts_close(t);
	return rc;
}
static int c_fts64_open(int argc, char **argv)
{
	(void)argc;
	int rc = cwd_first(argv[0]);
	char *roots[] = {argv[1], NULL};
	FTS64 *t = rc ? NULL : fts64_open(roots, FTS_PHYSICAL, NULL);
	if (!t)
		return rc ? rc : errno;
	rc = ENOENT;
	for (FTSENT64 *e; (e = fts64_read(t));)
		if (e->fts_info == FTS_F && !strcmp(e->fts_name, argv[2]))
			rc = rc_of(unlink(e->fts_accpath));
	fts64_close(t);
	return rc;
}

/* For a call given FIRST PATH that moves to "/" and then removes PATH (absolute) by its
 * name relative to "/", R (returned): FIRST is removed first (cwd_first), and so that a
 * name kept from before would be wrong in a way a record shows, the directory part of
 * R is made under the starting directory too, and a file created and removed in it
 * (the shim has proved its name): read from the old directory, R names that copy.  0
 * or an errno. */
static int stale_copy(char **argv, const char **relp)
{
	int rc = cwd_first(argv[0]);
	if (rc)
		return rc;
	const char *rel = argv[1] + strspn(argv[1], "/");
	*relp = rel;
	char dir[4096];
	const char *slash = strrchr(rel, '/');
	if (!slash || (size_t)(slash - rel) + 8 >= sizeof dir)
		return EINVAL;
	memcpy(dir, rel, (size_t)(slash - rel));
	dir[slash - rel] = 0;
	for (char *c = dir; !rc && (c = strchr(c + 1, '/'));) {
		*c = 0;
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			rc = errno;
		*c = '/';
	}
	if (!rc && mkdir(dir, 0755) < 0)
		rc = errno;
	strcat(dir, "/probe");
	int fd = rc ? -1 : open(dir, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (!rc && (fd < 0 || close(fd) < 0 || unlink(dir) < 0))
		rc = errno;
	return rc;
}

/* daemon FIRST PATH: daemon(0, 1) moves to "/"; the daemon removes PATH by its name
 * relative to "/" (stale_copy).  The caller waits for the daemon through a pipe it
 * holds open, so the run ends after its records. */
static int c_daemon(int argc, char **argv)
{
	(void)argc;
	const char *rel = NULL;
	int rc = stale_copy(argv, &rel);
	int p[2];
	if (rc || pipe(p) < 0)
		return rc ? rc : errno;
	pid_t pid = fork();
	if (pid < 0)
		return errno;
	if (pid == 0) {
		close(p[0]);
		if (daemon(0, 1) < 0)
			_exit(1);
		char c = unlink(rel) < 0 ? 'n' : 'y';
		if (write(p[1], &c, 1) != 1)
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	int st;
	waitpid(pid, &st, 0);
	char c = 0;
	ssize_t n = read(p[0], &c, 1);
	return n == 1 && c == 'y' ? 0 : ENOENT;
}

/* setns FIRST PATH: setns(2) into this process's own mount namespace, which moves the
 * root and the working directory to the namespace's root, "/"; then PATH removed by
 * its name relative to "/" (stale_copy). */
static int c_setns(int argc, char **argv)
{
	(void)argc;
	const char *rel = NULL;
	int rc = stale_copy(argv, &rel);
	if (rc)
		return rc;
	int ns = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	if (ns < 0 || setns(ns, CLONE_NEWNS) < 0)
		return errno;
	close(ns);
	return rc_of(unlink(rel));
}

/* ---- metadata ---------------------------------------------------------------------------- */

/* chmod PATH MODE */
static int c_chmod(int argc, char **argv)
{
	MODE(m, argv[1]);
	return rc_of(chmod(argv[0], m));
}

/* fchmod FILE MODE */
static int c_fchmod(int argc, char **argv)
{
	MODE(m, argv[1]);
	RAWFD(fd, argv[0], O_RDONLY);
	return rc_of(fchmod(fd, m));
}

/* fchmodat DIR PATH MODE [FLAGS] */
static int c_fchmodat(int argc, char **argv)
{
	DIRFD(d, argv[0]);
	MODE(m, argv[2]);
	NUM(fl, argc > 3 ? argv[3] : "0");
	return rc_of(fchmodat(d, argv[1], m, (int)fl));
}

/* lchmod PATH MODE   (glibc: EOPNOTSUPP on a symlink; works on other files) */
static int c_lchmod(int argc, char **argv)
{
	MODE(m, argv[1]);
	return rc_of(lchmod(argv[0], m));
}

/* chown PATH UID GID */
static int c_chown(int argc, char **argv)
{
	NUM(u, argv[1]);
	NUM(g, argv[2]);
	return rc_of(chown(argv[0], (uid_t)u, (gid_t)g));
}

/* fchown FILE UID GID */
static int c_fchown(int argc, char **argv)
{
	NUM(u, argv[1]);
	NUM(g, argv[2]);
	RAWFD(fd, argv[0], O_RDONLY);
	return rc_of(fchown(fd, (uid_t)u, (gid_t)g));
}

/* lchown PATH UID GID */
static int c_lchown(int argc, char **argv)
{
	NUM(u, argv[1]);
	NUM(g, argv[2]);
	return rc_of(lchown(argv[0], (uid_t)u, (gid_t)g));
}

/* fchownat DIR PATH UID GID [FLAGS] */
static int c_fchownat(int argc, char **argv)
{
	DIRFD(d, argv[0]);
	NUM(u, argv[2]);
	NUM(g, argv[3]);
	NUM(fl, argc > 4 ? argv[4] : "0");
	return rc_of(fchownat(d, argv[1], (uid_t)u, (gid_t)g, (int)fl));
}

/* Every time call sets atime and mtime to SEC (seconds since the epoch). */
static void tv_of(struct timeval tv[2], long long sec)
{
	tv[0].tv_sec = tv[1].tv_sec = (time_t)sec;
	tv[0].tv_usec = tv[1].tv_usec = 0;
}

static void ts_of(struct timespec ts[2], long long sec)
{
	ts[0].tv_sec = ts[1].tv_sec = (time_t)sec;
	ts[0].tv_nsec = ts[1].tv_nsec = 0;
}

/* utime PATH SEC */
static int c_utime(int argc, char **argv)
{
	NUM(sec, argv[1]);
	struct utimbuf t = {.actime = (time_t)sec, .modtime = (time_t)sec};
	return rc_of(utime(argv[0], &t));
}

/* utimes PATH SEC */
static int c_utimes(int argc, char **argv)
{
	NUM(sec, argv[1]);
	struct timeval tv[2];
	tv_of(tv, sec);
	return rc_of(utimes(argv[0], tv));
}

/* lutimes PATH SEC */
static int c_lutimes(int argc, char **argv)
{
	NUM(sec, argv[1]);
	struct timeval tv[2];
	tv_of(tv, sec);
	return rc_of(lutimes(argv[0], tv));
}

/* futimes FILE SEC */
static int c_futimes(int argc, char **argv)
{
	NUM(sec, argv[1]);
	RAWFD(fd, argv[0], O_RDONLY);
	struct timeval tv[2];
	tv_of(tv, sec);
	return rc_of(futimes(fd, tv));
}

/* futimesat DIR PATH SEC */
static int c_futimesat(int argc, char **argv)
{
	DIRFD(d, argv[0]);
	NUM(sec, argv[2]);
	struct timeval tv[2];
	tv_of(tv, sec);
	return rc_of(futimesat(d, argv[1], tv));
}

/* utimensat DIR PATH SEC [FLAGS] */
static int c_utimensat(int argc, char **argv)
{
	DIRFD(d, argv[0]);
	NUM(sec, argv[2]);
	NUM(fl, argc > 3 ? argv[3] : "0");
	struct timespec ts[2];
	ts_of(ts, sec);
	return rc_of(utimensat(d, argv[1], ts, (int)fl));
}

/* futimens FILE SEC */
static int c_futimens(int argc, char **argv)
{
	NUM(sec, argv[1]);
	RAWFD(fd, argv[0], O_RDONLY);
	struct timespec ts[2];
	ts_of(ts, sec);
	return rc_of(futimens(fd, ts));
}

/* setxattr PATH NAME VALUE [FLAGS] */
static int c_setxattr(int argc, char **argv)
{
	NUM(fl, argc > 3 ? argv[3] : "0");
	return rc_of(setxattr(argv[0], argv[1], argv[2], strlen(argv[2]), (int)fl));
}

static int c_lsetxattr(int argc, char **argv)
{
	NUM(fl, argc > 3 ? argv[3] : "0");
	return rc_of(lsetxattr(argv[0], argv[1], argv[2], strlen(argv[2]), (int)fl));
}

/* fsetxattr FILE NAME VALUE [FLAGS] */
static int c_fsetxattr(int argc, char **argv)
{
	NUM(fl, argc > 3 ? argv[3] : "0");
	RAWFD(fd, argv[0], O_RDONLY);
	return rc_of(fsetxattr(fd, argv[1], argv[2], strlen(argv[2]), (int)fl));
}

/* removexattr PATH NAME */
static int c_removexattr(int argc, char **argv) { return rc_of(removexattr(argv[0], argv[1])); }
static int c_lremovexattr(int argc, char **argv) { return rc_of(lremovexattr(argv[0], argv[1])); }

/* fremovexattr FILE NAME */
static int c_fremovexattr(int argc, char **argv)
{
	RAWFD(fd, argv[0], O_RDONLY);
	return rc_of(fremovexattr(fd, argv[1]));
}

/* ---- programs: a successful exec never returns; the new program's status is ours ---------- */

/* execve PROG ARG0 [ARG...] */
static int c_execve(int argc, char **argv) { return rc_of(execve(argv[0], argv + 1, environ)); }
static int c_execv(int argc, char **argv) { return rc_of(execv(argv[0], argv + 1)); }
static int c_execvp(int argc, char **argv) { return rc_of(execvp(argv[0], argv + 1)); }
static int c_execvpe(int argc, char **argv)
{
	return rc_of(execvpe(argv[0], argv + 1, environ));
}

/* The execl forms take the argument list itself: up to 6 arguments after PROG. */
#define LIST_CALL(n, v, CALL)                                                               \
	switch (n) {                                                                        \
	case 1: return rc_of(CALL(v[0], (char *)NULL));                                     \
	case 2: return rc_of(CALL(v[0], v[1], (char *)NULL));                               \
	case 3: return rc_of(CALL(v[0], v[1], v[2], (char *)NULL));                         \
	case 4: return rc_of(CALL(v[0], v[1], v[2], v[3], (char *)NULL));                   \
	case 5: return rc_of(CALL(v[0], v[1], v[2], v[3], v[4], (char *)NULL));             \
	case 6: return rc_of(CALL(v[0], v[1], v[2], v[3], v[4], v[5], (char *)NULL));       \
	default: fail("too many arguments for a list exec:", v[0]); return FAILED;          \
	}

/* execl PROG ARG0 [ARG...] */
static int c_execl(int argc, char **argv)
{
#define CALL(...) execl(argv[0], __VA_ARGS__)
	LIST_CALL(argc - 1, (argv + 1), CALL);
#undef CALL
}

static int c_execle(int argc, char **argv)
{
#define CALL(...) execle(argv[0], __VA_ARGS__, environ)
	LIST_CALL(argc - 1, (argv + 1), CALL);
#undef CALL
}

static int c_execlp(int argc, char **argv)
{
#define CALL(...) execlp(argv[0], __VA_ARGS__)
	LIST_CALL(argc - 1, (argv + 1), CALL);
#undef CALL
}

/* fexecve PROG ARG0 [ARG...]   (PROG opened read-only, then executed by descriptor) */
static int c_fexecve(int argc, char **argv)
{
	RAWFD(fd, argv[0], O_RDONLY);
	return rc_of(fexecve(fd, argv + 1, environ));
}

/* execveat DIR PATH ARG0 [ARG...] */
static int c_execveat(int argc, char **argv)
{
	DIRFD(d, argv[0]);
	return rc_of(execveat(d, argv[1], argv + 2, environ, 0));
}

/* posix_spawn PROG ARG0 [ARG...]: spawns, waits, succeeds if the child exits 0 */
static int c_posix_spawn(int argc, char **argv)
{
	pid_t pid;
	int r = posix_spawn(&pid, argv[0], NULL, NULL, argv + 1, environ);
	return r ? r : wait_child(pid);
}

static int c_posix_spawnp(int argc, char **argv)
{
	pid_t pid;
	int r = posix_spawnp(&pid, argv[0], NULL, NULL, argv + 1, environ);
	return r ? r : wait_child(pid);
}

/* posix_spawn_file_actions_addopen FD PATH FLAGS MODE PROG ARG0 [ARG...]:
 * registers the open (the wrapped call), then posix_spawn()s PROG with it. */
static int c_posix_spawn_file_actions_addopen(int argc, char **argv)
{
	NUM(fd, argv[0]);
	NUM(fl, argv[2]);
	MODE(m, argv[3]);
	posix_spawn_file_actions_t fa;
	int r = posix_spawn_file_actions_init(&fa);
	if (r)
		return r;
	r = posix_spawn_file_actions_addopen(&fa, (int)fd, argv[1], (int)fl, m);
	if (r)
		return r;
	pid_t pid;
	r = posix_spawn(&pid, argv[4], &fa, NULL, argv + 5, environ);
	posix_spawn_file_actions_destroy(&fa);
	return r ? r : wait_child(pid);
}

/* A list made with posix_spawn_file_actions_init (the wrapped call), its actions, a
 * posix_spawn of PROG with it, destroyed (the wrapped call) and the child waited for. */
static int spawn_with(posix_spawn_file_actions_t *fa, char **cmd)
{
	pid_t pid;
	int r = posix_spawn(&pid, cmd[0], fa, NULL, cmd + 1, environ);
	posix_spawn_file_actions_destroy(fa);
	return r ? r : wait_child(pid);
}

/* addopen FD PATH FLAGS MODE onto fa (a relative PATH lands where the list is then). */
static int add_open(posix_spawn_file_actions_t *fa, char **argv)
{
	NUM(fd, argv[0]);
	NUM(fl, argv[2]);
	MODE(m, argv[3]);
	return posix_spawn_file_actions_addopen(fa, (int)fd, argv[1], (int)fl, m);
}

/* posix_spawn_file_actions_addchdir_np DIR FD PATH FLAGS MODE PROG ARG0 [ARG...]: the
 * child goes to DIR, then opens PATH (relative: in DIR) onto FD, then runs PROG. */
static int c_posix_spawn_file_actions_addchdir_np(int argc, char **argv)
{
	(void)argc;
	posix_spawn_file_actions_t fa;
	int r = posix_spawn_file_actions_init(&fa);
	if (!r)
		r = posix_spawn_file_actions_addchdir_np(&fa, argv[0]);
	if (!r)
		r = add_open(&fa, argv + 1);
	return r ? r : spawn_with(&fa, argv + 5);
}

/* posix_spawn_file_actions_addfchdir_np DIR FD PATH FLAGS MODE PROG ARG0 [ARG...]: the
 * same through a descriptor of DIR opened here (with a raw system call). */
static int c_posix_spawn_file_actions_addfchdir_np(int argc, char **argv)
{
	(void)argc;
	RAWFD(dfd, argv[0], O_RDONLY | O_DIRECTORY);
	posix_spawn_file_actions_t fa;
	int r = posix_spawn_file_actions_init(&fa);
	if (!r)
		r = posix_spawn_file_actions_addfchdir_np(&fa, dfd);
	if (!r)
		r = add_open(&fa, argv + 1);
	return r ? r : spawn_with(&fa, argv + 5);
}

/* posix_spawn_file_actions_adddup2 FD PATH FLAGS MODE NEWFD PROG ARG0 [ARG...]: PATH
 * opened onto FD, then FD duplicated onto NEWFD, in the child. */
static int c_posix_spawn_file_actions_adddup2(int argc, char **argv)
{
	(void)argc;
	NUM(nfd, argv[4]);
	NUM(fd, argv[0]);
	posix_spawn_file_actions_t fa;
	int r = posix_spawn_file_actions_init(&fa);
	if (!r)
		r = add_open(&fa, argv);
	if (!r)
		r = posix_spawn_file_actions_adddup2(&fa, (int)fd, (int)nfd);
	return r ? r : spawn_with(&fa, argv + 5);
}

/* posix_spawn_file_actions_init DIR FD PATH FLAGS MODE PROG ARG0 [ARG...]: a list that
 * goes to DIR is left without being destroyed (its actions leak), and a new one is made
 * at its address with init: PATH (relative) then lands in the current directory, not
 * in DIR. */
static int c_posix_spawn_file_actions_init(int argc, char **argv)
{
	(void)argc;
	posix_spawn_file_actions_t fa;
	int r = posix_spawn_file_actions_init(&fa);
	if (!r)
		r = posix_spawn_file_actions_addchdir_np(&fa, argv[0]);
	if (r)
		return r;
	r = posix_spawn_file_actions_init(&fa);
	if (!r)
		r = add_open(&fa, argv + 1);
	return r ? r : spawn_with(&fa, argv + 5);
}

/* posix_spawn_file_actions_destroy DIR FD PATH FLAGS MODE PROG ARG0 [ARG...]: a list
 * that goes to DIR, destroyed; then a list at the same address, made by copying an
 * empty list in (no init): PATH (relative) lands in the current directory. */
static int c_posix_spawn_file_actions_destroy(int argc, char **argv)
{
	(void)argc;
	posix_spawn_file_actions_t fa, empty;
	memset(&empty, 0, sizeof empty);
	int r = posix_spawn_file_actions_init(&fa);
	if (!r)
		r = posix_spawn_file_actions_addchdir_np(&fa, argv[0]);
	if (r)
		return r;
	r = posix_spawn_file_actions_destroy(&fa);
	if (r)
		return r;
	fa = empty; /* what init makes in glibc: nothing allocated, nothing used */
	r = add_open(&fa, argv + 1);
	return r ? r : spawn_with(&fa, argv + 5);
}

/* _exit PATH / _Exit PATH: creates PATH (its RESULT still held back by the shim, see
 * journal/run.h) and ends the process at once, skipping exit()'s destructors: the
 * wrapper must write the RESULT first. */
static int end_after_creat(const char *path, void (*end)(int))
{
	int fd = creat(path, 0644);
	if (fd < 0)
		return errno;
	end(0);
	return 0;
}

static int c__exit(int argc, char **argv)
{
	(void)argc;
	return end_after_creat(argv[0], _exit);
}

static int c__Exit(int argc, char **argv)
{
	(void)argc;
	return end_after_creat(argv[0], _Exit);
}

/* system CMD: succeeds if the shell exits 0 */
static int c_system(int argc, char **argv)
{
	int st = system(argv[0]);
	return st < 0 ? errno : child_status(st);
}

/* ---- process ends: each forks a shell running CMD and reaps it with one call ---- */

static pid_t fork_shell(const char *cmd)
{
	pid_t pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* wait CMD */
static int c_wait(int argc, char **argv)
{
	int st;
	if (fork_shell(argv[0]) < 0)
		return errno;
	return wait(&st) < 0 ? errno : child_status(st);
}

/* PATH.parent created (this process's first record, which opens the run), then a child
 * made by fork() or, pty, by forkpty() creates PATH and ends; the parent waits for it
 * and prints "child PID".  The child's records must carry its own pid, after a PROC
 * naming this process as its parent (t-proc). */
static int child_creates(const char *path, int pty)
{
	char first[PATH_MAX];
	snprintf(first, sizeof first, "%s.parent", path);
	int pfd = creat(first, 0644);
	if (pfd < 0)
		return errno;
	close(pfd);
	int master = -1;
	pid_t pid = pty ? forkpty(&master, NULL, NULL, NULL) : fork();
	if (pid < 0)
		return errno;
	if (pid == 0) {
		int fd = creat(path, 0644);
		_exit(fd < 0 ? 1 : 0);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0)
		return errno;
	if (master >= 0)
		close(master);
	printf("child %ld\n", (long)pid);
	return child_status(st);
}

/* fork PATH: through the shim's fork(), which registers its fork handlers (shim/init.c). */
static int c_fork(int argc, char **argv)
{
	(void)argc;
	return child_creates(argv[0], 0);
}

/* vfork PATH and __vfork PATH: the child execs a shell that creates PATH (the child may
 * only exec or _exit); its EXEC record is written in the child, on this process's
 * memory, by the shim's execl wrapper.  The parent then creates PATH.after itself: its
 * journaling must have survived the child (shim/vfork.c). */
extern pid_t __vfork(void);
static int vfork_creates(const char *path, int under)
{
	char cmd[PATH_MAX + 16], after[PATH_MAX];
	snprintf(cmd, sizeof cmd, ": > '%s'", path);
	snprintf(after, sizeof after, "%s.after", path);
	pid_t pid = under ? __vfork() : vfork();
	if (pid < 0)
		return errno;
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0)
		return errno;
	int fd = creat(after, 0644);
	if (fd < 0)
		return errno;
	close(fd);
	printf("child %ld\n", (long)pid);
	return child_status(st);
}

static int c_vfork(int argc, char **argv)
{
	(void)argc;
	return vfork_creates(argv[0], 0);
}

static int c___vfork(int argc, char **argv)
{
	(void)argc;
	return vfork_creates(argv[0], 1);
}

/* forkpty PATH: through glibc's forkpty, whose fork is libc's own and passes the shim's
 * fork wrapper by: the shim's forkpty wrapper registers the fork handlers. */
static int c_forkpty(int argc, char **argv)
{
	(void)argc;
	return child_creates(argv[0], 1);
}

/* waitpid CMD */
static int c_waitpid(int argc, char **argv)
{
	int st;
	pid_t pid = fork_shell(argv[0]);
	if (pid < 0)
		return errno;
	return waitpid(pid, &st, 0) < 0 ? errno : child_status(st);
}

/* wait3 CMD */
static int c_wait3(int argc, char **argv)
{
	int st;
	struct rusage ru;
	if (fork_shell(argv[0]) < 0)
		return errno;
	return wait3(&st, 0, &ru) < 0 ? errno : child_status(st);
}

/* wait4 CMD */
static int c_wait4(int argc, char **argv)
{
	int st;
	struct rusage ru;
	pid_t pid = fork_shell(argv[0]);
	if (pid < 0)
		return errno;
	return wait4(pid, &st, 0, &ru) < 0 ? errno : child_status(st);
}

/* waitid CMD */
static int c_waitid(int argc, char **argv)
{
	siginfo_t si;
	pid_t pid = fork_shell(argv[0]);
	if (pid < 0)
		return errno;
	if (waitid(P_PID, (id_t)pid, &si, WEXITED) < 0)
		return errno;
	return si.si_code == CLD_EXITED ? child_status(si.si_status << 8) : FAILED;
}

/* pclose CMD: popen(CMD, "r"), its output copied to our stdout, then pclose */
static int c_pclose(int argc, char **argv)
{
	FILE *f = popen(argv[0], "r");
	if (!f)
		return errno;
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		fwrite(buf, 1, n, stdout);
	int st = pclose(f);
	return st < 0 ? errno : child_status(st);
}

/* popen CMD [MODE]: output of an "r" stream is copied to our stdout */
static int c_popen(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "r";
	FILE *f = popen(argv[0], mode);
	if (!f)
		return errno;
	if (mode[0] == 'r') {
		char buf[4096];
		size_t n;
		while ((n = fread(buf, 1, sizeof buf, f)) > 0)
			fwrite(buf, 1, n, stdout);
	}
	int st = pclose(f);
	return st < 0 ? errno : child_status(st);
}

/* ---- dispatch -------------------------------------------------------------------------- */

static const struct call {
	const char *name;
	int (*fn)(int argc, char **argv);
	int min; /* arguments required after NAME */
	const char *args;
} calls[] = {
	{"open", c_open, 3, "PATH FLAGS MODE [TEXT]"},
	{"open64", c_open64, 3, "PATH FLAGS MODE [TEXT]"},
	{"openat", c_openat, 4, "DIR PATH FLAGS MODE [TEXT]"},
	{"openat64", c_openat64, 4, "DIR PATH FLAGS MODE [TEXT]"},
	{"creat", c_creat, 2, "PATH MODE [TEXT]"},
	{"creat64", c_creat64, 2, "PATH MODE [TEXT]"},
	{"__open_2", c___open_2, 2, "PATH FLAGS [TEXT]"},
	{"__open64_2", c___open64_2, 2, "PATH FLAGS [TEXT]"},
	{"__openat_2", c___openat_2, 3, "DIR PATH FLAGS [TEXT]"},
	{"__openat64_2", c___openat64_2, 3, "DIR PATH FLAGS [TEXT]"},
	{"fopen", c_fopen, 2, "PATH MODE [TEXT]"},
	{"fopen64", c_fopen64, 2, "PATH MODE [TEXT]"},
	{"freopen", c_freopen, 2, "PATH|- MODE [TEXT]"},
	{"freopen64", c_freopen64, 2, "PATH|- MODE [TEXT]"},
	{"mkstemp", c_mkstemp, 1, "TEMPLATE"},
	{"mkstemp64", c_mkstemp64, 1, "TEMPLATE"},
	{"mkostemp", c_mkostemp, 2, "TEMPLATE FLAGS"},
	{"mkostemp64", c_mkostemp64, 2, "TEMPLATE FLAGS"},
	{"mkstemps", c_mkstemps, 2, "TEMPLATE SUFFIXLEN"},
	{"mkstemps64", c_mkstemps64, 2, "TEMPLATE SUFFIXLEN"},
	{"mkostemps", c_mkostemps, 3, "TEMPLATE SUFFIXLEN FLAGS"},
	{"mkostemps64", c_mkostemps64, 3, "TEMPLATE SUFFIXLEN FLAGS"},
	{"mkdtemp", c_mkdtemp, 1, "TEMPLATE"},
	{"tmpfile", c_tmpfile, 0, "[TEXT]"},
	{"tmpfile64", c_tmpfile64, 0, "[TEXT]"},
	{"unlink", c_unlink, 1, "PATH"},
	{"unlinkat", c_unlinkat, 2, "DIR PATH [FLAGS]"},
	{"remove", c_remove, 1, "PATH"},
	{"rmdir", c_rmdir, 1, "PATH"},
	{"rename", c_rename, 2, "FROM TO"},
	{"renameat", c_renameat, 4, "DIR FROM DIR TO"},
	{"renameat2", c_renameat2, 5, "DIR FROM DIR TO FLAGS"},
	{"link", c_link, 2, "OLD NEW"},
	{"linkat", c_linkat, 4, "DIR OLD DIR NEW [FLAGS]"},
	{"symlink", c_symlink, 2, "TARGET PATH"},
	{"symlinkat", c_symlinkat, 3, "TARGET DIR PATH"},
	{"mkdir", c_mkdir, 2, "PATH MODE"},
	{"mkdirat", c_mkdirat, 3, "DIR PATH MODE"},
	{"mknod", c_mknod, 3, "PATH TYPE MODE [DEV]"},
	{"mknodat", c_mknodat, 4, "DIR PATH TYPE MODE [DEV]"},
	{"mkfifo", c_mkfifo, 2, "PATH MODE"},
	{"mkfifoat", c_mkfifoat, 3, "DIR PATH MODE"},
	{"truncate", c_truncate, 2, "PATH LEN"},
	{"truncate64", c_truncate64, 2, "PATH LEN"},
	{"ftruncate", c_ftruncate, 2, "FILE LEN"},
	{"ftruncate64", c_ftruncate64, 2, "FILE LEN"},
	{"fallocate", c_fallocate, 4, "FILE MODE OFFSET LEN"},
	{"fallocate64", c_fallocate64, 4, "FILE MODE OFFSET LEN"},
	{"posix_fallocate", c_posix_fallocate, 3, "FILE OFFSET LEN"},
	{"posix_fallocate64", c_posix_fallocate64, 3, "FILE OFFSET LEN"},
	{"copy_file_range", c_copy_file_range, 2, "IN OUT [LEN]"},
	{"sendfile", c_sendfile, 2, "OUT IN [LEN]"},
	{"sendfile64", c_sendfile64, 2, "OUT IN [LEN]"},
	{"pwritev2", c_pwritev2, 2, "FILE TEXT"},
	{"pwritev64v2", c_pwritev64v2, 2, "FILE TEXT"},
	{"fcntl", c_fcntl, 2, "FILE TEXT"},
	{"bind", c_bind, 1, "PATH"},
	{"connect", c_connect, 1, "ADDR"},
	{"sendto", c_sendto, 1, "ADDR [TEXT]"},
	{"sendmsg", c_sendmsg, 1, "ADDR [TEXT]"},
	{"sendmmsg", c_sendmmsg, 1, "ADDR..."},
	{"getaddrinfo", c_getaddrinfo, 1, "HOST"},
	{"gethostbyname", c_gethostbyname, 1, "HOST"},
	{"gethostbyname2", c_gethostbyname2, 1, "HOST"},
	{"gethostbyname_r", c_gethostbyname_r, 1, "HOST"},
	{"gethostbyname2_r", c_gethostbyname2_r, 1, "HOST"},
	{"close", c_close, 3, "G X F"},
	{"dup2", c_dup2, 3, "G X F"},
	{"dup3", c_dup3, 3, "G X F"},
	{"close_range", c_close_range, 3, "G X F"},
	{"closefrom", c_closefrom, 3, "G X F"},
	{"fclose", c_fclose, 2, "new:NEW OLD"},
	{"dup", c_dup, 2, "new:NEW OLD"},
	{"chdir", c_chdir, 3, "FIRST DIR NAME"},
	{"fchdir", c_fchdir, 3, "FIRST DIR NAME"},
	{"nftw", c_nftw, 3, "FIRST DIR NAME"},
	{"nftw64", c_nftw64, 3, "FIRST DIR NAME"},
	{"fts_open", c_fts_open, 3, "FIRST DIR NAME"},
	{"fts64_open", c_fts64_open, 3, "FIRST DIR NAME"},
	{"daemon", c_daemon, 2, "FIRST PATH"},
	{"setns", c_setns, 2, "FIRST PATH"},
	{"stat", c_stat, 1, "PATH"},
	{"stat64", c_stat64, 1, "PATH"},
	{"lstat", c_lstat, 1, "PATH"},
	{"lstat64", c_lstat64, 1, "PATH"},
	{"fstatat", c_fstatat, 2, "DIR PATH [FLAGS]"},
	{"fstatat64", c_fstatat64, 2, "DIR PATH [FLAGS]"},
	{"statx", c_statx, 2, "DIR PATH [FLAGS]"},
	{"__xstat", c___xstat, 1, "PATH"},
	{"__xstat64", c___xstat64, 1, "PATH"},
	{"__lxstat", c___lxstat, 1, "PATH"},
	{"__lxstat64", c___lxstat64, 1, "PATH"},
	{"__fxstatat", c___fxstatat, 2, "DIR PATH"},
	{"__fxstatat64", c___fxstatat64, 2, "DIR PATH"},
	{"readlink", c_readlink, 1, "PATH"},
	{"readlinkat", c_readlinkat, 2, "DIR PATH"},
	{"opendir", c_opendir, 1, "PATH"},
	{"fdopendir", c_fdopendir, 1, "FD"},
	{"closedir", c_closedir, 2, "DIR1 DIR2"},
	{"syscall", c_syscall, 1,
	 "unlink PATH | mkdir PATH MODE | rename FROM TO | io_uring_setup | getpid | openat2 PATH [resolve] | newfstatat PATH"},
	{"fcntl64", c_fcntl64, 2, "FILE TEXT"},
	{"chmod", c_chmod, 2, "PATH MODE"},
	{"fchmod", c_fchmod, 2, "FILE MODE"},
	{"fchmodat", c_fchmodat, 3, "DIR PATH MODE [FLAGS]"},
	{"lchmod", c_lchmod, 2, "PATH MODE"},
	{"chown", c_chown, 3, "PATH UID GID"},
	{"fchown", c_fchown, 3, "FILE UID GID"},
	{"lchown", c_lchown, 3, "PATH UID GID"},
	{"fchownat", c_fchownat, 4, "DIR PATH UID GID [FLAGS]"},
	{"utime", c_utime, 2, "PATH SEC"},
	{"utimes", c_utimes, 2, "PATH SEC"},
	{"lutimes", c_lutimes, 2, "PATH SEC"},
	{"futimes", c_futimes, 2, "FILE SEC"},
	{"futimesat", c_futimesat, 3, "DIR PATH SEC"},
	{"utimensat", c_utimensat, 3, "DIR PATH SEC [FLAGS]"},
	{"futimens", c_futimens, 2, "FILE SEC"},
	{"setxattr", c_setxattr, 3, "PATH NAME VALUE [FLAGS]"},
	{"lsetxattr", c_lsetxattr, 3, "PATH NAME VALUE [FLAGS]"},
	{"fsetxattr", c_fsetxattr, 3, "FILE NAME VALUE [FLAGS]"},
	{"removexattr", c_removexattr, 2, "PATH NAME"},
	{"lremovexattr", c_lremovexattr, 2, "PATH NAME"},
	{"fremovexattr", c_fremovexattr, 2, "FILE NAME"},
	{"execve", c_execve, 2, "PROG ARG0 [ARG...]"},
	{"execv", c_execv, 2, "PROG ARG0 [ARG...]"},
	{"execvp", c_execvp, 2, "FILE ARG0 [ARG...]"},
	{"execvpe", c_execvpe, 2, "FILE ARG0 [ARG...]"},
	{"execl", c_execl, 2, "PROG ARG0 [ARG...]"},
	{"execle", c_execle, 2, "PROG ARG0 [ARG...]"},
	{"execlp", c_execlp, 2, "FILE ARG0 [ARG...]"},
	{"fexecve", c_fexecve, 2, "PROG ARG0 [ARG...]"},
	{"execveat", c_execveat, 3, "DIR PATH ARG0 [ARG...]"},
	{"posix_spawn", c_posix_spawn, 2, "PROG ARG0 [ARG...]"},
	{"posix_spawnp", c_posix_spawnp, 2, "FILE ARG0 [ARG...]"},
	{"posix_spawn_file_actions_addopen", c_posix_spawn_file_actions_addopen, 6,
	 "FD PATH FLAGS MODE PROG ARG0 [ARG...]"},
	{"posix_spawn_file_actions_adddup2", c_posix_spawn_file_actions_adddup2, 7,
	 "FD PATH FLAGS MODE NEWFD PROG ARG0 [ARG...]"},
	{"posix_spawn_file_actions_addchdir_np", c_posix_spawn_file_actions_addchdir_np, 7,
	 "DIR FD PATH FLAGS MODE PROG ARG0 [ARG...]"},
	{"posix_spawn_file_actions_addfchdir_np", c_posix_spawn_file_actions_addfchdir_np, 7,
	 "DIR FD PATH FLAGS MODE PROG ARG0 [ARG...]"},
	{"posix_spawn_file_actions_init", c_posix_spawn_file_actions_init, 7,
	 "DIR FD PATH FLAGS MODE PROG ARG0 [ARG...]"},
	{"posix_spawn_file_actions_destroy", c_posix_spawn_file_actions_destroy, 7,
	 "DIR FD PATH FLAGS MODE PROG ARG0 [ARG...]"},
	{"system", c_system, 1, "CMD"},
	{"_exit", c__exit, 1, "PATH"},
	{"_Exit", c__Exit, 1, "PATH"},
	{"popen", c_popen, 1, "CMD [MODE]"},
	{"fork", c_fork, 1, "PATH"},
	{"forkpty", c_forkpty, 1, "PATH"},
	{"vfork", c_vfork, 1, "PATH"},
	{"__vfork", c___vfork, 1, "PATH"},
	{"wait", c_wait, 1, "CMD"},
	{"waitpid", c_waitpid, 1, "CMD"},
	{"wait3", c_wait3, 1, "CMD"},
	{"wait4", c_wait4, 1, "CMD"},
	{"waitid", c_waitid, 1, "CMD"},
	{"pclose", c_pclose, 1, "CMD"},
};

#define NCALLS (sizeof calls / sizeof calls[0])

static void usage(FILE *to)
{
	fprintf(to, "usage: %s NAME ARG...   call the libc entry point NAME\n"
		    "       %s --list        the names implemented\n"
		    "       %s NAME --help   the arguments of NAME\n"
		    "FLAGS: a number or names joined by ',' (e.g. wronly,trunc); MODE: octal;\n"
		    "FILE: a path (opened with a raw syscall) or fd:N; DIR: a path or AT_FDCWD.\n"
		    "ADDR: 1.2.3.4:PORT, [::1]:PORT, unix:/path or unix:@abstract.\n",
		prog, prog, prog);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--list") == 0) {
		for (size_t i = 0; i < NCALLS; i++)
			printf("%s\n", calls[i].name);
		return fflush(stdout) == 0 ? 0 : 1;
	}
	const struct call *c = NULL;
	for (size_t i = 0; i < NCALLS && !c; i++)
		if (strcmp(argv[1], calls[i].name) == 0)
			c = &calls[i];
	if (!c) {
		fprintf(stderr, "%s: unknown entry point '%s' (see --list)\n", prog, argv[1]);
		return 2;
	}
	cur = c->name;
	if (argc > 2 && strcmp(argv[2], "--help") == 0) {
		printf("%s %s %s\n", prog, c->name, c->args);
		return 0;
	}
	if (argc - 2 < c->min) {
		fprintf(stderr, "usage: %s %s %s\n", prog, c->name, c->args);
		return 2;
	}
	int r = c->fn(argc - 2, argv + 2);
	if (fflush(stdout) != 0 && r == 0)
		r = errno;
	if (r > 0)
		fprintf(stderr, "%s: %s: %s (errno %d)\n", prog, c->name, strerror(r), r);
	return r ? 1 : 0;
}
