/*
 * node.c — a meta member: its options, the RPC server, the Raft transport
 * multiplexer every group's raft runs over (RPC port + 1), the shared
 * block cache, the timers that drive the groups, and what only the root
 * group's leader does: the cluster map cache, InitMap, OSD liveness and
 * PG health (contracts in node.h; the groups are group.c and hosting.c,
 * the RPC handlers service.c and service_read.c).
 *
 * Invariants:
 *   - The root group (id 0) is opened first and closed with the member; it
 *     lives in the data dir itself (DIR/raft, DIR/state, DIR/snap), as a
 *     member did before groups existed, so old data dirs keep working.
 *   - Work that must not run inside libraft's callbacks (proposals, reads,
 *     map refresh, group starts and stops) runs on the kick timer, the
 *     next loop turn.
 *   - Times inside ops are the proposer's wall clock; apply reads no clock.
 *
 * Thread: the member's loop.
 * Not here: one group's Raft (group.c), which groups run (hosting.c).
 */
#include "meta/node_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/err.h"
#include "common/log.h"

/* ------------------------------------------------------------ helpers */

uint64_t node_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int split_addr(const char *addr, char *host, size_t hostlen, long *port)
{
	const char *colon = strrchr(addr, ':');
	if (!colon || colon == addr || (size_t)(colon - addr) >= hostlen)
		return -EINVAL;
	char *end;
	long p = strtol(colon + 1, &end, 10);
	if (*end || end == colon + 1 || p < 0 || p > 65535)
		return -EINVAL;
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = 0;
	*port = p;
	return 0;
}

static int shift_port(const char *addr, long delta, char out[META_NODE_ADDR_MAX])
{
	char host[META_NODE_ADDR_MAX];
	long port;
	if (split_addr(addr, host, sizeof(host), &port))
		return -EINVAL;
	port += delta;
	if (port < 1 || port > 65535)
		return -EINVAL;
	int k = snprintf(out, META_NODE_ADDR_MAX, "%s:%ld", host, port);
	return k > 0 && k < META_NODE_ADDR_MAX ? 0 : -EINVAL;
}

int meta_node_raft_addr(const char *rpc_addr, char out[META_NODE_ADDR_MAX])
{
	return shift_port(rpc_addr, 1, out);
}

int meta_node_rpc_addr(const char *raft_addr, char out[META_NODE_ADDR_MAX])
{
	return shift_port(raft_addr, -1, out);
}

int meta_node_parse_peer(const char *s, struct meta_peer *p)
{
	const char *at = strchr(s, '@');
	if (!at || at == s)
		return -EINVAL;
	char *end;
	unsigned long long id = strtoull(s, &end, 10);
	if (end != at || id == 0)
		return -EINVAL;
	char host[META_NODE_ADDR_MAX];
	long port;
	if (split_addr(at + 1, host, sizeof(host), &port) || port == 0 || port == 65535)
		return -EINVAL;
	p->id = id;
	p->addr = at + 1;
	return 0;
}

const char *meta_node_role_name(int role)
{
	switch (role) {
	case RAFT_LEADER: return "leader";
	case RAFT_FOLLOWER: return "follower";
	case RAFT_CANDIDATE: return "candidate";
	default: return "unavailable";
	}
}

bool node_is_leader(struct meta_node *n)
{
	return n->root && group_is_leader(n->root);
}

static void node_on_kick(uv_timer_t *t);

void node_kick(struct meta_node *n)
{
	if (n->closing || n->kick_armed || !n->kick.loop)
		return;   /* before start finished, the first tick does the work */
	n->kick_armed = true;
	uv_timer_start(&n->kick, node_on_kick, 0, 0);
}

/* ------------------------------------------------------------ root hooks */

static void on_commit_turn(uv_check_t *h)
{
	struct meta_node *n = h->data;
	if (n->m_entries_per_commit)
		metrics_histogram_observe(n->m_entries_per_commit, n->turn_entries);
	n->turn_entries = 0;
	uv_check_stop(h);
}

void node_root_applied(struct meta_node *n, const struct meta_op_result *res, int nops)
{
	if (n->commit_turn.loop && !n->closing && n->turn_entries++ == 0)
		uv_check_start(&n->commit_turn, on_commit_turn);
	for (int i = 0; i < nops; i++) {
		if (res[i].epoch > n->epoch) {
			n->epoch = res[i].epoch;
			n->map_dirty = true;
		}
		if (res[i].groups)
			n->groups_dirty = true;
	}
	if (n->map_dirty || n->groups_dirty)
		node_kick(n);   /* refresh the map; start or stop groups */
}

void node_root_restored(struct meta_node *n)
{
	n->epoch = node_read_epoch(n);
	n->map_dirty = true;
	n->groups_dirty = true;   /* the table may differ wholesale */
	node_kick(n);
}

uint64_t node_read_epoch(struct meta_node *n)
{
	Iolake__Meta__ClusterMap *m = NULL;
	if (meta_state_get_map(n->root->state, &m))
		return 0;
	uint64_t e = m->epoch;
	meta_state_free_msg(m);
	return e;
}

/* ---------------------------------------------------- leader-internal ops */

struct own_op {
	struct sub sub;
	Iolake__Meta__Op op;
	Iolake__Meta__Op *opp;
	Iolake__Meta__InitMap init;
	Iolake__Meta__SetOsdState set;
	uint32_t osd_id;
	Iolake__Meta__CreateGroup cg;
	Iolake__Meta__GroupDesc gd;
	Iolake__Meta__GroupVoter voters[META_GROUP_VOTERS_MAX], *vp[META_GROUP_VOTERS_MAX];
	char addrs[META_GROUP_VOTERS_MAX][META_NODE_ADDR_MAX];
};

static void own_done(struct meta_node *n, struct sub *s, int err)
{
	struct own_op *o = container_of(s, struct own_op, sub);
	if (o->op.body_case == IOLAKE__META__OP__BODY_INIT_MAP) {
		n->init_map_pending = false;
		if (err && err != IOL_EEXISTS)
			LOG_WARN("InitMap failed", "err=%s", iol_strerror(err));
	} else if (o->op.body_case == IOLAKE__META__OP__BODY_CREATE_GROUP) {
		n->range_group_pending--;
		LOG_INFO("range group created", "group=%llu err=%s", (unsigned long long)o->gd.id,
			 err ? iol_strerror(err) : "ok");
	} else {
		LOG_INFO("osd state proposed", "osd=%u up=%d in=%d err=%s", o->osd_id, o->set.up,
			 o->set.in, err ? iol_strerror(err) : "ok");
	}
	free(o);
}

static void propose_own(struct meta_node *n, struct own_op *o)
{
	o->opp = &o->op;
	o->sub.ops = &o->opp;
	o->sub.n_ops = 1;
	o->sub.bytes = protobuf_c_message_get_packed_size(&o->op.base) + 8;
	o->sub.done = own_done;
	if (group_enqueue(n->root, &o->sub))
		own_done(n, &o->sub, -EAGAIN);
}

static void propose_init_map(struct meta_node *n)
{
	if (n->init_map_pending || n->epoch)
		return;
	Iolake__Meta__ClusterMap *m = NULL;
	if (meta_state_get_map(n->root->state, &m) == 0) {
		meta_state_free_msg(m);
		return;
	}
	struct own_op *o = calloc(1, sizeof(*o));
	if (!o)
		return;
	iolake__meta__op__init(&o->op);
	iolake__meta__init_map__init(&o->init);
	o->init.pg_count = n->o.pg_count;
	o->init.k = n->o.ec_k;
	o->init.m = n->o.ec_m;
	o->init.down_keeps_slot = true;
	o->init.expect_osds = n->o.expect_osds;
	o->init.time_ms = node_wall_ms();
	o->op.body_case = IOLAKE__META__OP__BODY_INIT_MAP;
	o->op.init_map = &o->init;
	n->init_map_pending = true;
	propose_own(n, o);
}

static void propose_osd_state(struct meta_node *n, uint32_t id, bool set_up, bool up, bool set_in,
			      bool in)
{
	struct own_op *o = calloc(1, sizeof(*o));
	if (!o)
		return;
	iolake__meta__op__init(&o->op);
	iolake__meta__set_osd_state__init(&o->set);
	o->osd_id = id;
	o->set.id = id;
	o->set.set_up = set_up;
	o->set.up = up;
	o->set.set_in = set_in;
	o->set.in = in;
	o->set.time_ms = node_wall_ms();
	o->op.body_case = IOLAKE__META__OP__BODY_SET_OSD_STATE;
	o->op.set_osd_state = &o->set;
	propose_own(n, o);
}

static bool propose_range_group(struct meta_node *n, uint64_t id);

/* The range keeper (root leader): while fewer than --range-groups live
 * groups >= 1 exist, create the missing ones (ids: above every id ever
 * used) over every voter of the root, all in one round, the next round
 * once they are applied. hosting.c spreads their leaders; CreateBucket
 * and SplitRange spread ranges over them. */
static void keep_range_groups(struct meta_node *n)
{
	if (!n->o.range_groups || n->range_group_pending)
		return;
	Iolake__Meta__GroupDesc **v = NULL;
	size_t cnt = 0;
	if (meta_state_list_groups(n->root->state, &v, &cnt))
		return;
	uint64_t max_id = 0;
	size_t live = 0;
	for (size_t i = 0; i < cnt; i++) {
		if (v[i]->id > max_id)
			max_id = v[i]->id;
		live += !v[i]->deleted;
		meta_state_free_msg(v[i]);
	}
	free(v);
	for (uint64_t id = max_id + 1; live < n->o.range_groups && live < META_GROUPS_MAX; id++, live++)
		if (!propose_range_group(n, id))
			break;
}

static bool propose_range_group(struct meta_node *n, uint64_t id)
{
	struct own_op *o = calloc(1, sizeof(*o));
	if (!o)
		return false;
	iolake__meta__op__init(&o->op);
	iolake__meta__create_group__init(&o->cg);
	iolake__meta__group_desc__init(&o->gd);
	o->gd.id = id;
	const struct raft_configuration *c = &n->root->raft.configuration;
	for (unsigned k = 0; k < c->n && o->gd.n_voters < META_GROUP_VOTERS_MAX; k++) {
		if (c->servers[k].role != RAFT_VOTER ||
		    meta_node_rpc_addr(c->servers[k].address, o->addrs[o->gd.n_voters]))
			continue;
		Iolake__Meta__GroupVoter *gv = &o->voters[o->gd.n_voters];
		iolake__meta__group_voter__init(gv);
		gv->id = c->servers[k].id;
		gv->address = o->addrs[o->gd.n_voters];
		o->vp[o->gd.n_voters++] = gv;
	}
	if (o->gd.n_voters == 0) {
		free(o);
		return false;
	}
	o->gd.voters = o->vp;
	o->cg.group = &o->gd;
	o->op.body_case = IOLAKE__META__OP__BODY_CREATE_GROUP;
	o->op.create_group = &o->cg;
	n->range_group_pending++;
	propose_own(n, o);
	return true;
}

/* Each hosted group's share of the range table (every member has the
 * root's state, so every member can say). */
static void range_metrics(struct meta_node *n)
{
	for (size_t i = 0; i < n->n_groups; i++) {
		uint64_t cnt = 0;
		if (n->groups[i]->id && !meta_state_group_ranges(n->root->state, n->groups[i]->id, &cnt))
			m_set(n->groups[i]->m.ranges, (int64_t)cnt);
	}
}

/* ------------------------------------------------------ OSD liveness */

struct beat *node_beat(struct meta_node *n, uint32_t id, bool create)
{
	for (size_t i = 0; i < n->n_beats; i++)
		if (n->beats[i].id == id)
			return &n->beats[i];
	if (!create)
		return NULL;
	if (n->n_beats == n->cap_beats) {
		size_t cap = n->cap_beats ? 2 * n->cap_beats : 64;
		struct beat *nb = realloc(n->beats, cap * sizeof(*nb));
		if (!nb)
			return NULL;
		n->beats = nb;
		n->cap_beats = cap;
	}
	struct beat *b = &n->beats[n->n_beats++];
	memset(b, 0, sizeof(*b));
	b->id = id;
	return b;
}

/* A beat from osd: bring it back up (and in) when the map says otherwise.
 * An OSD an operator took out (admin_out) comes up but stays out; apply
 * enforces that too, for a proposal that raced the operator's op. */
void node_osd_beat(struct meta_node *n, const Iolake__Meta__OsdInfo *osd)
{
	uint64_t now = loop_now_ms();
	struct beat *b = node_beat(n, osd->id, true);
	if (!b)
		return;
	b->last_ms = now;
	bool want_in = !osd->admin_out;
	if ((!osd->up || (want_in && !osd->in)) && now - b->up_proposed_ms >= 1000) {
		b->up_proposed_ms = now;
		propose_osd_state(n, osd->id, true, true, want_in, want_in);
	}
}

/* Leader: mark OSDs down, then out, whose beats stopped. A new leader
 * counts from its election (it has no older beat times), and an OSD the
 * leader sees for the first time (just registered) from that moment: it
 * gets the whole grace period for its first beat. */
static void sweep_osds(struct meta_node *n)
{
	if (!n->map)
		return;
	uint64_t now = loop_now_ms();
	for (size_t i = 0; i < n->map->n_osds; i++) {
		const Iolake__Meta__OsdInfo *o = n->map->osds[i];
		struct beat *b = node_beat(n, o->id, true);
		if (!b)
			return;
		if (!b->last_ms)
			b->last_ms = now;
		uint64_t last = b->last_ms > n->leader_since_ms ? b->last_ms : n->leader_since_ms;
		uint64_t quiet = now - last;
		bool down = o->up && quiet >= n->o.osd_down_after_ms;
		bool out = o->in && quiet >= n->o.osd_out_after_ms;
		if ((down || out) && now - b->down_proposed_ms >= 1000) {
			b->down_proposed_ms = now;
			propose_osd_state(n, o->id, down, false, out, false);
		}
	}
}

/* --------------------------------------------------------- PG health */

const char *const node_flag_reasons[NODE_FLAG_REASONS] = {
	"put_partial", "read_bad_shard", "scrub", "other",
};

void node_pg_metrics(struct meta_node *n, uint64_t now_ms)
{
	struct meta_pg_totals t;
	memset(&t, 0, sizeof(t));
	if (n->map && node_is_leader(n))
		meta_pgstate_derive_all(n->pgs, n->map, now_ms, NULL, &t);
	for (int s = 0; s < META_PG__COUNT; s++)
		metrics_gauge_set(n->m_pg_state[s], t.counts[s]);
	metrics_gauge_set(n->m_rec_bytes, (int64_t)t.bytes_missing);
	metrics_gauge_set(n->m_rec_stripes, (int64_t)t.stripes_missing);
	metrics_gauge_set(n->m_rec_rate, (int64_t)t.rate_bytes_per_s);
	metrics_gauge_set(n->m_rec_eta, (int64_t)t.eta_s);
	metrics_gauge_set(n->m_unfound, (int64_t)t.unfound);
	metrics_gauge_set(n->m_unfound_live, (int64_t)t.unfound_live);
}

/* ------------------------------------------------------------ timers */

static void refresh_map(struct meta_node *n)
{
	n->map_dirty = false;
	Iolake__Meta__ClusterMap *m = NULL;
	if (meta_state_get_map(n->root->state, &m))
		return;
	meta_state_free_msg(n->map);
	n->map = m;
	n->epoch = m->epoch;
	metrics_gauge_set(n->m_epoch, (int64_t)m->epoch);
	node_wake_watches(n, false);
}

static void node_on_kick(uv_timer_t *t)
{
	struct meta_node *n = t->data;
	n->kick_armed = false;
	if (n->closing)
		return;
	if (n->map_dirty)
		refresh_map(n);
	if (n->groups_dirty) {
		n->groups_dirty = false;
		hosting_reconcile(n);
	}
	/* Each group once; work a group's flush or reads kick again goes to
	 * the next turn. */
	struct meta_group *g = n->kicked;
	n->kicked = NULL;
	while (g) {
		struct meta_group *next = g->kick_next;
		g->kicked = false;
		g->kick_next = NULL;
		group_on_kick(g);
		g = next;
	}
}

static void on_tick(uv_timer_t *t)
{
	struct meta_node *n = t->data;
	if (n->closing)
		return;
	uint64_t now = loop_now_ms();
	struct meta_group *root = n->root;
	for (size_t i = 0; i < n->n_groups; i++)
		if (n->groups[i] != root)
			group_tick(n->groups[i], now);
	int was = group_tick(root, now);
	int role = root->role;
	if (role == RAFT_LEADER && was != RAFT_LEADER) {
		n->leader_since_ms = now;
		n->n_beats = 0;
		meta_pgstate_reset(n->pgs);   /* reports of an older term may be stale */
	}
	if (role != RAFT_LEADER && was == RAFT_LEADER) {
		meta_pgstate_reset(n->pgs);
		node_pg_metrics(n, now);  /* zero: a follower's view means nothing */
	}
	if (role == RAFT_LEADER && group_applied(root) >= root->raft.commit_index) {
		propose_init_map(n);
		if (now - n->last_sweep_ms >= 200) {
			n->last_sweep_ms = now;
			sweep_osds(n);
		}
		if (now - n->last_pg_metrics_ms >= 1000) {
			n->last_pg_metrics_ms = now;
			node_pg_metrics(n, now);
		}
		if (now - n->last_range_keep_ms >= 500) {
			n->last_range_keep_ms = now;
			keep_range_groups(n);
		}
	}
	node_move_tick(n, now, role == RAFT_LEADER);
	group_members_tick(n, now, role == RAFT_LEADER);   /* issue 13: group_members.c */
	if (n->map_dirty)
		refresh_map(n);
	node_expire_watches(n, now);
	if (n->groups_retry_ms && now >= n->groups_retry_ms) {
		n->groups_retry_ms = 0;
		n->groups_dirty = true;
		node_kick(n);
	}
	if (now - n->last_spread_ms >= SPREAD_INTERVAL_MS) {
		n->last_spread_ms = now;
		hosting_spread(n, now);
		range_metrics(n);
	}
	metrics_gauge_set(n->m_groups, (int64_t)n->n_groups);
	node_direct_update(n);
}

/* ------------------------------------------------------------- start */

static void node_free(struct meta_node *n)
{
	meta_state_free_msg(n->map);
	meta_pgstate_free(n->pgs);
	meta_state_cache_free(n->cache);
	if (n->own_metrics)
		metrics_registry_free(n->metrics);
	free(n->groups);
	free(n->beats);
	free(n->res);
	free(n->batch_ops);
	node_direct_free(n);
	free(n);
}

static void maybe_done(struct meta_node *n)
{
	if (--n->close_pending > 0)
		return;
	void (*cb)(void *) = n->close_cb;
	void *ud = n->close_ud;
	node_free(n);
	if (cb)
		cb(ud);
}

static void on_handle_closed(uv_handle_t *h)
{
	maybe_done(h->data);
}

static void on_mux_closed(void *ud)
{
	maybe_done(ud);
}

void node_close_step(struct meta_node *n)
{
	maybe_done(n);
}

static int register_metrics(struct meta_node *n)
{
	char id[24];
	snprintf(id, sizeof(id), "%llu", (unsigned long long)n->o.id);
	const char *const *l = METRICS_LABELS("member", id);
	struct metrics_registry *g = n->metrics;
	n->m_epoch = metrics_gauge_new(g, "iolake_meta_map_epoch", "Cluster map epoch.", l);
	if (!n->m_epoch)
		return -errno;

	/* PG health: meaningful on the leader only (a follower shows 0). Every
	 * state is registered up front, so each one renders, 0 included. */
	for (int s = 0; s < META_PG__COUNT; s++) {
		n->m_pg_state[s] = metrics_gauge_new(
			g, "iolake_pg_state", "PGs in each state (leader's view; 0 on followers).",
			METRICS_LABELS("member", id, "state", meta_pgstate_name((enum meta_pg_state)s)));
		if (!n->m_pg_state[s])
			return -errno;
	}
	for (int r = 0; r < NODE_FLAG_REASONS; r++) {
		n->m_pg_flags[r] = metrics_counter_new(
			g, "iolake_pg_flags_total", "PGs flagged for a rescan by FlagPgs, by reason.",
			METRICS_LABELS("member", id, "reason", node_flag_reasons[r]));
		if (!n->m_pg_flags[r])
			return -errno;
	}
	static const uint64_t ent_b[] = { 1, 2, 3, 4, 6, 8, 12, 16, 32, 64, 128 };
	n->m_entries_per_commit = metrics_histogram_new(
		g, "iolake_meta_raft_entries_per_commit",
		"The root's Raft entries applied in one loop turn: made committed by one log "
		"write on a single voter, by one replication round on several.",
		l, ent_b, sizeof(ent_b) / sizeof(ent_b[0]), 1);
	n->m_rec_bytes = metrics_gauge_new(g, "iolake_recovery_bytes_missing",
					   "Shard bytes still to rebuild (valid PG reports).", l);
	n->m_rec_stripes = metrics_gauge_new(g, "iolake_recovery_stripes_missing",
					     "Stripes still lacking a rebuildable shard.", l);
	n->m_rec_rate = metrics_gauge_new(g, "iolake_recovery_rate_bytes_per_second",
					  "Sum of the PGs' recent rebuild rates.", l);
	n->m_rec_eta = metrics_gauge_new(g, "iolake_recovery_eta_seconds",
					 "bytes missing / rate; 0 when done or no rate.", l);
	n->m_unfound = metrics_gauge_new(g, "iolake_pg_unfound_stripes",
					 "Stripes with fewer than k shards (not rebuildable).", l);
	n->m_unfound_live = metrics_gauge_new(g, "iolake_pg_unfound_live_stripes",
					      "Of those, stripes of live objects: acknowledged data "
					      "not readable now.", l);
	n->m_pg_reports = metrics_counter_new(g, "iolake_pg_reports_total",
					      "PgReports received by this member as leader.", l);
	n->m_pg_reports_bad = metrics_counter_new(g, "iolake_pg_reports_rejected_total",
						  "PgReports or flags naming no PG of the map.", l);
	n->m_groups = metrics_gauge_new(g, "iolake_meta_groups",
					"Raft groups this member hosts, the root included.", l);
	if (!n->m_rec_bytes || !n->m_rec_stripes || !n->m_rec_rate || !n->m_rec_eta ||
	    !n->m_unfound || !n->m_unfound_live || !n->m_pg_reports || !n->m_pg_reports_bad || !n->m_groups)
		return -errno;
	n->m_fwd = metrics_counter_new(g, "iolake_meta_forwarded_total",
				       "Submits and reads this member forwarded to a leader.", l);
	n->m_fwd_refused = metrics_counter_new(
		g, "iolake_meta_forward_refused_total",
		"Calls redirected, not forwarded: the forwarded bytes or calls at their bound.", l);
	n->m_fwd_bytes = metrics_gauge_new(g, "iolake_meta_forwarded_bytes",
					   "Request bytes forwarded and not answered yet.", l);
	n->m_direct_reads = metrics_counter_new(
		g, "iolake_meta_direct_reads_total",
		"HeadObject and GetVersion calls answered on their caller's thread (in process, "
		"a single-voter root: meta/node_direct.c).", l);
	if (!n->m_fwd || !n->m_fwd_refused || !n->m_fwd_bytes || !n->m_direct_reads)
		return -errno;
	return 0;
}

int meta_node_start(uv_loop_t *loop, const struct meta_node_opts *opts, struct meta_node **out)
{
	int rc;
	const struct meta_peer *self = NULL;
	for (size_t i = 0; i < opts->n_peers; i++)
		if (opts->peers[i].id == opts->id)
			self = &opts->peers[i];
	if (!opts->id || !opts->data_dir || !opts->listen || !self || opts->n_peers > META_NODE_MAX_PEERS)
		return -EINVAL;
	if (strcmp(self->addr, opts->listen) != 0) {
		LOG_ERROR("this member's address in the peers differs from listen", "peer=%s listen=%s",
			  self->addr, opts->listen);
		return -EINVAL;
	}
	struct meta_node *n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	node_direct_init(n);
	n->loop = loop;
	n->o = *opts;
	n->o.peers = NULL;   /* the caller's; only read here */
	if (!n->o.snapshot_threshold)
		n->o.snapshot_threshold = 1024;
	if (!n->o.snapshot_trailing && !n->o.snapshot_trailing_given)
		n->o.snapshot_trailing = 128;
	if (!n->o.snapshot_bytes)
		n->o.snapshot_bytes = 64ull << 20;
	if (!n->o.raft_segment_bytes)
		n->o.raft_segment_bytes = META_NODE_SEGMENT_BYTES;
	if (!n->o.range_segment_bytes)
		n->o.range_segment_bytes = META_RANGE_SEGMENT_BYTES;
	/* 500 ms (libraft randomizes each timer up to twice that): a group
	 * whose leader is cut off elects another only once a majority of
	 * the rest have timed out themselves (a follower that still has a
	 * leader refuses every vote), and an election split between two
	 * candidates waits one more randomized timeout. With 1 s that put
	 * the writes' gap after a leader isolation at 2.0-2.5 s, and at
	 * 3.3 s after a split vote; docs/architecture.md, "Leader
	 * isolation". */
	if (!n->o.election_timeout_ms)
		n->o.election_timeout_ms = 500;
	if (!n->o.heartbeat_timeout_ms)
		n->o.heartbeat_timeout_ms = 100;
	if (!n->o.osd_down_after_ms)
		n->o.osd_down_after_ms = 10000;
	if (!n->o.osd_out_after_ms)
		n->o.osd_out_after_ms = 60000;
	if (!n->o.pg_count)
		n->o.pg_count = 256;
	if (!n->o.ec_k) {
		n->o.ec_k = 4;
		n->o.ec_m = 2;
	}
	snprintf(n->rpc_addr, sizeof(n->rpc_addr), "%s", opts->listen);
	if (meta_node_raft_addr(opts->listen, n->raft_addr) ||
	    strlen(opts->data_dir) + 16 > sizeof(n->dir)) {
		free(n);
		return -EINVAL;
	}
	snprintf(n->dir, sizeof(n->dir), "%s", opts->data_dir);
	n->res = calloc(META_BATCH_MAX_OPS, sizeof(*n->res));
	n->batch_ops = calloc(META_BATCH_MAX_OPS, sizeof(*n->batch_ops));
	if (!n->res || !n->batch_ops) {
		rc = -ENOMEM;
		goto err_free;
	}
	n->metrics = opts->metrics;
	if (!n->metrics) {
		n->metrics = metrics_registry_new();
		n->own_metrics = true;
		if (!n->metrics) {
			rc = -ENOMEM;
			goto err_free;
		}
	}
	rc = meta_pgstate_new(&n->pgs);
	if (!rc)
		rc = meta_state_cache_new(opts->cache_bytes, &n->cache);
	if (!rc)
		rc = register_metrics(n);
	if (rc)
		goto err_free;

	/* The RPC server first: a taken port fails here, synchronously. */
	struct rpc_server_opts so = { .log_calls = opts->log_calls,
				      .slow_call_ms = opts->slow_op_ms };
	n->srv = rpc_server_new(loop, &so);
	if (!n->srv) {
		rc = -ENOMEM;
		goto err_free;
	}
	if (opts->admin_listen) {
		/* A second server with the same handlers: one rpc_server holds
		 * one TCP listener, and this address must stay out of Raft's
		 * configuration (node_service_register registers on n->srv).
		 * First, so that when its port is taken nothing else is bound
		 * yet (no local name, no port) and a caller may start again
		 * with another address at once. */
		struct rpc_server *main_srv = n->srv;
		n->admin_srv = rpc_server_new(loop, &so);
		rc = n->admin_srv ? 0 : -ENOMEM;
		if (!rc) {
			n->srv = n->admin_srv;
			rc = node_service_register(n);
			n->srv = main_srv;
		}
		if (!rc)
			rc = rpc_server_listen(n->admin_srv, opts->admin_listen);
		if (rc) {
			LOG_ERROR("cannot listen", "admin_addr=%s err=%s", opts->admin_listen,
				  iol_strerror(rc));
			goto err_srv;
		}
	}
	rc = node_service_register(n);
	if (!rc)
		rc = rpc_server_listen(n->srv, opts->listen);
	if (!rc && opts->local_name) {
		char a[96];
		snprintf(a, sizeof(a), "local:%s", opts->local_name);
		rc = rpc_server_listen(n->srv, a);
	}
	if (rc) {
		LOG_ERROR("cannot listen", "addr=%s err=%s", opts->listen, iol_strerror(rc));
		goto err_srv;
	}
	/* Every group's Raft on one port, RPC port + 1 (IPv4 numeric). */
	rc = raft_mux_init(&n->mux, loop, n->raft_addr);
	if (rc) {
		LOG_ERROR("raft start failed", "err=%s raft_addr=%s why=%s", iol_strerror(rc),
			  n->raft_addr, LOG_Q(rc == -EINVAL ? "not an IPv4 HOST:PORT" : uv_strerror(rc)));
		rc = rc == -EINVAL ? -EINVAL : -EIO;
		goto err_srv;
	}

	/* Timers before the root starts: replaying its log on restart applies
	 * entries, and apply kicks the kick timer. meta_node_close closes
	 * them and its close callback finds the member through them. */
	uv_timer_init(loop, &n->tick);
	uv_timer_init(loop, &n->kick);
	uv_check_init(loop, &n->commit_turn);
	n->tick.data = n->kick.data = n->commit_turn.data = n;
	struct raft_configuration conf;
	raft_configuration_init(&conf);
	rc = 0;
	for (size_t i = 0; i < opts->n_peers && !rc; i++) {
		char ra[META_NODE_ADDR_MAX];
		rc = meta_node_raft_addr(opts->peers[i].addr, ra);
		if (!rc)
			rc = raft_configuration_add(&conf, opts->peers[i].id, ra, RAFT_VOTER);
	}
	struct meta_group *root = NULL;
	if (!rc)
		rc = group_open(n, 0, opts->join ? NULL : &conf, &root);
	raft_configuration_close(&conf);
	if (!rc)
		rc = hosting_add(n, root);
	if (rc) {
		if (root)
			group_close(root, false);
		meta_node_close(n, NULL, NULL);
		/* What the operator must act on keeps its name (a state of
		 * another format, a corrupt one); the rest is EIO, as
		 * libraft's own codes are not errnos. */
		if (rc == -ENOMEM || rc == IOL_EBAD_FORMAT || rc == IOL_ECORRUPT)
			return rc;
		return -EIO;
	}
	n->root = root;
	n->epoch = node_read_epoch(n);
	n->map_dirty = true;
	/* The groups the root's table gives this member (its state is as of
	 * its last flush: groups created later start as the log replays). */
	hosting_reconcile(n);
	uv_timer_start(&n->tick, on_tick, 20, 20);
	LOG_INFO("meta member started", "id=%llu listen=%s raft=%s applied=%llu groups=%zu",
		 (unsigned long long)opts->id, opts->listen, n->raft_addr,
		 (unsigned long long)meta_state_applied_index(root->state), n->n_groups);
	*out = n;
	return 0;

err_srv:
	if (n->admin_srv)
		rpc_server_close(n->admin_srv);
	rpc_server_close(n->srv);
err_free:
	node_free(n);
	return rc;
}

void meta_node_close(struct meta_node *n, void (*cb)(void *ud), void *ud)
{
	if (n->closing)
		return;
	n->closing = true;
	node_direct_withdraw(n);   /* before the root closes */
	n->close_cb = cb;
	n->close_ud = ud;
	n->close_pending = 1;   /* until the end of this function */
	if (n->tick.loop) {   /* timers exist once start got that far */
		n->close_pending += 3;
		uv_close((uv_handle_t *)&n->tick, on_handle_closed);
		uv_close((uv_handle_t *)&n->kick, on_handle_closed);
		uv_close((uv_handle_t *)&n->commit_turn, on_handle_closed);
	}
	node_move_close(n);
	rpc_server_close(n->srv);
	if (n->admin_srv)
		rpc_server_close(n->admin_srv);
	node_wake_watches(n, true);
	node_cancel_changes(n);
	/* Groups closing already (deleted, or failed to start) and those
	 * dirs being removed count too; each gives its count back. */
	for (struct meta_group *g = n->closing_groups; g; g = g->close_next)
		n->close_pending++;
	n->close_pending += (int)n->rm_busy;
	while (n->n_groups) {
		struct meta_group *g = n->groups[--n->n_groups];
		group_close(g, false);
	}
	n->root = NULL;
	node_peers_close(n);   /* after the groups: their rounds are orphaned by now */
	if (n->mux) {
		/* Freed once every group's transport is released. */
		n->close_pending++;
		raft_mux_close(n->mux, on_mux_closed, n);
	}
	maybe_done(n);
}

int meta_node_admin_port(const struct meta_node *n)
{
	return n->admin_srv ? rpc_server_port(n->admin_srv) : 0;
}

void meta_node_info(struct meta_node *n, struct meta_node_info *out)
{
	group_info(n->root, out);
	out->forwarded = n->fwd_total;
}

int meta_node_group_info(struct meta_node *n, uint64_t group, struct meta_node_info *out)
{
	struct meta_group *g = hosting_find(n, group);
	if (!g)
		return -ENOENT;
	group_info(g, out);
	return 0;
}

struct meta_state *meta_node_state(struct meta_node *n)
{
	return n->root->state;
}

struct meta_state *meta_node_group_state(struct meta_node *n, uint64_t group)
{
	struct meta_group *g = hosting_find(n, group);
	return g ? g->state : NULL;
}

size_t meta_node_groups(struct meta_node *n, uint64_t *ids, size_t cap)
{
	for (size_t i = 0; i < n->n_groups && i < cap; i++)
		ids[i] = n->groups[i]->id;
	return n->n_groups;
}
