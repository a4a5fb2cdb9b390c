/*
 * s3_status.h — the one table from meta's answers to S3 errors.
 *
 * A meta status means different things to a client depending on what the
 * call addressed: NOT_FOUND from a write into a bucket is NoSuchBucket,
 * from a part upload NoSuchUpload, from a DeleteObject a success; TOO_LARGE
 * is "metadata too large" for a PutObject and "record too large" for a
 * CompleteMultipartUpload. So the table is keyed by (subject, status): a
 * handler names what its meta call is about and gets the S3 error (or
 * S3E_OK) back; it never tests a status or an error code itself, except
 * CONFLICT, which is not an answer but a reason to read and try again.
 *
 * Reads (the subjects marked read) answer their "missing" error for every
 * status but OK: meta's reads return OK or NOT_FOUND (the listings also
 * INVALID for a bad argument), and a storage failure there has always been
 * answered as the thing missing.
 *
 * Owns the table only. Does not answer anything (handlers do, with
 * s3_rq_fail) nor decide retries (a CONFLICT is the caller's).
 *
 * Pure: no I/O, no state; any thread.
 */
#ifndef GATEWAY_S3_STATUS_H
#define GATEWAY_S3_STATUS_H

#include <stdbool.h>

#include "gateway/s3_err.h"

/* What a meta call or op is about.
 *      name          read   any other status      used for */
#define S3_SUBJECTS(X)                                                                       \
	X(NONE,        true,  InternalError)             /* ListBuckets (no status) */        \
	X(BUCKET_NEW,  false, InternalError)             /* CreateBucket */                   \
	X(BUCKET,      false, InternalError)             /* DeleteBucket, SetBucketTags, Access */ \
	X(BUCKET_READ, true,  NoSuchBucket)              /* GetBucket */                      \
	X(OBJECT,      false, InternalError)             /* PutObject, CreateMultipart */     \
	X(OBJECT_READ, true,  NoSuchKey)                 /* HeadObject (OK without a record: NoSuchKey too) */ \
	X(OBJECT_DEL,  false, InternalError)             /* DeleteObject */                   \
	X(OBJECT_TAGS, false, InternalError)             /* SetObjectTags, SetObjectAcl */    \
	X(UPLOAD,      false, InternalError)             /* PutPart, AbortMultipart */        \
	X(UPLOAD_READ, true,  NoSuchUpload)              /* GetUpload, ListParts */           \
	X(COMPLETE,    false, InternalError)             /* CompleteMultipart */              \
	X(LISTING,     true,  InvalidContinuationToken)  /* ListObjects */                    \
	X(UPLOADS,     true,  NoSuchBucket)              /* ListUploads */                    \
	X(BUCKET_LOCK, false, InternalError)             /* SetObjectLockConfig, SetBucketVersioning */

/* The table. Status OK is S3E_OK for every subject; a (subject, status)
 * not listed gets the subject's "any other status". REFUSED is the meta
 * client's -EINVAL (the member refused the request as malformed), for the
 * subjects that read it as an answer.
 *      subject       status            S3 error */
#define S3_STATUS_MAP(X)                                                    \
	X(BUCKET_NEW,  EXISTS,           BucketAlreadyOwnedByYou)           \
	X(BUCKET_NEW,  INVALID,          InvalidBucketName)                 \
	X(BUCKET_NEW,  REFUSED,          InvalidBucketName)                 \
	X(BUCKET,      NOT_FOUND,        NoSuchBucket)                      \
	X(BUCKET,      BUCKET_NOT_EMPTY, BucketNotEmpty)                    \
	X(BUCKET,      CONFLICT,         OperationAborted) /* retries spent */ \
	X(OBJECT,      NOT_FOUND,        NoSuchBucket)                      \
	X(OBJECT,      TOO_LARGE,        MetadataTooLarge)                  \
	X(OBJECT_DEL,  NOT_FOUND,        OK)            /* gone already */  \
	X(OBJECT_TAGS, NOT_FOUND,        NoSuchKey)                         \
	X(UPLOAD,      NOT_FOUND,        NoSuchUpload)                      \
	X(COMPLETE,    NOT_FOUND,        NoSuchUpload)                      \
	X(COMPLETE,    INVALID_PART,     InvalidPart)                       \
	X(COMPLETE,    INVALID,          InvalidPartOrder)                  \
	X(COMPLETE,    TOO_LARGE,        RecordTooLarge)                    \
	X(LISTING,     NOT_FOUND,        NoSuchBucket)                      \
	X(LISTING,     REFUSED,          InvalidContinuationToken)          \
	X(UPLOADS,     INVALID,          ListArgumentTooLong)               \
	X(OBJECT,      LOCKED,           ObjectLocked)  /* object lock (issue 17) */ \
	X(OBJECT_DEL,  LOCKED,           ObjectLocked)                      \
	X(OBJECT_TAGS, LOCKED,           ObjectLocked)  /* SetObjectRetention */ \
	X(COMPLETE,    LOCKED,           ObjectLocked)                      \
	X(BUCKET_LOCK, NOT_FOUND,        NoSuchBucket)                      \
	X(BUCKET_LOCK, INVALID,          InvalidBucketState)                \
	X(BUCKET_LOCK, CONFLICT,         OperationAborted)

enum s3_subj {
#define S3_SUBJ_ENUM(name, read, other) S3_SUBJ_##name,
	S3_SUBJECTS(S3_SUBJ_ENUM)
#undef S3_SUBJ_ENUM
	S3_SUBJ__COUNT
};

/* The S3 answer to a meta answer about subj. err is the meta client's (0
 * or negative); status the answer's (a meta.proto Status; read only when
 * err is 0). Returns S3E_OK for status OK and for what subj reads as done,
 * else the error to answer with. A client error is ServiceUnavailable when
 * it is worth retrying (-EAGAIN, or iol_err_retryable) and InternalError
 * otherwise, except IOL_ENOT_FOUND, which a read subject takes as status
 * NOT_FOUND, and -EINVAL where subj has a REFUSED row. */
enum s3_err s3_status_err(enum s3_subj subj, int err, int status);

/* A meta client failure alone (no answer to read): ServiceUnavailable or
 * InternalError, as above. */
enum s3_err s3_status_client_err(int err);

/* "BUCKET_READ", for logs and tests; "?" out of range. */
const char *s3_subj_name(enum s3_subj subj);

#endif
