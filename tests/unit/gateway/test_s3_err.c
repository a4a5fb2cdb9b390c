/*
 * test_s3_err.c — the S3 error table (status and wire codes clients switch
 * on) and the exact XML error document, escaping included.
 */
#include <check.h>
#include <string.h>

#include "gateway/s3_err.h"

START_TEST(test_table)
{
	ck_assert_int_eq(s3_err_status(S3E_NoSuchBucket), 404);
	ck_assert_str_eq(s3_err_code(S3E_NoSuchBucket), "NoSuchBucket");
	ck_assert_int_eq(s3_err_status(S3E_NoSuchKey), 404);
	ck_assert_int_eq(s3_err_status(S3E_BucketAlreadyOwnedByYou), 409);
	ck_assert_int_eq(s3_err_status(S3E_BucketNotEmpty), 409);
	ck_assert_int_eq(s3_err_status(S3E_SignatureDoesNotMatch), 403);
	ck_assert_int_eq(s3_err_status(S3E_InvalidAccessKeyId), 403);
	ck_assert_int_eq(s3_err_status(S3E_RequestTimeTooSkewed), 403);
	ck_assert_int_eq(s3_err_status(S3E_InvalidRange), 416);
	ck_assert_int_eq(s3_err_status(S3E_MissingContentLength), 411);
	ck_assert_int_eq(s3_err_status(S3E_MethodNotAllowed), 405);
	ck_assert_int_eq(s3_err_status(S3E_NotImplemented), 501);
	ck_assert_int_eq(s3_err_status(S3E_PreconditionFailed), 412);
	ck_assert_int_eq(s3_err_status(S3E_SlowDown), 503);
	ck_assert_int_eq(s3_err_status(S3E_ServiceUnavailable), 503);
	ck_assert_int_eq(s3_err_status(S3E_InternalError), 500);
	/* Expired presigned: S3 says AccessDenied with its own message. */
	ck_assert_int_eq(s3_err_status(S3E_RequestExpired), 403);
	ck_assert_str_eq(s3_err_code(S3E_RequestExpired), "AccessDenied");
	ck_assert_str_eq(s3_err_message(S3E_RequestExpired), "Request has expired");
	ck_assert_str_eq(s3_err_name(S3E_RequestExpired), "RequestExpired");
	/* Out of range never crashes. */
	ck_assert_int_eq(s3_err_status((enum s3_err)9999), 500);
	ck_assert_str_eq(s3_err_code((enum s3_err)-1), "InternalError");
	/* Every row is filled in. */
	for (int e = 1; e < S3E__COUNT; e++) {
		ck_assert_int_ge(s3_err_status(e), 400);
		ck_assert_uint_gt(strlen(s3_err_code(e)), 0);
		ck_assert_uint_gt(strlen(s3_err_message(e)), 0);
	}
}
END_TEST

START_TEST(test_render)
{
	struct xml_w w;
	xml_init(&w, 0);
	ck_assert_int_eq(s3_err_render(&w, S3E_NoSuchKey, NULL, NULL, "/b/k", "4442587FB7D0A2F9"), 0);
	ck_assert_str_eq(w.buf, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
				"<Error><Code>NoSuchKey</Code>"
				"<Message>The specified key does not exist.</Message>"
				"<Resource>/b/k</Resource><RequestId>4442587FB7D0A2F9</RequestId></Error>");
	xml_reset(&w);
	ck_assert_int_eq(s3_err_render(&w, S3E_InvalidArgument, "bad \"x\"", NULL, "/b/<&\"'>", "r&1"), 0);
	ck_assert_str_eq(w.buf, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
				"<Error><Code>InvalidArgument</Code><Message>bad &quot;x&quot;</Message>"
				"<Resource>/b/&lt;&amp;&quot;&apos;&gt;</Resource>"
				"<RequestId>r&amp;1</RequestId></Error>");
	xml_reset(&w);
	ck_assert_int_eq(s3_err_render(&w, S3E_AccessDenied, NULL, NULL, NULL, NULL), 0);
	ck_assert_str_eq(w.buf, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
				"<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>");
	/* A request signed for the wrong region: the right one, as S3 says it. */
	xml_reset(&w);
	ck_assert_int_eq(s3_err_render(&w, S3E_AuthorizationHeaderMalformed, "wrong region",
				       "us-east-1", "/b", NULL), 0);
	ck_assert_str_eq(w.buf, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
				"<Error><Code>AuthorizationHeaderMalformed</Code>"
				"<Message>wrong region</Message><Region>us-east-1</Region>"
				"<Resource>/b</Resource></Error>");
	xml_free(&w);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("s3_err");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_table);
	tcase_add_test(tc, test_render);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
