/*
 * http_int.h — what the two halves of the HTTP/1.1 server (http.h) share
 * inside gateway/: the connection with its write slots and buffers, the
 * server, and the few functions one half calls in the other. http.c owns
 * connections (accept, reading and parsing, timers, lingering close, the
 * server's lifecycle); http_resp.c owns responses (the head, writes, the
 * exchange's API a handler calls). Not an API outside http*.c.
 *
 * Thread: the server's loop.
 */
#ifndef GATEWAY_HTTP_INT_H
#define GATEWAY_HTTP_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <uv.h>

#include "common/log.h"
#include "common/metrics.h"
#include "gateway/http.h"

enum phase { ACTIVE, LINGER, CLOSING };

/* Buffers in one conn_submit at most: http_writev's, the head, a chunk's
 * header and trailer. */
#define HTTP_WRITE_BUFS_MAX (HTTP_WRITEV_MAX + 4)

struct wslot {
	uv_write_t req;
	struct conn *c;
	http_write_cb cb;
	void *arg;
	size_t bytes;
	bool used;
	bool last;                 /* completes the response */
	bool done;                 /* written (or failed): its completion may run */
	int status;                /* ... with this status */
	uint32_t seq;              /* submission order on its connection */
	char *ct;                  /* TLS: the ciphertext being written (malloc'd) */
	size_t ct_cap;             /* its allocation (given back to the tls_conn) */
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
	/* Writes the socket took whole in conn_submit wait on the server's
	 * wdone list for their completion, which runs from the idle callback;
	 * completions run in submission order (wseq_done: the next due). */
	struct conn *wdone_next;
	bool wdone_queued;
	uint32_t wseq_next, wseq_done;
	enum phase phase;
	int handles_open;
	int close_err;

	struct http_parse hp;
	size_t rpos, rlen;
	bool reading;
	bool in_process;
	/* http_pause inside process: the reading state is updated at its
	 * end, so that a pause lifted before then stops and restarts
	 * nothing. */
	bool pause_pending;
	uint64_t linger_bytes;
	int timer_mode;            /* which timeout is armed (enum below) */

	/* The exchange. */
	struct http_stream stream;
	void *user;
	bool active;               /* on_request called, on_finish not yet */
	bool body_done;
	bool body_released;        /* the handler holds no body span (http_body_released) */
	bool paused;               /* by the handler */
	bool continue_pending;
	bool close_after;
	bool peer_eof;             /* EOF read during the exchange (reads_between) */
	bool resp_started;
	bool head_pending;         /* head composed, not yet written */
	bool resp_chunked;
	bool resp_ended;           /* last write submitted */
	bool head_only;            /* HEAD: no body bytes go out */
	int64_t resp_remaining;    /* Content-Length bytes still to write */
	int status;
	uint64_t resp_body_bytes;  /* response body bytes handed to the socket */
	char request_id[64];
	char peer[48];             /* the client's address, textual ("" unknown) */
	bool tls;                  /* the connection speaks TLS */
	struct tls_conn *tc;       /* its TLS state (common/tls.h), NULL: plain */
	uint32_t limit_slot;       /* http_limit's entry for the peer */
	bool limited;              /* this request is refused (rate limit) */
	bool limited_keep;         /* ... and the connection outlives the refusal */
	uint64_t body_win_ns;      /* start of the body-rate window (0: none) */
	uint64_t body_win_bytes;   /* body bytes seen in that window */
	uint8_t peer_bin[16];      /* the peer as IPv6 (IPv4 mapped) */
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
	struct conn *wdone_head, *wdone_tail; /* writes done in conn_submit */
	bool accept_waiting;
	bool closing;
	int handles_open;
	void (*close_cb)(void *);
	void *close_arg;
	struct http_stats stats;
	struct http_limit *limit;  /* NULL: no per-address limits */
	pthread_mutex_t *limit_mu; /* set: limit is shared (cfg.limit_shared) */
	atomic_uint load;          /* connections open (http_server_load) */
	char *tls_in;              /* HTTP_TLS_IN_BUF: ciphertext of one read */
	struct metrics_counter *m_refused_conns, *m_refused_rate, *m_slow_body, *m_plain_on_tls;
	char host_id[LOG_REQ_ID_LEN + 1]; /* this server's, sent as x-amz-id-2 */
	time_t date_at;
	char date[40];
	int port;
};

/* ------------------------------------------------------------ http.c */

/* Close the connection (an active exchange gets on_finish(err)). */
/* A stat counted, and its metric when there is one. */
static inline void conn_count(struct metrics_counter *m, uint64_t *stat)
{
	(*stat)++;
	if (m)
		metrics_counter_inc(m);
}
/* A new x-amz-request-id for the next exchange (http.c). */
void conn_new_request_id(struct conn *c);
/* No timeout armed (http.c). */
void conn_stop_timer(struct conn *c);
/* The server's own answers (http_refuse.c): a malformed head or a
 * refused one (status 503: SlowDown; kept when c->limited_keep), and
 * plain HTTP on a TLS port. */
void conn_reply_error(struct conn *c, int status);
void conn_plain_on_tls(struct conn *c);
/* The server's own 503 on a connection that stays is on the wire: go on
 * with the next request. */
void conn_refusal_done(struct conn *c);
/* Fill c->peer from the accepted socket (http_resp.c). */
void conn_peer_name(struct conn *c);
void conn_close(struct conn *c, int err);
/* The response is fully handed to the kernel: finish the exchange, then
 * linger or read the next request. */
void conn_maybe_finish(struct conn *c);
/* Shut our side down and read and discard for a while before closing. */
void conn_linger(struct conn *c);
/* Parse again from the loop (never inside a handler call). */
void conn_kick(struct conn *c);
/* Run the idle callback (kicks, then write completions) on the next
 * loop iteration. */
void http_server_arm_idle(struct http_server *srv);
/* Start or stop reading / pick the timeout for the connection's state. */
void conn_update_reading(struct conn *c);
void conn_update_timer(struct conn *c, bool restart);

/* The listener has a connection (http_server.c listens with it). */
void http_on_connection(uv_stream_t *l, int status);

/* ------------------------------------------------------------ http_server.c */

/* Free the server once closing and its last handle and connection are
 * gone, then call its close callback. */
void http_server_maybe_done(struct http_server *srv);

/* ------------------------------------------------------------ http_resp.c */

/* The Date header's value, formatted once a second. */
const char *conn_date(struct http_server *srv);
/* Submit bufs as one write (a slot of c->w; last: it completes the
 * response). 0 or -errno (-EAGAIN: no slot; the socket gone: c closed). */
int conn_submit(struct conn *c, uv_buf_t *bufs, unsigned n, http_write_cb cb, void *arg,
		bool last, struct wslot **out);
/* The completions of writes conn_submit finished itself, in order (the
 * server's idle callback). */
void conn_writes_drain(struct http_server *srv);
/* c is closing: its finished writes complete now (before on_finish), and
 * it leaves the wdone list. */
void conn_writes_closed(struct conn *c);
/* TLS: send whatever ciphertext the connection has queued (handshake,
 * alerts, close_notify) as its own write. */
void conn_tls_flush(struct conn *c);
/* "100 Continue", once. */
void conn_send_continue(struct conn *c);

#endif
