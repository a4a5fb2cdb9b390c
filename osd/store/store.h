/*
 * store.h — the OSD's shard store: the one header of osd/store/ that the
 * service layer includes.
 *
 * A store holds shards keyed by (pg, object id, shard index) on one device
 * (data extents, io_uring O_DIRECT) and one RocksDB (the index, and small
 * shards inline) whose writes are made durable by a commit log in the
 * meta dir (kv.h, clog.h). It runs on one libuv loop, the owner's: every call is
 * made on that loop's thread and every callback runs there, never from
 * inside the call that started it.
 *
 * Durability: a put or delete callback with status 0 means the change is
 * on stable storage (data fdatasync'ed, then the index record written in a
 * group commit: one fdatasync'ed commit-log record per group). A crash before that leaves the previous state,
 * never a half-written shard: a shard is visible only through its index
 * record, written last.
 *
 * Requests follow one rule: store_x() returns 0 and later calls its
 * callback exactly once, or returns a negative error now and never calls
 * it. The request struct belongs to the caller until the callback.
 *
 * Every read, write and flush of the device and the commit log, and the
 * clock, go through the I/O seam named in store_opts.io (io.h), so a test
 * can fail, delay or drop them; RocksDB's own files do not (kv.h).
 *
 * Index reads (get's lookup, stat, stat_many, list) are synchronous
 * RocksDB reads on the loop thread (memtable / block cache; they can block
 * on a cache miss). Does not log: errors come back as codes and messages.
 */
#ifndef OSD_STORE_STORE_H
#define OSD_STORE_STORE_H

#include <rocksdb/c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/buf.h"
#include "common/loop.h"
#include "osd/store/dev.h"
#include "osd/store/io.h"
#include "osd/store/kv.h"
#include "osd/store/rec.h"

struct store;

/* Optional hooks for metrics (see store_opts.observer). */
struct store_observer {
	/* On kv's commit thread, after each group commit: requests in it and
	 * time to write it (commit log + RocksDB). Lock-free and cheap. */
	void (*kv_batch)(void *arg, uint32_t requests, uint64_t flush_ns);
	/* On the loop, after each device fdatasync: puts it covered and its
	 * latency. */
	void (*data_flush)(void *arg, uint32_t puts, uint64_t flush_ns);
	void *arg;
};

struct store_cache;

struct store_opts {
	const char *device_path;    /* block device or file (required) */
	uint64_t create_size;       /* >0: create device_path as a file this
	                             * size if missing (and format it) */
	bool create_sparse;         /* ... as a sparse file, not preallocated */
	const char *meta_dir;       /* RocksDB directory (created if missing) */
	uint8_t cluster_id[16];
	uint32_t osd_id;
	bool format;                /* format a device without a superblock */
	bool force;                 /* with format: overwrite a foreign one */
	uint32_t inline_max_bytes;  /* shards <= this go inline; 0: 64 KiB */
	uint64_t max_shard_bytes;   /* larger puts fail IOL_ETOO_LARGE; 0: 64 MiB */
	uint32_t queue_depth;       /* io_uring entries; 0: 128 */
	uint32_t max_inflight;      /* puts+deletes+gets in flight; 0: 1024 */
	uint64_t commit_log_bytes;  /* size of a new commit log; 0: 64 MiB */
	uint64_t write_buffer_bytes; /* each of the index's memtables (at most
	                             * two); 0: RocksDB's 64 MiB */
	struct store_cache *cache;  /* block cache shared with other stores
	                             * (cache.h); NULL: RocksDB's default of
	                             * the store's own. Must outlive the store. */
	struct store_observer observer; /* hooks may be NULL */
	const struct store_io *io;  /* the I/O seam (io.h); NULL: the real
	                             * one. Must outlive the store. */
};

/* Metadata of one shard. */
struct store_stat {
	uint64_t length;
	uint32_t crc;          /* crc32c of the whole shard */
	bool is_inline;
	uint64_t block;        /* extent: first block of the data area */
	uint32_t blocks;
};

struct store_space {
	uint64_t total_bytes;     /* data area */
	uint64_t used_bytes;      /* extents named by committed index entries */
	uint64_t reserved_bytes;  /* extents of writes in flight */
	uint64_t free_bytes;      /* total - used - reserved */
	uint64_t inline_bytes;    /* shard bytes held inline in committed index
	                           * records (in the meta dir, not the data area) */
};

struct store_stats {
	uint64_t puts, puts_inline, gets, deletes;
	uint64_t put_bytes, get_bytes;
	uint64_t checksum_errors;
	uint64_t data_flushes;    /* fdatasyncs of the device */
	struct store_kv_stats kv;
	struct store_dev_stats dev;
};

struct store_put_req;
struct store_get_req;
struct store_del_req;
typedef void (*store_put_cb)(struct store_put_req *req, int status);
typedef void (*store_get_cb)(struct store_get_req *req, int status);
typedef void (*store_del_cb)(struct store_del_req *req, int status);

/* Internal bookkeeping shared by the request kinds. */
struct store_mut;

struct store_put_req {
	void *data;                   /* the caller's */
	/* result, set by store_put when it returns 0 */
	bool is_inline;               /* stored in the index record */
	uint32_t crc;                 /* crc32c of the whole shard */
	/* private */
	struct store *s;
	struct store_key key;
	uint8_t kbuf[STORE_KEY_LEN];
	struct buf *bounce;           /* the bytes written: an aligned copy padded to
				       * 4 KiB, or a ref on the caller's buf when its
				       * slice is whole aligned blocks already */
	uint8_t *rec;                 /* extent record (malloc) */
	uint64_t length;
	uint64_t block;
	uint32_t blocks;
	rocksdb_writebatch_t *wb;
	struct store_dev_req dreq;
	struct store_kv_req kreq;
	struct store_mut *mut;
	bool old_ext;                 /* the record replaced had an extent */
	uint64_t old_block;
	uint32_t old_blocks;
	uint64_t old_ilen;            /* ... or this many inline bytes */
	int status;
	store_put_cb cb;
	struct store_put_req *next;   /* flush group */
};

struct store_get_req {
	void *data;                   /* the caller's */
	/* result, valid in the callback when status == 0: the bytes asked for.
	 * The callee hands over one reference to out.buf (NULL when empty):
	 * the caller must buf_unref(out.buf). */
	struct buf_slice out;
	char err[400];                /* set on IOL_ECHECKSUM: names the shard */
	uint64_t err_from, err_to;    /* ... and its first bad byte range
	                               * (shard offsets, inclusive) */
	/* the shard's committed metadata (whole shard, not the range read);
	 * valid in the callback whatever its status */
	struct store_stat stat;
	/* private */
	struct store *s;
	struct store_key key;
	const char *val;              /* the index record, held by pin */
	size_t vlen;
	rocksdb_pinnableslice_t *pin; /* RocksDB's pinned value (or its copy) */
	struct store_rec rec;
	uint64_t off, len;            /* asked range, clamped */
	uint64_t rd_off;              /* shard offset of the first byte read */
	struct buf *buf;
	struct store_dev_req dreq;
	struct loop_work work;
	uint64_t start_seq;           /* release epoch when the read began */
	struct store_get_req *rprev, *rnext; /* active reads */
	int status;
	store_get_cb cb;
};

struct store_del_req {
	void *data;                   /* the caller's */
	/* private */
	struct store *s;
	struct store_key key;
	uint8_t kbuf[STORE_KEY_LEN];
	rocksdb_writebatch_t *wb;
	struct store_kv_req kreq;
	struct store_mut *mut;
	bool old_ext;
	uint64_t old_block;
	uint32_t old_blocks;
	uint64_t old_ilen;
	store_del_cb cb;
};

/*
 * Open the store on loop (call on its thread): superblock, RocksDB,
 * identity check (meta must belong to this very device format), allocator
 * rebuilt from the index, io_uring. Returns 0 with *out, or a negative
 * error with a one-line message in err (see store_super_open for the
 * device errors; IOL_ECONFLICT when meta belongs to another device or
 * OSD, IOL_ECORRUPT when the index cannot be decoded).
 */
int store_open(uv_loop_t *loop, const struct store_opts *opts, struct store **out,
	       char *err, size_t errlen);

/*
 * Stop: new requests fail with IOL_ESHUTDOWN; requests in flight finish
 * and their callbacks run; then the commit thread stops, RocksDB and the
 * ring close, and done_cb(arg) runs on the loop after s is freed.
 */
void store_close(struct store *s, void (*done_cb)(void *arg), void *arg);

/*
 * Store data under key, replacing any shard there. The caller may drop
 * its reference on data after the call: data is copied, except a slice
 * of whole 4 KiB-aligned blocks (length a multiple of 4 KiB), which is
 * written from where it is under a reference the store takes; its bytes
 * must stay as they are (common/buf.h: shared read-only). Shards of at most inline_max_bytes
 * go into the index record (one synced commit); larger ones are written to
 * a new extent, flushed, then indexed; a replaced extent is freed after
 * the new record committed. Errors now: -EINVAL (bad key),
 * IOL_ETOO_LARGE, IOL_ENO_SPACE (nothing changed), -EAGAIN (too many in
 * flight), IOL_ESHUTDOWN, -ENOMEM. Callback: 0, or -errno from the device
 * or -EIO from RocksDB (the old shard, if any, is then still there).
 */
int store_put(struct store *s, struct store_put_req *req, const struct store_key *key,
	      struct buf_slice data, store_put_cb cb);

/*
 * store_put of data whose crc32c the caller already has (carried in the
 * request), checked in the store's own pass over the bytes instead of a
 * pass of the caller's:
 *  - an extent is checksummed from the bytes it writes, as always (the
 *    block crcs it indexes); when the whole differs from crc the put
 *    is refused with IOL_ECHECKSUM before anything is written;
 *  - an inline shard with verify is checksummed and refused the same way;
 *    without verify crc is taken as its record checksum with no pass over
 *    the bytes. The caller vouches that crc was computed over these very
 *    bytes in this process (they never left memory): were they changed
 *    since, the record's crc no longer matches them and every read of the
 *    shard fails with IOL_ECHECKSUM, as for damage on disk.
 * Everything else as store_put.
 */
int store_put_crc(struct store *s, struct store_put_req *req, const struct store_key *key,
		  struct buf_slice data, uint32_t crc, bool verify, store_put_cb cb);

/*
 * Read len bytes at off (len UINT64_MAX: to the end) of the shard; the
 * range is clamped to the shard. Every crc block touched is verified.
 * Errors now: IOL_ENOT_FOUND, -EINVAL (off > length), IOL_ECORRUPT /
 * IOL_EBAD_FORMAT (undecodable index record), -EAGAIN, IOL_ESHUTDOWN.
 * Callback: 0 with req->out, IOL_ECHECKSUM with req->err naming the shard
 * and byte range (no data is returned), or -errno.
 */
int store_get(struct store *s, struct store_get_req *req, const struct store_key *key,
	      uint64_t off, uint64_t len, store_get_cb cb);

/*
 * store_get's synchronous part, for a caller on ANY thread (the in-process
 * RPC's direct path, osd/service.c): serve the read now when it needs no
 * I/O at all (an inline shard, or an empty range, whose index record is in
 * RocksDB's memtables or block cache), else leave it.
 * 0: req->out and req->stat set as for store_get's callback (the caller
 * owns out.buf's reference; counted in store_stats' gets). -EWOULDBLOCK:
 * the range is in an extent on the device, or the record would have to be
 * read from a table file; nothing read: use store_get on the loop. Otherwise store_get's errors, or IOL_ECHECKSUM (req->err set)
 * for an inline value that fails its crc; none of them counted (the loop's
 * store_get, which the caller retries with, counts and reports them).
 * Touches no loop state: no inflight count, no close check, so the caller
 * must guarantee the store is not closed meanwhile (the OSD's server
 * closes, and waits for direct calls, before its store closes).
 */
int store_get_now(struct store *s, struct store_get_req *req, const struct store_key *key,
		  uint64_t off, uint64_t len);

/* Delete the shard. Errors now: IOL_ENOT_FOUND, -EAGAIN, IOL_ESHUTDOWN.
 * Callback: 0 once the deletion is durable (the extent is then free). */
int store_delete(struct store *s, struct store_del_req *req, const struct store_key *key,
		 store_del_cb cb);

/* Committed metadata of one shard: 0, IOL_ENOT_FOUND, IOL_ECORRUPT, -EIO. */
int store_stat(struct store *s, const struct store_key *key, struct store_stat *out);

/* n shards in one RocksDB multi-get: status[i] is what store_stat would
 * return for keys[i]; out[i] valid when status[i] == 0. Returns 0 or
 * -ENOMEM. */
int store_stat_many(struct store *s, const struct store_key *keys, size_t n,
		    struct store_stat *out, int *status);

struct store_list_ent {
	struct store_key key;
	struct store_stat stat;
};

/*
 * Up to max shards of pg in key order, starting after *after (NULL: from
 * the start). Returns the count (0..max) and sets *more when more shards
 * of pg follow; or IOL_ECORRUPT / -EIO.
 */
int store_list(struct store *s, uint32_t pg, const struct store_key *after,
	       struct store_list_ent *out, size_t max, bool *more);

/*
 * The lowest pg >= from that holds a shard: 0 and *pg, IOL_ENOT_FOUND (no
 * shard in any pg >= from), or -EIO. One iterator seek (for walks over
 * every PG, such as the orphan sweep's, that know no PG count).
 */
int store_next_pg(struct store *s, uint32_t from, uint32_t *pg);

void store_space(struct store *s, struct store_space *out);
void store_stats(struct store *s, struct store_stats *out);

/*
 * Hooks for the scrubber (scrub.h) and tests; loop thread only.
 *
 * store_kv_of: the index, for records outside the shard namespace (the
 * scrubber's cursor and bad-shard records, rec.h) and reads of them.
 * Commits made through it on the loop thread are applied in order with
 * the store's own; they are not counted in flight, so their owner must
 * see them complete before store_close, and must keep them few (kv's
 * bound is 2 x max_inflight; the scrubber has at most lanes + 1).
 *
 * store_key_busy: a put or delete of key has entered its commit stage and
 * not yet completed (the committed record is about to change).
 *
 * store_note_bad: call before committing a bad-shard record; from then on
 * every put and delete also deletes its key's bad-shard record in its own
 * batch (open sets this when any bad-shard record exists).
 */
struct store_kv *store_kv_of(struct store *s);
bool store_key_busy(struct store *s, const struct store_key *key);
void store_note_bad(struct store *s);

#endif
