/*
 * test_rpc_bufcache.c — the RPC layer's recycled large buffers: small and
 * oversized ones are plain, a large one's block comes back on its last
 * unref (from any thread) and goes out again for its class, the idle
 * bytes stay bounded, drain empties the cache.
 */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "common/rpc_bufcache.h"

static void idle(size_t *blocks, size_t *bytes)
{
	rpc_bufcache_idle(blocks, bytes);
}

START_TEST(test_small_and_huge_are_plain)
{
	rpc_bufcache_drain();
	struct buf *s = rpc_buf_new(100);
	struct buf *h = rpc_buf_new(RPC_BUFCACHE_MAX + 1);
	ck_assert_ptr_nonnull(s);
	ck_assert_ptr_nonnull(h);
	ck_assert_uint_eq(s->cap, 100);
	ck_assert_uint_eq(h->cap, RPC_BUFCACHE_MAX + 1);
	memset(h->data, 1, h->cap);
	buf_unref(s);
	buf_unref(h);
	size_t n, bytes;
	idle(&n, &bytes);
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(bytes, 0);
}
END_TEST

START_TEST(test_block_recycled)
{
	rpc_bufcache_drain();
	struct buf *a = rpc_buf_new(4u << 20);
	ck_assert_ptr_nonnull(a);
	ck_assert_uint_eq(a->cap, 4u << 20);
	ck_assert_uint_eq(a->len, 0);
	ck_assert_uint_eq((uintptr_t)a->data % 64, 0);
	memset(a->data, 0xAB, a->cap); /* ASan: the whole capacity is ours */
	uint8_t *data = a->data;
	buf_ref(a);
	buf_unref(a);
	size_t n, bytes;
	idle(&n, &bytes);
	ck_assert_uint_eq(n, 0); /* still referenced */
	buf_unref(a);
	idle(&n, &bytes);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(bytes, 4u << 20);
	/* Same class (2 MiB < cap <= 4 MiB): the same block, len 0 again. */
	struct buf *b = rpc_buf_new((3u << 20) + 1);
	ck_assert_ptr_eq(b->data, data);
	ck_assert_uint_eq(b->cap, (3u << 20) + 1);
	ck_assert_uint_eq(b->len, 0);
	idle(&n, &bytes);
	ck_assert_uint_eq(n, 0);
	/* Another class: a block of its own. */
	struct buf *c = rpc_buf_new(RPC_BUFCACHE_MIN);
	ck_assert_ptr_ne(c->data, data);
	buf_unref(b);
	buf_unref(c);
	idle(&n, &bytes);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(bytes, (4u << 20) + RPC_BUFCACHE_MIN);
	rpc_bufcache_drain();
	idle(&n, &bytes);
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(bytes, 0);
}
END_TEST

START_TEST(test_idle_bounded)
{
	rpc_bufcache_drain();
	enum { N = RPC_BUFCACHE_IDLE_MAX / (4u << 20) + 3 };
	struct buf *b[N];
	for (unsigned i = 0; i < N; i++) {
		b[i] = rpc_buf_new(4u << 20);
		ck_assert_ptr_nonnull(b[i]);
	}
	for (unsigned i = 0; i < N; i++)
		buf_unref(b[i]);
	size_t n, bytes;
	idle(&n, &bytes);
	ck_assert_uint_eq(bytes, RPC_BUFCACHE_IDLE_MAX);
	ck_assert_uint_eq(n, RPC_BUFCACHE_IDLE_MAX / (4u << 20));
	rpc_bufcache_drain();
}
END_TEST

static void *unref_thread(void *arg)
{
	struct buf **v = arg;
	for (unsigned i = 0; i < 64; i++)
		buf_unref(v[i]);
	return NULL;
}

START_TEST(test_unref_on_other_threads)
{
	rpc_bufcache_drain();
	enum { T = 4, PER = 64 };
	static struct buf *v[T][PER];
	for (unsigned t = 0; t < T; t++)
		for (unsigned i = 0; i < PER; i++) {
			v[t][i] = rpc_buf_new(RPC_BUFCACHE_MIN + 1 + i);
			ck_assert_ptr_nonnull(v[t][i]);
			v[t][i]->data[0] = (uint8_t)i;
		}
	pthread_t th[T];
	for (unsigned t = 0; t < T; t++)
		ck_assert_int_eq(pthread_create(&th[t], NULL, unref_thread, v[t]), 0);
	for (unsigned t = 0; t < T; t++)
		pthread_join(th[t], NULL);
	size_t n, bytes;
	idle(&n, &bytes);
	ck_assert_uint_eq(n, T * PER); /* 256 blocks of 64 KiB: 16 MiB, under the bound */
	ck_assert_uint_eq(bytes, (size_t)T * PER * 2 * RPC_BUFCACHE_MIN);
	rpc_bufcache_drain();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rpc_bufcache");
	TCase *tc = tcase_create("rpc_bufcache");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_small_and_huge_are_plain);
	tcase_add_test(tc, test_block_recycled);
	tcase_add_test(tc, test_idle_bounded);
	tcase_add_test(tc, test_unref_on_other_threads);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
