/*
 * gw_map.c — cluster map cache over GetMap + the WatchMap long poll, and
 * the OSD channel table (contracts in gw_map.h).
 *
 * Owns: its meta client (watch only), the current map (an unpacked copy),
 * a channel per OSD id (reopened when the OSD's address changes), a retry
 * timer. Invariant: at most one meta call in flight; while `closing`, the
 * call's callback frees the map (meta_client_close runs it).
 *
 * Thread: one loop.
 */
#include "gateway/gw_map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/log.h"
#include "meta/client.h"
#include "meta/place.h"

#define RETRY_MS 300

struct chan {
	uint32_t id;
	char *addr;
	struct rpc_channel *ch;
};

struct gw_map {
	uv_loop_t *loop;
	struct meta_client *mc;
	Iolake__Meta__ClusterMap *map;
	struct chan *chans;
	size_t n_chans, cap_chans;
	uv_timer_t retry;
	bool closing;
};

static void fetch(struct gw_map *m);

static Iolake__Meta__ClusterMap *copy_map(const Iolake__Meta__ClusterMap *src)
{
	size_t len = protobuf_c_message_get_packed_size(&src->base);
	uint8_t *b = malloc(len ? len : 1);
	if (!b)
		return NULL;
	protobuf_c_message_pack(&src->base, b);
	Iolake__Meta__ClusterMap *c = iolake__meta__cluster_map__unpack(NULL, len, b);
	free(b);
	return c;
}

static struct chan *chan_for(struct gw_map *m, uint32_t id)
{
	for (size_t i = 0; i < m->n_chans; i++)
		if (m->chans[i].id == id)
			return &m->chans[i];
	return NULL;
}

/* Open (or reopen on an address change) a channel per OSD of the map. */
static void sync_channels(struct gw_map *m)
{
	for (size_t i = 0; i < m->map->n_osds; i++) {
		const Iolake__Meta__OsdInfo *o = m->map->osds[i];
		if (!o->addr || !*o->addr)
			continue;
		struct chan *c = chan_for(m, o->id);
		if (c && strcmp(c->addr, o->addr) == 0)
			continue;
		if (!c) {
			if (m->n_chans == m->cap_chans) {
				size_t cap = m->cap_chans ? 2 * m->cap_chans : 16;
				struct chan *nc = realloc(m->chans, cap * sizeof(*nc));
				if (!nc)
					return;
				m->chans = nc;
				m->cap_chans = cap;
			}
			c = &m->chans[m->n_chans++];
			memset(c, 0, sizeof(*c));
			c->id = o->id;
		} else {
			rpc_channel_close(c->ch);
			free(c->addr);
		}
		c->addr = strdup(o->addr);
		c->ch = c->addr ? rpc_channel_open(m->loop, c->addr, NULL) : NULL;
		LOG_INFO("osd channel", "osd=%u addr=%s", o->id, LOG_Q(o->addr));
	}
}

static void install(struct gw_map *m, const Iolake__Meta__ClusterMap *map)
{
	Iolake__Meta__ClusterMap *c = copy_map(map);
	if (!c)
		return;
	if (m->map)
		iolake__meta__cluster_map__free_unpacked(m->map, NULL);
	m->map = c;
	sync_channels(m);
	LOG_INFO("cluster map", "epoch=%llu osds=%zu pgs=%zu up=%u",
		 (unsigned long long)c->epoch, c->n_osds, c->n_pgs, gw_map_osds_up(m));
}

static void free_map(struct gw_map *m)
{
	for (size_t i = 0; i < m->n_chans; i++) {
		if (m->chans[i].ch)
			rpc_channel_close(m->chans[i].ch);
		free(m->chans[i].addr);
	}
	free(m->chans);
	if (m->map)
		iolake__meta__cluster_map__free_unpacked(m->map, NULL);
	free(m);
}

static void on_timer_closed(uv_handle_t *h)
{
	free_map(h->data);
}

static void on_retry(uv_timer_t *t)
{
	fetch(t->data);
}

static void on_reply(void *ud, int err, const ProtobufCMessage *resp)
{
	struct gw_map *m = ud;
	if (m->closing)
		return;  /* freed by gw_map_close once the client is closed */
	if (err) {
		uv_timer_start(&m->retry, on_retry, RETRY_MS, 0);
		return;
	}
	if (resp->descriptor == &iolake__meta__get_map_response__descriptor) {
		const Iolake__Meta__GetMapResponse *r = (const void *)resp;
		if (r->status == IOLAKE__META__STATUS__STATUS_OK && r->map)
			install(m, r->map);
		else {
			uv_timer_start(&m->retry, on_retry, RETRY_MS, 0);
			return;
		}
	} else {
		const Iolake__Meta__WatchMapResponse *r = (const void *)resp;
		if (r->changed && r->map)
			install(m, r->map);
	}
	fetch(m);
}

static void fetch(struct gw_map *m)
{
	int rc;
	if (!m->map) {
		Iolake__Meta__GetMapRequest req = IOLAKE__META__GET_MAP_REQUEST__INIT;
		rc = meta_client_call(m->mc, META_M_GET_MAP, &req.base, on_reply, m);
	} else {
		Iolake__Meta__WatchMapRequest req = IOLAKE__META__WATCH_MAP_REQUEST__INIT;
		req.epoch = m->map->epoch;
		req.timeout_ms = GW_MAP_WATCH_MS;
		rc = meta_client_call(m->mc, META_M_WATCH_MAP, &req.base, on_reply, m);
	}
	if (rc)
		uv_timer_start(&m->retry, on_retry, RETRY_MS, 0);
}

int gw_map_start(uv_loop_t *loop, const char *const *members, size_t n_members,
		 struct gw_map **out)
{
	struct gw_map *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->loop = loop;
	/* One attempt must outlive the long poll; retries are ours. */
	struct meta_client_opts o = { .members = members, .n_members = n_members,
				      .attempt_timeout_ms = GW_MAP_WATCH_MS + 10000,
				      .retry_for_ms = GW_MAP_WATCH_MS + 20000 };
	int rc = meta_client_new(loop, &o, &m->mc);
	if (rc) {
		free(m);
		return rc;
	}
	uv_timer_init(loop, &m->retry);
	m->retry.data = m;
	fetch(m);
	*out = m;
	return 0;
}

void gw_map_close(struct gw_map *m)
{
	if (!m)
		return;
	m->closing = true;
	uv_timer_stop(&m->retry);
	meta_client_close(m->mc); /* runs the parked call's callback */
	uv_close((uv_handle_t *)&m->retry, on_timer_closed);
}

uint64_t gw_map_creds_epoch(const struct gw_map *m)
{
	return m->map ? m->map->creds_epoch : 0;
}

uint64_t gw_map_epoch(const struct gw_map *m)
{
	return m->map ? m->map->epoch : 0;
}

int gw_map_object_pg(const struct gw_map *m, const char *bucket, const char *key, uint32_t *pg)
{
	if (!m->map || !m->map->pg_count)
		return -EAGAIN;
	*pg = meta_place_object_pg(bucket, strlen(bucket), key, strlen(key), m->map->pg_count);
	return 0;
}

int gw_map_target(struct gw_map *m, uint32_t pg, struct gw_data_target *t)
{
	if (!m->map)
		return -EAGAIN;
	if (pg >= m->map->n_pgs)
		return -ERANGE;
	const Iolake__Meta__PgEntry *e = m->map->pgs[pg];
	memset(t, 0, sizeof(*t));
	t->pg = pg;
	for (size_t i = 0; i < e->n_osds && i < EC_MAX_SHARDS; i++) {
		if (e->osds[i] == META_PLACE_NONE)
			continue;
		struct chan *c = chan_for(m, e->osds[i]);
		/* A down OSD keeps its slot (down_keeps_slot): it is still
		 * tried, and a refused call is a failed shard. */
		t->osds[i] = c ? c->ch : NULL;
	}
	return 0;
}

void gw_map_ec(const struct gw_map *m, unsigned *k, unsigned *m_out)
{
	*k = m->map ? m->map->k : 0;
	*m_out = m->map ? m->map->m : 0;
}

unsigned gw_map_osds_up(const struct gw_map *m)
{
	unsigned n = 0;
	if (m->map)
		for (size_t i = 0; i < m->map->n_osds; i++)
			n += m->map->osds[i]->up;
	return n;
}
