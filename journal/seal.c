/* SPDX-License-Identifier: MIT
 *
 * seal.c - the run's closing records: for every path the journal touched, its state at
 * the end of the run (FINAL), then SEAL.  bbx-undo compares FINAL with what it finds
 * to tell the run's own changes from later ones by someone else (conflicts).  ctime is
 * the witness: any change to an inode's content or metadata moves it, and no program
 * can set it back.
 */
#include "capture.h"
#include "pathmap.h"
#include "run.h"
#include "undo.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* The records that name a path the run touched: only these are decoded whole when the
 * journal is read for the seal (bbx_rec_decode_types). */
#define TOUCHING_TYPES                                                                      \
	(1u << BBX_REC_CREATE | 1u << BBX_REC_PRESERVE | 1u << BBX_REC_SIZE |                  \
	 1u << BBX_REC_RMDIR | 1u << BBX_REC_RENAME | 1u << BBX_REC_META)

static int touched(const struct bbx_rec *r)
{
	if (r->type < 0 || r->type >= 32 || !(TOUCHING_TYPES >> r->type & 1))
		return 0;
	return r->type != BBX_REC_CREATE || r->kind != BBX_KIND_ANON;
}

/* Files the run's remaining processes held open for writing when its command ended
 * (bbx_seal_run's held), sorted by device and inode, and the FINAL paths found to be
 * one of them: each gets a NOTE after the FINAL records (undo.c, conflicts_phase). */
struct held_set {
	const struct bbx_held *f;
	size_t n;
	struct held_note {
		char *path;
		const struct bbx_held *by;
	} *notes;
	size_t nnotes, cap;
	int failed; /* no memory for a note: the seal fails rather than drop it */
};

static int held_cmp(const void *a, const void *b)
{
	const struct bbx_held *x = a, *y = b;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static void held_check(struct held_set *h, const char *path, const struct stat *sb)
{
	struct bbx_held key = {.dev = sb->st_dev, .ino = sb->st_ino};
	const struct bbx_held *by = bsearch(&key, h->f, h->n, sizeof *h->f, held_cmp);
	if (!by || !S_ISREG(sb->st_mode))
		return;
	if (h->nnotes == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 16;
		struct held_note *n = realloc(h->notes, cap * sizeof *n);
		if (!n) {
			h->failed = 1;
			return;
		}
		h->notes = n;
		h->cap = cap;
	}
	char *c = strdup(path);
	if (!c) {
		h->failed = 1;
		return;
	}
	h->notes[h->nnotes++] = (struct held_note){.path = c, .by = by};
}

static int emit_final(struct bbx_run *run, struct bbx_run_batch *b, struct held_set *h,
		      const char *path, int ret, const struct stat *sb)
{
	if (h && h->n && ret == 0)
		held_check(h, path, sb);
	uint8_t buf[PATH_MAX + 512];
	struct bbx_enc e;
	bbx_enc_begin(&e, buf, sizeof buf, BBX_REC_FINAL);
	bbx_enc_str(&e, BBX_T_OP, "seal");
	bbx_enc_str(&e, BBX_T_PATH, path);
	if (ret == 0) {
		struct bbx_stat s;
		bbx_stat_from(&s, sb);
		bbx_enc_u32(&e, BBX_T_KIND, (uint32_t)bbx_kind_of_mode(sb->st_mode));
		bbx_enc_stat(&e, &s);
	} else {
		bbx_enc_u32(&e, BBX_T_KIND, BBX_KIND_NONE);
	}
	return bbx_run_batch_add(run, b, &e, bbx_state_next_seq(run->st));
}

/* The directory part of an absolute path p: its length (1 for "/x"), or 0 when p has
 * none to open (relative, or ending in '/'). */
static size_t dir_len(const char *p)
{
	const char *slash = strrchr(p, '/');
	if (p[0] != '/' || !slash || !slash[1])
		return 0;
	return slash == p ? 1 : (size_t)(slash - p);
}

/* The directories paths are stated relative to, open (O_PATH), in a table indexed by a
 * hash of the name: one open per directory for the whole seal, whatever the order its
 * paths come in - git's objects name 256 shard directories in turn (a tmp_obj and the
 * object it became, then the next object's shard), which a few ways in least recently
 * used order missed every time (an open and a close per object: 5,661 of each for a
 * git add of a node_modules).  The table is set-associative (a set of 4 slots per
 * hash); a new directory takes its set's least recently used slot and closes its
 * occupant, so no more than DIR_SLOTS descriptors are held.  Directories found not
 * there (ENOENT, ENOTDIR), nor anything in or below them, are kept apart, a few in least
 * recently used order: a tree removed (rm -rf) is walked depth first, its paths in runs
 * that its subdirectories interrupt. */
#define DIR_SETS 128 /* of DIR_ASSOC slots each, chosen by the hash */
#define DIR_ASSOC 4
#define DIR_SLOTS (DIR_SETS * DIR_ASSOC)
#define DIR_WAYS 16
struct dir_slot {
	uint64_t hash, used;
	char *dir; /* NULL: empty */
	size_t len;
	int fd;
};
struct dir_gone_ent {
	char dir[PATH_MAX];
	size_t len; /* 0: unused */
	uint64_t used;
};
struct dir_cache {
	struct dir_slot slot[DIR_SLOTS];
	struct dir_gone_ent e[DIR_WAYS];
	uint64_t clock;
	size_t free_answers; /* paths answered absent by e[], without a system call */
};

static void dir_cache_init(struct dir_cache *c)
{
	for (int k = 0; k < DIR_SLOTS; k++)
		c->slot[k].dir = NULL;
	for (int k = 0; k < DIR_WAYS; k++)
		c->e[k].len = 0;
	c->clock = 0;
	c->free_answers = 0;
}

static void dir_cache_close(struct dir_cache *c)
{
	for (int k = 0; k < DIR_SLOTS; k++)
		if (c->slot[k].dir) {
			close(c->slot[k].fd);
			free(c->slot[k].dir);
		}
}

/* FNV-1a of the directory's name. */
static uint64_t dir_hash(const char *d, size_t l)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t k = 0; k < l; k++)
		h = (h ^ (unsigned char)d[k]) * 0x100000001b3ull;
	return h;
}

/* d (length l) is not there: so is nothing below its highest ancestor that is not
 * there either, found by an lstat of each parent up to the first one present (one
 * more call per tree removed, after which none of its paths costs one: rm -rf). */
static void dir_gone(struct dir_cache *c, const char *d, size_t l)
{
	char up[PATH_MAX];
	memcpy(up, d, l);
	up[l] = 0;
	for (;;) {
		char *slash = strrchr(up, '/');
		struct stat sb;
		if (!slash || slash == up)
			break;
		*slash = 0;
		if (lstat(up, &sb) == 0 || (errno != ENOENT && errno != ENOTDIR)) {
			*slash = '/';
			break;
		}
	}
	struct dir_gone_ent *v = &c->e[0];
	for (int k = 1; k < DIR_WAYS && v->len; k++)
		if (!c->e[k].len || c->e[k].used < v->used)
			v = &c->e[k];
	v->len = strlen(up);
	memcpy(v->dir, up, v->len + 1);
	v->used = ++c->clock;
}

/* lstat of ps[i], relative to its directory when that is open in the cache, or when
 * the next path is in the same directory (then opened, once for the seal): one
 * component walked per path instead of all of them.  A path alone in its directory is
 * stated as it is, with no open around it.  The walk to the directory follows symlinks
 * as lstat's own would; a directory that is not there, or below one that is not, makes
 * its paths absent, as their lstat would; one that cannot be opened for another reason
 * (no descriptor left, say) leaves each path to its own lstat. */
static int stat_final(struct dir_cache *c, const char *const *ps, size_t n, size_t i,
		      struct stat *sb)
{
	const char *p = ps[i];
	size_t l = dir_len(p);
	if (!l || l >= PATH_MAX)
		return lstat(p, sb);
	const char *name = p + l + (l > 1);
	uint64_t h = dir_hash(p, l);
	struct dir_slot *set = &c->slot[(h % DIR_SETS) * DIR_ASSOC], *s = set;
	for (int k = 0; k < DIR_ASSOC; k++) {
		struct dir_slot *t = &set[k];
		if (t->dir && t->hash == h && t->len == l && !memcmp(t->dir, p, l)) {
			t->used = ++c->clock;
			return fstatat(t->fd, name, sb, AT_SYMLINK_NOFOLLOW);
		}
		if (s->dir && (!t->dir || t->used < s->used))
			s = t; /* the slot a miss takes: empty, else least recently used */
	}
	for (int k = 0; k < DIR_WAYS; k++) {
		struct dir_gone_ent *e = &c->e[k];
		if (e->len && e->len <= l && !memcmp(e->dir, p, e->len) &&
		    (e->len == l || p[e->len] == '/')) {
			e->used = ++c->clock;
			c->free_answers++;
			return -1; /* in or below a directory that is not there */
		}
	}
	if (i + 1 >= n || dir_len(ps[i + 1]) != l || memcmp(ps[i + 1], p, l))
		return lstat(p, sb);
	char *d = malloc(l + 1);
	if (!d)
		return lstat(p, sb);
	memcpy(d, p, l);
	d[l] = 0;
	int fd = open(d, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (e == ENOENT || e == ENOTDIR)
			dir_gone(c, d, l);
		free(d);
		return e == ENOENT || e == ENOTDIR ? -1 : lstat(p, sb); /* EMFILE...: ask lstat */
	}
	if (s->dir) {
		close(s->fd);
		free(s->dir);
	}
	*s = (struct dir_slot){.hash = h, .used = ++c->clock, .dir = d, .len = l, .fd = fd};
	return fstatat(fd, name, sb, AT_SYMLINK_NOFOLLOW);
}

/* The lstat calls are most of a large seal: a git add of a node_modules names 14,939
 * paths, and their fstatat took about 40 of the seal's 60 ms on the session-37 VM (2
 * CPUs, tmpfs; the journal's read 11, the records 5).  Nothing else runs then (the
 * command has ended), so when this process may run on more than one CPU (its
 * affinity) a helper thread shares them.  The paths go in blocks of SEAL_BLOCK.  The
 * first SEAL_PROBE of a block are stated and written here one by one; if most of them
 * needed a system call, the rest of the block is stated by both threads, in chunks of
 * SEAL_CHUNK taken in turn from a shared cursor (each thread with a directory table of
 * its own), and then written here in order.  Paths in or below a directory found
 * removed need no call (dir_gone): a run that deleted what it made (rm -rf) is stated
 * in a few ms, which a thread would only slow (its start, its own discovery of the
 * removed directories: +2.9 ms on 14,939 such paths, measured).  The FINAL records are
 * the same, in the same order, as one thread's.  The helper starts with every signal
 * blocked: bbx-run's handlers stay in the thread they were written for.  Two tables
 * may hold twice DIR_SLOTS descriptors; past the process's limit a path is stated by
 * its whole name, as before (EMFILE). */
#define SEAL_BLOCK 8192
#define SEAL_PROBE 256
#define SEAL_CHUNK 64
#define SEAL_PAR_MIN 1024 /* fewer paths left in the block: no thread */
struct fin {
	struct stat sb;
	int ret;
};
struct block {
	const char *const *ps;
	size_t n, lo, hi;
	size_t next; /* the next chunk's first index (atomic) */
	struct fin *out; /* out[i - lo] for path i */
	struct dir_cache *helper_dc;
};

static void stat_chunks(struct block *b, struct dir_cache *dc)
{
	for (;;) {
		size_t i = __atomic_fetch_add(&b->next, SEAL_CHUNK, __ATOMIC_RELAXED);
		if (i >= b->hi)
			return;
		size_t end = b->hi - i > SEAL_CHUNK ? i + SEAL_CHUNK : b->hi;
		for (; i < end; i++)
			b->out[i - b->lo].ret = stat_final(dc, b->ps, b->n, i, &b->out[i - b->lo].sb);
	}
}

static void *helper(void *arg)
{
	struct block *b = arg;
	stat_chunks(b, b->helper_dc);
	return NULL;
}

static int start_helper(pthread_t *t, struct block *b)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(t, NULL, helper, b);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/* The CPUs this process may run on (its affinity, which taskset and cgroups' cpusets
 * narrow; nproc(1) counts the same), 1 when unknown. */
static int cpus_usable(void)
{
	cpu_set_t set;
	return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
}

/* The helper's directory table and the results' pages (populated in one call, not
 * faulted in one by one), made on first need; 0 when either cannot be. */
static int helper_ready(struct dir_cache **hc, struct fin **out, size_t outlen)
{
	if (!*hc && (*hc = malloc(sizeof **hc)))
		dir_cache_init(*hc);
	if (!*out) {
		void *m = mmap(NULL, outlen, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		*out = m == MAP_FAILED ? NULL : m;
	}
	return *hc && *out;
}

/* FINAL records for ps[from..to), stated and written one by one by this thread. */
static int one_by_one(struct bbx_run *run, struct bbx_run_batch *batch, struct held_set *h,
		      struct dir_cache *dc, const char *const *ps, size_t n, size_t from, size_t to)
{
	int rc = 0;
	for (size_t i = from; rc == 0 && i < to; i++) {
		struct stat sb;
		int ret = stat_final(dc, ps, n, i, &sb);
		rc = emit_final(run, batch, h, ps[i], ret, &sb);
	}
	return rc;
}

/* The process's descriptor table grown, now, to the size the two directory tables can
 * fill (within RLIMIT_NOFILE): by one descriptor duplicated that high and closed.  The
 * kernel grows the table as descriptors are opened past it (64, 128, 256, 512, 1024
 * entries), and while another thread shares the table each growth waits for an RCU
 * grace period (fs/file.c, expand_fdtable: synchronize_rcu), several ms each in this
 * VM: with the helper running, the seal of a `cp -r` of 6,525 files took 35-47 ms,
 * 9-12 ms with the table grown before (bench/sealtime; issue 5).  Grown while this
 * thread is alone, it costs one allocation.  Failure only leaves the table to grow as
 * it did. */
static void fd_table_room(void)
{
	struct rlimit rl;
	long want = 2 * DIR_SLOTS + 64;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    (rlim_t)want >= rl.rlim_cur)
		want = (long)rl.rlim_cur - 1;
	int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (want > fd) {
		int hi = fcntl(fd, F_DUPFD_CLOEXEC, (int)want);
		if (hi >= 0)
			close(hi);
	}
	close(fd);
}

/* One FINAL for each of ps[0..n), in order. */
static int finals(struct bbx_run *run, struct bbx_run_batch *batch, struct held_set *h,
		  const char *const *ps, size_t n)
{
	struct dir_cache *dc = malloc(sizeof *dc), *hc = NULL;
	struct fin *out = NULL;
	size_t outlen = (n < SEAL_BLOCK ? n : SEAL_BLOCK) * sizeof *out;
	int two = n >= SEAL_PROBE + SEAL_PAR_MIN && cpus_usable() > 1;
	if (!dc)
		return -ENOMEM;
	if (two) /* before the helper can share the table */
		fd_table_room();
	dir_cache_init(dc);
	int rc = 0;
	for (size_t lo = 0; rc == 0 && lo < n; lo += SEAL_BLOCK) {
		size_t hi = n - lo > SEAL_BLOCK ? lo + SEAL_BLOCK : n, mid = lo;
		pthread_t t;
		struct block b;
		if (two && hi - lo >= SEAL_PROBE + SEAL_PAR_MIN) {
			size_t free0 = dc->free_answers;
			mid = lo + SEAL_PROBE;
			rc = one_by_one(run, batch, h, dc, ps, n, lo, mid);
			if (rc == 0 && dc->free_answers - free0 < SEAL_PROBE / 2 &&
			    (two = helper_ready(&hc, &out, outlen))) {
				b = (struct block){.ps = ps, .n = n, .lo = mid, .hi = hi, .next = mid,
						   .out = out, .helper_dc = hc};
				if (start_helper(&t, &b) == 0) {
					stat_chunks(&b, dc);
					pthread_join(t, NULL);
					for (size_t i = mid; rc == 0 && i < hi; i++)
						rc = emit_final(run, batch, h, ps[i],
								out[i - mid].ret, &out[i - mid].sb);
					continue;
				}
			}
		}
		if (rc == 0)
			rc = one_by_one(run, batch, h, dc, ps, n, mid, hi);
	}
	dir_cache_close(dc);
	free(dc);
	if (hc) {
		dir_cache_close(hc);
		free(hc);
	}
	if (out)
		munmap(out, outlen);
	return rc;
}

/* The chain head right after SEAL, and how many records and bytes it covers, go into
 * meta: a journal cut short, or a record changed, no longer leads to this head
 * (bbx_verify).  Stragglers may chain more records after it. */
static int seal_meta(const char *dir, uint64_t seq, const struct bbx_chain_pos *pos)
{
	char v[32];
	int rc;
	snprintf(v, sizeof v, "%016llx", (unsigned long long)pos->chain);
	if ((rc = bbx_run_meta_append(dir, "sealed_chain", v)))
		return rc;
	snprintf(v, sizeof v, "%llu", (unsigned long long)pos->count);
	if ((rc = bbx_run_meta_append(dir, "sealed_count", v)))
		return rc;
	snprintf(v, sizeof v, "%llu", (unsigned long long)pos->end);
	if ((rc = bbx_run_meta_append(dir, "sealed_end", v)))
		return rc;
	snprintf(v, sizeof v, "%llu", (unsigned long long)seq);
	return bbx_run_meta_append(dir, "sealed_seq", v);
}

int bbx_seal(const char *dir, size_t *npaths)
{
	struct bbx_run run;
	int rc = bbx_run_open(&run, dir);
	if (rc)
		return rc;
	rc = bbx_seal_run(&run, dir, npaths, NULL, NULL, 0);
	bbx_run_close(&run);
	return rc;
}

/* The seal's first pass: the paths the records name, once each, in the order the journal
 * first names them (so that each lstat can see the next path's directory).  Keys and ps
 * point into memory that outlives the map: the reader's mapping, or the prescan's
 * arena. */
struct collect {
	struct bbx_pathmap m;
	const char **ps;
	size_t n, cap;
};

/* Adds rec's paths; stores each new one through keep (NULL: rec's own strings stay
 * valid).  0 or -ENOMEM. */
static int collect_rec(struct collect *c, const struct bbx_rec *rec,
		       const char *(*keep)(void *, const char *), void *kp)
{
	if (!touched(rec))
		return 0;
	const char *two[2] = {rec->path, rec->type == BBX_REC_RENAME ? rec->path2 : NULL};
	for (int i = 0; i < 2; i++) {
		if (!two[i])
			continue;
		if (keep && bbx_pathmap_get(&c->m, two[i]))
			continue;
		const char *k = keep ? keep(kp, two[i]) : two[i];
		size_t *slot;
		int ins = k ? bbx_pathmap_put(&c->m, k, &slot) : -ENOMEM;
		if (ins < 0)
			return ins;
		if (ins == 0)
			continue;
		if (c->n == c->cap) {
			size_t nc = c->cap ? 2 * c->cap : 1024;
			const char **g = realloc(c->ps, nc * sizeof *g);
			if (!g)
				return -ENOMEM;
			c->ps = g;
			c->cap = nc;
		}
		c->ps[c->n++] = k;
	}
	return 0;
}

static void collect_free(struct collect *c)
{
	free(c->ps);
	bbx_pathmap_free(&c->m);
	memset(c, 0, sizeof *c);
}

/* The prescan (undo.h).  It reads the journal with pread, never through a mapping: a
 * program of the run can truncate the journal under it (its descriptor is open for
 * writing in every process), which a mapping answers with SIGBUS.  The paths it keeps
 * are copied into an arena of chunks that never move. */
#define PRE_BUF ((size_t)256 << 10)
#define PRE_CHUNK ((size_t)64 << 10)
struct arena_chunk {
	struct arena_chunk *next;
	size_t used;
	char data[];
};
struct bbx_seal_pre {
	const struct bbx_state *st;
	int fd;
	uint8_t *buf;
	size_t bufcap;
	size_t off;  /* the journal bytes taken: whole records, back to back from 0 */
	int done;    /* stopped for good at off: a record it does not take (damaged: the
		      * seal's reader decides about it), or a read error */
	int failed;  /* the collection is incomplete (no memory): the seal discards it */
	struct collect c;
	struct arena_chunk *arena;
};

static const char *arena_keep(void *arg, const char *s)
{
	struct bbx_seal_pre *p = arg;
	size_t l = strlen(s) + 1;
	struct arena_chunk *a = p->arena;
	if (!a || a->used + l > PRE_CHUNK) {
		size_t sz = l > PRE_CHUNK ? l : PRE_CHUNK;
		struct arena_chunk *b = malloc(sizeof *b + sz);
		if (!b)
			return NULL;
		b->next = a;
		b->used = 0;
		p->arena = a = b;
	}
	char *d = a->data + a->used;
	memcpy(d, s, l);
	a->used += l;
	return d;
}

struct bbx_seal_pre *bbx_seal_pre_new(struct bbx_run *run, const char *dir)
{
	if (!run->st || cpus_usable() < 2)
		return NULL;
	struct bbx_seal_pre *p = calloc(1, sizeof *p);
	char jp[PATH_MAX + 16];
	snprintf(jp, sizeof jp, "%s/journal", dir);
	if (p && (p->fd = open(jp, O_RDONLY | O_CLOEXEC)) >= 0) {
		p->st = run->st;
		return p;
	}
	free(p);
	return NULL;
}

/* Takes the whole records the writers have accounted for: the state's end, which moves
 * only after a record is in the file. */
void bbx_seal_pre_step(struct bbx_seal_pre *p)
{
	if (p->done || p->failed)
		return;
	if (!p->buf && !(p->buf = malloc(p->bufcap = PRE_BUF))) {
		p->failed = 1;
		return;
	}
	uint64_t end = __atomic_load_n(&p->st->end, __ATOMIC_ACQUIRE);
	while (p->off < end) {
		size_t want = end - p->off < p->bufcap ? (size_t)(end - p->off) : p->bufcap;
		ssize_t got = pread(p->fd, p->buf, want, (off_t)p->off);
		if (got <= 0) {
			p->done = got < 0; /* 0: the file shorter than end, cut (then the seal
					    * decides) or its last write not in yet */
			return;
		}
		size_t at = 0;
		struct bbx_rec rec;
		int rc;
		while ((rc = bbx_rec_decode_types(p->buf + at, (size_t)got - at, &rec,
						  TOUCHING_TYPES)) == 0) {
			if (collect_rec(&p->c, &rec, arena_keep, p)) {
				p->failed = 1;
				return;
			}
			at += rec.len;
			p->off += rec.len;
		}
		if (rc != -EAGAIN) {
			p->done = 1; /* damaged: the seal's reader resynchronises past it */
			return;
		}
		if (at == 0) {
			/* A record longer than the buffer, or one end does not cover yet
			 * (its length is the header's third word, record.h). */
			uint32_t need = 0;
			if (got >= 12)
				memcpy(&need, p->buf + 8, sizeof need);
			need = le32toh(need);
			if ((size_t)got < want || need <= p->bufcap || need > BBX_REC_MAX_LEN)
				return;
			uint8_t *nb = realloc(p->buf, need);
			if (!nb) {
				p->done = 1;
				return;
			}
			p->buf = nb;
			p->bufcap = need;
		}
	}
}

size_t bbx_seal_pre_taken(const struct bbx_seal_pre *p)
{
	return p->off;
}

static void pre_free(struct bbx_seal_pre *p)
{
	collect_free(&p->c);
	while (p->arena) {
		struct arena_chunk *n = p->arena->next;
		free(p->arena);
		p->arena = n;
	}
	free(p->buf);
	close(p->fd);
	free(p);
}

void bbx_seal_mark(struct bbx_run *run)
{
	/* Stragglers note their changes from now on (capture.c, covered()): flag first,
	 * so a change racing with the FINAL records is either noted or already in them. */
	__atomic_fetch_or(&run->st->flags, BBX_STATE_SEALED, __ATOMIC_SEQ_CST);
}

/* One NOTE for each FINAL path a remaining process of the run held open for writing:
 * what it writes there after the seal is the run's, not a stranger's (8.1). */
static int held_notes(struct bbx_run *run, struct held_set *h)
{
	int rc = h->failed ? -ENOMEM : 0;
	for (size_t i = 0; i < h->nnotes; i++) {
		char text[128];
		snprintf(text, sizeof text,
			 "open for writing by pid %d (%s) when the run was sealed", (int)h->notes[i].by->pid,
			 h->notes[i].by->comm[0] ? h->notes[i].by->comm : "?");
		if (rc == 0)
			rc = bbx_cap_note(run, "seal", h->notes[i].path, text);
		free(h->notes[i].path);
	}
	free(h->notes);
	return rc;
}

int bbx_seal_run(struct bbx_run *run, const char *dir, size_t *npaths,
		 struct bbx_seal_pre *pre, const struct bbx_held *held, size_t nheld)
{
	if (pre && pre->failed) {
		pre_free(pre);
		pre = NULL;
	}
	char jp[PATH_MAX + 16];
	snprintf(jp, sizeof jp, "%s/journal", dir);
	struct bbx_reader r;
	int rc = bbx_reader_open_at(&r, jp, pre ? pre->off : 0);
	if (rc) {
		if (pre)
			pre_free(pre);
		return rc;
	}
	/* The FINAL records go out 64 KiB at a time, not with a write(2) each. */
	struct bbx_run_batch *batch = malloc(sizeof *batch);
	if (!batch) {
		bbx_reader_close(&r);
		if (pre)
			pre_free(pre);
		return -ENOMEM;
	}
	batch->len = 0;
	bbx_seal_mark(run);
	struct held_set hs = {0};
	struct bbx_held *sorted = NULL;
	if (nheld && (sorted = malloc(nheld * sizeof *sorted))) {
		memcpy(sorted, held, nheld * sizeof *sorted);
		qsort(sorted, nheld, sizeof *sorted, held_cmp);
		hs.f = sorted;
		hs.n = nheld;
	} else if (nheld) {
		hs.failed = 1;
	}
	/* One FINAL per path the run touched (15,000 for a git add of a node_modules):
	 * nothing in this process closes or replaces the writer's descriptor meanwhile, so
	 * it is verified once, not with an fstat and an fcntl before every record
	 * (writer.h, generation mode). */
	int gen_mode = bbx_writer_gen_mode;
	bbx_writer_gen_mode = 1;
	/* The prescan's paths first: what it took is the journal's first pre->off bytes,
	 * whole records, which the reader here starts after. */
	struct collect own = {0}, *c = pre ? &pre->c : &own;
	struct bbx_rec rec;
	r.types = TOUCHING_TYPES;
	while (rc == 0 && bbx_reader_next(&r, &rec, NULL) == BBX_READ_OK)
		rc = collect_rec(c, &rec, NULL, NULL);
	size_t n = c->n;
	if (rc == 0)
		rc = finals(run, batch, &hs, c->ps, n);
	collect_free(c);
	if (pre)
		pre_free(pre);
	if (rc == 0)
		rc = bbx_run_batch_flush(run, batch);
	free(batch);
	int hrc = held_notes(run, &hs);
	if (rc == 0)
		rc = hrc;
	free(sorted);
	if (rc == 0) {
		uint8_t buf[256];
		struct bbx_enc e;
		bbx_enc_begin(&e, buf, sizeof buf, BBX_REC_SEAL);
		bbx_enc_str(&e, BBX_T_OP, "seal");
		bbx_enc_u64(&e, BBX_T_COUNT, n);
		uint64_t seq = bbx_state_next_seq(run->st);
		rc = bbx_run_emit(run, &e, seq);
		if (rc == 0)
			rc = seal_meta(dir, seq, &bbx_run_last_pos);
		/* [journal] sync: the seal, and the chain head in meta, durable too. */
		if (rc == 0 && bbx_run_sync_mode(run) != BBX_SYNC_OFF) {
			char mp[PATH_MAX + 16];
			snprintf(mp, sizeof mp, "%s/meta", dir);
			rc = bbx_writer_sync(&run->w);
			if (rc == 0)
				rc = bbx_run_fsync_path(mp);
		}
	}
	bbx_writer_gen_mode = gen_mode;
	bbx_reader_close(&r);
	if (npaths)
		*npaths = n;
	return rc;
}
