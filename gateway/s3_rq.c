/*
 * s3_rq.c — the S3 layer's core (contracts in s3_rq.h): a request's base
 * and lifecycle, and the meta calls every handler makes, with their
 * answers turned into S3 errors by s3_status's table.
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

#include "common/err.h"
#include "common/log.h"
#include "gateway/s3_util.h"

/* ------------------------------------------------------------ lifecycle */

void s3_rq_maybe_free(struct s3_rq *rq)
{
	if (rq->c || rq->pending)
		return;
	if (rq->fini)
		rq->fini(rq);
	free(rq->key);
	free(rq);
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
		snprintf(rq->bucket, sizeof(rq->bucket), "%s", r->bucket);
	snprintf(rq->user, sizeof(rq->user), "%s", s3_call_auth(c)->user);
	if (r->key && !(rq->key = strdup(r->key))) {
		free(rq);
		goto nomem;
	}
	s3_call_set_user(c, rq);
	s3_call_on_finish(c, on_call_finish);
	metrics_counter_inc(o->m_req[r->op]);
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
	return true;
}

/* The call did not start: nothing is owed. */
static int call_failed(struct s3_rq *rq, int rc)
{
	rq->in_call = false;
	rq->pending--;
	s3_rq_fail(rq, S3E_ServiceUnavailable, NULL);
	return rc;
}

static void on_read(void *ud, int err, const ProtobufCMessage *resp)
{
	struct s3_rq *rq = ud;
	s3_rq_read_cb cb = rq->cb.read;
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
	int rc = meta_client_call(rq->o->mc, method, req, on_read, rq);
	return rc ? call_failed(rq, rc) : 0;
}

static void on_done(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct s3_rq *rq = ud;
	s3_rq_done_cb cb = rq->cb.done;
	rq->in_call = false;
	rq->merr = err;
	rq->pending--;
	cb(rq, s3_status_err(rq->subj, err, err ? 0 : (int)res->status), err ? NULL : res);
	s3_rq_maybe_free(rq);
}

int s3_rq_submit(struct s3_rq *rq, const Iolake__Meta__Op *op, enum s3_subj subj,
		 s3_rq_done_cb cb)
{
	if (!call_begin(rq, subj))
		return -EBUSY;
	rq->cb.done = cb;
	int rc = meta_client_submit(rq->o->mc, op, on_done, rq);
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

static void on_head(void *ud, int err, const ProtobufCMessage *resp)
{
	struct s3_head *h = ud;
	const Iolake__Meta__HeadObjectResponse *r = (const void *)resp;
	enum s3_err e = s3_status_err(S3_SUBJ_OBJECT_READ, err, err ? 0 : (int)r->status);
	Iolake__Meta__ObjectRecord *rec = NULL;
	if (e == S3E_OK && !r->record)
		e = S3E_NoSuchKey;
	if (e == S3E_OK && !(rec = (Iolake__Meta__ObjectRecord *)s3u_copy_msg(&r->record->base)))
		e = S3E_InternalError;
	h->cb(h, e, rec);
}

int s3_head_start(struct meta_client *mc, struct s3_head *h, const char *bucket, const char *key,
		  s3_head_cb cb)
{
	Iolake__Meta__HeadObjectRequest req = IOLAKE__META__HEAD_OBJECT_REQUEST__INIT;
	req.bucket = (char *)bucket;
	req.key = (char *)key;
	h->cb = cb;
	return meta_client_call(mc, META_M_HEAD_OBJECT, &req.base, on_head, h);
}

static void on_rq_head(struct s3_head *h, enum s3_err e, Iolake__Meta__ObjectRecord *rec)
{
	struct s3_rq *rq = container_of(h, struct s3_rq, head);
	s3_rq_head_cb cb = rq->cb.head;
	rq->in_call = false;
	if (!s3_rq_back(rq)) {
		s3u_free_msg(rec);
		return;
	}
	cb(rq, e, rec);
}

int s3_rq_head(struct s3_rq *rq, const char *bucket, const char *key, s3_rq_head_cb cb)
{
	if (!call_begin(rq, S3_SUBJ_OBJECT_READ))
		return -EBUSY;
	rq->cb.head = cb;
	int rc = s3_head_start(rq->o->mc, &rq->head, bucket, key, on_rq_head);
	return rc ? call_failed(rq, rc) : 0;
}

/* ------------------------------------------------------------ GetBucket */

static void on_bucket(void *ud, int err, const ProtobufCMessage *resp)
{
	struct s3_rq *rq = ud;
	s3_rq_bucket_cb cb = rq->cb.bucket;
	rq->in_call = false;
	if (!s3_rq_back(rq))
		return;
	const Iolake__Meta__GetBucketResponse *r = (const void *)resp;
	enum s3_err e = s3_status_err(S3_SUBJ_BUCKET_READ, err, err ? 0 : (int)r->status);
	cb(rq, e, e ? NULL : r->bucket);
}

int s3_rq_bucket(struct s3_rq *rq, const char *name, s3_rq_bucket_cb cb)
{
	if (!call_begin(rq, S3_SUBJ_BUCKET_READ))
		return -EBUSY;
	rq->cb.bucket = cb;
	Iolake__Meta__GetBucketRequest req = IOLAKE__META__GET_BUCKET_REQUEST__INIT;
	req.name = (char *)name;
	int rc = meta_client_call(rq->o->mc, META_M_GET_BUCKET, &req.base, on_bucket, rq);
	return rc ? call_failed(rq, rc) : 0;
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
