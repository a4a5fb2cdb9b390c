/*
 * node_read.c — linearizable reads of one Raft group of a meta member:
 * ReadIndex rounds (nothing written to the Raft log), with a Raft barrier
 * only for the first reads of a leader's term. Each group runs its own
 * rounds over the member's channels to its peers (one per peer, shared by
 * the groups); ConfirmLeader names the group, so a peer answers for it.
 * Contracts in node_internal.h; the read handlers themselves are in
 * service_read.c (node_serve_read).
 *
 * A read is linearizable if it sees every write acknowledged before it
 * arrived. The leader gets there without a log write, as etcd and TiKV do:
 *   1. note raft's commit index C (after the reads arrived);
 *   2. ask every peer voter ConfirmLeader(term, self); a peer says ok only
 *      while its current term is ours and it follows us. With a majority
 *      (self included), no newer leader can have committed anything when
 *      the reads arrived: its electors would be in a newer term, and one
 *      of them is among those who confirmed;
 *   3. serve the reads once the applied index reaches C.
 * C is complete only once the leader has committed an entry of its own
 * term (raft's Leader Completeness): until one of its proposals (node.c
 * on_applied) or a barrier of this term committed, the reads take a
 * raft_barrier, whose success marks the term as ready for rounds.
 *
 * One round (or barrier) is in flight at a time; reads arriving meanwhile
 * wait for the next one, so a burst of reads costs one round.
 *
 * Thread: the node's loop only. Not here: leases (no clock assumptions),
 * follower reads (followers redirect to the leader).
 */
#include "meta/node_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

#define ROUND_TIMEOUT_MS 2000

struct read_round {
	struct meta_group *g;
	struct read_req *reads;        /* moved to g->ready once confirmed */
	size_t count;
	uint64_t term;
	uint64_t index;                /* commit index when the round started */
	unsigned acks, needed, waiting;
	bool decided;
	bool queued;                   /* in g->ready */
	struct read_round *next;
};

static void fail_reads(struct meta_group *g, struct read_req *r, size_t count, int status,
		       const char *why)
{
	while (r) {
		struct read_req *next = r->next;
		if (status == RPC_FAILED_PRECONDITION)
			group_fail_not_leader(g, r->req);
		else
			rpc_fail(r->req, status, "%s", why);
		free(r);
		r = next;
	}
	g->n_reads -= count;
}

static void serve_reads(struct meta_group *g, struct read_req *r, size_t count)
{
	while (r) {
		struct read_req *next = r->next;
		node_serve_read(g, r->req, r->method);
		free(r);
		r = next;
	}
	g->n_reads -= count;
}

/* ------------------------------------------------------------ barrier */

static void on_barrier(struct raft_barrier *req, int status)
{
	struct barrier *b = req->data;
	struct meta_group *g = b->g;
	g->barrier_inflight = false;
	if (status == 0) {
		/* An entry of term b->term committed: raft's commit index is
		 * complete for that term from now on. */
		if (b->term > g->read_term)
			g->read_term = b->term;
		serve_reads(g, b->reads, b->count);
	} else {
		char why[96];
		snprintf(why, sizeof(why), "read barrier failed (%s); retry", raft_strerror(status));
		fail_reads(g, b->reads, b->count, RPC_UNAVAILABLE, why);
	}
	free(b);
	group_kick(g);
}

static int start_barrier(struct meta_group *g, struct read_req *reads, size_t cnt)
{
	struct barrier *b = calloc(1, sizeof(*b));
	if (!b)
		return RAFT_NOMEM;
	b->g = g;
	b->reads = reads;
	b->count = cnt;
	b->term = g->raft.current_term;
	b->req.data = b;
	int rc = raft_barrier(&g->raft, &b->req, on_barrier);
	if (rc) {
		free(b);
		return rc;
	}
	g->barrier_inflight = true;
	m_inc(g->m.read_barriers);
	g->read_barriers++;
	return 0;
}

/* ------------------------------------------------------------ rounds */

/* The RPC channel to voter id at Raft address raft_addr (its RPC address
 * is one port below), opened on first use, reopened if it moved. */
struct rpc_channel *node_peer_channel(struct meta_node *n, uint64_t id, const char *raft_addr)
{
	char addr[META_NODE_ADDR_MAX];
	const char *colon = strrchr(raft_addr, ':');
	if (!colon || (size_t)(colon - raft_addr) + 8 > sizeof(addr))
		return NULL;
	snprintf(addr, sizeof(addr), "%.*s:%d", (int)(colon - raft_addr), raft_addr,
		 atoi(colon + 1) - 1);
	struct node_peer_ch *free_slot = NULL;
	for (size_t i = 0; i < NODE_PEER_CHANNELS; i++) {
		struct node_peer_ch *p = &n->peer_ch[i];
		if (p->ch && p->id == id) {
			if (!strcmp(p->addr, addr))
				return p->ch;
			rpc_channel_close(p->ch);
			p->ch = NULL;
		}
		if (!p->ch && !free_slot)
			free_slot = p;
	}
	if (!free_slot) {
		/* Every slot taken (members came and went): drop one the root's
		 * configuration no longer names. Its calls in flight are
		 * answered CANCELLED now: those rounds fail and retry. */
		const struct raft_configuration *c = n->root ? &n->root->raft.configuration : NULL;
		for (size_t i = 0; c && i < NODE_PEER_CHANNELS && !free_slot; i++) {
			bool named = false;
			for (unsigned k = 0; k < c->n; k++)
				named |= c->servers[k].id == n->peer_ch[i].id;
			if (!named) {
				rpc_channel_close(n->peer_ch[i].ch);
				n->peer_ch[i].ch = NULL;
				free_slot = &n->peer_ch[i];
			}
		}
		if (!free_slot)
			return NULL;
	}
	/* Fast failure detection (as meta/client.c's): a leader that dropped
	 * off fails forwarded calls in about a second, not 3 s. */
	struct rpc_channel_opts co = { .connect_timeout_ms = 1000, .backoff_max_ms = 1000,
				       .ping_busy_ms = 300, .ping_timeout_ms = 1000 };
	free_slot->ch = rpc_channel_open(n->loop, addr, &co);
	if (!free_slot->ch)
		return NULL;
	free_slot->id = id;
	snprintf(free_slot->addr, sizeof(free_slot->addr), "%s", addr);
	return free_slot->ch;
}

static void round_maybe_free(struct read_round *rr)
{
	if (rr->decided && !rr->waiting && !rr->queued)
		free(rr);
}

static void serve_ready(struct meta_group *g)
{
	uint64_t applied = group_applied(g);   /* not past an install that runs */
	while (g->ready && g->ready->index <= applied) {
		struct read_round *rr = g->ready;
		g->ready = rr->next;
		if (!g->ready)
			g->ready_tail = NULL;
		rr->queued = false;
		serve_reads(g, rr->reads, rr->count);
		rr->reads = NULL;
		round_maybe_free(rr);
	}
}

/* Confirmed: the reads wait in g->ready for the applied index; else they
 * fail. The caller then calls round_maybe_free(rr) and serve_ready(g), in
 * that order (serve_ready may free rr). */
static void round_decide(struct read_round *rr, bool confirmed, const char *why)
{
	struct meta_group *g = rr->g;
	rr->decided = true;
	g->round = NULL;
	bool still = group_is_leader(g) && g->raft.current_term == rr->term;
	if (confirmed && still) {
		rr->next = NULL;
		rr->queued = true;
		if (g->ready_tail)
			g->ready_tail->next = rr;
		else
			g->ready = rr;
		g->ready_tail = rr;
	} else {
		fail_reads(g, rr->reads, rr->count,
			   still ? RPC_UNAVAILABLE : RPC_FAILED_PRECONDITION, why);
		rr->reads = NULL;
		m_inc(g->m.read_rounds_failed);
	}
	group_kick(g);   /* the next round, for the reads that queued meanwhile */
}

static void on_confirm(void *ud, const struct rpc_result *res)
{
	struct read_round *rr = ud;
	if (!rr->g) {   /* its group closed: only the count is left to keep */
		rr->waiting--;
		round_maybe_free(rr);
		return;
	}
	if (res->status == RPC_OK) {
		const Iolake__Meta__ConfirmLeaderResponse *m =
			(const Iolake__Meta__ConfirmLeaderResponse *)res->resp;
		if (m->ok && m->term == rr->term)
			rr->acks++;
	}
	unsigned left = rr->waiting - 1;   /* answers still to come */
	if (!rr->decided) {
		if (rr->acks >= rr->needed)
			round_decide(rr, true, NULL);
		else if (rr->acks + left < rr->needed)
			round_decide(rr, false, "leadership not confirmed by a majority; retry");
	}
	rr->waiting = left;   /* only now: rr stays alive through round_decide */
	struct meta_group *g = rr->g;
	round_maybe_free(rr);
	serve_ready(g);
}

static int start_round(struct meta_group *g, struct read_req *reads, size_t cnt)
{
	struct read_round *rr = calloc(1, sizeof(*rr));
	if (!rr)
		return RAFT_NOMEM;
	rr->g = g;
	rr->reads = reads;
	rr->count = cnt;
	rr->term = g->raft.current_term;
	rr->index = g->raft.commit_index;
	const struct raft_configuration *c = &g->raft.configuration;
	unsigned voters = 0;
	for (unsigned i = 0; i < c->n; i++)
		if (c->servers[i].role == RAFT_VOTER)
			voters++;
	rr->needed = voters / 2 + 1;
	rr->acks = 1;   /* the leader is a voter */
	g->round = rr;
	m_inc(g->m.read_rounds);
	g->read_rounds++;
	struct rpc_channel *chs[META_NODE_MAX_PEERS];
	unsigned nch = 0;
	for (unsigned i = 0; i < c->n && nch < META_NODE_MAX_PEERS; i++) {
		if (c->servers[i].role != RAFT_VOTER || c->servers[i].id == g->n->o.id)
			continue;
		struct rpc_channel *ch = node_peer_channel(g->n, c->servers[i].id, c->servers[i].address);
		if (ch)
			chs[nch++] = ch;
	}
	if (rr->acks >= rr->needed || rr->acks + nch < rr->needed) {
		round_decide(rr, rr->acks >= rr->needed, "no channel to a majority of members; retry");
		round_maybe_free(rr);
		serve_ready(g);
		return 0;
	}
	Iolake__Meta__ConfirmLeaderRequest q = IOLAKE__META__CONFIRM_LEADER_REQUEST__INIT;
	q.term = rr->term;
	q.leader_id = g->n->o.id;
	q.group = g->id;
	struct rpc_call_opts co = { .timeout_ms = ROUND_TIMEOUT_MS };
	rr->waiting = nch;   /* answers come on later loop turns, never inside rpc_call */
	for (unsigned i = 0; i < nch; i++)
		rpc_call(chs[i], META_SERVICE, META_M_CONFIRM_LEADER, &q.base, NULL, &co, on_confirm,
			 rr);
	return 0;
}

/* ------------------------------------------------------------ queue */

void node_start_reads(struct meta_group *g)
{
	if (g->ready)
		serve_ready(g);
	if (g->barrier_inflight || g->round || !g->r_head || g->closing)
		return;
	struct read_req *reads = g->r_head;
	g->r_head = g->r_tail = NULL;
	size_t cnt = 0;
	for (struct read_req *r = reads; r; r = r->next)
		cnt++;
	if (!group_is_leader(g)) {
		fail_reads(g, reads, cnt, RPC_FAILED_PRECONDITION, NULL);
		return;
	}
	int rc = g->read_term == g->raft.current_term
			 ? start_round(g, reads, cnt)
			 : start_barrier(g, reads, cnt);
	if (rc == RAFT_NOTLEADER) {
		fail_reads(g, reads, cnt, RPC_FAILED_PRECONDITION, NULL);
	} else if (rc) {
		char why[96];
		snprintf(why, sizeof(why), "read barrier: %s", raft_strerror(rc));
		fail_reads(g, reads, cnt, RPC_UNAVAILABLE, why);
	}
}

int node_queue_read(struct meta_group *g, struct rpc_req *r, unsigned method)
{
	if (g->n_reads >= META_NODE_READS_MAX)
		return -EAGAIN;
	struct read_req *q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->req = r;
	q->method = method;
	if (g->r_tail)
		g->r_tail->next = q;
	else
		g->r_head = q;
	g->r_tail = q;
	g->n_reads++;
	node_start_reads(g);
	return 0;
}

void node_reads_close(struct meta_group *g)
{
	struct read_req *r = g->r_head;
	g->r_head = g->r_tail = NULL;
	size_t cnt = 0;
	for (struct read_req *p = r; p; p = p->next)
		cnt++;
	fail_reads(g, r, cnt, RPC_UNAVAILABLE, "member stopping");
	/* Confirmed rounds waiting for apply: their reads fail too. */
	while (g->ready) {
		struct read_round *rr = g->ready;
		g->ready = rr->next;
		fail_reads(g, rr->reads, rr->count, RPC_UNAVAILABLE, "member stopping");
		rr->reads = NULL;
		rr->next = NULL;
		rr->queued = false;
		round_maybe_free(rr);
	}
	g->ready_tail = NULL;
	/* The round in flight: its reads fail now; its calls stay on the
	 * member's channels, and their answers find it orphaned (no group)
	 * and free it with the last one. */
	struct read_round *rr = g->round;
	if (rr) {
		g->round = NULL;
		fail_reads(g, rr->reads, rr->count, RPC_UNAVAILABLE, "member stopping");
		rr->reads = NULL;
		rr->decided = true;
		rr->g = NULL;
		round_maybe_free(rr);
	}
}

void node_peers_close(struct meta_node *n)
{
	/* Closing a channel answers its calls now (CANCELLED). */
	for (size_t i = 0; i < NODE_PEER_CHANNELS; i++)
		if (n->peer_ch[i].ch) {
			rpc_channel_close(n->peer_ch[i].ch);
			n->peer_ch[i].ch = NULL;
		}
}

/* ConfirmLeader, on a peer: ok while this member follows the caller in
 * the caller's term, in the group the call names (not hosted here:
 * NOT_FOUND, not ok). */
void node_confirm_leader(struct meta_node *n, struct rpc_req *r)
{
	const Iolake__Meta__ConfirmLeaderRequest *q =
		(const Iolake__Meta__ConfirmLeaderRequest *)rpc_req_msg(r);
	Iolake__Meta__ConfirmLeaderResponse resp = IOLAKE__META__CONFIRM_LEADER_RESPONSE__INIT;
	struct meta_group *g = n->closing ? NULL : hosting_find(n, q->group);
	if (!g) {
		resp.status = IOLAKE__META__STATUS__STATUS_NOT_FOUND;
		rpc_respond(r, &resp.base, NULL);
		return;
	}
	raft_id lid = 0;
	const char *laddr = NULL;
	raft_leader(&g->raft, &lid, &laddr);
	resp.term = g->raft.current_term;
	resp.ok = !g->closing && raft_state(&g->raft) == RAFT_FOLLOWER &&
		  g->raft.current_term == q->term && lid == q->leader_id;
	rpc_respond(r, &resp.base, NULL);
}
