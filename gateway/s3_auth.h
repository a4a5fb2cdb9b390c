/*
 * s3_auth.h — SigV4 verification of S3 requests: the Authorization header
 * or a presigned query, date and scope checks, credential lookup through an
 * asynchronous source with a bounded TTL cache (positive and negative), and
 * per-(access key, day) signing-key caching. Canonicalisation and HMACs are
 * common/sigv4's; this module decides what a request claims, whether the
 * claim is timely and well-scoped, and maps every failure to an S3 error.
 *
 * Owns: the credential cache (a fixed array of slots sized at creation;
 * when full, the slot that expires first in a 4-way set is replaced). One
 * struct s3_auth per event loop: not thread-safe, no locks, no clock of
 * its own (the caller passes wall time for date checks and a monotonic
 * millisecond clock for cache expiry, so tests are deterministic).
 *
 * SigV2 (common/sigv2: "Authorization: AWS AK:sig" or the AWSAccessKeyId /
 * Signature / Expires query) is verified too unless cfg.no_sigv2: its
 * body is unsigned (a hex x-amz-content-sha256 is still checked, as for an
 * anonymous request), streaming payloads are refused, and res.claim holds
 * only the access key (no signing key: no aws-chunked).
 *
 * Order of checks (cheap and local first, so bogus requests never reach
 * meta): parse -> scope/date/expiry -> payload-hash mode -> credentials
 * (cache, else the source) -> signature. A request with neither an
 * Authorization header nor a presigned query is anonymous: it passes here
 * (res.anonymous) and is authorized or refused later like any other. Revocation: s3_auth_invalidate
 * drops a key's entry at once, and a lookup that was in flight when it was
 * called does not repopulate the cache.
 *
 * Does not: verify the body against x-amz-content-sha256 (the caller hashes
 * the body as it streams and compares to res.payload_sha256), nor decode
 * aws-chunked bodies (gateway/chunked does, with res.signing_key and
 * res.claim.signature as the seed).
 */
#ifndef GATEWAY_S3_AUTH_H
#define GATEWAY_S3_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/sigv2.h"
#include "common/sigv4.h"
#include "gateway/s3_err.h"
#include "gateway/s3_grant.h"

#define S3_AUTH_SECRET_MAX 128
#define S3_AUTH_PENDING 1

/* ------------------------------------------------------------ credentials */

#define S3_AUTH_USER_MAX 128   /* meta's user names: at most 128 bytes */

/* What a credential lookup found: the secret and whom the key belongs to.
 * The strings are copied before done returns. */
struct s3_cred {
	const char *secret;
	const char *user;       /* the key's user (owner of what it creates) */
	bool admin;             /* that user is an admin (User.admin) */
	const struct s3_user_grant *grants;   /* the user's grants (copied, at most
					  * S3_GRANTS_MAX kept) */
	size_t n_grants;
};

/* One credential lookup, embedded in s3_auth_req. The source reads
 * access_key and, exactly once, calls done(l, rc, cred): rc 0 with the
 * credential, -ENOENT for an unknown or revoked key (negative-cached; cred
 * NULL), any other negative errno for a transient failure (not cached;
 * the request gets ServiceUnavailable). done may be called from inside
 * lookup() (synchronous source) or later on the same loop. */
struct s3_cred_lookup {
	const char *access_key;
	void (*done)(struct s3_cred_lookup *l, int rc, const struct s3_cred *cred);
};

struct s3_cred_source {
	void (*lookup)(void *ctx, struct s3_cred_lookup *l);
	void *ctx;
};

/* ------------------------------------------------------------ verifier */

struct s3_auth_cfg {
	const char *region;         /* expected scope region; NULL accepts any */
	uint32_t max_skew_s;        /* 0 -> 900 (15 minutes, as S3) */
	uint32_t ttl_ms;            /* positive cache TTL; 0 -> 60 s */
	uint32_t neg_ttl_ms;        /* negative cache TTL; 0 -> 5 s */
	uint32_t cache_slots;       /* 0 -> 1024; rounded up to a multiple of 4 */
	bool no_sigv2;              /* refuse SigV2 (header and presigned query) */
	struct s3_cred_source source;
	const char *alt_service;    /* a scope service accepted besides "s3" (the
				     * admin API's "iolake-admin"); NULL: none */
};

struct s3_auth;

/* NULL when out of memory. cfg->region must outlive the verifier. */
struct s3_auth *s3_auth_new(const struct s3_auth_cfg *cfg);

/* Free. No lookup may be in flight. */
void s3_auth_free(struct s3_auth *a);

/* Forget access_key (revocation, key rotation) at once, including the
 * result of any lookup already in flight. */
void s3_auth_invalidate(struct s3_auth *a, const char *access_key);

/* Forget everything. */
void s3_auth_invalidate_all(struct s3_auth *a);

struct s3_auth_stats {
	uint64_t hits, neg_hits, misses, lookups_failed;
};
void s3_auth_get_stats(const struct s3_auth *a, struct s3_auth_stats *out);

/* How the body is protected (x-amz-content-sha256). */
enum s3_payload_mode {
	S3_PAYLOAD_SHA256,                     /* hex digest: compare after the body */
	S3_PAYLOAD_UNSIGNED,                   /* UNSIGNED-PAYLOAD (and presigned) */
	S3_PAYLOAD_STREAMING_SIGNED,           /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD */
	S3_PAYLOAD_STREAMING_SIGNED_TRAILER,   /* ...-PAYLOAD-TRAILER */
	S3_PAYLOAD_STREAMING_UNSIGNED_TRAILER, /* STREAMING-UNSIGNED-PAYLOAD-TRAILER */
};

struct s3_auth_result {
	enum s3_err err;             /* S3E_OK when the signature verified (or the
				      * request is anonymous) */
	/* Who signed: the user the access key belongs to, always (from the
	 * credential lookup, cached with the secret), and whether it is an
	 * admin. anonymous: no Authorization header and no presigned query;
	 * err is then S3E_OK and user empty: what an anonymous request may
	 * do is the authorization's to decide (s3_authz), not ours. */
	bool anonymous;
	bool admin;
	char user[S3_AUTH_USER_MAX + 1];
	struct s3_user_grant grants[S3_GRANTS_MAX];   /* the user's, with the secret */
	uint32_t n_grants;
	const char *msg;             /* detail for the error body, or NULL */
	const char *region;          /* signed for the wrong region: the right
				      * one, for the error body; else NULL */
	char msg_buf[192];           /* msg may point here */
	enum s3_payload_mode payload;
	uint8_t payload_sha256[32];  /* S3_PAYLOAD_SHA256: the digest claimed */
	struct sigv4_auth claim;     /* access key, scope; signature = chunk seed */
	uint8_t signing_key[32];     /* valid when err == S3E_OK (for chunks) */
	/* The key's secret's SHA-256, when err == S3E_OK and not anonymous:
	 * what a login keeps to know later that the key is unchanged
	 * (s3_auth_verify_session). */
	uint8_t secret_sha256[32];
};

/* A request to verify; caller-owned until the result is delivered. The
 * spans (path, query, headers) must stay valid as long. */
struct s3_auth_req {
	/* in */
	const char *method;                  /* "GET", NUL-terminated */
	const char *path;                    /* raw path (before '?') */
	size_t path_len;
	const char *query;                   /* raw query (after '?'), may be NULL */
	size_t query_len;
	const struct sigv4_header *headers;
	size_t n_headers;
	time_t now;                          /* wall clock, seconds */
	uint64_t now_ms;                     /* monotonic, for the cache */
	const char *vhost_bucket;            /* bucket named by Host (SigV2's resource) */
	size_t vhost_bucket_len;
	/* out */
	struct s3_auth_result res;
	/* private */
	struct s3_auth *auth_;
	void (*done_)(struct s3_auth_req *r);
	const char *payload_hash_;
	char payload_hash_buf_[72];
	struct s3_cred_lookup lookup_;
	struct sigv2_auth v2_;
	bool is_v2_;
	uint64_t gen_;
	bool in_verify_, finished_;
	const uint8_t *session_;     /* s3_auth_verify_session's secret_sha256 */
};

/* Verify r. Returns 0 when the result is already in r->res (done is then
 * NOT called), or S3_AUTH_PENDING when a credential lookup is in flight and
 * done(r) will be called, on this loop, with r->res filled in. */
int s3_auth_verify(struct s3_auth *a, struct s3_auth_req *r, void (*done)(struct s3_auth_req *r));

/* A call on a connection that logged in earlier with access_key (the
 * native protocol's session, gateway/native_srv.c): no signature. The key
 * is found as for a signature (the cache, else the source): unknown or
 * revoked is InvalidAccessKeyId, and so is a key whose secret is no longer
 * the one whose SHA-256 the login kept (res.secret_sha256 then). Else
 * res holds the signer as the store has it now (user, admin, grants),
 * res.payload is S3_PAYLOAD_UNSIGNED and res.claim only the access key.
 * secret_sha256 must outlive the verification. Returns as s3_auth_verify. */
int s3_auth_verify_session(struct s3_auth *a, struct s3_auth_req *r, const char *access_key,
			   const uint8_t secret_sha256[32], void (*done)(struct s3_auth_req *r));

/* Classify an x-amz-content-sha256 value. 0, or -EINVAL when it is none of
 * the modes (S3: InvalidArgument). digest filled for S3_PAYLOAD_SHA256. */
int s3_auth_payload_mode(const char *v, size_t n, enum s3_payload_mode *mode,
			 uint8_t digest[32]);

/* "Fri, 24 May 2013 00:00:00 GMT" (IMF-fixdate) -> seconds; 0 or -EINVAL. */
int s3_auth_parse_http_date(const char *s, size_t n, time_t *out);

#endif
