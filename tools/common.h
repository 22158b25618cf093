/* SPDX-License-Identifier: MIT
 * common.h - small helpers shared by the bbx tools. */
#ifndef BBX_TOOLS_COMMON_H
#define BBX_TOOLS_COMMON_H

#include <stddef.h>

/* Resolves a JOURNAL argument (NULL = latest run) or exits 1 with a message. */
void bbx_tool_journal(const char *arg, char *out, size_t cap);

#endif
