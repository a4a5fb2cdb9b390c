/*
 * gw_gc.h — the gateway's shard GC worker: drains meta's GC queue (the
 * records that committed overwrites, deletes and multipart changes
 * replaced) by deleting their shards on the OSDs and acking the entries
 * it freed. Details and the safety argument at the top of gw_gc.c.
 *
 * Below the S3 handlers: it deletes through gw_rec (the code path their
 * commit-time deletes take) and talks to meta itself; it calls nothing of
 * the S3 layer.
 *
 * Thread: the gateway loop it was started on; every function on that
 * loop's thread.
 */
#ifndef GATEWAY_GW_GC_H
#define GATEWAY_GW_GC_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

struct gw_data;
struct gw_map;
struct meta_client;
struct metrics_registry;

struct gw_gc_opts {
	uint32_t interval_ms;        /* between rounds; 0: no worker (gw_gc_start refuses) */
	uint32_t round_entries;      /* entries looked at per round; 0: 256 */
	uint32_t page_entries;       /* entries per ListGc call; 0: 128 */
	unsigned window;             /* layouts being deleted at once; 0: 4 */
};

struct gw_gc;

/* What the worker did since it started (GET /api/v1/gc). */
struct gw_gc_status {
	uint64_t rounds;             /* rounds finished */
	uint64_t freed, failed, skipped;   /* entries: acked freed, left to retry, acked
	                                    * without a delete (nothing to free) */
	uint64_t freed_bytes;        /* the freed entries' object sizes */
	uint64_t last_round_end_ms;  /* wall clock; 0: none yet */
	uint32_t last_round_freed, last_round_failed;
	bool running;                /* a round is under way */
};

/* Start a worker on loop over a meta client (ListGc, GcAck), the map (the
 * PGs' current OSDs) and the data path (the deletes), all of which must
 * outlive it; its metrics go to reg. The first round runs one interval
 * from now. 0 and *out, -EINVAL (interval 0), -ENOMEM. */
int gw_gc_start(uv_loop_t *loop, struct meta_client *mc, struct gw_map *map, struct gw_data *data,
		struct metrics_registry *reg, const struct gw_gc_opts *opts, struct gw_gc **out);

/* Stop: no new round or call starts, and g frees itself once the calls in
 * flight have come back (meta_client_close and gw_map_close make them come
 * back). Call before closing its meta client. NULL is ignored. */
void gw_gc_close(struct gw_gc *g);

/* Entries were just queued that this gateway did not delete itself (a
 * PUT that replaced a version without reading it, issue 19): a round
 * starts within GW_GC_KICK_MS (after the one running, if any), not one
 * interval from now. Many kicks make one round. NULL is ignored. */
#define GW_GC_KICK_MS 100
void gw_gc_kick(struct gw_gc *g);

/* A copy of g's status. Any time on g's loop. */
void gw_gc_status(const struct gw_gc *g, struct gw_gc_status *out);

#endif
