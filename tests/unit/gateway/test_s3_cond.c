/*
 * test_s3_cond.c — conditional request evaluation: HTTP date forms, ETag
 * lists, each header alone at its boundaries (dates compare at seconds),
 * S3's documented precedence pairs, PUT's If-None-Match: * / If-Match, and
 * If-Range's one strong validator (ETag or exact Last-Modified).
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "gateway/s3_cond.h"

/* 1994-11-06 08:49:37 UTC */
#define T0 784111777LL
#define ETAG "0123456789abcdef0123456789abcdef"

static struct s3_cond_in in_of(const char *im, const char *inm, const char *ims, const char *ius)
{
	struct s3_cond_in in = {
		.if_match = im, .if_match_len = im ? strlen(im) : 0,
		.if_none_match = inm, .if_none_match_len = inm ? strlen(inm) : 0,
		.if_modified_since = ims, .if_modified_since_len = ims ? strlen(ims) : 0,
		.if_unmodified_since = ius, .if_unmodified_since_len = ius ? strlen(ius) : 0,
	};
	return in;
}

static enum s3_cond_res get(const char *im, const char *inm, const char *ims, const char *ius,
			    uint64_t mtime_ms)
{
	struct s3_cond_in in = in_of(im, inm, ims, ius);
	return s3_cond_get(&in, ETAG, mtime_ms);
}

START_TEST(test_dates)
{
	int64_t t;
	const char *forms[] = { "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT",
				"Sun Nov  6 08:49:37 1994" };
	for (size_t i = 0; i < 3; i++) {
		t = 0;
		ck_assert_int_eq(s3_cond_parse_date(forms[i], strlen(forms[i]), &t), 0);
		ck_assert_int_eq(t, T0);
	}
	const char *f = "Thu, 01 Jan 1970 00:00:00 GMT";
	ck_assert_int_eq(s3_cond_parse_date(f, strlen(f), &t), 0);
	ck_assert_int_eq(t, 0);
	f = "Tue, 29 Feb 2028 23:59:59 GMT";
	ck_assert_int_eq(s3_cond_parse_date(f, strlen(f), &t), 0);
	ck_assert_int_eq(t, 1835481599LL);
	const char *bad[] = { "", "yesterday", "Sun, 06 Nov 1994 08:49:37 PST",
			      "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:49:37 GMT",
			      "Sun, 06 Nov 1994 08:49:37 GMT trailing", "2024-01-01T00:00:00Z" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_int_eq(s3_cond_parse_date(bad[i], strlen(bad[i]), &t), -EINVAL);
}
END_TEST

START_TEST(test_etags)
{
	ck_assert(s3_cond_etag_match("\"" ETAG "\"", 34, ETAG));
	ck_assert(s3_cond_etag_match(ETAG, 32, ETAG)); /* unquoted, as some clients */
	const char *list = "\"aaa\", W/\"" ETAG "\"";
	ck_assert(s3_cond_etag_match(list, strlen(list), ETAG));
	ck_assert(!s3_cond_etag_match("\"aaa\", \"bbb\"", 12, ETAG));
	ck_assert(s3_cond_etag_match("*", 1, ETAG));
	ck_assert(!s3_cond_etag_match("*", 1, NULL));
	ck_assert(!s3_cond_etag_match("\"" ETAG, 33, "x"));
	ck_assert(!s3_cond_etag_match("", 0, ETAG));
	/* A multipart ETag compares whole, suffix included. */
	ck_assert(s3_cond_etag_match("\"abc-3\"", 7, "abc-3"));
	ck_assert(!s3_cond_etag_match("\"abc\"", 5, "abc-3"));
}
END_TEST

START_TEST(test_get_single)
{
	uint64_t m = (uint64_t)T0 * 1000 + 999; /* sub-second part ignored */
	const char *at = "Sun, 06 Nov 1994 08:49:37 GMT", *before = "Sun, 06 Nov 1994 08:49:36 GMT";
	ck_assert_int_eq(get(NULL, NULL, NULL, NULL, m), S3_COND_PASS);
	ck_assert_int_eq(get("\"" ETAG "\"", NULL, NULL, NULL, m), S3_COND_PASS);
	ck_assert_int_eq(get("\"other\"", NULL, NULL, NULL, m), S3_COND_FAILED);
	ck_assert_int_eq(get(NULL, "\"" ETAG "\"", NULL, NULL, m), S3_COND_NOT_MODIFIED);
	ck_assert_int_eq(get(NULL, "*", NULL, NULL, m), S3_COND_NOT_MODIFIED);
	ck_assert_int_eq(get(NULL, "\"other\"", NULL, NULL, m), S3_COND_PASS);
	/* Modified since the date: strictly after it, at whole seconds. */
	ck_assert_int_eq(get(NULL, NULL, at, NULL, m), S3_COND_NOT_MODIFIED);
	ck_assert_int_eq(get(NULL, NULL, before, NULL, m), S3_COND_PASS);
	ck_assert_int_eq(get(NULL, NULL, NULL, at, m), S3_COND_PASS);
	ck_assert_int_eq(get(NULL, NULL, NULL, before, m), S3_COND_FAILED);
	/* Unparsable dates are ignored. */
	ck_assert_int_eq(get(NULL, NULL, "garbage", NULL, m), S3_COND_PASS);
	ck_assert_int_eq(get(NULL, NULL, NULL, "garbage", m), S3_COND_PASS);
}
END_TEST

START_TEST(test_get_precedence)
{
	uint64_t m = (uint64_t)T0 * 1000;
	const char *at = "Sun, 06 Nov 1994 08:49:37 GMT", *before = "Sun, 06 Nov 1994 08:49:36 GMT";
	/* S3: If-Match true + If-Unmodified-Since false -> 200. */
	ck_assert_int_eq(get("\"" ETAG "\"", NULL, NULL, before, m), S3_COND_PASS);
	ck_assert_int_eq(get("\"x\"", NULL, NULL, at, m), S3_COND_FAILED);
	/* S3: If-None-Match false + If-Modified-Since true -> 304. */
	ck_assert_int_eq(get(NULL, "\"" ETAG "\"", before, NULL, m), S3_COND_NOT_MODIFIED);
	/* If-None-Match true wins over If-Modified-Since false -> 200. */
	ck_assert_int_eq(get(NULL, "\"x\"", at, NULL, m), S3_COND_PASS);
	/* 412 before 304. */
	ck_assert_int_eq(get("\"x\"", "\"" ETAG "\"", NULL, NULL, m), S3_COND_FAILED);
	ck_assert_int_eq(get(NULL, NULL, at, before, m), S3_COND_FAILED);
	ck_assert_int_eq(get("\"" ETAG "\"", "\"" ETAG "\"", NULL, NULL, m), S3_COND_NOT_MODIFIED);
}
END_TEST

START_TEST(test_put)
{
	struct s3_cond_in in = in_of(NULL, "*", NULL, NULL);
	ck_assert_int_eq(s3_cond_put(&in, NULL), S3_COND_PASS);
	ck_assert_int_eq(s3_cond_put(&in, ETAG), S3_COND_FAILED);
	in = in_of(NULL, "\"" ETAG "\"", NULL, NULL);
	ck_assert_int_eq(s3_cond_put(&in, NULL), S3_COND_UNSUPPORTED);
	in = in_of("\"" ETAG "\"", NULL, NULL, NULL);
	ck_assert_int_eq(s3_cond_put(&in, ETAG), S3_COND_PASS);
	ck_assert_int_eq(s3_cond_put(&in, "ffff"), S3_COND_FAILED);
	ck_assert_int_eq(s3_cond_put(&in, NULL), S3_COND_NO_OBJECT);
	in = in_of(NULL, NULL, "Sun, 06 Nov 1994 08:49:37 GMT", NULL);
	ck_assert_int_eq(s3_cond_put(&in, ETAG), S3_COND_PASS); /* dates: GET only */
	ck_assert(s3_cond_any(&in));
	in = in_of(NULL, NULL, NULL, NULL);
	ck_assert(!s3_cond_any(&in));
	ck_assert_int_eq(s3_cond_put(&in, ETAG), S3_COND_PASS);
}
END_TEST

static bool if_range(const char *v, const char *etag, uint64_t mtime_ms)
{
	return s3_cond_if_range(v, strlen(v), etag, mtime_ms);
}

START_TEST(test_if_range)
{
	uint64_t ms = (uint64_t)T0 * 1000 + 999;   /* Last-Modified shows T0 */
	/* Strong ETag: exact, quoted (or bare, as If-Match accepts). */
	ck_assert(if_range("\"" ETAG "\"", ETAG, ms));
	ck_assert(if_range(" \"" ETAG "\" ", ETAG, ms));
	ck_assert(if_range(ETAG, ETAG, ms));
	ck_assert(!if_range("\"0123\"", ETAG, ms));
	ck_assert(!if_range("\"" ETAG, ETAG, ms));           /* unterminated */
	ck_assert(!if_range("\"" ETAG "\"x", ETAG, ms));
	ck_assert(!if_range("\"" ETAG "\"", NULL, ms));
	/* Weak tags never match, not even the same value. */
	ck_assert(!if_range("W/\"" ETAG "\"", ETAG, ms));
	/* One validator only: a list is not an If-Range value. */
	ck_assert(!if_range("\"aaa\", \"" ETAG "\"", ETAG, ms));
	/* A multipart ETag compares whole. */
	ck_assert(if_range("\"abc-3\"", "abc-3", ms));
	ck_assert(!if_range("\"abc\"", "abc-3", ms));
	/* Dates: equal at the second matches; earlier or later does not. */
	ck_assert(if_range("Sun, 06 Nov 1994 08:49:37 GMT", ETAG, ms));
	ck_assert(if_range("Sun, 06 Nov 1994 08:49:37 GMT", ETAG, (uint64_t)T0 * 1000));
	ck_assert(if_range("Sunday, 06-Nov-94 08:49:37 GMT", ETAG, ms));
	ck_assert(!if_range("Sun, 06 Nov 1994 08:49:36 GMT", ETAG, ms));
	ck_assert(!if_range("Sun, 06 Nov 1994 08:49:38 GMT", ETAG, ms));
	ck_assert(!if_range("Sun, 06 Nov 1994 08:49:37 GMT", ETAG, ((uint64_t)T0 + 1) * 1000));
	/* Garbage and empty: no match (the whole object is the safe answer). */
	ck_assert(!if_range("", ETAG, ms));
	ck_assert(!if_range("  ", ETAG, ms));
	ck_assert(!if_range("yesterday", ETAG, ms));
	ck_assert(!if_range("W/", ETAG, ms));
	ck_assert(!if_range("\"", ETAG, ms));
	ck_assert(!if_range("\"\"", ETAG, ms));
	ck_assert(!if_range("\"\"", "", ms));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("s3_cond");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_dates);
	tcase_add_test(tc, test_etags);
	tcase_add_test(tc, test_get_single);
	tcase_add_test(tc, test_get_precedence);
	tcase_add_test(tc, test_put);
	tcase_add_test(tc, test_if_range);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
