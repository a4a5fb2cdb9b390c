/*
 * s3b_hist.h — a log-linear latency histogram (HDR-style) for the S3
 * benchmark: fixed size, no allocation after init, mergeable.
 *
 * Values are unsigned integers in the caller's unit (the bench records
 * nanoseconds). Values below 2^S3B_HIST_SUB_BITS are counted exactly; above
 * that, each power of two is split into 2^(S3B_HIST_SUB_BITS-1) equal
 * buckets, so a bucket is at most 1/128 of its lowest value wide and any
 * percentile is reported within 0.79% of the true value (as the bucket's
 * highest equivalent value, never below the truth). Values above
 * S3B_HIST_MAX are clamped to it and counted in `clamped`; min, max, sum and
 * count are exact.
 *
 * With nanoseconds: exact below 256 ns, <= 0.79% error up to 2^40 ns
 * (~18 minutes), which covers the 1 us .. 60 s the bench needs.
 *
 * Not thread-safe: one histogram per loop; merge them afterwards.
 */
#ifndef BENCH_S3B_HIST_H
#define BENCH_S3B_HIST_H

#include <stddef.h>
#include <stdint.h>

#define S3B_HIST_SUB_BITS 8                          /* 256 exact values */
#define S3B_HIST_MAX_BITS 40                         /* largest magnitude */
#define S3B_HIST_MAX ((UINT64_C(1) << S3B_HIST_MAX_BITS) - 1)
#define S3B_HIST_BUCKETS ((1u << S3B_HIST_SUB_BITS) + \
	(S3B_HIST_MAX_BITS - S3B_HIST_SUB_BITS) * (1u << (S3B_HIST_SUB_BITS - 1)))

struct s3b_hist {
	uint64_t count;   /* values recorded */
	uint64_t sum;     /* of the values as recorded (after clamping) */
	uint64_t min;     /* UINT64_MAX while empty */
	uint64_t max;     /* 0 while empty */
	uint64_t clamped; /* values above S3B_HIST_MAX */
	uint64_t buckets[S3B_HIST_BUCKETS];
};

/* Empty h. */
void s3b_hist_init(struct s3b_hist *h);

/* Count one value (clamped to S3B_HIST_MAX). */
void s3b_hist_record(struct s3b_hist *h, uint64_t v);

/* Add every count of src into dst. */
void s3b_hist_merge(struct s3b_hist *dst, const struct s3b_hist *src);

/* The value at quantile q in [0, 1]: the smallest bucket's highest
 * equivalent value v such that at least ceil(q * count) values are <= v,
 * capped at the exact max (so q = 1 gives max) and floored at the exact min
 * (q = 0 gives min). 0 when h is empty. */
uint64_t s3b_hist_quantile(const struct s3b_hist *h, double q);

/* Mean of the recorded values; 0 when empty. */
double s3b_hist_mean(const struct s3b_hist *h);

/* Bucket arithmetic, exposed for tests: the index of v, and the lowest and
 * highest values that share bucket i. */
unsigned s3b_hist_index(uint64_t v);
uint64_t s3b_hist_lowest(unsigned i);
uint64_t s3b_hist_highest(unsigned i);

#endif
