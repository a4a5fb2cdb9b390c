/*
 * state_move.c — the records a move carries between range groups (contracts
 * in state.h and meta.proto ReadRange / IngestRange / DropRange; private
 * helpers in state_internal.h): a sealed range's state pairs read in
 * batches, written into the target under the target's own cursor, dropped
 * from the source in bounded entries; and the median key of a range (the
 * split point of an automatic split).
 *
 * The per-key tables a move carries are listed once, in MOVE_TABLES: every
 * table whose keys are 'T' bucket 0x00 s3key [0x00 suffix] (objects 'O',
 * uploads 'U', older versions 'V', part rows 'p' of state_prows.c; a table
 * of that shape added later is added there and nowhere else). Dependants ride with their record: an upload's
 * parts ('P' upload_id), and the shard reference index ('X'), which is
 * derived: the target adds the references of what it ingests, the source
 * drops those of what it drops, so at every moment at least one group
 * names every moved shard (CheckShards asks them all).
 *
 * A split from another group copies its source unsealed (state_feed.c
 * carries the changes made meanwhile), so a key may come twice: a record
 * the target already holds is then replaced (its references and counters
 * go first; IngestRange.fed). A move within one group writes its own rows
 * again and counts them.
 *
 * Not here: the range table and fencing (state_range.c), a split's change
 * feed (state_feed.c), the driver (range_move.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "meta/state_internal.h"

/* The per-key tables a move carries, in the order a move walks them:
 * keys 'T' bucket 0x00 s3key [0x00 suffix]. */
static const char MOVE_TABLES[] = { 'O', 'U', 'V', 'p' };
#define N_MOVE_TABLES (sizeof(MOVE_TABLES) / sizeof(MOVE_TABLES[0]))
#define PART_KEY_LEN (1 + 16 + 4)      /* 'P' upload_id u32 */

static int move_table_index(char table)
{
	for (size_t i = 0; i < N_MOVE_TABLES; i++)
		if (MOVE_TABLES[i] == table)
			return (int)i;
	return -1;
}

/* The s3 key of a per-key table's state key kb[0..kn) of bucket (prefix
 * length pn = 1 + strlen(bucket) + 1): the bytes up to the next 0x00. */
size_t move_s3key_len(const char *kb, size_t kn, size_t pn)
{
	const char *z = memchr(kb + pn, 0, kn - pn);
	return z ? (size_t)(z - (kb + pn)) : kn - pn;
}

/* Whether s3 key s[0..n) is below end (end "": the end of the bucket). */
bool move_below_end(const char *s, size_t n, const char *end)
{
	if (!end[0])
		return true;
	size_t en = strlen(end);
	int c = memcmp(s, end, n < en ? n : en);
	return c < 0 || (c == 0 && n < en);
}

static bool in_span(const char *s, size_t n, const char *start, const char *end)
{
	size_t sn = strlen(start);
	int c = memcmp(s, start, n < sn ? n : sn);
	bool above = c > 0 || (c == 0 && n >= sn);
	return above && move_below_end(s, n, end);
}

/* A per-key table's state key of bucket whose s3 key is in [start, end). */
static bool move_key_ok(const char *kb, size_t kn, const char *bucket, const char *start,
			const char *end)
{
	size_t bn = strlen(bucket), pn = 1 + bn + 1;
	if (kn < pn || move_table_index(kb[0]) < 0 || memcmp(kb + 1, bucket, bn) || kb[1 + bn])
		return false;
	return in_span(kb + pn, move_s3key_len(kb, kn, pn), start, end);
}

/* The upload id of a 'U' state key (16 hex after the last 0x00). */
static const char *upload_id_of(const char *kb, size_t kn)
{
	return kn > 17 && kb[kn - 17] == 0 ? kb + kn - 16 : NULL;
}

void meta_range_pairs_free(struct meta_range_pairs *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->keys[i].data);
		free(p->values[i].data);
	}
	free(p->keys);
	free(p->values);
	free(p->upto);
	memset(p, 0, sizeof(*p));
}

static int pairs_push(struct meta_range_pairs *p, const char *k, size_t kn, const char *v,
		      size_t vn)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 64;
		ProtobufCBinaryData *nk = realloc(p->keys, cap * sizeof(*nk));
		if (!nk)
			return -ENOMEM;
		p->keys = nk;
		ProtobufCBinaryData *nv = realloc(p->values, cap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		p->values = nv;
		p->cap = cap;
	}
	uint8_t *kc = malloc(kn + 1), *vc = malloc(vn + 1);
	if (!kc || !vc) {
		free(kc);
		free(vc);
		return -ENOMEM;
	}
	memcpy(kc, k, kn);
	memcpy(vc, v, vn);
	p->keys[p->n] = (ProtobufCBinaryData){ .len = kn, .data = kc };
	p->values[p->n] = (ProtobufCBinaryData){ .len = vn, .data = vc };
	p->n++;
	p->bytes += kn + vn;
	return 0;
}

/* The parts of upload id, appended after their upload. */
static int push_parts(struct meta_state *s, const char *id, struct meta_range_pairs *p)
{
	struct key pre, end;
	k_init(&pre, 'P');
	memcpy(pre.b + pre.n, id, 16);
	pre.n += 16;
	rocksdb_readoptions_t *ro = prefix_ro(&pre, &end);
	rocksdb_iterator_t *it = rocksdb_create_iterator(s->db, ro ? ro : s->ro);
	int rc = 0;
	for (rocksdb_iter_seek(it, pre.b, pre.n); !rc && rocksdb_iter_valid(it);
	     rocksdb_iter_next(it)) {
		size_t kn, vn;
		const char *kb = rocksdb_iter_key(it, &kn);
		if (kn < pre.n || memcmp(kb, pre.b, pre.n))
			break;
		const char *vb = rocksdb_iter_value(it, &vn);
		rc = pairs_push(p, kb, kn, vb, vn);
	}
	rocksdb_iter_destroy(it);
	if (ro)
		rocksdb_readoptions_destroy(ro);
	return rc;
}

/* The gate of a copy: range range_id is here, of bucket, spans [start,
 * end), and its records stay still (sealed) or its changes are fed (the
 * feed covers the span). */
static int copy_gate(struct meta_state *s, uint64_t range_id, const char *bucket,
		     const char *start, const char *end)
{
	Iolake__Meta__RangeDesc *r = NULL;
	int rc = meta_state_get_open_range(s, range_id, &r);
	if (rc == IOL_ENOT_FOUND)
		return META_EWRONG_RANGE;
	if (rc)
		return rc;
	bool fed = r->feed && strcmp(start, r->feed_start) >= 0;
	bool ok = (r->sealed || fed) && !strcmp(r->bucket, bucket) &&
		  strcmp(start, r->start) >= 0 &&
		  (!r->end[0] || (end[0] && strcmp(end, r->end) <= 0));
	meta_state_free_msg(r);
	return ok ? 0 : META_EWRONG_RANGE;
}

int move_span_pairs(struct meta_state *s, const char *bucket, const char *start, const char *end,
		    const uint8_t *after, size_t after_len, uint32_t max_records,
		    uint32_t max_bytes, struct meta_range_pairs *out)
{
	int ti = 0;
	if (after_len) {
		ti = move_table_index((char)after[0]);
		if (ti < 0 || !move_key_ok((const char *)after, after_len, bucket, start, end))
			return -EINVAL;
	}
	int rc = 0;
	bool full = false;
	for (; !rc && !full && ti < (int)N_MOVE_TABLES; ti++) {
		struct key pre, lo, pend;
		k_init(&pre, MOVE_TABLES[ti]);
		k_str(&pre, bucket);
		k_byte(&pre, 0);
		lo = pre;
		k_str(&lo, start);
		bool skip_first = false;
		if (after_len && (char)after[0] == MOVE_TABLES[ti]) {
			memcpy(lo.b, after, after_len);
			lo.n = after_len;
			skip_first = true;
		}
		rocksdb_readoptions_t *ro = prefix_ro(&pre, &pend);
		rocksdb_iterator_t *it = rocksdb_create_iterator(s->db, ro ? ro : s->ro);
		for (rocksdb_iter_seek(it, lo.b, lo.n); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
			size_t kn, vn;
			const char *kb = rocksdb_iter_key(it, &kn);
			if (kn < pre.n || memcmp(kb, pre.b, pre.n))
				break;
			if (skip_first && kn == lo.n && !memcmp(kb, lo.b, lo.n)) {
				skip_first = false;
				continue;
			}
			if (!move_below_end(kb + pre.n, move_s3key_len(kb, kn, pre.n), end))
				break;
			if (out->records >= max_records || out->bytes >= max_bytes) {
				full = true;
				break;
			}
			const char *vb = rocksdb_iter_value(it, &vn);
			rc = pairs_push(out, kb, kn, vb, vn);
			const char *id = MOVE_TABLES[ti] == 'U' ? upload_id_of(kb, kn) : NULL;
			if (!rc && id)
				rc = push_parts(s, id, out);
			if (rc)
				break;
			out->records++;
			free(out->upto);
			out->upto = malloc(kn);
			if (!out->upto) {
				rc = -ENOMEM;
				break;
			}
			memcpy(out->upto, kb, kn);
			out->upto_len = kn;
		}
		rocksdb_iter_destroy(it);
		if (ro)
			rocksdb_readoptions_destroy(ro);
	}
	out->done = !full;
	return rc;
}

int meta_state_read_range(struct meta_state *s, uint64_t range_id, const char *bucket,
			  const char *start, const char *end, const uint8_t *after, size_t after_len,
			  uint32_t max_records, uint32_t max_bytes, struct meta_range_pairs *out)
{
	memset(out, 0, sizeof(*out));
	if (!valid_range_bounds(bucket, start, end) || after_len > KEYBUF || !max_records)
		return -EINVAL;
	int rc = copy_gate(s, range_id, bucket, start, end);
	if (!rc)
		rc = move_span_pairs(s, bucket, start, end, after, after_len, max_records, max_bytes,
				     out);
	if (rc) {
		meta_range_pairs_free(out);
		return rc;
	}
	if (!out->upto_len && after_len) {   /* nothing new: the cursor stays */
		out->upto = malloc(after_len);
		if (!out->upto) {
			meta_range_pairs_free(out);
			return -ENOMEM;
		}
		memcpy(out->upto, after, after_len);
		out->upto_len = after_len;
	}
	return 0;
}

/* What a moved pair brings along in the group it lands in (add) or
 * leaves (!add): references, counters, an upload's parts. */
int move_pair_effects(struct tx *t, const char *kb, const char *vb, size_t vn, bool add,
		      Iolake__Meta__RangeDesc *r)
{
	if (kb[0] == 'O' || kb[0] == 'V') {
		/* A current record or an older version (state_ver.c counts
		 * both in the range's objects and bytes, and references the
		 * shards of both). */
		Iolake__Meta__ObjectRecord *o = iolake__meta__object_record__unpack(
			NULL, vn, (const uint8_t *)vb);
		if (!o)
			return -EINVAL;
		ref_record(t, o, o->generation, add);
		if (r) {
			r->objects += add ? 1 : -1;
			r->bytes += add ? o->size : -o->size;
		}
		meta_state_free_msg(o);
	} else if (kb[0] == 'U') {
		if (r)
			r->uploads += add ? 1 : -1;
	} else if (kb[0] == 'P' || kb[0] == 'p') {
		/* An old upload's part, or a part row (state_prows.c: an open
		 * upload's or a completed object's; it holds its references). */
		Iolake__Meta__Part *p = iolake__meta__part__unpack(NULL, vn, (const uint8_t *)vb);
		if (!p)
			return -EINVAL;
		ref_part(t, p, add);
		meta_state_free_msg(p);
	}
	return 0;
}

static bool bin_eq(const ProtobufCBinaryData *a, const ProtobufCBinaryData *b)
{
	return a->len == b->len && (!a->len || !memcmp(a->data, b->data, a->len));
}

bool move_pairs_ok(const Iolake__Meta__IngestRange *op)
{
	/* A part only right after its upload (or another part of it), as
	 * ReadRange sends them. */
	const Iolake__Meta__RangeDesc *d = op->range;
	const char *upload = NULL;
	for (size_t i = 0; i < op->n_keys; i++) {
		const char *kb = (const char *)op->keys[i].data;
		size_t kn = op->keys[i].len;
		bool ok;
		if (kn > 0 && kb[0] == 'P')
			ok = kn == PART_KEY_LEN && upload && !memcmp(kb + 1, upload, 16);
		else
			ok = kn > 0 && kn <= KEYBUF && move_key_ok(kb, kn, d->bucket, d->start, d->end);
		if (!ok)
			return false;
		upload = kb[0] == 'U' ? upload_id_of(kb, kn) : kb[0] == 'P' ? upload : NULL;
	}
	return true;
}

int move_put_pairs(struct tx *t, const Iolake__Meta__IngestRange *op, Iolake__Meta__RangeDesc *r)
{
	for (size_t i = 0; i < op->n_keys; i++) {
		const char *kb = (const char *)op->keys[i].data, *vb = (const char *)op->values[i].data;
		size_t kn = op->keys[i].len, vn = op->values[i].len;
		struct key k;
		memcpy(k.b, kb, kn);
		k.n = kn;
		char *old;
		size_t on;
		int rc = op->fed || op->feed ? tx_get(t, &k, &old, &on) : IOL_ENOT_FOUND;
		if (rc == 0) {   /* here already (copied unsealed): replaced */
			rc = move_pair_effects(t, kb, old, on, false, r);
			rocksdb_free(old);
		} else if (rc == IOL_ENOT_FOUND) {
			rc = 0;
		}
		if (!rc)
			rc = move_pair_effects(t, kb, vb, vn, true, r);
		if (rc)
			return rc;
		rocksdb_writebatch_wi_put(t->wb, kb, kn, vb, vn);
		t->bucket_written |= kn && kb[0] == 'B';
	}
	t->rng_dirty = true;
	return 0;
}

/* The range row a batch lands in: created sealed, with the batch's
 * starting counters, by the first one. NULL: t->io_err or -ENOMEM. */
static Iolake__Meta__RangeDesc *ingest_row(struct tx *t, const Iolake__Meta__RangeDesc *d)
{
	Iolake__Meta__RangeDesc n = IOLAKE__META__RANGE_DESC__INIT;
	n.id = d->id;
	n.bucket = d->bucket;
	n.start = d->start;
	n.end = d->end;
	n.group = d->group;
	n.sealed = true;
	n.objects = d->objects;
	n.bytes = d->bytes;
	n.uploads = d->uploads;
	struct key k;
	key_open_range(&k, d->id);
	if (tx_put_msg(t, &k, &n.base))
		return NULL;
	return range_load(t, d->id);
}

int op_ingest_range(struct tx *t, const Iolake__Meta__IngestRange *op)
{
	const Iolake__Meta__RangeDesc *d = op->range;
	if (!d || d->id == 0 || !valid_range_bounds(d->bucket, d->start, d->end) ||
	    op->n_keys != op->n_values || op->after.len > KEYBUF || op->upto.len > KEYBUF)
		return -EINVAL;
	Iolake__Meta__RangeDesc *r = range_load(t, d->id);
	if (t->io_err)
		return t->io_err;
	if (!r) {
		if (op->after.len || op->feed)
			return IOL_ECONFLICT;   /* the first batch went missing */
		if (!(r = ingest_row(t, d)))
			return t->io_err ? t->io_err : -EIO;
	}
	if (strcmp(r->bucket, d->bucket) || strcmp(r->start, d->start) || strcmp(r->end, d->end))
		return -EINVAL;
	if (op->feed)
		return feed_ingest(t, r, op);
	const ProtobufCBinaryData *cur = &r->ingest_cursor;
	if (bin_eq(cur, &op->upto) && (op->n_keys == 0 || op->upto.len))
		return 0;   /* applied before */
	if (!r->sealed)
		return IOL_ECONFLICT;   /* open: filled already */
	if (!bin_eq(cur, &op->after))
		return IOL_ECONFLICT;
	if (!move_pairs_ok(op))
		return -EINVAL;
	int rc = move_put_pairs(t, op, r);
	if (rc)
		return rc;
	/* The cursor's bytes: the memo row keeps pointing at a copy it owns. */
	uint8_t *c = malloc(op->upto.len + 1);
	if (!c) {
		t->io_err = -ENOMEM;
		return -ENOMEM;
	}
	if (op->upto.len)
		memcpy(c, op->upto.data, op->upto.len);
	/* r came from protobuf_c_message_unpack with the default allocator:
	 * its fields are freed with free(). */
	free(r->ingest_cursor.data);
	r->ingest_cursor.data = c;
	r->ingest_cursor.len = op->upto.len;
	t->rng_dirty = true;
	return 0;
}

/* Whether a range of bucket in this group that is not a move's sealed
 * source overlaps [start, end). */
static bool open_range_overlaps(struct tx *t, const char *bucket, const char *start,
				const char *end)
{
	struct key p;
	k_init(&p, 'r');
	bool any = false;
	range_flush(t);
	rocksdb_iterator_t *it = tx_iter(t, &p);
	for (; !any && iter_has_prefix(it, &p); rocksdb_iter_next(it)) {
		size_t vn;
		const char *vb = rocksdb_iter_value(it, &vn);
		Iolake__Meta__RangeDesc *d = iolake__meta__range_desc__unpack(NULL, vn,
									      (const uint8_t *)vb);
		if (!d) {
			t->io_err = -EIO;
			break;
		}
		/* Only a range sealed for a move (its records went elsewhere)
		 * may lie under the span: an open one, or one being filled by
		 * a move into this group, holds records that must stay (a
		 * driver acting on a cleanup it learnt of before a later move
		 * must not drop that move's records). */
		if (!(d->sealed && d->move_phase) && !strcmp(d->bucket, bucket))
			any = (!end[0] || strcmp(d->start, end) < 0) &&
			      (!d->end[0] || strcmp(start, d->end) < 0);
		meta_state_free_msg(d);
	}
	rocksdb_iter_destroy(it);
	return any;
}

struct kbuf {
	char *b;
	size_t n;
};

/* Delete an upload's parts (and their references). */
static void drop_parts(struct tx *t, const char *id)
{
	uint32_t nums[64];
	size_t np = 0;
	struct key pp;
	k_init(&pp, 'P');
	memcpy(pp.b + pp.n, id, 16);
	pp.n += 16;
	do {
		np = 0;
		rocksdb_iterator_t *it = tx_iter(t, &pp);
		for (; np < 64 && iter_has_prefix(it, &pp); rocksdb_iter_next(it)) {
			size_t pkn, pvn;
			const char *pkb = rocksdb_iter_key(it, &pkn);
			const char *pvb = rocksdb_iter_value(it, &pvn);
			if (pkn != PART_KEY_LEN)
				continue;
			move_pair_effects(t, pkb, pvb, pvn, false, NULL);
			const uint8_t *nb = (const uint8_t *)pkb + 17;
			nums[np++] = (uint32_t)nb[0] << 24 | (uint32_t)nb[1] << 16 |
				     (uint32_t)nb[2] << 8 | nb[3];
		}
		rocksdb_iter_destroy(it);
		for (size_t j = 0; j < np; j++) {
			char uid[17];
			memcpy(uid, id, 16);
			uid[16] = 0;
			struct key pk;
			key_part(&pk, uid, nums[j]);
			tx_del(t, &pk);
		}
	} while (np == 64);
}

int move_drop_span(struct tx *t, const char *bucket, const char *start, const char *end,
		   uint32_t max, Iolake__Meta__RangeDesc *r, uint32_t *dropped)
{
	*dropped = 0;
	struct kbuf *v = calloc(max, sizeof(*v));
	if (!v) {
		t->io_err = -ENOMEM;
		return -ENOMEM;
	}
	size_t n = 0;
	int rc = 0;
	/* Collect first, then delete (no writes under a live iterator). */
	for (size_t ti = 0; !rc && ti < N_MOVE_TABLES && n < max; ti++) {
		struct key pre, lo;
		k_init(&pre, MOVE_TABLES[ti]);
		k_str(&pre, bucket);
		k_byte(&pre, 0);
		lo = pre;
		k_str(&lo, start);
		rocksdb_iterator_t *it = tx_iter(t, &lo);
		for (; n < max && iter_has_prefix(it, &pre); rocksdb_iter_next(it)) {
			size_t kn;
			const char *kb = rocksdb_iter_key(it, &kn);
			if (!move_below_end(kb + pre.n, move_s3key_len(kb, kn, pre.n), end))
				break;
			if (!(v[n].b = malloc(kn))) {
				rc = -ENOMEM;
				break;
			}
			memcpy(v[n].b, kb, kn);
			v[n++].n = kn;
		}
		rocksdb_iter_destroy(it);
	}
	for (size_t i = 0; !rc && i < n; i++) {
		struct key k;
		memcpy(k.b, v[i].b, v[i].n);
		k.n = v[i].n;
		char *val;
		size_t vn;
		rc = tx_get(t, &k, &val, &vn);
		if (rc)
			break;
		rc = move_pair_effects(t, k.b, val, vn, false, r);
		rocksdb_free(val);
		if (rc)
			break;
		const char *id = k.b[0] == 'U' ? upload_id_of(k.b, k.n) : NULL;
		if (id)
			drop_parts(t, id);
		tx_del(t, &k);
	}
	for (size_t i = 0; i < n; i++)
		free(v[i].b);
	free(v);
	if (rc) {
		if (rc == -ENOMEM)
			t->io_err = rc;
		return rc == -EINVAL ? -EIO : rc;
	}
	if (r && n)
		t->rng_dirty = true;
	*dropped = (uint32_t)n;
	return 0;
}

int op_drop_range(struct tx *t, const Iolake__Meta__DropRange *op, struct meta_op_result *res)
{
	if (!valid_range_bounds(op->bucket, op->start, op->end) || op->max == 0)
		return -EINVAL;
	if (open_range_overlaps(t, op->bucket, op->start, op->end))
		return t->io_err ? t->io_err : IOL_ECONFLICT;
	uint32_t max = op->max > 100000 ? 100000 : op->max, n = 0, fed = 0;
	int rc = move_drop_span(t, op->bucket, op->start, op->end, max, NULL, &n);
	if (!rc && n < max)   /* the records gone: then the feed that carried them */
		rc = feed_drop(t, op->bucket, op->start, max - n, &fed);
	if (rc)
		return rc;
	res->generation = n + fed;
	return 0;
}

int meta_state_range_split_key(struct meta_state *s, uint64_t range_id, char *out, size_t cap)
{
	out[0] = 0;
	Iolake__Meta__RangeDesc *r = NULL;
	int rc = meta_state_get_open_range(s, range_id, &r);
	if (rc == IOL_ENOT_FOUND)
		return META_EWRONG_RANGE;
	if (rc)
		return rc;
	uint64_t half = r->objects / 2;
	struct key pre, lo, pend;
	k_init(&pre, 'O');
	k_str(&pre, r->bucket);
	k_byte(&pre, 0);
	lo = pre;
	k_str(&lo, r->start);
	rocksdb_readoptions_t *ro = prefix_ro(&pre, &pend);
	rocksdb_iterator_t *it = rocksdb_create_iterator(s->db, ro ? ro : s->ro);
	uint64_t i = 0;
	for (rocksdb_iter_seek(it, lo.b, lo.n); half > 0 && rocksdb_iter_valid(it);
	     rocksdb_iter_next(it)) {
		size_t kn;
		const char *kb = rocksdb_iter_key(it, &kn);
		if (kn < pre.n || memcmp(kb, pre.b, pre.n))
			break;
		size_t sn = kn - pre.n;
		if (!move_below_end(kb + pre.n, sn, r->end))
			break;
		if (i++ < half || sn + 1 > cap)
			continue;
		memcpy(out, kb + pre.n, sn);
		out[sn] = 0;
		if (strcmp(out, r->start) > 0)
			break;   /* a split key must be above the range's start */
		out[0] = 0;
	}
	rocksdb_iter_destroy(it);
	if (ro)
		rocksdb_readoptions_destroy(ro);
	meta_state_free_msg(r);
	return 0;
}
