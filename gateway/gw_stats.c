/*
 * gw_stats.c — S3 request statistics per operation (contracts in
 * gw_stats.h): three counters and a latency histogram per operation in the
 * metrics registry, and their JSON for the admin API.
 *
 * Owns the metric pointers (the registry owns the metrics). Does not: time
 * requests (s3_server does, from the request head to the end of the
 * exchange), nor keep any history.
 */
#include "gateway/gw_stats.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "gateway/s3_req.h"

enum { CLS_OK, CLS_4XX, CLS_5XX, CLS_NONE, CLS__COUNT };
static const char *const cls_name[CLS__COUNT] = { "ok", "4xx", "5xx", "none" };

struct gw_stats {
	uint64_t start_ms;   /* CLOCK_MONOTONIC at gw_stats_new */
	const uint64_t *bounds;
	size_t nbounds;
	struct metrics_counter *done[S3_OP__COUNT][CLS__COUNT];
	struct metrics_histogram *lat[S3_OP__COUNT];
};

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct gw_stats *gw_stats_new(struct metrics_registry *reg)
{
	struct gw_stats *st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	st->start_ms = mono_ms();
	st->bounds = metrics_latency_buckets_us(&st->nbounds);
	for (int op = 0; op < S3_OP__COUNT; op++) {
		const char *name = s3_op_name(op);
		for (int k = 0; k < CLS__COUNT; k++) {
			st->done[op][k] = metrics_counter_new(
				reg, "iolake_gw_responses_total",
				"S3 requests finished, by operation and status class (none: "
				"the client left before an answer)",
				METRICS_LABELS("op", name, "class", cls_name[k]));
			if (!st->done[op][k])
				goto fail;
		}
		st->lat[op] = metrics_histogram_new(
			reg, "iolake_gw_request_duration_seconds",
			"S3 request latency from its head to the end of the exchange, by operation",
			METRICS_LABELS("op", name), st->bounds, st->nbounds, 1e-6);
		if (!st->lat[op])
			goto fail;
	}
	return st;
fail:
	free(st);
	return NULL;
}

void gw_stats_free(struct gw_stats *st)
{
	free(st);
}

void gw_stats_observe(struct gw_stats *st, int op, int status, uint64_t elapsed_us)
{
	if (!st)
		return;
	if (op < 0 || op >= S3_OP__COUNT)
		op = S3_OP_NONE;
	int k = status == 0 ? CLS_NONE : status >= 500 ? CLS_5XX : status >= 400 ? CLS_4XX : CLS_OK;
	metrics_counter_inc(st->done[op][k]);
	metrics_histogram_observe(st->lat[op], elapsed_us);
}

uint64_t gw_stats_quantile(const uint64_t *bounds, size_t nbounds, const uint64_t *counts,
			   double q)
{
	uint64_t total = 0;
	for (size_t i = 0; i <= nbounds; i++)
		total += counts[i];
	if (!total || !nbounds)
		return 0;
	double rank = q * (double)total, below = 0;
	for (size_t i = 0; i < nbounds; i++) {
		if (counts[i] && below + (double)counts[i] >= rank) {
			double lo = i ? (double)bounds[i - 1] : 0, hi = (double)bounds[i];
			double f = (rank - below) / (double)counts[i];
			return (uint64_t)(lo + (hi - lo) * f + 0.5);
		}
		below += (double)counts[i];
	}
	return bounds[nbounds - 1];
}

void gw_stats_json(const struct gw_stats *st, struct jsonw *w)
{
	jsonw_ku64(w, "uptime_ms", mono_ms() - st->start_ms);
	jsonw_key(w, "latency_bounds_us");
	jsonw_arr_begin(w);
	for (size_t i = 0; i < st->nbounds; i++)
		jsonw_u64(w, st->bounds[i]);
	jsonw_arr_end(w);
	jsonw_key(w, "ops");
	jsonw_obj_begin(w);
	uint64_t counts[METRICS_MAX_BUCKETS + 1];
	for (int op = 0; op < S3_OP__COUNT; op++) {
		uint64_t n[CLS__COUNT], total = 0;
		for (int k = 0; k < CLS__COUNT; k++)
			total += n[k] = metrics_counter_get(st->done[op][k]);
		if (!total)
			continue;
		size_t nb = metrics_histogram_buckets(st->lat[op], counts, METRICS_MAX_BUCKETS + 1);
		jsonw_key(w, s3_op_name(op));
		jsonw_obj_begin(w);
		jsonw_ku64(w, "requests", total);
		for (int k = 0; k < CLS__COUNT; k++)
			jsonw_ku64(w, cls_name[k], n[k]);
		jsonw_ku64(w, "latency_count", metrics_histogram_count(st->lat[op]));
		jsonw_ku64(w, "latency_sum_us", metrics_histogram_sum(st->lat[op]));
		jsonw_ku64(w, "p50_us", gw_stats_quantile(st->bounds, st->nbounds, counts, 0.50));
		jsonw_ku64(w, "p90_us", gw_stats_quantile(st->bounds, st->nbounds, counts, 0.90));
		jsonw_ku64(w, "p99_us", gw_stats_quantile(st->bounds, st->nbounds, counts, 0.99));
		jsonw_key(w, "buckets");
		jsonw_arr_begin(w);
		for (size_t i = 0; i < nb; i++)
			jsonw_u64(w, counts[i]);
		jsonw_arr_end(w);
		jsonw_obj_end(w);
	}
	jsonw_obj_end(w);
}
