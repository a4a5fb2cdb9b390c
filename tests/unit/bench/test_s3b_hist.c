/*
 * test_s3b_hist.c — the bench's latency histogram against a sorted-array
 * oracle over random data (seed printed; S3B_SEED=n replays), bucket
 * arithmetic over every bucket, merge, and extremes.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/s3bench/s3b_hist.h"

static uint64_t seed;

static uint64_t rnd(void)
{
	/* splitmix64: reproducible from the printed seed on any libc */
	uint64_t z = (seed += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The oracle: the value at rank ceil(q * n) of the sorted array. */
static uint64_t oracle(const uint64_t *sorted, size_t n, double q)
{
	if (q <= 0)
		return sorted[0];
	double r = q * (double)n;
	size_t rank = (size_t)r;
	if ((double)rank < r)
		rank++;
	if (rank == 0)
		rank = 1;
	return sorted[rank - 1];
}

static struct s3b_hist *hist_new(void)
{
	struct s3b_hist *h = malloc(sizeof(*h));
	ck_assert_ptr_nonnull(h);
	s3b_hist_init(h);
	return h;
}

START_TEST(test_buckets)
{
	/* Every bucket: lowest/highest map back to it, buckets tile the range
	 * without gaps, and a bucket is at most 1/128 of its lowest value wide. */
	uint64_t next = 0;
	for (unsigned i = 0; i < S3B_HIST_BUCKETS; i++) {
		uint64_t lo = s3b_hist_lowest(i), hi = s3b_hist_highest(i);
		ck_assert_uint_eq(lo, next);
		ck_assert_uint_ge(hi, lo);
		ck_assert_uint_eq(s3b_hist_index(lo), i);
		ck_assert_uint_eq(s3b_hist_index(hi), i);
		if (lo > 0)
			ck_assert((double)(hi - lo) / (double)lo <= 1.0 / 128);
		next = hi + 1;
	}
	ck_assert_uint_eq(next - 1, S3B_HIST_MAX);
	ck_assert_uint_eq(s3b_hist_index(UINT64_MAX), S3B_HIST_BUCKETS - 1);
}
END_TEST

/* Log-uniform values from 1 us to 60 s (in ns), plus a cluster of equal
 * values, as latencies look. */
static uint64_t latency_like(void)
{
	if (rnd() % 10 == 0)
		return 123456;
	double e = log(1e3) + (double)(rnd() >> 11) / 9007199254740992.0 * (log(60e9) - log(1e3));
	return (uint64_t)exp(e);
}

START_TEST(test_oracle)
{
	const char *env = getenv("S3B_SEED");
	seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
	printf("test_oracle: seed %llu (S3B_SEED=%llu replays)\n", (unsigned long long)seed,
	       (unsigned long long)seed);
	static const size_t sizes[] = { 1, 2, 3, 10, 99, 1000, 100003 };
	static const double qs[] = { 0, 0.001, 0.01, 0.1, 0.25, 0.5, 0.9, 0.99, 0.999, 0.9999, 1 };
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t n = sizes[s];
		uint64_t *v = malloc(n * sizeof(*v));
		ck_assert_ptr_nonnull(v);
		struct s3b_hist *h = hist_new();
		uint64_t sum = 0;
		for (size_t i = 0; i < n; i++) {
			v[i] = latency_like();
			sum += v[i];
			s3b_hist_record(h, v[i]);
		}
		qsort(v, n, sizeof(*v), cmp_u64);
		ck_assert_uint_eq(h->count, n);
		ck_assert_uint_eq(h->sum, sum);
		ck_assert_uint_eq(h->min, v[0]);
		ck_assert_uint_eq(h->max, v[n - 1]);
		for (size_t k = 0; k < sizeof(qs) / sizeof(qs[0]); k++) {
			uint64_t want = oracle(v, n, qs[k]);
			uint64_t got = s3b_hist_quantile(h, qs[k]);
			ck_assert_msg(got >= want && (double)(got - want) <= (double)want / 128.0,
				      "n=%zu q=%g: got %llu, oracle %llu (seed %llu)", n, qs[k],
				      (unsigned long long)got, (unsigned long long)want,
				      (unsigned long long)seed);
		}
		free(h);
		free(v);
	}
}
END_TEST

START_TEST(test_merge)
{
	seed = 42;
	struct s3b_hist *a = hist_new(), *b = hist_new(), *all = hist_new();
	for (int i = 0; i < 50000; i++) {
		uint64_t x = latency_like();
		s3b_hist_record(i % 3 ? a : b, x);
		s3b_hist_record(all, x);
	}
	struct s3b_hist *empty = hist_new();
	s3b_hist_merge(a, empty); /* merging nothing changes nothing */
	s3b_hist_merge(a, b);
	ck_assert_int_eq(memcmp(a, all, sizeof(*a)), 0);
	s3b_hist_merge(empty, all); /* into an empty one: min comes over */
	ck_assert_int_eq(memcmp(empty, all, sizeof(*a)), 0);
	free(a);
	free(b);
	free(all);
	free(empty);
}
END_TEST

START_TEST(test_extremes)
{
	struct s3b_hist *h = hist_new();
	ck_assert_uint_eq(s3b_hist_quantile(h, 0.5), 0);
	ck_assert(s3b_hist_mean(h) == 0.0);

	s3b_hist_record(h, 0);
	ck_assert_uint_eq(s3b_hist_quantile(h, 0), 0);
	ck_assert_uint_eq(s3b_hist_quantile(h, 1), 0);

	s3b_hist_init(h);
	s3b_hist_record(h, 777777);
	/* one value: every quantile is that value exactly (capped at max) */
	ck_assert_uint_eq(s3b_hist_quantile(h, 0.5), 777777);
	ck_assert_uint_eq(s3b_hist_quantile(h, 0.99), 777777);

	s3b_hist_init(h);
	s3b_hist_record(h, UINT64_MAX);
	s3b_hist_record(h, S3B_HIST_MAX + 1);
	s3b_hist_record(h, S3B_HIST_MAX);
	ck_assert_uint_eq(h->clamped, 2);
	ck_assert_uint_eq(h->max, S3B_HIST_MAX);
	ck_assert_uint_eq(s3b_hist_quantile(h, 1), S3B_HIST_MAX);
	ck_assert_uint_eq(s3b_hist_quantile(h, 0.01), S3B_HIST_MAX);

	/* exact region: 0..255 recorded once each */
	s3b_hist_init(h);
	for (uint64_t v = 0; v < 256; v++)
		s3b_hist_record(h, v);
	ck_assert_uint_eq(s3b_hist_quantile(h, 0.5), 127);
	ck_assert_uint_eq(s3b_hist_quantile(h, 1.0 / 256), 0);
	ck_assert(s3b_hist_mean(h) == 127.5);
	free(h);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("s3b_hist");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_buckets);
	tcase_add_test(tc, test_oracle);
	tcase_add_test(tc, test_merge);
	tcase_add_test(tc, test_extremes);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
