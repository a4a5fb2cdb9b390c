/*
 * s3_handlers.h — the S3 operation handlers: one const table per resource
 * module, each naming the operations it serves. s3_ops_bind installs every
 * table into the front end's ops table (an operation no table names stays
 * NULL there: the front end answers NotImplemented).
 *
 *   s3_bucket.c     ListBuckets, CreateBucket, HeadBucket,
 *                   GetBucketLocation, DeleteBucket
 *   s3_list.c       ListObjects (v1, v2), ListMultipartUploads
 *   s3_put.c        PutObject (and the PUT pipeline, s3_put.h)
 *   s3_get.c        GetObject, HeadObject
 *   s3_delete.c     DeleteObject, DeleteObjects
 *   s3_multipart.c  CreateMultipartUpload, CompleteMultipartUpload,
 *                   AbortMultipartUpload
 *   s3_list_parts.c ListParts
 *   s3_part.c       UploadPart (and the part commit, s3_part.h)
 *   s3_copy.c       CopyObject, UploadPartCopy
 *   s3_tagging.c    Put/Get/DeleteObjectTagging, Put/Get/DeleteBucketTagging
 *   s3_attrs.c      GetObjectAttributes
 *   s3_access.c     Get/PutBucketAcl, Get/PutObjectAcl,
 *                   Get/Put/DeleteBucketOwnershipControls
 *   s3_bucket_policy.c Put/Get/DeleteBucketPolicy, GetBucketPolicyStatus,
 *                   Put/Get/DeletePublicAccessBlock
 *   s3_version.c    Put/GetBucketVersioning, ListObjectVersions
 *   s3_cors.c       Get/Put/DeleteBucketCors (the preflight OPTIONS is
 *                   installed outside the gate: s3_cors.h)
 *   s3_lifecycle.c  Get/PutBucketLifecycleConfiguration, DeleteBucketLifecycle
 *   s3_lock.c       Put/GetObjectLockConfiguration, Put/GetObjectRetention,
 *                   Put/GetObjectLegalHold
 *   s3_sse_config.c Get/Put/DeleteBucketEncryption
 *   s3_unset.c      the reads of configurations IOLake cannot set (accelerate,
 *                   requestPayment, logging, notification, website,
 *                   replication) and the deletes of website and replication
 *
 * Thread: the handlers run on the gateway loop.
 *
 * Owns nothing: the tables' declarations. Does not dispatch (s3_server)
 * nor install them (s3_ops_bind).
 */
#ifndef GATEWAY_S3_HANDLERS_H
#define GATEWAY_S3_HANDLERS_H

#include "gateway/s3_authz.h"
#include "gateway/s3_req.h"
#include "gateway/s3_server.h"

/* One row of a module's table; a table ends with S3_HANDLERS_END. The
 * action is what the operation needs (s3_authz.h: the rule, and whether
 * it is decided on nothing, the bucket, or the object): the gate
 * (s3_rq_gate) decides it before fn runs. */
struct s3_handler {
	enum s3_op op;
	s3_op_fn fn;
	enum s3_authz_action action;
};

#define S3_HANDLERS_END { S3_OP_NONE, NULL, S3_ACT_NONE }

extern const struct s3_handler s3_bucket_handlers[];
extern const struct s3_handler s3_list_handlers[];
extern const struct s3_handler s3_put_handlers[];
extern const struct s3_handler s3_get_handlers[];
extern const struct s3_handler s3_delete_handlers[];
extern const struct s3_handler s3_multipart_handlers[];
extern const struct s3_handler s3_part_handlers[];
extern const struct s3_handler s3_copy_handlers[];
extern const struct s3_handler s3_tagging_handlers[];
extern const struct s3_handler s3_attrs_handlers[];
extern const struct s3_handler s3_access_handlers[];
extern const struct s3_handler s3_cors_handlers[];
extern const struct s3_handler s3_sse_config_handlers[];
extern const struct s3_handler s3_bucket_policy_handlers[];
extern const struct s3_handler s3_version_handlers[];   /* s3_version.c (issue 17) */
extern const struct s3_handler s3_lifecycle_handlers[]; /* s3_lifecycle.c (issue 17) */
extern const struct s3_handler s3_list_parts_handlers[]; /* s3_list_parts.c */
extern const struct s3_handler s3_lock_handlers[];      /* s3_lock.c (issue 17) */
extern const struct s3_handler s3_unset_handlers[];     /* s3_unset.c */

/* All of the above (s3_ops.c): what s3_ops_bind installs. */
extern const struct s3_handler *const s3_handler_tables[];
extern const size_t s3_n_handler_tables;

#endif
