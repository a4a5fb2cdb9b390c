/*
 * test_sweep.c — the orphan sweep (osd/sweep.c) over a real store on
 * /dev/shm and a stand-in meta: an in-process RPC server ("local:") that
 * serves the Meta service's CheckShards from a set the test controls, or
 * fails every call.
 *
 *  - meta failing: passes are abandoned, nothing is deleted, however long;
 *  - meta answering: unreferenced ids become candidates and are deleted
 *    only after the grace (every segment and shard of them, extent and
 *    inline), referenced ones and ids that are not 20 bytes never;
 *  - an unreferenced id that becomes referenced before its grace ends is
 *    forgotten and kept;
 *  - stop with the store still open; the loop closes cleanly.
 */
#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/loop.h"
#include "common/rpc.h"
#include "meta/node.h"
#include "osd/store/store.h"
#include "osd/sweep.h"
#include "proto/meta.pb-c.h"
#include "tests/lib/scratch.h"

/* ------------------------------------------------------ the stand-in */

#define MAX_REFS 16
static struct {
	bool fail;
	struct { uint32_t pg; uint8_t id[16]; } refs[MAX_REFS];
	int n_refs;
	int calls;
} fake;

static void fake_ref(uint32_t pg, uint8_t tag, bool on)
{
	for (int i = 0; i < fake.n_refs; i++)
		if (fake.refs[i].pg == pg && fake.refs[i].id[0] == tag) {
			if (!on)
				fake.refs[i] = fake.refs[--fake.n_refs];
			return;
		}
	if (on) {
		fake.refs[fake.n_refs].pg = pg;
		memset(fake.refs[fake.n_refs].id, tag, 16);
		fake.n_refs++;
	}
}

static void h_check(struct rpc_req *r, void *ud)
{
	(void)ud;
	fake.calls++;
	if (fake.fail) {
		rpc_fail(r, RPC_INTERNAL, "stand-in meta failing");
		return;
	}
	const Iolake__Meta__CheckShardsRequest *q = (const void *)rpc_req_msg(r);
	protobuf_c_boolean refd[1000];
	ck_assert_uint_le(q->n_object_ids, 1000);
	for (size_t i = 0; i < q->n_object_ids; i++) {
		ck_assert_uint_eq(q->object_ids[i].len, 16);
		refd[i] = false;
		for (int j = 0; j < fake.n_refs; j++)
			if (fake.refs[j].pg == q->pg &&
			    !memcmp(fake.refs[j].id, q->object_ids[i].data, 16))
				refd[i] = true;
	}
	Iolake__Meta__CheckShardsResponse resp = IOLAKE__META__CHECK_SHARDS_RESPONSE__INIT;
	resp.referenced = refd;
	resp.n_referenced = q->n_object_ids;
	rpc_respond(r, &resp.base, NULL);
}

/* ------------------------------------------------------------ helpers */

static void stop_loop(uv_timer_t *t)
{
	uv_stop(t->loop);
}

static void run_ms(uv_loop_t *loop, uint64_t ms)
{
	uint64_t end = loop_now_ms() + ms;
	uv_timer_t t;
	uv_timer_init(loop, &t);
	while (loop_now_ms() < end) {
		uv_timer_start(&t, stop_loop, 5, 0);
		uv_run(loop, UV_RUN_ONCE);
	}
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
}

static int put_status;
static bool put_done;
static void on_put(struct store_put_req *req, int status)
{
	(void)req;
	put_status = status;
	put_done = true;
}

/* Put one shard of len bytes under (pg, oid[0..oid_len), shard). */
static void put(uv_loop_t *loop, struct store *st, uint32_t pg, const uint8_t *oid,
		size_t oid_len, uint8_t shard, size_t len)
{
	struct store_key k;
	ck_assert_int_eq(store_key_make(&k, pg, oid, oid_len, shard), 0);
	struct buf *b = buf_new(len);
	ck_assert_ptr_nonnull(b);
	memset(b->data, 0x5a, len);
	b->len = len;
	struct store_put_req req = { 0 };
	put_done = false;
	ck_assert_int_eq(store_put(st, &req, &k, (struct buf_slice){ b, 0, len }, on_put), 0);
	buf_unref(b);
	while (!put_done)
		uv_run(loop, UV_RUN_ONCE);
	ck_assert_int_eq(put_status, 0);
}

/* A gw_data shard's OSD object id: 16 bytes of tag, be32(seg). */
static void oid20(uint8_t out[20], uint8_t tag, uint32_t seg)
{
	memset(out, tag, 16);
	out[16] = (uint8_t)(seg >> 24);
	out[17] = (uint8_t)(seg >> 16);
	out[18] = (uint8_t)(seg >> 8);
	out[19] = (uint8_t)seg;
}

static bool has(struct store *st, uint32_t pg, const uint8_t *oid, size_t len, uint8_t shard)
{
	struct store_key k;
	struct store_stat s;
	ck_assert_int_eq(store_key_make(&k, pg, oid, len, shard), 0);
	return store_stat(st, &k, &s) == 0;
}

/* Shards of the gw_data id (pg, tag) still stored: segments 0..1, shards
 * 0 and 3 of each. */
static int count(struct store *st, uint32_t pg, uint8_t tag)
{
	int n = 0;
	uint8_t o[20];
	for (uint32_t seg = 0; seg < 2; seg++) {
		oid20(o, tag, seg);
		n += has(st, pg, o, 20, 0) + has(st, pg, o, 20, 3);
	}
	return n;
}

static void put_object(uv_loop_t *loop, struct store *st, uint32_t pg, uint8_t tag)
{
	uint8_t o[20];
	for (uint32_t seg = 0; seg < 2; seg++) {
		oid20(o, tag, seg);
		put(loop, st, pg, o, 20, 0, 256 << 10);   /* an extent */
		put(loop, st, pg, o, 20, 3, 1000);        /* inline */
	}
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static bool stopped, closed;
static void on_stopped(void *arg)
{
	(void)arg;
	stopped = true;
}
static void on_closed(void *arg)
{
	(void)arg;
	closed = true;
}

/* Long enough that the steps between the first candidates and the check
 * that they are still there (a store PUT, 350 ms of loop) end inside it
 * on a loaded 2-core CI machine: at 400 ms the grace once ran out first
 * (candidates 3 expected, 1 seen: b1 and c1 already deleted). */
#define GRACE_MS 1500

START_TEST(test_sweep)
{
	char dir[96], dev[128], meta[128];
	ck_assert_int_lt(test_scratch_path(dir, sizeof(dir), "iolake-sweep-XXXXXX"), (int)sizeof(dir));
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(dev, sizeof(dev), "%s/dev", dir);
	snprintf(meta, sizeof(meta), "%s/meta", dir);
	uv_loop_t loop;
	uv_loop_init(&loop);
	char err[256];
	struct store *st = NULL;
	struct store_opts so = { .device_path = dev, .meta_dir = meta, .create_size = 64 << 20,
				 .create_sparse = true, .osd_id = 1 };
	ck_assert_int_eq(store_open(&loop, &so, &st, err, sizeof(err)), 0);

	struct rpc_server *srv = rpc_server_new(&loop, NULL);
	ck_assert_ptr_nonnull(srv);
	static rpc_handler_fn handlers[META_M_COUNT];
	handlers[META_M_CHECK_SHARDS] = h_check;
	ck_assert_int_eq(rpc_server_add_service(srv, META_SERVICE, handlers, NULL), 0);
	ck_assert_int_eq(rpc_server_listen(srv, "local:sweep-meta"), 0);

	/* Live 0xa1 (pg 5), orphans 0xb1 (pg 5) and 0xc1 (pg 9), and a shard
	 * whose id is not a gw_data one (7 bytes) in pg 5. */
	put_object(&loop, st, 5, 0xa1);
	put_object(&loop, st, 5, 0xb1);
	put_object(&loop, st, 9, 0xc1);
	put(&loop, st, 5, (const uint8_t *)"strange", 7, 0, 5000);
	fake_ref(5, 0xa1, true);
	struct store_space sp0;
	store_space(st, &sp0);

	struct metrics_registry *reg = metrics_registry_new();
	const char *members[1] = { "local:sweep-meta" };
	struct osd_sweep_opts wo = { .osd_id = 1, .meta = members, .n_meta = 1,
				     .grace_ms = GRACE_MS, .interval_ms = 40, .page_keys = 3,
				     .metrics = reg };
	struct osd_sweep *sw = NULL;
	ck_assert_int_eq(osd_sweep_start(&loop, st, &wo, &sw), 0);
	struct osd_sweep_stats ss;

	/* Meta failing: nothing is ever deleted. */
	fake.fail = true;
	run_ms(&loop, 900);
	osd_sweep_stats(sw, &ss);
	printf("meta failing: %d calls, %llu passes skipped\n", fake.calls,
	       (unsigned long long)ss.passes_skipped);
	ck_assert_int_gt(fake.calls, 0);
	ck_assert_uint_gt(ss.passes_skipped, 0);
	ck_assert_uint_eq(ss.shards_deleted, 0);
	ck_assert_int_eq(count(st, 5, 0xb1), 4);
	ck_assert_int_eq(count(st, 9, 0xc1), 4);

	/* Meta answering: candidates first, deleted only after the grace. */
	fake.fail = false;
	uint64_t t0 = loop_now_ms();
	run_ms(&loop, 200);
	osd_sweep_stats(sw, &ss);
	ck_assert_uint_eq(ss.candidates, 2);
	ck_assert_uint_eq(ss.shards_deleted, 0);
	ck_assert_int_eq(count(st, 5, 0xb1), 4);
	/* A third orphan appears, then becomes referenced (its record
	 * committed) before its grace ends: kept. */
	put_object(&loop, st, 5, 0xe1);
	run_ms(&loop, 150);
	osd_sweep_stats(sw, &ss);
	ck_assert_uint_eq(ss.candidates, 3);
	fake_ref(5, 0xe1, true);
	while (loop_now_ms() - t0 < GRACE_MS + 800)
		run_ms(&loop, 50);
	osd_sweep_stats(sw, &ss);
	printf("after the grace: candidates %llu, deleted %llu shards, %llu bytes\n",
	       (unsigned long long)ss.candidates, (unsigned long long)ss.shards_deleted,
	       (unsigned long long)ss.bytes_deleted);
	ck_assert_int_eq(count(st, 5, 0xb1), 0);
	ck_assert_int_eq(count(st, 9, 0xc1), 0);
	ck_assert_int_eq(count(st, 5, 0xa1), 4);
	ck_assert_int_eq(count(st, 5, 0xe1), 4);
	ck_assert(has(st, 5, (const uint8_t *)"strange", 7, 0));
	ck_assert_uint_eq(ss.shards_deleted, 8);
	ck_assert_uint_eq(ss.bytes_deleted, 4 * (256 << 10) + 4 * 1000);
	ck_assert_uint_eq(ss.candidates, 0);
	struct store_space sp1;
	store_space(st, &sp1);
	/* Two orphans' shards freed, 0xe1's added since sp0. */
	ck_assert_uint_eq(sp1.used_bytes, sp0.used_bytes - 4 * (256 << 10) + 2 * (256 << 10));
	ck_assert_uint_eq(sp1.inline_bytes, sp0.inline_bytes - 4 * 1000 + 2 * 1000);

	osd_sweep_stop(sw, on_stopped, NULL);
	ck_assert(!stopped);   /* never from inside the call */
	while (!stopped)
		uv_run(&loop, UV_RUN_ONCE);
	rpc_server_close(srv);
	store_close(st, on_closed, NULL);
	while (!closed)
		uv_run(&loop, UV_RUN_ONCE);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
	metrics_registry_free(reg);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sweep");
	TCase *tc = tcase_create("sweep");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_sweep);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
