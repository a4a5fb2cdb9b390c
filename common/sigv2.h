/*
 * sigv2.h — AWS Signature Version 2 for S3 (the older HMAC-SHA1 scheme):
 * parsing what a client sent and computing the signature it should carry.
 * Debian 12's boto3 (1.26) makes SigV2 presigned URLs by default, and
 * MinIO and Ceph RGW accept it; the gateway verifies with it
 * (gateway/s3_auth), behind a flag.
 *
 * Two forms (AWS "Signing and authenticating REST requests"):
 *   header:    Authorization: AWS AKID:base64(HMAC-SHA1(secret, StringToSign))
 *   presigned: ?AWSAccessKeyId=AKID&Expires=EPOCH&Signature=base64(...)
 *
 *   StringToSign = VERB "\n" Content-MD5 "\n" Content-Type "\n"
 *                  Date "\n"            (the Date header; presigned: Expires)
 *                  CanonicalizedAmzHeaders   ("name:v1,v2\n" per x-amz-*
 *                                             header, names lower-case,
 *                                             sorted, values trimmed)
 *                  CanonicalizedResource     ("/bucket" when the bucket is
 *                                             in the Host, then the raw
 *                                             path, then "?" and the
 *                                             subresources of interest,
 *                                             sorted by name, values
 *                                             percent-decoded)
 *
 * Pure functions of their inputs: no I/O, no clock. Shares the header
 * span type with sigv4.
 */
#ifndef COMMON_SIGV2_H
#define COMMON_SIGV2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/sigv4.h"

#define SIGV2_SIG_LEN 28          /* base64 of a 20-byte HMAC-SHA1 */
#define SIGV2_STS_MAX (16 * 1024) /* a longer StringToSign is refused */

struct sigv2_auth {
	char access_key[129];
	/* Empty when what the client sent is not base64 of 20 bytes (a wrong
	 * length, a bad escape, a stray character): such a signature matches
	 * nothing, so the request gets SignatureDoesNotMatch, as from AWS,
	 * not a complaint about missing parameters. */
	char signature[SIGV2_SIG_LEN + 1];
	bool presigned;
	int64_t expires;              /* presigned: Expires (epoch seconds) */
	/* AWS's text says a Date line is empty when x-amz-date is sent; MinIO,
	 * s3cmd and botocore put the Date header there whatever x-amz-date
	 * says (which is the same thing when no Date header is sent). false:
	 * the clients' way; true: AWS's text (a verifier tries both when a
	 * request has both headers). */
	bool blank_date;
};

struct sigv2_request {
	const char *method;                 /* "GET", NUL-terminated */
	const char *path;                   /* raw path as sent, before '?' */
	size_t path_len;
	const char *query;                  /* raw query after '?' (may be NULL) */
	size_t query_len;
	const struct sigv4_header *headers;
	size_t n_headers;
	const char *vhost_bucket;           /* bucket named by Host, or NULL */
	size_t vhost_bucket_len;
};

/* "AWS AKID:SIG". 0 (a malformed SIG leaves signature empty); -ENOENT
 * when the header is not of that scheme; -EINVAL when it has no colon or
 * no valid key id. */
int sigv2_parse_header(const char *v, size_t n, struct sigv2_auth *a);

/* AWSAccessKeyId, Signature and Expires from a raw query. 0 (a malformed
 * Signature leaves signature empty); -ENOENT when the query has neither
 * AWSAccessKeyId nor Signature; -EINVAL when one of the three is missing
 * or repeated, or the key id or Expires is malformed. */
int sigv2_parse_query(const char *q, size_t n, struct sigv2_auth *a);

/* The StringToSign of req for a (date from the Date header unless
 * presigned). malloc'd, NUL-terminated, *len set; NULL on -ENOMEM or when
 * it would exceed SIGV2_STS_MAX. */
char *sigv2_string_to_sign(const struct sigv2_request *req, const struct sigv2_auth *a,
			   size_t *len);

/* base64(HMAC-SHA1(secret, StringToSign)) into sig (29 bytes with NUL).
 * 0, -ENOMEM or -E2BIG (see above). */
int sigv2_sign(const char *secret, const struct sigv2_request *req, const struct sigv2_auth *a,
	       char sig[SIGV2_SIG_LEN + 1]);

/* Constant-time comparison of two signatures. */
bool sigv2_equal(const char *a, const char *b);

#endif
