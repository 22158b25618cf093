/* SPDX-License-Identifier: MIT
 * common.c - helpers shared by the bbx tools. */
#include "common.h"
#include "journal/run.h"

#include <err.h>
#include <string.h>

void bbx_tool_journal(const char *arg, char *out, size_t cap)
{
	int rc = bbx_run_resolve(arg, out, cap);
	if (rc == 0)
		return;
	if (!arg) {
		char base[4096] = "?";
		bbx_run_state_dir(base, sizeof base);
		errx(1, "no latest run under %s (%s); name a journal directory", base,
		     strerror(-rc));
	}
	errx(1, "%s: not a journal directory (%s)", arg, strerror(-rc));
}
