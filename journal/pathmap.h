/* SPDX-License-Identifier: MIT
 *
 * pathmap.h - a string-keyed hash map for the tools (seal, undo).  Keys are not copied:
 * they point into the mapped journal, which outlives the map.  Not for the shim.
 */
#ifndef BBX_PATHMAP_H
#define BBX_PATHMAP_H

#include <stddef.h>
#include <stdint.h>

/* Zero-initialise ({0}) before the first put. */
struct bbx_pathmap {
	const char **keys;
	size_t *vals;
	uint32_t *hs; /* each key's hash (pathmap.c) */
	size_t cap, len;
};

/* Inserts key if absent.  Returns 1 if inserted, 0 if present, -ENOMEM.  *slot gets
 * the value slot (left untouched if present). */
int bbx_pathmap_put(struct bbx_pathmap *m, const char *key, size_t **slot);
/* Value slot for key, or NULL. */
size_t *bbx_pathmap_get(const struct bbx_pathmap *m, const char *key);
void bbx_pathmap_free(struct bbx_pathmap *m);

#endif
