/*
 * s3_bucket.c — the bucket operations: ListBuckets (the caller's own
 * buckets, paged), CreateBucket (with its ACL and Object Ownership),
 * HeadBucket, GetBucketLocation, DeleteBucket, each one meta call (a
 * ListBuckets read, a CreateBucket or DeleteBucket op; HeadBucket and
 * GetBucketLocation answer from the record the gate read) answered
 * through s3_status's table.
 *
 * Owns no state beyond the request's base. Does not do bucket tagging
 * (s3_tagging.c) nor listings of a bucket's contents (s3_list.c).
 *
 * Thread: the gateway loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gateway/gw_bcache.h"
#include "gateway/s3_access.h"
#include "gateway/s3_handlers.h"
#include "gateway/s3_rq.h"
#include "gateway/s3_util.h"

#define LIST_BUCKETS_MAX 10000   /* max-buckets: 1..10000, as S3 */

/* The caller's own buckets (meta lists them by owner, in name order),
 * after continuation-token (the last name of the previous page), those
 * starting with prefix, max-buckets of them. */
static void on_list_buckets(struct s3_rq *rq, enum s3_err e, const ProtobufCMessage *resp)
{
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	const Iolake__Meta__ListBucketsResponse *r = (const void *)resp;
	const struct s3_req *q = s3_call_req(rq->c);
	const char *prefix = s3u_qval(q, "prefix");
	const char *token = s3u_qval(q, "continuation-token");
	const char *mb = s3u_qval(q, "max-buckets");
	unsigned long max = LIST_BUCKETS_MAX;
	if (mb) {
		char *end;
		max = strtoul(mb, &end, 10);
		if (!*mb || *end || max < 1 || max > LIST_BUCKETS_MAX) {
			s3_rq_fail(rq, S3E_InvalidArgument,
				   "Argument max-buckets must be an integer between 1 and 10000");
			return;
		}
	}
	if (token && !s3_bucket_name_valid(token, strlen(token))) {
		s3_rq_fail(rq, S3E_InvalidContinuationToken, NULL);
		return;
	}
	struct xml_w *w = s3_call_xml(rq->c);
	xml_decl(w);
	xml_open_ns(w, "ListAllMyBucketsResult", S3_XMLNS);
	xml_open(w, "Buckets");
	unsigned long n = 0;
	const char *last = NULL;
	bool truncated = false;
	for (size_t i = 0; i < r->n_buckets; i++) {
		const Iolake__Meta__Bucket *b = r->buckets[i];
		if (token && strcmp(b->name, token) <= 0)
			continue;
		if (prefix && strncmp(b->name, prefix, strlen(prefix)) != 0)
			continue;
		if (n == max) {
			truncated = true;
			break;
		}
		char d[40];
		s3u_iso_date(b->created_ms, d);
		xml_open(w, "Bucket");
		xml_elem(w, "Name", b->name);
		xml_elem(w, "CreationDate", d);
		xml_elem(w, "BucketRegion", b->region && *b->region ? b->region : rq->o->region);
		xml_close(w);
		last = b->name;
		n++;
	}
	xml_close(w);
	s3u_owner_elems(w, "Owner", s3_rq_owner(rq));
	if (truncated)
		xml_elem(w, "ContinuationToken", last);
	if (prefix)
		xml_elem(w, "Prefix", prefix);
	xml_close(w);
	s3_call_send_xml(rq->c, 200);
}

static void op_list_buckets(struct s3_call *c)
{
	struct s3_rq *rq = s3_rq_new(c, sizeof(*rq));
	if (!rq)
		return;
	/* A user's own buckets only, admins included (as S3: an account
	 * lists its own); `iolake-admin bucket ls` lists everyone's. */
	Iolake__Meta__ListBucketsRequest req = IOLAKE__META__LIST_BUCKETS_REQUEST__INIT;
	req.owner = rq->user;
	s3_rq_call(rq, META_M_LIST_BUCKETS, &req.base, S3_SUBJ_NONE, on_list_buckets);
}

/* CreateBucket of an existing name: yours (BucketAlreadyOwnedByYou) or
 * someone else's (BucketAlreadyExists). */
static void on_exists(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__Bucket *b)
{
	if (!e && b)
		e = strcmp(b->owner, rq->user) == 0 ? S3E_BucketAlreadyOwnedByYou
						     : S3E_BucketAlreadyExists;
	s3_rq_fail(rq, e ? e : S3E_BucketAlreadyExists, NULL);
}

static void on_create_bucket(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__OpResult *res)
{
	(void)res;
	gw_bcache_bucket_created(); /* reads that began before it: not absent */
	if (!rq->c)
		return;
	if (e == S3E_BucketAlreadyOwnedByYou) {
		s3_rq_bucket(rq, rq->bucket, on_exists);
		return;
	}
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	char loc[S3_BUCKET_MAX + 2];
	snprintf(loc, sizeof(loc), "/%s", rq->bucket);
	http_add_header(s3_call_stream(rq->c), "Location", loc);
	http_respond(s3_call_stream(rq->c), 200, NULL, 0, NULL, NULL);
}

static void op_create_bucket(struct s3_call *c)
{
	struct s3_rq *rq = s3_rq_new(c, sizeof(*rq));
	if (!rq)
		return;
	Iolake__Meta__Bucket b = IOLAKE__META__BUCKET__INIT;
	b.name = rq->bucket;
	b.owner = (char *)s3_rq_owner(rq);
	b.created_ms = s3u_wall_ms();
	b.region = rq->o->region;
	struct s3_obj_access *acc = malloc(sizeof(*acc));
	enum s3_err e = acc ? s3_access_for_bucket(rq, acc, &b.object_ownership) : S3E_InternalError;
	if (e) {
		free(acc);
		s3_rq_fail(rq, e, NULL);
		return;
	}
	if (acc->store) {
		s3_acl_to_msg(&acc->acl, &acc->msg);
		b.acl = &acc->msg.m;
	}
	/* Object lock (issue 17): enabled at creation turns versioning on,
	 * for good. */
	Iolake__Meta__ObjectLockConfig lock = IOLAKE__META__OBJECT_LOCK_CONFIG__INIT;
	char lv[8];
	if (s3u_hdr_str(c, "x-amz-bucket-object-lock-enabled", lv, sizeof(lv))) {
		if (strcasecmp(lv, "true") == 0) {
			lock.enabled = true;
			b.object_lock = &lock;
			b.versioning = IOLAKE__META__VERSIONING_STATE__VERSIONING_ENABLED;
		} else if (strcasecmp(lv, "false") != 0) {
			free(acc);
			s3_rq_fail(rq, S3E_InvalidArgument, "Invalid x-amz-bucket-object-lock-enabled");
			return;
		}
	}
	Iolake__Meta__CreateBucket cb = IOLAKE__META__CREATE_BUCKET__INIT;
	cb.bucket = &b;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_CREATE_BUCKET;
	op.create_bucket = &cb;
	gw_bcache_bucket_created();
	s3_rq_submit(rq, &op, S3_SUBJ_BUCKET_NEW, on_create_bucket);
	free(acc);
}

static void on_delete_bucket(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__OpResult *res)
{
	(void)res;
	if (!rq->c)
		return;
	if (e)
		s3_rq_fail(rq, e, NULL);
	else
		http_respond(s3_call_stream(rq->c), 204, NULL, 0, NULL, NULL);
}

static void op_delete_bucket(struct s3_call *c)
{
	struct s3_rq *rq = s3_rq_new(c, sizeof(*rq));
	if (!rq)
		return;
	Iolake__Meta__DeleteBucket db = IOLAKE__META__DELETE_BUCKET__INIT;
	db.name = rq->bucket;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_DELETE_BUCKET;
	op.delete_bucket = &db;
	s3_rq_submit(rq, &op, S3_SUBJ_BUCKET, on_delete_bucket);
}

/* HeadBucket and GetBucketLocation. */
static void on_get_bucket(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__Bucket *b)
{
	if (!e && !b)
		e = S3E_NoSuchBucket;
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	if (s3_call_req(rq->c)->op == S3_OP_HeadBucket) {
		http_add_header(s3_call_stream(rq->c), "x-amz-bucket-region", rq->o->region);
		http_respond(s3_call_stream(rq->c), 200, NULL, 0, NULL, NULL);
		return;
	}
	struct xml_w *w = s3_call_xml(rq->c);
	xml_decl(w);
	xml_open_ns(w, "LocationConstraint", S3_XMLNS);
	/* us-east-1 is reported as an empty constraint, as S3 does. */
	const char *reg = b->region && *b->region ? b->region : rq->o->region;
	if (strcmp(reg, "us-east-1") != 0)
		xml_text(w, reg, strlen(reg));
	xml_close(w);
	s3_call_send_xml(rq->c, 200);
}

static void op_get_bucket(struct s3_call *c)
{
	struct s3_rq *rq = s3_rq_new(c, sizeof(*rq));
	if (rq)
		s3_rq_bucket(rq, rq->bucket, on_get_bucket);
}

const struct s3_handler s3_bucket_handlers[] = {
	{ S3_OP_ListBuckets, op_list_buckets, S3_ACT_ListAllMyBuckets },
	{ S3_OP_CreateBucket, op_create_bucket, S3_ACT_CreateBucket },
	{ S3_OP_HeadBucket, op_get_bucket, S3_ACT_ListBucket },
	{ S3_OP_GetBucketLocation, op_get_bucket, S3_ACT_GetBucketLocation },
	{ S3_OP_DeleteBucket, op_delete_bucket, S3_ACT_DeleteBucket },
	S3_HANDLERS_END,
};
