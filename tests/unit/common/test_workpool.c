/*
 * test_workpool.c — the worker pool and the ordered hash streams on it:
 * a strand's jobs run one at a time in order; strands run in parallel
 * (two jobs that each wait for the other can only both finish if they
 * run at once); done callbacks come on the loop, never inside submit;
 * stop with jobs queued cancels them; no threads (--hash-threads 0) and a
 * full queue run jobs inline; MD5/SHA-256 of many streams at once equal
 * the one-shot digests.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "common/hash_async.h"
#include "common/workpool.h"

struct tjob {
	struct wp_job job;
	struct tstrand *st;
	unsigned seq;
	pthread_t ran_on;
	int status;
	bool done;
};

struct tstrand {
	struct wp_strand strand;
	atomic_uint running;      /* jobs of it running now: at most 1 */
	atomic_uint overlap;      /* times a second one ran beside */
	unsigned ran[256];        /* seqs in run order (one job at a time) */
	unsigned nran;
	unsigned done_seq[256];
	unsigned ndone;
};

static bool in_submit;        /* set around workpool_submit: done must not run */
static unsigned done_total;

static void tjob_run(struct wp_job *j)
{
	struct tjob *t = (struct tjob *)j;
	t->ran_on = pthread_self();
	if (t->st) {
		if (atomic_fetch_add(&t->st->running, 1))
			atomic_fetch_add(&t->st->overlap, 1);
		t->st->ran[t->st->nran++] = t->seq;
		for (volatile int i = 0; i < 2000; i++)
			;
		atomic_fetch_sub(&t->st->running, 1);
	}
}

static void tjob_done(struct wp_job *j, int status)
{
	struct tjob *t = (struct tjob *)j;
	ck_assert(!in_submit);
	t->status = status;
	t->done = true;
	if (t->st)
		t->st->done_seq[t->st->ndone++] = t->seq;
	done_total++;
}

static void submit(struct workpool_port *pt, struct tstrand *st, struct tjob *t, unsigned seq)
{
	memset(t, 0, sizeof(*t));
	t->job.run = tjob_run;
	t->job.done = tjob_done;
	t->st = st;
	t->seq = seq;
	in_submit = true;
	workpool_submit(pt, st ? &st->strand : NULL, &t->job);
	in_submit = false;
}

/* Run the loop until n done callbacks have come (or 20 s: a failure). */
static void wait_done(uv_loop_t *loop, unsigned n)
{
	time_t t0 = time(NULL);
	while (done_total < n) {
		uv_run(loop, UV_RUN_ONCE);
		ck_assert_int_lt(time(NULL) - t0, 20);
	}
}

START_TEST(test_strand_order)
{
	enum { STRANDS = 8, JOBS = 200 };
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct workpool *wp;
	ck_assert_int_eq(workpool_new(4, 0, &wp), 0);
	struct workpool_port *pt = workpool_port_new(wp, &loop);
	ck_assert_ptr_nonnull(pt);
	static struct tstrand st[STRANDS];
	static struct tjob jobs[STRANDS][JOBS];
	memset(st, 0, sizeof(st));
	done_total = 0;
	/* Interleave the strands' submits, as PUTs on one loop do. */
	for (unsigned j = 0; j < JOBS; j++)
		for (unsigned s = 0; s < STRANDS; s++)
			submit(pt, &st[s], &jobs[s][j], j);
	ck_assert_uint_eq(workpool_port_jobs(pt), STRANDS * JOBS);
	wait_done(&loop, STRANDS * JOBS);
	for (unsigned s = 0; s < STRANDS; s++) {
		ck_assert_uint_eq(atomic_load(&st[s].overlap), 0);
		ck_assert_uint_eq(st[s].nran, JOBS);
		ck_assert_uint_eq(st[s].ndone, JOBS);
		for (unsigned j = 0; j < JOBS; j++) {
			ck_assert_uint_eq(st[s].ran[j], j);
			ck_assert_uint_eq(st[s].done_seq[j], j);
			ck_assert_int_eq(jobs[s][j].status, 0);
			ck_assert(!pthread_equal(jobs[s][j].ran_on, pthread_self()));
		}
		ck_assert(!st[s].strand.active);
	}
	ck_assert_uint_eq(workpool_port_jobs(pt), 0);
	workpool_port_close(pt);
	uv_run(&loop, UV_RUN_DEFAULT);
	workpool_free(wp);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
}
END_TEST

/* Two jobs on two strands that each wait for the other to have started:
 * both finish only if the pool runs them at the same time. */
struct meet {
	struct wp_job job;
	atomic_int *arrived;
	bool met;
};

static void meet_run(struct wp_job *j)
{
	struct meet *m = (struct meet *)j;
	atomic_fetch_add(m->arrived, 1);
	time_t t0 = time(NULL);
	while (atomic_load(m->arrived) < 2 && time(NULL) - t0 < 10)
		sched_yield();
	m->met = atomic_load(m->arrived) == 2;
}

static void meet_done(struct wp_job *j, int status)
{
	(void)j;
	ck_assert_int_eq(status, 0);
	done_total++;
}

START_TEST(test_strands_parallel)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct workpool *wp;
	ck_assert_int_eq(workpool_new(2, 0, &wp), 0);
	struct workpool_port *pt = workpool_port_new(wp, &loop);
	atomic_int arrived = 0;
	struct wp_strand s1 = { 0 }, s2 = { 0 };
	struct meet a = { .job = { .run = meet_run, .done = meet_done }, .arrived = &arrived };
	struct meet b = a;
	done_total = 0;
	workpool_submit(pt, &s1, &a.job);
	workpool_submit(pt, &s2, &b.job);
	wait_done(&loop, 2);
	ck_assert(a.met);
	ck_assert(b.met);
	workpool_port_close(pt);
	uv_run(&loop, UV_RUN_DEFAULT);
	workpool_free(wp);
	uv_loop_close(&loop);
}
END_TEST

/* A job that holds its worker until the pool stops. */
struct blocker {
	struct wp_job job;
	struct workpool *wp;
	atomic_bool started;
	int status;
};

static void blocker_run(struct wp_job *j)
{
	struct blocker *b = (struct blocker *)j;
	atomic_store(&b->started, true);
	while (!workpool_stopping(b->wp))
		sched_yield();
}

static void blocker_done(struct wp_job *j, int status)
{
	((struct blocker *)j)->status = status;
	done_total++;
}

START_TEST(test_stop_with_jobs_queued)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct workpool *wp;
	ck_assert_int_eq(workpool_new(1, 0, &wp), 0);
	struct workpool_port *pt = workpool_port_new(wp, &loop);
	struct blocker b = { .job = { .run = blocker_run, .done = blocker_done }, .wp = wp,
			     .status = 99 };
	static struct tstrand st;
	memset(&st, 0, sizeof(st));
	struct tjob loose[5], ordered[5];
	done_total = 0;
	workpool_submit(pt, NULL, &b.job);
	while (!atomic_load(&b.started))
		sched_yield();
	for (unsigned i = 0; i < 5; i++) {
		submit(pt, NULL, &loose[i], i);
		submit(pt, &st, &ordered[i], i);
	}
	workpool_stop(wp);   /* joins: the blocker saw the stop and ended */
	ck_assert_uint_eq(done_total, 0);   /* nothing inside stop */
	wait_done(&loop, 11);
	ck_assert_int_eq(b.status, 0);
	for (unsigned i = 0; i < 5; i++) {
		ck_assert(loose[i].done);
		ck_assert_int_eq(loose[i].status, -ECANCELED);
		ck_assert(ordered[i].done);
		ck_assert_int_eq(ordered[i].status, -ECANCELED);
		ck_assert_uint_eq(st.done_seq[i], i);
	}
	ck_assert_uint_eq(st.nran, 0);
	/* After the stop a submit runs inline; done still from the loop. */
	struct tjob late;
	submit(pt, NULL, &late, 0);
	ck_assert(!late.done);
	wait_done(&loop, 12);
	ck_assert_int_eq(late.status, 0);
	ck_assert(pthread_equal(late.ran_on, pthread_self()));
	workpool_port_close(pt);
	uv_run(&loop, UV_RUN_DEFAULT);
	workpool_free(wp);
	uv_loop_close(&loop);
}
END_TEST

START_TEST(test_no_threads_inline)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct workpool *wp;
	ck_assert_int_eq(workpool_new(0, 0, &wp), 0);
	ck_assert_uint_eq(workpool_threads(wp), 0);
	ck_assert_ptr_null(workpool_hash_start(0));   /* --hash-threads 0: no pool */
	struct workpool_port *pt = workpool_port_new(wp, &loop);
	static struct tstrand st;
	memset(&st, 0, sizeof(st));
	struct tjob jobs[10];
	done_total = 0;
	for (unsigned i = 0; i < 10; i++) {
		submit(pt, i % 2 ? &st : NULL, &jobs[i], i / 2);
		ck_assert(pthread_equal(jobs[i].ran_on, pthread_self()));
		ck_assert(!jobs[i].done);
	}
	wait_done(&loop, 10);
	for (unsigned i = 0; i < 5; i++)
		ck_assert_uint_eq(st.done_seq[i], i);
	workpool_port_close(pt);
	uv_run(&loop, UV_RUN_DEFAULT);
	workpool_free(wp);
	uv_loop_close(&loop);
}
END_TEST

START_TEST(test_full_queue_inline)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct workpool *wp;
	ck_assert_int_eq(workpool_new(1, 2, &wp), 0);
	struct workpool_port *pt = workpool_port_new(wp, &loop);
	struct blocker b = { .job = { .run = blocker_run, .done = blocker_done }, .wp = wp };
	struct tjob q[3];
	done_total = 0;
	workpool_submit(pt, NULL, &b.job);
	while (!atomic_load(&b.started))
		sched_yield();
	for (unsigned i = 0; i < 3; i++)
		submit(pt, NULL, &q[i], i);
	/* Two fit the queue; the third ran here. */
	ck_assert(pthread_equal(q[2].ran_on, pthread_self()));
	ck_assert(!q[2].done);
	workpool_stop(wp);
	wait_done(&loop, 4);
	ck_assert_int_eq(q[0].status, -ECANCELED);
	ck_assert_int_eq(q[1].status, -ECANCELED);
	ck_assert_int_eq(q[2].status, 0);
	workpool_port_close(pt);
	uv_run(&loop, UV_RUN_DEFAULT);
	workpool_free(wp);
	uv_loop_close(&loop);
}
END_TEST

/* hash_async: many streams fed in interleaved slices through 3 threads
 * give the one-shot digests; a stream refuses an update when its slots
 * are busy; buffers are held until their job is done. */
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

START_TEST(test_hash_async_streams)
{
	enum { N = 12, SIZE = 3 << 20, SLICE = 256 << 10 };
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct workpool *wp;
	ck_assert_int_eq(workpool_new(3, 0, &wp), 0);
	struct workpool_port *pt = workpool_port_new(wp, &loop);
	struct hstream s[N];
	for (unsigned i = 0; i < N; i++) {
		s[i] = (struct hstream){ 0 };
		s[i].h = hash_async_new(pt, HASH_ASYNC_MD5 | HASH_ASYNC_SHA256, 4, on_hjob, &s[i]);
		ck_assert_ptr_nonnull(s[i].h);
		s[i].b = buf_new(SIZE + 7);
		for (size_t k = 0; k < SIZE + 7; k++)
			s[i].b->data[k] = (uint8_t)(k * 31 + i * 7 + (k >> 13));
	}
	unsigned refused = 0;
	bool left = true;
	time_t t0 = time(NULL);
	while (left) {
		left = false;
		for (unsigned i = 0; i < N; i++) {
			if (s[i].fed == SIZE)
				continue;
			left = true;
			/* Odd-sized slices, some below the inline threshold. */
			size_t len = i % 3 == 0 ? 1000 : SLICE + i;
			if (len > SIZE - s[i].fed)
				len = SIZE - s[i].fed;
			int rc = hash_async_update(s[i].h, s[i].b, 7 + s[i].fed, len, 4096);
			if (rc == -EAGAIN) {
				refused++;
				continue;
			}
			ck_assert_int_eq(rc, 0);
			s[i].fed += len;
		}
		uv_run(&loop, UV_RUN_NOWAIT);
		ck_assert_int_lt(time(NULL) - t0, 30);
	}
	for (unsigned i = 0; i < N; i++) {
		while (hash_async_pending(s[i].h)) {
			ck_assert_int_ge(atomic_load(&s[i].b->refs), 2);   /* held by a job */
			uv_run(&loop, UV_RUN_ONCE);
		}
		ck_assert_uint_eq(atomic_load(&s[i].b->refs), 1);
		uint8_t md5[MD5_LEN], sha[SHA256_LEN], emd5[MD5_LEN], esha[SHA256_LEN];
		hash_async_final(s[i].h, md5, sha);
		hash_md5(s[i].b->data + 7, SIZE, emd5);
		hash_sha256(s[i].b->data + 7, SIZE, esha);
		ck_assert_mem_eq(md5, emd5, MD5_LEN);
		ck_assert_mem_eq(sha, esha, SHA256_LEN);
		if (i % 3)
			ck_assert_uint_gt(s[i].cbs, 0);
		/* Reset by final: an empty stream next. */
		hash_async_final(s[i].h, md5, NULL);
		hash_md5("", 0, emd5);
		ck_assert_mem_eq(md5, emd5, MD5_LEN);
		hash_async_free(s[i].h);
		buf_unref(s[i].b);
	}
	(void)refused;   /* load-dependent: may be 0 on an idle machine */
	workpool_port_close(pt);
	uv_run(&loop, UV_RUN_DEFAULT);
	workpool_free(wp);
	uv_loop_close(&loop);
}
END_TEST

/* A stream with no port hashes inline, and one whose slots are all busy
 * says so. */
START_TEST(test_hash_async_slots)
{
	struct hash_async *h = hash_async_new(NULL, HASH_ASYNC_MD5, 1, NULL, NULL);
	struct buf *b = buf_copy("abcdef", 6);
	ck_assert_int_eq(hash_async_update(h, b, 0, 6, 0), 0);
	ck_assert_uint_eq(hash_async_pending(h), 0);
	ck_assert_uint_eq(atomic_load(&b->refs), 1);
	uint8_t md5[MD5_LEN], e[MD5_LEN];
	hash_async_final(h, md5, NULL);
	hash_md5("abcdef", 6, e);
	ck_assert_mem_eq(md5, e, MD5_LEN);
	hash_async_free(h);

	uv_loop_t loop;
	uv_loop_init(&loop);
	struct workpool *wp;
	ck_assert_int_eq(workpool_new(1, 0, &wp), 0);
	struct workpool_port *pt = workpool_port_new(wp, &loop);
	h = hash_async_new(pt, HASH_ASYNC_MD5, 1, NULL, NULL);
	ck_assert_int_eq(hash_async_update(h, b, 0, 3, 0), 0);
	ck_assert_int_eq(hash_async_update(h, b, 3, 3, 0), -EAGAIN);
	ck_assert_int_eq(hash_async_update_now(h, "def", 3), -EBUSY);
	while (hash_async_pending(h))
		uv_run(&loop, UV_RUN_ONCE);
	ck_assert_int_eq(hash_async_update(h, b, 3, 3, 0), 0);
	while (hash_async_pending(h))
		uv_run(&loop, UV_RUN_ONCE);
	hash_async_final(h, md5, NULL);
	ck_assert_mem_eq(md5, e, MD5_LEN);
	hash_async_free(h);
	buf_unref(b);
	workpool_port_close(pt);
	uv_run(&loop, UV_RUN_DEFAULT);
	workpool_free(wp);
	uv_loop_close(&loop);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("workpool");
	TCase *tc = tcase_create("workpool");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_strand_order);
	tcase_add_test(tc, test_strands_parallel);
	tcase_add_test(tc, test_stop_with_jobs_queued);
	tcase_add_test(tc, test_no_threads_inline);
	tcase_add_test(tc, test_full_queue_inline);
	tcase_add_test(tc, test_hash_async_streams);
	tcase_add_test(tc, test_hash_async_slots);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
