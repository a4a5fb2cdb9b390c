/*
 * gw_data_get.c — erasure-coded GET of a byte range: the data-shard byte
 * ranges a range needs, read in parallel, checked end to end, decoded from
 * parity only when a shard fails, handed out in order.
 *
 * Pipeline: `window` segment slots; segment s lives in slot s % window
 * from its first GetShard until it has been handed out whole and its last
 * call has answered. A slot frees only when the consumer takes the
 * segment's last piece, so a consumer that stops reading stops the reads
 * (read-ahead is window segments, no more).
 *
 * A segment's pieces (one per data shard it touches) are handed out in
 * order as they come: once pieces 0..i are held and verified, they go,
 * without waiting for pieces i+1.. (seg->taken: the pieces handed out).
 * When a data shard fails or is slow, the segment goes on from parity:
 * the decode rebuilds only the pieces not yet taken. So when more than m
 * shards fail, the consumer may see the error after some bytes of that
 * segment. Not in the GET's first segment (seg->whole): it is handed out
 * only once every needed byte is held and verified, so a GET that cannot
 * be read fails before its first byte (S3 then answers 503 rather than
 * cutting a started answer). Responses are referenced, not copied: a
 * healthy piece is a slice of the transport's payload buffer; a rebuilt
 * piece is a slice of a pooled decode buffer.
 *
 * Per segment, states: FETCH -> READY -> EMITTED -> (calls drained) IDLE,
 * or FETCH -> FAILED (sticky: no later segment starts). Pieces may be
 * taken in FETCH (streamed) and READY; the last one taken makes EMITTED.
 *
 * Shard order: shards on OSDs that are up and whose circuit is closed
 * first; then shards the layout records as missing; then shards whose OSD
 * is down in the map or whose circuit is open (g->avoid), only when
 * nothing else is left. An avoided data shard is treated as failed up
 * front: the segment decodes from parity instead.
 *
 * Hedging: a fetching segment is queued on d->hq with its hedge time:
 * now + the median, over the segment's OSDs, of each OSD's p95 of shard
 * reads (d->olat), clamped; so one or two slow OSDs (at most m) raise
 * only their own p95 and not the delay that hedges around them. While
 * fewer than half its OSDs have enough samples, the p95 of all shard reads
 * (d->lat) stands in. If it is still
 * fetching then, the shards still out are marked slow: planning treats
 * them as failed (enough other shards are asked in full to decode) but
 * their answers are still taken if they come first. One hedge per
 * segment. Once a segment is emitted its slot takes the next segment at
 * once; reads still out become late calls (seg_recycle) whose answers
 * are dropped and which keep only g alive (g->pending).
 *
 * Loop: the gw_data's. The readable callback runs only at the end of an
 * RPC callback, and g is not touched after it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc.h"
#include "common/err.h"
#include "gateway/gw_data.h"
#include "gateway/gw_data_int.h"

enum seg_state { S_IDLE, S_FETCH, S_READY, S_FAILED, S_EMITTED };

/* One GetShard call on the wire (from d->free_calls, or the heap). Its
 * segment slot may be reused before it answers (a late call: the slot's
 * `use` moved on); then it only counts itself out of g->pending. */
struct get_call {
	struct gw_data_get *g;
	struct get_seg *seg;
	struct get_call *next_free;
	uint32_t use;            /* seg->use when asked */
	uint32_t shard;
	bool full;               /* asked for the whole shard */
	uint32_t off, len;       /* asked range */
	uint64_t t0_ns;          /* when asked: latency sample */
};

struct get_seg {
	struct gw_data_get *g;
	enum seg_state state;
	uint32_t index;
	uint32_t seg_len, sl;
	uint32_t need;                       /* data shards holding wanted bytes */
	uint32_t w_off[EC_MAX_SHARDS];       /* wanted range in shard i */
	uint32_t w_len[EC_MAX_SHARDS];
	struct buf_slice got[EC_MAX_SHARDS]; /* held bytes of shard i */
	uint32_t got_off[EC_MAX_SHARDS];     /* shard offset of got[i] */
	uint32_t got_acct[EC_MAX_SHARDS];    /* bytes counted as buffered */
	uint32_t have, full, failed, inflight; /* shard masks */
	uint32_t inflight_full;
	uint32_t taken;                      /* pieces handed out (need bits) */
	uint32_t slow;                       /* out when the hedge fired, not answered */
	bool degraded;
	bool hedged;
	bool whole;                          /* the GET's first: handed out only whole */
	struct gwd_hnode hn;                 /* on d->hq while waiting to hedge */
	unsigned emit_next;
	unsigned pending;
	uint32_t use;                        /* bumped when the slot is reused */
	struct get_call *calls[EC_MAX_SHARDS]; /* shard i's call out (NULL: none) */
};

struct gw_data_get {
	struct gw_data *d;
	struct gw_data_get *next_free;
	struct gw_data_target t;
	const struct gw_data_layout *l;
	gw_data_get_readable_cb cb;
	void *ud;
	unsigned n, k;
	uint32_t bad;              /* shards without a channel */
	uint32_t avoid;            /* OSD down in the map or circuit open: last resort */
	uint32_t open;             /* of which the circuit is open (not UP) */
	uint64_t off, end;
	uint32_t first_seg, last_seg;
	uint32_t next_start, next_emit;
	bool empty;
	bool stop;                 /* a segment failed: start no more */
	bool waiting;              /* read returned -EAGAIN */
	bool freed;
	bool reported;             /* on_degraded told about this GET */
	int status;
	unsigned pending;          /* calls in flight, all segments */
	char rid[LOG_REQ_ID_LEN + 1]; /* the request id every GetShard carries ("" none) */
	char err[320];
	struct get_seg segs[];     /* window */
};

static void get_release(struct gw_data_get *g);

static unsigned window(const struct gw_data_get *g)
{
	return g->d->o.window;
}

static struct get_seg *slot(struct gw_data_get *g, uint32_t s)
{
	return &g->segs[s % window(g)];
}

static void drop(struct get_seg *seg, unsigned i)
{
	if (!seg->got[i].buf)
		return;
	if (seg->got_acct[i])
		gwd_account(seg->g->d, -(int64_t)seg->got_acct[i]);
	buf_unref(seg->got[i].buf);
	seg->got[i] = (struct buf_slice){ 0 };
	seg->got_acct[i] = 0;
	seg->have &= ~(1u << i);
	seg->full &= ~(1u << i);
}

static void drop_all(struct get_seg *seg)
{
	for (unsigned i = 0; i < EC_MAX_SHARDS; i++)
		drop(seg, i);
}

static void seg_fail(struct get_seg *seg, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void seg_fail(struct get_seg *seg, const char *fmt, ...)
{
	struct gw_data_get *g = seg->g;
	seg->state = S_FAILED;
	g->stop = true;
	drop_all(seg);
	if (!g->err[0]) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(g->err, sizeof(g->err), fmt, ap);
		va_end(ap);
	}
}

static void on_get(void *ud, const struct rpc_result *res);

static struct get_call *call_get(struct gw_data *d)
{
	struct get_call *c = d->free_calls;
	if (c)
		d->free_calls = c->next_free;
	else
		c = malloc(sizeof(*c));
	return c;
}

static void call_put(struct gw_data *d, struct get_call *c)
{
	c->next_free = d->free_calls;
	d->free_calls = c;
}

/* seg was emitted: its slot is free for the next segment now, even with
 * calls still out (slow reads a hedge went around, or range reads a
 * decode made needless): they become late calls, which hold no buffer of
 * ours and only keep g (g->pending) until they end. Before this a slot
 * waited for them: a GET of more segments than the window stalled for
 * the RPC deadline behind one OSD that took reads and never answered. */
static void seg_recycle(struct get_seg *seg)
{
	if (seg->pending)
		seg->g->d->st.shard_gets_late += seg->pending;
	seg->use++;
	seg->pending = 0;
	seg->inflight = seg->inflight_full = seg->slow = 0;
	for (unsigned i = 0; i < EC_MAX_SHARDS; i++)
		seg->calls[i] = NULL;
	seg->state = S_IDLE;
}

static void issue(struct get_seg *seg, unsigned i, bool full)
{
	struct gw_data_get *g = seg->g;
	struct gw_data *d = g->d;
	struct get_call *c = seg->calls[i] ? NULL : call_get(d);
	if (!c) {   /* no memory (a call to shard i is never out twice) */
		seg->failed |= 1u << i;
		seg->degraded = true;
		return;
	}
	*c = (struct get_call){ .g = g, .seg = seg, .use = seg->use, .shard = i };
	seg->calls[i] = c;
	drop(seg, i);
	c->full = full;
	c->off = full ? 0 : seg->w_off[i];
	c->len = full ? seg->sl : seg->w_len[i];
	seg->inflight |= 1u << i;
	if (full)
		seg->inflight_full |= 1u << i;
	seg->pending++;
	g->pending++;
	c->t0_ns = loop_now_ns();
	struct gw_trace *t = gw_trace_get(&g->t.trace);
	if (t)
		gw_trace_call_begin(&t->osd, c->t0_ns);
	d->st.shard_gets++;
	d->st.shard_gets_by_index[i]++;
	struct rpc_call_opts co = { .timeout_ms = d->o.timeout_ms, .request_id = g->rid };
	struct gwd_msg *msg = gwd_msg_get(d, false, g->l->pg, g->l->object_id, seg->index, i);
	if (!msg) {
		/* Answer "no memory" through on_get, as rpc_call would. */
		Iolake__Osd__ShardKey key;
		uint8_t kb[GW_DATA_KEY_LEN];
		Iolake__Osd__GetShardRequest q = IOLAKE__OSD__GET_SHARD_REQUEST__INIT;
		gwd_key(&key, kb, g->l->pg, g->l->object_id, seg->index, i);
		q.key = &key;
		q.offset = c->off;
		q.length = c->len;
		rpc_call(g->t.osds[i], OSD_SVC, GWD_M_GET, &q.base, NULL, &co, on_get, c);
		return;
	}
	msg->q.get.offset = c->off;
	msg->q.get.length = c->len;
	rpc_call_ref(g->t.osds[i], OSD_SVC, GWD_M_GET, &msg->q.get.base, &msg->hold, NULL, &co,
		     on_get, c);
	buf_unref(&msg->hold);
}

/* Rebuild the wanted data shards that are not held from k whole shards. */
static void seg_decode(struct get_seg *seg)
{
	struct gw_data_get *g = seg->g;
	struct gw_data *d = g->d;
	const struct gw_data_layout *l = g->l;
	uint32_t want = seg->need & ~seg->have & ~seg->taken;   /* taken: handed out */
	if (!want) {
		seg->state = S_READY;
		return;
	}
	/* Flag the PG only for a shard that failed on an OSD we could reach
	 * (missing, bad bytes, an error). Not for one in the layout's
	 * PUT-time missing mask: the PUT flagged that PG already, and until
	 * the primary rebuilt the shard every GET of the object would ask
	 * for a rescan again. An OSD the transport already knows dead is
	 * recovery's business too. */
	uint32_t known = g->bad | (g->avoid & ~g->open) | seg->slow | l->missing[seg->index];
	if (!g->reported && d->o.on_degraded && (seg->failed & ~known)) {
		g->reported = true;
		d->o.on_degraded(d->o.degraded_ud, l->pg, GW_DATA_READ_BAD_SHARD);
	}
	uint32_t present = 0;
	for (unsigned i = 0, c = 0; i < g->n && c < g->k; i++)
		if (seg->full & (1u << i)) {
			present |= 1u << i;
			c++;
		}
	struct ec_code *code = gwd_code(d, l->k, l->m);
	struct buf *dec = code ? gwd_buf_get(d, (size_t)g->k * seg->sl) : NULL;
	if (!dec) {
		seg_fail(seg, "segment %u: no memory to decode", seg->index);
		return;
	}
	uint8_t *ptr[EC_MAX_SHARDS] = { 0 };
	for (unsigned i = 0; i < g->n; i++) {
		if (present & (1u << i))
			ptr[i] = (uint8_t *)buf_slice_data(&seg->got[i]);
		else if (want & (1u << i))
			ptr[i] = dec->data + (size_t)i * seg->sl;
	}
	int rc = ec_decode(code, seg->sl, ptr, present, want);
	if (rc) {
		buf_unref(dec);
		seg_fail(seg, "segment %u: decode failed: %s", seg->index, iol_strerror(rc));
		return;
	}
	for (unsigned i = 0; i < g->k; i++)
		if (want & (1u << i)) {
			seg->got[i] = (struct buf_slice){ buf_ref(dec), (size_t)i * seg->sl, seg->sl };
			seg->got_off[i] = 0;
			seg->have |= 1u << i;
		}
	buf_unref(dec);
	d->st.decodes++;
	if (want & seg->slow)
		d->st.hedge_wins++;
	seg->state = S_READY;
}

/* Decide what a fetching segment needs next. */
static void seg_advance(struct get_seg *seg)
{
	struct gw_data_get *g = seg->g;
	if (seg->state != S_FETCH)
		return;
	/* Every wanted byte held and verified or already handed out: done,
	 * however we got here (a slow shard that answered after all, a
	 * failed parity read). */
	if (((seg->have | seg->taken) & seg->need) == seg->need) {
		seg->state = S_READY;
		return;
	}
	if (!seg->degraded)
		return;
	unsigned nfull = (unsigned)__builtin_popcount(seg->full);
	if (nfull >= g->k) {
		seg_decode(seg);
		return;
	}
	unsigned coming = nfull + (unsigned)__builtin_popcount(seg->inflight_full & ~seg->slow);
	unsigned more = coming >= g->k ? 0 : g->k - coming;
	uint32_t bad = seg->failed | g->bad | seg->slow;
	/* Shards the PUT could not store are asked after the healthy ones,
	 * not never: the PG's primary OSD may have rebuilt them since
	 * (osd/recover), and their bytes are checked against the layout's
	 * crc like any. Shards on OSDs known down come last of all. */
	uint32_t last = g->l->missing[seg->index];
	unsigned later = 0;
	for (unsigned pass = 0; pass < 3; pass++) {
		/* Range reads still out may come back and be asked again in
		 * full: count on them before a shard of last resort. */
		later = (unsigned)__builtin_popcount(seg->inflight & ~seg->inflight_full & ~bad);
		if (pass && more <= later)
			break;
		uint32_t skip = pass == 0 ? last | g->avoid : pass == 1 ? g->avoid : 0;
		for (unsigned i = 0; i < g->n && more; i++) {
			uint32_t b = 1u << i;
			if ((bad | seg->full | seg->inflight | skip) & b)
				continue;
			issue(seg, i, true);
			more--;
		}
	}
	/* Slow reads still out may yet answer: wait for them. */
	unsigned slow_out = (unsigned)__builtin_popcount(seg->slow & seg->inflight);
	if (more > later + slow_out)
		seg_fail(seg,
			 "segment %u: only %u of %u shards readable, %u needed to decode "
			 "(unreadable shard mask 0x%x)",
			 seg->index, g->n - (unsigned)__builtin_popcount(bad), g->n, g->k, bad);
}

/* ------------------------------------------------------------ hedging */

/* The hedge delay of a segment of g: the lower median of its OSDs' p95s
 * (see the top), clamped. The queue and its timer: gw_data_hedge.c. */
static uint32_t seg_hedge_delay_ms(struct gw_data *d, const struct gw_data_get *g)
{
	uint32_t us = gwd_osd_median_us(&d->olat, g->t.osd_ids, g->n, gw_lat_get(&d->lat));
	uint32_t ms = (us + 999) / 1000;
	return ms < d->o.hedge_min_ms ? d->o.hedge_min_ms
	       : ms > d->o.hedge_max_ms ? d->o.hedge_max_ms : ms;
}

static void hedge_queue(struct get_seg *seg)
{
	struct gw_data *d = seg->g->d;
	if (d->o.hedge_off || seg->g->n <= seg->g->k)
		return;
	gwd_hq_add(d, &seg->hn, loop_now_ms() + seg_hedge_delay_ms(d, seg->g));
}

static void notify(struct gw_data_get *g);

/* The hedge time of seg came (seg->hn.fire): ask parity in place of the
 * reads still out. */
static void seg_hedge(struct gwd_hnode *h)
{
	struct get_seg *seg = container_of(h, struct get_seg, hn);
	struct gw_data_get *g = seg->g;
	if (g->freed || seg->state != S_FETCH || seg->hedged)
		return;
	uint32_t slow = seg->inflight & ~seg->have;
	if (!slow)
		return;
	seg->hedged = true;
	seg->slow = slow;
	seg->degraded = true;
	struct gw_trace *t = gw_trace_get(&g->t.trace);
	if (t)
		gw_trace_hedge(t, g->t.osd_ids, slow);
	unsigned before = seg->pending;
	seg_advance(seg);
	if (seg->pending > before)
		g->d->st.hedges++;
	notify(g);
}

static void seg_start(struct get_seg *seg, uint32_t s)
{
	struct gw_data_get *g = seg->g;
	const struct gw_data_layout *l = g->l;
	uint64_t base = (uint64_t)s * l->segment_bytes;
	seg->state = S_FETCH;
	seg->index = s;
	seg->seg_len = gw_data_layout_seg_len(l, s);
	seg->sl = gw_data_layout_shard_len(l, s);
	seg->need = seg->have = seg->full = seg->failed = 0;
	seg->inflight = seg->inflight_full = 0;
	seg->slow = 0;
	seg->degraded = false;
	seg->hedged = false;
	seg->whole = s == g->first_seg;
	seg->taken = 0;
	seg->emit_next = 0;
	uint64_t a = (g->off > base ? g->off : base) - base;
	uint64_t b = (g->end < base + seg->seg_len ? g->end : base + seg->seg_len) - base;
	for (unsigned i = 0; i < g->k; i++) {
		uint64_t lo = (uint64_t)i * seg->sl, hi = lo + seg->sl;
		if (hi > seg->seg_len)
			hi = seg->seg_len;
		uint64_t ol = a > lo ? a : lo, oh = b < hi ? b : hi;
		if (ol >= oh)
			continue;
		seg->need |= 1u << i;
		seg->w_off[i] = (uint32_t)(ol - lo);
		seg->w_len[i] = (uint32_t)(oh - ol);
	}
	g->d->st.segments_read++;
	/* A data shard the PUT could not store is asked for first all the
	 * same when its OSD is not known bad: the PG's primary rebuilds it
	 * (osd/recover) and the mask never changes, so a healed object
	 * reads at full speed again. Until then the read fails NOT_FOUND and
	 * costs one round trip before parity is asked (seg_advance). */
	for (unsigned i = 0; i < g->k; i++) {
		if (!(seg->need & (1u << i)))
			continue;
		if (g->bad & (1u << i)) {
			seg->failed |= 1u << i;
			seg->degraded = true;
		} else if (g->avoid & (1u << i)) {
			/* Down or circuit open: decode around it up front. An
			 * open circuit counts as a failed read (the OSD is up
			 * in the map but unreachable: the PG is flagged, as
			 * the refused call would have); a map-down OSD is the
			 * map's business. */
			if (g->open & (1u << i))
				seg->failed |= 1u << i;
			seg->degraded = true;
			g->d->st.shard_gets_avoided++;
		} else {
			issue(seg, i, false);
		}
	}
	seg_advance(seg);
	if (seg->state == S_FETCH && seg->inflight)
		hedge_queue(seg);
}

static void pump(struct gw_data_get *g)
{
	while (!g->stop && !g->empty && g->next_start <= g->last_seg) {
		struct get_seg *seg = slot(g, g->next_start);
		if (seg->state != S_IDLE)
			break;
		seg_start(seg, g->next_start++);
	}
}

static void on_get(void *ud, const struct rpc_result *res)
{
	struct get_call *c = ud;
	struct get_seg *seg = c->seg;
	struct gw_data_get *g = c->g;
	struct gw_data *d = g->d;
	uint32_t i = c->shard, b = 1u << i;
	g->pending--;
	if (c->use != seg->use) {   /* late: its slot moved on */
		if (res->status == RPC_OK) {   /* its latency still counts */
			uint64_t us = (loop_now_ns() - c->t0_ns) / 1000;
			gw_lat_add(&d->lat, us);
			gwd_osd_lat_add(&d->olat, g->t.osd_ids[i], us);
		}
		call_put(d, c);
		if (g->freed && !g->pending)
			get_release(g);
		return;
	}
	seg->calls[i] = NULL;
	seg->pending--;
	seg->inflight &= ~b;
	seg->inflight_full &= ~b;
	seg->slow &= ~b;
	uint64_t now = loop_now_ns();
	if (res->status == RPC_OK) {
		uint64_t us = (now - c->t0_ns) / 1000;
		gw_lat_add(&d->lat, us);
		gwd_osd_lat_add(&d->olat, g->t.osd_ids[i], us);
	}
	struct gw_trace *t = gw_trace_get(&g->t.trace);
	if (t)
		gw_trace_call_end(&t->osd, c->t0_ns, now, g->t.osd_ids[i], res->status == RPC_OK);
	if (g->freed) {
		call_put(d, c);
		if (!g->pending)
			get_release(g);
		return;
	}
	if (seg->state == S_FETCH) {
		const struct gw_data_layout *l = g->l;
		const Iolake__Osd__GetShardResponse *r = (const void *)res->resp;
		size_t plen = res->payload.buf ? res->payload.len : 0;
		uint32_t want_crc = l->crcs[(size_t)seg->index * g->n + i];
		bool whole = c->off == 0 && c->len == seg->sl;
		bool ok = res->status == RPC_OK && r && r->info && r->info->length == seg->sl &&
			  r->info->crc32c == want_crc && r->offset == c->off &&
			  r->length == c->len && plen == c->len;
		/* A whole shard that stayed in memory is the OSD store's own
		 * buffer, verified by the store against the record's crc on
		 * this read, and the record's crc is the one we wrote
		 * (info->crc32c == want_crc): a second pass over the same
		 * bytes in this process would find nothing new. Anything else
		 * (a range, or bytes that crossed a socket) is verified here. */
		if (ok && !(whole && res->in_memory && r->range_crc32c == want_crc)) {
			uint32_t crc = crc32c(0, buf_slice_data(&res->payload), plen);
			ok = crc == r->range_crc32c && (!whole || crc == want_crc);
		}
		if (ok) {
			seg->got[i] = res->payload;
			buf_ref(res->payload.buf);
			seg->got_off[i] = c->off;
			seg->got_acct[i] = c->len;
			gwd_account(d, c->len);
			seg->have |= b;
			if (whole)
				seg->full |= b;
		} else {
			if (res->status == RPC_OK)
				d->st.crc_mismatches++;
			d->st.shard_get_failures++;
			seg->failed |= b;
			seg->degraded = true;
		}
		seg_advance(seg);
	}
	call_put(d, c);
	notify(g);
}

/* The piece of seg to hand out next (seg->need >> seg->emit_next is not
 * 0 until seg is emitted). */
static unsigned next_piece(const struct get_seg *seg)
{
	unsigned i = seg->emit_next;
	while (!(seg->need & (1u << i)))
		i++;
	return i;
}

/* Whether gw_data_get_read has something to say about seg (the segment
 * next_emit): a piece to hand out, or its failure. */
static bool seg_settled(const struct get_seg *seg)
{
	return seg->state == S_READY || seg->state == S_FAILED ||
	       (seg->state == S_FETCH && !seg->whole &&
		(seg->have & (1u << next_piece(seg))));
}

/* Tell a waiting consumer the next piece is held (or its segment
 * failed). g may be freed by the callback: nothing touches it after. */
static void notify(struct gw_data_get *g)
{
	if (!g->waiting)
		return;
	struct get_seg *h = slot(g, g->next_emit);
	if (h->index == g->next_emit && seg_settled(h)) {
		g->waiting = false;
		g->cb(g, g->ud);
	}
}

void gwd_get_free_list(struct gw_data *d)
{
	while (d->free_gets) {
		struct gw_data_get *g = d->free_gets;
		d->free_gets = g->next_free;
		free(g);
	}
	while (d->free_calls) {
		struct get_call *c = d->free_calls;
		d->free_calls = c->next_free;
		free(c);
	}
}

int gw_data_get_start(struct gw_data *d, const struct gw_data_target *target,
		      const struct gw_data_layout *l, uint64_t off, uint64_t len,
		      gw_data_get_readable_cb cb, void *ud, struct gw_data_get **out)
{
	if (gwd_layout_check(l) || off > l->size || len > l->size - off || !cb)
		return -EINVAL;
	if (d->st.live_ops >= d->o.max_ops)
		return -EAGAIN;
	size_t sz = sizeof(struct gw_data_get) + d->o.window * sizeof(struct get_seg);
	struct gw_data_get *g = d->free_gets;
	if (g)
		d->free_gets = g->next_free;
	else if (!(g = malloc(sz)))
		return -ENOMEM;
	memset(g, 0, sz);
	g->d = d;
	g->t = *target;
	snprintf(g->rid, sizeof(g->rid), "%s", gw_trace_id(gw_trace_get(&target->trace)));
	g->l = l;
	g->cb = cb;
	g->ud = ud;
	g->k = l->k;
	g->n = l->k + l->m;
	for (unsigned i = 0; i < g->n; i++) {
		if (!target->osds[i])
			g->bad |= 1u << i;
		else if (rpc_channel_peer_state(target->osds[i]) != RPC_PEER_UP)
			g->open |= 1u << i;
		else if (target->down & (1u << i))
			g->avoid |= 1u << i;
	}
	g->avoid |= g->open;
	g->off = off;
	g->end = off + len;
	g->empty = len == 0;
	for (unsigned j = 0; j < d->o.window; j++) {
		struct get_seg *seg = &g->segs[j];
		seg->g = g;
		seg->hn.fire = seg_hedge;
		seg->index = UINT32_MAX;
		seg->pending = 0;
		seg->use = 0;
		for (unsigned i = 0; i < EC_MAX_SHARDS; i++)
			seg->calls[i] = NULL;
	}
	if (len) {
		g->first_seg = g->next_start = g->next_emit = (uint32_t)(off / l->segment_bytes);
		g->last_seg = (uint32_t)((g->end - 1) / l->segment_bytes);
	}
	d->st.live_ops++;
	d->st.gets++;
	pump(g);
	*out = g;
	return 0;
}

int gw_data_get_read(struct gw_data_get *g, struct buf_slice *out)
{
	struct gw_data *d = g->d;
	g->waiting = false;
	if (g->status)
		return g->status;
	if (g->empty || g->next_emit > g->last_seg)
		return 0;
	struct get_seg *seg = slot(g, g->next_emit);
	if (seg->index == g->next_emit && seg->state == S_FAILED) {
		g->status = IOL_EUNAVAILABLE;
		d->st.gets_failed++;
		return g->status;
	}
	if (seg->index != g->next_emit || !seg_settled(seg)) {
		g->waiting = true;
		return -EAGAIN;
	}
	unsigned i = next_piece(seg);
	const struct buf_slice *s = &seg->got[i];
	*out = (struct buf_slice){ buf_ref(s->buf), s->off + (seg->w_off[i] - seg->got_off[i]),
				   seg->w_len[i] };
	d->st.get_bytes += seg->w_len[i];
	seg->emit_next = i + 1;
	seg->taken |= 1u << i;
	if (!(seg->need >> seg->emit_next)) {
		seg->state = S_EMITTED;
		gwd_hq_del(d, &seg->hn);
		drop_all(seg);
		g->next_emit++;
		seg_recycle(seg);
		pump(g);
	}
	return 1;
}

const char *gw_data_get_error(const struct gw_data_get *g)
{
	return g->err;
}

static void get_release(struct gw_data_get *g)
{
	struct gw_data *d = g->d;
	for (unsigned j = 0; j < d->o.window; j++) {
		drop_all(&g->segs[j]);
		gwd_hq_del(d, &g->segs[j].hn);
	}
	d->st.live_ops--;
	g->next_free = d->free_gets;
	d->free_gets = g;
}

void gw_data_get_free(struct gw_data_get *g)
{
	g->freed = true;
	if (!g->pending)
		get_release(g);
}
