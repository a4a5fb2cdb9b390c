/*
 * raft_mux.c — many Raft groups over one listening TCP port (contract and
 * wire format in raft_mux.h).
 *
 * Owns: the listener; a fixed pool of RAFT_MUX_HANDSHAKES_MAX handshake
 * slots (an accepted connection until its preamble is read); the table of
 * groups (one struct mux_group per transport made, by group id); each
 * group's outgoing connections until their preamble is written (one
 * malloc per attempt: libraft keeps at most one attempt per peer per group
 * in flight, so they are bounded by groups x peers). Two timers: the
 * handshake deadline sweep and the "defer" timer that runs a transport's
 * close callback on a later loop turn.
 *
 * Does not own: a stream once it is handed to raft_uv (accept callback or
 * connect callback): raft_uv reads, writes, closes and frees it (with
 * raft_free, hence raft_malloc for every uv_tcp_t here); the rafts, which
 * close their own transports; raft_mux_close waits for them instead.
 *
 * Invariants:
 *   - A handshake never reads past the preamble: the alloc callback offers
 *     exactly the bytes raft_mux_preamble_decode still needs, so the
 *     libraft messages the peer sends right after it stay in the socket
 *     for raft_uv.
 *   - A group's accept callback runs only while its state is G_LISTENING
 *     (raft_uv asserts it is not closing when called).
 *   - A transport's close callback runs after every connect callback of
 *     that transport has run (raft_uv frees its clients then), and never
 *     from inside transport->close.
 *   - The mux is freed only when no group remains (n_groups 0) and all of
 *     its handles are closed (handles 0).
 *   - At most RAFT_MUX_HANDSHAKES_MAX accepted connections wait for a
 *     preamble, each at most the handshake timeout. When every slot is
 *     busy the next connection is not accepted: libuv stops polling the
 *     listener until uv_accept, so it waits in the kernel's backlog.
 *
 * Thread: the loop given to raft_mux_init, only.
 */
#include "meta/raft_mux.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/log.h"
#include "common/tcp_self.h"

/* IOL_ASSERTs here guard the mux's own bookkeeping or its caller's use of
 * the API, never what a peer sent. */

#define MUX_BUCKETS 256          /* group table; hundreds of groups: short chains */
#define MUX_BACKLOG 511          /* a member restart reconnects every group at once */
/* Raft's sockets after a partition (issue 15): a connect made while the
 * peer was unreachable gave up only after the kernel's SYN retries (about
 * 2 min; libraft keeps one attempt per peer in flight, so nothing else was
 * tried), and data unacknowledged on an established connection waited for
 * the next retransmit: a healed member stayed a candidate, unreached, for
 * 10 to 70 s. Now a connect gives up after one SYN retry (~3 s), and
 * unacknowledged data or a silent peer drops the connection in ~2 s
 * (libraft sends heartbeats every 100 ms, so a live peer always acks);
 * libraft then connects again. */
#define MUX_SYN_RETRIES 1
#define MUX_USER_TIMEOUT_MS 2000
#define MUX_KEEPALIVE_IDLE_S 1
#define MUX_KEEPALIVE_INTVL_S 1
#define MUX_KEEPALIVE_CNT 2

/* Best effort: a failure leaves the socket as it was. */
static void tune_socket(uv_tcp_t *tcp)
{
	uv_os_fd_t fd;
	if (uv_fileno((uv_handle_t *)tcp, &fd))
		return;
	uv_tcp_keepalive(tcp, 1, MUX_KEEPALIVE_IDLE_S);
	int intvl = MUX_KEEPALIVE_INTVL_S, cnt = MUX_KEEPALIVE_CNT, syn = MUX_SYN_RETRIES;
	unsigned int uto = MUX_USER_TIMEOUT_MS;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &uto, sizeof(uto));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_SYNCNT, &syn, sizeof(syn));
}

/* ------------------------------------------------------------ the codec */

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* Printable ASCII without space: what raft addresses are, and what can go
 * into a log line unquoted. */
static bool addr_byte_ok(uint8_t c)
{
	return c > 0x20 && c < 0x7f;
}

int raft_mux_preamble_encode(uint8_t *buf, size_t cap, uint64_t group, raft_id server_id,
			     const char *address)
{
	if (server_id == 0 || !address || !address[0])
		return -EINVAL;
	size_t n = strnlen(address, RAFT_MUX_ADDR_MAX);
	if (n >= RAFT_MUX_ADDR_MAX)
		return -ENAMETOOLONG;
	for (size_t i = 0; i < n; i++)
		if (!addr_byte_ok((uint8_t)address[i]))
			return -EINVAL;
	size_t alen = (n + 1 + 7) & ~(size_t)7;   /* <= RAFT_MUX_ADDR_MAX: it is a multiple of 8 */
	if (cap < RAFT_MUX_HDR_BYTES + alen)
		return -ENOSPC;
	memcpy(buf, RAFT_MUX_MAGIC, 8);
	put64(buf + 8, group);
	put64(buf + 16, RAFT_MUX_PROTOCOL);
	put64(buf + 24, server_id);
	put64(buf + 32, alen);
	memset(buf + RAFT_MUX_HDR_BYTES, 0, alen);
	memcpy(buf + RAFT_MUX_HDR_BYTES, address, n);
	return (int)(RAFT_MUX_HDR_BYTES + alen);
}

_Static_assert(sizeof(RAFT_MUX_MAGIC) == 8 + 1, "magic is 8 bytes on the wire");
_Static_assert(RAFT_MUX_ADDR_MAX % 8 == 0, "address field is padded to 8");

int raft_mux_preamble_decode(const uint8_t *p, size_t len, struct raft_mux_preamble *out)
{
	/* Each field is judged as soon as it has arrived, so garbage is
	 * refused after its first bytes instead of after a timeout. */
	size_t k = len < 8 ? len : 8;
	if (k && memcmp(p, RAFT_MUX_MAGIC, k))
		return -EBADMSG;
	if (len >= 24 && get64(p + 16) != RAFT_MUX_PROTOCOL)
		return -EPROTONOSUPPORT;
	if (len >= 32 && get64(p + 24) == 0)
		return -EINVAL;
	if (len < RAFT_MUX_HDR_BYTES)
		return RAFT_MUX_HDR_BYTES;
	uint64_t alen = get64(p + 32);
	if (alen == 0 || alen % 8 || alen > RAFT_MUX_ADDR_MAX)
		return -EMSGSIZE;
	size_t total = RAFT_MUX_HDR_BYTES + (size_t)alen;
	const uint8_t *a = p + RAFT_MUX_HDR_BYTES;
	size_t avail = (len < total ? len : total) - RAFT_MUX_HDR_BYTES;
	size_t i = 0;
	while (i < avail && a[i]) {
		if (!addr_byte_ok(a[i]))
			return -EILSEQ;
		i++;
	}
	if (avail > 0 && i == 0)
		return -EILSEQ;                   /* empty address */
	if (len < total)
		return (int)total;
	if (i == avail)
		return -EILSEQ;                   /* no NUL within its length */
	out->group = get64(p + 8);
	out->server_id = get64(p + 24);
	memcpy(out->address, a, i + 1);
	out->len = total;
	return 0;
}

const char *raft_mux_refusal_name(enum raft_mux_refusal why)
{
	static const char *const names[] = {
#define RAFT_MUX_R_NAME(name, text) text,
		RAFT_MUX_REFUSALS(RAFT_MUX_R_NAME)
#undef RAFT_MUX_R_NAME
	};
	return (unsigned)why < RAFT_MUX_R_COUNT ? names[why] : "?";
}

/* ------------------------------------------------------------ state */

enum group_state {
	G_NEW,        /* made; raft_uv has not called init yet */
	G_READY,      /* init done: may connect */
	G_LISTENING,  /* raft_uv listens: incoming streams go to accept_cb */
	G_CLOSING,    /* transport->close called; connects being cancelled */
	G_CLOSED,     /* close callback ran; waits for raft_mux_transport_close */
};

struct mux_conn;

struct mux_group {
	struct raft_mux *m;
	struct raft_uv_transport *t;
	uint64_t id;                           /* group id */
	enum group_state state;
	bool in_table;                         /* findable by id (until closed or released) */
	bool due;                              /* on m->due: close callback pending */
	raft_uv_accept_cb accept_cb;           /* set by listen */
	raft_uv_transport_close_cb close_cb;   /* set by close */
	struct mux_conn *conns;                /* connects not yet called back */
	struct mux_group *next;                /* bucket chain */
	struct mux_group *next_due;
	size_t preamble_len;
	uint8_t preamble[RAFT_MUX_PREAMBLE_MAX]; /* what every connect of this group writes */
};

/* An outgoing connection until raft_uv's connect callback has it. */
struct mux_conn {
	struct mux_group *g;
	struct raft_uv_connect *req;
	uv_tcp_t *tcp;                         /* raft_malloc'd: becomes raft_uv's */
	uv_connect_t connect;
	uv_write_t write;
	int status;                            /* 0 while going; then the RAFT_* error
						* the callback gets once tcp is closed */
	struct mux_conn *prev, *next;
};

/* An accepted connection reading its preamble. */
struct mux_hs {
	struct raft_mux *m;
	uv_tcp_t *tcp;                         /* raft_malloc'd: becomes raft_uv's */
	struct mux_hs *prev, *next;            /* m->hs_active, or m->hs_free (next only) */
	uint64_t deadline_ms;                  /* uv_now after which it is refused */
	size_t nread;                          /* bytes in buf */
	size_t need;                           /* bytes decode asks for (> nread) */
	uint8_t buf[RAFT_MUX_PREAMBLE_MAX];
};

struct refusal_log {
	uint64_t last_ms;
	uint64_t suppressed;                   /* since the last line */
	bool logged;
};

struct raft_mux {
	uv_loop_t *loop;
	uv_tcp_t listener;
	uv_timer_t hs_timer;                   /* handshake deadlines */
	uv_timer_t defer;                      /* runs due close callbacks */
	char address[RAFT_MUX_ADDR_MAX];       /* as bound, real port */
	int port;
	unsigned hs_timeout_ms;
	bool closing;
	bool defer_closed;
	bool backlog;                          /* a connection waits for uv_accept */
	unsigned handles;                      /* open uv handles of ours */
	size_t n_groups;                       /* made and not released */
	struct mux_group *table[MUX_BUCKETS];
	struct mux_group *due;                 /* close callbacks for the defer timer */
	struct mux_hs *hs_active;              /* reading a preamble */
	struct mux_hs *hs_free;
	struct mux_hs hs[RAFT_MUX_HANDSHAKES_MAX];
	struct raft_mux_stats stats;
	struct refusal_log log[RAFT_MUX_R_COUNT];
	void (*close_cb)(void *ud);
	void *close_ud;
};

/* ------------------------------------------------------------ helpers */

static size_t bucket_of(uint64_t id)
{
	id ^= id >> 33;                      /* murmur3's fmix64: ids may be sequential or strided */
	id *= 0xff51afd7ed558ccdULL;
	id ^= id >> 33;
	return (size_t)(id & (MUX_BUCKETS - 1));
}

static struct mux_group *table_find(struct raft_mux *m, uint64_t id)
{
	struct mux_group *g = m->table[bucket_of(id)];
	while (g && g->id != id)
		g = g->next;
	return g;
}

static void table_remove(struct mux_group *g)
{
	if (!g->in_table)
		return;
	struct mux_group **pp = &g->m->table[bucket_of(g->id)];
	while (*pp != g)
		pp = &(*pp)->next;
	*pp = g->next;
	g->in_table = false;
}

/* "A.B.C.D:PORT" into sa and host. */
static int parse_ipv4(const char *s, struct sockaddr_in *sa, char *host, size_t hostlen)
{
	const char *colon = strrchr(s, ':');
	if (!colon || colon == s || (size_t)(colon - s) >= hostlen)
		return -EINVAL;
	char *end;
	long port = strtol(colon + 1, &end, 10);
	if (*end || end == colon + 1 || port < 0 || port > 65535)
		return -EINVAL;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	return uv_ip4_addr(host, (int)port, sa) ? -EINVAL : 0;
}

static void peer_name(uv_tcp_t *tcp, char *out, size_t outlen)
{
	struct sockaddr_storage ss;
	int len = sizeof(ss);
	char ip[INET6_ADDRSTRLEN];
	snprintf(out, outlen, "?");
	if (uv_tcp_getpeername(tcp, (struct sockaddr *)&ss, &len) || ss.ss_family != AF_INET)
		return;
	const struct sockaddr_in *sa = (const struct sockaddr_in *)&ss;
	if (!uv_ip4_name(sa, ip, sizeof(ip)))
		snprintf(out, outlen, "%s:%u", ip, (unsigned)ntohs(sa->sin_port));
}

static void on_tcp_free(uv_handle_t *h)
{
	raft_free(h);
}

static void mux_maybe_done(struct raft_mux *m);

static void on_mux_handle_closed(uv_handle_t *h)
{
	struct raft_mux *m = h->data;
	m->handles--;
	mux_maybe_done(m);
}

static void mux_maybe_done(struct raft_mux *m)
{
	if (!m->closing)
		return;
	if (m->n_groups == 0 && !m->defer_closed) {
		/* The defer timer serves transports' close callbacks: it goes
		 * last, once no transport is left to need it. */
		m->defer_closed = true;
		uv_close((uv_handle_t *)&m->defer, on_mux_handle_closed);
		return;
	}
	if (m->n_groups || m->handles)
		return;
	void (*cb)(void *) = m->close_cb;
	void *ud = m->close_ud;
	free(m);
	if (cb)
		cb(ud);
}

/* ------------------------------------------------------------ incoming */

static void accept_more(struct raft_mux *m);

static void hs_unlink(struct mux_hs *s)
{
	struct raft_mux *m = s->m;
	if (s->prev)
		s->prev->next = s->next;
	else
		m->hs_active = s->next;
	if (s->next)
		s->next->prev = s->prev;
	s->prev = s->next = NULL;
	m->stats.handshakes--;
	if (!m->hs_active && !m->closing)
		uv_timer_stop(&m->hs_timer);   /* nothing to time out */
}

static void hs_release(struct mux_hs *s)
{
	struct raft_mux *m = s->m;
	s->tcp = NULL;
	s->next = m->hs_free;
	m->hs_free = s;
}

static void on_hs_closed(uv_handle_t *h)
{
	struct mux_hs *s = h->data;
	struct raft_mux *m = s->m;
	raft_free(h);
	hs_release(s);
	m->handles--;
	accept_more(m);
	mux_maybe_done(m);
}

/* Count and (rate-limited) log one refusal. tcp may be NULL; group is
 * printed only when has_group. */
static void note_refusal(struct raft_mux *m, enum raft_mux_refusal why, uv_tcp_t *tcp,
			 bool has_group, uint64_t group)
{
	struct refusal_log *l = &m->log[why];
	uint64_t now = uv_now(m->loop);
	m->stats.refused[why]++;
	if (l->logged && now - l->last_ms < RAFT_MUX_LOG_INTERVAL_MS) {
		l->suppressed++;
		return;
	}
	char peer[64] = "-", grp[24] = "-";
	if (tcp)
		peer_name(tcp, peer, sizeof(peer));
	if (has_group)
		snprintf(grp, sizeof(grp), "%llu", (unsigned long long)group);
	LOG_WARN("raft mux refused a connection", "listen=%s reason=%s peer=%s group=%s total=%llu suppressed=%llu",
		 m->address, raft_mux_refusal_name(why), peer, grp,
		 (unsigned long long)m->stats.refused[why], (unsigned long long)l->suppressed);
	l->logged = true;
	l->last_ms = now;
	l->suppressed = 0;
}

static void hs_refuse(struct mux_hs *s, enum raft_mux_refusal why, bool has_group, uint64_t group)
{
	note_refusal(s->m, why, s->tcp, has_group, group);
	hs_unlink(s);
	uv_close((uv_handle_t *)s->tcp, on_hs_closed);
}

static void hs_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct mux_hs *s = h->data;
	(void)suggested;
	/* Exactly what the decoder still needs: never a byte of libraft's. */
	buf->base = (char *)s->buf + s->nread;
	buf->len = s->need - s->nread;
}

static enum raft_mux_refusal refusal_of(int rc)
{
	switch (rc) {
	case -EBADMSG: return RAFT_MUX_R_BAD_MAGIC;
	case -EPROTONOSUPPORT: return RAFT_MUX_R_BAD_PROTOCOL;
	case -EINVAL: return RAFT_MUX_R_BAD_SERVER_ID;
	default: return RAFT_MUX_R_BAD_ADDRESS;   /* -EMSGSIZE, -EILSEQ */
	}
}

static void hs_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct mux_hs *s = stream->data;
	struct raft_mux *m = s->m;
	(void)buf;
	if (nread == 0)
		return;
	if (nread < 0) {
		hs_refuse(s, nread == UV_EOF ? RAFT_MUX_R_EOF : RAFT_MUX_R_READ_ERROR, false, 0);
		return;
	}
	s->nread += (size_t)nread;
	struct raft_mux_preamble pre;
	int rc = raft_mux_preamble_decode(s->buf, s->nread, &pre);
	if (rc > 0) {
		/* The decoder's contract, not the peer's input. */
		IOL_ASSERT((size_t)rc > s->nread && rc <= RAFT_MUX_PREAMBLE_MAX);
		s->need = (size_t)rc;
		return;
	}
	if (rc < 0) {
		hs_refuse(s, refusal_of(rc), false, 0);
		return;
	}
	IOL_ASSERT(pre.len == s->nread);
	struct mux_group *g = table_find(m, pre.group);
	if (!g || g->state != G_LISTENING) {
		hs_refuse(s, g ? RAFT_MUX_R_NOT_LISTENING : RAFT_MUX_R_UNKNOWN_GROUP, true, pre.group);
		return;
	}
	uv_read_stop(stream);
	uv_tcp_t *tcp = s->tcp;
	hs_unlink(s);
	hs_release(s);
	m->handles--;                        /* raft_uv's from here on */
	m->stats.accepted++;
	tcp->data = NULL;
	accept_more(m);
	g->accept_cb(g->t, pre.server_id, pre.address, (uv_stream_t *)tcp);
}

static void on_hs_timer(uv_timer_t *timer)
{
	struct raft_mux *m = timer->data;
	uint64_t now = uv_now(m->loop), next = 0;
	struct mux_hs *s = m->hs_active;
	/* At most RAFT_MUX_HANDSHAKES_MAX: a full walk is cheaper than
	 * keeping them sorted when the timeout changes. */
	while (s) {
		struct mux_hs *nx = s->next;
		if (s->deadline_ms <= now)
			hs_refuse(s, RAFT_MUX_R_TIMEOUT, false, 0);
		else if (!next || s->deadline_ms < next)
			next = s->deadline_ms;
		s = nx;
	}
	if (next)
		uv_timer_start(&m->hs_timer, on_hs_timer, next - now, 0);
}

static void hs_start(struct raft_mux *m, struct mux_hs *s, uv_tcp_t *tcp)
{
	s->tcp = tcp;
	s->nread = 0;
	s->need = RAFT_MUX_HDR_BYTES;
	s->deadline_ms = uv_now(m->loop) + m->hs_timeout_ms;
	s->prev = NULL;
	s->next = m->hs_active;
	if (s->next)
		s->next->prev = s;
	m->hs_active = s;
	m->stats.handshakes++;
	/* The sweep is due at the earliest deadline; this one may be it
	 * (the timeout may have been shortened since it was armed). */
	if (!uv_is_active((uv_handle_t *)&m->hs_timer) ||
	    uv_timer_get_due_in(&m->hs_timer) > m->hs_timeout_ms)
		uv_timer_start(&m->hs_timer, on_hs_timer, m->hs_timeout_ms, 0);
	int rc = uv_read_start((uv_stream_t *)tcp, hs_alloc, hs_read);
	if (rc)
		hs_refuse(s, RAFT_MUX_R_READ_ERROR, false, 0);
}

/* Accept the connection libuv holds, if a slot is free. */
static void accept_more(struct raft_mux *m)
{
	if (!m->backlog || !m->hs_free || m->closing)
		return;
	uv_tcp_t *tcp = raft_malloc(sizeof(*tcp));
	if (!tcp) {
		/* The connection stays in libuv's hands; the next slot freed
		 * or the next connection retries. */
		LOG_ERROR("raft mux: no memory to accept", "listen=%s", m->address);
		return;
	}
	struct mux_hs *s = m->hs_free;
	m->hs_free = s->next;
	m->backlog = false;
	uv_tcp_init(m->loop, tcp);
	tcp->data = s;
	s->tcp = tcp;
	m->handles++;
	int rc = uv_accept((uv_stream_t *)&m->listener, (uv_stream_t *)tcp);
	if (rc) {
		note_refusal(m, RAFT_MUX_R_ACCEPT_ERROR, NULL, false, 0);
		uv_close((uv_handle_t *)tcp, on_hs_closed);
		return;
	}
	tune_socket(tcp);
	hs_start(m, s, tcp);
}

static void on_listen(uv_stream_t *server, int status)
{
	struct raft_mux *m = server->data;
	if (status < 0) {
		note_refusal(m, RAFT_MUX_R_ACCEPT_ERROR, NULL, false, 0);
		return;
	}
	/* Not accepted now when every slot is busy: libuv then stops
	 * polling the listener until uv_accept (backpressure into the
	 * kernel's backlog, no refusal). */
	m->backlog = true;
	accept_more(m);
}

/* ------------------------------------------------------------ outgoing */

static void group_maybe_closed(struct mux_group *g);

static void conn_unlink(struct mux_conn *c)
{
	struct mux_group *g = c->g;
	if (c->prev)
		c->prev->next = c->next;
	else
		g->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
}

static void on_conn_closed(uv_handle_t *h)
{
	struct mux_conn *c = h->data;
	struct mux_group *g = c->g;
	struct raft_uv_connect *req = c->req;
	int status = c->status;
	raft_free(h);
	conn_unlink(c);
	free(c);
	req->cb(req, NULL, status);
	/* After the callback: raft_uv must see every connect end before the
	 * transport's close callback. g lives until that callback. */
	group_maybe_closed(g);
}

static void conn_fail(struct mux_conn *c, int status)
{
	c->status = status;
	uv_close((uv_handle_t *)c->tcp, on_conn_closed);
}

static void on_conn_written(uv_write_t *w, int status)
{
	struct mux_conn *c = w->data;
	if (c->status)
		return;                      /* cancelled: on_conn_closed finishes */
	if (status < 0) {
		snprintf(c->g->t->errmsg, RAFT_ERRMSG_BUF_SIZE, "write preamble: %s", uv_strerror(status));
		conn_fail(c, RAFT_NOCONNECTION);
		return;
	}
	struct mux_group *g = c->g;
	struct raft_uv_connect *req = c->req;
	uv_tcp_t *tcp = c->tcp;
	conn_unlink(c);
	free(c);
	tcp->data = NULL;
	g->m->stats.connects++;
	req->cb(req, (uv_stream_t *)tcp, 0);
}

static void on_conn_connected(uv_connect_t *cr, int status)
{
	struct mux_conn *c = cr->data;
	if (c->status)
		return;
	if (status < 0) {
		snprintf(c->g->t->errmsg, RAFT_ERRMSG_BUF_SIZE, "connect: %s", uv_strerror(status));
		conn_fail(c, RAFT_NOCONNECTION);
		return;
	}
	if (tcp_self_connected(c->tcp)) {   /* a dead local peer's port: see tcp_self.h */
		snprintf(c->g->t->errmsg, RAFT_ERRMSG_BUF_SIZE, "connect: connected to itself");
		c->g->m->stats.self_connects++;
		conn_fail(c, RAFT_NOCONNECTION);
		return;
	}
	/* The group's preamble outlives the write: the group is released
	 * only after its close, which waits for this connection. */
	uv_buf_t b = uv_buf_init((char *)c->g->preamble, (unsigned)c->g->preamble_len);
	int rc = uv_write(&c->write, (uv_stream_t *)c->tcp, &b, 1, on_conn_written);
	if (rc) {
		snprintf(c->g->t->errmsg, RAFT_ERRMSG_BUF_SIZE, "write preamble: %s", uv_strerror(rc));
		conn_fail(c, RAFT_NOCONNECTION);
	}
}

static int tr_connect(struct raft_uv_transport *t, struct raft_uv_connect *req, raft_id id,
		      const char *address, raft_uv_connect_cb cb)
{
	struct mux_group *g = t->impl;
	struct sockaddr_in sa;
	char host[64];   /* a dotted quad */
	(void)id;
	IOL_ASSERT(g->state == G_READY || g->state == G_LISTENING);
	if (parse_ipv4(address, &sa, host, sizeof(host))) {
		snprintf(t->errmsg, RAFT_ERRMSG_BUF_SIZE, "not an IPv4 address:port: %s", address);
		return RAFT_NOCONNECTION;
	}
	struct mux_conn *c = calloc(1, sizeof(*c));
	uv_tcp_t *tcp = raft_malloc(sizeof(*tcp));
	if (!c || !tcp) {
		free(c);
		raft_free(tcp);
		snprintf(t->errmsg, RAFT_ERRMSG_BUF_SIZE, "out of memory");
		return RAFT_NOMEM;
	}
	uv_tcp_init(g->m->loop, tcp);
	tcp->data = c;
	c->g = g;
	c->req = req;
	c->tcp = tcp;
	c->connect.data = c;
	c->write.data = c;
	/* The socket exists once bound: its options apply to the SYNs too. */
	struct sockaddr_in any = { .sin_family = AF_INET };
	if (uv_tcp_bind(tcp, (const struct sockaddr *)&any, 0) == 0)
		tune_socket(tcp);
	int rc = uv_tcp_connect(&c->connect, tcp, (const struct sockaddr *)&sa, on_conn_connected);
	if (rc) {
		snprintf(t->errmsg, RAFT_ERRMSG_BUF_SIZE, "connect: %s", uv_strerror(rc));
		uv_close((uv_handle_t *)tcp, on_tcp_free);
		free(c);
		return RAFT_NOCONNECTION;
	}
	req->cb = cb;
	c->next = g->conns;
	if (c->next)
		c->next->prev = c;
	g->conns = c;
	return 0;
}

/* ------------------------------------------------------------ transport */

static void finish_close(struct mux_group *g)
{
	g->state = G_CLOSED;
	table_remove(g);   /* the id may be taken again */
	g->close_cb(g->t);
}

static void group_maybe_closed(struct mux_group *g)
{
	if (g->state == G_CLOSING && !g->conns && !g->due)
		finish_close(g);
}

static void on_defer(uv_timer_t *timer)
{
	struct raft_mux *m = timer->data;
	while (m->due) {
		struct mux_group *g = m->due;
		m->due = g->next_due;
		g->due = false;
		finish_close(g);
	}
}

static int tr_init(struct raft_uv_transport *t, raft_id id, const char *address)
{
	struct mux_group *g = t->impl;
	IOL_ASSERT(g->state == G_NEW);
	int rc = raft_mux_preamble_encode(g->preamble, sizeof(g->preamble), g->id, id, address);
	if (rc < 0) {
		snprintf(t->errmsg, RAFT_ERRMSG_BUF_SIZE, "raft address unusable in a mux preamble: %s",
			 strerror(-rc));
		return rc == -ENAMETOOLONG ? RAFT_NAMETOOLONG : RAFT_INVALID;
	}
	g->preamble_len = (size_t)rc;
	g->state = G_READY;
	return 0;
}

static int tr_listen(struct raft_uv_transport *t, raft_uv_accept_cb cb)
{
	struct mux_group *g = t->impl;
	IOL_ASSERT(g->state == G_READY);
	if (g->m->closing) {
		snprintf(t->errmsg, RAFT_ERRMSG_BUF_SIZE, "raft mux on %.64s is closed", g->m->address);
		return RAFT_IOERR;
	}
	g->accept_cb = cb;
	g->state = G_LISTENING;
	return 0;
}

static void tr_close(struct raft_uv_transport *t, raft_uv_transport_close_cb cb)
{
	struct mux_group *g = t->impl;
	struct raft_mux *m = g->m;
	IOL_ASSERT(g->state == G_READY || g->state == G_LISTENING);
	g->state = G_CLOSING;
	g->close_cb = cb;
	g->accept_cb = NULL;
	for (struct mux_conn *c = g->conns; c; c = c->next)
		if (!c->status)
			conn_fail(c, RAFT_CANCELED);
	if (!g->conns) {
		/* Nothing to wait for, but the callback must not run inside
		 * close: raft_uv is still in its own close. */
		g->due = true;
		g->next_due = m->due;
		m->due = g;
		uv_timer_start(&m->defer, on_defer, 0, 0);
	}
}

int raft_mux_transport_init(struct raft_mux *m, struct raft_uv_transport *t, uint64_t group_id)
{
	if (m->closing)
		return -ESHUTDOWN;
	if (table_find(m, group_id))
		return -EEXIST;
	struct mux_group *g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->m = m;
	g->t = t;
	g->id = group_id;
	g->state = G_NEW;
	size_t b = bucket_of(group_id);
	g->next = m->table[b];
	m->table[b] = g;
	g->in_table = true;
	m->n_groups++;
	void *data = t->data;
	memset(t, 0, sizeof(*t));
	t->data = data;
	t->impl = g;
	t->init = tr_init;
	t->listen = tr_listen;
	t->connect = tr_connect;
	t->close = tr_close;
	return 0;
}

void raft_mux_transport_close(struct raft_uv_transport *t)
{
	struct mux_group *g = t->impl;
	if (!g)
		return;
	struct raft_mux *m = g->m;
	/* Closing and not yet called back, or connects in flight on a
	 * transport never closed: freeing now would leave libuv and raft_uv
	 * with dangling callbacks. A caller's bug, not a peer's. */
	IOL_ASSERT(g->state != G_CLOSING && !g->conns && !g->due);
	table_remove(g);
	free(g);
	t->impl = NULL;
	m->n_groups--;
	mux_maybe_done(m);
}

/* ------------------------------------------------------------ the mux */

static void on_init_failed(uv_handle_t *h)
{
	free(h->data);
}

int raft_mux_init(struct raft_mux **out, uv_loop_t *loop, const char *address)
{
	struct sockaddr_in sa;
	char host[64];   /* a dotted quad */
	if (!address || parse_ipv4(address, &sa, host, sizeof(host)))
		return -EINVAL;
	struct raft_mux *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->loop = loop;
	m->hs_timeout_ms = RAFT_MUX_HANDSHAKE_TIMEOUT_MS;
	for (size_t i = 0; i < RAFT_MUX_HANDSHAKES_MAX; i++) {
		m->hs[i].m = m;
		m->hs[i].next = m->hs_free;
		m->hs_free = &m->hs[i];
	}
	uv_tcp_init(loop, &m->listener);
	m->listener.data = m;
	/* libuv binds with SO_REUSEADDR: a member reopening its port right
	 * after closing it is not refused for the old connections' TIME_WAIT. */
	int rc = uv_tcp_bind(&m->listener, (const struct sockaddr *)&sa, 0);
	if (!rc)
		rc = uv_listen((uv_stream_t *)&m->listener, MUX_BACKLOG, on_listen);
	struct sockaddr_storage ss;
	int sslen = sizeof(ss);
	if (!rc)
		rc = uv_tcp_getsockname(&m->listener, (struct sockaddr *)&ss, &sslen);
	if (rc) {
		LOG_ERROR("raft mux cannot listen", "addr=%s err=%s", address, uv_strerror(rc));
		uv_close((uv_handle_t *)&m->listener, on_init_failed);
		return rc;   /* libuv's codes are -errno on Linux */
	}
	m->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	snprintf(m->address, sizeof(m->address), "%s:%d", host, m->port);
	uv_timer_init(loop, &m->hs_timer);
	uv_timer_init(loop, &m->defer);
	m->hs_timer.data = m->defer.data = m;
	m->handles = 3;
	*out = m;
	return 0;
}

const char *raft_mux_address(const struct raft_mux *m)
{
	return m->address;
}

int raft_mux_port(const struct raft_mux *m)
{
	return m->port;
}

void raft_mux_set_handshake_timeout(struct raft_mux *m, unsigned timeout_ms)
{
	m->hs_timeout_ms = timeout_ms ? timeout_ms : 1;
}

void raft_mux_get_stats(const struct raft_mux *m, struct raft_mux_stats *out)
{
	*out = m->stats;
	out->groups = (uint32_t)m->n_groups;
}

void raft_mux_close(struct raft_mux *m, void (*cb)(void *ud), void *ud)
{
	IOL_ASSERT(!m->closing);
	m->closing = true;
	m->close_cb = cb;
	m->close_ud = ud;
	uv_close((uv_handle_t *)&m->listener, on_mux_handle_closed);
	while (m->hs_active) {
		struct mux_hs *s = m->hs_active;
		hs_unlink(s);
		uv_close((uv_handle_t *)s->tcp, on_hs_closed);
	}
	uv_close((uv_handle_t *)&m->hs_timer, on_mux_handle_closed);
	mux_maybe_done(m);
}
