/*
 * test_http_accept.c — one listener for the HTTP servers of three loops
 * (gateway/http_accept.h, issue 19): real sockets, each server in its
 * own loop_thread with cfg.adopt_only, the acceptor on the first.
 *
 * - connections held open go to the least loaded loop: 9 of them land
 *   3 on each, and each connection's requests are answered by the loop
 *   it was handed to (the answer names the loop);
 * - pools full: a connection past every loop's pool waits in the
 *   backlog and is served once one closes;
 * - the servers of all loops share one per-address table: with a cap of
 *   4 connections per address, the fifth is closed whatever loop it
 *   would go to;
 * - teardown: acceptor first, then the servers, every on_request got its
 *   on_finish.
 */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/loop.h"
#include "gateway/http.h"
#include "gateway/http_accept.h"

#define LOOPS 3

struct srv {
	struct loop_thread lt;
	struct http_server *srv;
	int index;
	int started, finished;   /* on its loop */
};

static struct srv S[LOOPS];
static struct http_acceptor *acc;
static int port;
static struct http_limit_shared *limit;

static void on_request(struct http_stream *s, const struct http_request *req)
{
	(void)req;
	struct srv *v = http_stream_ctx(s);
	v->started++;
	char body[32];
	int n = snprintf(body, sizeof(body), "loop %d", v->index);
	http_respond(s, 200, body, (size_t)n, NULL, NULL);
}

static void on_body(struct http_stream *s, const char *d, size_t n)
{
	(void)s, (void)d, (void)n;
}

static void on_body_end(struct http_stream *s)
{
	(void)s;
}

static void on_finish(struct http_stream *s, int err)
{
	(void)err;
	((struct srv *)http_stream_ctx(s))->finished++;
}

struct start {
	struct srv *v;
	uint32_t max_conns;
	int rc;
};

static void start_fn(void *arg)
{
	struct start *st = arg;
	struct http_server_cfg cfg = { .max_conns = st->max_conns, .adopt_only = true,
				       .limit_shared = limit,
				       .handler = { on_request, on_body, on_body_end, on_finish,
						    st->v } };
	st->rc = http_server_start(&st->v->lt.loop, &cfg, &st->v->srv);
}

static void acc_fn(void *arg)
{
	int *rc = arg;
	struct http_accept_target t[LOOPS];
	for (int i = 0; i < LOOPS; i++) {
		t[i].srv = S[i].srv;
		t[i].queue = i ? &S[i].lt.queue : NULL;
	}
	*rc = http_acceptor_start(&S[0].lt.loop, "127.0.0.1", 0, t, LOOPS, NULL, NULL, &acc);
	if (!*rc)
		port = http_acceptor_port(acc);
}

static void setup_with(uint32_t max_conns, uint32_t per_addr)
{
	struct http_limit_cfg lc = { .max_conns = per_addr };
	limit = per_addr ? http_limit_shared_new(&lc) : NULL;
	for (int i = 0; i < LOOPS; i++) {
		S[i] = (struct srv){ .index = i };
		char name[16];
		snprintf(name, sizeof(name), "t.%d", i);
		ck_assert_int_eq(loop_thread_start(&S[i].lt, name), 0);
		struct start st = { .v = &S[i], .max_conns = max_conns };
		loop_thread_call(&S[i].lt, start_fn, &st);
		ck_assert_int_eq(st.rc, 0);
	}
	int rc = -1;
	loop_thread_call(&S[0].lt, acc_fn, &rc);
	ck_assert_int_eq(rc, 0);
}

struct wait {
	uv_sem_t sem;
	struct srv *v;
};

static void posted(void *arg)
{
	uv_sem_post(&((struct wait *)arg)->sem);
}

static void acc_close_fn(void *arg)
{
	http_acceptor_close(acc, posted, arg);
}

static void srv_close_fn(void *arg)
{
	struct wait *w = arg;
	http_server_close(w->v->srv, posted, w);
}

static void teardown_all(void)
{
	struct wait w;
	uv_sem_init(&w.sem, 0);
	loop_thread_call(&S[0].lt, acc_close_fn, &w);
	uv_sem_wait(&w.sem);
	for (int i = LOOPS; i-- > 0;) {
		w.v = &S[i];
		loop_thread_call(&S[i].lt, srv_close_fn, &w);
		uv_sem_wait(&w.sem);
		loop_thread_stop(&S[i].lt);
		ck_assert_int_eq(S[i].started, S[i].finished);
	}
	uv_sem_destroy(&w.sem);
	http_limit_shared_free(limit);
	limit = NULL;
}

static int dial(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* GET / on fd; the loop index the answer names, -1 when the connection
 * was closed, -2 on no answer within ms. */
static int get(int fd, int ms)
{
	static const char rq[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	if (write(fd, rq, sizeof(rq) - 1) != (ssize_t)(sizeof(rq) - 1))
		return -1;
	char buf[1024];
	size_t have = 0;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, ms) != 1)
			return -2;
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (n <= 0)
			return -1;
		have += (size_t)n;
		buf[have] = 0;
		char *l = strstr(buf, "\r\n\r\nloop ");
		if (l && strlen(l) >= 10)
			return atoi(l + 9);
	}
}

START_TEST(test_least_loaded)
{
	setup_with(8, 0);
	int fd[3 * LOOPS], per[LOOPS] = { 0 };
	for (int i = 0; i < 3 * LOOPS; i++) {
		fd[i] = dial();
		int l = get(fd[i], 5000);   /* adopted before the next dial */
		ck_assert_int_ge(l, 0);
		ck_assert_int_lt(l, LOOPS);
		per[l]++;
		ck_assert_int_eq(get(fd[i], 5000), l);   /* stays on its loop */
	}
	for (int i = 0; i < LOOPS; i++) {
		ck_assert_int_eq(per[i], 3);
		ck_assert_uint_eq(http_acceptor_handed(acc, (unsigned)i), 3);
	}
	for (int i = 0; i < 3 * LOOPS; i++)
		close(fd[i]);
	teardown_all();
}
END_TEST

START_TEST(test_pools_full_waits)
{
	setup_with(1, 0);   /* one connection per loop */
	int fd[LOOPS];
	for (int i = 0; i < LOOPS; i++) {
		fd[i] = dial();
		ck_assert_int_ge(get(fd[i], 5000), 0);
	}
	int late = dial();   /* every pool full: waits in the backlog */
	ck_assert_int_eq(get(late, 300), -2);
	close(fd[1]);
	ck_assert_int_ge(get(late, 5000), 0);
	close(late);
	close(fd[0]);
	close(fd[2]);
	teardown_all();
}
END_TEST

START_TEST(test_shared_per_address_cap)
{
	setup_with(8, 4);
	int fd[5];
	for (int i = 0; i < 4; i++) {
		fd[i] = dial();
		ck_assert_int_ge(get(fd[i], 5000), 0);
	}
	fd[4] = dial();   /* the fifth from 127.0.0.1, on whichever loop: closed */
	ck_assert_int_eq(get(fd[4], 5000), -1);
	for (int i = 0; i < 5; i++)
		close(fd[i]);
	teardown_all();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("http_accept");
	TCase *tc = tcase_create("loops");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_least_loaded);
	tcase_add_test(tc, test_pools_full_waits);
	tcase_add_test(tc, test_shared_per_address_cap);
	suite_add_tcase(s, tc);
	SRunner *r = srunner_create(s);
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? 1 : 0;
}
