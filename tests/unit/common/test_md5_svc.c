/*
 * test_md5_svc.c — the multi-buffer MD5 service (common/md5_svc) with its
 * real threads: more streams than lanes, fed chunk by chunk, give
 * OpenSSL's digests; one stream's chunks complete in submit order; lanes
 * are shared (more than one stream in lanes at once); a stream that
 * stops being fed gives its lane back; and hash_async's MD5-only streams
 * take this path through a workpool port.
 */
#include <check.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "common/hash.h"
#include "common/hash_async.h"
#include "common/md5_svc.h"
#include "common/workpool.h"

enum { NS = 24, NCH = 8 };

struct tchunk {
	struct md5_svc_chunk c;
	struct tstream *s;
	unsigned seq;
};

struct tstream {
	struct md5_svc_stream st;
	struct tchunk ch[NCH];
	atomic_uint done;     /* chunks done, in order */
	atomic_uint misorder; /* a chunk done before an earlier one */
};

static void on_chunk(struct md5_svc_chunk *c)
{
	struct tchunk *t = (struct tchunk *)c;
	unsigned d = atomic_load(&t->s->done);
	if (d != t->seq)
		atomic_fetch_add(&t->s->misorder, 1);
	atomic_store_explicit(&t->s->done, d + 1, memory_order_release);
}

static struct md5_svc *svc(void)
{
	struct md5_svc *s = md5_svc_get(2);
	if (!s)
		ck_assert_uint_lt(md5_mb_lanes(), 8);   /* only without lanes */
	return s;
}

/* One round: NS streams, NCH chunks each of random lengths (1 byte to
 * 200 KiB) at random offsets of buf, submitted stream by stream. Returns
 * the most streams in lanes at once during the round. */
static uint64_t round_of(struct md5_svc *s, const uint8_t *buf, size_t buf_len, unsigned seed)
{
	static struct tstream ts[NS];
	MD5_CTX ref[NS];
	struct md5_svc_stats before, after;
	md5_svc_stats(s, &before);
	srand(seed);
	for (unsigned i = 0; i < NS; i++) {
		md5_svc_stream_init(&ts[i].st);
		atomic_store(&ts[i].done, 0);
		atomic_store(&ts[i].misorder, 0);
		MD5_Init(&ref[i]);
	}
	uint64_t bytes = 0;
	for (unsigned i = 0; i < NS; i++)
		for (unsigned k = 0; k < NCH; k++) {
			struct tchunk *t = &ts[i].ch[k];
			size_t len = 1 + (size_t)rand() % (rand() % 2 ? 200000 : 200);
			size_t off = (size_t)rand() % (buf_len - len);
			t->s = &ts[i];
			t->seq = k;
			t->c.data = buf + off;
			t->c.len = len;
			t->c.done = on_chunk;
			MD5_Update(&ref[i], buf + off, len);
			bytes += len;
			md5_svc_submit(s, &ts[i].st, &t->c);
		}
	time_t t0 = time(NULL);
	for (unsigned i = 0; i < NS; i++)
		while (atomic_load_explicit(&ts[i].done, memory_order_acquire) < NCH) {
			ck_assert_int_lt(time(NULL) - t0, 60);
			struct timespec ts1 = { 0, 1000000 };
			nanosleep(&ts1, NULL);
		}
	for (unsigned i = 0; i < NS; i++) {
		uint8_t a[16], b[16];
		ck_assert_uint_eq(atomic_load(&ts[i].misorder), 0);
		ck_assert(!ts[i].st.in_lane);   /* its lane is free again */
		ck_assert(!ts[i].st.ready);
		ck_assert_ptr_null(ts[i].st.head);
		md5_mb_final(&ts[i].st.ctx, a);
		MD5_Final(b, &ref[i]);
		ck_assert_msg(memcmp(a, b, 16) == 0, "stream %u of round %u", i, seed);
	}
	md5_svc_stats(s, &after);
	ck_assert_uint_eq(after.chunks - before.chunks, NS * NCH);
	ck_assert_uint_eq(after.bytes - before.bytes, bytes);
	ck_assert_uint_ge(after.lane_bytes - before.lane_bytes, bytes);
	return after.streams_max;
}

START_TEST(test_streams_in_lanes)
{
	struct md5_svc *s = svc();
	if (!s)
		return;
	size_t len = 4 << 20;
	uint8_t *buf = malloc(len);
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 11);
	/* Lanes are shared as soon as two streams have chunks queued at the
	 * same time; one stream hashed alone per round would need the
	 * submitting thread stalled for every stream, so a few rounds see it. */
	uint64_t most = 0;
	for (unsigned r = 0; r < 5; r++) {
		uint64_t m = round_of(s, buf, len, r + 1);
		if (m > most)
			most = m;
	}
	ck_assert_uint_ge(most, 2);
	struct md5_svc_stats st;
	md5_svc_stats(s, &st);
	ck_assert_uint_ge(st.lanes, 8);
	ck_assert_uint_le(st.streams_max, st.lanes);
	ck_assert_uint_gt(st.lane_bytes, st.span_bytes);   /* > 1 lane busy on average */
	free(buf);
}
END_TEST

/* hash_async, MD5 alone: 20 streams fed slices through a port give the
 * one-shot digests; a stream fed 3 slices and then abandoned (a client
 * gone) drains, its buffer freed, while the others go on. */
struct hstream {
	struct hash_async *h;
	struct buf *b;
	size_t fed;
	unsigned cbs;
};

static void on_hjob(struct hash_async *h, void *ud)
{
	(void)h;
	((struct hstream *)ud)->cbs++;
}

START_TEST(test_hash_async_md5_lanes)
{
	enum { N = 20, SIZE = 2 << 20, SLICE = 128 << 10 };
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct workpool *wp;
	ck_assert_int_eq(workpool_new(2, 0, &wp), 0);
	struct workpool_port *pt = workpool_port_new(wp, &loop);
	struct hstream s[N];
	struct md5_svc_stats before, after;
	struct md5_svc *svc_ = svc();
	if (svc_)
		md5_svc_stats(svc_, &before);
	for (unsigned i = 0; i < N; i++) {
		s[i] = (struct hstream){ 0 };
		s[i].h = hash_async_new(pt, HASH_ASYNC_MD5, 4, on_hjob, &s[i]);
		ck_assert_ptr_nonnull(s[i].h);
		s[i].b = buf_new(SIZE + 5);
		for (size_t k = 0; k < SIZE + 5; k++)
			s[i].b->data[k] = (uint8_t)(k * 13 + i * 5 + (k >> 12));
	}
	bool left = true;
	time_t t0 = time(NULL);
	while (left) {
		left = false;
		for (unsigned i = 0; i < N; i++) {
			size_t end = i == 0 ? 3 * (SLICE + 1) : SIZE;   /* 0: abandoned */
			if (s[i].fed == end)
				continue;
			left = true;
			size_t len = SLICE + (i % 4);   /* odd sizes: partial blocks */
			if (len > end - s[i].fed)
				len = end - s[i].fed;
			int rc = hash_async_update(s[i].h, s[i].b, 5 + s[i].fed, len, 0);
			if (rc == -EAGAIN)
				continue;
			ck_assert_int_eq(rc, 0);
			s[i].fed += len;
		}
		uv_run(&loop, UV_RUN_NOWAIT);
		ck_assert_int_lt(time(NULL) - t0, 60);
	}
	uint64_t total = 0;
	for (unsigned i = 0; i < N; i++) {
		while (hash_async_pending(s[i].h))
			uv_run(&loop, UV_RUN_ONCE);
		ck_assert_uint_eq(atomic_load(&s[i].b->refs), 1);
		uint8_t md5[MD5_LEN], e[MD5_LEN];
		hash_async_final(s[i].h, md5, NULL);
		hash_md5(s[i].b->data + 5, s[i].fed, e);
		ck_assert_mem_eq(md5, e, MD5_LEN);
		ck_assert_uint_gt(s[i].cbs, 0);
		total += s[i].fed;
		hash_async_free(s[i].h);
		buf_unref(s[i].b);
	}
	if (svc_) {
		md5_svc_stats(svc_, &after);
		ck_assert_uint_eq(after.bytes - before.bytes, total);   /* all of it in lanes */
	}
	ck_assert_uint_eq(workpool_port_jobs(pt), 0);
	workpool_port_close(pt);
	uv_run(&loop, UV_RUN_DEFAULT);
	workpool_free(wp);
	uv_loop_close(&loop);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("md5_svc");
	TCase *tc = tcase_create("md5_svc");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_streams_in_lanes);
	tcase_add_test(tc, test_hash_async_md5_lanes);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
