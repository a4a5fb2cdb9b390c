/*
 * gw_ec.h — the gateway's erasure-coded object I/O, as the S3 operations
 * (gateway/s3_ops) need it: PUT a streamed body as k+m shards per segment
 * to a PG's OSDs, GET a byte range back (decoding from parity when a data
 * shard is missing or fails its check), DELETE every shard of an object.
 *
 * WHY THIS EXISTS: the full data path is gateway/gw_data* on the `data`
 * branch, which had not landed when the S3 operations were written. This
 * module is the thin stand-in the operations are written against; its API
 * mirrors gw_data.h's (put_start/write/finish, get_start/read, delete) so
 * switching is mechanical. It deliberately does less: no per-shard crc in
 * the record (the OSD verifies its own crc32c on every read and each
 * GetShard answer is checked against its range_crc32c end to end), no
 * pooled buffers (one malloc per segment), no partial-shard reads.
 *
 * Layout (what the object record keeps, meta.proto EcLayout + Segment):
 * the body is cut into segments of k * chunk bytes (the last shorter);
 * segment s of length L is encoded into k+m shards of ceil(L/k) bytes
 * (data zero-padded) and shard i goes to target->osds[i] under
 * ShardKey{pg, be64(shard_id) || be32(s), i}. shard_id is random per PUT,
 * so an overwrite never touches the shards of the version it replaces.
 *
 * PUT: gw_ec_put_write() always takes every byte offered (the HTTP layer
 * hands out a read buffer at a time); its return says whether the caller
 * should pause the body (`window` segments in flight and one more sealed):
 * on_writable then runs once it may resume. So a PUT holds at most
 * window + 2 segments. A segment is durable when write_quorum shards (k+1
 * by default) acked; with fewer, the PUT fails IOL_EUNAVAILABLE and what it
 * wrote is deleted (best effort).
 *
 * GET: reads the k data shards of each segment touched (parity OSDs see no
 * call on a healthy read), at most `window` segments ahead of what the
 * consumer took; on any failed or mismatching data shard it reads the
 * parity shards and decodes. With fewer than k good shards the GET fails
 * IOL_EUNAVAILABLE before handing out any byte of that segment: never
 * wrong bytes.
 *
 * Thread: one loop (the channels'); every call and callback on it;
 * callbacks never run from inside the call that caused them.
 */
#ifndef GATEWAY_GW_EC_H
#define GATEWAY_GW_EC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/buf.h"
#include "common/ec.h"
#include "common/rpc.h"

#define GW_EC_OID_LEN 12 /* be64(shard_id) || be32(segment) */

struct gw_ec_opts {
	unsigned k, m;          /* 0, 0: 4+2 */
	uint32_t chunk_bytes;   /* shard bytes of a full segment; 0: 256 KiB */
	unsigned write_quorum;  /* 0: k+1 (k when m == 0) */
	unsigned window;        /* segments in flight per op; 0: 2 */
	uint32_t timeout_ms;    /* deadline of each RPC; 0: 10000 */
};

/* Where an object's shards live: slot i holds shard i; NULL: no OSD. */
struct gw_ec_target {
	uint32_t pg;
	struct rpc_channel *osds[EC_MAX_SHARDS];
};

/* What the object record keeps (meta.proto EcLayout/Segment). */
struct gw_ec_layout {
	uint32_t k, m;
	uint32_t chunk_bytes;
	uint32_t pg;
	uint64_t size;
	uint64_t shard_id;
};

struct gw_ec_stats {
	uint64_t puts, puts_failed, gets, gets_failed, deletes;
	uint64_t segments_put, segments_read, decodes;
	uint64_t shard_puts_failed, shard_gets_failed;
};

struct gw_ec;

/* 0 and *out, -EINVAL (bad k/m/quorum), -ENOMEM. Loop thread. */
int gw_ec_new(uv_loop_t *loop, const struct gw_ec_opts *opts, struct gw_ec **out);
/* Before the channels close: no new shard call is issued from now on
 * (deletes still queued count their shards as failed). */
void gw_ec_shutdown(struct gw_ec *e);
/* Release e. Requires no live put or get (freed ones included: their
 * calls must have come back, e.g. because the channels were closed).
 * Deletes still running keep e alive until they finish. */
void gw_ec_free(struct gw_ec *e);
void gw_ec_stats(const struct gw_ec *e, struct gw_ec_stats *out);
unsigned gw_ec_k(const struct gw_ec *e);
unsigned gw_ec_m(const struct gw_ec *e);

/* Segments of an object of l->size bytes. */
uint32_t gw_ec_nsegs(const struct gw_ec_layout *l);

/* ------------------------------------------------------------ PUT */

struct gw_ec_put;
struct gw_ec_put_cbs {
	void (*on_writable)(struct gw_ec_put *p, void *ud);
	/* 0: every segment has a write quorum (layout and etag readable);
	 * IOL_EUNAVAILABLE; -ECANCELED (aborted); -ENOMEM. Exactly once,
	 * unless freed first. */
	void (*on_done)(struct gw_ec_put *p, int status, void *ud);
};

/* Start a PUT of exactly size bytes (size > 0) to target (copied).
 * 0 and *out, -ENOMEM. */
int gw_ec_put_start(struct gw_ec *e, const struct gw_ec_target *target, uint64_t size,
		    const struct gw_ec_put_cbs *cbs, void *ud, struct gw_ec_put **out);
/* Feed body bytes (all taken, copied). Returns 1 when the caller should
 * pause the body until on_writable, 0 to keep going, -EMSGSIZE past size,
 * or the PUT's failure (stop feeding; on_done reports). */
int gw_ec_put_write(struct gw_ec_put *p, const void *data, size_t len);
/* The body is complete: -EMSGSIZE if short, else 0 and on_done follows. */
int gw_ec_put_finish(struct gw_ec_put *p);
/* Stop; delete what was written; on_done(-ECANCELED) unless already over. */
void gw_ec_put_abort(struct gw_ec_put *p);
/* After on_done(0). etag: lower-case hex MD5, 33 bytes with NUL. */
const struct gw_ec_layout *gw_ec_put_layout(const struct gw_ec_put *p);
const char *gw_ec_put_etag(const struct gw_ec_put *p);
const char *gw_ec_put_error(const struct gw_ec_put *p);
/* Release p (aborts first if still running; on_done is then not called). */
void gw_ec_put_free(struct gw_ec_put *p);

/* ------------------------------------------------------------ GET */

struct gw_ec_get;
typedef void (*gw_ec_readable_cb)(struct gw_ec_get *g, void *ud);

/* Read [off, off+len) of the object laid out as l from target (both
 * copied). 0 and *out, -EINVAL (range outside the object, bad layout),
 * -ENOMEM. */
int gw_ec_get_start(struct gw_ec *e, const struct gw_ec_target *target,
		    const struct gw_ec_layout *l, uint64_t off, uint64_t len, gw_ec_readable_cb cb,
		    void *ud, struct gw_ec_get **out);
/* 1 with *out (a reference: buf_unref(out->buf) when written), 0 at the
 * end of the range, -EAGAIN (cb follows when something is ready), or
 * IOL_EUNAVAILABLE / -ENOMEM: failed, nothing more comes. */
int gw_ec_get_read(struct gw_ec_get *g, struct buf_slice *out);
const char *gw_ec_get_error(const struct gw_ec_get *g);
/* Release g at any point; calls in flight finish on their own. */
void gw_ec_get_free(struct gw_ec_get *g);

/* ------------------------------------------------------------ DELETE */

/* DeleteShard every shard of l (best effort; NOT_FOUND counts as done).
 * cb(ud, 0 or IOL_EUNAVAILABLE, failed) follows; cb may be NULL.
 * 0 or -ENOMEM. */
typedef void (*gw_ec_delete_cb)(void *ud, int status, uint32_t failed);
int gw_ec_delete(struct gw_ec *e, const struct gw_ec_target *target,
		 const struct gw_ec_layout *l, gw_ec_delete_cb cb, void *ud);

#endif
