/*
 * range_heat.h — a range group leader's load figures per open range (issue
 * 13, splits by load, after TiKV's load-based split): the requests it
 * served for each range (object ops committed, HeadObject and ListObjects
 * answered) and a bounded reservoir sample of the keys they touched, from
 * which a split key dividing the LOAD (not the objects) is chosen.
 *
 * Leader memory only: never Raft state, never in the state digest; a new
 * leader starts from nothing (meta.proto RangeDesc 24-27 says how a reader
 * sees that). Bounded: RANGE_HEAT_RANGES ranges per group (a request of
 * another range while full is not counted, counted in `untracked`),
 * RANGE_HEAT_SAMPLE keys per range per window, keys kept to
 * RANGE_HEAT_KEY_MAX bytes. Windows are RANGE_HEAT_WINDOW_MS long; the
 * split key comes from the last whole window and the current one.
 *
 * Thread: the member's loop (no locking). Not here: asking for the figures
 * (meta/node_range.c's GetRanges), deciding a split (meta/node_move.c).
 */
#ifndef META_RANGE_HEAT_H
#define META_RANGE_HEAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RANGE_HEAT_RANGES 128        /* ranges tracked per group */
#define RANGE_HEAT_SAMPLE 256        /* keys sampled per range per window */
#define RANGE_HEAT_KEY_MAX 256       /* sampled key bytes kept (a prefix of a
                                      * longer key: still a key boundary at or
                                      * below it) */
#define RANGE_HEAT_WINDOW_MS 1000
#define RANGE_HEAT_MIN_SAMPLE 16     /* fewer sampled keys: no split key */
#define RANGE_HEAT_MIN_SIDE_PCT 10   /* the lighter half carries at least this
                                      * share of the sample, else no split key */

struct range_heat;

/* A new, empty table; seed drives the reservoir's choices. NULL: no memory. */
struct range_heat *range_heat_new(uint64_t seed);
void range_heat_free(struct range_heat *h);

/* One request served for range range_id that touched key, at now_ms (the
 * loop's monotonic clock). Never fails: without room (or memory) the
 * request is only counted in range_heat_untracked. */
void range_heat_note(struct range_heat *h, uint64_t range_id, const char *key, uint64_t now_ms);

struct range_heat_figures {
	uint64_t requests;                   /* since this table began counting it */
	uint64_t rps;                        /* requests in the last whole window,
	                                      * per second; 0 when it is stale */
	char split_key[RANGE_HEAT_KEY_MAX + 1];   /* "" when the sample cannot split */
};

/* Range range_id's figures at now_ms; the split key is strictly above
 * start (the range's first key: a split must leave a left half). false
 * when the range has no entry (no request counted since). */
bool range_heat_get(struct range_heat *h, uint64_t range_id, const char *start, uint64_t now_ms,
		    struct range_heat_figures *out);

/* Drop the entries of ranges not in ids[0..n) (sealed, moved away). */
void range_heat_keep(struct range_heat *h, const uint64_t *ids, size_t n);

/* Requests of ranges that had no room in the table. */
uint64_t range_heat_untracked(const struct range_heat *h);

/* The split key of a sample (the keys, in any order, repeated as often as
 * they were sampled; keys is reordered): the key k > start for which the
 * sampled requests below k and those at or above k are the most even,
 * written to out (cap bytes, truncated keys never: a key that does not
 * fit is not chosen). Returns 0 with out set, or -ENOENT with out "" when
 * no key splits: fewer than RANGE_HEAT_MIN_SAMPLE keys, one distinct key
 * above start, or the lighter half under RANGE_HEAT_MIN_SIDE_PCT. */
int range_heat_split_key(const char **keys, size_t n, const char *start, char *out, size_t cap);

#endif
