/*
 * metrics.h — a Prometheus metrics registry: counters, gauges, histograms,
 * rendered as text exposition format 0.0.4 for /metrics.
 *
 *   struct metrics_registry *reg = metrics_registry_new();
 *   struct metrics_counter *puts = metrics_counter_new(reg,
 *           "iolake_rpc_requests_total", "RPC requests handled.",
 *           METRICS_LABELS("osd", "3", "method", "PutShard"));
 *   size_t nb;
 *   const uint64_t *b = metrics_latency_buckets_us(&nb);
 *   struct metrics_histogram *lat = metrics_histogram_new(reg,
 *           "iolake_rpc_latency_seconds", "RPC latency.", NULL, b, nb, 1e-6);
 *   metrics_counter_inc(puts);
 *   metrics_histogram_observe(lat, elapsed_us);
 *
 * Threads: registration and rendering take the registry's mutex (they are
 * rare); updates (add, set, observe) are lock-free relaxed atomics on the
 * metric itself and may run on any thread, concurrently with rendering.
 * A metric pointer stays valid until metrics_registry_free; metrics are
 * never unregistered.
 *
 * Series: metrics registered under one name form a family, rendered under
 * one # HELP/# TYPE block (help and type of the first registration). Each
 * series has a constant label set, given as name/value pairs; values may
 * hold any bytes and are escaped when rendered. A name is not checked
 * against another family's _bucket/_sum/_count samples: don't register
 * "x_count" next to a histogram "x".
 *
 * Histograms count integer observations in a base unit the caller picks
 * (microseconds, bytes): buckets and the sum are exact 64-bit integers, so
 * an observation is two atomic adds and no CAS loop. `scale` converts to
 * the exposed unit at render time (1e-6 turns microseconds into the
 * seconds Prometheus expects). _count is the sum of the buckets read in
 * one pass, so it always equals the +Inf bucket; _sum is read apart and
 * may lag them by in-flight observations.
 */
#ifndef COMMON_METRICS_H
#define COMMON_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define METRICS_MAX_BUCKETS 64 /* finite bounds of one histogram */

struct metrics_registry;
struct metrics_counter;
struct metrics_gauge;
struct metrics_histogram;

/* A label set: names and values alternating, NULL-terminated. NULL (no
 * labels) is also accepted wherever a label set is. */
#define METRICS_LABELS(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* The value of a callback gauge, computed at render time under the
 * registry's mutex: it must not register metrics or render. */
typedef double (*metrics_gauge_fn)(void *arg);

/* A new empty registry, or NULL when out of memory. */
struct metrics_registry *metrics_registry_new(void);

/* Free the registry and every metric in it. No update or render may run
 * concurrently or later. NULL is ignored. */
void metrics_registry_free(struct metrics_registry *reg);

/*
 * Register a metric. name must match [a-zA-Z_:][a-zA-Z0-9_:]*; label names
 * [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__" ("le" is also reserved
 * for histograms). help is copied; may be NULL. Returns the metric, or
 * NULL with errno set: EINVAL (bad name or labels, odd label list, the
 * name already used by another type, bad buckets), EEXIST (same name and
 * labels already registered), ENOMEM.
 */
struct metrics_counter *metrics_counter_new(struct metrics_registry *reg,
					    const char *name, const char *help,
					    const char *const *labels);
struct metrics_gauge *metrics_gauge_new(struct metrics_registry *reg,
					const char *name, const char *help,
					const char *const *labels);
/* A gauge whose value is fn(arg) at each render; arg must stay valid as
 * long as the registry may render. Set/add on it have no effect. */
struct metrics_gauge *metrics_gauge_fn_new(struct metrics_registry *reg,
					   const char *name, const char *help,
					   const char *const *labels,
					   metrics_gauge_fn fn, void *arg);
/* bounds: nbounds (1..METRICS_MAX_BUCKETS) strictly increasing finite
 * upper bounds in the base unit (copied); the +Inf bucket is implicit.
 * scale (> 0) multiplies bounds and sum when rendering. */
struct metrics_histogram *metrics_histogram_new(struct metrics_registry *reg,
						const char *name, const char *help,
						const char *const *labels,
						const uint64_t *bounds, size_t nbounds,
						double scale);

/* The counter or histogram registered under name with exactly these
 * labels (same names, values and order), or NULL: for a reader of
 * metrics someone else registered. Takes the registry's mutex. */
struct metrics_counter *metrics_counter_find(struct metrics_registry *reg, const char *name,
					     const char *const *labels);
struct metrics_histogram *metrics_histogram_find(struct metrics_registry *reg,
						 const char *name, const char *const *labels);

/* As metrics_counter_new / metrics_histogram_new, but a series already
 * registered under name with exactly these labels is returned instead of
 * failing with EEXIST: for code that runs once per loop of one process
 * (the gateway's loops share one set of counters; updates are atomic).
 * NULL with errno as the _new functions otherwise. */
struct metrics_counter *metrics_counter_shared(struct metrics_registry *reg, const char *name,
					       const char *help, const char *const *labels);
struct metrics_histogram *metrics_histogram_shared(struct metrics_registry *reg,
						   const char *name, const char *help,
						   const char *const *labels,
						   const uint64_t *bounds, size_t nbounds,
						   double scale);

/* The metric objects are public so the updates below inline to one atomic
 * instruction; treat the fields as private. */
struct metrics_counter {
	_Alignas(64) atomic_uint_fast64_t value;
};
struct metrics_gauge {
	_Alignas(64) atomic_int_fast64_t value;
};

static inline void metrics_counter_add(struct metrics_counter *c, uint64_t n)
{
	atomic_fetch_add_explicit(&c->value, n, memory_order_relaxed);
}
static inline void metrics_counter_inc(struct metrics_counter *c)
{
	metrics_counter_add(c, 1);
}
static inline uint64_t metrics_counter_get(const struct metrics_counter *c)
{
	return atomic_load_explicit(&c->value, memory_order_relaxed);
}

static inline void metrics_gauge_set(struct metrics_gauge *g, int64_t v)
{
	atomic_store_explicit(&g->value, v, memory_order_relaxed);
}
static inline void metrics_gauge_add(struct metrics_gauge *g, int64_t d)
{
	atomic_fetch_add_explicit(&g->value, d, memory_order_relaxed);
}
static inline int64_t metrics_gauge_get(const struct metrics_gauge *g)
{
	return atomic_load_explicit(&g->value, memory_order_relaxed);
}

/* Count one observation of v (base unit): a binary search of the bounds
 * and two relaxed atomic adds. Any thread. */
void metrics_histogram_observe(struct metrics_histogram *h, uint64_t v);

/* Observations so far (sum of all buckets) and their sum, in base units. */
uint64_t metrics_histogram_count(const struct metrics_histogram *h);
uint64_t metrics_histogram_sum(const struct metrics_histogram *h);
/* The bucket counts, not cumulative: counts[i] observations <= bound i
 * and > bound i-1, counts[nbounds] those above every bound. Writes at
 * most max entries; returns nbounds + 1. Each read is relaxed: a
 * concurrent observe may land in one bucket and not yet in the sum. */
size_t metrics_histogram_buckets(const struct metrics_histogram *h, uint64_t *counts,
				 size_t max);

/* Render every metric, in registration order of families and, within a
 * family, of series, as Prometheus text format 0.0.4 (Content-Type
 * "text/plain; version=0.0.4"). On success *out is a malloc'd,
 * NUL-terminated buffer the caller frees, *len its length without the NUL;
 * returns 0, or -ENOMEM (*out untouched). */
int metrics_render(struct metrics_registry *reg, char **out, size_t *len);

/* Standard latency bounds in microseconds, 50us .. 10s in 1-2.5-5 steps
 * (17 bounds): use with scale 1e-6 for *_seconds histograms. Static;
 * *n gets the count. */
const uint64_t *metrics_latency_buckets_us(size_t *n);

#endif
