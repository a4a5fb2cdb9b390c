/*
 * test_s3_util.c — gateway/s3_util.c's helpers that replaced libc calls
 * on the request path (issue 19): s3u_http_date against gmtime_r and
 * strftime, s3u_copy_str against snprintf("%s").
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "gateway/s3_util.h"

static void libc_date(uint64_t ms, char out[40])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 40, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

static void check_date(uint64_t ms)
{
	char a[40], b[40];
	s3u_http_date(ms, a);
	libc_date(ms, b);
	ck_assert_msg(strcmp(a, b) == 0, "ms=%llu: %s, libc %s", (unsigned long long)ms, a, b);
}

START_TEST(test_http_date)
{
	char a[40];
	s3u_http_date(0, a);
	ck_assert_str_eq(a, "Thu, 01 Jan 1970 00:00:00 GMT");
	s3u_http_date(1369353600000ull, a);   /* AWS's signing examples' day */
	ck_assert_str_eq(a, "Fri, 24 May 2013 00:00:00 GMT");
	/* Days around leap days and century years, and seconds of a day. */
	const uint64_t days[] = { 0, 58, 59, 60, 365, 789, 10957, 11016, 11017, 11323,
				  47541, 47540, 47482, 47483, 2932896, 2932895 };
	for (size_t i = 0; i < sizeof(days) / sizeof(days[0]); i++)
		for (uint64_t s = 0; s < 86400; s += 3599)
			check_date((days[i] * 86400 + s) * 1000 + 999);
	/* Every day from 1970 to 2400, at a second that moves. */
	for (uint64_t d = 0; d < 157000; d++)
		check_date((d * 86400 + (d * 7919) % 86400) * 1000);
	/* Past 9999: as libc prints it. */
	check_date(253402300800000ull + 86400000ull * 400);
}
END_TEST

START_TEST(test_copy_str)
{
	char d[8];
	s3u_copy_str(d, sizeof(d), "abc");
	ck_assert_str_eq(d, "abc");
	s3u_copy_str(d, sizeof(d), "abcdefghij");
	ck_assert_str_eq(d, "abcdefg");   /* cut to 7 and ended, as snprintf */
	s3u_copy_str(d, sizeof(d), "");
	ck_assert_str_eq(d, "");
	s3u_copy_str(d, 1, "xyz");
	ck_assert_str_eq(d, "");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("s3_util");
	TCase *tc = tcase_create("s3_util");
	tcase_add_test(tc, test_http_date);
	tcase_add_test(tc, test_copy_str);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
