/*
 * s3_version.h — S3 versioning in the gateway (issue 17): the bucket's
 * versioning state stamped on the ops that write or delete an object
 * version, the x-amz-version-id / x-amz-delete-marker answer headers, and
 * the handlers of Put/GetBucketVersioning and ListObjectVersions
 * (s3_version.c, table s3_version_handlers).
 *
 * Thread: the gateway loop.
 */
#ifndef GATEWAY_S3_VERSION_H
#define GATEWAY_S3_VERSION_H

#include <stdbool.h>

#include "gateway/s3_rq.h"

/* (The stamp of an op with the bucket's versioning state and the
 * delete-marker headers of a HeadObject are the core's: s3_rq_stamp_op,
 * s3_rq_marker_headers in s3_rq.h.) */

/* Whether the bucket the gate read has versioning (Enabled or Suspended). */
bool s3_ver_bucket_versioned(const struct s3_rq *rq);

/* x-amz-version-id (the last applied op's version; "null" for the null
 * version) when the bucket has versioning, and x-amz-delete-marker: true
 * when that version is a marker. */
void s3_ver_headers(struct s3_rq *rq);

/* The same headers for a record read (GET/HEAD of a versioned bucket). */
void s3_ver_record_headers(struct s3_rq *rq, const Iolake__Meta__ObjectRecord *rec);

/* The request's versionId query value ("null" allowed), NULL when absent;
 * *bad when present but not a version id this store makes. */
const char *s3_ver_query(const struct s3_rq *rq, bool *bad);

/* Read version vid of rq's key (GetVersion) and answer cb as s3_rq_head
 * would: S3E_OK and the record (the callee's to free), NoSuchVersion, a
 * delete marker MethodNotAllowed (with its headers), or the error. */
int s3_ver_read(struct s3_rq *rq, const char *vid, s3_rq_head_cb cb);

/* The S3 error of a GetVersion answer, given the call's e: a missing
 * version (or key, or an answer without a record) is NoSuchVersion, a
 * version id meta refused InvalidVersionId; else e. */
enum s3_err s3_ver_answer_err(enum s3_err e, const Iolake__Meta__GetVersionResponse *r);

#endif
