/* SPDX-License-Identifier: MIT
 *
 * match_net.c - egress decisions over a compiled policy (policy.h, [network]).  Called
 * by the shim's connect/sendto/sendmsg/sendmmsg wrappers and by bbx-policy explain:
 * no allocation, no locks, no syscalls, async-signal-safe.
 *
 * Precedence: any matching deny rule refuses; else any matching allow rule allows; else
 * the egress is refused ("no [network] allow rule matches").  A refusal carries
 * ECONNREFUSED; in audit mode it becomes BBX_DEC_AUDIT (recorded, let through).
 *
 * What a rule matches:
 *   V4/V6  the address under the CIDR prefix, and the port unless the rule's is 0.  An
 *          IPv4-mapped IPv6 address (::ffff:a.b.c.d) is the IPv4 address it carries, so
 *          a dual-stack socket cannot get around a v4 rule (nor through a v6 one).
 *   HOST   the name the address was looked up by (case-insensitive glob), and the port.
 *          Without a name (a numeric address nobody looked up) no HOST rule matches.
 *   ANY    every IPv4 and IPv6 address (the port still applies when set).
 *   UNIX   glob over the socket's path, "@name" for an abstract socket (bytes below
 *          0x20 in the name, NUL included, written \xHH).  The shim passes the path
 *          resolved (absolute, symlinks followed) through bbx_pol_net_unix().
 * Families other than inet, inet6 and unix: AF_UNSPEC (a datagram socket dissolving its
 * association) and AF_NETLINK (the local kernel) are allowed without a rule; every other
 * family (packet, vsock, bluetooth, ...) has no rule vocabulary and is refused.  An
 * unnamed unix address (autobind, socketpair peers) names nothing and is allowed.
 */
#include "policy.h"
#include "journal/record.h"

#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>
#include <sys/un.h>

static void verdict(struct bbx_pol_verdict *v, int decision, int err,
		    const struct bbx_pol_rule *r, const char *reason)
{
	v->decision = decision;
	v->err = err;
	v->rule = r;
	v->reason = reason;
	v->klass = BBX_CLASS_NONE;
}

static void refuse(const struct bbx_pol_hdr *p, struct bbx_pol_verdict *v,
		   const struct bbx_pol_rule *r, const char *reason)
{
	bool audit = p->mode == BBX_MODE_AUDIT;
	verdict(v, audit ? BBX_DEC_AUDIT : BBX_DEC_DENY, audit ? 0 : ECONNREFUSED, r, reason);
}

/* The first bits of a and b equal? */
static bool prefix_eq(const uint8_t *a, const uint8_t *b, unsigned bits)
{
	unsigned bytes = bits / 8, rest = bits % 8;
	if (memcmp(a, b, bytes))
		return false;
	if (!rest)
		return true;
	uint8_t mask = (uint8_t)(0xff00u >> rest);
	return (a[bytes] & mask) == (b[bytes] & mask);
}

/* What an egress is about, normalised. */
struct dest {
	int fam;          /* AF_INET (v4 and v4-mapped v6), AF_INET6, AF_UNIX */
	uint8_t addr[16]; /* network byte order */
	uint16_t port;    /* host byte order */
	const char *host; /* lower-case not required: HOST globs fold case */
	const char *path; /* AF_UNIX: "/abs/path" or "@abstract" */
};

static bool rule_hits(const struct bbx_pol_hdr *p, const struct bbx_pol_rule *r,
		      const struct dest *d)
{
	bool inet = d->fam == AF_INET || d->fam == AF_INET6;
	if (r->kind != BBX_NK_UNIX && inet && r->port && r->port != d->port)
		return false;
	switch (r->kind) {
	case BBX_NK_V4:
		return d->fam == AF_INET && r->prefix <= 32 && prefix_eq(d->addr, r->addr, r->prefix);
	case BBX_NK_V6:
		return d->fam == AF_INET6 && r->prefix <= 128 && prefix_eq(d->addr, r->addr, r->prefix);
	case BBX_NK_HOST:
		return inet && d->host && *d->host &&
		       bbx_glob(bbx_pol_str(p, r->value), d->host, BBX_GLOB_CASEFOLD);
	case BBX_NK_ANY:
		return inet;
	case BBX_NK_UNIX:
		return d->fam == AF_UNIX && bbx_glob(bbx_pol_str(p, r->value), d->path, 0);
	}
	return false;
}

static void decide(const struct bbx_pol_hdr *p, const struct dest *d, struct bbx_pol_verdict *v)
{
	const struct bbx_pol_rule *r = bbx_pol_rules(p), *allow = NULL;
	for (uint32_t i = 0; i < p->n_rules; i++) {
		if (r[i].section == BBX_PS_NET_DENY && rule_hits(p, &r[i], d)) {
			refuse(p, v, &r[i], "denied by a [network] deny rule");
			return;
		}
		if (!allow && r[i].section == BBX_PS_NET_ALLOW && rule_hits(p, &r[i], d))
			allow = &r[i];
	}
	if (allow)
		verdict(v, BBX_DEC_ALLOW, 0, allow, "allowed by a [network] allow rule");
	else
		refuse(p, v, NULL, "no [network] allow rule matches");
}

void bbx_pol_net_unix(const struct bbx_pol_hdr *p, const char *name, struct bbx_pol_verdict *v)
{
	struct dest d = {.fam = AF_UNIX, .path = name};
	decide(p, &d, v);
}

/* sun_path of len bytes as the matcher's text: "/path", "relative" or "@abstract" with
 * control bytes escaped.  out holds 4 * sizeof sun_path + 2 bytes. */
void bbx_pol_unix_text(const struct sockaddr_un *un, socklen_t len, char *out)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = len > offsetof(struct sockaddr_un, sun_path)
			   ? len - offsetof(struct sockaddr_un, sun_path)
			   : 0;
	if (n > sizeof un->sun_path)
		n = sizeof un->sun_path;
	size_t o = 0, i = 0;
	if (n && un->sun_path[0] == 0) {
		out[o++] = '@';
		for (i = 1; i < n; i++) {
			unsigned char c = (unsigned char)un->sun_path[i];
			if (c < 0x20 || c == 0x7f || c == '\\') {
				out[o++] = '\\';
				out[o++] = 'x';
				out[o++] = hex[c >> 4];
				out[o++] = hex[c & 15];
			} else {
				out[o++] = (char)c;
			}
		}
	} else {
		for (i = 0; i < n && un->sun_path[i]; i++)
			out[o++] = un->sun_path[i];
	}
	out[o] = 0;
}

void bbx_pol_net(const struct bbx_pol_hdr *p, const struct sockaddr *sa, socklen_t len,
		 const char *host, struct bbx_pol_verdict *v)
{
	struct dest d = {.host = host};
	if (!sa || len < (socklen_t)sizeof(sa_family_t)) {
		verdict(v, BBX_DEC_ALLOW, 0, NULL, "no address");
		return;
	}
	switch (sa->sa_family) {
	case AF_INET: {
		if (len < (socklen_t)sizeof(struct sockaddr_in))
			break; /* the kernel refuses it (EINVAL) */
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		d.fam = AF_INET;
		memcpy(d.addr, &in->sin_addr, 4);
		d.port = ntohs(in->sin_port);
		decide(p, &d, v);
		return;
	}
	case AF_INET6: {
		if (len < (socklen_t)sizeof(struct sockaddr_in6))
			break;
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		d.port = ntohs(in6->sin6_port);
		const uint8_t *a = in6->sin6_addr.s6_addr;
		static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
		if (!memcmp(a, mapped, 12)) {
			d.fam = AF_INET;
			memcpy(d.addr, a + 12, 4);
		} else {
			d.fam = AF_INET6;
			memcpy(d.addr, a, 16);
		}
		decide(p, &d, v);
		return;
	}
	case AF_UNIX: {
		const struct sockaddr_un *un = (const struct sockaddr_un *)sa;
		if (len <= offsetof(struct sockaddr_un, sun_path)) {
			verdict(v, BBX_DEC_ALLOW, 0, NULL, "unnamed unix socket");
			return;
		}
		char text[4 * sizeof un->sun_path + 2];
		bbx_pol_unix_text(un, len, text);
		bbx_pol_net_unix(p, text, v);
		return;
	}
	case AF_UNSPEC:
		verdict(v, BBX_DEC_ALLOW, 0, NULL, "AF_UNSPEC dissolves an association");
		return;
	case AF_NETLINK:
		verdict(v, BBX_DEC_ALLOW, 0, NULL, "netlink reaches only the local kernel");
		return;
	default:
		refuse(p, v, NULL, "address family not covered by [network] rules");
		return;
	}
	/* A short inet address: the call fails by itself; nothing leaves. */
	verdict(v, BBX_DEC_ALLOW, 0, NULL, "malformed address");
}

int bbx_pol_host(const struct bbx_pol_hdr *p, const char *host)
{
	const struct bbx_pol_rule *r = bbx_pol_rules(p);
	int allowed = 0;
	if (!host || !*host)
		return 0;
	for (uint32_t i = 0; i < p->n_rules; i++) {
		if (r[i].kind != BBX_NK_HOST ||
		    (r[i].section != BBX_PS_NET_DENY && r[i].section != BBX_PS_NET_ALLOW) ||
		    !bbx_glob(bbx_pol_str(p, r[i].value), host, BBX_GLOB_CASEFOLD))
			continue;
		if (r[i].section == BBX_PS_NET_DENY) {
			if (!r[i].port) /* denied on every port */
				return -1;
		} else {
			allowed = 1;
		}
	}
	return allowed;
}

bool bbx_pol_host_allowed(const struct bbx_pol_hdr *p, const char *host)
{
	return bbx_pol_host(p, host) > 0;
}
