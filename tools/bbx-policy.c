/* SPDX-License-Identifier: MIT
 *
 * bbx-policy - check, explain and compile a policy (bbx-policy(1), bbx-policy(5)).
 * check prints the effective policy (variables expanded, each rule with its origin);
 * explain runs one operation through the same matcher the shim uses and prints the
 * decision and the rule that made it; compile writes the blob a run maps (bbx-run and
 * a run started by LD_PRELOAD alone use it).  Nothing here touches a run.
 */
#include "policy/compile.h"
#include "policy/policy.h"
#include "journal/record.h"
#include "common.h"

#include <arpa/inet.h>
#include <err.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bbx-policy check [FILE]\n"
		"       bbx-policy explain [FILE] -- write PATH | read PATH |\n"
		"                                    connect HOST:PORT | exec CMD [ARG...]\n"
		"       bbx-policy compile [FILE] -o OUT\n"
		"Validate a bbx policy (bbx-policy(5)), show the decision for one operation, or\n"
		"write its compiled form.  Without FILE: --policy's lookup order ($BBX_POLICY,\n"
		"$XDG_CONFIG_HOME/bbx/policy.ini, /etc/bbx/policy.ini, the built-in default).\n"
		"  check     print the effective policy, variables expanded, each rule's origin\n"
		"  explain   print the decision, the errno and the rule that decided\n"
		"  compile   write the compiled policy to OUT (mode 0444, atomically)\n"
		"  -h, --help  this text\n"
		"  --version   the version and journal format\n"
		"Exit status: 0 done; 1 the policy is malformed (FILE:LINE: on stderr) or OUT\n"
		"could not be written; 2 usage error.\n");
}

/* Compiles file (NULL: lookup order) or exits 1 with the compiler's message. */
static struct bbx_pol_hdr *load(const char *file, size_t *len)
{
	char *path = bbx_pol_lookup(file), e[2048];
	void *blob;
	if (bbx_pol_compile(path, NULL, &blob, len, e, sizeof e)) {
		fprintf(stderr, "%s\n", e);
		exit(1);
	}
	free(path);
	return blob;
}

static const char *decision_name(int d)
{
	switch (d) {
	case BBX_DEC_ALLOW: return "allow";
	case BBX_DEC_LOG: return "log";
	case BBX_DEC_DENY: return "deny";
	case BBX_DEC_AUDIT: return "audit (would be refused; mode = audit lets it through)";
	case BBX_DEC_ASK: return "ask";
	}
	return "?";
}

static const char *errno_name(int e)
{
	switch (e) {
	case 0: return "";
	case EACCES: return " (EACCES)";
	case EPERM: return " (EPERM)";
	case ECONNREFUSED: return " (ECONNREFUSED)";
	case ENOSYS: return " (ENOSYS)";
	}
	return " (?)";
}

static void show(const struct bbx_pol_hdr *p, const char *what, const struct bbx_pol_verdict *v,
		 bool klass)
{
	static const char *const classes[] = {"none", "safe", "risky", "dangerous", "destructive"};
	printf("%s\n  decision: %s%s\n", what, decision_name(v->decision), errno_name(v->err));
	if (v->rule) {
		char val[PATH_MAX + 64];
		bbx_pol_rule_value(p, v->rule, val, sizeof val);
		printf("  rule: %s = %s\n", bbx_pol_str(p, v->rule->loc), val);
	} else {
		printf("  rule: none (%s)\n", p->mode == BBX_MODE_SAFE ? "[general] mode = safe"
								  : "no rule matched");
	}
	if (v->reason)
		printf("  reason: %s\n", v->reason);
	if (klass && v->klass >= 0 && v->klass <= 4)
		printf("  class: %s\n", classes[v->klass]);
}

/* An absolute, normalised path with its parent resolved (and, when follow, the final
 * component too if it exists): what the shim decides on. */
static void resolve(const char *arg, bool follow, char *out, size_t cap)
{
	char abs[PATH_MAX * 2], cwd[PATH_MAX];
	if (arg[0] == '/')
		snprintf(abs, sizeof abs, "%s", arg);
	else if (getcwd(cwd, sizeof cwd))
		snprintf(abs, sizeof abs, "%s/%s", cwd, arg);
	else
		err(1, "getcwd");
	bbx_pol_normalise(abs);
	if (follow && realpath(abs, out))
		return;
	char *slash = strrchr(abs, '/');
	if (slash == abs) { /* "/x" or "/" */
		snprintf(out, cap, "%s", abs);
		return;
	}
	*slash = 0;
	char parent[PATH_MAX * 2];
	snprintf(parent, sizeof parent, "%s", abs);
	bbx_pol_resolve_path(parent, sizeof parent);
	if ((size_t)snprintf(out, cap, "%s/%s", strcmp(parent, "/") ? parent : "", slash + 1) >= cap)
		errx(1, "path too long: %s", arg);
}

static int explain_connect(const struct bbx_pol_hdr *p, const char *arg)
{
	struct bbx_pol_verdict v = {0};
	char what[PATH_MAX + 64];
	if (!strncmp(arg, "unix:", 5)) {
		struct sockaddr_un su = {.sun_family = AF_UNIX};
		const char *path = arg + 5;
		size_t l = strlen(path);
		if (l >= sizeof su.sun_path)
			errx(2, "unix socket path too long: %s", path);
		memcpy(su.sun_path, path, l);
		if (path[0] == '@')
			su.sun_path[0] = 0;
		bbx_pol_net(p, (struct sockaddr *)&su,
			    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + l + (path[0] != '@')),
			    NULL, &v);
		snprintf(what, sizeof what, "connect %s", arg);
		show(p, what, &v, false);
		return 0;
	}
	char host[1024];
	const char *port;
	if (arg[0] == '[') {
		const char *end = strchr(arg, ']');
		if (!end || end[1] != ':')
			errx(2, "expected [IPv6]:PORT, got %s", arg);
		snprintf(host, sizeof host, "%.*s", (int)(end - arg - 1), arg + 1);
		port = end + 2;
	} else {
		const char *c = strrchr(arg, ':');
		if (!c)
			errx(2, "expected HOST:PORT, got %s", arg);
		snprintf(host, sizeof host, "%.*s", (int)(c - arg), arg);
		port = c + 1;
	}
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res, *ai;
	struct in6_addr a6;
	struct in_addr a4;
	bool numeric = inet_pton(AF_INET, host, &a4) == 1 || inet_pton(AF_INET6, host, &a6) == 1;
	if (numeric)
		hints.ai_flags = AI_NUMERICHOST;
	int rc = getaddrinfo(host, port, &hints, &res);
	if (rc)
		errx(1, "%s: %s", arg, gai_strerror(rc));
	for (ai = res; ai; ai = ai->ai_next) {
		char a[INET6_ADDRSTRLEN] = "?";
		const void *src = ai->ai_family == AF_INET
					  ? (const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr
					  : (const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
		inet_ntop(ai->ai_family, src, a, sizeof a);
		memset(&v, 0, sizeof v);
		bbx_pol_net(p, ai->ai_addr, ai->ai_addrlen, numeric ? NULL : host, &v);
		if (numeric)
			snprintf(what, sizeof what, "connect %s%s%s:%s", ai->ai_family == AF_INET6 ? "[" : "",
				 a, ai->ai_family == AF_INET6 ? "]" : "", port);
		else
			snprintf(what, sizeof what, "connect %s%s%s:%s (%s)",
				 ai->ai_family == AF_INET6 ? "[" : "", a,
				 ai->ai_family == AF_INET6 ? "]" : "", port, host);
		show(p, what, &v, false);
	}
	freeaddrinfo(res);
	return 0;
}

static int explain(const struct bbx_pol_hdr *p, char **op)
{
	struct bbx_pol_verdict v = {0};
	char path[PATH_MAX * 2], what[PATH_MAX * 2 + 16];
	if (!strcmp(op[0], "write") && op[1] && !op[2]) {
		resolve(op[1], false, path, sizeof path);
		bbx_pol_write(p, path, &v);
		snprintf(what, sizeof what, "write %s", path);
		show(p, what, &v, false);
		return 0;
	}
	if (!strcmp(op[0], "read") && op[1] && !op[2]) {
		resolve(op[1], true, path, sizeof path);
		bbx_pol_read(p, path, &v);
		struct stat sb;
		if (v.decision == BBX_DEC_ALLOW && lstat(path, &sb) == 0)
			bbx_pol_read_inode(p, (uint64_t)sb.st_dev, (uint64_t)sb.st_ino, &v);
		snprintf(what, sizeof what, "read %s", path);
		show(p, what, &v, false);
		return 0;
	}
	if (!strcmp(op[0], "connect") && op[1] && !op[2])
		return explain_connect(p, op[1]);
	if (!strcmp(op[0], "exec") && op[1]) {
		size_t n = 1;
		for (char **a = op + 1; *a; a++)
			n += strlen(*a) + 1;
		char *cmd = malloc(n), *q = cmd;
		if (!cmd)
			err(1, "malloc");
		for (char **a = op + 1; *a; a++)
			q += sprintf(q, "%s%s", *a, a[1] ? " " : "");
		bbx_pol_exec(p, cmd, &v);
		printf("exec %s\n", cmd);
		free(cmd);
		printf("  decision: %s%s\n", decision_name(v.decision), errno_name(v.err));
		if (v.rule)
			printf("  rule: %s = %s\n", bbx_pol_str(p, v.rule->loc),
			       bbx_pol_str(p, v.rule->value));
		else
			printf("  rule: none (no rule matched)\n");
		if (v.reason)
			printf("  reason: %s\n", v.reason);
		static const char *const classes[] = {"none", "safe", "risky", "dangerous",
						       "destructive"};
		if (v.klass >= 0 && v.klass <= 4)
			printf("  class: %s\n", classes[v.klass]);
		return 0;
	}
	usage(stderr);
	return 2;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--version")) {
			bbx_tool_version("bbx-policy");
			return 0;
		}
	const char *verb = argv[1];
	size_t len;
	if (!strcmp(verb, "check")) {
		if (argc > 3 || (argc == 3 && argv[2][0] == '-')) {
			usage(stderr);
			return 2;
		}
		struct bbx_pol_hdr *p = load(argc == 3 ? argv[2] : NULL, &len);
		bbx_pol_print(p, stdout);
		free(p);
		return fflush(stdout) ? 1 : 0;
	}
	if (!strcmp(verb, "compile")) {
		const char *file = NULL, *out = NULL;
		for (int i = 2; i < argc; i++) {
			if (!strcmp(argv[i], "-o") && i + 1 < argc)
				out = argv[++i];
			else if (!strncmp(argv[i], "--output=", 9))
				out = argv[i] + 9;
			else if (argv[i][0] != '-' && !file)
				file = argv[i];
			else {
				usage(stderr);
				return 2;
			}
		}
		if (!out) {
			usage(stderr);
			return 2;
		}
		struct bbx_pol_hdr *p = load(file, &len);
		int rc = bbx_pol_write_file(out, p, len);
		free(p);
		if (rc) {
			fprintf(stderr, "bbx-policy: %s: %s\n", out, strerror(-rc));
			return 1;
		}
		return 0;
	}
	if (!strcmp(verb, "explain")) {
		int dd = 0;
		for (int i = 2; i < argc; i++)
			if (!strcmp(argv[i], "--")) {
				dd = i;
				break;
			}
		const char *file = NULL;
		char **op;
		if (dd) {
			if (dd > 3 || (dd == 3 && argv[2][0] == '-')) {
				usage(stderr);
				return 2;
			}
			file = dd == 3 ? argv[2] : NULL;
			op = argv + dd + 1;
		} else {
			op = argv + 2;
		}
		if (!op[0]) {
			usage(stderr);
			return 2;
		}
		struct bbx_pol_hdr *p = load(file, &len);
		int rc = explain(p, op);
		free(p);
		return rc;
	}
	usage(stderr);
	return 2;
}
