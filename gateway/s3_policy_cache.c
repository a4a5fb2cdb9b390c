/*
 * s3_policy_cache.c — the per-loop cache of compiled bucket policies
 * (contract in s3_policy_cache.h): a fixed array of entries, a hash table
 * of chains over it by (name, generation), and an LRU list.
 *
 * Owns the parsed policies it holds (freed on eviction and with the
 * cache). Does not read buckets (the gate hands in the record's document)
 * nor decide anything (s3_authz).
 *
 * Thread: one loop; no locking.
 */
#include "gateway/s3_policy_cache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "gateway/s3_policy.h"
#include "gateway/s3_req.h"

#define NIL UINT32_MAX

struct ent {
	char name[S3_BUCKET_MAX + 1];
	uint64_t gen;
	struct s3_policy_entry e;
	uint32_t chain;          /* next in the hash chain */
	uint32_t prev, next;     /* LRU: head is the most recent */
	bool used;
};

struct s3_policy_cache {
	struct ent *ents;
	uint32_t cap, n;
	uint32_t *heads;         /* nbuckets chain heads */
	uint32_t nbuckets;       /* a power of two >= 2 * cap */
	uint32_t lru_head, lru_tail;
	struct s3_policy_cache_stats st;
};

static uint32_t hash(const char *name, uint64_t gen)
{
	uint64_t h = 1469598103934665603ull ^ gen;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return (uint32_t)(h ^ (h >> 32));
}

struct s3_policy_cache *s3_policy_cache_new(size_t cap)
{
	if (cap < 1 || cap > (1u << 20))
		return NULL;
	struct s3_policy_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->cap = (uint32_t)cap;
	c->nbuckets = 2;
	while (c->nbuckets < 2 * c->cap)
		c->nbuckets *= 2;
	c->ents = calloc(c->cap, sizeof(*c->ents));
	c->heads = malloc(c->nbuckets * sizeof(*c->heads));
	if (!c->ents || !c->heads) {
		s3_policy_cache_free(c);
		return NULL;
	}
	for (uint32_t i = 0; i < c->nbuckets; i++)
		c->heads[i] = NIL;
	c->lru_head = c->lru_tail = NIL;
	return c;
}

void s3_policy_cache_free(struct s3_policy_cache *c)
{
	if (!c)
		return;
	if (c->ents)
		for (uint32_t i = 0; i < c->cap; i++)
			if (c->ents[i].used)
				s3_policy_free((struct s3_policy *)c->ents[i].e.policy);
	free(c->ents);
	free(c->heads);
	free(c);
}

static void lru_unlink(struct s3_policy_cache *c, uint32_t i)
{
	struct ent *e = &c->ents[i];
	if (e->prev != NIL)
		c->ents[e->prev].next = e->next;
	else
		c->lru_head = e->next;
	if (e->next != NIL)
		c->ents[e->next].prev = e->prev;
	else
		c->lru_tail = e->prev;
	e->prev = e->next = NIL;
}

static void lru_push(struct s3_policy_cache *c, uint32_t i)
{
	struct ent *e = &c->ents[i];
	e->prev = NIL;
	e->next = c->lru_head;
	if (c->lru_head != NIL)
		c->ents[c->lru_head].prev = i;
	c->lru_head = i;
	if (c->lru_tail == NIL)
		c->lru_tail = i;
}

static void chain_unlink(struct s3_policy_cache *c, uint32_t i)
{
	struct ent *e = &c->ents[i];
	uint32_t *pp = &c->heads[hash(e->name, e->gen) & (c->nbuckets - 1)];
	while (*pp != NIL && *pp != i)
		pp = &c->ents[*pp].chain;
	if (*pp == i)
		*pp = e->chain;
}

/* A free slot: the next unused one, or the least recently used emptied. */
static uint32_t take_slot(struct s3_policy_cache *c)
{
	if (c->n < c->cap)
		return c->n++;
	uint32_t i = c->lru_tail;
	lru_unlink(c, i);
	chain_unlink(c, i);
	s3_policy_free((struct s3_policy *)c->ents[i].e.policy);
	c->ents[i].used = false;
	c->st.evictions++;
	return i;
}

const struct s3_policy_entry *s3_policy_cache_get(struct s3_policy_cache *c, const char *bucket,
						   uint64_t generation, const char *doc, size_t len)
{
	size_t nl = strlen(bucket);
	if (nl > S3_BUCKET_MAX)
		return NULL;
	uint32_t b = hash(bucket, generation) & (c->nbuckets - 1);
	for (uint32_t i = c->heads[b]; i != NIL; i = c->ents[i].chain) {
		struct ent *e = &c->ents[i];
		if (e->gen == generation && strcmp(e->name, bucket) == 0) {
			c->st.hits++;
			lru_unlink(c, i);
			lru_push(c, i);
			return &e->e;
		}
	}
	c->st.misses++;
	struct s3_policy *p = NULL;
	char err[160];
	int rc = s3_policy_parse(doc, len, bucket, &p, err, sizeof(err));
	if (rc == -ENOMEM)
		return NULL;
	uint32_t i = take_slot(c);
	struct ent *e = &c->ents[i];
	memcpy(e->name, bucket, nl + 1);
	e->gen = generation;
	e->used = true;
	e->e.policy = rc ? NULL : p;
	e->e.broken = rc != 0;
	e->e.is_public = rc ? false : s3_policy_is_public(p);
	if (rc) {
		c->st.broken++;
		LOG_WARN("s3: a stored bucket policy does not parse; refusing what it would decide",
			 "bucket=%s error=%s", bucket, err);
	}
	e->chain = c->heads[b];
	c->heads[b] = i;
	lru_push(c, i);
	return &e->e;
}

void s3_policy_cache_stats(const struct s3_policy_cache *c, struct s3_policy_cache_stats *out)
{
	*out = c->st;
	out->entries = c->n;
	for (uint32_t i = 0; i < c->n; i++)
		if (!c->ents[i].used)
			out->entries--;
}
