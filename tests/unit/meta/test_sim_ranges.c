/*
 * test_sim_ranges.c — a deterministic simulation of key ranges moving
 * between range groups: the root's state and three range groups' states
 * (meta/state.c and meta/state_range.c on real RocksDB under /dev/shm),
 * one thread, one seed = one run, step for step.
 *
 * A seeded driver interleaves:
 *   - PUTs and DELETEs over 512 keys in 16 "directories", routed by the
 *     root's table as a client routes them (an op refused WRONG_RANGE
 *     waits and is retried at a later step, as route.c waits out a move);
 *   - splits at random keys and merges of random neighbours (MoveRange),
 *     each carried out one step at a time by a mover that follows
 *     meta/range_move.c's protocol (a split: feed, copy in batches of 1-40
 *     records from the target's cursor, catch up in batches of 1-8
 *     changes, seal for the tail; a merge: seal, copy; then open the left
 *     half, unseal, switch, drop, done), so every other kind of step lands
 *     in the middle of moves;
 *   - the mover forgetting everything it knew (a root leader change: it
 *     resumes from the root's table and the target's cursor), a batch
 *     applied twice (a retried entry), an old cleanup's drop sent again
 *     after later moves (a stale driver), a group's state closed and
 *     opened again (a member restarted; its state is what RocksDB kept);
 *   - listings (page sizes 1-50, by range in table order, each range
 *     bounded to its keys) and point reads through the table.
 * Checked at every listing and read, and at the end (moves finished):
 *   every acknowledged PUT and DELETE and only those (the model); every
 *   listing in order equal to the model; the open ranges' counters sum to
 *   the model; no group holds a key outside its open ranges once moves
 *   are done (the source dropped what it moved); a replay of the seed
 *   gives the same trace hash (every decision, every group's digest).
 * Splits follow the copy that seals only for the tail (FeedRange, the
 * bulk copy unsealed while PUTs and DELETEs land in the span, catch-up
 * batches of the change feed from the target's feed cursor, the source
 * sealed once under SIM_TAIL changes are left, the rest); merges seal both
 * ranges for their copy.
 * Two planted bugs must fail it: the mover drops the last batch of a copy;
 * a catch-up drops one change (a key's rows and its delete) of each batch.
 *
 *   SIM_SEED=N SIM_STEPS=N build/tests/unit/meta/test_sim_ranges
 * make test: seed 1, 2,500 steps, and the planted bugs.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/hash.h"
#include "meta/list.h"
#include "meta/state.h"
#include "meta_test_util.h"

#define NG 4                       /* the root and groups 1..3 */
#define KEYS 512
#define VAL_MAX 24
#define PEND_MAX 64
#define B "simb"

struct gs {
	struct meta_state *st;
	uint64_t index;
	char dir[64];
};

struct pend {                      /* an op waiting out a move */
	unsigned key;
	bool del;
	char val[VAL_MAX];
};

enum { BUG_NONE, BUG_LAST_BATCH, BUG_FEED_CHANGE };

struct mover {
	bool active;
	int bug;                       /* BUG_*: a planted bug */
	int stage;
	Iolake__Meta__RangeDesc *row, *right;
	uint64_t src_group, src_id, tgt_group;
	const char *span_start, *span_end, *tgt_start, *tgt_end;
	uint64_t init_o, init_b, init_u, src_o, src_b, src_u;
	uint8_t cursor[2048];
	size_t cursor_len;
	uint64_t feed_cursor;          /* a split's catch-up: the target's */
	bool fed;                      /* a split to another group: unsealed */
	/* the last ingest, for a duplicate */
	struct tb *last;
	uint64_t last_group;
	/* the last cleanup's drop, for a stale driver to send again later */
	uint64_t drop_group;
	char drop_start[16], drop_end[16];
};

enum {
	ST_SEAL, ST_FEED, ST_COUNT, ST_COPY, ST_CATCHUP, ST_TAIL_SEAL, ST_SRC_COUNT, ST_OPEN_LEFT,
	ST_UNSEAL, ST_SWITCH, ST_DROP, ST_DONE
};
#define SIM_TAIL 3                 /* a split seals under this many changes left */

struct sim {
	struct gs g[NG];
	uint64_t rng;
	bool present[KEYS];
	char val[KEYS][VAL_MAX];
	struct pend pend[PEND_MAX];
	size_t n_pend;
	struct mover mv;
	uint8_t trace[32];
	unsigned version, moves, acked, retried;
	unsigned acked_copying, catchups, changes;   /* writes while a split copied */
	bool failed;
	char why[256];
	struct meta_op_result res[8];
};

static uint64_t rnd(struct sim *s)
{
	s->rng ^= s->rng << 13;
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	return s->rng;
}

static unsigned below(struct sim *s, unsigned n)
{
	return (unsigned)(rnd(s) % n);
}

static void trace(struct sim *s, const void *p, size_t n)
{
	uint8_t buf[64 + 32];
	memcpy(buf, s->trace, 32);
	if (n > 64)
		n = 64;
	memcpy(buf + 32, p, n);
	hash_sha256(buf, 32 + n, s->trace);
}

static void trace_u64(struct sim *s, uint64_t v)
{
	trace(s, &v, sizeof(v));
}

__attribute__((format(printf, 2, 3))) static void sim_fail(struct sim *s, const char *fmt, ...)
{
	if (s->failed)
		return;
	s->failed = true;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->why, sizeof(s->why), fmt, ap);
	va_end(ap);
}

static void key_name(unsigned k, char out[16])
{
	snprintf(out, 16, "d%02u/k%03u", k % 16, k);
}

/* The keys in name order (listing order). */
static unsigned ORDER[KEYS];

static int by_name(const void *a, const void *b)
{
	char x[16], y[16];
	key_name(*(const unsigned *)a, x);
	key_name(*(const unsigned *)b, y);
	return strcmp(x, y);
}

static void order_init(void)
{
	for (unsigned k = 0; k < KEYS; k++)
		ORDER[k] = k;
	qsort(ORDER, KEYS, sizeof(ORDER[0]), by_name);
}

/* Apply one op (built in t) to group gi; its result in s->res[0]. */
static int apply(struct sim *s, unsigned gi, struct tb *t)
{
	int rc = tb_apply(s->g[gi].st, ++s->g[gi].index, t, s->res);
	ck_assert_int_eq(rc, 1);
	trace_u64(s, ((uint64_t)gi << 32) | (uint32_t)s->res[0].err);
	return s->res[0].err;
}

static Iolake__Meta__RangeDesc *desc(struct tb *t, uint64_t id, const char *start,
				     const char *end, uint64_t group)
{
	Iolake__Meta__RangeDesc *d = tb_alloc(t, sizeof(*d));
	iolake__meta__range_desc__init(d);
	d->id = id;
	d->bucket = tb_str(t, B);
	d->start = tb_str(t, start);
	d->end = tb_str(t, end);
	d->group = group;
	return d;
}

static int seal(struct sim *s, uint64_t gi, uint64_t id, const char *start, const char *end,
		bool unseal)
{
	struct tb *t = tb_new();
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__SealRange *o = tb_alloc(t, sizeof(*o));
	iolake__meta__seal_range__init(o);
	o->range = desc(t, id, start, end, gi);
	o->unseal = unseal;
	o->for_move = !unseal;
	op->body_case = IOLAKE__META__OP__BODY_SEAL_RANGE;
	op->seal_range = o;
	return apply(s, (unsigned)gi, t);
}

static int open_range(struct sim *s, uint64_t gi, const Iolake__Meta__RangeDesc *src)
{
	struct tb *t = tb_new();
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__OpenRange *o = tb_alloc(t, sizeof(*o));
	iolake__meta__open_range__init(o);
	o->range = desc(t, src->id, src->start, src->end, gi);
	o->range->objects = src->objects;
	o->range->bytes = src->bytes;
	o->range->uploads = src->uploads;
	op->body_case = IOLAKE__META__OP__BODY_OPEN_RANGE;
	op->open_range = o;
	return apply(s, (unsigned)gi, t);
}

static size_t table(struct sim *s, Iolake__Meta__RangeDesc ***v)
{
	size_t n = 0;
	ck_assert_int_eq(meta_state_list_ranges(s->g[0].st, B, v, &n), 0);
	return n;
}

static void free_table(Iolake__Meta__RangeDesc **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		meta_state_free_msg(v[i]);
	free(v);
}

static bool covers(const Iolake__Meta__RangeDesc *r, const char *key)
{
	return strcmp(key, r->start) >= 0 && (!r->end[0] || strcmp(key, r->end) < 0);
}

/* ---------------------------------------------------------- the client */

static bool do_op(struct sim *s, const struct pend *p)
{
	char key[16];
	key_name(p->key, key);
	Iolake__Meta__RangeDesc **v;
	size_t n = table(s, &v);
	uint64_t gi = 0, rid = 0;
	for (size_t i = 0; i < n; i++)
		if (covers(v[i], key)) {
			gi = v[i]->group;
			rid = v[i]->id;
		}
	free_table(v, n);
	ck_assert_uint_ne(rid, 0);
	struct tb *t = tb_new();
	if (p->del) {
		tb_delete(t, 0, 0, B, key);
	} else {
		Iolake__Meta__PutObject *po = tb_put(t, 0, 0, B, key, strlen(p->val));
		memcpy(po->record->inline_data.data, p->val, strlen(p->val));
	}
	t->ops[0]->range_id = rid;
	int err = apply(s, (unsigned)gi, t);
	if (err == META_EWRONG_RANGE)
		return false;   /* sealed for a move: later */
	if (err == 0) {
		s->acked++;
		const struct mover *m = &s->mv;
		if (m->active && m->fed && m->stage >= ST_COPY && m->stage <= ST_TAIL_SEAL &&
		    strcmp(key, m->span_start) >= 0 &&
		    (!m->span_end[0] || strcmp(key, m->span_end) < 0))
			s->acked_copying++;   /* into a span being copied unsealed */
		s->present[p->key] = !p->del;
		if (!p->del)
			snprintf(s->val[p->key], VAL_MAX, "%s", p->val);
	} else if (p->del && err == IOL_ENOT_FOUND) {
		if (s->present[p->key])
			sim_fail(s, "DELETE %s: NOT_FOUND, the model has it", key);
	} else {
		sim_fail(s, "op on %s failed: %d", key, err);
	}
	return true;
}

static void client_step(struct sim *s)
{
	/* first the waiting ones, in order (one key at a time) */
	size_t w = 0;
	for (size_t i = 0; i < s->n_pend; i++) {
		if (do_op(s, &s->pend[i]))
			s->retried++;
		else
			s->pend[w++] = s->pend[i];
	}
	s->n_pend = w;
	unsigned k = below(s, KEYS);
	for (size_t i = 0; i < s->n_pend; i++)
		if (s->pend[i].key == k)
			return;   /* one op per key in flight */
	struct pend p = { .key = k, .del = below(s, 3) == 0 };
	snprintf(p.val, sizeof(p.val), "v%u.%u", k, ++s->version);
	if (!do_op(s, &p) && s->n_pend < PEND_MAX)
		s->pend[s->n_pend++] = p;
}

/* A point read through the table, against the model. */
static void read_step(struct sim *s)
{
	unsigned k = below(s, KEYS);
	for (size_t i = 0; i < s->n_pend; i++)
		if (s->pend[i].key == k)
			return;
	char key[16];
	key_name(k, key);
	Iolake__Meta__RangeDesc **v;
	size_t n = table(s, &v);
	uint64_t gi = 0;
	for (size_t i = 0; i < n; i++)
		if (covers(v[i], key))
			gi = v[i]->group;
	free_table(v, n);
	Iolake__Meta__ObjectRecord *r = NULL;
	int rc = meta_state_head_object(s->g[gi].st, B, key, &r);
	if (rc == 0 && (!s->present[k] || r->inline_data.len != strlen(s->val[k]) ||
			memcmp(r->inline_data.data, s->val[k], r->inline_data.len)))
		sim_fail(s, "read %s: the record in group %llu is not the model's", key, (unsigned long long)gi);
	if (rc == IOL_ENOT_FOUND && s->present[k])
		sim_fail(s, "read %s: missing in group %llu", key, (unsigned long long)gi);
	meta_state_free_msg(r);
}

/* A listing through the table, range by range, pages of `page`. */
static void list_step(struct sim *s, unsigned page)
{
	Iolake__Meta__RangeDesc **v;
	size_t n = table(s, &v);
	unsigned next = 0;   /* the model's next key, as an index into ORDER */
	char last[16] = "";
	for (size_t i = 0; i < n && !s->failed; i++) {
		char token[META_LIST_TOKEN_MAX] = "";
		for (;;) {
			struct meta_list_req q = { .bucket = B, .max_keys = page, .want_records = true,
						   .token = token[0] ? token : NULL,
						   .lo = v[i]->start, .hi = v[i]->end };
			struct meta_list_page pg;
			ck_assert_int_eq(meta_list(s->g[v[i]->group].st, &q, &pg), 0);
			for (size_t j = 0; j < pg.n && !s->failed; j++) {
				while (next < KEYS && !s->present[ORDER[next]])
					next++;
				char want[16];
				key_name(next < KEYS ? ORDER[next] : 0, want);
				if (next >= KEYS || strcmp(pg.entries[j].name, want))
					sim_fail(s, "listing: %s where the model has %s next",
						 pg.entries[j].name, next < KEYS ? want : "none");
				else if (strcmp(pg.entries[j].name, last) <= 0)
					sim_fail(s, "listing out of order at %s", want);
				snprintf(last, sizeof(last), "%s", pg.entries[j].name);
				next++;
			}
			bool more = pg.truncated;
			if (more)
				snprintf(token, sizeof(token), "%s", pg.next_token);
			meta_list_page_free(&pg);
			if (!more || s->failed)
				break;
		}
	}
	free_table(v, n);
	while (next < KEYS && !s->present[ORDER[next]])
		next++;
	if (!s->failed && next < KEYS)
		sim_fail(s, "listing ends before the model's key %u", ORDER[next]);
}

/* ----------------------------------------------------------- the mover */

static void mv_forget(struct mover *m)
{
	meta_state_free_msg(m->row);
	meta_state_free_msg(m->right);
	m->row = m->right = NULL;
	m->active = false;
	m->cursor_len = 0;
	m->feed_cursor = 0;
	m->fed = false;
	m->init_o = m->init_b = m->init_u = m->src_o = m->src_b = m->src_u = 0;
}

static int root_step(struct sim *s, Iolake__Meta__RangeMovePhase ph)
{
	struct tb *t = tb_new();
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__MoveRangeStep *o = tb_alloc(t, sizeof(*o));
	iolake__meta__move_range_step__init(o);
	o->bucket = tb_str(t, B);
	o->move_id = s->mv.row->move_id;
	o->phase = ph;
	op->body_case = IOLAKE__META__OP__BODY_MOVE_RANGE_STEP;
	op->move_range_step = o;
	return apply(s, 0, t);
}

/* Load the move in progress from the root's table; false: none. */
static bool mv_load(struct sim *s)
{
	struct mover *m = &s->mv;
	mv_forget(m);
	Iolake__Meta__RangeDesc **v;
	size_t n = table(s, &v);
	for (size_t i = 0; i < n && !m->row; i++)
		if (v[i]->move_phase && v[i]->move_kind != IOLAKE__META__RANGE_MOVE_KIND__MOVE_MERGE_RIGHT) {
			m->row = v[i];
			v[i] = NULL;
			if (i + 1 < n && v[i + 1]->move_kind ==
			    IOLAKE__META__RANGE_MOVE_KIND__MOVE_MERGE_RIGHT) {
				m->right = v[i + 1];
				v[i + 1] = NULL;
			}
		}
	free_table(v, n);
	if (!m->row)
		return false;
	m->active = true;
	Iolake__Meta__RangeDesc *r = m->row;
	if (r->move_phase == IOLAKE__META__RANGE_MOVE_PHASE__MOVE_CLEANUP) {
		m->stage = ST_DROP;
		return true;
	}
	if (r->move_kind == IOLAKE__META__RANGE_MOVE_KIND__MOVE_SPLIT) {
		m->src_group = r->group;
		m->src_id = r->id;
		m->span_start = r->move_key;
		m->span_end = r->end;
		m->tgt_group = r->move_group;
		m->tgt_start = r->move_key;
		m->tgt_end = r->end;
		m->fed = r->move_group != r->group;
		m->stage = m->fed ? ST_FEED : ST_SEAL;   /* unsealed: its change feed first */
		return true;
	} else {
		ck_assert_ptr_nonnull(m->right);
		m->src_group = m->right->group;
		m->src_id = m->right->id;
		m->span_start = m->right->start;
		m->span_end = m->right->end;
		m->tgt_group = r->group;
		m->tgt_start = r->start;
		m->tgt_end = m->right->end;
	}
	m->stage = ST_SEAL;
	return true;
}

static Iolake__Meta__RangeDesc *group_row(struct sim *s, uint64_t gi, uint64_t id)
{
	Iolake__Meta__RangeDesc *d = NULL;
	int rc = meta_state_get_open_range(s->g[gi].st, id, &d);
	return rc ? NULL : d;
}

/* The s3 key of a per-key table's state key (sim keys hold no 0x00). */
static bool pair_of(const ProtobufCBinaryData *k, const char *key)
{
	size_t pn = 1 + strlen(B) + 1, n = strlen(key);
	return k->len >= pn + n && !memcmp(k->data + pn, key, n) &&
	       (k->len == pn + n || k->data[pn + n] == 0);
}

/* Copy pairs into in (skipping those of s3 key skip, when not NULL). */
static void fill_pairs(struct tb *t, Iolake__Meta__IngestRange *in,
		       const struct meta_range_pairs *p, size_t n, const char *skip)
{
	in->keys = tb_alloc(t, (n + 1) * sizeof(*in->keys));
	in->values = tb_alloc(t, (n + 1) * sizeof(*in->values));
	size_t w = 0;
	for (size_t i = 0; i < n; i++) {
		if (skip && pair_of(&p->keys[i], skip))
			continue;
		in->keys[w].data = tb_alloc(t, p->keys[i].len);
		memcpy(in->keys[w].data, p->keys[i].data, p->keys[i].len);
		in->keys[w].len = p->keys[i].len;
		in->values[w].data = tb_alloc(t, p->values[i].len + 1);
		memcpy(in->values[w].data, p->values[i].data, p->values[i].len);
		in->values[w].len = p->values[i].len;
		w++;
	}
	in->n_keys = in->n_values = w;
}

/* Apply an IngestRange, keeping its entry for a duplicate delivery. */
static int ingest(struct sim *s, struct tb *t, Iolake__Meta__IngestRange *in)
{
	struct mover *m = &s->mv;
	Iolake__Meta__Op *op = t->ops[0];
	op->body_case = IOLAKE__META__OP__BODY_INGEST_RANGE;
	op->ingest_range = in;
	size_t len;
	uint8_t *e = tb_encode(t, &len);
	free(m->last);
	m->last = (struct tb *)e;   /* raw entry bytes; see dup_step */
	m->last_group = m->tgt_group;
	return apply(s, (unsigned)m->tgt_group, t);
}

static Iolake__Meta__IngestRange *ingest_new(struct sim *s, struct tb *t)
{
	struct mover *m = &s->mv;
	tb_op(t, 0, 0);
	Iolake__Meta__IngestRange *in = tb_alloc(t, sizeof(*in));
	iolake__meta__ingest_range__init(in);
	in->range = desc(t, m->row->move_id, m->tgt_start, m->tgt_end, m->tgt_group);
	in->range->objects = m->init_o;
	in->range->bytes = m->init_b;
	in->range->uploads = m->init_u;
	return in;
}

/* One bulk batch (ReadRange / IngestRange). */
static void copy_step(struct sim *s)
{
	struct mover *m = &s->mv;
	struct meta_range_pairs p;
	ck_assert_int_eq(meta_state_read_range(s->g[m->src_group].st, m->src_id, B, m->span_start,
					       m->span_end, m->cursor, m->cursor_len,
					       1 + below(s, 40), 1 << 19, &p), 0);
	struct tb *t = tb_new();
	Iolake__Meta__IngestRange *in = ingest_new(s, t);
	in->after.data = tb_alloc(t, m->cursor_len + 1);
	memcpy(in->after.data, m->cursor, m->cursor_len);
	in->after.len = m->cursor_len;
	in->upto.data = tb_alloc(t, p.upto_len + 1);
	if (p.upto_len)
		memcpy(in->upto.data, p.upto, p.upto_len);
	in->upto.len = p.upto_len;
	in->fed = m->fed;
	/* the planted bug: a copy's last batch dropped */
	fill_pairs(t, in, &p, m->bug == BUG_LAST_BATCH && p.done ? 0 : p.n, NULL);
	int err = ingest(s, t, in);
	if (err == 0) {
		if (p.upto_len)
			memcpy(m->cursor, p.upto, p.upto_len);
		m->cursor_len = p.upto_len;
		if (p.done)
			m->stage = m->fed ? ST_CATCHUP : ST_OPEN_LEFT;
	} else if (err == IOL_ECONFLICT) {
		m->stage = ST_COUNT;
	} else {
		sim_fail(s, "ingest: %d", err);
	}
	meta_range_pairs_free(&p);
}

/* One catch-up batch of a split (ReadRange feed / IngestRange feed). */
static void catchup_step(struct sim *s)
{
	struct mover *m = &s->mv;
	struct meta_feed_batch b;
	ck_assert_int_eq(meta_state_read_feed(s->g[m->src_group].st, m->src_id, B, m->span_start,
					      m->span_end, m->feed_cursor, 1 + below(s, 8),
					      1 << 19, &b), 0);
	struct tb *t = tb_new();
	Iolake__Meta__IngestRange *in = ingest_new(s, t);
	in->feed = true;
	in->feed_after = m->feed_cursor;
	in->feed_upto = b.upto;
	/* the planted bug: one change of each batch (its last key) dropped */
	size_t nr = b.n_keys - (m->bug == BUG_FEED_CHANGE && b.n_keys ? 1 : 0);
	in->replace = tb_alloc(t, (b.n_keys + 1) * sizeof(*in->replace));
	for (size_t i = 0; i < nr; i++)
		in->replace[i] = tb_str(t, b.keys[i]);
	in->n_replace = nr;
	fill_pairs(t, in, &b.pairs, b.pairs.n, nr < b.n_keys ? b.keys[nr] : NULL);
	int err = ingest(s, t, in);
	if (err == 0) {
		s->catchups++;
		s->changes += (unsigned)b.n_keys;
		m->feed_cursor = b.upto;
		if (b.sealed && b.left == 0)
			m->stage = ST_SRC_COUNT;
		else if (!b.sealed && b.left < SIM_TAIL)
			m->stage = ST_TAIL_SEAL;
	} else if (err == IOL_ECONFLICT) {
		m->stage = ST_COUNT;
	} else {
		sim_fail(s, "catch-up ingest: %d", err);
	}
	meta_feed_batch_free(&b);
}

static void feed_range(struct sim *s)
{
	Iolake__Meta__RangeDesc *r = s->mv.row;
	struct tb *t = tb_new();
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__FeedRange *f = tb_alloc(t, sizeof(*f));
	iolake__meta__feed_range__init(f);
	f->range = desc(t, r->id, r->start, r->end, r->group);
	f->start = tb_str(t, r->move_key);
	op->body_case = IOLAKE__META__OP__BODY_FEED_RANGE;
	op->feed_range = f;
	ck_assert_int_eq(apply(s, (unsigned)r->group, t), 0);
}

/* The target's cursors (and a merge's starting counters). */
static void count_step(struct sim *s)
{
	struct mover *m = &s->mv;
	Iolake__Meta__RangeDesc *r = m->row;
	bool split = r->move_kind == IOLAKE__META__RANGE_MOVE_KIND__MOVE_SPLIT;
	if (!m->fed) {   /* sealed: a split's source, a merge's left range */
		Iolake__Meta__RangeDesc *c = group_row(s, r->group, r->id);
		ck_assert_ptr_nonnull(c);
		*(split ? &m->src_o : &m->init_o) = c->objects;
		*(split ? &m->src_b : &m->init_b) = c->bytes;
		*(split ? &m->src_u : &m->init_u) = c->uploads;
		meta_state_free_msg(c);
	}
	Iolake__Meta__RangeDesc *t = group_row(s, m->tgt_group, r->move_id);
	m->cursor_len = 0;
	m->feed_cursor = 0;
	m->stage = ST_COPY;
	if (t && !t->sealed) {
		m->stage = m->fed ? ST_SRC_COUNT : ST_OPEN_LEFT;
	} else if (t) {
		if (t->ingest_cursor.len)
			memcpy(m->cursor, t->ingest_cursor.data, t->ingest_cursor.len);
		m->cursor_len = t->ingest_cursor.len;
		m->feed_cursor = t->feed_cursor;
	}
	meta_state_free_msg(t);
}

static void mv_step(struct sim *s)
{
	struct mover *m = &s->mv;
	if (!m->active && !mv_load(s))
		return;
	Iolake__Meta__RangeDesc *r = m->row;
	trace_u64(s, 1000 + (uint64_t)m->stage);
	switch (m->stage) {
	case ST_SEAL:   /* a merge (both ranges), a split in one group: the whole copy */
		ck_assert_int_eq(seal(s, r->group, r->id, r->start, r->end, false), 0);
		if (m->right)
			ck_assert_int_eq(seal(s, m->right->group, m->right->id, m->right->start,
					      m->right->end, false), 0);
		m->stage = ST_COUNT;
		break;
	case ST_FEED:
		feed_range(s);
		m->stage = ST_COUNT;
		break;
	case ST_COUNT:
		count_step(s);
		break;
	case ST_COPY:
		copy_step(s);
		break;
	case ST_CATCHUP:
		catchup_step(s);
		break;
	case ST_TAIL_SEAL:
		ck_assert_int_eq(seal(s, r->group, r->id, r->start, r->end, false), 0);
		m->stage = ST_CATCHUP;
		break;
	case ST_SRC_COUNT: {   /* sealed and caught up: the left half's share */
		Iolake__Meta__RangeDesc *c = group_row(s, r->group, r->id);
		ck_assert_ptr_nonnull(c);
		m->src_o = c->objects;
		m->src_b = c->bytes;
		m->src_u = c->uploads;
		meta_state_free_msg(c);
		m->stage = ST_OPEN_LEFT;
		break;
	}
	case ST_OPEN_LEFT:
		if (r->move_kind == IOLAKE__META__RANGE_MOVE_KIND__MOVE_SPLIT) {
			Iolake__Meta__RangeDesc *t = group_row(s, m->tgt_group, r->move_id);
			ck_assert_ptr_nonnull(t);
			Iolake__Meta__RangeDesc l = IOLAKE__META__RANGE_DESC__INIT;
			l.id = r->move_left_id;
			l.start = r->start;
			l.end = r->move_key;
			l.objects = m->src_o > t->objects ? m->src_o - t->objects : 0;
			l.bytes = m->src_b > t->bytes ? m->src_b - t->bytes : 0;
			l.uploads = m->src_u > t->uploads ? m->src_u - t->uploads : 0;
			meta_state_free_msg(t);
			ck_assert_int_eq(open_range(s, m->src_group, &l), 0);
		}
		m->stage = ST_UNSEAL;
		break;
	case ST_UNSEAL:
		ck_assert_int_eq(seal(s, m->tgt_group, r->move_id, m->tgt_start, m->tgt_end, true), 0);
		m->stage = ST_SWITCH;
		break;
	case ST_SWITCH:
		ck_assert_int_eq(root_step(s, IOLAKE__META__RANGE_MOVE_PHASE__MOVE_CLEANUP), 0);
		mv_forget(m);   /* the next step loads the cleanup */
		break;
	case ST_DROP:
		if (r->move_group) {
			struct tb *t = tb_new();
			Iolake__Meta__Op *op = tb_op(t, 0, 0);
			Iolake__Meta__DropRange *d = tb_alloc(t, sizeof(*d));
			iolake__meta__drop_range__init(d);
			d->bucket = tb_str(t, B);
			d->start = tb_str(t, r->move_key);
			d->end = tb_str(t, r->move_end);
			d->max = 1 + below(s, 60);
			m->drop_group = r->move_group;
			snprintf(m->drop_start, sizeof(m->drop_start), "%s", r->move_key);
			snprintf(m->drop_end, sizeof(m->drop_end), "%s", r->move_end);
			op->body_case = IOLAKE__META__OP__BODY_DROP_RANGE;
			op->drop_range = d;
			ck_assert_int_eq(apply(s, (unsigned)r->move_group, t), 0);
			if (s->res[0].generation)
				break;
		}
		m->stage = ST_DONE;
		break;
	case ST_DONE:
		ck_assert_int_eq(root_step(s, IOLAKE__META__RANGE_MOVE_PHASE__MOVE_NONE), 0);
		mv_forget(m);
		s->moves++;
		break;
	}
}

/* The last ingest entry applied again, as a retried entry would be. */
static void dup_step(struct sim *s)
{
	struct mover *m = &s->mv;
	if (!m->last)
		return;
	uint8_t *e = (uint8_t *)m->last;
	uint32_t payload = (uint32_t)e[4] | (uint32_t)e[5] << 8 | (uint32_t)e[6] << 16 |
			   (uint32_t)e[7] << 24;
	size_t len = (8 + payload + 7) & ~(size_t)7;
	unsigned gi = (unsigned)m->last_group;
	int rc = meta_state_apply(s->g[gi].st, ++s->g[gi].index, e, len, s->res, 8);
	ck_assert_int_eq(rc, 1);
	/* OK (applied before) or CONFLICT (the cursor moved on): never a
	 * second copy */
	if (s->res[0].err && s->res[0].err != IOL_ECONFLICT)
		sim_fail(s, "a duplicated ingest answered %d", s->res[0].err);
	trace_u64(s, 77);
}

/* A driver that learnt of a cleanup before later moves sends its drop
 * again: it must drop nothing that lives there now (the final checks
 * would miss the records). */
static void stale_drop_step(struct sim *s)
{
	struct mover *m = &s->mv;
	if (!m->drop_group)
		return;
	struct tb *t = tb_new();
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__DropRange *d = tb_alloc(t, sizeof(*d));
	iolake__meta__drop_range__init(d);
	d->bucket = tb_str(t, B);
	d->start = tb_str(t, m->drop_start);
	d->end = tb_str(t, m->drop_end);
	d->max = 1000;
	op->body_case = IOLAKE__META__OP__BODY_DROP_RANGE;
	op->drop_range = d;
	int err = apply(s, (unsigned)m->drop_group, t);
	if (err && err != IOL_ECONFLICT)
		sim_fail(s, "a stale drop answered %d", err);
}

/* Start a split at a random key or a merge of random neighbours. */
static void start_move(struct sim *s)
{
	Iolake__Meta__RangeDesc **v;
	size_t n = table(s, &v);
	bool merge = n > 1 && below(s, 3) == 0;
	struct tb *t = tb_new();
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__MoveRange *o = tb_alloc(t, sizeof(*o));
	iolake__meta__move_range__init(o);
	o->bucket = tb_str(t, B);
	if (merge) {
		size_t i = below(s, (unsigned)n - 1);
		o->range_id = v[i]->id;
		o->key = tb_str(t, v[i + 1]->start);
		o->merge = true;
	} else {
		char key[16];
		key_name(below(s, KEYS), key);
		for (size_t i = 0; i < n; i++)
			if (covers(v[i], key))
				o->range_id = v[i]->id;
		o->key = tb_str(t, key);
		o->target_group = below(s, 4);   /* 0: the root picks */
	}
	op->body_case = IOLAKE__META__OP__BODY_MOVE_RANGE;
	op->move_range = o;
	free_table(v, n);
	int err = apply(s, 0, t);
	/* INVALID: a split at a range's start */
	if (err && err != -EINVAL && err != IOL_ECONFLICT)
		sim_fail(s, "MoveRange: %d", err);
}

/* Close and open a group's state: what RocksDB kept is the state. */
static void restart_step(struct sim *s)
{
	unsigned gi = below(s, NG);
	meta_state_close(s->g[gi].st);
	ck_assert_int_eq(meta_state_open(s->g[gi].dir, NULL, &s->g[gi].st), 0);
	ck_assert_uint_eq(meta_state_applied_index(s->g[gi].st), s->g[gi].index);
}

/* ------------------------------------------------------------ the run */

static void setup(struct sim *s)
{
	for (unsigned i = 0; i < NG; i++) {
		tmpdir(s->g[i].dir);
		ck_assert_int_eq(meta_state_open(s->g[i].dir, NULL, &s->g[i].st), 0);
	}
	for (uint64_t id = 1; id < NG; id++) {
		struct tb *t = tb_new();
		Iolake__Meta__Op *op = tb_op(t, 0, 0);
		Iolake__Meta__CreateGroup *cg = tb_alloc(t, sizeof(*cg));
		Iolake__Meta__GroupDesc *d = tb_alloc(t, sizeof(*d));
		iolake__meta__create_group__init(cg);
		iolake__meta__group_desc__init(d);
		d->id = id;
		d->n_voters = 1;
		d->voters = tb_alloc(t, sizeof(*d->voters));
		d->voters[0] = tb_alloc(t, sizeof(**d->voters));
		iolake__meta__group_voter__init(d->voters[0]);
		d->voters[0]->id = 1;
		d->voters[0]->address = tb_str(t, "127.0.0.1:7000");
		cg->group = d;
		op->body_case = IOLAKE__META__OP__BODY_CREATE_GROUP;
		op->create_group = cg;
		ck_assert_int_eq(apply(s, 0, t), 0);
	}
	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, B, "sim");
	ck_assert_int_eq(apply(s, 0, t), 0);
	Iolake__Meta__RangeDesc **v;
	size_t n = table(s, &v);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(open_range(s, v[0]->group, v[0]), 0);
	free_table(v, n);
}

/* Every group holds exactly the keys of its open ranges (moves done),
 * and the open ranges' counters sum to the model. */
static void final_checks(struct sim *s)
{
	uint64_t objects = 0;
	unsigned want = 0;
	for (unsigned k = 0; k < KEYS; k++)
		want += s->present[k];
	for (unsigned gi = 1; gi < NG && !s->failed; gi++) {
		Iolake__Meta__RangeDesc **v = NULL;
		size_t n = 0;
		ck_assert_int_eq(meta_state_list_open_ranges(s->g[gi].st, &v, &n), 0);
		struct meta_list_req q = { .bucket = B, .max_keys = 1000 };
		struct meta_list_page pg;
		ck_assert_int_eq(meta_list(s->g[gi].st, &q, &pg), 0);
		for (size_t j = 0; j < pg.n; j++) {
			bool in = false;
			for (size_t i = 0; i < n; i++)
				in = in || (!v[i]->sealed && covers(v[i], pg.entries[j].name));
			if (!in)
				sim_fail(s, "group %u holds %s outside its open ranges", gi,
					 pg.entries[j].name);
		}
		meta_list_page_free(&pg);
		for (size_t i = 0; i < n; i++)
			if (!v[i]->sealed)
				objects += v[i]->objects;
		free_table(v, n);
	}
	if (!s->failed && objects != want)
		sim_fail(s, "the open ranges count %llu objects, the model %u",
			 (unsigned long long)objects, want);
}

static bool sim_run(uint64_t seed, unsigned steps, int bug, uint8_t out[32], char *why,
		    size_t why_cap, unsigned *copying)
{
	order_init();
	struct sim *s = calloc(1, sizeof(*s));
	s->rng = seed * 0x9E3779B97F4A7C15ull + 1;
	s->mv.bug = bug;
	setup(s);
	for (unsigned i = 0; i < steps && !s->failed; i++) {
		unsigned r = below(s, 100);
		trace_u64(s, r);
		if (r < 45)
			client_step(s);
		else if (r < 52)
			read_step(s);
		else if (r < 56)
			list_step(s, 1 + below(s, 50));
		else if (r < 60 && !s->mv.active)
			start_move(s);
		else if (r < 92)
			mv_step(s);
		else if (r < 94)
			mv_forget(&s->mv);   /* a root leader change: resume from the table */
		else if (r < 95)
			dup_step(s);
		else if (r < 96)
			stale_drop_step(s);
		else if (r < 98)
			restart_step(s);
		else
			list_step(s, 1000);
	}
	/* finish: moves to their end, waiting ops through */
	for (int i = 0; i < 100000 && !s->failed; i++) {
		if (!s->mv.active && !mv_load(s))
			break;
		mv_step(s);
	}
	for (int i = 0; i < 10 && s->n_pend && !s->failed; i++) {
		size_t w = 0;
		for (size_t j = 0; j < s->n_pend; j++)
			if (!do_op(s, &s->pend[j]))
				s->pend[w++] = s->pend[j];
		s->n_pend = w;
	}
	if (!s->failed && s->n_pend)
		sim_fail(s, "%zu ops still refused after every move ended", s->n_pend);
	if (!s->failed) {
		list_step(s, 7);
		for (unsigned k = 0; k < 64 && !s->failed; k++)
			read_step(s);
		final_checks(s);
	}
	for (unsigned i = 0; i < NG; i++) {
		uint8_t d[32];
		ck_assert_int_eq(meta_state_digest(s->g[i].st, d), 0);
		trace(s, d, 32);
	}
	fprintf(stderr, "sim_ranges seed %llu%s: %u steps, %u moves, %u ops acked (%u into a "
		"span copied unsealed), %u retried after a move, %u catch-up batches of %u "
		"changes%s%s\n", (unsigned long long)seed, bug == BUG_LAST_BATCH ? " (planted bug: last batch)" : bug ? " (planted bug: a feed change)" : "", steps,
		s->moves, s->acked, s->acked_copying, s->retried, s->catchups, s->changes,
		s->failed ? ": FAILED: " : "", s->failed ? s->why : "");
	memcpy(out, s->trace, 32);
	snprintf(why, why_cap, "%s", s->why);
	bool ok = !s->failed;
	if (copying)
		*copying = s->acked_copying;
	mv_forget(&s->mv);
	free(s->mv.last);
	for (unsigned i = 0; i < NG; i++) {
		meta_state_close(s->g[i].st);
		rm_rf(s->g[i].dir);
	}
	free(s);
	return ok;
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
	const char *v = getenv(name);
	return v && *v ? strtoull(v, NULL, 10) : dflt;
}

START_TEST(sim_ranges)
{
	uint64_t seed = env_u64("SIM_SEED", 1);
	unsigned steps = (unsigned)env_u64("SIM_STEPS", 2500), copying = 0;
	uint8_t a[32], b[32];
	char why[256];
	bool ok = sim_run(seed, steps, BUG_NONE, a, why, sizeof(why), &copying);
	ck_assert_msg(ok, "seed %llu: %s", (unsigned long long)seed, why);
	/* splits copy unsealed: writes and deletes landed while they did */
	ck_assert_uint_gt(copying, 0);
	ck_assert(sim_run(seed, steps, BUG_NONE, b, why, sizeof(why), NULL));
	ck_assert_msg(!memcmp(a, b, 32), "a replay of seed %llu differs", (unsigned long long)seed);
}
END_TEST

START_TEST(planted_bug)
{
	/* a mover that drops a copy's last batch loses records: caught */
	uint8_t a[32];
	char why[256];
	bool ok = sim_run(env_u64("SIM_SEED", 1), (unsigned)env_u64("SIM_STEPS", 2500),
			  BUG_LAST_BATCH, a, why, sizeof(why), NULL);
	ck_assert_msg(!ok, "the planted bug went unnoticed");
}
END_TEST

START_TEST(planted_feed_bug)
{
	/* a catch-up that drops one change of a batch: caught */
	uint8_t a[32];
	char why[256];
	bool ok = sim_run(env_u64("SIM_SEED", 1), (unsigned)env_u64("SIM_STEPS", 2500),
			  BUG_FEED_CHANGE, a, why, sizeof(why), NULL);
	ck_assert_msg(!ok, "the planted feed bug went unnoticed");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sim_ranges");
	TCase *tc = tcase_create("sim");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, sim_ranges);
	tcase_add_test(tc, planted_bug);
	tcase_add_test(tc, planted_feed_bug);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
