/*
 * state_map.c — the cluster map and the table of Raft groups in the meta
 * state machine: InitMap, RegisterOsd, RemoveOsd, SetOsdState,
 * SetExpectOsds (the PG table recomputed through common/place.c), the
 * credentials epoch, and CreateGroup / DeleteGroup (root group).
 *
 * Not here: PG states (pgstate.c), heartbeats (the leader turns missed
 * beats into SetOsdState ops), key ranges (state_range.c).
 */
#include "meta/state.h"
#include "meta/secret.h"
#include "meta/state_internal.h"
#include "meta/state_ver.h"

#include <rocksdb/c.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/hash.h"
#include "common/place.h"

/* ---- cluster map */

int get_map(struct tx *t, Iolake__Meta__ClusterMap **m)
{
	struct key k;
	k_init(&k, 'M');
	return tx_get_msg(t, &k, &iolake__meta__cluster_map__descriptor, (void **)m);
}

/* A user's or key's credentials changed (a key added or removed, a user
 * removed, grants or the admin flag set): bump the map's epoch and
 * creds_epoch, so gateways (which watch the map) drop what they cached,
 * secrets and "no such key" answers alike, at once rather than when
 * their TTL runs out. Placement is untouched. Before
 * InitMap there is no map and no gateway can have served anything. */
int creds_changed(struct tx *t, struct meta_op_result *r)
{
	Iolake__Meta__ClusterMap *m = NULL;
	int rc = get_map(t, &m);
	if (rc == IOL_ENOT_FOUND)
		return 0;
	if (rc)
		return rc;
	m->epoch++;
	m->creds_epoch++;
	struct key k;
	k_init(&k, 'M');
	rc = tx_put_msg(t, &k, &m->base);
	r->epoch = m->epoch;
	meta_state_free_msg(m);
	return rc;
}

/*
 * Store map m with osds replaced by osds[0..n) (sorted by id), the PG
 * table recomputed from them (survivors keep slots: see place.h) and the
 * epoch bumped. The previous table comes from m itself.
 *
 * While m->expect_osds is set (a new cluster told how many OSDs it
 * starts with) and fewer are eligible, the table stays empty; once they
 * are, it is computed without a previous table (rank order) and the wait
 * ends. Safe: with every slot empty no PUT had a write quorum, so no
 * shard of any object can sit under the order being replaced.
 */
static int save_map(struct tx *t, Iolake__Meta__ClusterMap *m, Iolake__Meta__OsdInfo **osds,
		    size_t n, uint64_t time_ms, struct meta_op_result *r)
{
	int rc;
	uint32_t w = m->k + m->m;
	struct meta_pg_table prev = { 0 }, next = { 0 };
	struct place_osd *po = calloc(n ? n : 1, sizeof(*po));
	Iolake__Meta__PgEntry *pe = calloc(m->pg_count, sizeof(*pe));
	Iolake__Meta__PgEntry **pp = calloc(m->pg_count, sizeof(*pp));
	if (!po || !pe || !pp) {
		rc = -ENOMEM;
		goto out;
	}
	rc = place_table_init(&next, m->pg_count, w);
	if (rc)
		goto out;
	if (m->n_pgs == m->pg_count && place_table_init(&prev, m->pg_count, w) == 0) {
		for (uint32_t pg = 0; pg < m->pg_count; pg++)
			for (uint32_t s = 0; s < w && s < m->pgs[pg]->n_osds; s++)
				prev.osds[(size_t)pg * w + s] = m->pgs[pg]->osds[s];
	}
	for (size_t i = 0; i < n; i++)
		po[i] = (struct place_osd){ .id = osds[i]->id, .host = osds[i]->host,
						 .weight = osds[i]->weight, .up = osds[i]->up,
						 .in = osds[i]->in };
	struct place_params p = { .pg_count = m->pg_count, .width = w,
				       .down_keeps_slot = m->down_keeps_slot };
	uint32_t expect = m->expect_osds;
	size_t eligible = 0;
	for (size_t i = 0; expect && i < n; i++)
		eligible += place_osd_eligible(&po[i], &p);
	if (!expect) {
		rc = place_compute(po, n, &p, prev.osds ? &prev : NULL, &next);
	} else if (eligible >= expect) {
		rc = place_compute(po, n, &p, NULL, &next);
		expect = 0;
	}
	if (rc)
		goto out;
	for (uint32_t pg = 0; pg < m->pg_count; pg++) {
		iolake__meta__pg_entry__init(&pe[pg]);
		pe[pg].pg_id = pg;
		pe[pg].n_osds = w;
		pe[pg].osds = &next.osds[(size_t)pg * w];
		pp[pg] = &pe[pg];
	}
	Iolake__Meta__ClusterMap nm = *m;
	nm.epoch = m->epoch + 1;
	nm.expect_osds = expect;
	nm.modified_ms = time_ms;
	nm.n_osds = n;
	nm.osds = osds;
	nm.n_pgs = m->pg_count;
	nm.pgs = pp;
	struct key k;
	k_init(&k, 'M');
	rc = tx_put_msg(t, &k, &nm.base);
	r->epoch = nm.epoch;
out:
	if (rc == -ENOMEM)
		t->io_err = -ENOMEM;
	place_table_free(&prev);
	place_table_free(&next);
	free(pp);
	free(pe);
	free(po);
	return rc;
}

int op_init_map(struct tx *t, const Iolake__Meta__InitMap *op, struct meta_op_result *r)
{
	Iolake__Meta__ClusterMap *m = NULL;
	uint32_t pgs = op->pg_count ? op->pg_count : PLACE_DEFAULT_PGS;
	if (pgs > PLACE_MAX_PGS || (pgs & (pgs - 1)) || op->k < 1 || op->m > 16 ||
	    op->k + op->m > PLACE_MAX_WIDTH)
		return -EINVAL;
	int rc = get_map(t, &m);
	if (rc == 0) {
		meta_state_free_msg(m);
		return IOL_EEXISTS;
	}
	if (rc != IOL_ENOT_FOUND)
		return rc;
	Iolake__Meta__ClusterMap nm = IOLAKE__META__CLUSTER_MAP__INIT;
	nm.pg_count = pgs;
	nm.k = op->k;
	nm.m = op->m;
	nm.down_keeps_slot = op->down_keeps_slot;
	if (op->expect_osds > PLACE_MAX_OSDS)
		return -EINVAL;
	nm.expect_osds = op->expect_osds;
	return save_map(t, &nm, NULL, 0, op->time_ms, r);
}

int op_register_osd(struct tx *t, const Iolake__Meta__RegisterOsd *op,
			   struct meta_op_result *r)
{
	Iolake__Meta__ClusterMap *m = NULL;
	const Iolake__Meta__OsdInfo *in = op->osd;
	if (!in || in->id == PLACE_NONE || !valid_name(in->host) || !in->addr)
		return -EINVAL;
	int rc = get_map(t, &m);
	if (rc)
		return rc;
	if (m->n_osds >= PLACE_MAX_OSDS) {
		meta_state_free_msg(m);
		return IOL_ETOO_LARGE;
	}
	Iolake__Meta__OsdInfo **osds = calloc(m->n_osds + 1, sizeof(*osds));
	if (!osds) {
		meta_state_free_msg(m);
		t->io_err = -ENOMEM;
		return -ENOMEM;
	}
	Iolake__Meta__OsdInfo fresh = *in;
	size_t n = 0;
	bool placed = false;
	for (size_t i = 0; i < m->n_osds; i++) {
		Iolake__Meta__OsdInfo *o = m->osds[i];
		if (o->id == in->id) {
			/* Re-registration: address, host, weight, capacity change;
			 * up/in and history stay. */
			fresh.up = o->up;
			fresh.in = o->in;
			fresh.admin_out = o->admin_out;
			fresh.registered_ms = o->registered_ms;
			fresh.last_heartbeat_ms = o->last_heartbeat_ms;
			osds[n++] = &fresh;
			placed = true;
			continue;
		}
		if (!placed && o->id > in->id) {
			placed = true;
			fresh.up = fresh.in = true;
			fresh.admin_out = false;
			fresh.registered_ms = fresh.last_heartbeat_ms = op->time_ms;
			osds[n++] = &fresh;
		}
		osds[n++] = o;
	}
	if (!placed) {
		fresh.up = fresh.in = true;
		fresh.admin_out = false;
		fresh.registered_ms = fresh.last_heartbeat_ms = op->time_ms;
		osds[n++] = &fresh;
	}
	rc = save_map(t, m, osds, n, op->time_ms, r);
	free(osds);
	meta_state_free_msg(m);
	return rc;
}

/* The first table's wait, changed while it lasts (SetExpectOsds in
 * meta.proto). save_map places the table when enough OSDs are eligible. */
int op_set_expect_osds(struct tx *t, const Iolake__Meta__SetExpectOsds *op,
		       struct meta_op_result *r)
{
	Iolake__Meta__ClusterMap *m = NULL;
	if (!op || op->count > PLACE_MAX_OSDS)
		return -EINVAL;
	int rc = get_map(t, &m);
	if (rc)
		return rc;
	r->epoch = m->epoch;
	if (!m->expect_osds) {
		rc = IOL_ECONFLICT;   /* placed already: the table follows the OSDs */
	} else {
		m->expect_osds = op->count ? op->count : 1;
		rc = save_map(t, m, m->osds, m->n_osds, op->time_ms, r);
	}
	meta_state_free_msg(m);
	return rc;
}

/* Drop an OSD that is down and out from the map; the PG table is
 * recomputed without it (it held no slot once out). */
int op_remove_osd(struct tx *t, const Iolake__Meta__RemoveOsd *op,
			 struct meta_op_result *r)
{
	Iolake__Meta__ClusterMap *m = NULL;
	if (!op)
		return -EINVAL;
	int rc = get_map(t, &m);
	if (rc)
		return rc;
	size_t at = m->n_osds;
	for (size_t i = 0; i < m->n_osds; i++)
		if (m->osds[i]->id == op->id)
			at = i;
	r->epoch = m->epoch;
	if (at == m->n_osds) {
		rc = IOL_ENOT_FOUND;
	} else if (m->osds[at]->up || m->osds[at]->in) {
		rc = IOL_ECONFLICT;
	} else {
		Iolake__Meta__OsdInfo *gone = m->osds[at];
		memmove(&m->osds[at], &m->osds[at + 1], (m->n_osds - at - 1) * sizeof(*m->osds));
		m->n_osds--;
		rc = save_map(t, m, m->osds, m->n_osds, op->time_ms, r);
		/* back in the array so the free below releases it */
		m->osds[m->n_osds++] = gone;
	}
	meta_state_free_msg(m);
	return rc;
}

int op_set_osd_state(struct tx *t, const Iolake__Meta__SetOsdState *op,
			    struct meta_op_result *r)
{
	Iolake__Meta__ClusterMap *m = NULL;
	int rc = get_map(t, &m);
	if (rc)
		return rc;
	Iolake__Meta__OsdInfo *o = NULL;
	for (size_t i = 0; i < m->n_osds; i++)
		if (m->osds[i]->id == op->id)
			o = m->osds[i];
	if (!o) {
		rc = IOL_ENOT_FOUND;
		goto out;
	}
	bool changed = false;
	if (op->set_admin_out && o->admin_out != op->admin_out) {
		o->admin_out = op->admin_out;
		changed = true;
	}
	if (op->set_up && o->up != op->up) {
		o->up = op->up;
		changed = true;
	}
	/* An operator's out is sticky: while admin_out is set nothing but
	 * the op clearing it (osd in) brings the OSD in, so a heartbeat's
	 * up+in proposal, even one queued before the out, leaves it out. */
	bool want_in = op->set_in ? op->in : o->in;
	if (o->admin_out)
		want_in = false;
	if (o->in != want_in) {
		o->in = want_in;
		changed = true;
	}
	if (op->set_up && op->up)
		o->last_heartbeat_ms = op->time_ms;
	r->epoch = m->epoch;
	if (changed)   /* no-op transitions do not bump the epoch */
		rc = save_map(t, m, m->osds, m->n_osds, op->time_ms, r);
out:
	meta_state_free_msg(m);
	return rc;
}

/* ---- the table of Raft groups (root group) */

void state_key_group(struct key *k, uint64_t id)
{
	k_init(k, 'g');
	k_u64(k, id);
}

/* "host:port" with a non-empty host and a port 1..65535, short enough for
 * a member address. */
bool state_valid_member_addr(const char *a)
{
	size_t n = a ? strlen(a) : 0;
	const char *colon = n ? strrchr(a, ':') : NULL;
	if (!colon || colon == a || n >= 64)
		return false;
	char *end;
	long port = strtol(colon + 1, &end, 10);
	return *end == 0 && end != colon + 1 && port >= 1 && port <= 65535;
}

/* Live (not deleted) groups in the table, up to META_GROUPS_MAX + 1. */
static int count_live_groups(struct tx *t, size_t *out)
{
	struct key lo;
	k_init(&lo, 'g');
	size_t n = 0;
	int rc = 0;
	rocksdb_iterator_t *it = tx_iter(t, &lo);
	for (; iter_has_prefix(it, &lo) && n <= META_GROUPS_MAX; rocksdb_iter_next(it)) {
		size_t vn;
		const char *vb = rocksdb_iter_value(it, &vn);
		Iolake__Meta__GroupDesc *g = (Iolake__Meta__GroupDesc *)protobuf_c_message_unpack(
			&iolake__meta__group_desc__descriptor, NULL, vn, (const uint8_t *)vb);
		if (!g) {
			t->io_err = -EIO;   /* our own encoding: on-disk corruption */
			rc = IOL_ECORRUPT;
			break;
		}
		if (!g->deleted)
			n++;
		meta_state_free_msg(g);
	}
	rocksdb_iter_destroy(it);
	*out = n;
	return rc;
}

int op_create_group(struct tx *t, const Iolake__Meta__CreateGroup *op,
			   struct meta_op_result *r)
{
	const Iolake__Meta__GroupDesc *d = op->group;
	if (!d || d->id == 0 || d->n_voters == 0 || d->n_voters > META_GROUP_VOTERS_MAX)
		return -EINVAL;
	for (size_t i = 0; i < d->n_voters; i++) {
		if (!d->voters[i] || d->voters[i]->id == 0 || !state_valid_member_addr(d->voters[i]->address))
			return -EINVAL;
		for (size_t j = 0; j < i; j++)
			if (d->voters[j]->id == d->voters[i]->id)
				return -EINVAL;
	}
	struct key k;
	state_key_group(&k, d->id);
	if (tx_exists(t, &k))
		return IOL_EEXISTS;   /* live or a tombstone: ids are never reused */
	if (t->io_err)
		return t->io_err;
	size_t live;
	int rc = count_live_groups(t, &live);
	if (rc)
		return rc;
	if (live >= META_GROUPS_MAX)
		return -EINVAL;
	Iolake__Meta__GroupDesc g = *d;
	g.deleted = false;
	g.created_index = t->index;
	g.deleted_index = 0;
	rc = tx_put_msg(t, &k, &g.base);
	if (rc == 0)
		r->groups = true;
	return rc;
}

int op_delete_group(struct tx *t, const Iolake__Meta__DeleteGroup *op,
			   struct meta_op_result *r)
{
	if (op->id == 0)
		return -EINVAL;
	struct key k;
	state_key_group(&k, op->id);
	Iolake__Meta__GroupDesc *g = NULL;
	int rc = tx_get_msg(t, &k, &iolake__meta__group_desc__descriptor, (void **)&g);
	if (rc)
		return rc;
	if (g->deleted) {
		meta_state_free_msg(g);
		return IOL_ENOT_FOUND;
	}
	g->deleted = true;
	g->deleted_index = t->index;
	rc = tx_put_msg(t, &k, &g->base);
	meta_state_free_msg(g);
	if (rc == 0)
		r->groups = true;
	return rc;
}
