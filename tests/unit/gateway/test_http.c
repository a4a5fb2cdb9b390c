/*
 * test_http.c — the HTTP/1.1 server with real sockets: a server on
 * 127.0.0.1:0 in a loop_thread, blocking client sockets in the test.
 * GET/HEAD/PUT with bodies streamed in pieces (with and without the
 * handler pausing), a 0-byte PUT answered while paused then a GET on the
 * same connection, chunked request bodies, pipelining in order,
 * keep-alive reuse, 100-continue (sent, withheld on early reject, sent
 * after a resume), 400/414/431 with close, a 64 MiB response to a slow
 * reader with bounded queued bytes, a client vanishing mid-body (handler
 * told, nothing leaks), header and idle timeouts, the connection limit,
 * and shutdown with an exchange in flight; bodies read straight into the
 * handler's memory (handler.body_buf), mixed with reads into the server's
 * buffer, paused on every piece, never for a chunked body and never past
 * the body's end (a request pipelined right behind is answered).
 *
 * Oracles: exact statuses, bodies checked by MD5 both ways, response
 * order, server counters read on the loop thread, and in every teardown
 * "every on_request got exactly one on_finish".
 *
 * make-test: alone (tests/run-tests.py): put_streamed paces a body against the server's idle timeout.
 */
#include <signal.h>
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/loop.h"
#include "gateway/http.h"

#define TIMEOUT_MS 1000
#define BIG_BYTES (64u << 20)
#define BIG_CHUNK (64u << 10)
#define BURST_WRITES 7   /* one slot left for the end */
#define BURST_CHUNK (1u << 20) /* 7 MiB: more than a loopback socket's send buffer */

/* ------------------------------------------------------------ server side */

struct req_state {
	struct http_stream *s;
	struct hash_stream *md5;
	uint64_t bytes;
	uv_timer_t timer;      /* for pause/resume and delayed starts */
	bool timer_used;
	bool pause_each;       /* pause after every body piece */
	bool answer_later;     /* the timer answers (instead of resuming) */
	char later_body[96];   /* its answer's body ("" : "later") */
	uint64_t sent;         /* /big: bytes written */
	char path[64];
	bool direct;           /* /direct*: offers memory (h_buf) */
	char *dbuf;            /* the body, read there or copied there */
	size_t dpos, dcap;
	unsigned offers;
};

struct server_state {
	struct loop_thread lt;
	struct http_server *srv;
	int port;
	/* touched on the loop thread only */
	int started, finished, finished_err, last_err;
	bool closed;
	uint32_t max_conns;
	uint64_t direct_bytes;   /* body bytes on_body got in h_buf's memory */
	int direct_bad;          /* pieces in h_buf's memory but not where offered */
	/* /burst*: the order its writes' callbacks came in, and how many came
	 * from inside http_write (there must be none) */
	int burst_order[BURST_WRITES], burst_n, burst_inside;
	bool in_write;
};

static struct server_state S;
static uint8_t big_pattern[BIG_CHUNK];

static void timer_closed(uv_handle_t *h)
{
	free(h->data);
}

static void free_state(struct req_state *rs)
{
	hash_stream_free(rs->md5);
	free(rs->dbuf);
	if (rs->timer_used) {
		rs->timer.data = rs;
		uv_close((uv_handle_t *)&rs->timer, timer_closed);
	} else {
		free(rs);
	}
}

static bool path_is(const struct http_request *r, const char *p)
{
	return r->path_len == strlen(p) && memcmp(r->path, p, r->path_len) == 0;
}

static void big_written(struct http_stream *s, int status, void *arg);

static void big_next(struct req_state *rs)
{
	if (rs->sent == BIG_BYTES) {
		http_respond_end(rs->s);
		return;
	}
	/* One write in flight: the next waits for this one's completion. */
	ck_assert_int_eq(http_write(rs->s, big_pattern, BIG_CHUNK, big_written, rs), 0);
	rs->sent += BIG_CHUNK;
}

static void big_written(struct http_stream *s, int status, void *arg)
{
	(void)s;
	if (status == 0)
		big_next(arg);
}

/* /burst and /burstsmall: BURST_WRITES writes submitted back to back,
 * write i carrying bytes of value 'a' + i. The socket takes some whole (their
 * completions come from the idle callback) and queues the rest in libuv
 * (completions from its callbacks); the callbacks must come in order. */
static void burst_written(struct http_stream *s, int status, void *arg)
{
	int i = (int)(intptr_t)arg;
	if (S.in_write)
		S.burst_inside++;
	ck_assert_int_eq(status, 0);
	S.burst_order[S.burst_n++] = i;
	if (S.burst_n == BURST_WRITES)
		http_respond_end(s);
}

static void burst(struct http_stream *s, size_t chunk)
{
	static char data[BURST_WRITES][BURST_CHUNK];
	S.burst_n = S.burst_inside = 0;
	http_respond_start(s, 200, (int64_t)(chunk * BURST_WRITES));
	for (int i = 0; i < BURST_WRITES; i++) {
		memset(data[i], 'a' + i, chunk);
		S.in_write = true;
		ck_assert_int_eq(http_write(s, data[i], chunk, burst_written, (void *)(intptr_t)i), 0);
		S.in_write = false;
	}
}

static void resume_later(uv_timer_t *t)
{
	struct req_state *rs = t->data;
	if (rs->answer_later && rs->later_body[0])
		http_respond(rs->s, 200, rs->later_body, strlen(rs->later_body), NULL, NULL);
	else if (rs->answer_later)
		http_respond(rs->s, 200, "later", 5, NULL, NULL);
	else
		http_resume(rs->s);
}

static void start_timer(struct req_state *rs, uint64_t ms)
{
	if (!rs->timer_used) {
		uv_timer_init(&S.lt.loop, &rs->timer);
		rs->timer_used = true;
	}
	rs->timer.data = rs;
	uv_timer_start(&rs->timer, resume_later, ms, 0);
}

static void h_request(struct http_stream *s, const struct http_request *r)
{
	S.started++;
	struct req_state *rs = calloc(1, sizeof(*rs));
	rs->s = s;
	rs->md5 = hash_stream_new(HASH_MD5);
	snprintf(rs->path, sizeof(rs->path), "%.*s", (int)r->path_len, r->path);
	http_stream_set_user(s, rs);
	http_add_header_n(s, "X-Path", 6, r->target, r->target_len);
	if (path_is(r, "/hello")) {
		http_respond(s, 200, "hello", 5, NULL, NULL);
	} else if (path_is(r, "/reject")) {
		http_respond(s, 403, "no", 2, NULL, NULL);
	} else if (path_is(r, "/big")) {
		http_respond_start(s, 200, BIG_BYTES);
		big_next(rs);
	} else if (path_is(r, "/chunked")) {
		http_respond_start(s, 200, -1);
		http_write(s, "abc", 3, NULL, NULL);
		http_write(s, "defgh", 5, NULL, NULL);
		http_respond_end(s);
	} else if (path_is(r, "/burst")) {
		burst(s, BURST_CHUNK);
	} else if (path_is(r, "/burstsmall")) {
		burst(s, 1000);
	} else if (path_is(r, "/vec")) {
		/* Several buffers and the end in one write (as a GET's shards). */
		uv_buf_t v[2] = { uv_buf_init("abc", 3), uv_buf_init("defgh", 5) };
		http_respond_start(s, 200, 8);
		http_writev(s, v, 2, true, NULL, NULL);
	} else if (path_is(r, "/vecchunked")) {
		uv_buf_t v[3] = { uv_buf_init("ab", 2), uv_buf_init("c", 1),
				  uv_buf_init("defgh", 5) };
		http_respond_start(s, 200, -1);
		http_writev(s, v, 2, false, NULL, NULL);
		http_writev(s, v + 2, 1, true, NULL, NULL);
	} else if (path_is(r, "/vecshort")) {
		/* The end with fewer bytes than announced: framing is lost. */
		uv_buf_t v = uv_buf_init("abc", 3);
		http_respond_start(s, 200, 8);
		http_writev(s, &v, 1, true, NULL, NULL);
	} else if (path_is(r, "/pause")) {
		rs->pause_each = true;
	} else if (path_is(r, "/direct") || path_is(r, "/directpause")) {
		rs->direct = true;
		rs->pause_each = path_is(r, "/directpause");
		rs->dcap = 4u << 20;   /* the largest body sent here: 3 MiB */
		rs->dbuf = malloc(rs->dcap);
		memset(rs->dbuf, 0xa5, rs->dcap);   /* no read may write past the body */
	} else if (path_is(r, "/slowstart")) {
		/* As an async auth would: hold the body until "later". */
		http_pause(s);
		start_timer(rs, 50);
	} else if (path_is(r, "/answerlater")) {
		/* As the S3 PUT does: pause until an async lookup, then answer a
		 * bodiless request without ever resuming. */
		http_pause(s);
		rs->answer_later = true;
		start_timer(rs, 5);
	} else if (path_is(r, "/later")) {
		/* As a GET does: answered later, the connection not paused
		 * (the socket stays read while it waits). */
		rs->answer_later = true;
		start_timer(rs, 30);
	} else if (path_is(r, "/putlater")) {
		/* As an inline S3 PUT gated from the bucket cache: paused and
		 * resumed inside on_request, its body copied (hashed here),
		 * released at its end and answered later. */
		http_pause(s);
		http_resume(s);
	} else if (path_is(r, "/hang")) {
		http_pause(s); /* never answers: only shutdown ends it */
	}
}

/* Memory for /direct's reads: up to 50,000 bytes at a time, none on every
 * third ask (that read goes to the server's buffer). */
static size_t h_buf(struct http_stream *s, size_t want, char **buf)
{
	struct req_state *rs = http_stream_user(s);
	if (!rs || !rs->direct || ++rs->offers % 3 == 0)
		return 0;
	size_t n = rs->dcap - rs->dpos;
	if (n > want)
		n = want;
	if (n > 50000)
		n = 50000;
	*buf = rs->dbuf + rs->dpos;
	return n;
}

static void h_body(struct http_stream *s, const char *data, size_t len)
{
	struct req_state *rs = http_stream_user(s);
	if (rs->direct) {
		ck_assert_uint_le(rs->dpos + len, rs->dcap);
		if (data == rs->dbuf + rs->dpos)
			S.direct_bytes += len;
		else if (data >= rs->dbuf && data < rs->dbuf + rs->dcap)
			S.direct_bad++;
		else
			memcpy(rs->dbuf + rs->dpos, data, len);
		rs->dpos += len;
	}
	hash_stream_update(rs->md5, data, len);
	rs->bytes += len;
	if (rs->pause_each) {
		http_pause(s);
		start_timer(rs, 1);
	}
}

static void h_body_end(struct http_stream *s)
{
	struct req_state *rs = http_stream_user(s);
	if (!strcmp(rs->path, "/putlater")) {
		uint8_t d[16];
		char hex[33];
		hash_stream_final(rs->md5, d);
		hash_hex(d, 16, hex);
		snprintf(rs->later_body, sizeof(rs->later_body), "len=%llu md5=%s",
			 (unsigned long long)rs->bytes, hex);
		http_body_released(s);
		rs->answer_later = true;
		start_timer(rs, 30);
		return;
	}
	if (strcmp(rs->path, "/echo") && strcmp(rs->path, "/pause") && strcmp(rs->path, "/slowstart") &&
	    !rs->direct)
		return;
	uint8_t d[16];
	char hex[33], body[96];
	hash_stream_final(rs->md5, d);
	if (rs->direct) { /* what landed in the buffer, not what on_body saw */
		hash_md5((const uint8_t *)rs->dbuf, rs->dpos, d);
		if ((uint8_t)rs->dbuf[rs->dpos] != 0xa5)
			S.direct_bad++;
	}
	hash_hex(d, 16, hex);
	int n = snprintf(body, sizeof(body), "len=%llu md5=%s", (unsigned long long)rs->bytes, hex);
	http_respond(s, 200, body, (size_t)n, NULL, NULL);
}

static void h_finish(struct http_stream *s, int err)
{
	S.finished++;
	if (err) {
		S.finished_err++;
		S.last_err = err;
	}
	free_state(http_stream_user(s));
}

static void do_start(void *arg)
{
	(void)arg;
	struct http_server_cfg cfg = {
		.port = 0, .max_conns = S.max_conns, .header_timeout_ms = TIMEOUT_MS,
		.body_timeout_ms = TIMEOUT_MS, .idle_timeout_ms = TIMEOUT_MS,
		.handler = { h_request, h_body, h_body_end, h_finish, NULL, h_buf },
	};
	ck_assert_int_eq(http_server_start(&S.lt.loop, &cfg, &S.srv), 0);
	S.port = http_server_port(S.srv);
}

static void do_start_dup(void *arg)
{
	struct http_server_cfg cfg = { .port = S.port, .max_conns = 4,
				       .handler = { h_request, h_body, h_body_end, h_finish, NULL } };
	struct http_server *srv = NULL;
	*(int *)arg = http_server_start(&S.lt.loop, &cfg, &srv);
	ck_assert_ptr_null(srv);
}

static void on_closed(void *arg)
{
	(void)arg;
	S.closed = true;
}

static void do_close(void *arg)
{
	(void)arg;
	http_server_close(S.srv, on_closed, NULL);
}

struct snap {
	struct http_stats st;
	int started, finished, finished_err, last_err;
	bool closed;
	uint64_t direct_bytes;
	int direct_bad;
};

static void do_snap(void *arg)
{
	struct snap *sn = arg;
	if (!S.closed)
		http_server_stats(S.srv, &sn->st);
	sn->started = S.started;
	sn->finished = S.finished;
	sn->finished_err = S.finished_err;
	sn->last_err = S.last_err;
	sn->closed = S.closed;
	sn->direct_bytes = S.direct_bytes;
	sn->direct_bad = S.direct_bad;
}

static struct snap snap(void)
{
	struct snap sn;
	memset(&sn, 0, sizeof(sn));
	ck_assert_int_eq(loop_thread_call(&S.lt, do_snap, &sn), 0);
	return sn;
}

static void start_server(uint32_t max_conns)
{
	memset(&S, 0, sizeof(S));
	S.max_conns = max_conns;
	for (size_t i = 0; i < sizeof(big_pattern); i++)
		big_pattern[i] = (uint8_t)(i * 7 % 251);
	ck_assert_int_eq(loop_thread_start(&S.lt, "http-test"), 0);
	ck_assert_int_eq(loop_thread_call(&S.lt, do_start, NULL), 0);
}

static void setup(void)
{
	start_server(0);
}

/* Wait until cond holds on the loop thread's counters (or 3 s). */
static struct snap wait_for(bool (*cond)(const struct snap *))
{
	struct snap sn;
	for (int i = 0; i < 300; i++) {
		sn = snap();
		if (cond(&sn))
			return sn;
		usleep(10000);
	}
	return sn;
}

static bool all_finished(const struct snap *sn)
{
	return sn->started == sn->finished && sn->st.conns_active == 0;
}

static void teardown(void)
{
	ck_assert_int_eq(loop_thread_call(&S.lt, do_close, NULL), 0);
	struct snap sn;
	for (int i = 0; i < 300; i++) {
		sn = snap();
		if (sn.closed)
			break;
		usleep(10000);
	}
	ck_assert(sn.closed);
	/* Every exchange that started has finished exactly once. */
	ck_assert_int_eq(sn.started, sn.finished);
	loop_thread_stop(&S.lt);
}

/* ------------------------------------------------------------ client side */

static int dial(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)S.port) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	struct timeval tv = { .tv_sec = 5 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static void send_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
		ck_assert_int_gt(w, 0);
		c += w;
		n -= (size_t)w;
	}
}

static void send_str(int fd, const char *s)
{
	send_all(fd, s, strlen(s));
}

/* A buffered reader over the socket. */
struct rd {
	int fd;
	char buf[65536];
	size_t pos, len;
};

static ssize_t rd_fill(struct rd *r)
{
	if (r->pos == r->len)
		r->pos = r->len = 0;
	if (r->len == sizeof(r->buf)) {
		memmove(r->buf, r->buf + r->pos, r->len - r->pos);
		r->len -= r->pos;
		r->pos = 0;
	}
	ssize_t n = recv(r->fd, r->buf + r->len, sizeof(r->buf) - r->len, 0);
	if (n > 0)
		r->len += (size_t)n;
	return n;
}

/* Read one line (without CRLF) into out; false on EOF. */
static bool rd_line(struct rd *r, char *out, size_t cap)
{
	for (;;) {
		char *nl = memchr(r->buf + r->pos, '\n', r->len - r->pos);
		if (nl) {
			size_t l = (size_t)(nl - (r->buf + r->pos));
			size_t cl = l > 0 && r->buf[r->pos + l - 1] == '\r' ? l - 1 : l;
			ck_assert_uint_lt(cl, cap);
			memcpy(out, r->buf + r->pos, cl);
			out[cl] = '\0';
			r->pos += l + 1;
			return true;
		}
		if (r->pos > 0) {
			memmove(r->buf, r->buf + r->pos, r->len - r->pos);
			r->len -= r->pos;
			r->pos = 0;
		}
		if (rd_fill(r) <= 0)
			return false;
	}
}

static void rd_exact(struct rd *r, char *out, size_t n)
{
	while (n) {
		if (r->pos == r->len)
			ck_assert_int_gt(rd_fill(r), 0);
		size_t k = r->len - r->pos < n ? r->len - r->pos : n;
		if (out) {
			memcpy(out, r->buf + r->pos, k);
			out += k;
		}
		r->pos += k;
		n -= k;
	}
}

struct resp {
	int status;
	long long content_length;  /* -1: none */
	bool chunked, close;
	char request_id[80];
	char xpath[256];
	char body[4096];
	size_t body_len;
};

/* Read a response head (skipping nothing: 100 Continue is a response). */
static bool read_head(struct rd *r, struct resp *p)
{
	char line[8192];
	memset(p, 0, sizeof(*p));
	p->content_length = -1;
	if (!rd_line(r, line, sizeof(line)))
		return false;
	ck_assert_msg(sscanf(line, "HTTP/1.1 %d", &p->status) == 1, "status line: %s", line);
	while (rd_line(r, line, sizeof(line)) && line[0]) {
		if (!strncasecmp(line, "Content-Length: ", 16))
			p->content_length = atoll(line + 16);
		else if (!strcasecmp(line, "Transfer-Encoding: chunked"))
			p->chunked = true;
		else if (!strcasecmp(line, "Connection: close"))
			p->close = true;
		else if (!strncasecmp(line, "x-amz-request-id: ", 18))
			snprintf(p->request_id, sizeof(p->request_id), "%.79s", line + 18);
		else if (!strncasecmp(line, "X-Path: ", 8))
			snprintf(p->xpath, sizeof(p->xpath), "%.255s", line + 8);
	}
	return true;
}

static void read_response(struct rd *r, struct resp *p, bool head_request)
{
	ck_assert(read_head(r, p));
	if (head_request)
		return;
	if (p->chunked) {
		char line[64];
		for (;;) {
			ck_assert(rd_line(r, line, sizeof(line)));
			size_t n = strtoul(line, NULL, 16);
			if (n == 0) {
				ck_assert(rd_line(r, line, sizeof(line)));
				ck_assert_str_eq(line, "");
				break;
			}
			ck_assert_uint_le(p->body_len + n, sizeof(p->body) - 1);
			rd_exact(r, p->body + p->body_len, n);
			p->body_len += n;
			ck_assert(rd_line(r, line, sizeof(line)));
		}
	} else if (p->content_length > 0) {
		ck_assert_int_lt(p->content_length, (long long)sizeof(p->body));
		rd_exact(r, p->body, (size_t)p->content_length);
		p->body_len = (size_t)p->content_length;
	}
	p->body[p->body_len] = '\0';
}

static bool peer_closed(struct rd *r)
{
	char c;
	if (r->pos < r->len)
		return false;
	ssize_t n = recv(r->fd, &c, 1, 0);
	return n == 0 || (n < 0 && errno == ECONNRESET);
}

static void md5_hex(const void *p, size_t n, char hex[33])
{
	uint8_t d[16];
	hash_md5(p, n, d);
	hash_hex(d, 16, hex);
}

/* ------------------------------------------------------------ tests */

START_TEST(test_get_head_keepalive)
{
	struct rd r = { .fd = dial() };
	struct resp p;
	send_str(r.fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
	read_response(&r, &p, false);
	ck_assert_int_eq(p.status, 200);
	ck_assert_str_eq(p.body, "hello");
	ck_assert_int_eq(strlen(p.request_id), 16);
	char first_id[80];
	strcpy(first_id, p.request_id);

	send_str(r.fd, "HEAD /hello HTTP/1.1\r\nHost: x\r\n\r\n");
	read_response(&r, &p, true);
	ck_assert_int_eq(p.status, 200);
	ck_assert_int_eq(p.content_length, 5); /* as GET would, but no body */

	/* The next response starts right after HEAD's head: no stray body. */
	send_str(r.fd, "GET /chunked HTTP/1.1\r\nHost: x\r\n\r\n");
	read_response(&r, &p, false);
	ck_assert_int_eq(p.status, 200);
	ck_assert(p.chunked);
	ck_assert_str_eq(p.body, "abcdefgh");
	ck_assert_str_ne(p.request_id, first_id);

	/* HTTP/1.0 without keep-alive gets Connection: close and EOF. */
	send_str(r.fd, "GET /hello HTTP/1.0\r\n\r\n");
	read_response(&r, &p, false);
	ck_assert(p.close);
	ck_assert(peer_closed(&r));
	close(r.fd);

	/* The port is taken: a second server fails cleanly (LSan: no leak). */
	int rc = 0;
	ck_assert_int_eq(loop_thread_call(&S.lt, do_start_dup, &rc), 0);
	ck_assert_int_eq(rc, -EADDRINUSE);

	struct snap sn = wait_for(all_finished);
	ck_assert_uint_eq(sn.st.conns_accepted, 1); /* one connection, reused */
	ck_assert_uint_eq(sn.st.requests, 4);
	ck_assert_uint_eq(sn.st.responses[2], 4);
}
END_TEST

START_TEST(test_writev)
{
	struct rd r = { .fd = dial() };
	struct resp p;
	send_str(r.fd, "GET /vec HTTP/1.1\r\nHost: x\r\n\r\n");
	read_response(&r, &p, false);
	ck_assert_int_eq(p.status, 200);
	ck_assert(!p.chunked);
	ck_assert_int_eq(p.content_length, 8);
	ck_assert_str_eq(p.body, "abcdefgh");
	send_str(r.fd, "GET /vecchunked HTTP/1.1\r\nHost: x\r\n\r\n");
	read_response(&r, &p, false);
	ck_assert(p.chunked);
	ck_assert_str_eq(p.body, "abcdefgh");
	/* The writes ended both responses: the connection goes on. */
	send_str(r.fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
	read_response(&r, &p, false);
	ck_assert_str_eq(p.body, "hello");
	close(r.fd);
	/* A short last write closes the connection after it. */
	r = (struct rd){ .fd = dial() };
	send_str(r.fd, "GET /vecshort HTTP/1.1\r\nHost: x\r\n\r\n");
	char got[4096];
	size_t n = 0;
	ssize_t k = -1;
	while (n < sizeof(got) - 1 && (k = recv(r.fd, got + n, sizeof(got) - 1 - n, 0)) > 0)
		n += (size_t)k;
	got[n] = 0;
	ck_assert_int_eq(k, 0); /* EOF after "abc" */
	ck_assert_ptr_nonnull(strstr(got, "Content-Length: 8\r\n"));
	ck_assert_str_eq(got + n - 3, "abc");
	close(r.fd);
}
END_TEST

static void put_streamed(const char *path, size_t total, bool chunked, unsigned seed)
{
	struct rd r = { .fd = dial() };
	char *body = malloc(total);
	srand(seed);
	for (size_t i = 0; i < total; i++)
		body[i] = (char)rand();
	char head[256];
	if (chunked)
		snprintf(head, sizeof(head),
			 "PUT %s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", path);
	else
		snprintf(head, sizeof(head), "PUT %s HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n",
			 path, total);
	send_str(r.fd, head);
	for (size_t off = 0; off < total;) {
		size_t n = 1 + (size_t)rand() % 70000;
		if (n > total - off)
			n = total - off;
		if (chunked) {
			char ch[32];
			snprintf(ch, sizeof(ch), "%zx;ext=1\r\n", n);
			send_str(r.fd, ch);
		}
		send_all(r.fd, body + off, n);
		if (chunked)
			send_str(r.fd, "\r\n");
		off += n;
		if (rand() % 8 == 0)
			usleep(1000);
	}
	if (chunked)
		send_str(r.fd, "0\r\nx-trailer: t\r\n\r\n");
	struct resp p;
	read_response(&r, &p, false);
	ck_assert_int_eq(p.status, 200);
	char want[96], hex[33];
	md5_hex(body, total, hex);
	snprintf(want, sizeof(want), "len=%zu md5=%s", total, hex);
	ck_assert_str_eq(p.body, want);
	/* And the connection is still good. */
	send_str(r.fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
	read_response(&r, &p, false);
	ck_assert_str_eq(p.body, "hello");
	close(r.fd);
	free(body);
}

START_TEST(test_put_streamed)
{
	put_streamed("/echo", 3u << 20, false, 1);
	put_streamed("/echo", 0, false, 2);
	put_streamed("/pause", 1u << 20, false, 3);     /* handler pauses on every piece */
	put_streamed("/slowstart", 1u << 20, false, 4); /* paused before the first byte */
	struct snap sn = wait_for(all_finished);
	ck_assert_int_eq(sn.finished_err, 0);
}
END_TEST

/* Regression: a bodiless PUT (Content-Length: 0) paused by its handler
 * and answered later left the connection paused, so the next request on
 * it was never read. */
START_TEST(test_zero_put_then_get)
{
	struct rd r = { .fd = dial() };
	struct resp p;
	for (int i = 0; i < 3; i++) {
		send_str(r.fd, "PUT /answerlater HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
		read_response(&r, &p, false);
		ck_assert_int_eq(p.status, 200);
		ck_assert_str_eq(p.body, "later");
		ck_assert(!p.close);
		send_str(r.fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
		struct pollfd pf = { .fd = r.fd, .events = POLLIN };
		ck_assert_int_eq(poll(&pf, 1, 500), 1); /* answered, not stalled */
		read_response(&r, &p, false);
		ck_assert_int_eq(p.status, 200);
		ck_assert_str_eq(p.body, "hello");
	}
	/* A 0-byte PUT with Expect: 100-continue (as botocore sends it) gets
	 * its 100 before the final answer, so the client does not take that
	 * answer for the next request's; then a body held behind 100-continue
	 * on the same connection. */
	send_str(r.fd, "PUT /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
		       "Expect: 100-continue\r\n\r\n");
	ck_assert(read_head(&r, &p));
	ck_assert_int_eq(p.status, 100);
	read_response(&r, &p, false);
	ck_assert_int_eq(p.status, 200);
	ck_assert_uint_eq(strncmp(p.body, "len=0 ", 6), 0);
	send_str(r.fd, "PUT /slowstart HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
		       "Expect: 100-continue\r\n\r\n");
	ck_assert(read_head(&r, &p));
	ck_assert_int_eq(p.status, 100);
	send_str(r.fd, "ok");
	read_response(&r, &p, false);
	ck_assert_int_eq(p.status, 200);
	close(r.fd);
	struct snap sn = wait_for(all_finished);
	ck_assert_uint_eq(sn.st.conns_accepted, 1);
	ck_assert_int_eq(sn.finished, 8);
	ck_assert_int_eq(sn.finished_err, 0);
}
END_TEST

START_TEST(test_chunked_request)
{
	put_streamed("/echo", 2u << 20, true, 5);
	put_streamed("/pause", 300000, true, 6);
	/* Bad chunk framing after the head: the exchange dies with -EPROTO. */
	struct rd r = { .fd = dial() };
	send_str(r.fd, "PUT /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
		       "5\r\nhello\r\nzz\r\n");
	ck_assert(peer_closed(&r));
	close(r.fd);
	struct snap sn = wait_for(all_finished);
	ck_assert_int_eq(sn.finished_err, 1);
	ck_assert_int_eq(sn.last_err, -EPROTO);
}
END_TEST

START_TEST(test_body_direct)
{
	put_streamed("/direct", 3u << 20, false, 11);
	struct snap sn = wait_for(all_finished);
	ck_assert_uint_gt(sn.direct_bytes, 0);
	ck_assert_uint_lt(sn.direct_bytes, 3u << 20);   /* every third read went to rbuf */
	put_streamed("/directpause", 1u << 20, false, 12);
	sn = wait_for(all_finished);
	uint64_t before = sn.direct_bytes;
	/* Chunked: the framing would land in the handler's memory. */
	put_streamed("/direct", 300000, true, 13);
	sn = wait_for(all_finished);
	ck_assert_uint_eq(sn.direct_bytes, before);
	/* The body's end and the next request in one segment: the read into
	 * the handler's memory takes the body's 5 bytes only. */
	struct rd r = { .fd = dial() };
	struct resp p;
	for (int i = 0; i < 4; i++) {
		send_str(r.fd, "PUT /direct HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n");
		usleep(20 * 1000);   /* the head alone: the body's read is offered */
		send_str(r.fd, "helloGET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
		read_response(&r, &p, false);
		char hex[33], want[96];
		md5_hex("hello", 5, hex);
		snprintf(want, sizeof(want), "len=5 md5=%s", hex);
		ck_assert_str_eq(p.body, want);
		read_response(&r, &p, false);
		ck_assert_str_eq(p.body, "hello");
	}
	close(r.fd);
	sn = wait_for(all_finished);
	ck_assert_uint_gt(sn.direct_bytes, before);
	ck_assert_int_eq(sn.direct_bad, 0);
	ck_assert_int_eq(sn.finished_err, 0);
}
END_TEST

START_TEST(test_pipelined)
{
	struct rd r = { .fd = dial() };
	/* Three requests in one segment, a body in the middle. */
	send_str(r.fd, "GET /hello?i=1 HTTP/1.1\r\nHost: x\r\n\r\n"
		       "PUT /echo?i=2 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
		       "GET /chunked?i=3 HTTP/1.1\r\nHost: x\r\n\r\n"
		       "HEAD /hello?i=4 HTTP/1.1\r\nHost: x\r\n\r\n"
		       "GET /hello?i=5 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	struct resp p;
	read_response(&r, &p, false);
	ck_assert_str_eq(p.xpath, "/hello?i=1");
	ck_assert_str_eq(p.body, "hello");
	read_response(&r, &p, false);
	ck_assert_str_eq(p.xpath, "/echo?i=2");
	char hex[33], want[96];
	md5_hex("abc", 3, hex);
	snprintf(want, sizeof(want), "len=3 md5=%s", hex);
	ck_assert_str_eq(p.body, want);
	read_response(&r, &p, false);
	ck_assert_str_eq(p.xpath, "/chunked?i=3");
	ck_assert_str_eq(p.body, "abcdefgh");
	read_response(&r, &p, true);
	ck_assert_str_eq(p.xpath, "/hello?i=4");
	read_response(&r, &p, false);
	ck_assert_str_eq(p.xpath, "/hello?i=5");
	ck_assert(p.close);
	ck_assert(peer_closed(&r));
	close(r.fd);
	struct snap sn = wait_for(all_finished);
	ck_assert_uint_eq(sn.st.conns_accepted, 1);
	ck_assert_int_eq(sn.finished, 5);
}
END_TEST

/* Bytes and an EOF that come while a bodiless request is answered (the
 * socket is read between requests, http.c reads_between): the requests
 * pipelined behind it are answered in order after it, and the connection
 * is closed only once all of them were. */
START_TEST(test_half_close_in_flight)
{
	struct rd r = { .fd = dial() };
	send_str(r.fd, "GET /later?i=1 HTTP/1.1\r\nHost: x\r\n\r\n");
	usleep(10 * 1000);   /* inside /later's 30 ms */
	send_str(r.fd, "GET /hello?i=2 HTTP/1.1\r\nHost: x\r\n\r\n"
		       "GET /later?i=3 HTTP/1.1\r\nHost: x\r\n\r\n");
	ck_assert_int_eq(shutdown(r.fd, SHUT_WR), 0);
	struct resp p;
	read_response(&r, &p, false);
	ck_assert_str_eq(p.xpath, "/later?i=1");
	ck_assert_str_eq(p.body, "later");
	read_response(&r, &p, false);
	ck_assert_str_eq(p.xpath, "/hello?i=2");
	ck_assert_str_eq(p.body, "hello");
	read_response(&r, &p, false);
	ck_assert_str_eq(p.xpath, "/later?i=3");
	ck_assert_str_eq(p.body, "later");
	ck_assert(peer_closed(&r));
	close(r.fd);
	struct snap sn = wait_for(all_finished);
	ck_assert_int_eq(sn.finished, 3);
	ck_assert_int_eq(sn.finished_err, 0);

	/* A half-close right after one request: answered, then closed. */
	r = (struct rd){ .fd = dial() };
	send_str(r.fd, "GET /later?i=4 HTTP/1.1\r\nHost: x\r\n\r\n");
	ck_assert_int_eq(shutdown(r.fd, SHUT_WR), 0);
	read_response(&r, &p, false);
	ck_assert_str_eq(p.xpath, "/later?i=4");
	ck_assert(peer_closed(&r));
	close(r.fd);
	sn = wait_for(all_finished);
	ck_assert_int_eq(sn.finished, 4);
	ck_assert_int_eq(sn.finished_err, 0);

	/* The same with Connection: close (the answer's end lingers). */
	r = (struct rd){ .fd = dial() };
	send_str(r.fd, "GET /later?i=5 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	ck_assert_int_eq(shutdown(r.fd, SHUT_WR), 0);
	read_response(&r, &p, false);
	ck_assert_str_eq(p.xpath, "/later?i=5");
	ck_assert(p.close);
	ck_assert(peer_closed(&r));
	close(r.fd);
	sn = wait_for(all_finished);
	ck_assert_int_eq(sn.finished, 5);
	ck_assert_int_eq(sn.finished_err, 0);
}
END_TEST

/* A request with a body whose handler released it (http_body_released:
 * it copied every span) keeps the socket read while it is answered, as a
 * bodiless one does: bytes, pipelined requests and an EOF that come
 * meanwhile are answered in order after it, its body intact. */
START_TEST(test_released_body)
{
	struct rd r = { .fd = dial() };
	send_str(r.fd, "PUT /putlater?i=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello");
	usleep(10 * 1000);   /* inside /putlater's 30 ms */
	send_str(r.fd, "GET /hello?i=2 HTTP/1.1\r\nHost: x\r\n\r\n"
		       "PUT /putlater?i=3 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
		       "GET /hello?i=4 HTTP/1.1\r\nHost: x\r\n\r\n");
	ck_assert_int_eq(shutdown(r.fd, SHUT_WR), 0);
	struct resp p;
	char hex[33], want[96];
	read_response(&r, &p, false);
	ck_assert_str_eq(p.xpath, "/putlater?i=1");
	md5_hex("hello", 5, hex);
	snprintf(want, sizeof(want), "len=5 md5=%s", hex);
	ck_assert_str_eq(p.body, want);
	read_response(&r, &p, false);
	ck_assert_str_eq(p.xpath, "/hello?i=2");
	ck_assert_str_eq(p.body, "hello");
	read_response(&r, &p, false);
	ck_assert_str_eq(p.xpath, "/putlater?i=3");
	md5_hex("abc", 3, hex);
	snprintf(want, sizeof(want), "len=3 md5=%s", hex);
	ck_assert_str_eq(p.body, want);
	read_response(&r, &p, false);
	ck_assert_str_eq(p.xpath, "/hello?i=4");
	ck_assert(peer_closed(&r));
	close(r.fd);
	struct snap sn = wait_for(all_finished);
	ck_assert_int_eq(sn.finished, 4);
	ck_assert_int_eq(sn.finished_err, 0);
}
END_TEST

START_TEST(test_expect_continue)
{
	struct rd r = { .fd = dial() };
	struct resp p;
	send_str(r.fd, "PUT /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n");
	ck_assert(read_head(&r, &p));
	ck_assert_int_eq(p.status, 100);
	send_str(r.fd, "data");
	read_response(&r, &p, false);
	ck_assert_int_eq(p.status, 200);
	ck_assert_uint_eq(strncmp(p.body, "len=4 ", 6), 0);

	/* Rejected before the body: a final status, no 100, then close. */
	send_str(r.fd, "PUT /reject HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n"
		       "Expect: 100-continue\r\n\r\n");
	read_response(&r, &p, false);
	ck_assert_int_eq(p.status, 403);
	ck_assert(p.close);
	ck_assert(peer_closed(&r));
	close(r.fd);

	/* Paused in on_request (auth in flight): 100 only after resume. */
	r = (struct rd){ .fd = dial() };
	send_str(r.fd, "PUT /slowstart HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
		       "Expect: 100-continue\r\n\r\n");
	struct pollfd pf = { .fd = r.fd, .events = POLLIN };
	ck_assert_int_eq(poll(&pf, 1, 20), 0); /* nothing within 20 ms of the 50 ms pause */
	ck_assert(read_head(&r, &p));
	ck_assert_int_eq(p.status, 100);
	send_str(r.fd, "ok");
	read_response(&r, &p, false);
	ck_assert_int_eq(p.status, 200);
	close(r.fd);
	wait_for(all_finished);
}
END_TEST

/* The refusal of a bad head: status, an S3 error document with code and a
 * message containing why, the connection closed. */
static void expect_error_says(const char *req, size_t len, int status, const char *code,
			      const char *why)
{
	struct rd r = { .fd = dial() };
	send_all(r.fd, req, len);
	struct resp p;
	read_response(&r, &p, false);
	ck_assert_int_eq(p.status, status);
	ck_assert(p.close);
	ck_assert_int_eq(strlen(p.request_id), 16);
	char want[96];
	snprintf(want, sizeof(want), "<Code>%s</Code>", code);
	ck_assert_msg(strstr(p.body, want), "body %s", p.body);
	ck_assert_msg(strstr(p.body, why), "body %s", p.body);
	ck_assert(strstr(p.body, p.request_id));
	ck_assert(peer_closed(&r));
	close(r.fd);
}

static void expect_error(const char *req, size_t len, int status)
{
	expect_error_says(req, len, status, status == 431 ? "RequestHeaderSectionTooLarge"
					    : status == 414 ? "InvalidURI" : "InvalidRequest",
			  "</Message>");
}

START_TEST(test_bad_requests)
{
	char *big = malloc(64 * 1024);
	/* Garbage request line. */
	const char *g = "GARBAGE\x01 / HTTP/1.1\r\n\r\n";
	expect_error(g, strlen(g), 400);
	g = "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n";
	expect_error(g, strlen(g), 400);
	g = "GET / HTTP/1.1\r\nBad Header\r\n\r\n";
	expect_error_says(g, strlen(g), 400, "InvalidRequest", "invalid character in header");
	g = "GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n";
	expect_error_says(g, strlen(g), 400, "InvalidRequest",
			  "repeats Content-Length with different values");
	g = "PUT / HTTP/1.1\r\nExpect: something\r\nContent-Length: 1\r\n\r\n";
	expect_error_says(g, strlen(g), 417, "InvalidRequest", "100-continue");
	/* A 20 KiB header: 431. */
	int n = sprintf(big, "GET / HTTP/1.1\r\nX-Big: ");
	memset(big + n, 'a', 20000);
	n += 20000;
	n += sprintf(big + n, "\r\n\r\n");
	expect_error(big, (size_t)n, 431);
	/* 101 headers: 431. */
	n = sprintf(big, "GET / HTTP/1.1\r\n");
	for (int i = 0; i < 101; i++)
		n += sprintf(big + n, "X-H%d: v\r\n", i);
	n += sprintf(big + n, "\r\n");
	expect_error(big, (size_t)n, 431);
	/* A 9 KiB target: 414. */
	n = sprintf(big, "GET /");
	memset(big + n, 'u', 9000);
	n += 9000;
	n += sprintf(big + n, " HTTP/1.1\r\n\r\n");
	expect_error(big, (size_t)n, 414);
	free(big);
	struct snap sn = wait_for(all_finished);
	ck_assert_uint_eq(sn.st.bad_requests, 8);
	ck_assert_int_eq(sn.started, 0); /* the handler never saw them */
}
END_TEST

START_TEST(test_big_response_slow_reader)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	int rcv = 64 * 1024;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)S.port) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	struct rd *r = calloc(1, sizeof(*r));
	r->fd = fd;
	send_str(fd, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
	struct resp p;
	ck_assert(read_head(r, &p));
	ck_assert_int_eq(p.status, 200);
	ck_assert_int_eq(p.content_length, BIG_BYTES);
	uint64_t got = 0, bad = 0, max_queued = 0;
	char buf[16384];
	int iter = 0;
	while (got < BIG_BYTES) {
		size_t want = BIG_BYTES - got < sizeof(buf) ? BIG_BYTES - got : sizeof(buf);
		size_t k;
		if (r->pos < r->len) {
			k = r->len - r->pos < want ? r->len - r->pos : want;
			memcpy(buf, r->buf + r->pos, k);
			r->pos += k;
		} else {
			ssize_t n = recv(fd, buf, want, 0);
			ck_assert_int_gt(n, 0);
			k = (size_t)n;
		}
		for (size_t i = 0; i < k; i++)
			bad += (uint8_t)buf[i] != (uint8_t)(((got + i) % BIG_CHUNK) * 7 % 251);
		got += k;
		/* Slow: the server is stuck behind a full socket most of the time. */
		if (++iter % 64 == 0) {
			usleep(2000);
			struct snap sn = snap();
			if (sn.st.write_queued_bytes > max_queued)
				max_queued = sn.st.write_queued_bytes;
		}
	}
	ck_assert_uint_eq(got, BIG_BYTES);
	ck_assert_uint_eq(bad, 0);
	close(fd);
	free(r);
	struct snap sn = wait_for(all_finished);
	/* One 64 KiB chunk plus the head in flight, never the body. */
	ck_assert_uint_le(sn.st.write_queued_max, BIG_CHUNK + 1024);
	ck_assert_uint_le(max_queued, BIG_CHUNK + 1024);
	ck_assert_uint_ge(sn.st.bytes_out, BIG_BYTES);
}
END_TEST

/* Writes taken whole by the socket and writes queued in libuv complete in
 * the order they were submitted, never inside http_write, and the bytes
 * go out in that order. */
START_TEST(test_write_completion_order)
{
	for (int round = 0; round < 2; round++) {
		bool small = round == 0;
		size_t chunk = small ? 1000 : BURST_CHUNK;
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		int rcv = 16 * 1024;   /* /burst: the socket fills after the first write or two */
		if (!small)
			setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_port = htons((uint16_t)S.port) };
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
		struct rd *r = calloc(1, sizeof(*r));
		r->fd = fd;
		send_str(fd, small ? "GET /burstsmall HTTP/1.1\r\nHost: x\r\n\r\n"
				   : "GET /burst HTTP/1.1\r\nHost: x\r\n\r\n");
		struct resp p;
		ck_assert(read_head(r, &p));
		ck_assert_int_eq(p.status, 200);
		ck_assert_int_eq(p.content_length, (int64_t)(chunk * BURST_WRITES));
		size_t got = 0, bad = 0;
		char buf[8192];
		while (got < chunk * BURST_WRITES) {
			size_t k;
			if (r->pos < r->len) {
				k = r->len - r->pos < sizeof(buf) ? r->len - r->pos : sizeof(buf);
				memcpy(buf, r->buf + r->pos, k);
				r->pos += k;
			} else {
				ssize_t n = recv(fd, buf, sizeof(buf), 0);
				ck_assert_int_gt(n, 0);
				k = (size_t)n;
			}
			for (size_t i = 0; i < k; i++)
				bad += buf[i] != (char)('a' + (got + i) / chunk);
			got += k;
			if (!small && got % (256 << 10) < k)
				usleep(2000);   /* slow: later writes wait in libuv */
		}
		ck_assert_uint_eq(bad, 0);
		/* The connection goes on after the response. */
		send_str(fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
		read_response(r, &p, false);
		ck_assert_str_eq(p.body, "hello");
		close(fd);
		free(r);
		wait_for(all_finished);
		ck_assert_int_eq(S.burst_n, BURST_WRITES);
		ck_assert_int_eq(S.burst_inside, 0);
		for (int i = 0; i < BURST_WRITES; i++)
			ck_assert_int_eq(S.burst_order[i], i);
	}
}
END_TEST

static bool one_err(const struct snap *sn)
{
	return sn->finished_err == 1 && sn->st.conns_active == 0;
}

START_TEST(test_abort_mid_body)
{
	struct rd r = { .fd = dial() };
	send_str(r.fd, "PUT /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n");
	char chunk[100000];
	memset(chunk, 'z', sizeof(chunk));
	send_all(r.fd, chunk, sizeof(chunk));
	usleep(20000);
	close(r.fd);
	struct snap sn = wait_for(one_err);
	ck_assert_int_eq(sn.finished_err, 1);
	ck_assert_int_eq(sn.last_err, -ECONNRESET);
	ck_assert_int_eq(sn.started, sn.finished);
	ck_assert_uint_eq(sn.st.conns_active, 0);
	ck_assert_uint_eq(sn.st.aborted, 1);
}
END_TEST

START_TEST(test_timeouts)
{
	/* A head that never ends: closed after the header timeout. */
	struct rd r = { .fd = dial() };
	send_str(r.fd, "GET /hello HTTP/1.1\r\nHost: x\r\n");
	uint64_t t0 = loop_now_ms();
	ck_assert(peer_closed(&r));
	uint64_t el = loop_now_ms() - t0;
	ck_assert_uint_ge(el, TIMEOUT_MS - 50);
	ck_assert_uint_le(el, TIMEOUT_MS + 1500);
	close(r.fd);

	/* Idle keep-alive: closed quietly after the idle timeout. */
	r = (struct rd){ .fd = dial() };
	struct resp p;
	send_str(r.fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
	read_response(&r, &p, false);
	t0 = loop_now_ms();
	ck_assert(peer_closed(&r));
	el = loop_now_ms() - t0;
	ck_assert_uint_ge(el, TIMEOUT_MS - 50);
	close(r.fd);

	/* A body that stalls: the exchange times out. */
	r = (struct rd){ .fd = dial() };
	send_str(r.fd, "PUT /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc");
	ck_assert(peer_closed(&r));
	close(r.fd);
	struct snap sn = wait_for(all_finished);
	ck_assert_uint_eq(sn.st.timeouts, 2); /* idle closes are not timeouts */
	ck_assert_int_eq(sn.last_err, -ETIMEDOUT);
}
END_TEST

START_TEST(test_conn_limit_and_shutdown)
{
	/* This test runs its own server with two connections at most. */
	teardown();
	start_server(2);
	struct rd a = { .fd = dial() }, b = { .fd = dial() }, c = { .fd = dial() };
	struct resp p;
	send_str(a.fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
	read_response(&a, &p, false);
	send_str(b.fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
	read_response(&b, &p, false);
	/* The third waits in the backlog: no answer while a and b live. */
	send_str(c.fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
	struct pollfd pf = { .fd = c.fd, .events = POLLIN };
	ck_assert_int_eq(poll(&pf, 1, 100), 0);
	struct snap sn = snap();
	ck_assert_uint_ge(sn.st.accept_deferred, 1);
	close(a.fd);
	read_response(&c, &p, false); /* served once a slot frees */
	ck_assert_str_eq(p.body, "hello");

	/* Shutdown with an exchange in flight: it is told, clients see EOF. */
	send_str(b.fd, "GET /hang HTTP/1.1\r\nHost: x\r\n\r\n");
	usleep(50000);
	ck_assert_int_eq(loop_thread_call(&S.lt, do_close, NULL), 0);
	ck_assert(peer_closed(&b));
	ck_assert(peer_closed(&c));
	close(b.fd);
	close(c.fd);
	for (int i = 0; i < 300 && !snap().closed; i++)
		usleep(10000);
	sn = snap();
	ck_assert(sn.closed);
	ck_assert_int_eq(sn.started, sn.finished);
	ck_assert_int_eq(sn.last_err, -ESHUTDOWN);
	loop_thread_stop(&S.lt);
	start_server(0); /* for the fixture's teardown */
}
END_TEST

int main(void)
{
	/* As the binaries do: a peer that closed must not kill the test. */
	signal(SIGPIPE, SIG_IGN);
	Suite *s = suite_create("http");
	TCase *tc = tcase_create("server");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_get_head_keepalive);
	tcase_add_test(tc, test_writev);
	tcase_add_test(tc, test_put_streamed);
	tcase_add_test(tc, test_zero_put_then_get);
	tcase_add_test(tc, test_chunked_request);
	tcase_add_test(tc, test_body_direct);
	tcase_add_test(tc, test_pipelined);
	tcase_add_test(tc, test_half_close_in_flight);
	tcase_add_test(tc, test_released_body);
	tcase_add_test(tc, test_expect_continue);
	tcase_add_test(tc, test_bad_requests);
	tcase_add_test(tc, test_big_response_slow_reader);
	tcase_add_test(tc, test_write_completion_order);
	tcase_add_test(tc, test_abort_mid_body);
	tcase_add_test(tc, test_timeouts);
	tcase_add_test(tc, test_conn_limit_and_shutdown);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
