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
#include <signal.h>
#include <stdio.h>

#include "common/err.h"
#include "raft_cluster.h"

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

/* Three members up, every one naming the leader (or a follower would
 * redirect rather than forward); the leader's index. */
static int up(struct cluster *c)
{
	cluster_up(c, 0, 0);
	int leader = wait_leader_known(c, 10000);
	ck_assert_int_ge(leader, 0);
	return leader;
}

static uint64_t forwarded(struct cluster *c, size_t i)
{
	return m_info(c, i, NULL).forwarded;
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
	struct cluster c;
	int leader = up(&c);
	size_t f = (size_t)(leader + 1) % NMEMB;
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct meta_client *cli = client_of(&loop, c.m[f].addr);
	uint64_t fwd0 = forwarded(&c, f);

	Iolake__Meta__Op op;
	Iolake__Meta__CreateBucket cb;
	Iolake__Meta__Bucket b;
	op_bucket(&op, &cb, &b);
	protobuf_c_message_free_unpacked(run_call(&loop, cli, -1, &op.base), NULL);
	uint64_t gens[KEYS];
	for (unsigned i = 0; i < KEYS; i++) {
		char key[16];
		snprintf(key, sizeof(key), "k%u", i);
		gens[i] = put_sync(&loop, cli, key);
		ck_assert_uint_eq(head_gen(&loop, cli, key), gens[i]);
	}
	struct meta_client_stats st;
	meta_client_stats(cli, &st);
	uint64_t fwd = forwarded(&c, f) - fwd0;
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
	cluster_free(&c);
}
END_TEST

START_TEST(one_call)
{
	struct cluster c;
	int leader = up(&c);
	size_t f = (size_t)(leader + 2) % NMEMB;
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct meta_client *cli = client_of(&loop, c.m[f].addr);

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
	int err;
	ProtobufCMessage *resp = run_call_member(&loop, cli, 0, META_M_SUBMIT, &sr.base, &err);
	ck_assert_int_eq(err, 0);
	protobuf_c_message_free_unpacked(resp, NULL);

	Iolake__Meta__HeadObjectRequest q = IOLAKE__META__HEAD_OBJECT_REQUEST__INIT;
	q.bucket = "bkt";
	q.key = "nope";
	Iolake__Meta__HeadObjectResponse *hr =
		(void *)run_call_member(&loop, cli, 0, META_M_HEAD_OBJECT, &q.base, &err);
	ck_assert_int_eq(err, 0);
	ck_assert_uint_eq(hr->status, IOLAKE__META__STATUS__STATUS_NOT_FOUND);
	protobuf_c_message_free_unpacked(&hr->base, NULL);

	/* Marked forwarded already: redirected (FAILED_PRECONDITION). */
	q.forwarded = 1;
	uint64_t fwd0 = forwarded(&c, f);
	resp = run_call_member(&loop, cli, 0, META_M_HEAD_OBJECT, &q.base, &err);
	ck_assert_int_eq(err, -EIO);
	ck_assert_ptr_null(resp);
	ck_assert_uint_eq(forwarded(&c, f), fwd0);
	printf("one_call: a Submit and a HeadObject answered in one attempt at follower %zu; "
	       "a request marked forwarded was redirected\n", f + 1);
	client_close(&loop, cli);
	cluster_free(&c);
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
