/*
 * gw_bcache.c — bucket records cached per gateway loop (contract and the
 * argument for its safety in gw_bcache.h).
 *
 * Owns each entry's packed record. Decides nothing about access: callers
 * authorize on what it returns and commit with its digest.
 *
 * Thread: one loop's; no locking.
 */
#include "gateway/gw_bcache.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct slot {
	char *name;          /* NULL: empty */
	uint8_t *packed;     /* the record as GetBucket answered it; NULL: absent */
	size_t len;
	uint64_t digest;
	uint64_t at_ms;      /* when it was read */
	uint64_t gen;        /* absent: created_gen when meta said so */
};

/* Moved by every CreateBucket this process submits (gw_bcache.h). */
static atomic_uint_fast64_t created_gen;

struct gw_bcache {
	struct slot *slots;
	size_t mask;
	uint64_t ttl_ms;
	struct metrics_counter *hits, *misses, *stale, *absent_hits;
};

struct gw_bcache *gw_bcache_new(size_t slots, uint64_t ttl_ms, struct metrics_registry *reg)
{
	if (!slots || (slots & (slots - 1)))
		return NULL;
	struct gw_bcache *c = calloc(1, sizeof(*c));
	if (!c || !(c->slots = calloc(slots, sizeof(*c->slots)))) {
		free(c);
		return NULL;
	}
	c->mask = slots - 1;
	c->ttl_ms = ttl_ms;
	if (reg) {
		/* Registered once per registry: a second loop's cache counts
		 * into the first's counters (EEXIST: find them). */
		static const char *const names[4][2] = {
			{ "iolake_gw_bucket_cache_hits_total",
			  "PUT gates answered from the bucket cache (no GetBucket)" },
			{ "iolake_gw_bucket_cache_misses_total",
			  "PUT gates that read the bucket from meta" },
			{ "iolake_gw_bucket_cache_stale_total",
			  "PUT commits refused because the bucket changed (read again)" },
			{ "iolake_gw_bucket_cache_absent_hits_total",
			  "anonymous requests answered NoSuchBucket from the cache (no meta read)" },
		};
		struct metrics_counter **m[4] = { &c->hits, &c->misses, &c->stale, &c->absent_hits };
		for (int i = 0; i < 4; i++) {
			*m[i] = metrics_counter_new(reg, names[i][0], names[i][1], NULL);
			if (!*m[i])
				*m[i] = metrics_counter_find(reg, names[i][0], NULL);
		}
	}
	return c;
}

static void slot_clear(struct slot *s)
{
	free(s->name);
	free(s->packed);
	memset(s, 0, sizeof(*s));
}

void gw_bcache_free(struct gw_bcache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i <= c->mask; i++)
		slot_clear(&c->slots[i]);
	free(c->slots);
	free(c);
}

static struct slot *slot_of(struct gw_bcache *c, const char *name)
{
	uint64_t h = 1469598103934665603ull;   /* FNV-1a */
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return &c->slots[h & c->mask];
}

static void count(struct metrics_counter *m)
{
	if (m)
		metrics_counter_inc(m);
}

bool gw_bcache_cacheable(const Iolake__Meta__Bucket *b, uint64_t digest)
{
	return b && digest && b->name && b->usage && !b->quota && !b->owner_quota;
}

Iolake__Meta__Bucket *gw_bcache_get(struct gw_bcache *c, const char *name, uint64_t now_ms,
				    uint64_t *digest)
{
	if (!c)
		return NULL;
	struct slot *s = slot_of(c, name);
	if (!s->name || !s->packed || strcmp(s->name, name) || now_ms - s->at_ms >= c->ttl_ms) {
		count(c->misses);
		return NULL;
	}
	Iolake__Meta__Bucket *b = iolake__meta__bucket__unpack(NULL, s->len, s->packed);
	if (!b) {
		slot_clear(s);
		count(c->misses);
		return NULL;
	}
	*digest = s->digest;
	count(c->hits);
	return b;
}

void gw_bcache_put(struct gw_bcache *c, const Iolake__Meta__Bucket *b, uint64_t digest,
		   uint64_t now_ms)
{
	if (!c || !b || !b->name)
		return;
	struct slot *s = slot_of(c, b->name);
	if (!gw_bcache_cacheable(b, digest)) {
		if (s->name && !strcmp(s->name, b->name))
			slot_clear(s);
		return;
	}
	size_t len = iolake__meta__bucket__get_packed_size(b);
	uint8_t *packed = malloc(len ? len : 1);
	char *name = strdup(b->name);
	if (!packed || !name) {
		free(packed);
		free(name);
		return;
	}
	iolake__meta__bucket__pack(b, packed);
	slot_clear(s);
	s->name = name;
	s->packed = packed;
	s->len = len;
	s->digest = digest;
	s->at_ms = now_ms;
}

void gw_bcache_drop(struct gw_bcache *c, const char *name, bool stale)
{
	if (!c)
		return;
	struct slot *s = slot_of(c, name);
	if (s->name && !strcmp(s->name, name))
		slot_clear(s);
	if (stale)
		count(c->stale);
}

uint64_t gw_bcache_gen(void)
{
	return atomic_load_explicit(&created_gen, memory_order_acquire);
}

void gw_bcache_put_absent(struct gw_bcache *c, const char *name, uint64_t now_ms, uint64_t gen)
{
	if (!c || gen != gw_bcache_gen())
		return;
	struct slot *s = slot_of(c, name);
	char *n = strdup(name);
	if (!n)
		return;
	slot_clear(s);
	s->name = n;
	s->at_ms = now_ms;
	s->gen = gen;
}

bool gw_bcache_absent(struct gw_bcache *c, const char *name, uint64_t now_ms)
{
	if (!c)
		return false;
	struct slot *s = slot_of(c, name);
	if (!s->name || s->packed || strcmp(s->name, name) || now_ms - s->at_ms >= c->ttl_ms ||
	    s->gen != gw_bcache_gen())
		return false;
	count(c->absent_hits);
	return true;
}

void gw_bcache_bucket_created(void)
{
	atomic_fetch_add_explicit(&created_gen, 1, memory_order_acq_rel);
}
