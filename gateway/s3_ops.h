/*
 * s3_ops.h — the gateway's S3 layer as the rest of the process sees it:
 * the operation handlers gateway/s3_server dispatches to, the credential
 * source over meta's GetAccessKey, readiness and /metrics, over meta and
 * the erasure-coded data path. One struct s3_ops per gateway loop.
 *
 * Served: the operations of the handler tables listed in s3_handlers.h
 * (buckets, listings, object PUT / GET / HEAD / DELETE, DeleteObjects,
 * multipart uploads, copies, tagging, GetObjectAttributes, ACLs and
 * ownership controls, CORS), each through the gate (s3_rq_gate: the one
 * authorization point, s3_authz); and two outside it: the CORS preflight
 * (s3_cors.h: authorizes nothing) and the browser POST upload (s3_post.h:
 * its signer is in its body; it asks s3_rq_decide itself). Everything
 * else stays NULL in the front end's table (it answers NotImplemented).
 *
 * Nothing is acknowledged before its meta commit: a PUT's data is durable
 * on a write quorum and its record committed conditioned on the version it
 * replaces (s3_put.h) before the 200.
 *
 * Thread: the loop given to s3_ops_new; every handler runs there. The
 * gateway may run several such loops, one struct s3_ops each
 * (s3_ops_peers, gateway/gw_loops.h).
 */
#ifndef GATEWAY_S3_OPS_H
#define GATEWAY_S3_OPS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/metrics.h"
#include "gateway/gw_data.h"
#include "gateway/s3_server.h"

struct s3_ops;

/* The gateway on several loops (gateway/gw_loops.h): every loop has its
 * own struct s3_ops (meta client, map watch, data path, caches); loop 0's
 * registers the gauges, summed over every loop's, and runs the background
 * workers (GC, lifecycle, the degraded-PG flagger); the others hand the
 * PGs they saw degraded to flag_degraded, which runs them on loop 0.
 * Each loop publishes its own readiness in ready[] (written on its map
 * changes), so /health/ready, whichever loop answers it, speaks for the
 * whole gateway. */
#define S3_OPS_MAX_LOOPS 64
struct s3_ops_peers {
	unsigned n;                              /* loops */
	struct s3_ops *_Atomic ops[S3_OPS_MAX_LOOPS]; /* set as they start, NULL once freed */
	atomic_bool ready[S3_OPS_MAX_LOOPS];     /* loop i's own s3_ops_ready conditions */
	void (*flag_degraded)(void *ud, uint32_t pg, enum gw_data_degraded why);
	void (*kick_gc)(void *ud);              /* a GC round soon, on loop 0 */
	void *ud;
};

struct s3_ops_cfg {
	const char *const *meta;        /* meta addresses, copied */
	size_t n_meta;
	const char *region;             /* GetBucketLocation / new buckets; NULL: us-east-1 */
	struct gw_data_opts data;       /* k, m (0, 0: 4+2), segment (0: 1 MiB), quorum,
					 * window; inline_max_bytes is set from below */
	uint32_t inline_max_bytes;      /* bodies up to this live in the record; 0: 4096 */
	struct metrics_registry *metrics;  /* NULL: the ops make their own */
	uint32_t gc_interval_ms;        /* shard GC worker's rounds (gw_gc); 0: none */
	uint32_t lc_interval_ms;        /* lifecycle worker's rounds (lc_worker); 0: none */
	uint64_t lc_day_ms;             /* tests: a lifecycle day (0: 86,400,000 ms) */
	const char *lc_holder;          /* this gateway's name as the lifecycle cursor's
					 * holder (lc_worker_opts.holder); NULL: random */
	/* Tests only: the multipart minimum part size (every part but the
	 * last); 0: S3's 5 MiB. */
	uint64_t debug_min_part_bytes;
	/* Several loops: this loop's index and the table every loop's ops
	 * are in (must outlive them). NULL: one loop, everything here. */
	struct s3_ops_peers *peers;
	unsigned loop_index;
};

/* 0 and *out, -EINVAL, -ENOMEM. Starts watching the cluster map. */
int s3_ops_new(uv_loop_t *loop, const struct s3_ops_cfg *cfg, struct s3_ops **out);

/* Fill the server config's ops table, ops_ctx, credential source, ready
 * and metrics hooks. */
void s3_ops_bind(struct s3_ops *o, struct s3_server_cfg *scfg);

/* The per-operation request statistics (gw_stats.h) the front end feeds,
 * for the admin API; NULL when they could not be registered. */
struct gw_stats *s3_ops_stats(struct s3_ops *o);
/* The shard GC worker (NULL: none), for the admin API's GET /api/v1/gc. */
struct gw_gc *s3_ops_gc(struct s3_ops *o);
/* This loop's cluster map, for the admin API's credential revocation
 * (gw_map_creds_epoch). */
struct gw_map *s3_ops_map(struct s3_ops *o);

/* Flag a PG as degraded on this loop's flagger (loop 0 of several: the
 * others forward theirs here through s3_ops_peers.flag_degraded). */
void s3_ops_flag_degraded(struct s3_ops *o, uint32_t pg, enum gw_data_degraded why);

/* Ready: this loop's map is known, its PGs placed, with at least
 * write-quorum OSDs up; and, with peers, every other loop says the same
 * of its own map (the acceptor may hand the client's next connection to
 * any loop: one loop's map alone would let a probe pass while the next
 * request meets a loop without one). When not, logs which (info, at most
 * every 5 s per loop). */
bool s3_ops_ready(struct s3_ops *o);

/* Free. Requires the server closed (no call live). Meta calls still out
 * are answered IOL_ESHUTDOWN first; handles close a loop turn later. */
void s3_ops_free(struct s3_ops *o);

#endif
