/*
 * test_tcp_self.c — tcp_self_connected tells a socket connected to itself
 * (the TCP simultaneous open a connect to an unused local port can make
 * when the kernel picks that port as the source) from a real connection.
 * The self-connection is made on purpose: bind to a port, connect to it.
 */
#include <check.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <string.h>
#include <uv.h>

#include "common/tcp_self.h"

struct conn_result {
	int status;
	bool done;
};

static void on_connect(uv_connect_t *req, int status)
{
	struct conn_result *r = req->data;
	r->status = status;
	r->done = true;
}

static void on_close(uv_handle_t *h)
{
	(void)h;
}

static void on_new_conn(uv_stream_t *server, int status)
{
	ck_assert_int_eq(status, 0);
	uv_tcp_t *peer = server->data;
	uv_tcp_init(server->loop, peer);
	ck_assert_int_eq(uv_accept(server, (uv_stream_t *)peer), 0);
}

static int bound_port(uv_tcp_t *t)
{
	struct sockaddr_in sa;
	int len = sizeof(sa);
	ck_assert_int_eq(uv_tcp_getsockname(t, (struct sockaddr *)&sa, &len), 0);
	return ntohs(sa.sin_port);
}

static void run_until(uv_loop_t *loop, const bool *done)
{
	for (int i = 0; i < 1000 && !*done; i++)
		uv_run(loop, UV_RUN_ONCE);
	ck_assert(*done);
}

START_TEST(self_connection_is_seen)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	uv_tcp_t t;
	uv_tcp_init(&loop, &t);
	struct sockaddr_in sa;
	uv_ip4_addr("127.0.0.1", 0, &sa);
	ck_assert_int_eq(uv_tcp_bind(&t, (const struct sockaddr *)&sa, 0), 0);
	uv_ip4_addr("127.0.0.1", bound_port(&t), &sa);   /* itself: nothing listens */
	struct conn_result r = { 0 };
	uv_connect_t req = { .data = &r };
	ck_assert_int_eq(uv_tcp_connect(&req, &t, (const struct sockaddr *)&sa, on_connect), 0);
	run_until(&loop, &r.done);
	ck_assert_int_eq(r.status, 0);   /* the kernel calls it connected */
	ck_assert(tcp_self_connected(&t));
	uv_close((uv_handle_t *)&t, on_close);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
}
END_TEST

START_TEST(real_connection_is_not)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	uv_tcp_t listener, client, peer;
	memset(&peer, 0, sizeof(peer));   /* type UV_TCP once accepted */
	uv_tcp_init(&loop, &listener);
	listener.data = &peer;
	struct sockaddr_in sa;
	uv_ip4_addr("127.0.0.1", 0, &sa);
	ck_assert_int_eq(uv_tcp_bind(&listener, (const struct sockaddr *)&sa, 0), 0);
	ck_assert_int_eq(uv_listen((uv_stream_t *)&listener, 4, on_new_conn), 0);
	uv_ip4_addr("127.0.0.1", bound_port(&listener), &sa);
	uv_tcp_init(&loop, &client);
	struct conn_result r = { 0 };
	uv_connect_t req = { .data = &r };
	ck_assert_int_eq(uv_tcp_connect(&req, &client, (const struct sockaddr *)&sa, on_connect), 0);
	run_until(&loop, &r.done);
	ck_assert_int_eq(r.status, 0);
	ck_assert(!tcp_self_connected(&client));
	/* Not connected at all: no peer name, so not "itself" either. */
	ck_assert(!tcp_self_connected(&listener));
	uv_close((uv_handle_t *)&client, on_close);
	uv_close((uv_handle_t *)&listener, on_close);
	uv_run(&loop, UV_RUN_ONCE);
	if (peer.type == UV_TCP)
		uv_close((uv_handle_t *)&peer, on_close);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tcp_self");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, self_connection_is_seen);
	tcase_add_test(tc, real_connection_is_not);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
