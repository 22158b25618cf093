/* SPDX-License-Identifier: MIT
 *
 * straggle.c - the files a run's remaining processes hold open for writing when its
 * command ends (bbx-run, before the seal).
 *
 * bbx-run is the run's child subreaper (prctl PR_SET_CHILD_SUBREAPER): a process of the
 * run whose parent exits is re-parented to bbx-run, not to init.  So when the command
 * has exited and been reaped, bbx-run's children are exactly the run's processes that
 * outlived it, and their descendants are found through /proc/PID/task/TID/children.
 * For each, the descriptors open for writing (/proc/PID/fdinfo/N: the access mode) on
 * regular files, and the shared writable mappings of files (/proc/PID/maps), give the
 * files it may still change after the seal without making any record: a write(2), or
 * a store into the mapping, goes through no wrapper.  `(sleep 5; make) > build.log &`
 * is the common case.  Their FINAL records are then followed by a NOTE (seal.c), and
 * undo takes their later changes for the run's own (journal-format.md 8.1).
 *
 * Without stragglers this costs one read of bbx-run's own children file.  A process
 * whose /proc entries cannot be read (another user's, after a setuid exec) is passed
 * over: its files are then still reported as conflicts by undo, as before.
 */
#include "straggle.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* Stop looking past this many processes (a fork bomb left behind). */
#define MAX_PROCS 4096

struct scan {
	pid_t *q;
	size_t nq, capq;
	struct bbx_held *h;
	size_t nh, caph;
	int oom;
};

static void push_pid(struct scan *s, pid_t p)
{
	if (s->nq >= MAX_PROCS)
		return;
	for (size_t i = 0; i < s->nq; i++) /* a pid met twice: threads share children */
		if (s->q[i] == p)
			return;
	if (s->nq == s->capq) {
		size_t cap = s->capq ? 2 * s->capq : 16;
		pid_t *q = realloc(s->q, cap * sizeof *q);
		if (!q) {
			s->oom = 1;
			return;
		}
		s->q = q;
		s->capq = cap;
	}
	s->q[s->nq++] = p;
}

static void push_held(struct scan *s, pid_t pid, const char *comm, dev_t dev, ino_t ino)
{
	for (size_t i = 0; i < s->nh; i++)
		if (s->h[i].dev == (uint64_t)dev && s->h[i].ino == (uint64_t)ino)
			return;
	if (s->nh == s->caph) {
		size_t cap = s->caph ? 2 * s->caph : 16;
		struct bbx_held *h = realloc(s->h, cap * sizeof *h);
		if (!h) {
			s->oom = 1;
			return;
		}
		s->h = h;
		s->caph = cap;
	}
	struct bbx_held *e = &s->h[s->nh++];
	*e = (struct bbx_held){.dev = dev, .ino = ino, .pid = pid};
	snprintf(e->comm, sizeof e->comm, "%s", comm);
}

/* Reads a small /proc file whole into buf (NUL-terminated); its length, or -1. */
static ssize_t slurp(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	ssize_t r;
	while (n + 1 < cap && (r = read(fd, buf + n, cap - 1 - n)) > 0)
		n += (size_t)r;
	close(fd);
	buf[n] = 0;
	return (ssize_t)n;
}

/* The next numbered entry of a /proc directory (tasks, descriptors), or NULL. */
static const char *next_number(DIR *d)
{
	struct dirent *de;
	while ((de = readdir(d)))
		if (de->d_name[0] >= '0' && de->d_name[0] <= '9')
			return de->d_name;
	return NULL;
}

/* The pids of one children file (space-separated).  A long list is cut at the buffer:
 * the cut number is dropped, not misread. */
static void push_children(struct scan *s, const char *path)
{
	char buf[4096];
	ssize_t n = slurp(path, buf, sizeof buf);
	if (n <= 0)
		return;
	if ((size_t)n == sizeof buf - 1) {
		char *sp = strrchr(buf, ' ');
		if (sp)
			sp[1] = 0;
	}
	pid_t c;
	for (char *p = buf, *e; (c = (pid_t)strtol(p, &e, 10)) > 0; p = e)
		push_pid(s, c);
}

/* The children of every thread of pid (pid 0: this process's main thread, the one that
 * started the command). */
static void children(struct scan *s, pid_t pid)
{
	char path[320];
	if (pid == 0) {
		snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
		push_children(s, path);
		return;
	}
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return;
	for (const char *t; (t = next_number(d));) {
		char cp[320];
		snprintf(cp, sizeof cp, "/proc/%d/task/%s/children", (int)pid, t);
		push_children(s, cp);
	}
	closedir(d);
}

/* The regular files pid has open for writing. */
static void fds(struct scan *s, pid_t pid, const char *comm)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return;
	for (const char *fd; (fd = next_number(d));) {
		char ip[320], buf[512];
		snprintf(ip, sizeof ip, "/proc/%d/fdinfo/%s", (int)pid, fd);
		if (slurp(ip, buf, sizeof buf) <= 0)
			continue;
		const char *f = strstr(buf, "flags:");
		if (!f)
			continue;
		unsigned long flags = strtoul(f + 6, NULL, 8);
		if ((flags & O_ACCMODE) == O_RDONLY)
			continue;
		struct stat sb;
		snprintf(ip, sizeof ip, "/proc/%d/fd/%s", (int)pid, fd);
		if (stat(ip, &sb) == 0 && S_ISREG(sb.st_mode))
			push_held(s, pid, comm, sb.st_dev, sb.st_ino);
	}
	closedir(d);
}

/* The files pid maps shared and writable ("rw-s"): stores into them need no call. */
static void maps(struct scan *s, pid_t pid, const char *comm)
{
	char path[64], line[4096 + 256];
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		char perms[8];
		unsigned maj, min;
		unsigned long long ino;
		if (sscanf(line, "%*x-%*x %7s %*x %x:%x %llu", perms, &maj, &min, &ino) != 4 ||
		    ino == 0 || perms[1] != 'w' || perms[3] != 's')
			continue;
		push_held(s, pid, comm, makedev(maj, min), (ino_t)ino);
	}
	fclose(f);
}

size_t bbx_stragglers_held(struct bbx_held **out, size_t *nprocs)
{
	struct scan s = {0};
	children(&s, 0);
	for (size_t i = 0; i < s.nq; i++) {
		pid_t pid = s.q[i];
		char path[64], comm[32];
		snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
		ssize_t n = slurp(path, comm, sizeof comm);
		if (n > 0 && comm[n - 1] == '\n')
			comm[n - 1] = 0;
		else if (n <= 0)
			comm[0] = 0;
		fds(&s, pid, comm);
		maps(&s, pid, comm);
		children(&s, pid);
	}
	if (nprocs)
		*nprocs = s.nq;
	free(s.q);
	*out = s.h;
	return s.nh;
}
