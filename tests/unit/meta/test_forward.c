/*
 * test_forward.c — followers forward Submits and linearizable reads to
 * the leader (meta/node_fwd.c), three real members over loopback:
 *
 *   follower_only: a meta_client that knows only a follower gets every
 *     write and read answered, without one redirect; the first forwarded
 *     answer names the leader, so the client's next calls go there
 *     straight (the follower forwards a handful, not all of them).
 *   one_call: a single attempt at a follower (meta_client_call_member:
 *     no redirect followed, no retry) is answered, for a Submit and a
 *     HeadObject; a request already marked forwarded is not forwarded
 *     again (one hop at most): the follower redirects it.
 *
 * Before forwarding, every one of these got "not leader; leader=...".
 */
#include <check.h>
#include <netinet/in.h>
#include <raft.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/err.h"
#include "common/loop.h"
#include "meta/client.h"
#include "meta/node.h"
#include "meta_test_util.h"

#define NMEMB 3

static int bindable(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	int ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	if (ok && port == 0) {
		socklen_t l = sizeof(a);
		getsockname(fd, (struct sockaddr *)&a, &l);
		ok = ntohs(a.sin_port);
	}
	close(fd);
	return ok;
}

/* A port p with p and p + 1 both free on 127.0.0.1 (RPC and Raft). */
static int free_port_pair(void)
{
	for (int i = 0; i < 200; i++) {
		int p = bindable(0);
		if (p > 0 && p < 65534 && bindable(p + 1))
			return p;
	}
	ck_abort_msg("no free port pair");
	return 0;
}

struct member {
	struct loop_thread lt;
	struct meta_node *node;
	struct meta_node_opts o;
	char dir[64];
	char addr[32];
	int rc;
	atomic_bool closed;
	struct meta_node_info info;
};

static struct member mm[NMEMB];
static struct meta_peer peers[NMEMB];

static void start_fn(void *arg)
{
	struct member *m = arg;
	m->rc = meta_node_start(&m->lt.loop, &m->o, &m->node);
}

static void closed_cb(void *ud)
{
	atomic_store(&((struct member *)ud)->closed, true);
}

static void close_fn(void *arg)
{
	struct member *m = arg;
	meta_node_close(m->node, closed_cb, m);
}

static void info_fn(void *arg)
{
	struct member *m = arg;
	meta_node_info(m->node, &m->info);
}

static struct meta_node_info info(size_t i)
{
	ck_assert_int_eq(loop_thread_call(&mm[i].lt, info_fn, &mm[i]), 0);
	return mm[i].info;
}

/* Three members up; the leader's index. */
static int cluster_up(void)
{
	memset(mm, 0, sizeof(mm));
	for (size_t i = 0; i < NMEMB; i++) {
		tmpdir(mm[i].dir);
		snprintf(mm[i].addr, sizeof(mm[i].addr), "127.0.0.1:%d", free_port_pair());
		peers[i].id = i + 1;
		peers[i].addr = mm[i].addr;
	}
	for (size_t i = 0; i < NMEMB; i++) {
		struct member *m = &mm[i];
		m->o = (struct meta_node_opts){ .id = i + 1, .data_dir = m->dir, .listen = m->addr,
						.peers = peers, .n_peers = NMEMB,
						.election_timeout_ms = 300, .heartbeat_timeout_ms = 50,
						.pg_count = 16 };
		ck_assert_int_eq(loop_thread_start(&m->lt, "meta-member"), 0);
		ck_assert_int_eq(loop_thread_call(&m->lt, start_fn, m), 0);
		ck_assert_int_eq(m->rc, 0);
	}
	for (int t = 0; t < 10000; t += 20) {
		int leader = -1, count = 0;
		for (size_t i = 0; i < NMEMB; i++)
			if (info(i).role == RAFT_LEADER) {
				leader = (int)i;
				count++;
			}
		/* Followers must know it too, or they would redirect. */
		bool known = leader >= 0;
		for (size_t i = 0; known && i < NMEMB; i++)
			known = info(i).leader_id == (uint64_t)leader + 1;
		if (count == 1 && known)
			return leader;
		usleep(20000);
	}
	ck_abort_msg("no leader");
	return -1;
}

static void cluster_down(void)
{
	for (size_t i = 0; i < NMEMB; i++) {
		ck_assert_int_eq(loop_thread_call(&mm[i].lt, close_fn, &mm[i]), 0);
		for (int k = 0; k < 5000 && !atomic_load(&mm[i].closed); k++)
			usleep(1000);
		ck_assert(atomic_load(&mm[i].closed));
		loop_thread_stop(&mm[i].lt);
		rm_rf(mm[i].dir);
	}
}

/* ------------------------------------------------------------ calls */

struct sync_call {
	bool done;
	int err;
	uint32_t status;
	uint64_t gen;
};

static void on_submit(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct sync_call *s = ud;
	s->err = err;
	if (!err) {
		s->status = res->status;
		s->gen = res->generation;
	}
	s->done = true;
}

static void on_head(void *ud, int err, const ProtobufCMessage *resp)
{
	struct sync_call *s = ud;
	s->err = err;
	if (!err) {
		const Iolake__Meta__HeadObjectResponse *r = (const void *)resp;
		s->status = r->status;
		s->gen = r->record ? r->record->generation : 0;
	}
	s->done = true;
}

/* Any answer: only whether it succeeded. */
static void on_any(void *ud, int err, const ProtobufCMessage *resp)
{
	(void)resp;
	struct sync_call *s = ud;
	s->err = err;
	s->done = true;
}

static void wait_done(uv_loop_t *loop, struct sync_call *s)
{
	while (!s->done)
		uv_run(loop, UV_RUN_ONCE);
}

static void op_bucket(Iolake__Meta__Op *op, Iolake__Meta__CreateBucket *cb, Iolake__Meta__Bucket *b)
{
	iolake__meta__bucket__init(b);
	b->name = "bkt";
	b->owner = "tester";
	iolake__meta__create_bucket__init(cb);
	cb->bucket = b;
	iolake__meta__op__init(op);
	op->body_case = IOLAKE__META__OP__BODY_CREATE_BUCKET;
	op->create_bucket = cb;
}

/* PutObject key through cli: its generation. */
static uint64_t put(uv_loop_t *loop, struct meta_client *cli, const char *key)
{
	Iolake__Meta__ObjectRecord rec = IOLAKE__META__OBJECT_RECORD__INIT;
	rec.bucket = "bkt";
	rec.key = (char *)key;
	rec.size = 1;
	rec.etag = "e";
	rec.owner = "tester";
	rec.inline_data.data = (uint8_t *)"x";
	rec.inline_data.len = 1;
	Iolake__Meta__PutObject po = IOLAKE__META__PUT_OBJECT__INIT;
	po.record = &rec;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_PUT_OBJECT;
	op.put_object = &po;
	struct sync_call s = { 0 };
	ck_assert_int_eq(meta_client_submit(cli, &op, on_submit, &s), 0);
	wait_done(loop, &s);
	ck_assert_int_eq(s.err, 0);
	ck_assert_uint_eq(s.status, IOLAKE__META__STATUS__STATUS_OK);
	return s.gen;
}

static uint64_t head(uv_loop_t *loop, struct meta_client *cli, const char *key)
{
	Iolake__Meta__HeadObjectRequest q = IOLAKE__META__HEAD_OBJECT_REQUEST__INIT;
	q.bucket = "bkt";
	q.key = (char *)key;
	struct sync_call s = { 0 };
	ck_assert_int_eq(meta_client_call(cli, META_M_HEAD_OBJECT, &q.base, on_head, &s), 0);
	wait_done(loop, &s);
	ck_assert_int_eq(s.err, 0);
	ck_assert_uint_eq(s.status, IOLAKE__META__STATUS__STATUS_OK);
	return s.gen;
}

static struct meta_client *client_of(uv_loop_t *loop, const char *addr)
{
	const char *members[1] = { addr };
	struct meta_client_opts o = { .members = members, .n_members = 1,
				      .attempt_timeout_ms = 2000, .retry_for_ms = 20000 };
	struct meta_client *cli;
	ck_assert_int_eq(meta_client_new(loop, &o, &cli), 0);
	return cli;
}

static void client_close(uv_loop_t *loop, struct meta_client *cli)
{
	meta_client_close(cli);
	uv_run(loop, UV_RUN_DEFAULT);
	uv_loop_close(loop);
}

#define KEYS 50

START_TEST(follower_only)
{
	int leader = cluster_up();
	size_t f = (size_t)(leader + 1) % NMEMB;
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct meta_client *cli = client_of(&loop, mm[f].addr);
	uint64_t fwd0 = info(f).forwarded;

	Iolake__Meta__Op op;
	Iolake__Meta__CreateBucket cb;
	Iolake__Meta__Bucket b;
	op_bucket(&op, &cb, &b);
	struct sync_call s = { 0 };
	ck_assert_int_eq(meta_client_submit(cli, &op, on_submit, &s), 0);
	wait_done(&loop, &s);
	ck_assert_int_eq(s.err, 0);
	uint64_t gens[KEYS];
	for (unsigned i = 0; i < KEYS; i++) {
		char key[16];
		snprintf(key, sizeof(key), "k%u", i);
		gens[i] = put(&loop, cli, key);
		ck_assert_uint_eq(head(&loop, cli, key), gens[i]);
	}
	struct meta_client_stats st;
	meta_client_stats(cli, &st);
	uint64_t fwd = info(f).forwarded - fwd0;
	printf("follower_only: %u calls through member %zu (leader %d): %llu forwarded, "
	       "%llu redirects, %llu retries; the client now knows %zu members\n",
	       1 + 2 * KEYS, f + 1, leader + 1, (unsigned long long)fwd,
	       (unsigned long long)st.redirects, (unsigned long long)st.retries,
	       meta_client_member_count(cli));
	ck_assert_uint_eq(st.redirects, 0);
	ck_assert_uint_ge(fwd, 1);
	/* The first answer named the leader: the rest went there straight. */
	ck_assert_uint_le(fwd, 3);
	ck_assert_uint_eq(meta_client_member_count(cli), 2);
	client_close(&loop, cli);
	cluster_down();
}
END_TEST

START_TEST(one_call)
{
	int leader = cluster_up();
	size_t f = (size_t)(leader + 2) % NMEMB;
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct meta_client *cli = client_of(&loop, mm[f].addr);

	/* A Submit and a read, each one attempt at the follower. */
	Iolake__Meta__Op op;
	Iolake__Meta__CreateBucket cb;
	Iolake__Meta__Bucket b;
	op_bucket(&op, &cb, &b);
	Iolake__Meta__SubmitRequest sr = IOLAKE__META__SUBMIT_REQUEST__INIT;
	Iolake__Meta__Op *ops[1] = { &op };
	op.client_id = 77;
	op.request_id = 1;
	sr.ops = ops;
	sr.n_ops = 1;
	struct sync_call s = { 0 };
	ck_assert_int_eq(meta_client_call_member(cli, 0, META_M_SUBMIT, &sr.base, on_any, &s), 0);
	wait_done(&loop, &s);
	ck_assert_int_eq(s.err, 0);

	Iolake__Meta__HeadObjectRequest q = IOLAKE__META__HEAD_OBJECT_REQUEST__INIT;
	q.bucket = "bkt";
	q.key = "nope";
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(meta_client_call_member(cli, 0, META_M_HEAD_OBJECT, &q.base, on_head, &s), 0);
	wait_done(&loop, &s);
	ck_assert_int_eq(s.err, 0);
	ck_assert_uint_eq(s.status, IOLAKE__META__STATUS__STATUS_NOT_FOUND);

	/* Marked forwarded already: redirected (FAILED_PRECONDITION). */
	q.forwarded = 1;
	memset(&s, 0, sizeof(s));
	uint64_t fwd0 = info(f).forwarded;
	ck_assert_int_eq(meta_client_call_member(cli, 0, META_M_HEAD_OBJECT, &q.base, on_head, &s), 0);
	wait_done(&loop, &s);
	ck_assert_int_eq(s.err, -EIO);
	ck_assert_uint_eq(info(f).forwarded, fwd0);
	printf("one_call: a Submit and a HeadObject answered in one attempt at follower %zu; "
	       "a request marked forwarded was redirected\n", f + 1);
	client_close(&loop, cli);
	cluster_down();
}
END_TEST

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IONBF, 0);
	Suite *s = suite_create("meta_forward");
	TCase *tc = tcase_create("forward");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, follower_only);
	tcase_add_test(tc, one_call);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
