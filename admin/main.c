/*
 * admin_main.c — iolake-admin: operator commands against the meta group
 * through meta/client.h.
 *
 *   iolake-admin (--meta ADDR,... | --data-dir AIO_DIR) [--json] [--timeout DUR] COMMAND
 *     cluster status        every member's own view (asked directly)
 *     cluster wait-healthy [S]  until healthy (admin/health.c)
 *     osd ls | pg ls        the cluster map; pg ls with each PG's state (PgStats)
 *     osd out|in|rm ID      operator verbs (admin_out through SetOsdState; RemoveOsd)
 *     osd df                each OSD's space, from the OSD itself
 *     osd scrub-status      each OSD's scrubber and the bad shards it found
 *     pg check              stripes lacking a shard on an up slot's OSD (asked of the OSDs)
 *     user add NAME [--access-key K --secret-key S] | user ls | user rm NAME
 *     user show NAME | grant | revoke | admin | rekey, cluster init-key (admin/user.c)
 *     bucket ls
 *     member add ID@HOST:PORT | member rm ID
 *     ca init | ca issue      the cluster CA for mutual TLS on RPC (admin/ca.c)
 *     api METHOD PATH [BODY]  one call to the admin HTTP API (--data-dir only:
 *                           its URL from aio.json, signed with the root key)
 *
 * --data-dir finds a local iolake-aio by AIO_DIR/aio.json (admin/aio.h):
 * its meta admin address stands for --meta; a missing or stale file (aio
 * not running) is exit 2 with a line saying which.
 *
 * Output is a table for people, or JSON with --json. Exit 0 on success,
 * 1 when the cluster refused or could not be reached (one line on stderr
 * says why), 2 on bad usage. Secrets are printed only by `user add`, once.
 *
 * Single-threaded: calls are started on the main loop and the loop is run
 * until each answers (one call at a time, except cluster status).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <uv.h>

#include "common/err.h"
#include "common/flags.h"
#include "common/log.h"
#include "common/proto/osd_methods.h"
#include "common/rpc.h"
#include "admin/aio.h"
#include "admin/ca.h"
#include "common/rpc_tls.h"
#include "admin/http.h"
#include "admin/member.h"
#include "meta/client.h"
#include "admin/health.h"
#include "admin/quota.h"
#include "admin/range.h"
#include "admin/user.h"
#include "meta/rootkey.h"
#include "osd/client.h"
#include "proto/osd.pb-c.h"

static uv_loop_t loop;
static struct meta_client *cli;
static bool json;

/* ------------------------------------------------------ synchronous calls */

struct wait {
	bool done;
	int err;
	ProtobufCMessage *resp;        /* owned copy */
	Iolake__Meta__OpResult *res;   /* submits: owned copy */
};

static ProtobufCMessage *copy_msg(const ProtobufCMessage *m)
{
	if (!m)
		return NULL;
	size_t len = protobuf_c_message_get_packed_size(m);
	uint8_t *buf = malloc(len ? len : 1);
	if (!buf)
		return NULL;
	protobuf_c_message_pack(m, buf);
	ProtobufCMessage *c = protobuf_c_message_unpack(m->descriptor, NULL, len, buf);
	free(buf);
	return c;
}

static void on_call(void *ud, int err, const ProtobufCMessage *resp)
{
	struct wait *w = ud;
	w->done = true;
	w->err = err;
	if (!err)
		w->resp = copy_msg(resp);
}

static void on_submit(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct wait *w = ud;
	w->done = true;
	w->err = err;
	if (!err)
		w->res = (Iolake__Meta__OpResult *)copy_msg(&res->base);
}

static void run_until(bool *done)
{
	while (!*done)
		uv_run(&loop, UV_RUN_ONCE);
}

static void die_unreachable(int err)
{
	fprintf(stderr, "iolake-admin: error: no meta leader answered (%s); tried:", iol_strerror(err));
	for (size_t i = 0; i < meta_client_member_count(cli); i++)
		fprintf(stderr, " %s", meta_client_member(cli, i));
	fprintf(stderr, "\n");
	exit(1);
}

static ProtobufCMessage *call(unsigned method, const ProtobufCMessage *req)
{
	struct wait w = { 0 };
	int rc = meta_client_call(cli, method, req, on_call, &w);
	if (rc) {
		fprintf(stderr, "iolake-admin: error: %s\n", iol_strerror(rc));
		exit(1);
	}
	run_until(&w.done);
	if (w.err)
		die_unreachable(w.err);
	return w.resp;
}

/* A call whose failure the command handles itself (an older meta without
 * the method, no leader): NULL and *err instead of exiting. */
static ProtobufCMessage *try_call(unsigned method, const ProtobufCMessage *req, int *err)
{
	struct wait w = { 0 };
	*err = meta_client_call(cli, method, req, on_call, &w);
	if (*err)
		return NULL;
	run_until(&w.done);
	*err = w.err;
	return w.resp;
}

static Iolake__Meta__OpResult *submit(const Iolake__Meta__Op *op)
{
	struct wait w = { 0 };
	int rc = meta_client_submit(cli, op, on_submit, &w);
	if (rc) {
		fprintf(stderr, "iolake-admin: error: %s\n", iol_strerror(rc));
		exit(1);
	}
	run_until(&w.done);
	if (w.err)
		die_unreachable(w.err);
	return w.res;
}

static const char *status_name(Iolake__Meta__Status s)
{
	const ProtobufCEnumValue *v =
		protobuf_c_enum_descriptor_get_value(&iolake__meta__status__descriptor, (int)s);
	return v ? v->name + 7 : "UNKNOWN";   /* drop "STATUS_" */
}

static int check_result(const char *what, const Iolake__Meta__OpResult *r)
{
	if (r->status == IOLAKE__META__STATUS__STATUS_OK)
		return 0;
	fprintf(stderr, "iolake-admin: error: %s: %s\n", what, status_name(r->status));
	return 1;
}

/* A JSON string (names here are plain; escape the few that matter). */
static void jstr(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

/* 1536 -> "1.5 KiB" (binary units, one decimal). */
static const char *human_bytes(uint64_t v, char out[32])
{
	static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double d = (double)v;
	int i = 0;
	while (d >= 1024 && i < 5) {
		d /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(out, 32, "%" PRIu64 " B", v);
	else
		snprintf(out, 32, "%.1f %s", d, u[i]);
	return out;
}

/* Seconds as "45s", "12m03s", "3h07m", "2d04h"; "-" for 0 (done or no rate). */
static const char *human_eta(uint64_t s, char out[32])
{
	if (!s)
		snprintf(out, 32, "-");
	else if (s < 60)
		snprintf(out, 32, "%" PRIu64 "s", s);
	else if (s < 3600)
		snprintf(out, 32, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else if (s < 86400)
		snprintf(out, 32, "%" PRIu64 "h%02" PRIu64 "m", s / 3600, s % 3600 / 60);
	else
		snprintf(out, 32, "%" PRIu64 "d%02" PRIu64 "h", s / 86400, s % 86400 / 3600);
	return out;
}

static const char *human_rate(uint64_t bps, char out[40])
{
	char b[32];
	if (!bps)
		snprintf(out, 40, "-");
	else
		snprintf(out, 40, "%s/s", human_bytes(bps, b));
	return out;
}

/* The PG summary of cluster status (from the leader's PgStats). */
static void pg_summary_json(const Iolake__Meta__PgStatsResponse *ps)
{
	printf(",\"pg_states\":{");
	for (size_t i = 0; ps && i < ps->n_counts; i++) {
		printf(i ? "," : "");
		jstr(ps->counts[i]->state);
		printf(":%u", ps->counts[i]->pgs);
	}
	printf("}");
	if (ps)
		printf(",\"recovery\":{\"stripes_missing\":%" PRIu64 ",\"bytes_missing\":%" PRIu64
		       ",\"rate_bytes_per_s\":%" PRIu64 ",\"eta_s\":%" PRIu64
		       ",\"unfound\":%" PRIu64 "}",
		       ps->stripes_missing, ps->bytes_missing, ps->rate_bytes_per_s, ps->eta_s,
		       ps->unfound);
	else
		printf(",\"recovery\":null");
}

static void pg_summary_text(const Iolake__Meta__PgStatsResponse *ps, const char *why)
{
	if (!ps) {
		printf("pgs: not known (%s)\n", why);
		return;
	}
	printf("pgs:");
	uint32_t total = 0;
	for (size_t i = 0; i < ps->n_counts; i++) {
		printf("%s %u %s", i ? "," : "", ps->counts[i]->pgs, ps->counts[i]->state);
		total += ps->counts[i]->pgs;
	}
	printf("%s(%u total)\n", ps->n_counts ? "   " : " ", total);
	char b[32], r[40], e[32];
	if (ps->bytes_missing || ps->stripes_missing)
		printf("recovery: %" PRIu64 " stripes, %s left at %s, eta %s\n", ps->stripes_missing,
		       human_bytes(ps->bytes_missing, b), human_rate(ps->rate_bytes_per_s, r),
		       human_eta(ps->eta_s, e));
	else
		printf("recovery: nothing left to rebuild\n");
	if (ps->unfound)
		printf("unfound: %" PRIu64 " stripes with fewer than k shards\n", ps->unfound);
}

/* Page on after lk: copy it into after, its object id into after_oid
 * (OSD_OID_MAX bytes, the caller's, outliving the next request). */
static void set_after(Iolake__Osd__ShardKey *after, uint8_t *after_oid,
		      const Iolake__Osd__ShardKey *lk)
{
	after->pg = lk->pg;
	after->shard = lk->shard;
	after->object_id.len = lk->object_id.len < OSD_OID_MAX ? lk->object_id.len : OSD_OID_MAX;
	memcpy(after_oid, lk->object_id.data, after->object_id.len);
	after->object_id.data = after_oid;
}

/* An OSD's channel, or NULL: an aio's OSDs ("local:osd-N") live inside
 * its process, where no other process can reach them (their calls would
 * wait for a listener that never comes); the admin HTTP API, served in
 * that process, can. Said once. */
static struct rpc_channel *osd_open(const char *addr)
{
	static bool told;
	if (!strncmp(addr, "local:", 6)) {
		if (!told)
			fprintf(stderr, "iolake-admin: the OSDs of an iolake-aio run inside its "
				"process and answer only there; ask its admin API: iolake-admin "
				"--data-dir DIR api GET osds\n");
		told = true;
		return NULL;
	}
	return rpc_channel_open(&loop, addr, NULL);
}

/* ------------------------------------------------------- cluster status */

struct member_status {
	struct wait w;
	Iolake__Meta__StatusResponse *st;
};

static int cmd_cluster_status(void)
{
	size_t n = meta_client_member_count(cli);
	struct member_status *ms = calloc(n, sizeof(*ms));
	Iolake__Meta__StatusRequest req = IOLAKE__META__STATUS_REQUEST__INIT;
	for (size_t i = 0; i < n; i++)
		if (meta_client_call_member(cli, i, META_M_STATUS, &req.base, on_call, &ms[i].w))
			ms[i].w.done = true, ms[i].w.err = -ENOMEM;
	size_t answered = 0, leaders = 0, leader_at = n;
	uint64_t epoch = 0;
	for (size_t i = 0; i < n; i++) {
		run_until(&ms[i].w.done);
		ms[i].st = (Iolake__Meta__StatusResponse *)ms[i].w.resp;
		if (ms[i].st) {
			answered++;
			if (!strcmp(ms[i].st->role, "leader")) {
				leaders++;
				leader_at = i;
				epoch = ms[i].st->epoch;
			} else if (!leaders && ms[i].st->epoch > epoch) {
				epoch = ms[i].st->epoch;
			}
		}
	}
	if (!answered) {
		fprintf(stderr, "iolake-admin: error: no meta member answered; tried:");
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, " %s", meta_client_member(cli, i));
		fprintf(stderr, "\n");
		free(ms);
		return 1;
	}
	/* PG states are the leader's memory: ask it, once, no retries (an
	 * older meta without PgStats, or no leader: the summary says so). */
	Iolake__Meta__PgStatsResponse *ps = NULL;
	const char *ps_why = "no leader";
	if (leader_at < n) {
		struct wait w = { 0 };
		Iolake__Meta__PgStatsRequest preq = IOLAKE__META__PG_STATS_REQUEST__INIT;
		if (meta_client_call_member(cli, leader_at, META_M_PG_STATS, &preq.base, on_call, &w))
			w.done = true, w.err = -ENOMEM;
		run_until(&w.done);
		ps = (Iolake__Meta__PgStatsResponse *)w.resp;
		ps_why = w.err ? iol_strerror(w.err) : "no cluster map";
		if (ps && ps->status != IOLAKE__META__STATUS__STATUS_OK) {
			protobuf_c_message_free_unpacked(&ps->base, NULL);
			ps = NULL;
		}
	}
	if (json) {
		printf("{\"epoch\":%" PRIu64 ",\"leaders\":%zu", epoch, leaders);
		pg_summary_json(ps);
		printf(",\"members\":[");
		for (size_t i = 0; i < n; i++) {
			const Iolake__Meta__StatusResponse *s = ms[i].st;
			printf("%s{\"address\":", i ? "," : "");
			jstr(meta_client_member(cli, i));
			if (!s) {
				printf(",\"role\":\"down\"}");
				continue;
			}
			printf(",\"id\":%" PRIu64 ",\"role\":", s->id);
			jstr(s->role);
			printf(",\"term\":%" PRIu64 ",\"commit_index\":%" PRIu64
			       ",\"applied_index\":%" PRIu64 ",\"leader_id\":%" PRIu64
			       ",\"epoch\":%" PRIu64 ",\"state_applied_index\":%" PRIu64
			       ",\"state_digest\":",
			       s->term, s->commit_index, s->applied_index, s->leader_id, s->epoch,
			       s->state_applied_index);
			jstr(s->state_digest);
			printf(",\"snapshot_restores\":%" PRIu64 ",\"snapshot_installing\":%s"
			       ",\"gc_queue\":%" PRIu64 ",\"configuration\":[",
			       s->snapshot_restores, s->snapshot_installing ? "true" : "false",
			       s->gc_queue);
			for (size_t j = 0; j < s->n_members; j++) {
				printf("%s{\"id\":%" PRIu64 ",\"address\":", j ? "," : "",
				       s->members[j]->id);
				jstr(s->members[j]->address);
				printf(",\"voter\":%s}", s->members[j]->voter ? "true" : "false");
			}
			printf("]}");
		}
		printf("]}\n");
	} else {
		printf("%-4s %-22s %-10s %8s %12s %12s  %s\n", "ID", "ADDRESS", "ROLE", "TERM",
		       "COMMIT", "APPLIED", "STATE DIGEST");
		const Iolake__Meta__StatusResponse *conf = NULL;
		for (size_t i = 0; i < n; i++) {
			const Iolake__Meta__StatusResponse *s = ms[i].st;
			if (!s) {
				printf("%-4s %-22s %-10s %8s %12s %12s  %s\n", "-",
				       meta_client_member(cli, i), "down", "-", "-", "-", "-");
				continue;
			}
			if (!conf || !strcmp(s->role, "leader"))
				conf = s;
			/* The digest's first 16 hex digits and the index it covers. */
			printf("%-4" PRIu64 " %-22s %-10s %8" PRIu64 " %12" PRIu64 " %12" PRIu64
			       "  %.16s@%" PRIu64 "\n",
			       s->id, meta_client_member(cli, i), s->role, s->term, s->commit_index,
			       s->applied_index, *s->state_digest ? s->state_digest : "-",
			       s->state_applied_index);
		}
		printf("map epoch: %" PRIu64 "   leaders: %zu   members answering: %zu/%zu\n", epoch,
		       leaders, answered, n);
		printf("configuration (member %" PRIu64 "'s view):", conf->id);
		for (size_t j = 0; j < conf->n_members; j++)
			printf(" %" PRIu64 "@%s%s", conf->members[j]->id, conf->members[j]->address,
			       conf->members[j]->voter ? "" : "(non-voter)");
		printf("\n");
		printf("shard GC queue (member %" PRIu64 "'s view): %" PRIu64 " entries\n", conf->id,
		       conf->gc_queue);
		pg_summary_text(ps, ps_why);
	}
	if (ps)
		protobuf_c_message_free_unpacked(&ps->base, NULL);
	for (size_t i = 0; i < n; i++)
		if (ms[i].st)
			protobuf_c_message_free_unpacked(&ms[i].st->base, NULL);
	free(ms);
	return 0;
}

/* ------------------------------------------------------------ map */

static Iolake__Meta__ClusterMap *get_map(Iolake__Meta__GetMapResponse **holder)
{
	Iolake__Meta__GetMapRequest req = IOLAKE__META__GET_MAP_REQUEST__INIT;
	*holder = (Iolake__Meta__GetMapResponse *)call(META_M_GET_MAP, &req.base);
	if ((*holder)->status != IOLAKE__META__STATUS__STATUS_OK || !(*holder)->map) {
		fprintf(stderr, "iolake-admin: error: no cluster map yet (%s)\n",
			status_name((*holder)->status));
		exit(1);
	}
	return (*holder)->map;
}

static int cmd_osd_ls(void)
{
	Iolake__Meta__GetMapResponse *h;
	Iolake__Meta__ClusterMap *m = get_map(&h);
	if (json) {
		printf("{\"epoch\":%" PRIu64 ",\"osds\":[", m->epoch);
		for (size_t i = 0; i < m->n_osds; i++) {
			const Iolake__Meta__OsdInfo *o = m->osds[i];
			printf("%s{\"id\":%u,\"addr\":", i ? "," : "", o->id);
			jstr(o->addr);
			printf(",\"host\":");
			jstr(o->host);
			printf(",\"weight\":%u,\"up\":%s,\"in\":%s,\"admin_out\":%s"
			       ",\"capacity_bytes\":%" PRIu64 "}",
			       o->weight, o->up ? "true" : "false", o->in ? "true" : "false",
			       o->admin_out ? "true" : "false", o->capacity_bytes);
		}
		printf("]}\n");
	} else {
		/* IN: "out(admin)" while an operator's `osd out` holds it out */
		printf("%-6s %-22s %-16s %6s %-5s %-10s\n", "ID", "ADDRESS", "HOST", "WEIGHT", "UP",
		       "IN");
		for (size_t i = 0; i < m->n_osds; i++) {
			const Iolake__Meta__OsdInfo *o = m->osds[i];
			printf("%-6u %-22s %-16s %6u %-5s %-10s\n", o->id, o->addr, o->host, o->weight,
			       o->up ? "up" : "down",
			       o->admin_out ? "out(admin)" : o->in ? "in" : "out");
		}
		printf("map epoch: %" PRIu64 "   osds: %zu\n", m->epoch, m->n_osds);
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
		c->st = (Iolake__Osd__StatusResponse *)copy_msg(res->resp);
	(*c->left)--;
}

static void df_row(const Iolake__Meta__OsdInfo *o, const struct df_call *c, bool first)
{
	const Iolake__Osd__StatusResponse *st = c->st;
	if (json) {
		printf("%s{\"id\":%u,\"addr\":", first ? "" : ",", o->id);
		jstr(o->addr);
		if (!st) {
			printf(",\"error\":");
			jstr(rpc_status_name(c->status));
			printf("}");
			return;
		}
		printf(",\"total_bytes\":%" PRIu64 ",\"used_bytes\":%" PRIu64
		       ",\"reserved_bytes\":%" PRIu64 ",\"free_bytes\":%" PRIu64
		       ",\"inline_bytes\":%" PRIu64 ",\"puts\":%" PRIu64 ",\"deletes\":%" PRIu64 "}",
		       st->total_bytes, st->used_bytes, st->reserved_bytes, st->free_bytes,
		       st->inline_bytes, st->puts, st->deletes);
		return;
	}
	if (!st) {
		printf("%-6u %-22s %s\n", o->id, o->addr, rpc_status_name(c->status));
		return;
	}
	printf("%-6u %-22s %14" PRIu64 " %14" PRIu64 " %14" PRIu64 " %12" PRIu64 "\n", o->id,
	       o->addr, st->total_bytes, st->used_bytes, st->free_bytes, st->inline_bytes);
}

static int cmd_osd_df(void)
{
	Iolake__Meta__GetMapResponse *h;
	Iolake__Meta__ClusterMap *m = get_map(&h);
	size_t n = m->n_osds < OSD_DF_MAX ? m->n_osds : OSD_DF_MAX;
	struct df_call *calls = calloc(n ? n : 1, sizeof(*calls));
	struct rpc_channel **ch = calloc(n ? n : 1, sizeof(*ch));
	if (!calls || !ch) {
		fprintf(stderr, "iolake-admin: error: out of memory\n");
		exit(1);
	}
	unsigned left = 0;
	for (size_t i = 0; i < n; i++) {
		calls[i].left = &left;
		ch[i] = osd_open(m->osds[i]->addr);
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
		uv_run(&loop, UV_RUN_ONCE);
	if (json)
		printf("{\"epoch\":%" PRIu64 ",\"osds\":[", m->epoch);
	else
		printf("%-6s %-22s %14s %14s %14s %12s\n", "ID", "ADDRESS", "TOTAL", "USED", "FREE",
		       "INLINE");
	for (size_t i = 0; i < n; i++)
		df_row(m->osds[i], &calls[i], i == 0);
	if (json)
		printf("]}\n");
	for (size_t i = 0; i < n; i++) {
		if (ch[i])
			rpc_channel_close(ch[i]);
		if (calls[i].st)
			protobuf_c_message_free_unpacked(&calls[i].st->base, NULL);
	}
	free(ch);
	free(calls);
	protobuf_c_message_free_unpacked(&h->base, NULL);
	return 0;
}

/* ------------------------------------------------------- osd scrub-status */

/* Each OSD of the map in turn: its Status (scrub counters), then every
 * page of ListBadShards (method 7, service Osd order). */
#define SCRUB_PAGE 1000
#define SCRUB_BAD_MAX 100000

struct osd_wait {
	bool done;
	int status;
	ProtobufCMessage *resp;  /* owned copy; NULL unless OK */
};

static void on_osd_call(void *ud, const struct rpc_result *res)
{
	struct osd_wait *w = ud;
	w->done = true;
	w->status = res->status;
	if (res->status == RPC_OK)
		w->resp = copy_msg(res->resp);
}

static int osd_call(struct rpc_channel *ch, int method, const ProtobufCMessage *req,
		    ProtobufCMessage **resp)
{
	struct osd_wait w = { 0 };
	struct rpc_call_opts co = { .timeout_ms = 3000 };
	rpc_call(ch, OSD_SVC, method, req, NULL, &co, on_osd_call, &w);
	while (!w.done)
		uv_run(&loop, UV_RUN_ONCE);
	*resp = w.resp;
	return w.status;
}

static void bad_row(const Iolake__Meta__OsdInfo *o, const Iolake__Osd__BadShard *b, bool first)
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
	if (json) {
		printf("%s{\"pg\":%u,\"object_id\":", first ? "" : ",", pg);
		char oid[OSD_OID_MAX * 4 + 1];
		size_t n = 0;
		for (size_t i = 0; i < oid_len; i++)
			n += (size_t)snprintf(oid + n, sizeof(oid) - n,
					      oidb[i] >= 0x20 && oidb[i] < 0x7f ? "%c" : "\\x%02x",
					      oidb[i]);
		oid[n] = 0;
		jstr(oid);
		printf(",\"shard\":%u,\"name\":", shard);
		jstr(name);
		printf(",\"kind\":");
		jstr(b->kind);
		printf(",\"bad_offset\":%" PRIu64 ",\"bad_length\":%" PRIu64 ",\"length\":%" PRIu64
		       ",\"found_unix_s\":%" PRIu64 "}",
		       b->bad_offset, b->bad_length, b->length, b->found_unix_s);
		return;
	}
	printf("  osd %u: %s: %s, bytes %" PRIu64 "+%" PRIu64 " of %" PRIu64 ", found at %" PRIu64
	       "\n", o->id, name, b->kind, b->bad_offset, b->bad_length, b->length,
	       b->found_unix_s);
}

/* One OSD: a row (table) or an object (JSON); bad shards listed after the
 * table by the caller in table mode, so rows here print them in JSON only. */
static size_t scrub_osd(const Iolake__Meta__OsdInfo *o, bool first, bool list)
{
	size_t seen = 0;
	struct rpc_channel *ch = osd_open(o->addr);
	Iolake__Osd__StatusResponse *st = NULL;
	int rc = RPC_INVALID_ARGUMENT;
	if (ch) {
		Iolake__Osd__StatusRequest q = IOLAKE__OSD__STATUS_REQUEST__INIT;
		rc = osd_call(ch, OSD_M_STATUS, &q.base, (ProtobufCMessage **)&st);
	}
	if (!st) {
		if (json) {
			printf("%s{\"id\":%u,\"addr\":", first ? "" : ",", o->id);
			jstr(o->addr);
			printf(",\"error\":");
			jstr(rpc_status_name(rc));
			printf("}");
		} else if (!list) {
			printf("%-6u %-22s %s\n", o->id, o->addr, rpc_status_name(rc));
		}
		if (ch)
			rpc_channel_close(ch);
		return 0;
	}
	if (json) {
		printf("%s{\"id\":%u,\"addr\":", first ? "" : ",", o->id);
		jstr(o->addr);
		printf(",\"scrub_rate\":%" PRIu64 ",\"passes\":%" PRIu64 ",\"shards\":%" PRIu64
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
		char deep[64];
		if (st->recovery_on && st->deep_scrub_interval_ms)
			snprintf(deep, sizeof(deep), "%" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%" PRIu64,
				 st->deep_pgs, st->deep_stripes, st->deep_repaired,
				 st->deep_inconsistent);
		else
			snprintf(deep, sizeof(deep), "off");
		printf("%-6u %-22s %-9s %12" PRIu64 " %8" PRIu64 " %12" PRIu64 " %14" PRIu64 " %8u %8"
		       PRIu64 "  %s\n", o->id, o->addr, state, st->scrub_rate, st->scrub_passes,
		       st->scrub_shards, st->scrub_bytes, st->scrub_position_pg, st->scrub_errors,
		       deep);
	}
	protobuf_c_message_free_unpacked(&st->base, NULL);
	/* JSON: always list; table: only in the second (listing) round. */
	if (json || list) {
		Iolake__Osd__ShardKey after = IOLAKE__OSD__SHARD_KEY__INIT;
		uint8_t after_oid[OSD_OID_MAX];
		bool have_after = false, firstb = true;
		while (seen < SCRUB_BAD_MAX) {
			Iolake__Osd__ListBadShardsRequest q = IOLAKE__OSD__LIST_BAD_SHARDS_REQUEST__INIT;
			q.limit = SCRUB_PAGE;
			if (have_after)
				q.after = &after;
			Iolake__Osd__ListBadShardsResponse *r = NULL;
			rc = osd_call(ch, OSD_M_LIST_BAD, &q.base, (ProtobufCMessage **)&r);
			if (!r) {
				if (!json)
					printf("  osd %u: listing bad shards failed: %s\n", o->id,
					       rpc_status_name(rc));
				break;
			}
			for (size_t i = 0; i < r->n_shards; i++, firstb = false)
				bad_row(o, r->shards[i], firstb);
			seen += r->n_shards;
			bool more = r->more && r->n_shards > 0;
			if (more) {
				set_after(&after, after_oid, r->shards[r->n_shards - 1]->key);
				have_after = true;
			}
			protobuf_c_message_free_unpacked(&r->base, NULL);
			if (!more)
				break;
		}
		if (json)
			printf("]}");
	}
	rpc_channel_close(ch);
	return seen;
}

static int cmd_osd_scrub_status(void)
{
	Iolake__Meta__GetMapResponse *h;
	Iolake__Meta__ClusterMap *m = get_map(&h);
	size_t n = m->n_osds < OSD_DF_MAX ? m->n_osds : OSD_DF_MAX;
	if (json) {
		printf("{\"epoch\":%" PRIu64 ",\"osds\":[", m->epoch);
		for (size_t i = 0; i < n; i++)
			scrub_osd(m->osds[i], i == 0, false);
		printf("]}\n");
	} else {
		printf("%-6s %-22s %-9s %12s %8s %12s %14s %8s %8s  %s\n", "ID", "ADDRESS", "SCRUB",
		       "RATE", "PASSES", "SHARDS", "BYTES", "PG", "ERRORS",
		       "DEEP PGS/STRIPES/REPAIRED/INCONSISTENT");
		for (size_t i = 0; i < n; i++)
			scrub_osd(m->osds[i], i == 0, false);
		printf("bad shards:\n");
		size_t bad = 0;
		for (size_t i = 0; i < n; i++)
			bad += scrub_osd(m->osds[i], i == 0, true);
		if (!bad)
			printf("  (none)\n");
	}
	protobuf_c_message_free_unpacked(&h->base, NULL);
	return 0;
}

/* ------------------------------------------------------------ osd verbs */

static int parse_osd_id(const char *verb, const char *arg, uint32_t *id)
{
	char *end;
	unsigned long long v = strtoull(arg, &end, 10);
	if (!*arg || *end || v >= 0xFFFFFFFFull) {
		fprintf(stderr, "iolake-admin: osd %s: %s is not an OSD id\n", verb, arg);
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
static int cmd_osd_out_in(bool out, const char *arg)
{
	uint32_t id;
	if (parse_osd_id(out ? "out" : "in", arg, &id))
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
	Iolake__Meta__OpResult *r = submit(&op);
	char what[48];
	snprintf(what, sizeof(what), "osd %s %u", out ? "out" : "in", id);
	int rc = check_result(what, r);
	if (!rc && json)
		printf("{\"osd\":%u,\"in\":%s,\"admin_out\":%s,\"epoch\":%" PRIu64 "}\n", id,
		       out ? "false" : "true", out ? "true" : "false", r->epoch);
	else if (!rc)
		printf("osd %u is %s (map epoch %" PRIu64 ")\n", id,
		       out ? "out, held out until `osd in`" : "in", r->epoch);
	protobuf_c_message_free_unpacked(&r->base, NULL);
	return rc;
}

/* osd rm ID: only a down and out OSD (its PGs moved when it went out). */
static int cmd_osd_rm(const char *arg)
{
	uint32_t id;
	if (parse_osd_id("rm", arg, &id))
		return 2;
	Iolake__Meta__GetMapResponse *h;
	Iolake__Meta__ClusterMap *m = get_map(&h);
	const Iolake__Meta__OsdInfo *o = NULL;
	for (size_t i = 0; i < m->n_osds; i++)
		if (m->osds[i]->id == id)
			o = m->osds[i];
	int rc = 0;
	if (!o) {
		fprintf(stderr, "iolake-admin: error: osd rm %u: no such OSD in the map\n", id);
		rc = 1;
	} else if (o->up || o->in) {
		fprintf(stderr,
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
	Iolake__Meta__OpResult *r = submit(&op);
	if (r->status == IOLAKE__META__STATUS__STATUS_CONFLICT) {
		/* it came back between the look and the op */
		fprintf(stderr, "iolake-admin: error: osd rm %u: the OSD is no longer down and out\n",
			id);
		rc = 1;
	} else {
		char what[32];
		snprintf(what, sizeof(what), "osd rm %u", id);
		rc = check_result(what, r);
	}
	if (!rc && json)
		printf("{\"removed\":%u,\"epoch\":%" PRIu64 "}\n", id, r->epoch);
	else if (!rc)
		printf("removed osd %u (map epoch %" PRIu64 ")\n", id, r->epoch);
	protobuf_c_message_free_unpacked(&r->base, NULL);
	return rc;
}

/* The map's PG table alone: what `pg ls` shows when the leader cannot
 * answer PgStats (a meta older than self-healing). */
static int pg_ls_map_only(const Iolake__Meta__ClusterMap *m)
{
	if (json)
		printf("{\"epoch\":%" PRIu64 ",\"k\":%u,\"m\":%u,\"pgs\":[", m->epoch, m->k, m->m);
	else
		printf("map epoch: %" PRIu64 "   pgs: %u   ec: %u+%u\n%-6s %s\n", m->epoch,
		       m->pg_count, m->k, m->m, "PG", "OSDS");
	for (size_t i = 0; i < m->n_pgs; i++) {
		const Iolake__Meta__PgEntry *p = m->pgs[i];
		if (json)
			printf("%s{\"pg\":%u,\"osds\":[", i ? "," : "", p->pg_id);
		else
			printf("%-6u ", p->pg_id);
		for (size_t j = 0; j < p->n_osds; j++) {
			if (json)
				printf(j ? ",%d" : "%d", p->osds[j] == 0xFFFFFFFFu ? -1 : (int)p->osds[j]);
			else if (p->osds[j] == 0xFFFFFFFFu)
				printf(j ? ",-" : "-");
			else
				printf(j ? ",%u" : "%u", p->osds[j]);
		}
		printf(json ? "]}" : "\n");
	}
	if (json)
		printf("]}\n");
	return 0;
}

static void pg_report_json(const Iolake__Meta__PgStat *p)
{
	const Iolake__Meta__PgReport *r = p->report;
	if (!r) {
		printf("null");
		return;
	}
	printf("{\"valid\":%s,\"age_ms\":%" PRIu64 ",\"epoch\":%" PRIu64 ",\"state\":",
	       p->report_valid ? "true" : "false", p->report_age_ms, r->epoch);
	jstr(r->state);
	printf(",\"osds\":[");
	for (size_t j = 0; j < r->n_osds; j++)
		printf(j ? ",%d" : "%d", r->osds[j] == 0xFFFFFFFFu ? -1 : (int)r->osds[j]);
	printf("],\"up_mask\":%u,\"stripes\":%" PRIu64 ",\"stripes_missing\":%" PRIu64
	       ",\"bytes_missing\":%" PRIu64 ",\"stripes_done\":%" PRIu64 ",\"bytes_done\":%" PRIu64
	       ",\"rate_bytes_per_s\":%" PRIu64 ",\"unfound\":%" PRIu64 ",\"min_shards\":%u"
	       ",\"bad_shards\":%" PRIu64 ",\"scan_started_ms\":%" PRIu64
	       ",\"last_clean_ms\":%" PRIu64 "}",
	       r->up_mask, r->stripes, r->stripes_missing, r->bytes_missing, r->stripes_done,
	       r->bytes_done, r->rate_bytes_per_s, r->unfound, r->min_shards, r->bad_shards,
	       r->scan_started_ms, r->last_clean_ms);
}

/* One PG per line with its derived state (the leader's PgStats); the map
 * alone when the leader cannot answer it. Down OSDs are marked "7*", empty
 * slots "-"; MISSING and BYTES LEFT come from the primary's report. */
static int cmd_pg_ls(void)
{
	Iolake__Meta__GetMapResponse *h;
	Iolake__Meta__ClusterMap *m = get_map(&h);
	int err;
	Iolake__Meta__PgStatsRequest req = IOLAKE__META__PG_STATS_REQUEST__INIT;
	Iolake__Meta__PgStatsResponse *ps =
		(Iolake__Meta__PgStatsResponse *)try_call(META_M_PG_STATS, &req.base, &err);
	if (!ps || ps->status != IOLAKE__META__STATUS__STATUS_OK) {
		if (ps)
			protobuf_c_message_free_unpacked(&ps->base, NULL);
		else
			fprintf(stderr, "iolake-admin: PG states unavailable (%s): map only\n",
				iol_strerror(err));
		pg_ls_map_only(m);
		protobuf_c_message_free_unpacked(&h->base, NULL);
		return 0;
	}
	char b[32], r[40], e[32];
	if (json)
		printf("{\"epoch\":%" PRIu64 ",\"k\":%u,\"m\":%u,\"pgs\":[", ps->epoch, m->k, m->m);
	else
		printf("map epoch: %" PRIu64 "   pgs: %zu   ec: %u+%u\n"
		       "%-6s %-28s %-24s %7s %9s %11s %12s %8s\n",
		       ps->epoch, ps->n_pgs, m->k, m->m, "PG", "STATE", "OSDS", "PRIMARY", "MISSING",
		       "BYTES LEFT", "RATE", "ETA");
	for (size_t i = 0; i < ps->n_pgs; i++) {
		const Iolake__Meta__PgStat *p = ps->pgs[i];
		const Iolake__Meta__PgReport *rp = p->report;
		uint64_t smiss = rp ? rp->stripes_missing : 0, bmiss = rp ? rp->bytes_missing : 0;
		uint64_t rate = rp ? rp->rate_bytes_per_s : 0;
		if (json) {
			printf("%s{\"pg\":%u,\"state\":", i ? "," : "", p->pg);
			jstr(p->state);
			printf(",\"osds\":[");
			for (size_t j = 0; j < p->n_osds; j++)
				printf(j ? ",%d" : "%d",
				       p->osds[j] == 0xFFFFFFFFu ? -1 : (int)p->osds[j]);
			printf("],\"up\":[");
			for (size_t j = 0; j < p->n_osds; j++)
				printf("%s%s", j ? "," : "", p->up_mask & (1u << j) ? "true" : "false");
			printf("],\"primary\":%d,\"stripes_missing\":%" PRIu64 ",\"bytes_missing\":%" PRIu64
			       ",\"rate_bytes_per_s\":%" PRIu64 ",\"eta_s\":%" PRIu64 ",\"report\":",
			       p->primary == 0xFFFFFFFFu ? -1 : (int)p->primary, smiss, bmiss, rate,
			       p->eta_s);
			pg_report_json(p);
			printf("}");
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
		printf("%-6u %-28s %-24s %7s %9" PRIu64 " %11s %12s %8s\n", p->pg, p->state, osds, prim,
		       smiss, human_bytes(bmiss, b), human_rate(rate, r), human_eta(p->eta_s, e));
	}
	if (json) {
		printf("]");
		pg_summary_json(ps);
		printf("}\n");
	} else {
		pg_summary_text(ps, "");
	}
	protobuf_c_message_free_unpacked(&ps->base, NULL);
	protobuf_c_message_free_unpacked(&h->base, NULL);
	return 0;
}

/* ------------------------------------------------------------ pg check */

/* Every PG of the map: each up slot's OSD lists the PG (ListShards, all
 * pages, method 5); a stripe (pg, object id) is complete when every up
 * slot's OSD holds its own shard index. Independent of the OSDs' recovery
 * drivers (this is how tests and operators check their work). One PG's
 * listing in memory at a time. */
#define CHECK_PAGE 1000

struct check_ent {
	uint8_t oid[OSD_OID_MAX];
	uint8_t oid_len;
	uint8_t slot;
};

static int check_ent_cmp(const void *pa, const void *pb)
{
	const struct check_ent *a = pa, *b = pb;
	if (a->oid_len != b->oid_len)
		return a->oid_len < b->oid_len ? -1 : 1;
	int c = memcmp(a->oid, b->oid, a->oid_len);
	return c ? c : (int)a->slot - (int)b->slot;
}

static int cmd_pg_check(void)
{
	Iolake__Meta__GetMapResponse *h;
	Iolake__Meta__ClusterMap *m = get_map(&h);
	size_t n_ch = m->n_osds;
	struct rpc_channel **ch = calloc(n_ch ? n_ch : 1, sizeof(*ch));
	struct check_ent *ents = NULL;
	size_t n_ents = 0, cap = 0;
	uint64_t stripes = 0, incomplete = 0, shards_missing = 0, unreachable = 0;
	bool first = true;
	if (!ch) {
		fprintf(stderr, "iolake-admin: error: out of memory\n");
		exit(1);
	}
	if (json)
		printf("{\"epoch\":%" PRIu64 ",\"incomplete_pgs\":[", m->epoch);
	for (size_t pg = 0; pg < m->n_pgs; pg++) {
		const Iolake__Meta__PgEntry *p = m->pgs[pg];
		uint32_t up_mask = 0;
		n_ents = 0;
		bool failed = false;
		for (size_t slot = 0; slot < p->n_osds && slot < 32; slot++) {
			size_t oi = n_ch;
			for (size_t j = 0; j < n_ch; j++)
				if (m->osds[j]->id == p->osds[slot])
					oi = j;
			if (oi == n_ch || !m->osds[oi]->up)
				continue;
			up_mask |= 1u << slot;
			if (!ch[oi])
				ch[oi] = osd_open(m->osds[oi]->addr);
			Iolake__Osd__ShardKey after = IOLAKE__OSD__SHARD_KEY__INIT;
			uint8_t after_oid[OSD_OID_MAX];
			bool have_after = false;
			for (;;) {
				Iolake__Osd__ListShardsRequest q = IOLAKE__OSD__LIST_SHARDS_REQUEST__INIT;
				q.pg = (uint32_t)pg;
				q.limit = CHECK_PAGE;
				if (have_after)
					q.after = &after;
				Iolake__Osd__ListShardsResponse *r = NULL;
				int rc = ch[oi] ? osd_call(ch[oi], OSD_M_LIST, &q.base,
							   (ProtobufCMessage **)&r) : RPC_UNAVAILABLE;
				if (!r) {
					fprintf(stderr, "pg %zu: osd %u: %s\n", pg, m->osds[oi]->id,
						rpc_status_name(rc));
					failed = true;
					break;
				}
				for (size_t i = 0; i < r->n_shards; i++) {
					const Iolake__Osd__ShardKey *k = r->shards[i]->key;
					if (!k || k->shard != slot || !k->object_id.len ||
					    k->object_id.len > OSD_OID_MAX)
						continue;
					if (n_ents == cap) {
						cap = cap ? 2 * cap : 4096;
						ents = realloc(ents, cap * sizeof(*ents));
						if (!ents) {
							fprintf(stderr, "iolake-admin: error: out of memory\n");
							exit(1);
						}
					}
					struct check_ent *e = &ents[n_ents++];
					e->oid_len = (uint8_t)k->object_id.len;
					memcpy(e->oid, k->object_id.data, e->oid_len);
					e->slot = (uint8_t)slot;
				}
				bool more = r->more && r->n_shards;
				if (more) {
					set_after(&after, after_oid, r->shards[r->n_shards - 1]->key);
					have_after = true;
				}
				protobuf_c_message_free_unpacked(&r->base, NULL);
				if (!more)
					break;
			}
		}
		if (failed) {
			unreachable++;
			continue;
		}
		if (n_ents)
			qsort(ents, n_ents, sizeof(*ents), check_ent_cmp);
		uint64_t pg_stripes = 0, pg_incomplete = 0, pg_missing = 0;
		for (size_t i = 0; i < n_ents;) {
			size_t j = i;
			uint32_t have = 0;
			while (j < n_ents && ents[j].oid_len == ents[i].oid_len &&
			       !memcmp(ents[j].oid, ents[i].oid, ents[i].oid_len))
				have |= 1u << ents[j++].slot;
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
		if (json)
			printf("%s{\"pg\":%zu,\"stripes\":%" PRIu64 ",\"incomplete\":%" PRIu64
			       ",\"shards_missing\":%" PRIu64 "}", first ? "" : ",", pg, pg_stripes,
			       pg_incomplete, pg_missing);
		else
			printf("pg %zu: %" PRIu64 " of %" PRIu64 " stripes lack %" PRIu64 " shards\n",
			       pg, pg_incomplete, pg_stripes, pg_missing);
		first = false;
	}
	if (json)
		printf("],\"stripes\":%" PRIu64 ",\"incomplete\":%" PRIu64 ",\"shards_missing\":%"
		       PRIu64 ",\"pgs_unreachable\":%" PRIu64 "}\n", stripes, incomplete,
		       shards_missing, unreachable);
	else
		printf("stripes: %" PRIu64 "   incomplete: %" PRIu64 "   shards missing: %" PRIu64
		       "   pgs unreachable: %" PRIu64 "\n", stripes, incomplete, shards_missing,
		       unreachable);
	for (size_t i = 0; i < n_ch; i++)
		if (ch[i])
			rpc_channel_close(ch[i]);
	free(ch);
	free(ents);
	protobuf_c_message_free_unpacked(&h->base, NULL);
	return incomplete || unreachable ? 3 : 0;
}

/* ------------------------------------------------------------ users */

static void random_text(char *out, size_t n, const char *alphabet)
{
	size_t k = strlen(alphabet);
	uint8_t r[64];
	while (getrandom(r, n, 0) != (ssize_t)n)
		;
	for (size_t i = 0; i < n; i++)
		out[i] = alphabet[r[i] % k];   /* 256 % k bias: negligible for ids, see below */
	out[n] = 0;
}

/* `user add NAME [--access-key K --secret-key S]`: args after NAME. 0 and
 * *ak, *sk (NULL: generate), or 2 after printing what is wrong. */
static int user_add_args(int n, char **a, const char **ak, const char **sk)
{
	*ak = *sk = NULL;
	for (int i = 0; i < n; i++) {
		const char **dst = NULL, *v = NULL;
		const char *names[2] = { "--access-key", "--secret-key" };
		for (int k = 0; k < 2 && !dst; k++) {
			size_t l = strlen(names[k]);
			if (!strncmp(a[i], names[k], l) && (a[i][l] == '=' || !a[i][l])) {
				dst = k ? sk : ak;
				v = a[i][l] == '=' ? a[i] + l + 1 : (i + 1 < n ? a[++i] : NULL);
			}
		}
		if (!dst || !v) {
			fprintf(stderr, "user add: %s %s\n", dst ? "no value for" : "unknown option",
				a[i]);
			return 2;
		}
		*dst = v;
	}
	if (!*ak != !*sk) {
		fprintf(stderr, "user add: give both --access-key and --secret-key, or neither\n");
		return 2;
	}
	const char *why;
	if (*ak && rootkey_check(*ak, *sk, &why)) {
		fprintf(stderr, "user add: %s\n", why);
		return 2;
	}
	return 0;
}

static int cmd_user_add(const char *name, const char *given_ak, const char *given_sk)
{
	if (given_ak) {
		/* Refuse before the user is made: a key id in use stays its
		 * owner's (meta would answer EXISTS for the key alone). */
		Iolake__Meta__GetAccessKeyRequest q = IOLAKE__META__GET_ACCESS_KEY_REQUEST__INIT;
		q.access_key_id = (char *)given_ak;
		int err;
		ProtobufCMessage *m = try_call(META_M_GET_ACCESS_KEY, &q.base, &err);
		const Iolake__Meta__GetAccessKeyResponse *r = (const void *)m;
		bool taken = m && r->status == IOLAKE__META__STATUS__STATUS_OK && r->key;
		if (m)
			protobuf_c_message_free_unpacked(m, NULL);
		if (err && err != IOL_ENOT_FOUND)
			die_unreachable(err);
		if (taken) {
			fprintf(stderr, "add user: access key %s is already in use\n", given_ak);
			return 1;
		}
	}
	Iolake__Meta__User u = IOLAKE__META__USER__INIT;
	u.name = (char *)name;
	u.display_name = (char *)name;
	u.created_ms = (uint64_t)uv_now(&loop);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	u.created_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	Iolake__Meta__PutUser pu = IOLAKE__META__PUT_USER__INIT;
	pu.user = &u;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_PUT_USER;
	op.put_user = &pu;
	Iolake__Meta__OpResult *r = submit(&op);
	int rc = check_result("add user", r);
	protobuf_c_message_free_unpacked(&r->base, NULL);
	if (rc)
		return rc;

	/* AWS-shaped credentials: a 20-char id, a 40-char secret. The secret
	 * alphabet has 64 symbols (no modulo bias); the id's 32 neither. */
	char gen_id[21], gen_secret[41];
	random_text(gen_id + 3, 17, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567");
	memcpy(gen_id, "IOL", 3);
	random_text(gen_secret, 40,
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/");
	/* An imported key (a deployment's known credentials) must not take
	 * over another user's: meta answers EXISTS for a key id in use. */
	char *id = given_ak ? (char *)given_ak : gen_id;
	char *secret = given_sk ? (char *)given_sk : gen_secret;
	Iolake__Meta__AccessKey k = IOLAKE__META__ACCESS_KEY__INIT;
	k.access_key_id = id;
	k.secret_key = secret;
	k.user = (char *)name;
	k.created_ms = u.created_ms;
	Iolake__Meta__PutAccessKey pk = IOLAKE__META__PUT_ACCESS_KEY__INIT;
	pk.key = &k;
	Iolake__Meta__Op op2 = IOLAKE__META__OP__INIT;
	op2.body_case = IOLAKE__META__OP__BODY_PUT_ACCESS_KEY;
	op2.put_access_key = &pk;
	r = submit(&op2);
	rc = check_result("add access key", r);
	protobuf_c_message_free_unpacked(&r->base, NULL);
	if (rc)
		return rc;
	if (json) {
		printf("{\"user\":");
		jstr(name);
		printf(",\"access_key\":\"%s\",\"secret_key\":\"%s\"}\n", id, secret);
	} else {
		printf("user:       %s\naccess key: %s\nsecret key: %s\n", name, id, secret);
	}
	return 0;
}

static int cmd_user_rm(const char *name)
{
	Iolake__Meta__DeleteUser du = IOLAKE__META__DELETE_USER__INIT;
	du.name = (char *)name;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_DELETE_USER;
	op.delete_user = &du;
	Iolake__Meta__OpResult *r = submit(&op);
	int rc = check_result("remove user", r);
	protobuf_c_message_free_unpacked(&r->base, NULL);
	if (!rc && !json)
		printf("removed user %s\n", name);
	else if (!rc)
		printf("{\"removed\":true}\n");
	return rc;
}

static int cmd_bucket_ls(void)
{
	Iolake__Meta__ListBucketsRequest req = IOLAKE__META__LIST_BUCKETS_REQUEST__INIT;
	Iolake__Meta__ListBucketsResponse *resp =
		(Iolake__Meta__ListBucketsResponse *)call(META_M_LIST_BUCKETS, &req.base);
	if (json)
		printf("{\"buckets\":[");
	else
		printf("%-40s %-20s\n", "NAME", "OWNER");
	for (size_t i = 0; i < resp->n_buckets; i++) {
		const Iolake__Meta__Bucket *b = resp->buckets[i];
		if (json) {
			printf("%s{\"name\":", i ? "," : "");
			jstr(b->name);
			printf(",\"owner\":");
			jstr(b->owner);
			printf(",\"created_ms\":%" PRIu64 "}", b->created_ms);
		} else {
			printf("%-40s %-20s\n", b->name, b->owner);
		}
	}
	if (json)
		printf("]}\n");
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	return 0;
}

/* ------------------------------------------------------------ api */

/* `api METHOD PATH [BODY]` against a local aio's admin API, signed with
 * the root key (IOLAKE_ROOT_ACCESS_KEY / _SECRET_KEY, else
 * AIO_DIR/root-credentials, as aio takes them). Prints the answer's body;
 * exit 0 on 2xx, 1 otherwise. */
static int cmd_api(const char *dir, const struct admin_aio_info *aio, int n, char **a)
{
	if (n < 3 || n > 4) {
		fprintf(stderr, "iolake-admin: api METHOD PATH [BODY]\n");
		return 2;
	}
	if (!aio->admin_api[0]) {
		fprintf(stderr, "iolake-admin: error: %s/aio.json names no admin API\n", dir);
		return 1;
	}
	struct rootkey_creds c;
	char err[4800], path[4200];
	int rc = rootkey_from_env(&c, err, sizeof(err));
	if (rc == 0) {
		snprintf(path, sizeof(path), "%s/root-credentials", dir);
		rc = rootkey_from_file(path, &c, err, sizeof(err));
		if (rc == 0)
			snprintf(err, sizeof(err), "no root credentials: %s does not exist and "
				 "IOLAKE_ROOT_ACCESS_KEY is not set", path);
	}
	if (rc <= 0) {
		fprintf(stderr, "iolake-admin: error: %s\n", err);
		return 2;
	}
	struct admin_http_req r = { .url = aio->admin_api, .method = a[1], .path = a[2],
				    .body = n == 4 ? a[3] : NULL, .access_key = c.access_key,
				    .secret_key = c.secret_key,
				    .region = aio->region[0] ? aio->region : NULL };
	int status;
	char *body;
	size_t len;
	if (admin_http_call(&r, &status, &body, &len, err, sizeof(err))) {
		fprintf(stderr, "iolake-admin: error: %s\n", err);
		return 1;
	}
	fwrite(body, 1, len, stdout);
	if (len && body[len - 1] != '\n')
		putchar('\n');
	free(body);
	if (status < 200 || status > 299) {
		fprintf(stderr, "iolake-admin: error: HTTP %d\n", status);
		return 1;
	}
	return 0;
}

/* ------------------------------------------------------------ main */

static const char synopsis[] =
	"COMMAND\n\ncommands:\n"
	"  cluster status            each member: id, address, role, term, commit index,\n"
	"                            state digest; map epoch; the Raft configuration;\n"
	"                            the shard GC queue length; PGs per state, recovery\n"
	"                            left, rate and ETA\n"
	"  cluster wait-healthy [S]  wait (up to S seconds, default 600) until every\n"
	"                            member answers with a leader, every OSD is up and\n"
	"                            in, every PG active+clean: exit 0, else 1 (what a\n"
	"                            rolling restart waits for between nodes)\n"
	"  osd ls                    the OSDs of the map (IN says out(admin) while an\n"
	"                            operator holds one out)\n"
	"  osd out ID | osd in ID    take an OSD out and hold it out (its beats bring it\n"
	"                            up, not in) / clear that and take it in\n"
	"  osd rm ID                 remove a down and out OSD from the map\n"
	"  pg ls                     one line per PG: state, OSDs (7*: down), primary,\n"
	"                            stripes and bytes left, rate, ETA (the map alone\n"
	"                            from a meta without PG states)\n"
	"  osd df                    each OSD's space (its Status: total, used, free,\n"
	"                            inline bytes), asked directly\n"
	"  osd scrub-status          each OSD's scrubber (rate, passes, shards, bytes,\n"
	"                            position, errors), its deep scrub (PGs, stripes,\n"
	"                            repaired, inconsistent) and the bad shards it recorded\n"
	"  pg check                  asks each PG's up OSDs for their shards: stripes\n"
	"                            lacking a shard on an up slot (exit 3 if any)\n"
	"  user add NAME [--access-key K --secret-key S]\n"
	"                            prints the new access key and secret (generated,\n"
	"                            or the ones given: a deployment's known keys)\n"
	"  user ls | user show NAME | user rm NAME\n"
	"                            names, admin flag, key ids and grants (never secrets)\n"
	"  user grant NAME --bucket B (--read|--write|--full) | user revoke NAME --bucket B\n"
	"                            per-bucket access beyond the user's own buckets\n"
	"  user admin NAME on|off    an admin may do everything, as root\n"
	"  user rekey                seal every secret still stored in clear\n"
	"  cluster init-key --out FILE\n"
	"                            a new cluster key (mode 0600) for --secret-key-file\n"
	"  quota set (--bucket B | --user U) [--max-bytes N] [--max-objects N]\n"
	"                            a bucket's, or a user's over its buckets (0: no limit);\n"
	"                            writes past it get 403 QuotaExceeded\n"
	"  quota get (--bucket B | --user U) | quota clear (--bucket B | --user U)\n"
	"  bucket ls\n"
	"  range ls [--bucket B]     key ranges: id, bucket, start, end, group, its leader,\n"
	"                            objects, bytes, uploads (from the group)\n"
	"  range split BUCKET KEY    split the range holding KEY at KEY, moving the records\n"
	"                            of the right half to the group holding the fewest ranges\n"
	"  range merge BUCKET KEY    merge the range holding KEY with its right neighbour\n"
	"                            (into the left one's group)\n"
	"  member add ID@HOST:PORT | member rm ID\n"
	"  ca init --dir DIR | ca issue --dir DIR --name N [--ip A,..] [--dns H,..] --out PREFIX\n"
	"                            the cluster CA and node certificates for --rpc-tls-*\n"
	"  api METHOD PATH [BODY]    one call to the admin HTTP API (with --data-dir:\n"
	"                            the URL from aio.json, signed with the root key);\n"
	"                            PATH \"cluster\" is /api/v1/cluster\n";

int main(int argc, char **argv)
{
	struct flag_list members = { 0 };
	uint64_t timeout_ms = 10000;
	const char *aio_dir = NULL;
	struct rpc_tls_files tlsf = { 0 };
	const struct flag_spec specs[] = {
		RPC_TLS_FLAGS(tlsf),
		{ .name = "meta", .type = FLAG_LIST, .dst = &members,
		  .metavar = "ADDR,...", .help = "meta members (any of them)" },
		{ .name = "data-dir", .type = FLAG_STRING, .dst = &aio_dir, .metavar = "AIO_DIR",
		  .help = "a local iolake-aio's data dir: its meta, from AIO_DIR/aio.json" },
		{ .name = "json", .type = FLAG_BOOL, .dst = &json, .help = "JSON output" },
		{ .name = "timeout", .type = FLAG_DURATION, .dst = &timeout_ms, .min = 100,
		  .max = 3600000, .help = "give up on a command after this long" },
		{ 0 }
	};
	char err[256];
	int pos;
	int rc = flags_parse(specs, argc, argv, &pos, err, sizeof(err));
	if (rc == FLAGS_HELP) {
		flags_usage(stdout, argv[0], synopsis, specs);
		return 0;
	}
	if (rc < 0) {
		fprintf(stderr, "%s: %s\n", argv[0], err);
		return 2;
	}
	int nargs = argc - pos;
	char **a = argv + pos;
	if (nargs < 2) {
		flags_usage(stderr, argv[0], synopsis, specs);
		return 2;
	}
	if (!strcmp(a[0], "ca")) {
		rc = admin_ca(nargs - 1, a + 1, stdout, stderr);
		flags_free(specs);
		return rc;
	}
	if (!strcmp(a[0], "cluster") && !strcmp(a[1], "init-key")) {
		rc = admin_cluster_init_key(nargs - 2, a + 2, stdout, stderr);
		flags_free(specs);
		return rc;
	}
	if (!members.n == !aio_dir) {
		fprintf(stderr, "%s: give --meta ADDR,... or --data-dir AIO_DIR (one of them)\n",
			argv[0]);
		return 2;
	}
	struct admin_aio_info aio;
	const char *aio_meta[1] = { aio.meta_admin };
	if (aio_dir) {
		char why[8192];
		if (admin_aio_find(aio_dir, &aio, why, sizeof(why))) {
			fprintf(stderr, "iolake-admin: error: %s\n", why);
			return 2;
		}
	}
	if (!strcmp(a[0], "api")) {
		if (!aio_dir) {
			fprintf(stderr, "%s: api needs --data-dir AIO_DIR\n", argv[0]);
			return 2;
		}
		rc = cmd_api(aio_dir, &aio, nargs, a);
		flags_free(specs);
		return rc;
	}
	log_set_level(LOG_LEVEL_ERROR);
	if (rpc_tls_setup(&tlsf, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", argv[0], err);
		return 2;
	}
	uv_loop_init(&loop);
	struct meta_client_opts o = {
		.members = aio_dir ? aio_meta : (const char *const *)members.items,
		.n_members = aio_dir ? 1 : members.n,
		.attempt_timeout_ms = 2000,
		.retry_for_ms = (uint32_t)timeout_ms,
	};
	rc = meta_client_new(&loop, &o, &cli);
	if (rc) {
		fprintf(stderr, "%s: flag --meta: %s\n", argv[0], iol_strerror(rc));
		return 2;
	}
	const struct admin_ctx x = { .cli = cli, .loop = &loop, .json = json, .out = stdout,
				     .err = stderr };
	const char *obj = a[0], *verb = a[1];
	if (!strcmp(obj, "cluster") && !strcmp(verb, "status") && nargs == 2)
		rc = cmd_cluster_status();
	else if (!strcmp(obj, "cluster") && !strcmp(verb, "wait-healthy") && nargs <= 3) {
		char *end = NULL;
		unsigned long secs = nargs == 3 ? strtoul(a[2], &end, 10) : 600;
		if (nargs == 3 && (!*a[2] || *end || secs == 0 || secs > 86400)) {
			fprintf(stderr, "%s: cluster wait-healthy: seconds 1..86400, not %s\n",
				argv[0], a[2]);
			rc = 2;
		} else {
			rc = admin_wait_healthy(cli, (uint64_t)secs * 1000, stdout, stderr);
		}
	}
	else if (!strcmp(obj, "osd") && !strcmp(verb, "ls") && nargs == 2)
		rc = cmd_osd_ls();
	else if (!strcmp(obj, "osd") && !strcmp(verb, "df") && nargs == 2)
		rc = cmd_osd_df();
	else if (!strcmp(obj, "osd") && !strcmp(verb, "scrub-status") && nargs == 2)
		rc = cmd_osd_scrub_status();
	else if (!strcmp(obj, "osd") && (!strcmp(verb, "out") || !strcmp(verb, "in")) && nargs == 3)
		rc = cmd_osd_out_in(!strcmp(verb, "out"), a[2]);
	else if (!strcmp(obj, "osd") && !strcmp(verb, "rm") && nargs == 3)
		rc = cmd_osd_rm(a[2]);
	else if (!strcmp(obj, "pg") && !strcmp(verb, "ls") && nargs == 2)
		rc = cmd_pg_ls();
	else if (!strcmp(obj, "pg") && !strcmp(verb, "check") && nargs == 2)
		rc = cmd_pg_check();
	else if (!strcmp(obj, "user") && !strcmp(verb, "add") && nargs >= 3) {
		const char *ak, *sk;
		rc = user_add_args(nargs - 3, a + 3, &ak, &sk);
		if (!rc)
			rc = cmd_user_add(a[2], ak, sk);
	}
	else if (!strcmp(obj, "user") && !strcmp(verb, "rm") && nargs == 3)
		rc = cmd_user_rm(a[2]);
	else if (!strcmp(obj, "user") && !strcmp(verb, "ls") && nargs == 2)
		rc = admin_user_ls(cli, &loop, NULL, json, stdout, stderr);
	else if (!strcmp(obj, "user") && !strcmp(verb, "show") && nargs == 3)
		rc = admin_user_ls(cli, &loop, a[2], json, stdout, stderr);
	else if (!strcmp(obj, "user") && !strcmp(verb, "rekey") && nargs == 2)
		rc = admin_user_rekey(cli, &loop, json, stdout, stderr);
	else if (!strcmp(obj, "user") && (!strcmp(verb, "grant") || !strcmp(verb, "revoke") ||
					  !strcmp(verb, "admin")))
		rc = admin_user_set(cli, &loop, nargs - 1, a + 1, json, stdout, stderr);
	else if (!strcmp(obj, "quota"))
		rc = admin_quota(cli, &loop, nargs - 1, a + 1, json, stdout, stderr);
	else if (!strcmp(obj, "bucket") && !strcmp(verb, "ls") && nargs == 2)
		rc = cmd_bucket_ls();
	else if (!strcmp(obj, "range") && !strcmp(verb, "ls") &&
		 (nargs == 2 || (nargs == 4 && !strcmp(a[2], "--bucket"))))
		rc = meta_range_admin_ls(cli, &loop, nargs == 4 ? a[3] : NULL, json, stdout, stderr);
	else if (!strcmp(obj, "range") && !strcmp(verb, "split") && nargs == 4)
		rc = meta_range_admin_split(cli, &loop, a[2], a[3], stdout, stderr);
	else if (!strcmp(obj, "range") && !strcmp(verb, "merge") && nargs == 4)
		rc = meta_range_admin_merge(cli, &loop, a[2], a[3], stdout, stderr);
	else if (!strcmp(obj, "member"))
		rc = admin_member(&x, nargs - 1, a + 1);
	else
		rc = ADMIN_UNKNOWN;
	if (rc == ADMIN_UNKNOWN) {
		fprintf(stderr, "%s: unknown command:", argv[0]);
		for (int i = 0; i < nargs; i++)
			fprintf(stderr, " %s", a[i]);
		fprintf(stderr, "\n");
		rc = 2;
	}
	meta_client_close(cli);
	uv_run(&loop, UV_RUN_NOWAIT);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	flags_free(specs);
	return rc;
}
