/*
 * http.c — HTTP/1.1 server on libuv, the connection side: the pool of
 * connections, accepting (and deferring when the pool is empty), reading
 * and feeding http_parse, handing heads and bodies to the handler,
 * timeouts, lingering close (the server's start and close are
 * http_server.c's; a connection accepted on another loop is adopted here:
 * http_server_adopt). Responses are
 * http_resp.c's, the server's own answers (bad heads, rate-limit
 * refusals, plain HTTP on a TLS port) http_refuse.c's; what they share is
 * http_int.h. See http.h for the model.
 *
 * Connection states (c->phase):
 *   ACTIVE   reading requests / serving an exchange
 *   LINGER   response done, but the client may still be sending (an unread
 *            body, garbage after a 400): we shut down our side and read and
 *            discard for a little while, so that closing does not RST the
 *            response away before the client read it (nginx's lingering
 *            close)
 *   CLOSING  uv_close issued on tcp and timer; freed in the last close cb
 *
 * Parsing never runs inside a handler call: http_resume and the end of an
 * exchange put the connection on the server's kick list, drained by a
 * uv_idle callback (which first completes the writes http_resp.c finished
 * at once).
 *
 * TLS (cfg.tls): ciphertext read from the socket goes into the
 * connection's tls_conn (common/tls.h) and comes out as plaintext in
 * rbuf, decrypted only as far as rbuf has room; the socket is read again
 * only once the TLS state holds nothing unconsumed, so back-pressure works
 * as in plain. Writes are encrypted in conn_submit (http_resp.c). The
 * header timeout runs from accept through the handshake to the end of the
 * first head. A first byte that cannot start a TLS record (plain HTTP) is
 * answered with a plain 400.
 *
 * Per-address limits (cfg.limit, gateway/http_limit.h) are checked at
 * accept (connections) and at each request head before the handler sees
 * it (rate), so refused requests cost no SigV4 work.
 *
 * Thread: the server's loop.
 */
#include "gateway/http.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/loop.h"
#include "common/metrics.h"
#include "gateway/http_int.h"
#include "common/tls.h"

#define LINGER_MS 2000
#define LINGER_MAX_BYTES (1u << 20)

static void process(struct conn *c);
static void on_kick(uv_idle_t *h);
static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b);


/* ------------------------------------------------------------ utils */

static void limit_lock(struct http_server *srv)
{
	if (srv->limit_mu)
		pthread_mutex_lock(srv->limit_mu);
}

static void limit_unlock(struct http_server *srv)
{
	if (srv->limit_mu)
		pthread_mutex_unlock(srv->limit_mu);
}

/* x-amz-request-id: 16 hex chars, unique across gateways and restarts
 * (log_new_request_id: a random 64-bit start, counted and mixed; one
 * atomic add). The same id goes in error bodies, the slow-request log,
 * and every RPC the request causes (gateway/gw_trace.h). */
void conn_new_request_id(struct conn *c)
{
	log_new_request_id(c->request_id);
	c->resp_body_bytes = 0;
}

void conn_kick(struct conn *c)
{
	struct http_server *srv = c->srv;
	if (c->kick_queued || c->phase == CLOSING)
		return;
	c->kick_queued = true;
	c->kick_next = NULL;
	if (srv->kick_tail)
		srv->kick_tail->kick_next = c;
	else
		srv->kick_head = c;
	srv->kick_tail = c;
	uv_idle_start(&srv->kick, on_kick);
}

void http_server_arm_idle(struct http_server *srv)
{
	uv_idle_start(&srv->kick, on_kick);
}

/* ------------------------------------------------------------ timers */

static void on_timer(uv_timer_t *t)
{
	struct conn *c = t->data;
	if (c->timer_mode == T_LINGER) {
		conn_close(c, 0);
		return;
	}
	if (c->timer_mode != T_IDLE)
		c->srv->stats.timeouts++;
	conn_close(c, c->timer_mode == T_IDLE ? 0 : -ETIMEDOUT);
}

static void arm(struct conn *c, int mode, uint32_t ms, bool restart)
{
	if (c->timer_mode == mode && !restart)
		return;
	c->timer_mode = mode;
	if (mode == T_NONE)
		uv_timer_stop(&c->timer);
	else
		uv_timer_start(&c->timer, on_timer, ms, 0);
}

void conn_stop_timer(struct conn *c)
{
	arm(c, T_NONE, 0, false);
}

/* Pick the timeout for the connection's current state. restart: bytes
 * arrived (re-arms the body timeout, not the head one). */
void conn_update_timer(struct conn *c, bool restart)
{
	const struct http_server_cfg *cfg = &c->srv->cfg;
	if (c->phase == LINGER)
		return;
	if (http_parse_in_head(&c->hp) || (c->tc && !tls_conn_handshake_done(c->tc)))
		arm(c, T_HEAD, cfg->header_timeout_ms, false);
	else if (c->active && !c->body_done && !c->paused && c->hp.head_done)
		arm(c, T_BODY, cfg->body_timeout_ms, restart);
	else if (!c->active && c->rpos == c->rlen)
		arm(c, T_IDLE, cfg->idle_timeout_ms, false);
	else
		arm(c, T_NONE, 0, false);
}

/* ------------------------------------------------------------ reading */

/* How many bytes the next read may take straight into the handler's
 * memory (handler.body_buf): in a plain Content-Length body, the exchange
 * live and reading, nothing buffered (so the next byte from the socket is
 * the body's next byte), at most the body's bytes left. 0: read into
 * rbuf. */
static size_t body_direct_want(const struct conn *c)
{
	const struct http_parse *hp = &c->hp;
	if (!c->srv->cfg.handler.body_buf || c->phase != ACTIVE || !c->active || c->tc ||
	    c->paused || c->body_done || c->rpos != c->rlen || !hp->head_done ||
	    hp->msg_done || hp->req.chunked || !hp->req.has_content_length ||
	    http_parse_paused(hp) || http_parse_error(hp) ||
	    hp->body_bytes >= hp->req.content_length)
		return 0;
	return (size_t)(hp->req.content_length - hp->body_bytes);
}

/* A read that went into the handler's memory (body_direct_want): parse it
 * there; on_body hands the handler spans of its own memory. The parser
 * takes a body span whole even when the handler pauses inside on_body,
 * so nothing is left over; were anything left, it is kept in rbuf (empty
 * now) or the connection fails. */
static void direct_read(struct conn *c, const char *data, size_t n)
{
	c->in_process = true;
	size_t used = http_parse_feed(&c->hp, data, n);
	c->in_process = false;
	if (used < n && c->phase == ACTIVE && !http_parse_error(&c->hp)) {
		if (n - used > sizeof(c->rbuf)) {
			conn_close(c, -EPROTO);
			return;
		}
		memcpy(c->rbuf, data + used, n - used);
		c->rpos = 0;
		c->rlen = n - used;
	}
	process(c);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	(void)hint;
	struct conn *c = h->data;
	if (c->phase == LINGER) { /* discard: reuse the whole buffer */
		*b = uv_buf_init(c->rbuf, sizeof(c->rbuf));
		return;
	}
	if (c->tc) { /* consumed (copied into the TLS state) in on_read */
		*b = uv_buf_init(c->srv->tls_in, HTTP_TLS_IN_BUF);
		return;
	}
	size_t want = body_direct_want(c);
	char *hb;
	size_t got = want ? c->srv->cfg.handler.body_buf(&c->stream, want, &hb) : 0;
	if (got) {
		if (got > want)
			got = want;
		if (got > UINT_MAX)
			got = UINT_MAX;
		*b = uv_buf_init(hb, (unsigned)got);
		return;
	}
	if (c->rpos > 0) {
		memmove(c->rbuf, c->rbuf + c->rpos, c->rlen - c->rpos);
		c->rlen -= c->rpos;
		c->rpos = 0;
	}
	*b = uv_buf_init(c->rbuf + c->rlen, (unsigned)(sizeof(c->rbuf) - c->rlen));
}

/* The parser waits at the end of a bodiless plain-HTTP request while its
 * exchange runs: the socket stays read. Nothing of that request points
 * into rbuf (its head is in the parser's arena, it has no body), so bytes
 * that come meanwhile (a pipelined request) only queue in rbuf; and
 * stopping and restarting the read cost two epoll_ctl per request
 * (libuv forgets the fd's registration on stop: EPOLL_CTL_ADD fails
 * EEXIST, then MOD), two of a GET's ~7 syscalls. A request with a body
 * stops reading at its end (its handler may hold body bytes in rbuf),
 * unless its handler said it holds none (http_body_released: an inline
 * PUT, which copied its body); TLS keeps its drained-state rule. */
static bool reads_between(const struct conn *c)
{
	return c->active && c->hp.msg_done && (!c->hp.req.has_body || c->body_released) &&
	       !c->tc && !c->peer_eof;
}

void conn_update_reading(struct conn *c)
{
	bool want = c->phase == LINGER ||
		    (c->phase == ACTIVE && !c->paused && !c->peer_eof &&
		     (!http_parse_paused(&c->hp) || reads_between(c)) &&
		     !http_parse_error(&c->hp) && !c->limited && !c->limited_keep &&
		     c->rlen - c->rpos < sizeof(c->rbuf) && (!c->tc || tls_conn_drained(c->tc)));
	if (want == c->reading)
		return;
	c->reading = want;
	if (want)
		uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
	else
		uv_read_stop((uv_stream_t *)&c->tcp);
}

/* The peer is gone (EOF, reset, close_notify). */
static void conn_eof(struct conn *c)
{
	/* EOF between requests is a normal goodbye. */
	bool quiet = c->phase == LINGER ||
		     (!c->active && !http_parse_in_head(&c->hp) && c->rpos == c->rlen);
	conn_close(c, quiet ? 0 : -ECONNRESET);
}

/* Decrypt into rbuf as far as it has room; send what the TLS state wants
 * sent. false: the connection was closed. */
static bool tls_fill(struct conn *c)
{
	for (;;) {
		if (c->rpos > 0) {
			memmove(c->rbuf, c->rbuf + c->rpos, c->rlen - c->rpos);
			c->rlen -= c->rpos;
			c->rpos = 0;
		}
		size_t room = sizeof(c->rbuf) - c->rlen;
		if (!room)
			break;
		bool was_done = tls_conn_handshake_done(c->tc);
		ssize_t n = tls_conn_read(c->tc, c->rbuf + c->rlen, room);
		if (n > 0) {
			c->rlen += (size_t)n;
			continue;
		}
		conn_tls_flush(c);
		if (n == 0) {
			if (!was_done && tls_conn_handshake_done(c->tc))
				continue; /* data may follow the handshake */
			break;
		}
		if (n == TLS_EOF) {
			conn_eof(c);
		} else {
			c->srv->stats.tls_failures++;
			conn_close(c, -EPROTO);
		}
		return false;
	}
	conn_tls_flush(c);
	return c->phase == ACTIVE;
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
	struct conn *c = st->data;
	if (n == 0 || n == UV_ENOBUFS)
		return;
	if (n < 0) {
		if (n == UV_EOF && c->phase == ACTIVE && reads_between(c)) {
			/* The client half-closed after a whole request (read
			 * only because of reads_between): answer it and what
			 * it pipelined before, then close (process), as when
			 * the EOF was read after the answers. */
			c->peer_eof = true;
			conn_update_reading(c);
			return;
		}
		conn_eof(c);
		return;
	}
	if (c->tc && c->phase == ACTIVE) {
		c->srv->stats.bytes_in += (uint64_t)n;
		/* A TLS record starts with 0x16 (handshake); a letter is HTTP. */
		if (!tls_conn_started(c->tc) && (unsigned char)b->base[0] != 0x16) {
			conn_plain_on_tls(c);
			return;
		}
		if (tls_conn_feed(c->tc, b->base, (size_t)n)) {
			conn_close(c, -ENOMEM);
			return;
		}
		process(c);
		return;
	}
	c->srv->stats.bytes_in += (uint64_t)n;
	if (c->phase == LINGER) {
		c->linger_bytes += (uint64_t)n;
		if (c->linger_bytes > LINGER_MAX_BYTES)
			conn_close(c, 0);
		return;
	}
	if (b->base < c->rbuf || b->base >= c->rbuf + sizeof(c->rbuf)) {
		direct_read(c, b->base, (size_t)n);
		return;
	}
	c->rlen += (size_t)n;
	process(c);
}


/* ------------------------------------------------------------ flow control */

void http_pause(struct http_stream *s)
{
	struct conn *c = s->c;
	c->paused = true;
	c->body_win_ns = 0; /* the minimum body rate does not count pauses */
	/* A bodiless request's completion is still delivered (on_body_end
	 * right after on_request), so its exchange can finish cleanly. */
	if (c->hp.req.has_body && !c->body_done)
		http_parse_pause(&c->hp);
	/* From the request's handler inside process (the parser's events):
	 * nothing is read before process ends and updates the reading
	 * state. A pause the handler lifts before then (an inline PUT gated
	 * from the bucket cache resumes at once) then costs no read stop and
	 * restart: libuv's stop forgets the fd's events, and its restart is
	 * two epoll_ctl (ADD, EEXIST, MOD). */
	if (c->in_process)
		c->pause_pending = true;
	else
		conn_update_reading(c);
	conn_update_timer(c, false);
}

void http_body_released(struct http_stream *s)
{
	struct conn *c = s->c;
	if (!c->active || c->body_released)
		return;
	c->body_released = true;
	if (!c->in_process)   /* else process's end does */
		conn_update_reading(c);
}

void http_resume(struct http_stream *s)
{
	struct conn *c = s->c;
	if (!c->paused)
		return;
	c->paused = false;
	c->body_win_ns = 0;
	http_parse_unpause(&c->hp);
	if (c->continue_pending && !c->resp_started)
		conn_send_continue(c);
	conn_kick(c);
}

void http_stream_authenticated(struct http_stream *s)
{
	struct conn *c = s->c;
	struct http_server *srv = c->srv;
	if (!srv->limit)
		return;
	limit_lock(srv);
	http_limit_refund(srv->limit, c->limit_slot);
	limit_unlock(srv);
}

/* ------------------------------------------------------------ parser events */

static void ev_head(void *ud, struct http_request *req)
{
	struct conn *c = ud;
	struct http_server *srv = c->srv;
	bool ok = true;
	if (srv->limit) {
		limit_lock(srv);
		ok = http_limit_request(srv->limit, c->limit_slot, loop_now_ns());
		limit_unlock(srv);
	}
	if (!ok) {
		/* Refused before the handler (and SigV4) sees it. A bodiless
		 * request on a keep-alive connection is answered and the
		 * connection kept (as nginx's limit_req does): the parser runs
		 * on to the message's end, and a refusal then costs a parse,
		 * a write and a read, where closing costs the client a new
		 * connection and the server an accept, a hand-off to a loop, a
		 * shutdown, a linger and a close, per refused request. One
		 * with a body is answered and the connection closed (its body
		 * is not read). */
		conn_count(srv->m_refused_rate, &srv->stats.limit_requests_refused);
		c->limited = true;
		c->limited_keep = !req->has_body && req->keep_alive && !srv->closing;
		if (!c->limited_keep)
			http_parse_pause(&c->hp);
		return;
	}
	c->active = true;
	c->body_win_ns = 0;
	c->body_win_bytes = 0;
	c->body_done = false;
	c->body_released = false;
	c->paused = false;
	c->close_after = false;
	c->resp_started = c->resp_ended = c->head_pending = false;
	c->uhdr_len = 0;
	c->user = NULL;
	c->continue_pending = req->expect_continue;
	conn_new_request_id(c);
	srv->stats.requests++;
	srv->cfg.handler.on_request(&c->stream, req);
	if (c->phase != ACTIVE)
		return;
	/* The handler neither answered nor paused: it wants the body. */
	if (c->continue_pending && !c->resp_started && !c->paused)
		conn_send_continue(c);
}

/* The body arrives slower than min_body_rate_bps over a window: a
 * slow-loris body. Judged only when bytes arrive; a silent client meets
 * the body timeout instead. */
static bool body_too_slow(struct conn *c, size_t len)
{
	uint32_t min = c->srv->cfg.min_body_rate_bps;
	if (!min)
		return false;
	uint64_t now = loop_now_ns();
	if (!c->body_win_ns) {
		c->body_win_ns = now;
		c->body_win_bytes = len;
		return false;
	}
	c->body_win_bytes += len;
	uint64_t dt = now - c->body_win_ns;
	if (dt < (uint64_t)HTTP_BODY_RATE_WINDOW_MS * 1000000u)
		return false;
	bool slow = c->body_win_bytes * 1000000000u / dt < min;
	c->body_win_ns = now;
	c->body_win_bytes = 0;
	return slow;
}

static void ev_body(void *ud, const char *data, size_t len)
{
	struct conn *c = ud;
	if (!c->active || c->phase != ACTIVE)
		return;
	if (body_too_slow(c, len)) {
		struct http_server *srv = c->srv;
		conn_count(srv->m_slow_body, &srv->stats.slow_bodies);
		srv->stats.timeouts++;
		conn_close(c, -ETIMEDOUT);
		return;
	}
	c->srv->cfg.handler.on_body(&c->stream, data, len);
}

static void ev_complete(void *ud)
{
	struct conn *c = ud;
	c->body_done = true;
	if (c->active && c->phase == ACTIVE)
		c->srv->cfg.handler.on_body_end(&c->stream);
}

static const struct http_parse_cb parse_cb = { ev_head, ev_body, ev_complete };

/* ------------------------------------------------------------ lifecycle */

void conn_maybe_finish(struct conn *c)
{
	if (!c->active || !c->resp_ended || c->writes > 0)
		return;
	c->active = false;
	c->srv->cfg.handler.on_finish(&c->stream, 0);
	c->user = NULL;
	if (c->tc)
		tls_conn_trim(c->tc); /* an idle connection keeps no output buffers */
	if (c->phase != ACTIVE)
		return;
	if (c->close_after || (c->hp.req.has_body && !c->body_done) || c->srv->closing) {
		conn_linger(c);
		return;
	}
	/* A pause belongs to the exchange that asked for it. A handler that
	 * paused a bodiless request and answered it without resuming (nothing
	 * to resume for) must not leave the connection deaf: the next
	 * request's bytes would never be read. */
	c->paused = false;
	http_parse_next(&c->hp);
	conn_kick(c); /* pipelined bytes may be waiting; resume reading */
}

static void process(struct conn *c)
{
	if (c->in_process)
		return; /* the outer call's loop picks up the new state */
	c->in_process = true;
	while (c->phase == ACTIVE) {
		if (c->tc && !tls_fill(c))
			break;
		if (c->rpos == c->rlen || http_parse_paused(&c->hp) || http_parse_error(&c->hp))
			break;
		c->rpos += http_parse_feed(&c->hp, c->rbuf + c->rpos, c->rlen - c->rpos);
	}
	c->in_process = false;
	if (c->phase != ACTIVE)
		return;
	if (c->pause_pending) {   /* before any early return below */
		c->pause_pending = false;
		conn_update_reading(c);
	}
	int err = http_parse_error(&c->hp);
	if (err || c->limited) {
		conn_reply_error(c, err ? err : 503);
		return;
	}
	if (c->peer_eof && !c->active) {
		conn_eof(c);   /* every whole request answered */
		return;
	}
	if (c->rpos == c->rlen)
		c->rpos = c->rlen = 0;
	conn_update_reading(c);
	conn_update_timer(c, true);
}

static void on_kick(uv_idle_t *h)
{
	struct http_server *srv = h->data;
	struct conn *c;
	/* Write completions first: they end exchanges, which kick. */
	for (conn_writes_drain(srv); srv->kick_head; conn_writes_drain(srv)) {
		while ((c = srv->kick_head)) {
			srv->kick_head = c->kick_next;
			if (!srv->kick_head)
				srv->kick_tail = NULL;
			c->kick_queued = false;
			if (c->phase == ACTIVE)
				process(c);
		}
	}
	uv_idle_stop(h);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	(void)req;
	(void)status; /* the linger timer or EOF closes */
}

void conn_linger(struct conn *c)
{
	if (c->phase != ACTIVE)
		return;
	if (c->peer_eof) {   /* nothing more can come: no RST to avoid */
		conn_close(c, 0);
		return;
	}
	c->phase = LINGER;
	c->linger_bytes = 0;
	if (c->tc) { /* close_notify goes out before the FIN */
		tls_conn_close_notify(c->tc);
		conn_tls_flush(c);
		if (c->phase == CLOSING)
			return;
	}
	if (uv_shutdown(&c->shut, (uv_stream_t *)&c->tcp, on_shutdown)) {
		conn_close(c, 0);
		return;
	}
	arm(c, T_LINGER, LINGER_MS, true);
	conn_update_reading(c);
}

static void unkick(struct conn *c)
{
	struct http_server *srv = c->srv;
	if (!c->kick_queued)
		return;
	struct conn **pp = &srv->kick_head, *prev = NULL;
	while (*pp && *pp != c) {
		prev = *pp;
		pp = &(*pp)->kick_next;
	}
	if (*pp)
		*pp = c->kick_next;
	if (srv->kick_tail == c)
		srv->kick_tail = prev;
	c->kick_queued = false;
}

static void accept_one(struct http_server *srv);

static void on_conn_closed(uv_handle_t *h)
{
	struct conn *c = h->data;
	if (--c->handles_open > 0)
		return;
	struct http_server *srv = c->srv;
	conn_writes_closed(c); /* as libuv cancels queued writes: before on_finish */
	if (c->active) {
		c->active = false;
		srv->stats.aborted++;
		srv->cfg.handler.on_finish(&c->stream, c->close_err ? c->close_err : -ECONNRESET);
	}
	unkick(c);
	if (srv->limit) {
		limit_lock(srv);
		http_limit_conn_close(srv->limit, c->limit_slot);
		limit_unlock(srv);
	}
	tls_conn_free(c->tc);
	c->tc = NULL;
	if (c->prev)
		c->prev->next = c->next;
	else
		srv->live = c->next;
	if (c->next)
		c->next->prev = c->prev;
	srv->stats.conns_active--;
	atomic_fetch_sub_explicit(&srv->load, 1, memory_order_relaxed);
	c->next = srv->free_list;
	c->prev = NULL;
	srv->free_list = c;
	if (srv->closing) {
		http_server_maybe_done(srv);
	} else if (srv->accept_waiting) {
		srv->accept_waiting = false;
		accept_one(srv);
	}
}

void conn_close(struct conn *c, int err)
{
	if (c->phase == CLOSING)
		return;
	c->phase = CLOSING;
	c->close_err = err;
	c->reading = false;
	uv_read_stop((uv_stream_t *)&c->tcp);
	uv_timer_stop(&c->timer);
	uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
	uv_close((uv_handle_t *)&c->timer, on_conn_closed);
}

/* A connection from the pool, live, its handles initialized; NULL when
 * the pool is empty. */
static struct conn *conn_take(struct http_server *srv)
{
	struct conn *c = srv->free_list;
	if (!c)
		return NULL;
	srv->free_list = c->next;
	/* Reset the state, not the buffers. */
	memset(c, 0, offsetof(struct conn, w));
	c->limit_slot = HTTP_LIMIT_NONE;
	c->srv = srv;
	c->stream.c = c;
	c->phase = ACTIVE;
	uv_tcp_init(srv->loop, &c->tcp);
	uv_timer_init(srv->loop, &c->timer);
	c->tcp.data = c->timer.data = c;
	c->handles_open = 2;
	c->next = srv->live;
	if (srv->live)
		srv->live->prev = c;
	srv->live = c;
	srv->stats.conns_active++;
	atomic_fetch_add_explicit(&srv->load, 1, memory_order_relaxed);
	return c;
}

/* The socket is c's: limits, TLS, and the first read. */
static void conn_begin(struct conn *c)
{
	struct http_server *srv = c->srv;
	srv->stats.conns_accepted++;
	uv_tcp_nodelay(&c->tcp, 1);
	conn_peer_name(c);
	bool ok = true;
	if (srv->limit) {
		limit_lock(srv);
		ok = http_limit_conn_open(srv->limit, c->peer_bin, loop_now_ns(), &c->limit_slot);
		limit_unlock(srv);
	}
	if (!ok) {
		conn_count(srv->m_refused_conns, &srv->stats.limit_conns_refused);
		conn_close(c, 0);
		return;
	}
	if (srv->cfg.tls) {
		c->tc = tls_conn_new(srv->cfg.tls);
		if (!c->tc) {
			conn_close(c, 0);
			return;
		}
		c->tls = true;
	}
	http_parse_init(&c->hp, &parse_cb, c);
	conn_update_reading(c);
	conn_update_timer(c, false);
}

static void accept_one(struct http_server *srv)
{
	if (srv->cfg.adopt_only)
		return;
	struct conn *c = conn_take(srv);
	if (!c) {
		srv->accept_waiting = true;
		srv->stats.accept_deferred++;
		return;
	}
	if (uv_accept((uv_stream_t *)&srv->listener, (uv_stream_t *)&c->tcp)) {
		conn_close(c, 0);
		return;
	}
	conn_begin(c);
}

int http_server_adopt(struct http_server *srv, int fd)
{
	struct conn *c = srv->closing ? NULL : conn_take(srv);
	if (!c) {
		srv->stats.accept_deferred++;
		close(fd);
		return -EBUSY;
	}
	int rc = uv_tcp_open(&c->tcp, fd);
	if (rc) {
		close(fd);
		conn_close(c, 0);
		return rc;
	}
	conn_begin(c);
	return 0;
}

void http_on_connection(uv_stream_t *l, int status)
{
	struct http_server *srv = l->data;
	if (status < 0 || srv->closing)
		return;
	accept_one(srv);
}
