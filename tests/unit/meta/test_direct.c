/*
 * test_direct.c — meta's direct reads (meta/node_direct.c): HeadObject and
 * GetVersion answered on the caller's thread, in process ("local:NAME"),
 * while the member is the root's only voter and leader; the loop's path
 * otherwise.
 *
 * Real members (meta/node.h on loop_threads, libraft over loopback, state
 * on /dev/shm) and two clients on the test's loop: one over "local:NAME"
 * (by reference: the direct handler runs on this thread) and one over
 * TCP (HTTP/2: always the loop's path). meta_node_direct_reads tells which
 * path answered. Checked:
 *  - same_answers: for a present key, an absent key, a delete marker, an
 *    absent bucket, a range id not open here (WRONG_RANGE), with and
 *    without the bucket record (and its usage), and GetVersion of a
 *    present and an absent version, the direct answer is byte for byte
 *    the loop's, and the direct path gave it;
 *  - put_then_head: a write acknowledged before a read is seen by it, for
 *    many PUT-then-HEAD pairs, each HEAD answered directly;
 *  - three_voters: in a 3-voter group nothing is answered directly, and
 *    the loop's path (the leader's, or a follower's forwarding) answers.
 *  - concurrent: HEADs on this thread while another thread's client PUTs
 *    the same key (the member's loop applying meanwhile): each HEAD sees
 *    at least the last PUT acknowledged before it began, never goes
 *    back, and most are answered directly (some decline: a write landed
 *    under them). Under TSan, the direct path against the loop's apply.
 *  - write_seq: the state's write sequence (what a direct read checks its
 *    rows against) moves with every apply and an import, never with a
 *    read, and a read bracketed across a write is told so.
 */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/log.h"
#include "group_cluster.h"

#define WAIT_MS 20000

static void start_members(struct cluster *c, size_t voters, const char *tag, char names[][32])
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < voters; i++) {
		struct member *m = &c->m[i];
		tmpdir(m->dir);
		snprintf(m->addr, sizeof(m->addr), "127.0.0.1:%d", free_port_pair());
		snprintf(names[i], 32, "direct-%s-%zu", tag, i + 1);
		c->peers[i].id = i + 1;
		c->peers[i].addr = m->addr;
	}
	for (size_t i = 0; i < voters; i++) {
		struct member *m = &c->m[i];
		m->o = (struct meta_node_opts){
			.id = i + 1,
			.data_dir = m->dir,
			.listen = m->addr,
			.local_name = names[i],
			.peers = c->peers,
			.n_peers = voters,
			.election_timeout_ms = 300,
			.heartbeat_timeout_ms = 50,
			.pg_count = 16,
			.cache_bytes = 16 << 20,
			.write_buffer_bytes = 8 << 20,
		};
		m_start(c, i);
	}
}

static struct meta_client *client(uv_loop_t *loop, const char *const *members, size_t n)
{
	struct meta_client_opts o = { .members = members, .n_members = n,
				      .attempt_timeout_ms = 1000, .retry_for_ms = 30000 };
	struct meta_client *cli;
	ck_assert_int_eq(meta_client_new(loop, &o, &cli), 0);
	return cli;
}

static void client_close(uv_loop_t *loop, struct meta_client *cli)
{
	meta_client_close(cli);
	for (int i = 0; i < 10; i++)
		uv_run(loop, UV_RUN_NOWAIT);
}

/* One call (not routed by range: the group and range id as given); the
 * answer (the caller frees it) or NULL with *err. */
static ProtobufCMessage *call(uv_loop_t *loop, struct meta_client *cli, unsigned method,
			      const ProtobufCMessage *req, int *err)
{
	struct sync_call s = { 0 };
	ck_assert_int_eq(meta_client_call_direct(cli, method, req, on_sync, &s), 0);
	run_until(loop, &s.done);
	*err = s.err;
	return s.resp;
}

static void submit_ok(uv_loop_t *loop, struct meta_client *cli, struct tb *t)
{
	for (size_t i = 0; i < t->b.n_ops; i++) {
		int err;
		Iolake__Meta__OpResult *r = submit(loop, cli, 0, t->ops[i], &err);
		ck_assert_int_eq(err, 0);
		ck_assert_int_eq(r->status, IOLAKE__META__STATUS__STATUS_OK);
		free_msg(r);
	}
	tb_free(t);
}

static uint64_t direct_reads(struct cluster *c, size_t voters)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < voters; i++)
		sum += meta_node_direct_reads(c->m[i].node);
	return sum;
}

/* Until one HeadObject over cli is answered directly (the tick publishes
 * the root once it leads with an entry of its term applied). */
static void wait_published(uv_loop_t *loop, struct meta_client *cli, struct cluster *c)
{
	Iolake__Meta__HeadObjectRequest q = IOLAKE__META__HEAD_OBJECT_REQUEST__INIT;
	q.bucket = "bkt";
	q.key = "nothing";
	uint64_t t0 = loop_now_ms();
	for (;;) {
		uint64_t before = direct_reads(c, 1);
		int err;
		free_msg(call(loop, cli, META_M_HEAD_OBJECT, &q.base, &err));
		ck_assert_int_eq(err, 0);
		if (direct_reads(c, 1) > before)
			return;
		ck_assert_msg(loop_now_ms() - t0 < WAIT_MS, "the root was never published");
		usleep(20000);
	}
}

/* req over the local client (direct) and over TCP (the loop): the same
 * bytes; the first answered directly, the second not. */
static void same(uv_loop_t *loop, struct cluster *c, struct meta_client *loc,
		 struct meta_client *tcp, unsigned method, const ProtobufCMessage *req,
		 int want_status)
{
	int err;
	uint64_t d0 = direct_reads(c, 1);
	ProtobufCMessage *a = call(loop, loc, method, req, &err);
	ck_assert_int_eq(err, 0);
	ck_assert_uint_eq(direct_reads(c, 1), d0 + 1);
	ProtobufCMessage *b = call(loop, tcp, method, req, &err);
	ck_assert_int_eq(err, 0);
	ck_assert_uint_eq(direct_reads(c, 1), d0 + 1);
	size_t na = protobuf_c_message_get_packed_size(a);
	size_t nb = protobuf_c_message_get_packed_size(b);
	ck_assert_uint_eq(na, nb);
	uint8_t *pa = malloc(na + 1), *pb = malloc(nb + 1);
	protobuf_c_message_pack(a, pa);
	protobuf_c_message_pack(b, pb);
	ck_assert_msg(memcmp(pa, pb, na) == 0, "direct and loop answers differ");
	/* status is field 1 of both responses */
	ck_assert_int_eq(*(const int *)((const char *)a +
		protobuf_c_message_descriptor_get_field(a->descriptor, 1)->offset), want_status);
	free(pa);
	free(pb);
	free_msg(a);
	free_msg(b);
}

START_TEST(same_answers)
{
	struct cluster c;
	char names[NMEMB][32];
	start_members(&c, 1, "same", names);
	uv_loop_t loop;
	uv_loop_init(&loop);
	char la[128];
	snprintf(la, sizeof(la), "local:%s", names[0]);
	const char *lm[] = { la }, *tm[] = { c.m[0].addr };
	struct meta_client *loc = client(&loop, lm, 1), *tcp = client(&loop, tm, 1);

	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "bkt", "alice");
	tb_create_bucket(t, 0, 0, "vbk", "alice");
	tb_put(t, 0, 0, "bkt", "here", 100);
	tb_put(t, 0, 0, "bkt", "big", 1 << 20);
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__SetBucketVersioning *v = tb_alloc(t, sizeof(*v));
	iolake__meta__set_bucket_versioning__init(v);
	v->name = tb_str(t, "vbk");
	v->state = IOLAKE__META__VERSIONING_STATE__VERSIONING_ENABLED;
	op->body_case = IOLAKE__META__OP__BODY_SET_BUCKET_VERSIONING;
	op->set_bucket_versioning = v;
	submit_ok(&loop, loc, t);
	/* vb/gone: a version, then a delete marker over it */
	t = tb_new();
	tb_put(t, 0, 0, "vbk", "gone", 10);
	t->ops[0]->versioning = IOLAKE__META__VERSIONING_STATE__VERSIONING_ENABLED;
	int err;
	Iolake__Meta__OpResult *pr = submit(&loop, loc, 0, t->ops[0], &err);
	ck_assert_int_eq(err, 0);
	ck_assert_int_eq(pr->status, IOLAKE__META__STATUS__STATUS_OK);
	char vid[64];
	snprintf(vid, sizeof(vid), "%s", pr->version_id);
	ck_assert(vid[0]);
	char vid2[64];   /* well formed, never written */
	snprintf(vid2, sizeof(vid2), "%s", vid);
	vid2[strlen(vid2) - 1] = vid2[strlen(vid2) - 1] == '0' ? '1' : '0';
	free_msg(pr);
	tb_free(t);
	t = tb_new();
	tb_delete(t, 0, 0, "vbk", "gone");
	t->ops[0]->versioning = IOLAKE__META__VERSIONING_STATE__VERSIONING_ENABLED;
	t->ops[0]->time_ms = 1700000000000ULL;
	submit_ok(&loop, loc, t);
	wait_published(&loop, loc, &c);

	const int OK = IOLAKE__META__STATUS__STATUS_OK, NF = IOLAKE__META__STATUS__STATUS_NOT_FOUND;
	const int WR = IOLAKE__META__STATUS__STATUS_WRONG_RANGE;
	const int IN = IOLAKE__META__STATUS__STATUS_INVALID;
	struct { const char *bucket, *key; bool with_bucket, no_usage; uint64_t range_id; int st; }
	heads[] = {
		{ "bkt", "here", false, false, 0, OK },
		{ "bkt", "big", false, false, 0, OK },
		{ "bkt", "absent", false, false, 0, NF },
		{ "vbk", "gone", false, false, 0, NF },       /* the marker rides along */
		{ "nobkt", "k", false, false, 0, NF },         /* no such bucket */
		{ "bkt", "here", true, false, 0, OK },         /* with the bucket, usage */
		{ "bkt", "here", true, true, 0, OK },          /* with the bucket, no usage */
		{ "nobkt", "k", true, false, 0, NF },
		{ "bkt", "here", false, false, 777, WR },      /* a range not open here */
		{ "bkt", "here", true, false, 777, WR },
	};
	for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
		Iolake__Meta__HeadObjectRequest q = IOLAKE__META__HEAD_OBJECT_REQUEST__INIT;
		q.bucket = (char *)heads[i].bucket;
		q.key = (char *)heads[i].key;
		q.with_bucket = heads[i].with_bucket;
		q.no_usage = heads[i].no_usage;
		q.range_id = heads[i].range_id;
		same(&loop, &c, loc, tcp, META_M_HEAD_OBJECT, &q.base, heads[i].st);
	}
	struct { const char *key, *vid; uint64_t range_id; int st; } vers[] = {
		{ "gone", vid, 0, OK },
		{ "gone", "00000000000000000000", 0, IN },   /* malformed id */
		{ "gone", vid2, 0, NF },
		{ "absent", vid, 0, NF },
		{ "gone", vid, 777, WR },
	};
	for (size_t i = 0; i < sizeof(vers) / sizeof(vers[0]); i++) {
		Iolake__Meta__GetVersionRequest q = IOLAKE__META__GET_VERSION_REQUEST__INIT;
		q.bucket = "vbk";
		q.key = (char *)vers[i].key;
		q.version_id = (char *)vers[i].vid;
		q.range_id = vers[i].range_id;
		same(&loop, &c, loc, tcp, META_M_GET_VERSION, &q.base, vers[i].st);
	}

	client_close(&loop, loc);
	client_close(&loop, tcp);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	cluster_free(&c);
}
END_TEST

/* One member, published for direct reads, with bucket "bkt" (and key
 * put_key in it, size 0, unless NULL); la gets its local address, the
 * returned client is on *loop. names outlives the member (its options
 * point into it). */
static struct meta_client *one_member(struct cluster *c, char names[][32], const char *tag,
				      uv_loop_t *loop, char la[128], const char *put_key)
{
	start_members(c, 1, tag, names);
	uv_loop_init(loop);
	snprintf(la, 128, "local:%s", names[0]);
	const char *lm[] = { la };
	struct meta_client *loc = client(loop, lm, 1);
	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "bkt", "alice");
	if (put_key)
		tb_put(t, 0, 0, "bkt", put_key, 0);
	submit_ok(loop, loc, t);
	wait_published(loop, loc, c);
	return loc;
}

START_TEST(put_then_head)
{
	struct cluster c;
	char names[NMEMB][32], la[128];
	uv_loop_t loop;
	struct meta_client *loc = one_member(&c, names, "pth", &loop, la, NULL);
	struct tb *t;

	enum { PAIRS = 300 };
	uint64_t d0 = direct_reads(&c, 1);
	for (unsigned i = 0; i < PAIRS; i++) {
		char key[32];
		/* a few keys, each written again: an old record would show */
		snprintf(key, sizeof(key), "k%u", i % 7);
		t = tb_new();
		tb_put(t, 0, 0, "bkt", key, 1 + i);
		submit_ok(&loop, loc, t);
		Iolake__Meta__HeadObjectRequest q = IOLAKE__META__HEAD_OBJECT_REQUEST__INIT;
		q.bucket = "bkt";
		q.key = key;
		int err;
		Iolake__Meta__HeadObjectResponse *r = (void *)call(&loop, loc, META_M_HEAD_OBJECT,
								   &q.base, &err);
		ck_assert_int_eq(err, 0);
		ck_assert_int_eq(r->status, IOLAKE__META__STATUS__STATUS_OK);
		ck_assert_uint_eq(r->record->size, 1 + i);
		free_msg(r);
	}
	/* Each HEAD directly: nothing else writes here, so none declined. */
	ck_assert_uint_eq(direct_reads(&c, 1) - d0, PAIRS);

	client_close(&loop, loc);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	cluster_free(&c);
}
END_TEST

START_TEST(three_voters)
{
	struct cluster c;
	char names[NMEMB][32];
	start_members(&c, NMEMB, "three", names);
	uv_loop_t loop;
	uv_loop_init(&loop);
	char la[NMEMB][128];
	const char *lm[NMEMB];
	for (size_t i = 0; i < NMEMB; i++) {
		snprintf(la[i], sizeof(la[i]), "local:%s", names[i]);
		lm[i] = la[i];
	}
	struct meta_client *all = client(&loop, lm, NMEMB);
	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "bkt", "alice");
	tb_put(t, 0, 0, "bkt", "here", 5);
	submit_ok(&loop, all, t);
	/* Past a few ticks: whatever could be published would be. */
	usleep(500000);
	for (int i = 0; i < 50; i++) {
		Iolake__Meta__HeadObjectRequest q = IOLAKE__META__HEAD_OBJECT_REQUEST__INIT;
		q.bucket = "bkt";
		q.key = "here";
		int err;
		Iolake__Meta__HeadObjectResponse *r = (void *)call(&loop, all, META_M_HEAD_OBJECT,
								   &q.base, &err);
		ck_assert_int_eq(err, 0);
		ck_assert_int_eq(r->status, IOLAKE__META__STATUS__STATUS_OK);
		ck_assert_uint_eq(r->record->size, 5);
		free_msg(r);
	}
	/* Each member, the follower ones too, one at a time (forwarded). */
	for (size_t i = 0; i < NMEMB; i++) {
		struct meta_client *one = client(&loop, &lm[i], 1);
		Iolake__Meta__HeadObjectRequest q = IOLAKE__META__HEAD_OBJECT_REQUEST__INIT;
		q.bucket = "bkt";
		q.key = "here";
		int err;
		Iolake__Meta__HeadObjectResponse *r = (void *)call(&loop, one, META_M_HEAD_OBJECT,
								   &q.base, &err);
		ck_assert_int_eq(err, 0);
		ck_assert_int_eq(r->status, IOLAKE__META__STATUS__STATUS_OK);
		free_msg(r);
		client_close(&loop, one);
	}
	ck_assert_uint_eq(direct_reads(&c, NMEMB), 0);

	client_close(&loop, all);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	cluster_free(&c);
}
END_TEST

struct writer {
	const char *addr;
	unsigned n;
	atomic_uint acked;          /* the size of the last PUT acknowledged */
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct meta_client *cli = client(&loop, &w->addr, 1);
	for (unsigned i = 1; i <= w->n; i++) {
		struct tb *t = tb_new();
		tb_put(t, 0, 0, "bkt", "c", i);
		submit_ok(&loop, cli, t);
		atomic_store(&w->acked, i);
	}
	client_close(&loop, cli);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	return NULL;
}

START_TEST(concurrent)
{
	struct cluster c;
	char names[NMEMB][32], la[128];
	uv_loop_t loop;
	struct meta_client *loc = one_member(&c, names, "conc", &loop, la, "c");

	struct writer w = { .addr = la, .n = 400 };
	atomic_init(&w.acked, 0);
	pthread_t th;
	ck_assert_int_eq(pthread_create(&th, NULL, writer_main, &w), 0);
	uint64_t d0 = direct_reads(&c, 1), last = 0;
	unsigned heads = 0;
	while (last < w.n) {
		unsigned before = atomic_load(&w.acked);
		Iolake__Meta__HeadObjectRequest q = IOLAKE__META__HEAD_OBJECT_REQUEST__INIT;
		q.bucket = "bkt";
		q.key = "c";
		int err;
		Iolake__Meta__HeadObjectResponse *r = (void *)call(&loop, loc, META_M_HEAD_OBJECT,
								   &q.base, &err);
		ck_assert_int_eq(err, 0);
		ck_assert_int_eq(r->status, IOLAKE__META__STATUS__STATUS_OK);
		ck_assert_uint_ge(r->record->size, before);   /* acknowledged before: seen */
		ck_assert_uint_ge(r->record->size, last);     /* never back */
		last = r->record->size;
		free_msg(r);
		heads++;
	}
	pthread_join(th, NULL);
	uint64_t direct = direct_reads(&c, 1) - d0;
	printf("concurrent: %u HEADs during %u PUTs, %llu answered directly\n", heads, w.n,
	       (unsigned long long)direct);
	ck_assert_uint_gt(direct, heads / 2);

	client_close(&loop, loc);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	cluster_free(&c);
}
END_TEST

START_TEST(write_seq)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = NULL;
	ck_assert_int_eq(meta_state_open(dir, NULL, &s), 0);
	static struct meta_op_result res[META_BATCH_MAX_OPS];
	uint64_t s0 = meta_state_read_seq(s);
	ck_assert_uint_eq(s0 & 1, 0);
	ck_assert(meta_state_read_same(s, s0));
	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "bkt", "alice");
	ck_assert_int_eq(tb_apply(s, 1, t, res), 1);   /* frees t */
	/* A read begun at s0 spans the apply: not one state. */
	ck_assert(!meta_state_read_same(s, s0));
	uint64_t s1 = meta_state_read_seq(s);
	ck_assert_uint_eq(s1, s0 + 2);
	Iolake__Meta__Bucket *b = NULL;
	ck_assert_int_eq(meta_state_get_bucket(s, "bkt", &b), 0);
	meta_state_free_msg(b);
	ck_assert(meta_state_read_same(s, s1));   /* reads move nothing */
	/* An odd sequence (a write under way) is never "the same". */
	ck_assert(!meta_state_read_same(s, s1 + 1));
	uint8_t *ex = NULL;
	size_t len = 0;
	ck_assert_int_eq(meta_state_export(s, malloc, free, &ex, &len), 0);
	ck_assert_int_eq(meta_state_import(s, ex, len), 0);
	free(ex);
	ck_assert(!meta_state_read_same(s, s1));
	ck_assert_uint_eq(meta_state_read_seq(s), s1 + 2);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *lv = getenv("TEST_LOG_LEVEL");
	log_set_level(lv && log_parse_level(lv) >= 0 ? log_parse_level(lv) : LOG_LEVEL_WARN);
	Suite *s = suite_create("direct");
	TCase *tc = tcase_create("direct");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, same_answers);
	tcase_add_test(tc, put_then_head);
	tcase_add_test(tc, three_voters);
	tcase_add_test(tc, concurrent);
	tcase_add_test(tc, write_seq);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
