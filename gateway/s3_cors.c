/*
 * s3_cors.c — Put/Get/DeleteBucketCors, the preflight OPTIONS, and the
 * preflight's answer. See s3_cors.h.
 *
 * The configuration lives in the bucket record (Bucket.cors), set by one
 * SetBucketCors op. Ordinary requests get their CORS headers from the
 * bucket record the gate read anyway, so there is no cache to keep
 * coherent: a Put/DeleteBucketCors is seen by the next request on any
 * gateway. The preflight reads the bucket (one GetBucket): it is not
 * authorized, so the gate does not read it for it.
 */
#include "gateway/s3_cors.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/loop.h"
#include "gateway/s3_body.h"
#include "gateway/s3_cors_hdr.h"
#include "gateway/s3_cors_rules.h"
#include "gateway/s3_handlers.h"
#include "gateway/s3_rq.h"
#include "gateway/s3_util.h"
#include "gateway/xml_parse.h"

#define CORS_ITEMS_MAX 4096     /* elements of a document's rules in all */

struct cors_rq {
	struct s3_rq rq;
	struct s3_body body;        /* PutBucketCors: the document */
	char msg[320];
};

static struct cors_rq *cors_of(struct s3_rq *rq)
{
	return container_of(rq, struct cors_rq, rq);
}

static void cors_fini(struct s3_rq *rq)
{
	s3_body_free(&cors_of(rq)->body);
}

/* ------------------------------------------------------------ preflight */

static void on_pre_bucket(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__Bucket *b)
{
	if (!e && !b)
		e = S3E_NoSuchBucket;
	if (!e && (!b->cors || !b->cors->n_rules))
		e = S3E_CORSNotEnabled;
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	struct s3_call *c = rq->c;
	const struct sigv4_header *origin = s3u_hdr(c, "origin");
	const struct sigv4_header *m = s3u_hdr(c, "access-control-request-method");
	const struct sigv4_header *h = s3u_hdr(c, "access-control-request-headers");
	int i = s3_cors_match(b->cors, origin->value, origin->value_len, m->value, m->value_len,
			      h ? h->value : NULL, h ? h->value_len : 0);
	if (i < 0) {
		s3_rq_fail(rq, S3E_CORSForbidden, NULL);
		return;
	}
	s3_cors_preflight_headers(c, b->cors->rules[i], h);
	http_respond(s3_call_stream(c), 200, NULL, 0, NULL, NULL);
}

void s3_cors_preflight(struct s3_call *c)
{
	const struct sigv4_header *m = s3u_hdr(c, "access-control-request-method");
	if (!s3u_hdr(c, "origin")) {
		s3_call_error(c, S3E_CORSBadRequest, NULL);
		return;
	}
	if (!m || !m->value_len) {
		s3_call_error(c, S3E_CORSBadRequest, "Invalid Access-Control-Request-Method: null");
		return;
	}
	struct cors_rq *q = s3_rq_new(c, sizeof(*q));
	if (!q)
		return;
	q->rq.fini = cors_fini;
	s3_rq_bucket(&q->rq, q->rq.bucket, on_pre_bucket);
}

/* ------------------------------------------------------------ configuration */

static void on_commit(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__OpResult *res)
{
	(void)res;
	if (!rq->c)
		return;
	bool put = s3_call_req(rq->c)->op == S3_OP_PutBucketCors;
	if (e == S3E_OK)
		http_respond(s3_call_stream(rq->c), put ? 200 : 204, NULL, 0, NULL, NULL);
	else
		s3_rq_fail(rq, e, NULL);
}

static void commit(struct s3_rq *rq, Iolake__Meta__CorsConfig *cfg)
{
	Iolake__Meta__SetBucketCors sbc = IOLAKE__META__SET_BUCKET_CORS__INIT;
	sbc.name = rq->bucket;
	sbc.cors = cfg;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_SET_BUCKET_CORS;
	op.set_bucket_cors = &sbc;
	s3_rq_submit(rq, &op, S3_SUBJ_BUCKET, on_commit);
}

static void on_body(struct s3_rq *rq, enum s3_err verdict)
{
	struct cors_rq *q = cors_of(rq);
	if (verdict) {
		s3_rq_fail(rq, verdict, NULL);
		return;
	}
	struct xmlp_cors_item *items = calloc(CORS_ITEMS_MAX, sizeof(*items));
	char *arena = malloc(q->body.len + 1);
	struct s3_cors_doc d = { 0 };
	enum s3_err e = S3E_InternalError;
	const char *msg = NULL;
	if (!items || !arena)
		goto out;
	struct xmlp_cors x = { .items = items, .max_items = CORS_ITEMS_MAX, .arena = arena,
			       .arena_cap = q->body.len + 1 };
	int rc = xmlp_cors(q->body.buf ? (const char *)q->body.buf : "", q->body.len,
			   S3_CORS_BODY_MAX, &x);
	if (rc) {
		e = S3E_MalformedXML;
		goto out;
	}
	e = s3_cors_build(&x, &d, &msg, q->msg, sizeof(q->msg));
	if (e == S3E_OK)
		commit(rq, &d.cfg); /* the op is copied */
out:
	if (e)
		s3_rq_fail(rq, e, msg);
	s3_cors_doc_free(&d);
	free(items);
	free(arena);
}

static void on_get(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__Bucket *b)
{
	if (!e && !b)
		e = S3E_NoSuchBucket;
	if (!e && (!b->cors || !b->cors->n_rules))
		e = S3E_NoSuchCORSConfiguration;
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	s3_cors_render(s3_call_xml(rq->c), b->cors);
	s3_call_send_xml(rq->c, 200);
}

static void op_bucket_cors(struct s3_call *c)
{
	struct cors_rq *q = s3_rq_new(c, sizeof(*q));
	if (!q)
		return;
	q->rq.fini = cors_fini;
	enum s3_op op = s3_call_req(c)->op;
	if (op == S3_OP_GetBucketCors) {
		s3_rq_bucket(&q->rq, q->rq.bucket, on_get);
	} else if (op == S3_OP_DeleteBucketCors) {
		commit(&q->rq, NULL);
	} else {
		enum s3_err e = s3_body_read(&q->rq, &q->body, S3_CORS_BODY_MAX, on_body);
		if (e)
			s3_rq_fail(&q->rq, e, NULL);
	}
}

const struct s3_handler s3_cors_handlers[] = {
	{ S3_OP_GetBucketCors, op_bucket_cors, S3_ACT_GetBucketCORS },
	{ S3_OP_PutBucketCors, op_bucket_cors, S3_ACT_PutBucketCORS },
	/* DeleteBucketCors is s3:PutBucketCORS in AWS. */
	{ S3_OP_DeleteBucketCors, op_bucket_cors, S3_ACT_PutBucketCORS },
	S3_HANDLERS_END,
};
