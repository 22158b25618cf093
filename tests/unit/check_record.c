/* SPDX-License-Identifier: MIT
 *
 * check_record.c - unit tests of the record encoder and decoder (journal/record.c).
 *
 * Round trips every record type with every field, pins the on-disk header layout, and
 * proves the decoder refuses every malformed record it can be handed: bad magic, bad
 * lengths, any single flipped byte, fields overrunning the record, strings without
 * their NUL.  Unknown tags must be skipped, so a newer writer stays readable.
 */
#include "record.h"
#include "unit.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* Recomputes the trailer after a test edited the record, so only the edit is wrong. */
static void reseal(uint8_t *b, size_t len) { put64(b + len - 8, XXH64(b, len - 8, 0)); }

static const struct bbx_rec_hdr hdr_full = {
	.seq = 0x0123456789abcdefull,
	.realtime_ns = 0xfedcba9876543210ull,
	.mono_ns = 42,
	.pid = 123456,
	.ppid = -7,
	.uid = 0xfffffffeu,
	.flags = 0x80000001u,
};

static const struct bbx_stat st_full = {
	.mode = S_IFREG | 04755,
	.uid = 1000,
	.gid = 0xfffffffeu,
	.size = UINT64_MAX - 1,
	.dev = 0x10302,
	.ino = (1ull << 62) | 5,
	.rdev = 0x0801,
	.nlink = 3,
	.atime_sec = -1,
	.atime_nsec = 999999999,
	.mtime_sec = INT64_MIN,
	.mtime_nsec = 0,
	.ctime_sec = INT64_MAX,
	.ctime_nsec = 1,
};

/* argv with an empty argument in the middle; sizeof includes the final NUL. */
static const char argv_full[] = "prog\0-x\0\0last arg";
static const uint8_t xvalue_full[] = {0, 1, 2, 0xff, 0, 'x', 'B', 'B', 'X', '1'};
static const char target_full[] = "../dir/link target";

/* Encodes a record of `type` carrying every known field. */
static long enc_full(uint8_t *buf, size_t cap, int type)
{
	struct bbx_enc e;
	bbx_enc_begin(&e, buf, cap, type);
	bbx_enc_str(&e, BBX_T_OP, "openat");
	bbx_enc_str(&e, BBX_T_PATH, "/ws/a file");
	bbx_enc_str(&e, BBX_T_PATH2, "/ws/b");
	bbx_enc_bytes(&e, BBX_T_TARGET, target_full, strlen(target_full));
	bbx_enc_str(&e, BBX_T_OBJECT, "17");
	bbx_enc_str(&e, BBX_T_CWD, "/ws");
	bbx_enc_bytes(&e, BBX_T_ARGV, argv_full, sizeof argv_full);
	bbx_enc_stat(&e, &st_full);
	bbx_enc_u64(&e, BBX_T_SIZE, 0x1122334455667788ull);
	bbx_enc_u32(&e, BBX_T_KIND, BBX_KIND_SYMLINK);
	bbx_enc_u32(&e, BBX_T_HOW, BBX_HOW_REFLINK);
	bbx_enc_u64(&e, BBX_T_REF, UINT64_MAX);
	bbx_enc_i64(&e, BBX_T_RET, INT64_MIN + 1);
	bbx_enc_u32(&e, BBX_T_ERR, (uint32_t)-ENOSPC);
	bbx_enc_u64(&e, BBX_T_DEV, 0xabcdef0123ull);
	bbx_enc_u64(&e, BBX_T_INO, 0);
	bbx_enc_u32(&e, BBX_T_FLAGS, 0xdeadbeefu);
	bbx_enc_u32(&e, BBX_T_MASK, BBX_META_XATTR | BBX_META_NOFOLLOW);
	bbx_enc_str(&e, BBX_T_XNAME, "user.test");
	bbx_enc_bytes(&e, BBX_T_XVALUE, xvalue_full, sizeof xvalue_full);
	bbx_enc_str(&e, BBX_T_TEXT, "free text, with\ttabs");
	bbx_enc_u64(&e, BBX_T_COUNT, 99);
	bbx_enc_str(&e, BBX_T_EXE, "/usr/bin/prog");
	return bbx_enc_finish(&e, &hdr_full);
}

static void assert_stat_eq(const struct bbx_stat *a, const struct bbx_stat *b)
{
	ck_assert_uint_eq(a->mode, b->mode);
	ck_assert_uint_eq(a->uid, b->uid);
	ck_assert_uint_eq(a->gid, b->gid);
	ck_assert_uint_eq(a->size, b->size);
	ck_assert_uint_eq(a->dev, b->dev);
	ck_assert_uint_eq(a->ino, b->ino);
	ck_assert_uint_eq(a->rdev, b->rdev);
	ck_assert_uint_eq(a->nlink, b->nlink);
	ck_assert_int_eq(a->atime_sec, b->atime_sec);
	ck_assert_int_eq(a->atime_nsec, b->atime_nsec);
	ck_assert_int_eq(a->mtime_sec, b->mtime_sec);
	ck_assert_int_eq(a->mtime_nsec, b->mtime_nsec);
	ck_assert_int_eq(a->ctime_sec, b->ctime_sec);
	ck_assert_int_eq(a->ctime_nsec, b->ctime_nsec);
}

static void assert_hdr_eq(const struct bbx_rec_hdr *a, const struct bbx_rec_hdr *b)
{
	ck_assert_uint_eq(a->seq, b->seq);
	ck_assert_uint_eq(a->realtime_ns, b->realtime_ns);
	ck_assert_uint_eq(a->mono_ns, b->mono_ns);
	ck_assert_int_eq(a->pid, b->pid);
	ck_assert_int_eq(a->ppid, b->ppid);
	ck_assert_uint_eq(a->uid, b->uid);
	ck_assert_uint_eq(a->flags, b->flags);
}

/* Every field enc_full() wrote, read back exactly. */
static void assert_full(const uint8_t *buf, long len, const struct bbx_rec *r, int type)
{
	ck_assert_int_eq(r->type, type);
	ck_assert_int_eq(r->version, BBX_REC_VERSION);
	ck_assert_uint_eq(r->len, (uint32_t)len);
	assert_hdr_eq(&r->h, &hdr_full);
	ck_assert_str_eq(r->op, "openat");
	ck_assert_str_eq(r->path, "/ws/a file");
	ck_assert_str_eq(r->path2, "/ws/b");
	ck_assert_str_eq(r->object, "17");
	ck_assert_str_eq(r->cwd, "/ws");
	ck_assert_str_eq(r->xname, "user.test");
	ck_assert_str_eq(r->text, "free text, with\ttabs");
	ck_assert_str_eq(r->exe, "/usr/bin/prog");
	ck_assert_uint_eq(r->target_len, strlen(target_full));
	ck_assert_mem_eq(r->target, target_full, strlen(target_full));
	ck_assert_uint_eq(r->argv_len, sizeof argv_full);
	ck_assert_mem_eq(r->argv, argv_full, sizeof argv_full);
	ck_assert_uint_eq(bbx_rec_argc(r), 4);
	ck_assert(r->has_xvalue);
	ck_assert_uint_eq(r->xvalue_len, sizeof xvalue_full);
	ck_assert_mem_eq(r->xvalue, xvalue_full, sizeof xvalue_full);
	ck_assert(r->has_stat);
	assert_stat_eq(&r->st, &st_full);
	ck_assert(r->has_size);
	ck_assert_uint_eq(r->size, 0x1122334455667788ull);
	ck_assert_uint_eq(r->kind, BBX_KIND_SYMLINK);
	ck_assert_uint_eq(r->how, BBX_HOW_REFLINK);
	ck_assert(r->has_ref);
	ck_assert_uint_eq(r->ref, UINT64_MAX);
	ck_assert(r->has_ret);
	ck_assert_int_eq(r->ret, INT64_MIN + 1);
	ck_assert_int_eq(r->err, -ENOSPC);
	ck_assert_uint_eq(r->dev, 0xabcdef0123ull);
	ck_assert(r->has_ino);
	ck_assert_uint_eq(r->ino, 0);
	ck_assert_uint_eq(r->flags, 0xdeadbeefu);
	ck_assert_uint_eq(r->mask, BBX_META_XATTR | BBX_META_NOFOLLOW);
	ck_assert_uint_eq(r->count, 99);
	/* Decoded pointers point into the record itself: nothing was allocated. */
	ck_assert((const uint8_t *)r->path > buf && (const uint8_t *)r->path < buf + len);
}

START_TEST(test_roundtrip_every_type)
{
	int type = _i;
	uint8_t buf[4096];
	long len = enc_full(buf, sizeof buf, type);
	ck_assert_int_gt(len, BBX_REC_MIN_LEN);
	struct bbx_rec r;
	memset(&r, 0xa5, sizeof r);
	ck_assert_int_eq(bbx_rec_decode(buf, (size_t)len, &r), 0);
	assert_full(buf, len, &r, type);
	ck_assert_str_ne(bbx_rec_type_name(type), "?");
	/* bbx_rec_decode_types: a type in the mask (or a mask of 0) decoded whole, as
	 * above; any other with its header, type and length only, the rest of out as it
	 * was (the seal passes over those records); and either way a record that fails a
	 * check (its checksum, its version) refused, whatever its type. */
	memset(&r, 0xa5, sizeof r);
	ck_assert_int_eq(bbx_rec_decode_types(buf, (size_t)len, &r, 1u << type), 0);
	assert_full(buf, len, &r, type);
	memset(&r, 0xa5, sizeof r);
	ck_assert_int_eq(bbx_rec_decode_types(buf, (size_t)len, &r, 0), 0);
	assert_full(buf, len, &r, type);
	struct bbx_rec before;
	memset(&r, 0xa5, sizeof r);
	r.path = "kept";
	r.kind = 12345;
	memcpy(&before, &r, sizeof r);
	uint32_t others = ~(1u << type);
	ck_assert_int_eq(bbx_rec_decode_types(buf, (size_t)len, &r, others), 0);
	ck_assert_int_eq(r.type, type);
	ck_assert_int_eq(r.version, BBX_REC_VERSION);
	ck_assert_uint_eq(r.len, (uint32_t)len);
	assert_hdr_eq(&r.h, &hdr_full);
	ck_assert_ptr_eq(r.path, before.path);
	ck_assert_uint_eq(r.kind, 12345);
	ck_assert_mem_eq(&r.op, &before.op, sizeof r - offsetof(struct bbx_rec, op));
	buf[len - 1] ^= 1;
	ck_assert_int_eq(bbx_rec_decode_types(buf, (size_t)len, &r, others), -EBADMSG);
	ck_assert_int_eq(bbx_rec_decode_types(buf, (size_t)len, &r, 1u << type), -EBADMSG);
	buf[len - 1] ^= 1;
	buf[4] ^= 2;
	bbx_rec_sum(buf, (size_t)len);
	ck_assert_int_eq(bbx_rec_decode_types(buf, (size_t)len, &r, others), -EBADMSG);
}
END_TEST

/* The header layout is the on-disk format (doc/journal-format.md): pin every offset. */
START_TEST(test_header_layout)
{
	uint8_t buf[4096];
	long len = enc_full(buf, sizeof buf, BBX_REC_PRESERVE);
	ck_assert_mem_eq(buf, "BBX1", 4);
	ck_assert_uint_eq(buf[4] | buf[5] << 8, BBX_REC_VERSION);
	ck_assert_uint_eq(buf[6] | buf[7] << 8, BBX_REC_PRESERVE);
	ck_assert_uint_eq(get32(buf + 8), (uint32_t)len);
	ck_assert_uint_eq(get32(buf + 12), BBX_REC_HDR_LEN);
	ck_assert_uint_eq(get64(buf + 16), hdr_full.seq);
	ck_assert_uint_eq(get64(buf + 24), hdr_full.realtime_ns);
	ck_assert_uint_eq(get64(buf + 32), hdr_full.mono_ns);
	ck_assert_uint_eq(get32(buf + 40), (uint32_t)hdr_full.pid);
	ck_assert_uint_eq(get32(buf + 44), (uint32_t)hdr_full.ppid);
	ck_assert_uint_eq(get32(buf + 48), hdr_full.uid);
	ck_assert_uint_eq(get32(buf + 52), hdr_full.flags);
	/* First field: CHAIN, reserved by bbx_enc_begin (u64 0 until the writer sets it). */
	ck_assert_uint_eq(buf[56] | buf[57] << 8, BBX_T_CHAIN);
	ck_assert_uint_eq(get32(buf + 58), 8);
	ck_assert_uint_eq(get64(buf + 62), 0);
	/* Then OP, TLV with u16 tag and u32 length, the string's NUL included. */
	ck_assert_uint_eq(buf[70] | buf[71] << 8, BBX_T_OP);
	ck_assert_uint_eq(get32(buf + 72), sizeof "openat");
	ck_assert_mem_eq(buf + 76, "openat", sizeof "openat");
	/* Trailer: XXH64, seed 0, of everything before it. */
	ck_assert_uint_eq(get64(buf + len - 8), XXH64(buf, (size_t)len - 8, 0));
	/* The stat field is 14 little-endian u64 (mode, uid, gid, size, dev, ino, rdev,
	 * nlink, then three sec/nsec pairs). */
	struct bbx_enc e;
	uint8_t sb[256];
	bbx_enc_begin(&e, sb, sizeof sb, BBX_REC_META);
	bbx_enc_stat(&e, &st_full);
	ck_assert_int_eq(bbx_enc_finish(&e, &hdr_full),
			 BBX_REC_MIN_LEN + BBX_REC_CHAIN_LEN + 6 + BBX_STAT_ENC_LEN);
	const uint8_t *f = sb + 56 + BBX_REC_CHAIN_LEN; /* the field after CHAIN */
	ck_assert_uint_eq(get32(f + 2), 14 * 8);
	ck_assert_uint_eq(get64(f + 6), st_full.mode);
	ck_assert_uint_eq(get64(f + 6 + 3 * 8), st_full.size);
	ck_assert_uint_eq(get64(f + 6 + 10 * 8), (uint64_t)st_full.mtime_sec);
}
END_TEST

/* A header-only record: nothing set, every has_ flag false. */
START_TEST(test_roundtrip_empty)
{
	uint8_t buf[128];
	struct bbx_enc e;
	bbx_enc_begin(&e, buf, sizeof buf, BBX_REC_SEAL);
	bbx_enc_str(&e, BBX_T_PATH, NULL); /* NULL string: field omitted */
	struct bbx_rec_hdr h = {0};
	/* Empty but for the reserved CHAIN field. */
	ck_assert_int_eq(bbx_enc_finish(&e, &h), BBX_REC_MIN_LEN + BBX_REC_CHAIN_LEN);
	struct bbx_rec r;
	memset(&r, 0xa5, sizeof r);
	ck_assert_int_eq(bbx_rec_decode(buf, BBX_REC_MIN_LEN + BBX_REC_CHAIN_LEN, &r), 0);
	ck_assert_int_eq(r.type, BBX_REC_SEAL);
	ck_assert_uint_eq(r.len, BBX_REC_MIN_LEN + BBX_REC_CHAIN_LEN);
	ck_assert(r.has_chain);
	ck_assert_uint_eq(r.chain, 0);
	ck_assert_ptr_null(r.op);
	ck_assert_ptr_null(r.path);
	ck_assert_ptr_null(r.argv);
	ck_assert(!r.has_stat && !r.has_size && !r.has_ref && !r.has_ino && !r.has_ret &&
		  !r.has_xvalue);
	ck_assert_uint_eq(bbx_rec_argc(&r), 0);

	/* Empty values: "" strings, a zero-length xattr value, empty argv and target. */
	bbx_enc_begin(&e, buf, sizeof buf, BBX_REC_META);
	bbx_enc_str(&e, BBX_T_PATH, "");
	bbx_enc_bytes(&e, BBX_T_XVALUE, NULL, 0);
	bbx_enc_bytes(&e, BBX_T_ARGV, NULL, 0);
	bbx_enc_bytes(&e, BBX_T_TARGET, NULL, 0);
	long len = bbx_enc_finish(&e, &h);
	ck_assert_int_eq(len, BBX_REC_MIN_LEN + BBX_REC_CHAIN_LEN + 7 + 3 * 6);
	ck_assert_int_eq(bbx_rec_decode(buf, (size_t)len, &r), 0);
	ck_assert_str_eq(r.path, "");
	ck_assert(r.has_xvalue);
	ck_assert_uint_eq(r.xvalue_len, 0);
	ck_assert_uint_eq(r.argv_len, 0);
	ck_assert_uint_eq(r.target_len, 0);
	ck_assert_uint_eq(bbx_rec_argc(&r), 0);
}
END_TEST

/* bbx_stat_from keeps what lstat said, and it survives encoding. */
START_TEST(test_stat_from_real_file)
{
	char dir[PATH_MAX], p[PATH_MAX + 8];
	unit_mkdtemp(dir, sizeof dir, "stat");
	snprintf(p, sizeof p, "%s/f", dir);
	unit_write_file(p, "12345", 5);
	struct stat sb;
	ck_assert_int_eq(lstat(p, &sb), 0);
	struct bbx_stat s;
	bbx_stat_from(&s, &sb);
	ck_assert_uint_eq(s.mode, sb.st_mode);
	ck_assert_uint_eq(s.size, 5);
	ck_assert_uint_eq(s.ino, sb.st_ino);
	ck_assert_uint_eq(s.dev, sb.st_dev);
	ck_assert_uint_eq(s.nlink, 1);
	ck_assert_int_eq(s.mtime_sec, sb.st_mtim.tv_sec);
	ck_assert_int_eq(s.mtime_nsec, sb.st_mtim.tv_nsec);
	ck_assert_int_eq(s.ctime_nsec, sb.st_ctim.tv_nsec);
	uint8_t buf[256];
	struct bbx_enc e;
	bbx_enc_begin(&e, buf, sizeof buf, BBX_REC_FINAL);
	bbx_enc_stat(&e, &s);
	struct bbx_rec_hdr h = {.seq = 1};
	long len = bbx_enc_finish(&e, &h);
	struct bbx_rec r;
	ck_assert_int_eq(bbx_rec_decode(buf, (size_t)len, &r), 0);
	assert_stat_eq(&r.st, &s);
	ck_assert_int_eq(bbx_kind_of_mode(r.st.mode), BBX_KIND_FILE);
}
END_TEST

START_TEST(test_names)
{
	ck_assert_str_eq(bbx_rec_type_name(BBX_REC_EXEC), "EXEC");
	ck_assert_str_eq(bbx_rec_type_name(BBX_REC_PRESERVE), "PRESERVE");
	ck_assert_str_eq(bbx_rec_type_name(BBX_REC_NOTE), "NOTE");
	ck_assert_str_eq(bbx_rec_type_name(0), "?");
	ck_assert_str_eq(bbx_rec_type_name(BBX_REC_TYPE_MAX + 1), "?");
	ck_assert_str_eq(bbx_rec_type_name(-1), "?");
	ck_assert_str_eq(bbx_kind_name(BBX_KIND_NONE), "none");
	ck_assert_str_eq(bbx_kind_name(BBX_KIND_ANON), "anon");
	ck_assert_str_eq(bbx_kind_name(BBX_KIND_ANON + 1), "?");
	ck_assert_str_eq(bbx_kind_name(-1), "?");
	ck_assert_str_eq(bbx_how_name(BBX_HOW_NONE), "none");
	ck_assert_str_eq(bbx_how_name(BBX_HOW_LOST), "lost");
	ck_assert_str_eq(bbx_how_name(BBX_HOW_ALIAS), "alias");
	ck_assert_str_eq(bbx_how_name(BBX_HOW_EXCL), "excl");
	ck_assert_str_eq(bbx_how_name(BBX_HOW_PACKED), "packed");
	ck_assert_str_eq(bbx_how_name(BBX_HOW_PACKED + 1), "?");
	ck_assert_int_eq(bbx_kind_of_mode(S_IFREG | 0644), BBX_KIND_FILE);
	ck_assert_int_eq(bbx_kind_of_mode(S_IFDIR), BBX_KIND_DIR);
	ck_assert_int_eq(bbx_kind_of_mode(S_IFLNK), BBX_KIND_SYMLINK);
	ck_assert_int_eq(bbx_kind_of_mode(S_IFIFO), BBX_KIND_FIFO);
	ck_assert_int_eq(bbx_kind_of_mode(S_IFCHR), BBX_KIND_CHR);
	ck_assert_int_eq(bbx_kind_of_mode(S_IFBLK), BBX_KIND_BLK);
	ck_assert_int_eq(bbx_kind_of_mode(S_IFSOCK), BBX_KIND_SOCK);
	ck_assert_int_eq(bbx_kind_of_mode(0), BBX_KIND_NONE);
}
END_TEST

/* ---- rejects ---- */

START_TEST(test_reject_bad_magic)
{
	uint8_t buf[4096];
	long len = enc_full(buf, sizeof buf, BBX_REC_CREATE);
	struct bbx_rec r;
	for (int i = 0; i < 4; i++) {
		uint8_t c[4096];
		memcpy(c, buf, (size_t)len);
		c[i] ^= 0x20; /* "bbx1": a case change is enough */
		reseal(c, (size_t)len);
		ck_assert_int_eq(bbx_rec_decode(c, (size_t)len, &r), -EBADMSG);
		/* Too short to know the length, but the magic is already wrong. */
		for (size_t avail = 4; avail < 12; avail++)
			ck_assert_int_eq(bbx_rec_decode(c, avail, &r), -EBADMSG);
	}
	/* Every prefix of a good record is "incomplete", never "malformed". */
	for (size_t avail = 0; avail < (size_t)len; avail++)
		ck_assert_int_eq(bbx_rec_decode(buf, avail, &r), -EAGAIN);
	ck_assert_int_eq(bbx_rec_decode(buf, (size_t)len, &r), 0);
}
END_TEST

START_TEST(test_reject_bad_length)
{
	uint8_t buf[4096], c[4096];
	long len = enc_full(buf, sizeof buf, BBX_REC_RENAME);
	struct bbx_rec r;
	/* Record length below the minimum, above the maximum, or not where the checksum is. */
	const uint32_t lens[] = {0, 1, BBX_REC_MIN_LEN - 1, BBX_REC_MAX_LEN + 1, UINT32_MAX,
				 (uint32_t)len - 1, (uint32_t)len - 8, (uint32_t)len + 1,
				 (uint32_t)len + 8, BBX_REC_MIN_LEN};
	for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		memset(c, 0, sizeof c);
		memcpy(c, buf, (size_t)len);
		put32(c + 8, lens[i]);
		ck_assert_msg(bbx_rec_decode(c, sizeof c, &r) == -EBADMSG, "len %u", lens[i]);
	}
	/* Header length below 56, or reaching into the trailer (checksum made valid). */
	const uint32_t hlens[] = {0, BBX_REC_HDR_LEN - 1, (uint32_t)len - 7, (uint32_t)len,
				  UINT32_MAX};
	for (size_t i = 0; i < sizeof hlens / sizeof hlens[0]; i++) {
		memcpy(c, buf, (size_t)len);
		put32(c + 12, hlens[i]);
		reseal(c, (size_t)len);
		ck_assert_msg(bbx_rec_decode(c, (size_t)len, &r) == -EBADMSG, "hlen %u", hlens[i]);
	}
	/* A version this reader does not know. */
	memcpy(c, buf, (size_t)len);
	c[4] = BBX_REC_VERSION + 1;
	reseal(c, (size_t)len);
	ck_assert_int_eq(bbx_rec_decode(c, (size_t)len, &r), -EBADMSG);
}
END_TEST

/* Any single damaged byte, anywhere in the record, is detected. */
START_TEST(test_reject_flipped_byte)
{
	uint8_t rec[4096];
	long len = enc_full(rec, sizeof rec, BBX_REC_META);
	/* Padded with zeros so that a flipped length byte still finds "enough" bytes and the
	 * checksum, not the length, has to catch it. */
	size_t cap = (size_t)len + (2u << 20);
	uint8_t *c = calloc(1, cap);
	ck_assert_ptr_nonnull(c);
	struct bbx_rec r;
	const uint8_t masks[] = {0x01, 0x10, 0x80, 0xff};
	for (long i = 0; i < len; i++) {
		for (size_t m = 0; m < sizeof masks; m++) {
			memcpy(c, rec, (size_t)len);
			c[i] ^= masks[m];
			ck_assert_msg(bbx_rec_decode(c, cap, &r) == -EBADMSG,
				      "byte %ld ^ 0x%02x accepted", i, masks[m]);
			/* Exactly the record's bytes: never accepted (a longer claimed length is
			 * "incomplete", anything else malformed). */
			int rc = bbx_rec_decode(c, (size_t)len, &r);
			ck_assert_msg(rc == -EBADMSG || (rc == -EAGAIN && i >= 8 && i < 12),
				      "byte %ld ^ 0x%02x: %d", i, masks[m], rc);
		}
	}
	free(c);
}
END_TEST

/* Builds header + OP + a raw field whose TLV length is `claimed`, then reseals. */
static size_t build_overrun(uint8_t *buf, size_t cap, uint32_t claimed, size_t actual)
{
	struct bbx_enc e;
	bbx_enc_begin(&e, buf, cap, BBX_REC_NOTE);
	bbx_enc_str(&e, BBX_T_OP, "note");
	uint8_t body[64];
	memset(body, 'x', sizeof body);
	ck_assert_uint_le(actual, sizeof body);
	bbx_enc_bytes(&e, BBX_T_TEXT, body, actual);
	size_t field = e.len - 6 - actual;
	struct bbx_rec_hdr h = {.seq = 5};
	long len = bbx_enc_finish(&e, &h);
	ck_assert_int_gt(len, 0);
	put32(buf + field + 2, claimed);
	reseal(buf, (size_t)len);
	return (size_t)len;
}

START_TEST(test_reject_field_overrun)
{
	uint8_t buf[512];
	struct bbx_rec r;
	/* The TEXT field claims one byte more than remains before the trailer. */
	size_t len = build_overrun(buf, sizeof buf, 11, 10);
	ck_assert_int_eq(bbx_rec_decode(buf, len, &r), -EBADMSG);
	/* ... or wildly more (must not wrap around). */
	len = build_overrun(buf, sizeof buf, UINT32_MAX, 10);
	ck_assert_int_eq(bbx_rec_decode(buf, len, &r), -EBADMSG);
	len = build_overrun(buf, sizeof buf, UINT32_MAX - 5, 10);
	ck_assert_int_eq(bbx_rec_decode(buf, len, &r), -EBADMSG);
	/* Sanity: the same record with the true length decodes. */
	len = build_overrun(buf, sizeof buf, 10, 10);
	buf[len - 8 - 1] = 0; /* TEXT must end with its NUL */
	reseal(buf, len);
	ck_assert_int_eq(bbx_rec_decode(buf, len, &r), 0);

	/* 1..5 stray bytes after the last field: not even a TLV header fits. */
	for (size_t stray = 1; stray < 6; stray++) {
		struct bbx_enc e;
		bbx_enc_begin(&e, buf, sizeof buf, BBX_REC_NOTE);
		bbx_enc_str(&e, BBX_T_OP, "note");
		memset(e.buf + e.len, 0, stray);
		e.len += stray;
		struct bbx_rec_hdr h = {.seq = 6};
		long l = bbx_enc_finish(&e, &h);
		ck_assert_int_gt(l, 0);
		ck_assert_msg(bbx_rec_decode(buf, (size_t)l, &r) == -EBADMSG, "stray %zu", stray);
	}
}
END_TEST

static const int str_tags[] = {BBX_T_OP,   BBX_T_PATH,  BBX_T_PATH2, BBX_T_OBJECT,
			       BBX_T_CWD,  BBX_T_TEXT,  BBX_T_XNAME, BBX_T_EXE};

static int decode_one_field(int tag, const void *v, size_t n)
{
	uint8_t buf[512];
	struct bbx_enc e;
	bbx_enc_begin(&e, buf, sizeof buf, BBX_REC_NOTE);
	bbx_enc_bytes(&e, tag, v, n);
	struct bbx_rec_hdr h = {.seq = 9};
	long len = bbx_enc_finish(&e, &h);
	ck_assert_int_gt(len, 0);
	struct bbx_rec r;
	return bbx_rec_decode(buf, (size_t)len, &r);
}

START_TEST(test_reject_string_without_nul)
{
	for (size_t i = 0; i < sizeof str_tags / sizeof str_tags[0]; i++) {
		int t = str_tags[i];
		ck_assert_msg(decode_one_field(t, "abc", 3) == -EBADMSG, "tag %d no NUL", t);
		ck_assert_msg(decode_one_field(t, "", 0) == -EBADMSG, "tag %d empty", t);
		ck_assert_msg(decode_one_field(t, "a\0b", 3) == -EBADMSG, "tag %d NUL not last", t);
		ck_assert_msg(decode_one_field(t, "abc", 4) == 0, "tag %d good", t);
	}
	/* argv must end with a NUL too (an empty argv is fine). */
	ck_assert_int_eq(decode_one_field(BBX_T_ARGV, "a\0b", 3), -EBADMSG);
	ck_assert_int_eq(decode_one_field(BBX_T_ARGV, "a\0b", 4), 0);
	ck_assert_int_eq(decode_one_field(BBX_T_ARGV, "", 0), 0);
	/* Byte fields need no NUL. */
	ck_assert_int_eq(decode_one_field(BBX_T_TARGET, "abc", 3), 0);
	ck_assert_int_eq(decode_one_field(BBX_T_XVALUE, "abc", 3), 0);
}
END_TEST

START_TEST(test_reject_fixed_size_fields)
{
	uint8_t z[BBX_STAT_ENC_LEN + 8] = {0};
	ck_assert_int_eq(decode_one_field(BBX_T_STAT, z, BBX_STAT_ENC_LEN - 8), -EBADMSG);
	ck_assert_int_eq(decode_one_field(BBX_T_STAT, z, BBX_STAT_ENC_LEN + 8), -EBADMSG);
	ck_assert_int_eq(decode_one_field(BBX_T_STAT, z, BBX_STAT_ENC_LEN), 0);
	const int t64[] = {BBX_T_SIZE, BBX_T_REF, BBX_T_DEV, BBX_T_INO, BBX_T_RET, BBX_T_COUNT};
	for (size_t i = 0; i < sizeof t64 / sizeof t64[0]; i++) {
		ck_assert_int_eq(decode_one_field(t64[i], z, 4), -EBADMSG);
		ck_assert_int_eq(decode_one_field(t64[i], z, 9), -EBADMSG);
		ck_assert_int_eq(decode_one_field(t64[i], z, 0), -EBADMSG);
		ck_assert_int_eq(decode_one_field(t64[i], z, 8), 0);
	}
	const int t32[] = {BBX_T_KIND, BBX_T_HOW, BBX_T_FLAGS, BBX_T_MASK, BBX_T_ERR};
	for (size_t i = 0; i < sizeof t32 / sizeof t32[0]; i++) {
		ck_assert_int_eq(decode_one_field(t32[i], z, 8), -EBADMSG);
		ck_assert_int_eq(decode_one_field(t32[i], z, 2), -EBADMSG);
		ck_assert_int_eq(decode_one_field(t32[i], z, 4), 0);
	}
}
END_TEST

/* ---- forward compatibility ---- */

START_TEST(test_unknown_tags_skipped)
{
	uint8_t buf[8192];
	struct bbx_enc e;
	bbx_enc_begin(&e, buf, sizeof buf, BBX_REC_PRESERVE);
	/* Unknown tags before, between and after known ones, with payloads that would be
	 * malformed as any known type (no NUL, odd sizes, an embedded magic). */
	bbx_enc_bytes(&e, 0, "zero", 4);
	bbx_enc_str(&e, BBX_T_OP, "unlink");
	bbx_enc_bytes(&e, 1000, "BBX1\x01", 5); /* 24 is RULE now */
	bbx_enc_str(&e, BBX_T_PATH, "/ws/f");
	bbx_enc_bytes(&e, 999, NULL, 0);
	bbx_enc_u64(&e, BBX_T_SIZE, 77);
	uint8_t big[3000];
	memset(big, 0xee, sizeof big);
	bbx_enc_bytes(&e, 0x7fff, big, sizeof big);
	bbx_enc_stat(&e, &st_full);
	bbx_enc_bytes(&e, 0xffff, "x", 1);
	long len = bbx_enc_finish(&e, &hdr_full);
	ck_assert_int_gt(len, 0);
	struct bbx_rec r;
	ck_assert_int_eq(bbx_rec_decode(buf, (size_t)len, &r), 0);
	ck_assert_str_eq(r.op, "unlink");
	ck_assert_str_eq(r.path, "/ws/f");
	ck_assert(r.has_size);
	ck_assert_uint_eq(r.size, 77);
	assert_stat_eq(&r.st, &st_full);
	ck_assert_ptr_null(r.path2);
	ck_assert(!r.has_xvalue);
}
END_TEST

/* A future header may grow: fields start at the header length the record states. */
START_TEST(test_longer_header_skipped)
{
	uint8_t buf[4096], c[4096];
	long len = enc_full(buf, sizeof buf, BBX_REC_EXEC);
	const size_t extra = 24;
	memcpy(c, buf, BBX_REC_HDR_LEN);
	memset(c + BBX_REC_HDR_LEN, 0xab, extra);
	memcpy(c + BBX_REC_HDR_LEN + extra, buf + BBX_REC_HDR_LEN, (size_t)len - BBX_REC_HDR_LEN);
	size_t clen = (size_t)len + extra;
	put32(c + 8, (uint32_t)clen);
	put32(c + 12, BBX_REC_HDR_LEN + extra);
	reseal(c, clen);
	struct bbx_rec r;
	ck_assert_int_eq(bbx_rec_decode(c, clen, &r), 0);
	ck_assert_uint_eq(r.len, clen);
	ck_assert_str_eq(r.op, "openat");
	ck_assert_str_eq(r.exe, "/usr/bin/prog");
	assert_stat_eq(&r.st, &st_full);
	assert_hdr_eq(&r.h, &hdr_full);
}
END_TEST

/* A decoder handed more bytes than the record decodes only the record. */
START_TEST(test_decode_with_trailing_bytes)
{
	uint8_t buf[8192];
	long len = enc_full(buf, sizeof buf, BBX_REC_CREATE);
	memset(buf + len, 0xcc, 100);
	struct bbx_rec r;
	ck_assert_int_eq(bbx_rec_decode(buf, (size_t)len + 100, &r), 0);
	assert_full(buf, len, &r, BBX_REC_CREATE);
}
END_TEST

/* ---- encoder overflow ---- */

START_TEST(test_encoder_overflow)
{
	uint8_t buf[256];
	struct bbx_enc e;
	struct bbx_rec_hdr h = {.seq = 1};
	/* A buffer smaller than an empty record (header, CHAIN, trailer). */
	const size_t empty = BBX_REC_MIN_LEN + BBX_REC_CHAIN_LEN;
	bbx_enc_begin(&e, buf, BBX_REC_MIN_LEN - 1, BBX_REC_NOTE);
	ck_assert_int_eq(bbx_enc_finish(&e, &h), -ENAMETOOLONG);
	bbx_enc_begin(&e, buf, empty - 1, BBX_REC_NOTE);
	ck_assert_int_eq(bbx_enc_finish(&e, &h), -ENAMETOOLONG);
	bbx_enc_begin(&e, buf, empty, BBX_REC_NOTE);
	ck_assert_int_eq(bbx_enc_finish(&e, &h), (long)empty);

	/* Exactly full: header + CHAIN + (6 + 5) + trailer. */
	const size_t exact = empty + 6 + 5;
	memset(buf, 0x5a, sizeof buf);
	bbx_enc_begin(&e, buf, exact, BBX_REC_NOTE);
	bbx_enc_str(&e, BBX_T_TEXT, "abcd");
	ck_assert_int_eq(bbx_enc_finish(&e, &h), (long)exact);
	ck_assert_uint_eq(buf[exact], 0x5a); /* nothing written past cap */
	/* One byte too many: -ENAMETOOLONG, and nothing written past cap. */
	memset(buf, 0x5a, sizeof buf);
	bbx_enc_begin(&e, buf, exact, BBX_REC_NOTE);
	bbx_enc_str(&e, BBX_T_TEXT, "abcde");
	ck_assert_int_eq(e.err, -ENAMETOOLONG);
	/* Sticky: a field that would fit is not added after the overflow. */
	size_t before = e.len;
	bbx_enc_u32(&e, BBX_T_KIND, 1);
	ck_assert_uint_eq(e.len, before);
	ck_assert_int_eq(bbx_enc_finish(&e, &h), -ENAMETOOLONG);
	for (size_t i = exact; i < sizeof buf; i++)
		ck_assert_uint_eq(buf[i], 0x5a);

	/* Every encoder entry point overflows the same way. */
	for (int which = 0; which < 5; which++) {
		memset(buf, 0x5a, sizeof buf);
		bbx_enc_begin(&e, buf, BBX_REC_MIN_LEN + BBX_REC_CHAIN_LEN + 5, BBX_REC_META);
		switch (which) {
		case 0: bbx_enc_u32(&e, BBX_T_KIND, 1); break;
		case 1: bbx_enc_u64(&e, BBX_T_SIZE, 1); break;
		case 2: bbx_enc_i64(&e, BBX_T_RET, -1); break;
		case 3: bbx_enc_stat(&e, &st_full); break;
		case 4: bbx_enc_bytes(&e, BBX_T_XVALUE, "", 0); break;
		}
		ck_assert_int_eq(bbx_enc_finish(&e, &h), -ENAMETOOLONG);
		for (size_t i = BBX_REC_MIN_LEN + BBX_REC_CHAIN_LEN + 5; i < sizeof buf; i++)
			ck_assert_uint_eq(buf[i], 0x5a);
	}
}
END_TEST

/* The encoder must never produce a record the decoder rejects: a record above
 * BBX_REC_MAX_LEN would be written to the journal, counted as success by the caller,
 * and then skipped as damage by every reader (fail open). */
START_TEST(test_encoder_respects_max_len)
{
	size_t cap = BBX_REC_MAX_LEN + 4096;
	uint8_t *buf = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert(buf != MAP_FAILED);
	static const uint8_t zero[BBX_REC_MAX_LEN];
	struct bbx_enc e;
	bbx_enc_begin(&e, buf, cap, BBX_REC_META);
	bbx_enc_bytes(&e, BBX_T_XVALUE, zero, sizeof zero);
	struct bbx_rec_hdr h = {.seq = 1};
	long len = bbx_enc_finish(&e, &h);
	if (len > 0) {
		struct bbx_rec r;
		ck_assert_msg(bbx_rec_decode(buf, (size_t)len, &r) == 0,
			      "bbx_enc_finish produced a %ld-byte record that bbx_rec_decode "
			      "rejects (BBX_REC_MAX_LEN is %u)", len, BBX_REC_MAX_LEN);
	} else {
		ck_assert(len == -ENAMETOOLONG || len == -E2BIG);
	}
	munmap(buf, cap);
}
END_TEST

static Suite *record_suite(void)
{
	Suite *s = suite_create("record");
	TCase *tc = tcase_create("roundtrip");
	tcase_add_loop_test(tc, test_roundtrip_every_type, 1, BBX_REC_TYPE_MAX + 1);
	tcase_add_test(tc, test_header_layout);
	tcase_add_test(tc, test_roundtrip_empty);
	tcase_add_test(tc, test_stat_from_real_file);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_decode_with_trailing_bytes);
	suite_add_tcase(s, tc);

	tc = tcase_create("reject");
	tcase_add_test(tc, test_reject_bad_magic);
	tcase_add_test(tc, test_reject_bad_length);
	tcase_add_test(tc, test_reject_flipped_byte);
	tcase_add_test(tc, test_reject_field_overrun);
	tcase_add_test(tc, test_reject_string_without_nul);
	tcase_add_test(tc, test_reject_fixed_size_fields);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);

	tc = tcase_create("compat");
	tcase_add_test(tc, test_unknown_tags_skipped);
	tcase_add_test(tc, test_longer_header_skipped);
	suite_add_tcase(s, tc);

	tc = tcase_create("encoder");
	tcase_add_test(tc, test_encoder_overflow);
	tcase_add_test(tc, test_encoder_respects_max_len);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return unit_main(record_suite()); }
