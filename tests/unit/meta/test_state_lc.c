/*
 * test_state_lc.c — bucket lifecycle in meta's apply (meta/state_lc.c) on
 * real RocksDB under /dev/shm: SetBucketLifecycle stores and clears the
 * configuration without changing the bucket's generation (NOT_FOUND for
 * a missing bucket, INVALID over 1,000 rules); LifecycleAdvance moves the
 * cursor only from the seq it names (CONFLICT otherwise: two workers
 * racing, the loser stops), refuses a second holder while the first's
 * lease runs and admits it once the lease ran out or was released.
 * The cursor is left out of the bucket's digest (meta/state_obj.c): a
 * batch keeps the digest, and a PUT decided on a gateway's cached copy
 * still commits; a change of the configuration changes it.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "meta/state.h"
#include "meta_test_util.h"

static struct meta_op_result res[META_BATCH_MAX_OPS];
static uint64_t idx;

static struct meta_state *fresh(char dir[64])
{
	tmpdir(dir);
	struct meta_state *s = NULL;
	ck_assert_int_eq(meta_state_open(dir, NULL, &s), 0);
	idx = 0;
	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "lcb", "alice");
	ck_assert_int_eq(tb_apply(s, ++idx, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);
	return s;
}

static int set_lc(struct meta_state *s, const char *b, size_t n_rules)
{
	struct tb *t = tb_new();
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__SetBucketLifecycle *v = tb_alloc(t, sizeof(*v));
	iolake__meta__set_bucket_lifecycle__init(v);
	v->name = tb_str(t, b);
	if (n_rules) {
		Iolake__Meta__LifecycleConfig *c = tb_alloc(t, sizeof(*c));
		iolake__meta__lifecycle_config__init(c);
		c->n_rules = n_rules;
		c->rules = tb_alloc(t, n_rules * sizeof(*c->rules));
		for (size_t i = 0; i < n_rules; i++) {
			Iolake__Meta__LifecycleRule *r = tb_alloc(t, sizeof(*r));
			iolake__meta__lifecycle_rule__init(r);
			char id[24];
			snprintf(id, sizeof(id), "r%zu", i);
			r->id = tb_str(t, id);
			r->enabled = true;
			r->exp_days = 1;
			c->rules[i] = r;
		}
		v->config = c;
	}
	op->body_case = IOLAKE__META__OP__BODY_SET_BUCKET_LIFECYCLE;
	op->set_bucket_lifecycle = v;
	ck_assert_int_eq(tb_apply(s, ++idx, t, res), 1);
	return res[0].err;
}

static int advance(struct meta_state *s, const char *holder, uint64_t now, uint64_t lease,
		   uint64_t if_seq, const char *key_marker)
{
	struct tb *t = tb_new();
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__LifecycleAdvance *a = tb_alloc(t, sizeof(*a));
	iolake__meta__lifecycle_advance__init(a);
	Iolake__Meta__LifecycleCursor *c = tb_alloc(t, sizeof(*c));
	iolake__meta__lifecycle_cursor__init(c);
	c->key_marker = tb_str(t, key_marker);
	a->name = tb_str(t, "lcb");
	a->holder = tb_str(t, holder);
	a->now_ms = now;
	a->lease_ms = lease;
	a->if_seq = if_seq;
	a->cursor = c;
	op->body_case = IOLAKE__META__OP__BODY_LIFECYCLE_ADVANCE;
	op->lifecycle_advance = a;
	ck_assert_int_eq(tb_apply(s, ++idx, t, res), 1);
	return res[0].err;
}

static Iolake__Meta__Bucket *bucket(struct meta_state *s)
{
	Iolake__Meta__Bucket *b = NULL;
	ck_assert_int_eq(meta_state_get_bucket(s, "lcb", &b), 0);
	return b;
}

START_TEST(test_set)
{
	char dir[64];
	struct meta_state *s = fresh(dir);
	Iolake__Meta__Bucket *b = bucket(s);
	uint64_t gen = b->generation;
	meta_state_free_msg(b);
	ck_assert_int_eq(set_lc(s, "lcb", 3), 0);
	b = bucket(s);
	ck_assert_ptr_nonnull(b->lifecycle);
	ck_assert_uint_eq(b->lifecycle->n_rules, 3);
	ck_assert_str_eq(b->lifecycle->rules[2]->id, "r2");
	ck_assert_uint_eq(b->generation, gen);
	meta_state_free_msg(b);
	ck_assert_int_eq(set_lc(s, "lcb", 1001), -EINVAL);
	ck_assert_int_eq(set_lc(s, "nob", 1), IOL_ENOT_FOUND);
	ck_assert_int_eq(set_lc(s, "lcb", 0), 0);   /* DeleteBucketLifecycle */
	b = bucket(s);
	ck_assert_ptr_null(b->lifecycle);
	meta_state_free_msg(b);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

START_TEST(test_advance)
{
	char dir[64];
	struct meta_state *s = fresh(dir);
	ck_assert_int_eq(set_lc(s, "lcb", 1), 0);
	/* A claims at seq 0; B racing on the same seq loses. */
	ck_assert_int_eq(advance(s, "A", 1000, 60000, 0, ""), 0);
	ck_assert_int_eq(advance(s, "B", 1000, 60000, 0, ""), IOL_ECONFLICT);
	/* A advances batch by batch; a stale seq is refused. */
	ck_assert_int_eq(advance(s, "A", 2000, 60000, 1, "k100"), 0);
	ck_assert_int_eq(advance(s, "A", 2000, 60000, 1, "k999"), IOL_ECONFLICT);
	Iolake__Meta__Bucket *b = bucket(s);
	ck_assert_uint_eq(b->lc_cursor->seq, 2);
	ck_assert_str_eq(b->lc_cursor->key_marker, "k100");
	ck_assert_str_eq(b->lc_cursor->holder, "A");
	ck_assert_uint_eq(b->lc_cursor->lease_until_ms, 62000);
	ck_assert_ptr_nonnull(b->lifecycle);   /* the configuration is untouched */
	meta_state_free_msg(b);
	/* B, with the right seq, is refused while A's lease runs... */
	ck_assert_int_eq(advance(s, "B", 61999, 60000, 2, "k100"), IOL_ECONFLICT);
	/* ...and takes over (resuming A's cursor) once it ran out. */
	ck_assert_int_eq(advance(s, "B", 62001, 60000, 2, "k100"), 0);
	ck_assert_int_eq(advance(s, "A", 62002, 60000, 3, "k200"), IOL_ECONFLICT);
	/* B releases at the end of its pass: A may claim at once. */
	ck_assert_int_eq(advance(s, "B", 63000, 0, 3, ""), 0);
	ck_assert_int_eq(advance(s, "A", 63001, 60000, 4, ""), 0);
	/* No bucket; a malformed op. */
	ck_assert_int_eq(set_lc(s, "lcb", 0), 0);
	b = bucket(s);
	ck_assert_uint_eq(b->lc_cursor->seq, 5);   /* the cursor outlives the config */
	meta_state_free_msg(b);
	ck_assert_int_eq(advance(s, "", 1, 1, 5, ""), -EINVAL);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

static uint64_t digest(struct meta_state *s)
{
	uint64_t d = 0;
	ck_assert_int_eq(meta_state_get_bucket_digest(s, "lcb", &d), 0);
	return d;
}

START_TEST(test_cursor_not_in_digest)
{
	char dir[64];
	struct meta_state *s = fresh(dir);
	ck_assert_int_eq(set_lc(s, "lcb", 1), 0);
	uint64_t d = digest(s);
	/* Batches: the cursor appears, moves, changes holder and lease. */
	ck_assert_int_eq(advance(s, "A", 1000, 60000, 0, ""), 0);
	ck_assert_uint_eq(digest(s), d);
	ck_assert_int_eq(advance(s, "A", 2000, 60000, 1, "k100"), 0);
	ck_assert_int_eq(advance(s, "B", 70000, 0, 2, "k200"), 0);
	Iolake__Meta__Bucket *b = bucket(s);
	ck_assert_uint_eq(b->lc_cursor->seq, 3);   /* the cursor is stored */
	meta_state_free_msg(b);
	ck_assert_uint_eq(digest(s), d);
	/* A PUT decided on the copy cached before the batches commits. */
	struct tb *t = tb_new();
	tb_put(t, 0, 0, "lcb", "k", 100)->if_bucket_digest = d;
	ck_assert_int_eq(tb_apply(s, ++idx, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert(!res[0].bucket_changed);
	/* The configuration is in the digest: a change refuses such a PUT. */
	ck_assert_int_eq(set_lc(s, "lcb", 2), 0);
	uint64_t d2 = digest(s);
	ck_assert_uint_ne(d2, d);
	t = tb_new();
	tb_put(t, 0, 0, "lcb", "k2", 100)->if_bucket_digest = d;
	ck_assert_int_eq(tb_apply(s, ++idx, t, res), 1);
	ck_assert_int_eq(res[0].err, IOL_ECONFLICT);
	ck_assert(res[0].bucket_changed);
	/* And a batch after it keeps the new one. */
	ck_assert_int_eq(advance(s, "B", 70001, 0, 3, ""), 0);
	ck_assert_uint_eq(digest(s), d2);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("state_lc");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_set);
	tcase_add_test(tc, test_advance);
	tcase_add_test(tc, test_cursor_not_in_digest);
	suite_add_tcase(su, tc);
	SRunner *sr = srunner_create(su);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
