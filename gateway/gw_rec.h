/*
 * gw_rec.h — an object record's data as shards: whether a record keeps its
 * body inline or in multipart segments, the shard layouts it names (decoded
 * and checked against the record), and deleting those shards on the PG's
 * current OSDs.
 *
 * Below both users: the S3 handlers (a writer frees the shards of the
 * version its commit replaced or removed, after that commit) and the shard
 * GC worker gw_gc (which retries what those deletes missed). It knows
 * meta's ObjectRecord / Segment shapes, gw_data's layouts and gw_map's
 * targets; it knows nothing of S3, requests or meta calls.
 *
 * Thread: the gateway loop (gw_map and gw_data are loop-bound); the
 * record and layout functions are pure and run anywhere.
 */
#ifndef GATEWAY_GW_REC_H
#define GATEWAY_GW_REC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gateway/gw_data.h"
#include "gateway/gw_map.h"
#include "proto/meta.pb-c.h"

/* Whether r's body is inline (in r->inline_data, no shards). */
bool gw_rec_is_inline(const Iolake__Meta__ObjectRecord *r);

/* Whether r is a multipart record (its body in r->segments, each with its
 * own encoded layout, or with part_rows in its part rows: s3_prows.h; no
 * record-level data_layout). */
bool gw_rec_is_multipart(const Iolake__Meta__ObjectRecord *r);

/* r's record-level layout into *l (release with gw_data_layout_clear): 0,
 * IOL_ECORRUPT (malformed, or not matching the record's size: for an
 * encrypted record, the stored length of its size), -ENOMEM. */
int gw_rec_layout(const Iolake__Meta__ObjectRecord *r, struct gw_data_layout *l);

/* A multipart segment of r: its layout, as gw_rec_layout, checked against
 * the segment's length. */
int gw_rec_seg_layout(const Iolake__Meta__ObjectRecord *r, const Iolake__Meta__Segment *sg,
		      struct gw_data_layout *l);

/* The shard layouts r names: a multipart record one per segment (none
 * with part_rows: its rows name them), an erasure-coded one 1, an inline
 * one 0. */
size_t gw_rec_n_layouts(const Iolake__Meta__ObjectRecord *r);

/* Start deleting the shards of r's i-th layout (i < gw_rec_n_layouts) on
 * its PG's OSDs in map's current map; cb(ud, ...) follows (gw_data_delete:
 * NOT_FOUND counts as deleted). 0 (cb follows), 1 (the layout names no
 * shards: nothing to do, no cb), IOL_ECORRUPT or -EINVAL (the layout does
 * not decode or does not fit the record: it never will), -EAGAIN (no map
 * yet, or gw_data at max_ops), -ERANGE (no such PG), -ENOMEM. */
int gw_rec_drop_layout(struct gw_map *map, struct gw_data *data,
		       const Iolake__Meta__ObjectRecord *r, size_t i, gw_data_delete_cb cb,
		       void *ud);

/* Best effort: delete the shards of a version no record names any more
 * (every layout of gw_rec_drop_layout, completions only logged). What
 * fails stays in meta's GC queue for gw_gc. NULL r is ignored. */
void gw_rec_drop_shards(struct gw_map *map, struct gw_data *data,
			const Iolake__Meta__ObjectRecord *r);

/* Best effort: delete the shards of one encoded layout (a part's). */
void gw_rec_drop_encoded(struct gw_map *map, struct gw_data *data, const uint8_t *enc,
			 size_t len);

/* A gw_data_delete_cb that only logs a partial failure. */
void gw_rec_on_drop_done(void *ud, int status, uint32_t failed);

/* ---- a new version's record: the steps every PUT pipeline shares (S3's
 * PutObject and copies, UploadPart, the native protocol's Put): its body
 * in the record, the PutObject that commits it, and its shards' fate when
 * no commit took them. Builds meta's messages; does not send them. */

/* put's layout (a finished gw_data PUT) encoded into *enc (malloc'd; the
 * caller frees it once the message naming it is sent), *len bytes. 0 or
 * -ENOMEM. */
int gw_rec_put_layout(const struct gw_data_put *put, uint8_t **enc, size_t *len);

/* r's body: with put NULL inline (inl, len bytes: r points at them),
 * else put's layout encoded (gw_rec_put_layout) into *lbuf for the caller
 * to free after the commit is sent (NULL for inline). 0 or -ENOMEM. */
int gw_rec_set_body(Iolake__Meta__ObjectRecord *r, const struct gw_data_put *put,
		    uint8_t *inl, size_t len, uint8_t **lbuf);

/* op (with po, both the caller's) the PutObject that commits r: on cur's
 * generation when there is a current record, else if_none on there being
 * none (a PUT that read no record commits unconditionally); the cached
 * bucket's digest (0: none, gw_bcache.h). op's versioning is the
 * caller's (s3_rq_stamp_op). */
void gw_rec_put_op(Iolake__Meta__Op *op, Iolake__Meta__PutObject *po,
		   Iolake__Meta__ObjectRecord *r, const Iolake__Meta__ObjectRecord *cur,
		   bool if_none, uint64_t bucket_digest);

/* A new version's shards that no commit took: delete them once (put's
 * data done, *settled not yet; sets *settled), on target t. A commit
 * that took them, or may have (meta may have applied it), sets *settled
 * first instead. */
void gw_rec_drop_new(struct gw_data *data, const struct gw_data_target *t,
		     const struct gw_data_put *put, bool data_done, bool *settled);

#endif
