/* SPDX-License-Identifier: MIT
 *
 * bbx-diff - what a run changed, like `git status` and `git diff`: the paths it
 * created, modified, deleted and renamed, mode changes, and unified diffs of text files
 * from the pre-images the journal kept to what is in the tree now.
 *
 * The journal is walked in file order once.  Each path that existed before the run
 * gets an *origin* (its first record says how it was: STAT, and where its content was
 * kept: the object of its first content PRESERVE or removal PRESERVE, or the length
 * of its first SIZE).  A map from each current name to the origin whose content it
 * holds follows renames (directories move everything under them), removals and
 * creations; at the end each origin is found in the tree again, or not.  Reads only:
 * the journal and the tree are never changed.
 */
#include "common.h"
#include "journal/pathmap.h"
#include "journal/reader.h"

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: bbx-diff [--stat | --name-only] [JOURNAL] [-- PATH...]\n"
		   "Show what a run changed (default: the latest run): a status line per path\n"
		   "(A created, M modified, D deleted, R renamed), then unified diffs from the\n"
		   "pre-images the journal kept to the files as they are now.\n"
		   "      --stat       lines added and removed per path, and totals\n"
		   "      --name-only  only the paths\n"
		   "  -h, --help       this text\n"
		   "      --version    the version and journal format\n"
		   "PATH limits the output to those paths and what lies under them (or a glob).\n");
}

#define NEW ((size_t)-1) /* value of a current name: made by the run */

struct origin {
	const char *path;  /* the name it had when the run started */
	uint32_t mode;     /* st_mode before the run (0: unknown) */
	const char *obj;   /* its content before the run, under objects/ */
	bool packed;       /* ... obj is the run's shared object: plen bytes at poff */
	uint64_t poff, plen;
	bool has_presize;  /* before the run it was the first presize bytes of ... */
	uint64_t presize;  /* ... obj if set, else of the file it is now */
	bool changed;      /* its content was written */
	bool lost;         /* ... without a pre-image (PRESERVE how=lost) */
	const char *target; size_t target_len; /* a symlink's content */
};

static struct origin *O;
static size_t nO, capO;
static struct bbx_pathmap start; /* path -> origin index + 1, or 0: absent before */
static struct bbx_pathmap cur;   /* current name -> origin index + 1, NEW, or 0 (gone) */
static char jdir[PATH_MAX];

static size_t cur_get(const char *p)
{
	size_t *v = bbx_pathmap_get(&cur, p);
	return v ? *v : 0;
}

static void cur_set(const char *p, size_t v)
{
	size_t *slot;
	if (bbx_pathmap_put(&cur, p, &slot) < 0)
		errx(1, "out of memory");
	*slot = v;
}

/* First sight of path p: records whether it existed before the run. */
static size_t touch(const char *p, bool existed, const struct bbx_rec *r)
{
	size_t *slot;
	int rc = bbx_pathmap_put(&start, p, &slot);
	if (rc < 0)
		errx(1, "out of memory");
	if (rc == 0)
		return *slot;
	*slot = 0;
	if (!existed)
		return 0;
	if (nO == capO) {
		capO = capO ? 2 * capO : 256;
		O = realloc(O, capO * sizeof *O);
		if (!O)
			err(1, "realloc");
	}
	struct origin *o = &O[nO];
	memset(o, 0, sizeof *o);
	o->path = p;
	if (r->has_stat)
		o->mode = r->st.mode;
	else if (r->type == BBX_REC_RMDIR)
		o->mode = S_IFDIR;
	if (r->target) {
		o->target = r->target;
		o->target_len = r->target_len;
	}
	*slot = ++nO;
	cur_set(p, nO);
	return nO;
}

/* A directory renamed: every current name under from/ moves under to/. */
static void move_under(const char *from, const char *to)
{
	size_t fl = strlen(from), n = 0;
	const char **keys = malloc(cur.len * sizeof *keys + 1);
	size_t *vals = malloc(cur.len * sizeof *vals + 1);
	if (!keys || !vals)
		err(1, "malloc");
	for (size_t i = 0; i < cur.cap; i++)
		if (cur.keys[i] && cur.vals[i] && !strncmp(cur.keys[i], from, fl) && cur.keys[i][fl] == '/') {
			keys[n] = cur.keys[i];
			vals[n++] = cur.vals[i];
		}
	for (size_t i = 0; i < n; i++) {
		char *np;
		if (asprintf(&np, "%s%s", to, keys[i] + fl) < 0)
			err(1, "asprintf");
		cur_set(keys[i], 0);
		cur_set(np, vals[i]); /* np is kept for the life of the program */
	}
	free(keys);
	free(vals);
}

static bool is_content_preserve(const struct bbx_rec *r)
{
	/* how=lost: content overwritten without a copy ([journal] over_max_preserve =
	 * allow): a content change whose pre-image the journal does not have. */
	return (r->how == BBX_HOW_COPY || r->how == BBX_HOW_REFLINK || r->how == BBX_HOW_LOST ||
		r->how == BBX_HOW_PACKED) &&
	       r->op &&
	       strcmp(r->op, "unlink") && strcmp(r->op, "unlinkat") && strcmp(r->op, "remove") &&
	       strncmp(r->op, "rename", 6);
}

/* Failed calls (their RESULT says so) changed nothing. */
struct failed { uint64_t *seqs; size_t n, cap; };
static struct failed FAIL;
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}
static bool failed(uint64_t seq)
{
	return FAIL.n && bsearch(&seq, FAIL.seqs, FAIL.n, sizeof seq, cmp_u64) != NULL;
}

/* The object a PRESERVE names becomes origin o's pre-image. */
static void set_obj(struct origin *o, const struct bbx_rec *r)
{
	o->obj = r->object;
	o->packed = r->how == BBX_HOW_PACKED;
	o->poff = r->offset;
	o->plen = r->size;
}

static void walk(const struct bbx_rec *r)
{
	if (failed(r->h.seq))
		return;
	const char *p = r->path;
	size_t o;
	switch (r->type) {
	case BBX_REC_CREATE:
		if (!p || r->kind == BBX_KIND_ANON)
			return;
		touch(p, false, r);
		cur_set(p, NEW);
		break;
	case BBX_REC_PRESERVE:
		if (!p)
			return;
		touch(p, true, r);
		o = cur_get(p);
		if (is_content_preserve(r)) {
			if (o && o != NEW && !O[o - 1].obj && !O[o - 1].lost) {
				set_obj(&O[o - 1], r);
				O[o - 1].changed = true;
				O[o - 1].lost = r->how == BBX_HOW_LOST;
			}
		} else {
			if (o && o != NEW && !O[o - 1].obj && !O[o - 1].has_presize && r->object)
				set_obj(&O[o - 1], r);
			if (o && o != NEW && !O[o - 1].target && r->target) {
				O[o - 1].target = r->target;
				O[o - 1].target_len = r->target_len;
			}
			cur_set(p, 0);
		}
		break;
	case BBX_REC_SIZE:
		if (!p)
			return;
		touch(p, true, r);
		o = cur_get(p);
		if (o && o != NEW && !O[o - 1].obj && !O[o - 1].has_presize) {
			O[o - 1].has_presize = true;
			O[o - 1].presize = r->size;
			O[o - 1].changed = true;
		}
		break;
	case BBX_REC_RMDIR:
		if (!p)
			return;
		touch(p, true, r);
		cur_set(p, 0);
		break;
	case BBX_REC_META:
		if (p)
			touch(p, true, r);
		break;
	case BBX_REC_RENAME: {
		if (!p || !r->path2)
			return;
		touch(p, true, r);
		touch(r->path2, false, r);
		size_t a = cur_get(p), b = cur_get(r->path2);
		bool dir = r->kind == BBX_KIND_DIR;
		if (r->flags & 2) { /* RENAME_EXCHANGE */
			cur_set(r->path2, a);
			cur_set(p, b);
			break; /* (contents of exchanged directories are not followed) */
		}
		cur_set(r->path2, a);
		cur_set(p, 0);
		if (dir)
			move_under(p, r->path2);
		break;
	}
	default:
		break;
	}
}

/* ---- output ------------------------------------------------------------------------ */

struct change {
	char st;            /* A M D R */
	const char *path, *from;
	const struct origin *o;
	bool mode_changed;
	uint32_t old_mode, new_mode;
};
static struct change *CH;
static size_t nCH, capCH;
static const char **filters;
static size_t nfilters;

static bool wanted(const char *p)
{
	if (!nfilters)
		return true;
	for (size_t i = 0; i < nfilters; i++) {
		size_t l = strlen(filters[i]);
		if (!strncmp(p, filters[i], l) && (p[l] == 0 || p[l] == '/' || filters[i][l - 1] == '/'))
			return true;
		if (!fnmatch(filters[i], p, 0))
			return true;
	}
	return false;
}

static void add(char st, const char *path, const char *from, const struct origin *o)
{
	if (!wanted(path) && !(from && wanted(from)))
		return;
	if (nCH == capCH) {
		capCH = capCH ? 2 * capCH : 64;
		CH = realloc(CH, capCH * sizeof *CH);
		if (!CH)
			err(1, "realloc");
	}
	struct change *c = &CH[nCH++];
	memset(c, 0, sizeof *c);
	c->st = st;
	c->path = path;
	c->from = from;
	c->o = o;
	struct stat s;
	if (o && o->mode && st != 'D' && lstat(path, &s) == 0 && (s.st_mode & S_IFMT) == (o->mode & S_IFMT) &&
	    (s.st_mode & 07777) != (o->mode & 07777)) {
		c->mode_changed = true;
		c->old_mode = o->mode;
		c->new_mode = s.st_mode;
	}
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct change *)a)->path, ((const struct change *)b)->path);
}

/* A temporary file holding the first n bytes of src.  Returns its path (malloc'd) or
 * NULL. */
static char *range_copy(const char *src, uint64_t off, uint64_t n)
{
	char *t = strdup("/tmp/bbx-diff.XXXXXX");
	int out = mkstemp(t), in = open(src, O_RDONLY | O_CLOEXEC);
	if (out < 0 || in < 0)
		goto fail;
	char buf[65536];
	while (n) {
		ssize_t k = pread(in, buf, n < sizeof buf ? n : sizeof buf, (off_t)off);
		if (k <= 0 || write(out, buf, (size_t)k) != k)
			goto fail;
		n -= (uint64_t)k;
		off += (uint64_t)k;
	}
	close(in);
	close(out);
	return t;
fail:
	if (in >= 0)
		close(in);
	if (out >= 0) {
		close(out);
		unlink(t);
	}
	free(t);
	return NULL;
}

static bool looks_binary(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	char buf[8000];
	ssize_t n = read(fd, buf, sizeof buf);
	close(fd);
	return n > 0 && memchr(buf, 0, (size_t)n) != NULL;
}

/* Runs diff -u and appends its output to *out.  Returns diff's exit status. */
static int run_diff(const char *la, const char *lb, const char *a, const char *b, char **out, size_t *len)
{
	int fds[2];
	if (pipe(fds))
		err(1, "pipe");
	pid_t pid = fork();
	if (pid < 0)
		err(1, "fork");
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execlp("diff", "diff", "-u", "--label", la, "--label", lb, "--", a, b, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	FILE *f = open_memstream(out, len);
	char buf[65536];
	ssize_t n;
	while ((n = read(fds[0], buf, sizeof buf)) > 0)
		fwrite(buf, 1, (size_t)n, f);
	fclose(f);
	close(fds[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			err(1, "waitpid");
	return WIFEXITED(st) ? WEXITSTATUS(st) : 2;
}

/* The diff of a whole file against /dev/null, as diff -u writes it, without running
 * diff (a run that creates thousands of files would fork thousands of times).
 * Returns 0 (empty file: no difference), 1, or 2 if path cannot be read. */
static int whole_diff(const char *la, const char *lb, const char *path, bool add, char **out,
		      size_t *len)
{
	FILE *in = fopen(path, "re");
	if (!in)
		return 2;
	char *body = NULL;
	size_t blen = 0, lines = 0, cap = 0;
	FILE *f = open_memstream(&body, &blen);
	char *line = NULL;
	ssize_t n;
	bool nl = true;
	while ((n = getline(&line, &cap, in)) > 0) {
		putc(add ? '+' : '-', f);
		fwrite(line, 1, (size_t)n, f);
		nl = line[n - 1] == '\n';
		if (!nl)
			fputs("\n\\ No newline at end of file\n", f);
		lines++;
	}
	free(line);
	bool bad = ferror(in);
	fclose(in);
	fclose(f);
	if (bad) {
		free(body);
		return 2;
	}
	if (!lines) {
		free(body);
		*out = NULL;
		*len = 0;
		return 0;
	}
	char range[64];
	if (lines == 1)
		snprintf(range, sizeof range, "1");
	else
		snprintf(range, sizeof range, "1,%zu", lines);
	f = open_memstream(out, len);
	fprintf(f, "--- %s\n+++ %s\n@@ %s%s %s%s @@\n", la, lb, add ? "-0,0" : "-", add ? "" : range,
		add ? "+" : "+0,0", add ? range : "");
	fwrite(body, 1, blen, f);
	fclose(f);
	free(body);
	return 1;
}

/* The pre-image of origin o as a file, or NULL if the journal did not keep it (an
 * object that an undo moved back, for instance).  *tmp is set if it must be removed. */
static char *preimage(const struct origin *o, const char *now, bool *tmp)
{
	*tmp = false;
	char *p = NULL;
	if (o->obj) {
		if (asprintf(&p, "%s/objects/%s", jdir, o->obj) < 0)
			err(1, "asprintf");
		if (access(p, R_OK)) {
			free(p);
			return NULL;
		}
		if (o->packed) {
			/* Its bytes within the shared object (and, after a SIZE, a prefix). */
			uint64_t n = o->has_presize && o->presize < o->plen ? o->presize : o->plen;
			char *q = range_copy(p, o->poff, n);
			free(p);
			*tmp = q != NULL;
			return q;
		}
	}
	if (o->has_presize) {
		char *q = range_copy(p ? p : now, 0, o->presize);
		free(p);
		*tmp = q != NULL;
		return q;
	}
	if (!p && !o->changed && now)
		return strdup(now); /* never written: the same content */
	return p;
}

/* Whether the files a and b hold the same bytes. */
static bool same_bytes(const char *a, const char *b)
{
	FILE *fa = fopen(a, "re"), *fb = fopen(b, "re");
	bool same = fa && fb;
	while (same) {
		int x = getc(fa), y = getc(fb);
		if (x != y)
			same = false;
		if (x == EOF || y == EOF)
			break;
	}
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return same;
}

/* A modified regular file whose content is the pre-image again (written back, undone)
 * and whose mode is the same has not changed. */
static bool unchanged(const struct origin *o, const char *path, const struct stat *s)
{
	if (!S_ISREG(s->st_mode) || !S_ISREG(o->mode) || (s->st_mode & 07777) != (o->mode & 07777))
		return false;
	bool tmp;
	char *pre = preimage(o, path, &tmp);
	if (!pre)
		return false;
	bool same = same_bytes(pre, path);
	if (tmp)
		unlink(pre);
	free(pre);
	return same;
}

enum { OUT_FULL, OUT_STAT, OUT_NAMES };

static int show(const struct change *c, int mode, long *adds, long *dels)
{
	const struct origin *o = c->o;
	char la[PATH_MAX + 8], lb[PATH_MAX + 8];
	snprintf(la, sizeof la, "a%s", c->from ? c->from : c->path);
	snprintf(lb, sizeof lb, "b%s", c->path);
	struct stat s;
	bool exists = lstat(c->path, &s) == 0;
	const char *a = "/dev/null", *b = exists && S_ISREG(s.st_mode) ? c->path : "/dev/null";
	char *pre = NULL;
	bool tmp = false;
	int rc = 0;
	if (mode == OUT_FULL) {
		printf("diff --bbx %s %s\n", la, lb);
		if (c->st == 'A' && exists)
			printf("new %s mode %06o\n", S_ISDIR(s.st_mode) ? "directory" : "file", s.st_mode);
		if (c->st == 'D')
			printf("deleted %s mode %06o\n", S_ISDIR(o->mode) ? "directory" : "file", o->mode);
		if (c->st == 'R')
			printf("rename from %s\nrename to %s\n", c->from, c->path);
		if (c->mode_changed)
			printf("old mode %06o\nnew mode %06o\n", c->old_mode, c->new_mode);
	}
	if (c->st == 'D')
		b = "/dev/null";
	if (o && (S_ISLNK(o->mode) || (exists && S_ISLNK(s.st_mode)))) {
		char now[PATH_MAX] = "";
		if (exists && S_ISLNK(s.st_mode)) {
			ssize_t n = readlink(c->path, now, sizeof now - 1);
			now[n > 0 ? n : 0] = 0;
		}
		if (mode == OUT_FULL && (!o->target || strlen(now) != o->target_len ||
					 memcmp(now, o->target, o->target_len)))
			printf("symlink %.*s -> %s\n", (int)o->target_len, o->target ? o->target : "", now);
		return 0;
	}
	if (o && S_ISDIR(o->mode))
		return 0;
	if (o && o->mode && !S_ISREG(o->mode))
		return 0;
	if (o) {
		pre = preimage(o, c->st == 'D' ? NULL : c->path, &tmp);
		if (!pre) {
			if (o->changed || c->st == 'D') {
				if (mode == OUT_FULL)
					printf(o->lost ? "(the pre-image of %s was not kept: over [journal] "
							 "max_preserve, allowed by over_max_preserve)\n"
						       : "(the pre-image of %s is no longer in the journal)\n",
					       o->path);
				else if (mode == OUT_STAT)
					printf(" %s | pre-image not kept\n", c->path);
			}
			return 0;
		}
		a = pre;
	} else if (!exists || !S_ISREG(s.st_mode)) {
		return 0;
	}
	if (c->st == 'A')
		snprintf(la, sizeof la, "/dev/null");
	if (c->st == 'D')
		snprintf(lb, sizeof lb, "/dev/null");
	char *txt = NULL;
	size_t len = 0;
	bool bin = looks_binary(a) || looks_binary(b);
	if (!strcmp(a, "/dev/null") != !strcmp(b, "/dev/null"))
		rc = whole_diff(la, lb, strcmp(a, "/dev/null") ? a : b, !strcmp(a, "/dev/null"), &txt, &len);
	else
		rc = run_diff(la, lb, a, b, &txt, &len);
	if (rc == 1 && bin) {
		if (mode == OUT_FULL)
			printf("Binary files %s and %s differ\n", la, lb);
		else if (mode == OUT_STAT)
			printf(" %s | Bin\n", c->path);
		rc = 0;
	} else if (rc <= 1) {
		long ad = 0, de = 0, ln = 0;
		for (char *l = txt; l && l < txt + len; ln++) {
			char *nl = memchr(l, '\n', (size_t)(txt + len - l));
			bool header = ln < 2 && (!strncmp(l, "--- ", 4) || !strncmp(l, "+++ ", 4));
			if (!header && l[0] == '+')
				ad++;
			if (!header && l[0] == '-')
				de++;
			l = nl ? nl + 1 : txt + len;
		}
		*adds += ad;
		*dels += de;
		if (mode == OUT_FULL)
			fwrite(txt, 1, len, stdout);
		else if (mode == OUT_STAT)
			printf(" %s | %ld +%ld -%ld\n", c->path, ad + de, ad, de);
		rc = 0;
	} else {
		warnx("diff failed on %s", c->path);
		rc = 1;
	}
	free(txt);
	if (tmp)
		unlink(pre);
	free(pre);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {{"stat", no_argument, 0, 's'},
					   {"name-only", no_argument, 0, 'n'},
					   {"help", no_argument, 0, 'h'},
					   {"version", no_argument, 0, 256}, {0, 0, 0, 0}};
	int mode = OUT_FULL, ch;
	/* JOURNAL, then paths after "--".  Options come first ("+": no permutation), so
	 * the index of the first "--" tells the journal from the paths even when getopt
	 * consumed it. */
	int dd = argc;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			dd = i;
			break;
		}
	while ((ch = getopt_long(argc, argv, "+h", lo, NULL)) != -1) {
		switch (ch) {
		case 's': mode = OUT_STAT; break;
		case 'n': mode = OUT_NAMES; break;
		case 'h': usage(stdout); return 0;
		case 256: bbx_tool_version("bbx-diff"); return 0;
		default: usage(stderr); return 2;
		}
	}
	const char *jarg = NULL;
	int nj = dd > optind ? dd - optind : 0;
	if (nj > 1) {
		usage(stderr);
		return 2;
	}
	if (nj == 1)
		jarg = argv[optind];
	int fstart = dd < argc ? dd + 1 : argc;
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof cwd))
		cwd[0] = 0;
	for (int i = fstart; i < argc; i++) {
		filters = realloc(filters, (nfilters + 1) * sizeof *filters);
		if (!filters)
			err(1, "realloc");
		char *f;
		if (argv[i][0] == '/' || !argv[i][0])
			f = strdup(argv[i]);
		else if (asprintf(&f, "%s/%s", cwd, argv[i]) < 0)
			f = NULL;
		if (!f)
			err(1, "strdup");
		size_t l = strlen(f);
		while (l > 1 && f[l - 1] == '/')
			f[--l] = 0;
		filters[nfilters++] = f;
	}

	bbx_tool_journal(jarg, jdir, sizeof jdir);
	char jp[PATH_MAX + 16];
	snprintf(jp, sizeof jp, "%s/journal", jdir);
	struct bbx_reader rd;
	int rc = bbx_reader_open(&rd, jp);
	if (rc)
		errx(1, "%s: %s", jp, strerror(-rc));
	struct bbx_rec r;
	while (bbx_reader_next(&rd, &r, NULL) == BBX_READ_OK)
		if (r.type == BBX_REC_RESULT && r.has_ref && (r.err || (r.has_ret && r.ret < 0))) {
			if (FAIL.n == FAIL.cap) {
				FAIL.cap = FAIL.cap ? 2 * FAIL.cap : 64;
				FAIL.seqs = realloc(FAIL.seqs, FAIL.cap * sizeof *FAIL.seqs);
				if (!FAIL.seqs)
					err(1, "realloc");
			}
			FAIL.seqs[FAIL.n++] = r.ref;
		}
	if (FAIL.n) /* qsort(NULL, 0, ...) is undefined */
		qsort(FAIL.seqs, FAIL.n, sizeof *FAIL.seqs, cmp_u64);
	rd.off = 0;
	int st;
	while ((st = bbx_reader_next(&rd, &r, NULL)) == BBX_READ_OK)
		walk(&r);
	if (st == BBX_READ_TORN)
		warnx("%s: torn tail at offset %zu (the end of the log)", jp, rd.torn_off);

	/* Where did each origin go? */
	size_t *where = calloc(nO + 1, sizeof *where); /* origin -> index + 1 into cur.keys */
	if (!where)
		err(1, "calloc");
	for (size_t i = 0; i < cur.cap; i++)
		if (cur.keys[i] && cur.vals[i] && cur.vals[i] != NEW) {
			size_t o = cur.vals[i] - 1;
			/* prefer the origin's own name if it is still there */
			if (!where[o] || !strcmp(cur.keys[i], O[o].path))
				where[o] = i + 1;
		}
	for (size_t o = 0; o < nO; o++) {
		struct origin *g = &O[o];
		struct stat s;
		if (where[o]) {
			const char *at = cur.keys[where[o] - 1];
			if (lstat(at, &s)) {
				add('D', g->path, NULL, g);
			} else if (strcmp(at, g->path)) {
				add('R', at, g->path, g);
			} else {
				bool mchg = g->mode && (s.st_mode & 07777) != (g->mode & 07777);
				if ((g->changed || mchg) && !unchanged(g, g->path, &s))
					add('M', g->path, NULL, g);
			}
		} else if (cur_get(g->path) == NEW && lstat(g->path, &s) == 0) {
			if (!unchanged(g, g->path, &s))
				add('M', g->path, NULL, g); /* replaced: sed -i, an editor's save */
		} else {
			add('D', g->path, NULL, g);
		}
	}
	for (size_t i = 0; i < cur.cap; i++) {
		if (!cur.keys[i] || cur.vals[i] != NEW)
			continue;
		const char *p = cur.keys[i];
		size_t *sv = bbx_pathmap_get(&start, p);
		struct stat s;
		if (sv && *sv)
			continue; /* existed before: reported above as M (or R + A below) */
		if (lstat(p, &s) == 0)
			add('A', p, NULL, NULL);
	}
	/* a name that existed, was renamed away, and holds something new now */
	for (size_t o = 0; o < nO; o++) {
		struct stat s;
		if (where[o] && strcmp(cur.keys[where[o] - 1], O[o].path) && cur_get(O[o].path) == NEW &&
		    lstat(O[o].path, &s) == 0)
			add('A', O[o].path, NULL, NULL);
	}
	free(where);
	if (nCH)
		qsort(CH, nCH, sizeof *CH, by_path);

	int ret = 0;
	long adds = 0, dels = 0;
	for (size_t i = 0; i < nCH; i++) {
		const struct change *c = &CH[i];
		if (mode == OUT_NAMES) {
			printf("%s\n", c->path);
			continue;
		}
		if (mode == OUT_FULL) {
			if (c->st == 'R')
				printf("R %s -> %s\n", c->from, c->path);
			else
				printf("%c %s\n", c->st, c->path);
		}
	}
	if (mode != OUT_NAMES)
		for (size_t i = 0; i < nCH; i++) {
			if (mode == OUT_FULL && i == 0)
				putchar('\n');
			ret |= show(&CH[i], mode, &adds, &dels);
		}
	if (mode == OUT_STAT)
		printf(" %zu path%s changed, %ld insertion%s(+), %ld deletion%s(-)\n", nCH,
		       nCH == 1 ? "" : "s", adds, adds == 1 ? "" : "s", dels, dels == 1 ? "" : "s");
	bbx_reader_close(&rd);
	if (fflush(stdout) || ferror(stdout))
		ret = 1;
	return ret;
}
