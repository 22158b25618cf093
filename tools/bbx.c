/* SPDX-License-Identifier: MIT
 * bbx - git-style dispatcher: `bbx VERB ARGS...` runs `bbx-VERB ARGS...`, looked up
 * beside this program first, then on PATH. */
#include "common.h"

#include <err.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: bbx VERB [ARG...]\n"
		   "       bbx --help | --version\n"
		   "verbs: run, undo, log, diff, policy   (bbx VERB --help for each)\n");
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "--version")) {
		bbx_tool_version("bbx");
		return 0;
	}
	if (argv[1][0] == '-') {
		fprintf(stderr, "bbx: unknown option %s\n", argv[1]);
		usage(stderr);
		return 2;
	}
	if (strchr(argv[1], '/'))
		errx(2, "bad verb: %s", argv[1]);
	const char *verb = argv[1];
	char name[256], path[PATH_MAX];
	snprintf(name, sizeof name, "bbx-%s", verb);
	argv[1] = name;
	ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
	if (n > 0) {
		path[n] = 0;
		char *slash = strrchr(path, '/');
		if (slash && (size_t)(slash - path) + 1 + strlen(name) < sizeof path) {
			strcpy(slash + 1, name);
			if (access(path, X_OK) == 0)
				execv(path, argv + 1);
		}
	}
	execvp(name, argv + 1);
	if (errno == ENOENT)
		errx(2, "'%s' is not a bbx verb (run, undo, log, diff, policy; bbx --help)", verb);
	err(2, "%s", name);
}
