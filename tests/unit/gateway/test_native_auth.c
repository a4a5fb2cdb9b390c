/*
 * test_native_auth.c — the native protocol's signature (common/native_sig)
 * as a client makes it and as the gateway checks it (gateway/s3_auth over
 * native_sig_build's canonical request, what native_srv.c does): a good
 * call verifies; a wrong secret, another access key, a tampered argument
 * (bucket, key, range), another method, a date 15 minutes off and a
 * payload whose hash is not the signed one are refused; the Auth field is
 * outside the arguments' hash; header values with line breaks are refused.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/hash.h"
#include "common/native_sig.h"
#include "common/proto/native_methods.h"
#include "gateway/s3_auth.h"

#define AK "AKIANATIVETEST000001"
#define SK "native-test-secret-0123456789abcdefghij"
#define T0 1764633600 /* 20251202T000000Z */
/* Computed apart from this code: Python hmac/hashlib over the canonical
 * request docs/native-protocol.md spells out, with the arguments packed by
 * hand (GetRequest bucket "bkt", key "key": 12 03 "bkt" 1a 03 "key"). */
#define KNOWN_SIG "acfac31f9f9be01dd8bbe92bd6b48852079593614e2e32b29f089768572b0d7c"

static void cred_lookup(void *ctx, struct s3_cred_lookup *l)
{
	(void)ctx;
	if (!strcmp(l->access_key, AK))
		l->done(l, 0, &(struct s3_cred){ .secret = SK, .user = "alice" });
	else
		l->done(l, -ENOENT, NULL);
}

static struct s3_auth *mk(void)
{
	struct s3_auth_cfg cfg = { .region = "us-east-1", .source = { cred_lookup, NULL },
				   .no_sigv2 = true };
	struct s3_auth *a = s3_auth_new(&cfg);
	ck_assert_ptr_nonnull(a);
	return a;
}

struct signed_call {
	Iolake__Native__GetRequest get;
	Iolake__Native__Auth auth;
	char amz_date[17], sha[65], authz[NATIVE_SIG_AUTHZ_MAX];
};

/* A Get of bucket/key signed at t with secret sk. */
static void sign_get(struct signed_call *s, const char *ak, const char *sk, time_t t,
		     const char *bucket, const char *key, uint64_t off)
{
	iolake__native__get_request__init(&s->get);
	iolake__native__auth__init(&s->auth);
	s->get.auth = &s->auth;
	s->get.bucket = (char *)bucket;
	s->get.key = (char *)key;
	s->get.offset = off;
	sigv4_format_amz_date(t, s->amz_date);
	char date[9];
	memcpy(date, s->amz_date, 8);
	date[8] = 0;
	uint8_t k[32];
	sigv4_signing_key(sk, date, "us-east-1", "s3", k);
	snprintf(s->sha, sizeof(s->sha), "%s", SIGV4_UNSIGNED_PAYLOAD);
	ck_assert_int_eq(native_sig_sign(k, ak, "us-east-1", s->amz_date, NATIVE_SVC, NATIVE_M_GET,
					 &s->get.base, s->sha, s->authz), 0);
	s->auth.authorization = s->authz;
	s->auth.amz_date = s->amz_date;
	s->auth.content_sha256 = s->sha;
}

/* What the gateway concludes of the call as method at time now. */
static enum s3_err verify(struct s3_auth *a, const ProtobufCMessage *m, unsigned method,
			  const Iolake__Native__Auth *auth, time_t now)
{
	struct native_sig_req sig;
	int rc = native_sig_build(&sig, NATIVE_SVC, method, m, auth->amz_date, auth->content_sha256,
				  auth->authorization);
	ck_assert_int_eq(rc, 0);
	struct s3_auth_req r;
	memset(&r, 0, sizeof(r));
	r.method = sig.req.method;
	r.path = sig.req.path;
	r.path_len = sig.req.path_len;
	r.query = "";
	r.headers = sig.hdrs;
	r.n_headers = sig.n_hdrs;
	r.now = now;
	r.now_ms = 1;
	ck_assert_int_eq(s3_auth_verify(a, &r, NULL), 0);   /* synchronous source */
	return r.res.err;
}

START_TEST(good_call_verifies)
{
	struct s3_auth *a = mk();
	struct signed_call s;
	sign_get(&s, AK, SK, T0, "bkt", "a/b c+d%", 7);
	ck_assert_int_eq(verify(a, &s.get.base, NATIVE_M_GET, &s.auth, T0 + 60), S3E_OK);
	s3_auth_free(a);
}
END_TEST

START_TEST(wrong_secret_or_key_refused)
{
	struct s3_auth *a = mk();
	struct signed_call s;
	sign_get(&s, AK, SK "x", T0, "bkt", "k", 0);
	ck_assert_int_eq(verify(a, &s.get.base, NATIVE_M_GET, &s.auth, T0), S3E_SignatureDoesNotMatch);
	sign_get(&s, "AKIAOTHER", SK, T0, "bkt", "k", 0);
	ck_assert_int_eq(verify(a, &s.get.base, NATIVE_M_GET, &s.auth, T0), S3E_InvalidAccessKeyId);
	s3_auth_free(a);
}
END_TEST

START_TEST(tampered_arguments_refused)
{
	struct s3_auth *a = mk();
	struct signed_call s;
	sign_get(&s, AK, SK, T0, "bkt", "k", 0);
	s.get.bucket = "other";
	ck_assert_int_eq(verify(a, &s.get.base, NATIVE_M_GET, &s.auth, T0), S3E_SignatureDoesNotMatch);
	s.get.bucket = "bkt";
	s.get.key = "k2";
	ck_assert_int_eq(verify(a, &s.get.base, NATIVE_M_GET, &s.auth, T0), S3E_SignatureDoesNotMatch);
	s.get.key = "k";
	s.get.offset = 1;
	ck_assert_int_eq(verify(a, &s.get.base, NATIVE_M_GET, &s.auth, T0), S3E_SignatureDoesNotMatch);
	s.get.offset = 0;
	ck_assert_int_eq(verify(a, &s.get.base, NATIVE_M_GET, &s.auth, T0), S3E_OK);
	/* The same arguments as another method (a Head is a GetRequest-shaped
	 * message too): the path differs. */
	ck_assert_int_eq(verify(a, &s.get.base, NATIVE_M_DELETE, &s.auth, T0),
			 S3E_SignatureDoesNotMatch);
	s3_auth_free(a);
}
END_TEST

START_TEST(clock_skew_15_minutes)
{
	struct s3_auth *a = mk();
	struct signed_call s;
	sign_get(&s, AK, SK, T0, "bkt", "k", 0);
	ck_assert_int_eq(verify(a, &s.get.base, NATIVE_M_GET, &s.auth, T0 + 14 * 60), S3E_OK);
	ck_assert_int_eq(verify(a, &s.get.base, NATIVE_M_GET, &s.auth, T0 + 16 * 60),
			 S3E_RequestTimeTooSkewed);
	ck_assert_int_eq(verify(a, &s.get.base, NATIVE_M_GET, &s.auth, T0 - 16 * 60),
			 S3E_RequestTimeTooSkewed);
	s3_auth_free(a);
}
END_TEST

START_TEST(payload_hash_is_signed)
{
	struct s3_auth *a = mk();
	struct signed_call s;
	sign_get(&s, AK, SK, T0, "bkt", "k", 0);
	/* Claiming another payload hash than the one signed fails. */
	char other[65];
	native_sig_payload_sha256("abc", 3, other);
	s.auth.content_sha256 = other;
	ck_assert_int_eq(verify(a, &s.get.base, NATIVE_M_GET, &s.auth, T0), S3E_SignatureDoesNotMatch);
	/* A signed hash reaches the caller to compare with the payload. */
	iolake__native__get_request__init(&s.get);
	s.get.auth = &s.auth;
	s.get.bucket = "bkt";
	s.get.key = "k";
	uint8_t k[32];
	sigv4_signing_key(SK, "20251202", "us-east-1", "s3", k);
	ck_assert_int_eq(native_sig_sign(k, AK, "us-east-1", s.amz_date, NATIVE_SVC, NATIVE_M_GET,
					 &s.get.base, other, s.authz), 0);
	s.auth.authorization = s.authz;
	struct native_sig_req sig;
	ck_assert_int_eq(native_sig_build(&sig, NATIVE_SVC, NATIVE_M_GET, &s.get.base, s.amz_date,
					  other, s.authz), 0);
	struct s3_auth_req r;
	memset(&r, 0, sizeof(r));
	r.method = sig.req.method;
	r.path = sig.req.path;
	r.path_len = sig.req.path_len;
	r.headers = sig.hdrs;
	r.n_headers = sig.n_hdrs;
	r.now = T0;
	r.now_ms = 1;
	ck_assert_int_eq(s3_auth_verify(a, &r, NULL), 0);
	ck_assert_int_eq(r.res.err, S3E_OK);
	ck_assert_int_eq(r.res.payload, S3_PAYLOAD_SHA256);
	uint8_t d[32];
	hash_sha256("abc", 3, d);
	ck_assert_mem_eq(r.res.payload_sha256, d, 32);
	s3_auth_free(a);
}
END_TEST

START_TEST(auth_outside_args_hash)
{
	Iolake__Native__PutRequest p = IOLAKE__NATIVE__PUT_REQUEST__INIT;
	Iolake__Native__Auth au = IOLAKE__NATIVE__AUTH__INIT;
	p.bucket = "b";
	p.key = "k";
	char h1[65], h2[65];
	ck_assert_int_eq(native_sig_args_sha256(&p.base, h1), 0);
	au.authorization = "AWS4-HMAC-SHA256 whatever";
	p.auth = &au;
	ck_assert_int_eq(native_sig_args_sha256(&p.base, h2), 0);
	ck_assert_str_eq(h1, h2);
	ck_assert_ptr_eq(p.auth, &au);   /* restored */
	p.skip_md5 = true;
	ck_assert_int_eq(native_sig_args_sha256(&p.base, h2), 0);
	ck_assert_str_ne(h1, h2);
	/* A message without an auth field has no arguments' hash. */
	Iolake__Native__ListEntry e = IOLAKE__NATIVE__LIST_ENTRY__INIT;
	ck_assert_int_eq(native_sig_args_sha256(&e.base, h1), -EINVAL);
}
END_TEST

START_TEST(line_breaks_refused)
{
	Iolake__Native__HeadRequest h = IOLAKE__NATIVE__HEAD_REQUEST__INIT;
	struct native_sig_req sig;
	ck_assert_int_eq(native_sig_build(&sig, NATIVE_SVC, NATIVE_M_HEAD, &h.base,
					  "20251202T000000Z\r\nx-evil: 1", "UNSIGNED-PAYLOAD", NULL),
			 -EINVAL);
	ck_assert_int_eq(native_sig_build(&sig, NATIVE_SVC, NATIVE_M_COUNT, &h.base,
					  "20251202T000000Z", "UNSIGNED-PAYLOAD", NULL), -EINVAL);
	ck_assert_int_eq(native_sig_build(&sig, NATIVE_SVC, NATIVE_M_HEAD, &h.base,
					  "20251202T000000Z", "UNSIGNED-PAYLOAD", NULL), 0);
	ck_assert_str_eq(sig.path, "/iolake.native.Native/Head");
	ck_assert_str_eq(sig.req.method, "IOLAKE");
}
END_TEST

/* The canonical form is a wire contract: a change breaks every client. */
START_TEST(known_signature)
{
	struct signed_call s;
	sign_get(&s, AK, SK, T0, "bkt", "key", 0);
	ck_assert_str_eq(s.authz,
			 "AWS4-HMAC-SHA256 Credential=" AK "/20251202/us-east-1/s3/aws4_request, "
			 "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-iolake-args-sha256, "
			 "Signature=" KNOWN_SIG);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("native_auth");
	TCase *tc = tcase_create("native_auth");
	tcase_add_test(tc, good_call_verifies);
	tcase_add_test(tc, wrong_secret_or_key_refused);
	tcase_add_test(tc, tampered_arguments_refused);
	tcase_add_test(tc, clock_skew_15_minutes);
	tcase_add_test(tc, payload_hash_is_signed);
	tcase_add_test(tc, auth_outside_args_hash);
	tcase_add_test(tc, line_breaks_refused);
	tcase_add_test(tc, known_signature);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
