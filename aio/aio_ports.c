/*
 * aio_ports.c — meta's RPC address and the check of a default port
 * (aio_ports.h). The bind tests use SO_REUSEADDR, as libuv's listen does.
 */
#include "aio/aio_ports.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"

void aio_ports_check_madm(struct aio_addr *a)
{
	if (!a->is_default || !a->port)
		return;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)a->port) };
	if (inet_pton(AF_INET, a->host, &sa.sin_addr) != 1)
		return;   /* a name or IPv6: meta reports what it finds */
	int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	bool ok = bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(s);
	if (!ok) {
		LOG_WARN("the default admin address is taken; meta's admin RPC takes a free port",
			 "addr=%s:%d", a->host, a->port);
		a->port = 0;
	}
}

/* A free port on 127.0.0.1 whose successor is free too; 0 if none. */
static int free_pair(void)
{
	int s1 = socket(AF_INET, SOCK_STREAM, 0), s2 = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int ok = bind(s1, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
		 getsockname(s1, (struct sockaddr *)&sa, &sl) == 0;
	int port = ntohs(sa.sin_port);
	if (ok && port < 65535) {
		sa.sin_port = htons((uint16_t)(port + 1));
		ok = bind(s2, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	} else {
		ok = 0;
	}
	close(s1);
	close(s2);
	return ok ? port : 0;
}

int aio_ports_meta_address(const char *data_dir, char addr[64])
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/meta/rpc-addr", data_dir);
	FILE *f = fopen(path, "r");
	if (f) {
		int ok = fscanf(f, "%63s", addr) == 1;
		fclose(f);
		if (ok)
			return 0;
	}
	for (int tries = 0; tries < 50; tries++) {
		int port = free_pair();
		if (!port)
			continue;
		snprintf(addr, 64, "127.0.0.1:%d", port);
		f = fopen(path, "w");
		if (!f)
			return -errno;
		fprintf(f, "%s\n", addr);
		fclose(f);
		return 0;
	}
	return -EADDRINUSE;
}
