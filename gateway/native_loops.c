/*
 * native_loops.c — the native servers of every gateway loop (contracts in
 * native_loops.h): a native_srv started on each loop with that loop's
 * s3_ops, and with several loops S3's acceptor (http_accept.c) on loop 0
 * handing them connections through a target's hooks.
 *
 * Owns struct native_loops, the shared limit table and the acceptor; the
 * servers own themselves once closed (native_srv_close).
 *
 * Thread: the caller's (not a loop) for start/close/free, which run each
 * step on its loop through loop_thread_call and wait.
 */
#include "gateway/native_loops.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/http_accept.h"
#include "gateway/s3_rq.h"

struct native_loops {
	struct gw_loops *g;
	unsigned n;
	struct native_cfg cfg;             /* every loop's (listen NULL when N > 1) */
	char host[64];                     /* N > 1: the acceptor's address ... */
	int port;                          /* ... and port (then the bound one) */
	struct http_limit_shared *limit;   /* N > 1 with limits: one table */
	struct http_acceptor *acc;         /* N > 1, on loop 0 */
	struct native_srv *srv[GW_LOOPS_MAX];
	unsigned cur;                      /* the loop a step runs for */
	int rc;
	uv_sem_t closed;                   /* the acceptor's close is done */
};

static void srv_start_fn(void *arg)
{
	struct native_loops *nl = arg;
	unsigned i = nl->cur;
	nl->rc = native_srv_start(&gw_loops_thread(nl->g, i)->loop, gw_loops_ops(nl->g, i),
				  &nl->cfg, &nl->srv[i]);
	if (nl->rc)
		nl->srv[i] = NULL;
}

static void srv_close_fn(void *arg)
{
	struct native_loops *nl = arg;
	native_srv_close(nl->srv[nl->cur]);
	nl->srv[nl->cur] = NULL;
}

/* ------------------------------------------------------------ the acceptor's hooks */

static uint32_t t_load(void *ud)
{
	return native_srv_conns(ud);
}

/* An RPC server has no pool: the acceptor only compares loads. */
static uint32_t t_capacity(void *ud)
{
	(void)ud;
	return UINT32_MAX - 1;
}

static void t_adopt(void *ud, int fd)
{
	native_srv_adopt(ud, fd);
}

static void acceptor_start_fn(void *arg)
{
	struct native_loops *nl = arg;
	struct http_accept_target t[GW_LOOPS_MAX];
	memset(t, 0, sizeof(t));
	for (unsigned i = 0; i < nl->n; i++) {
		t[i].queue = i ? &gw_loops_thread(nl->g, i)->queue : NULL;
		t[i].ud = nl->srv[i];
		t[i].load = t_load;
		t[i].capacity = t_capacity;
		t[i].adopt = t_adopt;
	}
	nl->rc = http_acceptor_start(&gw_loops_thread(nl->g, 0)->loop, nl->host, nl->port, t,
				     nl->n, gw_loops_ops(nl->g, 0)->reg,
				     "iolake_gw_native_loop_connections_total", &nl->acc);
	if (nl->rc)
		nl->acc = NULL;
	else
		nl->port = http_acceptor_port(nl->acc);
}

static void on_acceptor_closed(void *arg)
{
	struct native_loops *nl = arg;
	uv_sem_post(&nl->closed);
}

static void acceptor_close_fn(void *arg)
{
	struct native_loops *nl = arg;
	struct http_acceptor *a = nl->acc;
	nl->acc = NULL;
	http_acceptor_close(a, on_acceptor_closed, nl);
}

/* ------------------------------------------------------------ API */

int native_loops_start(struct gw_loops *g, const struct native_cfg *cfg,
		       struct native_loops **out)
{
	struct native_loops *nl = calloc(1, sizeof(*nl));
	if (!nl)
		return -ENOMEM;
	nl->g = g;
	nl->n = gw_loops_n(g);
	nl->cfg = *cfg;
	uv_sem_init(&nl->closed, 0);
	int rc = 0;
	if (nl->n > 1) {
		if ((rc = http_accept_split(cfg->listen, nl->host, sizeof(nl->host), &nl->port)))
			goto fail;
		nl->cfg.listen = NULL;
		nl->cfg.uploads_max = (NATIVE_UPLOADS_MAX + nl->n - 1) / nl->n;
		if ((cfg->limit.max_conns || cfg->limit.rate) &&
		    !(nl->limit = http_limit_shared_new(&cfg->limit))) {
			rc = -ENOMEM;
			goto fail;
		}
		nl->cfg.limit_shared = nl->limit;
	}
	for (unsigned i = 0; i < nl->n; i++) {
		nl->cur = i;
		loop_thread_call(gw_loops_thread(g, i), srv_start_fn, nl);
		if ((rc = nl->rc))
			goto fail;
	}
	if (nl->n > 1) {
		loop_thread_call(gw_loops_thread(g, 0), acceptor_start_fn, nl);
		if ((rc = nl->rc))
			goto fail;
	} else {
		nl->port = native_srv_port(nl->srv[0]);
	}
	*out = nl;
	return 0;
fail:
	native_loops_close(nl);
	native_loops_free(nl);   /* no call was served: nothing touches the table */
	return rc;
}

int native_loops_port(const struct native_loops *nl)
{
	return nl->port;
}

uint64_t native_loops_handed(const struct native_loops *nl, unsigned i)
{
	return nl->acc ? http_acceptor_handed(nl->acc, i) : 0;
}

void native_loops_close(struct native_loops *nl)
{
	if (!nl)
		return;
	if (nl->acc) {
		/* First: connections posted to a loop are adopted before its
		 * server's close runs (one queue, in order). */
		loop_thread_call(gw_loops_thread(nl->g, 0), acceptor_close_fn, nl);
		uv_sem_wait(&nl->closed);
	}
	for (unsigned i = 0; i < nl->n; i++) {
		if (!nl->srv[i])
			continue;
		nl->cur = i;
		loop_thread_call(gw_loops_thread(nl->g, i), srv_close_fn, nl);
	}
}

void native_loops_free(struct native_loops *nl)
{
	if (!nl)
		return;
	http_limit_shared_free(nl->limit);
	uv_sem_destroy(&nl->closed);
	free(nl);
}
