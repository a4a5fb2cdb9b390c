/*
 * test_part_rows.c — multipart part rows (meta/state_prows.c, issue 18) on
 * real RocksDB under /dev/shm:
 *
 *   complete_and_read  an upload with part_rows: 600 parts (one uploaded
 *               twice: the later wins, the first is queued for GC),
 *               Complete of all but the last; the record holds no
 *               segments, part_rows and a part_list of 599 (number, size);
 *               one part is found by an object offset (a binary search
 *               over the cumulative sizes, as gateway/s3_prows.c does) and
 *               read with one get; the rows list in pages (1000 with
 *               layouts, 10,000 without), the left-out part's row is gone
 *               and queued; every kept row's shards are referenced.
 *   gc_batches  DeleteObject queues one small entry (the record without
 *               its part_list); FreePartRows is refused while the record
 *               (or a noncurrent version) names the rows, then turns them
 *               into GC entries 256 rows at a time, one entry a batch
 *               (more, more, done), until no row and no reference is
 *               left; again is a no-op. An Abort queues one entry and
 *               leaves its rows to FreePartRows the same way.
 *   versions    in a versioned bucket a noncurrent multipart version keeps
 *               its rows (and reads back) after a newer one is completed;
 *               deleting that version queues it, and its rows then go.
 *   move        a sealed range holding a completed object: ReadRange
 *               carries its rows after the record ('p', MOVE_TABLES) in
 *               bounded batches, IngestRange adds their references in the
 *               target, DropRange removes rows and references from the
 *               source; the object's rows read back from the target.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "meta/state.h"
#include "meta/state_ver.h"
#include "meta_test_util.h"

static struct meta_op_result res[META_BATCH_MAX_OPS];
#define ETAG "0123456789abcdef0123456789abcdef"
#define ETAG2 "fedcba9876543210fedcba9876543210"
#define NP 600

/* A gw_data layout naming (pg 3, id: 0x5a, then be16 tag, then zeros). */
static ProtobufCBinaryData layout(struct tb *t, uint16_t tag)
{
	uint8_t *b = tb_alloc(t, 20);
	memset(b, 0, 20);
	b[0] = 0x32;
	b[1] = 16;
	b[2] = 0x5a;
	b[3] = (uint8_t)(tag >> 8);
	b[4] = (uint8_t)tag;
	b[18] = 0x38;
	b[19] = 3;
	return (ProtobufCBinaryData){ .len = 20, .data = b };
}

static bool refd(struct meta_state *s, uint16_t tag)
{
	uint8_t id[16] = { 0x5a, (uint8_t)(tag >> 8), (uint8_t)tag };
	const uint8_t *ids[1] = { id };
	bool b = false;
	ck_assert_int_eq(meta_state_check_refs(s, 3, ids, 1, &b), 0);
	return b;
}

static uint64_t part_size(uint32_t n)
{
	return 1000 + (n * 7919u) % 5000;
}

static uint64_t gc_len(struct meta_state *s)
{
	uint64_t n;
	ck_assert_int_eq(meta_state_gc_count(s, &n), 0);
	return n;
}

/* Bucket mpb (versioned when asked), an upload of mpb/big with part rows
 * and parts 1..n (layout tag = part number); part 7 is uploaded twice
 * (first with tag 9999). Returns the upload id in uid. */
static void upload(struct meta_state *s, uint64_t *idx, bool bucket, uint32_t n, char uid[17])
{
	struct tb *t = tb_new();
	if (bucket)
		tb_create_bucket(t, 0, 0, "mpb", "alice");
	Iolake__Meta__MultipartUpload *u = tb_create_upload(t, "mpb", "big");
	u->part_rows = true;
	int nops = bucket ? 2 : 1;
	ck_assert_int_eq(tb_apply(s, ++*idx, t, res), nops);
	ck_assert_int_eq(res[nops - 1].err, 0);
	snprintf(uid, 17, "%s", res[nops - 1].upload_id);
	t = tb_new();
	tb_part(t, uid, 7, part_size(7), ETAG2)->data_layout = layout(t, 9999);
	ck_assert_int_eq(tb_apply(s, ++*idx, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);
	for (uint32_t i = 1; i <= n; i += 100) {
		t = tb_new();
		for (uint32_t j = i; j < i + 100 && j <= n; j++)
			tb_part(t, uid, j, part_size(j), ETAG)->data_layout = layout(t, (uint16_t)j);
		int k = tb_apply(s, ++*idx, t, res);
		for (int j = 0; j < k; j++)
			ck_assert_int_eq(res[j].err, 0);
	}
	ck_assert(refd(s, 7) && !refd(s, 9999));   /* the later upload of part 7 */
}

static void complete(struct meta_state *s, uint64_t *idx, const char *uid, uint32_t n)
{
	static uint32_t nums[META_PARTS_MAX];
	static const char *etags[META_PARTS_MAX];
	for (uint32_t i = 0; i < n; i++) {
		nums[i] = i + 1;
		etags[i] = ETAG;
	}
	struct tb *t = tb_new();
	tb_complete(t, uid, nums, etags, n);
	ck_assert_int_eq(tb_apply(s, ++*idx, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);
}

/* The part holding object byte pos: the binary search of s3_prows.c. */
static size_t part_at(const Iolake__Meta__ObjectRecord *r, const uint64_t *cum, uint64_t pos)
{
	size_t lo = 0, hi = r->n_part_list;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cum[mid + 1] > pos)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static size_t count_rows(struct meta_state *s, const char *uid, bool no_layouts)
{
	size_t total = 0;
	uint32_t marker = 0;
	for (int pages = 0;; pages++) {
		ck_assert_int_lt(pages, 100);
		Iolake__Meta__Part **v = NULL;
		size_t n = 0;
		bool trunc = false;
		ck_assert_int_eq(meta_state_list_part_rows(s, "mpb", "big", uid, marker, 0, no_layouts,
							   &v, &n, &trunc), 0);
		ck_assert_uint_le(n, no_layouts ? META_PARTS_MAX : 1000);
		for (size_t i = 0; i < n; i++) {
			ck_assert_uint_gt(v[i]->part_number, marker);
			marker = v[i]->part_number;
			ck_assert_ptr_nonnull(v[i]->segment);
			ck_assert_uint_eq(v[i]->segment->data_layout.len, no_layouts ? 0 : 20);
			meta_state_free_msg(v[i]);
		}
		free(v);
		total += n;
		if (!trunc)
			break;
	}
	return total;
}

START_TEST(complete_and_read)
{
	char dir[64], uid[17];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	uint64_t idx = 0;
	upload(s, &idx, true, NP, uid);
	ck_assert_uint_eq(gc_len(s), 1);            /* the first upload of part 7 */
	ck_assert_uint_eq(count_rows(s, uid, false), NP);
	complete(s, &idx, uid, NP - 1);
	ck_assert_uint_eq(gc_len(s), 2);            /* and part NP, left out */

	Iolake__Meta__ObjectRecord *r = NULL;
	ck_assert_int_eq(meta_state_head_object(s, "mpb", "big", &r), 0);
	ck_assert(r->part_rows);
	ck_assert_uint_eq(r->n_segments, 0);
	ck_assert_uint_eq(r->data_layout.len, 0);
	ck_assert_uint_eq(r->parts_count, NP - 1);
	ck_assert_uint_eq(r->n_part_list, NP - 1);
	ck_assert_str_eq(r->upload_id, uid);
	uint64_t *cum = calloc(NP, sizeof(*cum)), total = 0;
	for (size_t i = 0; i < r->n_part_list; i++) {
		ck_assert_uint_eq(r->part_list[i]->part_number, i + 1);
		ck_assert_uint_eq(r->part_list[i]->size, part_size((uint32_t)i + 1));
		cum[i] = total;
		total += r->part_list[i]->size;
	}
	cum[r->n_part_list] = total;
	ck_assert_uint_eq(r->size, total);
	/* The record stays a summary: well under 50 bytes a part. */
	size_t packed = iolake__meta__object_record__get_packed_size(r);
	ck_assert_uint_lt(packed, 200 + 50 * (NP - 1));

	/* One part by offset: the byte at the middle, one get. */
	uint64_t pos = total / 2;
	size_t i = part_at(r, cum, pos);
	ck_assert(cum[i] <= pos && pos < cum[i + 1]);
	Iolake__Meta__Part *p = NULL;
	uint32_t pn = r->part_list[i]->part_number;
	ck_assert_int_eq(meta_state_get_part_row(s, "mpb", "big", uid, pn, &p), 0);
	ck_assert_uint_eq(p->size, r->part_list[i]->size);
	ck_assert_uint_eq(p->segment->data_layout.len, 20);
	ck_assert_uint_eq(p->segment->data_layout.data[4], (uint8_t)pn);
	meta_state_free_msg(p);
	/* the first and last bytes */
	ck_assert_uint_eq(part_at(r, cum, 0), 0);
	ck_assert_uint_eq(part_at(r, cum, total - 1), NP - 2);
	ck_assert_uint_eq(part_at(r, cum, total), NP - 1);   /* past the end */
	free(cum);

	/* The rows: NP - 1 kept, NP gone (queued), pages bounded. */
	ck_assert_uint_eq(count_rows(s, uid, false), NP - 1);
	ck_assert_uint_eq(count_rows(s, uid, true), NP - 1);
	ck_assert_int_eq(meta_state_get_part_row(s, "mpb", "big", uid, NP, &p), IOL_ENOT_FOUND);
	Iolake__Meta__MultipartUpload *u = NULL;
	ck_assert_int_eq(meta_state_get_upload(s, "mpb", "big", uid, &u), IOL_ENOT_FOUND);
	for (uint16_t k = 1; k < NP; k++)
		ck_assert(refd(s, k));
	ck_assert(!refd(s, NP) && !refd(s, 9999));
	meta_state_free_msg(r);

	/* A restart rebuilds nothing and loses nothing. */
	meta_state_close(s);
	s = open_at(dir);
	ck_assert(refd(s, 1) && refd(s, NP - 1));
	ck_assert_uint_eq(count_rows(s, uid, false), NP - 1);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

static void tb_free_rows(struct tb *t, const char *uid, uint32_t max)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__FreePartRows *f = tb_alloc(t, sizeof(*f));
	iolake__meta__free_part_rows__init(f);
	f->bucket = tb_str(t, "mpb");
	f->key = tb_str(t, "big");
	f->upload_id = tb_str(t, uid);
	f->max_rows = max;
	op->body_case = IOLAKE__META__OP__BODY_FREE_PART_ROWS;
	op->free_part_rows = f;
}

/* FreePartRows until done: the number of calls. */
static int free_all(struct meta_state *s, uint64_t *idx, const char *uid)
{
	int calls = 0;
	for (;;) {
		struct tb *t = tb_new();
		tb_free_rows(t, uid, 0);
		ck_assert_int_eq(tb_apply(s, ++*idx, t, res), 1);
		ck_assert_int_eq(res[0].err, 0);
		calls++;
		ck_assert_int_lt(calls, 100);
		if (!res[0].part_rows_more)
			return calls;
	}
}

START_TEST(gc_batches)
{
	char dir[64], uid[17];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	uint64_t idx = 0;
	upload(s, &idx, true, NP, uid);
	/* refused while the upload is open */
	struct tb *t = tb_new();
	tb_free_rows(t, uid, 0);
	ck_assert_int_eq(tb_apply(s, ++idx, t, res), 1);
	ck_assert_int_eq(res[0].err, IOL_ECONFLICT);
	complete(s, &idx, uid, NP);
	/* refused while the object names them */
	t = tb_new();
	tb_free_rows(t, uid, 0);
	ck_assert_int_eq(tb_apply(s, ++idx, t, res), 1);
	ck_assert_int_eq(res[0].err, IOL_ECONFLICT);
	ck_assert_uint_eq(count_rows(s, uid, false), NP);

	uint64_t before = gc_len(s);
	t = tb_new();
	tb_delete(t, 0, 0, "mpb", "big");
	ck_assert_int_eq(tb_apply(s, ++idx, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_uint_eq(gc_len(s), before + 1);
	/* The entry names the version, not 600 layouts. */
	Iolake__Meta__GcEntry **v = NULL;
	size_t n = 0;
	bool trunc;
	ck_assert_int_eq(meta_state_list_gc(s, 0, 0, 0, &v, &n, &trunc), 0);
	ck_assert_uint_eq(n, before + 1);
	const Iolake__Meta__ObjectRecord *q = v[n - 1]->record;
	ck_assert(q->part_rows);
	ck_assert_str_eq(q->upload_id, uid);
	ck_assert_uint_eq(q->n_part_list, 0);
	ck_assert_uint_eq(q->n_segments, 0);
	ck_assert_uint_lt(iolake__meta__object_record__get_packed_size(q), 300);
	for (size_t i = 0; i < n; i++)
		meta_state_free_msg(v[i]);
	free(v);
	ck_assert(refd(s, 1) && refd(s, NP));   /* the rows still hold them */

	/* 600 rows, 256 a batch: three calls, then nothing left. */
	ck_assert_int_eq(free_all(s, &idx, uid), 3);
	ck_assert_uint_eq(count_rows(s, uid, false), 0);
	ck_assert_uint_eq(gc_len(s), before + 1 + 3);   /* one entry a batch */
	for (uint16_t k = 1; k <= NP; k++)
		ck_assert(!refd(s, k));
	/* again: nothing, no more entries */
	ck_assert_int_eq(free_all(s, &idx, uid), 1);
	ck_assert_uint_eq(gc_len(s), before + 1 + 3);
	/* the batches' entries name every part's layout once: 256+256+88 */
	ck_assert_int_eq(meta_state_list_gc(s, 0, 0, 0, &v, &n, &trunc), 0);
	ck_assert_uint_eq(n, before + 1 + 3);
	size_t segs = 0;
	for (size_t i = n - 3; i < n; i++) {
		ck_assert_uint_le(v[i]->record->n_segments, 256);
		for (size_t j = 0; j < v[i]->record->n_segments; j++)
			ck_assert_uint_eq(v[i]->record->segments[j]->data_layout.len, 20);
		segs += v[i]->record->n_segments;
	}
	ck_assert_uint_eq(segs, NP);
	ck_assert_uint_eq(v[n - 1]->record->n_segments, NP - 512);
	for (size_t i = 0; i < n; i++)
		meta_state_free_msg(v[i]);
	free(v);
	/* An Abort of an upload with rows queues one entry naming them, and
	 * leaves them to FreePartRows. */
	upload(s, &idx, false, NP, uid);
	before = gc_len(s);
	t = tb_new();
	Iolake__Meta__Op *aop = tb_op(t, 0, 0);
	Iolake__Meta__AbortMultipart *ab = tb_alloc(t, sizeof(*ab));
	iolake__meta__abort_multipart__init(ab);
	ab->bucket = tb_str(t, "mpb");
	ab->key = tb_str(t, "big");
	ab->upload_id = tb_str(t, uid);
	aop->body_case = IOLAKE__META__OP__BODY_ABORT_MULTIPART;
	aop->abort_multipart = ab;
	ck_assert_int_eq(tb_apply(s, ++idx, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_uint_eq(gc_len(s), before + 1);
	ck_assert_uint_eq(count_rows(s, uid, false), NP);
	ck_assert(refd(s, 1));
	ck_assert_int_eq(free_all(s, &idx, uid), 3);
	ck_assert_uint_eq(count_rows(s, uid, false), 0);
	ck_assert(!refd(s, 1) && !refd(s, NP));
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

START_TEST(versions)
{
	char dir[64], uid1[17], uid2[17];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	uint64_t idx = 0;
	upload(s, &idx, true, 50, uid1);
	/* versioned from here on: ops stamped ENABLED, as the gateway does */
	struct tb *t = tb_new();
	tb_complete(t, uid1, (const uint32_t[]){ 1, 2, 3 }, (const char *[]){ ETAG, ETAG, ETAG }, 3);
	t->ops[0]->versioning = IOLAKE__META__VERSIONING_STATE__VERSIONING_ENABLED;
	ck_assert_int_eq(tb_apply(s, ++idx, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);
	char vid1[24];
	snprintf(vid1, sizeof(vid1), "%s", res[0].version_id);
	ck_assert(vid1[0]);
	upload(s, &idx, false, 20, uid2);
	t = tb_new();
	tb_complete(t, uid2, (const uint32_t[]){ 1, 2 }, (const char *[]){ ETAG, ETAG }, 2);
	t->ops[0]->versioning = IOLAKE__META__VERSIONING_STATE__VERSIONING_ENABLED;
	ck_assert_int_eq(tb_apply(s, ++idx, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert(res[0].retained);
	/* the noncurrent version keeps its rows, and they are not garbage */
	ck_assert_uint_eq(count_rows(s, uid1, false), 3);
	Iolake__Meta__ObjectRecord *r = NULL;
	ck_assert_int_eq(meta_state_get_version(s, "mpb", "big", vid1, &r), 0);
	ck_assert(r->part_rows);
	ck_assert_str_eq(r->upload_id, uid1);
	meta_state_free_msg(r);
	t = tb_new();
	tb_free_rows(t, uid1, 0);
	ck_assert_int_eq(tb_apply(s, ++idx, t, res), 1);
	ck_assert_int_eq(res[0].err, IOL_ECONFLICT);
	/* deleting that version queues it; then its rows go */
	uint64_t before = gc_len(s);
	t = tb_new();
	tb_delete(t, 0, 0, "mpb", "big");
	t->ops[0]->version_id = tb_str(t, vid1);
	t->ops[0]->versioning = IOLAKE__META__VERSIONING_STATE__VERSIONING_ENABLED;
	ck_assert_int_eq(tb_apply(s, ++idx, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_uint_eq(gc_len(s), before + 1);
	ck_assert_int_eq(free_all(s, &idx, uid1), 1);
	ck_assert_uint_eq(count_rows(s, uid1, false), 0);
	ck_assert_uint_eq(count_rows(s, uid2, false), 2);   /* the current one's stay */
	ck_assert_uint_eq(gc_len(s), before + 1 + 1);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

/* ------------------------------------------------------------ move */

static Iolake__Meta__RangeDesc *tb_range(struct tb *t, uint64_t id, const char *start,
					 const char *end)
{
	Iolake__Meta__RangeDesc *d = tb_alloc(t, sizeof(*d));
	iolake__meta__range_desc__init(d);
	d->id = id;
	d->bucket = tb_str(t, "mpb");
	d->start = tb_str(t, start);
	d->end = tb_str(t, end);
	return d;
}

static void tb_open(struct tb *t, uint64_t id)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__OpenRange *o = tb_alloc(t, sizeof(*o));
	iolake__meta__open_range__init(o);
	o->range = tb_range(t, id, "", "");
	op->body_case = IOLAKE__META__OP__BODY_OPEN_RANGE;
	op->open_range = o;
}

START_TEST(move)
{
	char d1[64], d2[64], uid[17];
	tmpdir(d1);
	tmpdir(d2);
	struct meta_state *src = open_at(d1), *dst = open_at(d2);
	uint64_t i1 = 0, i2 = 0;
	upload(src, &i1, true, NP, uid);
	complete(src, &i1, uid, NP);
	/* the bucket's records as one range (id 5), sealed for a move */
	struct tb *t = tb_new();
	tb_open(t, 5);
	ck_assert_int_eq(tb_apply(src, ++i1, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);
	t = tb_new();
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__SealRange *sr = tb_alloc(t, sizeof(*sr));
	iolake__meta__seal_range__init(sr);
	sr->range = tb_range(t, 5, "", "");
	sr->for_move = true;
	op->body_case = IOLAKE__META__OP__BODY_SEAL_RANGE;
	op->seal_range = sr;
	ck_assert_int_eq(tb_apply(src, ++i1, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);

	/* copy in batches of at most 100 records */
	uint8_t cur[2048];
	size_t cur_len = 0, records = 0, batches = 0, rows = 0;
	for (;;) {
		struct meta_range_pairs p;
		ck_assert_int_eq(meta_state_read_range(src, 5, "mpb", "", "", cur, cur_len, 100,
						       1 << 20, &p), 0);
		ck_assert_uint_le(p.records, 100);
		records += p.records;
		for (size_t k = 0; k < p.n; k++)
			rows += p.keys[k].data[0] == 'p';
		t = tb_new();
		op = tb_op(t, 0, 0);
		Iolake__Meta__IngestRange *in = tb_alloc(t, sizeof(*in));
		iolake__meta__ingest_range__init(in);
		in->range = tb_range(t, 9, "", "");
		in->after.data = tb_alloc(t, cur_len + 1);
		memcpy(in->after.data, cur, cur_len);
		in->after.len = cur_len;
		in->upto.data = tb_alloc(t, p.upto_len + 1);
		if (p.upto_len)
			memcpy(in->upto.data, p.upto, p.upto_len);
		in->upto.len = p.upto_len;
		in->n_keys = in->n_values = p.n;
		in->keys = p.keys;   /* borrowed: p outlives the apply */
		in->values = p.values;
		op->body_case = IOLAKE__META__OP__BODY_INGEST_RANGE;
		op->ingest_range = in;
		ck_assert_int_eq(tb_apply(dst, ++i2, t, res), 1);
		ck_assert_int_eq(res[0].err, 0);
		batches++;
		if (p.upto_len)
			memcpy(cur, p.upto, p.upto_len);
		cur_len = p.upto_len;
		bool done = p.done;
		meta_range_pairs_free(&p);
		if (done)
			break;
	}
	ck_assert_uint_eq(rows, NP);
	ck_assert_uint_eq(records, 1 + NP);   /* the object and its rows */
	ck_assert_uint_ge(batches, (1 + NP) / 100);
	ck_assert_uint_eq(count_rows(dst, uid, false), NP);
	Iolake__Meta__RangeDesc *d = NULL;
	ck_assert_int_eq(meta_state_get_open_range(dst, 9, &d), 0);
	ck_assert_uint_eq(d->objects, 1);   /* rows count no objects */
	meta_state_free_msg(d);
	for (uint16_t k = 1; k <= NP; k++)
		ck_assert(refd(dst, k));
	Iolake__Meta__Part *pt = NULL;
	ck_assert_int_eq(meta_state_get_part_row(dst, "mpb", "big", uid, 300, &pt), 0);
	meta_state_free_msg(pt);

	/* DropRange from the source: rows and references go */
	uint64_t dropped = 0;
	for (int k = 0; k < 20; k++) {
		t = tb_new();
		op = tb_op(t, 0, 0);
		Iolake__Meta__DropRange *dr = tb_alloc(t, sizeof(*dr));
		iolake__meta__drop_range__init(dr);
		dr->bucket = tb_str(t, "mpb");
		dr->start = tb_str(t, "");
		dr->end = tb_str(t, "");
		dr->max = 128;
		op->body_case = IOLAKE__META__OP__BODY_DROP_RANGE;
		op->drop_range = dr;
		ck_assert_int_eq(tb_apply(src, ++i1, t, res), 1);
		ck_assert_int_eq(res[0].err, 0);
		dropped += res[0].generation;
		if (!res[0].generation)
			break;
	}
	ck_assert_uint_eq(dropped, 1 + NP);
	ck_assert_uint_eq(count_rows(src, uid, false), 0);
	for (uint16_t k = 1; k <= NP; k++)
		ck_assert(!refd(src, k));
	meta_state_close(src);
	meta_state_close(dst);
	rm_rf(d1);
	rm_rf(d2);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("part_rows");
	TCase *tc = tcase_create("part_rows");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, complete_and_read);
	tcase_add_test(tc, gc_batches);
	tcase_add_test(tc, versions);
	tcase_add_test(tc, move);
	suite_add_tcase(su, tc);
	SRunner *sr = srunner_create(su);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
