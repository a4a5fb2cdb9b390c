/*
 * alloc.h — the extent allocator over the device's data area, in 4 KiB
 * blocks (block numbers relative to the data area start).
 *
 * A block is free, reserved (held in memory for a write in flight) or
 * committed (an index entry that names it has committed). Only committed
 * blocks are durable: at open the allocator is rebuilt from the index by
 * store_alloc_mark(), so reservations lost in a crash leak nothing.
 *
 * Each extent is one contiguous run. A request that finds no run long
 * enough fails with IOL_ENO_SPACE even if the free total would suffice
 * (fragmentation); the caller sees it as "no space".
 *
 * Not thread-safe: owned by the store's loop thread.
 */
#ifndef OSD_STORE_ALLOC_H
#define OSD_STORE_ALLOC_H

#include <stdint.h>

struct store_alloc;

struct store_alloc_stats {
	uint64_t total_blocks;
	uint64_t committed_blocks;
	uint64_t reserved_blocks;
	uint64_t free_blocks;  /* total - committed - reserved */
};

/* An allocator of `blocks` blocks, all free. 0 or -ENOMEM / -EINVAL. */
int store_alloc_new(uint64_t blocks, struct store_alloc **out);
void store_alloc_destroy(struct store_alloc *a);

/* How far past the lowest free block a reservation looks for the lowest
 * run of n (32,768 blocks: 128 MiB of device, 512 words of bitmap). */
#define STORE_ALLOC_WINDOW (1ull << 15)

/* Reserve a run of n (>0) free blocks: the lowest run that starts within
 * STORE_ALLOC_WINDOW blocks of the lowest free block, else next-fit from
 * a rotating cursor below the written footprint (the highest block ever
 * reserved or marked), else the first run past it. Returns 0 with *start set,
 * IOL_ENO_SPACE when no run of n is free, or -EINVAL for n == 0. */
int store_alloc_reserve(struct store_alloc *a, uint64_t n, uint64_t *start);

/* The reservation [start, start+n) is now named by a committed index
 * entry. Aborts if it was not reserved (an allocator bug). */
void store_alloc_commit(struct store_alloc *a, uint64_t start, uint64_t n);

/* Give back a reservation that will not commit (write failed, cancelled). */
void store_alloc_unreserve(struct store_alloc *a, uint64_t start, uint64_t n);

/* Give back committed blocks whose index entry was deleted or replaced. */
void store_alloc_release(struct store_alloc *a, uint64_t start, uint64_t n);

/* Rebuild: mark [start, start+n) committed. Returns 0, or IOL_ECORRUPT
 * when the range is out of bounds or overlaps blocks already marked (two
 * index entries claiming one block): on-disk input, so not an abort. */
int store_alloc_mark(struct store_alloc *a, uint64_t start, uint64_t n);

void store_alloc_stats(const struct store_alloc *a, struct store_alloc_stats *out);

/* Whether block b is free (for tests). */
int store_alloc_is_free(const struct store_alloc *a, uint64_t b);

#endif
