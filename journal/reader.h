/* SPDX-License-Identifier: MIT
 *
 * reader.h - iterates over a journal file.
 *
 * Invariant 7: any prefix of a journal is a valid journal.  A record cut short at the
 * end of the file (crash, kill -9, a short write) is reported as a torn tail and ends
 * the iteration; it is never an error that blocks undo.  Damage in the middle (a short
 * write followed by later appends, or corruption) is reported and skipped by scanning
 * for the next record whose checksum verifies.
 */
#ifndef BBX_READER_H
#define BBX_READER_H

#include "record.h"

#include <stddef.h>
#include <stdint.h>

struct bbx_reader {
	const uint8_t *map;
	size_t size, off;
	size_t torn_off, torn_len; /* set when the tail is torn */
	size_t bad_ranges;         /* damaged ranges skipped in the middle */
	size_t bad_bytes;
	int mapped;                /* map is ours to unmap */
	/* 0 (as opened): bbx_reader_next decodes every record.  Else a mask of 1u << type:
	 * the records of other types come back with their type and length only
	 * (bbx_rec_decode_types), for a reader that passes over them. */
	uint32_t types;
};

enum {
	BBX_READ_OK = 0,  /* *out holds the record at *rec_off */
	BBX_READ_END = 1, /* clean end of log */
	BBX_READ_TORN = 2 /* end of log, last torn_len bytes were an incomplete record */
};

/* Maps path read-only.  Returns 0 or -errno.  An empty file is a valid empty journal. */
int bbx_reader_open(struct bbx_reader *r, const char *path);
/* The same, positioned at off, which must start a record (the end of records already
 * read some other way): only the bytes from there are read into memory ahead. */
int bbx_reader_open_at(struct bbx_reader *r, const char *path, size_t off);
/* Reads from a memory buffer instead (tests). */
void bbx_reader_init_mem(struct bbx_reader *r, const void *buf, size_t size);
/* Next record.  Returns BBX_READ_OK, BBX_READ_END or BBX_READ_TORN. */
int bbx_reader_next(struct bbx_reader *r, struct bbx_rec *out, size_t *rec_off);
void bbx_reader_close(struct bbx_reader *r);

/* Offsets of every valid record, in file order (for backward replay).
 * Returns 0 or -ENOMEM; *offs is malloc'd. */
int bbx_reader_index(struct bbx_reader *r, size_t **offs, size_t *count);

#endif
