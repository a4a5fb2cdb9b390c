/*
 * test_s3_handlers.c — the handler modules' tables (s3_handlers.h): every
 * operation the gateway serves is in exactly one table, and the set served
 * is the one the gateway served before the tables (everything S3_OPS names
 * but versioning and ACLs, which answer NotImplemented).
 */
#include <check.h>
#include <string.h>

#include "gateway/s3_handlers.h"

static const enum s3_op not_served[] = {
	S3_OP_ListObjectVersions, S3_OP_GetBucketVersioning, S3_OP_PutBucketVersioning,
	S3_OP_GetBucketAcl,       S3_OP_PutBucketAcl,        S3_OP_GetObjectAcl,
	S3_OP_PutObjectAcl,
};

START_TEST(test_tables)
{
	int seen[S3_OP__COUNT];
	memset(seen, 0, sizeof(seen));
	ck_assert_uint_eq(s3_n_handler_tables, 10);
	for (size_t m = 0; m < s3_n_handler_tables; m++)
		for (const struct s3_handler *h = s3_handler_tables[m]; h->fn; h++) {
			ck_assert_msg(h->op > S3_OP_NONE && h->op < S3_OP__COUNT, "table %zu: op %d",
				      m, (int)h->op);
			seen[h->op]++;
		}
	for (int op = 1; op < S3_OP__COUNT; op++) {
		int want = 1;
		for (size_t i = 0; i < sizeof(not_served) / sizeof(not_served[0]); i++)
			if (not_served[i] == (enum s3_op)op)
				want = 0;
		ck_assert_msg(seen[op] == want, "%s: in %d tables, want %d", s3_op_name(op), seen[op],
			      want);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("s3_handlers");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_tables);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
