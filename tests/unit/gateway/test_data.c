/*
 * test_data.c — the gateway's erasure-coded data path (gateway/gw_data.h)
 * against six real OSDs (store on /dev/shm + OSD service, each on its own
 * loop_thread; tests/lib/osd_cluster), reached over HTTP/2 on 127.0.0.1
 * and over the in-process transport (loop tests: _i 0 = h2, 1 = local).
 * The data path runs on the test's own loop.
 *
 * Shows: round trips byte for byte with the ETag equal to an independent
 * MD5, for 0 B .. 4 MiB+1 and 100 MiB fed in random pieces, with the
 * module's buffered bytes under a bound; ranges (first/last byte, across a
 * segment boundary, whole); a healthy GET calls no parity OSD; two OSDs
 * stopped -> every object reads back through decode; three stopped -> a
 * GET fails with IOL_EUNAVAILABLE and no wrong byte, a PUT fails and
 * leaves no shard behind; one stopped -> a PUT still succeeds; a byte
 * flipped on an OSD's device, or a stale shard, is read around via
 * parity, and each such PUT or GET is reported once through
 * opts.on_degraded (healthy ones never); a slow consumer keeps read-ahead
 * bounded; DELETE removes every
 * shard; the layout record round-trips and rejects garbage. Failure
 * detection: an OSD whose loop hangs -> GETs answer from parity after the
 * hedge delay (counted), and over HTTP/2 its circuit opens so later GETs
 * avoid it up front, and closes again once it runs; an OSD the map marks
 * down is never called while k others can serve. Streamed segments: a
 * segment's first pieces are handed out while a later shard's read is
 * still out; that shard failing then decodes the rest from parity (bytes
 * right, none twice), and more than m failing ends the GET with
 * IOL_EUNAVAILABLE after exactly the bytes taken.
 *
 * Random parts print their seed; set IOLAKE_TEST_SEED to replay.
 *
 * make-test: alone (tests/run-tests.py): hedges and the down-in-map cases time OSD answers against the
 * hedge delay: a neighbour's CPU use can move a shard past it.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/crc.h"
#include "common/err.h"
#include "common/hash.h"
#include "common/loop.h"
#include "common/md5_svc.h"
#include "common/rpc.h"
#include "common/workpool.h"
#include "gateway/gw_data.h"
#include "osd/store/super.h"
#include "tests/lib/osd_call.h"
#include "tests/lib/osd_cluster.h"

#define K 4
#define M 2
#define N (K + M)
#define SEG (4u << 20)
#define PG 17

enum { T_H2, T_LOCAL, TRANSPORTS };

/* The test's loop. A callback may run in the timer phase of a
 * UV_RUN_ONCE turn: every test callback stops the loop so the poll phase
 * that follows does not block waiting for nothing. */
static uv_loop_t *test_loop;
static const char *const tname[] = { "h2", "local" };

/* ------------------------------------------------------------ fixture */

struct fx {
	struct osd_cluster c;
	uv_loop_t loop;
	struct rpc_channel *ch[N];
	struct gw_data *d;
	struct gw_data_target t;
	uint64_t seed;
};

static uint64_t seed_from_env(void)
{
	const char *e = getenv("IOLAKE_TEST_SEED");
	if (e)
		return strtoull(e, NULL, 0);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void fx_setup(struct fx *f, int tr, const char *tag, uint64_t dev_size,
		     const struct gw_data_opts *o)
{
	memset(f, 0, sizeof(*f));
	f->seed = seed_from_env() | 1;
	printf("%s/%s: seed %llu\n", tag, tname[tr], (unsigned long long)f->seed);
	ck_assert_int_eq(osd_cluster_start(&f->c, N, tag, dev_size), 0);
	ck_assert_int_eq(uv_loop_init(&f->loop), 0);
	test_loop = &f->loop;
	f->t.pg = PG;
	for (unsigned i = 0; i < N; i++) {
		char t[96];
		osd_cluster_target(&f->c, i, tr == T_LOCAL, t, sizeof(t));
		f->ch[i] = rpc_channel_open(&f->loop, t, NULL);
		ck_assert_ptr_nonnull(f->ch[i]);
		f->t.osds[i] = f->ch[i];
		f->t.osd_ids[i] = i + 1;   /* as gw_map names them */
	}
	struct gw_data_opts def = { .k = K, .m = M, .timeout_ms = 5000 };
	ck_assert_int_eq(gw_data_new(&f->loop, o ? o : &def, &f->d), 0);
}

static void fx_new_data(struct fx *f, const struct gw_data_opts *o)
{
	struct gw_data_stats st;
	for (gw_data_stats(f->d, &st); st.live_ops; gw_data_stats(f->d, &st))
		uv_run(&f->loop, UV_RUN_ONCE);
	ck_assert_uint_eq(st.live_ops, 0);
	gw_data_free(f->d);
	struct gw_data_opts def = { .k = K, .m = M, .timeout_ms = 5000 };
	ck_assert_int_eq(gw_data_new(&f->loop, o ? o : &def, &f->d), 0);
}

static void fx_teardown(struct fx *f)
{
	struct gw_data_stats st;
	/* A GET freed after a failure may still wait for calls (deadlines
	 * bound that). */
	for (gw_data_stats(f->d, &st); st.live_ops; gw_data_stats(f->d, &st))
		uv_run(&f->loop, UV_RUN_ONCE);
	ck_assert_uint_eq(st.live_ops, 0);
	gw_data_free(f->d);
	for (unsigned i = 0; i < N; i++)
		rpc_channel_close(f->ch[i]);
	while (uv_run(&f->loop, UV_RUN_DEFAULT) != 0)
		;
	ck_assert_int_eq(uv_loop_close(&f->loop), 0);
	osd_cluster_destroy(&f->c);
}

/* What gw_data reported through opts.on_degraded. */
static struct {
	unsigned n[2];               /* by enum gw_data_degraded */
	uint32_t pg;
} degr;

static void on_degr(void *ud, uint32_t pg, enum gw_data_degraded why)
{
	(void)ud;
	ck_assert_uint_lt(why, 2);
	degr.n[why]++;
	degr.pg = pg;
}

static const struct gw_data_opts degr_opts = { .k = K, .m = M, .timeout_ms = 5000,
					       .on_degraded = on_degr };

/* The same for tests that count degraded events, missing shards or
 * decodes exactly: no hedge and no PUT quorum grace, which a busy machine
 * makes fire (a slow read hedged is one more decode; a slow shard write
 * past the grace is one more missing shard). */
static const struct gw_data_opts degr_exact_opts = { .k = K, .m = M, .timeout_ms = 5000,
						     .on_degraded = on_degr, .hedge_off = true,
						     .put_grace_off = true };

/* For tests that count shard reads exactly ("a healthy GET calls no
 * parity OSD"): a hedge adds parity reads by design whenever a read is
 * slower than the recent p95, which a busy machine makes common. */
static const struct gw_data_opts nohedge_opts = { .k = K, .m = M, .timeout_ms = 5000,
						  .hedge_off = true };

static struct buf *pattern(size_t len, uint64_t seed)
{
	struct buf *b = buf_new(len ? len : 1);
	uint64_t x = seed | 1;
	size_t i = 0;
	for (; i + 8 <= len; i += 8) {
		uint64_t v = rnd(&x);
		memcpy(b->data + i, &v, 8);
	}
	for (; i < len; i++)
		b->data[i] = (uint8_t)rnd(&x);
	b->len = len;
	return b;
}

/* ------------------------------------------------------------ PUT driver */

struct put_run {
	struct gw_data_put *p;
	bool writable, done;
	int status;
};

static void on_writable(struct gw_data_put *p, void *ud)
{
	(void)p;
	((struct put_run *)ud)->writable = true;
	uv_stop(test_loop);
}

static void on_put_done(struct gw_data_put *p, int status, void *ud)
{
	(void)p;
	struct put_run *r = ud;
	r->done = true;
	r->status = status;
	uv_stop(test_loop);
}

static const struct gw_data_put_cbs put_cbs = { on_writable, on_put_done };

/* PUT body in random pieces (1 B .. max_piece); on success copy the
 * layout into *l and the ETag into etag. Checks the ETag against MD5. */
static int do_put(struct fx *f, const struct buf *body, size_t max_piece, struct gw_data_layout *l,
		  char etag[33], uint64_t *peak)
{
	struct put_run r = { 0 };
	ck_assert_int_eq(gw_data_put_start(f->d, &f->t, body->len, NULL, &put_cbs, &r, &r.p), 0);
	uint64_t s = f->seed ^ body->len;
	size_t off = 0;
	int fed_rc = 0;
	while (off < body->len) {
		size_t piece = 1 + rnd(&s) % max_piece;
		if (piece > body->len - off)
			piece = body->len - off;
		ssize_t n = gw_data_put_write(r.p, body->data + off, piece);
		if (n < 0) {
			fed_rc = (int)n;
			break;
		}
		off += (size_t)n;
		if (peak) {
			struct gw_data_stats st;
			gw_data_stats(f->d, &st);
			if (st.buffered_bytes > *peak)
				*peak = st.buffered_bytes;
		}
		if ((size_t)n < piece) {
			r.writable = false;
			while (!r.writable && !r.done)
				uv_run(&f->loop, UV_RUN_ONCE);
			if (r.done)
				break;
		}
	}
	if (!fed_rc && !r.done)
		ck_assert_int_eq(gw_data_put_finish(r.p), 0);
	while (!r.done)
		uv_run(&f->loop, UV_RUN_ONCE);
	if (r.status == 0) {
		uint8_t md[MD5_LEN];
		char hex[33];
		hash_md5(body->data, body->len, md);
		hash_hex(md, MD5_LEN, hex);
		ck_assert_str_eq(gw_data_put_etag(r.p), hex);
		if (etag)
			memcpy(etag, hex, 33);
		ck_assert_int_eq(gw_data_layout_copy(l, gw_data_put_layout(r.p)), 0);
	} else {
		printf("put of %zu bytes failed: %s: %s\n", body->len, iol_strerror(r.status),
		       gw_data_put_error(r.p));
	}
	gw_data_put_free(r.p);
	return r.status;
}

/* ------------------------------------------------------------ GET driver */

struct get_run {
	bool readable;
};

static void on_readable(struct gw_data_get *g, void *ud)
{
	(void)g;
	((struct get_run *)ud)->readable = true;
	uv_stop(test_loop);
}

/* GET [off, off+len) into out (len bytes). Returns 0 or the GET's error;
 * *got is how many bytes came (all of them verified against expect when
 * given). */
static int do_get(struct fx *f, const struct gw_data_layout *l, uint64_t off, uint64_t len,
		  const uint8_t *expect, uint64_t *got)
{
	struct get_run r = { 0 };
	struct gw_data_get *g;
	ck_assert_int_eq(gw_data_get_start(f->d, &f->t, l, off, len, on_readable, &r, &g), 0);
	uint64_t at = 0;
	int rc;
	for (;;) {
		struct buf_slice s;
		rc = gw_data_get_read(g, &s);
		if (rc == 1) {
			ck_assert_uint_le(at + s.len, len);
			if (expect)
				ck_assert_msg(memcmp(buf_slice_data(&s), expect + at, s.len) == 0,
					      "wrong bytes at %llu (+%zu)",
					      (unsigned long long)(off + at), s.len);
			at += s.len;
			buf_unref(s.buf);
			continue;
		}
		if (rc == -EAGAIN) {
			r.readable = false;
			while (!r.readable)
				uv_run(&f->loop, UV_RUN_ONCE);
			continue;
		}
		break;
	}
	if (rc < 0)
		printf("get [%llu, +%llu): %s: %s\n", (unsigned long long)off,
		       (unsigned long long)len, iol_strerror(rc), gw_data_get_error(g));
	else
		ck_assert_uint_eq(at, len);
	gw_data_get_free(g);
	if (got)
		*got = at;
	return rc;
}

static void expect_range(struct fx *f, const struct gw_data_layout *l, const struct buf *b,
			 uint64_t off, uint64_t len)
{
	int rc = do_get(f, l, off, len, b->data + off, NULL);
	ck_assert_msg(rc == 0, "range [%llu,+%llu) of %zu: %s", (unsigned long long)off,
		      (unsigned long long)len, b->len, iol_strerror(rc));
}

/* Shards of PG on OSD i (ListShards, all pages). */
static unsigned count_shards(struct fx *f, unsigned i)
{
	unsigned n = 0;
	Iolake__Osd__ListShardsRequest q = IOLAKE__OSD__LIST_SHARDS_REQUEST__INIT;
	q.pg = PG;
	q.limit = 10000;
	struct osd_call c;
	ck_assert_int_eq(osd_call_sync(&f->loop, f->ch[i], OSD_M_LIST, &q.base, NULL, &c), RPC_OK);
	const Iolake__Osd__ListShardsResponse *r = (const void *)c.resp;
	n = (unsigned)r->n_shards;
	ck_assert(!r->more);
	osd_call_clear(&c);
	return n;
}

static uint64_t osd_gets(struct fx *f, unsigned i)
{
	Iolake__Osd__StatusRequest q = IOLAKE__OSD__STATUS_REQUEST__INIT;
	struct osd_call c;
	ck_assert_int_eq(osd_call_sync(&f->loop, f->ch[i], OSD_M_STATUS, &q.base, NULL, &c),
			 RPC_OK);
	uint64_t g = ((const Iolake__Osd__StatusResponse *)c.resp)->gets;
	osd_call_clear(&c);
	return g;
}

struct del_run {
	bool done;
	int status;
	uint32_t failed;
};

static void on_deleted(void *ud, int status, uint32_t failed)
{
	struct del_run *r = ud;
	r->done = true;
	r->status = status;
	r->failed = failed;
	uv_stop(test_loop);
}

static int do_delete(struct fx *f, const struct gw_data_layout *l, uint32_t *failed)
{
	struct del_run r = { 0 };
	ck_assert_int_eq(gw_data_delete(f->d, &f->t, l, on_deleted, &r), 0);
	while (!r.done)
		uv_run(&f->loop, UV_RUN_ONCE);
	if (failed)
		*failed = r.failed;
	return r.status;
}

static struct gw_data_stats stats(struct fx *f)
{
	struct gw_data_stats st;
	gw_data_stats(f->d, &st);
	return st;
}

/* ------------------------------------------------------------ tests */

static const size_t sizes[] = { 0, 1, 4096, 65536, 1 << 20, SEG - 1, SEG + 1 };
enum { NSIZES = sizeof(sizes) / sizeof(sizes[0]) };

START_TEST(round_trips)
{
	struct fx f;
	fx_setup(&f, _i, "gwrt", 64 << 20, &nohedge_opts);
	struct buf *b[NSIZES];
	struct gw_data_layout l[NSIZES];
	for (int i = 0; i < NSIZES; i++) {
		b[i] = pattern(sizes[i], f.seed + (uint64_t)i);
		char etag[33];
		ck_assert_int_eq(do_put(&f, b[i], 1 + sizes[i] / 3 + 70000, &l[i], etag, NULL), 0);
		ck_assert_uint_eq(l[i].nsegs, (sizes[i] + SEG - 1) / SEG);
		/* Through the record codec, as meta would keep it. */
		uint8_t rec[4096];
		ssize_t rl = gw_data_layout_encode(&l[i], rec, sizeof(rec));
		ck_assert_int_gt(rl, 0);
		struct gw_data_layout back;
		ck_assert_int_eq(gw_data_layout_decode(rec, (size_t)rl, &back), 0);
		ck_assert_uint_eq(back.size, sizes[i]);
		ck_assert(memcmp(back.object_id, l[i].object_id, GW_DATA_OID_LEN) == 0);
		gw_data_layout_clear(&l[i]);
		l[i] = back;
	}
	uint64_t parity_gets[N];
	for (unsigned i = K; i < N; i++)
		parity_gets[i] = osd_gets(&f, i);
	for (int i = 0; i < NSIZES; i++) {
		size_t n = sizes[i];
		expect_range(&f, &l[i], b[i], 0, n);
		if (n) {
			expect_range(&f, &l[i], b[i], 0, 1);
			expect_range(&f, &l[i], b[i], n - 1, 1);
			expect_range(&f, &l[i], b[i], n / 3, n - n / 3 - n / 5);
		}
		if (n > SEG) /* across the segment boundary */
			expect_range(&f, &l[i], b[i], SEG - 100, 101);
		/* A range inside one data shard. */
		if (n >= 65536)
			expect_range(&f, &l[i], b[i], n / 4 + 10, 1000);
	}
	/* Healthy: no GetShard reached a parity OSD, no decode. */
	struct gw_data_stats st = stats(&f);
	for (unsigned i = K; i < N; i++) {
		ck_assert_uint_eq(st.shard_gets_by_index[i], 0);
		ck_assert_uint_eq(osd_gets(&f, i), parity_gets[i]);
	}
	ck_assert_uint_gt(st.shard_gets_by_index[0], 0);
	ck_assert_uint_eq(st.decodes, 0);
	ck_assert_uint_eq(st.crc_mismatches, 0);
	/* Every object's shards are there: sum(nsegs) * 1 per OSD. */
	unsigned segs = 0;
	for (int i = 0; i < NSIZES; i++)
		segs += l[i].nsegs;
	for (unsigned i = 0; i < N; i++)
		ck_assert_uint_eq(count_shards(&f, i), segs);
	/* Out of range is refused. */
	struct gw_data_get *g;
	struct get_run gr;
	ck_assert_int_eq(gw_data_get_start(f.d, &f.t, &l[2], 4000, 97, on_readable, &gr, &g),
			 -EINVAL);
	/* DELETE takes every shard away. */
	for (int i = 0; i < NSIZES; i++) {
		uint32_t failed = 9;
		ck_assert_int_eq(do_delete(&f, &l[i], &failed), 0);
		ck_assert_uint_eq(failed, 0);
	}
	for (unsigned i = 0; i < N; i++)
		ck_assert_uint_eq(count_shards(&f, i), 0);
	for (int i = 0; i < NSIZES; i++) {
		buf_unref(b[i]);
		gw_data_layout_clear(&l[i]);
	}
	fx_teardown(&f);
}
END_TEST

START_TEST(big_object_bounded)
{
	struct fx f;
	fx_setup(&f, _i, "gwbig", 64 << 20, &nohedge_opts);
	size_t size = 100u << 20;
	struct buf *b = pattern(size, f.seed);
	struct gw_data_layout l;
	uint64_t peak = 0;
	uint64_t t0 = loop_now_ms();
	ck_assert_int_eq(do_put(&f, b, 300000, &l, NULL, &peak), 0);
	uint64_t t1 = loop_now_ms();
	struct gw_data_stats st = stats(&f);
	/* window (2) in flight + the one filling, (k+m) shards each, + at most
	 * window (2) blocks that shard calls outliving their segment's quorum
	 * grace still hold (a loaded machine: a write slower than the grace). */
	uint64_t block = N * (SEG / K), bound = (2 + 1 + 2) * block;
	printf("100 MiB put: %llu ms, buffered peak %llu (sampled %llu), bound %llu\n",
	       (unsigned long long)(t1 - t0), (unsigned long long)st.buffered_peak,
	       (unsigned long long)peak, (unsigned long long)bound);
	ck_assert_uint_le(st.buffered_peak, bound);
	ck_assert_uint_eq(l.nsegs, 25);
	/* GET with a fresh context so the peak is the GET's. */
	fx_new_data(&f, &nohedge_opts);
	expect_range(&f, &l, b, 0, size);
	uint64_t t2 = loop_now_ms();
	st = stats(&f);
	/* window segments of k data shards held, plus a piece in our hands. */
	uint64_t gbound = 2ull * SEG + (1u << 20);
	printf("100 MiB get: %llu ms, buffered peak %llu, bound %llu\n",
	       (unsigned long long)(t2 - t1), (unsigned long long)st.buffered_peak,
	       (unsigned long long)gbound);
	ck_assert_uint_le(st.buffered_peak, gbound);
	ck_assert_uint_eq(st.get_bytes, size);
	ck_assert_uint_eq(st.shard_gets, 25 * K);
	expect_range(&f, &l, b, 37 * SEG / 3, 3 * SEG + 5);
	buf_unref(b);
	gw_data_layout_clear(&l);
	fx_teardown(&f);
}
END_TEST

/* With hash threads the ETag's MD5 is fed as the body arrives (every
 * 128 KiB appended to a segment, the rest at its send) and hashed in MD5
 * lanes where the CPU has them: ETags of sizes around the feed size and
 * the segment size, written in small and large pieces, are the bodies'
 * MD5s (do_put checks), the bytes went through the lanes, and a PUT
 * aborted mid-segment with chunks out drains and frees its buffers. */
START_TEST(hashed_as_fed)
{
	struct workpool *wp;
	ck_assert_int_eq(workpool_new(2, 0, &wp), 0);
	struct gw_data_opts o = nohedge_opts;
	o.hash_pool = wp;
	struct fx f;
	fx_setup(&f, _i, "gwhash", 64 << 20, &o);
	struct md5_svc *svc = md5_svc_get(2);
	struct md5_svc_stats before, after;
	if (svc)
		md5_svc_stats(svc, &before);
	static const size_t hs[] = { 128 << 10, (128 << 10) - 1, (128 << 10) + 1, 1000000,
				     SEG - 1, SEG, 2 * SEG + 12345 };
	uint64_t lanes_bytes = 0;
	for (unsigned i = 0; i < sizeof(hs) / sizeof(hs[0]); i++)
		for (unsigned pass = 0; pass < 2; pass++) {
			struct buf *b = pattern(hs[i], f.seed + i * 2 + pass);
			struct gw_data_layout l;
			ck_assert_int_eq(do_put(&f, b, pass ? 1 << 20 : 9000, &l, NULL, NULL), 0);
			if (hs[i] >= 128 << 10)   /* hash_min_bytes: smaller ones inline */
				lanes_bytes += hs[i];
			uint32_t failed = 9;
			ck_assert_int_eq(do_delete(&f, &l, &failed), 0);
			gw_data_layout_clear(&l);
			buf_unref(b);
		}
	if (svc) {
		md5_svc_stats(svc, &after);
		ck_assert_uint_ge(after.bytes - before.bytes, lanes_bytes);
	}
	/* Abort with 1.5 segments fed: the hash chunks out complete, the
	 * PUT reports, nothing stays live (fx_teardown checks). */
	struct buf *b = pattern(3 * SEG, f.seed);
	struct put_run r = { 0 };
	ck_assert_int_eq(gw_data_put_start(f.d, &f.t, b->len, NULL, &put_cbs, &r, &r.p), 0);
	size_t off = 0;
	while (off < SEG + SEG / 2) {
		ssize_t n = gw_data_put_write(r.p, b->data + off, 100000);
		ck_assert_int_ge(n, 0);
		off += (size_t)n;
		if (n < 100000)
			uv_run(&f.loop, UV_RUN_ONCE);
	}
	gw_data_put_abort(r.p);
	while (!r.done)
		uv_run(&f.loop, UV_RUN_ONCE);
	ck_assert_int_eq(r.status, -ECANCELED);
	gw_data_put_free(r.p);
	buf_unref(b);
	fx_teardown(&f);
	workpool_free(wp);
}
END_TEST

/* Objects of several sizes, written with all six up. */
struct set {
	struct buf *b[NSIZES];
	struct gw_data_layout l[NSIZES];
};

static void put_set(struct fx *f, struct set *s)
{
	for (int i = 0; i < NSIZES; i++) {
		s->b[i] = pattern(sizes[i], f->seed * 3 + (uint64_t)i);
		ck_assert_int_eq(do_put(f, s->b[i], 1 << 20, &s->l[i], NULL, NULL), 0);
	}
}

static void free_set(struct set *s)
{
	for (int i = 0; i < NSIZES; i++) {
		buf_unref(s->b[i]);
		gw_data_layout_clear(&s->l[i]);
	}
}

START_TEST(two_down_reads_everything)
{
	struct fx f;
	fx_setup(&f, _i, "gw2d", 64 << 20, NULL);
	struct set s;
	put_set(&f, &s);
	/* A data OSD and... another data OSD: the worst case for decode. */
	osd_cluster_stop_node(&f.c, 1);
	osd_cluster_stop_node(&f.c, 2);
	uint64_t dec0 = stats(&f).decodes;
	for (int i = 0; i < NSIZES; i++) {
		size_t n = sizes[i];
		expect_range(&f, &s.l[i], s.b[i], 0, n);
		if (n > 2) {
			expect_range(&f, &s.l[i], s.b[i], n - 1, 1);
			expect_range(&f, &s.l[i], s.b[i], 1, n / 2);
		}
	}
	struct gw_data_stats st = stats(&f);
	printf("two down: decodes %llu, shard get failures %llu, avoided %llu\n",
	       (unsigned long long)(st.decodes - dec0), (unsigned long long)st.shard_get_failures,
	       (unsigned long long)st.shard_gets_avoided);
	ck_assert_uint_gt(st.decodes, dec0);
	/* Over HTTP/2 the stopped OSDs' circuits may open before the first
	 * read (a refused reconnect): their shards are then avoided, not
	 * tried and failed. Either way the reader knew they were gone. */
	ck_assert_uint_gt(st.shard_get_failures + st.shard_gets_avoided, 0);
	ck_assert_uint_gt(st.shard_gets_by_index[4], 0);
	ck_assert_uint_eq(st.gets_failed, 0);
	free_set(&s);
	fx_teardown(&f);
}
END_TEST

START_TEST(three_down_fails_cleanly)
{
	struct fx f;
	fx_setup(&f, _i, "gw3d", 64 << 20, NULL);
	struct set s;
	put_set(&f, &s);
	osd_cluster_stop_node(&f.c, 0);
	osd_cluster_stop_node(&f.c, 3);
	osd_cluster_stop_node(&f.c, 5);
	for (int i = 1; i < NSIZES; i++) {
		uint64_t got = 99;
		int rc = do_get(&f, &s.l[i], 0, sizes[i], s.b[i]->data, &got);
		ck_assert_int_eq(rc, IOL_EUNAVAILABLE);
		/* The first segment cannot be read: not a byte came out. */
		ck_assert_uint_eq(got, 0);
	}
	ck_assert_uint_eq(stats(&f).gets_failed, NSIZES - 1);
	/* The 0-byte object needs no OSD. */
	ck_assert_int_eq(do_get(&f, &s.l[0], 0, 0, NULL, NULL), 0);

	/* A PUT cannot reach quorum: it fails and leaves nothing behind on
	 * the three that are up. */
	unsigned before[N];
	for (unsigned i = 0; i < N; i++)
		before[i] = (i == 1 || i == 2 || i == 4) ? count_shards(&f, i) : 0;
	struct buf *b = pattern(3 * SEG + 12345, f.seed);
	struct gw_data_layout l;
	ck_assert_int_eq(do_put(&f, b, 1 << 20, &l, NULL, NULL), IOL_EUNAVAILABLE);
	for (unsigned i = 0; i < N; i++)
		if (i == 1 || i == 2 || i == 4)
			ck_assert_uint_eq(count_shards(&f, i), before[i]);
	ck_assert_uint_ge(stats(&f).shard_deletes, 3);
	ck_assert_uint_eq(stats(&f).puts_failed, 1);
	buf_unref(b);
	free_set(&s);
	fx_teardown(&f);
}
END_TEST

START_TEST(one_down_put_succeeds)
{
	struct fx f;
	fx_setup(&f, _i, "gw1d", 64 << 20, &degr_exact_opts);
	memset(&degr, 0, sizeof(degr));
	osd_cluster_stop_node(&f.c, 2);
	struct buf *b = pattern(2 * SEG + 777, f.seed);
	struct gw_data_layout l;
	ck_assert_int_eq(do_put(&f, b, 1 << 20, &l, NULL, NULL), 0);
	/* Shard 2 of every segment is reported missing, the rest stored. */
	for (uint32_t s = 0; s < l.nsegs; s++)
		ck_assert_uint_eq(l.missing[s], 1u << 2);
	/* ... and the PG reported degraded, once for the whole PUT. */
	ck_assert_uint_eq(degr.n[GW_DATA_PUT_PARTIAL], 1);
	ck_assert_uint_eq(degr.n[GW_DATA_READ_BAD_SHARD], 0);
	ck_assert_uint_eq(degr.pg, PG);
	for (unsigned i = 0; i < N; i++)
		if (i != 2)
			ck_assert_uint_eq(count_shards(&f, i), l.nsegs);
	/* The record carries the missing masks; a GET reads around them
	 * without calling OSD 2. */
	uint8_t rec[1024];
	ssize_t rl = gw_data_layout_encode(&l, rec, sizeof(rec));
	ck_assert_int_gt(rl, 0);
	struct gw_data_layout back;
	ck_assert_int_eq(gw_data_layout_decode(rec, (size_t)rl, &back), 0);
	ck_assert_uint_eq(back.missing[1], 1u << 2);
	uint64_t g2 = stats(&f).shard_gets_by_index[2];
	expect_range(&f, &back, b, 0, b->len);
	/* OSD 2 is asked at most once per segment (the mask is a hint: a
	 * rebuilt shard is read again), then parity decodes. */
	ck_assert_uint_le(stats(&f).shard_gets_by_index[2], g2 + l.nsegs);
	ck_assert_uint_eq(stats(&f).decodes, l.nsegs);
	/* a GET decoding around shards the layout records as missing flags
	 * nothing: the PUT did (the mask outlives a rebuild of the shard) */
	ck_assert_uint_eq(degr.n[GW_DATA_READ_BAD_SHARD], 0);
	/* Delete reports OSD 2's shards as failed (it is down). */
	uint32_t failed = 0;
	ck_assert_int_eq(do_delete(&f, &l, &failed), IOL_EUNAVAILABLE);
	ck_assert_uint_eq(failed, l.nsegs);
	gw_data_layout_clear(&back);
	gw_data_layout_clear(&l);
	buf_unref(b);
	fx_teardown(&f);
}
END_TEST

/* Call OSD i for shard `shard` of segment 0 of l: GetShard (into *got,
 * a reference), DeleteShard (got NULL, put NULL) or PutShard (put). */
static int shard_call(struct fx *f, const struct gw_data_layout *l, unsigned i, uint32_t shard,
		      struct buf_slice *got, const struct buf_slice *put)
{
	uint8_t kb[GW_DATA_KEY_LEN];
	memcpy(kb, l->object_id, GW_DATA_OID_LEN);
	memset(kb + GW_DATA_OID_LEN, 0, 4);
	Iolake__Osd__ShardKey key;
	iolake__osd__shard_key__init(&key);
	key.pg = PG;
	key.object_id.data = kb;
	key.object_id.len = sizeof(kb);
	key.shard = shard;
	struct osd_call c;
	int st;
	if (got) {
		Iolake__Osd__GetShardRequest q = IOLAKE__OSD__GET_SHARD_REQUEST__INIT;
		q.key = &key;
		st = osd_call_sync(&f->loop, f->ch[i], OSD_M_GET, &q.base, NULL, &c);
		if (st == RPC_OK) {
			*got = c.payload;
			buf_ref(got->buf);
		}
	} else if (put) {
		Iolake__Osd__PutShardRequest q = IOLAKE__OSD__PUT_SHARD_REQUEST__INIT;
		q.key = &key;
		q.length = put->len;
		q.crc32c = crc32c(0, buf_slice_data(put), put->len);
		st = osd_call_sync(&f->loop, f->ch[i], OSD_M_PUT, &q.base, put, &c);
	} else {
		Iolake__Osd__DeleteShardRequest q = IOLAKE__OSD__DELETE_SHARD_REQUEST__INIT;
		q.key = &key;
		st = osd_call_sync(&f->loop, f->ch[i], OSD_M_DEL, &q.base, NULL, &c);
	}
	osd_call_clear(&c);
	return st;
}

/* A shard the layout records as missing is still asked for first: while
 * it is absent the GET decodes around it (one failed call, no PG flag),
 * and once the PG's primary rebuilt it the GET reads it, no decode. */
START_TEST(missing_mask_is_a_hint)
{
	struct fx f;
	fx_setup(&f, _i, "gwmh", 64 << 20, &degr_exact_opts);
	memset(&degr, 0, sizeof(degr));
	struct buf *b = pattern(1 << 20, f.seed);
	struct gw_data_layout l;
	ck_assert_int_eq(do_put(&f, b, 1 << 20, &l, NULL, NULL), 0);
	ck_assert_uint_eq(l.nsegs, 1);
	struct buf_slice shard1;
	ck_assert_int_eq(shard_call(&f, &l, 1, 1, &shard1, NULL), RPC_OK);
	ck_assert_int_eq(shard_call(&f, &l, 1, 1, NULL, NULL), RPC_OK);   /* deleted */
	l.missing[0] = 1u << 1;   /* as a PUT that could not store it records */

	uint64_t g1 = stats(&f).shard_gets_by_index[1];
	expect_range(&f, &l, b, 0, b->len);
	ck_assert_uint_eq(stats(&f).shard_gets_by_index[1], g1 + 1);
	ck_assert_uint_eq(stats(&f).decodes, 1);
	ck_assert_uint_eq(degr.n[GW_DATA_READ_BAD_SHARD], 0);

	/* Rebuilt (as osd/recover writes it): read directly again. */
	ck_assert_int_eq(shard_call(&f, &l, 1, 1, NULL, &shard1), RPC_OK);
	expect_range(&f, &l, b, 0, b->len);
	ck_assert_uint_eq(stats(&f).decodes, 1);
	ck_assert_uint_eq(stats(&f).shard_gets_by_index[1], g1 + 2);
	buf_unref(shard1.buf);
	buf_unref(b);
	gw_data_layout_clear(&l);
	fx_teardown(&f);
}
END_TEST

START_TEST(corruption_read_around)
{
	struct fx f;
	fx_setup(&f, _i, "gwcs", 64 << 20, &degr_exact_opts);
	memset(&degr, 0, sizeof(degr));
	/* 1 MiB: 256 KiB shards, stored in device extents (not inline). */
	struct buf *b = pattern(1 << 20, f.seed);
	struct gw_data_layout l;
	ck_assert_int_eq(do_put(&f, b, 1 << 20, &l, NULL, NULL), 0);
	ck_assert_uint_eq(degr.n[GW_DATA_PUT_PARTIAL], 0);   /* every shard stored */
	/* Flip a byte of data shard 1 on OSD 1's device file. */
	uint8_t kb[GW_DATA_KEY_LEN];
	memcpy(kb, l.object_id, GW_DATA_OID_LEN);
	memset(kb + GW_DATA_OID_LEN, 0, 4);
	struct store_key sk;
	ck_assert_int_eq(store_key_make(&sk, PG, kb, sizeof(kb), 1), 0);
	struct store_stat ss;
	ck_assert_int_eq(osd_cluster_stat(&f.c, 1, &sk, &ss), 0);
	ck_assert(!ss.is_inline);
	int fd = open(f.c.node[1].dev, O_RDWR);
	ck_assert_int_ge(fd, 0);
	off_t at = (off_t)(STORE_DATA_OFF + ss.block * STORE_BLOCK_SIZE + 1000);
	uint8_t byte;
	ck_assert_int_eq(pread(fd, &byte, 1, at), 1);
	byte ^= 0x40;
	ck_assert_int_eq(pwrite(fd, &byte, 1, at), 1);
	ck_assert_int_eq(fdatasync(fd), 0);
	close(fd);
	expect_range(&f, &l, b, 0, b->len);
	struct gw_data_stats st = stats(&f);
	ck_assert_uint_eq(st.decodes, 1);
	ck_assert_uint_ge(st.shard_get_failures, 1);
	ck_assert_uint_eq(degr.n[GW_DATA_READ_BAD_SHARD], 1);   /* the bad shard, reported */
	ck_assert_uint_eq(degr.pg, PG);
	/* A range away from the flipped block reads healthy. */
	expect_range(&f, &l, b, (256 << 10) + 200000, 100);
	ck_assert_uint_eq(stats(&f).decodes, 1);
	ck_assert_uint_eq(degr.n[GW_DATA_READ_BAD_SHARD], 1);

	/* A stale shard: OSD 3 holds other bytes under the key (consistent
	 * with its own crc) -> the layout's crc32c rejects it. */
	struct buf *junk = pattern(256 << 10, f.seed + 1);
	Iolake__Osd__ShardKey key;
	uint8_t kb3[GW_DATA_KEY_LEN];
	memcpy(kb3, kb, sizeof(kb3));
	iolake__osd__shard_key__init(&key);
	key.pg = PG;
	key.object_id.data = kb3;
	key.object_id.len = sizeof(kb3);
	key.shard = 3;
	Iolake__Osd__PutShardRequest q = IOLAKE__OSD__PUT_SHARD_REQUEST__INIT;
	q.key = &key;
	q.length = junk->len;
	q.crc32c = crc32c(0, junk->data, junk->len);
	struct buf_slice pl = { junk, 0, junk->len };
	struct osd_call c;
	ck_assert_int_eq(osd_call_sync(&f.loop, f.ch[3], OSD_M_PUT, &q.base, &pl, &c), RPC_OK);
	osd_call_clear(&c);
	expect_range(&f, &l, b, 3 * (256 << 10) + 5, 1000);
	st = stats(&f);
	ck_assert_uint_ge(st.crc_mismatches, 1);
	ck_assert_uint_eq(st.decodes, 2);
	/* Both at once: shards 1 and 3 bad, whole object still right. */
	expect_range(&f, &l, b, 0, b->len);
	ck_assert_uint_eq(stats(&f).decodes, 3);
	buf_unref(junk);
	buf_unref(b);
	gw_data_layout_clear(&l);
	fx_teardown(&f);
}
END_TEST

/* An inline shard whose bytes changed after their crc was computed: the
 * stale shard 1 of a 64 KiB object is rewritten with other bytes but the
 * layout's crc, as a gateway buffer scribbled on between crc32c and the
 * call would be sent. Over HTTP/2 the OSD refuses the put (DATA_LOSS). In
 * process it trusts the carried crc (the bytes never left memory) and
 * stores them; the GET path then reports it: the OSD answers DATA_LOSS,
 * the shard is read around (decode) and reported bad, and the object
 * comes back byte for byte. Issue 19's crc-once rule, end to end. */
START_TEST(inline_changed_after_crc)
{
	struct fx f;
	fx_setup(&f, _i, "gwic", 64 << 20, &degr_exact_opts);
	memset(&degr, 0, sizeof(degr));
	struct buf *b = pattern(64 << 10, f.seed);   /* 16 KiB shards: inline */
	struct gw_data_layout l;
	ck_assert_int_eq(do_put(&f, b, 1 << 20, &l, NULL, NULL), 0);
	uint8_t kb[GW_DATA_KEY_LEN];
	memcpy(kb, l.object_id, GW_DATA_OID_LEN);
	memset(kb + GW_DATA_OID_LEN, 0, 4);
	Iolake__Osd__ShardKey key;
	iolake__osd__shard_key__init(&key);
	key.pg = PG;
	key.object_id.data = kb;
	key.object_id.len = sizeof(kb);
	key.shard = 1;
	struct buf *junk = pattern(16 << 10, f.seed + 7);
	Iolake__Osd__PutShardRequest q = IOLAKE__OSD__PUT_SHARD_REQUEST__INIT;
	q.key = &key;
	q.length = junk->len;
	q.crc32c = l.crcs[1];   /* the crc of the bytes before the change */
	struct buf_slice pl = { junk, 0, junk->len };
	struct osd_call c;
	int st = osd_call_sync(&f.loop, f.ch[1], OSD_M_PUT, &q.base, &pl, &c);
	printf("%s: inline shard changed after its crc: put %s %s\n", tname[_i],
	       rpc_status_name(st), c.message);
	osd_call_clear(&c);
	ck_assert_int_eq(st, _i == T_LOCAL ? RPC_OK : RPC_DATA_LOSS);
	expect_range(&f, &l, b, 0, b->len);
	struct gw_data_stats s = stats(&f);
	if (_i == T_LOCAL) {
		ck_assert_uint_eq(s.decodes, 1);
		ck_assert_uint_ge(s.shard_get_failures, 1);
		ck_assert_uint_eq(degr.n[GW_DATA_READ_BAD_SHARD], 1);
		ck_assert_uint_eq(degr.pg, PG);
	} else {
		ck_assert_uint_eq(s.decodes, 0);   /* the stored shard is the good one */
		ck_assert_uint_eq(degr.n[GW_DATA_READ_BAD_SHARD], 0);
	}
	buf_unref(junk);
	buf_unref(b);
	gw_data_layout_clear(&l);
	fx_teardown(&f);
}
END_TEST

/* Slow consumer: one piece per 3 ms tick, then a long pause. */
struct slow {
	struct fx *f;
	struct gw_data_get *g;
	const struct buf *b;
	uint64_t at;
	uint64_t peak;
	int rc;
	bool done, paused;
	unsigned ticks;
	uint64_t gets_at_pause;
	uint64_t emitted_at_pause;
};

static void slow_tick(uv_timer_t *t)
{
	struct slow *s = t->data;
	struct gw_data_stats st;
	gw_data_stats(s->f->d, &st);
	if (st.buffered_bytes > s->peak)
		s->peak = st.buffered_bytes;
	s->ticks++;
	if (s->ticks == 20 && !s->paused) {
		/* Stop reading for 300 ms: reads must stop too. */
		s->paused = true;
		s->gets_at_pause = st.shard_gets;
		s->emitted_at_pause = s->at;
		uv_timer_start(t, slow_tick, 300, 3);
		return;
	}
	if (s->ticks == 21) {
		/* Nothing beyond the window was asked while we slept. */
		ck_assert_uint_eq(st.shard_gets, s->gets_at_pause);
		uint64_t seg_done = s->emitted_at_pause / SEG + 1;
		ck_assert_uint_le(st.shard_gets, (seg_done + 2) * K);
	}
	struct buf_slice sl;
	int rc = gw_data_get_read(s->g, &sl);
	if (rc == 1) {
		ck_assert(memcmp(buf_slice_data(&sl), s->b->data + s->at, sl.len) == 0);
		s->at += sl.len;
		buf_unref(sl.buf);
		return;
	}
	if (rc == -EAGAIN)
		return;
	s->rc = rc;
	s->done = true;
	uv_timer_stop(t);
	uv_stop(test_loop);
}

static void slow_readable(struct gw_data_get *g, void *ud)
{
	(void)g;
	(void)ud;
}

START_TEST(slow_consumer_bounded)
{
	struct fx f;
	fx_setup(&f, _i, "gwslow", 64 << 20, &nohedge_opts);
	struct buf *b = pattern(64u << 20, f.seed);
	struct gw_data_layout l;
	ck_assert_int_eq(do_put(&f, b, 1 << 20, &l, NULL, NULL), 0);
	fx_new_data(&f, &nohedge_opts);
	struct slow s = { .f = &f, .b = b };
	ck_assert_int_eq(gw_data_get_start(f.d, &f.t, &l, 0, b->len, slow_readable, &s, &s.g), 0);
	uv_timer_t t;
	uv_timer_init(&f.loop, &t);
	t.data = &s;
	uv_timer_start(&t, slow_tick, 3, 3);
	while (!s.done)
		uv_run(&f.loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&t, NULL);
	ck_assert_int_eq(s.rc, 0);
	ck_assert_uint_eq(s.at, b->len);
	gw_data_get_free(s.g);
	struct gw_data_stats st = stats(&f);
	uint64_t bound = 2ull * SEG;
	printf("slow consumer: %u ticks, buffered peak %llu (sampled %llu), bound %llu\n",
	       s.ticks, (unsigned long long)st.buffered_peak, (unsigned long long)s.peak,
	       (unsigned long long)bound);
	ck_assert_uint_le(st.buffered_peak, bound + (1u << 20));
	ck_assert_uint_eq(st.shard_gets, 16 * K);
	buf_unref(b);
	gw_data_layout_clear(&l);
	fx_teardown(&f);
}
END_TEST

START_TEST(abort_and_misuse)
{
	struct fx f;
	fx_setup(&f, _i, "gwab", 64 << 20, NULL);
	struct buf *b = pattern(3 * SEG, f.seed);
	/* Abort after one segment went out: done(-ECANCELED), nothing kept. */
	struct put_run r = { 0 };
	ck_assert_int_eq(gw_data_put_start(f.d, &f.t, b->len, NULL, &put_cbs, &r, &r.p), 0);
	ck_assert_int_eq(gw_data_put_write(r.p, b->data, SEG + 10), SEG + 10);
	gw_data_put_abort(r.p);
	ck_assert(!r.done);
	while (!r.done)
		uv_run(&f.loop, UV_RUN_ONCE);
	ck_assert_int_eq(r.status, -ECANCELED);
	gw_data_put_free(r.p);
	for (unsigned i = 0; i < N; i++)
		ck_assert_uint_eq(count_shards(&f, i), 0);
	/* A short body: finish refuses, done reports. */
	memset(&r, 0, sizeof(r));
	ck_assert_int_eq(gw_data_put_start(f.d, &f.t, 100, NULL, &put_cbs, &r, &r.p), 0);
	ck_assert_int_eq(gw_data_put_write(r.p, b->data, 99), 99);
	ck_assert_int_eq(gw_data_put_finish(r.p), -EMSGSIZE);
	while (!r.done)
		uv_run(&f.loop, UV_RUN_ONCE);
	ck_assert_int_eq(r.status, -EMSGSIZE);
	gw_data_put_free(r.p);
	/* Too long a body. */
	memset(&r, 0, sizeof(r));
	ck_assert_int_eq(gw_data_put_start(f.d, &f.t, 100, NULL, &put_cbs, &r, &r.p), 0);
	ck_assert_int_eq(gw_data_put_write(r.p, b->data, 101), -EMSGSIZE);
	while (!r.done)
		uv_run(&f.loop, UV_RUN_ONCE);
	gw_data_put_free(r.p);
	/* Freed mid-flight: no callback, and everything drains. */
	memset(&r, 0, sizeof(r));
	ck_assert_int_eq(gw_data_put_start(f.d, &f.t, b->len, NULL, &put_cbs, &r, &r.p), 0);
	ck_assert_int_eq(gw_data_put_write(r.p, b->data, SEG), SEG);
	gw_data_put_free(r.p);
	while (stats(&f).live_ops)
		uv_run(&f.loop, UV_RUN_ONCE);
	ck_assert(!r.done);
	for (unsigned i = 0; i < N; i++)
		ck_assert_uint_eq(count_shards(&f, i), 0);
	buf_unref(b);
	fx_teardown(&f);
}
END_TEST

/* ------------------------------------------------------------ failure detection */

/* Hang node i's loop (its OSD service stops answering, sockets stay open)
 * from a helper thread until release_node. */
struct hang {
	struct osd_cluster *c;
	unsigned i;
	pthread_t th;
	atomic_int release;
};

static void hang_fn(void *arg)
{
	struct hang *h = arg;
	/* Bounded, so a failed test cannot leave a thread stuck forever. */
	for (int n = 0; n < 3000 && !atomic_load(&h->release); n++)
		usleep(10 * 1000);
}

static void *hang_thread(void *arg)
{
	struct hang *h = arg;
	loop_thread_call(&h->c->node[h->i].lt, hang_fn, h);
	return NULL;
}

static void hang_node(struct hang *h, struct osd_cluster *c, unsigned i)
{
	h->c = c;
	h->i = i;
	atomic_init(&h->release, 0);
	ck_assert_int_eq(pthread_create(&h->th, NULL, hang_thread, h), 0);
	usleep(50 * 1000); /* let the loop enter hang_fn */
}

static void release_node(struct hang *h)
{
	atomic_store(&h->release, 1);
	pthread_join(h->th, NULL);
}

static void on_tick_stop(uv_timer_t *t)
{
	uv_stop(t->loop);
}

static void run_ms(struct fx *f, uint32_t ms)
{
	uint64_t end = loop_now_ms() + ms;
	uv_timer_t t;
	uv_timer_init(&f->loop, &t);
	uv_timer_start(&t, on_tick_stop, 10, 10);
	while (loop_now_ms() < end)
		uv_run(&f->loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(&f->loop, UV_RUN_NOWAIT);
}

/* Run until node i's channel is in state want (at most ms): elapsed or -1. */
static int64_t wait_peer(struct fx *f, unsigned i, int want, uint32_t ms)
{
	uint64_t t0 = loop_now_ms();
	uv_timer_t t;
	uv_timer_init(&f->loop, &t);
	uv_timer_start(&t, on_tick_stop, 10, 10);
	int64_t r = -1;
	for (;;) {
		if (rpc_channel_peer_state(f->ch[i]) == want) {
			r = (int64_t)(loop_now_ms() - t0);
			break;
		}
		if (loop_now_ms() - t0 > ms)
			break;
		uv_run(&f->loop, UV_RUN_ONCE);
	}
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(&f->loop, UV_RUN_NOWAIT);
	return r;
}

#define FD_OBJS 8

/* OSD 1 (holding data shard 1) hangs: GETs still answer, from parity,
 * after the hedge delay rather than the 5 s deadline; hedges are counted.
 * Over HTTP/2 the OSD is then declared dead (PING), its circuit opens and
 * GETs decode around it up front without hedging; released, the circuit
 * closes and it serves again. */
START_TEST(hung_osd_hedged)
{
	struct fx f;
	fx_setup(&f, _i, "gwhung", 64 << 20, NULL);
	struct buf *b[FD_OBJS];
	struct gw_data_layout l[FD_OBJS];
	for (int j = 0; j < FD_OBJS; j++) {
		b[j] = pattern(j % 2 ? 65536 : 1 << 20, f.seed + (uint64_t)j);
		ck_assert_int_eq(do_put(&f, b[j], 1 << 20, &l[j], NULL, NULL), 0);
	}
	/* Six segments of 1 MiB: more than the window (2) of segment slots. */
	struct buf *big = pattern(6 << 20, f.seed + 99);
	struct gw_data_layout lbig;
	ck_assert_int_eq(do_put(&f, big, 1 << 20, &lbig, NULL, NULL), 0);
	/* Fill the latency window (32 samples) with healthy reads. */
	for (int r = 0; r < 3; r++)
		for (int j = 0; j < FD_OBJS; j++)
			expect_range(&f, &l[j], b[j], 0, b[j]->len);
	struct gw_data_stats s0 = stats(&f);
	ck_assert_uint_eq(s0.gets_failed, 0);
	printf("%s: hedge delay %u ms after %llu shard reads\n", tname[_i], s0.hedge_delay_ms,
	       (unsigned long long)s0.shard_gets);

	struct hang h;
	hang_node(&h, &f.c, 1);
	uint64_t worst = 0;
	for (int j = 0; j < FD_OBJS; j++) {
		uint64_t t0 = loop_now_ms();
		expect_range(&f, &l[j], b[j], 0, b[j]->len);
		uint64_t ms = loop_now_ms() - t0;
		worst = ms > worst ? ms : worst;
	}
	struct gw_data_stats s1 = stats(&f);
	printf("%s: OSD 1 hung: %d GETs, slowest %llu ms (deadline 5000), hedges %llu, won %llu\n",
	       tname[_i], FD_OBJS, (unsigned long long)worst,
	       (unsigned long long)(s1.hedges - s0.hedges),
	       (unsigned long long)(s1.hedge_wins - s0.hedge_wins));
	ck_assert_uint_ge(s1.hedges - s0.hedges, 1);
	ck_assert_uint_ge(s1.hedge_wins - s0.hedge_wins, 1);
	ck_assert_uint_eq(s1.gets_failed, 0);
	ck_assert_uint_lt(worst, 2500); /* generous: the point is "not the deadline" */
	/* A GET of more segments than the window: each emitted segment's
	 * slot goes on to the next one, leaving its hung read behind as a
	 * late call, instead of holding the slot until that read's deadline
	 * (before: the third segment waited 5 s, the RPC deadline here). */
	uint64_t t0 = loop_now_ms();
	expect_range(&f, &lbig, big, 0, big->len);
	uint64_t big_ms = loop_now_ms() - t0;
	struct gw_data_stats sb = stats(&f);
	printf("%s: OSD 1 hung: GET of 6 segments (window 2) in %llu ms, %llu shard reads left "
	       "behind late\n", tname[_i], (unsigned long long)big_ms,
	       (unsigned long long)(sb.shard_gets_late - s1.shard_gets_late));
	ck_assert_uint_lt(big_ms, 2500);
	ck_assert_uint_ge(sb.shard_gets_late - s1.shard_gets_late, 1);

	if (_i == T_H2) {
		/* The PING goes unanswered: dead, circuit open. */
		int64_t down = wait_peer(&f, 1, RPC_PEER_DOWN, 8000);
		printf("h2: OSD 1 declared down after %lld ms more\n", (long long)down);
		ck_assert_int_ge(down, 0);
		struct gw_data_stats s2 = stats(&f);
		for (int j = 0; j < FD_OBJS; j++)
			expect_range(&f, &l[j], b[j], 0, b[j]->len);
		struct gw_data_stats s3 = stats(&f);
		printf("h2: circuit open: avoided %llu data shard reads, hedges %llu\n",
		       (unsigned long long)(s3.shard_gets_avoided - s2.shard_gets_avoided),
		       (unsigned long long)(s3.hedges - s2.hedges));
		ck_assert_uint_ge(s3.shard_gets_avoided - s2.shard_gets_avoided, FD_OBJS);
		ck_assert_uint_eq(s3.shard_gets_by_index[1], s2.shard_gets_by_index[1]);
		release_node(&h);
		int64_t up = wait_peer(&f, 1, RPC_PEER_UP, 8000);
		printf("h2: OSD 1 running again: circuit closed after %lld ms\n", (long long)up);
		ck_assert_int_ge(up, 0);
		uint64_t g1 = s3.shard_gets_by_index[1];
		for (int j = 0; j < FD_OBJS; j++)
			expect_range(&f, &l[j], b[j], 0, b[j]->len);
		ck_assert_uint_gt(stats(&f).shard_gets_by_index[1], g1);
	} else {
		release_node(&h);
		run_ms(&f, 10);
	}
	for (int j = 0; j < FD_OBJS; j++) {
		buf_unref(b[j]);
		gw_data_layout_clear(&l[j]);
	}
	buf_unref(big);
	gw_data_layout_clear(&lbig);
	fx_teardown(&f);
}
END_TEST

/* The map says OSD 2 is down (target.down): GETs never call it while k
 * others can serve; with three marked down the down ones are the last
 * resort (here they are in fact up, so the reads succeed). */
START_TEST(down_in_map_never_called)
{
	struct fx f;
	fx_setup(&f, _i, "gwdown", 64 << 20, NULL);
	struct buf *b[FD_OBJS];
	struct gw_data_layout l[FD_OBJS];
	for (int j = 0; j < FD_OBJS; j++) {
		b[j] = pattern(j % 2 ? 65536 : 1 << 20, f.seed + (uint64_t)j);
		ck_assert_int_eq(do_put(&f, b[j], 1 << 20, &l[j], NULL, NULL), 0);
	}
	uint64_t osd2 = osd_gets(&f, 2);
	struct gw_data_stats s0 = stats(&f);
	f.t.down = 1u << 2;
	for (int j = 0; j < FD_OBJS; j++)
		expect_range(&f, &l[j], b[j], 0, b[j]->len);
	struct gw_data_stats s1 = stats(&f);
	printf("%s: OSD 2 down in the map: its GetShards %llu -> %llu, avoided %llu, decodes %llu\n",
	       tname[_i], (unsigned long long)osd2, (unsigned long long)osd_gets(&f, 2),
	       (unsigned long long)(s1.shard_gets_avoided - s0.shard_gets_avoided),
	       (unsigned long long)(s1.decodes - s0.decodes));
	ck_assert_uint_eq(osd_gets(&f, 2), osd2);
	ck_assert_uint_eq(s1.shard_gets_by_index[2], s0.shard_gets_by_index[2]);
	ck_assert_uint_eq(s1.shard_gets_avoided - s0.shard_gets_avoided, FD_OBJS);
	ck_assert_uint_eq(s1.decodes - s0.decodes, FD_OBJS);
	ck_assert_uint_eq(s1.gets_failed, 0);
	/* Three "down": only three shards are not, so one down one is read. */
	f.t.down = (1u << 0) | (1u << 2) | (1u << 5);
	for (int j = 0; j < FD_OBJS; j++)
		expect_range(&f, &l[j], b[j], 0, b[j]->len);
	ck_assert_uint_eq(stats(&f).gets_failed, 0);
	f.t.down = 0;
	for (int j = 0; j < FD_OBJS; j++) {
		buf_unref(b[j]);
		gw_data_layout_clear(&l[j]);
	}
	fx_teardown(&f);
}
END_TEST

/* ------------------------------------------------------------ quorum PUTs */

#define QP_OBJS 12

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* n PUTs one after the other (64 KiB and 1 MiB); their latencies in ms
 * into ms[], sorted; each must succeed; layouts kept when l is not NULL. */
static void timed_puts(struct fx *f, int n, uint64_t seed, uint64_t *ms, struct buf **b,
		       struct gw_data_layout *l)
{
	for (int j = 0; j < n; j++) {
		struct buf *x = pattern(j % 2 ? 65536 : 1 << 20, seed + (uint64_t)j);
		struct gw_data_layout tmp;
		uint64_t t0 = uv_hrtime();
		ck_assert_int_eq(do_put(f, x, 1 << 20, l ? &l[j] : &tmp, NULL, NULL), 0);
		ms[j] = (uv_hrtime() - t0) / 1000000;
		if (b)
			b[j] = x;
		else
			buf_unref(x);
		if (!l)
			gw_data_layout_clear(&tmp);
	}
	qsort(ms, (size_t)n, sizeof(*ms), cmp_u64);
}

/* OSD 1 hangs (its loop stops; sockets stay open): a PUT finishes once
 * write_quorum (k+1) shards are stored and the quorum grace ran out, with
 * shard 1 recorded missing and the PG reported degraded, instead of
 * waiting for the hung call (the RPC deadline, or over HTTP/2 the PING
 * that declares the OSD dead). The objects read back (around shard 1).
 * Printed: PUT p50/p99/max healthy, with the grace off (every call
 * awaited: before) and on (after). Two OSDs hung: below quorum, the PUT
 * is never acknowledged. */
START_TEST(hung_osd_put_at_quorum)
{
	struct fx f;
	struct gw_data_opts off = degr_opts, on = degr_opts;
	off.put_grace_off = true;
	fx_setup(&f, _i, "gwqput", 128 << 20, &on);
	memset(&degr, 0, sizeof(degr));
	uint64_t ms[QP_OBJS];
	/* Healthy: fills the shard write latency window. */
	timed_puts(&f, QP_OBJS, f.seed, ms, NULL, NULL);
	timed_puts(&f, QP_OBJS, f.seed + 100, ms, NULL, NULL);
	struct gw_data_stats s0 = stats(&f);
	printf("%s: healthy PUT p50 %llu p99 %llu max %llu ms (%d PUTs), grace %u ms\n", tname[_i],
	       (unsigned long long)ms[QP_OBJS / 2], (unsigned long long)ms[QP_OBJS * 99 / 100],
	       (unsigned long long)ms[QP_OBJS - 1], QP_OBJS, s0.put_grace_ms);
	/* Healthy: the grace (2 x the healthy p99) cuts almost nothing; on a
	 * loaded machine a write now and then is slower than that (2 of the
	 * 144 once), so a few, not none. */
	printf("%s: healthy: shard writes abandoned at the grace %llu of %d\n", tname[_i],
	       (unsigned long long)s0.shard_puts_abandoned, 2 * QP_OBJS * 6);
	ck_assert_uint_le(s0.shard_puts_abandoned, QP_OBJS / 4);
	ck_assert_uint_le(degr.n[GW_DATA_PUT_PARTIAL], s0.shard_puts_abandoned);

	/* Before: the grace off, every call awaited. */
	fx_new_data(&f, &off);
	struct hang h;
	hang_node(&h, &f.c, 1);
	uint64_t before[2];
	timed_puts(&f, 2, f.seed + 200, before, NULL, NULL);
	release_node(&h);
	if (_i == T_H2)
		ck_assert_int_ge(wait_peer(&f, 1, RPC_PEER_UP, 8000), 0);
	printf("%s: OSD 1 hung, grace off (before): PUT p50 %llu max %llu ms (2 PUTs)\n",
	       tname[_i], (unsigned long long)before[0], (unsigned long long)before[1]);

	/* After: the grace on. */
	fx_new_data(&f, &on);
	timed_puts(&f, QP_OBJS, f.seed + 300, ms, NULL, NULL);   /* warm the window again */
	memset(&degr, 0, sizeof(degr));
	struct gw_data_stats s1 = stats(&f);
	hang_node(&h, &f.c, 1);
	struct buf *b[QP_OBJS];
	struct gw_data_layout l[QP_OBJS];
	timed_puts(&f, QP_OBJS, f.seed + 400, ms, b, l);
	struct gw_data_stats s2 = stats(&f);
	printf("%s: OSD 1 hung, grace on (after): PUT p50 %llu p99 %llu max %llu ms (%d PUTs), "
	       "grace %u ms, shard writes abandoned %llu\n",
	       tname[_i], (unsigned long long)ms[QP_OBJS / 2],
	       (unsigned long long)ms[QP_OBJS * 99 / 100], (unsigned long long)ms[QP_OBJS - 1],
	       QP_OBJS, s2.put_grace_ms,
	       (unsigned long long)(s2.shard_puts_abandoned - s1.shard_puts_abandoned));
	/* Not the deadline, nor PING detection: generous, the point is which. */
	ck_assert_uint_lt(ms[QP_OBJS - 1], 1500);
	for (int j = 0; j < QP_OBJS; j++) {
		for (uint32_t s = 0; s < l[j].nsegs; s++)
			ck_assert_uint_eq(l[j].missing[s], 1u << 1);
		expect_range(&f, &l[j], b[j], 0, b[j]->len);
	}
	ck_assert_uint_eq(degr.n[GW_DATA_PUT_PARTIAL], QP_OBJS);
	ck_assert_uint_ge(s2.shard_puts_abandoned - s1.shard_puts_abandoned, 1);
	release_node(&h);

	if (_i == T_H2) {
		/* Two hung: 4 of 6 stored, below the quorum of 5: failed. */
		ck_assert_int_ge(wait_peer(&f, 1, RPC_PEER_UP, 8000), 0);
		struct hang h3;
		hang_node(&h, &f.c, 1);
		hang_node(&h3, &f.c, 3);
		struct buf *x = pattern(65536, f.seed + 500);
		struct gw_data_layout lx;
		ck_assert_int_eq(do_put(&f, x, 1 << 20, &lx, NULL, NULL), IOL_EUNAVAILABLE);
		buf_unref(x);
		release_node(&h);
		release_node(&h3);
	}
	/* The late calls end once the OSD runs again; every PUT lets go. */
	struct gw_data_stats st;
	for (gw_data_stats(f.d, &st); st.live_ops; gw_data_stats(f.d, &st))
		uv_run(&f.loop, UV_RUN_ONCE);
	printf("%s: late shard writes counted %llu\n", tname[_i],
	       (unsigned long long)st.shard_puts_late);
	for (int j = 0; j < QP_OBJS; j++) {
		buf_unref(b[j]);
		gw_data_layout_clear(&l[j]);
	}
	fx_teardown(&f);
}
END_TEST

/* OSD i made slow, not hung: a helper thread keeps its loop busy for
 * ms at a time, 1 ms apart, so every call to it answers late (as a
 * failing disk or a saturated host would) until slow_osd_stop. */
struct slow_osd {
	struct osd_cluster *c;
	unsigned i, ms;
	pthread_t th;
	atomic_int stop;
};

static void slow_osd_fn(void *arg)
{
	struct slow_osd *s = arg;
	usleep(s->ms * 1000);
}

static void *slow_osd_thread(void *arg)
{
	struct slow_osd *s = arg;
	for (int n = 0; n < 20000 && !atomic_load(&s->stop); n++) {
		loop_thread_call(&s->c->node[s->i].lt, slow_osd_fn, s);
		usleep(1000);
	}
	return NULL;
}

static void slow_osd_start(struct slow_osd *s, struct osd_cluster *c, unsigned i, unsigned ms)
{
	s->c = c;
	s->i = i;
	s->ms = ms;
	atomic_init(&s->stop, 0);
	ck_assert_int_eq(pthread_create(&s->th, NULL, slow_osd_thread, s), 0);
}

static void slow_osd_stop(struct slow_osd *s)
{
	atomic_store(&s->stop, 1);
	pthread_join(s->th, NULL);
}

/* n GETs of the objects in turn; their latencies in ms into ms[], sorted. */
static void timed_gets(struct fx *f, int n, struct buf **b, struct gw_data_layout *l, int objs,
		       uint64_t *ms)
{
	for (int j = 0; j < n; j++) {
		uint64_t t0 = uv_hrtime();
		expect_range(f, &l[j % objs], b[j % objs], 0, b[j % objs]->len);
		ms[j] = (uv_hrtime() - t0) / 1000000;
	}
	qsort(ms, (size_t)n, sizeof(*ms), cmp_u64);
}

/* OSD 1 slow (every call answers up to 100 ms late) for a run of GETs of
 * 320 KiB objects: 80 KiB shards, on the device, so read through the OSD's
 * loop (in process, an inline shard is read on the caller's thread and a
 * busy OSD loop does not slow it: rpc_direct_fn, osd/service.c d_get):
 * its reads raise its own p95 only, so the hedge delay of a segment
 * stays the healthy OSDs' and reads around it win. (With one p95 over
 * all OSDs, about a sixth of shard reads are slow and the p95 becomes
 * the slow OSD's: hedges fire too late to help.) Printed: GET p50, p99,
 * max healthy and while slow; checked: no GET fails, the slow OSD's p95
 * is above a healthy one's, and hedges fire and win. */
START_TEST(slow_osd_hedged)
{
	enum { OBJS = 8, GETS = 48 };
	struct fx f;
	fx_setup(&f, _i, "gwslow", 64 << 20, NULL);
	struct buf *b[OBJS];
	struct gw_data_layout l[OBJS];
	for (int j = 0; j < OBJS; j++) {
		b[j] = pattern(320 << 10, f.seed + (uint64_t)j);
		ck_assert_int_eq(do_put(&f, b[j], 1 << 20, &l[j], NULL, NULL), 0);
	}
	uint64_t ms[2 * GETS];
	timed_gets(&f, GETS, b, l, OBJS, ms);
	struct gw_data_stats s0 = stats(&f);
	printf("%s: healthy GET 320 KiB p50 %llu p99 %llu max %llu ms, hedge delay %u ms\n",
	       tname[_i], (unsigned long long)ms[GETS / 2], (unsigned long long)ms[GETS * 99 / 100],
	       (unsigned long long)ms[GETS - 1], s0.hedge_delay_ms);

	uint64_t pm[GETS];
	timed_puts(&f, GETS, f.seed + 100, pm, NULL, NULL);
	printf("%s: healthy PUT 64 KiB/1 MiB p50 %llu p99 %llu max %llu ms, grace %u ms\n",
	       tname[_i], (unsigned long long)pm[GETS / 2], (unsigned long long)pm[GETS * 99 / 100],
	       (unsigned long long)pm[GETS - 1], stats(&f).put_grace_ms);

	struct slow_osd sl;
	slow_osd_start(&sl, &f.c, 1, 100);
	timed_gets(&f, 2 * GETS, b, l, OBJS, ms);   /* the slow OSD's own p95 fills */
	struct gw_data_stats s1 = stats(&f);
	timed_gets(&f, GETS, b, l, OBJS, ms);
	struct gw_data_stats s2 = stats(&f);
	uint32_t slow_p95 = gw_data_osd_read_p95_us(f.d, 2) / 1000;   /* OSD id 2: shard 1 */
	uint32_t healthy_p95 = gw_data_osd_read_p95_us(f.d, 1) / 1000;
	/* PUTs: the quorum grace comes from the healthy OSDs' write p99s. */
	timed_puts(&f, GETS, f.seed + 200, pm, NULL, NULL);   /* its own p99 fills */
	struct gw_data_stats s3 = stats(&f);
	timed_puts(&f, GETS, f.seed + 300, pm, NULL, NULL);
	struct gw_data_stats s4 = stats(&f);
	slow_osd_stop(&sl);
	printf("%s: OSD 1 slow (100 ms): PUT 64 KiB/1 MiB p50 %llu p99 %llu max %llu ms, grace "
	       "from all writes' p99 %u ms, shard writes abandoned at the grace %llu\n",
	       tname[_i], (unsigned long long)pm[GETS / 2], (unsigned long long)pm[GETS * 99 / 100],
	       (unsigned long long)pm[GETS - 1], s4.put_grace_ms,
	       (unsigned long long)(s4.shard_puts_abandoned - s3.shard_puts_abandoned));
	ck_assert_uint_eq(s4.puts_failed, 0);
	ck_assert_uint_ge(s4.shard_puts_abandoned - s3.shard_puts_abandoned, 1);
	printf("%s: OSD 1 slow (100 ms): GET 320 KiB p50 %llu p99 %llu max %llu ms; p95 of "
	       "shard reads: slow OSD %u ms, a healthy one %u ms, all %u ms; hedges %llu, won "
	       "%llu\n",
	       tname[_i], (unsigned long long)ms[GETS / 2], (unsigned long long)ms[GETS * 99 / 100],
	       (unsigned long long)ms[GETS - 1], slow_p95, healthy_p95, s2.hedge_delay_ms,
	       (unsigned long long)(s2.hedges - s1.hedges),
	       (unsigned long long)(s2.hedge_wins - s1.hedge_wins));
	ck_assert_uint_eq(s2.gets_failed, 0);
	ck_assert_uint_gt(slow_p95, healthy_p95);
	ck_assert_uint_ge(s2.hedges - s1.hedges, 1);
	ck_assert_uint_ge(s2.hedge_wins - s1.hedge_wins, 1);
	run_ms(&f, 150);   /* the slow reads still out end */
	for (int j = 0; j < OBJS; j++) {
		buf_unref(b[j]);
		gw_data_layout_clear(&l[j]);
	}
	fx_teardown(&f);
}
END_TEST

/* ------------------------------------------------------------ streamed segments */

/* A GET read step by step: every slice checked against expect. */
struct rd {
	struct gw_data_get *g;
	const uint8_t *expect;   /* the range's bytes */
	uint64_t len, at;
	int rc;
	bool readable;
};

static void rd_readable(struct gw_data_get *g, void *ud)
{
	(void)g;
	((struct rd *)ud)->readable = true;
	uv_stop(test_loop);
}

/* Take what is there: rc 0 (all), -EAGAIN, or the GET's error. */
static void rd_take(struct rd *r)
{
	struct buf_slice s;
	while ((r->rc = gw_data_get_read(r->g, &s)) == 1) {
		ck_assert_uint_le(r->at + s.len, r->len);
		ck_assert_msg(memcmp(buf_slice_data(&s), r->expect + r->at, s.len) == 0,
			      "wrong bytes at +%llu (+%zu)", (unsigned long long)r->at, s.len);
		r->at += s.len;
		buf_unref(s.buf);
	}
}

/* Read until at >= want, the GET ended, or ms passed. */
static void rd_until(struct fx *f, struct rd *r, uint64_t want, uint32_t ms)
{
	uint64_t end = loop_now_ms() + ms;
	uv_timer_t t;
	uv_timer_init(&f->loop, &t);
	uv_timer_start(&t, on_tick_stop, 10, 10);
	for (rd_take(r); r->rc == -EAGAIN && r->at < want && loop_now_ms() < end; rd_take(r))
		uv_run(&f->loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(&f->loop, UV_RUN_NOWAIT);
}

#define SL (SEG / K)

/*
 * A segment's pieces go out as they come. The range [3 SL, 2 SEG) of a
 * two-segment object needs data shard 3 of segment 0 and shards 0..3 of
 * segment 1. OSD 2 hangs (no hedge here, a 3 s deadline): segment 0 and
 * pieces 0 and 1 of segment 1 are handed out while shard 2's read is
 * still out (before: segment 1 waited for it). What follows:
 *  - _i 0/1 (h2/local): shard 2's read ends (deadline, or a dead peer over
 *    h2); the segment decodes from parity the pieces not yet taken, and
 *    the rest of the range comes right.
 *  - _i 2/3: parity OSDs 4 and 5 are stopped first: only three shards
 *    are left, the GET fails with IOL_EUNAVAILABLE after exactly the
 *    bytes taken, none wrong.
 */
START_TEST(segment_streamed)
{
	int tr = _i % TRANSPORTS;
	bool too_few = _i >= TRANSPORTS;
	struct fx f;
	struct gw_data_opts o = { .k = K, .m = M, .timeout_ms = 3000, .hedge_off = true };
	fx_setup(&f, tr, too_few ? "gwstr3" : "gwstr", 64 << 20, &o);
	struct buf *b = pattern(2 * SEG, f.seed);
	struct gw_data_layout l;
	ck_assert_int_eq(do_put(&f, b, 1 << 20, &l, NULL, NULL), 0);
	uint64_t off = 3 * SL;
	struct rd r = { .expect = b->data + off, .len = 2 * SEG - off };
	struct hang h;
	hang_node(&h, &f.c, 2);
	struct gw_data_stats s0 = stats(&f);
	ck_assert_int_eq(gw_data_get_start(f.d, &f.t, &l, off, r.len, rd_readable, &r, &r.g), 0);
	rd_until(&f, &r, SL + 2 * SL, 2000);
	struct gw_data_stats s1 = stats(&f);
	printf("%s%s: OSD 2 hung: %llu of %llu bytes taken, shard read failures %llu, "
	       "decodes %llu\n", tname[tr], too_few ? " (then 4, 5 stopped)" : "",
	       (unsigned long long)r.at, (unsigned long long)r.len,
	       (unsigned long long)(s1.shard_get_failures - s0.shard_get_failures),
	       (unsigned long long)(s1.decodes - s0.decodes));
	ck_assert_int_eq(r.rc, -EAGAIN);
	ck_assert_uint_eq(r.at, SL + 2 * SL);
	/* ... and shard 2's read had not ended: nothing was decoded. */
	ck_assert_uint_eq(s1.decodes, s0.decodes);
	if (too_few) {
		osd_cluster_stop_node(&f.c, 4);
		osd_cluster_stop_node(&f.c, 5);
	}
	rd_until(&f, &r, r.len, 10000);
	struct gw_data_stats s2 = stats(&f);
	printf("%s%s: then %s after %llu bytes: %s\n", tname[tr],
	       too_few ? " (then 4, 5 stopped)" : "", r.rc ? "failed" : "done",
	       (unsigned long long)r.at, r.rc ? gw_data_get_error(r.g) : "");
	if (too_few) {
		ck_assert_int_eq(r.rc, IOL_EUNAVAILABLE);
		ck_assert_uint_eq(r.at, SL + 2 * SL);
		ck_assert_uint_eq(s2.gets_failed, s0.gets_failed + 1);
	} else {
		ck_assert_int_eq(r.rc, 0);
		ck_assert_uint_eq(r.at, r.len);
		ck_assert_uint_gt(s2.decodes, s1.decodes);
		ck_assert_uint_eq(s2.get_bytes - s0.get_bytes, r.len);
	}
	gw_data_get_free(r.g);
	release_node(&h);
	run_ms(&f, 10);
	buf_unref(b);
	gw_data_layout_clear(&l);
	fx_teardown(&f);
}
END_TEST

/* Each layout carries its segment size: objects written at 1 MiB
 * segments (S3 before seg2m) read through a gw_data that writes 2 MiB
 * ones, and the other way round, whole and in ranges across segments. */
START_TEST(segment_sizes_mixed)
{
	struct fx f;
	struct gw_data_opts o1 = { .k = K, .m = M, .timeout_ms = 5000, .segment_bytes = 1u << 20 };
	struct gw_data_opts o2 = o1;
	o2.segment_bytes = 2u << 20;
	fx_setup(&f, _i, "gwsegs", 64 << 20, &o1);
	struct buf *b1 = pattern(5 * (1u << 20) + 777, f.seed);
	struct buf *b2 = pattern(5 * (1u << 20) + 777, f.seed + 1);
	struct gw_data_layout l1, l2;
	ck_assert_int_eq(do_put(&f, b1, 1 << 20, &l1, NULL, NULL), 0);
	ck_assert_uint_eq(l1.segment_bytes, 1u << 20);
	ck_assert_uint_eq(l1.nsegs, 6);
	fx_new_data(&f, &o2);
	ck_assert_int_eq(do_put(&f, b2, 1 << 20, &l2, NULL, NULL), 0);
	ck_assert_uint_eq(l2.segment_bytes, 2u << 20);
	ck_assert_uint_eq(l2.nsegs, 3);
	for (int pass = 0; pass < 2; pass++) {
		for (int j = 0; j < 2; j++) {
			const struct gw_data_layout *l = j ? &l2 : &l1;
			const struct buf *b = j ? b2 : b1;
			expect_range(&f, l, b, 0, b->len);
			expect_range(&f, l, b, (1u << 20) - 5, (2u << 20) + 10);
			expect_range(&f, l, b, 3 * (1u << 20) + 100, b->len - 3 * (1u << 20) - 100);
		}
		fx_new_data(&f, &o1);   /* and read again through a 1 MiB one */
	}
	buf_unref(b1);
	buf_unref(b2);
	gw_data_layout_clear(&l1);
	gw_data_layout_clear(&l2);
	fx_teardown(&f);
}
END_TEST

START_TEST(layout_codec)
{
	struct gw_data_layout l = { .k = 4, .m = 2, .segment_bytes = 1000, .pg = 9, .size = 2500 };
	l.nsegs = gw_data_layout_nsegs(l.size, l.segment_bytes);
	ck_assert_uint_eq(l.nsegs, 3);
	ck_assert_uint_eq(gw_data_layout_seg_len(&l, 2), 500);
	ck_assert_uint_eq(gw_data_layout_shard_len(&l, 2), 125);
	ck_assert_uint_eq(gw_data_layout_shard_len(&l, 0), 250);
	uint32_t crcs[18], missing[3] = { 0, 0x21, 0 };
	for (int i = 0; i < 18; i++)
		crcs[i] = 0x01010101u * (uint32_t)i;
	for (int i = 0; i < 16; i++)
		l.object_id[i] = (uint8_t)(i * 7);
	l.crcs = crcs;
	l.missing = missing;
	ck_assert_int_eq(gw_data_layout_encode(&l, NULL, 0), -ENOSPC);
	uint8_t rec[512];
	ssize_t n = gw_data_layout_encode(&l, rec, sizeof(rec));
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq((size_t)n, gw_data_layout_encoded_len(&l));
	printf("layout of 3 segments: %zd bytes\n", n);
	struct gw_data_layout b;
	ck_assert_int_eq(gw_data_layout_decode(rec, (size_t)n, &b), 0);
	ck_assert_uint_eq(b.size, 2500);
	ck_assert_uint_eq(b.pg, 9);
	ck_assert_uint_eq(b.nsegs, 3);
	ck_assert(memcmp(b.crcs, crcs, sizeof(crcs)) == 0);
	ck_assert(memcmp(b.missing, missing, sizeof(missing)) == 0);
	ck_assert(memcmp(b.object_id, l.object_id, 16) == 0);
	gw_data_layout_clear(&b);
	/* Every truncation and every single-byte change either fails or
	 * yields a self-consistent layout (never a crash or overread). */
	for (ssize_t cut = 0; cut < n; cut++)
		if (gw_data_layout_decode(rec, (size_t)cut, &b) == 0)
			gw_data_layout_clear(&b);
	for (ssize_t at = 0; at < n; at++)
		for (int bit = 0; bit < 8; bit++) {
			rec[at] ^= (uint8_t)(1 << bit);
			if (gw_data_layout_decode(rec, (size_t)n, &b) == 0) {
				ck_assert_uint_eq(b.nsegs,
						  gw_data_layout_nsegs(b.size, b.segment_bytes));
				gw_data_layout_clear(&b);
			}
			rec[at] ^= (uint8_t)(1 << bit);
		}
	/* Inconsistent: crc count does not match the size. */
	l.size = 3500;
	n = gw_data_layout_encode(&l, rec, sizeof(rec));
	ck_assert_int_eq(gw_data_layout_decode(rec, (size_t)n, &b), IOL_ECORRUPT);
	ck_assert_int_eq(gw_data_layout_decode((const uint8_t *)"\xff\xff", 2, &b), IOL_ECORRUPT);
}
END_TEST

static Suite *data_suite(void)
{
	Suite *s = suite_create("gw_data");
	TCase *tc = tcase_create("data");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, layout_codec);
	tcase_add_loop_test(tc, round_trips, 0, TRANSPORTS);
	tcase_add_loop_test(tc, big_object_bounded, 0, TRANSPORTS);
	tcase_add_loop_test(tc, hashed_as_fed, T_LOCAL, T_LOCAL + 1);
	tcase_add_loop_test(tc, two_down_reads_everything, 0, TRANSPORTS);
	tcase_add_loop_test(tc, three_down_fails_cleanly, 0, TRANSPORTS);
	tcase_add_loop_test(tc, one_down_put_succeeds, 0, TRANSPORTS);
	tcase_add_loop_test(tc, missing_mask_is_a_hint, 0, TRANSPORTS);
	tcase_add_loop_test(tc, corruption_read_around, 0, TRANSPORTS);
	tcase_add_loop_test(tc, inline_changed_after_crc, 0, TRANSPORTS);
	tcase_add_loop_test(tc, slow_consumer_bounded, 0, TRANSPORTS);
	tcase_add_loop_test(tc, abort_and_misuse, 0, TRANSPORTS);
	tcase_add_loop_test(tc, hung_osd_hedged, 0, TRANSPORTS);
	tcase_add_loop_test(tc, down_in_map_never_called, 0, TRANSPORTS);
	tcase_add_loop_test(tc, hung_osd_put_at_quorum, 0, TRANSPORTS);
	tcase_add_loop_test(tc, slow_osd_hedged, 0, TRANSPORTS);
	tcase_add_loop_test(tc, segment_streamed, 0, 2 * TRANSPORTS);
	tcase_add_loop_test(tc, segment_sizes_mixed, 0, TRANSPORTS);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	/* As the binaries do: a peer that closed must not kill the test. */
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IONBF, 0); /* a failing forked test exits unflushed */
	SRunner *sr = srunner_create(data_suite());
	osd_cluster_runner_begin();
	srunner_run_all(sr, CK_NORMAL);
	osd_cluster_runner_end();
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
