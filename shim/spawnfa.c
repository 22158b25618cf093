/* SPDX-License-Identifier: MIT
 *
 * spawnfa.c - posix_spawn's file actions: posix_spawn_file_actions_init, _destroy,
 * _addopen, _adddup2, _addchdir_np and _addfchdir_np.
 *
 * glibc carries out a file-action list in the child, between its clone and the exec,
 * with its own internal calls: no wrapper sees those opens.  So an open that can change
 * a file is captured when it is registered (addopen), before the child exists; the
 * pre-image is the file as it was before any of this run's changes to it.
 *
 * A chdir action (addchdir_np, addfchdir_np) moves the child before the actions
 * registered after it and before the exec.  A relative name in a later addopen, and a
 * relative program name, then land in that directory, not in the parent's: each list
 * that has such an action (or that later could) gets an entry here that follows it
 * action by action, and the names are resolved against the directory the list will be
 * in (so are posix_spawnp's relative $PATH entries: exec.c, do_spawn).  addfchdir_np takes the directory its descriptor names now, in this process -
 * unless an earlier open or dup2 of the same list puts another file at that number in
 * the child; the directory is then unknown, and a relative addopen that can change a
 * file is refused (EACCES, one line on stderr says why): the shim cannot tell which
 * file the child will change.  So is the spawn of a program found by a relative name
 * there (exec.c): the shim cannot tell which program would run.  So is a read-only one under a policy with deny_read
 * paths, which could not be checked.
 *
 * Entries are few (one per list alive with a chdir, open or dup2 action) and live in a
 * fixed table; a list that finds it full is told ENOMEM by addchdir_np and
 * addfchdir_np, both of which may return it.
 */
#include "shim.h"
#include "journal/str.h"
#include "journal/sys.h"

#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define FA_LISTS 16

enum { FA_CWD = BBX_SPAWN_CWD, FA_DIR = BBX_SPAWN_DIR, FA_UNKNOWN = BBX_SPAWN_UNKNOWN };

/* The entries' heads lie together (one page, which every lookup reads), their
 * directories apart (fa_dirs, by the same index: touched only by a chdir action). */
struct fa_list {
	const posix_spawn_file_actions_t *fa; /* NULL: a free slot */
	int where;			      /* FA_CWD: the parent's own; FA_DIR: dir */
	int fds_high;			      /* a descriptor >= 64 is replaced */
	uint64_t fds;			      /* descriptors < 64 the list replaces */
	char *dir;			      /* fa_dirs[its index] */
};

static struct fa_list fa_lists[FA_LISTS];
static char fa_dirs[FA_LISTS][PATH_MAX];
static int fa_lock;
/* Opens or dup2s that found the table full: a list without an entry may then have
 * replaced any descriptor (addfchdir_np takes that as unknown). */
static unsigned fa_lost;

static void lock(void)
{
	while (__atomic_exchange_n(&fa_lock, 1, __ATOMIC_ACQUIRE))
		__builtin_ia32_pause();
}

static void unlock(void)
{
	__atomic_store_n(&fa_lock, 0, __ATOMIC_RELEASE);
}

/* The entry of fa, made if make and there is room; NULL otherwise.  Lock held. */
static struct fa_list *find(const posix_spawn_file_actions_t *fa, int make)
{
	struct fa_list *free_slot = NULL;
	for (int i = 0; i < FA_LISTS; i++) {
		if (fa_lists[i].fa == fa)
			return &fa_lists[i];
		if (!fa_lists[i].fa && !free_slot)
			free_slot = &fa_lists[i];
	}
	if (!make || !free_slot)
		return NULL;
	free_slot->fa = fa;
	free_slot->where = FA_CWD;
	free_slot->fds = 0;
	free_slot->fds_high = 0;
	free_slot->dir = fa_dirs[free_slot - fa_lists]; /* read only when where is FA_DIR */
	return free_slot;
}

static void forget(const posix_spawn_file_actions_t *fa)
{
	lock();
	struct fa_list *l = find(fa, 0);
	if (l)
		l->fa = NULL;
	unlock();
}

/* Descriptor fd of the child is another file from now on in fa's list. */
static void replaced(const posix_spawn_file_actions_t *fa, int fd)
{
	lock();
	struct fa_list *l = find(fa, 1);
	if (!l)
		fa_lost++;
	else if (fd >= 64)
		l->fds_high = 1;
	else if (fd >= 0)
		l->fds |= 1ull << fd;
	unlock();
}

/* Where fa's list will be when its next action runs: FA_CWD, FA_DIR (the directory's
 * absolute name copied into dir) or FA_UNKNOWN.  fa NULL: FA_CWD. */
int bbx_spawn_dir(const posix_spawn_file_actions_t *fa, char *dir, size_t cap)
{
	if (!fa)
		return FA_CWD;
	lock();
	const struct fa_list *l = find(fa, 0);
	int w = l ? l->where : FA_CWD;
	if (w == FA_DIR && bbx_scopy(dir, cap, l->dir) < 0)
		w = FA_UNKNOWN;
	unlock();
	return w;
}

int bbx_spawn_abs(const posix_spawn_file_actions_t *fa, const char *name, char *out)
{
	if (name[0] == '/')
		return bbx_path_abs(AT_FDCWD, name, out, PATH_MAX);
	char dir[PATH_MAX];
	switch (bbx_spawn_dir(fa, dir, sizeof dir)) {
	case FA_DIR: {
		char joined[PATH_MAX];
		if (bbx_sjoin(joined, sizeof joined, dir, name) < 0)
			return -ENAMETOOLONG;
		return bbx_path_abs(AT_FDCWD, joined, out, PATH_MAX);
	}
	case FA_UNKNOWN:
		return -EACCES;
	default:
		return bbx_path_abs(AT_FDCWD, name, out, PATH_MAX);
	}
}

BBX_EXPORT int posix_spawn_file_actions_init(posix_spawn_file_actions_t *fa)
{
	int r = BBX_REAL(posix_spawn_file_actions_init)(fa);
	if (!r)
		forget(fa); /* an earlier list at this address, never destroyed */
	return r;
}

BBX_EXPORT int posix_spawn_file_actions_destroy(posix_spawn_file_actions_t *fa)
{
	forget(fa);
	return BBX_REAL(posix_spawn_file_actions_destroy)(fa);
}

/* deny_read of a read-only open registered for the child: by its words, then by the
 * identity the name reaches now.  Guard held.  0 or -errno. */
static int spawn_read_check(const char *abs)
{
	int rc = bbx_read_pre("posix_spawn_file_actions_addopen", abs);
	struct stat sb;
	if (!rc && bbx_sys_fstatat(AT_FDCWD, abs, &sb, 0) == 0)
		rc = bbx_read_post("posix_spawn_file_actions_addopen", abs, -1, &sb);
	return rc;
}

/* The one line that says why a relative name was refused (EACCES): the directory the
 * child will be in is unknown (the file comment).  A cold path: stdio is fine here. */
void bbx_spawn_unknown(const char *what, const char *path)
{
	char line[PATH_MAX + 200];
	int n = snprintf(line, sizeof line,
			 "bbx: refused %s of %s: the child's directory is unknown (addfchdir_np "
			 "onto a descriptor this list replaced)\n",
			 what, path);
	if (n > 0)
		(void)!write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

BBX_EXPORT int posix_spawn_file_actions_addopen(posix_spawn_file_actions_t *fa, int fd,
						const char *path, int oflag, mode_t mode)
{
	int saved;
	if (!bbx_enter(&saved))
		return BBX_REAL(posix_spawn_file_actions_addopen)(fa, fd, path, oflag, mode);
	int rc = 0, where = 0;
	int acc = oflag & O_ACCMODE;
	if (acc != O_RDONLY || (oflag & (O_TRUNC | O_CREAT))) {
		struct bbx_pending pend = {0};
		rc = bbx_usable();
		if (!rc)
			rc = where = bbx_spawn_abs(fa, path, bbx_tp.a);
		if (!rc)
			rc = bbx_cap_open(&bbx_run, "posix_spawn_file_actions_addopen", bbx_tp.a,
					  oflag, mode, bbx_tp.b, &pend);
		/* The creation happens later in the child; no RESULT can be written, so
		 * undo falls back to the birth-time check for this name. */
	} else if (bbx_reads_policed()) {
		/* deny_read: a name whose file cannot be known is not handed over either */
		rc = where = bbx_spawn_abs(fa, path, bbx_tp.a);
		if (!rc)
			rc = spawn_read_check(bbx_tp.a);
	}
	if (where == -EACCES)
		bbx_spawn_unknown("posix_spawn_file_actions_addopen", path);
	if (rc) {
		bbx_leave(saved);
		return -rc;
	}
	bbx_leave(saved);
	int r = BBX_REAL(posix_spawn_file_actions_addopen)(fa, fd, path, oflag, mode);
	if (!r)
		replaced(fa, fd);
	return r;
}

BBX_EXPORT int posix_spawn_file_actions_adddup2(posix_spawn_file_actions_t *fa, int fd,
						int newfd)
{
	int r = BBX_REAL(posix_spawn_file_actions_adddup2)(fa, fd, newfd);
	if (!r && fd != newfd) /* dup2 onto itself only clears FD_CLOEXEC */
		replaced(fa, newfd);
	return r;
}

/* The entry of fa, made (ENOMEM when the table is full).  0 or an error number. */
static int entry_for(const posix_spawn_file_actions_t *fa)
{
	lock();
	struct fa_list *l = find(fa, 1);
	unlock();
	return l ? 0 : ENOMEM;
}

/* fa's list now goes to where (FA_DIR: dir). */
static void moved(const posix_spawn_file_actions_t *fa, int where, const char *dir)
{
	lock();
	struct fa_list *l = find(fa, 0);
	if (l) {
		l->where = where;
		if (where == FA_DIR && bbx_scopy(l->dir, PATH_MAX, dir) < 0)
			l->where = FA_UNKNOWN;
	}
	unlock();
}

BBX_EXPORT int posix_spawn_file_actions_addchdir_np(posix_spawn_file_actions_t *fa,
						    const char *path)
{
	int r = entry_for(fa);
	if (!r)
		r = BBX_REAL(posix_spawn_file_actions_addchdir_np)(fa, path);
	if (r)
		return r;
	int saved;
	if (!bbx_enter(&saved)) {
		moved(fa, FA_UNKNOWN, NULL); /* inside the shim: nothing to resolve with */
		return 0;
	}
	char dir[PATH_MAX];
	int rc = bbx_spawn_abs(fa, path, dir);
	moved(fa, rc ? FA_UNKNOWN : FA_DIR, dir);
	bbx_leave(saved);
	return 0;
}

BBX_EXPORT int posix_spawn_file_actions_addfchdir_np(posix_spawn_file_actions_t *fa, int fd)
{
	/* Without an entry, the list may have replaced a descriptor while the table was
	 * full, unless it has no action yet (glibc's count, in the public struct). */
	lock();
	int untracked = !find(fa, 0) && fa_lost && fa->__used > 0;
	unlock();
	int r = entry_for(fa);
	if (!r)
		r = BBX_REAL(posix_spawn_file_actions_addfchdir_np)(fa, fd);
	if (r)
		return r;
	lock();
	const struct fa_list *l = find(fa, 0);
	int other = untracked;
	if (l && fd >= 64)
		other |= l->fds_high;
	else if (l && fd >= 0)
		other |= (int)(l->fds >> fd & 1);
	unlock();
	int saved;
	if (other || !bbx_enter(&saved)) {
		moved(fa, FA_UNKNOWN, NULL);
		return 0;
	}
	char dir[PATH_MAX];
	moved(fa, bbx_path_fd(fd, dir, sizeof dir) == 0 && dir[0] == '/' ? FA_DIR : FA_UNKNOWN,
	      dir);
	bbx_leave(saved);
	return 0;
}
