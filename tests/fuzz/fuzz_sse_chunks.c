/*
 * fuzz_sse_chunks.c — libFuzzer target for the SSE chunk cipher
 * (gateway/sse_crypt.h) on stored bytes nobody vouches for.
 *
 * Input: 8 bytes choosing a plaintext size (at most 5 chunks of 256
 * bytes), a range offset and length, then bytes. Two checks:
 *   - the bytes, encrypted as a stream under a fixed key, decrypt through
 *     the range map to exactly the range's plaintext;
 *   - the bytes taken as stored data (any length, any content) fed to the
 *     decryptor of that range either fail with -EBADMSG or, when they are
 *     the real ciphertext, give the range; never more bytes than the range.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/sse_crypt.h"

#define CB 256u

static const uint8_t key[SSE_KEY_BYTES] = { 7, 7, 7 };

/* Decrypt [off, off+len) of a plaintext of plain bytes from stored (n
 * bytes, from the range's first stored byte); 0 with out filled, or the
 * first error. */
static int dec(uint64_t plain, uint64_t off, uint64_t len, const uint8_t *stored, size_t n,
	       uint8_t *out)
{
	struct sse_dec d;
	if (sse_dec_init(&d, key, plain, CB, off, len))
		abort();
	size_t i = 0, got = 0;
	int rc = 0;
	while (i < n && !rc) {
		size_t t = sse_dec_put(&d, stored + i, n - i);
		if (!t)
			break;
		i += t;
		if (sse_dec_full(&d)) {
			const uint8_t *b;
			size_t bl;
			rc = sse_dec_open(&d, &b, &bl);
			if (!rc) {
				if (got + bl > len)
					abort();
				memcpy(out + got, b, bl);
				got += bl;
			} else if (rc != -EBADMSG) {
				abort();
			}
		}
	}
	if (!rc && got != len)
		rc = -EAGAIN;   /* short input */
	sse_dec_fini(&d);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 8)
		return 0;
	uint64_t plain = 1 + ((uint64_t)data[0] | (uint64_t)data[1] << 8) % (5 * CB);
	uint64_t off = ((uint64_t)data[2] | (uint64_t)data[3] << 8) % plain;
	uint64_t len = 1 + ((uint64_t)data[4] | (uint64_t)data[5] << 8) % (plain - off);
	data += 8, size -= 8;
	uint8_t *pt = calloc(1, plain);
	memcpy(pt, data, size < plain ? size : plain);
	/* the real ciphertext */
	struct sse_enc e;
	if (sse_enc_init(&e, key, plain, CB))
		abort();
	size_t sn = (size_t)sse_stored_len(plain, CB), o = 0, i = 0;
	uint8_t *st = malloc(sn);
	while (i < plain) {
		i += sse_enc_put(&e, pt + i, plain - i);
		const uint8_t *b;
		size_t bl;
		if (!sse_enc_full(&e) || sse_enc_seal(&e, &b, &bl) || o + bl > sn)
			abort();
		memcpy(st + o, b, bl);
		o += bl;
	}
	sse_enc_fini(&e);
	if (o != sn)
		abort();
	struct sse_range r;
	sse_map_range(plain, CB, off, len, &r);
	if (r.stored_off + r.stored_len > sn)
		abort();
	uint8_t *out = malloc(len);
	if (dec(plain, off, len, st + r.stored_off, r.stored_len, out) || memcmp(out, pt + off, len))
		abort();
	/* the input as stored bytes: refused unless it is the ciphertext */
	int rc = dec(plain, off, len, data, size, out);
	if (rc == 0 && (size < r.stored_len || memcmp(data, st + r.stored_off, r.stored_len)))
		abort();   /* a forgery verified */
	free(out), free(st), free(pt);
	return 0;
}
