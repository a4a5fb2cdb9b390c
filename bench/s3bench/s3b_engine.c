/*
 * s3b_engine.c — connection pool and request/response cycle on one libuv
 * loop (see s3b_engine.h).
 *
 * A connection is in one of four states (CLOSED, CONNECTING, OPEN,
 * CLOSING) and independently busy (holds an op) or idle. Idle connections
 * sit on a stack (once each: on_stack); dispatch() pops one per op. A
 * connection goes back on the stack when a response completes on a
 * keep-alive connection, and when a close finishes with no op pending.
 * Failure paths close the connection, so they need no push of their own.
 * An op given to a connection that is still closing waits for on_close,
 * which connects afresh (the same path as a stale-connection retry).
 */
#include "bench/s3bench/s3b_engine.h"

#include <errno.h>
#include <http_parser.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/sigv4.h"

#define TICK_MS 100
#define ERRBODY_MAX 256               /* bytes of a failure's body kept */
#define LIST_BODY_MAX (8u << 20)      /* a ListObjectsV2 page, bounded */

static const char *const err_names[] = {
	"ok",
#define X(e, name, text) name,
	S3B_ERRORS(X)
#undef X
};
static const char *const err_texts[] = {
	"success",
#define X(e, name, text) text,
	S3B_ERRORS(X)
#undef X
};

const char *s3b_err_name(enum s3b_err e)
{
	return (unsigned)e < S3B_ERR__COUNT ? err_names[e] : "?";
}

const char *s3b_err_text(enum s3b_err e)
{
	return (unsigned)e < S3B_ERR__COUNT ? err_texts[e] : "?";
}

enum conn_state { C_CLOSED, C_CONNECTING, C_OPEN, C_CLOSING };

struct conn {
	uv_tcp_t tcp;
	uv_connect_t connect_req;
	uv_write_t write_req;
	struct s3b_engine *e;
	enum conn_state state;
	bool busy;            /* holds op */
	bool on_stack;        /* in e->idle */
	bool reused;          /* a response completed on this TCP connection */
	bool retried;         /* op was re-sent once after a stale connection */
	bool got_bytes;       /* response bytes arrived for op */
	bool headers_done;
	bool complete;        /* response complete */
	bool body_bad;        /* GET body longer than the object, or different */
	uint64_t start_ns;
	struct s3b_op op;
	http_parser parser;
	uint64_t body_off;    /* response body bytes seen */
	const uint8_t *expect; /* GET: the bytes the body must equal */
	size_t errbody_len;
	char errbody[ERRBODY_MAX];
	char path[S3B_PATH_MAX];
	char head[S3B_HEAD_MAX];
	size_t rbuf_len;
	char rbuf[];          /* rbuf_len bytes: every read lands here */
};

struct s3b_engine {
	uv_loop_t *loop;
	struct s3b_engine_config cfg;
	struct sockaddr_storage addr;
	uv_timer_t tick;
	bool tick_init;
	const struct s3b_phase *phase;
	unsigned inflight;
	bool in_dispatch;
	bool running;             /* inside s3b_engine_run's uv_run */
	struct conn **conns;      /* cfg.connections */
	struct conn **idle;       /* stack of idle, not closing */
	unsigned n_idle;
	unsigned open_handles;    /* tcp handles initialised and not yet closed */
	char *list_body;          /* LIST responses (one LIST in flight at a time) */
	size_t list_len;
	struct s3b_engine_stats stats;
	http_parser_settings settings;
};

static void dispatch(struct s3b_engine *e);
static void start_connect(struct conn *c);

/* An idle connection goes on the stack once, whatever its state: an idle
 * one the server closes is already there. */
static void push_idle(struct s3b_engine *e, struct conn *c)
{
	if (c->on_stack)
		return;
	c->on_stack = true;
	e->idle[e->n_idle++] = c;
}

static uint64_t now_ns(void)
{
	return uv_hrtime();
}

/* ------------------------------------------------------------ closing */

static void on_close(uv_handle_t *h)
{
	struct conn *c = h->data;
	struct s3b_engine *e = c->e;
	c->state = C_CLOSED;
	e->open_handles--;
	if (c->busy) { /* a stale-connection retry waits for this close */
		start_connect(c);
		return;
	}
	push_idle(e, c);
	dispatch(e);
}

static void close_conn(struct conn *c)
{
	if (c->state == C_CLOSED || c->state == C_CLOSING)
		return;
	c->state = C_CLOSING;
	uv_close((uv_handle_t *)&c->tcp, on_close);
}

/* ------------------------------------------------------------ op results */

static void finish(struct conn *c, enum s3b_err err, int sys_err)
{
	struct s3b_engine *e = c->e;
	struct s3b_op *op = &c->op;
	op->err = err;
	op->sys_err = sys_err;
	op->start_ns = c->start_ns;
	op->latency_ns = now_ns() - c->start_ns;
	op->status = c->headers_done ? c->parser.status_code : 0;
	if (op->kind == S3B_OP_GET)
		op->body_bytes = c->body_off;
	if (op->kind == S3B_OP_LIST && err == S3B_OK) {
		op->resp_body = e->list_body;
		op->resp_body_len = e->list_len;
	} else if (err != S3B_OK) {
		op->resp_body = c->errbody;
		op->resp_body_len = c->errbody_len;
	}
	c->busy = false;
	e->inflight--;
	e->phase->done(e->phase->arg, op);
}

/* The connection failed under an op: resend once if it was a keep-alive
 * connection the server had closed before seeing our request, else fail. */
static void conn_failed(struct conn *c, enum s3b_err err, int sys_err)
{
	if (err == S3B_ERR_IO && !c->got_bytes && c->reused && !c->retried) {
		c->retried = true;
		c->e->stats.stale_retries++;
		close_conn(c); /* on_close reconnects: c stays busy */
		return;
	}
	finish(c, err, sys_err);
	close_conn(c);
}

static bool has_word(const char *s, size_t n, const char *w)
{
	size_t wn = strlen(w);
	for (size_t i = 0; i + wn <= n; i++)
		if (memcmp(s + i, w, wn) == 0)
			return true;
	return false;
}

/* The response is complete. out_of_step: bytes followed it, so the
 * connection is closed rather than reused. */
static void complete(struct conn *c, bool out_of_step)
{
	struct s3b_engine *e = c->e;
	int st = c->parser.status_code;
	enum s3b_err err = S3B_OK;
	if (st >= 200 && st < 300) {
		size_t size = e->cfg.body->size;
		if (c->op.kind == S3B_OP_GET && (c->body_bad || c->body_off != size)) {
			err = S3B_ERR_BODY;
			int n = snprintf(c->errbody, sizeof(c->errbody), "%llu of %zu bytes%s",
					 (unsigned long long)c->body_off, size,
					 c->body_off == size ? ", content differs" : "");
			c->errbody_len = n <= 0 ? 0 : n < (int)sizeof(c->errbody) ? (size_t)n : sizeof(c->errbody) - 1;
		}
		if (c->op.kind == S3B_OP_LIST && c->body_bad)
			err = S3B_ERR_BODY;
	} else if (st == 409 && c->op.kind == S3B_OP_MKBUCKET &&
		   has_word(c->errbody, c->errbody_len, "BucketAlreadyOwnedByYou")) {
		err = S3B_OK;
	} else if (st < 200) {
		err = S3B_ERR_HTTP_1XX;
	} else if (st < 400) {
		err = S3B_ERR_HTTP_3XX;
	} else if (st < 500) {
		err = S3B_ERR_HTTP_4XX;
	} else {
		err = S3B_ERR_HTTP_5XX;
	}
	bool keep = http_should_keep_alive(&c->parser) && !out_of_step;
	c->reused = true;
	finish(c, err, 0);
	if (!keep) {
		e->stats.closes_by_peer += !out_of_step;
		close_conn(c);
		return;
	}
	push_idle(e, c);
	dispatch(e);
}

/* ------------------------------------------------------------ parser callbacks */

static int on_headers_complete(http_parser *p)
{
	struct conn *c = p->data;
	c->headers_done = true;
	return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
	struct conn *c = p->data;
	struct s3b_engine *e = c->e;
	int st = p->status_code;
	if (st < 200 || st >= 300) {
		size_t room = sizeof(c->errbody) - c->errbody_len;
		size_t n = len < room ? len : room;
		memcpy(c->errbody + c->errbody_len, at, n);
		c->errbody_len += n;
		/* a 409 on MKBUCKET is judged by its body: keep the first bytes */
	} else if (c->op.kind == S3B_OP_GET) {
		size_t size = e->cfg.body->size;
		if (c->body_off + len > size)
			c->body_bad = true;
		else if (c->expect && memcmp(c->expect + c->body_off, at, len) != 0)
			c->body_bad = true;
	} else if (c->op.kind == S3B_OP_LIST) {
		if (e->list_len + len > LIST_BODY_MAX) {
			c->body_bad = true;
		} else {
			memcpy(e->list_body + e->list_len, at, len);
			e->list_len += len;
		}
	}
	c->body_off += len;
	return 0;
}

static int on_message_complete(http_parser *p)
{
	struct conn *c = p->data;
	c->complete = true;
	http_parser_pause(p, 1); /* bytes after the response are not ours */
	return 0;
}

/* ------------------------------------------------------------ I/O */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)suggested;
	struct conn *c = h->data;
	buf->base = c->rbuf;
	buf->len = c->rbuf_len;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = s->data;
	if (nread == 0 || c->state != C_OPEN)
		return;
	if (!c->busy) { /* idle: the server closed, or talked out of turn */
		c->e->stats.closes_by_peer += nread < 0;
		close_conn(c);
		return;
	}
	if (nread < 0) {
		if (nread == UV_EOF && c->got_bytes) {
			/* a body delimited by EOF ends here; else it is cut short */
			http_parser_execute(&c->parser, &c->e->settings, NULL, 0);
			if (c->complete) {
				complete(c, false);
				return;
			}
		}
		conn_failed(c, S3B_ERR_IO, (int)nread);
		return;
	}
	c->got_bytes = true;
	size_t n = http_parser_execute(&c->parser, &c->e->settings, buf->base, (size_t)nread);
	enum http_errno he = HTTP_PARSER_ERRNO(&c->parser);
	if (c->complete) {
		complete(c, n < (size_t)nread);
		return;
	}
	if (he != HPE_OK) {
		conn_failed(c, S3B_ERR_PROTOCOL, 0);
		return;
	}
}

static void on_write(uv_write_t *req, int status)
{
	struct conn *c = req->data;
	if (status == 0 || status == UV_ECANCELED || !c->busy || c->complete)
		return;
	if (c->state == C_OPEN)
		conn_failed(c, S3B_ERR_IO, status);
}

static void send_op(struct conn *c)
{
	struct s3b_engine *e = c->e;
	const struct s3b_target *t = e->cfg.target;
	const struct s3b_body *b = e->cfg.body;
	struct s3b_op *op = &c->op;
	const char *empty = e->cfg.sign_payload ? SIGV4_EMPTY_SHA256 : SIGV4_UNSIGNED_PAYLOAD;
	struct s3b_req r = { .host = t->host, .payload_hash = empty, .content_length = -1 };
	uv_buf_t bufs[2];
	unsigned nbufs = 1;
	unsigned variant = 0;

	http_parser_init(&c->parser, HTTP_RESPONSE);
	c->parser.data = c;
	c->got_bytes = c->headers_done = c->complete = c->body_bad = false;
	c->body_off = 0;
	c->errbody_len = 0;
	c->expect = NULL;

	if (op->kind == S3B_OP_PUT || op->kind == S3B_OP_GET || op->kind == S3B_OP_DELETE) {
		int n = s3b_target_object_path(t, op->obj, c->path, sizeof(c->path));
		if (n < 0)
			goto fail;
		r.path = c->path;
		r.path_len = (size_t)n;
		variant = s3b_body_variant(b, op->obj);
	} else {
		r.path = t->bucket_path;
		r.path_len = strlen(t->bucket_path);
	}
	switch (op->kind) {
	case S3B_OP_MKBUCKET:
		r.method = "PUT";
		r.content_length = 0;
		break;
	case S3B_OP_PUT:
		r.method = "PUT";
		r.content_length = (int64_t)b->size;
		if (e->cfg.sign_payload)
			r.payload_hash = b->sha256_hex[variant];
		bufs[1] = uv_buf_init((char *)s3b_body_data(b, variant), (unsigned)b->size);
		nbufs = 2;
		op->body_bytes = b->size;
		break;
	case S3B_OP_GET:
		r.method = "GET";
		if (e->cfg.verify)
			c->expect = s3b_body_data(b, variant);
		break;
	case S3B_OP_LIST:
		r.method = "GET";
		r.query = op->query;
		r.query_len = op->query_len;
		e->list_len = 0;
		break;
	case S3B_OP_DELETE:
		r.method = "DELETE";
		break;
	}
	int n = s3b_req_format(e->cfg.signer, &r, c->head, sizeof(c->head));
	if (n < 0)
		goto fail;
	bufs[0] = uv_buf_init(c->head, (unsigned)n);
	c->write_req.data = c;
	int rc = uv_write(&c->write_req, (uv_stream_t *)&c->tcp, bufs, nbufs, on_write);
	if (rc < 0)
		conn_failed(c, S3B_ERR_IO, rc);
	return;
fail:
	/* a request we cannot even format: counted as a protocol error */
	finish(c, S3B_ERR_PROTOCOL, 0);
	push_idle(e, c);
	dispatch(e);
}

static void on_connect(uv_connect_t *req, int status)
{
	struct conn *c = req->data;
	if (c->state != C_CONNECTING) /* closed under us (timeout) */
		return;
	if (status < 0) {
		finish(c, S3B_ERR_CONNECT, status);
		close_conn(c);
		return;
	}
	c->state = C_OPEN;
	uv_tcp_nodelay(&c->tcp, 1);
	int rc = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
	if (rc < 0) {
		finish(c, S3B_ERR_CONNECT, rc);
		close_conn(c);
		return;
	}
	send_op(c);
}

static void start_connect(struct conn *c)
{
	struct s3b_engine *e = c->e;
	int rc = uv_tcp_init(e->loop, &c->tcp);
	if (rc < 0) { /* no handle to close: fail in place */
		finish(c, S3B_ERR_CONNECT, rc);
		push_idle(e, c);
		dispatch(e);
		return;
	}
	e->open_handles++;
	c->tcp.data = c;
	c->connect_req.data = c;
	c->reused = false;
	c->state = C_CONNECTING;
	e->stats.connects++;
	rc = uv_tcp_connect(&c->connect_req, &c->tcp, (const struct sockaddr *)&e->addr, on_connect);
	if (rc < 0) {
		finish(c, S3B_ERR_CONNECT, rc);
		close_conn(c);
	}
}

static void start_op(struct conn *c)
{
	c->busy = true;
	c->retried = false;
	c->start_ns = now_ns();
	if (c->state == C_OPEN)
		send_op(c);
	else if (c->state == C_CLOSED)
		start_connect(c);
	/* C_CLOSING (the server closed it while idle): on_close reconnects */
}

/* ------------------------------------------------------------ scheduling */

static void dispatch(struct s3b_engine *e)
{
	const struct s3b_phase *p = e->phase;
	if (!p || e->in_dispatch)
		return;
	e->in_dispatch = true;
	bool more = true;
	while (e->inflight < p->max_inflight && e->n_idle > 0) {
		struct conn *c = e->idle[e->n_idle - 1];
		memset(&c->op, 0, sizeof(c->op));
		if (!p->next(p->arg, &c->op)) {
			more = false;
			break;
		}
		e->n_idle--;
		c->on_stack = false;
		e->inflight++;
		start_op(c);
	}
	e->in_dispatch = false;
	/* Failures inside start_op may have freed slots without a callback
	 * re-entering dispatch: loop again until it is stable. */
	if (more && e->inflight < p->max_inflight && e->n_idle > 0) {
		dispatch(e);
		return;
	}
	if (!more && e->inflight == 0) {
		e->phase = NULL;
		/* uv_stop outside uv_run would cut the next phase's run short */
		if (e->running)
			uv_stop(e->loop);
	}
}

static void on_tick(uv_timer_t *t)
{
	struct s3b_engine *e = t->data;
	uint64_t now = now_ns();
	s3b_signer_tick(e->cfg.signer, time(NULL));
	for (unsigned i = 0; i < e->cfg.connections; i++) {
		struct conn *c = e->conns[i];
		if (c->busy && (c->state == C_OPEN || c->state == C_CONNECTING) &&
		    now - c->start_ns > e->cfg.timeout_ns) {
			finish(c, S3B_ERR_TIMEOUT, 0);
			close_conn(c);
		}
	}
	if (e->phase && e->phase->tick)
		e->phase->tick(e->phase->arg, now);
}

/* ------------------------------------------------------------ lifecycle */

int s3b_engine_new(uv_loop_t *loop, const struct s3b_engine_config *cfg,
		   struct s3b_engine **out, char *err, size_t errlen)
{
	struct s3b_engine *e = calloc(1, sizeof(*e));
	int rc = -ENOMEM;
	if (!e)
		goto fail;
	e->loop = loop;
	e->cfg = *cfg;
	e->settings.on_headers_complete = on_headers_complete;
	e->settings.on_body = on_body;
	e->settings.on_message_complete = on_message_complete;

	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai = NULL;
	char port[8];
	snprintf(port, sizeof(port), "%u", cfg->endpoint->port);
	int gai = getaddrinfo(cfg->endpoint->host, port, &hints, &ai);
	if (gai != 0) {
		snprintf(err, errlen, "cannot resolve %s: %s", cfg->endpoint->host, gai_strerror(gai));
		rc = -EHOSTUNREACH;
		goto free_engine;
	}
	memcpy(&e->addr, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);

	e->conns = calloc(cfg->connections, sizeof(*e->conns));
	e->idle = calloc(cfg->connections, sizeof(*e->idle));
	e->list_body = malloc(LIST_BODY_MAX);
	if (!e->conns || !e->idle || !e->list_body)
		goto free_arrays;
	/* big enough reads for large GETs, small enough for 4096 connections */
	size_t rbuf = cfg->connections <= 256 ? 64 << 10 : 16 << 10;
	for (unsigned i = 0; i < cfg->connections; i++) {
		struct conn *c = calloc(1, sizeof(*c) + rbuf);
		if (!c)
			goto free_conns;
		c->e = e;
		c->rbuf_len = rbuf;
		c->state = C_CLOSED;
		e->conns[i] = c;
	}
	/* popped from the top: connection 0 first, so small phases reuse it */
	for (unsigned i = cfg->connections; i > 0; i--)
		push_idle(e, e->conns[i - 1]);
	uv_timer_init(loop, &e->tick);
	e->tick.data = e;
	e->tick_init = true;
	s3b_signer_tick(cfg->signer, time(NULL));
	*out = e;
	return 0;

free_conns:
	for (unsigned i = 0; i < cfg->connections; i++)
		free(e->conns[i]);
free_arrays:
	free(e->list_body);
	free(e->idle);
	free(e->conns);
	snprintf(err, errlen, "out of memory for %u connections", cfg->connections);
free_engine:
	free(e);
fail:
	return rc;
}

int s3b_engine_run(struct s3b_engine *e, const struct s3b_phase *p)
{
	if (p->max_inflight == 0 || p->max_inflight > e->cfg.connections)
		return -EINVAL;
	e->phase = p;
	uv_timer_start(&e->tick, on_tick, TICK_MS, TICK_MS);
	dispatch(e);
	if (e->phase) { /* dispatch ends a phase with no ops at once */
		e->running = true;
		uv_run(e->loop, UV_RUN_DEFAULT);
		e->running = false;
	}
	uv_timer_stop(&e->tick);
	e->phase = NULL;
	return 0;
}

void s3b_engine_get_stats(const struct s3b_engine *e, struct s3b_engine_stats *st)
{
	*st = e->stats;
}

void s3b_engine_free(struct s3b_engine *e)
{
	if (!e)
		return;
	for (unsigned i = 0; i < e->cfg.connections; i++)
		close_conn(e->conns[i]);
	if (e->tick_init)
		uv_close((uv_handle_t *)&e->tick, NULL);
	/* only our handles live on this loop: it returns once they are closed */
	uv_run(e->loop, UV_RUN_DEFAULT);
	for (unsigned i = 0; i < e->cfg.connections; i++)
		free(e->conns[i]);
	free(e->list_body);
	free(e->idle);
	free(e->conns);
	free(e);
}
