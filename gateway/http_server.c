/*
 * http_server.c — the HTTP server's lifecycle (contracts in http.h): the
 * configuration's defaults, the connection pool and limit table made at
 * start, the listener bound (or none: cfg.adopt_only, connections handed
 * over by gateway/http_accept.c), the counters, and closing: the listener
 * and every connection, the memory once the last handle closed.
 *
 * Owns struct http_server's memory. Serves no connection: http.c reads
 * and parses, http_resp.c writes.
 *
 * Thread: the server's loop (http_server_load: any thread).
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "common/metrics.h"
#include "common/tls.h"
#include "gateway/http_int.h"

static void on_srv_handle_closed(uv_handle_t *h);

uint32_t http_server_load(const struct http_server *srv)
{
	return atomic_load_explicit(&srv->load, memory_order_relaxed);
}

uint32_t http_server_capacity(const struct http_server *srv)
{
	return srv->cfg.max_conns;
}

/* Counters in cfg.metrics, shared by the servers of several loops on one
 * registry (errors ignored: the server then keeps http_stats only). */
static void register_metrics(struct http_server *srv)
{
	struct metrics_registry *reg = srv->cfg.metrics;
	if (!reg)
		return;
	static const char name[] = "iolake_gw_http_refused_total";
	static const char help[] = "connections and requests refused before authentication";
	srv->m_refused_conns = metrics_counter_shared(reg, name, help,
						      METRICS_LABELS("reason", "conns_per_addr"));
	srv->m_refused_rate = metrics_counter_shared(reg, name, help,
						     METRICS_LABELS("reason", "rate_per_addr"));
	srv->m_slow_body = metrics_counter_shared(reg, "iolake_gw_http_slow_bodies_total",
						  "request bodies cut off under the minimum rate",
						  NULL);
	srv->m_plain_on_tls = metrics_counter_shared(reg, "iolake_gw_http_plain_on_tls_total",
						     "plain HTTP requests sent to the TLS port", NULL);
	if (srv->cfg.tls)
		tls_server_register_metrics(srv->cfg.tls, reg);
}

int http_server_start(uv_loop_t *loop, const struct http_server_cfg *cfg, struct http_server **out)
{
	int rc;
	struct http_server *srv = calloc(1, sizeof(*srv));
	if (!srv)
		return -ENOMEM;
	srv->loop = loop;
	srv->cfg = *cfg;
	struct http_server_cfg *k = &srv->cfg;
	if (!k->addr)
		k->addr = "127.0.0.1";
	if (!k->max_conns)
		k->max_conns = 1024;
	if (!k->header_timeout_ms)
		k->header_timeout_ms = 30000;
	if (!k->body_timeout_ms)
		k->body_timeout_ms = 60000;
	if (!k->idle_timeout_ms)
		k->idle_timeout_ms = 60000;
	if (!k->request_id_header)
		k->request_id_header = "x-amz-request-id";
	if (!k->server_name)
		k->server_name = "IOLake";
	log_new_request_id(srv->host_id); /* x-amz-id-2: which gateway answered */

	srv->pool = calloc(k->max_conns, sizeof(struct conn));
	if (!srv->pool) {
		rc = -ENOMEM;
		goto err_srv;
	}
	rc = -ENOMEM;
	if (k->limit_shared) {
		srv->limit = k->limit_shared->l;
		srv->limit_mu = &k->limit_shared->mu;
	} else if (k->limit.max_conns || k->limit.rate) {
		srv->limit = http_limit_new(&k->limit, 0);
		if (!srv->limit)
			goto err_pool;
	}
	if (k->tls) {
		srv->tls_in = malloc(HTTP_TLS_IN_BUF);
		if (!srv->tls_in)
			goto err_pool;
	}
	register_metrics(srv);
	for (uint32_t i = k->max_conns; i-- > 0;) {
		srv->pool[i].next = srv->free_list;
		srv->free_list = &srv->pool[i];
	}

	if (k->adopt_only) {
		uv_idle_init(loop, &srv->kick);
		srv->kick.data = srv;
		*out = srv;
		return 0;
	}
	struct sockaddr_storage ss;
	if (strchr(k->addr, ':'))
		rc = uv_ip6_addr(k->addr, k->port, (struct sockaddr_in6 *)&ss);
	else
		rc = uv_ip4_addr(k->addr, k->port, (struct sockaddr_in *)&ss);
	if (rc)
		goto err_pool;
	rc = uv_tcp_init(loop, &srv->listener);
	if (rc)
		goto err_pool;
	srv->listener.data = srv;
	rc = uv_tcp_bind(&srv->listener, (struct sockaddr *)&ss, 0);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)&srv->listener, 511, http_on_connection);
	if (rc)
		goto err_listener;
	int len = sizeof(ss);
	uv_tcp_getsockname(&srv->listener, (struct sockaddr *)&ss, &len);
	srv->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						   : ((struct sockaddr_in *)&ss)->sin_port);
	uv_idle_init(loop, &srv->kick);
	srv->kick.data = srv;
	*out = srv;
	return 0;

err_listener:
	/* The handle must be closed through the loop (we may be inside one of
	 * its callbacks): the server and pool are freed from the close cb. */
	srv->closing = true;
	srv->handles_open = 1;
	uv_close((uv_handle_t *)&srv->listener, on_srv_handle_closed);
	return rc;
err_pool:
	if (!srv->limit_mu)
		http_limit_free(srv->limit);
	free(srv->tls_in);
	free(srv->pool);
err_srv:
	free(srv);
	return rc;
}

int http_server_port(const struct http_server *srv)
{
	return srv->port;
}

void http_server_stats(const struct http_server *srv, struct http_stats *out)
{
	*out = srv->stats;
}

void http_server_maybe_done(struct http_server *srv)
{
	if (srv->handles_open > 0 || srv->live)
		return;
	void (*cb)(void *) = srv->close_cb;
	void *arg = srv->close_arg;
	if (!srv->limit_mu)   /* a shared table is its maker's */
		http_limit_free(srv->limit);
	free(srv->tls_in);
	free(srv->pool);
	free(srv);
	if (cb)
		cb(arg);
}

static void on_srv_handle_closed(uv_handle_t *h)
{
	struct http_server *srv = h->data;
	srv->handles_open--;
	http_server_maybe_done(srv);
}

void http_server_close(struct http_server *srv, void (*cb)(void *arg), void *arg)
{
	srv->closing = true;
	srv->close_cb = cb;
	srv->close_arg = arg;
	srv->handles_open = srv->cfg.adopt_only ? 1 : 2;
	if (!srv->cfg.adopt_only)
		uv_close((uv_handle_t *)&srv->listener, on_srv_handle_closed);
	uv_close((uv_handle_t *)&srv->kick, on_srv_handle_closed);
	for (struct conn *c = srv->live; c; c = c->next)
		conn_close(c, -ESHUTDOWN);
}
