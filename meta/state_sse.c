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

int op_set_bucket_encryption(struct tx *t, const Iolake__Meta__SetBucketEncryption *op)
{
	if (!valid_bucket(op->name))
		return -EINVAL;
	/* Only SSE-S3 is a default S3 lets a bucket have here (no KMS). */
	if (op->default_sse != IOLAKE__META__SSE_KIND__SSE_NONE &&
	    op->default_sse != IOLAKE__META__SSE_KIND__SSE_S3)
		return -EINVAL;
	Iolake__Meta__Bucket *b = NULL;
	struct key k;
	k_init(&k, 'B');
	k_str(&k, op->name);
	int rc = tx_get_msg(t, &k, &iolake__meta__bucket__descriptor, (void **)&b);
	if (rc)
		return rc;
	b->default_sse = op->default_sse;
	b->sse_bucket_key = op->default_sse != IOLAKE__META__SSE_KIND__SSE_NONE && op->bucket_key;
	rc = tx_put_msg(t, &k, &b->base);
	meta_state_free_msg(b);
	return rc;
}
