/*
 * s3b_body.h — object bodies, generated once: one pseudo-random buffer of
 * size + (variants - 1) * S3B_BODY_STEP bytes; body variant v is the size
 * bytes starting at v * S3B_BODY_STEP. Object i always gets variant
 * s3b_body_variant(i), so a GET can be checked against the exact bytes its
 * PUT sent, and two objects swapped by a server are caught unless they
 * share a variant (1 in `variants`).
 *
 * With payload signing, each variant's SHA-256 is computed here once, not
 * per request; variants are then fewer for large objects so that at most
 * S3B_BODY_HASH_BUDGET bytes are hashed at start.
 *
 * Read-only after init: any thread may read it.
 */
#ifndef BENCH_S3B_BODY_H
#define BENCH_S3B_BODY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define S3B_BODY_STEP 8
#define S3B_BODY_MAX_VARIANTS 1024
#define S3B_BODY_HASH_BUDGET (64u << 20)

struct s3b_body {
	uint8_t *buf;          /* size + (variants - 1) * STEP bytes */
	size_t size;           /* of one body */
	unsigned variants;
	char (*sha256_hex)[65]; /* per variant, when hashed; else NULL */
};

/* Generate the buffer from seed (and hash it when with_sha256). Returns 0
 * or -ENOMEM. */
int s3b_body_init(struct s3b_body *b, size_t size, uint64_t seed, bool with_sha256);
void s3b_body_free(struct s3b_body *b);

static inline unsigned s3b_body_variant(const struct s3b_body *b, uint64_t obj)
{
	uint64_t z = obj * 0x9E3779B97F4A7C15ull; /* spread neighbours apart */
	return (unsigned)((z >> 32) % b->variants);
}

static inline const uint8_t *s3b_body_data(const struct s3b_body *b, unsigned variant)
{
	return b->buf + (size_t)variant * S3B_BODY_STEP;
}

#endif
