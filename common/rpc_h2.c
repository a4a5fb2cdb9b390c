/*
 * rpc_h2.c — the gRPC-over-HTTP/2 (cleartext) transport: nghttp2 sessions
 * over libuv TCP, for channels ("host:port") and for servers. This file is
 * the connection core both halves share (output batches, reads, the pump,
 * a dead connection); calls and channels are rpc_h2_client.c, requests and
 * the listener rpc_h2_server.c, their shared structs rpc_h2_int.h.
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
 * NGHTTP2_ERR_WOULDBLOCK, which bounds the memory per connection. DATA
 * frames are as large as the peer's SETTINGS_MAX_FRAME_SIZE (ours is
 * H2_FRAME_BYTES), not nghttp2's 16 KiB: fewer frames per large payload.
 *
 * Input: one reusable read buffer per connection fed to
 * nghttp2_session_mem_recv; DATA goes through the gRPC message parser
 * (rpc_wire.c), which copies each message once into a buf of its size.
 * Except in place: while inside a DATA frame (its header seen, tracked by
 * on_begin_frame and the data chunk callbacks) whose stream's parser is
 * filling a large message, the next read goes straight into that
 * message's buf, as many bytes as are left of both; nghttp2 is fed from
 * there and the parser, handed its own bytes, copies nothing. Whatever the
 * bytes turn out to be, nghttp2 still parses them all and the parser
 * moves (memmove) what is not in place, so the tracking decides only the
 * speed; the message's buf is referenced from the read to the end of its
 * parsing. Not under TLS (the ciphertext needs decrypting anyway).
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
 * retry time and the PING answer closes the circuit. Past that time, a
 * call on a channel with no connection begins the probe itself and rides
 * it (a channel opened after the one that saw the failure was closed has
 * no timer armed: its call must not fail on stale knowledge). Every socket, client
 * and server, gets SO_KEEPALIVE and TCP_USER_TIMEOUT: the kernel's own
 * backstop, and the only one on the server side, which does not PING.
 *
 * TLS (optional, mutual; identities in rpc_tls.c, the codec common/tls.c)
 * sits under the framing: see "TLS" below.
 *
 * Not done here: DNS (targets are numeric), compression, graceful
 * GOAWAY draining (a GOAWAY is treated as a lost connection).
 */
#include "common/rpc_h2_int.h"

/* ------------------------------------------------------------ output */

void h2_body_init(struct h2_body *b, struct buf *msg, const struct buf_slice *payload)
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

void h2_body_free(struct h2_body *b)
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

/* DATA frames as large as the peer takes (its SETTINGS_MAX_FRAME_SIZE;
 * nghttp2 alone stops at 16 KiB): a 4 MiB payload is 16 frames, not 256,
 * on both sides (issue 19). nghttp2 clamps this to the flow windows. */
static ssize_t on_data_length(nghttp2_session *s, uint8_t type, int32_t stream_id,
			      int32_t conn_window, int32_t stream_window, uint32_t peer_max,
			      void *ud)
{
	(void)s;
	(void)type;
	(void)stream_id;
	(void)conn_window;
	(void)stream_window;
	(void)ud;
	return (ssize_t)peer_max;
}

ssize_t h2_on_read_body(nghttp2_session *s, int32_t stream_id, uint8_t *buf, size_t length,
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

static int tls_flush(struct h2_conn *c);

static void on_write(uv_write_t *req, int status)
{
	struct h2_conn *c = req->data;
	c->writing = false;
	batch_release(c);
	if (c->tls_wbuf) {
		tls_conn_recycle(c->tls, c->tls_wbuf, c->tls_wcap);
		c->tls_wbuf = NULL;
	}
	if (c->dead)
		return;
	if (status < 0) {
		h2_conn_fail(c, uv_strerror(status));
		return;
	}
	if (c->tls && !c->sess) { /* still in the handshake */
		int wr = tls_flush(c);
		if (wr)
			h2_conn_fail(c, uv_strerror(wr));
		return;
	}
	h2_conn_pump(c);
}
bool h2_name_is(const uint8_t *name, size_t len, const char *lit)
{
	return strlen(lit) == len && memcmp(name, lit, len) == 0;
}

/* ------------------------------------------------------------ connections */

static void conn_free(struct h2_conn *c)
{
	buf_unref(c->rx_direct);
	batch_release(c);
	free(c->tls_wbuf);
	tls_conn_free(c->tls);
	if (c->ch)
		rpc_chan_unref(&c->ch->base);
	if (c->srv) {
		if (c->data) {
			if (c->srv->opts.conn_data_free)
				c->srv->opts.conn_data_free(c->data);
			else
				free(c->data);
		}
		rpc_server_unref(c->srv);
	}
	free(c);
}

void h2_on_conn_handle_closed(uv_handle_t *h)
{
	struct h2_conn *c = h->data;
	if (--c->handles == 0)
		conn_free(c);
}

struct h2_conn *h2_conn_new(uv_loop_t *loop)
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
	uv_check_init(loop, &c->kick);
	uv_idle_init(loop, &c->kick_idle);
	c->tcp.data = c->timer.data = c->wreq.data = c->connect_req.data = c;
	c->kick.data = c->kick_idle.data = c;
	c->handles = H2_CONN_HANDLES;
	return c;
}

void h2_conn_close_handles(struct h2_conn *c)
{
	uv_close((uv_handle_t *)&c->tcp, h2_on_conn_handle_closed);
	uv_close((uv_handle_t *)&c->timer, h2_on_conn_handle_closed);
	uv_close((uv_handle_t *)&c->kick, h2_on_conn_handle_closed);
	uv_close((uv_handle_t *)&c->kick_idle, h2_on_conn_handle_closed);
}

#define H2_DIRECT_MIN 4096 /* fewer bytes left: read them with the rest */

static int on_begin_frame(nghttp2_session *s, const nghttp2_frame_hd *hd, void *ud)
{
	(void)s;
	struct h2_conn *c = ud;
	bool data = hd->type == NGHTTP2_DATA && !(hd->flags & NGHTTP2_FLAG_PADDED);
	c->rx_stream = data ? hd->stream_id : 0;
	c->rx_left = data ? hd->length : 0;
	return 0;
}

void h2_rx_data(struct h2_conn *c, size_t len)
{
	c->rx_left = len < c->rx_left ? c->rx_left - len : 0;
}

/* The message the next read may land in (see "Input"), and how many bytes. */
static struct buf *rx_target(struct h2_conn *c, size_t *n)
{
	if (c->tls || !c->sess || c->dead || !c->rx_stream || c->rx_left < H2_DIRECT_MIN)
		return NULL;
	struct grpc_parser *p = c->server ? h2_server_parser(c, c->rx_stream)
					  : h2_client_parser(c, c->rx_stream);
	if (!p || !p->cur || p->cur->cap - p->cur->len < H2_DIRECT_MIN)
		return NULL;
	size_t room = p->cur->cap - p->cur->len;
	*n = room < c->rx_left ? room : c->rx_left;
	return p->cur;
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *out)
{
	(void)hint;
	struct h2_conn *c = h->data;
	size_t n;
	struct buf *m = rx_target(c, &n);
	buf_unref(c->rx_direct); /* an alloc without its read: not seen, but harmless */
	c->rx_direct = NULL;
	if (m) {
		c->rx_direct = buf_ref(m);
		*out = uv_buf_init((char *)m->data + m->len, (unsigned)n);
		return;
	}
	*out = uv_buf_init((char *)c->rbuf, sizeof(c->rbuf));
}

static void tls_input(struct h2_conn *c, size_t n);

static void read_input(struct h2_conn *c, ssize_t nread, const uint8_t *data)
{
	if (nread == 0 || c->dead)
		return;
	if (nread < 0) {
		if (c->tls && !c->tls_up && !c->server)
			rpc_tls_client_failed(c->ch->base.target_str, "the server closed the connection "
					      "during the TLS handshake");
		h2_conn_fail(c, nread == UV_EOF ? "connection closed by peer" : uv_strerror((int)nread));
		return;
	}
	c->last_rx_ms = uv_now(c->tcp.loop);
	if (c->tls) {
		tls_input(c, (size_t)nread);
		return;
	}
	c->in_session = true;
	ssize_t rv = nghttp2_session_mem_recv(c->sess, data, (size_t)nread);
	c->in_session = false;
	if (rv < 0) {
		h2_conn_fail(c, nghttp2_strerror((int)rv));
		return;
	}
	h2_conn_pump(c);
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *b)
{
	struct h2_conn *c = st->data;
	/* Read into a message (rx_target): its buf lives until parsed. */
	struct buf *direct = c->rx_direct;
	c->rx_direct = NULL;
	read_input(c, nread, (const uint8_t *)b->base);
	buf_unref(direct);
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

int h2_session_start(struct h2_conn *c, const nghttp2_session_callbacks *cbs, uint32_t streams)
{
	int rv = c->server ? nghttp2_session_server_new(&c->sess, cbs, c)
			   : nghttp2_session_client_new(&c->sess, cbs, c);
	if (rv)
		return -ENOMEM;
	nghttp2_settings_entry iv[] = {
		{ NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, streams },
		{ NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, H2_WINDOW },
		{ NGHTTP2_SETTINGS_MAX_FRAME_SIZE, H2_FRAME_BYTES },
		{ NGHTTP2_SETTINGS_ENABLE_PUSH, 0 },
	};
	rv = nghttp2_submit_settings(c->sess, NGHTTP2_FLAG_NONE, iv, c->server ? 3 : 4);
	/* SETTINGS covers streams only: open the connection window too. */
	if (!rv)
		rv = nghttp2_session_set_local_window_size(c->sess, NGHTTP2_FLAG_NONE, 0, H2_WINDOW);
	if (rv)
		return -EPROTO;
	if (c->tls)
		return 0; /* reading since h2_tls_start */
	uv_tcp_nodelay(&c->tcp, 1);
	set_health_sockopts(c);
	rv = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
	return rv;
}

/* ------------------------------------------------------------ TLS
 *
 * With TLS the connection runs the codec of common/tls.c under nghttp2:
 * what uv_read returns is fed in and the plaintext comes out into the
 * same read buffer (the feed copied it) for nghttp2_session_mem_recv; on
 * the way out a batch (nghttp2's frames and the DATA bytes it points at)
 * is encrypted as a whole, its references dropped at once, and the
 * ciphertext goes out as one uv_write — still one write in flight. */

/* Write the ciphertext waiting, unless a write is in flight (on_write
 * comes back here through the pump). 0 or a libuv error. */
static int tls_flush(struct h2_conn *c)
{
	if (c->writing || !tls_conn_pending(c->tls))
		return 0;
	size_t len, cap;
	char *p = tls_conn_take_all(c->tls, &len, &cap);
	if (!p)
		return 0;
	c->tls_wbuf = p;
	c->tls_wcap = cap;
	uv_buf_t b = uv_buf_init(p, (unsigned)len);
	int wr = uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, on_write);
	if (wr)
		return wr;
	c->writing = true;
	return 0;
}

/* Encrypt the batch: small pieces (frame headers, SETTINGS, small
 * messages) are gathered into whole records, large ones go straight in. */
static int tls_seal(struct h2_conn *c)
{
	uint8_t small[16384];
	size_t have = 0;
	int rc = 0;
	for (unsigned i = 0; i < c->niov && !rc; i++) {
		const uv_buf_t *v = &c->iov[i];
		if (v->len <= sizeof(small) - have && v->len < 4096) {
			memcpy(small + have, v->base, v->len);
			have += v->len;
			continue;
		}
		if (have)
			rc = tls_conn_write(c->tls, small, have);
		have = 0;
		if (!rc)
			rc = tls_conn_write(c->tls, v->base, v->len);
	}
	if (have && !rc)
		rc = tls_conn_write(c->tls, small, have);
	batch_release(c);
	return rc;
}

/* Send a fatal alert if one is queued, without waiting: the peer learns
 * why before the close. */
static void tls_send_alert(struct h2_conn *c)
{
	if (c->writing || !tls_conn_pending(c->tls))
		return;
	char buf[512];
	size_t n = tls_conn_take(c->tls, buf, sizeof(buf));
	uv_buf_t b = uv_buf_init(buf, (unsigned)n);
	(void)uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
}

static void tls_failed(struct h2_conn *c, bool plaintext, const char *why)
{
	char msg[256];
	if (c->server) {
		rpc_tls_refused(plaintext ? RPC_TLS_REFUSED_PLAINTEXT : RPC_TLS_REFUSED_HANDSHAKE,
				c->peer, why);
		tls_send_alert(c);
	} else {
		rpc_tls_client_failed(c->ch->base.target_str, why);
	}
	snprintf(msg, sizeof(msg), "TLS: %s", why);
	h2_conn_fail(c, msg);
}

static void tls_input(struct h2_conn *c, size_t n)
{
	if (c->server && !c->tls_seen) {
		c->tls_seen = true;
		if (rpc_tls_is_plaintext(c->rbuf[0])) {
			tls_failed(c, true, "not TLS (plaintext HTTP/2 or another protocol)");
			return;
		}
	}
	if (tls_conn_feed(c->tls, c->rbuf, n)) {
		h2_conn_fail(c, "out of memory");
		return;
	}
	if (c->tls_up && tls_conn_revoked(c->tls)) {
		/* A reload's CRL lists the peer: drop it (issue 16). */
		if (c->server)
			rpc_tls_refused(RPC_TLS_REFUSED_REVOKED, c->peer, "certificate revoked");
		h2_conn_fail(c, "TLS: the peer's certificate was revoked");
		return;
	}
	for (;;) {
		ssize_t m = tls_conn_read(c->tls, c->rbuf, sizeof(c->rbuf));
		if (!c->tls_up && tls_conn_handshake_done(c->tls)) {
			char why[320];
			if (rpc_tls_conn_ready(c->tls, c->server, why, sizeof(why))) {
				tls_failed(c, false, why);
				return;
			}
			/* Issue 16: each side knows its peer's roles from here on
			 * (the server checks calls, the client the server's role). */
			if (rpc_tls_conn_peer(c->hs_tls, c->tls, &c->tls_peer, why, sizeof(why))) {
				if (c->server)
					rpc_tls_refused(RPC_TLS_REFUSED_ROLE, c->peer, why);
				else
					rpc_tls_server_role_refused(c->ch->base.target_str, why);
				tls_send_alert(c);
				h2_conn_fail(c, c->server ? "TLS: certificate role" : why);
				return;
			}
			c->tls_up = true;
			if (c->server)
				uv_timer_stop(&c->timer); /* the handshake deadline */
			if (c->server)
				h2_server_tls_up(c);
			else
				h2_client_tls_up(c);
			if (c->dead)
				return;
		}
		if (m > 0) {
			if (!c->sess) {
				h2_conn_fail(c, "TLS: data before the handshake finished");
				return;
			}
			c->in_session = true;
			ssize_t rv = nghttp2_session_mem_recv(c->sess, c->rbuf, (size_t)m);
			c->in_session = false;
			if (rv < 0) {
				h2_conn_fail(c, nghttp2_strerror((int)rv));
				return;
			}
			if (c->dead)
				return;
			continue;
		}
		if (m == 0)
			break;
		if (m == TLS_EOF) {
			h2_conn_fail(c, "connection closed by peer (TLS close_notify)");
			return;
		}
		tls_failed(c, false, tls_conn_error(c->tls));
		return;
	}
	if (c->sess) {
		h2_conn_pump(c);
	} else {
		int wr = tls_flush(c);
		if (wr)
			h2_conn_fail(c, uv_strerror(wr));
	}
}

static void on_tls_handshake_timeout(uv_timer_t *t)
{
	struct h2_conn *c = t->data;
	tls_failed(c, false, "no TLS handshake within the deadline");
}

#define H2_TLS_HANDSHAKE_MS 10000 /* server: a peer that connects and stalls */

int h2_tls_start(struct h2_conn *c, struct rpc_tls *t)
{
	c->tls = rpc_tls_conn_new(t, c->server);
	if (!c->tls)
		return -ENOMEM;
	c->hs_tls = t;
	if (c->server) {
		struct sockaddr_storage ss;
		int len = sizeof(ss);
		char host[INET6_ADDRSTRLEN] = "?";
		int port = 0;
		if (!uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len)) {
			if (ss.ss_family == AF_INET6) {
				uv_ip6_name((struct sockaddr_in6 *)&ss, host, sizeof(host));
				port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
			} else {
				uv_ip4_name((struct sockaddr_in *)&ss, host, sizeof(host));
				port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
			}
		}
		snprintf(c->peer, sizeof(c->peer), "%s:%d", host, port);
		uv_timer_start(&c->timer, on_tls_handshake_timeout, H2_TLS_HANDSHAKE_MS, 0);
	}
	uv_tcp_nodelay(&c->tcp, 1);
	set_health_sockopts(c);
	int rc = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
	if (rc)
		return rc;
	if (!c->server) {
		/* The first read queues the ClientHello. */
		ssize_t m = tls_conn_read(c->tls, c->rbuf, sizeof(c->rbuf));
		if (m < 0)
			return -EPROTO;
		return tls_flush(c);
	}
	return 0;
}


/* Run what callbacks queued, then let nghttp2 write; repeat until quiet.
 * Never inside nghttp2; re-entry (from a user callback) is absorbed by the
 * outer pump. */
void h2_conn_pump(struct h2_conn *c)
{
	if (c->in_session || c->pumping || !c->sess)
		return;
	c->pumping = true;
	while (!c->dead) {
		if (c->server)
			h2_run_ready(c);
		else
			h2_run_done(c);
		if (c->dead)
			break;
		if (!c->writing) {
			c->in_session = true;
			int rv = nghttp2_session_send(c->sess);
			c->in_session = false;
			if (rv) {
				c->pumping = false;
				h2_conn_fail(c, nghttp2_strerror(rv));
				return;
			}
			if (c->tls && c->niov && tls_seal(c)) {
				c->pumping = false;
				h2_conn_fail(c, "TLS: cannot encrypt");
				return;
			}
			if (c->tls && tls_conn_pending(c->tls)) {
				int wr = tls_flush(c);
				if (wr) {
					c->pumping = false;
					h2_conn_fail(c, uv_strerror(wr));
					return;
				}
			} else if (c->niov) {
				int wr = uv_write(&c->wreq, (uv_stream_t *)&c->tcp, c->iov, c->niov,
						  on_write);
				if (wr) {
					c->pumping = false;
					h2_conn_fail(c, uv_strerror(wr));
					return;
				}
				c->writing = true;
			} else if (!nghttp2_session_want_read(c->sess) &&
				   !nghttp2_session_want_write(c->sess)) {
				c->pumping = false;
				h2_conn_fail(c, "session finished");
				return;
			}
		}
		if (!c->done_head && !c->ready_head)
			break;
	}
	c->pumping = false;
}
static void on_kick_idle(uv_idle_t *h)
{
	(void)h;   /* its being active is its job */
}

static void on_kick(uv_check_t *h)
{
	struct h2_conn *c = h->data;
	uv_check_stop(&c->kick);
	uv_idle_stop(&c->kick_idle);
	h2_conn_pump(c);
}

void h2_conn_kick(struct h2_conn *c)
{
	if (c->dead || c->in_session || c->pumping || uv_is_active((uv_handle_t *)&c->kick))
		return;
	uv_check_start(&c->kick, on_kick);
	uv_idle_start(&c->kick_idle, on_kick_idle);
}

void h2_conn_fail(struct h2_conn *c, const char *why)
{
	if (c->dead)
		return;
	c->dead = true;
	uv_read_stop((uv_stream_t *)&c->tcp);
	uv_timer_stop(&c->timer);
	if (c->server)
		h2_server_conn_lost(c);
	else
		h2_client_conn_lost(c, why);
	if (c->sess) {
		nghttp2_session_del(c->sess);
		c->sess = NULL;
	}
	h2_conn_close_handles(c);
}

/* New session callbacks with the output side set (both halves add theirs).
 * NULL on out-of-memory. */
nghttp2_session_callbacks *h2_callbacks_new(void)
{
	nghttp2_session_callbacks *cbs;
	if (nghttp2_session_callbacks_new(&cbs))
		return NULL;
	nghttp2_session_callbacks_set_send_callback(cbs, on_send);
	nghttp2_session_callbacks_set_send_data_callback(cbs, on_send_data);
	nghttp2_session_callbacks_set_data_source_read_length_callback(cbs, on_data_length);
	nghttp2_session_callbacks_set_on_begin_frame_callback(cbs, on_begin_frame);
	return cbs;
}

