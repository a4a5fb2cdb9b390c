/*
 * test_rpc_health.c — failure detection of the RPC layer against real
 * sockets: a server process that is SIGSTOPped (its kernel still accepts
 * and ACKs, nothing answers), a listening socket whose accept never
 * happens, a live server whose handler hangs (which must NOT count as a
 * dead peer), and a server back on its old port while the circuit for
 * that address is still open. The Echo server (common/proto/echo.proto)
 * runs in a forked child so it can be stopped and resumed; the client
 * runs on the test's loop with the default PING settings.
 *
 * The assertions are on behaviour: which status, which circuit state,
 * which counters moved. Times are printed; the only timed bounds are
 * generous ones (a dead peer is found in well under the 10 s deadline).
 */
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/loop.h"
#include "common/rpc.h"
#include "proto/echo.pb-c.h"

#define SVC_ECHO (&iolake__test__echo__descriptor)
enum { M_ECHO, M_HANG };

/* ------------------------------------------------------------ child server */

static void h_echo(struct rpc_req *r, void *ud)
{
	(void)ud;
	const Iolake__Test__EchoRequest *q = (const void *)rpc_req_msg(r);
	Iolake__Test__EchoResponse resp = IOLAKE__TEST__ECHO_RESPONSE__INIT;
	resp.seq = q->seq;
	rpc_respond(r, &resp.base, NULL);
}

static void h_hang(struct rpc_req *r, void *ud)
{
	(void)r;
	(void)ud; /* never answered: the child exits with it */
}

/* Fork a server on 127.0.0.1:want (0: any port); its port in *port. */
static pid_t spawn_server_at(int want, int *port)
{
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[0]);
		uv_loop_t loop;
		uv_loop_init(&loop);
		static const rpc_handler_fn handlers[] = { h_echo, h_hang, NULL };
		struct rpc_server *srv = rpc_server_new(&loop, NULL);
		int rc = srv ? rpc_server_add_service(srv, SVC_ECHO, handlers, NULL) : -ENOMEM;
		char addr[32];
		snprintf(addr, sizeof(addr), "127.0.0.1:%d", want);
		if (!rc)
			rc = rpc_server_listen(srv, addr);
		int got = rc ? -1 : rpc_server_port(srv);
		if (write(p[1], &got, sizeof(got)) != sizeof(got))
			_exit(1);
		close(p[1]);
		uv_run(&loop, UV_RUN_DEFAULT);
		_exit(0);
	}
	close(p[1]);
	ck_assert_int_eq(read(p[0], port, sizeof(*port)), (ssize_t)sizeof(*port));
	close(p[0]);
	ck_assert_int_gt(*port, 0);
	return pid;
}

static pid_t spawn_server(int *port)
{
	return spawn_server_at(0, port);
}

static void kill_server(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* ------------------------------------------------------------ client */

struct res {
	int done, status;
	char message[400];
	uint64_t t_start, t_done;
};

static uv_loop_t *client_loop;

static void on_res(void *ud, const struct rpc_result *r)
{
	struct res *x = ud;
	/* The callback may run in the timer phase: do not block in poll. */
	uv_stop(client_loop);
	x->done = 1;
	x->status = r->status;
	x->t_done = loop_now_ms();
	snprintf(x->message, sizeof(x->message), "%s", r->message);
}

static void call(uv_loop_t *loop, struct rpc_channel *ch, unsigned m, uint32_t timeout_ms,
		 struct res *x)
{
	memset(x, 0, sizeof(*x));
	Iolake__Test__EchoRequest q = IOLAKE__TEST__ECHO_REQUEST__INIT;
	struct rpc_call_opts o = { .timeout_ms = timeout_ms };
	x->t_start = loop_now_ms();
	client_loop = loop;
	rpc_call(ch, SVC_ECHO, m, &q.base, NULL, &o, on_res, x);
	while (!x->done)
		uv_run(loop, UV_RUN_ONCE);
}

static void on_tick(uv_timer_t *t)
{
	(void)t;
}

/* Run the loop for about ms (a ticking timer keeps it from blocking). */
static void run_for(uv_loop_t *loop, uint32_t ms)
{
	uv_timer_t t;
	uv_timer_init(loop, &t);
	uv_timer_start(&t, on_tick, 10, 10);
	uint64_t end = loop_now_ms() + ms;
	while (loop_now_ms() < end)
		uv_run(loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
}

/* Run until the channel's peer is in state want, at most ms; elapsed ms
 * or -1. */
static int64_t wait_state(uv_loop_t *loop, struct rpc_channel *ch, int want, uint32_t ms)
{
	uint64_t t0 = loop_now_ms();
	while (rpc_channel_peer_state(ch) != want) {
		if (loop_now_ms() - t0 > ms)
			return -1;
		run_for(loop, 10);
	}
	return (int64_t)(loop_now_ms() - t0);
}

static void close_all(uv_loop_t *loop, struct rpc_channel **ch, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		rpc_channel_close(ch[i]);
	while (uv_run(loop, UV_RUN_DEFAULT) != 0)
		;
	ck_assert_int_eq(uv_loop_close(loop), 0);
}

/* ------------------------------------------------------------ tests */

/* A server that stops answering (SIGSTOP: the kernel still ACKs): the
 * call in flight fails UNAVAILABLE in about busy + timeout, not at its
 * 10 s deadline; every later call, on any channel to that peer, fails at
 * once; probes keep failing while it is stopped; SIGCONT -> a probe
 * closes the circuit and calls succeed. */
START_TEST(stopped_server)
{
	int port;
	pid_t pid = spawn_server(&port);
	char target[64];
	snprintf(target, sizeof(target), "127.0.0.1:%d", port);
	uv_loop_t loop;
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	/* Retry after 0.8-1.2 s, not 50 ms: past its retry time a call on a
	 * channel with no connection is the half-open trial and would wait
	 * for the PING timeout instead of failing at once, so under load the
	 * "at once" checks below could see one. */
	struct rpc_channel_opts o = { .backoff_min_ms = 1000 };
	struct rpc_channel *ch[2];
	ch[0] = rpc_channel_open(&loop, target, &o);
	ck_assert_ptr_nonnull(ch[0]);
	struct rpc_health_stats s0, s1;
	rpc_health_stats(&s0);

	struct res x;
	call(&loop, ch[0], M_ECHO, 10000, &x);
	ck_assert_msg(x.status == RPC_OK, "%s: %s", rpc_status_name(x.status), x.message);
	ck_assert_int_eq(rpc_peer_state(target), RPC_PEER_UP);

	ck_assert_int_eq(kill(pid, SIGSTOP), 0);
	call(&loop, ch[0], M_ECHO, 10000, &x);
	printf("stopped server: call failed after %llu ms (deadline 10000): %s: %s\n",
	       (unsigned long long)(x.t_done - x.t_start), rpc_status_name(x.status), x.message);
	ck_assert_int_eq(x.status, RPC_UNAVAILABLE);
	ck_assert_msg(strstr(x.message, "declared dead"), "%s", x.message);
	ck_assert_uint_lt(x.t_done - x.t_start, 5000);
	ck_assert_int_ne(rpc_channel_peer_state(ch[0]), RPC_PEER_UP);
	ck_assert_int_ne(rpc_peer_state(target), RPC_PEER_UP);

	/* Known dead: at once, on this channel and on a new one. */
	call(&loop, ch[0], M_ECHO, 10000, &x);
	printf("next call: %s after %llu ms: %s\n", rpc_status_name(x.status),
	       (unsigned long long)(x.t_done - x.t_start), x.message);
	ck_assert_int_eq(x.status, RPC_UNAVAILABLE);
	ck_assert_msg(strstr(x.message, "circuit open"), "%s", x.message);
	ck_assert_uint_lt(x.t_done - x.t_start, 1000);
	ch[1] = rpc_channel_open(&loop, target, &o);
	ck_assert_int_ne(rpc_channel_peer_state(ch[1]), RPC_PEER_UP);
	call(&loop, ch[1], M_ECHO, 10000, &x);
	ck_assert_int_eq(x.status, RPC_UNAVAILABLE);
	ck_assert_msg(strstr(x.message, "circuit open"), "%s", x.message);

	/* Still stopped: probes connect (the kernel accepts) but no PING
	 * answer comes, so the circuit does not close. */
	run_for(&loop, 3000);
	ck_assert_int_ne(rpc_peer_state(target), RPC_PEER_UP);
	rpc_health_stats(&s1);
	printf("while stopped: probes %llu, dead declared %llu, circuit opens %llu, fast fails %llu\n",
	       (unsigned long long)(s1.probes - s0.probes),
	       (unsigned long long)(s1.dead_declared - s0.dead_declared),
	       (unsigned long long)(s1.circuit_opens - s0.circuit_opens),
	       (unsigned long long)(s1.fast_fails - s0.fast_fails));
	ck_assert_uint_ge(s1.dead_declared - s0.dead_declared, 1);
	ck_assert_uint_ge(s1.circuit_opens - s0.circuit_opens, 1);
	ck_assert_uint_ge(s1.fast_fails - s0.fast_fails, 2);
	ck_assert_uint_ge(s1.probes - s0.probes, 1);
	ck_assert_uint_ge(s1.pings - s0.pings, 2);

	ck_assert_int_eq(kill(pid, SIGCONT), 0);
	int64_t up = wait_state(&loop, ch[0], RPC_PEER_UP, 15000);
	printf("resumed: circuit closed after %lld ms\n", (long long)up);
	ck_assert_int_ge(up, 0);
	rpc_health_stats(&s1);
	ck_assert_uint_ge(s1.circuit_closes - s0.circuit_closes, 1);
	for (int i = 0; i < 2; i++) {
		call(&loop, ch[i], M_ECHO, 10000, &x);
		ck_assert_msg(x.status == RPC_OK, "channel %d: %s: %s", i,
			      rpc_status_name(x.status), x.message);
	}
	kill_server(pid);
	close_all(&loop, ch, 2);
}
END_TEST

/* A listening socket whose accept never happens: the TCP handshake
 * completes in the kernel, no HTTP/2 comes back. The first PING (sent on
 * connect) goes unanswered: dead in about the PING timeout. */
START_TEST(never_accepted)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	ck_assert_int_eq(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(s, 16), 0);
	ck_assert_int_eq(getsockname(s, (struct sockaddr *)&a, &len), 0);
	char target[64];
	snprintf(target, sizeof(target), "127.0.0.1:%d", ntohs(a.sin_port));
	uv_loop_t loop;
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	struct rpc_channel_opts o = { .backoff_min_ms = 1000 }; /* see stopped_server */
	struct rpc_channel *ch = rpc_channel_open(&loop, target, &o);
	struct res x;
	call(&loop, ch, M_ECHO, 10000, &x);
	printf("never accepted: %s after %llu ms (deadline 10000): %s\n",
	       rpc_status_name(x.status), (unsigned long long)(x.t_done - x.t_start), x.message);
	ck_assert_int_eq(x.status, RPC_UNAVAILABLE);
	ck_assert_msg(strstr(x.message, "declared dead"), "%s", x.message);
	ck_assert_uint_lt(x.t_done - x.t_start, 5000);
	call(&loop, ch, M_ECHO, 10000, &x);
	ck_assert_int_eq(x.status, RPC_UNAVAILABLE);
	ck_assert_msg(strstr(x.message, "circuit open"), "%s", x.message);
	ck_assert_uint_lt(x.t_done - x.t_start, 1000);
	close_all(&loop, &ch, 1);
	close(s);
}
END_TEST

/* A live server whose handler never answers is not a dead peer: PINGs
 * are answered, the call ends at its own deadline, the circuit stays
 * closed and the next call works. */
START_TEST(slow_handler_is_alive)
{
	int port;
	pid_t pid = spawn_server(&port);
	char target[64];
	snprintf(target, sizeof(target), "127.0.0.1:%d", port);
	uv_loop_t loop;
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	struct rpc_channel *ch = rpc_channel_open(&loop, target, NULL);
	struct rpc_health_stats s0, s1;
	rpc_health_stats(&s0);
	struct res x;
	call(&loop, ch, M_HANG, 4000, &x);
	rpc_health_stats(&s1);
	printf("hanging handler: %s after %llu ms; pings %llu, answered %llu\n",
	       rpc_status_name(x.status), (unsigned long long)(x.t_done - x.t_start),
	       (unsigned long long)(s1.pings - s0.pings),
	       (unsigned long long)(s1.ping_acks - s0.ping_acks));
	ck_assert_int_eq(x.status, RPC_DEADLINE_EXCEEDED);
	ck_assert_int_eq(rpc_channel_peer_state(ch), RPC_PEER_UP);
	ck_assert_uint_ge(s1.ping_acks - s0.ping_acks, 2); /* on connect + while busy */
	ck_assert_uint_eq(s1.dead_declared, s0.dead_declared);
	call(&loop, ch, M_ECHO, 4000, &x);
	ck_assert_int_eq(x.status, RPC_OK);
	kill_server(pid);
	close_all(&loop, &ch, 1);
}
END_TEST

/* A peer that comes back on its old address (an OSD restarted on its
 * port) while the circuit the process learnt for that address is still
 * open and nobody probes it (the channel that saw the failure is closed,
 * its probe timer with it): past the retry time the first call of a new
 * channel is the half-open trial and goes through, instead of failing
 * "circuit open" on stale knowledge. Before the retry time calls still
 * fail at once, and while the peer stays away each retry period lets one
 * trial call through (failing with the real cause), the rest fail at once. */
START_TEST(restarted_peer_new_channel)
{
	int port, again;
	pid_t pid = spawn_server(&port);
	char target[64];
	snprintf(target, sizeof(target), "127.0.0.1:%d", port);
	uv_loop_t loop;
	struct rpc_health_stats s0, s1;
	struct res x;

	/* The peer goes away; the only channel that knew is closed. */
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	struct rpc_channel *ch = rpc_channel_open(&loop, target, NULL);
	call(&loop, ch, M_ECHO, 10000, &x);
	ck_assert_msg(x.status == RPC_OK, "%s: %s", rpc_status_name(x.status), x.message);
	kill_server(pid);
	call(&loop, ch, M_ECHO, 10000, &x);
	ck_assert_int_eq(x.status, RPC_UNAVAILABLE);
	ck_assert_int_ne(rpc_peer_state(target), RPC_PEER_UP);
	close_all(&loop, &ch, 1);

	/* Back on the same port; past the retry time (<= 60 ms after the
	 * failure: backoff_min 50 ms, jitter < 1.2; sleeping longer only
	 * helps), the circuit is still open: nothing probed it. */
	pid = spawn_server_at(port, &again);
	ck_assert_int_eq(again, port);
	usleep(200 * 1000);
	ck_assert_int_eq(rpc_peer_state(target), RPC_PEER_DOWN);
	rpc_health_stats(&s0);
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	struct rpc_channel_opts slow = { .backoff_min_ms = 2000, .backoff_max_ms = 2000 };
	ch = rpc_channel_open(&loop, target, &slow);
	call(&loop, ch, M_ECHO, 10000, &x);
	rpc_health_stats(&s1);
	printf("restarted peer, new channel: %s after %llu ms: %s\n", rpc_status_name(x.status),
	       (unsigned long long)(x.t_done - x.t_start), x.message);
	ck_assert_msg(x.status == RPC_OK, "first call to a restarted peer: %s: %s",
		      rpc_status_name(x.status), x.message);
	ck_assert_uint_eq(s1.probes - s0.probes, 1);
	ck_assert_uint_eq(s1.fast_fails, s0.fast_fails);
	ck_assert_int_ge(wait_state(&loop, ch, RPC_PEER_UP, 5000), 0); /* its PING answered */
	call(&loop, ch, M_ECHO, 10000, &x);
	ck_assert_int_eq(x.status, RPC_OK);

	/* Away again, for good: the loss opens the circuit for 1.6-2.4 s
	 * (this channel's backoff). Within it a new channel fails at once. */
	kill_server(pid);
	call(&loop, ch, M_ECHO, 10000, &x);
	ck_assert_int_eq(x.status, RPC_UNAVAILABLE);
	close_all(&loop, &ch, 1);
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	ch = rpc_channel_open(&loop, target, NULL);
	call(&loop, ch, M_ECHO, 10000, &x);
	ck_assert_int_eq(x.status, RPC_UNAVAILABLE);
	ck_assert_msg(strstr(x.message, "circuit open"), "%s", x.message);
	close_all(&loop, &ch, 1);

	/* Past it: one trial, which fails with the cause (refused), not
	 * "circuit open"; the circuit opens again and the next call fails
	 * at once. */
	usleep(2600 * 1000);
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	ch = rpc_channel_open(&loop, target, &slow);
	rpc_health_stats(&s0);
	call(&loop, ch, M_ECHO, 10000, &x);
	rpc_health_stats(&s1);
	printf("peer still away, past the retry time: %s: %s\n", rpc_status_name(x.status),
	       x.message);
	ck_assert_int_eq(x.status, RPC_UNAVAILABLE);
	ck_assert_msg(!strstr(x.message, "circuit open"), "%s", x.message);
	ck_assert_uint_eq(s1.probes - s0.probes, 1);
	ck_assert_int_ne(rpc_peer_state(target), RPC_PEER_UP);
	call(&loop, ch, M_ECHO, 10000, &x);
	ck_assert_int_eq(x.status, RPC_UNAVAILABLE);
	ck_assert_msg(strstr(x.message, "circuit open"), "%s", x.message);
	close_all(&loop, &ch, 1);
}
END_TEST

/* In-process targets have no circuit and send no PING. */
START_TEST(local_has_no_circuit)
{
	uv_loop_t loop;
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	struct rpc_channel *ch = rpc_channel_open(&loop, "local:nobody-health", NULL);
	ck_assert_ptr_nonnull(ch);
	struct res x;
	call(&loop, ch, M_ECHO, 1000, &x);
	ck_assert_int_eq(x.status, RPC_UNAVAILABLE);
	ck_assert_int_eq(rpc_channel_peer_state(ch), RPC_PEER_UP);
	ck_assert_int_eq(rpc_peer_state("local:nobody-health"), RPC_PEER_UP);
	ck_assert_int_eq(rpc_channel_peer_state(NULL), RPC_PEER_DOWN);
	ck_assert_str_eq(rpc_peer_state_name(RPC_PEER_PROBING), "probing");
	close_all(&loop, &ch, 1);
}
END_TEST

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	Suite *s = suite_create("rpc_health");
	TCase *tc = tcase_create("health");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, stopped_server);
	tcase_add_test(tc, never_accepted);
	tcase_add_test(tc, slow_handler_is_alive);
	tcase_add_test(tc, restarted_peer_new_channel);
	tcase_add_test(tc, local_has_no_circuit);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
