/* SPDX-License-Identifier: MIT
 *
 * connect-bench.c - the cost of connect(2) as a program sees it, for the README's
 * figure of what the shim's [network] decision adds (issue 3).
 *
 *   connect-bench [N]   N rounds (default 20000) of each:
 *     tcp  socket, connect to a 127.0.0.1 listener of this process, accept, close both;
 *          only the connect() call is timed
 *     udp  connect() of one UDP socket to 127.0.0.1 (no handshake: the kernel's part is
 *          small, so the shim's share shows)
 *   prints "tcp connect: X ns/call" and "udp connect: Y ns/call" (median of 5 batches).
 *
 * Run it plain, under bbx-run without a policy, and under bbx-run --policy FILE.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static long long now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;
	if (n <= 0) {
		fprintf(stderr, "usage: connect-bench [N]\n");
		return 2;
	}
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 128) ||
	    getsockname(l, (struct sockaddr *)&a, &al)) {
		perror("connect-bench: listener");
		return 1;
	}
	double tcp[5], udp[5];
	for (int b = 0; b < 5; b++) {
		long long t = 0;
		for (long i = 0; i < n / 5; i++) {
			int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			long long t0 = now();
			int r = connect(c, (struct sockaddr *)&a, sizeof a);
			t += now() - t0;
			if (r) {
				perror("connect-bench: tcp connect");
				return 1;
			}
			int s = accept(l, NULL, NULL);
			close(c);
			if (s >= 0)
				close(s);
		}
		tcp[b] = (double)t / (double)(n / 5);
		int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		long long t0 = now();
		for (long i = 0; i < n / 5; i++)
			if (connect(u, (struct sockaddr *)&a, sizeof a)) {
				perror("connect-bench: udp connect");
				return 1;
			}
		udp[b] = (double)(now() - t0) / (double)(n / 5);
		close(u);
	}
	qsort(tcp, 5, sizeof tcp[0], cmp);
	qsort(udp, 5, sizeof udp[0], cmp);
	printf("tcp connect: %.0f ns/call\nudp connect: %.0f ns/call\n", tcp[2], udp[2]);
	return 0;
}
