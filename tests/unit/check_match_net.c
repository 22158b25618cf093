/* SPDX-License-Identifier: MIT
 *
 * check_match_net.c - the egress matcher (policy/match_net.c) over blobs built here by
 * hand: CIDR and port matching for IPv4 and IPv6, IPv4-mapped IPv6 addresses decided as
 * IPv4, host-name rules (case-insensitive globs, only with a looked-up name), unix paths
 * and abstract names, deny over allow, the default refusal, audit mode, the families
 * without rules, and bbx_pol_host_allowed.
 */
#include "unit.h"

#include "journal/record.h"
#include "policy/policy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <sys/un.h>

struct b {
	struct bbx_pol_rule r[32];
	char s[4096];
	size_t nr, sl;
	uint32_t mode;
};

static uint32_t str(struct b *b, const char *x)
{
	uint32_t off = (uint32_t)b->sl;
	memcpy(b->s + b->sl, x, strlen(x) + 1);
	b->sl += strlen(x) + 1;
	return off;
}

/* A [network] rule: sect BBX_PS_NET_ALLOW/DENY; spec per kind: V4/V6 "addr/prefix",
 * HOST the glob, UNIX the path glob, ANY "". */
static void rule(struct b *b, int sect, int kind, const char *spec, unsigned port)
{
	struct bbx_pol_rule *r = &b->r[b->nr++];
	memset(r, 0, sizeof *r);
	r->section = (uint16_t)sect;
	r->action = sect == BBX_PS_NET_DENY ? BBX_ACT_DENY : BBX_ACT_ALLOW;
	r->kind = (uint16_t)kind;
	r->port = (uint16_t)port;
	const char *value = "";
	if (kind == BBX_NK_V4 || kind == BBX_NK_V6) {
		char a[64];
		const char *slash = strchr(spec, '/');
		memcpy(a, spec, (size_t)(slash - spec));
		a[slash - spec] = 0;
		ck_assert_int_eq(inet_pton(kind == BBX_NK_V4 ? AF_INET : AF_INET6, a, r->addr), 1);
		r->prefix = (uint8_t)atoi(slash + 1);
	} else {
		value = spec;
	}
	r->value = str(b, value);
	r->value_len = (uint32_t)strlen(value);
	char loc[160];
	snprintf(loc, sizeof loc, "t.ini:%zu [network] %s = %s:%u", b->nr,
		 sect == BBX_PS_NET_DENY ? "deny" : "allow", spec, port);
	r->loc = str(b, loc);
}

static void init(struct b *b, uint32_t mode)
{
	memset(b, 0, sizeof *b);
	b->sl = 1;
	b->mode = mode;
}

static struct bbx_pol_hdr *build(struct b *b)
{
	uint32_t src = str(b, "t.ini");
	size_t roff = (sizeof(struct bbx_pol_hdr) + 7) & ~(size_t)7;
	size_t soff = roff + b->nr * sizeof(struct bbx_pol_rule);
	size_t len = soff + b->sl;
	struct bbx_pol_hdr *h = calloc(1, len);
	ck_assert_ptr_nonnull(h);
	*h = (struct bbx_pol_hdr){.magic = BBX_POL_MAGIC, .version = BBX_POL_VERSION,
				  .size = (uint32_t)len, .mode = b->mode, .explain = 1,
				  .static_loc = src, .src = src, .n_rules = (uint32_t)b->nr,
				  .rules_off = (uint32_t)roff, .inodes_off = (uint32_t)soff,
				  .strings_off = (uint32_t)soff, .strings_len = (uint32_t)b->sl,
				  .n_net = (uint32_t)b->nr};
	memcpy((char *)h + roff, b->r, b->nr * sizeof(struct bbx_pol_rule));
	memcpy((char *)h + soff, b->s, b->sl);
	ck_assert_int_eq(bbx_pol_check(h, len), 0);
	return h;
}

/* Decides an inet egress to "addr" (v4 or v6 text) port, with the looked-up host. */
static struct bbx_pol_verdict inet(const struct bbx_pol_hdr *p, const char *addr,
				   unsigned port, const char *host)
{
	struct bbx_pol_verdict v;
	memset(&v, 0x5a, sizeof v);
	struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	struct sockaddr_in6 in6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
	if (inet_pton(AF_INET, addr, &in.sin_addr) == 1) {
		bbx_pol_net(p, (struct sockaddr *)&in, sizeof in, host, &v);
	} else {
		ck_assert_int_eq(inet_pton(AF_INET6, addr, &in6.sin6_addr), 1);
		bbx_pol_net(p, (struct sockaddr *)&in6, sizeof in6, host, &v);
	}
	return v;
}

static struct bbx_pol_verdict unx(const struct bbx_pol_hdr *p, const char *path, size_t n)
{
	struct bbx_pol_verdict v;
	struct sockaddr_un un = {.sun_family = AF_UNIX};
	memcpy(un.sun_path, path, n);
	bbx_pol_net(p, (struct sockaddr *)&un,
		    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n), NULL, &v);
	return v;
}

static int rule_no(const struct bbx_pol_hdr *p, const struct bbx_pol_verdict *v)
{
	return v->rule ? (int)(v->rule - bbx_pol_rules(p)) : -1;
}

#define ALLOWED(v) ck_assert_int_eq((v).decision, BBX_DEC_ALLOW)
#define REFUSED(v)                                                                          \
	do {                                                                                \
		ck_assert_int_eq((v).decision, BBX_DEC_DENY);                               \
		ck_assert_int_eq((v).err, ECONNREFUSED);                                    \
	} while (0)

START_TEST(test_v4_cidr_port)
{
	struct b b;
	init(&b, BBX_MODE_ENFORCE);
	rule(&b, BBX_PS_NET_ALLOW, BBX_NK_V4, "127.0.0.0/8", 0);
	rule(&b, BBX_PS_NET_ALLOW, BBX_NK_V4, "10.1.2.3/32", 443);
	rule(&b, BBX_PS_NET_ALLOW, BBX_NK_V4, "192.168.0.0/17", 0);
	struct bbx_pol_hdr *p = build(&b);
	struct bbx_pol_verdict v = inet(p, "127.9.8.7", 1234, NULL);
	ALLOWED(v);
	ck_assert_int_eq(rule_no(p, &v), 0);
	ck_assert_int_eq(v.err, 0);
	v = inet(p, "10.1.2.3", 443, NULL);
	ALLOWED(v);
	ck_assert_int_eq(rule_no(p, &v), 1);
	REFUSED(inet(p, "10.1.2.3", 80, NULL)); /* wrong port */
	REFUSED(inet(p, "10.1.2.4", 443, NULL)); /* /32 */
	ALLOWED(inet(p, "192.168.127.255", 9, NULL)); /* /17: 192.168.0.0-192.168.127.255 */
	REFUSED(inet(p, "192.168.128.0", 9, NULL));
	v = inet(p, "128.0.0.1", 80, NULL);
	REFUSED(v);
	ck_assert_ptr_null(v.rule);
	ck_assert_str_eq(v.reason, "no [network] allow rule matches");
	/* v6 traffic is not matched by v4 rules, except v4-mapped addresses */
	REFUSED(inet(p, "::1", 80, NULL));
	v = inet(p, "::ffff:127.0.0.1", 80, NULL);
	ALLOWED(v);
	ck_assert_int_eq(rule_no(p, &v), 0);
	REFUSED(inet(p, "::ffff:10.1.2.3", 80, NULL));
	ALLOWED(inet(p, "::ffff:10.1.2.3", 443, NULL));
	free(p);
}
END_TEST

START_TEST(test_v6)
{
	struct b b;
	init(&b, BBX_MODE_ENFORCE);
	rule(&b, BBX_PS_NET_ALLOW, BBX_NK_V6, "::1/128", 8080);
	rule(&b, BBX_PS_NET_ALLOW, BBX_NK_V6, "fd00::/8", 0);
	rule(&b, BBX_PS_NET_ALLOW, BBX_NK_V6, "2001:db8::/33", 0);
	struct bbx_pol_hdr *p = build(&b);
	ALLOWED(inet(p, "::1", 8080, NULL));
	REFUSED(inet(p, "::1", 8081, NULL));
	REFUSED(inet(p, "::2", 8080, NULL));
	ALLOWED(inet(p, "fdff:1::5", 1, NULL));
	REFUSED(inet(p, "fe00::5", 1, NULL));
	ALLOWED(inet(p, "2001:db8:7fff::1", 1, NULL));
	REFUSED(inet(p, "2001:db8:8000::1", 1, NULL));
	/* a v4-mapped address is v4: a v6 rule covering ::ffff:0:0/96 does not allow it */
	free(p);
	init(&b, BBX_MODE_ENFORCE);
	rule(&b, BBX_PS_NET_ALLOW, BBX_NK_V6, "::ffff:0:0/96", 0);
	p = build(&b);
	REFUSED(inet(p, "::ffff:127.0.0.1", 80, NULL));
	free(p);
}
END_TEST

START_TEST(test_deny_beats_allow)
{
	struct b b;
	init(&b, BBX_MODE_ENFORCE);
	rule(&b, BBX_PS_NET_ALLOW, BBX_NK_V4, "127.0.0.0/8", 0);
	rule(&b, BBX_PS_NET_ALLOW, BBX_NK_ANY, "", 0);
	rule(&b, BBX_PS_NET_DENY, BBX_NK_V4, "127.0.0.1/32", 25);
	rule(&b, BBX_PS_NET_DENY, BBX_NK_HOST, "*.evil.test", 0);
	rule(&b, BBX_PS_NET_DENY, BBX_NK_V6, "::1/128", 0);
	struct bbx_pol_hdr *p = build(&b);
	ALLOWED(inet(p, "127.0.0.1", 24, NULL));
	struct bbx_pol_verdict v = inet(p, "127.0.0.1", 25, NULL);
	REFUSED(v);
	ck_assert_int_eq(rule_no(p, &v), 2);
	ck_assert_str_eq(bbx_pol_str(p, v.rule->loc), "t.ini:3 [network] deny = 127.0.0.1/32:25");
	/* deny listed after the allow still wins; host deny over an address allow */
	v = inet(p, "127.0.0.2", 80, "WWW.Evil.Test");
	REFUSED(v);
	ck_assert_int_eq(rule_no(p, &v), 3);
	ALLOWED(inet(p, "127.0.0.2", 80, "good.test"));
	ALLOWED(inet(p, "8.8.8.8", 53, NULL)); /* ANY */
	REFUSED(inet(p, "::1", 80, NULL));
	REFUSED(inet(p, "::ffff:127.0.0.1", 25, NULL)); /* mapped: the v4 deny */
	free(p);
}
END_TEST

START_TEST(test_host_rules)
{
	struct b b;
	init(&b, BBX_MODE_ENFORCE);
	rule(&b, BBX_PS_NET_ALLOW, BBX_NK_HOST, "localhost", 8080);
	rule(&b, BBX_PS_NET_ALLOW, BBX_NK_HOST, "*.npmjs.org", 443);
	struct bbx_pol_hdr *p = build(&b);
	ALLOWED(inet(p, "127.0.0.1", 8080, "localhost"));
	ALLOWED(inet(p, "::1", 8080, "LocalHost"));
	REFUSED(inet(p, "127.0.0.1", 8080, NULL)); /* not looked up: no name */
	REFUSED(inet(p, "127.0.0.1", 8081, "localhost"));
	REFUSED(inet(p, "127.0.0.1", 8080, "localhost.evil"));
	ALLOWED(inet(p, "104.16.0.1", 443, "registry.npmjs.org"));
	REFUSED(inet(p, "104.16.0.1", 443, "npmjs.org.evil.test"));
	REFUSED(inet(p, "104.16.0.1", 443, ""));
	ck_assert(bbx_pol_host_allowed(p, "localhost"));
	ck_assert(bbx_pol_host_allowed(p, "REGISTRY.npmjs.org"));
	ck_assert(!bbx_pol_host_allowed(p, "example.com")); /* no rule could allow it */
	free(p);

	init(&b, BBX_MODE_ENFORCE);
	rule(&b, BBX_PS_NET_ALLOW, BBX_NK_V4, "127.0.0.0/8", 0);
	rule(&b, BBX_PS_NET_DENY, BBX_NK_HOST, "*.evil.test", 0);
	rule(&b, BBX_PS_NET_DENY, BBX_NK_HOST, "smtp.test", 25);
	p = build(&b);
	/* address rules say nothing about names: the shim asks /etc/hosts and resolv.conf */
	ck_assert_int_eq(bbx_pol_host(p, "example.com"), 0);
	ck_assert_int_eq(bbx_pol_host(p, "A.Evil.Test"), -1); /* denied on every port */
	ck_assert_int_eq(bbx_pol_host(p, "smtp.test"), 0);    /* denied on one port only */
	ck_assert(!bbx_pol_host_allowed(p, "example.com"));
	free(p);

	init(&b, BBX_MODE_ENFORCE);
	rule(&b, BBX_PS_NET_ALLOW, BBX_NK_HOST, "*.corp.test", 0);
	rule(&b, BBX_PS_NET_DENY, BBX_NK_HOST, "secret.corp.test", 0);
	p = build(&b);
	ck_assert_int_eq(bbx_pol_host(p, "git.corp.test"), 1);
	ck_assert_int_eq(bbx_pol_host(p, "secret.corp.test"), -1); /* deny beats allow */
	ck_assert_int_eq(bbx_pol_host(p, ""), 0);
	free(p);
}
END_TEST

START_TEST(test_unix)
{
	struct b b;
	init(&b, BBX_MODE_ENFORCE);
	rule(&b, BBX_PS_NET_ALLOW, BBX_NK_UNIX, "/run/user/*", 0);
	rule(&b, BBX_PS_NET_ALLOW, BBX_NK_UNIX, "@allowed", 0);
	rule(&b, BBX_PS_NET_DENY, BBX_NK_UNIX, "/run/user/*/docker.sock", 0);
	rule(&b, BBX_PS_NET_ALLOW, BBX_NK_ANY, "", 0); /* ANY is inet only */
	struct bbx_pol_hdr *p = build(&b);
	const char a[] = "/run/user/0/bus";
	ALLOWED(unx(p, a, sizeof a));
	ALLOWED(unx(p, a, sizeof a - 1)); /* without the NUL */
	const char d[] = "/run/user/0/docker.sock";
	struct bbx_pol_verdict v = unx(p, d, sizeof d);
	REFUSED(v);
	ck_assert_int_eq(rule_no(p, &v), 2);
	const char o[] = "/var/run/docker.sock";
	REFUSED(unx(p, o, sizeof o));
	ALLOWED(unx(p, "\0allowed", 8));
	REFUSED(unx(p, "\0allowed\0x", 10)); /* an embedded NUL is part of the name */
	REFUSED(unx(p, "\0other", 6));
	v = unx(p, "", 0); /* unnamed */
	ALLOWED(v);
	char text[BBX_POL_UNIX_TEXT];
	struct sockaddr_un un = {.sun_family = AF_UNIX};
	memcpy(un.sun_path, "\0x\0y\\", 5);
	bbx_pol_unix_text(&un, offsetof(struct sockaddr_un, sun_path) + 5, text);
	ck_assert_str_eq(text, "@x\\x00y\\x5c");
	v.decision = -1;
	bbx_pol_net_unix(p, "/run/user/1000/x", &v);
	ALLOWED(v);
	free(p);
}
END_TEST

START_TEST(test_audit_and_families)
{
	struct b b;
	init(&b, BBX_MODE_AUDIT);
	rule(&b, BBX_PS_NET_DENY, BBX_NK_V4, "127.0.0.1/32", 0);
	struct bbx_pol_hdr *p = build(&b);
	struct bbx_pol_verdict v = inet(p, "127.0.0.1", 80, NULL);
	ck_assert_int_eq(v.decision, BBX_DEC_AUDIT);
	ck_assert_int_eq(v.err, 0);
	ck_assert_int_eq(rule_no(p, &v), 0);
	ck_assert_int_eq(inet(p, "10.0.0.1", 80, NULL).decision, BBX_DEC_AUDIT);
	free(p);

	init(&b, BBX_MODE_ENFORCE);
	p = build(&b); /* no rules at all: every inet egress refused */
	REFUSED(inet(p, "127.0.0.1", 80, NULL));
	struct sockaddr sa = {.sa_family = AF_UNSPEC};
	bbx_pol_net(p, &sa, sizeof sa, NULL, &v);
	ALLOWED(v);
	struct sockaddr_storage ss = {0};
	ss.ss_family = AF_NETLINK;
	bbx_pol_net(p, (struct sockaddr *)&ss, 12, NULL, &v);
	ALLOWED(v);
	ss.ss_family = AF_PACKET;
	bbx_pol_net(p, (struct sockaddr *)&ss, 20, NULL, &v);
	REFUSED(v);
	bbx_pol_net(p, NULL, 0, NULL, &v);
	ALLOWED(v);
	/* a truncated inet address: the kernel refuses it, nothing to decide */
	struct sockaddr_in in = {.sin_family = AF_INET};
	bbx_pol_net(p, (struct sockaddr *)&in, 4, NULL, &v);
	ALLOWED(v);
	free(p);
}
END_TEST

static Suite *match_net_suite(void)
{
	Suite *s = suite_create("match_net");
	TCase *tc = tcase_create("match_net");
	tcase_add_test(tc, test_v4_cidr_port);
	tcase_add_test(tc, test_v6);
	tcase_add_test(tc, test_deny_beats_allow);
	tcase_add_test(tc, test_host_rules);
	tcase_add_test(tc, test_unix);
	tcase_add_test(tc, test_audit_and_families);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return unit_main(match_net_suite()); }
