/*
 * kv.c — RocksDB with a group-commit thread and a commit log.
 *
 * Owns: the db handle, write/read options, the commit log (clog), the
 * pending FIFO (mutex + condvar), the commit thread and the checkpoint
 * thread. Invariant: a request's callback is posted only after the
 * commit-log record holding its batch is durable (pwrite + fdatasync in
 * place) and the batch was applied to RocksDB; requests are written and
 * completed in FIFO order.
 * Threads: the commit thread writes; any thread enqueues; reads on the
 * caller; the checkpoint thread only flushes RocksDB's memtable.
 *
 * Durability: groups are applied to RocksDB with its WAL off, so RocksDB
 * holds them durably only once a memtable flush wrote them to a table
 * file. The commit log keeps every record until such a flush covered it:
 * when a quarter of the log is in use, the commit thread asks the
 * checkpoint thread to flush (rocksdb_flush, wait) everything applied so
 * far and, once that returned, frees the log space before that point;
 * if the log fills first, the commit thread waits for it. Each group's
 * batch also puts CLOG_KEY = (seq, end offset) of its own record, so
 * after a crash the table files name the last record they hold (RocksDB
 * flushes memtables in order: what survives is a prefix), and open
 * replays the records after it (clog.h), then flushes. Open-time records
 * (store_kv_write_sync) use RocksDB's synced WAL. A group too large for
 * the log waits until everything before it is flushed, then is written
 * with a synced WAL write (so no older record can be replayed over it).
 * After each of those points (a flush that returned, a synced write) the
 * I/O seam's kv_durable hook runs (io.h), before anything relies on it:
 * the log is trimmed, and the synced write acknowledged, only once it
 * returned 0. The commit log's file I/O and the clock go through the
 * seam too; RocksDB's own files do not.
 *
 * Why copy batches: the C API cannot append one WriteBatch to another, so
 * a group is re-played into a combined batch (rocksdb_writebatch_iterate);
 * the copy is memory-speed, the flush is not.
 * Batching window: after a write that carried several requests, the thread
 * waits (at most min(last flush time, 1 ms)) for their callers to come
 * back before the next write, so N writers share one flush instead of
 * alternating in two half-size cohorts (see gather()). Measured on ext4:
 * ~15 -> ~25-30 requests per flush at 32 in flight, 1.3-2.4x the puts/s.
 */
#include "osd/store/kv.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <endian.h>

#include "common/err.h"
#include "osd/store/clog.h"

/* Longest a write waits for more requests (see gather()). */
#define KV_WINDOW_MAX_NS 1000000u
/* The record the index holds last: value u64 seq, u64 end offset (LE). */
#define CLOG_KEY "\x01clog"
#define CLOG_KEY_LEN (sizeof(CLOG_KEY) - 1)
#define CLOG_FILE "iolake-commit.log"
#define CLOG_DEFAULT_BYTES (64ull << 20)

struct store_kv {
	const struct store_io *io;
	char *dir;                       /* for the kv_durable hook */
	rocksdb_t *db;
	rocksdb_options_t *opts;
	rocksdb_writeoptions_t *wopts;   /* synced: open-time records, oversized groups */
	rocksdb_writeoptions_t *wopts_log; /* WAL off: groups the clog holds */
	rocksdb_readoptions_t *ropts;
	rocksdb_readoptions_t *ropts_mem;  /* read tier: memtables + block cache */
	struct store_clog *clog;         /* commit thread only (after open) */
	size_t clog_key_bytes;           /* what putting CLOG_KEY adds to a batch */
	uint64_t group_cap;              /* most batch bytes taken into one group */
	bool broken;                     /* the clog failed: every write fails */
	uint64_t log_ns;                 /* commit thread: time in clog appends */
	uint64_t log_bytes;              /* ... and the bytes they wrote */
	/* Checkpointer (under mu): the commit thread asks for everything
	 * before log position ck_target to be made durable in RocksDB; the
	 * checkpointer thread does it and publishes ck_done. */
	pthread_t ck_thread;
	pthread_cond_t ck_cv;
	bool ck_want, ck_stop, ck_failed;
	uint64_t ck_target, ck_done;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct store_kv_req *head, *tail;
	uint32_t pending;
	uint32_t max_pending;
	bool stop;
	struct store_kv_stats st; /* under mu */
	store_kv_batch_fn observe; /* set before the first commit */
	void *observe_arg;
};

static void on_done(struct loop_work *w)
{
	struct store_kv_req *req = container_of(w, struct store_kv_req, work);
	req->cb(req, req->status);
}

static void put_cb(void *state, const char *k, size_t klen, const char *v, size_t vlen)
{
	rocksdb_writebatch_put(state, k, klen, v, vlen);
}

static void del_cb(void *state, const char *k, size_t klen)
{
	rocksdb_writebatch_delete(state, k, klen);
}

/*
 * Batching window (under kv->mu). With N writers in flight and one write at
 * a time, requests fall into two cohorts: the one being written and the one
 * that queued meanwhile, each ~N/2, so every flush carries half of what it
 * could. After a write of last_n requests completes, their callers need one
 * round trip (completion -> RPC answer -> next request) to come back; wait
 * up to a fraction of the last flush time for them, so both cohorts share
 * the next flush. The wait ends as soon as last_n more requests than were
 * already queued arrived. One writer (last_n <= 1) never waits here.
 */
static void gather(struct store_kv *kv, uint32_t last_n, uint64_t last_dt)
{
	uint64_t wait_ns = last_dt < KV_WINDOW_MAX_NS ? last_dt : KV_WINDOW_MAX_NS;
	uint32_t want = kv->pending + last_n;
	if (want > kv->max_pending)
		want = kv->max_pending;
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until); /* kv->cv waits on this clock */
	uint64_t ns = (uint64_t)until.tv_nsec + wait_ns;
	until.tv_sec += (time_t)(ns / 1000000000u);
	until.tv_nsec = (long)(ns % 1000000000u);
	while (kv->pending < want && !kv->stop)
		if (pthread_cond_timedwait(&kv->cv, &kv->mu, &until) == ETIMEDOUT)
			break;
}

static size_t batch_bytes(rocksdb_writebatch_t *wb)
{
	size_t n;
	rocksdb_writebatch_data(wb, &n);
	return n;
}

/* RocksDB now holds durably everything written to it before: tell the
 * seam (io.h). 0 or -EIO. */
static int durable(struct store_kv *kv)
{
	if (!kv->io->kv_durable)
		return 0;
	return kv->io->kv_durable(kv->io, kv->db, kv->dir) ? -EIO : 0;
}

/* Make everything written to RocksDB so far durable there: flush the
 * memtable to a table file and wait (group writes skip RocksDB's WAL).
 * Any thread; RocksDB takes writes meanwhile. */
static int persist(struct store_kv *kv)
{
	char *err = NULL;
	rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
	rocksdb_flushoptions_set_wait(fo, 1);
	rocksdb_flush(kv->db, fo, &err);
	rocksdb_flushoptions_destroy(fo);
	if (err) {
		free(err);
		return -EIO;
	}
	return durable(kv);
}

/* A synced write (RocksDB's own WAL, outside the commit log). 0 or -EIO. */
static int write_synced(struct store_kv *kv, rocksdb_writebatch_t *wb)
{
	char *err = NULL;
	rocksdb_write(kv->db, kv->wopts, wb, &err);
	if (err) {
		free(err);
		return -EIO;
	}
	return durable(kv);
}

static void *ck_main(void *arg)
{
	struct store_kv *kv = arg;
	pthread_mutex_lock(&kv->mu);
	for (;;) {
		while (!kv->ck_want && !kv->ck_stop)
			pthread_cond_wait(&kv->ck_cv, &kv->mu);
		if (!kv->ck_want)
			break;
		uint64_t target = kv->ck_target;
		pthread_mutex_unlock(&kv->mu);
		int rc = persist(kv);
		pthread_mutex_lock(&kv->mu);
		if (rc) {
			kv->ck_failed = true;
		} else {
			kv->ck_done = target;
			kv->st.checkpoints++;
		}
		kv->ck_want = false;
		pthread_cond_broadcast(&kv->ck_cv);
	}
	pthread_mutex_unlock(&kv->mu);
	return NULL;
}

/* Under mu, commit thread: ask for a checkpoint of all applied so far. */
static void ck_request(struct store_kv *kv)
{
	if (kv->ck_want)
		return;
	kv->ck_target = store_clog_pos(kv->clog);
	kv->ck_want = true;
	pthread_cond_broadcast(&kv->ck_cv);
}

/* Commit thread: wait until everything applied so far is durable in
 * RocksDB and the log space it used is free. 0 or -EIO. */
static int ck_wait_all(struct store_kv *kv)
{
	pthread_mutex_lock(&kv->mu);
	while (kv->ck_want)
		pthread_cond_wait(&kv->ck_cv, &kv->mu);
	store_clog_trim_to(kv->clog, kv->ck_done);
	if (store_clog_used(kv->clog) && !kv->ck_failed) {
		ck_request(kv);
		while (kv->ck_want)
			pthread_cond_wait(&kv->ck_cv, &kv->mu);
		store_clog_trim_to(kv->clog, kv->ck_done);
	}
	int rc = kv->ck_failed ? -EIO : 0;
	pthread_mutex_unlock(&kv->mu);
	return rc;
}

/* After each group, commit thread: take a finished checkpoint's space
 * back; start one when a quarter of the log is in use, so it runs while
 * the rest fills. */
static void ck_after_group(struct store_kv *kv)
{
	pthread_mutex_lock(&kv->mu);
	store_clog_trim_to(kv->clog, kv->ck_done);
	if (store_clog_used(kv->clog) > store_clog_capacity(kv->clog) / 4)
		ck_request(kv);
	if (kv->ck_failed)
		kv->broken = true;
	pthread_mutex_unlock(&kv->mu);
}

static void put_clog_key(rocksdb_writebatch_t *wb, uint64_t seq, uint64_t end_off)
{
	uint64_t v[2] = { htole64(seq), htole64(end_off) };
	rocksdb_writebatch_put(wb, CLOG_KEY, CLOG_KEY_LEN, (const char *)v, sizeof(v));
}

/* Durably write group (the combined batch of one or more requests).
 * 0 or -EIO. */
static int write_group(struct store_kv *kv, rocksdb_writebatch_t *group)
{
	if (kv->broken)
		return -EIO;
	char *err = NULL;
	size_t len = batch_bytes(group) + kv->clog_key_bytes;
	if (!store_clog_fits(kv->clog, len)) {
		if (ck_wait_all(kv))
			return -EIO;
		if (store_clog_need(len) > store_clog_capacity(kv->clog)) {
			/* Larger than the log: a synced write, after all before
			 * it is durable (replay must never apply an older record
			 * over it). */
			return write_synced(kv, group);
		}
	}
	uint64_t seq, end_off;
	store_clog_next(kv->clog, len, &seq, &end_off);
	put_clog_key(group, seq, end_off);
	size_t got;
	const char *rep = rocksdb_writebatch_data(group, &got);
	if (got != len)
		abort(); /* the WriteBatch encoding is not what open measured */
	uint64_t t0 = kv->io->now_ns(kv->io);
	if (store_clog_append(kv->clog, rep, len)) {
		kv->broken = true; /* the log's state is unknown: stop */
		return -EIO;
	}
	kv->log_ns += kv->io->now_ns(kv->io) - t0;
	kv->log_bytes += len;
	rocksdb_write(kv->db, kv->wopts_log, group, &err);
	if (err) {
		/* The record is durable and replays at the next open; RocksDB
		 * refuses writes after such an error anyway. */
		free(err);
		kv->broken = true;
		return -EIO;
	}
	return 0;
}

/* Take requests from the FIFO (under mu): all of them, or as many as fit
 * in group_cap bytes (at least one). Returns the list and its length. */
static struct store_kv_req *take(struct store_kv *kv, uint32_t *n)
{
	struct store_kv_req *list = kv->head, *last = NULL, *r = list;
	uint64_t bytes = 0;
	uint32_t k = 0;
	for (; r; last = r, r = r->next, k++) {
		bytes += batch_bytes(r->wb);
		if (k > 0 && bytes > kv->group_cap)
			break;
	}
	if (r) {
		last->next = NULL;
		kv->head = r;
	} else {
		kv->head = kv->tail = NULL;
	}
	kv->pending -= k;
	*n = k;
	return list;
}

static void *commit_main(void *arg)
{
	struct store_kv *kv = arg;
	rocksdb_writebatch_t *group = rocksdb_writebatch_create();
	uint32_t last_n = 0;    /* requests the previous write completed */
	uint64_t last_dt = 0;   /* and how long it took */
	for (;;) {
		pthread_mutex_lock(&kv->mu);
		if (last_n > 1 && !kv->stop)
			gather(kv, last_n, last_dt);
		while (!kv->head && !kv->stop)
			pthread_cond_wait(&kv->cv, &kv->mu);
		uint32_t n = 0;
		struct store_kv_req *list = take(kv, &n);
		pthread_mutex_unlock(&kv->mu);
		if (!list)
			break; /* stop requested and nothing left */

		rocksdb_writebatch_clear(group);
		for (struct store_kv_req *r = list; r; r = r->next)
			rocksdb_writebatch_iterate(r->wb, group, put_cb, del_cb);
		uint64_t t0 = kv->io->now_ns(kv->io);
		int status = write_group(kv, group);
		uint64_t dt = kv->io->now_ns(kv->io) - t0;
		last_n = n;
		last_dt = dt;

		pthread_mutex_lock(&kv->mu);
		kv->st.commits += n;
		kv->st.batches++;
		if (n > kv->st.max_batch)
			kv->st.max_batch = n;
		kv->st.flush_ns_total += dt;
		kv->st.log_ns_total = kv->log_ns;
		kv->st.log_bytes = kv->log_bytes;
		if (dt > kv->st.flush_ns_max)
			kv->st.flush_ns_max = dt;
		if (status)
			kv->st.errors++;
		pthread_mutex_unlock(&kv->mu);
		if (kv->observe)
			kv->observe(kv->observe_arg, n, dt);

		for (struct store_kv_req *r = list, *next; r; r = next) {
			next = r->next; /* r may be freed once posted */
			r->status = status;
			/* The owner keeps its queue open until its requests
			 * completed (store_kv_close's contract). */
			loop_queue_post(r->done_q, &r->work, on_done);
		}
		ck_after_group(kv);
	}
	rocksdb_writebatch_destroy(group);
	return NULL;
}

/* Let the checkpointer finish what it was asked, and join it. */
static void stop_ck(struct store_kv *kv)
{
	pthread_mutex_lock(&kv->mu);
	kv->ck_stop = true;
	pthread_cond_broadcast(&kv->ck_cv);
	pthread_mutex_unlock(&kv->mu);
	pthread_join(kv->ck_thread, NULL);
}

struct replay_ctx {
	struct store_kv *kv;
	char *err;
	size_t errlen;
};

static int replay_one(void *arg, uint64_t seq, uint64_t end_off, const void *payload, size_t len)
{
	(void)end_off; /* the payload carries its own CLOG_KEY */
	struct replay_ctx *c = arg;
	char *err = NULL;
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create_from(payload, len);
	rocksdb_write(c->kv->db, c->kv->wopts_log, wb, &err);
	rocksdb_writebatch_destroy(wb);
	if (err) {
		snprintf(c->err, c->errlen, "replaying commit log record %llu: %s",
			 (unsigned long long)seq, err);
		free(err);
		return -EIO;
	}
	return 0;
}

/* Open the commit log under dir and replay what RocksDB lacks. */
static int open_clog(struct store_kv *kv, const char *dir, uint64_t bytes, char *errbuf,
		     size_t errlen)
{
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	size_t empty = batch_bytes(wb);
	put_clog_key(wb, 0, 0);
	kv->clog_key_bytes = batch_bytes(wb) - empty;
	rocksdb_writebatch_destroy(wb);

	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", dir, CLOG_FILE);
	int rc = store_clog_open(kv->io, path, bytes ? bytes : CLOG_DEFAULT_BYTES, &kv->clog,
				 errbuf, errlen);
	if (rc)
		return rc;
	kv->group_cap = store_clog_capacity(kv->clog) / 4;
	uint64_t seq = 0, end_off = 0;
	char *v;
	size_t vlen;
	rc = store_kv_get(kv, CLOG_KEY, CLOG_KEY_LEN, &v, &vlen);
	if (rc == 0) {
		uint64_t p[2] = { 0, 0 };
		if (vlen == sizeof(p))
			memcpy(p, v, sizeof(p));
		free(v);
		seq = le64toh(p[0]);
		end_off = le64toh(p[1]);
	} else if (rc != IOL_ENOT_FOUND) {
		snprintf(errbuf, errlen, "meta dir %s: reading the commit log position", dir);
		return rc;
	}
	struct replay_ctx c = { kv, errbuf, errlen };
	rc = store_clog_replay(kv->clog, seq, end_off, replay_one, &c);
	if (rc < 0) {
		if (rc != -EIO)
			snprintf(errbuf, errlen, "commit log %s: %s", path, iol_strerror(rc));
		return rc;
	}
	kv->st.replayed = (uint64_t)rc;
	/* What was replayed (in the memtable only) must be durable before the
	 * log's space is reused. */
	if (persist(kv)) {
		snprintf(errbuf, errlen, "meta dir %s: flushing the replayed records failed", dir);
		return -EIO;
	}
	return 0;
}

int store_kv_open(const struct store_io *io, const char *dir, uint32_t max_pending,
		  uint64_t clog_bytes, rocksdb_cache_t *cache, uint64_t write_buffer_bytes,
		  struct store_kv **out, char *errbuf, size_t errlen)
{
	int rc = -ENOMEM;
	struct store_kv *kv = calloc(1, sizeof(*kv));
	if (!kv)
		goto out;
	kv->io = store_io_or_default(io);
	kv->dir = strdup(dir);
	if (!kv->dir) {
		free(kv);
		goto out;
	}
	kv->max_pending = max_pending ? max_pending : 4096;
	kv->opts = rocksdb_options_create();
	rocksdb_options_set_create_if_missing(kv->opts, 1);
	/* Shard index values are small; inline shards (<= 64 KiB by default)
	 * are larger than a 4 KiB block, so use 16 KiB blocks to keep most
	 * inline values within one block. */
	rocksdb_block_based_table_options_t *bbt = rocksdb_block_based_options_create();
	rocksdb_block_based_options_set_block_size(bbt, 16 << 10);
	/* The process's shared cache (cache.h) when given: flushed inline
	 * shards stay in memory across all the stores of an aio. */
	if (cache)
		rocksdb_block_based_options_set_block_cache(bbt, cache);
	/* Most puts name a key that does not exist yet (a new object id):
	 * a bloom filter answers their index lookup without reading a
	 * table block. */
	rocksdb_block_based_options_set_filter_policy(bbt,
						      rocksdb_filterpolicy_create_bloom_full(10));
	rocksdb_options_set_block_based_table_factory(kv->opts, bbt);
	rocksdb_block_based_options_destroy(bbt);
	/* Shard bytes are erasure-coded object data, as a rule incompressible:
	 * compressing them cost the loop thread a snappy decompression per
	 * index lookup and the compactions a compression per inline byte. */
	rocksdb_options_set_compression(kv->opts, rocksdb_no_compression);
	/* A whole-key bloom filter on each memtable: a shard read whose key
	 * was already flushed (the checkpoint flushes every quarter of the
	 * commit log, so most of a working set sits in table files) skips
	 * the skip-list search of the memtables, nodes spread over 16 KiB
	 * values, a cache miss each: 7 % of a GET 64 KiB's gateway CPU
	 * (docs/performance.md, branch get64k). 1 % of the 64 MiB write
	 * buffer: 640 KiB per memtable, ~10 bits per key down to 8 KiB of
	 * memtable per key. Iterators do not use it (no prefix extractor). */
	rocksdb_options_set_memtable_whole_key_filtering(kv->opts, 1);
	rocksdb_options_set_memtable_prefix_bloom_size_ratio(kv->opts, 0.01);
	/* The memtables are most of a store's memory when shards are inline
	 * (they hold the shard bytes until a flush): a process with several
	 * stores (aio's six) bounds them here, two per store at most. The
	 * checkpoint flushes at a quarter of the commit log anyway; this bound
	 * holds when that flush falls behind (docs/performance.md, "rssmix"). */
	if (write_buffer_bytes) {
		rocksdb_options_set_write_buffer_size(kv->opts, write_buffer_bytes);
		rocksdb_options_set_max_write_buffer_number(kv->opts, 2);
	}
	kv->wopts = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(kv->wopts, 1);
	kv->wopts_log = rocksdb_writeoptions_create();
	/* The commit log is the WAL of these writes (see the top comment). */
	rocksdb_writeoptions_disable_WAL(kv->wopts_log, 1);
	kv->ropts = rocksdb_readoptions_create();
	kv->ropts_mem = rocksdb_readoptions_create();
	rocksdb_readoptions_set_read_tier(kv->ropts_mem, 1 /* kBlockCacheTier */);

	char *err = NULL;
	kv->db = rocksdb_open(kv->opts, dir, &err);
	if (err) {
		snprintf(errbuf, errlen, "meta dir %s: %s", dir, err);
		free(err);
		rc = -EIO;
		goto out_opts;
	}
	pthread_mutex_init(&kv->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&kv->cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&kv->ck_cv, NULL);
	rc = open_clog(kv, dir, clog_bytes, errbuf, errlen);
	if (rc)
		goto out_db;
	int prc = pthread_create(&kv->ck_thread, NULL, ck_main, kv);
	if (prc) {
		rc = -prc;
		snprintf(errbuf, errlen, "checkpoint thread: %s", strerror(prc));
		goto out_db;
	}
	pthread_setname_np(kv->ck_thread, "store-ckpt");
	prc = pthread_create(&kv->thread, NULL, commit_main, kv);
	if (prc) {
		rc = -prc;
		snprintf(errbuf, errlen, "commit thread: %s", strerror(prc));
		goto out_ck;
	}
	pthread_setname_np(kv->thread, "store-commit");
	*out = kv;
	return 0;

out_ck:
	stop_ck(kv);
out_db:
	store_clog_close(kv->clog);
	pthread_cond_destroy(&kv->ck_cv);
	pthread_cond_destroy(&kv->cv);
	pthread_mutex_destroy(&kv->mu);
	rocksdb_close(kv->db);
out_opts:
	rocksdb_readoptions_destroy(kv->ropts);
	rocksdb_readoptions_destroy(kv->ropts_mem);
	rocksdb_writeoptions_destroy(kv->wopts_log);
	rocksdb_writeoptions_destroy(kv->wopts);
	rocksdb_options_destroy(kv->opts);
	free(kv->dir);
	free(kv);
out:
	return rc;
}

int store_kv_commit(struct store_kv *kv, struct store_kv_req *req, rocksdb_writebatch_t *wb,
		    struct loop_queue *done_q, store_kv_cb cb)
{
	req->wb = wb;
	req->done_q = done_q;
	req->cb = cb;
	req->status = 0;
	req->next = NULL;
	req->enq_ns = 0;
	pthread_mutex_lock(&kv->mu);
	if (kv->stop) {
		pthread_mutex_unlock(&kv->mu);
		return -ESHUTDOWN;
	}
	if (kv->pending >= kv->max_pending) {
		pthread_mutex_unlock(&kv->mu);
		return -EAGAIN;
	}
	if (kv->tail)
		kv->tail->next = req;
	else
		kv->head = req;
	kv->tail = req;
	kv->pending++;
	pthread_cond_signal(&kv->cv);
	pthread_mutex_unlock(&kv->mu);
	return 0;
}

int store_kv_write_sync(struct store_kv *kv, rocksdb_writebatch_t *wb)
{
	return write_synced(kv, wb);
}

int store_kv_get(struct store_kv *kv, const void *key, size_t klen, char **val, size_t *vlen)
{
	char *err = NULL;
	char *v = rocksdb_get(kv->db, kv->ropts, key, klen, vlen, &err);
	if (err) {
		free(err);
		return -EIO;
	}
	if (!v)
		return IOL_ENOT_FOUND;
	*val = v;
	return 0;
}

static int get_pinned(struct store_kv *kv, const rocksdb_readoptions_t *ro, const void *key,
		      size_t klen, rocksdb_pinnableslice_t **pin, const char **val, size_t *vlen)
{
	char *err = NULL;
	rocksdb_pinnableslice_t *p = rocksdb_get_pinned(kv->db, ro, key, klen, &err);
	if (err) {
		/* kBlockCacheTier answers Status::Incomplete when it would
		 * have to read a file. */
		int rc = strstr(err, "incomplete") || strstr(err, "Incomplete") ? -EWOULDBLOCK : -EIO;
		free(err);
		rocksdb_pinnableslice_destroy(p);
		return rc;
	}
	if (!p)
		return IOL_ENOT_FOUND;
	*val = rocksdb_pinnableslice_value(p, vlen);
	*pin = p;
	return 0;
}

int store_kv_get_pinned(struct store_kv *kv, const void *key, size_t klen,
			rocksdb_pinnableslice_t **pin, const char **val, size_t *vlen)
{
	return get_pinned(kv, kv->ropts, key, klen, pin, val, vlen);
}

int store_kv_get_pinned_mem(struct store_kv *kv, const void *key, size_t klen,
			    rocksdb_pinnableslice_t **pin, const char **val, size_t *vlen)
{
	return get_pinned(kv, kv->ropts_mem, key, klen, pin, val, vlen);
}

rocksdb_t *store_kv_db(struct store_kv *kv)
{
	return kv->db;
}

const rocksdb_readoptions_t *store_kv_ropts(struct store_kv *kv)
{
	return kv->ropts;
}

void store_kv_stats(struct store_kv *kv, struct store_kv_stats *out)
{
	pthread_mutex_lock(&kv->mu);
	*out = kv->st;
	out->pending = kv->pending;
	pthread_mutex_unlock(&kv->mu);
	/* Outside mu: RocksDB takes its own mutex. A property it cannot
	 * read leaves 0. */
	uint64_t v;
	out->memtable_bytes = !rocksdb_property_int(kv->db, "rocksdb.size-all-mem-tables", &v) ? v : 0;
	out->memtables_imm = !rocksdb_property_int(kv->db, "rocksdb.num-immutable-mem-table", &v) ? v : 0;
	out->readers_bytes = !rocksdb_property_int(kv->db, "rocksdb.estimate-table-readers-mem", &v) ? v : 0;
}

void store_kv_set_observer(struct store_kv *kv, store_kv_batch_fn fn, void *arg)
{
	pthread_mutex_lock(&kv->mu);
	kv->observe = fn;
	kv->observe_arg = arg;
	pthread_mutex_unlock(&kv->mu);
}

void store_kv_close(struct store_kv *kv)
{
	if (!kv)
		return;
	pthread_mutex_lock(&kv->mu);
	kv->stop = true;
	pthread_cond_signal(&kv->cv);
	pthread_mutex_unlock(&kv->mu);
	pthread_join(kv->thread, NULL);
	stop_ck(kv);
	if (!kv->broken)
		persist(kv); /* a clean stop leaves nothing to replay */
	store_clog_close(kv->clog);
	rocksdb_close(kv->db);
	rocksdb_readoptions_destroy(kv->ropts);
	rocksdb_readoptions_destroy(kv->ropts_mem);
	rocksdb_writeoptions_destroy(kv->wopts_log);
	rocksdb_writeoptions_destroy(kv->wopts);
	rocksdb_options_destroy(kv->opts);
	pthread_cond_destroy(&kv->ck_cv);
	pthread_cond_destroy(&kv->cv);
	pthread_mutex_destroy(&kv->mu);
	free(kv->dir);
	free(kv);
}

int store_kv_destroy(const char *dir, char *errbuf, size_t errlen)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", dir, CLOG_FILE);
	if (unlink(path) < 0 && errno != ENOENT) {
		snprintf(errbuf, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	rocksdb_options_t *o = rocksdb_options_create();
	char *err = NULL;
	rocksdb_destroy_db(o, dir, &err);
	rocksdb_options_destroy(o);
	if (err) {
		snprintf(errbuf, errlen, "meta dir %s: %s", dir, err);
		free(err);
		return -EIO;
	}
	return 0;
}
