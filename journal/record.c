/* SPDX-License-Identifier: MIT
 *
 * record.c - encoding and decoding of journal records (doc/journal-format.md).
 * Allocation-free and async-signal-safe: it runs inside the shim's wrappers.
 */
#include "record.h"

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* Little-endian stores, each one move: GCC -O2 does not merge a loop of byte stores by
 * shift (it was 8 stores and 16 other instructions per put64, and bbx_enc_stat's 14
 * values ~900 instructions a record: callgrind, rm -r under the shim). */
static void put16(uint8_t *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, sizeof v);
}
static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, sizeof v);
}
static void put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, sizeof v);
}
/* Little-endian loads by memcpy: one load each (a byte loop was not always merged,
 * and get64 was a call in the seal's hot loop, issue 5). */
static uint16_t get16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, sizeof v);
	return le16toh(v);
}
static uint32_t get32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof v);
	return le32toh(v);
}
static uint64_t get64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return le64toh(v);
}

void bbx_stat_from(struct bbx_stat *o, const struct stat *st)
{
	o->mode = st->st_mode;
	o->uid = st->st_uid;
	o->gid = st->st_gid;
	o->size = (uint64_t)st->st_size;
	o->dev = st->st_dev;
	o->ino = st->st_ino;
	o->rdev = st->st_rdev;
	o->nlink = st->st_nlink;
	o->atime_sec = st->st_atim.tv_sec;
	o->atime_nsec = st->st_atim.tv_nsec;
	o->mtime_sec = st->st_mtim.tv_sec;
	o->mtime_nsec = st->st_mtim.tv_nsec;
	o->ctime_sec = st->st_ctim.tv_sec;
	o->ctime_nsec = st->st_ctim.tv_nsec;
}

int bbx_kind_of_mode(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return BBX_KIND_FILE;
	case S_IFDIR: return BBX_KIND_DIR;
	case S_IFLNK: return BBX_KIND_SYMLINK;
	case S_IFIFO: return BBX_KIND_FIFO;
	case S_IFCHR: return BBX_KIND_CHR;
	case S_IFBLK: return BBX_KIND_BLK;
	case S_IFSOCK: return BBX_KIND_SOCK;
	}
	return BBX_KIND_NONE;
}

const char *bbx_kind_name(int kind)
{
	static const char *const n[] = {"none", "file", "dir", "symlink", "fifo", "chr",
					"blk", "sock", "hardlink", "anon"};
	return kind >= 0 && kind < (int)(sizeof n / sizeof n[0]) ? n[kind] : "?";
}

const char *bbx_rec_type_name(int type)
{
	static const char *const n[] = {"?", "EXEC", "CREATE", "PRESERVE", "SIZE", "RMDIR",
					"RENAME", "META", "DIRMETA", "RESULT", "FINAL", "SEAL", "NOTE",
					"DENY", "PROC", "EXIT", "NET", "RESOLVE"};
	return type > 0 && type <= BBX_REC_TYPE_MAX ? n[type] : "?";
}

const char *bbx_how_name(int how)
{
	static const char *const n[] = {"none", "link", "copy", "reflink", "inline", "lost",
					"alias", "excl", "packed"};
	return how >= 0 && how < (int)(sizeof n / sizeof n[0]) ? n[how] : "?";
}

void bbx_enc_begin(struct bbx_enc *e, void *buf, size_t cap, int type)
{
	e->buf = buf;
	e->cap = cap;
	e->err = 0;
	if (cap < BBX_REC_MIN_LEN) {
		e->err = -ENAMETOOLONG;
		e->len = 0;
		return;
	}
	memset(e->buf, 0, BBX_REC_HDR_LEN);
	put32(e->buf, BBX_REC_MAGIC);
	put16(e->buf + 4, BBX_REC_VERSION);
	put16(e->buf + 6, (uint16_t)type);
	e->len = BBX_REC_HDR_LEN;
	/* The CHAIN field comes first, at a fixed offset, so that the writer can fill it
	 * in under the journal lock without re-encoding (bbx_rec_set_chain). */
	bbx_enc_u64(e, BBX_T_CHAIN, 0);
}

uint64_t bbx_rec_sum(void *rec, size_t len)
{
	uint8_t *b = rec;
	uint64_t h = XXH64(b, len - BBX_REC_TRAILER_LEN, 0);
	put64(b + len - BBX_REC_TRAILER_LEN, h);
	return h;
}

uint64_t bbx_rec_set_chain(void *rec, size_t len, uint64_t chain)
{
	uint8_t *b = rec;
	if (len < BBX_REC_CHAIN_OFF + BBX_REC_CHAIN_LEN + BBX_REC_TRAILER_LEN)
		return get64(b + len - BBX_REC_TRAILER_LEN);
	/* (Every record bbx_enc_begin made has the field, so a record left unsummed by
	 * bbx_enc_finish_unsummed is always summed here.) */
	if (get16(b + BBX_REC_CHAIN_OFF) == BBX_T_CHAIN &&
	    get32(b + BBX_REC_CHAIN_OFF + 2) == 8 && get32(b + 12) == BBX_REC_HDR_LEN) {
		put64(b + BBX_REC_CHAIN_OFF + 6, chain);
		return bbx_rec_sum(b, len);
	}
	return get64(b + len - BBX_REC_TRAILER_LEN);
}

void bbx_enc_commit(struct bbx_enc *e, int tag, size_t n)
{
	put16(e->buf + e->len, (uint16_t)tag);
	put32(e->buf + e->len + 2, (uint32_t)n);
	e->len += 6 + n;
}

void bbx_enc_bytes(struct bbx_enc *e, int tag, const void *p, size_t n)
{
	if (e->err)
		return;
	if (n > UINT32_MAX || e->len + 6 + n + BBX_REC_TRAILER_LEN > e->cap) {
		e->err = -ENAMETOOLONG;
		return;
	}
	if (n)
		memcpy(e->buf + e->len + 6, p, n);
	bbx_enc_commit(e, tag, n);
}

uint8_t *bbx_enc_room(struct bbx_enc *e, size_t *room)
{
	if (e->err || e->len + 6 + BBX_REC_TRAILER_LEN >= e->cap)
		return NULL;
	*room = e->cap - e->len - 6 - BBX_REC_TRAILER_LEN;
	return e->buf + e->len + 6;
}

void bbx_enc_str(struct bbx_enc *e, int tag, const char *s)
{
	if (s)
		bbx_enc_bytes(e, tag, s, strlen(s) + 1);
}

/* A field of n bytes: its header written, and where its value goes (NULL: no room, or
 * an error already).  Inline, so that a fixed-size value is stored by the caller in one
 * move instead of through a buffer and memcpy. */
static inline __attribute__((always_inline)) uint8_t *enc_fixed(struct bbx_enc *e, int tag,
								 size_t n)
{
	if (e->err)
		return NULL;
	if (e->len + 6 + n + BBX_REC_TRAILER_LEN > e->cap) {
		e->err = -ENAMETOOLONG;
		return NULL;
	}
	uint8_t *p = e->buf + e->len + 6;
	bbx_enc_commit(e, tag, n);
	return p;
}

void bbx_enc_u32(struct bbx_enc *e, int tag, uint32_t v)
{
	uint8_t *p = enc_fixed(e, tag, 4);
	if (p)
		put32(p, v);
}

void bbx_enc_u64(struct bbx_enc *e, int tag, uint64_t v)
{
	uint8_t *p = enc_fixed(e, tag, 8);
	if (p)
		put64(p, v);
}

void bbx_enc_i64(struct bbx_enc *e, int tag, int64_t v) { bbx_enc_u64(e, tag, (uint64_t)v); }

void bbx_enc_stat(struct bbx_enc *e, const struct bbx_stat *st)
{
	uint8_t *b = enc_fixed(e, BBX_T_STAT, BBX_STAT_ENC_LEN);
	if (!b)
		return;
	const uint64_t v[14] = {st->mode, st->uid, st->gid, st->size, st->dev, st->ino,
				st->rdev, st->nlink, (uint64_t)st->atime_sec,
				(uint64_t)st->atime_nsec, (uint64_t)st->mtime_sec,
				(uint64_t)st->mtime_nsec, (uint64_t)st->ctime_sec,
				(uint64_t)st->ctime_nsec};
	for (int i = 0; i < 14; i++)
		put64(b + 8 * i, v[i]);
}

long bbx_enc_finish(struct bbx_enc *e, const struct bbx_rec_hdr *h)
{
	long n = bbx_enc_finish_unsummed(e, h);
	if (n > 0)
		bbx_rec_sum(e->buf, (size_t)n);
	return n;
}

long bbx_enc_finish_unsummed(struct bbx_enc *e, const struct bbx_rec_hdr *h)
{
	if (e->err)
		return e->err;
	uint8_t *b = e->buf;
	size_t total = e->len + BBX_REC_TRAILER_LEN;
	if (total > BBX_REC_MAX_LEN)
		return -E2BIG; /* a reader would reject it: never write one */
	put32(b + 8, (uint32_t)total);
	put32(b + 12, BBX_REC_HDR_LEN);
	put64(b + 16, h->seq);
	put64(b + 24, h->realtime_ns);
	put64(b + 32, h->mono_ns);
	put32(b + 40, (uint32_t)h->pid);
	put32(b + 44, (uint32_t)h->ppid);
	put32(b + 48, h->uid);
	put32(b + 52, h->flags);
	put64(b + e->len, 0);
	return (long)total;
}

static void dec_stat(const uint8_t *p, struct bbx_stat *st)
{
	uint64_t v[14];
	for (int i = 0; i < 14; i++)
		v[i] = get64(p + 8 * i);
	st->mode = (uint32_t)v[0];
	st->uid = (uint32_t)v[1];
	st->gid = (uint32_t)v[2];
	st->size = v[3];
	st->dev = v[4];
	st->ino = v[5];
	st->rdev = v[6];
	st->nlink = v[7];
	st->atime_sec = (int64_t)v[8];
	st->atime_nsec = (int64_t)v[9];
	st->mtime_sec = (int64_t)v[10];
	st->mtime_nsec = (int64_t)v[11];
	st->ctime_sec = (int64_t)v[12];
	st->ctime_nsec = (int64_t)v[13];
}

/* A string field must be NUL-terminated inside its length, or it is malformed. */
static int dec_str(const uint8_t *v, uint32_t n, const char **out)
{
	if (n == 0 || v[n - 1] != 0)
		return -EBADMSG;
	*out = (const char *)v;
	return 0;
}

int bbx_rec_decode(const void *vp, size_t avail, struct bbx_rec *r)
{
	return bbx_rec_decode_types(vp, avail, r, 0);
}

static void dec_header(const uint8_t *p, uint32_t len, struct bbx_rec *r)
{
	r->version = get16(p + 4);
	r->type = get16(p + 6);
	r->len = len;
	r->h.seq = get64(p + 16);
	r->h.realtime_ns = get64(p + 24);
	r->h.mono_ns = get64(p + 32);
	r->h.pid = (int32_t)get32(p + 40);
	r->h.ppid = (int32_t)get32(p + 44);
	r->h.uid = get32(p + 48);
	r->h.flags = get32(p + 52);
}

int bbx_rec_decode_types(const void *vp, size_t avail, struct bbx_rec *r, uint32_t types)
{
	const uint8_t *p = vp;
	if (avail < 12)
		return avail >= 4 && get32(p) != BBX_REC_MAGIC ? -EBADMSG : -EAGAIN;
	if (get32(p) != BBX_REC_MAGIC)
		return -EBADMSG;
	uint32_t len = get32(p + 8);
	if (len < BBX_REC_MIN_LEN || len > BBX_REC_MAX_LEN)
		return -EBADMSG;
	if (avail < len)
		return -EAGAIN;
	uint32_t hlen = get32(p + 12);
	if (hlen < BBX_REC_HDR_LEN || hlen > len - BBX_REC_TRAILER_LEN)
		return -EBADMSG;
	if (XXH64(p, len - BBX_REC_TRAILER_LEN, 0) != get64(p + len - BBX_REC_TRAILER_LEN))
		return -EBADMSG;

	uint16_t type = get16(p + 6);
	if (types && (type >= 32 || !(types & (1u << type)))) {
		dec_header(p, len, r);
		return r->version != BBX_REC_VERSION ? -EBADMSG : 0;
	}
	memset(r, 0, sizeof *r);
	dec_header(p, len, r);
	if (r->version != BBX_REC_VERSION)
		return -EBADMSG;

	size_t off = hlen, end = len - BBX_REC_TRAILER_LEN;
	while (off < end) {
		if (end - off < 6)
			return -EBADMSG;
		int tag = get16(p + off);
		uint32_t n = get32(p + off + 2);
		const uint8_t *v = p + off + 6;
		if (n > end - off - 6)
			return -EBADMSG;
		int rc = 0;
		switch (tag) {
		case BBX_T_OP: rc = dec_str(v, n, &r->op); break;
		case BBX_T_PATH: rc = dec_str(v, n, &r->path); break;
		case BBX_T_PATH2: rc = dec_str(v, n, &r->path2); break;
		case BBX_T_OBJECT: rc = dec_str(v, n, &r->object); break;
		case BBX_T_CWD: rc = dec_str(v, n, &r->cwd); break;
		case BBX_T_TEXT: rc = dec_str(v, n, &r->text); break;
		case BBX_T_XNAME: rc = dec_str(v, n, &r->xname); break;
		case BBX_T_EXE: rc = dec_str(v, n, &r->exe); break;
		case BBX_T_RULE: rc = dec_str(v, n, &r->rule); break;
		case BBX_T_REASON: rc = dec_str(v, n, &r->reason); break;
		case BBX_T_ADDR: rc = dec_str(v, n, &r->addr); break;
		case BBX_T_HOST: rc = dec_str(v, n, &r->host); break;
		case BBX_T_ENV:
			if (n && v[n - 1] != 0)
				return -EBADMSG;
			r->env = (const char *)v;
			r->env_len = n;
			break;
		case BBX_T_TARGET: r->target = (const char *)v; r->target_len = n; break;
		case BBX_T_ARGV:
			if (n && v[n - 1] != 0)
				return -EBADMSG;
			r->argv = (const char *)v;
			r->argv_len = n;
			break;
		case BBX_T_XVALUE: r->xvalue = v; r->xvalue_len = n; r->has_xvalue = true; break;
		case BBX_T_XATTRS: {
			size_t o = 0, vl;
			const char *nm;
			const void *vv;
			int k;
			while ((k = bbx_xattrs_next(v, n, &o, &nm, &vv, &vl)) > 0)
				;
			if (k < 0)
				return -EBADMSG;
			r->xattrs = v;
			r->xattrs_len = n;
			break;
		}
		case BBX_T_STAT:
			if (n != BBX_STAT_ENC_LEN)
				return -EBADMSG;
			dec_stat(v, &r->st);
			r->has_stat = true;
			break;
		case BBX_T_SIZE: case BBX_T_REF: case BBX_T_DEV: case BBX_T_INO:
		case BBX_T_RET: case BBX_T_COUNT: case BBX_T_PID: case BBX_T_CHAIN:
		case BBX_T_DURATION: case BBX_T_OFFSET: {
			if (n != 8)
				return -EBADMSG;
			uint64_t x = get64(v);
			if (tag == BBX_T_SIZE) { r->size = x; r->has_size = true; }
			else if (tag == BBX_T_REF) { r->ref = x; r->has_ref = true; }
			else if (tag == BBX_T_DEV) r->dev = x;
			else if (tag == BBX_T_INO) { r->ino = x; r->has_ino = true; }
			else if (tag == BBX_T_COUNT) r->count = x;
			else if (tag == BBX_T_PID) { r->pid = x; r->has_pid = true; }
			else if (tag == BBX_T_CHAIN) { r->chain = x; r->has_chain = true; }
			else if (tag == BBX_T_DURATION) { r->duration = x; r->has_duration = true; }
			else if (tag == BBX_T_OFFSET) { r->offset = x; r->has_offset = true; }
			else { r->ret = (int64_t)x; r->has_ret = true; }
			break;
		}
		case BBX_T_KIND: case BBX_T_HOW: case BBX_T_FLAGS: case BBX_T_MASK: case BBX_T_ERR:
		case BBX_T_DECISION: case BBX_T_CLASS: case BBX_T_STATUS: case BBX_T_ACCESS: {
			if (n != 4)
				return -EBADMSG;
			uint32_t x = get32(v);
			if (tag == BBX_T_KIND) r->kind = x;
			else if (tag == BBX_T_HOW) r->how = x;
			else if (tag == BBX_T_FLAGS) r->flags = x;
			else if (tag == BBX_T_MASK) r->mask = x;
			else if (tag == BBX_T_DECISION) { r->decision = x; r->has_decision = true; }
			else if (tag == BBX_T_CLASS) r->klass = x;
			else if (tag == BBX_T_STATUS) { r->status = x; r->has_status = true; }
			else if (tag == BBX_T_ACCESS) r->access = x;
			else r->err = (int32_t)x;
			break;
		}
		default:
			break; /* unknown tag: skipped (forward compatible) */
		}
		if (rc)
			return rc;
		off += 6 + n;
	}
	return 0;
}

size_t bbx_rec_argc(const struct bbx_rec *r)
{
	size_t n = 0;
	for (size_t i = 0; i < r->argv_len; i++)
		if (r->argv[i] == 0)
			n++;
	return n;
}

void bbx_fmt_size(uint64_t n, char *out, size_t cap)
{
	static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	if (n < 1024) {
		snprintf(out, cap, "%llu byte%s", (unsigned long long)n, n == 1 ? "" : "s");
		return;
	}
	int u = 0;
	uint64_t d = 1024;
	while (u < 5 && n / d >= 1024)
		u++, d <<= 10;
	uint64_t whole = n / d, rest = n % d;
	if (!rest) {
		snprintf(out, cap, "%llu %s", (unsigned long long)whole, unit[u]);
		return;
	}
	/* one decimal, rounded to nearest (rest * 10 cannot overflow: rest < d <= 2^60) */
	uint64_t tenths = (rest * 10 + d / 2) / d;
	if (tenths == 10)
		whole++, tenths = 0;
	snprintf(out, cap, "%llu.%llu %s", (unsigned long long)whole, (unsigned long long)tenths,
		 unit[u]);
}

int bbx_xattrs_next(const uint8_t *p, size_t len, size_t *off, const char **name,
		    const void **val, size_t *vlen)
{
	size_t o = *off;
	if (o >= len)
		return 0;
	const uint8_t *nul = memchr(p + o, 0, len - o);
	if (!nul || nul == p + o || (size_t)(len - (size_t)(nul + 1 - p)) < 4)
		return -1;
	size_t at = (size_t)(nul + 1 - p);
	uint32_t n = get32(p + at);
	if (n > len - at - 4)
		return -1;
	*name = (const char *)(p + o);
	*val = p + at + 4;
	*vlen = n;
	*off = at + 4 + n;
	return 1;
}
