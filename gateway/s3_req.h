/*
 * s3_req.h — S3 request routing: from the method, the raw request target
 * and the Host header to (bucket, key, query table, operation), with S3's
 * naming rules applied. The first thing the gateway does with a request
 * once its headers are in; everything after it switches on s3_req.op.
 *
 * Owns nothing: decoded strings (bucket, key, query names and values) are
 * written into a scratch area the caller provides (the connection's arena,
 * S3_REQ_SCRATCH(target_len) bytes), and raw spans point into the caller's
 * target. The query is split by a hand-written scanner into a fixed table
 * of S3_QUERY_MAX entries: no allocation, no regex, one pass.
 *
 * Addressing: virtual-host style when Host is "<bucket>.<domain>" for one
 * of the configured domains (port ignored, case-insensitive); path style
 * otherwise ("/bucket/key"). In path style "PUT /bucket/" (trailing slash,
 * as minio-go sends) is CreateBucket, not a PUT of an empty key.
 * Keys are percent-decoded ('+' stays '+' in a path), must be UTF-8 without
 * NUL, and at most S3_KEY_MAX bytes decoded.
 *
 * Pure: no I/O, no globals, any thread.
 */
#ifndef GATEWAY_S3_REQ_H
#define GATEWAY_S3_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gateway/s3_err.h"

#define S3_KEY_MAX 1024
#define S3_BUCKET_MIN 3
#define S3_BUCKET_MAX 63
#define S3_QUERY_MAX 64
#define S3_PART_MAX 10000

/* Scratch bytes s3_req_parse needs for a target of n bytes: decoded text
 * never grows, plus a NUL per string, plus a bucket taken from Host. */
#define S3_REQ_SCRATCH(n) ((n) + 2 * S3_QUERY_MAX + S3_BUCKET_MAX + 8)

/* Every operation the gateway recognises, served yet or not. */
#define S3_OPS(X)                                                                  \
	X(ListBuckets) X(CreateBucket) X(HeadBucket) X(DeleteBucket)               \
	X(GetBucketLocation) X(ListObjects) X(ListObjectsV2) X(ListObjectVersions) \
	X(GetBucketVersioning) X(PutBucketVersioning) X(ListMultipartUploads)      \
	X(DeleteObjects) X(GetBucketTagging) X(PutBucketTagging)                   \
	X(DeleteBucketTagging) X(GetBucketAcl) X(PutBucketAcl)                     \
	X(PutObject) X(CopyObject) X(GetObject) X(HeadObject) X(DeleteObject)      \
	X(CreateMultipartUpload) X(UploadPart) X(UploadPartCopy)                   \
	X(CompleteMultipartUpload) X(AbortMultipartUpload) X(ListParts)            \
	X(GetObjectTagging) X(PutObjectTagging) X(DeleteObjectTagging)             \
	X(GetObjectAttributes) X(GetObjectAcl) X(PutObjectAcl)                     \
	X(GetBucketOwnershipControls) X(PutBucketOwnershipControls)                \
	X(DeleteBucketOwnershipControls) X(GetBucketPolicy) X(PutBucketPolicy)    \
	X(DeleteBucketPolicy) X(GetBucketPolicyStatus) X(GetPublicAccessBlock)    \
	X(PutPublicAccessBlock) X(DeletePublicAccessBlock)    \
	X(GetBucketCors) X(PutBucketCors) X(DeleteBucketCors) X(OptionsObject)      \
	X(GetBucketLifecycleConfiguration) X(PutBucketLifecycleConfiguration)       \
	X(DeleteBucketLifecycle)                                                   \
	X(PostObject)                                                              \
	X(GetObjectLockConfiguration) X(PutObjectLockConfiguration)               \
	X(GetObjectRetention) X(PutObjectRetention) X(GetObjectLegalHold)         \
	X(PutObjectLegalHold)                                                      \
	X(GetBucketEncryption) X(PutBucketEncryption) X(DeleteBucketEncryption)    \
	X(GetBucketAccelerateConfiguration) X(GetBucketRequestPayment)              \
	X(GetBucketLogging) X(GetBucketNotificationConfiguration)                  \
	X(GetBucketWebsite) X(DeleteBucketWebsite) X(GetBucketReplication)         \
	X(DeleteBucketReplication)

enum s3_op {
	S3_OP_NONE = 0, /* not routed: see s3_req.err */
#define S3_OP_ENUM(name) S3_OP_##name,
	S3_OPS(S3_OP_ENUM)
#undef S3_OP_ENUM
	S3_OP__COUNT
};

/* "GetObject"; "None" for S3_OP_NONE or out of range. */
const char *s3_op_name(enum s3_op op);

/* Virtual-host domains, e.g. { "s3.example.com", "localhost" }. */
struct s3_req_cfg {
	const char *const *domains;
	size_t n_domains;
};

/* What the HTTP layer hands over. */
struct s3_req_in {
	const char *method;        /* "GET", NUL-terminated */
	const char *target;        /* raw request target: path[?query] */
	size_t target_len;
	const char *host;          /* Host header value, NULL if absent */
	size_t host_len;
	bool has_copy_source;      /* x-amz-copy-source present */
	bool form_data;            /* Content-Type multipart/form-data (POST object) */
};

/* One query parameter, decoded ('+' -> space, %XX); NUL-terminated in the
 * scratch. has_value is false for "?acl" (no '='). */
struct s3_qparam {
	const char *name;
	const char *value;
	uint32_t name_len;
	uint32_t value_len;
	bool has_value;
};

struct s3_req {
	enum s3_op op;
	enum s3_err err;           /* S3E_OK, or why the request is refused */
	const char *err_msg;       /* static detail for the error body, or NULL */
	bool virtual_host;
	const char *bucket;        /* NUL-terminated; NULL for the service (ListBuckets) */
	size_t bucket_len;
	const char *key;           /* decoded, NUL-terminated; NULL for a bucket op */
	size_t key_len;
	const char *raw_path;      /* into in->target */
	size_t raw_path_len;
	const char *raw_query;     /* into in->target, after '?'; NULL if none */
	size_t raw_query_len;
	struct s3_qparam q[S3_QUERY_MAX];
	uint32_t n_q;
	uint32_t part_number;      /* partNumber, 0 if absent (validated 1..10000) */
	const char *upload_id;     /* uploadId value (in the scratch), or NULL */
	size_t upload_id_len;
};

/* Route one request. Writes decoded strings into scratch (scratch_len must
 * be at least S3_REQ_SCRATCH(in->target_len)). Returns r->err: S3E_OK with
 * r->op set, or the S3 error to answer with (InvalidBucketName,
 * KeyTooLongError, InvalidURI, InvalidArgument, MethodNotAllowed,
 * NotImplemented, InvalidRequest; InternalError if scratch is too small).
 * r's bucket/key/query are filled as far as parsing got, for the error's
 * Resource. */
enum s3_err s3_req_parse(struct s3_req *r, const struct s3_req_cfg *cfg,
			 const struct s3_req_in *in, char *scratch, size_t scratch_len);

/* The first query parameter named name (exact, case-sensitive), or NULL. */
const struct s3_qparam *s3_req_query(const struct s3_req *r, const char *name);

/* S3 bucket naming rules: 3-63 of [a-z0-9.-], starting and ending with a
 * letter or digit, no "..", ".-" or "-.", not an IPv4 address, not
 * "xn--"/"sthree-" prefixed nor "-s3alias"/"--ol-s3" suffixed. */
bool s3_bucket_name_valid(const char *s, size_t n);

/* Percent-decode n bytes of s into dst (at least n bytes). plus_space: '+'
 * becomes ' ' (query) or stays '+' (path). Returns the decoded length, or
 * -EINVAL for a malformed escape. */
long s3_pct_decode(char *dst, const char *s, size_t n, bool plus_space);

#endif
