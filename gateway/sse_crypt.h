/*
 * sse_crypt.h — the chunk cipher of server-side encryption (issue 18):
 * an object body as stored is its plaintext cut into chunks of
 * SSE_CHUNK_BYTES (the last one shorter), each encrypted with
 * AES-256-GCM and followed by its 16-byte tag:
 *
 *   stored = E(c0) T0 E(c1) T1 ... E(cn-1) Tn-1
 *
 * so a plaintext range maps onto whole stored chunks (sse_map_range) and
 * a range GET decrypts, and authenticates, only the chunks it covers.
 * Chunk i is encrypted under the stream key with the 96-bit nonce
 * be64(i) || be32(last ? 1 : 0): unique per (key, chunk), and a stream
 * cut after a chunk does not verify as a shorter one.
 *
 * Keys: a stream (one gw_data PUT: an object, or one part of a multipart
 * object) has its own stream key, HMAC-SHA256(base key, label || the
 * PUT's 16-byte random object id), so no (key, nonce) pair repeats across
 * objects, parts uploaded twice or copies. The base key is the customer's
 * key (SSE-C) or the object's random data key (SSE-S3, wrapped by the
 * cluster's master key: s3_sse.c). A customer key is never stored: its
 * check value, salt || HMAC-SHA256(key, label || salt), is.
 *
 * Owns: the byte formats above, the stream encryptor, per-chunk
 * decryption, the range map. Does not: choose keys, parse headers, talk
 * to anything (pure; any thread; OpenSSL 3 EVP, AES-NI when present).
 */
#ifndef GATEWAY_SSE_CRYPT_H
#define GATEWAY_SSE_CRYPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SSE_CHUNK_BYTES 65536u   /* plaintext bytes per chunk */
#define SSE_TAG_BYTES 16u
#define SSE_KEY_BYTES 32u
#define SSE_OID_BYTES 16u        /* the gw_data object id the stream key is bound to */
#define SSE_CHECK_SALT_BYTES 16u
#define SSE_CHECK_BYTES (SSE_CHECK_SALT_BYTES + 32u)   /* salt || HMAC-SHA256 */

/* Stored length of a plaintext of plain bytes (chunk bytes plus one tag
 * per chunk; 0 for 0). */
uint64_t sse_stored_len(uint64_t plain, uint32_t chunk_bytes);

/* Chunks of a plaintext of plain bytes. */
uint64_t sse_nchunks(uint64_t plain, uint32_t chunk_bytes);

/* A plaintext range [off, off+len) of an object of plain bytes (len > 0,
 * off+len <= plain) as stored bytes: whole chunks first_chunk..., from
 * stored_off for stored_len bytes; skip plaintext bytes of the first
 * chunk come before the range. */
struct sse_range {
	uint64_t stored_off, stored_len;
	uint64_t first_chunk;
	uint32_t skip;
};
void sse_map_range(uint64_t plain, uint32_t chunk_bytes, uint64_t off, uint64_t len,
		   struct sse_range *out);

/* The stream key of base key for the PUT whose object id is oid. 0 or
 * -EIO. */
int sse_stream_key(const uint8_t base[SSE_KEY_BYTES], const uint8_t oid[SSE_OID_BYTES],
		   uint8_t out[SSE_KEY_BYTES]);

/* A customer key's check value (a fresh random salt), and whether key
 * matches a stored one (constant time; false for a malformed value). */
int sse_key_check_make(const uint8_t key[SSE_KEY_BYTES], uint8_t out[SSE_CHECK_BYTES]);
bool sse_key_check_ok(const uint8_t key[SSE_KEY_BYTES], const uint8_t *check, size_t len);

/* One chunk. Encrypt len plaintext bytes (1..chunk bytes) into out
 * (len + SSE_TAG_BYTES); decrypt a stored chunk of n bytes (tag included)
 * into out (n - SSE_TAG_BYTES). 0, -EINVAL, -EIO (OpenSSL), and for
 * decryption -EBADMSG when the tag does not verify (wrong key, changed
 * bytes, wrong index or last flag). */
struct sse_ctx;
struct sse_ctx *sse_ctx_new(const uint8_t key[SSE_KEY_BYTES]);
void sse_ctx_free(struct sse_ctx *c);
int sse_seal_chunk(struct sse_ctx *c, uint64_t idx, bool last, const uint8_t *in, size_t len,
		   uint8_t *out);
int sse_open_chunk(struct sse_ctx *c, uint64_t idx, bool last, const uint8_t *in, size_t n,
		   uint8_t *out);

/* The stream encryptor: plaintext of a known size in, stored chunks out.
 * sse_enc_put copies what fits of the current chunk and returns the count
 * taken; when sse_enc_full, sse_enc_seal encrypts that chunk and gives its
 * stored bytes (valid until the next call), and the next chunk begins. */
struct sse_enc {
	struct sse_ctx *ctx;
	uint64_t plain, fed;         /* announced size, bytes taken */
	uint64_t chunk;              /* index of the chunk filling */
	uint32_t chunk_bytes;
	uint32_t fill, want;         /* bytes in the chunk, bytes it needs */
	uint8_t *in, *out;           /* chunk_bytes, chunk_bytes + tag */
};
int sse_enc_init(struct sse_enc *e, const uint8_t key[SSE_KEY_BYTES], uint64_t plain,
		 uint32_t chunk_bytes);
void sse_enc_fini(struct sse_enc *e);
size_t sse_enc_put(struct sse_enc *e, const uint8_t *in, size_t len);
bool sse_enc_full(const struct sse_enc *e);
int sse_enc_seal(struct sse_enc *e, const uint8_t **out, size_t *out_len);

/* The stream decryptor of one range (sse_map_range): stored bytes in, in
 * order from r->stored_off, the range's plaintext out. sse_dec_put takes
 * what fits of the current chunk; when sse_dec_full, sse_dec_open checks
 * and decrypts it and gives the range's bytes of it (at least one: the
 * map starts at the range's first chunk and stops after its last). */
struct sse_dec {
	struct sse_ctx *ctx;
	uint64_t plain;              /* the object's plaintext size */
	uint64_t chunk;              /* index of the chunk filling */
	uint64_t left;               /* range bytes still to hand out */
	uint32_t chunk_bytes;
	uint32_t skip;               /* range bytes to drop at the next open */
	uint32_t fill, want;
	uint8_t *in, *out;
};
int sse_dec_init(struct sse_dec *d, const uint8_t key[SSE_KEY_BYTES], uint64_t plain,
		 uint32_t chunk_bytes, uint64_t off, uint64_t len);
void sse_dec_fini(struct sse_dec *d);
size_t sse_dec_put(struct sse_dec *d, const uint8_t *in, size_t len);
bool sse_dec_full(const struct sse_dec *d);
int sse_dec_open(struct sse_dec *d, const uint8_t **out, size_t *out_len);
/* The same into dst (at least chunk_bytes): the range's bytes are
 * dst[*skip, *skip + *len). */
int sse_dec_open_to(struct sse_dec *d, uint8_t *dst, size_t *skip, size_t *len);

#endif
