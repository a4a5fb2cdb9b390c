/*
 * metrics_http.h — a minimal HTTP/1.1 server for Prometheus scrapes: it
 * answers GET and HEAD /metrics with a registry (common/metrics.h)
 * rendered as text format 0.0.4, on a libuv loop the caller runs.
 *
 *   struct metrics_http *mh;
 *   int rc = metrics_http_start(loop, "127.0.0.1:9100", reg, NULL, &mh);
 *   ...
 *   metrics_http_close(mh, NULL, NULL);
 *
 * For services that do not speak S3 (iolake-osd, iolake-meta); the gateway
 * serves /metrics on its S3 port instead. Requests are parsed by Debian's
 * http-parser; only the method and the path matter. Answers: 200 for
 * GET/HEAD /metrics (a query string is ignored), 404 for another path,
 * 405 (Allow: GET, HEAD) for another method, 400 for a malformed request,
 * 431 when the request target plus header names and values exceed
 * METRICS_HTTP_HEAD_MAX bytes. Keep-alive is honoured (HTTP/1.1 default,
 * Connection: close, HTTP/1.0 keep-alive); 400, 405, 431, a request with a
 * body and an Upgrade are answered with Connection: close. Pipelined
 * requests are answered in order, one at a time.
 *
 * Limits: at most max_conns connections (more are accepted and closed at
 * once); a connection is closed idle_timeout_ms after it was accepted or
 * its last answer was written, whatever it sends meanwhile (a request
 * trickled byte by byte, or a client that does not read its answer).
 *
 * Threads: everything runs on the loop given to metrics_http_start (the
 * service's own loop thread); no call blocks. The registry is rendered on
 * that thread at each scrape (its mutex is held only while rendering).
 */
#ifndef COMMON_METRICS_HTTP_H
#define COMMON_METRICS_HTTP_H

#include <stdbool.h>
#include <uv.h>

#include "common/metrics.h"

#define METRICS_HTTP_HEAD_MAX (8 * 1024)   /* target + header names + values */

struct metrics_http_opts {
	unsigned max_conns;        /* open connections; 0: 64 */
	unsigned idle_timeout_ms;  /* per request, from accept or last answer; 0: 30000 */
};

struct metrics_http;

/* Whether addr is one metrics_http_start accepts: "HOST:PORT" with HOST an
 * IPv4 address, "[IPv6]" or "localhost" (127.0.0.1), PORT 0..65535 in
 * decimal (0 picks a free port). Names other than localhost are not
 * resolved (no blocking lookup on a loop thread). */
bool metrics_http_addr_valid(const char *addr);

/* Listen on addr and serve reg (which must outlive the server) on loop;
 * loop thread. opts may be NULL. Returns 0 and *out, -EINVAL for a bad
 * addr, -ENOMEM, or the -errno of bind/listen (-EADDRINUSE,
 * -EADDRNOTAVAIL, -EACCES). On failure nothing is left on the loop once
 * it has run the closes this queued. */
int metrics_http_start(uv_loop_t *loop, const char *addr, struct metrics_registry *reg,
		       const struct metrics_http_opts *opts, struct metrics_http **out);

/* The TCP port bound (useful after port 0). */
int metrics_http_port(const struct metrics_http *mh);

/* Stop listening and drop every connection (a response being written is
 * cut). cb(arg) (may be NULL) runs on the loop once every handle is closed
 * and mh freed. Loop thread; mh must not be used afterwards. */
void metrics_http_close(struct metrics_http *mh, void (*cb)(void *arg), void *arg);

#endif
