/*
 * native_limit.h — the native port's limits before authentication (issue
 * 16): the S3 port's per-address connection cap and token bucket
 * (gateway/http_limit.h, the same flags --max-conns-per-addr,
 * --rate-per-addr, --rate-burst, a table of its own) applied by the RPC
 * server's admission hooks (common/rpc.h, struct rpc_admit): a
 * connection over the cap is closed before any TLS or HTTP/2 work, a call
 * without a token is answered RESOURCE_EXHAUSTED "SlowDown" before its
 * body is kept or its signature looked at. A call whose signature then
 * verifies gives its token back (http_limit_refund): only calls no user's
 * key vouches for count, as on the S3 port.
 *
 * The native servers of several loops (gateway/native_loops.c) share one
 * table (http_limit_shared: the table behind a mutex, as S3's loops do),
 * so the caps are the same whatever loop a connection lands on.
 *
 * Counted in iolake_gw_native_refused_total{reason="conns_per_addr" |
 * "rate_per_addr"}. Thread: the native server's loop; a shared table is
 * used under its mutex.
 */
#ifndef GATEWAY_NATIVE_LIMIT_H
#define GATEWAY_NATIVE_LIMIT_H

#include "common/rpc.h"
#include "gateway/http.h"
#include "gateway/http_limit.h"

struct metrics_registry;

struct native_limit {
	struct http_limit *table;        /* NULL: no limit configured */
	pthread_mutex_t *mu;             /* set: table is shared (not ours) */
	struct rpc_admit admit;
	struct metrics_counter *m_conns, *m_rate;
	uint64_t conns_refused, calls_refused;
};

/* Set l up from cfg (all zero: no table, no hooks), or over shared (not
 * NULL: cfg is then unused; shared must outlive l). reg may be NULL.
 * 0 or -ENOMEM. */
int native_limit_init(struct native_limit *l, const struct http_limit_cfg *cfg,
		      struct http_limit_shared *shared, struct metrics_registry *reg);

/* The hooks for rpc_server_opts.admit, or NULL when nothing is limited. */
const struct rpc_admit *native_limit_admit(const struct native_limit *l);

/* r's signature verified as a user's: give its token back. */
void native_limit_authenticated(struct native_limit *l, const struct rpc_req *r);

/* After the server's last connection is gone. */
void native_limit_free(struct native_limit *l);

#endif
