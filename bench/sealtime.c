/* SPDX-License-Identifier: MIT
 *
 * bench/sealtime.c - the seal alone, timed.  sealtime DIR: DIR is a copy of a run's
 * directory (it is changed); its journal is cut before its first FINAL record, then
 * sealed again by the build this program is linked with (journal/seal.c), and
 * "paths N ms T" is printed.  bench/seal.sh makes the run, copies it for every round
 * and alternates two builds' sealtime.  The cut walks the records by their framing
 * (magic, type, length: doc/journal-format.md), which every release shares, so that
 * the same source links against an older build's libraries.
 */
#include "journal/record.h"
#include "journal/undo.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The offset of the first FINAL record in the journal at path, or its size. */
static long first_final(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) < 0 || sb.st_size == 0)
		return -1;
	const unsigned char *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -1;
	size_t off = 0, size = (size_t)sb.st_size;
	while (off + 12 <= size && le32(m + off) == BBX_REC_MAGIC) {
		unsigned type = m[off + 6] | m[off + 7] << 8;
		uint32_t len = le32(m + off + 8);
		if (type == BBX_REC_FINAL || len < 12 || len > size - off)
			break;
		off += len;
	}
	munmap((void *)m, size);
	return (long)off;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: sealtime RUN-DIRECTORY-COPY\n");
		return 2;
	}
	char jp[4096];
	snprintf(jp, sizeof jp, "%s/journal", argv[1]);
	long cut = first_final(jp);
	if (cut <= 0 || truncate(jp, cut) < 0) {
		fprintf(stderr, "sealtime: %s: no journal to cut\n", jp);
		return 1;
	}
	struct timespec t0, t1;
	size_t n = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = bbx_seal(argv[1], &n);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (rc) {
		fprintf(stderr, "sealtime: seal failed: %s\n", strerror(-rc));
		return 1;
	}
	printf("paths %zu ms %.2f\n", n,
	       (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
	return 0;
}
