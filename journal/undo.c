/* SPDX-License-Identifier: MIT
 *
 * undo.c - backward replay (invariant 4), see undo.h.
 *
 * Phases, each resumable:
 *   1. conflicts: for a sealed run, every path whose inode or ctime differs from its
 *      FINAL record was changed after the run by someone else; its current version is
 *      copied beside it (PATH.bbx-conflict) before replay overwrites it.
 *   2. replay: the plan (bbx_undo_plan) in reverse file order.  Every step first looks
 *      at what is there now, so repeating a step after a crash is harmless.
 *   3. directories: mode, owner and times of every directory whose entries changed,
 *      from its earliest record, once all entries are back.
 * Progress goes to DIR/undo/progress after each step; DIR/undone marks the end.
 */
#include "undo.h"
#include "pathmap.h"
#include "undo_ops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

const char *bbx_undo_action_name(int a)
{
	static const char *const n[] = {"skip", "remove", "restore-link", "restore-copy",
					"restore-inline", "truncate", "mkdir", "rename-back",
					"meta", "dirmeta", "lost", "restore-alias"};
	return a >= 0 && a <= BBX_UNDO_RESTORE_ALIAS ? n[a] : "?";
}

static int action_of(const struct bbx_rec *r)
{
	switch (r->type) {
	case BBX_REC_CREATE: return r->kind == BBX_KIND_ANON ? BBX_UNDO_SKIP : BBX_UNDO_REMOVE;
	case BBX_REC_PRESERVE:
		switch (r->how) {
		case BBX_HOW_LINK: return BBX_UNDO_RESTORE_LINK;
		case BBX_HOW_COPY: case BBX_HOW_REFLINK: case BBX_HOW_PACKED:
			return BBX_UNDO_RESTORE_COPY;
		case BBX_HOW_INLINE: return BBX_UNDO_RESTORE_INLINE;
		case BBX_HOW_LOST: return BBX_UNDO_LOST;
		case BBX_HOW_ALIAS: return BBX_UNDO_RESTORE_ALIAS;
		}
		return BBX_UNDO_SKIP; /* how=none: covered by an earlier capture */
	case BBX_REC_SIZE: return BBX_UNDO_TRUNCATE;
	case BBX_REC_RMDIR: return BBX_UNDO_MKDIR;
	case BBX_REC_RENAME: return BBX_UNDO_RENAME_BACK;
	case BBX_REC_META: return BBX_UNDO_META;
	case BBX_REC_DIRMETA: return BBX_UNDO_DIRMETA;
	}
	return BBX_UNDO_SKIP;
}

struct result_ref {
	uint64_t ref;
	int64_t ret;
	uint64_t ino;
	int has_ino;
};

static int cmp_ref(const void *a, const void *b)
{
	const struct result_ref *x = a, *y = b;
	return x->ref < y->ref ? -1 : x->ref > y->ref;
}

int bbx_undo_plan(struct bbx_reader *r, struct bbx_undo_step **steps, size_t *n)
{
	size_t *offs = NULL, count = 0, nres = 0;
	int rc = bbx_reader_index(r, &offs, &count);
	if (rc)
		return rc;
	struct bbx_undo_step *v = calloc(count ? count : 1, sizeof *v);
	struct result_ref *res = calloc(count ? count : 1, sizeof *res);
	if (!v || !res) {
		rc = -ENOMEM;
		goto out;
	}
	struct bbx_rec rec;
	for (size_t i = 0; i < count; i++) {
		bbx_rec_decode(r->map + offs[i], r->size - offs[i], &rec);
		if (rec.type == BBX_REC_RESULT && rec.has_ref)
			res[nres++] = (struct result_ref){rec.ref, rec.ret, rec.ino, rec.has_ino};
	}
	if (nres)
		qsort(res, nres, sizeof *res, cmp_ref);
	size_t k = 0;
	for (size_t i = count; i-- > 0;) {
		bbx_rec_decode(r->map + offs[i], r->size - offs[i], &rec);
		struct bbx_undo_step s = {.off = offs[i], .action = action_of(&rec)};
		if (s.action != BBX_UNDO_SKIP) {
			struct result_ref key = {.ref = rec.h.seq};
			struct result_ref *f = nres ? bsearch(&key, res, nres, sizeof *res, cmp_ref) : NULL;
			if (f) {
				s.has_result = 1;
				s.ret = f->ret;
				s.has_ino = f->has_ino;
				s.ino = f->ino;
				if (f->ret < 0)
					s.action = BBX_UNDO_SKIP; /* the call failed: nothing to undo */
			}
		}
		v[k++] = s;
	}
	*steps = v;
	*n = k;
	v = NULL;
out:
	free(v);
	free(res);
	free(offs);
	return rc;
}

/* ---- execution ---------------------------------------------------------------- */

/* Inode aliases: directories cannot be hard-linked, so a directory the undo recreates
 * (and any object it restores by copy) has a new inode number.  Later steps that
 * recognise objects by inode (rename-back, creation removal) accept the alias. */
struct inomap {
	uint64_t *k, *v;
	size_t cap, len;
};

static void ino_alias(struct inomap *m, uint64_t old, uint64_t now)
{
	if ((m->len + 1) * 2 > m->cap) {
		size_t ncap = m->cap ? m->cap * 2 : 256;
		uint64_t *nk = calloc(ncap, sizeof *nk), *nv = calloc(ncap, sizeof *nv);
		if (!nk || !nv) {
			free(nk);
			free(nv);
			return; /* only costs a spurious conflict later */
		}
		for (size_t i = 0; i < m->cap; i++) {
			if (!m->k[i])
				continue;
			size_t j = (m->k[i] * 0x9E3779B97F4A7C15ull) & (ncap - 1);
			while (nk[j])
				j = (j + 1) & (ncap - 1);
			nk[j] = m->k[i];
			nv[j] = m->v[i];
		}
		free(m->k);
		free(m->v);
		m->k = nk, m->v = nv, m->cap = ncap;
	}
	size_t i = ((old + 1) * 0x9E3779B97F4A7C15ull) & (m->cap - 1);
	while (m->k[i] && m->k[i] != old + 1)
		i = (i + 1) & (m->cap - 1);
	if (!m->k[i])
		m->len++;
	m->k[i] = old + 1;
	m->v[i] = now;
}

static int ino_same(const struct inomap *m, uint64_t cur, uint64_t recorded)
{
	if (cur == recorded)
		return 1;
	if (!m->cap)
		return 0;
	size_t i = ((recorded + 1) * 0x9E3779B97F4A7C15ull) & (m->cap - 1);
	while (m->k[i]) {
		if (m->k[i] == recorded + 1)
			return m->v[i] == cur;
		i = (i + 1) & (m->cap - 1);
	}
	return 0;
}

/* A directory whose metadata the final phase puts back.  Its path is the one the
 * record names, carried back through every rename the replay undoes, so it names the
 * directory where the replay leaves it. */
struct dirfix {
	char *path;
	size_t off;
};

struct ctx {
	const char *dir;
	struct dirfix *fix;
	size_t nfix, capfix;
	struct bbx_pathmap conflicted; /* paths whose later version was kept aside */
	int conflicts_fd;              /* undo/conflicts: that list, NUL-separated, for resume */
	char *conflicts_text;          /* its loaded content (keys of conflicted point here) */
	struct inomap alias;
	int alias_fd; /* undo/aliases: the map survives an interrupted undo */
	struct bbx_reader r;
	struct bbx_uops u;
	struct bbx_run run;
	const struct bbx_undo_opts *o;
	struct bbx_undo_stats *s;
	int progress_fd;
	/* The steps (for sibling_link), and the index it builds of them on first need:
	 * the regular files the journal names, by recorded inode number. */
	const struct bbx_undo_step *steps;
	size_t nsteps;
	struct sib { uint64_t ino; size_t off; } *sib;
	size_t nsib;
	int sib_built;
};

static void alias_add(struct ctx *c, uint64_t old, uint64_t now)
{
	ino_alias(&c->alias, old, now);
	if (c->alias_fd >= 0) {
		char b[64];
		int n = snprintf(b, sizeof b, "%llu %llu\n", (unsigned long long)old,
				 (unsigned long long)now);
		(void)!write(c->alias_fd, b, (size_t)n);
	}
}

static void alias_load(struct ctx *c)
{
	FILE *f = fdopen(dup(c->alias_fd), "r");
	if (!f)
		return;
	unsigned long long a, b;
	while (fscanf(f, "%llu %llu", &a, &b) == 2)
		ino_alias(&c->alias, a, b);
	fclose(f);
}

static int is_dir_record(const struct bbx_rec *r)
{
	return r->type == BBX_REC_DIRMETA || r->type == BBX_REC_RMDIR ||
	       (r->type == BBX_REC_META && S_ISDIR(r->st.mode));
}

static void fix_push(struct ctx *c, const struct bbx_rec *r, size_t off)
{
	if (c->nfix == c->capfix) {
		size_t ncap = c->capfix ? 2 * c->capfix : 64;
		struct dirfix *n = realloc(c->fix, ncap * sizeof *n);
		if (!n)
			return; /* only that directory's times are then not put back */
		c->fix = n;
		c->capfix = ncap;
	}
	char *p = strdup(r->path);
	if (p)
		c->fix[c->nfix++] = (struct dirfix){p, off};
}

/* The replay moved `to` back to `from`: directories at or under `to` are now under
 * `from`. */
static void fix_rename(struct ctx *c, const char *from, const char *to)
{
	size_t tl = strlen(to);
	for (size_t i = 0; i < c->nfix; i++) {
		char *p = c->fix[i].path;
		if (strncmp(p, to, tl) != 0 || (p[tl] != 0 && p[tl] != '/'))
			continue;
		size_t need = strlen(from) + strlen(p + tl) + 1;
		char *n = malloc(need);
		if (!n)
			continue;
		snprintf(n, need, "%s%s", from, p + tl);
		free(p);
		c->fix[i].path = n;
	}
}

static void say(struct ctx *c, const char *verb, const char *path)
{
	if (c->o->out && c->o->verbose)
		fprintf(c->o->out, "%s %s\n", verb, path);
}

static void fail(struct ctx *c, const char *what, const char *path, int rc)
{
	c->s->errors++;
	if (c->o->out)
		fprintf(c->o->out, "error: %s %s: %s\n", what, path, strerror(-rc));
}

/* Moves whatever is at path aside as a conflict (kept, never deleted). */
static int move_aside(struct ctx *c, const char *path, const char *why)
{
	char kept[PATH_MAX + 32];
	int rc = bbx_uop_conflict_name(path, kept, sizeof kept);
	if (!rc)
		rc = bbx_uop_rename(&c->u, path, kept, RENAME_NOREPLACE);
	if (rc) {
		fail(c, "moving aside", path, rc);
		return rc;
	}
	c->s->conflicts++;
	if (c->o->out)
		fprintf(c->o->out, "conflict: %s %s; kept as %s\n", path, why, kept);
	return 0;
}

static void tmp_beside(const char *path, char *out, size_t cap)
{
	snprintf(out, cap, "%s.bbx-undo.%d", path, (int)getpid());
}

static int objpath(struct ctx *c, const struct bbx_rec *r, char *out, size_t cap)
{
	int n = snprintf(out, cap, "%s/objects/%s", c->dir, r->object ? r->object : "");
	return !r->object || n < 0 || (size_t)n >= cap ? -ENOENT : 0;
}

/* The inode a PRESERVE kept by a hard link (how=link) is at its path already: the run
 * was killed after the record and before the call it preceded (invariant 7), or an
 * earlier attempt of this undo linked it back.  The link in objects/ is then one link
 * too many on the user's file; removed only when it is that very inode (same device and
 * number: a journal copied elsewhere holds copies, which are pre-images), journaled as
 * the removal of an alias (undoing the undo links it again). */
static void drop_kept_link(struct ctx *c, const struct bbx_rec *r, const struct stat *at)
{
	char obj[PATH_MAX + 64];
	struct stat so;
	if (objpath(c, r, obj, sizeof obj) || lstat(obj, &so) < 0 || so.st_dev != at->st_dev ||
	    so.st_ino != at->st_ino)
		return;
	int rc = bbx_uop_unlink_alias(&c->u, obj, r->path);
	if (rc && c->o->out)
		fprintf(c->o->out, "warning: %s: the kept link %s not removed: %s\n", r->path, obj,
			strerror(-rc));
}

/* Objects no record names: a process killed after keeping a pre-image and before
 * appending the PRESERVE that names it (the object is named by the record's reserved
 * seq, journal-format.md 6).  A hard link among them keeps an inode that is still in the
 * tree (the removal its record would have preceded was never made; with a record, the
 * removal comes after it), one link too many: removed, as undo leaves link counts as
 * they were.  Only a link (st_nlink > 1): removing it loses no data.  A copy (one link)
 * is only space, and stays.  Not journaled: it is no part of the tree.  Returns how many
 * were removed (or, in a dry run, would be). */
static size_t drop_orphans(struct ctx *c, const size_t *offs, size_t count)
{
	struct bbx_pathmap named = {0};
	int have_named = 0;
	struct bbx_rec rec;
	size_t *slot, n = 0;
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s/objects", c->dir);
	int ofd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *od = ofd >= 0 ? fdopendir(ofd) : NULL;
	if (!od) {
		if (ofd >= 0)
			close(ofd);
		goto out;
	}
	struct dirent *e;
	while ((e = readdir(od))) {
		if (e->d_name[0] == '.' || strlen(e->d_name) != 2)
			continue; /* a shard is two hex digits; objects/pack is no shard */
		int sfd = openat(ofd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		DIR *sd = sfd >= 0 ? fdopendir(sfd) : NULL;
		if (!sd) {
			if (sfd >= 0)
				close(sfd);
			continue;
		}
		struct dirent *f;
		while ((f = readdir(sd))) {
			char key[300];
			struct stat sb;
			if (f->d_name[0] == '.' ||
			    snprintf(key, sizeof key, "%s/%s", e->d_name, f->d_name) >= (int)sizeof key ||
			    fstatat(sfd, f->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
			    S_ISDIR(sb.st_mode) || sb.st_nlink < 2)
				continue;
			/* The names the records give, once a link is met: the replay moved the
			 * links it restored out of objects/, so an undo usually meets none. */
			for (size_t i = 0; !have_named && i < count; i++) {
				bbx_rec_decode(c->r.map + offs[i], c->r.size - offs[i], &rec);
				if (rec.object && bbx_pathmap_put(&named, rec.object, &slot) < 0) {
					closedir(sd);
					closedir(od);
					goto out; /* no memory: keep everything */
				}
			}
			have_named = 1;
			if (bbx_pathmap_get(&named, key))
				continue;
			if (c->o->dry_run || unlinkat(sfd, f->d_name, 0) == 0) {
				n++;
				if (c->o->out)
					fprintf(c->o->out, "%s: objects/%s, a link no record names\n",
						c->o->dry_run ? "would remove" : "removed", key);
			}
		}
		closedir(sd);
	}
	closedir(od);
out:
	bbx_pathmap_free(&named);
	return n;
}

/* Puts a freshly made tmp in place of path (rename-over journals what it replaces). */
static int install(struct ctx *c, const char *tmp, const char *path)
{
	int rc = bbx_uop_rename(&c->u, tmp, path, 0);
	if (rc)
		bbx_uop_unlink(&c->u, tmp);
	return rc;
}

static void meta_from(struct ctx *c, const char *path, const struct bbx_rec *r, int nofollow)
{
	int rc = bbx_uop_setmeta(&c->u, path, &r->st, nofollow, 1, 1);
	if (rc == -EPERM)
		c->s->owner_skipped++;
	else if (rc && rc != -ENOENT)
		fail(c, "restoring metadata of", path, rc);
}

/* How far a birth time may lie before the record of the call that made the file: file
 * systems stamp it from the coarse clock, measured lagging the record's clock by up to
 * 8 ms here (two ticks at HZ=250). */
#define BIRTH_SLACK_NS 20000000ull

/* Did this run's last successful creation of path before offset off make inode ino?
 * (The steps hold each CREATE's outcome from its RESULT; they are few to scan, and this
 * is asked only for a link whose process died before its own outcome was written.) */
static int made_before(struct ctx *c, const char *path, size_t off, uint64_t ino)
{
	struct bbx_rec rec;
	size_t best = SIZE_MAX;
	uint64_t made = 0;
	for (size_t i = 0; i < c->nsteps; i++) {
		const struct bbx_undo_step *s = &c->steps[i];
		if (s->off >= off || !s->has_ino || (best != SIZE_MAX && s->off < best))
			continue;
		bbx_rec_decode(c->r.map + s->off, c->r.size - s->off, &rec);
		if (rec.type == BBX_REC_CREATE && rec.path && !strcmp(rec.path, path)) {
			best = s->off;
			made = s->ino;
		}
	}
	return best != SIZE_MAX && ino_same(&c->alias, ino, made);
}

static void do_remove(struct ctx *c, const struct bbx_rec *r, const struct bbx_undo_step *st)
{
	struct stat sb;
	if (lstat(r->path, &sb) < 0)
		return; /* already gone */
	if (st->has_ino && !ino_same(&c->alias, sb.st_ino, st->ino)) {
		move_aside(c, r->path, "is not what this run created");
		return;
	}
	if (!st->has_result && r->kind == BBX_KIND_HARDLINK) {
		/* A new name for an old inode: its birth time says nothing.  It is ours if it
		 * is still the inode of the name it was linked from (back in place by now), or
		 * the inode this run's last creation of that name made, before the link (git
		 * links its temporary object to the object's name and removes the temporary:
		 * killed before the link's held-back RESULT, nothing else says so). */
		struct stat src;
		if (!r->path2 || r->path2[0] != '/' || /* relative: to a directory undo cannot know */
		    ((lstat(r->path2, &src) < 0 || src.st_ino != sb.st_ino ||
		      src.st_dev != sb.st_dev) &&
		     !made_before(c, r->path2, st->off, sb.st_ino))) {
			move_aside(c, r->path, "is not the link this run made");
			return;
		}
	} else if (!st->has_result) {
		/* No RESULT (killed mid-call, or created by a spawned child): only remove what
		 * was born after the record; anything older is someone else's. */
		struct statx sx;
		int known = statx(AT_FDCWD, r->path, AT_SYMLINK_NOFOLLOW, STATX_BTIME, &sx) == 0 &&
			    (sx.stx_mask & STATX_BTIME);
		uint64_t born = known ? (uint64_t)sx.stx_btime.tv_sec * 1000000000ull +
						sx.stx_btime.tv_nsec
				      : 0;
		if (r->how == BBX_HOW_EXCL) {
			/* The name was not looked up before the call, which fails on any existing
			 * name (O_CREAT|O_EXCL, mkstemp): a file born before the record was there
			 * already, the call failed, and it is left alone.  One born within the
			 * slack is taken for the call's own (a failure's RESULT is written at
			 * once, so only a kill within microseconds of it leaves this to guess).
			 * Without a birth time nothing tells them apart: left, and reported. */
			if (!known) {
				c->s->errors++;
				if (c->o->out)
					fprintf(c->o->out,
						"uncertain: %s: no birth time to tell whether this run "
						"created it (its process died before the result); left "
						"as it is\n",
						r->path);
				return;
			}
			if (born + BIRTH_SLACK_NS < r->h.realtime_ns) {
				say(c, "kept (there before the run's O_EXCL create failed)", r->path);
				return;
			}
		} else if (known && born + BIRTH_SLACK_NS < r->h.realtime_ns) {
			move_aside(c, r->path, "predates this run's creation record");
			return;
		}
	}
	/* A hard link the run made: its inode lives on under the name it was linked from,
	 * so the undo keeps no object for it (an object would be one link too many on an
	 * inode still in the tree). */
	int rc = S_ISDIR(sb.st_mode) ? bbx_uop_rmdir(&c->u, r->path)
		 : r->kind == BBX_KIND_HARDLINK && r->path2
			 ? bbx_uop_unlink_alias(&c->u, r->path, r->path2)
			 : bbx_uop_unlink(&c->u, r->path);
	if (rc == -ENOTEMPTY || rc == -EEXIST) {
		move_aside(c, r->path, "holds entries this run did not create");
		return;
	}
	if (rc)
		fail(c, "removing", r->path, rc);
	else {
		c->s->removed++;
		say(c, "removed", r->path);
	}
}

static int cmp_sib(const void *a, const void *b)
{
	const struct sib *x = a, *y = b;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static void sib_build(struct ctx *c)
{
	c->sib_built = 1;
	struct bbx_rec rec;
	for (size_t i = 0; i < c->nsteps; i++) {
		int a = c->steps[i].action;
		if (a != BBX_UNDO_RESTORE_COPY && a != BBX_UNDO_RESTORE_LINK &&
		    a != BBX_UNDO_TRUNCATE && a != BBX_UNDO_META)
			continue;
		bbx_rec_decode(c->r.map + c->steps[i].off, c->r.size - c->steps[i].off, &rec);
		if (!rec.path || !S_ISREG(rec.st.mode))
			continue;
		if (!(c->nsib & (c->nsib + 1))) { /* 0, 1, 3, 7...: double */
			struct sib *n = realloc(c->sib, (2 * c->nsib + 2) * sizeof *n);
			if (!n) {
				c->nsib = 0; /* no links then: each name its own copy, as before */
				return;
			}
			c->sib = n;
		}
		c->sib[c->nsib++] = (struct sib){rec.st.ino, c->steps[i].off};
	}
	qsort(c->sib, c->nsib, sizeof *c->sib, cmp_sib);
}

/* A removed name of a file that had other names (recorded nlink > 1) and whose
 * pre-image is a copy - the objects directory was on another filesystem, so no hard
 * link could keep the inode itself: the name comes back as a new link to another name
 * the journal gives that inode, when that name now holds the inode or the copy it was
 * restored as (the alias map).  The steps run newest first, so that inode's content is
 * then what this name had when it was removed; older steps go on acting on both
 * names.  Without it each name came back as a separate inode (t-rt-adversarial).
 * dst: r's path, or a name beside it that is then renamed over it.  0 when linked,
 * else nonzero (the caller copies). */
static int sibling_in_dir(struct ctx *c, const struct bbx_rec *r, const char *dst,
			  const char *obj, uint64_t off, uint64_t len);

static int sibling_link(struct ctx *c, const struct bbx_rec *r, const char *dst,
			const char *obj, uint64_t off, uint64_t len)
{
	if (r->st.nlink < 2 || !S_ISREG(r->st.mode))
		return -1;
	if (!c->sib_built)
		sib_build(c);
	struct sib key = {r->st.ino, 0};
	struct sib *hit = c->sib ? bsearch(&key, c->sib, c->nsib, sizeof key, cmp_sib) : NULL;
	while (hit && hit > c->sib && hit[-1].ino == key.ino)
		hit--;
	struct bbx_rec o;
	for (; hit && hit < c->sib + c->nsib && hit->ino == key.ino; hit++) {
		bbx_rec_decode(c->r.map + hit->off, c->r.size - hit->off, &o);
		struct stat sb;
		if (o.st.dev != r->st.dev || !strcmp(o.path, r->path) || lstat(o.path, &sb) < 0 ||
		    !S_ISREG(sb.st_mode) || !ino_same(&c->alias, sb.st_ino, r->st.ino))
			continue;
		if (bbx_uop_link(&c->u, o.path, dst) == 0)
			return 0;
	}
	return sibling_in_dir(c, r, dst, obj, off, len);
}

/* 1 when the regular file p holds exactly the pre-image's bytes: len bytes at off of
 * obj (len BBX_UOP_WHOLE: all of obj). */
static int same_bytes(const char *p, const char *obj, uint64_t off, uint64_t len)
{
	int a = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), b = open(obj, O_RDONLY | O_CLOEXEC);
	struct stat sa, sb;
	int same = a >= 0 && b >= 0 && fstat(a, &sa) == 0 && fstat(b, &sb) == 0;
	if (same && len == BBX_UOP_WHOLE)
		len = (uint64_t)sb.st_size, off = 0;
	same = same && (uint64_t)sa.st_size == len && off + len <= (uint64_t)sb.st_size;
	char x[16384], y[16384];
	for (uint64_t at = 0; same && at < len;) {
		size_t want = len - at < sizeof x ? (size_t)(len - at) : sizeof x;
		ssize_t m = pread(a, x, want, (off_t)at), n = pread(b, y, want, (off_t)(off + at));
		same = m == (ssize_t)want && n == (ssize_t)want && !memcmp(x, y, want);
		at += want;
	}
	if (a >= 0)
		close(a);
	if (b >= 0)
		close(b);
	return same;
}

/* No other name in the journal: one in r's own directory (the pair hl/a, hl/b, and
 * sed -i of one of them, which the journal then never names), found by the recorded
 * inode number (or the copy it was restored as) and taken only when it holds exactly
 * the pre-image: its number could have been freed and given to another file since, if
 * someone outside the run removed that name.  Names elsewhere are not searched for. */
static int sibling_in_dir(struct ctx *c, const struct bbx_rec *r, const char *dst,
			  const char *obj, uint64_t off, uint64_t len)
{
	const char *sl = strrchr(r->path, '/');
	char dir[PATH_MAX];
	size_t dl = !sl ? 0 : sl == r->path ? 1 : (size_t)(sl - r->path);
	if (!dl || dl >= sizeof dir)
		return -1;
	memcpy(dir, r->path, dl);
	dir[dl] = 0;
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int rc = -1;
	const struct dirent *e;
	while (rc && (e = readdir(d))) {
		char p[PATH_MAX];
		struct stat sb;
		if (!ino_same(&c->alias, e->d_ino, r->st.ino) ||
		    snprintf(p, sizeof p, "%s/%s", dl == 1 ? "" : dir, e->d_name) >= (int)sizeof p ||
		    !strcmp(p, r->path) || !strcmp(p, dst) || lstat(p, &sb) < 0 ||
		    !S_ISREG(sb.st_mode) || sb.st_dev != r->st.dev ||
		    !ino_same(&c->alias, sb.st_ino, r->st.ino) || !same_bytes(p, obj, off, len))
			continue;
		rc = bbx_uop_link(&c->u, p, dst);
	}
	closedir(d);
	return rc;
}

static void do_restore(struct ctx *c, const struct bbx_rec *r, int action)
{
	struct stat sb;
	int exists = lstat(r->path, &sb) == 0;
	char obj[PATH_MAX + 64], tmp[PATH_MAX + 32];
	int rc = 0;
	if (action == BBX_UNDO_RESTORE_ALIAS) {
		if (exists && ino_same(&c->alias, sb.st_ino, r->st.ino))
			return;
		struct stat so;
		if (!r->path2 || lstat(r->path2, &so) < 0 || !ino_same(&c->alias, so.st_ino, r->st.ino)) {
			rc = -ENOENT; /* the surviving name is gone: nothing to link from */
			goto out;
		}
		if (!exists) {
			rc = bbx_uop_link(&c->u, r->path2, r->path);
		} else {
			tmp_beside(r->path, tmp, sizeof tmp);
			rc = bbx_uop_link(&c->u, r->path2, tmp);
			if (!rc)
				rc = install(c, tmp, r->path);
		}
		goto out;
	}
	if (action == BBX_UNDO_RESTORE_LINK) {
		if (exists && ino_same(&c->alias, sb.st_ino, r->st.ino)) {
			drop_kept_link(c, r, &sb); /* the kept inode is already there */
			return;
		}
		if ((rc = objpath(c, r, obj, sizeof obj)))
			goto out;
		struct stat so;
		if (exists && stat(obj, &so) == 0 && so.st_ino == sb.st_ino && so.st_dev == sb.st_dev) {
			/* linked by an interrupted earlier attempt (a journal copied elsewhere
			 * keeps the objects, not their inode numbers) */
			drop_kept_link(c, r, &sb);
			return;
		}
		/* The object IS the inode: move it back into place (rename over whatever is
		 * there, which the undo's own journal keeps).  A link would leave the inode
		 * one link too many for as long as the journal exists; the move leaves link
		 * counts exactly as they were, and the undo's RENAME record moves the object
		 * back into objects/ should the undo itself be undone. */
		rc = bbx_uop_rename(&c->u, obj, r->path, 0);
		if (rc == -EXDEV || rc == -EPERM || rc == -EMLINK)
			action = BBX_UNDO_RESTORE_COPY; /* objects on another fs now: copy */
		else
			goto out;
	}
	if (action == BBX_UNDO_RESTORE_COPY) {
		if ((rc = objpath(c, r, obj, sizeof obj)))
			goto out;
		/* A packed pre-image is SIZE bytes at OFFSET of the shared object. */
		uint64_t off = 0, len = BBX_UOP_WHOLE;
		if (r->how == BBX_HOW_PACKED) {
			if (!r->has_offset || !r->has_size) {
				rc = -EBADMSG;
				goto out;
			}
			off = r->offset;
			len = r->size;
			/* The whole range there before anything is truncated: a shared object
			 * cut short (copied without its end, damaged) fails the step cleanly. */
			struct stat so;
			if (stat(obj, &so) < 0) {
				rc = -errno;
				goto out;
			}
			if (!bbx_rec_packed_fits(r, (uint64_t)so.st_size)) {
				rc = -EIO;
				goto out;
			}
		}
		if (exists && S_ISREG(sb.st_mode) && ino_same(&c->alias, sb.st_ino, r->st.ino)) {
			/* Same inode: write in place, so its other hard links see it too. */
			rc = bbx_uop_copy_into(&c->u, obj, off, len, r->path);
		} else if (!exists) {
			if (sibling_link(c, r, r->path, obj, off, len) != 0)
				rc = bbx_uop_copy_new(&c->u, obj, off, len, r->path);
		} else {
			tmp_beside(r->path, tmp, sizeof tmp);
			if (sibling_link(c, r, tmp, obj, off, len) != 0)
				rc = bbx_uop_copy_new(&c->u, obj, off, len, tmp);
			if (!rc)
				rc = install(c, tmp, r->path);
		}
		if (!rc)
			meta_from(c, r->path, r, 1);
		goto out;
	}
	/* Inline: symlink or special file. */
	if (r->kind == BBX_KIND_SYMLINK) {
		if (exists && S_ISLNK(sb.st_mode)) {
			char t[PATH_MAX];
			ssize_t n = readlink(r->path, t, sizeof t);
			if (n == (ssize_t)r->target_len && memcmp(t, r->target, (size_t)n) == 0) {
				meta_from(c, r->path, r, 1);
				return;
			}
		}
		const char *dst = r->path;
		if (exists) {
			tmp_beside(r->path, tmp, sizeof tmp);
			dst = tmp;
		}
		rc = bbx_uop_symlink(&c->u, r->target ? r->target : "", r->target_len, dst);
	} else {
		if (exists && (sb.st_mode & S_IFMT) == (r->st.mode & S_IFMT) &&
		    sb.st_rdev == r->st.rdev)
			return;
		const char *dst = r->path;
		if (exists) {
			tmp_beside(r->path, tmp, sizeof tmp);
			dst = tmp;
		}
		rc = bbx_uop_mknod(&c->u, dst, r->st.mode, r->st.rdev);
	}
	if (!rc && exists)
		rc = install(c, tmp, r->path);
	if (!rc)
		meta_from(c, r->path, r, 1);
out:
	if (!rc && lstat(r->path, &sb) == 0 && sb.st_ino != r->st.ino)
		alias_add(c, r->st.ino, sb.st_ino);
	if (rc)
		fail(c, "restoring", r->path, rc);
	else {
		c->s->restored++;
		say(c, "restored", r->path);
	}
}

static void do_truncate(struct ctx *c, const struct bbx_rec *r)
{
	struct stat sb;
	if (bbx_pathmap_get(&c->conflicted, r->path)) {
		/* Only the length was recorded (an append), and the file was rewritten after
		 * the run: cutting the later version to the old length would make a file that
		 * is neither.  Leave it whole (it is also kept beside) and say so: it is
		 * already counted as a conflict. */
		c->s->unrestorable++;
		if (c->o->out)
			fprintf(c->o->out, "not restored: %s was appended to by the run and changed "
					   "after it; only its length was recorded\n", r->path);
		return;
	}
	if (stat(r->path, &sb) < 0 || !S_ISREG(sb.st_mode) || !ino_same(&c->alias, sb.st_ino, r->st.ino))
		return; /* replaced since: a later step restores the name */
	if ((uint64_t)sb.st_size != r->size) {
		int rc = bbx_uop_truncate(&c->u, r->path, (off_t)r->size);
		if (rc) {
			fail(c, "truncating", r->path, rc);
			return;
		}
	}
	meta_from(c, r->path, r, 0);
	c->s->restored++;
}

static void do_mkdir(struct ctx *c, const struct bbx_rec *r)
{
	struct stat sb;
	if (lstat(r->path, &sb) == 0) {
		if (S_ISDIR(sb.st_mode))
			return;
		if (move_aside(c, r->path, "occupies a removed directory's name"))
			return;
	}
	int rc = bbx_uop_mkdir(&c->u, r->path, r->st.mode & 07777);
	if (rc) {
		fail(c, "recreating directory", r->path, rc);
		return;
	}
	if (lstat(r->path, &sb) == 0)
		alias_add(c, r->st.ino, sb.st_ino);
	/* Its extended attributes (ACLs, labels), before its mode and times (dirs_phase):
	 * setting an access ACL rewrites the group bits, which the mode then sets back. */
	size_t off = 0, vlen;
	const char *name;
	const void *val;
	while (!c->o->dry_run && bbx_xattrs_next(r->xattrs, r->xattrs_len, &off, &name, &val, &vlen) > 0)
		if (lsetxattr(r->path, name, val, vlen, 0) < 0) {
			if (errno == EPERM) /* trusted.*, security.* without the privilege */
				c->s->owner_skipped++;
			else
				fail(c, "restoring an extended attribute of", r->path, -errno);
		}
	c->s->restored++;
}

static void do_rename_back(struct ctx *c, const struct bbx_rec *r)
{
	struct stat sa, sb;
	int a = lstat(r->path, &sa) == 0, b = lstat(r->path2, &sb) == 0;
	int moved = b && ino_same(&c->alias, sb.st_ino, r->ino);
	if (!moved)
		return; /* never happened, or already moved back */
	int rc;
	if (r->flags & RENAME_EXCHANGE) {
		rc = bbx_uop_rename(&c->u, r->path2, r->path, RENAME_EXCHANGE);
	} else {
		if (a && (r->flags & RENAME_WHITEOUT) && S_ISCHR(sa.st_mode) && sa.st_rdev == 0) {
			/* the whiteout the rename left in its place (overlayfs) */
			rc = bbx_uop_unlink(&c->u, r->path);
			if (rc) {
				fail(c, "removing the whiteout", r->path, rc);
				return;
			}
			a = 0;
		}
		if (a && move_aside(c, r->path, "occupies the name a rename came from"))
			return;
		rc = bbx_uop_rename(&c->u, r->path2, r->path, 0);
	}
	if (rc)
		fail(c, "renaming back", r->path2, rc);
	else {
		c->s->restored++;
		if (!(r->flags & RENAME_EXCHANGE))
			fix_rename(c, r->path, r->path2);
	}
}

static void do_meta(struct ctx *c, const struct bbx_rec *r)
{
	int nofollow = (r->mask & BBX_META_NOFOLLOW) != 0;
	struct stat sb;
	if ((nofollow ? lstat(r->path, &sb) : stat(r->path, &sb)) < 0)
		return;
	if ((r->mask & BBX_META_XATTR) && r->xname) {
		int rc = bbx_uop_xattr(&c->u, r->path, r->xname, r->xvalue, r->xvalue_len,
				       r->has_xvalue, nofollow);
		if (rc && rc != -ENOTSUP)
			fail(c, "restoring xattr of", r->path, rc);
	}
	meta_from(c, r->path, r, nofollow);
	c->s->restored++;
}

/* ---- progress ------------------------------------------------------------------- */

static void progress_save(struct ctx *c, int phase, size_t next)
{
	if (c->progress_fd < 0)
		return;
	char b[64];
	int n = snprintf(b, sizeof b, "%d %020zu\n", phase, next);
	(void)!pwrite(c->progress_fd, b, (size_t)n, 0);
}

static int progress_load(struct ctx *c, int *phase, size_t *next)
{
	char b[64] = {0};
	if (pread(c->progress_fd, b, sizeof b - 1, 0) <= 0)
		return 0;
	return sscanf(b, "%d %zu", phase, next) == 2;
}

/* ---- phases ------------------------------------------------------------------------ */

/* Records of the run that name a path (both ends of a rename).  A RESULT counts when the
 * call succeeded: after the seal, it is a straggler's open of the path that completed
 * then (tar, its command's shell killed, still extracting into a file it created: its
 * content and times, written through the descriptor, make no record). */
static int touches(const struct bbx_rec *r, const char **a, const char **b)
{
	*a = r->path;
	*b = r->type == BBX_REC_RENAME ? r->path2 : NULL;
	switch (r->type) {
	case BBX_REC_CREATE: case BBX_REC_PRESERVE: case BBX_REC_SIZE: case BBX_REC_RMDIR:
	case BBX_REC_RENAME: case BBX_REC_META: case BBX_REC_NOTE:
		return r->path != NULL;
	case BBX_REC_RESULT:
		return r->path != NULL && r->has_ret && r->ret >= 0;
	}
	return 0;
}

/* Has path changed since its FINAL record?  The witness is what `make` and rsync trust:
 * type, inode, size, mtime, mode and owner.  Not ctime: no undo can set it back, so an
 * earlier undo of a later run that touched the same file would look like a stranger's
 * change, and runs could not be undone newest first. */
static int changed_since(const struct bbx_rec *fin, const struct stat *sb, int exists)
{
	if (fin->kind == BBX_KIND_NONE)
		return exists;
	return !exists || (int)fin->kind != bbx_kind_of_mode(sb->st_mode) ||
	       sb->st_ino != fin->st.ino || (uint64_t)sb->st_size != fin->st.size ||
	       sb->st_mtim.tv_sec != fin->st.mtime_sec || sb->st_mtim.tv_nsec != fin->st.mtime_nsec ||
	       (sb->st_mode & 07777) != (fin->st.mode & 07777) || sb->st_uid != fin->st.uid ||
	       sb->st_gid != fin->st.gid;
}

static void conflicts_phase(struct ctx *c, size_t *offs, size_t count)
{
	struct bbx_rec rec;
	/* The last FINAL of each path (a journal sealed more than once - an undo that was
	 * run again - has several) and the last record that touched it: a process of the
	 * run that outlived bbx-run may have changed it after the seal, and that is the
	 * run's own doing, not a conflict. */
	struct bbx_pathmap last = {0}, touched = {0};
	size_t *slot;
	for (size_t i = 0; i < count; i++) {
		bbx_rec_decode(c->r.map + offs[i], c->r.size - offs[i], &rec);
		const char *a, *b;
		if (rec.type == BBX_REC_FINAL && rec.path && bbx_pathmap_put(&last, rec.path, &slot) >= 0)
			*slot = i;
		else if (touches(&rec, &a, &b))
			for (int k = 0; k < 2; k++)
				if ((k ? b : a) && bbx_pathmap_put(&touched, k ? b : a, &slot) >= 0)
					*slot = i;
	}
	for (size_t i = 0; i < count; i++) {
		bbx_rec_decode(c->r.map + offs[i], c->r.size - offs[i], &rec);
		if (rec.type != BBX_REC_FINAL || !rec.path)
			continue;
		size_t *at = bbx_pathmap_get(&last, rec.path), *t = bbx_pathmap_get(&touched, rec.path);
		if (!at || *at != i || (t && *t > i))
			continue;
		struct stat sb;
		int exists = lstat(rec.path, &sb) == 0;
		if (!changed_since(&rec, &sb, exists) || !exists || S_ISDIR(sb.st_mode))
			continue; /* directories: foreign entries are handled when met */
		char kept[PATH_MAX + 32];
		int rc = bbx_uop_keep_copy(&c->u, rec.path, kept, sizeof kept);
		if (rc) {
			fail(c, "keeping the later version of", rec.path, rc);
			continue;
		}
		c->s->conflicts++;
		bbx_pathmap_put(&c->conflicted, rec.path, &slot);
		if (c->conflicts_fd >= 0)
			(void)!write(c->conflicts_fd, rec.path, strlen(rec.path) + 1);
		if (c->o->out)
			fprintf(c->o->out, "conflict: %s changed after the run; later version %s %s\n",
				rec.path, c->o->dry_run ? "would be kept as" : "kept as", kept);
	}
	bbx_pathmap_free(&last);
	bbx_pathmap_free(&touched);
}

static void dirs_phase(struct ctx *c)
{
	struct bbx_rec rec;
	/* Reverse file order: the earliest record of a directory is applied last. */
	for (size_t i = 0; i < c->nfix; i++) {
		bbx_rec_decode(c->r.map + c->fix[i].off, c->r.size - c->fix[i].off, &rec);
		struct stat sb;
		if (lstat(c->fix[i].path, &sb) < 0 || !S_ISDIR(sb.st_mode))
			continue;
		meta_from(c, c->fix[i].path, &rec, 1);
	}
}

static int open_undo_run(struct ctx *c, char *udir, size_t cap, int *resumed)
{
	int n = snprintf(udir, cap, "%s/undo", c->dir);
	if (n < 0 || (size_t)n >= cap)
		return -ENAMETOOLONG;
	char p[PATH_MAX + 32];
	snprintf(p, sizeof p, "%s/journal", udir);
	*resumed = access(p, F_OK) == 0;
	int rc;
	if (!*resumed) {
		char meta[PATH_MAX + 64], out[PATH_MAX];
		snprintf(meta, sizeof meta, "origin=undo\nundo_of=%s\n", c->dir);
		rc = bbx_run_create(udir, "bbx-undo", meta, 1, out, sizeof out);
		if (rc)
			return rc;
	}
	if ((rc = bbx_run_open(&c->run, udir)))
		return rc;
	snprintf(p, sizeof p, "%s/aliases", udir);
	c->alias_fd = open(p, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (c->alias_fd < 0)
		return -errno;
	if (*resumed)
		alias_load(c);
	snprintf(p, sizeof p, "%s/conflicts", udir);
	c->conflicts_fd = open(p, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (c->conflicts_fd < 0)
		return -errno;
	if (*resumed) {
		/* the conflicts found by the first attempt (its phase 1 is not repeated) */
		struct stat sb;
		if (fstat(c->conflicts_fd, &sb) == 0 && sb.st_size > 0 &&
		    (c->conflicts_text = malloc((size_t)sb.st_size + 1))) {
			ssize_t got = pread(c->conflicts_fd, c->conflicts_text, (size_t)sb.st_size, 0);
			size_t *slot;
			if (got > 0)
				c->conflicts_text[got] = 0;
			for (ssize_t i = 0; got > 0 && i < got;
			     i += (ssize_t)strlen(c->conflicts_text + i) + 1) {
				bbx_pathmap_put(&c->conflicted, c->conflicts_text + i, &slot);
			}
		}
	}
	snprintf(p, sizeof p, "%s/progress", udir);
	c->progress_fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	return c->progress_fd < 0 ? -errno : 0;
}

/* 0 if this undo knows the directory's format (meta's first line), or it has none
 * (a directory whose meta was lost: the journal itself is what counts); -EPROTO for a
 * format it does not know: a later format may carry pre-images this code would skip
 * (journal-format.md, 11). */
static int format_known(const char *dir)
{
	char p[PATH_MAX + 16], line[64] = "";
	snprintf(p, sizeof p, "%s/meta", dir);
	FILE *f = fopen(p, "re");
	if (!f)
		return 0;
	int ok = 1;
	if (fgets(line, sizeof line, f)) {
		static const char key[] = "format=bbx-journal ";
		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, key, sizeof key - 1)) {
			const char *v = line + sizeof key - 1;
			ok = !strcmp(v, "1") || !strcmp(v, BBX_JOURNAL_FORMAT);
		}
	}
	fclose(f);
	return ok ? 0 : -EPROTO;
}

int bbx_undo_run(const char *dir, const struct bbx_undo_opts *o, struct bbx_undo_stats *s)
{
	struct ctx c = {.dir = dir, .o = o, .s = s, .progress_fd = -1, .alias_fd = -1,
			.conflicts_fd = -1};
	memset(s, 0, sizeof *s);
	char p[PATH_MAX + 32];
	snprintf(p, sizeof p, "%s/undone", dir);
	if (access(p, F_OK) == 0) {
		s->already_done = 1;
		return 0;
	}
	int rc = format_known(dir);
	if (rc)
		return rc;
	snprintf(p, sizeof p, "%s/journal", dir);
	rc = bbx_reader_open(&c.r, p);
	if (rc)
		return rc;
	struct bbx_undo_step *steps = NULL;
	size_t nsteps = 0, *offs = NULL, count = 0;
	if ((rc = bbx_undo_plan(&c.r, &steps, &nsteps)))
		goto out;
	s->torn = c.r.torn_len != 0;
	c.r.off = 0;
	if ((rc = bbx_reader_index(&c.r, &offs, &count)))
		goto out;
	s->records = count;
	s->steps = nsteps;
	struct bbx_rec rec;
	for (size_t i = 0; i < count && !s->sealed; i++) {
		bbx_rec_decode(c.r.map + offs[i], c.r.size - offs[i], &rec);
		s->sealed = rec.type == BBX_REC_SEAL;
	}

	int resumed = 0, phase = 1;
	size_t next = 0;
	c.steps = steps;
	c.nsteps = nsteps;
	c.u.dry_run = o->dry_run;
	if (!o->dry_run) {
		if ((rc = open_undo_run(&c, s->undo_dir, sizeof s->undo_dir, &resumed)))
			goto out;
		c.u.run = &c.run;
		if (resumed && !progress_load(&c, &phase, &next))
			phase = 1, next = 0;
	}

	if (phase <= 1) {
		if (s->sealed)
			conflicts_phase(&c, offs, count);
		phase = 2;
		next = 0;
		progress_save(&c, phase, next);
	}
	/* Resuming: rebuild the directory list of the steps already done. */
	for (size_t i = 0; i < (phase == 2 ? next : phase > 2 ? nsteps : 0); i++) {
		bbx_rec_decode(c.r.map + steps[i].off, c.r.size - steps[i].off, &rec);
		if (is_dir_record(&rec))
			fix_push(&c, &rec, steps[i].off);
		else if (steps[i].action == BBX_UNDO_RENAME_BACK && !(rec.flags & RENAME_EXCHANGE))
			fix_rename(&c, rec.path, rec.path2);
	}
	if (phase == 2) {
		for (size_t i = next; i < nsteps; i++) {
			const struct bbx_undo_step *st = &steps[i];
			if (st->action == BBX_UNDO_SKIP)
				continue;
			bbx_rec_decode(c.r.map + st->off, c.r.size - st->off, &rec);
			if (is_dir_record(&rec))
				fix_push(&c, &rec, st->off);
			if (st->action == BBX_UNDO_DIRMETA)
				continue;
			if (st->action == BBX_UNDO_LOST) {
				/* Nothing to do, dry run or not: the pre-image was never kept
				 * ([journal] over_max_preserve = allow).  The path stays as the
				 * run left it; reported, counted, and bbx-undo says so in its
				 * exit status. */
				s->lost++;
				if (o->out) {
					fprintf(o->out, "lost: %s cannot be restored: the run changed it "
						"without keeping a copy", rec.path);
					if (rec.reason || rec.rule)
						fprintf(o->out, " (%s%s%s)", rec.reason ? rec.reason : "",
							rec.reason && rec.rule ? "; " : "",
							rec.rule ? rec.rule : "");
					fprintf(o->out, "; left as the run left it\n");
				}
				if (!o->dry_run)
					progress_save(&c, 2, i + 1);
				continue;
			}
			if (o->dry_run) {
				if (o->out)
					fprintf(o->out, "would %s %s%s%s\n",
						bbx_undo_action_name(st->action), rec.path,
						rec.path2 ? " <- " : "", rec.path2 ? rec.path2 : "");
				if (st->action == BBX_UNDO_REMOVE)
					s->removed++;
				else
					s->restored++;
				continue;
			}
			switch (st->action) {
			case BBX_UNDO_REMOVE: do_remove(&c, &rec, st); break;
			case BBX_UNDO_RESTORE_LINK:
			case BBX_UNDO_RESTORE_COPY:
			case BBX_UNDO_RESTORE_INLINE:
			case BBX_UNDO_RESTORE_ALIAS: do_restore(&c, &rec, st->action); break;
			case BBX_UNDO_TRUNCATE: do_truncate(&c, &rec); break;
			case BBX_UNDO_MKDIR: do_mkdir(&c, &rec); break;
			case BBX_UNDO_RENAME_BACK: do_rename_back(&c, &rec); break;
			case BBX_UNDO_META: do_meta(&c, &rec); break;
			}
			progress_save(&c, 2, i + 1);
			if (o->progress && (i & 4095) == 4095)
				fprintf(o->progress, "\rbbx-undo: %zu/%zu steps", i + 1, nsteps);
		}
		if (o->progress && nsteps > 4095)
			fprintf(o->progress, "\rbbx-undo: %zu/%zu steps\n", nsteps, nsteps);
		phase = 3;
		progress_save(&c, phase, 0);
	}
	s->orphans = drop_orphans(&c, offs, count);
	if (!o->dry_run) {
		dirs_phase(&c);
		/* With errors (a file that could not be written back: immutable, no space),
		 * the undo is not finished: running it again replays every step (each is
		 * idempotent), without repeating phase 1. */
		progress_save(&c, s->errors ? 2 : 4, 0);
		bbx_run_close(&c.run);
		bbx_seal(s->undo_dir, NULL);
		snprintf(p, sizeof p, "%s/undone", dir);
		if (s->errors)
			goto out;
		int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd >= 0) {
			char line[PATH_MAX + 64];
			int n = snprintf(line, sizeof line,
					 "undo=%s\ntime=%lld\nconflicts=%zu\nlost=%zu\n", s->undo_dir,
					 (long long)time(NULL), s->conflicts, s->lost);
			(void)!write(fd, line, (size_t)n);
			close(fd);
		}
	}
out:
	if (c.progress_fd >= 0)
		close(c.progress_fd);
	if (c.alias_fd >= 0)
		close(c.alias_fd);
	if (c.conflicts_fd >= 0)
		close(c.conflicts_fd);
	free(steps);
	free(offs);
	free(c.alias.k);
	free(c.alias.v);
	free(c.sib);
	for (size_t i = 0; i < c.nfix; i++)
		free(c.fix[i].path);
	free(c.fix);
	bbx_pathmap_free(&c.conflicted);
	free(c.conflicts_text);
	bbx_reader_close(&c.r);
	return rc;
}
