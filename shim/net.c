/* SPDX-License-Identifier: MIT
 *
 * net.c - bind(2) of a unix socket: the one network call that creates a name in the
 * filesystem.  Recorded as a CREATE (kind sock) so undo removes the socket file and
 * puts its directory's times back.  Abstract sockets (sun_path[0] == 0) and every other
 * family go straight through.
 *
 * Egress ([network] in bbx-policy(5), policy/match_net.c): connect, sendto, sendmsg and
 * sendmmsg are decided before the call when the run has a policy; without one each is a
 * guard test and a flag test in front of the real call.  A refusal writes a DENY record
 * and fails with ECONNREFUSED (audit mode: recorded, let through).  An egress that goes
 * ahead writes a NET record: every connect of a stream socket; for the datagram calls
 * (sendto, sendmsg, sendmmsg, connect of a datagram socket), the first one per
 * destination per process (a cache of 256 destinations, so a UDP loop cannot flood the
 * journal; a destination evicted from it is recorded again).  A call without an address
 * (a connected socket) has nothing to decide: its connect was decided.
 *
 * Unix socket paths are decided resolved (absolute, symlinks followed): the socket is
 * opened O_PATH, its real name decided, and connect/sendto/sendmsg then reach exactly
 * that inode through /proc/self/fd/N, so a symlink swapped after the check changes
 * nothing.  Abstract names are decided as "@name".
 *
 * Host names: getaddrinfo and gethostbyname{,2}{,_r} are wrapped; the addresses a name
 * resolved to are remembered in a fixed table (NAMES entries, newest first, per
 * process, inherited across fork, not across exec), so a later connect to one of them
 * is decided with that host name ([network] allow = HOST:PORT rules).  A lookup is itself
 * an egress (the name travels to the nameserver): see lookup_allowed(); a refused one
 * fails with EAI_NONAME / HOST_NOT_FOUND and writes a DENY record naming the host.  The lookup itself runs with the guard held: the
 * resolver's own traffic (glibc calls its internal __connect/__sendto, which never reach
 * the PLT anyway, and NSS modules) is not decided, so DNS works whenever lookups do.
 */
#include "shim.h"
#include "policy/policy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

BBX_EXPORT int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	int saved;
	const struct sockaddr_un *un = (const struct sockaddr_un *)addr;
	if (!addr || addr->sa_family != AF_UNIX || len <= offsetof(struct sockaddr_un, sun_path) ||
	    un->sun_path[0] == 0 || !bbx_enter(&saved))
		return BBX_REAL(bind)(fd, addr, len);
	char name[sizeof un->sun_path + 1];
	size_t n = len - offsetof(struct sockaddr_un, sun_path);
	if (n > sizeof un->sun_path)
		n = sizeof un->sun_path;
	memcpy(name, un->sun_path, n);
	name[n] = 0;
	struct bbx_pending pend = {0};
	struct stat sb;
	int rc = bbx_usable();
	if (!rc)
		rc = bbx_path_abs(AT_FDCWD, name, bbx_tp.a, PATH_MAX);
	if (!rc && lstat(bbx_tp.a, &sb) < 0) /* an existing name: EADDRINUSE, no change */
		rc = bbx_cap_create(&bbx_run, "bind", bbx_tp.a, BBX_KIND_SOCK, 0777, NULL, &pend);
	if (rc)
		return bbx_refuse(rc);
	unsigned gen = bbx_call_begin(saved);
	int r = BBX_REAL(bind)(fd, addr, len);
	int e = errno;
	if (bbx_call_end(gen))
		pend.path = NULL;
	bbx_cap_done(&bbx_run, "bind", &pend, r, e, -1);
	bbx_leave(r < 0 ? e : saved);
	return r;
}

/* ---- names looked up: (address, name) ring ------------------------------------------ */

#define NAMES 256
struct named {
	unsigned ver; /* seqlock: odd while being written */
	uint8_t fam;  /* AF_INET (v4-mapped v6 included) or AF_INET6; 0 = empty */
	uint8_t addr[16];
	char name[256];
};
static struct named names[NAMES];
static unsigned names_next;

/* The family and address bytes of sa, v4-mapped v6 as v4.  Returns 0 if not inet. */
static int inet_key(const struct sockaddr *sa, socklen_t len, uint8_t addr[16])
{
	if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
		memcpy(addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return AF_INET;
	}
	if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		const uint8_t *a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
		if (IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)a)) {
			memcpy(addr, a + 12, 4);
			return AF_INET;
		}
		memcpy(addr, a, 16);
		return AF_INET6;
	}
	return 0;
}

static void remember(int fam, const uint8_t *addr, const char *name)
{
	struct named *e = &names[__atomic_fetch_add(&names_next, 1, __ATOMIC_RELAXED) % NAMES];
	unsigned v = __atomic_load_n(&e->ver, __ATOMIC_RELAXED);
	/* Another writer holds this slot (256 lookups raced past it): skip, never wait. */
	if ((v & 1) || !__atomic_compare_exchange_n(&e->ver, &v, v + 1, 0, __ATOMIC_ACQUIRE,
						    __ATOMIC_RELAXED))
		return;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	e->fam = (uint8_t)fam;
	memcpy(e->addr, addr, fam == AF_INET ? 4 : 16);
	size_t n = strnlen(name, sizeof e->name - 1);
	memcpy(e->name, name, n);
	e->name[n] = 0;
	__atomic_store_n(&e->ver, v + 2, __ATOMIC_RELEASE);
}

/* The name the newest lookup gave for this address, into out (256 bytes). */
static const char *recall(int fam, const uint8_t *addr, char *out)
{
	unsigned last = __atomic_load_n(&names_next, __ATOMIC_ACQUIRE);
	size_t alen = fam == AF_INET ? 4 : 16;
	for (unsigned k = 0; k < NAMES && k < last; k++) {
		struct named *e = &names[(last - 1 - k) % NAMES];
		unsigned v = __atomic_load_n(&e->ver, __ATOMIC_ACQUIRE);
		if ((v & 1) || e->fam != fam || memcmp(e->addr, addr, alen))
			continue;
		memcpy(out, e->name, sizeof e->name);
		out[sizeof e->name - 1] = 0;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&e->ver, __ATOMIC_RELAXED) == v && e->fam == fam &&
		    !memcmp(e->addr, addr, alen))
			return out;
	}
	return NULL;
}

/* ---- egress ---------------------------------------------------------------------- */

/* "127.0.0.1:8080", "[::1]:443", "unix:/path", "unix:@abstract", "family 17". */
static void addr_text(const struct sockaddr *sa, socklen_t len, const char *unix_name,
		      char *out, size_t cap)
{
	char a[INET6_ADDRSTRLEN];
	if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &in->sin_addr, a, sizeof a);
		snprintf(out, cap, "%s:%u", a, ntohs(in->sin_port));
	} else if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof a);
		snprintf(out, cap, "[%s]:%u", a, ntohs(in6->sin6_port));
	} else if (sa->sa_family == AF_UNIX) {
		snprintf(out, cap, "unix:%s", unix_name && *unix_name ? unix_name : "(unnamed)");
	} else {
		snprintf(out, cap, "family %d", sa->sa_family);
	}
}

/* Datagram destinations already recorded by this process (direct-mapped hashes). */
static uint64_t sent_to[256];

/* True when this destination (and name) was recorded already; marks it recorded. */
static int sent_before(int fam, const uint8_t *key, uint16_t port, const char *uname,
		       const char *host)
{
	struct {
		uint32_t fam, port;
		uint8_t a[16];
	} k = {(uint32_t)fam, port, {0}};
	uint64_t h;
	if (uname) {
		h = XXH64(uname, strlen(uname), 0x756e6978);
	} else {
		memcpy(k.a, key, fam == AF_INET ? 4 : 16);
		h = XXH64(&k, sizeof k, 0x6e6574);
	}
	if (host)
		h ^= XXH64(host, strlen(host), 0x686f7374);
	h |= 1;
	return __atomic_exchange_n(&sent_to[h % 256], h, __ATOMIC_RELAXED) == h;
}

static void net_record(const struct bbx_pol_hdr *p, const char *op, const char *addr,
		       const char *host, const struct bbx_pol_verdict *v)
{
	if (bbx_usable())
		return;
	struct bbx_enc e;
	struct bbx_scratch *s = bbx_scratch();
	bbx_enc_begin(&e, s->rec, sizeof s->rec, BBX_REC_NET);
	bbx_enc_str(&e, BBX_T_OP, op);
	bbx_enc_str(&e, BBX_T_ADDR, addr);
	if (host)
		bbx_enc_str(&e, BBX_T_HOST, host);
	bbx_enc_u32(&e, BBX_T_DECISION, (uint32_t)v->decision);
	if (v->rule)
		bbx_enc_str(&e, BBX_T_RULE, bbx_pol_str(p, v->rule->loc));
	(void)bbx_run_emit(&bbx_run, &e, bbx_state_next_seq(bbx_run.st));
}

/* A unix address to reach through a descriptor: filled by egress(). */
struct via {
	int fd; /* O_PATH descriptor of the socket file decided on, or -1 */
	struct sockaddr_un sa;
	socklen_t len;
};

/* Decides an egress to sa with the guard held.  Returns 0 (go ahead; via->fd >= 0: use
 * via->sa instead of sa) or -errno (refused, DENY written). */
static int egress(const struct bbx_pol_hdr *p, const char *op, const struct sockaddr *sa,
		  socklen_t len, int once, struct via *via)
{
	char text[BBX_POL_UNIX_TEXT], res[PATH_MAX], addr[PATH_MAX + 16], hostbuf[256];
	const char *host = NULL, *uname = NULL;
	struct bbx_pol_verdict v;
	uint8_t key[16];
	int fam = 0;
	via->fd = -1;
	if (!sa || len < (socklen_t)sizeof(sa_family_t))
		return 0;
	if (sa->sa_family == AF_UNIX && len > offsetof(struct sockaddr_un, sun_path)) {
		bbx_pol_unix_text((const struct sockaddr_un *)sa, len, text);
		uname = text;
		if (text[0] != '@' && text[0]) {
			int fd = open(text, O_PATH | O_CLOEXEC);
			struct stat sb;
			if (fd >= 0 && fstat(fd, &sb) == 0 && S_ISSOCK(sb.st_mode) &&
			    bbx_path_fd(fd, res, sizeof res) == 0) {
				uname = res;
				via->fd = fd;
			} else {
				if (fd >= 0)
					close(fd);
				/* No socket there (yet): the call fails by itself; decide on
				 * the absolute name. */
				if (bbx_path_abs(AT_FDCWD, text, res, sizeof res) == 0)
					uname = res;
			}
		}
		bbx_pol_net_unix(p, uname, &v);
	} else {
		fam = inet_key(sa, len, key);
		if (fam)
			host = recall(fam, key, hostbuf);
		bbx_pol_net(p, sa, len, host, &v);
	}
	/* A datagram destination already recorded: nothing more to do (the common case of
	 * a UDP loop costs the decision only, no formatting, no record). */
	if (once && v.decision == BBX_DEC_ALLOW && (fam || uname) &&
	    sent_before(fam, key, ntohs(((const struct sockaddr_in *)sa)->sin_port), uname, host))
		goto reach;
	addr_text(sa, len, uname, addr, sizeof addr);
	if (v.decision != BBX_DEC_ALLOW) {
		int rc = bbx_pol_report(op, BBX_ACC_CONNECT, NULL, NULL, addr, host, NULL, &v);
		if (rc) {
			if (via->fd >= 0)
				close(via->fd);
			via->fd = -1;
			return rc;
		}
	}
	if (sa->sa_family != AF_NETLINK && sa->sa_family != AF_UNSPEC)
		net_record(p, op, addr, host, &v);
reach:
	if (via->fd >= 0) {
		memset(&via->sa, 0, sizeof via->sa);
		via->sa.sun_family = AF_UNIX;
		int n = snprintf(via->sa.sun_path, sizeof via->sa.sun_path, "/proc/self/fd/%d",
				 via->fd);
		via->len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)n + 1);
	}
	return 0;
}

static void via_done(struct via *via)
{
	if (via->fd >= 0)
		close(via->fd);
}

BBX_EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	int saved;
	if (!bbx_enter(&saved))
		return BBX_REAL(connect)(fd, addr, len);
	const struct bbx_pol_hdr *p = bbx_policy();
	if (!p) {
		bbx_leave(saved);
		return BBX_REAL(connect)(fd, addr, len);
	}
	/* A datagram socket's connect only sets a default destination (and is called in
	 * loops): recorded once per destination, like sendto. */
	int type = 0;
	socklen_t tl = sizeof type;
	int once = getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 && type == SOCK_DGRAM;
	struct via via;
	int rc = egress(p, "connect", addr, len, once, &via);
	if (rc)
		return bbx_refuse(rc);
	bbx_guard = 0;
	errno = saved;
	int r = via.fd >= 0 ? BBX_REAL(connect)(fd, (struct sockaddr *)&via.sa, via.len)
			    : BBX_REAL(connect)(fd, addr, len);
	int e = errno;
	via_done(&via);
	errno = e;
	return r;
}

BBX_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags,
			  const struct sockaddr *addr, socklen_t len)
{
	int saved;
	if (!addr || !bbx_enter(&saved))
		return BBX_REAL(sendto)(fd, buf, n, flags, addr, len);
	const struct bbx_pol_hdr *p = bbx_policy();
	if (!p) {
		bbx_leave(saved);
		return BBX_REAL(sendto)(fd, buf, n, flags, addr, len);
	}
	struct via via;
	int rc = egress(p, "sendto", addr, len, 1, &via);
	if (rc)
		return bbx_refuse(rc);
	bbx_guard = 0;
	errno = saved;
	ssize_t r = via.fd >= 0 ? BBX_REAL(sendto)(fd, buf, n, flags,
						    (struct sockaddr *)&via.sa, via.len)
				: BBX_REAL(sendto)(fd, buf, n, flags, addr, len);
	int e = errno;
	via_done(&via);
	errno = e;
	return r;
}

BBX_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	int saved;
	if (!msg || !msg->msg_name || !bbx_enter(&saved))
		return BBX_REAL(sendmsg)(fd, msg, flags);
	const struct bbx_pol_hdr *p = bbx_policy();
	if (!p) {
		bbx_leave(saved);
		return BBX_REAL(sendmsg)(fd, msg, flags);
	}
	struct via via;
	int rc = egress(p, "sendmsg", msg->msg_name, msg->msg_namelen, 1, &via);
	if (rc)
		return bbx_refuse(rc);
	struct msghdr m = *msg;
	if (via.fd >= 0) {
		m.msg_name = &via.sa;
		m.msg_namelen = via.len;
	}
	bbx_guard = 0;
	errno = saved;
	ssize_t r = BBX_REAL(sendmsg)(fd, &m, flags);
	int e = errno;
	via_done(&via);
	errno = e;
	return r;
}

/* Each message's address is decided; the first refused one ends the batch there: the
 * messages before it are sent (sendmmsg returns how many), it and the rest are not.  A
 * refusal of the first message fails the call with ECONNREFUSED.  Unix paths are
 * decided resolved but sent by name (the caller's vector is not rewritten). */
BBX_EXPORT int sendmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags)
{
	int saved;
	if (!vec || !vlen || !bbx_enter(&saved))
		return BBX_REAL(sendmmsg)(fd, vec, vlen, flags);
	const struct bbx_pol_hdr *p = bbx_policy();
	if (!p) {
		bbx_leave(saved);
		return BBX_REAL(sendmmsg)(fd, vec, vlen, flags);
	}
	unsigned ok = 0;
	int rc = 0;
	for (; ok < vlen; ok++) {
		struct via via;
		const struct msghdr *m = &vec[ok].msg_hdr;
		if (!m->msg_name)
			continue;
		rc = egress(p, "sendmmsg", m->msg_name, m->msg_namelen, 1, &via);
		via_done(&via);
		if (rc)
			break;
	}
	if (ok == 0 && rc)
		return bbx_refuse(rc);
	bbx_guard = 0;
	errno = saved;
	return BBX_REAL(sendmmsg)(fd, vec, ok, flags);
}

/* ---- name lookups ------------------------------------------------------------------ */

static int numeric(const char *name)
{
	uint8_t b[16];
	return inet_pton(AF_INET, name, b) == 1 || inet_pton(AF_INET6, name, b) == 1;
}

/* Calls fn on each line of a small text file (lines longer than 511 bytes are
 * skipped) until it returns non-zero; returns that, or 0.  Allocation-free. */
static int scan_lines(const char *path, int (*fn)(char *line, const void *arg), const void *arg)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char buf[2048], line[512];
	size_t ll = 0;
	int found = 0, skip = 0;
	ssize_t n;
	while (!found && (n = read(fd, buf, sizeof buf)) > 0) {
		for (ssize_t i = 0; i < n && !found; i++) {
			if (buf[i] == '\n') {
				line[ll] = 0;
				if (!skip)
					found = fn(line, arg);
				ll = 0;
				skip = 0;
			} else if (ll < sizeof line - 1) {
				line[ll++] = buf[i];
			} else {
				skip = 1;
			}
		}
	}
	if (!found && ll && !skip) {
		line[ll] = 0;
		found = fn(line, arg);
	}
	close(fd);
	return found;
}

/* The next blank-separated word of *p (NUL-terminated in place), or NULL. */
static char *word(char **p)
{
	char *s = *p;
	while (*s == ' ' || *s == '\t' || *s == '\r')
		s++;
	if (!*s || *s == '#' || *s == ';')
		return NULL;
	char *e = s;
	while (*e && *e != ' ' && *e != '\t' && *e != '\r')
		e++;
	*p = *e ? e + 1 : e;
	*e = 0;
	return s;
}

/* An /etc/hosts line naming the host (any word after the address). */
static int hosts_line(char *line, const void *arg)
{
	const char *name = arg;
	size_t nl = strlen(name);
	if (nl && name[nl - 1] == '.') /* the absolute form "localhost." */
		nl--;
	char *p = line, *w = word(&p);
	if (!w)
		return 0;
	while ((w = word(&p)))
		if (strlen(w) == nl && !strncasecmp(w, name, nl))
			return 1;
	return 0;
}

/* A resolv.conf "nameserver ADDR" line whose ADDR:53 the policy allows; counts the
 * nameserver lines in *seen. */
struct ns_scan {
	const struct bbx_pol_hdr *p;
	int seen;
};
static int ns_allowed(const struct bbx_pol_hdr *p, const char *addr)
{
	struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons(53)};
	struct sockaddr_in6 in6 = {.sin6_family = AF_INET6, .sin6_port = htons(53)};
	struct bbx_pol_verdict v;
	char a[INET6_ADDRSTRLEN];
	snprintf(a, sizeof a, "%s", addr);
	char *pct = strchr(a, '%'); /* fe80::1%eth0 */
	if (pct)
		*pct = 0;
	if (inet_pton(AF_INET, a, &in.sin_addr) == 1)
		bbx_pol_net(p, (struct sockaddr *)&in, sizeof in, NULL, &v);
	else if (inet_pton(AF_INET6, a, &in6.sin6_addr) == 1)
		bbx_pol_net(p, (struct sockaddr *)&in6, sizeof in6, NULL, &v);
	else
		return 0;
	return v.decision == BBX_DEC_ALLOW;
}
static int resolv_line(char *line, const void *arg)
{
	struct ns_scan *ns = (struct ns_scan *)arg;
	char *p = line, *w = word(&p);
	if (!w || strcmp(w, "nameserver") || !(w = word(&p)))
		return 0;
	ns->seen++;
	return ns_allowed(ns->p, w);
}

/* Before a lookup of name (guard held): 0 = go ahead, else refused (DENY written).
 * A lookup that may reach DNS carries the name to the nameserver (glibc sends it
 * through internal calls no wrapper sees): it is allowed when a [network] allow rule
 * names the host, or when the nameserver itself (resolv.conf, port 53) is an allowed
 * address; a name /etc/hosts answers never leaves the machine. */
static int lookup_allowed(const struct bbx_pol_hdr *p, const char *op, const char *name)
{
	int h = bbx_pol_host(p, name);
	if (h > 0)
		return 0;
	if (h == 0) {
		if (scan_lines("/etc/hosts", hosts_line, name))
			return 0;
		struct ns_scan ns = {p, 0};
		if (scan_lines("/etc/resolv.conf", resolv_line, &ns) ||
		    (!ns.seen && ns_allowed(p, "127.0.0.1")))
			return 0;
	}
	int audit = p->mode == BBX_MODE_AUDIT;
	struct bbx_pol_verdict v = {
		.decision = audit ? BBX_DEC_AUDIT : BBX_DEC_DENY,
		.err = audit ? 0 : ECONNREFUSED,
		.reason = h < 0 ? "host name denied by a [network] deny rule"
				: "name lookup: no [network] rule allows the host or the nameserver"};
	return bbx_pol_report(op, BBX_ACC_CONNECT, NULL, NULL, NULL, name, NULL, &v);
}

/* Appends one address to the RESOLVE list text (space separated, no repeats in a row). */
static void list_add(char *list, size_t cap, size_t *n, int fam, const void *a)
{
	char t[INET6_ADDRSTRLEN];
	if (!inet_ntop(fam, a, t, sizeof t))
		return;
	size_t l = strlen(t), start = *n;
	/* getaddrinfo lists each address once per socket type: skip a repeat of the last. */
	if (*n) {
		const char *last = list + *n;
		while (last > list && last[-1] != ' ')
			last--;
		if ((size_t)(list + *n - last) == l && !memcmp(last, t, l))
			return;
	}
	if (start + l + 2 > cap)
		return;
	if (start)
		list[(*n)++] = ' ';
	memcpy(list + *n, t, l + 1);
	*n += l;
}

static void resolve_record(const char *op, const char *name, const char *list)
{
	if (bbx_usable())
		return;
	struct bbx_enc e;
	struct bbx_scratch *s = bbx_scratch();
	bbx_enc_begin(&e, s->rec, sizeof s->rec, BBX_REC_RESOLVE);
	bbx_enc_str(&e, BBX_T_OP, op);
	bbx_enc_str(&e, BBX_T_HOST, name);
	bbx_enc_str(&e, BBX_T_ADDR, list);
	(void)bbx_run_emit(&bbx_run, &e, bbx_state_next_seq(bbx_run.st));
}

/* Remembers and records the addresses of a hostent. */
static void learn_hostent(const char *op, const char *name, const struct hostent *h)
{
	char list[1024];
	size_t n = 0;
	list[0] = 0;
	if (!h)
		return;
	for (char **a = h->h_addr_list; a && *a; a++) {
		uint8_t key[16];
		int fam = h->h_addrtype;
		if (fam == AF_INET && h->h_length == 4) {
			memcpy(key, *a, 4);
		} else if (fam == AF_INET6 && h->h_length == 16) {
			if (IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)*a)) {
				fam = AF_INET;
				memcpy(key, *a + 12, 4);
			} else {
				memcpy(key, *a, 16);
			}
		} else {
			continue;
		}
		remember(fam, key, name);
		list_add(list, sizeof list, &n, h->h_addrtype, *a);
	}
	resolve_record(op, name, list);
}

BBX_EXPORT int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
			   struct addrinfo **res)
{
	int saved;
	if (!node || !bbx_enter(&saved))
		return BBX_REAL(getaddrinfo)(node, service, hints, res);
	const struct bbx_pol_hdr *p = bbx_policy();
	if (!p || numeric(node)) {
		bbx_leave(saved);
		return BBX_REAL(getaddrinfo)(node, service, hints, res);
	}
	if (lookup_allowed(p, "getaddrinfo", node)) {
		bbx_leave(saved);
		return EAI_NONAME;
	}
	errno = saved;
	int r = BBX_REAL(getaddrinfo)(node, service, hints, res);
	int e = errno;
	if (r == 0 && res) {
		char list[1024];
		size_t n = 0;
		list[0] = 0;
		for (const struct addrinfo *ai = *res; ai; ai = ai->ai_next) {
			uint8_t key[16];
			if (!ai->ai_addr)
				continue;
			int fam = inet_key(ai->ai_addr, ai->ai_addrlen, key);
			if (!fam)
				continue;
			remember(fam, key, node);
			if (ai->ai_family == AF_INET)
				list_add(list, sizeof list, &n, AF_INET,
					 &((struct sockaddr_in *)ai->ai_addr)->sin_addr);
			else
				list_add(list, sizeof list, &n, AF_INET6,
					 &((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr);
		}
		resolve_record("getaddrinfo", node, list);
	}
	bbx_leave(e);
	return r;
}

BBX_EXPORT struct hostent *gethostbyname(const char *name)
{
	int saved;
	if (!name || !bbx_enter(&saved))
		return BBX_REAL(gethostbyname)(name);
	const struct bbx_pol_hdr *p = bbx_policy();
	if (!p || numeric(name)) {
		bbx_leave(saved);
		return BBX_REAL(gethostbyname)(name);
	}
	if (lookup_allowed(p, "gethostbyname", name)) {
		h_errno = HOST_NOT_FOUND;
		bbx_leave(saved);
		return NULL;
	}
	errno = saved;
	struct hostent *h = BBX_REAL(gethostbyname)(name);
	int e = errno;
	learn_hostent("gethostbyname", name, h);
	bbx_leave(e);
	return h;
}

BBX_EXPORT struct hostent *gethostbyname2(const char *name, int af)
{
	int saved;
	if (!name || !bbx_enter(&saved))
		return BBX_REAL(gethostbyname2)(name, af);
	const struct bbx_pol_hdr *p = bbx_policy();
	if (!p || numeric(name)) {
		bbx_leave(saved);
		return BBX_REAL(gethostbyname2)(name, af);
	}
	if (lookup_allowed(p, "gethostbyname2", name)) {
		h_errno = HOST_NOT_FOUND;
		bbx_leave(saved);
		return NULL;
	}
	errno = saved;
	struct hostent *h = BBX_REAL(gethostbyname2)(name, af);
	int e = errno;
	learn_hostent("gethostbyname2", name, h);
	bbx_leave(e);
	return h;
}

BBX_EXPORT int gethostbyname_r(const char *name, struct hostent *ret, char *buf, size_t buflen,
			       struct hostent **result, int *h_errnop)
{
	int saved;
	if (!name || !bbx_enter(&saved))
		return BBX_REAL(gethostbyname_r)(name, ret, buf, buflen, result, h_errnop);
	const struct bbx_pol_hdr *p = bbx_policy();
	if (!p || numeric(name)) {
		bbx_leave(saved);
		return BBX_REAL(gethostbyname_r)(name, ret, buf, buflen, result, h_errnop);
	}
	if (lookup_allowed(p, "gethostbyname_r", name)) {
		if (result)
			*result = NULL;
		if (h_errnop)
			*h_errnop = HOST_NOT_FOUND;
		bbx_leave(saved);
		return ENOENT;
	}
	errno = saved;
	int r = BBX_REAL(gethostbyname_r)(name, ret, buf, buflen, result, h_errnop);
	int e = errno;
	if (r == 0 && result)
		learn_hostent("gethostbyname_r", name, *result);
	bbx_leave(e);
	return r;
}

BBX_EXPORT int gethostbyname2_r(const char *name, int af, struct hostent *ret, char *buf,
				size_t buflen, struct hostent **result, int *h_errnop)
{
	int saved;
	if (!name || !bbx_enter(&saved))
		return BBX_REAL(gethostbyname2_r)(name, af, ret, buf, buflen, result, h_errnop);
	const struct bbx_pol_hdr *p = bbx_policy();
	if (!p || numeric(name)) {
		bbx_leave(saved);
		return BBX_REAL(gethostbyname2_r)(name, af, ret, buf, buflen, result, h_errnop);
	}
	if (lookup_allowed(p, "gethostbyname2_r", name)) {
		if (result)
			*result = NULL;
		if (h_errnop)
			*h_errnop = HOST_NOT_FOUND;
		bbx_leave(saved);
		return ENOENT;
	}
	errno = saved;
	int r = BBX_REAL(gethostbyname2_r)(name, af, ret, buf, buflen, result, h_errnop);
	int e = errno;
	if (r == 0 && result)
		learn_hostent("gethostbyname2_r", name, *result);
	bbx_leave(e);
	return r;
}
