/* SPDX-License-Identifier: MIT
 *
 * ini.h - the INI front end of the policy compiler (tools only): inih, driven by our
 * own line reader so that every message carries FILE:LINE, lines too long for inih are
 * refused instead of being split, and section headers are checked even when the
 * section holds no key.
 */
#ifndef BBX_POLICY_INI_H
#define BBX_POLICY_INI_H

#include <stddef.h>
#include <stdio.h>

struct bbx_ini_cb {
	/* A "[name]" header.  Returns 0, or -1 with what was expected in err. */
	int (*section)(void *user, const char *name, int line, char *err, size_t cap);
	/* A "key = value" line (value stripped of inline comments and blanks; section is ""
	 * before the first header).  Returns 0, or -1 with what was expected in err. */
	int (*pair)(void *user, const char *section, const char *key, const char *value,
		    int line, char *err, size_t cap);
	void *user;
};

/* Parses f; fname is what messages call the file.  Returns 0, or -1 with
 * "FNAME:LINE: message" in err (the first error; nothing after it is handed on). */
int bbx_ini_parse(FILE *f, const char *fname, const struct bbx_ini_cb *cb, char *err,
		  size_t cap);

/* inih's line buffer as this libinih was built (Debian: 200), known after a parse; the
 * longest line accepted is this minus 2 (the newline and the NUL). */
extern int bbx_ini_max_line;

#endif
