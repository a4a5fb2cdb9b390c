/*
 * test_raft_tls.c — meta/raft_tls.h: the TLS relay under Raft's port, on
 * its own (no libraft): two relays over loopback TCP, one accepting and
 * one connecting, with the plaintext ends read and written as libraft
 * would.
 *
 *   bulk        8 MiB written into the client's plaintext end at once
 *               while the server's end is not read for 300 ms (the relays
 *               stop reading as their queues pass the high mark), then
 *               read: every byte arrives, in order; closing the client's
 *               end gives the server's end EOF; every relay is freed
 *   role        a client with an osd certificate: the server refuses it
 *               (iolake_raft_tls_refused{reason="role"}) and its
 *               plaintext end sees the connection end
 *   plaintext   a plain TCP client writing a mux preamble: refused as
 *               plaintext
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>
#include <raft.h>

#include "admin/ca.h"
#include "common/log.h"
#include "common/rpc_authz.h"
#include "common/rpc_tls.h"
#include "meta/raft_tls.h"
#include "tests/lib/scratch.h"

#define BULK (8u << 20)

static char dir[96];
static struct rpc_tls *id_meta, *id_osd;

static struct rpc_tls *ident(const char *name, unsigned roles)
{
	char cdir[128], pfx[160], caf[160], cert[170], key[170], why[512];
	snprintf(cdir, sizeof(cdir), "%s/ca", dir);
	snprintf(pfx, sizeof(pfx), "%s/%s", dir, name);
	static const char *const ips[] = { "127.0.0.1" };
	struct ca_issue_req r = { .name = name, .ips = ips, .n_ips = 1, .days = 1, .roles = roles,
				  .node_id = roles & RPC_ROLE_OSD ? 3 : 0 };
	ck_assert_msg(ca_issue(cdir, &r, pfx, why, sizeof(why)) == 0, "%s", why);
	snprintf(caf, sizeof(caf), "%s/ca.pem", cdir);
	snprintf(cert, sizeof(cert), "%s.pem", pfx);
	snprintf(key, sizeof(key), "%s.key", pfx);
	struct rpc_tls_files f = { .ca = caf, .cert = cert, .key = key };
	struct rpc_tls *t;
	ck_assert_msg(rpc_tls_new(&f, &t, why, sizeof(why)) == 0, "%s", why);
	return t;
}

static void pki(void)
{
	char cdir[128], why[256];
	test_scratch_path(dir, sizeof(dir), "test_raft_tls.%d", (int)getpid());
	snprintf(cdir, sizeof(cdir), "%s/ca", dir);
	ck_assert_msg(ca_init(cdir, 1, why, sizeof(why)) == 0, "%s", why);
	id_meta = ident("m", RPC_ROLE_META);
	id_osd = ident("o", RPC_ROLE_OSD);
}

static void pki_free(void)
{
	rpc_tls_free(id_meta);
	rpc_tls_free(id_osd);
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* ------------------------------------------------------------ harness */

struct pair {
	uv_loop_t loop;
	uv_tcp_t listener;
	uv_connect_t creq;
	uv_timer_t slow;
	struct rpc_tls *client_id;
	bool raw_client;                 /* plain TCP instead of a client relay */
	uv_tcp_t *ctcp, *stcp;
	uv_pipe_t *cplain, *splain;
	int ready_status;
	bool ready, server_eof, client_gone;
	size_t received, sent;
	bool order_ok;
	char *bulk;
};

static void on_freed(uv_handle_t *h)
{
	raft_free(h);
}

static void on_s_alloc(uv_handle_t *h, size_t sz, uv_buf_t *b)
{
	(void)h;
	static char buf[65536];
	(void)sz;
	b->base = buf;
	b->len = sizeof(buf);
}

static void on_s_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	struct pair *p = s->data;
	if (n < 0) {
		p->server_eof = true;
		uv_close((uv_handle_t *)s, on_freed);
		return;
	}
	for (ssize_t i = 0; i < n; i++)
		if ((uint8_t)b->base[i] != (uint8_t)((p->received + (size_t)i) * 31 + 7))
			p->order_ok = false;
	p->received += (size_t)n;
	if (p->received == BULK && p->cplain) {
		/* libraft closes its outgoing stream: the server side must see EOF. */
		uv_close((uv_handle_t *)p->cplain, on_freed);
		p->cplain = NULL;
	}
}

static void on_slow(uv_timer_t *t)
{
	struct pair *p = t->data;
	uv_read_start((uv_stream_t *)p->splain, on_s_alloc, on_s_read);
	uv_close((uv_handle_t *)t, NULL);
}

static void on_accept(uv_stream_t *l, int status)
{
	struct pair *p = l->data;
	ck_assert_int_eq(status, 0);
	p->stcp = raft_malloc(sizeof(*p->stcp));
	uv_tcp_init(&p->loop, p->stcp);
	ck_assert_int_eq(uv_accept(l, (uv_stream_t *)p->stcp), 0);
	ck_assert_int_eq(raft_tls_relay_start(&p->loop, id_meta, true, p->stcp, "test-client",
					      3000, NULL, NULL, &p->splain, NULL), 0);
	p->splain->data = p;
	/* A slow reader: nothing is read for 300 ms. */
	uv_timer_init(&p->loop, &p->slow);
	p->slow.data = p;
	uv_timer_start(&p->slow, on_slow, 300, 0);
	uv_close((uv_handle_t *)&p->listener, NULL);
}

static void on_bulk_written(uv_write_t *w, int status)
{
	struct pair *p = w->data;
	if (status == 0)
		p->sent = BULK;
	free(w);
}

static void on_c_alloc(uv_handle_t *h, size_t sz, uv_buf_t *b)
{
	on_s_alloc(h, sz, b);
}

static void on_c_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	struct pair *p = s->data;
	(void)b;
	if (n < 0 && p->cplain) {
		p->client_gone = true;
		uv_close((uv_handle_t *)p->cplain, on_freed);
		p->cplain = NULL;
	}
}

static void on_ready(void *ud, int status, const char *why)
{
	struct pair *p = ud;
	(void)why;
	p->ready = true;
	p->ready_status = status;
	if (status) {
		uv_close((uv_handle_t *)p->cplain, on_freed);
		p->cplain = NULL;
		p->client_gone = true;
		return;
	}
	uv_read_start((uv_stream_t *)p->cplain, on_c_alloc, on_c_read);
	if (!p->bulk)
		return;
	uv_write_t *w = malloc(sizeof(*w));
	w->data = p;
	uv_buf_t b = uv_buf_init(p->bulk, BULK);
	ck_assert_int_eq(uv_write(w, (uv_stream_t *)p->cplain, &b, 1, on_bulk_written), 0);
}

static void on_raw_written(uv_write_t *w, int status)
{
	(void)status;
	free(w);
}

static void on_connect(uv_connect_t *req, int status)
{
	struct pair *p = req->data;
	ck_assert_int_eq(status, 0);
	if (p->raw_client) {
		static char pre[64] = "IOLRMUX1";
		uv_write_t *w = malloc(sizeof(*w));
		uv_buf_t b = uv_buf_init(pre, sizeof(pre));
		uv_write(w, (uv_stream_t *)p->ctcp, &b, 1, on_raw_written);
		return;
	}
	ck_assert_int_eq(raft_tls_relay_start(&p->loop, p->client_id, false, p->ctcp, "test-server",
					      3000, on_ready, p, &p->cplain, NULL), 0);
	p->cplain->data = p;
}

/* Run one connection until every handle is closed (or 20 s). */
static void run(struct pair *p)
{
	ck_assert_int_eq(uv_loop_init(&p->loop), 0);
	p->order_ok = true;
	uv_tcp_init(&p->loop, &p->listener);
	p->listener.data = p;
	struct sockaddr_in a;
	uv_ip4_addr("127.0.0.1", 0, &a);
	ck_assert_int_eq(uv_tcp_bind(&p->listener, (const struct sockaddr *)&a, 0), 0);
	ck_assert_int_eq(uv_listen((uv_stream_t *)&p->listener, 8, on_accept), 0);
	struct sockaddr_storage ss;
	int len = sizeof(ss);
	uv_tcp_getsockname(&p->listener, (struct sockaddr *)&ss, &len);
	p->ctcp = raft_malloc(sizeof(*p->ctcp));
	uv_tcp_init(&p->loop, p->ctcp);
	p->creq.data = p;
	ck_assert_int_eq(uv_tcp_connect(&p->creq, p->ctcp, (const struct sockaddr *)&ss, on_connect), 0);
	for (int i = 0; i < 2000 && uv_run(&p->loop, UV_RUN_NOWAIT); i++) {
		if (p->raw_client && p->server_eof && p->ctcp) {
			uv_close((uv_handle_t *)p->ctcp, on_freed);
			p->ctcp = NULL;
		}
		usleep(10000);
	}
	if (p->raw_client && p->ctcp) {
		uv_close((uv_handle_t *)p->ctcp, on_freed);   /* a raw client is ours to close */
		p->ctcp = NULL;
	}
	while (uv_run(&p->loop, UV_RUN_NOWAIT))
		;
	ck_assert_int_eq(uv_loop_close(&p->loop), 0);
}

/* ------------------------------------------------------------ tests */

START_TEST(bulk)
{
	pki();
	static struct pair p;
	memset(&p, 0, sizeof(p));
	p.client_id = id_meta;
	p.bulk = malloc(BULK);
	for (size_t i = 0; i < BULK; i++)
		p.bulk[i] = (char)(uint8_t)(i * 31 + 7);
	struct rpc_tls_raft_stats a, b;
	rpc_tls_raft_stats(&a);
	run(&p);
	rpc_tls_raft_stats(&b);
	ck_assert_int_eq(p.ready_status, 0);
	ck_assert_uint_eq(p.sent, BULK);
	ck_assert_uint_eq(p.received, BULK);
	ck_assert(p.order_ok);
	ck_assert(p.server_eof);
	ck_assert_uint_eq(b.server_handshakes - a.server_handshakes, 1);
	ck_assert_uint_eq(b.client_handshakes - a.client_handshakes, 1);
	ck_assert_uint_eq(raft_tls_relays_open(), 0);
	free(p.bulk);
	pki_free();
}
END_TEST

START_TEST(role)
{
	pki();
	static struct pair p;
	memset(&p, 0, sizeof(p));
	p.client_id = id_osd;
	struct rpc_tls_raft_stats a, b;
	rpc_tls_raft_stats(&a);
	run(&p);
	rpc_tls_raft_stats(&b);
	ck_assert_uint_eq(b.refused[RPC_TLS_RAFT_ROLE] - a.refused[RPC_TLS_RAFT_ROLE], 1);
	ck_assert(p.server_eof);    /* the mux's end closed: nothing reaches a group */
	ck_assert(p.client_gone);   /* the client learns it (alert or EOF) */
	ck_assert_uint_eq(raft_tls_relays_open(), 0);
	pki_free();
}
END_TEST

START_TEST(plaintext)
{
	pki();
	static struct pair p;
	memset(&p, 0, sizeof(p));
	p.raw_client = true;
	struct rpc_tls_raft_stats a, b;
	rpc_tls_raft_stats(&a);
	run(&p);
	rpc_tls_raft_stats(&b);
	ck_assert_uint_eq(b.refused[RPC_TLS_RAFT_PLAINTEXT] - a.refused[RPC_TLS_RAFT_PLAINTEXT], 1);
	ck_assert(p.server_eof);
	ck_assert_uint_eq(raft_tls_relays_open(), 0);
	pki_free();
}
END_TEST

int main(void)
{
	log_set_level(LOG_LEVEL_ERROR);
	Suite *s = suite_create("raft_tls");
	TCase *tc = tcase_create("raft_tls");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, bulk);
	tcase_add_test(tc, role);
	tcase_add_test(tc, plaintext);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
