/* SPDX-License-Identifier: MIT
 *
 * bbx-run - start a run: create its journal directory, run CMD under the shim, seal
 * the journal when CMD exits, and exit with CMD's status.  --transaction undoes the
 * run when CMD fails.
 */
#include "common.h"
#include "journal/capture.h"
#include "journal/redact.h"
#include "journal/undo.h"
#include "policy/policy.h"
#include "sandbox.h"
#include "straggle.h"

#include <dlfcn.h>
#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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
		"      --version       the version and journal format\n"
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

/* An orphan of the run that this process reaped (it is their subreaper): its EXIT, as
 * its parent's wait would have written it, so that bbx-log --tree shows how every
 * process of the run ended, not only those whose parent waited. */
static void orphan_exit(struct bbx_run *run, pid_t pid, int status)
{
	if (run)
		(void)bbx_cap_exit(run, "bbx-run", pid, 0, status);
}

/* Reaps, without waiting, the run's orphans that have ended; when the command itself is
 * among them, its status goes to *status and 1 is returned. */
static int reap_others(struct bbx_run *run, int *status)
{
	int st;
	pid_t w;
	while ((w = waitpid(-1, &st, WNOHANG)) > 0) {
		if (w == child) {
			*status = st;
			return 1;
		}
		orphan_exit(run, w, st);
	}
	return 0;
}

/* The command line for meta: argv redacted (journal/redact.h), newlines as spaces. */
static char *join_argv(char **av)
{
	size_t need = bbx_redact_argv(av, NULL, 0);
	char *r = malloc(need + 1);
	if (!r)
		err(1, "malloc");
	bbx_redact_argv(av, r, need);
	char *s = malloc(need + 1), *p = s;
	if (!s)
		err(1, "malloc");
	for (size_t i = 0; i < need; i++)
		*p++ = r[i] == 0 ? (i + 1 < need ? ' ' : 0) : r[i] == '\n' ? ' ' : r[i];
	if (p == s)
		*p = 0;
	free(r);
	return s;
}

/* The run's command is started through the shim's exec wrapper, like any exec of the
 * run (the [exec] rules, [exec] static, deny_read, the EXEC or DENY record and the
 * explanation), so the first command is decided exactly like every later one: by
 * exec_through_shim below, or, where the shim cannot be loaded with dlopen, by bbx-run
 * itself re-executed under the shim in this mode, whose execvp() then goes through it. */
#define EXEC_UNDER_SHIM "--exec-under-shim"
/* How often the seal's first pass reads what the command has written (main). */
#define PRESCAN_MS 20

/* The same without a second program start: the shim loaded into this child with dlopen
 * and the command started through its execvp, the wrapper every later exec of the run
 * goes through (the policy, the EXEC record).  Nothing else in this process goes through
 * the shim, and nothing else runs here before the exec.  A program start costs 3-4 ms
 * on a slow VM, a fifth of a no-op transaction (issue 5).  Returns only if the shim
 * could not be loaded (then the caller re-executes itself under it, as before); a
 * refused or failed exec ends the child here, as EXEC_UNDER_SHIM does. */
/* After a refused or failed exec of cmd: the shell's statuses, 127 not found, 126 the rest. */
__attribute__((noreturn)) static void exec_failed(const char *cmd)
{
	int e = errno;
	warn("%s", cmd);
	_exit(e == ENOENT ? 127 : 126);
}

static void exec_through_shim(const char *shim, char **cmd)
{
	void *h = dlopen(shim, RTLD_NOW | RTLD_LOCAL);
	int (*shim_execvp)(const char *, char *const[]) =
		h ? (int (*)(const char *, char *const[]))dlsym(h, "execvp") : NULL;
	if (!shim_execvp)
		return;
	shim_execvp(cmd[0], cmd);
	exec_failed(cmd[0]);
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], EXEC_UNDER_SHIM)) {
		execvp(argv[2], argv + 2);
		exec_failed(argv[2]);
	}
	static const struct option lo[] = {{"journal", required_argument, 0, 'j'},
					   {"transaction", no_argument, 0, 't'},
					   {"policy", required_argument, 0, 'p'},
					   {"quiet", no_argument, 0, 'q'},
					   {"help", no_argument, 0, 'h'},
					   {"version", no_argument, 0, 'V'},
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
		case 'V': bbx_tool_version("bbx-run"); return 0;
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
	/* The command line in meta is redacted as the run's records are: the policy's
	 * [redact] patterns beside the built-in ones. */
	{
		const struct bbx_pol_hdr *ph = pblob;
		const char *eg[64], *ag[64];
		size_t ne, na;
		bbx_pol_redact_globs(ph, eg, ag, 64, &ne, &na);
		(void)bbx_redact_configure(eg, ne, ag, na, ph->redact_fingerprint != 0);
	}
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
	/* [journal] sync lives in the state file: every process of the run reads it there
	 * before its first record, whatever it has or has not mapped yet. */
	if ((rc = bbx_run_set_sync(dir, (int)((const struct bbx_pol_hdr *)pblob)->sync)))
		errx(1, "%s: cannot set up [journal] sync: %s", dir, strerror(-rc));

	/* The command's own start, the run's first EXEC record, is written by the shim
	 * (exec_through_shim, else EXEC_UNDER_SHIM), after the policy had its say. */
	size_t ncmd = 0;
	while (cmd[ncmd])
		ncmd++;
	char **via = calloc(ncmd + 3, sizeof *via);
	char self[PATH_MAX];
	ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
	if (!via || sl <= 0)
		err(1, "cannot re-execute bbx-run under the shim");
	self[sl] = 0;
	via[0] = self;
	via[1] = EXEC_UNDER_SHIM;
	memcpy(via + 2, cmd, (ncmd + 1) * sizeof *via);

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
	/* The child is made by vfork: it runs in this address space, on this stack below
	 * this frame, while this process waits in the kernel until it executes the command
	 * or exits.  A fork copied the page tables only for the child to fault back, one
	 * trap each (20-40 us on a slow VM), the libc and ld.so text it runs (fork does not
	 * copy file-backed entries) and every page it writes (copy-on-write), and left this
	 * process a fault on every page it wrote after: ~80 faults, ~2 ms of a no-op
	 * transaction (issue 5).  What the child may do follows from sharing the memory:
	 *  - it never returns from main and ends in an exec or _exit;
	 *  - what it allocates (libseccomp's filter, dlopen of the shim, the shim's run
	 *    state) stays in this address space, unused: this process keeps its own run
	 *    (bbx_run_open below) and never calls into the shim, and it ends with _exit
	 *    after the seal, so the shim's destructor does not run here either;
	 *  - this process is single-threaded, so no lock of libc's can be held by a thread
	 *    the child does not have;
	 *  - its setup is bounded (no approval waits in it: [exec] ask refuses), and
	 *    SIGTERM or SIGHUP sent to bbx-run meanwhile stay blocked here, then pending,
	 *    and are forwarded as soon as the child's pid is known. */
	/* The run's child subreaper: a process of it whose parent exits comes to this one,
	 * not to init, so that the seal can find the processes that outlive the command
	 * (straggle.c).  This process reaps them meanwhile (reap_others). */
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	sigset_t fwdset, omask;
	sigemptyset(&fwdset);
	sigaddset(&fwdset, SIGTERM);
	sigaddset(&fwdset, SIGHUP);
	sigprocmask(SIG_BLOCK, &fwdset, &omask);
	pid_t pid = vfork();
	if (pid == 0) {
		sigaction(SIGINT, &oi, NULL);
		sigaction(SIGQUIT, &oq, NULL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		sigprocmask(SIG_SETMASK, &omask, NULL);
		char why[512];
		if (bbx_sandbox_apply(pblob, dir, why, sizeof why) && !quiet)
			fprintf(stderr, "bbx-run: %s\n", why);
		exec_through_shim(shim, cmd);
		execv(via[0], via);
		warn("%s", via[0]);
		_exit(126);
	}
	if (pid < 0)
		err(1, "vfork");
	child = pid;
	sigprocmask(SIG_SETMASK, &omask, NULL);
	/* The run, for the command's EXIT and the seal; and the seal's first pass, done
	 * here while the command runs on the other CPUs (journal/undo.h): every
	 * PRESCAN_MS of the command, what it wrote meanwhile is read, so that the seal
	 * after it reads only the rest (a churn of 11,000 files: 21 -> 7 ms from the
	 * command's end to bbx-run's).  A command that ends sooner costs one poll. */
	struct bbx_run run;
	int opened = (rc = bbx_run_open(&run, dir)) == 0;
	/* The child wrote the command's EXEC under the journal lock, on this thread's
	 * memory: killed holding it, it left the lock under this thread's id. */
	if (opened && run.st)
		bbx_writer_vfork_reclaim(&run.w, run.st, 1);
	struct bbx_seal_pre *prescan = opened ? bbx_seal_pre_new(&run, dir) : NULL;
	int pfd = prescan ? (int)syscall(SYS_pidfd_open, child, 0) : -1;
	int status, reaped = 0;
	if (pfd >= 0) {
		struct pollfd pf = {.fd = pfd, .events = POLLIN};
		for (;;) {
			int n = poll(&pf, 1, PRESCAN_MS);
			if (n == 0) {
				bbx_seal_pre_step(prescan);
				if ((reaped = reap_others(opened ? &run : NULL, &status)))
					break;
			} else if (n > 0 || errno != EINTR) {
				break; /* the command has ended (or poll cannot say): wait below */
			}
		}
		close(pfd);
	}
	/* Orphans of the run that end meanwhile are reaped here too (subreaper, above). */
	while (!reaped) {
		pid_t w = waitpid(-1, &status, 0);
		if (w == child)
			break;
		if (w > 0)
			orphan_exit(opened ? &run : NULL, w, status);
		else if (errno != EINTR) {
			warn("waitpid");
			_exit(1);
		}
	}
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	/* The command's end: EXIT with its pid and the raw status (its EXEC, written by
	 * the shim in that pid, names it). */
	if (opened)
		rc = bbx_cap_exit(&run, "bbx-run", child, 0, status);
	if (rc)
		warnx("%s: cannot journal the command's exit: %s", dir, strerror(-rc));

	unsetenv("LD_PRELOAD");
	/* The run's processes that outlive the command: the files they hold open for
	 * writing, looked for once the run is marked sealed (from then on an open of a
	 * captured file is noted by the shim; one already open is found here). */
	struct bbx_held *held = NULL;
	size_t nheld = 0, nstrag = 0;
	if (opened) {
		bbx_seal_mark(&run);
		nheld = bbx_stragglers_held(&held, &nstrag);
	}
	if (nstrag && !quiet)
		fprintf(stderr,
			"bbx-run: %zu process%s of the run still running; later changes are "
			"journaled too\n",
			nstrag, nstrag == 1 ? "" : "es");
	size_t npaths = 0;
	if ((rc = opened ? bbx_seal_run(&run, dir, &npaths, prescan, held, nheld)
			 : bbx_seal(dir, &npaths)))
		warnx("sealing %s: %s (undo still works; conflict detection does not)", dir,
		      strerror(-rc));
	if (opened)
		bbx_run_close(&run);
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
				"restored, %zu removed, %zu conflicts, %zu errors%s\n",
				code, s.restored, s.removed, s.conflicts, s.errors,
				s.lost ? ", some paths not restorable (see lost: above)" : "");
		if (!rc && s.errors)
			warnx("transaction: %zu paths could not be restored; see bbx-undo %s", s.errors,
			      dir);
		if (!rc && s.lost)
			warnx("transaction: %zu paths were changed without a preserved copy "
			      "([journal] over_max_preserve = allow) and stay as the command left them",
			      s.lost);
	} else if (!quiet && !jarg) {
		fprintf(stderr, "bbx-run: journal %s (%zu paths touched); undo with: bbx-undo\n", dir,
			npaths);
	}
	free(held);
	free(via);
	free(pblob);
	/* Not exit(): the shim the child loaded (above, vfork) is in this address space,
	 * and its destructor is not ours to run. */
	fflush(NULL);
	_exit(code);
}
