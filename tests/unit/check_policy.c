/* SPDX-License-Identifier: MIT
 *
 * check_policy.c - the policy compiler (policy/compile.c, policy/ini.c) from INI text
 * to blob: path normalisation and resolution, variable expansion, network rule parsing
 * (CIDR masking, ports, IPv6, hosts, unix sockets), exec actions and classes, rule
 * order and the built-in rules, loc strings, deny_read inode lists, and that every blob
 * it makes passes the matcher's own bbx_pol_check().
 */
#include "unit.h"

#include "journal/record.h"
#include "policy/compile.h"
#include "policy/policy.h"

#include <arpa/inet.h>
#include <sys/wait.h>

/* Scratch paths are short (mkdtemp under $TMPDIR); no snprintf here can truncate. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

static const struct bbx_pol_vars V = {
	.workspace = "/nonexistent-ws", .home = "/nonexistent-home", .tmpdir = "/tmp", .uid = "1234"};

/* Compiles text (written to p.ini in the scratch directory); returns the blob or NULL
 * with the message in err. */
static struct bbx_pol_hdr *comp(const char *text, char *err, size_t cap)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/p.ini", unit_base);
	unit_write_file(path, text, strlen(text));
	void *blob = NULL;
	size_t len = 0;
	err[0] = 0;
	if (bbx_pol_compile(path, &V, &blob, &len, err, cap)) {
		ck_assert_ptr_null(blob);
		return NULL;
	}
	ck_assert_int_eq(bbx_pol_check(blob, len), 0);
	return blob;
}

static struct bbx_pol_hdr *ok_comp(const char *text)
{
	char err[1024];
	struct bbx_pol_hdr *p = comp(text, err, sizeof err);
	ck_assert_msg(p != NULL, "%s", err);
	return p;
}

static void bad_comp(const char *text, const char *want)
{
	char err[1024];
	struct bbx_pol_hdr *p = comp(text, err, sizeof err);
	ck_assert_ptr_null(p);
	char full[PATH_MAX + 1024];
	snprintf(full, sizeof full, "%s/%s", unit_base, want); /* FILE as given */
	ck_assert_str_eq(err, full);
}

static const struct bbx_pol_rule *rule(const struct bbx_pol_hdr *p, uint32_t i)
{
	ck_assert_uint_lt(i, p->n_rules);
	return &bbx_pol_rules(p)[i];
}

START_TEST(test_normalise)
{
	static const char *const t[][2] = {
		{"/", "/"},	      {"//", "/"},	       {"/a/b/", "/a/b"},
		{"/a//b", "/a/b"},    {"/a/./b/.", "/a/b"},    {"/a/b/../c", "/a/c"},
		{"/..", "/"},	      {"/../../a", "/a"},      {"/a/b/../../..", "/"},
		{"/a/..b/c", "/a/..b/c"}, {"/a/.b", "/a/.b"}, {"/a/b/c/../../d/", "/a/d"},
	};
	for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
		char buf[64];
		snprintf(buf, sizeof buf, "%s", t[i][0]);
		bbx_pol_normalise(buf);
		ck_assert_msg(!strcmp(buf, t[i][1]), "%s -> %s, want %s", t[i][0], buf, t[i][1]);
	}
}
END_TEST

START_TEST(test_resolve_symlinked_parent)
{
	char real[PATH_MAX], link[PATH_MAX], p[PATH_MAX], want[PATH_MAX];
	snprintf(real, sizeof real, "%s/real", unit_base);
	snprintf(link, sizeof link, "%s/link", unit_base);
	ck_assert_int_eq(mkdir(real, 0755), 0);
	ck_assert_int_eq(symlink("real", link), 0);
	char base[PATH_MAX];
	ck_assert_ptr_nonnull(realpath(unit_base, base));
	/* existing: fully resolved; missing tail: kept as written below the resolved part */
	snprintf(p, sizeof p, "%s/link/", unit_base);
	bbx_pol_resolve_path(p, sizeof p);
	snprintf(want, sizeof want, "%s/real", base);
	ck_assert_str_eq(p, want);
	snprintf(p, sizeof p, "/proc/self/../self/task/");
	bbx_pol_resolve_path(p, sizeof p); /* not the compiler's own pid */
	ck_assert_str_eq(p, "/proc/self/task");
	snprintf(p, sizeof p, "%s/link/x/../new/deeper", unit_base);
	bbx_pol_resolve_path(p, sizeof p);
	snprintf(want, sizeof want, "%s/real/new/deeper", base);
	ck_assert_str_eq(p, want);
}
END_TEST

START_TEST(test_variables)
{
	struct bbx_pol_hdr *p = ok_comp("[paths]\n"
					"write = ${WORKSPACE}/out/\n"
					"protect = ${HOME}/x/../.config\n"
					"deny_read = ${TMPDIR}/../tmp/s-${UID}\n"
					"[network]\n"
					"deny = unix:/nonexistent/${UID}/bus\n");
	ck_assert_str_eq(bbx_pol_str(p, rule(p, 0)->value), "/nonexistent-ws/out");
	ck_assert_uint_eq(rule(p, 0)->value_len, strlen("/nonexistent-ws/out"));
	ck_assert_str_eq(bbx_pol_str(p, rule(p, 1)->value), "/nonexistent-home/.config");
	char tmp[PATH_MAX];
	ck_assert_ptr_nonnull(realpath("/tmp", tmp));
	strcat(tmp, "/s-1234");
	ck_assert_str_eq(bbx_pol_str(p, rule(p, 2)->value), tmp);
	ck_assert_str_eq(bbx_pol_str(p, rule(p, 3)->value), "/nonexistent/1234/bus");
	ck_assert_str_eq(bbx_pol_str(p, p->workspace), "/nonexistent-ws");
	ck_assert_uint_eq(p->n_write, 1);
	ck_assert_uint_eq(p->n_protect, 1);
	ck_assert_uint_eq(p->n_deny_read, 1);
	ck_assert_uint_eq(p->n_net, 1);
	free(p);
	bad_comp("[paths]\nwrite = ${workspace}\n",
		 "p.ini:2: [paths] write: unknown variable ${workspace} (known: WORKSPACE, HOME, "
		 "TMPDIR, UID)");
	/* a '$' without '{' is literal */
	p = ok_comp("[exec]\ndeny = echo $HOME\n");
	ck_assert_str_eq(bbx_pol_str(p, rule(p, 0)->value), "echo $HOME");
	free(p);
}
END_TEST

static void v4(const struct bbx_pol_rule *r, const char *addr, unsigned prefix, unsigned port)
{
	char a[INET_ADDRSTRLEN];
	ck_assert_uint_eq(r->kind, BBX_NK_V4);
	ck_assert_str_eq(inet_ntop(AF_INET, r->addr, a, sizeof a), addr);
	ck_assert_uint_eq(r->prefix, prefix);
	ck_assert_uint_eq(r->port, port);
}

static void v6(const struct bbx_pol_rule *r, const char *addr, unsigned prefix, unsigned port)
{
	char a[INET6_ADDRSTRLEN];
	ck_assert_uint_eq(r->kind, BBX_NK_V6);
	ck_assert_str_eq(inet_ntop(AF_INET6, r->addr, a, sizeof a), addr);
	ck_assert_uint_eq(r->prefix, prefix);
	ck_assert_uint_eq(r->port, port);
}

START_TEST(test_network_rules)
{
	struct bbx_pol_hdr *p = ok_comp("[network]\n"
					"allow = 127.0.0.1/8\n"	       /* 0 */
					"allow = 10.1.2.3:443\n"       /* 1 */
					"allow = 192.168.77.1/20:53\n" /* 2 */
					"allow = 0.0.0.0/0\n"	       /* 3 */
					"allow = ::1\n"		       /* 4 */
					"allow = [::1]:8080\n"	       /* 5 */
					"allow = fd12:3456::1/8\n"     /* 6 */
					"allow = [fd00::/8]:443\n"     /* 7 */
					"allow = Registry.NPMjs.ORG:443\n" /* 8 */
					"allow = *.example.org\n"      /* 9 */
					"allow = *:22\n"	       /* 10 */
					"deny = *\n"		       /* 11 */
					"deny = unix:@abstract\n");    /* 12 */
	v4(rule(p, 0), "127.0.0.0", 8, 0);
	v4(rule(p, 1), "10.1.2.3", 32, 443);
	v4(rule(p, 2), "192.168.64.0", 20, 53);
	v4(rule(p, 3), "0.0.0.0", 0, 0);
	v6(rule(p, 4), "::1", 128, 0);
	v6(rule(p, 5), "::1", 128, 8080);
	v6(rule(p, 6), "fd00::", 8, 0);
	v6(rule(p, 7), "fd00::", 8, 443);
	ck_assert_uint_eq(rule(p, 8)->kind, BBX_NK_HOST);
	ck_assert_str_eq(bbx_pol_str(p, rule(p, 8)->value), "registry.npmjs.org");
	ck_assert_uint_eq(rule(p, 8)->port, 443);
	ck_assert_str_eq(bbx_pol_str(p, rule(p, 9)->value), "*.example.org");
	ck_assert_uint_eq(rule(p, 10)->kind, BBX_NK_ANY);
	ck_assert_uint_eq(rule(p, 10)->port, 22);
	ck_assert_uint_eq(rule(p, 11)->kind, BBX_NK_ANY);
	ck_assert_uint_eq(rule(p, 11)->port, 0);
	ck_assert_uint_eq(rule(p, 11)->section, BBX_PS_NET_DENY);
	ck_assert_uint_eq(rule(p, 11)->action, BBX_ACT_DENY);
	ck_assert_uint_eq(rule(p, 12)->kind, BBX_NK_UNIX);
	ck_assert_str_eq(bbx_pol_str(p, rule(p, 12)->value), "@abstract");
	ck_assert_uint_eq(rule(p, 0)->section, BBX_PS_NET_ALLOW);
	ck_assert_uint_eq(p->n_net, 13);
	free(p);

	bad_comp("[network]\nallow = 1.2.3.4/-1\n",
		 "p.ini:2: [network] allow: bad CIDR \"1.2.3.4/-1\" (prefix must be 0..32)");
	bad_comp("[network]\nallow = 1.2.3.4/\n",
		 "p.ini:2: [network] allow: bad CIDR \"1.2.3.4/\" (prefix must be 0..32)");
	bad_comp("[network]\nallow = 1.2.3:80\n",
		 "p.ini:2: [network] allow: bad IPv4 address \"1.2.3:80\"");
	bad_comp("[network]\nallow = host:\n",
		 "p.ini:2: [network] allow: bad port in \"host:\" (must be 1..65535)");
	bad_comp("[network]\nallow = host:65536\n",
		 "p.ini:2: [network] allow: bad port in \"host:65536\" (must be 1..65535)");
	bad_comp("[network]\nallow = [127.0.0.1]:80\n",
		 "p.ini:2: [network] allow: bad address \"[127.0.0.1]:80\" (brackets are for IPv6 "
		 "addresses)");
	bad_comp("[network]\nallow = [::1]80\n",
		 "p.ini:2: [network] allow: bad address \"[::1]80\" (expected [IPv6]:PORT)");
	bad_comp("[network]\ndeny = unix:@\n",
		 "p.ini:2: [network] deny: bad unix socket \"unix:@\" (empty abstract name)");
}
END_TEST

/* A unix socket path whose parent is a symlink gets two rules: as written and resolved. */
START_TEST(test_unix_resolved_twice)
{
	char real[PATH_MAX], text[PATH_MAX * 2], base[PATH_MAX];
	snprintf(real, sizeof real, "%s/run", unit_base);
	mkdir(real, 0755);
	snprintf(text, sizeof text, "%s/varrun", unit_base);
	symlink("run", text);
	ck_assert_ptr_nonnull(realpath(unit_base, base));
	snprintf(text, sizeof text, "[network]\ndeny = unix:%s/varrun/docker.sock\n", base);
	struct bbx_pol_hdr *p = ok_comp(text);
	ck_assert_uint_eq(p->n_net, 2);
	char want[PATH_MAX * 2];
	snprintf(want, sizeof want, "%s/run/docker.sock", base);
	ck_assert_str_eq(bbx_pol_str(p, rule(p, 0)->value), want);
	snprintf(want, sizeof want, "%s/varrun/docker.sock", base);
	ck_assert_str_eq(bbx_pol_str(p, rule(p, 1)->value), want);
	ck_assert_str_eq(bbx_pol_str(p, rule(p, 0)->loc), "p.ini:2 [network] deny");
	ck_assert_str_eq(bbx_pol_str(p, rule(p, 1)->loc), "p.ini:2 [network] deny");
	free(p);
}
END_TEST

START_TEST(test_exec_rules)
{
	struct bbx_pol_hdr *p = ok_comp("; comment\n"
					"[exec]\n"
					"deny = curl *\n"
					"deny.destructive = terraform destroy*\n"
					"log = kubectl *\n"
					"allow.risky = make*\n"
					"ask = npm publish * --tag *\n"
					"static = deny\n");
	static const struct {
		int action, klass;
		const char *loc;
		bool prefix;
	} want[] = {
		{BBX_ACT_DENY, BBX_CLASS_DANGEROUS, "p.ini:3 [exec] deny", true},
		{BBX_ACT_DENY, BBX_CLASS_DESTRUCTIVE, "p.ini:4 [exec] deny.destructive", true},
		{BBX_ACT_LOG, BBX_CLASS_RISKY, "p.ini:5 [exec] log", true},
		{BBX_ACT_ALLOW, BBX_CLASS_RISKY, "p.ini:6 [exec] allow.risky", true},
		{BBX_ACT_ASK, BBX_CLASS_DANGEROUS, "p.ini:7 [exec] ask", false},
	};
	for (uint32_t i = 0; i < 5; i++) {
		const struct bbx_pol_rule *r = rule(p, i);
		ck_assert_uint_eq(r->section, BBX_PS_EXEC);
		ck_assert_uint_eq(r->action, want[i].action);
		ck_assert_uint_eq(r->klass, want[i].klass);
		ck_assert_str_eq(bbx_pol_str(p, r->loc), want[i].loc);
		ck_assert_uint_eq(!!(r->flags & BBX_RF_PREFIX), want[i].prefix);
		ck_assert_uint_eq(r->flags & BBX_RF_BUILTIN, 0);
	}
	/* then the built-ins, flagged, in their own order */
	ck_assert_uint_gt(p->n_rules, 5);
	for (uint32_t i = 5; i < p->n_rules; i++) {
		ck_assert_uint_eq(rule(p, i)->section, BBX_PS_EXEC);
		ck_assert(rule(p, i)->flags & BBX_RF_BUILTIN);
		ck_assert(!strncmp(bbx_pol_str(p, rule(p, i)->loc), "built-in [exec] ", 16));
	}
	ck_assert_uint_eq(p->n_exec, p->n_rules);
	ck_assert_uint_eq(p->static_action, BBX_ACT_DENY);
	ck_assert_str_eq(bbx_pol_str(p, p->static_loc), "p.ini:8 [exec] static");

	/* the compiled rules decide as documented, built-ins included */
	struct bbx_pol_verdict v;
	bbx_pol_exec(p, "terraform destroy -auto-approve", &v);
	ck_assert_int_eq(v.decision, BBX_DEC_DENY);
	ck_assert_int_eq(v.klass, BBX_CLASS_DESTRUCTIVE);
	static const char *const denied[] = {
		"rm -rf /", "rm -fr /", "/bin/rm -rf /", "rm -r -f /", "rm -rf --no-preserve-root /",
		"rm -rf /bin /boot /dev /etc /home", "rm -rf /nonexistent-home",
		"mkfs.ext4 /dev/sda1", "dd if=/dev/zero of=/dev/sda bs=1M", "dd of=/dev/nvme0n1",
		"chmod -R 777 /", "chown -R me /", "git push --force", "git push -f origin main",
		"git push origin main --force", "git push origin +main",
		"bash -c :(){ :|:& };:", "/usr/bin/rm -r /usr", "x/rm -rf /usr /tmp",
	};
	for (size_t i = 0; i < sizeof denied / sizeof *denied; i++) {
		bbx_pol_exec(p, denied[i], &v);
		ck_assert_msg(v.decision == BBX_DEC_DENY, "%s: decision %d", denied[i], v.decision);
	}
	static const char *const allowed[] = {
		"rm -rf /tmp/build", "rm -rf ./node_modules", "rm -rf /nonexistent-home/proj/x",
		"dd if=/dev/zero of=disk.img", "chmod -R 755 ./dist", "git push origin feature-fix",
		"git status", "ls /", "echo rm",
		/* every run but one of the rm-of-/usr rules' globs: " /usr" everywhere, no "/rm " */
		"/usr/bin/ld -o a /usr/lib/crt1.o /usr/lib/crti.o -L/usr/lib a.o /usr/lib/crtn.o -rf",
	};
	for (size_t i = 0; i < sizeof allowed / sizeof *allowed; i++) {
		bbx_pol_exec(p, allowed[i], &v);
		ck_assert_msg(v.decision == BBX_DEC_ALLOW || v.decision == BBX_DEC_LOG,
			      "%s: decision %d", allowed[i], v.decision);
	}
	bbx_pol_exec(p, "git push origin feature-fix", &v);
	ck_assert_int_eq(v.decision, BBX_DEC_LOG);
	ck_assert_int_eq(v.klass, BBX_CLASS_RISKY);

	/* The index (bbx_pol_index: each rule's literal run must occur in the command line
	 * before its glob is tried) decides exactly as the plain scan: same decision, same
	 * rule, over the lists above and 20,000 command lines built from the rules' words. */
	static const char *const words[] = {
		"rm", "/bin/rm", "-rf", "-fr", "-r", "-f", "/", "/etc", "/etc/", "/home", "/bin",
		"/usr/bin/rm", "--no-preserve-root", "git", "push", "--force", "-f", "+main",
		"origin", "main", "dd", "if=/dev/zero", "of=/dev/sda", "of=disk.img", "mkfs.ext4",
		"/dev/sda1", "chmod", "chown", "-R", "777", "me", "terraform", "destroy", "x",
		"*", "bash", "-c", ":(){", ":|:&", "};:", "./node_modules", "/tmp/build", "rmdir",
		"/usr", "/usr/lib/crt1.o", "-L/usr/lib", "x/rm", "/usr/bin/ld",
	};
	enum { NW = sizeof words / sizeof *words, NC = 20000 };
	static char cmds[NC][160];
	unsigned seed = 12345;
	size_t nc = 0;
	for (size_t i = 0; i < sizeof denied / sizeof *denied; i++)
		snprintf(cmds[nc++], sizeof cmds[0], "%s", denied[i]);
	for (size_t i = 0; i < sizeof allowed / sizeof *allowed; i++)
		snprintf(cmds[nc++], sizeof cmds[0], "%s", allowed[i]);
	while (nc < NC) {
		size_t len = 0;
		int nwords = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 6;
		for (int w = 0; w < nwords; w++) {
			seed = seed * 1103515245u + 12345u;
			const char *t = words[(seed >> 16) % NW];
			len += (size_t)snprintf(cmds[nc] + len, sizeof cmds[0] - len, "%s%s",
						w ? " " : "", t);
		}
		nc++;
	}
	static struct bbx_pol_verdict plain[NC];
	for (size_t i = 0; i < NC; i++)
		bbx_pol_exec(p, cmds[i], &plain[i]);
	bbx_pol_index(p);
	size_t denials = 0;
	for (size_t i = 0; i < NC; i++) {
		bbx_pol_exec(p, cmds[i], &v);
		ck_assert_msg(v.decision == plain[i].decision && v.rule == plain[i].rule,
			      "%s: indexed %d, plain %d", cmds[i], v.decision, plain[i].decision);
		denials += v.decision == BBX_DEC_DENY;
	}
	ck_assert_uint_gt(denials, 100); /* the corpus does reach the deny rules */
	free(p);
}
END_TEST

START_TEST(test_defaults_and_general)
{
	struct bbx_pol_hdr *p = ok_comp("[general]\nmode = safe\nexplain = off\n"
					"[journal]\nresults = failures\n"
					"[redact]\nenv = *TOKEN*\nargv = --pw=*\nfingerprint = on\n");
	ck_assert_uint_eq(p->mode, BBX_MODE_SAFE);
	ck_assert_uint_eq(p->explain, 0);
	ck_assert_uint_eq(p->results_all, 0);
	ck_assert_uint_eq(p->redact_fingerprint, 1);
	ck_assert_uint_eq(rule(p, 0)->section, BBX_PS_REDACT_ENV);
	ck_assert_uint_eq(rule(p, 1)->section, BBX_PS_REDACT_ARGV);
	ck_assert_str_eq(bbx_pol_str(p, rule(p, 1)->value), "--pw=*");
	free(p);
	p = ok_comp("");
	ck_assert_uint_eq(p->mode, BBX_MODE_ENFORCE);
	ck_assert_uint_eq(p->explain, 1);
	ck_assert_uint_eq(p->static_action, BBX_ACT_WARN);
	ck_assert_str_eq(bbx_pol_str(p, p->static_loc), "built-in");
	ck_assert_uint_eq(p->results_all, 1);
	ck_assert_uint_eq(p->n_write, 0);
	struct bbx_pol_verdict v;
	bbx_pol_write(p, "/nonexistent-ws/a", &v);
	ck_assert_int_eq(v.decision, BBX_DEC_DENY); /* no write root: nothing writable */
	ck_assert_int_eq(v.err, EACCES);
	free(p);
}
END_TEST

/* The index (bbx_pol_index: hashed roots, exec needles) decides as the plain scan does,
 * rule for rule, for reads and writes of 20,000 paths made of the roots' own components
 * (exact roots, below them, beside them, "//", trailing '/', relative) and for exec
 * command lines; it was found where want says (bbx_pol_index_source). */
static void index_agrees(const struct bbx_pol_hdr *p, int want)
{
	struct bbx_pol_verdict v;
	static const char *const comps[] = {
		"nonexistent-home", "nonexistent-ws", ".ssh", ".aws", ".config", "gcloud", "gh",
		".docker", "config.json", "config.jsonx", "etc", "shadow", "gshadow", "shadowx",
		"tmp", "var", "dev", "null", "zero", "shm", "proc", "self", "fd", ".git", "hooks",
		"pre-commit", ".cache", ".npm", "x", "", ".", "..", "src", "main.c", "id_rsa",
	};
	static const char *const cmds[] = {
		"rm -rf /", "rm -rf /etc/x", "/usr/bin/rm -rf /", "git push --force origin main",
		"git push origin main", "git status", "curl http://x | sh", "ls -l", "sudo ls",
		"dd if=/dev/zero of=/dev/sda", "mkfs.ext4 /dev/sdb", "chmod -R 777 /",
		"/bin/sh -c true", "make -j2", "npm install", "shutdown -h now", "x",
	};
	enum { NCOMP = sizeof comps / sizeof *comps, NP = 20000, NC = sizeof cmds / sizeof *cmds };
	static char paths[NP][200];
	static struct bbx_pol_verdict rd[NP], wr[NP], ex[NC];
	unsigned seed = 777;
	for (size_t i = 0; i < NP; i++) {
		size_t pl = 0;
		seed = seed * 1103515245u + 12345u;
		int depth = 1 + (int)((seed >> 16) % 5), rel = (seed >> 8) % 17 == 0;
		for (int d = 0; d < depth; d++) {
			seed = seed * 1103515245u + 12345u;
			pl += (size_t)snprintf(paths[i] + pl, sizeof paths[0] - pl, "%s%s",
						d || !rel ? "/" : "",
						d == 0 && (seed & 0x100) ? "nonexistent-home"
									 : comps[(seed >> 16) % NCOMP]);
		}
		if ((seed >> 4) % 13 == 0 && pl + 1 < sizeof paths[0])
			strcat(paths[i], "/");
		bbx_pol_read(p, paths[i], &rd[i]);
		bbx_pol_write(p, paths[i], &wr[i]);
	}
	for (size_t i = 0; i < NC; i++)
		bbx_pol_exec(p, cmds[i], &ex[i]);
	ck_assert_int_eq(bbx_pol_index_source(), 0);
	bbx_pol_index(p);
	ck_assert_int_eq(bbx_pol_index_source(), want);
	size_t refused = 0, allowed = 0, denied = 0;
	for (size_t i = 0; i < NP; i++) {
		bbx_pol_read(p, paths[i], &v);
		ck_assert_msg(v.decision == rd[i].decision && v.rule == rd[i].rule,
			      "read %s: indexed %d, plain %d", paths[i], v.decision, rd[i].decision);
		refused += v.decision == BBX_DEC_DENY;
		bbx_pol_write(p, paths[i], &v);
		ck_assert_msg(v.decision == wr[i].decision && v.rule == wr[i].rule,
			      "write %s: indexed %d, plain %d", paths[i], v.decision, wr[i].decision);
		allowed += v.decision == BBX_DEC_ALLOW;
	}
	for (size_t i = 0; i < NC; i++) {
		bbx_pol_exec(p, cmds[i], &v);
		ck_assert_msg(v.decision == ex[i].decision && v.rule == ex[i].rule,
			      "exec %s: indexed %d, plain %d", cmds[i], v.decision, ex[i].decision);
		denied += v.decision == BBX_DEC_DENY;
	}
	ck_assert_uint_gt(refused, 100); /* the corpus does reach deny_read roots */
	ck_assert_uint_gt(allowed, 100); /* and write roots */
	ck_assert_uint_gt(denied, 3);    /* and exec rules */
}

/* The built-in default policy, compiled; its length in *len. */
static struct bbx_pol_hdr *builtin(size_t *len)
{
	void *blob = NULL;
	char err[512];
	ck_assert_msg(bbx_pol_compile(NULL, &V, &blob, len, err, sizeof err) == 0, "%s", err);
	return blob;
}

START_TEST(test_builtin_default)
{
	size_t len;
	void *blob = builtin(&len);
	ck_assert_int_eq(bbx_pol_check(blob, len), 0);
	const struct bbx_pol_hdr *p = blob;
	ck_assert_str_eq(bbx_pol_str(p, p->src), "built-in");
	struct bbx_pol_verdict v;
	bbx_pol_write(p, "/nonexistent-ws/src/main.c", &v);
	ck_assert_int_eq(v.decision, BBX_DEC_ALLOW);
	bbx_pol_write(p, "/nonexistent-ws/.git/hooks/pre-commit", &v); /* git init works */
	ck_assert_int_eq(v.decision, BBX_DEC_ALLOW);
	bbx_pol_write(p, "/etc/passwd", &v);
	ck_assert_int_eq(v.decision, BBX_DEC_DENY);
	bbx_pol_read(p, "/nonexistent-home/.ssh/id_rsa", &v);
	ck_assert_int_eq(v.decision, BBX_DEC_DENY);
	ck_assert_int_eq(v.err, EACCES);
	ck_assert(!strncmp(bbx_pol_str(p, v.rule->loc), "built-in:", 9));
	bbx_pol_read(p, "/nonexistent-home/.bashrc", &v);
	ck_assert_int_eq(v.decision, BBX_DEC_ALLOW);

	index_agrees(p, 1); /* the compiler's index, carried in the blob */
	free(blob);
}
END_TEST

/* Roots nested in either order, and of several lengths: the index's early stops (the
 * section's first root matched; no root as long as the next prefix: match.c,
 * hx_first1 and hx_maxlen) decide as the scan does, the first root in file order
 * winning.  Paths end at, inside, beside and past the longest root. */
START_TEST(test_index_nested_roots)
{
	struct bbx_pol_hdr *p = ok_comp("[paths]\n"
					"write = /nonexistent-ws/src\n"
					"write = /nonexistent-ws\n"
					"write = /tmp\n"
					"write = /nonexistent-ws/src/main.c/x\n"
					"write = /var/nonexistent-ws/the/longest/root\n"
					"deny_read = /nonexistent-home/.config\n"
					"deny_read = /nonexistent-home/.config/gh/hooks\n"
					"deny_read = /nonexistent-home\n");
	/* Decided by the index (index_agrees installs it): the rule each path falls under,
	 * or NULL for a refusal outside every root. */
	static const struct {
		int write;
		const char *path, *root;
	} want[] = {
		{1, "/nonexistent-ws/src/main.c/x/y", "/nonexistent-ws/src"}, /* first in file */
		{1, "/nonexistent-ws/srcx", "/nonexistent-ws"},
		{0, "/nonexistent-home/.config/gh/hooks/x", "/nonexistent-home/.config"},
		{0, "/nonexistent-home/.configx", "/nonexistent-home"},
		/* the longest write root, under no other: exactly, below, not beside */
		{1, "/var/nonexistent-ws/the/longest/root", "/var/nonexistent-ws/the/longest/root"},
		{1, "/var/nonexistent-ws/the/longest/root/z", "/var/nonexistent-ws/the/longest/root"},
		{1, "/var/nonexistent-ws/the/longest/rootz", NULL},
	};
	index_agrees(p, 1);
	for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
		struct bbx_pol_verdict v;
		(want[i].write ? bbx_pol_write : bbx_pol_read)(p, want[i].path, &v);
		const char *got = v.rule ? bbx_pol_str(p, v.rule->value) : NULL;
		ck_assert_msg(got ? want[i].root && !strcmp(got, want[i].root) : !want[i].root,
			      "%s: rule %s, want %s", want[i].path, got ? got : "none",
			      want[i].root ? want[i].root : "none");
	}
	free(p);
}
END_TEST

/* A blob without an index (an older compiler's) and one whose index fails its checks
 * (every word past its magic and size damaged): each process builds its own, and it
 * decides as the scan does. */
START_TEST(test_index_absent)
{
	size_t len;
	struct bbx_pol_hdr *p = builtin(&len);
	void *blob = p;
	ck_assert_uint_eq(p->ix_len, bbx_pol_ix_size());
	ck_assert_uint_eq(p->ix_off % 8, 0);
	ck_assert_uint_ge(p->ix_off, p->strings_off + p->strings_len);
	p->ix_off = p->ix_len = 0;
	ck_assert_int_eq(bbx_pol_check(blob, len), 0);
	index_agrees(p, 2);
	free(blob);
}
END_TEST

START_TEST(test_index_damaged)
{
	size_t len;
	struct bbx_pol_hdr *p = builtin(&len);
	void *blob = p;
	memset((char *)blob + p->ix_off + 8, 0xff, p->ix_len - 8);
	ck_assert_int_eq(bbx_pol_check(blob, len), 0);
	index_agrees(p, 2);
	/* Where an index cannot be: misaligned, inside the strings, past the end. */
	uint32_t off = p->ix_off;
	p->ix_off = off + 4;
	ck_assert_int_eq(bbx_pol_check(blob, len), -EINVAL);
	p->ix_off = p->strings_off;
	ck_assert_int_eq(bbx_pol_check(blob, len), -EINVAL);
	p->ix_off = off + 8;
	ck_assert_int_eq(bbx_pol_check(blob, len), -EINVAL);
	p->ix_off = 0;
	ck_assert_int_eq(bbx_pol_check(blob, len), -EINVAL); /* a length without a place */
	free(blob);
}
END_TEST

/* The read filter's policy part and [redact]'s runs, carried in the blob's index
 * (bbx_pol_read_filter, bbx_pol_redact_runs): every deny_read root's second byte is
 * in the word set, each of its component prefixes is in the prefix table, the root
 * itself marked whole; the redaction runs are where the rules are.  And an index whose
 * prefix table could make a probe run forever is refused (the process builds its own,
 * which agrees with the scan: test_read_filter_refused). */
static int pfx_find(const struct bbx_pol_rf *f, uint32_t h)
{
	uint32_t k = h & ~3u;
	for (unsigned j = bbx_rf_pfx_home(h), n = 0; n < BBX_RF_PFX_SLOTS;
	     j = (j + 1) & (BBX_RF_PFX_SLOTS - 1), n++) {
		if (!f->pfx[j])
			return 0;
		if ((f->pfx[j] & ~3u) == k)
			return (int)(f->pfx[j] & 3u);
	}
	return -1;
}

START_TEST(test_read_filter_carried)
{
	size_t len;
	struct bbx_pol_hdr *p = builtin(&len);
	ck_assert_int_eq(bbx_pol_check(p, len), 0);
	bbx_pol_index(p);
	ck_assert_int_eq(bbx_pol_index_source(), 1);
	const struct bbx_pol_rf *f = bbx_pol_read_filter(p);
	ck_assert_ptr_nonnull(f);
	ck_assert((const char *)f > (const char *)p && (const char *)f < (const char *)p + len);
	const struct bbx_pol_rule *r = bbx_pol_rules(p);
	unsigned roots = 0, used = 0, nred[2] = {0, 0};
	for (uint32_t i = 0; i < p->n_rules; i++) {
		if (r[i].section == BBX_PS_REDACT_ENV || r[i].section == BBX_PS_REDACT_ARGV)
			nred[r[i].section == BBX_PS_REDACT_ARGV]++;
		if (r[i].section != BBX_PS_DENY_READ)
			continue;
		const char *v = bbx_pol_str(p, r[i].value);
		unsigned char b1 = (unsigned char)v[1];
		ck_assert(f->words[b1 >> 6] >> (b1 & 63) & 1);
		uint32_t h = BBX_RF_FNV0;
		for (uint32_t k = 0; k < r[i].value_len; k++) {
			if (v[k] == '/' && k > 0)
				ck_assert_msg(pfx_find(f, h) & 1, "%s: prefix of %u bytes", v, k);
			h = bbx_rf_fnv(h, (unsigned char)v[k]);
		}
		ck_assert_msg(pfx_find(f, h) == 3, "%s: not a whole root", v);
		roots++;
	}
	ck_assert_uint_gt(roots, 3);
	ck_assert(f->words['.' >> 6] >> ('.' & 63) & 1 && f->words['/' >> 6] >> ('/' & 63) & 1);
	ck_assert(!(f->words['u' >> 6] >> ('u' & 63) & 1)); /* no root under /usr */
	for (unsigned j = 0; j < BBX_RF_PFX_SLOTS; j++)
		used += f->pfx[j] != 0;
	ck_assert_uint_eq(used, f->npfx);
	ck_assert_uint_le(f->npfx, BBX_RF_PFX_MAX);
	ck_assert_int_eq(pfx_find(f, bbx_rf_fnv(bbx_rf_fnv(BBX_RF_FNV0, '/'), 'u')), 0);
	uint32_t first[2], n[2];
	ck_assert_int_eq(bbx_pol_redact_runs(p, first, n), 1);
	for (int k = 0; k < 2; k++) {
		ck_assert_uint_eq(n[k], nred[k]);
		ck_assert_uint_gt(n[k], 0);
		for (uint32_t i = first[k]; i < first[k] + n[k]; i++)
			ck_assert_int_eq(r[i].section, k ? BBX_PS_REDACT_ARGV : BBX_PS_REDACT_ENV);
	}
	free(p);
}
END_TEST

/* A carried prefix table with no empty slot: refused.  Its place is learnt by a child,
 * which indexes the same bytes (one index per process). */
START_TEST(test_read_filter_refused)
{
	size_t len;
	struct bbx_pol_hdr *p = builtin(&len);
	int fd[2];
	ck_assert_int_eq(pipe(fd), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		bbx_pol_index(p);
		const struct bbx_pol_rf *g = bbx_pol_read_filter(p);
		long off = g ? (long)((const char *)g - (const char *)p) : -1;
		_exit(write(fd[1], &off, sizeof off) == sizeof off ? 0 : 1);
	}
	long off = -1;
	ck_assert_int_eq(read(fd[0], &off, sizeof off), (ssize_t)sizeof off);
	int st;
	waitpid(pid, &st, 0);
	ck_assert_int_gt(off, 0);
	struct bbx_pol_rf *w = (struct bbx_pol_rf *)((char *)p + off);
	for (unsigned j = 0; j < BBX_RF_PFX_SLOTS; j++)
		w->pfx[j] |= 1;
	index_agrees(p, 2);
	free(p);
	close(fd[0]);
	close(fd[1]);
}
END_TEST

START_TEST(test_deny_read_inodes_and_install)
{
	char d[PATH_MAX], f[PATH_MAX * 2], text[PATH_MAX * 3];
	snprintf(d, sizeof d, "%s/secrets", unit_base);
	ck_assert_int_eq(mkdir(d, 0700), 0);
	for (int i = 0; i < 3; i++) {
		snprintf(f, sizeof f, "%s/k%d", d, i);
		unit_write_file(f, "x", 1);
	}
	snprintf(f, sizeof f, "%s/loop", d);
	ck_assert_int_eq(symlink("/", f), 0); /* never followed */
	snprintf(text, sizeof text, "[paths]\ndeny_read = %s\ndeny_read = %s/k0\n", d, d);
	struct bbx_pol_hdr *p = ok_comp(text);
	ck_assert_uint_eq(p->n_inodes, 5); /* dir, 3 files, the symlink; k0 once */
	const struct bbx_pol_inode *in = bbx_pol_inodes(p);
	for (uint32_t i = 0; i < p->n_inodes; i++)
		ck_assert_uint_eq(in[i].rule, 0);
	struct stat sb;
	snprintf(f, sizeof f, "%s/k2", d);
	ck_assert_int_eq(stat(f, &sb), 0);
	struct bbx_pol_verdict v;
	ck_assert(bbx_pol_read_inode(p, sb.st_dev, sb.st_ino, &v));
	ck_assert_int_eq(stat("/", &sb), 0);
	ck_assert(!bbx_pol_read_inode(p, sb.st_dev, sb.st_ino, &v));

	ck_assert_int_eq(bbx_pol_install(unit_base, p, p->size), 0);
	snprintf(f, sizeof f, "%s/" BBX_POL_FILE, unit_base);
	ck_assert_int_eq(stat(f, &sb), 0);
	ck_assert_uint_eq(sb.st_mode & 07777, 0444);
	size_t n;
	void *back = unit_read_file(f, &n);
	ck_assert_uint_eq(n, p->size);
	ck_assert_int_eq(memcmp(back, p, n), 0);
	const struct bbx_pol_hdr *m;
	ck_assert_int_eq(bbx_pol_map(f, &m), 0);
	ck_assert_uint_eq(m->n_inodes, 5);
	free(back);
	free(p);
}
END_TEST

START_TEST(test_errors)
{
	bad_comp("[general]\nmode = enforce ; fine\nmode = audit\n",
		 "p.ini:3: [general] mode: set twice (first at line 2)");
	/* an indented line is a key, not inih's continuation of the previous value */
	struct bbx_pol_hdr *p = ok_comp("[paths]\nwrite = /tmp\n    write = /var/tmp\n");
	ck_assert_uint_eq(p->n_write, 2);
	free(p);
	char longl[400];
	memset(longl, 'a', sizeof longl);
	memcpy(longl, "[exec]\ndeny = ", 14);
	longl[7 + 198] = '\n'; /* line 2 is exactly 198 bytes: accepted */
	longl[7 + 199] = 0;
	p = ok_comp(longl);
	free(p);
	longl[7 + 198] = 'a'; /* 199 bytes */
	longl[7 + 199] = '\n';
	longl[7 + 200] = 0;
	bad_comp(longl, "p.ini:2: line too long (max 198 bytes)");
	char err[256];
	void *blob = (void *)1;
	size_t len = 7;
	ck_assert_int_eq(bbx_pol_compile("/nonexistent/p.ini", &V, &blob, &len, err, sizeof err), -1);
	ck_assert_ptr_null(blob);
	ck_assert_str_eq(err, "/nonexistent/p.ini: No such file or directory");
}
END_TEST

static Suite *policy_suite(void)
{
	Suite *s = suite_create("policy");
	TCase *tc = tcase_create("compile");
	tcase_add_test(tc, test_normalise);
	tcase_add_test(tc, test_resolve_symlinked_parent);
	tcase_add_test(tc, test_variables);
	tcase_add_test(tc, test_network_rules);
	tcase_add_test(tc, test_unix_resolved_twice);
	tcase_add_test(tc, test_exec_rules);
	tcase_add_test(tc, test_defaults_and_general);
	tcase_add_test(tc, test_builtin_default);
	tcase_add_test(tc, test_index_nested_roots);
	tcase_add_test(tc, test_index_absent);
	tcase_add_test(tc, test_index_damaged);
	tcase_add_test(tc, test_read_filter_carried);
	tcase_add_test(tc, test_read_filter_refused);
	tcase_add_test(tc, test_deny_read_inodes_and_install);
	tcase_add_test(tc, test_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return unit_main(policy_suite()); }
