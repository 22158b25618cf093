/* SPDX-License-Identifier: MIT
 *
 * str.h - the two string formats the shim's hot paths need, without printf: a copy
 * ("%s") and a join ("%s/%s").  snprintf did them, and libc's printf engine is one more
 * fault-around window of libc's text (and vfprintf's another) in every process that
 * opens the run or creates a file: ~1 page fault per process of a ./configure, 20-40 us
 * each on a slow VM (issue 5).  Both return what snprintf would: the length of the whole
 * result, the output truncated and NUL-terminated when it does not fit in cap.
 */
#ifndef BBX_STR_H
#define BBX_STR_H

#include <limits.h>
#include <stddef.h>
#include <string.h>

/* Appends s (l bytes) at out + at, as far as cap - 1 allows; returns at + l. */
static inline size_t bbx_str_put(char *out, size_t cap, size_t at, const char *s, size_t l)
{
	if (at + 1 < cap) {
		size_t k = cap - 1 - at < l ? cap - 1 - at : l;
		memcpy(out + at, s, k);
	}
	return at + l;
}

static inline int bbx_str_end(char *out, size_t cap, size_t n)
{
	if (cap)
		out[n < cap ? n : cap - 1] = 0;
	return n > INT_MAX ? -1 : (int)n;
}

/* Appends v in decimal ("%llu"). */
static inline size_t bbx_str_udec(char *out, size_t cap, size_t at, unsigned long long v)
{
	char t[20];
	size_t k = sizeof t;
	do
		t[--k] = (char)('0' + v % 10);
	while (v /= 10);
	return bbx_str_put(out, cap, at, t + k, sizeof t - k);
}

/* Appends the low byte of v as two lower-case hex digits ("%02x" of a byte). */
static inline size_t bbx_str_hex2(char *out, size_t cap, size_t at, unsigned v)
{
	static const char hex[] = "0123456789abcdef";
	const char t[2] = {hex[v >> 4 & 15], hex[v & 15]};
	return bbx_str_put(out, cap, at, t, 2);
}

/* snprintf(out, cap, "%s", s) */
static inline int bbx_scopy(char *out, size_t cap, const char *s)
{
	return bbx_str_end(out, cap, bbx_str_put(out, cap, 0, s, strlen(s)));
}

/* snprintf(out, cap, "%s/%s", a, b) */
static inline int bbx_sjoin(char *out, size_t cap, const char *a, const char *b)
{
	size_t n = bbx_str_put(out, cap, 0, a, strlen(a));
	n = bbx_str_put(out, cap, n, "/", 1);
	return bbx_str_end(out, cap, bbx_str_put(out, cap, n, b, strlen(b)));
}

/* snprintf(out, cap, "/proc/self/fd/%d", fd): the name a descriptor is reopened or read
 * by (readlink of a directory descriptor, once per directory of an rm -r: snprintf took
 * 730 instructions of it). */
static inline int bbx_fd_path(char *out, size_t cap, int fd)
{
	size_t n = bbx_str_put(out, cap, 0, "/proc/self/fd/", sizeof "/proc/self/fd/" - 1);
	if (fd < 0)
		n = bbx_str_put(out, cap, n, "-", 1);
	n = bbx_str_udec(out, cap, n, fd < 0 ? -(unsigned long long)fd : (unsigned long long)fd);
	return bbx_str_end(out, cap, n);
}

#endif
