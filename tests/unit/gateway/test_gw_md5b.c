/*
 * test_gw_md5b.c — a loop's one-shot MD5s hashed together at the end of
 * its turn (gateway/gw_md5b.h): the digests equal OpenSSL's one-shot MD5
 * for every length around the block size, all queued in a turn are done
 * in that turn, a cancelled item's done never runs (also when an earlier
 * item's done cancels it), a done's own queue is refused, a full batch
 * refuses, close drops what is queued, and an item queued from a timer
 * does not leave the loop blocked in its poll.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "gateway/gw_md5b.h"

struct t_item {
	struct gw_md5b_item it;
	int done;
	struct t_item *cancel_on_done;   /* cancel this one from done */
	struct gw_md5b *requeue_into;    /* try to queue a new item from done */
	bool requeued;
};

static void on_done(struct gw_md5b_item *it)
{
	struct t_item *t = (struct t_item *)it;
	t->done++;
	if (t->cancel_on_done)
		gw_md5b_cancel(&t->cancel_on_done->it);
	if (t->requeue_into) {
		static struct t_item other;
		other.it.data = (const uint8_t *)"x";
		other.it.len = 1;
		other.it.done = on_done;
		t->requeued = gw_md5b_queue(t->requeue_into, &other.it);
	}
}

static uint8_t bytes[9000];

static void fill(void)
{
	for (size_t i = 0; i < sizeof(bytes); i++)
		bytes[i] = (uint8_t)(i * 131 + (i >> 7));
}

static void set(struct t_item *t, size_t off, size_t len)
{
	memset(t, 0, sizeof(*t));
	t->it.data = bytes + off;
	t->it.len = len;
	t->it.done = on_done;
}

START_TEST(digests)
{
	fill();
	uv_loop_t loop;
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	struct gw_md5b *b = gw_md5b_new(&loop);
	ck_assert_ptr_nonnull(b);
	/* Lengths around 0, the 64-byte block, 4 KiB, and beyond. */
	static const size_t lens[] = { 0, 1, 55, 56, 63, 64, 65, 127, 128, 1000, 4095, 4096, 4097, 8999 };
	enum { N = sizeof(lens) / sizeof(lens[0]) };
	for (int round = 0; round < 3; round++) {   /* the batch is reused turn after turn */
		struct t_item t[N];
		for (unsigned i = 0; i < N; i++) {
			set(&t[i], i * 7 % 13, lens[i] > 9000 - 13 ? 9000 - 13 : lens[i]);
			ck_assert(gw_md5b_queue(b, &t[i].it));
			ck_assert_int_eq(t[i].done, 0);
		}
		uv_run(&loop, UV_RUN_NOWAIT);
		for (unsigned i = 0; i < N; i++) {
			uint8_t want[16];
			hash_md5(t[i].it.data, t[i].it.len, want);
			ck_assert_int_eq(t[i].done, 1);
			ck_assert_mem_eq(t[i].it.digest, want, 16);
			ck_assert_ptr_null(t[i].it.b);
		}
	}
	uint64_t turns, items;
	gw_md5b_counts(b, &turns, &items);
	ck_assert_uint_eq(turns, 3);
	ck_assert_uint_eq(items, 3 * N);
	gw_md5b_close(b);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
}
END_TEST

START_TEST(cancel_and_reentry)
{
	fill();
	uv_loop_t loop;
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	struct gw_md5b *b = gw_md5b_new(&loop);
	struct t_item t[4];
	for (unsigned i = 0; i < 4; i++) {
		set(&t[i], i, 4096);
		ck_assert(gw_md5b_queue(b, &t[i].it));
	}
	gw_md5b_cancel(&t[1].it);
	gw_md5b_cancel(&t[1].it);          /* twice: a no-op */
	t[0].cancel_on_done = &t[3];       /* a done cancels a later item */
	t[2].requeue_into = b;             /* a done's queue is refused */
	uv_run(&loop, UV_RUN_NOWAIT);
	ck_assert_int_eq(t[0].done, 1);
	ck_assert_int_eq(t[1].done, 0);
	ck_assert_int_eq(t[2].done, 1);
	ck_assert(!t[2].requeued);
	ck_assert_int_eq(t[3].done, 0);
	ck_assert_ptr_null(t[3].it.b);
	uint64_t turns, items;
	gw_md5b_counts(b, &turns, &items);
	ck_assert_uint_eq(items, 3);      /* t[3] was hashed, then cancelled before its done */

	/* Full: GW_MD5B_SLOTS queue, one more is refused. */
	static struct t_item many[GW_MD5B_SLOTS + 1];
	for (unsigned i = 0; i < GW_MD5B_SLOTS; i++) {
		set(&many[i], i, 100);
		ck_assert(gw_md5b_queue(b, &many[i].it));
	}
	set(&many[GW_MD5B_SLOTS], 0, 100);
	ck_assert(!gw_md5b_queue(b, &many[GW_MD5B_SLOTS].it));
	uv_run(&loop, UV_RUN_NOWAIT);
	for (unsigned i = 0; i < GW_MD5B_SLOTS; i++)
		ck_assert_int_eq(many[i].done, 1);

	/* Close drops what is queued. */
	set(&t[0], 0, 10);
	ck_assert(gw_md5b_queue(b, &t[0].it));
	gw_md5b_close(b);
	ck_assert_ptr_null(t[0].it.b);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(t[0].done, 0);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
	ck_assert(!gw_md5b_queue(NULL, &t[0].it));   /* no batch: the caller hashes */
}
END_TEST

static struct t_item timer_item;

static void on_timer(uv_timer_t *tm)
{
	set(&timer_item, 5, 4096);
	ck_assert(gw_md5b_queue(tm->data, &timer_item.it));
	/* Not closed here: a closing handle would make the poll not block
	 * either, and hide a missing idle handle. */
}

START_TEST(queued_outside_poll)
{
	/* Queued from a timer, with nothing else on the loop: without the
	 * idle handle the poll would wait forever (check's timeout). */
	fill();
	uv_loop_t loop;
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	struct gw_md5b *b = gw_md5b_new(&loop);
	uv_timer_t tm;
	uv_timer_init(&loop, &tm);
	tm.data = b;
	uv_timer_start(&tm, on_timer, 1, 0);
	uv_run(&loop, UV_RUN_DEFAULT);   /* returns once nothing is active */
	ck_assert_int_eq(timer_item.done, 1);
	uv_close((uv_handle_t *)&tm, NULL);
	gw_md5b_close(b);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gw_md5b");
	TCase *tc = tcase_create("md5b");
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, digests);
	tcase_add_test(tc, cancel_and_reentry);
	tcase_add_test(tc, queued_outside_poll);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
