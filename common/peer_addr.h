/*
 * peer_addr.h — a socket address as the 16 bytes per-address tables key
 * on: IPv6 as is, IPv4 as ::ffff:a.b.c.d (the S3 port's and the native
 * port's limits before authentication, gateway/http_limit.h).
 *
 * Pure; owns nothing.
 */
#ifndef IOLAKE_COMMON_PEER_ADDR_H
#define IOLAKE_COMMON_PEER_ADDR_H

#include <stdint.h>
#include <sys/socket.h>

/* ss's address into out; zeros for a family that is neither. */
void peer_addr_bin(const struct sockaddr_storage *ss, uint8_t out[16]);

#endif
