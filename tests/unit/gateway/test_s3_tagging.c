/*
 * test_s3_tagging.c — the x-amz-tagging header's URL query form (escapes,
 * '+', empty values, malformed pairs, too many) and S3's tag-set checks
 * (count per object and bucket, key and value lengths counted in
 * characters, duplicates, "aws:" keys, bad UTF-8).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gateway/s3_tagging.h"

static char arena[S3_TAGS_HEADER_ARENA(4096)];

static int hdr(const char *s, struct s3_tagset *ts)
{
	return s3_tags_parse_header(s, strlen(s), ts, arena, sizeof(arena));
}

START_TEST(test_header)
{
	struct s3_tagset ts;
	ck_assert_int_eq(hdr("project=blue%20sky&team=a+b&empty=&bare", &ts), 0);
	ck_assert_uint_eq(ts.n, 4);
	ck_assert_str_eq(ts.keys[0], "project");
	ck_assert_str_eq(ts.values[0], "blue sky");
	ck_assert_str_eq(ts.values[1], "a b");
	ck_assert_str_eq(ts.keys[2], "empty");
	ck_assert_str_eq(ts.values[2], "");
	ck_assert_str_eq(ts.keys[3], "bare");
	ck_assert_str_eq(ts.values[3], "");
	ck_assert_int_eq(hdr("k%3D1=v%26", &ts), 0);
	ck_assert_str_eq(ts.keys[0], "k=1");
	ck_assert_str_eq(ts.values[0], "v&");
	ck_assert_int_eq(hdr("", &ts), 0);
	ck_assert_uint_eq(ts.n, 0);
	ck_assert_int_eq(hdr("a=1&&b=2", &ts), -EINVAL);
	ck_assert_int_eq(hdr("a=1&", &ts), -EINVAL);
	ck_assert_int_eq(hdr("a=%zz", &ts), -EINVAL);
	char many[1024];
	size_t n = 0;
	for (int i = 0; i < S3_TAGS_BUCKET_MAX + 1; i++)
		n += (size_t)snprintf(many + n, sizeof(many) - n, "%sk%d=v", i ? "&" : "", i);
	ck_assert_int_eq(hdr(many, &ts), -E2BIG);
	char small[8];
	ck_assert_int_eq(s3_tags_parse_header("a=1", 3, &ts, small, sizeof(small)), -ENOBUFS);
}
END_TEST

static struct s3_tagset one(const char *k, const char *v)
{
	struct s3_tagset ts = { .n = 1 };
	ts.keys[0] = k;
	ts.values[0] = v;
	return ts;
}

START_TEST(test_check)
{
	const char *msg;
	char k128[129], k129[130], v256[257], v257[258], u128[128 * 3 + 1];
	memset(k128, 'k', 128), k128[128] = 0;
	memset(k129, 'k', 129), k129[129] = 0;
	memset(v256, 'v', 256), v256[256] = 0;
	memset(v257, 'v', 257), v257[257] = 0;
	for (int i = 0; i < 128; i++)
		memcpy(u128 + 3 * i, "\xe2\x82\xac", 3); /* 128 euro signs: 384 bytes */
	u128[384] = 0;
	struct s3_tagset ts = one(k128, v256);
	ck_assert_int_eq(s3_tags_check(&ts, S3_TAGS_OBJECT_MAX, &msg), S3E_OK);
	ts = one(u128, "");
	ck_assert_int_eq(s3_tags_check(&ts, S3_TAGS_OBJECT_MAX, &msg), S3E_OK);
	ts = one(k129, "v");
	ck_assert_int_eq(s3_tags_check(&ts, S3_TAGS_OBJECT_MAX, &msg), S3E_InvalidTag);
	ck_assert_ptr_nonnull(strstr(msg, "128"));
	ts = one("k", v257);
	ck_assert_int_eq(s3_tags_check(&ts, S3_TAGS_OBJECT_MAX, &msg), S3E_InvalidTag);
	ts = one("", "v");
	ck_assert_int_eq(s3_tags_check(&ts, S3_TAGS_OBJECT_MAX, &msg), S3E_InvalidTag);
	ts = one("aws:cloudformation", "v");
	ck_assert_int_eq(s3_tags_check(&ts, S3_TAGS_OBJECT_MAX, &msg), S3E_InvalidTag);
	ts = one("k\xff", "v");
	ck_assert_int_eq(s3_tags_check(&ts, S3_TAGS_OBJECT_MAX, &msg), S3E_InvalidTag);
	ts = one("k", "\xed\xa0\x80"); /* a surrogate */
	ck_assert_int_eq(s3_tags_check(&ts, S3_TAGS_OBJECT_MAX, &msg), S3E_InvalidTag);
	/* Counts: 10 per object, 50 per bucket; keys unique. */
	char names[S3_TAGS_BUCKET_MAX][16];
	for (int i = 0; i < S3_TAGS_BUCKET_MAX; i++) {
		snprintf(names[i], sizeof(names[i]), "k%d", i);
		ts.keys[i] = names[i];
		ts.values[i] = "";
	}
	ts.n = S3_TAGS_OBJECT_MAX;
	ck_assert_int_eq(s3_tags_check(&ts, S3_TAGS_OBJECT_MAX, &msg), S3E_OK);
	ts.n = S3_TAGS_OBJECT_MAX + 1;
	ck_assert_int_eq(s3_tags_check(&ts, S3_TAGS_OBJECT_MAX, &msg), S3E_InvalidTag);
	ck_assert_int_eq(s3_tags_check(&ts, S3_TAGS_BUCKET_MAX, &msg), S3E_OK);
	ts.n = S3_TAGS_BUCKET_MAX;
	ck_assert_int_eq(s3_tags_check(&ts, S3_TAGS_BUCKET_MAX, &msg), S3E_OK);
	ts.keys[7] = ts.keys[3];
	ck_assert_int_eq(s3_tags_check(&ts, S3_TAGS_BUCKET_MAX, &msg), S3E_InvalidTag);
	ck_assert_ptr_nonnull(strstr(msg, "same key"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("s3_tagging");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_header);
	tcase_add_test(tc, test_check);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
