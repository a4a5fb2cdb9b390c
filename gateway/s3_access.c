/*
 * s3_access.c — access control as a resource: Get/PutBucketAcl,
 * Get/PutObjectAcl, Get/Put/DeleteBucketOwnershipControls; and the ACL and
 * owner a write stores (s3_access.h). ACLs are values of s3_acl; who may
 * do these operations was decided at the gate (s3_authz: READ_ACP /
 * WRITE_ACP, owner-only for ownership controls) on the records the
 * request starts with (rq->bkt, rq->obj).
 *
 * A change is committed conditioned on the record it was decided on
 * (SetBucketAccess on the bucket's generation, SetObjectAcl on the
 * object's): on CONFLICT the record is read again, the request decided
 * again, and the change retried, so a concurrent switch to
 * BucketOwnerEnforced never lets an ACL in behind it.
 *
 * Owns each request's state. Thread: the gateway loop.
 */
#include "gateway/s3_access.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/s3_body.h"
#include "gateway/s3_handlers.h"
#include "gateway/s3_pab.h"
#include "gateway/s3_util.h"
#include "gateway/s3_version.h"
#include "gateway/xml_parse.h"

#define OWNERSHIP_BODY_MAX 1024

static const char *const ownership_names[] = {
	[IOLAKE__META__OBJECT_OWNERSHIP__OWNERSHIP_BUCKET_OWNER_ENFORCED] = "BucketOwnerEnforced",
	[IOLAKE__META__OBJECT_OWNERSHIP__OWNERSHIP_BUCKET_OWNER_PREFERRED] = "BucketOwnerPreferred",
	[IOLAKE__META__OBJECT_OWNERSHIP__OWNERSHIP_OBJECT_WRITER] = "ObjectWriter",
};

static bool ownership_parse(const char *s, size_t n, Iolake__Meta__ObjectOwnership *out)
{
	for (unsigned i = 1; i < sizeof(ownership_names) / sizeof(ownership_names[0]); i++)
		if (strlen(ownership_names[i]) == n && memcmp(s, ownership_names[i], n) == 0) {
			*out = (Iolake__Meta__ObjectOwnership)i;
			return true;
		}
	return false;
}

static bool enforced(const Iolake__Meta__Bucket *b)
{
	return b->object_ownership == IOLAKE__META__OBJECT_OWNERSHIP__OWNERSHIP_BUCKET_OWNER_ENFORCED;
}

static const char *hdr_of_call(void *ctx, const char *name, size_t *len)
{
	const struct sigv4_header *h = s3u_hdr(ctx, name);
	if (!h)
		return NULL;
	*len = h->value_len;
	return h->value;
}

/* An ACL that gives owner FULL_CONTROL and nobody anything else (what
 * ACL-disabled buckets accept); acl expanded for a resource of owner in
 * owner's bucket. */
static bool owner_full_only(const struct s3_acl *acl, const char *owner)
{
	uint8_t id[S3_ID_LEN];
	struct s3_acl e;
	s3_acl_user_id(owner, id);
	s3_acl_expand(acl, id, id, &e);
	if (!s3_acl_owner_only(&e, id))
		return false;
	for (unsigned i = 0; i < e.n; i++)
		if (e.g[i].perm == S3_PERM_FULL)
			return true;
	return false;
}

/* BlockPublicAcls: the bucket refuses a public ACL (AllUsers or
 * AuthenticatedUsers grants) on itself and on the objects in it. */
static bool blocked_public(const Iolake__Meta__Bucket *b, const struct s3_acl *acl)
{
	return b->public_access_block && b->public_access_block->block_public_acls &&
	       s3_pab_acl_is_public(acl);
}

#define BLOCKED_MSG "Access Denied: BlockPublicAcls refuses a public ACL"

/* ------------------------------------------------------------ writes */

enum s3_err s3_access_for_object(struct s3_rq *rq, struct s3_obj_access *a)
{
	return s3_access_for_object_from(rq, a, hdr_of_call, rq->c);
}

enum s3_err s3_access_for_object_from(struct s3_rq *rq, struct s3_obj_access *a,
				      s3_acl_hdr_fn hdr, void *ctx)
{
	const Iolake__Meta__Bucket *b = rq->bkt;
	memset(a, 0, offsetof(struct s3_obj_access, acl));
	a->owner = rq->user;
	enum s3_err e = s3_acl_from_headers(hdr, ctx, &a->acl, &a->present);
	if (e)
		return e;
	if (!b)   /* the gate reads it for every write: never */
		return S3E_InternalError;
	if (a->present && blocked_public(b, &a->acl))
		return S3E_AccessDenied;
	enum s3_canned canned = a->present ? (enum s3_canned)a->acl.canned : S3_CANNED_NONE;
	a->owner = s3_authz_object_owner((enum s3_ownership)b->object_ownership, b->owner, rq->user,
					 canned);
	if (enforced(b)) {
		/* ACLs disabled: none, or one that comes to full control for
		 * the bucket owner alone once the object is the bucket owner's
		 * (a->owner): bucket-owner-full-control, grants to it, and
		 * private, which rclone and other tools send on every write. */
		if (a->present && !owner_full_only(&a->acl, b->owner))
			return S3E_AccessControlListNotSupported;
		return S3E_OK;
	}
	a->store = a->present && !(canned == S3_CANNED_PRIVATE);
	return S3E_OK;
}

void s3_access_to_record(struct s3_obj_access *a, Iolake__Meta__ObjectRecord *r)
{
	r->owner = (char *)a->owner;
	r->acl = NULL;
	if (a->store) {
		s3_acl_to_msg(&a->acl, &a->msg);
		r->acl = &a->msg.m;
	}
}

enum s3_err s3_access_for_bucket(struct s3_rq *rq, struct s3_obj_access *a,
				 Iolake__Meta__ObjectOwnership *own)
{
	memset(a, 0, offsetof(struct s3_obj_access, acl));
	a->owner = rq->user;
	*own = IOLAKE__META__OBJECT_OWNERSHIP__OWNERSHIP_BUCKET_OWNER_ENFORCED;
	const struct sigv4_header *oh = s3u_hdr(rq->c, "x-amz-object-ownership");
	if (oh && !ownership_parse(oh->value, oh->value_len, own))
		return S3E_InvalidArgument;
	enum s3_err e = s3_acl_from_headers(hdr_of_call, rq->c, &a->acl, &a->present);
	if (e)
		return e;
	enum s3_canned canned = a->present ? (enum s3_canned)a->acl.canned : S3_CANNED_NONE;
	/* On a bucket the bucket-owner-* canned ACLs are ignored (S3). */
	bool priv = !a->present || canned == S3_CANNED_PRIVATE ||
		    canned == S3_CANNED_BUCKET_OWNER_READ ||
		    canned == S3_CANNED_BUCKET_OWNER_FULL_CONTROL ||
		    (canned == S3_CANNED_NONE && owner_full_only(&a->acl, rq->user));
	if (*own == IOLAKE__META__OBJECT_OWNERSHIP__OWNERSHIP_BUCKET_OWNER_ENFORCED && !priv)
		return S3E_InvalidBucketAclWithObjectOwnership;
	a->store = !priv;
	return S3E_OK;
}

/* ------------------------------------------------------------ requests */

struct acl_rq {
	struct s3_rq rq;
	struct s3_body body;
	/* The change being made, kept across retries. */
	struct s3_acl acl;
	bool set_acl;
	bool set_ownership;
	Iolake__Meta__ObjectOwnership ownership;
	enum s3_authz_action action;      /* decided again after a re-read */
};

static struct acl_rq *acl_of(struct s3_rq *rq)
{
	return container_of(rq, struct acl_rq, rq);
}

static void acl_fini(struct s3_rq *rq)
{
	s3_body_free(&acl_of(rq)->body);
}

static struct acl_rq *acl_new(struct s3_call *c, enum s3_authz_action action)
{
	struct acl_rq *a = s3_rq_new(c, sizeof(*a));
	if (!a)
		return NULL;
	a->rq.fini = acl_fini;
	a->action = action;
	return a;
}

static void send_policy(struct s3_rq *rq, const struct s3_acl *stored, const char *owner,
			const char *bucket_owner)
{
	struct s3_acl *e = malloc(sizeof(*e));
	if (!e) {
		s3_rq_fail(rq, S3E_InternalError, NULL);
		return;
	}
	uint8_t oid[S3_ID_LEN], bid[S3_ID_LEN];
	s3_acl_user_id(owner, oid);
	s3_acl_user_id(bucket_owner, bid);
	s3_acl_expand(stored, oid, bid, e);
	s3_acl_render(s3_call_xml(rq->c), e, owner, bucket_owner);
	free(e);
	s3_call_send_xml(rq->c, 200);
}

/* The stored ACL of a record as read (ACLs disabled: private). */
static void stored_acl(const Iolake__Meta__Acl *m, bool disabled, struct s3_acl *a)
{
	if (disabled || !s3_acl_from_msg(m, a))
		s3_acl_canned(a, S3_CANNED_PRIVATE);
}

/* The ACL a Put*Acl request names: headers, or else the body (exactly one
 * of x-amz-acl, x-amz-grant-*, an AccessControlPolicy document). body_cb
 * runs for a body; S3E_OK with *have true when the headers said it. */
static enum s3_err acl_source(struct acl_rq *a, bool *have, s3_body_done_fn body_cb)
{
	const struct http_request *hr = s3_call_http(a->rq.c);
	bool body = hr->has_body && (hr->chunked || hr->content_length > 0);
	enum s3_err e = s3_acl_from_headers(hdr_of_call, a->rq.c, &a->acl, have);
	if (e)
		return e;
	if (*have && body)
		return S3E_UnexpectedContent;
	if (!*have && !body)
		return S3E_MissingSecurityHeader;
	if (*have)
		return S3E_OK;
	return s3_body_read(&a->rq, &a->body, S3_ACL_XML_MAX, body_cb);
}

/* ------------------------------------------------------------ bucket ACL, ownership */

static void bucket_commit(struct acl_rq *a);

static void bucket_redo(struct s3_rq *rq)
{
	bucket_commit(acl_of(rq));
}

/* The change, checked against the bucket as last read (rq->bkt). */
static void bucket_commit(struct acl_rq *a)
{
	struct s3_rq *rq = &a->rq;
	const Iolake__Meta__Bucket *b = rq->bkt;
	Iolake__Meta__SetBucketAccess sba = IOLAKE__META__SET_BUCKET_ACCESS__INIT;
	sba.name = rq->bucket;
	sba.conditional = true;
	sba.if_generation = b->generation;
	struct s3_acl_msg *msg = NULL;
	if (a->set_acl && blocked_public(b, &a->acl)) {
		s3_rq_fail(rq, S3E_AccessDenied, BLOCKED_MSG);
		return;
	}
	if (a->set_acl) {
		bool owner_only = owner_full_only(&a->acl, b->owner) ||
				  a->acl.canned == S3_CANNED_BUCKET_OWNER_READ ||
				  a->acl.canned == S3_CANNED_BUCKET_OWNER_FULL_CONTROL;
		if (enforced(b) && !owner_only) {
			s3_rq_fail(rq, S3E_AccessControlListNotSupported, NULL);
			return;
		}
		sba.set_acl = true;
		if (!owner_only || a->acl.canned == S3_CANNED_NONE) {
			if (!(msg = malloc(sizeof(*msg)))) {
				s3_rq_fail(rq, S3E_InternalError, NULL);
				return;
			}
			s3_acl_to_msg(&a->acl, msg);
			sba.acl = &msg->m;
		}
	}
	if (a->set_ownership) {
		if (a->ownership == IOLAKE__META__OBJECT_OWNERSHIP__OWNERSHIP_BUCKET_OWNER_ENFORCED) {
			struct s3_acl cur;
			stored_acl(b->acl, false, &cur);
			if (!owner_full_only(&cur, b->owner)) {
				s3_rq_fail(rq, S3E_InvalidBucketAclWithObjectOwnership, NULL);
				return;
			}
		}
		sba.set_ownership = true;
		sba.object_ownership = a->ownership;
	}
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_SET_BUCKET_ACCESS;
	op.set_bucket_access = &sba;
	int status = s3_call_req(rq->c)->op == S3_OP_DeleteBucketOwnershipControls ? 204 : 200;
	s3_rq_bucket_change(rq, &op, a->action, status, bucket_redo);
	free(msg);
}

static void on_bacl_body(struct s3_rq *rq, enum s3_err verdict)
{
	struct acl_rq *a = acl_of(rq);
	if (verdict) {
		s3_rq_fail(rq, verdict, NULL);
		return;
	}
	uint8_t oid[S3_ID_LEN];
	s3_acl_user_id(rq->bkt->owner, oid);
	enum s3_err e = s3_acl_from_xml((const char *)a->body.buf, a->body.len, oid, &a->acl);
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	bucket_commit(a);
}

static void op_bucket_acl(struct s3_call *c)
{
	bool put = s3_call_req(c)->op == S3_OP_PutBucketAcl;
	struct acl_rq *a = acl_new(c, put ? S3_ACT_PutBucketAcl : S3_ACT_GetBucketAcl);
	if (!a)
		return;
	const Iolake__Meta__Bucket *b = a->rq.bkt;
	if (!put) {
		struct s3_acl st;
		stored_acl(b->acl, enforced(b), &st);
		send_policy(&a->rq, &st, b->owner, b->owner);
		return;
	}
	a->set_acl = true;
	bool have;
	enum s3_err e = acl_source(a, &have, on_bacl_body);
	if (e)
		s3_rq_fail(&a->rq, e, NULL);
	else if (have)
		bucket_commit(a);
}

static void on_own_body(struct s3_rq *rq, enum s3_err verdict)
{
	struct acl_rq *a = acl_of(rq);
	if (verdict) {
		s3_rq_fail(rq, verdict, NULL);
		return;
	}
	char v[32];
	if (xmlp_ownership((const char *)a->body.buf, a->body.len, OWNERSHIP_BODY_MAX, v,
			   sizeof(v)) ||
	    !ownership_parse(v, strlen(v), &a->ownership)) {
		s3_rq_fail(rq, S3E_MalformedXML, NULL);
		return;
	}
	bucket_commit(a);
}

static void op_ownership(struct s3_call *c)
{
	enum s3_op op = s3_call_req(c)->op;
	struct acl_rq *a = acl_new(c, op == S3_OP_GetBucketOwnershipControls
					      ? S3_ACT_GetBucketOwnershipControls
					      : S3_ACT_PutBucketOwnershipControls);
	if (!a)
		return;
	const Iolake__Meta__Bucket *b = a->rq.bkt;
	if (op == S3_OP_GetBucketOwnershipControls) {
		unsigned o = (unsigned)b->object_ownership;
		if (o == 0 || o >= sizeof(ownership_names) / sizeof(ownership_names[0])) {
			s3_rq_fail(&a->rq, S3E_OwnershipControlsNotFoundError, NULL);
			return;
		}
		struct xml_w *w = s3_call_xml(c);
		xml_decl(w);
		xml_open_ns(w, "OwnershipControls", S3_XMLNS);
		xml_open(w, "Rule");
		xml_elem(w, "ObjectOwnership", ownership_names[o]);
		xml_close(w);
		xml_close(w);
		s3_call_send_xml(c, 200);
		return;
	}
	a->set_ownership = true;
	if (op == S3_OP_DeleteBucketOwnershipControls) {
		a->ownership = IOLAKE__META__OBJECT_OWNERSHIP__OWNERSHIP_UNSET;
		bucket_commit(a);
		return;
	}
	enum s3_err e = s3_body_read(&a->rq, &a->body, OWNERSHIP_BODY_MAX, on_own_body);
	if (e)
		s3_rq_fail(&a->rq, e, NULL);
}

/* ------------------------------------------------------------ object ACL */

static void oacl_commit(struct acl_rq *a);

static void on_oacl_reread(struct s3_rq *rq, enum s3_err e, Iolake__Meta__ObjectRecord *rec)
{
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	s3u_free_msg(rq->obj);
	rq->obj = rec;
	oacl_commit(acl_of(rq));
}

static void on_oacl_commit(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__OpResult *res)
{
	if (!rq->c)
		return;
	if (s3_rq_conflict(res) && ++rq->tries < S3_COMMIT_TRIES) {
		bool bad;
		const char *vid = s3_ver_query(rq, &bad);
		if (vid)   /* a version's ACL (issue 17): read that version again */
			s3_ver_read(rq, vid, on_oacl_reread);
		else
			s3_rq_head_authz(rq, rq->bucket, rq->key, S3_ACT_PutObjectAcl, on_oacl_reread);
		return;
	}
	if (e)
		s3_rq_fail(rq, e, NULL);
	else
		http_respond(s3_call_stream(rq->c), 200, NULL, 0, NULL, NULL);
}

static void oacl_commit(struct acl_rq *a)
{
	struct s3_rq *rq = &a->rq;
	const Iolake__Meta__Bucket *b = rq->bkt;
	const Iolake__Meta__ObjectRecord *o = rq->obj;
	Iolake__Meta__SetObjectAcl sa = IOLAKE__META__SET_OBJECT_ACL__INIT;
	sa.bucket = rq->bucket;
	sa.key = rq->key;
	sa.if_generation = o->generation;
	struct s3_acl_msg *msg = NULL;
	if (blocked_public(b, &a->acl)) {
		s3_rq_fail(rq, S3E_AccessDenied, BLOCKED_MSG);
		return;
	}
	if (enforced(b)) {
		/* ACLs disabled: only full control for the bucket owner (it
		 * owns the object), and nothing stored. */
		bool ok = a->acl.canned == S3_CANNED_BUCKET_OWNER_FULL_CONTROL ||
			  a->acl.canned == S3_CANNED_PRIVATE ||
			  (a->acl.canned == S3_CANNED_NONE && owner_full_only(&a->acl, b->owner));
		if (!ok) {
			s3_rq_fail(rq, S3E_AccessControlListNotSupported, NULL);
			return;
		}
	} else if (a->acl.canned != S3_CANNED_PRIVATE) {
		if (!(msg = malloc(sizeof(*msg)))) {
			s3_rq_fail(rq, S3E_InternalError, NULL);
			return;
		}
		s3_acl_to_msg(&a->acl, msg);
		sa.acl = &msg->m;
	}
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_SET_OBJECT_ACL;
	op.set_object_acl = &sa;
	bool bad;
	const char *vid = s3_ver_query(rq, &bad);
	op.version_id = (char *)(vid ? vid : "");   /* a version's ACL (issue 17) */
	s3_rq_submit(rq, &op, S3_SUBJ_OBJECT_TAGS, on_oacl_commit);
	free(msg);
}

static void on_oacl_body(struct s3_rq *rq, enum s3_err verdict)
{
	struct acl_rq *a = acl_of(rq);
	if (verdict) {
		s3_rq_fail(rq, verdict, NULL);
		return;
	}
	uint8_t oid[S3_ID_LEN];
	s3_acl_user_id(enforced(rq->bkt) ? rq->bkt->owner : rq->obj->owner, oid);
	enum s3_err e = s3_acl_from_xml((const char *)a->body.buf, a->body.len, oid, &a->acl);
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	oacl_commit(a);
}

static void oacl_go(struct acl_rq *a);

/* ?versionId (issue 17): the version named replaces the gate's record
 * (the gate decided on the current version, or on the bucket). */
static void on_oacl_version(struct s3_rq *rq, enum s3_err e, Iolake__Meta__ObjectRecord *rec)
{
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	s3u_free_msg(rq->obj);
	rq->obj = rec;
	if (rq->c)
		http_add_header(s3_call_stream(rq->c), "x-amz-version-id",
				rec->version_id[0] ? rec->version_id : "null");
	oacl_go(acl_of(rq));
}

static void op_object_acl(struct s3_call *c)
{
	bool put = s3_call_req(c)->op == S3_OP_PutObjectAcl;
	struct acl_rq *a = acl_new(c, put ? S3_ACT_PutObjectAcl : S3_ACT_GetObjectAcl);
	if (!a)
		return;
	bool bad;
	const char *vid = s3_ver_query(&a->rq, &bad);
	if (bad)
		s3_rq_fail(&a->rq, S3E_InvalidVersionId, NULL);
	else if (vid)
		s3_ver_read(&a->rq, vid, on_oacl_version);
	else
		oacl_go(a);
}

static void oacl_go(struct acl_rq *a)
{
	bool put = s3_call_req(a->rq.c)->op == S3_OP_PutObjectAcl;
	const Iolake__Meta__Bucket *b = a->rq.bkt;
	const Iolake__Meta__ObjectRecord *o = a->rq.obj;
	if (!put) {
		struct s3_acl st;
		stored_acl(o->acl, enforced(b), &st);
		send_policy(&a->rq, &st, enforced(b) ? b->owner : o->owner, b->owner);
		return;
	}
	bool have;
	enum s3_err e = acl_source(a, &have, on_oacl_body);
	if (e)
		s3_rq_fail(&a->rq, e, NULL);
	else if (have)
		oacl_commit(a);
}

const struct s3_handler s3_access_handlers[] = {
	{ S3_OP_GetBucketAcl, op_bucket_acl, S3_ACT_GetBucketAcl },
	{ S3_OP_PutBucketAcl, op_bucket_acl, S3_ACT_PutBucketAcl },
	{ S3_OP_GetObjectAcl, op_object_acl, S3_ACT_GetObjectAcl },
	{ S3_OP_PutObjectAcl, op_object_acl, S3_ACT_PutObjectAcl },
	{ S3_OP_GetBucketOwnershipControls, op_ownership, S3_ACT_GetBucketOwnershipControls },
	{ S3_OP_PutBucketOwnershipControls, op_ownership, S3_ACT_PutBucketOwnershipControls },
	{ S3_OP_DeleteBucketOwnershipControls, op_ownership, S3_ACT_PutBucketOwnershipControls },
	S3_HANDLERS_END,
};
