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
#include "hot.h"
#include "str.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int bbx_path_fd(int fd, char *out, size_t cap)
{
	char p[64];
	bbx_fd_path(p, sizeof p, fd);
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

/* 0 when no proof may be kept (no run, a state file without the word): then bbx_dname_put
 * stores nothing.  A valid generation is kept as gen + 1, so that 0 never matches. */
uint64_t bbx_dname_gen(void)
{
	uint64_t *g = __atomic_load_n(&bbx_nsgen, __ATOMIC_ACQUIRE);
	return g ? __atomic_load_n(g, __ATOMIC_ACQUIRE) + 1 : 0;
}

void bbx_nsgen_bump(void)
{
	uint64_t *g = __atomic_load_n(&bbx_nsgen, __ATOMIC_ACQUIRE);
	if (g)
		__atomic_add_fetch(g, 1, __ATOMIC_ACQ_REL);
}

static uint32_t dtab_hash(const char *p)
{
	uint32_t h = 2166136261u;
	for (; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	return h;
}

/* The words of entry e, or NULL when it lapsed or was never made. */
static const char *dtab_words(const struct bbx_dtab *t, const struct bbx_dtab_e *e)
{
	return e->round == t->round && e->ino ? t->arena + e->off : NULL;
}

/* Both indexes are probed BBX_DTAB_WAYS places on from the home one: direct-mapped, two
 * of a few directories worked in together met often enough (16 shard directories: ~1
 * run in 25) that one of them paid a getcwd and a directory open per call.  The home
 * place is a multiplicative hash of the inode number, not the number modulo the
 * table: ext4 spreads new directories over its block groups, whose inode numbers
 * differ by multiples of 8,192 (the inodes of a group), so directories made side by
 * side could all share one home and its four places (suspected in t-cost's dirmeta:
 * 87 stats for 100 directories in one run of a parallel make check, 0 in the others,
 * and not reproduced). */
_Static_assert(BBX_DTAB_N == 1u << (64 - 55), "dtab_at's shift gives BBX_DTAB_N homes");
static unsigned dtab_at(uint64_t ino, int j)
{
	unsigned home = (unsigned)((ino * 0x9e3779b97f4a7c15ull) >> 55); /* 0..511 */
	return (home + (unsigned)j) % BBX_DTAB_N;
}

static unsigned dtab_pidx(uint32_t h, int j)
{
	return (h + (uint32_t)j) % (2 * BBX_DTAB_N);
}

/* Keeps the proof d, which its slot is giving up, in the table (mapped here the first
 * time).  An entry goes where the same directory was, or into the first free or lapsed
 * place; with none, over the home place. */
struct bbx_dtab *bbx_dtab_map(struct bbx_scratch *s)
{
	if (!s->dtab) {
		void *m = mmap(NULL, sizeof *s->dtab, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m == MAP_FAILED)
			return NULL;
		s->dtab = m;
		s->dtab->round = 1;
	}
	return s->dtab;
}

static void dtab_keep(struct bbx_scratch *s, const struct bbx_dname *d)
{
	size_t l = strlen(d->path);
	struct bbx_dtab *t = bbx_dtab_map(s);
	if (!t)
		return;
	if (l + 1 > BBX_DTAB_ARENA - t->used) {
		t->used = 0; /* full: every entry of the last round lapses */
		t->round++;
	}
	struct bbx_dtab_e *e = NULL;
	for (int j = 0; j < BBX_DTAB_WAYS && !e; j++) {
		struct bbx_dtab_e *c = &t->e[dtab_at(d->ino, j)];
		if ((c->ino == d->ino && c->dev == d->dev) || !dtab_words(t, c) || c->gen != d->gen)
			e = c;
	}
	if (!e)
		e = &t->e[dtab_at(d->ino, 0)];
	e->dev = d->dev;
	e->ino = d->ino;
	e->gen = d->gen;
	e->off = t->used;
	e->round = t->round;
	memcpy(t->arena + t->used, d->path, l + 1);
	t->used += (uint32_t)(l + 1);
	uint16_t k = (uint16_t)(e - t->e + 1), *x = NULL;
	uint32_t h = dtab_hash(d->path);
	for (int j = 0; j < BBX_DTAB_WAYS && !x; j++) {
		uint16_t *c = &t->pidx[dtab_pidx(h, j)];
		const char *w = *c ? dtab_words(t, &t->e[*c - 1]) : NULL;
		if (*c == k || !w || !strcmp(w, d->path))
			x = c;
	}
	*(x ? x : &t->pidx[dtab_pidx(h, 0)]) = k;
}

void bbx_dtab_free(struct bbx_scratch *s)
{
	if (s->dtab)
		munmap(s->dtab, sizeof *s->dtab);
	s->dtab = NULL;
}

/* The words proved for the directory (dev, ino) in generation gen, or NULL. */
static const char *dname_by_id(const struct bbx_scratch *s, uint64_t dev, uint64_t ino,
			       uint64_t gen)
{
	const struct bbx_dname *d = &s->dname[ino % BBX_DNAME_SLOTS];
	if (d->gen == gen && d->ino == ino && d->dev == dev)
		return d->path;
	for (int j = 0; s->dtab && j < BBX_DTAB_WAYS; j++) {
		const struct bbx_dtab_e *e = &s->dtab->e[dtab_at(ino, j)];
		if (e->gen == gen && e->ino == ino && e->dev == dev)
			return dtab_words(s->dtab, e);
	}
	return NULL;
}

void bbx_dname_put(const char *p, const struct stat *sb, uint64_t gen)
{
	struct bbx_scratch *s = bbx_stat_epoch ? bbx_scratch() : NULL;
	size_t l = strlen(p);
	if (!s || !gen || !S_ISDIR(sb->st_mode) || l >= sizeof s->dname[0].path)
		return;
	struct bbx_dname *d = &s->dname[sb->st_ino % BBX_DNAME_SLOTS];
	if (d->gen == gen && (d->ino != sb->st_ino || d->dev != sb->st_dev))
		dtab_keep(s, d); /* another directory's proof, still good */
	d->dev = sb->st_dev;
	d->ino = sb->st_ino;
	d->gen = gen;
	memcpy(d->path, p, l + 1);
}

/* A proof (gen, dev, ino) of the words p still holds: the generation it was made in.
 * Within it, that p reaches that directory is trusted as dir_name trusts it (below),
 * without a stat: sb and the memo get the identity alone (bbx_stat_memo_ident), which
 * is what the capture asks of a directory the run made or kept already (capture.c,
 * cap_parent); any other question about it is a stat.  The open family opens such
 * words with openat2(RESOLVE_NO_SYMLINKS) (shim.h, BBX_POL_BYPATH): the kernel walks
 * exactly them whatever happened since. */
static int dname_holds(uint64_t dgen, uint64_t dev, uint64_t ino, const char *p,
		       struct stat *sb)
{
	uint64_t gen = bbx_dname_gen();
	if (!gen || dgen != gen)
		return 0;
	*sb = (struct stat){.st_dev = (dev_t)dev, .st_ino = (ino_t)ino, .st_mode = S_IFDIR};
	bbx_stat_memo_ident(p, dev, ino);
	return 1;
}

/* The proof kept for the words p: 1 and its (gen, dev, ino), or 0. */
static int dname_by_words(const struct bbx_scratch *s, const char *p, uint64_t *gen,
			  uint64_t *dev, uint64_t *ino)
{
	for (int i = 0; i < BBX_DNAME_SLOTS; i++) {
		const struct bbx_dname *d = &s->dname[i];
		if (d->ino && !strcmp(d->path, p)) {
			*gen = d->gen, *dev = d->dev, *ino = d->ino;
			return 1;
		}
	}
	if (!s->dtab)
		return 0;
	uint32_t h = dtab_hash(p);
	for (int j = 0; j < BBX_DTAB_WAYS; j++) {
		unsigned k = s->dtab->pidx[dtab_pidx(h, j)];
		const struct bbx_dtab_e *e = k ? &s->dtab->e[k - 1] : NULL;
		const char *w = e ? dtab_words(s->dtab, e) : NULL;
		if (w && !strcmp(w, p)) {
			*gen = e->gen, *dev = e->dev, *ino = e->ino;
			return 1;
		}
	}
	return 0;
}

int bbx_dname_known(const char *p, struct stat *sb)
{
	struct bbx_scratch *s = bbx_stat_epoch ? bbx_scratch() : NULL;
	if (!s)
		return 0;
	/* Named by the kernel, or proved, earlier in this very call (the descriptor of a
	 * chmod -R's fchmodat, dir_name): no second stat of the words. */
	if (bbx_stat_memo_kname_stat(p, sb))
		return 1;
	uint64_t gen, dev, ino;
	return dname_by_words(s, p, &gen, &dev, &ino) && dname_holds(gen, dev, ino, p, sb);
}

/* The name of the directory open as fd.  readlink of /proc/self/fd/N is the dearest
 * system call of a capture (~5 us here: a walk of procfs, then d_path), and rm -r,
 * find -delete and Python's shutil.rmtree make one call per entry through the same
 * descriptor.  So the names learnt are kept (bbx_dname), and an fstat of the
 * descriptor (~0.5 us) finds the entry by the directory's identity: what the kernel
 * will act in is checked on every call, and that stat is the one the capture needs
 * anyway (DIRMETA, the journal-directory check: it goes into the memo).  Nothing about
 * descriptor numbers is trusted (a number closed and reused behind libc's back finds
 * no entry, or another one).
 *
 * That the name still reaches that directory is trusted while the run's namespace
 * generation holds (bbx_dname_gen): every rename and rmdir of the run raises it before
 * and after the call (as does a symlink's creation), which voids every proof made
 * before the change; the name is then read again.  A directory renamed by a process
 * outside the run (or one the shim is not in) between two calls goes unseen until the
 * run's next rename: the records name it by the name it was proved under.  An lstat
 * of the name on every call would notice that, at one system call per entry of an
 * rm -r (issue 5); the kernel's action is not in question, only the words recorded
 * for it. */
static int dir_name(int fd, char *out, size_t cap)
{
	struct bbx_scratch *s = bbx_stat_epoch ? bbx_scratch() : NULL;
	/* A directory descriptor whose open took its identity (the deny_read check,
	 * capture.h BBX_FDID_READ: rm -r, find -delete, shutil.rmtree open every
	 * directory that way): that identity stands for the fstat while the mark holds,
	 * and the name kept for it is trusted as below; the capture gets the identity
	 * alone (bbx_stat_memo_ident), which is all it asks of a directory the run made. */
	uint64_t mdev, mino, mgen = s ? bbx_dname_gen() : 0;
	const char *mk = mgen && bbx_fdid_dir(fd, &mdev, &mino) ? dname_by_id(s, mdev, mino, mgen)
								: NULL;
	size_t ml = mk ? strlen(mk) : 0;
	if (ml && ml < cap) {
		memcpy(out, mk, ml + 1);
		bbx_stat_memo_ident(out, mdev, mino);
		return 0;
	}
	struct stat fb;
	if (!s || bbx_sys_fstatat(fd, "", &fb, AT_EMPTY_PATH) || !S_ISDIR(fb.st_mode))
		return bbx_path_fd(fd, out, cap);
	/* A descriptor opened by words alone (BBX_FDID_CLEAN, no identity): this fstat
	 * gives it one, so the next call through it is named as above. */
	bbx_fdid_identify(fd, fb.st_dev, fb.st_ino);
	uint64_t gen = bbx_dname_gen();
	const char *kept = gen ? dname_by_id(s, fb.st_dev, fb.st_ino, gen) : NULL;
	size_t l = kept ? strlen(kept) : 0;
	if (l && l < cap) {
		memcpy(out, kept, l + 1);
		bbx_stat_memo_put(out, 2, 0, 0, &fb); /* the name, this directory's stat */
		return 0;
	}
	int rc = bbx_path_fd(fd, out, cap);
	if (rc)
		return rc;
	/* The kernel's own name, with the directory's stat of this instant. */
	bbx_stat_memo_put(out, 2, 0, 0, &fb);
	bbx_dname_put(out, &fb, gen);
	return 0;
}

BBX_HOT unsigned bbx_cwd_gen;
BBX_HOT int bbx_cwd_untrusted;

void bbx_cwd_bump(void)
{
	__atomic_add_fetch(&bbx_cwd_gen, 1, __ATOMIC_ACQ_REL);
}

/* The words getcwd gave this thread still name the working directory: no chdir since
 * (capture.h, bbx_cwd_bump), and none behind libc's back possible. */
static int bbx_cwd_trusted(const struct bbx_scratch *s)
{
	return !__atomic_load_n(&bbx_cwd_untrusted, __ATOMIC_RELAXED) &&
	       s->cwd_cgen == __atomic_load_n(&bbx_cwd_gen, __ATOMIC_ACQUIRE);
}

/* The working directory's name kept from an earlier call (bbx_scratch: cwd_gen), for a
 * relative path whose directory part is "" or a directory proved before (bbx_dname).
 * While no chdir has moved the working directory since getcwd gave the name (the cwd
 * generation, shim/cwd.c; capture.h, bbx_cwd_bump), the name and the proof are trusted
 * as dir_name trusts a descriptor's (above), and the directory's identity comes from
 * the proof: it goes into the memo alone (bbx_stat_memo_ident), no system call at all
 * (issue 5, session 39: tar -x, git's objects, sed -i).  Otherwise one stat of the
 * directory part, relative to the real working directory, must find the identity the
 * name was proved with, in the same namespace generation; a chdir of any kind shows
 * as another identity and the name is read again, and the stat goes into the memo as
 * the kernel's name of that directory, for the capture's DIRMETA check and the
 * policy's.  Either replaces getcwd and the capture's stat of the directory.  1 when
 * out holds the cwd's name. */
/* path past its leading "./" components (and the slashes after them). */
static const char *past_dot_slash(const char *path)
{
	while (path[0] == '.' && path[1] == '/')
		for (path += 2; *path == '/'; path++)
			;
	return path;
}

/* The working directory's name kept in s, "/" and the first rl bytes of rel, into w
 * (cap bytes).  0, or -1 when it does not fit. */
static int cwd_join(const struct bbx_scratch *s, const char *rel, size_t rl, char *w,
		    size_t cap)
{
	size_t cl = strlen(s->cwd);
	int root = cl == 1;
	if (cl + 1 + rl >= cap)
		return -1;
	memcpy(w, s->cwd, cl);
	w[cl] = '/';
	memcpy(w + cl + !root, rel, rl);
	w[cl + !root + rl] = 0;
	return 0;
}

/* The working directory's identity, when known, into the memo beside its trusted name
 * (bbx_stat_memo_ident): the name is now this call's for every relative path
 * (s->cwd_epoch), and a second one without a directory part (link's new name after its
 * source "d/f") finds it there as the first would have, not by a stat. */
static void cwd_ident(struct bbx_scratch *s)
{
	if (s->cwd_ino) /* a name too long for the memo is left out by it */
		bbx_stat_memo_ident(s->cwd, s->cwd_dev, s->cwd_ino);
}

/* path: past its leading "./" components, non-empty and clean (bbx_path_clean), as
 * bbx_path_abs found it before calling. */
static int cwd_kept(struct bbx_scratch *s, const char *path, char *out, size_t cap)
{
	uint64_t gen = bbx_dname_gen();
	if (!gen || s->cwd_gen != gen)
		return 0;
	size_t cl = strlen(s->cwd);
	if (!cl || cl >= cap)
		return 0;
	const char *slash = strrchr(path, '/');
	size_t dl = slash ? (size_t)(slash - path) : 0;
	struct stat sb;
	char par[BBX_MEMO_PATH];
	if (!dl) {
		if (s->cwd_ino && cl < sizeof par && bbx_cwd_trusted(s)) {
			memcpy(out, s->cwd, cl + 1);
			s->cwd_epoch = bbx_stat_epoch;
			bbx_stat_memo_ident(s->cwd, s->cwd_dev, s->cwd_ino);
			return 1;
		}
		if (!s->cwd_ino || cl >= sizeof par ||
		    bbx_sys_fstatat(AT_FDCWD, "", &sb, AT_EMPTY_PATH) ||
		    sb.st_ino != s->cwd_ino || sb.st_dev != s->cwd_dev)
			return 0;
		memcpy(par, s->cwd, cl + 1);
	} else {
		if (cwd_join(s, path, dl, par, sizeof par))
			return 0;
		uint64_t pg, pdev, pino;
		if (bbx_cwd_trusted(s) && dname_by_words(s, par, &pg, &pdev, &pino) && pg == gen) {
			memcpy(out, s->cwd, cl + 1);
			s->cwd_epoch = bbx_stat_epoch;
			bbx_stat_memo_ident(par, pdev, pino);
			cwd_ident(s);
			return 1;
		}
		char rel[BBX_MEMO_PATH];
		memcpy(rel, path, dl);
		rel[dl] = 0;
		int e = -bbx_sys_fstatat(AT_FDCWD, rel, &sb, AT_SYMLINK_NOFOLLOW);
		if (e == ENOENT || e == ENOTDIR) {
			/* No such directory where the call will look: it fails by itself,
			 * whatever the words; the policy and the capture learn it here. */
			memcpy(out, s->cwd, cl + 1);
			s->cwd_epoch = bbx_stat_epoch;
			bbx_stat_memo_put(par, 1, -1, e, NULL);
			return 1;
		}
		if (e || !S_ISDIR(sb.st_mode))
			return 0;
		/* the proof kept for the identity found */
		const char *kept = dname_by_id(s, sb.st_dev, sb.st_ino, gen);
		if (!kept || strcmp(kept, par)) {
			/* No proof of the directory part (a directory older than the run,
			 * named through the working directory: cp -al's sources, a make in
			 * subdirectories).  While no chdir has moved the working directory,
			 * its name is trusted as above, and par names what rel names: the
			 * stat is par's lstat (not a kernel name: a component of rel may be a
			 * symlink).  Was a getcwd at every such call (cp -al: one a link). */
			if (!bbx_cwd_trusted(s))
				return 0;
			memcpy(out, s->cwd, cl + 1);
			s->cwd_epoch = bbx_stat_epoch;
			bbx_stat_memo_put(par, 0, 0, 0, &sb);
			cwd_ident(s);
			return 1;
		}
	}
	memcpy(out, s->cwd, cl + 1);
	s->cwd_epoch = bbx_stat_epoch;
	bbx_stat_memo_put(par, 2, 0, 0, &sb);
	return 1;
}

int bbx_dname_trusted_rel(const char *path, uint64_t *dev, uint64_t *ino)
{
	struct bbx_scratch *s = bbx_stat_epoch ? bbx_scratch() : NULL;
	uint64_t gen = bbx_dname_gen();
	if (!s || !gen || s->cwd_gen != gen || !bbx_cwd_trusted(s))
		return 0;
	path = past_dot_slash(path);
	size_t pl = strlen(path);
	char w[BBX_MEMO_PATH];
	if (!s->cwd[0] || !pl || path[0] == '/' || path[pl - 1] == '/' || !bbx_path_clean(path) ||
	    cwd_join(s, path, pl, w, sizeof w))
		return 0;
	uint64_t g;
	return dname_by_words(s, w, &g, dev, ino) && g == gen;
}

/* getcwd, and the name kept for later calls.  The directory's identity, which a later
 * call with a single name needs to check the name kept, comes from the capture's own
 * stat of the directory a name is created in or removed from (capture.c, cap_parent):
 * a process whose one relative call is an append or a truncation (a shell redirection)
 * pays nothing for it. */
static int cwd_read(struct bbx_scratch *s, char *out, size_t cap)
{
	uint64_t gen = s ? bbx_dname_gen() : 0;
	unsigned cg = __atomic_load_n(&bbx_cwd_gen, __ATOMIC_ACQUIRE);
	if (!getcwd(out, cap))
		return -errno;
	size_t l = strlen(out);
	if (!s || l >= sizeof s->cwd)
		return 0;
	int same = s->cwd_gen == gen && !strcmp(s->cwd, out);
	s->cwd_gen = 0; /* a signal handler's call in between finds nothing half written */
	if (!same) {
		memcpy(s->cwd, out, l + 1);
		s->cwd_ino = s->cwd_dev = 0;
	}
	s->cwd_epoch = bbx_stat_epoch;
	s->cwd_cgen = cg;
	s->cwd_gen = gen;
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
	return cwd_read(s, out, cap);
}

__thread const char *bbx_path_parent_real __attribute__((tls_model("initial-exec")));

int bbx_path_clean(const char *path)
{
	/* A relative path's first component, then what follows each '/': found by strchr,
	 * not strstr, which a fork child on its way to exec would fault in for this alone
	 * (bbx_path_abs of the program's name: issue 5, spawn); a byte loop here cost 8
	 * instructions a byte (callgrind). */
	if (path[0] == '.' &&
	    (!path[1] || path[1] == '/' || (path[1] == '.' && (!path[2] || path[2] == '/'))))
		return 0;
	for (const char *s = path; (s = strchr(s, '/')); s++)
		if (s[1] == '/' ||
		    (s[1] == '.' && (!s[2] || s[2] == '/' || (s[2] == '.' && (!s[3] || s[3] == '/')))))
			return 0;
	return 1;
}

int bbx_path_abs(int dirfd, const char *path, char *out, size_t cap)
{
	size_t len = 0;
	int dotdot = 0;
	bbx_path_parent_real = NULL;
	if (!path)
		return -EFAULT;
	/* What follows the directory part: past the root's '/', or a relative path's
	 * leading "./" components.  Clean (no "", "." or ".." component, no trailing '/'),
	 * it is appended whole, in one copy: the loop below took ~10 instructions a byte
	 * (callgrind: ~500 for each of tar -x's 13,000 names). */
	const char *rest = path[0] == '/' ? path + 1 : past_dot_slash(path);
	size_t rl = strlen(rest);
	int words = rl && rest[0] != '/' && bbx_path_clean(rest); /* cwd_kept's condition */
	int clean = words && rest[rl - 1] != '/';
	if (path[0] != '/') {
		int rc = 0;
		if (dirfd == AT_FDCWD) {
			uint64_t ep = bbx_stat_epoch;
			struct bbx_scratch *s = ep ? bbx_scratch() : NULL;
			if (!s || s->cwd_epoch == ep)
				rc = bbx_path_cwd(out, cap);
			else if (!words || !cwd_kept(s, rest, out, cap))
				rc = cwd_read(s, out, cap);
		} else {
			rc = dir_name(dirfd, out, cap);
		}
		if (rc)
			return rc;
		len = strlen(out);
	}
	if (clean) {
		if (len > 0 && out[len - 1] == '/')
			len--;
		if (len + 1 + rl + 1 > cap)
			return -ENAMETOOLONG;
		out[len++] = '/';
		memcpy(out + len, rest, rl + 1);
		len += rl;
		goto done;
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
done:
	/* The common case costs nothing more; the rest is resolved by the kernel. */
	if (dotdot || (out[1] == 'p' && !strncmp(out, "/proc/", 6)) ||
	    (out[1] == 'd' && !strncmp(out, "/dev/fd/", 8)))
		return canon_parent(out, cap);
	/* A single name relative to the cwd or a directory descriptor: its directory part
	 * is the kernel's own name for that directory (getcwd, /proc/self/fd). */
	if (path[0] != '/' && !strchr(path, '/'))
		bbx_path_parent_real = out;
	return 0;
}
