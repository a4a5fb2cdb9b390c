/*
 * metrics.c — the registry behind metrics.h and its text rendering.
 *
 * Owns: a list of families (one per metric name, in registration order),
 * each a list of series (one per label set), each pointing at its metric.
 * The lists only grow, under reg->mu; metrics are separate 64-byte-aligned
 * allocations so two hot counters never share a cache line and a pointer
 * handed out stays put until metrics_registry_free.
 *
 * Updates never take reg->mu: they touch only the metric's atomics, with
 * relaxed ordering, because a scrape needs each number to be a value it
 * had, not a snapshot consistent across metrics. Rendering takes reg->mu
 * only to walk the lists (and so that registration can run concurrently).
 *
 * Does not: expire series, support summaries, or parse the text format.
 */
#include "common/metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kind { KIND_COUNTER, KIND_GAUGE, KIND_HISTOGRAM };
static const char *const kind_names[] = { "counter", "gauge", "histogram" };

struct metrics_histogram {
	atomic_uint_fast64_t sum;   /* of observations, base unit */
	double scale;               /* base unit -> exposed unit */
	size_t nbounds;
	uint64_t bounds[METRICS_MAX_BUCKETS];
	/* buckets[i] counts v <= bounds[i] and > bounds[i-1] (not cumulative;
	 * rendering accumulates); buckets[nbounds] counts v > every bound. */
	atomic_uint_fast64_t buckets[METRICS_MAX_BUCKETS + 1];
};

struct series {
	struct series *next;
	char *labels;         /* rendered and escaped: a="1",b="x" ("" for none) */
	void *metric;         /* struct metrics_counter/gauge/histogram */
	metrics_gauge_fn fn;  /* callback gauge: value at render time */
	void *arg;
};

struct family {
	struct family *next;
	char *name;
	char *help;           /* NULL: no # HELP line */
	enum kind kind;
	struct series *head, *tail;
};

struct metrics_registry {
	pthread_mutex_t mu;   /* guards the lists below, not metric values */
	struct family *head, *tail;
};

/* ------------------------------------------------------------ text buffer */

struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void sb_grow(struct sbuf *b, size_t more)
{
	if (b->oom || b->len + more + 1 <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 1024;
	while (cap < b->len + more + 1)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (!p) {
		b->oom = true;
		return;
	}
	b->p = p;
	b->cap = cap;
}

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
	sb_grow(b, n);
	if (b->oom)
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sb_str(struct sbuf *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	char tmp[128];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		sb_add(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* s with '\\' and newline escaped, and '"' too when quote (label values);
 * HELP text escapes only the first two. */
static void sb_escaped(struct sbuf *b, const char *s, bool quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			sb_str(b, "\\\\");
		else if (*s == '\n')
			sb_str(b, "\\n");
		else if (*s == '"' && quote)
			sb_str(b, "\\\"");
		else
			sb_add(b, s, 1);
	}
}

/* The shortest text that reads back as v, as Go's FormatFloat(v, 'g', -1)
 * mostly does (Prometheus reads either). */
static void sb_double(struct sbuf *b, double v)
{
	if (isnan(v)) {
		sb_str(b, "NaN");
		return;
	}
	if (isinf(v)) {
		sb_str(b, v > 0 ? "+Inf" : "-Inf");
		return;
	}
	char tmp[32];
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*g", prec, v);
		if (strtod(tmp, NULL) == v)
			break;
	}
	/* An exponent here means the digits end left of the point: a whole
	 * number. Below 1e15 it reads better in full ("10", not "1e+01"). */
	if (strchr(tmp, 'e') && fabs(v) >= 1 && fabs(v) < 1e15)
		snprintf(tmp, sizeof(tmp), "%.0f", v);
	sb_str(b, tmp);
}

/* v (base unit) times scale, as exactly as doubles allow: for scale 1e-6
 * divide by 1e6 (exact) rather than multiply by 1e-6 (inexact), so 50us
 * renders as 5e-05, not 5.0000000000000002e-05. */
static void sb_scaled(struct sbuf *b, uint64_t v, double scale)
{
	if (scale == 1.0) {
		sb_printf(b, "%" PRIu64, v);
		return;
	}
	double inv = nearbyint(1.0 / scale);
	if (scale < 1.0 && fabs(inv * scale - 1.0) < 1e-12)
		sb_double(b, (double)v / inv);
	else
		sb_double(b, (double)v * scale);
}

/* ------------------------------------------------------------ registration */

static bool valid_name(const char *s, bool colon)
{
	if (!s || !*s)
		return false;
	for (const char *p = s; *p; p++) {
		bool alpha = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
			     (colon && *p == ':');
		if (!alpha && !(p > s && *p >= '0' && *p <= '9'))
			return false;
	}
	return true;
}

/* labels rendered as a="1",b="2" into a new string, or NULL (errno). */
static char *render_labels(const char *const *labels, bool histogram)
{
	struct sbuf b = { 0 };
	sb_str(&b, "");
	for (size_t i = 0; labels && labels[i]; i += 2) {
		const char *k = labels[i], *v = labels[i + 1];
		if (!v || !valid_name(k, false) || strncmp(k, "__", 2) == 0 ||
		    (histogram && strcmp(k, "le") == 0)) {
			free(b.p);
			errno = EINVAL;
			return NULL;
		}
		if (i)
			sb_str(&b, ",");
		sb_str(&b, k);
		sb_str(&b, "=\"");
		sb_escaped(&b, v, true);
		sb_str(&b, "\"");
	}
	if (b.oom) {
		free(b.p);
		errno = ENOMEM;
		return NULL;
	}
	return b.p;
}

/* Link metric into reg under name/labels. On failure the caller still owns
 * metric; returns 0 or -errno. */
static int add_series(struct metrics_registry *reg, const char *name, const char *help,
		      const char *const *labels, enum kind kind, void *metric,
		      metrics_gauge_fn fn, void *arg)
{
	if (!valid_name(name, true))
		return -EINVAL;
	struct series *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->labels = render_labels(labels, kind == KIND_HISTOGRAM);
	if (!s->labels) {
		int rc = -errno;
		free(s);
		return rc;
	}
	s->metric = metric;
	s->fn = fn;
	s->arg = arg;

	int rc = 0;
	pthread_mutex_lock(&reg->mu);
	struct family *f = reg->head;
	while (f && strcmp(f->name, name) != 0)
		f = f->next;
	if (f && f->kind != kind) {
		rc = -EINVAL;
		goto unlock;
	}
	for (struct series *o = f ? f->head : NULL; o; o = o->next) {
		if (strcmp(o->labels, s->labels) == 0) {
			rc = -EEXIST;
			goto unlock;
		}
	}
	if (!f) {
		f = calloc(1, sizeof(*f));
		if (!f || !(f->name = strdup(name)) || (help && !(f->help = strdup(help)))) {
			if (f)
				free(f->name);
			free(f);
			rc = -ENOMEM;
			goto unlock;
		}
		f->kind = kind;
		if (reg->tail)
			reg->tail->next = f;
		else
			reg->head = f;
		reg->tail = f;
	}
	if (f->tail)
		f->tail->next = s;
	else
		f->head = s;
	f->tail = s;
unlock:
	pthread_mutex_unlock(&reg->mu);
	if (rc) {
		free(s->labels);
		free(s);
	}
	return rc;
}

/* A zeroed, 64-byte-aligned metric of size bytes. */
static void *metric_alloc(size_t size)
{
	size = (size + 63) & ~(size_t)63;
	void *m = aligned_alloc(64, size);
	if (m)
		memset(m, 0, size);
	return m;
}

/* add_series for a freshly allocated metric: frees it on failure. */
static void *register_metric(struct metrics_registry *reg, const char *name, const char *help,
			     const char *const *labels, enum kind kind, void *metric,
			     metrics_gauge_fn fn, void *arg)
{
	if (!metric) {
		errno = ENOMEM;
		return NULL;
	}
	int rc = add_series(reg, name, help, labels, kind, metric, fn, arg);
	if (rc) {
		free(metric);
		errno = -rc;
		return NULL;
	}
	return metric;
}

/* The metric of kind under name and exactly labels, or NULL. */
static void *find_metric(struct metrics_registry *reg, const char *name,
			 const char *const *labels, enum kind kind)
{
	char *want = render_labels(labels, kind == KIND_HISTOGRAM);
	if (!want)
		return NULL;
	void *m = NULL;
	pthread_mutex_lock(&reg->mu);
	struct family *f = reg->head;
	while (f && strcmp(f->name, name) != 0)
		f = f->next;
	for (struct series *o = f && f->kind == kind ? f->head : NULL; o && !m; o = o->next)
		if (strcmp(o->labels, want) == 0)
			m = o->metric;
	pthread_mutex_unlock(&reg->mu);
	free(want);
	return m;
}

struct metrics_counter *metrics_counter_find(struct metrics_registry *reg, const char *name,
					     const char *const *labels)
{
	return find_metric(reg, name, labels, KIND_COUNTER);
}

struct metrics_histogram *metrics_histogram_find(struct metrics_registry *reg,
						 const char *name, const char *const *labels)
{
	return find_metric(reg, name, labels, KIND_HISTOGRAM);
}

struct metrics_counter *metrics_counter_new(struct metrics_registry *reg, const char *name,
					    const char *help, const char *const *labels)
{
	return register_metric(reg, name, help, labels, KIND_COUNTER,
			       metric_alloc(sizeof(struct metrics_counter)), NULL, NULL);
}

struct metrics_gauge *metrics_gauge_new(struct metrics_registry *reg, const char *name,
					const char *help, const char *const *labels)
{
	return register_metric(reg, name, help, labels, KIND_GAUGE,
			       metric_alloc(sizeof(struct metrics_gauge)), NULL, NULL);
}

struct metrics_gauge *metrics_gauge_fn_new(struct metrics_registry *reg, const char *name,
					   const char *help, const char *const *labels,
					   metrics_gauge_fn fn, void *arg)
{
	if (!fn) {
		errno = EINVAL;
		return NULL;
	}
	return register_metric(reg, name, help, labels, KIND_GAUGE,
			       metric_alloc(sizeof(struct metrics_gauge)), fn, arg);
}

struct metrics_histogram *metrics_histogram_new(struct metrics_registry *reg,
						const char *name, const char *help,
						const char *const *labels,
						const uint64_t *bounds, size_t nbounds,
						double scale)
{
	bool ok = bounds && nbounds >= 1 && nbounds <= METRICS_MAX_BUCKETS &&
		  scale > 0 && isfinite(scale);
	for (size_t i = 1; ok && i < nbounds; i++)
		ok = bounds[i] > bounds[i - 1];
	if (!ok) {
		errno = EINVAL;
		return NULL;
	}
	struct metrics_histogram *h = metric_alloc(sizeof(*h));
	if (h) {
		h->scale = scale;
		h->nbounds = nbounds;
		memcpy(h->bounds, bounds, nbounds * sizeof(bounds[0]));
	}
	return register_metric(reg, name, help, labels, KIND_HISTOGRAM, h, NULL, NULL);
}

/* Several loops of one process (the gateway's, issue 19) register the
 * same series: the second and later get the first's metric. A metric of
 * the same name under another kind stays an error (EINVAL). */
struct metrics_counter *metrics_counter_shared(struct metrics_registry *reg, const char *name,
					       const char *help, const char *const *labels)
{
	struct metrics_counter *c = metrics_counter_new(reg, name, help, labels);
	if (!c && errno == EEXIST)
		c = metrics_counter_find(reg, name, labels);
	return c;
}

struct metrics_histogram *metrics_histogram_shared(struct metrics_registry *reg,
						   const char *name, const char *help,
						   const char *const *labels,
						   const uint64_t *bounds, size_t nbounds,
						   double scale)
{
	struct metrics_histogram *h =
		metrics_histogram_new(reg, name, help, labels, bounds, nbounds, scale);
	if (!h && errno == EEXIST)
		h = metrics_histogram_find(reg, name, labels);
	return h;
}

/* ------------------------------------------------------------ histograms */

void metrics_histogram_observe(struct metrics_histogram *h, uint64_t v)
{
	size_t lo = 0, hi = h->nbounds; /* first bound >= v, or nbounds */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (h->bounds[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	atomic_fetch_add_explicit(&h->buckets[lo], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum, v, memory_order_relaxed);
}

uint64_t metrics_histogram_count(const struct metrics_histogram *h)
{
	uint64_t n = 0;
	for (size_t i = 0; i <= h->nbounds; i++)
		n += atomic_load_explicit(&h->buckets[i], memory_order_relaxed);
	return n;
}

uint64_t metrics_histogram_sum(const struct metrics_histogram *h)
{
	return atomic_load_explicit(&h->sum, memory_order_relaxed);
}

size_t metrics_histogram_buckets(const struct metrics_histogram *h, uint64_t *counts,
				 size_t max)
{
	for (size_t i = 0; i <= h->nbounds && i < max; i++)
		counts[i] = atomic_load_explicit(&h->buckets[i], memory_order_relaxed);
	return h->nbounds + 1;
}

const uint64_t *metrics_latency_buckets_us(size_t *n)
{
	static const uint64_t b[] = {
		50, 100, 250, 500,
		1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
		1000000, 2500000, 5000000, 10000000,
	};
	*n = sizeof(b) / sizeof(b[0]);
	return b;
}

/* ------------------------------------------------------------ rendering */

/* name+suffix, then {labels} when there are any, then a space. */
static void sb_sample(struct sbuf *b, const char *name, const char *suffix, const char *labels)
{
	sb_str(b, name);
	sb_str(b, suffix);
	if (*labels) {
		sb_str(b, "{");
		sb_str(b, labels);
		sb_str(b, "}");
	}
	sb_str(b, " ");
}

static void render_histogram(struct sbuf *b, const char *name, const struct series *s)
{
	const struct metrics_histogram *h = s->metric;
	uint64_t cum = 0;
	for (size_t i = 0; i <= h->nbounds; i++) {
		cum += atomic_load_explicit(&h->buckets[i], memory_order_relaxed);
		sb_str(b, name);
		sb_str(b, "_bucket{");
		if (*s->labels) {
			sb_str(b, s->labels);
			sb_str(b, ",");
		}
		sb_str(b, "le=\"");
		if (i < h->nbounds)
			sb_scaled(b, h->bounds[i], h->scale);
		else
			sb_str(b, "+Inf");
		sb_printf(b, "\"} %" PRIu64 "\n", cum);
	}
	sb_sample(b, name, "_sum", s->labels);
	sb_scaled(b, atomic_load_explicit(&h->sum, memory_order_relaxed), h->scale);
	sb_str(b, "\n");
	/* the +Inf bucket's own reading, so the two always agree */
	sb_sample(b, name, "_count", s->labels);
	sb_printf(b, "%" PRIu64 "\n", cum);
}

int metrics_render(struct metrics_registry *reg, char **out, size_t *len)
{
	struct sbuf b = { 0 };
	sb_str(&b, "");
	pthread_mutex_lock(&reg->mu);
	for (const struct family *f = reg->head; f && !b.oom; f = f->next) {
		if (f->help) {
			sb_printf(&b, "# HELP %s ", f->name);
			sb_escaped(&b, f->help, false);
			sb_str(&b, "\n");
		}
		sb_printf(&b, "# TYPE %s %s\n", f->name, kind_names[f->kind]);
		for (const struct series *s = f->head; s; s = s->next) {
			if (f->kind == KIND_HISTOGRAM) {
				render_histogram(&b, f->name, s);
				continue;
			}
			sb_sample(&b, f->name, "", s->labels);
			if (s->fn)
				sb_double(&b, s->fn(s->arg));
			else if (f->kind == KIND_COUNTER)
				sb_printf(&b, "%" PRIu64, metrics_counter_get(s->metric));
			else
				sb_printf(&b, "%" PRId64, metrics_gauge_get(s->metric));
			sb_str(&b, "\n");
		}
	}
	pthread_mutex_unlock(&reg->mu);
	if (b.oom) {
		free(b.p);
		return -ENOMEM;
	}
	*out = b.p;
	*len = b.len;
	return 0;
}

/* ------------------------------------------------------------ lifetime */

struct metrics_registry *metrics_registry_new(void)
{
	struct metrics_registry *reg = calloc(1, sizeof(*reg));
	if (!reg)
		return NULL;
	if (pthread_mutex_init(&reg->mu, NULL)) {
		free(reg);
		return NULL;
	}
	return reg;
}

void metrics_registry_free(struct metrics_registry *reg)
{
	if (!reg)
		return;
	struct family *f = reg->head;
	while (f) {
		struct family *fnext = f->next;
		struct series *s = f->head;
		while (s) {
			struct series *snext = s->next;
			free(s->metric);
			free(s->labels);
			free(s);
			s = snext;
		}
		free(f->name);
		free(f->help);
		free(f);
		f = fnext;
	}
	pthread_mutex_destroy(&reg->mu);
	free(reg);
}
