/*
 * rpc_h2_client.c — the client half of the HTTP/2 transport: calls (one
 * stream each: request headers, the body, the response and trailers),
 * channels (one connection, connect timeout, PING health ticks, the peer's
 * circuit and its probes). The design is in rpc_h2.c's opening comment.
 * Runs on the channel's loop.
 */
#include "common/rpc_h2_int.h"
#include "common/tcp_self.h"

/* ------------------------------------------------------------ client calls */

static void call_free(struct h2_call *call)
{
	h2_body_free(&call->body);
	grpc_parser_reset(&call->parser);
	free(call);
}

/* Run the callback of a done call; free it if nghttp2 is done with it. */
static void call_deliver(struct h2_call *call)
{
	struct grpc_parser *p = &call->parser;
	const uint8_t *m = p->nmsgs > 0 ? p->msgs[0]->data : NULL;
	size_t mlen = p->nmsgs > 0 ? p->msgs[0]->len : 0;
	struct buf_slice pl = { 0 };
	if (p->nmsgs > 1)
		pl = (struct buf_slice){ p->msgs[1], 0, p->msgs[1]->len };
	call->delivered = true;
	rpc_chan_deliver(&call->ch->base, call->out, call->cb, call->ud, call->status,
			 call->message, m, mlen, &pl);
	grpc_parser_reset(p);
	if (!call->stream_open)
		call_free(call);
}

/* Record the outcome. Inside nghttp2 it is queued on the connection;
 * outside, delivered at once. */
static void call_finish(struct h2_call *call, int status, const char *message)
{
	if (call->done)
		return;
	call->done = true;
	call->status = status;
	if (message != call->message)
		snprintf(call->message, sizeof(call->message), "%s", message);
	DLIST_DEL(call->ch->calls, call, prev, next);
	rpc_dl_del(&call->ch->base, &call->dl);
	if (status != RPC_OK)
		grpc_parser_reset(&call->parser);
	struct h2_conn *c = call->conn;
	if (c && c->in_session) {
		call->dnext = NULL;
		if (c->done_tail)
			c->done_tail->dnext = call;
		else
			c->done_head = call;
		c->done_tail = call;
		return;
	}
	call_deliver(call);
}

void h2_run_done(struct h2_conn *c)
{
	while (c->done_head) {
		struct h2_call *call = c->done_head;
		c->done_head = call->dnext;
		if (!c->done_head)
			c->done_tail = NULL;
		call_deliver(call);
	}
}

static void call_stream_gone(struct h2_call *call)
{
	DLIST_DEL(call->conn->streams, call, sprev, snext);
	call->stream_open = false;
	call->conn = NULL;
	if (call->delivered)
		call_free(call);
}

static void on_call_deadline(struct rpc_dl *d)
{
	struct h2_call *call = container_of(d, struct h2_call, dl);
	struct h2_conn *c = call->conn;
	if (c && call->stream_open && !c->dead)
		nghttp2_submit_rst_stream(c->sess, NGHTTP2_FLAG_NONE, call->stream_id,
					  NGHTTP2_CANCEL);
	call_finish(call, RPC_DEADLINE_EXCEEDED, "deadline exceeded");
	if (c && !c->dead)
		h2_conn_pump(c);
}

static int call_submit(struct h2_conn *c, struct h2_call *call)
{
	char tmo[16];
	size_t tlen = call->timeout_ms ? grpc_timeout_format(tmo, call->timeout_ms) : 0;
	const char *auth = call->ch->base.target_str;
	nghttp2_nv nva[8] = {
		NV(":method", "POST", 4),
		NV(":scheme", c->tls ? "https" : "http", c->tls ? 5 : 4),
		NV(":path", call->path, strlen(call->path)),
		NV(":authority", auth, strlen(auth)),
		NV("content-type", "application/grpc", 16),
		NV("te", "trailers", 8),
	};
	size_t n = 6;
	if (tlen)
		nva[n++] = (nghttp2_nv)NV("grpc-timeout", tmo, tlen);
	if (call->id[0])
		nva[n++] = (nghttp2_nv)NV("x-request-id", call->id, strlen(call->id));
	nghttp2_data_provider dp = { .source.ptr = &call->body, .read_callback = h2_on_read_body };
	int32_t id = nghttp2_submit_request(c->sess, NULL, nva, n, &dp, call);
	if (id < 0)
		return -EIO;
	call->stream_id = id;
	call->conn = c;
	call->stream_open = true;
	DLIST_ADD(c->streams, call, sprev, snext);
	return 0;
}

static struct h2_call *stream_call(nghttp2_session *s, int32_t id)
{
	struct h2_call *call = nghttp2_session_get_stream_user_data(s, id);
	return call && !call->done ? call : NULL;
}


struct grpc_parser *h2_client_parser(struct h2_conn *c, int32_t id)
{
	struct h2_call *call = stream_call(c->sess, id);
	return call ? &call->parser : NULL;
}

static int cl_on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name,
			size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
			void *ud)
{
	(void)flags;
	(void)ud;
	struct h2_call *call = stream_call(s, f->hd.stream_id);
	if (!call)
		return 0;
	if (h2_name_is(name, namelen, ":status")) {
		call->http_status = atoi((const char *)value); /* nghttp2 checked: 3 digits */
	} else if (h2_name_is(name, namelen, "grpc-status")) {
		int st = 0;
		for (size_t i = 0; i < valuelen && i < 4; i++)
			st = value[i] >= '0' && value[i] <= '9' ? st * 10 + value[i] - '0' : 9999;
		call->grpc_status = valuelen == 0 || st > 9999 ? RPC_UNKNOWN : st;
	} else if (h2_name_is(name, namelen, "grpc-message")) {
		grpc_message_decode(value, valuelen, call->message, sizeof(call->message));
	}
	return 0;
}

static int cl_on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data,
		      size_t len, void *ud)
{
	(void)flags;
	h2_rx_data(ud, len);
	struct h2_call *call = stream_call(s, id);
	if (!call)
		return 0;
	int rc = grpc_parser_feed(&call->parser, data, len);
	if (rc) {
		nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
		call_finish(call, rc == -EPROTO ? RPC_INTERNAL : RPC_RESOURCE_EXHAUSTED,
			    rc == -EPROTO ? "malformed response framing"
					  : "response larger than max_message_bytes");
	}
	return 0;
}

static int http_to_status(int http)
{
	switch (http) {
	case 400: return RPC_INTERNAL;
	case 401: return RPC_UNAUTHENTICATED;
	case 403: return RPC_PERMISSION_DENIED;
	case 404: return RPC_UNIMPLEMENTED;
	case 429: case 502: case 503: case 504: return RPC_UNAVAILABLE;
	default: return RPC_UNKNOWN;
	}
}

/* The peer answered our PING: it is alive and its loop runs. */
static void conn_ping_answered(struct h2_conn *c)
{
	if (!c->ping_sent_ns)
		return; /* an answer to nothing we sent: ignore */
	rpc_health_count_ack((uv_hrtime() - c->ping_sent_ns) / 1000);
	c->ping_sent_ns = c->ping_sent_ms = 0;
	struct h2_chan *ch = c->ch;
	if (ch->base.peer && ch->conn == c) {
		rpc_peer_ok(ch->base.peer);
		ch->probing = false;
	}
}

static int cl_on_frame(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
	struct h2_conn *c = ud;
	if (f->hd.type == NGHTTP2_GOAWAY) {
		/* No graceful drain: new calls need a new connection anyway. */
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	}
	if (f->hd.type == NGHTTP2_PING && (f->hd.flags & NGHTTP2_FLAG_ACK)) {
		conn_ping_answered(c);
		return 0;
	}
	if ((f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA) ||
	    !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
		return 0;
	struct h2_call *call = stream_call(s, f->hd.stream_id);
	if (!call)
		return 0;
	/* The server is done: stop sending if we were not. */
	if (!nghttp2_session_get_stream_local_close(s, f->hd.stream_id))
		nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, f->hd.stream_id, NGHTTP2_CANCEL);
	if (call->grpc_status < 0) {
		snprintf(call->message, sizeof(call->message), "no grpc-status (HTTP %d)",
			 call->http_status);
		call_finish(call, call->http_status == 200 ? RPC_INTERNAL
							  : http_to_status(call->http_status),
			    call->message);
	} else if (call->grpc_status == RPC_OK &&
		   (call->parser.nmsgs == 0 || !grpc_parser_at_boundary(&call->parser))) {
		call_finish(call, RPC_INTERNAL, "response message missing or truncated");
	} else {
		call_finish(call, call->grpc_status, call->message);
	}
	return 0;
}

static int cl_on_close(nghttp2_session *s, int32_t id, uint32_t err, void *ud)
{
	(void)ud;
	struct h2_call *call = nghttp2_session_get_stream_user_data(s, id);
	if (!call)
		return 0;
	if (!call->done) {
		char why[96];
		snprintf(why, sizeof(why), "stream reset: %s", nghttp2_http2_strerror(err));
		call_finish(call, err == NGHTTP2_REFUSED_STREAM ? RPC_UNAVAILABLE
				  : err == NGHTTP2_CANCEL	 ? RPC_CANCELLED
								 : RPC_INTERNAL,
			    why);
	}
	call_stream_gone(call);
	return 0;
}

static int cl_on_not_send(nghttp2_session *s, const nghttp2_frame *f, int err, void *ud)
{
	struct h2_conn *c = ud;
	(void)err;
	if (f->hd.type != NGHTTP2_HEADERS)
		return 0;
	/* A request that never left (cancelled before sending, or refused):
	 * nghttp2 will not report its stream's close, so find it here. */
	for (struct h2_call *call = c->streams; call; call = call->snext) {
		if (call->stream_id == f->hd.stream_id) {
			nghttp2_session_set_stream_user_data(s, f->hd.stream_id, NULL);
			call_finish(call, RPC_UNAVAILABLE, "request not sent");
			call_stream_gone(call);
			break;
		}
	}
	return 0;
}

static nghttp2_session_callbacks *make_callbacks(void)
{
	nghttp2_session_callbacks *cbs = h2_callbacks_new();
	if (!cbs)
		return NULL;
	nghttp2_session_callbacks_set_on_header_callback(cbs, cl_on_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, cl_on_data);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, cl_on_frame);
	nghttp2_session_callbacks_set_on_stream_close_callback(cbs, cl_on_close);
	nghttp2_session_callbacks_set_on_frame_not_send_callback(cbs, cl_on_not_send);
	return cbs;
}

/* ------------------------------------------------------------ client channel */

static struct h2_conn *chan_connect(struct h2_chan *ch);

/* Probe the peer at its retry time (or look again then, when another
 * channel probes it). A channel that has a connection PINGs on it
 * instead. */
static void on_probe_timer(uv_timer_t *t);

static void conn_ping(struct h2_conn *c);

static void probe_arm(struct h2_chan *ch)
{
	struct rpc_peer *p = ch->base.peer;
	struct h2_conn *c = ch->conn;
	if (c && c->sess && !c->dead && !c->ping_sent_ms && !ch->base.closing) {
		/* Another channel saw the peer fail while this connection
		 * lives: its PING answer (closes the circuit) or its silence
		 * (declares it dead) settles the question quickly. */
		conn_ping(c);
		h2_conn_pump(c);
		return;
	}
	if (!p || ch->base.closing || c || uv_is_active((uv_handle_t *)&ch->probe_timer))
		return;
	uint64_t now = loop_now_ms(), at = rpc_peer_retry_at(p);
	uint64_t delay = at > now ? at - now : 0;
	if (rpc_peer_load(p) == RPC_PEER_PROBING && delay < ch->base.opts.backoff_min_ms)
		delay = ch->base.opts.backoff_min_ms; /* someone else probes: look later */
	uv_timer_start(&ch->probe_timer, on_probe_timer, delay, 0);
}

static void on_probe_timer(uv_timer_t *t)
{
	struct h2_chan *ch = t->data;
	struct rpc_peer *p = ch->base.peer;
	if (ch->base.closing || ch->conn || rpc_peer_load(p) == RPC_PEER_UP)
		return; /* up again: the next call connects as usual */
	if (rpc_peer_probe_begin(p)) {
		ch->probing = true;
		if (!chan_connect(ch)) {
			ch->probing = false;
			rpc_peer_failed(p, &ch->base.opts, false);
		}
	}
	probe_arm(ch);
}

/* Tear a connection down: every call it carries fails with UNAVAILABLE
 * now; memory goes after uv_close. */
/* The client side of h2_conn_fail: the channel's circuit, its calls. */
void h2_client_conn_lost(struct h2_conn *c, const char *why)
{
	struct h2_chan *ch = c->ch;
	if (ch->conn == c) {
		ch->conn = NULL;
		if (ch->base.closing) {
			if (ch->probing && ch->base.peer)
				rpc_peer_probe_abandon(ch->base.peer);
		} else if (ch->base.peer) {
			rpc_peer_failed(ch->base.peer, &ch->base.opts, c->declared_dead);
			probe_arm(ch);
		}
		ch->probing = false;
	}
	h2_run_done(c);
	char msg[RPC_MAX_MESSAGE_TEXT];
	snprintf(msg, sizeof(msg), "connection to %s lost: %s", ch->base.target_str, why);
	/* One connection per channel: every pending call rode on it. A
	 * callback may close the channel; ch stays valid (conn holds a
	 * reference) and the list just empties. */
	while (ch->calls)
		call_finish(ch->calls, RPC_UNAVAILABLE, msg);
	while (c->streams)
		call_stream_gone(c->streams);
}

static void conn_ping(struct h2_conn *c)
{
	if (nghttp2_submit_ping(c->sess, NGHTTP2_FLAG_NONE, NULL))
		return; /* out of memory: the next tick tries again */
	c->ping_sent_ms = uv_now(c->tcp.loop);
	c->ping_sent_ns = uv_hrtime();
	rpc_health_count_ping();
}

static void on_health_tick(uv_timer_t *t)
{
	struct h2_conn *c = t->data;
	if (c->dead || !c->sess)
		return;
	const struct rpc_channel_opts *o = &c->ch->base.opts;
	uint64_t now = uv_now(c->tcp.loop);
	if (c->ping_sent_ms) {
		/* Bytes still arriving mean a live path (the answer may be
		 * queued behind DATA on a slow link): dead only after
		 * ping_timeout_ms of silence since the PING. */
		uint64_t since = c->ping_sent_ms > c->last_rx_ms ? c->ping_sent_ms : c->last_rx_ms;
		if (now - since < o->ping_timeout_ms)
			return;
		char why[96];
		snprintf(why, sizeof(why), "declared dead: no PING answer in %u ms",
			 o->ping_timeout_ms);
		c->declared_dead = true;
		h2_conn_fail(c, why);
		return;
	}
	uint64_t quiet = now - c->last_rx_ms;
	if ((c->streams && quiet >= o->ping_busy_ms) || quiet >= o->ping_idle_ms) {
		conn_ping(c);
		h2_conn_pump(c);
	}
}

static void on_connect_timeout(uv_timer_t *t)
{
	h2_conn_fail(t->data, "connect timeout");
}

static void on_connect(uv_connect_t *req, int status)
{
	struct h2_conn *c = req->data;
	if (c->dead)
		return;
	if (status < 0) {
		h2_conn_fail(c, uv_strerror(status));
		return;
	}
	if (tcp_self_connected(&c->tcp)) {   /* a dead local peer's port: see tcp_self.h */
		h2_conn_fail(c, "connected to itself");
		return;
	}
	struct rpc_tls *tls = c->ch->base.opts.tls ? c->ch->base.opts.tls : rpc_tls_default();
	if (tls) {
		/* The connect timer keeps running: it covers the handshake. */
		int rc = h2_tls_start(c, tls);
		if (rc)
			h2_conn_fail(c, rc == -ENOMEM ? "out of memory" : "cannot start TLS");
		return;
	}
	h2_client_tls_up(c);
}

/* Issue 16: a client under TLS calls a service only on a server whose
 * certificate holds the role serving it (a gateway dialling an OSD wants
 * "osd"): otherwise the connection fails, its calls UNAVAILABLE with why.
 * True when c was failed. */
static bool server_refused(struct h2_conn *c, const char *service, char *msg, size_t cap)
{
	char why[320];
	if (!c->tls || !rpc_authz_server_check(&c->tls_peer, service, why, sizeof(why)))
		return false;
	rpc_tls_server_role_refused(c->ch->base.target_str, why);
	snprintf(msg, cap, "TLS: refused the server: %s", why);
	h2_conn_fail(c, msg);
	return true;
}

void h2_client_tls_up(struct h2_conn *c)
{
	uv_timer_stop(&c->timer);
	nghttp2_session_callbacks *cbs = make_callbacks();
	int rc = cbs ? h2_session_start(c, cbs, 0) : -ENOMEM;
	nghttp2_session_callbacks_del(cbs);
	if (rc) {
		h2_conn_fail(c, "cannot start HTTP/2 session");
		return;
	}
	/* The first PING proves the peer's loop answers (it closes the
	 * circuit of a probe); then the tick watches the connection. */
	const struct rpc_channel_opts *o = &c->ch->base.opts;
	uint64_t tick = (o->ping_busy_ms < o->ping_timeout_ms ? o->ping_busy_ms : o->ping_timeout_ms) / 4;
	tick = tick < 10 ? 10 : tick > 250 ? 250 : tick;
	c->last_rx_ms = uv_now(c->tcp.loop);
	conn_ping(c);
	uv_timer_start(&c->timer, on_health_tick, tick, tick);
	/* Send what queued while connecting, oldest first. */
	struct h2_chan *ch = c->ch;
	struct h2_call *last = ch->calls;
	char msg[400];
	for (struct h2_call *call = ch->calls; call; call = call->next)
		if (call->stream_id == 0 && server_refused(c, call->service, msg, sizeof(msg)))
			return;
	while (last && last->next)
		last = last->next;
	for (struct h2_call *call = last, *prev; call; call = prev) {
		prev = call->prev;
		if (call->stream_id == 0 && call_submit(c, call))
			call_finish(call, RPC_UNAVAILABLE, "cannot submit request");
	}
	h2_conn_pump(c);
}

static struct h2_conn *chan_connect(struct h2_chan *ch)
{
	struct h2_conn *c = h2_conn_new(ch->base.loop);
	if (!c)
		return NULL;
	c->ch = ch;
	ch->base.refs++;
	int rc = uv_tcp_connect(&c->connect_req, &c->tcp, (struct sockaddr *)&ch->addr, on_connect);
	if (rc) {
		c->dead = true; /* nothing to fail yet: callers see the NULL */
		h2_conn_close_handles(c);
		return NULL;
	}
	uv_timer_start(&c->timer, on_connect_timeout, ch->base.opts.connect_timeout_ms, 0);
	ch->conn = c;
	return c;
}

static void h2_call(struct rpc_channel *base, struct rpc_call_args *a)
{
	struct h2_chan *ch = (struct h2_chan *)base;
	const char *why = "out of memory";
	int status = RPC_RESOURCE_EXHAUSTED;
	char down[160];
	bool trial = false;
	if (base->peer && rpc_peer_load(base->peer) != RPC_PEER_UP && !ch->conn &&
	    !base->closing && rpc_peer_probe_begin(base->peer)) {
		/* Half-open: the circuit is down, its retry time has passed
		 * and nobody probes. This call is the trial: it begins the
		 * probe (connect + PING) and rides that connection, rather
		 * than failing on what the circuit learnt before retry time.
		 * Without it a peer back on its old address (a restarted OSD)
		 * was refused by every new channel's first call, and forever
		 * by a caller that closes the channel on that failure, as
		 * the channel's probe timer went with it. */
		ch->probing = true;
		trial = true;
	}
	if (!trial && base->peer && rpc_peer_load(base->peer) != RPC_PEER_UP) {
		/* Known dead: fail now, not after a deadline. The probe timer
		 * brings the peer back. */
		uint64_t now = loop_now_ms(), at = rpc_peer_retry_at(base->peer);
		snprintf(down, sizeof(down), "%s is %s (circuit open; next probe in %llu ms)",
			 base->target_str, rpc_peer_state_name(rpc_peer_load(base->peer)),
			 (unsigned long long)(at > now ? at - now : 0));
		rpc_health_count_fast_fail();
		probe_arm(ch);
		why = down;
		status = RPC_UNAVAILABLE;
		goto fail;
	}
	const char *mname = a->svc->methods[a->method].name;
	size_t plen = strlen(a->svc->name) + strlen(mname) + 3;
	size_t ilen = strnlen(a->request_id, RPC_MAX_REQUEST_ID) + 1;
	struct h2_call *call = calloc(1, sizeof(*call) + plen + ilen);
	if (!call)
		goto fail;
	call->path = (char *)(call + 1);
	call->id = call->path + plen;
	snprintf(call->path, plen, "/%s/%s", a->svc->name, mname);
	memcpy(call->id, a->request_id, ilen - 1);
	call->ch = ch;
	call->cb = a->cb;
	call->ud = a->ud;
	call->out = a->svc->methods[a->method].output;
	call->service = a->svc->name;
	call->timeout_ms = a->timeout_ms;
	call->grpc_status = -1;
	h2_body_init(&call->body, a->req, &a->payload);
	a->req = NULL;
	buf_unref(a->payload.buf); /* body took its own */
	a->payload.buf = NULL;
	grpc_parser_init(&call->parser, base->opts.max_message_bytes, 2);

	if (a->timeout_ms && rpc_dl_add(base, &call->dl, a->timeout_ms, on_call_deadline))
		goto fail_call;
	struct h2_conn *c = ch->conn;
	if (!c) {
		status = RPC_UNAVAILABLE;
		why = "cannot start connecting";
		if (!(c = chan_connect(ch))) {
			if (trial) { /* as a failed probe: the next backoff */
				ch->probing = false;
				trial = false;
				rpc_peer_failed(base->peer, &base->opts, false);
				probe_arm(ch);
			}
			goto fail_call;
		}
	}
	char refused[400];
	if (c->sess && c->tls_up && server_refused(c, call->service, refused, sizeof(refused))) {
		why = refused;
		status = RPC_UNAVAILABLE;
		goto fail_call;
	}
	if (c->sess && call_submit(c, call)) {
		why = "cannot submit request";
		status = RPC_UNAVAILABLE;
		goto fail_call;
	}
	DLIST_ADD(ch->calls, call, prev, next);
	/* Sent now, not kicked to the turn's end: a caller's calls leave in
	 * the order it made them (the OSD's scheduler sees a burst of client
	 * PutShards before the background reads made after them); answers
	 * are the server's to batch. */
	if (c->sess)
		h2_conn_pump(c);
	return;

fail_call:
	rpc_dl_del(base, &call->dl);
	call_free(call);
fail:
	if (trial) { /* out of memory before the probe connected: not a verdict */
		ch->probing = false;
		rpc_peer_probe_abandon(base->peer);
		probe_arm(ch);
	}
	buf_unref(a->req);
	buf_unref(a->payload.buf);
	base->npending--;
	rpc_chan_defer_fail(base, a->cb, a->ud, status, why);
}

static void on_probe_closed(uv_handle_t *h)
{
	struct h2_chan *ch = h->data;
	rpc_chan_unref(&ch->base);
}

static void h2_close(struct rpc_channel *base)
{
	struct h2_chan *ch = (struct h2_chan *)base;
	struct h2_conn *c = ch->conn;
	if (c)
		h2_run_done(c); /* finished calls keep their outcome */
	while (ch->calls)
		call_finish(ch->calls, RPC_CANCELLED, "channel closed");
	if (c)
		h2_conn_fail(c, "channel closed");
	/* The probe timer holds a reference until it is closed. */
	base->refs++;
	uv_close((uv_handle_t *)&ch->probe_timer, on_probe_closed);
}

static void h2_free(struct rpc_channel *base)
{
	free(base);
}

static const struct rpc_chan_ops h2_chan_ops = {
	.call = h2_call,
	.close = h2_close,
	.free = h2_free,
};

struct rpc_channel *rpc_h2_channel_open(uv_loop_t *loop, const char *target,
					const struct rpc_target *t,
					const struct rpc_channel_opts *opts)
{
	struct h2_chan *ch = calloc(1, sizeof(*ch));
	if (!ch)
		return NULL;
	if (rpc_target_sockaddr(t, &ch->addr) || t->port == 0)
		goto err;
	if (rpc_chan_init(&ch->base, &h2_chan_ops, loop, target, t, opts))
		goto err;
	uv_timer_init(loop, &ch->probe_timer);
	ch->probe_timer.data = ch;
	return &ch->base;
err:
	free(ch);
	return NULL;
}
