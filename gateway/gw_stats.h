/*
 * gw_stats.h — the gateway's S3 request statistics per operation, kept as
 * Prometheus metrics in the gateway's registry and read back as JSON for
 * the admin API's GET /api/v1/stats (the console's live charts).
 *
 * Per S3 operation: requests finished, by status class (2xx/3xx, 4xx,
 * 5xx, and none: the client left before an answer), and a latency
 * histogram from the request's head to the end of its exchange
 * (iolake_gw_request_duration_seconds, the standard 50 us .. 10 s
 * buckets). Counters only grow: a reader takes two snapshots and divides
 * the difference by the time between them for a rate, or subtracts
 * bucket counts for the latency of that interval.
 *
 * Threads: observe on the gateway's loop (or any thread: the metrics are
 * relaxed atomics); the JSON may be built on any thread. Does not: keep
 * windows or history (the reader does), or know what an operation does.
 */
#ifndef GATEWAY_GW_STATS_H
#define GATEWAY_GW_STATS_H

#include <stdint.h>

#include "common/jsonw.h"
#include "common/metrics.h"

struct gw_stats;

/* Register the metrics in reg (which must outlive the stats). NULL when
 * out of memory or a metric could not be registered (errno says why). */
struct gw_stats *gw_stats_new(struct metrics_registry *reg);
void gw_stats_free(struct gw_stats *st);

/* One request of S3 operation op (enum s3_op; out of range counts as
 * "None") ended with HTTP status (0: no response was sent) after
 * elapsed_us. */
void gw_stats_observe(struct gw_stats *st, int op, int status, uint64_t elapsed_us);

/* The members of GET /api/v1/stats into w, inside an open object:
 * "uptime_ms", "latency_bounds_us" and "ops" (one object per operation
 * that has seen a request: requests, by class, latency count / sum / p50
 * / p90 / p99 since start, and the bucket counts). docs/admin-api.md. */
void gw_stats_json(const struct gw_stats *st, struct jsonw *w);

/* The q-quantile (0 < q < 1) of histogram counts counts[0..nbounds]
 * (counts[nbounds] above the last bound) in the bounds' unit, linearly
 * interpolated inside its bucket; a quantile above every bound is the
 * last bound. 0 when the counts are all zero. */
uint64_t gw_stats_quantile(const uint64_t *bounds, size_t nbounds, const uint64_t *counts,
			   double q);

#endif
