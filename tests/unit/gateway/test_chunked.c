/*
 * test_chunked.c — aws-chunked decoding against AWS's documented
 * streaming example (66,560 bytes in 64 KiB + 1 KiB chunks, seed and
 * chunk signatures from the SigV4 docs), fed in random pieces; tampered
 * data, signatures and framing are refused; the unsigned and signed
 * trailer variants with trailing checksums.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/chunked.h"

#define SK "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define SEED "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
#define SIG1 "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"
#define SIG2 "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"
#define SIG3 "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"

static struct sigv4_auth auth;
static uint8_t key[32];

static void setup(void)
{
	memset(&auth, 0, sizeof(auth));
	strcpy(auth.access_key, "AKIAIOSFODNN7EXAMPLE");
	strcpy(auth.date, "20130524");
	strcpy(auth.region, "us-east-1");
	strcpy(auth.service, "s3");
	strcpy(auth.amz_date, "20130524T000000Z");
	strcpy(auth.signature, SEED);
	sigv4_signing_key(SK, auth.date, auth.region, auth.service, key);
}

struct sink {
	uint64_t n;
	uint64_t not_a;
	char text[256];
};

static void on_data(void *ud, const char *p, size_t n)
{
	struct sink *s = ud;
	for (size_t i = 0; i < n; i++) {
		s->not_a += p[i] != 'a';
		if (s->n + i < sizeof(s->text) - 1)
			s->text[s->n + i] = p[i];
	}
	s->n += n;
}

/* The documented body: 66,824 bytes. */
static char *aws_body(size_t *len)
{
	char *b = malloc(70000), *p = b;
	p += sprintf(p, "10000;chunk-signature=" SIG1 "\r\n");
	memset(p, 'a', 65536);
	p += 65536;
	p += sprintf(p, "\r\n400;chunk-signature=" SIG2 "\r\n");
	memset(p, 'a', 1024);
	p += 1024;
	p += sprintf(p, "\r\n0;chunk-signature=" SIG3 "\r\n\r\n");
	*len = (size_t)(p - b);
	return b;
}

/* Feed in random pieces; returns the first error or total consumed. */
static long feed_all(struct chunked_dec *d, const char *b, size_t len, struct sink *s, unsigned seed)
{
	srand(seed);
	size_t off = 0;
	while (off < len) {
		size_t n = 1 + (size_t)rand() % 9000;
		if (n > len - off)
			n = len - off;
		ssize_t rc = chunked_feed(d, b + off, n, on_data, s);
		if (rc < 0)
			return rc;
		off += (size_t)rc;
		if ((size_t)rc < n)
			break; /* done: the rest is not ours */
	}
	return (long)off;
}

START_TEST(test_aws_example)
{
	size_t len;
	char *b = aws_body(&len);
	ck_assert_uint_eq(len, 66824);
	for (unsigned seed = 1; seed <= 20; seed++) {
		struct chunked_dec d;
		struct sink s = { 0 };
		ck_assert_int_eq(chunked_init(&d, key, &auth, SEED, false), 0);
		ck_assert_int_eq(feed_all(&d, b, len, &s, seed), (long)len);
		ck_assert(chunked_done(&d));
		ck_assert_uint_eq(s.n, 66560);
		ck_assert_uint_eq(d.decoded, 66560);
		ck_assert_uint_eq(s.not_a, 0);
		chunked_free(&d);
	}
	/* Byte by byte, with trailing bytes that belong to someone else. */
	char *b2 = malloc(len + 5);
	memcpy(b2, b, len);
	memcpy(b2 + len, "GET /", 5);
	struct chunked_dec d;
	struct sink s = { 0 };
	chunked_init(&d, key, &auth, SEED, false);
	size_t consumed = 0;
	for (size_t i = 0; i < len + 5; i++) {
		ssize_t rc = chunked_feed(&d, b2 + i, 1, on_data, &s);
		ck_assert_int_ge(rc, 0);
		consumed += (size_t)rc;
	}
	ck_assert_uint_eq(consumed, len);
	ck_assert(chunked_done(&d));
	chunked_free(&d);
	free(b2);
	free(b);
}
END_TEST

START_TEST(test_tampering)
{
	size_t len;
	char *b = aws_body(&len);
	struct {
		size_t at;
		char c;
		int want;
	} cases[] = {
		{ 88 + 100, 'b', CHUNKED_ESIGNATURE },           /* a data byte of chunk 1 */
		{ 88 + 65538 + 86 + 5, 'b', CHUNKED_ESIGNATURE }, /* a data byte of chunk 2 */
		{ 30, '0', CHUNKED_ESIGNATURE },                  /* chunk 1's signature */
		{ len - 10, '0', CHUNKED_ESIGNATURE },            /* the final signature */
		{ 0, 'x', CHUNKED_EFRAMING },                     /* size not hex */
		{ 88 + 65536, 'x', CHUNKED_EFRAMING },            /* CRLF after data */
		{ 5, ':', CHUNKED_EFRAMING },                     /* ';' */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *t = malloc(len);
		memcpy(t, b, len);
		if (t[cases[i].at] == cases[i].c)
			cases[i].c ^= 1;
		t[cases[i].at] = cases[i].c;
		struct chunked_dec d;
		struct sink s = { 0 };
		chunked_init(&d, key, &auth, SEED, false);
		ck_assert_msg(feed_all(&d, t, len, &s, 7) == cases[i].want, "case %zu", i);
		ck_assert(!chunked_done(&d));
		/* Sticky. */
		ck_assert_int_eq(chunked_feed(&d, "0\r\n", 3, on_data, &s), cases[i].want);
		chunked_free(&d);
		free(t);
	}
	/* A wrong seed (another request's signature) fails the first chunk. */
	struct chunked_dec d;
	struct sink s = { 0 };
	chunked_init(&d, key, &auth, SIG3, false);
	ck_assert_int_eq(feed_all(&d, b, len, &s, 1), CHUNKED_ESIGNATURE);
	chunked_free(&d);
	/* Truncated: never done. */
	chunked_init(&d, key, &auth, SEED, false);
	ck_assert_int_eq(feed_all(&d, b, len - 2, &s, 1), (long)len - 2);
	ck_assert(!chunked_done(&d));
	chunked_free(&d);
	/* A chunk without a signature in signed mode. */
	chunked_init(&d, key, &auth, SEED, false);
	ck_assert_int_eq(chunked_feed(&d, "5\r\nhello\r\n", 10, on_data, &s), CHUNKED_EFRAMING);
	chunked_free(&d);
	/* Oversized chunk and line. */
	chunked_init(&d, NULL, NULL, NULL, false);
	ck_assert_int_eq(chunked_feed(&d, "FFFFFFFF\r\n", 10, on_data, &s), CHUNKED_ETOOBIG);
	chunked_free(&d);
	chunked_init(&d, NULL, NULL, NULL, false);
	char line[400];
	memset(line, '1', sizeof(line));
	ck_assert_int_eq(chunked_feed(&d, line, sizeof(line), on_data, &s), CHUNKED_ETOOBIG);
	chunked_free(&d);
	free(b);
}
END_TEST

START_TEST(test_unsigned_trailer)
{
	const char *body = "5\r\nhello\r\n6\r\n world\r\n0\r\n"
			   "x-amz-checksum-crc32:  DUoRhQ==\r\nx-amz-checksum-sha256:abc\r\n\r\n";
	struct chunked_dec d;
	struct sink s = { 0 };
	ck_assert_int_eq(chunked_init(&d, NULL, NULL, NULL, true), 0);
	ck_assert_int_eq(feed_all(&d, body, strlen(body), &s, 3), (long)strlen(body));
	ck_assert(chunked_done(&d));
	ck_assert_str_eq(s.text, "hello world");
	const struct chunked_trailer *t = chunked_trailer(&d, "X-Amz-Checksum-CRC32");
	ck_assert_ptr_nonnull(t);
	ck_assert_str_eq(t->value, "DUoRhQ==");
	ck_assert_ptr_nonnull(chunked_trailer(&d, "x-amz-checksum-sha256"));
	ck_assert_ptr_null(chunked_trailer(&d, "x-amz-checksum-crc32c"));
	chunked_free(&d);

	/* Trailers where none were announced. */
	chunked_init(&d, NULL, NULL, NULL, false);
	ck_assert_int_eq(feed_all(&d, body, strlen(body), &s, 3), CHUNKED_EFRAMING);
	chunked_free(&d);
}
END_TEST

/* Signed chunks + signed trailer, built here with common/sigv4. */
static size_t build_signed_trailer(char *out, const char *crc)
{
	uint8_t h[32];
	char s1[65], s2[65], st[65];
	hash_sha256("hello", 5, h);
	sigv4_chunk_signature(key, &auth, SEED, h, s1);
	hash_sha256("", 0, h);
	sigv4_chunk_signature(key, &auth, s1, h, s2);
	char tr[128];
	int tn = snprintf(tr, sizeof(tr), "x-amz-checksum-crc32c:%s\n", "sOO8/Q==");
	hash_sha256(tr, (size_t)tn, h);
	sigv4_trailer_signature(key, &auth, s2, h, st);
	return (size_t)sprintf(out,
			       "5;chunk-signature=%s\r\nhello\r\n0;chunk-signature=%s\r\n"
			       "x-amz-checksum-crc32c:%s\r\nx-amz-trailer-signature:%s\r\n\r\n",
			       s1, s2, crc, st);
}

START_TEST(test_signed_trailer)
{
	char body[1024];
	size_t n = build_signed_trailer(body, "sOO8/Q==");
	struct chunked_dec d;
	struct sink s = { 0 };
	chunked_init(&d, key, &auth, SEED, true);
	ck_assert_int_eq(feed_all(&d, body, n, &s, 1), (long)n);
	ck_assert(chunked_done(&d));
	ck_assert_str_eq(chunked_trailer(&d, "x-amz-checksum-crc32c")->value, "sOO8/Q==");
	chunked_free(&d);

	/* A different checksum value than the one signed. */
	n = build_signed_trailer(body, "AAAAAA==");
	chunked_init(&d, key, &auth, SEED, true);
	ck_assert_int_eq(feed_all(&d, body, n, &s, 1), CHUNKED_ESIGNATURE);
	chunked_free(&d);

	/* The trailer signature missing. */
	uint8_t h[32];
	char s1[65];
	hash_sha256("", 0, h);
	sigv4_chunk_signature(key, &auth, SEED, h, s1);
	n = (size_t)sprintf(body, "0;chunk-signature=%s\r\nx-amz-checksum-crc32c:x\r\n\r\n", s1);
	chunked_init(&d, key, &auth, SEED, true);
	ck_assert_int_eq(feed_all(&d, body, n, &s, 1), CHUNKED_EFRAMING);
	chunked_free(&d);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("chunked");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_aws_example);
	tcase_add_test(tc, test_tampering);
	tcase_add_test(tc, test_unsigned_trailer);
	tcase_add_test(tc, test_signed_trailer);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
