/*
 * cache.c — the shared RocksDB block cache of a process's stores
 * (cache.h).
 *
 * Owns: one rocksdb_cache_t (an LRU of capacity bytes, sharded by RocksDB)
 * and three gauges that read it when /metrics renders. Any thread: the
 * cache is RocksDB's, thread-safe; this file keeps no state of its own.
 * Does not: open stores or decide what goes into the cache (RocksDB puts
 * data, index and filter blocks of every table read through it).
 */
#include "osd/store/cache.h"

#include <errno.h>
#include <stdlib.h>

#include "common/metrics.h"

struct store_cache {
	rocksdb_cache_t *rc;
};

int store_cache_new(uint64_t bytes, struct store_cache **out)
{
	struct store_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->rc = rocksdb_cache_create_lru(bytes);
	if (!c->rc) {
		free(c);
		return -ENOMEM;
	}
	*out = c;
	return 0;
}

rocksdb_cache_t *store_cache_rocksdb(const struct store_cache *c)
{
	return c ? c->rc : NULL;
}

static double g_capacity(void *arg)
{
	return (double)rocksdb_cache_get_capacity(((struct store_cache *)arg)->rc);
}

static double g_usage(void *arg)
{
	return (double)rocksdb_cache_get_usage(((struct store_cache *)arg)->rc);
}

static double g_pinned(void *arg)
{
	return (double)rocksdb_cache_get_pinned_usage(((struct store_cache *)arg)->rc);
}

int store_cache_register_metrics(struct store_cache *c, struct metrics_registry *reg)
{
	errno = 0;
	if (!metrics_gauge_fn_new(reg, "iolake_osd_block_cache_capacity_bytes",
				  "Capacity of the block cache the OSD stores share (--osd-cache).",
				  NULL, g_capacity, c) ||
	    !metrics_gauge_fn_new(reg, "iolake_osd_block_cache_usage_bytes",
				  "Bytes held in the shared block cache (index blocks, flushed "
				  "inline shards).", NULL, g_usage, c) ||
	    !metrics_gauge_fn_new(reg, "iolake_osd_block_cache_pinned_bytes",
				  "Bytes of the shared block cache pinned by reads in flight "
				  "(inline shards handed out by reference).", NULL, g_pinned, c))
		return errno ? -errno : -ENOMEM;
	return 0;
}

void store_cache_free(struct store_cache *c)
{
	if (!c)
		return;
	rocksdb_cache_destroy(c->rc);
	free(c);
}
