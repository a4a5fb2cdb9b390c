/*
 * sweep.h — the OSD's orphan sweep: finds shards no live object names and
 * deletes them after a grace period.
 *
 * Shards become orphans when no record will ever name them: a gateway
 * killed mid-PUT (shards written, record never committed), an OSD away
 * while its object was deleted (the gateway and its GC worker delete on
 * the PG's current OSDs, then ack), a delete racing a remap. The GC queue
 * (gateway/gw_gc.c) cannot know them; meta's reference index can: every
 * layout a live record or part names is there (meta/state.c 'X').
 *
 * Every interval_ms the sweep walks this OSD's shard index PG by PG, a
 * page of keys per step, and asks meta CheckShards which of the page's
 * object ids (the first 16 bytes of a 20-byte OSD object id: the gw_data
 * PUT's id; the last 4 are the segment) are referenced. An unreferenced
 * id becomes a candidate (first seen now); a candidate still unreferenced
 * on a later pass, first seen grace_ms or more ago, has every shard of it
 * on this OSD deleted. A referenced candidate is forgotten.
 *
 * Safety: a PUT writes its shards before meta commits the record that
 * names them, so grace_ms must exceed the longest PUT (and part upload);
 * the default 24 h does by far. Meta unreachable or failing: the pass is
 * abandoned and nothing more is deleted until a pass gets its answers.
 * Object ids that are not 20 bytes are not gw_data shards: never touched.
 *
 * Thread: the store's loop; every function on it. Does not: persist the
 * candidates (a restart starts the grace over: later, never earlier), or
 * delete shards of other OSDs.
 */
#ifndef OSD_SWEEP_H
#define OSD_SWEEP_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/metrics.h"
#include "osd/store/store.h"

#define OSD_SWEEP_GRACE_DEFAULT_MS (24ull * 3600 * 1000)
#define OSD_SWEEP_INTERVAL_DEFAULT_MS (3600ull * 1000)

struct osd_sweep;

struct osd_sweep_opts {
	uint32_t osd_id;
	const char *const *meta;     /* meta members, "host:port" or "local:NAME" */
	size_t n_meta;               /* >= 1 */
	uint64_t grace_ms;           /* unreferenced this long before delete */
	uint64_t interval_ms;        /* from the end of one pass to the next, > 0 */
	uint32_t max_candidates;     /* candidate table bound; 0: 100,000 */
	uint32_t page_keys;          /* shard keys per step, 1..1000; 0: 1000 */
	struct metrics_registry *metrics; /* NULL: no metrics; labelled osd=<id> */
};

struct osd_sweep_stats {
	uint64_t candidates;         /* unreferenced ids waiting out the grace */
	uint64_t shards_deleted;     /* since start */
	uint64_t bytes_deleted;      /* data-area extent bytes + inline bytes freed */
	uint64_t passes;             /* passes completed */
	uint64_t passes_skipped;     /* passes abandoned (meta unreachable, errors) */
};

/* Start sweeping st (opened on loop) through a meta client of its own; the
 * first pass begins interval_ms from now. 0 with *out, -EINVAL (no meta
 * member, interval 0), -EEXIST (metrics of this OSD id exist), -ENOMEM. */
int osd_sweep_start(uv_loop_t *loop, struct store *st, const struct osd_sweep_opts *opts,
		    struct osd_sweep **out);

void osd_sweep_stats(const struct osd_sweep *sw, struct osd_sweep_stats *out);

/* Stop: the meta call in flight is cancelled, store deletes in flight
 * complete; then sw is freed and done_cb(arg) runs on the loop (never from
 * inside this call). Call before closing the store. */
void osd_sweep_stop(struct osd_sweep *sw, void (*done_cb)(void *arg), void *arg);

#endif
