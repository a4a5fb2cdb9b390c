/*
 * native_srv.c — the native protocol's server (native.h): its RPC
 * listener and service, each call's authentication and the mapping of S3
 * errors to gRPC statuses; the methods are in native_put.c, native_get.c
 * and native_list.c.
 *
 * Authentication (docs/native-protocol.md): the call's Auth and its
 * message, re-packed without Auth, make common/native_sig's canonical
 * request; s3_auth verifies it as it verifies S3 (scope, 15-minute skew,
 * the key through the credential cache, the signature), with the S3 front
 * end's credential source (gw_creds over meta) and revocation (the map's
 * creds_epoch empties the cache, as s3_server does). A signed
 * payload hash is checked here against the payload; streaming modes are
 * refused. Anonymous calls are refused: the native protocol has none.
 *
 * Sessions: a connection may log in once (Hello: a random challenge kept
 * on the connection, rpc_req_conn_data; Login: a signed call whose
 * arguments hold that challenge, which it consumes). An unsigned call on
 * it then acts as the key that logged in: s3_auth_verify_session finds
 * the key on every call as a signature's key is found (cache, creds_epoch,
 * meta), so a revoked key stops the session's next call, and the user's
 * grants are read as they are now. A Login replayed on another connection
 * meets another challenge; on its own, none.
 *
 * Owns the rpc_server, the verifier and its cache, the calls in flight and
 * (through native_put.c) the uploads. Thread: the gateway loop.
 */
#include "gateway/native.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>
#include <sys/random.h>
#include <time.h>

#include "common/hash.h"
#include "common/log.h"
#include "gateway/gw_creds.h"
#include "gateway/gw_map.h"
#include "gateway/native_int.h"
#include "gateway/s3_util.h"

#define REAP_MS 5000

/* ------------------------------------------------------------ errors */

int native_err_status(enum s3_err e)
{
	const char *code = s3_err_code(e);
	if (!strcmp(code, "SignatureDoesNotMatch") || !strcmp(code, "InvalidAccessKeyId") ||
	    !strcmp(code, "RequestTimeTooSkewed") || !strcmp(code, "XAmzContentSHA256Mismatch"))
		return RPC_UNAUTHENTICATED;
	if (!strcmp(code, "InvalidRange"))
		return RPC_OUT_OF_RANGE;
	if (!strcmp(code, "PreconditionFailed"))
		return RPC_FAILED_PRECONDITION;
	if (!strcmp(code, "NotImplemented"))
		return RPC_UNIMPLEMENTED;
	switch (s3_err_status(e)) {
	case 403:
		return RPC_PERMISSION_DENIED;
	case 404:
		return RPC_NOT_FOUND;
	case 409:
		return RPC_ABORTED;
	case 412:
		return RPC_FAILED_PRECONDITION;
	case 503:
		return RPC_UNAVAILABLE;
	case 500:
		return RPC_INTERNAL;
	default:
		return s3_err_status(e) >= 500 ? RPC_INTERNAL : RPC_INVALID_ARGUMENT;
	}
}

static void call_free(struct native_call *nc)
{
	struct native_srv *s = nc->s;
	s3u_free_msg(nc->rq.bkt);
	s3u_free_msg(nc->rq.obj);
	free(nc->rq.key);
	free(nc->rq.grants);
	if (s->n_spare < NATIVE_SPARE_MAX && !s->closing) {
		nc->next_spare = s->spare;
		s->spare = nc;
		s->n_spare++;
	} else {
		free(nc);
	}
	native_srv_unref(s);
}

/* A zeroed call: a spare one, or a new one. NULL: no memory. */
static struct native_call *call_new(struct native_srv *s)
{
	struct native_call *nc = s->spare;
	if (!nc)
		return calloc(1, sizeof(*nc));
	s->spare = nc->next_spare;
	s->n_spare--;
	memset(nc, 0, sizeof(*nc));
	return nc;
}

void native_ok(struct native_call *nc, const ProtobufCMessage *resp,
	       const struct buf_slice *payload)
{
	rpc_respond(nc->r, resp, payload);
	call_free(nc);
}

void native_fail(struct native_call *nc, enum s3_err e, const char *msg)
{
	rpc_fail(nc->r, native_err_status(e), "%s: %s", s3_err_code(e),
		 msg ? msg : s3_err_message(e));
	call_free(nc);
}

const char *native_call_key(const struct native_call *nc)
{
	return nc->areq.res.claim.access_key;
}

/* ------------------------------------------------------------ meta */

static void on_native_head(struct s3_head *h, enum s3_err e, Iolake__Meta__ObjectRecord *rec)
{
	struct native_call *nc = native_call_of_head(h);
	nc->rq.bkt = h->bkt;   /* the call's now (freed with it) */
	h->bkt = NULL;
	nc->head_cb(h, e, rec);
}

int native_head(struct native_call *nc, const char *bucket, const char *key, s3_head_cb cb)
{
	nc->head.with_bucket = true;
	s3u_free_msg(nc->rq.bkt);
	nc->rq.bkt = NULL;
	nc->head_cb = cb;   /* on_native_head hands over to it */
	int rc = s3_head_start(nc->s->o->mc, &nc->head, bucket, key, on_native_head);
	if (rc)
		native_fail(nc, S3E_ServiceUnavailable, NULL);
	return rc;
}

/* ------------------------------------------------------------ sessions */

/* A connection's login state, in its rpc_req_conn_data slot. */
struct native_conn {
	char challenge[NATIVE_CHALLENGE_LEN + 1];   /* Hello's, until a Login; "": none */
	bool logged_in;
	char access_key[sizeof(((struct sigv4_auth *)0)->access_key)];
	uint8_t secret_sha256[32];                  /* of the secret the login proved */
};

static void conn_free(void *p)
{
	explicit_bzero(p, sizeof(struct native_conn));
	free(p);
}

/* r's connection's state, made on first use. NULL: no connection (gone,
 * or the call came in process) or no memory. */
static struct native_conn *conn_of(struct rpc_req *r, bool make)
{
	void **slot = rpc_req_conn_data(r);
	if (!slot)
		return NULL;
	if (!*slot && make)
		*slot = calloc(1, sizeof(struct native_conn));
	return *slot;
}

static void h_hello(struct rpc_req *r, void *ud)
{
	(void)ud;
	struct native_conn *cn = conn_of(r, true);
	uint8_t b[NATIVE_CHALLENGE_LEN / 2];
	if (!cn || getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
		rpc_fail(r, RPC_UNAVAILABLE, "ServiceUnavailable: %s",
			 cn ? "no randomness" : "no connection state");
		return;
	}
	hash_hex(b, sizeof(b), cn->challenge);
	Iolake__Native__HelloResponse resp = IOLAKE__NATIVE__HELLO_RESPONSE__INIT;
	resp.challenge = cn->challenge;
	rpc_respond(r, &resp.base, NULL);
}

static bool same_challenge(const char *a, const char *b)
{
	return strlen(a) == NATIVE_CHALLENGE_LEN && strlen(b) == NATIVE_CHALLENGE_LEN &&
	       CRYPTO_memcmp(a, b, NATIVE_CHALLENGE_LEN) == 0;
}

/* UNAUTHENTICATED "LoginRequired: why" (a client logs in and sends again). */
static void login_required(struct native_call *nc, const char *why)
{
	rpc_fail(nc->r, RPC_UNAUTHENTICATED, "LoginRequired: %s", why);
	call_free(nc);
}

/* After a signed Login verified: take the connection's challenge. */
static void login_step(struct native_call *nc)
{
	const Iolake__Native__LoginRequest *m = (const void *)nc->msg;
	struct native_conn *cn = conn_of(nc->r, false);
	if (!nc->signed_call) {
		native_fail(nc, S3E_AccessDenied, "Login must be signed");
		return;
	}
	if (!cn || !cn->challenge[0] || !m->challenge || !same_challenge(cn->challenge, m->challenge)) {
		if (cn)
			cn->challenge[0] = 0;   /* one try per Hello */
		login_required(nc, "the challenge is not this connection's (Hello first)");
		return;
	}
	const struct s3_auth_result *res = &nc->areq.res;
	cn->challenge[0] = 0;
	cn->logged_in = true;
	memcpy(cn->access_key, res->claim.access_key, sizeof(cn->access_key));
	memcpy(cn->secret_sha256, res->secret_sha256, 32);
	Iolake__Native__LoginResponse resp = IOLAKE__NATIVE__LOGIN_RESPONSE__INIT;
	resp.user = nc->rq.user;
	native_ok(nc, &resp.base, NULL);
}

/* ------------------------------------------------------------ auth */

static void on_auth(struct s3_auth_req *ar)
{
	struct native_call *nc = container_of(ar, struct native_call, areq);
	const struct s3_auth_result *res = &ar->res;
	if (res->err) {
		native_fail(nc, res->err, res->msg);
		return;
	}
	if (res->anonymous) {
		native_fail(nc, S3E_AccessDenied, "the native protocol needs a signed request");
		return;
	}
	native_limit_authenticated(&nc->s->limit, nc->r);   /* a user's: not counted per address */
	switch (res->payload) {
	case S3_PAYLOAD_UNSIGNED:
		break;
	case S3_PAYLOAD_SHA256: {
		uint8_t d[32];
		hash_sha256(nc->payload.buf ? buf_slice_data(&nc->payload) : (const uint8_t *)"",
			    nc->payload.len, d);
		if (memcmp(d, res->payload_sha256, 32)) {
			native_fail(nc, S3E_XAmzContentSHA256Mismatch, NULL);
			return;
		}
		break;
	}
	default:
		native_fail(nc, S3E_InvalidRequest, "streaming payloads are S3's, not native");
		return;
	}
	struct s3_rq *rq = &nc->rq;
	snprintf(rq->user, sizeof(rq->user), "%s", res->user);
	s3_principal_init(&rq->who, rq->user, res->admin);
	if (!s3_rq_set_grants(rq, res->grants, res->n_grants)) {
		native_fail(nc, S3E_InternalError, NULL);
		return;
	}
	nc->step(nc);
}

/* Authenticate nc's call, then run its step. */
static void call_auth(struct native_call *nc)
{
	struct native_srv *s = nc->s;
	ProtobufCMessage *const *slot = NULL;
	const ProtobufCFieldDescriptor *f =
		protobuf_c_message_descriptor_get_field_by_name(nc->msg->descriptor, "auth");
	if (f)
		slot = (ProtobufCMessage *const *)((const char *)nc->msg + f->offset);
	const Iolake__Native__Auth *a = slot ? (const void *)*slot : NULL;
	struct native_conn *cn = NULL;
	if (!a || !a->authorization || !a->authorization[0]) {
		cn = conn_of(nc->r, false);
		if (!cn || !cn->logged_in) {
			login_required(nc, "the native protocol needs a signed call, "
				       "or a Login on the connection");
			return;
		}
	} else if (native_sig_build(&nc->sig, NATIVE_SVC, nc->method, nc->msg, a->amz_date,
			     a->content_sha256, a->authorization)) {
		native_fail(nc, S3E_InvalidRequest, "malformed Auth");
		return;
	}
	nc->signed_call = !cn;
	/* Revocation: a removed key stops working at once, as for S3 (the
	 * map's creds_epoch, s3_ops' creds_generation hook). */
	uint64_t g = gw_map_creds_epoch(s->o->map);
	if (g != s->creds_gen) {
		s->creds_gen = g;
		s3_auth_invalidate_all(s->auth);
	}
	struct s3_auth_req *ar = &nc->areq;
	ar->now = time(NULL);
	ar->now_ms = loop_now_ms();
	if (cn) {
		/* nc holds the login: the connection may close before the
		 * key's lookup answers. */
		memcpy(nc->session_secret, cn->secret_sha256, 32);
		if (s3_auth_verify_session(s->auth, ar, cn->access_key, nc->session_secret,
					   on_auth) == 0)
			on_auth(ar);
		return;
	}
	ar->method = nc->sig.req.method;
	ar->path = nc->sig.req.path;
	ar->path_len = nc->sig.req.path_len;
	ar->query = "";
	ar->query_len = 0;
	ar->headers = nc->sig.hdrs;
	ar->n_headers = nc->sig.n_hdrs;
	if (s3_auth_verify(s->auth, ar, on_auth) == 0)
		on_auth(ar);
}

/* ------------------------------------------------------------ dispatch */

static void dispatch(struct rpc_req *r, struct native_srv *s, unsigned method, native_step_fn step,
		     const char *bucket, const char *key)
{
	struct native_call *nc = call_new(s);
	if (!nc) {
		rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "InternalError: out of memory");
		return;
	}
	if (s->closing) {
		free(nc);
		rpc_fail(r, RPC_UNAVAILABLE, "ServiceUnavailable: shutting down");
		return;
	}
	s->live++;
	nc->s = s;
	nc->r = r;
	nc->method = method;
	nc->msg = rpc_req_msg(r);
	nc->payload = *rpc_req_payload(r);
	nc->step = step;
	nc->rq.o = s->o;
	if (bucket) {
		if (strlen(bucket) > S3_BUCKET_MAX || !bucket[0]) {
			native_fail(nc, S3E_InvalidBucketName, NULL);
			return;
		}
		snprintf(nc->rq.bucket, sizeof(nc->rq.bucket), "%s", bucket);
	}
	/* Keys as S3's: at most 1,024 bytes. (A key with a NUL in it reads
	 * shorter here than the client packed it: its arguments' hash, and so
	 * its signature, does not match.) */
	if (key && strlen(key) > S3_KEY_MAX) {
		native_fail(nc, S3E_KeyTooLongError, NULL);
		return;
	}
	if (key && !(nc->rq.key = strdup(key))) {
		native_fail(nc, S3E_InternalError, NULL);
		return;
	}
	call_auth(nc);
}

#define H(name, method, step, Type, has_bucket, has_key)                                  \
	static void name(struct rpc_req *r, void *ud)                                       \
	{                                                                                    \
		const Type *m = (const void *)rpc_req_msg(r);                                    \
		(void)m;                                                                         \
		dispatch(r, ud, method, step, has_bucket, has_key);                              \
	}
H(h_put, NATIVE_M_PUT, native_put_step, Iolake__Native__PutRequest, m->bucket, m->key)
H(h_put_begin, NATIVE_M_PUT_BEGIN, native_put_begin_step, Iolake__Native__PutBeginRequest,
  m->bucket, m->key)
H(h_put_append, NATIVE_M_PUT_APPEND, native_put_append_step, Iolake__Native__PutAppendRequest,
  NULL, NULL)
H(h_put_commit, NATIVE_M_PUT_COMMIT, native_put_commit_step, Iolake__Native__PutCommitRequest,
  NULL, NULL)
H(h_put_abort, NATIVE_M_PUT_ABORT, native_put_abort_step, Iolake__Native__PutAbortRequest,
  NULL, NULL)
H(h_get, NATIVE_M_GET, native_get_step, Iolake__Native__GetRequest, m->bucket, m->key)
H(h_head, NATIVE_M_HEAD, native_get_step, Iolake__Native__HeadRequest, m->bucket, m->key)
H(h_delete, NATIVE_M_DELETE, native_delete_step, Iolake__Native__DeleteRequest, m->bucket,
  m->key)
H(h_list, NATIVE_M_LIST, native_list_step, Iolake__Native__ListRequest, m->bucket, NULL)
H(h_login, NATIVE_M_LOGIN, login_step, Iolake__Native__LoginRequest, NULL, NULL)
#undef H

/* ------------------------------------------------------------ server */

static void srv_free_now(struct native_srv *s)
{
	while (s->spare) {
		struct native_call *nc = s->spare;
		s->spare = nc->next_spare;
		free(nc);
	}
	native_limit_free(&s->limit);
	s3_auth_free(s->auth);
	free(s);
}

static void on_reaper_closed(uv_handle_t *h)
{
	struct native_srv *s = h->data;
	native_srv_unref(s);
}

void native_srv_unref(struct native_srv *s)
{
	if (--s->live == 0 && s->closing)
		srv_free_now(s);
}

/* S3's credential source (s3_ops.c's): meta's GetAccessKey, counted in
 * the same metric. */
static void cred_lookup(void *ctx, struct s3_cred_lookup *l)
{
	struct s3_ops *o = ctx;
	gw_creds_lookup(o->mc, o->m_cred_lookups, l);
}

static void on_reap(uv_timer_t *t)
{
	struct native_srv *s = t->data;
	native_uploads_reap(s, loop_now_ms(), s->idle_ms);
}

int native_srv_start(uv_loop_t *loop, struct s3_ops *ops, const struct native_cfg *cfg,
		     struct native_srv **out)
{
	struct native_srv *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->loop = loop;
	s->o = ops;
	s->idle_ms = cfg->upload_idle_ms ? cfg->upload_idle_ms : 60000;
	s->uploads_max = cfg->uploads_max ? cfg->uploads_max : NATIVE_UPLOADS_MAX;
	struct s3_auth_cfg ac = { .region = ops->region, .source = { cred_lookup, ops },
				  .no_sigv2 = true };
	static const rpc_handler_fn handlers[NATIVE_M_COUNT] = {
		[NATIVE_M_PUT] = h_put,          [NATIVE_M_PUT_BEGIN] = h_put_begin,
		[NATIVE_M_PUT_APPEND] = h_put_append, [NATIVE_M_PUT_COMMIT] = h_put_commit,
		[NATIVE_M_PUT_ABORT] = h_put_abort, [NATIVE_M_GET] = h_get,
		[NATIVE_M_HEAD] = h_head,        [NATIVE_M_DELETE] = h_delete,
		[NATIVE_M_LIST] = h_list,        [NATIVE_M_HELLO] = h_hello,
		[NATIVE_M_LOGIN] = h_login,
	};
	_Static_assert(NATIVE_M_COUNT == 11, "handlers must match native.proto's methods");
	/* A PutAppend carries NATIVE_CHUNK_MAX bytes and its message. */
	struct rpc_server_opts so = { .max_message_bytes = NATIVE_CHUNK_MAX + (1u << 20),
				      .conn_data_free = conn_free };
	int rc = -ENOMEM;
	if (NATIVE_SVC->n_methods != NATIVE_M_COUNT) {
		rc = -EINVAL;
		goto fail_free;
	}
	if (native_limit_init(&s->limit, &cfg->limit, cfg->limit_shared, ops->reg))
		goto fail_free;
	so.admit = native_limit_admit(&s->limit);
	if (!(s->auth = s3_auth_new(&ac)))
		goto fail_free;
	if (!(s->rpc = rpc_server_new(loop, &so)))
		goto fail_auth;
	if ((rc = rpc_server_add_service(s->rpc, NATIVE_SVC, handlers, s)) ||
	    (cfg->listen && (rc = rpc_server_listen(s->rpc, cfg->listen))))
		goto fail_rpc;
	uv_timer_init(loop, &s->reaper);
	s->reaper.data = s;
	uv_timer_start(&s->reaper, on_reap, REAP_MS, REAP_MS);
	s->live = 1;   /* the reaper's handle */
	*out = s;
	return 0;
fail_rpc:
	rpc_server_close(s->rpc);
fail_auth:
	s3_auth_free(s->auth);
fail_free:
	native_limit_free(&s->limit);
	free(s);
	return rc;
}

int native_srv_port(const struct native_srv *s)
{
	return rpc_server_port(s->rpc);
}

void native_srv_adopt(struct native_srv *s, int fd)
{
	rpc_server_adopt(s->rpc, fd);   /* fd is the server's whatever happens */
}

uint32_t native_srv_conns(const struct native_srv *s)
{
	return rpc_server_conns(s->rpc);
}

void native_srv_close(struct native_srv *s)
{
	if (!s)
		return;
	s->closing = true;
	rpc_server_close(s->rpc);
	native_uploads_reap(s, 0, 0);
	uv_timer_stop(&s->reaper);
	uv_close((uv_handle_t *)&s->reaper, on_reaper_closed);
}
