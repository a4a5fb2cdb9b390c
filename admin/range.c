/*
 * range_admin.c — `iolake-admin range ls` and `range split` (contracts in
 * range_admin.h): the operator's view of the key ranges and pre-splitting.
 *
 * Runs calls one after another on the caller's loop (it runs the loop
 * until each answers), as iolake-admin does. Owns nothing past a call.
 *
 * Split (this step: empty ranges only; moving the records of a non-empty
 * range is the next step): seal the range in its group (refused with
 * BUCKET_NOT_EMPTY unless it holds no object and no upload), SplitRange in
 * the root (two new ranges, the right one in the group holding the fewest
 * ranges), then open both in their groups. A failure after the seal
 * unseals it; a crash between the root's split and the opens is repaired
 * by the first client the new ranges refuse (meta/route.c opens a range
 * the table names and its group has not opened).
 */
#include "admin/range.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "meta/client.h"

struct wait {
	bool done;
	int err;
	ProtobufCMessage *resp;        /* owned copy */
	Iolake__Meta__Status status;   /* submits */
};

static void on_call(void *ud, int err, const ProtobufCMessage *resp)
{
	struct wait *w = ud;
	w->done = true;
	w->err = err;
	if (!err && !(w->resp = meta_client_copy_msg(resp)))
		w->err = -ENOMEM;
}

static void on_submit(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct wait *w = ud;
	w->done = true;
	w->err = err;
	if (!err)
		w->status = res->status;
}

static int run(uv_loop_t *loop, struct wait *w, int rc)
{
	if (rc)
		return rc;
	while (!w->done)
		uv_run(loop, UV_RUN_ONCE);
	return w->err;
}

static int call(struct meta_client *c, uv_loop_t *loop, unsigned method,
		const ProtobufCMessage *req, ProtobufCMessage **out)
{
	struct wait w = { 0 };
	int rc = run(loop, &w, meta_client_call_direct(c, method, req, on_call, &w));
	*out = w.resp;
	return rc;
}

static int submit(struct meta_client *c, uv_loop_t *loop, uint64_t group,
		  const Iolake__Meta__Op *op, Iolake__Meta__Status *st)
{
	struct wait w = { 0 };
	int rc = run(loop, &w, meta_client_submit_group(c, group, op, on_submit, &w));
	*st = w.status;
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

static void jstr(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void free_msg(void *m)
{
	if (m)
		protobuf_c_message_free_unpacked(m, NULL);
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
		fprintf(out, "%-20s %-24s %-16s %-16s %6s %-22s %10s %14s %7s\n", "ID", "BUCKET",
			"START", "END", "GROUP", "LEADER", "OBJECTS", "BYTES", "UPLOADS");
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
			jstr(out, d->bucket);
			fprintf(out, ",\"start\":");
			jstr(out, d->start);
			fprintf(out, ",\"end\":");
			jstr(out, d->end);
			fprintf(out, ",\"group\":%" PRIu64 ",\"leader\":", d->group);
			jstr(out, leader);
			fprintf(out, ",\"state\":\"%s\",\"objects\":%" PRIu64 ",\"bytes\":%" PRIu64
				",\"uploads\":%" PRIu64 "}", state, cnt ? cnt->objects : 0,
				cnt ? cnt->bytes : 0, cnt ? cnt->uploads : 0);
		} else {
			fprintf(out, "%-20" PRIu64 " %-24s %-16s %-16s %6" PRIu64 " %-22s %10" PRIu64
				" %14" PRIu64 " %7" PRIu64 "%s%s\n", d->id, d->bucket,
				d->start[0] ? d->start : "-", d->end[0] ? d->end : "-", d->group, leader,
				cnt ? cnt->objects : 0, cnt ? cnt->bytes : 0, cnt ? cnt->uploads : 0,
				cnt && !cnt->sealed ? "" : " ", cnt && !cnt->sealed ? "" : state);
		}
	}
	if (json) {
		fprintf(out, "],\"groups\":[");
		for (size_t i = 0; i < t->n_groups; i++)
			fprintf(out, "%s%" PRIu64, i ? "," : "", t->groups[i]);
		fprintf(out, "]}\n");
	}
	for (size_t i = 0; i < t->n_ranges; i++)
		free_msg(rows[i]);
	free(rows);
	free_msg(st);
	free_msg(t);
	return 0;
}

static Iolake__Meta__Status seal(struct meta_client *c, uv_loop_t *loop,
				 const Iolake__Meta__RangeDesc *d, bool unseal, int *err)
{
	Iolake__Meta__RangeDesc r = *d;
	Iolake__Meta__SealRange s = IOLAKE__META__SEAL_RANGE__INIT;
	s.range = &r;
	s.unseal = unseal;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_SEAL_RANGE;
	op.seal_range = &s;
	Iolake__Meta__Status st = 0;
	*err = submit(c, loop, d->group, &op, &st);
	return st;
}

int meta_range_admin_split(struct meta_client *c, uv_loop_t *loop, const char *bucket,
			   const char *key, FILE *out, FILE *err)
{
	Iolake__Meta__GetRangesResponse *t = NULL;
	int rc = get_ranges(c, loop, bucket, 0, &t), e = 0;
	if (rc || t->status != IOLAKE__META__STATUS__STATUS_OK) {
		fprintf(err, "iolake-admin: range split: %s\n",
			rc ? iol_strerror(rc) : "no such bucket");
		free_msg(t);
		return 1;
	}
	const Iolake__Meta__RangeDesc *d = NULL;
	for (size_t i = 0; i < t->n_ranges; i++) {
		const Iolake__Meta__RangeDesc *r = t->ranges[i];
		if (strcmp(key, r->start) >= 0 && (!r->end[0] || strcmp(key, r->end) < 0))
			d = r;
	}
	if (!d) {
		fprintf(err, "iolake-admin: range split: bucket %s has no ranges (its records are "
			"in the root group: made while --range-groups was 0)\n", bucket);
		free_msg(t);
		return 1;
	}
	if (!strcmp(d->start, key)) {
		fprintf(err, "iolake-admin: range split: %s is already where range %" PRIu64
			" starts\n", key, d->id);
		free_msg(t);
		return 1;
	}
	Iolake__Meta__Status st = seal(c, loop, d, false, &e);
	if (e || st != IOLAKE__META__STATUS__STATUS_OK) {
		if (st == IOLAKE__META__STATUS__STATUS_BUCKET_NOT_EMPTY)
			fprintf(err, "iolake-admin: range split: range %" PRIu64 " holds objects or "
				"uploads; only empty ranges split for now\n", d->id);
		else
			fprintf(err, "iolake-admin: range split: seal of range %" PRIu64
				" failed: %s (status %d)\n", d->id, iol_strerror(e), (int)st);
		free_msg(t);
		return 1;
	}
	Iolake__Meta__SplitRange sp = IOLAKE__META__SPLIT_RANGE__INIT;
	sp.bucket = (char *)bucket;
	sp.range_id = d->id;
	sp.key = (char *)key;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_SPLIT_RANGE;
	op.split_range = &sp;
	rc = submit(c, loop, 0, &op, &st);
	if (rc || st != IOLAKE__META__STATUS__STATUS_OK) {
		fprintf(err, "iolake-admin: range split: the root refused: %s (status %d)\n",
			iol_strerror(rc), (int)st);
		seal(c, loop, d, true, &e);
		free_msg(t);
		return 1;
	}
	free_msg(t);
	/* Open the new ranges in their groups. */
	rc = get_ranges(c, loop, bucket, 0, &t);
	if (rc) {
		fprintf(err, "iolake-admin: range split: done; the new ranges open on first use "
			"(%s)\n", iol_strerror(rc));
		return 0;
	}
	for (size_t i = 0; i < t->n_ranges; i++) {
		const Iolake__Meta__RangeDesc *r = t->ranges[i];
		bool left = r->end[0] && !strcmp(r->end, key), right = !strcmp(r->start, key);
		if (!left && !right)
			continue;
		Iolake__Meta__RangeDesc rd = *r;
		Iolake__Meta__OpenRange o = IOLAKE__META__OPEN_RANGE__INIT;
		o.range = &rd;
		Iolake__Meta__Op oop = IOLAKE__META__OP__INIT;
		oop.body_case = IOLAKE__META__OP__BODY_OPEN_RANGE;
		oop.open_range = &o;
		rc = submit(c, loop, r->group, &oop, &st);
		fprintf(out, "range %" PRIu64 " [%s, %s) in group %" PRIu64 "%s\n", r->id,
			r->start[0] ? r->start : "-", r->end[0] ? r->end : "-", r->group,
			rc || st ? " (opens on first use)" : "");
	}
	free_msg(t);
	return 0;
}
