/*
 * s3_sse_config.c — a bucket's default encryption (issue 18):
 * PutBucketEncryption (a ServerSideEncryptionConfiguration with one Rule:
 * SSEAlgorithm AES256; aws:kms is NotImplemented, there is no KMS here),
 * GetBucketEncryption (ServerSideEncryptionConfigurationNotFoundError
 * without one) and DeleteBucketEncryption.
 *
 * The configuration lives in the bucket record (Bucket.default_sse), set
 * by one SetBucketEncryption op (meta/state_sse.c); writes without SSE
 * headers read it from the bucket record the gate read anyway
 * (s3_sse_for_write), so a change is seen by the next request on any
 * gateway. Does not encrypt anything (s3_sse.c, sse_crypt.c).
 *
 * Thread: the gateway loop.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gateway/s3_body.h"
#include "gateway/s3_handlers.h"
#include "gateway/s3_rq.h"
#include "gateway/s3_util.h"
#include "gateway/xml_parse.h"

#define SSE_BODY_MAX 4096

struct ssec_rq {
	struct s3_rq rq;
	struct s3_body body;
};

static struct ssec_rq *ssec_of(struct s3_rq *rq)
{
	return container_of(rq, struct ssec_rq, rq);
}

static void ssec_fini(struct s3_rq *rq)
{
	s3_body_free(&ssec_of(rq)->body);
}

static void on_commit(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__OpResult *res)
{
	(void)res;
	if (!rq->c)
		return;
	bool put = s3_call_req(rq->c)->op == S3_OP_PutBucketEncryption;
	if (e == S3E_OK)
		http_respond(s3_call_stream(rq->c), put ? 200 : 204, NULL, 0, NULL, NULL);
	else
		s3_rq_fail(rq, e, NULL);
}

static void commit(struct s3_rq *rq, Iolake__Meta__SseKind kind, bool bucket_key)
{
	Iolake__Meta__SetBucketEncryption sbe = IOLAKE__META__SET_BUCKET_ENCRYPTION__INIT;
	sbe.name = rq->bucket;
	sbe.default_sse = kind;
	sbe.bucket_key = bucket_key;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_SET_BUCKET_ENCRYPTION;
	op.set_bucket_encryption = &sbe;
	s3_rq_submit(rq, &op, S3_SUBJ_BUCKET, on_commit);
}

/* The document's meaning, with AWS's answers to what it cannot be. */
static enum s3_err check(const struct xmlp_sse *x, bool *bucket_key, const char **msg)
{
	*msg = NULL;
	if (x->n_rules != 1 || !x->have_default || !x->algorithm[0])
		return S3E_MalformedXML;
	if (!strcmp(x->algorithm, "aws:kms") || !strcmp(x->algorithm, "aws:kms:dsse")) {
		*msg = "Server-side encryption with AWS KMS keys is not supported; use AES256.";
		return S3E_NotImplemented;
	}
	if (strcmp(x->algorithm, "AES256") != 0)
		return S3E_MalformedXML;
	if (x->kms_key_id[0]) {
		*msg = "a KMSMasterKeyID is not applicable if the default sse algorithm is not aws:kms";
		return S3E_InvalidArgument;
	}
	if (x->bucket_key[0] && strcasecmp(x->bucket_key, "true") && strcasecmp(x->bucket_key, "false"))
		return S3E_MalformedXML;
	*bucket_key = !strcasecmp(x->bucket_key, "true");
	return S3E_OK;
}

static void on_body(struct s3_rq *rq, enum s3_err verdict)
{
	struct ssec_rq *q = ssec_of(rq);
	if (verdict) {
		s3_rq_fail(rq, verdict, NULL);
		return;
	}
	struct xmlp_sse x;
	bool bk = false;
	const char *msg = NULL;
	enum s3_err e = xmlp_sse(q->body.buf ? (const char *)q->body.buf : "", q->body.len,
				 SSE_BODY_MAX, &x)
				? S3E_MalformedXML
				: check(&x, &bk, &msg);
	if (e)
		s3_rq_fail(rq, e, msg);
	else
		commit(rq, IOLAKE__META__SSE_KIND__SSE_S3, bk);
}

static void on_get(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__Bucket *b)
{
	if (!e && !b)
		e = S3E_NoSuchBucket;
	if (!e && b->default_sse == IOLAKE__META__SSE_KIND__SSE_NONE)
		e = S3E_NoSuchEncryptionConfiguration;
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	struct xml_w *w = s3_call_xml(rq->c);
	xml_decl(w);
	xml_open_ns(w, "ServerSideEncryptionConfiguration", S3_XMLNS);
	xml_open(w, "Rule");
	xml_open(w, "ApplyServerSideEncryptionByDefault");
	xml_elem(w, "SSEAlgorithm", "AES256");
	xml_close(w);
	xml_elem(w, "BucketKeyEnabled", b->sse_bucket_key ? "true" : "false");
	xml_close(w);
	xml_close(w);
	s3_call_send_xml(rq->c, 200);
}

static void op_bucket_encryption(struct s3_call *c)
{
	struct ssec_rq *q = s3_rq_new(c, sizeof(*q));
	if (!q)
		return;
	q->rq.fini = ssec_fini;
	enum s3_op op = s3_call_req(c)->op;
	if (op == S3_OP_GetBucketEncryption) {
		s3_rq_bucket(&q->rq, q->rq.bucket, on_get);
	} else if (op == S3_OP_DeleteBucketEncryption) {
		commit(&q->rq, IOLAKE__META__SSE_KIND__SSE_NONE, false);
	} else {
		enum s3_err e = s3_body_read(&q->rq, &q->body, SSE_BODY_MAX, on_body);
		if (e)
			s3_rq_fail(&q->rq, e, NULL);
	}
}

const struct s3_handler s3_sse_config_handlers[] = {
	{ S3_OP_GetBucketEncryption, op_bucket_encryption, S3_ACT_GetEncryptionConfiguration },
	{ S3_OP_PutBucketEncryption, op_bucket_encryption, S3_ACT_PutEncryptionConfiguration },
	/* DeleteBucketEncryption is s3:PutEncryptionConfiguration in AWS. */
	{ S3_OP_DeleteBucketEncryption, op_bucket_encryption, S3_ACT_PutEncryptionConfiguration },
	S3_HANDLERS_END,
};
