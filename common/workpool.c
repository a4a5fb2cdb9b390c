/*
 * workpool.c — worker threads, a bounded run queue, strands and per-loop
 * completion ports. See workpool.h for the contract.
 *
 * One mutex guards the run queue, every strand's waiting list and every
 * port's done list; the workers sleep on one condition variable. A job's
 * life: submit → run queue (or a strand's waiting list, or run inline) →
 * run on a worker → its port's done list → uv_async_send → done on the
 * port's loop. When a strand's job finishes, the worker moves the strand's
 * next job to the run queue before publishing the finished one, so a
 * strand never has two jobs in flight.
 */
#include "common/workpool.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/log.h"

struct workpool_port {
	uv_async_t async;
	struct workpool *wp;
	struct wp_job *done_head, *done_tail;   /* under wp->mu */
	unsigned jobs;                          /* the loop's own count */
};

struct workpool {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct wp_job *head, *tail;   /* run queue */
	unsigned queued, max_jobs;
	bool stopping, joined;
	unsigned nthreads;
	pthread_t *threads;
};

static void push(struct wp_job **head, struct wp_job **tail, struct wp_job *j)
{
	j->next = NULL;
	if (*tail)
		(*tail)->next = j;
	else
		*head = j;
	*tail = j;
}

static struct wp_job *pop(struct wp_job **head, struct wp_job **tail)
{
	struct wp_job *j = *head;
	if (j) {
		*head = j->next;
		if (!*head)
			*tail = NULL;
		j->next = NULL;
	}
	return j;
}

/* Under mu: j has finished (or was cancelled). Hand j to its port, then
 * start its strand's next job (cancelled ones follow j on the done list,
 * in order; nothing reads the list before mu is released). Returns
 * whether j's port needs a wake-up (its done list was empty). */
static bool finish_locked(struct workpool *wp, struct wp_job *j)
{
	struct wp_strand *s = j->strand;
	struct workpool_port *pt = j->port;
	bool wake = !pt->done_head;
	push(&pt->done_head, &pt->done_tail, j);
	if (s) {
		struct wp_job *n = pop(&s->head, &s->tail);
		if (n) {
			if (wp->stopping) {
				n->status = -ECANCELED;
				finish_locked(wp, n);
			} else {
				push(&wp->head, &wp->tail, n);
				wp->queued++;
				pthread_cond_signal(&wp->cv);
			}
		} else {
			s->active = false;
		}
	}
	return wake;
}

static void *worker(void *arg)
{
	struct workpool *wp = arg;
	pthread_mutex_lock(&wp->mu);
	for (;;) {
		struct wp_job *j = pop(&wp->head, &wp->tail);
		if (!j) {
			if (wp->stopping)
				break;
			pthread_cond_wait(&wp->cv, &wp->mu);
			continue;
		}
		wp->queued--;
		pthread_mutex_unlock(&wp->mu);
		j->run(j);
		pthread_mutex_lock(&wp->mu);
		j->status = 0;
		struct workpool_port *pt = j->port;
		if (finish_locked(wp, j))
			uv_async_send(&pt->async);   /* the port outlives its jobs */
	}
	pthread_mutex_unlock(&wp->mu);
	return NULL;
}

int workpool_new(unsigned nthreads, unsigned max_jobs, struct workpool **out)
{
	struct workpool *wp = calloc(1, sizeof(*wp));
	if (!wp)
		return -ENOMEM;
	wp->max_jobs = max_jobs ? max_jobs : 1024;
	pthread_mutex_init(&wp->mu, NULL);
	pthread_cond_init(&wp->cv, NULL);
	if (nthreads) {
		wp->threads = calloc(nthreads, sizeof(*wp->threads));
		if (!wp->threads) {
			workpool_free(wp);
			return -ENOMEM;
		}
	}
	for (unsigned i = 0; i < nthreads; i++) {
		int rc = pthread_create(&wp->threads[i], NULL, worker, wp);
		if (rc) {
			workpool_free(wp);
			return -rc;
		}
		wp->nthreads++;
	}
	*out = wp;
	return 0;
}

unsigned workpool_threads(const struct workpool *wp)
{
	return wp->nthreads;
}

bool workpool_stopping(struct workpool *wp)
{
	pthread_mutex_lock(&wp->mu);
	bool s = wp->stopping;
	pthread_mutex_unlock(&wp->mu);
	return s;
}

void workpool_stop(struct workpool *wp)
{
	pthread_mutex_lock(&wp->mu);
	if (wp->joined) {
		pthread_mutex_unlock(&wp->mu);
		return;
	}
	wp->stopping = true;
	/* Cancel what has not started, strands' waiting jobs included (a
	 * port may be woken more than once: harmless). */
	struct wp_job *j;
	while ((j = pop(&wp->head, &wp->tail))) {
		wp->queued--;
		j->status = -ECANCELED;
		struct workpool_port *pt = j->port;
		finish_locked(wp, j);
		uv_async_send(&pt->async);
	}
	pthread_cond_broadcast(&wp->cv);
	pthread_mutex_unlock(&wp->mu);
	for (unsigned i = 0; i < wp->nthreads; i++)
		pthread_join(wp->threads[i], NULL);
	pthread_mutex_lock(&wp->mu);
	wp->joined = true;
	pthread_mutex_unlock(&wp->mu);
}

void workpool_free(struct workpool *wp)
{
	if (!wp)
		return;
	workpool_stop(wp);
	pthread_cond_destroy(&wp->cv);
	pthread_mutex_destroy(&wp->mu);
	free(wp->threads);
	free(wp);
}

static void on_async(uv_async_t *a)
{
	struct workpool_port *pt = a->data;
	struct workpool *wp = pt->wp;
	pthread_mutex_lock(&wp->mu);
	struct wp_job *list = pt->done_head;
	pt->done_head = pt->done_tail = NULL;
	pthread_mutex_unlock(&wp->mu);
	while (list) {
		struct wp_job *j = list;
		list = j->next;
		j->next = NULL;
		pt->jobs--;
		j->done(j, j->status);   /* j is its owner's again */
	}
}

struct workpool_port *workpool_port_new(struct workpool *wp, uv_loop_t *loop)
{
	struct workpool_port *pt = calloc(1, sizeof(*pt));
	if (!pt)
		return NULL;
	pt->wp = wp;
	if (uv_async_init(loop, &pt->async, on_async)) {
		free(pt);
		return NULL;
	}
	pt->async.data = pt;
	return pt;
}

static void on_port_closed(uv_handle_t *h)
{
	free(h->data);
}

void workpool_port_close(struct workpool_port *pt)
{
	if (!pt)
		return;
	if (pt->jobs) {
		LOG_ERROR("workpool: port closed with jobs outstanding", "jobs=%u", pt->jobs);
		abort();
	}
	uv_close((uv_handle_t *)&pt->async, on_port_closed);
}

unsigned workpool_port_jobs(const struct workpool_port *pt)
{
	return pt->jobs;
}

struct workpool *workpool_port_pool(const struct workpool_port *pt)
{
	return pt->wp;
}

void workpool_submit(struct workpool_port *pt, struct wp_strand *s, struct wp_job *j)
{
	struct workpool *wp = pt->wp;
	j->port = pt;
	j->strand = s;
	j->status = 0;
	j->next = NULL;
	pt->jobs++;
	pthread_mutex_lock(&wp->mu);
	if (s && s->active) {
		push(&s->head, &s->tail, j);   /* behind the one in flight */
		pthread_mutex_unlock(&wp->mu);
		return;
	}
	if (s)
		s->active = true;
	if (!wp->nthreads || wp->stopping || wp->queued >= wp->max_jobs) {
		/* Inline. The strand (if any) had nothing in flight, and only
		 * this thread submits to it, so nothing can queue behind j
		 * while it runs. */
		pthread_mutex_unlock(&wp->mu);
		j->run(j);
		pthread_mutex_lock(&wp->mu);
		bool wake = finish_locked(wp, j);
		pthread_mutex_unlock(&wp->mu);
		if (wake)
			uv_async_send(&pt->async);
		return;
	}
	push(&wp->head, &wp->tail, j);
	wp->queued++;
	pthread_cond_signal(&wp->cv);
	pthread_mutex_unlock(&wp->mu);
}

void workpool_adopt(struct workpool_port *pt, struct wp_job *j)
{
	j->port = pt;
	j->strand = NULL;
	j->status = 0;
	j->next = NULL;
	pt->jobs++;
}

void workpool_complete(struct wp_job *j, int status)
{
	struct workpool_port *pt = j->port;
	struct workpool *wp = pt->wp;
	pthread_mutex_lock(&wp->mu);
	j->status = status;
	if (finish_locked(wp, j))
		uv_async_send(&pt->async);   /* under mu: the port outlives its jobs */
	pthread_mutex_unlock(&wp->mu);
}

struct workpool *workpool_hash_start(int64_t n)
{
	if (n == 0)
		return NULL;
	if (n < 0) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		n = c > 0 ? c : 1;
	}
	struct workpool *wp;
	int rc = workpool_new((unsigned)n, 0, &wp);
	if (rc) {
		LOG_WARN("hash threads not started; hashing on the event loop", "threads=%lld err=%d",
			 (long long)n, rc);
		return NULL;
	}
	for (unsigned i = 0; i < wp->nthreads; i++)
		pthread_setname_np(wp->threads[i], "iolake-hash");   /* for top and tests */
	return wp;
}
