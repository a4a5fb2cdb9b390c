/*
 * s3_ops.c — one gateway loop's S3 layer as a whole (contracts in
 * s3_ops.h): makes and frees struct s3_ops (its meta client, the map
 * watch, the data path, the shard GC worker, the degraded-PG flagger),
 * installs the handler modules' tables (s3_handlers.h) into the front
 * end's ops table, and serves the front end's hooks: credentials over
 * meta's GetAccessKey, readiness, /metrics.
 *
 * Owns struct s3_ops and what it holds. Handles no S3 operation itself:
 * requests are s3_rq.c's, operations the handler modules'.
 *
 * Invariants the handlers keep: nothing is acknowledged before its meta
 * commit; a GET starts its response only once the first bytes are
 * verified (so an unreadable object is a 503 error, never a short or
 * wrong body); the shards of a version are deleted only by whoever
 * committed the record replacing or removing it, after that commit (or by
 * gw_gc from meta's queue).
 *
 * Thread: one loop; no blocking call.
 */
#include "gateway/s3_ops.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/err.h"
#include "common/log.h"
#include "common/md5_svc.h"
#include "common/loop.h"
#include "gateway/gw_bcache.h"
#include "gateway/gw_md5b.h"
#include "gateway/gw_bread.h"
#include "gateway/gw_creds.h"
#include "gateway/gw_gc.h"
#include "gateway/lc_worker.h"
#include "gateway/gw_heal.h"
#include "gateway/gw_map.h"
#include "gateway/gw_stats.h"
#include "gateway/s3_cors.h"
#include "gateway/s3_lifecycle.h"
#include "gateway/s3_handlers.h"
#include "gateway/s3_policy_cache.h"
#include "gateway/s3_post.h"
#include "gateway/s3_rq.h"
#include "meta/client.h"

/* The ops of one loop with what only s3_ops.c knows of: its place among
 * the gateway's loops (struct s3_ops is shared with the handlers). */
struct ops_x {
	struct s3_ops o;
	struct s3_ops_peers *peers;   /* NULL: one loop */
	unsigned index;
};

static struct ops_x *X(struct s3_ops *o)
{
	return container_of(o, struct ops_x, o);
}

/* ------------------------------------------------------------ credentials */

static void cred_lookup(void *ctx, struct s3_cred_lookup *l)
{
	struct s3_ops *o = ctx;
	gw_creds_lookup(o->mc, o->m_cred_lookups, l);
}

/* ------------------------------------------------------------ lifecycle */

static bool ready_hook(void *ctx)
{
	return s3_ops_ready(ctx);
}

static int metrics_hook(void *ctx, char **text, size_t *len)
{
	struct s3_ops *o = ctx;
	return metrics_render(o->reg, text, len);
}

/* The data path's figures over every loop (one loop: its own). A sum,
 * or (max) the largest of the loops' current values. Other loops' stats
 * are read as they are being written: plain aligned 64-bit fields, so a
 * figure may lag by the updates in flight, as any gauge does. */
#define EC_GAUGE(field, max)                                               \
	static double g_##field(void *arg)                                 \
	{                                                                  \
		struct ops_x *x = X(arg);                                  \
		unsigned n = x->peers ? x->peers->n : 1;                   \
		double v = 0;                                              \
		for (unsigned i = 0; i < n; i++) {                         \
			struct s3_ops *o = x->peers ? atomic_load(&x->peers->ops[i]) : arg; \
			if (!o)                                            \
				continue;                                  \
			struct gw_data_stats st;                           \
			gw_data_stats(o->data, &st);                       \
			double f = (double)st.field;                       \
			v = max ? (f > v ? f : v) : v + f;                 \
		}                                                          \
		return v;                                                  \
	}
EC_GAUGE(puts, 0)
EC_GAUGE(puts_failed, 0)
EC_GAUGE(gets, 0)
EC_GAUGE(gets_failed, 0)
EC_GAUGE(decodes, 0)
EC_GAUGE(shard_put_failures, 0)
EC_GAUGE(shard_get_failures, 0)
EC_GAUGE(buffered_bytes, 0)
EC_GAUGE(pool_idle_bytes, 0)
EC_GAUGE(hedges, 0)
EC_GAUGE(hedge_wins, 0)
EC_GAUGE(shard_gets_avoided, 0)
EC_GAUGE(shard_puts_abandoned, 0)
EC_GAUGE(shard_puts_late, 0)
EC_GAUGE(put_grace_ms, 1)
EC_GAUGE(hedge_delay_ms, 1)

static double g_epoch(void *arg)
{
	return (double)gw_map_epoch(((struct s3_ops *)arg)->map);
}

static double g_up(void *arg)
{
	return (double)gw_map_osds_up(((struct s3_ops *)arg)->map);
}

static bool loop_ready(struct s3_ops *o);

/* Loops whose own map makes them ready (/health/ready: all of them). */
static double g_loops_ready(void *arg)
{
	struct ops_x *x = X(arg);
	if (!x->peers)
		return loop_ready(arg);
	double v = 0;
	for (unsigned i = 0; i < x->peers->n; i++)
		v += atomic_load(&x->peers->ready[i]);
	return v;
}

/* Policy cache hits (misses: !hits) over every loop's cache. */
static double policy_sum(void *arg, bool hits)
{
	struct ops_x *x = X(arg);
	unsigned n = x->peers ? x->peers->n : 1;
	double v = 0;
	for (unsigned i = 0; i < n; i++) {
		struct s3_ops *o = x->peers ? atomic_load(&x->peers->ops[i]) : arg;
		if (!o)
			continue;
		struct s3_policy_cache_stats st;
		s3_policy_cache_stats(o->policies, &st);
		v += (double)(hits ? st.hits : st.misses);
	}
	return v;
}

static double g_policy_hits(void *arg)
{
	return policy_sum(arg, true);
}

static double g_policy_misses(void *arg)
{
	return policy_sum(arg, false);
}

/* The counters are shared by every loop's ops (one series, atomic adds);
 * the gauges are registered by loop 0 only and sum over the loops. */
static void register_metrics(struct s3_ops *o)
{
	for (int i = 1; i < S3_OP__COUNT; i++)
		o->m_req[i] = metrics_counter_shared(o->reg, "iolake_gw_requests_total",
						     "S3 requests dispatched, by operation",
						     METRICS_LABELS("op", s3_op_name(i)));
	o->m_unavail = metrics_counter_shared(o->reg, "iolake_gw_unavailable_total",
					      "requests answered 503 ServiceUnavailable", NULL);
	o->m_denied = metrics_counter_shared(o->reg, "iolake_gw_access_denied_total",
					     "authorization decisions that refused (s3_authz)",
					     NULL);
	o->m_cred_lookups = metrics_counter_shared(o->reg, "iolake_gw_cred_lookups_total",
						   "access keys looked up in meta (credential "
						   "cache misses, positive and negative)", NULL);
	o->m_map_refreshes = metrics_counter_shared(o->reg, "iolake_gw_map_refreshes_total",
						    "cluster maps fetched at once because an OSD "
						    "refused a shard placed with an older map", NULL);
	/* Per-op latency and errors: see below; the loops share them. */
	o->stats = gw_stats_new(o->reg);
	if (!o->stats)
		LOG_WARN("s3: no per-operation request statistics", "errno=%d", errno);
	if (X(o)->index > 0)
		return;
	static const struct {
		const char *name, *help;
		metrics_gauge_fn fn;
	} g[] = {
		{ "iolake_gw_data_puts", "erasure-coded PUTs completed", g_puts },
		{ "iolake_gw_data_puts_failed", "erasure-coded PUTs failed", g_puts_failed },
		{ "iolake_gw_data_gets", "erasure-coded GETs started", g_gets },
		{ "iolake_gw_data_gets_failed", "GETs that could not read enough shards", g_gets_failed },
		{ "iolake_gw_data_decodes", "segments rebuilt from parity", g_decodes },
		{ "iolake_gw_data_shard_put_failures", "PutShard calls failed", g_shard_put_failures },
		{ "iolake_gw_data_shard_get_failures", "GetShard calls failed or mismatching", g_shard_get_failures },
		{ "iolake_gw_data_buffered_bytes", "segment and decode buffer bytes held", g_buffered_bytes },
		{ "iolake_gw_data_pool_idle_bytes", "freed segment buffers kept for reuse (at most 256 MiB per gateway loop)", g_pool_idle_bytes },
		{ "iolake_gw_data_hedges", "segments that asked parity because a shard read was slow", g_hedges },
		{ "iolake_gw_data_hedge_wins", "hedged segments decoded before the slow read answered", g_hedge_wins },
		{ "iolake_gw_data_shard_gets_avoided", "data shard reads not tried first: OSD down or circuit open", g_shard_gets_avoided },
		{ "iolake_gw_data_hedge_delay_ms", "hedge delay now: p95 of shard reads, clamped", g_hedge_delay_ms },
		{ "iolake_gw_data_shard_puts_abandoned", "shard writes still out when their segment's quorum grace ended (recorded missing)", g_shard_puts_abandoned },
		{ "iolake_gw_data_shard_puts_late", "shard writes that ended after their segment settled", g_shard_puts_late },
		{ "iolake_gw_data_put_grace_ms", "quorum PUT grace now: 2 x p99 of shard writes, clamped", g_put_grace_ms },
		{ "iolake_gw_map_epoch", "cluster map epoch held (loop 0's)", g_epoch },
		{ "iolake_gw_osds_up", "OSDs up in the map held (loop 0's)", g_up },
		{ "iolake_gw_loops_ready", "gateway loops whose map is placed with a write quorum up (/health/ready is 200 when all are)", g_loops_ready },
		{ "iolake_gw_policy_cache_hits", "bucket policies found compiled (s3_policy_cache)", g_policy_hits },
		{ "iolake_gw_policy_cache_misses", "bucket policies parsed (s3_policy_cache)", g_policy_misses },
	};
	for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++)
		metrics_gauge_fn_new(o->reg, g[i].name, g[i].help, NULL, g[i].fn, o);
	rpc_health_register_metrics(o->reg); /* PINGs, circuits, fast fails */
	md5_svc_register_metrics(o->reg);    /* MD5 lanes (ETags) */
	/* gw_stats (above): per-op latency and errors for /metrics and the
	 * admin API's /api/v1/stats, registered at the first request's end
	 * unless another module registered them (gw_stats.h). Out of memory:
	 * the gateway runs without those figures. */
}

struct gw_stats *s3_ops_stats(struct s3_ops *o)
{
	return o->stats;
}

struct gw_gc *s3_ops_gc(struct s3_ops *o)
{
	return o->gc;
}

struct gw_map *s3_ops_map(struct s3_ops *o)
{
	return o->map;
}

/* gw_data's PUT met an OSD with a newer map ("misplaced"): fetch this
 * loop's map now rather than when the watch answers (a client's retry
 * then places with the new one). */
static void on_stale_map(void *ud)
{
	struct s3_ops *o = ud;
	if (gw_map_refresh(o->map) && o->m_map_refreshes)
		metrics_counter_inc(o->m_map_refreshes);
}

/* gw_data saw a degraded PG: queue a rescan flag (never on the request's
 * critical path: gw_heal only sets a bit). */
static void on_degraded(void *ud, uint32_t pg, enum gw_data_degraded why)
{
	struct s3_ops *o = ud;
	struct ops_x *x = X(o);
	if (!o->heal && x->peers && x->peers->flag_degraded) {
		x->peers->flag_degraded(x->peers->ud, pg, why);   /* to loop 0 */
		return;
	}
	s3_ops_flag_degraded(o, pg, why);
}

void s3_ops_flag_degraded(struct s3_ops *o, uint32_t pg, enum gw_data_degraded why)
{
	if (o->heal)
		gw_heal_flag(o->heal, pg, why == GW_DATA_PUT_PARTIAL ? GW_HEAL_PUT_PARTIAL
								     : GW_HEAL_READ_BAD_SHARD);
}

void s3_ops_kick_gc(struct s3_ops *o)
{
	struct ops_x *x = X(o);
	if (!o->gc && x->peers && x->peers->kick_gc) {
		x->peers->kick_gc(x->peers->ud);   /* to loop 0 */
		return;
	}
	gw_gc_kick(o->gc);
}

/* This loop's own conditions, from its map alone. */
static bool loop_ready(struct s3_ops *o)
{
	return gw_map_epoch(o->map) > 0 && gw_map_placed(o->map) &&
	       gw_map_osds_up(o->map) >= o->quorum;
}

/* gw_map's on_change, on this loop: publish its readiness to the others
 * (a map with too few OSDs up takes it back). */
static void on_map_change(void *arg)
{
	struct ops_x *x = arg;
	if (x->peers)
		atomic_store(&x->peers->ready[x->index], loop_ready(&x->o));
}

int s3_ops_new(uv_loop_t *loop, const struct s3_ops_cfg *cfg, struct s3_ops **out)
{
	if (!cfg->n_meta)
		return -EINVAL;
	if (cfg->peers && (cfg->peers->n > S3_OPS_MAX_LOOPS || cfg->loop_index >= cfg->peers->n))
		return -EINVAL;
	struct ops_x *x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	struct s3_ops *o = &x->o;
	x->peers = cfg->peers;
	x->index = cfg->peers ? cfg->loop_index : 0;
	bool first = x->index == 0;   /* runs the background workers */
	int rc = -ENOMEM;
	o->loop = loop;
	if (!(o->policies = s3_policy_cache_new(S3_POLICY_CACHE_DEFAULT)) ||
	    !(o->acl_scratch = malloc(2 * sizeof(*o->acl_scratch))))
		goto err_free;
	snprintf(o->region, sizeof(o->region), "%s", cfg->region ? cfg->region : "us-east-1");
	o->inline_max = cfg->inline_max_bytes ? cfg->inline_max_bytes : 4096;
	o->min_part = cfg->debug_min_part_bytes ? cfg->debug_min_part_bytes : 5ull << 20;
	o->reg = cfg->metrics;
	if (!o->reg) {
		o->reg = metrics_registry_new();
		o->own_reg = true;
		if (!o->reg || iol_check_register_metrics(o->reg))
			goto err_free;
	}
	struct gw_data_opts dop = cfg->data;
	if (!dop.k && !dop.m)
		dop.k = 4, dop.m = 2;
	/* 1 MiB segments (256 KiB shards at 4+2) unless --segment-size
	 * says (gw_loops.h), not gw_data's 4 MiB: a PUT holds window + 1
	 * segments and their parity, and the gateway serves many PUTs at
	 * once; and a GET's first byte waits for its first segment whole.
	 * 2 MiB: docs/performance.md, branch seg2m. */
	if (!dop.segment_bytes)
		dop.segment_bytes = 1u << 20;
	dop.inline_max_bytes = o->inline_max;
	dop.on_degraded = on_degraded;
	dop.degraded_ud = o;
	dop.on_stale_map = on_stale_map;
	dop.stale_map_ud = o;
	rc = gw_data_new(loop, &dop, &o->data);
	if (rc)
		goto err_reg;
	o->quorum = dop.write_quorum ? dop.write_quorum : dop.k + (dop.m ? 1 : 0);
	struct meta_client_opts mo = { .members = cfg->meta, .n_members = cfg->n_meta,
				       .retry_for_ms = 10000 };
	rc = meta_client_new(loop, &mo, &o->mc);
	if (rc)
		goto err_ec;
	rc = gw_map_start(loop, cfg->meta, cfg->n_meta, on_map_change, x, &o->map);
	if (rc)
		goto err_mc;
	register_metrics(o);
	o->bcache = gw_bcache_new(GW_BCACHE_SLOTS, GW_BCACHE_TTL_MS, o->reg);   /* rtt: NULL: none */
	o->bread = gw_bread_new(o->mc, GW_BREAD_SLOTS, o->reg);   /* NULL: reads unshared */
	o->md5b = gw_md5b_new(loop);   /* NULL: each ETag hashed alone */
	rc = first ? gw_heal_new(loop, o->mc, o->reg, NULL, &o->heal) : 0;
	if (rc) {
		gw_map_close(o->map);
		goto err_mc;
	}
	if (cfg->gc_interval_ms && first) {
		struct gw_gc_opts go = { .interval_ms = cfg->gc_interval_ms };
		rc = gw_gc_start(loop, o->mc, o->map, o->data, o->reg, &go, &o->gc);
		if (rc) {
			gw_heal_close(o->heal);
			gw_map_close(o->map);
			goto err_mc;
		}
	}
	if (first)   /* a process-wide setting: set once, before the other loops start */
		s3_lc_set_day_ms(cfg->lc_day_ms);
	if (cfg->lc_interval_ms && first) {
		struct lc_worker_opts lo = { .interval_ms = cfg->lc_interval_ms,
					     .day_ms = s3_lc_day_ms(),
					     .holder = cfg->lc_holder };
		if (lc_worker_start(loop, o->mc, o->reg, &lo, &o->lc))
			LOG_WARN("lifecycle: worker not started", "interval_ms=%u", cfg->lc_interval_ms);
	}
	if (x->peers)
		atomic_store(&x->peers->ops[x->index], o);
	*out = o;
	return 0;
err_mc:
	gw_stats_free(o->stats);
	meta_client_close(o->mc);
err_ec:
	gw_data_free(o->data);
err_reg:
	if (o->own_reg)
		metrics_registry_free(o->reg);
err_free:
	gw_bcache_free(o->bcache);   /* rtt */
	gw_bread_free(o->bread);
	gw_md5b_close(o->md5b);
	s3_policy_cache_free(o->policies);
	free(o->acl_scratch);
	free(x);
	return rc;
}

const struct s3_handler *const s3_handler_tables[] = {
	s3_bucket_handlers, s3_list_handlers,      s3_put_handlers,     s3_get_handlers,
	s3_delete_handlers, s3_multipart_handlers, s3_part_handlers,    s3_copy_handlers,
	s3_tagging_handlers, s3_attrs_handlers,   s3_access_handlers,  s3_bucket_policy_handlers,
	s3_cors_handlers,   s3_version_handlers,   s3_lifecycle_handlers,
	s3_lock_handlers,   s3_sse_config_handlers, s3_list_parts_handlers, s3_unset_handlers,
};
const size_t s3_n_handler_tables = sizeof(s3_handler_tables) / sizeof(s3_handler_tables[0]);

static uint64_t creds_generation_hook(void *ctx)
{
	return gw_map_creds_epoch(((struct s3_ops *)ctx)->map);
}

void s3_ops_bind(struct s3_ops *o, struct s3_server_cfg *s)
{
	s->ops_ctx = o;
	s->creds.lookup = cred_lookup;
	s->creds.ctx = o;
	s->ready = ready_hook;
	s->creds_generation = creds_generation_hook;
	s->metrics = metrics_hook;
	s->http.metrics = o->reg; /* the HTTP layer's counters (limits, TLS) */
	/* Every operation goes through the gate (s3_rq_gate: the one
	 * authorization point), which runs its row's handler when allowed;
	 * so anonymous requests may reach it too. */
	s->anonymous_ok = true;
	for (size_t m = 0; m < s3_n_handler_tables; m++)
		for (const struct s3_handler *h = s3_handler_tables[m]; h->fn; h++) {
			if (o->rows[h->op])
				LOG_ERROR("s3: an operation in two handler tables", "op=%s",
					  s3_op_name(h->op));
			o->rows[h->op] = h;
			s->ops[h->op] = s3_rq_gate;
		}
	/* The CORS preflight authorizes nothing (it only reads the bucket's
	 * CORS configuration): not through the gate (s3_cors.h). */
	s->ops[S3_OP_OptionsObject] = s3_cors_preflight;
	/* A browser POST's signer is in its body: it authorizes itself, with
	 * s3_rq_decide for s3:PutObject, once its fields are in (s3_post.h). */
	s->ops[S3_OP_PostObject] = s3_post_object;
}

bool s3_ops_ready(struct s3_ops *o)
{
	struct ops_x *x = X(o);
	bool own = loop_ready(o);
	unsigned n = x->peers ? x->peers->n : 1;
	unsigned loops = own;   /* ready loops: this one by its live map, the others by their word */
	for (unsigned i = 0; x->peers && i < n; i++)
		if (i != x->index)
			loops += atomic_load(&x->peers->ready[i]);
	if (own && loops == n)
		return true;
	/* Asked and not ready: say which condition, at most every 5 s per
	 * loop (a probe every 200 ms would flood the log). */
	uint64_t now = loop_now_ms();
	if (!o->not_ready_logged_ms || now - o->not_ready_logged_ms >= 5000) {
		o->not_ready_logged_ms = now;
		LOG_INFO("not ready",
			 "map_epoch=%llu placed=%d osds_up=%u write_quorum=%u loops_ready=%u/%u",
			 (unsigned long long)gw_map_epoch(o->map), gw_map_placed(o->map),
			 gw_map_osds_up(o->map), o->quorum, loops, n);
	}
	return false;
}

/* gw_data_free requires no live operation; deletes started after a commit
 * (and calls of freed PUTs/GETs) end once their channels closed, a few
 * loop turns after gw_map_close. Poll for that, then free. */
struct data_reaper {
	uv_timer_t t;
	struct gw_data *d;
};

static void on_reaper_closed(uv_handle_t *h)
{
	free(h->data);
}

static void on_reaper(uv_timer_t *t)
{
	struct data_reaper *r = t->data;
	struct gw_data_stats st;
	gw_data_stats(r->d, &st);
	if (st.live_ops)
		return;
	gw_data_free(r->d);
	uv_timer_stop(t);
	uv_close((uv_handle_t *)t, on_reaper_closed);
}

static void data_free_when_idle(uv_loop_t *loop, struct gw_data *d)
{
	struct gw_data_stats st;
	gw_data_stats(d, &st);
	struct data_reaper *r = st.live_ops ? malloc(sizeof(*r)) : NULL;
	if (!r) {
		if (st.live_ops) /* no memory to wait with: leak d rather than abort */
			return;
		gw_data_free(d);
		return;
	}
	r->d = d;
	uv_timer_init(loop, &r->t);
	r->t.data = r;
	uv_timer_start(&r->t, on_reaper, 1, 5);
}

void s3_ops_free(struct s3_ops *o)
{
	if (!o)
		return;
	if (X(o)->peers)   /* loop 0's gauges stop reading it */
		atomic_store(&X(o)->peers->ops[X(o)->index], NULL);
	gw_gc_close(o->gc);   /* before the client: its calls come back below */
	lc_worker_close(o->lc);
	gw_heal_close(o->heal);
	meta_client_close(o->mc);
	gw_map_close(o->map);   /* pending shard calls come back CANCELLED */
	data_free_when_idle(o->loop, o->data);
	gw_stats_free(o->stats);
	if (o->own_reg)
		metrics_registry_free(o->reg);
	gw_bcache_free(o->bcache);   /* rtt */
	gw_bread_free(o->bread);     /* after the client: it answered the calls out */
	gw_md5b_close(o->md5b);
	s3_policy_cache_free(o->policies);
	free(o->acl_scratch);
	free(X(o));
}
