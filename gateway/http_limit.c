/*
 * http_limit.c — the per-address table behind http_limit.h: connection
 * counts and token buckets, fixed size, bounded probing, LRU eviction of
 * idle entries. Owns nothing but its table; knows no sockets or HTTP.
 *
 * Tokens are kept in thousandths so that refills at any rate and any
 * interval add up without drift that matters (truncation loses < 1/1000
 * of a token per request).
 */
#include "gateway/http_limit.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MILLI 1000u
#define MAX_REFILL_NS 1000000000000ull /* cap the interval so the product fits */

struct entry {
	uint8_t addr[16];
	bool used;
	uint32_t conns;
	uint64_t tokens_m;      /* thousandths of a token */
	uint64_t refill_ns;     /* when tokens_m was last brought up to date */
	uint64_t seen_ns;       /* last connection or request (for eviction) */
};

struct http_limit {
	struct http_limit_cfg cfg;
	uint64_t seed;
	struct http_limit_stats st;
	struct entry e[HTTP_LIMIT_SLOTS];
};

_Static_assert((HTTP_LIMIT_SLOTS & (HTTP_LIMIT_SLOTS - 1)) == 0, "slots: a power of two");

struct http_limit *http_limit_new(const struct http_limit_cfg *cfg, uint64_t seed)
{
	struct http_limit *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->cfg = *cfg;
	if (l->cfg.rate && !l->cfg.burst)
		l->cfg.burst = 2 * l->cfg.rate;
	if (!seed) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		seed = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)ts.tv_sec;
	}
	l->seed = seed | 1;
	return l;
}

void http_limit_free(struct http_limit *l)
{
	free(l);
}

/* A keyed mix of the address (not a MAC: enough that windows cannot be
 * aimed at without knowing the seed). */
static uint32_t hash(const struct http_limit *l, const uint8_t a[16])
{
	uint64_t w[2];
	memcpy(w, a, 16);
	uint64_t h = l->seed;
	for (int i = 0; i < 2; i++) {
		h ^= w[i];
		h *= 0x9E3779B97F4A7C15ull;
		h ^= h >> 29;
		h *= 0xBF58476D1CE4E5B9ull;
		h ^= h >> 32;
	}
	return (uint32_t)h;
}

static void bucket_fill(const struct http_limit *l, struct entry *e, uint64_t now_ns)
{
	if (now_ns <= e->refill_ns)
		return;
	uint64_t dt = now_ns - e->refill_ns;
	if (dt > MAX_REFILL_NS)
		dt = MAX_REFILL_NS;
	uint64_t add = dt * l->cfg.rate / 1000000u; /* ns * (tokens/s) -> thousandths */
	uint64_t cap = (uint64_t)l->cfg.burst * MILLI;
	e->tokens_m = e->tokens_m + add > cap ? cap : e->tokens_m + add;
	e->refill_ns = now_ns;
}

/* The entry for addr, made (evicting if need be) when absent. NULL: the
 * window is full of entries holding connections. */
static struct entry *find_or_add(struct http_limit *l, const uint8_t addr[16], uint64_t now_ns)
{
	uint32_t h = hash(l, addr);
	struct entry *free_e = NULL, *lru = NULL;
	for (uint32_t i = 0; i < HTTP_LIMIT_PROBE; i++) {
		struct entry *e = &l->e[(h + i) & (HTTP_LIMIT_SLOTS - 1)];
		if (!e->used) {
			if (!free_e)
				free_e = e;
			continue;
		}
		if (!memcmp(e->addr, addr, 16))
			return e;
		if (e->conns == 0 && (!lru || e->seen_ns < lru->seen_ns))
			lru = e;
	}
	struct entry *e = free_e;
	if (!e) {
		if (!lru)
			return NULL;
		e = lru;
		l->st.evictions++;
	} else {
		l->st.entries++;
	}
	memset(e, 0, sizeof(*e));
	memcpy(e->addr, addr, 16);
	e->used = true;
	e->tokens_m = (uint64_t)l->cfg.burst * MILLI;
	e->refill_ns = e->seen_ns = now_ns;
	return e;
}

bool http_limit_conn_open(struct http_limit *l, const uint8_t addr[16], uint64_t now_ns,
			  uint32_t *slot)
{
	*slot = HTTP_LIMIT_NONE;
	if (!l->cfg.max_conns && !l->cfg.rate)
		return true;
	struct entry *e = find_or_add(l, addr, now_ns);
	if (!e) {
		l->st.untracked++;
		return true;
	}
	e->seen_ns = now_ns;
	if (l->cfg.max_conns && e->conns >= l->cfg.max_conns) {
		l->st.conns_refused++;
		return false;
	}
	e->conns++;
	*slot = (uint32_t)(e - l->e);
	return true;
}

void http_limit_conn_close(struct http_limit *l, uint32_t slot)
{
	if (slot >= HTTP_LIMIT_SLOTS)
		return;
	struct entry *e = &l->e[slot];
	if (e->used && e->conns > 0)
		e->conns--;
}

bool http_limit_request(struct http_limit *l, uint32_t slot, uint64_t now_ns)
{
	if (!l->cfg.rate || slot >= HTTP_LIMIT_SLOTS)
		return true;
	struct entry *e = &l->e[slot];
	e->seen_ns = now_ns;
	bucket_fill(l, e, now_ns);
	if (e->tokens_m < MILLI) {
		l->st.requests_refused++;
		return false;
	}
	e->tokens_m -= MILLI;
	return true;
}

void http_limit_refund(struct http_limit *l, uint32_t slot)
{
	if (!l->cfg.rate || slot >= HTTP_LIMIT_SLOTS)
		return;
	struct entry *e = &l->e[slot];
	if (!e->used || !e->conns)
		return;
	uint64_t cap = (uint64_t)l->cfg.burst * MILLI;
	e->tokens_m = e->tokens_m + MILLI > cap ? cap : e->tokens_m + MILLI;
	l->st.refunds++;
}

void http_limit_stats(const struct http_limit *l, struct http_limit_stats *out)
{
	*out = l->st;
}
