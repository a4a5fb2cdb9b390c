/*
 * test_loop.c — cross-thread hand-off: every post from many threads runs
 * exactly once on the target loop's thread, in per-producer order;
 * loop_thread_call waits for its function; a closed queue refuses work;
 * a post from the loop's own thread runs on the next turn without an
 * eventfd write, and close still runs it; close keeps the eventfd open
 * for a poster between its unlock and its write.
 */
#include <unistd.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/loop.h"

#define PRODUCERS 4
#define PER_PRODUCER 20000

struct item {
	struct loop_work work;
	int producer;
	int seq;
};

struct state {
	struct loop_thread lt;
	pthread_t loop_tid;
	int next_seq[PRODUCERS];   /* touched only on the loop thread */
	int ran;
	int out_of_order;
	int wrong_thread;
};

static struct state st;

static void run_item(struct loop_work *w)
{
	struct item *it = container_of(w, struct item, work);
	if (!pthread_equal(pthread_self(), st.loop_tid))
		st.wrong_thread++;
	if (it->seq != st.next_seq[it->producer])
		st.out_of_order++;
	st.next_seq[it->producer] = it->seq + 1;
	st.ran++;
	free(it);
}

static void *producer(void *arg)
{
	int p = (int)(intptr_t)arg;
	for (int i = 0; i < PER_PRODUCER; i++) {
		struct item *it = malloc(sizeof(*it));
		it->producer = p;
		it->seq = i;
		if (loop_queue_post(&st.lt.queue, &it->work, run_item) != 0)
			free(it);
	}
	return NULL;
}

static void get_tid(void *arg)
{
	(void)arg;
	st.loop_tid = pthread_self();
}

static void read_ran(void *arg)
{
	*(int *)arg = st.ran;
}

START_TEST(test_many_producers)
{
	memset(&st, 0, sizeof(st));
	ck_assert_int_eq(loop_thread_start(&st.lt, "test-loop"), 0);
	ck_assert_int_eq(loop_thread_call(&st.lt, get_tid, NULL), 0);
	ck_assert(!pthread_equal(st.loop_tid, pthread_self()));

	pthread_t t[PRODUCERS];
	for (int i = 0; i < PRODUCERS; i++)
		pthread_create(&t[i], NULL, producer, (void *)(intptr_t)i);
	for (int i = 0; i < PRODUCERS; i++)
		pthread_join(t[i], NULL);

	/* loop_thread_call is queued behind every item already posted. */
	int ran = -1;
	ck_assert_int_eq(loop_thread_call(&st.lt, read_ran, &ran), 0);
	ck_assert_int_eq(ran, PRODUCERS * PER_PRODUCER);
	ck_assert_int_eq(st.out_of_order, 0);
	ck_assert_int_eq(st.wrong_thread, 0);
	loop_thread_stop(&st.lt);
}
END_TEST

static void never(struct loop_work *w)
{
	(void)w;
	ck_abort_msg("work ran after the queue was closed");
}

START_TEST(test_closed_queue_refuses)
{
	memset(&st, 0, sizeof(st));
	ck_assert_int_eq(loop_thread_start(&st.lt, "test-loop"), 0);
	loop_thread_stop(&st.lt);
	struct loop_work w;
	ck_assert_int_eq(loop_queue_post(&st.lt.queue, &w, never), -ESHUTDOWN);
}
END_TEST

static void on_timer(uv_timer_t *t)
{
	int *fired = t->data;
	(*fired)++;
	uv_close((uv_handle_t *)t, NULL);
}

/* Post item seq of producer 0 to q (run_item runs it). */
static int post_seq(struct loop_queue *q, int seq)
{
	struct item *it = malloc(sizeof(*it));
	it->producer = 0;
	it->seq = seq;
	return loop_queue_post(q, &it->work, run_item);
}

START_TEST(test_same_loop_and_timer)
{
	/* A queue on the caller's own loop: posts run on the next turn, not
	 * inside post (so callers never re-enter themselves). */
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct loop_queue q;
	ck_assert_int_eq(loop_queue_init(&q, &loop), 0);
	memset(&st, 0, sizeof(st));
	st.loop_tid = pthread_self();
	ck_assert_int_eq(post_seq(&q, 0), 0);
	ck_assert_int_eq(st.ran, 0);

	int fired = 0;
	uv_timer_t t;
	uv_timer_init(&loop, &t);
	t.data = &fired;
	/* A timer counts from the loop's cached time: refresh it, or a test
	 * descheduled since uv_loop_init sees the timer fire "early". */
	uv_update_time(&loop);
	uint64_t t0 = loop_now_ms();
	uv_timer_start(&t, on_timer, 30, 0);
	uv_run(&loop, UV_RUN_ONCE);
	ck_assert_int_eq(st.ran, 1);
	while (!fired)
		uv_run(&loop, UV_RUN_ONCE);
	ck_assert_uint_ge(loop_now_ms() - t0, 29);
	loop_queue_close(&q, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
}
END_TEST

START_TEST(test_own_thread_post)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct loop_queue q;
	ck_assert_int_eq(loop_queue_init(&q, &loop), 0);
	memset(&st, 0, sizeof(st));
	st.loop_tid = pthread_self();
	/* Before the first drain the queue does not know its thread: the
	 * eventfd wakes it. */
	ck_assert_int_eq(post_seq(&q, 0), 0);
	uv_run(&loop, UV_RUN_ONCE);
	ck_assert_int_eq(st.ran, 1);
	/* Now a post from the loop's thread: not run inside post, no eventfd
	 * write (the read finds its counter 0), and the next turn runs it
	 * without waiting in poll. */
	ck_assert_int_eq(post_seq(&q, 1), 0);
	ck_assert_int_eq(st.ran, 1);
	uint64_t v;
	ck_assert_int_eq(read(q.efd, &v, sizeof(v)), -1);
	ck_assert_int_eq(errno, EAGAIN);
	uv_run(&loop, UV_RUN_NOWAIT);
	ck_assert_int_eq(st.ran, 2);
	ck_assert_int_eq(st.out_of_order, 0);
	/* One more from this thread, then close: close runs it. */
	ck_assert_int_eq(post_seq(&q, 2), 0);
	loop_queue_close(&q, NULL);
	ck_assert_int_eq(st.ran, 3);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
	ck_assert_int_eq(st.wrong_thread, 0);
}
END_TEST

/* A poster that unlocked and has not written its eventfd yet (what
 * loop_queue_post's writers counts): close must not release the fd under
 * it. The helper stands for that poster: it holds writers up, waits, checks
 * the fd is still open, then lets go; closed_cb must come after. */
struct late_writer {
	struct loop_queue *q;
	int efd;
	atomic_bool released;
	bool fd_open;
	bool cb_after_release;
};

static struct late_writer lw;

static void *late_writer_main(void *arg)
{
	(void)arg;
	usleep(100 * 1000);
	lw.fd_open = fcntl(lw.efd, F_GETFD) >= 0;
	atomic_store(&lw.released, true);
	atomic_fetch_sub_explicit(&lw.q->writers, 1, memory_order_release);
	return NULL;
}

static void on_late_closed(struct loop_queue *q)
{
	(void)q;
	lw.cb_after_release = atomic_load(&lw.released);
}

START_TEST(test_close_waits_for_writer)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct loop_queue q;
	ck_assert_int_eq(loop_queue_init(&q, &loop), 0);
	memset(&lw, 0, sizeof(lw));
	lw.q = &q;
	lw.efd = q.efd;
	atomic_fetch_add(&q.writers, 1);
	pthread_t th;
	ck_assert_int_eq(pthread_create(&th, NULL, late_writer_main, NULL), 0);
	loop_queue_close(&q, on_late_closed);
	uv_run(&loop, UV_RUN_DEFAULT);
	pthread_join(th, NULL);
	ck_assert(lw.fd_open);
	ck_assert(lw.cb_after_release);
	ck_assert_int_eq(q.efd, -1);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("loop");
	TCase *tc = tcase_create("loop");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_many_producers);
	tcase_add_test(tc, test_closed_queue_refuses);
	tcase_add_test(tc, test_same_loop_and_timer);
	tcase_add_test(tc, test_own_thread_post);
	tcase_add_test(tc, test_close_waits_for_writer);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
