/*
 * test_s3_handlers.c — the handler modules' tables (s3_handlers.h): every
 * operation the gateway serves is in exactly one table, and the set served
 * is everything S3_OPS names but the two served outside the gate; every row
 * names the S3 action the gate decides (s3_authz), and the operations
 * that read or write an object's data, ACL or tags are decided on the
 * object (S3_RES_OBJECT) or, for writes, on the bucket; every action is
 * one of AWS's S3 action names (what a bucket policy names).
 */
#include <check.h>
#include <string.h>

#include "gateway/s3_handlers.h"
#include "gateway/s3_policy.h"

static const enum s3_op not_served[] = {
	/* Served outside the gate (s3_ops_bind): the preflight authorizes
	 * nothing, a POST upload's signer is in its body. */
	S3_OP_OptionsObject, S3_OP_PostObject,
};

/* The action each operation must be decided on: AWS's mapping. */
static const struct {
	enum s3_op op;
	enum s3_authz_action act;
} want_action[] = {
	{ S3_OP_ListBuckets, S3_ACT_ListAllMyBuckets },
	{ S3_OP_CreateBucket, S3_ACT_CreateBucket },
	{ S3_OP_HeadBucket, S3_ACT_ListBucket },
	{ S3_OP_ListObjects, S3_ACT_ListBucket },
	{ S3_OP_ListObjectsV2, S3_ACT_ListBucket },
	{ S3_OP_ListMultipartUploads, S3_ACT_ListBucketMultipartUploads },
	{ S3_OP_DeleteBucket, S3_ACT_DeleteBucket },
	{ S3_OP_GetBucketLocation, S3_ACT_GetBucketLocation },
	{ S3_OP_GetBucketAcl, S3_ACT_GetBucketAcl },
	{ S3_OP_PutBucketAcl, S3_ACT_PutBucketAcl },
	{ S3_OP_PutObject, S3_ACT_PutObject },
	{ S3_OP_CopyObject, S3_ACT_PutObject },
	{ S3_OP_CreateMultipartUpload, S3_ACT_PutObject },
	{ S3_OP_UploadPart, S3_ACT_PutObject },
	{ S3_OP_UploadPartCopy, S3_ACT_PutObject },
	{ S3_OP_CompleteMultipartUpload, S3_ACT_PutObject },
	{ S3_OP_DeleteObject, S3_ACT_DeleteObject },
	{ S3_OP_DeleteObjects, S3_ACT_DeleteObject },
	{ S3_OP_GetObject, S3_ACT_GetObject },
	{ S3_OP_HeadObject, S3_ACT_GetObject },
	{ S3_OP_GetObjectAcl, S3_ACT_GetObjectAcl },
	{ S3_OP_PutObjectAcl, S3_ACT_PutObjectAcl },
	{ S3_OP_GetObjectAttributes, S3_ACT_GetObjectAttributes },
	{ S3_OP_GetObjectTagging, S3_ACT_GetObjectTagging },
	{ S3_OP_PutObjectTagging, S3_ACT_PutObjectTagging },
	{ S3_OP_DeleteObjectTagging, S3_ACT_DeleteObjectTagging },
	{ S3_OP_GetBucketTagging, S3_ACT_GetBucketTagging },
	{ S3_OP_PutBucketTagging, S3_ACT_PutBucketTagging },
	{ S3_OP_DeleteBucketTagging, S3_ACT_PutBucketTagging },
	{ S3_OP_GetBucketOwnershipControls, S3_ACT_GetBucketOwnershipControls },
	{ S3_OP_PutBucketOwnershipControls, S3_ACT_PutBucketOwnershipControls },
	{ S3_OP_DeleteBucketOwnershipControls, S3_ACT_PutBucketOwnershipControls },
	{ S3_OP_GetBucketPolicy, S3_ACT_GetBucketPolicy },
	{ S3_OP_PutBucketPolicy, S3_ACT_PutBucketPolicy },
	{ S3_OP_DeleteBucketPolicy, S3_ACT_DeleteBucketPolicy },
	{ S3_OP_GetBucketPolicyStatus, S3_ACT_GetBucketPolicyStatus },
	{ S3_OP_GetPublicAccessBlock, S3_ACT_GetBucketPublicAccessBlock },
	{ S3_OP_PutPublicAccessBlock, S3_ACT_PutBucketPublicAccessBlock },
	{ S3_OP_DeletePublicAccessBlock, S3_ACT_PutBucketPublicAccessBlock },
	{ S3_OP_AbortMultipartUpload, S3_ACT_AbortMultipartUpload },
	{ S3_OP_ListParts, S3_ACT_ListMultipartUploadParts },
	{ S3_OP_GetBucketCors, S3_ACT_GetBucketCORS },
	{ S3_OP_PutBucketCors, S3_ACT_PutBucketCORS },
	{ S3_OP_DeleteBucketCors, S3_ACT_PutBucketCORS },
	{ S3_OP_ListObjectVersions, S3_ACT_ListBucketVersions },
	{ S3_OP_GetBucketVersioning, S3_ACT_GetBucketVersioning },
	{ S3_OP_PutBucketVersioning, S3_ACT_PutBucketVersioning },
	{ S3_OP_GetBucketLifecycleConfiguration, S3_ACT_GetLifecycleConfiguration },
	{ S3_OP_PutBucketLifecycleConfiguration, S3_ACT_PutLifecycleConfiguration },
	{ S3_OP_DeleteBucketLifecycle, S3_ACT_PutLifecycleConfiguration },
	{ S3_OP_GetObjectLockConfiguration, S3_ACT_GetBucketObjectLockConfiguration },
	{ S3_OP_PutObjectLockConfiguration, S3_ACT_PutBucketObjectLockConfiguration },
	{ S3_OP_GetObjectRetention, S3_ACT_GetObjectRetention },
	{ S3_OP_PutObjectRetention, S3_ACT_PutObjectRetention },
	{ S3_OP_GetObjectLegalHold, S3_ACT_GetObjectLegalHold },
	{ S3_OP_PutObjectLegalHold, S3_ACT_PutObjectLegalHold },
	{ S3_OP_GetBucketEncryption, S3_ACT_GetEncryptionConfiguration },
	{ S3_OP_PutBucketEncryption, S3_ACT_PutEncryptionConfiguration },
	{ S3_OP_DeleteBucketEncryption, S3_ACT_PutEncryptionConfiguration },
	{ S3_OP_GetBucketAccelerateConfiguration, S3_ACT_GetAccelerateConfiguration },
	{ S3_OP_GetBucketRequestPayment, S3_ACT_GetBucketRequestPayment },
	{ S3_OP_GetBucketLogging, S3_ACT_GetBucketLogging },
	{ S3_OP_GetBucketNotificationConfiguration, S3_ACT_GetBucketNotification },
	{ S3_OP_GetBucketWebsite, S3_ACT_GetBucketWebsite },
	{ S3_OP_DeleteBucketWebsite, S3_ACT_DeleteBucketWebsite },
	{ S3_OP_GetBucketReplication, S3_ACT_GetReplicationConfiguration },
	{ S3_OP_DeleteBucketReplication, S3_ACT_PutReplicationConfiguration },
};

START_TEST(test_tables)
{
	int seen[S3_OP__COUNT];
	memset(seen, 0, sizeof(seen));
	enum s3_authz_action act[S3_OP__COUNT];
	memset(act, 0, sizeof(act));
	ck_assert_uint_eq(s3_n_handler_tables, 19);
	for (size_t m = 0; m < s3_n_handler_tables; m++)
		for (const struct s3_handler *h = s3_handler_tables[m]; h->fn; h++) {
			ck_assert_msg(h->op > S3_OP_NONE && h->op < S3_OP__COUNT, "table %zu: op %d",
				      m, (int)h->op);
			ck_assert_msg(h->action > S3_ACT_NONE && h->action < S3_ACT__COUNT,
				      "%s: no action", s3_op_name(h->op));
			seen[h->op]++;
			act[h->op] = h->action;
		}
	for (size_t i = 0; i < sizeof(want_action) / sizeof(want_action[0]); i++)
		ck_assert_msg(act[want_action[i].op] == want_action[i].act, "%s: %s, want %s",
			      s3_op_name(want_action[i].op), s3_action_name(act[want_action[i].op]),
			      s3_action_name(want_action[i].act));
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

/* Every action the gate decides is one of AWS's S3 action names, so a
 * bucket policy naming it (s3_policy validates names against AWS's table)
 * reaches that operation. */
START_TEST(test_actions_are_aws_names)
{
	for (int a = 1; a < S3_ACT__COUNT; a++)
		ck_assert_msg(s3_policy_action_valid(s3_action_name((enum s3_authz_action)a)),
			      "%s is not an S3 action name", s3_action_name((enum s3_authz_action)a));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("s3_handlers");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_tables);
	tcase_add_test(tc, test_actions_are_aws_names);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
