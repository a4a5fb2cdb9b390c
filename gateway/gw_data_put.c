/*
 * gw_data_put.c — streaming erasure-coded PUT: body bytes in, one segment
 * at a time encoded k+m and fanned out as PutShard calls.
 *
 * Memory: a PUT holds at most `window` segment buffers in flight plus the
 * one being filled, each (k+m) * shard_len bytes from the pool, and at
 * most `window` more that calls still out after their segment's quorum
 * grace keep alive (late blocks: the transport holds a slice of the
 * buffer until the call ends; a PUT with `window` of them waits): the data
 * shards are slices of the bytes the caller fed (copied once, from the
 * HTTP read buffer, or read there by the socket: gw_data_put_buf), the
 * parity shards follow them in the same buffer. A buffer goes back when
 * its calls have ended and the transport has let go of it, and (hash
 * threads: gw_data_opts.hash_pool) when the jobs that MD5 its data bytes
 * are done. The ETag's MD5 is fed as the body arrives:
 * every HASH_FEED_BYTES appended to the segment being filled go to the
 * hash service at once (bytes of a block are written once: read-only
 * from the copy on), the rest of the segment when it is sent; so the
 * digest is ready about when the last byte arrives, and many PUTs'
 * chunks share MD5 lanes (common/md5_svc). Hash jobs complete in order,
 * so the sent blocks they still hold are counted exactly (hblk: the last
 * job of each); slot_free keeps them below `window`, so a PUT holds at
 * most 3 * window + 1 blocks. A PUT has window + HASH_FEED_SLOTS hash
 * slots: a 4 MiB segment's 32 chunks fit, one is kept for the send.
 *
 * Invariants: p->inflight counts busy segment slots; a slot is busy from
 * send until every one of its k+m calls has answered, or until it reached
 * write_quorum and its grace ran out (the quorum grace: 2 x the p99 of
 * recent shard writes, clamped; on d->hq): the calls still out are then
 * recorded missing and the slot is reused. Each call has its own small
 * context (struct put_call, heap): a call that ends after its segment
 * settled (a late call) only counts itself. p->calls_out counts every
 * call on the wire, late ones included, and p is not reused (put_release
 * waits, the op stays live) until it is 0: a late call's context points
 * at p. Once p->status is set no segment goes out; when the last slot
 * drains and no call is out the segments sent are deleted, then on_done
 * reports. on_done and on_writable run from RPC callbacks, the hq timer
 * or the deferred kick, never inside a gw_data_put_* call.
 *
 * Loop: the gw_data's.
 *
 * Owns a PUT's segment slots, buffers and shard calls. Does not commit
 * anything nor know records: the caller gets the layout and ETag.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/crc.h"
#include "common/err.h"
#include "common/hash.h"
#include "common/hash_async.h"
#include "gateway/gw_data.h"
#include "gateway/gw_data_int.h"

/* The ETag's MD5 is fed every HASH_FEED_BYTES of body (64-256 KiB: big
 * enough that a job's hop to the hash thread and back is noise, small
 * enough that the last chunk is hashed soon after the last byte). */
#define HASH_FEED_BYTES (128u << 10)
/* Hash jobs a PUT may have out beyond `window` (its slots: window + this):
 * a 4 MiB segment's chunks and its send's, so the feed never stalls on
 * slots there (a stalled feed leaves the rest to one chunk at the send,
 * hashed alone in its lane). */
#define HASH_FEED_SLOTS 34u

/* One PutShard call on the wire. */
struct put_call {
	struct gw_data_put *p;
	struct put_seg *seg;
	uint32_t use;            /* seg->use when sent: another value, a late call */
	uint32_t shard;
	uint64_t t0_us;          /* sent (shard write latencies, gw_lat) */
	uint64_t t0_ns;          /* sent (the request's trace) */
	unsigned *late;          /* its segment settled with it out: the calls
				  * of that block still out (shared, heap) */
	struct put_call *next_free; /* d->free_pcalls */
};

struct put_seg {
	struct gw_data_put *p;
	bool busy;
	uint32_t use;            /* bumped at each send */
	uint32_t index;          /* segment number */
	uint32_t sl;             /* shard length */
	struct buf *blk;         /* k data shards, then m parity, sl bytes each */
	uint32_t pending;        /* calls not answered */
	uint32_t out;            /* shard mask of those calls */
	uint32_t ok, fail;       /* shard masks */
	struct gwd_hnode grace;  /* on d->hq: quorum reached, others still out */
	struct put_call *calls[EC_MAX_SHARDS];   /* the calls of mask `out` */
};

struct gw_data_put {
	struct gw_data *d;
	struct gw_data_put *next_free;
	struct gwd_deferred dfr;
	struct gwd_walk walk;     /* cleanup after a failure */
	struct gw_data_target t;
	struct gw_data_put_cbs cbs;
	void *ud;
	struct gw_data_layout layout;
	unsigned n, quorum;
	uint64_t fed;             /* body bytes taken */
	uint32_t next_send;       /* segment being filled (= segments sent) */
	struct buf *cur;          /* its buffer, or NULL */
	uint32_t cur_len;
	unsigned inflight;        /* busy slots */
	unsigned late_blocks;     /* settled segments' buffers late calls hold */
	unsigned calls_out;       /* PutShard calls on the wire, late ones included */
	bool release_wait;        /* put_release waits for calls_out == 0 */
	int status;               /* first failure, or 0 */
	bool finished;            /* gw_data_put_finish accepted */
	bool want_writable;       /* a write was short */
	bool freed;               /* the caller has let go: no callbacks */
	bool walk_started, walking, in_walk_start;
	bool done;
	struct hash_async *md5;   /* kept across reuse (the ETag's MD5) */
	bool no_etag;             /* gw_data_put_no_etag: the MD5 is not computed */
	bool hash_off_loop;       /* MD5 per chunk of the body on the hash pool */
	uint32_t hashed;          /* bytes of cur given to the hash service */
	uint32_t hash_seq;        /* hash jobs submitted */
	uint32_t hash_done;       /* hash jobs completed (in order) */
	unsigned hblk_n, hblk_head; /* ring of sent blocks hash jobs still hold: */
	uint32_t hblk[65];        /* the hash_seq of each one's last job (n < window <= 64) */
	char etag[2 * MD5_LEN + 1];
	char rid[LOG_REQ_ID_LEN + 1]; /* the request id every PutShard carries ("" none) */
	char err[320];
	struct put_seg segs[];    /* window */
};

static void put_progress(struct gw_data_put *p);
static uint32_t put_grace_of(const struct gw_data *d, uint32_t us);

static void put_fail(struct gw_data_put *p, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void put_fail(struct gw_data_put *p, int status, const char *fmt, ...)
{
	if (p->status)
		return;
	p->status = status;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->err, sizeof(p->err), fmt, ap);
	va_end(ap);
}

static void seg_shard_failed(struct put_seg *seg, uint32_t i, const char *why)
{
	struct gw_data_put *p = seg->p;
	seg->fail |= 1u << i;
	p->d->st.shard_put_failures++;
	unsigned nfail = (unsigned)__builtin_popcount(seg->fail);
	if (nfail > p->n - p->quorum)
		put_fail(p, IOL_EUNAVAILABLE,
			 "segment %u: %u of %u shard writes failed, write quorum %u "
			 "impossible (shard %u: %s)",
			 seg->index, nfail, p->n, p->quorum, i, why);
}

uint32_t gwd_put_grace_ms(const struct gw_data *d)
{
	return put_grace_of(d, gw_lat_get(&d->plat));
}

/* The grace of a segment of p: 2 x the lower median of its OSDs' p99s of
 * shard writes (one slow OSD moves only its own: see gwd_osd_median_us),
 * clamped; the p99 of all writes while too few are known. */
static uint32_t seg_grace_ms(const struct gw_data_put *p)
{
	const struct gw_data *d = p->d;
	return put_grace_of(d, gwd_osd_median_us(&d->oplat, p->t.osd_ids, p->n,
						 gw_lat_get(&d->plat)));
}

static uint32_t put_grace_of(const struct gw_data *d, uint32_t us)
{
	uint32_t ms = 2 * ((us + 999) / 1000);
	return ms < d->o.put_grace_min_ms ? d->o.put_grace_min_ms
	       : ms > d->o.put_grace_max_ms ? d->o.put_grace_max_ms : ms;
}

/* Call contexts from d's free list (the loop's only). */
static struct put_call *call_get(struct gw_data *d)
{
	struct put_call *c = d->free_pcalls;
	if (c)
		d->free_pcalls = c->next_free;
	else
		c = malloc(sizeof(*c));
	return c;
}

static void call_put(struct gw_data *d, struct put_call *c)
{
	c->next_free = d->free_pcalls;
	d->free_pcalls = c;
}

static void seg_settle(struct put_seg *seg)
{
	struct gw_data_put *p = seg->p;
	gwd_hq_del(p->d, &seg->grace);
	/* Shards still out are missing: their calls may yet land (repair
	 * rewrites them) or not. */
	p->layout.missing[seg->index] = seg->fail | seg->out;
	if (seg->out) {
		/* Late calls keep a slice of seg->blk: count the block until
		 * the last of them ends (on_late_put). Untracked if out of
		 * memory: the bound then holds only as the calls end. */
		unsigned *late = malloc(sizeof(*late));
		if (late) {
			*late = 0;
			for (unsigned i = 0; i < p->n; i++)
				if (seg->out & (1u << i)) {
					seg->calls[i]->late = late;
					(*late)++;
				}
			p->late_blocks++;
		}
	}
	buf_unref(seg->blk);
	seg->blk = NULL;
	seg->busy = false;
	p->inflight--;
}

static void put_release(struct gw_data_put *p);

/* The quorum grace of seg ran out: what is still out is missing. */
static void seg_grace_fire(struct gwd_hnode *h)
{
	struct put_seg *seg = container_of(h, struct put_seg, grace);
	struct gw_data_put *p = seg->p;
	if (!seg->busy || !seg->pending)
		return;
	p->d->st.shard_puts_abandoned += (unsigned)__builtin_popcount(seg->out);
	seg_settle(seg);
	put_progress(p);
}

/* A call that ended after its segment settled: count it; the last call
 * of a PUT its owner let go of releases it. */
static void on_late_put(struct put_call *c)
{
	struct gw_data_put *p = c->p;
	p->d->st.shard_puts_late++;
	bool block_back = false;
	if (c->late && --*c->late == 0) {
		free(c->late);
		p->late_blocks--;
		block_back = true;
	}
	call_put(p->d, c);
	if (p->calls_out) {
		if (block_back && !p->release_wait)
			put_progress(p);   /* a segment may wait for that block */
		return;
	}
	if (p->release_wait)
		put_release(p);
	else
		put_progress(p);   /* a failed PUT's cleanup waits for calls_out == 0 */
}

static void on_put(void *ud, const struct rpc_result *res)
{
	struct put_call *c = ud;
	struct gw_data_put *p = c->p;
	struct put_seg *seg = c->seg;
	uint32_t i = c->shard;
	p->calls_out--;
	if (!seg->busy || seg->use != c->use) {
		on_late_put(c);
		return;
	}
	const Iolake__Osd__PutShardResponse *r = (const void *)res->resp;
	seg->pending--;
	struct gw_trace *t = gw_trace_get(&p->t.trace);
	if (t)
		gw_trace_call_end(&t->osd, c->t0_ns, loop_now_ns(), p->t.osd_ids[i],
				  res->status == RPC_OK);
	seg->out &= ~(1u << i);
	seg->calls[i] = NULL;
	if (res->status == RPC_OK && r && r->info &&
	    r->info->crc32c == p->layout.crcs[(size_t)seg->index * p->n + i] &&
	    r->info->length == seg->sl) {
		seg->ok |= 1u << i;
		uint64_t us = (uv_hrtime() / 1000) - c->t0_us;
		gw_lat_add(&p->d->plat, us);
		gwd_osd_lat_add(&p->d->oplat, p->t.osd_ids[i], us);
	} else {
		char why[200];
		if (res->status == RPC_OK)
			snprintf(why, sizeof(why), "ack names another length or crc32c");
		else
			snprintf(why, sizeof(why), "%s: %s", rpc_status_name(res->status),
				 res->message);
		if (res->status == RPC_FAILED_PRECONDITION && p->d->o.on_stale_map &&
		    strstr(res->message, "misplaced"))
			p->d->o.on_stale_map(p->d->o.stale_map_ud);
		seg_shard_failed(seg, i, why);
	}
	call_put(p->d, c);
	if (!seg->pending)
		seg_settle(seg);
	else if (!p->status && !p->d->o.put_grace_off && !seg->grace.queued &&
		 (unsigned)__builtin_popcount(seg->ok) >= p->quorum)
		gwd_hq_add(p->d, &seg->grace, loop_now_ms() + seg_grace_ms(p));
	put_progress(p);
}

/* Encode p->cur and send its k+m shards; a slot must be free. */
static void send_segment(struct gw_data_put *p)
{
	struct gw_data *d = p->d;
	struct put_seg *seg = NULL;
	for (unsigned j = 0; j < d->o.window; j++)
		if (!p->segs[j].busy) {
			seg = &p->segs[j];
			break;
		}
	unsigned k = p->layout.k, m = p->layout.m;
	seg->busy = true;
	seg->index = p->next_send;
	seg->sl = gw_data_layout_shard_len(&p->layout, seg->index);
	seg->blk = p->cur;
	seg->pending = 0;
	seg->use++;
	seg->out = seg->ok = seg->fail = 0;
	p->cur = NULL;
	p->next_send++;
	p->inflight++;

	uint32_t len = gw_data_layout_seg_len(&p->layout, seg->index), sl = seg->sl;
	uint8_t *base = seg->blk->data;
	/* The ETag's MD5 of the segment's bytes not fed yet (feed_hash) on
	 * a hash thread, in order, while they are encoded and sent: [0, len)
	 * of the block is read-only from here until the hash jobs' done (each
	 * holds a reference); the padding and parity written below lie after
	 * it. A slot is free (slot_free), so this cannot be refused. */
	if (p->hash_off_loop && !p->no_etag && len > p->hashed) {
		/* The last segment's bytes: the reply waits for them. */
		if (seg->index + 1 == p->layout.nsegs)
			hash_async_set_urgent(p->md5, true);
		if (hash_async_update(p->md5, seg->blk, p->hashed, len - p->hashed, 0))
			put_fail(p, -ENOMEM, "no hash slot for segment %u", seg->index);
		else
			p->hash_seq++;
	}
	if (p->hash_done != p->hash_seq) {
		/* Its last job (a fed chunk or the rest above) holds it. */
		p->hblk[(p->hblk_head + p->hblk_n) % 65] = p->hash_seq;
		p->hblk_n++;
	}
	p->hashed = 0;
	memset(base + len, 0, (size_t)k * sl - len);
	const uint8_t *data[EC_MAX_SHARDS];
	uint8_t *parity[EC_MAX_SHARDS];
	for (unsigned i = 0; i < k; i++)
		data[i] = base + (size_t)i * sl;
	for (unsigned j = 0; j < m; j++)
		parity[j] = base + (size_t)(k + j) * sl;
	if (m)
		ec_encode(d->codes[0], sl, data, parity);

	struct rpc_call_opts co = { .timeout_ms = d->o.timeout_ms, .request_id = p->rid };
	struct gw_trace *t = gw_trace_get(&p->t.trace);
	uint64_t now = t ? loop_now_ns() : 0;
	for (unsigned i = 0; i < p->n; i++) {
		const uint8_t *sh = base + (size_t)i * sl;
		uint32_t crc = crc32c(0, sh, sl);
		p->layout.crcs[(size_t)seg->index * p->n + i] = crc;
		if (!p->t.osds[i]) {
			seg_shard_failed(seg, i, "OSD marked down");
			continue;
		}
		struct gwd_msg *msg = gwd_msg_get(d, true, p->t.pg, p->layout.object_id,
						  seg->index, i);
		struct put_call *c = msg ? call_get(d) : NULL;
		if (!c) {
			if (msg)
				buf_unref(&msg->hold);
			seg_shard_failed(seg, i, "out of memory");
			continue;
		}
		msg->q.put.length = sl;
		msg->q.put.crc32c = crc;
		msg->q.put.map_epoch = p->t.epoch;
		*c = (struct put_call){ p, seg, seg->use, i, uv_hrtime() / 1000, 0, NULL };
		seg->calls[i] = c;
		struct buf_slice pl = { seg->blk, (size_t)i * sl, sl };
		seg->pending++;
		seg->out |= 1u << i;
		p->calls_out++;
		d->st.shard_puts++;
		c->t0_ns = now;
		if (t)
			gw_trace_call_begin(&t->osd, now);
		/* By reference in process: the OSD reads msg where it is and
		 * trusts the crc it carries over bytes that never left memory
		 * (osd/service.c says what it still checks). */
		rpc_call_ref(p->t.osds[i], OSD_SVC, GWD_M_PUT, &msg->q.put.base, &msg->hold, &pl,
			     &co, on_put, c);
		buf_unref(&msg->hold);
	}
	d->st.segments_put++;
	if (!seg->pending)
		seg_settle(seg);
}

/* Whether a segment may go out: a free slot, and fewer than `window`
 * late blocks still held (the memory bound at the top). */
static bool slot_free(const struct gw_data_put *p)
{
	return p->inflight < p->d->o.window && p->late_blocks < p->d->o.window &&
	       p->hblk_n < p->d->o.window &&
	       hash_async_pending(p->md5) < p->d->o.window + HASH_FEED_SLOTS;
}

/* Give the hash service the whole HASH_FEED_BYTES chunks of cur not given
 * yet, keeping one hash slot free for send_segment. Those bytes are final:
 * later writes append after them. */
static void feed_hash(struct gw_data_put *p)
{
	unsigned cap = p->d->o.window + HASH_FEED_SLOTS - 1;
	while (p->cur_len - p->hashed >= HASH_FEED_BYTES && hash_async_pending(p->md5) < cap) {
		/* The body's very last bytes (a last segment of whole chunks):
		 * the reply waits for them, as for send_segment's. */
		if (p->next_send + 1 == p->layout.nsegs &&
		    p->hashed + HASH_FEED_BYTES == gw_data_layout_seg_len(&p->layout, p->next_send))
			hash_async_set_urgent(p->md5, true);
		if (hash_async_update(p->md5, p->cur, p->hashed, HASH_FEED_BYTES, 0))
			return;   /* no slot after all: send_segment takes the bytes */
		p->hashed += HASH_FEED_BYTES;
		p->hash_seq++;
	}
}

static bool can_take(const struct gw_data_put *p)
{
	return !p->cur || p->cur_len < gw_data_layout_seg_len(&p->layout, p->next_send);
}

static void put_release(struct gw_data_put *p)
{
	struct gw_data *d = p->d;
	if (p->calls_out) {
		p->release_wait = true;   /* the last late call comes back here */
		return;
	}
	gwd_undefer(d, &p->dfr);
	buf_unref(p->cur);
	p->cur = NULL;
	gw_data_layout_clear(&p->layout);
	d->st.live_ops--;
	p->next_free = d->free_puts;
	d->free_puts = p;
}

static void put_complete(struct gw_data_put *p)
{
	struct gw_data *d = p->d;
	uint8_t md[MD5_LEN];
	p->done = true;
	hash_async_final(p->md5, md, NULL);   /* (also resets it for the next PUT) */
	if (p->status == 0) {
		if (!p->no_etag)
			hash_hex(md, MD5_LEN, p->etag);
		d->st.put_bytes += p->fed;
	} else {
		d->st.puts_failed++;
	}
	if (p->freed) {
		put_release(p);
		return;
	}
	/* Only for a PUT its owner still holds: a freed one's owner may be
	 * gone with the hook's ud. */
	for (uint32_t s = 0; p->status == 0 && d->o.on_degraded && s < p->layout.nsegs; s++)
		if (p->layout.missing[s]) {
			d->o.on_degraded(d->o.degraded_ud, p->layout.pg, GW_DATA_PUT_PARTIAL);
			break;
		}
	p->cbs.on_done(p, p->status, p->ud);
}

static void on_walk_done(struct gwd_walk *w)
{
	struct gw_data_put *p = container_of(w, struct gw_data_put, walk);
	p->walking = false;
	if (!p->in_walk_start)
		put_progress(p);
}

/* Move p along; may run on_writable or on_done (the last thing it does). */
static void put_progress(struct gw_data_put *p)
{
	struct gw_data *d = p->d;
	if (p->done)
		return;
	if (p->status) {
		if (p->inflight || p->calls_out || hash_async_pending(p->md5))
			return;
		buf_unref(p->cur);
		p->cur = NULL;
		if (!p->walk_started) {
			p->walk_started = true;
			if (p->next_send) {
				/* Delete every segment sent, including shards whose
				 * call failed: a deadline may have hit a write that
				 * landed. */
				p->walk.d = d;
				p->walk.t = p->t;
				memcpy(p->walk.oid, p->layout.object_id, GW_DATA_OID_LEN);
				p->walk.n = p->n;
				p->walk.nsegs = p->next_send;
				p->walk.max = 0;
				p->walk.done = on_walk_done;
				p->walking = true;
				p->in_walk_start = true;
				gwd_walk_start(&p->walk);
				p->in_walk_start = false;
			}
		}
		if (p->walking)
			return;
		put_complete(p);
		return;
	}
	if (p->cur && !can_take(p) && slot_free(p)) {
		send_segment(p);
		if (p->status) {
			put_progress(p);
			return;
		}
	}
	if (p->finished && p->next_send == p->layout.nsegs && !p->inflight &&
	    !hash_async_pending(p->md5)) {
		put_complete(p);
		return;
	}
	if (p->want_writable && can_take(p)) {
		p->want_writable = false;
		if (!p->freed && p->cbs.on_writable)
			p->cbs.on_writable(p, p->ud);
	}
}

/* A hash job of p completed: the PUT may finish, or a segment go out. */
static void on_hashed(struct hash_async *h, void *ud)
{
	(void)h;
	struct gw_data_put *p = ud;
	p->hash_done++;
	while (p->hblk_n && (int32_t)(p->hash_done - p->hblk[p->hblk_head]) >= 0) {
		p->hblk_head = (p->hblk_head + 1) % 65;
		p->hblk_n--;
	}
	put_progress(p);
}

static void put_deferred(struct gwd_deferred *w)
{
	put_progress(container_of(w, struct gw_data_put, dfr));
}

void gwd_put_free_list(struct gw_data *d)
{
	while (d->free_puts) {
		struct gw_data_put *p = d->free_puts;
		d->free_puts = p->next_free;
		hash_async_free(p->md5);
		free(p);
	}
	while (d->free_pcalls) {
		struct put_call *c = d->free_pcalls;
		d->free_pcalls = c->next_free;
		free(c);
	}
}

int gw_data_put_start(struct gw_data *d, const struct gw_data_target *target, uint64_t size,
		      const uint8_t *object_id, const struct gw_data_put_cbs *cbs, void *ud,
		      struct gw_data_put **out)
{
	const struct gw_data_opts *o = &d->o;
	uint64_t nsegs = (size + o->segment_bytes - 1) / o->segment_bytes;
	if (nsegs >= UINT32_MAX / EC_MAX_SHARDS || !cbs || !cbs->on_done)
		return -EINVAL;
	if (d->st.live_ops >= o->max_ops)
		return -EAGAIN;
	struct gw_data_put *p = d->free_puts;
	if (p) {
		d->free_puts = p->next_free;
	} else {
		p = calloc(1, sizeof(*p) + o->window * sizeof(struct put_seg));
		if (!p)
			return -ENOMEM;
		p->md5 = hash_async_new(d->hash_port, HASH_ASYNC_MD5, o->window + HASH_FEED_SLOTS,
					on_hashed, p);
		if (!p->md5) {
			free(p);
			return -ENOMEM;
		}
	}
	struct hash_async *md5 = p->md5;
	memset(p, 0, sizeof(*p) + o->window * sizeof(struct put_seg));
	p->md5 = md5;
	p->d = d;
	p->dfr.fn = put_deferred;
	p->t = *target;
	p->hash_off_loop = d->hash_port && size >= o->hash_min_bytes;
	/* Chunks before the last segment's send may wait to share MD5 lanes
	 * with other PUTs' (md5_svc); the last one is hashed at once. */
	hash_async_set_urgent(p->md5, false);
	snprintf(p->rid, sizeof(p->rid), "%s", gw_trace_id(gw_trace_get(&target->trace)));
	p->cbs = *cbs;
	p->ud = ud;
	p->n = o->k + o->m;
	p->quorum = o->write_quorum;
	struct gw_data_layout *l = &p->layout;
	l->k = o->k;
	l->m = o->m;
	l->segment_bytes = o->segment_bytes;
	l->pg = target->pg;
	l->size = size;
	l->nsegs = (uint32_t)nsegs;
	if (object_id)
		memcpy(l->object_id, object_id, GW_DATA_OID_LEN);
	else if (getrandom(l->object_id, GW_DATA_OID_LEN, 0) != GW_DATA_OID_LEN)
		goto fail;
	if (gwd_layout_alloc(l))
		goto fail;
	for (unsigned j = 0; j < o->window; j++) {
		p->segs[j].p = p;
		p->segs[j].grace.fire = seg_grace_fire;
	}
	d->st.live_ops++;
	d->st.puts++;
	*out = p;
	return 0;
fail:
	p->next_free = d->free_puts;
	d->free_puts = p;
	return -ENOMEM;
}

size_t gw_data_put_buf(struct gw_data_put *p, size_t max, uint8_t **out)
{
	if (p->status || p->finished || p->done || p->fed >= p->layout.size)
		return 0;
	if (!p->cur) {
		size_t blk = (size_t)p->n * gw_data_layout_shard_len(&p->layout, p->next_send);
		if (!(p->cur = gwd_buf_get(p->d, blk)))
			return 0;   /* gw_data_put_write reports it */
		p->cur_len = 0;
	}
	uint32_t room = gw_data_layout_seg_len(&p->layout, p->next_send) - p->cur_len;
	*out = p->cur->data + p->cur_len;
	return max < room ? max : room;
}

ssize_t gw_data_put_write(struct gw_data_put *p, const void *data, size_t len)
{
	struct gw_data *d = p->d;
	if (p->status)
		return p->status;
	if (p->finished || len > p->layout.size - p->fed) {
		put_fail(p, -EMSGSIZE, "body longer than the %llu bytes declared",
			 (unsigned long long)p->layout.size);
		gwd_defer(d, &p->dfr);
		return -EMSGSIZE;
	}
	const uint8_t *in = data;
	size_t taken = 0;
	while (taken < len) {
		uint32_t seg_len = gw_data_layout_seg_len(&p->layout, p->next_send);
		if (!p->cur) {
			size_t blk = (size_t)p->n * gw_data_layout_shard_len(&p->layout, p->next_send);
			p->cur = gwd_buf_get(d, blk);
			if (!p->cur) {
				put_fail(p, -ENOMEM, "no memory for a %zu-byte segment buffer", blk);
				gwd_defer(d, &p->dfr);
				return -ENOMEM;
			}
			p->cur_len = 0;
		}
		size_t c = len - taken;
		if (c > seg_len - p->cur_len)
			c = seg_len - p->cur_len;
		/* Bytes read where they belong (gw_data_put_buf) stay. */
		if (in + taken != p->cur->data + p->cur_len)
			memcpy(p->cur->data + p->cur_len, in + taken, c);
		if (!p->no_etag && !p->hash_off_loop)
			hash_async_update_now(p->md5, in + taken, c);
		p->cur_len += (uint32_t)c;
		taken += c;
		p->fed += c;
		if (p->hash_off_loop && !p->no_etag && !p->status)
			feed_hash(p);
		if (p->cur_len == seg_len) {
			if (!slot_free(p))
				break;
			send_segment(p);
			if (p->status) {
				gwd_defer(d, &p->dfr);
				return p->status;
			}
		}
	}
	if (taken < len)
		p->want_writable = true;
	return (ssize_t)taken;
}

int gw_data_put_finish(struct gw_data_put *p)
{
	if (p->status)
		return p->status;
	if (p->fed != p->layout.size) {
		put_fail(p, -EMSGSIZE, "body ended after %llu of %llu bytes",
			 (unsigned long long)p->fed, (unsigned long long)p->layout.size);
		gwd_defer(p->d, &p->dfr);
		return -EMSGSIZE;
	}
	p->finished = true;
	gwd_defer(p->d, &p->dfr);
	return 0;
}

void gw_data_put_abort(struct gw_data_put *p)
{
	if (p->done)
		return;
	put_fail(p, -ECANCELED, "aborted by the caller");
	gwd_defer(p->d, &p->dfr);
}

const struct gw_data_layout *gw_data_put_layout(const struct gw_data_put *p)
{
	return &p->layout;
}

void gw_data_put_no_etag(struct gw_data_put *p)
{
	p->no_etag = true;
}

const char *gw_data_put_etag(const struct gw_data_put *p)
{
	return p->etag;
}

const char *gw_data_put_error(const struct gw_data_put *p)
{
	return p->err;
}

void gw_data_put_free(struct gw_data_put *p)
{
	if (p->done) {
		put_release(p);
		return;
	}
	p->freed = true;
	put_fail(p, -ECANCELED, "freed before done");
	gwd_defer(p->d, &p->dfr);
}
