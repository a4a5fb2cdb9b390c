/*
 * loop.c — cross-thread hand-off and loop-owning threads over libuv.
 *
 * A loop_queue is a mutex-protected singly linked list plus an eventfd
 * watched by uv_poll: the poster links its item and, unless a wake-up is
 * already pending, writes the eventfd once it has unlocked; the loop takes
 * the whole list at once and runs it outside the lock, so a poster never
 * waits on a running item and a burst of posts costs one wake. A post from the loop's own
 * thread (known once the loop drained the queue) wakes it through a uv_idle
 * handle instead of the eventfd: the loop runs the list before it polls
 * again, without a syscall.
 */
#include "common/loop.h"

#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

/* Take the whole list and run it outside the lock. signalled is cleared
 * in the same critical section that empties the list, so a post that finds
 * it clear always writes the eventfd again: no wake-up is lost, and a burst
 * of posts costs one write and one wake. */
static void queue_drain(struct loop_queue *q)
{
	for (;;) {
		pthread_mutex_lock(&q->mu);
		struct loop_work *w = q->head;
		q->head = q->tail = NULL;
		q->signalled = false;
		q->owner = pthread_self();   /* drained on its loop's thread only */
		q->owner_known = true;
		pthread_mutex_unlock(&q->mu);
		if (!w)
			return;
		while (w) {
			struct loop_work *next = w->next;
			w->fn(w); /* may free w */
			w = next;
		}
	}
}

static void on_poll(uv_poll_t *p, int status, int events)
{
	(void)status;
	(void)events;
	struct loop_queue *q = p->data;
	uint64_t v;
	/* Reset the counter before taking the list (see queue_drain). */
	while (read(q->efd, &v, sizeof(v)) < 0 && errno == EINTR)
		;
	queue_drain(q);
}

static void on_idle(uv_idle_t *h)
{
	uv_idle_stop(h);
	queue_drain(h->data);
}

int loop_queue_init(struct loop_queue *q, uv_loop_t *loop)
{
	memset(q, 0, sizeof(*q));
	q->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (q->efd < 0)
		return -errno;
	int rc = pthread_mutex_init(&q->mu, NULL);
	if (rc) {
		rc = -rc;
		goto err_fd;
	}
	rc = uv_poll_init(loop, &q->poll, q->efd);
	if (rc)
		goto err_mu; /* libuv errors are already -errno */
	q->poll.data = q;
	uv_idle_init(loop, &q->idle); /* never fails */
	q->idle.data = q;
	q->closing = 2;
	rc = uv_poll_start(&q->poll, UV_READABLE, on_poll);
	if (rc) {
		uv_close((uv_handle_t *)&q->poll, NULL);
		uv_close((uv_handle_t *)&q->idle, NULL);
		q->closed = true; /* the fd goes with the handle; see below */
		return rc;
	}
	return 0;
err_mu:
	pthread_mutex_destroy(&q->mu);
err_fd:
	close(q->efd);
	q->efd = -1;
	return rc;
}

int loop_queue_post(struct loop_queue *q, struct loop_work *w, loop_work_fn fn)
{
	w->fn = fn;
	w->next = NULL;
	pthread_mutex_lock(&q->mu);
	if (q->closed) {
		pthread_mutex_unlock(&q->mu);
		return -ESHUTDOWN;
	}
	if (q->tail)
		q->tail->next = w;
	else
		q->head = w;
	q->tail = w;
	bool wake = !q->signalled;
	q->signalled = true;
	bool own = wake && q->owner_known && pthread_equal(q->owner, pthread_self());
	/* The write is made after the unlock: under the lock, the woken loop
	 * found the mutex still held by the writer's syscall, slept on it and
	 * had to be woken again (a futex wait, a futex wake and a context
	 * switch per hand-off; docs/performance.md, branch get64c). writers,
	 * raised under the lock while closed is clear, keeps the eventfd open
	 * until the write is made (on_queue_closed waits for it). A write
	 * that lands after the loop drained the list only wakes it once for
	 * nothing; none is lost, the item is linked before. */
	if (wake && !own)
		atomic_fetch_add_explicit(&q->writers, 1, memory_order_relaxed);
	int efd = q->efd;
	pthread_mutex_unlock(&q->mu);
	if (wake && !own) {
		uint64_t one = 1;
		while (write(efd, &one, sizeof(one)) < 0 && errno == EINTR)
			;
		atomic_fetch_sub_explicit(&q->writers, 1, memory_order_release);
	}
	/* The loop's own thread: it is not blocked in poll, and with an idle
	 * handle active it will not block before the list runs. A post from
	 * another thread meanwhile finds signalled set and rides this wake. */
	if (own)
		uv_idle_start(&q->idle, on_idle);
	return 0;
}

static void on_queue_closed(uv_handle_t *h)
{
	struct loop_queue *q = h->data;
	if (--q->closing)
		return;
	/* closed is set: no new writer; wait for one between its unlock and
	 * its write (a syscall long), then the fd may go. */
	while (atomic_load_explicit(&q->writers, memory_order_acquire))
		sched_yield();
	close(q->efd);
	q->efd = -1;
	if (q->closed_cb)
		q->closed_cb(q);
}

void loop_queue_close(struct loop_queue *q, loop_queue_closed_fn closed_cb)
{
	pthread_mutex_lock(&q->mu);
	q->closed = true;
	pthread_mutex_unlock(&q->mu);
	queue_drain(q);
	q->closed_cb = closed_cb;
	/* The mutex is left alive: a late poster still locks it to learn that
	 * the queue is closed. Default mutexes hold no resources. */
	uv_close((uv_handle_t *)&q->poll, on_queue_closed);
	uv_close((uv_handle_t *)&q->idle, on_queue_closed);
}

/* ------------------------------------------------------------ threads */

struct start_sync {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int rc;
	bool done;
	struct loop_thread *lt;
};

static void close_any(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

static void *thread_main(void *arg)
{
	struct start_sync *ss = arg;
	struct loop_thread *lt = ss->lt;
	int rc = uv_loop_init(&lt->loop);
	if (rc == 0) {
		rc = loop_queue_init(&lt->queue, &lt->loop);
		if (rc)
			uv_loop_close(&lt->loop);
	}
	pthread_setname_np(pthread_self(), lt->name);
	pthread_mutex_lock(&ss->mu);
	ss->rc = rc;
	ss->done = true;
	pthread_cond_signal(&ss->cv);
	pthread_mutex_unlock(&ss->mu);
	if (rc)
		return NULL;

	uv_run(&lt->loop, UV_RUN_DEFAULT);
	/* Stopped: close whatever is still open so the loop can be closed. */
	uv_walk(&lt->loop, close_any, NULL);
	uv_run(&lt->loop, UV_RUN_DEFAULT);
	uv_loop_close(&lt->loop);
	return NULL;
}

int loop_thread_start(struct loop_thread *lt, const char *name)
{
	memset(lt, 0, sizeof(*lt));
	strncpy(lt->name, name ? name : "iolake", sizeof(lt->name) - 1);
	struct start_sync ss = { .lt = lt, .rc = 0, .done = false };
	pthread_mutex_init(&ss.mu, NULL);
	pthread_cond_init(&ss.cv, NULL);
	int rc = pthread_create(&lt->thread, NULL, thread_main, &ss);
	if (rc) {
		rc = -rc;
		goto out_sync;
	}
	pthread_mutex_lock(&ss.mu);
	while (!ss.done)
		pthread_cond_wait(&ss.cv, &ss.mu);
	pthread_mutex_unlock(&ss.mu);
	rc = ss.rc;
	if (rc)
		pthread_join(lt->thread, NULL);
	else
		lt->running = true;
out_sync:
	pthread_cond_destroy(&ss.cv);
	pthread_mutex_destroy(&ss.mu);
	return rc;
}

struct stop_work {
	struct loop_work work;
	struct loop_thread *lt;
};

static void do_stop(struct loop_work *w)
{
	struct stop_work *sw = container_of(w, struct stop_work, work);
	loop_queue_close(&sw->lt->queue, NULL);
	uv_stop(&sw->lt->loop);
}

void loop_thread_stop(struct loop_thread *lt)
{
	if (!lt->running)
		return;
	struct stop_work sw = { .lt = lt };
	if (loop_queue_post(&lt->queue, &sw.work, do_stop) == 0)
		pthread_join(lt->thread, NULL);
	lt->running = false;
}

struct call_work {
	struct loop_work work;
	void (*fn)(void *arg);
	void *arg;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
};

static void do_call(struct loop_work *w)
{
	struct call_work *cw = container_of(w, struct call_work, work);
	cw->fn(cw->arg);
	pthread_mutex_lock(&cw->mu);
	cw->done = true;
	pthread_cond_signal(&cw->cv);
	pthread_mutex_unlock(&cw->mu);
}

int loop_thread_call(struct loop_thread *lt, void (*fn)(void *arg), void *arg)
{
	struct call_work cw = { .fn = fn, .arg = arg, .done = false };
	pthread_mutex_init(&cw.mu, NULL);
	pthread_cond_init(&cw.cv, NULL);
	int rc = loop_queue_post(&lt->queue, &cw.work, do_call);
	if (rc == 0) {
		pthread_mutex_lock(&cw.mu);
		while (!cw.done)
			pthread_cond_wait(&cw.cv, &cw.mu);
		pthread_mutex_unlock(&cw.mu);
	}
	pthread_cond_destroy(&cw.cv);
	pthread_mutex_destroy(&cw.mu);
	return rc;
}

uint64_t loop_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t loop_now_ms(void)
{
	return loop_now_ns() / 1000000ull;
}
