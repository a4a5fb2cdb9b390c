/*
 * test_sse_crypt.c — the SSE chunk cipher (gateway/sse_crypt.h): a stream
 * encrypted and decrypted whole and by ranges (chunk boundaries, the last
 * byte, one byte) against the plaintext, the range map's arithmetic, a
 * flipped stored byte or a wrong key refused (-EBADMSG), chunks swapped
 * or a stream cut after a chunk refused, customer key check values.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/sse_crypt.h"

#define CB 4096u   /* a small chunk keeps the cases quick; the code is the same */

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

/* Encrypt plain (n bytes) with the stream encryptor, feeding odd slices. */
static uint8_t *encrypt(const uint8_t key[32], const uint8_t *plain, size_t n, size_t *out_n)
{
	struct sse_enc e;
	ck_assert_int_eq(sse_enc_init(&e, key, n, CB), 0);
	size_t cap = (size_t)sse_stored_len(n, CB), o = 0, i = 0;
	uint8_t *st = malloc(cap ? cap : 1);
	size_t step = 777;
	while (i < n) {
		size_t want = n - i < step ? n - i : step;
		size_t took = sse_enc_put(&e, plain + i, want);
		i += took;
		if (sse_enc_full(&e)) {
			const uint8_t *b;
			size_t bl;
			ck_assert_int_eq(sse_enc_seal(&e, &b, &bl), 0);
			ck_assert_uint_le(o + bl, cap);
			memcpy(st + o, b, bl);
			o += bl;
		}
		step = step * 3 % 10007 + 1;
	}
	ck_assert(!sse_enc_full(&e));
	ck_assert_uint_eq(sse_enc_put(&e, plain, 1), 0);   /* nothing past the size */
	ck_assert_uint_eq(o, cap);
	sse_enc_fini(&e);
	*out_n = o;
	return st;
}

/* Decrypt [off, off+len) from the stored bytes the map names, fed in
 * slices of piece bytes. 0 with the bytes in out, or the error. */
static int decrypt(const uint8_t key[32], const uint8_t *st, uint64_t plain, uint64_t off,
		   uint64_t len, size_t piece, uint8_t *out)
{
	struct sse_range r;
	sse_map_range(plain, CB, off, len, &r);
	ck_assert_uint_le(r.stored_off + r.stored_len, sse_stored_len(plain, CB));
	struct sse_dec d;
	ck_assert_int_eq(sse_dec_init(&d, key, plain, CB, off, len), 0);
	size_t got = 0, i = 0;
	int rc = 0;
	while (i < r.stored_len && !rc) {
		size_t want = r.stored_len - i < piece ? r.stored_len - i : piece;
		size_t took = sse_dec_put(&d, st + r.stored_off + i, want);
		ck_assert_uint_gt(took, 0);
		i += took;
		if (sse_dec_full(&d)) {
			const uint8_t *b;
			size_t bl;
			rc = sse_dec_open(&d, &b, &bl);
			if (!rc) {
				memcpy(out + got, b, bl);
				got += bl;
			}
		}
	}
	if (!rc)
		ck_assert_uint_eq(got, len);
	sse_dec_fini(&d);
	return rc;
}

static const uint8_t key1[32] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
static const uint8_t key2[32] = { 1, 2, 3, 4, 5, 6, 7, 8, 10 };

START_TEST(map)
{
	struct sse_range r;
	uint64_t stride = CB + SSE_TAG_BYTES;
	ck_assert_uint_eq(sse_stored_len(0, CB), 0);
	ck_assert_uint_eq(sse_stored_len(1, CB), 1 + 16);
	ck_assert_uint_eq(sse_stored_len(CB, CB), stride);
	ck_assert_uint_eq(sse_stored_len(CB + 1, CB), stride + 17);
	sse_map_range(10 * CB, CB, 0, 1, &r);
	ck_assert_uint_eq(r.stored_off, 0);
	ck_assert_uint_eq(r.stored_len, stride);
	ck_assert_uint_eq(r.skip, 0);
	sse_map_range(10 * CB, CB, CB - 1, 2, &r);   /* across a boundary */
	ck_assert_uint_eq(r.first_chunk, 0);
	ck_assert_uint_eq(r.stored_len, 2 * stride);
	ck_assert_uint_eq(r.skip, CB - 1);
	sse_map_range(10 * CB + 5, CB, 10 * CB + 4, 1, &r);   /* the last byte */
	ck_assert_uint_eq(r.first_chunk, 10);
	ck_assert_uint_eq(r.stored_off, 10 * stride);
	ck_assert_uint_eq(r.stored_len, 5 + 16);
	ck_assert_uint_eq(r.skip, 4);
}
END_TEST

START_TEST(round_trip)
{
	size_t sizes[] = { 1, 100, CB - 1, CB, CB + 1, 5 * CB, 7 * CB + 333 };
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t n = sizes[s], sn;
		uint8_t *p = malloc(n), *out = malloc(n);
		fill(p, n, (uint32_t)s);
		uint8_t *st = encrypt(key1, p, n, &sn);
		ck_assert_uint_eq(sn, sse_stored_len(n, CB));
		/* Not the plaintext: no 32-byte run of it survives. */
		if (n >= 64)
			ck_assert_ptr_null(memmem(st, sn, p + 16, 32));
		ck_assert_int_eq(decrypt(key1, st, n, 0, n, 1000, out), 0);
		ck_assert_mem_eq(out, p, n);
		/* Ranges: chunk boundaries, one byte, the last byte, the middle. */
		uint64_t offs[][2] = { { 0, 1 }, { n - 1, 1 }, { n / 2, n - n / 2 }, { n / 3, n / 3 + 1 },
				       { CB - 1 < n ? CB - 1 : 0, n > CB ? 2 : 1 },
				       { n > CB ? CB : 0, n > CB ? n - CB : n } };
		for (size_t k = 0; k < sizeof(offs) / sizeof(offs[0]); k++) {
			uint64_t off = offs[k][0], len = offs[k][1];
			if (!len || off + len > n)
				continue;
			memset(out, 0, n);
			ck_assert_int_eq(decrypt(key1, st, n, off, len, 4099, out), 0);
			ck_assert_mem_eq(out, p + off, len);
		}
		free(st), free(p), free(out);
	}
}
END_TEST

START_TEST(tamper)
{
	size_t n = 3 * CB + 10, sn;
	uint8_t *p = malloc(n), *out = malloc(n);
	fill(p, n, 7);
	uint8_t *st = encrypt(key1, p, n, &sn);
	/* A wrong key: the first chunk fails. */
	ck_assert_int_eq(decrypt(key2, st, n, 0, n, 512, out), -EBADMSG);
	/* One flipped bit anywhere (ciphertext or tag) fails its chunk. */
	size_t at[] = { 0, CB - 1, CB + 3, CB + SSE_TAG_BYTES - 1 + CB, sn - 1 };
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		st[at[i]] ^= 0x10;
		ck_assert_int_eq(decrypt(key1, st, n, 0, n, 512, out), -EBADMSG);
		st[at[i]] ^= 0x10;
	}
	ck_assert_int_eq(decrypt(key1, st, n, 0, n, 512, out), 0);
	/* Two whole chunks swapped: the nonce names the index. */
	size_t stride = CB + SSE_TAG_BYTES;
	uint8_t *sw = malloc(sn);
	memcpy(sw, st, sn);
	memcpy(sw, st + stride, stride);
	memcpy(sw + stride, st, stride);
	ck_assert_int_eq(decrypt(key1, sw, n, 0, CB, 512, out), -EBADMSG);
	/* Cut after two whole chunks: chunk 1 was not sealed as the last. */
	ck_assert_int_eq(decrypt(key1, st, 2 * CB, 0, 2 * CB, 512, out), -EBADMSG);
	free(sw), free(st), free(p), free(out);
}
END_TEST

START_TEST(keys)
{
	uint8_t oid1[16] = { 1 }, oid2[16] = { 2 }, k1[32], k2[32], k3[32];
	ck_assert_int_eq(sse_stream_key(key1, oid1, k1), 0);
	ck_assert_int_eq(sse_stream_key(key1, oid2, k2), 0);
	ck_assert_int_eq(sse_stream_key(key1, oid1, k3), 0);
	ck_assert(memcmp(k1, k2, 32) != 0);
	ck_assert_mem_eq(k1, k3, 32);
	uint8_t c1[SSE_CHECK_BYTES], c2[SSE_CHECK_BYTES];
	ck_assert_int_eq(sse_key_check_make(key1, c1), 0);
	ck_assert_int_eq(sse_key_check_make(key1, c2), 0);
	ck_assert(memcmp(c1, c2, sizeof(c1)) != 0);   /* salted */
	ck_assert(sse_key_check_ok(key1, c1, sizeof(c1)));
	ck_assert(sse_key_check_ok(key1, c2, sizeof(c2)));
	ck_assert(!sse_key_check_ok(key2, c1, sizeof(c1)));
	ck_assert(!sse_key_check_ok(key1, c1, sizeof(c1) - 1));
	c1[20] ^= 1;
	ck_assert(!sse_key_check_ok(key1, c1, sizeof(c1)));
	/* The key itself is not in the check value. */
	ck_assert_ptr_null(memmem(c2, sizeof(c2), key1, 9));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sse_crypt");
	TCase *tc = tcase_create("sse");
	tcase_add_test(tc, map);
	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, tamper);
	tcase_add_test(tc, keys);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
