/*
 * admin_api.c — the admin API's core: the HTTP server (gateway/http), one
 * struct admin_call per exchange, routing (gateway/admin_req) to login,
 * authentication (admin_api_auth.c), the console's files
 * (admin_api_console.c) and the resource handlers (admin_api_*.c), JSON
 * replies and errors, and meta / OSD calls that outlive a vanished
 * client safely.
 *
 * Lifetime of a call: made at on_request with a copy of the request head
 * (s3_auth reads the headers after its credential lookup, which may end
 * after the connection did); freed when the exchange has finished AND no
 * meta, OSD or credential call it started is outstanding (c->pending).
 *
 * Bounded: bodies up to ADMIN_BODY_MAX (413 beyond), max_conns
 * connections, one call each; OSD channels up to ADMIN_OSD_CHANNELS.
 *
 * Loop: everything on the loop given to admin_api_start. Does not: hold
 * any cluster state, or decide anything meta decides.
 */
#include "gateway/admin_api.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <openssl/crypto.h>

#include "common/err.h"
#include "common/hash.h"
#include "common/log.h"
#include "gateway/admin_api_int.h"
#include "gateway/s3_auth.h"
#include "common/proto/osd_methods.h"

/* ------------------------------------------------------------ small */

uint64_t admin_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

const char *admin_call_user(const struct admin_call *c) { return c->user; }
const char *admin_call_access_key(const struct admin_call *c) { return c->access_key; }
const struct admin_route *admin_call_route(const struct admin_call *c) { return &c->route; }
bool admin_call_live(const struct admin_call *c) { return c->s && !c->replied; }
void *admin_call_state(const struct admin_call *c) { return c->state; }
struct meta_client *admin_call_meta(const struct admin_call *c) { return c->api->mc; }

const char *admin_call_body(const struct admin_call *c, size_t *len)
{
	*len = c->body_len;
	return c->body ? c->body : "";
}

const char *admin_call_query(const struct admin_call *c, size_t *len)
{
	*len = c->query_len;
	return c->query ? c->query : "";
}

void admin_call_set_state(struct admin_call *c, void *state, void (*free_fn)(void *))
{
	c->state = state;
	c->state_free = free_fn;
}

static void call_free(struct admin_call *c)
{
	if (c->state)
		(c->state_free ? c->state_free : free)(c->state);
	free(c->head_mem);
	free(c->headers);
	free(c->body);
	free(c);
}

void admin_call_release(struct admin_call *c)
{
	if (!c->s && !c->pending)
		call_free(c);
}

/* ------------------------------------------------------------ replies */

static void send_body(struct admin_call *c, int status, const char *ctype, char *body,
		      size_t len);

static void on_body_written(struct http_stream *s, int status, void *arg)
{
	(void)s;
	(void)status;
	free(arg);
}

static void send_body(struct admin_call *c, int status, const char *ctype, char *body,
		      size_t len)
{
	if (!admin_call_live(c)) {
		free(body);
		return;
	}
	c->replied = true;
	http_add_header(c->s, "Content-Type", ctype);
	http_add_header(c->s, "Cache-Control", "no-store");
	http_add_header(c->s, "X-Content-Type-Options", "nosniff");
	if (http_respond(c->s, status, body, len, on_body_written, body))
		free(body);
}

static void on_static_written(struct http_stream *s, int status, void *arg)
{
	(void)s, (void)status, (void)arg;
}

void admin_reply_static(struct admin_call *c, int status, const char *ctype,
			const struct admin_static_hdr *h, size_t n_h, const void *body,
			size_t len)
{
	if (!admin_call_live(c))
		return;
	c->replied = true;
	if (status != 304)
		http_add_header(c->s, "Content-Type", ctype);
	http_add_header(c->s, "X-Content-Type-Options", "nosniff");
	for (size_t i = 0; i < n_h; i++)
		http_add_header(c->s, h[i].name, h[i].value);
	/* with a callback the body is not copied: it is static */
	http_respond(c->s, status, body, len, on_static_written, NULL);
}

void admin_reply_json(struct admin_call *c, int status, struct jsonw *w)
{
	char *doc;
	size_t len;
	int rc = jsonw_finish(w, &doc, &len);
	if (rc) {
		admin_reply_error(c, 500, "InternalError", "the response could not be built");
		return;
	}
	send_body(c, status, "application/json", doc, len);
}

void admin_reply_error(struct admin_call *c, int status, const char *code, const char *msg)
{
	struct jsonw w;
	jsonw_init(&w, 0);
	jsonw_obj_begin(&w);
	jsonw_kstr(&w, "error", code);
	jsonw_kstr(&w, "message", msg);
	if (c->s)
		jsonw_kstr(&w, "request_id", http_stream_request_id(c->s));
	jsonw_obj_end(&w);
	char *doc;
	size_t len;
	if (jsonw_finish(&w, &doc, &len))
		return;   /* out of memory: the connection's timeout ends it */
	if (status == 401 && c->s && !c->replied)
		http_add_header(c->s, "WWW-Authenticate", "Bearer realm=\"iolake-admin\"");
	send_body(c, status, "application/json", doc, len);
}

void admin_reply_meta_error(struct admin_call *c, int err)
{
	char msg[160];
	if (err == IOL_ENOT_FOUND) {
		admin_reply_error(c, 404, "NotFound", "meta has no such thing");
		return;
	}
	if (err == -EINVAL) {
		admin_reply_error(c, 400, "InvalidRequest", "meta refused the request as invalid");
		return;
	}
	if (err == IOL_ETIMEOUT || err == IOL_EUNAVAILABLE || err == IOL_ESHUTDOWN ||
	    err == -EAGAIN) {
		snprintf(msg, sizeof(msg), "meta did not answer (%s): no leader reachable",
			 iol_strerror(err));
		admin_reply_error(c, 503, "ServiceUnavailable", msg);
		return;
	}
	snprintf(msg, sizeof(msg), "meta call failed: %s", iol_strerror(err));
	admin_reply_error(c, 500, "InternalError", msg);
}

void admin_reply_status(struct admin_call *c, int status, const char *what)
{
	char msg[200];
	const ProtobufCEnumValue *v =
		protobuf_c_enum_descriptor_get_value(&iolake__meta__status__descriptor, status);
	snprintf(msg, sizeof(msg), "%s: %s", what, v ? v->name + 7 : "UNKNOWN");
	switch (status) {
	case IOLAKE__META__STATUS__STATUS_NOT_FOUND:
		admin_reply_error(c, 404, "NotFound", msg);
		return;
	case IOLAKE__META__STATUS__STATUS_EXISTS:
		admin_reply_error(c, 409, "AlreadyExists", msg);
		return;
	case IOLAKE__META__STATUS__STATUS_CONFLICT:
		admin_reply_error(c, 409, "Conflict", msg);
		return;
	case IOLAKE__META__STATUS__STATUS_INVALID:
		admin_reply_error(c, 400, "InvalidRequest", msg);
		return;
	default:
		admin_reply_error(c, 500, "InternalError", msg);
	}
}

/* ------------------------------------------------------------ meta calls */

struct meta_tramp {
	struct admin_call *c;
	admin_meta_cb cb;
	admin_submit_cb scb;
	void *ud;
};

static void on_meta(void *ud, int err, const ProtobufCMessage *resp)
{
	struct meta_tramp *t = ud;
	struct admin_call *c = t->c;
	admin_meta_cb cb = t->cb;
	void *cud = t->ud;
	free(t);
	c->pending--;
	if (admin_call_live(c))
		cb(c, cud, err, resp);
	admin_call_release(c);
}

static void on_submit(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct meta_tramp *t = ud;
	struct admin_call *c = t->c;
	admin_submit_cb cb = t->scb;
	free(t);
	c->pending--;
	if (admin_call_live(c))
		cb(c, err, res);
	admin_call_release(c);
}

static struct meta_tramp *tramp(struct admin_call *c)
{
	struct meta_tramp *t = calloc(1, sizeof(*t));
	if (t)
		t->c = c;
	return t;
}

int admin_meta_call(struct admin_call *c, unsigned method, const ProtobufCMessage *req,
		    admin_meta_cb cb, void *ud)
{
	struct meta_tramp *t = tramp(c);
	if (!t)
		return -ENOMEM;
	t->cb = cb;
	t->ud = ud;
	int rc = meta_client_call(c->api->mc, method, req, on_meta, t);
	if (rc) {
		free(t);
		return rc;
	}
	c->pending++;
	return 0;
}

int admin_meta_call_member(struct admin_call *c, size_t member, unsigned method,
			   const ProtobufCMessage *req, admin_meta_cb cb, void *ud)
{
	struct meta_tramp *t = tramp(c);
	if (!t)
		return -ENOMEM;
	t->cb = cb;
	t->ud = ud;
	int rc = meta_client_call_member(c->api->mc, member, method, req, on_meta, t);
	if (rc) {
		free(t);
		return rc;
	}
	c->pending++;
	return 0;
}

int admin_meta_submit(struct admin_call *c, const Iolake__Meta__Op *op, admin_submit_cb cb)
{
	struct meta_tramp *t = tramp(c);
	if (!t)
		return -ENOMEM;
	t->scb = cb;
	int rc = meta_client_submit(c->api->mc, op, on_submit, t);
	if (rc) {
		free(t);
		return rc;
	}
	c->pending++;
	return 0;
}

/* ------------------------------------------------------------ OSD calls */

struct osd_tramp {
	struct admin_call *c;
	admin_osd_cb cb;
	void *ud;
};

static void on_osd(void *ud, const struct rpc_result *res)
{
	struct osd_tramp *t = ud;
	struct admin_call *c = t->c;
	c->pending--;
	if (admin_call_live(c))
		t->cb(c, t->ud, res->status, res->resp);
	free(t);
	admin_call_release(c);
}

static struct rpc_channel *osd_channel(struct admin_api *a, const char *addr)
{
	for (size_t i = 0; i < a->n_chans; i++)
		if (!strcmp(a->chans[i].addr, addr))
			return a->chans[i].ch;
	if (a->n_chans == ADMIN_OSD_CHANNELS || strlen(addr) >= META_ADDR_MAX)
		return NULL;
	struct rpc_channel *ch = rpc_channel_open(a->loop, addr, NULL);
	if (!ch)
		return NULL;
	snprintf(a->chans[a->n_chans].addr, META_ADDR_MAX, "%s", addr);
	a->chans[a->n_chans++].ch = ch;
	return ch;
}

void admin_osd_call(struct admin_call *c, const char *addr, unsigned method,
		    const ProtobufCMessage *req, admin_osd_cb cb, void *ud)
{
	struct rpc_channel *ch = osd_channel(c->api, addr);
	struct osd_tramp *t = ch ? malloc(sizeof(*t)) : NULL;
	if (!t) {
		cb(c, ud, RPC_UNAVAILABLE, NULL);
		return;
	}
	*t = (struct osd_tramp){ .c = c, .cb = cb, .ud = ud };
	c->pending++;
	struct rpc_call_opts co = { .timeout_ms = ADMIN_OSD_TIMEOUT_MS };
	rpc_call(ch, OSD_SVC, method, req, NULL, &co, on_osd, t);
}

void admin_osd_status(struct admin_call *c, const char *addr, admin_osd_cb cb, void *ud)
{
	Iolake__Osd__StatusRequest q = IOLAKE__OSD__STATUS_REQUEST__INIT;
	admin_osd_call(c, addr, OSD_M_STATUS, &q.base, cb, ud);
}

ProtobufCMessage *admin_msg_copy(const ProtobufCMessage *m)
{
	if (!m)
		return NULL;
	size_t len = protobuf_c_message_get_packed_size(m);
	uint8_t *buf = malloc(len ? len : 1);
	if (!buf)
		return NULL;
	protobuf_c_message_pack(m, buf);
	ProtobufCMessage *c = protobuf_c_message_unpack(m->descriptor, NULL, len, buf);
	free(buf);
	return c;
}

void admin_msg_free(ProtobufCMessage *m)
{
	if (m)
		protobuf_c_message_free_unpacked(m, NULL);
}

void admin_api_forget_creds(struct admin_call *c)
{
	s3_auth_invalidate_all(c->api->auth);
}

void admin_reply_creds_deleted(struct admin_call *c, int err, const Iolake__Meta__OpResult *res,
			       const char *what)
{
	if (err) {
		admin_reply_meta_error(c, err);
		return;
	}
	if (res->status != IOLAKE__META__STATUS__STATUS_OK) {
		admin_reply_status(c, res->status, what);
		return;
	}
	/* Its keys must stop working here at once, not when cached entries
	 * expire (the S3 front end follows meta's creds_epoch itself). */
	admin_api_forget_creds(c);
	struct jsonw w;
	jsonw_init(&w, 0);
	jsonw_obj_begin(&w);
	jsonw_kstr(&w, "deleted", admin_call_route(c)->name);
	jsonw_obj_end(&w);
	admin_reply_json(c, 200, &w);
}

/* ------------------------------------------------------------ dispatch */

typedef void (*handler_fn)(struct admin_call *c);
static const handler_fn handlers[ADMIN_R__COUNT] = {
	[ADMIN_R_CLUSTER] = admin_h_cluster,
	[ADMIN_R_OSDS] = admin_h_osds,
	[ADMIN_R_OSD_OUT] = admin_h_osd_out_in,
	[ADMIN_R_OSD_IN] = admin_h_osd_out_in,
	[ADMIN_R_PGS] = admin_h_pgs,
	[ADMIN_R_BUCKETS] = admin_h_buckets,
	[ADMIN_R_USERS] = admin_h_users,
	[ADMIN_R_USER_CREATE] = admin_h_user_create,
	[ADMIN_R_USER_DELETE] = admin_h_user_delete,
	[ADMIN_R_USER_GRANTS] = admin_h_user_grants,
	[ADMIN_R_USER_GRANT_SET] = admin_h_user_grant_set,
	[ADMIN_R_STATS] = admin_h_stats,
	[ADMIN_R_QUOTA_GET] = admin_h_quota_get,
	[ADMIN_R_QUOTA_SET] = admin_h_quota_set,
	[ADMIN_R_QUOTA_CLEAR] = admin_h_quota_clear,
	[ADMIN_R_GC] = admin_h_gc,
	[ADMIN_R_SCRUB] = admin_h_scrub,
	[ADMIN_R_KEY_CREATE] = admin_h_key_create,
	[ADMIN_R_KEY_DELETE] = admin_h_key_delete,
	[ADMIN_R_OSD_RM] = admin_h_osd_rm,
	[ADMIN_R_MEMBER_ADD] = admin_h_member_add,
	[ADMIN_R_MEMBER_RM] = admin_h_member_rm,
	[ADMIN_R_OSD_EXPECT] = admin_h_osd_expect,
	[ADMIN_R_OSD_BAD] = admin_h_osd_list,
	[ADMIN_R_OSD_SHARDS] = admin_h_osd_list,
};

void admin_call_authorized(struct admin_call *c, bool admin)
{
	if (!admin) {
		admin_reply_error(c, 403, "AccessDenied",
				  "the admin API is for admin users; this user is not one");
		return;
	}
	/* A browser sends the cookie on any request to this origin: a
	 * change made with the cookie must carry a header that another
	 * origin's page cannot add without a CORS preflight (never allowed). */
	size_t l;
	if (c->by_cookie && strcmp(c->method, "GET") && strcmp(c->method, "HEAD") &&
	    !admin_header(c->headers, c->n_headers, ADMIN_CSRF_HEADER, &l)) {
		admin_reply_error(c, 403, "AccessDenied",
				  "a change authorized by the session cookie needs the header "
				  "X-IOLake-Console: 1");
		return;
	}
	LOG_DEBUG("admin api", "user=%s method=%s path=%.*s", c->user, c->method,
		  (int)c->path_len, c->path);
	handlers[c->route.id](c);
}

static void dispatch(struct admin_call *c)
{
	if (c->route_rc == -ENOENT) {
		admin_reply_error(c, 404, "NotFound", "no such resource (see /api/v1/ in "
				  "docs/admin-api.md)");
		return;
	}
	if (c->route_rc == -EOPNOTSUPP) {
		http_add_header(c->s, "Allow", admin_route_allow(c->path, c->path_len));
		admin_reply_error(c, 405, "MethodNotAllowed", "the resource does not take this "
				  "method");
		return;
	}
	if (c->route_rc) {
		admin_reply_error(c, 400, "InvalidRequest", "malformed id or name in the path");
		return;
	}
	switch (c->route.id) {
	case ADMIN_R_ROOT:
		http_add_header(c->s, "Location", "/console/");
		send_body(c, 307, "text/plain", NULL, 0);
		return;
	case ADMIN_R_CONSOLE:
		admin_h_console(c);
		return;
	case ADMIN_R_LOGIN:
		admin_login(c);
		return;
	case ADMIN_R_LOGOUT:
		admin_logout(c);
		return;
	default:
		admin_authenticate(c);
		return;
	}
}

/* ------------------------------------------------------------ HTTP */

/* A body over ADMIN_BODY_MAX: answered at once (not after reading it
 * all), and the connection closed after the answer. */
static void too_large(struct admin_call *c)
{
	c->body_over = true;
	free(c->body);
	c->body = NULL;
	c->body_len = 0;
	http_set_close(c->s);
	admin_reply_error(c, 413, "EntityTooLarge", "request bodies are limited to 16 KiB");
}

/* Copy the head: s3_auth may read it after the exchange is gone. */
static int copy_head(struct admin_call *c, const struct http_request *req)
{
	size_t total = req->path_len + 1 + (req->query ? req->query_len : 0) + 1;
	for (size_t i = 0; i < req->n_headers; i++)
		total += req->headers[i].name_len + req->headers[i].value_len + 2;
	c->head_mem = malloc(total);
	/* one spare slot: sigv4() may add x-amz-content-sha256 */
	c->headers = calloc(req->n_headers + 1, sizeof(*c->headers));
	if (!c->head_mem || !c->headers)
		return -ENOMEM;
	char *p = c->head_mem;
	c->path = p;
	c->path_len = req->path_len;
	memcpy(p, req->path, req->path_len);
	p += req->path_len;
	*p++ = 0;
	if (req->query) {
		c->query = p;
		c->query_len = req->query_len;
		memcpy(p, req->query, req->query_len);
		p += req->query_len;
	}
	*p++ = 0;
	for (size_t i = 0; i < req->n_headers; i++) {
		const struct sigv4_header *h = &req->headers[i];
		c->headers[i].name = p;
		c->headers[i].name_len = h->name_len;
		memcpy(p, h->name, h->name_len);
		p += h->name_len;
		*p++ = 0;
		c->headers[i].value = p;
		c->headers[i].value_len = h->value_len;
		memcpy(p, h->value, h->value_len);
		p += h->value_len;
		*p++ = 0;
	}
	c->n_headers = req->n_headers;
	snprintf(c->method, sizeof(c->method), "%s", req->method_name);
	return 0;
}

static void on_request(struct http_stream *s, const struct http_request *req)
{
	struct admin_api *a = http_stream_ctx(s);
	struct admin_call *c = calloc(1, sizeof(*c));
	if (!c || copy_head(c, req)) {
		if (c)
			call_free(c);
		http_set_close(s);
		http_respond(s, 503, NULL, 0, NULL, NULL);
		return;
	}
	c->api = a;
	c->s = s;
	http_stream_set_user(s, c);
	c->route_rc = admin_route_parse(c->method, c->path, c->path_len, &c->route);
	if (req->has_content_length && req->content_length > ADMIN_BODY_MAX)
		too_large(c);
}

static void on_body(struct http_stream *s, const char *data, size_t len)
{
	struct admin_call *c = http_stream_user(s);
	if (!c || c->body_over)
		return;
	if (c->body_len + len > ADMIN_BODY_MAX) {
		too_large(c);
		return;
	}
	char *b = realloc(c->body, c->body_len + len + 1);
	if (!b) {
		c->body_over = true;
		return;
	}
	memcpy(b + c->body_len, data, len);
	c->body = b;
	c->body_len += len;
	b[c->body_len] = 0;
}

static void on_body_end(struct http_stream *s)
{
	struct admin_call *c = http_stream_user(s);
	if (!c || c->replied)
		return;
	dispatch(c);
}

static void on_finish(struct http_stream *s, int err)
{
	(void)err;
	struct admin_call *c = http_stream_user(s);
	if (!c)
		return;
	c->s = NULL;
	admin_call_release(c);
}

/* ------------------------------------------------------------ lifecycle */

int admin_api_start(uv_loop_t *loop, const struct admin_api_cfg *cfg, struct admin_api **out)
{
	if (!cfg->n_meta)
		return -EINVAL;
	struct admin_api *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->loop = loop;
	a->session_ttl_s = cfg->session_ttl_s ? cfg->session_ttl_s : 3600;
	a->stats = cfg->stats;
	a->gc = cfg->gc;
	a->map = cfg->map;
	snprintf(a->region, sizeof(a->region), "%s", cfg->region ? cfg->region : "");
	if (getrandom(a->token_key, sizeof(a->token_key), 0) != (ssize_t)sizeof(a->token_key)) {
		free(a);
		return -EIO;
	}
	struct meta_client_opts mo = { .members = cfg->meta, .n_members = cfg->n_meta,
				       .attempt_timeout_ms = 2000, .retry_for_ms = 8000,
				       .max_calls = 1024 };
	int rc = meta_client_new(loop, &mo, &a->mc);
	if (rc) {
		free(a);
		return rc;
	}
	struct s3_auth_cfg ac = { .region = cfg->region ? a->region : NULL,
				  .ttl_ms = 10000, .neg_ttl_ms = 2000, .cache_slots = 64,
				  .source = { .lookup = admin_cred_lookup, .ctx = a },
				  .alt_service = "iolake-admin",
				  /* SigV4 only: SigV2 is for old S3 clients */
				  .no_sigv2 = true };
	a->auth = s3_auth_new(&ac);
	if (!a->auth) {
		meta_client_close(a->mc);
		free(a);
		return -ENOMEM;
	}
	struct http_server_cfg hc = { .addr = cfg->addr, .port = cfg->port,
				      .max_conns = cfg->max_conns ? cfg->max_conns : 64,
				      .header_timeout_ms = 10000, .body_timeout_ms = 10000,
				      .idle_timeout_ms = 60000, .server_name = "IOLake-admin",
				      .handler = { .on_request = on_request, .on_body = on_body,
						   .on_body_end = on_body_end,
						   .on_finish = on_finish, .ctx = a } };
	rc = http_server_start(loop, &hc, &a->http);
	if (rc) {
		s3_auth_free(a->auth);
		meta_client_close(a->mc);
		free(a);
		return rc;
	}
	*out = a;
	return 0;
}

int admin_api_port(const struct admin_api *a)
{
	return http_server_port(a->http);
}

static void on_http_closed(void *arg)
{
	struct admin_api *a = arg;
	/* Calls still waiting for meta or an OSD are answered (cancelled)
	 * inside these closes and freed then. */
	for (size_t i = 0; i < a->n_chans; i++)
		rpc_channel_close(a->chans[i].ch);
	a->n_chans = 0;
	meta_client_close(a->mc);
	a->mc = NULL;
	s3_auth_free(a->auth);
	void (*cb)(void *) = a->close_cb;
	void *arg2 = a->close_arg;
	free(a);
	if (cb)
		cb(arg2);
}

void admin_api_close(struct admin_api *a, void (*cb)(void *arg), void *arg)
{
	if (a->closing)
		return;
	a->closing = true;
	a->close_cb = cb;
	a->close_arg = arg;
	http_server_close(a->http, on_http_closed, a);
}
