/*
 * test_gc.c — the shard-GC queue of the meta state machine on real
 * RocksDB under /dev/shm: entries appear when an overwrite, a delete or a
 * Complete that drops parts commits (inline objects queue nothing); the
 * paged reader (meta_state_list_gc, what ListGc serves) returns each entry
 * once in key order across pages and resumes after any cursor, even inside
 * a generation; GcAck removes exactly the acked generations and
 * (generation, seq) entries, ignores what is already gone, and the queue
 * length (meta_state_gc_count, a counter) agrees with a full walk after
 * every step, after a restart and after a snapshot import.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "meta/state.h"
#include "meta_test_util.h"

static struct meta_op_result res[META_BATCH_MAX_OPS];
#define ETAG "0123456789abcdef0123456789abcdef"

struct ent {
	uint64_t gen;
	uint32_t seq;
	char key[32];
	size_t n_segments;
};

/* Walk the whole queue page by page (max per page), checking order, the
 * truncation flags and the records; returns the count, entries in out. */
static size_t walk(struct meta_state *s, uint32_t max, struct ent *out, size_t cap)
{
	uint64_t ag = 0;
	uint32_t as = 0;
	size_t total = 0;
	for (int pages = 0;; pages++) {
		ck_assert_int_lt(pages, 1000);
		Iolake__Meta__GcEntry **v = NULL;
		size_t n = 0;
		bool trunc = true;
		ck_assert_int_eq(meta_state_list_gc(s, ag, as, max, &v, &n, &trunc), 0);
		uint32_t lim = max ? max : META_LIST_GC_MAX;
		ck_assert_uint_le(n, lim);
		if (trunc)
			ck_assert_uint_eq(n, lim);
		for (size_t i = 0; i < n; i++) {
			const Iolake__Meta__GcEntry *e = v[i];
			/* Strictly after the cursor: each entry once, in order. */
			ck_assert(e->generation > ag || (e->generation == ag && e->seq > as));
			ck_assert_ptr_nonnull(e->record);
			ck_assert_uint_eq(e->record->inline_data.len, 0);
			ck_assert_uint_eq(e->record->n_user_meta, 0);
			ck_assert(e->record->n_segments > 0 || e->record->data_layout.len > 0);
			ck_assert_uint_lt(total, cap);
			out[total].gen = e->generation;
			out[total].seq = e->seq;
			snprintf(out[total].key, sizeof(out[total].key), "%s", e->record->key);
			out[total].n_segments = e->record->n_segments;
			total++;
			ag = e->generation;
			as = e->seq;
		}
		for (size_t i = 0; i < n; i++)
			meta_state_free_msg(v[i]);
		free(v);
		if (!trunc)
			break;
	}
	uint64_t count;
	ck_assert_int_eq(meta_state_gc_count(s, &count), 0);
	ck_assert_uint_eq(count, total);
	return total;
}

/* A GcAck of whole generations and of single (generation, seq) entries. */
static void tb_ack(struct tb *t, const uint64_t *gens, size_t n_gens, const uint64_t (*keys)[2],
		   size_t n_keys)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__GcAck *a = tb_alloc(t, sizeof(*a));
	iolake__meta__gc_ack__init(a);
	a->n_generations = n_gens;
	a->generations = tb_alloc(t, (n_gens + 1) * sizeof(*a->generations));
	if (n_gens)
		memcpy(a->generations, gens, n_gens * sizeof(*gens));
	a->n_entries = n_keys;
	a->entries = tb_alloc(t, (n_keys + 1) * sizeof(*a->entries));
	for (size_t i = 0; i < n_keys; i++) {
		a->entries[i] = tb_alloc(t, sizeof(**a->entries));
		iolake__meta__gc_key__init(a->entries[i]);
		a->entries[i]->generation = keys[i][0];
		a->entries[i]->seq = (uint32_t)keys[i][1];
	}
	op->body_case = IOLAKE__META__OP__BODY_GC_ACK;
	op->gc_ack = a;
}

static bool has(const struct ent *v, size_t n, uint64_t gen, uint32_t seq)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].gen == gen && v[i].seq == seq)
			return true;
	return false;
}

#define GEN(idx, pos) (((uint64_t)(idx) << 16) | (pos))

START_TEST(test_gc_queue)
{
	char dir[64], dir2[64];
	tmpdir(dir);
	tmpdir(dir2);
	struct meta_state *s = NULL;
	ck_assert_int_eq(meta_state_open(dir, NULL, &s), 0);
	struct ent v[64];

	/* Ten objects with shards, one inline. */
	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "gcb", "alice");
	tb_create_bucket(t, 0, 0, "mpb", "alice");
	char key[16];
	for (int i = 0; i < 10; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		tb_put(t, 0, 0, "gcb", key, 8192);
	}
	tb_put(t, 0, 0, "gcb", "small", 10);
	tb_put(t, 0, 0, "mpb", "big", 8192);
	ck_assert_int_eq(tb_apply(s, 1, t, res), 14);
	ck_assert_uint_eq(walk(s, 3, v, 64), 0);

	/* Overwrites k0..k4 (and the inline one: nothing to free). */
	t = tb_new();
	for (int i = 0; i < 5; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		tb_put(t, 0, 0, "gcb", key, 9000);
	}
	tb_put(t, 0, 0, "gcb", "small", 20);
	ck_assert_int_eq(tb_apply(s, 2, t, res), 6);
	ck_assert_uint_eq(walk(s, 3, v, 64), 5);
	for (int i = 0; i < 5; i++) {
		ck_assert_uint_eq(v[i].gen, GEN(2, i));
		ck_assert_uint_eq(v[i].seq, 0);
		snprintf(key, sizeof(key), "k%d", i);
		ck_assert_str_eq(v[i].key, key);
		ck_assert_uint_eq(v[i].n_segments, 1);
	}

	/* Deletes k5, k6 and a missing key (NOT_FOUND: nothing queued). */
	t = tb_new();
	tb_delete(t, 0, 0, "gcb", "k5");
	tb_delete(t, 0, 0, "gcb", "k6");
	tb_delete(t, 0, 0, "gcb", "nope");
	ck_assert_int_eq(tb_apply(s, 3, t, res), 3);
	ck_assert_int_eq(res[2].err, IOL_ENOT_FOUND);
	ck_assert_uint_eq(walk(s, 3, v, 64), 7);

	/* A Complete naming part 2 of three replaces "big": one op queues
	 * three entries (seq 0: the old record, 1 and 2: parts 1 and 3). */
	t = tb_new();
	tb_create_upload(t, "mpb", "big");
	ck_assert_int_eq(tb_apply(s, 4, t, res), 1);
	char id[17];
	strcpy(id, res[0].upload_id);
	t = tb_new();
	for (uint32_t p = 1; p <= 3; p++) {
		Iolake__Meta__Segment *seg = tb_part(t, id, p, 5 << 20, ETAG);
		seg->data_layout.data = (uint8_t *)tb_str(t, "LAYOUT");
		seg->data_layout.len = 6;
	}
	ck_assert_int_eq(tb_apply(s, 5, t, res), 3);
	t = tb_new();
	const uint32_t two = 2;
	const char *etag = ETAG;
	tb_complete(t, id, &two, &etag, 1);
	ck_assert_int_eq(tb_apply(s, 6, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);
	const uint64_t g6 = GEN(6, 0);

	/* Every page size walks the same ten entries. */
	for (uint32_t max = 1; max <= 11; max++)
		ck_assert_uint_eq(walk(s, max, v, 64), 10);
	ck_assert_uint_eq(walk(s, 0, v, 64), 10);   /* 0: the default page */
	ck_assert_uint_eq(v[7].gen, g6);
	ck_assert_uint_eq(v[7].seq, 0);
	ck_assert_uint_eq(v[8].seq, 1);
	ck_assert_uint_eq(v[9].seq, 2);
	for (int i = 7; i < 10; i++)
		ck_assert_str_eq(v[i].key, "big");

	/* A cursor inside a generation resumes there; past the end: none. */
	Iolake__Meta__GcEntry **pg = NULL;
	size_t n = 0;
	bool trunc = true;
	ck_assert_int_eq(meta_state_list_gc(s, g6, 0, 1, &pg, &n, &trunc), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert(trunc);
	ck_assert_uint_eq(pg[0]->generation, g6);
	ck_assert_uint_eq(pg[0]->seq, 1);
	meta_state_free_msg(pg[0]);
	free(pg);
	ck_assert_int_eq(meta_state_list_gc(s, g6, 2, 5, &pg, &n, &trunc), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert(!trunc);
	free(pg);
	/* A cursor that names no entry (acked meanwhile) still resumes after it. */
	ck_assert_int_eq(meta_state_list_gc(s, GEN(2, 1), 7, 100, &pg, &n, &trunc), 0);
	ck_assert_uint_eq(n, 8);
	ck_assert_uint_eq(pg[0]->generation, GEN(2, 2));
	for (size_t i = 0; i < n; i++)
		meta_state_free_msg(pg[i]);
	free(pg);

	/* Ack: the whole generation of k0's overwrite, single entries
	 * (g6, 1) and k5's delete, (g6, 1) again and an unknown one: exactly
	 * three entries go. */
	uint64_t gens[] = { GEN(2, 0) };
	uint64_t keys[][2] = { { g6, 1 }, { GEN(3, 0), 0 }, { g6, 1 }, { 12345, 0 } };
	t = tb_new();
	tb_ack(t, gens, 1, keys, 4);
	ck_assert_int_eq(tb_apply(s, 7, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_uint_eq(walk(s, 2, v, 64), 7);
	ck_assert(!has(v, 7, GEN(2, 0), 0));
	ck_assert(!has(v, 7, g6, 1));
	ck_assert(!has(v, 7, GEN(3, 0), 0));
	for (int i = 1; i < 5; i++)
		ck_assert(has(v, 7, GEN(2, i), 0));
	ck_assert(has(v, 7, GEN(3, 1), 0));
	ck_assert(has(v, 7, g6, 0));
	ck_assert(has(v, 7, g6, 2));

	/* The rest of g6 by generation (named twice: its two entries counted
	 * once, which walk's count check sees), and acks of what is gone
	 * change nothing. */
	uint64_t gens2[] = { g6, GEN(2, 0), g6 };
	t = tb_new();
	tb_ack(t, gens2, 3, keys, 2);
	ck_assert_int_eq(tb_apply(s, 8, t, res), 1);
	ck_assert_uint_eq(walk(s, 4, v, 64), 5);
	ck_assert(!has(v, 5, g6, 0));
	ck_assert(!has(v, 5, g6, 2));

	/* The count survives a restart and a snapshot import. */
	meta_state_close(s);
	ck_assert_int_eq(meta_state_open(dir, NULL, &s), 0);
	ck_assert_uint_eq(walk(s, 3, v, 64), 5);
	uint8_t *snap;
	size_t len;
	ck_assert_int_eq(meta_state_export(s, malloc, free, &snap, &len), 0);
	struct meta_state *b = NULL;
	ck_assert_int_eq(meta_state_open(dir2, NULL, &b), 0);
	ck_assert_int_eq(meta_state_import(b, snap, len), 0);
	free(snap);
	ck_assert_uint_eq(walk(b, 2, v, 64), 5);

	/* Acking everything that is left empties it. */
	uint64_t rest[5][2];
	for (int i = 0; i < 5; i++)
		rest[i][0] = v[i].gen, rest[i][1] = v[i].seq;
	t = tb_new();
	tb_ack(t, NULL, 0, rest, 5);
	ck_assert_int_eq(tb_apply(b, 9, t, res), 1);
	ck_assert_uint_eq(walk(b, 2, v, 64), 0);

	meta_state_close(b);
	meta_state_close(s);
	rm_rf(dir);
	rm_rf(dir2);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gc");
	TCase *tc = tcase_create("gc");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_gc_queue);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
