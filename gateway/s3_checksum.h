/*
 * s3_checksum.h — S3's additional checksums (x-amz-checksum-crc32,
 * -crc32c, -sha1, -sha256, -crc64nvme): streaming calculators, the names
 * S3 uses for them on the wire, and the base64 form in which S3 sends a
 * value (the digest bytes; a CRC as its big-endian integer).
 *
 * CRC32 (gzip/IEEE, reflected) and CRC32C come from ISA-L, SHA-1 and
 * SHA-256 from OpenSSL (EVP_MDs fetched once per process), CRC64NVME
 * (poly 0xad93d23594c93659, reflected, init and xorout all ones — the
 * "Rocksoft" CRC, absent from Debian's ISA-L 2.30) from a slice-by-8
 * table here.
 *
 * Owns: one struct s3_ck per stream; its OpenSSL context is allocated by
 * s3_ck_init and reused by every s3_ck_begin, so a request allocates
 * nothing. Pure computation: no I/O, any thread (one s3_ck per thread).
 * Does not decide which checksum a request asks for (s3_server does) nor
 * store it (the object record does).
 */
#ifndef GATEWAY_S3_CHECKSUM_H
#define GATEWAY_S3_CHECKSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Values are meta.proto's ChecksumAlgo: records store them as is. */
enum s3_ck_algo {
	S3_CK_NONE = 0,
	S3_CK_CRC32 = 1,
	S3_CK_CRC32C = 2,
	S3_CK_SHA1 = 3,
	S3_CK_SHA256 = 4,
	S3_CK_CRC64NVME = 5,
	S3_CK__COUNT
};

#define S3_CK_MAX_LEN 32                 /* raw bytes of the longest (SHA-256) */
#define S3_CK_B64_MAX 48                 /* base64 of the longest, NUL, and room */

/* A computed or claimed value. */
struct s3_ck_value {
	enum s3_ck_algo algo;            /* S3_CK_NONE: no value */
	uint8_t len;                     /* s3_ck_len(algo) */
	uint8_t raw[S3_CK_MAX_LEN];
};

struct s3_ck {
	enum s3_ck_algo algo;
	uint32_t crc32;
	uint64_t crc64;
	void *md;                        /* EVP_MD_CTX, for SHA-1 / SHA-256 */
};

/* Raw length of a value: 4 (CRC32, CRC32C), 8 (CRC64NVME), 20 (SHA-1),
 * 32 (SHA-256); 0 for NONE or out of range. */
size_t s3_ck_len(enum s3_ck_algo a);

/* "CRC32", "CRC32C", "SHA1", "SHA256", "CRC64NVME" (the
 * x-amz-sdk-checksum-algorithm and XML spelling); "" for NONE. */
const char *s3_ck_name(enum s3_ck_algo a);

/* "x-amz-checksum-crc32" ... ; "" for NONE. */
const char *s3_ck_header(enum s3_ck_algo a);

/* From an algorithm name (case-insensitive, n bytes) or a header name
 * ("x-amz-checksum-crc32", case-insensitive); S3_CK_NONE when unknown. */
enum s3_ck_algo s3_ck_from_name(const char *s, size_t n);
enum s3_ck_algo s3_ck_from_header(const char *s, size_t n);

/* 0, or -ENOMEM. k is unusable until s3_ck_begin. */
int s3_ck_init(struct s3_ck *k);
void s3_ck_free(struct s3_ck *k);

/* Start a stream of algorithm a (NONE: updates do nothing). */
void s3_ck_begin(struct s3_ck *k, enum s3_ck_algo a);
void s3_ck_update(struct s3_ck *k, const void *data, size_t len);
/* The stream's value into *out; k needs s3_ck_begin before reuse. */
void s3_ck_final(struct s3_ck *k, struct s3_ck_value *out);

/* One-shot, for tests and small inputs; 0 or -ENOMEM. */
int s3_ck_compute(enum s3_ck_algo a, const void *data, size_t len, struct s3_ck_value *out);

/* Base64 of v->raw into out (S3_CK_B64_MAX bytes, NUL-terminated);
 * returns the length ("" and 0 for NONE). */
size_t s3_ck_to_base64(const struct s3_ck_value *v, char out[S3_CK_B64_MAX]);

/* Parse a base64 value of algorithm a (n bytes, exactly the canonical
 * encoding of s3_ck_len(a) bytes, padding included) into *out. 0, or
 * -EINVAL. */
int s3_ck_from_base64(enum s3_ck_algo a, const char *s, size_t n, struct s3_ck_value *out);

bool s3_ck_equal(const struct s3_ck_value *x, const struct s3_ck_value *y);

/* A multipart object's checksum from its parts' values, in part order:
 * COMPOSITE (full false) is algorithm a over the concatenated raw part
 * values (S3 shows it with "-<parts>"); FULL_OBJECT (full true; CRC32,
 * CRC32C, CRC64NVME only) is the CRC of the whole object, combined from
 * each part's CRC and size without the bytes (common/crc_combine). */
struct s3_ck_parts {
	enum s3_ck_algo algo;
	bool full;
	uint64_t crc;                    /* FULL_OBJECT: the CRC so far */
	struct s3_ck k;                  /* COMPOSITE: the hash of the values */
};

/* Whether S3 allows that type for that algorithm: COMPOSITE for all but
 * CRC64NVME, FULL_OBJECT for the three CRCs. */
bool s3_ck_type_ok(enum s3_ck_algo a, bool full);

/* 0, -EINVAL (a type S3 does not allow), -ENOMEM. */
int s3_ck_parts_begin(struct s3_ck_parts *m, enum s3_ck_algo a, bool full);
/* One part's value (of m's algorithm) and size. */
void s3_ck_parts_add(struct s3_ck_parts *m, const struct s3_ck_value *part, uint64_t size);
/* The object's value into *out; releases m. */
void s3_ck_parts_final(struct s3_ck_parts *m, struct s3_ck_value *out);

#endif
