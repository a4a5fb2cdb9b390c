/*
 * http_accept.c — the acceptor of http_accept.h: a listening socket
 * watched by a uv_poll on one loop, accept4 in batches, the least loaded
 * target picked (an HTTP server, or another kind through its hooks), the
 * socket posted to its loop. Also the shared
 * per-address limit table (http_limit_shared_new) the servers of several
 * loops use.
 *
 * Owns the listening socket and the hand-off items in flight (the
 * acceptor's memory lives until the last posted item ran: a reference
 * count). Serves no connection itself: http.c does, after
 * http_server_adopt.
 *
 * Thread: the acceptor's loop; a posted item runs on its target's loop
 * and touches only that server and the atomics here.
 */
#include "gateway/http_accept.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/metrics.h"
#include "gateway/http_int.h"

#define ACCEPT_BATCH 32

struct target {
	struct http_accept_target t;
	atomic_uint pending;        /* posted, not yet adopted */
	atomic_uint_fast64_t handed;
	struct metrics_counter *m_handed;
};

struct http_acceptor {
	uv_loop_t *loop;
	int fd;
	int port;
	uv_poll_t poll;
	uv_timer_t retry;
	bool polling, closing;
	int handles_open;
	unsigned n, next;           /* next: where a tie starts (round-robin) */
	atomic_uint refs;           /* 1 (the acceptor) + items in flight */
	void (*close_cb)(void *);
	void *close_arg;
	struct target tg[HTTP_ACCEPT_MAX_TARGETS];
};

struct handoff {
	struct loop_work w;
	struct http_acceptor *a;
	unsigned i;
	int fd;
};

static void unref(struct http_acceptor *a)
{
	if (atomic_fetch_sub(&a->refs, 1) == 1)
		free(a);
}

static uint32_t target_load(const struct target *t)
{
	return t->t.srv ? http_server_load(t->t.srv) : t->t.load(t->t.ud);
}

static uint32_t target_capacity(const struct target *t)
{
	return t->t.srv ? http_server_capacity(t->t.srv) : t->t.capacity(t->t.ud);
}

static void target_adopt(const struct target *t, int fd)
{
	if (t->t.srv)
		http_server_adopt(t->t.srv, fd);   /* closes fd when it cannot */
	else
		t->t.adopt(t->t.ud, fd);
}

/* The target with room and the fewest connections (open + on their way),
 * ties from a->next round-robin (moved on by hand(), not here: a pick
 * whose accept4 finds the backlog empty must not skip a target); -1 when
 * every pool is full. */
static int pick(struct http_acceptor *a)
{
	int best = -1;
	uint32_t best_load = UINT32_MAX;
	for (unsigned k = 0; k < a->n; k++) {
		unsigned i = (a->next + k) % a->n;
		struct target *t = &a->tg[i];
		uint32_t load = target_load(t) +
				atomic_load_explicit(&t->pending, memory_order_relaxed);
		if (load < target_capacity(t) && load < best_load) {
			best = (int)i;
			best_load = load;
		}
	}
	return best;
}

static void on_handoff(struct loop_work *w)
{
	struct handoff *h = container_of(w, struct handoff, w);
	struct target *t = &h->a->tg[h->i];
	target_adopt(t, h->fd);
	atomic_fetch_sub_explicit(&t->pending, 1, memory_order_relaxed);
	unref(h->a);
	free(h);
}

static void hand(struct http_acceptor *a, unsigned i, int fd)
{
	struct target *t = &a->tg[i];
	a->next = (i + 1) % a->n;
	atomic_fetch_add_explicit(&t->handed, 1, memory_order_relaxed);
	if (t->m_handed)
		metrics_counter_inc(t->m_handed);
	if (!t->t.queue) {
		target_adopt(t, fd);
		return;
	}
	struct handoff *h = malloc(sizeof(*h));
	if (!h) {
		close(fd);
		return;
	}
	h->a = a;
	h->i = i;
	h->fd = fd;
	atomic_fetch_add(&a->refs, 1);
	atomic_fetch_add_explicit(&t->pending, 1, memory_order_relaxed);
	if (loop_queue_post(t->t.queue, &h->w, on_handoff)) {
		atomic_fetch_sub_explicit(&t->pending, 1, memory_order_relaxed);
		atomic_fetch_sub(&a->refs, 1);
		close(fd);
		free(h);
	}
}

static void on_readable(uv_poll_t *p, int status, int events);

static void on_retry(uv_timer_t *t)
{
	struct http_acceptor *a = t->data;
	if (a->closing || a->polling)
		return;
	a->polling = true;
	uv_poll_start(&a->poll, UV_READABLE, on_readable);
}

static void pause_accepting(struct http_acceptor *a)
{
	if (!a->polling)
		return;
	a->polling = false;
	uv_poll_stop(&a->poll);
	uv_timer_start(&a->retry, on_retry, HTTP_ACCEPT_RETRY_MS, 0);
}

static void on_readable(uv_poll_t *p, int status, int events)
{
	(void)events;
	struct http_acceptor *a = p->data;
	if (status < 0 || a->closing)
		return;
	for (int k = 0; k < ACCEPT_BATCH; k++) {
		int i = pick(a);
		if (i < 0)
			goto pause;
		int fd = accept4(a->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM)
				goto pause;
			continue;   /* ECONNABORTED and the like: the next one */
		}
		hand(a, (unsigned)i, fd);
	}
	return;
pause:
	pause_accepting(a);
}

static void on_closed(uv_handle_t *h)
{
	struct http_acceptor *a = h->data;
	if (--a->handles_open > 0)
		return;
	close(a->fd);
	void (*cb)(void *) = a->close_cb;
	void *arg = a->close_arg;
	unref(a);
	if (cb)
		cb(arg);
}

int http_accept_split(const char *s, char *host, size_t cap, int *port)
{
	const char *c = strrchr(s, ':');
	if (!c || c == s)
		return -EINVAL;
	char *end;
	long p = strtol(c + 1, &end, 10);
	if (!c[1] || *end || p < 0 || p > 65535)
		return -EINVAL;
	size_t hl = (size_t)(c - s);
	if (hl >= 2 && s[0] == '[' && c[-1] == ']') { /* [v6]:port */
		s++;
		hl -= 2;
	}
	if (!hl || hl >= cap)
		return -EINVAL;
	if (hl == 9 && !memcmp(s, "localhost", 9))
		snprintf(host, cap, "127.0.0.1");
	else
		snprintf(host, cap, "%.*s", (int)hl, s);
	*port = (int)p;
	return 0;
}

int http_acceptor_start(uv_loop_t *loop, const char *addr, int port,
			const struct http_accept_target *t, unsigned n,
			struct metrics_registry *metrics, const char *metric,
			struct http_acceptor **out)
{
	if (!n || n > HTTP_ACCEPT_MAX_TARGETS)
		return -EINVAL;
	struct sockaddr_storage ss;
	int rc = strchr(addr, ':') ? uv_ip6_addr(addr, port, (struct sockaddr_in6 *)&ss)
				   : uv_ip4_addr(addr, port, (struct sockaddr_in *)&ss);
	if (rc)
		return rc;
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	socklen_t sl = ss.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						: sizeof(struct sockaddr_in);
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&ss, sl) || listen(fd, 511) ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl)) {
		rc = -errno;
		close(fd);
		return rc;
	}
	struct http_acceptor *a = calloc(1, sizeof(*a));
	if (!a) {
		close(fd);
		return -ENOMEM;
	}
	a->loop = loop;
	a->fd = fd;
	a->n = n;
	a->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						 : ((struct sockaddr_in *)&ss)->sin_port);
	atomic_init(&a->refs, 1);
	for (unsigned i = 0; i < n; i++) {
		a->tg[i].t = t[i];
		if (metrics) {
			char li[16];
			snprintf(li, sizeof(li), "%u", i);
			a->tg[i].m_handed = metrics_counter_shared(
				metrics, metric ? metric : "iolake_gw_loop_connections_total",
				metric ? "connections handed to each gateway loop"
				       : "S3 connections handed to each gateway loop",
				METRICS_LABELS("loop", li));
		}
	}
	uv_poll_init(loop, &a->poll, fd);
	uv_timer_init(loop, &a->retry);
	a->poll.data = a->retry.data = a;
	a->handles_open = 2;
	a->polling = true;
	uv_poll_start(&a->poll, UV_READABLE, on_readable);
	*out = a;
	return 0;
}

int http_acceptor_port(const struct http_acceptor *a)
{
	return a->port;
}

uint64_t http_acceptor_handed(const struct http_acceptor *a, unsigned i)
{
	return i < a->n ? atomic_load(&a->tg[i].handed) : 0;
}

void http_acceptor_close(struct http_acceptor *a, void (*cb)(void *arg), void *arg)
{
	a->closing = true;
	a->close_cb = cb;
	a->close_arg = arg;
	uv_close((uv_handle_t *)&a->poll, on_closed);
	uv_close((uv_handle_t *)&a->retry, on_closed);
}

/* ------------------------------------------------------------ shared limits */

struct http_limit_shared *http_limit_shared_new(const struct http_limit_cfg *cfg)
{
	if (!cfg->max_conns && !cfg->rate)
		return NULL;
	struct http_limit_shared *ls = calloc(1, sizeof(*ls));
	if (!ls || !(ls->l = http_limit_new(cfg, 0))) {
		free(ls);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&ls->mu, NULL);
	return ls;
}

void http_limit_shared_free(struct http_limit_shared *ls)
{
	if (!ls)
		return;
	http_limit_free(ls->l);
	pthread_mutex_destroy(&ls->mu);
	free(ls);
}
