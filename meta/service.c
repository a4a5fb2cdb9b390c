/*
 * service.c — the Meta RPC service of a member (meta.proto `service Meta`):
 * decoding calls, finding the Raft group a call addresses, leadership
 * checks and redirects, turning state reads into responses, WatchMap long
 * polls and membership changes. The Raft side (queues, barriers, FSM) is
 * group.c and node.c.
 *
 * A call with a `group` field (100) goes to that group (0 or absent: the
 * root); a group this member does not host fails NOT_FOUND "no group N on
 * member M". Every other call is the root's. Leader-only calls on a
 * follower fail FAILED_PRECONDITION with "not leader; leader=HOST:PORT",
 * that group's leader (meta/client.c parses it). Input from the network
 * is validated and answered, never asserted on.
 *
 * Thread: the member's loop.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/log.h"
#include "common/rpc_authz.h"
#include "meta/list.h"
#include "meta/node_internal.h"
#include "meta/secret.h"
#include "meta/state_quota.h"
#include "meta/state_ver.h"

#define WATCH_DEFAULT_MS 30000
#define WATCH_MAX_MS 60000

#define REQ(type, r) ((const type *)rpc_req_msg(r))

/* The group a request names: its uint64 field 100 (meta.proto), 0 when
 * the message has none (root-only calls) or leaves it unset. */
static uint64_t req_group_id(struct rpc_req *r)
{
	const ProtobufCMessage *m = rpc_req_msg(r);
	const ProtobufCFieldDescriptor *f =
		protobuf_c_message_descriptor_get_field(m->descriptor, 100);
	if (!f || f->type != PROTOBUF_C_TYPE_UINT64 || f->label == PROTOBUF_C_LABEL_REPEATED)
		return 0;
	return *(const uint64_t *)((const char *)m + f->offset);
}

/* The hosted group r addresses, or NULL after answering NOT_FOUND. */
static struct meta_group *req_group(struct meta_node *n, struct rpc_req *r)
{
	uint64_t id = req_group_id(r);
	struct meta_group *g = n->closing ? NULL : hosting_find(n, id);
	if (!g)
		rpc_fail(r, RPC_NOT_FOUND, "no group %llu on member %llu", (unsigned long long)id,
			 (unsigned long long)n->o.id);
	return g;
}

static Iolake__Meta__Status st_of(int err)
{
	return meta_state_err_to_status(err);
}

/* A read error that is not an answer (storage trouble). */
static bool storage_err(int rc)
{
	return !(rc == 0 || rc == IOL_ENOT_FOUND || rc == -EINVAL || rc == META_EWRONG_RANGE);
}

/* Fails r when rc is a storage error. */
static bool read_failed(struct rpc_req *r, int rc)
{
	if (!storage_err(rc))
		return false;
	rpc_fail(r, RPC_INTERNAL, "read failed: %s", iol_strerror(rc));
	return true;
}

/* ------------------------------------------------------ file snapshots */

/* Any member: a byte range of one file of one of its checkpoints of the
 * group named (meta/snap.h), read on the libuv pool; or, with `newest`,
 * the descriptor of its newest one. */
static void h_fetch_snapshot(struct rpc_req *r, void *ud)
{
	struct meta_node *n = ud;
	const Iolake__Meta__FetchSnapshotRequest *q = REQ(Iolake__Meta__FetchSnapshotRequest, r);
	struct meta_group *g = req_group(n, r);
	if (!g)
		return;
	if (q->newest) {
		if (snap_serve_newest(g->snap_dir, &g->snap_last, r) == 0)
			group_snap_pin(g, g->snap_last.checkpoint);
		return;
	}
	if (snap_name_ok(q->checkpoint))
		group_snap_pin(g, q->checkpoint);
	snap_serve_fetch(n->loop, g->snap_dir, r);
}

/* ------------------------------------------------------------ writes */

/* A CreateGroup on the root's leader: every voter must be a voter of the
 * root's configuration; an empty address is filled in from it, another
 * must match it (so every member bootstraps the configuration the root
 * knows). The request message is the server's until answered, and
 * protobuf-c frees a string that is not the field's default with the
 * allocator it unpacked with (the default one: free), so a strdup'd
 * address replaces an empty one safely. 0, or an error answered. */
static int check_create_group(struct meta_node *n, struct rpc_req *r, Iolake__Meta__CreateGroup *cg)
{
	const struct raft_configuration *c = &n->root->raft.configuration;
	if (!cg->group) {
		rpc_fail(r, RPC_INVALID_ARGUMENT, "CreateGroup without a group");
		return -EINVAL;
	}
	for (size_t i = 0; i < cg->group->n_voters; i++) {
		Iolake__Meta__GroupVoter *v = cg->group->voters[i];
		const struct raft_server *sv = NULL;
		for (unsigned k = 0; k < c->n; k++)
			if (c->servers[k].id == v->id && c->servers[k].role == RAFT_VOTER)
				sv = &c->servers[k];
		char a[META_NODE_ADDR_MAX];
		if (!sv || meta_node_rpc_addr(sv->address, a)) {
			rpc_fail(r, RPC_INVALID_ARGUMENT,
				 "group %llu: member %llu is not a voter of the root group",
				 (unsigned long long)cg->group->id, (unsigned long long)v->id);
			return -EINVAL;
		}
		if (!v->address || !v->address[0]) {
			char *dup = strdup(a);
			if (!dup) {
				rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "out of memory");
				return -ENOMEM;
			}
			v->address = dup;
		} else if (strcmp(v->address, a) != 0) {
			rpc_fail(r, RPC_INVALID_ARGUMENT,
				 "group %llu: member %llu is at %s, not %s",
				 (unsigned long long)cg->group->id, (unsigned long long)v->id, a,
				 v->address);
			return -EINVAL;
		}
	}
	return 0;
}

/* Issue 16: a PutAccessKey / ResealAccessKey carries the secret in
 * clear from the client; seal it under the cluster key before it can
 * reach a Raft entry (meta/secret.h). Without --secret-key-file the
 * member keeps the old behaviour (clear; meta/main.c warned at start).
 * 0, or an error answered. */
static int seal_op(struct meta_node *n, struct rpc_req *r, Iolake__Meta__Op *op)
{
	Iolake__Meta__AccessKey *k = NULL;
	if (op->body_case == IOLAKE__META__OP__BODY_PUT_ACCESS_KEY && op->put_access_key)
		k = op->put_access_key->key;
	else if (op->body_case == IOLAKE__META__OP__BODY_RESEAL_ACCESS_KEY && op->reseal_access_key)
		k = op->reseal_access_key->key;
	if (!k || !n->o.secret)
		return 0;
	int rc = meta_secret_seal_key(n->o.secret, k);
	if (rc == -EINVAL)
		return 0;   /* no secret or a bad one: apply answers INVALID */
	if (rc) {
		rpc_fail(r, RPC_INTERNAL, "cannot seal the secret: %s", iol_strerror(rc));
		return rc;
	}
	return 0;
}

/* Issue 16: under mutual TLS each op of a Submit needs a role
 * (common/rpc_authz.c's table), and an OSD registers only its own id.
 * Checked on the first member reached: a forwarded call comes from meta. */
static int authz_submit(struct rpc_req *r, const Iolake__Meta__SubmitRequest *q)
{
	if (!rpc_req_ident(r))
		return 0;
	for (size_t i = 0; i < q->n_ops; i++) {
		const Iolake__Meta__Op *op = q->ops[i];
		const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(
			&iolake__meta__op__descriptor, (unsigned)op->body_case);
		if (f && rpc_authz_op(r, f->name))
			return -EACCES;
		if (op->body_case == IOLAKE__META__OP__BODY_REGISTER_OSD && op->register_osd &&
		    op->register_osd->osd && rpc_authz_osd_id(r, op->register_osd->osd->id))
			return -EACCES;
	}
	return 0;
}

static void h_submit(struct rpc_req *r, void *ud)
{
	struct meta_node *n = ud;
	const Iolake__Meta__SubmitRequest *q = REQ(Iolake__Meta__SubmitRequest, r);
	if (authz_submit(r, q))
		return;   /* answered: a role not allowed this op (issue 16) */
	struct meta_group *g = req_group(n, r);
	if (!g)
		return;
	if (!group_is_leader(g)) {
		if (node_forward(g, r, META_M_SUBMIT))
			group_fail_not_leader(g, r);
		return;
	}
	if (q->n_ops == 0 || q->n_ops > META_BATCH_MAX_OPS) {
		rpc_fail(r, RPC_INVALID_ARGUMENT, "a Submit carries 1..%d ops", META_BATCH_MAX_OPS);
		return;
	}
	size_t bytes = 0;
	for (size_t i = 0; i < q->n_ops; i++) {
		if (q->ops[i]->body_case == IOLAKE__META__OP__BODY__NOT_SET) {
			rpc_fail(r, RPC_INVALID_ARGUMENT, "op %zu has no body", i);
			return;
		}
		bool group_op = q->ops[i]->body_case == IOLAKE__META__OP__BODY_CREATE_GROUP ||
				q->ops[i]->body_case == IOLAKE__META__OP__BODY_DELETE_GROUP ||
				q->ops[i]->body_case == IOLAKE__META__OP__BODY_SET_GROUP_MEMBERS ||
				q->ops[i]->body_case == IOLAKE__META__OP__BODY_GROUP_RECONCILED;
		if (group_op && g->id != 0) {
			rpc_fail(r, RPC_INVALID_ARGUMENT, "op %zu: groups are created and deleted "
				 "through the root group", i);
			return;
		}
		if (q->ops[i]->body_case == IOLAKE__META__OP__BODY_CREATE_GROUP &&
		    check_create_group(n, r, q->ops[i]->create_group))
			return;
		if (seal_op(n, r, q->ops[i]))
			return;
		bytes += protobuf_c_message_get_packed_size(&q->ops[i]->base) + 8;
	}
	if (bytes + 64 > META_ENTRY_MAX_BYTES) {
		rpc_fail(r, RPC_INVALID_ARGUMENT, "ops too large for one entry (%zu bytes)", bytes);
		return;
	}
	struct sub *s = calloc(1, sizeof(*s));
	if (!s) {
		rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	s->req = r;
	s->ops = q->ops;
	s->n_ops = q->n_ops;
	s->bytes = bytes;
	if (group_enqueue(g, s)) {
		free(s);
		rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "write queue full; retry later");
	}
}

/* ------------------------------------------------------------- reads */

/* A read of the root by range id 0 for a bucket that has ranges: the
 * sender's table is stale (the bucket was made again since). */
static bool stale_root_route(struct meta_group *g, uint64_t range_id, const char *bucket)
{
	return g->id == 0 && range_id == 0 && meta_state_bucket_has_ranges(g->state, bucket);
}

/* A read routed by range id whose range is not open here is answered
 * resp (still empty) with WRONG_RANGE in *status, its status field: true
 * when r was answered. */
static bool range_refused(struct meta_group *g, struct rpc_req *r, uint64_t range_id,
			  const char *bucket, const char *key, ProtobufCMessage *resp,
			  Iolake__Meta__Status *status)
{
	int rc = node_range_gate(g, range_id, bucket, key, NULL);
	if (rc == 0)
		return false;
	if (read_failed(r, rc))
		return true;
	*status = st_of(rc);
	rpc_respond(r, resp, NULL);
	return true;
}

/* The bucket check of a listing: a range routed by id must be open here
 * (*rd its bounds), else the bucket must exist here. 0, a negative error
 * to answer in status, or 1 when r was answered (failed). */
static int list_gate(struct meta_group *g, struct rpc_req *r, uint64_t range_id,
		     const char *bucket, Iolake__Meta__RangeDesc **rd)
{
	*rd = NULL;
	int rc;
	if (range_id) {
		rc = node_range_gate(g, range_id, bucket, NULL, rd);
	} else {
		Iolake__Meta__Bucket *b = NULL;
		rc = meta_state_get_bucket(g->state, bucket, &b);
		meta_state_free_msg(b);
		if (rc == 0 && stale_root_route(g, range_id, bucket))
			rc = META_EWRONG_RANGE;
	}
	if (rc && read_failed(r, rc))
		return 1;
	return rc;
}

/* Where a listing page of range rd starts, for its load sample: after
 * start_after, else at the prefix, else at the range's first key (never
 * below it). A token is not decoded: its page counts at start_after. */
static const char *list_key(const Iolake__Meta__RangeDesc *rd, const char *start_after,
			    const char *prefix)
{
	if (start_after[0] && strcmp(start_after, rd->start) > 0)
		return start_after;
	if (prefix[0] && strcmp(prefix, rd->start) > 0)
		return prefix;
	return rd->start;
}

static void serve_get_bucket(struct meta_group *g, struct rpc_req *r)
{
	Iolake__Meta__GetBucketResponse resp = IOLAKE__META__GET_BUCKET_RESPONSE__INIT;
	Iolake__Meta__Bucket *b = NULL;
	int rc = meta_state_get_bucket(g->state, REQ(Iolake__Meta__GetBucketRequest, r)->name, &b);
	if (rc == 0 && g->id == 0)
		rc = meta_state_quota_fill(g->state, b);   /* issue 20: usage for the quota check */
	if (rc == 0)   /* issue 19: what a PUT decided on a cached copy carries */
		rc = meta_state_get_bucket_digest(g->state, b->name, &resp.bucket_digest);
	if (read_failed(r, rc)) {
		meta_state_free_msg(b);
		return;
	}
	resp.status = st_of(rc);
	resp.bucket = b;
	rpc_respond(r, &resp.base, NULL);
	meta_state_free_msg(b);
}

static void serve_list_buckets(struct meta_group *g, struct rpc_req *r)
{
	const Iolake__Meta__ListBucketsRequest *q = REQ(Iolake__Meta__ListBucketsRequest, r);
	Iolake__Meta__ListBucketsResponse resp = IOLAKE__META__LIST_BUCKETS_RESPONSE__INIT;
	Iolake__Meta__Bucket **v = NULL;
	size_t cnt = 0;
	int rc = meta_state_list_buckets(g->state, q->owner[0] ? q->owner : NULL, &v, &cnt);
	for (size_t i = 0; rc == 0 && g->id == 0 && i < cnt; i++)
		rc = meta_state_usage_fill(g->state, v[i]);   /* issue 20: each bucket's usage */
	if (rc) {
		for (size_t i = 0; i < cnt; i++)
			meta_state_free_msg(v[i]);
		free(v);
		rpc_fail(r, RPC_INTERNAL, "list buckets: %s", iol_strerror(rc));
		return;
	}
	resp.buckets = v;
	resp.n_buckets = cnt;
	rpc_respond(r, &resp.base, NULL);
	for (size_t i = 0; i < cnt; i++)
		meta_state_free_msg(v[i]);
	free(v);
}

/* A read of bucket/key addressed to range_id (0: the root's table):
 * 0, with *refused set when this group refuses it (*st says why), or a
 * storage error. on_loop: count the read for load splits (loop-owned
 * memory). */
static int key_gate(struct meta_group *g, uint64_t range_id, const char *bucket, const char *key,
		    bool on_loop, Iolake__Meta__Status *st, bool *refused)
{
	*refused = false;
	if (range_id) {
		int grc = node_range_gate(g, range_id, bucket, key, NULL);
		if (grc && storage_err(grc))
			return grc;
		if (grc) {
			*st = st_of(grc);
			*refused = true;
			return 0;
		}
	}
	if (on_loop)
		node_range_note(g, range_id, key);   /* load splits */
	return 0;
}

/* HeadObject's answer from g's state into *resp (its record and bucket
 * then the caller's, meta_state_free_msg): 0, or a storage error and no
 * answer. on_loop: count the read for load splits (loop-owned). */
static int head_object_read(struct meta_group *g, const Iolake__Meta__HeadObjectRequest *q,
			    Iolake__Meta__HeadObjectResponse *resp, bool on_loop)
{
	bool refused;
	int grc = key_gate(g, q->range_id, q->bucket, q->key, on_loop, &resp->status, &refused);
	if (grc || refused)   /* refused: the router reads the root's bucket record */
		return grc;
	if (q->with_bucket && !q->range_id) {
		int brc = meta_state_get_bucket(g->state, q->bucket, &resp->bucket);
		if (brc == 0 && g->id == 0 && !q->no_usage)
			brc = meta_state_quota_fill(g->state, resp->bucket);
		if (storage_err(brc))
			return brc;
	}
	int rc = meta_state_head_object(g->state, q->bucket, q->key, &resp->record);
	if (storage_err(rc))
		return rc;
	if (rc == IOL_ENOT_FOUND && stale_root_route(g, q->range_id, q->bucket))
		rc = META_EWRONG_RANGE;
	if (rc == 0 && resp->record->is_delete_marker)
		rc = IOL_ENOT_FOUND;   /* deleted (versioning): the marker rides along */
	resp->status = st_of(rc);
	return 0;
}

static void serve_head_object(struct meta_group *g, struct rpc_req *r)
{
	Iolake__Meta__HeadObjectResponse resp = IOLAKE__META__HEAD_OBJECT_RESPONSE__INIT;
	int rc = head_object_read(g, REQ(Iolake__Meta__HeadObjectRequest, r), &resp, true);
	if (!read_failed(r, rc))
		rpc_respond(r, &resp.base, NULL);
	meta_state_free_msg(resp.record);
	meta_state_free_msg(resp.bucket);
}

static void serve_list_objects(struct meta_group *g, struct rpc_req *r)
{
	const Iolake__Meta__ListObjectsRequest *q = REQ(Iolake__Meta__ListObjectsRequest, r);
	Iolake__Meta__ListObjectsResponse resp = IOLAKE__META__LIST_OBJECTS_RESPONSE__INIT;
	Iolake__Meta__RangeDesc *rd = NULL;
	int rc = list_gate(g, r, q->range_id, q->bucket, &rd);
	if (rc) {
		if (rc > 0)
			return;
		resp.status = st_of(rc);
		rpc_respond(r, &resp.base, NULL);
		return;
	}
	if (rd)   /* load splits: a page counts where it starts */
		node_range_note(g, q->range_id, list_key(rd, q->start_after, q->prefix));
	struct meta_list_req lr = {
		.lo = rd ? rd->start : NULL,
		.hi = rd ? rd->end : NULL,
		.bucket = q->bucket,
		.prefix = q->prefix,
		.delimiter = q->delimiter,
		.start_after = q->start_after[0] ? q->start_after : NULL,
		.token = q->token[0] ? q->token : NULL,
		.max_keys = q->max_keys,
		.want_records = q->want_records,
	};
	struct meta_list_page page;
	memset(&page, 0, sizeof(page));
	rc = meta_list(g->state, &lr, &page);
	meta_state_free_msg(rd);
	if (read_failed(r, rc)) {
		meta_list_page_free(&page);
		return;
	}
	Iolake__Meta__ListEntry *ents = NULL;
	Iolake__Meta__ListEntry **ptrs = NULL;
	if (!rc && page.n) {
		ents = calloc(page.n, sizeof(*ents));
		ptrs = calloc(page.n, sizeof(*ptrs));
		if (!ents || !ptrs) {
			free(ents);
			free(ptrs);
			meta_list_page_free(&page);
			rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "out of memory");
			return;
		}
	}
	resp.status = st_of(rc);
	if (!rc) {
		for (size_t i = 0; i < page.n; i++) {
			iolake__meta__list_entry__init(&ents[i]);
			ents[i].name = page.entries[i].name;
			ents[i].is_prefix = page.entries[i].is_prefix;
			ents[i].record = page.entries[i].rec;
			ptrs[i] = &ents[i];
		}
		resp.entries = ptrs;
		resp.n_entries = page.n;
		resp.truncated = page.truncated;
		resp.next_token = page.truncated ? page.next_token : (char *)"";
	}
	rpc_respond(r, &resp.base, NULL);
	free(ents);
	free(ptrs);
	meta_list_page_free(&page);
}

static void serve_get_access_key(struct meta_group *g, struct rpc_req *r)
{
	const Iolake__Meta__GetAccessKeyRequest *q = REQ(Iolake__Meta__GetAccessKeyRequest, r);
	Iolake__Meta__GetAccessKeyResponse resp = IOLAKE__META__GET_ACCESS_KEY_RESPONSE__INIT;
	Iolake__Meta__AccessKey *k = NULL;
	int rc = meta_state_get_access_key(g->state, q->access_key_id, &k);
	if (read_failed(r, rc))
		return;
	resp.status = st_of(rc);
	resp.key = k;
	Iolake__Meta__User *u = NULL;
	if (k && k->user && meta_state_get_user(g->state, k->user, &u) == 0) {
		resp.admin = u->admin;
		resp.grants = u->grants;   /* u's until freed below */
		resp.n_grants = u->n_grants;
	}
	rpc_respond(r, &resp.base, NULL);
	meta_state_free_msg(u);
	meta_state_free_msg(k);
}

static void serve_list_users(struct meta_group *g, struct rpc_req *r)
{
	Iolake__Meta__ListUsersResponse resp = IOLAKE__META__LIST_USERS_RESPONSE__INIT;
	Iolake__Meta__User **v = NULL;
	size_t cnt = 0;
	int rc = meta_state_list_users(g->state, &v, &cnt);
	if (rc) {
		rpc_fail(r, RPC_INTERNAL, "list users: %s", iol_strerror(rc));
		return;
	}
	resp.users = v;
	resp.n_users = cnt;
	rpc_respond(r, &resp.base, NULL);
	for (size_t i = 0; i < cnt; i++)
		meta_state_free_msg(v[i]);
	free(v);
}

static void serve_get_map(struct meta_group *g, struct rpc_req *r)
{
	Iolake__Meta__GetMapResponse resp = IOLAKE__META__GET_MAP_RESPONSE__INIT;
	Iolake__Meta__ClusterMap *m = NULL;
	int rc = meta_state_get_map(g->state, &m);
	if (read_failed(r, rc))
		return;
	resp.status = st_of(rc);
	resp.map = m;
	rpc_respond(r, &resp.base, NULL);
	meta_state_free_msg(m);
}

/* ------------------------------------------------- multipart reads */

static void serve_get_upload(struct meta_group *g, struct rpc_req *r)
{
	const Iolake__Meta__GetUploadRequest *q = REQ(Iolake__Meta__GetUploadRequest, r);
	Iolake__Meta__GetUploadResponse resp = IOLAKE__META__GET_UPLOAD_RESPONSE__INIT;
	Iolake__Meta__MultipartUpload *u = NULL;
	Iolake__Meta__Part *p = NULL;
	if (q->range_id && range_refused(g, r, q->range_id, q->bucket, q->key, &resp.base, &resp.status))
		return;
	int rc = meta_state_get_upload(g->state, q->bucket, q->key, q->upload_id, &u);
	if (read_failed(r, rc))
		return;
	if (rc == IOL_ENOT_FOUND && stale_root_route(g, q->range_id, q->bucket))
		rc = META_EWRONG_RANGE;
	if (rc == 0 && q->part_number > 0) {
		int prc = u->part_rows ? meta_state_get_part_row(g->state, q->bucket, q->key,
								 q->upload_id, q->part_number, &p)
				       : meta_state_get_part(g->state, q->upload_id, q->part_number, &p);
		if (read_failed(r, prc)) {
			meta_state_free_msg(u);
			return;
		}
	}
	resp.status = st_of(rc);
	resp.upload = u;
	resp.part = p;
	rpc_respond(r, &resp.base, NULL);
	meta_state_free_msg(p);
	meta_state_free_msg(u);
}

static void serve_list_parts(struct meta_group *g, struct rpc_req *r)
{
	const Iolake__Meta__ListPartsRequest *q = REQ(Iolake__Meta__ListPartsRequest, r);
	Iolake__Meta__ListPartsResponse resp = IOLAKE__META__LIST_PARTS_RESPONSE__INIT;
	Iolake__Meta__MultipartUpload *u = NULL;
	Iolake__Meta__Part **v = NULL;
	size_t cnt = 0;
	bool trunc = false;
	if (q->range_id && range_refused(g, r, q->range_id, q->bucket, q->key, &resp.base, &resp.status))
		return;
	int rc = meta_state_get_upload(g->state, q->bucket, q->key, q->upload_id, &u);
	if (read_failed(r, rc))
		return;
	if (rc == IOL_ENOT_FOUND && stale_root_route(g, q->range_id, q->bucket))
		rc = META_EWRONG_RANGE;
	if (rc == 0) {
		/* An upload with part rows lists no layouts: 10,000 parts of
		 * 5 GiB would be 1.2 GB of them (nobody listing needs them;
		 * what Complete and Abort drop is queued for GC in meta). */
		int lrc = u->part_rows
				  ? meta_state_list_part_rows(g->state, q->bucket, q->key, q->upload_id,
							      q->part_number_marker, q->max_parts,
							      true, &v, &cnt, &trunc)
				  : meta_state_list_parts(g->state, q->upload_id, q->part_number_marker,
							  q->max_parts, &v, &cnt, &trunc);
		if (lrc) {
			meta_state_free_msg(u);
			rpc_fail(r, RPC_INTERNAL, "list parts: %s", iol_strerror(lrc));
			return;
		}
	}
	resp.status = st_of(rc);
	resp.upload = u;
	resp.parts = v;
	resp.n_parts = cnt;
	resp.truncated = trunc;
	rpc_respond(r, &resp.base, NULL);
	for (size_t i = 0; i < cnt; i++)
		meta_state_free_msg(v[i]);
	free(v);
	meta_state_free_msg(u);
}

/* Issue 18: the part rows of an upload or a completed object
 * (meta/state_prows.c), with their layouts, bounded by count and bytes. */
static void serve_get_part_rows(struct meta_group *g, struct rpc_req *r)
{
	const Iolake__Meta__GetPartRowsRequest *q = REQ(Iolake__Meta__GetPartRowsRequest, r);
	Iolake__Meta__GetPartRowsResponse resp = IOLAKE__META__GET_PART_ROWS_RESPONSE__INIT;
	Iolake__Meta__Part **v = NULL;
	size_t cnt = 0;
	bool trunc = false;
	if (q->range_id && range_refused(g, r, q->range_id, q->bucket, q->key, &resp.base, &resp.status))
		return;
	int rc = meta_state_list_part_rows(g->state, q->bucket, q->key, q->upload_id,
					   q->part_number_marker, q->max_parts, false, &v, &cnt,
					   &trunc);
	if (rc && rc != -EINVAL) {
		read_failed(r, rc);
		return;
	}
	if (rc == 0 && cnt == 0 && stale_root_route(g, q->range_id, q->bucket))
		rc = META_EWRONG_RANGE;
	resp.status = st_of(rc);
	resp.parts = v;
	resp.n_parts = cnt;
	resp.truncated = trunc;
	rpc_respond(r, &resp.base, NULL);
	for (size_t i = 0; i < cnt; i++)
		meta_state_free_msg(v[i]);
	free(v);
}

static void serve_list_uploads(struct meta_group *g, struct rpc_req *r)
{
	const Iolake__Meta__ListUploadsRequest *q = REQ(Iolake__Meta__ListUploadsRequest, r);
	Iolake__Meta__ListUploadsResponse resp = IOLAKE__META__LIST_UPLOADS_RESPONSE__INIT;
	Iolake__Meta__RangeDesc *rd = NULL;
	int rc = list_gate(g, r, q->range_id, q->bucket, &rd);
	if (rc) {
		if (rc > 0)
			return;
		resp.status = st_of(rc);
		rpc_respond(r, &resp.base, NULL);
		return;
	}
	struct meta_list_uploads_req lr = {
		.lo = rd ? rd->start : NULL,
		.hi = rd ? rd->end : NULL,
		.bucket = q->bucket,
		.prefix = q->prefix,
		.delimiter = q->delimiter,
		.key_marker = q->key_marker,
		.upload_id_marker = q->upload_id_marker,
		.max_uploads = q->max_uploads == 0 ? META_LIST_MAX_KEYS : q->max_uploads,
	};
	struct meta_list_page page;
	rc = meta_list_uploads(g->state, &lr, &page);
	meta_state_free_msg(rd);
	if (read_failed(r, rc)) {
		meta_list_page_free(&page);
		return;
	}
	/* The page's entries, split: uploads and prefix names (borrowed). */
	Iolake__Meta__MultipartUpload **ups = calloc(page.n + 1, sizeof(*ups));
	char **cps = calloc(page.n + 1, sizeof(*cps));
	if (!ups || !cps) {
		free(ups);
		free(cps);
		meta_list_page_free(&page);
		rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	resp.status = st_of(rc);
	for (size_t i = 0; !rc && i < page.n; i++) {
		if (page.entries[i].is_prefix)
			cps[resp.n_common_prefixes++] = page.entries[i].name;
		else
			ups[resp.n_uploads++] = page.entries[i].upload;
	}
	resp.uploads = ups;
	resp.common_prefixes = cps;
	if (!rc && page.truncated) {
		const struct meta_list_entry *last = &page.entries[page.n - 1];
		resp.truncated = true;
		resp.next_key_marker = last->is_prefix ? last->name : last->upload->key;
		resp.next_upload_id_marker = last->is_prefix ? (char *)"" : last->upload->upload_id;
	}
	rpc_respond(r, &resp.base, NULL);
	free(ups);
	free(cps);
	meta_list_page_free(&page);
}

/* A page of the shard-GC queue for the gateways' GC workers. */
static void serve_list_gc(struct meta_group *g, struct rpc_req *r)
{
	const Iolake__Meta__ListGcRequest *q = REQ(Iolake__Meta__ListGcRequest, r);
	Iolake__Meta__ListGcResponse resp = IOLAKE__META__LIST_GC_RESPONSE__INIT;
	Iolake__Meta__GcEntry **v = NULL;
	size_t cnt = 0;
	bool trunc = false;
	int rc = meta_state_list_gc(g->state, q->start_after_generation, q->start_after_seq,
				    q->max_entries, &v, &cnt, &trunc);
	if (rc) {
		rpc_fail(r, RPC_INTERNAL, "list gc: %s", iol_strerror(rc));
		return;
	}
	meta_state_gc_count(g->state, &resp.queue_length);
	resp.entries = v;
	resp.n_entries = cnt;
	resp.is_truncated = trunc;
	rpc_respond(r, &resp.base, NULL);
	for (size_t i = 0; i < cnt; i++)
		meta_state_free_msg(v[i]);
	free(v);
}

/* The orphan sweep's question: which of these ids does a live record or
 * part name in pg (meta_state_check_refs). */
static void serve_check_shards(struct meta_group *g, struct rpc_req *r)
{
	const Iolake__Meta__CheckShardsRequest *q = REQ(Iolake__Meta__CheckShardsRequest, r);
	Iolake__Meta__CheckShardsResponse resp = IOLAKE__META__CHECK_SHARDS_RESPONSE__INIT;
	size_t cnt = q->n_object_ids;
	bool ok = cnt <= META_CHECK_SHARDS_MAX;
	for (size_t i = 0; ok && i < cnt; i++)
		ok = q->object_ids[i].len == META_REF_ID_LEN;
	if (!ok) {
		resp.status = IOLAKE__META__STATUS__STATUS_INVALID;
		rpc_respond(r, &resp.base, NULL);
		return;
	}
	const uint8_t *ids[META_CHECK_SHARDS_MAX];
	protobuf_c_boolean refs[META_CHECK_SHARDS_MAX];
	bool b[META_CHECK_SHARDS_MAX];
	for (size_t i = 0; i < cnt; i++)
		ids[i] = q->object_ids[i].data;
	int rc = meta_state_check_refs(g->state, q->pg, ids, cnt, b);
	if (rc) {
		rpc_fail(r, RPC_INTERNAL, "check shards: %s", iol_strerror(rc));
		return;
	}
	for (size_t i = 0; i < cnt; i++)
		refs[i] = b[i];
	resp.referenced = refs;
	resp.n_referenced = cnt;
	rpc_respond(r, &resp.base, NULL);
}

/* ---- versions (issue 17; meta/state_ver.h) */

/* GetVersion's answer, as head_object_read's. */
static int get_version_read(struct meta_group *g, const Iolake__Meta__GetVersionRequest *q,
			    Iolake__Meta__GetVersionResponse *resp, bool on_loop)
{
	bool refused;
	int grc = key_gate(g, q->range_id, q->bucket, q->key, on_loop, &resp->status, &refused);
	if (grc || refused)
		return grc;
	int rc = meta_state_get_version(g->state, q->bucket, q->key, q->version_id, &resp->record);
	if (storage_err(rc))
		return rc;
	if (rc == IOL_ENOT_FOUND && stale_root_route(g, q->range_id, q->bucket))
		rc = META_EWRONG_RANGE;
	resp->status = st_of(rc);
	return 0;
}

static void serve_get_version(struct meta_group *g, struct rpc_req *r)
{
	Iolake__Meta__GetVersionResponse resp = IOLAKE__META__GET_VERSION_RESPONSE__INIT;
	int rc = get_version_read(g, REQ(Iolake__Meta__GetVersionRequest, r), &resp, true);
	if (!read_failed(r, rc))
		rpc_respond(r, &resp.base, NULL);
	meta_state_free_msg(resp.record);
}

static void serve_list_versions(struct meta_group *g, struct rpc_req *r)
{
	const Iolake__Meta__ListVersionsRequest *q = REQ(Iolake__Meta__ListVersionsRequest, r);
	Iolake__Meta__ListVersionsResponse resp = IOLAKE__META__LIST_VERSIONS_RESPONSE__INIT;
	Iolake__Meta__RangeDesc *rd = NULL;
	int rc = list_gate(g, r, q->range_id, q->bucket, &rd);
	if (rc) {
		if (rc > 0)
			return;
		resp.status = st_of(rc);
		rpc_respond(r, &resp.base, NULL);
		return;
	}
	rc = meta_state_list_versions(g->state, q, rd ? rd->start : NULL, rd ? rd->end : NULL,
				      &resp);
	resp.range_end = rd && rd->end ? rd->end : (char *)"";
	if (rc == 0 || rc == -EINVAL) {
		resp.status = st_of(rc);
		rpc_respond(r, &resp.base, NULL);
	} else {
		read_failed(r, rc);
	}
	meta_state_list_versions_free(&resp);
	meta_state_free_msg(rd);
}

void node_serve_read(struct meta_group *g, struct rpc_req *r, unsigned method)
{
	switch (method) {
	case META_M_GET_BUCKET: serve_get_bucket(g, r); break;
	case META_M_LIST_BUCKETS: serve_list_buckets(g, r); break;
	case META_M_HEAD_OBJECT: serve_head_object(g, r); break;
	case META_M_LIST_OBJECTS: serve_list_objects(g, r); break;
	case META_M_GET_ACCESS_KEY: serve_get_access_key(g, r); break;
	case META_M_LIST_USERS: serve_list_users(g, r); break;
	case META_M_GET_MAP: serve_get_map(g, r); break;
	case META_M_GET_UPLOAD: serve_get_upload(g, r); break;
	case META_M_LIST_PARTS: serve_list_parts(g, r); break;
	case META_M_LIST_UPLOADS: serve_list_uploads(g, r); break;
	case META_M_LIST_GC: serve_list_gc(g, r); break;
	case META_M_CHECK_SHARDS: serve_check_shards(g, r); break;
	case META_M_GET_RANGES: node_serve_get_ranges(g, r); break;
	case META_M_GET_VERSION: serve_get_version(g, r); break;
	case META_M_LIST_VERSIONS: serve_list_versions(g, r); break;
	case META_M_READ_RANGE: node_serve_read_range(g, r); break;
	case META_M_GET_PART_ROWS: serve_get_part_rows(g, r); break;
	default: rpc_fail(r, RPC_INTERNAL, "not a read"); break;
	}
}

/* Every linearizable read: the addressed group's leader only, after a
 * ReadIndex round (or a barrier); a follower forwards it there
 * (node_fwd.c), or redirects. */
static void h_read(struct rpc_req *r, struct meta_node *n, unsigned method)
{
	struct meta_group *g = req_group(n, r);
	if (!g)
		return;
	if (!group_is_leader(g)) {
		if (node_forward(g, r, method))
			group_fail_not_leader(g, r);
		return;
	}
	int rc = node_queue_read(g, r, method);
	if (rc)
		rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "read queue: %s", iol_strerror(rc));
}

/* ---- direct reads (node_direct.c): HeadObject and GetVersion on the
 * caller's thread, in process. Answered only from the published root and
 * from one state (the write sequence unmoved across the rows read), with
 * what the loop's serve_* would answer; anything else declines, and the
 * call takes h_read's way. A storage error declines too: the loop's
 * path answers it. */

/* The read one direct call makes: fills resp from g's state (0), or a
 * storage error. */
typedef int (*direct_read_fn)(struct meta_group *g, struct rpc_req *r, ProtobufCMessage *resp);

/* Answers r with what read puts in resp when the root is published and
 * the rows came from one state; false (nothing answered) otherwise. The
 * caller frees what resp holds either way. */
static bool direct_answer(struct meta_node *n, struct rpc_req *r, direct_read_fn read,
			  ProtobufCMessage *resp)
{
	struct meta_group *g = node_direct_acquire(n, req_group_id(r));
	if (!g)
		return false;
	uint64_t seq = meta_state_read_seq(g->state);
	bool ok = !(seq & 1) && read(g, r, resp) == 0 && meta_state_read_same(g->state, seq);
	node_direct_release(n);
	if (ok) {
		metrics_counter_inc(n->m_direct_reads);
		rpc_respond(r, resp, NULL);
	}
	return ok;
}

static int head_direct(struct meta_group *g, struct rpc_req *r, ProtobufCMessage *resp)
{
	return head_object_read(g, REQ(Iolake__Meta__HeadObjectRequest, r),
				(Iolake__Meta__HeadObjectResponse *)resp, false);
}

static int version_direct(struct meta_group *g, struct rpc_req *r, ProtobufCMessage *resp)
{
	return get_version_read(g, REQ(Iolake__Meta__GetVersionRequest, r),
				(Iolake__Meta__GetVersionResponse *)resp, false);
}

static bool d_head_object(struct rpc_req *r, void *ud)
{
	Iolake__Meta__HeadObjectResponse resp = IOLAKE__META__HEAD_OBJECT_RESPONSE__INIT;
	bool ok = direct_answer(ud, r, head_direct, &resp.base);
	meta_state_free_msg(resp.record);
	meta_state_free_msg(resp.bucket);
	return ok;
}

static bool d_get_version(struct rpc_req *r, void *ud)
{
	Iolake__Meta__GetVersionResponse resp = IOLAKE__META__GET_VERSION_RESPONSE__INIT;
	bool ok = direct_answer(ud, r, version_direct, &resp.base);
	meta_state_free_msg(resp.record);
	return ok;
}

#define READ_HANDLER(fn, method) \
	static void fn(struct rpc_req *r, void *ud) { h_read(r, ud, method); }
READ_HANDLER(h_get_bucket, META_M_GET_BUCKET)
READ_HANDLER(h_list_buckets, META_M_LIST_BUCKETS)
READ_HANDLER(h_head_object, META_M_HEAD_OBJECT)
READ_HANDLER(h_list_objects, META_M_LIST_OBJECTS)
READ_HANDLER(h_get_access_key, META_M_GET_ACCESS_KEY)
READ_HANDLER(h_list_users, META_M_LIST_USERS)
READ_HANDLER(h_get_map, META_M_GET_MAP)
READ_HANDLER(h_get_upload, META_M_GET_UPLOAD)
READ_HANDLER(h_list_parts, META_M_LIST_PARTS)
READ_HANDLER(h_list_uploads, META_M_LIST_UPLOADS)
READ_HANDLER(h_list_gc, META_M_LIST_GC)
READ_HANDLER(h_check_shards, META_M_CHECK_SHARDS)
READ_HANDLER(h_get_ranges, META_M_GET_RANGES)
READ_HANDLER(h_get_version, META_M_GET_VERSION)
READ_HANDLER(h_list_versions, META_M_LIST_VERSIONS)
READ_HANDLER(h_read_range, META_M_READ_RANGE)
READ_HANDLER(h_get_part_rows, META_M_GET_PART_ROWS)

/* ----------------------------------------------------------- WatchMap */

static void answer_watch(struct meta_node *n, struct rpc_req *r, bool changed)
{
	Iolake__Meta__WatchMapResponse resp = IOLAKE__META__WATCH_MAP_RESPONSE__INIT;
	Iolake__Meta__ClusterMap *m = NULL;
	if (changed && meta_state_get_map(n->root->state, &m))
		changed = false;
	resp.changed = changed;
	resp.map = m;
	resp.epoch = n->epoch;
	rpc_respond(r, &resp.base, NULL);
	meta_state_free_msg(m);
}

static void h_watch_map(struct rpc_req *r, void *ud)
{
	struct meta_node *n = ud;
	const Iolake__Meta__WatchMapRequest *q = REQ(Iolake__Meta__WatchMapRequest, r);
	if (n->epoch > q->epoch) {
		answer_watch(n, r, true);
		return;
	}
	if (n->n_watches >= META_NODE_WATCHES_MAX) {
		rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "too many watches");
		return;
	}
	rpc_req_long_poll(r); /* not a slow call: held on purpose */
	struct watch *w = calloc(1, sizeof(*w));
	if (!w) {
		rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	uint32_t t = q->timeout_ms ? q->timeout_ms : WATCH_DEFAULT_MS;
	if (t > WATCH_MAX_MS)
		t = WATCH_MAX_MS;
	w->req = r;
	w->epoch = q->epoch;
	w->deadline_ms = loop_now_ms() + t;
	w->next = n->watches;
	n->watches = w;
	n->n_watches++;
}

void node_wake_watches(struct meta_node *n, bool closing)
{
	for (struct watch **pp = &n->watches; *pp;) {
		struct watch *w = *pp;
		if (closing || n->epoch > w->epoch) {
			*pp = w->next;
			n->n_watches--;
			if (closing)
				rpc_fail(w->req, RPC_UNAVAILABLE, "member stopping");
			else
				answer_watch(n, w->req, true);
			free(w);
		} else {
			pp = &w->next;
		}
	}
}

void node_expire_watches(struct meta_node *n, uint64_t now_ms)
{
	for (struct watch **pp = &n->watches; *pp;) {
		struct watch *w = *pp;
		if (now_ms >= w->deadline_ms || rpc_req_cancelled(w->req)) {
			*pp = w->next;
			n->n_watches--;
			answer_watch(n, w->req, false);
			free(w);
		} else {
			pp = &w->next;
		}
	}
}

/* ---------------------------------------------------------- Heartbeat */

static void h_heartbeat(struct rpc_req *r, void *ud)
{
	struct meta_node *n = ud;
	const Iolake__Meta__HeartbeatRequest *q = REQ(Iolake__Meta__HeartbeatRequest, r);
	if (rpc_authz_osd_id(r, q->osd_id))
		return;   /* issue 16: another OSD's id */
	if (!node_is_leader(n)) {
		group_fail_not_leader(n->root, r);
		return;
	}
	Iolake__Meta__HeartbeatResponse resp = IOLAKE__META__HEARTBEAT_RESPONSE__INIT;
	resp.status = IOLAKE__META__STATUS__STATUS_NOT_FOUND;
	resp.epoch = n->epoch;
	for (size_t i = 0; n->map && i < n->map->n_osds; i++)
		if (n->map->osds[i]->id == q->osd_id) {
			node_osd_beat(n, n->map->osds[i]);
			resp.status = IOLAKE__META__STATUS__STATUS_OK;
			break;
		}
	rpc_respond(r, &resp.base, NULL);
}

/* ----------------------------------------------------------- PG health */

static const Iolake__Meta__OsdInfo *map_osd(const struct meta_node *n, uint32_t id)
{
	for (size_t i = 0; n->map && i < n->map->n_osds; i++)
		if (n->map->osds[i]->id == id)
			return n->map->osds[i];
	return NULL;
}

/* A primary's reports; answered with the PGs flagged for it. */
static void h_report_pgs(struct rpc_req *r, void *ud)
{
	struct meta_node *n = ud;
	const Iolake__Meta__ReportPgsRequest *q = REQ(Iolake__Meta__ReportPgsRequest, r);
	if (rpc_authz_osd_id(r, q->osd_id))
		return;   /* issue 16: another OSD's id */
	if (!node_is_leader(n)) {
		group_fail_not_leader(n->root, r);
		return;
	}
	Iolake__Meta__ReportPgsResponse resp = IOLAKE__META__REPORT_PGS_RESPONSE__INIT;
	resp.epoch = n->epoch;
	if (!map_osd(n, q->osd_id)) {
		resp.status = IOLAKE__META__STATUS__STATUS_NOT_FOUND;
		rpc_respond(r, &resp.base, NULL);
		return;
	}
	if (q->n_pgs > PLACE_MAX_PGS) {
		rpc_fail(r, RPC_INVALID_ARGUMENT, "at most %u PG reports per call",
			 PLACE_MAX_PGS);
		return;
	}
	uint64_t now = loop_now_ms();
	if (meta_pgstate_osd_rate(n->pgs, q->osd_id, q->rate_bytes_per_s, now) == -ENOMEM) {
		rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	for (size_t i = 0; i < q->n_pgs; i++) {
		metrics_counter_inc(n->m_pg_reports);
		int rc = meta_pgstate_report(n->pgs, n->map, q->osd_id, q->pgs[i], now);
		if (rc == -ENOMEM) {
			rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "out of memory");
			return;
		}
		if (rc)
			metrics_counter_inc(n->m_pg_reports_bad);
	}
	uint32_t *resc = NULL;
	size_t flagged = meta_pgstate_flagged(n->pgs);
	if (flagged) {
		resc = calloc(flagged, sizeof(*resc));
		if (resc)   /* without memory the flags wait for the next report */
			resp.n_rescan_pgs = meta_pgstate_take_rescans(n->pgs, n->map, q->osd_id,
								      resc, flagged);
	}
	resp.rescan_pgs = resc;
	rpc_respond(r, &resp.base, NULL);
	free(resc);
}

static void h_flag_pgs(struct rpc_req *r, void *ud)
{
	struct meta_node *n = ud;
	const Iolake__Meta__FlagPgsRequest *q = REQ(Iolake__Meta__FlagPgsRequest, r);
	if (!node_is_leader(n)) {
		group_fail_not_leader(n->root, r);
		return;
	}
	Iolake__Meta__FlagPgsResponse resp = IOLAKE__META__FLAG_PGS_RESPONSE__INIT;
	if (!n->map) {
		resp.status = IOLAKE__META__STATUS__STATUS_NOT_FOUND;
		rpc_respond(r, &resp.base, NULL);
		return;
	}
	int reason = NODE_FLAG_REASONS - 1;   /* "other" */
	for (int i = 0; q->reason && i < NODE_FLAG_REASONS - 1; i++)
		if (!strcmp(q->reason, node_flag_reasons[i]))
			reason = i;
	for (size_t i = 0; i < q->n_pgs; i++) {
		int rc = meta_pgstate_flag(n->pgs, n->map, q->pgs[i]);
		if (rc == 0)
			metrics_counter_inc(n->m_pg_flags[reason]);
		else
			metrics_counter_inc(n->m_pg_reports_bad);
	}
	rpc_respond(r, &resp.base, NULL);
}

/* The PG table with derived states. Every array points into the map and
 * the PG table, which stay put until rpc_respond has packed the answer. */
static void h_pg_stats(struct rpc_req *r, void *ud)
{
	struct meta_node *n = ud;
	if (!node_is_leader(n)) {
		group_fail_not_leader(n->root, r);
		return;
	}
	Iolake__Meta__PgStatsResponse resp = IOLAKE__META__PG_STATS_RESPONSE__INIT;
	const Iolake__Meta__ClusterMap *m = n->map;
	if (!m) {
		resp.status = IOLAKE__META__STATUS__STATUS_NOT_FOUND;
		rpc_respond(r, &resp.base, NULL);
		return;
	}
	size_t np = m->n_pgs;
	struct meta_pg_derived *d = calloc(np ? np : 1, sizeof(*d));
	Iolake__Meta__PgStat *st = calloc(np ? np : 1, sizeof(*st));
	Iolake__Meta__PgStat **stp = calloc(np ? np : 1, sizeof(*stp));
	Iolake__Meta__PgReport *rp = calloc(np ? np : 1, sizeof(*rp));
	if (!d || !st || !stp || !rp) {
		rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "out of memory");
		goto out;
	}
	struct meta_pg_totals t;
	uint64_t now = loop_now_ms();
	meta_pgstate_derive_all(n->pgs, m, now, d, &t);
	for (size_t i = 0; i < np; i++) {
		iolake__meta__pg_stat__init(&st[i]);
		st[i].pg = (uint32_t)i;
		st[i].state = (char *)meta_pgstate_name(d[i].state);
		st[i].osds = m->pgs[i]->osds;
		st[i].n_osds = m->pgs[i]->n_osds;
		struct meta_pg_view v;
		if (meta_pgstate_view(m, (uint32_t)i, &v) == 0)
			st[i].up_mask = v.up_mask;
		st[i].primary = d[i].primary;
		st[i].report_valid = d[i].report_valid;
		st[i].report_age_ms = d[i].age_ms;
		st[i].eta_s = d[i].eta_s;
		const struct meta_pg_report *k = meta_pgstate_get(n->pgs, (uint32_t)i);
		if (k) {
			Iolake__Meta__PgReport *x = &rp[i];
			iolake__meta__pg_report__init(x);
			x->pg = (uint32_t)i;
			x->epoch = k->epoch;
			x->osds = (uint32_t *)k->osds;
			x->n_osds = k->n_osds;
			x->up_mask = k->up_mask;
			x->state = (char *)k->state;
			x->stripes = k->stripes;
			x->stripes_missing = k->stripes_missing;
			x->bytes_missing = k->bytes_missing;
			x->stripes_done = k->stripes_done;
			x->bytes_done = k->bytes_done;
			x->rate_bytes_per_s = k->rate_bytes_per_s;
			x->unfound = k->unfound;
			x->min_shards = k->min_shards;
			x->bad_shards = k->bad_shards;
			x->scan_started_ms = k->scan_started_ms;
			x->last_clean_ms = k->last_clean_ms;
			st[i].report = x;
		}
		stp[i] = &st[i];
	}
	Iolake__Meta__PgStateCount cnt[META_PG__COUNT];
	Iolake__Meta__PgStateCount *cntp[META_PG__COUNT];
	size_t nc = 0;
	for (int s = 0; s < META_PG__COUNT; s++) {   /* enum order is name order */
		if (!t.counts[s])
			continue;
		iolake__meta__pg_state_count__init(&cnt[nc]);
		cnt[nc].state = (char *)meta_pgstate_name((enum meta_pg_state)s);
		cnt[nc].pgs = t.counts[s];
		cntp[nc] = &cnt[nc];
		nc++;
	}
	resp.epoch = m->epoch;
	resp.pgs = stp;
	resp.n_pgs = np;
	resp.counts = cntp;
	resp.n_counts = nc;
	resp.stripes_missing = t.stripes_missing;
	resp.bytes_missing = t.bytes_missing;
	resp.rate_bytes_per_s = t.rate_bytes_per_s;
	resp.eta_s = t.eta_s;
	resp.unfound = t.unfound;
	rpc_respond(r, &resp.base, NULL);
out:
	free(rp);
	free(stp);
	free(st);
	free(d);
}

/* ------------------------------------------------------------- Status */

/* The state digest comes first (node_status_digest may scan off the loop),
 * then node_status_respond answers. */
static void h_status(struct rpc_req *r, void *ud)
{
	struct meta_group *g = req_group(ud, r);
	if (g)
		group_status_digest(g, r);
}

void node_status_respond(struct meta_group *g, struct rpc_req *r, const char *digest,
			 uint64_t digest_index)
{
	struct meta_node *n = g->n;
	struct meta_node_info info;
	group_info(g, &info);
	Iolake__Meta__StatusResponse resp = IOLAKE__META__STATUS_RESPONSE__INIT;
	resp.id = info.id;
	resp.address = n->rpc_addr;
	resp.role = (char *)meta_node_role_name(info.role);
	resp.term = info.term;
	resp.commit_index = info.commit_index;
	resp.applied_index = info.applied_index;
	resp.last_index = info.last_index;
	resp.leader_id = info.leader_id;
	resp.leader_address = info.leader_addr;
	resp.epoch = info.epoch;
	resp.snapshot_restores = info.restores;
	resp.snapshot_installing = info.installing;
	resp.state_digest = (char *)digest;
	resp.state_applied_index = digest_index;
	meta_state_gc_count(g->state, &resp.gc_queue);
	if (g->id == 0) {
		/* The root's answer counts every group this member hosts: range
		 * groups keep the GC entries of the records they hold. */
		struct meta_node *mn = g->n;
		for (size_t i = 0; i < mn->n_groups; i++) {
			uint64_t more = 0;
			if (mn->groups[i] != g && !meta_state_gc_count(mn->groups[i]->state, &more))
				resp.gc_queue += more;
		}
	}
	resp.group = g->id;
	const struct raft_configuration *c = &g->raft.configuration;
	Iolake__Meta__MemberInfo mi[META_NODE_MAX_PEERS * 2];
	Iolake__Meta__MemberInfo *mp[META_NODE_MAX_PEERS * 2];
	char addrs[META_NODE_MAX_PEERS * 2][META_NODE_ADDR_MAX];
	size_t k = 0;
	for (unsigned i = 0; i < c->n && k < META_NODE_MAX_PEERS * 2; i++, k++) {
		iolake__meta__member_info__init(&mi[k]);
		mi[k].id = c->servers[i].id;
		if (meta_node_rpc_addr(c->servers[i].address, addrs[k]))
			addrs[k][0] = 0;
		mi[k].address = addrs[k];
		mi[k].voter = c->servers[i].role == RAFT_VOTER;
		mp[k] = &mi[k];
	}
	resp.members = mp;
	resp.n_members = k;
	/* Every hosted group, in id order. */
	size_t ng = n->n_groups;
	Iolake__Meta__GroupStatus *gs = calloc(ng ? ng : 1, sizeof(*gs));
	Iolake__Meta__GroupStatus **gp = calloc(ng ? ng : 1, sizeof(*gp));
	char (*gaddr)[META_NODE_ADDR_MAX] = calloc(ng ? ng : 1, sizeof(*gaddr));
	uint64_t *voters = calloc((ng ? ng : 1) * META_NODE_MAX_PEERS, sizeof(*voters));
	if (!gs || !gp || !gaddr || !voters)
		ng = 0;   /* answered without the list rather than not at all */
	for (size_t i = 0; i < ng; i++) {
		struct meta_group *h = n->groups[i];
		struct meta_node_info hi;
		group_info(h, &hi);
		iolake__meta__group_status__init(&gs[i]);
		gs[i].id = h->id;
		gs[i].role = (char *)meta_node_role_name(hi.role);
		gs[i].leader_id = hi.leader_id;
		memcpy(gaddr[i], hi.leader_addr, sizeof(gaddr[i]));
		gs[i].leader_address = gaddr[i];
		gs[i].term = hi.term;
		gs[i].commit_index = hi.commit_index;
		gs[i].applied_index = hi.applied_index;
		gs[i].last_index = hi.last_index;
		gs[i].snapshots = hi.snapshots;
		gs[i].snapshot_restores = hi.restores;
		const struct raft_configuration *hc = &h->raft.configuration;
		uint64_t *vv = voters + i * META_NODE_MAX_PEERS;
		size_t nv = 0;
		for (unsigned k2 = 0; k2 < hc->n && nv < META_NODE_MAX_PEERS; k2++)
			if (hc->servers[k2].role == RAFT_VOTER)
				vv[nv++] = hc->servers[k2].id;
		gs[i].voters = vv;
		gs[i].n_voters = nv;
		gp[i] = &gs[i];
	}
	resp.groups = gp;
	resp.n_groups = ng;
	rpc_respond(r, &resp.base, NULL);
	free(voters);
	free(gaddr);
	free(gp);
	free(gs);
}

static void h_metrics(struct rpc_req *r, void *ud)
{
	struct meta_node *n = ud;
	char *text = NULL;
	size_t len = 0;
	if (metrics_render(n->metrics, &text, &len)) {
		rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	Iolake__Meta__MetricsResponse resp = IOLAKE__META__METRICS_RESPONSE__INIT;
	resp.text = text;
	rpc_respond(r, &resp.base, NULL);
	free(text);
}

/* ------------------------------------------------------ membership */

static void change_unlink(struct change *ch)
{
	struct meta_node *n = ch->n;
	for (struct change **pp = &n->changes; *pp; pp = &(*pp)->next)
		if (*pp == ch) {
			*pp = ch->next;
			break;
		}
}

static void change_finish(struct change *ch, int status)
{
	change_unlink(ch);
	if (ch->req) {
		if (status == 0) {
			Iolake__Meta__MemberChangeResponse resp = IOLAKE__META__MEMBER_CHANGE_RESPONSE__INIT;
			rpc_respond(ch->req, &resp.base, NULL);
		} else {
			rpc_fail(ch->req, RPC_UNAVAILABLE, "membership change: %s", raft_strerror(status));
		}
	}
	free(ch);
}

static void on_assigned(struct raft_change *c, int status)
{
	struct change *ch = c->data;
	LOG_INFO("member promoted", "id=%llu status=%s", (unsigned long long)ch->id,
		 status ? raft_strerror(status) : "ok");
	change_finish(ch, status);
}

static void on_added(struct raft_change *c, int status)
{
	struct change *ch = c->data;
	if (status == 0 && !ch->n->closing) {
		/* Promote: libraft catches the new member up before it votes. */
		status = raft_assign(&ch->n->root->raft, &ch->c, ch->id, RAFT_VOTER, on_assigned);
		if (status == 0)
			return;
	}
	change_finish(ch, status);
}

static void on_removed(struct raft_change *c, int status)
{
	change_finish(c->data, status);
}

static const struct raft_server *configuration_server(struct meta_node *n, uint64_t id)
{
	const struct raft_configuration *c = &n->root->raft.configuration;
	for (unsigned i = 0; i < c->n; i++)
		if (c->servers[i].id == id)
			return &c->servers[i];
	return NULL;
}

static bool in_root_configuration(struct meta_node *n, uint64_t id)
{
	return configuration_server(n, id) != NULL;
}

/* A change libraft would not start. Leadership lost or moving: the
 * client follows the hint. Another change still in flight (an add's
 * catch-up and promotion, a leader's first entry not yet committed):
 * busy, the client retries here after a backoff. Anything else is the
 * caller's mistake. */
static void change_fail_start(struct meta_node *n, struct rpc_req *r, int rc)
{
	switch (rc) {
	case RAFT_NOTLEADER:
	case RAFT_LEADERSHIPLOST:
		group_fail_not_leader(n->root, r);
		return;
	case RAFT_CANTCHANGE:
		rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "membership change: %s; retry",
			 raft_strerror(rc));
		return;
	default:
		rpc_fail(r, RPC_FAILED_PRECONDITION, "membership change: %s", raft_strerror(rc));
	}
}

static void on_leaving_transfer(struct raft_transfer *t)
{
	struct meta_group *g = t->data;
	g->xfer_busy = false;
}

static void h_member_change(struct rpc_req *r, struct meta_node *n, bool add)
{
	const Iolake__Meta__MemberChangeRequest *q = REQ(Iolake__Meta__MemberChangeRequest, r);
	if (!node_is_leader(n)) {
		group_fail_not_leader(n->root, r);
		return;
	}
	char ra[META_NODE_ADDR_MAX];
	if (q->id == 0 || (add && meta_node_raft_addr(q->address, ra))) {
		rpc_fail(r, RPC_INVALID_ARGUMENT, "need id > 0%s", add ? " and address HOST:PORT" : "");
		return;
	}
	struct change *ch = calloc(1, sizeof(*ch));
	if (!ch) {
		rpc_fail(r, RPC_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	ch->n = n;
	ch->req = r;
	ch->id = q->id;
	ch->add = add;
	ch->c.data = ch;
	if (!add && !in_root_configuration(n, q->id)) {
		/* Not (or no longer) a member: done (a retry of a removal that
		 * went through answers OK). */
		free(ch);
		Iolake__Meta__MemberChangeResponse resp = IOLAKE__META__MEMBER_CHANGE_RESPONSE__INIT;
		rpc_respond(r, &resp.base, NULL);
		return;
	}
	if (!add && group_members_lists(n, q->id)) {
		/* Range groups first (issue 13, group_members.c): the member
		 * leaves them while it still hears the root, so it learns they
		 * are done and drops its copies; then the root. */
		if (n->members_leaving && n->members_leaving != q->id) {
			rpc_fail(r, RPC_FAILED_PRECONDITION, "member %llu is being removed; retry",
				 (unsigned long long)n->members_leaving);
			free(ch);
			return;
		}
		if (q->id == n->o.id) {
			/* The leader leaving: it could not see the groups drop it
			 * (it stops hearing them first). Hand the root over; the
			 * client retries at the next leader. */
			free(ch);
			struct meta_group *root = n->root;
			if (!root->xfer_busy) {
				root->xfer.data = root;
				if (raft_transfer(&root->raft, &root->xfer, 0, on_leaving_transfer) == 0)
					root->xfer_busy = true;
			}
			rpc_fail(r, RPC_UNAVAILABLE, "the leader is the member leaving: handing over; retry");
			return;
		}
		for (struct change *o = n->changes; o; o = o->next)
			if (o->draining && o->id == q->id) {
				/* A retry of the call that started it: it answers this one. */
				if (o->req)
					rpc_fail(o->req, RPC_UNAVAILABLE, "superseded by a retry");
				o->req = r;
				free(ch);
				return;
			}
		n->members_leaving = q->id;
		ch->draining = true;
		ch->drain_deadline_ms = loop_now_ms() + MEMBER_DRAIN_MS;
		ch->next = n->changes;
		n->changes = ch;
		LOG_INFO("member leaving the range groups", "id=%llu", (unsigned long long)q->id);
		return;
	}
	int rc;
	const struct raft_server *have = add ? configuration_server(n, q->id) : NULL;
	if (have && strcmp(have->address, ra) != 0) {
		rpc_fail(r, RPC_FAILED_PRECONDITION, "member %llu is already at %s",
			 (unsigned long long)q->id, have->address);
		free(ch);
		return;
	}
	if (have && have->role == RAFT_VOTER) {
		/* A retry of an add that went through (its answer was lost to
		 * a leader change): done. */
		free(ch);
		Iolake__Meta__MemberChangeResponse resp = IOLAKE__META__MEMBER_CHANGE_RESPONSE__INIT;
		rpc_respond(r, &resp.base, NULL);
		return;
	}
	if (have)	/* added, never promoted (a leader change between the two) */
		rc = raft_assign(&n->root->raft, &ch->c, q->id, RAFT_VOTER, on_assigned);
	else
		rc = add ? raft_add(&n->root->raft, &ch->c, q->id, ra, on_added)
			 : raft_remove(&n->root->raft, &ch->c, q->id, on_removed);
	if (rc) {
		free(ch);
		change_fail_start(n, r, rc);
		return;
	}
	ch->next = n->changes;
	n->changes = ch;
}

static void h_add_member(struct rpc_req *r, void *ud)
{
	h_member_change(r, ud, true);
}

static void h_remove_member(struct rpc_req *r, void *ud)
{
	h_member_change(r, ud, false);
}

void node_change_drained(struct change *ch)
{
	struct meta_node *n = ch->n;
	ch->draining = false;
	if (n->members_leaving == ch->id)
		n->members_leaving = 0;
	int rc = raft_remove(&n->root->raft, &ch->c, ch->id, on_removed);
	if (rc)
		change_finish(ch, rc);
}

void node_change_fail(struct change *ch, int status)
{
	if (ch->n->members_leaving == ch->id)
		ch->n->members_leaving = 0;
	change_finish(ch, status);
}

/* Closing: libraft fails pending changes itself; the calls are answered
 * then, so here only their callers are told early. A change still
 * draining has nothing in libraft: it ends here. */
void node_cancel_changes(struct meta_node *n)
{
	struct change *next;
	for (struct change *ch = n->changes; ch; ch = next) {
		next = ch->next;
		if (ch->req) {
			rpc_fail(ch->req, RPC_UNAVAILABLE, "member stopping");
			ch->req = NULL;
		}
		if (ch->draining)
			node_change_fail(ch, RAFT_SHUTDOWN);
	}
}

static void h_confirm_leader(struct rpc_req *r, void *ud)
{
	node_confirm_leader(ud, r);
}

int node_service_register(struct meta_node *n)
{
	static const rpc_handler_fn handlers[META_M_COUNT] = {
		[META_M_FETCH_SNAPSHOT] = h_fetch_snapshot,   /* peers: file snapshots */
		[META_M_SUBMIT] = h_submit,
		[META_M_GET_BUCKET] = h_get_bucket,
		[META_M_LIST_BUCKETS] = h_list_buckets,
		[META_M_HEAD_OBJECT] = h_head_object,
		[META_M_LIST_OBJECTS] = h_list_objects,
		[META_M_GET_ACCESS_KEY] = h_get_access_key,
		[META_M_LIST_USERS] = h_list_users,
		[META_M_GET_MAP] = h_get_map,
		[META_M_WATCH_MAP] = h_watch_map,
		[META_M_HEARTBEAT] = h_heartbeat,
		[META_M_STATUS] = h_status,
		[META_M_ADD_MEMBER] = h_add_member,
		[META_M_REMOVE_MEMBER] = h_remove_member,
		[META_M_METRICS] = h_metrics,
		[META_M_GET_UPLOAD] = h_get_upload,
		[META_M_LIST_PARTS] = h_list_parts,
		[META_M_LIST_UPLOADS] = h_list_uploads,
		[META_M_LIST_GC] = h_list_gc,
		[META_M_REPORT_PGS] = h_report_pgs,
		[META_M_FLAG_PGS] = h_flag_pgs,
		[META_M_PG_STATS] = h_pg_stats,
		[META_M_CHECK_SHARDS] = h_check_shards,
		[META_M_CONFIRM_LEADER] = h_confirm_leader,
		[META_M_GET_RANGES] = h_get_ranges,
		[META_M_GET_VERSION] = h_get_version,
		[META_M_LIST_VERSIONS] = h_list_versions,
		[META_M_READ_RANGE] = h_read_range,
		[META_M_GET_PART_ROWS] = h_get_part_rows,
	};
	_Static_assert(META_M_COUNT == 29, "meta.proto service Meta has 29 methods");
	int rc = rpc_server_add_service(n->srv, META_SERVICE, handlers, n);
	if (rc == 0)
		rc = rpc_server_set_direct(n->srv, META_SERVICE, META_M_HEAD_OBJECT, d_head_object);
	if (rc == 0)
		rc = rpc_server_set_direct(n->srv, META_SERVICE, META_M_GET_VERSION, d_get_version);
	return rc;
}
