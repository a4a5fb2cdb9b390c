/*
 * s3_policy_ctx.h — the request context a bucket policy is evaluated on:
 * the condition keys of one request (s3_policy.h lists their formats),
 * built from facts the caller gathered (peer address, TLS, user, the
 * listing's query parameters, the x-amz-acl header, the time).
 *
 * Keys filled: aws:SourceIp (the socket peer, never a forwarded header),
 * aws:SecureTransport, aws:CurrentTime, aws:EpochTime, aws:PrincipalType,
 * aws:username and aws:userid (authenticated requests only),
 * s3:prefix / s3:delimiter / s3:max-keys (ListBucket, when sent: an empty
 * prefix is present), s3:x-amz-acl (PutObject, PutBucketAcl,
 * PutObjectAcl, when sent). Any other key is absent.
 *
 * Owns nothing but the values copied into the caller's struct. Pure: no
 * I/O, no globals; any thread.
 */
#ifndef GATEWAY_S3_POLICY_CTX_H
#define GATEWAY_S3_POLICY_CTX_H

#include <stdbool.h>
#include <stdint.h>

#include "gateway/s3_authz.h"
#include "gateway/s3_policy.h"

#define S3_POLICY_CTX_MAX 12
#define S3_POLICY_CTX_VAL_MAX 64   /* the longest value we copy (x-amz-acl) */

/* What the caller knows of the request (strings NUL-terminated; NULL:
 * absent). */
struct s3_policy_ctx_in {
	const char *user;            /* NULL or "": anonymous */
	const char *peer_addr;       /* "" or NULL: unknown (then no aws:SourceIp) */
	bool tls;
	enum s3_authz_action action;
	const char *prefix, *delimiter, *max_keys;   /* the listing's query */
	const char *x_amz_acl;       /* the header (copied, at most S3_POLICY_CTX_VAL_MAX) */
	size_t x_amz_acl_len;
	uint64_t now_ms;             /* wall clock */
};

/* The keys, pointing into the struct itself and into in's strings (which
 * must outlive its use). */
struct s3_policy_ctx {
	struct s3_policy_kv kv[S3_POLICY_CTX_MAX];
	const char *val[S3_POLICY_CTX_MAX];
	size_t n;
	char time_iso[32];
	char time_epoch[24];
	char acl[S3_POLICY_CTX_VAL_MAX + 1];
};

void s3_policy_ctx_build(struct s3_policy_ctx *out, const struct s3_policy_ctx_in *in);

#endif
