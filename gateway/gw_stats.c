/*
 * gw_stats.c — S3 request statistics per operation (contracts in
 * gw_stats.h): a latency histogram and error counters per operation in
 * the metrics registry, and their JSON for the admin API.
 *
 * Owns the pointers it found or registered (the registry owns the
 * metrics). Does not: time requests (s3_server does, from the request head
 * to the end of the exchange), nor keep any history.
 */
#include "gateway/gw_stats.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "gateway/s3_req.h"

#define LAT_NAME "iolake_gw_request_duration_seconds"
#define LAT_HELP "S3 requests by operation: time from the request head to the end of the response"
#define ERR_NAME "iolake_gw_request_errors_total"
#define ERR_HELP "S3 requests answered with an error status, by operation and class"

static const char *const cls_name[2] = { "4xx", "5xx" };

struct series {
	struct metrics_histogram *lat;
	struct metrics_counter *err[2];
};

struct gw_stats {
	struct metrics_registry *reg;
	uint64_t start_ms;   /* CLOCK_MONOTONIC at gw_stats_new */
	const uint64_t *bounds;
	size_t nbounds;
	enum { W_UNSET, W_ON, W_OFF } w_state;   /* the writer: see writer_init */
	struct series w[S3_OP__COUNT];   /* the writer's */
	struct series r[S3_OP__COUNT];   /* the reader's, found on demand */
};

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static const char *op_label(int op)
{
	return op == S3_OP_NONE ? "unrouted" : s3_op_name(op);
}

/* The series of op in reg, found; with make, registered when absent
 * (one found is shared: a concurrent registration lost its race). */
static int get_series(struct gw_stats *st, int op, bool make, struct series *s)
{
	const char *name = op_label(op);
	const char *const *ll = METRICS_LABELS("op", name);
	if (!s->lat)
		s->lat = metrics_histogram_find(st->reg, LAT_NAME, ll);
	if (!s->lat && make)
		s->lat = metrics_histogram_new(st->reg, LAT_NAME, LAT_HELP, ll, st->bounds,
					       st->nbounds, 1e-6);
	for (int k = 0; k < 2; k++) {
		const char *const *el = METRICS_LABELS("op", name, "class", cls_name[k]);
		if (!s->err[k])
			s->err[k] = metrics_counter_find(st->reg, ERR_NAME, el);
		if (!s->err[k] && make)
			s->err[k] = metrics_counter_new(st->reg, ERR_NAME, ERR_HELP, el);
	}
	return s->lat && s->err[0] && s->err[1] ? 0 : -1;
}

struct gw_stats *gw_stats_new(struct metrics_registry *reg)
{
	struct gw_stats *st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	st->reg = reg;
	st->start_ms = mono_ms();
	st->bounds = metrics_latency_buckets_us(&st->nbounds);
	return st;
}

void gw_stats_free(struct gw_stats *st)
{
	free(st);
}

/* At the first observation: when another module registered the series
 * already (it times requests too, and feeds them), write nothing, or
 * every request would count twice; else register them and write. */
static void writer_init(struct gw_stats *st)
{
	st->w_state = W_OFF;
	if (metrics_histogram_find(st->reg, LAT_NAME, METRICS_LABELS("op", op_label(S3_OP_NONE))))
		return;
	for (int op = 0; op < S3_OP__COUNT; op++)
		if (get_series(st, op, true, &st->w[op]))
			return;   /* out of memory: no figures */
	st->w_state = W_ON;
}

void gw_stats_observe(struct gw_stats *st, int op, int status, uint64_t elapsed_us)
{
	if (!st)
		return;
	if (st->w_state == W_UNSET)
		writer_init(st);
	if (st->w_state != W_ON)
		return;
	if (op < 0 || op >= S3_OP__COUNT)
		op = S3_OP_NONE;
	metrics_histogram_observe(st->w[op].lat, elapsed_us);
	if (status >= 400)
		metrics_counter_inc(st->w[op].err[status >= 500]);
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

void gw_stats_json(struct gw_stats *st, struct jsonw *w)
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
		struct series *s = &st->r[op];
		get_series(st, op, false, s);
		if (!s->lat)
			continue;   /* not registered (yet): nothing to say */
		size_t nb = metrics_histogram_buckets(s->lat, counts, METRICS_MAX_BUCKETS + 1);
		if (nb != st->nbounds + 1)
			continue;   /* registered with other bounds: not ours to read */
		uint64_t total = 0;
		for (size_t i = 0; i < nb; i++)
			total += counts[i];
		if (!total)
			continue;
		/* The counters are read after the buckets and may hold a request
		 * the buckets do not have yet: never more errors than requests. */
		uint64_t e4 = s->err[0] ? metrics_counter_get(s->err[0]) : 0;
		uint64_t e5 = s->err[1] ? metrics_counter_get(s->err[1]) : 0;
		e4 = e4 < total ? e4 : total;
		e5 = e5 < total - e4 ? e5 : total - e4;
		jsonw_key(w, op_label(op));
		jsonw_obj_begin(w);
		jsonw_ku64(w, "requests", total);
		jsonw_ku64(w, "ok", total - e4 - e5);
		jsonw_ku64(w, "4xx", e4);
		jsonw_ku64(w, "5xx", e5);
		jsonw_ku64(w, "latency_count", total);
		jsonw_ku64(w, "latency_sum_us", metrics_histogram_sum(s->lat));
		jsonw_ku64(w, "p50_us", gw_stats_quantile(st->bounds, nb - 1, counts, 0.50));
		jsonw_ku64(w, "p90_us", gw_stats_quantile(st->bounds, nb - 1, counts, 0.90));
		jsonw_ku64(w, "p99_us", gw_stats_quantile(st->bounds, nb - 1, counts, 0.99));
		jsonw_key(w, "buckets");
		jsonw_arr_begin(w);
		for (size_t i = 0; i < nb; i++)
			jsonw_u64(w, counts[i]);
		jsonw_arr_end(w);
		jsonw_obj_end(w);
	}
	jsonw_obj_end(w);
}
