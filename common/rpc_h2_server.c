/*
 * rpc_h2_server.c — the server half of the HTTP/2 transport: requests (one
 * stream each: headers with path, grpc-timeout and x-request-id, the body,
 * the answer with grpc-status trailers) handed to rpc_req_dispatch, and
 * the TCP listener with its connections (or, without a listener, those
 * another loop accepted: rpc_server_adopt). The design is in rpc_h2.c's
 * opening comment. Runs on the server's loop.
 */
#include "common/rpc_h2_int.h"

#include <unistd.h>

#include "common/peer_addr.h"

/* ------------------------------------------------------------ server */

static void sreq_free(struct h2_sreq *r)
{
	struct rpc_server *srv = r->base.srv;
	rpc_req_release(&r->base);
	grpc_parser_reset(&r->parser);
	h2_body_free(&r->body);
	free(r);
	rpc_server_unref(srv);
}

/* The stream is closed (or the connection gone): free r unless a handler
 * still holds it, in which case it is now cancelled. */
static void sreq_stream_gone(struct h2_sreq *r)
{
	struct h2_conn *c = r->conn;
	DLIST_DEL(c->sstreams, r, sprev, snext);
	r->stream_open = false;
	r->conn = NULL;
	if (c->sess)
		nghttp2_session_set_stream_user_data(c->sess, r->stream_id, NULL);
	if (r->state == SR_READING || r->state == SR_ANSWERED)
		sreq_free(r);
	/* SR_READY: freed when popped; SR_HANDLER: when answered. */
}

/* Submit a trailers-only answer (failure) or headers + body + trailers. */
static int sreq_submit(struct h2_sreq *r, int status, const char *message)
{
	nghttp2_session *s = r->conn->sess;
	char st[12], enc[3 * RPC_MAX_MESSAGE_TEXT + 1];
	size_t stlen = (size_t)snprintf(st, sizeof(st), "%d", status);
	size_t elen = grpc_message_encode(message, enc);
	nghttp2_nv nva[4] = {
		NV(":status", "200", 3),
		NV("content-type", "application/grpc", 16),
		NV("grpc-status", st, stlen),
		NV("grpc-message", enc, elen),
	};
	if (status != RPC_OK)
		return nghttp2_submit_response(s, r->stream_id, nva, elen ? 4 : 3, NULL);
	r->body.trailers = true;
	nghttp2_data_provider dp = { .source.ptr = &r->body, .read_callback = h2_on_read_body };
	return nghttp2_submit_response(s, r->stream_id, nva, 2, &dp);
}

static void sreq_answer(struct rpc_req *base, int status, const char *message, struct buf *resp,
			const struct buf_slice *payload)
{
	struct h2_sreq *r = (struct h2_sreq *)base;
	struct h2_conn *c = r->conn;
	r->state = SR_ANSWERED;
	if (resp)
		h2_body_init(&r->body, resp, payload); /* refs payload before release */
	rpc_req_release(base);
	if (!r->stream_open) {
		sreq_free(r);
		return;
	}
	if (sreq_submit(r, resp ? RPC_OK : status, message) != 0) {
		nghttp2_submit_rst_stream(c->sess, NGHTTP2_FLAG_NONE, r->stream_id,
					  NGHTTP2_INTERNAL_ERROR);
	}
	h2_conn_kick(c); /* the turn's answers leave in one write */
}

static bool sreq_gone(const struct rpc_req *base)
{
	return !((const struct h2_sreq *)base)->stream_open;
}

static void **sreq_conn_data(struct rpc_req *base)
{
	struct h2_sreq *r = (struct h2_sreq *)base;
	return r->stream_open && r->conn && !r->conn->dead ? &r->conn->data : NULL;
}

static const struct rpc_req_ops h2_req_ops = {
	.answer = sreq_answer,
	.gone = sreq_gone,
	.conn_data = sreq_conn_data,
};

void h2_run_ready(struct h2_conn *c)
{
	while (c->ready_head && !c->dead) {
		struct h2_sreq *r = c->ready_head;
		c->ready_head = r->rnext;
		if (!c->ready_head)
			c->ready_tail = NULL;
		if (!r->stream_open) {
			sreq_free(r);
			continue;
		}
		r->state = SR_HANDLER;
		struct grpc_parser *p = &r->parser;
		struct buf *m = p->msgs[0];
		if (p->nmsgs > 1) {
			r->base.payload = (struct buf_slice){ p->msgs[1], 0, p->msgs[1]->len };
			p->msgs[1] = NULL;
		}
		p->msgs[0] = NULL;
		p->nmsgs = 0;
		if (c->tls) {
			/* Issue 16: the caller's certificate role against the
			 * method (common/rpc_authz.c's table). */
			r->base.ident = &c->tls_peer;
			const struct rpc_method *rm = r->base.m;
			if (rm && rpc_authz_call(&r->base, rm->svc->name,
						 rm->svc->methods[rm->index].name)) {
				buf_unref(m);   /* answered PERMISSION_DENIED, r freed */
				continue;
			}
		}
		rpc_req_dispatch(&r->base, m->data, m->len); /* may free r */
		buf_unref(m);
	}
}

static struct h2_sreq *stream_sreq(nghttp2_session *s, int32_t id)
{
	struct h2_sreq *r = nghttp2_session_get_stream_user_data(s, id);
	return r && r->state == SR_READING ? r : NULL;
}

struct grpc_parser *h2_server_parser(struct h2_conn *c, int32_t id)
{
	struct h2_sreq *r = stream_sreq(c->sess, id);
	return r ? &r->parser : NULL;
}

/* A request fails before reaching a handler. Inside nghttp2 callbacks. */
static void sreq_reject(struct h2_sreq *r, int status, const char *message)
{
	r->state = SR_ANSWERED;
	grpc_parser_reset(&r->parser);
	if (sreq_submit(r, status, message) != 0)
		nghttp2_submit_rst_stream(r->conn->sess, NGHTTP2_FLAG_NONE, r->stream_id,
					  NGHTTP2_INTERNAL_ERROR);
}

static int sv_on_begin(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
	struct h2_conn *c = ud;
	if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	struct h2_sreq *r = calloc(1, sizeof(*r));
	if (!r)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* resets the stream */
	struct rpc_server *srv = c->hs->srv;
	r->base.ops = &h2_req_ops;
	r->base.srv = srv;
	r->base.id = r->id;
	r->conn = c;
	r->stream_id = f->hd.stream_id;
	r->stream_open = true;
	r->base.admit_slot = c->admit_slot;
	grpc_parser_init(&r->parser, srv->opts.max_message_bytes, 2);
	rpc_server_ref(srv);
	DLIST_ADD(c->sstreams, r, sprev, snext);
	nghttp2_session_set_stream_user_data(s, f->hd.stream_id, r);
	return 0;
}

static int sv_on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name,
			size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
			void *ud)
{
	(void)flags;
	struct h2_conn *c = ud;
	struct h2_sreq *r = stream_sreq(s, f->hd.stream_id);
	if (!r)
		return 0;
	if (h2_name_is(name, namelen, ":path")) {
		r->base.m = rpc_server_find_path(c->hs->srv, value, valuelen);
	} else if (h2_name_is(name, namelen, "grpc-timeout")) {
		uint64_t ms;
		if (grpc_timeout_parse(value, valuelen, &ms) == 0)
			r->base.deadline_ms = loop_now_ms() + ms;
	} else if (h2_name_is(name, namelen, "x-request-id")) {
		size_t n = valuelen < RPC_MAX_REQUEST_ID ? valuelen : RPC_MAX_REQUEST_ID;
		memcpy(r->id, value, n);
		r->id[n] = 0;
	}
	return 0;
}

static int sv_on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data,
		      size_t len, void *ud)
{
	(void)flags;
	h2_rx_data(ud, len);
	struct h2_sreq *r = stream_sreq(s, id);
	if (!r)
		return 0;
	int rc = grpc_parser_feed(&r->parser, data, len);
	if (rc == -EMSGSIZE)
		sreq_reject(r, RPC_RESOURCE_EXHAUSTED, "request larger than max_message_bytes");
	else if (rc == -ENOMEM)
		sreq_reject(r, RPC_RESOURCE_EXHAUSTED, "out of memory");
	else if (rc)
		sreq_reject(r, RPC_INTERNAL, "malformed request framing");
	return 0;
}

/* Issue 16: the server's admission hook for one call (its headers are
 * in). True when it may go on; else it was answered RESOURCE_EXHAUSTED. */
static bool admit_call(struct h2_conn *c, struct h2_sreq *r)
{
	const struct rpc_admit *a = c->srv->opts.admit;
	if (!a || !a->call || a->call(a->ud, c->admit_slot))
		return true;
	sreq_reject(r, RPC_RESOURCE_EXHAUSTED, "SlowDown: too many calls from this address "
		    "(--rate-per-addr)");
	return false;
}

static int sv_on_frame(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
	struct h2_conn *c = ud;
	if (f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA)
		return 0;
	if (f->hd.type == NGHTTP2_DATA && !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
		return 0;
	struct h2_sreq *r = stream_sreq(s, f->hd.stream_id);
	if (!r)
		return 0;
	if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST &&
	    !admit_call(c, r))
		return 0;   /* refused before its body is kept */
	if (!(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
		return 0;
	if (!r->base.m) {
		sreq_reject(r, RPC_UNIMPLEMENTED, "unknown method");
	} else if (r->parser.nmsgs == 0 || !grpc_parser_at_boundary(&r->parser)) {
		sreq_reject(r, RPC_INTERNAL, "request message missing or truncated");
	} else {
		r->state = SR_READY;
		r->rnext = NULL;
		if (c->ready_tail)
			c->ready_tail->rnext = r;
		else
			c->ready_head = r;
		c->ready_tail = r;
	}
	return 0;
}

static int sv_on_close(nghttp2_session *s, int32_t id, uint32_t err, void *ud)
{
	(void)err;
	(void)ud;
	struct h2_sreq *r = nghttp2_session_get_stream_user_data(s, id);
	if (r)
		sreq_stream_gone(r);
	return 0;
}

/* The server side of h2_conn_fail: requests not dispatched are dropped,
 * open streams let go, the connection leaves the server's list. */
void h2_server_conn_lost(struct h2_conn *c)
{
	while (c->ready_head) {
		struct h2_sreq *r = c->ready_head;
		c->ready_head = r->rnext;
		r->state = SR_ANSWERED; /* never dispatched: just drop */
		if (!r->stream_open)
			sreq_free(r);
	}
	c->ready_tail = NULL;
	while (c->sstreams) {
		sreq_stream_gone(c->sstreams);
	}
	DLIST_DEL(c->hs->conns, c, prev, next);
	c->hs = NULL;
	atomic_fetch_sub_explicit(&c->srv->tcp_conns, 1, memory_order_relaxed);
	const struct rpc_admit *a = c->srv->opts.admit;
	if (c->admitted && a->conn_close)
		a->conn_close(a->ud, c->admit_slot);
	c->admitted = false;
}

/* Issue 16: the server's admission hook for a new connection. True when
 * it may stay; else it was failed (closed before any TLS work). */
static bool admit_conn(struct h2_conn *c)
{
	const struct rpc_admit *a = c->srv->opts.admit;
	c->admit_slot = UINT32_MAX;
	if (!a || !a->conn_open)
		return true;
	struct sockaddr_storage ss;
	int len = sizeof(ss);
	uint8_t addr[16] = { 0 };
	if (!uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len))
		peer_addr_bin(&ss, addr);
	if (!a->conn_open(a->ud, addr, &c->admit_slot)) {
		h2_conn_fail(c, "refused: too many connections from this address");
		return false;
	}
	c->admitted = true;
	return true;
}

static nghttp2_session_callbacks *make_callbacks(void)
{
	nghttp2_session_callbacks *cbs = h2_callbacks_new();
	if (!cbs)
		return NULL;
	nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, sv_on_begin);
	nghttp2_session_callbacks_set_on_header_callback(cbs, sv_on_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, sv_on_data);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, sv_on_frame);
	nghttp2_session_callbacks_set_on_stream_close_callback(cbs, sv_on_close);
	return cbs;
}

/* A new server connection on hs (its socket not yet attached): listed
 * and counted. NULL: out of memory. */
static struct h2_conn *conn_join(struct rpc_h2_server *hs)
{
	struct h2_conn *c = h2_conn_new(hs->srv->loop);
	if (!c)
		return NULL;
	c->server = true;
	c->hs = hs;
	c->srv = hs->srv;
	rpc_server_ref(hs->srv);
	DLIST_ADD(hs->conns, c, prev, next);
	atomic_fetch_add_explicit(&hs->srv->tcp_conns, 1, memory_order_relaxed);
	return c;
}

/* c's socket is attached: admission, then TLS or HTTP/2 at once. */
static void conn_serve(struct h2_conn *c)
{
	if (!admit_conn(c))
		return;
	struct rpc_tls *tls = c->srv->opts.tls ? c->srv->opts.tls : rpc_tls_default();
	if (tls) {
		int rc = h2_tls_start(c, tls);
		if (rc)
			h2_conn_fail(c, "cannot start TLS");
		return;
	}
	h2_server_tls_up(c);
}

static void on_connection(uv_stream_t *l, int status)
{
	struct rpc_h2_server *hs = l->data;
	if (status < 0)
		return; /* EMFILE and the like: the next accept may work */
	struct h2_conn *c = conn_join(hs);
	if (!c)
		return;
	if (uv_accept(l, (uv_stream_t *)&c->tcp)) {
		h2_conn_fail(c, "accept failed");
		return;
	}
	conn_serve(c);
}

/* The server's TCP side without a listener (rpc_server_adopt before any
 * rpc_server_listen). NULL: out of memory. */
static struct rpc_h2_server *h2_server_get(struct rpc_server *srv)
{
	if (srv->h2)
		return srv->h2;
	struct rpc_h2_server *hs = calloc(1, sizeof(*hs));
	if (!hs)
		return NULL;
	hs->srv = srv;
	rpc_server_ref(srv);
	srv->h2 = hs;
	return hs;
}

int rpc_h2_adopt(struct rpc_server *srv, int fd)
{
	struct rpc_h2_server *hs = h2_server_get(srv);
	struct h2_conn *c = hs ? conn_join(hs) : NULL;
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	int rc = uv_tcp_open(&c->tcp, fd);
	if (rc) {
		close(fd);   /* not the handle's: uv_tcp_open failed */
		h2_conn_fail(c, "cannot adopt the socket");
		return rc;
	}
	conn_serve(c);
	return 0;
}

/* The connection may speak HTTP/2 (accepted in cleartext, or its TLS
 * handshake is done). */
void h2_server_tls_up(struct h2_conn *c)
{
	struct rpc_h2_server *hs = c->hs;
	nghttp2_session_callbacks *cbs = make_callbacks();
	int rc = cbs ? h2_session_start(c, cbs, hs->srv->opts.max_streams) : -ENOMEM;
	nghttp2_session_callbacks_del(cbs);
	if (rc) {
		h2_conn_fail(c, "cannot start HTTP/2 session");
		return;
	}
	h2_conn_pump(c);
}

static void on_listener_closed(uv_handle_t *h)
{
	struct rpc_h2_server *hs = h->data;
	struct rpc_server *srv = hs->srv;
	free(hs);
	rpc_server_unref(srv);
}

int rpc_h2_listen(struct rpc_server *srv, const struct rpc_target *t)
{
	struct sockaddr_storage ss;
	if (srv->h2)
		return -EALREADY;
	if (rpc_target_sockaddr(t, &ss))
		return -EINVAL;
	struct rpc_h2_server *hs = calloc(1, sizeof(*hs));
	if (!hs)
		return -ENOMEM;
	hs->srv = srv;
	hs->listening = true;
	int rc = uv_tcp_init(srv->loop, &hs->listener);
	if (rc) {
		free(hs);
		return rc;
	}
	hs->listener.data = hs;
	rpc_server_ref(srv);
	rc = uv_tcp_bind(&hs->listener, (struct sockaddr *)&ss, 0);
	if (!rc)
		rc = uv_listen((uv_stream_t *)&hs->listener, 511, on_connection);
	if (rc) {
		uv_close((uv_handle_t *)&hs->listener, on_listener_closed);
		return rc;
	}
	srv->h2 = hs;
	return 0;
}

int rpc_h2_port(const struct rpc_server *srv)
{
	if (!srv->h2 || !srv->h2->listening)
		return 0;
	struct sockaddr_storage ss;
	int len = sizeof(ss);
	if (uv_tcp_getsockname(&srv->h2->listener, (struct sockaddr *)&ss, &len))
		return 0;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

void rpc_h2_server_close(struct rpc_server *srv)
{
	struct rpc_h2_server *hs = srv->h2;
	if (!hs)
		return;
	srv->h2 = NULL;
	while (hs->conns)
		h2_conn_fail(hs->conns, "server closing");
	if (hs->listening) {
		uv_close((uv_handle_t *)&hs->listener, on_listener_closed);
		return;
	}
	free(hs);   /* adopting only: no handle of its own */
	rpc_server_unref(srv);
}
