/*
 * gw_loops.c — the gateway's loops (contracts in gw_loops.h): starts N
 * loop threads, builds each loop's s3_ops and s3_server on its own
 * thread, puts the acceptor on loop 0 when N > 1, forwards degraded PGs
 * to loop 0's flagger, and takes it all down in order.
 *
 * Owns struct gw_loops. Knows nothing of S3 itself (s3_ops, s3_server).
 *
 * Thread: start/stop on the caller's thread, which waits (a semaphore)
 * for each step run on a loop through its queue.
 */
#include "gateway/gw_loops.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "gateway/http_accept.h"
#include "gateway/s3_rq.h"

struct gw_loop {
	struct gw_loops *g;
	unsigned index;
	struct loop_thread lt;
	bool started;              /* lt runs */
	struct s3_ops *ops;
	struct s3_server *srv;
	struct s3_server_cfg sc;   /* this loop's copy (s3_ops_bind fills it) */
	int rc;
	bool listen_failed;        /* rc is the server's start (N = 1: the bind) */
};

struct gw_loops {
	unsigned n;
	struct gw_loops_cfg cfg;
	struct s3_ops_peers peers;
	struct http_limit_shared *limit;  /* N > 1: one per-address table */
	struct user_limit *ulimit;        /* N > 1: one per-user table ... */
	pthread_mutex_t ulimit_mu;        /* ... behind this */
	struct http_acceptor *acc;        /* N > 1, on loop 0 */
	struct loop_work gc_kick;         /* a GC kick posted to loop 0 ... */
	atomic_bool gc_kick_posted;       /* ... at most one at a time */
	int port;
	struct gw_loop l[GW_LOOPS_MAX];
};

unsigned gw_loops_default(void)
{
	cpu_set_t set;
	int n = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
	if (n < 1)
		n = 1;
	return n > GW_LOOPS_DEFAULT_MAX ? GW_LOOPS_DEFAULT_MAX : (unsigned)n;
}

/* ------------------------------------------------------------ waiting */

/* A step run on a loop that finishes in a callback: the caller waits on
 * the semaphore, the step's last callback posts it. */
struct step {
	uv_sem_t sem;
	struct gw_loop *l;
};

static void step_done(void *arg)
{
	uv_sem_post(&((struct step *)arg)->sem);
}

static void run_step(struct gw_loop *l, void (*fn)(void *))
{
	struct step st = { .l = l };
	uv_sem_init(&st.sem, 0);
	if (loop_thread_call(&l->lt, fn, &st) == 0)
		uv_sem_wait(&st.sem);
	uv_sem_destroy(&st.sem);
}

/* ------------------------------------------------------------ degraded PGs */

struct degraded {
	struct loop_work w;
	struct gw_loops *g;
	uint32_t pg;
	enum gw_data_degraded why;
};

static void on_degraded_fwd(struct loop_work *w)
{
	struct degraded *d = container_of(w, struct degraded, w);
	struct s3_ops *o0 = atomic_load(&d->g->peers.ops[0]);   /* loop 0's thread */
	if (o0)
		s3_ops_flag_degraded(o0, d->pg, d->why);
	free(d);
}

/* On loop i > 0: hand the PG to loop 0's flagger (rare: a PUT short of
 * shards, a read around a bad one). Dropped when out of memory or when
 * loop 0 is stopping: the OSDs' own rescans find it later. */
static void flag_degraded(void *ud, uint32_t pg, enum gw_data_degraded why)
{
	struct gw_loops *g = ud;
	struct degraded *d = malloc(sizeof(*d));
	if (!d)
		return;
	d->g = g;
	d->pg = pg;
	d->why = why;
	if (loop_queue_post(&g->l[0].lt.queue, &d->w, on_degraded_fwd))
		free(d);
}

static void on_gc_kick_fwd(struct loop_work *w)
{
	struct gw_loops *g = container_of(w, struct gw_loops, gc_kick);
	atomic_store(&g->gc_kick_posted, false);
	struct s3_ops *o0 = atomic_load(&g->peers.ops[0]);   /* loop 0's thread */
	if (o0)
		s3_ops_kick_gc(o0);
}

/* On loop i > 0: an inline PUT replaced a version with shards; loop 0
 * runs the GC worker. Kicks coalesce: one in flight is enough. */
static void kick_gc(void *ud)
{
	struct gw_loops *g = ud;
	if (atomic_exchange(&g->gc_kick_posted, true))
		return;
	if (loop_queue_post(&g->l[0].lt.queue, &g->gc_kick, on_gc_kick_fwd))
		atomic_store(&g->gc_kick_posted, false);
}

/* ------------------------------------------------------------ start */

static void loop_start_fn(void *arg)
{
	struct gw_loop *l = arg;
	struct gw_loops *g = l->g;
	char ctx[48];
	snprintf(ctx, sizeof(ctx), "svc=gw loop=%u", l->index);
	log_set_thread_context(ctx);
	struct s3_ops_cfg oc = g->cfg.ops;
	if (g->n > 1) {
		oc.peers = &g->peers;
		oc.loop_index = l->index;
	}
	/* Each loop's pool keeps its share of the total (at least 1 byte:
	 * 0 would mean gw_data's default). */
	uint64_t pool = oc.data.pool_max_bytes ? oc.data.pool_max_bytes : GW_BUFFER_POOL_DEFAULT;
	oc.data.pool_max_bytes = pool / g->n ? pool / g->n : 1;
	l->rc = s3_ops_new(&l->lt.loop, &oc, &l->ops);
	if (l->rc)
		return;
	l->sc = g->cfg.srv;
	s3_ops_bind(l->ops, &l->sc);
	if (g->cfg.ready)
		l->sc.ready = g->cfg.ready;
	if (g->n > 1) {
		uint32_t all = l->sc.http.max_conns ? l->sc.http.max_conns : 1024;
		l->sc.http.max_conns = (all + g->n - 1) / g->n;
		l->sc.http.adopt_only = true;
		l->sc.http.limit_shared = g->limit;
		l->sc.user_limit_shared = g->ulimit;
		l->sc.user_limit_mu = g->ulimit ? &g->ulimit_mu : NULL;
	}
	/* A service beside S3 on every loop starts after gw_loops_start,
	 * on each loop with its ops (the native protocol: native_loops.c). */
	l->rc = s3_server_start(&l->lt.loop, &l->sc, &l->srv);
	if (l->rc) {
		l->listen_failed = true;
		l->srv = NULL;
		s3_ops_free(l->ops);
		l->ops = NULL;
	}
}

static void acceptor_start_fn(void *arg)
{
	struct gw_loops *g = arg;
	struct http_accept_target t[GW_LOOPS_MAX];
	memset(t, 0, sizeof(t));
	for (unsigned i = 0; i < g->n; i++) {
		t[i].srv = s3_server_http(g->l[i].srv);
		t[i].queue = i ? &g->l[i].lt.queue : NULL;
	}
	const struct http_server_cfg *h = &g->cfg.srv.http;
	g->l[0].rc = http_acceptor_start(&g->l[0].lt.loop, h->addr ? h->addr : "127.0.0.1",
					 h->port, t, g->n, g->cfg.ops.metrics, NULL, &g->acc);
	if (g->l[0].rc)
		g->acc = NULL;
	else
		g->port = http_acceptor_port(g->acc);
}

int gw_loops_start(const struct gw_loops_cfg *cfg, struct gw_loops **out, bool *failed_listen)
{
	*failed_listen = false;
	if (!cfg->n || cfg->n > GW_LOOPS_MAX || !cfg->ops.metrics)
		return -EINVAL;
	struct gw_loops *g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->n = cfg->n;
	g->cfg = *cfg;
	g->peers.n = g->n;
	g->peers.flag_degraded = flag_degraded;
	g->peers.kick_gc = kick_gc;
	g->peers.ud = g;
	int rc = 0;
	if (g->n > 1 && (cfg->srv.http.limit.max_conns || cfg->srv.http.limit.rate) &&
	    !(g->limit = http_limit_shared_new(&cfg->srv.http.limit))) {
		free(g);
		return -ENOMEM;
	}
	const struct user_limit_cfg *ul = &cfg->srv.user_limit;
	pthread_mutex_init(&g->ulimit_mu, NULL);
	if (g->n > 1 && (ul->rate || ul->bytes_rate) && !(g->ulimit = user_limit_new(ul, 0)))
		rc = -ENOMEM;
	for (unsigned i = 0; i < g->n && !rc; i++) {
		struct gw_loop *l = &g->l[i];
		l->g = g;
		l->index = i;
		char name[16];
		snprintf(name, sizeof(name), "gw.%u", i);
		rc = loop_thread_start(&l->lt, name);
		if (rc)
			break;
		l->started = true;
		/* One at a time, loop 0 first: it sets what is process-wide
		 * (the lifecycle day) before the others read it. */
		loop_thread_call(&l->lt, loop_start_fn, l);
		rc = l->rc;
		*failed_listen = l->listen_failed;
	}
	if (!rc && g->n > 1) {
		loop_thread_call(&g->l[0].lt, acceptor_start_fn, g);
		rc = g->l[0].rc;
		*failed_listen = rc != 0;
	} else if (!rc) {
		g->port = s3_server_port(g->l[0].srv);
	}
	if (rc) {
		gw_loops_stop(g);
		return rc;
	}
	*out = g;
	return 0;
}

unsigned gw_loops_n(const struct gw_loops *g)
{
	return g->n;
}

int gw_loops_port(const struct gw_loops *g)
{
	return g->port;
}

struct loop_thread *gw_loops_thread(struct gw_loops *g, unsigned i)
{
	return &g->l[i].lt;
}

struct s3_ops *gw_loops_ops(struct gw_loops *g, unsigned i)
{
	return g->l[i].ops;
}

/* ------------------------------------------------------------ stop */

static void acceptor_close_fn(void *arg)
{
	struct step *st = arg;
	struct gw_loops *g = st->l->g;
	if (!g->acc) {
		step_done(st);
		return;
	}
	struct http_acceptor *a = g->acc;
	g->acc = NULL;
	http_acceptor_close(a, step_done, st);
}

static void on_server_closed(void *arg)
{
	struct step *st = arg;
	s3_ops_free(st->l->ops);
	st->l->ops = NULL;
	step_done(st);
}

static void loop_close_fn(void *arg)
{
	struct step *st = arg;
	struct gw_loop *l = st->l;
	if (l->srv) {
		struct s3_server *s = l->srv;
		l->srv = NULL;
		s3_server_close(s, on_server_closed, st);
		return;
	}
	on_server_closed(st);
}

void gw_loops_stop(struct gw_loops *g)
{
	if (!g)
		return;
	if (g->l[0].started)
		run_step(&g->l[0], acceptor_close_fn);
	/* Loop 0 last: the others forward degraded PGs to its flagger. */
	for (unsigned i = g->n; i-- > 0;)
		if (g->l[i].started)
			run_step(&g->l[i], loop_close_fn);
	for (unsigned i = g->n; i-- > 0;)
		if (g->l[i].started)
			loop_thread_stop(&g->l[i].lt);
	http_limit_shared_free(g->limit);
	user_limit_free(g->ulimit);
	pthread_mutex_destroy(&g->ulimit_mu);
	free(g);
}
