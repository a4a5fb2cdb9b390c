/*
 * s3_unset.c — the bucket configurations IOLake has no way to set, read
 * as S3 reads them on a bucket that never set one:
 *
 *   GetBucketAccelerateConfiguration    200, an empty AccelerateConfiguration
 *   GetBucketRequestPayment             200, Payer BucketOwner
 *   GetBucketLogging                    200, an empty BucketLoggingStatus
 *   GetBucketNotificationConfiguration  200, an empty NotificationConfiguration
 *   GetBucketWebsite                    404 NoSuchWebsiteConfiguration
 *   GetBucketReplication                404 ReplicationConfigurationNotFoundError
 *   DeleteBucketWebsite, DeleteBucketReplication   204 (there is none)
 *
 * Tools that manage buckets as a whole read every setting of a bucket
 * after creating it and stop on an error they do not expect; MinIO and
 * Ceph answer these reads the same way. The
 * Put side of each stays NotImplemented (s3_req.c routes it so): a
 * setting IOLake would silently ignore is worse than a refusal.
 *
 * Each answer needs the bucket to exist and the caller to be allowed its
 * action (the bucket owner, or a policy or FULL grant: s3_authz.h); the
 * gate decides that before these run, on the bucket record this reads.
 *
 * Owns nothing beyond the request's base. Thread: the gateway loop.
 */
#include "gateway/s3_handlers.h"
#include "gateway/s3_rq.h"
#include "gateway/s3_util.h"

static void on_bucket(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__Bucket *b)
{
	if (!e && !b)
		e = S3E_NoSuchBucket;
	enum s3_op op = s3_call_req(rq->c)->op;
	if (!e && op == S3_OP_GetBucketWebsite)
		e = S3E_NoSuchWebsiteConfiguration;
	if (!e && op == S3_OP_GetBucketReplication)
		e = S3E_NoSuchReplicationConfiguration;
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	if (op == S3_OP_DeleteBucketWebsite || op == S3_OP_DeleteBucketReplication) {
		http_respond(s3_call_stream(rq->c), 204, NULL, 0, NULL, NULL);
		return;
	}
	struct xml_w *w = s3_call_xml(rq->c);
	xml_decl(w);
	switch (op) {
	case S3_OP_GetBucketAccelerateConfiguration:
		xml_open_ns(w, "AccelerateConfiguration", S3_XMLNS);   /* no Status: never set */
		break;
	case S3_OP_GetBucketRequestPayment:
		xml_open_ns(w, "RequestPaymentConfiguration", S3_XMLNS);
		xml_elem(w, "Payer", "BucketOwner");
		break;
	case S3_OP_GetBucketLogging:
		xml_open_ns(w, "BucketLoggingStatus", S3_XMLNS);   /* no LoggingEnabled */
		break;
	default:   /* S3_OP_GetBucketNotificationConfiguration */
		xml_open_ns(w, "NotificationConfiguration", S3_XMLNS);
		break;
	}
	xml_close(w);
	s3_call_send_xml(rq->c, 200);
}

static void op_unset(struct s3_call *c)
{
	struct s3_rq *rq = s3_rq_new(c, sizeof(*rq));
	if (rq)
		s3_rq_bucket(rq, rq->bucket, on_bucket);
}

const struct s3_handler s3_unset_handlers[] = {
	{ S3_OP_GetBucketAccelerateConfiguration, op_unset, S3_ACT_GetAccelerateConfiguration },
	{ S3_OP_GetBucketRequestPayment, op_unset, S3_ACT_GetBucketRequestPayment },
	{ S3_OP_GetBucketLogging, op_unset, S3_ACT_GetBucketLogging },
	{ S3_OP_GetBucketNotificationConfiguration, op_unset, S3_ACT_GetBucketNotification },
	{ S3_OP_GetBucketWebsite, op_unset, S3_ACT_GetBucketWebsite },
	{ S3_OP_DeleteBucketWebsite, op_unset, S3_ACT_DeleteBucketWebsite },
	{ S3_OP_GetBucketReplication, op_unset, S3_ACT_GetReplicationConfiguration },
	/* DeleteBucketReplication is s3:PutReplicationConfiguration in AWS. */
	{ S3_OP_DeleteBucketReplication, op_unset, S3_ACT_PutReplicationConfiguration },
	S3_HANDLERS_END,
};
