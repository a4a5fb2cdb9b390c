/*
 * s3_post.h — PostObject: S3's browser-based upload (POST /bucket with a
 * multipart/form-data body: the fields, a signed policy, then the file),
 * as AWS documents it for Signature Version 4 (x-amz-algorithm,
 * x-amz-credential, x-amz-date, x-amz-signature over the base64 policy)
 * and Version 2 (AWSAccessKeyId, signature). See s3_post.c.
 *
 * Installed outside the gate (s3_ops_bind): who signs is in the body, so
 * the decision (s3:PutObject on the bucket, s3_rq_decide, as the gate
 * decides it) is taken when the fields are in and before any byte of the
 * file is stored.
 *
 * Thread: the gateway loop.
 */
#ifndef GATEWAY_S3_POST_H
#define GATEWAY_S3_POST_H

#include "gateway/s3_server.h"

void s3_post_object(struct s3_call *c);

#endif
