/*
 * range.c — a bucket's range table on the client side and the ordered
 * walk of a listing over its ranges (contracts in range.h). Pure: memory
 * in, memory out.
 */
#include "meta/range.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void meta_range_table_clear(struct meta_range_table *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->v[i].start);
		free(t->v[i].end);
	}
	free(t->v);
	t->v = NULL;
	t->n = 0;
	t->bucket[0] = 0;
}

static int by_start(const void *a, const void *b)
{
	return strcmp(((const struct meta_range_ent *)a)->start,
		      ((const struct meta_range_ent *)b)->start);
}

int meta_range_table_set(struct meta_range_table *t, const char *bucket,
			 Iolake__Meta__RangeDesc *const *v, size_t n)
{
	meta_range_table_clear(t);
	if (strlen(bucket) >= sizeof(t->bucket))
		return -EINVAL;
	snprintf(t->bucket, sizeof(t->bucket), "%s", bucket);
	if (n == 0)
		return 0;
	t->v = calloc(n, sizeof(*t->v));
	if (!t->v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct meta_range_ent *e = &t->v[i];
		if (!v[i] || strcmp(v[i]->bucket, bucket) || !v[i]->id) {
			t->n = i;
			meta_range_table_clear(t);
			return -EINVAL;
		}
		e->id = v[i]->id;
		e->group = v[i]->group;
		e->moving = v[i]->move_phase == IOLAKE__META__RANGE_MOVE_PHASE__MOVE_COPY;
		e->start = strdup(v[i]->start);
		e->end = strdup(v[i]->end);
		t->n = i + 1;
		if (!e->start || !e->end) {
			meta_range_table_clear(t);
			return -ENOMEM;
		}
	}
	qsort(t->v, n, sizeof(*t->v), by_start);
	/* A partition: "" first, each end the next start, "" last. */
	bool ok = t->v[0].start[0] == 0 && t->v[n - 1].end[0] == 0;
	for (size_t i = 0; ok && i + 1 < n; i++)
		ok = strcmp(t->v[i].end, t->v[i + 1].start) == 0;
	if (!ok) {
		meta_range_table_clear(t);
		snprintf(t->bucket, sizeof(t->bucket), "%s", bucket);
		return -EINVAL;
	}
	return 0;
}

size_t meta_range_find(const struct meta_range_table *t, const char *key)
{
	/* The last range whose start <= key. */
	size_t lo = 0, hi = t->n;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(t->v[mid].start, key) <= 0)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

bool meta_range_may_hold_prefix(const struct meta_range_table *t, size_t i, const char *prefix)
{
	const char *s = t->v[i].start;
	size_t pn = strlen(prefix);
	/* Keys with the prefix are >= prefix and below prefix's successor:
	 * a range starting at or below such a key, or inside the prefix. */
	return strcmp(s, prefix) <= 0 || strncmp(s, prefix, pn) == 0;
}

void meta_range_walk_init(struct meta_range_walk *w, unsigned max, const char *marker)
{
	memset(w, 0, sizeof(*w));
	w->max = max;
	size_t n = marker ? strlen(marker) : 0;
	if (n > META_KEY_MAX)
		n = META_KEY_MAX;
	memcpy(w->marker, marker ? marker : "", n);
	w->marker[n] = 0;
	w->marker_len = n;
	w->done = max == 0;
}

static int cmp_len(const char *a, size_t an, const char *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);
	if (c)
		return c;
	return an < bn ? -1 : an > bn;
}

size_t meta_range_walk_take(struct meta_range_walk *w, const char *const *names,
			    const size_t *lens, size_t n, bool page_truncated, bool more_ranges,
			    bool *take)
{
	size_t took = 0;
	bool full = false;
	for (size_t i = 0; i < n; i++) {
		take[i] = false;
		if (w->done || w->n >= w->max) {
			full = true;
			continue;
		}
		if ((w->n > 0 || w->marker_len > 0) &&
		    cmp_len(names[i], lens[i], w->marker, w->marker_len) <= 0)
			continue;   /* at or below the last entry: listed already */
		if (lens[i] > META_KEY_MAX)
			continue;
		take[i] = true;
		took++;
		w->n++;
		memcpy(w->marker, names[i], lens[i]);
		w->marker[lens[i]] = 0;
		w->marker_len = lens[i];
	}
	if (w->done)
		return took;
	if (full || page_truncated) {
		w->done = true;
		w->truncated = true;
	} else if (w->n >= w->max) {
		w->done = true;
		w->truncated = more_ranges;
	} else if (!more_ranges) {
		w->done = true;
		w->truncated = false;
	}
	return took;
}
