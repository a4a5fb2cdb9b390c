/*
 * s3_lifecycle.h — bucket lifecycle over S3 (issue 17): the handlers of
 * Get/PutBucketLifecycleConfiguration and DeleteBucketLifecycle
 * (s3_lifecycle_handlers, s3_handlers.h) and the x-amz-expiration header
 * GET, HEAD and PUT answers carry for an object a rule expires.
 *
 * The configuration lives in the bucket record (Bucket.lifecycle), set by
 * one SetBucketLifecycle op; the worker that applies it is lc_worker.
 * Thread: the gateway loop.
 */
#ifndef GATEWAY_S3_LIFECYCLE_H
#define GATEWAY_S3_LIFECYCLE_H

#include <stdint.h>

#include "gateway/s3_rq.h"

/* The length of a lifecycle "day" in ms for this process (the test
 * clock, --debug-lifecycle-day-seconds; 0 or unset: 86,400,000). Set once
 * at start, before the loop runs. */
void s3_lc_set_day_ms(uint64_t day_ms);
uint64_t s3_lc_day_ms(void);

/* x-amz-expiration on rq's answer when a rule of the bucket the gate read
 * expires the current version (key, size, tags of rec; written at
 * mtime_ms). Nothing when the exchange is over, the bucket has no
 * lifecycle or no rule applies. */
void s3_lc_expiration_header(struct s3_rq *rq, const Iolake__Meta__ObjectRecord *rec);

/* The same for a PUT's new object of size bytes written at mtime_ms (its
 * tags are not looked at: a tag-filtered rule does not show here). */
void s3_lc_expiration_put(struct s3_rq *rq, uint64_t size, uint64_t mtime_ms);

#endif
