/*
 * test_buf.c — reference-counted buffers: alignment, copies, wrapped memory
 * released exactly once, and counts that hold across threads.
 */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"

START_TEST(test_aligned)
{
	size_t aligns[] = { 16, 64, 512, 4096 };
	for (size_t i = 0; i < sizeof(aligns) / sizeof(aligns[0]); i++) {
		struct buf *b = buf_new_aligned(12345, aligns[i]);
		ck_assert_ptr_nonnull(b);
		ck_assert_uint_eq((uintptr_t)b->data % aligns[i], 0);
		ck_assert_uint_eq(b->cap, 12345);
		ck_assert_uint_eq(b->len, 0);
		memset(b->data, 0xAB, b->cap); /* ASan catches an undersized block */
		buf_unref(b);
	}
	struct buf *z = buf_new(0);
	ck_assert_ptr_nonnull(z);
	buf_unref(z);
	ck_assert_ptr_null(buf_new_aligned(SIZE_MAX - 8, 64));
}
END_TEST

START_TEST(test_copy)
{
	const char s[] = "iolake shard bytes";
	struct buf *b = buf_copy(s, sizeof(s));
	ck_assert_uint_eq(b->len, sizeof(s));
	ck_assert_mem_eq(b->data, s, sizeof(s));
	struct buf_slice sl = { .buf = b, .off = 7, .len = 5 };
	ck_assert_mem_eq(buf_slice_data(&sl), "shard", 5);
	struct buf_slice empty = { 0 };
	ck_assert_ptr_null(buf_slice_data(&empty));
	buf_unref(b);
	buf_unref(NULL);
}
END_TEST

static int released;

static void release_count(struct buf *b)
{
	released++;
	free(b->owner);
}

START_TEST(test_wrap_release_once)
{
	released = 0;
	char *mem = malloc(100);
	struct buf *b = buf_wrap(mem, 100, release_count, mem);
	ck_assert_ptr_eq(b->data, (uint8_t *)mem);
	buf_ref(b);
	buf_ref(b);
	buf_unref(b);
	buf_unref(b);
	ck_assert_int_eq(released, 0);
	buf_unref(b);
	ck_assert_int_eq(released, 1);
}
END_TEST

/* An embedded buf: its release owns the enclosing object (here frees it;
 * under ASan a free of the struct by buf_unref itself would be a double
 * free or an invalid free of an interior pointer). */
struct obj {
	int pad;
	struct buf b;
	char payload[16];
};

static void release_obj(struct buf *b)
{
	struct obj *o = b->owner;
	ck_assert_ptr_eq(&o->b, b);
	released++;
	free(o);
}

START_TEST(test_embedded_release_once)
{
	released = 0;
	struct obj *o = malloc(sizeof(*o));
	buf_init_embedded(&o->b, o->payload, sizeof(o->payload), release_obj, o);
	ck_assert_ptr_eq(o->b.data, (uint8_t *)o->payload);
	ck_assert_uint_eq(o->b.len, sizeof(o->payload));
	buf_ref(&o->b);
	buf_unref(&o->b);
	ck_assert_int_eq(released, 0);
	buf_unref(&o->b);
	ck_assert_int_eq(released, 1);
}
END_TEST

#define NTHREADS 4
#define NREFS 200000

static void *ref_unref(void *arg)
{
	struct buf *b = arg;
	for (int i = 0; i < NREFS; i++)
		buf_ref(b);
	for (int i = 0; i < NREFS; i++)
		buf_unref(b);
	return NULL;
}

START_TEST(test_threads)
{
	released = 0;
	char *mem = malloc(8);
	struct buf *b = buf_wrap(mem, 8, release_count, mem);
	pthread_t t[NTHREADS];
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&t[i], NULL, ref_unref, b);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	ck_assert_uint_eq(atomic_load(&b->refs), 1);
	ck_assert_int_eq(released, 0);
	buf_unref(b);
	ck_assert_int_eq(released, 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("buf");
	TCase *tc = tcase_create("buf");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_aligned);
	tcase_add_test(tc, test_copy);
	tcase_add_test(tc, test_wrap_release_once);
	tcase_add_test(tc, test_embedded_release_once);
	tcase_add_test(tc, test_threads);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
