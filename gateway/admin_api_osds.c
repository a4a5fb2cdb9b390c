/*
 * admin_api_osds.c — the OSD and PG resources:
 *   GET  /api/v1/osds             the map's OSDs (host, up/down, in/out,
 *                                 held out by an operator) with each OSD's
 *                                 space from its own Status (asked at once,
 *                                 ADMIN_OSD_TIMEOUT_MS each; an OSD that
 *                                 does not answer has "space": null)
 *   POST /api/v1/osds/{id}/out    out and held out (SetOsdState admin_out),
 *   POST /api/v1/osds/{id}/in     as `iolake-admin osd out|in ID`
 *   PUT  /api/v1/osds/expect      {"osds": N}: the OSDs a new cluster's
 *                                 first PG table waits for, while it waits
 *                                 (SetExpectOsds), as `iolake-admin osd
 *                                 expect N`; answers the map's count after
 *   GET  /api/v1/scrub            the same Status answers as scrub status
 *                                 (admin_api_scrub.c writes them)
 *   GET  /api/v1/osds/{id}/bad-shards  one page of the shards that OSD's
 *                                 scrubber recorded as bad (ListBadShards;
 *                                 ?after=PG:SHARD:OBJECTHEX&limit=N), as
 *                                 `iolake-admin osd scrub-status` lists them
 *   GET  /api/v1/osds/{id}/shards?pg=N  one page of the shards that OSD
 *                                 holds in PG N (ListShards; after and
 *                                 limit as bad-shards'), as `iolake-admin
 *                                 pg check` reads them
 *   GET  /api/v1/pgs              PG counts by state, recovery progress,
 *                                 rate and ETA (meta's PgStats), and each PG
 * Everything through meta's RPCs and the OSDs' Status; nothing decided here.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/proto/osd_methods.h"
#include "gateway/admin_api_int.h"
#include "proto/osd.pb-c.h"

#define SLOT_NONE 0xFFFFFFFFu   /* an empty PG slot (meta/place.h) */

/* ------------------------------------------------------------ GET osds */

struct osds_state {
	Iolake__Meta__GetMapResponse *map;
	Iolake__Osd__StatusResponse **st;   /* per OSD of the map; NULL: no answer */
	int *rpc_status;
	size_t n, left;
};

static void osds_free(void *p)
{
	struct osds_state *s = p;
	for (size_t i = 0; s->st && i < s->n; i++)
		if (s->st[i])
			admin_msg_free(&s->st[i]->base);
	free(s->st);
	free(s->rpc_status);
	if (s->map)
		admin_msg_free(&s->map->base);
	free(s);
}

static const char *osd_state(const Iolake__Meta__OsdInfo *o)
{
	if (o->up)
		return o->in ? "up+in" : "up+out";
	return o->in ? "down+in" : "down+out";
}

/* PGs of the map with a slot on OSD id (a PG names an OSD at most once). */
static uint64_t osd_pgs(const Iolake__Meta__ClusterMap *m, uint32_t id)
{
	uint64_t n = 0;
	for (size_t p = 0; p < m->n_pgs; p++)
		for (size_t k = 0; k < m->pgs[p]->n_osds; k++)
			if (m->pgs[p]->osds[k] == id) {
				n++;
				break;
			}
	return n;
}

static void osds_reply(struct admin_call *c, struct osds_state *s)
{
	const Iolake__Meta__ClusterMap *m = s->map->map;
	if (admin_call_route(c)->id == ADMIN_R_SCRUB) {   /* the same answers, another view */
		admin_scrub_reply(c, m, (const Iolake__Osd__StatusResponse *const *)s->st,
				  s->rpc_status, s->n);
		return;
	}
	struct jsonw w;
	jsonw_init(&w, 0);
	jsonw_obj_begin(&w);
	jsonw_ku64(&w, "epoch", m->epoch);
	/* a new cluster's PGs wait for this many OSDs (0: placed) */
	jsonw_ku64(&w, "expect_osds", m->expect_osds);
	uint64_t used = 0, data_used = 0, inl = 0, total = 0;
	size_t up = 0, in = 0;
	jsonw_key(&w, "osds");
	jsonw_arr_begin(&w);
	for (size_t i = 0; i < s->n; i++) {
		const Iolake__Meta__OsdInfo *o = m->osds[i];
		const Iolake__Osd__StatusResponse *st = s->st[i];
		up += o->up;
		in += o->in;
		jsonw_obj_begin(&w);
		jsonw_ku64(&w, "id", o->id);
		jsonw_kstr(&w, "addr", o->addr);
		jsonw_kstr(&w, "host", o->host);
		jsonw_kstr(&w, "state", osd_state(o));
		jsonw_kbool(&w, "up", o->up);
		jsonw_kbool(&w, "in", o->in);
		jsonw_kbool(&w, "admin_out", o->admin_out);
		jsonw_ku64(&w, "weight", o->weight);
		jsonw_ku64(&w, "capacity_bytes", o->capacity_bytes);
		jsonw_ku64(&w, "pgs", osd_pgs(m, o->id));
		jsonw_key(&w, "space");
		if (st) {
			jsonw_obj_begin(&w);
			jsonw_ku64(&w, "total_bytes", st->total_bytes);
			jsonw_ku64(&w, "used_bytes", st->used_bytes);
			jsonw_ku64(&w, "reserved_bytes", st->reserved_bytes);
			jsonw_ku64(&w, "free_bytes", st->free_bytes);
			jsonw_ku64(&w, "inline_bytes", st->inline_bytes);
			/* what the OSD holds: its data area's extents and the
			 * small shards its index keeps inline */
			jsonw_ku64(&w, "stored_bytes", st->used_bytes + st->inline_bytes);
			jsonw_ku64(&w, "puts", st->puts);        /* since the OSD started */
			jsonw_ku64(&w, "deletes", st->deletes);
			jsonw_obj_end(&w);
			used += st->used_bytes + st->inline_bytes;
			data_used += st->used_bytes;
			inl += st->inline_bytes;
			total += st->total_bytes;
		} else {
			jsonw_null(&w);
			jsonw_kstr(&w, "space_error", rpc_status_name(s->rpc_status[i]));
		}
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_key(&w, "summary");
	jsonw_obj_begin(&w);
	jsonw_ku64(&w, "total", s->n);
	jsonw_ku64(&w, "up", up);
	jsonw_ku64(&w, "in", in);
	jsonw_ku64(&w, "used_bytes", used);          /* data areas and inline shards */
	jsonw_ku64(&w, "data_used_bytes", data_used);
	jsonw_ku64(&w, "inline_bytes", inl);
	jsonw_ku64(&w, "total_bytes", total);
	jsonw_obj_end(&w);
	jsonw_obj_end(&w);
	admin_reply_json(c, 200, &w);
}

static void osd_done(struct admin_call *c)
{
	struct osds_state *s = admin_call_state(c);
	if (--s->left == 0)
		osds_reply(c, s);
}

static void on_osd_status(struct admin_call *c, void *ud, int rpc_status,
			  const ProtobufCMessage *resp)
{
	struct osds_state *s = admin_call_state(c);
	size_t i = (size_t)(uintptr_t)ud;
	s->rpc_status[i] = rpc_status;
	if (rpc_status == RPC_OK)
		s->st[i] = (Iolake__Osd__StatusResponse *)admin_msg_copy(resp);
	osd_done(c);
}

/* A GetMap's answer: the map, or NULL once the error is answered. */
static const Iolake__Meta__ClusterMap *map_or_reply(struct admin_call *c, int err,
						    const ProtobufCMessage *resp)
{
	if (err) {
		admin_reply_meta_error(c, err);
		return NULL;
	}
	const Iolake__Meta__GetMapResponse *r = (const void *)resp;
	if (r->status != IOLAKE__META__STATUS__STATUS_OK || !r->map) {
		admin_reply_error(c, 503, "ServiceUnavailable", "no cluster map yet");
		return NULL;
	}
	return r->map;
}

static void on_osds_map(struct admin_call *c, void *ud, int err, const ProtobufCMessage *resp)
{
	(void)ud;
	if (!map_or_reply(c, err, resp))
		return;
	struct osds_state *s = calloc(1, sizeof(*s));
	if (s) {
		s->map = (Iolake__Meta__GetMapResponse *)admin_msg_copy(resp);
		s->n = s->map ? s->map->map->n_osds : 0;
		s->st = calloc(s->n ? s->n : 1, sizeof(*s->st));
		s->rpc_status = calloc(s->n ? s->n : 1, sizeof(*s->rpc_status));
	}
	if (!s || !s->map || !s->st || !s->rpc_status) {
		if (s)
			osds_free(s);
		admin_reply_error(c, 500, "InternalError", "out of memory");
		return;
	}
	admin_call_set_state(c, s, osds_free);
	s->left = 1 + s->n;
	for (size_t i = 0; i < s->n; i++)
		admin_osd_status(c, s->map->map->osds[i]->addr, on_osd_status, (void *)(uintptr_t)i);
	osd_done(c);
}

void admin_h_scrub(struct admin_call *c)
{
	admin_h_osds(c);
}

/* ------------------------------------------------------- bad shards */

/* An OSD's object ids are 1..64 bytes (osd.proto); the API's hex of one
 * is never longer than ADMIN_OID_MAX bytes' worth. */
static size_t oid_len(const Iolake__Osd__ShardKey *k)
{
	return k->object_id.len < ADMIN_OID_MAX ? k->object_id.len : ADMIN_OID_MAX;
}

/* The route's OSD answered a listing, or false once the 503 is answered. */
static bool osd_answered(struct admin_call *c, int rpc_status)
{
	if (rpc_status == RPC_OK)
		return true;
	char msg[96];
	snprintf(msg, sizeof(msg), "OSD %u did not answer: %s", admin_call_route(c)->osd_id,
		 rpc_status_name(rpc_status));
	admin_reply_error(c, 503, "ServiceUnavailable", msg);
	return false;
}

/* A listed shard's key fields, inside its object. */
static void key_fields(struct jsonw *w, const Iolake__Osd__ShardKey *k)
{
	char oid[2 * ADMIN_OID_MAX + 1];
	hash_hex(k->object_id.data, oid_len(k), oid);
	jsonw_ku64(w, "pg", k->pg);
	jsonw_kstr(w, "object_id", oid);
	jsonw_ku64(w, "shard", k->shard);
}

/* A listing's start: {"osd":ID, ("pg":N, for shards,) "shards":[ */
static void list_begin(struct admin_call *c, struct jsonw *w)
{
	const struct admin_route *r = admin_call_route(c);
	jsonw_init(w, 0);
	jsonw_obj_begin(w);
	jsonw_ku64(w, "osd", r->osd_id);
	if (r->id == ADMIN_R_OSD_SHARDS)
		jsonw_ku64(w, "pg", ((const struct admin_shard_query *)admin_call_state(c))->list_pg);
	jsonw_key(w, "shards");
	jsonw_arr_begin(w);
}

/* A listing's end: "more", and "next" (after=PG:SHARD:OBJECTHEX for the
 * next page, the last key listed) or null; closes the answer and sends it. */
static void list_end(struct admin_call *c, struct jsonw *w, bool more,
		     const Iolake__Osd__ShardKey *last)
{
	jsonw_arr_end(w);
	more = more && last;
	jsonw_kbool(w, "more", more);
	jsonw_key(w, "next");
	if (more) {
		char tok[2 * 12 + 2 * ADMIN_OID_MAX + 4];
		int o = snprintf(tok, sizeof(tok), "%u:%u:", last->pg, last->shard);
		hash_hex(last->object_id.data, oid_len(last), tok + o);
		jsonw_str(w, tok);
	} else {
		jsonw_null(w);
	}
	jsonw_obj_end(w);
	admin_reply_json(c, 200, w);
}

static void on_bad_list(struct admin_call *c, void *ud, int rpc_status,
			const ProtobufCMessage *resp)
{
	(void)ud;
	if (!osd_answered(c, rpc_status))
		return;
	const Iolake__Osd__ListBadShardsResponse *r = (const void *)resp;
	struct jsonw w;
	list_begin(c, &w);
	const Iolake__Osd__ShardKey *last = NULL;
	for (size_t i = 0; i < r->n_shards; i++) {
		const Iolake__Osd__BadShard *b = r->shards[i];
		if (!b->key)
			continue;
		jsonw_obj_begin(&w);
		key_fields(&w, b->key);
		jsonw_kstr(&w, "kind", b->kind ? b->kind : "");
		jsonw_ku64(&w, "bad_offset", b->bad_offset);
		jsonw_ku64(&w, "bad_length", b->bad_length);
		jsonw_ku64(&w, "length", b->length);
		jsonw_ku64(&w, "found_unix_s", b->found_unix_s);
		jsonw_obj_end(&w);
		last = b->key;
	}
	list_end(c, &w, r->more, last);
}

static void on_shard_list(struct admin_call *c, void *ud, int rpc_status,
			  const ProtobufCMessage *resp)
{
	(void)ud;
	if (!osd_answered(c, rpc_status))
		return;
	const Iolake__Osd__ListShardsResponse *r = (const void *)resp;
	struct jsonw w;
	list_begin(c, &w);
	const Iolake__Osd__ShardKey *last = NULL;
	for (size_t i = 0; i < r->n_shards; i++) {
		const Iolake__Osd__ShardInfo *s = r->shards[i];
		if (!s->key)
			continue;
		jsonw_obj_begin(&w);
		key_fields(&w, s->key);
		jsonw_ku64(&w, "length", s->length);
		jsonw_ku64(&w, "crc32c", s->crc32c);
		jsonw_kbool(&w, "inline", s->is_inline);
		jsonw_obj_end(&w);
		last = s->key;
	}
	list_end(c, &w, r->more, last);
}

/* The map's address of the route's OSD, or NULL once 404 is answered. */
static const char *osd_addr_or_reply(struct admin_call *c, const Iolake__Meta__ClusterMap *m)
{
	uint32_t id = admin_call_route(c)->osd_id;
	for (size_t i = 0; i < m->n_osds; i++)
		if (m->osds[i]->id == id)
			return m->osds[i]->addr;
	char msg[64];
	snprintf(msg, sizeof(msg), "OSD %u is not in the map", id);
	admin_reply_error(c, 404, "NoSuchOsd", msg);
	return NULL;
}

/* The route's OSD asked for one page of its bad shards (ListBadShards) or
 * of its shards in one PG (ListShards), after the query's key. */
static void on_list_map(struct admin_call *c, void *ud, int err, const ProtobufCMessage *resp)
{
	struct admin_shard_query *q = ud;   /* the call's state */
	const Iolake__Meta__ClusterMap *m = map_or_reply(c, err, resp);
	const char *addr = m ? osd_addr_or_reply(c, m) : NULL;
	if (!addr)
		return;
	Iolake__Osd__ShardKey after = IOLAKE__OSD__SHARD_KEY__INIT;
	after.pg = q->pg;
	after.shard = q->shard;
	after.object_id.data = q->oid;
	after.object_id.len = q->oid_len;
	if (admin_call_route(c)->id == ADMIN_R_OSD_SHARDS) {
		Iolake__Osd__ListShardsRequest lq = IOLAKE__OSD__LIST_SHARDS_REQUEST__INIT;
		lq.pg = q->list_pg;
		lq.limit = q->limit;
		lq.after = q->have_after ? &after : NULL;
		admin_osd_call(c, addr, OSD_M_LIST, &lq.base, on_shard_list, NULL);
		return;
	}
	Iolake__Osd__ListBadShardsRequest lq = IOLAKE__OSD__LIST_BAD_SHARDS_REQUEST__INIT;
	lq.limit = q->limit;
	lq.after = q->have_after ? &after : NULL;
	admin_osd_call(c, addr, OSD_M_LIST_BAD, &lq.base, on_bad_list, NULL);
}

/* GET osds/{id}/bad-shards and GET osds/{id}/shards?pg=N. */
void admin_h_osd_list(struct admin_call *c)
{
	bool shards = admin_call_route(c)->id == ADMIN_R_OSD_SHARDS;
	size_t ql;
	const char *qs = admin_call_query(c, &ql);
	struct admin_shard_query *q = calloc(1, sizeof(*q));
	if (!q) {
		admin_reply_error(c, 500, "InternalError", "out of memory");
		return;
	}
	admin_call_set_state(c, q, free);
	const char *why = NULL;
	if (admin_parse_shard_query(qs ? qs : "", qs ? ql : 0, shards, q, &why)) {
		admin_reply_error(c, 400, "InvalidArgument", why);
		return;
	}
	Iolake__Meta__GetMapRequest req = IOLAKE__META__GET_MAP_REQUEST__INIT;
	int rc = admin_meta_call(c, META_M_GET_MAP, &req.base, on_list_map, q);
	if (rc)
		admin_reply_meta_error(c, rc);
}

void admin_h_osds(struct admin_call *c)
{
	Iolake__Meta__GetMapRequest req = IOLAKE__META__GET_MAP_REQUEST__INIT;
	int rc = admin_meta_call(c, META_M_GET_MAP, &req.base, on_osds_map, NULL);
	if (rc)
		admin_reply_meta_error(c, rc);
}

/* ------------------------------------------------------------ out / in */

static void on_set_state(struct admin_call *c, int err, const Iolake__Meta__OpResult *res)
{
	const struct admin_route *r = admin_call_route(c);
	bool out = r->id == ADMIN_R_OSD_OUT;
	if (err) {
		admin_reply_meta_error(c, err);
		return;
	}
	if (res->status != IOLAKE__META__STATUS__STATUS_OK) {
		admin_reply_status(c, res->status, out ? "osd out" : "osd in");
		return;
	}
	struct jsonw w;
	jsonw_init(&w, 0);
	jsonw_obj_begin(&w);
	jsonw_ku64(&w, "osd", r->osd_id);
	jsonw_kbool(&w, "in", !out);
	jsonw_kbool(&w, "admin_out", out);
	jsonw_ku64(&w, "epoch", res->epoch);
	jsonw_obj_end(&w);
	admin_reply_json(c, 200, &w);
}

void admin_h_osd_out_in(struct admin_call *c)
{
	const struct admin_route *r = admin_call_route(c);
	bool out = r->id == ADMIN_R_OSD_OUT;
	/* As iolake-admin's osd out|in: out sets the operator's hold and
	 * takes it out; in clears the hold and takes it in. */
	Iolake__Meta__SetOsdState ss = IOLAKE__META__SET_OSD_STATE__INIT;
	ss.id = r->osd_id;
	ss.set_admin_out = true;
	ss.admin_out = out;
	ss.set_in = true;
	ss.in = !out;
	ss.time_ms = admin_wall_ms();
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_SET_OSD_STATE;
	op.set_osd_state = &ss;
	int rc = admin_meta_submit(c, &op, on_set_state);
	if (rc)
		admin_reply_meta_error(c, rc);
}

/* ------------------------------------------------------------ expect */

/* The map read after the op: placed, or still waiting for how many. */
static void on_expect_map(struct admin_call *c, void *ud, int err, const ProtobufCMessage *resp)
{
	(void)ud;
	const Iolake__Meta__ClusterMap *m = map_or_reply(c, err, resp);
	if (!m)
		return;
	struct jsonw w;
	jsonw_init(&w, 0);
	jsonw_obj_begin(&w);
	jsonw_ku64(&w, "expect_osds", m->expect_osds);
	jsonw_kbool(&w, "placed", !m->expect_osds);
	jsonw_ku64(&w, "epoch", m->epoch);
	jsonw_obj_end(&w);
	admin_reply_json(c, 200, &w);
}

static void on_set_expect(struct admin_call *c, int err, const Iolake__Meta__OpResult *res)
{
	if (err) {
		admin_reply_meta_error(c, err);
		return;
	}
	switch (res->status) {
	case IOLAKE__META__STATUS__STATUS_OK:
		break;
	case IOLAKE__META__STATUS__STATUS_CONFLICT:
		admin_reply_error(c, 409, "Conflict", "the PGs are placed already (their table "
				  "now follows the OSDs as they come and go)");
		return;
	case IOLAKE__META__STATUS__STATUS_NOT_FOUND:
		admin_reply_error(c, 503, "ServiceUnavailable", "no cluster map yet");
		return;
	default:
		admin_reply_status(c, res->status, "osd expect");
		return;
	}
	Iolake__Meta__GetMapRequest req = IOLAKE__META__GET_MAP_REQUEST__INIT;
	int rc = admin_meta_call(c, META_M_GET_MAP, &req.base, on_expect_map, NULL);
	if (rc)
		admin_reply_meta_error(c, rc);
}

void admin_h_osd_expect(struct admin_call *c)
{
	size_t len;
	const char *body = admin_call_body(c, &len);
	const char *why = "";
	struct admin_expect_osds e;
	int rc = admin_parse_expect_osds(body, len, &e, &why);
	if (rc) {
		admin_reply_error(c, 400, rc == -EBADMSG ? "MalformedJSON" : "InvalidRequest", why);
		return;
	}
	Iolake__Meta__SetExpectOsds se = IOLAKE__META__SET_EXPECT_OSDS__INIT;
	se.count = e.osds;
	se.time_ms = admin_wall_ms();
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_SET_EXPECT_OSDS;
	op.set_expect_osds = &se;
	rc = admin_meta_submit(c, &op, on_set_expect);
	if (rc)
		admin_reply_meta_error(c, rc);
}

/* ------------------------------------------------------------ GET pgs */

static void on_pgstats(struct admin_call *c, void *ud, int err, const ProtobufCMessage *resp)
{
	(void)ud;
	if (err) {
		admin_reply_meta_error(c, err);
		return;
	}
	const Iolake__Meta__PgStatsResponse *ps = (const void *)resp;
	if (ps->status != IOLAKE__META__STATUS__STATUS_OK) {
		admin_reply_error(c, 503, "ServiceUnavailable", "no cluster map yet");
		return;
	}
	/* Progress of the rebuild under way: what the primaries' reports say
	 * is done against what is done plus what is left. */
	uint64_t done = 0, left = 0, sdone = 0;
	for (size_t i = 0; i < ps->n_pgs; i++) {
		const Iolake__Meta__PgReport *r = ps->pgs[i]->report;
		if (r && ps->pgs[i]->report_valid) {
			done += r->bytes_done;
			sdone += r->stripes_done;
			left += r->bytes_missing;
		}
	}
	struct jsonw w;
	jsonw_init(&w, 0);
	jsonw_obj_begin(&w);
	jsonw_ku64(&w, "epoch", ps->epoch);
	jsonw_ku64(&w, "total", ps->n_pgs);
	jsonw_key(&w, "states");
	jsonw_obj_begin(&w);
	for (size_t i = 0; i < ps->n_counts; i++)
		jsonw_ku64(&w, ps->counts[i]->state, ps->counts[i]->pgs);
	jsonw_obj_end(&w);
	jsonw_key(&w, "recovery");
	jsonw_obj_begin(&w);
	jsonw_ku64(&w, "stripes_missing", ps->stripes_missing);
	jsonw_ku64(&w, "bytes_missing", ps->bytes_missing);
	jsonw_ku64(&w, "stripes_done", sdone);
	jsonw_ku64(&w, "bytes_done", done);
	/* per mille, so JSON stays integers: 1000 when nothing is left */
	jsonw_ku64(&w, "progress_permille", done + left ? done * 1000 / (done + left) : 1000);
	jsonw_ku64(&w, "rate_bytes_per_s", ps->rate_bytes_per_s);
	jsonw_ku64(&w, "eta_s", ps->eta_s);
	jsonw_ku64(&w, "unfound", ps->unfound);
	jsonw_ku64(&w, "unfound_live", ps->unfound_live);
	jsonw_obj_end(&w);
	jsonw_key(&w, "pgs");
	jsonw_arr_begin(&w);
	for (size_t i = 0; i < ps->n_pgs; i++) {
		const Iolake__Meta__PgStat *p = ps->pgs[i];
		jsonw_obj_begin(&w);
		jsonw_ku64(&w, "pg", p->pg);
		jsonw_kstr(&w, "state", p->state);
		jsonw_key(&w, "osds");
		jsonw_arr_begin(&w);
		for (size_t j = 0; j < p->n_osds; j++)
			jsonw_i64(&w, p->osds[j] == SLOT_NONE ? -1 : (int64_t)p->osds[j]);
		jsonw_arr_end(&w);
		jsonw_key(&w, "up");
		jsonw_arr_begin(&w);
		for (size_t j = 0; j < p->n_osds; j++)
			jsonw_bool(&w, j < 32 && (p->up_mask & (1u << j)));
		jsonw_arr_end(&w);
		jsonw_ki64(&w, "primary", p->primary == SLOT_NONE ? -1 : (int64_t)p->primary);
		const Iolake__Meta__PgReport *r = p->report;
		jsonw_ku64(&w, "stripes_missing", r ? r->stripes_missing : 0);
		jsonw_ku64(&w, "bytes_missing", r ? r->bytes_missing : 0);
		jsonw_ku64(&w, "eta_s", p->eta_s);
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_obj_end(&w);
	admin_reply_json(c, 200, &w);
}

void admin_h_pgs(struct admin_call *c)
{
	Iolake__Meta__PgStatsRequest req = IOLAKE__META__PG_STATS_REQUEST__INIT;
	int rc = admin_meta_call(c, META_M_PG_STATS, &req.base, on_pgstats, NULL);
	if (rc)
		admin_reply_meta_error(c, rc);
}
