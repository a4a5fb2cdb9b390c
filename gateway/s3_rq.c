/*
 * s3_rq.c — the S3 layer's core (contracts in s3_rq.h): a request's base
 * and lifecycle, and the meta calls every handler makes, with their
 * answers turned into S3 errors by s3_status's table. The gate every
 * request passes (authorization) and the op stamps are in s3_gate.c.
 *
 * Owns each request's base until the request is freed, and the one meta
 * call a request has in flight. Knows no operation: per-operation state
 * and steps are the handlers' (s3_handlers.h).
 *
 * Thread: the gateway loop; no blocking call.
 */
#include "gateway/s3_rq.h"


#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/err.h"
#include "common/log.h"
#include "gateway/gw_bcache.h"
#include "gateway/gw_bread.h"
#include "gateway/gw_data.h"
#include "gateway/gw_map.h"
#include "gateway/s3_cors_hdr.h"
#include "gateway/s3_handlers.h"
#include "gateway/s3_pab.h"
#include "gateway/s3_policy_cache.h"
#include "gateway/s3_policy_ctx.h"
#include "gateway/s3_util.h"

/* ------------------------------------------------------------ lifecycle */

void s3_rq_maybe_free(struct s3_rq *rq)
{
	if (rq->c || rq->pending)
		return;
	if (rq->fini)
		rq->fini(rq);
	s3u_free_msg(rq->bkt);
	s3u_free_msg(rq->obj);
	free(rq->authz_key);
	free(rq->key);
	free(rq->grants);
	free(rq);
}

bool s3_rq_set_grants(struct s3_rq *rq, const struct s3_user_grant *g, size_t n)
{
	free(rq->grants);
	rq->grants = NULL;
	rq->who.grants = NULL;
	rq->who.n_grants = 0;
	if (!n || !rq->who.user)
		return true;
	if (!(rq->grants = malloc(n * sizeof(*g))))
		return false;
	memcpy(rq->grants, g, n * sizeof(*g));
	rq->who.grants = rq->grants;
	rq->who.n_grants = n;
	return true;
}

static void on_call_finish(struct s3_call *c, int err)
{
	(void)err;
	struct s3_rq *rq = s3_call_user(c);
	if (!rq)
		return;
	rq->c = NULL;
	if (rq->stop)
		rq->stop(rq);
	s3_rq_maybe_free(rq);
}

void *s3_rq_new(struct s3_call *c, size_t size)
{
	struct s3_ops *o = s3_call_ctx(c);
	const struct s3_req *r = s3_call_req(c);
	struct s3_rq *rq = calloc(1, size);
	if (!rq)
		goto nomem;
	rq->o = o;
	rq->c = c;
	if (r->bucket)
		s3u_copy_str(rq->bucket, sizeof(rq->bucket), r->bucket);
	const struct s3_auth_result *who = s3_call_auth(c);
	s3u_copy_str(rq->user, sizeof(rq->user), who->anonymous ? "" : who->user);
	s3_principal_init(&rq->who, rq->user, who->admin);
	if ((r->key && !(rq->key = strdup(r->key))) ||
	    !s3_rq_set_grants(rq, who->grants, who->n_grants)) {
		free(rq->key);
		free(rq);
		goto nomem;
	}
	s3_call_set_user(c, rq);
	s3_call_on_finish(c, on_call_finish);
	if (o->handoff) {
		/* The gate's records (the request was counted there). */
		rq->bkt = o->handoff_bkt;
		rq->obj = o->handoff_obj;
		rq->bkt_digest = o->handoff_bkt_digest;
		o->handoff_bkt = NULL;
		o->handoff_obj = NULL;
		o->handoff_bkt_digest = 0;
		o->handoff = false;
	} else {
		metrics_counter_inc(o->m_req[r->op]);
	}
	return rq;
nomem:
	s3_call_error(c, S3E_InternalError, NULL);
	return NULL;
}

bool s3_rq_back(struct s3_rq *rq)
{
	rq->pending--;
	if (rq->c)
		return true;
	s3_rq_maybe_free(rq);
	return false;
}

void s3_rq_fail(struct s3_rq *rq, enum s3_err e, const char *msg)
{
	if (!rq->c)
		return;
	if (e == S3E_ServiceUnavailable)
		metrics_counter_inc(rq->o->m_unavail);
	s3_call_error(rq->c, e, msg);
}

const char *s3_rq_owner(struct s3_rq *rq)
{
	return rq->user;
}

/* ------------------------------------------------------------ tracing */

struct gw_trace *s3_rq_trace(struct s3_rq *rq)
{
	return rq->c ? s3_call_trace(rq->c) : NULL;
}

int s3_rq_target(struct s3_rq *rq, uint32_t pg, struct gw_data_target *t)
{
	int rc = gw_map_target(rq->o->map, pg, t);
	if (!rc)
		t->trace = gw_trace_ref(s3_rq_trace(rq));
	return rc;
}

/* The meta client carries rq's request id on the calls started between
 * trace_on and trace_off (and on their retries). */
static void trace_on(struct s3_rq *rq)
{
	struct gw_trace *t = s3_rq_trace(rq);
	if (t)
		meta_client_set_trace(rq->o->mc, t->id);
}

static void trace_off(struct s3_rq *rq)
{
	meta_client_set_trace(rq->o->mc, NULL);
}

/* ------------------------------------------------------------ meta calls */

/* The answer's status field (read answers lead with one; an answer without
 * one, as ListBuckets', is OK). */
static int resp_status(const ProtobufCMessage *m)
{
	const ProtobufCFieldDescriptor *f =
		protobuf_c_message_descriptor_get_field_by_name(m->descriptor, "status");
	if (!f || f->type != PROTOBUF_C_TYPE_ENUM || f->label == PROTOBUF_C_LABEL_REPEATED)
		return IOLAKE__META__STATUS__STATUS_OK;
	int v;
	memcpy(&v, (const char *)m + f->offset, sizeof(v));
	return v;
}

/* Count the call and mark it in flight; false (answered) when one already
 * is: the steps of an operation are sequential by design. */
static bool call_begin(struct s3_rq *rq, enum s3_subj subj)
{
	if (rq->in_call) {
		LOG_ERROR("s3: a second meta call on one request", "bucket=%s key=%s", rq->bucket,
			  LOG_Q(rq->key ? rq->key : ""));
		s3_rq_fail(rq, S3E_InternalError, NULL);
		return false;
	}
	rq->in_call = true;
	rq->subj = subj;
	rq->pending++;
	struct gw_trace *t = s3_rq_trace(rq);
	rq->mtrace = gw_trace_ref(t);
	if (t) {
		rq->mt0_ns = loop_now_ns();
		gw_trace_call_begin(&t->meta, rq->mt0_ns);
	}
	return true;
}

/* The meta call in flight answered (err: the meta client's). */
static void call_end(struct s3_rq *rq, int err)
{
	struct gw_trace *t = gw_trace_get(&rq->mtrace);
	if (t)
		gw_trace_call_end(&t->meta, rq->mt0_ns, loop_now_ns(), 0, err == 0);
}

/* The call did not start: nothing is owed. */
static int call_failed(struct s3_rq *rq, int rc)
{
	call_end(rq, rc);
	rq->in_call = false;
	rq->pending--;
	s3_rq_fail(rq, S3E_ServiceUnavailable, NULL);
	return rc;
}

static void on_read(void *ud, int err, const ProtobufCMessage *resp)
{
	struct s3_rq *rq = ud;
	s3_rq_read_cb cb = rq->cb.read;
	call_end(rq, err);
	rq->in_call = false;
	if (!s3_rq_back(rq))
		return;
	cb(rq, s3_status_err(rq->subj, err, err ? 0 : resp_status(resp)), err ? NULL : resp);
}

int s3_rq_call(struct s3_rq *rq, unsigned method, const ProtobufCMessage *req,
	       enum s3_subj subj, s3_rq_read_cb cb)
{
	if (!call_begin(rq, subj))
		return -EBUSY;
	rq->cb.read = cb;
	trace_on(rq);
	int rc = meta_client_call(rq->o->mc, method, req, on_read, rq);
	trace_off(rq);
	return rc ? call_failed(rq, rc) : 0;
}

static void on_done(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct s3_rq *rq = ud;
	s3_rq_done_cb cb = rq->cb.done;
	call_end(rq, err);
	rq->in_call = false;
	rq->merr = err;
	rq->pending--;
	if (!err && res->status == IOLAKE__META__STATUS__STATUS_OK) {
		/* versioning (issue 17): what the answer's headers say */
		snprintf(rq->ver_id, sizeof(rq->ver_id), "%s", res->version_id ? res->version_id : "");
		rq->ver_marker = res->delete_marker;
	}
	cb(rq, s3_status_err(rq->subj, err, err ? 0 : (int)res->status), err ? NULL : res);
	s3_rq_maybe_free(rq);
}

/* Ops on one object or upload leave the bucket record alone; any other
 * op a request submits may change it (ACL, policy, versioning, lock,
 * encryption, quota, deletion): this loop's cached copy goes at once. */
static bool leaves_bucket(const Iolake__Meta__Op *op)
{
	switch (op->body_case) {
	case IOLAKE__META__OP__BODY_PUT_OBJECT:
	case IOLAKE__META__OP__BODY_DELETE_OBJECT:
	case IOLAKE__META__OP__BODY_CREATE_MULTIPART:
	case IOLAKE__META__OP__BODY_PUT_PART:
	case IOLAKE__META__OP__BODY_COMPLETE_MULTIPART:
	case IOLAKE__META__OP__BODY_ABORT_MULTIPART:
	case IOLAKE__META__OP__BODY_PUT_OBJECT_TAGS:
	case IOLAKE__META__OP__BODY_SET_OBJECT_ACL:
	case IOLAKE__META__OP__BODY_SET_OBJECT_RETENTION:
	case IOLAKE__META__OP__BODY_SET_OBJECT_LEGAL_HOLD:
		return true;
	default:
		return false;
	}
}

int s3_rq_submit(struct s3_rq *rq, const Iolake__Meta__Op *op, enum s3_subj subj,
		 s3_rq_done_cb cb)
{
	if (rq->o->bcache && rq->bucket[0] && !leaves_bucket(op))
		gw_bcache_drop(rq->o->bcache, rq->bucket, false);
	if (!call_begin(rq, subj))
		return -EBUSY;
	rq->cb.done = cb;
	Iolake__Meta__Op mine = *op;
	s3_rq_stamp_op(rq, &mine);
	trace_on(rq);
	int rc = meta_client_submit(rq->o->mc, &mine, on_done, rq);
	trace_off(rq);
	return rc ? call_failed(rq, rc) : 0;
}

bool s3_rq_conflict(const Iolake__Meta__OpResult *res)
{
	return res && res->status == IOLAKE__META__STATUS__STATUS_CONFLICT;
}

bool s3_rq_applied(const Iolake__Meta__OpResult *res)
{
	return res && res->status == IOLAKE__META__STATUS__STATUS_OK;
}

bool s3_rq_in_doubt(const struct s3_rq *rq)
{
	return rq->merr && iol_err_retryable(rq->merr);
}

/* ------------------------------------------------------------ HeadObject */

/* The record and bucket kept are the answer's own when meta answered in
 * process (rpc_answer_take: the direct HeadObject gives its answer), so a
 * GET copies neither; copies otherwise. */
static void on_head(void *ud, int err, const ProtobufCMessage *resp)
{
	struct s3_head *h = ud;
	Iolake__Meta__HeadObjectResponse *r = (void *)resp;   /* written only when own */
	bool own = rpc_answer_take(resp);
	enum s3_err e = s3_status_err(S3_SUBJ_OBJECT_READ, err, err ? 0 : (int)r->status);
	Iolake__Meta__ObjectRecord *rec = NULL;
	h->bkt = NULL;
	if (h->with_bucket && !err) {
		if (!r->bucket)
			e = S3E_NoSuchBucket;
		else if (!(h->bkt = s3u_keep_sub(own, &r->bucket)))
			e = S3E_InternalError;
	}
	if (e == S3E_OK && !r->record)
		e = S3E_NoSuchKey;
	h->marker = e == S3E_NoSuchKey && !err && r->record && r->record->is_delete_marker;
	snprintf(h->marker_vid, sizeof(h->marker_vid), "%s",
		 h->marker && r->record->version_id ? r->record->version_id : "");
	if (e == S3E_OK && !(rec = s3u_keep_sub(own, &r->record)))
		e = S3E_InternalError;
	if (own)
		s3u_free_msg(r);
	h->cb(h, e, rec);
}

int s3_head_start(struct meta_client *mc, struct s3_head *h, const char *bucket, const char *key,
		  s3_head_cb cb)
{
	Iolake__Meta__HeadObjectRequest req = IOLAKE__META__HEAD_OBJECT_REQUEST__INIT;
	req.bucket = (char *)bucket;
	req.key = (char *)key;
	req.with_bucket = h->with_bucket;
	req.no_usage = h->with_bucket && h->no_usage;
	h->cb = cb;
	h->bkt = NULL;
	return meta_client_call(mc, META_M_HEAD_OBJECT, &req.base, on_head, h);
}

static void on_rq_head(struct s3_head *h, enum s3_err e, Iolake__Meta__ObjectRecord *rec)
{
	struct s3_rq *rq = container_of(h, struct s3_rq, head);
	s3_rq_head_cb cb = rq->cb.head;
	call_end(rq, e == S3E_OK || e == S3E_NoSuchKey ? 0 : -EIO);
	rq->in_call = false;
	if (!s3_rq_back(rq)) {
		s3u_free_msg(rec);
		s3u_free_msg(h->bkt);
		h->bkt = NULL;
		return;
	}
	cb(rq, e, rec);
}

int s3_rq_head_start(struct s3_rq *rq, const char *bucket, const char *key, bool with_bucket,
		     s3_rq_head_cb cb)
{
	if (!call_begin(rq, S3_SUBJ_OBJECT_READ))
		return -EBUSY;
	rq->cb.head = cb;
	rq->head.with_bucket = with_bucket;
	trace_on(rq);
	int rc = s3_head_start(rq->o->mc, &rq->head, bucket, key, on_rq_head);
	trace_off(rq);
	return rc ? call_failed(rq, rc) : 0;
}

int s3_rq_head(struct s3_rq *rq, const char *bucket, const char *key, s3_rq_head_cb cb)
{
	if (rq->obj && strcmp(rq->obj->bucket, bucket) == 0 && strcmp(rq->obj->key, key) == 0) {
		/* The record the gate authorized on, read just now. */
		Iolake__Meta__ObjectRecord *rec = rq->obj;
		rq->obj = NULL;
		cb(rq, S3E_OK, rec);
		return 0;
	}
	return s3_rq_head_start(rq, bucket, key, false, cb);
}

/* ------------------------------------------------------------ GetBucket */

static void on_bucket(void *ud, int err, const ProtobufCMessage *resp)
{
	struct s3_rq *rq = ud;
	s3_rq_bucket_cb cb = rq->cb.bucket;
	call_end(rq, err);
	rq->in_call = false;
	if (!s3_rq_back(rq))
		return;
	const Iolake__Meta__GetBucketResponse *r = (const void *)resp;
	enum s3_err e = s3_status_err(S3_SUBJ_BUCKET_READ, err, err ? 0 : (int)r->status);
	rq->bkt_read_digest = e ? 0 : r->bucket_digest;
	cb(rq, e, e ? NULL : r->bucket);
}

void s3_rq_keep_bucket(struct s3_rq *rq, Iolake__Meta__Bucket *b, uint64_t digest)
{
	s3u_free_msg(rq->bkt);
	rq->bkt = b;
	rq->bkt_digest = 0;
	if (gw_bcache_cacheable(b, digest)) {
		gw_bcache_put(rq->o->bcache, b, digest, loop_now_ms());
		rq->bkt_digest = digest;
	}
}

int s3_rq_bucket(struct s3_rq *rq, const char *name, s3_rq_bucket_cb cb)
{
	if (rq->bkt && !rq->bkt_served && strcmp(rq->bkt->name, name) == 0) {
		/* The record the gate authorized on, read just now. */
		rq->bkt_served = true;
		cb(rq, S3E_OK, rq->bkt);
		return 0;
	}
	if (!call_begin(rq, S3_SUBJ_BUCKET_READ))
		return -EBUSY;
	rq->cb.bucket = cb;
	trace_on(rq);
	/* Issue 13: shared with the reads of this bucket asked for while one
	 * is out (gw_bread.h: as fresh as a call of its own). */
	int rc = gw_bread_read(rq->o->bread, rq->o->mc, name, &rq->bread_w, on_bucket, rq);
	trace_off(rq);
	return rc ? call_failed(rq, rc) : 0;
}

/* ------------------------------------------------------------ bucket changes */

static void on_change_reread(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__Bucket *b)
{
	if (!e && !b)
		e = S3E_NoSuchBucket;
	if (!e && s3_rq_decide(rq, rq->chg.action, b, NULL) == S3_DENY)
		e = S3E_AccessDenied;
	Iolake__Meta__Bucket *copy = e ? NULL : (Iolake__Meta__Bucket *)s3u_copy_msg(&b->base);
	if (!e && !copy)
		e = S3E_InternalError;
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	s3u_free_msg(rq->bkt);
	rq->bkt = copy;
	rq->chg.redo(rq);
}

static void on_change(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__OpResult *res)
{
	if (!rq->c)
		return;
	if (s3_rq_conflict(res) && ++rq->tries < S3_COMMIT_TRIES) {
		rq->bkt_served = true;   /* read it afresh */
		s3_rq_bucket(rq, rq->bucket, on_change_reread);
		return;
	}
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	http_respond(s3_call_stream(rq->c), rq->chg.status, NULL, 0, NULL, NULL);
}

int s3_rq_bucket_change(struct s3_rq *rq, const Iolake__Meta__Op *op,
			enum s3_authz_action action, int status, s3_rq_fn redo)
{
	rq->chg.redo = redo;
	rq->chg.action = action;
	rq->chg.status = status;
	return s3_rq_submit(rq, op, S3_SUBJ_BUCKET, on_change);
}

static void on_no_such_key(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__Bucket *b)
{
	(void)b;
	s3_rq_fail(rq, e == S3E_OK ? S3E_NoSuchKey : e, NULL);
}

void s3_rq_no_such_key(struct s3_rq *rq, const char *bucket)
{
	s3_rq_bucket(rq, bucket, on_no_such_key);
}

