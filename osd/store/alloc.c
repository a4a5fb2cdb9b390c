/*
 * alloc.c — bitmap extent allocator: lowest-first within a window, next-fit
 * beyond it.
 *
 * Owns: one bit per 4 KiB block (1 = reserved or committed) and the counts
 * of reserved and committed blocks. The bitmap does not distinguish the two
 * states; the store knows which extents are reservations (they belong to
 * requests in flight), so a bit per block suffices and a rebuild is just
 * "set the bits of every index entry".
 * Invariant: popcount(bitmap) == reserved + committed; bits past the end
 * are set, so word scans never run off the device.
 * Why a bitmap: 32 MiB of bitmap covers 1 TiB, rebuild is linear, and
 * word-at-a-time scans (ctz) skip full and empty regions 64 blocks at a
 * time.
 * Why lowest-first: a block freed by a delete or an overwrite is the next
 * one written, so the device's written footprint follows its live data.
 * On a sparse file (aio's OSDs) that is the file's size on its file
 * system; on a memory-backed file it is pages already there rather than
 * new ones (a new page on a VM can cost a host fault: a PUT 4 MiB cell on
 * tmpfs went from 266-547 to 342-804 MiB/s, docs/performance.md). A pure
 * next-fit cursor walked over the whole device before it reused anything.
 * Why a window: lowest-first scans from the lowest free block, and a
 * fragmented front (holes too short for n) would make every reservation
 * walk it. The search from `low` is bounded by STORE_ALLOC_WINDOW blocks,
 * and `low` itself moves forward at most that far per call; past the
 * window a next-fit cursor takes over, within the written footprint
 * (hwm: the end of the highest block ever reserved or marked), which
 * grows only when a whole pass below it found no run of n since the last
 * free. So a reservation scans at most a window's bitmap (512 words) plus
 * the next-fit search, and a failed pass is not repeated for requests as
 * long until something is freed.
 * Loop thread only. Does not persist anything.
 */
#include "osd/store/alloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/err.h"

struct store_alloc {
	uint64_t *bits;
	uint64_t nwords;
	uint64_t total;
	uint64_t committed;
	uint64_t reserved;
	uint64_t low;       /* every block below it is reserved or committed */
	uint64_t cursor;    /* next-fit's start, below hwm */
	/* The written footprint: no block at or past it was reserved or
	 * marked since the allocator was made. Next-fit stays below it and
	 * the footprint grows only when nothing below fits. */
	uint64_t hwm;
	/* A whole next-fit pass below hwm found no run of this many blocks
	 * since the last free (0: none failed): larger or equal requests
	 * extend the footprint at once instead of scanning again. */
	uint64_t fail_n;
};

static inline int test_bit(const struct store_alloc *a, uint64_t b)
{
	return (a->bits[b >> 6] >> (b & 63)) & 1;
}

/* Set (val=1) or clear bits [s, s+n); returns how many bits already had
 * the target value (0 when the range was entirely in the other state). */
static uint64_t set_range(struct store_alloc *a, uint64_t s, uint64_t n, int val)
{
	uint64_t already = 0;
	uint64_t e = s + n;
	while (s < e) {
		uint64_t w = s >> 6, lo = s & 63;
		uint64_t cnt = 64 - lo < e - s ? 64 - lo : e - s;
		uint64_t mask = (cnt == 64 ? ~0ull : ((1ull << cnt) - 1)) << lo;
		uint64_t cur = a->bits[w] & mask;
		if (val) {
			already += (uint64_t)__builtin_popcountll(cur);
			a->bits[w] |= mask;
		} else {
			already += cnt - (uint64_t)__builtin_popcountll(cur);
			a->bits[w] &= ~mask;
		}
		s += cnt;
	}
	return already;
}

/* First block in [i, limit) whose bit equals val, or `limit` if none
 * (limit <= total). Bounded so that measuring a free run stops once it is
 * long enough: on a mostly empty device an unbounded scan for the run's
 * end read the whole bitmap (2 MiB at 64 GiB) on every reservation. */
static uint64_t next_with_upto(const struct store_alloc *a, uint64_t i, int val, uint64_t limit)
{
	if (i >= limit)
		return limit;
	uint64_t w = i >> 6, last = (limit - 1) >> 6;
	uint64_t word = val ? a->bits[w] : ~a->bits[w];
	word &= ~0ull << (i & 63);
	for (;;) {
		if (word) {
			uint64_t b = (w << 6) + (uint64_t)__builtin_ctzll(word);
			return b < limit ? b : limit;
		}
		if (++w > last)
			return limit;
		word = val ? a->bits[w] : ~a->bits[w];
	}
}

/* First block >= i whose bit equals val, or `total` if none. */
static uint64_t next_with(const struct store_alloc *a, uint64_t i, int val)
{
	return next_with_upto(a, i, val, a->total);
}

/* A run of n free blocks starting in [from, to). */
static int find_run(const struct store_alloc *a, uint64_t from, uint64_t to, uint64_t n,
		    uint64_t *start)
{
	uint64_t i = from;
	while (i < to) {
		i = next_with_upto(a, i, 0, to);
		if (i >= to)
			return 0;
		uint64_t lim = n <= a->total - i ? i + n : a->total;
		uint64_t e = next_with_upto(a, i, 1, lim);
		if (e - i >= n) {
			*start = i;
			return 1;
		}
		i = e;
	}
	return 0;
}

int store_alloc_new(uint64_t blocks, struct store_alloc **out)
{
	if (blocks == 0)
		return -EINVAL;
	struct store_alloc *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->nwords = (blocks + 63) / 64;
	a->bits = calloc(a->nwords, sizeof(uint64_t));
	if (!a->bits) {
		free(a);
		return -ENOMEM;
	}
	a->total = blocks;
	if (blocks & 63) /* the tail past the device is never free */
		a->bits[a->nwords - 1] = ~0ull << (blocks & 63);
	*out = a;
	return 0;
}

void store_alloc_destroy(struct store_alloc *a)
{
	if (!a)
		return;
	free(a->bits);
	free(a);
}

int store_alloc_reserve(struct store_alloc *a, uint64_t n, uint64_t *start)
{
	if (n == 0)
		return -EINVAL;
	if (n > a->total - a->committed - a->reserved)
		return IOL_ENO_SPACE;
	uint64_t s;
	uint64_t wend = a->total - a->low > STORE_ALLOC_WINDOW ? a->low + STORE_ALLOC_WINDOW
							       : a->total;
	/* Skip what filled up since; a full window moves `low` by a window. */
	a->low = next_with_upto(a, a->low, 0, wend);
	if (find_run(a, a->low, wend, n, &s))
		goto found;
	/* Next-fit over the footprint: from the cursor to hwm, then from
	 * its start, unless a pass since the last free found nothing this
	 * long. (Its cursor used to roam the whole device: it sat at the
	 * frontier after each fallback, so every fallback grew the
	 * footprint, and a sparse OSD file filled up to its size under
	 * churn: 3-4 x its live data within minutes in the thrash soak.) */
	if (!a->fail_n || n < a->fail_n) {
		if (a->cursor >= a->hwm)
			a->cursor = 0;
		if (find_run(a, a->cursor, a->hwm, n, &s) || find_run(a, 0, a->cursor, n, &s)) {
			a->cursor = s + n;
			goto found;
		}
		a->fail_n = n;
	}
	/* Grow the footprint, else anywhere (the memo may be stale). */
	if (!find_run(a, a->hwm, a->total, n, &s) && !find_run(a, 0, a->total, n, &s))
		return IOL_ENO_SPACE;
found:;
	uint64_t was = set_range(a, s, n, 1);
	IOL_ASSERT(was == 0);
	a->reserved += n;
	if (s + n > a->hwm)
		a->hwm = s + n;
	*start = s;
	return 0;
}

static void check_range(const struct store_alloc *a, uint64_t s, uint64_t n)
{
	IOL_ASSERT(n > 0 && s < a->total && n <= a->total - s);
}

void store_alloc_commit(struct store_alloc *a, uint64_t start, uint64_t n)
{
	check_range(a, start, n);
	IOL_ASSERT(a->reserved >= n);
	/* Debug-cheap check that the blocks are in use (the bitmap cannot tell
	 * reserved from committed). */
	IOL_ASSERT(test_bit(a, start) && test_bit(a, start + n - 1));
	a->reserved -= n;
	a->committed += n;
}

void store_alloc_unreserve(struct store_alloc *a, uint64_t start, uint64_t n)
{
	check_range(a, start, n);
	IOL_ASSERT(a->reserved >= n);
	uint64_t was = set_range(a, start, n, 0);
	IOL_ASSERT(was == 0); /* every bit was set */
	a->reserved -= n;
	if (start < a->low)
		a->low = start;
	a->fail_n = 0;
}

void store_alloc_release(struct store_alloc *a, uint64_t start, uint64_t n)
{
	check_range(a, start, n);
	IOL_ASSERT(a->committed >= n);
	uint64_t was = set_range(a, start, n, 0);
	IOL_ASSERT(was == 0);
	a->committed -= n;
	if (start < a->low)
		a->low = start;
	a->fail_n = 0;
}

int store_alloc_mark(struct store_alloc *a, uint64_t start, uint64_t n)
{
	if (n == 0 || start >= a->total || n > a->total - start)
		return IOL_ECORRUPT;
	if (next_with(a, start, 1) < start + n)
		return IOL_ECORRUPT;
	set_range(a, start, n, 1);
	a->committed += n;
	if (start + n > a->hwm)
		a->hwm = start + n;
	return 0;
}

void store_alloc_stats(const struct store_alloc *a, struct store_alloc_stats *out)
{
	out->total_blocks = a->total;
	out->committed_blocks = a->committed;
	out->reserved_blocks = a->reserved;
	out->free_blocks = a->total - a->committed - a->reserved;
}

int store_alloc_is_free(const struct store_alloc *a, uint64_t b)
{
	return b < a->total && !test_bit(a, b);
}
