/*
 * service.c — RPC handlers of iolake.osd.Osd over the shard store.
 *
 * Owns: the call-context pool (ops), the admission counters (calls and put
 * bytes in flight), the drain state and the gauge refresh timer, and the
 * metric objects it registered. Thread: the store's loop, which is also
 * the RPC server's; store callbacks arrive there too. The one exception is
 * obs_kv(), which kv's commit thread calls: it only touches histograms
 * (lock-free atomics).
 *
 * Invariants:
 *  - A call that took an op is answered exactly once, from the store
 *    callback (or at once if the store refused it); the op goes back to
 *    the pool right after the answer. inflight == ops taken.
 *  - A PutShard's length is checked before the store sees it, and its
 *    crc32c in the store's one pass over the bytes (store_put_crc): a
 *    PutShard whose bytes were damaged in transit stores nothing and is
 *    answered DATA_LOSS. The one exception is an inline shard whose
 *    payload never left memory (rpc_req_payload_in_memory: the in-process
 *    transport handed the gateway's own buffer, over which it computed
 *    the crc): the store takes the carried crc as the record's without a
 *    pass. Bytes changed after that crc was computed are then caught by
 *    every read (the store verifies each record it returns: DATA_LOSS),
 *    not by the put. Over HTTP/2 every put is verified.
 *  - No answer carries bytes that failed their crc: the store verifies
 *    every block it returns, and its checksum error becomes DATA_LOSS. A
 *    whole-shard read's range_crc32c is the record's crc those blocks were
 *    just verified against (no second pass); a part's is computed.
 *  - The scrubber (if on) runs from attach until drain; drain completes
 *    only after it stopped, so the store is never closed under it.
 *  - Client calls first: a PutShard or GetShard marked background
 *    (recovery, deep scrub) is validated at once, then parked in FIFO
 *    order while any client call is doing store work, or while
 *    BG_INFLIGHT_MAX background calls are; a parked call goes anyway once
 *    it has waited opts.bg_max_wait_ms, so recovery never starves. Parked calls
 *    hold no op and no store resource; they count toward max_inflight
 *    (beyond it: busy) and are answered UNAVAILABLE by a drain.
 * Logs: each shard op slower than opts.slow_op_ms (warn) and every read
 * (debug), with the caller's request id, PG, shard, time queued vs in the
 * store; failures with the request id (warn for bad bytes, else debug).
 * Does not: retry, or hold shard bytes beyond the call (the store copies
 * a put's payload into its own aligned buffer).
 */
#include "osd/service.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc.h"
#include "common/err.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/proto/osd_methods.h"
#include "osd/store/scrub.h"
#include "osd/store/super.h"
#include "osd/sweep.h"
#include "proto/osd.pb-c.h"

#define SVC_DESC OSD_SVC

#define STAT_MANY_MAX 4096
#define LIST_DEFAULT 1000
#define LIST_MAX 10000
#define KEY_NAME_MAX (STORE_OID_MAX * 4 + 64)

/* Error kinds, as the iolake_osd_errors_total{kind} label. */
#define ERR_KINDS(X)                                           \
	X(INVALID, "invalid")     /* bad key, length, range */ \
	X(NOT_FOUND, "not_found")                              \
	X(CHECKSUM, "checksum")   /* in transit or on disk */  \
	X(CORRUPT, "corrupt")     /* undecodable index record */ \
	X(NO_SPACE, "no_space")                                \
	X(BUSY, "busy")           /* admission limits */       \
	X(UNAVAILABLE, "unavailable") /* draining, store failed */ \
	X(CANCELLED, "cancelled")                              \
	X(MISPLACED, "misplaced") /* a put placed with a stale map */

enum err_kind {
#define EK_ENUM(e, s) EK_##e,
	ERR_KINDS(EK_ENUM)
#undef EK_ENUM
	EK_COUNT
};

static const char *const ek_name[] = {
#define EK_STR(e, s) s,
	ERR_KINDS(EK_STR)
#undef EK_STR
};

enum op_kind { OP_PUT, OP_GET, OP_DEL, OP_KINDS };

#define OP_REQ_ID_MAX 64   /* request id bytes an op keeps (ids are 16) */

/* Background calls: at most this many doing store work while no client
 * call is, and none waits longer than this behind client calls. */
#define BG_INFLIGHT_MAX 8
#define BG_MAX_WAIT_MS 100

/* A background call waiting for its turn (validated, not started). */
struct parked {
	struct rpc_req *r;
	unsigned method;              /* OSD_M_PUT or OSD_M_GET */
	uint64_t since_ms;
	uint64_t since_us;            /* the same, for the slow-op log */
};
static const char *const op_method[] = { "PutShard", "GetShard", "DeleteShard" };

/* One call doing store I/O. From the pool; the store request is first so
 * req->data is the op. */
struct op {
	union {
		struct store_put_req put;
		struct store_get_req get;
		struct store_del_req del;
	} u;
	struct osd_service *svc;
	struct rpc_req *r;
	struct store_key key;
	enum op_kind kind;
	uint64_t bytes;      /* put payload counted against max_inflight_bytes */
	uint64_t t0_us;      /* store work began */
	uint64_t arrive_us;  /* the call arrived (earlier when it was parked) */
	char req_id[OP_REQ_ID_MAX + 1]; /* the caller's request id, for the log after answering */
	bool bg;             /* a background call */
	bool direct;         /* served on the caller's thread (d_get), not from the pool */
	struct op *next_free;
};

struct osd_service {
	uv_loop_t *loop;
	struct store *st;
	uint32_t osd_id;
	char id_label[12];
	char cluster_hex[33];

	struct op *ops;               /* the pool: max_inflight entries */
	struct op *free_ops;
	uint32_t max_inflight;
	/* Ops taken: written on the loop only, read by direct reads' admission
	 * on callers' threads (hence atomic). */
	_Atomic uint32_t inflight;
	atomic_uint direct_inflight;  /* direct reads running (any thread) */
	uint64_t max_bytes, bytes;

	/* background calls: a ring of max_inflight parked ones */
	struct parked *parked;
	uint32_t park_head, n_parked;
	uint32_t fg_inflight, bg_inflight;  /* ops taken, by kind of caller */
	uv_timer_t bg_timer;          /* the next release: now, or when the head ages */
	bool bg_timer_open;

	uv_timer_t timer;             /* gauge refresh */
	uint32_t refresh_ms;
	uint32_t bg_max_wait_ms;     /* opts.bg_max_wait_ms or BG_MAX_WAIT_MS */
	bool timer_open;
	_Atomic bool draining;        /* set on the loop; direct reads read it */
	void (*drain_cb)(void *arg);
	void *drain_arg;

	struct metrics_registry *reg;
	struct metrics_counter *puts, *gets, *dels, *bytes_in, *bytes_out;
	struct metrics_counter *errors[EK_COUNT];
	struct metrics_histogram *lat[OP_KINDS];
	struct metrics_histogram *batch, *kv_flush, *data_flush;
	struct metrics_gauge *qdepth, *used, *free_b, *reserved, *total, *inline_b, *inflight_g;
	struct metrics_gauge *kv_mem, *kv_imm, *kv_readers; /* the index's RocksDB memory */
	struct metrics_counter *bg_deferred;
	struct metrics_counter *direct_gets;
	struct metrics_histogram *bg_wait;

	struct store_scrub *scrub;    /* NULL when off or stopped */
	uint64_t scrub_rate, scrub_interval_ms;
	bool scrub_stopping;
	struct store_scrub_stats scrub_seen; /* last copied into the counters */
	struct metrics_counter *scrub_bytes, *scrub_shards, *scrub_passes, *scrub_errors;
	struct metrics_gauge *scrub_pos;

	bool slow_log;                /* opts: the slow-op log */
	uint32_t slow_op_ms;

	struct osd_sweep *sweep;      /* the orphan sweep's figures in Status; NULL: off */
	struct osd_service_hooks hooks; /* the recovery driver's, or zero */
};

static uint64_t now_us(void)
{
	return loop_now_ns() / 1000;
}

/* ------------------------------------------------------------ answers */

static void fail(struct osd_service *svc, struct rpc_req *r, enum err_kind k, int code,
		 const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void fail(struct osd_service *svc, struct rpc_req *r, enum err_kind k, int code,
		 const char *fmt, ...)
{
	char msg[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	metrics_counter_inc(svc->errors[k]);
	/* Bad bytes and a failing store are news; the rest (a missing shard,
	 * busy, a caller gone) is routine for hedged reads and recovery. */
	LOG_AT(k == EK_CHECKSUM || k == EK_CORRUPT ? LOG_LEVEL_WARN : LOG_LEVEL_DEBUG,
	       rpc_req_id(r), "shard call failed", "osd=%u kind=%s msg=%s", svc->osd_id, ek_name[k],
	       LOG_Q(msg));
	rpc_fail(r, code, "%s", msg);
}

/* A store error for shard `name` as a status the caller can act on. */
static void fail_store(struct osd_service *svc, struct rpc_req *r, int rc, const char *name,
		       uint64_t len)
{
	struct store_space sp;
	switch (rc) {
	case IOL_ENOT_FOUND:
		fail(svc, r, EK_NOT_FOUND, RPC_NOT_FOUND, "shard %s not found on osd %u", name,
		     svc->osd_id);
		return;
	case IOL_ENO_SPACE:
		store_space(svc->st, &sp);
		fail(svc, r, EK_NO_SPACE, RPC_RESOURCE_EXHAUSTED,
		     "no space left on osd %u for shard %s (%llu bytes; %llu of %llu bytes free%s)",
		     svc->osd_id, name, (unsigned long long)len,
		     (unsigned long long)sp.free_bytes, (unsigned long long)sp.total_bytes,
		     sp.free_bytes >= len ? ", but no contiguous run that large" : "");
		return;
	case -EAGAIN:
	case -ENOMEM:
		fail(svc, r, EK_BUSY, RPC_RESOURCE_EXHAUSTED,
		     "osd %u busy (%s); retry with backoff", svc->osd_id, iol_strerror(rc));
		return;
	case IOL_ETOO_LARGE:
		fail(svc, r, EK_INVALID, RPC_INVALID_ARGUMENT,
		     "shard %s: %llu bytes is above the OSD's largest shard", name,
		     (unsigned long long)len);
		return;
	case -EINVAL:
		fail(svc, r, EK_INVALID, RPC_INVALID_ARGUMENT, "shard %s: invalid request", name);
		return;
	case IOL_ECORRUPT:
	case IOL_EBAD_FORMAT:
		fail(svc, r, EK_CORRUPT, RPC_DATA_LOSS, "index record of shard %s on osd %u: %s",
		     name, svc->osd_id, iol_strerror(rc));
		return;
	case IOL_ESHUTDOWN:
		fail(svc, r, EK_UNAVAILABLE, RPC_UNAVAILABLE, "osd %u shutting down", svc->osd_id);
		return;
	default:
		fail(svc, r, EK_UNAVAILABLE, RPC_UNAVAILABLE, "osd %u store failed on shard %s: %s",
		     svc->osd_id, name, iol_strerror(rc));
		return;
	}
}

/* Refuse work while draining or before a store is attached. */
static bool refuse(struct osd_service *svc, struct rpc_req *r)
{
	if (svc->draining || !svc->st) {
		fail(svc, r, EK_UNAVAILABLE, RPC_UNAVAILABLE, "osd %u shutting down",
		     svc->osd_id);
		return true;
	}
	return false;
}

/* Validate and convert a wire key; on error the call is answered. */
static int key_from(struct osd_service *svc, struct rpc_req *r, const Iolake__Osd__ShardKey *m,
		    struct store_key *k, char *name)
{
	if (!m) {
		fail(svc, r, EK_INVALID, RPC_INVALID_ARGUMENT, "shard key missing");
		return -EINVAL;
	}
	if (m->object_id.len < 1 || m->object_id.len > STORE_OID_MAX) {
		fail(svc, r, EK_INVALID, RPC_INVALID_ARGUMENT,
		     "object id must be 1..%d bytes, got %zu", STORE_OID_MAX, m->object_id.len);
		return -EINVAL;
	}
	if (m->shard > 255) {
		fail(svc, r, EK_INVALID, RPC_INVALID_ARGUMENT, "shard index %u is above 255",
		     m->shard);
		return -EINVAL;
	}
	store_key_make(k, m->pg, m->object_id.data, m->object_id.len, (uint8_t)m->shard);
	if (name)
		store_key_format(k, name, KEY_NAME_MAX);
	return 0;
}

/* Wire form of a key; oid points into k. */
static void key_to(const struct store_key *k, Iolake__Osd__ShardKey *m)
{
	iolake__osd__shard_key__init(m);
	m->pg = k->pg;
	m->object_id.data = (uint8_t *)k->oid;
	m->object_id.len = k->oid_len;
	m->shard = k->shard;
}

static void info_to(const struct store_stat *st, Iolake__Osd__ShardKey *key,
		    Iolake__Osd__ShardInfo *m)
{
	iolake__osd__shard_info__init(m);
	m->key = key;
	m->length = st->length;
	m->crc32c = st->crc;
	m->is_inline = st->is_inline;
}

/* ------------------------------------------------------------ ops */

static void maybe_drained(struct osd_service *svc)
{
	if (!svc->draining || svc->inflight || svc->timer_open || svc->bg_timer_open ||
	    svc->scrub || !svc->drain_cb)
		return;
	void (*cb)(void *) = svc->drain_cb;
	svc->drain_cb = NULL;
	cb(svc->drain_arg);
}

/* ------------------------------------------------------------ background */

static void on_bg_timer(uv_timer_t *t);

/* Release parked calls from a clean stack in ms (0: on the next loop turn). */
static void bg_kick(struct osd_service *svc, uint64_t ms)
{
	if (svc->bg_timer_open && !svc->draining)
		uv_timer_start(&svc->bg_timer, on_bg_timer, ms, 0);
}

/* Park background call r (validated) when client calls are doing store
 * work, other background calls wait, or enough of them run. true: parked
 * (or answered busy); false: start it now. */
static bool bg_defer(struct osd_service *svc, struct rpc_req *r, unsigned method)
{
	if (!svc->n_parked && !svc->fg_inflight && svc->bg_inflight < BG_INFLIGHT_MAX)
		return false;
	if (svc->inflight + svc->n_parked >= svc->max_inflight) {
		fail(svc, r, EK_BUSY, RPC_RESOURCE_EXHAUSTED,
		     "osd %u busy: %u calls in flight and %u background calls parked (limit %u); "
		     "retry with backoff",
		     svc->osd_id, svc->inflight, svc->n_parked, svc->max_inflight);
		return true;
	}
	struct parked *p = &svc->parked[(svc->park_head + svc->n_parked) % svc->max_inflight];
	p->r = r;
	p->method = method;
	p->since_ms = loop_now_ms();
	p->since_us = now_us();
	if (!svc->n_parked++)
		bg_kick(svc, svc->bg_max_wait_ms);
	metrics_counter_inc(svc->bg_deferred);
	return true;
}

static void put_go(struct osd_service *svc, struct rpc_req *r, bool bg, uint64_t arrive_us);
static void get_go(struct osd_service *svc, struct rpc_req *r, bool bg, uint64_t arrive_us);

/* Start the parked calls whose turn came: all of them while no client
 * call does store work (up to BG_INFLIGHT_MAX running), and any that has
 * waited bg_max_wait_ms regardless. */
static void on_bg_timer(uv_timer_t *t)
{
	struct osd_service *svc = t->data;
	uint64_t now = loop_now_ms();
	while (svc->n_parked && !svc->draining) {
		struct parked p = svc->parked[svc->park_head];
		bool aged = now - p.since_ms >= svc->bg_max_wait_ms;
		if (!aged && (svc->fg_inflight || svc->bg_inflight >= BG_INFLIGHT_MAX))
			break;
		svc->park_head = (svc->park_head + 1) % svc->max_inflight;
		svc->n_parked--;
		metrics_histogram_observe(svc->bg_wait, (now - p.since_ms) * 1000);
		if (p.method == OSD_M_PUT)
			put_go(svc, p.r, true, p.since_us);
		else
			get_go(svc, p.r, true, p.since_us);
	}
	if (svc->n_parked && !svc->draining) {
		uint64_t since = svc->parked[svc->park_head].since_ms;
		uint64_t wait = svc->bg_max_wait_ms;
		uint64_t due = since + wait > now ? since + wait - now : 0;
		bg_kick(svc, due);
	}
}

/* Drain: every parked call is answered UNAVAILABLE. */
static void bg_fail_parked(struct osd_service *svc)
{
	while (svc->n_parked) {
		struct parked *p = &svc->parked[svc->park_head];
		svc->park_head = (svc->park_head + 1) % svc->max_inflight;
		svc->n_parked--;
		fail(svc, p->r, EK_UNAVAILABLE, RPC_UNAVAILABLE, "osd %u shutting down", svc->osd_id);
	}
}

/* Take a context for a store call, or answer busy. */
static struct op *op_take(struct osd_service *svc, struct rpc_req *r, enum op_kind kind,
			  uint64_t bytes, bool bg)
{
	struct op *op = svc->free_ops;
	/* Direct reads (d_get) count against the same limit. */
	uint32_t direct = atomic_load_explicit(&svc->direct_inflight, memory_order_relaxed);
	if (!op || svc->inflight + direct >= svc->max_inflight ||
	    svc->bytes + bytes > svc->max_bytes) {
		fail(svc, r, EK_BUSY, RPC_RESOURCE_EXHAUSTED,
		     "osd %u busy: %u calls and %llu payload bytes in flight (limits %u, %llu); "
		     "retry with backoff",
		     svc->osd_id, svc->inflight, (unsigned long long)svc->bytes,
		     svc->max_inflight, (unsigned long long)svc->max_bytes);
		return NULL;
	}
	svc->free_ops = op->next_free;
	svc->inflight++;
	svc->bytes += bytes;
	if (bg)
		svc->bg_inflight++;
	else
		svc->fg_inflight++;
	op->bg = bg;
	op->direct = false;
	op->svc = svc;
	op->r = r;
	op->kind = kind;
	op->bytes = bytes;
	op->t0_us = now_us();
	op->arrive_us = op->t0_us;
	const char *id = rpc_req_id(r);
	size_t idlen = strnlen(id, OP_REQ_ID_MAX);
	memcpy(op->req_id, id, idlen);
	op->req_id[idlen] = 0;
	memset(&op->u, 0, sizeof(op->u));
	op->u.put.data = op; /* .data is the first field of every request kind */
	return op;
}

/* The slow-op log: op (answered: ok, or failed) took total_us from its
 * arrival. Every read at debug; any op past slow_op_ms at warn. */
static void op_log(const struct op *op, bool ok, uint64_t end_us)
{
	const struct osd_service *svc = op->svc;
	uint64_t total_us = end_us - op->arrive_us;
	bool slow = svc->slow_log && total_us >= (uint64_t)svc->slow_op_ms * 1000;
	enum log_level lv = slow ? LOG_LEVEL_WARN : LOG_LEVEL_DEBUG;
	if (!(slow || op->kind == OP_GET) || !log_enabled(lv))
		return;
	char oid[STORE_OID_MAX * 2 + 1];
	static const char hex[] = "0123456789abcdef";
	for (uint32_t i = 0; i < op->key.oid_len; i++) {
		oid[2 * i] = hex[op->key.oid[i] >> 4];
		oid[2 * i + 1] = hex[op->key.oid[i] & 15];
	}
	oid[2 * op->key.oid_len] = 0;
	LOG_AT(lv, op->req_id, slow ? "slow shard op" : "shard op",
	       "osd=%u op=%s pg=%u shard=%u oid=%s bytes=%llu queue_ms=%.1f store_ms=%.1f "
	       "total_ms=%.1f status=%s bg=%d direct=%d",
	       svc->osd_id, op_method[op->kind], op->key.pg, op->key.shard, oid,
	       (unsigned long long)(op->kind == OP_GET ? op->u.get.out.len : op->bytes),
	       (double)(op->t0_us - op->arrive_us) / 1000, (double)(end_us - op->t0_us) / 1000,
	       (double)total_us / 1000, ok ? "ok" : "failed", op->bg, op->direct);
}

/* After the call was answered. */
static void op_release(struct op *op, bool observe)
{
	struct osd_service *svc = op->svc;
	uint64_t end_us = svc->slow_log || log_enabled(LOG_LEVEL_DEBUG) || observe ? now_us() : 0;
	if (end_us)
		op_log(op, observe, end_us);
	if (observe)
		metrics_histogram_observe(svc->lat[op->kind], end_us - op->t0_us);
	svc->bytes -= op->bytes;
	svc->inflight--;
	if (op->bg)
		svc->bg_inflight--;
	else
		svc->fg_inflight--;
	if (svc->n_parked && (op->bg || !svc->fg_inflight))
		bg_kick(svc, 0);
	op->r = NULL;
	op->next_free = svc->free_ops;
	svc->free_ops = op;
	maybe_drained(svc);
}

/* ------------------------------------------------------------ PutShard */

static void on_put(struct store_put_req *req, int status)
{
	struct op *op = req->data;
	struct osd_service *svc = op->svc;
	if (status) {
		char name[KEY_NAME_MAX];
		store_key_format(&op->key, name, sizeof(name));
		fail_store(svc, op->r, status, name, op->bytes);
		op_release(op, false);
		return;
	}
	metrics_counter_inc(svc->puts);
	metrics_counter_add(svc->bytes_in, op->bytes);
	Iolake__Osd__ShardKey k;
	Iolake__Osd__ShardInfo info;
	Iolake__Osd__PutShardResponse resp = IOLAKE__OSD__PUT_SHARD_RESPONSE__INIT;
	struct store_stat st = { .length = op->bytes, .crc = req->crc, .is_inline = req->is_inline };
	key_to(&op->key, &k);
	info_to(&st, &k, &info);
	resp.info = &info;
	rpc_respond(op->r, &resp.base, NULL);
	op_release(op, true);
}

static void h_put(struct rpc_req *r, void *ud)
{
	struct osd_service *svc = ud;
	const Iolake__Osd__PutShardRequest *q = (const void *)rpc_req_msg(r);
	const struct buf_slice *pl = rpc_req_payload(r);
	struct buf_slice data = pl->buf ? *pl : (struct buf_slice){ 0 };
	struct store_key k;
	char name[KEY_NAME_MAX];
	if (refuse(svc, r) || key_from(svc, r, q->key, &k, name))
		return;
	if (q->length != data.len) {
		fail(svc, r, EK_INVALID, RPC_INVALID_ARGUMENT,
		     "shard %s: payload is %zu bytes but length says %llu (not stored)", name,
		     data.len, (unsigned long long)q->length);
		return;
	}
	char why[200];
	if (q->map_epoch && svc->hooks.misplaced &&
	    svc->hooks.misplaced(svc->hooks.arg, k.pg, k.shard, q->map_epoch, why, sizeof(why))) {
		fail(svc, r, EK_MISPLACED, RPC_FAILED_PRECONDITION,
		     "shard %s misplaced on osd %u (not stored): %s", name, svc->osd_id, why);
		return;
	}
	if (q->background && bg_defer(svc, r, OSD_M_PUT))
		return;
	put_go(svc, r, q->background, 0);
}

/* Store a validated PutShard: now, or when its background turn came. */
static void put_go(struct osd_service *svc, struct rpc_req *r, bool bg, uint64_t arrive_us)
{
	const Iolake__Osd__PutShardRequest *q = (const void *)rpc_req_msg(r);
	const struct buf_slice *pl = rpc_req_payload(r);
	struct buf_slice data = pl->buf ? *pl : (struct buf_slice){ 0 };
	struct store_key k;
	char name[KEY_NAME_MAX];
	if (rpc_req_cancelled(r)) {
		fail(svc, r, EK_CANCELLED, RPC_CANCELLED, "caller gone before the put started");
		return;
	}
	key_from(svc, r, q->key, &k, name); /* validated by h_put */
	struct op *op = op_take(svc, r, OP_PUT, data.len, bg);
	if (!op)
		return;
	if (arrive_us)
		op->arrive_us = arrive_us;
	op->key = k;
	int rc = store_put_crc(svc->st, &op->u.put, &k, data, q->crc32c,
			       !rpc_req_payload_in_memory(r), on_put);
	if (rc == IOL_ECHECKSUM) {
		fail(svc, r, EK_CHECKSUM, RPC_DATA_LOSS,
		     "shard %s: payload does not match the request's crc32c 0x%08x "
		     "(damaged in transit or since the crc; not stored)",
		     name, q->crc32c);
		op_release(op, false);
	} else if (rc) {
		fail_store(svc, r, rc, name, data.len);
		op_release(op, false);
	}
}

/* ------------------------------------------------------------ GetShard */

/* Answer a GetShard whose read succeeded (on_get on the loop, d_get on
 * the caller's thread): the shard's info, the range's crc, the bytes;
 * drops the read's reference. The store has just verified the bytes
 * against the record's crc (every block, or the inline value), so a read
 * of the whole shard answers that crc without a pass over the bytes. */
static void respond_get(struct osd_service *svc, struct rpc_req *r, const struct store_key *key,
			struct store_get_req *req)
{
	const Iolake__Osd__GetShardRequest *q = (const void *)rpc_req_msg(r);
	Iolake__Osd__ShardKey k;
	Iolake__Osd__ShardInfo info;
	Iolake__Osd__GetShardResponse resp = IOLAKE__OSD__GET_SHARD_RESPONSE__INIT;
	key_to(key, &k);
	info_to(&req->stat, &k, &info);
	resp.info = &info;
	resp.offset = q->offset;
	resp.length = req->out.len;
	resp.range_crc32c = q->offset == 0 && req->out.len == req->stat.length ?
				    req->stat.crc :
				    crc32c(0, buf_slice_data(&req->out), req->out.len);
	metrics_counter_inc(svc->gets);
	metrics_counter_add(svc->bytes_out, req->out.len);
	rpc_respond(r, &resp.base, req->out.buf ? &req->out : NULL);
	buf_unref(req->out.buf);
}

static void on_get(struct store_get_req *req, int status)
{
	struct op *op = req->data;
	struct osd_service *svc = op->svc;
	struct rpc_req *r = op->r;
	if (status == IOL_ECHECKSUM) {
		fail(svc, r, EK_CHECKSUM, RPC_DATA_LOSS, "%s on osd %u", req->err, svc->osd_id);
		/* Stored bytes went bad: have the PG's primary rewrite them. */
		if (svc->hooks.bad_pg)
			svc->hooks.bad_pg(svc->hooks.arg, op->key.pg);
		op_release(op, false);
		return;
	}
	if (status) {
		char name[KEY_NAME_MAX];
		store_key_format(&op->key, name, sizeof(name));
		fail_store(svc, r, status, name, 0);
		op_release(op, false);
		return;
	}
	if (rpc_req_cancelled(r)) {
		/* The answer would be dropped: skip the crc and the send. */
		buf_unref(req->out.buf);
		fail(svc, r, EK_CANCELLED, RPC_CANCELLED, "caller gone");
		op_release(op, false);
		return;
	}
	respond_get(svc, r, &op->key, req);
	op_release(op, true);
}

static void h_get(struct rpc_req *r, void *ud)
{
	struct osd_service *svc = ud;
	const Iolake__Osd__GetShardRequest *q = (const void *)rpc_req_msg(r);
	struct store_key k;
	if (refuse(svc, r) || key_from(svc, r, q->key, &k, NULL))
		return;
	if (q->background && bg_defer(svc, r, OSD_M_GET))
		return;
	get_go(svc, r, q->background, 0);
}

/* Read a validated GetShard: now, or when its background turn came. */
static void get_go(struct osd_service *svc, struct rpc_req *r, bool bg, uint64_t arrive_us)
{
	const Iolake__Osd__GetShardRequest *q = (const void *)rpc_req_msg(r);
	struct store_key k;
	char name[KEY_NAME_MAX];
	if (rpc_req_cancelled(r)) {
		fail(svc, r, EK_CANCELLED, RPC_CANCELLED, "caller gone before the read started");
		return;
	}
	/* Validated by h_get. The name is formatted only for an error: a
	 * snprintf per read showed in GET 64 KiB profiles. */
	key_from(svc, r, q->key, &k, NULL);
	struct op *op = op_take(svc, r, OP_GET, 0, bg);
	if (!op)
		return;
	if (arrive_us)
		op->arrive_us = arrive_us;
	op->key = k;
	uint64_t len = q->length ? q->length : UINT64_MAX;
	int rc = store_get(svc->st, &op->u.get, &k, q->offset, len, on_get);
	if (rc)
		store_key_format(&k, name, sizeof(name));
	if (rc == -EINVAL) {
		/* The key is valid: the offset is past the end. */
		fail(svc, r, EK_INVALID, RPC_OUT_OF_RANGE, "shard %s: offset %llu is past its end",
		     name, (unsigned long long)q->offset);
		op_release(op, false);
	} else if (rc) {
		fail_store(svc, r, rc, name, 0);
		op_release(op, false);
	}
}

/* GetShard's direct handler (rpc_direct_fn; the in-process transport, on
 * the caller's thread, while this service's loop runs): serve a client
 * read of an inline shard now, with the posted path's admission, deadline,
 * metrics and slow-op log; anything else is left to h_get on the loop
 * (false, r untouched): background calls (they may have to park), an OSD
 * draining, a deadline passed or the caller gone, a bad key, the OSD at
 * max_inflight, a shard on the device or an index record RocksDB would
 * read from a table file (store_get_now: -EWOULDBLOCK), and
 * every error, so failures are answered, counted and reported (bad_pg) in
 * one place. What it touches of svc: read-only fields, atomics
 * (inflight, direct_inflight, draining, the metrics), the store through
 * store_get_now. The store stays open meanwhile: draining is set before
 * the server closes, the server's close waits for direct handlers, and the
 * store closes after it (aio_osd.c). */
static bool d_get(struct rpc_req *r, void *ud)
{
	struct osd_service *svc = ud;
	const Iolake__Osd__GetShardRequest *q = (const void *)rpc_req_msg(r);
	const Iolake__Osd__ShardKey *m = q->key;
	if (q->background || !svc->st || atomic_load(&svc->draining) || rpc_req_cancelled(r))
		return false;
	if (!m || m->object_id.len < 1 || m->object_id.len > STORE_OID_MAX || m->shard > 255)
		return false;
	uint32_t n = atomic_fetch_add(&svc->direct_inflight, 1) + 1;
	if (n + atomic_load_explicit(&svc->inflight, memory_order_relaxed) > svc->max_inflight)
		goto decline;
	/* An op on the stack, for the slow-op log: the pool is the loop's. */
	struct op op = { .svc = svc, .r = r, .kind = OP_GET, .direct = true };
	op.t0_us = op.arrive_us = now_us();
	store_key_make(&op.key, m->pg, m->object_id.data, m->object_id.len, (uint8_t)m->shard);
	uint64_t len = q->length ? q->length : UINT64_MAX;
	struct store_get_req *req = &op.u.get;
	if (store_get_now(svc->st, req, &op.key, q->offset, len) != 0)
		goto decline;
	const char *id = rpc_req_id(r);
	size_t idlen = strnlen(id, OP_REQ_ID_MAX);
	memcpy(op.req_id, id, idlen);
	op.req_id[idlen] = 0;
	metrics_counter_inc(svc->direct_gets);
	respond_get(svc, r, &op.key, req);
	/* As op_release, without the pool and the loop's counters. */
	uint64_t end_us = now_us();
	op_log(&op, true, end_us);
	metrics_histogram_observe(svc->lat[OP_GET], end_us - op.t0_us);
	atomic_fetch_sub(&svc->direct_inflight, 1);
	return true;

decline:
	atomic_fetch_sub(&svc->direct_inflight, 1);
	return false;
}

/* ------------------------------------------------------------ DeleteShard */

static void on_del(struct store_del_req *req, int status)
{
	struct op *op = req->data;
	struct osd_service *svc = op->svc;
	if (status) {
		char name[KEY_NAME_MAX];
		store_key_format(&op->key, name, sizeof(name));
		fail_store(svc, op->r, status, name, 0);
		op_release(op, false);
		return;
	}
	metrics_counter_inc(svc->dels);
	Iolake__Osd__DeleteShardResponse resp = IOLAKE__OSD__DELETE_SHARD_RESPONSE__INIT;
	rpc_respond(op->r, &resp.base, NULL);
	op_release(op, true);
}

static void h_del(struct rpc_req *r, void *ud)
{
	struct osd_service *svc = ud;
	const Iolake__Osd__DeleteShardRequest *q = (const void *)rpc_req_msg(r);
	struct store_key k;
	char name[KEY_NAME_MAX];
	if (refuse(svc, r) || key_from(svc, r, q->key, &k, name))
		return;
	struct op *op = op_take(svc, r, OP_DEL, 0, false);
	if (!op)
		return;
	op->key = k;
	int rc = store_delete(svc->st, &op->u.del, &k, on_del);
	if (rc) {
		fail_store(svc, r, rc, name, 0);
		op_release(op, false);
	}
}

/* ------------------------------------------------------------ metadata */

static void h_stat(struct rpc_req *r, void *ud)
{
	struct osd_service *svc = ud;
	const Iolake__Osd__StatShardRequest *q = (const void *)rpc_req_msg(r);
	struct store_key k;
	char name[KEY_NAME_MAX];
	if (refuse(svc, r) || key_from(svc, r, q->key, &k, name))
		return;
	struct store_stat st;
	int rc = store_stat(svc->st, &k, &st);
	if (rc) {
		fail_store(svc, r, rc, name, 0);
		return;
	}
	Iolake__Osd__ShardInfo info;
	Iolake__Osd__StatShardResponse resp = IOLAKE__OSD__STAT_SHARD_RESPONSE__INIT;
	info_to(&st, q->key, &info);
	resp.info = &info;
	rpc_respond(r, &resp.base, NULL);
}

static int status_code(int rc)
{
	switch (rc) {
	case 0: return RPC_OK;
	case IOL_ENOT_FOUND: return RPC_NOT_FOUND;
	case -EINVAL: return RPC_INVALID_ARGUMENT;
	case IOL_ECORRUPT:
	case IOL_EBAD_FORMAT: return RPC_DATA_LOSS;
	default: return RPC_UNAVAILABLE;
	}
}

static void h_stats(struct rpc_req *r, void *ud)
{
	struct osd_service *svc = ud;
	const Iolake__Osd__StatShardsRequest *q = (const void *)rpc_req_msg(r);
	if (refuse(svc, r))
		return;
	size_t n = q->n_keys;
	if (n > STAT_MANY_MAX) {
		fail(svc, r, EK_INVALID, RPC_INVALID_ARGUMENT, "%zu keys in one StatShards (max %d)",
		     n, STAT_MANY_MAX);
		return;
	}
	struct store_key *keys = calloc(n ? n : 1, sizeof(*keys));
	struct store_stat *st = calloc(n ? n : 1, sizeof(*st));
	int *status = calloc(n ? n : 1, sizeof(*status));
	Iolake__Osd__ShardStat *res = calloc(n ? n : 1, sizeof(*res));
	Iolake__Osd__ShardStat **resp_p = calloc(n ? n : 1, sizeof(*resp_p));
	Iolake__Osd__ShardInfo *infos = calloc(n ? n : 1, sizeof(*infos));
	if (!keys || !st || !status || !res || !resp_p || !infos) {
		fail(svc, r, EK_BUSY, RPC_RESOURCE_EXHAUSTED, "osd %u out of memory", svc->osd_id);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const Iolake__Osd__ShardKey *m = q->keys[i];
		/* An invalid key stays oid_len 0: store_stat_many reports it
		 * -EINVAL without reading. */
		if (m && m->object_id.len >= 1 && m->object_id.len <= STORE_OID_MAX &&
		    m->shard <= 255)
			store_key_make(&keys[i], m->pg, m->object_id.data, m->object_id.len,
				       (uint8_t)m->shard);
	}
	if (store_stat_many(svc->st, keys, n, st, status) != 0) {
		fail(svc, r, EK_BUSY, RPC_RESOURCE_EXHAUSTED, "osd %u out of memory", svc->osd_id);
		goto out;
	}
	Iolake__Osd__StatShardsResponse resp = IOLAKE__OSD__STAT_SHARDS_RESPONSE__INIT;
	for (size_t i = 0; i < n; i++) {
		iolake__osd__shard_stat__init(&res[i]);
		res[i].status = status_code(status[i]);
		if (status[i] == 0) {
			info_to(&st[i], q->keys[i], &infos[i]);
			res[i].info = &infos[i];
		}
		resp_p[i] = &res[i];
	}
	resp.n_results = n;
	resp.results = resp_p;
	rpc_respond(r, &resp.base, NULL);
out:
	free(keys);
	free(st);
	free(status);
	free(res);
	free(resp_p);
	free(infos);
}

static void h_list(struct rpc_req *r, void *ud)
{
	struct osd_service *svc = ud;
	const Iolake__Osd__ListShardsRequest *q = (const void *)rpc_req_msg(r);
	if (refuse(svc, r))
		return;
	struct store_key after;
	if (q->after) {
		if (key_from(svc, r, q->after, &after, NULL))
			return;
		if (after.pg != q->pg) {
			fail(svc, r, EK_INVALID, RPC_INVALID_ARGUMENT,
			     "list of pg %u: after-key is in pg %u", q->pg, after.pg);
			return;
		}
	}
	size_t limit = q->limit ? q->limit : LIST_DEFAULT;
	if (limit > LIST_MAX)
		limit = LIST_MAX;
	struct store_list_ent *ents = malloc(limit * sizeof(*ents));
	Iolake__Osd__ShardInfo *infos = malloc(limit * sizeof(*infos));
	Iolake__Osd__ShardInfo **ptrs = malloc(limit * sizeof(*ptrs));
	Iolake__Osd__ShardKey *keys = malloc(limit * sizeof(*keys));
	if (!ents || !infos || !ptrs || !keys) {
		fail(svc, r, EK_BUSY, RPC_RESOURCE_EXHAUSTED, "osd %u out of memory", svc->osd_id);
		goto out;
	}
	bool more;
	int n = store_list(svc->st, q->pg, q->after ? &after : NULL, ents, limit, &more);
	if (n < 0) {
		char name[32];
		snprintf(name, sizeof(name), "(listing pg %u)", q->pg);
		fail_store(svc, r, n, name, 0);
		goto out;
	}
	for (int i = 0; i < n; i++) {
		key_to(&ents[i].key, &keys[i]);
		info_to(&ents[i].stat, &keys[i], &infos[i]);
		ptrs[i] = &infos[i];
	}
	Iolake__Osd__ListShardsResponse resp = IOLAKE__OSD__LIST_SHARDS_RESPONSE__INIT;
	resp.n_shards = (size_t)n;
	resp.shards = ptrs;
	resp.more = more;
	rpc_respond(r, &resp.base, NULL);
out:
	free(ents);
	free(infos);
	free(ptrs);
	free(keys);
}

/* ------------------------------------------------------------ ListBadShards */

static void h_list_bad(struct rpc_req *r, void *ud)
{
	struct osd_service *svc = ud;
	const Iolake__Osd__ListBadShardsRequest *q = (const void *)rpc_req_msg(r);
	if (refuse(svc, r))
		return;
	struct store_key after;
	if (q->after && key_from(svc, r, q->after, &after, NULL))
		return;
	size_t limit = q->limit ? q->limit : LIST_DEFAULT;
	if (limit > LIST_MAX)
		limit = LIST_MAX;
	struct store_bad *ents = malloc(limit * sizeof(*ents));
	Iolake__Osd__BadShard *bads = malloc(limit * sizeof(*bads));
	Iolake__Osd__BadShard **ptrs = malloc(limit * sizeof(*ptrs));
	Iolake__Osd__ShardKey *keys = malloc(limit * sizeof(*keys));
	if (!ents || !bads || !ptrs || !keys) {
		fail(svc, r, EK_BUSY, RPC_RESOURCE_EXHAUSTED, "osd %u out of memory", svc->osd_id);
		goto out;
	}
	bool more;
	int n = store_scrub_list_bad(svc->st, q->after ? &after : NULL, ents, limit, &more);
	if (n < 0) {
		fail_store(svc, r, n, "(listing bad shards)", 0);
		goto out;
	}
	for (int i = 0; i < n; i++) {
		key_to(&ents[i].key, &keys[i]);
		iolake__osd__bad_shard__init(&bads[i]);
		bads[i].key = &keys[i];
		bads[i].kind = (char *)store_bad_kind_name(ents[i].kind);
		bads[i].found_unix_s = ents[i].found_unix_s;
		bads[i].bad_offset = ents[i].from;
		bads[i].bad_length = ents[i].kind == STORE_BAD_INDEX ? 0 : ents[i].to - ents[i].from + 1;
		bads[i].length = ents[i].length;
		ptrs[i] = &bads[i];
	}
	Iolake__Osd__ListBadShardsResponse resp = IOLAKE__OSD__LIST_BAD_SHARDS_RESPONSE__INIT;
	resp.n_shards = (size_t)n;
	resp.shards = ptrs;
	resp.more = more;
	rpc_respond(r, &resp.base, NULL);
out:
	free(ents);
	free(bads);
	free(ptrs);
	free(keys);
}

/* ------------------------------------------------------------ status */

/* Copy the scrubber's progress into the metrics (deltas: the counters are
 * the registry's, the scrubber's numbers are plain loop-thread fields). */
static void refresh_scrub(struct osd_service *svc)
{
	if (!svc->scrub)
		return;
	struct store_scrub_stats now;
	store_scrub_stats(svc->scrub, &now);
	struct store_scrub_stats *was = &svc->scrub_seen;
	metrics_counter_add(svc->scrub_bytes, now.bytes - was->bytes);
	metrics_counter_add(svc->scrub_shards, now.shards - was->shards);
	metrics_counter_add(svc->scrub_passes, now.passes - was->passes);
	metrics_gauge_set(svc->scrub_pos, now.position_pg);
	*was = now;
}


static void refresh_gauges(struct osd_service *svc)
{
	if (!svc->st)
		return;
	struct store_space sp;
	struct store_dev_stats ds;
	struct store_stats ss;
	store_space(svc->st, &sp);
	store_stats(svc->st, &ss);
	ds = ss.dev;
	metrics_gauge_set(svc->used, (int64_t)sp.used_bytes);
	metrics_gauge_set(svc->free_b, (int64_t)sp.free_bytes);
	metrics_gauge_set(svc->reserved, (int64_t)sp.reserved_bytes);
	metrics_gauge_set(svc->total, (int64_t)sp.total_bytes);
	metrics_gauge_set(svc->inline_b, (int64_t)sp.inline_bytes);
	metrics_gauge_set(svc->kv_mem, (int64_t)ss.kv.memtable_bytes);
	metrics_gauge_set(svc->kv_imm, (int64_t)ss.kv.memtables_imm);
	metrics_gauge_set(svc->kv_readers, (int64_t)ss.kv.readers_bytes);
	metrics_gauge_set(svc->qdepth, (int64_t)(ds.in_ring + ds.queued));
	metrics_gauge_set(svc->inflight_g,
			  svc->inflight + atomic_load_explicit(&svc->direct_inflight,
								memory_order_relaxed));
	refresh_scrub(svc);
}

static void on_timer(uv_timer_t *t)
{
	refresh_gauges(t->data);
}

static void h_status(struct rpc_req *r, void *ud)
{
	struct osd_service *svc = ud;
	const Iolake__Osd__StatusRequest *q = (const void *)rpc_req_msg(r);
	if (refuse(svc, r))
		return;
	refresh_gauges(svc);
	struct store_space sp;
	struct store_stats ss;
	store_space(svc->st, &sp);
	store_stats(svc->st, &ss);
	Iolake__Osd__StatusResponse resp = IOLAKE__OSD__STATUS_RESPONSE__INIT;
	resp.osd_id = svc->osd_id;
	resp.cluster_id = svc->cluster_hex;
	resp.total_bytes = sp.total_bytes;
	resp.used_bytes = sp.used_bytes;
	resp.reserved_bytes = sp.reserved_bytes;
	resp.free_bytes = sp.free_bytes;
	resp.inline_bytes = sp.inline_bytes;
	resp.puts = ss.puts;
	resp.gets = ss.gets;
	resp.deletes = ss.deletes;
	resp.bytes_in = ss.put_bytes;
	resp.bytes_out = ss.get_bytes;
	resp.checksum_errors = ss.checksum_errors;
	resp.kv_commits = ss.kv.commits;
	resp.kv_batches = ss.kv.batches;
	resp.data_flushes = ss.data_flushes;
	resp.inflight = svc->inflight;
	resp.scrub_rate = svc->scrub_rate;
	const struct store_scrub_stats *sc = &svc->scrub_seen; /* refreshed above */
	resp.scrub_bytes = sc->bytes;
	resp.scrub_shards = sc->shards;
	resp.scrub_passes = sc->passes;
	resp.scrub_errors = sc->errors;
	resp.scrub_position_pg = sc->position_pg;
	resp.scrub_idle = sc->idle;
	resp.scrub_last_pass_unix_s = sc->last_pass_end_unix_s;
	if (svc->sweep) {
		struct osd_sweep_stats sw;
		osd_sweep_stats(svc->sweep, &sw);
		resp.orphan_candidates = sw.candidates;
		resp.orphan_shards_deleted = sw.shards_deleted;
		resp.orphan_bytes_deleted = sw.bytes_deleted;
		resp.orphan_passes = sw.passes;
		resp.orphan_passes_skipped = sw.passes_skipped;
	}
	if (svc->hooks.status) {
		struct osd_service_recovery rs = { 0 };
		svc->hooks.status(svc->hooks.arg, &rs);
		resp.recovery_on = true;
		resp.recovery_rate = rs.rate;
		resp.recovery_pgs_primary = rs.pgs_primary;
		resp.recovery_pgs_active = rs.pgs_active;
		resp.recovery_pgs_queued = rs.pgs_queued;
		resp.recovery_bytes = rs.bytes;
		resp.recovery_stripes = rs.stripes;
		resp.recovery_errors = rs.errors;
		resp.recovery_bytes_missing = rs.bytes_missing;
		resp.recovery_unfound = rs.unfound;
		resp.recovery_scans = rs.scans;
		resp.deep_scrub_interval_ms = rs.deep_interval_ms;
		resp.deep_pgs = rs.deep_pgs;
		resp.deep_stripes = rs.deep_stripes;
		resp.deep_bytes = rs.deep_bytes;
		resp.deep_repaired = rs.deep_repaired;
		resp.deep_inconsistent = rs.deep_inconsistent;
		resp.deep_last_unix_ms = rs.deep_last_unix_ms;
	}
	char *text = NULL;
	size_t tlen;
	if (q->metrics && metrics_render(svc->reg, &text, &tlen) == 0)
		resp.metrics_text = text;
	rpc_respond(r, &resp.base, NULL);
	free(text);
}

/* ------------------------------------------------------------ observers */

/* On kv's commit thread: histogram updates are lock-free atomics. */
static void obs_kv(void *arg, uint32_t requests, uint64_t flush_ns)
{
	struct osd_service *svc = arg;
	metrics_histogram_observe(svc->batch, requests);
	metrics_histogram_observe(svc->kv_flush, flush_ns / 1000);
}

static void obs_data(void *arg, uint32_t puts, uint64_t flush_ns)
{
	(void)puts;
	struct osd_service *svc = arg;
	metrics_histogram_observe(svc->data_flush, flush_ns / 1000);
}

struct store_observer osd_service_observer(struct osd_service *svc)
{
	return (struct store_observer){ .kv_batch = obs_kv, .data_flush = obs_data, .arg = svc };
}

/* ------------------------------------------------------------ lifecycle */

static int register_metrics(struct osd_service *svc)
{
	struct metrics_registry *reg = svc->reg;
	const char *id = svc->id_label;
	size_t nlat;
	const uint64_t *lat = metrics_latency_buckets_us(&nlat);
	static const uint64_t batch_b[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096 };

#define NEW_OR_FAIL(x) \
	do {           \
		if (!(x))  \
			return errno ? -errno : -ENOMEM; \
	} while (0)
	NEW_OR_FAIL(svc->puts = metrics_counter_new(reg, "iolake_osd_puts_total",
		"Shards stored (PutShard answered OK).", METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(svc->gets = metrics_counter_new(reg, "iolake_osd_gets_total",
		"Shard reads answered OK (GetShard).", METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(svc->dels = metrics_counter_new(reg, "iolake_osd_deletes_total",
		"Shards deleted (DeleteShard answered OK).", METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(svc->bytes_in = metrics_counter_new(reg, "iolake_osd_bytes_in_total",
		"Shard bytes stored.", METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(svc->bytes_out = metrics_counter_new(reg, "iolake_osd_bytes_out_total",
		"Shard bytes returned by GetShard.", METRICS_LABELS("osd", id)));
	for (int k = 0; k < EK_COUNT; k++)
		NEW_OR_FAIL(svc->errors[k] = metrics_counter_new(reg, "iolake_osd_errors_total",
			"Calls answered with an error, by kind.",
			METRICS_LABELS("osd", id, "kind", ek_name[k])));
	for (int m = 0; m < OP_KINDS; m++)
		NEW_OR_FAIL(svc->lat[m] = metrics_histogram_new(reg,
			"iolake_osd_request_duration_seconds",
			"Latency of successful shard calls, admission to answer.",
			METRICS_LABELS("osd", id, "method", op_method[m]), lat, nlat, 1e-6));
	NEW_OR_FAIL(svc->batch = metrics_histogram_new(reg, "iolake_osd_kv_commit_batch_size",
		"Index updates written by one group commit (one commit-log flush).",
		METRICS_LABELS("osd", id), batch_b, sizeof(batch_b) / sizeof(batch_b[0]), 1.0));
	NEW_OR_FAIL(svc->kv_flush = metrics_histogram_new(reg, "iolake_osd_flush_duration_seconds",
		"Latency of one flush: kv = group commit (commit log + RocksDB), data = device fdatasync.",
		METRICS_LABELS("osd", id, "kind", "kv"), lat, nlat, 1e-6));
	NEW_OR_FAIL(svc->data_flush = metrics_histogram_new(reg,
		"iolake_osd_flush_duration_seconds", NULL,
		METRICS_LABELS("osd", id, "kind", "data"), lat, nlat, 1e-6));
	NEW_OR_FAIL(svc->qdepth = metrics_gauge_new(reg, "iolake_osd_uring_queue_depth",
		"io_uring requests in the ring or waiting for it.", METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(svc->used = metrics_gauge_new(reg, "iolake_osd_used_bytes",
		"Data-area bytes named by committed shards.", METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(svc->free_b = metrics_gauge_new(reg, "iolake_osd_free_bytes",
		"Data-area bytes free.", METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(svc->reserved = metrics_gauge_new(reg, "iolake_osd_reserved_bytes",
		"Data-area bytes reserved by puts in flight.", METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(svc->total = metrics_gauge_new(reg, "iolake_osd_total_bytes",
		"Data-area size in bytes.", METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(svc->inline_b = metrics_gauge_new(reg, "iolake_osd_inline_bytes",
		"Shard bytes held inline in the index (meta dir, outside the data area).",
		METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(svc->kv_mem = metrics_gauge_new(reg, "iolake_osd_kv_memtable_bytes",
		"Bytes of the index's RocksDB memtables (active, waiting for flush, pinned).",
		METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(svc->kv_imm = metrics_gauge_new(reg, "iolake_osd_kv_immutable_memtables",
		"Full memtables of the index waiting for their flush.", METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(svc->kv_readers = metrics_gauge_new(reg, "iolake_osd_kv_table_readers_bytes",
		"Bytes of the index's open table readers held outside the block cache.",
		METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(svc->inflight_g = metrics_gauge_new(reg, "iolake_osd_inflight_calls",
		"Shard calls doing store work now.", METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(svc->bg_deferred = metrics_counter_new(reg,
		"iolake_osd_background_deferred_total",
		"Background shard calls (recovery, deep scrub) parked behind client calls.",
		METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(svc->bg_wait = metrics_histogram_new(reg,
		"iolake_osd_background_wait_seconds",
		"Time a parked background call waited for its turn.",
		METRICS_LABELS("osd", id), lat, nlat, 1e-6));
	NEW_OR_FAIL(svc->direct_gets = metrics_counter_new(reg, "iolake_osd_direct_gets_total",
		"Shard reads served on the caller's thread (in-process, inline shards; "
		"also in iolake_osd_gets_total).", METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(svc->scrub_bytes = metrics_counter_new(reg, "iolake_osd_scrub_bytes_total",
		"Shard bytes the background scrubber read and verified.", METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(svc->scrub_shards = metrics_counter_new(reg, "iolake_osd_scrub_shards_total",
		"Shards the background scrubber finished (good, bad or gone).",
		METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(svc->scrub_passes = metrics_counter_new(reg, "iolake_osd_scrub_passes_total",
		"Scrub passes completed over the whole store.", METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(svc->scrub_errors = metrics_counter_new(reg, "iolake_osd_scrub_errors_total",
		"Bad shards the scrubber found and recorded (each once; see ListBadShards).",
		METRICS_LABELS("osd", id)));
	NEW_OR_FAIL(svc->scrub_pos = metrics_gauge_new(reg, "iolake_osd_scrub_position_pg",
		"Placement group the scrub pass is in.", METRICS_LABELS("osd", id)));
#undef NEW_OR_FAIL
	return 0;
}

int osd_service_new(uv_loop_t *loop, const struct osd_service_opts *o,
		    struct osd_service **out)
{
	if (!o->metrics)
		return -EINVAL;
	struct osd_service *svc = calloc(1, sizeof(*svc));
	if (!svc)
		return -ENOMEM;
	svc->loop = loop;
	svc->osd_id = o->osd_id;
	snprintf(svc->id_label, sizeof(svc->id_label), "%u", o->osd_id);
	store_super_hex_id(o->cluster_id, svc->cluster_hex);
	svc->max_inflight = o->max_inflight ? o->max_inflight : 256;
	svc->max_bytes = o->max_inflight_bytes ? o->max_inflight_bytes : 1ull << 30;
	svc->refresh_ms = o->gauge_refresh_ms ? o->gauge_refresh_ms : 1000;
	svc->bg_max_wait_ms = o->bg_max_wait_ms ? o->bg_max_wait_ms : BG_MAX_WAIT_MS;
	svc->reg = o->metrics;
	svc->slow_log = o->slow_log;
	svc->slow_op_ms = o->slow_op_ms;
	svc->scrub_rate = o->scrub_rate_bytes;
	svc->scrub_interval_ms = o->scrub_interval_ms;
	int rc = -ENOMEM;
	svc->ops = calloc(svc->max_inflight, sizeof(*svc->ops));
	svc->parked = calloc(svc->max_inflight, sizeof(*svc->parked));
	if (!svc->ops || !svc->parked)
		goto out_ops;
	for (uint32_t i = svc->max_inflight; i-- > 0;) {
		svc->ops[i].next_free = svc->free_ops;
		svc->free_ops = &svc->ops[i];
	}
	errno = 0;
	rc = register_metrics(svc);
	if (rc)
		goto out_ops;
	rc = uv_timer_init(loop, &svc->timer);
	if (rc)
		goto out_ops;
	svc->timer.data = svc;
	svc->timer_open = true;
	uv_timer_init(loop, &svc->bg_timer); /* cannot fail once the first did */
	svc->bg_timer.data = svc;
	svc->bg_timer_open = true;
	*out = svc;
	return 0;

	/* Metrics registered so far stay in the registry (never unregistered):
	 * harmless, they read zero. */
out_ops:
	free(svc->parked);
	free(svc->ops);
	free(svc);
	return rc;
}

/* Once per shard the scrubber newly records bad. */
static void on_scrub_bad(void *arg, const struct store_bad *b)
{
	struct osd_service *svc = arg;
	char name[KEY_NAME_MAX];
	store_key_format(&b->key, name, sizeof(name));
	metrics_counter_inc(svc->scrub_errors);
	LOG_WARN("scrub found a bad shard", "osd=%u shard=%s kind=%s bytes=%llu..%llu length=%llu",
		 svc->osd_id, LOG_Q(name), store_bad_kind_name(b->kind),
		 (unsigned long long)b->from, (unsigned long long)b->to,
		 (unsigned long long)b->length);
	if (svc->hooks.bad_pg)
		svc->hooks.bad_pg(svc->hooks.arg, b->key.pg);
}

static void scrub_start(struct osd_service *svc)
{
	if (!svc->scrub_rate)
		return;
	struct store_scrub_opts so = { .rate_bytes = svc->scrub_rate,
				       .interval_ms = svc->scrub_interval_ms,
				       .on_bad = on_scrub_bad, .on_bad_arg = svc };
	int rc = store_scrub_start(svc->loop, svc->st, &so, &svc->scrub);
	if (rc) {
		svc->scrub = NULL;
		LOG_ERROR("scrubber did not start; serving without it", "osd=%u err=%s",
			  svc->osd_id, LOG_Q(iol_strerror(rc)));
		return;
	}
	store_scrub_stats(svc->scrub, &svc->scrub_seen);
	metrics_counter_add(svc->scrub_passes, svc->scrub_seen.passes);
}

void osd_service_attach(struct osd_service *svc, struct store *st)
{
	svc->st = st;
	scrub_start(svc);
	refresh_gauges(svc);
	uv_timer_start(&svc->timer, on_timer, svc->refresh_ms, svc->refresh_ms);
}

int osd_service_register(struct osd_service *svc, struct rpc_server *srv)
{
	static const rpc_handler_fn handlers[OSD_M_COUNT] = {
		[OSD_M_PUT] = h_put,     [OSD_M_GET] = h_get,     [OSD_M_DEL] = h_del,
		[OSD_M_STAT] = h_stat,   [OSD_M_STATS] = h_stats, [OSD_M_LIST] = h_list,
		[OSD_M_STATUS] = h_status, [OSD_M_LIST_BAD] = h_list_bad,
	};
	_Static_assert(OSD_M_COUNT == 8, "handlers must match osd.proto's methods");
	if (SVC_DESC->n_methods != OSD_M_COUNT)
		return -EINVAL;
	int rc = rpc_server_add_service(srv, SVC_DESC, handlers, svc);
	if (rc)
		return rc;
	/* In process, an inline read is served on the caller's thread. */
	return rpc_server_set_direct(srv, SVC_DESC, OSD_M_GET, d_get);
}

static void on_timer_closed(uv_handle_t *h)
{
	struct osd_service *svc = h->data;
	svc->timer_open = false;
	maybe_drained(svc);
}

static void on_bg_timer_closed(uv_handle_t *h)
{
	struct osd_service *svc = h->data;
	svc->bg_timer_open = false;
	maybe_drained(svc);
}

static void on_scrub_stopped(void *arg)
{
	struct osd_service *svc = arg;
	svc->scrub = NULL;
	maybe_drained(svc);
}

void osd_service_drain(struct osd_service *svc, void (*done_cb)(void *arg), void *arg)
{
	svc->draining = true;
	svc->drain_cb = done_cb;
	svc->drain_arg = arg;
	if (svc->scrub) {
		refresh_scrub(svc);
		store_scrub_stop(svc->scrub, on_scrub_stopped, svc);
	}
	bg_fail_parked(svc);
	/* Closing the timers also defers done_cb past this call. */
	uv_close((uv_handle_t *)&svc->bg_timer, on_bg_timer_closed);
	uv_close((uv_handle_t *)&svc->timer, on_timer_closed);
}

uint32_t osd_service_inflight(const struct osd_service *svc)
{
	return svc->inflight;
}

void osd_service_free(struct osd_service *svc)
{
	if (!svc)
		return;
	free(svc->parked);
	free(svc->ops);
	free(svc);
}

void osd_service_set_sweep(struct osd_service *svc, struct osd_sweep *sw)
{
	svc->sweep = sw;
}

void osd_service_set_hooks(struct osd_service *svc, const struct osd_service_hooks *h)
{
	if (h)
		svc->hooks = *h;
	else
		memset(&svc->hooks, 0, sizeof(svc->hooks));
}
