/*
 * ec.h — Reed-Solomon erasure coding over ISA-L: k data shards, m parity
 * shards, any k+m <= EC_MAX_SHARDS, Cauchy matrix (so that every set of k
 * survivors is invertible). Default IOLake layout is 4+2.
 *
 * An ec_code is immutable after ec_new() and may be shared by any number
 * of threads. Encode and decode work on one stripe of equal-length shards
 * held in caller memory; they allocate nothing per call except decode's
 * small tables (on the stack).
 */
#ifndef COMMON_EC_H
#define COMMON_EC_H

#include <stddef.h>
#include <stdint.h>

#define EC_MAX_SHARDS 16

struct ec_code;

/* Make a k+m code: 1 <= k, 0 <= m, k + m <= EC_MAX_SHARDS. Returns 0 and
 * *out, -EINVAL for a bad k/m, -ENOMEM. */
int ec_new(unsigned k, unsigned m, struct ec_code **out);
void ec_free(struct ec_code *c);

unsigned ec_k(const struct ec_code *c);
unsigned ec_m(const struct ec_code *c);

/* Parse "4+2" into k and m (range-checked as ec_new does); 0 or -EINVAL. */
int ec_parse(const char *s, unsigned *k, unsigned *m);

/* Compute the m parity shards of one stripe: data[0..k-1] and
 * parity[0..m-1] each point to len bytes. len need not be aligned. */
void ec_encode(const struct ec_code *c, size_t len, const uint8_t *const *data,
	       uint8_t *const *parity);

/* Rebuild shards of one stripe. shards[0..k+m-1] each point to len bytes
 * (data shards first, then parity). Bit i of present says shards[i] holds
 * valid bytes; bit i of want says shards[i] must be filled in. Present
 * shards are only read; shards neither present nor wanted may be NULL.
 * Returns 0, or -EINVAL when fewer than k shards are present or want asks
 * for an index >= k+m. */
int ec_decode(const struct ec_code *c, size_t len, uint8_t *const *shards,
	      uint32_t present, uint32_t want);

#endif
