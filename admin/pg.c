/*
 * pg.c — iolake-admin pg ls|check (contract in pg.h), and the PG summary
 * that `cluster status` prints too. `pg ls` is the leader's PgStats (the
 * map alone from a meta without it); `pg check` asks each PG's up OSDs
 * for their shards itself (an aio's through its admin API), independent
 * of the OSDs' recovery drivers.
 */
#include "admin/pg.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "admin/aioapi.h"
#include "admin/map.h"
#include "common/err.h"
#include "common/proto/osd_methods.h"
#include "osd/client.h"

void admin_pg_summary_json(const struct admin_ctx *x, const Iolake__Meta__PgStatsResponse *ps)
{
	fprintf(x->out, ",\"pg_states\":{");
	for (size_t i = 0; ps && i < ps->n_counts; i++) {
		fprintf(x->out, i ? "," : "");
		admin_jstr(x->out, ps->counts[i]->state);
		fprintf(x->out, ":%u", ps->counts[i]->pgs);
	}
	fprintf(x->out, "}");
	if (ps)
		fprintf(x->out, ",\"recovery\":{\"stripes_missing\":%" PRIu64 ",\"bytes_missing\":%" PRIu64
			",\"rate_bytes_per_s\":%" PRIu64 ",\"eta_s\":%" PRIu64
			",\"unfound\":%" PRIu64 ",\"unfound_live\":%" PRIu64 "}",
			ps->stripes_missing, ps->bytes_missing, ps->rate_bytes_per_s, ps->eta_s,
			ps->unfound, ps->unfound_live);
	else
		fprintf(x->out, ",\"recovery\":null");
}

void admin_pg_summary_text(const struct admin_ctx *x, const Iolake__Meta__PgStatsResponse *ps,
			   const char *why)
{
	if (!ps) {
		fprintf(x->out, "pgs: not known (%s)\n", why);
		return;
	}
	fprintf(x->out, "pgs:");
	uint32_t total = 0;
	for (size_t i = 0; i < ps->n_counts; i++) {
		fprintf(x->out, "%s %u %s", i ? "," : "", ps->counts[i]->pgs, ps->counts[i]->state);
		total += ps->counts[i]->pgs;
	}
	fprintf(x->out, "%s(%u total)\n", ps->n_counts ? "   " : " ", total);
	char b[32], r[40], e[32];
	if (ps->bytes_missing || ps->stripes_missing)
		fprintf(x->out, "recovery: %" PRIu64 " stripes, %s left at %s, eta %s\n", ps->stripes_missing,
			admin_human_bytes(ps->bytes_missing, b), admin_human_rate(ps->rate_bytes_per_s, r),
			admin_human_eta(ps->eta_s, e));
	else
		fprintf(x->out, "recovery: nothing left to rebuild\n");
	if (ps->unfound_live)
		fprintf(x->out, "UNFOUND: %" PRIu64 " stripes of live objects have fewer than k shards"
			" (unreadable now: their other shards are on OSDs down or out; see `pg ls`)\n", ps->unfound_live);
	if (ps->unfound > ps->unfound_live)
		fprintf(x->out, "unfound: %" PRIu64 " stripes with fewer than k shards of no live object"
			" (the orphan sweep removes them)\n", ps->unfound - ps->unfound_live);
}

/* The map's PG table alone: what `pg ls` shows when the leader cannot
 * answer PgStats (a meta older than self-healing). */
static int pg_ls_map_only(const struct admin_ctx *x, const Iolake__Meta__ClusterMap *m)
{
	if (x->json)
		fprintf(x->out, "{\"epoch\":%" PRIu64 ",\"k\":%u,\"m\":%u,\"pgs\":[", m->epoch, m->k, m->m);
	else
		fprintf(x->out, "map epoch: %" PRIu64 "   pgs: %u   ec: %u+%u\n%-6s %s\n", m->epoch,
			m->pg_count, m->k, m->m, "PG", "OSDS");
	for (size_t i = 0; i < m->n_pgs; i++) {
		const Iolake__Meta__PgEntry *p = m->pgs[i];
		if (x->json)
			fprintf(x->out, "%s{\"pg\":%u,\"osds\":[", i ? "," : "", p->pg_id);
		else
			fprintf(x->out, "%-6u ", p->pg_id);
		for (size_t j = 0; j < p->n_osds; j++) {
			if (x->json)
				fprintf(x->out, j ? ",%d" : "%d", p->osds[j] == 0xFFFFFFFFu ? -1 : (int)p->osds[j]);
			else if (p->osds[j] == 0xFFFFFFFFu)
				fprintf(x->out, j ? ",-" : "-");
			else
				fprintf(x->out, j ? ",%u" : "%u", p->osds[j]);
		}
		fprintf(x->out, x->json ? "]}" : "\n");
	}
	if (x->json)
		fprintf(x->out, "]}\n");
	return 0;
}

static void pg_report_json(const struct admin_ctx *x, const Iolake__Meta__PgStat *p)
{
	const Iolake__Meta__PgReport *r = p->report;
	if (!r) {
		fprintf(x->out, "null");
		return;
	}
	fprintf(x->out, "{\"valid\":%s,\"age_ms\":%" PRIu64 ",\"epoch\":%" PRIu64 ",\"state\":",
		p->report_valid ? "true" : "false", p->report_age_ms, r->epoch);
	admin_jstr(x->out, r->state);
	fprintf(x->out, ",\"osds\":[");
	for (size_t j = 0; j < r->n_osds; j++)
		fprintf(x->out, j ? ",%d" : "%d", r->osds[j] == 0xFFFFFFFFu ? -1 : (int)r->osds[j]);
	fprintf(x->out, "],\"up_mask\":%u,\"stripes\":%" PRIu64 ",\"stripes_missing\":%" PRIu64
		",\"bytes_missing\":%" PRIu64 ",\"stripes_done\":%" PRIu64 ",\"bytes_done\":%" PRIu64
		",\"rate_bytes_per_s\":%" PRIu64 ",\"unfound\":%" PRIu64 ",\"unfound_live\":%" PRIu64
		",\"min_shards\":%u,\"bad_shards\":%" PRIu64 ",\"scan_started_ms\":%" PRIu64
		",\"last_clean_ms\":%" PRIu64 "}",
		r->up_mask, r->stripes, r->stripes_missing, r->bytes_missing, r->stripes_done,
		r->bytes_done, r->rate_bytes_per_s, r->unfound, r->unfound_live, r->min_shards,
		r->bad_shards,
		r->scan_started_ms, r->last_clean_ms);
}

/* One PG per line with its derived state (the leader's PgStats); the map
 * alone when the leader cannot answer it. Down OSDs are marked "7*", empty
 * slots "-"; MISSING and BYTES LEFT come from the primary's report. */
static int ls(const struct admin_ctx *x)
{
	Iolake__Meta__GetMapResponse *h;
	Iolake__Meta__ClusterMap *m = admin_get_map(x, &h);
	int err;
	Iolake__Meta__PgStatsRequest req = IOLAKE__META__PG_STATS_REQUEST__INIT;
	Iolake__Meta__PgStatsResponse *ps =
		(Iolake__Meta__PgStatsResponse *)admin_try_call(x, META_M_PG_STATS, &req.base, &err);
	if (!ps || ps->status != IOLAKE__META__STATUS__STATUS_OK) {
		if (ps)
			protobuf_c_message_free_unpacked(&ps->base, NULL);
		else
			fprintf(x->err, "iolake-admin: PG states unavailable (%s): map only\n",
				iol_strerror(err));
		pg_ls_map_only(x, m);
		protobuf_c_message_free_unpacked(&h->base, NULL);
		return 0;
	}
	char b[32], r[40], e[32];
	if (x->json)
		fprintf(x->out, "{\"epoch\":%" PRIu64 ",\"k\":%u,\"m\":%u,\"pgs\":[", ps->epoch, m->k, m->m);
	else
		fprintf(x->out, "map epoch: %" PRIu64 "   pgs: %zu   ec: %u+%u\n"
			"%-6s %-28s %-24s %7s %9s %11s %12s %8s\n",
			ps->epoch, ps->n_pgs, m->k, m->m, "PG", "STATE", "OSDS", "PRIMARY", "MISSING",
			"BYTES LEFT", "RATE", "ETA");
	for (size_t i = 0; i < ps->n_pgs; i++) {
		const Iolake__Meta__PgStat *p = ps->pgs[i];
		const Iolake__Meta__PgReport *rp = p->report;
		uint64_t smiss = rp ? rp->stripes_missing : 0, bmiss = rp ? rp->bytes_missing : 0;
		uint64_t rate = rp ? rp->rate_bytes_per_s : 0;
		if (x->json) {
			fprintf(x->out, "%s{\"pg\":%u,\"state\":", i ? "," : "", p->pg);
			admin_jstr(x->out, p->state);
			fprintf(x->out, ",\"osds\":[");
			for (size_t j = 0; j < p->n_osds; j++)
				fprintf(x->out, j ? ",%d" : "%d",
					p->osds[j] == 0xFFFFFFFFu ? -1 : (int)p->osds[j]);
			fprintf(x->out, "],\"up\":[");
			for (size_t j = 0; j < p->n_osds; j++)
				fprintf(x->out, "%s%s", j ? "," : "", p->up_mask & (1u << j) ? "true" : "false");
			fprintf(x->out, "],\"primary\":%d,\"stripes_missing\":%" PRIu64 ",\"bytes_missing\":%" PRIu64
				",\"rate_bytes_per_s\":%" PRIu64 ",\"eta_s\":%" PRIu64 ",\"report\":",
				p->primary == 0xFFFFFFFFu ? -1 : (int)p->primary, smiss, bmiss, rate,
				p->eta_s);
			pg_report_json(x, p);
			fprintf(x->out, "}");
			continue;
		}
		char osds[256];
		size_t o = 0;
		for (size_t j = 0; j < p->n_osds && o < sizeof(osds) - 16; j++) {
			if (p->osds[j] == 0xFFFFFFFFu)
				o += (size_t)snprintf(osds + o, sizeof(osds) - o, "%s-", j ? "," : "");
			else
				o += (size_t)snprintf(osds + o, sizeof(osds) - o, "%s%u%s", j ? "," : "",
						      p->osds[j], p->up_mask & (1u << j) ? "" : "*");
		}
		char prim[16];
		if (p->primary == 0xFFFFFFFFu)
			snprintf(prim, sizeof(prim), "-");
		else
			snprintf(prim, sizeof(prim), "%u", p->primary);
		fprintf(x->out, "%-6u %-28s %-24s %7s %9" PRIu64 " %11s %12s %8s\n", p->pg,
			p->state, osds, prim, smiss, admin_human_bytes(bmiss, b),
			admin_human_rate(rate, r), admin_human_eta(p->eta_s, e));
	}
	if (x->json) {
		fprintf(x->out, "]");
		admin_pg_summary_json(x, ps);
		fprintf(x->out, "}\n");
	} else {
		admin_pg_summary_text(x, ps, "");
	}
	protobuf_c_message_free_unpacked(&ps->base, NULL);
	protobuf_c_message_free_unpacked(&h->base, NULL);
	return 0;
}

/* Every PG of the map: each up slot's OSD lists the PG (ListShards, all
 * pages, method 5; an aio's OSDs through its admin API, GET
 * osds/{id}/shards); a stripe (pg, object id) is complete when every up
 * slot's OSD holds its own shard index. Independent of the OSDs' recovery
 * drivers (this is how tests and operators check their work). One PG's
 * listing in memory at a time. */
#define CHECK_PAGE 1000

struct check_ent {
	uint8_t oid[OSD_OID_MAX];
	uint8_t oid_len;
	uint8_t slot;
};

/* One PG's listing so far. */
struct check_list {
	struct check_ent *ents;
	size_t n, cap;
};

static int check_ent_cmp(const void *pa, const void *pb)
{
	const struct check_ent *a = pa, *b = pb;
	if (a->oid_len != b->oid_len)
		return a->oid_len < b->oid_len ? -1 : 1;
	int c = memcmp(a->oid, b->oid, a->oid_len);
	return c ? c : (int)a->slot - (int)b->slot;
}

/* A listed shard of slot; keys of another slot (or malformed) are not. */
static void check_add(const struct admin_ctx *x, struct check_list *l, uint32_t slot,
		      uint32_t shard, const uint8_t *oid, size_t oid_len)
{
	if (shard != slot || !oid_len || oid_len > OSD_OID_MAX)
		return;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 4096;
		l->ents = realloc(l->ents, l->cap * sizeof(*l->ents));
		if (!l->ents) {
			fprintf(x->err, "iolake-admin: error: out of memory\n");
			exit(1);
		}
	}
	struct check_ent *e = &l->ents[l->n++];
	e->oid_len = (uint8_t)oid_len;
	memcpy(e->oid, oid, oid_len);
	e->slot = (uint8_t)slot;
}

/* Slot's OSD's shards of pg over its RPC service; false after saying why. */
static bool rpc_list(const struct admin_ctx *x, const Iolake__Meta__OsdInfo *o,
		     struct rpc_channel *ch, uint32_t pg, uint32_t slot, struct check_list *l)
{
	Iolake__Osd__ShardKey after = IOLAKE__OSD__SHARD_KEY__INIT;
	uint8_t after_oid[OSD_OID_MAX];
	bool have_after = false;
	for (;;) {
		Iolake__Osd__ListShardsRequest q = IOLAKE__OSD__LIST_SHARDS_REQUEST__INIT;
		q.pg = pg;
		q.limit = CHECK_PAGE;
		if (have_after)
			q.after = &after;
		Iolake__Osd__ListShardsResponse *r = NULL;
		int rc = ch ? admin_osd_call(x, ch, OSD_M_LIST, &q.base, (ProtobufCMessage **)&r)
			    : RPC_UNAVAILABLE;
		if (!r) {
			fprintf(x->err, "pg %u: osd %u: %s\n", pg, o->id, rpc_status_name(rc));
			return false;
		}
		for (size_t i = 0; i < r->n_shards; i++) {
			const Iolake__Osd__ShardKey *k = r->shards[i]->key;
			if (k)
				check_add(x, l, slot, k->shard, k->object_id.data, k->object_id.len);
		}
		bool more = r->more && r->n_shards;
		if (more) {
			admin_shard_key_after(&after, after_oid, r->shards[r->n_shards - 1]->key);
			have_after = true;
		}
		protobuf_c_message_free_unpacked(&r->base, NULL);
		if (!more)
			return true;
	}
}

/* The same from an aio's admin API: every page of GET osds/{id}/shards. */
static bool api_list(const struct admin_ctx *x, const Iolake__Meta__OsdInfo *o, uint32_t pg,
		     uint32_t slot, struct check_list *l)
{
	char path[128 + 2 * OSD_OID_MAX], after[2 * OSD_OID_MAX + 32] = "";
	for (;;) {
		snprintf(path, sizeof(path), "osds/%u/shards?pg=%u&limit=%u%s%s", o->id, pg,
			 CHECK_PAGE, after[0] ? "&after=" : "", after);
		struct json_doc *d = admin_aio_get(x, path);
		if (!d) {
			fprintf(x->err, "pg %u: osd %u: the admin API did not answer\n", pg, o->id);
			return false;
		}
		const struct json_value *r = json_root(d), *sh = json_get(r, "shards");
		for (const struct json_value *j = sh && sh->type == JSON_ARRAY ? sh->u.list.first
									       : NULL;
		     j; j = j->next) {
			uint8_t oid[OSD_OID_MAX];
			Iolake__Osd__ShardKey k = IOLAKE__OSD__SHARD_KEY__INIT;
			if (admin_api_key(j, &k, oid))
				check_add(x, l, slot, k.shard, oid, k.object_id.len);
		}
		bool more = admin_api_next(r, after, sizeof(after));
		json_free(d);
		if (!more)
			return true;
	}
}

static int check(const struct admin_ctx *x)
{
	Iolake__Meta__GetMapResponse *h;
	Iolake__Meta__ClusterMap *m = admin_get_map(x, &h);
	bool api = admin_aio_osds(x, m);
	size_t n_ch = m->n_osds;
	struct rpc_channel **ch = calloc(n_ch ? n_ch : 1, sizeof(*ch));
	struct check_list l = { 0 };
	uint64_t stripes = 0, incomplete = 0, shards_missing = 0, unreachable = 0;
	bool first = true;
	if (!ch) {
		fprintf(x->err, "iolake-admin: error: out of memory\n");
		exit(1);
	}
	if (x->json)
		fprintf(x->out, "{\"epoch\":%" PRIu64 ",\"incomplete_pgs\":[", m->epoch);
	for (size_t pg = 0; pg < m->n_pgs; pg++) {
		const Iolake__Meta__PgEntry *p = m->pgs[pg];
		uint32_t up_mask = 0;
		l.n = 0;
		bool failed = false;
		for (size_t slot = 0; slot < p->n_osds && slot < 32 && !failed; slot++) {
			size_t oi = n_ch;
			for (size_t j = 0; j < n_ch; j++)
				if (m->osds[j]->id == p->osds[slot])
					oi = j;
			if (oi == n_ch || !m->osds[oi]->up)
				continue;
			up_mask |= 1u << slot;
			if (api) {
				failed = !api_list(x, m->osds[oi], (uint32_t)pg, (uint32_t)slot, &l);
				continue;
			}
			if (!ch[oi])
				ch[oi] = admin_osd_open(x, m->osds[oi]->addr);
			failed = !rpc_list(x, m->osds[oi], ch[oi], (uint32_t)pg, (uint32_t)slot, &l);
		}
		if (failed) {
			unreachable++;
			continue;
		}
		if (l.n)
			qsort(l.ents, l.n, sizeof(*l.ents), check_ent_cmp);
		uint64_t pg_stripes = 0, pg_incomplete = 0, pg_missing = 0;
		for (size_t i = 0; i < l.n;) {
			size_t j = i;
			uint32_t have = 0;
			while (j < l.n && l.ents[j].oid_len == l.ents[i].oid_len &&
			       !memcmp(l.ents[j].oid, l.ents[i].oid, l.ents[i].oid_len))
				have |= 1u << l.ents[j++].slot;
			pg_stripes++;
			uint32_t lack = up_mask & ~have;
			if (lack) {
				pg_incomplete++;
				pg_missing += (uint64_t)__builtin_popcount(lack);
			}
			i = j;
		}
		stripes += pg_stripes;
		incomplete += pg_incomplete;
		shards_missing += pg_missing;
		if (!pg_incomplete)
			continue;
		if (x->json)
			fprintf(x->out, "%s{\"pg\":%zu,\"stripes\":%" PRIu64 ",\"incomplete\":%" PRIu64
				",\"shards_missing\":%" PRIu64 "}", first ? "" : ",", pg, pg_stripes,
				pg_incomplete, pg_missing);
		else
			fprintf(x->out, "pg %zu: %" PRIu64 " of %" PRIu64 " stripes lack %" PRIu64 " shards\n",
				pg, pg_incomplete, pg_stripes, pg_missing);
		first = false;
	}
	if (x->json)
		fprintf(x->out, "],\"stripes\":%" PRIu64 ",\"incomplete\":%" PRIu64 ",\"shards_missing\":%"
			PRIu64 ",\"pgs_unreachable\":%" PRIu64 "}\n", stripes, incomplete,
			shards_missing, unreachable);
	else
		fprintf(x->out, "stripes: %" PRIu64 "   incomplete: %" PRIu64 "   shards missing: %" PRIu64
			"   pgs unreachable: %" PRIu64 "\n", stripes, incomplete, shards_missing,
			unreachable);
	for (size_t i = 0; i < n_ch; i++)
		if (ch[i])
			rpc_channel_close(ch[i]);
	free(ch);
	free(l.ents);
	protobuf_c_message_free_unpacked(&h->base, NULL);
	return incomplete || unreachable ? 3 : 0;
}

int admin_pg(const struct admin_ctx *x, int nargs, char **args)
{
	if (nargs != 1)
		return ADMIN_UNKNOWN;
	if (!strcmp(args[0], "ls"))
		return ls(x);
	if (!strcmp(args[0], "check"))
		return check(x);
	return ADMIN_UNKNOWN;
}
