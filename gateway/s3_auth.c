/*
 * s3_auth.c — SigV4 and SigV2 request verification and the credential cache. See
 * s3_auth.h for the contract and the order of checks.
 *
 * Cache layout: cache_slots entries in sets of 4, a key's set chosen by
 * FNV-1a of the access key. A lookup scans its set (4 strcmp at most);
 * insertion takes a free or expired slot, else the one expiring first.
 * Secrets are wiped (explicit_bzero) when a slot is dropped.
 *
 * Owns the credential cache and the signing-key cache. Does not fetch
 * credentials (the source callback does) nor read request bodies.
 */
#include "gateway/s3_auth.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"

#define WAYS 4

#ifndef container_of
#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))
#endif

struct cache_slot {
	char access_key[sizeof(((struct sigv4_auth *)0)->access_key)];
	char secret[S3_AUTH_SECRET_MAX + 1];
	char user[S3_AUTH_USER_MAX + 1];   /* the key's user, as the source said */
	bool admin;
	struct s3_user_grant *grants;           /* malloc'd, n_grants of them; NULL: none */
	uint32_t n_grants;
	uint8_t secret_sha256[32];         /* res.secret_sha256 */
	uint64_t expires_ms;
	bool used;
	bool negative;
	/* Signing key for one (date, region, service): a client signs with
	 * the same scope all day, so this saves four HMACs per request. */
	char key_scope[9 + 64 + 32];
	uint8_t signing_key[32];
	bool key_valid;
};

struct s3_auth {
	struct s3_auth_cfg cfg;
	struct cache_slot *slots;
	uint32_t n_sets;
	uint64_t gen;              /* bumped by every invalidation */
	struct s3_auth_stats stats;
};

struct s3_auth *s3_auth_new(const struct s3_auth_cfg *cfg)
{
	struct s3_auth *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->cfg = *cfg;
	if (!a->cfg.max_skew_s)
		a->cfg.max_skew_s = 900;
	if (!a->cfg.ttl_ms)
		a->cfg.ttl_ms = 60000;
	if (!a->cfg.neg_ttl_ms)
		a->cfg.neg_ttl_ms = 5000;
	uint32_t n = a->cfg.cache_slots ? a->cfg.cache_slots : 1024;
	a->n_sets = (n + WAYS - 1) / WAYS;
	a->slots = calloc((size_t)a->n_sets * WAYS, sizeof(*a->slots));
	if (!a->slots) {
		free(a);
		return NULL;
	}
	return a;
}

static void slot_drop(struct cache_slot *s)
{
	free(s->grants);
	explicit_bzero(s, sizeof(*s));
}

void s3_auth_free(struct s3_auth *a)
{
	if (!a)
		return;
	s3_auth_invalidate_all(a);
	free(a->slots);
	free(a);
}

static struct cache_slot *set_of(struct s3_auth *a, const char *ak)
{
	return &a->slots[(size_t)(hash_fnv1a_str(ak) % a->n_sets) * WAYS];
}

static struct cache_slot *cache_find(struct s3_auth *a, const char *ak, uint64_t now_ms)
{
	struct cache_slot *set = set_of(a, ak);
	for (int i = 0; i < WAYS; i++) {
		struct cache_slot *s = &set[i];
		if (!s->used || strcmp(s->access_key, ak) != 0)
			continue;
		if (now_ms >= s->expires_ms) {
			slot_drop(s);
			return NULL;
		}
		return s;
	}
	return NULL;
}

static void cache_put(struct s3_auth *a, const char *ak, const struct s3_cred *cred,
		      uint64_t now_ms)
{
	struct cache_slot *set = set_of(a, ak), *victim = NULL;
	for (int i = 0; i < WAYS && !victim; i++)
		if (set[i].used && strcmp(set[i].access_key, ak) == 0)
			victim = &set[i];
	for (int i = 0; i < WAYS && !victim; i++)
		if (!set[i].used || now_ms >= set[i].expires_ms)
			victim = &set[i];
	/* An unknown key never pushes out a known one: a flood of made-up
	 * keys must not turn every good request into a meta lookup. It
	 * replaces only another negative entry, else is not cached. */
	if (!victim && !cred) {
		for (int i = 0; i < WAYS; i++)
			if (set[i].negative && (!victim || set[i].expires_ms < victim->expires_ms))
				victim = &set[i];
		if (!victim)
			return;
	}
	if (!victim) {
		victim = &set[0];
		for (int i = 1; i < WAYS; i++)
			if (set[i].expires_ms < victim->expires_ms)
				victim = &set[i];
	}
	slot_drop(victim);
	victim->used = true;
	snprintf(victim->access_key, sizeof(victim->access_key), "%s", ak);
	if (cred) {
		snprintf(victim->secret, sizeof(victim->secret), "%s", cred->secret);
		hash_sha256(cred->secret, strlen(cred->secret), victim->secret_sha256);
		snprintf(victim->user, sizeof(victim->user), "%s", cred->user ? cred->user : "");
		victim->admin = cred->admin;
		size_t ng = cred->n_grants < S3_GRANTS_MAX ? cred->n_grants : S3_GRANTS_MAX;
		if (ng && (victim->grants = malloc(ng * sizeof(*victim->grants)))) {
			memcpy(victim->grants, cred->grants, ng * sizeof(*victim->grants));
			victim->n_grants = (uint32_t)ng;
		} else if (ng) {
			/* No memory for the grants: do not cache a principal
			 * that would lack them (the next request asks again). */
			slot_drop(victim);
			return;
		}
		victim->expires_ms = now_ms + a->cfg.ttl_ms;
	} else {
		victim->negative = true;
		victim->expires_ms = now_ms + a->cfg.neg_ttl_ms;
	}
}

void s3_auth_invalidate(struct s3_auth *a, const char *access_key)
{
	a->gen++;
	struct cache_slot *set = set_of(a, access_key);
	for (int i = 0; i < WAYS; i++)
		if (set[i].used && strcmp(set[i].access_key, access_key) == 0)
			slot_drop(&set[i]);
}

void s3_auth_invalidate_all(struct s3_auth *a)
{
	a->gen++;
	for (size_t i = 0; i < (size_t)a->n_sets * WAYS; i++)
		if (a->slots[i].used)
			slot_drop(&a->slots[i]);
}

void s3_auth_get_stats(const struct s3_auth *a, struct s3_auth_stats *out)
{
	*out = a->stats;
}

/* ------------------------------------------------------------ parsing */

static bool name_eq(const char *s, size_t n, const char *lit)
{
	return strlen(lit) == n && strncasecmp(s, lit, n) == 0;
}

static const struct sigv4_header *find_header(const struct s3_auth_req *r, const char *name)
{
	for (size_t i = 0; i < r->n_headers; i++)
		if (name_eq(r->headers[i].name, r->headers[i].name_len, name))
			return &r->headers[i];
	return NULL;
}

int s3_auth_payload_mode(const char *v, size_t n, enum s3_payload_mode *mode, uint8_t digest[32])
{
	static const struct {
		const char *s;
		enum s3_payload_mode m;
	} lits[] = {
		{ SIGV4_UNSIGNED_PAYLOAD, S3_PAYLOAD_UNSIGNED },
		{ "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", S3_PAYLOAD_STREAMING_SIGNED },
		{ "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", S3_PAYLOAD_STREAMING_SIGNED_TRAILER },
		{ "STREAMING-UNSIGNED-PAYLOAD-TRAILER", S3_PAYLOAD_STREAMING_UNSIGNED_TRAILER },
	};
	for (size_t i = 0; i < sizeof(lits) / sizeof(lits[0]); i++)
		if (strlen(lits[i].s) == n && memcmp(v, lits[i].s, n) == 0) {
			*mode = lits[i].m;
			return 0;
		}
	if (n == 64 && hash_unhex(v, 32, digest) == 0) {
		*mode = S3_PAYLOAD_SHA256;
		return 0;
	}
	return -EINVAL;
}

static int num(const char *s, int n)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

int s3_auth_parse_http_date(const char *s, size_t n, time_t *out)
{
	/* "Fri, 24 May 2013 00:00:00 GMT": fixed width, 29 bytes. */
	static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	if (n != 29 || s[3] != ',' || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' || s[16] != ' ' ||
	    s[19] != ':' || s[22] != ':' || memcmp(s + 25, " GMT", 4) != 0)
		return -EINVAL;
	int mon = -1;
	for (int i = 0; i < 12; i++)
		if (memcmp(s + 8, months + 3 * i, 3) == 0)
			mon = i;
	int day = num(s + 5, 2), year = num(s + 12, 4), h = num(s + 17, 2), mi = num(s + 20, 2),
	    sec = num(s + 23, 2);
	if (mon < 0 || day < 1 || day > 31 || year < 1970 || h < 0 || h > 23 || mi < 0 || mi > 59 ||
	    sec < 0 || sec > 60)
		return -EINVAL;
	struct tm tm = { .tm_year = year - 1900, .tm_mon = mon, .tm_mday = day,
			 .tm_hour = h, .tm_min = mi, .tm_sec = sec };
	*out = timegm(&tm);
	return 0;
}

/* ------------------------------------------------------------ verify */

static int fail(struct s3_auth_req *r, enum s3_err e, const char *msg)
{
	r->res.err = e;
	r->res.msg = msg;
	return 0;
}

__attribute__((format(printf, 3, 4)))
static int failf(struct s3_auth_req *r, enum s3_err e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->res.msg_buf, sizeof(r->res.msg_buf), fmt, ap);
	va_end(ap);
	return fail(r, e, r->res.msg_buf);
}

/* No Authorization, no presigned query: an anonymous request. Its body
 * has no signature; a hex x-amz-content-sha256 is still checked (a client
 * may send one), a streaming mode (chunk signatures need a key) is not
 * accepted. */
static void anonymous(struct s3_auth_req *r)
{
	struct s3_auth_result *res = &r->res;
	res->anonymous = true;
	res->payload = S3_PAYLOAD_UNSIGNED;
	const struct sigv4_header *ph = find_header(r, "x-amz-content-sha256");
	if (ph && s3_auth_payload_mode(ph->value, ph->value_len, &res->payload,
				       res->payload_sha256) == 0 &&
	    res->payload != S3_PAYLOAD_SHA256 && res->payload != S3_PAYLOAD_UNSIGNED) {
		fail(r, S3E_InvalidRequest, "An anonymous request cannot carry a signed or "
					    "streaming payload");
		return;
	}
	if (ph && res->payload != S3_PAYLOAD_SHA256)
		res->payload = S3_PAYLOAD_UNSIGNED;
	res->err = S3E_OK;
	res->msg = NULL;
}

/* SigV2's Date / x-amz-date: IMF-fixdate, or the RFC 2822 form with a
 * "+0000" zone that AWS's own SigV2 examples use. */
static int v2_date(const struct sigv4_header *d, time_t *t)
{
	if (s3_auth_parse_http_date(d->value, d->value_len, t) == 0)
		return 0;
	if (d->value_len != 31 || memcmp(d->value + 25, " +0000", 6) != 0)
		return -EINVAL;
	char buf[29];
	memcpy(buf, d->value, 25);
	memcpy(buf + 25, " GMT", 4);
	return s3_auth_parse_http_date(buf, sizeof(buf), t);
}

/* Body protection of a SigV2 request (which signs no body): as for an
 * anonymous one. 0 or a failure recorded (1). */
static int v2_payload(struct s3_auth_req *r)
{
	anonymous(r);
	r->res.anonymous = false;
	return r->res.err ? 1 : 0;
}

/* A SigV2 request: -1 when the request is not one (SigV4 or anonymous:
 * the caller goes on), else check_claim's 0 / 1. */
static int check_v2(struct s3_auth *a, struct s3_auth_req *r, const struct sigv4_header *authz)
{
	struct sigv2_auth *v = &r->v2_;
	int rc;
	bool presigned = false;
	if (authz) {
		rc = sigv2_parse_header(authz->value, authz->value_len, v);
		if (rc == -ENOENT)
			return -1;
	} else {
		rc = sigv2_parse_query(r->query ? r->query : "", r->query ? r->query_len : 0, v);
		if (rc == -ENOENT)
			return -1;
		presigned = true;
	}
	if (a->cfg.no_sigv2) {
		fail(r, S3E_InvalidRequest, "The authorization mechanism you have provided is not "
					    "supported. Please use AWS4-HMAC-SHA256.");
		return 1;
	}
	if (rc && presigned) {
		fail(r, S3E_AccessDenied, "Query-string authentication requires the Signature, "
					  "Expires and AWSAccessKeyId parameters");
		return 1;
	}
	if (rc) {
		fail(r, S3E_InvalidArgument, "AWS authorization header is invalid.  Expected "
					     "AwsAccessKeyId:signature");
		return 1;
	}
	struct sigv2_auth q2;
	if (authz && r->query && sigv2_parse_query(r->query, r->query_len, &q2) != -ENOENT) {
		fail(r, S3E_InvalidArgument, "Only one auth mechanism allowed");
		return 1;
	}
	r->is_v2_ = true;
	struct s3_auth_result *res = &r->res;
	snprintf(res->claim.access_key, sizeof(res->claim.access_key), "%s", v->access_key);
	res->claim.presigned = presigned;
	if (presigned) {
		if ((int64_t)r->now > v->expires) {
			fail(r, S3E_AccessDenied, "Request has expired");
			return 1;
		}
		return v2_payload(r);
	}
	/* The request time: x-amz-date, else Date, both IMF-fixdate. */
	const struct sigv4_header *d = find_header(r, "x-amz-date");
	if (!d)
		d = find_header(r, "date");
	time_t t;
	if (!d || v2_date(d, &t)) {
		fail(r, S3E_AccessDenied, "AWS authentication requires a valid Date or x-amz-date "
					  "header");
		return 1;
	}
	int64_t skew = (int64_t)a->cfg.max_skew_s;
	if ((int64_t)r->now - (int64_t)t > skew || (int64_t)t - (int64_t)r->now > skew) {
		fail(r, S3E_RequestTimeTooSkewed, NULL);
		return 1;
	}
	return v2_payload(r);
}

/* Everything before the credentials: 0 to continue, or a failure recorded
 * in r->res, or an anonymous request (res.anonymous, err OK) (returns 1). */
static int check_claim(struct s3_auth *a, struct s3_auth_req *r)
{
	struct s3_auth_result *res = &r->res;
	struct sigv4_auth *c = &res->claim;
	const struct sigv4_header *authz = find_header(r, "authorization");
	r->is_v2_ = false;
	int v2 = check_v2(a, r, authz);
	if (v2 >= 0)
		return v2;
	int qrc = sigv4_parse_query(r->query ? r->query : "", r->query ? r->query_len : 0, c);
	bool presigned = qrc != -ENOENT;
	enum s3_err malformed = presigned ? S3E_AuthorizationQueryParametersError
					  : S3E_AuthorizationHeaderMalformed;
	if (authz && presigned) {
		fail(r, S3E_InvalidArgument, "Only one auth mechanism allowed");
		return 1;
	}
	if (authz) {
		int rc = sigv4_parse_header(authz->value, authz->value_len, c);
		if (rc == -ENOTSUP) {
			fail(r, S3E_InvalidRequest, "The authorization mechanism you have provided is "
						    "not supported. Please use AWS4-HMAC-SHA256.");
			return 1;
		}
		if (rc) {
			fail(r, malformed, NULL);
			return 1;
		}
	} else if (presigned) {
		if (qrc == -ENOTSUP) {
			fail(r, S3E_AuthorizationQueryParametersError,
			     "X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\"");
			return 1;
		}
		if (qrc) {
			fail(r, malformed, "Error parsing the presigned URL parameters "
					   "(X-Amz-Credential, -Date, -Expires of at most 604800, "
					   "-SignedHeaders, -Signature)");
			return 1;
		}
	} else {
		if (r->query && memmem(r->query, r->query_len, "AWSAccessKeyId=", 15))
			fail(r, S3E_InvalidRequest, "The authorization mechanism you have provided is "
						    "not supported. Please use AWS4-HMAC-SHA256.");
		else
			anonymous(r);
		return 1;
	}

	/* The request time: X-Amz-Date (query or header), else Date. */
	time_t t;
	if (!presigned) {
		const struct sigv4_header *xd = find_header(r, "x-amz-date"), *d;
		if (xd) {
			if (xd->value_len != 16)
				goto bad_date;
			memcpy(c->amz_date, xd->value, 16);
			c->amz_date[16] = '\0';
			if (sigv4_parse_amz_date(c->amz_date, &t))
				goto bad_date;
		} else if ((d = find_header(r, "date"))) {
			if (s3_auth_parse_http_date(d->value, d->value_len, &t))
				goto bad_date;
			sigv4_format_amz_date(t, c->amz_date);
		} else {
			goto bad_date;
		}
	} else if (sigv4_parse_amz_date(c->amz_date, &t)) {
		goto bad_date;
	}

	/* Scope. */
	if (memcmp(c->date, c->amz_date, 8) != 0) {
		failf(r, malformed, "Invalid credential date \"%s\". This date is not the same as "
				    "X-Amz-Date: \"%.8s\".", c->date, c->amz_date);
		return 1;
	}
	if (a->cfg.region && strcmp(c->region, a->cfg.region) != 0) {
		failf(r, malformed, "The authorization header is malformed; the region '%s' is "
				    "wrong; expecting '%s'", c->region, a->cfg.region);
		res->region = a->cfg.region;
		return 1;
	}
	if (strcmp(c->service, "s3") != 0 &&
	    !(a->cfg.alt_service && !strcmp(c->service, a->cfg.alt_service))) {
		failf(r, malformed, "The authorization header is malformed; incorrect service "
				    "\"%s\". This endpoint belongs to \"%s\".", c->service, "s3");
		return 1;
	}
	/* host must be signed: otherwise a signature replays on any host. */
	bool host_signed = false;
	for (const char *p = c->signed_headers; *p;) {
		const char *e = strchr(p, ';');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		if (l == 4 && memcmp(p, "host", 4) == 0)
			host_signed = true;
		p += l + (e != NULL);
	}
	if (!host_signed) {
		fail(r, malformed, "SignedHeaders must include host");
		return 1;
	}

	/* Time window. */
	int64_t skew = (int64_t)a->cfg.max_skew_s;
	if (presigned) {
		if ((int64_t)t - (int64_t)r->now > skew) {
			fail(r, S3E_RequestNotYetValid, NULL);
			return 1;
		}
		if (c->expires_s == 0 || (int64_t)r->now > (int64_t)t + (int64_t)c->expires_s) {
			fail(r, S3E_RequestExpired, NULL);
			return 1;
		}
	} else if ((int64_t)r->now - (int64_t)t > skew || (int64_t)t - (int64_t)r->now > skew) {
		fail(r, S3E_RequestTimeTooSkewed, NULL);
		return 1;
	}

	/* Payload protection. Presigned URLs sign UNSIGNED-PAYLOAD. */
	if (presigned) {
		r->payload_hash_ = SIGV4_UNSIGNED_PAYLOAD;
		res->payload = S3_PAYLOAD_UNSIGNED;
	} else {
		const struct sigv4_header *ph = find_header(r, "x-amz-content-sha256");
		if (!ph) {
			fail(r, S3E_InvalidRequest,
			     "Missing required header for this request: x-amz-content-sha256");
			return 1;
		}
		if (s3_auth_payload_mode(ph->value, ph->value_len, &res->payload,
					 res->payload_sha256)) {
			fail(r, S3E_InvalidArgument, "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, "
						     "STREAMING-AWS4-HMAC-SHA256-PAYLOAD, or a valid "
						     "sha256 value.");
			return 1;
		}
		/* A span; sigv4_request wants a C string. The value is one of
		 * the mode literals or 64 hex digits, so it fits. */
		memcpy(r->payload_hash_buf_, ph->value, ph->value_len);
		r->payload_hash_buf_[ph->value_len] = '\0';
		r->payload_hash_ = r->payload_hash_buf_;
	}
	return 0;

bad_date:
	fail(r, S3E_AccessDenied, "AWS authentication requires a valid Date or x-amz-date header");
	return 1;
}

/* SigV2's signature check. Clients differ in two places, and a request
 * verifies if it matches any of their forms (each is a StringToSign over
 * the same request under the same secret):
 *   - the Date line when both Date and x-amz-date are sent (sigv2.h);
 *   - a path-style bucket request ("/bucket", no key): botocore signs the
 *     resource "/bucket/", as AWS's examples write it, while the path it
 *     sends has no trailing slash. */
static void check_signature_v2(struct s3_auth_req *r, const char *secret)
{
	struct sigv2_request q = {
		.method = r->method, .path = r->path, .path_len = r->path_len,
		.query = r->query, .query_len = r->query ? r->query_len : 0,
		.headers = r->headers, .n_headers = r->n_headers,
		.vhost_bucket = r->vhost_bucket, .vhost_bucket_len = r->vhost_bucket_len,
	};
	bool two_dates = !r->v2_.presigned && find_header(r, "x-amz-date") && find_header(r, "date");
	bool bucket_only = !r->vhost_bucket && r->path_len > 1 && r->path[0] == '/' &&
			   !memchr(r->path + 1, '/', r->path_len - 1) && r->path_len < 80;
	char slashed[80];
	if (bucket_only) {
		memcpy(slashed, r->path, r->path_len);
		slashed[r->path_len] = '/';
	}
	char sig[SIGV2_SIG_LEN + 1];
	bool ok = false;
	int rc = 0;
	for (int v = 0; v < 4 && !ok; v++) {
		bool blank = v & 1, slash = v & 2;
		if ((blank && !two_dates) || (slash && !bucket_only))
			continue;
		r->v2_.blank_date = blank;
		q.path = slash ? slashed : r->path;
		q.path_len = r->path_len + (slash ? 1 : 0);
		rc = sigv2_sign(secret, &q, &r->v2_, sig);
		ok = rc == 0 && sigv2_equal(sig, r->v2_.signature);
		if (rc)
			break;
	}
	if (ok) {
		r->res.err = S3E_OK;
		r->res.msg = NULL;
	} else if (rc == -E2BIG) {
		fail(r, S3E_InvalidURI, NULL);
	} else if (rc) {
		fail(r, S3E_InternalError, NULL);
	} else {
		fail(r, S3E_SignatureDoesNotMatch, NULL);
	}
}

/* The signature check, with the secret in hand. */
static void check_signature(struct s3_auth_req *r, const char *secret,
			    struct cache_slot *slot)
{
	struct s3_auth_result *res = &r->res;
	if (r->is_v2_) {
		res->user[0] = '\0';
		check_signature_v2(r, secret);
		return;
	}
	res->user[0] = '\0';
	const struct sigv4_auth *c = &res->claim;
	char scope[sizeof(slot->key_scope)];
	snprintf(scope, sizeof(scope), "%s/%s/%s", c->date, c->region, c->service);
	if (slot && slot->key_valid && strcmp(slot->key_scope, scope) == 0) {
		memcpy(res->signing_key, slot->signing_key, 32);
	} else {
		sigv4_signing_key(secret, c->date, c->region, c->service, res->signing_key);
		if (slot) {
			memcpy(slot->key_scope, scope, sizeof(scope));
			memcpy(slot->signing_key, res->signing_key, 32);
			slot->key_valid = true;
		}
	}
	struct sigv4_request sreq = {
		.method = r->method, .path = r->path, .path_len = r->path_len,
		.query = r->query, .query_len = r->query ? r->query_len : 0,
		.headers = r->headers, .n_headers = r->n_headers, .payload_hash = r->payload_hash_,
	};
	char sig[65];
	int rc = sigv4_sign(res->signing_key, &sreq, c, sig);
	if (rc == -ENOMEM) {
		fail(r, S3E_InternalError, NULL);
	} else if (rc == -EINVAL) {
		fail(r, S3E_InvalidURI, NULL);
	} else if (rc || !sigv4_equal(sig, c->signature)) {
		/* -ENOENT (a signed header is absent) is a mismatch too. */
		fail(r, S3E_SignatureDoesNotMatch, NULL);
	} else {
		res->err = S3E_OK;
		res->msg = NULL;
	}
	if (res->err)
		explicit_bzero(res->signing_key, sizeof(res->signing_key));
}

/* The signer, once the signature verified. */
static void set_signer(struct s3_auth_req *r, const char *user, bool admin,
		       const struct s3_user_grant *grants, size_t n_grants,
		       const uint8_t secret_sha256[32])
{
	if (r->res.err)
		return;
	memcpy(r->res.secret_sha256, secret_sha256, 32);
	snprintf(r->res.user, sizeof(r->res.user), "%s", user);
	r->res.admin = admin;
	if (n_grants > S3_GRANTS_MAX)
		n_grants = S3_GRANTS_MAX;
	if (n_grants)
		memcpy(r->res.grants, grants, n_grants * sizeof(*grants));
	r->res.n_grants = (uint32_t)n_grants;
}

/* A logged-in connection's call: the key must still have the secret the
 * login proved. */
static void check_session(struct s3_auth_req *r, const uint8_t secret_sha256[32])
{
	if (CRYPTO_memcmp(secret_sha256, r->session_, 32) != 0) {
		fail(r, S3E_InvalidAccessKeyId, "the key changed since this connection's login");
	} else {
		r->res.err = S3E_OK;
		r->res.msg = NULL;
	}
}

/* With the key's credential in hand: the signature (or the session's
 * secret) checked, then the signer set. slot: the key's cache slot, or
 * NULL when it was not cached. */
static void judge(struct s3_auth_req *r, const char *secret, const uint8_t secret_sha256[32],
		  struct cache_slot *slot, const char *user, bool admin,
		  const struct s3_user_grant *grants, size_t n_grants)
{
	if (r->session_)
		check_session(r, secret_sha256);
	else
		check_signature(r, secret, slot);
	set_signer(r, user, admin, grants, n_grants, secret_sha256);
}

static void finish(struct s3_auth_req *r)
{
	r->finished_ = true;
	if (!r->in_verify_)
		r->done_(r);
}

static void on_lookup(struct s3_cred_lookup *l, int rc, const struct s3_cred *cred)
{
	struct s3_auth_req *r = container_of(l, struct s3_auth_req, lookup_);
	struct s3_auth *a = r->auth_;
	/* An invalidation since the lookup started may have revoked what the
	 * source just told us: answer this request, cache nothing. */
	bool cacheable = r->gen_ == a->gen;
	if (rc == 0 && cred && cred->secret && strlen(cred->secret) <= S3_AUTH_SECRET_MAX &&
	    cred->user && *cred->user && strlen(cred->user) <= S3_AUTH_USER_MAX) {
		struct cache_slot *slot = NULL;
		if (cacheable) {
			cache_put(a, r->res.claim.access_key, cred, r->now_ms);
			slot = cache_find(a, r->res.claim.access_key, r->now_ms);
		}
		uint8_t digest[32];
		if (slot)
			memcpy(digest, slot->secret_sha256, 32);
		else
			hash_sha256(cred->secret, strlen(cred->secret), digest);
		judge(r, cred->secret, digest, slot, cred->user, cred->admin, cred->grants,
		      cred->n_grants);
	} else if (rc == -ENOENT) {
		if (cacheable)
			cache_put(a, r->res.claim.access_key, NULL, r->now_ms);
		fail(r, S3E_InvalidAccessKeyId, NULL);
	} else {
		a->stats.lookups_failed++;
		fail(r, S3E_ServiceUnavailable, "Credential lookup failed; please retry");
	}
	finish(r);
}

/* The claimed key's credential: from the cache, else from the source. */
static int find_key(struct s3_auth *a, struct s3_auth_req *r)
{
	const char *ak = r->res.claim.access_key;
	struct cache_slot *slot = cache_find(a, ak, r->now_ms);
	if (slot) {
		if (slot->negative) {
			a->stats.neg_hits++;
			return fail(r, S3E_InvalidAccessKeyId, NULL);
		}
		a->stats.hits++;
		judge(r, slot->secret, slot->secret_sha256, slot, slot->user, slot->admin,
		      slot->grants, slot->n_grants);
		return 0;
	}
	a->stats.misses++;
	r->gen_ = a->gen;
	r->lookup_.access_key = ak;
	r->lookup_.done = on_lookup;
	r->in_verify_ = true;
	a->cfg.source.lookup(a->cfg.source.ctx, &r->lookup_);
	r->in_verify_ = false;
	return r->finished_ ? 0 : S3_AUTH_PENDING;
}

int s3_auth_verify(struct s3_auth *a, struct s3_auth_req *r, void (*done)(struct s3_auth_req *r))
{
	memset(&r->res, 0, sizeof(r->res));
	r->auth_ = a;
	r->done_ = done;
	r->finished_ = false;
	r->session_ = NULL;
	if (check_claim(a, r))
		return 0;
	return find_key(a, r);
}

int s3_auth_verify_session(struct s3_auth *a, struct s3_auth_req *r, const char *access_key,
			   const uint8_t secret_sha256[32], void (*done)(struct s3_auth_req *r))
{
	memset(&r->res, 0, sizeof(r->res));
	r->auth_ = a;
	r->done_ = done;
	r->finished_ = false;
	r->is_v2_ = false;
	r->session_ = secret_sha256;
	r->res.payload = S3_PAYLOAD_UNSIGNED;
	if (!*access_key || strlen(access_key) >= sizeof(r->res.claim.access_key))
		return fail(r, S3E_InvalidAccessKeyId, NULL);
	memcpy(r->res.claim.access_key, access_key, strlen(access_key) + 1);
	return find_key(a, r);
}

