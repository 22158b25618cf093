/* SPDX-License-Identifier: MIT
 * pathmap.c - string hash map (see pathmap.h). */
#include "pathmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

static size_t find(const struct bbx_pathmap *m, const char *key)
{
	size_t mask = m->cap - 1, i = (size_t)XXH3_64bits(key, strlen(key)) & mask;
	while (m->keys[i] && strcmp(m->keys[i], key) != 0)
		i = (i + 1) & mask;
	return i;
}

static int grow(struct bbx_pathmap *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 1024;
	struct bbx_pathmap n = {calloc(ncap, sizeof *n.keys), calloc(ncap, sizeof *n.vals), ncap,
				m->len};
	if (!n.keys || !n.vals) {
		free(n.keys);
		free(n.vals);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->keys[i])
			continue;
		size_t j = find(&n, m->keys[i]);
		n.keys[j] = m->keys[i];
		n.vals[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	*m = n;
	return 0;
}

int bbx_pathmap_put(struct bbx_pathmap *m, const char *key, size_t **slot)
{
	if ((m->len + 1) * 2 > m->cap && grow(m))
		return -ENOMEM;
	size_t i = find(m, key);
	*slot = &m->vals[i];
	if (m->keys[i])
		return 0;
	m->keys[i] = key;
	m->vals[i] = 0;
	m->len++;
	return 1;
}

size_t *bbx_pathmap_get(const struct bbx_pathmap *m, const char *key)
{
	if (!m->cap)
		return NULL;
	size_t i = find(m, key);
	return m->keys[i] ? &m->vals[i] : NULL;
}

void bbx_pathmap_free(struct bbx_pathmap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof *m);
}
