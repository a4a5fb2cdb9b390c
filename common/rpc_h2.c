/*
 * rpc_h2.c — the gRPC-over-HTTP/2 (cleartext) transport: nghttp2 sessions
 * over libuv TCP, for channels ("host:port") and for servers.
 *
 * Owns: one struct h2_conn per TCP connection (a channel has at most one;
 * a server has one per accepted peer), the nghttp2 session in it, the
 * read buffer and the output batch. Everything runs on the loop of the
 * channel or server; nothing here locks.
 *
 * Output: nghttp2 produces frames only when we call nghttp2_session_send,
 * and we call it only when no uv_write is in flight, so at most one write
 * is outstanding and everything submitted meanwhile waits in nghttp2 to go
 * out in the next batch. A batch is an iovec list: non-DATA frames and
 * DATA frame headers are copied into the connection's staging buffer;
 * DATA bytes (NGHTTP2_DATA_FLAG_NO_COPY) point straight into the message
 * and payload bufs, each pinned by a reference until the write completes.
 * A full batch (bytes, iovecs or staging room) answers
 * NGHTTP2_ERR_WOULDBLOCK, which bounds the memory per connection.
 *
 * Input: one reusable read buffer per connection fed to
 * nghttp2_session_mem_recv; DATA goes through the gRPC message parser
 * (rpc_wire.c), which copies each message once into a buf of its size.
 *
 * Re-entrancy: nothing user-visible runs inside nghttp2 callbacks. Client
 * completions and server requests ready for their handler are queued on
 * the connection and run by conn_pump() after nghttp2 returns; a callback
 * or handler may then call anything (new calls, close).
 *
 * Lifetimes: a client call lives until its callback has run and nghttp2
 * has closed its stream (whichever is later); a server request until it
 * is answered and its stream closed. A dead connection (read error, EOF,
 * protocol error, close) fails its calls at once with UNAVAILABLE, drops
 * the session and frees itself after uv_close.
 *
 * Failure detection (client connections): after connect a PING goes out
 * at once; then a tick on the connection's timer PINGs when calls are
 * outstanding and nothing was read for ping_busy_ms, or when idle for
 * ping_idle_ms. A PING unanswered while nothing at all was read for
 * ping_timeout_ms declares the connection dead: conn_fail (its calls
 * fail UNAVAILABLE now) and the peer's circuit opens (rpc_health.c). While the circuit is not closed,
 * calls fail at once; the channel's probe timer reconnects at the peer's
 * retry time and the PING answer closes the circuit. Every socket, client
 * and server, gets SO_KEEPALIVE and TCP_USER_TIMEOUT: the kernel's own
 * backstop, and the only one on the server side, which does not PING.
 *
 * Not done here: DNS (targets are numeric), TLS, compression, graceful
 * GOAWAY draining (a GOAWAY is treated as a lost connection).
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/loop.h"
#include "common/rpc_internal.h"

#define H2_WINDOW (32u << 20)       /* stream and connection receive window */
#define H2_READ_BYTES (64u << 10)
#define H2_STAGE_BYTES (64u << 10)  /* copied frame bytes per batch */
#define H2_BATCH_IOVS 256
#define H2_BATCH_BYTES (1u << 20)   /* total bytes per uv_write */

/* The body we send on a stream: prefixed message, then optionally the
 * payload as a second gRPC message. */
struct h2_body {
	struct buf *msg;          /* 5-byte prefix + packed protobuf */
	uint8_t pfx[GRPC_PREFIX_BYTES];
	struct buf_slice payload; /* .buf NULL: none */
	size_t off, total;        /* bytes handed to batches / all bytes */
	bool trailers;            /* server: grpc-status trailers after it */
};

struct h2_call;
struct h2_sreq;

struct h2_conn {
	uv_tcp_t tcp;
	uv_timer_t timer;              /* client: connect timeout, then health tick */
	uv_connect_t connect_req;
	uv_write_t wreq;
	nghttp2_session *sess;         /* NULL until connected */
	bool server, dead, writing, in_session, pumping;
	bool declared_dead;            /* client: failed by PING timeout */
	uint64_t last_rx_ms;           /* uv_now of the last bytes read */
	uint64_t ping_sent_ms;         /* uv_now of the PING unanswered, 0: none */
	uint64_t ping_sent_ns;         /* its uv_hrtime, for the RTT */
	int handles;                   /* libuv handles not yet closed */
	struct h2_chan *ch;            /* client */
	struct rpc_h2_server *hs;      /* server, while listed in hs->conns */
	struct rpc_server *srv;        /* server: a reference */
	struct h2_conn *prev, *next;   /* server: all connections */
	struct h2_call *streams;       /* client: calls with an open stream */
	struct h2_call *done_head, *done_tail;   /* client: to deliver */
	struct h2_sreq *sstreams;      /* server: requests with an open stream */
	struct h2_sreq *ready_head, *ready_tail; /* server: to dispatch */
	/* Output batch. */
	unsigned niov, nrefs;
	size_t batch_bytes, stage_len;
	uv_buf_t iov[H2_BATCH_IOVS];
	struct buf *refs[H2_BATCH_IOVS];
	uint8_t stage[H2_STAGE_BYTES];
	uint8_t rbuf[H2_READ_BYTES];
};

struct h2_chan {
	struct rpc_channel base;
	struct sockaddr_storage addr;
	struct h2_conn *conn;          /* connecting or connected, or NULL */
	struct h2_call *calls;         /* not yet completed */
	uv_timer_t probe_timer;        /* reconnect to a down peer at its retry time */
	bool probing;                  /* ch->conn is the peer's probe */
};

struct h2_call {
	struct h2_call *prev, *next;   /* ch->calls while not done */
	struct h2_call *sprev, *snext; /* conn->streams while stream_open */
	struct h2_call *dnext;         /* conn->done list */
	struct h2_chan *ch;
	struct h2_conn *conn;          /* while stream_open */
	int32_t stream_id;             /* 0: waiting for the connection */
	bool stream_open, done, delivered;
	rpc_call_cb cb;
	void *ud;
	const ProtobufCMessageDescriptor *out;
	struct rpc_dl dl;
	uint32_t timeout_ms;
	struct h2_body body;
	struct grpc_parser parser;
	int http_status;
	int grpc_status;               /* -1: none received */
	int status;                    /* final, once done */
	char message[RPC_MAX_MESSAGE_TEXT];
	char *path, *id;               /* point after the struct */
};

struct h2_sreq {
	struct rpc_req base;
	struct h2_sreq *sprev, *snext; /* conn->sstreams while stream_open */
	struct h2_sreq *rnext;         /* conn->ready list */
	struct h2_conn *conn;          /* NULL once the stream is gone */
	int32_t stream_id;
	enum { SR_READING, SR_READY, SR_HANDLER, SR_ANSWERED } state;
	bool stream_open;
	struct grpc_parser parser;
	struct h2_body body;
	char id[RPC_MAX_REQUEST_ID + 1];
};

struct rpc_h2_server {
	struct rpc_server *srv;
	uv_tcp_t listener;
	struct h2_conn *conns;
};

static void conn_pump(struct h2_conn *c);
static void conn_fail(struct h2_conn *c, const char *why);
static void sreq_stream_gone(struct h2_sreq *r);
static void sreq_free(struct h2_sreq *r);

/* ------------------------------------------------------------ lists */

#define DLIST_ADD(head, x, PREV, NEXT)        \
	do {                                  \
		(x)->PREV = NULL;             \
		(x)->NEXT = (head);           \
		if (head)                     \
			(head)->PREV = (x);   \
		(head) = (x);                 \
	} while (0)
#define DLIST_DEL(head, x, PREV, NEXT)                \
	do {                                          \
		if ((x)->PREV)                        \
			(x)->PREV->NEXT = (x)->NEXT;  \
		else                                  \
			(head) = (x)->NEXT;           \
		if ((x)->NEXT)                        \
			(x)->NEXT->PREV = (x)->PREV;  \
		(x)->PREV = (x)->NEXT = NULL;         \
	} while (0)

/* ------------------------------------------------------------ output */

static void body_init(struct h2_body *b, struct buf *msg, const struct buf_slice *payload)
{
	memset(b, 0, sizeof(*b));
	b->msg = msg;
	b->total = msg->len;
	if (payload && payload->buf) {
		b->payload = *payload;
		buf_ref(payload->buf);
		grpc_prefix_put(b->pfx, (uint32_t)payload->len);
		b->total += GRPC_PREFIX_BYTES + payload->len;
	}
}

static void body_free(struct h2_body *b)
{
	buf_unref(b->msg);
	buf_unref(b->payload.buf);
	b->msg = b->payload.buf = NULL;
}

static void stage_put(struct h2_conn *c, const uint8_t *p, size_t n)
{
	uint8_t *dst = c->stage + c->stage_len;
	memcpy(dst, p, n);
	uv_buf_t *last = c->niov ? &c->iov[c->niov - 1] : NULL;
	if (last && (uint8_t *)last->base + last->len == dst)
		last->len += n;
	else
		c->iov[c->niov++] = uv_buf_init((char *)dst, (unsigned)n);
	c->stage_len += n;
	c->batch_bytes += n;
}

static void ref_put(struct h2_conn *c, struct buf *b, const uint8_t *p, size_t n)
{
	c->refs[c->nrefs++] = buf_ref(b);
	c->iov[c->niov++] = uv_buf_init((char *)p, (unsigned)n);
	c->batch_bytes += n;
}

static void batch_release(struct h2_conn *c)
{
	for (unsigned i = 0; i < c->nrefs; i++)
		buf_unref(c->refs[i]);
	c->nrefs = c->niov = 0;
	c->batch_bytes = c->stage_len = 0;
}

static ssize_t on_send(nghttp2_session *s, const uint8_t *data, size_t len, int flags, void *ud)
{
	(void)s;
	(void)flags;
	struct h2_conn *c = ud;
	size_t room = H2_STAGE_BYTES - c->stage_len;
	if (c->batch_bytes >= H2_BATCH_BYTES || c->niov == H2_BATCH_IOVS)
		room = 0;
	if (room == 0)
		return NGHTTP2_ERR_WOULDBLOCK;
	size_t n = len < room ? len : room;
	stage_put(c, data, n);
	return (ssize_t)n;
}

/* Emit bytes [off, off + len) of the body: message, prefix, payload. */
static void body_emit(struct h2_conn *c, struct h2_body *b, size_t len)
{
	size_t off = b->off;
	b->off += len;
	while (len > 0) {
		size_t mlen = b->msg->len;
		if (off < mlen) {
			size_t n = mlen - off < len ? mlen - off : len;
			ref_put(c, b->msg, b->msg->data + off, n);
			off += n, len -= n;
		} else if (off < mlen + GRPC_PREFIX_BYTES) {
			size_t k = off - mlen, n = GRPC_PREFIX_BYTES - k < len ? GRPC_PREFIX_BYTES - k : len;
			stage_put(c, b->pfx + k, n);
			off += n, len -= n;
		} else {
			size_t k = off - mlen - GRPC_PREFIX_BYTES;
			ref_put(c, b->payload.buf, buf_slice_data(&b->payload) + k, len);
			len = 0;
		}
	}
}

static int on_send_data(nghttp2_session *s, nghttp2_frame *frame, const uint8_t *framehd,
			size_t length, nghttp2_data_source *src, void *ud)
{
	(void)s;
	struct h2_conn *c = ud;
	/* A DATA frame goes out whole: header + at most 3 segments. */
	if (H2_STAGE_BYTES - c->stage_len < 9 + GRPC_PREFIX_BYTES ||
	    c->niov + 4 > H2_BATCH_IOVS ||
	    (c->batch_bytes > 0 && c->batch_bytes + length > H2_BATCH_BYTES))
		return NGHTTP2_ERR_WOULDBLOCK;
	if (frame->data.padlen > 0)
		return NGHTTP2_ERR_CALLBACK_FAILURE; /* we never pad */
	stage_put(c, framehd, 9);
	body_emit(c, src->ptr, length);
	return 0;
}

static ssize_t on_read_body(nghttp2_session *s, int32_t stream_id, uint8_t *buf, size_t length,
			    uint32_t *flags, nghttp2_data_source *src, void *ud)
{
	(void)buf;
	(void)ud;
	struct h2_body *b = src->ptr;
	size_t left = b->total - b->off;
	size_t n = left < length ? left : length;
	*flags |= NGHTTP2_DATA_FLAG_NO_COPY;
	if (n == left) {
		*flags |= NGHTTP2_DATA_FLAG_EOF;
		if (b->trailers) {
			static const nghttp2_nv ok[] = {
				{ (uint8_t *)"grpc-status", (uint8_t *)"0", 11, 1, NGHTTP2_NV_FLAG_NONE },
			};
			*flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
			if (nghttp2_submit_trailer(s, stream_id, ok, 1) != 0)
				return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
		}
	}
	return (ssize_t)n;
}

static void on_write(uv_write_t *req, int status)
{
	struct h2_conn *c = req->data;
	c->writing = false;
	batch_release(c);
	if (c->dead)
		return;
	if (status < 0) {
		conn_fail(c, uv_strerror(status));
		return;
	}
	conn_pump(c);
}

/* ------------------------------------------------------------ connections */

static void conn_free(struct h2_conn *c)
{
	batch_release(c);
	if (c->ch)
		rpc_chan_unref(&c->ch->base);
	if (c->srv)
		rpc_server_unref(c->srv);
	free(c);
}

static void on_conn_handle_closed(uv_handle_t *h)
{
	struct h2_conn *c = h->data;
	if (--c->handles == 0)
		conn_free(c);
}

static struct h2_conn *conn_new(uv_loop_t *loop)
{
	struct h2_conn *c = malloc(sizeof(*c));
	if (!c)
		return NULL;
	memset(c, 0, offsetof(struct h2_conn, iov));
	if (uv_tcp_init(loop, &c->tcp)) {
		free(c);
		return NULL;
	}
	uv_timer_init(loop, &c->timer);
	c->tcp.data = c->timer.data = c->wreq.data = c->connect_req.data = c;
	c->handles = 2;
	return c;
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *out)
{
	(void)hint;
	struct h2_conn *c = h->data;
	*out = uv_buf_init((char *)c->rbuf, sizeof(c->rbuf));
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *b)
{
	(void)b;
	struct h2_conn *c = st->data;
	if (nread == 0 || c->dead)
		return;
	if (nread < 0) {
		conn_fail(c, nread == UV_EOF ? "connection closed by peer" : uv_strerror((int)nread));
		return;
	}
	c->last_rx_ms = uv_now(st->loop);
	c->in_session = true;
	ssize_t rv = nghttp2_session_mem_recv(c->sess, c->rbuf, (size_t)nread);
	c->in_session = false;
	if (rv < 0) {
		conn_fail(c, nghttp2_strerror((int)rv));
		return;
	}
	conn_pump(c);
}

/* Keepalive and TCP_USER_TIMEOUT: a peer that vanished (link down, host
 * gone) is dropped by the kernel even where nobody PINGs. Best effort: a
 * failure leaves the socket as it was. */
static void set_health_sockopts(struct h2_conn *c)
{
	struct rpc_health_opts h;
	rpc_health_defaults(&h);
	uv_os_fd_t fd;
	if (uv_fileno((uv_handle_t *)&c->tcp, &fd))
		return;
	uv_tcp_keepalive(&c->tcp, 1, h.keepalive_idle_s);
	int intvl = (int)h.keepalive_intvl_s, cnt = (int)h.keepalive_cnt;
	unsigned int uto = h.user_timeout_ms;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &uto, sizeof(uto));
}

static int session_start(struct h2_conn *c, const nghttp2_session_callbacks *cbs, uint32_t streams)
{
	int rv = c->server ? nghttp2_session_server_new(&c->sess, cbs, c)
			   : nghttp2_session_client_new(&c->sess, cbs, c);
	if (rv)
		return -ENOMEM;
	nghttp2_settings_entry iv[] = {
		{ NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, streams },
		{ NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, H2_WINDOW },
		{ NGHTTP2_SETTINGS_ENABLE_PUSH, 0 },
	};
	rv = nghttp2_submit_settings(c->sess, NGHTTP2_FLAG_NONE, iv, c->server ? 2 : 3);
	/* SETTINGS covers streams only: open the connection window too. */
	if (!rv)
		rv = nghttp2_session_set_local_window_size(c->sess, NGHTTP2_FLAG_NONE, 0, H2_WINDOW);
	if (rv)
		return -EPROTO;
	uv_tcp_nodelay(&c->tcp, 1);
	set_health_sockopts(c);
	rv = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
	return rv;
}

static void run_done(struct h2_conn *c);
static void run_ready(struct h2_conn *c);

/* Run what callbacks queued, then let nghttp2 write; repeat until quiet.
 * Never inside nghttp2; re-entry (from a user callback) is absorbed by the
 * outer pump. */
static void conn_pump(struct h2_conn *c)
{
	if (c->in_session || c->pumping || !c->sess)
		return;
	c->pumping = true;
	while (!c->dead) {
		if (c->server)
			run_ready(c);
		else
			run_done(c);
		if (c->dead)
			break;
		if (!c->writing) {
			c->in_session = true;
			int rv = nghttp2_session_send(c->sess);
			c->in_session = false;
			if (rv) {
				c->pumping = false;
				conn_fail(c, nghttp2_strerror(rv));
				return;
			}
			if (c->niov) {
				int wr = uv_write(&c->wreq, (uv_stream_t *)&c->tcp, c->iov, c->niov,
						  on_write);
				if (wr) {
					c->pumping = false;
					conn_fail(c, uv_strerror(wr));
					return;
				}
				c->writing = true;
			} else if (!nghttp2_session_want_read(c->sess) &&
				   !nghttp2_session_want_write(c->sess)) {
				c->pumping = false;
				conn_fail(c, "session finished");
				return;
			}
		}
		if (!c->done_head && !c->ready_head)
			break;
	}
	c->pumping = false;
}

/* ------------------------------------------------------------ client calls */

static void call_free(struct h2_call *call)
{
	body_free(&call->body);
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

static void run_done(struct h2_conn *c)
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
		conn_pump(c);
}

static int call_submit(struct h2_conn *c, struct h2_call *call)
{
	char tmo[16];
	size_t tlen = call->timeout_ms ? grpc_timeout_format(tmo, call->timeout_ms) : 0;
	const char *auth = call->ch->base.target_str;
#define NV(n, v, vl) { (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, (vl), NGHTTP2_NV_FLAG_NO_COPY_NAME }
	nghttp2_nv nva[8] = {
		NV(":method", "POST", 4),
		NV(":scheme", "http", 4),
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
#undef NV
	nghttp2_data_provider dp = { .source.ptr = &call->body, .read_callback = on_read_body };
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

static bool name_is(const uint8_t *name, size_t len, const char *lit)
{
	return strlen(lit) == len && memcmp(name, lit, len) == 0;
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
	if (name_is(name, namelen, ":status")) {
		call->http_status = atoi((const char *)value); /* nghttp2 checked: 3 digits */
	} else if (name_is(name, namelen, "grpc-status")) {
		int st = 0;
		for (size_t i = 0; i < valuelen && i < 4; i++)
			st = value[i] >= '0' && value[i] <= '9' ? st * 10 + value[i] - '0' : 9999;
		call->grpc_status = valuelen == 0 || st > 9999 ? RPC_UNKNOWN : st;
	} else if (name_is(name, namelen, "grpc-message")) {
		grpc_message_decode(value, valuelen, call->message, sizeof(call->message));
	}
	return 0;
}

static int cl_on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data,
		      size_t len, void *ud)
{
	(void)flags;
	(void)ud;
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

static nghttp2_session_callbacks *make_callbacks(bool server);

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
		conn_pump(c);
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
static void conn_fail(struct h2_conn *c, const char *why)
{
	if (c->dead)
		return;
	c->dead = true;
	uv_read_stop((uv_stream_t *)&c->tcp);
	uv_timer_stop(&c->timer);
	if (!c->server) {
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
		run_done(c);
		char msg[160];
		snprintf(msg, sizeof(msg), "connection to %s lost: %s", ch->base.target_str, why);
		/* One connection per channel: every pending call rode on it. A
		 * callback may close the channel; ch stays valid (conn holds a
		 * reference) and the list just empties. */
		while (ch->calls)
			call_finish(ch->calls, RPC_UNAVAILABLE, msg);
		while (c->streams)
			call_stream_gone(c->streams);
	} else {
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
	}
	if (c->sess) {
		nghttp2_session_del(c->sess);
		c->sess = NULL;
	}
	uv_close((uv_handle_t *)&c->tcp, on_conn_handle_closed);
	uv_close((uv_handle_t *)&c->timer, on_conn_handle_closed);
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
		conn_fail(c, why);
		return;
	}
	uint64_t quiet = now - c->last_rx_ms;
	if ((c->streams && quiet >= o->ping_busy_ms) || quiet >= o->ping_idle_ms) {
		conn_ping(c);
		conn_pump(c);
	}
}

static void on_connect_timeout(uv_timer_t *t)
{
	conn_fail(t->data, "connect timeout");
}

static void on_connect(uv_connect_t *req, int status)
{
	struct h2_conn *c = req->data;
	if (c->dead)
		return;
	if (status < 0) {
		conn_fail(c, uv_strerror(status));
		return;
	}
	uv_timer_stop(&c->timer);
	nghttp2_session_callbacks *cbs = make_callbacks(false);
	int rc = cbs ? session_start(c, cbs, 0) : -ENOMEM;
	nghttp2_session_callbacks_del(cbs);
	if (rc) {
		conn_fail(c, "cannot start HTTP/2 session");
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
	while (last && last->next)
		last = last->next;
	for (struct h2_call *call = last, *prev; call; call = prev) {
		prev = call->prev;
		if (call->stream_id == 0 && call_submit(c, call))
			call_finish(call, RPC_UNAVAILABLE, "cannot submit request");
	}
	conn_pump(c);
}

static struct h2_conn *chan_connect(struct h2_chan *ch)
{
	struct h2_conn *c = conn_new(ch->base.loop);
	if (!c)
		return NULL;
	c->ch = ch;
	ch->base.refs++;
	int rc = uv_tcp_connect(&c->connect_req, &c->tcp, (struct sockaddr *)&ch->addr, on_connect);
	if (rc) {
		c->dead = true; /* nothing to fail yet: callers see the NULL */
		uv_close((uv_handle_t *)&c->tcp, on_conn_handle_closed);
		uv_close((uv_handle_t *)&c->timer, on_conn_handle_closed);
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
	if (base->peer && rpc_peer_load(base->peer) != RPC_PEER_UP) {
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
	call->timeout_ms = a->timeout_ms;
	call->grpc_status = -1;
	body_init(&call->body, a->req, &a->payload);
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
		if (!(c = chan_connect(ch)))
			goto fail_call;
	}
	if (c->sess && call_submit(c, call)) {
		why = "cannot submit request";
		status = RPC_UNAVAILABLE;
		goto fail_call;
	}
	DLIST_ADD(ch->calls, call, prev, next);
	if (c->sess)
		conn_pump(c);
	return;

fail_call:
	rpc_dl_del(base, &call->dl);
	call_free(call);
fail:
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
		run_done(c); /* finished calls keep their outcome */
	while (ch->calls)
		call_finish(ch->calls, RPC_CANCELLED, "channel closed");
	if (c)
		conn_fail(c, "channel closed");
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

/* ------------------------------------------------------------ server */

static void sreq_free(struct h2_sreq *r)
{
	struct rpc_server *srv = r->base.srv;
	rpc_req_release(&r->base);
	grpc_parser_reset(&r->parser);
	body_free(&r->body);
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
#define NV(n, v, vl) { (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, (vl), NGHTTP2_NV_FLAG_NO_COPY_NAME }
	nghttp2_nv nva[4] = {
		NV(":status", "200", 3),
		NV("content-type", "application/grpc", 16),
		NV("grpc-status", st, stlen),
		NV("grpc-message", enc, elen),
	};
#undef NV
	if (status != RPC_OK)
		return nghttp2_submit_response(s, r->stream_id, nva, elen ? 4 : 3, NULL);
	r->body.trailers = true;
	nghttp2_data_provider dp = { .source.ptr = &r->body, .read_callback = on_read_body };
	return nghttp2_submit_response(s, r->stream_id, nva, 2, &dp);
}

static void sreq_answer(struct rpc_req *base, int status, const char *message, struct buf *resp,
			const struct buf_slice *payload)
{
	struct h2_sreq *r = (struct h2_sreq *)base;
	struct h2_conn *c = r->conn;
	r->state = SR_ANSWERED;
	if (resp)
		body_init(&r->body, resp, payload); /* refs payload before release */
	rpc_req_release(base);
	if (!r->stream_open) {
		sreq_free(r);
		return;
	}
	if (sreq_submit(r, resp ? RPC_OK : status, message) != 0) {
		nghttp2_submit_rst_stream(c->sess, NGHTTP2_FLAG_NONE, r->stream_id,
					  NGHTTP2_INTERNAL_ERROR);
	}
	conn_pump(c); /* no-op inside nghttp2: the outer pump sends it */
}

static bool sreq_gone(const struct rpc_req *base)
{
	return !((const struct h2_sreq *)base)->stream_open;
}

static const struct rpc_req_ops h2_req_ops = {
	.answer = sreq_answer,
	.gone = sreq_gone,
};

static void run_ready(struct h2_conn *c)
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
		rpc_req_dispatch(&r->base, m->data, m->len); /* may free r */
		buf_unref(m);
	}
}

static struct h2_sreq *stream_sreq(nghttp2_session *s, int32_t id)
{
	struct h2_sreq *r = nghttp2_session_get_stream_user_data(s, id);
	return r && r->state == SR_READING ? r : NULL;
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
	if (name_is(name, namelen, ":path")) {
		r->base.m = rpc_server_find_path(c->hs->srv, value, valuelen);
	} else if (name_is(name, namelen, "grpc-timeout")) {
		uint64_t ms;
		if (grpc_timeout_parse(value, valuelen, &ms) == 0)
			r->base.deadline_ms = loop_now_ms() + ms;
	} else if (name_is(name, namelen, "x-request-id")) {
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
	(void)ud;
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

static int sv_on_frame(nghttp2_session *s, const nghttp2_frame *f, void *ud)
{
	struct h2_conn *c = ud;
	if ((f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA) ||
	    !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
		return 0;
	struct h2_sreq *r = stream_sreq(s, f->hd.stream_id);
	if (!r)
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

static nghttp2_session_callbacks *make_callbacks(bool server)
{
	nghttp2_session_callbacks *cbs;
	if (nghttp2_session_callbacks_new(&cbs))
		return NULL;
	nghttp2_session_callbacks_set_send_callback(cbs, on_send);
	nghttp2_session_callbacks_set_send_data_callback(cbs, on_send_data);
	if (server) {
		nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, sv_on_begin);
		nghttp2_session_callbacks_set_on_header_callback(cbs, sv_on_header);
		nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, sv_on_data);
		nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, sv_on_frame);
		nghttp2_session_callbacks_set_on_stream_close_callback(cbs, sv_on_close);
	} else {
		nghttp2_session_callbacks_set_on_header_callback(cbs, cl_on_header);
		nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, cl_on_data);
		nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, cl_on_frame);
		nghttp2_session_callbacks_set_on_stream_close_callback(cbs, cl_on_close);
		nghttp2_session_callbacks_set_on_frame_not_send_callback(cbs, cl_on_not_send);
	}
	return cbs;
}

static void on_connection(uv_stream_t *l, int status)
{
	struct rpc_h2_server *hs = l->data;
	if (status < 0)
		return; /* EMFILE and the like: the next accept may work */
	struct h2_conn *c = conn_new(l->loop);
	if (!c)
		return;
	c->server = true;
	c->hs = hs;
	c->srv = hs->srv;
	rpc_server_ref(hs->srv);
	DLIST_ADD(hs->conns, c, prev, next);
	if (uv_accept(l, (uv_stream_t *)&c->tcp)) {
		conn_fail(c, "accept failed");
		return;
	}
	nghttp2_session_callbacks *cbs = make_callbacks(true);
	int rc = cbs ? session_start(c, cbs, hs->srv->opts.max_streams) : -ENOMEM;
	nghttp2_session_callbacks_del(cbs);
	if (rc) {
		conn_fail(c, "cannot start HTTP/2 session");
		return;
	}
	conn_pump(c);
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
	if (!srv->h2)
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
		conn_fail(hs->conns, "server closing");
	uv_close((uv_handle_t *)&hs->listener, on_listener_closed);
}
