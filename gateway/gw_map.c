/*
 * gw_map.c — the gateway's view of the cluster map: a thin user of
 * meta/mapwatch.h (the one map cache: GetMap + WatchMap long poll + OSD
 * channels) that turns objects into PGs and PGs into gw_data targets
 * (contracts in gw_map.h).
 *
 * Owns: the mapwatch. Thread: one loop.
 *
 * Does not place objects itself (common/place.h) nor talk to OSDs beyond
 * the channels the mapwatch opens.
 */
#include "gateway/gw_map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "meta/mapwatch.h"
#include "common/place.h"

struct gw_map {
	struct meta_mapwatch *w;
	void (*on_change)(void *arg);
	void *arg;
};

static void on_map(void *arg, const Iolake__Meta__ClusterMap *map)
{
	(void)map;   /* installed already: the accessors read it */
	struct gw_map *m = arg;
	if (m->on_change)
		m->on_change(m->arg);
}

int gw_map_start(uv_loop_t *loop, const char *const *members, size_t n_members,
		 void (*on_change)(void *arg), void *arg, struct gw_map **out)
{
	struct gw_map *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->on_change = on_change;
	m->arg = arg;
	struct meta_mapwatch_opts o = { .members = members, .n_members = n_members,
					.watch_ms = GW_MAP_WATCH_MS, .log_name = "gw",
					.on_change = on_map, .arg = m };
	int rc = meta_mapwatch_start(loop, &o, &m->w);
	if (rc) {
		free(m);
		return rc;
	}
	*out = m;
	return 0;
}

void gw_map_close(struct gw_map *m)
{
	if (!m)
		return;
	meta_mapwatch_close(m->w);
	free(m);
}

bool gw_map_refresh(struct gw_map *m)
{
	return meta_mapwatch_refresh(m->w);
}

uint64_t gw_map_creds_epoch(const struct gw_map *m)
{
	const Iolake__Meta__ClusterMap *map = meta_mapwatch_map(m->w);
	/* + 1: the first map is a change too. A key written before InitMap
	 * bumped nothing, and a miss cached before the gateway had a map
	 * must not outlive it. */
	return map ? map->creds_epoch + 1 : 0;
}

uint64_t gw_map_epoch(const struct gw_map *m)
{
	const Iolake__Meta__ClusterMap *map = meta_mapwatch_map(m->w);
	return map ? map->epoch : 0;
}

int gw_map_object_pg(const struct gw_map *m, const char *bucket, const char *key, uint32_t *pg)
{
	const Iolake__Meta__ClusterMap *map = meta_mapwatch_map(m->w);
	if (!map || !map->pg_count)
		return -EAGAIN;
	*pg = place_object_pg(bucket, strlen(bucket), key, strlen(key), map->pg_count);
	return 0;
}

int gw_map_target(struct gw_map *m, uint32_t pg, struct gw_data_target *t)
{
	const Iolake__Meta__ClusterMap *map = meta_mapwatch_map(m->w);
	if (!map)
		return -EAGAIN;
	if (pg >= map->n_pgs)
		return -ERANGE;
	const Iolake__Meta__PgEntry *e = map->pgs[pg];
	memset(t, 0, sizeof(*t));
	t->pg = pg;
	t->epoch = map->epoch;
	for (size_t i = 0; i < e->n_osds && i < EC_MAX_SHARDS; i++) {
		if (e->osds[i] == PLACE_NONE)
			continue;
		/* A down OSD keeps its slot (down_keeps_slot): PUTs still
		 * write it (the call fails at once while its circuit is
		 * open); GETs read it only as a last resort (t->down). */
		t->osds[i] = meta_mapwatch_channel(m->w, e->osds[i]);
		t->osd_ids[i] = e->osds[i];
		const Iolake__Meta__OsdInfo *osd = meta_mapwatch_osd(m->w, e->osds[i]);
		if (osd && !osd->up)
			t->down |= 1u << i;
	}
	return 0;
}

void gw_map_ec(const struct gw_map *m, unsigned *k, unsigned *m_out)
{
	const Iolake__Meta__ClusterMap *map = meta_mapwatch_map(m->w);
	*k = map ? map->k : 0;
	*m_out = map ? map->m : 0;
}

bool gw_map_placed(const struct gw_map *m)
{
	const Iolake__Meta__ClusterMap *map = meta_mapwatch_map(m->w);
	return map && !map->expect_osds;
}

unsigned gw_map_osds_up(const struct gw_map *m)
{
	const Iolake__Meta__ClusterMap *map = meta_mapwatch_map(m->w);
	unsigned n = 0;
	if (map)
		for (size_t i = 0; i < map->n_osds; i++)
			n += map->osds[i]->up;
	return n;
}
