/*
 * hosting.c — the Raft groups a meta member hosts (contracts in
 * node_internal.h): the table of open groups by id, their lifecycle as
 * the root group's state dictates it (CreateGroup / DeleteGroup, applied
 * through the root), and the spread of their leaders over the members.
 *
 * Invariants:
 *   - The root's table is the only source of which groups exist. A member
 *     runs group k when the table holds k, not deleted, with this member
 *     among its members (GroupDesc.members, else its bootstrap voters;
 *     issue 13), and keeps running one it is no longer a member of until
 *     the table says the group's configuration matched its members
 *     (reconciled_index == members_index: the group's leader has removed
 *     this member and that configuration committed), so a member leaving
 *     votes until it is out. After a restart it reopens such a group
 *     only when its directory is still there. Reconciling is idempotent and
 *     runs on the kick (never inside libraft's apply), at start after the
 *     root's state opened, and after a root snapshot install.
 *   - Every member, original or joining, bootstraps a group with the
 *     configuration the CreateGroup entry carries (GroupDesc.voters), so
 *     all of them hold the same entry at index 1; a joiner is not a voter
 *     there and waits for the group's leader to add it (group_members.c).
 *     A restart finds RAFT_CANTBOOTSTRAP and carries on.
 *   - A group's directory is removed for a tombstone (a DeleteGroup the
 *     root applied) and when a running group closes because the table says
 *     it was reconciled without this member: its committed configuration
 *     no longer counts this member, so no quorum needs what it holds. A
 *     directory the table does not name is left alone: after a crash the
 *     root's state is its last flush, behind the log, and the CreateGroup
 *     that made that directory may not be replayed yet. Removal runs on
 *     the libuv pool.
 *   - At most one leadership transfer per member is in flight, and a group
 *     moves at most once per SPREAD_GROUP_QUIET_MS; which one moves where
 *     is meta/spread_plan.c's decision (range groups spread by their own
 *     count, the root after them).
 *
 * Thread: the member's loop (directory removal: the libuv pool).
 * Not here: a group's Raft (group.c); ranges and what a group holds.
 */
#include "meta/node_internal.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/err.h"
#include "common/log.h"
#include "meta/spread_plan.h"

#define RETRY_MS 1000                  /* a group that failed to open: again after */

/* ------------------------------------------------------------ the table */

static size_t lower_bound(const struct meta_node *n, uint64_t id)
{
	size_t lo = 0, hi = n->n_groups;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (n->groups[mid]->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct meta_group *hosting_find(struct meta_node *n, uint64_t id)
{
	size_t i = lower_bound(n, id);
	return i < n->n_groups && n->groups[i]->id == id ? n->groups[i] : NULL;
}

int hosting_add(struct meta_node *n, struct meta_group *g)
{
	if (n->n_groups == n->cap_groups) {
		size_t cap = n->cap_groups ? 2 * n->cap_groups : 16;
		struct meta_group **v = realloc(n->groups, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		n->groups = v;
		n->cap_groups = cap;
	}
	size_t i = lower_bound(n, g->id);
	memmove(&n->groups[i + 1], &n->groups[i], (n->n_groups - i) * sizeof(*n->groups));
	n->groups[i] = g;
	n->n_groups++;
	return 0;
}

static void table_remove(struct meta_node *n, struct meta_group *g)
{
	size_t i = lower_bound(n, g->id);
	if (i < n->n_groups && n->groups[i] == g) {
		memmove(&n->groups[i], &n->groups[i + 1], (n->n_groups - i - 1) * sizeof(*n->groups));
		n->n_groups--;
	}
}

static bool closing_has(const struct meta_node *n, uint64_t id)
{
	for (const struct meta_group *g = n->closing_groups; g; g = g->close_next)
		if (g->id == id)
			return true;
	return false;
}

/* ------------------------------------------------------------ directories */

struct rm_job {
	uv_work_t w;
	struct meta_node *n;
	char path[GROUP_DIR_MAX];
	int rc;
};

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path) && errno != ENOENT ? -1 : 0;
}

static void rm_work(uv_work_t *w)
{
	struct rm_job *j = w->data;
	j->rc = nftw(j->path, rm_one, 16, FTW_DEPTH | FTW_PHYS) ? -errno : 0;
}

static void rm_after(uv_work_t *w, int status)
{
	struct rm_job *j = w->data;
	struct meta_node *n = j->n;
	n->rm_busy--;
	if (status || j->rc)
		LOG_WARN("deleted group: cannot remove its directory", "dir=%s err=%s", j->path,
			 iol_strerror(status ? -EIO : j->rc));
	else
		LOG_INFO("deleted group: directory removed", "dir=%s", j->path);
	free(j);
	if (n->closing)
		node_close_step(n);
}

/* Remove DIR/groups/<id> off the loop, if it exists. Not while closing:
 * the next start's reconcile does it. */
static void remove_dir(struct meta_node *n, uint64_t id)
{
	struct rm_job *j = calloc(1, sizeof(*j));
	if (!j)
		return;
	snprintf(j->path, sizeof(j->path), "%s/groups/%llu", n->dir, (unsigned long long)id);
	struct stat st;
	if (n->closing || stat(j->path, &st)) {
		free(j);
		return;
	}
	j->n = n;
	j->w.data = j;
	if (uv_queue_work(n->loop, &j->w, rm_work, rm_after)) {
		free(j);
		return;
	}
	n->rm_busy++;
}

void hosting_group_closed(struct meta_group *g)
{
	struct meta_node *n = g->n;
	for (struct meta_group **pp = &n->closing_groups; *pp; pp = &(*pp)->close_next)
		if (*pp == g) {
			*pp = g->close_next;
			break;
		}
	uint64_t id = g->id;
	bool rm = g->remove_dir;
	LOG_INFO("group closed", "group=%llu remove_dir=%d", (unsigned long long)id, rm);
	group_free(g);
	if (n->closing) {
		node_close_step(n);
		return;
	}
	if (rm)
		remove_dir(n, id);
	/* A reconcile that found it still closing set groups_retry_ms: the
	 * tick looks at it again then (no tight loop on a group that keeps
	 * failing to start). */
}

/* ------------------------------------------------------------ reconcile */

static bool is_member(const Iolake__Meta__GroupDesc *d, uint64_t id)
{
	Iolake__Meta__GroupVoter *const *v;
	size_t n;
	group_members_desired(d, &v, &n);
	for (size_t i = 0; i < n; i++)
		if (v[i]->id == id)
			return true;
	return false;
}

/* Not a member any more, and the group's configuration was seen to match
 * its members: this member is out of it. */
static bool left(const Iolake__Meta__GroupDesc *d, uint64_t self)
{
	return !is_member(d, self) && d->reconciled_index == d->members_index;
}

static bool dir_exists(struct meta_node *n, uint64_t id)
{
	char path[GROUP_DIR_MAX];
	struct stat st;
	snprintf(path, sizeof(path), "%s/groups/%llu", n->dir, (unsigned long long)id);
	return stat(path, &st) == 0;
}

static const Iolake__Meta__GroupDesc *desc_find(Iolake__Meta__GroupDesc **v, size_t n,
						  uint64_t id)
{
	size_t lo = 0, hi = n;   /* the table lists by id */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (v[mid]->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo]->id == id ? v[lo] : NULL;
}

static int open_group(struct meta_node *n, const Iolake__Meta__GroupDesc *d)
{
	struct raft_configuration conf;
	raft_configuration_init(&conf);
	int rc = 0;
	for (size_t i = 0; i < d->n_voters && !rc; i++) {
		char ra[META_NODE_ADDR_MAX];
		rc = meta_node_raft_addr(d->voters[i]->address, ra);
		if (!rc)
			rc = raft_configuration_add(&conf, d->voters[i]->id, ra, RAFT_VOTER) ? -ENOMEM
											     : 0;
	}
	struct meta_group *g = NULL;
	if (!rc)
		rc = group_open(n, d->id, &conf, &g);
	raft_configuration_close(&conf);
	if (!rc) {
		rc = hosting_add(n, g);
		if (rc)
			group_close(g, false);
	}
	if (!rc)
		LOG_INFO("group started", "group=%llu voters=%zu applied=%llu",
			 (unsigned long long)d->id, d->n_voters,
			 (unsigned long long)meta_state_applied_index(g->state));
	return rc;
}

void hosting_reconcile(struct meta_node *n)
{
	/* The root's state being installed is no table to act on; its end
	 * (node_root_restored) reconciles again. */
	if (n->closing || !n->root || n->root->inst)
		return;
	Iolake__Meta__GroupDesc **v = NULL;
	size_t cnt = 0;
	int rc = meta_state_list_groups(n->root->state, &v, &cnt);
	if (rc) {
		LOG_WARN("cannot read the table of groups", "err=%s", iol_strerror(rc));
		n->groups_retry_ms = loop_now_ms() + RETRY_MS;
		return;
	}
	uint64_t self = n->o.id;
	bool retry = false;
	/* Stop what the table no longer gives this member. */
	for (size_t i = n->n_groups; i-- > 0;) {
		struct meta_group *g = n->groups[i];
		if (g->id == 0)
			continue;
		const Iolake__Meta__GroupDesc *d = desc_find(v, cnt, g->id);
		if (d && !d->deleted && !left(d, self))
			continue;
		LOG_INFO("group stopping", "group=%llu deleted=%d removed=%d",
			 (unsigned long long)g->id, d && d->deleted, d && !d->deleted);
		table_remove(n, g);
		/* A group this member left: its data goes too (see the top). */
		group_close(g, d != NULL);
	}
	/* Start what it gives and is not running; clean up tombstones. */
	for (size_t i = 0; i < cnt; i++) {
		const Iolake__Meta__GroupDesc *d = v[i];
		if (d->id == 0 || hosting_find(n, d->id))
			continue;
		if (closing_has(n, d->id)) {
			retry = true;   /* its close finishes first */
			continue;
		}
		if (d->deleted) {
			remove_dir(n, d->id);
			continue;
		}
		if (!is_member(d, self) && (left(d, self) || !dir_exists(n, d->id)))
			continue;
		rc = open_group(n, d);
		if (rc) {
			LOG_ERROR("group failed to start: retrying", "group=%llu err=%s",
				  (unsigned long long)d->id, iol_strerror(rc));
			retry = true;
		}
	}
	for (size_t i = 0; i < cnt; i++)
		meta_state_free_msg(v[i]);
	free(v);
	if (retry)
		n->groups_retry_ms = loop_now_ms() + RETRY_MS;
}

/* ------------------------------------------------------------ leader spread
 * Each member looks after itself: from its own view of who leads each
 * group it hosts, it hands one group it leads over (raft_transfer) when
 * meta/spread_plan.h's rules say so: range groups spread by their own
 * count, then the root. */

static void on_transfer(struct raft_transfer *req)
{
	struct meta_group *g = req->data;
	g->xfer_busy = false;
	raft_id lid = 0;
	const char *addr = NULL;
	raft_leader(&g->raft, &lid, &addr);
	LOG_INFO("leadership transfer done", "group=%llu to=%llu leader=%llu",
		 (unsigned long long)g->id, (unsigned long long)req->id, (unsigned long long)lid);
}

#define SPREAD_MEMBERS (META_NODE_MAX_PEERS * 2)

/* g's voters (not self, not a member leaving) this leader heard from
 * within the election timeout, into out[0..max). */
static size_t reachable_voters(struct meta_group *g, uint64_t *out, size_t max)
{
	const struct raft_configuration *c = &g->raft.configuration;
	size_t k = 0;
	if (!g->raft.leader_state.progress)
		return 0;
	for (unsigned i = 0; i < c->n && k < max; i++) {
		const struct raft_server *sv = &c->servers[i];
		if (sv->role == RAFT_VOTER && sv->id != g->n->o.id &&
		    sv->id != g->n->members_leaving && g->raft.leader_state.progress[i].recent_recv)
			out[k++] = sv->id;
	}
	return k;
}

static void start_transfer(struct meta_node *n, struct meta_group *g, uint64_t to,
			   uint64_t now_ms)
{
	g->xfer.data = g;
	if (g == n->root)
		node_direct_withdraw(n);   /* node_direct.c: one voter only */
	int err = raft_transfer(&g->raft, &g->xfer, to, on_transfer);
	g->xfer_ms = now_ms;
	if (err) {
		LOG_WARN("leadership transfer refused", "group=%llu to=%llu err=%s",
			 (unsigned long long)g->id, (unsigned long long)to, raft_strerror(err));
		return;
	}
	g->xfer_busy = true;
	n->spread_transfers++;
	LOG_INFO("leader spread: transferring", "group=%llu to=%llu", (unsigned long long)g->id,
		 (unsigned long long)to);
}

void hosting_spread(struct meta_node *n, uint64_t now_ms)
{
	/* Not while a member drains out of the groups (group_members.c): a
	 * leadership handed to it would be taken back at once. */
	if (n->closing || !n->root || n->n_groups < 2 || n->members_leaving)
		return;
	const struct raft_configuration *rc = &n->root->raft.configuration;
	uint64_t ids[SPREAD_MEMBERS];
	size_t m = 0;
	for (unsigned i = 0; i < rc->n && m < SPREAD_MEMBERS; i++)
		if (rc->servers[i].role == RAFT_VOTER)
			ids[m++] = rc->servers[i].id;
	struct spread_plan_group *v = calloc(n->n_groups, sizeof(*v));
	uint64_t *reach = calloc(n->n_groups * SPREAD_MEMBERS, sizeof(*reach));
	if (!v || !reach)
		goto out;
	for (size_t i = 0; i < n->n_groups; i++) {
		struct meta_group *g = n->groups[i];
		if (g->xfer_busy)
			goto out;   /* one at a time */
		v[i].id = g->id;
		v[i].leader = g->leader_id;
		v[i].movable = group_is_leader(g) &&
			       !(g->xfer_ms && now_ms - g->xfer_ms < SPREAD_GROUP_QUIET_MS);
		v[i].reachable = &reach[i * SPREAD_MEMBERS];
		if (v[i].movable)
			v[i].n_reachable = reachable_voters(g, &reach[i * SPREAD_MEMBERS],
							    SPREAD_MEMBERS);
	}
	size_t gi;
	uint64_t to;
	if (spread_plan_next(ids, m, n->o.id, v, n->n_groups, &gi, &to))
		start_transfer(n, n->groups[gi], to, now_ms);
out:
	free(v);
	free(reach);
}
