/*
 * osd.c — iolake-admin osd ls|df|scrub-status|out|in|rm|expect (contract
 * in osd.h). ls reads the map; df and scrub-status ask each OSD of the
 * map itself over its own RPC service (osd.proto), except that both ask a
 * local aio's admin API for its in-process OSDs; out, in, rm and expect
 * are ops through Raft (SetOsdState, RemoveOsd, SetExpectOsds). Owns only
 * what it prints.
 */
#include "admin/osd.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin/aioapi.h"
#include "admin/map.h"
#include "common/json.h"
#include "common/place.h"
#include "common/proto/osd_methods.h"
#include "osd/client.h"

static int ls(const struct admin_ctx *x)
{
	Iolake__Meta__GetMapResponse *h;
	Iolake__Meta__ClusterMap *m = admin_get_map(x, &h);
	if (x->json) {
		fprintf(x->out, "{\"epoch\":%" PRIu64 ",\"osds\":[", m->epoch);
		for (size_t i = 0; i < m->n_osds; i++) {
			const Iolake__Meta__OsdInfo *o = m->osds[i];
			fprintf(x->out, "%s{\"id\":%u,\"addr\":", i ? "," : "", o->id);
			admin_jstr(x->out, o->addr);
			fprintf(x->out, ",\"host\":");
			admin_jstr(x->out, o->host);
			fprintf(x->out, ",\"weight\":%u,\"up\":%s,\"in\":%s,\"admin_out\":%s"
				",\"capacity_bytes\":%" PRIu64 "}",
				o->weight, o->up ? "true" : "false", o->in ? "true" : "false",
				o->admin_out ? "true" : "false", o->capacity_bytes);
		}
		fprintf(x->out, "],\"expect_osds\":%u}\n", m->expect_osds);
	} else {
		/* IN: "out(admin)" while an operator's `osd out` holds it out */
		fprintf(x->out, "%-6s %-22s %-16s %6s %-5s %-10s\n", "ID", "ADDRESS", "HOST", "WEIGHT", "UP",
			"IN");
		for (size_t i = 0; i < m->n_osds; i++) {
			const Iolake__Meta__OsdInfo *o = m->osds[i];
			fprintf(x->out, "%-6u %-22s %-16s %6u %-5s %-10s\n", o->id, o->addr, o->host, o->weight,
				o->up ? "up" : "down",
				o->admin_out ? "out(admin)" : o->in ? "in" : "out");
		}
		fprintf(x->out, "map epoch: %" PRIu64 "   osds: %zu\n", m->epoch, m->n_osds);
		if (m->expect_osds)
			fprintf(x->out, "PGs not placed yet: waiting for %u OSDs to be in "
				"(`osd expect N` changes that; `osd expect 0` places them now)\n",
				m->expect_osds);
	}
	protobuf_c_message_free_unpacked(&h->base, NULL);
	return 0;
}

/* OSD Status over the OSD's own RPC service (osd.proto), each OSD of the
 * map asked directly and at once. Method 6 is Status (service Osd order). */
#define OSD_DF_MAX 1024

struct df_call {
	bool done;
	int status;
	Iolake__Osd__StatusResponse *st;   /* owned copy; NULL unless OK */
	unsigned *left;
};

static void on_osd_status(void *ud, const struct rpc_result *res)
{
	struct df_call *c = ud;
	c->done = true;
	c->status = res->status;
	if (res->status == RPC_OK)
		c->st = (Iolake__Osd__StatusResponse *)meta_client_copy_msg(res->resp);
	(*c->left)--;
}

/* A df row: the OSD's space (st), or why there is none (err). */
static void df_row(const struct admin_ctx *x, const Iolake__Meta__OsdInfo *o,
		   const Iolake__Osd__StatusResponse *st, const char *err, bool first)
{
	if (x->json) {
		fprintf(x->out, "%s{\"id\":%u,\"addr\":", first ? "" : ",", o->id);
		admin_jstr(x->out, o->addr);
		if (!st) {
			fprintf(x->out, ",\"error\":");
			admin_jstr(x->out, err);
			fprintf(x->out, "}");
			return;
		}
		fprintf(x->out, ",\"total_bytes\":%" PRIu64 ",\"used_bytes\":%" PRIu64
			",\"reserved_bytes\":%" PRIu64 ",\"free_bytes\":%" PRIu64
			",\"inline_bytes\":%" PRIu64 ",\"puts\":%" PRIu64 ",\"deletes\":%" PRIu64 "}",
			st->total_bytes, st->used_bytes, st->reserved_bytes, st->free_bytes,
			st->inline_bytes, st->puts, st->deletes);
		return;
	}
	if (!st) {
		fprintf(x->out, "%-6u %-22s %s\n", o->id, o->addr, err);
		return;
	}
	fprintf(x->out, "%-6u %-22s %14" PRIu64 " %14" PRIu64 " %14" PRIu64 " %12" PRIu64 "\n", o->id,
		o->addr, st->total_bytes, st->used_bytes, st->free_bytes, st->inline_bytes);
}

/* ------------------------------------------------ an aio's OSDs
 * They answer only inside the aio's process: their Status comes from its
 * admin API (GET osds and GET scrub ask each of them there), their bad
 * shards from GET osds/{id}/bad-shards. The answers are turned back into
 * the RPC messages, so the same rows print them. */

/* OSD id's entry in a GET osds or GET scrub answer, or NULL. */
static const struct json_value *api_osd(const struct json_doc *d, uint32_t id)
{
	const struct json_value *osds = json_get(json_root(d), "osds");
	if (!osds || osds->type != JSON_ARRAY)
		return NULL;
	for (const struct json_value *o = osds->u.list.first; o; o = o->next)
		if (admin_api_u64(o, "id") == id)
			return o;
	return NULL;
}

/* The Status fields GET osds gives (its "space"); false when it has none. */
static bool api_space(const struct json_value *o, Iolake__Osd__StatusResponse *st)
{
	const struct json_value *sp = o ? json_get(o, "space") : NULL;
	if (!sp || sp->type != JSON_OBJECT)
		return false;
	st->total_bytes = admin_api_u64(sp, "total_bytes");
	st->used_bytes = admin_api_u64(sp, "used_bytes");
	st->reserved_bytes = admin_api_u64(sp, "reserved_bytes");
	st->free_bytes = admin_api_u64(sp, "free_bytes");
	st->inline_bytes = admin_api_u64(sp, "inline_bytes");
	st->puts = admin_api_u64(sp, "puts");
	st->deletes = admin_api_u64(sp, "deletes");
	return true;
}

/* The Status fields GET scrub gives; false when it has none. */
static bool api_scrub(const struct json_value *o, Iolake__Osd__StatusResponse *st)
{
	const struct json_value *sc = o ? json_get(o, "scrub") : NULL;
	const struct json_value *dp = o ? json_get(o, "deep_scrub") : NULL;
	if (!sc || sc->type != JSON_OBJECT || !dp || dp->type != JSON_OBJECT)
		return false;
	st->scrub_rate = admin_api_u64(sc, "rate_bytes_per_s");
	st->scrub_passes = admin_api_u64(sc, "passes");
	st->scrub_shards = admin_api_u64(sc, "shards_checked");
	st->scrub_bytes = admin_api_u64(sc, "bytes_checked");
	st->scrub_errors = admin_api_u64(sc, "errors_found");
	st->scrub_position_pg = (uint32_t)admin_api_u64(sc, "position_pg");
	st->scrub_idle = !admin_api_true(sc, "running");
	st->recovery_on = admin_api_true(dp, "enabled");   /* the API's: on and an interval */
	st->deep_scrub_interval_ms = admin_api_u64(dp, "interval_ms");
	st->deep_pgs = admin_api_u64(dp, "pgs_done");
	st->deep_stripes = admin_api_u64(dp, "stripes_checked");
	st->deep_bytes = admin_api_u64(dp, "bytes_checked");
	st->deep_repaired = admin_api_u64(dp, "shards_repaired");
	st->deep_inconsistent = admin_api_u64(dp, "stripes_inconsistent");
	return true;
}

static int df(const struct admin_ctx *x)
{
	Iolake__Meta__GetMapResponse *h;
	Iolake__Meta__ClusterMap *m = admin_get_map(x, &h);
	bool failed;
	struct json_doc *api = admin_aio_status(x, m, "osds", &failed);
	if (failed) {
		protobuf_c_message_free_unpacked(&h->base, NULL);
		return 1;
	}
	size_t n = m->n_osds < OSD_DF_MAX ? m->n_osds : OSD_DF_MAX;
	struct df_call *calls = calloc(n ? n : 1, sizeof(*calls));
	struct rpc_channel **ch = calloc(n ? n : 1, sizeof(*ch));
	if (!calls || !ch) {
		fprintf(x->err, "iolake-admin: error: out of memory\n");
		exit(1);
	}
	unsigned left = 0;
	for (size_t i = 0; i < n && !api; i++) {
		calls[i].left = &left;
		ch[i] = admin_osd_open(x, m->osds[i]->addr);
		if (!ch[i]) {
			calls[i].done = true;
			calls[i].status = RPC_INVALID_ARGUMENT;
			continue;
		}
		Iolake__Osd__StatusRequest q = IOLAKE__OSD__STATUS_REQUEST__INIT;
		struct rpc_call_opts co = { .timeout_ms = 3000 };
		left++;
		rpc_call(ch[i], OSD_SVC, OSD_M_STATUS, &q.base, NULL, &co,
			 on_osd_status, &calls[i]);
	}
	while (left)
		uv_run(x->loop, UV_RUN_ONCE);
	if (x->json)
		fprintf(x->out, "{\"epoch\":%" PRIu64 ",\"osds\":[", m->epoch);
	else
		fprintf(x->out, "%-6s %-22s %14s %14s %14s %12s\n", "ID", "ADDRESS", "TOTAL", "USED", "FREE",
			"INLINE");
	for (size_t i = 0; i < n; i++) {
		const Iolake__Meta__OsdInfo *o = m->osds[i];
		if (api) {
			Iolake__Osd__StatusResponse st = IOLAKE__OSD__STATUS_RESPONSE__INIT;
			const struct json_value *jo = api_osd(api, o->id);
			df_row(x, o, api_space(jo, &st) ? &st : NULL,
			       admin_api_str(jo, "space_error", "UNAVAILABLE"), i == 0);
		} else {
			df_row(x, o, calls[i].st, rpc_status_name(calls[i].status), i == 0);
		}
	}
	if (x->json)
		fprintf(x->out, "]}\n");
	for (size_t i = 0; i < n; i++) {
		if (ch[i])
			rpc_channel_close(ch[i]);
		if (calls[i].st)
			protobuf_c_message_free_unpacked(&calls[i].st->base, NULL);
	}
	free(ch);
	free(calls);
	json_free(api);
	protobuf_c_message_free_unpacked(&h->base, NULL);
	return 0;
}

#define SCRUB_PAGE 1000
#define SCRUB_BAD_MAX 100000

static void bad_row(const struct admin_ctx *x, const Iolake__Meta__OsdInfo *o,
		    const Iolake__Osd__BadShard *b, bool first)
{
	char name[OSD_SHARD_NAME_MAX] = "(bad key)";
	uint32_t pg = 0, shard = 0;
	const uint8_t *oidb = NULL;
	size_t oid_len = 0;
	if (b->key && osd_shard_name(b->key->pg, b->key->object_id.data, b->key->object_id.len,
				     b->key->shard, name, sizeof(name)) == 0) {
		pg = b->key->pg;
		shard = b->key->shard;
		oidb = b->key->object_id.data;
		oid_len = b->key->object_id.len;
	}
	if (x->json) {
		fprintf(x->out, "%s{\"pg\":%u,\"object_id\":", first ? "" : ",", pg);
		char oid[OSD_OID_MAX * 4 + 1];
		size_t n = 0;
		for (size_t i = 0; i < oid_len; i++)
			n += (size_t)snprintf(oid + n, sizeof(oid) - n,
					      oidb[i] >= 0x20 && oidb[i] < 0x7f ? "%c" : "\\x%02x",
					      oidb[i]);
		oid[n] = 0;
		admin_jstr(x->out, oid);
		fprintf(x->out, ",\"shard\":%u,\"name\":", shard);
		admin_jstr(x->out, name);
		fprintf(x->out, ",\"kind\":");
		admin_jstr(x->out, b->kind);
		fprintf(x->out, ",\"bad_offset\":%" PRIu64 ",\"bad_length\":%" PRIu64 ",\"length\":%" PRIu64
			",\"found_unix_s\":%" PRIu64 "}",
			b->bad_offset, b->bad_length, b->length, b->found_unix_s);
		return;
	}
	fprintf(x->out, "  osd %u: %s: %s, bytes %" PRIu64 "+%" PRIu64 " of %" PRIu64 ", found at %" PRIu64
		"\n", o->id, name, b->kind, b->bad_offset, b->bad_length, b->length,
		b->found_unix_s);
}

/* One OSD's bad shards over its RPC service, every page of
 * ListBadShards; how many. */
static size_t rpc_bad_shards(const struct admin_ctx *x, const Iolake__Meta__OsdInfo *o,
			     struct rpc_channel *ch)
{
	size_t seen = 0;
	Iolake__Osd__ShardKey after = IOLAKE__OSD__SHARD_KEY__INIT;
	uint8_t after_oid[OSD_OID_MAX];
	bool have_after = false;
	while (seen < SCRUB_BAD_MAX) {
		Iolake__Osd__ListBadShardsRequest q = IOLAKE__OSD__LIST_BAD_SHARDS_REQUEST__INIT;
		q.limit = SCRUB_PAGE;
		if (have_after)
			q.after = &after;
		Iolake__Osd__ListBadShardsResponse *r = NULL;
		int rc = admin_osd_call(x, ch, OSD_M_LIST_BAD, &q.base, (ProtobufCMessage **)&r);
		if (!r) {
			if (!x->json)
				fprintf(x->out, "  osd %u: listing bad shards failed: %s\n", o->id,
					rpc_status_name(rc));
			break;
		}
		for (size_t i = 0; i < r->n_shards; i++)
			bad_row(x, o, r->shards[i], seen + i == 0);
		seen += r->n_shards;
		bool more = r->more && r->n_shards > 0;
		if (more) {
			admin_shard_key_after(&after, after_oid, r->shards[r->n_shards - 1]->key);
			have_after = true;
		}
		protobuf_c_message_free_unpacked(&r->base, NULL);
		if (!more)
			break;
	}
	return seen;
}

/* The same from an aio's admin API: every page of GET osds/{id}/bad-shards,
 * each shard turned back into a BadShard for bad_row. */
static size_t api_bad_shards(const struct admin_ctx *x, const Iolake__Meta__OsdInfo *o)
{
	char path[256], after[2 * OSD_OID_MAX + 32] = "";
	size_t seen = 0;
	while (seen < SCRUB_BAD_MAX) {
		snprintf(path, sizeof(path), "osds/%u/bad-shards?limit=%u%s%s", o->id, SCRUB_PAGE,
			 after[0] ? "&after=" : "", after);
		struct json_doc *d = admin_aio_get(x, path);
		if (!d) {
			if (!x->json)
				fprintf(x->out, "  osd %u: listing bad shards failed: the admin API "
					"did not answer\n", o->id);
			break;
		}
		const struct json_value *r = json_root(d), *sh = json_get(r, "shards");
		for (const struct json_value *j = sh && sh->type == JSON_ARRAY ? sh->u.list.first
									       : NULL;
		     j; j = j->next, seen++) {
			uint8_t oid[OSD_OID_MAX];
			Iolake__Osd__ShardKey key = IOLAKE__OSD__SHARD_KEY__INIT;
			bool ok = admin_api_key(j, &key, oid);
			Iolake__Osd__BadShard b = IOLAKE__OSD__BAD_SHARD__INIT;
			b.key = ok ? &key : NULL;   /* bad_row names a NULL key "(bad key)" */
			b.kind = (char *)admin_api_str(j, "kind", "");
			b.bad_offset = admin_api_u64(j, "bad_offset");
			b.bad_length = admin_api_u64(j, "bad_length");
			b.length = admin_api_u64(j, "length");
			b.found_unix_s = admin_api_u64(j, "found_unix_s");
			bad_row(x, o, &b, seen == 0);
		}
		bool more = admin_api_next(r, after, sizeof(after));
		json_free(d);
		if (!more)
			break;
	}
	return seen;
}

/* One OSD: a row (table) or an object (JSON); bad shards listed after the
 * table by the caller in table mode, so rows here print them in JSON only.
 * api: an aio's GET scrub answer (its OSDs asked through the admin API),
 * or NULL to ask the OSD directly. */
static size_t scrub_osd(const struct admin_ctx *x, const Iolake__Meta__OsdInfo *o, bool first,
			bool list, const struct json_doc *api)
{
	struct rpc_channel *ch = NULL;
	Iolake__Osd__StatusResponse *got = NULL, ast = IOLAKE__OSD__STATUS_RESPONSE__INIT;
	const Iolake__Osd__StatusResponse *st;
	const char *err;
	if (api) {
		const struct json_value *jo = api_osd(api, o->id);
		st = api_scrub(jo, &ast) ? &ast : NULL;
		err = admin_api_str(jo, "scrub_error", "UNAVAILABLE");
	} else {
		int rc = RPC_INVALID_ARGUMENT;
		if ((ch = admin_osd_open(x, o->addr))) {
			Iolake__Osd__StatusRequest q = IOLAKE__OSD__STATUS_REQUEST__INIT;
			rc = admin_osd_call(x, ch, OSD_M_STATUS, &q.base, (ProtobufCMessage **)&got);
		}
		st = got;
		err = rpc_status_name(rc);
	}
	if (!st) {
		if (x->json) {
			fprintf(x->out, "%s{\"id\":%u,\"addr\":", first ? "" : ",", o->id);
			admin_jstr(x->out, o->addr);
			fprintf(x->out, ",\"error\":");
			admin_jstr(x->out, err);
			fprintf(x->out, "}");
		} else if (!list) {
			fprintf(x->out, "%-6u %-22s %s\n", o->id, o->addr, err);
		}
		if (ch)
			rpc_channel_close(ch);
		return 0;
	}
	if (x->json) {
		fprintf(x->out, "%s{\"id\":%u,\"addr\":", first ? "" : ",", o->id);
		admin_jstr(x->out, o->addr);
		fprintf(x->out, ",\"scrub_rate\":%" PRIu64 ",\"passes\":%" PRIu64 ",\"shards\":%" PRIu64
			",\"bytes\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"position_pg\":%u,\"idle\":%s"
			",\"deep\":{\"on\":%s,\"interval_ms\":%" PRIu64 ",\"pgs\":%" PRIu64
			",\"stripes\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"repaired\":%" PRIu64
			",\"inconsistent\":%" PRIu64 "},\"bad_shards\":[",
			st->scrub_rate, st->scrub_passes, st->scrub_shards, st->scrub_bytes,
			st->scrub_errors, st->scrub_position_pg, st->scrub_idle ? "true" : "false",
			st->recovery_on && st->deep_scrub_interval_ms ? "true" : "false",
			st->deep_scrub_interval_ms, st->deep_pgs, st->deep_stripes, st->deep_bytes,
			st->deep_repaired, st->deep_inconsistent);
	} else if (!list) {
		char state[24];
		snprintf(state, sizeof(state), "%s", !st->scrub_rate ? "off" :
			 st->scrub_idle ? "idle" : "scanning");
		char deep[96];
		if (st->recovery_on && st->deep_scrub_interval_ms)
			snprintf(deep, sizeof(deep), "%" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%" PRIu64,
				 st->deep_pgs, st->deep_stripes, st->deep_repaired,
				 st->deep_inconsistent);
		else
			snprintf(deep, sizeof(deep), "off");
		fprintf(x->out, "%-6u %-22s %-9s %12" PRIu64 " %8" PRIu64 " %12" PRIu64 " %14" PRIu64 " %8u %8"
			PRIu64 "  %s\n", o->id, o->addr, state, st->scrub_rate, st->scrub_passes,
			st->scrub_shards, st->scrub_bytes, st->scrub_position_pg, st->scrub_errors,
			deep);
	}
	if (got)
		protobuf_c_message_free_unpacked(&got->base, NULL);
	size_t seen = 0;
	/* JSON: always list; table: only in the second (listing) round. */
	if (x->json || list) {
		seen = api ? api_bad_shards(x, o) : rpc_bad_shards(x, o, ch);
		if (x->json)
			fprintf(x->out, "]}");
	}
	if (ch)
		rpc_channel_close(ch);
	return seen;
}

/* Each OSD of the map in turn: its Status (scrub counters), then every
 * page of its bad shards; an aio's through its admin API. */
static int scrub_status(const struct admin_ctx *x)
{
	Iolake__Meta__GetMapResponse *h;
	Iolake__Meta__ClusterMap *m = admin_get_map(x, &h);
	bool failed;
	struct json_doc *api = admin_aio_status(x, m, "scrub", &failed);
	if (failed) {
		protobuf_c_message_free_unpacked(&h->base, NULL);
		return 1;
	}
	size_t n = m->n_osds < OSD_DF_MAX ? m->n_osds : OSD_DF_MAX;
	if (x->json) {
		fprintf(x->out, "{\"epoch\":%" PRIu64 ",\"osds\":[", m->epoch);
		for (size_t i = 0; i < n; i++)
			scrub_osd(x, m->osds[i], i == 0, false, api);
		fprintf(x->out, "]}\n");
	} else {
		fprintf(x->out, "%-6s %-22s %-9s %12s %8s %12s %14s %8s %8s  %s\n", "ID", "ADDRESS", "SCRUB",
			"RATE", "PASSES", "SHARDS", "BYTES", "PG", "ERRORS",
			"DEEP PGS/STRIPES/REPAIRED/INCONSISTENT");
		for (size_t i = 0; i < n; i++)
			scrub_osd(x, m->osds[i], i == 0, false, api);
		fprintf(x->out, "bad shards:\n");
		size_t bad = 0;
		for (size_t i = 0; i < n; i++)
			bad += scrub_osd(x, m->osds[i], i == 0, true, api);
		if (!bad)
			fprintf(x->out, "  (none)\n");
	}
	json_free(api);
	protobuf_c_message_free_unpacked(&h->base, NULL);
	return 0;
}

static int parse_osd_id(const struct admin_ctx *x, const char *verb, const char *arg, uint32_t *id)
{
	char *end;
	unsigned long long v = strtoull(arg, &end, 10);
	if (!*arg || *end || v >= 0xFFFFFFFFull) {
		fprintf(x->err, "iolake-admin: osd %s: %s is not an OSD id\n", verb, arg);
		return 2;
	}
	*id = (uint32_t)v;
	return 0;
}

static uint64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* osd out ID: out and held out (admin_out) until osd in ID; osd in ID:
 * clears the hold and takes it in. Through Raft (SetOsdState). */
static int out_in(const struct admin_ctx *x, bool out, const char *arg)
{
	uint32_t id;
	if (parse_osd_id(x, out ? "out" : "in", arg, &id))
		return 2;
	Iolake__Meta__SetOsdState ss = IOLAKE__META__SET_OSD_STATE__INIT;
	ss.id = id;
	ss.set_admin_out = true;
	ss.admin_out = out;
	ss.set_in = true;
	ss.in = !out;
	ss.time_ms = wall_ms();
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_SET_OSD_STATE;
	op.set_osd_state = &ss;
	Iolake__Meta__OpResult *r = admin_must_submit(x, &op);
	char what[48];
	snprintf(what, sizeof(what), "osd %s %u", out ? "out" : "in", id);
	int rc = admin_check_result(x, what, r);
	if (!rc && x->json)
		fprintf(x->out, "{\"osd\":%u,\"in\":%s,\"admin_out\":%s,\"epoch\":%" PRIu64 "}\n", id,
			out ? "false" : "true", out ? "true" : "false", r->epoch);
	else if (!rc)
		fprintf(x->out, "osd %u is %s (map epoch %" PRIu64 ")\n", id,
			out ? "out, held out until `osd in`" : "in", r->epoch);
	protobuf_c_message_free_unpacked(&r->base, NULL);
	return rc;
}

/* osd rm ID: only a down and out OSD (its PGs moved when it went out). */
static int rm(const struct admin_ctx *x, const char *arg)
{
	uint32_t id;
	if (parse_osd_id(x, "rm", arg, &id))
		return 2;
	Iolake__Meta__GetMapResponse *h;
	Iolake__Meta__ClusterMap *m = admin_get_map(x, &h);
	const Iolake__Meta__OsdInfo *o = NULL;
	for (size_t i = 0; i < m->n_osds; i++)
		if (m->osds[i]->id == id)
			o = m->osds[i];
	int rc = 0;
	if (!o) {
		fprintf(x->err, "iolake-admin: error: osd rm %u: no such OSD in the map\n", id);
		rc = 1;
	} else if (o->up || o->in) {
		fprintf(x->err,
			"iolake-admin: error: osd rm %u: the OSD is %s and %s; only a down and out "
			"OSD can be removed (`osd out %u`, then stop it)\n",
			id, o->up ? "up" : "down", o->in ? "in" : "out", id);
		rc = 1;
	}
	protobuf_c_message_free_unpacked(&h->base, NULL);
	if (rc)
		return rc;
	Iolake__Meta__RemoveOsd ro = IOLAKE__META__REMOVE_OSD__INIT;
	ro.id = id;
	ro.time_ms = wall_ms();
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_REMOVE_OSD;
	op.remove_osd = &ro;
	Iolake__Meta__OpResult *r = admin_must_submit(x, &op);
	if (r->status == IOLAKE__META__STATUS__STATUS_CONFLICT) {
		/* it came back between the look and the op */
		fprintf(x->err, "iolake-admin: error: osd rm %u: the OSD is no longer down and out\n",
			id);
		rc = 1;
	} else {
		char what[32];
		snprintf(what, sizeof(what), "osd rm %u", id);
		rc = admin_check_result(x, what, r);
	}
	if (!rc && x->json)
		fprintf(x->out, "{\"removed\":%u,\"epoch\":%" PRIu64 "}\n", id, r->epoch);
	else if (!rc)
		fprintf(x->out, "removed osd %u (map epoch %" PRIu64 ")\n", id, r->epoch);
	protobuf_c_message_free_unpacked(&r->base, NULL);
	return rc;
}

/* osd expect N: the count a new cluster's first PG table waits for, while
 * it waits (SetExpectOsds); 0 places it now. */
static int expect(const struct admin_ctx *x, const char *arg)
{
	char *end;
	unsigned long long n = strtoull(arg, &end, 10);
	if (!*arg || *end || n > PLACE_MAX_OSDS) {
		fprintf(x->err, "iolake-admin: osd expect: %s is not a count of OSDs (0-%u)\n", arg,
			PLACE_MAX_OSDS);
		return 2;
	}
	Iolake__Meta__SetExpectOsds se = IOLAKE__META__SET_EXPECT_OSDS__INIT;
	se.count = (uint32_t)n;
	se.time_ms = wall_ms();
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_SET_EXPECT_OSDS;
	op.set_expect_osds = &se;
	Iolake__Meta__OpResult *r = admin_must_submit(x, &op);
	int rc;
	if (r->status == IOLAKE__META__STATUS__STATUS_CONFLICT) {
		fprintf(x->err, "iolake-admin: error: osd expect %llu: the PGs are placed already "
			"(their table now follows the OSDs as they come and go)\n", n);
		rc = 1;
	} else {
		char what[40];
		snprintf(what, sizeof(what), "osd expect %llu", n);
		rc = admin_check_result(x, what, r);
	}
	if (rc) {
		protobuf_c_message_free_unpacked(&r->base, NULL);
		return rc;
	}
	/* The map from this op on (a linearizable read): placed, or still
	 * waiting for how many. */
	Iolake__Meta__GetMapResponse *h;
	Iolake__Meta__ClusterMap *m = admin_get_map(x, &h);
	if (x->json)
		fprintf(x->out, "{\"expect_osds\":%u,\"placed\":%s,\"epoch\":%" PRIu64 "}\n",
			m->expect_osds, m->expect_osds ? "false" : "true", m->epoch);
	else if (!m->expect_osds)
		fprintf(x->out, "PGs placed (map epoch %" PRIu64 ")\n", m->epoch);
	else
		fprintf(x->out, "PGs wait for %u OSDs to be in (map epoch %" PRIu64 ")\n",
			m->expect_osds, m->epoch);
	protobuf_c_message_free_unpacked(&h->base, NULL);
	protobuf_c_message_free_unpacked(&r->base, NULL);
	return 0;
}

int admin_osd(const struct admin_ctx *x, int nargs, char **args)
{
	const char *verb = args[0];
	if (nargs == 1 && !strcmp(verb, "ls"))
		return ls(x);
	if (nargs == 1 && !strcmp(verb, "df"))
		return df(x);
	if (nargs == 1 && !strcmp(verb, "scrub-status"))
		return scrub_status(x);
	if (nargs == 2 && (!strcmp(verb, "out") || !strcmp(verb, "in")))
		return out_in(x, !strcmp(verb, "out"), args[1]);
	if (nargs == 2 && !strcmp(verb, "rm"))
		return rm(x, args[1]);
	if (nargs == 2 && !strcmp(verb, "expect"))
		return expect(x, args[1]);
	return ADMIN_UNKNOWN;
}
