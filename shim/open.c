/* SPDX-License-Identifier: MIT
 *
 * open.c - the open family, creat, the fortified __open*_2 and the stdio openers.
 *
 * Read-only opens cost one flag test (the budget for read-only calls).  Opens that can
 * write are captured per the capture rules (journal/capture.c): O_TRUNC and in-place
 * writes preserve the content once per inode and run, O_APPEND records the length,
 * O_CREAT of a new name records a CREATE and, after the call, its RESULT.
 */
#include "shim.h"

#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* A read under a policy with deny_read paths: decided before the call on the words of
 * an absolute path, after it on the identity of what was opened (closed again if it is
 * denied).  Guard held on entry. */
#define READ_BODY(opname, path, saved, T, realcall, okcond, fdexpr, undo, failval)         \
	do {                                                                                \
		int rrc_ = bbx_read_pre(opname, path);                                      \
		if (rrc_) {                                                                 \
			bbx_leave(-rrc_);                                                   \
			return failval;                                                     \
		}                                                                           \
		unsigned rgen_ = bbx_call_begin(saved);                                     \
		T fd_ = realcall;                                                           \
		int re_ = errno;                                                            \
		(void)bbx_call_end(rgen_);                                                  \
		if (okcond) {                                                               \
			rrc_ = bbx_read_post(opname, path, fdexpr, NULL);                   \
			if (rrc_) {                                                         \
				undo;                                                       \
				bbx_leave(-rrc_);                                           \
				return failval;                                             \
			}                                                                   \
		}                                                                           \
		bbx_leave((okcond) ? saved : re_);                                          \
		return fd_;                                                                 \
	} while (0)

static inline int may_mutate(int flags)
{
	return (flags & (O_ACCMODE | O_CREAT | O_TRUNC)) != O_RDONLY;
}

/* "> /dev/null": a shell's redirection, in nearly every fork child of a configure
 * script.  Writing to the null device destroys nothing and the policy always allows it
 * (shim/policy.c, always_writable), so the capture would record nothing; but reaching
 * that answer cost a fork child its first capture (the scratch's 14 pages and the state
 * file's head page made writable, the directory's proof, an lstat and an openat2):
 * +60-70 us a "( cmd >/dev/null )" on this VM, against +2 in a process past its first
 * capture (issue 5).  Here the name is opened without O_TRUNC and O_CREAT (neither
 * changes an existing device) nor following a symlink, and kept when the kernel says it
 * is the null device (character device 1:3); anything else (a /dev/null replaced by a
 * file or a link, a run not open, O_EXCL) is closed again, unchanged, and goes the
 * ordinary way.  Returns 1 with *fd set when it answered. */
static inline __attribute__((always_inline)) int devnull_open(const char *path, int flags,
							      int *fd)
{
	if (!path || path[0] != '/' || strcmp(path, "/dev/null") ||
	    (flags & (O_EXCL | O_DIRECTORY | O_PATH)) ||
	    __atomic_load_n(&bbx_status, __ATOMIC_ACQUIRE))
		return 0;
	int saved = errno;
	int f = BBX_REAL(openat)(AT_FDCWD, path, (flags & ~(O_TRUNC | O_CREAT)) | O_NOFOLLOW, 0);
	struct stat sb;
	if (f >= 0 && fstat(f, &sb) == 0 && S_ISCHR(sb.st_mode) && major(sb.st_rdev) == 1 &&
	    minor(sb.st_rdev) == 3) {
		errno = saved;
		*fd = f;
		return 1;
	}
	if (f >= 0)
		BBX_REAL(close)(f);
	errno = saved;
	return 0;
}

/* A name ending in '/', "." or ".." names a directory, and an empty one nothing: an
 * open that writes, truncates or creates through one fails in the kernel whatever the
 * policy says, changing nothing: EISDIR (O_CREAT, or write access to a directory),
 * ENOTDIR (anything else there), ENOENT.  Such an open goes to the kernel as it is
 * (O_RDONLY|O_TRUNC with the run's mark, which bbx-run's seccomp filter asks of it, as
 * below).  The capture below resolves the name into a directory and a last component,
 * which loses the slash or the dot: open("x/", O_CREAT) made a file "x", open("f/.",
 * O_WRONLY) opened f (gnulib's configure check "whether open recognizes a trailing
 * slash" answered no, and its open replacement was built into GNU projects configured
 * under bbx).  Not O_TMPFILE, which names its directory by design, nor O_PATH, which
 * writes nothing. */
static inline __attribute__((always_inline)) int dir_name_write(const char *path, int flags)
{
	if (!path)
		return 0;
	if (!path[0])
		return 1; /* ENOENT, where the capture would open the working directory */
	if ((flags & O_PATH) || (flags & O_TMPFILE) == O_TMPFILE)
		return 0;
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	return !b[0] || (b[0] == '.' && (!b[1] || (b[1] == '.' && !b[2])));
}

/* The common body.  call() performs the real open with the original arguments. */
#define OPEN_BODY(opname, dirfd, path, flags, mode, realcall)                              \
	do {                                                                                \
		int saved_;                                                                 \
		if (!may_mutate(flags)) {                                                   \
			int xfd_;                                                           \
			if (!bbx_reads_checked())                                           \
				return realcall;                                            \
			const char *wp_ = (path);                                           \
			__asm__("" : "+r"(wp_)); /* nonnull in the prototype only */       \
			long fr_ = bbx_rf_open((dirfd), wp_, (flags));                      \
			if (fr_ > BBX_RF_GENERAL) {                                         \
				if (fr_ >= 0)                                               \
					return (int)fr_;                                    \
				errno = (int)-fr_;                                          \
				return -1;                                                  \
			}                                                                   \
			if (!bbx_enter(&saved_))                                            \
				return realcall;                                            \
			if (fr_ == BBX_RF_GENERAL)                                          \
				bbx_rf_learn();                                             \
			if (fr_ != BBX_RF_TRIED &&                                          \
			    bbx_read_open_exact((path), (flags), saved_, &xfd_))            \
				return xfd_;                                                \
			READ_BODY(opname, path, saved_, int, realcall, fd_ >= 0, fd_,       \
				  close(fd_), -1);                                \
		}                                                                           \
		int nfd_;                                                                   \
		if (devnull_open((path), (flags), &nfd_))                                   \
			return nfd_;                                                        \
		if (dir_name_write((path), (flags)))                                        \
			return bbx_rdtrunc(flags)                                           \
				       ? bbx_marked_openat((dirfd), (path), (flags), (mode)) \
				       : realcall;                                          \
		if (!bbx_enter(&saved_))                                                    \
			return realcall;                                                    \
		int again_ = 0;                                                             \
	open_again_:;                                                                       \
		struct bbx_pending pend_ = {0};                                             \
		int rc_ = bbx_usable_mut();                                                 \
		bbx_run_last_seq = 0;                                                       \
		if (!rc_)                                                                   \
			rc_ = bbx_path_abs((dirfd), (path), bbx_tp.a, PATH_MAX);            \
		bbx_pol_hold = 1 + again_;                                                  \
		if (!rc_)                                                                   \
			rc_ = bbx_cap_open(&bbx_run, opname, bbx_tp.a, (flags), (mode),     \
					   bbx_tp.b, &pend_);                               \
		char pn_[bbx_pol_take_room()];                                              \
		int pfd_ = bbx_pol_take(pn_, sizeof pn_);                                   \
		if (rc_) {                                                                  \
			if (pfd_ >= 0)                                                      \
				close(pfd_);                                                \
			return bbx_refuse(rc_);                                             \
		}                                                                           \
		/* a PRESERVE or SIZE (no creation pending): its RESULT comes from here */ \
		uint64_t seq_ = pend_.seq ? 0 : bbx_run_last_seq;                           \
		unsigned gen_ = bbx_call_begin(saved_);                                     \
		int fd_ = pfd_ != -1	    ? bbx_pol_openat(pfd_, pn_, (flags), (mode))         \
			  : bbx_rdtrunc(flags) ? bbx_marked_openat((dirfd), (path), (flags), (mode)) \
					       : realcall;                                        \
		int e_ = errno;                                                             \
		if (bbx_call_end(gen_))                                                     \
			pend_.path = NULL; /* scratch reused by a signal handler */        \
		bbx_cap_done(&bbx_run, opname, &pend_, fd_, e_, fd_);                       \
		if (seq_)                                                                   \
			bbx_cap_outcome(&bbx_run, opname, seq_, fd_, e_);                   \
		if (fd_ < 0 && e_ == ELOOP && pfd_ == BBX_POL_BYPATH && !again_++)         \
			goto open_again_; /* a symlink on the way since the proof: decide    \
					     again, on the kernel's name (shim.h) */        \
		bbx_leave(fd_ < 0 ? e_ : saved_);                                           \
		return fd_;                                                                 \
	} while (0)

static mode_t va_mode(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
}

BBX_EXPORT int open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = va_mode(flags, ap);
	va_end(ap);
	OPEN_BODY("open", AT_FDCWD, path, flags, mode, BBX_REAL(open)(path, flags, mode));
}

BBX_EXPORT int open64(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = va_mode(flags, ap);
	va_end(ap);
	OPEN_BODY("open64", AT_FDCWD, path, flags, mode, BBX_REAL(open64)(path, flags, mode));
}

BBX_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = va_mode(flags, ap);
	va_end(ap);
	OPEN_BODY("openat", dirfd, path, flags, mode, BBX_REAL(openat)(dirfd, path, flags, mode));
}

BBX_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = va_mode(flags, ap);
	va_end(ap);
	OPEN_BODY("openat64", dirfd, path, flags, mode,
		  BBX_REAL(openat64)(dirfd, path, flags, mode));
}

BBX_EXPORT int creat(const char *path, mode_t mode)
{
	OPEN_BODY("creat", AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, mode,
		  BBX_REAL(creat)(path, mode));
}

BBX_EXPORT int creat64(const char *path, mode_t mode)
{
	OPEN_BODY("creat64", AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, mode,
		  BBX_REAL(creat64)(path, mode));
}

/* _FORTIFY_SOURCE builds call these when the flags are not a compile-time constant. */
BBX_EXPORT int __open_2(const char *path, int flags)
{
	OPEN_BODY("__open_2", AT_FDCWD, path, flags, 0, BBX_REAL(__open_2)(path, flags));
}

BBX_EXPORT int __open64_2(const char *path, int flags)
{
	OPEN_BODY("__open64_2", AT_FDCWD, path, flags, 0, BBX_REAL(__open64_2)(path, flags));
}

BBX_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	OPEN_BODY("__openat_2", dirfd, path, flags, 0, BBX_REAL(__openat_2)(dirfd, path, flags));
}

BBX_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
	OPEN_BODY("__openat64_2", dirfd, path, flags, 0,
		  BBX_REAL(__openat64_2)(dirfd, path, flags));
}

/* fopen mode string -> open flags, as glibc's _IO_file_fopen reads it. */
static int fmode_flags(const char *m)
{
	int f;
	switch (m ? m[0] : 0) {
	case 'r': f = O_RDONLY; break;
	case 'w': f = O_WRONLY | O_CREAT | O_TRUNC; break;
	case 'a': f = O_WRONLY | O_CREAT | O_APPEND; break;
	default: return -1; /* EINVAL from the real call */
	}
	for (const char *p = m + 1; *p && p < m + 7; p++) {
		if (*p == '+')
			f = (f & ~O_ACCMODE) | O_RDWR;
		else if (*p == 'x')
			f |= O_EXCL;
		else if (*p == ',')
			break; /* ",ccs=" */
	}
	return f;
}

#define FOPEN_BODY(opname, path, flags, realcall, fdof)                                     \
	do {                                                                                \
		int saved_;                                                                 \
		if ((flags) >= 0 && !may_mutate(flags)) {                                   \
			if (!bbx_reads_checked() || !bbx_enter(&saved_))                    \
				return realcall;                                            \
			READ_BODY(opname, path, saved_, FILE *, realcall, fd_ != NULL,      \
				  fileno(fd_), fclose(fd_), NULL);                          \
		}                                                                           \
		if ((flags) < 0 || !may_mutate(flags) || dir_name_write((path), (flags)) || \
		    !bbx_enter(&saved_))                                                    \
			return realcall; /* a directory's name: fails, changes nothing */  \
		struct bbx_pending pend_ = {0};                                             \
		int rc_ = bbx_usable_mut();                                                 \
		bbx_run_last_seq = 0;                                                       \
		if (!rc_)                                                                   \
			rc_ = bbx_path_abs(AT_FDCWD, (path), bbx_tp.a, PATH_MAX);           \
		if (!rc_)                                                                   \
			rc_ = bbx_cap_open(&bbx_run, opname, bbx_tp.a, (flags), 0666,       \
					   bbx_tp.b, &pend_);                               \
		if (rc_) {                                                                  \
			bbx_refuse(rc_);                                                    \
			return NULL;                                                        \
		}                                                                           \
		uint64_t seq_ = pend_.seq ? 0 : bbx_run_last_seq;                           \
		unsigned gen_ = bbx_call_begin(saved_);                                     \
		FILE *f_ = realcall;                                                        \
		int e_ = errno;                                                             \
		if (bbx_call_end(gen_))                                                     \
			pend_.path = NULL; /* scratch reused by a signal handler */        \
		bbx_cap_done(&bbx_run, opname, &pend_, f_ ? (long)fdof : -1, e_,            \
			     f_ ? fdof : -1);                                               \
		if (seq_)                                                                   \
			bbx_cap_outcome(&bbx_run, opname, seq_, f_ ? (long)fdof : -1, e_);  \
		bbx_leave(f_ ? saved_ : e_);                                                \
		return f_;                                                                  \
	} while (0)

BBX_EXPORT FILE *fopen(const char *path, const char *mode)
{
	int fl = fmode_flags(mode);
	FOPEN_BODY("fopen", path, fl, BBX_REAL(fopen)(path, mode), fileno(f_));
}

BBX_EXPORT FILE *fopen64(const char *path, const char *mode)
{
	int fl = fmode_flags(mode);
	FOPEN_BODY("fopen64", path, fl, BBX_REAL(fopen64)(path, mode), fileno(f_));
}

/* freopen(NULL, mode, f) reopens f's own file with a new mode: 'w' truncates it. */
static FILE *do_freopen(const char *op, FILE *(*real)(const char *, const char *, FILE *),
			const char *path, const char *mode, FILE *stream)
{
	int fl = fmode_flags(mode);
	int saved;
	int sfd = stream ? fileno_unlocked(stream) : -1;
	bbx_fdid_forget(sfd, sfd); /* its descriptor is closed inside libc (fd.c) */
	if (fl < 0 || !may_mutate(fl) || dir_name_write(path, fl) || !bbx_enter(&saved))
		return real(path, mode, stream);
	struct bbx_pending pend = {0};
	int rc = bbx_usable_mut();
	bbx_run_last_seq = 0;
	if (!rc)
		rc = path ? bbx_path_abs(AT_FDCWD, path, bbx_tp.a, PATH_MAX)
			  : bbx_path_fd(fileno(stream), bbx_tp.a, PATH_MAX);
	if (rc == -EBADF && !path)
		rc = 0, bbx_tp.a[0] = 0; /* a pipe or socket: nothing on disk to capture */
	if (!rc && bbx_tp.a[0])
		rc = bbx_cap_open(&bbx_run, op, bbx_tp.a, fl, 0666, bbx_tp.b, &pend);
	if (rc) {
		bbx_refuse(rc);
		return NULL;
	}
	uint64_t seq = pend.seq ? 0 : bbx_run_last_seq; /* PRESERVE/SIZE: RESULT below */
	unsigned gen = bbx_call_begin(saved);
	FILE *f = real(path, mode, stream);
	int e = errno;
	if (bbx_call_end(gen))
		pend.path = NULL; /* scratch reused by a signal handler */
	bbx_cap_done(&bbx_run, op, &pend, f ? fileno(f) : -1, e, f ? fileno(f) : -1);
	if (seq)
		bbx_cap_outcome(&bbx_run, op, seq, f ? fileno(f) : -1, e);
	bbx_leave(f ? saved : e);
	return f;
}

BBX_EXPORT FILE *freopen(const char *path, const char *mode, FILE *stream)
{
	return do_freopen("freopen", BBX_REAL(freopen), path, mode, stream);
}

BBX_EXPORT FILE *freopen64(const char *path, const char *mode, FILE *stream)
{
	return do_freopen("freopen64", BBX_REAL(freopen64), path, mode, stream);
}
