/*
 * state_members.c — the root's record of which members each range group
 * must have (issue 13): SetGroupMembers and GroupReconciled on the 'g'
 * rows (GroupDesc.members, members_index, reconciled_index).
 *
 * Invariants:
 *   - GroupDesc.voters (the bootstrap configuration) is never changed
 *     here; a member joining a group bootstraps the same one and is added
 *     by the group's leader (meta/group_members.c).
 *   - members_index moves only when the set of members changes, so a
 *     SetGroupMembers repeated with the same set leaves a reconciled group
 *     reconciled; reconciled_index only ever takes the row's current
 *     members_index.
 *
 * Thread: apply (the member's loop). Not here: the Raft changes themselves
 * (group_members.c), which groups a member runs (hosting.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "meta/state_internal.h"

static bool has_id(Iolake__Meta__GroupVoter *const *v, size_t n, uint64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (v[i]->id == id)
			return true;
	return false;
}

/* The members a row must have now: members, or its bootstrap voters. */
static void desired(const Iolake__Meta__GroupDesc *d, Iolake__Meta__GroupVoter *const **v,
		    size_t *n)
{
	*v = d->n_members ? d->members : d->voters;
	*n = d->n_members ? d->n_members : d->n_voters;
}

static bool same_set(const Iolake__Meta__GroupDesc *d, Iolake__Meta__GroupVoter *const *m,
		     size_t nm)
{
	Iolake__Meta__GroupVoter *const *v;
	size_t nv;
	desired(d, &v, &nv);
	if (nv != nm)
		return false;
	for (size_t i = 0; i < nm; i++)
		if (!has_id(v, nv, m[i]->id))
			return false;
	return true;
}

static int set_one(struct tx *t, const struct key *k, Iolake__Meta__GroupDesc *d,
		   const Iolake__Meta__SetGroupMembers *op, struct meta_op_result *r)
{
	if (d->deleted || same_set(d, op->members, op->n_members))
		return 0;
	Iolake__Meta__GroupDesc g = *d;
	g.members = op->members;
	g.n_members = op->n_members;
	g.members_index = t->index;
	int rc = tx_put_msg(t, k, &g.base);
	if (rc == 0)
		r->groups = true;   /* members start or stop the group (hosting.c) */
	return rc;
}

int op_set_group_members(struct tx *t, const Iolake__Meta__SetGroupMembers *op,
			 struct meta_op_result *r)
{
	if (op->n_members == 0 || op->n_members > META_GROUP_VOTERS_MAX)
		return -EINVAL;
	for (size_t i = 0; i < op->n_members; i++) {
		const Iolake__Meta__GroupVoter *m = op->members[i];
		if (!m || m->id == 0 || !state_valid_member_addr(m->address) || has_id(op->members, i, m->id))
			return -EINVAL;
	}
	struct key k;
	if (op->group) {
		state_key_group(&k, op->group);
		Iolake__Meta__GroupDesc *d = NULL;
		int rc = tx_get_msg(t, &k, &iolake__meta__group_desc__descriptor, (void **)&d);
		if (rc)
			return rc;
		rc = d->deleted ? IOL_ENOT_FOUND : set_one(t, &k, d, op, r);
		meta_state_free_msg(d);
		return rc;
	}
	/* Every live group: the rows are read first (a write inside the scan
	 * would show through the batch iterator). At most META_GROUPS_MAX
	 * live ones plus tombstones. */
	struct key lo;
	k_init(&lo, 'g');
	rocksdb_iterator_t *it = tx_iter(t, &lo);
	Iolake__Meta__GroupDesc **v = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	for (; iter_has_prefix(it, &lo); rocksdb_iter_next(it)) {
		size_t vn;
		const char *vb = rocksdb_iter_value(it, &vn);
		Iolake__Meta__GroupDesc *d = (Iolake__Meta__GroupDesc *)protobuf_c_message_unpack(
			&iolake__meta__group_desc__descriptor, NULL, vn, (const uint8_t *)vb);
		if (!d) {
			t->io_err = -EIO;   /* our own encoding: on-disk corruption */
			rc = IOL_ECORRUPT;
			break;
		}
		if (d->deleted) {
			meta_state_free_msg(d);
			continue;
		}
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 16;
			Iolake__Meta__GroupDesc **nv = realloc(v, nc * sizeof(*nv));
			if (!nv) {
				meta_state_free_msg(d);
				rc = -ENOMEM;
				break;
			}
			v = nv;
			cap = nc;
		}
		v[n++] = d;
	}
	rocksdb_iter_destroy(it);
	for (size_t i = 0; i < n; i++) {
		if (!rc) {
			state_key_group(&k, v[i]->id);
			rc = set_one(t, &k, v[i], op, r);
		}
		meta_state_free_msg(v[i]);
	}
	free(v);
	return rc;
}

int op_group_reconciled(struct tx *t, const Iolake__Meta__GroupReconciled *op,
			struct meta_op_result *r)
{
	struct key k;
	state_key_group(&k, op->group);
	Iolake__Meta__GroupDesc *d = NULL;
	int rc = tx_get_msg(t, &k, &iolake__meta__group_desc__descriptor, (void **)&d);
	if (rc)
		return rc;
	if (!d->deleted && d->members_index == op->members_index &&
	    d->reconciled_index != op->members_index) {
		d->reconciled_index = op->members_index;
		rc = tx_put_msg(t, &k, &d->base);
		if (rc == 0)
			r->groups = true;   /* a removed member may now drop its copy */
	}
	meta_state_free_msg(d);
	return rc;
}
