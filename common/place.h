/*
 * place.h — placement: object → placement group (PG), and PG → an ordered
 * set of OSDs (the PG table of the cluster map).
 *
 * Pure functions of their arguments: no clock, no randomness, no floating
 * point (integer straw2-style rendezvous hashing), so the meta state
 * machine may call them inside apply and every member gets the same table
 * on any CPU and libc. Nothing here allocates except the table itself.
 *
 * The two hashes below are part of the on-disk format: changing either
 * remaps every object or every PG. They are pinned by golden values in
 * tests/unit/common/test_place.c.
 */
#ifndef COMMON_PLACE_H
#define COMMON_PLACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PLACE_NONE UINT32_MAX  /* an empty slot in the table */
#define PLACE_MAX_OSDS 4096
#define PLACE_MAX_WIDTH 32     /* k + m */
#define PLACE_MAX_PGS (1u << 16)
#define PLACE_DEFAULT_PGS 256

/* One OSD as placement sees it. host is the failure domain (compared as a
 * string); weight is relative capacity (0: takes no slots). */
struct place_osd {
	uint32_t id;
	const char *host;
	uint32_t weight;
	bool up;
	bool in;
};

struct place_params {
	uint32_t pg_count;      /* power of two, 1..PLACE_MAX_PGS */
	uint32_t width;         /* k + m, 1..PLACE_MAX_WIDTH */
	bool down_keeps_slot;   /* true: an in but down OSD stays eligible (its
	                         * PGs run degraded until it is marked out) */
};

/* pg_count x width OSD ids, row-major: osds[pg * width + slot]. Slot i of a
 * PG holds shard i of every stripe stored in it. */
struct meta_pg_table {
	uint32_t pg_count;
	uint32_t width;
	uint32_t *osds;
};

/* Allocate a table with every slot PLACE_NONE. 0 or -EINVAL (bad
 * shape) or -ENOMEM. Free with place_table_free. */
int place_table_init(struct meta_pg_table *t, uint32_t pg_count, uint32_t width);
void place_table_free(struct meta_pg_table *t);

/* Whether place_compute gives o slots: in, weight > 0, and up unless
 * p->down_keeps_slot. */
bool place_osd_eligible(const struct place_osd *o, const struct place_params *p);

/*
 * Fill out (already initialised with p's shape) with the PG table for osds.
 *
 * Eligible OSDs: in, weight > 0, and up unless p->down_keeps_slot. For
 * each PG every eligible OSD gets a score from hash(pg, osd id) scaled by
 * its weight (straw2: an OSD wins a draw with probability proportional to
 * its weight); the set is the best-scoring OSDs on distinct hosts, and when
 * fewer hosts than width exist, the best remaining OSDs fill the rest.
 * Slots stay PLACE_NONE when fewer eligible OSDs than width exist.
 *
 * Order: without prev (NULL or another shape) slots follow score rank.
 * With prev, an OSD that stays in a PG's set keeps its slot and newcomers
 * take the vacated slots in rank order, so a change moves only the slots
 * whose OSD changed (shards are not renumbered).
 *
 * Returns 0, or -EINVAL for bad arguments (n_osds over the max, duplicate
 * ids, out's shape differing from p, NULL host).
 */
int place_compute(const struct place_osd *osds, size_t n_osds,
		  const struct place_params *p, const struct meta_pg_table *prev,
		  struct meta_pg_table *out);

/*
 * The PG's primary: among its slots whose OSD is up (bit i of up_mask;
 * PLACE_NONE slots never count), the one whose OSD draws the highest
 * hash of (pg, osd id). Slot order follows the order OSDs joined (a
 * survivor keeps its slot), so "the lowest up slot" would make the first
 * OSDs to register lead almost every PG; a draw spreads leadership evenly
 * (recovery is declustered) and moves it only when the primary goes down
 * or leaves. Meta (PG states) and every OSD (osd/recover) call this and
 * must agree: like the hashes below it is part of the cluster's contract.
 * Returns the slot index, or -1 when no slot's OSD is up.
 */
int place_primary_slot(uint32_t pg, const uint32_t *osds, uint32_t width, uint32_t up_mask);

/* Number of (pg, slot) positions whose OSD differs between a and b, or
 * -EINVAL when their shapes differ. */
long place_diff(const struct meta_pg_table *a, const struct meta_pg_table *b);

/*
 * The stable 64-bit object hash ("iolhash64"): over bucket, one 0 byte,
 * then key; 8-byte little-endian words, each folded through the
 * splitmix64 finaliser, then the length and a final mix. Seed fixed.
 */
uint64_t place_hash_object(const char *bucket, size_t bucket_len, const char *key,
			   size_t key_len);

/* PG of an object: hash & (pg_count - 1); pg_count a power of two. */
uint32_t place_object_pg(const char *bucket, size_t bucket_len, const char *key,
			 size_t key_len, uint32_t pg_count);

#endif
