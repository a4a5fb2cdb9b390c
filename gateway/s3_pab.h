/*
 * s3_pab.h — S3 PublicAccessBlock as values: the four settings of a
 * bucket, their record form (meta.proto PublicAccessBlock), the
 * PublicAccessBlockConfiguration document both ways, and "is this ACL
 * public" (S3 User Guide, "Blocking public access to your Amazon S3
 * storage", "The meaning of public": an ACL is public when it grants
 * anything to AllUsers or AuthenticatedUsers).
 *
 * What each setting does, and where it is enforced:
 *   BlockPublicAcls        PutBucketAcl / PutObjectAcl with a public ACL,
 *                          PutObject / CreateMultipartUpload / CopyObject
 *                          with a public ACL: AccessDenied (s3_access).
 *   IgnorePublicAcls       grants to AllUsers / AuthenticatedUsers give
 *                          nothing (s3_authz's ACL step).
 *   BlockPublicPolicy      PutBucketPolicy with a public policy:
 *                          AccessDenied (s3_bucket_policy).
 *   RestrictPublicBuckets  a public policy grants nothing to anyone but
 *                          the bucket owner (s3_authz's policy step).
 * Only the bucket level exists: IOLake has one account, so there is no
 * account-level configuration to combine with.
 *
 * Owns nothing: values in caller storage. Pure: no I/O; any thread.
 */
#ifndef GATEWAY_S3_PAB_H
#define GATEWAY_S3_PAB_H

#include <stdbool.h>
#include <stddef.h>

#include "gateway/s3_acl.h"
#include "gateway/xml.h"
#include "proto/meta.pb-c.h"

#define S3_PAB_XML_MAX 1024   /* a PublicAccessBlockConfiguration body */

struct s3_pab {
	bool block_public_acls;
	bool ignore_public_acls;
	bool block_public_policy;
	bool restrict_public_buckets;
};

/* The bucket's settings (m NULL: none, all false). */
void s3_pab_from_msg(const Iolake__Meta__PublicAccessBlock *m, struct s3_pab *out);

/* The record form of p, in caller storage. */
void s3_pab_to_msg(const struct s3_pab *p, Iolake__Meta__PublicAccessBlock *out);

/* <PublicAccessBlockConfiguration><BlockPublicAcls>true</BlockPublicAcls>
 * ...</PublicAccessBlockConfiguration>: an element left out is false (as
 * S3). Returns S3E_OK, MalformedXML (not well-formed, wrong root, a
 * value other than true/false, an element twice), or
 * MaxMessageLengthExceeded (len over S3_PAB_XML_MAX). */
enum s3_err s3_pab_from_xml(const char *body, size_t len, struct s3_pab *out);

/* The GetPublicAccessBlock document (declaration and namespace). */
void s3_pab_render(struct xml_w *w, const struct s3_pab *p);

/* The ACL (as stored: canned or grants) grants something to AllUsers or
 * AuthenticatedUsers. */
bool s3_pab_acl_is_public(const struct s3_acl *a);

/* An ACL with the public grants (AllUsers, AuthenticatedUsers) dropped,
 * for IgnorePublicAcls: expanded in place. */
void s3_pab_drop_public(struct s3_acl *expanded);

#endif
