/*
 * range.h — key ranges as a client sees them: one bucket's range table
 * (from the root's GetRanges) and the walk of a listing over its ranges in
 * key order. Pure functions over memory: no I/O, no loop, so that routing
 * and the listing merge are unit-tested on their own (meta/route.c does
 * the calls).
 *
 * A bucket's ranges partition its key space: sorted by start, the first
 * starts at "", each ends where the next starts, the last ends at "" (the
 * end of the bucket). A bucket with no ranges (records in the root) has
 * n == 0.
 */
#ifndef META_RANGE_H
#define META_RANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meta/state.h"

struct meta_range_ent {
	uint64_t id, group;
	char *start, *end;             /* owned; end "": the end of the bucket */
	bool moving;                   /* its records are being moved: it is sealed */
};

struct meta_range_table {
	char bucket[64];
	struct meta_range_ent *v;      /* by start */
	size_t n;                      /* 0: the bucket's records are in the root */
	uint64_t fetched_ms;
};

/* Fill t from a GetRanges answer (copies; sorts by start). 0, -EINVAL
 * (the ranges do not partition the bucket's keys: a gap, an overlap, a
 * range of another bucket), -ENOMEM. t is emptied first. */
int meta_range_table_set(struct meta_range_table *t, const char *bucket,
			 Iolake__Meta__RangeDesc *const *v, size_t n);
void meta_range_table_clear(struct meta_range_table *t);

/* Index of the range holding key (n > 0 required). */
size_t meta_range_find(const struct meta_range_table *t, const char *key);

/* Whether range i could hold a key starting with prefix (a range that
 * starts above every such key cannot). */
bool meta_range_may_hold_prefix(const struct meta_range_table *t, size_t i, const char *prefix);

/*
 * The walk of one listing page over ranges. Each range is asked for at
 * most `remaining` entries after `marker` (the last entry taken, or the
 * request's own marker), within its bounds; meta_range_walk_take merges
 * its answer:
 *   - an entry not above the last one taken is dropped: a common prefix
 *     that spans a range boundary is listed by both ranges and emitted
 *     once (the next range is asked after it, so it normally drops it
 *     itself);
 *   - the page ends when it is full, when a range answered truncated, or
 *     when no range is left; `truncated` says whether more may follow (a
 *     full page with ranges left is reported truncated: finding out would
 *     cost another round trip, and the next page is then empty).
 */
struct meta_range_walk {
	unsigned max;                  /* entries in the page */
	size_t n;                      /* entries taken */
	char marker[META_KEY_MAX + 1]; /* last entry taken, or the request's marker */
	size_t marker_len;
	bool done, truncated;
};

void meta_range_walk_init(struct meta_range_walk *w, unsigned max, const char *marker);
/* Merge one range's answer of n entries (names[i], lens[i], in order),
 * setting take[i]. page_truncated: the range said more follow in it;
 * more_ranges: another range may hold entries of the listing. Returns the
 * entries taken. */
size_t meta_range_walk_take(struct meta_range_walk *w, const char *const *names,
			    const size_t *lens, size_t n, bool page_truncated, bool more_ranges,
			    bool *take);

#endif
