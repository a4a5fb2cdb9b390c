/*
 * s3b_body.c — pre-generated bodies (see s3b_body.h).
 */
#include "bench/s3bench/s3b_body.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

int s3b_body_init(struct s3b_body *b, size_t size, uint64_t seed, bool with_sha256)
{
	memset(b, 0, sizeof(*b));
	unsigned variants = S3B_BODY_MAX_VARIANTS;
	if (with_sha256) {
		size_t fit = S3B_BODY_HASH_BUDGET / size;
		variants = fit < 1 ? 1 : fit < variants ? (unsigned)fit : variants;
	}
	size_t len = size + (size_t)(variants - 1) * S3B_BODY_STEP;
	b->buf = malloc(len + sizeof(uint64_t));
	if (!b->buf)
		return -ENOMEM;
	for (size_t i = 0; i < len; i += sizeof(uint64_t)) {
		uint64_t r = splitmix(&seed);
		memcpy(b->buf + i, &r, sizeof(r));
	}
	b->size = size;
	b->variants = variants;
	if (with_sha256) {
		b->sha256_hex = calloc(variants, sizeof(*b->sha256_hex));
		if (!b->sha256_hex) {
			free(b->buf);
			memset(b, 0, sizeof(*b));
			return -ENOMEM;
		}
		for (unsigned v = 0; v < variants; v++) {
			uint8_t d[SHA256_LEN];
			hash_sha256(s3b_body_data(b, v), size, d);
			hash_hex(d, SHA256_LEN, b->sha256_hex[v]);
		}
	}
	return 0;
}

void s3b_body_free(struct s3b_body *b)
{
	free(b->buf);
	free(b->sha256_hex);
	memset(b, 0, sizeof(*b));
}
