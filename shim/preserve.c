/* SPDX-License-Identifier: MIT
 *
 * preserve.c - [journal] max_preserve and over_max_preserve in the shim (bbx-policy(5)):
 * what happens when a mutation would need a copy of a regular file larger than the
 * limit (journal/capture.h, bbx_cap_oversize).
 *
 * capture.c asks only when the size from the stat it made anyway exceeds
 * bbx_preserve_max and no reflink could keep the file for free, so a process pays
 * nothing for the limit otherwise.  bbx_preserve_max starts at 0 in the shim ("not
 * known yet"): the first copy of a process asks here once, and the limit of the run's
 * policy is stored for every later one.
 *
 *   refuse (default)  the call fails with EFBIG ("File too large": what the file is,
 *                     for the journal), a DENY record names the max_preserve rule, and
 *                     the usual one-line explanation goes to stderr.  Nothing is lost.
 *   allow             the call goes ahead without a copy: the PRESERVE says how=lost,
 *                     with the rule and the reason, and bbx-undo reports the path as not
 *                     restorable.  One warning line on stderr (explain = on).
 *   mode = audit      refuses nothing: DENY (decision audit) and the copy is made.
 */
#include "shim.h"
#include "policy/policy.h"

#include <string.h>
#include <unistd.h>

static int oversize(const char *op, const char *path, const struct stat *sb,
		    struct bbx_oversize *out)
{
	const struct bbx_pol_hdr *p = bbx_policy();
	uint64_t max = p ? bbx_pol_max_preserve(p) : UINT64_MAX;
	__atomic_store_n(&bbx_preserve_max, max, __ATOMIC_RELAXED);
	if (!p || (uint64_t)sb->st_size <= max)
		return 0; /* the limit, now known, is not exceeded: copy */
	char have[32], lim[32];
	bbx_fmt_size((uint64_t)sb->st_size, have, sizeof have);
	bbx_fmt_size(max, lim, sizeof lim);
	snprintf(out->reason, sizeof out->reason, "%s file over the %s preserve limit", have, lim);
	if (p->over_max == BBX_OVER_ALLOW && p->mode != BBX_MODE_AUDIT) {
		out->rule = bbx_pol_str(p, p->over_max_loc);
		if (p->explain) {
			/* One line, whatever bytes the path holds (as the explanations). */
			char line[1024];
			size_t n = 0;
			const char *parts[] = {"bbx: warning: not preserved, cannot be undone: ",
					       path, " (", out->rule, ": ", out->reason, ")"};
			for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
				for (const char *c = parts[i]; *c && n + 5 < sizeof line; c++) {
					unsigned char ch = (unsigned char)*c;
					if (ch < 0x20 || ch == 0x7f) {
						n += (size_t)snprintf(line + n, 5, "\\x%02x", ch);
					} else {
						line[n++] = (char)ch;
					}
				}
			line[n++] = '\n';
			(void)!write(2, line, n);
		}
		return 1;
	}
	/* The rule is max_preserve's line: a rule object whose origin is that string
	 * (bbx_pol_report names rule->loc). */
	struct bbx_pol_rule rule = {.loc = p->max_preserve_loc};
	struct bbx_pol_verdict v = {
		.decision = p->mode == BBX_MODE_AUDIT ? BBX_DEC_AUDIT : BBX_DEC_DENY,
		.err = p->mode == BBX_MODE_AUDIT ? 0 : EFBIG,
		.rule = &rule,
		.reason = out->reason,
	};
	return bbx_pol_report(op, BBX_ACC_WRITE, path, NULL, NULL, NULL, NULL, &v);
}

/* These replace capture.c's weak definitions (no constructor stores them): the hook,
 * and a limit of 0, "not known until the policy is", so that the first copy asks once. */
uint64_t bbx_preserve_max = 0;
int (*bbx_cap_oversize)(const char *op, const char *path, const struct stat *sb,
			struct bbx_oversize *out) = oversize;
