/*
 * cache.h — one RocksDB block cache that several shard stores of a process
 * share (--osd-cache on iolake-aio and iolake-osd).
 *
 * Owns: the cache handle and the gauges that read it. A store opened with
 * store_opts.cache puts its index's table blocks (the flushed inline
 * shards among them) in this cache instead of a default cache of its own
 * (RocksDB 7.8: 8 MiB per store, so six aio OSDs held 48 MiB in six
 * separate LRUs). The cache is sharded and thread-safe (RocksDB's LRU).
 * Does not: count hits and misses (that needs RocksDB statistics on every
 * read, see docs/performance.md), or bound the memtables.
 */
#ifndef OSD_STORE_CACHE_H
#define OSD_STORE_CACHE_H

#include <rocksdb/c.h>
#include <stdint.h>

struct metrics_registry;
struct store_cache;

#define STORE_CACHE_DEFAULT_BYTES (128ull << 20)

/* A cache of capacity bytes (> 0). 0 or -ENOMEM. */
int store_cache_new(uint64_t bytes, struct store_cache **out);

/* Register iolake_osd_block_cache_{capacity,usage,pinned}_bytes (no osd
 * label: one cache for every store of the process) reading c at each
 * render. c must then outlive the registry's renders. 0 or -errno. */
int store_cache_register_metrics(struct store_cache *c, struct metrics_registry *reg);

/* RocksDB's handle, for kv's table options (NULL when c is NULL). */
rocksdb_cache_t *store_cache_rocksdb(const struct store_cache *c);

/* Free the handle. Stores still open keep the cache itself alive (RocksDB
 * holds its own reference); the gauges must not render after this. */
void store_cache_free(struct store_cache *c);

#endif
