/*
 * peer_addr.c — a socket address as 16 bytes (peer_addr.h).
 */
#include "common/peer_addr.h"

#include <netinet/in.h>
#include <string.h>

void peer_addr_bin(const struct sockaddr_storage *ss, uint8_t out[16])
{
	memset(out, 0, 16);
	if (ss->ss_family == AF_INET) {
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		memcpy(out, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
	}
}
