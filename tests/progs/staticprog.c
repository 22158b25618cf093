/* SPDX-License-Identifier: MIT
 *
 * staticprog - a statically linked program (no PT_INTERP): the shim is never loaded into
 * it, so [exec] static decides whether it may run at all.  Writes argv[1] (if given) and
 * exits 0 when the write succeeded, 1 with errno's name otherwise.
 *   staticprog truncate PATH   truncate(2) PATH to 0 bytes
 *   staticprog rdtrunc PATH    open(PATH, O_RDONLY | O_TRUNC)
 * (what bbx-run's seccomp filter refuses from code that is not the shim, tools/sandbox.c)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2)
		return 0;
	if (argc == 3 && (!strcmp(argv[1], "truncate") || !strcmp(argv[1], "rdtrunc"))) {
		int r = !strcmp(argv[1], "truncate") ? truncate(argv[2], 0)
						      : open(argv[2], O_RDONLY | O_TRUNC);
		if (r < 0) {
			fprintf(stderr, "staticprog: %s %s: %s\n", argv[1], argv[2], strerror(errno));
			return 1;
		}
		return 0;
	}
	int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "static\n", 7) != 7) {
		fprintf(stderr, "staticprog: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	return close(fd) == 0 ? 0 : 1;
}
