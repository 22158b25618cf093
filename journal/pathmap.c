/* SPDX-License-Identifier: MIT
 * pathmap.c - string hash map (see pathmap.h). */
#include "pathmap.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* The three arrays of a table of cap slots, in one allocation: keys, values, and each
 * key's hash (its low 32 bits), which a probe compares before the string - a string
 * compared is a read of the journal, wherever the key lies in it - and growing reuses
 * instead of hashing every key again.  From 64 KiB on, the allocation is a mapping
 * made populated: the slots are hashed all over it, so every page gets written, and
 * populating them at once costs a third of faulting them in one by one (bench/micro -f;
 * bbx-run's seal of 22,000 paths took ~250 page faults here, issue 5). */
#define POPULATE_FROM (64 * 1024)

static size_t table_bytes(size_t cap)
{
	return cap * (sizeof(const char *) + sizeof(size_t) + sizeof(uint32_t));
}

static int table_alloc(struct bbx_pathmap *m, size_t cap)
{
	size_t bytes = table_bytes(cap);
	void *p;
	if (bytes >= POPULATE_FROM) {
		p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (p == MAP_FAILED)
			return -ENOMEM;
	} else if (!(p = calloc(1, bytes))) {
		return -ENOMEM;
	}
	m->keys = p;
	m->vals = (size_t *)(m->keys + cap);
	m->hs = (uint32_t *)(m->vals + cap);
	m->cap = cap;
	return 0;
}

static void table_free(struct bbx_pathmap *m)
{
	if (!m->keys)
		return;
	if (table_bytes(m->cap) >= POPULATE_FROM)
		munmap(m->keys, table_bytes(m->cap));
	else
		free(m->keys);
}

static uint32_t hash_of(const char *key)
{
	return (uint32_t)XXH3_64bits(key, strlen(key));
}

static size_t find(const struct bbx_pathmap *m, const char *key, uint32_t h)
{
	size_t mask = m->cap - 1, i = h & mask;
	while (m->keys[i] && (m->hs[i] != h || strcmp(m->keys[i], key) != 0))
		i = (i + 1) & mask;
	return i;
}

static int grow(struct bbx_pathmap *m)
{
	struct bbx_pathmap n = {0};
	if (table_alloc(&n, m->cap ? m->cap * 2 : 1024))
		return -ENOMEM;
	n.len = m->len;
	size_t mask = n.cap - 1;
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->keys[i])
			continue;
		size_t j = m->hs[i] & mask; /* every key distinct: the first free slot */
		while (n.keys[j])
			j = (j + 1) & mask;
		n.keys[j] = m->keys[i];
		n.vals[j] = m->vals[i];
		n.hs[j] = m->hs[i];
	}
	table_free(m);
	*m = n;
	return 0;
}

int bbx_pathmap_put(struct bbx_pathmap *m, const char *key, size_t **slot)
{
	if ((m->len + 1) * 2 > m->cap && grow(m))
		return -ENOMEM;
	uint32_t h = hash_of(key);
	size_t i = find(m, key, h);
	*slot = &m->vals[i];
	if (m->keys[i])
		return 0;
	m->keys[i] = key;
	m->vals[i] = 0;
	m->hs[i] = h;
	m->len++;
	return 1;
}

size_t *bbx_pathmap_get(const struct bbx_pathmap *m, const char *key)
{
	if (!m->cap)
		return NULL;
	size_t i = find(m, key, hash_of(key));
	return m->keys[i] ? &m->vals[i] : NULL;
}

void bbx_pathmap_free(struct bbx_pathmap *m)
{
	table_free(m);
	memset(m, 0, sizeof *m);
}
