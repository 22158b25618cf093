/* SPDX-License-Identifier: MIT
 *
 * verify.c - journal integrity check (see verify.h, doc/journal-format.md 7.4).
 *
 * Two passes over the mapped journal.  The first splits the file into slots: valid
 * records, damaged records whose length is still plausible (bad checksum or fields),
 * damaged byte ranges, and a torn tail.  The second checks the hash chain in file
 * order, the sequence numbers, the seal recorded in meta, and the objects named by
 * PRESERVE records.  It only reads: a verify never changes the journal directory.
 */
#include "verify.h"
#include "journal/record.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

enum slot_kind { S_OK, S_BADREC, S_BADBYTES, S_TORN };

struct slot {
	enum slot_kind kind;
	size_t off, len;
	uint64_t seq, trailer, chain;
	bool has_chain;
	int type, pid;
};

struct finding {
	bool problem, has_off, has_seq;
	size_t off;
	uint64_t seq;
	const char *what; /* short class for JSON: "chain", "checksum", "seq", ... */
	char msg[PATH_MAX + 256];
};

struct vctx {
	const char *dir;
	const uint8_t *map;
	size_t size;
	struct slot *s;
	size_t ns, cap;
	struct finding *f;
	size_t nf, fcap, nproblems;
	int oom;
};

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void add_slot(struct vctx *c, const struct slot *s)
{
	if (c->ns == c->cap) {
		size_t n = c->cap ? 2 * c->cap : 256;
		struct slot *p = realloc(c->s, n * sizeof *p);
		if (!p) {
			c->oom = 1;
			return;
		}
		c->s = p;
		c->cap = n;
	}
	c->s[c->ns++] = *s;
}

static struct finding *add(struct vctx *c, bool problem, const char *what, const struct slot *s,
			   bool with_seq)
{
	static struct finding dummy;
	if (c->nf == c->fcap) {
		size_t n = c->fcap ? 2 * c->fcap : 64;
		struct finding *p = realloc(c->f, n * sizeof *p);
		if (!p) {
			c->oom = 1;
			return &dummy;
		}
		c->f = p;
		c->fcap = n;
	}
	struct finding *f = &c->f[c->nf++];
	memset(f, 0, sizeof *f);
	f->problem = problem;
	f->what = what;
	if (s) {
		f->has_off = true;
		f->off = s->off;
		f->has_seq = with_seq;
		f->seq = s->seq;
	}
	if (problem)
		c->nproblems++;
	return f;
}

#define FMT(f, ...) snprintf((f)->msg, sizeof (f)->msg, __VA_ARGS__)

/* Is there a valid record at o? */
static int valid_at(const struct vctx *c, size_t o, struct bbx_rec *r)
{
	return bbx_rec_decode(c->map + o, c->size - o, r) == 0;
}

/* The next offset after o where a valid record starts, or size. */
static size_t resync(const struct vctx *c, size_t o)
{
	struct bbx_rec r;
	for (size_t p = o + 1; p + BBX_REC_MIN_LEN <= c->size; p++)
		if (get32(c->map + p) == BBX_REC_MAGIC && valid_at(c, p, &r))
			return p;
	return c->size;
}

/* Pass 1: split the file into slots. */
static void split(struct vctx *c)
{
	size_t o = 0;
	while (o < c->size && !c->oom) {
		struct bbx_rec r;
		struct slot s = {.off = o};
		int rc = bbx_rec_decode(c->map + o, c->size - o, &r);
		if (rc == 0) {
			s.kind = S_OK;
			s.len = r.len;
			s.seq = r.h.seq;
			s.trailer = get64(c->map + o + r.len - BBX_REC_TRAILER_LEN);
			s.chain = r.chain;
			s.has_chain = r.has_chain;
			s.type = r.type;
			s.pid = r.h.pid;
			add_slot(c, &s);
			o += r.len;
			continue;
		}
		size_t next = resync(c, o);
		const uint8_t *p = c->map + o;
		uint32_t len = c->size - o >= 16 ? get32(p + 8) : 0;
		bool plausible = c->size - o >= BBX_REC_MIN_LEN && get32(p) == BBX_REC_MAGIC &&
				 len >= BBX_REC_MIN_LEN && len <= BBX_REC_MAX_LEN;
		if (next == c->size && (rc == -EAGAIN || !plausible || o + len > c->size)) {
			/* Nothing valid follows: an incomplete last record, the end of the log. */
			s.kind = S_TORN;
			s.len = c->size - o;
			add_slot(c, &s);
			return;
		}
		if (plausible && o + len <= next) {
			/* The length still points at the next valid record (or before it): a
			 * damaged record in place.  Its stored trailer is what the next one
			 * chains to, if only its body was hit. */
			s.kind = S_BADREC;
			s.len = len;
			s.seq = get64(p + 16);
			s.trailer = get64(p + len - BBX_REC_TRAILER_LEN);
			s.type = (int)(p[6] | p[7] << 8);
			add_slot(c, &s);
			o += len;
			if (o < next) {
				struct slot b = {.kind = S_BADBYTES, .off = o, .len = next - o};
				add_slot(c, &b);
			}
		} else {
			s.kind = S_BADBYTES;
			s.len = next - o;
			add_slot(c, &s);
		}
		o = next;
	}
}

static const struct slot *by_trailer(const struct vctx *c, uint64_t t, size_t not)
{
	for (size_t i = 0; i < c->ns; i++)
		if (i != not && c->s[i].kind != S_BADBYTES && c->s[i].kind != S_TORN &&
		    c->s[i].trailer == t)
			return &c->s[i];
	return NULL;
}

static void check_chain(struct vctx *c, bool *chained)
{
	uint64_t expect = 0;
	size_t hints = 0;
	*chained = c->ns > 0 && c->s[0].kind == S_OK && c->s[0].has_chain;
	if (c->ns > 0 && c->s[0].kind == S_OK && !c->s[0].has_chain) {
		struct finding *f = add(c, false, "chain", NULL, false);
		FMT(f, "journal: no hash chain (written before CHAIN fields existed): chain not checked");
	}
	for (size_t i = 0; i < c->ns && !c->oom; i++) {
		struct slot *s = &c->s[i];
		if (s->kind == S_BADBYTES) {
			struct finding *f = add(c, true, "damaged", s, false);
			FMT(f, "journal:%zu: %zu damaged bytes (no valid record until offset %zu)",
			    s->off, s->len, s->off + s->len);
			continue;
		}
		if (s->kind == S_TORN)
			continue; /* reported with the seal */
		if (s->kind == S_BADREC) {
			const uint8_t *p = c->map + s->off;
			uint64_t h = XXH64(p, s->len - BBX_REC_TRAILER_LEN, 0);
			struct finding *f = add(c, true, "checksum", s, true);
			if (h != s->trailer)
				FMT(f, "journal:%zu: seq %" PRIu64 ": checksum mismatch (computed %016" PRIx64
				    ", record says %016" PRIx64 ")", s->off, s->seq, h, s->trailer);
			else
				FMT(f, "journal:%zu: seq %" PRIu64 ": malformed record (field layout)",
				    s->off, s->seq);
			expect = s->trailer;
			continue;
		}
		if (*chained && !s->has_chain) {
			struct finding *f = add(c, true, "chain", s, true);
			FMT(f, "journal:%zu: seq %" PRIu64 ": no CHAIN field", s->off, s->seq);
		} else if (*chained && s->chain != expect) {
			struct finding *f = add(c, true, "chain", s, true);
			int n = FMT(f, "journal:%zu: seq %" PRIu64 ": chain mismatch (expected %016" PRIx64
				    ", record says %016" PRIx64 ")", s->off, s->seq, expect, s->chain);
			const struct slot *o = hints++ < 200 ? by_trailer(c, s->chain, i) : NULL;
			if (n > 0 && (size_t)n < sizeof f->msg && o)
				snprintf(f->msg + n, sizeof f->msg - (size_t)n,
					 ": it follows seq %" PRIu64 " at offset %zu%s", o->seq, o->off,
					 o->off > s->off ? " (moved)" : "");
			else if (n > 0 && (size_t)n < sizeof f->msg && s->chain != 0 && hints <= 200)
				snprintf(f->msg + n, sizeof f->msg - (size_t)n,
					 ": the record it follows is missing or was changed");
		}
		expect = s->trailer;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void check_seqs(struct vctx *c)
{
	uint64_t *v = malloc((c->ns + 1) * sizeof *v);
	if (!v) {
		c->oom = 1;
		return;
	}
	size_t n = 0;
	for (size_t i = 0; i < c->ns; i++)
		if (c->s[i].kind == S_OK || c->s[i].kind == S_BADREC)
			v[n++] = c->s[i].seq;
	if (n)
		qsort(v, n, sizeof *v, cmp_u64);
	for (size_t i = 0; i < n; i++) {
		if (i > 0 && v[i] == v[i - 1]) {
			if (i > 1 && v[i - 1] == v[i - 2])
				continue;
			/* Name both places. */
			const struct slot *a = NULL, *b = NULL;
			for (size_t k = 0; k < c->ns; k++)
				if (c->s[k].kind == S_OK && c->s[k].seq == v[i]) {
					if (!a)
						a = &c->s[k];
					else if (!b)
						b = &c->s[k];
				}
			struct finding *f = add(c, true, "seq", b, true);
			FMT(f, "journal:%zu: seq %" PRIu64 ": repeated seq (also at offset %zu)",
			    b ? b->off : 0, v[i], a ? a->off : 0);
		}
		uint64_t lo = i == 0 ? 1 : v[i - 1] + 1;
		if (v[i] > lo) {
			struct finding *f = add(c, false, "gap", NULL, false);
			if (v[i] - lo == 1)
				FMT(f, "seq %" PRIu64 ": no record (allocated, never written: a capture that failed or was killed, unless the chain reports a deletion)", lo);
			else
				FMT(f, "seq %" PRIu64 "..%" PRIu64 ": no records (allocated, never written: captures that failed or were killed, unless the chain reports a deletion)", lo, v[i] - 1);
		}
	}
	free(v);
}

/* meta: a value, or NULL when absent.  Last occurrence wins. */
static bool meta_get(const char *dir, const char *key, char *out, size_t cap)
{
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s/meta", dir);
	FILE *f = fopen(p, "re");
	if (!f)
		return false;
	char line[PATH_MAX + 256];
	size_t kl = strlen(key);
	bool found = false;
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, key, kl) == 0 && line[kl] == '=') {
			line[strcspn(line, "\n")] = 0;
			snprintf(out, cap, "%s", line + kl + 1);
			found = true;
		}
	}
	fclose(f);
	return found;
}

struct sealinfo {
	bool sealed;
	uint64_t chain, count, end, seq;
	size_t after;
};

static void check_seal(struct vctx *c, struct sealinfo *si)
{
	char v[64], *end;
	memset(si, 0, sizeof *si);
	const char *keys[4] = {"sealed_chain", "sealed_count", "sealed_end", "sealed_seq"};
	uint64_t *dst[4] = {&si->chain, &si->count, &si->end, &si->seq};
	int have = 0;
	for (int k = 0; k < 4; k++) {
		if (!meta_get(c->dir, keys[k], v, sizeof v))
			continue;
		errno = 0;
		*dst[k] = strtoull(v, &end, k == 0 ? 16 : 10);
		if (errno || *end || end == v) {
			struct finding *f = add(c, true, "meta", NULL, false);
			FMT(f, "meta: %s=%s is not a number", keys[k], v);
			continue;
		}
		have++;
	}
	si->sealed = have == 4;
	const struct slot *torn = c->ns && c->s[c->ns - 1].kind == S_TORN ? &c->s[c->ns - 1] : NULL;
	if (!si->sealed) {
		struct finding *f = add(c, false, "seal", NULL, false);
		FMT(f, "meta: run not sealed (crashed, killed, or still running)%s",
		    have ? "; partial seal fields ignored" : "");
		if (torn) {
			f = add(c, false, "torn", torn, false);
			FMT(f, "journal:%zu: torn tail: %zu bytes of an incomplete last record",
			    torn->off, torn->len);
		}
		return;
	}
	if (c->size < si->end) {
		struct finding *f = add(c, true, "truncated", NULL, false);
		FMT(f, "journal: shorter than at the seal: meta says %" PRIu64
		    " bytes, the file has %zu (truncated, or records removed)", si->end, c->size);
	}
	/* The SEAL record: the one whose trailer is the sealed head (it survives records
	 * inserted or removed before it, which shift offsets); failing that, the record
	 * that ends at the sealed offset. */
	size_t seal = c->ns;
	for (size_t i = 0; i < c->ns && seal == c->ns; i++)
		if (c->s[i].kind == S_OK && c->s[i].type == BBX_REC_SEAL &&
		    c->s[i].trailer == si->chain)
			seal = i;
	if (seal == c->ns) {
		for (size_t i = 0; i < c->ns && seal == c->ns; i++)
			if ((c->s[i].kind == S_OK || c->s[i].kind == S_BADREC) &&
			    c->s[i].off + c->s[i].len == si->end)
				seal = i;
		if (seal < c->ns) {
			const struct slot *l = &c->s[seal];
			struct finding *f = add(c, true, "seal", l, true);
			FMT(f, "journal:%zu: seq %" PRIu64 ": sealed chain head mismatch (meta says %016" PRIx64
			    ", journal has %016" PRIx64 ")", l->off, l->seq, si->chain, l->trailer);
		} else if (c->size >= si->end) {
			struct finding *f = add(c, true, "seal", NULL, false);
			FMT(f, "meta: no record has the sealed chain head %016" PRIx64
			    " or ends at the sealed offset %" PRIu64, si->chain, si->end);
		}
	}
	size_t count = 0;
	for (size_t i = 0; i < c->ns; i++) {
		const struct slot *s = &c->s[i];
		bool before = seal < c->ns ? i <= seal : s->off + s->len <= si->end;
		if (s->kind == S_TORN) {
			struct finding *f = add(c, before, "torn", s, false);
			if (before)
				FMT(f, "journal:%zu: torn tail of %zu bytes before the seal was reached",
				    s->off, s->len);
			else
				FMT(f, "journal:%zu: torn tail after seal: %zu bytes (a straggler killed mid-write)",
				    s->off, s->len);
			continue;
		}
		if (s->kind == S_BADBYTES)
			continue;
		if (before) {
			count++;
		} else {
			si->after++;
			struct finding *f = add(c, false, "after-seal", s, true);
			FMT(f, "journal:%zu: seq %" PRIu64 ": after seal (%s by pid %d)", s->off, s->seq,
			    bbx_rec_type_name(s->type), s->pid);
		}
	}
	if (count != si->count) {
		struct finding *f = add(c, true, "count", NULL, false);
		FMT(f, "meta: %" PRIu64 " records at the seal, the journal has %zu", si->count, count);
	}
	if (seal < c->ns) {
		const struct slot *l = &c->s[seal];
		if (l->off + l->len != si->end) {
			struct finding *f = add(c, true, "seal", l, true);
			FMT(f, "journal:%zu: seq %" PRIu64 ": the SEAL record ends at %zu, meta says %" PRIu64
			    " (bytes added or removed before it)", l->off, l->seq, l->off + l->len, si->end);
		}
		if (l->seq != si->seq || l->type != BBX_REC_SEAL) {
			struct finding *f = add(c, true, "seal", l, true);
			FMT(f, "journal:%zu: seq %" PRIu64 ": the sealed record is %s seq %" PRIu64
			    ", meta says SEAL seq %" PRIu64, l->off, l->seq, bbx_rec_type_name(l->type),
			    l->seq, si->seq);
		}
	}
}

static const char *type_word(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG: return "file";
	case S_IFDIR: return "dir";
	case S_IFLNK: return "symlink";
	case S_IFIFO: return "fifo";
	case S_IFCHR: return "chr";
	case S_IFBLK: return "blk";
	case S_IFSOCK: return "sock";
	}
	return "?";
}

/* Did a record before slot i make, or capture for writing, the path (a CREATE of a
 * file, a SIZE, a PRESERVE)?  Then a process of the run may have held it open for
 * writing when it was removed, and written the kept inode after.  Asked only when a
 * link object's size is off, which is rare: a scan back is enough. */
static bool written_before(const struct vctx *c, size_t i, const char *path)
{
	while (i-- > 0) {
		const struct slot *s = &c->s[i];
		struct bbx_rec r;
		if (s->kind != S_OK ||
		    (s->type != BBX_REC_CREATE && s->type != BBX_REC_SIZE && s->type != BBX_REC_PRESERVE) ||
		    bbx_rec_decode(c->map + s->off, s->len, &r) || !r.path || strcmp(r.path, path))
			continue;
		if (r.type != BBX_REC_CREATE || r.kind == BBX_KIND_FILE)
			return true;
	}
	return false;
}

static void check_objects(struct vctx *c)
{
	char p[PATH_MAX + 64];
	snprintf(p, sizeof p, "%s/undo", c->dir);
	struct stat ub;
	bool undone = lstat(p, &ub) == 0; /* bbx-undo moves objects back into the tree */
	for (size_t i = 0; i < c->ns && !c->oom; i++) {
		const struct slot *s = &c->s[i];
		struct bbx_rec r;
		if (s->kind != S_OK || s->type != BBX_REC_PRESERVE ||
		    bbx_rec_decode(c->map + s->off, s->len, &r))
			continue;
		if (r.how == BBX_HOW_LOST) {
			/* Allowed by the policy, so not a fault of the journal; but an undo
			 * will not be complete, which whoever verifies should know. */
			struct finding *f = add(c, false, "lost", s, true);
			FMT(f, "journal:%zu: seq %" PRIu64 ": %.512s not preserved (how=lost, %.200s): "
			    "bbx-undo cannot restore it", s->off, s->seq, r.path ? r.path : "?",
			    r.rule ? r.rule : "allowed by the policy");
			continue;
		}
		if (!r.object)
			continue;
		if (strstr(r.object, "..") || r.object[0] == '/') {
			struct finding *f = add(c, true, "object", s, true);
			FMT(f, "journal:%zu: seq %" PRIu64 ": object name %s leaves objects/", s->off,
			    s->seq, r.object);
			continue;
		}
		snprintf(p, sizeof p, "%s/objects/%s", c->dir, r.object);
		struct stat sb;
		if (lstat(p, &sb) < 0) {
			struct finding *f = add(c, !undone, "object", s, true);
			FMT(f, "journal:%zu: seq %" PRIu64 ": object %s missing%s", s->off, s->seq,
			    r.object, undone ? " (bbx-undo ran: restored into the tree)" : "");
			continue;
		}
		if (!r.has_stat)
			continue;
		if ((sb.st_mode & S_IFMT) != (r.st.mode & S_IFMT)) {
			struct finding *f = add(c, true, "object", s, true);
			FMT(f, "journal:%zu: seq %" PRIu64 ": object %s is a %s, record says %s",
			    s->off, s->seq, r.object, type_word(sb.st_mode), type_word(r.st.mode));
			continue;
		}
		/* A packed pre-image is SIZE bytes at OFFSET of the run's shared object: that
		 * range must be there (the object is written at reserved offsets, never
		 * truncated). */
		if (r.how == BBX_HOW_PACKED) {
			if (!S_ISREG(sb.st_mode) || !bbx_rec_packed_fits(&r, (uint64_t)sb.st_size)) {
				struct finding *f = add(c, true, "object", s, true);
				FMT(f, "journal:%zu: seq %" PRIu64 ": object %s has %lld bytes, record "
				    "says %" PRIu64 " at offset %" PRIu64 " (how=packed)", s->off, s->seq,
				    r.object, (long long)sb.st_size, r.size, r.offset);
			}
			continue;
		}
		/* A link is the preserved inode itself, on the same filesystem; a journal
		 * directory copied elsewhere cannot keep inode numbers (a note, not a fault). */
		if (r.how == BBX_HOW_LINK && (uint64_t)sb.st_ino != r.st.ino) {
			bool moved = (uint64_t)sb.st_dev != r.st.dev;
			struct finding *f = add(c, !moved, "object", s, true);
			FMT(f, "journal:%zu: seq %" PRIu64 ": object %s is inode %llu, record says %" PRIu64
			    " (how=link%s)", s->off, s->seq, r.object, (unsigned long long)sb.st_ino,
			    r.st.ino, moved ? ", on another device: the journal was copied" : "");
			if (!moved)
				continue;
		}
		/* A linked inode with other names may have grown since: only copies, and
		 * links of a file that had no other name, must keep the recorded size. */
		bool sized = S_ISREG(sb.st_mode) &&
			     (r.how == BBX_HOW_COPY || r.how == BBX_HOW_REFLINK ||
			      (r.how == BBX_HOW_LINK && r.st.nlink <= 1));
		if (sized && (uint64_t)sb.st_size != r.st.size) {
			/* A link of a file the run had made or opened for writing: a process of
			 * the run still holding it (make's compiler, a straggler) may have
			 * written the removed inode since; undo replays the earlier capture of
			 * the path after it.  A note then, not damage. */
			bool ours = r.how == BBX_HOW_LINK && r.path && written_before(c, i, r.path);
			struct finding *f = add(c, !ours, "object", s, true);
			FMT(f, "journal:%zu: seq %" PRIu64 ": object %s has %lld bytes, record says %" PRIu64
			    "%s", s->off, s->seq, r.object, (long long)sb.st_size, r.st.size,
			    ours ? " (the run had the file open for writing: written after its removal)" : "");
		}
	}
}

static void json_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20 || *p >= 0x7f)
			fprintf(out, "\\u%04x", *p); /* bytes, not characters: paths carry no charset */
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

static void report(struct vctx *c, FILE *out, bool json, const struct sealinfo *si,
		   bool chained, size_t nrec)
{
	if (json) {
		fprintf(out, "{\"journal\":");
		json_str(out, c->dir);
		fprintf(out, ",\"bytes\":%zu,\"records\":%zu,\"chained\":%s,\"sealed\":%s", c->size,
			nrec, chained ? "true" : "false", si->sealed ? "true" : "false");
		if (si->sealed)
			fprintf(out, ",\"sealed_chain\":\"%016" PRIx64 "\",\"sealed_count\":%" PRIu64
				",\"after_seal\":%zu", si->chain, si->count, si->after);
		fprintf(out, ",\"problems\":%zu,\"ok\":%s,\"findings\":[", c->nproblems,
			c->nproblems ? "false" : "true");
		for (size_t i = 0; i < c->nf; i++) {
			const struct finding *f = &c->f[i];
			fprintf(out, "%s{\"level\":\"%s\",\"what\":\"%s\"", i ? "," : "",
				f->problem ? "problem" : "note", f->what);
			if (f->has_off)
				fprintf(out, ",\"offset\":%zu", f->off);
			if (f->has_seq)
				fprintf(out, ",\"seq\":%" PRIu64, f->seq);
			fprintf(out, ",\"message\":");
			json_str(out, f->msg);
			fputc('}', out);
		}
		fprintf(out, "]}\n");
		return;
	}
	for (size_t i = 0; i < c->nf; i++) {
		const struct finding *f = &c->f[i];
		if (f->problem)
			fprintf(out, "%s\n", f->msg);
		else
			fprintf(out, "note: %s\n", f->msg);
	}
	fprintf(out, "verify: %s: %zu records, %s, %s%s, %zu problem(s): %s\n", c->dir, nrec,
		chained ? "chained" : "no chain", si->sealed ? "sealed" : "not sealed",
		si->sealed && si->after ? " (records after seal)" : "", c->nproblems,
		c->nproblems ? "DAMAGED" : "OK");
}

int bbx_verify(const char *jdir, FILE *out, bool json)
{
	struct vctx c = {.dir = jdir};
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s/journal", jdir);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		int e = fd < 0 ? errno : S_ISREG(sb.st_mode) ? errno : EINVAL;
		if (json) {
			fprintf(out, "{\"journal\":");
			json_str(out, jdir);
			fprintf(out, ",\"error\":");
			json_str(out, strerror(e));
			fprintf(out, "}\n");
		} else {
			fprintf(out, "verify: %s: %s\n", p, strerror(e));
		}
		if (fd >= 0)
			close(fd);
		return 2;
	}
	c.size = (size_t)sb.st_size;
	if (c.size) {
		void *m = mmap(NULL, c.size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED) {
			fprintf(out, "verify: %s: %s\n", p, strerror(errno));
			close(fd);
			return 2;
		}
		c.map = m;
	}
	close(fd);

	bool chained = false;
	struct sealinfo si;
	split(&c);
	check_chain(&c, &chained);
	check_seqs(&c);
	check_seal(&c, &si);
	check_objects(&c);
	size_t nrec = 0;
	for (size_t i = 0; i < c.ns; i++)
		nrec += c.s[i].kind == S_OK || c.s[i].kind == S_BADREC;
	int rc;
	if (c.oom) {
		fprintf(out, "verify: %s: out of memory\n", jdir);
		rc = 2;
	} else {
		report(&c, out, json, &si, chained, nrec);
		rc = c.nproblems ? 1 : 0;
	}
	if (c.map)
		munmap((void *)c.map, c.size);
	free(c.s);
	free(c.f);
	return rc;
}
