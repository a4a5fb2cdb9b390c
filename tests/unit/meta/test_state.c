/*
 * test_state.c — the meta state machine on real RocksDB under /dev/shm:
 * batches, restart + replay (no double apply, equal digests), two members
 * fed the same log, conditional puts, request-id dedupe and its window,
 * bucket delete when not empty, users and keys, multipart, snapshots
 * (export/import, checkpoint), malformed entries and tag changes, the
 * table of Raft groups (CreateGroup / DeleteGroup: validation, tombstones,
 * ids never reused, the live bound) and two states sharing one block
 * cache. The cluster map's ops are in test_state_map.c.
 */
#include <check.h>
#include <errno.h>
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/err.h"
#include "common/hash.h"
#include "meta/list.h"
#include "meta/state.h"
#include "meta_test_util.h"

static struct meta_op_result res[META_BATCH_MAX_OPS];

static void digest(struct meta_state *s, uint8_t d[32])
{
	ck_assert_int_eq(meta_state_digest(s, d), 0);
}

START_TEST(test_basic)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	ck_assert_uint_eq(meta_state_applied_index(s), 0);

	struct tb *t = tb_new();
	tb_create_bucket(t, 1, 1, "alpha", "alice");
	tb_create_bucket(t, 1, 2, "beta", "bob");
	tb_put(t, 1, 3, "alpha", "a/b/c", 10);
	tb_put(t, 1, 4, "nosuch", "k", 1);       /* no bucket */
	tb_create_bucket(t, 1, 5, "alpha", "x");  /* exists */
	tb_create_bucket(t, 1, 6, "Bad_Name", "x");
	ck_assert_int_eq(tb_apply(s, 1, t, res), 6);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_int_eq(res[1].err, 0);
	ck_assert_int_eq(res[2].err, 0);
	ck_assert_uint_eq(res[2].generation, (1ULL << 16) | 2);
	ck_assert_int_eq(res[3].err, IOL_ENOT_FOUND);
	ck_assert_int_eq(res[4].err, IOL_EEXISTS);
	ck_assert_int_eq(res[5].err, -EINVAL);
	ck_assert_uint_eq(meta_state_applied_index(s), 1);

	Iolake__Meta__ObjectRecord *r = NULL;
	ck_assert_int_eq(meta_state_head_object(s, "alpha", "a/b/c", &r), 0);
	ck_assert_uint_eq(r->size, 10);
	ck_assert_uint_eq(r->inline_data.len, 10);
	ck_assert_uint_eq(r->generation, res[2].generation);
	meta_state_free_msg(r);
	ck_assert_int_eq(meta_state_head_object(s, "alpha", "nope", &r), IOL_ENOT_FOUND);

	Iolake__Meta__Bucket **bs;
	size_t n;
	ck_assert_int_eq(meta_state_list_buckets(s, NULL, &bs, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(bs[0]->name, "alpha");
	ck_assert_str_eq(bs[1]->name, "beta");
	for (size_t i = 0; i < n; i++)
		meta_state_free_msg(bs[i]);
	free(bs);
	ck_assert_int_eq(meta_state_list_buckets(s, "bob", &bs, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(bs[0]->owner, "bob");
	meta_state_free_msg(bs[0]);
	free(bs);

	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

/* A deterministic pseudo-random log of mixed batches. */
struct log {
	uint8_t *e[256];
	size_t len[256];
	size_t n;
};

static void make_log(struct log *lg, unsigned seed, size_t batches)
{
	srand(seed);
	lg->n = 0;
	uint64_t req = 1;
	char key[64];
	for (size_t b = 0; b < batches; b++) {
		struct tb *t = tb_new();
		if (b == 0) {
			tb_create_bucket(t, 7, req++, "logb", "alice");
			tb_create_bucket(t, 7, req++, "logc", "alice");
		}
		int ops = 1 + rand() % 64;
		for (int i = 0; i < ops; i++) {
			snprintf(key, sizeof(key), "k/%03d", rand() % 200);
			int what = rand() % 10;
			if (what < 6) {
				Iolake__Meta__PutObject *p = tb_put(t, 7, req++, rand() % 2 ? "logb" : "logc",
								    key, (uint64_t)(rand() % 9000));
				p->if_none_match = rand() % 4 == 0;
			} else if (what < 8) {
				tb_delete(t, 7, req++, "logb", key);
			} else if (what < 9) {
				/* A retry of an earlier request id. */
				tb_put(t, 7, req > 10 ? req - 1 - (uint64_t)(rand() % 10) : 1, "logb",
				       key, 5);
			} else {
				tb_put(t, 0, 0, "logc", key, 100);   /* not deduplicated */
			}
		}
		lg->e[lg->n] = tb_encode(t, &lg->len[lg->n]);
		lg->n++;
		tb_free(t);
	}
}

static void free_log(struct log *lg)
{
	for (size_t i = 0; i < lg->n; i++)
		free(lg->e[i]);
}

static unsigned test_seed(const char *name)
{
	unsigned seed = (unsigned)time(NULL);
	const char *env = getenv("IOLAKE_TEST_SEED");
	if (env)
		seed = (unsigned)strtoul(env, NULL, 10);
	printf("%s seed=%u (replay: IOLAKE_TEST_SEED=%u)\n", name, seed, seed);
	return seed;
}

START_TEST(test_replay_and_members)
{
	unsigned seed = test_seed("test_replay_and_members");
	struct log lg;
	make_log(&lg, seed, 120);
	char d1[64], d2[64];
	tmpdir(d1);
	tmpdir(d2);

	/* Member 1 applies everything. */
	struct meta_state *a = open_at(d1);
	for (size_t i = 0; i < lg.n; i++)
		ck_assert_int_ge(meta_state_apply(a, i + 1, lg.e[i], lg.len[i], res, META_BATCH_MAX_OPS), 1);
	uint8_t da[32], db[32], dc[32];
	digest(a, da);
	uint64_t gc_a;
	ck_assert_int_eq(meta_state_gc_count(a, &gc_a), 0);
	Iolake__Meta__ObjectRecord *before = NULL;
	int have = meta_state_head_object(a, "logc", "k/000", &before);

	/* Restart: every entry is at or below the applied index: skipped. */
	meta_state_close(a);
	a = open_at(d1);
	ck_assert_uint_eq(meta_state_applied_index(a), lg.n);
	for (size_t i = 0; i < lg.n; i++)
		ck_assert_int_eq(meta_state_apply(a, i + 1, lg.e[i], lg.len[i], res, META_BATCH_MAX_OPS), 0);
	digest(a, db);
	ck_assert_mem_eq(da, db, 32);
	uint64_t gc_b;
	ck_assert_int_eq(meta_state_gc_count(a, &gc_b), 0);
	ck_assert_uint_eq(gc_a, gc_b);
	Iolake__Meta__ObjectRecord *after = NULL;
	ck_assert_int_eq(meta_state_head_object(a, "logc", "k/000", &after), have);
	if (have == 0)
		ck_assert_uint_eq(before->generation, after->generation);
	meta_state_free_msg(before);
	meta_state_free_msg(after);

	/* Member 2: applies half, restarts, then is fed the whole log (the
	 * first half must be skipped, not applied twice). */
	struct meta_state *b = open_at(d2);
	for (size_t i = 0; i < lg.n / 2; i++)
		ck_assert_int_ge(meta_state_apply(b, i + 1, lg.e[i], lg.len[i], res, META_BATCH_MAX_OPS), 1);
	meta_state_close(b);
	b = open_at(d2);
	for (size_t i = 0; i < lg.n; i++)
		meta_state_apply(b, i + 1, lg.e[i], lg.len[i], res, META_BATCH_MAX_OPS);
	digest(b, dc);
	ck_assert_mem_eq(da, dc, 32);

	/* Applying one more entry changes the digest (the oracle can fail). */
	struct tb *t = tb_new();
	tb_put(t, 0, 0, "logb", "extra", 1);
	ck_assert_int_eq(tb_apply(b, lg.n + 1, t, res), 1);
	digest(b, dc);
	ck_assert_mem_ne(da, dc, 32);

	meta_state_close(a);
	meta_state_close(b);
	free_log(&lg);
	rm_rf(d1);
	rm_rf(d2);
}
END_TEST

START_TEST(test_conditional_put)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "cond", "alice");
	tb_put(t, 0, 0, "cond", "obj", 5);
	ck_assert_int_eq(tb_apply(s, 1, t, res), 2);
	uint64_t g1 = res[1].generation;

	t = tb_new();
	tb_put(t, 0, 0, "cond", "obj", 6)->if_none_match = true;      /* exists */
	tb_put(t, 0, 0, "cond", "obj", 7)->if_generation = g1 + 1;     /* wrong gen */
	tb_put(t, 0, 0, "cond", "new", 7)->if_generation = 5;          /* no record */
	tb_put(t, 0, 0, "cond", "new2", 7)->if_none_match = true;      /* ok */
	tb_put(t, 0, 0, "cond", "obj", 8)->if_generation = g1;         /* ok */
	tb_put(t, 0, 0, "cond", "obj", 9)->if_generation = g1;         /* stale now */
	tb_delete(t, 0, 0, "cond", "new2")->if_generation = 1;         /* wrong gen */
	ck_assert_int_eq(tb_apply(s, 2, t, res), 7);
	ck_assert_int_eq(res[0].err, IOL_ECONFLICT);
	ck_assert_int_eq(res[1].err, IOL_ECONFLICT);
	ck_assert_int_eq(res[2].err, IOL_ECONFLICT);
	ck_assert_int_eq(res[3].err, 0);
	ck_assert_int_eq(res[4].err, 0);
	ck_assert_int_eq(res[5].err, IOL_ECONFLICT);
	ck_assert_int_eq(res[6].err, IOL_ECONFLICT);
	uint64_t g2 = res[4].generation;
	ck_assert_uint_gt(g2, g1);

	Iolake__Meta__ObjectRecord *r;
	ck_assert_int_eq(meta_state_head_object(s, "cond", "obj", &r), 0);
	ck_assert_uint_eq(r->size, 8);
	ck_assert_uint_eq(r->generation, g2);
	meta_state_free_msg(r);

	/* Delete with the right generation; ABA: a re-created key gets a new
	 * generation, so the old one no longer matches. */
	t = tb_new();
	tb_delete(t, 0, 0, "cond", "obj")->if_generation = g2;
	tb_put(t, 0, 0, "cond", "obj", 1);
	tb_put(t, 0, 0, "cond", "obj", 2)->if_generation = g2;
	ck_assert_int_eq(tb_apply(s, 3, t, res), 3);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_int_eq(res[1].err, 0);
	ck_assert_int_eq(res[2].err, IOL_ECONFLICT);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

/* A seek into an empty key prefix stops at the prefix's end: asking
 * whether a bucket has key ranges (the range table 'Q', per op) must not
 * step over the request table's pruned entries ('R': deleted keys, still
 * in the memtable) that follow it. Counted with RocksDB's perf context:
 * without the bound every pruned entry was skipped on every call. */
START_TEST(test_empty_prefix_seek)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	struct tb *t = tb_new();
	tb_create_bucket(t, 9, 1, "seekb", "alice");
	ck_assert_int_eq(tb_apply(s, 1, t, res), 1);
	uint64_t idx = 2, last = 3 * META_DEDUPE_WINDOW;
	for (uint64_t id = 2; id <= last;) {
		t = tb_new();
		for (int i = 0; i < 500 && id <= last; i++, id++)
			tb_put(t, 9, id, "seekb", "w", 1);
		ck_assert_int_ge(tb_apply(s, idx++, t, res), 1);
	}
	rocksdb_set_perf_level(rocksdb_enable_count);
	rocksdb_perfcontext_t *pc = rocksdb_perfcontext_create();
	rocksdb_perfcontext_reset(pc);
	ck_assert(!meta_state_bucket_has_ranges(s, "seekb"));
	uint64_t skipped = rocksdb_perfcontext_metric(pc, rocksdb_internal_delete_skipped_count);
	printf("empty prefix seek: %llu deleted keys skipped (%llu pruned requests)\n",
	       (unsigned long long)skipped, (unsigned long long)(last - META_DEDUPE_WINDOW));
	ck_assert_uint_lt(skipped, 16);
	rocksdb_perfcontext_destroy(pc);
	rocksdb_set_perf_level(rocksdb_disable);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

/* apply skips the request table's read for an op above its client's
 * high-water mark (meta/state.c, req_hw). The mark must be at or above
 * every row of the client in the DB: loaded from the DB on a client's
 * first op (a reopen starts with none), raised by each row written, and
 * forgotten when a snapshot import replaces the DB. Each retry below
 * would be applied again (a second PUT, size changed) if the mark were
 * too low. */
static void *xmalloc(size_t n);

START_TEST(test_dedupe_high_water)
{
	char dir[64], dir2[64];
	tmpdir(dir);
	tmpdir(dir2);
	struct meta_state *s = open_at(dir);
	struct tb *t = tb_new();
	tb_create_bucket(t, 9, 1, "hwb", "alice");
	tb_put(t, 9, 12, "hwb", "k12", 12);
	tb_put(t, 9, 11, "hwb", "k11", 11);   /* older id after a newer one */
	ck_assert_int_eq(tb_apply(s, 1, t, res), 3);
	ck_assert(!res[1].deduped && !res[2].deduped);
	t = tb_new();
	tb_put(t, 9, 12, "hwb", "k12", 1000);
	tb_put(t, 9, 11, "hwb", "k11", 1000);
	tb_put(t, 9, 13, "hwb", "k13", 13);
	ck_assert_int_eq(tb_apply(s, 2, t, res), 3);
	ck_assert(res[0].deduped && res[1].deduped && !res[2].deduped);
	meta_state_close(s);

	/* Reopened: no mark in memory. A lower id comes first; the retry of
	 * the newest id applied before the reopen must still be found. */
	s = open_at(dir);
	t = tb_new();
	tb_put(t, 9, 10, "hwb", "k10", 10);
	ck_assert_int_eq(tb_apply(s, 3, t, res), 1);
	ck_assert(!res[0].deduped);
	t = tb_new();
	tb_put(t, 9, 13, "hwb", "k13", 1000);
	ck_assert_int_eq(tb_apply(s, 4, t, res), 1);
	ck_assert(res[0].deduped);
	Iolake__Meta__ObjectRecord *r;
	ck_assert_int_eq(meta_state_head_object(s, "hwb", "k13", &r), 0);
	ck_assert_uint_eq(r->size, 13);
	meta_state_free_msg(r);

	/* A snapshot with newer rows of the same client imported under a
	 * mark: the mark is dropped, the retry found. */
	struct meta_state *b = open_at(dir2);
	t = tb_new();
	tb_create_bucket(t, 9, 1, "hwb", "alice");
	for (uint64_t id = 2; id <= 40; id++)
		tb_put(t, 9, id, "hwb", "k40", id);
	ck_assert_int_eq(tb_apply(b, 1, t, res), 40);
	uint8_t *snap;
	size_t len;
	ck_assert_int_eq(meta_state_export(b, xmalloc, free, &snap, &len), 0);
	ck_assert_int_eq(meta_state_import(s, snap, len), 0);
	free(snap);
	t = tb_new();
	tb_put(t, 9, 40, "hwb", "k40", 1000);
	ck_assert_int_eq(tb_apply(s, 2, t, res), 1);
	ck_assert(res[0].deduped);
	ck_assert_int_eq(meta_state_head_object(s, "hwb", "k40", &r), 0);
	ck_assert_uint_eq(r->size, 40);
	meta_state_free_msg(r);
	meta_state_close(b);
	meta_state_close(s);
	rm_rf(dir);
	rm_rf(dir2);
}
END_TEST

/* The request table stays bounded as acked_below rises: by single steps
 * (each pruned id deleted by key), by jumps past PRUNE_POINT_MAX (the
 * bounded scan) and over ids with gaps (another group's ids: no rows).
 * The state's export holds every live pair: it stays small only if the
 * pruned rows are gone. */
START_TEST(test_prune_bounded)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	struct tb *t = tb_new();
	tb_create_bucket(t, 9, 1, "prb", "alice");
	ck_assert_int_eq(tb_apply(s, 1, t, res), 1);
	uint64_t idx = 2, id = 2;
	for (int e = 0; e < 30; e++) {
		t = tb_new();
		for (int i = 0; i < 100; i++, id += (e % 3 == 2 ? 2 : 1)) {
			tb_put(t, 9, id, "prb", "w", 1);
			/* single steps; every third entry gaps of 2; every tenth
			 * entry's last op acks all but itself (a jump of ~100) */
			t->ops[i]->acked_below = (e % 10 == 9 && i == 99) ? id : id - 1;
		}
		ck_assert_int_eq(tb_apply(s, idx++, t, res), 100);
		for (int i = 0; i < 100; i++)
			ck_assert_int_eq(res[i].err, 0);
	}
	uint8_t *snap;
	size_t len;
	ck_assert_int_eq(meta_state_export(s, xmalloc, free, &snap, &len), 0);
	printf("prune: %zu bytes of state after %llu requests\n", len,
	       (unsigned long long)(id - 2));
	/* Pruned by the window alone (META_DEDUPE_WINDOW rows): over 40 KB. */
	ck_assert_uint_lt(len, 4096);
	free(snap);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

START_TEST(test_dedupe)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	struct tb *t = tb_new();
	tb_create_bucket(t, 9, 1, "ddb", "alice");
	tb_put(t, 9, 2, "ddb", "k", 100);
	tb_put(t, 9, 2, "ddb", "k", 200);     /* same id in the same batch */
	ck_assert_int_eq(tb_apply(s, 1, t, res), 3);
	ck_assert(!res[1].deduped);
	ck_assert(res[2].deduped);
	ck_assert_uint_eq(res[2].generation, res[1].generation);
	uint64_t g = res[1].generation;

	/* The retry arrives in a later entry: same answer, not applied. */
	t = tb_new();
	tb_put(t, 9, 2, "ddb", "k", 300);
	tb_put(t, 9, 3, "ddb", "k", 400)->if_none_match = true;   /* CONFLICT */
	ck_assert_int_eq(tb_apply(s, 2, t, res), 2);
	ck_assert(res[0].deduped);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_uint_eq(res[0].generation, g);
	ck_assert_int_eq(res[1].err, IOL_ECONFLICT);
	Iolake__Meta__ObjectRecord *r;
	ck_assert_int_eq(meta_state_head_object(s, "ddb", "k", &r), 0);
	ck_assert_uint_eq(r->size, 100);
	meta_state_free_msg(r);

	/* A failed op's answer is remembered too: after the object is gone
	 * the retry of request 3 still says CONFLICT (it must not now put). */
	t = tb_new();
	tb_delete(t, 9, 4, "ddb", "k");
	tb_put(t, 9, 3, "ddb", "k", 400)->if_none_match = true;
	ck_assert_int_eq(tb_apply(s, 3, t, res), 2);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert(res[1].deduped);
	ck_assert_int_eq(res[1].err, IOL_ECONFLICT);
	ck_assert_int_eq(meta_state_head_object(s, "ddb", "k", &r), IOL_ENOT_FOUND);

	/* Another client with the same request id is independent. */
	t = tb_new();
	tb_put(t, 10, 3, "ddb", "k", 1);
	ck_assert_int_eq(tb_apply(s, 4, t, res), 1);
	ck_assert(!res[0].deduped);
	ck_assert_int_eq(res[0].err, 0);

	/* Window: after META_DEDUPE_WINDOW more ids, id 5 is forgotten and a
	 * retry of it is refused as stale, not applied. Ids within the window
	 * still dedupe. */
	uint64_t last = 5 + META_DEDUPE_WINDOW + 10;
	uint64_t idx = 5;
	for (uint64_t id = 5; id <= last;) {
		t = tb_new();
		for (int i = 0; i < 500 && id <= last; i++, id++)
			tb_put(t, 9, id, "ddb", "w", id);
		ck_assert_int_ge(tb_apply(s, idx++, t, res), 1);
	}
	t = tb_new();
	tb_put(t, 9, 5, "ddb", "w", 1);
	tb_put(t, 9, last - 3, "ddb", "w", 1);
	ck_assert_int_eq(tb_apply(s, idx++, t, res), 2);
	ck_assert_int_eq(res[0].err, META_ESTALE);
	ck_assert(!res[0].deduped);
	ck_assert(res[1].deduped);
	ck_assert_int_eq(meta_state_head_object(s, "ddb", "w", &r), 0);
	ck_assert_uint_eq(r->size, last);
	meta_state_free_msg(r);

	/* acked_below prunes explicitly. */
	t = tb_new();
	tb_op(t, 11, 1);
	t->ops[0]->body_case = IOLAKE__META__OP__BODY_GC_ACK;
	t->ops[0]->gc_ack = tb_alloc(t, sizeof(Iolake__Meta__GcAck));
	iolake__meta__gc_ack__init(t->ops[0]->gc_ack);
	tb_put(t, 11, 2, "ddb", "x", 1);
	tb_put(t, 11, 3, "ddb", "y", 1)->if_none_match = true;
	t->ops[2]->acked_below = 3;
	tb_put(t, 11, 1, "ddb", "x", 1);
	tb_put(t, 11, 3, "ddb", "y", 1);
	ck_assert_int_eq(tb_apply(s, idx++, t, res), 5);
	ck_assert_int_eq(res[3].err, META_ESTALE);
	ck_assert(res[4].deduped);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

START_TEST(test_bucket_not_empty)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "full", "alice");
	tb_create_bucket(t, 0, 0, "full2", "alice");  /* "full" is its prefix */
	tb_put(t, 0, 0, "full", "a", 1);
	tb_put(t, 0, 0, "full2", "b", 1);
	tb_delete_bucket(t, 0, 0, "full");
	tb_delete_bucket(t, 0, 0, "none");
	ck_assert_int_eq(tb_apply(s, 1, t, res), 6);
	ck_assert_int_eq(res[4].err, META_ENOTEMPTY);
	ck_assert_int_eq(res[5].err, IOL_ENOT_FOUND);

	/* Emptied in the same batch: the delete sees the earlier op. */
	t = tb_new();
	tb_delete(t, 0, 0, "full", "a");
	tb_delete_bucket(t, 0, 0, "full");
	tb_delete_bucket(t, 0, 0, "full2");
	ck_assert_int_eq(tb_apply(s, 2, t, res), 3);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_int_eq(res[1].err, 0);
	ck_assert_int_eq(res[2].err, META_ENOTEMPTY);
	Iolake__Meta__Bucket *b;
	ck_assert_int_eq(meta_state_get_bucket(s, "full", &b), IOL_ENOT_FOUND);
	ck_assert_int_eq(meta_state_get_bucket(s, "full2", &b), 0);
	meta_state_free_msg(b);

	/* An unfinished multipart upload also keeps the bucket. */
	t = tb_new();
	tb_delete(t, 0, 0, "full2", "b");
	tb_create_upload(t, "full2", "big");
	tb_delete_bucket(t, 0, 0, "full2");
	ck_assert_int_eq(tb_apply(s, 3, t, res), 3);
	ck_assert_int_eq(res[1].err, 0);
	ck_assert_int_eq(res[2].err, META_ENOTEMPTY);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

static void tb_user(struct tb *t, const char *name)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__PutUser *pu = tb_alloc(t, sizeof(*pu));
	Iolake__Meta__User *u = tb_alloc(t, sizeof(*u));
	iolake__meta__put_user__init(pu);
	iolake__meta__user__init(u);
	u->name = tb_str(t, name);
	u->display_name = tb_str(t, name);
	pu->user = u;
	op->body_case = IOLAKE__META__OP__BODY_PUT_USER;
	op->put_user = pu;
}

static void tb_key(struct tb *t, const char *id, const char *secret, const char *user)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__PutAccessKey *pk = tb_alloc(t, sizeof(*pk));
	Iolake__Meta__AccessKey *k = tb_alloc(t, sizeof(*k));
	iolake__meta__put_access_key__init(pk);
	iolake__meta__access_key__init(k);
	k->access_key_id = tb_str(t, id);
	k->secret_key = tb_str(t, secret);
	k->user = tb_str(t, user);
	pk->key = k;
	op->body_case = IOLAKE__META__OP__BODY_PUT_ACCESS_KEY;
	op->put_access_key = pk;
}

START_TEST(test_users_keys)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	struct tb *t = tb_new();
	tb_user(t, "alice");
	tb_user(t, "alice");
	tb_key(t, "AKIAALICE1", "secret-secret-alice-1", "alice");
	tb_key(t, "AKIAALICE2", "secret-secret-alice-2", "alice");
	tb_key(t, "AKIABOB", "secret-secret-bob-0000", "bob");
	tb_key(t, "AKIAALICE1", "secret-secret-again-1", "alice");
	tb_key(t, "AKIASHORT", "short", "alice");
	ck_assert_int_eq(tb_apply(s, 1, t, res), 7);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_int_eq(res[1].err, IOL_EEXISTS);
	ck_assert_int_eq(res[2].err, 0);
	ck_assert_int_eq(res[3].err, 0);
	ck_assert_int_eq(res[4].err, IOL_ENOT_FOUND);
	ck_assert_int_eq(res[5].err, IOL_EEXISTS);
	ck_assert_int_eq(res[6].err, -EINVAL);

	Iolake__Meta__AccessKey *k;
	ck_assert_int_eq(meta_state_get_access_key(s, "AKIAALICE2", &k), 0);
	ck_assert_str_eq(k->secret_key, "secret-secret-alice-2");
	ck_assert_str_eq(k->user, "alice");
	meta_state_free_msg(k);
	Iolake__Meta__User *u;
	ck_assert_int_eq(meta_state_get_user(s, "alice", &u), 0);
	ck_assert_uint_eq(u->n_access_keys, 2);
	meta_state_free_msg(u);

	/* Delete one key, then the user: the other key goes with it. Each
	 * removal bumps the map's creds_epoch (and epoch), which is how
	 * gateways watching the map learn to drop cached secrets. */
	t = tb_new();
	Iolake__Meta__Op *op;
	tb_init_map(t, 64, 4, 2);
	op = tb_op(t, 0, 0);
	op->body_case = IOLAKE__META__OP__BODY_DELETE_ACCESS_KEY;
	op->delete_access_key = tb_alloc(t, sizeof(*op->delete_access_key));
	iolake__meta__delete_access_key__init(op->delete_access_key);
	op->delete_access_key->access_key_id = tb_str(t, "AKIAALICE1");
	op = tb_op(t, 0, 0);
	op->body_case = IOLAKE__META__OP__BODY_DELETE_USER;
	op->delete_user = tb_alloc(t, sizeof(*op->delete_user));
	iolake__meta__delete_user__init(op->delete_user);
	op->delete_user->name = tb_str(t, "alice");
	ck_assert_int_eq(tb_apply(s, 2, t, res), 3);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_int_eq(res[1].err, 0);
	ck_assert_int_eq(res[2].err, 0);
	ck_assert_uint_eq(res[1].epoch, res[0].epoch + 1);
	ck_assert_uint_eq(res[2].epoch, res[0].epoch + 2);
	Iolake__Meta__ClusterMap *m;
	ck_assert_int_eq(meta_state_get_map(s, &m), 0);
	ck_assert_uint_eq(m->creds_epoch, 2);
	ck_assert_uint_eq(m->epoch, res[2].epoch);
	ck_assert_uint_eq(m->n_pgs, 64);
	meta_state_free_msg(m);
	ck_assert_int_eq(meta_state_get_access_key(s, "AKIAALICE1", &k), IOL_ENOT_FOUND);
	ck_assert_int_eq(meta_state_get_access_key(s, "AKIAALICE2", &k), IOL_ENOT_FOUND);
	ck_assert_int_eq(meta_state_get_user(s, "alice", &u), IOL_ENOT_FOUND);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

START_TEST(test_multipart)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "mpb", "alice");
	Iolake__Meta__MultipartUpload *u = tb_create_upload(t, "mpb", "big");
	Iolake__Meta__ObjectRecord *m = tb_alloc(t, sizeof(*m));
	iolake__meta__object_record__init(m);
	m->content_type = tb_str(t, "video/mp4");
	m->pg = 17;
	u->meta = m;
	ck_assert_int_eq(tb_apply(s, 1, t, res), 2);
	ck_assert_int_eq(res[1].err, 0);
	char id[17];
	strcpy(id, res[1].upload_id);
	ck_assert_uint_eq(strlen(id), 16);

	/* Three parts, part 2 uploaded twice (the first copy goes to GC). */
	const char *e[4] = { "", "0123456789abcdef0123456789abcdef",
			     "fedcba9876543210fedcba9876543210", "00112233445566778899aabbccddeeff" };
	t = tb_new();
	tb_part(t, id, 1, 5 << 20, e[1]);
	tb_part(t, id, 2, 5 << 20, e[1]);
	tb_part(t, id, 2, 5 << 20, e[2]);
	tb_part(t, id, 3, 1000, e[3]);
	tb_part(t, "00000000000000ff", 1, 1, e[1]);   /* no such upload */
	ck_assert_int_eq(tb_apply(s, 2, t, res), 5);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(res[i].err, 0);
	ck_assert_int_eq(res[4].err, IOL_ENOT_FOUND);
	uint64_t gc;
	ck_assert_int_eq(meta_state_gc_count(s, &gc), 0);
	ck_assert_uint_eq(gc, 1);

	/* Bad completes: wrong etag, wrong order, missing part. */
	t = tb_new();
	uint32_t bad_order[2] = { 3, 1 }, missing[2] = { 1, 4 }, ok[2] = { 1, 3 };
	const char *bad_e[2] = { e[1], e[2] }, *ok_e[2] = { e[1], e[3] };
	tb_complete(t, id, ok, bad_e, 2);
	tb_complete(t, id, bad_order, ok_e, 2);
	tb_complete(t, id, missing, ok_e, 2);
	tb_complete(t, id, ok, ok_e, 2);
	tb_complete(t, id, ok, ok_e, 2);   /* upload gone now */
	ck_assert_int_eq(tb_apply(s, 3, t, res), 5);
	ck_assert_int_eq(res[0].err, META_EINVALID_PART);
	ck_assert_int_eq(res[1].err, -EINVAL);
	ck_assert_int_eq(res[2].err, META_EINVALID_PART);
	ck_assert_int_eq(res[3].err, 0);
	ck_assert_int_eq(res[4].err, IOL_ENOT_FOUND);

	/* The ETag: MD5 of the binary part MD5s, "-2", computed here apart. */
	uint8_t bin[32], d[16];
	char hex[33], want[48];
	hash_unhex(e[1], 16, bin);
	hash_unhex(e[3], 16, bin + 16);
	hash_md5(bin, 32, d);
	hash_hex(d, 16, hex);
	snprintf(want, sizeof(want), "%s-2", hex);
	ck_assert_str_eq(res[3].etag, want);

	Iolake__Meta__ObjectRecord *r;
	ck_assert_int_eq(meta_state_head_object(s, "mpb", "big", &r), 0);
	ck_assert_str_eq(r->etag, want);
	ck_assert_str_eq(r->content_type, "video/mp4");
	ck_assert_uint_eq(r->pg, 17);
	ck_assert_uint_eq(r->size, (5 << 20) + 1000);
	ck_assert_uint_eq(r->parts_count, 2);
	ck_assert_uint_eq(r->n_segments, 2);
	ck_assert_uint_eq(r->segments[0]->offset, 0);
	ck_assert_uint_eq(r->segments[0]->shard_id, 1001);
	ck_assert_uint_eq(r->segments[1]->offset, 5 << 20);
	ck_assert_uint_eq(r->segments[1]->part_number, 3);
	meta_state_free_msg(r);
	/* Parts are gone; part 2 (unused) joined the GC queue. */
	Iolake__Meta__Part *p;
	ck_assert_int_eq(meta_state_get_part(s, id, 1, &p), IOL_ENOT_FOUND);
	ck_assert_int_eq(meta_state_get_part(s, id, 2, &p), IOL_ENOT_FOUND);
	Iolake__Meta__MultipartUpload *gone;
	ck_assert_int_eq(meta_state_get_upload(s, "mpb", "big", id, &gone), IOL_ENOT_FOUND);
	ck_assert_int_eq(meta_state_gc_count(s, &gc), 0);
	ck_assert_uint_eq(gc, 2);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

/* A part's CRC32 (4 bytes of v) on the last PutPart of t. */
static void tb_part_crc(struct tb *t, uint8_t v)
{
	Iolake__Meta__Part *p = t->ops[t->b.n_ops - 1]->put_part->part;
	Iolake__Meta__Checksum *ck = tb_alloc(t, sizeof(*ck));
	iolake__meta__checksum__init(ck);
	ck->algo = IOLAKE__META__CHECKSUM_ALGO__CHECKSUM_CRC32;
	uint8_t *raw = tb_alloc(t, 4);
	memset(raw, v, 4);
	ck->value.data = raw;
	ck->value.len = 4;
	p->checksums = tb_alloc(t, sizeof(*p->checksums));
	p->checksums[0] = ck;
	p->n_checksums = 1;
}

/* Multipart checksums in records: the upload's algorithm keeps each
 * part's value in part_list and the object's (CompleteMultipart.checksum)
 * in checksums; without an algorithm neither is stored. upload_id names
 * the upload either way. */
START_TEST(test_multipart_checksums)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	const char *e1 = "0123456789abcdef0123456789abcdef", *e2 = "fedcba9876543210fedcba9876543210";
	for (int with = 0; with < 2; with++) {
		struct tb *t = tb_new();
		if (!with)
			tb_create_bucket(t, 0, 0, "mpb", "alice");
		Iolake__Meta__MultipartUpload *u = tb_create_upload(t, "mpb", "big");
		if (with) {
			u->checksum_algo = IOLAKE__META__CHECKSUM_ALGO__CHECKSUM_CRC32;
			u->checksum_full_object = true;
		}
		int n = tb_apply(s, 1 + 3 * (uint64_t)with, t, res);
		ck_assert_int_eq(res[n - 1].err, 0);
		char id[17];
		strcpy(id, res[n - 1].upload_id);
		t = tb_new();
		tb_part(t, id, 1, 5 << 20, e1);
		tb_part_crc(t, 0x11);
		tb_part(t, id, 3, 10, e2);
		tb_part_crc(t, 0x33);
		ck_assert_int_eq(tb_apply(s, 2 + 3 * (uint64_t)with, t, res), 2);
		t = tb_new();
		uint32_t nums[2] = { 1, 3 };
		const char *etags[2] = { e1, e2 };
		tb_complete(t, id, nums, etags, 2);
		Iolake__Meta__CompleteMultipart *c = t->ops[0]->complete_multipart;
		c->checksum = tb_alloc(t, sizeof(*c->checksum));
		iolake__meta__checksum__init(c->checksum);
		c->checksum->algo = IOLAKE__META__CHECKSUM_ALGO__CHECKSUM_CRC32;
		c->checksum->value.data = (uint8_t *)"\x01\x02\x03\x04";
		c->checksum->value.len = 4;
		ck_assert_int_eq(tb_apply(s, 3 + 3 * (uint64_t)with, t, res), 1);
		ck_assert_int_eq(res[0].err, 0);
		Iolake__Meta__ObjectRecord *r;
		ck_assert_int_eq(meta_state_head_object(s, "mpb", "big", &r), 0);
		ck_assert_str_eq(r->upload_id, id);
		if (!with) {
			ck_assert_uint_eq(r->n_checksums, 0);
			ck_assert_uint_eq(r->n_part_list, 0);
		} else {
			ck_assert_uint_eq(r->n_checksums, 1);
			ck_assert_int_eq(memcmp(r->checksums[0]->value.data, "\x01\x02\x03\x04", 4), 0);
			ck_assert_uint_eq(r->n_part_list, 2);
			ck_assert_uint_eq(r->part_list[0]->part_number, 1);
			ck_assert_uint_eq(r->part_list[0]->size, 5 << 20);
			ck_assert_uint_eq(r->part_list[1]->part_number, 3);
			ck_assert_uint_eq(r->part_list[1]->size, 10);
			ck_assert_ptr_nonnull(r->part_list[1]->checksum);
			ck_assert_uint_eq(r->part_list[1]->checksum->value.data[0], 0x33);
		}
		meta_state_free_msg(r);
	}
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

/* Conditional PutPart (the gateway's form) and the multipart reads:
 * part generations, ListParts pages, ListUploads prefix and markers, and
 * each part's data_layout carried into the object's segments. */
START_TEST(test_multipart_parts)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "mpb", "alice");
	tb_create_upload(t, "mpb", "big");
	tb_create_upload(t, "mpb", "a/x");
	tb_create_upload(t, "mpb", "a/y");
	tb_create_upload(t, "mpb", "big");
	ck_assert_int_eq(tb_apply(s, 1, t, res), 5);
	char id[4][17];
	for (int i = 0; i < 4; i++)
		strcpy(id[i], res[i + 1].upload_id);
	const char *e1 = "0123456789abcdef0123456789abcdef";

	/* First upload of part 1: if_generation 0 (none yet). A second
	 * writer that also believes there is none conflicts. */
	t = tb_new();
	for (int i = 0; i < 3; i++) {
		tb_part(t, id[0], 1 + (i == 2), 5 << 20, e1);
		Iolake__Meta__PutPart *pp = t->b.ops[t->b.n_ops - 1]->put_part;
		pp->conditional = true;
		pp->part->segment->data_layout.data = (uint8_t *)tb_str(t, i == 2 ? "L2" : "L1");
		pp->part->segment->data_layout.len = 2;
	}
	ck_assert_int_eq(tb_apply(s, 2, t, res), 3);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_int_eq(res[1].err, IOL_ECONFLICT);
	ck_assert_int_eq(res[2].err, 0);
	Iolake__Meta__Part *p;
	ck_assert_int_eq(meta_state_get_part(s, id[0], 1, &p), 0);
	uint64_t gen1 = p->generation;
	ck_assert_uint_ne(gen1, 0);
	meta_state_free_msg(p);
	uint64_t gc0;
	ck_assert_int_eq(meta_state_gc_count(s, &gc0), 0);

	/* Replacing it names its generation; a stale generation conflicts. */
	t = tb_new();
	tb_part(t, id[0], 1, 5 << 20, e1);
	t->b.ops[0]->put_part->conditional = true;
	t->b.ops[0]->put_part->if_generation = gen1 + 1;
	tb_part(t, id[0], 1, 5 << 20, e1);
	t->b.ops[1]->put_part->conditional = true;
	t->b.ops[1]->put_part->if_generation = gen1;
	t->b.ops[1]->put_part->part->segment->data_layout.data = (uint8_t *)tb_str(t, "L3");
	t->b.ops[1]->put_part->part->segment->data_layout.len = 2;
	for (uint32_t n = 3; n <= 5; n++)
		tb_part(t, id[0], n, 1000, e1);
	ck_assert_int_eq(tb_apply(s, 3, t, res), 5);
	ck_assert_int_eq(res[0].err, IOL_ECONFLICT);
	ck_assert_int_eq(res[1].err, 0);
	uint64_t gc;
	ck_assert_int_eq(meta_state_gc_count(s, &gc), 0);
	ck_assert_uint_eq(gc, gc0 + 1);   /* the replaced part */

	/* ListParts: all, then pages. */
	Iolake__Meta__Part **v;
	size_t n;
	bool trunc;
	ck_assert_int_eq(meta_state_list_parts(s, id[0], 0, 0, &v, &n, &trunc), 0);
	ck_assert_uint_eq(n, 5);
	ck_assert(!trunc);
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_eq(v[i]->part_number, i + 1);
		meta_state_free_msg(v[i]);
	}
	free(v);
	ck_assert_int_eq(meta_state_list_parts(s, id[0], 1, 2, &v, &n, &trunc), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert(trunc);
	ck_assert_uint_eq(v[0]->part_number, 2);
	ck_assert_uint_eq(v[1]->part_number, 3);
	for (size_t i = 0; i < n; i++)
		meta_state_free_msg(v[i]);
	free(v);
	ck_assert_int_eq(meta_state_list_parts(s, id[1], 0, 0, &v, &n, &trunc), 0);
	ck_assert_uint_eq(n, 0);
	free(v);

	/* ListUploads: (key, upload id) order, prefix, markers, pages (more,
	 * with delimiters, in test_list.c). */
	struct meta_list_page pg;
	struct meta_list_uploads_req lq = { .bucket = "mpb", .max_uploads = 1000 };
	ck_assert_int_eq(meta_list_uploads(s, &lq, &pg), 0);
	ck_assert_uint_eq(pg.n, 4);
	ck_assert_str_eq(pg.entries[0].upload->key, "a/x");
	ck_assert_str_eq(pg.entries[1].upload->key, "a/y");
	ck_assert_str_eq(pg.entries[2].upload->upload_id, id[0]);
	ck_assert_str_eq(pg.entries[3].upload->upload_id, id[3]);
	meta_list_page_free(&pg);
	lq = (struct meta_list_uploads_req){ .bucket = "mpb", .prefix = "a/", .max_uploads = 1 };
	ck_assert_int_eq(meta_list_uploads(s, &lq, &pg), 0);
	ck_assert_uint_eq(pg.n, 1);
	ck_assert(pg.truncated);
	ck_assert_str_eq(pg.entries[0].upload->key, "a/x");
	meta_list_page_free(&pg);
	lq = (struct meta_list_uploads_req){ .bucket = "mpb", .prefix = "", .key_marker = "big",
					     .upload_id_marker = id[0], .max_uploads = 1000 };
	ck_assert_int_eq(meta_list_uploads(s, &lq, &pg), 0);
	ck_assert_uint_eq(pg.n, 1);
	ck_assert_str_eq(pg.entries[0].upload->upload_id, id[3]);
	meta_list_page_free(&pg);
	lq = (struct meta_list_uploads_req){ .bucket = "mpb", .key_marker = "a/x",
					     .upload_id_marker = "", .max_uploads = 1000 };
	ck_assert_int_eq(meta_list_uploads(s, &lq, &pg), 0);
	ck_assert_uint_eq(pg.n, 3);
	ck_assert_str_eq(pg.entries[0].upload->key, "a/y");
	meta_list_page_free(&pg);

	/* Every PutPart moved the upload's parts_generation: Complete and
	 * Abort conditional on an older one conflict. */
	Iolake__Meta__MultipartUpload *up;
	ck_assert_int_eq(meta_state_get_upload(s, "mpb", "big", id[0], &up), 0);
	uint64_t pgen = up->parts_generation;
	meta_state_free_msg(up);
	ck_assert_int_eq(meta_state_get_part(s, id[0], 5, &p), 0);
	ck_assert_uint_eq(pgen, p->generation);   /* part 5 was the last PutPart */
	meta_state_free_msg(p);
	t = tb_new();
	uint32_t nums[2] = { 1, 2 };
	const char *es[2] = { e1, e1 };
	tb_complete(t, id[0], nums, es, 2);
	t->b.ops[0]->complete_multipart->parts_conditional = true;
	t->b.ops[0]->complete_multipart->if_parts_generation = gen1;
	for (int i = 0; i < 2; i++) {
		Iolake__Meta__Op *aop = tb_op(t, 0, 0);
		Iolake__Meta__AbortMultipart *am = tb_alloc(t, sizeof(*am));
		iolake__meta__abort_multipart__init(am);
		am->bucket = tb_str(t, "mpb");
		am->key = tb_str(t, "big");
		am->upload_id = tb_str(t, id[3]);
		am->parts_conditional = true;
		am->if_parts_generation = i == 0 ? 1 : 0;   /* it has no parts: 0 */
		aop->body_case = IOLAKE__META__OP__BODY_ABORT_MULTIPART;
		aop->abort_multipart = am;
	}
	ck_assert_int_eq(tb_apply(s, 4, t, res), 3);
	ck_assert_int_eq(res[0].err, IOL_ECONFLICT);
	ck_assert_int_eq(res[1].err, IOL_ECONFLICT);
	ck_assert_int_eq(res[2].err, 0);

	/* Complete 1, 2 (conditional on the current parts): the segments
	 * carry the parts' layouts. */
	t = tb_new();
	tb_complete(t, id[0], nums, es, 2);
	t->b.ops[0]->complete_multipart->parts_conditional = true;
	t->b.ops[0]->complete_multipart->if_parts_generation = pgen;
	ck_assert_int_eq(tb_apply(s, 5, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);
	Iolake__Meta__ObjectRecord *r;
	ck_assert_int_eq(meta_state_head_object(s, "mpb", "big", &r), 0);
	ck_assert_uint_eq(r->n_segments, 2);
	ck_assert_uint_eq(r->segments[0]->data_layout.len, 2);
	ck_assert(memcmp(r->segments[0]->data_layout.data, "L3", 2) == 0);
	ck_assert(memcmp(r->segments[1]->data_layout.data, "L2", 2) == 0);
	ck_assert_uint_eq(r->segments[1]->offset, 5 << 20);
	meta_state_free_msg(r);
	ck_assert_int_eq(meta_state_list_parts(s, id[0], 0, 0, &v, &n, &trunc), 0);
	ck_assert_uint_eq(n, 0);
	free(v);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

/* CreateGroup id with voters ids[0..n) at "127.0.0.1:<7000 + 2 id>". */
static void tb_create_group(struct tb *t, uint64_t id, const uint64_t *ids, size_t n)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__CreateGroup *cg = tb_alloc(t, sizeof(*cg));
	Iolake__Meta__GroupDesc *d = tb_alloc(t, sizeof(*d));
	iolake__meta__create_group__init(cg);
	iolake__meta__group_desc__init(d);
	d->id = id;
	d->n_voters = n;
	d->voters = tb_alloc(t, (n ? n : 1) * sizeof(*d->voters));
	for (size_t i = 0; i < n; i++) {
		d->voters[i] = tb_alloc(t, sizeof(**d->voters));
		iolake__meta__group_voter__init(d->voters[i]);
		d->voters[i]->id = ids[i];
		char a[32];
		snprintf(a, sizeof(a), "127.0.0.1:%u", (unsigned)(7000 + 2 * ids[i]));
		d->voters[i]->address = tb_str(t, a);
	}
	cg->group = d;
	op->body_case = IOLAKE__META__OP__BODY_CREATE_GROUP;
	op->create_group = cg;
}

static void tb_delete_group(struct tb *t, uint64_t id)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__DeleteGroup *dg = tb_alloc(t, sizeof(*dg));
	iolake__meta__delete_group__init(dg);
	dg->id = id;
	op->body_case = IOLAKE__META__OP__BODY_DELETE_GROUP;
	op->delete_group = dg;
}

START_TEST(test_groups)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	const uint64_t v3[] = { 1, 2, 3 }, dup[] = { 1, 2, 1 }, zero[] = { 1, 0 };
	const uint64_t v10[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
	struct tb *t = tb_new();
	tb_create_group(t, 1, v3, 3);
	tb_create_group(t, 2, v3 + 1, 2);
	tb_create_group(t, 1, v3, 3);        /* taken */
	tb_create_group(t, 0, v3, 3);        /* the root's id */
	tb_create_group(t, 3, v3, 0);        /* no voters */
	tb_create_group(t, 3, v10, 10);      /* too many */
	tb_create_group(t, 3, dup, 3);       /* a voter twice */
	tb_create_group(t, 3, zero, 2);      /* voter id 0 */
	ck_assert_int_eq(tb_apply(s, 1, t, res), 8);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert(res[0].groups);
	ck_assert_int_eq(res[1].err, 0);
	ck_assert_int_eq(res[2].err, IOL_EEXISTS);
	ck_assert(!res[2].groups);
	for (int i = 3; i < 8; i++)
		ck_assert_int_eq(res[i].err, -EINVAL);

	/* A bad address is refused too. */
	t = tb_new();
	tb_create_group(t, 3, v3, 3);
	t->ops[0]->create_group->group->voters[1]->address = tb_str(t, "no-port");
	ck_assert_int_eq(tb_apply(s, 2, t, res), 1);
	ck_assert_int_eq(res[0].err, -EINVAL);

	Iolake__Meta__GroupDesc **g;
	size_t n;
	ck_assert_int_eq(meta_state_list_groups(s, &g, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(g[0]->id, 1);
	ck_assert_uint_eq(g[0]->n_voters, 3);
	ck_assert_str_eq(g[0]->voters[2]->address, "127.0.0.1:7006");
	ck_assert_uint_eq(g[0]->created_index, 1);
	ck_assert(!g[0]->deleted);
	ck_assert_uint_eq(g[1]->id, 2);
	ck_assert_uint_eq(g[1]->voters[0]->id, 2);
	for (size_t i = 0; i < n; i++)
		meta_state_free_msg(g[i]);
	free(g);

	/* Delete: a tombstone; a second delete and an unknown id NOT_FOUND;
	 * the id is never taken again. */
	t = tb_new();
	tb_delete_group(t, 1);
	tb_delete_group(t, 1);
	tb_delete_group(t, 9);
	tb_delete_group(t, 0);
	tb_create_group(t, 1, v3, 3);
	ck_assert_int_eq(tb_apply(s, 3, t, res), 5);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert(res[0].groups);
	ck_assert_int_eq(res[1].err, IOL_ENOT_FOUND);
	ck_assert_int_eq(res[2].err, IOL_ENOT_FOUND);
	ck_assert_int_eq(res[3].err, -EINVAL);
	ck_assert_int_eq(res[4].err, IOL_EEXISTS);
	ck_assert_int_eq(meta_state_list_groups(s, &g, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert(g[0]->deleted);
	ck_assert_uint_eq(g[0]->deleted_index, 3);
	ck_assert(!g[1]->deleted);
	for (size_t i = 0; i < n; i++)
		meta_state_free_msg(g[i]);
	free(g);

	/* At most META_GROUPS_MAX live groups: tombstones do not count. */
	t = tb_new();
	for (uint64_t id = 10; id < 10 + META_GROUPS_MAX; id++)
		tb_create_group(t, id, v3, 1);
	ck_assert_int_eq(tb_apply(s, 4, t, res), META_GROUPS_MAX);
	ck_assert_int_eq(res[META_GROUPS_MAX - 2].err, 0);
	ck_assert_int_eq(res[META_GROUPS_MAX - 1].err, -EINVAL);   /* group 2 is live */

	/* The table survives a reopen, and digests cover it. */
	uint8_t d1[32], d2[32];
	digest(s, d1);
	meta_state_close(s);
	s = open_at(dir);
	digest(s, d2);
	ck_assert(!memcmp(d1, d2, 32));
	ck_assert_int_eq(meta_state_list_groups(s, &g, &n), 0);
	ck_assert_uint_eq(n, 2 + META_GROUPS_MAX - 1);
	for (size_t i = 0; i < n; i++)
		meta_state_free_msg(g[i]);
	free(g);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

/* Two states on one shared block cache: both read through it, and closing
 * them leaves the cache to its owner. */
START_TEST(test_shared_cache)
{
	struct meta_state_cache *cache;
	ck_assert_int_eq(meta_state_cache_new(16 << 20, &cache), 0);
	char d1[64], d2[64];
	tmpdir(d1);
	tmpdir(d2);
	struct meta_state_opts o = { .cache = cache, .write_buffer_bytes = 4 << 20,
				     .max_open_files = 32 };
	struct meta_state *s1, *s2;
	ck_assert_int_eq(meta_state_open(d1, &o, &s1), 0);
	ck_assert_int_eq(meta_state_open(d2, &o, &s2), 0);
	struct meta_state *both[2] = { s1, s2 };
	for (int k = 0; k < 2; k++) {
		struct tb *t = tb_new();
		tb_create_bucket(t, 0, 0, "bkt", "me");
		for (int i = 0; i < 200; i++) {
			char key[32];
			snprintf(key, sizeof(key), "k%03d", i);
			tb_put(t, 0, 0, "bkt", key, 100);
		}
		ck_assert_int_eq(tb_apply(both[k], 1, t, res), 201);
		char cp[80];
		snprintf(cp, sizeof(cp), "%s/cp", k ? d2 : d1);
		ck_assert_int_eq(meta_state_checkpoint(both[k], cp), 0);   /* flushes: SSTs */
		Iolake__Meta__ObjectRecord *rec;
		ck_assert_int_eq(meta_state_head_object(both[k], "bkt", "k007", &rec), 0);
		meta_state_free_msg(rec);
	}
	ck_assert_uint_gt(meta_state_cache_usage(cache), 0);
	meta_state_close(s1);
	meta_state_close(s2);
	meta_state_cache_free(cache);
	rm_rf(d1);
	rm_rf(d2);
}
END_TEST

static void *xmalloc(size_t n)
{
	return malloc(n);
}

/* A file snapshot's install: a checkpoint of a replaces b's whole state in
 * small batches (many writes), b's digest equals a's, and it survives a
 * restart with no install pending. */
START_TEST(test_install)
{
	unsigned seed = test_seed("test_install");
	struct log lg;
	make_log(&lg, seed, 40);
	char d1[64], d2[64], d3[64];
	tmpdir(d1);
	tmpdir(d2);
	tmpdir(d3);
	struct meta_state *a = open_at(d1);
	for (size_t i = 0; i < lg.n; i++)
		meta_state_apply(a, i + 1, lg.e[i], lg.len[i], res, META_BATCH_MAX_OPS);
	uint8_t da[32], dbuf[32];
	digest(a, da);
	rm_rf(d3);
	ck_assert_int_eq(meta_state_checkpoint(a, d3), 0);
	uint64_t ca = 0;
	ck_assert_int_eq(meta_state_checkpoint_applied(d3, &ca), 0);
	ck_assert_uint_eq(ca, lg.n);

	struct meta_state *b = open_at(d2);
	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "stale", "x");
	ck_assert_int_eq(tb_apply(b, 500, t, res), 1);
	Iolake__Meta__Bucket *bk;
	ck_assert_int_eq(meta_state_get_bucket(b, "stale", &bk), 0);   /* kept */
	meta_state_free_msg(bk);
	ck_assert_int_eq(meta_state_install(b, d3, "cp-test", 256), 0);
	char tag[32];
	ck_assert_int_eq(meta_state_install_pending(b, tag, sizeof(tag)), 0);
	digest(b, dbuf);
	ck_assert_mem_eq(da, dbuf, 32);
	ck_assert_uint_eq(meta_state_applied_index(b), lg.n);
	ck_assert_int_eq(meta_state_get_bucket(b, "stale", &bk), IOL_ENOT_FOUND);
	/* Installing it again changes nothing (an interrupted install redone). */
	ck_assert_int_eq(meta_state_install(b, d3, "cp-test", 0), 0);
	digest(b, dbuf);
	ck_assert_mem_eq(da, dbuf, 32);
	meta_state_close(b);
	b = open_at(d2);
	ck_assert_uint_eq(meta_state_applied_index(b), lg.n);
	digest(b, dbuf);
	ck_assert_mem_eq(da, dbuf, 32);
	/* Later entries apply on top alike; replays at or below "A" skip. */
	t = tb_new();
	tb_put(t, 0, 0, "logb", "after", 1);
	ck_assert_int_eq(tb_apply(b, lg.n, t, res), 0);
	t = tb_new();
	tb_put(t, 0, 0, "logb", "after", 1);
	ck_assert_int_eq(tb_apply(b, lg.n + 1, t, res), 1);
	t = tb_new();
	tb_put(t, 0, 0, "logb", "after", 1);
	ck_assert_int_eq(tb_apply(a, lg.n + 1, t, res), 1);
	digest(a, da);
	digest(b, dbuf);
	ck_assert_mem_eq(da, dbuf, 32);
	/* Not a checkpoint: refused, marker not left behind. */
	ck_assert_int_ne(meta_state_install(b, "/nonexistent-iolake", "x", 0), 0);
	ck_assert_int_eq(meta_state_install_pending(b, tag, sizeof(tag)), 0);
	meta_state_close(b);
	meta_state_close(a);
	free_log(&lg);
	rm_rf(d1);
	rm_rf(d2);
	rm_rf(d3);
}
END_TEST

START_TEST(test_snapshot)
{
	unsigned seed = test_seed("test_snapshot");
	struct log lg;
	make_log(&lg, seed, 40);
	char d1[64], d2[64], d3[64];
	tmpdir(d1);
	tmpdir(d2);
	tmpdir(d3);
	struct meta_state *a = open_at(d1);
	for (size_t i = 0; i < lg.n; i++)
		meta_state_apply(a, i + 1, lg.e[i], lg.len[i], res, META_BATCH_MAX_OPS);
	uint8_t da[32], dbuf[32];
	digest(a, da);
	uint8_t *snap;
	size_t len;
	ck_assert_int_eq(meta_state_export(a, xmalloc, free, &snap, &len), 0);

	/* Import into a member with other state: replaced wholesale. */
	struct meta_state *b = open_at(d2);
	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "stale", "x");
	ck_assert_int_eq(tb_apply(b, 500, t, res), 1);
	Iolake__Meta__Bucket *bk;
	ck_assert_int_eq(meta_state_get_bucket(b, "stale", &bk), 0);   /* kept */
	meta_state_free_msg(bk);
	/* Corrupt copies are refused and change nothing. */
	uint8_t dpre[32];
	digest(b, dpre);
	snap[len / 2] ^= 1;
	ck_assert_int_eq(meta_state_import(b, snap, len), IOL_ECORRUPT);
	snap[len / 2] ^= 1;
	ck_assert_int_eq(meta_state_import(b, snap, len - 1), IOL_ECORRUPT);
	digest(b, dbuf);
	ck_assert_mem_eq(dpre, dbuf, 32);
	ck_assert_int_eq(meta_state_import(b, snap, len), 0);
	digest(b, dbuf);
	ck_assert_mem_eq(da, dbuf, 32);
	ck_assert_uint_eq(meta_state_applied_index(b), lg.n);
	ck_assert_int_eq(meta_state_get_bucket(b, "stale", &bk), IOL_ENOT_FOUND);
	/* It survives a restart, and later entries apply on top alike. */
	meta_state_close(b);
	b = open_at(d2);
	ck_assert_uint_eq(meta_state_applied_index(b), lg.n);
	t = tb_new();
	tb_put(t, 0, 0, "logb", "after", 1);
	ck_assert_int_eq(tb_apply(b, lg.n + 1, t, res), 1);
	t = tb_new();
	tb_put(t, 0, 0, "logb", "after", 1);
	ck_assert_int_eq(tb_apply(a, lg.n + 1, t, res), 1);
	digest(a, da);
	digest(b, dbuf);
	ck_assert_mem_eq(da, dbuf, 32);
	free(snap);

	/* A RocksDB checkpoint opens as an equal state. */
	rm_rf(d3);
	ck_assert_int_eq(meta_state_checkpoint(a, d3), 0);
	struct meta_state *c = open_at(d3);
	digest(c, dbuf);
	ck_assert_mem_eq(da, dbuf, 32);
	meta_state_close(c);
	meta_state_close(b);
	meta_state_close(a);
	free_log(&lg);
	rm_rf(d1);
	rm_rf(d2);
	rm_rf(d3);
}
END_TEST

START_TEST(test_malformed_entries)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	uint8_t junk[16] = { 'I', 'O', 'L', 'M', 8, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	ck_assert_int_eq(meta_state_apply(s, 1, junk, sizeof(junk), res, 4), IOL_EPROTOCOL);
	ck_assert_uint_eq(meta_state_applied_index(s), 1);
	ck_assert_int_eq(meta_state_apply(s, 2, junk, 12, res, 4), IOL_EPROTOCOL);
	junk[0] = 'X';
	ck_assert_int_eq(meta_state_apply(s, 3, junk, 16, res, 4), IOL_EPROTOCOL);
	/* Too small a result array: refused before anything is applied. */
	struct tb *t = tb_new();
	for (int i = 0; i < 5; i++)
		tb_create_bucket(t, 0, 0, "many", "x");
	size_t len;
	uint8_t *e = tb_encode(t, &len);
	tb_free(t);
	ck_assert_int_eq(meta_state_apply(s, 4, e, len, res, 4), -ENOBUFS);
	ck_assert_uint_eq(meta_state_applied_index(s), 3);
	ck_assert_int_eq(meta_state_apply(s, 4, e, len, res, 5), 5);
	free(e);
	/* An entry over the limit is refused by the encoder. */
	t = tb_new();
	for (int i = 0; i < TB_MAX_OPS; i++)
		tb_put(t, 0, 0, "many", "0123456789012345678901234567890123456789", 300);
	uint8_t small[8];
	ck_assert_int_eq(meta_state_entry_encode(&t->b, small, sizeof(small)), IOL_ETOO_LARGE);
	tb_free(t);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

/* SetObjectTags / SetBucketTags: nkv tags "k0=v0"... ; n < 0 writes -n
 * tags all named "dup". */
static Iolake__Meta__SetObjectTags *tb_obj_tags(struct tb *t, const char *bucket, const char *key,
						 int n)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__SetObjectTags *st = tb_alloc(t, sizeof(*st));
	iolake__meta__set_object_tags__init(st);
	st->bucket = tb_str(t, bucket);
	st->key = tb_str(t, key);
	size_t cnt = (size_t)(n < 0 ? -n : n);
	st->n_tags = cnt;
	st->tags = tb_alloc(t, (cnt + 1) * sizeof(*st->tags));
	for (size_t i = 0; i < cnt; i++) {
		Iolake__Meta__SetObjectTags__TagsEntry *e = tb_alloc(t, sizeof(*e));
		iolake__meta__set_object_tags__tags_entry__init(e);
		char kb[32], vb[32];
		snprintf(kb, sizeof(kb), n < 0 ? "dup" : "k%zu", i);
		snprintf(vb, sizeof(vb), "v%zu", i);
		e->key = tb_str(t, kb);
		e->value = tb_str(t, vb);
		st->tags[i] = e;
	}
	op->body_case = IOLAKE__META__OP__BODY_PUT_OBJECT_TAGS;
	op->put_object_tags = st;
	return st;
}

static void tb_bucket_tags(struct tb *t, const char *name, size_t n)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__SetBucketTags *st = tb_alloc(t, sizeof(*st));
	iolake__meta__set_bucket_tags__init(st);
	st->name = tb_str(t, name);
	st->n_tags = n;
	st->tags = tb_alloc(t, (n + 1) * sizeof(*st->tags));
	for (size_t i = 0; i < n; i++) {
		Iolake__Meta__SetBucketTags__TagsEntry *e = tb_alloc(t, sizeof(*e));
		iolake__meta__set_bucket_tags__tags_entry__init(e);
		char kb[32];
		snprintf(kb, sizeof(kb), "b%zu", i);
		e->key = tb_str(t, kb);
		e->value = tb_str(t, "");
		st->tags[i] = e;
	}
	op->body_case = IOLAKE__META__OP__BODY_PUT_BUCKET_TAGS;
	op->put_bucket_tags = st;
}

/* A SetBucketCors op with n rules (rules without a method when bad). */
static void tb_bucket_cors(struct tb *t, const char *name, size_t n, bool bad)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__SetBucketCors *sc = tb_alloc(t, sizeof(*sc));
	iolake__meta__set_bucket_cors__init(sc);
	sc->name = tb_str(t, name);
	if (n) {
		Iolake__Meta__CorsConfig *c = tb_alloc(t, sizeof(*c));
		iolake__meta__cors_config__init(c);
		c->n_rules = n;
		c->rules = tb_alloc(t, n * sizeof(*c->rules));
		for (size_t i = 0; i < n; i++) {
			Iolake__Meta__CorsRule *r = tb_alloc(t, sizeof(*r));
			iolake__meta__cors_rule__init(r);
			r->n_allowed_origins = 1;
			r->allowed_origins = tb_alloc(t, sizeof(char *));
			r->allowed_origins[0] = tb_str(t, "http://a.example");
			if (!bad) {
				r->n_allowed_methods = 1;
				r->allowed_methods = tb_alloc(t, sizeof(char *));
				r->allowed_methods[0] = tb_str(t, "GET");
			}
			r->has_max_age = true;
			r->max_age_seconds = (int32_t)i;
			c->rules[i] = r;
		}
		sc->cors = c;
	}
	op->body_case = IOLAKE__META__OP__BODY_SET_BUCKET_CORS;
	op->set_bucket_cors = sc;
}

/* Bucket CORS (issue 18): set, kept with the other fields, the generation
 * unchanged; refused shapes change nothing; absent deletes it. */
START_TEST(test_bucket_cors)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "corsb", "alice");
	tb_bucket_tags(t, "corsb", 2);
	ck_assert_int_eq(tb_apply(s, 1, t, res), 2);
	Iolake__Meta__Bucket *b;
	ck_assert_int_eq(meta_state_get_bucket(s, "corsb", &b), 0);
	uint64_t gen = b->generation;
	ck_assert_ptr_null(b->cors);
	meta_state_free_msg(b);

	t = tb_new();
	tb_bucket_cors(t, "corsb", 3, false);
	tb_bucket_cors(t, "nobucket", 1, false);
	tb_bucket_cors(t, "corsb", 1, true);                     /* a rule without a method */
	tb_bucket_cors(t, "corsb", META_CORS_RULES_MAX + 1, false); /* too many */
	ck_assert_int_eq(tb_apply(s, 2, t, res), 4);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_int_eq(res[1].err, IOL_ENOT_FOUND);
	ck_assert_int_eq(res[2].err, -EINVAL);
	ck_assert_int_eq(res[3].err, -EINVAL);
	ck_assert_int_eq(meta_state_get_bucket(s, "corsb", &b), 0);
	ck_assert_ptr_nonnull(b->cors);
	ck_assert_uint_eq(b->cors->n_rules, 3);
	ck_assert_str_eq(b->cors->rules[2]->allowed_methods[0], "GET");
	ck_assert_int_eq(b->cors->rules[2]->max_age_seconds, 2);
	ck_assert_uint_eq(b->n_tags, 2);
	ck_assert_str_eq(b->owner, "alice");
	ck_assert_uint_eq(b->generation, gen);
	meta_state_free_msg(b);

	t = tb_new();
	tb_bucket_cors(t, "corsb", 0, false);
	ck_assert_int_eq(tb_apply(s, 3, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_int_eq(meta_state_get_bucket(s, "corsb", &b), 0);
	ck_assert_ptr_null(b->cors);
	ck_assert_uint_eq(b->n_tags, 2);
	meta_state_free_msg(b);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

/* A SetBucketEncryption op (issue 18, sse). */
static void tb_bucket_sse(struct tb *t, const char *name, Iolake__Meta__SseKind kind, bool bk)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__SetBucketEncryption *se = tb_alloc(t, sizeof(*se));
	iolake__meta__set_bucket_encryption__init(se);
	se->name = tb_str(t, name);
	se->default_sse = kind;
	se->bucket_key = bk;
	op->body_case = IOLAKE__META__OP__BODY_SET_BUCKET_ENCRYPTION;
	op->set_bucket_encryption = se;
}

/* Bucket default encryption: set (SSE-S3 only; SSE-C is no default),
 * kept with the other fields, the generation unchanged; deleted. */
START_TEST(test_bucket_encryption)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "sseb", "alice");
	tb_bucket_tags(t, "sseb", 2);
	ck_assert_int_eq(tb_apply(s, 1, t, res), 2);
	Iolake__Meta__Bucket *b;
	ck_assert_int_eq(meta_state_get_bucket(s, "sseb", &b), 0);
	uint64_t gen = b->generation;
	ck_assert_int_eq(b->default_sse, IOLAKE__META__SSE_KIND__SSE_NONE);
	meta_state_free_msg(b);

	t = tb_new();
	tb_bucket_sse(t, "sseb", IOLAKE__META__SSE_KIND__SSE_S3, true);
	tb_bucket_sse(t, "nobucket", IOLAKE__META__SSE_KIND__SSE_S3, false);
	tb_bucket_sse(t, "sseb", IOLAKE__META__SSE_KIND__SSE_C, false);    /* no such default */
	tb_bucket_sse(t, "sseb", (Iolake__Meta__SseKind)7, false);
	ck_assert_int_eq(tb_apply(s, 2, t, res), 4);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_int_eq(res[1].err, IOL_ENOT_FOUND);
	ck_assert_int_eq(res[2].err, -EINVAL);
	ck_assert_int_eq(res[3].err, -EINVAL);
	ck_assert_int_eq(meta_state_get_bucket(s, "sseb", &b), 0);
	ck_assert_int_eq(b->default_sse, IOLAKE__META__SSE_KIND__SSE_S3);
	ck_assert(b->sse_bucket_key);
	ck_assert_uint_eq(b->n_tags, 2);
	ck_assert_str_eq(b->owner, "alice");
	ck_assert_uint_eq(b->generation, gen);
	meta_state_free_msg(b);

	t = tb_new();
	tb_bucket_sse(t, "sseb", IOLAKE__META__SSE_KIND__SSE_NONE, true);
	ck_assert_int_eq(tb_apply(s, 3, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_int_eq(meta_state_get_bucket(s, "sseb", &b), 0);
	ck_assert_int_eq(b->default_sse, IOLAKE__META__SSE_KIND__SSE_NONE);
	ck_assert(!b->sse_bucket_key);
	ck_assert_uint_eq(b->n_tags, 2);
	meta_state_free_msg(b);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

START_TEST(test_tags)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	uint64_t gc0 = 0, gc1 = 0;
	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "tags", "alice");
	tb_put(t, 0, 0, "tags", "obj", 5000); /* has shards */
	ck_assert_int_eq(tb_apply(s, 1, t, res), 2);
	uint64_t g1 = res[1].generation;
	ck_assert_int_eq(meta_state_gc_count(s, &gc0), 0);

	t = tb_new();
	tb_obj_tags(t, "tags", "obj", 3)->if_generation = g1;          /* ok */
	tb_obj_tags(t, "tags", "obj", 2)->if_generation = g1 + 1;      /* wrong gen */
	tb_obj_tags(t, "tags", "nope", 1);                             /* no record */
	tb_obj_tags(t, "tags", "obj", -2);                             /* duplicate keys */
	tb_obj_tags(t, "tags", "obj", META_TAGS_MAX + 1);              /* too many */
	tb_bucket_tags(t, "tags", 4);
	tb_bucket_tags(t, "nobucket", 1);
	ck_assert_int_eq(tb_apply(s, 2, t, res), 7);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_int_eq(res[1].err, IOL_ECONFLICT);
	ck_assert_int_eq(res[2].err, IOL_ENOT_FOUND);
	ck_assert_int_eq(res[3].err, -EINVAL);
	ck_assert_int_eq(res[4].err, -EINVAL);
	ck_assert_int_eq(res[5].err, 0);
	ck_assert_int_eq(res[6].err, IOL_ENOT_FOUND);

	/* Same generation and data, new tags, nothing queued for GC. */
	Iolake__Meta__ObjectRecord *r;
	ck_assert_int_eq(meta_state_head_object(s, "tags", "obj", &r), 0);
	ck_assert_uint_eq(r->generation, g1);
	ck_assert_uint_eq(r->size, 5000);
	ck_assert_uint_eq(r->n_segments, 1);
	ck_assert_uint_eq(r->n_tags, 3);
	ck_assert_str_eq(r->tags[2]->key, "k2");
	ck_assert_str_eq(r->tags[2]->value, "v2");
	meta_state_free_msg(r);
	ck_assert_int_eq(meta_state_gc_count(s, &gc1), 0);
	ck_assert_uint_eq(gc1, gc0);
	Iolake__Meta__Bucket *b;
	ck_assert_int_eq(meta_state_get_bucket(s, "tags", &b), 0);
	ck_assert_uint_eq(b->n_tags, 4);
	ck_assert_str_eq(b->owner, "alice");
	meta_state_free_msg(b);

	/* A tag change does not block a writer holding the generation; an
	 * overwrite drops the tags; empty tags delete them. */
	t = tb_new();
	tb_obj_tags(t, "tags", "obj", 0)->if_generation = g1;
	tb_bucket_tags(t, "tags", 0);
	tb_put(t, 0, 0, "tags", "obj", 7)->if_generation = g1;
	tb_obj_tags(t, "tags", "obj", 1)->if_generation = g1;        /* stale now */
	ck_assert_int_eq(tb_apply(s, 3, t, res), 4);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_int_eq(res[1].err, 0);
	ck_assert_int_eq(res[2].err, 0);
	ck_assert_int_eq(res[3].err, IOL_ECONFLICT);
	ck_assert_int_eq(meta_state_head_object(s, "tags", "obj", &r), 0);
	ck_assert_uint_eq(r->n_tags, 0);
	ck_assert_uint_eq(r->size, 7);
	meta_state_free_msg(r);
	ck_assert_int_eq(meta_state_get_bucket(s, "tags", &b), 0);
	ck_assert_uint_eq(b->n_tags, 0);
	meta_state_free_msg(b);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

static Iolake__Meta__Acl *tb_acl(struct tb *t, Iolake__Meta__CannedAcl canned, size_t n_users,
				  uint32_t perm)
{
	Iolake__Meta__Acl *a = tb_alloc(t, sizeof(*a));
	iolake__meta__acl__init(a);
	a->canned = canned;
	a->n_grants = n_users;
	a->grants = tb_alloc(t, (n_users + 1) * sizeof(*a->grants));
	for (size_t i = 0; i < n_users; i++) {
		Iolake__Meta__AclGrant *g = tb_alloc(t, sizeof(*g));
		iolake__meta__acl_grant__init(g);
		g->permission = (Iolake__Meta__AclPermission)perm;
		g->user_id.len = 32;
		g->user_id.data = tb_alloc(t, 32);
		memset(g->user_id.data, (int)i, 32);
		a->grants[i] = g;
	}
	return a;
}

static Iolake__Meta__SetBucketAccess *tb_bucket_access(struct tb *t, const char *name)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__SetBucketAccess *sa = tb_alloc(t, sizeof(*sa));
	iolake__meta__set_bucket_access__init(sa);
	sa->name = tb_str(t, name);
	op->body_case = IOLAKE__META__OP__BODY_SET_BUCKET_ACCESS;
	op->set_bucket_access = sa;
	return sa;
}

static Iolake__Meta__SetObjectAcl *tb_object_acl(struct tb *t, const char *bucket, const char *key,
						 Iolake__Meta__Acl *acl)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__SetObjectAcl *sa = tb_alloc(t, sizeof(*sa));
	iolake__meta__set_object_acl__init(sa);
	sa->bucket = tb_str(t, bucket);
	sa->key = tb_str(t, key);
	sa->acl = acl;
	op->body_case = IOLAKE__META__OP__BODY_SET_OBJECT_ACL;
	op->set_object_acl = sa;
	return sa;
}

/* ACLs and Object Ownership: SetBucketAccess (conditional on the bucket's
 * generation, which it moves), SetObjectAcl (keeps the object's
 * generation and data), the shape checks. */
START_TEST(test_access)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "acl", "alice");
	tb_put(t, 0, 0, "acl", "obj", 5000);
	ck_assert_int_eq(tb_apply(s, 1, t, res), 2);
	uint64_t g1 = res[1].generation;
	Iolake__Meta__Bucket *b;
	ck_assert_int_eq(meta_state_get_bucket(s, "acl", &b), 0);
	uint64_t bg = b->generation;
	ck_assert_uint_ne(bg, 0);   /* assigned at create */
	ck_assert_ptr_null(b->acl);
	meta_state_free_msg(b);

	t = tb_new();
	Iolake__Meta__SetBucketAccess *sa = tb_bucket_access(t, "acl");      /* ok */
	sa->conditional = true;
	sa->if_generation = bg;
	sa->set_acl = true;
	sa->acl = tb_acl(t, IOLAKE__META__CANNED_ACL__CANNED_PUBLIC_READ, 0, 0);
	sa->set_ownership = true;
	sa->object_ownership = IOLAKE__META__OBJECT_OWNERSHIP__OWNERSHIP_OBJECT_WRITER;
	sa = tb_bucket_access(t, "acl");                                   /* stale generation */
	sa->conditional = true;
	sa->if_generation = bg;
	sa->set_ownership = true;
	sa = tb_bucket_access(t, "nobucket");                              /* no bucket */
	sa = tb_bucket_access(t, "acl");                                   /* bad grant */
	sa->set_acl = true;
	sa->acl = tb_acl(t, 0, 1, 9);
	sa = tb_bucket_access(t, "acl");                                   /* 101 grants */
	sa->set_acl = true;
	sa->acl = tb_acl(t, 0, META_ACL_GRANTS_MAX + 1, 1);
	tb_object_acl(t, "acl", "obj", tb_acl(t, 0, 2, 5))->if_generation = g1;   /* ok */
	tb_object_acl(t, "acl", "obj", NULL)->if_generation = g1 + 1;            /* stale */
	tb_object_acl(t, "acl", "nope", NULL);                                   /* no record */
	ck_assert_int_eq(tb_apply(s, 2, t, res), 8);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_int_eq(res[1].err, IOL_ECONFLICT);
	ck_assert_int_eq(res[2].err, IOL_ENOT_FOUND);
	ck_assert_int_eq(res[3].err, -EINVAL);
	ck_assert_int_eq(res[4].err, -EINVAL);
	ck_assert_int_eq(res[5].err, 0);
	ck_assert_int_eq(res[6].err, IOL_ECONFLICT);
	ck_assert_int_eq(res[7].err, IOL_ENOT_FOUND);

	ck_assert_int_eq(meta_state_get_bucket(s, "acl", &b), 0);
	ck_assert_uint_gt(b->generation, bg);
	ck_assert_ptr_nonnull(b->acl);
	ck_assert_int_eq(b->acl->canned, IOLAKE__META__CANNED_ACL__CANNED_PUBLIC_READ);
	ck_assert_int_eq(b->object_ownership, IOLAKE__META__OBJECT_OWNERSHIP__OWNERSHIP_OBJECT_WRITER);
	ck_assert_str_eq(b->owner, "alice");
	meta_state_free_msg(b);
	Iolake__Meta__ObjectRecord *r;
	ck_assert_int_eq(meta_state_head_object(s, "acl", "obj", &r), 0);
	ck_assert_uint_eq(r->generation, g1);   /* an ACL change keeps it */
	ck_assert_uint_eq(r->size, 5000);
	ck_assert_ptr_nonnull(r->acl);
	ck_assert_uint_eq(r->acl->n_grants, 2);
	ck_assert_int_eq(r->acl->grants[1]->permission, IOLAKE__META__ACL_PERMISSION__ACL_PERM_FULL_CONTROL);
	meta_state_free_msg(r);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

/* Bucket policy and PublicAccessBlock through SetBucketAccess: set, kept
 * beside the ACL, cleared; the generation moves each time; a policy over
 * META_POLICY_MAX is refused and changes nothing. */
START_TEST(test_bucket_policy)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "pol", "alice");
	ck_assert_int_eq(tb_apply(s, 1, t, res), 1);
	Iolake__Meta__Bucket *b;
	ck_assert_int_eq(meta_state_get_bucket(s, "pol", &b), 0);
	uint64_t g0 = b->generation;
	ck_assert_str_eq(b->policy, "");
	ck_assert_ptr_null(b->public_access_block);
	meta_state_free_msg(b);

	static char big[META_POLICY_MAX + 2];
	memset(big, 'x', META_POLICY_MAX + 1);
	t = tb_new();
	Iolake__Meta__SetBucketAccess *sa = tb_bucket_access(t, "pol");   /* ok */
	sa->conditional = true;
	sa->if_generation = g0;
	sa->set_acl = true;
	sa->acl = tb_acl(t, IOLAKE__META__CANNED_ACL__CANNED_PUBLIC_READ, 0, 0);
	sa->set_policy = true;
	sa->policy = tb_str(t, "{\"Statement\":[]}");
	sa->set_public_access_block = true;
	sa->public_access_block = tb_alloc(t, sizeof(*sa->public_access_block));
	iolake__meta__public_access_block__init(sa->public_access_block);
	sa->public_access_block->block_public_acls = true;
	sa->public_access_block->restrict_public_buckets = true;
	sa = tb_bucket_access(t, "pol");                                    /* too large */
	sa->set_policy = true;
	sa->policy = big;
	ck_assert_int_eq(tb_apply(s, 2, t, res), 2);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_int_eq(res[1].err, -EINVAL);
	ck_assert_int_eq(meta_state_get_bucket(s, "pol", &b), 0);
	uint64_t g1 = b->generation;
	ck_assert_uint_gt(g1, g0);
	ck_assert_str_eq(b->policy, "{\"Statement\":[]}");
	ck_assert_ptr_nonnull(b->public_access_block);
	ck_assert(b->public_access_block->block_public_acls);
	ck_assert(!b->public_access_block->ignore_public_acls);
	ck_assert(b->public_access_block->restrict_public_buckets);
	ck_assert_int_eq(b->acl->canned, IOLAKE__META__CANNED_ACL__CANNED_PUBLIC_READ);
	meta_state_free_msg(b);

	/* A change of one leaves the others; clearing both. */
	t = tb_new();
	sa = tb_bucket_access(t, "pol");
	sa->set_policy = true;   /* policy NULL: deleted */
	sa = tb_bucket_access(t, "pol");
	sa->set_public_access_block = true;   /* none: deleted */
	ck_assert_int_eq(tb_apply(s, 3, t, res), 2);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_int_eq(res[1].err, 0);
	ck_assert_int_eq(meta_state_get_bucket(s, "pol", &b), 0);
	ck_assert_uint_gt(b->generation, g1);
	ck_assert_str_eq(b->policy, "");
	ck_assert_ptr_null(b->public_access_block);
	ck_assert_int_eq(b->acl->canned, IOLAKE__META__CANNED_ACL__CANNED_PUBLIC_READ);
	meta_state_free_msg(b);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

/* Apply remembers, across entries, that a bucket exists and that the
 * root holds no range rows for it (meta/state_internal.h, struct
 * apply_memo). A snapshot import replaces the DB under the memo: it must
 * forget, or a PUT routed by range id 0 would land in a bucket that is
 * gone, or in one whose records now live in a range group. */
START_TEST(test_memo_across_entries)
{
	char dir[64], dir2[64];
	tmpdir(dir);
	tmpdir(dir2);
	struct meta_state *s = open_at(dir);
	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "mgone", "alice");
	tb_create_bucket(t, 0, 0, "mrng", "alice");
	ck_assert_int_eq(tb_apply(s, 1, t, res), 2);
	for (uint64_t i = 2; i <= 3; i++) {   /* entries of PUTs: the memo holds */
		t = tb_new();
		tb_put(t, 0, 0, "mgone", "a", 1);
		tb_put(t, 0, 0, "mrng", "a", 1);
		ck_assert_int_eq(tb_apply(s, i, t, res), 2);
		ck_assert_int_eq(res[0].err, 0);
		ck_assert_int_eq(res[1].err, 0);
	}
	/* The snapshot: no "mgone"; "mrng" made while a range group exists,
	 * so it has a range row. */
	struct meta_state *b = open_at(dir2);
	const uint64_t ids[] = { 1 };
	t = tb_new();
	tb_create_group(t, 1, ids, 1);
	tb_create_bucket(t, 0, 0, "mrng", "alice");
	ck_assert_int_eq(tb_apply(b, 1, t, res), 2);
	ck_assert_int_eq(res[1].err, 0);
	ck_assert(meta_state_bucket_has_ranges(b, "mrng"));
	uint8_t *snap;
	size_t len;
	ck_assert_int_eq(meta_state_export(b, xmalloc, free, &snap, &len), 0);
	ck_assert_int_eq(meta_state_import(s, snap, len), 0);
	free(snap);
	t = tb_new();
	tb_put(t, 0, 0, "mgone", "b", 1);
	tb_put(t, 0, 0, "mrng", "b", 1);
	ck_assert_int_eq(tb_apply(s, 2, t, res), 2);
	ck_assert_int_eq(res[0].err, IOL_ENOT_FOUND);
	ck_assert_int_eq(res[1].err, META_EWRONG_RANGE);
	meta_state_close(b);
	meta_state_close(s);
	rm_rf(dir);
	rm_rf(dir2);
}
END_TEST

/* meta_state_get_bucket keeps rows (state_internal.h, struct
 * bucket_slot): each read here follows one that filled the slot, so a
 * write that did not move the bucket generation would read stale. Apply's
 * change and delete, and a snapshot import, must each be seen at once. */
static char *policy_of(struct meta_state *s, const char *bucket, int *rc)
{
	Iolake__Meta__Bucket *b = NULL;
	*rc = meta_state_get_bucket(s, bucket, &b);
	char *p = b ? strdup(b->policy) : NULL;
	meta_state_free_msg(b);
	return p;
}

static void set_policy(struct meta_state *s, uint64_t index, const char *bucket,
		       const char *policy)
{
	struct tb *t = tb_new();
	Iolake__Meta__SetBucketAccess *sa = tb_bucket_access(t, bucket);
	sa->set_policy = true;
	sa->policy = tb_str(t, policy);
	ck_assert_int_eq(tb_apply(s, index, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);
}

START_TEST(test_bucket_rows_kept)
{
	char dir[64], dir2[64];
	tmpdir(dir);
	tmpdir(dir2);
	struct meta_state *s = open_at(dir);
	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "kbk", "alice");
	ck_assert_int_eq(tb_apply(s, 1, t, res), 1);
	int rc;
	for (int i = 0; i < 2; i++) {   /* the second from the slot */
		char *p = policy_of(s, "kbk", &rc);
		ck_assert_int_eq(rc, 0);
		ck_assert_str_eq(p, "");
		free(p);
	}
	set_policy(s, 2, "kbk", "{\"Statement\":[1]}");
	char *p = policy_of(s, "kbk", &rc);
	ck_assert_str_eq(p, "{\"Statement\":[1]}");
	free(p);
	/* A PUT leaves the row (and the slot) as it was. */
	t = tb_new();
	tb_put(t, 0, 0, "kbk", "obj", 1);
	ck_assert_int_eq(tb_apply(s, 3, t, res), 1);
	p = policy_of(s, "kbk", &rc);
	ck_assert_str_eq(p, "{\"Statement\":[1]}");
	free(p);
	t = tb_new();
	tb_delete(t, 0, 0, "kbk", "obj");
	tb_delete_bucket(t, 0, 0, "kbk");
	ck_assert_int_eq(tb_apply(s, 4, t, res), 2);
	ck_assert_int_eq(res[1].err, 0);
	p = policy_of(s, "kbk", &rc);
	ck_assert_int_eq(rc, IOL_ENOT_FOUND);
	ck_assert_ptr_null(p);
	t = tb_new();
	tb_create_bucket(t, 0, 0, "kbk", "alice");
	ck_assert_int_eq(tb_apply(s, 5, t, res), 1);
	set_policy(s, 6, "kbk", "{\"Statement\":[2]}");
	p = policy_of(s, "kbk", &rc);
	ck_assert_str_eq(p, "{\"Statement\":[2]}");
	free(p);

	/* Import: the row of the snapshot, not the slot's. */
	struct meta_state *b = open_at(dir2);
	t = tb_new();
	tb_create_bucket(t, 0, 0, "kbk", "alice");
	ck_assert_int_eq(tb_apply(b, 1, t, res), 1);
	set_policy(b, 2, "kbk", "{\"Statement\":[3]}");
	uint8_t *snap;
	size_t len;
	ck_assert_int_eq(meta_state_export(b, xmalloc, free, &snap, &len), 0);
	ck_assert_int_eq(meta_state_import(s, snap, len), 0);
	free(snap);
	p = policy_of(s, "kbk", &rc);
	ck_assert_str_eq(p, "{\"Statement\":[3]}");
	free(p);
	meta_state_close(b);
	meta_state_close(s);
	rm_rf(dir);
	rm_rf(dir2);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("state");
	TCase *tc = tcase_create("state");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_basic);
	tcase_add_test(tc, test_dedupe_high_water);
	tcase_add_test(tc, test_memo_across_entries);
	tcase_add_test(tc, test_prune_bounded);
	tcase_add_test(tc, test_access);
	tcase_add_test(tc, test_bucket_policy);
	tcase_add_test(tc, test_bucket_rows_kept);
	tcase_add_test(tc, test_replay_and_members);
	tcase_add_test(tc, test_conditional_put);
	tcase_add_test(tc, test_dedupe);
	tcase_add_test(tc, test_empty_prefix_seek);
	tcase_add_test(tc, test_bucket_not_empty);
	tcase_add_test(tc, test_users_keys);
	tcase_add_test(tc, test_multipart);
	tcase_add_test(tc, test_multipart_parts);
	tcase_add_test(tc, test_multipart_checksums);
	tcase_add_test(tc, test_snapshot);
	tcase_add_test(tc, test_install);
	tcase_add_test(tc, test_malformed_entries);
	tcase_add_test(tc, test_tags);
	tcase_add_test(tc, test_bucket_cors);
	tcase_add_test(tc, test_bucket_encryption);
	tcase_add_test(tc, test_groups);
	tcase_add_test(tc, test_shared_cache);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
