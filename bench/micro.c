/* SPDX-License-Identifier: MIT */
/* bench/micro.c - nanoseconds per call of the calls the shim wraps, through libc (so an
 * LD_PRELOAD shim sees them) and, as the floor, the same system calls made with
 * syscall(2) (which no preload can see), plus one write(2) of a 200-byte record to an
 * O_APPEND file (what a journal append costs at least).  Run it bare and under
 * `bbx-run -- bench/micro ...` to get the shim's cost per call (bench/micro.sh does).
 *
 *   micro [-b BATCHES] [-n ITERS] DIR     median over BATCHES of ns/call, one line per op
 *   micro -s N                             N posix_spawn()+wait of /bin/true, us per start, and
 *                                          per start the CPU us and page faults of this
 *                                          process and of the children
 *   micro -f N                             us to write k fresh pages, faulted vs MAP_POPULATE
 *
 * Output lines: "op NAME NS" (and "spawn US self_cpu_us US child_cpu_us US self_faults N
 * child_faults N"; "pages K faulted US populated US").  Files are made in DIR. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <netinet/in.h>
#include <spawn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static char p_file[PATH_MAX + 16], p_new[PATH_MAX + 16], p_other[PATH_MAX + 16],
	p_rec[PATH_MAX + 16];
static int lfd = -1;
static struct sockaddr_in addr;
static int recfd = -1;
static const struct linger reset = {1, 0};

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "micro: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void check(int ok, const char *what)
{
	if (!ok)
		die(what);
}

/* libc paths: what the shim intercepts */
static void op_open(void)
{
	int fd = open(p_file, O_RDONLY);

	check(fd >= 0, "open");
	close(fd);
}

static void op_stat(void)
{
	struct stat st;

	check(stat(p_file, &st) == 0, "stat");
}

/* The same by a name relative to the working directory (DIR), and to a descriptor of
 * it, as make, grep -r and find name most files. */
static int dfd = -1;

static void op_open_rel(void)
{
	int fd = open("file", O_RDONLY);

	check(fd >= 0, "open rel");
	close(fd);
}

static void op_openat_dirfd(void)
{
	int fd = openat(dfd, "file", O_RDONLY);

	check(fd >= 0, "openat dirfd");
	close(fd);
}

static void op_stat_rel(void)
{
	struct stat st;

	check(stat("file", &st) == 0, "stat rel");
}

static void op_create(void)
{
	int fd = open(p_new, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	check(fd >= 0, "create");
	check(write(fd, "x", 1) == 1, "write");
	close(fd);
	check(unlink(p_new) == 0, "unlink");
}

static int flip;

static void op_rename(void)
{
	flip = !flip;
	check(rename(flip ? p_file : p_other, flip ? p_other : p_file) == 0, "rename");
}

static void op_connect(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0), c;

	check(s >= 0, "socket");
	check(connect(s, (struct sockaddr *)&addr, sizeof(addr)) == 0, "connect");
	c = accept(lfd, NULL, NULL);
	check(c >= 0, "accept");
	/* reset, not FIN: no TIME_WAIT left to exhaust the ephemeral ports */
	check(setsockopt(s, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset)) == 0, "SO_LINGER");
	close(s);
	close(c);
}

/* the floor: the same system calls, invisible to any preload */
static void sys_open(void)
{
	long fd = syscall(SYS_openat, AT_FDCWD, p_file, O_RDONLY);

	check(fd >= 0, "SYS_openat");
	syscall(SYS_close, fd);
}

static void sys_stat(void)
{
	struct stat st;

	check(syscall(SYS_newfstatat, AT_FDCWD, p_file, &st, 0) == 0, "SYS_newfstatat");
}

static void sys_open_rel(void)
{
	long fd = syscall(SYS_openat, AT_FDCWD, "file", O_RDONLY);

	check(fd >= 0, "SYS_openat rel");
	syscall(SYS_close, fd);
}

/* openat2 as the shim's read filter makes it for a clean relative name (shim.h,
 * bbx_rf_open_rel): without symlinks, and beneath the directory as well (what every
 * such open was until session 47; now only a name with ".." is).  Bare only: bbx-run's
 * seccomp filter refuses an openat2 without the run's mark (ENOSYS), and then these
 * rows are left out. */
static long sys_openat2_rel(unsigned long long resolve)
{
	struct open_how how = {.flags = O_RDONLY, .resolve = resolve};

	return syscall(SYS_openat2, AT_FDCWD, "file", &how, sizeof(how));
}

static void sys_o2_nosym(void)
{
	long fd = sys_openat2_rel(RESOLVE_NO_SYMLINKS);

	check(fd >= 0, "SYS_openat2 rel");
	syscall(SYS_close, fd);
}

static void sys_o2_beneath(void)
{
	long fd = sys_openat2_rel(RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH);

	check(fd >= 0, "SYS_openat2 rel beneath");
	syscall(SYS_close, fd);
}

static void sys_create(void)
{
	long fd = syscall(SYS_openat, AT_FDCWD, p_new, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	check(fd >= 0, "SYS_openat create");
	check(syscall(SYS_write, fd, "x", 1) == 1, "SYS_write");
	syscall(SYS_close, fd);
	check(syscall(SYS_unlinkat, AT_FDCWD, p_new, 0) == 0, "SYS_unlinkat");
}

static void sys_rename(void)
{
	flip = !flip;
	check(syscall(SYS_renameat, AT_FDCWD, flip ? p_file : p_other, AT_FDCWD,
		      flip ? p_other : p_file) == 0, "SYS_renameat");
}

static void sys_connect(void)
{
	long s = syscall(SYS_socket, AF_INET, SOCK_STREAM, 0), c;

	check(s >= 0, "SYS_socket");
	check(syscall(SYS_connect, s, &addr, sizeof(addr)) == 0, "SYS_connect");
	c = syscall(SYS_accept, lfd, NULL, NULL);
	check(c >= 0, "SYS_accept");
	check(syscall(SYS_setsockopt, s, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset)) == 0,
	      "SYS_setsockopt");
	syscall(SYS_close, s);
	syscall(SYS_close, c);
}

static void sys_append(void)
{
	static const char rec[200] = "record";

	check(syscall(SYS_write, recfd, rec, sizeof(rec)) == (long)sizeof(rec), "SYS_write rec");
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double measure(void (*fn)(void), int batches, int iters)
{
	double *v = calloc((size_t)batches, sizeof(*v)), m;
	int b, i;

	check(v != NULL, "calloc");
	for (i = 0; i < iters / 10 + 1; i++) /* warm-up */
		fn();
	for (b = 0; b < batches; b++) {
		double t0 = now_ns();

		for (i = 0; i < iters; i++)
			fn();
		v[b] = (now_ns() - t0) / iters;
	}
	qsort(v, (size_t)batches, sizeof(*v), cmp);
	m = v[batches / 2];
	free(v);
	return m;
}

static double cpu_us(const struct rusage *r)
{
	return (double)(r->ru_utime.tv_sec + r->ru_stime.tv_sec) * 1e6 +
	       (double)(r->ru_utime.tv_usec + r->ru_stime.tv_usec);
}

static int spawn(int n)
{
	char *argv[] = {"/bin/true", NULL};
	double t0 = now_ns();
	int i, st;
	pid_t pid;

	for (i = 0; i < n; i++) {
		errno = posix_spawn(&pid, argv[0], NULL, NULL, argv, environ);
		check(errno == 0, "posix_spawn");
		check(waitpid(pid, &st, 0) == pid, "waitpid");
	}
	/* Then where the time went, per start: the CPU and page faults of this process
	 * (posix_spawn's side: under the shim, the EXEC record and its policy check) and of
	 * the children (the started program, under the shim its start-up). */
	double us = (now_ns() - t0) / n / 1000;
	struct rusage self, kids;
	check(getrusage(RUSAGE_SELF, &self) == 0, "getrusage");
	check(getrusage(RUSAGE_CHILDREN, &kids) == 0, "getrusage");
	printf("spawn %.1f self_cpu_us %.1f child_cpu_us %.1f self_faults %.1f child_faults %.1f\n", us,
	       cpu_us(&self) / n, cpu_us(&kids) / n, (double)self.ru_minflt / n,
	       (double)kids.ru_minflt / n);
	return 0;
}

/* What writing k fresh pages of a 14-page anonymous mapping costs (14: the size of a
 * thread's capture scratch), mapped plainly (a page fault per page written) and with
 * MAP_POPULATE (the kernel fills them in with the mapping): the shim's memory decisions
 * rest on this (journal/capture.c, journal/hot.h).  us per map + writes + unmap, best
 * of 5 batches of n. */
static double map_round(int touch, int populate, int n)
{
	const size_t len = 14 * 4096;
	double best = 1e300;

	for (int b = 0; b < 5; b++) {
		double t0 = now_ns();
		for (int i = 0; i < n; i++) {
			volatile char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
						MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : 0), -1, 0);
			check(p != MAP_FAILED, "mmap");
			for (int k = 0; k < touch; k++)
				p[(size_t)k * 4096 + 8] = 1;
			munmap((void *)p, len);
		}
		double t = (now_ns() - t0) / n;
		if (t < best)
			best = t;
	}
	return best / 1000;
}

static int faults(int n)
{
	static const int ks[] = {1, 2, 4, 8, 14};

	for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++)
		printf("pages %d faulted %.1f populated %.1f\n", ks[i], map_round(ks[i], 0, n),
		       map_round(ks[i], 1, n));
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: micro [-b BATCHES] [-n ITERS] DIR\n       micro -s N\n       micro -f N\n"
			"ns per call of open+close and stat (by DIR's absolute name, relative to\n"
			"DIR as the working directory, and openat relative to a descriptor of DIR),\n"
			"create+write+unlink, rename, socket+connect+accept+close through libc and\n"
			"via syscall(2) (and openat2 of the relative name, without symlinks,\n"
			"and also beneath DIR), and a\n"
			"200-byte O_APPEND write; or us per posix_spawn of /bin/true (-s);\n"
			"or us to write 1-14 fresh pages of a mapping, faulted or populated (-f).\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*fn)(void);
		int div;	/* iterations are divided by this (slow ops) */
	} ops[] = {
		{"open+close", op_open, 1},
		{"stat", op_stat, 1},
		{"open+close(rel)", op_open_rel, 1},
		{"openat+close(dirfd)", op_openat_dirfd, 1},
		{"stat(rel)", op_stat_rel, 1},
		{"create+write+unlink", op_create, 4},
		{"rename", op_rename, 2},
		{"socket+connect+accept+close", op_connect, 20},
		{"sys:open+close", sys_open, 1},
		{"sys:stat", sys_stat, 1},
		{"sys:open+close(rel)", sys_open_rel, 1},
		{"sys:openat2-nosym+close(rel)", sys_o2_nosym, 1},
		{"sys:openat2-nosym-beneath+close(rel)", sys_o2_beneath, 1},
		{"sys:create+write+unlink", sys_create, 4},
		{"sys:rename", sys_rename, 2},
		{"sys:socket+connect+accept+close", sys_connect, 20},
		{"sys:write-200B-append", sys_append, 1},
	};
	int batches = 9, iters = 20000, c, fd;
	socklen_t len = sizeof(addr);
	size_t i;

	while ((c = getopt(argc, argv, "b:n:s:f:h")) != -1) {
		switch (c) {
		case 'b': batches = atoi(optarg); break;
		case 'n': iters = atoi(optarg); break;
		case 's': return spawn(atoi(optarg) > 0 ? atoi(optarg) : 1);
		case 'f': return faults(atoi(optarg) > 0 ? atoi(optarg) : 1);
		default: usage();
		}
	}
	if (optind != argc - 1 || batches < 1 || iters < 4)
		usage();
	/* DIR made absolute and the working directory: the plain ops name files by DIR's
	 * absolute name, the (rel) ones relative to it, the (dirfd) one to dfd. */
	char dir[PATH_MAX];
	check(realpath(argv[optind], dir) != NULL, argv[optind]);
	check(chdir(dir) == 0, "chdir DIR");
	snprintf(p_file, sizeof(p_file), "%s/file", dir);
	snprintf(p_new, sizeof(p_new), "%s/new", dir);
	snprintf(p_other, sizeof(p_other), "%s/other", dir);
	snprintf(p_rec, sizeof(p_rec), "%s/records", dir);
	fd = open(p_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	check(fd >= 0, p_file);
	check(write(fd, "hello\n", 6) == 6, "write");
	close(fd);
	dfd = open(".", O_RDONLY | O_DIRECTORY);
	check(dfd >= 0, "open DIR");
	recfd = open(p_rec, O_WRONLY | O_CREAT | O_APPEND, 0644);
	check(recfd >= 0, p_rec);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	check(lfd >= 0, "socket");
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	check(bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) == 0, "bind 127.0.0.1");
	check(listen(lfd, 64) == 0, "listen");
	check(getsockname(lfd, (struct sockaddr *)&addr, &len) == 0, "getsockname");
	long o2 = sys_openat2_rel(RESOLVE_NO_SYMLINKS);
	if (o2 >= 0)
		close((int)o2);
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
	{
		if (o2 < 0 && (ops[i].fn == sys_o2_nosym || ops[i].fn == sys_o2_beneath))
			continue;
		printf("op %s %.0f\n", ops[i].name, measure(ops[i].fn, batches, iters / ops[i].div));
		fflush(stdout);
		if (flip && rename(p_other, p_file) != 0) /* an odd number of renames */
			die("rename back");
		flip = 0;
	}
	close(recfd);
	close(lfd);
	return 0;
}
