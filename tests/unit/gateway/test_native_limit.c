/*
 * test_native_limit.c — the native port's limits before authentication
 * (gateway/native_limit.c over the RPC server's admission hooks,
 * common/rpc.h struct rpc_admit): a real HTTP/2 server on a dual-stack
 * loopback port, flooded over IPv4 (127.0.0.1) while a client over IPv6
 * (::1) — another address — is served; the connection cap per address;
 * calls that authenticate give their token back (native_limit_
 * authenticated), so a signed client is never throttled however many
 * calls it makes.
 *
 * The service is the RPC layer's Echo (common/proto/echo.proto): the
 * admission runs before any handler, so what the handler does is beside
 * the point; its "authentication" is a field of the request (text
 * "signed"), standing in for native_srv's signature check.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/loop.h"
#include "common/metrics.h"
#include "common/rpc.h"
#include "gateway/http_accept.h"
#include "gateway/native_limit.h"
#include "proto/echo.pb-c.h"

#define SVC_ECHO (&iolake__test__echo__descriptor)

struct srv {
	struct loop_thread lt;
	struct rpc_server *srv;
	struct native_limit lim;
	struct http_limit_cfg cfg;
	struct metrics_registry *reg;
	struct http_limit_shared *shared;   /* two loops: the table they share */
	int port, rc;
};

static void h_echo(struct rpc_req *r, void *ud)
{
	struct srv *s = ud;
	const Iolake__Test__EchoRequest *q = (const void *)rpc_req_msg(r);
	if (q->text && !strcmp(q->text, "signed"))
		native_limit_authenticated(&s->lim, r);
	Iolake__Test__EchoResponse resp = IOLAKE__TEST__ECHO_RESPONSE__INIT;
	resp.seq = q->seq;
	rpc_respond(r, &resp.base, NULL);
}

static void srv_start(void *arg)
{
	struct srv *s = arg;
	static const rpc_handler_fn handlers[] = { h_echo, NULL, NULL };
	if ((s->rc = native_limit_init(&s->lim, &s->cfg, NULL, s->reg)))
		return;
	struct rpc_server_opts o = { .admit = native_limit_admit(&s->lim) };
	s->srv = rpc_server_new(&s->lt.loop, &o);
	s->rc = rpc_server_add_service(s->srv, SVC_ECHO, handlers, s);
	if (!s->rc) {
		/* Dual-stack, v4 and v6 peers; a port of the tests' range. */
		char addr[32];
		snprintf(addr, sizeof(addr), "[::]:%d", 23000 + (int)(getpid() % 1000));
		s->rc = rpc_server_listen(s->srv, addr);
	}
	s->port = rpc_server_port(s->srv);
}

static void srv_stop(void *arg)
{
	struct srv *s = arg;
	rpc_server_close(s->srv);
}

static void srv_up(struct srv *s, uint32_t rate, uint32_t burst, uint32_t conns)
{
	memset(s, 0, sizeof(*s));
	s->cfg = (struct http_limit_cfg){ .max_conns = conns, .rate = rate, .burst = burst };
	s->reg = metrics_registry_new();
	ck_assert_ptr_nonnull(s->reg);
	ck_assert_int_eq(loop_thread_start(&s->lt, "native-limit"), 0);
	ck_assert_int_eq(loop_thread_call(&s->lt, srv_start, s), 0);
	ck_assert_int_eq(s->rc, 0);
	ck_assert_int_gt(s->port, 0);
}

static void srv_down(struct srv *s)
{
	loop_thread_call(&s->lt, srv_stop, s);
	loop_thread_stop(&s->lt);
	native_limit_free(&s->lim);
	metrics_registry_free(s->reg);
}

/* ------------------------------------------------------------ client */

struct tally {
	int done, ok, slowdown, other;
	char last_other[256];
	/* Sending: n calls, at most window in flight (0: all at once). */
	struct rpc_channel *ch;
	int n, sent, window;
	bool signed_;
};

static void send_one(struct tally *t);

static void on_result(void *ud, const struct rpc_result *res)
{
	struct tally *t = ud;
	t->done++;
	if (res->status == RPC_OK)
		t->ok++;
	else if (res->status == RPC_RESOURCE_EXHAUSTED && strstr(res->message, "SlowDown"))
		t->slowdown++;
	else {
		t->other++;
		snprintf(t->last_other, sizeof(t->last_other), "%d %s", res->status, res->message);
	}
	if (t->window && t->sent < t->n)
		send_one(t);
}

static void send_one(struct tally *t)
{
	Iolake__Test__EchoRequest q = IOLAKE__TEST__ECHO_REQUEST__INIT;
	q.text = t->signed_ ? "signed" : "anonymous";
	q.seq = (uint64_t)t->sent++;
	struct rpc_call_opts co = { .timeout_ms = 10000 };
	rpc_call(t->ch, SVC_ECHO, 0, &q.base, NULL, &co, on_result, t);
}

/* n calls on one channel to host:port, at most window in flight (0: all
 * at once); text "signed" or not. */
static struct tally calls_window(const char *host, int port, int n, int window, bool signed_)
{
	uv_loop_t loop;
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	char target[80];
	snprintf(target, sizeof(target), "%s:%d", host, port);
	struct rpc_channel_opts o = { .connect_timeout_ms = 3000 };
	struct rpc_channel *ch = rpc_channel_open(&loop, target, &o);
	ck_assert_ptr_nonnull(ch);
	struct tally t = { .ch = ch, .n = n, .window = window, .signed_ = signed_ };
	for (int i = 0; i < (window ? window : n) && t.sent < n; i++)
		send_one(&t);
	while (t.done < n)
		uv_run(&loop, UV_RUN_ONCE);
	rpc_channel_close(ch);
	while (uv_run(&loop, UV_RUN_DEFAULT) != 0)
		;
	ck_assert_int_eq(uv_loop_close(&loop), 0);
	return t;
}

static struct tally calls(const char *host, int port, int n, bool signed_)
{
	return calls_window(host, port, n, 0, signed_);
}

static double refused(struct srv *s, const char *reason)
{
	struct metrics_counter *m = metrics_counter_find(s->reg, "iolake_gw_native_refused_total",
							 METRICS_LABELS("reason", reason));
	return m ? (double)metrics_counter_get(m) : -1;
}

/* ------------------------------------------------------------ tests */

/* 400 unsigned calls from 127.0.0.1 at once against 5/s, burst 20: about
 * the burst passes, the rest are SlowDown; ::1, another address, is served
 * right after, in full. */
START_TEST(flood_one_address)
{
	struct srv s;
	srv_up(&s, 5, 20, 0);
	struct tally flood = calls("127.0.0.1", s.port, 400, false);
	ck_assert_msg(flood.other == 0, "unexpected: %s", flood.last_other);
	ck_assert_int_ge(flood.ok, 20);
	ck_assert_int_le(flood.ok, 30);   /* the burst and a few seconds' refill at most */
	ck_assert_int_eq(flood.ok + flood.slowdown, 400);
	struct tally other = calls("[::1]", s.port, 10, false);
	ck_assert_msg(other.ok == 10, "::1: ok %d slowdown %d (%s)", other.ok, other.slowdown,
		      other.last_other);
	/* The flooding address stays refused. */
	struct tally again = calls("127.0.0.1", s.port, 50, false);
	ck_assert_int_ge(again.slowdown, 40);
	ck_assert(refused(&s, "rate_per_addr") == (double)(flood.slowdown + again.slowdown));
	srv_down(&s);
}
END_TEST

/* Signed calls give their token back: 2,000 through a 20-token bucket at
 * 5/s, 16 in flight, all pass (unsigned, about 20 would), and the address
 * still has its burst for unsigned ones. (Calls in flight at once each
 * hold a token until their signature verifies: a client keeping more in
 * flight than the burst, 4,000 by default, is refused the excess.) */
START_TEST(signed_calls_not_counted)
{
	struct srv s;
	srv_up(&s, 5, 20, 0);
	struct tally t = calls_window("127.0.0.1", s.port, 2000, 16, true);
	ck_assert_msg(t.ok == 2000, "signed: ok %d slowdown %d other %d (%s)", t.ok, t.slowdown,
		      t.other, t.last_other);
	struct tally u = calls("127.0.0.1", s.port, 10, false);
	ck_assert_int_eq(u.ok, 10);
	srv_down(&s);
}
END_TEST

/* Three connections from 127.0.0.1 to port, one echo call each, made
 * one after the other (a channel is one connection; all stay open until
 * three_close): their tallies in t. */
struct three {
	uv_loop_t loop;
	struct rpc_channel *ch[3];
	struct tally t[3];
};

static void three_open(struct three *c, int port)
{
	memset(c, 0, sizeof(*c));
	ck_assert_int_eq(uv_loop_init(&c->loop), 0);
	char target[80];
	snprintf(target, sizeof(target), "127.0.0.1:%d", port);
	struct rpc_channel_opts o = { .connect_timeout_ms = 3000 };
	struct rpc_call_opts co = { .timeout_ms = 10000 };
	for (int i = 0; i < 3; i++) {
		c->ch[i] = rpc_channel_open(&c->loop, target, &o);
		ck_assert_ptr_nonnull(c->ch[i]);
		Iolake__Test__EchoRequest q = IOLAKE__TEST__ECHO_REQUEST__INIT;
		rpc_call(c->ch[i], SVC_ECHO, 0, &q.base, NULL, &co, on_result, &c->t[i]);
		while (!c->t[i].done)
			uv_run(&c->loop, UV_RUN_ONCE);
	}
}

static void three_close(struct three *c)
{
	for (int i = 0; i < 3; i++)
		rpc_channel_close(c->ch[i]);
	while (uv_run(&c->loop, UV_RUN_DEFAULT) != 0)
		;
	ck_assert_int_eq(uv_loop_close(&c->loop), 0);
}

/* The connection cap per address: with 2, a third connection from
 * 127.0.0.1 is closed (its calls UNAVAILABLE) while ::1 connects. */
START_TEST(conns_per_address)
{
	struct srv s;
	srv_up(&s, 0, 0, 2);
	struct three c;
	three_open(&c, s.port);
	struct tally *t = c.t;
	ck_assert_int_eq(t[0].ok, 1);
	ck_assert_int_eq(t[1].ok, 1);
	ck_assert_msg(t[2].ok == 0, "the third connection from one address was served");
	struct tally v6 = calls("[::1]", s.port, 3, false);
	ck_assert_int_eq(v6.ok, 3);
	ck_assert(refused(&s, "conns_per_addr") >= 1);
	three_close(&c);
	srv_down(&s);
}
END_TEST

/* ------------------------------------------------------------ two loops */

/* The native servers of two loops behind one acceptor (gateway/
 * native_loops.c's shape): each an RPC server without a listener that
 * adopts what loop 0's acceptor hands it, both over one shared table. */
struct two {
	struct srv s[2];
	struct http_limit_shared *ls;
	struct http_acceptor *acc;
	int port, rc;
	uv_sem_t closed;
};

static uint32_t t_load(void *ud)
{
	return rpc_server_conns(ud);
}

static uint32_t t_capacity(void *ud)
{
	(void)ud;
	return 1000;
}

static void t_adopt(void *ud, int fd)
{
	rpc_server_adopt(ud, fd);
}

static void two_srv_start(void *arg)
{
	struct srv *s = arg;
	static const rpc_handler_fn handlers[] = { h_echo, NULL, NULL };
	s->rc = native_limit_init(&s->lim, &s->cfg, s->shared,
				  s->reg);
	if (s->rc)
		return;
	struct rpc_server_opts o = { .admit = native_limit_admit(&s->lim) };
	s->srv = rpc_server_new(&s->lt.loop, &o);
	s->rc = rpc_server_add_service(s->srv, SVC_ECHO, handlers, s);
}

static void two_acc_start(void *arg)
{
	struct two *w = arg;
	struct http_accept_target t[2];
	memset(t, 0, sizeof(t));
	for (int i = 0; i < 2; i++) {
		t[i].queue = i ? &w->s[i].lt.queue : NULL;
		t[i].ud = w->s[i].srv;
		t[i].load = t_load;
		t[i].capacity = t_capacity;
		t[i].adopt = t_adopt;
	}
	w->rc = http_acceptor_start(&w->s[0].lt.loop, "127.0.0.1", 0, t, 2, NULL, NULL, &w->acc);
	w->port = w->rc ? 0 : http_acceptor_port(w->acc);
}

static void on_acc_closed(void *arg)
{
	uv_sem_post(&((struct two *)arg)->closed);
}

static void two_acc_stop(void *arg)
{
	struct two *w = arg;
	http_acceptor_close(w->acc, on_acc_closed, w);
}

static void two_up(struct two *w, uint32_t rate, uint32_t burst, uint32_t conns)
{
	memset(w, 0, sizeof(*w));
	struct http_limit_cfg cfg = { .max_conns = conns, .rate = rate, .burst = burst };
	w->ls = http_limit_shared_new(&cfg);
	ck_assert_ptr_nonnull(w->ls);
	uv_sem_init(&w->closed, 0);
	for (int i = 0; i < 2; i++) {
		struct srv *s = &w->s[i];
		s->reg = metrics_registry_new();
		s->shared = w->ls;
		ck_assert_int_eq(loop_thread_start(&s->lt, i ? "nl.1" : "nl.0"), 0);
		ck_assert_int_eq(loop_thread_call(&s->lt, two_srv_start, s), 0);
		ck_assert_int_eq(s->rc, 0);
	}
	ck_assert_int_eq(loop_thread_call(&w->s[0].lt, two_acc_start, w), 0);
	ck_assert_int_eq(w->rc, 0);
}

static void two_down(struct two *w)
{
	ck_assert_int_eq(loop_thread_call(&w->s[0].lt, two_acc_stop, w), 0);
	uv_sem_wait(&w->closed);
	for (int i = 0; i < 2; i++) {
		loop_thread_call(&w->s[i].lt, srv_stop, &w->s[i]);
		loop_thread_stop(&w->s[i].lt);
		native_limit_free(&w->s[i].lim);
		metrics_registry_free(w->s[i].reg);
	}
	http_limit_shared_free(w->ls);
	uv_sem_destroy(&w->closed);
}

static double refused_both(struct two *w, const char *reason)
{
	return refused(&w->s[0], reason) + refused(&w->s[1], reason);
}

/* Connections from one address spread over both loops still meet one
 * cap: with 2, the first two land one on each loop (the acceptor takes
 * the least loaded) and the third is closed, on whichever loop; with a
 * table per loop it would be served (each loop holds one). */
START_TEST(conns_cap_across_loops)
{
	struct two w;
	two_up(&w, 0, 0, 2);
	struct three c;
	three_open(&c, w.port);
	struct tally *t = c.t;
	ck_assert_int_eq(t[0].ok, 1);
	ck_assert_int_eq(t[1].ok, 1);
	ck_assert_msg(t[2].ok == 0, "a third connection from one address was served");
	/* One on each loop, the third on either (a tie). */
	uint64_t h0 = http_acceptor_handed(w.acc, 0), h1 = http_acceptor_handed(w.acc, 1);
	ck_assert_msg(h0 >= 1 && h1 >= 1 && h0 + h1 == 3, "handed %llu, %llu",
		      (unsigned long long)h0, (unsigned long long)h1);
	ck_assert(refused_both(&w, "conns_per_addr") == 1);
	three_close(&c);
	two_down(&w);
}
END_TEST

/* One token bucket per address whatever loop: signed calls on two
 * connections (one per loop) all pass and leave the bucket full; then 200
 * unsigned calls on each against 5/s, burst 20 pass about 20 in all, not
 * 20 per loop. */
START_TEST(rate_across_loops)
{
	struct two w;
	two_up(&w, 5, 20, 0);
	uv_loop_t loop;
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	char target[80];
	snprintf(target, sizeof(target), "127.0.0.1:%d", w.port);
	struct rpc_channel_opts o = { .connect_timeout_ms = 3000 };
	struct rpc_channel *ch[2];
	struct tally t[2] = { { 0 } };
	/* Connect both first (one call each, signed: not counted), so each
	 * loop holds one before the flood. */
	for (int i = 0; i < 2; i++) {
		ch[i] = rpc_channel_open(&loop, target, &o);
		ck_assert_ptr_nonnull(ch[i]);
		t[i] = (struct tally){ .ch = ch[i], .n = 1, .signed_ = true };
		send_one(&t[i]);
		while (!t[i].done)
			uv_run(&loop, UV_RUN_ONCE);
		ck_assert_int_eq(t[i].ok, 1);
	}
	ck_assert_uint_eq(http_acceptor_handed(w.acc, 0), 1);
	ck_assert_uint_eq(http_acceptor_handed(w.acc, 1), 1);
	/* Signed calls on both loops, 8 in flight on each (16 tokens held at
	 * most): every one passes, none spends the bucket. */
	for (int i = 0; i < 2; i++) {
		t[i] = (struct tally){ .ch = ch[i], .n = 500, .window = 8, .signed_ = true };
		for (int k = 0; k < 8; k++)
			send_one(&t[i]);
	}
	while (t[0].done < 500 || t[1].done < 500)
		uv_run(&loop, UV_RUN_ONCE);
	ck_assert_msg(t[0].ok + t[1].ok == 1000, "signed: %d ok", t[0].ok + t[1].ok);
	for (int i = 0; i < 2; i++) {
		t[i] = (struct tally){ .ch = ch[i], .n = 200 };
		while (t[i].sent < 200)
			send_one(&t[i]);
	}
	while (t[0].done < 200 || t[1].done < 200)
		uv_run(&loop, UV_RUN_ONCE);
	int ok = t[0].ok + t[1].ok;
	ck_assert_msg(t[0].other + t[1].other == 0, "unexpected: %s %s", t[0].last_other,
		      t[1].last_other);
	ck_assert_msg(ok >= 20 && ok <= 30, "%d unsigned calls passed a burst of 20", ok);
	ck_assert(refused_both(&w, "rate_per_addr") == (double)(400 - ok));
	for (int i = 0; i < 2; i++)
		rpc_channel_close(ch[i]);
	while (uv_run(&loop, UV_RUN_DEFAULT) != 0)
		;
	ck_assert_int_eq(uv_loop_close(&loop), 0);
	two_down(&w);
}
END_TEST

int main(void)
{
	log_set_level(LOG_LEVEL_ERROR);
	Suite *su = suite_create("native_limit");
	TCase *tc = tcase_create("native_limit");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, flood_one_address);
	tcase_add_test(tc, signed_calls_not_counted);
	tcase_add_test(tc, conns_per_address);
	tcase_add_test(tc, conns_cap_across_loops);
	tcase_add_test(tc, rate_across_loops);
	suite_add_tcase(su, tc);
	SRunner *sr = srunner_create(su);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
