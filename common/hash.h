/*
 * hash.h — SHA-256, HMAC-SHA256 and MD5 over OpenSSL 3, for SigV4 and
 * ETags, plus hex encoding and FNV-1a (the slots of small tables).
 *
 * The EVP_MD objects are fetched once per process (EVP_MD_fetch) and each
 * thread reuses one EVP_MD_CTX, so a hash costs no allocation and no
 * provider lookup: a per-request fetch is a known gateway CPU sink.
 * All functions are thread-safe.
 */
#ifndef COMMON_HASH_H
#define COMMON_HASH_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32
#define MD5_LEN 16

void hash_sha256(const void *data, size_t len, uint8_t out[SHA256_LEN]);
/* SHA-256 of a's bytes followed by b's (a record with a span left out),
 * at no allocation, as hash_sha256. */
void hash_sha256_2(const void *a, size_t alen, const void *b, size_t blen,
		   uint8_t out[SHA256_LEN]);

/* HMAC-SHA256 (RFC 2104) of data under key. */
void hash_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
		      uint8_t out[SHA256_LEN]);

void hash_md5(const void *data, size_t len, uint8_t out[MD5_LEN]);

/* Incremental hashing for streamed bodies. Opaque; one per stream. */
struct hash_stream;
enum hash_alg { HASH_MD5, HASH_SHA256 };
struct hash_stream *hash_stream_new(enum hash_alg alg);   /* NULL: no memory */
void hash_stream_update(struct hash_stream *h, const void *data, size_t len);
/* Write the digest (16 or 32 bytes) and reset h for another stream. */
void hash_stream_final(struct hash_stream *h, uint8_t *out);
void hash_stream_free(struct hash_stream *h);

/* Lower-case hex of n bytes into out (2n+1 bytes, NUL-terminated). */
void hash_hex(const uint8_t *in, size_t n, char *out);

/* Decode 2n hex digits (either case) into n bytes; 0 or -EINVAL. */
int hash_unhex(const char *in, size_t n, uint8_t *out);

/* FNV-1a (32 bits) of n bytes, and of a NUL-ended string: the slot of a
 * name in the small direct-mapped tables (bucket routes, bucket rows,
 * credentials, methods). Not a defence against chosen collisions: each
 * table bounds what a collision costs. */
static inline uint32_t hash_fnv1a(const void *data, size_t n)
{
	const uint8_t *p = data;
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static inline uint32_t hash_fnv1a_str(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

#endif
