/*
 * native.h — the native protocol's service on a gateway (issue 19,
 * docs/native-protocol.md): an RPC listener of its own (common/rpc.h,
 * service iolake.native.Native) whose calls put, get, head, delete and
 * list objects in the same records and shards as S3, authenticated by the
 * same keys (gateway/s3_auth) and authorized by the same decision
 * (s3_rq_decide).
 *
 * One server per gateway loop (gateway/native_loops.h spreads the
 * connections): each serves its connections' calls with its loop's
 * s3_ops (meta client, data path, bucket cache).
 *
 * Thread: the loop of the s3_ops it serves; every call runs there.
 */
#ifndef GATEWAY_NATIVE_H
#define GATEWAY_NATIVE_H

#include <uv.h>

#include "gateway/http_limit.h"

struct s3_ops;
struct native_srv;

/* PutBegin uploads open at once per gateway (each holds a gw_data PUT,
 * whose operations S3 shares): beyond, PutBegin answers SlowDown. Split
 * evenly between the loops' servers (native_cfg.uploads_max). */
#define NATIVE_UPLOADS_MAX 256

struct native_cfg {
	const char *listen;            /* "host:port" (port 0: any); NULL: no listener,
					* connections come by native_srv_adopt */
	uint32_t upload_idle_ms;       /* a PutBegin upload untouched this long is aborted; 0: 60000 */
	unsigned uploads_max;          /* PutBegin uploads open at once; 0: NATIVE_UPLOADS_MAX */
	struct http_limit_cfg limit;   /* per address before authentication (the S3
					* port's flags; gateway/native_limit.h); zero: none */
	struct http_limit_shared *limit_shared;   /* set: one table for the servers
						   * of several loops (limit unused) */
};

/* Serve the native protocol for ops on loop. 0 and *out; -EADDRINUSE and
 * the other errors of rpc_server_listen; -ENOMEM. ops must outlive it. */
int native_srv_start(uv_loop_t *loop, struct s3_ops *ops, const struct native_cfg *cfg,
		     struct native_srv **out);

/* The TCP port listened on (0 without a listener). */
int native_srv_port(const struct native_srv *s);

/* A connection accepted on another loop (gateway/native_loops.c): served
 * here from now on; fd is s's (closed if refused). s's loop only. */
void native_srv_adopt(struct native_srv *s, int fd);

/* Connections open now: any thread. */
uint32_t native_srv_conns(const struct native_srv *s);

/* Stop listening, abort every upload in progress (their shards are
 * deleted) and free s once its calls are answered. Before the ops are
 * freed. */
void native_srv_close(struct native_srv *s);

#endif
