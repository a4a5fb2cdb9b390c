/*
 * group_members.c — range groups follow the root's membership (issue 13).
 *
 * Two roles, both on the member's tick:
 *   - The root leader keeps the table: when the root's committed voters
 *     differ from the members a live group must have, it proposes
 *     SetGroupMembers (every live group takes the root's voters); when a
 *     group's committed configuration, as this member sees it, equals its
 *     members, it proposes GroupReconciled (the table says so: `range ls`
 *     shows it, and a member removed from the group may then drop its copy,
 *     hosting.c).
 *   - Each group's leader reconciles its Raft configuration toward the
 *     members the table gives it (as this member's copy of the root says):
 *     one change at a time (raft_add, raft_assign voter, raft_remove, or a
 *     leadership transfer away from a leader that must go), chosen by
 *     group_plan_next (group_plan.h), retried after CHANGE_RETRY_MS when
 *     refused or failed. A new member catches up from the group's log or
 *     a file snapshot before it counts (libraft's promotion).
 *
 * Invariants: at most one configuration change of a group in flight
 * (g->mchange_busy, and never while libraft has an uncommitted one); at
 * most one root op of ours in flight (n->members_pending). A group's
 * bootstrap voters (GroupDesc.voters) never change: every member,
 * original or joining, bootstraps that same configuration (hosting.c),
 * so all logs agree at index 1 and a joiner waits, a non-voter, for the
 * leader to add it.
 *
 * Thread: the member's loop. Not here: starting and stopping groups on a
 * member (hosting.c), the ops (state_members.c).
 */
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/log.h"
#include "meta/group_plan.h"
#include "meta/node_internal.h"

#define MEMBERS_POLL_MS 250
#define CHANGE_RETRY_MS 1000

void group_members_desired(const Iolake__Meta__GroupDesc *d, Iolake__Meta__GroupVoter *const **v,
			   size_t *n)
{
	*v = d->n_members ? d->members : d->voters;
	*n = d->n_members ? d->n_members : d->n_voters;
}

static bool desired_has(const Iolake__Meta__GroupDesc *d, uint64_t id)
{
	Iolake__Meta__GroupVoter *const *v;
	size_t n;
	group_members_desired(d, &v, &n);
	for (size_t i = 0; i < n; i++)
		if (v[i]->id == id)
			return true;
	return false;
}

static const Iolake__Meta__GroupDesc *desc_of(Iolake__Meta__GroupDesc **v, size_t n, uint64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (v[i]->id == id)
			return v[i];
	return NULL;
}

/* ------------------------------------------------------ a group's leader */

static void on_change(struct raft_change *c, int status)
{
	struct meta_group *g = c->data;
	g->mchange_busy = false;
	if (status) {
		LOG_WARN("group membership change failed: will retry", "group=%llu err=%s",
			 (unsigned long long)g->id, raft_strerror(status));
		g->mchange_retry_ms = loop_now_ms() + CHANGE_RETRY_MS;
		return;
	}
	LOG_INFO("group membership change committed", "group=%llu voters=%u",
		 (unsigned long long)g->id, g->raft.configuration.n);
}

static void on_transfer(struct raft_transfer *t)
{
	struct meta_group *g = t->data;
	g->xfer_busy = false;
}

static void leader_step(struct meta_group *g, const Iolake__Meta__GroupDesc *d, uint64_t now)
{
	struct meta_node *n = g->n;
	if (g->mchange_busy || g->xfer_busy || g->inst || now < g->mchange_retry_ms ||
	    !group_is_leader(g) || g->raft.configuration_uncommitted_index)
		return;
	Iolake__Meta__GroupVoter *const *dv;
	size_t nd;
	group_members_desired(d, &dv, &nd);
	uint64_t want[META_GROUP_VOTERS_MAX];
	if (nd > META_GROUP_VOTERS_MAX)
		return;
	for (size_t i = 0; i < nd; i++)
		want[i] = dv[i]->id;
	const struct raft_configuration *c = &g->raft.configuration;
	struct group_plan_server have[2 * META_GROUP_VOTERS_MAX + 2];
	size_t na = 0;
	for (unsigned i = 0; i < c->n && na < sizeof(have) / sizeof(have[0]); i++) {
		const struct raft_server *sv = &c->servers[i];
		have[na].id = sv->id;
		have[na].voter = sv->role == RAFT_VOTER;
		have[na].recent = sv->id == n->o.id ||
				  (g->raft.leader_state.progress &&
				   g->raft.leader_state.progress[i].recent_recv);
		na++;
	}
	struct group_plan_step st = group_plan_next(want, nd, have, na, n->o.id);
	if (st.kind == GROUP_PLAN_DONE || st.kind == GROUP_PLAN_WAIT)
		return;
	int rc = 0;
	g->mchange.data = g;
	if (g == n->root)
		node_direct_withdraw(n);   /* node_direct.c: one voter only */
	switch (st.kind) {
	case GROUP_PLAN_ADD: {
		char ra[META_NODE_ADDR_MAX] = "";
		for (size_t i = 0; i < nd; i++)
			if (dv[i]->id == st.id && meta_node_raft_addr(dv[i]->address, ra))
				ra[0] = 0;
		if (!ra[0]) {
			rc = RAFT_INVALID;
			break;
		}
		rc = raft_add(&g->raft, &g->mchange, st.id, ra, on_change);
		break;
	}
	case GROUP_PLAN_PROMOTE:
		rc = raft_assign(&g->raft, &g->mchange, st.id, RAFT_VOTER, on_change);
		break;
	case GROUP_PLAN_REMOVE:
		rc = raft_remove(&g->raft, &g->mchange, st.id, on_change);
		break;
	case GROUP_PLAN_TRANSFER:
		g->xfer.data = g;
		rc = raft_transfer(&g->raft, &g->xfer, st.id, on_transfer);
		if (rc == 0) {
			g->xfer_busy = true;
			g->xfer_ms = now;
		}
		break;
	default:
		return;
	}
	if (rc) {
		LOG_WARN("group membership change refused: will retry", "group=%llu step=%s id=%llu "
			 "err=%s", (unsigned long long)g->id, group_plan_kind_name(st.kind),
			 (unsigned long long)st.id, raft_strerror(rc));
		g->mchange_retry_ms = now + CHANGE_RETRY_MS;
		return;
	}
	if (st.kind != GROUP_PLAN_TRANSFER)
		g->mchange_busy = true;
	LOG_INFO("group membership change", "group=%llu step=%s id=%llu voters=%u",
		 (unsigned long long)g->id, group_plan_kind_name(st.kind),
		 (unsigned long long)st.id, c->n);
}

/* ------------------------------------------------------ the root leader */

struct members_op {
	struct sub sub;
	Iolake__Meta__Op **opp;
	Iolake__Meta__Op *ops;
	Iolake__Meta__SetGroupMembers set;
	Iolake__Meta__GroupVoter gv[META_GROUP_VOTERS_MAX], *gvp[META_GROUP_VOTERS_MAX];
	char addrs[META_GROUP_VOTERS_MAX][META_NODE_ADDR_MAX];
	Iolake__Meta__GroupReconciled *rec;
};

static void members_op_free(struct members_op *o)
{
	free(o->opp);
	free(o->ops);
	free(o->rec);
	free(o);
}

static void members_done(struct meta_node *n, struct sub *s, int err)
{
	struct members_op *o = (struct members_op *)s;
	n->members_pending = false;
	if (err)
		LOG_WARN("group members op failed: will retry", "ops=%zu err=%s", s->n_ops,
			 iol_strerror(err));
	members_op_free(o);
}

static int members_op_new(size_t n_ops, struct members_op **out)
{
	struct members_op *o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->opp = calloc(n_ops, sizeof(*o->opp));
	o->ops = calloc(n_ops, sizeof(*o->ops));
	o->rec = calloc(n_ops, sizeof(*o->rec));
	if (!o->opp || !o->ops || !o->rec) {
		members_op_free(o);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n_ops; i++) {
		iolake__meta__op__init(&o->ops[i]);
		o->opp[i] = &o->ops[i];
	}
	*out = o;
	return 0;
}

static void members_propose(struct meta_node *n, struct members_op *o, size_t n_ops)
{
	o->sub.ops = o->opp;
	o->sub.n_ops = n_ops;
	for (size_t i = 0; i < n_ops; i++)
		o->sub.bytes += protobuf_c_message_get_packed_size(&o->ops[i].base) + 8;
	o->sub.done = members_done;
	n->members_pending = true;
	if (group_enqueue(n->root, &o->sub))
		members_done(n, &o->sub, -EAGAIN);
}

/* g's configuration, as this member has it, is committed and is exactly
 * d's members, all voters. */
static bool config_matches(struct meta_group *g, const Iolake__Meta__GroupDesc *d)
{
	if (g->inst || g->raft.configuration_uncommitted_index || !g->raft.configuration_index)
		return false;
	Iolake__Meta__GroupVoter *const *v;
	size_t nd;
	group_members_desired(d, &v, &nd);
	const struct raft_configuration *c = &g->raft.configuration;
	if (c->n != nd)
		return false;
	for (unsigned i = 0; i < c->n; i++)
		if (c->servers[i].role != RAFT_VOTER || !desired_has(d, c->servers[i].id))
			return false;
	return true;
}

static void root_step(struct meta_node *n, Iolake__Meta__GroupDesc **v, size_t cnt)
{
	struct meta_group *root = n->root;
	if (n->members_pending || root->inst || root->raft.configuration_uncommitted_index ||
	    group_applied(root) < root->raft.commit_index)
		return;
	/* The root's committed voters. */
	const struct raft_configuration *rc = &root->raft.configuration;
	struct members_op *o = NULL;
	size_t nv = 0;
	uint64_t ids[META_GROUP_VOTERS_MAX];
	char addrs[META_GROUP_VOTERS_MAX][META_NODE_ADDR_MAX];
	for (unsigned i = 0; i < rc->n; i++) {
		if (rc->servers[i].role != RAFT_VOTER || rc->servers[i].id == n->members_leaving)
			continue;
		if (nv == META_GROUP_VOTERS_MAX)
			return;   /* more voters than a group may have: left as it is */
		if (meta_node_rpc_addr(rc->servers[i].address, addrs[nv]))
			return;
		ids[nv++] = rc->servers[i].id;
	}
	if (!nv)
		return;
	bool differ = false;
	size_t unreconciled = 0;
	for (size_t i = 0; i < cnt; i++) {
		const Iolake__Meta__GroupDesc *d = v[i];
		if (d->deleted || d->id == 0)
			continue;
		Iolake__Meta__GroupVoter *const *dv;
		size_t nd;
		group_members_desired(d, &dv, &nd);
		bool same = nd == nv;
		for (size_t k = 0; same && k < nv; k++)
			same = desired_has(d, ids[k]);
		differ = differ || !same;
		unreconciled += d->reconciled_index != d->members_index;
	}
	if (differ) {
		if (members_op_new(1, &o))
			return;
		iolake__meta__set_group_members__init(&o->set);
		for (size_t k = 0; k < nv; k++) {
			iolake__meta__group_voter__init(&o->gv[k]);
			o->gv[k].id = ids[k];
			memcpy(o->addrs[k], addrs[k], sizeof(o->addrs[k]));
			o->gv[k].address = o->addrs[k];
			o->gvp[k] = &o->gv[k];
		}
		o->set.members = o->gvp;
		o->set.n_members = nv;
		o->ops[0].body_case = IOLAKE__META__OP__BODY_SET_GROUP_MEMBERS;
		o->ops[0].set_group_members = &o->set;
		LOG_INFO("range groups follow the root's voters", "voters=%zu", nv);
		members_propose(n, o, 1);
		return;
	}
	if (!unreconciled || members_op_new(unreconciled, &o))
		return;
	size_t k = 0;
	for (size_t i = 0; i < cnt && k < unreconciled; i++) {
		const Iolake__Meta__GroupDesc *d = v[i];
		struct meta_group *g = d->id ? hosting_find(n, d->id) : NULL;
		if (d->deleted || d->reconciled_index == d->members_index || !g ||
		    !config_matches(g, d))
			continue;
		iolake__meta__group_reconciled__init(&o->rec[k]);
		o->rec[k].group = d->id;
		o->rec[k].members_index = d->members_index;
		o->ops[k].body_case = IOLAKE__META__OP__BODY_GROUP_RECONCILED;
		o->ops[k].group_reconciled = &o->rec[k];
		k++;
	}
	if (!k) {
		members_op_free(o);
		return;
	}
	LOG_INFO("range groups reconciled", "groups=%zu", k);
	members_propose(n, o, k);
}

bool group_members_lists(struct meta_node *n, uint64_t id)
{
	Iolake__Meta__GroupDesc **v = NULL;
	size_t cnt = 0;
	if (!n->root || n->root->inst || meta_state_list_groups(n->root->state, &v, &cnt))
		return false;
	bool any = false;
	for (size_t i = 0; i < cnt; i++) {
		any = any || (!v[i]->deleted && v[i]->id && desired_has(v[i], id));
		meta_state_free_msg(v[i]);
	}
	free(v);
	return any;
}

/* RemoveMember calls draining their member out of the groups: on to the
 * root's raft_remove once no live group lists it and every one is
 * reconciled (after a grace, for the member to hear of it and drop its
 * copies: hosting.c), or once out of time (a member that is gone, groups
 * that cannot commit: the root goes on without them). */
static void drains(struct meta_node *n, Iolake__Meta__GroupDesc **v, size_t cnt, uint64_t now,
		   bool root_leader)
{
	struct change *next;
	for (struct change *ch = n->changes; ch; ch = next) {
		next = ch->next;
		if (!ch->draining)
			continue;
		if (!root_leader) {
			node_change_fail(ch, RAFT_LEADERSHIPLOST);
			continue;
		}
		bool out = true;
		for (size_t i = 0; i < cnt && out; i++)
			out = v[i]->deleted || !v[i]->id ||
			      (!desired_has(v[i], ch->id) && v[i]->reconciled_index == v[i]->members_index);
		if (out && !ch->drained) {
			ch->drained = true;
			/* A few heartbeats carry the commit index to the member. */
			uint64_t grace = 4 * (uint64_t)n->o.heartbeat_timeout_ms;
			if (grace < 100)
				grace = 100;
			if (grace > MEMBER_DRAIN_GRACE_MS)
				grace = MEMBER_DRAIN_GRACE_MS;
			if (ch->drain_deadline_ms > now + grace)
				ch->drain_deadline_ms = now + grace;
			LOG_INFO("member left the range groups", "id=%llu", (unsigned long long)ch->id);
		}
		if (now >= ch->drain_deadline_ms) {
			if (!ch->drained)
				LOG_WARN("member still in range groups: removing it from the root anyway",
					 "id=%llu", (unsigned long long)ch->id);
			node_change_drained(ch);
		}
	}
}

void group_members_tick(struct meta_node *n, uint64_t now_ms, bool root_leader)
{
	if (n->closing || !n->root || n->root->inst || now_ms - n->last_members_ms < MEMBERS_POLL_MS)
		return;
	n->last_members_ms = now_ms;
	bool leads_any = root_leader || n->changes;
	for (size_t i = 0; i < n->n_groups && !leads_any; i++)
		leads_any = n->groups[i]->id && group_is_leader(n->groups[i]);
	if (!leads_any)
		return;
	Iolake__Meta__GroupDesc **v = NULL;
	size_t cnt = 0;
	if (meta_state_list_groups(n->root->state, &v, &cnt))
		return;
	for (size_t i = 0; i < n->n_groups; i++) {
		struct meta_group *g = n->groups[i];
		const Iolake__Meta__GroupDesc *d = g->id ? desc_of(v, cnt, g->id) : NULL;
		if (d && !d->deleted)
			leader_step(g, d, now_ms);
	}
	if (root_leader)
		root_step(n, v, cnt);
	drains(n, v, cnt, now_ms, root_leader);
	for (size_t i = 0; i < cnt; i++)
		meta_state_free_msg(v[i]);
	free(v);
}
