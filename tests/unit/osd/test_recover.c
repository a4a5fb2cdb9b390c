/*
 * test_recover.c — the pure parts of the recovery driver (osd/recover.h):
 * the object-id order its k-way merge relies on must be the shard index's
 * own (store_key_encode, compared bytewise, as RocksDB does), the primary
 * is the lowest up slot, signatures compare slots and up flags, and a
 * stripe is rebuilt only with k shards present and an up slot lacking
 * one; deep scrub's check (osd_recover_deep_check) names the one bad
 * shard of a 4+2 stripe, data or parity, with its right bytes, and calls
 * two bad shards (or any with m = 1) inconsistent. And deep scrub end
 * to end: one meta member, six real OSDs and their recovery drivers in
 * this process; a shard rewritten with other bytes and a matching crc
 * (data, then parity) is found and rewritten to its original bytes, the
 * passes after find nothing, and two such shards in one stripe are
 * counted inconsistent and left as they are. The merge and rebuild against real OSDs are in
 * tests/integration/test_recovery.py.
 */
#include <check.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "common/crc.h"
#include "common/ec.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/metrics.h"
#include "meta/mapwatch.h"
#include "meta/node.h"
#include "common/place.h"
#include "osd/metaclient.h"
#include "osd/recover.h"
#include "osd/store/rec.h"
#include "tests/lib/osd_call.h"
#include "tests/lib/osd_cluster.h"

static int key_order(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
	struct store_key ka, kb;
	uint8_t ea[STORE_KEY_LEN], eb[STORE_KEY_LEN];
	store_key_make(&ka, 7, a, al, 0);
	store_key_make(&kb, 7, b, bl, 0);
	store_key_encode(&ka, ea);
	store_key_encode(&kb, eb);
	int c = memcmp(ea, eb, STORE_KEY_LEN);
	return c < 0 ? -1 : c > 0;
}

START_TEST(oid_order_is_the_index_order)
{
	unsigned seed = getenv("IOLAKE_SEED") ? (unsigned)atoi(getenv("IOLAKE_SEED"))
					      : (unsigned)time(NULL);
	printf("test_recover: seed %u\n", seed);
	srand(seed);
	/* Hand-picked ties: zero padding and the length byte. */
	static const struct { const char *a; size_t al; const char *b; size_t bl; } fixed[] = {
		{ "a", 1, "a\0", 2 }, { "a\0", 2, "a", 1 }, { "a\0\1", 3, "a", 1 },
		{ "ab", 2, "a", 1 }, { "a", 1, "a", 1 }, { "\xff", 1, "\0\0", 2 },
	};
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		ck_assert_int_eq(osd_recover_oid_cmp((const uint8_t *)fixed[i].a, fixed[i].al,
						     (const uint8_t *)fixed[i].b, fixed[i].bl),
				 key_order((const uint8_t *)fixed[i].a, fixed[i].al,
					   (const uint8_t *)fixed[i].b, fixed[i].bl));
	/* Random ids from a tiny alphabet with zeros, so ties and padding
	 * come up often. */
	for (int n = 0; n < 200000; n++) {
		uint8_t a[64], b[64];
		size_t al = 1 + (size_t)rand() % 6, bl = 1 + (size_t)rand() % 6;
		for (size_t i = 0; i < 64; i++) {
			a[i] = (uint8_t)(rand() % 3);
			b[i] = (uint8_t)(rand() % 3);
		}
		if (rand() % 2)
			memcpy(b, a, al < bl ? al : bl);
		int got = osd_recover_oid_cmp(a, al, b, bl), want = key_order(a, al, b, bl);
		if (got != want)
			ck_abort_msg("seed %u: oid_cmp %d, index order %d (lengths %zu, %zu)", seed,
				     got, want, al, bl);
	}
}
END_TEST

static struct osd_recover_sig sig6(uint32_t a, uint32_t b, uint32_t c, uint32_t d, uint32_t e,
				   uint32_t f, uint32_t up)
{
	struct osd_recover_sig s = { .width = 6, .osds = { a, b, c, d, e, f }, .up_mask = up };
	return s;
}

START_TEST(primary_and_signature)
{
	const uint32_t N = OSD_RECOVER_NONE;
	struct osd_recover_sig s = sig6(4, 2, 7, 1, 3, 5, 0x3f);
	int p = osd_recover_primary_slot(9, &s);
	ck_assert_int_ge(p, 0);
	ck_assert_int_eq(p, place_primary_slot(9, s.osds, 6, 0x3f));
	/* a slot other than the primary's going down changes nothing */
	s.up_mask = 0x3f & ~(1u << ((p + 1) % 6));
	ck_assert_int_eq(osd_recover_primary_slot(9, &s), p);
	/* the primary's going down hands the PG to another up slot */
	s.up_mask = 0x3f & ~(1u << p);
	int q = osd_recover_primary_slot(9, &s);
	ck_assert_int_ge(q, 0);
	ck_assert_int_ne(q, p);
	s = sig6(N, N, 7, 1, 3, 5, 0x3c);
	ck_assert_int_ge(osd_recover_primary_slot(9, &s), 2);
	s.up_mask = 0;
	ck_assert_int_eq(osd_recover_primary_slot(9, &s), -1);
	/* An up bit on an empty slot does not make a primary. */
	s = sig6(N, 2, 3, 4, 5, 6, 0x01);
	ck_assert_int_eq(osd_recover_primary_slot(9, &s), -1);
	/* Declustered: the same six OSDs in the same slots of 256 PGs (as
	 * placement leaves them when they all registered in one order) still
	 * give each OSD about a sixth of the PGs to lead. */
	unsigned lead[6] = { 0 };
	s = sig6(1, 2, 3, 4, 5, 6, 0x3f);
	for (uint32_t pg = 0; pg < 256; pg++)
		lead[osd_recover_primary_slot(pg, &s)]++;
	for (int i = 0; i < 6; i++) {
		ck_assert_uint_ge(lead[i], 20);   /* 256 / 6 = 42.7 */
		ck_assert_uint_le(lead[i], 70);
	}

	struct osd_recover_sig a = sig6(1, 2, 3, 4, 5, 6, 0x3f), b = a;
	ck_assert(osd_recover_sig_eq(&a, &b));
	b.up_mask = 0x3d;
	ck_assert(!osd_recover_sig_eq(&a, &b));
	b = a;
	b.osds[5] = 8; /* a slot moved */
	ck_assert(!osd_recover_sig_eq(&a, &b));
	b = a;
	b.osds[6] = 99; /* beyond the width: not part of it */
	ck_assert(osd_recover_sig_eq(&a, &b));
}
END_TEST

START_TEST(classify)
{
	const uint32_t N = OSD_RECOVER_NONE;
	struct osd_recover_sig s = sig6(1, 2, 3, 4, 5, 6, 0x3f);
	struct osd_recover_stripe_class c = osd_recover_classify(&s, 4, 0x3f);
	ck_assert(!c.rebuild && !c.unfound && c.missing == 0 && c.present == 6);
	c = osd_recover_classify(&s, 4, 0x3b); /* slot 2 lacks its shard */
	ck_assert(c.rebuild && c.missing == 0x04 && c.present == 5);
	c = osd_recover_classify(&s, 4, 0x07); /* 3 of k=4: unfound, touched not */
	ck_assert(!c.rebuild && c.unfound && c.present == 3);
	/* A down slot or an empty one is not missing: nothing can be
	 * written there; the stripe is degraded, not rebuildable. */
	s = sig6(1, 2, N, 4, 5, 6, 0x3b & ~0x10);
	c = osd_recover_classify(&s, 4, 0x2b);
	ck_assert(!c.rebuild && c.missing == 0 && c.present == 4);
	c = osd_recover_classify(&s, 4, 0x0b); /* slot 5 up and lacking */
	ck_assert(c.unfound && !c.rebuild && c.missing == 0x20);
	c = osd_recover_classify(&s, 2, 0x0b);
	ck_assert(c.rebuild && c.missing == 0x20);
}
END_TEST

/* A random 4+2 stripe of len bytes per shard in st (6 * len). */
static void make_stripe(const struct ec_code *ec, uint8_t *st, size_t len)
{
	for (size_t i = 0; i < 4 * len; i++)
		st[i] = (uint8_t)rand();
	const uint8_t *d[4] = { st, st + len, st + 2 * len, st + 3 * len };
	uint8_t *p[2] = { st + 4 * len, st + 5 * len };
	ec_encode(ec, len, d, p);
}

START_TEST(deep_check_finds_the_one_bad_shard)
{
	unsigned seed = getenv("IOLAKE_SEED") ? (unsigned)atoi(getenv("IOLAKE_SEED"))
					      : (unsigned)time(NULL);
	srand(seed);
	struct ec_code *ec;
	ck_assert_int_eq(ec_new(4, 2, &ec), 0);
	const size_t len = 1021; /* not a multiple of anything ISA-L likes */
	uint8_t *st = malloc(6 * len), *orig = malloc(6 * len), *scratch = malloc(3 * len);
	const uint8_t *sh[6];
	for (int i = 0; i < 6; i++)
		sh[i] = st + (size_t)i * len;
	make_stripe(ec, st, len);
	memcpy(orig, st, 6 * len);
	unsigned bad = 99;
	ck_assert_int_eq(osd_recover_deep_check(ec, len, sh, scratch, &bad), OSD_RECOVER_DEEP_OK);
	/* One shard wrong, data or parity, by one byte or all of them: found,
	 * and the bytes to write back are the original ones. */
	for (unsigned slot = 0; slot < 6; slot++) {
		for (int whole = 0; whole < 2; whole++) {
			memcpy(st, orig, 6 * len);
			if (whole)
				for (size_t b = 0; b < len; b++)
					st[slot * len + b] = (uint8_t)rand();
			else
				st[slot * len + (size_t)rand() % len] ^= (uint8_t)(1 + rand() % 255);
			bad = 99;
			ck_assert_msg(osd_recover_deep_check(ec, len, sh, scratch, &bad) ==
					      OSD_RECOVER_DEEP_ONE,
				      "seed %u slot %u whole %d", seed, slot, whole);
			ck_assert_uint_eq(bad, slot);
			ck_assert(memcmp(scratch, orig + slot * len, len) == 0);
		}
	}
	/* Two wrong shards in one stripe: no single shard explains it. */
	for (unsigned a = 0; a < 6; a++)
		for (unsigned b = a + 1; b < 6; b++) {
			memcpy(st, orig, 6 * len);
			st[a * len + (size_t)rand() % len] ^= 0x5a;
			st[b * len + (size_t)rand() % len] ^= 0xa5;
			ck_assert_msg(osd_recover_deep_check(ec, len, sh, scratch, &bad) ==
					      OSD_RECOVER_DEEP_INCONSISTENT,
				      "seed %u slots %u %u", seed, a, b);
		}
	ec_free(ec);
	/* With one parity shard a mismatch is seen but cannot be placed. */
	ck_assert_int_eq(ec_new(5, 1, &ec), 0);
	const uint8_t *d[5] = { st, st + len, st + 2 * len, st + 3 * len, st + 4 * len };
	uint8_t *p1[1] = { st + 5 * len };
	ec_encode(ec, len, d, p1);
	ck_assert_int_eq(osd_recover_deep_check(ec, len, sh, scratch, &bad), OSD_RECOVER_DEEP_OK);
	st[2 * len] ^= 1;
	ck_assert_int_eq(osd_recover_deep_check(ec, len, sh, scratch, &bad),
			 OSD_RECOVER_DEEP_INCONSISTENT);
	ec_free(ec);
	free(st);
	free(orig);
	free(scratch);
}
END_TEST

/* ---------------------------------------------- deep scrub, end to end */

/* One meta member (one PG, 4+2), six real OSDs (osd_cluster: a store on
 * /dev/shm and the Osd service each, on their own threads, over HTTP/2
 * on 127.0.0.1), registered with their metaclients, and each OSD's
 * recovery driver on the test's loop with --deep-scrub-interval 1s. The
 * test writes stripes with PutShard, as a gateway would, and corrupts
 * shards with PutShard too: new bytes with their own crc32c, which the
 * crc scrubber and every crc check pass. */
#define DS_OSDS 6
#define DS_OBJS 5

struct ds {
	uv_loop_t loop;
	char dir[64];
	char maddr[32];
	struct meta_node *node;
	struct osd_cluster c;
	struct osd_metaclient *mc[DS_OSDS];
	struct meta_mapwatch *w;
	struct metrics_registry *reg;
	struct osd_recover *rec[DS_OSDS];
	struct ec_code *ec;
	uint32_t slot_osd[DS_OSDS];
	uint8_t *orig[DS_OBJS];   /* 6 * len[o]: the stripe as written */
	size_t len[DS_OBJS];
	int closed;
};

static void ds_stop_loop(uv_timer_t *t)
{
	uv_stop(t->loop);
}

static void ds_run_ms(uv_loop_t *loop, uint64_t ms)
{
	uint64_t end = loop_now_ms() + ms;
	uv_timer_t t;
	uv_timer_init(loop, &t);
	while (loop_now_ms() < end) {
		uv_timer_start(&t, ds_stop_loop, 5, 0);
		uv_run(loop, UV_RUN_ONCE);
	}
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
}

static int ds_free_port(uv_loop_t *loop)
{
	uv_tcp_t t;
	struct sockaddr_in a;
	uv_tcp_init(loop, &t);
	uv_ip4_addr("127.0.0.1", 0, &a);
	ck_assert_int_eq(uv_tcp_bind(&t, (const struct sockaddr *)&a, 0), 0);
	struct sockaddr_storage got;
	int len = sizeof(got);
	uv_tcp_getsockname(&t, (struct sockaddr *)&got, &len);
	int port = ntohs(((struct sockaddr_in *)&got)->sin_port);
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
	return port;
}

static void ds_closed(void *arg)
{
	((struct ds *)arg)->closed++;
}

static struct osd_recover_stats ds_sum(struct ds *d)
{
	struct osd_recover_stats t = { 0 };
	for (unsigned i = 0; i < DS_OSDS; i++) {
		struct osd_recover_stats s;
		osd_recover_stats(d->rec[i], &s);
		t.deep_stripes += s.deep_stripes;
		t.deep_bytes += s.deep_bytes;
		t.deep_repaired += s.deep_repaired;
		t.deep_inconsistent += s.deep_inconsistent;
		t.deep_pgs += s.deep_pgs;
		t.stripes += s.stripes;
		t.errors += s.errors;
	}
	return t;
}

static bool ds_map_ready(struct ds *d)
{
	const Iolake__Meta__ClusterMap *m = meta_mapwatch_map(d->w);
	if (!m || m->n_pgs != 1 || m->pgs[0]->n_osds != DS_OSDS)
		return false;
	for (unsigned i = 0; i < DS_OSDS; i++) {
		uint32_t id = m->pgs[0]->osds[i];
		const Iolake__Meta__OsdInfo *o = meta_mapwatch_osd(d->w, id);
		if (id == OSD_RECOVER_NONE || !o || !o->up || !meta_mapwatch_channel(d->w, id))
			return false;
		d->slot_osd[i] = id;
	}
	return true;
}

static void ds_put(struct ds *d, unsigned obj, unsigned slot, const uint8_t *bytes)
{
	char oid[32];
	snprintf(oid, sizeof(oid), "deep-obj-%u", obj);
	Iolake__Osd__ShardKey key;
	osd_key(&key, 0, oid, slot);
	Iolake__Osd__PutShardRequest q = IOLAKE__OSD__PUT_SHARD_REQUEST__INIT;
	q.key = &key;
	q.length = d->len[obj];
	q.crc32c = crc32c(0, bytes, d->len[obj]);
	struct buf *b = buf_copy(bytes, d->len[obj]);
	struct buf_slice pl = { .buf = b, .off = 0, .len = d->len[obj] };
	struct osd_call c;
	int st = osd_call_sync(&d->loop, meta_mapwatch_channel(d->w, d->slot_osd[slot]), OSD_M_PUT,
			       &q.base, &pl, &c);
	ck_assert_msg(st == RPC_OK, "put %s/%u: %s %s", oid, slot, rpc_status_name(st), c.message);
	osd_call_clear(&c);
	buf_unref(b);
}

/* Whether the stored shard equals want. */
static bool ds_is(struct ds *d, unsigned obj, unsigned slot, const uint8_t *want)
{
	char oid[32];
	snprintf(oid, sizeof(oid), "deep-obj-%u", obj);
	Iolake__Osd__ShardKey key;
	osd_key(&key, 0, oid, slot);
	Iolake__Osd__GetShardRequest q = IOLAKE__OSD__GET_SHARD_REQUEST__INIT;
	q.key = &key;
	struct osd_call c;
	int st = osd_call_sync(&d->loop, meta_mapwatch_channel(d->w, d->slot_osd[slot]), OSD_M_GET,
			       &q.base, NULL, &c);
	ck_assert_msg(st == RPC_OK, "get %s/%u: %s", oid, slot, rpc_status_name(st));
	bool same = c.payload.len == d->len[obj] &&
		    memcmp(buf_slice_data(&c.payload), want, d->len[obj]) == 0;
	osd_call_clear(&c);
	return same;
}

static const uint8_t *ds_orig(struct ds *d, unsigned obj, unsigned slot)
{
	return d->orig[obj] + (size_t)slot * d->len[obj];
}

/* Corrupt slot of obj consistently: other bytes, their own crc. Returns
 * the bytes written (the caller frees). */
static uint8_t *ds_corrupt(struct ds *d, unsigned obj, unsigned slot)
{
	uint8_t *bad = malloc(d->len[obj]);
	memcpy(bad, ds_orig(d, obj, slot), d->len[obj]);
	for (size_t b = 0; b < d->len[obj]; b += 97)
		bad[b] ^= 0x5a; /* as a misdirected or stale write would: many bytes */
	ds_put(d, obj, slot, bad);
	return bad;
}

/* Run the loop until cond(d) or limit_ms; the condition's value. */
static bool ds_wait(struct ds *d, bool (*cond)(struct ds *d, uint64_t arg), uint64_t arg,
		    uint64_t limit_ms)
{
	uint64_t end = loop_now_ms() + limit_ms;
	while (!cond(d, arg) && loop_now_ms() < end)
		ds_run_ms(&d->loop, 50);
	return cond(d, arg);
}

static bool ds_repaired_ge(struct ds *d, uint64_t n)
{
	return ds_sum(d).deep_repaired >= n;
}

static bool ds_pgs_ge(struct ds *d, uint64_t n)
{
	return ds_sum(d).deep_pgs >= n;
}

static bool ds_inconsistent_ge(struct ds *d, uint64_t n)
{
	return ds_sum(d).deep_inconsistent >= n;
}

static void ds_setup(struct ds *d)
{
	memset(d, 0, sizeof(*d));
	log_set_level(LOG_LEVEL_WARN); /* the deep scrub's own lines stay */
	uv_loop_init(&d->loop);
	snprintf(d->dir, sizeof(d->dir), "/tmp/iolake-deep-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(d->dir));
	struct meta_peer peer = { .id = 1 };
	for (int tries = 0; tries < 20 && !d->node; tries++) {
		snprintf(d->maddr, sizeof(d->maddr), "127.0.0.1:%d", ds_free_port(&d->loop));
		peer.addr = d->maddr;
		struct meta_node_opts no = { .id = 1, .data_dir = d->dir, .listen = d->maddr,
					     .peers = &peer, .n_peers = 1,
					     .election_timeout_ms = 200, .heartbeat_timeout_ms = 50,
					     .pg_count = 1, .ec_k = 4, .ec_m = 2 };
		if (meta_node_start(&d->loop, &no, &d->node)) {
			d->node = NULL; /* Raft's port taken: start over, empty dir */
			uv_run(&d->loop, UV_RUN_DEFAULT);
			char cmd[128];
			snprintf(cmd, sizeof(cmd), "rm -rf %s/*", d->dir);
			ck_assert_int_eq(system(cmd), 0);
		}
	}
	ck_assert_ptr_nonnull(d->node);
	ck_assert_int_eq(osd_cluster_start(&d->c, DS_OSDS, "deep", 64ull << 20), 0);
	const char *members[] = { d->maddr };
	for (unsigned i = 0; i < DS_OSDS; i++) {
		char listen[64], host[16];
		osd_cluster_target(&d->c, i, false, listen, sizeof(listen));
		snprintf(host, sizeof(host), "deep-h%u", i);
		struct osd_metaclient_opts o = { .addrs = members, .naddrs = 1,
						 .osd_id = d->c.node[i].id, .listen_addr = listen,
						 .host = host, .capacity_bytes = 64ull << 20,
						 .heartbeat_ms = 200, .backoff_min_ms = 20,
						 .backoff_max_ms = 100 };
		ck_assert_int_eq(osd_metaclient_start(&d->loop, &o, &d->mc[i]), 0);
	}
	struct meta_mapwatch_opts wo = { .members = members, .n_members = 1, .watch_ms = 500,
					 .log_name = "test" };
	ck_assert_int_eq(meta_mapwatch_start(&d->loop, &wo, &d->w), 0);
	for (int i = 0; i < 400 && !ds_map_ready(d); i++)
		ds_run_ms(&d->loop, 50);
	ck_assert_msg(ds_map_ready(d), "one PG on six up OSDs within 20 s");
	ck_assert_int_eq(ec_new(4, 2, &d->ec), 0);
	/* Stripes of a few sizes, as PUT writes them. */
	for (unsigned o = 0; o < DS_OBJS; o++) {
		d->len[o] = 4096 + 1000 * o + o;
		d->orig[o] = malloc(6 * d->len[o]);
		make_stripe(d->ec, d->orig[o], d->len[o]);
		for (unsigned sl = 0; sl < DS_OSDS; sl++)
			ds_put(d, o, sl, ds_orig(d, o, sl));
	}
	d->reg = metrics_registry_new();
	ck_assert_ptr_nonnull(d->reg);
}

static void ds_start_drivers(struct ds *d)
{
	const char *members[] = { d->maddr };
	for (unsigned i = 0; i < DS_OSDS; i++) {
		struct osd_recover_opts ro = { .osd_id = d->c.node[i].id, .meta = members,
					       .n_meta = 1, .report_ms = 500,
					       .deep_scrub_ms = 1000, .metrics = d->reg };
		ck_assert_int_eq(osd_recover_start(&d->loop, &ro, &d->rec[i]), 0);
	}
}

static void ds_teardown(struct ds *d)
{
	d->closed = 0;
	for (unsigned i = 0; i < DS_OSDS; i++)
		osd_recover_stop(d->rec[i], ds_closed, d);
	for (unsigned i = 0; i < DS_OSDS; i++)
		osd_metaclient_stop(d->mc[i], ds_closed, d);
	meta_mapwatch_close(d->w);
	meta_node_close(d->node, ds_closed, d);
	for (int i = 0; i < 200 && d->closed < 2 * DS_OSDS + 1; i++)
		ds_run_ms(&d->loop, 20);
	ck_assert_int_eq(d->closed, 2 * DS_OSDS + 1);
	osd_cluster_destroy(&d->c);
	while (uv_run(&d->loop, UV_RUN_DEFAULT))
		;
	ck_assert_int_eq(uv_loop_close(&d->loop), 0);
	metrics_registry_free(d->reg);
	ec_free(d->ec);
	for (unsigned o = 0; o < DS_OBJS; o++)
		free(d->orig[o]);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", d->dir);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(deep_scrub_repairs_one_consistent_bad_shard)
{
	static struct ds d;
	ds_setup(&d);
	/* Data shard 2 of object 1: other bytes, a crc to match. */
	uint8_t *bad = ds_corrupt(&d, 1, 2);
	ck_assert(ds_is(&d, 1, 2, bad));
	free(bad);
	ds_start_drivers(&d);
	ck_assert_msg(ds_wait(&d, ds_repaired_ge, 1, 20000), "deep scrub repaired a shard in 20 s");
	struct osd_recover_stats t = ds_sum(&d);
	ck_assert_uint_eq(t.deep_repaired, 1);
	ck_assert_uint_eq(t.deep_inconsistent, 0);
	ck_assert_uint_eq(t.stripes, 0); /* not the rebuild's: nothing was missing */
	ck_assert_msg(ds_is(&d, 1, 2, ds_orig(&d, 1, 2)), "the shard holds its original bytes");
	for (unsigned o = 0; o < DS_OBJS; o++)
		for (unsigned sl = 0; sl < DS_OSDS; sl++)
			ck_assert(ds_is(&d, o, sl, ds_orig(&d, o, sl)));
	/* Two more passes over the PG: nothing more to repair. */
	uint64_t pgs = ds_sum(&d).deep_pgs;
	ck_assert_msg(ds_wait(&d, ds_pgs_ge, pgs + 2, 20000), "two more deep scrubs in 20 s");
	t = ds_sum(&d);
	ck_assert_uint_eq(t.deep_repaired, 1);
	ck_assert_uint_eq(t.deep_inconsistent, 0);
	ck_assert_uint_ge(t.deep_stripes, 2 * DS_OBJS);
	printf("deep scrub: %" PRIu64 " pgs, %" PRIu64 " stripes, %" PRIu64 " bytes read, "
	       "repaired %" PRIu64 ", inconsistent %" PRIu64 "\n", t.deep_pgs, t.deep_stripes,
	       t.deep_bytes, t.deep_repaired, t.deep_inconsistent);

	/* A parity shard: found and rewritten the same way. */
	bad = ds_corrupt(&d, 3, 5);
	free(bad);
	ck_assert_msg(ds_wait(&d, ds_repaired_ge, 2, 20000), "parity shard repaired in 20 s");
	ck_assert(ds_is(&d, 3, 5, ds_orig(&d, 3, 5)));

	/* Two bad shards of one stripe: inconsistent, nothing written. */
	uint8_t *bad0 = ds_corrupt(&d, 4, 0), *bad4 = ds_corrupt(&d, 4, 4);
	ck_assert_msg(ds_wait(&d, ds_inconsistent_ge, 1, 20000), "inconsistent stripe found in 20 s");
	t = ds_sum(&d);
	ck_assert_uint_eq(t.deep_inconsistent, 1);
	ck_assert_uint_eq(t.deep_repaired, 2);
	ck_assert_msg(ds_is(&d, 4, 0, bad0) && ds_is(&d, 4, 4, bad4), "nothing written");
	for (unsigned sl = 1; sl < 4; sl++)
		ck_assert(ds_is(&d, 4, sl, ds_orig(&d, 4, sl)));
	ck_assert(ds_is(&d, 4, 5, ds_orig(&d, 4, 5)));
	free(bad0);
	free(bad4);
	ds_teardown(&d);
}
END_TEST

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	Suite *s = suite_create("osd/recover");
	TCase *tc = tcase_create("recover");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, oid_order_is_the_index_order);
	tcase_add_test(tc, primary_and_signature);
	tcase_add_test(tc, classify);
	tcase_add_test(tc, deep_check_finds_the_one_bad_shard);
	suite_add_tcase(s, tc);
	TCase *td = tcase_create("deep");
	tcase_set_timeout(td, 120);
	tcase_add_test(td, deep_scrub_repairs_one_consistent_bad_shard);
	suite_add_tcase(s, td);
	SRunner *sr = srunner_create(s);
	osd_cluster_runner_begin();
	srunner_run_all(sr, CK_NORMAL);
	osd_cluster_runner_end();
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
