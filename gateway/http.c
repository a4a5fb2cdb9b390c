/*
 * http.c — HTTP/1.1 server on libuv. See http.h for the model.
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
 * uv_idle callback. Write completions are libuv callbacks, never
 * synchronous, so http_write never calls back into the handler either.
 */
#include "gateway/http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/loop.h"

#define LINGER_MS 2000
#define LINGER_MAX_BYTES (1u << 20)

enum phase { ACTIVE, LINGER, CLOSING };

struct wslot {
	uv_write_t req;
	struct conn *c;
	http_write_cb cb;
	void *arg;
	size_t bytes;
	bool used;
	bool last;                 /* completes the response */
	char chunk_hdr[20];        /* "%zx\r\n" for chunked bodies */
};

struct http_stream {
	struct conn *c;
};

struct conn {
	uv_tcp_t tcp;
	uv_timer_t timer;
	uv_shutdown_t shut;
	struct http_server *srv;
	struct conn *prev, *next;  /* live list (or free list via next) */
	struct conn *kick_next;
	bool kick_queued;
	enum phase phase;
	int handles_open;
	int close_err;

	struct http_parse hp;
	size_t rpos, rlen;
	bool reading;
	bool in_process;
	uint64_t linger_bytes;
	int timer_mode;            /* which timeout is armed (enum below) */

	/* The exchange. */
	struct http_stream stream;
	void *user;
	bool active;               /* on_request called, on_finish not yet */
	bool body_done;
	bool paused;               /* by the handler */
	bool continue_pending;
	bool close_after;
	bool resp_started;
	bool head_pending;         /* head composed, not yet written */
	bool resp_chunked;
	bool resp_ended;           /* last write submitted */
	bool head_only;            /* HEAD: no body bytes go out */
	int64_t resp_remaining;    /* Content-Length bytes still to write */
	int status;
	char request_id[64];
	size_t uhdr_len;
	size_t head_len;
	int writes;
	uint64_t queued;
	struct wslot w[HTTP_MAX_WRITES];
	char uhdr[HTTP_OUT_HEAD_MAX];
	char head[HTTP_OUT_HEAD_MAX + 512 + HTTP_INLINE_BODY_MAX];
	char rbuf[HTTP_READ_BUF];
};

enum { T_NONE, T_IDLE, T_HEAD, T_BODY, T_LINGER };

struct http_server {
	uv_loop_t *loop;
	uv_tcp_t listener;
	uv_idle_t kick;
	struct http_server_cfg cfg;
	struct conn *pool;
	struct conn *free_list;
	struct conn *live;
	struct conn *kick_head, *kick_tail;
	bool accept_waiting;
	bool closing;
	int handles_open;
	void (*close_cb)(void *);
	void *close_arg;
	struct http_stats stats;
	uint64_t id_seq;
	uint32_t id_prefix;
	time_t date_at;
	char date[40];
	int port;
};

static void process(struct conn *c);
static void close_conn(struct conn *c, int err);
static void maybe_finish(struct conn *c);
static void on_kick(uv_idle_t *h);
static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b);
static void linger(struct conn *c);

/* ------------------------------------------------------------ utils */

const char *http_reason(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 201: return "Created";
	case 204: return "No Content";
	case 206: return "Partial Content";
	case 301: return "Moved Permanently";
	case 304: return "Not Modified";
	case 307: return "Temporary Redirect";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 411: return "Length Required";
	case 412: return "Precondition Failed";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 416: return "Range Not Satisfiable";
	case 417: return "Expectation Failed";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	default: return "Unknown";
	}
}

static const char *http_date(struct http_server *srv)
{
	time_t now = time(NULL);
	if (now != srv->date_at) {
		struct tm tm;
		gmtime_r(&now, &tm);
		strftime(srv->date, sizeof(srv->date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
		srv->date_at = now;
	}
	return srv->date;
}

static void new_request_id(struct conn *c)
{
	struct http_server *srv = c->srv;
	snprintf(c->request_id, sizeof(c->request_id), "%08X%08llX", srv->id_prefix,
		 (unsigned long long)++srv->id_seq);
}

static void kick(struct conn *c)
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

/* ------------------------------------------------------------ timers */

static void on_timer(uv_timer_t *t)
{
	struct conn *c = t->data;
	if (c->timer_mode == T_LINGER) {
		close_conn(c, 0);
		return;
	}
	if (c->timer_mode != T_IDLE)
		c->srv->stats.timeouts++;
	close_conn(c, c->timer_mode == T_IDLE ? 0 : -ETIMEDOUT);
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

/* Pick the timeout for the connection's current state. restart: bytes
 * arrived (re-arms the body timeout, not the head one). */
static void update_timer(struct conn *c, bool restart)
{
	const struct http_server_cfg *cfg = &c->srv->cfg;
	if (c->phase == LINGER)
		return;
	if (http_parse_in_head(&c->hp))
		arm(c, T_HEAD, cfg->header_timeout_ms, false);
	else if (c->active && !c->body_done && !c->paused && c->hp.head_done)
		arm(c, T_BODY, cfg->body_timeout_ms, restart);
	else if (!c->active && c->rpos == c->rlen)
		arm(c, T_IDLE, cfg->idle_timeout_ms, false);
	else
		arm(c, T_NONE, 0, false);
}

/* ------------------------------------------------------------ reading */

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	(void)hint;
	struct conn *c = h->data;
	if (c->phase == LINGER) { /* discard: reuse the whole buffer */
		*b = uv_buf_init(c->rbuf, sizeof(c->rbuf));
		return;
	}
	if (c->rpos > 0) {
		memmove(c->rbuf, c->rbuf + c->rpos, c->rlen - c->rpos);
		c->rlen -= c->rpos;
		c->rpos = 0;
	}
	*b = uv_buf_init(c->rbuf + c->rlen, (unsigned)(sizeof(c->rbuf) - c->rlen));
}

static void update_reading(struct conn *c)
{
	bool want = c->phase == LINGER ||
		    (c->phase == ACTIVE && !c->paused && !http_parse_paused(&c->hp) &&
		     !http_parse_error(&c->hp) && c->rlen - c->rpos < sizeof(c->rbuf));
	if (want == c->reading)
		return;
	c->reading = want;
	if (want)
		uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
	else
		uv_read_stop((uv_stream_t *)&c->tcp);
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
	(void)b;
	struct conn *c = st->data;
	if (n == 0 || n == UV_ENOBUFS)
		return;
	if (n < 0) {
		/* EOF between requests is a normal goodbye. */
		bool quiet = c->phase == LINGER ||
			     (!c->active && !http_parse_in_head(&c->hp) && c->rpos == c->rlen);
		close_conn(c, quiet ? 0 : -ECONNRESET);
		return;
	}
	c->srv->stats.bytes_in += (uint64_t)n;
	if (c->phase == LINGER) {
		c->linger_bytes += (uint64_t)n;
		if (c->linger_bytes > LINGER_MAX_BYTES)
			close_conn(c, 0);
		return;
	}
	c->rlen += (size_t)n;
	process(c);
}


/* ------------------------------------------------------------ writing */

static void on_written(uv_write_t *req, int status)
{
	struct wslot *w = container_of(req, struct wslot, req);
	struct conn *c = w->c;
	struct http_server *srv = c->srv;
	srv->stats.write_queued_bytes -= w->bytes;
	c->queued -= w->bytes;
	c->writes--;
	if (status == 0)
		srv->stats.bytes_out += w->bytes;
	http_write_cb cb = w->cb;
	void *arg = w->arg;
	bool last = w->last;
	w->used = false;
	if (cb && c->active)
		cb(&c->stream, status, arg);
	if (status < 0) {
		close_conn(c, -EPIPE);
		return;
	}
	if (last && c->phase == ACTIVE) {
		if (c->active)
			maybe_finish(c);
		else
			linger(c); /* the server's own error reply */
	}
}

/* Submit bufs as one write. 0 or -errno. */
static int submit(struct conn *c, uv_buf_t *bufs, unsigned n, http_write_cb cb, void *arg,
		  bool last, struct wslot **out)
{
	if (c->phase != ACTIVE)
		return -EPIPE;
	struct wslot *w = NULL;
	for (int i = 0; i < HTTP_MAX_WRITES; i++)
		if (!c->w[i].used) {
			w = &c->w[i];
			break;
		}
	if (!w)
		return -EAGAIN;
	size_t bytes = 0;
	for (unsigned i = 0; i < n; i++)
		bytes += bufs[i].len;
	w->c = c;
	w->cb = cb;
	w->arg = arg;
	w->bytes = bytes;
	w->last = last;
	int rc = uv_write(&w->req, (uv_stream_t *)&c->tcp, bufs, n, on_written);
	if (rc) { /* the socket is gone: the exchange ends with on_finish */
		close_conn(c, rc);
		return rc;
	}
	w->used = true;
	c->writes++;
	c->queued += bytes;
	struct http_stats *st = &c->srv->stats;
	st->write_queued_bytes += bytes;
	if (st->write_queued_bytes > st->write_queued_max)
		st->write_queued_max = st->write_queued_bytes;
	if (out)
		*out = w;
	return 0;
}

static void send_continue(struct conn *c)
{
	static char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
	c->continue_pending = false;
	uv_buf_t b = uv_buf_init(cont, sizeof(cont) - 1);
	if (submit(c, &b, 1, NULL, NULL, false, NULL))
		close_conn(c, -EPIPE);
}

/* Compose status line, server headers, user headers and the blank line
 * into c->head. cl < 0: chunked (or close-delimited for HTTP/1.0). */
static int compose_head(struct conn *c, int status, int64_t cl)
{
	struct http_server *srv = c->srv;
	const struct http_request *r = &c->hp.req;
	bool http10 = r->http_minor == 0;
	if (!r->keep_alive || srv->closing)
		c->close_after = true;
	if (r->has_body && !c->body_done) {
		/* Answering before the body was read: the rest of it would be
		 * taken for the next request. Close after, lingering. */
		c->close_after = true;
		c->continue_pending = false;
	}
	bool bodyless = status == 204 || status == 304 || (status >= 100 && status < 200);
	c->resp_chunked = false;
	if (cl < 0 && !bodyless) {
		if (http10)
			c->close_after = true;
		else
			c->resp_chunked = true;
	}
	int n = snprintf(c->head, sizeof(c->head),
			 "HTTP/1.1 %d %s\r\nDate: %s\r\nServer: %s\r\n%s: %s\r\n", status,
			 http_reason(status), http_date(srv), srv->cfg.server_name,
			 srv->cfg.request_id_header, c->request_id);
	if (!bodyless && cl >= 0)
		n += snprintf(c->head + n, sizeof(c->head) - (size_t)n, "Content-Length: %lld\r\n",
			      (long long)cl);
	if (c->resp_chunked)
		n += snprintf(c->head + n, sizeof(c->head) - (size_t)n,
			      "Transfer-Encoding: chunked\r\n");
	if (c->close_after)
		n += snprintf(c->head + n, sizeof(c->head) - (size_t)n, "Connection: close\r\n");
	else if (http10)
		n += snprintf(c->head + n, sizeof(c->head) - (size_t)n, "Connection: keep-alive\r\n");
	memcpy(c->head + n, c->uhdr, c->uhdr_len);
	n += (int)c->uhdr_len;
	memcpy(c->head + n, "\r\n", 2);
	c->head_len = (size_t)n + 2;
	c->status = status;
	c->resp_started = true;
	c->head_only = r->method == HTTP_HEAD || bodyless;
	c->resp_remaining = cl;
	int cls = status / 100;
	if (cls >= 1 && cls <= 5)
		srv->stats.responses[cls]++;
	return 0;
}

/* ------------------------------------------------------------ exchange */

const struct http_request *http_stream_request(const struct http_stream *s)
{
	return &s->c->hp.req;
}

void *http_stream_ctx(const struct http_stream *s)
{
	return s->c->srv->cfg.handler.ctx;
}

void http_stream_set_user(struct http_stream *s, void *user)
{
	s->c->user = user;
}

void *http_stream_user(const struct http_stream *s)
{
	return s->c->user;
}

const char *http_stream_request_id(const struct http_stream *s)
{
	return s->c->request_id;
}

void http_stream_set_request_id(struct http_stream *s, const char *id)
{
	snprintf(s->c->request_id, sizeof(s->c->request_id), "%s", id);
}

uint64_t http_stream_queued(const struct http_stream *s)
{
	return s->c->queued;
}

void http_set_close(struct http_stream *s)
{
	s->c->close_after = true;
}

void http_pause(struct http_stream *s)
{
	struct conn *c = s->c;
	c->paused = true;
	/* A bodiless request's completion is still delivered (on_body_end
	 * right after on_request), so its exchange can finish cleanly. */
	if (c->hp.req.has_body && !c->body_done)
		http_parse_pause(&c->hp);
	update_reading(c);
	update_timer(c, false);
}

void http_resume(struct http_stream *s)
{
	struct conn *c = s->c;
	if (!c->paused)
		return;
	c->paused = false;
	http_parse_unpause(&c->hp);
	if (c->continue_pending && !c->resp_started)
		send_continue(c);
	kick(c);
}

static bool bad_token(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] == '\r' || s[i] == '\n' || s[i] == '\0')
			return true;
	return false;
}

int http_add_header_n(struct http_stream *s, const char *name, size_t name_len,
		      const char *value, size_t value_len)
{
	struct conn *c = s->c;
	if (c->resp_started)
		return -EALREADY;
	if (!name_len || bad_token(name, name_len) || bad_token(value, value_len) ||
	    memchr(name, ':', name_len))
		return -EINVAL;
	size_t need = name_len + 2 + value_len + 2;
	if (need > sizeof(c->uhdr) - c->uhdr_len)
		return -ENOSPC;
	char *p = c->uhdr + c->uhdr_len;
	memcpy(p, name, name_len);
	p += name_len;
	*p++ = ':';
	*p++ = ' ';
	memcpy(p, value, value_len);
	p += value_len;
	*p++ = '\r';
	*p++ = '\n';
	c->uhdr_len += need;
	return 0;
}

int http_add_header(struct http_stream *s, const char *name, const char *value)
{
	return http_add_header_n(s, name, strlen(name), value, strlen(value));
}

int http_respond(struct http_stream *s, int status, const void *body, size_t len,
		 http_write_cb cb, void *arg)
{
	struct conn *c = s->c;
	if (c->resp_started)
		return -EALREADY;
	if (!cb && len > HTTP_INLINE_BODY_MAX)
		return -E2BIG;
	compose_head(c, status, (int64_t)len);
	uv_buf_t bufs[2];
	unsigned n = 1;
	bool send_body = !c->head_only && len > 0;
	if (send_body && !cb) {
		memcpy(c->head + c->head_len, body, len);
		c->head_len += len;
	} else if (send_body) {
		bufs[n++] = uv_buf_init((char *)body, (unsigned)len);
	}
	bufs[0] = uv_buf_init(c->head, (unsigned)c->head_len);
	c->head_pending = false;
	c->resp_ended = true;
	c->resp_remaining = 0;
	int rc = submit(c, bufs, n, cb, arg, true, NULL);
	if (rc)
		close_conn(c, -EPIPE);
	return rc;
}

int http_respond_start(struct http_stream *s, int status, int64_t content_length)
{
	struct conn *c = s->c;
	if (c->resp_started)
		return -EALREADY;
	compose_head(c, status, content_length);
	c->head_pending = true;
	return 0;
}

int http_write(struct http_stream *s, const void *data, size_t len, http_write_cb cb, void *arg)
{
	struct conn *c = s->c;
	static char crlf[] = "\r\n";
	if (!c->resp_started || c->resp_ended)
		return -EALREADY;
	if (c->phase != ACTIVE)
		return -EPIPE;
	if (!c->resp_chunked && c->resp_remaining >= 0 && (int64_t)len > c->resp_remaining)
		return -EMSGSIZE;
	uv_buf_t bufs[4];
	unsigned n = 0;
	if (c->head_pending)
		bufs[n++] = uv_buf_init(c->head, (unsigned)c->head_len);
	struct wslot *w = NULL;
	bool body = !c->head_only && len > 0;
	unsigned chunk_at = n;
	if (body && c->resp_chunked)
		bufs[n++] = uv_buf_init(NULL, 0); /* filled once the slot is known */
	if (body)
		bufs[n++] = uv_buf_init((char *)data, (unsigned)len);
	if (body && c->resp_chunked)
		bufs[n++] = uv_buf_init(crlf, 2);
	if (n == 0) /* HEAD or empty write: still complete asynchronously */
		bufs[n++] = uv_buf_init(crlf, 0);
	/* The chunk header lives in the slot; find it first. */
	struct wslot *free_slot = NULL;
	for (int i = 0; i < HTTP_MAX_WRITES && !free_slot; i++)
		if (!c->w[i].used)
			free_slot = &c->w[i];
	if (!free_slot)
		return -EAGAIN;
	if (body && c->resp_chunked) {
		int hl = snprintf(free_slot->chunk_hdr, sizeof(free_slot->chunk_hdr), "%zx\r\n", len);
		bufs[chunk_at] = uv_buf_init(free_slot->chunk_hdr, (unsigned)hl);
	}
	int rc = submit(c, bufs, n, cb, arg, false, &w);
	if (rc)
		return rc;
	c->head_pending = false;
	if (c->resp_remaining >= 0 && !c->resp_chunked)
		c->resp_remaining -= (int64_t)len;
	return 0;
}

int http_respond_end(struct http_stream *s)
{
	struct conn *c = s->c;
	static char last_chunk[] = "0\r\n\r\n";
	if (!c->resp_started || c->resp_ended)
		return -EALREADY;
	uv_buf_t bufs[2];
	unsigned n = 0;
	if (c->head_pending)
		bufs[n++] = uv_buf_init(c->head, (unsigned)c->head_len);
	if (c->resp_chunked && !c->head_only)
		bufs[n++] = uv_buf_init(last_chunk, 5);
	if (n == 0)
		bufs[n++] = uv_buf_init(last_chunk, 0);
	if (!c->resp_chunked && c->resp_remaining > 0 && !c->head_only)
		c->close_after = true; /* short body: framing is lost */
	int rc = submit(c, bufs, n, NULL, NULL, true, NULL);
	if (rc)
		return rc;
	c->head_pending = false;
	c->resp_ended = true;
	return 0;
}

/* ------------------------------------------------------------ parser events */

static void ev_head(void *ud, struct http_request *req)
{
	struct conn *c = ud;
	struct http_server *srv = c->srv;
	c->active = true;
	c->body_done = false;
	c->paused = false;
	c->close_after = false;
	c->resp_started = c->resp_ended = c->head_pending = false;
	c->uhdr_len = 0;
	c->user = NULL;
	c->continue_pending = req->expect_continue;
	new_request_id(c);
	srv->stats.requests++;
	srv->cfg.handler.on_request(&c->stream, req);
	if (c->phase != ACTIVE)
		return;
	/* The handler neither answered nor paused: it wants the body. */
	if (c->continue_pending && !c->resp_started && !c->paused)
		send_continue(c);
}

static void ev_body(void *ud, const char *data, size_t len)
{
	struct conn *c = ud;
	if (c->active && c->phase == ACTIVE)
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

static void maybe_finish(struct conn *c)
{
	if (!c->active || !c->resp_ended || c->writes > 0)
		return;
	c->active = false;
	c->srv->cfg.handler.on_finish(&c->stream, 0);
	c->user = NULL;
	if (c->phase != ACTIVE)
		return;
	if (c->close_after || (c->hp.req.has_body && !c->body_done) || c->srv->closing) {
		linger(c);
		return;
	}
	/* A pause belongs to the exchange that asked for it. A handler that
	 * paused a bodiless request and answered it without resuming (nothing
	 * to resume for) must not leave the connection deaf: the next
	 * request's bytes would never be read. */
	c->paused = false;
	http_parse_next(&c->hp);
	kick(c); /* pipelined bytes may be waiting; resume reading */
}

/* A malformed head: answer it ourselves and close. */
static void reply_error(struct conn *c, int status)
{
	struct http_server *srv = c->srv;
	srv->stats.bad_requests++;
	if (c->active) { /* bad body framing after the handler took over */
		close_conn(c, -EPROTO);
		return;
	}
	new_request_id(c);
	int n = snprintf(c->head, sizeof(c->head),
			 "HTTP/1.1 %d %s\r\nDate: %s\r\nServer: %s\r\n%s: %s\r\n"
			 "Content-Length: 0\r\nConnection: close\r\n\r\n",
			 status, http_reason(status), http_date(srv), srv->cfg.server_name,
			 srv->cfg.request_id_header, c->request_id);
	srv->stats.responses[status / 100]++;
	uv_buf_t b = uv_buf_init(c->head, (unsigned)n);
	if (submit(c, &b, 1, NULL, NULL, true, NULL)) {
		close_conn(c, 0);
		return;
	}
	/* Nothing more is parsed; the write's completion starts lingering. */
	arm(c, T_NONE, 0, false);
	c->rpos = c->rlen = 0;
	c->reading = false;
	uv_read_stop((uv_stream_t *)&c->tcp);
}

static void process(struct conn *c)
{
	if (c->in_process)
		return; /* the outer call's loop picks up the new state */
	c->in_process = true;
	while (c->phase == ACTIVE && c->rpos < c->rlen && !http_parse_paused(&c->hp) &&
	       !http_parse_error(&c->hp))
		c->rpos += http_parse_feed(&c->hp, c->rbuf + c->rpos, c->rlen - c->rpos);
	c->in_process = false;
	if (c->phase != ACTIVE)
		return;
	int err = http_parse_error(&c->hp);
	if (err) {
		reply_error(c, err);
		return;
	}
	if (c->rpos == c->rlen)
		c->rpos = c->rlen = 0;
	update_reading(c);
	update_timer(c, true);
}

static void on_kick(uv_idle_t *h)
{
	struct http_server *srv = h->data;
	struct conn *c;
	while ((c = srv->kick_head)) {
		srv->kick_head = c->kick_next;
		if (!srv->kick_head)
			srv->kick_tail = NULL;
		c->kick_queued = false;
		if (c->phase == ACTIVE)
			process(c);
	}
	uv_idle_stop(h);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	(void)req;
	(void)status; /* the linger timer or EOF closes */
}

static void linger(struct conn *c)
{
	if (c->phase != ACTIVE)
		return;
	c->phase = LINGER;
	c->linger_bytes = 0;
	if (uv_shutdown(&c->shut, (uv_stream_t *)&c->tcp, on_shutdown)) {
		close_conn(c, 0);
		return;
	}
	arm(c, T_LINGER, LINGER_MS, true);
	update_reading(c);
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

static void server_maybe_done(struct http_server *srv);
static void accept_one(struct http_server *srv);
static void on_srv_handle_closed(uv_handle_t *h);

static void on_conn_closed(uv_handle_t *h)
{
	struct conn *c = h->data;
	if (--c->handles_open > 0)
		return;
	struct http_server *srv = c->srv;
	if (c->active) {
		c->active = false;
		srv->stats.aborted++;
		srv->cfg.handler.on_finish(&c->stream, c->close_err ? c->close_err : -ECONNRESET);
	}
	unkick(c);
	if (c->prev)
		c->prev->next = c->next;
	else
		srv->live = c->next;
	if (c->next)
		c->next->prev = c->prev;
	srv->stats.conns_active--;
	c->next = srv->free_list;
	c->prev = NULL;
	srv->free_list = c;
	if (srv->closing) {
		server_maybe_done(srv);
	} else if (srv->accept_waiting) {
		srv->accept_waiting = false;
		accept_one(srv);
	}
}

static void close_conn(struct conn *c, int err)
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

static void accept_one(struct http_server *srv)
{
	struct conn *c = srv->free_list;
	if (!c) {
		srv->accept_waiting = true;
		srv->stats.accept_deferred++;
		return;
	}
	srv->free_list = c->next;
	/* Reset the state, not the buffers. */
	memset(c, 0, offsetof(struct conn, w));
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
	if (uv_accept((uv_stream_t *)&srv->listener, (uv_stream_t *)&c->tcp)) {
		close_conn(c, 0);
		return;
	}
	srv->stats.conns_accepted++;
	uv_tcp_nodelay(&c->tcp, 1);
	http_parse_init(&c->hp, &parse_cb, c);
	update_reading(c);
	update_timer(c, false);
}

static void on_connection(uv_stream_t *l, int status)
{
	struct http_server *srv = l->data;
	if (status < 0 || srv->closing)
		return;
	accept_one(srv);
}

int http_server_start(uv_loop_t *loop, const struct http_server_cfg *cfg, struct http_server **out)
{
	int rc;
	struct http_server *srv = calloc(1, sizeof(*srv));
	if (!srv)
		return -ENOMEM;
	srv->loop = loop;
	srv->cfg = *cfg;
	struct http_server_cfg *k = &srv->cfg;
	if (!k->addr)
		k->addr = "127.0.0.1";
	if (!k->max_conns)
		k->max_conns = 1024;
	if (!k->header_timeout_ms)
		k->header_timeout_ms = 30000;
	if (!k->body_timeout_ms)
		k->body_timeout_ms = 60000;
	if (!k->idle_timeout_ms)
		k->idle_timeout_ms = 60000;
	if (!k->request_id_header)
		k->request_id_header = "x-amz-request-id";
	if (!k->server_name)
		k->server_name = "IOLake";
	srv->id_prefix = (uint32_t)loop_now_ns() ^ (uint32_t)getpid() << 16;

	srv->pool = calloc(k->max_conns, sizeof(struct conn));
	if (!srv->pool) {
		rc = -ENOMEM;
		goto err_srv;
	}
	for (uint32_t i = k->max_conns; i-- > 0;) {
		srv->pool[i].next = srv->free_list;
		srv->free_list = &srv->pool[i];
	}

	struct sockaddr_storage ss;
	if (strchr(k->addr, ':'))
		rc = uv_ip6_addr(k->addr, k->port, (struct sockaddr_in6 *)&ss);
	else
		rc = uv_ip4_addr(k->addr, k->port, (struct sockaddr_in *)&ss);
	if (rc)
		goto err_pool;
	rc = uv_tcp_init(loop, &srv->listener);
	if (rc)
		goto err_pool;
	srv->listener.data = srv;
	rc = uv_tcp_bind(&srv->listener, (struct sockaddr *)&ss, 0);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)&srv->listener, 511, on_connection);
	if (rc)
		goto err_listener;
	int len = sizeof(ss);
	uv_tcp_getsockname(&srv->listener, (struct sockaddr *)&ss, &len);
	srv->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						   : ((struct sockaddr_in *)&ss)->sin_port);
	uv_idle_init(loop, &srv->kick);
	srv->kick.data = srv;
	*out = srv;
	return 0;

err_listener:
	/* The handle must be closed through the loop (we may be inside one of
	 * its callbacks): the server and pool are freed from the close cb. */
	srv->closing = true;
	srv->handles_open = 1;
	uv_close((uv_handle_t *)&srv->listener, on_srv_handle_closed);
	return rc;
err_pool:
	free(srv->pool);
err_srv:
	free(srv);
	return rc;
}

int http_server_port(const struct http_server *srv)
{
	return srv->port;
}

void http_server_stats(const struct http_server *srv, struct http_stats *out)
{
	*out = srv->stats;
}

static void server_maybe_done(struct http_server *srv)
{
	if (srv->handles_open > 0 || srv->live)
		return;
	void (*cb)(void *) = srv->close_cb;
	void *arg = srv->close_arg;
	free(srv->pool);
	free(srv);
	if (cb)
		cb(arg);
}

static void on_srv_handle_closed(uv_handle_t *h)
{
	struct http_server *srv = h->data;
	srv->handles_open--;
	server_maybe_done(srv);
}

void http_server_close(struct http_server *srv, void (*cb)(void *arg), void *arg)
{
	srv->closing = true;
	srv->close_cb = cb;
	srv->close_arg = arg;
	srv->handles_open = 2;
	uv_close((uv_handle_t *)&srv->listener, on_srv_handle_closed);
	uv_close((uv_handle_t *)&srv->kick, on_srv_handle_closed);
	for (struct conn *c = srv->live; c; c = c->next)
		close_conn(c, -ESHUTDOWN);
}
