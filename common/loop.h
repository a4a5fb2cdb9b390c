/*
 * loop.h — event-loop helpers over libuv: one loop per thread, a bounded-
 * free hand-off queue to run work on another thread's loop, and a thread
 * that owns a loop.
 *
 * Rules: every libuv handle is touched only on the thread of its loop. Work
 * for another loop goes through that loop's loop_queue (loop_queue_post is
 * the one function here that any thread may call). A posted item runs on
 * the target loop in the order posted by each thread.
 */
#ifndef COMMON_LOOP_H
#define COMMON_LOOP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

struct loop_work;
typedef void (*loop_work_fn)(struct loop_work *w);

/* An item of work, embedded by the caller in its own struct (recover the
 * outer struct with container_of). Owned by the caller until fn runs. */
struct loop_work {
	loop_work_fn fn;
	struct loop_work *next;
};

/* A multi-producer queue drained on one loop. Woken through an eventfd
 * watched by uv_poll, not uv_async: libuv 1.44's uv_async makes the woken
 * loop spin until the sender's write(2) returns, which on a 2-vCPU machine
 * cost a fifth of all CPU and halved one-in-flight in-process RPC. A post
 * from the loop's own thread (a deferred callback, as the OSD store's
 * inline reads use) starts an idle handle instead: no eventfd write, read
 * and extra epoll wake-up (three syscalls per OSD per shard read). */
struct loop_queue;
typedef void (*loop_queue_closed_fn)(struct loop_queue *q);

struct loop_queue {
	uv_poll_t poll;
	uv_idle_t idle;                /* wakes the loop for its own posts */
	int efd;                       /* eventfd: nonzero while signalled */
	pthread_mutex_t mu;
	struct loop_work *head, *tail; /* under mu */
	bool signalled;                /* under mu: a wake-up is pending */
	bool closed;                   /* under mu */
	bool owner_known;              /* under mu: owner is set */
	pthread_t owner;               /* under mu: the thread that drains */
	atomic_uint writers;           /* posters between unlock and their efd write */
	unsigned closing;              /* handles not yet closed */
	loop_queue_closed_fn closed_cb;
};

/* Attach q to loop; call on the loop's thread. Returns 0 or -errno. */
int loop_queue_init(struct loop_queue *q, uv_loop_t *loop);

/* Run w->fn(w) on q's loop, soon. Any thread. Returns 0, or -ESHUTDOWN
 * when the queue is closed (w is then not run and stays the caller's). */
int loop_queue_post(struct loop_queue *q, struct loop_work *w, loop_work_fn fn);

/* Stop accepting work, run what was already posted, and release the poll
 * handle and eventfd. closed_cb (may be NULL) runs once libuv is done with
 * q, on a later loop turn: only then may q's memory go. Loop thread only. */
void loop_queue_close(struct loop_queue *q, loop_queue_closed_fn closed_cb);

/* A thread running its own loop until stopped. */
struct loop_thread {
	uv_loop_t loop;
	struct loop_queue queue;   /* posts run on this thread */
	pthread_t thread;
	char name[16];
	bool running;
};

/* Start a thread with a fresh loop; returns once the loop accepts work
 * (lt->queue can be posted to). name is for ps/top (at most 15 chars). */
int loop_thread_start(struct loop_thread *lt, const char *name);

/* Ask the thread to finish: closes the queue, lets handles that others
 * closed finish, and joins. Handles still open on the loop are closed by
 * walking it, so the thread always ends. Any thread but lt's own. */
void loop_thread_stop(struct loop_thread *lt);

/* Run fn(w) on lt's thread and wait until it has returned. Not from lt's
 * own thread (that would deadlock). Returns 0 or -ESHUTDOWN. */
int loop_thread_call(struct loop_thread *lt, void (*fn)(void *arg), void *arg);

/* Milliseconds of a monotonic clock (CLOCK_MONOTONIC), any thread. */
uint64_t loop_now_ms(void);
uint64_t loop_now_ns(void);

#ifndef container_of
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#endif

#endif
