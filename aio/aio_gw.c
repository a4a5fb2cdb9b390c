/*
 * aio_gw.c — iolake-aio's gateway (aio_gw.h): gw_loops with the aio's
 * configuration, the admin API on loop 0 (falling back to a free port
 * when its default one is taken), the native protocol on every loop
 * (gateway/native_loops.h; the same fallback).
 *
 * Owns struct aio_gw's loops, API and native servers. Knows nothing of meta or the OSDs
 * beyond the address it is given.
 *
 * Thread: aio's main thread; the API starts and closes on loop 0.
 */
#include "aio/aio_gw.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "common/log.h"
#include "gateway/admin_api.h"
#include "gateway/lc_worker.h"
#include "gateway/native_loops.h"

struct api_call {
	struct aio_gw *g;
	struct admin_api_cfg *ac;
	int rc;
	uv_sem_t sem;
};

static void api_start_fn(void *arg)
{
	struct api_call *a = arg;
	uv_loop_t *loop = &gw_loops_thread(a->g->loops, 0)->loop;
	a->rc = admin_api_start(loop, a->ac, &a->g->api);
	if (a->rc)
		a->g->api = NULL;
}

static void api_closed(void *arg)
{
	uv_sem_post(&((struct api_call *)arg)->sem);
}

static void api_close_fn(void *arg)
{
	struct api_call *a = arg;
	struct admin_api *api = a->g->api;
	a->g->api = NULL;
	admin_api_close(api, api_closed, a);
}

int aio_gw_start(const struct aio_gw_cfg *c, struct aio_gw *g, const char **which)
{
	memset(g, 0, sizeof(*g));
	*which = NULL;
	static char lc_holder[128];
	lc_worker_holder_name(lc_holder, sizeof(lc_holder), c->listen);
	static struct gw_loops_cfg lc;   /* large (the ops table); one aio per process */
	memset(&lc, 0, sizeof(lc));
	const char *members[1] = { c->meta };
	lc.n = c->loops;
	lc.ready = c->ready;
	lc.ops = (struct s3_ops_cfg){ .meta = members, .n_meta = 1, .region = c->region,
				      .data = { .k = c->k, .m = c->m, .hash_pool = c->hash_pool,
						.segment_bytes = c->segment_bytes,
						.pool_max_bytes = c->pool_max_bytes },
				      .inline_max_bytes = c->inline_max ? c->inline_max : 1,
				      .debug_min_part_bytes = c->debug_min_part,
				      .metrics = c->reg, .gc_interval_ms = c->gc_interval_ms,
				      .lc_interval_ms = c->lc_interval_ms,
				      .lc_day_ms = c->lc_day_ms, .lc_holder = lc_holder };
	struct s3_server_cfg *sc = &lc.srv;
	sc->http.addr = c->s3_host;
	sc->http.port = c->s3_port;
	sc->region = c->region;
	sc->no_sigv2 = c->no_sigv2;
	gw_front_apply(c->front, &sc->http);
	gw_front_apply_users(c->front, &sc->user_limit);
	sc->slow_log = true;
	sc->hash_pool = c->hash_pool;   /* one pool; a completion port per loop */
	sc->slow_request_ms = c->front->slow_request_ms;
	bool bind_failed;
	int rc = gw_loops_start(&lc, &g->loops, &bind_failed);
	if (rc) {
		g->loops = NULL;
		*which = bind_failed ? "s3" : NULL;
		return rc;
	}
	g->s3_port = gw_loops_port(g->loops);
	struct s3_ops *o0 = gw_loops_ops(g->loops, 0);
	struct admin_api_cfg ac = { .addr = c->api_host, .port = c->api_port, .meta = members,
				    .n_meta = 1, .region = c->region,
				    .stats = s3_ops_stats(o0), .gc = s3_ops_gc(o0),
				    .map = s3_ops_map(o0) };
	struct api_call a = { .g = g, .ac = &ac };
	loop_thread_call(gw_loops_thread(g->loops, 0), api_start_fn, &a);
	if (a.rc == -EADDRINUSE && c->api_default && c->api_port) {
		LOG_WARN("the default admin API address is taken; it takes a free port",
			 "addr=%s:%d", c->api_host, c->api_port);
		ac.port = 0;
		loop_thread_call(gw_loops_thread(g->loops, 0), api_start_fn, &a);
	}
	if (a.rc) {
		*which = "api";
		gw_loops_stop(g->loops);
		g->loops = NULL;
		return a.rc;
	}
	g->api_port = admin_api_port(g->api);
	if (c->native_off)
		return 0;
	char naddr[96];
	snprintf(naddr, sizeof(naddr), "%s:%d", c->native_host, c->native_port);
	struct native_cfg nc = { .listen = naddr, .limit = sc->http.limit };
	rc = native_loops_start(g->loops, &nc, &g->native);
	if (rc == -EADDRINUSE && c->native_default && c->native_port) {
		LOG_WARN("the default native address is taken; it takes a free port", "addr=%s",
			 naddr);
		snprintf(naddr, sizeof(naddr), "%s:0", c->native_host);
		rc = native_loops_start(g->loops, &nc, &g->native);
	}
	if (rc) {
		g->native = NULL;
		*which = "native";
		aio_gw_stop(g);
		return rc;
	}
	g->native_port = native_loops_port(g->native);
	return 0;
}

void aio_gw_stop(struct aio_gw *g)
{
	if (!g->loops)
		return;
	native_loops_close(g->native);   /* before the loops; freed after them */
	if (g->api) {
		struct api_call a = { .g = g };
		uv_sem_init(&a.sem, 0);
		if (loop_thread_call(gw_loops_thread(g->loops, 0), api_close_fn, &a) == 0)
			uv_sem_wait(&a.sem);
		uv_sem_destroy(&a.sem);
	}
	gw_loops_stop(g->loops);
	g->loops = NULL;
	native_loops_free(g->native);
	g->native = NULL;
}
