/*
 * service.c — the Meta RPC service of a member (meta.proto `service Meta`):
 * the handler table, decoding calls, finding the Raft group a call
 * addresses, leadership checks, forwarding and redirects, Submit (its
 * checks, sealing secrets, the group's write queue), WatchMap long polls,
 * OSD heartbeats and PG health, Status and Metrics, membership changes.
 * A read is only routed here: queued for a linearizable answer (h_read,
 * node_read.c) or given a direct handler; service_read.c answers it from
 * the state. The Raft side (queues, barriers, FSM) is group.c and node.c.
 *
 * A call with a `group` field (100) goes to that group (0 or absent: the
 * root); a group this member does not host fails NOT_FOUND "no group N on
 * member M". Every other call is the root's. Leader-only calls on a
 * follower fail FAILED_PRECONDITION with "not leader; leader=HOST:PORT",
 * that group's leader (meta/client.c parses it). Input from the network
 * is validated and answered, never asserted on.
 *
 * Thread: the member's loop (node_req_group_id: any thread).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/log.h"
#include "common/rpc_authz.h"
#include "meta/node_internal.h"
#include "meta/secret.h"
#include "meta/service_internal.h"

uint64_t node_req_group_id(struct rpc_req *r)
{
	const ProtobufCMessage *m = rpc_req_msg(r);
	const ProtobufCFieldDescriptor *f =
		protobuf_c_message_descriptor_get_field(m->descriptor, 100);
	if (!f || f->type != PROTOBUF_C_TYPE_UINT64 || f->label == PROTOBUF_C_LABEL_REPEATED)
		return 0;
	return *(const uint64_t *)((const char *)m + f->offset);
}

/* The hosted group r addresses, or NULL after answering NOT_FOUND. */
static struct meta_group *req_group(struct meta_node *n, struct rpc_req *r)
{
	uint64_t id = node_req_group_id(r);
	struct meta_group *g = n->closing ? NULL : hosting_find(n, id);
	if (!g)
		rpc_fail(r, RPC_NOT_FOUND, "no group %llu on member %llu", (unsigned long long)id,
			 (unsigned long long)n->o.id);
	return g;
}

/* ------------------------------------------------------ file snapshots */

/* Any member: a byte range of one file of one of its checkpoints of the
 * group named (meta/snap.h), read on the libuv pool; or, with `newest`,
 * the descriptor of its newest one. */
static void h_fetch_snapshot(struct rpc_req *r, void *ud)
{
	struct meta_node *n = ud;
	const Iolake__Meta__FetchSnapshotRequest *q = REQ(Iolake__Meta__FetchSnapshotRequest, r);
	struct meta_group *g = req_group(n, r);
	if (!g)
		return;
	if (q->newest) {
		if (snap_serve_newest(g->snap_dir, &g->snap_last, r) == 0)
			group_snap_pin(g, g->snap_last.checkpoint);
		return;
	}
	if (snap_name_ok(q->checkpoint))
		group_snap_pin(g, q->checkpoint);
	snap_serve_fetch(n->loop, g->snap_dir, r);
}

/* ------------------------------------------------------------ writes */

/* A CreateGroup on the root's leader: every voter must be a voter of the
 * root's configuration; an empty address is filled in from it, another
 * must match it (so every member bootstraps the configuration the root
 * knows). The request message is the server's until answered, and
 * protobuf-c frees a string that is not the field's default with the
 * allocator it unpacked with (the default one: free), so a strdup'd
 * address replaces an empty one safely. 0, or an error answered. */
static int check_create_group(struct meta_node *n, struct rpc_req *r, Iolake__Meta__CreateGroup *cg)
{
	const struct raft_configuration *c = &n->root->raft.configuration;
	if (!cg->group) {
		rpc_fail(r, RPC_INVALID_ARGUMENT, "CreateGroup without a group");
		return -EINVAL;
	}
	for (size_t i = 0; i < cg->group->n_voters; i++) {
		Iolake__Meta__GroupVoter *v = cg->group->voters[i];
		const struct raft_server *sv = NULL;
		for (unsigned k = 0; k < c->n; k++)
			if (c->servers[k].id == v->id && c->servers[k].role == RAFT_VOTER)
				sv = &c->servers[k];
		char a[META_NODE_ADDR_MAX];
		if (!sv || meta_node_rpc_addr(sv->address, a)) {
			rpc_fail(r, RPC_INVALID_ARGUMENT,
				 "group %llu: member %llu is not a voter of the root group",
				 (unsigned long long)cg->group->id, (unsigned long long)v->id);
			return -EINVAL;
		}
		if (!v->address || !v->address[0]) {
			char *dup = strdup(a);
			if (!dup) {
				rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "out of memory");
				return -ENOMEM;
			}
			v->address = dup;
		} else if (strcmp(v->address, a) != 0) {
			rpc_fail(r, RPC_INVALID_ARGUMENT,
				 "group %llu: member %llu is at %s, not %s",
				 (unsigned long long)cg->group->id, (unsigned long long)v->id, a,
				 v->address);
			return -EINVAL;
		}
	}
	return 0;
}

/* Issue 16: a PutAccessKey / ResealAccessKey carries the secret in
 * clear from the client; seal it under the cluster key before it can
 * reach a Raft entry (meta/secret.h). Without --secret-key-file the
 * member keeps the old behaviour (clear; meta/main.c warned at start).
 * 0, or an error answered. */
static int seal_op(struct meta_node *n, struct rpc_req *r, Iolake__Meta__Op *op)
{
	Iolake__Meta__AccessKey *k = NULL;
	if (op->body_case == IOLAKE__META__OP__BODY_PUT_ACCESS_KEY && op->put_access_key)
		k = op->put_access_key->key;
	else if (op->body_case == IOLAKE__META__OP__BODY_RESEAL_ACCESS_KEY && op->reseal_access_key)
		k = op->reseal_access_key->key;
	if (!k || !n->o.secret)
		return 0;
	int rc = meta_secret_seal_key(n->o.secret, k);
	if (rc == -EINVAL)
		return 0;   /* no secret or a bad one: apply answers INVALID */
	if (rc) {
		rpc_fail(r, RPC_INTERNAL, "cannot seal the secret: %s", iol_strerror(rc));
		return rc;
	}
	return 0;
}

/* Issue 16: under mutual TLS each op of a Submit needs a role
 * (common/rpc_authz.c's table), and an OSD registers only its own id.
 * Checked on the first member reached: a forwarded call comes from meta. */
static int authz_submit(struct rpc_req *r, const Iolake__Meta__SubmitRequest *q)
{
	if (!rpc_req_ident(r))
		return 0;
	for (size_t i = 0; i < q->n_ops; i++) {
		const Iolake__Meta__Op *op = q->ops[i];
		const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(
			&iolake__meta__op__descriptor, (unsigned)op->body_case);
		if (f && rpc_authz_op(r, f->name))
			return -EACCES;
		if (op->body_case == IOLAKE__META__OP__BODY_REGISTER_OSD && op->register_osd &&
		    op->register_osd->osd && rpc_authz_osd_id(r, op->register_osd->osd->id))
			return -EACCES;
	}
	return 0;
}

static void h_submit(struct rpc_req *r, void *ud)
{
	struct meta_node *n = ud;
	const Iolake__Meta__SubmitRequest *q = REQ(Iolake__Meta__SubmitRequest, r);
	if (authz_submit(r, q))
		return;   /* answered: a role not allowed this op (issue 16) */
	struct meta_group *g = req_group(n, r);
	if (!g)
		return;
	if (!group_is_leader(g)) {
		if (node_forward(g, r, META_M_SUBMIT))
			group_fail_not_leader(g, r);
		return;
	}
	if (q->n_ops == 0 || q->n_ops > META_BATCH_MAX_OPS) {
		rpc_fail(r, RPC_INVALID_ARGUMENT, "a Submit carries 1..%d ops", META_BATCH_MAX_OPS);
		return;
	}
	size_t bytes = 0;
	for (size_t i = 0; i < q->n_ops; i++) {
		if (q->ops[i]->body_case == IOLAKE__META__OP__BODY__NOT_SET) {
			rpc_fail(r, RPC_INVALID_ARGUMENT, "op %zu has no body", i);
			return;
		}
		bool group_op = q->ops[i]->body_case == IOLAKE__META__OP__BODY_CREATE_GROUP ||
				q->ops[i]->body_case == IOLAKE__META__OP__BODY_DELETE_GROUP ||
				q->ops[i]->body_case == IOLAKE__META__OP__BODY_SET_GROUP_MEMBERS ||
				q->ops[i]->body_case == IOLAKE__META__OP__BODY_GROUP_RECONCILED;
		if (group_op && g->id != 0) {
			rpc_fail(r, RPC_INVALID_ARGUMENT, "op %zu: groups are created and deleted "
				 "through the root group", i);
			return;
		}
		if (q->ops[i]->body_case == IOLAKE__META__OP__BODY_CREATE_GROUP &&
		    check_create_group(n, r, q->ops[i]->create_group))
			return;
		if (seal_op(n, r, q->ops[i]))
			return;
		bytes += protobuf_c_message_get_packed_size(&q->ops[i]->base) + 8;
	}
	if (bytes + 64 > META_ENTRY_MAX_BYTES) {
		rpc_fail(r, RPC_INVALID_ARGUMENT, "ops too large for one entry (%zu bytes)", bytes);
		return;
	}
	struct sub *s = calloc(1, sizeof(*s));
	if (!s) {
		rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	s->req = r;
	s->ops = q->ops;
	s->n_ops = q->n_ops;
	s->bytes = bytes;
	if (group_enqueue(g, s)) {
		free(s);
		rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "write queue full; retry later");
	}
}

/* Every linearizable read: the addressed group's leader only, after a
 * ReadIndex round (or a barrier); a follower forwards it there
 * (node_fwd.c), or redirects. */
static void h_read(struct rpc_req *r, struct meta_node *n, unsigned method)
{
	struct meta_group *g = req_group(n, r);
	if (!g)
		return;
	if (!group_is_leader(g)) {
		if (node_forward(g, r, method))
			group_fail_not_leader(g, r);
		return;
	}
	int rc = node_queue_read(g, r, method);
	if (rc)
		rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "read queue: %s", iol_strerror(rc));
}

#define READ_HANDLER(fn, method) \
	static void fn(struct rpc_req *r, void *ud) { h_read(r, ud, method); }
READ_HANDLER(h_get_bucket, META_M_GET_BUCKET)
READ_HANDLER(h_list_buckets, META_M_LIST_BUCKETS)
READ_HANDLER(h_head_object, META_M_HEAD_OBJECT)
READ_HANDLER(h_list_objects, META_M_LIST_OBJECTS)
READ_HANDLER(h_get_access_key, META_M_GET_ACCESS_KEY)
READ_HANDLER(h_list_users, META_M_LIST_USERS)
READ_HANDLER(h_get_map, META_M_GET_MAP)
READ_HANDLER(h_get_upload, META_M_GET_UPLOAD)
READ_HANDLER(h_list_parts, META_M_LIST_PARTS)
READ_HANDLER(h_list_uploads, META_M_LIST_UPLOADS)
READ_HANDLER(h_list_gc, META_M_LIST_GC)
READ_HANDLER(h_check_shards, META_M_CHECK_SHARDS)
READ_HANDLER(h_get_ranges, META_M_GET_RANGES)
READ_HANDLER(h_get_version, META_M_GET_VERSION)
READ_HANDLER(h_list_versions, META_M_LIST_VERSIONS)
READ_HANDLER(h_read_range, META_M_READ_RANGE)
READ_HANDLER(h_get_part_rows, META_M_GET_PART_ROWS)

/* ----------------------------------------------------------- WatchMap */

static void answer_watch(struct meta_node *n, struct rpc_req *r, bool changed)
{
	Iolake__Meta__WatchMapResponse resp = IOLAKE__META__WATCH_MAP_RESPONSE__INIT;
	Iolake__Meta__ClusterMap *m = NULL;
	if (changed && meta_state_get_map(n->root->state, &m))
		changed = false;
	resp.changed = changed;
	resp.map = m;
	resp.epoch = n->epoch;
	rpc_respond(r, &resp.base, NULL);
	meta_state_free_msg(m);
}

static void h_watch_map(struct rpc_req *r, void *ud)
{
	struct meta_node *n = ud;
	const Iolake__Meta__WatchMapRequest *q = REQ(Iolake__Meta__WatchMapRequest, r);
	if (n->epoch > q->epoch) {
		answer_watch(n, r, true);
		return;
	}
	if (n->n_watches >= META_NODE_WATCHES_MAX) {
		rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "too many watches");
		return;
	}
	rpc_req_long_poll(r); /* not a slow call: held on purpose */
	struct watch *w = calloc(1, sizeof(*w));
	if (!w) {
		rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	uint32_t t = q->timeout_ms ? q->timeout_ms : META_WATCH_DEFAULT_MS;
	if (t > META_WATCH_MAX_MS)
		t = META_WATCH_MAX_MS;
	w->req = r;
	w->epoch = q->epoch;
	w->deadline_ms = loop_now_ms() + t;
	w->next = n->watches;
	n->watches = w;
	n->n_watches++;
}

void node_wake_watches(struct meta_node *n, bool closing)
{
	for (struct watch **pp = &n->watches; *pp;) {
		struct watch *w = *pp;
		if (closing || n->epoch > w->epoch) {
			*pp = w->next;
			n->n_watches--;
			if (closing)
				rpc_fail(w->req, RPC_UNAVAILABLE, "member stopping");
			else
				answer_watch(n, w->req, true);
			free(w);
		} else {
			pp = &w->next;
		}
	}
}

void node_expire_watches(struct meta_node *n, uint64_t now_ms)
{
	for (struct watch **pp = &n->watches; *pp;) {
		struct watch *w = *pp;
		if (now_ms >= w->deadline_ms || rpc_req_cancelled(w->req)) {
			*pp = w->next;
			n->n_watches--;
			answer_watch(n, w->req, false);
			free(w);
		} else {
			pp = &w->next;
		}
	}
}

/* ---------------------------------------------------------- Heartbeat */

static void h_heartbeat(struct rpc_req *r, void *ud)
{
	struct meta_node *n = ud;
	const Iolake__Meta__HeartbeatRequest *q = REQ(Iolake__Meta__HeartbeatRequest, r);
	if (rpc_authz_osd_id(r, q->osd_id))
		return;   /* issue 16: another OSD's id */
	if (!node_is_leader(n)) {
		group_fail_not_leader(n->root, r);
		return;
	}
	Iolake__Meta__HeartbeatResponse resp = IOLAKE__META__HEARTBEAT_RESPONSE__INIT;
	resp.status = IOLAKE__META__STATUS__STATUS_NOT_FOUND;
	resp.epoch = n->epoch;
	for (size_t i = 0; n->map && i < n->map->n_osds; i++)
		if (n->map->osds[i]->id == q->osd_id) {
			node_osd_beat(n, n->map->osds[i]);
			resp.status = IOLAKE__META__STATUS__STATUS_OK;
			break;
		}
	rpc_respond(r, &resp.base, NULL);
}

/* ----------------------------------------------------------- PG health */

static const Iolake__Meta__OsdInfo *map_osd(const struct meta_node *n, uint32_t id)
{
	for (size_t i = 0; n->map && i < n->map->n_osds; i++)
		if (n->map->osds[i]->id == id)
			return n->map->osds[i];
	return NULL;
}

/* A primary's reports; answered with the PGs flagged for it. */
static void h_report_pgs(struct rpc_req *r, void *ud)
{
	struct meta_node *n = ud;
	const Iolake__Meta__ReportPgsRequest *q = REQ(Iolake__Meta__ReportPgsRequest, r);
	if (rpc_authz_osd_id(r, q->osd_id))
		return;   /* issue 16: another OSD's id */
	if (!node_is_leader(n)) {
		group_fail_not_leader(n->root, r);
		return;
	}
	Iolake__Meta__ReportPgsResponse resp = IOLAKE__META__REPORT_PGS_RESPONSE__INIT;
	resp.epoch = n->epoch;
	if (!map_osd(n, q->osd_id)) {
		resp.status = IOLAKE__META__STATUS__STATUS_NOT_FOUND;
		rpc_respond(r, &resp.base, NULL);
		return;
	}
	if (q->n_pgs > PLACE_MAX_PGS) {
		rpc_fail(r, RPC_INVALID_ARGUMENT, "at most %u PG reports per call",
			 PLACE_MAX_PGS);
		return;
	}
	uint64_t now = loop_now_ms();
	if (meta_pgstate_osd_rate(n->pgs, q->osd_id, q->rate_bytes_per_s, now) == -ENOMEM) {
		rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	for (size_t i = 0; i < q->n_pgs; i++) {
		metrics_counter_inc(n->m_pg_reports);
		int rc = meta_pgstate_report(n->pgs, n->map, q->osd_id, q->pgs[i], now);
		if (rc == -ENOMEM) {
			rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "out of memory");
			return;
		}
		if (rc)
			metrics_counter_inc(n->m_pg_reports_bad);
	}
	uint32_t *resc = NULL;
	size_t flagged = meta_pgstate_flagged(n->pgs);
	if (flagged) {
		resc = calloc(flagged, sizeof(*resc));
		if (resc)   /* without memory the flags wait for the next report */
			resp.n_rescan_pgs = meta_pgstate_take_rescans(n->pgs, n->map, q->osd_id,
								      resc, flagged);
	}
	resp.rescan_pgs = resc;
	rpc_respond(r, &resp.base, NULL);
	free(resc);
}

static void h_flag_pgs(struct rpc_req *r, void *ud)
{
	struct meta_node *n = ud;
	const Iolake__Meta__FlagPgsRequest *q = REQ(Iolake__Meta__FlagPgsRequest, r);
	if (!node_is_leader(n)) {
		group_fail_not_leader(n->root, r);
		return;
	}
	Iolake__Meta__FlagPgsResponse resp = IOLAKE__META__FLAG_PGS_RESPONSE__INIT;
	if (!n->map) {
		resp.status = IOLAKE__META__STATUS__STATUS_NOT_FOUND;
		rpc_respond(r, &resp.base, NULL);
		return;
	}
	int reason = NODE_FLAG_REASONS - 1;   /* "other" */
	for (int i = 0; q->reason && i < NODE_FLAG_REASONS - 1; i++)
		if (!strcmp(q->reason, node_flag_reasons[i]))
			reason = i;
	for (size_t i = 0; i < q->n_pgs; i++) {
		int rc = meta_pgstate_flag(n->pgs, n->map, q->pgs[i]);
		if (rc == 0)
			metrics_counter_inc(n->m_pg_flags[reason]);
		else
			metrics_counter_inc(n->m_pg_reports_bad);
	}
	rpc_respond(r, &resp.base, NULL);
}

/* The PG table with derived states. Every array points into the map and
 * the PG table, which stay put until rpc_respond has packed the answer. */
static void h_pg_stats(struct rpc_req *r, void *ud)
{
	struct meta_node *n = ud;
	if (!node_is_leader(n)) {
		group_fail_not_leader(n->root, r);
		return;
	}
	Iolake__Meta__PgStatsResponse resp = IOLAKE__META__PG_STATS_RESPONSE__INIT;
	const Iolake__Meta__ClusterMap *m = n->map;
	if (!m) {
		resp.status = IOLAKE__META__STATUS__STATUS_NOT_FOUND;
		rpc_respond(r, &resp.base, NULL);
		return;
	}
	size_t np = m->n_pgs;
	struct meta_pg_derived *d = calloc(np ? np : 1, sizeof(*d));
	Iolake__Meta__PgStat *st = calloc(np ? np : 1, sizeof(*st));
	Iolake__Meta__PgStat **stp = calloc(np ? np : 1, sizeof(*stp));
	Iolake__Meta__PgReport *rp = calloc(np ? np : 1, sizeof(*rp));
	if (!d || !st || !stp || !rp) {
		rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "out of memory");
		goto out;
	}
	struct meta_pg_totals t;
	uint64_t now = loop_now_ms();
	meta_pgstate_derive_all(n->pgs, m, now, d, &t);
	for (size_t i = 0; i < np; i++) {
		iolake__meta__pg_stat__init(&st[i]);
		st[i].pg = (uint32_t)i;
		st[i].state = (char *)meta_pgstate_name(d[i].state);
		st[i].osds = m->pgs[i]->osds;
		st[i].n_osds = m->pgs[i]->n_osds;
		struct meta_pg_view v;
		if (meta_pgstate_view(m, (uint32_t)i, &v) == 0)
			st[i].up_mask = v.up_mask;
		st[i].primary = d[i].primary;
		st[i].report_valid = d[i].report_valid;
		st[i].report_age_ms = d[i].age_ms;
		st[i].eta_s = d[i].eta_s;
		const struct meta_pg_report *k = meta_pgstate_get(n->pgs, (uint32_t)i);
		if (k) {
			Iolake__Meta__PgReport *x = &rp[i];
			iolake__meta__pg_report__init(x);
			x->pg = (uint32_t)i;
			x->epoch = k->epoch;
			x->osds = (uint32_t *)k->osds;
			x->n_osds = k->n_osds;
			x->up_mask = k->up_mask;
			x->state = (char *)k->state;
			x->stripes = k->stripes;
			x->stripes_missing = k->stripes_missing;
			x->bytes_missing = k->bytes_missing;
			x->stripes_done = k->stripes_done;
			x->bytes_done = k->bytes_done;
			x->rate_bytes_per_s = k->rate_bytes_per_s;
			x->unfound = k->unfound;
			x->unfound_live = k->unfound_live;
			x->min_shards = k->min_shards;
			x->bad_shards = k->bad_shards;
			x->scan_started_ms = k->scan_started_ms;
			x->last_clean_ms = k->last_clean_ms;
			st[i].report = x;
		}
		stp[i] = &st[i];
	}
	Iolake__Meta__PgStateCount cnt[META_PG__COUNT];
	Iolake__Meta__PgStateCount *cntp[META_PG__COUNT];
	size_t nc = 0;
	for (int s = 0; s < META_PG__COUNT; s++) {   /* enum order is name order */
		if (!t.counts[s])
			continue;
		iolake__meta__pg_state_count__init(&cnt[nc]);
		cnt[nc].state = (char *)meta_pgstate_name((enum meta_pg_state)s);
		cnt[nc].pgs = t.counts[s];
		cntp[nc] = &cnt[nc];
		nc++;
	}
	resp.epoch = m->epoch;
	resp.pgs = stp;
	resp.n_pgs = np;
	resp.counts = cntp;
	resp.n_counts = nc;
	resp.stripes_missing = t.stripes_missing;
	resp.bytes_missing = t.bytes_missing;
	resp.rate_bytes_per_s = t.rate_bytes_per_s;
	resp.eta_s = t.eta_s;
	resp.unfound = t.unfound;
	resp.unfound_live = t.unfound_live;
	rpc_respond(r, &resp.base, NULL);
out:
	free(rp);
	free(stp);
	free(st);
	free(d);
}

/* ------------------------------------------------------------- Status */

/* The state digest comes first (node_status_digest may scan off the loop),
 * then node_status_respond answers. */
static void h_status(struct rpc_req *r, void *ud)
{
	struct meta_group *g = req_group(ud, r);
	if (g)
		group_status_digest(g, r);
}

void node_status_respond(struct meta_group *g, struct rpc_req *r, const char *digest,
			 uint64_t digest_index)
{
	struct meta_node *n = g->n;
	struct meta_node_info info;
	group_info(g, &info);
	Iolake__Meta__StatusResponse resp = IOLAKE__META__STATUS_RESPONSE__INIT;
	resp.id = info.id;
	resp.address = n->rpc_addr;
	resp.role = (char *)meta_node_role_name(info.role);
	resp.term = info.term;
	resp.commit_index = info.commit_index;
	resp.applied_index = info.applied_index;
	resp.last_index = info.last_index;
	resp.leader_id = info.leader_id;
	resp.leader_address = info.leader_addr;
	resp.epoch = info.epoch;
	resp.snapshot_restores = info.restores;
	resp.snapshot_installing = info.installing;
	resp.state_digest = (char *)digest;
	resp.state_applied_index = digest_index;
	meta_state_gc_count(g->state, &resp.gc_queue);
	if (g->id == 0) {
		/* The root's answer counts every group this member hosts: range
		 * groups keep the GC entries of the records they hold. */
		struct meta_node *mn = g->n;
		for (size_t i = 0; i < mn->n_groups; i++) {
			uint64_t more = 0;
			if (mn->groups[i] != g && !meta_state_gc_count(mn->groups[i]->state, &more))
				resp.gc_queue += more;
		}
	}
	resp.group = g->id;
	const struct raft_configuration *c = &g->raft.configuration;
	Iolake__Meta__MemberInfo mi[META_NODE_MAX_PEERS * 2];
	Iolake__Meta__MemberInfo *mp[META_NODE_MAX_PEERS * 2];
	char addrs[META_NODE_MAX_PEERS * 2][META_NODE_ADDR_MAX];
	size_t k = 0;
	for (unsigned i = 0; i < c->n && k < META_NODE_MAX_PEERS * 2; i++, k++) {
		iolake__meta__member_info__init(&mi[k]);
		mi[k].id = c->servers[i].id;
		if (meta_node_rpc_addr(c->servers[i].address, addrs[k]))
			addrs[k][0] = 0;
		mi[k].address = addrs[k];
		mi[k].voter = c->servers[i].role == RAFT_VOTER;
		mp[k] = &mi[k];
	}
	resp.members = mp;
	resp.n_members = k;
	/* Every hosted group, in id order. */
	size_t ng = n->n_groups;
	Iolake__Meta__GroupStatus *gs = calloc(ng ? ng : 1, sizeof(*gs));
	Iolake__Meta__GroupStatus **gp = calloc(ng ? ng : 1, sizeof(*gp));
	char (*gaddr)[META_NODE_ADDR_MAX] = calloc(ng ? ng : 1, sizeof(*gaddr));
	uint64_t *voters = calloc((ng ? ng : 1) * META_NODE_MAX_PEERS, sizeof(*voters));
	if (!gs || !gp || !gaddr || !voters)
		ng = 0;   /* answered without the list rather than not at all */
	for (size_t i = 0; i < ng; i++) {
		struct meta_group *h = n->groups[i];
		struct meta_node_info hi;
		group_info(h, &hi);
		iolake__meta__group_status__init(&gs[i]);
		gs[i].id = h->id;
		gs[i].role = (char *)meta_node_role_name(hi.role);
		gs[i].leader_id = hi.leader_id;
		memcpy(gaddr[i], hi.leader_addr, sizeof(gaddr[i]));
		gs[i].leader_address = gaddr[i];
		gs[i].term = hi.term;
		gs[i].commit_index = hi.commit_index;
		gs[i].applied_index = hi.applied_index;
		gs[i].last_index = hi.last_index;
		gs[i].snapshots = hi.snapshots;
		gs[i].snapshot_restores = hi.restores;
		const struct raft_configuration *hc = &h->raft.configuration;
		uint64_t *vv = voters + i * META_NODE_MAX_PEERS;
		size_t nv = 0;
		for (unsigned k2 = 0; k2 < hc->n && nv < META_NODE_MAX_PEERS; k2++)
			if (hc->servers[k2].role == RAFT_VOTER)
				vv[nv++] = hc->servers[k2].id;
		gs[i].voters = vv;
		gs[i].n_voters = nv;
		gp[i] = &gs[i];
	}
	resp.groups = gp;
	resp.n_groups = ng;
	rpc_respond(r, &resp.base, NULL);
	free(voters);
	free(gaddr);
	free(gp);
	free(gs);
}

static void h_metrics(struct rpc_req *r, void *ud)
{
	struct meta_node *n = ud;
	char *text = NULL;
	size_t len = 0;
	if (metrics_render(n->metrics, &text, &len)) {
		rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	Iolake__Meta__MetricsResponse resp = IOLAKE__META__METRICS_RESPONSE__INIT;
	resp.text = text;
	rpc_respond(r, &resp.base, NULL);
	free(text);
}

/* ------------------------------------------------------ membership */

static void change_unlink(struct change *ch)
{
	struct meta_node *n = ch->n;
	for (struct change **pp = &n->changes; *pp; pp = &(*pp)->next)
		if (*pp == ch) {
			*pp = ch->next;
			break;
		}
}

static void change_finish(struct change *ch, int status)
{
	change_unlink(ch);
	if (ch->req) {
		if (status == 0) {
			Iolake__Meta__MemberChangeResponse resp = IOLAKE__META__MEMBER_CHANGE_RESPONSE__INIT;
			rpc_respond(ch->req, &resp.base, NULL);
		} else {
			rpc_fail(ch->req, RPC_UNAVAILABLE, "membership change: %s", raft_strerror(status));
		}
	}
	free(ch);
}

static void on_assigned(struct raft_change *c, int status)
{
	struct change *ch = c->data;
	LOG_INFO("member promoted", "id=%llu status=%s", (unsigned long long)ch->id,
		 status ? raft_strerror(status) : "ok");
	change_finish(ch, status);
}

static void on_added(struct raft_change *c, int status)
{
	struct change *ch = c->data;
	if (status == 0 && !ch->n->closing) {
		/* Promote: libraft catches the new member up before it votes. */
		status = raft_assign(&ch->n->root->raft, &ch->c, ch->id, RAFT_VOTER, on_assigned);
		if (status == 0)
			return;
	}
	change_finish(ch, status);
}

static void on_removed(struct raft_change *c, int status)
{
	change_finish(c->data, status);
}

static const struct raft_server *configuration_server(struct meta_node *n, uint64_t id)
{
	const struct raft_configuration *c = &n->root->raft.configuration;
	for (unsigned i = 0; i < c->n; i++)
		if (c->servers[i].id == id)
			return &c->servers[i];
	return NULL;
}

static bool in_root_configuration(struct meta_node *n, uint64_t id)
{
	return configuration_server(n, id) != NULL;
}

/* A change libraft would not start. Leadership lost or moving: the
 * client follows the hint. Another change still in flight (an add's
 * catch-up and promotion, a leader's first entry not yet committed):
 * busy, the client retries here after a backoff. Anything else is the
 * caller's mistake. */
static void change_fail_start(struct meta_node *n, struct rpc_req *r, int rc)
{
	switch (rc) {
	case RAFT_NOTLEADER:
	case RAFT_LEADERSHIPLOST:
		group_fail_not_leader(n->root, r);
		return;
	case RAFT_CANTCHANGE:
		rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "membership change: %s; retry",
			 raft_strerror(rc));
		return;
	default:
		rpc_fail(r, RPC_FAILED_PRECONDITION, "membership change: %s", raft_strerror(rc));
	}
}

static void on_leaving_transfer(struct raft_transfer *t)
{
	struct meta_group *g = t->data;
	g->xfer_busy = false;
}

static void h_member_change(struct rpc_req *r, struct meta_node *n, bool add)
{
	const Iolake__Meta__MemberChangeRequest *q = REQ(Iolake__Meta__MemberChangeRequest, r);
	if (!node_is_leader(n)) {
		group_fail_not_leader(n->root, r);
		return;
	}
	char ra[META_NODE_ADDR_MAX];
	if (q->id == 0 || (add && meta_node_raft_addr(q->address, ra))) {
		rpc_fail(r, RPC_INVALID_ARGUMENT, "need id > 0%s", add ? " and address HOST:PORT" : "");
		return;
	}
	struct change *ch = calloc(1, sizeof(*ch));
	if (!ch) {
		rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	ch->n = n;
	ch->req = r;
	ch->id = q->id;
	ch->add = add;
	ch->c.data = ch;
	if (!add && !in_root_configuration(n, q->id)) {
		/* Not (or no longer) a member: done (a retry of a removal that
		 * went through answers OK). */
		free(ch);
		Iolake__Meta__MemberChangeResponse resp = IOLAKE__META__MEMBER_CHANGE_RESPONSE__INIT;
		rpc_respond(r, &resp.base, NULL);
		return;
	}
	if (!add && group_members_lists(n, q->id)) {
		/* Range groups first (issue 13, group_members.c): the member
		 * leaves them while it still hears the root, so it learns they
		 * are done and drops its copies; then the root. */
		if (n->members_leaving && n->members_leaving != q->id) {
			rpc_fail(r, RPC_FAILED_PRECONDITION, "member %llu is being removed; retry",
				 (unsigned long long)n->members_leaving);
			free(ch);
			return;
		}
		if (q->id == n->o.id) {
			/* The leader leaving: it could not see the groups drop it
			 * (it stops hearing them first). Hand the root over; the
			 * client retries at the next leader. */
			free(ch);
			struct meta_group *root = n->root;
			if (!root->xfer_busy) {
				root->xfer.data = root;
				if (raft_transfer(&root->raft, &root->xfer, 0, on_leaving_transfer) == 0)
					root->xfer_busy = true;
			}
			rpc_fail(r, RPC_UNAVAILABLE, "the leader is the member leaving: handing over; retry");
			return;
		}
		for (struct change *o = n->changes; o; o = o->next)
			if (o->draining && o->id == q->id) {
				/* A retry of the call that started it: it answers this one. */
				if (o->req)
					rpc_fail(o->req, RPC_UNAVAILABLE, "superseded by a retry");
				o->req = r;
				free(ch);
				return;
			}
		n->members_leaving = q->id;
		ch->draining = true;
		ch->drain_deadline_ms = loop_now_ms() + MEMBER_DRAIN_MS;
		ch->next = n->changes;
		n->changes = ch;
		LOG_INFO("member leaving the range groups", "id=%llu", (unsigned long long)q->id);
		return;
	}
	int rc;
	const struct raft_server *have = add ? configuration_server(n, q->id) : NULL;
	if (have && strcmp(have->address, ra) != 0) {
		rpc_fail(r, RPC_FAILED_PRECONDITION, "member %llu is already at %s",
			 (unsigned long long)q->id, have->address);
		free(ch);
		return;
	}
	if (have && have->role == RAFT_VOTER) {
		/* A retry of an add that went through (its answer was lost to
		 * a leader change): done. */
		free(ch);
		Iolake__Meta__MemberChangeResponse resp = IOLAKE__META__MEMBER_CHANGE_RESPONSE__INIT;
		rpc_respond(r, &resp.base, NULL);
		return;
	}
	if (have)	/* added, never promoted (a leader change between the two) */
		rc = raft_assign(&n->root->raft, &ch->c, q->id, RAFT_VOTER, on_assigned);
	else
		rc = add ? raft_add(&n->root->raft, &ch->c, q->id, ra, on_added)
			 : raft_remove(&n->root->raft, &ch->c, q->id, on_removed);
	if (rc) {
		free(ch);
		change_fail_start(n, r, rc);
		return;
	}
	ch->next = n->changes;
	n->changes = ch;
}

static void h_add_member(struct rpc_req *r, void *ud)
{
	h_member_change(r, ud, true);
}

static void h_remove_member(struct rpc_req *r, void *ud)
{
	h_member_change(r, ud, false);
}

void node_change_drained(struct change *ch)
{
	struct meta_node *n = ch->n;
	ch->draining = false;
	if (n->members_leaving == ch->id)
		n->members_leaving = 0;
	int rc = raft_remove(&n->root->raft, &ch->c, ch->id, on_removed);
	if (rc)
		change_finish(ch, rc);
}

void node_change_fail(struct change *ch, int status)
{
	if (ch->n->members_leaving == ch->id)
		ch->n->members_leaving = 0;
	change_finish(ch, status);
}

/* Closing: libraft fails pending changes itself; the calls are answered
 * then, so here only their callers are told early. A change still
 * draining has nothing in libraft: it ends here. */
void node_cancel_changes(struct meta_node *n)
{
	struct change *next;
	for (struct change *ch = n->changes; ch; ch = next) {
		next = ch->next;
		if (ch->req) {
			rpc_fail(ch->req, RPC_UNAVAILABLE, "member stopping");
			ch->req = NULL;
		}
		if (ch->draining)
			node_change_fail(ch, RAFT_SHUTDOWN);
	}
}

static void h_confirm_leader(struct rpc_req *r, void *ud)
{
	node_confirm_leader(ud, r);
}

int node_service_register(struct meta_node *n)
{
	static const rpc_handler_fn handlers[META_M_COUNT] = {
		[META_M_FETCH_SNAPSHOT] = h_fetch_snapshot,   /* peers: file snapshots */
		[META_M_SUBMIT] = h_submit,
		[META_M_GET_BUCKET] = h_get_bucket,
		[META_M_LIST_BUCKETS] = h_list_buckets,
		[META_M_HEAD_OBJECT] = h_head_object,
		[META_M_LIST_OBJECTS] = h_list_objects,
		[META_M_GET_ACCESS_KEY] = h_get_access_key,
		[META_M_LIST_USERS] = h_list_users,
		[META_M_GET_MAP] = h_get_map,
		[META_M_WATCH_MAP] = h_watch_map,
		[META_M_HEARTBEAT] = h_heartbeat,
		[META_M_STATUS] = h_status,
		[META_M_ADD_MEMBER] = h_add_member,
		[META_M_REMOVE_MEMBER] = h_remove_member,
		[META_M_METRICS] = h_metrics,
		[META_M_GET_UPLOAD] = h_get_upload,
		[META_M_LIST_PARTS] = h_list_parts,
		[META_M_LIST_UPLOADS] = h_list_uploads,
		[META_M_LIST_GC] = h_list_gc,
		[META_M_REPORT_PGS] = h_report_pgs,
		[META_M_FLAG_PGS] = h_flag_pgs,
		[META_M_PG_STATS] = h_pg_stats,
		[META_M_CHECK_SHARDS] = h_check_shards,
		[META_M_CONFIRM_LEADER] = h_confirm_leader,
		[META_M_GET_RANGES] = h_get_ranges,
		[META_M_GET_VERSION] = h_get_version,
		[META_M_LIST_VERSIONS] = h_list_versions,
		[META_M_READ_RANGE] = h_read_range,
		[META_M_GET_PART_ROWS] = h_get_part_rows,
	};
	_Static_assert(META_M_COUNT == 29, "meta.proto service Meta has 29 methods");
	int rc = rpc_server_add_service(n->srv, META_SERVICE, handlers, n);
	if (rc == 0)
		rc = rpc_server_set_direct(n->srv, META_SERVICE, META_M_HEAD_OBJECT,
					   node_serve_direct_head_object);
	if (rc == 0)
		rc = rpc_server_set_direct(n->srv, META_SERVICE, META_M_GET_VERSION,
					   node_serve_direct_get_version);
	return rc;
}
