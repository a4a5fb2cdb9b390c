/*
 * s3_quota.h — the quota check of S3 writes (issue 20; docs/architecture.md
 * "Quotas"): a write is refused with 403 QuotaExceeded (Ceph RGW's code)
 * when it would take its bucket, or the bucket's owner over all its
 * buckets, past a max-bytes or max-objects quota.
 *
 * Pure: decides on the bucket record the request's gate read (meta fills
 * in its usage and its owner's quota and usage at that read), so the
 * check is exact for one writer at a time; writers racing on a bucket can
 * overshoot by what they have in flight. A bucket whose record carries no
 * usage (its records live in range groups) is not checked.
 */
#ifndef GATEWAY_S3_QUOTA_H
#define GATEWAY_S3_QUOTA_H

#include <stdint.h>

#include "proto/meta.pb-c.h"
#include "gateway/s3_err.h"

/* S3E_OK, or S3E_QuotaExceeded when usage plus add_bytes / add_objects
 * would pass a limit of b's quota or of its owner's. As Ceph, a write is
 * counted whole: an overwrite is not credited with what it replaces.
 * NULL b: S3E_OK. */
enum s3_err s3_quota_check(const Iolake__Meta__Bucket *b, uint64_t add_bytes, uint64_t add_objects);

#endif
