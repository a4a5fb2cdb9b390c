/*
 * s3_lock.h — S3 Object Lock in the gateway (issue 17): the handlers of
 * Put/GetObjectLockConfiguration, Put/GetObjectRetention and
 * Put/GetObjectLegalHold (s3_lock.c, table s3_lock_handlers), and the
 * hooks the write, read and delete paths call:
 *
 *   - s3_lock_check_headers / s3_lock_to_record: a write's
 *     x-amz-object-lock-mode, -retain-until-date and -legal-hold, or the
 *     bucket's default retention, onto the record it commits (PutObject,
 *     CopyObject, CreateMultipartUpload: Complete takes them from the
 *     upload, as S3 does);
 *   - (the stamp of the time and of the bypass on the ops that could
 *     remove a version — x-amz-bypass-governance-retention: true AND
 *     s3:BypassGovernanceRetention, meta.proto Op fields 58 and 70 — is
 *     the core's, s3_rq_stamp_op; meta's apply decides with them,
 *     meta/state_lock.c: the gateway never refuses a delete itself);
 *   - s3_lock_record_headers: the lock headers of GET and HEAD.
 *
 * Thread: the gateway loop.
 */
#ifndef GATEWAY_S3_LOCK_H
#define GATEWAY_S3_LOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "gateway/s3_rq.h"

/* Whether the bucket record has object lock enabled. */
bool s3_lock_bucket_enabled(const Iolake__Meta__Bucket *b);

/* A write's lock headers, checked before its body is read, against the
 * bucket the gate read (rq->bkt): S3E_OK, or the error to answer —
 * LockNotEnabled (any lock header on a bucket without lock),
 * InvalidArgument (a mode without a date or the reverse, an unknown mode
 * or legal hold status, a malformed date or one not in the future),
 * InvalidRequest (need_integrity: a PutObject with lock headers and
 * neither Content-MD5 nor an x-amz-checksum-* / -sdk-checksum-algorithm
 * header, as S3 requires). *msg is a static detail or NULL. */
enum s3_err s3_lock_check_headers(struct s3_rq *rq, bool need_integrity, const char **msg);

/* Set rec's lock fields from the headers, or else from the bucket's
 * default retention counted from now_ms. Call after
 * s3_lock_check_headers passed; S3E_OK or the same errors. */
enum s3_err s3_lock_to_record(struct s3_rq *rq, Iolake__Meta__ObjectRecord *rec, uint64_t now_ms,
			      const char **msg);

/* x-amz-object-lock-mode, -retain-until-date and -legal-hold of a record
 * read (GET/HEAD), when it has them. */
void s3_lock_record_headers(struct s3_rq *rq, const Iolake__Meta__ObjectRecord *rec);

#endif
