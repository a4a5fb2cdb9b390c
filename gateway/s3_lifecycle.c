/*
 * s3_lifecycle.c — Get/PutBucketLifecycleConfiguration,
 * DeleteBucketLifecycle and x-amz-expiration (issue 17). See
 * s3_lifecycle.h.
 *
 * The configuration is checked by lc_rule (S3's errors) and stored in the
 * bucket record by one SetBucketLifecycle op (meta/state_lc.c); a Get
 * renders it from the record the gate read. Only the bucket owner (or an
 * admin, or a policy) may: s3:GetLifecycleConfiguration,
 * s3:PutLifecycleConfiguration (which DeleteBucketLifecycle needs too, as
 * in AWS).
 *
 * Does not apply the rules: lc_worker does, in the background.
 */
#include "gateway/s3_lifecycle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/loop.h"
#include "gateway/lc_rule.h"
#include "gateway/s3_body.h"
#include "gateway/s3_handlers.h"
#include "gateway/s3_util.h"

static uint64_t day_ms = LC_DAY_MS;

void s3_lc_set_day_ms(uint64_t ms)
{
	day_ms = ms ? ms : LC_DAY_MS;
}

uint64_t s3_lc_day_ms(void)
{
	return day_ms;
}

struct lc_rq {
	struct s3_rq rq;
	struct s3_body body;
	char msg[320];
};

static struct lc_rq *lc_of(struct s3_rq *rq)
{
	return container_of(rq, struct lc_rq, rq);
}

static void lc_fini(struct s3_rq *rq)
{
	s3_body_free(&lc_of(rq)->body);
}

static void on_commit(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__OpResult *res)
{
	(void)res;
	if (!rq->c)
		return;
	bool put = s3_call_req(rq->c)->op == S3_OP_PutBucketLifecycleConfiguration;
	if (e == S3E_OK)
		http_respond(s3_call_stream(rq->c), put ? 200 : 204, NULL, 0, NULL, NULL);
	else
		s3_rq_fail(rq, e, NULL);
}

static void commit(struct s3_rq *rq, Iolake__Meta__LifecycleConfig *cfg)
{
	Iolake__Meta__SetBucketLifecycle sbl = IOLAKE__META__SET_BUCKET_LIFECYCLE__INIT;
	sbl.name = rq->bucket;
	sbl.config = cfg;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_SET_BUCKET_LIFECYCLE;
	op.set_bucket_lifecycle = &sbl;
	s3_rq_submit(rq, &op, S3_SUBJ_BUCKET, on_commit);
}

static void on_body(struct s3_rq *rq, enum s3_err verdict)
{
	struct lc_rq *q = lc_of(rq);
	if (verdict) {
		s3_rq_fail(rq, verdict, NULL);
		return;
	}
	Iolake__Meta__LifecycleConfig *cfg = NULL;
	const char *msg = NULL;
	enum s3_err e = lc_parse((const char *)q->body.buf, q->body.len, &cfg, &msg, q->msg,
				 sizeof(q->msg));
	if (e) {
		s3_rq_fail(rq, e, msg);
		return;
	}
	commit(rq, cfg); /* the op is copied */
	lc_config_free(cfg);
}

static void on_get(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__Bucket *b)
{
	if (!e && !b)
		e = S3E_NoSuchBucket;
	if (!e && (!b->lifecycle || !b->lifecycle->n_rules))
		e = S3E_NoSuchLifecycleConfiguration;
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	lc_render(s3_call_xml(rq->c), b->lifecycle);
	s3_call_send_xml(rq->c, 200);
}

static void op_lifecycle(struct s3_call *c)
{
	struct lc_rq *q = s3_rq_new(c, sizeof(*q));
	if (!q)
		return;
	q->rq.fini = lc_fini;
	enum s3_op op = s3_call_req(c)->op;
	if (op == S3_OP_GetBucketLifecycleConfiguration) {
		s3_rq_bucket(&q->rq, q->rq.bucket, on_get);
	} else if (op == S3_OP_DeleteBucketLifecycle) {
		commit(&q->rq, NULL);
	} else {
		enum s3_err e = s3_body_read(&q->rq, &q->body, LC_BODY_MAX, on_body);
		if (e)
			s3_rq_fail(&q->rq, e, NULL);
	}
}

/* ------------------------------------------------------------ x-amz-expiration */

static void add_expiration(struct s3_rq *rq, const struct lc_obj *o, uint64_t mtime_ms)
{
	const Iolake__Meta__Bucket *b = s3_rq_gate_bucket(rq);
	if (!rq->c || !b || !b->lifecycle || !b->lifecycle->n_rules)
		return;
	const Iolake__Meta__LifecycleRule *r = NULL;
	uint64_t due = lc_current_expiry(b->lifecycle, o, mtime_ms, day_ms, &r);
	char v[LC_ID_MAX * 2 + 96];
	if (due && r && lc_expiration_header(due, r->id, v, sizeof(v)))
		http_add_header(s3_call_stream(rq->c), "x-amz-expiration", v);
}

void s3_lc_expiration_header(struct s3_rq *rq, const Iolake__Meta__ObjectRecord *rec)
{
	if (!rec || rec->is_delete_marker || !rq->key)
		return;
	struct lc_obj o = { .key = rec->key && rec->key[0] ? rec->key : rq->key, .size = rec->size,
			    .tags = rec->tags, .n_tags = rec->n_tags };
	add_expiration(rq, &o, rec->mtime_ms);
}

void s3_lc_expiration_put(struct s3_rq *rq, uint64_t size, uint64_t mtime_ms)
{
	if (!rq->key)
		return;
	struct lc_obj o = { .key = rq->key, .size = size };
	add_expiration(rq, &o, mtime_ms ? mtime_ms : s3u_wall_ms());
}

const struct s3_handler s3_lifecycle_handlers[] = {
	{ S3_OP_GetBucketLifecycleConfiguration, op_lifecycle, S3_ACT_GetLifecycleConfiguration },
	{ S3_OP_PutBucketLifecycleConfiguration, op_lifecycle, S3_ACT_PutLifecycleConfiguration },
	/* DeleteBucketLifecycle is s3:PutLifecycleConfiguration in AWS. */
	{ S3_OP_DeleteBucketLifecycle, op_lifecycle, S3_ACT_PutLifecycleConfiguration },
	S3_HANDLERS_END,
};
