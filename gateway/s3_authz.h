/*
 * s3_authz.h — the one authorization decision: may this principal (a
 * user, an admin, or anonymous) do this S3 action on this bucket (and this
 * object)? Every request is decided here once, before its handler does
 * any work (s3_rq's gate, with the records it read; CopyObject's source
 * is the second question of a copy, asked here too).
 *
 * The rules, AWS's ("How Amazon S3 authorizes a request", IAM "Policy
 * evaluation logic", acl-overview's "Mapping of ACL permissions and
 * access policy permissions"), in order:
 *   1. An admin user (User.admin) may do everything.
 *   2. Actions without a resource: ListAllMyBuckets and CreateBucket, any
 *      user (not anonymous).
 *   3. The bucket owner may always Get/Put/DeleteBucketPolicy (AWS keeps
 *      the owner's root from locking itself out with a Deny).
 *   4. The bucket policy (authz_policy in s3_authz.c: s3_policy_eval on
 *      the principal, the action's AWS name, the key and the request's
 *      condition keys): an explicit Deny refuses, whatever else says yes,
 *      the owner included. A stored policy that no longer parses refuses
 *      (fail closed).
 *   5. An object action on a missing object: allowed (to learn NoSuchKey)
 *      only if s3:ListBucket on the bucket would be.
 *   6. A policy Allow allows — unless RestrictPublicBuckets is on, the
 *      policy is public and the caller is not the bucket owner. So does
 *      the caller's grant on the bucket (issue 16's per-user grants, an
 *      identity-based Allow as an IAM user policy: PublicAccessBlock does
 *      not limit it, an explicit Deny in 4 beats it). A grant counts only
 *      on the bucket it was given on (same name and created_ms). READ:
 *      ListBucket, ListBucketMultipartUploads, GetBucketLocation,
 *      GetObject, GetObjectAttributes, GetObjectTagging; WRITE: those and
 *      PutObject, DeleteObject, the upload steps, Put/DeleteObjectTagging;
 *      FULL: every action on the bucket and its objects (an action not
 *      named here, new ones included, needs FULL).
 *   7. Owner-only actions (GetBucketLocation, DeleteBucket, bucket tagging,
 *      ownership controls, policy, PublicAccessBlock, CORS, and the reads
 *      of configurations IOLake cannot set (s3_unset.c): the bucket owner;
 *      object tagging: the object owner).
 *   8. The ACL: a bucket's for bucket actions (READ: ListBucket,
 *      ListBucketMultipartUploads; WRITE: PutObject, DeleteObject and the
 *      upload steps; READ_ACP / WRITE_ACP: Get/PutBucketAcl), an object's
 *      for object actions (READ: GetObject, GetObjectAttributes;
 *      READ_ACP / WRITE_ACP: Get/PutObjectAcl). The owner of a resource
 *      always has READ_ACP and WRITE_ACP on it. IgnorePublicAcls: grants
 *      to AllUsers / AuthenticatedUsers give nothing.
 *   With ObjectOwnership BucketOwnerEnforced ACLs are disabled: they give
 *   nobody anything, the bucket owner owns every object in the bucket
 *   (whoever wrote it) and has every permission on the bucket and them.
 *
 * Owns the action table (S3_ACTIONS). Pure: no I/O; any thread.
 */
#ifndef GATEWAY_S3_AUTHZ_H
#define GATEWAY_S3_AUTHZ_H

#include <stdbool.h>
#include <stdint.h>

#include "gateway/s3_acl.h"
#include "gateway/s3_pab.h"

struct s3_policy;
struct s3_policy_kv;

/* What an action is decided on: nothing (the caller alone), the bucket
 * record, or the object record too (with the bucket's). */
enum s3_authz_res { S3_RES_NONE, S3_RES_BUCKET, S3_RES_OBJECT };

/* Who may: any user; the bucket's / object's owner; a bucket / object ACL
 * permission (with the owner's implicit READ_ACP and WRITE_ACP). */
enum s3_authz_rule { S3_RULE_USER, S3_RULE_BUCKET_OWNER, S3_RULE_OBJECT_OWNER,
		     S3_RULE_BUCKET_ACL, S3_RULE_OBJECT_ACL };

/*      action (s3:<name>)            resource       rule             ACL permission */
#define S3_ACTIONS(X)                                                                    \
	X(ListAllMyBuckets,            NONE,   USER,          0)                          \
	X(CreateBucket,                NONE,   USER,          0)                          \
	X(ListBucket,                  BUCKET, BUCKET_ACL,    S3_PERM_READ)               \
	X(ListBucketMultipartUploads,  BUCKET, BUCKET_ACL,    S3_PERM_READ)               \
	X(GetBucketLocation,           BUCKET, BUCKET_OWNER,  0)                          \
	X(DeleteBucket,                BUCKET, BUCKET_OWNER,  0)                          \
	X(GetBucketAcl,                BUCKET, BUCKET_ACL,    S3_PERM_READ_ACP)           \
	X(PutBucketAcl,                BUCKET, BUCKET_ACL,    S3_PERM_WRITE_ACP)          \
	X(GetBucketTagging,            BUCKET, BUCKET_OWNER,  0)                          \
	X(PutBucketTagging,            BUCKET, BUCKET_OWNER,  0)                          \
	X(GetBucketOwnershipControls,  BUCKET, BUCKET_OWNER,  0)                          \
	X(PutBucketOwnershipControls,  BUCKET, BUCKET_OWNER,  0)                          \
	X(GetBucketCORS,               BUCKET, BUCKET_OWNER,  0)                          \
	X(PutBucketCORS,               BUCKET, BUCKET_OWNER,  0)                          \
	X(GetLifecycleConfiguration,   BUCKET, BUCKET_OWNER,  0)                          \
	X(PutLifecycleConfiguration,   BUCKET, BUCKET_OWNER,  0)                          \
	X(GetEncryptionConfiguration,  BUCKET, BUCKET_OWNER,  0)                          \
	X(PutEncryptionConfiguration,  BUCKET, BUCKET_OWNER,  0)                          \
	X(PutObject,                   BUCKET, BUCKET_ACL,    S3_PERM_WRITE)              \
	X(DeleteObject,                BUCKET, BUCKET_ACL,    S3_PERM_WRITE)              \
	X(AbortMultipartUpload,        BUCKET, BUCKET_ACL,    S3_PERM_WRITE)              \
	X(ListMultipartUploadParts,    BUCKET, BUCKET_ACL,    S3_PERM_WRITE)              \
	X(GetObject,                   OBJECT, OBJECT_ACL,    S3_PERM_READ)               \
	X(GetObjectAttributes,         OBJECT, OBJECT_ACL,    S3_PERM_READ)               \
	X(GetObjectAcl,                OBJECT, OBJECT_ACL,    S3_PERM_READ_ACP)           \
	X(PutObjectAcl,                OBJECT, OBJECT_ACL,    S3_PERM_WRITE_ACP)          \
	X(GetObjectTagging,            OBJECT, OBJECT_OWNER,  0)                          \
	X(PutObjectTagging,            OBJECT, OBJECT_OWNER,  0)                          \
	X(DeleteObjectTagging,         OBJECT, OBJECT_OWNER,  0)                          \
	X(GetBucketPolicy,             BUCKET, BUCKET_OWNER,  0)                          \
	X(PutBucketPolicy,             BUCKET, BUCKET_OWNER,  0)                          \
	X(DeleteBucketPolicy,          BUCKET, BUCKET_OWNER,  0)                          \
	X(GetBucketPolicyStatus,       BUCKET, BUCKET_OWNER,  0)                          \
	X(GetBucketPublicAccessBlock,  BUCKET, BUCKET_OWNER,  0)                          \
	X(PutBucketPublicAccessBlock,  BUCKET, BUCKET_OWNER,  0)                          \
	X(GetBucketVersioning,         BUCKET, BUCKET_OWNER,  0)                          \
	X(PutBucketVersioning,         BUCKET, BUCKET_OWNER,  0)                          \
	X(ListBucketVersions,          BUCKET, BUCKET_ACL,    S3_PERM_READ)               \
	X(GetBucketObjectLockConfiguration, BUCKET, BUCKET_OWNER, 0)                      \
	X(PutBucketObjectLockConfiguration, BUCKET, BUCKET_OWNER, 0)                      \
	X(GetObjectRetention,          BUCKET, BUCKET_OWNER,  0)                          \
	X(PutObjectRetention,          BUCKET, BUCKET_OWNER,  0)                          \
	X(GetObjectLegalHold,          BUCKET, BUCKET_OWNER,  0)                          \
	X(PutObjectLegalHold,          BUCKET, BUCKET_OWNER,  0)                          \
	X(BypassGovernanceRetention,   BUCKET, BUCKET_OWNER,  0)                          \
	X(GetAccelerateConfiguration,  BUCKET, BUCKET_OWNER,  0)                          \
	X(GetBucketRequestPayment,     BUCKET, BUCKET_OWNER,  0)                          \
	X(GetBucketLogging,            BUCKET, BUCKET_OWNER,  0)                          \
	X(GetBucketNotification,       BUCKET, BUCKET_OWNER,  0)                          \
	X(GetBucketWebsite,            BUCKET, BUCKET_OWNER,  0)                          \
	X(DeleteBucketWebsite,         BUCKET, BUCKET_OWNER,  0)                          \
	X(GetReplicationConfiguration, BUCKET, BUCKET_OWNER,  0)                          \
	X(PutReplicationConfiguration, BUCKET, BUCKET_OWNER,  0)

enum s3_authz_action {
	S3_ACT_NONE = 0,
#define S3_ACT_ENUM(name, res, rule, perm) S3_ACT_##name,
	S3_ACTIONS(S3_ACT_ENUM)
#undef S3_ACT_ENUM
	S3_ACT__COUNT
};

/* "s3:GetObject"; "s3:None" out of range. */
const char *s3_action_name(enum s3_authz_action a);
enum s3_authz_res s3_action_res(enum s3_authz_action a);

enum s3_ownership { S3_OWN_UNSET = 0, S3_OWN_ENFORCED, S3_OWN_PREFERRED, S3_OWN_WRITER };

/* A bucket or object as the decision sees it (from its record). */
struct s3_authz_rec {
	const char *owner;           /* user name */
	const struct s3_acl *acl;    /* as stored (canned or grants); NULL: private */
};

struct s3_authz_req {
	const struct s3_principal *who;
	enum s3_authz_action action;
	const char *bucket_name;     /* for the policy hook */
	const char *key;             /* ditto; NULL for bucket actions (the object
	                              * actions decided on the bucket, PutObject,
	                              * DeleteObject, the upload steps, have one) */
	struct s3_authz_rec bucket;  /* S3_RES_BUCKET and OBJECT */
	uint64_t bucket_created_ms;  /* the bucket record's (binds who's grants) */
	enum s3_ownership ownership;
	const struct s3_authz_rec *object;   /* S3_RES_OBJECT; NULL: no such object */
	/* The bucket's policy (s3_policy_cache) and PublicAccessBlock. */
	const struct s3_policy *policy;      /* NULL: none (or broken) */
	bool policy_public;                  /* s3_policy_is_public(policy) */
	bool policy_broken;                  /* stored but unparseable: fail closed */
	struct s3_pab pab;
	const struct s3_policy_kv *ctx;      /* the request's condition keys */
	size_t n_ctx;
};

enum s3_verdict { S3_DENY = 0, S3_ALLOW = 1 };

/* The decision. For an S3_RES_OBJECT action on a missing object
 * (object NULL) the answer is whether the caller may learn that it is
 * missing (s3:ListBucket on the bucket, as S3: NoSuchKey when allowed,
 * AccessDenied otherwise). */
enum s3_verdict s3_authz_decide(const struct s3_authz_req *q);

/* The grant level action needs (S3_GRANT_FULL for any not named in
 * rule 6). */
enum s3_grant_level s3_authz_grant_needed(enum s3_authz_action a);

/* The owner an object written now by who into a bucket owned by
 * bucket_owner gets: the bucket owner under BucketOwnerEnforced, and
 * under BucketOwnerPreferred when the writer's ACL is the canned
 * bucket-owner-full-control; else the writer. */
const char *s3_authz_object_owner(enum s3_ownership own, const char *bucket_owner,
				  const char *writer, enum s3_canned canned);

#endif
