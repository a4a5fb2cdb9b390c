/*
 * sweep.c — the orphan sweep (contract in sweep.h).
 *
 * Owns: one meta client, one timer (next pass, next step, or a busy
 * store's retry), a page of shard keys, the candidate tables and at most
 * DEL_WINDOW store deletes. One loop, one thing at a time:
 *
 *   IDLE --timer--> STEP: next PG with shards (store_next_pg), a page of
 *   its keys (store_list), the page's distinct 16-byte ids -> CheckShards
 *   --answer--> classify each id, delete the due ones (DELETE: list the
 *   id's keys in small pages, DEL_WINDOW deletes in flight) --> STEP on
 *   the next loop turn ... no PG left --> pass done, IDLE.
 *
 * Candidates: `old` is the table the last completed pass left, `cur` the
 * one this pass builds; both sorted by (pg, id), because the walk visits
 * ids in that order, so an id is looked up in `old` by a cursor that only
 * moves forward. At the end of a pass `cur` replaces `old`: ids no longer
 * seen (deleted by the GC meanwhile) and referenced ones drop out, which
 * is what "a referenced candidate is dropped" means here. An abandoned
 * pass (meta unreachable, a store error) throws `cur` away and keeps
 * `old`, so a flapping meta never shortens anyone's grace.
 *
 * Invariant (safety): a shard is deleted only when CheckShards, answered
 * by meta's leader after a read barrier within this step, said its id is
 * unreferenced, and the id was also unreferenced at least grace_ms
 * earlier on this OSD (its first sighting in an unbroken chain of passes
 * that saw it unreferenced each time).
 */
#include "osd/sweep.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/log.h"
#include "common/shard_oid.h"
#include "meta/client.h"

#define CAND_DEFAULT 100000
#define PAGE_DEFAULT 1000
#define DEL_PAGE 64              /* keys listed per deletion step */
#define DEL_WINDOW 8             /* store deletes in flight */
#define BUSY_RETRY_MS 20

struct cand {
	uint32_t pg;
	uint8_t id[SHARD_DATA_ID_LEN];
	uint64_t first_ms;           /* loop time of its first sighting */
};

struct table {
	struct cand *v;
	size_t n, cap;
};

struct del {
	struct store_del_req req;
	struct osd_sweep *sw;
	uint64_t bytes;
	bool busy;
};

enum phase { PH_IDLE, PH_STEP, PH_CALL, PH_DELETE, PH_DEL_RETRY };

struct osd_sweep {
	uv_loop_t *loop;
	struct store *st;
	struct meta_client *mc;
	uint32_t osd_id;
	uint64_t grace_ms, interval_ms;
	uint32_t max_cand, page_keys;
	uv_timer_t timer;
	enum phase phase;

	struct table old, cur;
	size_t old_pos;

	/* the walk */
	uint32_t pg;
	bool have_after;
	struct store_key after;
	bool pg_done;                /* the page just read ended the PG */
	struct store_list_ent *page;
	uint8_t (*ids)[SHARD_DATA_ID_LEN];
	size_t n_ids;
	uint64_t pass_keys, pass_ids, pass_deleted;
	size_t last_logged_cands;    /* candidates the last logged pass left */
	uint32_t skipped_in_row;     /* passes abandoned since the last completed */

	/* ids due for deletion in this page, and the one being deleted */
	struct cand *due;
	size_t n_due, due_next;
	struct store_list_ent dpage[DEL_PAGE];
	size_t dn, dnext;
	struct store_key dafter;
	bool dmore, dfailed;
	struct del dels[DEL_WINDOW];
	uint32_t dinflight;

	struct osd_sweep_stats stats;
	struct metrics_gauge *m_cand;
	struct metrics_counter *m_shards, *m_bytes;

	bool stopping, timer_closed;
	void (*done_cb)(void *arg);
	void *done_arg;
};

static void step(struct osd_sweep *sw);
static void del_pump(struct osd_sweep *sw);
static void del_next_id(struct osd_sweep *sw);

static int cand_cmp(uint32_t pg_a, const uint8_t *a, uint32_t pg_b, const uint8_t *b)
{
	if (pg_a != pg_b)
		return pg_a < pg_b ? -1 : 1;
	return memcmp(a, b, SHARD_DATA_ID_LEN);
}

/* Append to t, which stays sorted because callers add in walk order; an
 * id equal to the last one (an id split over two pages) is not added
 * again. false when the table is full. */
static bool table_add(struct table *t, size_t max, uint32_t pg, const uint8_t *id, uint64_t first)
{
	if (t->n && cand_cmp(t->v[t->n - 1].pg, t->v[t->n - 1].id, pg, id) == 0)
		return true;
	if (t->n == max)
		return false;
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 1024;
		if (nc > max)
			nc = max;
		struct cand *v = realloc(t->v, nc * sizeof(*v));
		if (!v)
			return false;
		t->v = v;
		t->cap = nc;
	}
	struct cand *c = &t->v[t->n++];
	c->pg = pg;
	memcpy(c->id, id, SHARD_DATA_ID_LEN);
	c->first_ms = first;
	return true;
}

static void table_free(struct table *t)
{
	free(t->v);
	*t = (struct table){ 0 };
}

static void maybe_done(struct osd_sweep *sw)
{
	if (!sw->stopping || !sw->timer_closed || sw->dinflight)
		return;
	void (*cb)(void *) = sw->done_cb;
	void *arg = sw->done_arg;
	table_free(&sw->old);
	table_free(&sw->cur);
	free(sw->page);
	free(sw->ids);
	free(sw->due);
	free(sw);
	if (cb)
		cb(arg);
}

static void arm(struct osd_sweep *sw, enum phase ph, uint64_t ms);

static void on_timer(uv_timer_t *t)
{
	struct osd_sweep *sw = t->data;
	switch (sw->phase) {
	case PH_IDLE:
		/* a pass begins */
		sw->pg = 0;
		sw->have_after = false;
		sw->old_pos = 0;
		sw->pass_keys = sw->pass_ids = sw->pass_deleted = 0;
		table_free(&sw->cur);
		step(sw);
		break;
	case PH_STEP: step(sw); break;
	case PH_DEL_RETRY:
		sw->phase = PH_DELETE;
		del_pump(sw);
		break;
	default: break;
	}
}

static void arm(struct osd_sweep *sw, enum phase ph, uint64_t ms)
{
	sw->phase = ph;
	uv_timer_start(&sw->timer, on_timer, ms, 0);
}

static void pass_end(struct osd_sweep *sw, bool completed, const char *why)
{
	if (completed) {
		table_free(&sw->old);
		sw->old = sw->cur;
		sw->cur = (struct table){ 0 };
		sw->stats.passes++;
		if (sw->skipped_in_row)
			LOG_INFO("orphan sweep: a pass completed again", "osd=%u abandoned_before=%u",
				 sw->osd_id, sw->skipped_in_row);
		sw->skipped_in_row = 0;
		if (sw->pass_deleted || sw->old.n != sw->last_logged_cands)
			LOG_INFO("orphan sweep pass done",
				 "osd=%u shard_keys=%llu ids_checked=%llu candidates=%zu "
				 "shards_deleted=%llu",
				 sw->osd_id, (unsigned long long)sw->pass_keys,
				 (unsigned long long)sw->pass_ids, sw->old.n,
				 (unsigned long long)sw->pass_deleted);
		sw->last_logged_cands = sw->old.n;
	} else {
		table_free(&sw->cur);
		sw->stats.passes_skipped++;
		/* Once per outage, not once per pass. */
		if (sw->skipped_in_row++ == 0)
			LOG_WARN("orphan sweep pass abandoned; nothing more deleted until a pass "
				 "completes", "osd=%u reason=\"%s\"", sw->osd_id, why);
	}
	sw->stats.candidates = sw->old.n;
	if (sw->m_cand)
		metrics_gauge_set(sw->m_cand, (int64_t)sw->old.n);
	arm(sw, PH_IDLE, sw->interval_ms);
}

static void on_checked(void *ud, int err, const ProtobufCMessage *msg);

/* One page of the walk: list, collect ids, ask meta. */
static void step(struct osd_sweep *sw)
{
	if (!sw->have_after) {
		uint32_t pg;
		int rc = store_next_pg(sw->st, sw->pg, &pg);
		if (rc == IOL_ENOT_FOUND) {
			pass_end(sw, true, NULL);
			return;
		}
		if (rc) {
			pass_end(sw, false, iol_strerror(rc));
			return;
		}
		sw->pg = pg;
	}
	bool more = false;
	int n = store_list(sw->st, sw->pg, sw->have_after ? &sw->after : NULL, sw->page,
			   sw->page_keys, &more);
	if (n < 0) {
		pass_end(sw, false, iol_strerror(n));
		return;
	}
	sw->pass_keys += (uint64_t)n;
	sw->n_ids = 0;
	for (int i = 0; i < n; i++) {
		const struct store_key *k = &sw->page[i].key;
		if (k->oid_len != SHARD_OID_LEN)
			continue;   /* not a gw_data shard: not ours to judge */
		if (sw->n_ids && memcmp(sw->ids[sw->n_ids - 1], k->oid, SHARD_DATA_ID_LEN) == 0)
			continue;
		memcpy(sw->ids[sw->n_ids++], k->oid, SHARD_DATA_ID_LEN);
	}
	if (n > 0) {
		sw->after = sw->page[n - 1].key;
		sw->have_after = true;
	}
	sw->pg_done = !more;
	if (sw->n_ids == 0) {
		on_checked(sw, 0, NULL);
		return;
	}
	Iolake__Meta__CheckShardsRequest q = IOLAKE__META__CHECK_SHARDS_REQUEST__INIT;
	ProtobufCBinaryData bins[PAGE_DEFAULT];
	for (size_t i = 0; i < sw->n_ids; i++) {
		bins[i].data = sw->ids[i];
		bins[i].len = SHARD_DATA_ID_LEN;
	}
	q.pg = sw->pg;
	q.object_ids = bins;
	q.n_object_ids = sw->n_ids;
	sw->phase = PH_CALL;
	int rc = meta_client_call(sw->mc, META_M_CHECK_SHARDS, &q.base, on_checked, sw);
	if (rc)
		pass_end(sw, false, iol_strerror(rc));
}

/* The page is finished (its due ids deleted): the next step, on a later
 * loop turn. */
static void page_done(struct osd_sweep *sw)
{
	if (sw->pg_done) {
		sw->have_after = false;
		if (sw->pg == UINT32_MAX) {
			pass_end(sw, true, NULL);
			return;
		}
		sw->pg++;
	}
	arm(sw, PH_STEP, 0);
}

static void on_checked(void *ud, int err, const ProtobufCMessage *msg)
{
	struct osd_sweep *sw = ud;
	if (sw->stopping)
		return;
	const Iolake__Meta__CheckShardsResponse *r = (const void *)msg;
	if (sw->n_ids && !err &&
	    (r->status != IOLAKE__META__STATUS__STATUS_OK || r->n_referenced != sw->n_ids))
		err = -EPROTO;
	if (err) {
		char why[96];
		snprintf(why, sizeof(why), "CheckShards: %s", iol_strerror(err));
		pass_end(sw, false, why);
		return;
	}
	sw->pass_ids += sw->n_ids;
	uint64_t now = uv_now(sw->loop);
	sw->n_due = sw->due_next = 0;
	for (size_t i = 0; i < sw->n_ids; i++) {
		const uint8_t *id = sw->ids[i];
		struct table *o = &sw->old;
		while (sw->old_pos < o->n &&
		       cand_cmp(o->v[sw->old_pos].pg, o->v[sw->old_pos].id, sw->pg, id) < 0)
			sw->old_pos++;
		bool known = sw->old_pos < o->n &&
			     cand_cmp(o->v[sw->old_pos].pg, o->v[sw->old_pos].id, sw->pg, id) == 0;
		if (r->referenced[i])
			continue;   /* live (or live again): forgotten */
		uint64_t first = known ? o->v[sw->old_pos].first_ms : now;
		if (known && now - first >= sw->grace_ms) {
			struct cand *c = &sw->due[sw->n_due++];
			c->pg = sw->pg;
			memcpy(c->id, id, SHARD_DATA_ID_LEN);
			c->first_ms = first;
		} else {
			table_add(&sw->cur, sw->max_cand, sw->pg, id, first);
		}
	}
	sw->phase = PH_DELETE;
	del_next_id(sw);
}

/* ---------------------------------------------------------- deletion */

/* Start on the next due id, or finish the page. */
static void del_next_id(struct osd_sweep *sw)
{
	if (sw->due_next == sw->n_due) {
		page_done(sw);
		return;
	}
	const struct cand *c = &sw->due[sw->due_next];
	/* (pg, id, length 16, shard 255) sorts before every (pg, id || seg, *)
	 * key: the padded bytes tie and the shorter length comes first. */
	store_key_make(&sw->dafter, c->pg, c->id, SHARD_DATA_ID_LEN, 255);
	sw->dmore = true;
	sw->dn = sw->dnext = 0;
	sw->dfailed = false;
	del_pump(sw);
}

/* List the next few keys of the current due id. */
static int del_list(struct osd_sweep *sw)
{
	const struct cand *c = &sw->due[sw->due_next];
	bool more = false;
	struct store_list_ent ents[DEL_PAGE];
	int n = store_list(sw->st, c->pg, &sw->dafter, ents, DEL_PAGE, &more);
	if (n < 0)
		return n;
	sw->dn = sw->dnext = 0;
	sw->dmore = more;
	for (int i = 0; i < n; i++) {
		const struct store_key *k = &ents[i].key;
		/* Keys sort by the zero-padded id, so those whose first 16
		 * bytes are c->id are one run. */
		if (memcmp(k->oid, c->id, SHARD_DATA_ID_LEN) != 0) {
			sw->dmore = false;   /* past this id */
			break;
		}
		if (k->oid_len == SHARD_OID_LEN)
			sw->dpage[sw->dn++] = ents[i];
	}
	if (n > 0)
		sw->dafter = ents[n - 1].key;
	return 0;
}

static void on_deleted(struct store_del_req *req, int status)
{
	struct del *d = req->data;
	struct osd_sweep *sw = d->sw;
	d->busy = false;
	sw->dinflight--;
	if (status == 0) {
		sw->stats.shards_deleted++;
		sw->stats.bytes_deleted += d->bytes;
		sw->pass_deleted++;
		if (sw->m_shards) {
			metrics_counter_inc(sw->m_shards);
			metrics_counter_add(sw->m_bytes, d->bytes);
		}
	} else if (status != IOL_ENOT_FOUND) {
		sw->dfailed = true;
	}
	if (sw->stopping) {
		maybe_done(sw);
		return;
	}
	if (sw->phase == PH_DELETE)
		del_pump(sw);
}

/* Keep up to DEL_WINDOW deletes of the current id going; list more keys
 * when the listed ones are all issued; move on when none are left. */
static void del_pump(struct osd_sweep *sw)
{
	for (;;) {
		if (sw->dnext == sw->dn) {
			if (sw->dinflight)
				return;   /* list after these land */
			if (!sw->dmore)
				break;
			int rc = del_list(sw);
			if (rc) {
				sw->dfailed = true;
				break;
			}
			continue;
		}
		if (sw->dinflight == DEL_WINDOW)
			return;
		struct del *d = NULL;
		for (int i = 0; i < DEL_WINDOW && !d; i++)
			if (!sw->dels[i].busy)
				d = &sw->dels[i];
		const struct store_list_ent *e = &sw->dpage[sw->dnext];
		d->req.data = d;
		d->sw = sw;
		d->bytes = e->stat.is_inline ? e->stat.length : (uint64_t)e->stat.blocks * 4096;
		int rc = store_delete(sw->st, &d->req, &e->key, on_deleted);
		if (rc == -EAGAIN) {
			if (!sw->dinflight)
				arm(sw, PH_DEL_RETRY, BUSY_RETRY_MS);
			return;   /* a completion or the timer pumps again */
		}
		sw->dnext++;
		if (rc == 0) {
			d->busy = true;
			sw->dinflight++;
		} else if (rc != IOL_ENOT_FOUND) {
			sw->dfailed = true;
		}
	}
	/* This id is done. One that kept a shard stays a candidate (same
	 * first sighting): the next pass tries again. */
	const struct cand *c = &sw->due[sw->due_next];
	if (sw->dfailed)
		table_add(&sw->cur, sw->max_cand, c->pg, c->id, c->first_ms);
	sw->due_next++;
	del_next_id(sw);
}

/* ---------------------------------------------------------- lifecycle */

int osd_sweep_start(uv_loop_t *loop, struct store *st, const struct osd_sweep_opts *o,
		    struct osd_sweep **out)
{
	if (!o || !o->n_meta || !o->interval_ms || o->page_keys > PAGE_DEFAULT)
		return -EINVAL;
	struct osd_sweep *sw = calloc(1, sizeof(*sw));
	if (!sw)
		return -ENOMEM;
	sw->loop = loop;
	sw->st = st;
	sw->osd_id = o->osd_id;
	sw->grace_ms = o->grace_ms;
	sw->interval_ms = o->interval_ms;
	sw->max_cand = o->max_candidates ? o->max_candidates : CAND_DEFAULT;
	sw->page_keys = o->page_keys ? o->page_keys : PAGE_DEFAULT;
	sw->page = calloc(sw->page_keys, sizeof(*sw->page));
	sw->ids = calloc(sw->page_keys, sizeof(*sw->ids));
	sw->due = calloc(sw->page_keys, sizeof(*sw->due));
	int rc = -ENOMEM;
	if (!sw->page || !sw->ids || !sw->due)
		goto fail;
	if (o->metrics) {
		char id[12];
		snprintf(id, sizeof(id), "%u", o->osd_id);
		sw->m_cand = metrics_gauge_new(o->metrics, "iolake_osd_orphan_candidates",
			"Shard object ids no live record names, waiting out --orphan-grace.",
			METRICS_LABELS("osd", id));
		sw->m_shards = metrics_counter_new(o->metrics, "iolake_osd_orphan_shards_deleted_total",
			"Orphan shards the sweep deleted.", METRICS_LABELS("osd", id));
		sw->m_bytes = metrics_counter_new(o->metrics, "iolake_osd_orphan_bytes_deleted_total",
			"Bytes freed by the orphan sweep (extent bytes, or inline bytes).",
			METRICS_LABELS("osd", id));
		if (!sw->m_cand || !sw->m_shards || !sw->m_bytes) {
			rc = errno == EEXIST ? -EEXIST : -ENOMEM;
			goto fail;
		}
	}
	struct meta_client_opts mo = { .members = o->meta, .n_members = o->n_meta,
				       .retry_for_ms = 10000 };
	rc = meta_client_new(loop, &mo, &sw->mc);
	if (rc)
		goto fail;
	uv_timer_init(loop, &sw->timer);
	sw->timer.data = sw;
	arm(sw, PH_IDLE, sw->interval_ms);
	*out = sw;
	return 0;
fail:
	free(sw->page);
	free(sw->ids);
	free(sw->due);
	free(sw);
	return rc;
}

void osd_sweep_stats(const struct osd_sweep *sw, struct osd_sweep_stats *out)
{
	*out = sw->stats;
}

static void on_timer_closed(uv_handle_t *h)
{
	struct osd_sweep *sw = h->data;
	sw->timer_closed = true;
	maybe_done(sw);
}

void osd_sweep_stop(struct osd_sweep *sw, void (*done_cb)(void *arg), void *arg)
{
	sw->stopping = true;
	sw->done_cb = done_cb;
	sw->done_arg = arg;
	/* A call in flight is answered IOL_ESHUTDOWN from inside this;
	 * on_checked ignores it. */
	meta_client_close(sw->mc);
	sw->mc = NULL;
	uv_timer_stop(&sw->timer);
	uv_close((uv_handle_t *)&sw->timer, on_timer_closed);
}
