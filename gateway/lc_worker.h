/*
 * lc_worker.h — the bucket lifecycle worker (issue 17): applies each
 * bucket's lifecycle rules (lc_rule) in the background, in bounded
 * batches, through the ordinary meta ops a client's delete uses.
 *
 * A round, every interval_ms: ListBuckets; for each bucket with a
 * lifecycle configuration, one pass from where its cursor
 * (Bucket.lc_cursor) stands: phase 0 walks the bucket's versions
 * (ListVersions, key range by key range, `batch` entries a page) and
 * expires current versions (a delete marker in a versioned bucket, a
 * delete otherwise), noncurrent versions (by version id) and lone expired
 * delete markers; phase 1 walks the multipart uploads (ListUploads) and
 * aborts the stale ones. After each batch's ops are answered the cursor
 * is committed (LifecycleAdvance, conditioned on its seq): a worker that
 * dies mid-pass leaves the cursor at its last committed batch, and the
 * next worker redoes at most one batch (its deletes are conditioned on
 * the generations listed, so a redo is harmless).
 *
 * One worker at a time, across the cluster: the cursor carries its
 * holder and a lease (lease_ms, renewed by each batch, released at the end
 * of a pass); a worker leaves its round to another that holds any bucket,
 * skips a bucket another holds, and any two advances race on seq, so the
 * loser stops (two rounds starting at once may overlap, on different
 * buckets only). Unlike gw_gc (whose deletes are idempotent, so any number
 * of gateways may run it at once), two lifecycle workers on one bucket
 * could each add a delete marker: hence the lease.
 *
 * Rate: one batch at a time per worker, `window` ops in flight, pause_ms
 * between batches: it never has more than window ops next to the S3
 * traffic. Ops meta refuses (object lock; anything but OK, NOT_FOUND or
 * CONFLICT) are counted and skipped, never retried within the pass.
 *
 * Thread: the gateway loop. Memory: one bucket list and one page.
 */
#ifndef GATEWAY_LC_WORKER_H
#define GATEWAY_LC_WORKER_H

#include <stdint.h>
#include <uv.h>

#include "common/flags.h"
#include "common/metrics.h"
#include "meta/client.h"

/* The two flags iolake-gw and iolake-aio share (their values go to
 * s3_ops_cfg.lc_interval_ms and .lc_day_ms): the worker's period, and the
 * test clock (off unless given). */
#define LC_FLAGS(interval_ms, day_seconds)                                                  \
	{ .name = "lifecycle-interval", .type = FLAG_DURATION, .dst = &(interval_ms),         \
	  .max = 86400000, .help = "between rounds of the lifecycle worker (0: no worker)" },  \
	{ .name = "debug-lifecycle-day-seconds", .type = FLAG_UINT64, .dst = &(day_seconds),   \
	  .metavar = "N", .help = "tests only: N seconds count as one day for lifecycle "       \
		  "rules (0: real days)" }

struct lc_worker_opts {
	uint32_t interval_ms;   /* between rounds (> 0) */
	uint64_t day_ms;        /* a lifecycle day; 0: 86,400,000 */
	uint32_t batch;         /* entries a page; 0: 200 */
	uint32_t window;        /* ops in flight; 0: 16 */
	uint32_t pause_ms;      /* between batches; 0: 5 */
	uint32_t lease_ms;      /* hold on a bucket; 0: 60,000 */
	/* Who holds a bucket's cursor: stable across a restart of this
	 * gateway (its host name and S3 address), so a restarted gateway
	 * resumes its own pass at once instead of waiting out its old lease;
	 * NULL: the meta client's random id. At most 63 bytes are kept. */
	const char *holder;
};

struct lc_worker;

/* Start: the first round after interval_ms. 0 and *out, -EINVAL, -ENOMEM.
 * reg: where its counters go (NULL: none). */
int lc_worker_start(uv_loop_t *loop, struct meta_client *mc, struct metrics_registry *reg,
		    const struct lc_worker_opts *opts, struct lc_worker **out);

/* A gateway's holder name (opts.holder): "<host name>/<S3 address>" into
 * out (cap bytes, NUL-terminated, cut to fit). Two gateways never share
 * one: no two can listen on one address of one host. */
void lc_worker_holder_name(char *out, size_t cap, const char *s3_listen);

/* Stop; freed once its calls are answered (close the meta client after:
 * they are answered with IOL_ESHUTDOWN then). NULL is ignored. */
void lc_worker_close(struct lc_worker *w);

#endif
