/*
 * test_scrub.c — the background scrubber over a real store (a file in
 * /dev/shm, io_uring, RocksDB): a pass finds exactly the shards damaged
 * behind the store's back (a flipped device byte in an extent, an inline
 * record whose crc disagrees with its bytes) and no good one; records
 * survive a restart, are not reported twice, and go when the shard is
 * overwritten or deleted; a restarted pass resumes from its cursor; the
 * rate limit holds on a fake clock (reads counted, never wall time).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crc.h"
#include "common/err.h"
#include "osd/store/scrub.h"
#include "osd/store/store.h"
#include "osd/store/super.h"
#include "tests/lib/scratch.h"

struct h {
	uv_loop_t loop;
	struct store *s;
	struct store_opts o;
	char dev[160], meta[160];
	bool closed;
};

static char base[64];

static void setup_once(void)
{
	test_scratch_path(base, sizeof(base), "iolake-test-scrub-%d", (int)getpid());
}

/* Plain syscalls: the runner must not start RocksDB's threads (forks). */
static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void teardown_once(void)
{
	static const char *names[] = { "find", "resume", "rate" };
	char p[192];
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(p, sizeof(p), "%s-%s.dev", base, names[i]);
		unlink(p);
		snprintf(p, sizeof(p), "%s-%s.meta", base, names[i]);
		nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	}
}

static void h_init(struct h *h, const char *name)
{
	char err[256];
	memset(h, 0, sizeof(*h));
	snprintf(h->dev, sizeof(h->dev), "%s-%s.dev", base, name);
	snprintf(h->meta, sizeof(h->meta), "%s-%s.meta", base, name);
	unlink(h->dev);
	store_kv_destroy(h->meta, err, sizeof(err));
	ck_assert_int_eq(uv_loop_init(&h->loop), 0);
	h->o.device_path = h->dev;
	h->o.meta_dir = h->meta;
	h->o.create_size = 64 << 20;
	h->o.osd_id = 5;
	h->o.inline_max_bytes = 4096;
}

static void h_open(struct h *h)
{
	char err[512];
	int rc = store_open(&h->loop, &h->o, &h->s, err, sizeof(err));
	ck_assert_msg(rc == 0, "store_open: %s", err);
}

static void on_closed(void *arg)
{
	((struct h *)arg)->closed = true;
}

static void h_close(struct h *h)
{
	h->closed = false;
	store_close(h->s, on_closed, h);
	while (!h->closed)
		uv_run(&h->loop, UV_RUN_ONCE);
	uv_run(&h->loop, UV_RUN_NOWAIT);
	h->s = NULL;
}

static void h_fini(struct h *h)
{
	char err[256];
	if (h->s)
		h_close(h);
	ck_assert_int_eq(uv_loop_close(&h->loop), 0);
	unlink(h->dev);
	store_kv_destroy(h->meta, err, sizeof(err));
	rmdir(h->meta);
}

/* ---- synchronous store calls */

struct done {
	int status;
	bool fired;
};

static void put_cb(struct store_put_req *req, int status)
{
	struct done *d = req->data;
	d->status = status;
	d->fired = true;
}

static void del_cb(struct store_del_req *req, int status)
{
	struct done *d = req->data;
	d->status = status;
	d->fired = true;
}

static void run_until(struct h *h, const bool *flag)
{
	while (!*flag)
		uv_run(&h->loop, UV_RUN_ONCE);
}

static struct store_key key_of(uint32_t pg, const char *oid, uint8_t shard)
{
	struct store_key k;
	ck_assert_int_eq(store_key_make(&k, pg, oid, strlen(oid), shard), 0);
	return k;
}

static uint8_t *pattern(size_t len, uint32_t seed)
{
	uint8_t *p = malloc(len ? len : 1);
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)x;
	}
	return p;
}

static void put_sync(struct h *h, const struct store_key *k, size_t len, uint32_t seed)
{
	uint8_t *data = pattern(len, seed);
	struct store_put_req req = { 0 };
	struct done d = { 0 };
	req.data = &d;
	struct buf *b = buf_copy(data, len);
	struct buf_slice sl = { b, 0, len };
	ck_assert_int_eq(store_put(h->s, &req, k, sl, put_cb), 0);
	buf_unref(b);
	free(data);
	run_until(h, &d.fired);
	ck_assert_int_eq(d.status, 0);
}

static void del_sync(struct h *h, const struct store_key *k)
{
	struct store_del_req req = { 0 };
	struct done d = { 0 };
	req.data = &d;
	ck_assert_int_eq(store_delete(h->s, &req, k, del_cb), 0);
	run_until(h, &d.fired);
	ck_assert_int_eq(d.status, 0);
}

/* ---- damage behind the store's back */

static void flip_device_byte(struct h *h, uint64_t block, uint64_t shard_off)
{
	int fd = open(h->dev, O_RDWR);
	ck_assert_int_ge(fd, 0);
	off_t at = (off_t)(STORE_DATA_OFF + block * STORE_BLOCK_SIZE + shard_off);
	uint8_t byte;
	ck_assert_int_eq(pread(fd, &byte, 1, at), 1);
	byte ^= 0x20;
	ck_assert_int_eq(pwrite(fd, &byte, 1, at), 1);
	close(fd);
}

struct kv_done {
	struct store_kv_req req;
	bool fired;
	int status;
};

static void kv_cb(struct store_kv_req *req, int status)
{
	struct kv_done *d = container_of(req, struct kv_done, req);
	d->status = status;
	d->fired = true;
}

struct kvq {
	struct loop_queue q;
	bool closed;
};

static void q_closed(struct loop_queue *q)
{
	container_of(q, struct kvq, q)->closed = true;
}

/* Replace k's index record by an inline record over len bytes whose crc
 * field is off by one bit: what a flipped byte in the value reads as. */
static void write_bad_inline_record(struct h *h, const struct store_key *k, size_t len,
				    uint32_t seed)
{
	uint8_t *data = pattern(len, seed);
	uint8_t *rec = malloc(STORE_REC_HDR + len);
	store_rec_encode_inline_hdr(rec, len, crc32c(0, data, len) ^ 1);
	memcpy(rec + STORE_REC_HDR, data, len);
	uint8_t kb[STORE_KEY_LEN];
	store_key_encode(k, kb);
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	rocksdb_writebatch_put(wb, (const char *)kb, STORE_KEY_LEN, (const char *)rec,
			       STORE_REC_HDR + len);
	struct kvq qq = { 0 };
	ck_assert_int_eq(loop_queue_init(&qq.q, &h->loop), 0);
	struct kv_done d = { 0 };
	ck_assert_int_eq(store_kv_commit(store_kv_of(h->s), &d.req, wb, &qq.q, kv_cb), 0);
	run_until(h, &d.fired);
	ck_assert_int_eq(d.status, 0);
	loop_queue_close(&qq.q, q_closed);
	run_until(h, &qq.closed);
	rocksdb_writebatch_destroy(wb);
	free(rec);
	free(data);
}

/* ---- the scrubber */

struct found {
	int n;
	struct store_bad last;
};

static void on_bad(void *arg, const struct store_bad *b)
{
	struct found *f = arg;
	f->n++;
	f->last = *b;
}

static uint64_t fake_now;

static uint64_t fake_clock(void *arg)
{
	(void)arg;
	return fake_now;
}

static bool stopped;

static void on_stopped(void *arg)
{
	(void)arg;
	stopped = true;
}

static void scrub_stop(struct h *h, struct store_scrub *sc)
{
	stopped = false;
	store_scrub_stop(sc, on_stopped, NULL);
	run_until(h, &stopped);
}

static struct store_scrub_stats stats_of(struct store_scrub *sc)
{
	struct store_scrub_stats st;
	store_scrub_stats(sc, &st);
	return st;
}

/* Run the loop until sc completed `passes` passes in all. */
static void run_passes(struct h *h, struct store_scrub *sc, uint64_t passes)
{
	while (stats_of(sc).passes < passes || stats_of(sc).inflight)
		uv_run(&h->loop, UV_RUN_ONCE);
}

static int list_all(struct h *h, struct store_bad *out, size_t max)
{
	bool more;
	int n = store_scrub_list_bad(h->s, NULL, out, max, &more);
	ck_assert_int_ge(n, 0);
	ck_assert(!more);
	return n;
}

static bool key_eq(const struct store_key *a, const struct store_key *b)
{
	return a->pg == b->pg && a->shard == b->shard && a->oid_len == b->oid_len &&
	       memcmp(a->oid, b->oid, a->oid_len) == 0;
}

START_TEST(finds_exactly_the_bad_ones)
{
	struct h h;
	h_init(&h, "find");
	h_open(&h);
	/* Mixed sizes around the inline limit (4096) and the crc block. */
	static const size_t sizes[] = { 0, 1, 100, 4096, 4097, 65536, 65537, 300000, 1500000 };
	const size_t nsizes = sizeof(sizes) / sizeof(sizes[0]);
	uint64_t good_bytes = 0;
	int total = 0;
	for (uint32_t pg = 0; pg < 3; pg++)
		for (size_t i = 0; i < nsizes; i++) {
			char oid[32];
			snprintf(oid, sizeof(oid), "obj-%zu", i);
			struct store_key k = key_of(pg * 7, oid, (uint8_t)i);
			put_sync(&h, &k, sizes[i], pg * 100 + (uint32_t)i);
			good_bytes += sizes[i];
			total++;
		}
	struct store_key ext = key_of(7, "victim-extent", 2);
	struct store_key inl = key_of(14, "victim-inline", 0);
	put_sync(&h, &ext, 300000, 1);
	put_sync(&h, &inl, 3000, 2);
	total += 2;
	struct store_stat st;
	ck_assert_int_eq(store_stat(h.s, &ext, &st), 0);
	ck_assert(!st.is_inline);
	write_bad_inline_record(&h, &inl, 3000, 2);
	h_close(&h);
	flip_device_byte(&h, st.block, 2 * 65536 + 1234);
	h_open(&h);

	struct found f = { 0 };
	struct store_scrub_opts so = { .rate_bytes = 1ull << 40, .interval_ms = 3600000,
				       .chunk_bytes = 256 << 10, .on_bad = on_bad, .on_bad_arg = &f };
	struct store_scrub *sc;
	ck_assert_int_eq(store_scrub_start(&h.loop, h.s, &so, &sc), 0);
	run_passes(&h, sc, 1);
	struct store_scrub_stats ss = stats_of(sc);
	printf("pass 1: %llu shards, %llu bytes, %llu reads, %llu errors\n",
	       (unsigned long long)ss.shards, (unsigned long long)ss.bytes,
	       (unsigned long long)ss.reads, (unsigned long long)ss.errors);
	ck_assert_uint_eq(ss.shards, (uint64_t)total);
	ck_assert_uint_eq(ss.errors, 2);
	ck_assert_uint_eq(ss.skipped, 0);
	ck_assert(ss.idle);
	/* Every good byte was read and verified. */
	ck_assert_uint_ge(ss.bytes, good_bytes);
	ck_assert_int_eq(f.n, 2);

	struct store_bad bad[8];
	ck_assert_int_eq(list_all(&h, bad, 8), 2);
	/* Key order: pg 7 before pg 14. */
	ck_assert(key_eq(&bad[0].key, &ext));
	ck_assert_uint_eq(bad[0].kind, STORE_BAD_CHECKSUM);
	ck_assert_uint_eq(bad[0].from, 2 * 65536);
	ck_assert_uint_eq(bad[0].to, 3 * 65536 - 1);
	ck_assert_uint_eq(bad[0].length, 300000);
	ck_assert_uint_gt(bad[0].found_unix_s, 1700000000);
	ck_assert(key_eq(&bad[1].key, &inl));
	ck_assert_uint_eq(bad[1].kind, STORE_BAD_CHECKSUM);
	ck_assert_uint_eq(bad[1].from, 0);
	ck_assert_uint_eq(bad[1].to, 2999);
	scrub_stop(&h, sc);

	/* The records survive a restart; a second pass reports nothing new. */
	h_close(&h);
	h_open(&h);
	ck_assert_int_eq(list_all(&h, bad, 8), 2);
	/* The saved pass ended: the next starts after the interval, on the
	 * (fake) clock; then the scrubber idles again. */
	so.interval_ms = 3600000; /* the wall-clock time since it ended counts */
	so.now_ms = fake_clock;
	fake_now = 7000000;
	f.n = 0;
	ck_assert_int_eq(store_scrub_start(&h.loop, h.s, &so, &sc), 0);
	for (int i = 0; i < 20; i++)
		uv_run(&h.loop, UV_RUN_NOWAIT);
	ck_assert(stats_of(sc).idle);
	ck_assert_uint_eq(stats_of(sc).reads, 0);
	fake_now += 3600000 + 1000;
	store_scrub_kick(sc);
	run_passes(&h, sc, 2);
	ss = stats_of(sc);
	ck_assert_uint_eq(ss.shards, (uint64_t)total);
	ck_assert_uint_eq(ss.errors, 0);
	ck_assert_int_eq(f.n, 0);
	scrub_stop(&h, sc);
	ck_assert_int_eq(list_all(&h, bad, 8), 2);

	/* Overwriting the extent shard clears its record; deleting the inline
	 * one clears the other. */
	put_sync(&h, &ext, 300000, 3);
	ck_assert_int_eq(list_all(&h, bad, 8), 1);
	ck_assert(key_eq(&bad[0].key, &inl));
	del_sync(&h, &inl);
	ck_assert_int_eq(list_all(&h, bad, 8), 0);
	h_close(&h);
	h_open(&h);
	ck_assert_int_eq(list_all(&h, bad, 8), 0);
	h_fini(&h);
}
END_TEST

START_TEST(restart_resumes_from_cursor)
{
	struct h h;
	h_init(&h, "resume");
	h_open(&h);
	const int n = 200;
	for (int i = 0; i < n; i++) {
		char oid[32];
		snprintf(oid, sizeof(oid), "small-%03d", i);
		struct store_key k = key_of((uint32_t)(i % 5), oid, 0);
		put_sync(&h, &k, 100, (uint32_t)i);
	}
	/* 40 KiB/s on a fake clock: each 100 ms is one 4 KiB-cost read. */
	fake_now = 1000000;
	struct store_scrub_opts so = { .rate_bytes = 40960, .interval_ms = 3600000,
				       .persist_every = 1000, .now_ms = fake_clock };
	struct store_scrub *sc;
	ck_assert_int_eq(store_scrub_start(&h.loop, h.s, &so, &sc), 0);
	for (int t = 0; t < 60; t++) {
		fake_now += 100;
		store_scrub_kick(sc);
		do
			uv_run(&h.loop, UV_RUN_NOWAIT);
		while (stats_of(sc).inflight);
	}
	struct store_scrub_stats first = stats_of(sc);
	printf("before restart: %llu shards\n", (unsigned long long)first.shards);
	ck_assert_uint_ge(first.shards, 50);
	ck_assert_uint_lt(first.shards, 100);
	ck_assert_uint_eq(first.passes, 0);
	/* Stopping saves the cursor (persist_every alone would not have). */
	scrub_stop(&h, sc);
	h_close(&h);
	h_open(&h);
	so.rate_bytes = 1ull << 40;
	so.now_ms = NULL;
	ck_assert_int_eq(store_scrub_start(&h.loop, h.s, &so, &sc), 0);
	run_passes(&h, sc, 1);
	struct store_scrub_stats second = stats_of(sc);
	printf("after restart: %llu shards to finish the pass\n",
	       (unsigned long long)second.shards);
	/* Resumed: the rest of the pass, plus at most the shards that were in
	 * the two lanes when it stopped. */
	ck_assert_uint_ge(second.shards, (uint64_t)n - first.shards);
	ck_assert_uint_le(second.shards, (uint64_t)n - first.shards + 2);
	ck_assert_uint_eq(second.passes, 1);
	ck_assert_uint_eq(second.errors, 0);
	scrub_stop(&h, sc);
	h_fini(&h);
}
END_TEST

START_TEST(rate_limit_holds)
{
	struct h h;
	h_init(&h, "rate");
	h_open(&h);
	for (int i = 0; i < 40; i++) {
		char oid[32];
		snprintf(oid, sizeof(oid), "big-%02d", i);
		struct store_key k = key_of(1, oid, 0);
		put_sync(&h, &k, 256 << 10, (uint32_t)i);
	}
	/* 640 KiB/s, 64 KiB reads: ten per fake second. */
	fake_now = 5000000;
	struct store_scrub_opts so = { .rate_bytes = 640 << 10, .interval_ms = 3600000,
				       .chunk_bytes = 64 << 10, .now_ms = fake_clock };
	struct store_scrub *sc;
	ck_assert_int_eq(store_scrub_start(&h.loop, h.s, &so, &sc), 0);
	const int ticks = 20; /* 2 fake seconds in 100 ms steps */
	for (int t = 0; t < ticks; t++) {
		fake_now += 100;
		store_scrub_kick(sc);
		/* Many loop turns per tick: the limit, not the loop, must stop it. */
		for (int i = 0; i < 50; i++)
			uv_run(&h.loop, UV_RUN_NOWAIT);
		while (stats_of(sc).inflight)
			uv_run(&h.loop, UV_RUN_ONCE);
	}
	struct store_scrub_stats ss = stats_of(sc);
	printf("%d ticks of 100 ms at 640 KiB/s: %llu reads, %llu bytes\n", ticks,
	       (unsigned long long)ss.reads, (unsigned long long)ss.bytes);
	/* 2 s x 10 reads/s, plus the first read on an empty bucket. */
	ck_assert_uint_ge(ss.reads, 19);
	ck_assert_uint_le(ss.reads, 22);
	ck_assert_uint_eq(ss.bytes, ss.reads * (64 << 10));
	/* Lifting the clock by 10 s lets the rest of the pass through. */
	fake_now += 10000;
	store_scrub_kick(sc);
	for (int i = 0; i < 200 && stats_of(sc).reads < 40; i++)
		uv_run(&h.loop, UV_RUN_ONCE);
	ck_assert_uint_gt(stats_of(sc).reads, ss.reads);
	scrub_stop(&h, sc);
	h_fini(&h);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("osd/scrub");
	TCase *tc = tcase_create("scrub");
	tcase_add_unchecked_fixture(tc, setup_once, teardown_once);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, finds_exactly_the_bad_ones);
	tcase_add_test(tc, restart_resumes_from_cursor);
	tcase_add_test(tc, rate_limit_holds);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
