/*
 * aio_ports.c — meta's RPC address and the check of a default port
 * (aio_ports.h). The bind tests use SO_REUSEADDR, as libuv's listen does.
 *
 * Meta's pair is drawn below the kernel's ephemeral range: inside it, any
 * outgoing connection on the machine may hold one of the two ports as its
 * local port when aio restarts, and Raft's listener then fails ("address
 * already in use"; a CI run's test_upgrade, whose fixtures kept such a
 * pair). A kept pair is waited for instead of moved: the Raft
 * configuration names it.
 */
#include "aio/aio_ports.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"

/* Whether a listener could bind sa now, as libuv binds (SO_REUSEADDR: a
 * TIME_WAIT left by a listener's own connections does not count; a
 * listener, or a connection whose local port it is, does, and so does
 * the TIME_WAIT of such a connection that closed first). */
static bool bindable(struct sockaddr_in sa)
{
	int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	if (s < 0)
		return false;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	bool ok = bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(s);
	return ok;
}

static bool port_free(int port)
{
	return bindable((struct sockaddr_in){ .sin_family = AF_INET,
					      .sin_port = htons((uint16_t)port),
					      .sin_addr.s_addr = htonl(INADDR_LOOPBACK) });
}

void aio_ports_check_madm(struct aio_addr *a)
{
	if (!a->is_default || !a->port)
		return;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)a->port) };
	if (inet_pton(AF_INET, a->host, &sa.sin_addr) != 1)
		return;   /* a name or IPv6: meta reports what it finds */
	if (!bindable(sa)) {
		LOG_WARN("the default admin address is taken; meta's admin RPC takes a free port",
			 "addr=%s:%d", a->host, a->port);
		a->port = 0;
	}
}

/* The first port of the kernel's ephemeral range: the local ports it
 * hands to outgoing connections (every client's, any process's). */
static int ephemeral_low(void)
{
	int lo = 32768, hi = 60999;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	if (f) {
		if (fscanf(f, "%d %d", &lo, &hi) != 2)
			lo = 32768;
		fclose(f);
	}
	return lo;
}

/* A free port on 127.0.0.1 whose successor is free too, as the kernel
 * picks one (inside its ephemeral range); 0 if none. */
static int kernel_pair(void)
{
	int s1 = socket(AF_INET, SOCK_STREAM, 0), s2 = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int ok = s1 >= 0 && s2 >= 0 && bind(s1, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
		 getsockname(s1, (struct sockaddr *)&sa, &sl) == 0;
	int port = ntohs(sa.sin_port);
	if (ok && port < 65535) {
		sa.sin_port = htons((uint16_t)(port + 1));
		ok = bind(s2, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	} else {
		ok = 0;
	}
	if (s1 >= 0)
		close(s1);
	if (s2 >= 0)
		close(s2);
	return ok ? port : 0;
}

/* A port on 127.0.0.1 whose successor is free too, drawn at random from
 * 20000 up to the ephemeral range: a pair inside that range may be some
 * outgoing connection's local port on a later start, and then meta
 * cannot listen (it happened to a test's aio); below 20000 are the ports
 * operators and the tests pick. When the range leaves no room below it,
 * the kernel's pick (kernel_pair). 0 if nothing was found. */
static int free_pair(void)
{
	int hi = ephemeral_low() - 2;   /* port + 1 below the range too */
	int lo = hi > 21000 ? 20000 : 10000;
	if (hi <= lo)
		return kernel_pair();   /* a range that starts low (1024-65535): no way out of it */
	for (int tries = 0; tries < 50; tries++) {
		unsigned r;   /* early at boot the pool may not be ready: any spread will do */
		if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
			r = (unsigned)getpid() * 2654435761u ^ (unsigned)time(NULL) ^ (unsigned)tries * 40503u;
		int port = lo + (int)(r % (unsigned)(hi - lo + 1));
		if (port_free(port) && port_free(port + 1))
			return port;
	}
	return kernel_pair();   /* crowded below the range: better a pair than none */
}

/* The kept pair at port, waited for while another socket holds either
 * port: most likely an outgoing connection whose local port the kernel
 * drew from its range (data dirs of builds before this one kept pairs
 * from it), which ends on its own. 0, or -EADDRINUSE after
 * AIO_PORTS_WAIT_MS. */
static int wait_pair(const char *addr, int port)
{
	for (int waited = 0;; waited += 250) {
		bool rpc = port_free(port), raft = port_free(port + 1);
		if (rpc && raft)
			return 0;
		if (waited >= AIO_PORTS_WAIT_MS)
			return -EADDRINUSE;
		if (waited % 10000 == 0)
			LOG_WARN("meta's kept address is in use; waiting for it",
				 "addr=%s port=%d waited_s=%d limit_s=%d hint=%s", addr,
				 rpc ? port + 1 : port, waited / 1000, AIO_PORTS_WAIT_MS / 1000,
				 LOG_Q("ss -tanp shows the socket holding it"));
		usleep(250 * 1000);
	}
}

/* fsync of path's directory, so a new file's name is durable too. */
static int fsync_dir_of(const char *path)
{
	char dir[4200];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	int rc = fsync(dfd) ? -errno : 0;
	close(dfd);
	return rc;
}

int aio_ports_meta_address(const char *data_dir, char addr[64])
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/meta/rpc-addr", data_dir);
	FILE *f = fopen(path, "r");
	if (f) {
		int ok = fscanf(f, "%63s", addr) == 1;
		fclose(f);
		const char *colon = ok ? strrchr(addr, ':') : NULL;
		if (ok && colon && strncmp(addr, "127.0.0.1:", 10) == 0)
			return wait_pair(addr, atoi(colon + 1));
		if (ok)
			return 0;   /* not aio's own form: meta reports what it finds */
	}
	addr[0] = 0;
	int port = free_pair();
	if (!port)
		return -EADDRINUSE;
	snprintf(addr, 64, "127.0.0.1:%d", port);
	/* Durable before meta's Raft configuration names it. */
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644), rc = 0;
	if (fd < 0)
		return -errno;
	char line[72];
	int len = snprintf(line, sizeof(line), "%s\n", addr);
	if (write(fd, line, (size_t)len) != len || fsync(fd))
		rc = errno ? -errno : -EIO;
	close(fd);
	if (!rc)
		rc = fsync_dir_of(path);
	return rc;
}
