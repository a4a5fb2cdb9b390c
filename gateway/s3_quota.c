/*
 * s3_quota.c — the quota check of S3 writes (contract in s3_quota.h). The
 * handlers call it where they know the bytes a write adds: PutObject and
 * POST (the body's length), CopyObject (the source's size), UploadPart
 * and UploadPartCopy (the part's bytes, no object), CompleteMultipart (one
 * object; its parts' bytes were checked as they came).
 *
 * Does not count anything: meta keeps the usage (meta/state_quota.c).
 */
#include "gateway/s3_quota.h"

static bool over(const Iolake__Meta__Quota *q, const Iolake__Meta__Usage *u, uint64_t add_bytes,
		 uint64_t add_objects)
{
	if (!q || !u)
		return false;
	if (q->max_bytes && (add_bytes > q->max_bytes || u->bytes > q->max_bytes - add_bytes))
		return true;
	if (q->max_objects &&
	    (add_objects > q->max_objects || u->objects > q->max_objects - add_objects))
		return true;
	return false;
}

enum s3_err s3_quota_check(const Iolake__Meta__Bucket *b, uint64_t add_bytes, uint64_t add_objects)
{
	if (!b)
		return S3E_OK;
	/* Usage known only for buckets the root counts (no key ranges). */
	if (b->usage && over(b->quota, b->usage, add_bytes, add_objects))
		return S3E_QuotaExceeded;
	if (b->usage && over(b->owner_quota, b->owner_usage, add_bytes, add_objects))
		return S3E_QuotaExceeded;
	return S3E_OK;
}
