/*
 * state_feed.c — a split's change feed (contracts in state.h and
 * meta.proto FeedRange, ReadRange feed, IngestRange feed; private helpers
 * in state_internal.h). A split copies its source range unsealed: from
 * FeedRange on, every object op the source applies on a key of the moving
 * span appends a change (the key) to the range's feed, numbered by the
 * range row's feed_seq; a catch-up batch carries the keys changed after a
 * cursor with their rows as they are now (a key without rows: a delete),
 * and the target replaces those keys' rows and moves its feed_cursor. The
 * source is sealed only for the tail (meta/range_move.c decides when).
 *
 * State: 'h' u64 range id, u64 change number -> s3 key. The changes go
 * with the span (DropRange, once its records are gone).
 *
 * Not here: the bulk copy and the replacing of rows (state_move.c), the
 * fencing that calls feed_note (state_range.c), the driver (range_move.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "meta/state_internal.h"

static void key_feed(struct key *k, uint64_t id, uint64_t seq)
{
	k_init(k, 'h');
	k_u64(k, id);
	k_u64(k, seq);
}

/* The span of exactly s3 key key: [key, key 0x01). */
static void key_only_end(const char *key, char *end, size_t cap)
{
	snprintf(end, cap, "%s\x01", key);
}

void feed_note(struct tx *t, Iolake__Meta__RangeDesc *r, const char *key)
{
	if (!r->feed || strcmp(key, r->feed_start) < 0)
		return;
	struct key k;
	key_feed(&k, r->id, ++r->feed_seq);
	rocksdb_writebatch_wi_put(t->wb, k.b, k.n, key, strlen(key));
	t->rng_dirty = true;
}

int op_feed_range(struct tx *t, const Iolake__Meta__FeedRange *op)
{
	const Iolake__Meta__RangeDesc *d = op->range;
	if (!d || d->id == 0 || !valid_range_bounds(d->bucket, d->start, d->end) ||
	    strlen(op->start) > META_KEY_MAX)
		return -EINVAL;
	Iolake__Meta__RangeDesc *r = range_load(t, d->id);
	if (t->io_err)
		return t->io_err;
	if (!r) {
		/* Never opened here (no op reached it yet): open it now, as
		 * the router's OpenRange would, so every later op is fed. */
		Iolake__Meta__OpenRange o = IOLAKE__META__OPEN_RANGE__INIT;
		o.range = (Iolake__Meta__RangeDesc *)d;
		int rc = op_open_range(t, &o);
		if (rc)
			return rc;
		if (!(r = range_load(t, d->id)))
			return t->io_err ? t->io_err : -EIO;
	}
	if (strcmp(r->bucket, d->bucket))
		return META_EWRONG_RANGE;
	if (r->feed)
		return strcmp(r->feed_start, op->start) ? IOL_ECONFLICT : 0;
	if (strcmp(op->start, r->start) < 0 || (r->end[0] && strcmp(op->start, r->end) >= 0))
		return -EINVAL;
	char *c = strdup(op->start);
	if (!c) {
		t->io_err = -ENOMEM;
		return -ENOMEM;
	}
	/* r came from protobuf_c_message_unpack (default allocator): a
	 * string other than the default is freed with it. */
	if (r->feed_start != protobuf_c_empty_string)
		free(r->feed_start);
	r->feed_start = c;
	r->feed = true;
	t->rng_dirty = true;
	return 0;
}

void meta_feed_batch_free(struct meta_feed_batch *b)
{
	meta_range_pairs_free(&b->pairs);
	for (size_t i = 0; i < b->n_keys; i++)
		free(b->keys[i]);
	free(b->keys);
	memset(b, 0, sizeof(*b));
}

/* Append key once to b->keys; 1: appended, 0: there already. */
static int push_key(struct meta_feed_batch *b, const char *key, size_t n)
{
	for (size_t i = 0; i < b->n_keys; i++)
		if (strlen(b->keys[i]) == n && !memcmp(b->keys[i], key, n))
			return 0;
	if (b->n_keys == b->cap_keys) {
		size_t cap = b->cap_keys ? 2 * b->cap_keys : 64;
		char **nk = realloc(b->keys, cap * sizeof(*nk));
		if (!nk)
			return -ENOMEM;
		b->keys = nk;
		b->cap_keys = cap;
	}
	char *c = malloc(n + 1);
	if (!c)
		return -ENOMEM;
	memcpy(c, key, n);
	c[n] = 0;
	b->keys[b->n_keys++] = c;
	return 1;
}

/* The range row, when its feed covers [start, end) of bucket. */
static int feed_gate(struct meta_state *s, uint64_t range_id, const char *bucket,
		     const char *start, const char *end, struct meta_feed_batch *out,
		     uint64_t *seq)
{
	Iolake__Meta__RangeDesc *r = NULL;
	int rc = meta_state_get_open_range(s, range_id, &r);
	if (rc == IOL_ENOT_FOUND)
		return META_EWRONG_RANGE;
	if (rc)
		return rc;
	bool ok = r->feed && !strcmp(r->bucket, bucket) && strcmp(start, r->feed_start) >= 0 &&
		  (!r->end[0] || (end[0] && strcmp(end, r->end) <= 0));
	out->sealed = r->sealed;
	*seq = r->feed_seq;
	meta_state_free_msg(r);
	return ok ? 0 : META_EWRONG_RANGE;
}

int meta_state_read_feed(struct meta_state *s, uint64_t range_id, const char *bucket,
			 const char *start, const char *end, uint64_t after, uint32_t max_changes,
			 uint32_t max_bytes, struct meta_feed_batch *out)
{
	memset(out, 0, sizeof(*out));
	if (!valid_range_bounds(bucket, start, end) || !max_changes)
		return -EINVAL;
	uint64_t seq = 0;
	int rc = feed_gate(s, range_id, bucket, start, end, out, &seq);
	if (rc)
		return rc;
	out->upto = after;
	struct key pre, lo, pend;
	k_init(&pre, 'h');
	k_u64(&pre, range_id);
	key_feed(&lo, range_id, after + 1);
	rocksdb_readoptions_t *ro = prefix_ro(&pre, &pend);
	rocksdb_iterator_t *it = rocksdb_create_iterator(s->db, ro ? ro : s->ro);
	uint32_t changes = 0;
	for (rocksdb_iter_seek(it, lo.b, lo.n); !rc && rocksdb_iter_valid(it);
	     rocksdb_iter_next(it)) {
		size_t kn, vn;
		const char *kb = rocksdb_iter_key(it, &kn);
		if (kn != pre.n + 8 || memcmp(kb, pre.b, pre.n))
			break;
		if (changes >= max_changes || out->pairs.bytes >= max_bytes)
			break;
		const char *vb = rocksdb_iter_value(it, &vn);
		if (vn > META_KEY_MAX) {
			rc = -EIO;
			break;
		}
		rc = push_key(out, vb, vn);
		if (rc == 1) {   /* its rows now, once per batch */
			char kend[META_KEY_MAX + 2];
			key_only_end(out->keys[out->n_keys - 1], kend, sizeof(kend));
			rc = move_span_pairs(s, bucket, out->keys[out->n_keys - 1], kend, NULL, 0,
					     UINT32_MAX, UINT32_MAX, &out->pairs);
		}
		changes++;
		out->upto = get_be64(kb + pre.n);
	}
	rocksdb_iter_destroy(it);
	if (ro)
		rocksdb_readoptions_destroy(ro);
	if (rc) {
		meta_feed_batch_free(out);
		return rc < 0 ? rc : -EIO;
	}
	out->left = seq > out->upto ? seq - out->upto : 0;
	return 0;
}

int feed_ingest(struct tx *t, Iolake__Meta__RangeDesc *r, const Iolake__Meta__IngestRange *op)
{
	if (r->feed_cursor == op->feed_upto)
		return 0;   /* applied before (or nothing to apply) */
	if (!r->sealed || r->feed_cursor != op->feed_after || op->feed_upto < op->feed_after)
		return IOL_ECONFLICT;
	const Iolake__Meta__RangeDesc *d = op->range;
	for (size_t i = 0; i < op->n_replace; i++) {
		const char *k = op->replace[i];
		if (!valid_key(k) || strcmp(k, d->start) < 0 || (d->end[0] && strcmp(k, d->end) >= 0))
			return -EINVAL;
	}
	if (!move_pairs_ok(op))
		return -EINVAL;
	for (size_t i = 0; i < op->n_replace; i++) {
		char kend[META_KEY_MAX + 2];
		uint32_t n;
		key_only_end(op->replace[i], kend, sizeof(kend));
		int rc = move_drop_span(t, d->bucket, op->replace[i], kend, 100000, r, &n);
		if (rc)
			return rc;
	}
	int rc = move_put_pairs(t, op, r);
	if (rc)
		return rc;
	r->feed_cursor = op->feed_upto;
	t->rng_dirty = true;
	return 0;
}

/* The ids of this group's ranges sealed for a move whose feed started at
 * start, of bucket (at most cap). */
static size_t fed_ranges(struct tx *t, const char *bucket, const char *start, uint64_t *ids,
			 size_t cap)
{
	struct key p;
	k_init(&p, 'r');
	size_t n = 0;
	range_flush(t);
	rocksdb_iterator_t *it = tx_iter(t, &p);
	for (; n < cap && iter_has_prefix(it, &p); rocksdb_iter_next(it)) {
		size_t vn;
		const char *vb = rocksdb_iter_value(it, &vn);
		Iolake__Meta__RangeDesc *d = iolake__meta__range_desc__unpack(NULL, vn,
									      (const uint8_t *)vb);
		if (!d) {
			t->io_err = -EIO;
			break;
		}
		if (d->sealed && d->move_phase && d->feed && !strcmp(d->bucket, bucket) &&
		    !strcmp(d->feed_start, start))
			ids[n++] = d->id;
		meta_state_free_msg(d);
	}
	rocksdb_iter_destroy(it);
	return n;
}

int feed_drop(struct tx *t, const char *bucket, const char *start, uint32_t max, uint32_t *n)
{
	*n = 0;
	uint64_t ids[8];
	size_t ni = fed_ranges(t, bucket, start, ids, 8);
	if (t->io_err)
		return t->io_err;
	for (size_t i = 0; i < ni && *n < max; i++) {
		struct key p;
		k_init(&p, 'h');
		k_u64(&p, ids[i]);
		/* keys are fixed-length: collect the change numbers, then delete */
		uint64_t seqs[256];
		size_t ns;
		do {
			ns = 0;
			rocksdb_iterator_t *it = tx_iter(t, &p);
			for (; ns < 256 && *n + ns < max && iter_has_prefix(it, &p);
			     rocksdb_iter_next(it)) {
				size_t kn;
				const char *kb = rocksdb_iter_key(it, &kn);
				if (kn == p.n + 8)
					seqs[ns++] = get_be64(kb + p.n);
			}
			rocksdb_iter_destroy(it);
			for (size_t j = 0; j < ns; j++) {
				struct key k;
				key_feed(&k, ids[i], seqs[j]);
				tx_del(t, &k);
			}
			*n += (uint32_t)ns;
		} while (ns == 256);
	}
	return 0;
}
