/*
 * test_quota.c — quotas in the meta state machine (meta/state_quota.c), on
 * real RocksDB under /dev/shm: SetQuota on a bucket and a user (missing
 * ones NOT_FOUND, bad names INVALID, all-zero limits stored as none,
 * clearing), the root's usage rows moved by PutObject (new and
 * overwrite), DeleteObject and CompleteMultipart, never below zero, gone
 * with DeleteBucket (a bucket made again under the name starts at zero),
 * kept across a reopen, right when one entry moves two buckets in turn;
 * and the fill of bucket reads (usage, the owner's
 * quota and usage over its buckets).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "meta/state.h"
#include "meta/state_quota.h"
#include "meta_test_util.h"

static struct meta_op_result res[META_BATCH_MAX_OPS];

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

/* max both 0 and clear false: a quota of no limits (stored as none). */
static void tb_quota(struct tb *t, bool user, const char *name, bool clear, uint64_t max_bytes,
		     uint64_t max_objects)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__SetQuota *sq = tb_alloc(t, sizeof(*sq));
	iolake__meta__set_quota__init(sq);
	sq->user = user;
	sq->name = tb_str(t, name);
	if (!clear) {
		sq->quota = tb_alloc(t, sizeof(*sq->quota));
		iolake__meta__quota__init(sq->quota);
		sq->quota->max_bytes = max_bytes;
		sq->quota->max_objects = max_objects;
	}
	op->body_case = IOLAKE__META__OP__BODY_SET_QUOTA;
	op->set_quota = sq;
}

static void usage_is(struct meta_state *s, const char *bucket, uint64_t objects, uint64_t bytes)
{
	uint64_t o, b;
	ck_assert_int_eq(meta_state_bucket_usage(s, bucket, &o, &b), 0);
	ck_assert_uint_eq(o, objects);
	ck_assert_uint_eq(b, bytes);
}

START_TEST(test_quota_ops)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	struct tb *t = tb_new();
	tb_user(t, "alice");
	tb_create_bucket(t, 1, 1, "qa1", "alice");
	tb_create_bucket(t, 1, 2, "qa2", "alice");
	tb_quota(t, false, "qa1", false, 1000, 3);
	tb_quota(t, true, "alice", false, 0, 5);
	tb_quota(t, false, "nosuch", false, 1, 1);    /* no bucket */
	tb_quota(t, true, "nobody", false, 1, 1);     /* no user */
	tb_quota(t, false, "Bad..Name", false, 1, 1); /* bad name */
	tb_quota(t, false, "qa2", false, 0, 0);       /* no limits: none */
	ck_assert_int_eq(tb_apply(s, 1, t, res), 9);
	for (int i = 0; i < 5; i++)
		ck_assert_msg(res[i].err == 0, "op %d: %d", i, res[i].err);
	ck_assert_int_eq(res[5].err, IOL_ENOT_FOUND);
	ck_assert_int_eq(res[6].err, IOL_ENOT_FOUND);
	ck_assert_int_eq(res[7].err, -EINVAL);
	ck_assert_int_eq(res[8].err, 0);

	Iolake__Meta__Bucket *b;
	ck_assert_int_eq(meta_state_get_bucket(s, "qa1", &b), 0);
	ck_assert_ptr_nonnull(b->quota);
	ck_assert_uint_eq(b->quota->max_bytes, 1000);
	ck_assert_uint_eq(b->quota->max_objects, 3);
	meta_state_free_msg(b);
	ck_assert_int_eq(meta_state_get_bucket(s, "qa2", &b), 0);
	ck_assert_ptr_null(b->quota);
	meta_state_free_msg(b);
	Iolake__Meta__User *u;
	ck_assert_int_eq(meta_state_get_user(s, "alice", &u), 0);
	ck_assert_ptr_nonnull(u->quota);
	ck_assert_uint_eq(u->quota->max_objects, 5);
	meta_state_free_msg(u);

	/* Usage: puts, an overwrite, deletes (one of a missing key). */
	t = tb_new();
	tb_put(t, 1, 10, "qa1", "a", 100);
	tb_put(t, 1, 11, "qa1", "b", 5000);           /* with a segment */
	tb_put(t, 1, 12, "qa1", "a", 300);            /* overwrite: 300 replaces 100 */
	tb_put(t, 1, 13, "qa2", "c", 7);
	ck_assert_int_eq(tb_apply(s, 2, t, res), 4);
	usage_is(s, "qa1", 2, 5300);
	usage_is(s, "qa2", 1, 7);
	t = tb_new();
	tb_delete(t, 1, 14, "qa1", "a");
	tb_delete(t, 1, 15, "qa1", "zzz");            /* not found: nothing moves */
	ck_assert_int_eq(tb_apply(s, 3, t, res), 2);
	ck_assert_int_eq(res[1].err, IOL_ENOT_FOUND);
	usage_is(s, "qa1", 1, 5000);

	/* Reads carry the usage and the owner's quota and usage. */
	ck_assert_int_eq(meta_state_get_bucket(s, "qa1", &b), 0);
	ck_assert_int_eq(meta_state_quota_fill(s, b), 0);
	ck_assert_ptr_nonnull(b->usage);
	ck_assert_uint_eq(b->usage->objects, 1);
	ck_assert_uint_eq(b->usage->bytes, 5000);
	ck_assert_ptr_nonnull(b->owner_quota);
	ck_assert_uint_eq(b->owner_quota->max_objects, 5);
	ck_assert_ptr_nonnull(b->owner_usage);
	ck_assert_uint_eq(b->owner_usage->objects, 2);
	ck_assert_uint_eq(b->owner_usage->bytes, 5007);
	meta_state_free_msg(b);

	/* Cleared: the record has no quota, a read no owner quota. */
	t = tb_new();
	tb_quota(t, true, "alice", true, 0, 0);
	tb_quota(t, false, "qa1", true, 0, 0);
	ck_assert_int_eq(tb_apply(s, 4, t, res), 2);
	ck_assert_int_eq(meta_state_get_bucket(s, "qa1", &b), 0);
	ck_assert_ptr_null(b->quota);
	ck_assert_int_eq(meta_state_quota_fill(s, b), 0);
	ck_assert_ptr_null(b->owner_quota);
	ck_assert_ptr_null(b->owner_usage);
	ck_assert_uint_eq(b->usage->objects, 1);
	meta_state_free_msg(b);

	/* Kept across a reopen; DeleteBucket drops the row, so a bucket
	 * made again under the name starts at zero. */
	meta_state_close(s);
	s = open_at(dir);
	usage_is(s, "qa1", 1, 5000);
	t = tb_new();
	tb_delete(t, 1, 16, "qa2", "c");
	tb_delete_bucket(t, 1, 17, "qa2");
	tb_create_bucket(t, 1, 18, "qa2", "alice");
	ck_assert_int_eq(tb_apply(s, 5, t, res), 3);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(res[i].err, 0);
	usage_is(s, "qa2", 0, 0);
	/* One entry moving two buckets' rows in turn (apply keeps the last
	 * bucket's row in memory and writes it when another comes): each
	 * row gets every move of its bucket. */
	t = tb_new();
	tb_put(t, 1, 19, "qa1", "m", 1);
	tb_put(t, 1, 20, "qa2", "n", 2);
	tb_put(t, 1, 21, "qa1", "o", 4);
	tb_put(t, 1, 22, "qa2", "n", 8);              /* overwrite: 8 replaces 2 */
	tb_delete(t, 1, 23, "qa1", "m");
	ck_assert_int_eq(tb_apply(s, 6, t, res), 5);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(res[i].err, 0);
	usage_is(s, "qa1", 2, 5004);
	usage_is(s, "qa2", 1, 8);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("quota");
	TCase *tc = tcase_create("quota");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_quota_ops);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
