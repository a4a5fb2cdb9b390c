/*
 * raft_tls.c — the TLS relay under Raft's port (model in raft_tls.h).
 *
 * Owns, per relay: the TCP handle it was given, its own end of the
 * socketpair (a uv_pipe_t inside the relay), a timer (handshake deadline,
 * then the close deadline), the tls_conn, and every write it queued (one
 * struct wr each, freed by its callback). Does not own: the plaintext end
 * (raft_mux.c's, then libraft's), the identity (common/rpc_tls.c), the
 * mux preamble (read by raft_mux.c from the plaintext end, as from a
 * TCP stream).
 *
 * Invariants:
 *   - Reads are consumed whole inside their callback (fed to TLS, or
 *     encrypted), so one read buffer per thread serves every relay.
 *   - q_pipe / q_tcp count the bytes queued to each side; a side above
 *     RAFT_TLS_QUEUE_HIGH stops the reading of the other side, resumed
 *     below RAFT_TLS_QUEUE_LOW: memory per relay stays within about two
 *     high marks plus TLS's one partial record.
 *   - The relay is freed once its three handles are closed; write
 *     callbacks of cancelled writes run before that (libuv's order).
 *   - ready cb runs at most once, never after detach or close.
 */
#include "meta/raft_tls.h"

#include <errno.h>
#include <raft.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/rpc_tls.h"
#include "common/tls.h"

#define RELAY_READ_BYTES (64u << 10)
#define RELAY_PLAIN_CHUNK (16u << 10)   /* one TLS record's plaintext at most */

struct raft_tls_relay {
	uv_loop_t *loop;
	struct rpc_tls *id;
	uv_tcp_t *tcp;                 /* raft_malloc'd: ours from start */
	uv_pipe_t pipe;                /* our end of the socketpair */
	uv_timer_t timer;
	struct tls_conn *tls;
	raft_tls_ready_cb cb;
	void *ud;
	bool server;
	bool up;                       /* handshake done and the peer checked */
	bool seen;                     /* server: the first byte was looked at */
	bool closing;                  /* handles being closed */
	bool draining;                 /* closing once the queue to `drain_to` is empty */
	bool drain_to_tcp;             /* which queue a drain waits for */
	bool tcp_paused, pipe_paused;  /* reading stopped by back-pressure */
	bool pipe_reading;
	const char *early_why;         /* a failure while starting, reported by the timer */
	int handles;                   /* open handles of ours */
	size_t q_pipe, q_tcp;          /* bytes queued for writing to each side */
	char peer[64];
};

/* One queued write. */
struct wr {
	uv_write_t req;
	struct raft_tls_relay *r;
	char *buf;
	size_t len, cap;
	bool to_tcp;
};

static _Thread_local char t_rbuf[RELAY_READ_BYTES];
static _Thread_local unsigned t_open;

unsigned raft_tls_relays_open(void)
{
	return t_open;
}

/* ------------------------------------------------------------ closing */

static void on_handle_closed(uv_handle_t *h)
{
	struct raft_tls_relay *r = h->data;
	if (h == (uv_handle_t *)r->tcp)
		raft_free(h);
	if (--r->handles)
		return;
	tls_conn_free(r->tls);
	t_open--;
	free(r);
}

static void relay_close(struct raft_tls_relay *r)
{
	if (r->closing)
		return;
	r->closing = true;
	uv_close((uv_handle_t *)r->tcp, on_handle_closed);
	uv_close((uv_handle_t *)&r->pipe, on_handle_closed);
	uv_close((uv_handle_t *)&r->timer, on_handle_closed);
}

/* Before the handshake completed: a server counts a refusal, a client
 * tells its caller. */
static void relay_fail(struct raft_tls_relay *r, enum rpc_tls_raft_refusal kind, const char *why)
{
	if (r->closing)
		return;
	rpc_tls_raft_refused(r->server, kind, r->peer, why);
	if (r->server && !r->up) {
		/* A fatal alert, if TLS queued one, helps the peer's log. */
		size_t len, cap;
		char *p = tls_conn_take_all(r->tls, &len, &cap);
		if (p) {
			uv_buf_t b = uv_buf_init(p, (unsigned)len);
			(void)uv_try_write((uv_stream_t *)r->tcp, &b, 1);
			free(p);
		}
	}
	raft_tls_ready_cb cb = r->cb;
	r->cb = NULL;
	if (cb)
		cb(r->ud, kind == RPC_TLS_RAFT_ROLE ? -EACCES : -EPROTO, why);
	relay_close(r);
}

static void on_close_deadline(uv_timer_t *t)
{
	relay_close(t->data);
}

/* Close once what is queued toward one side has been written. */
static void relay_drain(struct raft_tls_relay *r, bool to_tcp)
{
	if (r->closing || r->draining)
		return;
	if ((to_tcp ? r->q_tcp : r->q_pipe) == 0) {
		relay_close(r);
		return;
	}
	r->draining = true;
	r->drain_to_tcp = to_tcp;
	uv_read_stop((uv_stream_t *)r->tcp);
	uv_read_stop((uv_stream_t *)&r->pipe);
	uv_timer_start(&r->timer, on_close_deadline, RAFT_TLS_CLOSE_MS, 0);
}

/* ------------------------------------------------------------ writes */

static void on_tcp_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_tcp_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void on_pipe_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_pipe_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static void on_written(uv_write_t *req, int status)
{
	struct wr *w = req->data;
	struct raft_tls_relay *r = w->r;
	if (w->to_tcp) {
		r->q_tcp -= w->len;
		if (r->tls && !r->closing)
			tls_conn_recycle(r->tls, w->buf, w->cap);
		else
			free(w->buf);
	} else {
		r->q_pipe -= w->len;
		free(w->buf);
	}
	free(w);
	if (r->closing)
		return;
	if (status < 0) {
		relay_close(r);
		return;
	}
	if (r->draining) {
		if ((r->drain_to_tcp ? r->q_tcp : r->q_pipe) == 0)
			relay_close(r);
		return;
	}
	/* Back-pressure released: read the other side again. */
	if (r->tcp_paused && r->q_pipe < RAFT_TLS_QUEUE_LOW) {
		r->tcp_paused = false;
		uv_read_start((uv_stream_t *)r->tcp, on_tcp_alloc, on_tcp_read);
	}
	if (r->pipe_paused && r->q_tcp < RAFT_TLS_QUEUE_LOW) {
		r->pipe_paused = false;
		uv_read_start((uv_stream_t *)&r->pipe, on_pipe_alloc, on_pipe_read);
	}
}

/* Queue buf (malloc'd, len bytes, cap allocated) toward one side; the
 * write owns it. 0 or a libuv error (buf freed). */
static int queue_write(struct raft_tls_relay *r, bool to_tcp, char *buf, size_t len, size_t cap)
{
	struct wr *w = malloc(sizeof(*w));
	if (!w) {
		free(buf);
		return UV_ENOMEM;
	}
	*w = (struct wr){ .r = r, .buf = buf, .len = len, .cap = cap, .to_tcp = to_tcp };
	w->req.data = w;
	uv_buf_t b = uv_buf_init(buf, (unsigned)len);
	uv_stream_t *s = to_tcp ? (uv_stream_t *)r->tcp : (uv_stream_t *)&r->pipe;
	int rc = uv_write(&w->req, s, &b, 1, on_written);
	if (rc) {
		free(buf);
		free(w);
		return rc;
	}
	if (to_tcp)
		r->q_tcp += len;
	else
		r->q_pipe += len;
	return 0;
}

/* Send whatever ciphertext TLS has queued. 0 or a libuv error. */
static int flush_tcp(struct raft_tls_relay *r)
{
	size_t len, cap;
	char *p = tls_conn_take_all(r->tls, &len, &cap);
	return p ? queue_write(r, true, p, len, cap) : 0;
}

/* ------------------------------------------------------------ TCP side */

static void on_tcp_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)h;
	(void)suggested;
	buf->base = t_rbuf;
	buf->len = sizeof(t_rbuf);
}

static void became_up(struct raft_tls_relay *r)
{
	char why[320];
	int rc = rpc_tls_raft_ready(r->id, r->tls, why, sizeof(why));
	if (rc) {
		relay_fail(r, rc == -EACCES ? RPC_TLS_RAFT_ROLE : RPC_TLS_RAFT_HANDSHAKE, why);
		return;
	}
	r->up = true;
	uv_timer_stop(&r->timer);
	rpc_tls_raft_handshake(r->server);
	if (!r->pipe_reading) {
		r->pipe_reading = true;
		uv_read_start((uv_stream_t *)&r->pipe, on_pipe_alloc, on_pipe_read);
	}
	raft_tls_ready_cb cb = r->cb;
	r->cb = NULL;
	if (cb)
		cb(r->ud, 0, "");
}

static void on_tcp_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct raft_tls_relay *r = s->data;
	(void)buf;
	if (nread == 0 || r->closing)
		return;
	if (nread < 0) {
		if (!r->up)
			relay_fail(r, RPC_TLS_RAFT_HANDSHAKE, nread == UV_EOF
				   ? "the peer closed the connection during the handshake"
				   : uv_strerror((int)nread));
		else
			relay_drain(r, false);   /* deliver what was decrypted, then EOF */
		return;
	}
	if (r->server && !r->seen) {
		r->seen = true;
		if (rpc_tls_is_plaintext((uint8_t)t_rbuf[0])) {
			relay_fail(r, RPC_TLS_RAFT_PLAINTEXT, "not TLS (a plaintext Raft mux peer?)");
			return;
		}
	}
	if (r->up && tls_conn_revoked(r->tls)) {
		rpc_tls_raft_dropped_revoked();
		rpc_tls_raft_refused(r->server, RPC_TLS_RAFT_REVOKED, r->peer,
				     "the peer's certificate was revoked by the reloaded CRL");
		relay_close(r);
		return;
	}
	if (tls_conn_feed(r->tls, t_rbuf, (size_t)nread)) {
		relay_close(r);
		return;
	}
	for (;;) {
		char *plain = malloc(RELAY_PLAIN_CHUNK);
		if (!plain) {
			relay_close(r);
			return;
		}
		ssize_t m = tls_conn_read(r->tls, plain, RELAY_PLAIN_CHUNK);
		if (!r->up && tls_conn_handshake_done(r->tls)) {
			became_up(r);
			if (r->closing) {
				free(plain);
				return;
			}
		}
		if (m > 0) {
			if (queue_write(r, false, plain, (size_t)m, RELAY_PLAIN_CHUNK)) {
				relay_close(r);
				return;
			}
			continue;
		}
		free(plain);
		if (m == 0)
			break;
		if (m == TLS_EOF) {
			(void)flush_tcp(r);
			relay_drain(r, false);
			return;
		}
		/* -EPROTO: a failed handshake (certificate, CA, CRL, ALPN) or a
		 * broken record later. */
		(void)flush_tcp(r);
		if (!r->up)
			relay_fail(r, RPC_TLS_RAFT_HANDSHAKE, tls_conn_error(r->tls));
		else
			relay_close(r);
		return;
	}
	if (flush_tcp(r)) {
		relay_close(r);
		return;
	}
	if (r->q_pipe >= RAFT_TLS_QUEUE_HIGH && !r->tcp_paused) {
		r->tcp_paused = true;
		uv_read_stop((uv_stream_t *)r->tcp);
	}
}

/* ------------------------------------------------------------ pipe side */

static void on_pipe_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)h;
	(void)suggested;
	buf->base = t_rbuf;
	buf->len = sizeof(t_rbuf);
}

static void on_pipe_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct raft_tls_relay *r = s->data;
	(void)buf;
	if (nread == 0 || r->closing)
		return;
	if (nread < 0) {
		/* libraft (or the mux) closed the plaintext end: close_notify
		 * after what is queued, then close. */
		if (r->up) {
			tls_conn_close_notify(r->tls);
			(void)flush_tcp(r);
			relay_drain(r, true);
		} else {
			relay_close(r);
		}
		return;
	}
	if (tls_conn_revoked(r->tls)) {
		rpc_tls_raft_dropped_revoked();
		rpc_tls_raft_refused(r->server, RPC_TLS_RAFT_REVOKED, r->peer,
				     "the peer's certificate was revoked by the reloaded CRL");
		relay_close(r);
		return;
	}
	if (tls_conn_write(r->tls, t_rbuf, (size_t)nread) || flush_tcp(r)) {
		relay_close(r);
		return;
	}
	if (r->q_tcp >= RAFT_TLS_QUEUE_HIGH && !r->pipe_paused) {
		r->pipe_paused = true;
		uv_read_stop((uv_stream_t *)&r->pipe);
	}
}

/* ------------------------------------------------------------ start */

static void on_handshake_deadline(uv_timer_t *t)
{
	struct raft_tls_relay *r = t->data;
	if (!r->up)
		relay_fail(r, r->early_why ? RPC_TLS_RAFT_HANDSHAKE : RPC_TLS_RAFT_TIMEOUT,
			   r->early_why ? r->early_why : "no TLS handshake within the deadline");
}

static void free_relay(uv_handle_t *h)
{
	free(h->data);
}

int raft_tls_relay_start(uv_loop_t *loop, struct rpc_tls *tls, bool server, uv_tcp_t *tcp,
			 const char *peer, unsigned timeout_ms, raft_tls_ready_cb cb, void *ud,
			 uv_pipe_t **plain, struct raft_tls_relay **out)
{
	struct raft_tls_relay *r = calloc(1, sizeof(*r));
	uv_pipe_t *p = raft_malloc(sizeof(*p));
	struct tls_conn *tc = tls ? rpc_tls_raft_conn_new(tls, server) : NULL;
	uv_os_sock_t fds[2] = { -1, -1 };
	int rc = UV_ENOMEM;
	if (!r || !p || !tc)
		goto err;
	rc = uv_socketpair(SOCK_STREAM, 0, fds, 0, 0);
	if (rc)
		goto err;
	uv_pipe_init(loop, &r->pipe, 0);
	uv_pipe_init(loop, p, 0);
	r->pipe.data = r;
	if ((rc = uv_pipe_open(&r->pipe, fds[0])))
		close(fds[0]);   /* not the handle's */
	else if ((rc = uv_pipe_open(p, fds[1])))
		fds[0] = -1;     /* closing the handle closes it */
	if (rc) {
		close(fds[1]);
		uv_close((uv_handle_t *)&r->pipe, free_relay);
		uv_close((uv_handle_t *)p, (uv_close_cb)raft_free);
		tls_conn_free(tc);
		return rc;
	}
	r->loop = loop;
	r->id = tls;
	r->tcp = tcp;
	r->tls = tc;
	r->server = server;
	r->cb = cb;
	r->ud = ud;
	snprintf(r->peer, sizeof(r->peer), "%s", peer ? peer : "?");
	uv_timer_init(loop, &r->timer);
	r->timer.data = tcp->data = r;
	r->handles = 3;
	t_open++;
	uv_tcp_nodelay(tcp, 1);
	if (uv_read_start((uv_stream_t *)tcp, on_tcp_alloc, on_tcp_read)) {
		r->early_why = "cannot read the connection";
	} else if (!server) {
		/* The first read queues the ClientHello. */
		if (tls_conn_read(tc, t_rbuf, sizeof(t_rbuf)) < 0 || flush_tcp(r))
			r->early_why = "cannot start the TLS handshake";
	}
	/* A failure now is reported from the timer, never from inside this
	 * call (the caller is not ready for its callback yet). */
	uv_timer_start(&r->timer, on_handshake_deadline,
		       r->early_why ? 0 : (timeout_ms ? timeout_ms : 1), 0);
	*plain = p;
	if (out)
		*out = r;
	return 0;
err:
	tls_conn_free(tc);
	raft_free(p);
	free(r);
	return rc;
}

void raft_tls_relay_detach(struct raft_tls_relay *r)
{
	r->cb = NULL;
}
