/*
 * test_gw_lat.c — the moving latency histogram behind hedged reads
 * (gateway/gw_lat.h): bucket bounds, the quantile of known samples, the
 * initial value, and aging (the quantile follows a shift in latency).
 */
#include <check.h>
#include <stdlib.h>

#include "gateway/gw_lat.h"

START_TEST(buckets)
{
	/* Every value lies under its bucket's bound and at or over the one
	 * below; bounds grow; four buckets per octave (25% resolution). */
	for (uint64_t us = 0; us < 5000000; us += 1 + us / 50) {
		unsigned i = gw_lat_bucket(us);
		ck_assert_uint_lt(i, GW_LAT_BUCKETS);
		if (i == GW_LAT_BUCKETS - 1)
			break;
		ck_assert_uint_lt(us, gw_lat_bucket_max(i));
		if (i > 0)
			ck_assert_uint_ge(us, gw_lat_bucket_max(i - 1));
		ck_assert(gw_lat_bucket_max(i) <= us + us / 4 + 16);
	}
	ck_assert_uint_eq(gw_lat_bucket(UINT64_MAX), GW_LAT_BUCKETS - 1);
}
END_TEST

START_TEST(quantile)
{
	struct gw_lat l;
	gw_lat_init(&l, 950, 12345);
	for (int i = 0; i < GW_LAT_EVERY - 1; i++)
		gw_lat_add(&l, 1000);
	ck_assert_uint_eq(gw_lat_get(&l), 12345); /* not enough samples yet */
	/* 1..1000 ms uniformly: p95 ~ 950 ms, within a bucket (25%). */
	gw_lat_init(&l, 950, 0);
	for (int r = 0; r < 2; r++)
		for (uint64_t v = 1; v <= 1000; v++)
			gw_lat_add(&l, v * 1000);
	uint32_t q = gw_lat_get(&l);
	ck_assert_uint_ge(q, 950000);
	ck_assert_uint_le(q, 950000 + 950000 / 4);
	/* 5% slow outliers do not move p95 off the fast mode much; 10% do. */
	gw_lat_init(&l, 950, 0);
	for (int i = 0; i < 1000; i++)
		gw_lat_add(&l, i % 100 < 4 ? 500000 : 2000);
	ck_assert_uint_le(gw_lat_get(&l), 2500);
	gw_lat_init(&l, 950, 0);
	for (int i = 0; i < 1000; i++)
		gw_lat_add(&l, i % 100 < 10 ? 500000 : 2000);
	ck_assert_uint_ge(gw_lat_get(&l), 500000);
}
END_TEST

START_TEST(ages)
{
	struct gw_lat l;
	gw_lat_init(&l, 950, 0);
	for (int i = 0; i < 10000; i++)
		gw_lat_add(&l, 100000); /* 100 ms for a long time */
	ck_assert_uint_ge(gw_lat_get(&l), 100000);
	/* Then 2 ms: within a few windows the quantile follows. */
	for (int i = 0; i < 6 * GW_LAT_WINDOW; i++)
		gw_lat_add(&l, 2000);
	ck_assert_uint_le(gw_lat_get(&l), 2500);
	ck_assert_uint_lt(l.n, GW_LAT_WINDOW);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gw_lat");
	TCase *tc = tcase_create("lat");
	tcase_add_test(tc, buckets);
	tcase_add_test(tc, quantile);
	tcase_add_test(tc, ages);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
