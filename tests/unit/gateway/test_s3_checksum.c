/*
 * test_s3_checksum.c — S3 additional checksums against published check
 * values ("123456789": CRC-32 0xcbf43926, CRC-32C 0xe3069283,
 * CRC-64/NVME 0xae8b14860a799888) and digests of known strings, in the
 * base64 form S3 sends; streaming in odd pieces equals one shot; names
 * and header names both ways; base64 parsing refuses non-canonical or
 * mis-sized values.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/s3_checksum.h"

static const char *b64_of(enum s3_ck_algo a, const char *s)
{
	static char out[S3_CK_B64_MAX];
	struct s3_ck_value v;
	ck_assert_int_eq(s3_ck_compute(a, s, strlen(s), &v), 0);
	ck_assert_uint_eq(v.len, s3_ck_len(a));
	s3_ck_to_base64(&v, out);
	return out;
}

START_TEST(test_vectors)
{
	ck_assert_str_eq(b64_of(S3_CK_CRC32, "123456789"), "y/Q5Jg==");
	ck_assert_str_eq(b64_of(S3_CK_CRC32C, "123456789"), "4waSgw==");
	ck_assert_str_eq(b64_of(S3_CK_CRC64NVME, "123456789"), "rosUhgp5mIg=");
	ck_assert_str_eq(b64_of(S3_CK_SHA1, "123456789"), "98O8HYCOBHMq32eZZczDTKeuNEE=");
	ck_assert_str_eq(b64_of(S3_CK_SHA256, "123456789"),
			 "FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU=");
	ck_assert_str_eq(b64_of(S3_CK_CRC32, "hello world"), "DUoRhQ==");
	ck_assert_str_eq(b64_of(S3_CK_CRC32C, "hello world"), "yZRlqg==");
	ck_assert_str_eq(b64_of(S3_CK_CRC64NVME, "hello world"), "jSnVw/bqjr4=");
	/* The empty body, as SDKs send it for an empty object. */
	ck_assert_str_eq(b64_of(S3_CK_CRC32, ""), "AAAAAA==");
	ck_assert_str_eq(b64_of(S3_CK_CRC32C, ""), "AAAAAA==");
	ck_assert_str_eq(b64_of(S3_CK_CRC64NVME, ""), "AAAAAAAAAAA=");
	ck_assert_str_eq(b64_of(S3_CK_SHA1, ""), "2jmj7l5rSw0yVb/vlWAYkK/YBwk=");
	ck_assert_str_eq(b64_of(S3_CK_SHA256, ""), "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
}
END_TEST

/* A stream fed in pieces of every size 1..23 (crossing the 8-byte slices
 * of CRC64 and the SIMD blocks of ISA-L) equals the one-shot value, and a
 * reused calculator starts clean. */
START_TEST(test_streaming)
{
	size_t n = 100003;
	uint8_t *data = malloc(n);
	for (size_t i = 0; i < n; i++)
		data[i] = (uint8_t)(i * 131 + (i >> 7));
	struct s3_ck k;
	ck_assert_int_eq(s3_ck_init(&k), 0);
	for (int a = S3_CK_CRC32; a < S3_CK__COUNT; a++) {
		struct s3_ck_value whole, parts;
		ck_assert_int_eq(s3_ck_compute(a, data, n, &whole), 0);
		for (int round = 0; round < 2; round++) {
			s3_ck_begin(&k, a);
			size_t off = 0, step = 1;
			while (off < n) {
				size_t m = step < n - off ? step : n - off;
				s3_ck_update(&k, data + off, m);
				off += m;
				step = step % 23 + 1;
			}
			s3_ck_final(&k, &parts);
			ck_assert(s3_ck_equal(&whole, &parts));
		}
		/* One byte differs: the value differs. */
		data[n / 2] ^= 0x10;
		ck_assert_int_eq(s3_ck_compute(a, data, n, &parts), 0);
		data[n / 2] ^= 0x10;
		ck_assert(!s3_ck_equal(&whole, &parts));
	}
	s3_ck_free(&k);
	free(data);
}
END_TEST

START_TEST(test_names)
{
	ck_assert_int_eq(s3_ck_from_name("CRC32", 5), S3_CK_CRC32);
	ck_assert_int_eq(s3_ck_from_name("crc32c", 6), S3_CK_CRC32C);
	ck_assert_int_eq(s3_ck_from_name("Sha256", 6), S3_CK_SHA256);
	ck_assert_int_eq(s3_ck_from_name("CRC64NVME", 9), S3_CK_CRC64NVME);
	ck_assert_int_eq(s3_ck_from_name("CRC3", 4), S3_CK_NONE);
	ck_assert_int_eq(s3_ck_from_name("MD5", 3), S3_CK_NONE);
	ck_assert_int_eq(s3_ck_from_header("X-Amz-Checksum-SHA1", 19), S3_CK_SHA1);
	ck_assert_int_eq(s3_ck_from_header("x-amz-checksum-crc32", 20), S3_CK_CRC32);
	ck_assert_int_eq(s3_ck_from_header("x-amz-checksum-mode", 19), S3_CK_NONE);
	ck_assert_int_eq(s3_ck_from_header("x-amz-checksum-", 15), S3_CK_NONE);
	ck_assert_str_eq(s3_ck_header(S3_CK_CRC64NVME), "x-amz-checksum-crc64nvme");
	ck_assert_str_eq(s3_ck_name(S3_CK_SHA1), "SHA1");
	ck_assert_str_eq(s3_ck_name(S3_CK_NONE), "");
	ck_assert_str_eq(s3_ck_name((enum s3_ck_algo)99), "");
	ck_assert_uint_eq(s3_ck_len((enum s3_ck_algo)-1), 0);
}
END_TEST

START_TEST(test_base64)
{
	struct s3_ck_value v, w;
	ck_assert_int_eq(s3_ck_from_base64(S3_CK_CRC32, "y/Q5Jg==", 8, &v), 0);
	ck_assert_uint_eq(v.len, 4);
	ck_assert_uint_eq(v.raw[0], 0xcb);
	ck_assert_uint_eq(v.raw[3], 0x26);
	ck_assert_int_eq(s3_ck_compute(S3_CK_CRC32, "123456789", 9, &w), 0);
	ck_assert(s3_ck_equal(&v, &w));
	/* Same bytes, another algorithm: not equal. */
	ck_assert_int_eq(s3_ck_from_base64(S3_CK_CRC32C, "y/Q5Jg==", 8, &w), 0);
	ck_assert(!s3_ck_equal(&v, &w));
	/* Wrong size for the algorithm, missing padding, junk, non-zero
	 * trailing bits: refused. */
	ck_assert_int_eq(s3_ck_from_base64(S3_CK_SHA1, "y/Q5Jg==", 8, &v), -EINVAL);
	ck_assert_int_eq(s3_ck_from_base64(S3_CK_CRC32, "y/Q5Jg", 6, &v), -EINVAL);
	ck_assert_int_eq(s3_ck_from_base64(S3_CK_CRC32, "y/Q5J!==", 8, &v), -EINVAL);
	ck_assert_int_eq(s3_ck_from_base64(S3_CK_CRC32, "y/Q5Jh==", 8, &v), -EINVAL);
	ck_assert_int_eq(s3_ck_from_base64(S3_CK_CRC32, "y/Q5Jg=A", 8, &v), -EINVAL);
	ck_assert_int_eq(s3_ck_from_base64(S3_CK_NONE, "", 0, &v), -EINVAL);
	ck_assert_int_eq(s3_ck_from_base64(S3_CK_SHA256,
					   "FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU=", 44, &v), 0);
	char out[S3_CK_B64_MAX];
	ck_assert_uint_eq(s3_ck_to_base64(&v, out), 44);
	ck_assert_str_eq(out, "FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU=");
	v.algo = S3_CK_NONE;
	ck_assert_uint_eq(s3_ck_to_base64(&v, out), 0);
	ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(test_multipart)
{
	/* Parts of a 200,003-byte buffer (one empty, one odd-sized): the
	 * full-object value equals the one-shot CRC of the whole; the
	 * composite one is the algorithm over the concatenated part values. */
	enum { LEN = 200003 };
	uint8_t *buf = malloc(LEN);
	ck_assert_ptr_nonnull(buf);
	for (size_t i = 0; i < LEN; i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 13);
	const size_t cuts[] = { 0, 65536, 65536, 131072, 199999, LEN };
	const size_t np = sizeof(cuts) / sizeof(cuts[0]) - 1;
	for (int a = S3_CK_CRC32; a < S3_CK__COUNT; a++) {
		for (int full = 0; full < 2; full++) {
			struct s3_ck_parts m;
			if (!s3_ck_type_ok(a, full)) {
				ck_assert_int_eq(s3_ck_parts_begin(&m, a, full), -EINVAL);
				continue;
			}
			ck_assert_int_eq(s3_ck_parts_begin(&m, a, full), 0);
			uint8_t cat[5 * S3_CK_MAX_LEN];
			size_t cat_len = 0;
			for (size_t i = 0; i < np; i++) {
				struct s3_ck_value v;
				ck_assert_int_eq(s3_ck_compute(a, buf + cuts[i], cuts[i + 1] - cuts[i], &v), 0);
				s3_ck_parts_add(&m, &v, cuts[i + 1] - cuts[i]);
				memcpy(cat + cat_len, v.raw, v.len);
				cat_len += v.len;
			}
			struct s3_ck_value got, want;
			s3_ck_parts_final(&m, &got);
			if (full)
				ck_assert_int_eq(s3_ck_compute(a, buf, LEN, &want), 0);
			else
				ck_assert_int_eq(s3_ck_compute(a, cat, cat_len, &want), 0);
			ck_assert_msg(s3_ck_equal(&got, &want), "algo %d full %d", a, full);
		}
	}
	ck_assert(!s3_ck_type_ok(S3_CK_SHA256, true));
	ck_assert(!s3_ck_type_ok(S3_CK_CRC64NVME, false));
	ck_assert(s3_ck_type_ok(S3_CK_CRC32C, false));
	free(buf);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("s3_checksum");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_vectors);
	tcase_add_test(tc, test_streaming);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_base64);
	tcase_add_test(tc, test_multipart);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
