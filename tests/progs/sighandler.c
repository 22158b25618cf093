/* SPDX-License-Identifier: MIT
 *
 * sighandler FIFO VICTIM - blocks in open(FIFO, O_WRONLY) and, from a SIGALRM handler that fires
 * during that call, unlinks VICTIM.  The shim drops its guard around the real call, so
 * the handler's unlink must be journaled (and undone) like any other.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *victim;
static volatile sig_atomic_t unlinked = -1;

static void on_alarm(int sig)
{
	(void)sig;
	unlinked = unlink(victim);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: sighandler FIFO VICTIM\n");
		return 2;
	}
	victim = argv[2];
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm; /* no SA_RESTART: open returns EINTR */
	sigaction(SIGALRM, &sa, NULL);
	alarm(1);
	int fd = open(argv[1], O_WRONLY); /* a mutating open; blocks: no reader */
	if (fd >= 0)
		close(fd);
	return unlinked == 0 ? 0 : 1;
}
