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

#include "gateway/s3_server_int.h"

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

static void maybe_done(struct s3_server *srv);

static void pool_put(struct s3_call *c)
{
	if (s3s_body_release(c))
		return;   /* hash jobs still read its buffers: s3s_call_put */
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

void s3s_call_put(struct s3_call *c)
{
	pool_put(c);
	maybe_done(c->srv);
}

static void free_all(struct s3_server *srv)
{
	for (size_t i = 0; i < srv->n_calls; i++) {
		s3s_body_free(&srv->calls[i]);
		xml_free(&srv->calls[i].xml);
		hash_stream_free(srv->calls[i].sha);
		hash_stream_free(srv->calls[i].md5);
		s3_ck_free(&srv->calls[i].ck);
	}
	free(srv->calls);
	workpool_port_close(srv->hash_port);   /* no call waits: no job out */
	if (!srv->ulimit_mu)   /* a shared table is its maker's */
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
	if (srv->closing && srv->http_closed && srv->pending_lookups == 0 &&
	    srv->hash_waits == 0)
		free_all(srv);
}

/* ------------------------------------------------------------ responses */

static void noop_written(struct http_stream *s, int status, void *arg)
{
	(void)s, (void)status, (void)arg;
}

static void error_doc(struct s3_call *c, enum s3_err e, const char *message, const char *region)
{
	const struct http_request *hr = http_stream_request(c->s);
	if (!message && e == c->msg_err)
		message = c->msg;
	char resource[S3_KEY_MAX + 80];
	snprintf(resource, sizeof(resource), "%.*s", (int)(hr->path_len < sizeof(resource) - 1 ? hr->path_len : sizeof(resource) - 1), hr->path);
	xml_reset(&c->xml);
	if (s3_err_render(&c->xml, e, message, region, resource, http_stream_request_id(c->s)) != 0) {
		http_respond(c->s, 500, NULL, 0, NULL, NULL);
		return;
	}
	http_add_header(c->s, "Content-Type", "application/xml");
	/* The document stays in c->xml until the exchange ends. */
	http_respond(c->s, s3_err_status(e), c->xml.buf, c->xml.len, noop_written, NULL);
}

void s3_call_error(struct s3_call *c, enum s3_err e, const char *message)
{
	error_doc(c, e, message, NULL);
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
struct http_server *s3_server_http(struct s3_server *srv) { return srv->http; }

void s3_server_http_stats(const struct s3_server *srv, struct http_stats *out)
{
	http_server_stats(srv->http, out);
}

/* ------------------------------------------------------------ requests */

/* The per-user limits (user_limit.h): true when c may go on; else it
 * was answered SlowDown. */
static bool user_admit(struct s3_call *c)
{
	struct s3_server *srv = c->srv;
	const struct http_request *hr = http_stream_request(c->s);
	struct user_limit_stats before, after;
	if (srv->ulimit_mu)
		pthread_mutex_lock(srv->ulimit_mu);
	user_limit_stats(srv->ulimit, &before);
	bool ok = user_limit_admit(srv->ulimit, c->auth.res.user,
				   hr->has_content_length ? hr->content_length : 0, loop_now_ns());
	user_limit_stats(srv->ulimit, &after);
	if (srv->ulimit_mu)
		pthread_mutex_unlock(srv->ulimit_mu);
	if (ok) {
		c->limited_user = true;
		return true;
	}
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
		error_doc(c, c->auth.res.err, c->auth.res.msg, c->auth.res.region);
		return;
	}
	if (c->auth.res.anonymous && !c->srv->cfg.anonymous_ok) {
		s3_call_error(c, S3E_AccessDenied, "Anonymous access is not allowed");
		return;
	}
	if (!c->auth.res.anonymous)   /* a user's: not counted per address */
		http_stream_authenticated(c->s);
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
		.form_data = s3s_hdr_has(hr, "content-type", "multipart/form-data"),
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
		if (c->srv->ulimit_mu)
			pthread_mutex_lock(c->srv->ulimit_mu);
		user_limit_charge(c->srv->ulimit, c->auth.res.user, http_stream_body_sent(s),
				  loop_now_ns());
		if (c->srv->ulimit_mu)
			pthread_mutex_unlock(c->srv->ulimit_mu);
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
 * registry: the servers of the other gateway loops on the same registry
 * share the first's (updates are atomic). */
static int register_metrics(struct s3_server *srv, struct metrics_registry *reg)
{
	size_t nb;
	const uint64_t *b = metrics_latency_buckets_us(&nb);
	for (unsigned i = 0; i < S3_OP__COUNT; i++) {
		const char *op = i == S3_OP_NONE ? "unrouted" : s3_op_name(i);
		srv->m_lat[i] = metrics_histogram_shared(reg, "iolake_gw_request_duration_seconds",
						      "S3 requests by operation: time from the "
						      "request head to the end of the response",
						      METRICS_LABELS("op", op), b, nb, 1e-6);
		for (int k = 0; k < 2; k++)
			srv->m_err[i][k] = metrics_counter_shared(reg, "iolake_gw_request_errors_total",
							       "S3 requests answered with an error "
							       "status, by operation and class",
							       METRICS_LABELS("op", op, "class",
									      k ? "5xx" : "4xx"));
		if (!srv->m_lat[i] || !srv->m_err[i][0] || !srv->m_err[i][1])
			goto fail;
	}
	srv->m_bytes_in = metrics_counter_shared(reg, "iolake_gw_received_bytes_total",
					      "S3 request body bytes received (as sent: "
					      "aws-chunked framing included)", NULL);
	srv->m_bytes_out = metrics_counter_shared(reg, "iolake_gw_sent_bytes_total",
					       "S3 response body bytes sent", NULL);
	if (srv->m_bytes_in && srv->m_bytes_out)
		return 0;
fail:
	/* Registered under another kind: count nothing here rather than
	 * fail the start. */
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
	if (cfg->user_limit_shared) {
		srv->ulimit = cfg->user_limit_shared;
		srv->ulimit_mu = cfg->user_limit_mu;
	} else if ((cfg->user_limit.rate || cfg->user_limit.bytes_rate) &&
		   !(srv->ulimit = user_limit_new(&cfg->user_limit, 0))) {
		goto err_calls;
	}
	if (cfg->http.metrics) {   /* registered when off too: the series stays put */
		static const char name[] = "iolake_gw_user_refused_total";
		static const char help[] = "authenticated requests refused by the per-user limits";
		srv->m_user_rate = metrics_counter_shared(cfg->http.metrics, name, help,
						       METRICS_LABELS("reason", "rate_per_user"));
		srv->m_user_bytes = metrics_counter_shared(cfg->http.metrics, name, help,
							METRICS_LABELS("reason", "bytes_per_user"));
	}
	if (cfg->http.metrics && (rc = register_metrics(srv, cfg->http.metrics)))
		goto err_calls;
	struct http_server_cfg hc = cfg->http;
	hc.handler = (struct http_handler){ on_request, s3s_on_body, s3s_on_body_end, on_finish, srv,
					   s3s_body_buf };
	rc = http_server_start(loop, &hc, &srv->http);
	if (rc)
		goto err_calls;
	*out = srv;
	return 0;

err_calls:
	if (!srv->ulimit_mu)
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
