/*
 * test_rpc.c — the RPC layer over both transports, with real loops and
 * threads: the Echo server (common/proto/echo.proto) runs on a loop_thread,
 * the client on the test's own loop, so every call crosses threads.
 *
 * Each call test is a loop test over TRANSPORTS (0: HTTP/2 on 127.0.0.1,
 * 1: local:NAME). Randomized tests print their seed; RPC_TEST_SEED=<n>
 * replays one. The "wire" case tests the gRPC codec alone.
 *
 * make-test: alone (tests/run-tests.py): payload_64m and the deadline cases run against the RPC timeouts.
 */
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/rpc.h"
#include "common/rpc_internal.h"
#include "proto/echo.pb-c.h"
#include "tests/lib/scratch.h"

#define SVC_ECHO (&iolake__test__echo__descriptor)
enum { M_ECHO, M_HANG, M_UNSET };
enum { T_H2, T_LOCAL, TRANSPORTS };

static const char *const tname[] = { "h2", "local" };

/* ------------------------------------------------------------ helpers */

static uint32_t test_seed(const char *test)
{
	const char *env = getenv("RPC_TEST_SEED");
	uint32_t seed = env ? (uint32_t)strtoul(env, NULL, 0) : (uint32_t)loop_now_ns() | 1;
	printf("%s: seed=%u (replay: RPC_TEST_SEED=%u)\n", test, seed, seed);
	fflush(stdout);
	return seed;
}

static uint32_t xorshift(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static struct buf *random_buf(size_t n, uint32_t seed)
{
	struct buf *b = buf_new(n);
	ck_assert_ptr_nonnull(b);
	uint32_t s = seed | 1;
	size_t i = 0;
	for (; i + 4 <= n; i += 4) {
		uint32_t v = xorshift(&s);
		memcpy(b->data + i, &v, 4);
	}
	for (; i < n; i++)
		b->data[i] = (uint8_t)xorshift(&s);
	b->len = n;
	return b;
}

/* ------------------------------------------------------------ server */

#define MAX_HANG 64

struct srv_state {
	uv_loop_t *loop;
	struct rpc_server *srv;
	const char *tcp_addr;     /* NULL: no TCP */
	char local_name[32];      /* "": no local */
	int port;
	int rc;
	bool running;
	uv_timer_t hang_timer;
	struct rpc_req *hang[MAX_HANG];
	int nhang;
};

struct delayed {
	uv_timer_t t;
	struct rpc_req *r;
};

/* What the last answered Echo saw (server loop; read by the client after
 * its callback, which the answer's queue orders after these stores). */
static _Atomic(const void *) seen_msg;
static atomic_bool seen_in_memory;

/* The last answer given (text "give...": rpc_respond_give), and how many. */
static _Atomic(const void *) given_msg;
static atomic_int given_count;

/* Echo's answer built on the heap and given to the transport. */
static void answer_given(struct rpc_req *r, const Iolake__Test__EchoRequest *q)
{
	Iolake__Test__EchoResponse *resp = malloc(sizeof(*resp));
	ck_assert_ptr_nonnull(resp);
	iolake__test__echo_response__init(resp);
	resp->text = strdup(q->text);
	resp->request_id = strdup(rpc_req_id(r));
	resp->seq = q->seq;
	resp->deadline_left_ms = -1;
	atomic_store(&given_msg, (const void *)resp);
	atomic_fetch_add(&given_count, 1);
	rpc_respond_give(r, &resp->base, NULL);
}

static void answer_echo(struct rpc_req *r)
{
	const Iolake__Test__EchoRequest *q = (const void *)rpc_req_msg(r);
	atomic_store(&seen_msg, (const void *)q);
	atomic_store(&seen_in_memory, rpc_req_payload_in_memory(r));
	if (q->fail_status) {
		rpc_fail(r, q->fail_status, "%s", q->fail_message);
		return;
	}
	if (q->text && strncmp(q->text, "give", 4) == 0) {
		answer_given(r, q);
		return;
	}
	Iolake__Test__EchoResponse resp = IOLAKE__TEST__ECHO_RESPONSE__INIT;
	const struct buf_slice *pl = rpc_req_payload(r);
	uint64_t dl = rpc_req_deadline_ms(r);
	resp.text = q->text;
	resp.seq = q->seq;
	resp.payload_len = pl->buf ? pl->len : 0;
	resp.request_id = (char *)rpc_req_id(r);
	resp.deadline_left_ms = dl ? (int64_t)dl - (int64_t)loop_now_ms() : -1;
	if (q->text && strcmp(q->text, "conn") == 0) {
		/* test_conn_data: this connection's calls so far (0: it has no
		 * data slot: in process). */
		void **slot = rpc_req_conn_data(r);
		resp.seq = 0;
		if (slot && (*slot || (*slot = calloc(1, sizeof(uint64_t)))))
			resp.seq = ++*(uint64_t *)*slot;
	}
	if (q->echo_payload) {
		rpc_respond(r, &resp.base, pl);
	} else if (q->payload_bytes) {
		struct buf *b = buf_new(q->payload_bytes);
		for (size_t i = 0; i < q->payload_bytes; i++)
			b->data[i] = (uint8_t)(i * 31 + 7);
		b->len = q->payload_bytes;
		struct buf_slice s = { b, 0, b->len };
		rpc_respond(r, &resp.base, &s);
		buf_unref(b);
	} else {
		rpc_respond(r, &resp.base, NULL);
	}
}

static void free_handle(uv_handle_t *h)
{
	free(h);
}

static void on_delay(uv_timer_t *t)
{
	struct delayed *d = (struct delayed *)t;
	answer_echo(d->r);
	uv_close((uv_handle_t *)t, free_handle);
}

static void h_echo(struct rpc_req *r, void *ud)
{
	struct srv_state *st = ud;
	const Iolake__Test__EchoRequest *q = (const void *)rpc_req_msg(r);
	if (!q->delay_ms) {
		answer_echo(r);
		return;
	}
	struct delayed *d = malloc(sizeof(*d));
	d->r = r;
	uv_timer_init(st->loop, &d->t);
	uv_timer_start(&d->t, on_delay, q->delay_ms, 0);
}

static void h_hang(struct rpc_req *r, void *ud)
{
	struct srv_state *st = ud;
	if (st->nhang == MAX_HANG) {
		rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "too many hanging calls");
		return;
	}
	st->hang[st->nhang++] = r;
}

/* Hang answers only once its caller is gone. */
static void on_hang_poll(uv_timer_t *t)
{
	struct srv_state *st = t->data;
	for (int i = 0; i < st->nhang;) {
		struct rpc_req *r = st->hang[i];
		if (rpc_req_cancelled(r)) {
			/* As a real server would: a passed deadline is reported
			 * as such (the caller may see it before its own timer). */
			uint64_t dl = rpc_req_deadline_ms(r);
			if (dl && loop_now_ms() >= dl)
				rpc_fail(r, RPC_DEADLINE_EXCEEDED, "deadline passed");
			else
				rpc_fail(r, RPC_CANCELLED, "caller gone");
			st->hang[i] = st->hang[--st->nhang];
		} else {
			i++;
		}
	}
}

/* Options of the servers fx_setup starts (NULL: defaults). */
static const struct rpc_server_opts *srv_opts;

/* Echo's direct handler (test_direct; srv_direct set): answers on the
 * caller's thread unless the text is "decline", noting the thread. */
static bool srv_direct;
static atomic_int direct_answers;
static _Atomic pthread_t direct_thread;

static bool d_echo(struct rpc_req *r, void *ud)
{
	(void)ud;
	const Iolake__Test__EchoRequest *q = (const void *)rpc_req_msg(r);
	if (q->delay_ms || (q->text && strcmp(q->text, "decline") == 0))
		return false;
	atomic_store(&direct_thread, pthread_self());
	atomic_fetch_add(&direct_answers, 1);
	answer_echo(r);
	return true;
}

static void srv_start(void *arg)
{
	struct srv_state *st = arg;
	static const rpc_handler_fn handlers[] = { h_echo, h_hang, NULL };
	st->srv = rpc_server_new(st->loop, srv_opts);
	st->rc = st->srv ? rpc_server_add_service(st->srv, SVC_ECHO, handlers, st) : -ENOMEM;
	if (!st->rc && srv_direct)
		st->rc = rpc_server_set_direct(st->srv, SVC_ECHO, M_ECHO, d_echo);
	if (!st->rc && st->tcp_addr)
		st->rc = rpc_server_listen(st->srv, st->tcp_addr);
	if (!st->rc && st->local_name[0]) {
		char a[64];
		snprintf(a, sizeof(a), "local:%s", st->local_name);
		st->rc = rpc_server_listen(st->srv, a);
	}
	st->port = rpc_server_port(st->srv);
	uv_timer_init(st->loop, &st->hang_timer);
	st->hang_timer.data = st;
	uv_timer_start(&st->hang_timer, on_hang_poll, 10, 10);
	st->running = true;
}

/* Close first (callers learn UNAVAILABLE), then release hanging calls. */
static void srv_stop(void *arg)
{
	struct srv_state *st = arg;
	if (!st->running)
		return;
	st->running = false;
	rpc_server_close(st->srv);
	while (st->nhang > 0)
		rpc_fail(st->hang[--st->nhang], RPC_CANCELLED, "server stopping");
	uv_close((uv_handle_t *)&st->hang_timer, NULL);
}

/* ------------------------------------------------------------ client */

struct fx {
	struct loop_thread lt;
	struct srv_state st;
	uv_loop_t loop;
	struct rpc_channel *ch;
	char target[64];
};

static int name_seq;

static void fx_server(struct fx *f, struct srv_state *st)
{
	memset(st, 0, sizeof(*st));
	st->loop = &f->lt.loop;
	st->tcp_addr = "127.0.0.1:0";
	snprintf(st->local_name, sizeof(st->local_name), "echo-%d-%d", (int)getpid(), name_seq++);
	ck_assert_int_eq(loop_thread_call(&f->lt, srv_start, st), 0);
	ck_assert_int_eq(st->rc, 0);
	ck_assert_int_gt(st->port, 0);
}

static void fx_setup(struct fx *f, int transport, const struct rpc_channel_opts *o)
{
	memset(f, 0, sizeof(*f));
	ck_assert_int_eq(loop_thread_start(&f->lt, "rpc-server"), 0);
	fx_server(f, &f->st);
	if (transport == T_H2)
		snprintf(f->target, sizeof(f->target), "127.0.0.1:%d", f->st.port);
	else
		snprintf(f->target, sizeof(f->target), "local:%s", f->st.local_name);
	ck_assert_int_eq(uv_loop_init(&f->loop), 0);
	f->ch = rpc_channel_open(&f->loop, f->target, o);
	ck_assert_ptr_nonnull(f->ch);
	ck_assert_str_eq(rpc_channel_target(f->ch), f->target);
}

static void fx_teardown(struct fx *f)
{
	if (f->ch)
		rpc_channel_close(f->ch);
	while (uv_run(&f->loop, UV_RUN_DEFAULT) != 0)
		; /* until every handle is closed */
	ck_assert_int_eq(uv_loop_close(&f->loop), 0);
	loop_thread_call(&f->lt, srv_stop, &f->st);
	loop_thread_stop(&f->lt);
}

static uv_loop_t *client_loop;

struct res {
	int done;
	int status;
	char message[600];
	uint64_t seq;
	char text[64];
	char request_id[64];
	uint64_t payload_len;
	int64_t deadline_left_ms;
	struct buf_slice payload;  /* a reference, or .buf NULL */
	bool in_memory;            /* rpc_result.in_memory */
	uint64_t t_start, t_done;
	bool take;                 /* rpc_answer_take the answer (test_give) */
	bool was_given;            /* resp was the server's given message itself */
	bool took;                 /* rpc_answer_take gave it (then freed) */
	bool took_twice;           /* ... and gave it again: a bug */
	const uint8_t *expect;     /* concurrent test: expected payload */
	size_t expect_len;
	int *counter;
};

static void on_res(void *ud, const struct rpc_result *r)
{
	struct res *x = ud;
	ck_assert_int_eq(x->done, 0);
	x->done = 1;
	x->t_done = loop_now_ms();
	x->status = r->status;
	ck_assert_ptr_nonnull(r->message);
	snprintf(x->message, sizeof(x->message), "%s", r->message);
	if (r->resp) {
		const Iolake__Test__EchoResponse *e = (const void *)r->resp;
		x->seq = e->seq;
		snprintf(x->text, sizeof(x->text), "%s", e->text);
		snprintf(x->request_id, sizeof(x->request_id), "%s", e->request_id);
		x->payload_len = e->payload_len;
		x->deadline_left_ms = e->deadline_left_ms;
		x->was_given = r->resp == atomic_load(&given_msg);
		if (x->take) {
			ProtobufCMessage *m = rpc_answer_take(r->resp);
			x->took = m != NULL;
			x->took_twice = rpc_answer_take(r->resp) != NULL;
			if (m)   /* the caller's now: ASan sees a double free or leak */
				protobuf_c_message_free_unpacked(m, NULL);
		}
	}
	if (r->payload.buf) {
		x->payload = r->payload;
		buf_ref(r->payload.buf);
	}
	x->in_memory = r->in_memory;
	if (x->counter)
		(*x->counter)++;
	/* A callback may run in the timer phase, before the poll of the same
	 * UV_RUN_ONCE turn: stop the loop so that poll does not block. */
	uv_stop(client_loop);
}

static void res_clear(struct res *x)
{
	buf_unref(x->payload.buf);
	memset(x, 0, sizeof(*x));
}

static void start_call(struct fx *f, const ProtobufCServiceDescriptor *svc, unsigned m,
		       const Iolake__Test__EchoRequest *q, const struct buf_slice *pl,
		       uint32_t timeout_ms, struct res *x)
{
	struct rpc_call_opts o = { .timeout_ms = timeout_ms, .request_id = "rid-7" };
	x->t_start = loop_now_ms();
	rpc_call(f->ch, svc, m, &q->base, pl, &o, on_res, x);
	ck_assert_int_eq(x->done, 0); /* never from inside rpc_call */
}

static void run_until(struct fx *f, const int *flag)
{
	client_loop = &f->loop;
	while (!*flag)
		uv_run(&f->loop, UV_RUN_ONCE);
}

static void wait_call(struct fx *f, struct res *x)
{
	run_until(f, &x->done);
}

static void on_flag_timer(uv_timer_t *t)
{
	*(int *)t->data = 1;
	uv_stop(t->loop);
	uv_close((uv_handle_t *)t, NULL);
}

static void run_for(struct fx *f, uint32_t ms)
{
	uv_timer_t t;
	int flag = 0;
	uv_timer_init(&f->loop, &t);
	t.data = &flag;
	uv_timer_start(&t, on_flag_timer, ms, 0);
	run_until(f, &flag);
	uv_run(&f->loop, UV_RUN_NOWAIT); /* let the close finish */
}

static void do_call(struct fx *f, unsigned m, const Iolake__Test__EchoRequest *q,
		    const struct buf_slice *pl, uint32_t timeout_ms, struct res *x)
{
	start_call(f, SVC_ECHO, m, q, pl, timeout_ms, x);
	wait_call(f, x);
}

/* ------------------------------------------------------------ tests */

START_TEST(test_echo)
{
	struct fx f;
	fx_setup(&f, _i, NULL);
	Iolake__Test__EchoRequest q = IOLAKE__TEST__ECHO_REQUEST__INIT;
	q.text = "hello";
	q.seq = 42;
	struct res x = { 0 };
	do_call(&f, M_ECHO, &q, NULL, 5000, &x);
	ck_assert_msg(x.status == RPC_OK, "%s: %s", tname[_i], x.message);
	ck_assert_str_eq(x.text, "hello");
	ck_assert_uint_eq(x.seq, 42);
	ck_assert_str_eq(x.request_id, "rid-7");
	ck_assert_ptr_null(x.payload.buf);
	/* The server saw the deadline: within (0, 5000]. */
	ck_assert_int_gt(x.deadline_left_ms, 0);
	ck_assert_int_le(x.deadline_left_ms, 5000);
	res_clear(&x);
	/* No deadline: the server sees none. */
	do_call(&f, M_ECHO, &q, NULL, 0, &x);
	ck_assert_int_eq(x.status, RPC_OK);
	ck_assert_int_eq(x.deadline_left_ms, -1);
	res_clear(&x);
	fx_teardown(&f);
}
END_TEST

static atomic_int conn_data_freed;

static void count_free(void *p)
{
	atomic_fetch_add(&conn_data_freed, 1);
	free(p);
}

/* rpc_req_conn_data: one slot per HTTP/2 connection, the same for all its
 * calls, another for another connection, freed with the server's
 * conn_data_free when the connection closes; none in process. */
START_TEST(test_conn_data)
{
	struct rpc_server_opts so = { .conn_data_free = count_free };
	srv_opts = &so;
	atomic_store(&conn_data_freed, 0);
	struct fx f;
	fx_setup(&f, _i, NULL);
	Iolake__Test__EchoRequest q = IOLAKE__TEST__ECHO_REQUEST__INIT;
	q.text = "conn";
	uint64_t want = _i == T_H2 ? 1 : 0;
	for (int i = 0; i < 3; i++) {
		struct res x = { 0 };
		do_call(&f, M_ECHO, &q, NULL, 5000, &x);
		ck_assert_int_eq(x.status, RPC_OK);
		ck_assert_uint_eq(x.seq, want);
		want += _i == T_H2;
		res_clear(&x);
	}
	struct rpc_channel *main_ch = f.ch;
	f.ch = rpc_channel_open(&f.loop, f.target, NULL);
	struct res x = { 0 };
	do_call(&f, M_ECHO, &q, NULL, 5000, &x);
	ck_assert_int_eq(x.status, RPC_OK);
	ck_assert_uint_eq(x.seq, _i == T_H2 ? 1 : 0);   /* a connection of its own */
	res_clear(&x);
	rpc_channel_close(f.ch);
	f.ch = main_ch;
	for (int i = 0; i < 500 && atomic_load(&conn_data_freed) < (_i == T_H2); i++) {
		uv_run(&f.loop, UV_RUN_NOWAIT);
		usleep(10000);
	}
	ck_assert_int_eq(atomic_load(&conn_data_freed), _i == T_H2);
	fx_teardown(&f);
	ck_assert_int_eq(atomic_load(&conn_data_freed), _i == T_H2 ? 2 : 0);
	srv_opts = NULL;
}
END_TEST

START_TEST(test_unimplemented)
{
	struct fx f;
	fx_setup(&f, _i, NULL);
	Iolake__Test__EchoRequest q = IOLAKE__TEST__ECHO_REQUEST__INIT;
	struct res x = { 0 };
	start_call(&f, &iolake__test__nobody__descriptor, 0, &q, NULL, 5000, &x);
	wait_call(&f, &x);
	ck_assert_msg(x.status == RPC_UNIMPLEMENTED, "%s", x.message);
	res_clear(&x);
	do_call(&f, M_UNSET, &q, NULL, 5000, &x);
	ck_assert_msg(x.status == RPC_UNIMPLEMENTED, "%s", x.message);
	res_clear(&x);
	/* A method index out of range fails on the client, still via cb. */
	start_call(&f, SVC_ECHO, 17, &q, NULL, 5000, &x);
	wait_call(&f, &x);
	ck_assert_int_eq(x.status, RPC_INVALID_ARGUMENT);
	res_clear(&x);
	fx_teardown(&f);
}
END_TEST

START_TEST(test_fail_message)
{
	static const char *const msgs[] = {
		"plain",
		"100% sure: \"quotes\", tab\there, newline\r\nand unicode: \xc3\xbc\xc3\xa9 \xe2\x9c\x93",
		"%41 is not A; %zz %",
		"",
	};
	struct fx f;
	fx_setup(&f, _i, NULL);
	for (unsigned i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++) {
		Iolake__Test__EchoRequest q = IOLAKE__TEST__ECHO_REQUEST__INIT;
		q.fail_status = RPC_NOT_FOUND + (int)i;
		q.fail_message = (char *)msgs[i];
		struct res x = { 0 };
		do_call(&f, M_ECHO, &q, NULL, 5000, &x);
		ck_assert_int_eq(x.status, RPC_NOT_FOUND + (int)i);
		ck_assert_str_eq(x.message, msgs[i]);
		res_clear(&x);
	}
	fx_teardown(&f);
}
END_TEST

/* The call log (rpc_server_opts.log_calls): with slow_call_ms 0 every
 * call is a "slow call" line naming the caller's request id (what meta's
 * --slow-op-ms relies on); a failure the server caused is logged at warn,
 * others only at debug. */
START_TEST(test_call_log)
{
	char path[128];
	test_scratch_path(path, sizeof(path), "test_rpc_log.XXXXXX");
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	unlink(path);
	int old = log_set_fd(fd);
	struct rpc_server_opts so = { .log_calls = true, .slow_call_ms = 0 };
	srv_opts = &so;
	struct fx f;
	fx_setup(&f, _i, NULL);
	Iolake__Test__EchoRequest q = IOLAKE__TEST__ECHO_REQUEST__INIT;
	q.text = "x";
	struct res x = { 0 };
	do_call(&f, M_ECHO, &q, NULL, 5000, &x);   /* request_id "rid-7" */
	ck_assert_int_eq(x.status, RPC_OK);
	res_clear(&x);
	fx_teardown(&f);
	so.slow_call_ms = 60000;
	fx_setup(&f, _i, NULL);
	q.fail_status = RPC_DATA_LOSS;
	q.fail_message = "disk ate it";
	do_call(&f, M_ECHO, &q, NULL, 5000, &x);
	res_clear(&x);
	q.fail_status = RPC_NOT_FOUND;          /* routine: debug, not written */
	q.fail_message = "no such thing";
	do_call(&f, M_ECHO, &q, NULL, 5000, &x);
	res_clear(&x);
	fx_teardown(&f);
	srv_opts = NULL;
	log_set_fd(old);
	char buf[4096] = "";
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	ck_assert_int_gt(n, 0);
	buf[n] = 0;
	const char *slow = strstr(buf, "level=warn req=rid-7 msg=\"slow call\" method=Echo ms=");
	ck_assert_msg(slow && strstr(slow, " status=OK"), "%s", buf);
	ck_assert_msg(strstr(buf, "req=rid-7 msg=\"call failed\" method=Echo") &&
		      strstr(buf, "status=DATA_LOSS msg=\"disk ate it\""), "%s", buf);
	ck_assert_msg(!strstr(buf, "no such thing"), "%s", buf);
}
END_TEST

#define NCONC 1000

START_TEST(test_concurrent)
{
	uint32_t seed = test_seed("concurrent");
	struct fx f;
	fx_setup(&f, _i, NULL);
	struct buf *data = random_buf(4096, seed);
	struct res *xs = calloc(NCONC, sizeof(*xs));
	Iolake__Test__EchoRequest *qs = calloc(NCONC, sizeof(*qs));
	char (*texts)[32] = calloc(NCONC, sizeof(*texts));
	int answered = 0;
	uint32_t s = seed;
	for (int i = 0; i < NCONC; i++) {
		Iolake__Test__EchoRequest *q = &qs[i];
		iolake__test__echo_request__init(q);
		snprintf(texts[i], sizeof(texts[i]), "call-%d", i);
		q->text = texts[i];
		q->seq = (uint64_t)i;
		q->delay_ms = xorshift(&s) % 8; /* answers come back out of order */
		q->echo_payload = true;
		size_t off = xorshift(&s) % 2048, len = xorshift(&s) % 2048;
		struct buf_slice pl = { data, off, len };
		xs[i].expect = data->data + off;
		xs[i].expect_len = len;
		xs[i].counter = &answered;
		start_call(&f, SVC_ECHO, M_ECHO, q, len ? &pl : NULL, 30000, &xs[i]);
	}
	client_loop = &f.loop;
	while (answered < NCONC)
		uv_run(&f.loop, UV_RUN_ONCE);
	for (int i = 0; i < NCONC; i++) {
		struct res *x = &xs[i];
		ck_assert_msg(x->status == RPC_OK, "call %d: %s %s", i, rpc_status_name(x->status),
			      x->message);
		ck_assert_uint_eq(x->seq, (uint64_t)i);
		ck_assert_str_eq(x->text, texts[i]);
		ck_assert_uint_eq(x->payload_len, x->expect_len);
		if (x->expect_len) {
			ck_assert_ptr_nonnull(x->payload.buf);
			ck_assert_uint_eq(x->payload.len, x->expect_len);
			ck_assert(memcmp(buf_slice_data(&x->payload), x->expect, x->expect_len) == 0);
		} else {
			ck_assert_ptr_null(x->payload.buf);
		}
		res_clear(x);
	}
	buf_unref(data);
	free(texts);
	free(qs);
	free(xs);
	fx_teardown(&f);
}
END_TEST

static void payload_roundtrip(int transport, size_t n, const char *name)
{
	uint32_t seed = test_seed(name);
	struct fx f;
	fx_setup(&f, transport, NULL);
	struct buf *data = random_buf(n, seed);
	Iolake__Test__EchoRequest q = IOLAKE__TEST__ECHO_REQUEST__INIT;
	q.echo_payload = true;
	struct buf_slice pl = { data, 0, n };
	struct res x = { 0 };
	do_call(&f, M_ECHO, &q, &pl, 0, &x);
	ck_assert_msg(x.status == RPC_OK, "%s", x.message);
	ck_assert_uint_eq(x.payload_len, n); /* request direction */
	ck_assert_ptr_nonnull(x.payload.buf);
	ck_assert_uint_eq(x.payload.len, n); /* response direction */
	ck_assert(memcmp(buf_slice_data(&x.payload), data->data, n) == 0);
	res_clear(&x);
	/* Server-made bytes, not an echo of ours. */
	q.echo_payload = false;
	q.payload_bytes = n;
	do_call(&f, M_ECHO, &q, NULL, 0, &x);
	ck_assert_int_eq(x.status, RPC_OK);
	ck_assert_uint_eq(x.payload.len, n);
	const uint8_t *p = buf_slice_data(&x.payload);
	for (size_t i = 0; i < n; i++)
		if (p[i] != (uint8_t)(i * 31 + 7))
			ck_abort_msg("byte %zu differs", i);
	res_clear(&x);
	buf_unref(data);
	fx_teardown(&f);
}

START_TEST(test_payload_1m)
{
	payload_roundtrip(_i, 1u << 20, "payload_1m");
}
END_TEST

START_TEST(test_payload_64m)
{
	payload_roundtrip(_i, 64u << 20, "payload_64m");
}
END_TEST

START_TEST(test_max_message)
{
	struct rpc_channel_opts o = { .max_message_bytes = 1u << 20 };
	struct fx f;
	fx_setup(&f, _i, &o);
	Iolake__Test__EchoRequest q = IOLAKE__TEST__ECHO_REQUEST__INIT;
	q.payload_bytes = 2u << 20;
	struct res x = { 0 };
	do_call(&f, M_ECHO, &q, NULL, 10000, &x);
	ck_assert_msg(x.status == RPC_RESOURCE_EXHAUSTED, "%s", rpc_status_name(x.status));
	res_clear(&x);
	/* The channel still works afterwards. */
	q.payload_bytes = 1000;
	do_call(&f, M_ECHO, &q, NULL, 10000, &x);
	ck_assert_int_eq(x.status, RPC_OK);
	res_clear(&x);
	fx_teardown(&f);
}
END_TEST

START_TEST(test_deadline)
{
	struct fx f;
	fx_setup(&f, _i, NULL);
	Iolake__Test__EchoRequest q = IOLAKE__TEST__ECHO_REQUEST__INIT;
	struct res x = { 0 };
	do_call(&f, M_HANG, &q, NULL, 200, &x);
	ck_assert_msg(x.status == RPC_DEADLINE_EXCEEDED, "%s", rpc_status_name(x.status));
	ck_assert_uint_ge(x.t_done - x.t_start, 190); /* never early */
	ck_assert_uint_lt(x.t_done - x.t_start, 5000);
	res_clear(&x);
	/* A delayed answer arriving after the deadline is dropped. */
	q.delay_ms = 300;
	do_call(&f, M_ECHO, &q, NULL, 100, &x);
	ck_assert_int_eq(x.status, RPC_DEADLINE_EXCEEDED);
	res_clear(&x);
	run_for(&f, 400);
	q.delay_ms = 0;
	do_call(&f, M_ECHO, &q, NULL, 5000, &x);
	ck_assert_int_eq(x.status, RPC_OK);
	res_clear(&x);
	fx_teardown(&f);
}
END_TEST

/* Run an Echo server in a child process; its port comes back on a pipe. */
static pid_t spawn_server(const char *addr, int *port)
{
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(p[0]);
		uv_loop_t loop;
		uv_loop_init(&loop);
		struct srv_state st = { .loop = &loop, .tcp_addr = addr };
		srv_start(&st);
		int out = st.rc ? -1 : st.port;
		if (write(p[1], &out, sizeof(out)) != sizeof(out))
			_exit(1);
		uv_run(&loop, UV_RUN_DEFAULT);
		_exit(0);
	}
	close(p[1]);
	ck_assert_int_eq(read(p[0], port, sizeof(*port)), (ssize_t)sizeof(*port));
	close(p[0]);
	return pid;
}

static void kill_server(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void server_killed_h2(void)
{
	struct fx f = { 0 };
	int port;
	pid_t pid = spawn_server("127.0.0.1:0", &port);
	ck_assert_int_gt(port, 0);
	snprintf(f.target, sizeof(f.target), "127.0.0.1:%d", port);
	ck_assert_int_eq(uv_loop_init(&f.loop), 0);
	struct rpc_channel_opts o = { .backoff_min_ms = 20, .backoff_max_ms = 200 };
	f.ch = rpc_channel_open(&f.loop, f.target, &o);
	Iolake__Test__EchoRequest q = IOLAKE__TEST__ECHO_REQUEST__INIT;
	struct res x = { 0 }, h = { 0 };
	do_call(&f, M_ECHO, &q, NULL, 5000, &x);
	ck_assert_int_eq(x.status, RPC_OK);
	res_clear(&x);
	start_call(&f, SVC_ECHO, M_HANG, &q, NULL, 10000, &h);
	run_for(&f, 100);
	ck_assert_int_eq(h.done, 0);
	kill_server(pid);
	wait_call(&f, &h);
	ck_assert_msg(h.status == RPC_UNAVAILABLE, "%s: %s", rpc_status_name(h.status), h.message);
	ck_assert_uint_lt(h.t_done - h.t_start, 5000);
	res_clear(&h);
	/* A new server on the same port: calls succeed again after backoff. */
	char addr[32];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	int port2 = -1;
	for (int i = 0; i < 50 && port2 < 0; i++) {
		pid = spawn_server(addr, &port2);
		if (port2 < 0) {
			kill_server(pid);
			usleep(100 * 1000);
		}
	}
	ck_assert_int_eq(port2, port);
	uint64_t t0 = loop_now_ms();
	int ok = 0, failed = 0;
	while (!ok && loop_now_ms() - t0 < 10000) {
		do_call(&f, M_ECHO, &q, NULL, 2000, &x);
		if (x.status == RPC_OK)
			ok = 1;
		else if (x.status == RPC_UNAVAILABLE)
			failed++, run_for(&f, 30);
		else
			ck_abort_msg("unexpected %s: %s", rpc_status_name(x.status), x.message);
		res_clear(&x);
	}
	ck_assert_msg(ok, "no success within 10 s after restart (%d UNAVAILABLE)", failed);
	kill_server(pid);
	rpc_channel_close(f.ch);
	while (uv_run(&f.loop, UV_RUN_DEFAULT) != 0)
		;
	ck_assert_int_eq(uv_loop_close(&f.loop), 0);
}

static void server_killed_local(void)
{
	struct fx f;
	fx_setup(&f, T_LOCAL, NULL);
	Iolake__Test__EchoRequest q = IOLAKE__TEST__ECHO_REQUEST__INIT;
	struct res h = { 0 }, x = { 0 };
	start_call(&f, SVC_ECHO, M_HANG, &q, NULL, 10000, &h);
	run_for(&f, 50);
	ck_assert_int_eq(h.done, 0);
	loop_thread_call(&f.lt, srv_stop, &f.st);
	wait_call(&f, &h);
	ck_assert_msg(h.status == RPC_UNAVAILABLE, "%s", rpc_status_name(h.status));
	ck_assert_uint_lt(h.t_done - h.t_start, 5000);
	res_clear(&h);
	do_call(&f, M_ECHO, &q, NULL, 5000, &x);
	ck_assert_int_eq(x.status, RPC_UNAVAILABLE);
	res_clear(&x);
	/* Same name again: the old channel reaches the new server. */
	struct srv_state st2;
	memset(&st2, 0, sizeof(st2));
	st2.loop = &f.lt.loop;
	snprintf(st2.local_name, sizeof(st2.local_name), "%s", f.st.local_name);
	ck_assert_int_eq(loop_thread_call(&f.lt, srv_start, &st2), 0);
	ck_assert_int_eq(st2.rc, 0);
	do_call(&f, M_ECHO, &q, NULL, 5000, &x);
	ck_assert_int_eq(x.status, RPC_OK);
	res_clear(&x);
	loop_thread_call(&f.lt, srv_stop, &st2);
	fx_teardown(&f);
}

START_TEST(test_server_killed)
{
	if (_i == T_H2)
		server_killed_h2();
	else
		server_killed_local();
}
END_TEST

START_TEST(test_unreachable)
{
	char target[64];
	if (_i == T_H2) {
		/* A port that was free a moment ago: bind, read it, close. */
		int s = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t len = sizeof(a);
		ck_assert_int_eq(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
		ck_assert_int_eq(getsockname(s, (struct sockaddr *)&a, &len), 0);
		close(s);
		snprintf(target, sizeof(target), "127.0.0.1:%d", ntohs(a.sin_port));
	} else {
		snprintf(target, sizeof(target), "local:nobody-%d", (int)getpid());
	}
	struct fx f = { 0 };
	ck_assert_int_eq(uv_loop_init(&f.loop), 0);
	f.ch = rpc_channel_open(&f.loop, target, NULL);
	ck_assert_ptr_nonnull(f.ch);
	Iolake__Test__EchoRequest q = IOLAKE__TEST__ECHO_REQUEST__INIT;
	struct res x[3] = { 0 };
	for (int i = 0; i < 3; i++)
		start_call(&f, SVC_ECHO, M_ECHO, &q, NULL, 10000, &x[i]);
	for (int i = 0; i < 3; i++) {
		wait_call(&f, &x[i]);
		ck_assert_msg(x[i].status == RPC_UNAVAILABLE, "%s", rpc_status_name(x[i].status));
		ck_assert_uint_lt(x[i].t_done - x[i].t_start, 5000);
	}
	/* During the backoff window calls fail fast too. */
	struct res y = { 0 };
	do_call(&f, M_ECHO, &q, NULL, 10000, &y);
	ck_assert_int_eq(y.status, RPC_UNAVAILABLE);
	rpc_channel_close(f.ch);
	while (uv_run(&f.loop, UV_RUN_DEFAULT) != 0)
		;
	ck_assert_int_eq(uv_loop_close(&f.loop), 0);
}
END_TEST

START_TEST(test_close_cancels)
{
	struct fx f;
	fx_setup(&f, _i, NULL);
	Iolake__Test__EchoRequest q = IOLAKE__TEST__ECHO_REQUEST__INIT;
	struct res h[4] = { 0 };
	for (int i = 0; i < 4; i++)
		start_call(&f, SVC_ECHO, M_HANG, &q, NULL, 10000, &h[i]);
	run_for(&f, 50);
	rpc_channel_close(f.ch);
	f.ch = NULL;
	for (int i = 0; i < 4; i++) { /* synchronously, inside close */
		ck_assert_int_eq(h[i].done, 1);
		ck_assert_int_eq(h[i].status, RPC_CANCELLED);
	}
	fx_teardown(&f);
}
END_TEST

/* rpc_call_ref's ownership rule: the request lives in an object of the
 * caller's (here `struct held`) while its hold buf has references. The
 * release frees the object, so under ASan a server reading it after the
 * release would be a use-after-free; `released` counts releases. */
static atomic_int released;

struct held {
	struct buf hold;
	Iolake__Test__EchoRequest q;
	char text[32];
};

static void held_release(struct buf *b)
{
	struct held *h = container_of(b, struct held, hold);
	memset(h, 0xa5, sizeof(*h));  /* a stale read sees garbage */
	free(h);
	atomic_fetch_add(&released, 1);
}

static struct held *held_new(const char *text, uint32_t delay_ms)
{
	struct held *h = malloc(sizeof(*h));
	ck_assert_ptr_nonnull(h);
	buf_init_embedded(&h->hold, NULL, 0, held_release, NULL);
	iolake__test__echo_request__init(&h->q);
	snprintf(h->text, sizeof(h->text), "%s", text);
	h->q.text = h->text;
	h->q.seq = 9;
	h->q.delay_ms = delay_ms;
	h->q.echo_payload = 1;
	return h;
}

/* The callback drops the caller's reference, as gw_data does. */
struct ref_res {
	struct res r;
	struct held *h;
	int released_at_cb;
};

static void on_ref_res(void *ud, const struct rpc_result *res)
{
	struct ref_res *x = ud;
	on_res(&x->r, res);
	x->released_at_cb = atomic_load(&released);
	buf_unref(&x->h->hold);
	x->h = NULL;
}

START_TEST(test_call_ref)
{
	struct fx f;
	fx_setup(&f, _i, NULL);
	atomic_store(&released, 0);
	struct buf *pb = random_buf(5000, 3);
	struct buf_slice pl = { pb, 10, 4000 };
	struct rpc_call_opts o = { .timeout_ms = 5000 };

	/* Answered: the server read the caller's message in place (local)
	 * or a packed copy (HTTP/2); the payload stayed in memory only in
	 * process; the hold is released once, after the answer at the
	 * latest. */
	struct ref_res x = { .h = held_new("by-ref", 0) };
	rpc_call_ref(f.ch, SVC_ECHO, M_ECHO, &x.h->q.base, &x.h->hold, &pl, &o, on_ref_res, &x);
	const void *qaddr = &x.h->q;
	wait_call(&f, &x.r);
	ck_assert_msg(x.r.status == RPC_OK, "%s: %s", tname[_i], x.r.message);
	ck_assert_str_eq(x.r.text, "by-ref");
	ck_assert_uint_eq(x.r.seq, 9);
	ck_assert_uint_eq(x.r.payload.len, 4000);
	ck_assert(memcmp(buf_slice_data(&x.r.payload), pb->data + 10, 4000) == 0);
	ck_assert_int_eq(atomic_load(&released), 1);
	if (_i == T_LOCAL) {
		ck_assert_ptr_eq(atomic_load(&seen_msg), qaddr);
		ck_assert(atomic_load(&seen_in_memory));
		ck_assert(x.r.in_memory);
		/* The server's reference was gone before the answer came. */
		ck_assert_int_eq(x.released_at_cb, 0);
	} else {
		ck_assert_ptr_ne(atomic_load(&seen_msg), qaddr);
		ck_assert(!atomic_load(&seen_in_memory));
		ck_assert(!x.r.in_memory);
	}
	res_clear(&x.r);

	/* The caller gives up first (deadline at 50 ms, the server answers
	 * at 500 ms): the callback runs and drops the caller's reference,
	 * but in process the message stays alive until the server has read
	 * it and answered; then it is released exactly once. */
	atomic_store(&released, 0);
	struct ref_res y = { .h = held_new("late", 500) };
	struct rpc_call_opts o50 = { .timeout_ms = 50 };
	rpc_call_ref(f.ch, SVC_ECHO, M_ECHO, &y.h->q.base, &y.h->hold, &pl, &o50, on_ref_res, &y);
	wait_call(&f, &y.r);
	ck_assert_int_eq(y.r.status, RPC_DEADLINE_EXCEEDED);
	ck_assert_int_eq(y.released_at_cb, 0);
	if (_i == T_LOCAL)
		ck_assert_int_eq(atomic_load(&released), 0); /* the server holds it */
	else
		ck_assert_int_eq(atomic_load(&released), 1); /* packed: ours was the last */
	for (int i = 0; i < 300 && atomic_load(&released) == 0; i++)
		run_for(&f, 10);
	ck_assert_int_eq(atomic_load(&released), 1);
	res_clear(&y.r);

	/* The channel closes under a call whose handler still holds the
	 * message (answering at 500 ms): the caller hears CANCELLED at
	 * once; the message is released when the handler answers (on the
	 * server's thread), not before. */
	atomic_store(&released, 0);
	Iolake__Test__EchoRequest hq = IOLAKE__TEST__ECHO_REQUEST__INIT;
	struct res h = { 0 };
	start_call(&f, SVC_ECHO, M_HANG, &hq, NULL, 10000, &h);
	struct ref_res z = { .h = held_new("closed", 500) };
	rpc_call_ref(f.ch, SVC_ECHO, M_ECHO, &z.h->q.base, &z.h->hold, NULL, &o, on_ref_res, &z);
	rpc_channel_close(f.ch);
	f.ch = NULL;
	ck_assert_int_eq(h.status, RPC_CANCELLED);
	ck_assert_int_eq(z.r.status, RPC_CANCELLED);
	if (_i == T_LOCAL)
		ck_assert_int_eq(atomic_load(&released), 0);
	for (int i = 0; i < 600 && atomic_load(&released) == 0; i++)
		usleep(5000);
	ck_assert_int_eq(atomic_load(&released), 1);
	if (_i != T_LOCAL)
		usleep(700 * 1000);   /* the handler's 500 ms answer, before teardown */
	res_clear(&h);
	res_clear(&z.r);
	buf_unref(pb);
	fx_teardown(&f);
}
END_TEST

/* A direct handler (rpc_server_set_direct) runs on the caller's thread for
 * calls made by reference in process; the callback still runs later, on
 * the caller's loop; the handler sees the call's deadline and request id,
 * and the hold is released exactly once. A call it declines, a packed call
 * (rpc_call) and any call over HTTP/2 reach the server's loop instead. */
START_TEST(test_direct)
{
	srv_direct = true;
	struct fx f;
	fx_setup(&f, _i, NULL);
	atomic_store(&released, 0);
	atomic_store(&direct_answers, 0);
	struct rpc_call_opts o = { .timeout_ms = 5000, .request_id = "00000000000000aa" };

	struct ref_res x = { .h = held_new("direct", 0) };
	rpc_call_ref(f.ch, SVC_ECHO, M_ECHO, &x.h->q.base, &x.h->hold, NULL, &o, on_ref_res, &x);
	ck_assert(!x.r.done);   /* never inside the call */
	wait_call(&f, &x.r);
	ck_assert_msg(x.r.status == RPC_OK, "%s: %s", tname[_i], x.r.message);
	ck_assert_str_eq(x.r.text, "direct");
	ck_assert_str_eq(x.r.request_id, "00000000000000aa");
	ck_assert_int_gt(x.r.deadline_left_ms, 4000);
	ck_assert_int_le(x.r.deadline_left_ms, 5000);
	ck_assert_int_eq(atomic_load(&released), 1);
	if (_i == T_LOCAL) {
		ck_assert_int_eq(atomic_load(&direct_answers), 1);
		ck_assert(pthread_equal(atomic_load(&direct_thread), pthread_self()));
	} else {
		ck_assert_int_eq(atomic_load(&direct_answers), 0);
	}
	res_clear(&x.r);

	/* Declined: h_echo answers on the server's loop. */
	struct ref_res y = { .h = held_new("decline", 0) };
	rpc_call_ref(f.ch, SVC_ECHO, M_ECHO, &y.h->q.base, &y.h->hold, NULL, &o, on_ref_res, &y);
	wait_call(&f, &y.r);
	ck_assert_int_eq(y.r.status, RPC_OK);
	ck_assert_str_eq(y.r.text, "decline");
	ck_assert_int_eq(atomic_load(&released), 2);
	res_clear(&y.r);

	/* Packed: never direct. */
	Iolake__Test__EchoRequest q = IOLAKE__TEST__ECHO_REQUEST__INIT;
	q.text = "packed";
	struct res z = { 0 };
	start_call(&f, SVC_ECHO, M_ECHO, &q, NULL, 5000, &z);
	wait_call(&f, &z);
	ck_assert_int_eq(z.status, RPC_OK);
	ck_assert_str_eq(z.text, "packed");
	res_clear(&z);
	ck_assert_int_eq(atomic_load(&direct_answers), _i == T_LOCAL ? 1 : 0);
	fx_teardown(&f);
	srv_direct = false;
}
END_TEST

/* rpc_respond_give: in process the callback gets the server's message
 * itself, from a posted handler and from a direct one, and may take it;
 * over HTTP/2 a copy that cannot be taken. An answer not taken, and one
 * whose caller had gone, are freed by the transport (make asan checks
 * there is no leak and no double free). */
START_TEST(test_give)
{
	for (int direct = 0; direct < 2; direct++) {
		srv_direct = direct;
		struct fx f;
		fx_setup(&f, _i, NULL);
		atomic_store(&direct_answers, 0);
		atomic_store(&given_count, 0);
		Iolake__Test__EchoRequest q = IOLAKE__TEST__ECHO_REQUEST__INIT;
		q.text = "give";
		q.seq = 9;
		struct rpc_call_opts o = { .timeout_ms = 5000, .request_id = "rid-g" };

		/* Taken by the callback. */
		struct ref_res x = { .h = held_new("give", 0) };
		x.r.take = true;
		rpc_call_ref(f.ch, SVC_ECHO, M_ECHO, &x.h->q.base, &x.h->hold, NULL, &o,
			     on_ref_res, &x);
		wait_call(&f, &x.r);
		ck_assert_msg(x.r.status == RPC_OK, "%s: %s", tname[_i], x.r.message);
		ck_assert_str_eq(x.r.text, "give");
		ck_assert_str_eq(x.r.request_id, "rid-g");
		ck_assert_int_eq(atomic_load(&given_count), 1);
		ck_assert_int_eq(x.r.was_given, _i == T_LOCAL);
		ck_assert_int_eq(x.r.took, _i == T_LOCAL);
		ck_assert(!x.r.took_twice);
		ck_assert_int_eq(atomic_load(&direct_answers), _i == T_LOCAL && direct);
		res_clear(&x.r);

		/* Not taken: the transport frees it. Packed request too. */
		struct res y = { 0 };
		do_call(&f, M_ECHO, &q, NULL, 5000, &y);
		ck_assert_int_eq(y.status, RPC_OK);
		ck_assert_uint_eq(y.seq, 9);
		ck_assert_int_eq(y.was_given, _i == T_LOCAL);
		ck_assert_int_eq(atomic_load(&given_count), 2);
		res_clear(&y);

		/* The caller gave up before the answer: freed unread. */
		if (!direct) {
			q.delay_ms = 300;
			struct res z = { .take = true };
			do_call(&f, M_ECHO, &q, NULL, 50, &z);
			ck_assert_int_eq(z.status, RPC_DEADLINE_EXCEEDED);
			ck_assert(!z.took);
			run_for(&f, 500);
			ck_assert_int_eq(atomic_load(&given_count), 3);
			res_clear(&z);
			q.delay_ms = 0;
		}
		fx_teardown(&f);
	}
	srv_direct = false;
	/* Outside a callback nothing can be taken. */
	ck_assert_ptr_null(rpc_answer_take(atomic_load(&given_msg)));
}
END_TEST

/* ------------------------------------------------------------ wire codec */

START_TEST(test_wire_parser)
{
	uint32_t seed = test_seed("wire_parser"), s = seed;
	for (int round = 0; round < 200; round++) {
		size_t n0 = xorshift(&s) % 300, n1 = xorshift(&s) % 5000;
		struct buf *m0 = random_buf(n0, xorshift(&s)), *m1 = random_buf(n1, xorshift(&s));
		size_t total = 2 * GRPC_PREFIX_BYTES + n0 + n1;
		uint8_t *wire = malloc(total);
		grpc_prefix_put(wire, (uint32_t)n0);
		memcpy(wire + 5, m0->data, n0);
		grpc_prefix_put(wire + 5 + n0, (uint32_t)n1);
		memcpy(wire + 10 + n0, m1->data, n1);
		struct grpc_parser p;
		grpc_parser_init(&p, 1u << 20, 2);
		for (size_t off = 0; off < total;) { /* random splits, 1-byte ones too */
			size_t k = 1 + xorshift(&s) % (round % 2 ? 7 : 900);
			if (k > total - off)
				k = total - off;
			ck_assert_int_eq(grpc_parser_feed(&p, wire + off, k), 0);
			off += k;
		}
		ck_assert(grpc_parser_at_boundary(&p));
		ck_assert_uint_eq(p.nmsgs, 2);
		ck_assert_uint_eq(p.msgs[0]->len, n0);
		ck_assert_uint_eq(p.msgs[1]->len, n1);
		ck_assert(memcmp(p.msgs[0]->data, m0->data, n0) == 0);
		ck_assert(memcmp(p.msgs[1]->data, m1->data, n1) == 0);
		/* A third message is a protocol error. */
		ck_assert_int_eq(grpc_parser_feed(&p, wire, 5), -EPROTO);
		grpc_parser_reset(&p);
		free(wire);
		buf_unref(m0);
		buf_unref(m1);
	}
	struct grpc_parser p;
	grpc_parser_init(&p, 100, 2);
	uint8_t hdr[5];
	grpc_prefix_put(hdr, 101);
	ck_assert_int_eq(grpc_parser_feed(&p, hdr, 5), -EMSGSIZE);
	grpc_parser_reset(&p);
	hdr[0] = 1; /* compressed */
	ck_assert_int_eq(grpc_parser_feed(&p, hdr, 5), -EPROTO);
	grpc_parser_reset(&p);
	ck_assert_int_eq(grpc_parser_feed(&p, hdr + 1, 3), 0);
	ck_assert(!grpc_parser_at_boundary(&p)); /* truncated prefix */
	grpc_parser_reset(&p);
}
END_TEST

START_TEST(test_wire_values)
{
	uint64_t ms;
	char out[16];
	static const uint32_t v[] = { 1, 200, 1500, 99999999, 100000000, 4000000000u };
	for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		size_t n = grpc_timeout_format(out, v[i]);
		ck_assert_int_eq(grpc_timeout_parse((const uint8_t *)out, n, &ms), 0);
		ck_assert_uint_ge(ms, v[i]); /* rounding only ever lengthens */
		ck_assert_uint_lt(ms, (uint64_t)v[i] + 1000);
	}
	ck_assert_int_eq(grpc_timeout_parse((const uint8_t *)"2S", 2, &ms), 0);
	ck_assert_uint_eq(ms, 2000);
	ck_assert_int_eq(grpc_timeout_parse((const uint8_t *)"1500u", 5, &ms), 0);
	ck_assert_uint_eq(ms, 2);
	ck_assert_int_eq(grpc_timeout_parse((const uint8_t *)"5x", 2, &ms), -EINVAL);
	ck_assert_int_eq(grpc_timeout_parse((const uint8_t *)"m", 1, &ms), -EINVAL);
	ck_assert_int_eq(grpc_timeout_parse((const uint8_t *)"123456789m", 10, &ms), -EINVAL);

	char in[256], enc[3 * 256 + 1], dec[256];
	for (int i = 1; i < 256; i++)
		in[i - 1] = (char)i;
	in[255] = 0;
	size_t n = grpc_message_encode(in, enc);
	for (size_t i = 0; i < n; i++)
		ck_assert(enc[i] >= 0x20 && enc[i] <= 0x7e);
	grpc_message_decode((const uint8_t *)enc, n, dec, sizeof(dec));
	ck_assert_str_eq(dec, in);
	grpc_message_decode((const uint8_t *)"a%zz%4", 6, dec, sizeof(dec));
	ck_assert_str_eq(dec, "a%zz%4");

	ck_assert_str_eq(rpc_status_name(RPC_DEADLINE_EXCEEDED), "DEADLINE_EXCEEDED");
	ck_assert_str_eq(rpc_status_name(RPC_OK), "OK");
	ck_assert_str_eq(rpc_status_name(99), "UNKNOWN");

	struct rpc_target t;
	ck_assert_int_eq(rpc_target_parse("10.0.0.1:7000", &t), 0);
	ck_assert_int_eq(t.kind, RPC_TARGET_TCP);
	ck_assert_str_eq(t.host, "10.0.0.1");
	ck_assert_uint_eq(t.port, 7000);
	ck_assert_int_eq(rpc_target_parse("[::1]:80", &t), 0);
	ck_assert_str_eq(t.host, "::1");
	ck_assert_int_eq(rpc_target_parse("local:osd-3", &t), 0);
	ck_assert_int_eq(t.kind, RPC_TARGET_LOCAL);
	ck_assert_str_eq(t.name, "osd-3");
	ck_assert_int_eq(rpc_target_parse("nohost", &t), -EINVAL);
	ck_assert_int_eq(rpc_target_parse("h:99999", &t), -EINVAL);
	ck_assert_int_eq(rpc_target_parse("local:", &t), -EINVAL);
	uv_loop_t loop;
	uv_loop_init(&loop);
	ck_assert_ptr_null(rpc_channel_open(&loop, "h:", NULL));
	uv_loop_close(&loop);
}
END_TEST

static Suite *rpc_suite(void)
{
	Suite *s = suite_create("rpc");
	TCase *w = tcase_create("wire");
	tcase_add_test(w, test_wire_parser);
	tcase_add_test(w, test_wire_values);
	suite_add_tcase(s, w);

	TCase *c = tcase_create("calls"); /* each test runs for h2, then local */
	tcase_set_timeout(c, 60);
	tcase_add_loop_test(c, test_echo, 0, TRANSPORTS);
	tcase_add_loop_test(c, test_conn_data, 0, TRANSPORTS);
	tcase_add_loop_test(c, test_direct, 0, TRANSPORTS);
	tcase_add_loop_test(c, test_give, 0, TRANSPORTS);
	tcase_add_loop_test(c, test_unimplemented, 0, TRANSPORTS);
	tcase_add_loop_test(c, test_fail_message, 0, TRANSPORTS);
	tcase_add_loop_test(c, test_call_log, 0, TRANSPORTS);
	tcase_add_loop_test(c, test_concurrent, 0, TRANSPORTS);
	tcase_add_loop_test(c, test_payload_1m, 0, TRANSPORTS);
	tcase_add_loop_test(c, test_payload_64m, 0, TRANSPORTS);
	tcase_add_loop_test(c, test_max_message, 0, TRANSPORTS);
	tcase_add_loop_test(c, test_deadline, 0, TRANSPORTS);
	tcase_add_loop_test(c, test_server_killed, 0, TRANSPORTS);
	tcase_add_loop_test(c, test_unreachable, 0, TRANSPORTS);
	tcase_add_loop_test(c, test_close_cancels, 0, TRANSPORTS);
	tcase_add_loop_test(c, test_call_ref, 0, TRANSPORTS);
	suite_add_tcase(s, c);
	return s;
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	SRunner *sr = srunner_create(rpc_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
