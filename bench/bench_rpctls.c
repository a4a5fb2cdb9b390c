/*
 * bench_rpctls.c — what mutual TLS costs RPC: the same calls over HTTP/2
 * on loopback in cleartext and with mTLS (common/rpc_tls.h; certificates
 * from admin/ca.c in a temporary directory on /dev/shm), server on its own
 * loop thread, client on this one.
 *
 * Cells, each run for --duration, in ABBA order (plain, TLS, TLS, plain,
 * repeated --rounds times) so drift on a shared machine hits both alike:
 *   - latency: 100-byte calls one at a time: p50 / p99 / max µs;
 *   - calls/s with 64 in flight (100-byte calls);
 *   - MB/s of 1 MiB request payloads echoed back, 8 in flight;
 *   - connect: a new channel's first call (TCP + TLS handshake), µs.
 * Prints figures only; it asserts nothing about speed.
 *
 *   build/bench-rpctls [--duration 2s] [--rounds 2]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin/ca.h"
#include "common/buf.h"
#include "common/flags.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/rpc.h"
#include "common/rpc_tls.h"
#include "proto/echo.pb-c.h"

static uint64_t duration_ms = 2000;
static int64_t rounds = 2;

static void echo_handler(struct rpc_req *r, void *ud)
{
	(void)ud;
	const Iolake__Test__EchoRequest *q = (const void *)rpc_req_msg(r);
	Iolake__Test__EchoResponse resp = IOLAKE__TEST__ECHO_RESPONSE__INIT;
	resp.text = q->text;
	resp.seq = q->seq;
	rpc_respond(r, &resp.base, q->echo_payload ? rpc_req_payload(r) : NULL);
}

struct server {
	struct loop_thread lt;
	struct rpc_server *srv;
	struct rpc_tls *tls;
	int port, rc;
};

static void server_start(void *arg)
{
	struct server *s = arg;
	static const rpc_handler_fn handlers[] = { echo_handler, NULL, NULL };
	struct rpc_server_opts o = { .tls = s->tls };
	s->srv = rpc_server_new(&s->lt.loop, &o);
	s->rc = s->srv ? rpc_server_add_service(s->srv, &iolake__test__echo__descriptor, handlers,
						 NULL)
		       : -ENOMEM;
	if (!s->rc)
		s->rc = rpc_server_listen(s->srv, "127.0.0.1:0");
	s->port = rpc_server_port(s->srv);
}

static void server_stop(void *arg)
{
	struct server *s = arg;
	rpc_server_close(s->srv);
}

/* ------------------------------------------------------------ runs */

struct run {
	uv_loop_t *loop;
	struct rpc_channel *ch;
	Iolake__Test__EchoRequest req;
	struct buf_slice payload;
	uint64_t deadline_ms, done, errors, bytes;
	unsigned outstanding;
	uint64_t *lat_us;              /* one at a time: each call's latency */
	size_t nlat, caplat;
	uint64_t t_issue;
};

static void issue(struct run *r);

static void on_echo(void *ud, const struct rpc_result *res)
{
	struct run *r = ud;
	r->outstanding--;
	if (res->status == RPC_OK) {
		r->done++;
		r->bytes += res->payload.buf ? res->payload.len : 0;
	} else {
		r->errors++;
	}
	if (r->lat_us && r->nlat < r->caplat)
		r->lat_us[r->nlat++] = (loop_now_ns() - r->t_issue) / 1000;
	if (loop_now_ms() < r->deadline_ms)
		issue(r);
	else if (r->outstanding == 0)
		uv_stop(r->loop);
}

static void issue(struct run *r)
{
	static const struct rpc_call_opts o = { .timeout_ms = 10000 };
	r->outstanding++;
	r->req.seq++;
	r->t_issue = loop_now_ns();
	rpc_call(r->ch, &iolake__test__echo__descriptor, 0, &r->req.base,
		 r->payload.buf ? &r->payload : NULL, &o, on_echo, r);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

struct cell {
	double p50, p99, max, cps, mbps, connect_us;
};

/* One measurement of every cell against port with client identity tls. */
static int measure(uv_loop_t *loop, int port, struct rpc_tls *tls, struct cell *c)
{
	char target[64], text[101];
	snprintf(target, sizeof(target), "127.0.0.1:%d", port);
	memset(text, 'x', 100);
	text[100] = 0;
	struct rpc_channel_opts co = { .tls = tls };
	struct run r = { .loop = loop };
	iolake__test__echo_request__init(&r.req);
	r.req.text = text;

	/* connect: a fresh channel's first call, 20 times; the median. */
	uint64_t cons[20];
	for (int i = 0; i < 20; i++) {
		r.ch = rpc_channel_open(loop, target, &co);
		uint64_t t0 = loop_now_ns();
		r.deadline_ms = 0;
		issue(&r);
		uv_run(loop, UV_RUN_DEFAULT);
		cons[i] = (loop_now_ns() - t0) / 1000;
		rpc_channel_close(r.ch);
		uv_run(loop, UV_RUN_NOWAIT);
	}
	qsort(cons, 20, sizeof(cons[0]), cmp_u64);
	c->connect_us = (double)cons[10];

	r.ch = rpc_channel_open(loop, target, &co);
	r.deadline_ms = 0;
	issue(&r); /* warm: connected */
	uv_run(loop, UV_RUN_DEFAULT);

	/* latency, one at a time */
	r.caplat = 4u << 20;
	r.lat_us = malloc(r.caplat * sizeof(uint64_t));
	r.nlat = 0;
	r.deadline_ms = loop_now_ms() + duration_ms;
	issue(&r);
	uv_run(loop, UV_RUN_DEFAULT);
	qsort(r.lat_us, r.nlat, sizeof(uint64_t), cmp_u64);
	c->p50 = (double)r.lat_us[r.nlat / 2];
	c->p99 = (double)r.lat_us[r.nlat * 99 / 100];
	c->max = (double)r.lat_us[r.nlat - 1];
	free(r.lat_us);
	r.lat_us = NULL;

	/* calls/s, 64 in flight */
	r.done = 0;
	uint64_t t0 = loop_now_ns();
	r.deadline_ms = loop_now_ms() + duration_ms;
	for (int i = 0; i < 64; i++)
		issue(&r);
	uv_run(loop, UV_RUN_DEFAULT);
	c->cps = (double)r.done / ((double)(loop_now_ns() - t0) / 1e9);

	/* 1 MiB payloads echoed, 8 in flight */
	struct buf *b = buf_new(1 << 20);
	memset(b->data, 0xa5, 1 << 20);
	b->len = 1 << 20;
	r.payload = (struct buf_slice){ b, 0, b->len };
	r.req.echo_payload = true;
	r.bytes = 0;
	t0 = loop_now_ns();
	r.deadline_ms = loop_now_ms() + duration_ms;
	for (int i = 0; i < 8; i++)
		issue(&r);
	uv_run(loop, UV_RUN_DEFAULT);
	/* request and response bytes both crossed the connection */
	c->mbps = 2.0 * (double)r.bytes / ((double)(loop_now_ns() - t0) / 1e3);
	buf_unref(b);
	r.payload = (struct buf_slice){ 0 };
	r.req.echo_payload = false;
	rpc_channel_close(r.ch);
	uv_run(loop, UV_RUN_NOWAIT);
	if (r.errors)
		fprintf(stderr, "bench-rpctls: %llu calls failed\n", (unsigned long long)r.errors);
	return r.errors ? -EIO : 0;
}

static struct rpc_tls *ident(const char *dir, const char *prefix)
{
	char ca[300], cert[300], key[300], err[512];
	snprintf(ca, sizeof(ca), "%s/ca/ca.pem", dir);
	snprintf(cert, sizeof(cert), "%s/%s.pem", dir, prefix);
	snprintf(key, sizeof(key), "%s/%s.key", dir, prefix);
	struct rpc_tls *t = NULL;
	if (rpc_tls_new(&(struct rpc_tls_files){ ca, cert, key }, &t, err, sizeof(err))) {
		fprintf(stderr, "bench-rpctls: %s\n", err);
		return NULL;
	}
	return t;
}

static void print_row(const char *what, const struct cell *c)
{
	printf("| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |\n", what, c->p50, c->p99, c->max,
	       c->cps, c->mbps, c->connect_us);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const struct flag_spec specs[] = {
		{ .name = "duration", .type = FLAG_DURATION, .dst = &duration_ms, .min = 100,
		  .max = 600000, .help = "measuring time per cell" },
		{ .name = "rounds", .type = FLAG_INT64, .dst = &rounds, .min = 1, .max = 100,
		  .help = "ABBA rounds (plain, TLS, TLS, plain)" },
		{ 0 },
	};
	int rc = flags_parse_program("bench-rpctls", "", specs, argc, argv, NULL);
	if (rc >= 0)
		return rc;
	rc = 0;
	log_set_level(LOG_LEVEL_ERROR);
	char dir[128], sub[200], why[256];
	snprintf(dir, sizeof(dir), "/dev/shm/bench-rpctls.%d", (int)getpid());
	snprintf(sub, sizeof(sub), "%s/ca", dir);
	static const char *const ips[] = { "127.0.0.1" };
	struct ca_issue_req req = { .name = "bench", .ips = ips, .n_ips = 1, .days = 1 };
	char pfx_s[200], pfx_c[200];
	snprintf(pfx_s, sizeof(pfx_s), "%s/srv", dir);
	snprintf(pfx_c, sizeof(pfx_c), "%s/cli", dir);
	if (ca_init(sub, 1, why, sizeof(why)) || ca_issue(sub, &req, pfx_s, why, sizeof(why)) ||
	    ca_issue(sub, &req, pfx_c, why, sizeof(why))) {
		fprintf(stderr, "bench-rpctls: %s\n", why);
		return 1;
	}
	struct rpc_tls *st = ident(dir, "srv"), *ct = ident(dir, "cli");
	if (!st || !ct)
		return 1;
	struct server plain = { 0 }, tls = { .tls = st };
	struct server *srvs[2] = { &plain, &tls };
	for (int i = 0; i < 2; i++) {
		if (loop_thread_start(&srvs[i]->lt, "bench-srv"))
			return 1;
		loop_thread_call(&srvs[i]->lt, server_start, srvs[i]);
		if (srvs[i]->rc) {
			fprintf(stderr, "bench-rpctls: server: %s\n", strerror(-srvs[i]->rc));
			return 1;
		}
	}
	uv_loop_t loop;
	uv_loop_init(&loop);
	printf("RPC over HTTP/2 on loopback, cleartext vs mutual TLS 1.3 (%llu ms per cell, "
	       "%lld ABBA rounds)\n\n", (unsigned long long)duration_ms, (long long)rounds);
	printf("| run | p50 µs | p99 µs | max µs | calls/s (64 in flight) | MB/s (1 MiB echo) | "
	       "connect µs |\n|---|---:|---:|---:|---:|---:|---:|\n");
	struct cell sum[2] = { 0 };
	int n[2] = { 0 };
	for (int64_t round = 0; round < rounds && !rc; round++) {
		static const int order[4] = { 0, 1, 1, 0 };
		for (int k = 0; k < 4 && !rc; k++) {
			int t = order[k];
			struct cell c;
			rc = measure(&loop, srvs[t]->port, t ? ct : NULL, &c);
			print_row(t ? "mTLS" : "plain", &c);
			sum[t].p50 += c.p50, sum[t].p99 += c.p99, sum[t].cps += c.cps;
			sum[t].mbps += c.mbps, sum[t].connect_us += c.connect_us;
			if (c.max > sum[t].max)
				sum[t].max = c.max;
			n[t]++;
		}
	}
	for (int t = 0; t < 2 && !rc; t++) {
		struct cell m = { sum[t].p50 / n[t], sum[t].p99 / n[t], sum[t].max, sum[t].cps / n[t],
				  sum[t].mbps / n[t], sum[t].connect_us / n[t] };
		print_row(t ? "**mTLS, mean (max: worst)**" : "**plain, mean (max: worst)**", &m);
	}
	for (int i = 0; i < 2; i++) {
		loop_thread_call(&srvs[i]->lt, server_stop, srvs[i]);
		loop_thread_stop(&srvs[i]->lt);
	}
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	rpc_tls_free(st);
	rpc_tls_free(ct);
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench-rpctls: could not remove %s\n", dir);
	return rc ? 1 : 0;
}
