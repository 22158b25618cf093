/* SPDX-License-Identifier: MIT
 *
 * bbx-run - start a run: create its journal directory, run CMD under the shim, seal
 * the journal when CMD exits, and exit with CMD's status.  --transaction undoes the
 * run when CMD fails.
 */
#include "common.h"
#include "journal/capture.h"
#include "journal/undo.h"
#include "policy/policy.h"
#include "sandbox.h"

#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef BBX_PKGLIBDIR
#define BBX_PKGLIBDIR "/usr/local/lib/bbx"
#endif

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bbx-run [--policy FILE] [--journal DIR] [--transaction] [--quiet] -- CMD "
		"[ARG...]\n"
		"Run CMD with every filesystem change journaled, so bbx-undo can reverse it.\n"
		"  -j, --journal DIR   journal directory to create (default: a new run under\n"
		"                      the state directory, pointed to by its 'latest' link)\n"
		"  -p, --policy FILE   the policy (bbx-policy(5)); default: $BBX_POLICY, else\n"
		"                      $XDG_CONFIG_HOME/bbx/policy.ini, /etc/bbx/policy.ini, or\n"
		"                      the built-in default.  A malformed policy: exit 2, CMD\n"
		"                      never starts\n"
		"  -t, --transaction   undo the run automatically if CMD exits non-zero\n"
		"  -q, --quiet         no summary on stderr\n"
		"  -h, --help          this text\n"
		"Exit status: CMD's (128+N if killed by signal N); 1 if the run could not be\n"
		"set up; 2 on a usage error or a malformed policy.\n");
}

/* The shim: $BBX_SHIM, else beside us in a build tree, else the installed one. */
static void find_shim(char *out, size_t cap)
{
	const char *e = getenv("BBX_SHIM");
	if (e && *e) {
		snprintf(out, cap, "%s", e);
		return;
	}
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n > 0) {
		self[n] = 0;
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = 0;
			char cand[PATH_MAX + 32], real[PATH_MAX];
			snprintf(cand, sizeof cand, "%s/../shim/.libs/libbbxshim.so", self);
			if (access(cand, R_OK) == 0 && realpath(cand, real)) {
				snprintf(out, cap, "%s", real);
				return;
			}
		}
	}
	snprintf(out, cap, "%s/libbbxshim.so", BBX_PKGLIBDIR);
}

static pid_t child;
static void forward(int sig)
{
	if (child > 0)
		kill(child, sig);
}

static char *join_argv(char **av)
{
	size_t n = 1;
	for (char **a = av; *a; a++)
		n += strlen(*a) + 1;
	char *s = malloc(n), *p = s;
	if (!s)
		err(1, "malloc");
	for (char **a = av; *a; a++) {
		size_t l = strlen(*a);
		for (size_t i = 0; i < l; i++)
			*p++ = (*a)[i] == '\n' ? ' ' : (*a)[i];
		*p++ = a[1] ? ' ' : 0;
	}
	if (p == s)
		*p = 0;
	return s;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {{"journal", required_argument, 0, 'j'},
					   {"transaction", no_argument, 0, 't'},
					   {"policy", required_argument, 0, 'p'},
					   {"quiet", no_argument, 0, 'q'},
					   {"help", no_argument, 0, 'h'},
					   {0, 0, 0, 0}};
	const char *jarg = NULL, *parg = NULL;
	int transaction = 0, quiet = 0, ch;
	while ((ch = getopt_long(argc, argv, "+j:p:tqh", lo, NULL)) != -1) {
		switch (ch) {
		case 'j': jarg = optarg; break;
		case 't': transaction = 1; break;
		case 'p': parg = optarg; break;
		case 'q': quiet = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	char **cmd = argv + optind;

	/* The policy is compiled before anything runs: a malformed one stops here, and
	 * every process of the run maps the compiled form (no INI parsing in them). */
	void *pblob;
	size_t plen;
	{
		char *ppath = bbx_pol_lookup(parg), perr[2048];
		if (bbx_pol_compile(ppath, NULL, &pblob, &plen, perr, sizeof perr)) {
			fprintf(stderr, "bbx-run: %s\n", perr);
			return 2;
		}
		free(ppath);
	}

	char dir[PATH_MAX], shim[PATH_MAX];
	find_shim(shim, sizeof shim);
	if (access(shim, R_OK) < 0)
		err(1, "shim %s", shim);
	char *cmdline = join_argv(cmd);
	char absj[PATH_MAX];
	if (jarg && jarg[0] != '/') {
		if (!getcwd(absj, sizeof absj) ||
		    strlen(absj) + strlen(jarg) + 2 > sizeof absj)
			errx(1, "journal path too long");
		strcat(absj, "/");
		strcat(absj, jarg);
		jarg = absj;
	}
	int rc = bbx_run_create(jarg, cmdline, "origin=bbx-run\n", 0, dir, sizeof dir);
	if (rc == -EEXIST)
		errx(1, "%s already holds a journal; choose a new directory", jarg);
	if (rc == -ENOTEMPTY)
		errx(1, "%s is not empty; a journal directory must be new or empty", jarg);
	if (rc)
		errx(1, "cannot create the journal directory %s: %s", jarg ? jarg : "(state dir)",
		     strerror(-rc));
	free(cmdline);
	if ((rc = bbx_pol_install(dir, pblob, plen)))
		errx(1, "%s: cannot install the policy: %s", dir, strerror(-rc));
	free(pblob);

	/* The command's own start is the run's first EXEC record. */
	struct bbx_run run;
	if ((rc = bbx_run_open(&run, dir)))
		errx(1, "%s: %s", dir, strerror(-rc));
	uint64_t seq;
	if ((rc = bbx_cap_exec(&run, "bbx-run", cmd[0], cmd, &seq)))
		errx(1, "%s: cannot journal: %s", dir, strerror(-rc));
	bbx_run_close(&run);

	const char *old = getenv("LD_PRELOAD");
	char pre[2 * PATH_MAX + 2];
	snprintf(pre, sizeof pre, "%s%s%s", shim, old && *old ? " " : "", old ? old : "");
	setenv("LD_PRELOAD", pre, 1);
	setenv("BBX_JOURNAL", dir, 1);
	unsetenv("BBX_HIDE");

	/* Like system(): the terminal's SIGINT/SIGQUIT reach the command directly (same
	 * process group); we outlive it to seal the journal. */
	struct sigaction ign = {.sa_handler = SIG_IGN}, fwd = {.sa_handler = forward}, oi, oq;
	sigaction(SIGINT, &ign, &oi);
	sigaction(SIGQUIT, &ign, &oq);
	sigaction(SIGTERM, &fwd, NULL);
	sigaction(SIGHUP, &fwd, NULL);
	child = fork();
	if (child < 0)
		err(1, "fork");
	if (child == 0) {
		sigaction(SIGINT, &oi, NULL);
		sigaction(SIGQUIT, &oq, NULL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		char why[512];
		if (bbx_sandbox_apply(NULL, dir, why, sizeof why) && !quiet)
			fprintf(stderr, "bbx-run: %s\n", why);
		execvp(cmd[0], cmd);
		int e = errno;
		warn("%s", cmd[0]);
		_exit(e == ENOENT ? 127 : 126);
	}
	int status;
	while (waitpid(child, &status, 0) < 0) {
		if (errno != EINTR)
			err(1, "waitpid");
	}
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

	unsetenv("LD_PRELOAD");
	size_t npaths = 0;
	if ((rc = bbx_seal(dir, &npaths)))
		warnx("sealing %s: %s (undo still works; conflict detection does not)", dir,
		      strerror(-rc));
	char v[32];
	snprintf(v, sizeof v, "%d", code);
	bbx_run_meta_append(dir, "exit", v);

	if (transaction && code != 0) {
		struct bbx_undo_opts o = {.out = quiet ? NULL : stderr};
		struct bbx_undo_stats s;
		rc = bbx_undo_run(dir, &o, &s);
		if (rc)
			warnx("transaction: undo of %s failed: %s", dir, strerror(-rc));
		else if (!quiet)
			fprintf(stderr,
				"bbx-run: command failed (status %d); transaction rolled back: %zu "
				"restored, %zu removed, %zu conflicts, %zu errors\n",
				code, s.restored, s.removed, s.conflicts, s.errors);
		if (!rc && s.errors)
			warnx("transaction: %zu paths could not be restored; see bbx-undo %s", s.errors,
			      dir);
	} else if (!quiet && !jarg) {
		fprintf(stderr, "bbx-run: journal %s (%zu paths touched); undo with: bbx-undo\n", dir,
			npaths);
	}
	return code;
}
