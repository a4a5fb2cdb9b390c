/*
 * node_range.c — the member's side of key ranges (meta.proto RangeDesc):
 * GetRanges (the root's range table, or a range group's open-range rows
 * with their counters) and the gate every object read routed by range id
 * passes (node_range_gate: the range open here, of this bucket, covering
 * the key). Writes are fenced in meta/state.c's apply, not here. Also
 * what a range group's leader counts for splits by load (node_range_note:
 * into g->heat, meta/range_heat.h) and answers with its GetRanges rows.
 *
 * Owns nothing but g->heat's notes: it reads the group's state on the
 * loop thread, after the read's ReadIndex round (meta/node_read.c), like
 * the other reads.
 * Not here: the range table's changes (state.c ops), routing (client.c).
 */
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/loop.h"
#include "meta/node_internal.h"

int node_range_gate(struct meta_group *g, uint64_t range_id, const char *bucket, const char *key,
		    Iolake__Meta__RangeDesc **out)
{
	if (out)
		*out = NULL;
	Iolake__Meta__RangeDesc *d = NULL;
	int rc = meta_state_get_open_range(g->state, range_id, &d);
	if (rc == IOL_ENOT_FOUND)
		return META_EWRONG_RANGE;
	if (rc)
		return rc;
	bool ok = !d->sealed && !strcmp(d->bucket, bucket ? bucket : "");
	if (ok && key)
		ok = strcmp(key, d->start) >= 0 && (!d->end[0] || strcmp(key, d->end) < 0);
	if (!ok) {
		meta_state_free_msg(d);
		return META_EWRONG_RANGE;
	}
	if (out)
		*out = d;
	else
		meta_state_free_msg(d);
	return 0;
}

void node_range_note(struct meta_group *g, uint64_t range_id, const char *key)
{
	if (g->id == 0 || range_id == 0)
		return;
	if (!g->heat && !(g->heat = range_heat_new(g->id * 0x9e3779b97f4a7c15ull ^ loop_now_ms())))
		return;
	range_heat_note(g->heat, range_id, key, loop_now_ms());
}

/* The object key an op names ("" when it names none): its body's `key`,
 * or its record's or upload's (PutObject, CreateMultipart). */
static const char *op_key(const Iolake__Meta__Op *op)
{
	const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(
		&iolake__meta__op__descriptor, (unsigned)op->body_case);
	if (!f || f->type != PROTOBUF_C_TYPE_MESSAGE)
		return "";
	const ProtobufCMessage *b = *(ProtobufCMessage *const *)((const char *)op + f->offset);
	for (int depth = 0; b && depth < 2; depth++) {
		const ProtobufCFieldDescriptor *k =
			protobuf_c_message_descriptor_get_field_by_name(b->descriptor, "key");
		if (k && k->type == PROTOBUF_C_TYPE_STRING && k->label != PROTOBUF_C_LABEL_REPEATED) {
			const char *key = *(const char *const *)((const char *)b + k->offset);
			return key ? key : "";
		}
		const ProtobufCFieldDescriptor *sub =
			protobuf_c_message_descriptor_get_field_by_name(b->descriptor, "record");
		if (!sub)
			sub = protobuf_c_message_descriptor_get_field_by_name(b->descriptor, "upload");
		if (!sub || sub->type != PROTOBUF_C_TYPE_MESSAGE ||
		    sub->label == PROTOBUF_C_LABEL_REPEATED)
			return "";
		b = *(ProtobufCMessage *const *)((const char *)b + sub->offset);
	}
	return "";
}

void node_range_note_ops(struct meta_group *g, Iolake__Meta__Op *const *ops, size_t n_ops,
			 const struct meta_op_result *res)
{
	if (g->id == 0 || !res)
		return;
	for (size_t i = 0; i < n_ops; i++)
		if (ops[i]->range_id && res[i].err == 0)
			node_range_note(g, ops[i]->range_id, op_key(ops[i]));
}

/* A range group leader's load figures on its open rows (RangeDesc 24-27;
 * zeros for a range with no request counted); the entries of ranges no
 * longer open here are dropped. */
static void add_load(struct meta_group *g, Iolake__Meta__RangeDesc **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		v[i]->load = !v[i]->sealed;
	if (!g->heat)
		return;
	uint64_t *ids = calloc(n + 1, sizeof(*ids));
	size_t k = 0;
	uint64_t now = loop_now_ms();
	for (size_t i = 0; i < n; i++) {
		if (v[i]->sealed)
			continue;
		if (ids)
			ids[k++] = v[i]->id;
		struct range_heat_figures f;
		if (!range_heat_get(g->heat, v[i]->id, v[i]->start, now, &f))
			continue;
		char *key = f.split_key[0] ? strdup(f.split_key) : NULL;
		v[i]->load_requests = f.requests;
		v[i]->load_rps = f.rps;
		if (key)
			v[i]->load_split_key = key;
	}
	if (ids)
		range_heat_keep(g->heat, ids, k);
	free(ids);
}

static void free_ranges(Iolake__Meta__RangeDesc **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		meta_state_free_msg(v[i]);
	free(v);
}

/* Range r's group's members and whether they are reconciled (issue 13,
 * RangeDesc 18-19), from the root's row d. */
static void annotate(Iolake__Meta__RangeDesc *r, const Iolake__Meta__GroupDesc *d)
{
	Iolake__Meta__GroupVoter *const *m;
	size_t nm;
	group_members_desired(d, &m, &nm);
	r->group_members = calloc(nm + 1, sizeof(*r->group_members));
	for (size_t i = 0; r->group_members && i < nm; i++)
		r->group_members[r->n_group_members++] = m[i]->id;
	r->group_reconciled = d->reconciled_index == d->members_index;
}

/* The root's live groups >= 1 into resp->groups (malloc'd); each of
 * ranges[0..nr) told its group's members. */
static int live_groups(struct meta_group *g, Iolake__Meta__GetRangesResponse *resp,
		       Iolake__Meta__RangeDesc **ranges, size_t nr)
{
	Iolake__Meta__GroupDesc **v = NULL;
	size_t n = 0;
	int rc = meta_state_list_groups(g->state, &v, &n);
	if (rc)
		return rc;
	resp->groups = calloc(n + 1, sizeof(*resp->groups));
	for (size_t i = 0; i < n; i++) {
		if (resp->groups && !v[i]->deleted)
			resp->groups[resp->n_groups++] = v[i]->id;
		for (size_t k = 0; k < nr; k++)
			if (ranges[k]->group == v[i]->id && !ranges[k]->group_members)
				annotate(ranges[k], v[i]);
		meta_state_free_msg(v[i]);
	}
	free(v);
	return resp->groups ? 0 : -ENOMEM;
}

void node_serve_get_ranges(struct meta_group *g, struct rpc_req *r)
{
	const Iolake__Meta__GetRangesRequest *q = (const void *)rpc_req_msg(r);
	Iolake__Meta__GetRangesResponse resp = IOLAKE__META__GET_RANGES_RESPONSE__INIT;
	Iolake__Meta__RangeDesc **v = NULL;
	size_t n = 0;
	int rc;
	if (g->id == 0) {
		const char *bucket = q->bucket[0] ? q->bucket : NULL;
		if (bucket) {
			Iolake__Meta__Bucket *b = NULL;
			rc = meta_state_get_bucket(g->state, bucket, &b);
			meta_state_free_msg(b);
			if (rc == IOL_ENOT_FOUND || rc == -EINVAL) {
				resp.status = meta_state_err_to_status(rc);
				rpc_respond(r, &resp.base, NULL);
				return;
			}
			if (rc)
				goto fail;
		}
		rc = meta_state_list_ranges(g->state, bucket, &v, &n);
		if (rc == 0) {
			rc = live_groups(g, &resp, v, n);
			if (rc)
				free_ranges(v, n);
		}
	} else {
		rc = meta_state_list_open_ranges(g->state, &v, &n);
		if (rc == 0)
			add_load(g, v, n);
	}
	if (rc)
		goto fail;
	resp.ranges = v;
	resp.n_ranges = n;
	rpc_respond(r, &resp.base, NULL);
	free_ranges(v, n);
	free(resp.groups);
	return;
fail:
	rpc_fail(r, RPC_INTERNAL, "get ranges: %s", iol_strerror(rc));
}

/* ReadRange feed: a catch-up batch of a split's change feed. */
static void serve_feed(struct meta_group *g, struct rpc_req *r,
		       const Iolake__Meta__ReadRangeRequest *q, uint32_t max_records,
		       uint32_t max_bytes)
{
	Iolake__Meta__ReadRangeResponse resp = IOLAKE__META__READ_RANGE_RESPONSE__INIT;
	struct meta_feed_batch b;
	int rc = meta_state_read_feed(g->state, q->range_id, q->bucket, q->start, q->end,
				      q->feed_after, max_records, max_bytes, &b);
	if (rc == META_EWRONG_RANGE || rc == -EINVAL) {
		resp.status = meta_state_err_to_status(rc);
		rpc_respond(r, &resp.base, NULL);
		return;
	}
	if (rc) {
		rpc_fail(r, RPC_INTERNAL, "read feed: %s", iol_strerror(rc));
		return;
	}
	resp.keys = b.pairs.keys;
	resp.n_keys = b.pairs.n;
	resp.values = b.pairs.values;
	resp.n_values = b.pairs.n;
	resp.feed_keys = b.keys;
	resp.n_feed_keys = b.n_keys;
	resp.feed_upto = b.upto;
	resp.feed_left = b.left;
	resp.sealed = b.sealed;
	resp.records = (uint32_t)b.n_keys;
	resp.done = b.left == 0;
	rpc_respond(r, &resp.base, NULL);
	meta_feed_batch_free(&b);
}

/* ReadRange: a sealed (or fed) range's records for a move
 * (meta/range_move.c). */
void node_serve_read_range(struct meta_group *g, struct rpc_req *r)
{
	const Iolake__Meta__ReadRangeRequest *q = (const void *)rpc_req_msg(r);
	Iolake__Meta__ReadRangeResponse resp = IOLAKE__META__READ_RANGE_RESPONSE__INIT;
	struct meta_range_pairs p;
	uint32_t max_bytes = q->max_bytes ? q->max_bytes : META_ENTRY_MAX_BYTES / 2;
	if (max_bytes > META_ENTRY_MAX_BYTES / 2)
		max_bytes = META_ENTRY_MAX_BYTES / 2;
	uint32_t max_records = q->max_records ? q->max_records : 2000;
	if (q->split_key) {
		char key[META_KEY_MAX + 1];
		int rc = meta_state_range_split_key(g->state, q->range_id, key, sizeof(key));
		if (rc && rc != META_EWRONG_RANGE) {
			rpc_fail(r, RPC_INTERNAL, "split key: %s", iol_strerror(rc));
			return;
		}
		resp.status = meta_state_err_to_status(rc);
		resp.split_key = key;
		if (rc)
			resp.split_key = "";
		rpc_respond(r, &resp.base, NULL);
		return;
	}
	if (q->feed) {
		serve_feed(g, r, q, max_records, max_bytes);
		return;
	}
	int rc = meta_state_read_range(g->state, q->range_id, q->bucket, q->start, q->end,
				       q->after.data, q->after.len, max_records, max_bytes, &p);
	if (rc == META_EWRONG_RANGE || rc == -EINVAL) {
		resp.status = meta_state_err_to_status(rc);
		rpc_respond(r, &resp.base, NULL);
		return;
	}
	if (rc) {
		rpc_fail(r, RPC_INTERNAL, "read range: %s", iol_strerror(rc));
		return;
	}
	resp.keys = p.keys;
	resp.n_keys = p.n;
	resp.values = p.values;
	resp.n_values = p.n;
	resp.upto.data = p.upto;
	resp.upto.len = p.upto_len;
	resp.done = p.done;
	resp.records = p.records;
	rpc_respond(r, &resp.base, NULL);
	meta_range_pairs_free(&p);
}
