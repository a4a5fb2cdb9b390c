/*
 * s3_access.h — access settings carried by writes: the ACL and owner of an
 * object being written (PutObject, CopyObject, CreateMultipartUpload) and
 * of a bucket being made (CreateBucket), from x-amz-acl, x-amz-grant-* and
 * x-amz-object-ownership, checked against what the bucket's Object
 * Ownership allows. The handlers of the ACL and ownership-controls
 * operations are in s3_access.c too (s3_handlers.h).
 *
 * Owns nothing beyond the caller's struct s3_obj_access. Decides no
 * request (s3_authz does, at the gate): this is what a write stores.
 *
 * Thread: the gateway loop.
 */
#ifndef GATEWAY_S3_ACCESS_H
#define GATEWAY_S3_ACCESS_H

#include <stdbool.h>

#include "gateway/s3_acl.h"
#include "gateway/s3_rq.h"

/* The access part of a record being written. Large (an ACL of 100 grants
 * and its record form): allocate it, or keep it in the request's state. */
struct s3_obj_access {
	bool present;               /* the request named an ACL */
	bool store;                 /* the record keeps one (else: private) */
	struct s3_acl acl;
	struct s3_acl_msg msg;      /* acl's record form */
	const char *owner;          /* the object's owner (rq's user or the bucket's owner) */
};

/* An object written by rq into the bucket the gate read (rq->bkt): the ACL
 * headers parsed (s3_acl_from_headers' errors), checked against the
 * bucket's Object Ownership — under BucketOwnerEnforced only none, or one
 * that comes to full control for the bucket owner alone (private,
 * bucket-owner-full-control, such grants; AccessControlListNotSupported
 * otherwise), and nothing is stored —, and
 * the owner chosen (s3_authz_object_owner). S3E_OK or the error. */
enum s3_err s3_access_for_object(struct s3_rq *rq, struct s3_obj_access *a);

/* The same with the ACL "headers" from hdr(ctx, …) instead of the
 * request's (a browser POST's form fields). */
enum s3_err s3_access_for_object_from(struct s3_rq *rq, struct s3_obj_access *a,
				      s3_acl_hdr_fn hdr, void *ctx);

/* Put a's owner and ACL into r (pointers into a and rq: valid while they
 * are). */
void s3_access_to_record(struct s3_obj_access *a, Iolake__Meta__ObjectRecord *r);

/* A bucket created by rq: its ACL (a, stored when given and not private)
 * and Object Ownership (*own: x-amz-object-ownership, else
 * BucketOwnerEnforced, as S3 since 2023). InvalidArgument for an unknown
 * ownership; InvalidBucketAclWithObjectOwnership for an ACL other than
 * private or bucket-owner-full-control with BucketOwnerEnforced. */
enum s3_err s3_access_for_bucket(struct s3_rq *rq, struct s3_obj_access *a,
				 Iolake__Meta__ObjectOwnership *own);

#endif
