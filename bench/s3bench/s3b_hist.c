/*
 * s3b_hist.c — log-linear histogram (see s3b_hist.h).
 *
 * Layout, with S = S3B_HIST_SUB_BITS and H = 2^(S-1):
 *   v < 2^S            index v                       (width 1)
 *   2^m <= v < 2^(m+1) index 2^S + (m-S)*H + (v >> (m-S+1)) - H
 *                                                    (width 2^(m-S+1))
 * so a bucket's width over its lowest value is at most 2^(m-S+1)/2^m = 1/H.
 */
#include "bench/s3bench/s3b_hist.h"

#include <string.h>

#define SUB (1u << S3B_HIST_SUB_BITS)
#define HALF (SUB / 2)

void s3b_hist_init(struct s3b_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

unsigned s3b_hist_index(uint64_t v)
{
	if (v > S3B_HIST_MAX)
		v = S3B_HIST_MAX;
	if (v < SUB)
		return (unsigned)v;
	unsigned m = 63u - (unsigned)__builtin_clzll(v);
	unsigned shift = m - S3B_HIST_SUB_BITS + 1;
	return SUB + (m - S3B_HIST_SUB_BITS) * HALF + (unsigned)(v >> shift) - HALF;
}

uint64_t s3b_hist_lowest(unsigned i)
{
	if (i < SUB)
		return i;
	unsigned j = i - SUB;
	unsigned m = j / HALF + S3B_HIST_SUB_BITS;
	uint64_t mant = (uint64_t)(j % HALF) + HALF;
	return mant << (m - S3B_HIST_SUB_BITS + 1);
}

uint64_t s3b_hist_highest(unsigned i)
{
	if (i < SUB)
		return i;
	unsigned m = (i - SUB) / HALF + S3B_HIST_SUB_BITS;
	return s3b_hist_lowest(i) + (UINT64_C(1) << (m - S3B_HIST_SUB_BITS + 1)) - 1;
}

void s3b_hist_record(struct s3b_hist *h, uint64_t v)
{
	if (v > S3B_HIST_MAX) {
		v = S3B_HIST_MAX;
		h->clamped++;
	}
	h->buckets[s3b_hist_index(v)]++;
	h->count++;
	h->sum += v;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
}

void s3b_hist_merge(struct s3b_hist *dst, const struct s3b_hist *src)
{
	if (src->count == 0)
		return;
	for (unsigned i = 0; i < S3B_HIST_BUCKETS; i++)
		dst->buckets[i] += src->buckets[i];
	dst->count += src->count;
	dst->sum += src->sum;
	dst->clamped += src->clamped;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
}

uint64_t s3b_hist_quantile(const struct s3b_hist *h, double q)
{
	if (h->count == 0)
		return 0;
	if (q <= 0)
		return h->min;
	if (q >= 1)
		return h->max;
	/* rank = ceil(q * count), at least 1 */
	double r = q * (double)h->count;
	uint64_t rank = (uint64_t)r;
	if ((double)rank < r)
		rank++;
	if (rank == 0)
		rank = 1;
	uint64_t seen = 0;
	for (unsigned i = 0; i < S3B_HIST_BUCKETS; i++) {
		seen += h->buckets[i];
		if (seen >= rank) {
			uint64_t v = s3b_hist_highest(i);
			if (v > h->max)
				v = h->max;
			if (v < h->min)
				v = h->min;
			return v;
		}
	}
	return h->max;
}

double s3b_hist_mean(const struct s3b_hist *h)
{
	return h->count ? (double)h->sum / (double)h->count : 0.0;
}
