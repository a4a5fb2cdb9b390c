/*
 * s3b_engine.h — the bench's HTTP/1.1 client: one libuv loop, a pool of
 * keep-alive connections (one request in flight on each, no pipelining),
 * and the ops of one phase at a time pulled from a `struct s3b_phase`.
 *
 * Concurrency is the number of connections: a phase runs up to its
 * max_inflight ops at once, each on its own connection, so C is exactly
 * the requests in flight overall. A connection opens lazily when it gets
 * its first op, stays open between phases, and reopens after the server
 * closes it (Connection: close, EOF, an error). An op sent on a reused
 * connection that the server had already closed (EOF or reset before any
 * response byte) is sent again once on a fresh connection, as browsers and
 * S3 SDKs do; that is counted in stale_retries, not as an error.
 *
 * Per request: the head is written into the connection's buffer, head
 * and body go out in one uv_write (two iovecs, the body straight from the
 * pre-generated buffer), the response is parsed by http_parser from the
 * connection's fixed read buffer, and GET bodies are counted (and with
 * verify compared) and dropped. No allocation per request.
 *
 * Every op ends in exactly one `done` call, with an error kind from the
 * table below when it failed; nothing is retried silently beyond the
 * stale-connection case above.
 *
 * Single-threaded: everything runs on the loop passed to s3b_engine_new.
 */
#ifndef BENCH_S3B_ENGINE_H
#define BENCH_S3B_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "bench/s3bench/s3b_body.h"
#include "bench/s3bench/s3b_req.h"

/* Kinds of failed requests: X(enum suffix, name in reports, meaning). */
#define S3B_ERRORS(X)                                                          \
	X(CONNECT, "connect", "TCP connect failed")                            \
	X(TIMEOUT, "timeout", "no complete response within --timeout")         \
	X(IO, "io", "connection reset or closed mid-request")                  \
	X(PROTOCOL, "protocol", "malformed or unexpected HTTP response")       \
	X(HTTP_1XX, "http_1xx", "informational status as the final answer")    \
	X(HTTP_3XX, "http_3xx", "redirect status")                             \
	X(HTTP_4XX, "http_4xx", "client error status")                         \
	X(HTTP_5XX, "http_5xx", "server error status")                         \
	X(BODY, "body", "response body of the wrong length or content")

enum s3b_err {
	S3B_OK = 0,
#define X(e, name, text) S3B_ERR_##e,
	S3B_ERRORS(X)
#undef X
	S3B_ERR__COUNT
};

/* "connect", "timeout", ...; "ok" for S3B_OK. */
const char *s3b_err_name(enum s3b_err e);
const char *s3b_err_text(enum s3b_err e);

enum s3b_op_kind {
	S3B_OP_MKBUCKET, /* PUT /bucket; 409 BucketAlreadyOwnedByYou is success */
	S3B_OP_PUT,
	S3B_OP_GET,
	S3B_OP_LIST,     /* GET /bucket?<query>; the body is handed to done */
	S3B_OP_DELETE,
};

struct s3b_op {
	/* set by the phase in next() */
	enum s3b_op_kind kind;
	uint64_t obj;            /* object index: PUT, GET, DELETE */
	const char *query;       /* LIST: canonical query; must live until done */
	size_t query_len;
	/* set by the engine before done() */
	enum s3b_err err;
	int status;              /* HTTP status; 0 when no response head arrived */
	int sys_err;             /* libuv error (negative) for connect/io errors */
	uint64_t start_ns;       /* uv_hrtime() of the first write attempt */
	uint64_t latency_ns;     /* first write attempt to last response byte */
	uint64_t body_bytes;     /* PUT: bytes sent; GET: bytes received */
	const char *resp_body;   /* LIST: whole body; failures: its first bytes */
	size_t resp_body_len;
};

/* One phase: the engine pulls ops from next() until it returns false and
 * none are in flight, then s3b_engine_run returns. */
struct s3b_phase {
	/* Fill op's kind/obj/query and return true, or return false when
	 * there is nothing more to send right now (it is asked again after
	 * each completion; the phase ends when it says false with nothing in
	 * flight). */
	bool (*next)(void *arg, struct s3b_op *op);
	/* An op finished; op and its resp_body are valid only during the call. */
	void (*done)(void *arg, const struct s3b_op *op);
	/* About every 100 ms while the phase runs; may be NULL. */
	void (*tick)(void *arg, uint64_t now_ns);
	void *arg;
	unsigned max_inflight;   /* 1 .. connections */
};

struct s3b_engine_config {
	const struct s3b_endpoint *endpoint;
	const struct s3b_target *target;
	struct s3b_signer *signer;     /* ticked by the engine once per second */
	const struct s3b_body *body;
	unsigned connections;          /* pool size = the most ops in flight */
	uint64_t timeout_ns;           /* per request */
	bool verify;                   /* compare GET bodies byte for byte */
	bool sign_payload;             /* send body SHA-256s (body must hold them) */
};

struct s3b_engine_stats {
	uint64_t connects;       /* TCP connections opened (attempts) */
	uint64_t stale_retries;  /* requests re-sent after a stale keep-alive */
	uint64_t closes_by_peer; /* Connection: close or EOF from the server */
};

struct s3b_engine;

/* Resolve the endpoint (blocking getaddrinfo: once, at start) and allocate
 * the pool. Returns 0 and *out, -ENOMEM, or the resolver's failure as
 * -EHOSTUNREACH (err says which). */
int s3b_engine_new(uv_loop_t *loop, const struct s3b_engine_config *cfg,
		   struct s3b_engine **out, char *err, size_t errlen);

/* Run phase p to its end (runs the loop). Returns 0; -EINVAL for a bad
 * max_inflight. p must stay valid until it returns. */
int s3b_engine_run(struct s3b_engine *e, const struct s3b_phase *p);

void s3b_engine_get_stats(const struct s3b_engine *e, struct s3b_engine_stats *st);

/* Close every connection, run the loop until they are closed, free e. */
void s3b_engine_free(struct s3b_engine *e);

#endif
