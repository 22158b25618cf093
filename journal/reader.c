/* SPDX-License-Identifier: MIT
 * reader.c - journal iteration with torn-tail and damage handling (see reader.h). */
#include "reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define READER_POPULATE_MAX ((uint64_t)256 << 20)

int bbx_reader_open(struct bbx_reader *r, const char *path)
{
	return bbx_reader_open_at(r, path, 0);
}

int bbx_reader_open_at(struct bbx_reader *r, const char *path, size_t off)
{
	memset(r, 0, sizeof *r);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat sb;
	int rc = 0;
	if (fstat(fd, &sb) < 0) {
		rc = -errno;
	} else if (sb.st_size > 0) {
		/* Read front to back, all of it (the seal, undo, bbx-log): mapped whole in the
		 * call, where each 64 KiB of a journal read through page faults costs one,
		 * ~20 us here (issue 5: 25 for the edit workload's seal, ~800 for an undo
		 * of 100,000 files).  A journal too large to map resident at once faults in
		 * as it is read.  From off: only the part from off's page. */
		uint64_t size = (uint64_t)sb.st_size, from = off < size ? off & ~(uint64_t)4095 : size;
		int pop = !from && size <= READER_POPULATE_MAX ? MAP_POPULATE : 0;
		void *m = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE | pop, fd, 0);
		if (m == MAP_FAILED) {
			rc = -errno;
		} else {
			if (from && from < size && size - from <= READER_POPULATE_MAX)
				(void)madvise((char *)m + from, (size_t)(size - from),
					      MADV_POPULATE_READ);
			r->map = m;
			r->size = (size_t)size;
			r->mapped = 1;
			/* A journal cut below off since (a program of the run can truncate
			 * it): nothing more to read. */
			r->off = off < size ? off : (size_t)size;
		}
	}
	close(fd);
	return rc;
}

void bbx_reader_init_mem(struct bbx_reader *r, const void *buf, size_t size)
{
	memset(r, 0, sizeof *r);
	r->map = buf;
	r->size = size;
}

void bbx_reader_close(struct bbx_reader *r)
{
	if (r->mapped && r->map && r->size)
		munmap((void *)r->map, r->size);
	r->mapped = 0;
	r->map = NULL;
}

/* Does the log run cleanly from o to the end of the file (records back to back, at
 * most a torn record - magic present - at the very end)? */
static int chains_to_end(const struct bbx_reader *r, size_t o, struct bbx_rec *tmp)
{
	while (o < r->size) {
		int rc = bbx_rec_decode(r->map + o, r->size - o, tmp);
		if (rc == -EAGAIN)
			return r->size - o >= 4 && memcmp(r->map + o, "BBX1", 4) == 0;
		if (rc)
			return 0;
		o += tmp->len;
	}
	return 1;
}

/* Where the log resumes after a record at off that does not decode (rc).
 *  - Torn (-EAGAIN: it claims more bytes than the file has): the end of the log, unless
 *    a later offset starts a clean run of records to the end of the file (a short write
 *    in the middle, followed by other processes' appends).
 *  - Damaged (-EBADMSG): the first later record that is followed by another record,
 *    by the end of the file, or by a torn record.
 * The "followed by" conditions keep a single record embedded in a damaged record's
 * payload (a path, argv or xattr value can hold any bytes) from surfacing.  A crafted
 * run of several embedded records can still surface when its host is damaged or torn:
 * the bytes alone cannot tell it from real records.  That is for the hash chain of the
 * forensics milestone to close (doc/journal-format.md, "Limits"). */
static size_t resync(const struct bbx_reader *r, size_t off, int rc, struct bbx_rec *tmp)
{
	for (size_t o = off + 1; o + 4 <= r->size; o++) {
		if (r->map[o] != 'B' || r->map[o + 1] != 'B' || r->map[o + 2] != 'X' ||
		    r->map[o + 3] != '1')
			continue;
		if (bbx_rec_decode(r->map + o, r->size - o, tmp) != 0)
			continue;
		if (rc == -EAGAIN) {
			if (chains_to_end(r, o, tmp))
				return o;
			continue;
		}
		size_t end = o + tmp->len;
		if (end == r->size)
			return o;
		int next = bbx_rec_decode(r->map + end, r->size - end, tmp);
		if (next == 0 || (next == -EAGAIN && r->size - end >= 4 &&
				  memcmp(r->map + end, "BBX1", 4) == 0))
			return o;
	}
	return r->size;
}

int bbx_reader_next(struct bbx_reader *r, struct bbx_rec *out, size_t *rec_off)
{
	while (r->off < r->size) {
		size_t avail = r->size - r->off;
		int rc = bbx_rec_decode_types(r->map + r->off, avail, out, r->types);
		if (rc == 0) {
			if (rec_off)
				*rec_off = r->off;
			r->off += out->len;
			return BBX_READ_OK;
		}
		size_t next = resync(r, r->off, rc, out);
		if (next >= r->size) {
			/* Nothing valid follows: the damage is the tail of the log. */
			r->torn_off = r->off;
			r->torn_len = avail;
			r->off = r->size;
			return BBX_READ_TORN;
		}
		r->bad_ranges++;
		r->bad_bytes += next - r->off;
		r->off = next;
	}
	return BBX_READ_END;
}

int bbx_reader_index(struct bbx_reader *r, size_t **offs, size_t *count)
{
	size_t cap = 1024, n = 0, off;
	size_t *v = malloc(cap * sizeof *v);
	if (!v)
		return -ENOMEM;
	struct bbx_rec rec;
	while (bbx_reader_next(r, &rec, &off) == BBX_READ_OK) {
		if (n == cap) {
			size_t *nv = realloc(v, 2 * cap * sizeof *v);
			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
			cap *= 2;
		}
		v[n++] = off;
	}
	*offs = v;
	*count = n;
	return 0;
}
