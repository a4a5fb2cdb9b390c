/*
 * test_gw_bread.c — GetBucket reads shared per gateway loop
 * (gateway/gw_bread.h), against three real meta members over loopback
 * (tests/unit/meta/raft_cluster.h) and a real meta client:
 *
 *   shared_after_asking: reads asked for while one is out wait for it
 *     and go out together as one GetBucket, sent after they asked: the
 *     first asker's answer says no bucket; a bucket made (acknowledged)
 *     while that read was out is seen by every read asked for after the
 *     make, though the read out was sent before it. Counted: 2 calls for
 *     1 + W askers, W - 1 shared.
 *   slot_taken: a bucket whose slot another bucket's read holds gets a
 *     call of its own, answered with its own record.
 *   close_with_reads_out: the client closed with a read out and askers
 *     waiting: each asker is answered once (ESHUTDOWN for the waiters),
 *     and freeing after the close leaks nothing (ASan build).
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>

#include "../meta/raft_cluster.h"
#include "common/err.h"
#include "gateway/gw_bread.h"

#define WAITERS 8

struct asker {
	struct gw_bread_waiter w;
	int calls;                  /* answers received (must end at 1) */
	int err;
	int status;                 /* GetBucketResponse.status */
	char name[64];              /* the record's name, "" without one */
	uint64_t sent_at_ask;       /* iolake_gw_bucket_reads_total when it asked */
	uint64_t sent_at_answer;
};

static struct metrics_registry *reg;

static uint64_t counter(const char *name)
{
	struct metrics_counter *c = metrics_counter_find(reg, name, NULL);
	ck_assert_ptr_nonnull(c);
	return metrics_counter_get(c);
}

static void on_answer(void *ud, int err, const ProtobufCMessage *resp)
{
	struct asker *a = ud;
	a->calls++;
	a->err = err;
	a->sent_at_answer = counter("iolake_gw_bucket_reads_total");
	if (!err) {
		const Iolake__Meta__GetBucketResponse *r = (const void *)resp;
		a->status = (int)r->status;
		snprintf(a->name, sizeof(a->name), "%s", r->bucket ? r->bucket->name : "");
	}
}

static void ask(struct gw_bread *b, const char *bucket, struct asker *a)
{
	memset(a, 0, sizeof(*a));
	a->sent_at_ask = counter("iolake_gw_bucket_reads_total");
	ck_assert_int_eq(gw_bread_get(b, bucket, &a->w, on_answer, a), 0);
}

static void make_bucket(uv_loop_t *loop, struct meta_client *cli, const char *name)
{
	Iolake__Meta__Bucket bk = IOLAKE__META__BUCKET__INIT;
	bk.name = (char *)name;
	bk.owner = "tester";
	Iolake__Meta__CreateBucket cb = IOLAKE__META__CREATE_BUCKET__INIT;
	cb.bucket = &bk;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_CREATE_BUCKET;
	op.create_bucket = &cb;
	Iolake__Meta__OpResult *r = (void *)run_call(loop, cli, -1, &op.base);
	ck_assert_uint_eq(r->status, IOLAKE__META__STATUS__STATUS_OK);
	protobuf_c_message_free_unpacked(&r->base, NULL);
}

static struct meta_client *client_of(uv_loop_t *loop, struct cluster *c, int leader)
{
	const char *members[1] = { c->m[leader].addr };
	struct meta_client_opts o = { .members = members, .n_members = 1,
				      .attempt_timeout_ms = 2000, .retry_for_ms = 20000 };
	struct meta_client *cli;
	ck_assert_int_eq(meta_client_new(loop, &o, &cli), 0);
	return cli;
}

static void run_until(uv_loop_t *loop, const struct asker *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		while (a[i].calls == 0)
			uv_run(loop, UV_RUN_ONCE);
}

START_TEST(shared_after_asking)
{
	struct cluster c;
	cluster_up(&c, 0, 0);
	int leader = wait_leader_known(&c, 10000);
	ck_assert_int_ge(leader, 0);
	uv_loop_t loop;
	uv_loop_init(&loop);
	reg = metrics_registry_new();
	struct meta_client *cli = client_of(&loop, &c, leader);
	struct gw_bread *b = gw_bread_new(cli, GW_BREAD_SLOTS, reg);
	ck_assert_ptr_nonnull(b);

	/* First: "fresh" does not exist yet. While its read is out, the
	 * bucket is made; the askers that come after the make must see it. */
	struct asker first, w[WAITERS];
	ask(b, "fresh", &first);
	ck_assert_uint_eq(first.sent_at_ask, 0);
	ck_assert_uint_eq(counter("iolake_gw_bucket_reads_total"), 1);
	/* A second client, so that the make does not wait on this loop's
	 * read (it is answered on this loop too: run until it is). */
	struct meta_client *mk = client_of(&loop, &c, leader);
	make_bucket(&loop, mk, "fresh");
	/* The first read may have come back while the make ran; ask
	 * another read out first if it did, so that the waiters below do
	 * wait behind one sent before the make. */
	struct asker pre;
	bool pre_used = false;
	if (first.calls) {
		ask(b, "fresh", &pre);
		pre_used = true;
	}
	for (int i = 0; i < WAITERS; i++)
		ask(b, "fresh", &w[i]);
	uint64_t sent_before = counter("iolake_gw_bucket_reads_total");
	ck_assert_uint_eq(sent_before, pre_used ? 2 : 1);   /* the waiters sent nothing yet */
	run_until(&loop, &first, 1);
	if (pre_used)
		run_until(&loop, &pre, 1);
	run_until(&loop, w, WAITERS);
	printf("shared_after_asking: first read %s (status %d), %d waiters answered by "
	       "%llu calls in all, %llu shared\n",
	       first.name[0] ? "found the bucket" : "found no bucket", first.status, WAITERS,
	       (unsigned long long)counter("iolake_gw_bucket_reads_total"),
	       (unsigned long long)counter("iolake_gw_bucket_reads_shared_total"));
	ck_assert_int_eq(first.calls, 1);
	ck_assert_int_eq(first.err, 0);
	for (int i = 0; i < WAITERS; i++) {
		ck_assert_int_eq(w[i].calls, 1);
		ck_assert_int_eq(w[i].err, 0);
		/* Answered by a call sent after it asked, which saw the make. */
		ck_assert_uint_gt(w[i].sent_at_answer, w[i].sent_at_ask);
		ck_assert_int_eq(w[i].status, IOLAKE__META__STATUS__STATUS_OK);
		ck_assert_str_eq(w[i].name, "fresh");
	}
	/* One call for all the waiters: W - 1 of them shared it. */
	ck_assert_uint_eq(counter("iolake_gw_bucket_reads_total"), sent_before + 1);
	ck_assert_uint_eq(counter("iolake_gw_bucket_reads_shared_total"), WAITERS - 1);

	/* Nothing out: the next read is a call of its own, answered alone. */
	struct asker again;
	ask(b, "fresh", &again);
	run_until(&loop, &again, 1);
	ck_assert_str_eq(again.name, "fresh");
	ck_assert_uint_eq(counter("iolake_gw_bucket_reads_shared_total"), WAITERS - 1);

	meta_client_close(mk);
	meta_client_close(cli);
	gw_bread_free(b);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	metrics_registry_free(reg);
	cluster_free(&c);
}
END_TEST

/* A name whose slot (FNV-1a over GW_BREAD_SLOTS) is name0's. */
static void same_slot(const char *name0, char out[32])
{
	uint32_t h0 = 2166136261u;
	for (const char *p = name0; *p; p++)
		h0 = (h0 ^ (uint8_t)*p) * 16777619u;
	for (unsigned i = 0;; i++) {
		snprintf(out, 32, "other%u", i);
		uint32_t h = 2166136261u;
		for (const char *p = out; *p; p++)
			h = (h ^ (uint8_t)*p) * 16777619u;
		if ((h & (GW_BREAD_SLOTS - 1)) == (h0 & (GW_BREAD_SLOTS - 1)))
			return;
	}
}

START_TEST(slot_taken)
{
	struct cluster c;
	cluster_up(&c, 0, 0);
	int leader = wait_leader_known(&c, 10000);
	ck_assert_int_ge(leader, 0);
	uv_loop_t loop;
	uv_loop_init(&loop);
	reg = metrics_registry_new();
	struct meta_client *cli = client_of(&loop, &c, leader);
	char other[32];
	same_slot("mine", other);
	make_bucket(&loop, cli, "mine");
	make_bucket(&loop, cli, other);
	struct gw_bread *b = gw_bread_new(cli, GW_BREAD_SLOTS, reg);
	struct asker a[3];
	ask(b, "mine", &a[0]);
	ask(b, other, &a[1]);   /* slot held by "mine": its own call */
	ask(b, other, &a[2]);   /* and that one is not shared either */
	ck_assert_uint_eq(counter("iolake_gw_bucket_reads_total"), 3);
	run_until(&loop, a, 3);
	ck_assert_str_eq(a[0].name, "mine");
	ck_assert_str_eq(a[1].name, other);
	ck_assert_str_eq(a[2].name, other);
	ck_assert_uint_eq(counter("iolake_gw_bucket_reads_shared_total"), 0);
	meta_client_close(cli);
	gw_bread_free(b);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	metrics_registry_free(reg);
	cluster_free(&c);
}
END_TEST

START_TEST(close_with_reads_out)
{
	struct cluster c;
	cluster_up(&c, 0, 0);
	int leader = wait_leader_known(&c, 10000);
	ck_assert_int_ge(leader, 0);
	uv_loop_t loop;
	uv_loop_init(&loop);
	reg = metrics_registry_new();
	struct meta_client *cli = client_of(&loop, &c, leader);
	struct gw_bread *b = gw_bread_new(cli, GW_BREAD_SLOTS, reg);
	struct asker a[4];
	for (int i = 0; i < 4; i++)
		ask(b, "gone", &a[i]);
	meta_client_close(cli);   /* answers the call out; the waiters get ESHUTDOWN */
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(a[i].calls, 1);
		ck_assert_int_eq(a[i].err, IOL_ESHUTDOWN);
	}
	ck_assert_uint_eq(counter("iolake_gw_bucket_reads_total"), 1);
	gw_bread_free(b);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	metrics_registry_free(reg);
	cluster_free(&c);
}
END_TEST

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	Suite *s = suite_create("gw_bread");
	TCase *tc = tcase_create("bread");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, shared_after_asking);
	tcase_add_test(tc, slot_taken);
	tcase_add_test(tc, close_with_reads_out);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
