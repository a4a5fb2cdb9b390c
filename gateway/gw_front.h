/*
 * gw_front.h — the S3 port's front door as the binaries configure it:
 * the flags for TLS (--tls-cert, --tls-key) and the limits before
 * authentication (--max-conns-per-addr, --rate-per-addr, --rate-burst,
 * --min-body-rate; the first three apply to the native port too) and after it (--rate-per-user, --bytes-per-user),
 * shared by iolake-gw and iolake-aio so both take the
 * same flags with the same defaults, and the SIGHUP certificate reload.
 *
 * Owns the tls_server it loads (common/tls.h). Does not own signals or
 * the loop: main.c calls gw_front_reload from its SIGHUP handler (any
 * thread: the reload is thread-safe).
 */
#ifndef GATEWAY_GW_FRONT_H
#define GATEWAY_GW_FRONT_H

#include <stddef.h>
#include <stdint.h>

#include "common/flags.h"
#include "gateway/http.h"
#include "gateway/user_limit.h"

#define GW_FRONT_MAX_CONNS_PER_ADDR 256
#define GW_FRONT_RATE_PER_ADDR 2000
#define GW_FRONT_RATE_BURST 4000
#define GW_FRONT_MIN_BODY_RATE 1024 /* bytes/s over HTTP_BODY_RATE_WINDOW_MS */
#define GW_FRONT_SLOW_REQUEST_MS 1000

struct gw_front {
	const char *tls_cert, *tls_key;  /* flags */
	int64_t max_conns_per_addr;
	int64_t rate_per_addr;
	int64_t rate_burst;
	uint64_t min_body_rate;
	int64_t rate_per_user;
	uint64_t bytes_per_user;
	uint64_t slow_request_ms;        /* the slow-request log (s3_server_cfg) */
	struct tls_server *tls;          /* loaded by gw_front_setup; NULL: plain */
};

#define GW_FRONT_DEFAULTS                                                          \
	{ .max_conns_per_addr = GW_FRONT_MAX_CONNS_PER_ADDR,                        \
	  .rate_per_addr = GW_FRONT_RATE_PER_ADDR, .rate_burst = GW_FRONT_RATE_BURST, \
	  .min_body_rate = GW_FRONT_MIN_BODY_RATE, .slow_request_ms = GW_FRONT_SLOW_REQUEST_MS }

/* The flag_spec entries (put them in the program's specs array). */
#define GW_FRONT_FLAGS(f)                                                                 \
	{ .name = "tls-cert", .type = FLAG_STRING, .dst = &(f).tls_cert, .metavar = "FILE",   \
	  .help = "serve S3 over TLS with this PEM certificate (chain); SIGHUP reloads it" }, \
	{ .name = "tls-key", .type = FLAG_STRING, .dst = &(f).tls_key, .metavar = "FILE",     \
	  .help = "the PEM private key of --tls-cert" },                                       \
	{ .name = "max-conns-per-addr", .type = FLAG_INT64, .dst = &(f).max_conns_per_addr,   \
	  .min = 0, .max = 1 << 20,                                                            \
	  .help = "open connections per client address, on the S3 port and (a table of its "   \
		  "own) the native port; more are closed (0: no cap)" },                       \
	{ .name = "rate-per-addr", .type = FLAG_INT64, .dst = &(f).rate_per_addr, .min = 0,   \
	  .max = 1 << 24,                                                                      \
	  .help = "requests per second per client address not signed by a user (anonymous, "  \
		  "bad or unknown signatures), S3 and native ports; more are answered SlowDown "  \
		  "(0: no limit)" },                                                           \
	{ .name = "rate-burst", .type = FLAG_INT64, .dst = &(f).rate_burst, .min = 0,         \
	  .max = 1 << 26, .help = "requests a client address may send at once (its bucket)" }, \
	{ .name = "min-body-rate", .type = FLAG_SIZE, .dst = &(f).min_body_rate,              \
	  .max = UINT32_MAX, .metavar = "BYTES",                                               \
	  .help = "request bodies slower than this per second (over 10 s) are cut (0: off)" }, \
	{ .name = "rate-per-user", .type = FLAG_INT64, .dst = &(f).rate_per_user, .min = 0,   \
	  .max = 1 << 24,                                                                      \
	  .help = "S3 requests per second per authenticated user (burst: twice that); "       \
		  "more are answered 503 SlowDown (0: no limit)" },                            \
	{ .name = "bytes-per-user", .type = FLAG_SIZE, .dst = &(f).bytes_per_user,            \
	  .metavar = "BYTES",                                                                  \
	  .help = "request and response body bytes per second per authenticated user "         \
		  "(burst: twice that); a user past it gets 503 SlowDown until paid back (0: no limit)" }, \
	{ .name = "slow-request-ms", .type = FLAG_DURATION, .dst = &(f).slow_request_ms,      \
	  .max = 86400000, .metavar = "MS",                                                    \
	  .help = "log every S3 request slower than this, with its request id and where its " \
		  "time went (0: every request)" }

/* Check the flags and load the certificate. 0, or -EINVAL with a
 * message in err. */
int gw_front_setup(struct gw_front *f, char *err, size_t err_len);

/* Fill http's tls, limit and min_body_rate_bps from f (after setup).
 * The slow-request log: s3_server_cfg.slow_log = true, .slow_request_ms =
 * f->slow_request_ms (main.c sets them). */
void gw_front_apply(const struct gw_front *f, struct http_server_cfg *http);

/* The per-user limits from f into an S3 server's cfg. */
void gw_front_apply_users(const struct gw_front *f, struct user_limit_cfg *out);

/* SIGHUP: load the certificate and key again; log the outcome (a failure
 * keeps the old ones). No-op without TLS. */
void gw_front_reload(struct gw_front *f);

/* "https" or "http". */
const char *gw_front_scheme(const struct gw_front *f);

/* After the server is closed. */
void gw_front_free(struct gw_front *f);

#endif
