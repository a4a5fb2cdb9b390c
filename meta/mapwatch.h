/*
 * mapwatch.h — a cluster map cache kept current by the WatchMap long
 * poll, with one RPC channel per OSD address of the map: the one map cache
 * of IOLake, used by the gateway (gateway/gw_map.c) and by each OSD's
 * recovery driver (osd/recover.c).
 *
 * The map is fetched once with GetMap, then WatchMap is parked at a meta
 * member (it answers as soon as the epoch moves, or after watch_ms
 * unchanged); a failed call is retried after a short backoff. Nothing is
 * ever polled or scanned to learn a map. The watch uses its own meta
 * client: a WatchMap attempt lasts its hold plus slack, a GetMap the
 * client's usual seconds (meta/client.c). Every 5 s while no map came, a
 * warning says what the wait is on (the client's last error).
 *
 * Channels: one per OSD id, opened when the OSD first appears with an
 * address and reopened when its address changes (the old channel is
 * closed: its pending calls fail CANCELLED before the change callback
 * runs). Callers look a channel up per call and keep no pointer across
 * map changes.
 *
 * Thread: one loop; every function and callback on its thread.
 */
#ifndef META_MAPWATCH_H
#define META_MAPWATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/rpc.h"
#include "proto/meta.pb-c.h"

#define META_MAPWATCH_WATCH_MS 30000

struct meta_mapwatch;

/* A new map was installed (its epoch differs from the one before, or it
 * is the first). map is the cache's own copy: valid until the next change
 * or meta_mapwatch_close. */
typedef void (*meta_mapwatch_cb)(void *arg, const Iolake__Meta__ClusterMap *map);

struct meta_mapwatch_opts {
	const char *const *members;  /* meta addresses ("host:port" or "local:NAME"), copied */
	size_t n_members;
	uint32_t watch_ms;           /* long-poll length; 0: META_MAPWATCH_WATCH_MS */
	meta_mapwatch_cb on_change;  /* may be NULL */
	void *arg;
	const char *log_name;        /* who watches, for log lines; may be NULL */
};

/* Start fetching at once. 0 and *out, -EINVAL, -ENOMEM. */
int meta_mapwatch_start(uv_loop_t *loop, const struct meta_mapwatch_opts *opts,
			struct meta_mapwatch **out);

/* Stop watching, close every channel and free w (its handles a loop turn
 * later). on_change never runs again. NULL is ignored. */
void meta_mapwatch_close(struct meta_mapwatch *w);

/* Fetch the map now with a GetMap, beside the parked watch: the caller
 * learned that the map held is stale (an OSD refused a write placed with
 * it). Its answer is installed (on_change runs) if newer than the map
 * held by then. Refresh GetMaps go one at a time, at least 250 ms apart:
 * one asked for meanwhile is sent when allowed, never dropped. True when
 * this call asked for one; false before the first map, or when one is
 * already waiting to go. */
bool meta_mapwatch_refresh(struct meta_mapwatch *w);

/* The map held, or NULL before the first one arrived. */
const Iolake__Meta__ClusterMap *meta_mapwatch_map(const struct meta_mapwatch *w);

/* The channel of OSD id (NULL when the map names no address for it). */
struct rpc_channel *meta_mapwatch_channel(struct meta_mapwatch *w, uint32_t osd_id);

/* The OSD's entry in the map held, or NULL. */
const Iolake__Meta__OsdInfo *meta_mapwatch_osd(const struct meta_mapwatch *w, uint32_t osd_id);

#endif
