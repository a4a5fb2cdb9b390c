/*
 * gw_data.h — the gateway's erasure-coded data path: an object body in,
 * k+m shards per segment out to the PG's OSDs (PUT); shards in, the bytes
 * of a range out (GET); every shard of an object deleted (DELETE).
 *
 * Layout (common/proto/layout.proto, struct gw_data_layout): the body is
 * cut into segments of segment_bytes (default 4 MiB), each encoded k+m
 * into shards of ceil(len/k) bytes; shard i of segment s goes to
 * target->osds[i] under (pg, object_id || be32(s), i). The object id is
 * 16 bytes unique per PUT, so an overwrite never touches the shards of the
 * version it replaces. The caller keeps the layout in the object record.
 *
 * PUT: the caller feeds the body as it arrives; a segment is encoded when
 * full (data shards are slices of the segment buffer; parity goes in the
 * same buffer) and its k+m PutShard calls go out in parallel. At most
 * `window` segments are in flight per PUT, plus the one filling: when both
 * are taken, gw_data_put_write() accepts less than offered and on_writable
 * runs once it can take more. A segment is durable when write_quorum
 * (default k+1) shards are acked; a segment settles when every call has
 * answered, or when it reached quorum and the quorum grace (put_grace_*)
 * ran out: shards failed or still out are reported in layout.missing (for
 * repair). The PUT completes when every segment settled, so one hung OSD
 * costs a PUT the grace, not the RPC deadline; it is never acknowledged
 * below quorum. If a segment cannot reach quorum the PUT fails with
 * IOL_EUNAVAILABLE and, once every call has ended, deletes what it wrote
 * before reporting.
 *
 * GET: for a byte range, only the segments it touches and, within them,
 * only the byte ranges of the data shards it needs are read (parity OSDs
 * see no GetShard on a healthy read), at most `window` segments ahead of
 * what the consumer has taken. Every response is checked end to end (the
 * range's crc32c, and the shard's crc32c against the layout). A failed or
 * mismatching data shard makes that segment read whole shards (data first,
 * then parity) and decode. A shard whose OSD the map says is down
 * (target->down) or whose channel's circuit is not closed
 * (rpc_channel_peer_state) is not asked first: parity is read in its
 * place, and it is asked only when nothing else is left. Hedged reads: a
 * segment whose shard reads have not all answered after the hedge delay
 * (the p95 of recent shard-read latencies of this gw_data, clamped to
 * [hedge_min_ms, hedge_max_ms]) asks enough parity shards in full, in
 * addition, to decode without the slow ones, and takes whichever k answer
 * first; a slow answer that comes later is dropped. A segment's pieces
 * (one per data shard) are handed out in order as soon as they and those
 * before them are held and verified; a piece is never handed out twice
 * and never wrong. With more than m shards unreadable the consumer gets
 * IOL_EUNAVAILABLE: before any byte when it is the range's first segment
 * (that one is handed out only whole), else possibly after some bytes of
 * that segment.
 *
 * Every RPC carries a deadline (timeout_ms); a channel failure is a failed
 * shard, never a hang.
 *
 * Threads: a gw_data and all its operations live on one loop (the one the
 * channels were opened on); every function here is called on that loop's
 * thread and every callback runs there, never from inside the call that
 * caused it. Buffers it hands out may be dropped from any thread.
 *
 * Memory: segment buffers come from a pool of power-of-two size classes
 * (idle memory capped by pool_max_bytes); operations come from free lists
 * capped by max_ops. gw_data_stats() reports bytes held and their peak.
 *
 * Degraded PGs (a PUT short of shards, a GET that decoded around a bad
 * shard) are reported through opts.on_degraded; what to do is the owner's.
 *
 * Does not: choose the OSDs (the caller maps the PG), talk to meta, keep
 * small objects (gw_data_is_inline() says which ones the caller should keep
 * in the record itself), retry (a failed shard is reported, not retried).
 */
#ifndef GATEWAY_GW_DATA_H
#define GATEWAY_GW_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "common/buf.h"
#include "common/ec.h"
#include "common/rpc.h"
#include "common/shard_oid.h"
#include "common/workpool.h"
#include "gateway/gw_trace.h"

#define GW_DATA_OID_LEN SHARD_DATA_ID_LEN
#define GW_DATA_KEY_LEN SHARD_OID_LEN /* object id || be32(segment) */

/* Why gw_data tells its owner a PG looks degraded (gw_data_opts.on_degraded). */
enum gw_data_degraded {
	GW_DATA_PUT_PARTIAL,         /* a PUT completed without some of its shards */
	GW_DATA_READ_BAD_SHARD,      /* a GET decoded around a shard that failed or
	                              * mismatched on an OSD it had a channel to, or
	                              * that the layout records as missing */
};

struct gw_data_opts {
	unsigned k, m;               /* 0, 0: 4+2 */
	uint32_t segment_bytes;      /* data bytes per segment; 0: 4 MiB; max 256 MiB */
	unsigned write_quorum;       /* acks per segment; 0: k+1 (k+m when m == 0) */
	unsigned window;             /* segments in flight per PUT / ahead per GET; 0: 2 */
	uint32_t timeout_ms;         /* deadline of each RPC; 0: 10000 */
	uint32_t inline_max_bytes;   /* see gw_data_is_inline; 0: 4096 */
	uint32_t max_ops;            /* live puts + gets + deletes; 0: 4096 */
	uint64_t pool_max_bytes;     /* idle pooled buffer memory kept; 0: 256 MiB */
	/* Hedged reads: the delay is the p95 of recent shard reads clamped
	 * to [hedge_min_ms, hedge_max_ms]; 0, 0: [5, 500]. hedge_off: never
	 * (also set by IOLAKE_GW_HEDGE=off in the environment). */
	uint32_t hedge_min_ms, hedge_max_ms;
	bool hedge_off;
	/* Quorum PUTs: a segment whose write_quorum shards are stored waits
	 * for the others at most twice the p99 of recent shard writes,
	 * clamped to [put_grace_min_ms, put_grace_max_ms] (0, 0: [20, 500]);
	 * shards still out then are recorded missing (layout.missing, the
	 * PG flagged GW_DATA_PUT_PARTIAL) and the segment counts as written.
	 * put_grace_off: wait for every shard call (the deadline bounds it). */
	uint32_t put_grace_min_ms, put_grace_max_ms;
	bool put_grace_off;
	/* PG pg looks degraded (see enum gw_data_degraded): at most once per
	 * PUT or GET, on the loop, from inside gw_data; it must only record
	 * the PG (not call into gw_data). A shard on a known-down OSD (NULL
	 * channel, or down in the map) does not make a GET report; one whose
	 * RPC circuit is open does (up in the map, yet unreachable). NULL:
	 * nobody is told. */
	void (*on_degraded)(void *ud, uint32_t pg, enum gw_data_degraded why);
	void *degraded_ud;
	/* An OSD refused a shard of a PUT as placed with an older map than
	 * its own (FAILED_PRECONDITION "misplaced", PutShardRequest.map_epoch):
	 * the owner's map is stale. On the loop, from inside gw_data, once
	 * per refused shard; it must not call into gw_data. The shard counts
	 * as failed either way. NULL: nobody is told. */
	void (*on_stale_map)(void *ud);
	void *stale_map_ud;
	/* The ETag's MD5 of a PUT of at least hash_min_bytes (0: 128 KiB) is
	 * computed on this pool's threads, a segment at a time, while the
	 * segments are encoded and sent; on_done waits for it. NULL: on the
	 * loop as the bytes are written. The pool outlives the gw_data. */
	struct workpool *hash_pool;
	uint32_t hash_min_bytes;
};

/* Where an object's shards go: the PG and its ordered OSD set. */
struct gw_data_target {
	uint32_t pg;
	/* osds[i] holds shard i (k+m entries), each opened on the gw_data's
	 * loop. NULL: known down, that shard fails without a call. */
	struct rpc_channel *osds[EC_MAX_SHARDS];
	/* Bit i: the map says shard i's OSD is down (gw_map_target). A GET
	 * reads it only when nothing else is left; a PUT still writes it
	 * (the call fails at once while the OSD's circuit is open). */
	uint32_t down;
	uint32_t osd_ids[EC_MAX_SHARDS]; /* shard i's OSD id, for traces (0: none) */
	/* The map epoch these slots come from: every PutShard carries it, and
	 * an OSD with a newer map that no longer holds the slot refuses the
	 * write (PutShardRequest.map_epoch). 0: not checked. */
	uint64_t epoch;
	/* The S3 request this I/O is for (zero: none, as gc and heal): every
	 * shard call carries its id (rpc_call_opts.request_id, copied at
	 * start) and its time goes in the trace's OSD hop while the trace is
	 * still that request's (gateway/gw_trace.h). */
	struct gw_trace_ref trace;
};

/* The shard layout of one stored object (see layout.proto). */
struct gw_data_layout {
	uint32_t k, m;
	uint32_t segment_bytes;
	uint32_t pg;
	uint64_t size;
	uint8_t object_id[GW_DATA_OID_LEN];
	uint32_t nsegs;              /* derived: ceil(size / segment_bytes) */
	uint32_t *crcs;              /* nsegs * (k+m) crc32c, [s*(k+m)+i] */
	uint32_t *missing;           /* nsegs masks: shards not stored */
};

struct gw_data_stats {
	uint64_t puts, puts_failed, put_bytes;
	uint64_t gets, gets_failed, get_bytes;     /* get_bytes: handed to consumers */
	uint64_t deletes;
	uint64_t segments_put, segments_read;
	uint64_t decodes;                          /* segments rebuilt from parity */
	uint64_t shard_puts, shard_put_failures;
	uint64_t shard_puts_abandoned;             /* still out at the quorum grace: recorded missing */
	uint64_t shard_puts_late;                  /* ... whose call ended after the segment settled */
	uint64_t shard_gets_late;                  /* shard reads still out when their segment
						    * was emitted (its slot went on without them) */
	uint64_t shard_gets, shard_get_failures;
	uint64_t shard_gets_by_index[EC_MAX_SHARDS]; /* GetShard calls per shard index */
	uint64_t crc_mismatches;                   /* responses failing the end-to-end check */
	uint64_t hedges;                           /* segments that asked parity for slow reads */
	uint64_t hedge_wins;                       /* ... and were decoded before the slow read came */
	uint64_t shard_gets_avoided;               /* data shard reads not tried first: OSD down/circuit open */
	uint32_t hedge_delay_ms;                   /* the hedge delay now */
	uint64_t shard_deletes, shard_delete_failures;
	uint64_t buffered_bytes, buffered_peak;    /* segment/decode buffers + held responses */
	uint64_t pool_idle_bytes;                  /* freed buffers the pool keeps (pool_max_bytes) */
	uint32_t live_ops;                         /* a PUT stays live until its late calls end */
	uint32_t put_grace_ms;                     /* the quorum grace now */
};

struct gw_data;

/* A data path on loop (opts may be NULL). Returns 0 with *out, -EINVAL
 * (bad k/m/quorum/segment size), -ENOMEM. */
int gw_data_new(uv_loop_t *loop, const struct gw_data_opts *opts, struct gw_data **out);

/* Release d. Requires no live operation (gw_data_stats().live_ops == 0: a
 * freed GET may live on until its calls end; closing the channels ends
 * them). The memory goes on a later loop turn (a libuv handle closes). */
void gw_data_free(struct gw_data *d);

/* The p95 of shard reads from OSD osd_id in microseconds, as the hedge
 * delay reads it (gw_data_get.c); 0 until it has enough samples. */
uint32_t gw_data_osd_read_p95_us(const struct gw_data *d, uint32_t osd_id);

void gw_data_stats(const struct gw_data *d, struct gw_data_stats *out);

/* Whether an object of size bytes should live wholly in its meta record
 * (size <= inline_max_bytes) instead of going to OSDs. */
bool gw_data_is_inline(const struct gw_data *d, uint64_t size);

/* ------------------------------------------------------------ layout */

/* Segment count, and the length of segment s and of its shards. */
uint32_t gw_data_layout_nsegs(uint64_t size, uint32_t segment_bytes);
uint32_t gw_data_layout_seg_len(const struct gw_data_layout *l, uint32_t s);
uint32_t gw_data_layout_shard_len(const struct gw_data_layout *l, uint32_t s);

/* Bytes gw_data_layout_encode() writes for l. */
size_t gw_data_layout_encoded_len(const struct gw_data_layout *l);

/* The encoded record (layout.proto) into out (cap bytes). Returns the
 * length, or -ENOSPC when cap is short (size it with
 * gw_data_layout_encoded_len). */
ssize_t gw_data_layout_encode(const struct gw_data_layout *l, uint8_t *out, size_t cap);

/* Parse and validate a record into *l (arrays allocated; release with
 * gw_data_layout_clear). 0, or IOL_ECORRUPT for anything malformed or
 * inconsistent, -ENOMEM. */
int gw_data_layout_decode(const uint8_t *in, size_t len, struct gw_data_layout *l);

/* Deep copy; 0 or -ENOMEM. */
int gw_data_layout_copy(struct gw_data_layout *dst, const struct gw_data_layout *src);

/* Free the arrays and zero *l. */
void gw_data_layout_clear(struct gw_data_layout *l);

/* ------------------------------------------------------------ PUT */

struct gw_data_put;

struct gw_data_put_cbs {
	/* gw_data_put_write() took less than offered: it may take more now. */
	void (*on_writable)(struct gw_data_put *p, void *ud);
	/* The PUT is over: 0 (every segment has a write quorum; read the
	 * layout and ETag now), IOL_EUNAVAILABLE (a segment could not reach
	 * quorum; what was written has been deleted, best effort),
	 * -ECANCELED (aborted), -ENOMEM. Exactly once, unless freed first. */
	void (*on_done)(struct gw_data_put *p, int status, void *ud);
};

/*
 * Start a PUT of exactly size bytes to target (copied). object_id: 16
 * bytes, or NULL to draw a random one. cbs is copied. Returns 0 with *out,
 * -EINVAL (size too large for the layout), -EAGAIN (max_ops live), -ENOMEM.
 */
int gw_data_put_start(struct gw_data *d, const struct gw_data_target *target, uint64_t size,
		      const uint8_t *object_id, const struct gw_data_put_cbs *cbs, void *ud,
		      struct gw_data_put **out);

/*
 * Where the next body bytes go: *out is the free end of the segment being
 * filled (a buffer is taken from the pool if none is), and the return
 * value how many bytes fit there (at most max; 0 when the PUT failed,
 * finished, has no memory, or its filling segment is full and waits for
 * a slot). Bytes the caller puts there count only once it feeds them with
 * gw_data_put_write(p, *out, n) before anything else touches p: then they
 * are not copied. The memory stays p's.
 */
size_t gw_data_put_buf(struct gw_data_put *p, size_t max, uint8_t **out);

/*
 * Feed body bytes (copied into the segment being filled, unless they are
 * there already: gw_data_put_buf). Returns how many
 * were taken (0..len): fewer than len when `window` segments are in flight
 * and the next one is full, and on_writable follows once more fit.
 * Negative: the PUT has failed or was over-fed (-EMSGSIZE past size); stop
 * feeding, on_done reports (or reported) the status.
 */
ssize_t gw_data_put_write(struct gw_data_put *p, const void *data, size_t len);

/* The body is complete. -EMSGSIZE (p failed) if fewer than size bytes
 * came; else 0, and on_done follows once the last segment is settled. */
int gw_data_put_finish(struct gw_data_put *p);

/* The caller needs no ETag (it hashes the bytes itself, or they are
 * ciphertext: s3_sse): the MD5 pass is skipped and gw_data_put_etag is
 * "". Before the first gw_data_put_write. */
void gw_data_put_no_etag(struct gw_data_put *p);

/* Give up (client went away, body failed its signature): no more segments
 * go out; what was written is deleted; on_done(-ECANCELED) follows unless
 * the PUT was already over. */
void gw_data_put_abort(struct gw_data_put *p);

/* After on_done(0): the layout (valid until gw_data_put_free) and the
 * ETag, lower-case hex MD5 of the body (33 bytes with the NUL). */
const struct gw_data_layout *gw_data_put_layout(const struct gw_data_put *p);
const char *gw_data_put_etag(const struct gw_data_put *p);

/* Why the PUT failed, or "" — names the segment and shards. */
const char *gw_data_put_error(const struct gw_data_put *p);

/* Release p. Before on_done it aborts first (calls still running finish on
 * their own; on_done is not called). */
void gw_data_put_free(struct gw_data_put *p);

/* ------------------------------------------------------------ GET */

struct gw_data_get;

/* Something changed after gw_data_get_read() returned -EAGAIN: read again. */
typedef void (*gw_data_get_readable_cb)(struct gw_data_get *g, void *ud);

/*
 * Start reading bytes [off, off+len) of the object laid out as l (not
 * copied: it must stay valid until gw_data_get_free) from target (copied). Any k+m is accepted (objects written under an
 * older setting): codes are built once per (k, m) and cached. Returns 0
 * with *out, -EINVAL (range past the object, inconsistent layout), -EAGAIN
 * (max_ops live), -ENOMEM.
 */
int gw_data_get_start(struct gw_data *d, const struct gw_data_target *target,
		      const struct gw_data_layout *l, uint64_t off, uint64_t len,
		      gw_data_get_readable_cb cb, void *ud, struct gw_data_get **out);

/*
 * The next bytes of the range, in order. Returns 1 with *out (a reference
 * now the caller's: buf_unref(out->buf) when written out), 0 when the
 * whole range has been handed out, -EAGAIN when nothing is ready (the
 * readable callback runs once something is), or IOL_EUNAVAILABLE (a
 * segment could not be read from enough shards) / -ENOMEM: the GET has
 * failed and hands out nothing more. A piece is at most one shard long.
 * Read-ahead is bounded by what the caller has taken, so a caller that
 * stops reading stops the OSD reads.
 */
int gw_data_get_read(struct gw_data_get *g, struct buf_slice *out);

/* Why the GET failed, or "". */
const char *gw_data_get_error(const struct gw_data_get *g);

/* Release g at any point; calls in flight finish on their own. */
void gw_data_get_free(struct gw_data_get *g);

/* ------------------------------------------------------------ DELETE */

/* Done: 0, or IOL_EUNAVAILABLE with failed > 0 shard deletes that failed
 * (NOT_FOUND counts as deleted). */
typedef void (*gw_data_delete_cb)(void *ud, int status, uint32_t failed);

/* DeleteShard every segment-shard of l (best effort, window*(k+m) calls in
 * flight). l and target are copied. 0 (cb follows), -EAGAIN, -ENOMEM. */
int gw_data_delete(struct gw_data *d, const struct gw_data_target *target,
		   const struct gw_data_layout *l, gw_data_delete_cb cb, void *ud);

#endif
