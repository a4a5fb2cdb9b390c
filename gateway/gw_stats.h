/*
 * gw_stats.h — the gateway's S3 request statistics per operation, as
 * Prometheus metrics in the gateway's registry, read back as JSON for the
 * admin API's GET /api/v1/stats (the console's live charts).
 *
 * The series (the names docs/metrics.md gives them):
 *   iolake_gw_request_duration_seconds{op}    histogram, request head to
 *       the end of its exchange, the standard 50 us .. 10 s buckets
 *   iolake_gw_request_errors_total{op,class}  class "4xx" or "5xx"
 * op is the S3 operation's name, "unrouted" for a request that was not
 * routed. Counts only grow: a reader takes two snapshots and divides the
 * differences by the time between them for a rate, or subtracts bucket
 * counts for the latency of that interval.
 *
 * Two halves. The writer (gw_stats_observe, fed by s3_server_cfg.observe)
 * registers the series at its first observation, unless another module
 * registered them already: then it writes nothing (that module times the
 * requests; counting them here too would count each twice). The reader
 * (gw_stats_json) finds the series by name in the registry, whoever
 * registered them.
 *
 * Threads: observe on any thread (relaxed atomics); the JSON takes the
 * registry's mutex for lookups. Does not: keep windows or history (the
 * reader of the JSON does), or know what an operation does.
 */
#ifndef GATEWAY_GW_STATS_H
#define GATEWAY_GW_STATS_H

#include <stdint.h>

#include "common/jsonw.h"
#include "common/metrics.h"

struct gw_stats;

/* Statistics over reg (which must outlive them); NULL when out of
 * memory. Registers nothing yet (gw_stats_observe does). */
struct gw_stats *gw_stats_new(struct metrics_registry *reg);
void gw_stats_free(struct gw_stats *st);

/* One request of S3 operation op (enum s3_op; out of range counts as
 * unrouted) ended with HTTP status (0: no response was sent) after
 * elapsed_us. The first call registers the series (or finds another
 * module's and writes nothing from then on). */
void gw_stats_observe(struct gw_stats *st, int op, int status, uint64_t elapsed_us);

/* The members of GET /api/v1/stats into w, inside an open object:
 * "uptime_ms", "latency_bounds_us" and "ops" (one object per operation
 * that has seen a request: requests, ok / 4xx / 5xx, latency count / sum
 * / p50 / p90 / p99 since start, and the bucket counts), read from the
 * registry's series. docs/admin-api.md. */
void gw_stats_json(struct gw_stats *st, struct jsonw *w);

/* The q-quantile (0 < q < 1) of histogram counts counts[0..nbounds]
 * (counts[nbounds] above the last bound) in the bounds' unit, linearly
 * interpolated inside its bucket; a quantile above every bound is the
 * last bound. 0 when the counts are all zero. */
uint64_t gw_stats_quantile(const uint64_t *bounds, size_t nbounds, const uint64_t *counts,
			   double q);

#endif
