/* SPDX-License-Identifier: MIT
 *
 * path.c - absolute paths for the journal.  A record must name what a call reaches in
 * a form that still means the same thing when bbx-undo (another process, in another
 * directory, after the tree was walked backward) reads it: relative paths are joined to
 * the cwd or to their directory descriptor, and ".." or magic links (/proc/self/cwd,
 * /dev/fd/N) in the directory part are resolved by the kernel.  Allocation-free: used
 * by the shim's wrappers.
 */
#include "capture.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int bbx_path_fd(int fd, char *out, size_t cap)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(p, out, cap - 1);
	if (n < 0)
		return -errno;
	if ((size_t)n >= cap - 1)
		return -ENAMETOOLONG;
	out[n] = 0;
	return out[0] == '/' ? 0 : -EBADF; /* sockets, pipes, anon inodes */
}

/* Where the parent of out (an absolute path) really is, when it cannot be taken
 * literally: ".." (the directory it names may be renamed or removed later in the run,
 * and the replay walks the tree backward), or a magic link such as /proc/self/cwd or
 * /dev/fd/N (which undo, another process, would resolve to itself).  The parent is
 * opened O_PATH and named by the kernel; the last component is kept as it is, so a
 * final symlink is still the call's to follow or not. */
static int canon_parent(char *out, size_t cap)
{
	char *slash = strrchr(out, '/');
	const char *last = slash + 1;
	char tmp[PATH_MAX];
	if (!strcmp(last, "..") || !strcmp(last, "."))
		last = ""; /* the path names a directory: resolve all of it */
	size_t plen = *last ? (size_t)(slash - out) : strlen(out);
	if (plen >= sizeof tmp)
		return -ENAMETOOLONG;
	memcpy(tmp, out, plen);
	tmp[plen] = 0;
	int fd = open(plen ? tmp : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0; /* the call fails the same way: keep the literal path */
	char dir[PATH_MAX], name[NAME_MAX + 1];
	int rc = bbx_path_fd(fd, dir, sizeof dir);
	close(fd);
	if (rc)
		return 0;
	snprintf(name, sizeof name, "%s", last);
	int n = snprintf(out, cap, "%s%s%s", dir, *name && strcmp(dir, "/") ? "/" : "", name);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

/* The name of the directory open as fd.  readlink of /proc/self/fd/N is the dearest
 * system call of a capture (~5 us here: a walk of procfs, then d_path), and rm -r,
 * find -delete and Python's shutil.rmtree make one call per entry through the same
 * descriptor.  So the names learnt are kept per thread by the directory's identity: an
 * fstat of the descriptor (~0.5 us) finds the entry, and a stat of the name proves it
 * still reaches that very directory now.  Nothing about descriptor numbers is trusted
 * (a number closed and reused behind libc's back finds no entry or fails the proof).
 * Either stat goes into the memo, where the capture's stat of the parent (DIRMETA, the
 * journal-directory check) finds it: with the proof, a call through a known directory
 * costs one fstat instead of readlink + stat.
 *
 * The proof is by identity, not by spelling: if an ancestor of the name had since been
 * replaced by a symlink to the directory's new place, the name would still reach it.
 * The record then names a path that leads to the same directory, and the policy judges
 * that path: the directory could only have moved by a rename, which the policy judged
 * in this run (destination included), or by a process outside the run. */
static int dir_name(int fd, char *out, size_t cap)
{
	struct bbx_scratch *s = bbx_stat_epoch ? bbx_scratch() : NULL;
	struct stat fb, pb;
	if (!s || bbx_sys_fstatat(fd, "", &fb, AT_EMPTY_PATH) || !S_ISDIR(fb.st_mode))
		return bbx_path_fd(fd, out, cap);
	struct bbx_dname *d = &s->dname[fb.st_ino % BBX_DNAME_SLOTS];
	size_t l = strlen(d->path);
	if (d->ino == fb.st_ino && d->dev == fb.st_dev && l && l < cap &&
	    bbx_sys_fstatat(AT_FDCWD, d->path, &pb, AT_SYMLINK_NOFOLLOW) == 0 &&
	    pb.st_ino == fb.st_ino && pb.st_dev == fb.st_dev) {
		memcpy(out, d->path, l + 1);
		bbx_stat_memo_put(out, 1, 0, 0, &pb);
		return 0;
	}
	int rc = bbx_path_fd(fd, out, cap);
	if (rc)
		return rc;
	/* The kernel's own name, with the directory's stat of this instant. */
	bbx_stat_memo_put(out, 2, 0, 0, &fb);
	l = strlen(out);
	if (l < sizeof d->path) {
		d->dev = fb.st_dev;
		d->ino = fb.st_ino;
		memcpy(d->path, out, l + 1);
	}
	return 0;
}

int bbx_path_cwd(char *out, size_t cap)
{
	uint64_t ep = bbx_stat_epoch;
	struct bbx_scratch *s = ep ? bbx_scratch() : NULL;
	if (s && s->cwd_epoch == ep) {
		size_t l = strlen(s->cwd);
		if (l >= cap)
			return -ERANGE;
		memcpy(out, s->cwd, l + 1);
		return 0;
	}
	if (!getcwd(out, cap))
		return -errno;
	if (s && strlen(out) < sizeof s->cwd) {
		strcpy(s->cwd, out);
		s->cwd_epoch = ep;
	}
	return 0;
}

__thread const char *bbx_path_parent_real __attribute__((tls_model("initial-exec")));

int bbx_path_abs(int dirfd, const char *path, char *out, size_t cap)
{
	size_t len = 0;
	int dotdot = 0;
	bbx_path_parent_real = NULL;
	if (!path)
		return -EFAULT;
	if (path[0] != '/') {
		int rc = 0;
		if (dirfd == AT_FDCWD) {
			rc = bbx_path_cwd(out, cap);
		} else {
			rc = dir_name(dirfd, out, cap);
		}
		if (rc)
			return rc;
		len = strlen(out);
	}
	/* Append path component by component, dropping "" and "." components. */
	const char *s = path;
	while (*s) {
		while (*s == '/')
			s++;
		const char *c = s;
		while (*s && *s != '/')
			s++;
		size_t cl = (size_t)(s - c);
		if (cl == 0 || (cl == 1 && c[0] == '.'))
			continue;
		dotdot |= cl == 2 && c[0] == '.' && c[1] == '.';
		if (len > 0 && out[len - 1] == '/')
			len--;
		if (len + 1 + cl + 1 > cap)
			return -ENAMETOOLONG;
		out[len++] = '/';
		memcpy(out + len, c, cl);
		len += cl;
	}
	if (len == 0)
		out[len++] = '/';
	out[len] = 0;
	/* The common case costs nothing more; the rest is resolved by the kernel. */
	if (dotdot || !strncmp(out, "/proc/", 6) || !strncmp(out, "/dev/fd/", 8))
		return canon_parent(out, cap);
	/* A single name relative to the cwd or a directory descriptor: its directory part
	 * is the kernel's own name for that directory (getcwd, /proc/self/fd). */
	if (path[0] != '/' && !strchr(path, '/'))
		bbx_path_parent_real = out;
	return 0;
}
