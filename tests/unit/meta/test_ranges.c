/*
 * test_ranges.c — key ranges (meta.proto RangeDesc) on real RocksDB under
 * /dev/shm: the root's range table (CreateBucket with and without range
 * groups, the least-loaded group, SplitRange, DeleteBucket dropping rows,
 * DeleteGroup refused while a group holds ranges), a range group's
 * open-range rows (OpenRange idempotent and never reopening a sealed
 * range, SealRange refused while objects or uploads remain, unseal, a seal
 * of an unknown range recorded sealed), WRONG_RANGE fencing of every
 * object op, the counters, retries answered from the request table, a
 * listing bounded to a range; and the pure parts of the client side
 * (meta/range.h): the table, find, and the ordered multi-range listing
 * walk (order, a common prefix across a boundary emitted once, pages and
 * continuation against a model); moving records between two groups'
 * states (ReadRange pairs, IngestRange batches with their cursor, parts
 * riding with their upload, references, counters, DropRange).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "meta/list.h"
#include "meta/range.h"
#include "meta/state.h"
#include "meta_test_util.h"

static struct meta_op_result res[META_BATCH_MAX_OPS];

static void tb_group(struct tb *t, uint64_t id)
{
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
}

static Iolake__Meta__RangeDesc *tb_range(struct tb *t, uint64_t id, const char *bucket,
					 const char *start, const char *end)
{
	Iolake__Meta__RangeDesc *d = tb_alloc(t, sizeof(*d));
	iolake__meta__range_desc__init(d);
	d->id = id;
	d->bucket = tb_str(t, bucket);
	d->start = tb_str(t, start);
	d->end = tb_str(t, end);
	return d;
}

static void tb_open(struct tb *t, uint64_t id, const char *bucket, const char *start,
		    const char *end)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__OpenRange *o = tb_alloc(t, sizeof(*o));
	iolake__meta__open_range__init(o);
	o->range = tb_range(t, id, bucket, start, end);
	op->body_case = IOLAKE__META__OP__BODY_OPEN_RANGE;
	op->open_range = o;
}

static void tb_seal(struct tb *t, uint64_t id, const char *bucket, const char *start,
		    const char *end, bool unseal)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__SealRange *o = tb_alloc(t, sizeof(*o));
	iolake__meta__seal_range__init(o);
	o->range = tb_range(t, id, bucket, start, end);
	o->unseal = unseal;
	op->body_case = IOLAKE__META__OP__BODY_SEAL_RANGE;
	op->seal_range = o;
}

static void tb_split(struct tb *t, const char *bucket, uint64_t id, const char *key)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__SplitRange *o = tb_alloc(t, sizeof(*o));
	iolake__meta__split_range__init(o);
	o->bucket = tb_str(t, bucket);
	o->range_id = id;
	o->key = tb_str(t, key);
	op->body_case = IOLAKE__META__OP__BODY_SPLIT_RANGE;
	op->split_range = o;
}

/* The last op added carries range id rid. */
static void routed(struct tb *t, uint64_t rid)
{
	t->ops[t->b.n_ops - 1]->range_id = rid;
}

static size_t ranges(struct meta_state *s, const char *bucket, Iolake__Meta__RangeDesc ***v)
{
	size_t n = 0;
	ck_assert_int_eq(meta_state_list_ranges(s, bucket, v, &n), 0);
	return n;
}

static void free_ranges(Iolake__Meta__RangeDesc **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		meta_state_free_msg(v[i]);
	free(v);
}

/* ------------------------------------------------------------ the root */

START_TEST(test_root_table)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	Iolake__Meta__RangeDesc **v;

	/* No range group yet: a bucket is held by the root (no rows). */
	struct tb *t = tb_new();
	tb_create_bucket(t, 1, 1, "old", "alice");
	tb_put(t, 1, 2, "old", "k", 3);
	ck_assert_int_eq(tb_apply(s, 1, t, res), 2);
	ck_assert_int_eq(res[1].err, 0);
	ck_assert_uint_eq(ranges(s, "old", &v), 0);
	free(v);
	ck_assert(!meta_state_bucket_has_ranges(s, "old"));

	/* Three groups: buckets go to the least loaded, ties to the lowest id. */
	t = tb_new();
	tb_group(t, 1);
	tb_group(t, 2);
	tb_group(t, 3);
	tb_create_bucket(t, 1, 3, "bu1", "alice");
	tb_create_bucket(t, 1, 4, "bu2", "alice");
	tb_create_bucket(t, 1, 5, "bu3", "alice");
	tb_create_bucket(t, 1, 6, "bu4", "alice");
	ck_assert_int_eq(tb_apply(s, 2, t, res), 7);
	for (int i = 0; i < 7; i++)
		ck_assert_int_eq(res[i].err, 0);
	uint64_t want_group[] = { 1, 2, 3, 1 };
	const char *names[] = { "bu1", "bu2", "bu3", "bu4" };
	for (int i = 0; i < 4; i++) {
		ck_assert_uint_eq(ranges(s, names[i], &v), 1);
		ck_assert_uint_eq(v[0]->group, want_group[i]);
		ck_assert_str_eq(v[0]->start, "");
		ck_assert_str_eq(v[0]->end, "");
		ck_assert_uint_eq(v[0]->id, (2ull << 16) | (uint64_t)(3 + i));
		free_ranges(v, 1);
	}
	uint64_t cnt;
	ck_assert_int_eq(meta_state_group_ranges(s, 1, &cnt), 0);
	ck_assert_uint_eq(cnt, 2);

	/* A legacy op routed by range id 0 to a bucket with ranges is stale. */
	t = tb_new();
	tb_put(t, 1, 7, "bu1", "k", 1);
	tb_put(t, 1, 8, "old", "k2", 1);   /* the root's own bucket: fine */
	ck_assert_int_eq(tb_apply(s, 3, t, res), 2);
	ck_assert_int_eq(res[0].err, META_EWRONG_RANGE);
	ck_assert_int_eq(res[1].err, 0);

	/* Split b1's range at "m": [,m) stays in group 1, [m,) goes to the
	 * least loaded (2 and 3 hold one each, 1 two: group 2). */
	uint64_t b1 = (2ull << 16) | 3;
	t = tb_new();
	tb_split(t, "bu1", b1, "m");
	tb_split(t, "bu1", b1, "q");        /* that range is gone now */
	tb_split(t, "bu1", 999, "m");       /* no such range */
	ck_assert_int_eq(tb_apply(s, 4, t, res), 3);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_int_eq(res[1].err, IOL_ENOT_FOUND);
	ck_assert_int_eq(res[2].err, IOL_ENOT_FOUND);
	ck_assert_uint_eq(ranges(s, "bu1", &v), 2);
	ck_assert_str_eq(v[0]->start, "");
	ck_assert_str_eq(v[0]->end, "m");
	ck_assert_uint_eq(v[0]->group, 1);
	ck_assert_uint_eq(v[0]->id, 4ull << 16);
	ck_assert_str_eq(v[1]->start, "m");
	ck_assert_str_eq(v[1]->end, "");
	ck_assert_uint_eq(v[1]->group, 2);
	ck_assert_uint_eq(v[1]->id, (4ull << 16) | 0x8000);
	uint64_t right = v[1]->id;
	free_ranges(v, 2);
	/* A split key at a range's start or outside it is INVALID. */
	t = tb_new();
	tb_split(t, "bu1", right, "m");
	tb_split(t, "bu1", 4ull << 16, "z");
	tb_split(t, "bu1", right, "");
	ck_assert_int_eq(tb_apply(s, 5, t, res), 3);
	ck_assert_int_eq(res[0].err, -EINVAL);
	ck_assert_int_eq(res[1].err, IOL_ENOT_FOUND);   /* z is in the right one */
	ck_assert_int_eq(res[2].err, -EINVAL);

	/* A group holding ranges is not deleted; DeleteBucket drops the rows
	 * and the counts. */
	t = tb_new();
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__DeleteGroup *dg = tb_alloc(t, sizeof(*dg));
	iolake__meta__delete_group__init(dg);
	dg->id = 2;
	op->body_case = IOLAKE__META__OP__BODY_DELETE_GROUP;
	op->delete_group = dg;
	tb_delete_bucket(t, 1, 9, "bu1");
	ck_assert_int_eq(tb_apply(s, 6, t, res), 2);
	ck_assert_int_eq(res[0].err, IOL_ECONFLICT);
	ck_assert_int_eq(res[1].err, 0);
	ck_assert_uint_eq(ranges(s, "bu1", &v), 0);
	free(v);
	ck_assert_int_eq(meta_state_group_ranges(s, 1, &cnt), 0);
	ck_assert_uint_eq(cnt, 1);   /* b4 */
	ck_assert_int_eq(meta_state_group_ranges(s, 2, &cnt), 0);
	ck_assert_uint_eq(cnt, 1);   /* b2 */
	ck_assert_uint_eq(ranges(s, NULL, &v), 3);
	free_ranges(v, 3);

	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

/* ------------------------------------------------------------ a range group */

START_TEST(test_fencing)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	const uint64_t A = 100, B = 200;

	/* Nothing open: every object op is refused. */
	struct tb *t = tb_new();
	tb_put(t, 1, 1, "bkt", "a", 1);
	routed(t, A);
	tb_put(t, 1, 2, "bkt", "a", 1);     /* range id 0 in a group: no bucket row */
	ck_assert_int_eq(tb_apply(s, 1, t, res), 2);
	ck_assert_int_eq(res[0].err, META_EWRONG_RANGE);
	ck_assert_int_eq(res[1].err, IOL_ENOT_FOUND);

	/* Open [,m) as A and [m,) as B; bad bounds are INVALID. */
	t = tb_new();
	tb_open(t, A, "bkt", "", "m");
	tb_open(t, B, "bkt", "m", "");
	tb_open(t, 300, "bkt", "q", "c");   /* start above end */
	tb_open(t, 0, "bkt", "", "");       /* id 0 */
	tb_open(t, A, "bkt", "x", "y");     /* A exists: unchanged */
	ck_assert_int_eq(tb_apply(s, 2, t, res), 5);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_int_eq(res[1].err, 0);
	ck_assert_int_eq(res[2].err, -EINVAL);
	ck_assert_int_eq(res[3].err, -EINVAL);
	ck_assert_int_eq(res[4].err, 0);
	Iolake__Meta__RangeDesc *d;
	ck_assert_int_eq(meta_state_get_open_range(s, A, &d), 0);
	ck_assert_str_eq(d->start, "");
	ck_assert_str_eq(d->end, "m");
	meta_state_free_msg(d);

	/* Each op is admitted only by the range that covers its key. */
	t = tb_new();
	tb_put(t, 1, 3, "bkt", "apple", 10);
	routed(t, A);
	tb_put(t, 1, 4, "bkt", "m", 5000);   /* the split key itself: B's */
	routed(t, B);
	tb_put(t, 1, 5, "bkt", "m", 1);
	routed(t, A);
	tb_put(t, 1, 6, "bkt", "zz", 1);
	routed(t, A);
	tb_put(t, 1, 7, "other", "a", 1);   /* A is bk's */
	routed(t, A);
	tb_put(t, 1, 8, "bkt", "lemon", 7);
	routed(t, A);
	Iolake__Meta__MultipartUpload *u = tb_create_upload(t, "bkt", "mp");
	(void)u;
	routed(t, B);
	ck_assert_int_eq(tb_apply(s, 3, t, res), 7);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_int_eq(res[1].err, 0);
	ck_assert_int_eq(res[2].err, META_EWRONG_RANGE);
	ck_assert_int_eq(res[3].err, META_EWRONG_RANGE);
	ck_assert_int_eq(res[4].err, META_EWRONG_RANGE);
	ck_assert_int_eq(res[5].err, 0);
	ck_assert_int_eq(res[6].err, 0);
	char upload_id[17];
	snprintf(upload_id, sizeof(upload_id), "%s", res[6].upload_id);

	/* Counters. */
	ck_assert_int_eq(meta_state_get_open_range(s, A, &d), 0);
	ck_assert_uint_eq(d->objects, 2);
	ck_assert_uint_eq(d->bytes, 17);
	ck_assert_uint_eq(d->uploads, 0);
	meta_state_free_msg(d);
	ck_assert_int_eq(meta_state_get_open_range(s, B, &d), 0);
	ck_assert_uint_eq(d->objects, 1);
	ck_assert_uint_eq(d->bytes, 5000);
	ck_assert_uint_eq(d->uploads, 1);
	meta_state_free_msg(d);

	/* Retries of applied ops are answered from the request table, even
	 * after their range was sealed; a new op is fenced. */
	t = tb_new();
	tb_seal(t, B, "bkt", "m", "", false);   /* B holds an object: refused */
	tb_delete(t, 1, 9, "bkt", "apple");
	routed(t, A);
	tb_delete(t, 1, 10, "bkt", "lemon");
	routed(t, A);
	ck_assert_int_eq(tb_apply(s, 4, t, res), 3);
	ck_assert_int_eq(res[0].err, META_ENOTEMPTY);
	ck_assert_int_eq(res[1].err, 0);
	ck_assert_int_eq(res[2].err, 0);
	t = tb_new();
	tb_seal(t, A, "bkt", "", "m", false);   /* A is empty now */
	tb_put(t, 1, 3, "bkt", "apple", 10);    /* retry of request 3: deduped */
	routed(t, A);
	tb_put(t, 1, 11, "bkt", "apple", 10);   /* new: A is sealed */
	routed(t, A);
	tb_delete(t, 1, 12, "bkt", "mm");       /* B: open, but no such key */
	routed(t, B);
	ck_assert_int_eq(tb_apply(s, 5, t, res), 4);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_int_eq(res[1].err, 0);
	ck_assert(res[1].deduped);
	ck_assert_int_eq(res[2].err, META_EWRONG_RANGE);
	ck_assert(!res[2].deduped);
	ck_assert_int_eq(res[3].err, IOL_ENOT_FOUND);

	/* Seal again: idempotent; OpenRange does not reopen a sealed range;
	 * unseal does. A seal of an unknown range records it sealed, and a
	 * late OpenRange of it does nothing. */
	t = tb_new();
	tb_seal(t, A, "bkt", "", "m", false);
	tb_open(t, A, "bkt", "", "m");
	tb_put(t, 1, 13, "bkt", "apple", 1);
	routed(t, A);
	tb_seal(t, 77, "bkt", "zz", "", false);
	tb_open(t, 77, "bkt", "zz", "");
	tb_put(t, 1, 14, "bkt", "zzz", 1);
	routed(t, 77);
	tb_seal(t, 78, "bkt", "", "", true);    /* unseal of nothing */
	tb_seal(t, A, "bkt", "", "m", true);
	tb_put(t, 1, 15, "bkt", "apple", 1);
	routed(t, A);
	ck_assert_int_eq(tb_apply(s, 6, t, res), 9);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_int_eq(res[1].err, 0);
	ck_assert_int_eq(res[2].err, META_EWRONG_RANGE);
	ck_assert_int_eq(res[3].err, 0);
	ck_assert_int_eq(res[4].err, 0);
	ck_assert_int_eq(res[5].err, META_EWRONG_RANGE);
	ck_assert_int_eq(res[6].err, IOL_ENOT_FOUND);
	ck_assert_int_eq(res[7].err, 0);
	ck_assert_int_eq(res[8].err, 0);

	/* The upload and the object keep B from sealing; abort and delete,
	 * then it seals. */
	t = tb_new();
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__AbortMultipart *ab = tb_alloc(t, sizeof(*ab));
	iolake__meta__abort_multipart__init(ab);
	ab->bucket = tb_str(t, "bkt");
	ab->key = tb_str(t, "mp");
	ab->upload_id = tb_str(t, upload_id);
	op->body_case = IOLAKE__META__OP__BODY_ABORT_MULTIPART;
	op->abort_multipart = ab;
	op->range_id = A;   /* mp is B's key */
	tb_seal(t, B, "bkt", "m", "", false);
	tb_delete(t, 1, 16, "bkt", "m");
	routed(t, B);
	ck_assert_int_eq(tb_apply(s, 7, t, res), 3);
	ck_assert_int_eq(res[0].err, META_EWRONG_RANGE);
	ck_assert_int_eq(res[1].err, META_ENOTEMPTY);
	ck_assert_int_eq(res[2].err, 0);
	t = tb_new();
	op = tb_op(t, 0, 0);
	ab = tb_alloc(t, sizeof(*ab));
	iolake__meta__abort_multipart__init(ab);
	ab->bucket = tb_str(t, "bkt");
	ab->key = tb_str(t, "mp");
	ab->upload_id = tb_str(t, upload_id);
	op->body_case = IOLAKE__META__OP__BODY_ABORT_MULTIPART;
	op->abort_multipart = ab;
	op->range_id = B;
	tb_seal(t, B, "bkt", "m", "", false);
	ck_assert_int_eq(tb_apply(s, 8, t, res), 2);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_int_eq(res[1].err, 0);
	ck_assert_int_eq(meta_state_get_open_range(s, B, &d), 0);
	ck_assert(d->sealed);
	ck_assert_uint_eq(d->objects, 0);
	ck_assert_uint_eq(d->bytes, 0);
	ck_assert_uint_eq(d->uploads, 0);
	meta_state_free_msg(d);

	Iolake__Meta__RangeDesc **v;
	size_t n;
	ck_assert_int_eq(meta_state_list_open_ranges(s, &v, &n), 0);
	ck_assert_uint_eq(n, 3);   /* 77, A, B; nothing for 78 */
	free_ranges(v, n);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

/* A listing bounded to a range sees only its keys. */
START_TEST(test_bounded_list)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	struct tb *t = tb_new();
	tb_open(t, 1, "bkt", "", "");
	const char *keys[] = { "a", "b/1", "b/2", "b/3", "c", "d" };
	for (int i = 0; i < 6; i++) {
		tb_put(t, 1, (uint64_t)i + 1, "bkt", keys[i], 1);
		routed(t, 1);
	}
	ck_assert_int_eq(tb_apply(s, 1, t, res), 7);
	struct meta_list_req lr = { .bucket = "bkt", .delimiter = "/", .max_keys = 100,
				    .lo = "b/2", .hi = "d" };
	struct meta_list_page p;
	ck_assert_int_eq(meta_list(s, &lr, &p), 0);
	ck_assert_uint_eq(p.n, 2);
	ck_assert_str_eq(p.entries[0].name, "b/");   /* from b/2, below lo's own key */
	ck_assert(p.entries[0].is_prefix);
	ck_assert_str_eq(p.entries[1].name, "c");
	ck_assert(!p.truncated);
	meta_list_page_free(&p);
	lr.delimiter = NULL;
	lr.lo = "b/1";
	lr.hi = "b/3";
	ck_assert_int_eq(meta_list(s, &lr, &p), 0);
	ck_assert_uint_eq(p.n, 2);
	ck_assert_str_eq(p.entries[0].name, "b/1");
	ck_assert_str_eq(p.entries[1].name, "b/2");
	meta_list_page_free(&p);
	/* the token round trip */
	char tok[META_LIST_TOKEN_MAX], back[META_KEY_MAX + 1];
	meta_list_token_encode("m/5", 3, tok);
	ck_assert_int_eq(meta_list_token_decode(tok, back, sizeof(back)), 3);
	ck_assert_str_eq(back, "m/5");
	ck_assert_int_lt(meta_list_token_decode("!!", back, sizeof(back)), 0);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

/* ------------------------------------------------------------ client side */

static Iolake__Meta__RangeDesc *desc(uint64_t id, const char *b, const char *s, const char *e,
				     uint64_t g)
{
	Iolake__Meta__RangeDesc *d = calloc(1, sizeof(*d));
	iolake__meta__range_desc__init(d);
	d->id = id;
	d->bucket = (char *)b;
	d->start = (char *)s;
	d->end = (char *)e;
	d->group = g;
	return d;
}

/* ------------------------------------------------- moving records */

/* A gw_data layout naming (pg 3, id all `tag`): layout.proto 6 and 7. */
static ProtobufCBinaryData layout(struct tb *t, uint8_t tag)
{
	uint8_t *b = tb_alloc(t, 20);
	b[0] = 0x32;
	b[1] = 16;
	memset(b + 2, tag, 16);
	b[18] = 0x38;
	b[19] = 3;
	return (ProtobufCBinaryData){ .len = 20, .data = b };
}

static bool refd(struct meta_state *s, uint8_t tag)
{
	uint8_t id[16];
	const uint8_t *ids[1] = { id };
	bool b = false;
	memset(id, tag, sizeof(id));
	ck_assert_int_eq(meta_state_check_refs(s, 3, ids, 1, &b), 0);
	return b;
}

static void tb_ingest(struct tb *t, uint64_t id, const char *start, const char *end,
		      const struct meta_range_pairs *p, const uint8_t *after, size_t after_len,
		      size_t skip)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__IngestRange *in = tb_alloc(t, sizeof(*in));
	iolake__meta__ingest_range__init(in);
	in->range = tb_range(t, id, "mpb", start, end);
	in->after.data = tb_alloc(t, after_len + 1);
	memcpy(in->after.data, after, after_len);
	in->after.len = after_len;
	in->upto.data = tb_alloc(t, p->upto_len + 1);
	if (p->upto_len)
		memcpy(in->upto.data, p->upto, p->upto_len);
	in->upto.len = p->upto_len;
	in->n_keys = in->n_values = p->n - skip;
	in->keys = tb_alloc(t, (p->n + 1) * sizeof(*in->keys));
	in->values = tb_alloc(t, (p->n + 1) * sizeof(*in->values));
	for (size_t i = skip; i < p->n; i++) {
		in->keys[i - skip] = p->keys[i];     /* borrowed: p outlives the apply */
		in->values[i - skip] = p->values[i];
	}
	op->body_case = IOLAKE__META__OP__BODY_INGEST_RANGE;
	op->ingest_range = in;
}

/* The records of [b, end) — objects, an upload and its parts, their shard
 * references — copied from one group's state to another's in batches of
 * one record (IngestRange from ReadRange's pairs), a duplicate and a
 * malformed batch refused, then dropped from the source (DropRange). */
START_TEST(test_move_records)
{
	char d1[64], d2[64];
	tmpdir(d1);
	tmpdir(d2);
	struct meta_state *src = open_at(d1), *dst = open_at(d2);
	uint64_t idx1 = 0, idx2 = 0;
	struct tb *t = tb_new();
	tb_open(t, 5, "mpb", "", "");
	ck_assert_int_eq(tb_apply(src, ++idx1, t, res), 1);
	t = tb_new();
	const char *keys[] = { "a1", "m1", "z1" };
	for (int i = 0; i < 3; i++) {
		Iolake__Meta__PutObject *po = tb_put(t, 0, 0, "mpb", keys[i], 9000);
		po->record->segments[0]->data_layout = layout(t, (uint8_t)(0xa0 + i));
		routed(t, 5);
	}
	tb_create_upload(t, "mpb", "big");
	routed(t, 5);
	ck_assert_int_eq(tb_apply(src, ++idx1, t, res), 4);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(res[i].err, 0);
	char uid[17];
	snprintf(uid, sizeof(uid), "%s", res[3].upload_id);
	t = tb_new();
	for (uint32_t n = 1; n <= 2; n++) {
		Iolake__Meta__Segment *seg = tb_part(t, uid, n, 5 << 20,
						     "0123456789abcdef0123456789abcdef");
		seg->data_layout = layout(t, (uint8_t)(0xb0 + n));
		routed(t, 5);
	}
	ck_assert_int_eq(tb_apply(src, ++idx1, t, res), 2);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_int_eq(res[1].err, 0);
	ck_assert(refd(src, 0xb1) && refd(src, 0xa1));

	/* ReadRange only reads a sealed range */
	struct meta_range_pairs p;
	ck_assert_int_eq(meta_state_read_range(src, 5, "mpb", "b", "", NULL, 0, 1, 1 << 20, &p),
			 META_EWRONG_RANGE);
	t = tb_new();
	tb_seal(t, 5, "mpb", "", "", false);
	t->ops[0]->seal_range->for_move = true;   /* not empty: fine */
	ck_assert_int_eq(tb_apply(src, ++idx1, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);
	/* never unsealed again (a failed DeleteBucket's unseal must not) */
	t = tb_new();
	tb_seal(t, 5, "mpb", "", "", true);
	ck_assert_int_eq(tb_apply(src, ++idx1, t, res), 1);
	ck_assert_int_eq(res[0].err, IOL_ECONFLICT);

	/* copy [b, end) one record at a time */
	uint8_t cur[2048];
	size_t cur_len = 0, records = 0, batches = 0;
	for (;;) {
		ck_assert_int_eq(meta_state_read_range(src, 5, "mpb", "b", "", cur, cur_len, 1,
						       1 << 20, &p), 0);
		records += p.records;
		if (p.n && p.keys[0].data[0] == 'U') {
			/* the upload's parts ride with it */
			ck_assert_uint_eq(p.n, 3);
			ck_assert_int_eq(p.keys[1].data[0], 'P');
			/* a part without its upload is refused */
			t = tb_new();
			tb_ingest(t, 9, "b", "", &p, cur, cur_len, 1);
			ck_assert_int_eq(tb_apply(dst, ++idx2, t, res), 1);
			ck_assert_int_eq(res[0].err, -EINVAL);
		}
		t = tb_new();
		tb_ingest(t, 9, "b", "", &p, cur, cur_len, 0);
		ck_assert_int_eq(tb_apply(dst, ++idx2, t, res), 1);
		ck_assert_int_eq(res[0].err, 0);
		batches++;
		/* the same batch again: applied before, nothing counted twice */
		t = tb_new();
		tb_ingest(t, 9, "b", "", &p, cur, cur_len, 0);
		ck_assert_int_eq(tb_apply(dst, ++idx2, t, res), 1);
		ck_assert_int_eq(res[0].err, 0);
		if (p.upto_len)
			memcpy(cur, p.upto, p.upto_len);
		cur_len = p.upto_len;
		bool done = p.done;
		meta_range_pairs_free(&p);
		if (done)
			break;
	}
	ck_assert_uint_eq(records, 3);   /* m1, z1, the upload */
	Iolake__Meta__RangeDesc *d = NULL;
	ck_assert_int_eq(meta_state_get_open_range(dst, 9, &d), 0);
	ck_assert(d->sealed);
	ck_assert_uint_eq(d->objects, 2);
	ck_assert_uint_eq(d->bytes, 18000);
	ck_assert_uint_eq(d->uploads, 1);
	meta_state_free_msg(d);
	Iolake__Meta__ObjectRecord *r = NULL;
	ck_assert_int_eq(meta_state_head_object(dst, "mpb", "m1", &r), 0);
	meta_state_free_msg(r);
	ck_assert_int_eq(meta_state_head_object(dst, "mpb", "a1", &r), IOL_ENOT_FOUND);
	Iolake__Meta__MultipartUpload *u = NULL;
	ck_assert_int_eq(meta_state_get_upload(dst, "mpb", "big", uid, &u), 0);
	meta_state_free_msg(u);
	Iolake__Meta__Part *pt = NULL;
	ck_assert_int_eq(meta_state_get_part(dst, uid, 2, &pt), 0);
	meta_state_free_msg(pt);
	ck_assert(refd(dst, 0xa1) && refd(dst, 0xa2) && refd(dst, 0xb1) && refd(dst, 0xb2));
	ck_assert(!refd(dst, 0xa0));

	/* DropRange: refused over an open range, then the span goes */
	t = tb_new();
	tb_open(t, 6, "mpb", "y", "");
	ck_assert_int_eq(tb_apply(src, ++idx1, t, res), 1);
	t = tb_new();
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__DropRange *dr = tb_alloc(t, sizeof(*dr));
	iolake__meta__drop_range__init(dr);
	dr->bucket = tb_str(t, "mpb");
	dr->start = tb_str(t, "b");
	dr->end = tb_str(t, "");
	dr->max = 2;
	op->body_case = IOLAKE__META__OP__BODY_DROP_RANGE;
	op->drop_range = dr;
	ck_assert_int_eq(tb_apply(src, ++idx1, t, res), 1);
	ck_assert_int_eq(res[0].err, IOL_ECONFLICT);
	t = tb_new();
	tb_seal(t, 6, "mpb", "y", "", false);
	t->ops[0]->seal_range->for_move = true;
	ck_assert_int_eq(tb_apply(src, ++idx1, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);
	uint64_t dropped = 0;
	for (int i = 0; i < 5; i++) {
		t = tb_new();
		op = tb_op(t, 0, 0);
		dr = tb_alloc(t, sizeof(*dr));
		iolake__meta__drop_range__init(dr);
		dr->bucket = tb_str(t, "mpb");
		dr->start = tb_str(t, "b");
		dr->end = tb_str(t, "");
		dr->max = 2;
		op->body_case = IOLAKE__META__OP__BODY_DROP_RANGE;
		op->drop_range = dr;
		ck_assert_int_eq(tb_apply(src, ++idx1, t, res), 1);
		ck_assert_int_eq(res[0].err, 0);
		dropped += res[0].generation;
		if (!res[0].generation)
			break;
	}
	ck_assert_uint_eq(dropped, 3);
	ck_assert_int_eq(meta_state_head_object(src, "mpb", "z1", &r), IOL_ENOT_FOUND);
	ck_assert_int_eq(meta_state_head_object(src, "mpb", "a1", &r), 0);
	meta_state_free_msg(r);
	ck_assert_int_eq(meta_state_get_upload(src, "mpb", "big", uid, &u), IOL_ENOT_FOUND);
	ck_assert_int_eq(meta_state_get_part(src, uid, 1, &pt), IOL_ENOT_FOUND);
	ck_assert(refd(src, 0xa0));
	ck_assert(!refd(src, 0xa1) && !refd(src, 0xa2) && !refd(src, 0xb1) && !refd(src, 0xb2));
	meta_state_close(src);
	meta_state_close(dst);
	rm_rf(d1);
	rm_rf(d2);
}
END_TEST

START_TEST(test_table)
{
	struct meta_range_table t = { 0 };
	Iolake__Meta__RangeDesc *v[4] = { desc(3, "bkt", "m", "t", 2), desc(1, "bkt", "", "d", 1),
					  desc(4, "bkt", "t", "", 3), desc(2, "bkt", "d", "m", 1) };
	ck_assert_int_eq(meta_range_table_set(&t, "bkt", v, 4), 0);
	ck_assert_uint_eq(t.n, 4);
	ck_assert_uint_eq(meta_range_find(&t, ""), 0);
	ck_assert_uint_eq(meta_range_find(&t, "c"), 0);
	ck_assert_uint_eq(meta_range_find(&t, "d"), 1);
	ck_assert_uint_eq(meta_range_find(&t, "m"), 2);
	ck_assert_uint_eq(meta_range_find(&t, "s~"), 2);
	ck_assert_uint_eq(meta_range_find(&t, "t"), 3);
	ck_assert_uint_eq(meta_range_find(&t, "\xff"), 3);
	ck_assert(meta_range_may_hold_prefix(&t, 1, "e"));
	ck_assert(!meta_range_may_hold_prefix(&t, 2, "e"));   /* starts at m > e... */
	ck_assert(meta_range_may_hold_prefix(&t, 2, "m"));
	ck_assert(meta_range_may_hold_prefix(&t, 2, ""));
	/* a gap, an overlap, another bucket: refused */
	v[3]->end = (char *)"l";
	ck_assert_int_eq(meta_range_table_set(&t, "bkt", v, 4), -EINVAL);
	v[3]->end = (char *)"m";
	v[0]->bucket = (char *)"other";
	ck_assert_int_eq(meta_range_table_set(&t, "bkt", v, 4), -EINVAL);
	ck_assert_int_eq(meta_range_table_set(&t, "bkt", NULL, 0), 0);
	ck_assert_uint_eq(t.n, 0);
	meta_range_table_clear(&t);
	for (int i = 0; i < 4; i++)
		free(v[i]);
}
END_TEST

/* A model bucket split into ranges, listed page by page through the walk
 * exactly as meta/route.c drives it: each range answers what a bounded
 * meta_list would (its keys and common prefixes after the marker, at most
 * the page's remainder), and the pages must concatenate to the model. */
static const char *mkeys[] = { "a1", "a2", "c/1", "c/2", "d", "d/1", "d/2", "e", "m/1", "m/4",
			       "m/5", "m/6", "m/7", "n", "t", "t/1", "u", "z" };
#define NK (sizeof(mkeys) / sizeof(mkeys[0]))
static const char *bounds[] = { "", "d", "m/5", "t", "" };   /* 4 ranges */

/* The listing of range r after marker (entries > marker), at most max:
 * names into out; *trunc when more follow in the range. */
static size_t range_page(int r, const char *delim, const char *marker, unsigned max,
			 char out[][32], bool *trunc)
{
	size_t n = 0;
	*trunc = false;
	for (size_t i = 0; i < NK; i++) {
		const char *k = mkeys[i];
		if (strcmp(k, bounds[r]) < 0 || (bounds[r + 1][0] && strcmp(k, bounds[r + 1]) >= 0))
			continue;
		char name[32];
		snprintf(name, sizeof(name), "%s", k);
		const char *d = delim ? strstr(k, delim) : NULL;
		if (d)
			name[d - k + 1] = 0;
		if (strcmp(name, marker) <= 0)
			continue;
		if (n && !strcmp(out[n - 1], name))
			continue;
		if (n == max) {
			*trunc = true;
			break;
		}
		snprintf(out[n++], 32, "%s", name);
	}
	return n;
}

static size_t model_list(const char *delim, char out[][32])
{
	size_t n = 0;
	for (size_t i = 0; i < NK; i++) {
		char name[32];
		snprintf(name, sizeof(name), "%s", mkeys[i]);
		const char *d = delim ? strstr(mkeys[i], delim) : NULL;
		if (d)
			name[d - mkeys[i] + 1] = 0;
		if (n && !strcmp(out[n - 1], name))
			continue;
		snprintf(out[n++], 32, "%s", name);
	}
	return n;
}

static size_t walk_all(const char *delim, unsigned page, char got[][32], size_t *pages)
{
	size_t n = 0;
	char marker[32] = "";
	*pages = 0;
	for (;;) {
		struct meta_range_walk w;
		meta_range_walk_init(&w, page, marker);
		int r = 0;
		while (r < 3 && bounds[r + 1][0] && strcmp(marker, bounds[r + 1]) >= 0)
			r++;
		size_t rounds = 0;
		while (!w.done) {
			char ents[NK][32];
			bool trunc;
			size_t k = range_page(r, delim, w.marker, page - (unsigned)w.n, ents, &trunc);
			const char *names[NK];
			size_t lens[NK];
			bool take[NK];
			for (size_t i = 0; i < k; i++) {
				names[i] = ents[i];
				lens[i] = strlen(ents[i]);
			}
			meta_range_walk_take(&w, names, lens, k, trunc, r < 3, take);
			for (size_t i = 0; i < k; i++)
				if (take[i])
					memcpy(got[n++], ents[i], 32);
			r++;
			ck_assert_uint_le(++rounds, 4);   /* O(ranges in the page) */
		}
		(*pages)++;
		ck_assert_uint_le(w.n, page);
		if (!w.truncated)
			return n;
		ck_assert_uint_lt(w.marker_len, sizeof(marker));
		memcpy(marker, w.marker, w.marker_len + 1);
		ck_assert_uint_lt(*pages, 100);
	}
}

START_TEST(test_walk)
{
	char want[NK][32], got[4 * NK][32];
	for (int dl = 0; dl < 2; dl++) {
		const char *delim = dl ? "/" : NULL;
		size_t nw = model_list(delim, want);
		for (unsigned page = 1; page <= NK + 1; page++) {
			size_t pages;
			size_t ng = walk_all(delim, page, got, &pages);
			ck_assert_msg(ng == nw, "delim=%d page=%u: %zu entries, want %zu", dl, page,
				      ng, nw);
			for (size_t i = 0; i < nw; i++)
				ck_assert_msg(!strcmp(got[i], want[i]), "delim=%d page=%u: [%zu] %s, "
					      "want %s", dl, page, i, got[i], want[i]);
		}
	}
	/* The prefix "m/" spans the m/5 boundary: both ranges list it; the
	 * walk takes it once even when the second range is asked with a
	 * marker below it. */
	struct meta_range_walk w;
	meta_range_walk_init(&w, 10, "");
	const char *p1[] = { "a1", "m/" }, *p2[] = { "m/", "n" };
	size_t l1[] = { 2, 2 }, l2[] = { 2, 1 };
	bool take[2];
	ck_assert_uint_eq(meta_range_walk_take(&w, p1, l1, 2, false, true, take), 2);
	ck_assert(!w.done);
	ck_assert_uint_eq(meta_range_walk_take(&w, p2, l2, 2, false, false, take), 1);
	ck_assert(!take[0] && take[1]);
	ck_assert(w.done && !w.truncated);
	/* A full page with ranges left is reported truncated; a range that
	 * said truncated ends the page truncated. */
	meta_range_walk_init(&w, 2, "");
	ck_assert_uint_eq(meta_range_walk_take(&w, p1, l1, 2, false, true, take), 2);
	ck_assert(w.done && w.truncated);
	meta_range_walk_init(&w, 5, "");
	meta_range_walk_take(&w, p1, l1, 2, true, false, take);
	ck_assert(w.done && w.truncated);
	ck_assert_str_eq(w.marker, "m/");
	/* max 0: nothing to do */
	meta_range_walk_init(&w, 0, "x");
	ck_assert(w.done && !w.truncated);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ranges");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_root_table);
	tcase_add_test(tc, test_fencing);
	tcase_add_test(tc, test_bounded_list);
	tcase_add_test(tc, test_move_records);
	tcase_add_test(tc, test_table);
	tcase_add_test(tc, test_walk);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
