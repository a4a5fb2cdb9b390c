/*
 * test_metrics.c — metrics.c: the exact exposition text of a small
 * registry, label and HELP escaping, registration errors, and exact totals
 * after 4 threads x 1,000,000 lock-free updates while another thread
 * renders (each render checked for cumulative buckets and _count == +Inf).
 */
#include "common/metrics.h"

#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *render(struct metrics_registry *reg)
{
	char *out = NULL;
	size_t len = 0;
	ck_assert_int_eq(metrics_render(reg, &out, &len), 0);
	ck_assert_ptr_nonnull(out);
	ck_assert_uint_eq(len, strlen(out));
	return out;
}

static int fn_calls;
static double free_bytes(void *arg)
{
	fn_calls++;
	return *(double *)arg;
}

START_TEST(test_render_exact)
{
	struct metrics_registry *reg = metrics_registry_new();
	struct metrics_counter *put = metrics_counter_new(reg, "iolake_rpc_requests_total",
		"RPC requests handled.", METRICS_LABELS("osd", "3", "method", "PutShard"));
	struct metrics_gauge *inflight = metrics_gauge_new(reg, "iolake_inflight",
							   "In-flight requests.", NULL);
	struct metrics_counter *get = metrics_counter_new(reg, "iolake_rpc_requests_total",
		"other help, ignored", METRICS_LABELS("osd", "3", "method", "GetShard"));
	static const uint64_t bounds[] = { 100, 1000, 10000 };
	struct metrics_histogram *lat = metrics_histogram_new(reg, "iolake_put_latency_seconds",
		"PUT latency.", METRICS_LABELS("osd", "3"), bounds, 3, 1e-6);
	static const uint64_t size_bounds[] = { 4096, 65536 };
	struct metrics_histogram *sizes = metrics_histogram_new(reg, "iolake_object_size_bytes",
		NULL, NULL, size_bounds, 2, 1.0);
	double fb = 123456789012.0;
	ck_assert_ptr_nonnull(metrics_gauge_fn_new(reg, "iolake_free_bytes",
		"Free space\non \"data\" \\ dev.", NULL, free_bytes, &fb));
	ck_assert_ptr_nonnull(put);
	ck_assert_ptr_nonnull(get);
	ck_assert_ptr_nonnull(inflight);
	ck_assert_ptr_nonnull(lat);
	ck_assert_ptr_nonnull(sizes);

	metrics_counter_add(put, 5);
	metrics_counter_inc(get);
	metrics_gauge_set(inflight, 7);
	metrics_gauge_add(inflight, -9);
	static const uint64_t lat_us[] = { 50, 100, 101, 5000, 20000 };
	for (int i = 0; i < 5; i++)
		metrics_histogram_observe(lat, lat_us[i]);
	static const uint64_t sz[] = { 0, 4096, 4097, 1 << 20 };
	for (int i = 0; i < 4; i++)
		metrics_histogram_observe(sizes, sz[i]);

	char *out = render(reg);
	ck_assert_str_eq(out,
		"# HELP iolake_rpc_requests_total RPC requests handled.\n"
		"# TYPE iolake_rpc_requests_total counter\n"
		"iolake_rpc_requests_total{osd=\"3\",method=\"PutShard\"} 5\n"
		"iolake_rpc_requests_total{osd=\"3\",method=\"GetShard\"} 1\n"
		"# HELP iolake_inflight In-flight requests.\n"
		"# TYPE iolake_inflight gauge\n"
		"iolake_inflight -2\n"
		"# HELP iolake_put_latency_seconds PUT latency.\n"
		"# TYPE iolake_put_latency_seconds histogram\n"
		"iolake_put_latency_seconds_bucket{osd=\"3\",le=\"0.0001\"} 2\n"
		"iolake_put_latency_seconds_bucket{osd=\"3\",le=\"0.001\"} 3\n"
		"iolake_put_latency_seconds_bucket{osd=\"3\",le=\"0.01\"} 4\n"
		"iolake_put_latency_seconds_bucket{osd=\"3\",le=\"+Inf\"} 5\n"
		"iolake_put_latency_seconds_sum{osd=\"3\"} 0.025251\n"
		"iolake_put_latency_seconds_count{osd=\"3\"} 5\n"
		"# TYPE iolake_object_size_bytes histogram\n"
		"iolake_object_size_bytes_bucket{le=\"4096\"} 2\n"
		"iolake_object_size_bytes_bucket{le=\"65536\"} 3\n"
		"iolake_object_size_bytes_bucket{le=\"+Inf\"} 4\n"
		"iolake_object_size_bytes_sum 1056769\n"
		"iolake_object_size_bytes_count 4\n"
		"# HELP iolake_free_bytes Free space\\non \"data\" \\\\ dev.\n"
		"# TYPE iolake_free_bytes gauge\n"
		"iolake_free_bytes 123456789012\n");
	free(out);
	ck_assert_int_eq(fn_calls, 1);
	ck_assert_uint_eq(metrics_histogram_count(lat), 5);
	ck_assert_uint_eq(metrics_histogram_sum(lat), 25251);

	/* callback values are read at each render */
	fb = NAN;
	out = render(reg);
	ck_assert_ptr_nonnull(strstr(out, "\niolake_free_bytes NaN\n"));
	free(out);
	fb = 0.1;
	out = render(reg);
	ck_assert_ptr_nonnull(strstr(out, "\niolake_free_bytes 0.1\n"));
	free(out);
	ck_assert_int_eq(fn_calls, 3);
	metrics_registry_free(reg);
}
END_TEST

START_TEST(test_label_escaping)
{
	struct metrics_registry *reg = metrics_registry_new();
	struct metrics_counter *c = metrics_counter_new(reg, "x_total", NULL,
		METRICS_LABELS("path", "a\"b\\c\nd", "empty", ""));
	ck_assert_ptr_nonnull(c);
	/* another series differing only in an escaped byte is distinct */
	ck_assert_ptr_nonnull(metrics_counter_new(reg, "x_total", NULL,
		METRICS_LABELS("path", "a\"b\\c\ne", "empty", "")));
	char *out = render(reg);
	ck_assert_str_eq(out,
		"# TYPE x_total counter\n"
		"x_total{path=\"a\\\"b\\\\c\\nd\",empty=\"\"} 0\n"
		"x_total{path=\"a\\\"b\\\\c\\ne\",empty=\"\"} 0\n");
	free(out);
	metrics_registry_free(reg);
}
END_TEST

START_TEST(test_registration_errors)
{
	struct metrics_registry *reg = metrics_registry_new();
	static const uint64_t b[] = { 1, 2 }, unsorted[] = { 2, 2 };
#define ck_rejects(err, call)                         \
	do {                                          \
		errno = 0;                            \
		ck_assert_ptr_null(call);             \
		ck_assert_int_eq(errno, err);         \
	} while (0)
	ck_rejects(EINVAL, metrics_counter_new(reg, "1abc", NULL, NULL));
	ck_rejects(EINVAL, metrics_counter_new(reg, "a-b", NULL, NULL));
	ck_rejects(EINVAL, metrics_counter_new(reg, "", NULL, NULL));
	ck_rejects(EINVAL, metrics_counter_new(reg, "ok", NULL, METRICS_LABELS("__x", "1")));
	ck_rejects(EINVAL, metrics_counter_new(reg, "ok", NULL, METRICS_LABELS("a:b", "1")));
	ck_rejects(EINVAL, metrics_counter_new(reg, "ok", NULL, METRICS_LABELS("odd")));
	ck_rejects(EINVAL, metrics_histogram_new(reg, "h", NULL, METRICS_LABELS("le", "1"),
						 b, 2, 1.0));
	ck_rejects(EINVAL, metrics_histogram_new(reg, "h", NULL, NULL, unsorted, 2, 1.0));
	ck_rejects(EINVAL, metrics_histogram_new(reg, "h", NULL, NULL, b, 0, 1.0));
	ck_rejects(EINVAL, metrics_histogram_new(reg, "h", NULL, NULL, b, 2, 0.0));
	ck_rejects(EINVAL, metrics_gauge_fn_new(reg, "g", NULL, NULL, NULL, NULL));

	ck_assert_ptr_nonnull(metrics_counter_new(reg, "ns:ok_total", NULL,
						  METRICS_LABELS("le", "fine on a counter")));
	ck_rejects(EEXIST, metrics_counter_new(reg, "ns:ok_total", NULL,
					       METRICS_LABELS("le", "fine on a counter")));
	ck_rejects(EINVAL, metrics_gauge_new(reg, "ns:ok_total", NULL, NULL));
	ck_assert_ptr_nonnull(metrics_gauge_new(reg, "g", NULL, NULL));
	ck_rejects(EEXIST, metrics_gauge_fn_new(reg, "g", NULL, NULL, free_bytes, NULL));
	static double two = 2;
	ck_assert_ptr_nonnull(metrics_gauge_fn_new(reg, "g", NULL, METRICS_LABELS("k", "v"),
						   free_bytes, &two));
	char *out = render(reg);
	ck_assert_str_eq(out,
		"# TYPE ns:ok_total counter\n"
		"ns:ok_total{le=\"fine on a counter\"} 0\n"
		"# TYPE g gauge\n"
		"g 0\n"
		"g{k=\"v\"} 2\n");
	free(out);
	metrics_registry_free(reg);

	/* an empty registry renders nothing */
	reg = metrics_registry_new();
	out = render(reg);
	ck_assert_str_eq(out, "");
	free(out);
	metrics_registry_free(reg);
	metrics_registry_free(NULL);
}
END_TEST

START_TEST(test_latency_buckets)
{
	size_t n;
	const uint64_t *b = metrics_latency_buckets_us(&n);
	ck_assert_uint_eq(n, 17);
	ck_assert_uint_eq(b[0], 50);
	ck_assert_uint_eq(b[n - 1], 10000000);
	for (size_t i = 1; i < n; i++)
		ck_assert_uint_gt(b[i], b[i - 1]);

	struct metrics_registry *reg = metrics_registry_new();
	struct metrics_histogram *h = metrics_histogram_new(reg, "lat_seconds", "x", NULL,
							    b, n, 1e-6);
	ck_assert_ptr_nonnull(h);
	metrics_histogram_observe(h, 0);
	metrics_histogram_observe(h, 50);
	metrics_histogram_observe(h, 51);
	metrics_histogram_observe(h, 10000001);
	char *out = render(reg);
	/* bounds render in seconds, as short as they read back */
	ck_assert_ptr_nonnull(strstr(out, "\nlat_seconds_bucket{le=\"5e-05\"} 2\n"
					  "lat_seconds_bucket{le=\"0.0001\"} 3\n"));
	ck_assert_ptr_nonnull(strstr(out, "\nlat_seconds_bucket{le=\"2.5\"} 3\n"));
	ck_assert_ptr_nonnull(strstr(out, "\nlat_seconds_bucket{le=\"10\"} 3\n"
					  "lat_seconds_bucket{le=\"+Inf\"} 4\n"
					  "lat_seconds_sum 10.000102\n"
					  "lat_seconds_count 4\n"));
	free(out);
	metrics_registry_free(reg);
}
END_TEST

/* ------------------------------------------------------------ threads */

#define NTHREADS 4
#define NOPS 1000000
#define VALUE_MOD 20000 /* observations cycle through 0..19999 us */

static struct metrics_counter *hot_counter;
static struct metrics_histogram *hot_hist;

static void *worker(void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < NOPS; i++) {
		metrics_counter_inc(hot_counter);
		metrics_histogram_observe(hot_hist, i % VALUE_MOD);
	}
	return NULL;
}

/* Parse the histogram's buckets out of a render; returns how many. */
static size_t parse_buckets(const char *text, uint64_t *cum, uint64_t *count)
{
	size_t n = 0;
	const char *p = text;
	while ((p = strstr(p, "hot_seconds_bucket{le=\""))) {
		p = strstr(p, "} ");
		ck_assert_int_eq(sscanf(p + 2, "%" SCNu64, &cum[n]), 1);
		n++;
	}
	p = strstr(text, "hot_seconds_count ");
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(sscanf(p + 18, "%" SCNu64, count), 1);
	return n;
}

START_TEST(test_concurrent_exact_totals)
{
	struct metrics_registry *reg = metrics_registry_new();
	size_t nb;
	const uint64_t *b = metrics_latency_buckets_us(&nb);
	hot_counter = metrics_counter_new(reg, "hot_total", "x", NULL);
	hot_hist = metrics_histogram_new(reg, "hot_seconds", "x", NULL, b, nb, 1e-6);
	ck_assert_ptr_nonnull(hot_counter);
	ck_assert_ptr_nonnull(hot_hist);

	pthread_t th[NTHREADS];
	for (int t = 0; t < NTHREADS; t++)
		ck_assert_int_eq(pthread_create(&th[t], NULL, worker, NULL), 0);
	/* Scrape while they run: every scrape is self-consistent. */
	uint64_t cum[METRICS_MAX_BUCKETS + 1], count;
	for (int r = 0; r < 50; r++) {
		char *out = render(reg);
		size_t n = parse_buckets(out, cum, &count);
		ck_assert_uint_eq(n, nb + 1);
		for (size_t i = 1; i < n; i++)
			ck_assert_uint_ge(cum[i], cum[i - 1]);
		ck_assert_uint_eq(count, cum[n - 1]);
		free(out);
	}
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);

	ck_assert_uint_eq(metrics_counter_get(hot_counter), (uint64_t)NTHREADS * NOPS);
	ck_assert_uint_eq(metrics_histogram_count(hot_hist), (uint64_t)NTHREADS * NOPS);
	/* each thread: NOPS / VALUE_MOD full cycles of 0..VALUE_MOD-1 */
	uint64_t cycle = (uint64_t)VALUE_MOD * (VALUE_MOD - 1) / 2;
	ck_assert_uint_eq(metrics_histogram_sum(hot_hist),
			  (uint64_t)NTHREADS * (NOPS / VALUE_MOD) * cycle);

	/* per-bucket oracle: count the same values by brute force */
	uint64_t want[METRICS_MAX_BUCKETS + 1] = { 0 };
	for (uint64_t v = 0; v < VALUE_MOD; v++)
		for (size_t i = 0; i <= nb; i++)
			if (i == nb || v <= b[i])
				want[i] += (uint64_t)NTHREADS * (NOPS / VALUE_MOD);
	char *out = render(reg);
	ck_assert_uint_eq(parse_buckets(out, cum, &count), nb + 1);
	for (size_t i = 0; i <= nb; i++)
		ck_assert_msg(cum[i] == want[i], "bucket %zu: %" PRIu64 " != %" PRIu64, i,
			      cum[i], want[i]);
	ck_assert_uint_eq(count, (uint64_t)NTHREADS * NOPS);
	char line[64];
	snprintf(line, sizeof(line), "\nhot_total %" PRIu64 "\n", (uint64_t)NTHREADS * NOPS);
	ck_assert_ptr_nonnull(strstr(out, line));
	free(out);
	metrics_registry_free(reg);
}
END_TEST

/* The gateway's loops register the same series once each: the second
 * and later get the first's metric, and their updates add up in one
 * series; another kind under the name is still refused. */
START_TEST(test_shared_registration)
{
	struct metrics_registry *reg = metrics_registry_new();
	size_t nb;
	const uint64_t *b = metrics_latency_buckets_us(&nb);
	struct metrics_counter *c1 = metrics_counter_shared(reg, "req_total", "x",
							    METRICS_LABELS("op", "Get"));
	struct metrics_counter *c2 = metrics_counter_shared(reg, "req_total", "x",
							    METRICS_LABELS("op", "Get"));
	struct metrics_counter *c3 = metrics_counter_shared(reg, "req_total", "x",
							    METRICS_LABELS("op", "Put"));
	ck_assert_ptr_nonnull(c1);
	ck_assert_ptr_eq(c1, c2);
	ck_assert_ptr_ne(c1, c3);
	metrics_counter_inc(c1);
	metrics_counter_inc(c2);
	ck_assert_uint_eq(metrics_counter_get(c1), 2);
	struct metrics_histogram *h1 =
		metrics_histogram_shared(reg, "lat_seconds", "x", NULL, b, nb, 1e-6);
	struct metrics_histogram *h2 =
		metrics_histogram_shared(reg, "lat_seconds", "x", NULL, b, nb, 1e-6);
	ck_assert_ptr_nonnull(h1);
	ck_assert_ptr_eq(h1, h2);
	metrics_histogram_observe(h1, 5);
	metrics_histogram_observe(h2, 7);
	ck_assert_uint_eq(metrics_histogram_count(h1), 2);
	errno = 0;
	ck_assert_ptr_null(metrics_counter_shared(reg, "lat_seconds", "x", NULL));
	ck_assert_int_eq(errno, EINVAL);
	char *out = render(reg);
	ck_assert_ptr_nonnull(strstr(out, "\nreq_total{op=\"Get\"} 2\n"));
	ck_assert_ptr_nonnull(strstr(out, "\nlat_seconds_count 2\n"));
	free(out);
	metrics_registry_free(reg);
}
END_TEST

static Suite *metrics_suite(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("render");
	tcase_add_test(tc, test_render_exact);
	tcase_add_test(tc, test_label_escaping);
	tcase_add_test(tc, test_registration_errors);
	tcase_add_test(tc, test_latency_buckets);
	tcase_add_test(tc, test_shared_registration);
	suite_add_tcase(s, tc);

	tc = tcase_create("threads");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_concurrent_exact_totals);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(metrics_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
