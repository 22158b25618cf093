/* SPDX-License-Identifier: MIT
 *
 * net.c - bind(2) of a unix socket: the one network call that creates a name in the
 * filesystem.  Recorded as a CREATE (kind sock) so undo removes the socket file and
 * puts its directory's times back.  Abstract sockets (sun_path[0] == 0) and every other
 * family go straight through.  (Egress policy for connect/sendto is a later layer.)
 */
#include "shim.h"

#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

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
