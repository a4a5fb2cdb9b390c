/*
 * state_range.c — key ranges in the state machine (meta.proto RangeDesc;
 * contracts in state.h, private helpers in state_internal.h): the root's
 * range table and its moves (MoveRange, MoveRangeStep), a range group's
 * open-range rows and their fencing of object ops.
 *
 * Not here: the records a move carries (meta/state_move.c), the driver of
 * a move (meta/range_move.c), routing (route.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "meta/state_internal.h"

/* ---- key ranges (meta.proto RangeDesc)
 *
 * Root: 'Q' bucket 0x00 start -> RangeDesc (the range table, with its
 * group) and 'q' u64 group -> u64 ranges held (for the choice of the
 * least-loaded group). Range group: 'r' u64 range id -> RangeDesc (open or
 * sealed, with the counters). An object op carrying range id R is applied
 * only when 'r' R is open, of its bucket, and covers its key; range id 0
 * keeps the older rule (a bucket row here) for buckets without ranges. */

static void key_range_row(struct key *k, const char *bucket, const char *start)
{
	k_init(k, 'Q');
	k_str(k, bucket);
	k_byte(k, 0);
	k_str(k, start);
}

void key_open_range(struct key *k, uint64_t id)
{
	k_init(k, 'r');
	k_u64(k, id);
}

static void key_range_count(struct key *k, uint64_t group)
{
	k_init(k, 'q');
	k_u64(k, group);
}

/* end "" is the end of the bucket. */
static bool range_covers(const Iolake__Meta__RangeDesc *r, const char *key)
{
	return strcmp(key, r->start) >= 0 && (!r->end[0] || strcmp(key, r->end) < 0);
}

bool valid_range_bounds(const char *bucket, const char *start, const char *end)
{
	if (!valid_bucket(bucket) || !start || !end || strlen(start) > META_KEY_MAX ||
	    strlen(end) > META_KEY_MAX)
		return false;
	return !end[0] || strcmp(start, end) < 0;
}

/* Write the memo's range counters back (struct tx: rng). */
void range_flush(struct tx *t)
{
	if (!t->rng || !t->rng_dirty)
		return;
	struct key k;
	key_open_range(&k, t->rng->id);
	tx_put_msg(t, &k, &t->rng->base);
	t->rng_dirty = false;
}

static void range_forget(struct tx *t)
{
	range_flush(t);
	meta_state_free_msg(t->rng);
	t->rng = NULL;
}

/* The open-range row id, through the memo; NULL when absent. */
Iolake__Meta__RangeDesc *range_load(struct tx *t, uint64_t id)
{
	if (t->rng && t->rng->id == id)
		return t->rng;
	range_forget(t);
	struct key k;
	key_open_range(&k, id);
	Iolake__Meta__RangeDesc *r = NULL;
	if (tx_get_msg(t, &k, &iolake__meta__range_desc__descriptor, (void **)&r))
		return NULL;
	t->rng = r;
	return r;
}

/* Whether the root holds range rows for bucket (then its records live
 * in range groups and an op routed by range id 0 is stale). */
static bool bucket_has_ranges(struct tx *t, const char *bucket)
{
	struct key p;
	key_range_row(&p, bucket, "");
	return prefix_nonempty(t, &p);
}

int range_check(struct tx *t, const char *bucket, const char *key)
{
	if (t->range_id == 0) {
		if (!bucket_exists(t, bucket))
			return IOL_ENOT_FOUND;
		char *noranges = t->s->memo.bucket_noranges;   /* struct apply_memo */
		if (strcmp(noranges, bucket)) {
			if (bucket_has_ranges(t, bucket))
				return META_EWRONG_RANGE;
			snprintf(noranges, sizeof(t->s->memo.bucket_noranges), "%s", bucket);
		}
		return 0;
	}
	Iolake__Meta__RangeDesc *r = range_load(t, t->range_id);
	if (!r)
		return t->io_err ? t->io_err : META_EWRONG_RANGE;
	if (r->sealed || strcmp(r->bucket, bucket) || !range_covers(r, key))
		return META_EWRONG_RANGE;
	feed_note(t, r, key);   /* a split copying it unsealed: state_feed.c */
	return 0;
}

/* Move the counters of the op's range (after range_check passed). */
void range_count(struct tx *t, int64_t objects, int64_t bytes, int64_t uploads)
{
	if (t->range_id == 0) {
		/* The root counts per bucket for quotas (state_quota.c). */
		quota_count(t, t->quota_bucket, objects, bytes);
		return;
	}
	if (!t->rng || t->rng->id != t->range_id)
		return;
	t->rng->objects += (uint64_t)objects;
	t->rng->bytes += (uint64_t)bytes;
	t->rng->uploads += (uint64_t)uploads;
	t->rng_dirty = true;
}

static int get_u64(struct tx *t, const struct key *k, uint64_t *v)
{
	char *b;
	size_t n;
	*v = 0;
	int rc = tx_get(t, k, &b, &n);
	if (rc == IOL_ENOT_FOUND)
		return 0;
	if (rc)
		return rc;
	if (n == 8)
		*v = get_be64(b);
	rocksdb_free(b);
	return 0;
}

static void add_group_ranges(struct tx *t, uint64_t group, int64_t d)
{
	struct key k;
	uint64_t v;
	key_range_count(&k, group);
	if (get_u64(t, &k, &v))
		return;
	v += (uint64_t)d;
	char b[8];
	put_be64(b, v);
	rocksdb_writebatch_wi_put(t->wb, k.b, k.n, b, 8);
}

/* The live group >= 1 holding the fewest ranges (ties: the lowest id);
 * 0 when the table has none (records stay in the root). */
static uint64_t least_loaded_group(struct tx *t)
{
	struct key lo;
	k_init(&lo, 'g');
	uint64_t best = 0, best_n = UINT64_MAX;
	rocksdb_iterator_t *it = tx_iter(t, &lo);
	for (; iter_has_prefix(it, &lo); rocksdb_iter_next(it)) {
		size_t vn;
		const char *vb = rocksdb_iter_value(it, &vn);
		Iolake__Meta__GroupDesc *g = (Iolake__Meta__GroupDesc *)protobuf_c_message_unpack(
			&iolake__meta__group_desc__descriptor, NULL, vn, (const uint8_t *)vb);
		if (!g) {
			t->io_err = -EIO;
			break;
		}
		if (!g->deleted) {
			struct key ck;
			uint64_t n;
			key_range_count(&ck, g->id);
			if (get_u64(t, &ck, &n) == 0 && n < best_n) {
				best_n = n;
				best = g->id;
			}
		}
		meta_state_free_msg(g);
	}
	rocksdb_iter_destroy(it);
	return best;
}

static int put_range_row(struct tx *t, uint64_t id, const char *bucket, const char *start,
			 const char *end, uint64_t group)
{
	Iolake__Meta__RangeDesc d = IOLAKE__META__RANGE_DESC__INIT;
	d.id = id;
	d.bucket = (char *)bucket;
	d.start = (char *)start;
	d.end = (char *)end;
	d.group = group;
	struct key k;
	key_range_row(&k, bucket, start);
	add_group_ranges(t, group, 1);
	return tx_put_msg(t, &k, &d.base);
}

/* CreateBucket in the root: one range over the whole bucket, when range
 * groups exist. */
int create_bucket_range(struct tx *t, const char *bucket)
{
	uint64_t g = least_loaded_group(t);
	if (t->io_err)
		return t->io_err;
	return g ? put_range_row(t, t->gen, bucket, "", "", g) : 0;
}

/* DeleteBucket in the root: drop the bucket's range rows. */
void delete_bucket_ranges(struct tx *t, const char *bucket)
{
	struct key p;
	key_range_row(&p, bucket, "");
	rocksdb_iterator_t *it = tx_iter(t, &p);
	for (; iter_has_prefix(it, &p); rocksdb_iter_next(it)) {
		size_t kn, vn;
		const char *kb = rocksdb_iter_key(it, &kn);
		const char *vb = rocksdb_iter_value(it, &vn);
		Iolake__Meta__RangeDesc *d = (Iolake__Meta__RangeDesc *)protobuf_c_message_unpack(
			&iolake__meta__range_desc__descriptor, NULL, vn, (const uint8_t *)vb);
		if (d)
			add_group_ranges(t, d->group, -1);
		meta_state_free_msg(d);
		struct key k;
		memcpy(k.b, kb, kn);
		k.n = kn;
		tx_del(t, &k);
	}
	rocksdb_iter_destroy(it);
	t->s->memo.bucket_noranges[0] = 0;
	quota_forget(t, bucket);
}

/* Whether table ('O' or 'U') holds a key of bucket in [start, end). */
static bool span_nonempty(struct tx *t, char table, const char *bucket, const char *start,
			  const char *end)
{
	struct key lo, p;
	k_init(&p, table);
	k_str(&p, bucket);
	k_byte(&p, 0);
	lo = p;
	k_str(&lo, start);
	rocksdb_iterator_t *it = tx_iter(t, &lo);
	bool any = false;
	if (iter_has_prefix(it, &p)) {
		size_t kn;
		const char *kb = rocksdb_iter_key(it, &kn);
		kb += p.n;
		kn -= p.n;
		/* uploads: the S3 key ends at the 0x00 before the upload id */
		const char *z = table == 'U' ? memchr(kb, 0, kn) : NULL;
		if (z)
			kn = (size_t)(z - kb);
		size_t en = strlen(end);
		int c = memcmp(kb, end, kn < en ? kn : en);
		any = !end[0] || c < 0 || (c == 0 && kn < en);
	}
	rocksdb_iter_destroy(it);
	return any;
}

bool group_holds_ranges(struct tx *t, uint64_t group)
{
	struct key k;
	uint64_t n;
	key_range_count(&k, group);
	return get_u64(t, &k, &n) == 0 && n > 0;
}

int op_open_range(struct tx *t, const Iolake__Meta__OpenRange *op)
{
	const Iolake__Meta__RangeDesc *d = op->range;
	if (!d || d->id == 0 || !valid_range_bounds(d->bucket, d->start, d->end))
		return -EINVAL;
	if (range_load(t, d->id))
		return 0;   /* open or sealed: unchanged */
	if (t->io_err)
		return t->io_err;
	Iolake__Meta__RangeDesc n = IOLAKE__META__RANGE_DESC__INIT;
	n.id = d->id;
	n.bucket = d->bucket;
	n.start = d->start;
	n.end = d->end;
	n.group = d->group;
	/* A range opened by a move starts with the records it holds
	 * (meta/range_move.c counts them); a new one with none. */
	n.objects = d->objects;
	n.bytes = d->bytes;
	n.uploads = d->uploads;
	struct key k;
	key_open_range(&k, d->id);
	return tx_put_msg(t, &k, &n.base);
}

int op_seal_range(struct tx *t, const Iolake__Meta__SealRange *op)
{
	const Iolake__Meta__RangeDesc *d = op->range;
	if (!d || d->id == 0 || !valid_range_bounds(d->bucket, d->start, d->end))
		return -EINVAL;
	Iolake__Meta__RangeDesc *r = range_load(t, d->id);
	if (t->io_err)
		return t->io_err;
	struct key k;
	key_open_range(&k, d->id);
	if (!r) {
		if (op->unseal)
			return IOL_ENOT_FOUND;
		Iolake__Meta__RangeDesc n = IOLAKE__META__RANGE_DESC__INIT;
		n.id = d->id;
		n.bucket = d->bucket;
		n.start = d->start;
		n.end = d->end;
		n.group = d->group;
		n.sealed = true;
		if (op->for_move)
			n.move_phase = IOLAKE__META__RANGE_MOVE_PHASE__MOVE_COPY;
		return tx_put_msg(t, &k, &n.base);
	}
	/* A range sealed for a move (its records are being copied, or were:
	 * its keys live elsewhere now) never opens again: a DeleteBucket
	 * that sealed it too and failed must not unseal it. */
	if (op->unseal) {
		if (r->move_phase)
			return IOL_ECONFLICT;
		r->sealed = false;
		t->rng_dirty = true;
		return 0;
	}
	if (op->for_move && !r->move_phase) {
		r->move_phase = IOLAKE__META__RANGE_MOVE_PHASE__MOVE_COPY;
		t->rng_dirty = true;
	}
	if (r->sealed)
		return 0;
	if (!op->for_move && (span_nonempty(t, 'O', r->bucket, r->start, r->end) ||
			      span_nonempty(t, 'U', r->bucket, r->start, r->end)))
		return META_ENOTEMPTY;
	r->sealed = true;
	t->rng_dirty = true;
	return 0;
}

int op_split_range(struct tx *t, const Iolake__Meta__SplitRange *op)
{
	if (!valid_bucket(op->bucket) || !valid_key(op->key) || !op->key[0] || op->range_id == 0)
		return -EINVAL;
	/* The row holding key: the last one whose start <= key. */
	struct key lo, p;
	key_range_row(&p, op->bucket, "");
	key_range_row(&lo, op->bucket, op->key);
	k_byte(&lo, 0);   /* just above key itself */
	rocksdb_iterator_t *it = tx_iter(t, &lo);
	if (rocksdb_iter_valid(it))
		rocksdb_iter_prev(it);
	else
		rocksdb_iter_seek_to_last(it);
	Iolake__Meta__RangeDesc *d = NULL;
	if (iter_has_prefix(it, &p)) {
		size_t vn;
		const char *vb = rocksdb_iter_value(it, &vn);
		d = (Iolake__Meta__RangeDesc *)protobuf_c_message_unpack(
			&iolake__meta__range_desc__descriptor, NULL, vn, (const uint8_t *)vb);
	}
	rocksdb_iter_destroy(it);
	int rc = 0;
	if (!d || d->id != op->range_id) {
		rc = IOL_ENOT_FOUND;
		goto out;
	}
	if (!strcmp(d->start, op->key) || !range_covers(d, op->key)) {
		rc = -EINVAL;
		goto out;
	}
	uint64_t right_group = least_loaded_group(t);
	if (t->io_err) {
		rc = t->io_err;
		goto out;
	}
	if (!right_group)
		right_group = d->group;
	/* Generations are (index << 16) | position < 4096: the right
	 * half's id sets bit 15 and stays unique. */
	add_group_ranges(t, d->group, -1);
	rc = put_range_row(t, t->gen, op->bucket, d->start, op->key, d->group);
	if (rc == 0)
		rc = put_range_row(t, t->gen | 0x8000, op->bucket, op->key, d->end, right_group);
out:
	meta_state_free_msg(d);
	return rc;
}

/* Records under prefix p in key order (at most max), with the iterator
 * bounded at the prefix's end: 'Q' sits just below 'R', the request table,
 * whose pruned entries are deleted keys an unbounded Next walks (see
 * state.c prefix_ro). */
static int list_bounded(struct meta_state *s, const struct key *p,
			const ProtobufCMessageDescriptor *desc, size_t max, ProtobufCMessage ***out,
			size_t *n_out)
{
	struct key end;
	rocksdb_readoptions_t *ro = prefix_ro(p, &end);
	size_t n = 0, cap = 16;
	ProtobufCMessage **v = malloc(cap * sizeof(*v));
	int rc = v ? 0 : -ENOMEM;
	rocksdb_iterator_t *it = rocksdb_create_iterator(s->db, ro ? ro : s->ro);
	for (rocksdb_iter_seek(it, p->b, p->n); !rc && rocksdb_iter_valid(it) && n < max;
	     rocksdb_iter_next(it)) {
		size_t kn, vn;
		const char *kb = rocksdb_iter_key(it, &kn);
		if (kn < p->n || memcmp(kb, p->b, p->n))
			break;
		const char *vb = rocksdb_iter_value(it, &vn);
		ProtobufCMessage *m = protobuf_c_message_unpack(desc, NULL, vn, (const uint8_t *)vb);
		if (!m) {
			rc = IOL_ECORRUPT;
			break;
		}
		if (n == cap) {
			ProtobufCMessage **nv = realloc(v, 2 * cap * sizeof(*nv));
			if (!nv) {
				protobuf_c_message_free_unpacked(m, NULL);
				rc = -ENOMEM;
				break;
			}
			v = nv;
			cap *= 2;
		}
		v[n++] = m;
	}
	rocksdb_iter_destroy(it);
	if (ro)
		rocksdb_readoptions_destroy(ro);
	if (rc) {
		for (size_t i = 0; i < n; i++)
			protobuf_c_message_free_unpacked(v[i], NULL);
		free(v);
		return rc;
	}
	*out = v;
	*n_out = n;
	return 0;
}

int meta_state_list_ranges(struct meta_state *s, const char *bucket,
			   Iolake__Meta__RangeDesc ***out, size_t *n)
{
	struct key p;
	k_init(&p, 'Q');
	if (bucket) {
		if (!valid_bucket(bucket))
			return -EINVAL;
		k_str(&p, bucket);
		k_byte(&p, 0);
	}
	return list_bounded(s, &p, &iolake__meta__range_desc__descriptor, META_RANGES_MAX,
			    (ProtobufCMessage ***)out, n);
}

int meta_state_list_open_ranges(struct meta_state *s, Iolake__Meta__RangeDesc ***out, size_t *n)
{
	struct key p;
	k_init(&p, 'r');
	return list_bounded(s, &p, &iolake__meta__range_desc__descriptor, META_RANGES_MAX,
			    (ProtobufCMessage ***)out, n);
}

int meta_state_get_open_range(struct meta_state *s, uint64_t id, Iolake__Meta__RangeDesc **out)
{
	struct key k;
	k_init(&k, 'r');
	k_u64(&k, id);
	return read_msg(s, &k, &iolake__meta__range_desc__descriptor, (void **)out);
}

bool meta_state_bucket_has_ranges(struct meta_state *s, const char *bucket)
{
	if (!valid_bucket(bucket))
		return false;
	struct key p;
	k_init(&p, 'Q');
	k_str(&p, bucket);
	k_byte(&p, 0);
	struct key end;
	rocksdb_readoptions_t *ro = prefix_ro(&p, &end);   /* see prefix_ro */
	rocksdb_iterator_t *it = rocksdb_create_iterator(s->db, ro ? ro : s->ro);
	rocksdb_iter_seek(it, p.b, p.n);
	bool any = false;
	if (rocksdb_iter_valid(it)) {
		size_t kn;
		const char *kb = rocksdb_iter_key(it, &kn);
		any = kn >= p.n && memcmp(kb, p.b, p.n) == 0;
	}
	rocksdb_iter_destroy(it);
	if (ro)
		rocksdb_readoptions_destroy(ro);
	return any;
}

int meta_state_group_ranges(struct meta_state *s, uint64_t group, uint64_t *n)
{
	struct key k;
	k_init(&k, 'q');
	k_u64(&k, group);
	char *v;
	size_t vn;
	*n = 0;
	int rc = db_get(s, &k, &v, &vn);
	if (rc == IOL_ENOT_FOUND)
		return 0;
	if (rc)
		return rc;
	if (vn == 8)
		*n = get_be64(v);
	rocksdb_free(v);
	return 0;
}

/* ------------------------------------------------ the root's moves */

/* Every root row of bucket, in key order (at most META_RANGES_MAX). */
static int bucket_rows(struct tx *t, const char *bucket, Iolake__Meta__RangeDesc ***out,
		       size_t *n)
{
	struct key p;
	key_range_row(&p, bucket, "");
	*out = NULL;
	*n = 0;
	size_t cap = 0;
	rocksdb_iterator_t *it = tx_iter(t, &p);
	int rc = 0;
	for (; iter_has_prefix(it, &p) && *n < META_RANGES_MAX; rocksdb_iter_next(it)) {
		size_t vn;
		const char *vb = rocksdb_iter_value(it, &vn);
		Iolake__Meta__RangeDesc *d = iolake__meta__range_desc__unpack(NULL, vn,
									      (const uint8_t *)vb);
		if (!d) {
			rc = t->io_err = -EIO;
			break;
		}
		if (*n == cap) {
			cap = cap ? 2 * cap : 8;
			Iolake__Meta__RangeDesc **nv = realloc(*out, cap * sizeof(*nv));
			if (!nv) {
				meta_state_free_msg(d);
				rc = t->io_err = -ENOMEM;
				break;
			}
			*out = nv;
		}
		(*out)[(*n)++] = d;
	}
	rocksdb_iter_destroy(it);
	return rc;
}

static void free_rows(Iolake__Meta__RangeDesc **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		meta_state_free_msg(v[i]);
	free(v);
}

static int put_row(struct tx *t, const Iolake__Meta__RangeDesc *d)
{
	struct key k;
	key_range_row(&k, d->bucket, d->start);
	return tx_put_msg(t, &k, &d->base);
}

static bool group_live(struct tx *t, uint64_t id)
{
	struct key k;
	k_init(&k, 'g');
	k_u64(&k, id);
	Iolake__Meta__GroupDesc *g = NULL;
	if (tx_get_msg(t, &k, &iolake__meta__group_desc__descriptor, (void **)&g))
		return false;
	bool live = !g->deleted;
	meta_state_free_msg(g);
	return live;
}

/* The live group holding the fewest ranges other than `not` (ties: the
 * lowest id); `not` itself when it is the only one. */
static uint64_t target_group(struct tx *t, uint64_t not)
{
	struct key lo;
	k_init(&lo, 'g');
	uint64_t best = 0, best_n = UINT64_MAX;
	rocksdb_iterator_t *it = tx_iter(t, &lo);
	for (; iter_has_prefix(it, &lo); rocksdb_iter_next(it)) {
		size_t vn;
		const char *vb = rocksdb_iter_value(it, &vn);
		Iolake__Meta__GroupDesc *g = iolake__meta__group_desc__unpack(NULL, vn,
									      (const uint8_t *)vb);
		if (!g) {
			t->io_err = -EIO;
			break;
		}
		if (!g->deleted && g->id != not) {
			struct key ck;
			uint64_t n;
			key_range_count(&ck, g->id);
			if (get_u64(t, &ck, &n) == 0 && n < best_n) {
				best_n = n;
				best = g->id;
			}
		}
		meta_state_free_msg(g);
	}
	rocksdb_iter_destroy(it);
	return best ? best : not;
}

static void clear_move(Iolake__Meta__RangeDesc *d)
{
	d->move_phase = IOLAKE__META__RANGE_MOVE_PHASE__MOVE_NONE;
	d->move_kind = IOLAKE__META__RANGE_MOVE_KIND__MOVE_KIND_NONE;
	d->move_key = "";
	d->move_end = "";
	d->move_group = 0;
	d->move_id = 0;
	d->move_left_id = 0;
}

int op_move_range(struct tx *t, const Iolake__Meta__MoveRange *op, struct meta_op_result *res)
{
	(void)res;
	if (!valid_bucket(op->bucket) || !valid_key(op->key) || op->range_id == 0)
		return -EINVAL;
	Iolake__Meta__RangeDesc **v = NULL;
	size_t n = 0;
	int rc = bucket_rows(t, op->bucket, &v, &n);
	if (rc)
		return rc;
	/* One move per bucket at a time: a cleanup still to run may drop a
	 * span another move would bring back into its group. */
	for (size_t i = 0; i < n; i++)
		if (v[i]->move_phase != IOLAKE__META__RANGE_MOVE_PHASE__MOVE_NONE) {
			free_rows(v, n);
			return IOL_ECONFLICT;
		}
	Iolake__Meta__RangeDesc *d = NULL, *right = NULL;
	for (size_t i = 0; i < n; i++)
		if (range_covers(v[i], op->key)) {
			d = v[i];
			right = i + 1 < n ? v[i + 1] : NULL;
			if (op->merge) {
				right = d;
				d = i > 0 ? v[i - 1] : NULL;
			}
		}
	/* Generations are (index << 16) | position < 4096: the right
	 * half's id sets bit 15 and stays unique (as SplitRange). */
	char *key = (char *)op->key;
	if (!op->merge) {
		if (!d || d->id != op->range_id) {
			rc = IOL_ENOT_FOUND;
		} else if (!strcmp(d->start, op->key)) {
			rc = -EINVAL;
		} else {
			uint64_t tg = op->target_group;
			if (tg && !group_live(t, tg))
				rc = IOL_ENOT_FOUND;
			if (!tg)
				tg = target_group(t, d->group);
			Iolake__Meta__RangeDesc c = *d;   /* a copy: d owns its strings */
			c.move_phase = IOLAKE__META__RANGE_MOVE_PHASE__MOVE_COPY;
			c.move_kind = IOLAKE__META__RANGE_MOVE_KIND__MOVE_SPLIT;
			c.move_key = key;
			c.move_end = d->end;
			c.move_group = tg;
			c.move_id = t->gen | 0x8000;
			c.move_left_id = t->gen;
			if (!rc && !t->io_err)
				rc = put_row(t, &c);
		}
	} else {
		if (!d || !right || d->id != op->range_id || strcmp(right->start, op->key)) {
			rc = IOL_ENOT_FOUND;
		} else {
			Iolake__Meta__RangeDesc c = *d, rc2 = *right;
			c.move_phase = IOLAKE__META__RANGE_MOVE_PHASE__MOVE_COPY;
			c.move_kind = IOLAKE__META__RANGE_MOVE_KIND__MOVE_MERGE;
			c.move_key = right->start;
			c.move_end = right->end;
			c.move_group = d->group;
			c.move_id = t->gen;
			rc2.move_phase = IOLAKE__META__RANGE_MOVE_PHASE__MOVE_COPY;
			rc2.move_kind = IOLAKE__META__RANGE_MOVE_KIND__MOVE_MERGE_RIGHT;
			rc2.move_id = t->gen;
			rc = put_row(t, &c);
			if (!rc)
				rc = put_row(t, &rc2);
		}
	}
	free_rows(v, n);
	return rc ? rc : t->io_err;
}

int op_move_range_step(struct tx *t, const Iolake__Meta__MoveRangeStep *op)
{
	if (!valid_bucket(op->bucket) || op->move_id == 0)
		return -EINVAL;
	Iolake__Meta__RangeDesc **v = NULL;
	size_t n = 0;
	int rc = bucket_rows(t, op->bucket, &v, &n);
	if (rc)
		return rc;
	ssize_t drv = -1, made = -1;
	for (size_t i = 0; i < n; i++) {
		if (v[i]->move_id == op->move_id &&
		    v[i]->move_kind != IOLAKE__META__RANGE_MOVE_KIND__MOVE_MERGE_RIGHT &&
		    v[i]->move_phase != IOLAKE__META__RANGE_MOVE_PHASE__MOVE_NONE)
			drv = (ssize_t)i;
		if (v[i]->id == op->move_id)
			made = (ssize_t)i;
	}
	rc = 0;
	if (op->phase == IOLAKE__META__RANGE_MOVE_PHASE__MOVE_CLEANUP) {
		if (drv < 0 || v[drv]->move_phase != IOLAKE__META__RANGE_MOVE_PHASE__MOVE_COPY) {
			rc = drv >= 0 || made >= 0 ? 0 : IOL_ENOT_FOUND;   /* past it */
			goto out;
		}
		Iolake__Meta__RangeDesc *d = v[drv];
		uint64_t tg = d->move_group, src = d->group;
		if (d->move_kind == IOLAKE__META__RANGE_MOVE_KIND__MOVE_SPLIT) {
			/* [start,key) keeps the group under a new id; [key,end)
			 * is the target's. */
			Iolake__Meta__RangeDesc r = *d;
			clear_move(&r);
			r.id = d->move_id;
			r.start = d->move_key;
			r.group = tg;
			Iolake__Meta__RangeDesc l = *d;
			l.id = d->move_left_id;
			l.end = d->move_key;
			l.move_phase = IOLAKE__META__RANGE_MOVE_PHASE__MOVE_CLEANUP;
			l.move_end = d->end;
			l.move_group = tg != src ? src : 0;
			l.move_left_id = 0;
			add_group_ranges(t, tg, 1);
			rc = put_row(t, &l);
			if (!rc)
				rc = put_row(t, &r);
		} else {
			/* merge: the right row goes; the left one spans both */
			ssize_t ri = drv + 1;
			if ((size_t)ri >= n || v[ri]->move_id != op->move_id) {
				rc = -EIO;   /* the table lost the locked right row */
				goto out;
			}
			Iolake__Meta__RangeDesc *rr = v[ri];
			struct key k;
			key_range_row(&k, rr->bucket, rr->start);
			tx_del(t, &k);
			add_group_ranges(t, rr->group, -1);
			Iolake__Meta__RangeDesc m = *d;
			m.id = d->move_id;
			m.end = rr->end;
			m.move_phase = IOLAKE__META__RANGE_MOVE_PHASE__MOVE_CLEANUP;
			m.move_key = rr->start;
			m.move_end = rr->end;
			m.move_group = rr->group != src ? rr->group : 0;
			rc = put_row(t, &m);
		}
	} else if (op->phase == IOLAKE__META__RANGE_MOVE_PHASE__MOVE_NONE) {
		if (drv < 0 || v[drv]->move_phase != IOLAKE__META__RANGE_MOVE_PHASE__MOVE_CLEANUP)
			goto out;   /* done before */
		Iolake__Meta__RangeDesc d = *v[drv];
		clear_move(&d);
		rc = put_row(t, &d);
	} else {
		rc = -EINVAL;
	}
out:
	free_rows(v, n);
	return rc ? rc : t->io_err;
}

/* Whether a move of bucket is under way (DeleteBucket waits for it). */
bool bucket_moving(struct tx *t, const char *bucket)
{
	Iolake__Meta__RangeDesc **v = NULL;
	size_t n = 0;
	if (bucket_rows(t, bucket, &v, &n))
		return true;
	bool any = false;
	for (size_t i = 0; i < n; i++)
		any = any || v[i]->move_phase != IOLAKE__META__RANGE_MOVE_PHASE__MOVE_NONE;
	free_rows(v, n);
	return any;
}
