/*
 * test_range_move.c — moving the records of a key range between range
 * groups (meta/range_move.c, meta/state_range.c): 3 members on their own
 * loop_threads, real libraft over loopback, two range groups, data under
 * /dev/shm, driven through meta/client.h from the test thread.
 *
 *   split_merge_under_load  10,000 records; the range is split in the
 *               middle while PUTs and DELETEs continue through the routed
 *               client (at most one op per key in flight; a model keeps
 *               what was acknowledged); then every record (key and value)
 *               and a full listing at page sizes 1,000 and 7 equal the
 *               model (the split copies unsealed: the writes made during
 *               its copy are carried by catch-up batches, at least one),
 *               the two halves are in different groups, their
 *               counters sum to the model, and the source holds nothing
 *               of the moved half. Then the two are merged back under the
 *               same load and checked again.
 *   resume_after_crash  a split whose driver stops after two batches (as
 *               a killed iolake-admin), then the root leader is stopped:
 *               the new root leader finishes the move by itself; every
 *               record is there once.
 *   auto_split_merge  --range-split-objects 3000: the root leader splits
 *               the 10,000-record range at median keys until every range
 *               holds fewer than 3,000; after deleting 49 of every 50
 *               records, --range-merge-objects 1500 merges them back into
 *               one; counters and listings equal the model throughout.
 *   load_split_no_flap  --range-split-load 200, --range-split-load-secs 1
 *               and --range-merge-objects 100000 (every pair is small
 *               enough to merge): random PUTs and DELETEs over an empty
 *               range get it split by load within 30 s; while the load
 *               lasts the bucket's range count never goes down (no merge
 *               of the hot halves); once it stops, the ranges merge back
 *               into one; no op fails, counters and listings equal the
 *               model.
 */
#include <check.h>
#include <errno.h>
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
#include "meta/range_move.h"
#include "group_cluster.h"
#include "meta_test_util.h"

#define WAIT_MS 30000

/* --range-split-load and its seconds for the next cluster_up_opts (0: off) */
static uint64_t SPLIT_LOAD;
static unsigned SPLIT_LOAD_SECS;

static void cluster_up_opts(struct cluster *c, uint64_t split_objects, uint64_t merge_objects)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < NMEMB; i++) {
		struct member *m = &c->m[i];
		tmpdir(m->dir);
		snprintf(m->addr, sizeof(m->addr), "127.0.0.1:%d", free_port_pair());
		c->peers[i].id = i + 1;
		c->peers[i].addr = m->addr;
	}
	for (size_t i = 0; i < NMEMB; i++) {
		struct member *m = &c->m[i];
		m->o = (struct meta_node_opts){
			.id = i + 1,
			.data_dir = m->dir,
			.listen = m->addr,
			.peers = c->peers,
			.n_peers = NMEMB,
			.range_groups = 2,
			.range_split_objects = split_objects,
			.range_merge_objects = merge_objects,
			.range_split_load = SPLIT_LOAD,
			.range_split_load_secs = SPLIT_LOAD_SECS,
			.range_poll_ms = 300,
			.election_timeout_ms = 300,
			.heartbeat_timeout_ms = 50,
			.pg_count = 16,
			.cache_bytes = 16 << 20,
			.write_buffer_bytes = 8 << 20,
		};
		m_start(c, i);
	}
}

static void cluster_up(struct cluster *c)
{
	cluster_up_opts(c, 0, 0);
}

/* ------------------------------------------------------------ calls */

static ProtobufCMessage *call(uv_loop_t *loop, struct meta_client *cli, unsigned method,
			      const ProtobufCMessage *req, int *err)
{
	struct sync_call s = { 0 };
	ck_assert_int_eq(meta_client_call(cli, method, req, on_sync, &s), 0);
	run_until(loop, &s.done);
	*err = s.err;
	return s.resp;
}

static Iolake__Meta__GetRangesResponse *get_ranges(uv_loop_t *loop, struct meta_client *cli,
						   const char *bucket, uint64_t group)
{
	Iolake__Meta__GetRangesRequest q = IOLAKE__META__GET_RANGES_REQUEST__INIT;
	q.bucket = (char *)bucket;
	q.group = group;
	struct sync_call s = { 0 };
	ck_assert_int_eq(meta_client_call_direct(cli, META_M_GET_RANGES, &q.base, on_sync, &s), 0);
	run_until(loop, &s.done);
	ck_assert_int_eq(s.err, 0);
	return (Iolake__Meta__GetRangesResponse *)s.resp;
}

static void new_client(uv_loop_t *loop, struct cluster *c, struct meta_client **out)
{
	const char *addrs[NMEMB];
	for (size_t i = 0; i < NMEMB; i++)
		addrs[i] = c->m[i].addr;
	struct meta_client_opts o = { .members = addrs, .n_members = NMEMB };
	ck_assert_int_eq(meta_client_new(loop, &o, out), 0);
}

/* The root has made both range groups, then the bucket (in one of them). */
static void setup(uv_loop_t *loop, struct meta_client *cli)
{
	for (int t = 0;; t += 50) {
		ck_assert_int_lt(t, WAIT_MS);
		Iolake__Meta__GetRangesResponse *g = get_ranges(loop, cli, "", 0);
		size_t n = g->n_groups;
		free_msg(g);
		if (n == 2)
			break;
		usleep(50000);
	}
	Iolake__Meta__Bucket b = IOLAKE__META__BUCKET__INIT;
	b.name = "bkt";
	b.owner = "tester";
	Iolake__Meta__CreateBucket cb = IOLAKE__META__CREATE_BUCKET__INIT;
	cb.bucket = &b;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_CREATE_BUCKET;
	op.create_bucket = &cb;
	int err;
	Iolake__Meta__OpResult *r = submit(loop, cli, 0, &op, &err);
	ck_assert_int_eq(err, 0);
	ck_assert_int_eq(r->status, IOLAKE__META__STATUS__STATUS_OK);
	free_msg(r);
}

/* ------------------------------------------------------------ the model */

/* MOVE_RECORDS=N (default 10,000) preloads N records; the load touches
 * N * 1.2 keys. With a big N the split test is the sealed-time measure
 * (docs/performance.md "Moving a range"). */
static unsigned NKEYS = 12000, PRELOAD = 10000;

struct model {
	char (*val)[24];               /* "" : absent */
	bool *busy;
	unsigned inflight, failed, acked;
	uint32_t seed;
	unsigned version;
	/* latency of each op acknowledged while a move ran (ms) */
	uint64_t *lat;
	size_t n_lat, cap_lat;
	const bool *moving;
};

static struct model *model_new(uint32_t seed)
{
	struct model *m = calloc(1, sizeof(*m));
	m->val = calloc(NKEYS, sizeof(*m->val));
	m->busy = calloc(NKEYS, sizeof(*m->busy));
	m->seed = seed;
	return m;
}

static void model_free(struct model *m)
{
	free(m->val);
	free(m->busy);
	free(m->lat);
	free(m);
}

struct op_ctx {
	struct model *m;
	unsigned key;
	bool del;
	char val[24];
	uint64_t t0;
};

static void key_name(unsigned i, char *buf, size_t cap)
{
	snprintf(buf, cap, "k/%07u", i);
}

static void on_op(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct op_ctx *o = ud;
	struct model *m = o->m;
	m->inflight--;
	m->busy[o->key] = false;
	if (m->moving && !*m->moving) {
		if (m->n_lat == m->cap_lat) {
			m->cap_lat = m->cap_lat ? 2 * m->cap_lat : 4096;
			m->lat = realloc(m->lat, m->cap_lat * sizeof(*m->lat));
		}
		m->lat[m->n_lat++] = loop_now_ms() - o->t0;
	}
	int st = err ? -1 : (int)res->status;
	if (st == IOLAKE__META__STATUS__STATUS_OK) {
		m->acked++;
		if (o->del)
			m->val[o->key][0] = 0;
		else
			snprintf(m->val[o->key], sizeof(m->val[o->key]), "%s", o->val);
	} else if (!(o->del && st == IOLAKE__META__STATUS__STATUS_NOT_FOUND)) {
		/* a failed op may or may not have been applied: no model
		 * after that; the test does not expect any */
		fprintf(stderr, "op failed: key %u del %d err=%d status=%d\n", o->key, o->del, err,
			st);
		m->failed++;
	}
	free(o);
}

static void send_op(struct meta_client *cli, struct model *m, unsigned key, bool del)
{
	struct op_ctx *o = calloc(1, sizeof(*o));
	o->m = m;
	o->key = key;
	o->del = del;
	o->t0 = loop_now_ms();
	snprintf(o->val, sizeof(o->val), "v%u.%u", key, ++m->version);
	char name[32];
	key_name(key, name, sizeof(name));
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	Iolake__Meta__ObjectRecord rec = IOLAKE__META__OBJECT_RECORD__INIT;
	Iolake__Meta__PutObject po = IOLAKE__META__PUT_OBJECT__INIT;
	Iolake__Meta__DeleteObject dl = IOLAKE__META__DELETE_OBJECT__INIT;
	if (del) {
		dl.bucket = "bkt";
		dl.key = name;
		op.body_case = IOLAKE__META__OP__BODY_DELETE_OBJECT;
		op.delete_object = &dl;
	} else {
		rec.bucket = "bkt";
		rec.key = name;
		rec.size = strlen(o->val);
		rec.etag = "e";
		rec.owner = "tester";
		rec.inline_data.data = (uint8_t *)o->val;
		rec.inline_data.len = strlen(o->val);
		po.record = &rec;
		op.body_case = IOLAKE__META__OP__BODY_PUT_OBJECT;
		op.put_object = &po;
	}
	m->busy[key] = true;
	m->inflight++;
	ck_assert_int_eq(meta_client_submit(cli, &op, on_op, o), 0);
}

static uint32_t rnd(struct model *m)
{
	m->seed = m->seed * 1103515245u + 12345u;
	return m->seed >> 8;
}

/* Random PUTs and DELETEs (a third deletes), `window` in flight, until
 * *stop (then the ones in flight finish). */
static void load(uv_loop_t *loop, struct meta_client *cli, struct model *m, unsigned window,
		 const bool *stop, unsigned min_ops)
{
	uv_timer_t poke;
	bool closed = false;
	uv_timer_init(loop, &poke);
	poke.data = &closed;
	uv_timer_start(&poke, on_poke, 10, 10);
	unsigned sent = 0;
	while (!*stop || sent < min_ops || m->inflight) {
		while ((!*stop || sent < min_ops) && m->inflight < window) {
			unsigned k = rnd(m) % NKEYS;
			if (m->busy[k])
				continue;
			send_op(cli, m, k, rnd(m) % 3 == 0);
			sent++;
		}
		uv_run(loop, UV_RUN_ONCE);
	}
	uv_close((uv_handle_t *)&poke, on_poke_closed);
	while (!closed)
		uv_run(loop, UV_RUN_NOWAIT);
}

static void preload(uv_loop_t *loop, struct meta_client *cli, struct model *m)
{
	uv_timer_t poke;
	bool closed = false;
	uv_timer_init(loop, &poke);
	poke.data = &closed;
	uv_timer_start(&poke, on_poke, 10, 10);
	for (unsigned k = 0; k < PRELOAD || m->inflight;) {
		while (k < PRELOAD && m->inflight < 256)
			send_op(cli, m, k++, false);
		uv_run(loop, UV_RUN_ONCE);
	}
	uv_close((uv_handle_t *)&poke, on_poke_closed);
	while (!closed)
		uv_run(loop, UV_RUN_NOWAIT);
	ck_assert_uint_eq(m->failed, 0);
}

/* A full listing at page size `page` (with records) equals the model,
 * in order, each value byte for byte. */
static void check_listing(uv_loop_t *loop, struct meta_client *cli, struct model *m,
			  unsigned page)
{
	char token[2048] = "";
	unsigned next = 0, seen = 0;
	for (;;) {
		Iolake__Meta__ListObjectsRequest q = IOLAKE__META__LIST_OBJECTS_REQUEST__INIT;
		q.bucket = "bkt";
		q.max_keys = page;
		q.token = token;
		q.want_records = true;
		int err;
		Iolake__Meta__ListObjectsResponse *r =
			(void *)call(loop, cli, META_M_LIST_OBJECTS, &q.base, &err);
		ck_assert_int_eq(err, 0);
		ck_assert_int_eq(r->status, IOLAKE__META__STATUS__STATUS_OK);
		for (size_t i = 0; i < r->n_entries; i++) {
			while (next < NKEYS && !m->val[next][0])
				next++;
			ck_assert_uint_lt(next, NKEYS);
			char name[32];
			key_name(next, name, sizeof(name));
			ck_assert_str_eq(r->entries[i]->name, name);
			const Iolake__Meta__ObjectRecord *rec = r->entries[i]->record;
			ck_assert_ptr_nonnull(rec);
			ck_assert_uint_eq(rec->inline_data.len, strlen(m->val[next]));
			ck_assert(!memcmp(rec->inline_data.data, m->val[next], rec->inline_data.len));
			next++;
			seen++;
		}
		bool more = r->truncated;
		snprintf(token, sizeof(token), "%s", r->next_token);
		free_msg(r);
		if (!more)
			break;
	}
	while (next < NKEYS && !m->val[next][0])
		next++;
	ck_assert_uint_eq(next, NKEYS);
	(void)seen;
}

static unsigned model_count(const struct model *m)
{
	unsigned n = 0;
	for (unsigned k = 0; k < NKEYS; k++)
		n += m->val[k][0] != 0;
	return n;
}

/* The bucket's table: n ranges, none moving; their open rows' counters
 * in their groups sum to the model. */
static void check_table(uv_loop_t *loop, struct meta_client *cli, struct model *m, size_t want_n)
{
	Iolake__Meta__GetRangesResponse *t = get_ranges(loop, cli, "bkt", 0);
	if (want_n)
		ck_assert_uint_eq(t->n_ranges, want_n);
	uint64_t objects = 0;
	for (size_t i = 0; i < t->n_ranges; i++) {
		ck_assert_uint_eq(t->ranges[i]->move_phase, 0);
		Iolake__Meta__GetRangesResponse *g = get_ranges(loop, cli, "", t->ranges[i]->group);
		bool found = false;
		for (size_t j = 0; j < g->n_ranges; j++)
			if (g->ranges[j]->id == t->ranges[i]->id) {
				ck_assert(!g->ranges[j]->sealed);
				objects += g->ranges[j]->objects;
				found = true;
			}
		ck_assert(found);
		free_msg(g);
	}
	if (want_n == 2)
		ck_assert_uint_ne(t->ranges[0]->group, t->ranges[1]->group);
	free_msg(t);
	ck_assert_uint_eq(objects, model_count(m));
}

struct move_wait {
	bool done;
	int err;
	struct meta_move_stats st;
};

static void on_moved(void *ud, int err, const struct meta_move_stats *st)
{
	struct move_wait *w = ud;
	w->err = err;
	w->st = *st;
	w->done = true;
}

static uint64_t range_of(uv_loop_t *loop, struct meta_client *cli, const char *key)
{
	Iolake__Meta__GetRangesResponse *t = get_ranges(loop, cli, "bkt", 0);
	uint64_t id = 0;
	for (size_t i = 0; i < t->n_ranges; i++)
		if (strcmp(key, t->ranges[i]->start) >= 0 &&
		    (!t->ranges[i]->end[0] || strcmp(key, t->ranges[i]->end) < 0))
			id = t->ranges[i]->id;
	free_msg(t);
	return id;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The routed ops' latency while the move ran: what clients saw of the
 * seal (ops on other keys included). */
static void print_latency(struct model *m, const char *what)
{
	if (!m->n_lat)
		return;
	qsort(m->lat, m->n_lat, sizeof(*m->lat), cmp_u64);
	fprintf(stderr, "%s: %zu ops during the move, latency ms p50 %llu p99 %llu max %llu\n",
		what, m->n_lat, (unsigned long long)m->lat[m->n_lat / 2],
		(unsigned long long)m->lat[m->n_lat * 99 / 100],
		(unsigned long long)m->lat[m->n_lat - 1]);
}

START_TEST(split_merge_under_load)
{
	struct cluster c;
	cluster_up(&c);
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct meta_client *cli, *mcli;
	new_client(&loop, &c, &cli);
	new_client(&loop, &c, &mcli);
	setup(&loop, cli);
	struct model *m = model_new(7);
	preload(&loop, cli, m);
	check_table(&loop, cli, m, 1);

	/* split in the middle under load */
	struct move_wait w = { 0 };
	char mid[32];
	key_name(PRELOAD / 2, mid, sizeof(mid));
	m->moving = &w.done;
	ck_assert_int_eq(meta_move_start(mcli, &loop, "bkt", range_of(&loop, cli, "k/0000000"),
					 mid, false, 0, NULL, on_moved, &w), 0);
	load(&loop, cli, m, 64, &w.done, 2000);
	print_latency(m, "split");
	ck_assert_int_eq(w.err, 0);
	ck_assert_uint_eq(m->failed, 0);
	fprintf(stderr, "split: %llu records in %llu batches, %llu catch-up batches of %llu "
		"changes, sealed %llu ms, dropped %llu, %u ops acked\n",
		(unsigned long long)w.st.records, (unsigned long long)w.st.batches,
		(unsigned long long)w.st.catchups, (unsigned long long)w.st.changes,
		(unsigned long long)w.st.sealed_ms, (unsigned long long)w.st.dropped, m->acked);
	ck_assert_uint_gt(w.st.records, 0);
	/* copied unsealed: the PUTs and DELETEs of the copy came after it */
	ck_assert_uint_gt(w.st.changes, 0);
	check_table(&loop, cli, m, 2);
	check_listing(&loop, cli, m, 1000);
	check_listing(&loop, cli, m, 7);

	/* merge back, under load */
	struct move_wait w2 = { 0 };
	m->moving = &w2.done;
	m->n_lat = 0;
	ck_assert_int_eq(meta_move_start(mcli, &loop, "bkt", range_of(&loop, cli, "k/0000000"),
					 mid, true, 0, NULL, on_moved, &w2), 0);
	load(&loop, cli, m, 64, &w2.done, 2000);
	ck_assert_int_eq(w2.err, 0);
	ck_assert_uint_eq(m->failed, 0);
	print_latency(m, "merge");
	fprintf(stderr, "merge: %llu records, sealed %llu ms, dropped %llu\n",
		(unsigned long long)w2.st.records, (unsigned long long)w2.st.sealed_ms,
		(unsigned long long)w2.st.dropped);
	check_table(&loop, cli, m, 1);
	check_listing(&loop, cli, m, 1000);

	model_free(m);
	meta_client_close(mcli);
	meta_client_close(cli);
	uv_run(&loop, UV_RUN_NOWAIT);
	uv_loop_close(&loop);
	cluster_free(&c);
}
END_TEST

/* Which member leads the root (index), from member 0..2's Status. */
static int root_leader(uv_loop_t *loop, struct meta_client *cli)
{
	for (int t = 0; t < WAIT_MS; t += 50) {
		for (size_t i = 0; i < NMEMB; i++) {
			Iolake__Meta__StatusRequest q = IOLAKE__META__STATUS_REQUEST__INIT;
			struct sync_call s = { 0 };
			if (meta_client_call_member(cli, i, META_M_STATUS, &q.base, on_sync, &s))
				continue;
			run_until(loop, &s.done);
			Iolake__Meta__StatusResponse *r = (void *)s.resp;
			bool lead = !s.err && !strcmp(r->role, "leader");
			free_msg(r);
			if (lead)
				return (int)i;
		}
		usleep(50000);
	}
	ck_abort_msg("no root leader");
	return -1;
}

START_TEST(resume_after_crash)
{
	struct cluster c;
	cluster_up(&c);
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct meta_client *cli;
	new_client(&loop, &c, &cli);
	setup(&loop, cli);
	struct model *m = model_new(11);
	preload(&loop, cli, m);

	struct meta_move_opts o = { .batch_records = 500, .stop_after_batches = 2 };
	struct move_wait w = { 0 };
	ck_assert_int_eq(meta_move_start(cli, &loop, "bkt", range_of(&loop, cli, "k/0000000"),
					 "k/0002000", false, 0, &o, on_moved, &w), 0);
	run_until(&loop, &w.done);
	ck_assert_int_eq(w.err, -EINTR);
	int lead = root_leader(&loop, cli);
	m_stop(&c, (size_t)lead);
	/* The new root leader finds the move and finishes it. */
	bool done = false;
	for (int t = 0; t < WAIT_MS && !done; t += 100) {
		usleep(100000);
		struct sync_call s = { 0 };
		Iolake__Meta__GetRangesRequest q = IOLAKE__META__GET_RANGES_REQUEST__INIT;
		q.bucket = "bkt";
		ck_assert_int_eq(meta_client_call_direct(cli, META_M_GET_RANGES, &q.base, on_sync, &s), 0);
		run_until(&loop, &s.done);
		Iolake__Meta__GetRangesResponse *g = (void *)s.resp;
		if (!s.err) {
			done = g->n_ranges == 2;
			for (size_t i = 0; i < g->n_ranges; i++)
				done = done && g->ranges[i]->move_phase == 0;
		}
		free_msg(g);
	}
	ck_assert(done);
	check_table(&loop, cli, m, 2);
	check_listing(&loop, cli, m, 1000);
	m_start(&c, (size_t)lead);

	model_free(m);
	meta_client_close(cli);
	uv_run(&loop, UV_RUN_NOWAIT);
	uv_loop_close(&loop);
	cluster_free(&c);
}
END_TEST

/* Wait until the bucket's table has no move and every range holds fewer
 * than `below` objects (counted in the groups), at least `min_n` ranges
 * and at most `max_n`. */
static void wait_settled(uv_loop_t *loop, struct meta_client *cli, uint64_t below, size_t min_n,
			 size_t max_n)
{
	for (int t = 0;; t += 200) {
		ck_assert_msg(t < 60000, "ranges did not settle");
		Iolake__Meta__GetRangesResponse *g = get_ranges(loop, cli, "bkt", 0);
		bool ok = g->n_ranges >= min_n && g->n_ranges <= max_n;
		for (size_t i = 0; ok && i < g->n_ranges; i++) {
			ok = g->ranges[i]->move_phase == 0;
			Iolake__Meta__GetRangesResponse *r = get_ranges(loop, cli, "", g->ranges[i]->group);
			for (size_t j = 0; ok && j < r->n_ranges; j++)
				if (r->ranges[j]->id == g->ranges[i]->id)
					ok = r->ranges[j]->objects < below;
			free_msg(r);
		}
		size_t n = g->n_ranges;
		free_msg(g);
		if (ok) {
			fprintf(stderr, "settled: %zu ranges\n", n);
			return;
		}
		usleep(200000);
	}
}

START_TEST(auto_split_merge)
{
	struct cluster c;
	cluster_up_opts(&c, 3000, 1500);
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct meta_client *cli;
	new_client(&loop, &c, &cli);
	setup(&loop, cli);
	struct model *m = model_new(5);
	preload(&loop, cli, m);
	/* 10,000 records, split past 3,000 at the median: 4 ranges of ~2,500 */
	wait_settled(&loop, cli, 3000, 4, 8);
	check_table(&loop, cli, m, 0);
	check_listing(&loop, cli, m, 1000);
	/* delete all but every 50th: the ranges merge under 1,500 together */
	uv_timer_t poke;
	bool closed = false;
	uv_timer_init(&loop, &poke);
	poke.data = &closed;
	uv_timer_start(&poke, on_poke, 10, 10);
	for (unsigned k = 0; k < PRELOAD || m->inflight;) {
		while (k < PRELOAD && m->inflight < 256) {
			if (k % 50)
				send_op(cli, m, k, true);
			k++;
		}
		uv_run(&loop, UV_RUN_ONCE);
	}
	uv_close((uv_handle_t *)&poke, on_poke_closed);
	while (!closed)
		uv_run(&loop, UV_RUN_NOWAIT);
	ck_assert_uint_eq(m->failed, 0);
	wait_settled(&loop, cli, 1500, 1, 1);
	check_table(&loop, cli, m, 1);
	check_listing(&loop, cli, m, 7);
	model_free(m);
	meta_client_close(cli);
	uv_run(&loop, UV_RUN_NOWAIT);
	uv_loop_close(&loop);
	cluster_free(&c);
}
END_TEST

static void on_stop(uv_timer_t *t)
{
	*(bool *)t->data = true;
}

/* Random PUTs and DELETEs, window in flight, for about ms milliseconds. */
static void load_for(uv_loop_t *loop, struct meta_client *cli, struct model *m, unsigned window,
		     unsigned ms)
{
	bool stop = false, closed = false;
	uv_timer_t t;
	uv_timer_init(loop, &t);
	t.data = &stop;
	uv_timer_start(&t, on_stop, ms, 0);
	load(loop, cli, m, window, &stop, 0);
	t.data = &closed;
	uv_close((uv_handle_t *)&t, on_poke_closed);
	while (!closed)
		uv_run(loop, UV_RUN_NOWAIT);
}

START_TEST(load_split_no_flap)
{
	struct cluster c;
	SPLIT_LOAD = 200;
	SPLIT_LOAD_SECS = 1;
	cluster_up_opts(&c, 0, 100000);
	SPLIT_LOAD = 0;
	SPLIT_LOAD_SECS = 0;
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct meta_client *cli;
	new_client(&loop, &c, &cli);
	setup(&loop, cli);
	struct model *m = model_new(9);
	size_t most = 1;
	unsigned hot_rounds = 0;
	uint64_t t0 = loop_now_ms();
	unsigned acked0 = m->acked;
	for (int round = 0; hot_rounds < 10; round++) {
		ck_assert_msg(round < 60, "no split by load in 30 s");
		load_for(&loop, cli, m, 64, 500);
		Iolake__Meta__GetRangesResponse *t = get_ranges(&loop, cli, "bkt", 0);
		size_t n = t->n_ranges;
		free_msg(t);
		ck_assert_msg(n >= most, "a merge while the load lasted: %zu ranges after %zu", n,
			      most);
		most = n;
		hot_rounds += n >= 2;
	}
	uv_update_time(&loop);
	fprintf(stderr, "load split: %zu ranges under %.0f ops/s\n", most,
		(m->acked - acked0) * 1000.0 / (double)(loop_now_ms() - t0 + 1));
	ck_assert_uint_eq(m->failed, 0);
	check_table(&loop, cli, m, 0);
	check_listing(&loop, cli, m, 1000);
	/* cold now: every pair under half the threshold for a second merges */
	wait_settled(&loop, cli, 100000, 1, 1);
	check_table(&loop, cli, m, 1);
	check_listing(&loop, cli, m, 7);
	model_free(m);
	meta_client_close(cli);
	uv_run(&loop, UV_RUN_NOWAIT);
	uv_loop_close(&loop);
	cluster_free(&c);
}
END_TEST

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const char *e = getenv("MOVE_RECORDS");
	if (e && atoi(e) >= 100) {
		PRELOAD = (unsigned)atoi(e);
		NKEYS = PRELOAD + PRELOAD / 5;
	}
	Suite *s = suite_create("range_move");
	TCase *tc = tcase_create("move");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, split_merge_under_load);
	tcase_add_test(tc, resume_after_crash);
	tcase_add_test(tc, auto_split_merge);
	tcase_add_test(tc, load_split_no_flap);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
