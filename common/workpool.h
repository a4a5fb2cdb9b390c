/*
 * workpool.h — a small fixed pool of worker threads for CPU work that must
 * not stall an event loop (MD5 and SHA-256 of large bodies), completing
 * each job back on the loop that submitted it.
 *
 * Ownership and threading contract:
 *  - A job (struct wp_job) is embedded in its owner's state and owned by
 *    the owner again only when its done callback runs. Between submit and
 *    done nobody but the pool touches it, and whatever its run reads (a
 *    buffer) must stay alive and unchanged: the owner holds it for the
 *    job (a buf reference, released in done). The pool allocates nothing
 *    per job.
 *  - run(j) runs on a worker thread (or, see below, on the submitting
 *    thread); done(j, status) always runs on the loop of the port the job
 *    was submitted through, from that port's uv_async_t callback, never
 *    inside workpool_submit. Completions are batched: one wake-up of the
 *    loop delivers every job finished since the last. status is 0, or
 *    -ECANCELED when the pool stopped before run (run was not called).
 *  - A strand (struct wp_strand, owned by the caller, one loop) orders
 *    jobs: a strand's jobs run one at a time, in submit order, their
 *    done callbacks come in the same order, and each run sees the memory
 *    effects of the previous one (the pool's mutex). Jobs of different
 *    strands (or none) run in parallel. A strand may go away once its
 *    last job's done has run.
 *  - One port (struct workpool_port) per loop that submits; a port and its
 *    strands belong to that loop's thread. Close a port only when none of
 *    its jobs is outstanding (workpool_port_jobs() == 0).
 *  - The run queue is bounded (max_jobs ready to run). A job submitted
 *    when it is full, when the pool has no threads (--hash-threads 0) or
 *    after workpool_stop runs at once on the submitting thread; its done
 *    still comes from the port, later. A job of a strand that has one in
 *    flight waits on the strand instead, outside the bound: a strand's
 *    jobs are bounded by their owner (its embedded jobs).
 *
 * Does not: know what a job computes, allocate buffers, time out jobs.
 */
#ifndef COMMON_WORKPOOL_H
#define COMMON_WORKPOOL_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "common/flags.h"

struct workpool;
struct workpool_port;
struct wp_job;

typedef void (*wp_run_fn)(struct wp_job *j);
typedef void (*wp_done_fn)(struct wp_job *j, int status);

struct wp_strand {
	struct wp_job *head, *tail;   /* waiting behind the one in flight */
	bool active;                  /* a job of it queued or running */
};

struct wp_job {
	wp_run_fn run;
	wp_done_fn done;
	/* The pool's, set by workpool_submit. */
	struct workpool_port *port;
	struct wp_strand *strand;
	struct wp_job *next;
	int status;
};

/* Pool of nthreads workers (0: none, every job runs inline) with a run
 * queue of max_jobs (0: 1024). 0 and *out, -ENOMEM, or -errno of
 * pthread_create. */
int workpool_new(unsigned nthreads, unsigned max_jobs, struct workpool **out);

/* Worker threads (what workpool_new got). */
unsigned workpool_threads(const struct workpool *wp);

/* workpool_stop has begun (any thread; a job may poll it to end early). */
bool workpool_stopping(struct workpool *wp);

/* Stop: jobs not started are completed with -ECANCELED (through their
 * ports: done runs on their loops later), jobs running finish, the
 * threads are joined. Later submits run inline. Any thread; idempotent. */
void workpool_stop(struct workpool *wp);

/* workpool_stop, then free. Every port must be closed (their close
 * callbacks need not have run). */
void workpool_free(struct workpool *wp);

/* A port on loop (the calling thread's). NULL: out of memory or
 * uv_async_init failed. */
struct workpool_port *workpool_port_new(struct workpool *wp, uv_loop_t *loop);

/* Close and free (after a loop turn). Requires workpool_port_jobs == 0.
 * NULL is ignored. */
void workpool_port_close(struct workpool_port *pt);

/* Jobs submitted through pt whose done has not run yet. */
unsigned workpool_port_jobs(const struct workpool_port *pt);

/* The port's pool. */
struct workpool *workpool_port_pool(const struct workpool_port *pt);

/* Submit j (run and done set by the caller) through pt, on strand s
 * (NULL: unordered). Cannot fail; see the contract above. */
void workpool_submit(struct workpool_port *pt, struct wp_strand *s, struct wp_job *j);

/* A job that another engine runs instead of this pool's workers (the MD5
 * lanes of common/md5_svc): counted on pt (workpool_port_jobs) from now
 * until its done has run on pt's loop, which workpool_complete schedules.
 * j->done set by the caller; j runs on no strand. pt's loop thread only. */
void workpool_adopt(struct workpool_port *pt, struct wp_job *j);

/* An adopted job finished with status: its done runs on its port's loop,
 * batched like the workers' jobs. Any thread; once per adopt. */
void workpool_complete(struct wp_job *j, int status);

/* --hash-threads N: the worker threads that hash large request bodies
 * (0: hash on the event loop; default: one per core). The variable is an
 * int64_t that starts at -1 (the default). */
#define WORKPOOL_HASH_FLAG(var)                                                        \
	{ .name = "hash-threads", .type = FLAG_INT64, .dst = &(var), .min = -1,       \
	  .max = 256, .metavar = "N",                                                    \
	  .help = "threads that hash large request bodies (MD5, SHA-256) off the "      \
		  "event loop (0: on the loop; -1, the default: one per core)" }

/* The pool for --hash-threads n (-1: one per core). NULL when n is 0 (no
 * pool: hash inline) or on failure (logged; hashing stays inline). */
struct workpool *workpool_hash_start(int64_t n);

#endif
