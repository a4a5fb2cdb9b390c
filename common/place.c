/*
 * place.c — object → PG hashing and the PG table (weighted rendezvous
 * hashing with distinct hosts). See place.h for the contracts.
 *
 * Invariant: the result is a function of the arguments alone, computed
 * with integers only, so members of the Raft group agree bit for bit.
 * Runs on whatever thread calls it; holds no state.
 *
 * The draw: for PG p and OSD o, u = top 48 bits of mix(p, o) + 1, so u is
 * uniform in (0, 2^48]; L = -log2(u / 2^48) in 32.32 fixed point (an
 * exponential variable up to a constant); score = weight / L. The OSD with
 * the largest score wins, with probability weight / total weight (the
 * minimum of exponentials with rates w_i is attained by i with chance
 * w_i / sum w). Ties (equal scores) go to the lower OSD id.
 *
 * Cost: O(pg_count * width * n_osds). 4096 PGs x 6 x 100 OSDs is ~2.5M
 * score compares; fine for a map change, not for a hot path.
 */
#include "common/place.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define PLACE_SEED 0x696f6c616b65706cULL   /* "iolakepl" */
#define OBJECT_SEED 0x696f6c616b656f62ULL  /* "iolakeob" */
#define PRIMARY_SEED 0x696f6c616b657072ULL /* "iolakepr" */

static uint64_t mix64(uint64_t x)
{
	/* splitmix64 finaliser: a bijection with full avalanche. */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static uint64_t rotl64(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

/* Fold bytes into h: 8-byte little-endian words, the tail zero-padded. */
static uint64_t fold_bytes(uint64_t h, const uint8_t *p, size_t n)
{
	while (n >= 8) {
		uint64_t w = 0;
		for (int i = 7; i >= 0; i--)
			w = (w << 8) | p[i];
		h = rotl64(h ^ mix64(w), 27) * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL;
		p += 8;
		n -= 8;
	}
	if (n) {
		uint64_t w = 0;
		for (size_t i = n; i-- > 0;)
			w = (w << 8) | p[i];
		h = rotl64(h ^ mix64(w), 27) * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL;
	}
	return h;
}

uint64_t place_hash_object(const char *bucket, size_t bucket_len, const char *key,
			   size_t key_len)
{
	static const uint8_t zero = 0;
	uint64_t h = OBJECT_SEED;
	/* The separator and the length keep ("ab","c") apart from ("a","bc");
	 * bucket names never contain a 0 byte. */
	h = fold_bytes(h, (const uint8_t *)bucket, bucket_len);
	h = fold_bytes(h, &zero, 1);
	h = fold_bytes(h, (const uint8_t *)key, key_len);
	return mix64(h ^ (uint64_t)(bucket_len + 1 + key_len));
}

uint32_t place_object_pg(const char *bucket, size_t bucket_len, const char *key,
			 size_t key_len, uint32_t pg_count)
{
	return (uint32_t)(place_hash_object(bucket, bucket_len, key, key_len) &
			  (uint64_t)(pg_count - 1));
}

/* log2(u) in 32.32 fixed point for 1 <= u < 2^63, by repeated squaring of
 * the mantissa: exact integer arithmetic, the same on every machine. */
static uint64_t log2_q32(uint64_t u)
{
	int ip = 63 - __builtin_clzll(u);
	uint64_t m = ip <= 62 ? u << (62 - ip) : u >> (ip - 62); /* [2^62, 2^63) = [1, 2) */
	uint64_t frac = 0;
	for (int i = 1; i <= 32; i++) {
		m = (uint64_t)(((unsigned __int128)m * m) >> 62);
		if (m >= (1ULL << 63)) {
			m >>= 1;
			frac |= 1ULL << (32 - i);
		}
	}
	return ((uint64_t)ip << 32) | frac;
}

static unsigned __int128 draw(uint32_t pg, uint32_t osd, uint32_t weight)
{
	uint64_t h = mix64(mix64(PLACE_SEED ^ pg) ^ ((uint64_t)osd * 0x9e3779b97f4a7c15ULL));
	uint64_t u = (h >> 16) + 1;                       /* (0, 2^48] */
	uint64_t l = (48ULL << 32) - log2_q32(u);         /* -log2(u / 2^48), 32.32 */
	if (l == 0)
		l = 1;
	return ((unsigned __int128)weight << 64) / l;
}

int place_table_init(struct meta_pg_table *t, uint32_t pg_count, uint32_t width)
{
	t->osds = NULL;
	t->pg_count = t->width = 0;
	if (pg_count == 0 || pg_count > PLACE_MAX_PGS || (pg_count & (pg_count - 1)) ||
	    width == 0 || width > PLACE_MAX_WIDTH)
		return -EINVAL;
	t->osds = malloc((size_t)pg_count * width * sizeof(*t->osds));
	if (!t->osds)
		return -ENOMEM;
	t->pg_count = pg_count;
	t->width = width;
	for (size_t i = 0; i < (size_t)pg_count * width; i++)
		t->osds[i] = PLACE_NONE;
	return 0;
}

void place_table_free(struct meta_pg_table *t)
{
	free(t->osds);
	t->osds = NULL;
	t->pg_count = t->width = 0;
}

int place_primary_slot(uint32_t pg, const uint32_t *osds, uint32_t width, uint32_t up_mask)
{
	int best = -1;
	uint64_t best_h = 0;
	uint64_t seed = mix64(PRIMARY_SEED ^ pg);
	for (uint32_t i = 0; i < width && i < 32; i++) {
		if (osds[i] == PLACE_NONE || !(up_mask >> i & 1))
			continue;
		uint64_t h = mix64(seed ^ ((uint64_t)osds[i] * 0x9e3779b97f4a7c15ULL));
		if (best < 0 || h > best_h) {
			best = (int)i;
			best_h = h;
		}
	}
	return best;
}

long place_diff(const struct meta_pg_table *a, const struct meta_pg_table *b)
{
	if (a->pg_count != b->pg_count || a->width != b->width)
		return -EINVAL;
	long moved = 0;
	for (size_t i = 0; i < (size_t)a->pg_count * a->width; i++)
		moved += a->osds[i] != b->osds[i];
	return moved;
}

/* Eligible OSDs with their host as a small integer. */
struct cand {
	uint32_t id;
	uint32_t weight;
	uint32_t host;          /* dense host index */
	const char *host_name;
};

static int cmp_by_host(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	int c = strcmp(x->host_name, y->host_name);
	if (c)
		return c;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

bool place_osd_eligible(const struct place_osd *o, const struct place_params *p)
{
	return o->in && o->weight > 0 && o->id != PLACE_NONE && (o->up || p->down_keeps_slot);
}

int place_compute(const struct place_osd *osds, size_t n_osds,
		  const struct place_params *p, const struct meta_pg_table *prev,
		  struct meta_pg_table *out)
{
	int rc = -EINVAL;
	struct cand *c = NULL;
	unsigned __int128 *score = NULL;
	uint32_t *ids = NULL;
	bool *host_used = NULL, *taken = NULL;

	if (n_osds > PLACE_MAX_OSDS || !out->osds || out->pg_count != p->pg_count ||
	    out->width != p->width)
		return -EINVAL;

	/* Reject duplicate ids: the table would be ambiguous. */
	ids = malloc((n_osds ? n_osds : 1) * sizeof(*ids));
	c = malloc((n_osds ? n_osds : 1) * sizeof(*c));
	score = malloc((n_osds ? n_osds : 1) * sizeof(*score));
	host_used = malloc(n_osds ? n_osds : 1);
	taken = malloc(n_osds ? n_osds : 1);
	if (!ids || !c || !score || !host_used || !taken) {
		rc = -ENOMEM;
		goto out_free;
	}
	for (size_t i = 0; i < n_osds; i++) {
		if (!osds[i].host)
			goto out_free;
		ids[i] = osds[i].id;
	}
	qsort(ids, n_osds, sizeof(*ids), cmp_u32);
	for (size_t i = 1; i < n_osds; i++)
		if (ids[i] == ids[i - 1])
			goto out_free;

	size_t n = 0;
	for (size_t i = 0; i < n_osds; i++) {
		const struct place_osd *o = &osds[i];
		if (!place_osd_eligible(o, p))
			continue;
		c[n++] = (struct cand){ .id = o->id, .weight = o->weight, .host_name = o->host };
	}
	/* Dense host numbers, independent of the input order. */
	qsort(c, n, sizeof(*c), cmp_by_host);
	uint32_t hosts = 0;
	for (size_t i = 0; i < n; i++) {
		if (i > 0 && strcmp(c[i].host_name, c[i - 1].host_name) != 0)
			hosts++;
		c[i].host = hosts;
	}

	bool use_prev = prev && prev->osds && prev->pg_count == p->pg_count &&
			prev->width == p->width;
	uint32_t w = p->width;
	uint32_t pick[PLACE_MAX_WIDTH];

	for (uint32_t pg = 0; pg < p->pg_count; pg++) {
		uint32_t got = 0;
		for (size_t i = 0; i < n; i++) {
			score[i] = draw(pg, c[i].id, c[i].weight);
			host_used[c[i].host] = false;
			taken[i] = false;
		}
		/* Best candidate on an unused host; once every host is used,
		 * the best remaining OSD. */
		for (int pass = 0; pass < 2 && got < w; pass++) {
			while (got < w) {
				size_t best = n;
				for (size_t i = 0; i < n; i++) {
					if (taken[i] || (pass == 0 && host_used[c[i].host]))
						continue;
					if (best == n || score[i] > score[best] ||
					    (score[i] == score[best] && c[i].id < c[best].id))
						best = i;
				}
				if (best == n)
					break;
				taken[best] = true;
				host_used[c[best].host] = true;
				pick[got++] = c[best].id;
			}
		}

		uint32_t *row = &out->osds[(size_t)pg * w];
		for (uint32_t s = 0; s < w; s++)
			row[s] = PLACE_NONE;
		bool placed[PLACE_MAX_WIDTH] = { false };
		if (use_prev) {
			/* Survivors keep their slot. */
			const uint32_t *old = &prev->osds[(size_t)pg * w];
			for (uint32_t s = 0; s < w; s++) {
				for (uint32_t j = 0; j < got; j++) {
					if (!placed[j] && old[s] == pick[j]) {
						row[s] = pick[j];
						placed[j] = true;
						break;
					}
				}
			}
		}
		/* Newcomers fill the free slots in rank order. */
		uint32_t s = 0;
		for (uint32_t j = 0; j < got; j++) {
			if (placed[j])
				continue;
			while (row[s] != PLACE_NONE)
				s++;
			row[s] = pick[j];
		}
	}
	rc = 0;

out_free:
	free(taken);
	free(host_used);
	free(score);
	free(c);
	free(ids);
	return rc;
}
