/*
 * user_limit.h — limits per authenticated user, applied by the S3 server
 * right after a request's signature is verified (the limits per client
 * address, http_limit.h, come before it): a token bucket of requests and
 * one of bytes, both per user name.
 *
 * Requests: rate per second, burst tokens; a request without a token is
 * refused (503 SlowDown). Bytes: a request's declared body
 * (Content-Length) is taken at admission and its response body when the
 * exchange ends; the byte bucket may go into debt (a 1 GiB GET is not
 * known in advance), and a user in debt is refused until the refill pays
 * it back. So a user's long-run bytes per second stay at the rate, with
 * bursts of up to burst bytes plus one request's worth.
 *
 * A fixed table of USER_LIMIT_SLOTS entries, open addressing over
 * USER_LIMIT_PROBE slots with a keyed hash; a new user whose window is
 * full takes the least recently seen entry (whose buckets are forgotten:
 * they start full). Anonymous requests are not limited here (only per
 * address). No allocation after creation; no clock (callers pass
 * monotonic ns); single-threaded (the server's loop).
 */
#ifndef GATEWAY_USER_LIMIT_H
#define GATEWAY_USER_LIMIT_H

#include <stdbool.h>
#include <stdint.h>

#define USER_LIMIT_SLOTS 1024
#define USER_LIMIT_PROBE 8
#define USER_LIMIT_NAME_MAX 64     /* longer names share a slot by prefix */

struct user_limit_cfg {
	uint32_t rate;          /* requests per second per user; 0: no limit */
	uint32_t burst;         /* request tokens; 0: 2 x rate */
	uint64_t bytes_rate;    /* body bytes per second per user, both ways; 0: no limit */
	uint64_t bytes_burst;   /* byte tokens; 0: 2 x bytes_rate */
};

struct user_limit_stats {
	uint64_t refused_rate;   /* requests refused for want of a request token */
	uint64_t refused_bytes;  /* requests refused while the user was in byte debt */
	uint64_t evictions;
};

struct user_limit;

/* NULL when both limits are off (nothing to do), or on ENOMEM. seed keys
 * the hash (0: from the clock). */
struct user_limit *user_limit_new(const struct user_limit_cfg *cfg, uint64_t seed);
void user_limit_free(struct user_limit *l);

/* A request of user with a declared body of body_bytes: true when it may
 * go on (its tokens taken), false when refused. */
bool user_limit_admit(struct user_limit *l, const char *user, uint64_t body_bytes,
		      uint64_t now_ns);

/* The response of one of user's requests carried bytes: take them from
 * the user's byte bucket (into debt if need be). */
void user_limit_charge(struct user_limit *l, const char *user, uint64_t bytes, uint64_t now_ns);

void user_limit_stats(const struct user_limit *l, struct user_limit_stats *out);

#endif
