/*
 * node_move.c — the root leader finishes moves of records between range
 * groups (meta/range_move.h): once a second it looks for a root row in a
 * move (MoveRange leaves one; a driver that stopped — iolake-admin killed,
 * a leader change, a crash — leaves it half done) and, when it finds one,
 * drives every move to its end with the mover over its own meta client
 * (the members' RPC addresses from the root's configuration). Also the
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

struct node_mover {
	struct meta_node *n;
	struct meta_client *c;
	bool running;
	uint64_t last_ms;
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
	n->mover = mv;
	return mv;
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
	if (!move_pending(n))
		return;
	if (!mv->c && mover_client(mv))
		return;
	if (meta_move_drive(mv->c, n->loop, "", NULL, on_driven, mv) == 0)
		mv->running = true;
}

void node_move_close(struct meta_node *n)
{
	struct node_mover *mv = n->mover;
	if (!mv)
		return;
	if (mv->c)
		meta_client_close(mv->c);
	free(mv);
	n->mover = NULL;
}
