/*
 * test_s3_auth.c — SigV4 verification against AWS's documented examples
 * (GET with Authorization header, presigned GET) with the AWS example
 * credentials, through a fake credential source that answers
 * synchronously or later, counts its lookups, and can be changed under
 * the cache: right key, wrong secret, tampered signature, unknown key,
 * skewed clock, expired/not-yet-valid presigned URLs, scope errors, the
 * negative cache, TTL expiry, and revocation taking effect at once (also
 * against a lookup in flight).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/hash.h"
#include "gateway/s3_auth.h"

#define AK "AKIAIOSFODNN7EXAMPLE"
#define SK "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define T0 1369353600 /* 20130524T000000Z */
#define GET_SIG "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
#define H(n, v) { n, sizeof(n) - 1, v, sizeof(v) - 1 }

/* ------------------------------------------------ fake credential source */

struct fake {
	const char *ak, *sk;   /* the one known key; sk NULL: revoked */
	bool async;
	int fail_rc;           /* nonzero: answer with this */
	bool admin;            /* the key's user is an admin */
	const struct s3_user_grant *grants;   /* the user's grants */
	size_t n_grants;
	int lookups;
	struct s3_cred_lookup *pending;
};
static struct fake fk;

static void fake_answer(struct s3_cred_lookup *l)
{
	if (fk.fail_rc)
		l->done(l, fk.fail_rc, NULL);
	else if (fk.sk && strcmp(l->access_key, fk.ak) == 0)
		l->done(l, 0, &(struct s3_cred){ .secret = fk.sk, .user = "alice", .admin = fk.admin,
						 .grants = fk.grants, .n_grants = fk.n_grants });
	else
		l->done(l, -ENOENT, NULL);
}

static void fake_lookup(void *ctx, struct s3_cred_lookup *l)
{
	(void)ctx;
	fk.lookups++;
	if (fk.async)
		fk.pending = l;
	else
		fake_answer(l);
}

static int done_calls;
static void on_done(struct s3_auth_req *r)
{
	(void)r;
	done_calls++;
}

static struct s3_auth *mk(const char *region)
{
	memset(&fk, 0, sizeof(fk));
	fk.ak = AK;
	fk.sk = SK;
	done_calls = 0;
	struct s3_auth_cfg cfg = { .region = region, .ttl_ms = 60000, .neg_ttl_ms = 5000,
				   .cache_slots = 8, .source = { fake_lookup, NULL } };
	struct s3_auth *a = s3_auth_new(&cfg);
	ck_assert_ptr_nonnull(a);
	return a;
}

/* ------------------------------------------------ the GET example */

static char authz[512];
static struct sigv4_header get_hs[6];

static void get_request(struct s3_auth_req *r, const char *sig, time_t now, uint64_t now_ms)
{
	snprintf(authz, sizeof(authz),
		 "AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_request,"
		 "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=%s", sig);
	struct sigv4_header hs[] = {
		H("Host", "examplebucket.s3.amazonaws.com"),
		H("Range", "bytes=0-9"),
		H("x-amz-content-sha256", SIGV4_EMPTY_SHA256),
		H("x-amz-date", "20130524T000000Z"),
		{ "Authorization", 13, authz, strlen(authz) },
		H("User-Agent", "not signed"),
	};
	memcpy(get_hs, hs, sizeof(hs));
	memset(r, 0, sizeof(*r));
	r->method = "GET";
	r->path = "/test.txt";
	r->path_len = 9;
	r->headers = get_hs;
	r->n_headers = 6;
	r->now = now;
	r->now_ms = now_ms;
}

static enum s3_err verify_sync(struct s3_auth *a, struct s3_auth_req *r)
{
	ck_assert_int_eq(s3_auth_verify(a, r, on_done), 0);
	return r->res.err;
}

START_TEST(test_get_example)
{
	struct s3_auth *a = mk("us-east-1");
	struct s3_auth_req r;

	/* First request: the source answers later. */
	fk.async = true;
	get_request(&r, GET_SIG, T0 + 60, 1000);
	ck_assert_int_eq(s3_auth_verify(a, &r, on_done), S3_AUTH_PENDING);
	ck_assert_int_eq(done_calls, 0);
	ck_assert_ptr_nonnull(fk.pending);
	fake_answer(fk.pending);
	ck_assert_int_eq(done_calls, 1);
	ck_assert_int_eq(r.res.err, S3E_OK);
	ck_assert_int_eq(r.res.payload, S3_PAYLOAD_SHA256);
	uint8_t want[32];
	hash_sha256("", 0, want);
	ck_assert_int_eq(memcmp(r.res.payload_sha256, want, 32), 0);
	sigv4_signing_key(SK, "20130524", "us-east-1", "s3", want);
	ck_assert_int_eq(memcmp(r.res.signing_key, want, 32), 0);
	ck_assert_str_eq(r.res.claim.access_key, AK);
	ck_assert_str_eq(r.res.claim.signature, GET_SIG);
	/* The signer is the key's user, as the lookup said. */
	ck_assert_str_eq(r.res.user, "alice");
	ck_assert(!r.res.admin && !r.res.anonymous);

	/* Second: from the cache, synchronously, no lookup, same signing key,
	 * same user (the cache keeps who the key belongs to). */
	get_request(&r, GET_SIG, T0 + 61, 2000);
	ck_assert_int_eq(verify_sync(a, &r), S3E_OK);
	ck_assert_int_eq(fk.lookups, 1);
	ck_assert_str_eq(r.res.user, "alice");
	ck_assert_int_eq(memcmp(r.res.signing_key, want, 32), 0);
	ck_assert_uint_eq(r.res.n_grants, 0);
	struct s3_auth_stats st;
	s3_auth_get_stats(a, &st);
	ck_assert_uint_eq(st.hits, 1);
	ck_assert_uint_eq(st.misses, 1);

	/* Grants travel with the secret: cached with it (copied: the
	 * source's array may go), replaced only when the cache is dropped
	 * (creds_epoch), then read again. */
	struct s3_user_grant g[2] = { { .bucket = "photos", .level = S3_GRANT_READ,
					.bucket_created_ms = 7 },
				      { .bucket = "logs", .level = S3_GRANT_FULL } };
	fk.grants = g;
	fk.n_grants = 2;
	s3_auth_invalidate_all(a);
	get_request(&r, GET_SIG, T0 + 61, 2100);
	fk.async = false;
	ck_assert_int_eq(verify_sync(a, &r), S3E_OK);
	ck_assert_int_eq(fk.lookups, 2);
	ck_assert_uint_eq(r.res.n_grants, 2);
	ck_assert_str_eq(r.res.grants[0].bucket, "photos");
	ck_assert_uint_eq(r.res.grants[0].bucket_created_ms, 7);
	g[0].level = S3_GRANT_WRITE;   /* the source's copy changes... */
	fk.n_grants = 1;
	get_request(&r, GET_SIG, T0 + 61, 2200);
	ck_assert_int_eq(verify_sync(a, &r), S3E_OK);
	ck_assert_int_eq(fk.lookups, 2);   /* ...the cache answers as before */
	ck_assert_uint_eq(r.res.n_grants, 2);
	ck_assert_int_eq(r.res.grants[0].level, S3_GRANT_READ);
	ck_assert_str_eq(r.res.grants[1].bucket, "logs");
	s3_auth_invalidate_all(a);
	get_request(&r, GET_SIG, T0 + 61, 2300);
	ck_assert_int_eq(verify_sync(a, &r), S3E_OK);
	ck_assert_int_eq(fk.lookups, 3);
	ck_assert_uint_eq(r.res.n_grants, 1);
	ck_assert_int_eq(r.res.grants[0].level, S3_GRANT_WRITE);
	fk.grants = NULL;
	fk.n_grants = 0;

	/* Tampered signature (one digit), cached secret. */
	char bad[65] = GET_SIG;
	bad[10] = bad[10] == '0' ? '1' : '0';
	get_request(&r, bad, T0, 3000);
	ck_assert_int_eq(verify_sync(a, &r), S3E_SignatureDoesNotMatch);
	ck_assert_int_eq(s3_err_status(r.res.err), 403);
	ck_assert_str_eq(r.res.user, "");   /* no signer without a signature */

	/* A signed header changed in flight. */
	get_request(&r, GET_SIG, T0, 3000);
	get_hs[1].value = "bytes=0-10";
	get_hs[1].value_len = 10;
	ck_assert_int_eq(verify_sync(a, &r), S3E_SignatureDoesNotMatch);
	/* An unsigned header changed: still fine. */
	get_request(&r, GET_SIG, T0, 3000);
	get_hs[5].value = "curl";
	get_hs[5].value_len = 4;
	ck_assert_int_eq(verify_sync(a, &r), S3E_OK);
	s3_auth_free(a);
}
END_TEST

/* A login's later calls (s3_auth_verify_session): the secret's digest
 * from a verified signature holds while the key keeps that secret, read
 * from the cache or, after an invalidation, the source (later, too); a
 * removed key, a key given another secret, an unknown key are refused. */
START_TEST(test_session)
{
	struct s3_auth *a = mk("us-east-1");
	struct s3_auth_req r;
	get_request(&r, GET_SIG, T0 + 60, 1000);
	ck_assert_int_eq(verify_sync(a, &r), S3E_OK);
	uint8_t want[32], login[32];
	hash_sha256(SK, strlen(SK), want);
	ck_assert_mem_eq(r.res.secret_sha256, want, 32);
	memcpy(login, r.res.secret_sha256, 32);

	int lookups = fk.lookups;
	memset(&r, 0, sizeof(r));
	r.now_ms = 2000;
	ck_assert_int_eq(s3_auth_verify_session(a, &r, AK, login, on_done), 0);
	ck_assert_int_eq(r.res.err, S3E_OK);
	ck_assert_str_eq(r.res.user, "alice");
	ck_assert_int_eq(r.res.payload, S3_PAYLOAD_UNSIGNED);
	ck_assert_str_eq(r.res.claim.access_key, AK);
	ck_assert_int_eq(fk.lookups, lookups);   /* from the cache */

	/* After an invalidation: the source, answering later. */
	s3_auth_invalidate(a, AK);
	fk.async = true;
	ck_assert_int_eq(s3_auth_verify_session(a, &r, AK, login, on_done), S3_AUTH_PENDING);
	fake_answer(fk.pending);
	ck_assert_int_eq(done_calls, 1);
	ck_assert_int_eq(r.res.err, S3E_OK);
	fk.async = false;

	/* The same key id with another secret. */
	fk.sk = "another-secret-for-the-same-key-id";
	s3_auth_invalidate(a, AK);
	ck_assert_int_eq(s3_auth_verify_session(a, &r, AK, login, on_done), 0);
	ck_assert_int_eq(r.res.err, S3E_InvalidAccessKeyId);
	ck_assert_int_eq(s3_auth_verify_session(a, &r, AK, login, on_done), 0);   /* cached */
	ck_assert_int_eq(r.res.err, S3E_InvalidAccessKeyId);

	/* Removed; unknown; too long. */
	fk.sk = NULL;
	s3_auth_invalidate(a, AK);
	ck_assert_int_eq(s3_auth_verify_session(a, &r, AK, login, on_done), 0);
	ck_assert_int_eq(r.res.err, S3E_InvalidAccessKeyId);
	ck_assert_int_eq(s3_auth_verify_session(a, &r, "AKIANOSUCHKEY", login, on_done), 0);
	ck_assert_int_eq(r.res.err, S3E_InvalidAccessKeyId);
	char longk[200];
	memset(longk, 'K', sizeof(longk) - 1);
	longk[sizeof(longk) - 1] = 0;
	ck_assert_int_eq(s3_auth_verify_session(a, &r, longk, login, on_done), 0);
	ck_assert_int_eq(r.res.err, S3E_InvalidAccessKeyId);
	s3_auth_free(a);
}
END_TEST

START_TEST(test_wrong_secret_and_unknown_key)
{
	struct s3_auth *a = mk("us-east-1");
	struct s3_auth_req r;
	fk.sk = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEZ";
	get_request(&r, GET_SIG, T0, 0);
	ck_assert_int_eq(verify_sync(a, &r), S3E_SignatureDoesNotMatch);
	s3_auth_free(a);

	a = mk("us-east-1");
	fk.ak = "AKIAOTHERKEY";
	get_request(&r, GET_SIG, T0, 0);
	ck_assert_int_eq(verify_sync(a, &r), S3E_InvalidAccessKeyId);
	ck_assert_int_eq(fk.lookups, 1);
	/* Negative cache: no second lookup within its TTL... */
	get_request(&r, GET_SIG, T0, 4999);
	ck_assert_int_eq(verify_sync(a, &r), S3E_InvalidAccessKeyId);
	ck_assert_int_eq(fk.lookups, 1);
	struct s3_auth_stats st;
	s3_auth_get_stats(a, &st);
	ck_assert_uint_eq(st.neg_hits, 1);
	/* ...the key is created meanwhile: still refused until the negative
	 * entry expires, or at once when invalidated. */
	fk.ak = AK;
	get_request(&r, GET_SIG, T0, 4000);
	ck_assert_int_eq(verify_sync(a, &r), S3E_InvalidAccessKeyId);
	s3_auth_invalidate(a, AK);
	get_request(&r, GET_SIG, T0, 4001);
	ck_assert_int_eq(verify_sync(a, &r), S3E_OK);
	ck_assert_int_eq(fk.lookups, 2);
	s3_auth_free(a);

	/* Negative TTL expiry. */
	a = mk("us-east-1");
	fk.ak = "AKIAOTHERKEY";
	get_request(&r, GET_SIG, T0, 0);
	ck_assert_int_eq(verify_sync(a, &r), S3E_InvalidAccessKeyId);
	fk.ak = AK;
	get_request(&r, GET_SIG, T0, 5000);
	ck_assert_int_eq(verify_sync(a, &r), S3E_OK);
	ck_assert_int_eq(fk.lookups, 2);
	s3_auth_free(a);
}
END_TEST

START_TEST(test_revocation)
{
	struct s3_auth *a = mk("us-east-1");
	struct s3_auth_req r;
	get_request(&r, GET_SIG, T0, 0);
	ck_assert_int_eq(verify_sync(a, &r), S3E_OK);
	/* Revoked in meta: the cache still answers within its TTL... */
	fk.sk = NULL;
	get_request(&r, GET_SIG, T0, 100);
	ck_assert_int_eq(verify_sync(a, &r), S3E_OK);
	/* ...until invalidated: then at once. */
	s3_auth_invalidate(a, AK);
	get_request(&r, GET_SIG, T0, 101);
	ck_assert_int_eq(verify_sync(a, &r), S3E_InvalidAccessKeyId);
	s3_auth_free(a);

	/* Positive TTL expiry re-asks the source. */
	a = mk("us-east-1");
	get_request(&r, GET_SIG, T0, 0);
	ck_assert_int_eq(verify_sync(a, &r), S3E_OK);
	fk.sk = NULL;
	get_request(&r, GET_SIG, T0, 60000);
	ck_assert_int_eq(verify_sync(a, &r), S3E_InvalidAccessKeyId);
	ck_assert_int_eq(fk.lookups, 2);
	s3_auth_free(a);

	/* Invalidation while a lookup is in flight: the answer serves that
	 * request but is not cached. */
	a = mk("us-east-1");
	fk.async = true;
	get_request(&r, GET_SIG, T0, 0);
	ck_assert_int_eq(s3_auth_verify(a, &r, on_done), S3_AUTH_PENDING);
	s3_auth_invalidate(a, AK);
	fake_answer(fk.pending);
	ck_assert_int_eq(done_calls, 1);
	ck_assert_int_eq(r.res.err, S3E_OK);
	fk.async = false;
	get_request(&r, GET_SIG, T0, 1);
	ck_assert_int_eq(verify_sync(a, &r), S3E_OK);
	ck_assert_int_eq(fk.lookups, 2);

	/* A transient source failure is not cached. */
	s3_auth_invalidate_all(a);
	fk.fail_rc = -ETIMEDOUT;
	get_request(&r, GET_SIG, T0, 2);
	ck_assert_int_eq(verify_sync(a, &r), S3E_ServiceUnavailable);
	fk.fail_rc = 0;
	get_request(&r, GET_SIG, T0, 3);
	ck_assert_int_eq(verify_sync(a, &r), S3E_OK);
	ck_assert_int_eq(fk.lookups, 4);
	s3_auth_free(a);
}
END_TEST

START_TEST(test_clock)
{
	struct s3_auth *a = mk("us-east-1");
	struct s3_auth_req r;
	get_request(&r, GET_SIG, T0 + 20 * 60, 0);
	ck_assert_int_eq(verify_sync(a, &r), S3E_RequestTimeTooSkewed);
	ck_assert_int_eq(fk.lookups, 0); /* refused before asking meta */
	get_request(&r, GET_SIG, T0 - 20 * 60, 0);
	ck_assert_int_eq(verify_sync(a, &r), S3E_RequestTimeTooSkewed);
	get_request(&r, GET_SIG, T0 - 15 * 60, 0);
	ck_assert_int_eq(verify_sync(a, &r), S3E_OK);
	get_request(&r, GET_SIG, T0 + 15 * 60 + 1, 0);
	ck_assert_int_eq(verify_sync(a, &r), S3E_RequestTimeTooSkewed);
	/* No date at all. */
	get_request(&r, GET_SIG, T0, 0);
	get_hs[3].name = "x-amz-datf";
	ck_assert_int_eq(verify_sync(a, &r), S3E_AccessDenied);
	s3_auth_free(a);
}
END_TEST

static const char *presigned_q =
	"X-Amz-Algorithm=AWS4-HMAC-SHA256"
	"&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
	"&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
	"&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";

static struct sigv4_header pre_hs[] = { H("Host", "examplebucket.s3.amazonaws.com") };

static void presigned_request(struct s3_auth_req *r, const char *q, time_t now)
{
	memset(r, 0, sizeof(*r));
	r->method = "GET";
	r->path = "/test.txt";
	r->path_len = 9;
	r->query = q;
	r->query_len = strlen(q);
	r->headers = pre_hs;
	r->n_headers = 1;
	r->now = now;
}

START_TEST(test_presigned)
{
	struct s3_auth *a = mk("us-east-1");
	struct s3_auth_req r;
	presigned_request(&r, presigned_q, T0 + 3600);
	ck_assert_int_eq(verify_sync(a, &r), S3E_OK);
	ck_assert_int_eq(r.res.payload, S3_PAYLOAD_UNSIGNED);
	ck_assert(r.res.claim.presigned);
	presigned_request(&r, presigned_q, T0 + 86400);
	ck_assert_int_eq(verify_sync(a, &r), S3E_OK);
	presigned_request(&r, presigned_q, T0 + 86401);
	ck_assert_int_eq(verify_sync(a, &r), S3E_RequestExpired);
	ck_assert_str_eq(s3_err_code(r.res.err), "AccessDenied");
	ck_assert_str_eq(s3_err_message(r.res.err), "Request has expired");
	ck_assert_int_eq(s3_err_status(r.res.err), 403);
	presigned_request(&r, presigned_q, T0 - 20 * 60);
	ck_assert_int_eq(verify_sync(a, &r), S3E_RequestNotYetValid);

	/* Tampered: another path with the same query. */
	presigned_request(&r, presigned_q, T0 + 1);
	r.path = "/test.txu";
	ck_assert_int_eq(verify_sync(a, &r), S3E_SignatureDoesNotMatch);

	/* Header and query together. */
	presigned_request(&r, presigned_q, T0 + 1);
	struct sigv4_header two[] = { H("Host", "examplebucket.s3.amazonaws.com"),
				      H("Authorization", "AWS4-HMAC-SHA256 Credential=x") };
	r.headers = two;
	r.n_headers = 2;
	ck_assert_int_eq(verify_sync(a, &r), S3E_InvalidArgument);

	/* Expires beyond a week. */
	char q[1024];
	snprintf(q, sizeof(q), "%s", presigned_q);
	memcpy(strstr(q, "X-Amz-Expires=86400"), "X-Amz-Expires=99999", 19);
	char *e = strstr(q, "99999");
	memmove(e + 1, e, strlen(e) + 1);
	memcpy(e, "999999", 6); /* 9999999 > 604800 */
	presigned_request(&r, q, T0 + 1);
	ck_assert_int_eq(verify_sync(a, &r), S3E_AuthorizationQueryParametersError);
	s3_auth_free(a);
}
END_TEST

START_TEST(test_malformed_and_scope)
{
	struct s3_auth *a = mk("eu-west-1");
	struct s3_auth_req r;
	get_request(&r, GET_SIG, T0, 0);
	ck_assert_int_eq(verify_sync(a, &r), S3E_AuthorizationHeaderMalformed);
	ck_assert_ptr_nonnull(strstr(r.res.msg, "'us-east-1' is wrong; expecting 'eu-west-1'"));
	ck_assert_str_eq(r.res.region, "eu-west-1");   /* the error body's <Region> */
	ck_assert_int_eq(fk.lookups, 0);
	s3_auth_free(a);

	a = mk(NULL); /* any region */
	get_request(&r, GET_SIG, T0, 0);
	ck_assert_int_eq(verify_sync(a, &r), S3E_OK);
	ck_assert_ptr_null(r.res.region);

	struct sigv4_header hs[] = {
		H("Host", "h"), H("x-amz-date", "20130524T000000Z"),
		H("x-amz-content-sha256", SIGV4_EMPTY_SHA256), { "Authorization", 13, NULL, 0 },
	};
	struct {
		const char *authz;
		enum s3_err want;
	} cases[] = {
		/* SigV2, whose Date must be an HTTP date, not x-amz-date's ISO form. */
		{ "AWS AKIAIOSFODNN7EXAMPLE:frJIUN8DYpKDtOLCwo//yllqDzg=", S3E_AccessDenied },
		{ "AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_request", S3E_AuthorizationHeaderMalformed },
		{ "garbage", S3E_AuthorizationHeaderMalformed },
		{ "AWS4-HMAC-SHA256 Credential=" AK "/20130525/us-east-1/s3/aws4_request,"
		  "SignedHeaders=host;x-amz-date,Signature=" GET_SIG, S3E_AuthorizationHeaderMalformed },
		{ "AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/ec2/aws4_request,"
		  "SignedHeaders=host;x-amz-date,Signature=" GET_SIG, S3E_AuthorizationHeaderMalformed },
		{ "AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_request,"
		  "SignedHeaders=x-amz-date,Signature=" GET_SIG, S3E_AuthorizationHeaderMalformed },
		{ "AWS4-HMAC-SHA256 Credential=" AK "/20130524/us-east-1/s3/aws4_request,"
		  "SignedHeaders=host;x-amz-date,Signature=" GET_SIG, S3E_SignatureDoesNotMatch },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&r, 0, sizeof(r));
		hs[3].value = cases[i].authz;
		hs[3].value_len = strlen(cases[i].authz);
		r.method = "GET";
		r.path = "/";
		r.path_len = 1;
		r.headers = hs;
		r.n_headers = 4;
		r.now = T0;
		ck_assert_msg(verify_sync(a, &r) == cases[i].want, "case %zu: %s", i,
			      s3_err_name(r.res.err));
	}
	/* Missing and bad x-amz-content-sha256. */
	hs[2].name = "x-amz-content-sha257";
	ck_assert_int_eq(verify_sync(a, &r), S3E_InvalidRequest);
	hs[2].name = "x-amz-content-sha256";
	hs[2].value = "nothex";
	hs[2].value_len = 6;
	ck_assert_int_eq(verify_sync(a, &r), S3E_InvalidArgument);
	/* Anonymous, and SigV2 presigned. */
	memset(&r, 0, sizeof(r));
	r.method = "GET";
	r.path = "/";
	r.path_len = 1;
	r.headers = hs;
	r.n_headers = 3;
	/* Anonymous passes here (authorization is s3_authz's); its payload
	 * digest is still the one claimed. */
	ck_assert_int_eq(verify_sync(a, &r), S3E_OK);
	ck_assert(r.res.anonymous);
	ck_assert_str_eq(r.res.user, "");
	r.query = "AWSAccessKeyId=AK&Signature=x"; /* a SigV2 URL without Expires */
	r.query_len = strlen(r.query);
	ck_assert_int_eq(verify_sync(a, &r), S3E_AccessDenied);
	s3_auth_free(a);
}
END_TEST

/* SigV2: AWS's example GET (virtual-host style; its "+0000" Date), the
 * presigned example, and every refusal; the flag that turns SigV2 off. */
#define V2_T0 1175024202 /* Tue, 27 Mar 2007 19:36:42 GMT */
START_TEST(test_sigv2)
{
	struct s3_auth *a = mk("us-east-1");
	char authz2[128] = "AWS " AK ":bWq2s1WEIj+Ydj0vQ697zp+IXMU=";
	struct sigv4_header hs[] = {
		H("Host", "johnsmith.s3.amazonaws.com"),
		H("Date", "Tue, 27 Mar 2007 19:36:42 +0000"),
		{ "Authorization", 13, authz2, strlen(authz2) },
	};
	struct s3_auth_req r;
	memset(&r, 0, sizeof(r));
	r.method = "GET";
	r.path = "/photos/puppy.jpg";
	r.path_len = 17;
	r.headers = hs;
	r.n_headers = 3;
	r.vhost_bucket = "johnsmith";
	r.vhost_bucket_len = 9;
	r.now = V2_T0 + 60;
	ck_assert_int_eq(verify_sync(a, &r), S3E_OK);
	ck_assert_str_eq(r.res.user, "alice");
	ck_assert(!r.res.anonymous);
	ck_assert_int_eq(r.res.payload, S3_PAYLOAD_UNSIGNED);
	ck_assert_str_eq(r.res.claim.access_key, AK);
	ck_assert_int_eq(fk.lookups, 1);
	ck_assert_int_eq(verify_sync(a, &r), S3E_OK); /* from the cache */
	ck_assert_int_eq(fk.lookups, 1);

	/* Path style names the same resource: same signature. */
	r.path = "/johnsmith/photos/puppy.jpg";
	r.path_len = 27;
	r.vhost_bucket = NULL;
	r.vhost_bucket_len = 0;
	ck_assert_int_eq(verify_sync(a, &r), S3E_OK);
	/* Another key, a tampered signature, a signed header changed. */
	r.path = "/johnsmith/photos/kitten.jpg";
	ck_assert_int_eq(verify_sync(a, &r), S3E_SignatureDoesNotMatch);
	r.path = "/johnsmith/photos/puppy.jpg";
	authz2[strlen(authz2) - 2] = 'V';
	ck_assert_int_eq(verify_sync(a, &r), S3E_SignatureDoesNotMatch);
	authz2[strlen(authz2) - 2] = 'U';
	ck_assert_int_eq(verify_sync(a, &r), S3E_OK);
	/* The clock: 15 minutes either way. */
	r.now = V2_T0 + 901;
	ck_assert_int_eq(verify_sync(a, &r), S3E_RequestTimeTooSkewed);
	r.now = V2_T0 - 901;
	ck_assert_int_eq(verify_sync(a, &r), S3E_RequestTimeTooSkewed);
	r.now = V2_T0;
	/* Malformed header; unknown key. */
	hs[2].value = "AWS " AK;
	hs[2].value_len = strlen(hs[2].value);
	ck_assert_int_eq(verify_sync(a, &r), S3E_InvalidArgument);
	hs[2].value = "AWS AKIDUNKNOWN:bWq2s1WEIj+Ydj0vQ697zp+IXMU=";
	hs[2].value_len = strlen(hs[2].value);
	ck_assert_int_eq(verify_sync(a, &r), S3E_InvalidAccessKeyId);

	/* Presigned (AWS's query-string example). */
	memset(&r, 0, sizeof(r));
	r.method = "GET";
	r.path = "/photos/puppy.jpg";
	r.path_len = 17;
	r.query = "AWSAccessKeyId=" AK "&Expires=1175139620&"
		  "Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D";
	r.query_len = strlen(r.query);
	r.headers = hs;
	r.n_headers = 1;
	r.vhost_bucket = "johnsmith";
	r.vhost_bucket_len = 9;
	r.now = 1175139620 - 10;
	ck_assert_int_eq(verify_sync(a, &r), S3E_OK);
	ck_assert(r.res.claim.presigned);
	r.now = 1175139620 + 1;
	ck_assert_int_eq(verify_sync(a, &r), S3E_AccessDenied);
	ck_assert_ptr_nonnull(strstr(r.res.msg, "expired"));
	r.now = 1175139620 - 10;
	r.query = "AWSAccessKeyId=" AK "&Expires=1175139620";
	r.query_len = strlen(r.query);
	ck_assert_int_eq(verify_sync(a, &r), S3E_AccessDenied);
	/* A signature that is not base64 of 20 bytes matches nothing, as a
	 * wrong one: the first escape spoiled ("A2B": 30 characters), bad
	 * base64, empty. */
	const char *spoiled[] = {
		"AWSAccessKeyId=" AK "&Expires=1175139620&Signature=NpgCjnDzrMA2BWFzoENXmpNDUsSn8%3D",
		"AWSAccessKeyId=" AK "&Expires=1175139620&Signature=x",
		"AWSAccessKeyId=" AK "&Expires=1175139620&Signature=",
	};
	for (size_t i = 0; i < sizeof(spoiled) / sizeof(spoiled[0]); i++) {
		r.query = spoiled[i];
		r.query_len = strlen(r.query);
		ck_assert_int_eq(verify_sync(a, &r), S3E_SignatureDoesNotMatch);
	}
	s3_auth_free(a);

	/* Turned off: refused before any lookup. */
	memset(&fk, 0, sizeof(fk));
	struct s3_auth_cfg cfg = { .region = "us-east-1", .no_sigv2 = true,
				   .source = { fake_lookup, NULL } };
	fk.ak = AK;
	fk.sk = SK;
	a = s3_auth_new(&cfg);
	r.query = "AWSAccessKeyId=" AK "&Expires=1175139620&"
		  "Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D";
	r.query_len = strlen(r.query);
	ck_assert_int_eq(verify_sync(a, &r), S3E_InvalidRequest);
	ck_assert_int_eq(fk.lookups, 0);
	s3_auth_free(a);
}
END_TEST

/* A request signed here with the Date header only (no x-amz-date), and a
 * streaming payload mode: the verifier must rebuild the same string. */
START_TEST(test_date_header_and_streaming)
{
	struct s3_auth *a = mk("us-east-1");
	struct sigv4_auth c;
	memset(&c, 0, sizeof(c));
	strcpy(c.access_key, AK);
	strcpy(c.date, "20130524");
	strcpy(c.region, "us-east-1");
	strcpy(c.service, "s3");
	strcpy(c.amz_date, "20130524T000000Z");
	strcpy(c.signed_headers, "date;host;x-amz-content-sha256;x-amz-decoded-content-length");
	struct sigv4_header hs[] = {
		H("Host", "b.example.com"),
		H("Date", "Fri, 24 May 2013 00:00:00 GMT"),
		H("x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"),
		H("x-amz-decoded-content-length", "66560"),
		{ "Authorization", 13, NULL, 0 },
	};
	struct sigv4_request sr = { "PUT", "/k", 2, NULL, 0, hs, 4,
				    "STREAMING-AWS4-HMAC-SHA256-PAYLOAD" };
	uint8_t key[32];
	sigv4_signing_key(SK, c.date, c.region, c.service, key);
	ck_assert_int_eq(sigv4_sign(key, &sr, &c, c.signature), 0);
	char hdr[512];
	ck_assert_int_gt(sigv4_format_header(&c, hdr, sizeof(hdr)), 0);
	hs[4].value = hdr;
	hs[4].value_len = strlen(hdr);

	struct s3_auth_req r;
	memset(&r, 0, sizeof(r));
	r.method = "PUT";
	r.path = "/k";
	r.path_len = 2;
	r.headers = hs;
	r.n_headers = 5;
	r.now = T0 + 5;
	ck_assert_int_eq(verify_sync(a, &r), S3E_OK);
	ck_assert_int_eq(r.res.payload, S3_PAYLOAD_STREAMING_SIGNED);
	ck_assert_str_eq(r.res.claim.amz_date, "20130524T000000Z");
	ck_assert_str_eq(r.res.claim.signature, c.signature); /* the chunk seed */
	ck_assert_int_eq(memcmp(r.res.signing_key, key, 32), 0);
	s3_auth_free(a);

	enum s3_payload_mode m;
	uint8_t d[32];
	ck_assert_int_eq(s3_auth_payload_mode("UNSIGNED-PAYLOAD", 16, &m, d), 0);
	ck_assert_int_eq(m, S3_PAYLOAD_UNSIGNED);
	ck_assert_int_eq(s3_auth_payload_mode("STREAMING-UNSIGNED-PAYLOAD-TRAILER", 34, &m, d), 0);
	ck_assert_int_eq(m, S3_PAYLOAD_STREAMING_UNSIGNED_TRAILER);
	ck_assert_int_eq(s3_auth_payload_mode("STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", 42, &m, d), 0);
	ck_assert_int_eq(m, S3_PAYLOAD_STREAMING_SIGNED_TRAILER);
	ck_assert_int_eq(s3_auth_payload_mode("UNSIGNED-PAYLOAD-", 17, &m, d), -EINVAL);
	ck_assert_int_eq(s3_auth_payload_mode(SIGV4_EMPTY_SHA256, 63, &m, d), -EINVAL);

	time_t t;
	ck_assert_int_eq(s3_auth_parse_http_date("Fri, 24 May 2013 00:00:00 GMT", 29, &t), 0);
	ck_assert_int_eq(t, T0);
	ck_assert_int_eq(s3_auth_parse_http_date("Fri, 24 Mai 2013 00:00:00 GMT", 29, &t), -EINVAL);
	ck_assert_int_eq(s3_auth_parse_http_date("Fri, 24 May 2013 00:00:00 UTC", 29, &t), -EINVAL);
	ck_assert_int_eq(s3_auth_parse_http_date("Fri, 24 May 2013 24:00:00 GMT", 29, &t), -EINVAL);
}
END_TEST

START_TEST(test_cache_bounded)
{
	/* 8 slots, many keys: never more than 8 cached, every answer right. */
	struct s3_auth *a = mk("us-east-1");
	struct s3_auth_req r;
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < 50; i++) {
			char ak[32];
			snprintf(ak, sizeof(ak), "AKIAUNKNOWN%04d", i);
			get_request(&r, GET_SIG, T0, (uint64_t)round);
			char h[512];
			snprintf(h, sizeof(h),
				 "AWS4-HMAC-SHA256 Credential=%s/20130524/us-east-1/s3/aws4_request,"
				 "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=" GET_SIG,
				 ak);
			get_hs[4].value = h;
			get_hs[4].value_len = strlen(h);
			ck_assert_int_eq(verify_sync(a, &r), S3E_InvalidAccessKeyId);
		}
	/* The real key still verifies after all that churn. */
	get_request(&r, GET_SIG, T0, 10);
	ck_assert_int_eq(verify_sync(a, &r), S3E_OK);
	struct s3_auth_stats st;
	s3_auth_get_stats(a, &st);
	ck_assert_uint_ge(st.misses, 100); /* 8 slots cannot hold 50 keys */
	s3_auth_free(a);
}
END_TEST

/* A flood of made-up keys never pushes a known key out of the cache (a
 * good client keeps verifying without a lookup), and the made-up keys
 * themselves stay negative-cached as far as room allows. */
START_TEST(test_unknown_keys_never_evict_known)
{
	struct s3_auth *a = mk("us-east-1");
	struct s3_auth_req r;
	get_request(&r, GET_SIG, T0, 0);
	ck_assert_int_eq(verify_sync(a, &r), S3E_OK);
	ck_assert_int_eq(fk.lookups, 1);
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < 200; i++) {
			char ak[32], h[512];
			snprintf(ak, sizeof(ak), "AKIAFLOOD%06d", i);
			/* Late in the known key's TTL: its entry expires before
			 * the negative ones would. */
			get_request(&r, GET_SIG, T0, 56000 + (uint64_t)round);
			snprintf(h, sizeof(h),
				 "AWS4-HMAC-SHA256 Credential=%s/20130524/us-east-1/s3/aws4_request,"
				 "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=" GET_SIG,
				 ak);
			get_hs[4].value = h;
			get_hs[4].value_len = strlen(h);
			ck_assert_int_eq(verify_sync(a, &r), S3E_InvalidAccessKeyId);
		}
	int before = fk.lookups;
	get_request(&r, GET_SIG, T0, 56010);
	ck_assert_int_eq(verify_sync(a, &r), S3E_OK);
	ck_assert_int_eq(fk.lookups, before); /* still cached */
	struct s3_auth_stats st;
	s3_auth_get_stats(a, &st);
	ck_assert_uint_ge(st.hits, 1);
	s3_auth_free(a);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("s3_auth");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_get_example);
	tcase_add_test(tc, test_wrong_secret_and_unknown_key);
	tcase_add_test(tc, test_session);
	tcase_add_test(tc, test_revocation);
	tcase_add_test(tc, test_clock);
	tcase_add_test(tc, test_presigned);
	tcase_add_test(tc, test_malformed_and_scope);
	tcase_add_test(tc, test_date_header_and_streaming);
	tcase_add_test(tc, test_sigv2);
	tcase_add_test(tc, test_cache_bounded);
	tcase_add_test(tc, test_unknown_keys_never_evict_known);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
