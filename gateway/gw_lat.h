/*
 * gw_lat.h — a moving latency histogram and its quantile: what the
 * gateway's hedged reads derive their delay from (gw_data_get.c).
 *
 * Log-spaced buckets, four per power of two, from 16 us to ~2 min (slower samples share the last). The
 * counts halve every GW_LAT_WINDOW samples, so the quantile follows the
 * last few thousand samples, not the process's whole life. The quantile is
 * recomputed every GW_LAT_EVERY samples and cached: reading it is a load.
 *
 * Not thread-safe: one loop owns it. Pure (no clock, no I/O): samples
 * come in, a number comes out.
 */
#ifndef GATEWAY_GW_LAT_H
#define GATEWAY_GW_LAT_H

#include <stdint.h>

#define GW_LAT_BUCKETS 96
#define GW_LAT_WINDOW 2048
#define GW_LAT_EVERY 32

struct gw_lat {
	uint32_t b[GW_LAT_BUCKETS];
	uint32_t n;          /* sum of b */
	uint32_t since;      /* samples since the quantile was computed */
	uint32_t q_permille; /* which quantile (950: p95) */
	uint32_t q_us;       /* cached quantile; the initial value until filled */
};

/* Track quantile q_permille (1..999); until GW_LAT_EVERY samples came,
 * gw_lat_get() returns initial_us. */
void gw_lat_init(struct gw_lat *l, uint32_t q_permille, uint32_t initial_us);

/* One sample, in microseconds. */
void gw_lat_add(struct gw_lat *l, uint64_t us);

/* The tracked quantile in microseconds (the upper bound of its bucket). */
static inline uint32_t gw_lat_get(const struct gw_lat *l)
{
	return l->q_us;
}

/* Bucket of a value and a bucket's upper bound (exposed for tests). */
unsigned gw_lat_bucket(uint64_t us);
uint64_t gw_lat_bucket_max(unsigned i);

#endif
