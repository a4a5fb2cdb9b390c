/*
 * range_heat.c — a range group leader's per-range request counts and key
 * samples (meta/range_heat.h): a small table of ranges, each with two
 * windows (the current one and the last whole one) of a request count and
 * a reservoir sample (Vitter's algorithm R) of at most RANGE_HEAT_SAMPLE
 * keys, and the choice of the key that divides a sample's requests most
 * evenly.
 *
 * Owns its entries and their key copies. Not here: where requests are
 * noted (meta/group.c's answers, meta/service_read.c's reads), who reads the
 * figures (meta/node_range.c) and what they start (meta/node_move.c).
 */
#include "meta/range_heat.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct window {
	uint64_t start_ms;             /* 0: never started */
	uint64_t count;                /* requests noted in it */
	uint32_t n;                    /* keys in the sample */
	char *keys[RANGE_HEAT_SAMPLE];
};

struct entry {
	uint64_t id;
	uint64_t requests;             /* since the entry was made */
	uint64_t last_ms;              /* the last request noted */
	struct window cur, last;
};

struct range_heat {
	struct entry *v[RANGE_HEAT_RANGES];
	size_t n;
	uint64_t rng;                  /* xorshift64 state, never 0 */
	uint64_t untracked;
};

struct range_heat *range_heat_new(uint64_t seed)
{
	struct range_heat *h = calloc(1, sizeof(*h));
	if (h)
		h->rng = seed ? seed : 0x9e3779b97f4a7c15ull;
	return h;
}

static void window_clear(struct window *w)
{
	for (uint32_t i = 0; i < w->n; i++)
		free(w->keys[i]);
	w->n = 0;
	w->count = 0;
}

static void entry_free(struct entry *e)
{
	window_clear(&e->cur);
	window_clear(&e->last);
	free(e);
}

void range_heat_free(struct range_heat *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->n; i++)
		entry_free(h->v[i]);
	free(h);
}

static uint64_t next_rand(struct range_heat *h)
{
	uint64_t x = h->rng;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	h->rng = x;
	return x;
}

static struct entry *find(struct range_heat *h, uint64_t id)
{
	for (size_t i = 0; i < h->n; i++)
		if (h->v[i]->id == id)
			return h->v[i];
	return NULL;
}

/* A slot for a new entry: a free one, else the one idle longest when it
 * has been idle two windows at least (a range nobody asks for now). */
static struct entry *make(struct range_heat *h, uint64_t id, uint64_t now_ms)
{
	size_t at = h->n;
	if (h->n == RANGE_HEAT_RANGES) {
		at = 0;
		for (size_t i = 1; i < h->n; i++)
			if (h->v[i]->last_ms < h->v[at]->last_ms)
				at = i;
		if (now_ms - h->v[at]->last_ms < 2 * RANGE_HEAT_WINDOW_MS)
			return NULL;
	}
	struct entry *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->id = id;
	if (at < h->n)
		entry_free(h->v[at]);
	else
		h->n++;
	h->v[at] = e;
	return e;
}

/* Roll e's windows forward to now_ms: the current one becomes the last
 * when it has ended, and a window with no request in between leaves an
 * empty last one. */
static void roll(struct entry *e, uint64_t now_ms)
{
	if (e->cur.start_ms && now_ms - e->cur.start_ms < RANGE_HEAT_WINDOW_MS)
		return;
	window_clear(&e->last);
	if (e->cur.start_ms && now_ms - e->cur.start_ms < 2 * RANGE_HEAT_WINDOW_MS) {
		e->last = e->cur;   /* moves the key pointers */
		e->cur.n = 0;
		e->cur.count = 0;
		e->cur.start_ms += RANGE_HEAT_WINDOW_MS;
		return;
	}
	window_clear(&e->cur);
	e->last.start_ms = 0;
	e->cur.start_ms = now_ms;
}

static char *key_copy(const char *key)
{
	size_t len = strnlen(key, RANGE_HEAT_KEY_MAX);
	char *k = malloc(len + 1);
	if (k) {
		memcpy(k, key, len);
		k[len] = '\0';
	}
	return k;
}

void range_heat_note(struct range_heat *h, uint64_t range_id, const char *key, uint64_t now_ms)
{
	struct entry *e = find(h, range_id);
	if (!e && !(e = make(h, range_id, now_ms))) {
		h->untracked++;
		return;
	}
	roll(e, now_ms);
	e->requests++;
	e->last_ms = now_ms;
	struct window *w = &e->cur;
	w->count++;
	if (w->n < RANGE_HEAT_SAMPLE) {
		char *k = key_copy(key ? key : "");
		if (k)
			w->keys[w->n++] = k;
		return;
	}
	uint64_t j = next_rand(h) % w->count;   /* keep it with RANGE_HEAT_SAMPLE/count */
	if (j < RANGE_HEAT_SAMPLE) {
		char *k = key_copy(key ? key : "");
		if (k) {
			free(w->keys[j]);
			w->keys[j] = k;
		}
	}
}

bool range_heat_get(struct range_heat *h, uint64_t range_id, const char *start, uint64_t now_ms,
		    struct range_heat_figures *out)
{
	memset(out, 0, sizeof(*out));
	struct entry *e = find(h, range_id);
	if (!e)
		return false;
	roll(e, now_ms);
	out->requests = e->requests;
	out->rps = e->last.start_ms ? e->last.count * 1000 / RANGE_HEAT_WINDOW_MS : 0;
	/* The sample: the last whole window's and the current one's keys. */
	const char *keys[2 * RANGE_HEAT_SAMPLE];
	size_t n = 0;
	for (uint32_t i = 0; i < e->last.n; i++)
		keys[n++] = e->last.keys[i];
	for (uint32_t i = 0; i < e->cur.n; i++)
		keys[n++] = e->cur.keys[i];
	range_heat_split_key(keys, n, start ? start : "", out->split_key, sizeof(out->split_key));
	return true;
}

void range_heat_keep(struct range_heat *h, const uint64_t *ids, size_t n)
{
	for (size_t i = 0; i < h->n;) {
		bool keep = false;
		for (size_t k = 0; k < n && !keep; k++)
			keep = ids[k] == h->v[i]->id;
		if (keep) {
			i++;
			continue;
		}
		entry_free(h->v[i]);
		h->v[i] = h->v[--h->n];
	}
}

uint64_t range_heat_untracked(const struct range_heat *h)
{
	return h->untracked;
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int range_heat_split_key(const char **keys, size_t n, const char *start, char *out, size_t cap)
{
	if (cap)
		out[0] = '\0';
	if (n < RANGE_HEAT_MIN_SAMPLE)
		return -ENOENT;
	qsort(keys, n, sizeof(*keys), cmp_key);
	/* Splitting at keys[i] (its first occurrence) leaves i requests below. */
	size_t best = 0, best_gap = n + 1;
	for (size_t i = 1; i < n; i++) {
		if (!strcmp(keys[i], keys[i - 1]) || strcmp(keys[i], start) <= 0 ||
		    strlen(keys[i]) >= cap)
			continue;
		size_t gap = 2 * i > n ? 2 * i - n : n - 2 * i;
		if (gap < best_gap) {
			best_gap = gap;
			best = i;
		}
	}
	if (!best)
		return -ENOENT;
	size_t light = best < n - best ? best : n - best;
	if (light * 100 < (size_t)RANGE_HEAT_MIN_SIDE_PCT * n)
		return -ENOENT;
	memcpy(out, keys[best], strlen(keys[best]) + 1);
	return 0;
}
