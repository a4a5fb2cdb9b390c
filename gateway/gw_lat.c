/*
 * gw_lat.c — moving latency histogram (contract in gw_lat.h).
 *
 * Bucket i > 0 covers [lo, hi) with lo = (4 + s) << (e - 2) for
 * i = (e - 4) * 4 + s + 1, e >= 4 the power of two and s the quarter
 * within it; bucket 0 holds everything under 16 us. Four buckets per
 * octave bound the quantile's error to a quarter of its value.
 */
#include "gateway/gw_lat.h"

#include <string.h>

unsigned gw_lat_bucket(uint64_t us)
{
	if (us < 16)
		return 0;
	unsigned e = 63u - (unsigned)__builtin_clzll(us);
	unsigned s = (unsigned)(us >> (e - 2)) & 3u;
	unsigned i = (e - 4) * 4 + s + 1;
	return i < GW_LAT_BUCKETS ? i : GW_LAT_BUCKETS - 1;
}

uint64_t gw_lat_bucket_max(unsigned i)
{
	if (i == 0)
		return 16;
	unsigned e = (i - 1) / 4 + 4, s = (i - 1) % 4;
	return (uint64_t)(5 + s) << (e - 2);
}

void gw_lat_init(struct gw_lat *l, uint32_t q_permille, uint32_t initial_us)
{
	memset(l, 0, sizeof(*l));
	l->q_permille = q_permille ? q_permille : 950;
	l->q_us = initial_us;
}

static void recompute(struct gw_lat *l)
{
	uint64_t want = ((uint64_t)l->n * l->q_permille + 999) / 1000, seen = 0;
	for (unsigned i = 0; i < GW_LAT_BUCKETS; i++) {
		seen += l->b[i];
		if (seen >= want) {
			uint64_t m = gw_lat_bucket_max(i);
			l->q_us = m > UINT32_MAX ? UINT32_MAX : (uint32_t)m;
			return;
		}
	}
}

void gw_lat_add(struct gw_lat *l, uint64_t us)
{
	l->b[gw_lat_bucket(us)]++;
	l->n++;
	if (l->n >= GW_LAT_WINDOW) {
		/* Age: halve everything (a bucket of 1 may drop to 0). */
		uint32_t n = 0;
		for (unsigned i = 0; i < GW_LAT_BUCKETS; i++)
			n += (l->b[i] /= 2);
		l->n = n;
	}
	if (++l->since >= GW_LAT_EVERY) {
		l->since = 0;
		recompute(l);
	}
}
