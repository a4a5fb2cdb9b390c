/*
 * http_limit.h — limits per client address, applied by the HTTP server
 * before a request reaches the S3 layer (so before any SigV4 work): a cap
 * on open connections and a token bucket of requests.
 *
 * A fixed table of HTTP_LIMIT_SLOTS entries (power of two), open
 * addressing over a window of HTTP_LIMIT_PROBE entries with a keyed hash
 * (seeded at creation, so a client cannot aim its addresses at one
 * window). O(1) per connection and request. When an address is new and
 * its window is full, the entry seen least recently among those with no
 * open connection is evicted (its bucket forgotten: it starts full again
 * next time); entries with open connections are never evicted, so a
 * connection's slot stays valid until it closes. A window full of
 * addresses that all hold connections cannot track one more: that address
 * is let through and counted (untracked), fail-open.
 *
 * No clock: callers pass monotonic nanoseconds. No allocation after
 * creation. Single-threaded (the server's loop).
 */
#ifndef GATEWAY_HTTP_LIMIT_H
#define GATEWAY_HTTP_LIMIT_H

#include <stdbool.h>
#include <stdint.h>

#define HTTP_LIMIT_SLOTS 4096
#define HTTP_LIMIT_PROBE 8
#define HTTP_LIMIT_NONE UINT32_MAX /* "no slot": untracked connection */

struct http_limit_cfg {
	uint32_t max_conns;     /* open connections per address; 0: no cap */
	uint32_t rate;          /* requests per second per address; 0: no limit */
	uint32_t burst;         /* bucket size; 0: 2 x rate */
};

struct http_limit_stats {
	uint64_t conns_refused;     /* connections over max_conns */
	uint64_t requests_refused;  /* requests without a token */
	uint64_t refunds;           /* tokens given back by authenticated requests */
	uint64_t evictions;
	uint64_t untracked;         /* addresses the table could not hold */
	uint32_t entries;           /* in use now */
};

struct http_limit;

/* NULL: ENOMEM. seed keys the hash (0: from the clock). */
struct http_limit *http_limit_new(const struct http_limit_cfg *cfg, uint64_t seed);
void http_limit_free(struct http_limit *l);

/* Addresses are 16 bytes: IPv6, or IPv4 as ::ffff:a.b.c.d. */

/* A connection from addr opened. true and *slot (HTTP_LIMIT_NONE when
 * untracked) when it may stay; false when the address is at max_conns
 * (nothing recorded). */
bool http_limit_conn_open(struct http_limit *l, const uint8_t addr[16], uint64_t now_ns,
			  uint32_t *slot);
/* The connection that http_limit_conn_open admitted with slot closed. */
void http_limit_conn_close(struct http_limit *l, uint32_t slot);

/* A request on a connection admitted with slot: true when a token was
 * taken (or there is no rate limit / no slot), false: refuse it. */
bool http_limit_request(struct http_limit *l, uint32_t slot, uint64_t now_ns);

/* A request http_limit_request admitted on slot proved to be signed by a
 * user (its signature verified): its token goes back. So the rate counts
 * only requests no user's key vouches for (anonymous ones, bad
 * signatures, unknown keys, and everything while it is being checked):
 * an authenticated client never runs its address dry however fast it
 * goes (per-user limits are --rate-per-user's), a flood does. No-op
 * without a rate, for HTTP_LIMIT_NONE and for a slot with no connection
 * left (it may hold another address by now). */
void http_limit_refund(struct http_limit *l, uint32_t slot);

void http_limit_stats(const struct http_limit *l, struct http_limit_stats *out);

#endif
