/*
 * service_read.c — the answers of the Meta service's reads from one
 * group's applied state: GetBucket, ListBuckets, HeadObject, ListObjects,
 * GetAccessKey, ListUsers, GetMap, the multipart reads, ListGc,
 * CheckShards, GetVersion, ListVersions and GetPartRows (GetRanges and
 * ReadRange are node_range.c's; node_serve_read routes to them too). It
 * owns the range gates of a read (a range routed by id must be open here
 * and hold the key; a root read by range id 0 of a bucket that has ranges
 * is a stale route) and how a read's result becomes an answer: a status
 * in the response (NOT_FOUND, WRONG_RANGE, INVALID), or, for a storage
 * error, a failed call (INTERNAL). It writes no state.
 *
 * Two ways in. node_serve_read, on the member's loop, once node_read.c
 * has made the read linearizable (a ReadIndex round or a barrier); a
 * range group's reads are counted for load splits there. The direct
 * handlers (node_serve_direct_*), on the caller's thread in process,
 * through the root node_direct.c publishes: they answer what the loop's
 * path would or decline, and touch nothing the loop owns.
 *
 * Not here: who may read (leadership, forwarding and redirects: service.c
 * and node_fwd.c; ReadIndex rounds: node_read.c; publishing the root:
 * node_direct.c), the handler table, writes, WatchMap and Status
 * (service.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "meta/list.h"
#include "meta/node_internal.h"
#include "meta/service_internal.h"
#include "meta/state_quota.h"
#include "meta/state_ver.h"

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

/* ---- direct reads (node_direct.c): HeadObject and GetVersion on the
 * caller's thread, in process. Answered only from the published root and
 * from one state (the write sequence unmoved across the rows read), with
 * what the loop's serve_* would answer; anything else declines, and the
 * call takes service.c's h_read's way. A storage error declines too: the
 * loop's path answers it. */

/* The read one direct call makes: fills resp from g's state (0), or a
 * storage error. */
typedef int (*direct_read_fn)(struct meta_group *g, struct rpc_req *r, ProtobufCMessage *resp);

/* Answers r with what read puts in a new resp of type desc when the root
 * is published and the rows came from one state: resp is given
 * (rpc_respond_give), so in process the caller gets the very records the
 * state unpacked, with no pack and unpack between. False (nothing
 * answered) otherwise. */
static bool direct_answer(struct meta_node *n, struct rpc_req *r, direct_read_fn read,
			  const ProtobufCMessageDescriptor *desc)
{
	ProtobufCMessage *resp = malloc(desc->sizeof_message);
	if (!resp)
		return false;
	desc->message_init(resp);
	struct meta_group *g = node_direct_acquire(n, node_req_group_id(r));
	bool ok = false;
	if (g) {
		uint64_t seq = meta_state_read_seq(g->state);
		ok = !(seq & 1) && read(g, r, resp) == 0 && meta_state_read_same(g->state, seq);
		node_direct_release(n);
	}
	if (!ok) {
		protobuf_c_message_free_unpacked(resp, NULL);
		return false;
	}
	metrics_counter_inc(n->m_direct_reads);
	rpc_respond_give(r, resp, NULL);
	return true;
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

bool node_serve_direct_head_object(struct rpc_req *r, void *ud)
{
	return direct_answer(ud, r, head_direct, &iolake__meta__head_object_response__descriptor);
}

bool node_serve_direct_get_version(struct rpc_req *r, void *ud)
{
	return direct_answer(ud, r, version_direct, &iolake__meta__get_version_response__descriptor);
}

