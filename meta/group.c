/*
 * group.c — one Raft group of a meta member: canonical/raft (raft_uv over
 * the member's raft_mux) with a meta_state as its FSM, group commit, file
 * snapshots, the state digest, its leader as the member sees it, and its
 * metrics (contracts in node_internal.h). Group 0 is the root; what only
 * the root does (map, liveness, groups table) is node.c's, reached through
 * node_root_applied and node_root_restored. Taking and restoring
 * snapshots (the FSM's other callbacks) are group_snap.c's.
 *
 * Invariants:
 *   - Every entry this member proposes is one framed OpBatch (multiple of
 *     8 bytes, meta_state_entry_encode) holding whole Submit calls: the ops
 *     of one call are never split over two entries.
 *   - At most META_NODE_PIPELINE entries are proposed and not yet applied
 *     per group, each about META_NODE_ENTRY_BYTES at most (one call may
 *     exceed it, up to META_ENTRY_MAX_BYTES, alone in its entry): the bytes
 *     in flight stay bounded (NOTES-deps: libraft stalls beyond ~400 KB in
 *     flight).
 *   - The FSM learns an entry's index as raft_last_applied() + 1 (libraft
 *     applies strictly in order and advances last_applied after apply);
 *     meta_state records it in the same write, so a replay is skipped.
 *   - A storage error in apply is fatal (abort): a member that cannot apply
 *     must not go on voting with a state that diverged from its log; so is
 *     a failed snapshot install once running (libraft has already replaced
 *     the log; the restart resumes the install).
 *   - A Raft snapshot is a descriptor of a RocksDB checkpoint (meta/snap.h),
 *     never the state: taken off the loop (fsm v3 snapshot_async), reused
 *     while the state's "A" stays, installed by a streamed fetch and load
 *     on a thread of its own (group_install.c: libraft 0.15's restore is
 *     synchronous, so restore starts the job and entries applied meanwhile
 *     wait for it).
 *   - A group's directory holds raft/, state/ and snap/; the root's is the
 *     member's data dir itself (the layout from before groups existed).
 *
 * Thread: the member's loop, except an install's job (group_install.c)
 * and a checkpoint (group_snap.c, libuv pool).
 * Not here: forwarding writes (followers redirect the client with the
 * leader's address instead), the reads themselves (node_read.c), which
 * groups exist (hosting.c).
 */
#include "meta/node_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/err.h"
#include "common/hash.h"
#include "common/log.h"
#include "meta/iodestroy.h"
#include "meta/segfill.h"

/* ------------------------------------------------------------ sends */

/* raft_uv's own send, wrapped by group_send (the same function for every
 * group: set once, on the loop). */
static int (*uv_send)(struct raft_io *io, struct raft_io_send *req,
		      const struct raft_message *message, raft_io_send_cb cb);

/* libraft 0.15 answers an AppendEntries once its append is on disk, to the
 * leader it knows then, which may be none any more (id 0, address NULL:
 * a vote in between reset it); raft_uv then strlen()s the NULL address
 * and the member dies of SIGSEGV (canonical/raft#350, fixed there after
 * 0.15; the thrash soak of 2026-12-05 hit it with a partition). Refuse
 * such a send as raft_uv refuses one it cannot start: the caller frees the
 * request, and the leader, not hearing back, sends again. */
static int group_send(struct raft_io *io, struct raft_io_send *req,
		      const struct raft_message *message, raft_io_send_cb cb)
{
	if (!message->server_id || !message->server_address)
		return RAFT_NOCONNECTION;
	return uv_send(io, req, message, cb);
}

/* ------------------------------------------------------------ leaders */

bool group_is_leader(struct meta_group *g)
{
	return !g->closing && !g->n->closing && raft_state(&g->raft) == RAFT_LEADER;
}

void group_leader_addr(struct meta_group *g, uint64_t *id, char out[META_NODE_ADDR_MAX])
{
	raft_id lid = 0;
	const char *laddr = NULL;
	out[0] = 0;
	if (!g->closing)
		raft_leader(&g->raft, &lid, &laddr);
	if (id)
		*id = lid;
	if (laddr && meta_node_rpc_addr(laddr, out))
		out[0] = 0;
}

void group_fail_not_leader(struct meta_group *g, struct rpc_req *r)
{
	char addr[META_NODE_ADDR_MAX];
	group_leader_addr(g, NULL, addr);
	rpc_fail(r, RPC_FAILED_PRECONDITION, "not leader; leader=%s", addr);
}

void group_kick(struct meta_group *g)
{
	struct meta_node *n = g->n;
	if (g->closing || n->closing || g->kicked)
		return;
	g->kicked = true;
	g->kick_next = n->kicked;
	n->kicked = g;
	node_kick(n);
}

static void kick_unlink(struct meta_group *g)
{
	if (!g->kicked)
		return;
	for (struct meta_group **pp = &g->n->kicked; *pp; pp = &(*pp)->kick_next)
		if (*pp == g) {
			*pp = g->kick_next;
			break;
		}
	g->kicked = false;
}

void group_on_kick(struct meta_group *g)
{
	if (g->closing)
		return;
	group_install_drain(g);
	group_flush(g);
	node_start_reads(g);
}

/* ------------------------------------------------------------ the FSM */

static struct inflight *inflight_at(struct meta_group *g, uint64_t index)
{
	for (struct inflight *f = g->inflight; f; f = f->next)
		if (f->req.index == index)
			return f;
	return NULL;
}

void group_apply_entry(struct meta_group *g, uint64_t index, const void *base, size_t len)
{
	struct meta_node *n = g->n;
	uint64_t t0 = loop_now_ns();
	int rc = meta_state_apply(g->state, index, base, len, n->res, META_BATCH_MAX_OPS);
	if (rc < 0 && rc != IOL_EPROTOCOL) {
		/* Consensus invariant: the log is committed, the state must
		 * follow it. Crash loudly rather than vote on a stale state.
		 * BAD_FORMAT: the entry needs a newer build's ops (state.h,
		 * op levels; the state's line on stderr names both levels);
		 * this member stops until it is upgraded. */
		LOG_ERROR(rc == IOL_EBAD_FORMAT ? "apply: the entry needs a newer IOLake; "
						  "upgrade this member: stopping"
						: "apply failed: stopping",
			  "group=%llu index=%llu err=%s", (unsigned long long)g->id,
			  (unsigned long long)index, iol_strerror(rc));
		abort();
	}
	m_observe(g->m.apply_us, (loop_now_ns() - t0) / 1000);
	/* Snapshot by bytes too: libraft 0.15 counts entries only, so past
	 * the byte threshold lower its entry threshold to 1 (the next check,
	 * right after this apply, snapshots); fsm_snapshot restores it. */
	g->snap_bytes_since += len;
	if (!g->snap_lowered && g->snap_bytes_since >= g->snapshot_bytes) {
		raft_set_snapshot_threshold(&g->raft, 1);
		g->snap_lowered = true;
	}
	if (rc == IOL_EPROTOCOL)
		LOG_WARN("entry does not decode: skipped", "group=%llu index=%llu",
			 (unsigned long long)g->id, (unsigned long long)index);
	int nops = rc > 0 ? rc : 0;
	m_add(g->m.ops, (uint64_t)nops);
	g->ops_committed += (uint64_t)nops;
	if (g->id == 0)
		node_root_applied(n, n->res, nops);
	struct inflight *f = inflight_at(g, index);
	if (f) {
		/* Ours: keep the answers until raft_apply's callback, which a
		 * libraft version may fire later than this apply. */
		if (rc >= 0 && (size_t)nops == f->n_ops) {
			memcpy(f->res, n->res, (size_t)nops * sizeof(*f->res));
			f->applied = true;
		}
	}
	if (g->ready)
		group_kick(g);   /* serve reads this index completes */
}

static int fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf, void **result)
{
	struct meta_group *g = fsm->data;
	uint64_t index = raft_last_applied(&g->raft) + 1;
	*result = NULL;
	/* A snapshot is being installed off the loop: kept for after it. */
	if (g->inst && group_install_defer(g, index, buf->base, buf->len))
		return 0;
	group_apply_entry(g, index, buf->base, buf->len);
	return 0;
}

/* ------------------------------------------------------ state digest
 * meta_state_digest scans the whole state: on the libuv pool, not the
 * loop (state.h lets reads run beside apply). Applies happen only on this
 * loop and move "A", so a scan that ends with "A" and the restore count
 * where they were when it started hashed exactly that state; otherwise it
 * is tried again (twice) and then answered empty. */

#define DIGEST_TRIES 3

static void digest_work(uv_work_t *w)
{
	struct meta_group *g = w->data;
	g->dg_rc = meta_state_digest(g->state, g->dg_raw);
}

static void digest_after(uv_work_t *w, int status);

static void digest_start(struct meta_group *g)
{
	g->dg_index = meta_state_applied_index(g->state);
	g->dg_restores = g->restores;
	g->dg_work.data = g;
	g->dg_busy = uv_queue_work(g->n->loop, &g->dg_work, digest_work, digest_after) == 0;
}

static bool digest_current(const struct meta_group *g)
{
	return !g->inst && meta_state_applied_index(g->state) == g->dg_index &&
	       g->restores == g->dg_restores;
}

static void digest_answer(struct meta_group *g, const char *hex)
{
	struct digest_wait *w = g->dg_waiters;
	g->dg_waiters = NULL;
	g->dg_n_waiters = 0;
	while (w) {
		struct digest_wait *next = w->next;
		node_status_respond(g, w->req, hex, g->dg_index);
		free(w);
		w = next;
	}
}

static void digest_fail_waiters(struct meta_group *g)
{
	struct digest_wait *w = g->dg_waiters;
	g->dg_waiters = NULL;
	g->dg_n_waiters = 0;
	while (w) {
		struct digest_wait *next = w->next;
		rpc_fail(w->req, RPC_UNAVAILABLE, "member stopping");
		free(w);
		w = next;
	}
}

static void group_maybe_done(struct meta_group *g);

static void digest_after(uv_work_t *w, int status)
{
	struct meta_group *g = w->data;
	g->dg_busy = false;
	if (g->closing) {   /* waiters were failed by group_close */
		if (g->raft_closed) {
			meta_state_close(g->state);
			g->state = NULL;
		}
		group_maybe_done(g);
		return;
	}
	if (status == 0 && g->dg_rc == 0 && digest_current(g)) {
		hash_hex(g->dg_raw, sizeof(g->dg_raw), g->dg_hex);
		g->dg_valid = true;
		digest_answer(g, g->dg_hex);
		return;
	}
	if (status == 0 && g->dg_rc == 0 && !g->inst && ++g->dg_tries < DIGEST_TRIES) {
		digest_start(g);   /* the state moved under the scan */
		if (g->dg_busy)
			return;
	}
	if (g->dg_rc)
		LOG_WARN("state digest failed", "group=%llu err=%s", (unsigned long long)g->id,
			 iol_strerror(g->dg_rc));
	g->dg_index = group_state_applied(g);
	digest_answer(g, "");
}

void group_status_digest(struct meta_group *g, struct rpc_req *r)
{
	if (g->inst) {   /* the state is being replaced: no digest of it */
		node_status_respond(g, r, "", group_state_applied(g));
		return;
	}
	if (g->dg_valid && !g->dg_busy && digest_current(g)) {
		node_status_respond(g, r, g->dg_hex, g->dg_index);
		return;
	}
	struct digest_wait *w = NULL;
	if (g->dg_n_waiters < META_NODE_DIGEST_WAITERS)
		w = malloc(sizeof(*w));
	if (!w) {
		node_status_respond(g, r, "", meta_state_applied_index(g->state));
		return;
	}
	w->req = r;
	w->next = g->dg_waiters;
	g->dg_waiters = w;
	g->dg_n_waiters++;
	if (g->dg_busy)
		return;
	g->dg_valid = false;
	g->dg_tries = 0;
	digest_start(g);
	if (!g->dg_busy)
		digest_answer(g, "");
}

/* ------------------------------------------------------- group commit */

static void sub_finish(struct meta_group *g, struct sub *s, int status, const char *why,
		       const struct meta_op_result *res, uint64_t index)
{
	if (!s->req) {   /* leader-internal op */
		s->done(g->n, s, status == RPC_OK ? (res ? res[0].err : 0) : IOL_EUNAVAILABLE);
		return;
	}
	if (status != RPC_OK) {
		rpc_fail(s->req, status, "%s", why);
		free(s);
		return;
	}
	Iolake__Meta__SubmitResponse resp = IOLAKE__META__SUBMIT_RESPONSE__INIT;
	Iolake__Meta__OpResult *msgs = calloc(s->n_ops, sizeof(*msgs));
	Iolake__Meta__OpResult **ptrs = calloc(s->n_ops, sizeof(*ptrs));
	if (!msgs || !ptrs) {
		free(msgs);
		free(ptrs);
		rpc_fail(s->req, RPC_INTERNAL, "out of memory answering a committed call");
		free(s);
		return;
	}
	node_range_note_ops(g, s->ops, s->n_ops, res);
	for (size_t i = 0; i < s->n_ops; i++) {
		iolake__meta__op_result__init(&msgs[i]);
		msgs[i].status = meta_state_err_to_status(res[i].err);
		msgs[i].generation = res[i].generation;
		msgs[i].epoch = res[i].epoch;
		msgs[i].upload_id = (char *)res[i].upload_id;
		msgs[i].etag = (char *)res[i].etag;
		msgs[i].version_id = (char *)res[i].version_id;   /* issue 17 */
		msgs[i].delete_marker = res[i].delete_marker;
		msgs[i].retained = res[i].retained;
		msgs[i].part_rows_more = res[i].part_rows_more;   /* issue 18 */
		msgs[i].bucket_changed = res[i].bucket_changed;   /* issue 19 (rtt) */
		msgs[i].replaced_shards = res[i].replaced_shards;
		ptrs[i] = &msgs[i];
	}
	resp.results = ptrs;
	resp.n_results = s->n_ops;
	resp.index = index;
	rpc_respond(s->req, &resp.base, NULL);
	free(msgs);
	free(ptrs);
	free(s);
}

static void fail_subs(struct meta_group *g, struct sub *s, int status, const char *why)
{
	while (s) {
		struct sub *next = s->next;
		sub_finish(g, s, status, why, NULL, 0);
		s = next;
	}
}

static void on_applied(struct raft_apply *req, int status, void *result)
{
	(void)result;
	struct inflight *f = req->data;
	struct meta_group *g = f->g;
	for (struct inflight **pp = &g->inflight; *pp; pp = &(*pp)->next)
		if (*pp == f) {
			*pp = f->next;
			break;
		}
	g->n_inflight--;
	if (status == 0 && f->term > g->read_term)
		g->read_term = f->term;   /* an entry of that term committed (node_read.c) */
	if (status == 0 && f->applied) {
		size_t off = 0;
		struct sub *s = f->subs;
		while (s) {
			struct sub *next = s->next;
			size_t k = s->n_ops;
			sub_finish(g, s, RPC_OK, NULL, f->res + off, f->req.index);
			off += k;
			s = next;
		}
	} else if (status == 0 && g->inst) {
		/* Committed, applied after the install: the retry is deduplicated. */
		fail_subs(g, f->subs, RPC_UNAVAILABLE, "installing a snapshot; retry");
	} else if (status == 0) {
		fail_subs(g, f->subs, RPC_INTERNAL, "entry applied without results");
	} else {
		/* Lost leadership or closing: the entry may still commit under
		 * the next leader; the client's retry is deduplicated. */
		char why[96];
		snprintf(why, sizeof(why), "not committed here (%s); retry", raft_strerror(status));
		fail_subs(g, f->subs, RPC_UNAVAILABLE, why);
	}
	free(f->res);
	free(f);
	group_kick(g);
}

void group_flush(struct meta_group *g)
{
	struct meta_node *n = g->n;
	while (g->q_head && g->n_inflight < META_NODE_PIPELINE) {
		if (!group_is_leader(g)) {
			struct sub *all = g->q_head;
			g->q_head = g->q_tail = NULL;
			g->q_ops = 0;
			char addr[META_NODE_ADDR_MAX], why[128];
			group_leader_addr(g, NULL, addr);
			snprintf(why, sizeof(why), "not leader; leader=%s", addr);
			fail_subs(g, all, RPC_FAILED_PRECONDITION, why);
			return;
		}
		if (g->inst)
			return;   /* a leader still installing: after it (group_install.c) */
		/* Take whole calls while they fit. */
		struct sub *first = g->q_head, *last = first;
		size_t ops = first->n_ops, bytes = first->bytes;
		while (last->next && ops + last->next->n_ops <= META_BATCH_MAX_OPS &&
		       bytes + last->next->bytes <= META_NODE_ENTRY_BYTES) {
			last = last->next;
			ops += last->n_ops;
			bytes += last->bytes;
		}
		g->q_head = last->next;
		if (!g->q_head)
			g->q_tail = NULL;
		last->next = NULL;
		g->q_ops -= ops;

		size_t k = 0;
		for (struct sub *s = first; s; s = s->next)
			for (size_t i = 0; i < s->n_ops; i++)
				n->batch_ops[k++] = s->ops[i];
		Iolake__Meta__OpBatch batch = IOLAKE__META__OP_BATCH__INIT;
		batch.ops = n->batch_ops;
		batch.n_ops = k;
		batch.op_level = meta_state_batch_level(&batch);
		if (n->o.debug_op_level > batch.op_level)
			batch.op_level = n->o.debug_op_level;   /* a test's newer build */

		struct inflight *f = calloc(1, sizeof(*f));
		struct meta_op_result *res = calloc(k, sizeof(*res));
		/* One walk of the ops for their packed size, not two. */
		size_t payload = iolake__meta__op_batch__get_packed_size(&batch);
		size_t size = meta_state_entry_size_of(payload);
		uint8_t *data = raft_malloc(size);
		long len = -ENOMEM;
		if (f && res && data)
			len = meta_state_entry_encode_sized(&batch, payload, data, size);
		if (len < 0) {
			free(f);
			free(res);
			raft_free(data);
			fail_subs(g, first, len == IOL_ETOO_LARGE ? RPC_INVALID_ARGUMENT : RPC_INTERNAL,
				  len == IOL_ETOO_LARGE ? "batch too large" : "cannot encode entry");
			continue;
		}
		f->g = g;
		f->subs = first;
		f->n_ops = k;
		f->res = res;
		f->req.data = f;
		f->term = g->raft.current_term;
		struct raft_buffer rb = { .base = data, .len = (size_t)len };
		int rc = raft_apply(&g->raft, &f->req, &rb, 1, on_applied);
		if (rc) {
			raft_free(data);
			free(res);
			free(f);
			fail_subs(g, first, rc == RAFT_NOTLEADER ? RPC_FAILED_PRECONDITION : RPC_UNAVAILABLE,
				  rc == RAFT_NOTLEADER ? "not leader; leader=" : "raft_apply failed; retry");
			continue;
		}
		f->next = g->inflight;
		g->inflight = f;
		g->n_inflight++;
		g->entries_proposed++;
		m_inc(g->m.entries);
		m_observe(g->m.batch_ops, k);
	}
}

int group_enqueue(struct meta_group *g, struct sub *s)
{
	if (g->q_ops + s->n_ops > META_NODE_QUEUE_OPS)
		return -EAGAIN;
	s->next = NULL;
	if (g->q_tail)
		g->q_tail->next = s;
	else
		g->q_head = s;
	g->q_tail = s;
	g->q_ops += s->n_ops;
	group_flush(g);
	return 0;
}

/* ------------------------------------------------------------ tick */

int group_tick(struct meta_group *g, uint64_t now_ms)
{
	group_install_poll(g);
	int role = raft_state(&g->raft);
	raft_id lid = 0;
	const char *laddr = NULL;
	raft_leader(&g->raft, &lid, &laddr);
	if (lid != g->leader_id) {
		if (lid)
			m_inc(g->m.leader_changes);
		LOG_INFO("leader changed", "group=%llu leader=%llu term=%llu role=%s",
			 (unsigned long long)g->id, (unsigned long long)lid,
			 (unsigned long long)g->raft.current_term, meta_node_role_name(role));
		g->leader_id = lid;
	}
	int was = g->role;
	if (role != RAFT_LEADER && was == RAFT_LEADER)
		group_flush(g);   /* fails what is queued: not leader */
	if (role != RAFT_LEADER && g->heat) {
		/* a later leadership counts from zero (the root sees a smaller
		 * count: another leader's), never on from an old figure */
		range_heat_free(g->heat);
		g->heat = NULL;
	}
	g->role = role;
	m_set(g->m.term, (int64_t)g->raft.current_term);
	m_set(g->m.commit, (int64_t)g->raft.commit_index);
	m_set(g->m.last_index, (int64_t)raft_last_index(&g->raft));
	m_set(g->m.applied, (int64_t)group_applied(g));
	m_set(g->m.is_leader, role == RAFT_LEADER);
	m_set(g->m.installing, g->inst != NULL);
	/* A RocksDB property read takes the DB's mutex, which its write and
	 * flush threads hold too: once a second per group, not every tick
	 * (20 ms) of every group of the member. */
	if (g->state && now_ms - g->mem_gauges_ms >= 1000) {
		g->mem_gauges_ms = now_ms;
		m_set(g->m.mem_tables, (int64_t)meta_state_memtable_bytes(g->state));
		m_set(g->m.mem_cache, (int64_t)meta_state_cache_usage(g->n->cache));
	}
	return was;
}

void group_info(struct meta_group *g, struct meta_node_info *out)
{
	memset(out, 0, sizeof(*out));
	out->id = g->n->o.id;
	out->role = g->closing || g->n->closing ? RAFT_UNAVAILABLE : raft_state(&g->raft);
	out->term = g->raft.current_term;
	out->commit_index = g->raft.commit_index;
	out->applied_index = group_applied(g);
	out->installing = g->inst != NULL;
	out->last_index = raft_last_index(&g->raft);
	group_leader_addr(g, &out->leader_id, out->leader_addr);
	out->epoch = g->n->epoch;
	out->restores = g->restores;
	out->snapshots = g->snaps_taken;
	out->snapshot_fetch_bytes = g->fetch_bytes;
	out->last_install_ms = g->last_install_ms;
	out->entries_proposed = g->entries_proposed;
	out->read_barriers = g->read_barriers;
	out->read_rounds = g->read_rounds;
	out->ops_committed = g->ops_committed;
}

/* ------------------------------------------------------------ metrics */

/* The root's series are the member's from before groups existed (label
 * member); a group >= 1 adds {group}, for the figures issue 13 asks per
 * group. A registration that fails (a group reopened in the same
 * registry: metrics are never unregistered) leaves that metric NULL. */
static int register_metrics(struct meta_group *g)
{
	struct meta_node *n = g->n;
	char mid[24], gid[24];
	snprintf(mid, sizeof(mid), "%llu", (unsigned long long)n->o.id);
	snprintf(gid, sizeof(gid), "%llu", (unsigned long long)g->id);
	const char *const *l = g->id == 0 ? METRICS_LABELS("member", mid)
					  : METRICS_LABELS("member", mid, "group", gid);
	struct metrics_registry *r = n->metrics;
	struct group_metrics *m = &g->m;
	size_t nb;
	const uint64_t *lat = metrics_latency_buckets_us(&nb);
	m->term = metrics_gauge_new(r, "iolake_meta_raft_term", "Raft term.", l);
	m->commit = metrics_gauge_new(r, "iolake_meta_raft_commit_index", "Raft commit index.", l);
	m->applied = metrics_gauge_new(r, "iolake_meta_raft_applied_index", "Raft index applied.", l);
	m->is_leader = metrics_gauge_new(r, "iolake_meta_is_leader", "1 on the leader.", l);
	m->leader_changes = metrics_counter_new(r, "iolake_meta_leader_changes_total",
						"Leader changes seen.", l);
	m->entries = metrics_counter_new(r, "iolake_meta_entries_proposed_total",
					 "Raft entries proposed by this member.", l);
	m->ops = metrics_counter_new(r, "iolake_meta_ops_applied_total", "Ops applied.", l);
	m->ranges = metrics_gauge_new(r, "iolake_meta_group_ranges",
				      "Key ranges the root's range table gives this group.", l);
	m->snapshots = metrics_counter_new(r, "iolake_meta_snapshots_total", "Snapshots taken.", l);
	m->restores = metrics_counter_new(r, "iolake_meta_snapshot_installs_total",
					  "Snapshots installed from the leader.", l);
	m->installing = metrics_gauge_new(r, "iolake_meta_snapshot_installing",
					  "1 while a snapshot install (fetch and load) runs off the loop.",
					  l);
	m->apply_us = metrics_histogram_new(r, "iolake_meta_apply_seconds",
					    "Time to apply one entry.", l, lat, nb, 1e-6);
	m->last_index = metrics_gauge_new(r, "iolake_meta_raft_last_index",
					  "Index of the last entry in the Raft log.", l);
	m->read_barriers = metrics_counter_new(
		r, "iolake_meta_read_barriers_total",
		"Raft barriers appended for reads (the first reads of a leader's term).", l);
	m->read_rounds = metrics_counter_new(r, "iolake_meta_read_rounds_total",
					     "ReadIndex rounds (no log write) for reads.", l);
	m->mem_tables = metrics_gauge_new(r, "iolake_meta_rocksdb_memtable_bytes",
					  "Bytes of the state's RocksDB memtables.", l);
	if (g->id != 0)
		return 0;
	/* One cache for all the member's groups (node.c): on the root only,
	 * so a sum over groups counts it once. */
	m->mem_cache = metrics_gauge_new(r, "iolake_meta_rocksdb_block_cache_bytes",
					 "Bytes in the member's RocksDB block and row caches "
					 "(shared by all its groups).", l);
	static const uint64_t ops_b[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096 };
	static const uint64_t snap_b[] = { 1000, 5000, 20000, 100000, 500000, 2000000, 10000000,
					   60000000 };
	m->batch_ops = metrics_histogram_new(r, "iolake_meta_batch_ops", "Ops per entry proposed.",
					     l, ops_b, sizeof(ops_b) / sizeof(ops_b[0]), 1);
	m->snap_bytes = metrics_gauge_new(r, "iolake_meta_snapshot_bytes",
					  "Bytes of the files of the last checkpoint taken.", l);
	m->fetch_bytes = metrics_counter_new(r, "iolake_meta_snapshot_fetch_bytes_total",
					     "Snapshot file bytes fetched from other members.", l);
	m->snap_seconds = metrics_histogram_new(r, "iolake_meta_snapshot_seconds",
						"Time to take one checkpoint (off the loop).", l,
						snap_b, sizeof(snap_b) / sizeof(snap_b[0]), 1e-6);
	m->read_rounds_failed = metrics_counter_new(
		r, "iolake_meta_read_rounds_failed_total",
		"ReadIndex rounds a majority did not confirm (reads retried).", l);
	/* The root's are the member's contract: every one must exist. */
	if (!m->term || !m->commit || !m->applied || !m->is_leader || !m->leader_changes ||
	    !m->entries || !m->ops || !m->snapshots || !m->restores || !m->apply_us ||
	    !m->last_index || !m->read_barriers || !m->read_rounds || !m->batch_ops ||
	    !m->snap_bytes || !m->fetch_bytes || !m->snap_seconds || !m->read_rounds_failed)
		return errno ? -errno : -ENOMEM;
	return 0;
}

/* The group's Raft directory leaves meta/segfill's set (closed, or never
 * opened). */
static void unregister_segfill(struct meta_group *g)
{
	char path[GROUP_DIR_MAX + 16];
	snprintf(path, sizeof(path), "%s/raft", g->dir);
	segfill_unregister_dir(path);
}

/* ------------------------------------------------------------ open */

static int mkdir_p1(const char *path)
{
	if (mkdir(path, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

void group_free(struct meta_group *g)
{
	range_heat_free(g->heat);
	snap_desc_free(&g->snap_last);
	free(g);
}

int group_open(struct meta_node *n, uint64_t id, const struct raft_configuration *boot,
	       struct meta_group **out)
{
	int rc;
	struct meta_group *g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->n = n;
	g->id = id;
	g->role = RAFT_UNAVAILABLE;
	int k = id == 0 ? snprintf(g->dir, sizeof(g->dir), "%s", n->dir)
			: snprintf(g->dir, sizeof(g->dir), "%s/groups/%llu", n->dir,
				   (unsigned long long)id);
	if (k < 0 || (size_t)k >= sizeof(g->dir)) {
		free(g);
		return -ENAMETOOLONG;
	}
	snprintf(g->snap_dir, sizeof(g->snap_dir), "%s/snap", g->dir);
	g->snapshot_threshold = n->o.snapshot_threshold;
	g->snapshot_bytes = n->o.snapshot_bytes;
	uint64_t wbuf = n->o.write_buffer_bytes ? n->o.write_buffer_bytes
						: META_STATE_WRITE_BUFFER_BYTES;
	struct meta_state_opts so = { .cache = n->cache, .write_buffer_bytes = wbuf,
				      .op_level = n->o.debug_op_level };
	if (id != 0) {
		/* Hundreds of groups per member: each gets an eighth of the
		 * root's memtable and of its snapshot byte threshold (which
		 * bounds the Raft log libraft keeps in memory), fewer open
		 * table files, and a MANIFEST preallocated at 64 KiB, not 4 MiB. */
		so.write_buffer_bytes = wbuf / 8 > GROUP_MIN_WRITE_BUFFER ? wbuf / 8
									   : GROUP_MIN_WRITE_BUFFER;
		so.max_open_files = GROUP_MAX_OPEN_FILES;
		so.manifest_preallocation_bytes = GROUP_MANIFEST_BYTES;
		g->snapshot_bytes = g->snapshot_bytes / 8 > GROUP_MIN_WRITE_BUFFER
					    ? g->snapshot_bytes / 8 : GROUP_MIN_WRITE_BUFFER;
	}
	rc = register_metrics(g);
	if (rc)
		goto err_free;
	char path[GROUP_DIR_MAX + 16];
	if (id != 0) {
		snprintf(path, sizeof(path), "%s/groups", n->dir);
		if ((rc = mkdir_p1(path)) || (rc = mkdir_p1(g->dir)))
			goto err_free;
	}
	snprintf(path, sizeof(path), "%s/state", g->dir);
	rc = meta_state_open(path, &so, &g->state);
	if (rc)
		goto err_free;

	/* raft_uv's segment-writer closes end in io_destroy(2), tens of ms
	 * on the loop: hand them to a thread (meta/iodestroy.h). Without it
	 * they stay on the loop, as before. */
	if (iodestroy_defer_start() < 0)
		LOG_WARN("io_destroy stays on the loop", "group=%llu", (unsigned long long)id);

	/* canonical/raft 0.15 order: transport, io, raft_init, bootstrap,
	 * start (NOTES-deps). */
	snprintf(path, sizeof(path), "%s/raft", g->dir);
	rc = mkdir_p1(path);
	if (rc)
		goto err_state;
	/* raft_uv's segments as written blocks, not fallocated ones: each
	 * append an overwrite, without a journal commit and without the
	 * pool hand-off (meta/segfill.h). Without it, libc's fallocate. */
	if (segfill_register_dir(path) < 0)
		LOG_WARN("raft segments stay fallocated", "group=%llu", (unsigned long long)id);
	rc = raft_mux_transport_init(n->mux, &g->transport, id);
	if (rc)
		goto err_state;
	rc = raft_uv_init(&g->io, n->loop, path, &g->transport);
	if (rc) {
		LOG_ERROR("raft_uv_init failed", "group=%llu err=%s", (unsigned long long)id,
			  raft_strerror(rc));
		rc = -EIO;
		goto err_transport;
	}
	if (!uv_send)
		uv_send = g->io.send;
	g->io.send = group_send;
	raft_uv_set_snapshot_compression(&g->io, false);
	/* Reach a restarted peer soon (default 1 s, above small election
	 * timeouts: the peer would start pre-votes first). */
	raft_uv_set_connect_retry_delay(&g->io, 200);
	/* raft_uv preallocates open segments; a full one's close stalls the
	 * loop (META_NODE_SEGMENT_BYTES): the root, where every commit of
	 * iolake-aio goes, gets large ones, the range groups (several per
	 * member) smaller ones (META_RANGE_SEGMENT_BYTES). */
	raft_uv_set_segment_size(&g->io, id != 0 ? (size_t)n->o.range_segment_bytes
						 : (size_t)n->o.raft_segment_bytes);
	/* Snapshots off the loop need raft_io version 2's async_work. Debian's
	 * 0.15 raft_uv fills async_work but leaves io.version at 1, and
	 * raft_init refuses an async fsm on it: the field is there, so say
	 * so. Without it, the checkpoint would run inside fsm_snapshot. */
	if (g->io.async_work && g->io.version < 2)
		g->io.version = 2;
	g->fsm.version = 3;
	g->fsm.data = g;
	g->fsm.apply = fsm_apply;
	group_snap_fsm(g);   /* snapshot, snapshot_async, snapshot_finalize, restore */
	rc = raft_init(&g->raft, &g->io, &g->fsm, n->o.id, n->raft_addr);
	if (rc) {
		LOG_ERROR("raft_init failed", "group=%llu err=%s msg=%s", (unsigned long long)id,
			  raft_strerror(rc), LOG_Q(raft_errmsg(&g->raft)));
		raft_uv_close(&g->io);
		rc = -EIO;
		goto err_transport;
	}
	g->raft.data = g;
	raft_set_election_timeout(&g->raft, n->o.election_timeout_ms);
	raft_set_heartbeat_timeout(&g->raft, n->o.heartbeat_timeout_ms);
	raft_set_snapshot_threshold(&g->raft, g->snapshot_threshold);
	raft_set_snapshot_trailing(&g->raft, n->o.snapshot_trailing);
	raft_set_pre_vote(&g->raft, true);
	rc = 0;
	if (boot) {
		rc = raft_bootstrap(&g->raft, boot);
		if (rc == RAFT_CANTBOOTSTRAP)
			rc = 0;   /* restart: the log already holds a configuration */
	}
	if (!rc)
		rc = raft_start(&g->raft);
	if (rc) {
		/* Not the port: the member's mux listens on it already. */
		LOG_ERROR("raft start failed", "group=%llu err=%s msg=%s raft_addr=%s",
			  (unsigned long long)id, raft_strerror(rc), LOG_Q(raft_errmsg(&g->raft)),
			  n->raft_addr);
		g->started = true;
		group_close(g, false);   /* raft_init succeeded: close is asynchronous */
		return -EIO;
	}
	g->started = true;
	*out = g;
	return 0;

err_transport:
	raft_mux_transport_close(&g->transport);
err_state:
	unregister_segfill(g);
	meta_state_close(g->state);
err_free:
	group_free(g);
	return rc;
}

/* ------------------------------------------------------------ close */

static void group_maybe_done(struct meta_group *g)
{
	if (--g->close_pending > 0)
		return;
	hosting_group_closed(g);
}

static void on_raft_closed(struct raft *r)
{
	struct meta_group *g = r->data;
	raft_uv_close(&g->io);
	raft_mux_transport_close(&g->transport);
	unregister_segfill(g);
	g->raft_closed = true;
	if (!g->dg_busy) {   /* else digest_after closes it */
		meta_state_close(g->state);
		g->state = NULL;
	}
	group_maybe_done(g);
}

void group_close(struct meta_group *g, bool remove_dir)
{
	struct meta_node *n = g->n;
	if (g->closing)
		return;
	g->closing = true;
	if (g == n->root)
		node_direct_withdraw(n);
	g->remove_dir = remove_dir;
	g->close_next = n->closing_groups;
	n->closing_groups = g;
	if (n->closing)
		n->close_pending++;   /* hosting_group_closed gives it back */
	kick_unlink(g);
	group_install_stop(g);   /* before raft and the state close */
	g->close_pending = 1;   /* raft */
	struct sub *q = g->q_head;
	g->q_head = g->q_tail = NULL;
	g->q_ops = 0;
	fail_subs(g, q, RPC_UNAVAILABLE, n->closing ? "member stopping" : "group closing");
	node_reads_close(g);
	digest_fail_waiters(g);
	if (g->dg_busy)
		g->close_pending++;   /* digest_after */
	raft_close(&g->raft, on_raft_closed);
}
