/* SPDX-License-Identifier: MIT
 * common.h - small helpers shared by the bbx tools. */
#ifndef BBX_TOOLS_COMMON_H
#define BBX_TOOLS_COMMON_H

#include "journal/run.h"

#include <stddef.h>
#include <stdio.h>

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0"
#endif

/* Resolves a JOURNAL argument (NULL = latest run) or exits 1 with a message. */
void bbx_tool_journal(const char *arg, char *out, size_t cap);

/* --version, the GNU form: "PROG (bbx) VERSION" and the journal format this build
 * writes and reads, on stdout.  Inline: the dispatcher bbx uses it without linking the
 * tools' library (and libseccomp with it). */
static inline void bbx_tool_version(const char *prog)
{
	printf("%s (bbx) %s\njournal format: bbx-journal %s\n", prog, PACKAGE_VERSION,
	       BBX_JOURNAL_FORMAT);
}

#endif
