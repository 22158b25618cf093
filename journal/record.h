/* SPDX-License-Identifier: MIT
 *
 * record.h - the binary journal record: constants, encoder and decoder.
 *
 * A record is a fixed 56-byte little-endian header, a sequence of TLV fields and an
 * XXH64 trailer over everything before it (doc/journal-format.md is the normative
 * description).  The encoder writes into a caller-supplied buffer and never allocates,
 * so it is usable inside the shim's wrappers, signal handlers and vfork children.
 * The decoder never allocates either: decoded strings point into the record bytes.
 */
#ifndef BBX_RECORD_H
#define BBX_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define BBX_REC_MAGIC 0x31584242u /* "BBX1" read as a little-endian u32 */
#define BBX_REC_VERSION 1
#define BBX_REC_HDR_LEN 56
#define BBX_REC_TRAILER_LEN 8
#define BBX_REC_MIN_LEN (BBX_REC_HDR_LEN + BBX_REC_TRAILER_LEN)
/* Upper bound a reader accepts; an EXEC record with a huge argv is the largest. */
#define BBX_REC_MAX_LEN (8u << 20)

/* Record types.  Numbers are part of the on-disk format: never renumber. */
enum bbx_rec_type {
	BBX_REC_EXEC = 1,     /* a program is about to be executed */
	BBX_REC_CREATE = 2,   /* a name is about to be created */
	BBX_REC_PRESERVE = 3, /* an existing object's content/entry is preserved */
	BBX_REC_SIZE = 4,     /* a regular file is about to grow (append) */
	BBX_REC_RMDIR = 5,    /* an empty directory is about to be removed */
	BBX_REC_RENAME = 6,   /* a name is about to be moved */
	BBX_REC_META = 7,     /* mode/owner/times/xattr are about to change */
	BBX_REC_DIRMETA = 8,  /* a directory's metadata before its first entry change */
	BBX_REC_RESULT = 9,   /* outcome of an earlier record's call */
	BBX_REC_FINAL = 10,   /* state of a touched path when the run ended (seal) */
	BBX_REC_SEAL = 11,    /* the run ended; FINAL records precede it */
	BBX_REC_NOTE = 12,    /* free text: warnings, undo markers */
	BBX_REC_DENY = 13,    /* a call the policy refused (or, in audit mode, would have) */
	BBX_REC_PROC = 14,    /* a process's first record: its program, argv and cwd */
	BBX_REC_EXIT = 15,    /* a process ended: PID and wait STATUS (written by the reaper) */
	BBX_REC_NET = 16,     /* an allowed egress: connect/sendto/sendmsg to ADDR */
	BBX_REC_RESOLVE = 17, /* a name lookup: HOST and the ADDRs it resolved to */
	BBX_REC_TYPE_MAX = 17
};

/* Field tags (TLV).  Unknown tags are skipped by readers: adding one is compatible. */
enum bbx_tag {
	BBX_T_OP = 1,      /* str: libc entry point or tool action */
	BBX_T_PATH = 2,    /* str: absolute path */
	BBX_T_PATH2 = 3,   /* str: second path (rename target, link source) */
	BBX_T_TARGET = 4,  /* bytes: symlink content */
	BBX_T_OBJECT = 5,  /* str: object name under objects/ */
	BBX_T_CWD = 6,     /* str */
	BBX_T_ARGV = 7,    /* bytes: NUL-terminated strings back to back */
	BBX_T_STAT = 8,    /* struct: see bbx_stat encoding */
	BBX_T_SIZE = 9,    /* u64 */
	BBX_T_KIND = 10,   /* u32: enum bbx_kind */
	BBX_T_HOW = 11,    /* u32: enum bbx_how */
	BBX_T_REF = 12,    /* u64: seq of the record this one refers to */
	BBX_T_RET = 13,    /* i64 */
	BBX_T_ERR = 14,    /* i32: errno */
	BBX_T_DEV = 15,    /* u64 */
	BBX_T_INO = 16,    /* u64 */
	BBX_T_FLAGS = 17,  /* u32: call flags (open flags, rename flags, ...) */
	BBX_T_MASK = 18,   /* u32: enum bbx_meta_mask */
	BBX_T_XNAME = 19,  /* str: xattr name */
	BBX_T_XVALUE = 20, /* bytes: old xattr value (absent tag = attribute did not exist) */
	BBX_T_TEXT = 21,   /* str */
	BBX_T_COUNT = 22,  /* u64 */
	BBX_T_EXE = 23,    /* str: executable path as passed */
	BBX_T_RULE = 24,     /* str: the rule that decided, "FILE:LINE [section] key = value" */
	BBX_T_REASON = 25,   /* str: why, in words ("outside write roots") */
	BBX_T_DECISION = 26, /* u32: enum bbx_decision */
	BBX_T_CLASS = 27,    /* u32: enum bbx_class (exec rules) */
	BBX_T_ADDR = 28,     /* str: "1.2.3.4:80", "[::1]:443", "unix:/path", "unix:@abstract" */
	BBX_T_HOST = 29,     /* str: a host name as looked up */
	BBX_T_PID = 30,      /* u64: the process a record is about (EXIT) */
	BBX_T_STATUS = 31,   /* u32: raw wait status (EXIT) */
	BBX_T_CHAIN = 32,    /* u64: trailer (XXH64) of the previous record in file order */
	BBX_T_ENV = 33,      /* bytes: NAME=VALUE strings, NUL-terminated, back to back */
	BBX_T_ACCESS = 34,   /* u32: enum bbx_access (what a DENY was about) */
	BBX_T_DURATION = 35, /* u64: ns a capture spent keeping its pre-image (a PRESERVE copy) */
	BBX_T_OFFSET = 36,   /* u64: where a packed pre-image starts in its object (how=packed) */
	BBX_T_XATTRS = 37,   /* bytes: a removed directory's extended attributes, each as its
				name, NUL, u32 value length (LE), value; back to back */
};

enum bbx_decision {
	BBX_DEC_ALLOW = 0,
	BBX_DEC_LOG = 1,     /* allowed, and flagged for the log (exec "log" rules) */
	BBX_DEC_DENY = 2,    /* refused */
	BBX_DEC_AUDIT = 3,   /* would have been refused; mode = audit let it through */
	BBX_DEC_ASK = 4,     /* reserved: approval */
};

enum bbx_class {
	BBX_CLASS_NONE = 0,
	BBX_CLASS_SAFE = 1,
	BBX_CLASS_RISKY = 2,
	BBX_CLASS_DANGEROUS = 3,
	BBX_CLASS_DESTRUCTIVE = 4,
};

enum bbx_access {
	BBX_ACC_WRITE = 1,   /* any mutation of a path */
	BBX_ACC_READ = 2,    /* open for reading, opendir, stat, readlink */
	BBX_ACC_EXEC = 3,
	BBX_ACC_CONNECT = 4, /* connect, sendto, sendmsg, sendmmsg */
	BBX_ACC_SYSCALL = 5, /* syscall()/io_uring refused */
};

enum bbx_kind {
	BBX_KIND_NONE = 0, /* path does not exist (FINAL) */
	BBX_KIND_FILE = 1,
	BBX_KIND_DIR = 2,
	BBX_KIND_SYMLINK = 3,
	BBX_KIND_FIFO = 4,
	BBX_KIND_CHR = 5,
	BBX_KIND_BLK = 6,
	BBX_KIND_SOCK = 7,
	BBX_KIND_HARDLINK = 8, /* CREATE via link(2): a new name for an existing inode */
	BBX_KIND_ANON = 9,     /* unnamed file (tmpfile, O_TMPFILE): nothing to undo */
};

enum bbx_how {
	BBX_HOW_NONE = 0,    /* nothing kept: covered by an earlier capture of this run */
	BBX_HOW_LINK = 1,    /* object is a hard link to the original inode */
	BBX_HOW_COPY = 2,    /* object is a byte copy */
	BBX_HOW_REFLINK = 3, /* object shares extents with the original (FICLONE) */
	BBX_HOW_INLINE = 4,  /* everything needed is in the record (symlink, special) */
	BBX_HOW_LOST = 5,    /* could not be kept and the policy allowed it: unrecoverable */
	BBX_HOW_ALIAS = 6,   /* another name of the same inode survives: PATH2 names it */
	BBX_HOW_EXCL = 7,    /* CREATE: the name was not looked up first; the call makes a
			      * new inode or fails with EEXIST (O_CREAT|O_EXCL, mkstemp) */
	BBX_HOW_PACKED = 8,  /* a byte copy at OFFSET of the run's shared object (SIZE bytes) */
};

enum bbx_meta_mask {
	BBX_META_MODE = 1,
	BBX_META_OWNER = 2,
	BBX_META_TIMES = 4,
	BBX_META_XATTR = 8,
	BBX_META_NOFOLLOW = 16, /* the call acted on a symlink itself */
};

/* The subset of struct stat the journal keeps.  Encoded as 14 little-endian u64. */
struct bbx_stat {
	uint32_t mode, uid, gid;
	uint64_t size, dev, ino, rdev, nlink;
	int64_t atime_sec, atime_nsec, mtime_sec, mtime_nsec, ctime_sec, ctime_nsec;
};
#define BBX_STAT_ENC_LEN (14 * 8)

void bbx_stat_from(struct bbx_stat *out, const struct stat *st);
int bbx_kind_of_mode(uint32_t mode);
const char *bbx_kind_name(int kind);
const char *bbx_rec_type_name(int type);
const char *bbx_how_name(int how);

/* Encoder over a caller buffer.  Errors are sticky: after an overflow every call is a
 * no-op and bbx_enc_finish() returns -ENAMETOOLONG. */
struct bbx_enc {
	uint8_t *buf;
	size_t cap, len;
	int err;
};

void bbx_enc_begin(struct bbx_enc *e, void *buf, size_t cap, int type);
void bbx_enc_bytes(struct bbx_enc *e, int tag, const void *p, size_t n);
void bbx_enc_str(struct bbx_enc *e, int tag, const char *s); /* stores the NUL too */
/* A value made in place, with no buffer of the caller's: bbx_enc_room gives where its
 * bytes go and *room, how many fit (NULL: none, or an error already); bbx_enc_commit then
 * encodes the n bytes written there (n <= *room) as one field of the tag.  Nothing else
 * may be encoded in between. */
uint8_t *bbx_enc_room(struct bbx_enc *e, size_t *room);
void bbx_enc_commit(struct bbx_enc *e, int tag, size_t n);
void bbx_enc_u32(struct bbx_enc *e, int tag, uint32_t v);
void bbx_enc_u64(struct bbx_enc *e, int tag, uint64_t v);
void bbx_enc_i64(struct bbx_enc *e, int tag, int64_t v);
void bbx_enc_stat(struct bbx_enc *e, const struct bbx_stat *st);

/* bbx_enc_begin() emits a CHAIN field (value 0) as the first field, at this offset:
 * tag (2) + length (4) + u64 (8).  The writer patches it in place under the journal lock. */
#define BBX_REC_CHAIN_OFF BBX_REC_HDR_LEN
#define BBX_REC_CHAIN_LEN 14

/* Sets the CHAIN value of a finished record of len bytes (if its first field is the
 * CHAIN reserved by bbx_enc_begin) and computes the trailer.  Returns the record's
 * trailer (its XXH64 checksum) either way: the next record's chain value. */
uint64_t bbx_rec_set_chain(void *rec, size_t len, uint64_t chain);
/* Computes a finished record's trailer (XXH64 of all that precedes it), stores it and
 * returns it.  len >= BBX_REC_TRAILER_LEN. */
uint64_t bbx_rec_sum(void *rec, size_t len);

/* Header values filled in at finish time. */
struct bbx_rec_hdr {
	uint64_t seq, realtime_ns, mono_ns;
	int32_t pid, ppid;
	uint32_t uid, flags;
};

/* Completes the header and the checksum.  Returns the record length, -ENAMETOOLONG
 * when the fields did not fit in the buffer, or -E2BIG past BBX_REC_MAX_LEN. */
long bbx_enc_finish(struct bbx_enc *e, const struct bbx_rec_hdr *h);
/* The same without the checksum (the trailer is left 0), for a record that reaches the
 * journal only through bbx_writer_append_chained*, which computes it there anyway once
 * the CHAIN value is in (the shim's records, run.c: one XXH64 a record, not two). */
long bbx_enc_finish_unsummed(struct bbx_enc *e, const struct bbx_rec_hdr *h);

/* A decoded record.  Pointers refer into the record bytes and live as long as they. */
struct bbx_rec {
	int type, version;
	uint32_t len;
	struct bbx_rec_hdr h;
	const char *op, *path, *path2, *object, *cwd, *text, *xname, *exe;
	const char *rule, *reason, *addr, *host;
	const char *env; size_t env_len; /* NUL-separated NAME=VALUE */
	uint64_t pid, chain;
	bool has_pid, has_status, has_chain, has_decision;
	uint32_t decision, klass, status, access;
	const char *target; size_t target_len;
	const char *argv; size_t argv_len; /* NUL-separated */
	const void *xvalue; size_t xvalue_len; bool has_xvalue;
	const uint8_t *xattrs; size_t xattrs_len; /* BBX_T_XATTRS, checked by decode */
	struct bbx_stat st; bool has_stat;
	uint64_t size, ref, dev, ino, count, duration, offset;
	bool has_size, has_ref, has_ino, has_ret, has_duration, has_offset;
	int64_t ret;
	int32_t err;
	uint32_t kind, how, flags, mask;
};

/* Decodes the record at p (avail bytes available).
 * Returns 0, -EAGAIN if avail is shorter than the record claims (a torn tail when at
 * the end of the log), -EBADMSG for a bad magic, length, checksum or field layout. */
int bbx_rec_decode(const void *p, size_t avail, struct bbx_rec *out);
/* The same checks (magic, lengths, version, checksum), but the fields of a record whose
 * type is not in types (a mask of 1u << type) are not decoded: only its type, version,
 * len and header are set, every other member of out is left as it was.  For a reader
 * that acts on a few types and passes over the rest (the seal: 15,000 RESULTs, EXECs
 * and PROCs in a tar -x of a node_modules).  types 0 decodes every record. */
int bbx_rec_decode_types(const void *p, size_t avail, struct bbx_rec *out, uint32_t types);

/* A byte count for people: "512 bytes", "300 KiB", "1.5 GiB" (binary units; one
 * decimal unless exact).  Integer arithmetic only, no allocation: usable in the shim. */
void bbx_fmt_size(uint64_t n, char *out, size_t cap);

/* The next attribute of an XATTRS field (p, len) from *off: its name, value and value
 * length.  Returns 1 (and advances *off), 0 at the end, -1 if the field is malformed. */
int bbx_xattrs_next(const uint8_t *p, size_t len, size_t *off, const char **name,
		    const void **val, size_t *vlen);

/* Number of argv strings in r->argv. */
size_t bbx_rec_argc(const struct bbx_rec *r);

/* Whether a packed PRESERVE's range (SIZE bytes at OFFSET) lies within a shared object
 * of objsize bytes: undo checks it before touching the path, --verify reports it. */
static inline bool bbx_rec_packed_fits(const struct bbx_rec *r, uint64_t objsize)
{
	return r->has_offset && r->has_size && r->offset <= UINT64_MAX - r->size &&
	       r->offset + r->size <= objsize;
}

#endif
