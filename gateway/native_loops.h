/*
 * native_loops.h — the native protocol on every gateway loop (issue 19):
 * one native server (native.h) per loop of a gw_loops, each serving its
 * connections' calls with its own loop's s3_ops (meta client, data path,
 * bucket cache), as S3's servers do.
 *
 *   N = 1: loop 0's server binds the native address itself, as before.
 *   N > 1: one listening socket on loop 0 (gateway/http_accept.h, S3's
 *          acceptor) hands each connection to the loop with the fewest
 *          open native connections; the servers adopt them
 *          (rpc_server_adopt). The per-address limits are one table for
 *          all loops (http_limit_shared, a table of its own beside
 *          S3's); PutBegin's cap (NATIVE_UPLOADS_MAX) is split evenly
 *          between the loops.
 *
 * An upload (PutBegin, PutAppend, PutCommit) lives on the loop of the
 * connection that began it: its calls must come on that connection (or
 * one that lands on the same loop), as libiolake and the bench do.
 *
 * Owns the servers, the acceptor and the shared table. Knows nothing of
 * the calls (native_srv.c and the method modules).
 *
 * Thread: start, close and free from a thread that is not one of the
 * loops (the main thread); they block until each loop has run its step.
 */
#ifndef GATEWAY_NATIVE_LOOPS_H
#define GATEWAY_NATIVE_LOOPS_H

#include "gateway/gw_loops.h"
#include "gateway/native.h"

struct native_loops;

/* Serve the native protocol on every loop of g at cfg->listen ("host:port"
 * with a numeric IPv4 or IPv6 host, or localhost; port 0: any).
 * cfg->limit_shared and uploads_max are set here. 0 and *out; -EINVAL (a
 * bad address), -EADDRINUSE and the other errors of binding; -ENOMEM
 * (everything started is stopped again). */
int native_loops_start(struct gw_loops *g, const struct native_cfg *cfg,
		       struct native_loops **out);

/* The TCP port listened on. */
int native_loops_port(const struct native_loops *nl);

/* Connections handed to loop i so far (N > 1; 0 otherwise). */
uint64_t native_loops_handed(const struct native_loops *nl, unsigned i);

/* Stop accepting and close every loop's server (native_srv_close: uploads
 * aborted, each server freed once its calls are answered). Before
 * gw_loops_stop. */
void native_loops_close(struct native_loops *nl);

/* Free what the servers shared (the limit table, which a call still
 * finishing may touch): after gw_loops_stop. NULL: nothing. */
void native_loops_free(struct native_loops *nl);

#endif
