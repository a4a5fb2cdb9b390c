/*
 * test_service.c — the OSD RPC service over a real store (a file in
 * /dev/shm) on a loop_thread, called from the test's own loop over both
 * transports (0: HTTP/2 on 127.0.0.1:0, 1: local:NAME), so every call
 * crosses threads as it does in the binary.
 *
 * Shows: put/get/range/delete/stat/stat-many/list round trips byte for
 * byte; a wrong crc or length on put is rejected and stores nothing; a
 * byte flipped on the device makes GetShard answer DATA_LOSS naming the
 * shard; a full device answers RESOURCE_EXHAUSTED and keeps what it held;
 * too many calls in flight answer RESOURCE_EXHAUSTED (busy); a draining
 * service answers UNAVAILABLE; background calls (recovery's) wait behind
 * client calls and then all succeed; with a scrub rate the service scrubs in the
 * background and ListBadShards pages through the shards it found bad.
 *
 * The store (and so RocksDB's threads) lives only in Check's forked test
 * processes, never in the runner.

 */
#include <signal.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crc.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/metrics.h"
#include "common/rpc.h"
#include "osd/service.h"
#include "osd/store/store.h"
#include "osd/store/super.h"
#include "tests/lib/osd_call.h"
#include "tests/lib/scratch.h"

enum { T_H2, T_LOCAL, TRANSPORTS };
static const char *const tname[] = { "h2", "local" };

/* ------------------------------------------------------------ server side */

/* Files are named by the runner's pid so its teardown can remove what a
 * failed (forked) test left. */
static int runner_pid;
static const char *const tags[] = { "rt", "bp", "cs", "ns", "bz", "sb", "bg", "dr" };

/* Scrub rate of the next srv_setup (0: off, as most tests want). */
static uint64_t next_scrub_rate;

struct srv {
	struct loop_thread lt;
	struct metrics_registry *reg;
	struct store *st;
	struct osd_service *svc;
	struct rpc_server *rpc;
	char dev[128], meta[128], local[64];
	uint64_t dev_size;
	uint32_t max_inflight;
	uint64_t scrub_rate;
	int port;
	int rc;
	char err[512];
	atomic_int closed;
	bool draining;
};

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

/* The service's bg_max_wait_ms for the next fx_setup (0: its default);
 * Check runs each test in its own process. */
static uint32_t bg_max_wait_ms;

static void srv_start(void *arg)
{
	struct srv *s = arg;
	struct osd_service_opts so = { .osd_id = 7, .max_inflight = s->max_inflight,
				       .metrics = s->reg, .scrub_rate_bytes = s->scrub_rate,
				       .scrub_interval_ms = 200, .bg_max_wait_ms = bg_max_wait_ms };
	so.cluster_id[0] = 0xab;
	s->rc = osd_service_new(&s->lt.loop, &so, &s->svc);
	if (s->rc)
		return;
	struct store_opts o = { .device_path = s->dev, .meta_dir = s->meta,
				.create_size = s->dev_size, .osd_id = 7,
				.observer = osd_service_observer(s->svc) };
	o.cluster_id[0] = 0xab;
	s->rc = store_open(&s->lt.loop, &o, &s->st, s->err, sizeof(s->err));
	if (s->rc)
		return;
	osd_service_attach(s->svc, s->st);
	s->rpc = rpc_server_new(&s->lt.loop, NULL);
	s->rc = osd_service_register(s->svc, s->rpc);
	if (!s->rc)
		s->rc = rpc_server_listen(s->rpc, "127.0.0.1:0");
	char a[80];
	snprintf(a, sizeof(a), "local:%s", s->local);
	if (!s->rc)
		s->rc = rpc_server_listen(s->rpc, a);
	s->port = rpc_server_port(s->rpc);
}

static void on_store_closed(void *arg)
{
	struct srv *s = arg;
	osd_service_free(s->svc);
	s->svc = NULL;
	atomic_store(&s->closed, 1);
}

static void on_drained(void *arg)
{
	struct srv *s = arg;
	rpc_server_close(s->rpc);
	store_close(s->st, on_store_closed, s);
}

static void srv_begin_drain(void *arg)
{
	struct srv *s = arg;
	if (s->draining)
		return;
	s->draining = true;
	osd_service_drain(s->svc, on_drained, s);
}

/* Drain only (tests UNAVAILABLE while draining): the rest follows. */
static void srv_setup(struct srv *s, const char *tag, uint64_t dev_size, uint32_t max_inflight)
{
	memset(s, 0, sizeof(*s));
	test_scratch_path(s->dev, sizeof(s->dev), "iolake-test-svc-%d-%s.dev", runner_pid, tag);
	test_scratch_path(s->meta, sizeof(s->meta), "iolake-test-svc-%d-%s.meta", runner_pid,
		 tag);
	snprintf(s->local, sizeof(s->local), "osd-test-%d-%s", (int)getpid(), tag);
	unlink(s->dev);
	nftw(s->meta, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	s->dev_size = dev_size;
	s->max_inflight = max_inflight;
	s->scrub_rate = next_scrub_rate;
	s->reg = metrics_registry_new();
	ck_assert_int_eq(loop_thread_start(&s->lt, "osd-test"), 0);
	ck_assert_int_eq(loop_thread_call(&s->lt, srv_start, s), 0);
	if (s->rc)
		printf("server start: rc %d: %s\n", s->rc, s->err);
	ck_assert_int_eq(s->rc, 0);
	ck_assert_int_gt(s->port, 0);
}

static void srv_teardown(struct srv *s)
{
	if (!atomic_load(&s->closed))
		loop_thread_call(&s->lt, srv_begin_drain, s);
	while (!atomic_load(&s->closed))
		usleep(1000);
	loop_thread_stop(&s->lt);
	metrics_registry_free(s->reg);
	unlink(s->dev);
	nftw(s->meta, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* ------------------------------------------------------------ client side */

struct fx {
	struct srv s;
	uv_loop_t loop;
	struct rpc_channel *ch;
};

static void fx_setup(struct fx *f, int transport, const char *tag, uint64_t dev_size,
		     uint32_t max_inflight)
{
	char t[128];
	srv_setup(&f->s, tag, dev_size, max_inflight);
	if (transport == T_H2)
		snprintf(t, sizeof(t), "127.0.0.1:%d", f->s.port);
	else
		snprintf(t, sizeof(t), "local:%s", f->s.local);
	printf("%s: transport %s target %s\n", tag, tname[transport], t);
	ck_assert_int_eq(uv_loop_init(&f->loop), 0);
	f->ch = rpc_channel_open(&f->loop, t, NULL);
	ck_assert_ptr_nonnull(f->ch);
}

static void fx_teardown(struct fx *f)
{
	rpc_channel_close(f->ch);
	while (uv_run(&f->loop, UV_RUN_DEFAULT) != 0)
		;
	ck_assert_int_eq(uv_loop_close(&f->loop), 0);
	srv_teardown(&f->s);
}

static struct buf *pattern(size_t len, uint32_t seed)
{
	struct buf *b = buf_new(len ? len : 1);
	uint32_t x = seed | 1;
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		b->data[i] = (uint8_t)x;
	}
	b->len = len;
	return b;
}

static int put(struct fx *f, uint32_t pg, const char *oid, uint32_t shard, struct buf *b,
	       struct osd_call *c)
{
	Iolake__Osd__ShardKey k;
	Iolake__Osd__PutShardRequest q = IOLAKE__OSD__PUT_SHARD_REQUEST__INIT;
	osd_key(&k, pg, oid, shard);
	q.key = &k;
	q.length = b->len;
	q.crc32c = crc32c(0, b->data, b->len);
	struct buf_slice pl = { b, 0, b->len };
	return osd_call_sync(&f->loop, f->ch, OSD_M_PUT, &q.base, b->len ? &pl : NULL, c);
}

static int get(struct fx *f, uint32_t pg, const char *oid, uint32_t shard, uint64_t off,
	       uint64_t len, struct osd_call *c)
{
	Iolake__Osd__ShardKey k;
	Iolake__Osd__GetShardRequest q = IOLAKE__OSD__GET_SHARD_REQUEST__INIT;
	osd_key(&k, pg, oid, shard);
	q.key = &k;
	q.offset = off;
	q.length = len;
	return osd_call_sync(&f->loop, f->ch, OSD_M_GET, &q.base, NULL, c);
}

static int stat1(struct fx *f, uint32_t pg, const char *oid, uint32_t shard, struct osd_call *c)
{
	Iolake__Osd__ShardKey k;
	Iolake__Osd__StatShardRequest q = IOLAKE__OSD__STAT_SHARD_REQUEST__INIT;
	osd_key(&k, pg, oid, shard);
	q.key = &k;
	return osd_call_sync(&f->loop, f->ch, OSD_M_STAT, &q.base, NULL, c);
}

static const Iolake__Osd__StatusResponse *status(struct fx *f, struct osd_call *c)
{
	Iolake__Osd__StatusRequest q = IOLAKE__OSD__STATUS_REQUEST__INIT;
	q.metrics = 1;
	ck_assert_int_eq(osd_call_sync(&f->loop, f->ch, OSD_M_STATUS, &q.base, NULL, c), RPC_OK);
	return (const void *)c->resp;
}

/* GetShard answers exactly bytes [off, off+len) of b. */
static void expect_bytes(struct fx *f, uint32_t pg, const char *oid, uint32_t shard,
			 const struct buf *b, uint64_t off, uint64_t len)
{
	struct osd_call c;
	int st = get(f, pg, oid, shard, off, len, &c);
	ck_assert_msg(st == RPC_OK, "get %s: %s %s", oid, rpc_status_name(st), c.message);
	uint64_t want = len == 0 || off + len > b->len ? b->len - off : len;
	const Iolake__Osd__GetShardResponse *r = (const void *)c.resp;
	ck_assert_uint_eq(r->length, want);
	ck_assert_uint_eq(r->offset, off);
	ck_assert_uint_eq(r->info->length, b->len);
	ck_assert_uint_eq(r->info->crc32c, crc32c(0, b->data, b->len));
	ck_assert_uint_eq(c.payload.buf ? c.payload.len : 0, want);
	if (want) {
		ck_assert(memcmp(buf_slice_data(&c.payload), b->data + off, want) == 0);
		ck_assert_uint_eq(r->range_crc32c, crc32c(0, b->data + off, want));
	}
	osd_call_clear(&c);
}

/* ------------------------------------------------------------ tests */

START_TEST(round_trips)
{
	struct fx f;
	fx_setup(&f, _i, "rt", 64 << 20, 0);
	static const size_t sizes[] = { 0, 1, 1024, 4096, 65536, 65537, 300000, 4 << 20 };
	enum { N = sizeof(sizes) / sizeof(sizes[0]) };
	struct buf *b[N];
	char oid[N][32];
	struct osd_call c;
	for (int i = 0; i < N; i++) {
		snprintf(oid[i], sizeof(oid[i]), "obj-%d-%zu", i, sizes[i]);
		b[i] = pattern(sizes[i], 100 + (uint32_t)i);
		int st = put(&f, 3, oid[i], (uint32_t)i % 6, b[i], &c);
		ck_assert_msg(st == RPC_OK, "put %s: %s", oid[i], c.message);
		const Iolake__Osd__PutShardResponse *r = (const void *)c.resp;
		ck_assert_uint_eq(r->info->length, sizes[i]);
		ck_assert_uint_eq(r->info->crc32c, crc32c(0, b[i]->data, sizes[i]));
		ck_assert_int_eq(r->info->is_inline, sizes[i] <= 65536);
		osd_call_clear(&c);
	}
	for (int i = 0; i < N; i++) {
		expect_bytes(&f, 3, oid[i], (uint32_t)i % 6, b[i], 0, 0);
		if (sizes[i] > 10) {
			expect_bytes(&f, 3, oid[i], (uint32_t)i % 6, b[i], 1, sizes[i] / 2);
			expect_bytes(&f, 3, oid[i], (uint32_t)i % 6, b[i], sizes[i] - 3, 100);
			expect_bytes(&f, 3, oid[i], (uint32_t)i % 6, b[i], sizes[i], 0);
		}
	}
	/* Past the end. */
	ck_assert_int_eq(get(&f, 3, oid[2], 2, 5000, 1, &c), RPC_OUT_OF_RANGE);
	osd_call_clear(&c);
	/* Overwrite: the new bytes win. */
	struct buf *nb = pattern(200000, 999);
	ck_assert_int_eq(put(&f, 3, oid[6], 0, nb, &c), RPC_OK);
	osd_call_clear(&c);
	expect_bytes(&f, 3, oid[6], 0, nb, 0, 0);

	/* Stat one. */
	ck_assert_int_eq(stat1(&f, 3, oid[7], 1, &c), RPC_OK);
	const Iolake__Osd__StatShardResponse *sr = (const void *)c.resp;
	ck_assert_uint_eq(sr->info->length, 4 << 20);
	ck_assert(!sr->info->is_inline);
	osd_call_clear(&c);
	ck_assert_int_eq(stat1(&f, 3, "nope", 0, &c), RPC_NOT_FOUND);
	ck_assert_ptr_nonnull(strstr(c.message, "nope"));
	osd_call_clear(&c);

	/* Stat many: present, missing, invalid, in request order. */
	Iolake__Osd__ShardKey ks[4], *kp[4];
	osd_key(&ks[0], 3, oid[3], 3);
	osd_key(&ks[1], 3, "missing", 0);
	osd_key(&ks[2], 3, oid[7], 1);
	osd_key(&ks[3], 3, "", 0);
	for (int i = 0; i < 4; i++)
		kp[i] = &ks[i];
	Iolake__Osd__StatShardsRequest sq = IOLAKE__OSD__STAT_SHARDS_REQUEST__INIT;
	sq.n_keys = 4;
	sq.keys = kp;
	ck_assert_int_eq(osd_call_sync(&f.loop, f.ch, OSD_M_STATS, &sq.base, NULL, &c), RPC_OK);
	const Iolake__Osd__StatShardsResponse *ss = (const void *)c.resp;
	ck_assert_uint_eq(ss->n_results, 4);
	ck_assert_int_eq(ss->results[0]->status, RPC_OK);
	ck_assert_uint_eq(ss->results[0]->info->length, 4096);
	ck_assert_int_eq(ss->results[1]->status, RPC_NOT_FOUND);
	ck_assert_int_eq(ss->results[2]->status, RPC_OK);
	ck_assert_uint_eq(ss->results[2]->info->length, 4 << 20);
	ck_assert_int_eq(ss->results[3]->status, RPC_INVALID_ARGUMENT);
	osd_call_clear(&c);

	/* List pg 3 in pages of 3: every shard once, in key order. */
	struct buf *small = pattern(10, 1);
	ck_assert_int_eq(put(&f, 4, "other-pg", 0, small, &c), RPC_OK);
	osd_call_clear(&c);
	int seen = 0;
	char last[80] = "";
	Iolake__Osd__ShardKey after;
	uint8_t after_oid[64];
	bool have_after = false;
	for (int page = 0; page < 10; page++) {
		Iolake__Osd__ListShardsRequest lq = IOLAKE__OSD__LIST_SHARDS_REQUEST__INIT;
		lq.pg = 3;
		lq.limit = 3;
		if (have_after)
			lq.after = &after;
		ck_assert_int_eq(osd_call_sync(&f.loop, f.ch, OSD_M_LIST, &lq.base, NULL, &c),
				 RPC_OK);
		const Iolake__Osd__ListShardsResponse *lr = (const void *)c.resp;
		ck_assert_uint_le(lr->n_shards, 3);
		for (size_t i = 0; i < lr->n_shards; i++) {
			const Iolake__Osd__ShardInfo *in = lr->shards[i];
			char name[80];
			snprintf(name, sizeof(name), "%.*s", (int)in->key->object_id.len,
				 in->key->object_id.data);
			ck_assert_uint_eq(in->key->pg, 3);
			ck_assert_msg(strcmp(name, last) > 0, "%s after %s", name, last);
			snprintf(last, sizeof(last), "%s", name);
			seen++;
		}
		bool more = lr->more;
		if (lr->n_shards) {
			const Iolake__Osd__ShardKey *lk = lr->shards[lr->n_shards - 1]->key;
			iolake__osd__shard_key__init(&after);
			after.pg = lk->pg;
			after.shard = lk->shard;
			memcpy(after_oid, lk->object_id.data, lk->object_id.len);
			after.object_id.data = after_oid;
			after.object_id.len = lk->object_id.len;
			have_after = true;
		}
		osd_call_clear(&c);
		if (!more)
			break;
	}
	ck_assert_int_eq(seen, N);

	/* Delete: gone, and a second delete is NOT_FOUND. */
	Iolake__Osd__ShardKey dk;
	Iolake__Osd__DeleteShardRequest dq = IOLAKE__OSD__DELETE_SHARD_REQUEST__INIT;
	osd_key(&dk, 3, oid[7], 1);
	dq.key = &dk;
	ck_assert_int_eq(osd_call_sync(&f.loop, f.ch, OSD_M_DEL, &dq.base, NULL, &c), RPC_OK);
	osd_call_clear(&c);
	ck_assert_int_eq(osd_call_sync(&f.loop, f.ch, OSD_M_DEL, &dq.base, NULL, &c),
			 RPC_NOT_FOUND);
	osd_call_clear(&c);
	ck_assert_int_eq(get(&f, 3, oid[7], 1, 0, 0, &c), RPC_NOT_FOUND);
	osd_call_clear(&c);

	/* Space adds up; counters and metrics are there. */
	const Iolake__Osd__StatusResponse *sp = status(&f, &c);
	ck_assert_uint_eq(sp->osd_id, 7);
	ck_assert_str_eq(sp->cluster_id, "ab000000000000000000000000000000");
	ck_assert_uint_eq(sp->used_bytes + sp->free_bytes + sp->reserved_bytes, sp->total_bytes);
	ck_assert_uint_eq(sp->reserved_bytes, 0);
	/* extents: 65537 (17 blocks), 200000 (49), nothing else after the delete */
	ck_assert_uint_eq(sp->used_bytes, (17 + 49) * 4096);
	/* inline: 0 + 1 + 1024 + 4096 + 65536 bytes, and "other-pg"'s 10 */
	ck_assert_uint_eq(sp->inline_bytes, 1 + 1024 + 4096 + 65536 + 10);
	ck_assert_ptr_nonnull(strstr(sp->metrics_text, "iolake_osd_inline_bytes{osd=\"7\"} 70667"));
	ck_assert_uint_ge(sp->puts, N + 2);
	ck_assert_uint_ge(sp->kv_batches, 1);
	ck_assert_ptr_nonnull(strstr(sp->metrics_text, "iolake_osd_puts_total{osd=\"7\"}"));
	ck_assert_ptr_nonnull(strstr(sp->metrics_text, "iolake_osd_kv_commit_batch_size_bucket"));
	ck_assert_ptr_nonnull(strstr(sp->metrics_text,
				     "iolake_osd_flush_duration_seconds_count{osd=\"7\",kind=\"data\"}"));
	ck_assert_ptr_nonnull(strstr(sp->metrics_text, "iolake_osd_uring_queue_depth"));
	ck_assert_ptr_nonnull(strstr(sp->metrics_text, "iolake_osd_free_bytes{osd=\"7\"}"));
	osd_call_clear(&c);

	for (int i = 0; i < N; i++)
		buf_unref(b[i]);
	buf_unref(nb);
	buf_unref(small);
	fx_teardown(&f);
}
END_TEST

START_TEST(bad_put_stores_nothing)
{
	struct fx f;
	fx_setup(&f, _i, "bp", 64 << 20, 0);
	struct buf *b = pattern(100000, 5);
	Iolake__Osd__ShardKey k;
	Iolake__Osd__PutShardRequest q = IOLAKE__OSD__PUT_SHARD_REQUEST__INIT;
	osd_key(&k, 1, "victim", 2);
	q.key = &k;
	q.length = b->len;
	q.crc32c = crc32c(0, b->data, b->len) ^ 1;
	struct buf_slice pl = { b, 0, b->len };
	struct osd_call c;
	ck_assert_int_eq(osd_call_sync(&f.loop, f.ch, OSD_M_PUT, &q.base, &pl, &c), RPC_DATA_LOSS);
	printf("wrong crc: %s\n", c.message);
	ck_assert_ptr_nonnull(strstr(c.message, "victim"));
	ck_assert_ptr_nonnull(strstr(c.message, "crc32c"));
	osd_call_clear(&c);
	/* Length disagreeing with the payload. */
	q.crc32c = crc32c(0, b->data, b->len);
	q.length = b->len + 1;
	ck_assert_int_eq(osd_call_sync(&f.loop, f.ch, OSD_M_PUT, &q.base, &pl, &c),
			 RPC_INVALID_ARGUMENT);
	osd_call_clear(&c);
	/* A bad key. */
	q.length = b->len;
	osd_key(&k, 1, "", 2);
	ck_assert_int_eq(osd_call_sync(&f.loop, f.ch, OSD_M_PUT, &q.base, &pl, &c),
			 RPC_INVALID_ARGUMENT);
	osd_call_clear(&c);
	q.key = NULL;
	ck_assert_int_eq(osd_call_sync(&f.loop, f.ch, OSD_M_PUT, &q.base, &pl, &c),
			 RPC_INVALID_ARGUMENT);
	osd_call_clear(&c);
	/* Nothing was stored, nothing reserved. */
	ck_assert_int_eq(stat1(&f, 1, "victim", 2, &c), RPC_NOT_FOUND);
	osd_call_clear(&c);
	const Iolake__Osd__StatusResponse *sp = status(&f, &c);
	ck_assert_uint_eq(sp->used_bytes, 0);
	ck_assert_uint_eq(sp->reserved_bytes, 0);
	ck_assert_uint_eq(sp->puts, 0);
	ck_assert_ptr_nonnull(strstr(sp->metrics_text,
				     "iolake_osd_errors_total{osd=\"7\",kind=\"checksum\"} 1"));
	osd_call_clear(&c);
	buf_unref(b);
	fx_teardown(&f);
}
END_TEST

/* A payload changed after its crc was computed (the gateway's buffer
 * scribbled on between crc32c and the call). Where it is caught:
 *  - an extent (100 KB), both transports: by the put, whose one pass over
 *    the store's copy disagrees with the carried crc: DATA_LOSS, nothing
 *    stored;
 *  - an inline shard (4 KiB) over HTTP/2: by the put, the same way;
 *  - an inline shard in process: the payload never left memory, so the
 *    OSD takes the carried crc as the record's without a pass; the put
 *    succeeds and every read of the shard answers DATA_LOSS naming it
 *    (the store verifies the record it returns), never the bad bytes. */
START_TEST(corrupt_after_crc)
{
	struct fx f;
	fx_setup(&f, _i, "cc", 64 << 20, 0);
	static const size_t sizes[] = { 100000, 4096 };
	for (int j = 0; j < 2; j++) {
		const char *oid = j ? "small" : "big";
		struct buf *b = pattern(sizes[j], 11 + j);
		Iolake__Osd__ShardKey k;
		Iolake__Osd__PutShardRequest q = IOLAKE__OSD__PUT_SHARD_REQUEST__INIT;
		osd_key(&k, 3, oid, 1);
		q.key = &k;
		q.length = b->len;
		q.crc32c = crc32c(0, b->data, b->len);
		b->data[b->len / 2] ^= 0x40;   /* after the crc */
		struct buf_slice pl = { b, 0, b->len };
		struct osd_call c;
		int st = osd_call_sync(&f.loop, f.ch, OSD_M_PUT, &q.base, &pl, &c);
		printf("%s %s put: %s %s\n", tname[_i], oid, rpc_status_name(st), c.message);
		osd_call_clear(&c);
		bool trusted = j == 1 && _i == T_LOCAL;
		if (!trusted) {
			ck_assert_int_eq(st, RPC_DATA_LOSS);
			ck_assert_int_eq(stat1(&f, 3, oid, 1, &c), RPC_NOT_FOUND);
			osd_call_clear(&c);
		} else {
			ck_assert_int_eq(st, RPC_OK);
			for (int whole = 0; whole < 2; whole++) {
				st = get(&f, 3, oid, 1, whole ? 0 : 100, whole ? 0 : 10, &c);
				printf("%s %s get: %s %s\n", tname[_i], oid, rpc_status_name(st),
				       c.message);
				ck_assert_int_eq(st, RPC_DATA_LOSS);
				ck_assert_ptr_nonnull(strstr(c.message, oid));
				ck_assert_ptr_null(c.payload.buf);
				osd_call_clear(&c);
			}
		}
		buf_unref(b);
	}
	fx_teardown(&f);
}
END_TEST

struct flip_arg {
	struct srv *s;
	struct store_key k;
	struct store_stat st;
	int rc;
};

static void server_stat(void *arg)
{
	struct flip_arg *a = arg;
	a->rc = store_stat(a->s->st, &a->k, &a->st);
}

START_TEST(flipped_byte_is_data_loss)
{
	struct fx f;
	fx_setup(&f, _i, "cs", 64 << 20, 0);
	struct buf *b = pattern(300000, 77);
	struct osd_call c;
	ck_assert_int_eq(put(&f, 9, "flipme", 4, b, &c), RPC_OK);
	osd_call_clear(&c);
	/* Where the extent is: asked of the store on its own thread. */
	struct flip_arg a = { .s = &f.s };
	store_key_make(&a.k, 9, "flipme", 6, 4);
	ck_assert_int_eq(loop_thread_call(&f.s.lt, server_stat, &a), 0);
	ck_assert_int_eq(a.rc, 0);
	ck_assert(!a.st.is_inline);

	/* Flip one byte in crc block 2, behind the store's back. */
	int fd = open(f.s.dev, O_RDWR);
	ck_assert_int_ge(fd, 0);
	off_t at = (off_t)(STORE_DATA_OFF + a.st.block * STORE_BLOCK_SIZE + 2 * 65536 + 99);
	uint8_t byte;
	ck_assert_int_eq(pread(fd, &byte, 1, at), 1);
	byte ^= 0x01;
	ck_assert_int_eq(pwrite(fd, &byte, 1, at), 1);
	ck_assert_int_eq(fdatasync(fd), 0);
	close(fd);

	ck_assert_int_eq(get(&f, 9, "flipme", 4, 0, 0, &c), RPC_DATA_LOSS);
	printf("checksum error: %s\n", c.message);
	ck_assert_ptr_null(c.payload.buf);
	ck_assert_ptr_nonnull(strstr(c.message, "flipme"));
	ck_assert_ptr_nonnull(strstr(c.message, "pg 9"));
	ck_assert_ptr_nonnull(strstr(c.message, "shard 4"));
	ck_assert_ptr_nonnull(strstr(c.message, "checksum"));
	osd_call_clear(&c);
	/* Ranges outside the damaged crc block still read. */
	expect_bytes(&f, 9, "flipme", 4, b, 0, 2 * 65536);
	expect_bytes(&f, 9, "flipme", 4, b, 3 * 65536, 0);
	ck_assert_int_eq(get(&f, 9, "flipme", 4, 2 * 65536 + 50, 100, &c), RPC_DATA_LOSS);
	osd_call_clear(&c);
	const Iolake__Osd__StatusResponse *sp = status(&f, &c);
	ck_assert_uint_eq(sp->checksum_errors, 2);
	osd_call_clear(&c);
	buf_unref(b);
	fx_teardown(&f);
}
END_TEST

START_TEST(no_space_keeps_data)
{
	struct fx f;
	/* 1 MiB superblock area + 7 MiB of data: three 2 MiB shards fit. */
	fx_setup(&f, _i, "ns", 8 << 20, 0);
	struct buf *b[3];
	char oid[3][24];
	struct osd_call c;
	for (int i = 0; i < 3; i++) {
		snprintf(oid[i], sizeof(oid[i]), "full-%d", i);
		b[i] = pattern(2 << 20, 40 + (uint32_t)i);
		ck_assert_int_eq(put(&f, 2, oid[i], 0, b[i], &c), RPC_OK);
		osd_call_clear(&c);
	}
	struct buf *big = pattern(2 << 20, 9);
	ck_assert_int_eq(put(&f, 2, "one-too-many", 0, big, &c), RPC_RESOURCE_EXHAUSTED);
	printf("no space: %s\n", c.message);
	ck_assert_ptr_nonnull(strstr(c.message, "no space"));
	osd_call_clear(&c);
	/* Overwriting an existing shard when full fails the same way and
	 * keeps the old bytes. */
	ck_assert_int_eq(put(&f, 2, oid[0], 0, big, &c), RPC_RESOURCE_EXHAUSTED);
	osd_call_clear(&c);
	for (int i = 0; i < 3; i++)
		expect_bytes(&f, 2, oid[i], 0, b[i], 0, 0);
	ck_assert_int_eq(stat1(&f, 2, "one-too-many", 0, &c), RPC_NOT_FOUND);
	osd_call_clear(&c);
	/* Small shards still fit inline (metadata only). */
	struct buf *tiny = pattern(1000, 3);
	ck_assert_int_eq(put(&f, 2, "tiny", 0, tiny, &c), RPC_OK);
	osd_call_clear(&c);
	const Iolake__Osd__StatusResponse *sp = status(&f, &c);
	ck_assert_uint_eq(sp->used_bytes, 3 * (2 << 20));
	ck_assert_uint_eq(sp->used_bytes + sp->free_bytes, sp->total_bytes);
	ck_assert_ptr_nonnull(strstr(sp->metrics_text,
				     "iolake_osd_errors_total{osd=\"7\",kind=\"no_space\"} 2"));
	osd_call_clear(&c);
	for (int i = 0; i < 3; i++)
		buf_unref(b[i]);
	buf_unref(big);
	buf_unref(tiny);
	fx_teardown(&f);
}
END_TEST

START_TEST(busy_then_draining)
{
	struct fx f;
	fx_setup(&f, _i, "bz", 64 << 20, 2); /* two calls in flight at most */
	enum { N = 24 };
	struct osd_call c[N];
	struct buf *b = pattern(256 << 10, 11);
	Iolake__Osd__ShardKey k[N];
	char oid[N][24];
	for (int i = 0; i < N; i++) {
		Iolake__Osd__PutShardRequest q = IOLAKE__OSD__PUT_SHARD_REQUEST__INIT;
		snprintf(oid[i], sizeof(oid[i]), "busy-%d", i);
		osd_key(&k[i], 1, oid[i], 0);
		q.key = &k[i];
		q.length = b->len;
		q.crc32c = crc32c(0, b->data, b->len);
		struct buf_slice pl = { b, 0, b->len };
		memset(&c[i], 0, sizeof(c[i]));
		osd_call_start(&f.loop, f.ch, OSD_M_PUT, &q.base, &pl, 0, &c[i]);
	}
	int ok = 0, busy = 0;
	for (int i = 0; i < N; i++) {
		osd_call_wait(&f.loop, &c[i]);
		if (c[i].status == RPC_OK)
			ok++;
		else if (c[i].status == RPC_RESOURCE_EXHAUSTED && strstr(c[i].message, "busy"))
			busy++;
		else
			ck_abort_msg("put %d: %s %s", i, rpc_status_name(c[i].status), c[i].message);
		osd_call_clear(&c[i]);
	}
	printf("busy: %d ok, %d refused\n", ok, busy);
	ck_assert_int_ge(ok, 2);
	ck_assert_int_gt(busy, 0);

	/* Draining: answered UNAVAILABLE (local transport: the server stays up
	 * until drained; over h2 the connection may close first, also
	 * UNAVAILABLE). */
	loop_thread_call(&f.s.lt, srv_begin_drain, &f.s);
	ck_assert_int_eq(stat1(&f, 1, "busy-0", 0, &c[0]), RPC_UNAVAILABLE);
	osd_call_clear(&c[0]);
	buf_unref(b);
	fx_teardown(&f);
}
END_TEST

/* Answer order, across the calls of one test. */
static int answer_seq;

static void note_answer(struct osd_call *c)
{
	c->ud = (void *)(intptr_t)++answer_seq;
}

static uint64_t metric_value(const char *text, const char *series)
{
	const char *p = strstr(text, series);
	return p ? strtoull(p + strlen(series), NULL, 10) : 0;
}

/* Background GetShards (recovery's) sent right behind a burst of client
 * PutShards are parked while the puts do store work, then all answered
 * with the right bytes; no background call is answered before the first
 * client one. A parked call ages out after bg_max_wait_ms (100 ms by
 * default): 10 s here, so a loaded machine's slow puts cannot age one
 * out and the order is the scheduler's alone. */
START_TEST(background_yields_to_clients)
{
	struct fx f;
	bg_max_wait_ms = 10000;
	fx_setup(&f, _i, "bg", 256 << 20, 0);
	struct buf *src = pattern(64 << 10, 3);
	struct osd_call c0;
	ck_assert_int_eq(put(&f, 2, "bg-src", 0, src, &c0), RPC_OK);
	osd_call_clear(&c0);

	enum { NFG = 16, NBG = 12 };
	struct osd_call fg[NFG], bg[NBG];
	struct buf *b = pattern(256 << 10, 5);
	Iolake__Osd__ShardKey kf[NFG], kb;
	char oid[NFG][24];
	answer_seq = 0;
	for (int i = 0; i < NFG; i++) {
		Iolake__Osd__PutShardRequest q = IOLAKE__OSD__PUT_SHARD_REQUEST__INIT;
		snprintf(oid[i], sizeof(oid[i]), "fg-%d", i);
		osd_key(&kf[i], 2, oid[i], 0);
		q.key = &kf[i];
		q.length = b->len;
		q.crc32c = crc32c(0, b->data, b->len);
		struct buf_slice pl = { b, 0, b->len };
		memset(&fg[i], 0, sizeof(fg[i]));
		fg[i].then = note_answer;
		osd_call_start(&f.loop, f.ch, OSD_M_PUT, &q.base, &pl, 0, &fg[i]);
	}
	osd_key(&kb, 2, "bg-src", 0);
	for (int i = 0; i < NBG; i++) {
		Iolake__Osd__GetShardRequest q = IOLAKE__OSD__GET_SHARD_REQUEST__INIT;
		q.key = &kb;
		q.background = true;
		memset(&bg[i], 0, sizeof(bg[i]));
		bg[i].then = note_answer;
		osd_call_start(&f.loop, f.ch, OSD_M_GET, &q.base, NULL, 0, &bg[i]);
	}
	int first_fg = INT32_MAX, first_bg = INT32_MAX;
	for (int i = 0; i < NFG; i++) {
		osd_call_wait(&f.loop, &fg[i]);
		ck_assert_msg(fg[i].status == RPC_OK, "put %d: %s %s", i,
			      rpc_status_name(fg[i].status), fg[i].message);
		int seq = (int)(intptr_t)fg[i].ud;
		first_fg = seq < first_fg ? seq : first_fg;
		osd_call_clear(&fg[i]);
	}
	for (int i = 0; i < NBG; i++) {
		osd_call_wait(&f.loop, &bg[i]);
		ck_assert_msg(bg[i].status == RPC_OK, "background get %d: %s %s", i,
			      rpc_status_name(bg[i].status), bg[i].message);
		ck_assert_uint_eq(bg[i].payload.len, src->len);
		ck_assert(memcmp(buf_slice_data(&bg[i].payload), src->data, src->len) == 0);
		int seq = (int)(intptr_t)bg[i].ud;
		first_bg = seq < first_bg ? seq : first_bg;
		osd_call_clear(&bg[i]);
	}
	const Iolake__Osd__StatusResponse *sp = status(&f, &c0);
	uint64_t deferred = metric_value(sp->metrics_text,
					 "iolake_osd_background_deferred_total{osd=\"7\"} ");
	printf("bg: first client answer #%d, first background answer #%d, %llu deferred\n",
	       first_fg, first_bg, (unsigned long long)deferred);
	ck_assert_uint_gt(deferred, 0);
	ck_assert_int_lt(first_fg, first_bg);
	ck_assert_ptr_nonnull(strstr(sp->metrics_text, "iolake_osd_background_wait_seconds_bucket"));
	osd_call_clear(&c0);
	buf_unref(b);
	buf_unref(src);
	fx_teardown(&f);
}
END_TEST

static void setup_once(void)
{
	runner_pid = (int)getpid();
}

static void teardown_once(void)
{
	char p[160];
	for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
		test_scratch_path(p, sizeof(p), "iolake-test-svc-%d-%s.dev", runner_pid, tags[i]);
		unlink(p);
		test_scratch_path(p, sizeof(p), "iolake-test-svc-%d-%s.meta", runner_pid, tags[i]);
		nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	}
}

/* Every bad shard, pages of `limit` (at most 8 in all); returns the count
 * and the number of pages it took. */
static int list_bad(struct fx *f, uint32_t limit, Iolake__Osd__BadShard *out, char oids[][24],
		    int *pages)
{
	int n = 0;
	*pages = 0;
	Iolake__Osd__ShardKey after;
	bool have_after = false;
	for (;;) {
		struct osd_call c;
		Iolake__Osd__ListBadShardsRequest q = IOLAKE__OSD__LIST_BAD_SHARDS_REQUEST__INIT;
		q.limit = limit;
		if (have_after)
			q.after = &after;
		ck_assert_int_eq(osd_call_sync(&f->loop, f->ch, OSD_M_LIST_BAD, &q.base, NULL, &c),
				 RPC_OK);
		const Iolake__Osd__ListBadShardsResponse *r = (const void *)c.resp;
		(*pages)++;
		ck_assert_uint_le(r->n_shards, limit);
		for (size_t i = 0; i < r->n_shards && n < 8; i++, n++) {
			out[n] = *r->shards[i];
			ck_assert_uint_lt(r->shards[i]->key->object_id.len, 24);
			memcpy(oids[n], r->shards[i]->key->object_id.data,
			       r->shards[i]->key->object_id.len);
			oids[n][r->shards[i]->key->object_id.len] = 0;
			out[n].key = NULL;
			out[n].kind = (char *)(strcmp(r->shards[i]->kind, "checksum") ? "other" : "checksum");
		}
		bool more = r->more;
		if (more) {
			osd_key(&after, r->shards[r->n_shards - 1]->key->pg, oids[n - 1],
				r->shards[r->n_shards - 1]->key->shard);
			have_after = true;
		}
		osd_call_clear(&c);
		if (!more)
			return n;
	}
}

START_TEST(scrub_lists_bad_shards_paged)
{
	struct fx f;
	next_scrub_rate = 1ull << 30;
	fx_setup(&f, _i, "sb", 64 << 20, 0);
	next_scrub_rate = 0;
	struct osd_call c;
	struct buf *b = pattern(100000, 5);
	char oid[24];
	for (int i = 0; i < 5; i++) {
		snprintf(oid, sizeof(oid), "bad-%d", i);
		ck_assert_int_eq(put(&f, 3, oid, 1, b, &c), RPC_OK);
		osd_call_clear(&c);
		snprintf(oid, sizeof(oid), "good-%d", i);
		ck_assert_int_eq(put(&f, 3, oid, 1, b, &c), RPC_OK);
		osd_call_clear(&c);
	}
	/* Damage bad-0, bad-2 and bad-4 in their second crc block while the
	 * OSD runs (and scrubs every 200 ms). */
	int fd = open(f.s.dev, O_RDWR);
	ck_assert_int_ge(fd, 0);
	for (int i = 0; i < 5; i += 2) {
		struct flip_arg a = { .s = &f.s };
		snprintf(oid, sizeof(oid), "bad-%d", i);
		store_key_make(&a.k, 3, oid, strlen(oid), 1);
		ck_assert_int_eq(loop_thread_call(&f.s.lt, server_stat, &a), 0);
		ck_assert_int_eq(a.rc, 0);
		off_t at = (off_t)(STORE_DATA_OFF + a.st.block * STORE_BLOCK_SIZE + 70000);
		uint8_t byte;
		ck_assert_int_eq(pread(fd, &byte, 1, at), 1);
		byte ^= 0x08;
		ck_assert_int_eq(pwrite(fd, &byte, 1, at), 1);
	}
	close(fd);

	Iolake__Osd__BadShard bad[8];
	char oids[8][24];
	int pages = 0, n = 0;
	for (int tries = 0; tries < 300 && n < 3; tries++) {
		n = list_bad(&f, 2, bad, oids, &pages);
		if (n < 3)
			usleep(20000);
	}
	ck_assert_int_eq(n, 3);
	ck_assert_int_eq(pages, 2); /* 2 + 1, the first with more set */
	for (int i = 0; i < 3; i++) {
		snprintf(oid, sizeof(oid), "bad-%d", 2 * i);
		ck_assert_str_eq(oids[i], oid);
		ck_assert_str_eq(bad[i].kind, "checksum");
		ck_assert_uint_eq(bad[i].bad_offset, 65536);
		ck_assert_uint_eq(bad[i].bad_length, 100000 - 65536);
		ck_assert_uint_eq(bad[i].length, 100000);
	}
	const Iolake__Osd__StatusResponse *sp = status(&f, &c);
	ck_assert_uint_eq(sp->scrub_rate, 1ull << 30);
	ck_assert_uint_eq(sp->scrub_errors, 3);
	ck_assert_uint_ge(sp->scrub_passes, 1);
	ck_assert_ptr_nonnull(strstr(sp->metrics_text, "iolake_osd_scrub_errors_total{osd=\"7\"} 3"));
	osd_call_clear(&c);

	/* Deleting a bad shard drops its record. */
	Iolake__Osd__ShardKey k;
	Iolake__Osd__DeleteShardRequest dq = IOLAKE__OSD__DELETE_SHARD_REQUEST__INIT;
	osd_key(&k, 3, "bad-2", 1);
	dq.key = &k;
	ck_assert_int_eq(osd_call_sync(&f.loop, f.ch, OSD_M_DEL, &dq.base, NULL, &c), RPC_OK);
	osd_call_clear(&c);
	ck_assert_int_eq(list_bad(&f, 10, bad, oids, &pages), 2);
	ck_assert_str_eq(oids[0], "bad-0");
	ck_assert_str_eq(oids[1], "bad-4");
	buf_unref(b);
	fx_teardown(&f);
}
END_TEST

/* ------------------------------------------------------------ direct reads */

/* A GetShard made as the gateway makes it (rpc_call_ref: the request by
 * reference, so the in-process transport may serve it on this thread). */
struct ref_get {
	Iolake__Osd__ShardKey k;
	Iolake__Osd__GetShardRequest q;
	struct buf hold;
	bool done;
	int status;
	char message[600];
	uint32_t range_crc;
	struct buf *bytes;        /* a copy of the payload */
};

static void ref_hold_release(struct buf *b)
{
	(void)b; /* the struct is the test's, on its stack */
}

static void on_ref_get(void *ud, const struct rpc_result *res)
{
	struct ref_get *g = ud;
	g->status = res->status;
	snprintf(g->message, sizeof(g->message), "%s", res->message);
	if (res->status == RPC_OK) {
		const Iolake__Osd__GetShardResponse *r = (const void *)res->resp;
		g->range_crc = r->range_crc32c;
		g->bytes = buf_copy(res->payload.buf ? buf_slice_data(&res->payload) : (void *)"",
				    res->payload.buf ? res->payload.len : 0);
	}
	g->done = true;
}

static int ref_get(struct fx *f, struct ref_get *g, const char *oid, bool background,
		   const char *req_id)
{
	memset(g, 0, sizeof(*g));
	osd_key(&g->k, 3, oid, 2);
	g->q = (Iolake__Osd__GetShardRequest)IOLAKE__OSD__GET_SHARD_REQUEST__INIT;
	g->q.key = &g->k;
	g->q.background = background;
	buf_init_embedded(&g->hold, NULL, 0, ref_hold_release, NULL);
	struct rpc_call_opts o = { .timeout_ms = 30000, .request_id = req_id };
	rpc_call_ref(f->ch, OSD_SVC, OSD_M_GET, &g->q.base, &g->hold, NULL, &o, on_ref_get, g);
	/* The callback never runs inside the call, direct or not. */
	ck_assert(!g->done);
	/* NOWAIT: a failure deferred on a timer (no such server) may complete
	 * in the timer phase of a ONCE run, which would then poll forever. */
	while (!g->done)
		if (!uv_run(&f->loop, UV_RUN_NOWAIT))
			usleep(100);
	buf_unref(&g->hold);
	return g->status;
}

static uint64_t osd_metric(struct fx *f, const char *series)
{
	struct osd_call c;
	const Iolake__Osd__StatusResponse *sp = status(f, &c);
	uint64_t v = metric_value(sp->metrics_text, series);
	osd_call_clear(&c);
	return v;
}

static bool log_has(const char *path, const char *a, const char *b)
{
	FILE *fp = fopen(path, "r");
	ck_assert_ptr_nonnull(fp);
	char line[LOG_LINE_MAX];
	bool found = false;
	while (!found && fgets(line, sizeof(line), fp))
		found = strstr(line, a) && strstr(line, b);
	fclose(fp);
	return found;
}

#define DIRECT_GETS "iolake_osd_direct_gets_total{osd=\"7\"} "
#define GETS "iolake_osd_gets_total{osd=\"7\"} "
#define GET_LAT "iolake_osd_request_duration_seconds_count{osd=\"7\",method=\"GetShard\"} "

/* In process, a client read of an inline shard is served on the caller's
 * thread (counted in iolake_osd_direct_gets_total) with the same answer,
 * metrics and slow-op log line as a posted read; a shard on the device, a
 * background read, an inline value failing its crc, a draining OSD and an
 * armed fault layer all take the posted path (direct count unchanged). */
START_TEST(direct_reads_fall_back_when_they_must)
{
	struct fx f;
	fx_setup(&f, T_LOCAL, "dr", 64 << 20, 0);
	char logpath[128];
	test_scratch_path(logpath, sizeof(logpath), "iolake-test-svc-%d-dr.log", runner_pid);
	int lfd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
	ck_assert_int_ge(lfd, 0);
	int old_fd = log_set_fd(lfd);
	log_set_level(LOG_LEVEL_DEBUG);
	struct buf *in = pattern(16 << 10, 21), *ext = pattern(256 << 10, 22);
	struct osd_call c;
	ck_assert_int_eq(put(&f, 3, "d-inline", 2, in, &c), RPC_OK);
	osd_call_clear(&c);
	ck_assert_int_eq(put(&f, 3, "d-ext", 2, ext, &c), RPC_OK);
	osd_call_clear(&c);
	/* Inline, its crc computed then a byte changed (see corrupt_after_crc). */
	struct buf *bad = pattern(4096, 23);
	Iolake__Osd__ShardKey bk;
	Iolake__Osd__PutShardRequest bq = IOLAKE__OSD__PUT_SHARD_REQUEST__INIT;
	osd_key(&bk, 3, "d-bad", 2);
	bq.key = &bk;
	bq.length = bad->len;
	bq.crc32c = crc32c(0, bad->data, bad->len);
	bad->data[7] ^= 1;
	struct buf_slice bpl = { bad, 0, bad->len };
	ck_assert_int_eq(osd_call_sync(&f.loop, f.ch, OSD_M_PUT, &bq.base, &bpl, &c), RPC_OK);
	osd_call_clear(&c);

	uint64_t gets0 = osd_metric(&f, GETS), lat0 = osd_metric(&f, GET_LAT);
	ck_assert_uint_eq(osd_metric(&f, DIRECT_GETS), 0);

	struct ref_get g;
	ck_assert_int_eq(ref_get(&f, &g, "d-inline", false, "00000000000000d1"), RPC_OK);
	ck_assert_uint_eq(g.bytes->len, in->len);
	ck_assert(memcmp(g.bytes->data, in->data, in->len) == 0);
	ck_assert_uint_eq(g.range_crc, crc32c(0, in->data, in->len));
	buf_unref(g.bytes);
	ck_assert_uint_eq(osd_metric(&f, DIRECT_GETS), 1);
	ck_assert_uint_eq(osd_metric(&f, GETS), gets0 + 1);
	ck_assert_uint_eq(osd_metric(&f, GET_LAT), lat0 + 1);

	/* On the device: the loop reads it. */
	ck_assert_int_eq(ref_get(&f, &g, "d-ext", false, "00000000000000d2"), RPC_OK);
	ck_assert_uint_eq(g.bytes->len, ext->len);
	ck_assert(memcmp(g.bytes->data, ext->data, ext->len) == 0);
	buf_unref(g.bytes);
	/* Background: the loop decides whether it parks. */
	ck_assert_int_eq(ref_get(&f, &g, "d-inline", true, "00000000000000d3"), RPC_OK);
	buf_unref(g.bytes);
	/* A bad inline value: DATA_LOSS from the loop, which reports it. */
	ck_assert_int_eq(ref_get(&f, &g, "d-bad", false, "00000000000000d4"), RPC_DATA_LOSS);
	ck_assert_ptr_nonnull(strstr(g.message, "checksum"));
	ck_assert_uint_eq(osd_metric(&f, DIRECT_GETS), 1);
	ck_assert_uint_eq(osd_metric(&f, GETS), gets0 + 3);
	ck_assert_uint_eq(osd_metric(&f, GET_LAT), lat0 + 3);

	/* The slow-op log's read lines (debug), one per read, either path. */
	ck_assert(log_has(logpath, "req=00000000000000d1", "direct=1"));
	ck_assert(log_has(logpath, "req=00000000000000d1", "op=GetShard"));
	ck_assert(log_has(logpath, "req=00000000000000d2", "direct=0"));
	ck_assert(log_has(logpath, "req=00000000000000d3", "bg=1 direct=0"));

	/* Draining (the OSD going down): answered UNAVAILABLE by the loop. */
	loop_thread_call(&f.s.lt, srv_begin_drain, &f.s);
	ck_assert_int_eq(ref_get(&f, &g, "d-inline", false, "00000000000000d5"), RPC_UNAVAILABLE);
	/* "shutting down" while it drains, "no such local server" once closed. */
	printf("draining: %s\n", g.message);
	ck_assert(!log_has(logpath, "req=00000000000000d5", "direct=1"));

	log_set_level(LOG_LEVEL_INFO);
	log_set_fd(old_fd);
	close(lfd);
	unlink(logpath);
	buf_unref(in);
	buf_unref(ext);
	buf_unref(bad);
	fx_teardown(&f);
}
END_TEST

static Suite *service_suite(void)
{
	Suite *s = suite_create("osd_service");
	TCase *tc = tcase_create("service");
	tcase_add_unchecked_fixture(tc, setup_once, teardown_once);
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, round_trips, 0, TRANSPORTS);
	tcase_add_loop_test(tc, bad_put_stores_nothing, 0, TRANSPORTS);
	tcase_add_loop_test(tc, corrupt_after_crc, 0, TRANSPORTS);
	tcase_add_loop_test(tc, flipped_byte_is_data_loss, 0, TRANSPORTS);
	tcase_add_loop_test(tc, no_space_keeps_data, 0, TRANSPORTS);
	tcase_add_loop_test(tc, busy_then_draining, 0, TRANSPORTS);
	tcase_add_loop_test(tc, background_yields_to_clients, 0, TRANSPORTS);
	tcase_add_loop_test(tc, scrub_lists_bad_shards_paged, 0, TRANSPORTS);
	tcase_add_test(tc, direct_reads_fall_back_when_they_must);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	/* As the binaries do: a peer that closed must not kill the test. */
	signal(SIGPIPE, SIG_IGN);
	SRunner *sr = srunner_create(service_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
