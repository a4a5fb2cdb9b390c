/*
 * test_state_format.c — what meta's state refuses to take from another
 * build (meta/state.c, on real RocksDB under /dev/shm): a state whose
 * format record names another format is refused at open with BAD_FORMAT
 * and left as it was; an entry whose op level is above this build's is
 * refused in apply with BAD_FORMAT and nothing of it applied, while the
 * same ops at this build's level or with no level apply (meta/state.h,
 * "op levels"). The highest op level applied is recorded in the state:
 * a build of a lower level refuses that state at open, and refuses a
 * checkpoint holding it (or a newer format) at install, leaving its own
 * state untouched. The members' side of op levels, with real processes, is
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

static struct meta_state *open_level(const char *dir, uint32_t level, int *rc)
{
	struct meta_state_opts o = { .op_level = level };
	struct meta_state *s = NULL;
	*rc = meta_state_open(dir, &o, &s);
	return s;
}

/* A state that applied an entry of level 2 (a build of level 2) records
 * it: a build of level 1 refuses to open it (a downgrade would misread
 * what level 2 wrote), a build of level 2 opens it. */
START_TEST(test_level_recorded)
{
	char dir[64];
	tmpdir(dir);
	int rc;
	struct meta_state *s = open_level(dir, 2, &rc);
	ck_assert_int_eq(rc, 0);
	struct meta_op_result res[4];
	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "level1", "me");
	t->b.op_level = 1;
	ck_assert_int_eq(tb_apply(s, 1, t, res), 1);
	meta_state_close(s);
	s = open_level(dir, 1, &rc);   /* only level 1 so far: fine */
	ck_assert_int_eq(rc, 0);
	meta_state_close(s);

	s = open_level(dir, 2, &rc);
	t = tb_new();
	tb_create_bucket(t, 0, 1, "level2", "me");
	t->b.op_level = 2;
	ck_assert_int_eq(tb_apply(s, 2, t, res), 1);
	meta_state_close(s);
	s = open_level(dir, 1, &rc);
	ck_assert_int_eq(rc, IOL_EBAD_FORMAT);
	ck_assert_ptr_null(s);
	s = open_level(dir, 2, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert_uint_eq(meta_state_applied_index(s), 2);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

/* A snapshot install (a member far enough behind gets a checkpoint, not
 * the entries) refuses a checkpoint of a higher op level, or of another
 * format, before writing anything: the member's own state stays as it
 * was, and installs it once its build is of that level. */
START_TEST(test_install_level)
{
	char da[64], db[64], cp[64];
	tmpdir(da);
	tmpdir(db);
	tmpdir(cp);
	rm_rf(cp);
	int rc;
	struct meta_state *a = open_level(da, 2, &rc);
	struct meta_op_result res[4];
	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "newer", "me");
	t->b.op_level = 2;
	ck_assert_int_eq(tb_apply(a, 1, t, res), 1);
	ck_assert_int_eq(meta_state_checkpoint(a, cp), 0);
	meta_state_close(a);

	struct meta_state *b = open_level(db, 1, &rc);
	t = tb_new();
	tb_create_bucket(t, 0, 0, "mine", "me");
	ck_assert_int_eq(tb_apply(b, 1, t, res), 1);
	ck_assert_int_eq(meta_state_install(b, cp, "cp-level", 0), IOL_EBAD_FORMAT);
	char tag[32];
	ck_assert_int_eq(meta_state_install_pending(b, tag, sizeof(tag)), 0);
	Iolake__Meta__Bucket *bk = NULL;
	ck_assert_int_eq(meta_state_get_bucket(b, "mine", &bk), 0);   /* untouched */
	meta_state_free_msg(bk);
	ck_assert_int_eq(meta_state_get_bucket(b, "newer", &bk), IOL_ENOT_FOUND);
	meta_state_close(b);

	b = open_level(db, 2, &rc);   /* upgraded: installs */
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(meta_state_install(b, cp, "cp-level", 0), 0);
	ck_assert_int_eq(meta_state_get_bucket(b, "newer", &bk), 0);
	meta_state_free_msg(bk);
	ck_assert_int_eq(meta_state_get_bucket(b, "mine", &bk), IOL_ENOT_FOUND);
	meta_state_close(b);
	b = open_level(db, 1, &rc);   /* and is now a level-2 state */
	ck_assert_int_eq(rc, IOL_EBAD_FORMAT);

	/* Another format: refused by a build of any level. */
	char *err = NULL;
	rocksdb_options_t *o = rocksdb_options_create();
	rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
	rocksdb_t *raw = rocksdb_open(o, cp, &err);
	ck_assert_ptr_null(err);
	rocksdb_put(raw, wo, "F", 1, "\0\0\0\2", 4, &err);
	ck_assert_ptr_null(err);
	rocksdb_close(raw);
	rocksdb_writeoptions_destroy(wo);
	rocksdb_options_destroy(o);
	b = open_level(db, 2, &rc);
	ck_assert_int_eq(meta_state_install(b, cp, "cp-format", 0), IOL_EBAD_FORMAT);
	ck_assert_int_eq(meta_state_get_bucket(b, "newer", &bk), 0);   /* as it was */
	meta_state_free_msg(bk);
	meta_state_close(b);
	rm_rf(da);
	rm_rf(db);
	rm_rf(cp);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("state_format");
	TCase *tc = tcase_create("state_format");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_format_version);
	tcase_add_test(tc, test_op_level);
	tcase_add_test(tc, test_level_recorded);
	tcase_add_test(tc, test_install_level);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
