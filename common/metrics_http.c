/*
 * metrics_http.c — the /metrics listener of common/metrics_http.h.
 *
 * One struct conn per accepted socket, on the caller's loop. A connection
 * is in one of three phases: reading (bytes go to http-parser, which
 * pauses itself at the end of each request), writing (reading stopped;
 * bytes that arrived after the request wait in rbuf, unparsed, until the
 * answer is written: one request at a time, so pipelining needs no queue),
 * and draining (after an answer with Connection: close, the write side is
 * shut and the input discarded until EOF or a short linger, so that the
 * client reads the answer rather than a reset). One repeating timer closes
 * a connection idle_ms after its accept or its last answer: reads do not
 * reset that clock, so a client trickling a header byte by byte cannot
 * hold a connection longer than one that sends nothing.
 *
 * Invariant: rbuf holds unparsed bytes only while the parser is paused;
 * while reading, every byte read is parsed at once. A request body is
 * never read: such a request is answered and the connection closed.
 *
 * Not done here: TLS, request bodies, chunked answers (the registry is
 * rendered whole, then sent with its Content-Length).
 */
#include "common/metrics_http.h"

#include <errno.h>
#include <http_parser.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/loop.h"

#define DEFAULT_MAX_CONNS 64
#define DEFAULT_IDLE_MS 30000
#define DRAIN_LINGER_MS 1000         /* wait for the peer's EOF after close */
#define DRAIN_MAX_BYTES (64 * 1024)  /* discarded after a close answer */
#define RBUF_BYTES 4096
#define PATH_BYTES 64                /* longer paths are not /metrics anyway */
#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct conn {
	uv_tcp_t tcp;
	uv_write_t wreq;
	uv_shutdown_t sreq;
	struct metrics_http *mh;
	struct conn *prev, *next;   /* in mh->conns while not closing */
	http_parser p;
	uint64_t last_ms;           /* loop time of the accept or the last answer
	                             * written; reads do not move it */
	size_t head_bytes;          /* target + header bytes of this request */
	size_t drained;             /* bytes discarded while draining */
	int error_status;           /* set by a callback that failed the parse */
	char path[PATH_BYTES];      /* request target up to '?' */
	size_t path_len;
	bool path_long, in_query;
	bool close_after;           /* answer with Connection: close */
	bool writing, draining, closing;
	char *body;                 /* rendered registry, freed after the write */
	size_t rlen;                /* unparsed bytes in rbuf (parser paused) */
	char head[512];             /* status line, headers, short error text */
	char rbuf[RBUF_BYTES];
};

struct metrics_http {
	uv_loop_t *loop;
	uv_tcp_t listener;
	uv_timer_t sweep;
	struct metrics_registry *reg;
	struct conn *conns;
	unsigned n_conns;           /* accepted and not yet freed */
	unsigned max_conns, idle_ms, linger_ms;
	unsigned open_handles;      /* listener + timer + conns: freed at 0 */
	bool closing;
	void (*closed_cb)(void *arg);
	void *closed_arg;
};

static void feed(struct conn *c);
static int read_start(struct conn *c);

/* ------------------------------------------------------------ addresses */

static int parse_addr(const char *s, struct sockaddr_storage *ss)
{
	const char *host, *colon;
	size_t hlen;
	bool v6 = s && s[0] == '[';
	if (!s)
		return -EINVAL;
	if (v6) {
		const char *end = strchr(s, ']');
		if (!end || end[1] != ':')
			return -EINVAL;
		host = s + 1;
		hlen = (size_t)(end - host);
		colon = end + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon || memchr(s, ':', (size_t)(colon - s)))
			return -EINVAL;   /* no colon, or an IPv6 address without [] */
		host = s;
		hlen = (size_t)(colon - s);
	}
	char h[64];
	const char *port = colon + 1;
	size_t plen = strlen(port);
	if (hlen == 0 || hlen >= sizeof(h) || plen == 0 || plen > 5 ||
	    strspn(port, "0123456789") != plen)
		return -EINVAL;
	int portn = atoi(port);
	if (portn > 65535)
		return -EINVAL;
	memcpy(h, host, hlen);
	h[hlen] = 0;
	memset(ss, 0, sizeof(*ss));
	if (v6)
		return uv_ip6_addr(h, portn, (struct sockaddr_in6 *)ss) ? -EINVAL : 0;
	if (strcmp(h, "localhost") == 0)
		strcpy(h, "127.0.0.1");
	return uv_ip4_addr(h, portn, (struct sockaddr_in *)ss) ? -EINVAL : 0;
}

bool metrics_http_addr_valid(const char *addr)
{
	struct sockaddr_storage ss;
	return parse_addr(addr, &ss) == 0;
}

/* ------------------------------------------------------------ lifetime */

static void maybe_free(struct metrics_http *mh)
{
	if (!mh->closing || mh->open_handles)
		return;
	void (*cb)(void *) = mh->closed_cb;
	void *arg = mh->closed_arg;
	free(mh);
	if (cb)
		cb(arg);
}

static void on_conn_closed(uv_handle_t *h)
{
	struct conn *c = h->data;
	struct metrics_http *mh = c->mh;
	free(c->body);
	free(c);
	mh->n_conns--;
	mh->open_handles--;
	maybe_free(mh);
}

static void conn_close(struct conn *c)
{
	if (c->closing)
		return;
	c->closing = true;
	if (c->prev)
		c->prev->next = c->next;
	else
		c->mh->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	/* A pending write or shutdown gets its callback (ECANCELED) first. */
	uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

/* ------------------------------------------------------------ answers */

static const char *reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 431: return "Request Header Fields Too Large";
	default: return "Internal Server Error";
	}
}

static void on_shutdown(uv_shutdown_t *r, int status)
{
	struct conn *c = r->data;
	if (status < 0 && !c->closing)
		conn_close(c);
}

static void on_written(uv_write_t *w, int status)
{
	struct conn *c = w->data;
	free(c->body);
	c->body = NULL;
	c->writing = false;
	if (c->closing)
		return;
	if (status < 0) {
		conn_close(c);
		return;
	}
	c->last_ms = uv_now(c->mh->loop);
	if (c->close_after) {
		/* Reading resumes to discard what the client still sends. */
		c->draining = true;
		c->sreq.data = c;
		if (uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, on_shutdown) ||
		    read_start(c))
			conn_close(c);
		return;
	}
	http_parser_pause(&c->p, 0);
	if (c->rlen)
		feed(c);
	if (!c->writing && !c->closing && read_start(c))
		conn_close(c);
}

/* Send the head in c->head (n bytes) and, unless NULL, body (malloc'd,
 * owned by the connection from here). Reading is stopped meanwhile. */
static void send_answer(struct conn *c, size_t n, char *body, size_t body_len)
{
	uv_buf_t bufs[2] = { uv_buf_init(c->head, (unsigned)n),
			     uv_buf_init(body, (unsigned)body_len) };
	uv_read_stop((uv_stream_t *)&c->tcp);
	c->body = body;
	c->writing = true;
	c->wreq.data = c;
	if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, bufs, body ? 2 : 1, on_written)) {
		free(c->body);
		c->body = NULL;
		c->writing = false;
		conn_close(c);
	}
}

static int format_head(struct conn *c, int status, const char *ctype, size_t len)
{
	return snprintf(c->head, sizeof(c->head),
			"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			"%sConnection: %s\r\n\r\n",
			status, reason(status), ctype, len,
			status == 405 ? "Allow: GET, HEAD\r\n" : "",
			c->close_after ? "close" : "keep-alive");
}

/* An answer whose body is a short text kept in c->head after the head. */
static void answer_text(struct conn *c, int status, const char *text, bool head_only)
{
	if (status >= 400 && status != 404)
		c->close_after = true;
	size_t len = strlen(text);
	int n = format_head(c, status, "text/plain; charset=utf-8", len);
	if (!head_only)
		n += snprintf(c->head + n, sizeof(c->head) - (size_t)n, "%s", text);
	send_answer(c, (size_t)n, NULL, 0);
}

/* The parser paused at the end of a request: answer it. */
static void answer(struct conn *c)
{
	bool head_only = c->p.method == HTTP_HEAD;
	if (c->p.method != HTTP_GET && !head_only) {
		answer_text(c, 405, "only GET and HEAD are served here\n", false);
		return;
	}
	if (c->path_long || c->path_len != 8 || memcmp(c->path, "/metrics", 8) != 0) {
		answer_text(c, 404, "not found: try /metrics\n", head_only);
		return;
	}
	char *text;
	size_t len;
	if (metrics_render(c->mh->reg, &text, &len)) {
		answer_text(c, 500, "out of memory\n", head_only);
		return;
	}
	int n = format_head(c, 200, PROM_CONTENT_TYPE, len);
	if (head_only) {
		free(text);
		text = NULL;
	}
	send_answer(c, (size_t)n, text, len);
}

/* ------------------------------------------------------------ parsing */

static int add_head(struct conn *c, size_t len)
{
	c->head_bytes += len;
	if (c->head_bytes <= METRICS_HTTP_HEAD_MAX)
		return 0;
	c->error_status = 431;
	return -1;
}

static int on_message_begin(http_parser *p)
{
	struct conn *c = p->data;
	c->head_bytes = 0;
	c->path_len = 0;
	c->path_long = c->in_query = false;
	return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
	struct conn *c = p->data;
	for (size_t i = 0; i < len && !c->in_query && !c->path_long; i++) {
		if (at[i] == '?')
			c->in_query = true;
		else if (c->path_len == sizeof(c->path))
			c->path_long = true;
		else
			c->path[c->path_len++] = at[i];
	}
	return add_head(c, len);
}

static int on_header_bytes(http_parser *p, const char *at, size_t len)
{
	(void)at;
	return add_head(p->data, len);
}

static int on_headers_complete(http_parser *p)
{
	struct conn *c = p->data;
	bool body = (p->flags & F_CHUNKED) ||
		    (p->content_length > 0 && p->content_length != ULLONG_MAX);
	if (!body && !p->upgrade)
		return 0;
	/* Never read a body or speak another protocol: answer, then close. */
	c->close_after = true;
	return 1;  /* skip the body */
}

static int on_message_complete(http_parser *p)
{
	struct conn *c = p->data;
	if (!http_should_keep_alive(p))
		c->close_after = true;
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings settings = {
	.on_message_begin = on_message_begin,
	.on_url = on_url,
	.on_header_field = on_header_bytes,
	.on_header_value = on_header_bytes,
	.on_headers_complete = on_headers_complete,
	.on_message_complete = on_message_complete,
};

/* Parse rbuf[0..rlen) (rlen > 0); answer at a request's end or an error. */
static void feed(struct conn *c)
{
	size_t n = http_parser_execute(&c->p, &settings, c->rbuf, c->rlen);
	enum http_errno e = HTTP_PARSER_ERRNO(&c->p);
	if (e == HPE_PAUSED) {
		if (n > c->rlen)
			n = c->rlen;
		memmove(c->rbuf, c->rbuf + n, c->rlen - n);
		c->rlen -= n;
		answer(c);
		return;
	}
	c->rlen = 0;
	if (e != HPE_OK || c->p.upgrade) {
		c->close_after = true;
		answer_text(c, c->error_status ? c->error_status : 400,
			    c->error_status == 431 ? "request head too large\n" : "bad request\n",
			    false);
	}
}

/* ------------------------------------------------------------ sockets */

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	struct conn *c = h->data;
	(void)hint;
	/* Reading runs only while rbuf holds nothing unparsed (see top). */
	*buf = uv_buf_init(c->rbuf, sizeof(c->rbuf));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = s->data;
	(void)buf;
	if (nread == 0)
		return;
	if (nread < 0) {
		conn_close(c);   /* EOF or error */
		return;
	}
	if (c->draining) {
		c->drained += (size_t)nread;
		if (c->drained > DRAIN_MAX_BYTES)
			conn_close(c);
		return;
	}
	c->rlen = (size_t)nread;
	feed(c);
}

static int read_start(struct conn *c)
{
	return uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

static void on_connection(uv_stream_t *srv, int status)
{
	struct metrics_http *mh = srv->data;
	if (status < 0) {
		LOG_WARN("metrics listener: accept failed", "err=%s", uv_strerror(status));
		return;
	}
	struct conn *c = calloc(1, sizeof(*c));
	if (!c) {
		LOG_WARN("metrics listener: out of memory for a connection", "");
		return;
	}
	c->mh = mh;
	c->tcp.data = c;
	uv_tcp_init(mh->loop, &c->tcp);
	mh->open_handles++;
	mh->n_conns++;
	c->next = mh->conns;
	if (mh->conns)
		mh->conns->prev = c;
	mh->conns = c;
	if (uv_accept(srv, (uv_stream_t *)&c->tcp) || mh->n_conns > mh->max_conns) {
		LOG_DEBUG("metrics listener: connection refused", "open=%u", mh->n_conns);
		conn_close(c);
		return;
	}
	uv_tcp_nodelay(&c->tcp, 1);
	http_parser_init(&c->p, HTTP_REQUEST);
	c->p.data = c;
	c->last_ms = uv_now(mh->loop);
	if (read_start(c))
		conn_close(c);
}

static void on_sweep(uv_timer_t *t)
{
	struct metrics_http *mh = t->data;
	uint64_t now = uv_now(mh->loop);
	struct conn *next;
	for (struct conn *c = mh->conns; c; c = next) {
		next = c->next;
		if (now - c->last_ms >= (c->draining ? mh->linger_ms : mh->idle_ms))
			conn_close(c);
	}
}

/* ------------------------------------------------------------ public */

static void on_handle_closed(uv_handle_t *h)
{
	struct metrics_http *mh = h->data;
	mh->open_handles--;
	maybe_free(mh);
}

int metrics_http_start(uv_loop_t *loop, const char *addr, struct metrics_registry *reg,
		       const struct metrics_http_opts *opts, struct metrics_http **out)
{
	struct sockaddr_storage ss;
	if (!reg || parse_addr(addr, &ss))
		return -EINVAL;
	struct metrics_http *mh = calloc(1, sizeof(*mh));
	if (!mh)
		return -ENOMEM;
	mh->loop = loop;
	mh->reg = reg;
	mh->max_conns = opts && opts->max_conns ? opts->max_conns : DEFAULT_MAX_CONNS;
	mh->idle_ms = opts && opts->idle_timeout_ms ? opts->idle_timeout_ms : DEFAULT_IDLE_MS;
	mh->linger_ms = mh->idle_ms < DRAIN_LINGER_MS ? mh->idle_ms : DRAIN_LINGER_MS;
	uv_tcp_init(loop, &mh->listener);
	uv_timer_init(loop, &mh->sweep);
	mh->listener.data = mh->sweep.data = mh;
	mh->open_handles = 2;
	int rc = uv_tcp_bind(&mh->listener, (const struct sockaddr *)&ss, 0);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)&mh->listener, 128, on_connection);
	if (rc) {
		metrics_http_close(mh, NULL, NULL);
		return rc;   /* libuv errors are -errno on Linux */
	}
	/* Sweep at half the shortest limit: a connection lives at most half
	 * a linger past its limit. */
	uint64_t period = (mh->linger_ms + 1) / 2;
	uv_timer_start(&mh->sweep, on_sweep, period, period);
	*out = mh;
	return 0;
}

int metrics_http_port(const struct metrics_http *mh)
{
	struct sockaddr_storage ss;
	int len = sizeof(ss);
	if (uv_tcp_getsockname(&mh->listener, (struct sockaddr *)&ss, &len))
		return 0;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

void metrics_http_close(struct metrics_http *mh, void (*cb)(void *arg), void *arg)
{
	mh->closing = true;
	mh->closed_cb = cb;
	mh->closed_arg = arg;
	while (mh->conns)
		conn_close(mh->conns);
	uv_close((uv_handle_t *)&mh->listener, on_handle_closed);
	uv_close((uv_handle_t *)&mh->sweep, on_handle_closed);
}
