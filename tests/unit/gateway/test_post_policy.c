/*
 * test_post_policy.c — browser POST policies (gateway/post_policy): AWS's
 * documented example policy parsed and evaluated (exact matches in both
 * forms, starts-with, "bucket", case-insensitive field names, x-ignore-
 * and the signature fields exempt), each way it fails (expired, a
 * condition, an extra field, a missing field) with AWS's messages,
 * content-length-range (EntityTooLarge / EntityTooSmall), and documents
 * that are not policies (bad base64, not JSON, no expiration, no
 * conditions, a malformed condition or date).
 */
#include <check.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/post_policy.h"

static enum s3_err parse(const char *json, struct post_policy *p, const char **msg)
{
	static char b64[8192];
	int n = EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)json, (int)strlen(json));
	return post_policy_parse(b64, (size_t)n, p, msg);
}

static const char *const aws_example =
	"{ \"expiration\": \"2030-12-30T12:00:00.000Z\",\n"
	"  \"conditions\": [\n"
	"    {\"bucket\": \"sigv4examplebucket\"},\n"
	"    [\"starts-with\", \"$key\", \"user/user1/\"],\n"
	"    {\"acl\": \"public-read\"},\n"
	"    {\"success_action_redirect\": \"http://sigv4examplebucket.s3.amazonaws.com/successful_upload.html\"},\n"
	"    [\"starts-with\", \"$Content-Type\", \"image/\"],\n"
	"    {\"x-amz-meta-uuid\": \"14365123651274\"},\n"
	"    {\"x-amz-server-side-encryption\": \"AES256\"},\n"
	"    [\"starts-with\", \"$x-amz-meta-tag\", \"\"],\n"
	"    {\"x-amz-credential\": \"AKIAIOSFODNN7EXAMPLE/20151229/us-east-1/s3/aws4_request\"},\n"
	"    {\"x-amz-algorithm\": \"AWS4-HMAC-SHA256\"},\n"
	"    [\"eq\", \"$x-amz-date\", \"20151229T000000Z\" ],\n"
	"    [\"content-length-range\", 10, 1048576]\n"
	"  ]\n"
	"}";

#define NOW 1700000000000LL

START_TEST(test_example)
{
	struct post_policy p;
	const char *msg;
	ck_assert_int_eq(parse(aws_example, &p, &msg), S3E_OK);
	ck_assert_uint_eq(p.n_conds, 12);
	ck_assert(p.has_range);
	ck_assert_int_eq(p.range_min, 10);
	ck_assert_int_eq(p.range_max, 1048576);
	int64_t ms;
	ck_assert_int_eq(post_policy_parse_time("2030-12-30T12:00:00.000Z", 24, &ms), 0);
	ck_assert_int_eq(p.expiration_ms, ms);
	ck_assert_int_eq(ms, 1924862400000LL);
	struct post_field f[] = {
		{ "key", "user/user1/photo.jpg", 20 },
		{ "ACL", "public-read", 11 },
		{ "success_action_redirect", "http://sigv4examplebucket.s3.amazonaws.com/successful_upload.html", 65 },
		{ "Content-Type", "image/jpeg", 10 },
		{ "x-amz-meta-uuid", "14365123651274", 14 },
		{ "x-amz-server-side-encryption", "AES256", 6 },
		{ "X-Amz-Credential", "AKIAIOSFODNN7EXAMPLE/20151229/us-east-1/s3/aws4_request", 55 },
		{ "x-amz-algorithm", "AWS4-HMAC-SHA256", 16 },
		{ "x-amz-date", "20151229T000000Z", 16 },
		{ "x-amz-meta-tag", "", 0 },
		{ "x-amz-signature", "abc", 3 },
		{ "policy", "eyJ...", 6 },
		{ "x-ignore-me", "anything", 8 },
	};
	size_t n = sizeof(f) / sizeof(f[0]);
	char m[512];
	ck_assert_int_eq(post_policy_check(&p, NOW, "sigv4examplebucket", f, n, m, sizeof(m)), S3E_OK);
	/* Another bucket. */
	ck_assert_int_eq(post_policy_check(&p, NOW, "other", f, n, m, sizeof(m)), S3E_AccessDenied);
	ck_assert_str_eq(m, "Invalid according to Policy: Policy Condition failed: "
			    "[\"eq\", \"$bucket\", \"sigv4examplebucket\"]");
	/* A key outside the prefix. */
	f[0].value = "user/user2/x";
	f[0].value_len = 12;
	ck_assert_int_eq(post_policy_check(&p, NOW, "sigv4examplebucket", f, n, m, sizeof(m)), S3E_AccessDenied);
	ck_assert_str_eq(m, "Invalid according to Policy: Policy Condition failed: "
			    "[\"starts-with\", \"$key\", \"user/user1/\"]");
	f[0].value = "user/user1/photo.jpg";
	f[0].value_len = 20;
	/* Values are exact: case matters. */
	f[1].value = "Public-Read";
	ck_assert_int_eq(post_policy_check(&p, NOW, "sigv4examplebucket", f, n, m, sizeof(m)), S3E_AccessDenied);
	f[1].value = "public-read";
	/* A field the conditions do not name. */
	struct post_field g[sizeof(f) / sizeof(f[0]) + 1];
	memcpy(g, f, sizeof(f));
	g[n] = (struct post_field){ "x-amz-meta-other", "1", 1 };
	ck_assert_int_eq(post_policy_check(&p, NOW, "sigv4examplebucket", g, n + 1, m, sizeof(m)), S3E_AccessDenied);
	ck_assert_str_eq(m, "Invalid according to Policy: Extra input fields: x-amz-meta-other");
	/* A field a condition needs is missing. */
	ck_assert_int_eq(post_policy_check(&p, NOW, "sigv4examplebucket", f, 3, m, sizeof(m)), S3E_AccessDenied);
	/* Expired. */
	ck_assert_int_eq(post_policy_check(&p, ms, "sigv4examplebucket", f, n, m, sizeof(m)), S3E_AccessDenied);
	ck_assert_str_eq(m, "Invalid according to Policy: Policy expired.");
	/* content-length-range, inclusive. */
	ck_assert_int_eq(post_policy_check_size(&p, 10), S3E_OK);
	ck_assert_int_eq(post_policy_check_size(&p, 1048576), S3E_OK);
	ck_assert_int_eq(post_policy_check_size(&p, 9), S3E_EntityTooSmall);
	ck_assert_int_eq(post_policy_check_size(&p, 1048577), S3E_EntityTooLarge);
	post_policy_free(&p);
}
END_TEST

START_TEST(test_not_policies)
{
	struct post_policy p;
	const char *msg;
	ck_assert_int_eq(post_policy_parse("e30", 3, &p, &msg), S3E_InvalidPolicyDocument);
	ck_assert_str_eq(msg, "Invalid Policy: Invalid 'Base64' encoding.");
	post_policy_free(&p);
	ck_assert_int_eq(post_policy_parse("e3!=", 4, &p, &msg), S3E_InvalidPolicyDocument);
	post_policy_free(&p);
	struct { const char *doc, *msg; } bad[] = {
		{ "not json", "Invalid Policy: Invalid JSON." },
		{ "[1]", "Invalid Policy: Invalid JSON." },
		{ "{\"conditions\": []}", "Invalid Policy: Policy missing expiration." },
		{ "{\"expiration\": \"2030-01-01T00:00:00Z\"}", "Invalid Policy: Policy missing conditions." },
		{ "{\"expiration\": \"tomorrow\", \"conditions\": []}",
		  "Invalid Policy: Invalid 'expiration' value: must be an ISO 8601 date." },
		{ "{\"expiration\": \"2030-01-01T00:00:00Z\", \"conditions\": [[\"eq\", \"key\", \"x\"]]}",
		  "Invalid Policy: Invalid Condition." },
		{ "{\"expiration\": \"2030-01-01T00:00:00Z\", \"conditions\": [[\"matches\", \"$key\", \"x\"]]}",
		  "Invalid Policy: Invalid Condition." },
		{ "{\"expiration\": \"2030-01-01T00:00:00Z\", \"conditions\": [[\"content-length-range\", 5, 1]]}",
		  "Invalid Policy: Invalid content-length-range." },
		{ "{\"expiration\": \"2030-01-01T00:00:00Z\", \"conditions\": [{\"a\": \"1\", \"b\": \"2\"}]}",
		  "Invalid Policy: Invalid Simple-Condition: Simple-Conditions must have exactly one property specified." },
		{ "{\"expiration\": \"2030-01-01T00:00:00Z\", \"conditions\": [7]}", "Invalid Policy: Invalid Condition." },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(parse(bad[i].doc, &p, &msg), S3E_InvalidPolicyDocument);
		ck_assert_str_eq(msg, bad[i].msg);
		post_policy_free(&p);
	}
	int64_t ms;
	ck_assert_int_eq(post_policy_parse_time("2030-01-01T00:00:00Z", 20, &ms), 0);
	ck_assert_int_eq(post_policy_parse_time("2030-01-01T00:00:00.5Z", 22, &ms), 0);
	ck_assert_int_eq(ms % 1000, 500);
	ck_assert_int_eq(post_policy_parse_time("2030-13-01T00:00:00Z", 20, &ms), -EINVAL);
	ck_assert_int_eq(post_policy_parse_time("2030-01-01 00:00:00Z", 20, &ms), -EINVAL);
	ck_assert_int_eq(post_policy_parse_time("2030-01-01T00:00:00", 19, &ms), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("post_policy");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_example);
	tcase_add_test(tc, test_not_policies);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
