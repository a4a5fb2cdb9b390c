/*
 * gw_data.c — the data path's context (options, cached EC codes, deferred
 * work), its buffer pool, the layout record codec and DELETE. PUT and GET
 * live in gw_data_put.c and gw_data_get.c, the deadline queue both use
 * (hedges, PUT graces) in gw_data_hedge.c.
 *
 * Pool invariant: a block is out (counted in pool->buffered and holding a
 * pool reference) from gwd_buf_get until its buf's last reference drops;
 * idle blocks are kept per power-of-two class while their total stays
 * under pool_max_bytes, the rest is freed. The pool itself goes when the
 * gw_data is freed and the last block has come back, so buffers handed to
 * a consumer may outlive the gw_data.
 *
 * Loop: the gw_data's, except pool_release (any thread, under pool->mu).
 *
 * Owns the gw_data context, its buffer pool and its deferred work. Does
 * not know S3 or meta: callers keep the layouts in their records and
 * decide what to delete.
 */
#include "gateway/gw_data.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "gateway/gw_data_int.h"
#include "proto/layout.pb-c.h"

#define DEF_SEGMENT (4u << 20)
#define MAX_SEGMENT (256u << 20)

/* ------------------------------------------------------------ pool */

/* Classes 4, 6, 8, 12, 16, 24 KiB ...: a 4+2 segment of 4 MiB (6 MiB of
 * shards) fits its class exactly, and no class wastes more than a third. */
static size_t class_size(unsigned c)
{
	return (c % 2 ? (size_t)6144 : (size_t)4096) << (c / 2);
}

static unsigned size_class(size_t n)
{
	unsigned c = 0;
	while (c + 1 < GWD_CLASSES && class_size(c) < n)
		c++;
	return c;
}

static void pool_unref(struct gwd_pool *p)
{
	if (atomic_fetch_sub(&p->refs, 1) != 1)
		return;
	while (p->msgs) {
		struct gwd_msg *m = p->msgs;
		p->msgs = m->next_free;
		free(m);
	}
	for (unsigned c = 0; c < GWD_CLASSES; c++) {
		void *m = p->free[c];
		while (m) {
			void *nx = *(void **)m;
			free(m);
			m = nx;
		}
	}
	pthread_mutex_destroy(&p->mu);
	free(p);
}

static void pool_add(struct gwd_pool *p, int64_t n)
{
	uint64_t now = atomic_fetch_add(&p->buffered, (uint64_t)n) + (uint64_t)n;
	if (n <= 0)
		return;
	uint64_t pk = atomic_load(&p->peak);
	while (now > pk && !atomic_compare_exchange_weak(&p->peak, &pk, now))
		;
}

/* A block is one allocation: the struct buf in the BLK_HDR bytes before
 * the data (buf_init_embedded). Blocks of BLK_PAGE_MIN and more start
 * their data on a 4 KiB page, so whole 1 MiB shards sit on page
 * boundaries and an OSD store writes them where they are instead of
 * copying them into an aligned buffer (osd/store, store_put). */
#define BLK_HDR 64
#define BLK_PAGE 4096
#define BLK_PAGE_MIN ((size_t)64 << 10)
_Static_assert(sizeof(struct buf) <= BLK_HDR, "struct buf fits a block's header");

/* Bytes from a block's start to its data. */
static size_t blk_off(size_t cap)
{
	return cap >= BLK_PAGE_MIN ? BLK_PAGE : BLK_HDR;
}

/* Last reference of a pooled buf: keep the memory if the pool has room. */
static void pool_release(struct buf *b)
{
	struct gwd_pool *p = b->owner;
	size_t cap = b->cap;
	unsigned c = size_class(cap);
	void *m = (uint8_t *)b - (blk_off(cap) - BLK_HDR); /* the block's start; b is dead */
	pool_add(p, -(int64_t)cap);
	pthread_mutex_lock(&p->mu);
	if (p->idle_bytes + cap <= p->idle_max && class_size(c) == cap) {
		*(void **)m = p->free[c];
		p->free[c] = m;
		p->idle_bytes += cap;
		m = NULL;
	}
	pthread_mutex_unlock(&p->mu);
	free(m);
	pool_unref(p);
}

struct buf *gwd_buf_get(struct gw_data *d, size_t n)
{
	struct gwd_pool *p = d->pool;
	unsigned c = size_class(n);
	size_t cap = class_size(c);
	void *m;
	if (cap < n)
		return NULL;
	pthread_mutex_lock(&p->mu);
	m = p->free[c];
	if (m) {
		p->free[c] = *(void **)m;
		p->idle_bytes -= cap;
	}
	pthread_mutex_unlock(&p->mu);
	size_t off = blk_off(cap);
	if (!m && !(m = aligned_alloc(off, off + cap)))
		return NULL;
	struct buf *b = (struct buf *)((uint8_t *)m + off - BLK_HDR);
	buf_init_embedded(b, (uint8_t *)m + off, cap, pool_release, p);
	b->len = n;
	atomic_fetch_add(&p->refs, 1);
	pool_add(p, (int64_t)cap);
	return b;
}

/* The last reference on a request message: back to the pool (any thread). */
static void msg_release(struct buf *b)
{
	struct gwd_msg *m = container_of(b, struct gwd_msg, hold);
	struct gwd_pool *p = m->pool;
	pthread_mutex_lock(&p->mu);
	if (p->msgs_idle < GWD_MSGS_IDLE) {
		m->next_free = p->msgs;
		p->msgs = m;
		p->msgs_idle++;
		m = NULL;
	}
	pthread_mutex_unlock(&p->mu);
	free(m);
	pool_unref(p);
}

struct gwd_msg *gwd_msg_get(struct gw_data *d, bool put, uint32_t pg, const uint8_t *oid,
			    uint32_t seg, uint32_t shard)
{
	struct gwd_pool *p = d->pool;
	pthread_mutex_lock(&p->mu);
	struct gwd_msg *m = p->msgs;
	if (m) {
		p->msgs = m->next_free;
		p->msgs_idle--;
	}
	pthread_mutex_unlock(&p->mu);
	if (!m && !(m = malloc(sizeof(*m))))
		return NULL;
	buf_init_embedded(&m->hold, NULL, 0, msg_release, p);
	m->pool = p;
	atomic_fetch_add(&p->refs, 1);
	gwd_key(&m->key, m->kb, pg, oid, seg, shard);
	if (put) {
		m->q.put = (Iolake__Osd__PutShardRequest)IOLAKE__OSD__PUT_SHARD_REQUEST__INIT;
		m->q.put.key = &m->key;
	} else {
		m->q.get = (Iolake__Osd__GetShardRequest)IOLAKE__OSD__GET_SHARD_REQUEST__INIT;
		m->q.get.key = &m->key;
	}
	return m;
}

void gwd_account(struct gw_data *d, int64_t n)
{
	pool_add(d->pool, n);
}

/* ------------------------------------------------------------ context */

static void on_kick(uv_timer_t *t)
{
	struct gw_data *d = t->data;
	struct gwd_deferred *w = d->dhead;
	d->dhead = d->dtail = NULL;
	while (w) {
		struct gwd_deferred *nx = w->next;
		w->queued = false;
		w->next = NULL;
		w->fn(w);
		w = nx;
	}
}

void gwd_defer(struct gw_data *d, struct gwd_deferred *w)
{
	if (w->queued)
		return;
	w->queued = true;
	w->next = NULL;
	if (d->dtail)
		d->dtail->next = w;
	else
		d->dhead = w;
	d->dtail = w;
	uv_timer_start(&d->kick, on_kick, 0, 0);
}

void gwd_undefer(struct gw_data *d, struct gwd_deferred *w)
{
	if (!w->queued)
		return;
	struct gwd_deferred **pp = &d->dhead, *prev = NULL;
	while (*pp && *pp != w) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	if (*pp) {
		*pp = w->next;
		if (d->dtail == w)
			d->dtail = prev;
	}
	w->queued = false;
	w->next = NULL;
}

struct ec_code *gwd_code(struct gw_data *d, unsigned k, unsigned m)
{
	for (unsigned i = 0; i < d->ncodes; i++)
		if (ec_k(d->codes[i]) == k && ec_m(d->codes[i]) == m)
			return d->codes[i];
	struct ec_code *c;
	if (ec_new(k, m, &c))
		return NULL;
	if (d->ncodes == GWD_CODES) {
		/* Rare (objects of many settings): replace the last slot but
		 * never the configured code in slot 0. Codes are only used
		 * synchronously, so freeing one is safe. */
		ec_free(d->codes[GWD_CODES - 1]);
		d->ncodes--;
	}
	d->codes[d->ncodes++] = c;
	return c;
}

int gw_data_new(uv_loop_t *loop, const struct gw_data_opts *opts, struct gw_data **out)
{
	struct gw_data_opts o = opts ? *opts : (struct gw_data_opts){ 0 };
	if (!o.k && !o.m) {
		o.k = 4;
		o.m = 2;
	}
	if (!o.segment_bytes)
		o.segment_bytes = DEF_SEGMENT;
	if (!o.write_quorum)
		o.write_quorum = o.m ? o.k + 1 : o.k;
	if (!o.window)
		o.window = 2;
	if (!o.timeout_ms)
		o.timeout_ms = 10000;
	if (!o.inline_max_bytes)
		o.inline_max_bytes = 4096;
	if (!o.max_ops)
		o.max_ops = 4096;
	if (!o.pool_max_bytes)
		o.pool_max_bytes = 256ull << 20;
	if (!o.hash_min_bytes)
		o.hash_min_bytes = 128u << 10;   /* below: a thread hop costs more */
	/* A process-wide switch for operators and A/B benchmarks. */
	const char *hedge = getenv("IOLAKE_GW_HEDGE");
	if (hedge && strcmp(hedge, "off") == 0)
		o.hedge_off = true;
	if (o.k < 1 || o.k + o.m > EC_MAX_SHARDS || o.segment_bytes > MAX_SEGMENT ||
	    o.write_quorum < o.k || o.write_quorum > o.k + o.m || o.window > 64)
		return -EINVAL;

	int rc = -ENOMEM;
	struct gw_data *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->loop = loop;
	d->o = o;
	d->pool = calloc(1, sizeof(*d->pool));
	if (!d->pool)
		goto free_d;
	pthread_mutex_init(&d->pool->mu, NULL);
	d->pool->idle_max = o.pool_max_bytes;
	atomic_init(&d->pool->refs, 1);
	if (!gwd_code(d, o.k, o.m)) {
		rc = -EINVAL;
		goto free_pool;
	}
	if (o.hash_pool && !(d->hash_port = workpool_port_new(o.hash_pool, loop)))
		goto free_code;
	if (!o.hedge_min_ms && !o.hedge_max_ms) {
		d->o.hedge_min_ms = 5;
		d->o.hedge_max_ms = 500;
	}
	if (d->o.hedge_max_ms < d->o.hedge_min_ms)
		d->o.hedge_max_ms = d->o.hedge_min_ms;
	if (!o.put_grace_min_ms && !o.put_grace_max_ms) {
		d->o.put_grace_min_ms = 20;
		d->o.put_grace_max_ms = 500;
	}
	if (d->o.put_grace_max_ms < d->o.put_grace_min_ms)
		d->o.put_grace_max_ms = d->o.put_grace_min_ms;
	/* Until samples come: a guess between loopback and a busy disk. */
	gw_lat_init(&d->lat, 950, 20000);
	gw_lat_init(&d->plat, 990, 20000);
	d->olat.q_permille = 950;
	d->oplat.q_permille = 990;
	rc = uv_timer_init(loop, &d->kick);
	if (rc)
		goto close_port;
	d->kick.data = d;
	uv_timer_init(loop, &d->hedge);
	d->hedge.data = d;
	d->handles = 2;
	*out = d;
	return 0;

close_port:
	workpool_port_close(d->hash_port);
free_code:
	ec_free(d->codes[0]);
free_pool:
	pool_unref(d->pool);
free_d:
	free(d);
	return rc;
}

void gwd_osd_lat_add(struct gwd_osd_lats *o, uint32_t id, uint64_t us)
{
	if (id == 0 || id >= GWD_OLAT_MAX)
		return;
	if (id >= o->n) {
		uint32_t n = o->n ? o->n : 16;
		while (n <= id)
			n *= 2;
		struct gw_lat *v = realloc(o->v, (size_t)n * sizeof(*v));
		if (!v)
			return;   /* the fallback stands in */
		for (uint32_t i = o->n; i < n; i++)
			gw_lat_init(&v[i], o->q_permille, 0);
		o->v = v;
		o->n = n;
	}
	gw_lat_add(&o->v[id], us);
}

const struct gw_lat *gwd_osd_lat_peek(const struct gwd_osd_lats *o, uint32_t id)
{
	if (id == 0 || id >= o->n || o->v[id].n < GW_LAT_EVERY)
		return NULL;
	return &o->v[id];
}

uint32_t gwd_osd_median_us(const struct gwd_osd_lats *o, const uint32_t *ids, unsigned n,
			   uint32_t fallback_us)
{
	uint32_t v[EC_MAX_SHARDS];
	unsigned k = 0;
	for (unsigned i = 0; i < n && i < EC_MAX_SHARDS; i++) {
		const struct gw_lat *l = gwd_osd_lat_peek(o, ids[i]);
		if (l)
			v[k++] = gw_lat_get(l);
	}
	if (2 * k < n)
		return fallback_us;
	for (unsigned i = 1; i < k; i++)   /* insertion sort: k <= 16 */
		for (unsigned j = i; j && v[j - 1] > v[j]; j--) {
			uint32_t x = v[j];
			v[j] = v[j - 1];
			v[j - 1] = x;
		}
	return v[(k - 1) / 2];
}

static void on_handle_closed(uv_handle_t *h)
{
	struct gw_data *d = h->data;
	if (--d->handles == 0)
		free(d);
}

static void free_lists(struct gw_data *d);

void gw_data_free(struct gw_data *d)
{
	if (d->st.live_ops) {
		fprintf(stderr, "gw_data_free: %u operations still live\n", d->st.live_ops);
		abort();
	}
	free_lists(d);
	free(d->olat.v);
	free(d->oplat.v);
	d->olat.v = d->oplat.v = NULL;
	for (unsigned i = 0; i < d->ncodes; i++)
		ec_free(d->codes[i]);
	pool_unref(d->pool);
	workpool_port_close(d->hash_port);   /* no PUT live: no hash job out */
	uv_timer_stop(&d->kick);
	uv_close((uv_handle_t *)&d->kick, on_handle_closed);
	uv_close((uv_handle_t *)&d->hedge, on_handle_closed);
}

void gw_data_stats(const struct gw_data *d, struct gw_data_stats *out)
{
	*out = d->st;
	out->buffered_bytes = atomic_load(&d->pool->buffered);
	out->buffered_peak = atomic_load(&d->pool->peak);
	pthread_mutex_lock(&d->pool->mu);
	out->pool_idle_bytes = d->pool->idle_bytes;
	pthread_mutex_unlock(&d->pool->mu);
	out->hedge_delay_ms = d->o.hedge_off ? 0 : gwd_hedge_delay_ms(d);
	out->put_grace_ms = d->o.put_grace_off ? 0 : gwd_put_grace_ms(d);
}

bool gw_data_is_inline(const struct gw_data *d, uint64_t size)
{
	return size <= d->o.inline_max_bytes;
}

void gwd_key(Iolake__Osd__ShardKey *k, uint8_t kb[GW_DATA_KEY_LEN], uint32_t pg,
	     const uint8_t *oid, uint32_t seg, uint32_t shard)
{
	iolake__osd__shard_key__init(k);
	memcpy(kb, oid, GW_DATA_OID_LEN);
	kb[GW_DATA_OID_LEN + 0] = (uint8_t)(seg >> 24);
	kb[GW_DATA_OID_LEN + 1] = (uint8_t)(seg >> 16);
	kb[GW_DATA_OID_LEN + 2] = (uint8_t)(seg >> 8);
	kb[GW_DATA_OID_LEN + 3] = (uint8_t)seg;
	k->pg = pg;
	k->object_id.data = kb;
	k->object_id.len = GW_DATA_KEY_LEN;
	k->shard = shard;
}

/* ------------------------------------------------------------ layout */

uint32_t gw_data_layout_nsegs(uint64_t size, uint32_t segment_bytes)
{
	uint64_t n = segment_bytes ? (size + segment_bytes - 1) / segment_bytes : 0;
	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

uint32_t gw_data_layout_seg_len(const struct gw_data_layout *l, uint32_t s)
{
	uint64_t start = (uint64_t)s * l->segment_bytes;
	if (start >= l->size)
		return 0;
	uint64_t left = l->size - start;
	return left < l->segment_bytes ? (uint32_t)left : l->segment_bytes;
}

uint32_t gw_data_layout_shard_len(const struct gw_data_layout *l, uint32_t s)
{
	uint32_t len = gw_data_layout_seg_len(l, s);
	return (len + l->k - 1) / l->k;
}

int gwd_layout_check(const struct gw_data_layout *l)
{
	if (l->k < 1 || l->k + l->m > EC_MAX_SHARDS || !l->segment_bytes ||
	    l->segment_bytes > MAX_SEGMENT)
		return -EINVAL;
	uint64_t n = l->segment_bytes ? (l->size + l->segment_bytes - 1) / l->segment_bytes : 0;
	if (n >= UINT32_MAX / EC_MAX_SHARDS || n != l->nsegs)
		return -EINVAL;
	return 0;
}

int gwd_layout_alloc(struct gw_data_layout *l)
{
	size_t n = (size_t)l->nsegs * (l->k + l->m);
	l->crcs = calloc(n ? n : 1, sizeof(uint32_t));
	l->missing = calloc(l->nsegs ? l->nsegs : 1, sizeof(uint32_t));
	if (!l->crcs || !l->missing) {
		free(l->crcs);
		free(l->missing);
		l->crcs = l->missing = NULL;
		return -ENOMEM;
	}
	return 0;
}

void gw_data_layout_clear(struct gw_data_layout *l)
{
	free(l->crcs);
	free(l->missing);
	memset(l, 0, sizeof(*l));
}

int gw_data_layout_copy(struct gw_data_layout *dst, const struct gw_data_layout *src)
{
	*dst = *src;
	dst->crcs = dst->missing = NULL;
	if (gwd_layout_alloc(dst))
		return -ENOMEM;
	memcpy(dst->crcs, src->crcs, (size_t)src->nsegs * (src->k + src->m) * sizeof(uint32_t));
	memcpy(dst->missing, src->missing, (size_t)src->nsegs * sizeof(uint32_t));
	return 0;
}

static void layout_msg(const struct gw_data_layout *l, Iolake__Layout__ObjectLayout *m)
{
	iolake__layout__object_layout__init(m);
	m->version = 1;
	m->k = l->k;
	m->m = l->m;
	m->segment_bytes = l->segment_bytes;
	m->size = l->size;
	m->object_id.data = (uint8_t *)l->object_id;
	m->object_id.len = GW_DATA_OID_LEN;
	m->pg = l->pg;
	m->n_shard_crc32c = (size_t)l->nsegs * (l->k + l->m);
	m->shard_crc32c = l->crcs;
	bool any = false;
	for (uint32_t s = 0; s < l->nsegs && !any; s++)
		any = l->missing && l->missing[s];
	if (any) {
		m->n_missing = l->nsegs;
		m->missing = l->missing;
	}
}

size_t gw_data_layout_encoded_len(const struct gw_data_layout *l)
{
	Iolake__Layout__ObjectLayout m;
	layout_msg(l, &m);
	return protobuf_c_message_get_packed_size(&m.base);
}

ssize_t gw_data_layout_encode(const struct gw_data_layout *l, uint8_t *out, size_t cap)
{
	Iolake__Layout__ObjectLayout m;
	layout_msg(l, &m);
	size_t need = protobuf_c_message_get_packed_size(&m.base);
	if (need > cap)
		return -ENOSPC;
	return (ssize_t)protobuf_c_message_pack(&m.base, out);
}

int gw_data_layout_decode(const uint8_t *in, size_t len, struct gw_data_layout *l)
{
	memset(l, 0, sizeof(*l));
	Iolake__Layout__ObjectLayout *m = iolake__layout__object_layout__unpack(NULL, len, in);
	if (!m)
		return IOL_ECORRUPT;
	int rc = IOL_ECORRUPT;
	if (m->version != 1 || m->object_id.len != GW_DATA_OID_LEN)
		goto out;
	l->k = m->k;
	l->m = m->m;
	l->segment_bytes = m->segment_bytes;
	l->size = m->size;
	l->pg = m->pg;
	memcpy(l->object_id, m->object_id.data, GW_DATA_OID_LEN);
	if (!l->k || l->k + l->m > EC_MAX_SHARDS || !l->segment_bytes ||
	    l->segment_bytes > MAX_SEGMENT)
		goto out;
	uint64_t nsegs = (l->size + l->segment_bytes - 1) / l->segment_bytes;
	if (nsegs >= UINT32_MAX / EC_MAX_SHARDS || m->n_shard_crc32c != nsegs * (l->k + l->m) ||
	    (m->n_missing && m->n_missing != nsegs))
		goto out;
	l->nsegs = (uint32_t)nsegs;
	if (gwd_layout_alloc(l)) {
		rc = -ENOMEM;
		goto out;
	}
	if (m->n_shard_crc32c)
		memcpy(l->crcs, m->shard_crc32c, m->n_shard_crc32c * sizeof(uint32_t));
	uint32_t all = (1u << (l->k + l->m)) - 1;
	for (size_t s = 0; s < m->n_missing; s++) {
		if (m->missing[s] & ~all)
			goto out;
		l->missing[s] = m->missing[s];
	}
	rc = 0;
out:
	iolake__layout__object_layout__free_unpacked(m, NULL);
	if (rc) {
		free(l->crcs);
		free(l->missing);
		memset(l, 0, sizeof(*l));
	}
	return rc;
}

/* ------------------------------------------------------------ delete */

static void walk_pump(struct gwd_walk *w);

static void on_del(void *ud, const struct rpc_result *res)
{
	struct gwd_walk *w = ud;
	w->inflight--;
	if (res->status != RPC_OK && res->status != RPC_NOT_FOUND) {
		w->failed++;
		w->d->st.shard_delete_failures++;
	}
	walk_pump(w);
}

static void walk_pump(struct gwd_walk *w)
{
	struct gw_data *d = w->d;
	while (w->next < w->total && w->inflight < w->max) {
		uint32_t s = (uint32_t)(w->next / w->n), i = (uint32_t)(w->next % w->n);
		w->next++;
		if (!w->t.osds[i]) {
			w->failed++;
			d->st.shard_delete_failures++;
			continue;
		}
		Iolake__Osd__ShardKey k;
		uint8_t kb[GW_DATA_KEY_LEN];
		Iolake__Osd__DeleteShardRequest q = IOLAKE__OSD__DELETE_SHARD_REQUEST__INIT;
		gwd_key(&k, kb, w->t.pg, w->oid, s, i);
		q.key = &k;
		struct rpc_call_opts co = { .timeout_ms = d->o.timeout_ms };
		w->inflight++;
		d->st.shard_deletes++;
		rpc_call(w->t.osds[i], OSD_SVC, GWD_M_DEL, &q.base, NULL, &co, on_del, w);
	}
	if (w->next == w->total && !w->inflight)
		w->done(w);
}

/* Starts the walk; done() may run from inside when there is nothing to
 * call (callers defer around it). */
void gwd_walk_start(struct gwd_walk *w)
{
	w->next = 0;
	w->total = (uint64_t)w->nsegs * w->n;
	w->inflight = 0;
	w->failed = 0;
	if (!w->max)
		w->max = w->d->o.window * w->n;
	walk_pump(w);
}

struct gwd_del {
	struct gwd_walk w;
	struct gwd_deferred dfr;
	gw_data_delete_cb cb;
	void *ud;
	bool started;
	struct gwd_del *next_free;
};

static void del_finish(struct gwd_walk *w)
{
	struct gwd_del *x = container_of(w, struct gwd_del, w);
	struct gw_data *d = w->d;
	gw_data_delete_cb cb = x->cb;
	void *ud = x->ud;
	uint32_t failed = w->failed;
	if (!x->started) {
		/* Finished inside gwd_walk_start (nothing to call): report on a
		 * later turn. */
		gwd_defer(d, &x->dfr);
		return;
	}
	d->st.live_ops--;
	x->next_free = d->free_dels;
	d->free_dels = x;
	cb(ud, failed ? IOL_EUNAVAILABLE : 0, failed);
}

static void del_deferred(struct gwd_deferred *f)
{
	struct gwd_del *x = container_of(f, struct gwd_del, dfr);
	del_finish(&x->w);
}

int gw_data_delete(struct gw_data *d, const struct gw_data_target *target,
		   const struct gw_data_layout *l, gw_data_delete_cb cb, void *ud)
{
	if (gwd_layout_check(l))
		return -EINVAL;
	if (d->st.live_ops >= d->o.max_ops)
		return -EAGAIN;
	struct gwd_del *x = d->free_dels;
	if (x)
		d->free_dels = x->next_free;
	else if (!(x = calloc(1, sizeof(*x))))
		return -ENOMEM;
	memset(x, 0, sizeof(*x));
	x->w.d = d;
	x->w.t = *target;
	x->w.t.pg = l->pg;
	memcpy(x->w.oid, l->object_id, GW_DATA_OID_LEN);
	x->w.n = l->k + l->m;
	x->w.nsegs = l->nsegs;
	x->w.done = del_finish;
	x->dfr.fn = del_deferred;
	x->cb = cb;
	x->ud = ud;
	d->st.live_ops++;
	d->st.deletes++;
	gwd_walk_start(&x->w);
	x->started = true;
	return 0;
}

static void free_lists(struct gw_data *d)
{
	while (d->free_dels) {
		struct gwd_del *x = d->free_dels;
		d->free_dels = x->next_free;
		free(x);
	}
	gwd_put_free_list(d);
	gwd_get_free_list(d);
}
