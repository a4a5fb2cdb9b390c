/*
 * node_move.c — the root leader finishes moves of records between range
 * groups (meta/range_move.h): once a second it looks for a root row in a
 * move (MoveRange leaves one; a driver that stopped — iolake-admin killed,
 * a leader change, a crash — leaves it half done) and, when it finds one,
 * drives every move to its end with the mover over its own meta client
 * (the members' RPC addresses from the root's configuration). Automatic
 * moves (--range-split-objects, --range-split-bytes, --range-merge-objects):
 * every range_poll_ms it asks each live group for its open ranges'
 * counters, one group after another, and splits the first range past a
 * threshold at its median key (ReadRange split_key: the source group's
 * scan to half its objects) or, when none is, merges the first adjacent
 * pair of a bucket under the merge threshold. One move at a time. Also the
 * /metrics of moves: iolake_meta_range_moves_total, ..._records_moved_total,
 * ..._records_dropped_total, ..._sealed_ms (the last move's) and
 * ..._sealed_ms_total.
 *
 * Owns the mover's client; closed when leadership goes and at close.
 * Not here: the mover (range_move.c), the ops (state_range.c).
 */
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/log.h"
#include "common/metrics.h"
#include "meta/node_internal.h"
#include "meta/range_move.h"

#define MOVE_POLL_MS 1000

struct count {
	uint64_t id, objects, bytes;
};

struct node_mover {
	struct meta_node *n;
	struct meta_client *c;
	bool running;                  /* a driver, or a look at the counters */
	uint64_t last_ms, last_auto_ms;
	/* automatic moves: the groups' counters, asked one group at a time */
	uint64_t *groups;
	size_t n_groups, gi;
	struct count *cnt;
	size_t n_cnt, cap_cnt;
	char split_bucket[64];
	uint64_t split_id;
	struct metrics_counter *m_auto_splits, *m_auto_merges;
	struct metrics_counter *m_moves, *m_records, *m_dropped, *m_sealed_total;
	struct metrics_gauge *m_sealed;
};

static bool move_pending(struct meta_node *n)
{
	Iolake__Meta__RangeDesc **v = NULL;
	size_t cnt = 0;
	if (meta_state_list_ranges(n->root->state, NULL, &v, &cnt))
		return false;
	bool any = false;
	for (size_t i = 0; i < cnt; i++) {
		any = any || v[i]->move_phase != IOLAKE__META__RANGE_MOVE_PHASE__MOVE_NONE;
		meta_state_free_msg(v[i]);
	}
	free(v);
	return any;
}

static int mover_client(struct node_mover *mv)
{
	struct meta_node *n = mv->n;
	char addrs[META_CLIENT_MAX_MEMBERS][META_NODE_ADDR_MAX];
	const char *ptrs[META_CLIENT_MAX_MEMBERS];
	size_t m = 0;
	const struct raft_configuration *c = &n->root->raft.configuration;
	for (unsigned k = 0; k < c->n && m < META_CLIENT_MAX_MEMBERS; k++) {
		if (c->servers[k].role != RAFT_VOTER ||
		    meta_node_rpc_addr(c->servers[k].address, addrs[m]))
			continue;
		ptrs[m] = addrs[m];
		m++;
	}
	if (!m)
		return -ENOENT;
	struct meta_client_opts o = { .members = ptrs, .n_members = m };
	return meta_client_new(n->loop, &o, &mv->c);
}

static void on_driven(void *ud, int err, const struct meta_move_stats *st)
{
	struct node_mover *mv = ud;
	mv->running = false;
	metrics_counter_add(mv->m_moves, st->moves);
	metrics_counter_add(mv->m_records, st->records);
	metrics_counter_add(mv->m_dropped, st->dropped);
	metrics_counter_add(mv->m_sealed_total, st->sealed_ms_total);
	if (st->moves)
		metrics_gauge_set(mv->m_sealed, (int64_t)st->sealed_ms);
	if (err && err != IOL_ESHUTDOWN)
		LOG_WARN("range move: will retry", "err=%s", iol_strerror(err));
	else if (st->moves)
		LOG_INFO("range moves finished", "moves=%llu records=%llu sealed_ms=%llu",
			 (unsigned long long)st->moves, (unsigned long long)st->records,
			 (unsigned long long)st->sealed_ms);
}

static struct node_mover *mover(struct meta_node *n)
{
	if (n->mover)
		return n->mover;
	struct node_mover *mv = calloc(1, sizeof(*mv));
	if (!mv)
		return NULL;
	mv->n = n;
	struct metrics_registry *r = n->metrics;
	mv->m_moves = metrics_counter_new(r, "iolake_meta_range_moves_total",
					  "Splits and merges of key ranges this member drove to "
					  "their end as root leader.", NULL);
	mv->m_records = metrics_counter_new(r, "iolake_meta_range_records_moved_total",
					    "Records copied between range groups by moves.", NULL);
	mv->m_dropped = metrics_counter_new(r, "iolake_meta_range_records_dropped_total",
					    "Moved records dropped from their source group.", NULL);
	mv->m_sealed_total = metrics_counter_new(r, "iolake_meta_range_sealed_ms_total",
						 "Milliseconds ranges spent sealed for moves.", NULL);
	mv->m_sealed = metrics_gauge_new(r, "iolake_meta_range_sealed_ms",
					 "The last move's sealed time (ms).", NULL);
	mv->m_auto_splits = metrics_counter_new(r, "iolake_meta_range_auto_splits_total",
						"Automatic splits started (--range-split-*).", NULL);
	mv->m_auto_merges = metrics_counter_new(r, "iolake_meta_range_auto_merges_total",
						"Automatic merges started (--range-merge-objects).",
						NULL);
	n->mover = mv;
	return mv;
}

/* ---- automatic splits and merges */

static void auto_end(struct node_mover *mv)
{
	free(mv->groups);
	free(mv->cnt);
	mv->groups = NULL;
	mv->cnt = NULL;
	mv->n_groups = mv->gi = mv->n_cnt = mv->cap_cnt = 0;
	mv->running = false;
}

static const struct count *count_of(const struct node_mover *mv, uint64_t id)
{
	for (size_t i = 0; i < mv->n_cnt; i++)
		if (mv->cnt[i].id == id)
			return &mv->cnt[i];
	return NULL;
}

static void on_split_key(void *ud, int err, const ProtobufCMessage *resp)
{
	struct node_mover *mv = ud;
	const Iolake__Meta__ReadRangeResponse *r = (const void *)resp;
	if (err || r->status || !r->split_key[0]) {
		auto_end(mv);
		return;
	}
	LOG_INFO("range split by size", "bucket=%s range=%llu key_len=%zu", mv->split_bucket,
		 (unsigned long long)mv->split_id, strlen(r->split_key));
	char bucket[64];
	snprintf(bucket, sizeof(bucket), "%s", mv->split_bucket);
	auto_end(mv);
	if (meta_move_start(mv->c, mv->n->loop, bucket, mv->split_id, r->split_key, false, 0,
			    NULL, on_driven, mv) == 0) {
		mv->running = true;
		metrics_counter_inc(mv->m_auto_splits);
	}
}

/* Every open range's counters are in: split the first range past a
 * threshold, else merge the first adjacent pair under the merge one. */
static void auto_decide(struct node_mover *mv)
{
	const struct meta_node_opts *o = &mv->n->o;
	Iolake__Meta__RangeDesc **v = NULL;
	size_t cnt = 0;
	if (meta_state_list_ranges(mv->n->root->state, NULL, &v, &cnt)) {
		auto_end(mv);
		return;
	}
	const Iolake__Meta__RangeDesc *split = NULL, *ml = NULL, *mr = NULL;
	for (size_t i = 0; i < cnt && !split; i++) {
		const struct count *c = count_of(mv, v[i]->id);
		if (c && ((o->range_split_objects && c->objects >= o->range_split_objects) ||
			  (o->range_split_bytes && c->bytes >= o->range_split_bytes)))
			split = v[i];
	}
	for (size_t i = 0; !split && !ml && o->range_merge_objects && i + 1 < cnt; i++) {
		const struct count *a = count_of(mv, v[i]->id), *b = count_of(mv, v[i + 1]->id);
		if (a && b && !strcmp(v[i]->bucket, v[i + 1]->bucket) &&
		    a->objects + b->objects < o->range_merge_objects) {
			ml = v[i];
			mr = v[i + 1];
		}
	}
	int rc = -1;
	if (split) {
		snprintf(mv->split_bucket, sizeof(mv->split_bucket), "%s", split->bucket);
		mv->split_id = split->id;
		Iolake__Meta__ReadRangeRequest q = IOLAKE__META__READ_RANGE_REQUEST__INIT;
		q.range_id = split->id;
		q.bucket = split->bucket;
		q.start = split->start;
		q.end = split->end;
		q.split_key = true;
		q.group = split->group;
		rc = meta_client_call_direct(mv->c, META_M_READ_RANGE, &q.base, on_split_key, mv);
		if (rc)
			auto_end(mv);
	} else if (ml) {
		auto_end(mv);
		LOG_INFO("range merge by size", "bucket=%s range=%llu", ml->bucket,
			 (unsigned long long)ml->id);
		if (meta_move_start(mv->c, mv->n->loop, ml->bucket, ml->id, mr->start, true, 0, NULL,
				    on_driven, mv) == 0) {
			mv->running = true;
			metrics_counter_inc(mv->m_auto_merges);
		}
	} else {
		auto_end(mv);
	}
	for (size_t i = 0; i < cnt; i++)
		meta_state_free_msg(v[i]);
	free(v);
}

static void auto_next(struct node_mover *mv);

static void on_counts(void *ud, int err, const ProtobufCMessage *resp)
{
	struct node_mover *mv = ud;
	const Iolake__Meta__GetRangesResponse *g = (const void *)resp;
	if (err) {
		auto_end(mv);
		return;
	}
	for (size_t i = 0; i < g->n_ranges; i++) {
		if (g->ranges[i]->sealed)
			continue;
		if (mv->n_cnt == mv->cap_cnt) {
			size_t cap = mv->cap_cnt ? 2 * mv->cap_cnt : 64;
			struct count *nc = realloc(mv->cnt, cap * sizeof(*nc));
			if (!nc) {
				auto_end(mv);
				return;
			}
			mv->cnt = nc;
			mv->cap_cnt = cap;
		}
		mv->cnt[mv->n_cnt++] = (struct count){ g->ranges[i]->id, g->ranges[i]->objects,
						       g->ranges[i]->bytes };
	}
	auto_next(mv);
}

static void auto_next(struct node_mover *mv)
{
	if (mv->gi == mv->n_groups) {
		auto_decide(mv);
		return;
	}
	Iolake__Meta__GetRangesRequest q = IOLAKE__META__GET_RANGES_REQUEST__INIT;
	q.bucket = "";
	q.group = mv->groups[mv->gi++];
	if (meta_client_call_direct(mv->c, META_M_GET_RANGES, &q.base, on_counts, mv))
		auto_end(mv);
}

static void auto_start(struct node_mover *mv)
{
	Iolake__Meta__GroupDesc **v = NULL;
	size_t cnt = 0;
	if (meta_state_list_groups(mv->n->root->state, &v, &cnt))
		return;
	mv->groups = calloc(cnt + 1, sizeof(*mv->groups));
	for (size_t i = 0; i < cnt; i++) {
		if (mv->groups && !v[i]->deleted)
			mv->groups[mv->n_groups++] = v[i]->id;
		meta_state_free_msg(v[i]);
	}
	free(v);
	if (!mv->groups || !mv->n_groups) {
		auto_end(mv);
		return;
	}
	mv->running = true;
	auto_next(mv);
}

void node_move_tick(struct meta_node *n, uint64_t now, bool leader)
{
	struct node_mover *mv = n->mover;
	if (!leader) {
		if (mv && mv->c) {
			meta_client_close(mv->c);   /* a driver in flight ends (ESHUTDOWN) */
			mv->c = NULL;
		}
		return;
	}
	if (n->n_groups < 2 && !mv)
		return;   /* no range group: nothing ever moves */
	if (!(mv = mover(n)) || mv->running || now - mv->last_ms < MOVE_POLL_MS)
		return;
	mv->last_ms = now;
	bool pending = move_pending(n);
	const struct meta_node_opts *o = &n->o;
	unsigned poll = o->range_poll_ms ? o->range_poll_ms : 5000;
	bool look = (o->range_split_objects || o->range_split_bytes || o->range_merge_objects) &&
		    now - mv->last_auto_ms >= poll;
	if (!pending && !look)
		return;
	if (!mv->c && mover_client(mv))
		return;
	if (pending) {
		if (meta_move_drive(mv->c, n->loop, "", NULL, on_driven, mv) == 0)
			mv->running = true;
		return;
	}
	mv->last_auto_ms = now;
	auto_start(mv);
}

void node_move_close(struct meta_node *n)
{
	struct node_mover *mv = n->mover;
	if (!mv)
		return;
	if (mv->c)
		meta_client_close(mv->c);
	auto_end(mv);
	free(mv);
	n->mover = NULL;
}
