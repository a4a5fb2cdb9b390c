/*
 * http_accept.h — one listening socket for the HTTP servers of several
 * loops (the gateway on every core, issue 19): the acceptor runs on one
 * loop, accepts, and hands each connection to the server with the fewest
 * open connections (http_server_load; ties go round-robin), through that
 * server's loop queue (common/loop.h); the server adopts the socket
 * (http_server_adopt) and serves it on its own loop from then on. The
 * native protocol's RPC servers (one per loop) take their connections
 * the same way, through a target's hooks (load, capacity, adopt).
 *
 * Why not SO_REUSEPORT (one listener per loop): the kernel hashes each
 * connection to a socket, so a few connections (a client with 2 or 4)
 * often land on one loop and leave the other idle; another process of the
 * same user can bind the same port and take a share of the traffic
 * without an error; and the pool cap and per-address limits would be per
 * loop. Handing sockets over costs one queue post per connection, not per
 * request (S3 clients keep connections alive).
 *
 * When every server's pool is full the acceptor stops taking connections
 * (the kernel's backlog holds them) and looks again every
 * HTTP_ACCEPT_RETRY_MS; the same after EMFILE / ENFILE.
 *
 * Thread: start and close on the acceptor's loop; the targets' servers
 * are touched only on their own loops.
 */
#ifndef GATEWAY_HTTP_ACCEPT_H
#define GATEWAY_HTTP_ACCEPT_H

#include <stdint.h>
#include <uv.h>

#include "common/loop.h"
#include "gateway/http.h"

#define HTTP_ACCEPT_MAX_TARGETS 64
#define HTTP_ACCEPT_RETRY_MS 10

struct http_accept_target {
	struct http_server *srv;   /* started with cfg.adopt_only; NULL: the server
				    * is another kind, served through the hooks below */
	struct loop_queue *queue;  /* the server's loop's; NULL: the acceptor's loop */
	/* Another kind of server (the native protocol's RPC servers,
	 * gateway/native_loops.c), when srv is NULL: */
	void *ud;
	uint32_t (*load)(void *ud);       /* connections open: any thread */
	uint32_t (*capacity)(void *ud);   /* the most it takes: any thread */
	void (*adopt)(void *ud, int fd);  /* on its loop; fd is its own (closed if refused) */
};

struct http_acceptor;
struct metrics_registry;

/* "host:port" or "[v6]:port" into host (cap bytes, brackets dropped;
 * "localhost" as 127.0.0.1, which the bind below takes) and port: the
 * addresses of the --*-listen flags. 0 or -EINVAL. */
int http_accept_split(const char *s, char *host, size_t cap, int *port);

/* Bind addr:port (IPv4 or IPv6 literal; port 0 picks one), listen, and
 * hand connections to the n targets (1..HTTP_ACCEPT_MAX_TARGETS; copied).
 * metrics: the counter metric{loop="i"} (connections handed to target i),
 * metric NULL: iolake_gw_loop_connections_total (S3's); metrics NULL:
 * none. 0 and *out, or -errno (-EADDRINUSE, ...). */
int http_acceptor_start(uv_loop_t *loop, const char *addr, int port,
			const struct http_accept_target *t, unsigned n,
			struct metrics_registry *metrics, const char *metric,
			struct http_acceptor **out);

/* The bound port. */
int http_acceptor_port(const struct http_acceptor *a);

/* Connections handed to target i so far. */
uint64_t http_acceptor_handed(const struct http_acceptor *a, unsigned i);

/* Stop accepting and close the socket; cb(arg) runs on the acceptor's
 * loop once its handles are closed. Connections already handed over are
 * the servers' (posted ones are still adopted, or closed by a server that
 * is closing): close the servers after this. */
void http_acceptor_close(struct http_acceptor *a, void (*cb)(void *arg), void *arg);

#endif
