/*
 * admin_api_cluster.c — GET /api/v1/cluster: the cluster's health in one
 * document. Asks at once: every meta member its own Status (role, term,
 * Raft indexes, the configuration), the leader its PgStats (PG states and
 * recovery), and the map (OSDs up and in). Health:
 *   "ok"           a leader, every OSD up and in, every PG active+clean
 *   "degraded"     a leader, but an OSD down or out or a PG not clean
 *   "unavailable"  no leader among the members that answered
 * No member answering at all is a 503.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/admin_api_int.h"

struct cluster_state {
	size_t n, left;
	Iolake__Meta__StatusResponse **st;   /* per member, NULL: no answer */
	Iolake__Meta__PgStatsResponse *ps;
	Iolake__Meta__GetMapResponse *map;
};

static void state_free(void *p)
{
	struct cluster_state *s = p;
	for (size_t i = 0; s->st && i < s->n; i++)
		if (s->st[i])
			admin_msg_free(&s->st[i]->base);
	free(s->st);
	admin_msg_free(s->ps ? &s->ps->base : NULL);
	admin_msg_free(s->map ? &s->map->base : NULL);
	free(s);
}

static void reply(struct admin_call *c, struct cluster_state *s)
{
	const Iolake__Meta__StatusResponse *leader = NULL;
	size_t answered = 0;
	for (size_t i = 0; i < s->n; i++) {
		if (!s->st[i])
			continue;
		answered++;
		if (!strcmp(s->st[i]->role, "leader"))
			leader = s->st[i];
	}
	if (!answered) {
		admin_reply_error(c, 503, "ServiceUnavailable", "no meta member answered");
		return;
	}
	const Iolake__Meta__ClusterMap *m =
		s->map && s->map->status == IOLAKE__META__STATUS__STATUS_OK ? s->map->map : NULL;
	const Iolake__Meta__PgStatsResponse *ps =
		s->ps && s->ps->status == IOLAKE__META__STATUS__STATUS_OK ? s->ps : NULL;
	size_t up = 0, in = 0;
	for (size_t i = 0; m && i < m->n_osds; i++) {
		up += m->osds[i]->up;
		in += m->osds[i]->in;
	}
	uint32_t pgs = 0, clean = 0;
	for (size_t i = 0; ps && i < ps->n_counts; i++) {
		pgs += ps->counts[i]->pgs;
		if (!strcmp(ps->counts[i]->state, "active+clean"))
			clean += ps->counts[i]->pgs;
	}
	const char *health = "ok";
	if (!leader)
		health = "unavailable";
	else if (!m || !ps || up < m->n_osds || in < m->n_osds || clean < pgs)
		health = "degraded";

	struct jsonw w;
	jsonw_init(&w, 0);
	jsonw_obj_begin(&w);
	jsonw_kstr(&w, "health", health);
	jsonw_ku64(&w, "epoch", m ? m->epoch : leader ? leader->epoch : 0);
	jsonw_key(&w, "leader");
	if (leader) {
		jsonw_obj_begin(&w);
		jsonw_ku64(&w, "id", leader->id);
		jsonw_kstr(&w, "address", leader->address);
		jsonw_ku64(&w, "term", leader->term);
		jsonw_ku64(&w, "commit_index", leader->commit_index);
		jsonw_obj_end(&w);
	} else {
		jsonw_null(&w);
	}
	jsonw_key(&w, "members");
	jsonw_arr_begin(&w);
	for (size_t i = 0; i < s->n; i++) {
		const Iolake__Meta__StatusResponse *st = s->st[i];
		jsonw_obj_begin(&w);
		jsonw_kstr(&w, "asked", meta_client_member(admin_call_meta(c), i));
		if (!st) {
			jsonw_kstr(&w, "role", "unreachable");
			jsonw_kbool(&w, "leader", false);
			jsonw_obj_end(&w);
			continue;
		}
		jsonw_ku64(&w, "id", st->id);
		jsonw_kstr(&w, "address", st->address);
		jsonw_kstr(&w, "role", st->role);
		jsonw_kbool(&w, "leader", !strcmp(st->role, "leader"));
		jsonw_ku64(&w, "term", st->term);
		jsonw_ku64(&w, "commit_index", st->commit_index);
		jsonw_ku64(&w, "applied_index", st->applied_index);
		jsonw_ku64(&w, "last_index", st->last_index);
		jsonw_ku64(&w, "leader_id", st->leader_id);
		jsonw_ku64(&w, "epoch", st->epoch);
		jsonw_ku64(&w, "gc_queue", st->gc_queue);
		jsonw_ku64(&w, "groups", st->n_groups);
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	/* The Raft configuration, as the leader (else any member) sees it. */
	const Iolake__Meta__StatusResponse *conf = leader;
	for (size_t i = 0; !conf && i < s->n; i++)
		conf = s->st[i];
	jsonw_key(&w, "configuration");
	jsonw_arr_begin(&w);
	for (size_t j = 0; conf && j < conf->n_members; j++) {
		jsonw_obj_begin(&w);
		jsonw_ku64(&w, "id", conf->members[j]->id);
		jsonw_kstr(&w, "address", conf->members[j]->address);
		jsonw_kbool(&w, "voter", conf->members[j]->voter);
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_key(&w, "osds");
	if (m) {
		jsonw_obj_begin(&w);
		jsonw_ku64(&w, "total", m->n_osds);
		jsonw_ku64(&w, "up", up);
		jsonw_ku64(&w, "in", in);
		jsonw_obj_end(&w);
	} else {
		jsonw_null(&w);
	}
	jsonw_key(&w, "pgs");
	if (ps) {
		jsonw_obj_begin(&w);
		jsonw_ku64(&w, "total", pgs);
		jsonw_key(&w, "states");
		jsonw_obj_begin(&w);
		for (size_t i = 0; i < ps->n_counts; i++)
			jsonw_ku64(&w, ps->counts[i]->state, ps->counts[i]->pgs);
		jsonw_obj_end(&w);
		jsonw_key(&w, "recovery");
		jsonw_obj_begin(&w);
		jsonw_ku64(&w, "stripes_missing", ps->stripes_missing);
		jsonw_ku64(&w, "bytes_missing", ps->bytes_missing);
		jsonw_ku64(&w, "rate_bytes_per_s", ps->rate_bytes_per_s);
		jsonw_ku64(&w, "eta_s", ps->eta_s);
		jsonw_ku64(&w, "unfound", ps->unfound);
		jsonw_ku64(&w, "unfound_live", ps->unfound_live);
		jsonw_obj_end(&w);
		jsonw_obj_end(&w);
	} else {
		jsonw_null(&w);
	}
	if (m) {
		jsonw_key(&w, "ec");
		jsonw_obj_begin(&w);
		jsonw_ku64(&w, "k", m->k);
		jsonw_ku64(&w, "m", m->m);
		jsonw_obj_end(&w);
	}
	jsonw_obj_end(&w);
	admin_reply_json(c, 200, &w);
}

static void one_done(struct admin_call *c)
{
	struct cluster_state *s = admin_call_state(c);
	if (--s->left == 0)
		reply(c, s);
}

static void on_status(struct admin_call *c, void *ud, int err, const ProtobufCMessage *resp)
{
	struct cluster_state *s = admin_call_state(c);
	size_t i = (size_t)(uintptr_t)ud;
	if (!err)
		s->st[i] = (Iolake__Meta__StatusResponse *)admin_msg_copy(resp);
	one_done(c);
}

static void on_pgstats(struct admin_call *c, void *ud, int err, const ProtobufCMessage *resp)
{
	(void)ud;
	struct cluster_state *s = admin_call_state(c);
	if (!err)
		s->ps = (Iolake__Meta__PgStatsResponse *)admin_msg_copy(resp);
	one_done(c);
}

static void on_map(struct admin_call *c, void *ud, int err, const ProtobufCMessage *resp)
{
	(void)ud;
	struct cluster_state *s = admin_call_state(c);
	if (!err)
		s->map = (Iolake__Meta__GetMapResponse *)admin_msg_copy(resp);
	one_done(c);
}

void admin_h_cluster(struct admin_call *c)
{
	struct cluster_state *s = calloc(1, sizeof(*s));
	size_t n = meta_client_member_count(admin_call_meta(c));
	if (s) {
		s->n = n;
		s->st = calloc(n ? n : 1, sizeof(*s->st));
	}
	if (!s || !s->st) {
		if (s)
			state_free(s);
		admin_reply_error(c, 500, "InternalError", "out of memory");
		return;
	}
	admin_call_set_state(c, s, state_free);
	/* One count for this function, so no answer completes the reply
	 * before every call is out. */
	s->left = 1;
	Iolake__Meta__StatusRequest sreq = IOLAKE__META__STATUS_REQUEST__INIT;
	for (size_t i = 0; i < n; i++) {
		s->left++;
		if (admin_meta_call_member(c, i, META_M_STATUS, &sreq.base, on_status,
					   (void *)(uintptr_t)i))
			s->left--;
	}
	Iolake__Meta__PgStatsRequest preq = IOLAKE__META__PG_STATS_REQUEST__INIT;
	s->left++;
	if (admin_meta_call(c, META_M_PG_STATS, &preq.base, on_pgstats, NULL))
		s->left--;
	Iolake__Meta__GetMapRequest mreq = IOLAKE__META__GET_MAP_REQUEST__INIT;
	s->left++;
	if (admin_meta_call(c, META_M_GET_MAP, &mreq.base, on_map, NULL))
		s->left--;
	one_done(c);
}
