/*
 * kv.h — the store's RocksDB metadata log with group commit.
 *
 * Owns: the RocksDB instance under the meta dir, the commit log beside it
 * (meta_dir/iolake-commit.log, see clog.h) and a dedicated commit thread.
 * Callers on any thread enqueue a write batch with a completion; the
 * commit thread takes every batch pending at that moment (after a short
 * window for more when the previous write carried several; see kv.c),
 * appends them as ONE commit-log record (one in-place pwrite + fdatasync
 * for all of them), applies them as one unsynced rocksdb_write, and posts
 * each completion to the loop_queue the caller named, in enqueue order.
 * Batches enqueued by one thread are applied and completed in that
 * thread's order. Open replays the log records RocksDB lost in a crash.
 *
 * Reads (get, iterators) go straight to RocksDB on the caller's thread.
 * Does not: know the record formats, or log.
 */
#ifndef OSD_STORE_KV_H
#define OSD_STORE_KV_H

#include <rocksdb/c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/loop.h"
#include "osd/store/io.h"

struct store_kv;
struct store_kv_req;
typedef void (*store_kv_cb)(struct store_kv_req *req, int status);

/* Owned by the caller from store_kv_commit until its callback. */
struct store_kv_req {
	void *data;                     /* the caller's */
	/* private */
	struct loop_work work;
	rocksdb_writebatch_t *wb;
	struct loop_queue *done_q;
	store_kv_cb cb;
	int status;
	uint64_t enq_ns;
	struct store_kv_req *next;
};

struct store_kv_stats {
	uint64_t commits;         /* requests completed */
	uint64_t batches;         /* group writes (= commit-log flushes) */
	uint64_t max_batch;       /* most requests in one write */
	uint64_t flush_ns_total;  /* summed time writing groups (log + RocksDB) */
	uint64_t log_ns_total;    /* ... of which appending to the commit log */
	uint64_t log_bytes;       /* bytes appended to the commit log */
	uint64_t flush_ns_max;
	uint64_t errors;          /* failed writes */
	uint64_t checkpoints;     /* RocksDB WAL syncs that freed the log */
	uint64_t replayed;        /* log records replayed at open */
	uint32_t pending;         /* enqueued, not yet taken */
	/* RocksDB's own memory, read from its properties at the call: */
	uint64_t memtable_bytes;  /* active + unflushed + pinned memtables */
	uint64_t memtables_imm;   /* immutable memtables not flushed yet */
	uint64_t readers_bytes;   /* table readers (indexes, filters) outside the cache */
};

/*
 * Open (creating if missing) the RocksDB under dir and its commit log
 * (created clog_bytes large if missing, 0: 64 MiB; an existing log keeps
 * its size), replay the log records RocksDB lacks, sync, and start the
 * commit thread. The log's I/O, the clock and the kv_durable hook go
 * through io (NULL: the default), which must outlive kv. max_pending
 * bounds enqueued-but-untaken requests (0: 4096). cache: the table blocks'
 * cache (shared with other stores, cache.h; NULL: RocksDB's default, one
 * of kv's own). write_buffer_bytes: each memtable's size (RocksDB keeps at
 * most two; writes wait while both are full and one flushes); 0: RocksDB's
 * 64 MiB. Returns 0, or -EIO /
 * -errno / IOL_ECORRUPT (bad commit log) with a message in err.
 */
int store_kv_open(const struct store_io *io, const char *dir, uint32_t max_pending,
		  uint64_t clog_bytes, rocksdb_cache_t *cache, uint64_t write_buffer_bytes,
		  struct store_kv **out, char *err, size_t errlen);

/*
 * Enqueue wb (the caller keeps ownership; it must stay unchanged until cb)
 * for a synced commit. Any thread. cb(req, 0 or -EIO) runs on done_q's
 * loop after the write is durable. Returns 0, -EAGAIN when max_pending
 * requests wait already, -ESHUTDOWN after close began; cb is then not
 * called.
 */
int store_kv_commit(struct store_kv *kv, struct store_kv_req *req, rocksdb_writebatch_t *wb,
		    struct loop_queue *done_q, store_kv_cb cb);

/* A synced write on the caller's thread, outside the group commit: for
 * open-time records (identity) before any loop work. 0 or -EIO. */
int store_kv_write_sync(struct store_kv *kv, rocksdb_writebatch_t *wb);

/* Point read. Returns 0 with *val (free with free()) and *vlen,
 * IOL_ENOT_FOUND, or -EIO. */
int store_kv_get(struct store_kv *kv, const void *key, size_t klen, char **val, size_t *vlen);
/* store_kv_get without the copy into a malloc'd value: *pin holds the
 * value (*val, *vlen) — pinned in RocksDB's block cache, or RocksDB's own
 * copy of a memtable value — until rocksdb_pinnableslice_destroy(*pin),
 * which any thread may call. Same returns. */
int store_kv_get_pinned(struct store_kv *kv, const void *key, size_t klen,
			rocksdb_pinnableslice_t **pin, const char **val, size_t *vlen);
/* store_kv_get_pinned from memory only (RocksDB's memtables and block
 * cache, read tier kBlockCacheTier): -EWOULDBLOCK when the value, or a
 * table block or table reader needed to find it, would have to be read
 * from a file. Never does file I/O; any thread. */
int store_kv_get_pinned_mem(struct store_kv *kv, const void *key, size_t klen,
			    rocksdb_pinnableslice_t **pin, const char **val, size_t *vlen);

/* The database and default read options, for iterators and multi-get by
 * the store (reads only; all writes go through store_kv_commit). */
rocksdb_t *store_kv_db(struct store_kv *kv);
const rocksdb_readoptions_t *store_kv_ropts(struct store_kv *kv);

void store_kv_stats(struct store_kv *kv, struct store_kv_stats *out);

/* Called on the commit thread after each synced write with the number of
 * requests it carried and the time spent in rocksdb_write (for metrics
 * histograms: it must be cheap, lock-free and must not call back into kv).
 * Set before the first commit; fn NULL turns it off. */
typedef void (*store_kv_batch_fn)(void *arg, uint32_t requests, uint64_t flush_ns);
void store_kv_set_observer(struct store_kv *kv, store_kv_batch_fn fn, void *arg);

/*
 * Stop accepting commits, let the thread write and complete everything
 * already enqueued, join it, close RocksDB. Completions are posted to
 * their loop_queues; those must stay open until they ran. Not from the
 * commit thread.
 */
void store_kv_close(struct store_kv *kv);

/* Delete a whole database directory and its commit log (used when a
 * device is reformatted, so its old index cannot outlive it). 0, -EIO or
 * -errno. */
int store_kv_destroy(const char *dir, char *err, size_t errlen);

#endif
