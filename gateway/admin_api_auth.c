/*
 * admin_api_auth.c — who calls the admin API: SigV4 (gateway/s3_auth, the
 * verifier the core made, with this file's credential source over meta's
 * GetAccessKey; the body checked against its signed digest), or a session
 * token (gateway/admin_req) whose access key is looked up again on every
 * use (still there, still an admin); and login / logout, which make and
 * clear sessions. Ends in admin_call_authorized (the core's) or a 401.
 *
 * Loop: the API's. Does not: decide what an admin may do (everything), or
 * keep sessions (tokens are self-contained; the HMAC key is the API's).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <openssl/crypto.h>

#include "common/err.h"
#include "common/hash.h"
#include "gateway/admin_api_int.h"
#include "gateway/gw_creds.h"
#include "gateway/gw_map.h"

/* ------------------------------------------------------------ credentials */

/* s3_auth's credential source: meta's GetAccessKey (as the S3 front end's). */
void admin_cred_lookup(void *ctx, struct s3_cred_lookup *l)
{
	struct admin_api *a = ctx;
	gw_creds_lookup(a->mc, NULL, l);
}

/* SigV4 verified (or refused). */
static void on_sigv4(struct s3_auth_req *r)
{
	struct admin_call *c = (struct admin_call *)((char *)r - offsetof(struct admin_call, ar));
	c->pending--;
	const struct s3_auth_result *res = &r->res;
	if (!admin_call_live(c)) {
		admin_call_release(c);
		return;
	}
	if (res->err != S3E_OK) {
		int st = s3_err_status(res->err);
		admin_reply_error(c, st == 503 ? 503 : st == 400 ? 400 : 401, s3_err_code(res->err),
				  res->msg ? res->msg : s3_err_message(res->err));
		return;
	}
	if (res->anonymous) {
		admin_reply_error(c, 401, "Unauthenticated",
				  "sign the request (SigV4 with an admin's key) or log in "
				  "(POST /api/v1/login)");
		return;
	}
	/* The body is signed by its digest, or not at all (UNSIGNED-PAYLOAD):
	 * the aws-chunked forms are for objects, not for this API. */
	if (res->payload == S3_PAYLOAD_SHA256) {
		uint8_t d[32];
		hash_sha256(c->body ? c->body : "", c->body_len, d);
		if (memcmp(d, res->payload_sha256, 32)) {
			admin_reply_error(c, 400, "XAmzContentSHA256Mismatch",
					  "the body does not match x-amz-content-sha256");
			return;
		}
	} else if (res->payload != S3_PAYLOAD_UNSIGNED) {
		admin_reply_error(c, 400, "InvalidRequest",
				  "streaming (aws-chunked) payloads are not accepted here");
		return;
	}
	snprintf(c->user, sizeof(c->user), "%s", res->user);
	snprintf(c->access_key, sizeof(c->access_key), "%s", res->claim.access_key);
	admin_call_authorized(c, res->admin);
}

static void sigv4(struct admin_call *c)
{
	/* AWS services other than S3 sign the body's SHA-256 without an
	 * x-amz-content-sha256 header (curl --aws-sigv4 7.88 does so); that
	 * is what the canonical request holds then, so it is what s3_auth is
	 * given. The header stays unsigned: SignedHeaders do not change. */
	size_t hl;
	if (!admin_header(c->headers, c->n_headers, "x-amz-content-sha256", &hl)) {
		uint8_t d[32];
		hash_sha256(c->body ? c->body : "", c->body_len, d);
		hash_hex(d, 32, c->body_sha256);
		c->headers[c->n_headers++] = (struct sigv4_header){
			.name = "x-amz-content-sha256", .name_len = 20,
			.value = c->body_sha256, .value_len = 64 };
	}
	/* Revocation: a key removed, or a grant or admin flag changed,
	 * through any gateway or iolake-admin stops or starts counting here
	 * at once (the map's creds_epoch, as on the S3 port). */
	struct admin_api *a = c->api;
	if (a->map) {
		uint64_t g = gw_map_creds_epoch(a->map);
		if (g != a->creds_gen) {
			a->creds_gen = g;
			s3_auth_invalidate_all(a->auth);
		}
	}
	struct s3_auth_req *r = &c->ar;
	memset(r, 0, sizeof(*r));
	r->method = c->method;
	r->path = c->path;
	r->path_len = c->path_len;
	r->query = c->query;
	r->query_len = c->query_len;
	r->headers = c->headers;
	r->n_headers = c->n_headers;
	r->now = time(NULL);
	r->now_ms = uv_now(c->api->loop);
	c->pending++;
	if (s3_auth_verify(c->api->auth, r, on_sigv4) == 0)
		on_sigv4(r);
}

/* A token's or a login's key looked up: the secret (login) and whether
 * the user is still there and an admin. */
static void on_key_lookup(struct s3_cred_lookup *l, int rc, const struct s3_cred *cred);

static void lookup_key(struct admin_call *c, const char *access_key)
{
	snprintf(c->access_key, sizeof(c->access_key), "%s", access_key);
	c->lk.access_key = c->access_key;
	c->lk.done = on_key_lookup;
	c->pending++;
	admin_cred_lookup(c->api, &c->lk);
}

static void login_reply(struct admin_call *c, const char *user)
{
	char tok[ADMIN_TOKEN_MAX + 1], cookie[ADMIN_TOKEN_MAX + 160];
	uint64_t exp = (uint64_t)time(NULL) + c->api->session_ttl_s;
	if (admin_token_make(c->api->token_key, c->access_key, exp, tok) < 0) {
		/* keys imported with characters tokens do not carry */
		admin_reply_error(c, 400, "InvalidRequest",
				  "this access key cannot log in (sign with SigV4 instead)");
		return;
	}
	snprintf(cookie, sizeof(cookie), "%s=%s; Path=/; Max-Age=%u; HttpOnly; SameSite=Strict",
		 ADMIN_COOKIE, tok, c->api->session_ttl_s);
	http_add_header(c->s, "Set-Cookie", cookie);
	struct jsonw w;
	jsonw_init(&w, 0);
	jsonw_obj_begin(&w);
	jsonw_kstr(&w, "user", user);
	jsonw_kstr(&w, "access_key", c->access_key);
	jsonw_kstr(&w, "token", tok);
	jsonw_ku64(&w, "expires_ms", exp * 1000);
	jsonw_obj_end(&w);
	admin_reply_json(c, 200, &w);
}

static void on_key_lookup(struct s3_cred_lookup *l, int rc, const struct s3_cred *cred)
{
	struct admin_call *c = (struct admin_call *)((char *)l - offsetof(struct admin_call, lk));
	c->pending--;
	if (!admin_call_live(c)) {
		admin_call_release(c);
		return;
	}
	bool login = c->route.id == ADMIN_R_LOGIN;
	if (rc == -ENOENT || (!rc && login &&
			      (strlen(cred->secret) != strlen(c->login.secret_key) ||
			       CRYPTO_memcmp(cred->secret, c->login.secret_key, strlen(cred->secret)) != 0))) {
		admin_reply_error(c, 401, login ? "InvalidCredentials" : "InvalidToken",
				  login ? "the access key or secret key is wrong"
					: "the session's access key no longer exists");
		return;
	}
	if (rc) {
		admin_reply_meta_error(c, rc == -EIO ? IOL_EUNAVAILABLE : rc);
		return;
	}
	snprintf(c->user, sizeof(c->user), "%s", cred->user);
	if (login) {
		if (!cred->admin)
			admin_reply_error(c, 403, "AccessDenied",
					  "the admin API is for admin users; this user is not one");
		else
			login_reply(c, cred->user);
		return;
	}
	admin_call_authorized(c, cred->admin);
}

void admin_login(struct admin_call *c)
{
	const char *why = "";
	int rc = admin_parse_login(c->body ? c->body : "", c->body_len, &c->login, &why);
	if (rc) {
		admin_reply_error(c, 400, rc == -EBADMSG ? "MalformedJSON" : "InvalidRequest", why);
		return;
	}
	lookup_key(c, c->login.access_key);
}

void admin_logout(struct admin_call *c)
{
	char cookie[128];
	snprintf(cookie, sizeof(cookie), "%s=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict",
		 ADMIN_COOKIE);
	http_add_header(c->s, "Set-Cookie", cookie);
	struct jsonw w;
	jsonw_init(&w, 0);
	jsonw_obj_begin(&w);
	jsonw_kbool(&w, "logged_out", true);
	jsonw_obj_end(&w);
	admin_reply_json(c, 200, &w);
}

/* The resource needs an admin: SigV4 when the request is signed, else a
 * session token (Bearer or cookie). */
void admin_authenticate(struct admin_call *c)
{
	/* SigV4 when the request is signed; else a session token. */
	size_t al;
	const char *authz = admin_header(c->headers, c->n_headers, "authorization", &al);
	bool signed_ = (authz && al >= 4 && !strncmp(authz, "AWS4", 4)) ||
		       (c->query && memmem(c->query, c->query_len, "X-Amz-Signature=", 16));
	if (signed_ || (authz && !(al > 7 && !strncasecmp(authz, "Bearer ", 7)))) {
		sigv4(c);
		return;
	}
	const char *tok;
	size_t tl;
	if (admin_find_token(c->headers, c->n_headers, &tok, &tl, &c->by_cookie)) {
		admin_reply_error(c, 401, "Unauthenticated",
				  "sign the request (SigV4 with an admin's key) or log in "
				  "(POST /api/v1/login)");
		return;
	}
	char ak[ADMIN_KEY_MAX + 1];
	int rc = admin_token_check(c->api->token_key, tok, tl, (uint64_t)time(NULL), ak);
	if (rc) {
		admin_reply_error(c, 401, rc == -ETIMEDOUT ? "ExpiredToken" : "InvalidToken",
				  rc == -ETIMEDOUT ? "the session has expired: log in again"
						   : "the session token is not valid (the server "
						     "restarted, or it was altered): log in again");
		return;
	}
	lookup_key(c, ak);
}
