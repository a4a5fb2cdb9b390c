/*
 * test_gw_stats.c — the per-operation request statistics behind GET
 * /api/v1/stats (gateway/gw_stats.h): the quantile of bucket counts, the
 * counts by status class and operation, the same figures in /metrics,
 * the JSON the admin API answers, a second writer that finds the series
 * registered and counts nothing, and the reader of series another module
 * registered (metrics_*_find).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/metrics.h"
#include "gateway/gw_stats.h"
#include "gateway/s3_req.h"

START_TEST(quantile)
{
	const uint64_t b[] = { 100, 200, 400 };
	uint64_t none[4] = { 0 };
	ck_assert_uint_eq(gw_stats_quantile(b, 3, none, 0.5), 0);
	/* 10 in (0,100], 10 in (100,200]: the median is the first bucket's
	 * top, p75 halfway through the second. */
	uint64_t c[4] = { 10, 10, 0, 0 };
	ck_assert_uint_eq(gw_stats_quantile(b, 3, c, 0.5), 100);
	ck_assert_uint_eq(gw_stats_quantile(b, 3, c, 0.75), 150);
	ck_assert_uint_eq(gw_stats_quantile(b, 3, c, 0.25), 50);
	/* everything above the last bound: the last bound */
	uint64_t hi[4] = { 0, 0, 0, 7 };
	ck_assert_uint_eq(gw_stats_quantile(b, 3, hi, 0.99), 400);
	/* an empty bucket in between is skipped */
	uint64_t gap[4] = { 1, 0, 1, 0 };
	ck_assert_uint_eq(gw_stats_quantile(b, 3, gap, 0.99), 396);
}
END_TEST

static char *json_of(struct gw_stats *st)
{
	struct jsonw w;
	jsonw_init(&w, 0);
	jsonw_obj_begin(&w);
	gw_stats_json(st, &w);
	jsonw_obj_end(&w);
	char *doc;
	size_t len;
	ck_assert_int_eq(jsonw_finish(&w, &doc, &len), 0);
	return doc;
}

START_TEST(observe_json_metrics)
{
	struct metrics_registry *reg = metrics_registry_new();
	ck_assert_ptr_nonnull(reg);
	struct gw_stats *st = gw_stats_new(reg);
	ck_assert_ptr_nonnull(st);
	for (int i = 0; i < 90; i++)
		gw_stats_observe(st, S3_OP_GetObject, 200, 80);       /* (50, 100] */
	for (int i = 0; i < 10; i++)
		gw_stats_observe(st, S3_OP_GetObject, 404, 20000);    /* (10 ms, 25 ms] */
	gw_stats_observe(st, S3_OP_PutObject, 503, 3000);
	gw_stats_observe(st, S3_OP_PutObject, 0, 7000);
	gw_stats_observe(st, 100000, 400, 10);                   /* out of range: unrouted */

	char *doc = json_of(st);
	/* Operations never seen are left out; the figures are exact. */
	ck_assert_ptr_null(strstr(doc, "\"ListBuckets\""));
	ck_assert_ptr_nonnull(strstr(doc, "\"GetObject\":{\"requests\":100,\"ok\":90,\"4xx\":10,"
				     "\"5xx\":0,\"latency_count\":100,"
				     "\"latency_sum_us\":207200,\"p50_us\":"));
	ck_assert_ptr_nonnull(strstr(doc, "\"PutObject\":{\"requests\":2,\"ok\":1,\"4xx\":0,"
				     "\"5xx\":1,"));
	ck_assert_ptr_nonnull(strstr(doc, "\"unrouted\":{\"requests\":1,\"ok\":0,\"4xx\":1,"));
	ck_assert_ptr_nonnull(strstr(doc, "\"latency_bounds_us\":[50,100,250,"));
	/* p99 of GetObject lies in the (10 ms, 25 ms] bucket */
	const char *p = strstr(doc, "\"GetObject\"");
	p = strstr(p, "\"p99_us\":");
	ck_assert_ptr_nonnull(p);
	unsigned long p99 = strtoul(p + 9, NULL, 10);
	ck_assert_uint_gt(p99, 10000);
	ck_assert_uint_le(p99, 25000);
	free(doc);

	char *text;
	size_t len;
	ck_assert_int_eq(metrics_render(reg, &text, &len), 0);
	ck_assert_ptr_nonnull(strstr(text, "iolake_gw_request_errors_total{op=\"GetObject\",class=\"4xx\"} 10\n"));
	ck_assert_ptr_nonnull(strstr(text, "iolake_gw_request_duration_seconds_count{op=\"GetObject\"} 100\n"));
	ck_assert_ptr_nonnull(strstr(text, "iolake_gw_request_duration_seconds_bucket{op=\"GetObject\",le=\"0.0001\"} 90\n"));
	free(text);

	/* A second writer on the same registry finds the series registered
	 * and writes nothing: a request is counted once, by their owner. */
	struct gw_stats *st2 = gw_stats_new(reg);
	ck_assert_ptr_nonnull(st2);
	gw_stats_observe(st2, S3_OP_GetObject, 500, 80);
	doc = json_of(st2);   /* its reader sees the first's figures */
	ck_assert_ptr_nonnull(strstr(doc, "\"GetObject\":{\"requests\":100,\"ok\":90,\"4xx\":10,"
				     "\"5xx\":0,"));
	free(doc);
	gw_stats_free(st2);
	gw_stats_free(st);
	metrics_registry_free(reg);
}
END_TEST

/* The reader needs no writer: series another module registered under the
 * same names are what the JSON reports. */
START_TEST(reads_series_of_others)
{
	struct metrics_registry *reg = metrics_registry_new();
	size_t nb;
	const uint64_t *b = metrics_latency_buckets_us(&nb);
	struct metrics_histogram *h = metrics_histogram_new(
		reg, "iolake_gw_request_duration_seconds", "x",
		METRICS_LABELS("op", "HeadObject"), b, nb, 1e-6);
	struct metrics_counter *e = metrics_counter_new(reg, "iolake_gw_request_errors_total", "y",
							METRICS_LABELS("op", "HeadObject", "class", "4xx"));
	ck_assert_ptr_nonnull(h);
	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_eq(metrics_histogram_find(reg, "iolake_gw_request_duration_seconds",
						METRICS_LABELS("op", "HeadObject")), h);
	ck_assert_ptr_null(metrics_histogram_find(reg, "iolake_gw_request_duration_seconds",
						  METRICS_LABELS("op", "GetObject")));
	ck_assert_ptr_null(metrics_counter_find(reg, "iolake_gw_request_duration_seconds",
						METRICS_LABELS("op", "HeadObject")));
	/* unrouted registered too: the module that registered them owns them */
	ck_assert_ptr_nonnull(metrics_histogram_new(reg, "iolake_gw_request_duration_seconds", "x",
						    METRICS_LABELS("op", "unrouted"), b, nb, 1e-6));
	struct gw_stats *st = gw_stats_new(reg);
	ck_assert_ptr_nonnull(st);
	gw_stats_observe(st, S3_OP_HeadObject, 200, 300);   /* theirs to count: ignored */
	metrics_histogram_observe(h, 300);
	metrics_histogram_observe(h, 300);
	metrics_counter_inc(e);
	char *doc = json_of(st);
	ck_assert_ptr_nonnull(strstr(doc, "\"HeadObject\":{\"requests\":2,\"ok\":1,\"4xx\":1,\"5xx\":0,"));
	free(doc);
	gw_stats_free(st);
	metrics_registry_free(reg);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gw_stats");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, quantile);
	tcase_add_test(tc, observe_json_metrics);
	tcase_add_test(tc, reads_series_of_others);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
