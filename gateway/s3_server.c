/*
 * s3_server.c — the S3 front end. See s3_server.h.
 *
 * A call's life: on_request takes a call from the pool, routes, checks the
 * upload framing rules, and starts SigV4 verification. A cache hit
 * verifies synchronously; a miss pauses the connection (no body is read
 * while we do not know who is sending it — and no 100 Continue goes out)
 * until the credential source answers. Then the op handler runs. The call
 * goes back to the pool when the exchange finishes, or, if a lookup is
 * still in flight then, when the lookup returns.
 *
 * Owns the call pool and the credential cache (s3_server.h). Knows no
 * operation: the handlers come from cfg.ops.
 */
#include "gateway/s3_server.h"

#include <ctype.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/loop.h"
#include "common/metrics.h"
#include "gateway/chunked.h"
#include "gateway/gw_trace.h"
#include "gateway/s3_checksum.h"

struct s3_call {
	struct s3_server *srv;
	struct http_stream *s;        /* NULL once the exchange is over */
	struct s3_call *next_free;
	struct s3_req req;
	struct s3_auth_req auth;
	bool auth_pending;
	bool limited_user;            /* admitted by the per-user limits: charge its response */
	bool dead;                    /* exchange over while auth pending */
	void *user;
	s3_body_fn on_data;
	s3_body_end_fn on_end;
	s3_finish_fn on_finish;
	/* body verification */
	bool reading_body;
	bool chunked_mode;
	bool dec_live;
	bool want_sha, want_md5, has_decoded_len;
	enum s3_err body_err;
	uint64_t decoded, decoded_expected;
	uint8_t content_md5[16];
	struct hash_stream *sha, *md5;
	/* The additional checksum (x-amz-checksum-*): computed as the body
	 * streams, matched at its end against the header's value (claimed)
	 * or the trailer's; the result is what the object stores. */
	struct s3_ck ck;
	enum s3_ck_algo ck_algo;      /* NONE: the request asked for none */
	bool ck_claimed, ck_trailer;
	/* Set by the handler before the body is read: the algorithm the body
	 * must use (an upload's, for its parts; computed when the request
	 * names none), and whether x-amz-checksum-* headers describe
	 * something other than the body (CompleteMultipartUpload's object). */
	enum s3_ck_algo ck_want;
	bool ck_not_body;
	struct s3_ck_value ck_expect, ck_result;
	/* Detail for the error body of the body's verdict (s3_call_error
	 * with a NULL message and this error uses it). */
	enum s3_err msg_err;
	const char *msg;
	char msg_buf[128];
	struct chunked_dec dec;
	struct xml_w xml;
	char scratch[S3_REQ_SCRATCH(HTTP_URL_MAX)];
	/* The exchange's trace and figures (an S3 request: traced). */
	struct gw_trace trace;
	bool traced;
	uint64_t auth_t0_ns;
	uint64_t bytes_in;            /* request body bytes as received */
};

struct s3_server {
	uv_loop_t *loop;
	struct s3_server_cfg cfg;
	struct s3_req_cfg route;
	struct http_server *http;
	struct s3_auth *auth;
	struct s3_call *calls;
	size_t n_calls;
	struct s3_call *free_calls;
	unsigned pending_lookups;
	uint64_t creds_gen;           /* last cfg.creds_generation seen */
	struct user_limit *ulimit;    /* NULL: no per-user limits */
	struct metrics_counter *m_user_rate, *m_user_bytes;
	bool closing, http_closed;
	void (*close_cb)(void *);
	void *close_arg;
	/* Per operation: latency, errors by class; body bytes both ways.
	 * NULL when there is no registry (cfg.http.metrics). */
	struct metrics_histogram *m_lat[S3_OP__COUNT];
	struct metrics_counter *m_err[S3_OP__COUNT][2];   /* 4xx, 5xx */
	struct metrics_counter *m_bytes_in, *m_bytes_out;
};

/* ------------------------------------------------------------ pool */

static struct s3_call *pool_get(struct s3_server *srv)
{
	struct s3_call *c = srv->free_calls;
	if (!c)
		return NULL;
	srv->free_calls = c->next_free;
	c->s = NULL;
	c->req.op = S3_OP_NONE;
	c->auth_pending = c->dead = false;
	c->limited_user = false;
	c->user = NULL;
	c->on_data = NULL;
	c->on_end = NULL;
	c->on_finish = NULL;
	c->reading_body = c->chunked_mode = c->dec_live = false;
	c->want_sha = c->want_md5 = c->has_decoded_len = false;
	c->body_err = S3E_OK;
	c->decoded = c->decoded_expected = 0;
	c->ck_algo = S3_CK_NONE;
	c->ck_claimed = c->ck_trailer = false;
	c->ck_result.algo = S3_CK_NONE;
	c->ck_want = S3_CK_NONE;
	c->ck_not_body = false;
	c->msg_err = S3E_OK;
	c->msg = NULL;
	c->traced = false;
	c->bytes_in = 0;
	xml_reset(&c->xml);
	return c;
}

static void pool_put(struct s3_call *c)
{
	if (c->reading_body) {
		/* The body never ended (the client went away): reset the
		 * digests, or the next request on this call would hash on top
		 * of these bytes. */
		uint8_t d[32];
		if (c->want_sha)
			hash_stream_final(c->sha, d);
		if (c->want_md5)
			hash_stream_final(c->md5, d);
		c->reading_body = false;
	}
	if (c->dec_live) {
		chunked_free(&c->dec);
		c->dec_live = false;
	}
	explicit_bzero(&c->auth.res.signing_key, sizeof(c->auth.res.signing_key));
	gw_trace_release(&c->trace);  /* late data-path answers stop counting */
	c->next_free = c->srv->free_calls;
	c->srv->free_calls = c;
}

static void free_all(struct s3_server *srv)
{
	for (size_t i = 0; i < srv->n_calls; i++) {
		xml_free(&srv->calls[i].xml);
		hash_stream_free(srv->calls[i].sha);
		hash_stream_free(srv->calls[i].md5);
		s3_ck_free(&srv->calls[i].ck);
	}
	free(srv->calls);
	user_limit_free(srv->ulimit);
	s3_auth_free(srv->auth);
	void (*cb)(void *) = srv->close_cb;
	void *arg = srv->close_arg;
	free(srv);
	if (cb)
		cb(arg);
}

static void maybe_done(struct s3_server *srv)
{
	if (srv->closing && srv->http_closed && srv->pending_lookups == 0)
		free_all(srv);
}

/* ------------------------------------------------------------ responses */

static void noop_written(struct http_stream *s, int status, void *arg)
{
	(void)s, (void)status, (void)arg;
}

void s3_call_error(struct s3_call *c, enum s3_err e, const char *message)
{
	const struct http_request *hr = http_stream_request(c->s);
	if (!message && e == c->msg_err)
		message = c->msg;
	char resource[S3_KEY_MAX + 80];
	snprintf(resource, sizeof(resource), "%.*s", (int)(hr->path_len < sizeof(resource) - 1 ? hr->path_len : sizeof(resource) - 1), hr->path);
	xml_reset(&c->xml);
	if (s3_err_render(&c->xml, e, message, resource, http_stream_request_id(c->s)) != 0) {
		http_respond(c->s, 500, NULL, 0, NULL, NULL);
		return;
	}
	http_add_header(c->s, "Content-Type", "application/xml");
	/* The document stays in c->xml until the exchange ends. */
	http_respond(c->s, s3_err_status(e), c->xml.buf, c->xml.len, noop_written, NULL);
}

struct xml_w *s3_call_xml(struct s3_call *c)
{
	xml_reset(&c->xml);
	return &c->xml;
}

int s3_call_send_xml(struct s3_call *c, int status)
{
	const char *out;
	size_t len;
	int rc = xml_finish(&c->xml, &out, &len);
	if (rc) {
		s3_call_error(c, S3E_InternalError, NULL);
		return rc;
	}
	http_add_header(c->s, "Content-Type", "application/xml");
	return http_respond(c->s, status, out, len, noop_written, NULL);
}

/* ------------------------------------------------------------ accessors */

const struct s3_req *s3_call_req(const struct s3_call *c) { return &c->req; }
struct gw_trace *s3_call_trace(struct s3_call *c) { return c->traced ? &c->trace : NULL; }
const struct http_request *s3_call_http(const struct s3_call *c) { return http_stream_request(c->s); }
const struct s3_auth_result *s3_call_auth(const struct s3_call *c) { return &c->auth.res; }
struct http_stream *s3_call_stream(struct s3_call *c) { return c->s; }
void *s3_call_ctx(const struct s3_call *c) { return c->srv->cfg.ops_ctx; }
void s3_call_set_user(struct s3_call *c, void *user) { c->user = user; }
void *s3_call_user(const struct s3_call *c) { return c->user; }
void s3_call_on_finish(struct s3_call *c, s3_finish_fn fn) { c->on_finish = fn; }
void s3_call_cred_lookup(struct s3_call *c, struct s3_cred_lookup *l)
{
	c->srv->cfg.creds.lookup(c->srv->cfg.creds.ctx, l);
}
struct s3_auth *s3_server_auth(struct s3_server *srv) { return srv->auth; }
int s3_server_port(const struct s3_server *srv) { return http_server_port(srv->http); }

void s3_server_http_stats(const struct s3_server *srv, struct http_stats *out)
{
	http_server_stats(srv->http, out);
}

/* ------------------------------------------------------------ body */

static bool hdr_has(const struct http_request *hr, const char *name, const char *token)
{
	const struct sigv4_header *h = http_request_header(hr, name);
	if (!h)
		return false;
	size_t tl = strlen(token);
	for (size_t i = 0; i + tl <= h->value_len; i++)
		if (strncasecmp(h->value + i, token, tl) == 0)
			return true;
	return false;
}

static void deliver(void *ud, const char *data, size_t len)
{
	struct s3_call *c = ud;
	if (c->want_sha)
		hash_stream_update(c->sha, data, len);
	if (c->want_md5)
		hash_stream_update(c->md5, data, len);
	if (c->ck_algo)
		s3_ck_update(&c->ck, data, len);
	c->decoded += len;
	c->on_data(c, data, len);
}

/* An error with its detail for the error body. */
__attribute__((format(printf, 3, 4)))
static enum s3_err failf(struct s3_call *c, enum s3_err e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->msg_buf, sizeof(c->msg_buf), fmt, ap);
	va_end(ap);
	c->msg_err = e;
	c->msg = c->msg_buf;
	return e;
}

/* Which additional checksum the request asks for: an x-amz-checksum-<algo>
 * header (the value to match), x-amz-trailer naming one (the value comes
 * in the trailer), or x-amz-sdk-checksum-algorithm alone (computed and
 * stored, nothing to match). At most one algorithm. */
static enum s3_err checksum_setup(struct s3_call *c, const struct http_request *hr, bool trailers)
{
	enum s3_ck_algo algo = S3_CK_NONE;
	for (size_t i = 0; i < hr->n_headers; i++) {
		const struct sigv4_header *h = &hr->headers[i];
		/* x-amz-checksum-mode, -type, -algorithm are no values. */
		enum s3_ck_algo a = s3_ck_from_header(h->name, h->name_len);
		if (!a)
			continue;
		if (algo)
			return failf(c, S3E_InvalidRequest, "Expecting a single x-amz-checksum- header. "
				     "Multiple checksum Types are not allowed.");
		if (s3_ck_from_base64(a, h->value, h->value_len, &c->ck_expect))
			return failf(c, S3E_InvalidRequest, "Value for %s header is invalid.",
				     s3_ck_header(a));
		algo = a;
		c->ck_claimed = true;
	}
	const struct sigv4_header *tr = http_request_header(hr, "x-amz-trailer");
	if (tr) {
		enum s3_ck_algo a = s3_ck_from_header(tr->value, tr->value_len);
		if (!a || !trailers)
			return failf(c, S3E_InvalidRequest, "The value specified in the x-amz-trailer "
				     "header is not supported");
		if (algo)
			return failf(c, S3E_InvalidRequest, "Expecting a single x-amz-checksum- header. "
				     "Multiple checksum Types are not allowed.");
		algo = a;
		c->ck_trailer = true;
	}
	const struct sigv4_header *sdk = http_request_header(hr, "x-amz-sdk-checksum-algorithm");
	if (sdk) {
		enum s3_ck_algo a = s3_ck_from_name(sdk->value, sdk->value_len);
		if (!a || (algo && a != algo))
			return failf(c, S3E_InvalidRequest,
				     "Value for x-amz-sdk-checksum-algorithm header is invalid.");
		algo = a;
	}
	if (c->ck_want && algo && algo != c->ck_want) {
		char want[16], got[16];
		snprintf(want, sizeof(want), "%s", s3_ck_name(c->ck_want));
		snprintf(got, sizeof(got), "%s", s3_ck_name(algo));
		for (char *p = want; *p; p++)
			*p = (char)tolower((unsigned char)*p);
		for (char *p = got; *p; p++)
			*p = (char)tolower((unsigned char)*p);
		return failf(c, S3E_InvalidRequest, "Checksum Type mismatch occurred, expected "
			     "checksum Type: %s, actual checksum Type: %s", want, got);
	}
	if (!algo)
		algo = c->ck_want;
	c->ck_algo = algo;
	s3_ck_begin(&c->ck, algo);
	return S3E_OK;
}

/* The framing and digests a body is checked against; shared by
 * s3_call_read_body and s3_call_check_empty_body. */
static enum s3_err body_setup(struct s3_call *c)
{
	const struct http_request *hr = http_stream_request(c->s);
	const struct s3_auth_result *res = &c->auth.res;
	bool streaming = res->payload == S3_PAYLOAD_STREAMING_SIGNED ||
			 res->payload == S3_PAYLOAD_STREAMING_SIGNED_TRAILER ||
			 res->payload == S3_PAYLOAD_STREAMING_UNSIGNED_TRAILER;
	bool trailers = streaming && res->payload != S3_PAYLOAD_STREAMING_SIGNED;
	if (hdr_has(hr, "content-encoding", "aws-chunked") && !streaming)
		return S3E_InvalidArgument;
	const struct sigv4_header *dl = http_request_header(hr, "x-amz-decoded-content-length");
	if (dl) {
		char num[24];
		char *end;
		snprintf(num, sizeof(num), "%.*s", (int)(dl->value_len < 23 ? dl->value_len : 23), dl->value);
		c->decoded_expected = strtoull(num, &end, 10);
		if (!num[0] || *end)
			return S3E_InvalidArgument;
		c->has_decoded_len = true;
	} else if (streaming) {
		return S3E_MissingContentLength;
	}
	const struct sigv4_header *cm = http_request_header(hr, "content-md5");
	if (cm) {
		uint8_t out[20];
		if (cm->value_len != 24 ||
		    EVP_DecodeBlock(out, (const unsigned char *)cm->value, 24) != 18)
			return S3E_InvalidDigest;
		memcpy(c->content_md5, out, 16);
		c->want_md5 = true;
	}
	enum s3_err e = c->ck_not_body ? S3E_OK : checksum_setup(c, hr, trailers);
	if (e)
		return e;
	if (streaming) {
		bool signed_chunks = res->payload != S3_PAYLOAD_STREAMING_UNSIGNED_TRAILER;
		if (chunked_init(&c->dec, signed_chunks ? res->signing_key : NULL, &res->claim,
				 res->claim.signature, trailers))
			return S3E_InternalError;
		c->dec_live = true;
		c->chunked_mode = true;
	}
	c->want_sha = res->payload == S3_PAYLOAD_SHA256;
	return S3E_OK;
}

enum s3_err s3_call_read_body(struct s3_call *c, s3_body_fn on_data, s3_body_end_fn on_end)
{
	enum s3_err e = body_setup(c);
	if (e)
		return e;
	c->on_data = on_data;
	c->on_end = on_end;
	c->reading_body = true;
	return S3E_OK;
}

static void on_body(struct http_stream *s, const char *data, size_t len)
{
	struct s3_call *c = http_stream_user(s);
	if (c)
		c->bytes_in += len;
	if (!c || !c->reading_body || c->body_err)
		return; /* discarded */
	if (!c->chunked_mode) {
		deliver(c, data, len);
		return;
	}
	ssize_t rc = chunked_feed(&c->dec, data, len, deliver, c);
	if (rc == CHUNKED_ESIGNATURE)
		c->body_err = S3E_SignatureDoesNotMatch;
	else if (rc < 0)
		c->body_err = S3E_IncompleteBody;
	else if ((size_t)rc < len)
		c->body_err = S3E_IncompleteBody; /* bytes after the final chunk */
}

/* The additional checksum against the header's or the trailer's value. */
static enum s3_err checksum_verdict(struct s3_call *c)
{
	const char *hname = s3_ck_header(c->ck_algo);
	if (c->ck_trailer) {
		const struct chunked_trailer *t = chunked_trailer(&c->dec, hname);
		if (!t)
			return failf(c, S3E_InvalidRequest, "The trailer declared in x-amz-trailer "
				     "(%s) was not sent", hname);
		if (s3_ck_from_base64(c->ck_algo, t->value, t->value_len, &c->ck_expect))
			return failf(c, S3E_InvalidRequest, "Value for %s trailing header is invalid.",
				     hname);
	} else if (!c->ck_claimed) {
		return S3E_OK; /* asked for by name only: nothing to match */
	}
	if (!s3_ck_equal(&c->ck_result, &c->ck_expect))
		return failf(c, S3E_BadDigest, "The %s you specified did not match the calculated "
			     "checksum.", s3_ck_name(c->ck_algo));
	return S3E_OK;
}

/* Every check on a complete body, in order; finalises the digests. */
static enum s3_err body_verdict(struct s3_call *c)
{
	enum s3_err v = c->body_err;
	if (!v && c->chunked_mode && !chunked_done(&c->dec))
		v = S3E_IncompleteBody;
	if (!v && c->has_decoded_len && c->decoded != c->decoded_expected)
		v = S3E_IncompleteBody;
	if (c->want_sha) {
		uint8_t d[32];
		hash_stream_final(c->sha, d);
		if (!v && memcmp(d, c->auth.res.payload_sha256, 32) != 0)
			v = S3E_XAmzContentSHA256Mismatch;
	}
	if (c->want_md5) {
		uint8_t d[16];
		hash_stream_final(c->md5, d);
		if (!v && memcmp(d, c->content_md5, 16) != 0)
			v = S3E_BadDigest;
	}
	if (c->ck_algo) {
		s3_ck_final(&c->ck, &c->ck_result);
		if (!v)
			v = checksum_verdict(c);
		if (v)
			c->ck_result.algo = S3_CK_NONE;
	}
	return v;
}

static void on_body_end(struct http_stream *s)
{
	struct s3_call *c = http_stream_user(s);
	if (!c || !c->reading_body)
		return;
	enum s3_err v = body_verdict(c);
	c->reading_body = false;
	c->on_end(c, v);
}

enum s3_err s3_call_check_empty_body(struct s3_call *c)
{
	enum s3_err e = body_setup(c);
	if (e)
		return e;
	if (c->chunked_mode)
		return S3E_IncompleteBody; /* aws-chunked has at least its final chunk */
	return body_verdict(c);
}

void s3_call_checksum_want(struct s3_call *c, enum s3_ck_algo a)
{
	c->ck_want = a;
}

void s3_call_checksum_not_body(struct s3_call *c)
{
	c->ck_not_body = true;
}

const struct s3_ck_value *s3_call_checksum(const struct s3_call *c)
{
	return &c->ck_result;
}

/* ------------------------------------------------------------ requests */

/* The per-user limits (user_limit.h): true when c may go on; else it
 * was answered SlowDown. */
static bool user_admit(struct s3_call *c)
{
	struct s3_server *srv = c->srv;
	const struct http_request *hr = http_stream_request(c->s);
	struct user_limit_stats before, after;
	user_limit_stats(srv->ulimit, &before);
	if (user_limit_admit(srv->ulimit, c->auth.res.user,
			     hr->has_content_length ? hr->content_length : 0, loop_now_ns())) {
		c->limited_user = true;
		return true;
	}
	user_limit_stats(srv->ulimit, &after);
	bool bytes = after.refused_bytes != before.refused_bytes;
	struct metrics_counter *m = bytes ? srv->m_user_bytes : srv->m_user_rate;
	if (m)
		metrics_counter_inc(m);
	s3_call_error(c, S3E_SlowDown, bytes ? "Please reduce your request rate: this user's "
		      "bytes per second are spent" : NULL);
	return false;
}

static void after_auth(struct s3_call *c)
{
	if (c->auth.res.err) {
		s3_call_error(c, c->auth.res.err, c->auth.res.msg);
		return;
	}
	if (c->auth.res.anonymous && !c->srv->cfg.anonymous_ok) {
		s3_call_error(c, S3E_AccessDenied, "Anonymous access is not allowed");
		return;
	}
	if (c->srv->ulimit && !c->auth.res.anonymous && !user_admit(c))
		return;
	s3_op_fn fn = c->srv->cfg.ops[c->req.op];
	if (!fn) {
		s3_call_error(c, S3E_NotImplemented, NULL);
		return;
	}
	fn(c);
}

static void on_auth_done(struct s3_auth_req *ar)
{
	struct s3_call *c = container_of(ar, struct s3_call, auth);
	struct s3_server *srv = c->srv;
	srv->pending_lookups--;
	c->auth_pending = false;
	c->trace.auth_ns = loop_now_ns() - c->auth_t0_ns;
	if (c->dead) {
		pool_put(c);
		maybe_done(srv);
		return;
	}
	http_resume(c->s);
	after_auth(c);
}

static void free_written(struct http_stream *s, int status, void *arg)
{
	(void)s, (void)status;
	free(arg);
}

static bool path_is(const struct http_request *hr, const char *p)
{
	return hr->path_len == strlen(p) && memcmp(hr->path, p, hr->path_len) == 0;
}


/* User metadata as S3 counts it: each x-amz-meta-* name (without the
 * prefix) and value, in bytes. */
static size_t user_meta_bytes(const struct http_request *hr)
{
	size_t n = 0;
	for (size_t i = 0; i < hr->n_headers; i++) {
		const struct sigv4_header *h = &hr->headers[i];
		if (h->name_len > 11 && strncasecmp(h->name, "x-amz-meta-", 11) == 0)
			n += h->name_len - 11 + h->value_len;
	}
	return n;
}

static void on_request(struct http_stream *s, const struct http_request *hr)
{
	struct s3_server *srv = http_stream_ctx(s);
	struct s3_call *c = pool_get(srv);
	if (!c) {
		static const char busy[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
					   "<Error><Code>SlowDown</Code><Message>Please reduce your "
					   "request rate.</Message></Error>";
		http_stream_set_user(s, NULL);
		http_add_header(s, "Content-Type", "application/xml");
		http_respond(s, 503, busy, sizeof(busy) - 1, noop_written, NULL);
		return;
	}
	c->s = s;
	http_stream_set_user(s, c);

	if (hr->method == HTTP_GET && !http_request_header(hr, "authorization") &&
	    (path_is(hr, "/health/live") || path_is(hr, "/health/ready"))) {
		bool ok = !path_is(hr, "/health/ready") || !srv->cfg.ready ||
			  srv->cfg.ready(srv->cfg.ops_ctx);
		http_add_header(s, "Content-Type", "text/plain");
		http_respond(s, ok ? 200 : 503, ok ? "ok\n" : "not ready\n", ok ? 3 : 10, NULL,
			     NULL);
		return;
	}
	if (hr->method == HTTP_GET && srv->cfg.metrics && path_is(hr, "/metrics") &&
	    !http_request_header(hr, "authorization")) {
		char *text = NULL;
		size_t len = 0;
		if (srv->cfg.metrics(srv->cfg.ops_ctx, &text, &len)) {
			http_respond(s, 500, NULL, 0, NULL, NULL);
			return;
		}
		http_add_header(s, "Content-Type", "text/plain; version=0.0.4");
		if (http_respond(s, 200, text, len, free_written, text))
			free(text);
		return;
	}

	gw_trace_reset(&c->trace, http_stream_request_id(s), loop_now_ns());
	c->traced = true;
	struct s3_req_in in = {
		.method = hr->method_name, .target = hr->target, .target_len = hr->target_len,
		.host = hr->host, .host_len = hr->host_len,
		.has_copy_source = http_request_header(hr, "x-amz-copy-source") != NULL,
		.form_data = hdr_has(hr, "content-type", "multipart/form-data"),
	};
	if (s3_req_parse(&c->req, &srv->route, &in, c->scratch, sizeof(c->scratch))) {
		s3_call_error(c, c->req.err, c->req.err_msg);
		return;
	}
	if (c->req.op == S3_OP_OptionsObject) {
		/* A CORS preflight is never signed (a browser sends it before
		 * the request it asks about, presigned query and all): it is
		 * answered from the bucket's CORS rules alone. */
		memset(&c->auth.res, 0, sizeof(c->auth.res));
		c->auth.res.anonymous = true;
		after_auth(c);
		return;
	}
	bool upload = c->req.op == S3_OP_PutObject || c->req.op == S3_OP_UploadPart;
	if (upload && !hr->has_content_length && !hr->chunked) {
		s3_call_error(c, S3E_MissingContentLength, NULL);
		return;
	}
	if (user_meta_bytes(hr) > S3_USER_META_MAX) {
		s3_call_error(c, S3E_MetadataTooLarge, NULL);
		return;
	}
	if (upload && hr->content_length > S3_MAX_PUT_BYTES + (S3_MAX_PUT_BYTES >> 6)) {
		/* The slack allows aws-chunked framing around 5 GiB of data. */
		s3_call_error(c, S3E_EntityTooLarge, NULL);
		return;
	}

	struct s3_auth_req *ar = &c->auth;
	ar->method = hr->method_name;
	ar->path = hr->path;
	ar->path_len = hr->path_len;
	ar->query = hr->query;
	ar->query_len = hr->query_len;
	ar->headers = hr->headers;
	ar->n_headers = hr->n_headers;
	ar->now = srv->cfg.wall_clock ? srv->cfg.wall_clock() : time(NULL);
	ar->now_ms = uv_now(srv->loop);
	ar->vhost_bucket = c->req.virtual_host ? c->req.bucket : NULL;
	ar->vhost_bucket_len = c->req.virtual_host ? c->req.bucket_len : 0;
	if (srv->cfg.creds_generation) {
		uint64_t gen = srv->cfg.creds_generation(srv->cfg.ops_ctx);
		if (gen != srv->creds_gen) {
			s3_auth_invalidate_all(srv->auth);
			srv->creds_gen = gen;
		}
	}
	c->auth_t0_ns = loop_now_ns();
	if (s3_auth_verify(srv->auth, ar, on_auth_done) == S3_AUTH_PENDING) {
		c->auth_pending = true;
		srv->pending_lookups++;
		http_pause(s); /* no body, no 100 Continue, until we know who */
		return;
	}
	c->trace.auth_ns = loop_now_ns() - c->auth_t0_ns;
	after_auth(c);
}

/* The exchange of an S3 request is over: its metrics and, when slow, its
 * line in the slow-request log. */
static void call_done(struct s3_call *c, struct http_stream *s, int err)
{
	struct s3_server *srv = c->srv;
	unsigned op = c->req.op < S3_OP__COUNT ? c->req.op : S3_OP_NONE;
	int status = http_stream_status(s);
	uint64_t out = http_stream_body_sent(s);
	uint64_t now = loop_now_ns();
	if (srv->m_lat[op]) {
		metrics_histogram_observe(srv->m_lat[op], (now - c->trace.t0_ns) / 1000);
		if (status >= 400)
			metrics_counter_inc(srv->m_err[op][status >= 500]);
		metrics_counter_add(srv->m_bytes_in, c->bytes_in);
		metrics_counter_add(srv->m_bytes_out, out);
	}
	if (!srv->cfg.slow_log)
		return;
	const struct http_request *hr = http_stream_request(s);
	struct gw_trace_end e = {
		.op = s3_op_name(c->req.op), .method = hr ? hr->method_name : NULL,
		.bucket = c->req.bucket, .key = c->req.key, .status = status,
		.bytes_in = c->bytes_in, .bytes_out = out, .err = err,
	};
	gw_trace_log(&c->trace, &e, now, srv->cfg.slow_request_ms);
}

static void on_finish(struct http_stream *s, int err)
{
	struct s3_call *c = http_stream_user(s);
	if (!c)
		return;
	if (c->on_finish)
		c->on_finish(c, err);
	if (c->limited_user) {
		user_limit_charge(c->srv->ulimit, c->auth.res.user, http_stream_body_sent(s),
				  loop_now_ns());
		c->limited_user = false;
	}
	if (c->traced)
		call_done(c, s, err);
	c->s = NULL;
	if (c->auth_pending)
		c->dead = true; /* returned by on_auth_done */
	else
		pool_put(c);
}

/* ------------------------------------------------------------ server */

/* The per-operation series (docs/metrics.md). Registered once per
 * registry: a second server on the same registry shares the first's. */
static int register_metrics(struct s3_server *srv, struct metrics_registry *reg)
{
	size_t nb;
	const uint64_t *b = metrics_latency_buckets_us(&nb);
	for (unsigned i = 0; i < S3_OP__COUNT; i++) {
		const char *op = i == S3_OP_NONE ? "unrouted" : s3_op_name(i);
		srv->m_lat[i] = metrics_histogram_new(reg, "iolake_gw_request_duration_seconds",
						      "S3 requests by operation: time from the "
						      "request head to the end of the response",
						      METRICS_LABELS("op", op), b, nb, 1e-6);
		for (int k = 0; k < 2; k++)
			srv->m_err[i][k] = metrics_counter_new(reg, "iolake_gw_request_errors_total",
							       "S3 requests answered with an error "
							       "status, by operation and class",
							       METRICS_LABELS("op", op, "class",
									      k ? "5xx" : "4xx"));
		if (!srv->m_lat[i] || !srv->m_err[i][0] || !srv->m_err[i][1])
			goto fail;
	}
	srv->m_bytes_in = metrics_counter_new(reg, "iolake_gw_received_bytes_total",
					      "S3 request body bytes received (as sent: "
					      "aws-chunked framing included)", NULL);
	srv->m_bytes_out = metrics_counter_new(reg, "iolake_gw_sent_bytes_total",
					       "S3 response body bytes sent", NULL);
	if (srv->m_bytes_in && srv->m_bytes_out)
		return 0;
fail:
	/* Already registered (a second server on this registry): count
	 * nothing here rather than fail the start. */
	memset(srv->m_lat, 0, sizeof(srv->m_lat));
	return errno == EEXIST ? 0 : -ENOMEM;
}

int s3_server_start(uv_loop_t *loop, const struct s3_server_cfg *cfg, struct s3_server **out)
{
	int rc = -ENOMEM;
	struct s3_server *srv = calloc(1, sizeof(*srv));
	if (!srv)
		return -ENOMEM;
	srv->loop = loop;
	srv->cfg = *cfg;
	srv->route.domains = cfg->domains;
	srv->route.n_domains = cfg->n_domains;
	struct s3_auth_cfg acfg = { .region = cfg->region, .source = cfg->creds,
				    .no_sigv2 = cfg->no_sigv2 };
	srv->auth = s3_auth_new(&acfg);
	if (!srv->auth)
		goto err_srv;
	uint32_t conns = cfg->http.max_conns ? cfg->http.max_conns : 1024;
	srv->n_calls = conns + conns / 4 + 4;
	srv->calls = calloc(srv->n_calls, sizeof(struct s3_call));
	if (!srv->calls)
		goto err_auth;
	for (size_t i = srv->n_calls; i-- > 0;) {
		struct s3_call *c = &srv->calls[i];
		c->srv = srv;
		xml_init(&c->xml, 0);
		c->sha = hash_stream_new(HASH_SHA256);
		c->md5 = hash_stream_new(HASH_MD5);
		if (!c->sha || !c->md5 || s3_ck_init(&c->ck))
			goto err_calls;
		c->next_free = srv->free_calls;
		srv->free_calls = c;
	}
	if ((cfg->user_limit.rate || cfg->user_limit.bytes_rate) &&
	    !(srv->ulimit = user_limit_new(&cfg->user_limit, 0)))
		goto err_calls;
	if (cfg->http.metrics) {   /* registered when off too: the series stays put */
		static const char name[] = "iolake_gw_user_refused_total";
		static const char help[] = "authenticated requests refused by the per-user limits";
		srv->m_user_rate = metrics_counter_new(cfg->http.metrics, name, help,
						       METRICS_LABELS("reason", "rate_per_user"));
		srv->m_user_bytes = metrics_counter_new(cfg->http.metrics, name, help,
							METRICS_LABELS("reason", "bytes_per_user"));
	}
	if (cfg->http.metrics && (rc = register_metrics(srv, cfg->http.metrics)))
		goto err_calls;
	struct http_server_cfg hc = cfg->http;
	hc.handler = (struct http_handler){ on_request, on_body, on_body_end, on_finish, srv };
	rc = http_server_start(loop, &hc, &srv->http);
	if (rc)
		goto err_calls;
	*out = srv;
	return 0;

err_calls:
	user_limit_free(srv->ulimit);
	for (size_t i = 0; i < srv->n_calls; i++) {
		hash_stream_free(srv->calls[i].sha);
		hash_stream_free(srv->calls[i].md5);
		s3_ck_free(&srv->calls[i].ck);
	}
	free(srv->calls);
err_auth:
	s3_auth_free(srv->auth);
err_srv:
	free(srv);
	return rc;
}

static void on_http_closed(void *arg)
{
	struct s3_server *srv = arg;
	srv->http_closed = true;
	maybe_done(srv);
}

void s3_server_close(struct s3_server *srv, void (*cb)(void *arg), void *arg)
{
	srv->closing = true;
	srv->close_cb = cb;
	srv->close_arg = arg;
	http_server_close(srv->http, on_http_closed, srv);
}
