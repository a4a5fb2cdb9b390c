/*
 * http_resp.c — the HTTP/1.1 server's response side (model in http.h,
 * shared state in http_int.h): the status line and headers composed into
 * the connection's head buffer, whole responses in one uv_write, streamed
 * ones with Content-Length or chunked, write slots and their completions,
 * 100 Continue, and the exchange's accessors a handler uses.
 *
 * Does not read, parse, time out or close connections (http.c does; a
 * write that fails or completes a response hands back to it).
 * Write completions never run inside http_write, so it never calls back
 * into the handler: a write the socket took whole at once (uv_try_write,
 * the usual case for a response) completes from the server's idle
 * callback, the others from libuv's callback; either way in the order
 * they were submitted. Why not uv_write for all: libuv 1.44 re-arms the
 * socket's epoll entry after every uv_write it completes (uv__drain stops
 * POLLOUT, which requeues the watcher: one EPOLL_CTL_MOD per response).
 *
 * Thread: the server's loop.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <stdlib.h>

#include "common/loop.h"
#include "common/peer_addr.h"
#include "gateway/http_int.h"
#include "common/tls.h"

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

const char *conn_date(struct http_server *srv)
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

/* ------------------------------------------------------------ writing */

/* One write's completion: accounting, the handler's callback, the end of
 * the response. */
static void slot_complete(struct wslot *w)
{
	struct conn *c = w->c;
	struct http_server *srv = c->srv;
	int status = w->status;
	srv->stats.write_queued_bytes -= w->bytes;
	c->queued -= w->bytes;
	c->writes--;
	if (status == 0)
		srv->stats.bytes_out += w->bytes;
	http_write_cb cb = w->cb;
	void *arg = w->arg;
	bool last = w->last;
	w->used = false;
	if (c->tc)
		tls_conn_recycle(c->tc, w->ct, w->ct_cap);
	else
		free(w->ct);
	w->ct = NULL;
	if (cb && c->active)
		cb(&c->stream, status, arg);
	if (status < 0) {
		conn_close(c, -EPIPE);
		return;
	}
	if (last && c->phase == ACTIVE) {
		if (c->active)
			conn_maybe_finish(c);
		else if (c->limited_keep)
			conn_refusal_done(c); /* a 503 on a connection that stays */
		else
			conn_linger(c); /* the server's own error reply */
	}
}

/* Complete c's finished writes while the oldest one is finished. */
static void conn_deliver(struct conn *c)
{
	for (;;) {
		struct wslot *w = NULL;
		for (int i = 0; i < HTTP_MAX_WRITES; i++)
			if (c->w[i].used && c->w[i].seq == c->wseq_done) {
				w = &c->w[i];
				break;
			}
		if (!w || !w->done)
			return;
		c->wseq_done++;
		slot_complete(w);
	}
}

static void on_written(uv_write_t *req, int status)
{
	struct wslot *w = container_of(req, struct wslot, req);
	w->done = true;
	w->status = status;
	conn_deliver(w->c);
}

static void wdone_unlink(struct conn *c)
{
	struct http_server *srv = c->srv;
	if (!c->wdone_queued)
		return;
	struct conn **pp = &srv->wdone_head, *prev = NULL;
	while (*pp && *pp != c) {
		prev = *pp;
		pp = &(*pp)->wdone_next;
	}
	if (*pp)
		*pp = c->wdone_next;
	if (srv->wdone_tail == c)
		srv->wdone_tail = prev;
	c->wdone_queued = false;
}

void conn_writes_drain(struct http_server *srv)
{
	struct conn *c;
	while ((c = srv->wdone_head)) {
		srv->wdone_head = c->wdone_next;
		if (!srv->wdone_head)
			srv->wdone_tail = NULL;
		c->wdone_queued = false;
		conn_deliver(c);
	}
}

void conn_writes_closed(struct conn *c)
{
	wdone_unlink(c);
	conn_deliver(c);
}

/* A write finished in conn_submit: its completion is for the idle
 * callback. */
static void wdone_queue(struct conn *c)
{
	struct http_server *srv = c->srv;
	if (c->wdone_queued)
		return;
	c->wdone_queued = true;
	c->wdone_next = NULL;
	if (srv->wdone_tail)
		srv->wdone_tail->wdone_next = c;
	else
		srv->wdone_head = c;
	srv->wdone_tail = c;
	http_server_arm_idle(srv);
}

/* bufs without their first skip bytes, into rest (cap entries): the count,
 * or 0 when it does not fit. */
static unsigned bufs_skip(const uv_buf_t *bufs, unsigned n, size_t skip, uv_buf_t *rest,
			  unsigned cap)
{
	unsigned m = 0;
	for (unsigned i = 0; i < n; i++) {
		if (skip >= bufs[i].len) {
			skip -= bufs[i].len;
			continue;
		}
		if (m == cap)
			return 0;
		rest[m++] = uv_buf_init(bufs[i].base + skip, (unsigned)(bufs[i].len - skip));
		skip = 0;
	}
	return m;
}

/* TLS: bufs -> one ciphertext buffer (with whatever else was queued, in
 * order), owned by the slot until its write completes. */
static int encrypt(struct conn *c, struct wslot *w, const uv_buf_t *bufs, unsigned n,
		   uv_buf_t *out)
{
	/* A small response (head + body) goes out as one record, not one per
	 * buffer: half the records, tags and syscalls for small GETs. */
	static _Thread_local char small[16384]; /* servers may run on several loops */
	size_t total = 0;
	for (unsigned i = 0; i < n; i++)
		total += bufs[i].len;
	uv_buf_t one;
	if (n > 1 && total <= sizeof(small)) {
		size_t off = 0;
		for (unsigned i = 0; i < n; i++) {
			memcpy(small + off, bufs[i].base, bufs[i].len);
			off += bufs[i].len;
		}
		one = uv_buf_init(small, (unsigned)total);
		bufs = &one;
		n = 1;
	}
	for (unsigned i = 0; i < n; i++)
		if (bufs[i].len && tls_conn_write(c->tc, bufs[i].base, bufs[i].len)) {
			c->srv->stats.tls_failures++;
			conn_close(c, -EPROTO);
			return -EPIPE;
		}
	size_t len;
	w->ct = tls_conn_take_all(c->tc, &len, &w->ct_cap); /* NULL for an empty write */
	*out = uv_buf_init(w->ct, (unsigned)len);
	return 0;
}

struct tls_out {
	uv_write_t req;
	struct conn *c;
	char *data;                /* ciphertext, from tls_conn_take_all */
};

static void on_tls_out(uv_write_t *req, int status)
{
	struct tls_out *o = container_of(req, struct tls_out, req);
	struct conn *c = o->c;
	free(o->data);
	free(o);
	if (status < 0 && c->phase == ACTIVE)
		conn_close(c, -EPIPE);
}

void conn_tls_flush(struct conn *c)
{
	size_t len = c->tc ? tls_conn_pending(c->tc) : 0;
	if (!len || c->phase == CLOSING)
		return;
	struct tls_out *o = malloc(sizeof(*o));
	if (!o) {
		conn_close(c, -ENOMEM);
		return;
	}
	o->c = c;
	size_t cap;
	o->data = tls_conn_take_all(c->tc, &len, &cap);
	uv_buf_t b = uv_buf_init(o->data, (unsigned)len);
	if (uv_write(&o->req, (uv_stream_t *)&c->tcp, &b, 1, on_tls_out)) {
		free(o->data);
		free(o);
		conn_close(c, -EPIPE);
	}
}

/* Submit bufs as one write. 0 or -errno. */
int conn_submit(struct conn *c, uv_buf_t *bufs, unsigned n, http_write_cb cb, void *arg,
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
	uv_buf_t ctb;
	if (c->tc) {
		/* Encrypt now: the plaintext is the handler's until cb, and cb
		 * still fires when the ciphertext was handed to the kernel, so
		 * back-pressure and the slots mean what they mean in plain. */
		int rc = encrypt(c, w, bufs, n, &ctb);
		if (rc)
			return rc;
		bufs = &ctb;
		n = 1;
	}
	/* The socket first (see the top of the file); what it does not take
	 * goes through uv_write, which keeps the order with earlier writes
	 * still queued there (uv_try_write takes nothing while any is). */
	size_t out_bytes = 0;
	for (unsigned i = 0; i < n; i++)
		out_bytes += bufs[i].len;
	int took = uv_try_write((uv_stream_t *)&c->tcp, bufs, n);
	uv_buf_t rest[HTTP_WRITE_BUFS_MAX];
	if (took > 0 && (size_t)took < out_bytes) {
		n = bufs_skip(bufs, n, (size_t)took, rest, HTTP_WRITE_BUFS_MAX);
		if (!n) { /* more than HTTP_WRITE_BUFS_MAX: no caller sends that */
			free(w->ct);
			w->ct = NULL;
			conn_close(c, -EIO);
			return -EIO;
		}
		bufs = rest;
	}
	w->done = took >= 0 && (size_t)took == out_bytes;
	w->status = 0;
	w->seq = c->wseq_next;
	if (!w->done) {
		int rc = uv_write(&w->req, (uv_stream_t *)&c->tcp, bufs, n, on_written);
		if (rc) { /* the socket is gone: the exchange ends with on_finish */
			free(w->ct);
			w->ct = NULL;
			conn_close(c, rc);
			return rc;
		}
	}
	c->wseq_next++;
	if (w->done)
		wdone_queue(c);
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

void conn_send_continue(struct conn *c)
{
	static char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
	c->continue_pending = false;
	uv_buf_t b = uv_buf_init(cont, sizeof(cont) - 1);
	if (conn_submit(c, &b, 1, NULL, NULL, false, NULL))
		conn_close(c, -EPIPE);
}

/* Compose status line, server headers, user headers and the blank line
 * into c->head. cl < 0: chunked (or close-delimited for HTTP/1.0). */
/* The fixed lines of a response head, appended without printf (issue
 * 19: snprintf was 1.3 % of a GET 4 KiB's CPU): at most HEAD_FIXED_MAX
 * bytes, the room conn.head keeps beside the handler's headers (uhdr)
 * and the CRLF that ends them; past that a line is cut, which only an
 * absurd --server-name or request id header could reach. */
#define HEAD_FIXED_MAX 510
_Static_assert(sizeof(((struct conn *)0)->head) >=
		       HEAD_FIXED_MAX + HTTP_OUT_HEAD_MAX + 2 + HTTP_INLINE_BODY_MAX,
	       "conn.head holds the fixed lines, uhdr, CRLF and an inline body");

struct hput {
	char *p;
	size_t n;
};

static void hput(struct hput *h, const char *s)
{
	size_t k = strlen(s);
	if (k > HEAD_FIXED_MAX - h->n)
		k = HEAD_FIXED_MAX - h->n;
	memcpy(h->p + h->n, s, k);
	h->n += k;
}

/* v in decimal, in buf (at least 21 bytes); returns buf. */
static const char *fmt_u64(char buf[static 21], uint64_t v)
{
	char t[20];
	size_t k = 0;
	do {
		t[k++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < k; i++)
		buf[i] = t[k - 1 - i];
	buf[k] = 0;
	return buf;
}

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
	struct hput h = { c->head, 0 };
	char num[24];
	hput(&h, "HTTP/1.1 ");
	hput(&h, fmt_u64(num, (uint64_t)status));
	hput(&h, " ");
	hput(&h, http_reason(status));
	hput(&h, "\r\nDate: ");
	hput(&h, conn_date(srv));
	hput(&h, "\r\nServer: ");
	hput(&h, srv->cfg.server_name);
	hput(&h, "\r\n");
	hput(&h, srv->cfg.request_id_header);
	hput(&h, ": ");
	hput(&h, c->request_id);
	hput(&h, "\r\nx-amz-id-2: ");
	hput(&h, srv->host_id);
	hput(&h, "\r\n");
	if (!bodyless && cl >= 0) {
		hput(&h, "Content-Length: ");
		hput(&h, fmt_u64(num, (uint64_t)cl));
		hput(&h, "\r\n");
	}
	if (c->resp_chunked)
		hput(&h, "Transfer-Encoding: chunked\r\n");
	if (c->close_after)
		hput(&h, "Connection: close\r\n");
	else if (http10)
		hput(&h, "Connection: keep-alive\r\n");
	size_t n = h.n;
	memcpy(c->head + n, c->uhdr, c->uhdr_len);
	n += c->uhdr_len;
	memcpy(c->head + n, "\r\n", 2);
	c->head_len = n + 2;
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


/* The client's address as text, for policies (aws:SourceIp) and logs. An
 * IPv4-mapped IPv6 address is shown as IPv4. */
void conn_peer_name(struct conn *c)
{
	struct sockaddr_storage ss;
	int len = sizeof(ss);
	c->peer[0] = 0;
	memset(c->peer_bin, 0, sizeof(c->peer_bin));
	if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len))
		return;
	peer_addr_bin(&ss, c->peer_bin);
	if (ss.ss_family == AF_INET) {
		uv_ip4_name((struct sockaddr_in *)&ss, c->peer, sizeof(c->peer));
	} else if (ss.ss_family == AF_INET6) {
		uv_ip6_name((struct sockaddr_in6 *)&ss, c->peer, sizeof(c->peer));
		if (!strncmp(c->peer, "::ffff:", 7) && strchr(c->peer + 7, '.'))
			memmove(c->peer, c->peer + 7, strlen(c->peer + 7) + 1);
	}
}

const char *http_stream_peer_addr(const struct http_stream *s)
{
	return s->c->peer;
}

bool http_stream_is_tls(const struct http_stream *s)
{
	return s->c->tls;
}

void http_stream_set_request_id(struct http_stream *s, const char *id)
{
	snprintf(s->c->request_id, sizeof(s->c->request_id), "%s", id);
}

int http_stream_status(const struct http_stream *s)
{
	return s->c->resp_started ? s->c->status : 0;
}

uint64_t http_stream_body_sent(const struct http_stream *s)
{
	return s->c->resp_body_bytes;
}

uint64_t http_stream_queued(const struct http_stream *s)
{
	return s->c->queued;
}

void http_set_close(struct http_stream *s)
{
	s->c->close_after = true;
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
	if (send_body)
		c->resp_body_bytes += len;
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
	int rc = conn_submit(c, bufs, n, cb, arg, true, NULL);
	if (rc)
		conn_close(c, -EPIPE);
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

/* A response whose last write went short of its Content-Length has lost
 * its framing: close the connection after it. */
static void end_framing(struct conn *c)
{
	if (!c->resp_chunked && c->resp_remaining > 0 && !c->head_only)
		c->close_after = true;
}

int http_writev(struct http_stream *s, const uv_buf_t *data, unsigned nd, bool last,
		http_write_cb cb, void *arg)
{
	struct conn *c = s->c;
	static char crlf[] = "\r\n";
	static char last_chunk[] = "0\r\n\r\n";
	if (!c->resp_started || c->resp_ended)
		return -EALREADY;
	if (c->phase != ACTIVE)
		return -EPIPE;
	if (nd > HTTP_WRITEV_MAX)
		return -EINVAL;
	size_t len = 0;
	for (unsigned i = 0; i < nd; i++)
		len += data[i].len;
	if (!c->resp_chunked && c->resp_remaining >= 0 && (int64_t)len > c->resp_remaining)
		return -EMSGSIZE;
	/* The chunk header lives in the slot; find it first. */
	struct wslot *free_slot = NULL;
	for (int i = 0; i < HTTP_MAX_WRITES && !free_slot; i++)
		if (!c->w[i].used)
			free_slot = &c->w[i];
	if (!free_slot)
		return -EAGAIN;
	uv_buf_t bufs[HTTP_WRITE_BUFS_MAX];
	unsigned n = 0;
	if (c->head_pending)
		bufs[n++] = uv_buf_init(c->head, (unsigned)c->head_len);
	bool body = !c->head_only && len > 0;
	if (body && c->resp_chunked) {
		int hl = snprintf(free_slot->chunk_hdr, sizeof(free_slot->chunk_hdr), "%zx\r\n", len);
		bufs[n++] = uv_buf_init(free_slot->chunk_hdr, (unsigned)hl);
	}
	for (unsigned i = 0; body && i < nd; i++)
		if (data[i].len)
			bufs[n++] = data[i];
	if (body && c->resp_chunked)
		bufs[n++] = uv_buf_init(crlf, 2);
	if (last && c->resp_chunked && !c->head_only)
		bufs[n++] = uv_buf_init(last_chunk, 5);
	if (n == 0) /* HEAD or empty write: still complete asynchronously */
		bufs[n++] = uv_buf_init(crlf, 0);
	struct wslot *w = NULL;
	int rc = conn_submit(c, bufs, n, cb, arg, last, &w);
	if (rc)
		return rc;
	c->head_pending = false;
	if (body)
		c->resp_body_bytes += len;
	if (c->resp_remaining >= 0 && !c->resp_chunked)
		c->resp_remaining -= (int64_t)len;
	if (last) {
		end_framing(c);
		c->resp_ended = true;
	}
	return 0;
}

int http_write(struct http_stream *s, const void *data, size_t len, http_write_cb cb, void *arg)
{
	uv_buf_t b = uv_buf_init((char *)data, (unsigned)len);
	return http_writev(s, &b, 1, false, cb, arg);
}

int http_respond_end(struct http_stream *s)
{
	return http_writev(s, NULL, 0, true, NULL, NULL);
}
