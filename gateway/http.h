/*
 * http.h — the gateway's HTTP/1.1 server over libuv: keep-alive and
 * pipelining, request heads parsed by gateway/http_parse (http-parser),
 * request bodies streamed to the handler with back-pressure, responses
 * written whole (one uv_write) or streamed with write-completion
 * callbacks, 100-continue, timeouts, bounded connections.
 *
 * Threading: a server lives on one uv loop; every function here and every
 * handler callback runs on that loop's thread.
 *
 * Model: a connection serves one exchange (request + response) at a time;
 * a pipelined next request is parsed only when the current response has
 * been fully handed to the kernel, so responses are in order and the head
 * arena is reused. struct http_stream is the exchange: valid from
 * on_request until on_finish returns.
 *
 * Memory: connections come from a pool of max_conns allocated at start,
 * each with fixed buffers (read HTTP_READ_BUF, head arena HTTP_HEAD_MAX,
 * response head HTTP_OUT_HEAD_MAX) and HTTP_MAX_WRITES write slots. Body
 * bytes are never buffered by the server: on_body gets spans into the read
 * buffer, or into the handler's own memory when it offers some
 * (http_handler.body_buf); response body memory is the handler's until its write callback.
 * So a connection holds at most its fixed buffers plus what its handler
 * has queued (http_stats.write_queued_bytes; a handler that waits for each
 * write callback keeps that to one chunk).
 *
 * When the pool is empty the server stops accepting (the kernel's listen
 * backlog holds new clients) and resumes as soon as a connection closes;
 * http_stats.accept_deferred counts such stalls.
 *
 * Timeouts: header_timeout_ms from the first byte of a request to the end
 * of its head; body_timeout_ms between body reads (not while the handler
 * has paused); idle_timeout_ms between requests on a kept-alive
 * connection. Timed-out connections are closed (an active exchange gets
 * on_finish(-ETIMEDOUT)). Errors in a request head are answered by the
 * server itself (400, 414, 417, 431) with Connection: close.
 */
#ifndef GATEWAY_HTTP_H
#define GATEWAY_HTTP_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "gateway/http_limit.h"
#include "gateway/http_parse.h"

#define HTTP_READ_BUF (32 * 1024)
#define HTTP_OUT_HEAD_MAX (8 * 1024)
#define HTTP_INLINE_BODY_MAX (16 * 1024)
#define HTTP_MAX_WRITES 8
#define HTTP_WRITEV_MAX 8                  /* buffers in one http_writev */
#define HTTP_TLS_IN_BUF (64 * 1024)        /* one read of ciphertext (shared per server) */
#define HTTP_BODY_RATE_WINDOW_MS 10000     /* min_body_rate_bps is judged over this */

struct http_server;
struct http_stream;
struct tls_server;
struct metrics_registry;

/* A write finished: status 0, or negative (-ECANCELED when the connection
 * closed first). The bytes given to that write may be released now. */
typedef void (*http_write_cb)(struct http_stream *s, int status, void *arg);

struct http_handler {
	/* The head is complete. The handler may respond at once, pause, or
	 * return and receive the body through on_body. req is valid until
	 * on_finish. */
	void (*on_request)(struct http_stream *s, const struct http_request *req);
	/* A piece of the request body (de-chunked); data is valid during the
	 * call only. Call http_pause to stop the flow. */
	void (*on_body)(struct http_stream *s, const char *data, size_t len);
	/* The whole body has been delivered (also called for bodiless
	 * requests, right after on_request). */
	void (*on_body_end)(struct http_stream *s);
	/* Exactly once per on_request: err 0 when the response was handed to
	 * the kernel in full, else -ECONNRESET (peer went away), -ETIMEDOUT,
	 * -ESHUTDOWN (server closing), -EPROTO (malformed body framing). s is
	 * invalid after this returns. */
	void (*on_finish)(struct http_stream *s, int err);
	void *ctx;
	/* Optional: memory of the handler's for the next read of a plain
	 * (no TLS) Content-Length body, asked for only when the read can hold
	 * nothing but body bytes (at most want: the body's bytes left, so
	 * never a pipelined request). Return how many bytes of *buf may be
	 * read into (0: none; the read goes to the server's buffer). What the
	 * read got there is delivered through on_body at once, with data
	 * pointing into *buf, before any other callback; a handler that
	 * takes those bytes where they are saves a copy (and the reads are
	 * as large as the memory offered, not HTTP_READ_BUF). */
	size_t (*body_buf)(struct http_stream *s, size_t want, char **buf);
};

struct http_server_cfg {
	const char *addr;               /* IPv4/IPv6 literal; NULL: "127.0.0.1" */
	int port;                       /* 0: ephemeral (see http_server_port) */
	uint32_t max_conns;             /* 0: 1024 */
	uint32_t header_timeout_ms;     /* 0: 30 s */
	uint32_t body_timeout_ms;       /* 0: 60 s */
	uint32_t idle_timeout_ms;       /* 0: 60 s */
	const char *request_id_header;  /* NULL: "x-amz-request-id" */
	const char *server_name;        /* Server header; NULL: "IOLake" */
	struct http_handler handler;
	/* TLS on every connection (common/tls.h; must outlive the server);
	 * NULL: plain HTTP. */
	struct tls_server *tls;
	/* Per client address, before the handler sees a request: open
	 * connections over limit.max_conns are closed at once; a request
	 * without a token is answered 503 SlowDown (S3 XML) with Connection:
	 * close. Zeros: no limits. */
	struct http_limit_cfg limit;
	/* A request body arriving slower than this (bytes/s, judged over
	 * HTTP_BODY_RATE_WINDOW_MS while the handler is not pausing) is cut
	 * off like a body timeout. 0: no minimum. */
	uint32_t min_body_rate_bps;
	/* Counters iolake_gw_http_* (limits, plain HTTP on a TLS port, slow
	 * bodies) and the TLS ones go here; NULL: none. */
	struct metrics_registry *metrics;
	/* Several servers of one process on several loops behind one
	 * listener (gateway/http_accept.h): no listener of its own;
	 * connections arrive through http_server_adopt. addr and port are
	 * then unused (http_server_port answers 0). */
	bool adopt_only;
	/* Per-address limits shared by several servers (one table behind a
	 * mutex, http_limit_shared_new; limit above is then ignored). NULL:
	 * the server keeps its own table from limit. */
	struct http_limit_shared *limit_shared;
};

struct http_stats {
	uint64_t conns_accepted;
	uint64_t conns_active;
	uint64_t accept_deferred;       /* times the pool was empty */
	uint64_t requests;              /* heads delivered to the handler */
	uint64_t responses[6];          /* by class: [2] = 2xx, ... [5] = 5xx */
	uint64_t bad_requests;          /* answered by the server (4xx on the head) */
	uint64_t timeouts;
	uint64_t aborted;               /* exchanges finished with an error */
	uint64_t bytes_in, bytes_out;
	uint64_t write_queued_bytes;    /* now: handed to uv_write, not completed */
	uint64_t write_queued_max;      /* high-water mark of the above */
	uint64_t limit_conns_refused;   /* connections over the per-address cap */
	uint64_t limit_requests_refused;/* requests answered 503 SlowDown by the rate limit */
	uint64_t slow_bodies;           /* bodies cut off under min_body_rate_bps */
	uint64_t plain_on_tls;          /* plain HTTP sent to a TLS server (answered 400) */
	uint64_t tls_failures;          /* connections closed for a TLS error */
};

/* Bind, listen and start accepting on loop. Returns 0 and *out, or -errno
 * (-EADDRINUSE, -ENOMEM, ...). */
int http_server_start(uv_loop_t *loop, const struct http_server_cfg *cfg, struct http_server **out);

/* A connection accepted elsewhere (gateway/http_accept.c): served from
 * the pool like one this server accepted. srv's loop only. fd is the
 * server's from here on (closed at once when the pool is empty: 0 or
 * -EBUSY, or -errno from libuv). */
int http_server_adopt(struct http_server *srv, int fd);

/* Connections open now, and the pool's size (max_conns): any thread (an
 * atomic read), for an acceptor picking the least loaded server. */
uint32_t http_server_load(const struct http_server *srv);
uint32_t http_server_capacity(const struct http_server *srv);

/* One per-address limit table for several servers on several loops
 * (cfg.limit_shared): the same caps as one server's, whatever loop a
 * connection lands on. Calls take its mutex (one per connection open and
 * close and per request head; uncontended it costs ~20 ns). NULL when
 * both limits are 0 or out of memory (errno). Free after every server
 * using it is closed. The native protocol's servers of several loops
 * share one the same way (a table of their own: gateway/native_limit.h). */
struct http_limit_shared {
	pthread_mutex_t mu;       /* taken around every use of l */
	struct http_limit *l;
};
struct http_limit_shared *http_limit_shared_new(const struct http_limit_cfg *cfg);
void http_limit_shared_free(struct http_limit_shared *ls);

/* The bound port (useful with port 0). */
int http_server_port(const struct http_server *srv);

/* Stop accepting and close every connection (active exchanges get
 * on_finish(-ESHUTDOWN)); cb(arg) runs once all handles are closed and the
 * server is freed. */
void http_server_close(struct http_server *srv, void (*cb)(void *arg), void *arg);

void http_server_stats(const struct http_server *srv, struct http_stats *out);

/* ------------------------------------------------------------ exchange */

const struct http_request *http_stream_request(const struct http_stream *s);
void *http_stream_ctx(const struct http_stream *s);        /* handler.ctx */
void http_stream_set_user(struct http_stream *s, void *user);
void *http_stream_user(const struct http_stream *s);
const char *http_stream_request_id(const struct http_stream *s);

/* The client's IP address as text (IPv4 dotted, IPv6 literal; "" when
 * unknown), and whether the connection speaks TLS (aws:SourceIp and
 * aws:SecureTransport in bucket policies). Valid for the exchange. */
const char *http_stream_peer_addr(const struct http_stream *s);
bool http_stream_is_tls(const struct http_stream *s);

/* The request's signature verified as a user's: the per-address rate
 * limit gives back the token it took (http_limit_refund), so only
 * requests no user vouches for count against --rate-per-addr. */
void http_stream_authenticated(struct http_stream *s);

/* Replace the request id the server generated (at most 63 chars); it is
 * sent in the request-id header of the response. */
void http_stream_set_request_id(struct http_stream *s, const char *id);

/* Back-pressure on the request body: stop reading the socket (and
 * delivering on_body) until http_resume. resume may be called from any
 * callback; delivery restarts from the loop, never inside the call. */
void http_pause(struct http_stream *s);
void http_resume(struct http_stream *s);

/* The handler holds no span of the request body the server handed it
 * (it copied each one) and keeps none it will be handed: once the body
 * has ended, the connection reads on while the exchange runs (bytes of a
 * pipelined request queue in its buffer), as after a bodiless request,
 * instead of stopping the read at the body's end and restarting it after
 * the answer (two epoll_ctl per request). Call it at or after the body's
 * end; once per exchange is enough. */
void http_body_released(struct http_stream *s);

/* Close the connection after this response. */
void http_set_close(struct http_stream *s);

/* Add a response header (name and value copied). Before the response
 * starts. 0, -EALREADY (response started), -ENOSPC (head buffer full),
 * -EINVAL (CR/LF in name or value). Date, Server, Content-Length,
 * Transfer-Encoding, Connection and the request id are the server's. */
int http_add_header(struct http_stream *s, const char *name, const char *value);
int http_add_header_n(struct http_stream *s, const char *name, size_t name_len,
		      const char *value, size_t value_len);

/* A complete response with Content-Length: len, in one uv_write. With cb
 * NULL the body is copied (len <= HTTP_INLINE_BODY_MAX, else -E2BIG); with
 * cb the body must stay valid until cb. For HEAD the body is not sent.
 * Returns 0, -EALREADY, -E2BIG, or -errno from the socket. */
int http_respond(struct http_stream *s, int status, const void *body, size_t len,
		 http_write_cb cb, void *arg);

/* Start a streamed response: content_length >= 0 sends Content-Length,
 * -1 sends chunked transfer coding (HTTP/1.1) or closes after the body
 * (HTTP/1.0). The head goes out with the first write. */
int http_respond_start(struct http_stream *s, int status, int64_t content_length);

/* Queue len bytes (kept by the caller until cb). Returns 0, -EAGAIN when
 * HTTP_MAX_WRITES writes are in flight (wait for a callback), -EPIPE when
 * the connection is gone, -EMSGSIZE past the announced Content-Length. cb
 * is never called from inside http_write. */
int http_write(struct http_stream *s, const void *data, size_t len, http_write_cb cb, void *arg);

/* Queue nd buffers (at most HTTP_WRITEV_MAX, kept by the caller until cb)
 * as one write: one writev to the socket with the head if it is still
 * pending. last: the response ends with this write, as if
 * http_respond_end followed (saves a write per response). Returns as
 * http_write, and -EINVAL for too many buffers. */
int http_writev(struct http_stream *s, const uv_buf_t *data, unsigned nd, bool last,
		http_write_cb cb, void *arg);

/* End a streamed response. If fewer bytes than the Content-Length were
 * written the connection is closed after (the client sees a short body).
 * on_finish follows when the last write completes. */
int http_respond_end(struct http_stream *s);

/* The status of the response started (0: none yet), and the response
 * body bytes handed to the socket so far (HEAD: 0). Valid until on_finish
 * returns. */
int http_stream_status(const struct http_stream *s);
uint64_t http_stream_body_sent(const struct http_stream *s);

/* Bytes of this connection handed to uv_write and not yet completed. */
uint64_t http_stream_queued(const struct http_stream *s);

/* Reason phrase for a status ("Not Found"); "Unknown" otherwise. */
const char *http_reason(int status);

#endif
