/*
 * test_rpc_fault.c — the RPC fault layer (common/rpc_fault.h) over real
 * calls: the Echo service runs on a loop_thread listening on 127.0.0.1
 * and on a local name, the client on the test's loop; every call test
 * runs for both transports (0: HTTP/2, 1: local).
 *
 * Oracles: the status each call ends with, whether the server saw the
 * call (its call counter), the deadline the server saw, and the answer's
 * bytes. Times are only checked from below (a delay happened at least
 * this long), never from above.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/loop.h"
#include "common/rpc.h"
#include "common/rpc_fault.h"
#include "common/rpc_internal.h"
#include "proto/echo.pb-c.h"

#define SVC_ECHO (&iolake__test__echo__descriptor)
enum { M_ECHO, M_HANG };
enum { T_H2, T_LOCAL, TRANSPORTS };

/* ------------------------------------------------------------ server */

struct srv {
	uv_loop_t *loop;
	struct rpc_server *srv;
	char local[48];
	int port;
	int rc;
	atomic_int calls;       /* Echo calls the handler saw */
};

static void h_echo(struct rpc_req *r, void *ud)
{
	struct srv *s = ud;
	atomic_fetch_add(&s->calls, 1);
	const Iolake__Test__EchoRequest *q = (const void *)rpc_req_msg(r);
	Iolake__Test__EchoResponse resp = IOLAKE__TEST__ECHO_RESPONSE__INIT;
	uint64_t dl = rpc_req_deadline_ms(r);
	resp.text = q->text;
	resp.seq = q->seq;
	resp.request_id = (char *)rpc_req_id(r);
	resp.deadline_left_ms = dl ? (int64_t)dl - (int64_t)loop_now_ms() : -1;
	if (!q->payload_bytes) {
		rpc_respond(r, &resp.base, NULL);
		return;
	}
	struct buf *b = buf_new(q->payload_bytes);
	for (size_t i = 0; i < q->payload_bytes; i++)
		b->data[i] = (uint8_t)(i * 31 + 7);
	b->len = q->payload_bytes;
	struct buf_slice sl = { b, 0, b->len };
	rpc_respond(r, &resp.base, &sl);
	buf_unref(b);
}

static void srv_start(void *arg)
{
	struct srv *s = arg;
	static const rpc_handler_fn handlers[] = { h_echo, NULL, NULL };
	char a[64];
	s->srv = rpc_server_new(s->loop, NULL);
	s->rc = s->srv ? rpc_server_add_service(s->srv, SVC_ECHO, handlers, s) : -ENOMEM;
	if (!s->rc)
		s->rc = rpc_server_listen(s->srv, "127.0.0.1:0");
	snprintf(a, sizeof(a), "local:%s", s->local);
	if (!s->rc)
		s->rc = rpc_server_listen(s->srv, a);
	s->port = rpc_server_port(s->srv);
}

static void srv_stop(void *arg)
{
	struct srv *s = arg;
	rpc_server_close(s->srv);
}

/* ------------------------------------------------------------ client */

struct fx {
	struct loop_thread lt;
	struct srv s;
	uv_loop_t loop;
	char target[2][64];       /* [T_H2], [T_LOCAL] */
	struct rpc_channel *ch;   /* to target[transport] */
};

static int seq_name;

static void fx_setup(struct fx *f, int transport)
{
	memset(f, 0, sizeof(*f));
	ck_assert_int_eq(loop_thread_start(&f->lt, "fault-srv"), 0);
	f->s.loop = &f->lt.loop;
	snprintf(f->s.local, sizeof(f->s.local), "fault-%d-%d", (int)getpid(), seq_name++);
	ck_assert_int_eq(loop_thread_call(&f->lt, srv_start, &f->s), 0);
	ck_assert_int_eq(f->s.rc, 0);
	snprintf(f->target[T_H2], sizeof(f->target[0]), "127.0.0.1:%d", f->s.port);
	snprintf(f->target[T_LOCAL], sizeof(f->target[0]), "local:%s", f->s.local);
	ck_assert_int_eq(uv_loop_init(&f->loop), 0);
	f->ch = rpc_channel_open(&f->loop, f->target[transport], NULL);
	ck_assert_ptr_nonnull(f->ch);
}

static void fx_teardown(struct fx *f)
{
	if (f->ch)
		rpc_channel_close(f->ch);
	while (uv_run(&f->loop, UV_RUN_DEFAULT) != 0)
		;
	ck_assert_int_eq(uv_loop_close(&f->loop), 0);
	loop_thread_call(&f->lt, srv_stop, &f->s);
	loop_thread_stop(&f->lt);
	char err[128];
	ck_assert_int_eq(rpc_fault_set(NULL, err, sizeof(err)), 0);
}

struct res {
	int done;
	int status;
	char message[256];
	uint64_t seq;
	char request_id[32];
	int64_t deadline_left_ms;
	struct buf_slice payload;
	uint64_t t0, t1;
	uv_loop_t *loop;
};

static void on_res(void *ud, const struct rpc_result *r)
{
	struct res *x = ud;
	ck_assert_int_eq(x->done, 0);
	x->done = 1;
	x->t1 = loop_now_ms();
	x->status = r->status;
	snprintf(x->message, sizeof(x->message), "%s", r->message);
	if (r->resp) {
		const Iolake__Test__EchoResponse *e = (const void *)r->resp;
		x->seq = e->seq;
		snprintf(x->request_id, sizeof(x->request_id), "%s", e->request_id);
		x->deadline_left_ms = e->deadline_left_ms;
	}
	if (r->payload.buf) {
		x->payload = r->payload;
		buf_ref(r->payload.buf);
	}
	uv_stop(x->loop);
}

static void start(struct fx *f, struct rpc_channel *ch, uint64_t seq, uint64_t payload,
		  uint32_t timeout_ms, struct res *x)
{
	Iolake__Test__EchoRequest q = IOLAKE__TEST__ECHO_REQUEST__INIT;
	q.text = "fault";
	q.seq = seq;
	q.payload_bytes = payload;
	memset(x, 0, sizeof(*x));
	x->loop = &f->loop;
	x->t0 = loop_now_ms();
	struct rpc_call_opts o = { .timeout_ms = timeout_ms, .request_id = "rid-fault" };
	rpc_call(ch, SVC_ECHO, M_ECHO, &q.base, NULL, &o, on_res, x);
	ck_assert_int_eq(x->done, 0); /* never from inside rpc_call */
}

static void wait_res(struct fx *f, struct res *x)
{
	while (!x->done)
		uv_run(&f->loop, UV_RUN_ONCE);
}

static void call(struct fx *f, struct rpc_channel *ch, uint64_t seq, uint64_t payload,
		 uint32_t timeout_ms, struct res *x)
{
	start(f, ch, seq, payload, timeout_ms, x);
	wait_res(f, x);
}

static void res_clear(struct res *x)
{
	buf_unref(x->payload.buf);
	x->payload.buf = NULL;
}

static void set(const char *spec)
{
	char err[256] = "";
	int rc = rpc_fault_set(spec, err, sizeof(err));
	ck_assert_msg(rc == 0, "rpc_fault_set(%s): %d %s", spec, rc, err);
}

/* Set "ACTION,peer=<the fixture's target>REST". */
static void set_peer(struct fx *f, int transport, const char *action, const char *rest)
{
	char spec[256];
	snprintf(spec, sizeof(spec), "%s,peer=%s%s", action, f->target[transport], rest);
	set(spec);
}

/* Reopen f->ch so that it is wrapped by the rules now set. */
static void reopen(struct fx *f, int transport)
{
	rpc_channel_close(f->ch);
	f->ch = rpc_channel_open(&f->loop, f->target[transport], NULL);
	ck_assert_ptr_nonnull(f->ch);
}

/* ------------------------------------------------------------ tests */

/* Off: channels are not wrapped, calls behave, nothing is counted. */
START_TEST(test_off)
{
	struct fx f;
	set(NULL);
	fx_setup(&f, _i);
	ck_assert(!rpc_fault_enabled());
	ck_assert_ptr_null(f.ch->fault_inner);
	struct rpc_fault_stats a, b;
	rpc_fault_stats(&a);
	struct res x;
	for (int i = 0; i < 20; i++) {
		call(&f, f.ch, (uint64_t)i, 1000, 5000, &x);
		ck_assert_msg(x.status == RPC_OK, "%s", x.message);
		ck_assert_uint_eq(x.seq, (uint64_t)i);
		ck_assert_uint_eq(x.payload.len, 1000);
		res_clear(&x);
	}
	ck_assert_int_eq(atomic_load(&f.s.calls), 20);
	rpc_fault_stats(&b);
	ck_assert_mem_eq(&a, &b, sizeof(a));
	/* Rules that match nothing: wrapped, still untouched. */
	set("partition,peer=127.0.0.1:1;fail=INTERNAL,method=Nope");
	reopen(&f, _i);
	ck_assert_ptr_nonnull(f.ch->fault_inner);
	call(&f, f.ch, 7, 0, 5000, &x);
	ck_assert_int_eq(x.status, RPC_OK);
	ck_assert_str_eq(x.request_id, "rid-fault");
	rpc_fault_stats(&b);
	ck_assert_mem_eq(&a, &b, sizeof(a));
	fx_teardown(&f);
	ck_assert(!rpc_fault_enabled());
}
END_TEST

/* delay=: held before sending; the server sees what is left of the
 * deadline; a deadline shorter than the delay expires unsent. */
START_TEST(test_delay)
{
	struct fx f;
	fx_setup(&f, _i);
	set_peer(&f, _i, "delay=300", ",method=Echo");
	reopen(&f, _i);
	struct res x;
	call(&f, f.ch, 1, 0, 5000, &x);
	ck_assert_msg(x.status == RPC_OK, "%s", x.message);
	ck_assert_uint_ge(x.t1 - x.t0, 300);
	ck_assert_int_le(x.deadline_left_ms, 5000 - 300 + 5);
	ck_assert_str_eq(x.request_id, "rid-fault");
	ck_assert_int_eq(atomic_load(&f.s.calls), 1);
	call(&f, f.ch, 2, 0, 100, &x);
	ck_assert_int_eq(x.status, RPC_DEADLINE_EXCEEDED);
	ck_assert_uint_ge(x.t1 - x.t0, 100);
	ck_assert_int_eq(atomic_load(&f.s.calls), 1);  /* never sent */
	struct rpc_fault_stats st;
	rpc_fault_stats(&st);
	ck_assert_uint_ge(st.delayed, 2);
	fx_teardown(&f);
}
END_TEST

/* delay-answer=: sent at once (full deadline at the server), the answer
 * and its payload held; a deadline inside the delay wins. */
START_TEST(test_delay_answer)
{
	struct fx f;
	fx_setup(&f, _i);
	set_peer(&f, _i, "delay-answer=300", "");
	reopen(&f, _i);
	struct res x;
	call(&f, f.ch, 3, 200000, 5000, &x);
	ck_assert_msg(x.status == RPC_OK, "%s", x.message);
	ck_assert_uint_ge(x.t1 - x.t0, 300);
	ck_assert_int_gt(x.deadline_left_ms, 5000 - 300);
	ck_assert_uint_eq(x.seq, 3);
	ck_assert_uint_eq(x.payload.len, 200000);
	const uint8_t *p = buf_slice_data(&x.payload);
	for (size_t i = 0; i < 200000; i++)
		ck_assert_uint_eq(p[i], (uint8_t)(i * 31 + 7));
	res_clear(&x);
	call(&f, f.ch, 4, 0, 100, &x);
	ck_assert_int_eq(x.status, RPC_DEADLINE_EXCEEDED);
	ck_assert_uint_ge(x.t1 - x.t0, 100);
	ck_assert_int_eq(atomic_load(&f.s.calls), 2);  /* both reached the server */
	fx_teardown(&f);
}
END_TEST

/* drop: never sent; the deadline ends it, or the channel's close. */
START_TEST(test_drop)
{
	struct fx f;
	fx_setup(&f, _i);
	set("drop,method=iolake.test.Echo/Echo");
	reopen(&f, _i);
	struct res x, y;
	call(&f, f.ch, 5, 0, 200, &x);
	ck_assert_int_eq(x.status, RPC_DEADLINE_EXCEEDED);
	ck_assert_uint_ge(x.t1 - x.t0, 200);
	start(&f, f.ch, 6, 0, 0, &y);  /* no deadline: held until close */
	for (int i = 0; i < 5; i++)
		uv_run(&f.loop, UV_RUN_NOWAIT);
	ck_assert_int_eq(y.done, 0);
	rpc_channel_close(f.ch);
	f.ch = NULL;
	ck_assert_int_eq(y.done, 1);
	ck_assert_int_eq(y.status, RPC_CANCELLED);
	ck_assert_int_eq(atomic_load(&f.s.calls), 0);
	fx_teardown(&f);
}
END_TEST

/* fail= and partition: at once (never inside rpc_call), never sent;
 * count= limits a rule; the first matching rule decides. */
START_TEST(test_fail_partition)
{
	struct fx f;
	fx_setup(&f, _i);
	set("fail=INTERNAL,method=Echo,count=2;fail=14");
	reopen(&f, _i);
	struct res x;
	for (int i = 0; i < 2; i++) {
		call(&f, f.ch, 7, 0, 5000, &x);
		ck_assert_int_eq(x.status, RPC_INTERNAL);
		ck_assert_msg(strstr(x.message, "fault injected"), "%s", x.message);
	}
	call(&f, f.ch, 8, 0, 5000, &x);
	ck_assert_int_eq(x.status, RPC_UNAVAILABLE);  /* the second rule */
	ck_assert_int_eq(atomic_load(&f.s.calls), 0);

	/* A partitioned peer; the same server under its other name is not. */
	set_peer(&f, _i, "partition", "");
	reopen(&f, _i);
	struct rpc_channel *other = rpc_channel_open(&f.loop, f.target[!_i], NULL);
	ck_assert_ptr_nonnull(other);
	for (int i = 0; i < 3; i++) {
		call(&f, f.ch, 9, 0, 5000, &x);
		ck_assert_int_eq(x.status, RPC_UNAVAILABLE);
		ck_assert_msg(strstr(x.message, "partition"), "%s", x.message);
	}
	call(&f, other, 10, 0, 5000, &x);
	ck_assert_msg(x.status == RPC_OK, "%s", x.message);
	ck_assert_int_eq(atomic_load(&f.s.calls), 1);
	/* Healed: the rules go, the wrapped channel calls through again. */
	set("delay=0,peer=nobody:1");
	call(&f, f.ch, 11, 0, 5000, &x);
	ck_assert_msg(x.status == RPC_OK, "%s", x.message);
	ck_assert_int_eq(atomic_load(&f.s.calls), 2);
	struct rpc_fault_stats st;
	rpc_fault_stats(&st);
	ck_assert_uint_ge(st.failed, 3);
	ck_assert_uint_ge(st.partitioned, 3);
	rpc_channel_close(other);
	fx_teardown(&f);
}
END_TEST

/* spin=: CPU spent on the caller's loop, then sent. */
START_TEST(test_spin)
{
	struct fx f;
	fx_setup(&f, _i);
	set("spin=50000,method=Echo,count=1");
	reopen(&f, _i);
	struct rpc_fault_stats st0, st;
	rpc_fault_stats(&st0);
	struct res x;
	call(&f, f.ch, 12, 0, 5000, &x);
	ck_assert_msg(x.status == RPC_OK, "%s", x.message);
	ck_assert_uint_ge(x.t1 - x.t0, 50);
	ck_assert_int_eq(atomic_load(&f.s.calls), 1);
	call(&f, f.ch, 13, 0, 5000, &x);  /* count=1: the second is not spun */
	ck_assert_int_eq(x.status, RPC_OK);
	rpc_fault_stats(&st);
	ck_assert_uint_eq(st.spun - st0.spun, 1);
	fx_teardown(&f);
}
END_TEST

/* Closing a channel with calls held in every way ends each once. */
START_TEST(test_close_held)
{
	struct fx f;
	fx_setup(&f, _i);
	set("delay=10000,method=Echo,count=1;delay-answer=10000,count=1;drop");
	reopen(&f, _i);
	struct res x[3];
	for (int i = 0; i < 3; i++)
		start(&f, f.ch, (uint64_t)i, 0, 0, &x[i]);
	/* Until the delayed answer reached the server and came back. */
	while (atomic_load(&f.s.calls) < 1)
		uv_run(&f.loop, UV_RUN_NOWAIT);
	for (int i = 0; i < 50; i++)
		uv_run(&f.loop, UV_RUN_NOWAIT);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(x[i].done, 0);
	rpc_channel_close(f.ch);
	f.ch = NULL;
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(x[i].done, 1);
		ck_assert_int_eq(x[i].status, RPC_CANCELLED);
	}
	fx_teardown(&f);
}
END_TEST

START_TEST(test_spec)
{
	static const char *const bad[] = {
		";", "bogus", "delay", "delay=", "delay=abc", "delay=3600001", "fail", "fail=OK",
		"fail=99", "drop=3", "partition,peer=", "delay=1,drop", "count=3", "drop,count=x",
		"drop,peer=a:1,peer=b:2", "drop,colour=red", "spin=1000001",
	};
	char err[256];
	set("drop,peer=keep:1");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		ck_assert_msg(rpc_fault_set(bad[i], err, sizeof(err)) == -EINVAL, "accepted '%s'",
			      bad[i]);
		ck_assert_msg(err[0], "no reason for '%s'", bad[i]);
		ck_assert(rpc_fault_enabled()); /* the old rules stay */
	}
	set("delay=5,peer=[::1]:80,method=iolake.osd.Osd/GetShard,count=1;fail=unavailable;;"
	    "partition;delay-answer=0;spin=10");
	ck_assert(rpc_fault_enabled());
	set("");
	ck_assert(!rpc_fault_enabled());
	ck_assert_int_eq(rpc_fault_flag_apply("test", NULL), 0);
	ck_assert(!rpc_fault_enabled());
	ck_assert_int_eq(rpc_fault_flag_apply("test", "nonsense"), 2);
	ck_assert(!rpc_fault_enabled());
}
END_TEST

static Suite *fault_suite(void)
{
	Suite *s = suite_create("rpc_fault");
	TCase *p = tcase_create("spec");
	tcase_add_test(p, test_spec);
	suite_add_tcase(s, p);
	TCase *c = tcase_create("calls"); /* h2, then local */
	tcase_set_timeout(c, 60);
	tcase_add_loop_test(c, test_off, 0, TRANSPORTS);
	tcase_add_loop_test(c, test_delay, 0, TRANSPORTS);
	tcase_add_loop_test(c, test_delay_answer, 0, TRANSPORTS);
	tcase_add_loop_test(c, test_drop, 0, TRANSPORTS);
	tcase_add_loop_test(c, test_fail_partition, 0, TRANSPORTS);
	tcase_add_loop_test(c, test_spin, 0, TRANSPORTS);
	tcase_add_loop_test(c, test_close_held, 0, TRANSPORTS);
	suite_add_tcase(s, c);
	return s;
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	SRunner *sr = srunner_create(fault_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
