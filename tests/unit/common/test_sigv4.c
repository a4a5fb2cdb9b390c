/*
 * test_sigv4.c — SigV4 against the worked examples in AWS's S3 signing
 * documentation (header auth, query lists, presigned URLs, aws-chunked
 * chunk signatures), plus parser rejections and canonicalisation edges.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/sigv4.h"

#define AK "AKIAIOSFODNN7EXAMPLE"
#define SK "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

#define H(n, v) { n, sizeof(n) - 1, v, sizeof(v) - 1 }

static void auth_for(struct sigv4_auth *a, const char *signed_headers)
{
	memset(a, 0, sizeof(*a));
	strcpy(a->access_key, AK);
	strcpy(a->date, "20130524");
	strcpy(a->region, "us-east-1");
	strcpy(a->service, "s3");
	strcpy(a->amz_date, "20130524T000000Z");
	strcpy(a->signed_headers, signed_headers);
}

/* The headers of AWS's GET examples with an empty payload (what
 * "host;x-amz-content-sha256;x-amz-date" signs). */
static const struct sigv4_header get_headers[] = {
	H("Host", "examplebucket.s3.amazonaws.com"),
	H("x-amz-date", "20130524T000000Z"),
	H("x-amz-content-sha256", SIGV4_EMPTY_SHA256),
};

static void check_sig(const struct sigv4_request *req, const struct sigv4_auth *a, const char *want)
{
	uint8_t key[32];
	char sig[65];
	sigv4_signing_key(SK, a->date, a->region, a->service, key);
	ck_assert_int_eq(sigv4_sign(key, req, a, sig), 0);
	ck_assert_str_eq(sig, want);
}

START_TEST(test_get_object)
{
	struct sigv4_header hs[] = {
		H("Host", "examplebucket.s3.amazonaws.com"),
		H("Range", "bytes=0-9"),
		H("x-amz-content-sha256", SIGV4_EMPTY_SHA256),
		H("x-amz-date", "20130524T000000Z"),
		H("User-Agent", "not signed"),
	};
	struct sigv4_request req = { "GET", "/test.txt", 9, NULL, 0, hs, 5, SIGV4_EMPTY_SHA256 };
	struct sigv4_auth a;
	auth_for(&a, "host;range;x-amz-content-sha256;x-amz-date");
	size_t n;
	char *creq = sigv4_canonical_request(&req, &a, &n);
	ck_assert_str_eq(creq, "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\n"
			       "range:bytes=0-9\nx-amz-content-sha256:" SIGV4_EMPTY_SHA256 "\n"
			       "x-amz-date:20130524T000000Z\n\n"
			       "host;range;x-amz-content-sha256;x-amz-date\n" SIGV4_EMPTY_SHA256);
	free(creq);
	check_sig(&req, &a, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");

	/* The header as a client would send it parses back to the same claim. */
	strcpy(a.signature, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
	char hdr[1024];
	ck_assert_int_gt(sigv4_format_header(&a, hdr, sizeof(hdr)), 0);
	struct sigv4_auth b;
	ck_assert_int_eq(sigv4_parse_header(hdr, strlen(hdr), &b), 0);
	ck_assert_str_eq(b.access_key, AK);
	ck_assert_str_eq(b.date, "20130524");
	ck_assert_str_eq(b.region, "us-east-1");
	ck_assert_str_eq(b.service, "s3");
	ck_assert_str_eq(b.signed_headers, a.signed_headers);
	ck_assert(sigv4_equal(b.signature, a.signature));
}
END_TEST

START_TEST(test_put_object)
{
	struct sigv4_header hs[] = {
		H("Host", "examplebucket.s3.amazonaws.com"),
		H("Date", "Fri, 24 May 2013 00:00:00 GMT"),
		H("x-amz-date", "20130524T000000Z"),
		H("x-amz-storage-class", "REDUCED_REDUNDANCY"),
		H("x-amz-content-sha256", "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"),
	};
	struct sigv4_request req = { "PUT", "/test$file.text", 15, NULL, 0, hs, 5,
				     "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072" };
	struct sigv4_auth a;
	auth_for(&a, "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class");
	check_sig(&req, &a, "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
}
END_TEST

START_TEST(test_query_params)
{
	const struct sigv4_header *hs = get_headers;
	struct sigv4_auth a;
	auth_for(&a, "host;x-amz-content-sha256;x-amz-date");
	struct sigv4_request lc = { "GET", "/", 1, "lifecycle", 9, hs, 3, SIGV4_EMPTY_SHA256 };
	check_sig(&lc, &a, "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
	/* Parameters arrive unsorted; the canonical form sorts them. */
	struct sigv4_request ls = { "GET", "/", 1, "prefix=J&max-keys=2", 19, hs, 3, SIGV4_EMPTY_SHA256 };
	check_sig(&ls, &a, "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}
END_TEST

START_TEST(test_presigned)
{
	const char *q = "X-Amz-Algorithm=AWS4-HMAC-SHA256"
			"&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
			"&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
			"&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";
	struct sigv4_auth a;
	ck_assert_int_eq(sigv4_parse_query(q, strlen(q), &a), 0);
	ck_assert(a.presigned);
	ck_assert_uint_eq(a.expires_s, 86400);
	ck_assert_str_eq(a.access_key, AK);
	ck_assert_str_eq(a.amz_date, "20130524T000000Z");
	struct sigv4_header hs[] = { H("Host", "examplebucket.s3.amazonaws.com") };
	struct sigv4_request req = { "GET", "/test.txt", 9, q, strlen(q), hs, 1, SIGV4_UNSIGNED_PAYLOAD };
	check_sig(&req, &a, a.signature);

	ck_assert_int_eq(sigv4_parse_query("list-type=2", 11, &a), -ENOENT);
	const char *bad_exp = "X-Amz-Algorithm=AWS4-HMAC-SHA256"
			      "&X-Amz-Credential=AK%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
			      "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=604801&X-Amz-SignedHeaders=host"
			      "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";
	ck_assert_int_eq(sigv4_parse_query(bad_exp, strlen(bad_exp), &a), -EINVAL);
	/* X-Amz-Expires=0 is well formed (expired at once: s3_auth's call). */
	const char *zero = "X-Amz-Algorithm=AWS4-HMAC-SHA256"
			   "&X-Amz-Credential=AK%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
			   "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=0&X-Amz-SignedHeaders=host"
			   "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";
	ck_assert_int_eq(sigv4_parse_query(zero, strlen(zero), &a), 0);
	ck_assert_uint_eq(a.expires_s, 0);
}
END_TEST

START_TEST(test_chunked)
{
	struct sigv4_header hs[] = {
		H("Host", "s3.amazonaws.com"),
		H("x-amz-date", "20130524T000000Z"),
		H("x-amz-storage-class", "REDUCED_REDUNDANCY"),
		H("x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"),
		H("Content-Encoding", "aws-chunked"),
		H("x-amz-decoded-content-length", "66560"),
		H("Content-Length", "66824"),
	};
	struct sigv4_request req = { "PUT", "/examplebucket/chunkObject.txt", 30, NULL, 0, hs, 7,
				     "STREAMING-AWS4-HMAC-SHA256-PAYLOAD" };
	struct sigv4_auth a;
	auth_for(&a, "content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;"
		     "x-amz-decoded-content-length;x-amz-storage-class");
	const char *seed = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";
	check_sig(&req, &a, seed);

	uint8_t key[32], h[32];
	char s1[65], s2[65], s3[65];
	sigv4_signing_key(SK, a.date, a.region, a.service, key);
	char *data = malloc(65536);
	memset(data, 'a', 65536);
	hash_sha256(data, 65536, h);
	sigv4_chunk_signature(key, &a, seed, h, s1);
	ck_assert_str_eq(s1, "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648");
	hash_sha256(data, 1024, h);
	sigv4_chunk_signature(key, &a, s1, h, s2);
	ck_assert_str_eq(s2, "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497");
	hash_sha256("", 0, h);
	sigv4_chunk_signature(key, &a, s2, h, s3);
	ck_assert_str_eq(s3, "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9");
	free(data);
}
END_TEST

START_TEST(test_parse_rejects)
{
	struct sigv4_auth a;
	const char *sig = "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41";
	char buf[512];
	struct { const char *h; int rc; } cases[] = {
		{ "AWS AKIAIOSFODNN7EXAMPLE:frJIUN8DYpKDtOLCwo//yllqDzg=", -ENOTSUP },
		{ "", -EINVAL },
		{ "AWS4-HMAC-SHA256", -EINVAL },
		{ "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request, SignedHeaders=host", -EINVAL },
		{ "AWS4-HMAC-SHA256 Credential=AK/2013052/us-east-1/s3/aws4_request, SignedHeaders=host, %s", -EINVAL },
		{ "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws5_request, SignedHeaders=host, %s", -EINVAL },
		{ "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3, SignedHeaders=host, %s", -EINVAL },
		{ "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request, SignedHeaders=Host, %s", -EINVAL },
		{ "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=abc", -EINVAL },
		{ "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request, SignedHeaders=host, Bogus=1, %s", -EINVAL },
		{ "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request,SignedHeaders=host,%s", 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* Splice the valid signature where the case says %s. */
		const char *at = strstr(cases[i].h, "%s");
		if (at)
			snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - cases[i].h), cases[i].h, sig, at + 2);
		else
			snprintf(buf, sizeof(buf), "%s", cases[i].h);
		ck_assert_msg(sigv4_parse_header(buf, strlen(buf), &a) == cases[i].rc, "case %zu: %s", i, buf);
	}
}
END_TEST

START_TEST(test_canonical_edges)
{
	struct sigv4_header hs[] = {
		H("host", "h"),
		H("x-amz-meta-a", "  two   inner   spaces  "),
		H("X-Amz-Meta-A", "second"),
	};
	struct sigv4_auth a;
	auth_for(&a, "host;x-amz-meta-a");
	/* A path escaped differently by different clients canonicalises the
	 * same: '~' raw or escaped, '!' raw or escaped, space as %20. */
	const char *p1 = "/b/k%7E!%20x", *p2 = "/b/k~%21%20x";
	struct sigv4_request r1 = { "PUT", p1, strlen(p1), "b=2&a=1&a=0&c", 13, hs, 3, "UNSIGNED-PAYLOAD" };
	struct sigv4_request r2 = { "PUT", p2, strlen(p2), "a=0&a=1&b=2&c=", 14, hs, 3, "UNSIGNED-PAYLOAD" };
	size_t n1, n2;
	char *c1 = sigv4_canonical_request(&r1, &a, &n1), *c2 = sigv4_canonical_request(&r2, &a, &n2);
	ck_assert_str_eq(c1, c2);
	ck_assert_str_eq(c1, "PUT\n/b/k~%21%20x\na=0&a=1&b=2&c=\nhost:h\n"
			     "x-amz-meta-a:two inner spaces,second\n\nhost;x-amz-meta-a\nUNSIGNED-PAYLOAD");
	free(c1);
	free(c2);

	uint8_t key[32];
	char sig[65];
	sigv4_signing_key(SK, a.date, a.region, a.service, key);
	struct sigv4_request bad = { "GET", "/a%4", 4, NULL, 0, hs, 3, "UNSIGNED-PAYLOAD" };
	ck_assert_int_eq(sigv4_sign(key, &bad, &a, sig), -EINVAL);
	auth_for(&a, "host;x-amz-missing");
	ck_assert_int_eq(sigv4_sign(key, &r1, &a, sig), -ENOENT);
}
END_TEST

/* A request past signing's stack arrays (sigv4.c): 40 query parameters,
 * an 8 KiB query, a 308-byte path, so the canonical request (8.9 KiB),
 * the query's scratch and its table all move to the heap. The signature
 * is botocore's (S3SigV4Auth) for the same request; the canonical request
 * built on the heap from the start signs the same. */
START_TEST(test_long_request)
{
	char q[9000] = "", path[400] = "/bucket/";
	for (int i = 0; i < 40; i++) {
		char p[40];
		snprintf(p, sizeof(p), "%sp%02d=v%02d-", i ? "&" : "", 39 - i, i);
		strcat(q, p);
		for (int k = 0; k < 20; k++)
			strcat(q, "x%20y%2Fz~");
	}
	ck_assert_uint_eq(strlen(q), 8359);
	memset(path + 8, 'k', 300);
	const struct sigv4_header *hs = get_headers;
	struct sigv4_auth a;
	auth_for(&a, "host;x-amz-content-sha256;x-amz-date");
	struct sigv4_request req = { "GET", path, strlen(path), q, strlen(q), hs, 3,
				     SIGV4_EMPTY_SHA256 };
	check_sig(&req, &a, "76e3bd85ea48b7249247872de4c494396e6b1bf703b05368430907c777634a20");
	size_t n;
	char *c = sigv4_canonical_request(&req, &a, &n);
	ck_assert_ptr_nonnull(c);
	ck_assert_uint_eq(n, 8925);
	ck_assert_uint_eq(strlen(c), n);
	ck_assert(strncmp(c, "GET\n/bucket/kkk", 15) == 0);
	ck_assert(strstr(c, "\np00=v39-x%20y%2Fz~x%20y") != NULL);   /* sorted first */
	free(c);
}
END_TEST

START_TEST(test_dates_and_equal)
{
	time_t t;
	ck_assert_int_eq(sigv4_parse_amz_date("20130524T000000Z", &t), 0);
	ck_assert_int_eq((long)t, 1369353600L);
	char s[17];
	sigv4_format_amz_date(t, s);
	ck_assert_str_eq(s, "20130524T000000Z");
	ck_assert_int_eq(sigv4_parse_amz_date("20131324T000000Z", &t), -EINVAL);
	ck_assert_int_eq(sigv4_parse_amz_date("20130524 000000Z", &t), -EINVAL);
	ck_assert_int_eq(sigv4_parse_amz_date("20130524T000000", &t), -EINVAL);
	const char *x = "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41";
	const char *y = "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb40";
	ck_assert(sigv4_equal(x, x));
	ck_assert(!sigv4_equal(x, y));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sigv4");
	TCase *tc = tcase_create("sigv4");
	tcase_add_test(tc, test_get_object);
	tcase_add_test(tc, test_put_object);
	tcase_add_test(tc, test_query_params);
	tcase_add_test(tc, test_presigned);
	tcase_add_test(tc, test_chunked);
	tcase_add_test(tc, test_parse_rejects);
	tcase_add_test(tc, test_canonical_edges);
	tcase_add_test(tc, test_long_request);
	tcase_add_test(tc, test_dates_and_equal);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
