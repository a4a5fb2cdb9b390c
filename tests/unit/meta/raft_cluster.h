/*
 * raft_cluster.h — the in-process meta cluster the Raft tests share:
 * members (meta/node.h) on their own loop_threads over loopback TCP (RPC
 * and Raft), data under /dev/shm; a put load on a loop_thread of its own
 * through meta/client.h (every acknowledged generation kept); checks of
 * a member's state against it; synchronous client calls (any method, one
 * attempt at one member, a put, a head). Header-only (static inline) like
 * meta_test_util.h: one source per test binary. Used by test_raft.c,
 * test_snap_install.c and test_forward.c.
 */
#ifndef TESTS_UNIT_META_RAFT_CLUSTER_H
#define TESTS_UNIT_META_RAFT_CLUSTER_H

#include <check.h>
#include <dirent.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <raft.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/loop.h"
#include "meta/client.h"
#include "meta/node.h"
#include "meta_test_util.h"

#define NMEMB 3

static inline uint32_t test_seed(const char *name)
{
	const char *env = getenv("RAFT_TEST_SEED");
	uint32_t seed = env ? (uint32_t)strtoul(env, NULL, 0) : (uint32_t)loop_now_ns() | 1;
	printf("%s: seed=%u (replay: RAFT_TEST_SEED=%u)\n", name, seed, seed);
	fflush(stdout);
	return seed;
}

/* ------------------------------------------------------------ members */

struct member {
	struct loop_thread lt;
	struct meta_node *node;
	struct meta_node_opts o;
	char dir[64];
	char addr[32];
	bool running;
	int rc;
	atomic_bool closed;
};

struct cluster {
	struct member m[NMEMB];
	struct meta_peer peers[NMEMB];
	size_t n;
};

static inline void m_start_fn(void *arg)
{
	struct member *m = arg;
	m->rc = meta_node_start(&m->lt.loop, &m->o, &m->node);
}

static inline void m_start(struct cluster *c, size_t i)
{
	struct member *m = &c->m[i];
	ck_assert_int_eq(loop_thread_start(&m->lt, "meta-member"), 0);
	atomic_store(&m->closed, false);
	ck_assert_int_eq(loop_thread_call(&m->lt, m_start_fn, m), 0);
	ck_assert_int_eq(m->rc, 0);
	m->running = true;
}

static inline void m_closed(void *ud)
{
	struct member *m = ud;
	atomic_store(&m->closed, true);
}

static inline void m_close_fn(void *arg)
{
	struct member *m = arg;
	meta_node_close(m->node, m_closed, m);
}

/* Close the member: its sockets go away at once, peers see it die. */
static inline void m_stop(struct cluster *c, size_t i)
{
	struct member *m = &c->m[i];
	if (!m->running)
		return;
	ck_assert_int_eq(loop_thread_call(&m->lt, m_close_fn, m), 0);
	for (int k = 0; k < 5000 && !atomic_load(&m->closed); k++)
		usleep(1000);
	ck_assert(atomic_load(&m->closed));
	loop_thread_stop(&m->lt);
	m->node = NULL;
	m->running = false;
}

struct info_call {
	struct member *m;
	struct meta_node_info info;
	uint8_t digest[32];
	int digest_rc;
};

static inline void m_info_fn(void *arg)
{
	struct info_call *q = arg;
	meta_node_info(q->m->node, &q->info);
	q->digest_rc = meta_state_digest(meta_node_state(q->m->node), q->digest);
}

static inline struct meta_node_info m_info(struct cluster *c, size_t i, uint8_t digest[32])
{
	struct info_call q = { .m = &c->m[i] };
	ck_assert_int_eq(loop_thread_call(&c->m[i].lt, m_info_fn, &q), 0);
	ck_assert_int_eq(q.digest_rc, 0);
	if (digest)
		memcpy(digest, q.digest, 32);
	return q.info;
}

static inline void cluster_init(struct cluster *c, size_t n, unsigned snap_threshold, unsigned trailing)
{
	memset(c, 0, sizeof(*c));
	c->n = n;
	for (size_t i = 0; i < n; i++) {
		struct member *m = &c->m[i];
		tmpdir(m->dir);
		snprintf(m->addr, sizeof(m->addr), "127.0.0.1:%d", free_port_pair());
		c->peers[i].id = i + 1;
		c->peers[i].addr = m->addr;
	}
	for (size_t i = 0; i < n; i++) {
		struct member *m = &c->m[i];
		m->o = (struct meta_node_opts){
			.id = i + 1,
			.data_dir = m->dir,
			.listen = m->addr,
			.peers = c->peers,
			.n_peers = n,
			.snapshot_threshold = snap_threshold,
			.snapshot_trailing = trailing,
			.election_timeout_ms = 300,
			.heartbeat_timeout_ms = 50,
			.osd_down_after_ms = 300,
			.osd_out_after_ms = 700,
			.pg_count = 16,
		};
	}
}

static inline void cluster_free(struct cluster *c)
{
	for (size_t i = 0; i < c->n; i++) {
		m_stop(c, i);
		rm_rf(c->m[i].dir);
	}
}

/* Index of the one member that is leader (of those running), waiting up
 * to timeout_ms; -1 if none. */
static inline int wait_leader(struct cluster *c, int timeout_ms)
{
	for (int t = 0; t < timeout_ms; t += 20) {
		int leader = -1, count = 0;
		for (size_t i = 0; i < c->n; i++)
			if (c->m[i].running && m_info(c, i, NULL).role == RAFT_LEADER) {
				leader = (int)i;
				count++;
			}
		if (count == 1)
			return leader;
		usleep(20000);
	}
	return -1;
}

/* The index of the one leader that every running member also names as
 * leader (so none would redirect), waiting up to timeout_ms; -1 if none. */
static inline int wait_leader_known(struct cluster *c, int timeout_ms)
{
	for (int t = 0; t < timeout_ms; t += 20) {
		int leader = wait_leader(c, 20);
		bool known = leader >= 0;
		for (size_t i = 0; known && i < c->n; i++)
			known = !c->m[i].running ||
				m_info(c, i, NULL).leader_id == (uint64_t)leader + 1;
		if (known)
			return leader;
		usleep(20000);
	}
	return -1;
}

/* Every member of an NMEMB cluster started; the leader's index. */
static inline int cluster_up(struct cluster *c, unsigned snap_threshold, unsigned trailing)
{
	cluster_init(c, NMEMB, snap_threshold, trailing);
	for (size_t i = 0; i < NMEMB; i++)
		m_start(c, i);
	int leader = wait_leader(c, 10000);
	ck_assert_int_ge(leader, 0);
	return leader;
}

/* Wait until every running member applied the leader's last index. */
static inline void wait_converged(struct cluster *c, int timeout_ms)
{
	for (int t = 0; t < timeout_ms; t += 20) {
		int l = wait_leader(c, 5000);
		ck_assert_int_ge(l, 0);
		uint64_t last = m_info(c, (size_t)l, NULL).last_index;
		bool all = true;
		for (size_t i = 0; i < c->n; i++)
			if (c->m[i].running && m_info(c, i, NULL).applied_index < last)
				all = false;
		if (all)
			return;
		usleep(20000);
	}
	ck_abort_msg("members did not converge");
}

static inline void assert_digests_equal(struct cluster *c, uint8_t out[32])
{
	uint8_t d0[32], d[32];
	m_info(c, 0, d0);
	for (size_t i = 1; i < c->n; i++) {
		m_info(c, i, d);
		ck_assert_msg(!memcmp(d0, d, 32), "digest of member %zu differs", i + 1);
	}
	if (out)
		memcpy(out, d0, 32);
}

/* -------------------------------------------------------------- load */

struct load {
	struct loop_thread lt;
	struct meta_client *cli;
	const char *members[NMEMB];
	size_t n_members;
	unsigned total, window;
	unsigned key_base;             /* put i writes key and value key_base + i */
	unsigned next, inflight;
	uint64_t *gen;                 /* per key: generation acknowledged */
	atomic_uint acked, failed, bad;
	atomic_bool paused;            /* stop issuing new ops */
	atomic_bool done;
	uint64_t last_ack_ms, max_gap_ms;   /* load loop */
	bool bucket_ready;
};

static inline void key_of(unsigned i, char out[32])
{
	snprintf(out, 32, "obj/%08u", i);
}

static inline void value_of(unsigned i, char out[32])
{
	snprintf(out, 32, "value-%u", i * 2654435761u);
}

static inline void pump(struct load *L);

static inline void on_put(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct load *L = *(struct load **)ud;
	unsigned i = (unsigned)(((uintptr_t *)ud)[1]);
	free(ud);
	L->inflight--;
	uint64_t now = loop_now_ms();
	if (L->last_ack_ms && now - L->last_ack_ms > L->max_gap_ms)
		L->max_gap_ms = now - L->last_ack_ms;
	L->last_ack_ms = now;
	if (err) {
		fprintf(stderr, "put %u failed: %d\n", i, err);
		atomic_fetch_add(&L->failed, 1);
	} else if (res->status != IOLAKE__META__STATUS__STATUS_OK) {
		fprintf(stderr, "put %u answered status %d\n", i, res->status);
		atomic_fetch_add(&L->bad, 1);
	} else {
		L->gen[i] = res->generation;
		atomic_fetch_add(&L->acked, 1);
	}
	pump(L);
}

static inline void submit_put(struct load *L, unsigned i)
{
	char key[32], val[32];
	key_of(L->key_base + i, key);
	value_of(L->key_base + i, val);
	Iolake__Meta__ObjectRecord rec = IOLAKE__META__OBJECT_RECORD__INIT;
	rec.bucket = "bkt";
	rec.key = key;
	rec.size = strlen(val);
	rec.etag = "e";
	rec.owner = "tester";
	rec.inline_data.data = (uint8_t *)val;
	rec.inline_data.len = strlen(val);
	Iolake__Meta__PutObject po = IOLAKE__META__PUT_OBJECT__INIT;
	po.record = &rec;
	po.if_none_match = true;   /* a second apply would answer CONFLICT */
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_PUT_OBJECT;
	op.put_object = &po;
	uintptr_t *ud = malloc(2 * sizeof(*ud));
	ud[0] = (uintptr_t)L;
	ud[1] = i;
	L->inflight++;
	ck_assert_int_eq(meta_client_submit(L->cli, &op, on_put, ud), 0);
}

static inline void pump(struct load *L)
{
	while (!atomic_load(&L->paused) && L->inflight < L->window && L->next < L->total)
		submit_put(L, L->next++);
	if (L->inflight == 0 && (L->next == L->total || atomic_load(&L->paused)))
		atomic_store(&L->done, true);
}

static inline void on_bucket(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct load *L = ud;
	ck_assert_int_eq(err, 0);
	ck_assert(res->status == IOLAKE__META__STATUS__STATUS_OK ||
		  res->status == IOLAKE__META__STATUS__STATUS_EXISTS);
	L->bucket_ready = true;
	pump(L);
}

static inline void load_start_fn(void *arg)
{
	struct load *L = arg;
	struct meta_client_opts o = { .members = L->members, .n_members = L->n_members,
				      .attempt_timeout_ms = 1000, .retry_for_ms = 30000 };
	ck_assert_int_eq(meta_client_new(&L->lt.loop, &o, &L->cli), 0);
	Iolake__Meta__Bucket b = IOLAKE__META__BUCKET__INIT;
	b.name = "bkt";
	b.owner = "tester";
	Iolake__Meta__CreateBucket cb = IOLAKE__META__CREATE_BUCKET__INIT;
	cb.bucket = &b;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_CREATE_BUCKET;
	op.create_bucket = &cb;
	ck_assert_int_eq(meta_client_submit(L->cli, &op, on_bucket, L), 0);
}

static inline void load_close_fn(void *arg)
{
	struct load *L = arg;
	meta_client_close(L->cli);
}

/* Start putting keys key_base .. key_base + total - 1, window at a time. */
static inline void load_init_at(struct load *L, struct cluster *c, unsigned total, unsigned window,
				unsigned key_base)
{
	memset(L, 0, sizeof(*L));
	L->key_base = key_base;
	for (size_t i = 0; i < c->n; i++)
		L->members[i] = c->m[i].addr;
	L->n_members = c->n;
	L->total = total;
	L->window = window;
	L->gen = calloc(total, sizeof(*L->gen));
	ck_assert_int_eq(loop_thread_start(&L->lt, "meta-load"), 0);
	ck_assert_int_eq(loop_thread_call(&L->lt, load_start_fn, L), 0);
}

static inline void load_init(struct load *L, struct cluster *c, unsigned total, unsigned window)
{
	load_init_at(L, c, total, window, 0);
}

static inline void load_wait(struct load *L, int timeout_ms)
{
	for (int t = 0; t < timeout_ms && !atomic_load(&L->done); t += 10)
		usleep(10000);
	ck_assert_msg(atomic_load(&L->done), "load did not finish: acked %u of %u",
		      atomic_load(&L->acked), L->total);
}

static inline void load_free(struct load *L)
{
	loop_thread_call(&L->lt, load_close_fn, L);
	loop_thread_stop(&L->lt);
	free(L->gen);
}

/* Every acknowledged key holds the acknowledged generation and value;
 * counts keys present. Runs on a member's loop. */
struct verify {
	struct member *m;
	struct load *L;
	unsigned present, wrong;
};

static inline void verify_fn(void *arg)
{
	struct verify *v = arg;
	struct meta_state *s = meta_node_state(v->m->node);
	for (unsigned i = 0; i < v->L->total; i++) {
		char key[32], val[32];
		key_of(v->L->key_base + i, key);
		value_of(v->L->key_base + i, val);
		Iolake__Meta__ObjectRecord *rec = NULL;
		int rc = meta_state_head_object(s, "bkt", key, &rec);
		if (rc == 0) {
			v->present++;
			if (rec->inline_data.len != strlen(val) ||
			    memcmp(rec->inline_data.data, val, strlen(val)) ||
			    (v->L->gen[i] && rec->generation != v->L->gen[i]))
				v->wrong++;
			meta_state_free_msg(rec);
		} else if (v->L->gen[i]) {
			v->wrong++;   /* acknowledged but missing */
		}
	}
}

static inline void verify_member(struct cluster *c, size_t i, struct load *L, unsigned expect_present)
{
	struct verify v = { .m = &c->m[i], .L = L };
	ck_assert_int_eq(loop_thread_call(&c->m[i].lt, verify_fn, &v), 0);
	ck_assert_msg(v.wrong == 0, "member %zu: %u keys wrong or missing", i + 1, v.wrong);
	ck_assert_uint_eq(v.present, expect_present);
}

/* -------------------------------------------------------------- tests */

struct sync_call {
	bool done;
	int err;
	ProtobufCMessage *resp;
};

static inline void on_sync(void *ud, int err, const ProtobufCMessage *resp)
{
	struct sync_call *s = ud;
	s->err = err;
	if (!err) {
		size_t len = protobuf_c_message_get_packed_size(resp);
		uint8_t *b = malloc(len + 1);
		protobuf_c_message_pack(resp, b);
		s->resp = protobuf_c_message_unpack(resp->descriptor, NULL, len, b);
		free(b);
	}
	s->done = true;
}

static inline void on_sync_submit(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	on_sync(ud, err, err ? NULL : &res->base);
}

/* A client on the test thread's own loop, run until each call answers. */
static inline ProtobufCMessage *run_call(uv_loop_t *loop, struct meta_client *cli, int method,
				  const ProtobufCMessage *req)
{
	struct sync_call s = { 0 };
	if (method < 0)
		ck_assert_int_eq(meta_client_submit(cli, (const Iolake__Meta__Op *)req, on_sync_submit, &s), 0);
	else
		ck_assert_int_eq(meta_client_call(cli, (unsigned)method, req, on_sync, &s), 0);
	while (!s.done)
		uv_run(loop, UV_RUN_ONCE);
	ck_assert_int_eq(s.err, 0);
	return s.resp;
}

/* One attempt at member i of cli (meta_client_call_member: no redirect,
 * no retry), run until it answers: the answer (owned; NULL on error) and
 * the error in *err. */
static inline ProtobufCMessage *run_call_member(uv_loop_t *loop, struct meta_client *cli,
						size_t i, unsigned method,
						const ProtobufCMessage *req, int *err)
{
	struct sync_call s = { 0 };
	ck_assert_int_eq(meta_client_call_member(cli, i, method, req, on_sync, &s), 0);
	while (!s.done)
		uv_run(loop, UV_RUN_ONCE);
	*err = s.err;
	return s.resp;
}

/* RegisterOsd of OSD id (weight 1; time_ms 0: none) through cli: the
 * answer (owned: free it). */
static inline Iolake__Meta__OpResult *register_osd_sync(uv_loop_t *loop, struct meta_client *cli,
							uint32_t id, const char *addr,
							const char *host, uint64_t time_ms)
{
	Iolake__Meta__OsdInfo osd = IOLAKE__META__OSD_INFO__INIT;
	osd.id = id;
	osd.addr = (char *)addr;
	osd.host = (char *)host;
	osd.weight = 1;
	Iolake__Meta__RegisterOsd ro = IOLAKE__META__REGISTER_OSD__INIT;
	ro.osd = &osd;
	ro.time_ms = time_ms;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_REGISTER_OSD;
	op.register_osd = &ro;
	return (Iolake__Meta__OpResult *)run_call(loop, cli, -1, &op.base);
}

/* PutObject "bkt"/key (one byte of inline data) through cli: the
 * generation it was acknowledged with. */
static inline uint64_t put_sync(uv_loop_t *loop, struct meta_client *cli, const char *key)
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
	Iolake__Meta__OpResult *r = (void *)run_call(loop, cli, -1, &op.base);
	ck_assert_int_eq(r->status, IOLAKE__META__STATUS__STATUS_OK);
	uint64_t gen = r->generation;
	protobuf_c_message_free_unpacked(&r->base, NULL);
	return gen;
}

/* The generation HeadObject answers for "bkt"/key through cli (0: not
 * found). */
static inline uint64_t head_gen(uv_loop_t *loop, struct meta_client *cli, const char *key)
{
	Iolake__Meta__HeadObjectRequest q = IOLAKE__META__HEAD_OBJECT_REQUEST__INIT;
	q.bucket = "bkt";
	q.key = (char *)key;
	Iolake__Meta__HeadObjectResponse *r = (void *)run_call(loop, cli, META_M_HEAD_OBJECT, &q.base);
	uint64_t gen = r->status == IOLAKE__META__STATUS__STATUS_OK ? r->record->generation : 0;
	protobuf_c_message_free_unpacked(&r->base, NULL);
	return gen;
}

#endif
