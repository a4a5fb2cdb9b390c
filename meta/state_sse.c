/*
 * state_sse.c — server-side encryption's op of the meta state machine
 * (issue 18): SetBucketEncryption sets or deletes a bucket's default
 * encryption (Bucket.default_sse, .sse_bucket_key), as SetBucketCors
 * replaces its CORS configuration: the bucket's generation unchanged.
 *
 * Not here: objects' encryption fields (ObjectRecord 60-64), which meta
 * stores as the gateway sent them and never reads; keys of any kind
 * (meta holds no key that opens an object: SSE-S3 data keys are sealed
 * by a master key only gateways have, SSE-C keys are never sent).
 */
#include "meta/state.h"
#include "meta/state_internal.h"

#include "common/err.h"

static int edit_sse(struct tx *t, Iolake__Meta__Bucket *b, const void *arg)
{
	(void)t;
	const Iolake__Meta__SetBucketEncryption *op = arg;
	b->default_sse = op->default_sse;
	b->sse_bucket_key = op->default_sse != IOLAKE__META__SSE_KIND__SSE_NONE && op->bucket_key;
	return 0;
}

int op_set_bucket_encryption(struct tx *t, const Iolake__Meta__SetBucketEncryption *op)
{
	if (!valid_bucket(op->name))
		return -EINVAL;
	/* Only SSE-S3 is a default S3 lets a bucket have here (no KMS). */
	if (op->default_sse != IOLAKE__META__SSE_KIND__SSE_NONE &&
	    op->default_sse != IOLAKE__META__SSE_KIND__SSE_S3)
		return -EINVAL;
	return bucket_config_update(t, op->name, edit_sse, op);
}
