/* SPDX-License-Identifier: MIT
 *
 * readloop.c - readloop stat|open N PATH: N stat(2) calls of PATH, or N open(O_RDONLY) +
 * close; exit 1 at the first that fails.  Run under callgrind twice with different N by
 * tests/e2e/t-cost.sh: the difference is what one call costs in instructions, exactly,
 * on any machine (the read filter's claim, shim.h bbx_rfilt).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 4 || (strcmp(argv[1], "stat") && strcmp(argv[1], "open"))) {
		fprintf(stderr, "usage: readloop stat|open N PATH\n");
		return 2;
	}
	long n = atol(argv[2]);
	int st = !strcmp(argv[1], "stat");
	for (long i = 0; i < n; i++) {
		struct stat sb;
		if (st) {
			if (stat(argv[3], &sb) < 0)
				return 1;
		} else {
			int fd = open(argv[3], O_RDONLY);
			if (fd < 0)
				return 1;
			close(fd);
		}
	}
	return 0;
}
