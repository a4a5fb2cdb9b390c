/*
 * range_move.c — the driver of a move of records between range groups
 * (contracts in range_move.h). One move at a time, one call in flight at
 * a time; every step re-reads what it needs (the root's row, the target's
 * cursor), so a driver that starts in the middle of a move, after another
 * one crashed, carries on from there.
 *
 * A split copies its source unsealed (FeedRange first), then catches up
 * with the source's change feed in batches from the target's feed cursor;
 * once fewer than META_MOVE_TAIL changes are left (or when a batch left
 * more than the one before: the writes outrun the catch-up; or after
 * META_MOVE_CATCHUP_ROUNDS batches) it seals the source and sends the
 * rest. A merge, and a split within one group (its rows are rewritten
 * in place), seal for their whole copy.
 *
 * Owns its struct mv until the callback. Not here: the ops themselves
 * (meta/state_range.c), routing around a sealed range (meta/route.c).
 */
#include "meta/range_move.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/log.h"

#define OK_ IOLAKE__META__STATUS__STATUS_OK
#define PH_COPY IOLAKE__META__RANGE_MOVE_PHASE__MOVE_COPY
#define PH_CLEANUP IOLAKE__META__RANGE_MOVE_PHASE__MOVE_CLEANUP
#define PH_NONE IOLAKE__META__RANGE_MOVE_PHASE__MOVE_NONE
#define K_SPLIT IOLAKE__META__RANGE_MOVE_KIND__MOVE_SPLIT
#define K_MERGE IOLAKE__META__RANGE_MOVE_KIND__MOVE_MERGE
#define K_RIGHT IOLAKE__META__RANGE_MOVE_KIND__MOVE_MERGE_RIGHT

struct mv {
	struct meta_client *c;
	uv_loop_t *loop;
	struct meta_move_opts o;
	struct meta_move_stats st;
	meta_move_cb cb;
	void *ud;
	char bucket[64];               /* "" : any bucket */
	char cur_bucket[64];           /* the bucket of the move being driven */
	/* the move being driven (copies from the root's table) */
	Iolake__Meta__RangeDesc *row, *right;
	uint64_t src_group, src_id, tgt_group;
	const char *span_start, *span_end;   /* in row / right */
	const char *tgt_start, *tgt_end;
	uint64_t init_objects, init_bytes, init_uploads;   /* merge: the left range's */
	uint64_t src_objects, src_bytes, src_uploads;      /* split: the sealed range's */
	uint8_t *cursor;
	size_t cursor_len;
	uint32_t batches;
	uint64_t sealed_at_ms;
	Iolake__Meta__ReadRangeResponse *page;   /* the batch in flight */
	int seals;                     /* seals still to send */
	/* a split's catch-up: the target's feed cursor, whether the source
	 * is sealed, catch-up batches read since the bulk copy */
	uint64_t feed_cursor;
	bool fed;                      /* a split to another group: copied unsealed */
	bool src_sealed;
	uint32_t rounds;
	uint64_t last_left;            /* changes left after the previous batch */
};

static void next(struct mv *m);
static void feed_on(struct mv *m);
static void on_src_counted(void *ud, int err, const ProtobufCMessage *resp);
static const Iolake__Meta__RangeDesc *answer_range(const ProtobufCMessage *resp, uint64_t id);

static void free_msg(void *p)
{
	if (p)
		protobuf_c_message_free_unpacked(p, NULL);
}

static void forget(struct mv *m)
{
	free_msg(m->row);
	free_msg(m->right);
	free_msg(m->page);
	free(m->cursor);
	m->row = m->right = NULL;
	m->page = NULL;
	m->cursor = NULL;
	m->cursor_len = 0;
	m->batches = 0;
	m->init_objects = m->init_bytes = m->init_uploads = 0;
	m->src_objects = m->src_bytes = m->src_uploads = 0;
	m->feed_cursor = 0;
	m->fed = false;
	m->src_sealed = false;
	m->rounds = 0;
	m->last_left = 0;
}

static void finish(struct mv *m, int err)
{
	if (err)
		LOG_WARN("range move stopped", "bucket=%s err=%s", m->cur_bucket, iol_strerror(err));
	forget(m);
	meta_move_cb cb = m->cb;
	void *ud = m->ud;
	struct meta_move_stats st = m->st;
	free(m);
	cb(ud, err, &st);
}

static int status_err(Iolake__Meta__Status s)
{
	switch (s) {
	case IOLAKE__META__STATUS__STATUS_OK: return 0;
	case IOLAKE__META__STATUS__STATUS_CONFLICT: return -EBUSY;
	case IOLAKE__META__STATUS__STATUS_NOT_FOUND: return IOL_ENOT_FOUND;
	case IOLAKE__META__STATUS__STATUS_INVALID: return -EINVAL;
	case IOLAKE__META__STATUS__STATUS_WRONG_RANGE: return -EXDEV;
	default: return -EIO;
	}
}

static void submit(struct mv *m, uint64_t group, Iolake__Meta__Op *op, meta_client_submit_cb cb)
{
	int rc = meta_client_submit_group(m->c, group, op, cb, m);
	if (rc)
		finish(m, rc);
}

static void call(struct mv *m, unsigned method, const ProtobufCMessage *req, meta_client_cb cb)
{
	int rc = meta_client_call_direct(m->c, method, req, cb, m);
	if (rc)
		finish(m, rc);
}

static void get_ranges(struct mv *m, const char *bucket, uint64_t group, meta_client_cb cb)
{
	Iolake__Meta__GetRangesRequest q = IOLAKE__META__GET_RANGES_REQUEST__INIT;
	q.bucket = (char *)bucket;
	q.group = group;
	call(m, META_M_GET_RANGES, &q.base, cb);
}

/* A submitted op's answer: false to go on; true when it failed (the move
 * is finished with the error). */
static bool op_failed(struct mv *m, int err, const Iolake__Meta__OpResult *res)
{
	if (!err)
		err = status_err(res->status);
	if (err)
		finish(m, err);
	return err != 0;
}

static Iolake__Meta__RangeDesc desc(struct mv *m, uint64_t id, const char *start, const char *end,
				    uint64_t group)
{
	Iolake__Meta__RangeDesc d = IOLAKE__META__RANGE_DESC__INIT;
	d.id = id;
	d.bucket = m->cur_bucket;
	d.start = (char *)start;
	d.end = (char *)end;
	d.group = group;
	return d;
}

/* SealRange of d in group (for a move, or the target's unseal). */
static void seal(struct mv *m, uint64_t group, Iolake__Meta__RangeDesc *d, bool unseal,
		 meta_client_submit_cb cb)
{
	Iolake__Meta__SealRange s = IOLAKE__META__SEAL_RANGE__INIT;
	s.range = d;
	s.unseal = unseal;
	s.for_move = !unseal;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_SEAL_RANGE;
	op.seal_range = &s;
	submit(m, group, &op, cb);
}

/* The answer of a ReadRange (bulk or feed), kept in m->page for the ingest
 * that follows; NULL when it failed (the move is finished). */
static const Iolake__Meta__ReadRangeResponse *take_page(struct mv *m, int err,
							 const ProtobufCMessage *resp)
{
	const Iolake__Meta__ReadRangeResponse *p = (const void *)resp;
	if (!err)
		err = status_err(p->status);
	if (!err && !(m->page = (Iolake__Meta__ReadRangeResponse *)meta_client_copy_msg(resp)))
		err = -ENOMEM;
	if (err) {
		finish(m, err);
		return NULL;
	}
	return m->page;
}

/* A ReadRange of the moving span from the source: the bulk from after
 * m->cursor, or (feed) the changes after m->feed_cursor. */
static void read_span(struct mv *m, bool feed, meta_client_cb cb)
{
	Iolake__Meta__ReadRangeRequest q = IOLAKE__META__READ_RANGE_REQUEST__INIT;
	q.range_id = m->src_id;
	q.bucket = m->cur_bucket;
	q.start = (char *)m->span_start;
	q.end = (char *)m->span_end;
	if (feed) {
		q.feed = true;
		q.feed_after = m->feed_cursor;
	} else {
		q.after.data = m->cursor;
		q.after.len = m->cursor_len;
	}
	q.max_records = m->o.batch_records;
	q.max_bytes = m->o.batch_bytes;
	q.group = m->src_group;
	call(m, META_M_READ_RANGE, &q.base, cb);
}

/* An IngestRange into the target of d carrying page p's records; the
 * caller sets what differs between the bulk and the feed. */
static Iolake__Meta__IngestRange ingest_of(Iolake__Meta__RangeDesc *d,
					   const Iolake__Meta__ReadRangeResponse *p)
{
	Iolake__Meta__IngestRange in = IOLAKE__META__INGEST_RANGE__INIT;
	in.range = d;
	in.keys = p->keys;
	in.n_keys = p->n_keys;
	in.values = p->values;
	in.n_values = p->n_values;
	return in;
}

static void submit_ingest(struct mv *m, Iolake__Meta__IngestRange *in, meta_client_submit_cb cb)
{
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_INGEST_RANGE;
	op.ingest_range = in;
	submit(m, m->tgt_group, &op, cb);
}

/* ---- CLEANUP: drop the span from the source, then clear the row */

static void on_step_done(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct mv *m = ud;
	if (op_failed(m, err, res))
		return;
	m->st.moves++;
	next(m);
}

static void step(struct mv *m, Iolake__Meta__RangeMovePhase ph)
{
	Iolake__Meta__MoveRangeStep s = IOLAKE__META__MOVE_RANGE_STEP__INIT;
	s.bucket = m->cur_bucket;
	s.move_id = m->row->move_id;
	s.phase = ph;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_MOVE_RANGE_STEP;
	op.move_range_step = &s;
	submit(m, 0, &op, on_step_done);
}

static void drop(struct mv *m);

static void on_dropped(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct mv *m = ud;
	if (op_failed(m, err, res))
		return;
	m->st.dropped += res->generation;
	if (res->generation)
		drop(m);
	else
		step(m, PH_NONE);
}

static void drop(struct mv *m)
{
	Iolake__Meta__DropRange d = IOLAKE__META__DROP_RANGE__INIT;
	d.bucket = m->cur_bucket;
	d.start = m->row->move_key;
	d.end = m->row->move_end;
	d.max = m->o.batch_records;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_DROP_RANGE;
	op.drop_range = &d;
	submit(m, m->row->move_group, &op, on_dropped);
}

/* ---- COPY */

static void on_switched(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct mv *m = ud;
	if (op_failed(m, err, res))
		return;
	if (m->sealed_at_ms) {
		m->st.sealed_ms = uv_now(m->loop) - m->sealed_at_ms;
		m->st.sealed_ms_total += m->st.sealed_ms;
	}
	next(m);
}

static void on_unsealed(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct mv *m = ud;
	if (op_failed(m, err, res))
		return;
	Iolake__Meta__MoveRangeStep s = IOLAKE__META__MOVE_RANGE_STEP__INIT;
	s.bucket = m->cur_bucket;
	s.move_id = m->row->move_id;
	s.phase = PH_CLEANUP;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_MOVE_RANGE_STEP;
	op.move_range_step = &s;
	submit(m, 0, &op, on_switched);
}

static void unseal_target(struct mv *m)
{
	Iolake__Meta__RangeDesc d = desc(m, m->row->move_id, m->tgt_start, m->tgt_end, m->tgt_group);
	seal(m, m->tgt_group, &d, true, on_unsealed);
}

static void on_left_opened(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct mv *m = ud;
	if (op_failed(m, err, res))
		return;
	unseal_target(m);
}

/* Range id's row in a GetRanges answer; NULL when absent. */
static const Iolake__Meta__RangeDesc *answer_range(const ProtobufCMessage *resp, uint64_t id)
{
	const Iolake__Meta__GetRangesResponse *g = (const void *)resp;
	for (size_t i = 0; i < g->n_ranges; i++)
		if (g->ranges[i]->id == id)
			return g->ranges[i];
	return NULL;
}

/* The target's row, read back after the last batch: its counters say what
 * the split's left half keeps. */
static void on_target_counted(void *ud, int err, const ProtobufCMessage *resp)
{
	struct mv *m = ud;
	const Iolake__Meta__RangeDesc *t = err ? NULL : answer_range(resp, m->row->move_id);
	if (!err && !t)
		err = -EIO;
	if (err) {
		finish(m, err);
		return;
	}
	Iolake__Meta__RangeDesc d = desc(m, m->row->move_left_id, m->row->start, m->row->move_key,
					 m->src_group);
	/* In one group the copy counted the right half's records again. */
	d.objects = m->src_objects > t->objects ? m->src_objects - t->objects : 0;
	d.bytes = m->src_bytes > t->bytes ? m->src_bytes - t->bytes : 0;
	d.uploads = m->src_uploads > t->uploads ? m->src_uploads - t->uploads : 0;
	Iolake__Meta__OpenRange o = IOLAKE__META__OPEN_RANGE__INIT;
	o.range = &d;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_OPEN_RANGE;
	op.open_range = &o;
	submit(m, m->src_group, &op, on_left_opened);
}

static void copied(struct mv *m)
{
	if (m->row->move_kind == K_SPLIT)
		get_ranges(m, "", m->tgt_group, on_target_counted);
	else
		unseal_target(m);
}

static void read_batch(struct mv *m);
static void read_cursor(struct mv *m);
static void catch_up(struct mv *m);
static void tail_done(struct mv *m);

/* The bulk copy is in: a split to another group catches up with its
 * source's changes; a merge or a split within one group (sealed) is
 * copied. */
static void bulk_done(struct mv *m)
{
	if (m->fed)
		catch_up(m);
	else
		copied(m);
}

/* An IngestRange's answer: false to go on with m->page; true when it was
 * handled: CONFLICT (the target's cursors are elsewhere: a batch applied
 * with its answer lost, or another driver) re-reads them, an error
 * finishes the move. */
static bool ingest_failed(struct mv *m, int err, const Iolake__Meta__OpResult *res)
{
	if (!err && res->status == IOLAKE__META__STATUS__STATUS_CONFLICT) {
		free_msg(m->page);
		m->page = NULL;
		read_cursor(m);
		return true;
	}
	return op_failed(m, err, res);
}

static void on_ingested(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct mv *m = ud;
	if (ingest_failed(m, err, res))
		return;
	Iolake__Meta__ReadRangeResponse *p = m->page;
	m->page = NULL;
	m->st.records += p->records;
	m->st.batches++;
	m->batches++;
	bool done = p->done;
	free(m->cursor);
	m->cursor = NULL;
	m->cursor_len = 0;
	if (p->upto.len && (m->cursor = malloc(p->upto.len))) {
		memcpy(m->cursor, p->upto.data, p->upto.len);
		m->cursor_len = p->upto.len;
	}
	bool oom = p->upto.len && !m->cursor;
	free_msg(p);
	if (oom) {
		finish(m, -ENOMEM);
		return;
	}
	if (m->o.stop_after_batches && m->batches >= m->o.stop_after_batches) {
		finish(m, -EINTR);
		return;
	}
	if (done)
		bulk_done(m);
	else
		read_batch(m);
}

static void on_read(void *ud, int err, const ProtobufCMessage *resp)
{
	struct mv *m = ud;
	const Iolake__Meta__ReadRangeResponse *p = take_page(m, err, resp);
	if (!p)
		return;
	Iolake__Meta__RangeDesc d = desc(m, m->row->move_id, m->tgt_start, m->tgt_end, m->tgt_group);
	d.objects = m->init_objects;
	d.bytes = m->init_bytes;
	d.uploads = m->init_uploads;
	Iolake__Meta__IngestRange in = ingest_of(&d, p);
	in.after.data = m->cursor;
	in.after.len = m->cursor_len;
	in.upto = p->upto;
	in.fed = m->fed;
	if (m->o.drop_last_batch && p->done && p->n_keys)
		in.n_keys = in.n_values = 0;   /* the planted bug */
	submit_ingest(m, &in, on_ingested);
}

static void read_batch(struct mv *m)
{
	read_span(m, false, on_read);
}

/* The target's ingest cursor (no row yet: from the start). */
static void on_cursor(void *ud, int err, const ProtobufCMessage *resp)
{
	struct mv *m = ud;
	const Iolake__Meta__GetRangesResponse *g = (const void *)resp;
	if (err) {
		finish(m, err);
		return;
	}
	free(m->cursor);
	m->cursor = NULL;
	m->cursor_len = 0;
	for (size_t i = 0; i < g->n_ranges; i++) {
		const Iolake__Meta__RangeDesc *t = g->ranges[i];
		if (t->id != m->row->move_id)
			continue;
		if (!t->sealed) {   /* filled and opened before: switch */
			if (m->fed)
				tail_done(m);
			else
				copied(m);
			return;
		}
		m->feed_cursor = t->feed_cursor;
		if (t->ingest_cursor.len) {
			m->cursor = malloc(t->ingest_cursor.len);
			if (!m->cursor) {
				finish(m, -ENOMEM);
				return;
			}
			memcpy(m->cursor, t->ingest_cursor.data, t->ingest_cursor.len);
			m->cursor_len = t->ingest_cursor.len;
		}
	}
	read_batch(m);
}

static void read_cursor(struct mv *m)
{
	get_ranges(m, "", m->tgt_group, on_cursor);
}

/* The counters of the range(s) sealed in the row's group: a merge's
 * target starts with the left range's (read before the copy), a split's
 * left half keeps the sealed range's less what moved (read after the
 * tail). */
static void on_src_counted(void *ud, int err, const ProtobufCMessage *resp)
{
	struct mv *m = ud;
	const Iolake__Meta__RangeDesc *s = err ? NULL : answer_range(resp, m->row->id);
	if (!err && !s)
		err = -EIO;
	if (err) {
		finish(m, err);
		return;
	}
	if (m->row->move_kind == K_SPLIT) {   /* sealed (and caught up): what it held */
		m->src_objects = s->objects;
		m->src_bytes = s->bytes;
		m->src_uploads = s->uploads;
		if (m->fed)
			copied(m);
		else
			read_cursor(m);
		return;
	}
	m->init_objects = s->objects;
	m->init_bytes = s->bytes;
	m->init_uploads = s->uploads;
	read_cursor(m);
}

static void seal_next(struct mv *m);

static void on_sealed(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct mv *m = ud;
	if (op_failed(m, err, res))
		return;
	seal_next(m);
}

static void seal_next(struct mv *m)
{
	if (m->seals == 0) {
		get_ranges(m, "", m->row->group, on_src_counted);
		return;
	}
	/* the row's own range first, then a merge's right one */
	const Iolake__Meta__RangeDesc *r = m->seals == 2 || !m->right ? m->row : m->right;
	m->seals--;
	Iolake__Meta__RangeDesc d = desc(m, r->id, r->start, r->end, r->group);
	seal(m, r->group, &d, false, on_sealed);
}

/* ---- a split's catch-up: the source's change feed, sealed for the tail */

static void seal_source(struct mv *m);

static void on_feed_ingested(void *ud, int err, const Iolake__Meta__OpResult *res,
			     uint64_t index)
{
	(void)index;
	struct mv *m = ud;
	if (ingest_failed(m, err, res))
		return;
	Iolake__Meta__ReadRangeResponse *p = m->page;
	m->page = NULL;
	m->feed_cursor = p->feed_upto;
	m->st.changes += p->n_feed_keys;
	m->st.catchups++;
	bool sealed = p->sealed;
	uint64_t left = p->feed_left;
	free_msg(p);
	/* Seal once the tail is short, or when catching up stopped gaining
	 * on the writes (the tail would only grow), or after
	 * META_MOVE_CATCHUP_ROUNDS batches. */
	bool gaining = m->rounds == 0 || left < m->last_left;
	m->rounds++;
	m->last_left = left;
	if (sealed && left == 0)
		tail_done(m);
	else if (!sealed && !m->src_sealed &&
		 (left < META_MOVE_TAIL || !gaining || m->rounds >= META_MOVE_CATCHUP_ROUNDS))
		seal_source(m);
	else
		catch_up(m);
}

static void on_feed_read(void *ud, int err, const ProtobufCMessage *resp)
{
	struct mv *m = ud;
	const Iolake__Meta__ReadRangeResponse *p = take_page(m, err, resp);
	if (!p)
		return;
	Iolake__Meta__RangeDesc d = desc(m, m->row->move_id, m->tgt_start, m->tgt_end, m->tgt_group);
	Iolake__Meta__IngestRange in = ingest_of(&d, p);
	in.feed = true;
	in.feed_after = m->feed_cursor;
	in.feed_upto = p->feed_upto;
	in.replace = p->feed_keys;
	in.n_replace = p->n_feed_keys;
	submit_ingest(m, &in, on_feed_ingested);
}

static void catch_up(struct mv *m)
{
	read_span(m, true, on_feed_read);
}

static void on_tail_sealed(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct mv *m = ud;
	if (op_failed(m, err, res))
		return;
	m->src_sealed = true;
	catch_up(m);
}

/* The tail is short: seal the source (its ops answer WRONG_RANGE and wait
 * from now on), then the last batches. */
static void seal_source(struct mv *m)
{
	m->sealed_at_ms = uv_now(m->loop);
	const Iolake__Meta__RangeDesc *r = m->row;
	Iolake__Meta__RangeDesc d = desc(m, r->id, r->start, r->end, r->group);
	seal(m, r->group, &d, false, on_tail_sealed);
}

/* Sealed and caught up (or found switched): the source's counters. */
static void tail_done(struct mv *m)
{
	get_ranges(m, "", m->src_group, on_src_counted);
}

static void on_src_state(void *ud, int err, const ProtobufCMessage *resp)
{
	struct mv *m = ud;
	const Iolake__Meta__RangeDesc *s = err ? NULL : answer_range(resp, m->src_id);
	if (!err && !s)
		err = -EIO;
	if (err) {
		finish(m, err);
		return;
	}
	m->src_sealed = s->sealed;
	read_cursor(m);
}

static void on_feed_on(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct mv *m = ud;
	if (op_failed(m, err, res))
		return;
	get_ranges(m, "", m->src_group, on_src_state);
}

/* A split copies its source unsealed: its change feed first. */
static void feed_on(struct mv *m)
{
	const Iolake__Meta__RangeDesc *r = m->row;
	Iolake__Meta__RangeDesc d = desc(m, r->id, r->start, r->end, r->group);
	Iolake__Meta__FeedRange f = IOLAKE__META__FEED_RANGE__INIT;
	f.range = &d;
	f.start = r->move_key;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_FEED_RANGE;
	op.feed_range = &f;
	submit(m, r->group, &op, on_feed_on);
}

/* ---- the root's table: which move, which phase */

static void on_table(void *ud, int err, const ProtobufCMessage *resp)
{
	struct mv *m = ud;
	const Iolake__Meta__GetRangesResponse *g = (const void *)resp;
	if (err) {
		finish(m, err);
		return;
	}
	forget(m);
	ssize_t at = -1;
	for (size_t i = 0; i < g->n_ranges && at < 0; i++)
		if (g->ranges[i]->move_phase != PH_NONE && g->ranges[i]->move_kind != K_RIGHT)
			at = (ssize_t)i;
	if (at < 0) {
		finish(m, 0);   /* no move left */
		return;
	}
	m->row = (Iolake__Meta__RangeDesc *)meta_client_copy_msg(&g->ranges[at]->base);
	if ((size_t)at + 1 < g->n_ranges && g->ranges[at + 1]->move_kind == K_RIGHT)
		m->right = (Iolake__Meta__RangeDesc *)meta_client_copy_msg(&g->ranges[at + 1]->base);
	if (!m->row) {
		finish(m, -ENOMEM);
		return;
	}
	Iolake__Meta__RangeDesc *r = m->row;
	snprintf(m->cur_bucket, sizeof(m->cur_bucket), "%s", r->bucket);
	if (r->move_phase == PH_CLEANUP) {
		if (r->move_group)
			drop(m);
		else
			step(m, PH_NONE);
		return;
	}
	if (r->move_kind == K_SPLIT) {
		m->src_group = r->group;
		m->src_id = r->id;
		m->span_start = r->move_key;
		m->span_end = r->end;
		m->tgt_group = r->move_group;
		m->tgt_start = r->move_key;
		m->tgt_end = r->end;
		m->fed = r->move_group != r->group;
		m->seals = m->fed ? 0 : 1;
	} else if (m->right) {
		m->src_group = m->right->group;
		m->src_id = m->right->id;
		m->span_start = m->right->start;
		m->span_end = m->right->end;
		m->tgt_group = r->group;
		m->tgt_start = r->start;
		m->tgt_end = m->right->end;
		m->seals = 2;
	} else {
		finish(m, -EIO);   /* a merge without its right row */
		return;
	}
	LOG_INFO("range move", "bucket=%s kind=%u range=%llu from=%llu to=%llu", m->cur_bucket,
		 r->move_kind, (unsigned long long)m->src_id, (unsigned long long)m->src_group,
		 (unsigned long long)m->tgt_group);
	if (m->fed) {
		feed_on(m);
		return;
	}
	m->sealed_at_ms = uv_now(m->loop);
	seal_next(m);
}

static void next(struct mv *m)
{
	/* bucket "": every range of every bucket, in (bucket, start) order */
	get_ranges(m, m->bucket[0] ? m->bucket : "", 0, on_table);
}

static struct mv *mv_new(struct meta_client *c, uv_loop_t *loop, const char *bucket,
			 const struct meta_move_opts *o, meta_move_cb cb, void *ud)
{
	struct mv *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->c = c;
	m->loop = loop;
	if (o)
		m->o = *o;
	if (!m->o.batch_records)
		m->o.batch_records = META_MOVE_BATCH_RECORDS;
	if (!m->o.batch_bytes || m->o.batch_bytes > META_MOVE_BATCH_BYTES)
		m->o.batch_bytes = META_MOVE_BATCH_BYTES;
	m->cb = cb;
	m->ud = ud;
	snprintf(m->bucket, sizeof(m->bucket), "%s", bucket ? bucket : "");
	return m;
}

int meta_move_drive(struct meta_client *c, uv_loop_t *loop, const char *bucket,
		    const struct meta_move_opts *o, meta_move_cb cb, void *ud)
{
	struct mv *m = mv_new(c, loop, bucket, o, cb, ud);
	if (!m)
		return -ENOMEM;
	next(m);
	return 0;
}

static void on_started(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct mv *m = ud;
	if (op_failed(m, err, res))
		return;
	next(m);
}

int meta_move_start(struct meta_client *c, uv_loop_t *loop, const char *bucket,
		    uint64_t range_id, const char *key, bool merge, uint64_t target_group,
		    const struct meta_move_opts *o, meta_move_cb cb, void *ud)
{
	struct mv *m = mv_new(c, loop, bucket, o, cb, ud);
	if (!m)
		return -ENOMEM;
	Iolake__Meta__MoveRange mr = IOLAKE__META__MOVE_RANGE__INIT;
	mr.bucket = (char *)bucket;
	mr.range_id = range_id;
	mr.key = (char *)key;
	mr.merge = merge;
	mr.target_group = target_group;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_MOVE_RANGE;
	op.move_range = &mr;
	submit(m, 0, &op, on_started);
	return 0;
}
