/* SPDX-License-Identifier: MIT
 *
 * tmpchurn.c - tmpchurn DIR N: N times, makes DIR/tN (O_CREAT|O_EXCL, 16 bytes) and
 * removes it again, as a compiler's or a test suite's temporary files; exit 1 at the
 * first call that fails (its errno on stderr).  Under bbx-run, every file is the run's
 * own: its removal needs no pre-image, however many came before (t-captured.sh: the
 * captured set grows past its first segment, journal-format.md 9.2).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: tmpchurn DIR N\n");
		return 2;
	}
	long n = atol(argv[2]);
	char p[4096];
	for (long i = 0; i < n; i++) {
		snprintf(p, sizeof p, "%s/t%ld", argv[1], i);
		int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 || write(fd, "temporary data\n", 16) != 16 || close(fd) < 0 ||
		    unlink(p) < 0) {
			fprintf(stderr, "tmpchurn: %s: %s\n", p, strerror(errno));
			return 1;
		}
	}
	return 0;
}
