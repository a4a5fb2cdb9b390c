/*
 * test_s3_authz.c — the authorization decision (gateway/s3_authz) as a
 * table: principal (bucket owner, another user, anonymous, admin) x ACL x
 * Object Ownership x action, each row the answer AWS's permission mapping
 * gives; the missing-object rule; the owner a write gets.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "gateway/s3_authz.h"

enum who { OWNER, OTHER, ANON, ADMIN, WRITER };

static const char *const who_name[] = { "owner", "other", "anon", "admin", "writer" };

static void principal(enum who w, struct s3_principal *p)
{
	static const char *const users[] = { "alice", "bob", NULL, "root", "carol" };
	s3_principal_init(p, users[w], w == ADMIN);
}

/* A bucket of alice's with ACL bacl; an object of obj_owner with oacl. */
static enum s3_verdict ask(enum who w, enum s3_authz_action act, enum s3_ownership own,
			   enum s3_canned bacl, const char *obj_owner, enum s3_canned oacl,
			   bool have_obj)
{
	struct s3_principal p;
	principal(w, &p);
	struct s3_acl ba, oa;
	s3_acl_canned(&ba, bacl);
	s3_acl_canned(&oa, oacl);
	struct s3_authz_rec orec = { .owner = obj_owner, .acl = &oa };
	struct s3_authz_req q = {
		.who = &p, .action = act, .bucket_name = "bkt", .key = "k",
		.bucket = { .owner = "alice", .acl = &ba }, .ownership = own,
		.object = have_obj ? &orec : NULL,
	};
	return s3_authz_decide(&q);
}

#define A S3_ALLOW
#define D S3_DENY

/* Bucket actions under ObjectWriter (ACLs on): owner, other, anon, admin. */
static const struct {
	enum s3_canned acl;
	enum s3_authz_action act;
	enum s3_verdict v[4];
} bucket_rows[] = {
	{ S3_CANNED_PRIVATE, S3_ACT_ListBucket, { A, D, D, A } },
	{ S3_CANNED_PRIVATE, S3_ACT_PutObject, { A, D, D, A } },
	{ S3_CANNED_PRIVATE, S3_ACT_DeleteObject, { A, D, D, A } },
	{ S3_CANNED_PRIVATE, S3_ACT_GetBucketAcl, { A, D, D, A } },
	{ S3_CANNED_PRIVATE, S3_ACT_PutBucketAcl, { A, D, D, A } },
	{ S3_CANNED_PUBLIC_READ, S3_ACT_ListBucket, { A, A, A, A } },
	{ S3_CANNED_PUBLIC_READ, S3_ACT_ListBucketMultipartUploads, { A, A, A, A } },
	{ S3_CANNED_PUBLIC_READ, S3_ACT_PutObject, { A, D, D, A } },
	{ S3_CANNED_PUBLIC_READ, S3_ACT_GetBucketAcl, { A, D, D, A } },
	{ S3_CANNED_PUBLIC_READ_WRITE, S3_ACT_PutObject, { A, A, A, A } },
	{ S3_CANNED_PUBLIC_READ_WRITE, S3_ACT_DeleteObject, { A, A, A, A } },
	{ S3_CANNED_PUBLIC_READ_WRITE, S3_ACT_PutBucketAcl, { A, D, D, A } },
	{ S3_CANNED_AUTHENTICATED_READ, S3_ACT_ListBucket, { A, A, D, A } },
	{ S3_CANNED_AUTHENTICATED_READ, S3_ACT_PutObject, { A, D, D, A } },
	/* Owner-only whatever the ACL says. */
	{ S3_CANNED_PUBLIC_READ_WRITE, S3_ACT_DeleteBucket, { A, D, D, A } },
	{ S3_CANNED_PUBLIC_READ_WRITE, S3_ACT_GetBucketLocation, { A, D, D, A } },
	{ S3_CANNED_PUBLIC_READ_WRITE, S3_ACT_PutBucketTagging, { A, D, D, A } },
	{ S3_CANNED_PUBLIC_READ_WRITE, S3_ACT_PutBucketOwnershipControls, { A, D, D, A } },
	/* Service actions: any user. */
	{ S3_CANNED_PRIVATE, S3_ACT_ListAllMyBuckets, { A, A, D, A } },
	{ S3_CANNED_PRIVATE, S3_ACT_CreateBucket, { A, A, D, A } },
};

START_TEST(test_bucket_table)
{
	for (size_t i = 0; i < sizeof(bucket_rows) / sizeof(bucket_rows[0]); i++)
		for (int w = 0; w < 4; w++) {
			enum s3_verdict v = ask(w, bucket_rows[i].act, S3_OWN_WRITER, bucket_rows[i].acl,
						NULL, 0, false);
			ck_assert_msg(v == bucket_rows[i].v[w], "%s on a %s bucket as %s: %s",
				      s3_action_name(bucket_rows[i].act),
				      s3_acl_canned_name(bucket_rows[i].acl), who_name[w],
				      v ? "allowed" : "denied");
		}
}
END_TEST

/* Object actions, ObjectWriter, a private bucket of alice's; the object
 * is carol's (the writer). Columns: bucket owner (alice), other (bob),
 * anon, admin, writer (carol). */
static const struct {
	enum s3_canned acl;
	enum s3_authz_action act;
	enum s3_verdict v[5];
} object_rows[] = {
	{ S3_CANNED_PRIVATE, S3_ACT_GetObject, { D, D, D, A, A } },
	{ S3_CANNED_PRIVATE, S3_ACT_GetObjectAcl, { D, D, D, A, A } },
	{ S3_CANNED_PRIVATE, S3_ACT_PutObjectAcl, { D, D, D, A, A } },
	{ S3_CANNED_PUBLIC_READ, S3_ACT_GetObject, { A, A, A, A, A } },
	{ S3_CANNED_PUBLIC_READ, S3_ACT_GetObjectAcl, { D, D, D, A, A } },
	{ S3_CANNED_PUBLIC_READ, S3_ACT_GetObjectAttributes, { A, A, A, A, A } },
	{ S3_CANNED_AUTHENTICATED_READ, S3_ACT_GetObject, { A, A, D, A, A } },
	{ S3_CANNED_BUCKET_OWNER_READ, S3_ACT_GetObject, { A, D, D, A, A } },
	{ S3_CANNED_BUCKET_OWNER_READ, S3_ACT_GetObjectAcl, { D, D, D, A, A } },
	{ S3_CANNED_BUCKET_OWNER_FULL_CONTROL, S3_ACT_GetObjectAcl, { A, D, D, A, A } },
	{ S3_CANNED_BUCKET_OWNER_FULL_CONTROL, S3_ACT_PutObjectAcl, { A, D, D, A, A } },
	{ S3_CANNED_PUBLIC_READ_WRITE, S3_ACT_PutObjectTagging, { D, D, D, A, A } },
	{ S3_CANNED_PUBLIC_READ, S3_ACT_GetObjectTagging, { D, D, D, A, A } },
};

START_TEST(test_object_table)
{
	for (size_t i = 0; i < sizeof(object_rows) / sizeof(object_rows[0]); i++)
		for (int w = 0; w < 5; w++) {
			enum s3_verdict v = ask(w, object_rows[i].act, S3_OWN_WRITER, S3_CANNED_PRIVATE,
						"carol", object_rows[i].acl, true);
			ck_assert_msg(v == object_rows[i].v[w], "%s on a %s object as %s: %s",
				      s3_action_name(object_rows[i].act),
				      s3_acl_canned_name(object_rows[i].acl), who_name[w],
				      v ? "allowed" : "denied");
		}
}
END_TEST

/* BucketOwnerEnforced: ACLs give nothing; the bucket owner may do
 * everything on the bucket and every object in it, whoever wrote it. */
START_TEST(test_enforced)
{
	static const enum s3_authz_action acts[] = { S3_ACT_ListBucket, S3_ACT_PutObject,
					       S3_ACT_GetObject, S3_ACT_GetObjectAcl,
					       S3_ACT_PutObjectAcl, S3_ACT_GetObjectTagging };
	for (size_t i = 0; i < sizeof(acts) / sizeof(acts[0]); i++) {
		ck_assert_int_eq(ask(OWNER, acts[i], S3_OWN_ENFORCED, S3_CANNED_PUBLIC_READ_WRITE,
				     "carol", S3_CANNED_PRIVATE, true), A);
		ck_assert_int_eq(ask(OTHER, acts[i], S3_OWN_ENFORCED, S3_CANNED_PUBLIC_READ_WRITE,
				     "carol", S3_CANNED_PUBLIC_READ_WRITE, true), D);
		ck_assert_int_eq(ask(ANON, acts[i], S3_OWN_ENFORCED, S3_CANNED_PUBLIC_READ_WRITE,
				     "carol", S3_CANNED_PUBLIC_READ_WRITE, true), D);
		/* The writer of an object in an enforced bucket does not own it. */
		ck_assert_int_eq(ask(WRITER, acts[i], S3_OWN_ENFORCED, S3_CANNED_PRIVATE, "carol",
				     S3_CANNED_PRIVATE, true), D);
		ck_assert_int_eq(ask(ADMIN, acts[i], S3_OWN_ENFORCED, S3_CANNED_PRIVATE, "carol",
				     S3_CANNED_PRIVATE, true), A);
	}
}
END_TEST

/* A missing object: NoSuchKey to whoever may list the bucket, else
 * AccessDenied (the decision on s3:ListBucket). */
START_TEST(test_missing_object)
{
	ck_assert_int_eq(ask(OWNER, S3_ACT_GetObject, S3_OWN_WRITER, S3_CANNED_PRIVATE, NULL, 0,
			     false), A);
	ck_assert_int_eq(ask(OTHER, S3_ACT_GetObject, S3_OWN_WRITER, S3_CANNED_PRIVATE, NULL, 0,
			     false), D);
	ck_assert_int_eq(ask(ANON, S3_ACT_GetObject, S3_OWN_WRITER, S3_CANNED_PUBLIC_READ, NULL, 0,
			     false), A);
	ck_assert_int_eq(ask(ANON, S3_ACT_GetObjectAcl, S3_OWN_ENFORCED, S3_CANNED_PUBLIC_READ, NULL,
			     0, false), D);
}
END_TEST

/* Explicit grants: by id and by group, each permission. */
START_TEST(test_grants)
{
	struct s3_principal bob, anon;
	s3_principal_init(&bob, "bob", false);
	s3_principal_init(&anon, NULL, false);
	struct s3_acl ba;
	ba.canned = S3_CANNED_NONE;
	ba.n = 2;
	ba.g[0] = (struct s3_grant){ .perm = S3_PERM_WRITE, .group = S3_GROUP_NONE };
	memcpy(ba.g[0].id, bob.id, S3_ID_LEN);
	ba.g[1] = (struct s3_grant){ .perm = S3_PERM_READ_ACP, .group = S3_GROUP_ALL_USERS };
	struct s3_authz_req q = { .who = &bob, .action = S3_ACT_PutObject,
				  .bucket = { .owner = "alice", .acl = &ba },
				  .ownership = S3_OWN_PREFERRED };
	ck_assert_int_eq(s3_authz_decide(&q), A);
	q.action = S3_ACT_ListBucket;
	ck_assert_int_eq(s3_authz_decide(&q), D);
	q.action = S3_ACT_GetBucketAcl;
	ck_assert_int_eq(s3_authz_decide(&q), A);
	q.who = &anon;
	ck_assert_int_eq(s3_authz_decide(&q), A);
	q.action = S3_ACT_PutObject;
	ck_assert_int_eq(s3_authz_decide(&q), D);
	/* An explicit ACL without the owner: the owner keeps READ_ACP and
	 * WRITE_ACP (implicit), not READ. */
	struct s3_principal alice;
	s3_principal_init(&alice, "alice", false);
	q.who = &alice;
	q.action = S3_ACT_PutBucketAcl;
	ck_assert_int_eq(s3_authz_decide(&q), A);
	q.action = S3_ACT_ListBucket;
	ck_assert_int_eq(s3_authz_decide(&q), D);
}
END_TEST

/* Per-user grants (issue 16): an identity-based Allow on one bucket, by
 * level, bound to the bucket's created_ms; a Deny (here a stored policy
 * that no longer parses, which denies as an explicit Deny does) beats
 * it; PublicAccessBlock does not limit it; anonymous has none. */
START_TEST(test_user_grants)
{
	struct s3_user_grant g[2] = {
		{ .bucket = "bkt", .level = S3_GRANT_READ, .bucket_created_ms = 1000 },
		{ .bucket = "other", .level = S3_GRANT_FULL, .bucket_created_ms = 5 },
	};
	struct s3_principal bob;
	s3_principal_init(&bob, "bob", false);
	bob.grants = g;
	bob.n_grants = 2;
	struct s3_acl ba, oa;
	s3_acl_canned(&ba, S3_CANNED_PRIVATE);
	s3_acl_canned(&oa, S3_CANNED_PRIVATE);
	struct s3_authz_rec orec = { .owner = "alice", .acl = &oa };
	struct s3_authz_req q = { .who = &bob, .bucket_name = "bkt", .key = "k",
				  .bucket = { .owner = "alice", .acl = &ba },
				  .bucket_created_ms = 1000, .ownership = S3_OWN_ENFORCED,
				  .object = &orec };
	static const struct {
		enum s3_authz_action act;
		enum s3_verdict v[3];   /* read, write, full */
	} rows[] = {
		{ S3_ACT_ListBucket, { A, A, A } },
		{ S3_ACT_ListBucketMultipartUploads, { A, A, A } },
		{ S3_ACT_GetBucketLocation, { A, A, A } },
		{ S3_ACT_GetObject, { A, A, A } },
		{ S3_ACT_GetObjectAttributes, { A, A, A } },
		{ S3_ACT_GetObjectTagging, { A, A, A } },
		{ S3_ACT_PutObject, { D, A, A } },
		{ S3_ACT_DeleteObject, { D, A, A } },
		{ S3_ACT_AbortMultipartUpload, { D, A, A } },
		{ S3_ACT_ListMultipartUploadParts, { D, A, A } },
		{ S3_ACT_PutObjectTagging, { D, A, A } },
		{ S3_ACT_DeleteObjectTagging, { D, A, A } },
		{ S3_ACT_GetBucketAcl, { D, D, A } },
		{ S3_ACT_PutBucketAcl, { D, D, A } },
		{ S3_ACT_GetObjectAcl, { D, D, A } },
		{ S3_ACT_DeleteBucket, { D, D, A } },
		{ S3_ACT_PutBucketPolicy, { D, D, A } },
		{ S3_ACT_PutBucketTagging, { D, D, A } },
		{ S3_ACT_PutBucketCORS, { D, D, A } },
		{ S3_ACT_PutBucketPublicAccessBlock, { D, D, A } },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		for (int lv = 0; lv < 3; lv++) {
			g[0].level = (uint8_t)(S3_GRANT_READ + lv);
			q.action = rows[i].act;
			ck_assert_msg(s3_authz_decide(&q) == rows[i].v[lv], "%s at level %d",
				      s3_action_name(rows[i].act), lv + 1);
		}
	/* Every action the table does not name needs FULL. */
	for (int a = 1; a < S3_ACT__COUNT; a++) {
		enum s3_grant_level need = s3_authz_grant_needed((enum s3_authz_action)a);
		ck_assert(need >= S3_GRANT_READ && need <= S3_GRANT_FULL);
	}
	g[0].level = S3_GRANT_WRITE;
	q.action = S3_ACT_PutObject;
	ck_assert_int_eq(s3_authz_decide(&q), A);
	/* Another bucket of the same name (made again): nothing. */
	q.bucket_created_ms = 1001;
	ck_assert_int_eq(s3_authz_decide(&q), D);
	q.action = S3_ACT_GetObject;
	ck_assert_int_eq(s3_authz_decide(&q), D);
	q.bucket_created_ms = 1000;
	/* A missing object: NoSuchKey for the grant holder (ListBucket). */
	q.object = NULL;
	ck_assert_int_eq(s3_authz_decide(&q), A);
	q.object = &orec;
	/* PublicAccessBlock limits public grants and policies, not this. */
	q.pab = (struct s3_pab){ .block_public_acls = true, .ignore_public_acls = true,
				 .block_public_policy = true, .restrict_public_buckets = true };
	ck_assert_int_eq(s3_authz_decide(&q), A);
	/* A Deny beats it. */
	q.policy_broken = true;
	ck_assert_int_eq(s3_authz_decide(&q), D);
	q.policy_broken = false;
	/* Not bob's bucket name: nothing; not bob: nothing. */
	q.bucket_name = "bkt2";
	ck_assert_int_eq(s3_authz_decide(&q), D);
	q.bucket_name = "bkt";
	struct s3_principal anon;
	s3_principal_init(&anon, NULL, false);
	anon.grants = g;   /* never set by s3_rq; ignored even so */
	anon.n_grants = 2;
	q.who = &anon;
	ck_assert_int_eq(s3_authz_decide(&q), D);
}
END_TEST

START_TEST(test_object_owner)
{
	ck_assert_str_eq(s3_authz_object_owner(S3_OWN_ENFORCED, "alice", "bob", S3_CANNED_NONE),
			 "alice");
	ck_assert_str_eq(s3_authz_object_owner(S3_OWN_PREFERRED, "alice", "bob",
					       S3_CANNED_BUCKET_OWNER_FULL_CONTROL), "alice");
	ck_assert_str_eq(s3_authz_object_owner(S3_OWN_PREFERRED, "alice", "bob",
					       S3_CANNED_PUBLIC_READ), "bob");
	ck_assert_str_eq(s3_authz_object_owner(S3_OWN_WRITER, "alice", "bob",
					       S3_CANNED_BUCKET_OWNER_FULL_CONTROL), "bob");
	ck_assert_str_eq(s3_authz_object_owner(S3_OWN_UNSET, "alice", "bob", S3_CANNED_NONE), "bob");
	ck_assert_str_eq(s3_action_name(S3_ACT_GetObject), "s3:GetObject");
	ck_assert_int_eq(s3_action_res(S3_ACT_GetObjectAcl), S3_RES_OBJECT);
	ck_assert_int_eq(s3_action_res(S3_ACT_PutObject), S3_RES_BUCKET);
	ck_assert_int_eq(s3_action_res(S3_ACT_CreateBucket), S3_RES_NONE);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("s3_authz");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_bucket_table);
	tcase_add_test(tc, test_object_table);
	tcase_add_test(tc, test_enforced);
	tcase_add_test(tc, test_missing_object);
	tcase_add_test(tc, test_grants);
	tcase_add_test(tc, test_object_owner);
	tcase_add_test(tc, test_user_grants);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
