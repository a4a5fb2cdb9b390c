/*
 * gw_map.h — the gateway's copy of the cluster map and its OSD channels:
 * object → PG (common/place.h's object hash) → the PG's ordered k+m OSD ids
 * → one rpc_channel per OSD address, opened once and kept.
 *
 * The map cache itself is meta/mapwatch.h (shared with the OSDs' recovery
 * drivers). The map is fetched once with GetMap, then kept current by the WatchMap
 * long poll (one call parked at a meta member; it answers as soon as the
 * epoch moves, or after GW_MAP_WATCH_MS unchanged): the gateway never
 * polls OSDs or scans anything to learn a map. A failed call is retried
 * after a short backoff. The watch uses its own meta client, whose attempt
 * timeout exceeds the long poll.
 *
 * Thread: one loop; every function on its thread.
 */
#ifndef GATEWAY_GW_MAP_H
#define GATEWAY_GW_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "gateway/gw_data.h"

#define GW_MAP_WATCH_MS 30000

struct gw_map;

/* members: meta addresses ("host:port" or "local:NAME"), copied.
 * on_change (may be NULL) runs on the loop after each new map is in
 * place, so the accessors below already answer from it.
 * 0 and *out, -EINVAL, -ENOMEM. Fetching starts at once. */
int gw_map_start(uv_loop_t *loop, const char *const *members, size_t n_members,
		 void (*on_change)(void *arg), void *arg, struct gw_map **out);

/* Stop watching, close every channel and free m (its handles a loop turn
 * later). */
void gw_map_close(struct gw_map *m);

/* An OSD refused a write placed with the map held (newer map there):
 * fetch the map now instead of waiting for the watch
 * (meta_mapwatch_refresh). True when this asked for a GetMap (sent now,
 * or once the one out is answered and 250 ms passed). */
bool gw_map_refresh(struct gw_map *m);

/* Epoch of the map held; 0 before the first one arrived. */
uint64_t gw_map_epoch(const struct gw_map *m);

/* The PG of an object, or -EAGAIN before a map is known. */
int gw_map_object_pg(const struct gw_map *m, const char *bucket, const char *key,
		     uint32_t *pg);

/* The PG's OSD channels (slot i: shard i; NULL for an empty slot) and
 * t->down: the slots whose OSD the map says is down.
 * 0, -EAGAIN (no map yet), -ERANGE (no such PG). */
int gw_map_target(struct gw_map *m, uint32_t pg, struct gw_data_target *t);

/* k and m of the map (0 before one is known). */
void gw_map_ec(const struct gw_map *m, unsigned *k, unsigned *m_out);

/* A number that moves whenever the map's creds_epoch does (an access
 * key added or removed, a user removed or a user's grants changed) and
 * when the first map arrives: 0 before a map is known, creds_epoch + 1
 * after. */
uint64_t gw_map_creds_epoch(const struct gw_map *m);

/* Whether the map has its PG table: false before a map and while a new
 * cluster's first table waits for its OSDs (ClusterMap.expect_osds). */
bool gw_map_placed(const struct gw_map *m);

/* OSDs the map says are up. */
unsigned gw_map_osds_up(const struct gw_map *m);

#endif
