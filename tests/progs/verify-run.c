/* SPDX-License-Identifier: MIT
 *
 * verify-run JDIR [json] - runs bbx_verify() on the journal directory JDIR, the human
 * report (or with a second argument the JSON one) on stdout, and exits with its result:
 * 0 clean, 1 problems, 2 unreadable.  For tests/e2e/t-verify.sh until bbx-log --verify.
 */
#include "tools/verify.h"

#include <stdio.h>

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: verify-run JDIR [json]\n");
		return 2;
	}
	return bbx_verify(argv[1], stdout, argc > 2);
}
