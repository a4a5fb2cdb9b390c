/*
 * gw_loops.h — the gateway on every core (issue 19): N loop threads, each
 * with its own libuv loop, struct s3_ops (meta client, map watch, data
 * path and OSD channels, policy and credential caches) and S3 server
 * (connection and call pools). iolake-gw and iolake-aio both start the
 * gateway through here.
 *
 *   N = 1: loop 0's server binds --s3-listen itself, exactly as before.
 *   N > 1: one listening socket on loop 0 (gateway/http_accept.h) hands
 *          each connection to the loop with the fewest open; per-address
 *          limits are one table for all loops; --max-conns is split
 *          evenly between the loops' pools.
 *
 * Once per process, on loop 0 only: the shard GC worker, the lifecycle
 * worker, the degraded-PG flagger (the other loops forward what they see
 * to it), the gauges of /metrics (summed over the loops). The counters
 * and histograms are one set in the shared registry (atomic updates), so
 * /metrics from any loop shows the whole gateway. Callers put the admin
 * API on loop 0 (gw_loops_thread(g, 0)).
 *
 * Owns the loop threads, every loop's s3_ops and s3_server, the acceptor
 * and the shared limit table. Handles no request itself.
 *
 * Thread: gw_loops_start and gw_loops_stop from a thread that is not one
 * of the loops (the main thread); they block until the loops are up /
 * down.
 */
#ifndef GATEWAY_GW_LOOPS_H
#define GATEWAY_GW_LOOPS_H

#include <stdbool.h>

#include "common/flags.h"
#include "common/loop.h"
#include "gateway/s3_ops.h"
#include "gateway/s3_server.h"

#define GW_LOOPS_MAX 64
#define GW_LOOPS_DEFAULT_MAX 16   /* the default (one per core) stops here */

/* --gw-loops (a flag_spec entry for iolake-gw and iolake-aio). */
#define GW_LOOPS_FLAG(var)                                                              \
	{ .name = "gw-loops", .type = FLAG_INT64, .dst = &(var), .min = 0, .max = GW_LOOPS_MAX, \
	  .metavar = "N", .help = "S3 gateway event loops, each a thread (0: one per core, "  \
	  "at most 16)" }

/* --segment-size: data bytes per erasure-coded segment of the objects the
 * gateway writes (s3_ops_cfg.data.segment_bytes; 0 there: 1 MiB). Each
 * object's layout records its own, so changing it leaves every object
 * readable. */
#define GW_SEGMENT_FLAG(var)                                                            \
	{ .name = "segment-size", .type = FLAG_SIZE, .dst = &(var), .min = 64 << 10,     \
	  .max = 64 << 20, .metavar = "BYTES",                                           \
	  .help = "data bytes per erasure-coded segment of new objects (a shard is "     \
	  "1/k of it; objects keep the size they were written with)" }

/* --buffer-pool-max: idle data-path buffer memory the gateway keeps for
 * reuse, in total over its loops (gw_loops_start gives each loop an equal
 * share; s3_ops_cfg.data.pool_max_bytes carries the total, 0 there: the
 * default, so a flag of 0 is passed as 1, which keeps nothing). Freed
 * buffers beyond it go back to malloc. */
#define GW_BUFFER_POOL_DEFAULT (256ull << 20)
#define GW_BUFFER_POOL_FLAG(var)                                                        \
	{ .name = "buffer-pool-max", .type = FLAG_SIZE, .dst = &(var), .min = 0,         \
	  .max = 1ull << 40, .metavar = "BYTES",                                         \
	  .help = "idle I/O buffer memory the gateway keeps for reuse, over all its "    \
	  "loops (0: none; freed buffers beyond it go back to malloc)" }

struct gw_loops_cfg {
	unsigned n;                  /* loops, 1..GW_LOOPS_MAX */
	struct s3_ops_cfg ops;       /* every loop's; .metrics required (one registry) */
	struct s3_server_cfg srv;    /* every loop's: http address, limits, TLS; the ops
				      * table and hooks are filled per loop (s3_ops_bind) */
	bool (*ready)(void *ops);    /* /health/ready; NULL: s3_ops_ready */
};

struct gw_loops;

/* The default loop count: the CPUs this process may run on
 * (sched_getaffinity), at most GW_LOOPS_DEFAULT_MAX, at least 1. */
unsigned gw_loops_default(void);

/* Start the n loops and the listener. 0 and *out; or -errno with
 * *failed_listen true when the S3 address could not be bound (everything
 * started is stopped again). */
int gw_loops_start(const struct gw_loops_cfg *cfg, struct gw_loops **out, bool *failed_listen);

unsigned gw_loops_n(const struct gw_loops *g);
int gw_loops_port(const struct gw_loops *g);
struct loop_thread *gw_loops_thread(struct gw_loops *g, unsigned i);
/* Loop i's ops: touch them on loop i only (loop 0's for the admin API). */
struct s3_ops *gw_loops_ops(struct gw_loops *g, unsigned i);

/* Stop accepting, close every loop's server (connections get
 * -ESHUTDOWN) and ops, loop 0's last, and join the threads. */
void gw_loops_stop(struct gw_loops *g);

#endif
