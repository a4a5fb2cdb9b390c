/*
 * lc_worker.c — the bucket lifecycle worker (contract and design in
 * lc_worker.h; docs/architecture.md, "Lifecycle").
 *
 * Steps, one at a time on the loop (the timer drives rounds and the pause
 * between batches):
 *   round:  ListBuckets -> for each bucket with rules: claim -> batches
 *   claim:  LifecycleAdvance(if_seq = the cursor's seq, the cursor as it
 *           stands, the lease) -- CONFLICT: another worker has it: skip
 *   batch:  list one page from the cursor, decide each entry (lc_rule),
 *           run the ops (window in flight), then LifecycleAdvance with
 *           the cursor after the page (lease renewed; released at the end
 *           of the pass)
 *
 * Deciding a version needs its neighbours: a noncurrent version's age
 * runs from its successor's mtime (the version listed just before it),
 * NewerNoncurrentVersions counts the noncurrent versions passed, and a
 * current delete marker is "expired" only when no version follows it. A
 * page is therefore listed one entry longer than it is worked: the last
 * entry of a truncated page is only looked at, and listed again by the
 * next page. The per-key counts travel in the cursor (noncurrent_seen,
 * successor_ms), so a resumed pass decides as an uninterrupted one.
 *
 * Every op is conditioned on the generation listed (DeleteObject
 * if_generation): an object written since the listing is left alone, and
 * a batch redone after a crash changes nothing twice.
 *
 * Thread: the gateway loop. Owns its copies of the bucket list and of
 * one page.
 */
#include "gateway/lc_worker.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/err.h"
#include "common/log.h"
#include "gateway/lc_rule.h"

#define BATCH_DEFAULT 200
#define BATCH_MAX 1000
#define WINDOW_DEFAULT 16
#define PAUSE_DEFAULT 5
#define LEASE_DEFAULT 60000
#define STR_MAX 1100            /* a key (1,024 bytes) or marker, NUL */

enum kind { OP_CURRENT, OP_VERSION, OP_ABORT };
enum next { NEXT_ROUND, NEXT_BATCH, NEXT_BUCKET };

struct lc_op {
	enum kind kind;
	const char *key;            /* into the page */
	const char *vid;            /* OP_VERSION: "" is the null version */
	const char *upload_id;      /* OP_ABORT */
	uint64_t generation;        /* OP_CURRENT, OP_VERSION */
	struct lc_worker *w;
};

struct lc_worker {
	uv_loop_t *loop;
	struct meta_client *mc;
	struct lc_worker_opts opt;
	uv_timer_t timer;
	enum next next;
	bool closing, timer_closed;
	unsigned pending;           /* meta calls whose callback is owed */
	char holder[64];
	/* This round. */
	Iolake__Meta__ListBucketsResponse *buckets;
	size_t bi;
	/* This bucket: the cursor being worked (its strings point at the
	 * buffers below) and its seq as last committed. */
	Iolake__Meta__LifecycleCursor cur;
	char route_key[STR_MAX], key_marker[STR_MAX], version_marker[STR_MAX];
	char upload_marker[STR_MAX];
	uint64_t seq;
	bool pass_done;
	/* This pass, as this worker saw it (for its log line). */
	uint64_t pass_t0_ms, pass_scanned, pass_done_ops, pass_other_ops;
	/* This batch. */
	uint64_t now_ms;
	ProtobufCMessage *page;
	struct lc_op *ops;
	size_t n_ops, next_op;
	unsigned inflight;
	/* Metrics (NULL when the registry refused them). */
	struct metrics_counter *m_scanned, *m_expired, *m_versions, *m_uploads, *m_refused;
	struct metrics_counter *m_skipped, *m_failed, *m_passes;
};

static void bucket_next(struct lc_worker *w);
static void batch_start(struct lc_worker *w);

static uint64_t wall_ms(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

static void count(struct metrics_counter *c, uint64_t n)
{
	if (c && n)
		metrics_counter_add(c, n);
}

static void set_str(char *dst, const char *s)
{
	snprintf(dst, STR_MAX, "%s", s ? s : "");
}

static const Iolake__Meta__Bucket *bucket(const struct lc_worker *w)
{
	return w->buckets->buckets[w->bi];
}

static void page_free(struct lc_worker *w)
{
	if (w->page)
		protobuf_c_message_free_unpacked(w->page, NULL);
	w->page = NULL;
	free(w->ops);
	w->ops = NULL;
	w->n_ops = w->next_op = 0;
}

static void maybe_free(struct lc_worker *w)
{
	if (!w->closing || !w->timer_closed || w->pending)
		return;
	page_free(w);
	if (w->buckets)
		iolake__meta__list_buckets_response__free_unpacked(w->buckets, NULL);
	free(w);
}

static void on_tick(uv_timer_t *t);

static void arm(struct lc_worker *w, enum next n, uint64_t delay_ms)
{
	if (w->closing)
		return;
	w->next = n;
	uv_timer_start(&w->timer, on_tick, delay_ms, 0);
}

/* Take back an owed callback: false when closing (touch nothing more). */
static bool back(struct lc_worker *w)
{
	w->pending--;
	if (w->closing) {
		maybe_free(w);
		return false;
	}
	return true;
}

/* ------------------------------------------------------------ rounds */

static void round_end(struct lc_worker *w)
{
	if (w->buckets)
		iolake__meta__list_buckets_response__free_unpacked(w->buckets, NULL);
	w->buckets = NULL;
	arm(w, NEXT_ROUND, w->opt.interval_ms);
}

static void on_buckets(void *ud, int err, const ProtobufCMessage *resp)
{
	struct lc_worker *w = ud;
	if (!back(w))
		return;
	if (err || !resp) {
		LOG_WARN("lifecycle: ListBuckets failed; next round", "err=%s", iol_strerror(err));
		round_end(w);
		return;
	}
	w->buckets = (Iolake__Meta__ListBucketsResponse *)meta_client_copy_msg(resp);
	if (!w->buckets) {
		round_end(w);
		return;
	}
	/* One worker in the cluster at a time: while another holds any
	 * bucket (a live lease), this round is left to it. Two rounds that
	 * start together may both go on; each bucket is still worked by one
	 * (the claim is conditioned on its cursor). */
	uint64_t now = wall_ms();
	for (size_t i = 0; i < w->buckets->n_buckets; i++) {
		const Iolake__Meta__LifecycleCursor *c = w->buckets->buckets[i]->lc_cursor;
		if (c && c->holder[0] && strcmp(c->holder, w->holder) != 0 &&
		    c->lease_until_ms > now) {
			round_end(w);
			return;
		}
	}
	w->bi = 0;
	bucket_next(w);
}

static void round_start(struct lc_worker *w)
{
	Iolake__Meta__ListBucketsRequest req = IOLAKE__META__LIST_BUCKETS_REQUEST__INIT;
	req.owner = "";
	if (meta_client_call(w->mc, META_M_LIST_BUCKETS, &req.base, on_buckets, w) == 0)
		w->pending++;
	else
		arm(w, NEXT_ROUND, w->opt.interval_ms);
}

/* ------------------------------------------------------------ the cursor */

static void on_advance(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index);

static void advance(struct lc_worker *w, bool release)
{
	Iolake__Meta__LifecycleAdvance a = IOLAKE__META__LIFECYCLE_ADVANCE__INIT;
	a.name = bucket(w)->name;
	a.holder = w->holder;
	a.now_ms = wall_ms();
	a.lease_ms = release ? 0 : w->opt.lease_ms;
	a.if_seq = w->seq;
	a.cursor = &w->cur;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_LIFECYCLE_ADVANCE;
	op.lifecycle_advance = &a;
	if (meta_client_submit(w->mc, &op, on_advance, w) == 0) {
		w->pending++;
		return;
	}
	w->bi++;
	arm(w, NEXT_BUCKET, w->opt.pause_ms);
}

static void on_advance(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct lc_worker *w = ud;
	if (!back(w))
		return;
	if (err || !res || res->status != IOLAKE__META__STATUS__STATUS_OK) {
		/* Another worker holds the bucket or moved its cursor, or
		 * meta is away: leave it to the next round. */
		if (err)
			LOG_WARN("lifecycle: cursor not advanced; bucket left to the next round",
				 "bucket=%s err=%s", bucket(w)->name, iol_strerror(err));
		w->bi++;
		arm(w, NEXT_BUCKET, 0);
		return;
	}
	w->seq++;
	if (w->pass_done) {
		count(w->m_passes, 1);
		if (w->pass_done_ops || w->pass_other_ops)
			LOG_INFO("lifecycle: pass done", "bucket=%s scanned=%llu removed=%llu "
				 "not_removed=%llu ms=%llu", bucket(w)->name,
				 (unsigned long long)w->pass_scanned,
				 (unsigned long long)w->pass_done_ops,
				 (unsigned long long)w->pass_other_ops,
				 (unsigned long long)(wall_ms() - w->pass_t0_ms));
		w->bi++;
		arm(w, NEXT_BUCKET, w->opt.pause_ms);
		return;
	}
	arm(w, NEXT_BATCH, w->opt.pause_ms);
}

/* The bucket's cursor into w->cur (a fresh pass when it has none). */
static void cursor_load(struct lc_worker *w, const Iolake__Meta__LifecycleCursor *c)
{
	iolake__meta__lifecycle_cursor__init(&w->cur);
	w->seq = c ? c->seq : 0;
	if (c) {
		w->cur.phase = c->phase;
		w->cur.noncurrent_seen = c->noncurrent_seen;
		w->cur.successor_ms = c->successor_ms;
		w->cur.passes = c->passes;
		w->cur.pass_started_ms = c->pass_started_ms;
		w->cur.last_pass_ms = c->last_pass_ms;
	}
	set_str(w->route_key, c ? c->route_key : "");
	set_str(w->key_marker, c ? c->key_marker : "");
	set_str(w->version_marker, c ? c->version_marker : "");
	set_str(w->upload_marker, c ? c->upload_marker : "");
	w->cur.route_key = w->route_key;
	w->cur.key_marker = w->key_marker;
	w->cur.version_marker = w->version_marker;
	w->cur.upload_marker = w->upload_marker;
	if (!w->cur.pass_started_ms)
		w->cur.pass_started_ms = wall_ms();
	w->pass_done = false;
	w->pass_t0_ms = wall_ms();
	w->pass_scanned = w->pass_done_ops = w->pass_other_ops = 0;
}

static void pass_end(struct lc_worker *w)
{
	w->cur.phase = 0;
	w->route_key[0] = w->key_marker[0] = w->version_marker[0] = w->upload_marker[0] = 0;
	w->cur.noncurrent_seen = 0;
	w->cur.successor_ms = 0;
	w->cur.passes++;
	w->cur.pass_started_ms = 0;
	w->cur.last_pass_ms = w->now_ms;
	w->pass_done = true;
}

static void bucket_next(struct lc_worker *w)
{
	uint64_t now = wall_ms();
	for (; w->bi < w->buckets->n_buckets; w->bi++) {
		const Iolake__Meta__Bucket *b = bucket(w);
		if (!b->lifecycle || !b->lifecycle->n_rules)
			continue;
		const Iolake__Meta__LifecycleCursor *c = b->lc_cursor;
		if (c && c->holder[0] && strcmp(c->holder, w->holder) != 0 &&
		    c->lease_until_ms > now)
			continue;   /* another worker is on it */
		cursor_load(w, c);
		if (c && (c->phase || c->key_marker[0]))
			LOG_INFO("lifecycle: resuming a pass from its cursor", "bucket=%s phase=%u "
				 "key_marker=%.64s seq=%llu", b->name, c->phase, c->key_marker,
				 (unsigned long long)c->seq);
		advance(w, false);  /* the claim */
		return;
	}
	round_end(w);
}

/* ------------------------------------------------------------ ops */

static void ops_pump(struct lc_worker *w);

static void on_op(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct lc_op *o = ud;
	struct lc_worker *w = o->w;
	if (!back(w))
		return;
	w->inflight--;
	if (!err && res && res->status == IOLAKE__META__STATUS__STATUS_OK)
		w->pass_done_ops++;
	else
		w->pass_other_ops++;
	if (err || !res) {
		count(w->m_failed, 1);
	} else if (res->status == IOLAKE__META__STATUS__STATUS_OK) {
		count(o->kind == OP_CURRENT ? w->m_expired
		      : o->kind == OP_VERSION ? w->m_versions : w->m_uploads, 1);
	} else if (res->status == IOLAKE__META__STATUS__STATUS_NOT_FOUND ||
		   res->status == IOLAKE__META__STATUS__STATUS_CONFLICT) {
		count(w->m_skipped, 1);   /* changed since listed: next pass decides */
	} else {
		/* Refused by meta (object lock: a retained or held version):
		 * counted and left alone, not retried in this pass. */
		count(w->m_refused, 1);
	}
	ops_pump(w);
}

static int op_start(struct lc_worker *w, struct lc_op *o)
{
	const Iolake__Meta__Bucket *b = bucket(w);
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	Iolake__Meta__DeleteObject d = IOLAKE__META__DELETE_OBJECT__INIT;
	Iolake__Meta__AbortMultipart a = IOLAKE__META__ABORT_MULTIPART__INIT;
	if (o->kind == OP_ABORT) {
		a.bucket = b->name;
		a.key = (char *)o->key;
		a.upload_id = (char *)o->upload_id;
		op.body_case = IOLAKE__META__OP__BODY_ABORT_MULTIPART;
		op.abort_multipart = &a;
	} else {
		d.bucket = b->name;
		d.key = (char *)o->key;
		/* The current version: only the one listed (an object written
		 * since stays). A version by id: its id names it exactly (and
		 * if_generation would be checked against the current one). */
		d.if_generation = o->kind == OP_CURRENT ? o->generation : 0;
		op.body_case = IOLAKE__META__OP__BODY_DELETE_OBJECT;
		op.delete_object = &d;
		/* As s3_rq_stamp_op: the bucket's versioning state and the
		 * time (a delete marker's mtime). */
		op.versioning = b->versioning;
		op.time_ms = w->now_ms;
		if (o->kind == OP_VERSION)
			op.version_id = (char *)(o->vid[0] ? o->vid : "null");
	}
	return meta_client_submit(w->mc, &op, on_op, o);
}

static void ops_pump(struct lc_worker *w)
{
	while (w->next_op < w->n_ops && w->inflight < w->opt.window) {
		struct lc_op *o = &w->ops[w->next_op++];
		if (op_start(w, o) != 0) {
			count(w->m_failed, 1);
			continue;
		}
		w->pending++;
		w->inflight++;
	}
	if (w->inflight || w->next_op < w->n_ops)
		return;
	page_free(w);
	advance(w, w->pass_done);
}

static struct lc_op *op_add(struct lc_worker *w, enum kind k, const char *key)
{
	struct lc_op *o = &w->ops[w->n_ops++];
	memset(o, 0, sizeof(*o));
	o->kind = k;
	o->key = key;
	o->vid = "";
	o->w = w;
	return o;
}

/* ------------------------------------------------------------ phase 0: versions */

static bool same_key(const Iolake__Meta__VersionEntry *e, const char *key)
{
	return e && e->record && !strcmp(e->record->key, key);
}

/* Decide entry i of the page (next: the entry after it, NULL when none
 * follows; unknown when the page was cut right after it). */
static void decide_version(struct lc_worker *w, const Iolake__Meta__VersionEntry *e,
			   const Iolake__Meta__VersionEntry *next, bool next_unknown)
{
	const Iolake__Meta__Bucket *b = bucket(w);
	const Iolake__Meta__LifecycleConfig *cfg = b->lifecycle;
	const Iolake__Meta__ObjectRecord *r = e->record;
	if (strcmp(r->key, w->key_marker) != 0) {
		w->cur.noncurrent_seen = 0;
		w->cur.successor_ms = 0;
	}
	set_str(w->key_marker, r->key);
	set_str(w->version_marker, r->version_id[0] ? r->version_id : "null");
	count(w->m_scanned, 1);
	w->pass_scanned++;
	struct lc_obj o = { .key = r->key, .size = r->size, .tags = r->tags,
			    .n_tags = r->n_tags };
	uint64_t day = w->opt.day_ms, now = w->now_ms;
	if (e->is_latest) {
		if (r->is_delete_marker) {
			bool alone = !next_unknown && !same_key(next, r->key);
			if (alone && lc_marker_due(cfg, r->key, r->mtime_ms, now, day)) {
				struct lc_op *op = op_add(w, OP_VERSION, r->key);
				op->vid = r->version_id;
				op->generation = r->generation;
			}
		} else {
			uint64_t due = lc_current_expiry(cfg, &o, r->mtime_ms, day, NULL);
			if (due && now >= due)
				op_add(w, OP_CURRENT, r->key)->generation = r->generation;
		}
	} else {
		w->cur.noncurrent_seen++;
		uint64_t since = w->cur.successor_ms ? w->cur.successor_ms : r->mtime_ms;
		if (lc_noncurrent_due(cfg, &o, since, w->cur.noncurrent_seen, now, day)) {
			struct lc_op *op = op_add(w, OP_VERSION, r->key);
			op->vid = r->version_id;
			op->generation = r->generation;
		}
	}
	w->cur.successor_ms = r->mtime_ms;
}

/* Meta refused the cursor's markers (INVALID: a key or marker it cannot
 * resume from): rather than stick there every round, the pass starts
 * over from the bucket's first key (its ops are conditioned, so a second
 * look at an entry changes nothing twice). */
static bool cursor_refused(struct lc_worker *w, int err, Iolake__Meta__Status st)
{
	if (err || st != IOLAKE__META__STATUS__STATUS_INVALID)
		return false;
	LOG_WARN("lifecycle: meta refused the cursor; the pass starts over", "bucket=%s phase=%u",
		 bucket(w)->name, w->cur.phase);
	w->cur.phase = 0;
	w->route_key[0] = w->key_marker[0] = w->version_marker[0] = w->upload_marker[0] = 0;
	w->cur.noncurrent_seen = 0;
	w->cur.successor_ms = 0;
	ops_pump(w);   /* no ops: commits the reset cursor */
	return true;
}

/* A listing page answered (status its status, n its entries): kept as
 * w->page (an owned copy) with room in w->ops for an op per entry. false
 * when there is nothing to decide: the worker is closing, the cursor was
 * refused (the pass starts over), or the bucket went, meta is away or
 * memory ran out (on to the next bucket; the next round resumes from
 * the committed cursor). */
static bool take_page(struct lc_worker *w, int err, const ProtobufCMessage *resp,
		      Iolake__Meta__Status status, size_t n)
{
	if (!back(w))
		return false;
	if (resp && cursor_refused(w, err, status))
		return false;
	if (!err && resp && status == IOLAKE__META__STATUS__STATUS_OK) {
		w->page = meta_client_copy_msg(resp);
		w->ops = w->page ? calloc(n + 1, sizeof(*w->ops)) : NULL;
		if (w->page && w->ops)
			return true;
		page_free(w);
	}
	w->bi++;
	arm(w, NEXT_BUCKET, w->opt.pause_ms);
	return false;
}

static void on_versions(void *ud, int err, const ProtobufCMessage *resp)
{
	struct lc_worker *w = ud;
	const Iolake__Meta__ListVersionsResponse *pg = (const void *)resp;
	if (!take_page(w, err, resp, pg ? pg->status : 0, pg ? pg->n_entries : 0))
		return;
	pg = (const void *)w->page;
	size_t n = pg->n_entries;
	/* The last entry of a cut page is the lookahead: listed again next. */
	size_t upto = pg->truncated && n >= 2 ? n - 1 : n;
	for (size_t i = 0; i < upto; i++) {
		const Iolake__Meta__VersionEntry *e = pg->entries[i];
		if (!e->record)
			continue;   /* a common prefix: none without a delimiter */
		const Iolake__Meta__VersionEntry *next = i + 1 < n ? pg->entries[i + 1] : NULL;
		decide_version(w, e, next, i + 1 == n && pg->truncated);
	}
	if (pg->truncated) {
		set_str(w->route_key, w->key_marker);
	} else if (pg->range_end[0]) {
		set_str(w->route_key, pg->range_end);   /* the next range */
	} else {
		/* The versions are done: the uploads next. */
		w->cur.phase = 1;
		w->route_key[0] = w->key_marker[0] = w->version_marker[0] = 0;
		w->upload_marker[0] = 0;
		w->cur.noncurrent_seen = 0;
		w->cur.successor_ms = 0;
	}
	ops_pump(w);
}

/* ------------------------------------------------------------ phase 1: uploads */

static void on_uploads(void *ud, int err, const ProtobufCMessage *resp)
{
	struct lc_worker *w = ud;
	const Iolake__Meta__ListUploadsResponse *pg = (const void *)resp;
	if (!take_page(w, err, resp, pg ? pg->status : 0, pg ? pg->n_uploads : 0))
		return;
	pg = (const void *)w->page;
	const Iolake__Meta__LifecycleConfig *cfg = bucket(w)->lifecycle;
	for (size_t i = 0; i < pg->n_uploads; i++) {
		const Iolake__Meta__MultipartUpload *u = pg->uploads[i];
		count(w->m_scanned, 1);
		w->pass_scanned++;
		if (lc_upload_due(cfg, u->key, u->initiated_ms, w->now_ms, w->opt.day_ms))
			op_add(w, OP_ABORT, u->key)->upload_id = u->upload_id;
	}
	if (pg->truncated && pg->n_uploads) {
		const Iolake__Meta__MultipartUpload *l = pg->uploads[pg->n_uploads - 1];
		set_str(w->key_marker, l->key);
		set_str(w->upload_marker, l->upload_id);
	} else {
		pass_end(w);
	}
	ops_pump(w);
}

/* ------------------------------------------------------------ batches */

static void batch_start(struct lc_worker *w)
{
	w->now_ms = wall_ms();
	const Iolake__Meta__Bucket *b = bucket(w);
	int rc;
	if (w->cur.phase == 0) {
		Iolake__Meta__ListVersionsRequest req = IOLAKE__META__LIST_VERSIONS_REQUEST__INIT;
		req.bucket = b->name;
		req.key = w->route_key;
		req.key_marker = w->key_marker;
		req.version_id_marker = w->key_marker[0] ? w->version_marker : "";
		req.max_keys = w->opt.batch + 1;   /* one to look ahead */
		rc = meta_client_call(w->mc, META_M_LIST_VERSIONS, &req.base, on_versions, w);
	} else {
		Iolake__Meta__ListUploadsRequest req = IOLAKE__META__LIST_UPLOADS_REQUEST__INIT;
		req.bucket = b->name;
		req.key_marker = w->key_marker;
		req.upload_id_marker = w->key_marker[0] ? w->upload_marker : "";
		req.max_uploads = w->opt.batch;
		rc = meta_client_call(w->mc, META_M_LIST_UPLOADS, &req.base, on_uploads, w);
	}
	if (rc == 0) {
		w->pending++;
		return;
	}
	w->bi++;
	arm(w, NEXT_BUCKET, w->opt.pause_ms);
}

static void on_tick(uv_timer_t *t)
{
	struct lc_worker *w = t->data;
	if (w->closing)
		return;
	switch (w->next) {
	case NEXT_ROUND:
		round_start(w);
		break;
	case NEXT_BATCH:
		batch_start(w);
		break;
	case NEXT_BUCKET:
		bucket_next(w);
		break;
	}
}

/* ------------------------------------------------------------ start, close */

int lc_worker_start(uv_loop_t *loop, struct meta_client *mc, struct metrics_registry *reg,
		    const struct lc_worker_opts *opts, struct lc_worker **out)
{
	if (!loop || !mc || !opts || !opts->interval_ms || !out)
		return -EINVAL;
	struct lc_worker *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->loop = loop;
	w->mc = mc;
	w->opt = *opts;
	if (!w->opt.day_ms)
		w->opt.day_ms = LC_DAY_MS;
	if (!w->opt.batch)
		w->opt.batch = BATCH_DEFAULT;
	if (w->opt.batch < 2)
		w->opt.batch = 2;
	if (w->opt.batch > BATCH_MAX)
		w->opt.batch = BATCH_MAX;
	if (!w->opt.window)
		w->opt.window = WINDOW_DEFAULT;
	if (!w->opt.pause_ms)
		w->opt.pause_ms = PAUSE_DEFAULT;
	if (!w->opt.lease_ms)
		w->opt.lease_ms = LEASE_DEFAULT;
	if (opts->holder && opts->holder[0])
		snprintf(w->holder, sizeof(w->holder), "%s", opts->holder);
	else
		snprintf(w->holder, sizeof(w->holder), "gw-%016llx",
			 (unsigned long long)meta_client_id(mc));
	uv_timer_init(loop, &w->timer);
	w->timer.data = w;
	if (reg) {
		/* A second worker in one registry gets NULL and counts nothing. */
		w->m_scanned = metrics_counter_new(reg, "iolake_gw_lc_scanned_total",
						   "versions and uploads the lifecycle worker looked at",
						   NULL);
		w->m_expired = metrics_counter_new(reg, "iolake_gw_lc_expired_total",
						   "current versions expired by lifecycle rules", NULL);
		w->m_versions = metrics_counter_new(
			reg, "iolake_gw_lc_versions_expired_total",
			"noncurrent versions and expired delete markers removed by lifecycle rules",
			NULL);
		w->m_uploads = metrics_counter_new(reg, "iolake_gw_lc_uploads_aborted_total",
						   "incomplete multipart uploads aborted by lifecycle rules",
						   NULL);
		w->m_refused = metrics_counter_new(
			reg, "iolake_gw_lc_refused_total",
			"lifecycle deletes meta refused (object lock), skipped", NULL);
		w->m_skipped = metrics_counter_new(
			reg, "iolake_gw_lc_skipped_total",
			"lifecycle ops on objects changed or gone since listed", NULL);
		w->m_failed = metrics_counter_new(reg, "iolake_gw_lc_failed_total",
						  "lifecycle ops that failed (retried next pass)", NULL);
		w->m_passes = metrics_counter_new(reg, "iolake_gw_lc_passes_total",
						  "lifecycle passes completed over a bucket", NULL);
	}
	arm(w, NEXT_ROUND, w->opt.interval_ms);
	*out = w;
	return 0;
}

void lc_worker_holder_name(char *out, size_t cap, const char *s3_listen)
{
	char host[64] = "";
	if (gethostname(host, sizeof(host) - 1) != 0)
		host[0] = 0;
	snprintf(out, cap, "%s/%s", host, s3_listen ? s3_listen : "");
}

static void on_timer_closed(uv_handle_t *h)
{
	struct lc_worker *w = h->data;
	w->timer_closed = true;
	maybe_free(w);
}

void lc_worker_close(struct lc_worker *w)
{
	if (!w || w->closing)
		return;
	w->closing = true;
	uv_timer_stop(&w->timer);
	uv_close((uv_handle_t *)&w->timer, on_timer_closed);
}
