/*
 * test_metrics_http.c — the /metrics listener (common/metrics_http) on a
 * loop_thread, spoken to over real loopback sockets by this thread: the
 * exact answer to GET (body byte for byte equal to metrics_render, a
 * registered counter's line in it), HEAD, 404/405/400/431, a request sent
 * a byte at a time, keep-alive and pipelined requests answered in order,
 * Connection: close and HTTP/1.0, the connection cap, the idle timeout,
 * address checks and a port already in use.
 *
 * Client sockets carry a 10 s receive timeout only so that a broken server
 * fails the test instead of hanging it; nothing asserts on time.
 */
#include <signal.h>
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/loop.h"
#include "common/metrics.h"
#include "common/metrics_http.h"

#define PROM_CT "text/plain; version=0.0.4; charset=utf-8"

struct server {
	struct loop_thread lt;
	struct metrics_registry *reg;
	struct metrics_counter *ctr;
	struct metrics_http *mh;
	struct metrics_http_opts opts;
	const char *addr;
	int start_rc;
	int port;
	int closed;
};

static struct server srv;

static void do_start(void *arg)
{
	struct server *s = arg;
	s->start_rc = metrics_http_start(&s->lt.loop, s->addr, s->reg, &s->opts, &s->mh);
	if (s->start_rc == 0)
		s->port = metrics_http_port(s->mh);
}

static void on_closed(void *arg)
{
	((struct server *)arg)->closed++;
}

static void do_close(void *arg)
{
	struct server *s = arg;
	metrics_http_close(s->mh, on_closed, s);
}

static void read_closed(void *arg)
{
	*(int *)arg = srv.closed;
}

static void server_up(unsigned max_conns, unsigned idle_ms)
{
	memset(&srv, 0, sizeof(srv));
	srv.reg = metrics_registry_new();
	ck_assert_ptr_nonnull(srv.reg);
	srv.ctr = metrics_counter_new(srv.reg, "test_scrapes_total", "Test counter.",
				      METRICS_LABELS("svc", "unit"));
	ck_assert_ptr_nonnull(srv.ctr);
	metrics_counter_add(srv.ctr, 42);
	srv.opts.max_conns = max_conns;
	srv.opts.idle_timeout_ms = idle_ms;
	srv.addr = "127.0.0.1:0";
	ck_assert_int_eq(loop_thread_start(&srv.lt, "test-mhttp"), 0);
	ck_assert_int_eq(loop_thread_call(&srv.lt, do_start, &srv), 0);
	ck_assert_int_eq(srv.start_rc, 0);
	ck_assert_int_gt(srv.port, 0);
}

static void server_down(void)
{
	ck_assert_int_eq(loop_thread_call(&srv.lt, do_close, &srv), 0);
	/* The close callback runs on a later turn: poll with a round trip. */
	int closed = 0;
	for (int i = 0; i < 1000 && !closed; i++) {
		ck_assert_int_eq(loop_thread_call(&srv.lt, read_closed, &closed), 0);
		if (!closed)
			usleep(1000);
	}
	ck_assert_int_eq(closed, 1);
	loop_thread_stop(&srv.lt);
	metrics_registry_free(srv.reg);
}

/* ------------------------------------------------------------ client */

struct client {
	int fd;
	char buf[1 << 16];
	size_t len;   /* bytes read, not yet consumed */
};

struct answer {
	int status;
	char head[4096];  /* status line and headers, NUL-terminated */
	char *body;       /* malloc'd, NUL-terminated */
	size_t body_len;
};

static void client_open(struct client *c)
{
	c->len = 0;
	c->fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(c->fd, 0);
	struct timeval tv = { .tv_sec = 10 };
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	int one = 1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)srv.port) };
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	ck_assert_int_eq(connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
}

static void client_send(struct client *c, const char *s, size_t len)
{
	while (len) {
		ssize_t n = send(c->fd, s, len, MSG_NOSIGNAL);
		ck_assert_msg(n > 0, "send: %s", strerror(errno));
		s += n;
		len -= (size_t)n;
	}
}

static void client_sends(struct client *c, const char *s)
{
	client_send(c, s, strlen(s));
}

/* Read more into c->buf; returns bytes read, 0 on EOF, -1 on error. */
static ssize_t client_fill(struct client *c)
{
	ck_assert_uint_lt(c->len, sizeof(c->buf));
	ssize_t n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
	ck_assert_msg(n >= 0 || errno != EAGAIN, "no answer within the 10 s guard");
	if (n > 0)
		c->len += (size_t)n;
	return n;
}

/* Read one answer; head_only: it has no body whatever Content-Length says. */
static void client_answer(struct client *c, struct answer *a, bool head_only)
{
	char *end;
	while (!(end = memmem(c->buf, c->len, "\r\n\r\n", 4)))
		ck_assert_msg(client_fill(c) > 0, "connection ended before an answer's head");
	size_t hlen = (size_t)(end - c->buf) + 4;
	ck_assert_uint_lt(hlen, sizeof(a->head));
	memcpy(a->head, c->buf, hlen);
	a->head[hlen] = 0;
	ck_assert_int_eq(sscanf(a->head, "HTTP/1.1 %d ", &a->status), 1);
	const char *cl = strstr(a->head, "\r\nContent-Length: ");
	ck_assert_ptr_nonnull(cl);
	size_t blen = strtoul(cl + 18, NULL, 10);
	a->body_len = head_only ? 0 : blen;
	while (c->len < hlen + a->body_len)
		ck_assert_msg(client_fill(c) > 0, "connection ended inside a body");
	a->body = malloc(a->body_len + 1);
	memcpy(a->body, c->buf + hlen, a->body_len);
	a->body[a->body_len] = 0;
	if (head_only)
		a->body_len = blen;  /* what the head announced */
	memmove(c->buf, c->buf + hlen + (head_only ? 0 : blen),
		c->len - hlen - (head_only ? 0 : blen));
	c->len -= hlen + (head_only ? 0 : blen);
}

/* The server closed: EOF (or a reset) with nothing more to read. */
static void client_expect_eof(struct client *c)
{
	ck_assert_uint_eq(c->len, 0);
	ssize_t n = client_fill(c);
	ck_assert_msg(n == 0 || (n < 0 && errno == ECONNRESET), "expected EOF, read %zd", n);
}

static void client_close(struct client *c)
{
	close(c->fd);
}

static bool has_header(const struct answer *a, const char *line)
{
	char want[256];
	snprintf(want, sizeof(want), "\r\n%s\r\n", line);
	return strstr(a->head, want) != NULL;
}

static char *rendered(void)
{
	char *text;
	size_t len;
	ck_assert_int_eq(metrics_render(srv.reg, &text, &len), 0);
	return text;
}

/* ------------------------------------------------------------ tests */

START_TEST(test_get_exact)
{
	server_up(0, 0);
	struct client c;
	client_open(&c);
	client_sends(&c, "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: text/plain\r\n\r\n");
	struct answer a;
	client_answer(&c, &a, false);
	ck_assert_int_eq(a.status, 200);
	ck_assert_msg(has_header(&a, "Content-Type: " PROM_CT), "head: %s", a.head);
	ck_assert(has_header(&a, "Connection: keep-alive"));
	char *want = rendered();
	ck_assert_str_eq(a.body, want);
	ck_assert_ptr_nonnull(strstr(a.body, "\ntest_scrapes_total{svc=\"unit\"} 42\n"));
	free(want);
	free(a.body);

	/* A query string is ignored; the same connection serves again, and
	 * sees the counter move. */
	metrics_counter_inc(srv.ctr);
	client_sends(&c, "GET /metrics?name[]=x HTTP/1.1\r\nHost: x\r\n\r\n");
	client_answer(&c, &a, false);
	ck_assert_int_eq(a.status, 200);
	ck_assert_ptr_nonnull(strstr(a.body, "\ntest_scrapes_total{svc=\"unit\"} 43\n"));
	free(a.body);
	client_close(&c);
	server_down();
}
END_TEST

START_TEST(test_head_no_body)
{
	server_up(0, 0);
	struct client c;
	client_open(&c);
	/* HEAD then GET pipelined: the GET's answer must start right after the
	 * HEAD's head, so no body was sent for HEAD. */
	client_sends(&c, "HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
			 "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
	struct answer h, g;
	client_answer(&c, &h, true);
	ck_assert_int_eq(h.status, 200);
	client_answer(&c, &g, false);
	ck_assert_int_eq(g.status, 200);
	ck_assert_uint_eq(h.body_len, g.body_len);
	ck_assert_uint_gt(g.body_len, 0);
	free(h.body);
	free(g.body);
	client_close(&c);
	server_down();
}
END_TEST

START_TEST(test_not_found_and_method)
{
	server_up(0, 0);
	struct client c;
	client_open(&c);
	static const char *const paths[] = { "/", "/metricsx", "/metrics/", "/metric",
					     "/health/live" };
	struct answer a;
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		char req[128];
		snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", paths[i]);
		client_sends(&c, req);
		client_answer(&c, &a, false);
		ck_assert_msg(a.status == 404, "%s: %d", paths[i], a.status);
		ck_assert(has_header(&a, "Connection: keep-alive"));
		free(a.body);
	}
	/* A long path is also 404, on the same connection. */
	char req[2048] = "GET /";
	memset(req + 5, 'a', 1500);
	strcpy(req + 1505, " HTTP/1.1\r\n\r\n");
	client_sends(&c, req);
	client_answer(&c, &a, false);
	ck_assert_int_eq(a.status, 404);
	free(a.body);

	client_sends(&c, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello");
	client_answer(&c, &a, false);
	ck_assert_int_eq(a.status, 405);
	ck_assert(has_header(&a, "Allow: GET, HEAD"));
	ck_assert(has_header(&a, "Connection: close"));
	free(a.body);
	client_expect_eof(&c);
	client_close(&c);

	client_open(&c);
	client_sends(&c, "DELETE /metrics HTTP/1.1\r\n\r\n");
	client_answer(&c, &a, false);
	ck_assert_int_eq(a.status, 405);
	free(a.body);
	client_expect_eof(&c);
	client_close(&c);
	server_down();
}
END_TEST

START_TEST(test_garbage_and_oversized_head)
{
	server_up(0, 0);
	struct client c;
	struct answer a;
	client_open(&c);
	client_sends(&c, "\x16\x03\x01\x02\x00 hello\r\n\r\n");
	client_answer(&c, &a, false);
	ck_assert_int_eq(a.status, 400);
	ck_assert(has_header(&a, "Connection: close"));
	free(a.body);
	client_expect_eof(&c);
	client_close(&c);

	/* 9 KiB of one header value, never finished: 431 before the end. */
	client_open(&c);
	client_sends(&c, "GET /metrics HTTP/1.1\r\nX-Big: ");
	char big[9 * 1024];
	memset(big, 'b', sizeof(big));
	client_send(&c, big, sizeof(big));
	client_answer(&c, &a, false);
	ck_assert_int_eq(a.status, 431);
	ck_assert(has_header(&a, "Connection: close"));
	free(a.body);
	client_expect_eof(&c);
	client_close(&c);

	/* Just under the cap is served. */
	client_open(&c);
	char req[METRICS_HTTP_HEAD_MAX + 128];
	int n = snprintf(req, sizeof(req), "GET /metrics HTTP/1.1\r\nX-Big: ");
	size_t fill = METRICS_HTTP_HEAD_MAX - strlen("/metrics") - strlen("X-Big");
	memset(req + n, 'c', fill);
	strcpy(req + n + fill, "\r\n\r\n");
	client_sends(&c, req);
	client_answer(&c, &a, false);
	ck_assert_int_eq(a.status, 200);
	free(a.body);
	client_close(&c);
	server_down();
}
END_TEST

START_TEST(test_byte_at_a_time)
{
	server_up(0, 0);
	struct client c;
	client_open(&c);
	const char *req = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: "
			  "Prometheus/2.45\r\nAccept-Encoding: gzip\r\n\r\n";
	for (const char *p = req; *p; p++) {
		client_send(&c, p, 1);
		usleep(200);   /* let most bytes arrive in reads of their own */
	}
	struct answer a;
	client_answer(&c, &a, false);
	ck_assert_int_eq(a.status, 200);
	char *want = rendered();
	ck_assert_str_eq(a.body, want);
	free(want);
	free(a.body);
	client_close(&c);
	server_down();
}
END_TEST

START_TEST(test_pipelined_then_close)
{
	server_up(0, 0);
	struct client c;
	client_open(&c);
	client_sends(&c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
			 "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n"
			 "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
			 "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
	struct answer a;
	client_answer(&c, &a, false);
	ck_assert_int_eq(a.status, 200);
	ck_assert(has_header(&a, "Connection: keep-alive"));
	free(a.body);
	client_answer(&c, &a, false);
	ck_assert_int_eq(a.status, 404);
	free(a.body);
	client_answer(&c, &a, false);
	ck_assert_int_eq(a.status, 200);
	ck_assert(has_header(&a, "Connection: close"));
	free(a.body);
	/* The fourth request is never answered. */
	client_expect_eof(&c);
	client_close(&c);

	/* An Upgrade is not followed: answered, then closed. */
	client_open(&c);
	client_sends(&c, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, "
			 "HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAA\r\n\r\n");
	client_answer(&c, &a, false);
	ck_assert_int_eq(a.status, 200);
	ck_assert(has_header(&a, "Connection: close"));
	free(a.body);
	client_expect_eof(&c);
	client_close(&c);

	/* HTTP/1.0 closes unless asked to keep alive. */
	client_open(&c);
	client_sends(&c, "GET /metrics HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
	client_answer(&c, &a, false);
	ck_assert(has_header(&a, "Connection: keep-alive"));
	free(a.body);
	client_sends(&c, "GET /metrics HTTP/1.0\r\n\r\n");
	client_answer(&c, &a, false);
	ck_assert_int_eq(a.status, 200);
	ck_assert(has_header(&a, "Connection: close"));
	free(a.body);
	client_expect_eof(&c);
	client_close(&c);
	server_down();
}
END_TEST

START_TEST(test_connection_cap)
{
	server_up(2, 0);   /* idle limit 30 s: nothing here waits that long */
	struct client c[3];
	struct answer a;
	for (int i = 0; i < 2; i++) {
		client_open(&c[i]);
		client_sends(&c[i], "GET /metrics HTTP/1.1\r\n\r\n");
		client_answer(&c[i], &a, false);
		ck_assert_int_eq(a.status, 200);
		free(a.body);
	}
	/* A third while two are open: accepted and closed, no answer. */
	client_open(&c[2]);
	client_sends(&c[2], "GET /metrics HTTP/1.1\r\n\r\n");
	client_expect_eof(&c[2]);
	client_close(&c[2]);
	/* The two still work; once one goes, there is room again. */
	client_sends(&c[1], "GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n");
	client_answer(&c[1], &a, false);
	ck_assert_int_eq(a.status, 200);
	free(a.body);
	client_expect_eof(&c[1]);
	client_close(&c[1]);
	struct answer b;
	for (int tries = 0;; tries++) {
		/* The server frees the closed one on its next loop turn. */
		client_open(&c[2]);
		client_sends(&c[2], "GET /metrics HTTP/1.1\r\n\r\n");
		if (client_fill(&c[2]) > 0)
			break;
		client_close(&c[2]);
		ck_assert_int_lt(tries, 100);
		usleep(10000);
	}
	client_answer(&c[2], &b, false);
	ck_assert_int_eq(b.status, 200);
	free(b.body);
	client_close(&c[2]);
	client_close(&c[0]);
	server_down();
}
END_TEST

START_TEST(test_idle_closed)
{
	server_up(0, 300);
	struct client c[2];
	struct answer a;
	client_open(&c[0]);
	client_sends(&c[0], "GET /metrics HTTP/1.1\r\n\r\n");
	client_answer(&c[0], &a, false);
	ck_assert_int_eq(a.status, 200);
	free(a.body);
	client_open(&c[1]);
	client_sends(&c[1], "GET /metr");
	/* Silent connections (one with half a request) are closed by the
	 * idle sweep: EOF arrives without our doing anything. */
	client_expect_eof(&c[0]);
	client_expect_eof(&c[1]);
	client_close(&c[0]);
	client_close(&c[1]);
	server_down();
}
END_TEST

START_TEST(test_trickle_is_closed)
{
	/* A header sent a byte every 20 ms never goes silent for the 300 ms
	 * limit, but the limit counts from the accept, not from the last
	 * byte: the server closes it. (500 rounds are only a hang guard.) */
	server_up(0, 300);
	struct client c;
	client_open(&c);
	client_sends(&c, "GET /metrics HTTP/1.1\r\nX-Slow: ");
	bool closed = false;
	for (int i = 0; i < 500 && !closed; i++) {
		usleep(20000);
		struct pollfd pfd = { .fd = c.fd, .events = POLLIN };
		if (poll(&pfd, 1, 0) == 1) {
			client_expect_eof(&c);
			closed = true;
		} else {
			ck_assert_int_eq(send(c.fd, "s", 1, MSG_NOSIGNAL), 1);
		}
	}
	ck_assert_msg(closed, "a trickling client kept its connection");
	client_close(&c);
	server_down();
}
END_TEST

START_TEST(test_many_idle_do_not_block)
{
	server_up(0, 0);
	enum { IDLE = 40 };
	static struct client idle[IDLE];
	for (int i = 0; i < IDLE; i++) {
		client_open(&idle[i]);
		client_sends(&idle[i], "GET /metrics HTTP/1.1\r\nHost:");  /* and stall */
	}
	struct client c;
	client_open(&c);
	client_sends(&c, "GET /metrics HTTP/1.1\r\n\r\n");
	struct answer a;
	client_answer(&c, &a, false);
	ck_assert_int_eq(a.status, 200);
	free(a.body);
	client_close(&c);
	for (int i = 0; i < IDLE; i++)
		client_close(&idle[i]);
	server_down();
}
END_TEST

START_TEST(test_addresses)
{
	static const char *const good[] = { "127.0.0.1:0", "0.0.0.0:9100", "localhost:65535",
					    "[::1]:9100", "[::]:0" };
	static const char *const bad[] = { "", "9100", ":9100", "127.0.0.1", "127.0.0.1:",
					   "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:9x",
					   "127.0.0.1:123456", "host.example:9100", "::1:9100",
					   "[::1]9100", "[::1:9100", "300.1.1.1:80" };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(metrics_http_addr_valid(good[i]), "%s refused", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!metrics_http_addr_valid(bad[i]), "%s accepted", bad[i]);
	ck_assert(!metrics_http_addr_valid(NULL));

	/* A port in use: the error of bind/listen, and nothing left open. */
	server_up(0, 0);
	char addr[32];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", srv.port);
	struct server first = srv;
	srv.addr = addr;
	srv.mh = NULL;
	ck_assert_int_eq(loop_thread_call(&srv.lt, do_start, &srv), 0);
	ck_assert_int_eq(srv.start_rc, -EADDRINUSE);
	srv.mh = first.mh;
	srv.addr = "nonsense";
	ck_assert_int_eq(loop_thread_call(&srv.lt, do_start, &srv), 0);
	ck_assert_int_eq(srv.start_rc, -EINVAL);
	srv.mh = first.mh;
	server_down();
}
END_TEST

static Suite *metrics_http_suite(void)
{
	Suite *s = suite_create("metrics_http");
	TCase *tc = tcase_create("http");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_get_exact);
	tcase_add_test(tc, test_head_no_body);
	tcase_add_test(tc, test_not_found_and_method);
	tcase_add_test(tc, test_garbage_and_oversized_head);
	tcase_add_test(tc, test_byte_at_a_time);
	tcase_add_test(tc, test_pipelined_then_close);
	tcase_add_test(tc, test_connection_cap);
	tcase_add_test(tc, test_idle_closed);
	tcase_add_test(tc, test_trickle_is_closed);
	tcase_add_test(tc, test_many_idle_do_not_block);
	tcase_add_test(tc, test_addresses);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	/* As the binaries do: a peer that closed must not kill the test. */
	signal(SIGPIPE, SIG_IGN);
	SRunner *sr = srunner_create(metrics_http_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
