/*
 * cluster.c — iolake-admin cluster status|wait-healthy (contract in
 * cluster.h). `cluster status` asks every member for its own view at once
 * (Status, no redirect), then the leader, once, for its PG states
 * (PgStats); `wait-healthy` is admin/health.c's loop. `cluster init-key`
 * needs no meta and is admin/user.c's, dispatched by main.
 */
#include "admin/cluster.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "admin/call.h"
#include "admin/health.h"
#include "admin/pg.h"
#include "common/err.h"

struct member_status {
	struct admin_wait w;
	Iolake__Meta__StatusResponse *st;
};

static int status(const struct admin_ctx *x)
{
	size_t n = meta_client_member_count(x->cli);
	struct member_status *ms = calloc(n, sizeof(*ms));
	Iolake__Meta__StatusRequest req = IOLAKE__META__STATUS_REQUEST__INIT;
	for (size_t i = 0; i < n; i++)
		if (meta_client_call_member(x->cli, i, META_M_STATUS, &req.base, admin_on_call,
					    &ms[i].w))
			ms[i].w.done = true, ms[i].w.err = -ENOMEM;
	size_t answered = 0, leaders = 0, leader_at = n;
	uint64_t epoch = 0;
	for (size_t i = 0; i < n; i++) {
		admin_run(x->loop, &ms[i].w, 0);
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
		fprintf(x->err, "iolake-admin: error: no meta member answered; tried:");
		for (size_t i = 0; i < n; i++)
			fprintf(x->err, " %s", meta_client_member(x->cli, i));
		fprintf(x->err, "\n");
		free(ms);
		return 1;
	}
	/* PG states are the leader's memory: ask it, once, no retries (an
	 * older meta without PgStats, or no leader: the summary says so). */
	Iolake__Meta__PgStatsResponse *ps = NULL;
	const char *ps_why = "no leader";
	if (leader_at < n) {
		Iolake__Meta__PgStatsRequest preq = IOLAKE__META__PG_STATS_REQUEST__INIT;
		int perr = admin_call_member(x->cli, leader_at, META_M_PG_STATS, &preq.base,
					     (ProtobufCMessage **)&ps);
		ps_why = perr ? iol_strerror(perr) : "no cluster map";
		if (ps && ps->status != IOLAKE__META__STATUS__STATUS_OK) {
			protobuf_c_message_free_unpacked(&ps->base, NULL);
			ps = NULL;
		}
	}
	if (x->json) {
		fprintf(x->out, "{\"epoch\":%" PRIu64 ",\"leaders\":%zu", epoch, leaders);
		admin_pg_summary_json(x, ps);
		fprintf(x->out, ",\"members\":[");
		for (size_t i = 0; i < n; i++) {
			const Iolake__Meta__StatusResponse *s = ms[i].st;
			fprintf(x->out, "%s{\"address\":", i ? "," : "");
			admin_jstr(x->out, meta_client_member(x->cli, i));
			if (!s) {
				fprintf(x->out, ",\"role\":\"down\"}");
				continue;
			}
			fprintf(x->out, ",\"id\":%" PRIu64 ",\"role\":", s->id);
			admin_jstr(x->out, s->role);
			fprintf(x->out, ",\"term\":%" PRIu64 ",\"last_index\":%" PRIu64
				",\"commit_index\":%" PRIu64 ",\"applied_index\":%" PRIu64
				",\"leader_id\":%" PRIu64 ",\"epoch\":%" PRIu64
				",\"state_applied_index\":%" PRIu64 ",\"state_digest\":",
				s->term, s->last_index, s->commit_index, s->applied_index, s->leader_id,
				s->epoch, s->state_applied_index);
			admin_jstr(x->out, s->state_digest);
			fprintf(x->out, ",\"snapshot_restores\":%" PRIu64 ",\"snapshot_installing\":%s"
				",\"gc_queue\":%" PRIu64 ",\"configuration\":[",
				s->snapshot_restores, s->snapshot_installing ? "true" : "false",
				s->gc_queue);
			for (size_t j = 0; j < s->n_members; j++) {
				fprintf(x->out, "%s{\"id\":%" PRIu64 ",\"address\":", j ? "," : "",
					s->members[j]->id);
				admin_jstr(x->out, s->members[j]->address);
				fprintf(x->out, ",\"voter\":%s}", s->members[j]->voter ? "true" : "false");
			}
			fprintf(x->out, "]}");
		}
		fprintf(x->out, "]}\n");
	} else {
		fprintf(x->out, "%-4s %-22s %-10s %8s %12s %12s  %s\n", "ID", "ADDRESS", "ROLE", "TERM",
			"COMMIT", "APPLIED", "STATE DIGEST");
		const Iolake__Meta__StatusResponse *conf = NULL;
		for (size_t i = 0; i < n; i++) {
			const Iolake__Meta__StatusResponse *s = ms[i].st;
			if (!s) {
				fprintf(x->out, "%-4s %-22s %-10s %8s %12s %12s  %s\n", "-",
					meta_client_member(x->cli, i), "down", "-", "-", "-", "-");
				continue;
			}
			if (!conf || !strcmp(s->role, "leader"))
				conf = s;
			/* The digest's first 16 hex digits and the index it covers. */
			fprintf(x->out, "%-4" PRIu64 " %-22s %-10s %8" PRIu64 " %12" PRIu64 " %12" PRIu64
				"  %.16s@%" PRIu64 "\n",
				s->id, meta_client_member(x->cli, i), s->role, s->term, s->commit_index,
				s->applied_index, *s->state_digest ? s->state_digest : "-",
				s->state_applied_index);
		}
		fprintf(x->out, "map epoch: %" PRIu64 "   leaders: %zu   members answering: %zu/%zu\n", epoch,
			leaders, answered, n);
		fprintf(x->out, "configuration (member %" PRIu64 "'s view):", conf->id);
		for (size_t j = 0; j < conf->n_members; j++)
			fprintf(x->out, " %" PRIu64 "@%s%s", conf->members[j]->id, conf->members[j]->address,
				conf->members[j]->voter ? "" : "(non-voter)");
		fprintf(x->out, "\n");
		fprintf(x->out, "shard GC queue (member %" PRIu64 "'s view): %" PRIu64 " entries\n", conf->id,
			conf->gc_queue);
		admin_pg_summary_text(x, ps, ps_why);
	}
	if (ps)
		protobuf_c_message_free_unpacked(&ps->base, NULL);
	for (size_t i = 0; i < n; i++)
		if (ms[i].st)
			protobuf_c_message_free_unpacked(&ms[i].st->base, NULL);
	free(ms);
	return 0;
}

int admin_cluster(const struct admin_ctx *x, int nargs, char **args)
{
	const char *verb = args[0];
	if (!strcmp(verb, "status") && nargs == 1)
		return status(x);
	if (!strcmp(verb, "wait-healthy") && nargs <= 2) {
		char *end = NULL;
		unsigned long secs = nargs == 2 ? strtoul(args[1], &end, 10) : 600;
		if (nargs == 2 && (!*args[1] || *end || secs == 0 || secs > 86400)) {
			fprintf(x->err, "iolake-admin: cluster wait-healthy: seconds 1..86400, not %s\n",
				args[1]);
			return 2;
		}
		return admin_wait_healthy(x->cli, (uint64_t)secs * 1000, x->out, x->err);
	}
	return ADMIN_UNKNOWN;
}
