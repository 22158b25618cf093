/* SPDX-License-Identifier: MIT
 *
 * compile.h - helpers of the policy compiler that the tools and the unit tests use
 * besides policy.h's entry points (libbbxpolc, tools only).
 */
#ifndef BBX_POLICY_COMPILE_H
#define BBX_POLICY_COMPILE_H

#include <stddef.h>

#include "policy.h"

/* Lexical normalisation of an absolute path, in place: no empty, "." or ".." component,
 * no trailing '/' ("/" stays "/"; ".." at the root stays at the root). */
void bbx_pol_normalise(char *path);
/* bbx_pol_normalise(), then the deepest existing ancestor resolved with realpath(3) and
 * the rest (not existing yet) appended as written.  path holds cap bytes; left as
 * normalised if the result would not fit. */
void bbx_pol_resolve_path(char *path, size_t cap);
/* Writes len bytes to path atomically (temporary file, mode 0444, fsync, rename).
 * Returns 0 or -errno. */
int bbx_pol_write_file(const char *path, const void *blob, size_t len);
/* A rule's value as policy.ini would write it (network rules rebuilt from their
 * address, prefix and port: "127.0.0.0/8", "[::1/128]:443", "unix:/run/x.sock"). */
void bbx_pol_rule_value(const struct bbx_pol_hdr *p, const struct bbx_pol_rule *r, char *out,
			size_t cap);

#endif
