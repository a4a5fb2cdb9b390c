/*
 * tcp_self.c — detect a TCP socket connected to itself (see tcp_self.h).
 */
#include "common/tcp_self.h"

#include <string.h>
#include <netinet/in.h>

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	if (a->ss_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
		return x->sin6_port == y->sin6_port &&
		       memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr)) == 0;
	}
	return false;
}

bool tcp_self_connected(const uv_tcp_t *tcp)
{
	struct sockaddr_storage local, peer;
	int ll = sizeof(local), pl = sizeof(peer);
	if (uv_tcp_getsockname(tcp, (struct sockaddr *)&local, &ll) ||
	    uv_tcp_getpeername(tcp, (struct sockaddr *)&peer, &pl))
		return false;
	return same_addr(&local, &peer);
}
