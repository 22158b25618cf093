/* SPDX-License-Identifier: MIT
 *
 * verify.h - checks a journal directory's integrity (bbx-log --verify).
 *
 * What is checked, and how each finding is worded, is in doc/journal-format.md
 * (section 7.4).  The chain and checksums are XXH64: they detect accidental damage,
 * truncation and naive edits, not a forger with write access who recomputes them.
 */
#ifndef BBX_TOOLS_VERIFY_H
#define BBX_TOOLS_VERIFY_H

#include <stdbool.h>
#include <stdio.h>

/* Verifies the journal directory jdir and reports to out: one line per finding
 * ("journal:OFFSET: seq N: ...", problems first-class, notes prefixed "note:") and a
 * summary line, or with json one JSON object.  Returns 0 when no problem was found
 * (notes allowed), 1 when problems were found, 2 when the journal could not be read
 * (also reported on out). */
int bbx_verify(const char *jdir, FILE *out, bool json);

#endif
