/*
 * node_direct.c — what lets a linearizable read of the root be answered on
 * the caller's thread (in process: rpc_local's direct handlers, see
 * common/rpc.h rpc_direct_fn; the handlers are service_read.c's
 * node_serve_direct_* ones):
 * the root group published, by the loop, while reading its state from
 * another thread answers what the loop's path (node_read.c: a ReadIndex
 * round or a barrier, then the read on the loop) would.
 *
 * The root is published only while all of these hold, as the loop sees
 * them (checked on every tick, and withdrawn before anything that would
 * end them: a membership change, a snapshot install, closing):
 *  - this member is the leader and the group is not closing, nor the
 *    member;
 *  - the configuration has exactly one voter, this member, and no change
 *    is uncommitted or started (mchange_busy): no other member can be
 *    elected, so no other leader can have acknowledged a write;
 *  - an entry of the current term has been applied (read_term, as the
 *    loop's reads require before a round): every entry committed before
 *    this term (acknowledged by an earlier leadership, before a restart)
 *    is in the state, and each later one is acknowledged only after its
 *    apply, so whatever was acknowledged before a read began is there;
 *  - no snapshot install runs (g->inst): the state only moves forward.
 * Each apply is one RocksDB write batch; a direct read that reads several
 * rows brackets them with the state's write sequence (meta_state_read_seq
 * / meta_state_read_same) and declines when a write landed in between, so
 * its rows come from one state, as on the loop between two applies.
 *
 * Range groups (id >= 1) are never published: their reads count load for
 * splits in loop-owned memory (node_range_note, g->heat); they, and every
 * read a direct handler declines, take the loop's path unchanged. With
 * more than one voter nothing is published (no lease reads).
 *
 * Owns direct_lk and direct_g (struct meta_node). Threads: update and
 * withdraw on the loop; acquire and release on any thread.
 */
#include <errno.h>
#include <pthread.h>

#include "common/check.h"
#include "common/metrics.h"
#include "meta/node_internal.h"

void node_direct_init(struct meta_node *n)
{
	/* Writer-preferring: the loop's withdraw must not wait behind a
	 * stream of readers (callers only ever try the lock). */
	pthread_rwlockattr_t a;
	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	IOL_ASSERT(pthread_rwlock_init(&n->direct_lk, &a) == 0);
	pthread_rwlockattr_destroy(&a);
	n->direct_g = NULL;
}

void node_direct_free(struct meta_node *n)
{
	pthread_rwlock_destroy(&n->direct_lk);
}

/* Exactly one voter, this member. */
static bool sole_voter(const struct raft_configuration *c, uint64_t self)
{
	unsigned voters = 0;
	bool me = false;
	for (unsigned i = 0; i < c->n; i++) {
		if (c->servers[i].role != RAFT_VOTER)
			continue;
		voters++;
		me = me || c->servers[i].id == self;
	}
	return voters == 1 && me;
}

static bool eligible(struct meta_node *n)
{
	struct meta_group *g = n->root;
	return g && !n->closing && g->started && group_is_leader(g) && !g->inst &&
	       !g->mchange_busy && !g->xfer_busy && !g->raft.configuration_uncommitted_index &&
	       sole_voter(&g->raft.configuration, n->o.id) &&
	       g->read_term == g->raft.current_term;
}

static void set(struct meta_node *n, struct meta_group *g)
{
	if (n->direct_g == g)
		return;
	pthread_rwlock_wrlock(&n->direct_lk);   /* waits for readers of the old one */
	n->direct_g = g;
	pthread_rwlock_unlock(&n->direct_lk);
}

void node_direct_update(struct meta_node *n)
{
	set(n, eligible(n) ? n->root : NULL);
}

void node_direct_withdraw(struct meta_node *n)
{
	set(n, NULL);
}

struct meta_group *node_direct_acquire(struct meta_node *n, uint64_t gid)
{
	if (gid != 0 || pthread_rwlock_tryrdlock(&n->direct_lk))
		return NULL;
	struct meta_group *g = n->direct_g;
	if (!g)
		pthread_rwlock_unlock(&n->direct_lk);
	return g;
}

void node_direct_release(struct meta_node *n)
{
	pthread_rwlock_unlock(&n->direct_lk);
}

uint64_t meta_node_direct_reads(struct meta_node *n)
{
	return metrics_counter_get(n->m_direct_reads);
}
