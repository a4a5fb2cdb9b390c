/*
 * test_state_format.c — what meta's state refuses to take from another
 * build (meta/state.c, on real RocksDB under /dev/shm): a state whose
 * format record names another format is refused at open with BAD_FORMAT
 * and left as it was; an entry whose op level is above this build's is
 * refused in apply with BAD_FORMAT and nothing of it applied, while the
 * same ops at this build's level or with no level apply (meta/state.h,
 * "op levels"). The members' side of op levels, with real processes, is
 * tests/integration/test_meta_op_level.sh; old data dirs opened whole,
 * tests/integration/test_upgrade.py.
 */
#include <check.h>
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/err.h"
#include "meta/state.h"
#include "meta_test_util.h"

/* A state whose format record names another format (a newer IOLake's,
 * opened by this one after a downgrade) is refused with BAD_FORMAT, and
 * the state is left as it was: put back, it opens again. */
START_TEST(test_format_version)
{
	char dir[64];
	tmpdir(dir);
	meta_state_close(open_at(dir));
	char *err = NULL;
	rocksdb_options_t *o = rocksdb_options_create();
	rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
	rocksdb_t *db = rocksdb_open(o, dir, &err);
	ck_assert_ptr_null(err);
	size_t n;
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	char *was = rocksdb_get(db, ro, "F", 1, &n, &err);
	ck_assert_ptr_nonnull(was);
	ck_assert_uint_eq(n, 4);
	rocksdb_put(db, wo, "F", 1, "\0\0\0\2", 4, &err);
	ck_assert_ptr_null(err);
	rocksdb_close(db);

	struct meta_state *s = NULL;
	ck_assert_int_eq(meta_state_open(dir, NULL, &s), IOL_EBAD_FORMAT);
	ck_assert_ptr_null(s);

	db = rocksdb_open(o, dir, &err);
	ck_assert_ptr_null(err);
	rocksdb_put(db, wo, "F", 1, was, 4, &err);
	ck_assert_ptr_null(err);
	rocksdb_close(db);
	rocksdb_free(was);
	meta_state_close(open_at(dir));
	rocksdb_readoptions_destroy(ro);
	rocksdb_writeoptions_destroy(wo);
	rocksdb_options_destroy(o);
	rm_rf(dir);
}
END_TEST

/* Op levels (state.h): an entry whose ops need a level above this
 * build's is refused with BAD_FORMAT and nothing of it is applied (not
 * even its index: it is not skipped either); the same ops at this
 * build's level, or with no level (entries of builds before levels),
 * apply. A batch's level is the highest of its ops'. */
START_TEST(test_op_level)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	struct meta_op_result res[4];
	Iolake__Meta__Bucket *b = NULL;

	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "newer", "me");
	ck_assert_uint_eq(meta_state_batch_level(&t->b), META_OP_LEVEL);
	t->b.op_level = META_OP_LEVEL + 1;
	ck_assert_int_eq(tb_apply(s, 1, t, res), IOL_EBAD_FORMAT);
	ck_assert_uint_eq(meta_state_applied_index(s), 0);
	ck_assert_int_eq(meta_state_get_bucket(s, "newer", &b), IOL_ENOT_FOUND);

	t = tb_new();
	tb_create_bucket(t, 0, 0, "newer", "me");
	t->b.op_level = META_OP_LEVEL;
	ck_assert_int_eq(tb_apply(s, 1, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);
	t = tb_new();
	tb_create_bucket(t, 0, 1, "unleveled", "me");   /* op_level 0 */
	ck_assert_int_eq(tb_apply(s, 2, t, res), 1);
	ck_assert_uint_eq(meta_state_applied_index(s), 2);
	ck_assert_int_eq(meta_state_get_bucket(s, "newer", &b), 0);
	meta_state_free_msg(b);
	ck_assert_int_eq(meta_state_get_bucket(s, "unleveled", &b), 0);
	meta_state_free_msg(b);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("state_format");
	TCase *tc = tcase_create("state_format");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_format_version);
	tcase_add_test(tc, test_op_level);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
