/*
 * range_move.h — the driver of a move of records between range groups:
 * splits of non-empty ranges and merges (meta.proto MoveRange; design in
 * docs/architecture.md, "Moving a range").
 *
 * The move's state is durable in the root's range table (the row's
 * move_phase), so whoever drives it — iolake-admin, a test, the root
 * leader after a crash or a leader change — resumes it where the table
 * and the groups say it is; every step is idempotent:
 *
 *   COPY     split: turn on the source range's change feed (FeedRange);
 *            read its records in batches (ReadRange, unsealed) and write
 *            them into the target group (IngestRange) under the range id
 *            the move makes, sealed there, from the target's own cursor;
 *            then catch up: the changes made since (ReadRange feed), each
 *            key's rows replaced in the target (IngestRange feed) from the
 *            target's feed cursor, until fewer than META_MOVE_TAIL are
 *            left; seal the source (for_move: not empty) and send the
 *            rest. Merge, and a split within one group: seal (both
 *            ranges), then copy as above.
 *            Then open the split's left half in the source with its
 *            counters; unseal the target range; MoveRangeStep(CLEANUP)
 *            switches the root's table.
 *   CLEANUP  drop the moved span from the source group (DropRange, in
 *            bounded entries), then MoveRangeStep(NONE).
 *
 * While a range is sealed (a split: only for the tail) its object ops
 * answer WRONG_RANGE and routed clients wait (meta/route.c backs off while the table says the range is
 * moving). Thread: the client's loop.
 */
#ifndef META_RANGE_MOVE_H
#define META_RANGE_MOVE_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "meta/client.h"

#define META_MOVE_BATCH_RECORDS 2000
#define META_MOVE_BATCH_BYTES (512u << 10)   /* under one Raft entry (1 MiB) */
/* A split seals its source once fewer changes than this are left to
 * catch up (the writes that wait are those of the last batches), or when
 * a catch-up batch left more changes than the one before (writes that
 * outrun the catch-up: the tail would only grow), or after
 * META_MOVE_CATCHUP_ROUNDS catch-up batches. */
#define META_MOVE_TAIL 256
#define META_MOVE_CATCHUP_ROUNDS 64

struct meta_move_stats {
	uint64_t moves;                /* moves finished */
	uint64_t records, batches;     /* records and IngestRange entries copied */
	uint64_t dropped;              /* records dropped from sources */
	uint64_t catchups, changes;    /* a split's catch-up batches, keys replaced */
	uint64_t sealed_ms;            /* the last move's seal → switch time */
	uint64_t sealed_ms_total;
};

struct meta_move_opts {
	uint32_t batch_records;        /* 0: META_MOVE_BATCH_RECORDS */
	uint32_t batch_bytes;          /* 0: META_MOVE_BATCH_BYTES */
	/* Test hook: stop (as a crash would) after this many IngestRange
	 * entries of a move; 0: never. The driver finishes with -EINTR. */
	uint32_t stop_after_batches;
	/* Test hook (a planted bug for the simulation): skip the last batch. */
	bool drop_last_batch;
};

typedef void (*meta_move_cb)(void *ud, int err, const struct meta_move_stats *st);

/* Drive every move of bucket (bucket "": of any bucket the root's table
 * shows moving) to its end, then cb(ud, 0, stats). Errors: what the
 * calls answered (the move stays where it got to, for the next driver).
 * 0, or -ENOMEM (cb does not run then). */
int meta_move_drive(struct meta_client *c, uv_loop_t *loop, const char *bucket,
		    const struct meta_move_opts *o, meta_move_cb cb, void *ud);

/* MoveRange, then drive it: split range_id of bucket at key (merge:
 * range_id and the range starting at key). CONFLICT (a move of the bucket
 * under way), NOT_FOUND, INVALID answer as -EBUSY, IOL_ENOT_FOUND,
 * -EINVAL. */
int meta_move_start(struct meta_client *c, uv_loop_t *loop, const char *bucket,
		    uint64_t range_id, const char *key, bool merge, uint64_t target_group,
		    const struct meta_move_opts *o, meta_move_cb cb, void *ud);

#endif
