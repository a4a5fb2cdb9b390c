/*
 * test_sigv2.c — common/sigv2 against AWS's published SigV2 examples
 * ("Signing and authenticating REST requests": johnsmith, the example
 * key pair), and the parsers' refusals.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/sigv2.h"

#define SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define H(n, v) { n, sizeof(n) - 1, v, sizeof(v) - 1 }

static void check_sig(const struct sigv2_request *rq, const struct sigv2_auth *a,
		      const char *want_sts, const char *want_sig)
{
	size_t len = 0;
	char *sts = sigv2_string_to_sign(rq, a, &len);
	ck_assert_ptr_nonnull(sts);
	ck_assert_str_eq(sts, want_sts);
	ck_assert_uint_eq(len, strlen(want_sts));
	free(sts);
	char sig[SIGV2_SIG_LEN + 1];
	ck_assert_int_eq(sigv2_sign(SECRET, rq, a, sig), 0);
	ck_assert_str_eq(sig, want_sig);
	ck_assert(sigv2_equal(sig, want_sig));
}

START_TEST(aws_object_get_vhost)
{
	struct sigv4_header hs[] = { H("Host", "johnsmith.s3.amazonaws.com"),
				     H("Date", "Tue, 27 Mar 2007 19:36:42 +0000") };
	struct sigv2_request rq = { .method = "GET", .path = "/photos/puppy.jpg", .path_len = 17,
				    .headers = hs, .n_headers = 2, .vhost_bucket = "johnsmith",
				    .vhost_bucket_len = 9 };
	struct sigv2_auth a = { 0 };
	check_sig(&rq, &a, "GET\n\n\nTue, 27 Mar 2007 19:36:42 +0000\n/johnsmith/photos/puppy.jpg",
		  "bWq2s1WEIj+Ydj0vQ697zp+IXMU=");
}
END_TEST

START_TEST(aws_object_put_path_style)
{
	struct sigv4_header hs[] = { H("Content-Type", "image/jpeg"), H("Content-Length", "94328"),
				     H("Host", "s3.amazonaws.com"),
				     H("Date", "Tue, 27 Mar 2007 21:15:45 +0000") };
	struct sigv2_request rq = { .method = "PUT", .path = "/johnsmith/photos/puppy.jpg",
				    .path_len = 27, .headers = hs, .n_headers = 4 };
	struct sigv2_auth a = { 0 };
	check_sig(&rq, &a,
		  "PUT\n\nimage/jpeg\nTue, 27 Mar 2007 21:15:45 +0000\n/johnsmith/photos/puppy.jpg",
		  "MyyxeRY7whkBe+bq8fHCL/2kKUg=");
}
END_TEST

/* Only subresources are signed: prefix and max-keys are not; ?acl is. */
START_TEST(aws_list_and_acl)
{
	struct sigv4_header hs[] = { H("Date", "Tue, 27 Mar 2007 19:42:41 +0000") };
	const char *q = "prefix=photos&max-keys=50&marker=puppy";
	struct sigv2_request rq = { .method = "GET", .path = "/", .path_len = 1, .query = q,
				    .query_len = strlen(q), .headers = hs, .n_headers = 1,
				    .vhost_bucket = "johnsmith", .vhost_bucket_len = 9 };
	struct sigv2_auth a = { 0 };
	check_sig(&rq, &a, "GET\n\n\nTue, 27 Mar 2007 19:42:41 +0000\n/johnsmith/",
		  "htDYFYduRNen8P9ZfE/s9SuKy0U=");

	struct sigv4_header h2[] = { H("Date", "Tue, 27 Mar 2007 19:44:46 +0000") };
	rq.headers = h2;
	rq.query = "acl";
	rq.query_len = 3;
	check_sig(&rq, &a, "GET\n\n\nTue, 27 Mar 2007 19:44:46 +0000\n/johnsmith/?acl",
		  "c2WLPFtWHVgbEmeEG93a4cG37dM=");
}
END_TEST

/* x-amz-* headers: lower-cased, sorted, repeated ones joined with ','. */
START_TEST(aws_upload_with_amz_headers)
{
	struct sigv4_header hs[] = {
		H("Date", "Tue, 27 Mar 2007 21:06:08 +0000"),
		H("x-amz-acl", "public-read"),
		H("content-type", "application/x-download"),
		H("Content-MD5", "4gJE4saaMU4BqNR0kLY+lw=="),
		H("X-Amz-Meta-ReviewedBy", "joe@johnsmith.net"),
		H("X-Amz-Meta-ReviewedBy", "jane@johnsmith.net"),
		H("X-Amz-Meta-FileChecksum", "0x02661779"),
		H("X-Amz-Meta-ChecksumAlgorithm", "crc32"),
		H("Content-Disposition", "attachment; filename=database.dat"),
	};
	struct sigv2_request rq = { .method = "PUT", .path = "/db-backup.dat.gz", .path_len = 17,
				    .headers = hs, .n_headers = sizeof(hs) / sizeof(hs[0]),
				    .vhost_bucket = "static.johnsmith.net",
				    .vhost_bucket_len = 20 };
	struct sigv2_auth a = { 0 };
	check_sig(&rq, &a,
		  "PUT\n4gJE4saaMU4BqNR0kLY+lw==\napplication/x-download\n"
		  "Tue, 27 Mar 2007 21:06:08 +0000\n"
		  "x-amz-acl:public-read\nx-amz-meta-checksumalgorithm:crc32\n"
		  "x-amz-meta-filechecksum:0x02661779\n"
		  "x-amz-meta-reviewedby:joe@johnsmith.net,jane@johnsmith.net\n"
		  "/static.johnsmith.net/db-backup.dat.gz",
		  "ilyl83RwaSoYIEdixDQcA4OnAnc=");
}
END_TEST

/* x-amz-date instead of Date (s3cmd): an empty Date line, x-amz-date among
 * the amz headers. With both headers, AWS's text blanks the Date line. */
START_TEST(amz_date_forms)
{
	struct sigv4_header hs[] = { H("x-amz-date", "Tue, 27 Mar 2007 21:20:26 +0000") };
	struct sigv2_request rq = { .method = "DELETE", .path = "/johnsmith/photos/puppy.jpg",
				    .path_len = 27, .headers = hs, .n_headers = 1 };
	struct sigv2_auth a = { 0 };
	check_sig(&rq, &a,
		  "DELETE\n\n\n\nx-amz-date:Tue, 27 Mar 2007 21:20:26 +0000\n"
		  "/johnsmith/photos/puppy.jpg",
		  "R4dJ53KECjStyBO5iTBJZ4XVOaI=");
	struct sigv4_header both[] = { H("Date", "Tue, 27 Mar 2007 21:20:27 +0000"),
				       H("x-amz-date", "Tue, 27 Mar 2007 21:20:26 +0000") };
	rq.headers = both;
	rq.n_headers = 2;
	a.blank_date = true;
	check_sig(&rq, &a,
		  "DELETE\n\n\n\nx-amz-date:Tue, 27 Mar 2007 21:20:26 +0000\n"
		  "/johnsmith/photos/puppy.jpg",
		  "R4dJ53KECjStyBO5iTBJZ4XVOaI=");
}
END_TEST

/* Presigned: Expires in the Date line; the auth parameters are not
 * subresources; subresource values are percent-decoded and sorted. */
START_TEST(aws_query_string_auth)
{
	const char *q = "AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Expires=1175139620&"
			"Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D";
	struct sigv2_auth a;
	ck_assert_int_eq(sigv2_parse_query(q, strlen(q), &a), 0);
	ck_assert_str_eq(a.access_key, "AKIAIOSFODNN7EXAMPLE");
	ck_assert_str_eq(a.signature, "NpgCjnDzrM+WFzoENXmpNDUsSn8=");
	ck_assert_int_eq(a.expires, 1175139620);
	ck_assert(a.presigned);
	struct sigv4_header hs[] = { H("Host", "johnsmith.s3.amazonaws.com") };
	struct sigv2_request rq = { .method = "GET", .path = "/photos/puppy.jpg", .path_len = 17,
				    .query = q, .query_len = strlen(q), .headers = hs,
				    .n_headers = 1, .vhost_bucket = "johnsmith",
				    .vhost_bucket_len = 9 };
	check_sig(&rq, &a, "GET\n\n\n1175139620\n/johnsmith/photos/puppy.jpg",
		  "NpgCjnDzrM+WFzoENXmpNDUsSn8=");

	const char *q2 = "versionId=3%2FL4kqtJl&response-content-type=text%2Fplain&"
			 "AWSAccessKeyId=AK&Expires=10&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D";
	ck_assert_int_eq(sigv2_parse_query(q2, strlen(q2), &a), 0);
	rq.query = q2;
	rq.query_len = strlen(q2);
	size_t len;
	char *sts = sigv2_string_to_sign(&rq, &a, &len);
	ck_assert_str_eq(sts, "GET\n\n\n10\n/johnsmith/photos/puppy.jpg?"
			      "response-content-type=text/plain&versionId=3/L4kqtJl");
	free(sts);
}
END_TEST

START_TEST(parse_refusals)
{
	struct sigv2_auth a;
#define HDR(s) sigv2_parse_header(s, strlen(s), &a)
	ck_assert_int_eq(HDR("AWS AKIAIOSFODNN7EXAMPLE:bWq2s1WEIj+Ydj0vQ697zp+IXMU="), 0);
	ck_assert_str_eq(a.access_key, "AKIAIOSFODNN7EXAMPLE");
	ck_assert_int_eq(HDR("AWS4-HMAC-SHA256 Credential=x"), -ENOENT);
	ck_assert_int_eq(HDR("Bearer abc"), -ENOENT);
	ck_assert_int_eq(HDR("AWS "), -EINVAL);
	ck_assert_int_eq(HDR("AWS :bWq2s1WEIj+Ydj0vQ697zp+IXMU="), -EINVAL);
	ck_assert_int_eq(HDR("AWS AK"), -EINVAL);
	/* A malformed signature is one that matches nothing: parsed, empty. */
	const char *bad_sigs[] = { "AWS AK:short=", "AWS AK:bWq2s1WEIj+Ydj0vQ697zp+IXMU",
				   "AWS AK:bWq2s1WEIj+Ydj0vQ697zp+IX!U=", "AWS AK:",
				   "AWS AK:A2BWq2s1WEIj+Ydj0vQ697zp+IXMU=" };
	for (size_t i = 0; i < sizeof(bad_sigs) / sizeof(bad_sigs[0]); i++) {
		ck_assert_int_eq(HDR(bad_sigs[i]), 0);
		ck_assert_str_eq(a.access_key, "AK");
		ck_assert_str_eq(a.signature, "");
		ck_assert(!sigv2_equal("bWq2s1WEIj+Ydj0vQ697zp+IXMU=", a.signature));
	}
	ck_assert_int_eq(HDR("AWS A K:bWq2s1WEIj+Ydj0vQ697zp+IXMU="), -EINVAL);
#undef HDR
#define QRY(s) sigv2_parse_query(s, strlen(s), &a)
	ck_assert_int_eq(QRY(""), -ENOENT);
	ck_assert_int_eq(QRY("prefix=a&max-keys=2"), -ENOENT);
	ck_assert_int_eq(QRY("AWSAccessKeyId=AK&Signature=bWq2s1WEIj%2BYdj0vQ697zp%2BIXMU%3D"),
			 -EINVAL); /* no Expires */
	ck_assert_int_eq(QRY("AWSAccessKeyId=AK&Expires=12x&"
			     "Signature=bWq2s1WEIj%2BYdj0vQ697zp%2BIXMU%3D"), -EINVAL);
	ck_assert_int_eq(QRY("AWSAccessKeyId=AK&AWSAccessKeyId=AK&Expires=1&"
			     "Signature=bWq2s1WEIj%2BYdj0vQ697zp%2BIXMU%3D"), -EINVAL);
	ck_assert_int_eq(QRY("AWSAccessKeyId=AK&Expires=1&Signature=bWq2%ZZ"), 0);
	ck_assert_str_eq(a.signature, "");
	/* A spoiled escape: "%2B" turned into "A2B", 30 characters. */
	ck_assert_int_eq(QRY("AWSAccessKeyId=AK&Expires=1&Signature=A2BWq2s1WEIj%2BYdj0vQ697zp%2BIXM%3D"),
			 0);
	ck_assert_str_eq(a.signature, "");
	ck_assert_int_eq(QRY("AWSAccessKeyId=AK&Expires=1&Signature="), 0);
	ck_assert_str_eq(a.signature, "");
	ck_assert_int_eq(QRY("AWSAccessKeyId=AK&Expires=1&Signature=x&Signature=y"), -EINVAL);
	ck_assert_int_eq(QRY("AWSAccessKeyId=A%00K&Expires=1&"
			     "Signature=bWq2s1WEIj%2BYdj0vQ697zp%2BIXMU%3D"), -EINVAL);
	ck_assert_int_eq(QRY("Signature=bWq2s1WEIj+Ydj0vQ697zp+IXMU%3D&Expires=1&"
			     "AWSAccessKeyId=AK"), 0); /* an unescaped '+' is kept */
	ck_assert_str_eq(a.signature, "bWq2s1WEIj+Ydj0vQ697zp+IXMU=");
#undef QRY
	ck_assert(!sigv2_equal("bWq2s1WEIj+Ydj0vQ697zp+IXMU=", "bWq2s1WEIj+Ydj0vQ697zp+IXMV="));
	ck_assert(!sigv2_equal("bWq2s1WEIj+Ydj0vQ697zp+IXMU=", "bWq2s1WEIj+Ydj0vQ697zp+IXMU"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sigv2");
	TCase *tc = tcase_create("sigv2");
	tcase_add_test(tc, aws_object_get_vhost);
	tcase_add_test(tc, aws_object_put_path_style);
	tcase_add_test(tc, aws_list_and_acl);
	tcase_add_test(tc, aws_upload_with_amz_headers);
	tcase_add_test(tc, amz_date_forms);
	tcase_add_test(tc, aws_query_string_auth);
	tcase_add_test(tc, parse_refusals);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
