/*
 * test_put_digest.c — PutObject.if_bucket_digest and replaced_shards in
 * meta's apply (meta/state_obj.c; issue 19) on real RocksDB under
 * /dev/shm: the digest GetBucket answers lets a PUT commit while the
 * bucket's stored record is unchanged; any change of the record (policy
 * through SetBucketAccess, versioning, a bucket quota) or a quota on its
 * owner refuses it with CONFLICT and bucket_changed and writes nothing; a
 * change earlier in the same entry counts (also after a PutObject of that
 * entry found the digest held); a retry of a refused op is
 * answered bucket_changed from the request table; a missing bucket is
 * refused the same way; 0 means no check. An unconditional PUT over a
 * version with shards says replaced_shards (and queues them for GC), one
 * over an inline version does not.
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
	tb_create_bucket(t, 0, 0, "dig", "alice");
	ck_assert_int_eq(tb_apply(s, ++idx, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);
	return s;
}

static uint64_t digest(struct meta_state *s, const char *bucket)
{
	uint64_t d = 0;
	ck_assert_int_eq(meta_state_get_bucket_digest(s, bucket, &d), 0);
	ck_assert_uint_ne(d, 0);
	return d;
}

/* One PutObject of key (size bytes) with the digest; its error. */
static int put(struct meta_state *s, uint64_t client, uint64_t req, const char *key,
	       uint64_t size, uint64_t d)
{
	struct tb *t = tb_new();
	Iolake__Meta__PutObject *p = tb_put(t, client, req, "dig", key, size);
	p->if_bucket_digest = d;
	ck_assert_int_eq(tb_apply(s, ++idx, t, res), 1);
	return res[0].err;
}

static bool exists(struct meta_state *s, const char *key)
{
	Iolake__Meta__ObjectRecord *r = NULL;
	int rc = meta_state_head_object(s, "dig", key, &r);
	meta_state_free_msg(r);
	return rc == 0;
}

static void tb_policy(struct tb *t, const char *doc)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__SetBucketAccess *sa = tb_alloc(t, sizeof(*sa));
	iolake__meta__set_bucket_access__init(sa);
	sa->name = tb_str(t, "dig");
	sa->set_policy = true;
	sa->policy = tb_str(t, doc);
	op->body_case = IOLAKE__META__OP__BODY_SET_BUCKET_ACCESS;
	op->set_bucket_access = sa;
}

static void tb_quota(struct tb *t, bool user, const char *name, uint64_t max_objects)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__SetQuota *sq = tb_alloc(t, sizeof(*sq));
	iolake__meta__set_quota__init(sq);
	sq->user = user;
	sq->name = tb_str(t, name);
	if (max_objects) {
		sq->quota = tb_alloc(t, sizeof(*sq->quota));
		iolake__meta__quota__init(sq->quota);
		sq->quota->max_objects = max_objects;
	}
	op->body_case = IOLAKE__META__OP__BODY_SET_QUOTA;
	op->set_quota = sq;
}

static void tb_user(struct tb *t, const char *name)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__PutUser *pu = tb_alloc(t, sizeof(*pu));
	Iolake__Meta__User *u = tb_alloc(t, sizeof(*u));
	iolake__meta__put_user__init(pu);
	iolake__meta__user__init(u);
	u->name = tb_str(t, name);
	pu->user = u;
	op->body_case = IOLAKE__META__OP__BODY_PUT_USER;
	op->put_user = pu;
}

static int apply_all(struct meta_state *s, struct tb *t, int n)
{
	ck_assert_int_eq(tb_apply(s, ++idx, t, res), n);
	return res[n - 1].err;
}

START_TEST(test_digest_holds_then_changes)
{
	char dir[64];
	struct meta_state *s = fresh(dir);
	uint64_t d = digest(s, "dig");
	ck_assert_uint_eq(digest(s, "dig"), d);   /* stable */
	ck_assert_int_eq(put(s, 0, 0, "a", 100, d), 0);
	ck_assert(!res[0].bucket_changed);
	ck_assert(exists(s, "a"));
	ck_assert_uint_eq(digest(s, "dig"), d);   /* object writes leave the record */

	/* A policy change: the old digest is refused, nothing written. */
	struct tb *t = tb_new();
	tb_policy(t, "{\"Version\":\"2012-10-17\",\"Statement\":[]}");
	ck_assert_int_eq(apply_all(s, t, 1), 0);
	ck_assert_int_eq(put(s, 0, 0, "b", 100, d), IOL_ECONFLICT);
	ck_assert(res[0].bucket_changed);
	ck_assert(!exists(s, "b"));
	uint64_t d2 = digest(s, "dig");
	ck_assert_uint_ne(d2, d);
	ck_assert_int_eq(put(s, 0, 0, "b", 100, d2), 0);
	ck_assert(exists(s, "b"));

	/* 0: no check, whatever changed. */
	ck_assert_int_eq(put(s, 0, 0, "c", 100, 0), 0);
	ck_assert(!res[0].bucket_changed);

	/* A change earlier in the same entry counts. */
	t = tb_new();
	tb_policy(t, "");
	Iolake__Meta__PutObject *p = tb_put(t, 0, 0, "dig", "e", 100);
	p->if_bucket_digest = d2;
	ck_assert_int_eq(apply_all(s, t, 2), IOL_ECONFLICT);
	ck_assert(res[1].bucket_changed);
	ck_assert(!exists(s, "e"));

	/* PUT, change, PUT in one entry: the first holds (and is memoized),
	 * the change forgets it, the second is refused. */
	uint64_t d3 = digest(s, "dig");
	t = tb_new();
	tb_put(t, 0, 0, "dig", "f", 100)->if_bucket_digest = d3;
	tb_put(t, 0, 0, "dig", "g", 100)->if_bucket_digest = d3;
	tb_policy(t, "{}");
	tb_put(t, 0, 0, "dig", "h", 100)->if_bucket_digest = d3;
	ck_assert_int_eq(apply_all(s, t, 4), IOL_ECONFLICT);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_int_eq(res[1].err, 0);
	ck_assert(exists(s, "f") && exists(s, "g") && !exists(s, "h"));
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

START_TEST(test_quota_refuses)
{
	char dir[64];
	struct meta_state *s = fresh(dir);
	struct tb *t = tb_new();
	tb_user(t, "alice");
	ck_assert_int_eq(apply_all(s, t, 1), 0);
	uint64_t d = digest(s, "dig");
	ck_assert_int_eq(put(s, 0, 0, "a", 100, d), 0);

	/* The owner's quota: the bucket record is unchanged, still refused. */
	t = tb_new();
	tb_quota(t, true, "alice", 10);
	ck_assert_int_eq(apply_all(s, t, 1), 0);
	ck_assert_uint_eq(digest(s, "dig"), d);
	ck_assert_int_eq(put(s, 0, 0, "b", 100, d), IOL_ECONFLICT);
	ck_assert(res[0].bucket_changed);
	t = tb_new();
	tb_quota(t, true, "alice", 0);   /* cleared */
	ck_assert_int_eq(apply_all(s, t, 1), 0);
	ck_assert_int_eq(put(s, 0, 0, "b", 100, d), 0);

	/* The bucket's own quota changes its record. */
	t = tb_new();
	tb_quota(t, false, "dig", 10);
	ck_assert_int_eq(apply_all(s, t, 1), 0);
	uint64_t dq = digest(s, "dig");
	ck_assert_uint_ne(dq, d);
	ck_assert_int_eq(put(s, 0, 0, "c", 100, d), IOL_ECONFLICT);
	ck_assert_int_eq(put(s, 0, 0, "c", 100, dq), IOL_ECONFLICT);   /* a quota applies */
	ck_assert(res[0].bucket_changed);
	ck_assert(!exists(s, "c"));
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

START_TEST(test_retry_and_missing_bucket)
{
	char dir[64];
	struct meta_state *s = fresh(dir);
	uint64_t d = digest(s, "dig");
	struct tb *t = tb_new();
	tb_policy(t, "{}");
	ck_assert_int_eq(apply_all(s, t, 1), 0);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(put(s, 9, 1, "r", 100, d), IOL_ECONFLICT);
		ck_assert(res[0].bucket_changed);
		ck_assert(res[0].deduped == (i == 1));
	}
	uint64_t x;
	ck_assert_int_eq(meta_state_get_bucket_digest(s, "nosuch", &x), IOL_ENOT_FOUND);
	/* Deleted: a PUT with the old digest is refused (range_check first:
	 * the bucket is gone, so NOT_FOUND, as without a digest). */
	t = tb_new();
	tb_delete_bucket(t, 0, 0, "dig");
	ck_assert_int_eq(apply_all(s, t, 1), 0);
	ck_assert_int_ne(put(s, 0, 0, "z", 100, d), 0);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

static uint64_t gc_count(struct meta_state *s)
{
	uint64_t n = 0;
	ck_assert_int_eq(meta_state_gc_count(s, &n), 0);
	return n;
}

START_TEST(test_replaced_shards)
{
	char dir[64];
	struct meta_state *s = fresh(dir);
	uint64_t before = gc_count(s);
	ck_assert_int_eq(put(s, 0, 1, "k", 8192, 0), 0);   /* shards */
	ck_assert(!res[0].replaced_shards);                 /* nothing replaced */
	ck_assert_int_eq(put(s, 0, 2, "k", 100, 0), 0);    /* inline over shards */
	ck_assert(res[0].replaced_shards);
	ck_assert_uint_eq(gc_count(s), before + 1);
	ck_assert_int_eq(put(s, 0, 3, "k", 100, 0), 0);    /* inline over inline */
	ck_assert(!res[0].replaced_shards);
	ck_assert_uint_eq(gc_count(s), before + 1);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("put_digest");
	TCase *tc = tcase_create("put_digest");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_digest_holds_then_changes);
	tcase_add_test(tc, test_quota_refuses);
	tcase_add_test(tc, test_retry_and_missing_bucket);
	tcase_add_test(tc, test_replaced_shards);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
