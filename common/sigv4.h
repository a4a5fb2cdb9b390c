/*
 * sigv4.h — AWS Signature Version 4: parsing what a client sent, building
 * the canonical request, and computing signatures. The gateway verifies
 * with it; the benchmark client signs with it.
 *
 * Pure functions of their inputs: no I/O, no clock, no global state beyond
 * hash.h's per-thread digest context. Inputs are spans (pointer + length)
 * straight from the HTTP parser; nothing here is compiled per request.
 *
 * Canonicalisation follows AWS for S3: the URI path is percent-decoded and
 * re-encoded with the unreserved set (A-Z a-z 0-9 - _ . ~) keeping '/', and
 * is not normalised (no "."/".." or '//' folding); query parameters are
 * decoded ('+' as space), re-encoded, and sorted by name then value;
 * signed header values are trimmed with inner runs of spaces folded.
 */
#ifndef COMMON_SIGV4_H
#define COMMON_SIGV4_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define SIGV4_ALGORITHM "AWS4-HMAC-SHA256"
#define SIGV4_UNSIGNED_PAYLOAD "UNSIGNED-PAYLOAD"
#define SIGV4_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct sigv4_header {
	const char *name;
	size_t name_len;
	const char *value;
	size_t value_len;
};

/* The request as received (or as about to be sent). */
struct sigv4_request {
	const char *method;                   /* "GET", NUL-terminated */
	const char *path;                     /* raw path of the request target, before '?' */
	size_t path_len;
	const char *query;                    /* raw query after '?' (may be NULL/empty) */
	size_t query_len;
	const struct sigv4_header *headers;   /* every header of the request */
	size_t n_headers;
	const char *payload_hash;             /* x-amz-content-sha256 value, or UNSIGNED-PAYLOAD */
};

/* What a client claims: from the Authorization header or presigned query. */
struct sigv4_auth {
	char access_key[129];
	char date[9];              /* YYYYMMDD of the credential scope */
	char region[64];
	char service[32];
	char amz_date[17];         /* YYYYMMDDTHHMMSSZ: x-amz-date / X-Amz-Date */
	char signed_headers[1024]; /* lower-case names joined by ';' */
	char signature[65];        /* 64 lower-case hex digits */
	uint32_t expires_s;        /* X-Amz-Expires (presigned only) */
	bool presigned;
};

/* Parse "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request,
 * SignedHeaders=host;x-amz-date, Signature=<64 hex>". amz_date is not in the
 * header: the caller copies x-amz-date (or Date) in. Returns 0, -ENOTSUP for
 * another scheme (e.g. SigV2 "AWS AK:sig"), -EINVAL when malformed. */
int sigv4_parse_header(const char *authz, size_t len, struct sigv4_auth *a);

/* Parse presigned-URL parameters (X-Amz-Algorithm, -Credential, -Date,
 * -Expires, -SignedHeaders, -Signature) from a raw query. Returns 0,
 * -ENOENT when the query carries no X-Amz-Signature (not presigned), -ENOTSUP
 * for another algorithm, -EINVAL when malformed. */
int sigv4_parse_query(const char *query, size_t len, struct sigv4_auth *a);

/* kSigning = HMAC chain over "AWS4"+secret, date, region, service,
 * "aws4_request". Depends only on its inputs: cache it per key and day. */
void sigv4_signing_key(const char *secret, const char *date, const char *region,
		       const char *service, uint8_t key[32]);

/* The signature of req under key, for the scope, date and signed headers in
 * a (for a presigned request, X-Amz-Signature is left out of the query).
 * Writes 64 hex digits + NUL into sig_hex. Returns 0, -ENOENT when a signed
 * header is absent from the request, -EINVAL for a bad escape or an
 * oversized request, -ENOMEM. */
int sigv4_sign(const uint8_t key[32], const struct sigv4_request *req,
	       const struct sigv4_auth *a, char sig_hex[65]);

/* The canonical request text (for "SignatureDoesNotMatch" diagnostics and
 * tests): malloc'd, NUL-terminated, *out_len set. NULL on error. */
char *sigv4_canonical_request(const struct sigv4_request *req, const struct sigv4_auth *a,
			      size_t *out_len);

/* Signature of one aws-chunked chunk (STREAMING-AWS4-HMAC-SHA256-PAYLOAD):
 * over prev_sig (the seed or previous chunk signature) and the chunk's
 * SHA-256. */
void sigv4_chunk_signature(const uint8_t key[32], const struct sigv4_auth *a,
			   const char prev_sig[65], const uint8_t chunk_sha256[32],
			   char sig_hex[65]);

/* Signature of the trailing headers (…-PAYLOAD-TRAILER): over prev_sig and
 * the SHA-256 of the trailer bytes as sent ("name:value\n" lines). */
void sigv4_trailer_signature(const uint8_t key[32], const struct sigv4_auth *a,
			     const char prev_sig[65], const uint8_t trailer_sha256[32],
			     char sig_hex[65]);

/* Compare two 64-digit hex signatures in constant time. */
bool sigv4_equal(const char *a, const char *b);

/* "20130524T000000Z" -> seconds since the epoch (UTC). 0 or -EINVAL. */
int sigv4_parse_amz_date(const char *s, time_t *out);

/* Format t as "YYYYMMDDTHHMMSSZ" (17 bytes with NUL). */
void sigv4_format_amz_date(time_t t, char out[17]);

/* Render the Authorization header value for a (client side). Returns the
 * length written, or -ENOSPC when len is too small. */
int sigv4_format_header(const struct sigv4_auth *a, char *out, size_t len);

#endif
