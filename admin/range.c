/*
 * range_admin.c — `iolake-admin range ls` and `range split` (contracts in
 * range_admin.h): the operator's view of the key ranges and pre-splitting.
 *
 * Runs calls one after another on the caller's loop (it runs the loop
 * until each answers), as iolake-admin does. Owns nothing past a call.
 *
 * Split and merge move records: MoveRange in the root, then the mover
 * (meta/range_move.c) drives the move to its end. A move this command
 * does not finish (killed, meta unreachable) stays in the root's table and
 * the root leader finishes it.
 */
#include "admin/range.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "admin/call.h"
#include "admin/cmd.h"
#include "common/err.h"
#include "meta/client.h"
#include "meta/range_move.h"

static int call(struct meta_client *c, uv_loop_t *loop, unsigned method,
		const ProtobufCMessage *req, ProtobufCMessage **out)
{
	struct admin_wait w = { 0 };
	int rc = admin_run(loop, &w, meta_client_call_direct(c, method, req, admin_on_call, &w));
	*out = w.resp;
	return rc;
}

static int get_ranges(struct meta_client *c, uv_loop_t *loop, const char *bucket, uint64_t group,
		      Iolake__Meta__GetRangesResponse **out)
{
	Iolake__Meta__GetRangesRequest q = IOLAKE__META__GET_RANGES_REQUEST__INIT;
	q.bucket = (char *)bucket;
	q.group = group;
	return call(c, loop, META_M_GET_RANGES, &q.base, (ProtobufCMessage **)out);
}

static void free_msg(void *m)
{
	if (m)
		protobuf_c_message_free_unpacked(m, NULL);
}

/* The move a root row is in (meta.proto RangeMovePhase / Kind). */
static const char *move_state(const Iolake__Meta__RangeDesc *d)
{
	if (d->move_phase == IOLAKE__META__RANGE_MOVE_PHASE__MOVE_CLEANUP)
		return "cleanup";
	if (d->move_phase != IOLAKE__META__RANGE_MOVE_PHASE__MOVE_COPY)
		return "";
	switch (d->move_kind) {
	case IOLAKE__META__RANGE_MOVE_KIND__MOVE_SPLIT: return "split-copy";
	case IOLAKE__META__RANGE_MOVE_KIND__MOVE_MERGE: return "merge-copy";
	case IOLAKE__META__RANGE_MOVE_KIND__MOVE_MERGE_RIGHT: return "merge-right";
	default: return "copy";
	}
}

static void ids_out(FILE *out, bool json, const uint64_t *v, size_t n, int width)
{
	char buf[256];
	size_t k = 0;
	buf[0] = 0;
	for (size_t i = 0; i < n && k < sizeof(buf) - 24; i++)
		k += (size_t)snprintf(buf + k, sizeof(buf) - k, "%s%" PRIu64, i ? "," : "", v[i]);
	if (json)
		fprintf(out, "[%s]", buf);
	else
		fprintf(out, "%-*s ", width, n ? buf : "-");
}

/* Each live group: the members the root's table gives it and whether its
 * configuration matched them (from a range it holds; issue 13), and, as
 * the member asked (member 0 of the client) sees it, its voters, leader
 * and state digest. */
static void group_summary(struct meta_client *c, uv_loop_t *loop,
			  const Iolake__Meta__GetRangesResponse *t,
			  const Iolake__Meta__StatusResponse *st, bool json, FILE *out)
{
	for (size_t i = 0; i < t->n_groups; i++) {
		uint64_t id = t->groups[i];
		const Iolake__Meta__RangeDesc *r = NULL;
		for (size_t k = 0; k < t->n_ranges && !r; k++)
			if (t->ranges[k]->group == id && t->ranges[k]->n_group_members)
				r = t->ranges[k];
		const Iolake__Meta__GroupStatus *gs = NULL;
		for (size_t g = 0; st && g < st->n_groups && !gs; g++)
			if (st->groups[g]->id == id)
				gs = st->groups[g];
		Iolake__Meta__StatusRequest sq = IOLAKE__META__STATUS_REQUEST__INIT;
		Iolake__Meta__StatusResponse *gst = NULL;
		sq.group = id;
		if (gs)
			call(c, loop, META_M_STATUS, &sq.base, (ProtobufCMessage **)&gst);
		const char *digest = gst ? gst->state_digest : "";
		uint64_t dindex = gst ? gst->state_applied_index : 0;
		const char *leader = gs && gs->leader_address[0] ? gs->leader_address : "-";
		if (json) {
			fprintf(out, "%s{\"id\":%" PRIu64 ",\"members\":", i ? "," : "", id);
			ids_out(out, true, r ? r->group_members : NULL, r ? r->n_group_members : 0, 0);
			fprintf(out, ",\"reconciled\":%s,\"hosted\":%s,\"voters\":",
				r ? (r->group_reconciled ? "true" : "false") : "null",
				gs ? "true" : "false");
			ids_out(out, true, gs ? gs->voters : NULL, gs ? gs->n_voters : 0, 0);
			fprintf(out, ",\"leader\":");
			admin_jstr(out, leader);
			fprintf(out, ",\"digest\":");
			admin_jstr(out, digest);
			fprintf(out, ",\"digest_index\":%" PRIu64 "}", dindex);
		} else {
			fprintf(out, "%-6" PRIu64 " ", id);
			ids_out(out, false, r ? r->group_members : NULL, r ? r->n_group_members : 0, 20);
			fprintf(out, "%-11s ", r ? (r->group_reconciled ? "yes" : "no") : "-");
			ids_out(out, false, gs ? gs->voters : NULL, gs ? gs->n_voters : 0, 20);
			fprintf(out, "%-22s %.16s@%" PRIu64 "\n", leader, digest[0] ? digest : "-",
				dindex);
		}
		free_msg(gst);
	}
}

int meta_range_admin_ls(struct meta_client *c, uv_loop_t *loop, const char *bucket, bool json,
			FILE *out, FILE *err)
{
	Iolake__Meta__GetRangesResponse *t = NULL;
	int rc = get_ranges(c, loop, bucket ? bucket : "", 0, &t);
	if (rc) {
		fprintf(err, "iolake-admin: range ls: %s\n", iol_strerror(rc));
		return 1;
	}
	if (t->status == IOLAKE__META__STATUS__STATUS_NOT_FOUND) {
		fprintf(err, "iolake-admin: range ls: no bucket %s\n", bucket);
		free_msg(t);
		return 1;
	}
	/* Leaders: member 0's view of the groups it hosts (every range group
	 * is on every root voter). */
	Iolake__Meta__StatusRequest sq = IOLAKE__META__STATUS_REQUEST__INIT;
	Iolake__Meta__StatusResponse *st = NULL;
	call(c, loop, META_M_STATUS, &sq.base, (ProtobufCMessage **)&st);
	/* Counters: each group's open-range rows, asked once per group. */
	Iolake__Meta__GetRangesResponse **rows = calloc(t->n_ranges + 1, sizeof(*rows));
	if (!rows) {
		free_msg(t);
		free_msg(st);
		return 1;
	}
	for (size_t i = 0; i < t->n_ranges; i++) {
		size_t j = 0;
		while (j < i && t->ranges[j]->group != t->ranges[i]->group)
			j++;
		if (j < i)
			continue;   /* asked already */
		if (get_ranges(c, loop, "", t->ranges[i]->group, &rows[i]))
			rows[i] = NULL;
	}
	if (json)
		fprintf(out, "{\"ranges\":[");
	else
		fprintf(out, "%-20s %-24s %-16s %-16s %6s %-22s %10s %14s %7s %7s\n", "ID",
			"BUCKET", "START", "END", "GROUP", "LEADER", "OBJECTS", "BYTES", "UPLOADS",
			"REQ/S");
	for (size_t i = 0; i < t->n_ranges; i++) {
		const Iolake__Meta__RangeDesc *d = t->ranges[i];
		const Iolake__Meta__RangeDesc *cnt = NULL;
		for (size_t j = 0; j < t->n_ranges && !cnt; j++) {
			if (!rows[j] || t->ranges[j]->group != d->group)
				continue;
			for (size_t k = 0; k < rows[j]->n_ranges; k++)
				if (rows[j]->ranges[k]->id == d->id)
					cnt = rows[j]->ranges[k];
		}
		const char *leader = "-";
		for (size_t g = 0; st && g < st->n_groups; g++)
			if (st->groups[g]->id == d->group && st->groups[g]->leader_address[0])
				leader = st->groups[g]->leader_address;
		const char *state = !cnt ? "unopened" : cnt->sealed ? "sealed" : "open";
		if (json) {
			fprintf(out, "%s{\"id\":%" PRIu64 ",\"bucket\":", i ? "," : "", d->id);
			admin_jstr(out, d->bucket);
			fprintf(out, ",\"start\":");
			admin_jstr(out, d->start);
			fprintf(out, ",\"end\":");
			admin_jstr(out, d->end);
			fprintf(out, ",\"group\":%" PRIu64 ",\"leader\":", d->group);
			admin_jstr(out, leader);
			fprintf(out, ",\"state\":\"%s\",\"objects\":%" PRIu64 ",\"bytes\":%" PRIu64
				",\"uploads\":%" PRIu64 ",\"move\":\"%s\"", state,
				cnt ? cnt->objects : 0, cnt ? cnt->bytes : 0, cnt ? cnt->uploads : 0,
				move_state(d));
			/* the leader's load (RangeDesc 24-27); null: no figure */
			if (cnt && cnt->load)
				fprintf(out, ",\"req_per_s\":%" PRIu64 ",\"requests\":%" PRIu64
					",\"load_split_key\":", cnt->load_rps, cnt->load_requests);
			else
				fprintf(out, ",\"req_per_s\":null,\"requests\":null,"
					"\"load_split_key\":");
			admin_jstr(out, cnt && cnt->load ? cnt->load_split_key : "");
			fprintf(out, "}");
		} else {
			char rps[24] = "-";
			if (cnt && cnt->load)
				snprintf(rps, sizeof(rps), "%" PRIu64, cnt->load_rps);
			fprintf(out, "%-20" PRIu64 " %-24s %-16s %-16s %6" PRIu64 " %-22s %10" PRIu64
				" %14" PRIu64 " %7" PRIu64 " %7s%s%s\n", d->id, d->bucket,
				d->start[0] ? d->start : "-", d->end[0] ? d->end : "-", d->group, leader,
				cnt ? cnt->objects : 0, cnt ? cnt->bytes : 0, cnt ? cnt->uploads : 0, rps,
				cnt && !cnt->sealed ? "" : " ", cnt && !cnt->sealed ? "" : state);
			if (d->move_phase)
				fprintf(out, "  move: %s%s%s\n", move_state(d),
					d->move_key[0] ? " at " : "", d->move_key);
		}
	}
	if (json) {
		fprintf(out, "],\"groups\":[");
		for (size_t i = 0; i < t->n_groups; i++)
			fprintf(out, "%s%" PRIu64, i ? "," : "", t->groups[i]);
		fprintf(out, "],\"group_info\":[");
	} else if (t->n_groups) {
		fprintf(out, "\n%-6s %-20s %-11s %-20s %-22s %s\n", "GROUP", "MEMBERS", "RECONCILED",
			"VOTERS(here)", "LEADER", "DIGEST@INDEX(here)");
	}
	group_summary(c, loop, t, st, json, out);
	if (json)
		fprintf(out, "]}\n");
	for (size_t i = 0; i < t->n_ranges; i++)
		free_msg(rows[i]);
	free(rows);
	free_msg(st);
	free_msg(t);
	return 0;
}

struct move_wait {
	bool done;
	int err;
	struct meta_move_stats st;
};

static void on_moved(void *ud, int err, const struct meta_move_stats *st)
{
	struct move_wait *w = ud;
	w->done = true;
	w->err = err;
	w->st = *st;
}

static int move_run(struct meta_client *c, uv_loop_t *loop, const char *bucket, uint64_t id,
		    const char *key, bool merge, struct move_wait *w)
{
	int rc = meta_move_start(c, loop, bucket, id, key, merge, 0, NULL, on_moved, w);
	if (rc)
		return rc;
	while (!w->done)
		uv_run(loop, UV_RUN_ONCE);
	return w->err;
}

static void print_new(struct meta_client *c, uv_loop_t *loop, const char *bucket,
		      const char *key, FILE *out)
{
	Iolake__Meta__GetRangesResponse *t = NULL;
	if (get_ranges(c, loop, bucket, 0, &t))
		return;
	for (size_t i = 0; i < t->n_ranges; i++) {
		const Iolake__Meta__RangeDesc *r = t->ranges[i];
		bool left = r->end[0] && !strcmp(r->end, key), right = !strcmp(r->start, key);
		bool over = strcmp(r->start, key) < 0 && (!r->end[0] || strcmp(key, r->end) < 0);
		if (left || right || over)
			fprintf(out, "range %" PRIu64 " [%s, %s) in group %" PRIu64 "\n", r->id,
				r->start[0] ? r->start : "-", r->end[0] ? r->end : "-", r->group);
	}
	free_msg(t);
}

/* Split and merge: MoveRange in the root, then the mover (meta/range_move.c)
 * until the root's table says the move is over. */
static int move_cmd(struct meta_client *c, uv_loop_t *loop, const char *what, const char *bucket,
		    const char *key, bool merge, FILE *out, FILE *err)
{
	Iolake__Meta__GetRangesResponse *t = NULL;
	int rc = get_ranges(c, loop, bucket, 0, &t);
	if (rc || t->status != IOLAKE__META__STATUS__STATUS_OK) {
		fprintf(err, "iolake-admin: range %s: %s\n", what,
			rc ? iol_strerror(rc) : "no such bucket");
		free_msg(t);
		return 1;
	}
	const Iolake__Meta__RangeDesc *d = NULL;
	const char *at = key;
	for (size_t i = 0; i < t->n_ranges; i++) {
		const Iolake__Meta__RangeDesc *r = t->ranges[i];
		if (strcmp(key, r->start) >= 0 && (!r->end[0] || strcmp(key, r->end) < 0))
			d = r;
	}
	if (!d) {
		fprintf(err, "iolake-admin: range %s: bucket %s has no ranges (its records are "
			"in the root group: made while --range-groups was 0)\n", what, bucket);
		free_msg(t);
		return 1;
	}
	if (!merge && !strcmp(d->start, key)) {
		fprintf(err, "iolake-admin: range split: %s is already where range %" PRIu64
			" starts\n", key, d->id);
		free_msg(t);
		return 1;
	}
	if (merge) {
		/* KEY names the left range (any key in it); its right
		 * neighbour joins it. */
		if (!d->end[0]) {
			fprintf(err, "iolake-admin: range merge: range %" PRIu64 " is the bucket's "
				"last: nothing to its right\n", d->id);
			free_msg(t);
			return 1;
		}
		at = d->end;
	}
	struct move_wait w = { 0 };
	char atc[1025];   /* an S3 key (meta's META_KEY_MAX) */
	snprintf(atc, sizeof(atc), "%s", at);
	rc = move_run(c, loop, bucket, d->id, atc, merge, &w);
	free_msg(t);
	if (rc) {
		fprintf(err, "iolake-admin: range %s: %s%s\n", what, iol_strerror(rc),
			rc == -EBUSY ? " (another move of the bucket is under way; `range ls` "
				       "shows it, and the root leader finishes it)" : "");
		return 1;
	}
	fprintf(out, "%s: %" PRIu64 " records moved in %" PRIu64 " batches, sealed %" PRIu64
		" ms, %" PRIu64 " records dropped from the source\n", what, w.st.records,
		w.st.batches, w.st.sealed_ms, w.st.dropped);
	print_new(c, loop, bucket, atc, out);
	return 0;
}

int meta_range_admin_split(struct meta_client *c, uv_loop_t *loop, const char *bucket,
			   const char *key, FILE *out, FILE *err)
{
	return move_cmd(c, loop, "split", bucket, key, false, out, err);
}

int meta_range_admin_merge(struct meta_client *c, uv_loop_t *loop, const char *bucket,
			   const char *key, FILE *out, FILE *err)
{
	return move_cmd(c, loop, "merge", bucket, key, true, out, err);
}
