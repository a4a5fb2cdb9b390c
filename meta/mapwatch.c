/*
 * mapwatch.c — cluster map cache over GetMap + the WatchMap long poll, and
 * the OSD channel table (contracts in mapwatch.h).
 *
 * Owns: its meta client (watch only), the current map (an unpacked copy),
 * a channel per OSD id (reopened when the OSD's address changes), a retry
 * timer, and a timer that warns, every MAP_WAIT_WARN_MS until the first
 * map arrives, what the wait is on (so a process that never gets a map
 * says why in its log). Invariant: at most one fetch (GetMap or WatchMap)
 * in flight, plus at most one refresh GetMap (meta_mapwatch_refresh) that
 * never starts a fetch, at least REFRESH_MIN_MS apart (one asked for
 * meanwhile waits on a timer, never dropped); while `closing`, the calls' callbacks do nothing
 * (meta_client_close runs them) and the last timer's close callback frees
 * everything.
 *
 * Thread: one loop. Does not: interpret the map (placement, primaries:
 * the users do).
 */
#include "meta/mapwatch.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/log.h"
#include "common/loop.h"
#include "meta/client.h"

#define RETRY_MS 300
#define MAP_WAIT_WARN_MS 5000
#define REFRESH_MIN_MS 250   /* between two refresh GetMaps */

struct chan {
	uint32_t id;
	char *addr;
	struct rpc_channel *ch;
};

struct meta_mapwatch {
	uv_loop_t *loop;
	struct meta_client *mc;
	Iolake__Meta__ClusterMap *map;
	struct chan *chans;
	size_t n_chans, cap_chans;
	uv_timer_t retry;
	uv_timer_t wait;               /* MAP_WAIT_WARN_MS, until the first map */
	int handles_open;
	uint64_t started_ms;           /* meta_mapwatch_start */
	uint64_t sent_ms;              /* the call in flight went out; 0: none */
	unsigned gets;                 /* GetMap calls sent */
	int last_err;                  /* of the last failed call; 0: none */
	bool refreshing;               /* a refresh GetMap is out */
	bool refresh_pending;          /* one asked for, not sent yet */
	uv_timer_t refresh_timer;      /* sends it once REFRESH_MIN_MS passed */
	uint64_t refresh_ms;           /* the last one went out */
	unsigned refreshes;            /* refresh GetMaps sent */
	uint32_t watch_ms;
	meta_mapwatch_cb on_change;
	void *arg;
	char name[32];
	bool closing;
};

static void fetch(struct meta_mapwatch *w);

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

static struct chan *chan_for(struct meta_mapwatch *w, uint32_t id)
{
	for (size_t i = 0; i < w->n_chans; i++)
		if (w->chans[i].id == id)
			return &w->chans[i];
	return NULL;
}

/* Open (or reopen on an address change) a channel per OSD of the map. */
static void sync_channels(struct meta_mapwatch *w)
{
	for (size_t i = 0; i < w->map->n_osds; i++) {
		const Iolake__Meta__OsdInfo *o = w->map->osds[i];
		if (!o->addr || !*o->addr)
			continue;
		struct chan *c = chan_for(w, o->id);
		if (c && c->addr && strcmp(c->addr, o->addr) == 0)
			continue;
		if (!c) {
			if (w->n_chans == w->cap_chans) {
				size_t cap = w->cap_chans ? 2 * w->cap_chans : 16;
				struct chan *nc = realloc(w->chans, cap * sizeof(*nc));
				if (!nc)
					return;
				w->chans = nc;
				w->cap_chans = cap;
			}
			c = &w->chans[w->n_chans++];
			memset(c, 0, sizeof(*c));
			c->id = o->id;
		} else {
			if (c->ch)
				rpc_channel_close(c->ch);
			free(c->addr);
		}
		c->addr = strdup(o->addr);
		c->ch = c->addr ? rpc_channel_open(w->loop, c->addr, NULL) : NULL;
		LOG_INFO("osd channel", "who=%s osd=%u addr=%s", w->name, o->id, LOG_Q(o->addr));
	}
}

static void install(struct meta_mapwatch *w, const Iolake__Meta__ClusterMap *map)
{
	Iolake__Meta__ClusterMap *c = copy_map(map);
	if (!c)
		return;
	if (w->map)
		iolake__meta__cluster_map__free_unpacked(w->map, NULL);
	w->map = c;
	uv_timer_stop(&w->wait);
	sync_channels(w);
	unsigned up = 0;
	for (size_t i = 0; i < c->n_osds; i++)
		up += c->osds[i]->up;
	LOG_INFO("cluster map", "who=%s epoch=%llu osds=%zu pgs=%zu up=%u", w->name,
		 (unsigned long long)c->epoch, c->n_osds, c->n_pgs, up);
	if (w->on_change)
		w->on_change(w->arg, w->map);
}

static void free_all(struct meta_mapwatch *w)
{
	for (size_t i = 0; i < w->n_chans; i++) {
		if (w->chans[i].ch)
			rpc_channel_close(w->chans[i].ch);
		free(w->chans[i].addr);
	}
	free(w->chans);
	if (w->map)
		iolake__meta__cluster_map__free_unpacked(w->map, NULL);
	free(w);
}

static void on_timer_closed(uv_handle_t *h)
{
	struct meta_mapwatch *w = h->data;
	if (--w->handles_open == 0)
		free_all(w);
}

/* Every MAP_WAIT_WARN_MS while no map came: say what the wait is on.
 * The client's last error names the member and its answer. */
static void on_wait(uv_timer_t *t)
{
	struct meta_mapwatch *w = t->data;
	if (w->map || w->closing)
		return;
	uint64_t now = loop_now_ms();
	const char *last = meta_client_last_error(w->mc);
	LOG_WARN("cluster map: none yet", "who=%s waited_ms=%llu get_map_calls=%u in_flight_ms=%llu "
		 "last_err=%s last_error=%s", w->name, (unsigned long long)(now - w->started_ms),
		 w->gets, (unsigned long long)(w->sent_ms ? now - w->sent_ms : 0),
		 w->last_err ? iol_strerror(w->last_err) : "none", LOG_Q(*last ? last : "none"));
}

static void on_retry(uv_timer_t *t)
{
	fetch(t->data);
}

/* A map worth installing: the first, or newer than the one held. With a
 * refresh beside the watch, an answer can arrive after a newer map did
 * (a watch answered at the first change but delivered late): epochs never
 * go back. */
static bool newer(const struct meta_mapwatch *w, const Iolake__Meta__ClusterMap *m)
{
	return !w->map || m->epoch > w->map->epoch;
}

static void on_reply(void *ud, int err, const ProtobufCMessage *resp)
{
	struct meta_mapwatch *w = ud;
	if (w->closing)
		return;  /* freed once the timers are closed */
	w->sent_ms = 0;
	if (err) {
		w->last_err = err;
		uv_timer_start(&w->retry, on_retry, RETRY_MS, 0);
		return;
	}
	if (resp->descriptor == &iolake__meta__get_map_response__descriptor) {
		const Iolake__Meta__GetMapResponse *r = (const void *)resp;
		if (r->status != IOLAKE__META__STATUS__STATUS_OK || !r->map) {
			w->last_err = -EAGAIN;   /* no map in meta yet (or not readable) */
			uv_timer_start(&w->retry, on_retry, RETRY_MS, 0);
			return;
		}
		if (newer(w, r->map))
			install(w, r->map);
	} else {
		const Iolake__Meta__WatchMapResponse *r = (const void *)resp;
		if (r->changed && r->map && newer(w, r->map))
			install(w, r->map);
	}
	if (!w->closing) /* on_change may have closed us */
		fetch(w);
}

static void refresh_kick(struct meta_mapwatch *w);

/* A refresh's answer: installed only when newer than the map held by
 * then (the watch may have brought it, or a newer one, meanwhile). The
 * parked fetch goes on; this starts none. A refresh asked for while this
 * one was out goes next. */
static void on_refresh(void *ud, int err, const ProtobufCMessage *resp)
{
	struct meta_mapwatch *w = ud;
	if (w->closing)
		return;
	w->refreshing = false;
	if (!err) {
		const Iolake__Meta__GetMapResponse *r = (const void *)resp;
		if (r->status == IOLAKE__META__STATUS__STATUS_OK && r->map && newer(w, r->map))
			install(w, r->map);
	}
	if (!w->closing)   /* on_change may have closed us */
		refresh_kick(w);
}

static void on_refresh_timer(uv_timer_t *t)
{
	refresh_kick(t->data);
}

/* Send the refresh asked for, unless one is out (its answer kicks) or
 * the last went out less than REFRESH_MIN_MS ago (the timer kicks). */
static void refresh_kick(struct meta_mapwatch *w)
{
	if (!w->refresh_pending || w->refreshing || w->closing)
		return;
	uint64_t now = loop_now_ms();
	if (w->refreshes && now - w->refresh_ms < REFRESH_MIN_MS) {
		if (!uv_is_active((uv_handle_t *)&w->refresh_timer))
			uv_timer_start(&w->refresh_timer, on_refresh_timer,
				       REFRESH_MIN_MS - (now - w->refresh_ms), 0);
		return;
	}
	w->refresh_pending = false;
	Iolake__Meta__GetMapRequest req = IOLAKE__META__GET_MAP_REQUEST__INIT;
	if (meta_client_call(w->mc, META_M_GET_MAP, &req.base, on_refresh, w))
		return;   /* the watch, or the next refusal, tries again */
	w->refreshing = true;
	w->refresh_ms = now;
	w->refreshes++;
	LOG_INFO("cluster map: refreshing", "who=%s epoch=%llu refreshes=%u", w->name,
		 (unsigned long long)w->map->epoch, w->refreshes);
}

bool meta_mapwatch_refresh(struct meta_mapwatch *w)
{
	if (w->closing || !w->map || w->refresh_pending)
		return false;
	w->refresh_pending = true;
	refresh_kick(w);
	return true;
}

static void fetch(struct meta_mapwatch *w)
{
	int rc;
	if (!w->map) {
		Iolake__Meta__GetMapRequest req = IOLAKE__META__GET_MAP_REQUEST__INIT;
		rc = meta_client_call(w->mc, META_M_GET_MAP, &req.base, on_reply, w);
		w->gets += rc == 0;
	} else {
		Iolake__Meta__WatchMapRequest req = IOLAKE__META__WATCH_MAP_REQUEST__INIT;
		req.epoch = w->map->epoch;
		req.timeout_ms = w->watch_ms;
		rc = meta_client_call(w->mc, META_M_WATCH_MAP, &req.base, on_reply, w);
	}
	if (rc) {
		w->last_err = rc;
		uv_timer_start(&w->retry, on_retry, RETRY_MS, 0);
	} else {
		w->sent_ms = loop_now_ms();
	}
}

int meta_mapwatch_start(uv_loop_t *loop, const struct meta_mapwatch_opts *opts,
			struct meta_mapwatch **out)
{
	if (!opts || !opts->n_members)
		return -EINVAL;
	struct meta_mapwatch *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->loop = loop;
	w->watch_ms = opts->watch_ms ? opts->watch_ms : META_MAPWATCH_WATCH_MS;
	w->on_change = opts->on_change;
	w->arg = opts->arg;
	snprintf(w->name, sizeof(w->name), "%s", opts->log_name ? opts->log_name : "");
	/* A call's budget must outlive the long poll; meta/client.c gives a
	 * WatchMap attempt its hold plus slack, a GetMap the usual seconds.
	 * Retries after the budget are ours. */
	struct meta_client_opts o = { .members = opts->members, .n_members = opts->n_members,
				      .retry_for_ms = w->watch_ms + 20000 };
	int rc = meta_client_new(loop, &o, &w->mc);
	if (rc) {
		free(w);
		return rc;
	}
	uv_timer_init(loop, &w->retry);
	uv_timer_init(loop, &w->wait);
	uv_timer_init(loop, &w->refresh_timer);
	w->retry.data = w->wait.data = w;
	w->refresh_timer.data = w;
	w->handles_open = 3;
	w->started_ms = loop_now_ms();
	uv_timer_start(&w->wait, on_wait, MAP_WAIT_WARN_MS, MAP_WAIT_WARN_MS);
	fetch(w);
	*out = w;
	return 0;
}

void meta_mapwatch_close(struct meta_mapwatch *w)
{
	if (!w)
		return;
	w->closing = true;
	uv_timer_stop(&w->retry);
	uv_timer_stop(&w->wait);
	uv_timer_stop(&w->refresh_timer);
	meta_client_close(w->mc); /* runs the parked call's callback */
	uv_close((uv_handle_t *)&w->retry, on_timer_closed);
	uv_close((uv_handle_t *)&w->wait, on_timer_closed);
	uv_close((uv_handle_t *)&w->refresh_timer, on_timer_closed);
}

const Iolake__Meta__ClusterMap *meta_mapwatch_map(const struct meta_mapwatch *w)
{
	return w->map;
}

struct rpc_channel *meta_mapwatch_channel(struct meta_mapwatch *w, uint32_t osd_id)
{
	struct chan *c = chan_for(w, osd_id);
	return c ? c->ch : NULL;
}

const Iolake__Meta__OsdInfo *meta_mapwatch_osd(const struct meta_mapwatch *w, uint32_t osd_id)
{
	if (!w->map)
		return NULL;
	for (size_t i = 0; i < w->map->n_osds; i++)
		if (w->map->osds[i]->id == osd_id)
			return w->map->osds[i];
	return NULL;
}
