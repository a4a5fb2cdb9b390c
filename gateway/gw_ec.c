/*
 * gw_ec.c — erasure-coded object PUT/GET/DELETE over the Osd RPC service
 * (contracts in gw_ec.h).
 *
 * Lifetime: a put or get is freed when its owner has released it AND no
 * RPC call it issued is outstanding (`calls`); RPC callbacks of a released
 * op only account and drop their buffers. Completions that would otherwise
 * run inside the caller's own call (a segment with no OSD to send to) are
 * deferred through a zero-delay timer, so callbacks never re-enter.
 *
 * Thread: the loop given to gw_ec_new.
 */
#include "gateway/gw_ec.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc.h"
#include "common/err.h"
#include "common/hash.h"
#include "proto/osd.pb-c.h"

#define OSD_SVC (&iolake__osd__osd__descriptor)
enum { OSD_M_PUT = 0, OSD_M_GET = 1, OSD_M_DELETE = 2 };
#define MAX_CODES 4

struct gw_ec {
	uv_loop_t *loop;
	struct gw_ec_opts o;
	struct ec_code *codes[MAX_CODES]; /* by (k, m); [0] is the default */
	size_t n_codes;
	struct gw_ec_stats st;
	unsigned live_dels;       /* deletes not yet finished (they outlive ops) */
	bool closing;             /* no new shard calls: channels are closing */
	bool freed;               /* gw_ec_free called; the last delete frees */
};

static const struct ec_code *code_for(struct gw_ec *e, unsigned k, unsigned m)
{
	for (size_t i = 0; i < e->n_codes; i++)
		if (ec_k(e->codes[i]) == k && ec_m(e->codes[i]) == m)
			return e->codes[i];
	if (e->n_codes == MAX_CODES || ec_new(k, m, &e->codes[e->n_codes]))
		return NULL;
	return e->codes[e->n_codes++];
}

int gw_ec_new(uv_loop_t *loop, const struct gw_ec_opts *opts, struct gw_ec **out)
{
	struct gw_ec *e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->loop = loop;
	if (opts)
		e->o = *opts;
	if (!e->o.k && !e->o.m) {
		e->o.k = 4;
		e->o.m = 2;
	}
	if (!e->o.chunk_bytes)
		e->o.chunk_bytes = 256 << 10;
	if (!e->o.write_quorum)
		e->o.write_quorum = e->o.m ? e->o.k + 1 : e->o.k;
	if (!e->o.window)
		e->o.window = 2;
	if (!e->o.timeout_ms)
		e->o.timeout_ms = 10000;
	if (e->o.k < 1 || e->o.k + e->o.m > EC_MAX_SHARDS ||
	    e->o.write_quorum < e->o.k || e->o.write_quorum > e->o.k + e->o.m) {
		free(e);
		return -EINVAL;
	}
	int rc = ec_new(e->o.k, e->o.m, &e->codes[0]);
	if (rc) {
		free(e);
		return rc;
	}
	e->n_codes = 1;
	*out = e;
	return 0;
}

static void ec_release(struct gw_ec *e)
{
	for (size_t i = 0; i < e->n_codes; i++)
		ec_free(e->codes[i]);
	free(e);
}

void gw_ec_shutdown(struct gw_ec *e)
{
	e->closing = true;
}

void gw_ec_free(struct gw_ec *e)
{
	if (!e)
		return;
	e->closing = true;
	e->freed = true;
	if (!e->live_dels)
		ec_release(e);
}

void gw_ec_stats(const struct gw_ec *e, struct gw_ec_stats *out) { *out = e->st; }
unsigned gw_ec_k(const struct gw_ec *e) { return e->o.k; }
unsigned gw_ec_m(const struct gw_ec *e) { return e->o.m; }

static uint64_t seg_bytes(const struct gw_ec_layout *l)
{
	return (uint64_t)l->k * l->chunk_bytes;
}

uint32_t gw_ec_nsegs(const struct gw_ec_layout *l)
{
	uint64_t sb = seg_bytes(l);
	return sb ? (uint32_t)((l->size + sb - 1) / sb) : 0;
}

static uint32_t seg_len(const struct gw_ec_layout *l, uint32_t s)
{
	uint64_t sb = seg_bytes(l), start = (uint64_t)s * sb;
	return (uint32_t)(l->size - start < sb ? l->size - start : sb);
}

static uint32_t shard_len_of(uint32_t len, uint32_t k)
{
	return (len + k - 1) / k;
}

static void make_oid(uint8_t oid[GW_EC_OID_LEN], uint64_t shard_id, uint32_t seg)
{
	for (int i = 0; i < 8; i++)
		oid[i] = (uint8_t)(shard_id >> (56 - 8 * i));
	for (int i = 0; i < 4; i++)
		oid[8 + i] = (uint8_t)(seg >> (24 - 8 * i));
}

/* ------------------------------------------------------------ DELETE */

struct del {
	struct gw_ec *e;
	struct gw_ec_target t;
	struct gw_ec_layout l;
	uint32_t nsegs, next;     /* next (segment * width + shard) to issue */
	unsigned inflight;
	uint32_t failed;
	gw_ec_delete_cb cb;
	void *ud;
	uv_timer_t defer;         /* completion when nothing was issued */
};

static void del_pump(struct del *d);

static void del_closed(uv_handle_t *h)
{
	struct del *d = h->data;
	struct gw_ec *e = d->e;
	free(d);
	if (--e->live_dels == 0 && e->freed)
		ec_release(e);
}

static void del_finish(struct del *d)
{
	if (d->cb)
		d->cb(d->ud, d->failed ? IOL_EUNAVAILABLE : 0, d->failed);
	uv_close((uv_handle_t *)&d->defer, del_closed);
}

static void on_del(void *ud, const struct rpc_result *res)
{
	struct del *d = ud;
	d->inflight--;
	if (res->status != RPC_OK && res->status != RPC_NOT_FOUND)
		d->failed++;
	del_pump(d);
}

static void on_del_defer(uv_timer_t *t)
{
	del_pump(t->data);
}

static void del_pump(struct del *d)
{
	uint32_t width = d->l.k + d->l.m, total = d->nsegs * width;
	unsigned cap = d->e->o.window * width;
	while (d->next < total && d->inflight < cap) {
		uint32_t s = d->next / width, i = d->next % width;
		d->next++;
		if (!d->t.osds[i] || d->e->closing) {
			d->failed++;
			continue;
		}
		uint8_t oid[GW_EC_OID_LEN];
		make_oid(oid, d->l.shard_id, s);
		Iolake__Osd__ShardKey key = IOLAKE__OSD__SHARD_KEY__INIT;
		key.pg = d->l.pg;
		key.object_id.data = oid;
		key.object_id.len = sizeof(oid);
		key.shard = i;
		Iolake__Osd__DeleteShardRequest req = IOLAKE__OSD__DELETE_SHARD_REQUEST__INIT;
		req.key = &key;
		struct rpc_call_opts co = { .timeout_ms = d->e->o.timeout_ms };
		d->inflight++;
		rpc_call(d->t.osds[i], OSD_SVC, OSD_M_DELETE, &req.base, NULL, &co, on_del, d);
	}
	if (d->next == total && d->inflight == 0) {
		d->next++; /* finish once */
		del_finish(d);
	}
}

int gw_ec_delete(struct gw_ec *e, const struct gw_ec_target *target,
		 const struct gw_ec_layout *l, gw_ec_delete_cb cb, void *ud)
{
	struct del *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->e = e;
	d->t = *target;
	d->l = *l;
	d->nsegs = gw_ec_nsegs(l);
	d->cb = cb;
	d->ud = ud;
	uv_timer_init(e->loop, &d->defer);
	d->defer.data = d;
	e->st.deletes++;
	e->live_dels++;
	/* Start from the loop, so cb never runs inside this call. */
	uv_timer_start(&d->defer, on_del_defer, 0, 0);
	return 0;
}

/* ------------------------------------------------------------ PUT */

struct pseg {
	struct gw_ec_put *p;
	uint32_t idx;
	uint32_t len;             /* data bytes */
	struct buf *buf;          /* (k+m) * shard_len: data shards, then parity */
	unsigned acks, fails, pending;
	struct pseg *next;        /* sealed queue */
};

struct gw_ec_put {
	struct gw_ec *e;
	struct gw_ec_target t;
	struct gw_ec_layout l;
	struct gw_ec_put_cbs cbs;
	void *ud;
	struct hash_stream *md5;
	char etag[33];
	char err[160];
	uint64_t fed;
	struct pseg *fill;        /* segment being filled (NULL: none yet) */
	struct pseg *q_head, *q_tail; /* sealed, not yet sent */
	unsigned queued;
	unsigned inflight;        /* segments with calls out */
	unsigned calls;           /* RPC calls outstanding */
	uint32_t next_idx;        /* index of the next segment to create */
	uint32_t sent;            /* segments sent (all < sent were issued) */
	int status;               /* first failure, sticky */
	bool finished, done, released, want_writable;
	uv_timer_t defer;
	bool defer_armed;
};

static void put_maybe_free(struct gw_ec_put *p);

static void pseg_free(struct pseg *s)
{
	if (s->buf)
		buf_unref(s->buf);
	free(s);
}

static struct pseg *pseg_new(struct gw_ec_put *p)
{
	struct pseg *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	uint32_t width = p->l.k + p->l.m;
	s->p = p;
	s->idx = p->next_idx++;
	s->buf = buf_new((size_t)width * p->l.chunk_bytes);
	if (!s->buf) {
		free(s);
		return NULL;
	}
	return s;
}

__attribute__((format(printf, 3, 4))) static void put_fail(struct gw_ec_put *p, int status,
							    const char *fmt, ...)
{
	if (p->status)
		return;
	p->status = status;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->err, sizeof(p->err), fmt, ap);
	va_end(ap);
}

static void on_put_defer(uv_timer_t *t);

static void put_arm(struct gw_ec_put *p)
{
	if (!p->defer_armed && !p->released) {
		p->defer_armed = true;
		uv_timer_start(&p->defer, on_put_defer, 0, 0);
	}
}

static void put_send_queued(struct gw_ec_put *p);

/* Everything settled? Report once. */
static void put_check_done(struct gw_ec_put *p)
{
	if (p->done || p->released)
		return;
	bool over = p->status ? (p->inflight == 0) : (p->finished && p->inflight == 0 && !p->q_head);
	if (!over)
		return;
	p->done = true;
	int st = p->status;
	if (st) {
		p->e->st.puts_failed++;
		/* Delete whatever segments were issued: their shards may be
		 * anywhere between none and all. */
		struct gw_ec_layout dl = p->l;
		uint64_t sb = seg_bytes(&p->l);
		dl.size = (uint64_t)p->sent * sb < p->l.size ? (uint64_t)p->sent * sb : p->l.size;
		if (dl.size)
			gw_ec_delete(p->e, &p->t, &dl, NULL, NULL);
	} else {
		uint8_t d[16];
		hash_stream_final(p->md5, d);
		hash_hex(d, 16, p->etag);
		p->e->st.puts++;
	}
	p->cbs.on_done(p, st, p->ud);
}

static void on_put_shard(void *ud, const struct rpc_result *res)
{
	struct pseg *s = ud;
	struct gw_ec_put *p = s->p;
	p->calls--;
	s->pending--;
	if (res->status == RPC_OK)
		s->acks++;
	else {
		s->fails++;
		p->e->st.shard_puts_failed++;
	}
	if (s->pending)
		return;
	p->inflight--;
	if (s->acks < p->e->o.write_quorum)
		put_fail(p, IOL_EUNAVAILABLE,
			 "segment %u reached no write quorum (%u shards failed)", s->idx, s->fails);
	else
		p->e->st.segments_put++;
	pseg_free(s);
	if (p->released) {
		put_maybe_free(p);
		return;
	}
	put_send_queued(p);
	if (p->want_writable && !p->status && p->queued == 0) {
		p->want_writable = false;
		if (p->cbs.on_writable)
			p->cbs.on_writable(p, p->ud);
	}
	put_check_done(p);
}

static void put_send(struct gw_ec_put *p, struct pseg *s)
{
	uint32_t k = p->l.k, width = k + p->l.m;
	uint32_t sl = shard_len_of(s->len, k);
	uint8_t *base = s->buf->data;
	/* Data shards are consecutive sl-byte slices of the segment: pad the
	 * tail with zeros, then encode the parity behind them. */
	memset(base + s->len, 0, (size_t)k * sl - s->len);
	const uint8_t *data[EC_MAX_SHARDS];
	uint8_t *parity[EC_MAX_SHARDS];
	for (uint32_t i = 0; i < k; i++)
		data[i] = base + (size_t)i * sl;
	for (uint32_t i = 0; i < p->l.m; i++)
		parity[i] = base + (size_t)(k + i) * sl;
	if (p->l.m)
		ec_encode(code_for(p->e, k, p->l.m), sl, data, parity);
	p->inflight++;
	p->sent = s->idx + 1;
	uint8_t oid[GW_EC_OID_LEN];
	make_oid(oid, p->l.shard_id, s->idx);
	for (uint32_t i = 0; i < width; i++) {
		if (!p->t.osds[i] || p->e->closing) {
			s->fails++;
			continue;
		}
		Iolake__Osd__ShardKey key = IOLAKE__OSD__SHARD_KEY__INIT;
		key.pg = p->l.pg;
		key.object_id.data = oid;
		key.object_id.len = sizeof(oid);
		key.shard = i;
		Iolake__Osd__PutShardRequest req = IOLAKE__OSD__PUT_SHARD_REQUEST__INIT;
		req.key = &key;
		req.length = sl;
		req.crc32c = crc32c(0, base + (size_t)i * sl, sl);
		struct buf_slice pl = { .buf = s->buf, .off = (size_t)i * sl, .len = sl };
		struct rpc_call_opts co = { .timeout_ms = p->e->o.timeout_ms };
		s->pending++;
		p->calls++;
		rpc_call(p->t.osds[i], OSD_SVC, OSD_M_PUT, &req.base, &pl, &co, on_put_shard, s);
	}
	if (s->pending == 0) {
		/* No OSD at all: settle from the loop, not from this call. */
		p->inflight--;
		put_fail(p, IOL_EUNAVAILABLE, "segment %u has no OSD to write to (%u slots empty)",
			 s->idx, s->fails);
		pseg_free(s);
		put_arm(p);
	}
}

static void put_send_queued(struct gw_ec_put *p)
{
	while (p->q_head && !p->status && p->inflight < p->e->o.window) {
		struct pseg *s = p->q_head;
		p->q_head = s->next;
		if (!p->q_head)
			p->q_tail = NULL;
		p->queued--;
		put_send(p, s);
	}
	if (p->status) {
		while (p->q_head) {
			struct pseg *s = p->q_head;
			p->q_head = s->next;
			pseg_free(s);
		}
		p->q_tail = NULL;
		p->queued = 0;
	}
}

static void put_seal(struct gw_ec_put *p)
{
	struct pseg *s = p->fill;
	p->fill = NULL;
	s->next = NULL;
	if (p->q_tail)
		p->q_tail->next = s;
	else
		p->q_head = s;
	p->q_tail = s;
	p->queued++;
	put_send_queued(p);
}

static void on_put_defer(uv_timer_t *t)
{
	struct gw_ec_put *p = t->data;
	p->defer_armed = false;
	put_check_done(p);
}

int gw_ec_put_start(struct gw_ec *e, const struct gw_ec_target *target, uint64_t size,
		    const struct gw_ec_put_cbs *cbs, void *ud, struct gw_ec_put **out)
{
	struct gw_ec_put *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->md5 = hash_stream_new(HASH_MD5);
	if (!p->md5) {
		free(p);
		return -ENOMEM;
	}
	p->e = e;
	p->t = *target;
	p->cbs = *cbs;
	p->ud = ud;
	p->l.k = e->o.k;
	p->l.m = e->o.m;
	p->l.chunk_bytes = e->o.chunk_bytes;
	p->l.pg = target->pg;
	p->l.size = size;
	uv_random(NULL, NULL, &p->l.shard_id, sizeof(p->l.shard_id), 0, NULL);
	uv_timer_init(e->loop, &p->defer);
	p->defer.data = p;
	*out = p;
	return 0;
}

int gw_ec_put_write(struct gw_ec_put *p, const void *data, size_t len)
{
	if (p->status)
		return p->status;
	if (p->fed + len > p->l.size) {
		put_fail(p, -EMSGSIZE, "body longer than announced at segment %u", p->next_idx);
		put_arm(p);
		return -EMSGSIZE;
	}
	hash_stream_update(p->md5, data, len);
	p->fed += len;
	const uint8_t *src = data;
	uint64_t sb = seg_bytes(&p->l);
	while (len) {
		if (p->fill && p->fill->len == sb)
			put_seal(p);
		if (!p->fill && !(p->fill = pseg_new(p))) {
			put_fail(p, -ENOMEM, "out of memory at segment %u", p->next_idx);
			put_arm(p);
			return -ENOMEM;
		}
		size_t n = sb - p->fill->len < len ? sb - p->fill->len : len;
		memcpy(p->fill->buf->data + p->fill->len, src, n);
		p->fill->len += (uint32_t)n;
		src += n;
		len -= n;
	}
	if (p->queued > 0) {
		p->want_writable = true;
		return 1;
	}
	return 0;
}

int gw_ec_put_finish(struct gw_ec_put *p)
{
	if (p->status)
		return p->status;
	if (p->fed != p->l.size) {
		put_fail(p, -EMSGSIZE, "body shorter than announced at segment %u", p->next_idx);
		put_arm(p);
		return -EMSGSIZE;
	}
	p->finished = true;
	if (p->fill)
		put_seal(p);
	put_arm(p);
	return 0;
}

void gw_ec_put_abort(struct gw_ec_put *p)
{
	put_fail(p, -ECANCELED, "aborted at segment %u", p->next_idx);
	put_send_queued(p);
	put_arm(p);
}

const struct gw_ec_layout *gw_ec_put_layout(const struct gw_ec_put *p) { return &p->l; }
const char *gw_ec_put_etag(const struct gw_ec_put *p) { return p->etag; }
const char *gw_ec_put_error(const struct gw_ec_put *p) { return p->err; }

static void put_closed(uv_handle_t *h)
{
	struct gw_ec_put *p = h->data;
	hash_stream_free(p->md5);
	free(p);
}

static void put_maybe_free(struct gw_ec_put *p)
{
	if (!p->released || p->calls)
		return;
	if (p->fill) {
		pseg_free(p->fill);
		p->fill = NULL;
	}
	uv_close((uv_handle_t *)&p->defer, put_closed);
}

void gw_ec_put_free(struct gw_ec_put *p)
{
	if (!p)
		return;
	if (!p->done) {
		/* Delete what was issued; calls in flight finish on their own. */
		put_fail(p, -ECANCELED, "freed at segment %u", p->next_idx);
		put_send_queued(p);
		uint64_t sb = seg_bytes(&p->l);
		struct gw_ec_layout dl = p->l;
		dl.size = (uint64_t)p->sent * sb < p->l.size ? (uint64_t)p->sent * sb : p->l.size;
		if (dl.size)
			gw_ec_delete(p->e, &p->t, &dl, NULL, NULL);
		p->done = true;
	}
	p->released = true;
	uv_timer_stop(&p->defer);
	put_maybe_free(p);
}

/* ------------------------------------------------------------ GET */

enum rstate { R_IDLE, R_READING, R_READY, R_FAILED };

struct rseg {
	struct gw_ec_get *g;
	enum rstate state;
	uint32_t idx, len, sl;
	struct buf_slice sh[EC_MAX_SHARDS];
	uint32_t present, asked;
	unsigned pending;
	bool parity_asked;
	struct buf *out;          /* assembled segment bytes, when ready */
};

struct gw_ec_get {
	struct gw_ec *e;
	struct gw_ec_target t;
	struct gw_ec_layout l;
	uint64_t pos, end;        /* next byte to hand out, end of range */
	uint32_t next_issue, last_seg;
	struct rseg *slots;       /* window slots; segment s uses s % window */
	unsigned calls;
	gw_ec_readable_cb cb;
	void *ud;
	bool waiting, released, failed;
	char err[200];
};

static void rseg_clear(struct rseg *r)
{
	for (int i = 0; i < EC_MAX_SHARDS; i++)
		if (r->sh[i].buf) {
			buf_unref(r->sh[i].buf);
			r->sh[i].buf = NULL;
		}
	if (r->out)
		buf_unref(r->out);
	r->out = NULL;
	r->present = r->asked = 0;
	r->pending = 0;
	r->parity_asked = false;
	r->state = R_IDLE;
}

static void get_maybe_free(struct gw_ec_get *g)
{
	if (!g->released || g->calls)
		return;
	for (unsigned i = 0; i < g->e->o.window; i++)
		rseg_clear(&g->slots[i]);
	free(g->slots);
	free(g);
}

static void get_ask(struct gw_ec_get *g, struct rseg *r, uint32_t i);

static void rseg_settle(struct gw_ec_get *g, struct rseg *r)
{
	uint32_t k = g->l.k, width = k + g->l.m;
	uint32_t dmask = (1u << k) - 1;
	if ((r->present & dmask) != dmask && !r->parity_asked) {
		/* A data shard is missing: read parity and decode. */
		r->parity_asked = true;
		for (uint32_t i = k; i < width; i++)
			get_ask(g, r, i);
		if (r->pending)
			return;
	}
	if (r->pending)
		return;
	unsigned have = (unsigned)__builtin_popcount(r->present);
	if ((r->present & dmask) != dmask && have < k) {
		r->state = R_FAILED;
		if (!g->failed) {
			g->failed = true;
			snprintf(g->err, sizeof(g->err),
				 "segment %u: only %u of %u shards readable (need %u)", r->idx, have,
				 width, k);
		}
		g->e->st.gets_failed++;
		return;
	}
	r->out = buf_new((size_t)k * r->sl);
	if (!r->out) {
		r->state = R_FAILED;
		g->failed = true;
		snprintf(g->err, sizeof(g->err), "out of memory");
		return;
	}
	uint8_t *ptrs[EC_MAX_SHARDS] = { 0 };
	for (uint32_t i = 0; i < width; i++)
		if (r->present & (1u << i))
			ptrs[i] = (uint8_t *)buf_slice_data(&r->sh[i]);
	uint32_t want = dmask & ~r->present;
	for (uint32_t i = 0; i < k; i++)
		if (want & (1u << i))
			ptrs[i] = r->out->data + (size_t)i * r->sl;
	if (want) {
		/* Decode only from shards that arrived and passed their checks. */
		if (ec_decode(code_for(g->e, k, g->l.m), r->sl, ptrs, r->present, want)) {
			r->state = R_FAILED;
			g->failed = true;
			snprintf(g->err, sizeof(g->err), "segment %u: decode failed", r->idx);
			return;
		}
		g->e->st.decodes++;
	}
	for (uint32_t i = 0; i < k; i++)
		if (!(want & (1u << i)))
			memcpy(r->out->data + (size_t)i * r->sl, ptrs[i], r->sl);
	r->out->len = r->len;
	for (uint32_t i = 0; i < width; i++)
		if (r->sh[i].buf) {
			buf_unref(r->sh[i].buf);
			r->sh[i].buf = NULL;
		}
	r->state = R_READY;
	g->e->st.segments_read++;
}

struct get_call {
	struct rseg *r;
	uint32_t idx;             /* segment the call was for (slots are reused) */
	uint32_t shard;
};

static void on_get_shard(void *ud, const struct rpc_result *res)
{
	struct get_call *gc = ud;
	struct rseg *r = gc->r;
	struct gw_ec_get *g = r->g;
	g->calls--;
	if (g->released || r->idx != gc->idx || r->state != R_READING) {
		free(gc);
		get_maybe_free(g);
		return;
	}
	r->pending--;
	bool ok = false;
	if (res->status == RPC_OK && res->resp) {
		const Iolake__Osd__GetShardResponse *resp = (const void *)res->resp;
		size_t n = res->payload.buf ? res->payload.len : 0;
		ok = n == r->sl && resp->length == n &&
		     crc32c(0, buf_slice_data(&res->payload), n) == resp->range_crc32c;
		if (!ok)
			g->e->st.shard_gets_failed++;
		if (ok) {
			r->sh[gc->shard] = res->payload;
			buf_ref(res->payload.buf);
			r->present |= 1u << gc->shard;
		}
	} else {
		g->e->st.shard_gets_failed++;
	}
	free(gc);
	rseg_settle(g, r);
	if (r->state != R_READING && g->waiting) {
		g->waiting = false;
		g->cb(g, g->ud);
	}
}

static void get_ask(struct gw_ec_get *g, struct rseg *r, uint32_t i)
{
	if (r->asked & (1u << i))
		return;
	r->asked |= 1u << i;
	if (!g->t.osds[i] || g->e->closing)
		return;
	struct get_call *gc = malloc(sizeof(*gc));
	if (!gc)
		return;
	gc->r = r;
	gc->idx = r->idx;
	gc->shard = i;
	uint8_t oid[GW_EC_OID_LEN];
	make_oid(oid, g->l.shard_id, r->idx);
	Iolake__Osd__ShardKey key = IOLAKE__OSD__SHARD_KEY__INIT;
	key.pg = g->l.pg;
	key.object_id.data = oid;
	key.object_id.len = sizeof(oid);
	key.shard = i;
	Iolake__Osd__GetShardRequest req = IOLAKE__OSD__GET_SHARD_REQUEST__INIT;
	req.key = &key;
	req.offset = 0;
	req.length = r->sl;
	struct rpc_call_opts co = { .timeout_ms = g->e->o.timeout_ms };
	r->pending++;
	g->calls++;
	rpc_call(g->t.osds[i], OSD_SVC, OSD_M_GET, &req.base, NULL, &co, on_get_shard, gc);
}

/* Start reading segments up to `window` ahead of the one being consumed. */
static void get_pump(struct gw_ec_get *g)
{
	unsigned w = g->e->o.window;
	uint64_t sb = seg_bytes(&g->l);
	uint32_t cur = (uint32_t)(g->pos / sb);
	while (!g->failed && g->next_issue <= g->last_seg && g->next_issue < cur + w) {
		struct rseg *r = &g->slots[g->next_issue % w];
		if (r->state != R_IDLE)
			break;
		r->g = g;
		r->idx = g->next_issue++;
		r->len = seg_len(&g->l, r->idx);
		r->sl = shard_len_of(r->len, g->l.k);
		r->state = R_READING;
		for (uint32_t i = 0; i < g->l.k; i++)
			get_ask(g, r, i);
		if (!r->pending)
			rseg_settle(g, r); /* every data OSD missing: parity or fail */
		if (r->state == R_READING && !r->pending)
			r->state = R_FAILED;
	}
}

int gw_ec_get_start(struct gw_ec *e, const struct gw_ec_target *target,
		    const struct gw_ec_layout *l, uint64_t off, uint64_t len, gw_ec_readable_cb cb,
		    void *ud, struct gw_ec_get **out)
{
	if (!l->k || l->k + l->m > EC_MAX_SHARDS || !l->chunk_bytes || off > l->size ||
	    len > l->size - off || !code_for(e, l->k, l->m))
		return -EINVAL;
	struct gw_ec_get *g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->slots = calloc(e->o.window, sizeof(*g->slots));
	if (!g->slots) {
		free(g);
		return -ENOMEM;
	}
	g->e = e;
	g->t = *target;
	g->l = *l;
	g->pos = off;
	g->end = off + len;
	g->cb = cb;
	g->ud = ud;
	uint64_t sb = seg_bytes(l);
	g->next_issue = (uint32_t)(off / sb);
	g->last_seg = len ? (uint32_t)((off + len - 1) / sb) : 0;
	if (len)
		get_pump(g);
	e->st.gets++;
	*out = g;
	return 0;
}

int gw_ec_get_read(struct gw_ec_get *g, struct buf_slice *out)
{
	if (g->pos >= g->end)
		return 0;
	if (g->failed)
		return IOL_EUNAVAILABLE;
	uint64_t sb = seg_bytes(&g->l);
	uint32_t s = (uint32_t)(g->pos / sb);
	struct rseg *r = &g->slots[s % g->e->o.window];
	if (r->state == R_FAILED)
		return IOL_EUNAVAILABLE;
	if (r->state != R_READY || r->idx != s) {
		g->waiting = true;
		return -EAGAIN;
	}
	uint64_t start = (uint64_t)s * sb;
	uint64_t stop = start + r->len < g->end ? start + r->len : g->end;
	out->buf = buf_ref(r->out);
	out->off = (size_t)(g->pos - start);
	out->len = (size_t)(stop - g->pos);
	g->pos = stop;
	if (stop == start + r->len) {
		rseg_clear(r);
		get_pump(g);
	}
	return 1;
}

const char *gw_ec_get_error(const struct gw_ec_get *g) { return g->err; }

void gw_ec_get_free(struct gw_ec_get *g)
{
	if (!g)
		return;
	g->released = true;
	get_maybe_free(g);
}
