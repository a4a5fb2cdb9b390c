/*
 * s3_policy.h — the bucket policy engine: parse and validate a bucket
 * policy document as S3's PutBucketPolicy does, evaluate it for one
 * request, and say whether it is public.
 *
 * Owns: AWS's access policy language as S3 bucket policies use it
 * (grammar, MalformedPolicy messages, wildcard and condition semantics,
 * the "is public" rule) and the table of S3 action names. Does NOT own:
 * who the requester is (authentication), whether a named user exists,
 * bucket ownership, ACLs, PublicAccessBlock, where the policy is stored,
 * or HTTP. The S3 layer gathers the request facts into s3_policy_req and
 * combines the verdict with the owner, ACL and PublicAccessBlock checks
 * (docs/architecture.md, "Bucket policies", says how and in what order).
 *
 * Threads: pure and reentrant. A parsed policy is immutable and may be
 * evaluated from any thread at once; parse and eval do no I/O and keep
 * no global state.
 *
 * ---------------------------------------------------------------------
 * Grammar (AWS IAM JSON policy reference, "Grammar of the IAM JSON
 * policy language"), as S3 accepts it on a bucket:
 *
 *   { "Version": "2012-10-17" | "2008-10-17",        optional; 2008 if absent
 *     "Id": string,                                   optional
 *     "Statement": statement | [statement, ...] }     required, not empty
 *   statement = { "Sid": string,                      optional, unique
 *     "Effect": "Allow" | "Deny",                     required
 *     "Principal" | "NotPrincipal": principal,        exactly one
 *     "Action" | "NotAction": string | [string],      exactly one
 *     "Resource" | "NotResource": string | [string],  exactly one
 *     "Condition": { operator: { key: value | [value, ...] } } }
 *
 * Principals. IOLake has no AWS accounts: a user is its own account; its
 * canonical ID is what ACLs show as Owner ID (s3_acl.h: 64 hex digits).
 * The mapping:
 *   "*", {"AWS": "*"}                   everyone, anonymous requests too
 *   {"AWS": "alice"}                    the IOLake user "alice"
 *   {"AWS": "arn:aws:iam::<any>:user/[path/]alice"}   the user "alice"
 *   {"CanonicalUser": "<64 hex>"}       the user whose canonical id it is
 *                                       (req.principal_id)
 *   {"CanonicalUser": "alice"}          the user "alice"
 *   {"AWS": "arn:aws:iam::<any>:root"}, {"AWS": "<12 digits>"}
 *                                       the bucket owner's "account", i.e.
 *                                       the bucket owner only. Deliberately
 *                                       NOT every authenticated user: a
 *                                       policy copied from AWS that names
 *                                       the owner's account must not open
 *                                       the bucket to the whole cluster
 *                                       (ACLs' AuthenticatedUsers does that).
 *   {"Service": "..."}                  accepted, never matches (IOLake has
 *                                       no service principals)
 *   anything else (roles, Federated, wildcards inside an ARN)
 *                                       "Invalid principal in policy"
 * The engine does not know which users exist: s3_policy_users() lists
 * the named ones so the S3 layer can refuse unknown names as AWS does.
 *
 * Actions: "*", or "s3:<Name>" with * and ? wildcards, matched without
 * regard to case; each must match at least one of AWS's S3 actions
 * (s3_policy_action_valid), else "Policy has invalid action".
 * Resources: "arn:aws:s3:::<bucket>" and "arn:aws:s3:::<bucket>/<key
 * pattern>", * and ? wildcards, case-sensitive; each must be able to name
 * this bucket or an object in it, else "Policy has invalid resource"; an
 * action that applies to none of the statement's resources is "Action
 * does not apply to any resource(s) in statement".
 * Conditions: String{,Not}Equals{,IgnoreCase}, String{,Not}Like,
 * Numeric{,Not}Equals, Numeric{LessThan,GreaterThan}{,Equals}, the same
 * for Date, Bool, BinaryEquals, IpAddress, NotIpAddress (IPv4 and IPv6
 * CIDR), Arn{,Not}{Equals,Like}, Null; the IfExists suffix on all but
 * Null; the ForAnyValue: and ForAllValues: prefixes. Keys are checked
 * against AWS's global and S3 condition keys ("Policy has an invalid
 * condition key") and evaluated generically from the request's key list.
 * Policy variables (${aws:username}, ${key, 'default'}, ${*}, ${?}, ${$})
 * in Resource and String* values with Version 2012-10-17.
 *
 * Not supported (refused or inert, see docs/architecture.md): roles,
 * federated and service principals (never match), access points,
 * condition keys IOLake never fills (VPC, organizations: the condition is
 * simply false), Unicode case folding (IgnoreCase folds ASCII only).
 * Stricter than AWS on one point: a document with a repeated key in any
 * object is refused ("Invalid policy syntax.") instead of keeping one.
 */
#ifndef GATEWAY_S3_POLICY_H
#define GATEWAY_S3_POLICY_H

#include <stdbool.h>
#include <stddef.h>

/* AWS: "Bucket policies are limited to 20 KB in size" (S3 User Guide,
 * "Bucket policies"). AWS measures a normalized document; we count the
 * bytes outside insignificant whitespace, so indentation is free. */
#define S3_POLICY_MAX_BYTES 20480
/* The raw body we parse at all (whitespace included): the S3 layer reads
 * at most this much of a PutBucketPolicy body. */
#define S3_POLICY_MAX_INPUT_BYTES (128 * 1024)

struct s3_policy;

/* Parses and validates a bucket policy for bucket `bucket` (a valid S3
 * bucket name, NUL-terminated). json[0..len) need not be NUL-terminated.
 * Returns 0 with *out set (free with s3_policy_free), or:
 *   -EBADMSG  malformed: S3's MalformedPolicy, err holds its message:
 *             "Policies must be valid JSON and the first byte must be '{'",
 *             "This policy contains invalid Json", "Invalid policy syntax.",
 *             "The policy must contain a valid version string",
 *             "Missing required field Statement|Effect|Principal|Action|Resource",
 *             "Could not parse the policy: Statement is empty!",
 *             "Statement IDs (SID) in a single policy must be unique.",
 *             "Invalid effect: <value>", "Invalid principal in policy",
 *             "Policy has invalid action", "Policy has invalid resource",
 *             "Action does not apply to any resource(s) in statement",
 *             "Invalid Condition type : <operator>",
 *             "Policy has an invalid condition key", "Conditions do not
 *             apply to combination of actions and resources in statement"
 *   -E2BIG    over S3_POLICY_MAX_BYTES (compact) or
 *             S3_POLICY_MAX_INPUT_BYTES (raw); err says so
 *   -ENOMEM
 * err (errlen bytes, may be NULL/0) always gets a NUL-terminated text on
 * failure; on success it is left untouched. */
int s3_policy_parse(const char *json, size_t len, const char *bucket, struct s3_policy **out,
		    char *err, size_t errlen);

void s3_policy_free(struct s3_policy *p);

/* One condition key of the request and its values. Single-valued keys
 * have n = 1; a key with n = 0 counts as absent. Values are strings as
 * AWS's request context has them: "true"/"false", decimal numbers,
 * ISO 8601 dates or epoch seconds, IP addresses. */
struct s3_policy_kv {
	const char *key;                /* matched without regard to case */
	const char *const *vals;
	size_t n;
};

struct s3_policy_req {
	const char *principal;          /* authenticated user name; NULL: anonymous */
	bool is_bucket_owner;           /* principal owns the bucket */
	const char *action;             /* an S3 action name, e.g. "s3:GetObject" */
	const char *key;                /* object key; NULL for a bucket-level action */
	const struct s3_policy_kv *ctx; /* the request's condition keys */
	size_t n_ctx;
	const char *principal_id;       /* the principal's canonical id, 64 hex digits
	                                 * (s3_acl_user_id_hex); NULL: not given. Last,
	                                 * so positional initializers stay valid */
};

enum s3_policy_verdict {
	S3_POLICY_NONE,         /* no statement applies: fall back to owner/ACLs */
	S3_POLICY_ALLOW,        /* an Allow statement applies and no Deny does */
	S3_POLICY_DENY,         /* an explicit Deny applies: it wins over everything */
};

/* Evaluates p for r, as AWS does for a bucket policy: any applicable Deny
 * gives DENY; otherwise any applicable Allow gives ALLOW; otherwise NONE.
 * A statement applies when its principal, action, resource and every
 * condition match. */
enum s3_policy_verdict s3_policy_eval(const struct s3_policy *p, const struct s3_policy_req *r);

/* AWS's "public" (S3 User Guide, "The meaning of public"; the SDKs'
 * PublicAccessBlockConfiguration): true when some Allow statement grants
 * to everyone ("*" or a NotPrincipal) without a condition that pins a
 * fixed value (no wildcard, no policy variable) of aws:SourceIp (a CIDR
 * no broader than /8 for IPv4, /32 for IPv6), aws:SourceArn,
 * aws:SourceVpc, aws:SourceVpce, aws:SourceOwner, aws:SourceAccount,
 * aws:userid, aws:PrincipalOrgID, aws:PrincipalAccount, aws:PrincipalArn,
 * s3:DataAccessPointArn, s3:DataAccessPointAccount or
 * s3:x-amz-server-side-encryption-aws-kms-key-id. For
 * GetBucketPolicyStatus, BlockPublicPolicy and RestrictPublicBuckets. */
bool s3_policy_is_public(const struct s3_policy *p);

/* Calls cb for every user the policy names (each distinct name once, in
 * document order); stops at and returns cb's first non-zero return. The
 * S3 layer refuses a policy naming an unknown user with MalformedPolicy
 * "Invalid principal in policy", as AWS does. */
int s3_policy_users(const struct s3_policy *p, int (*cb)(const char *user, void *arg), void *arg);

/* Does the policy use condition key `key` (in a Condition, or as a
 * ${variable})? A key ending in '/' is a prefix: "s3:ExistingObjectTag/"
 * asks about any object tag. Names compare as in evaluation. Lets the S3
 * layer skip gathering costly keys (an object's tags) no statement reads. */
bool s3_policy_mentions_key(const struct s3_policy *p, const char *key);

/* The document's Version: "2012-10-17" or "2008-10-17". */
const char *s3_policy_version(const struct s3_policy *p);

/* True when name (no wildcards) is one of AWS's S3 action names,
 * ignoring case: "s3:GetObject", "S3:getobject". */
bool s3_policy_action_valid(const char *name);

/* ---------------------------------------------------------------------
 * The S3 actions IOLake's operations map to (AWS Service Authorization
 * Reference, "API operations defined by Amazon S3"). The S3 layer passes
 * S3_ACT(...) as s3_policy_req.action:
 *   GetObject, HeadObject                      GET_OBJECT (+ GET_OBJECT_VERSION with versionId)
 *   PutObject, CreateMultipartUpload, UploadPart,
 *   CompleteMultipartUpload                    PUT_OBJECT
 *   CopyObject, UploadPartCopy                 GET_OBJECT on the source, PUT_OBJECT on the target
 *   DeleteObject, each key of DeleteObjects    DELETE_OBJECT
 *   ListObjects(V2), HeadBucket                LIST_BUCKET
 *   DeleteBucketTagging                        PUT_BUCKET_TAGGING
 *   DeletePublicAccessBlock                    PUT_BUCKET_PUBLIC_ACCESS_BLOCK
 *   DeleteBucketOwnershipControls              PUT_BUCKET_OWNERSHIP_CONTROLS
 *   everything else                            the action of the same name
 * ---------------------------------------------------------------------
 *        name                            action string                 */
#define S3_POLICY_ACTIONS(X)                                                      \
	X(GET_OBJECT,                     "s3:GetObject")                         \
	X(GET_OBJECT_VERSION,             "s3:GetObjectVersion")                  \
	X(PUT_OBJECT,                     "s3:PutObject")                         \
	X(DELETE_OBJECT,                  "s3:DeleteObject")                      \
	X(DELETE_OBJECT_VERSION,          "s3:DeleteObjectVersion")               \
	X(GET_OBJECT_ACL,                 "s3:GetObjectAcl")                      \
	X(PUT_OBJECT_ACL,                 "s3:PutObjectAcl")                      \
	X(GET_OBJECT_TAGGING,             "s3:GetObjectTagging")                  \
	X(PUT_OBJECT_TAGGING,             "s3:PutObjectTagging")                  \
	X(DELETE_OBJECT_TAGGING,          "s3:DeleteObjectTagging")               \
	X(GET_OBJECT_ATTRIBUTES,          "s3:GetObjectAttributes")               \
	X(RESTORE_OBJECT,                 "s3:RestoreObject")                     \
	X(ABORT_MULTIPART_UPLOAD,         "s3:AbortMultipartUpload")              \
	X(LIST_MULTIPART_UPLOAD_PARTS,    "s3:ListMultipartUploadParts")          \
	X(LIST_BUCKET,                    "s3:ListBucket")                        \
	X(LIST_BUCKET_VERSIONS,           "s3:ListBucketVersions")                \
	X(LIST_BUCKET_MULTIPART_UPLOADS,  "s3:ListBucketMultipartUploads")        \
	X(LIST_ALL_MY_BUCKETS,            "s3:ListAllMyBuckets")                  \
	X(CREATE_BUCKET,                  "s3:CreateBucket")                      \
	X(DELETE_BUCKET,                  "s3:DeleteBucket")                      \
	X(GET_BUCKET_LOCATION,            "s3:GetBucketLocation")                 \
	X(GET_BUCKET_VERSIONING,          "s3:GetBucketVersioning")               \
	X(GET_BUCKET_ACL,                 "s3:GetBucketAcl")                      \
	X(PUT_BUCKET_ACL,                 "s3:PutBucketAcl")                      \
	X(GET_BUCKET_POLICY,              "s3:GetBucketPolicy")                   \
	X(PUT_BUCKET_POLICY,              "s3:PutBucketPolicy")                   \
	X(DELETE_BUCKET_POLICY,           "s3:DeleteBucketPolicy")                \
	X(GET_BUCKET_POLICY_STATUS,       "s3:GetBucketPolicyStatus")             \
	X(GET_BUCKET_TAGGING,             "s3:GetBucketTagging")                  \
	X(PUT_BUCKET_TAGGING,             "s3:PutBucketTagging")                  \
	X(GET_BUCKET_PUBLIC_ACCESS_BLOCK, "s3:GetBucketPublicAccessBlock")        \
	X(PUT_BUCKET_PUBLIC_ACCESS_BLOCK, "s3:PutBucketPublicAccessBlock")        \
	X(GET_BUCKET_OWNERSHIP_CONTROLS,  "s3:GetBucketOwnershipControls")        \
	X(PUT_BUCKET_OWNERSHIP_CONTROLS,  "s3:PutBucketOwnershipControls")

enum s3_action {
#define S3_ACTION_ENUM(name, str) S3_ACTION_##name,
	S3_POLICY_ACTIONS(S3_ACTION_ENUM)
#undef S3_ACTION_ENUM
	S3_ACTION__COUNT
};

/* "s3:GetObject" for S3_ACTION_GET_OBJECT; NULL out of range. */
const char *s3_policy_action_name(enum s3_action a);

/* ---------------------------------------------------------------------
 * Condition keys the S3 layer fills (any other key is simply absent).
 * Values in AWS's formats (IAM User Guide, "AWS global condition context
 * keys"; Service Authorization Reference, "Condition keys for Amazon S3").
 * ------------------------------------------------------------------- */
#define S3_POLICY_KEY_SOURCE_IP       "aws:SourceIp"        /* client address, "192.0.2.1" or "2001:db8::1" */
#define S3_POLICY_KEY_SECURE_TRANSPORT "aws:SecureTransport" /* "true" over TLS, else "false" */
#define S3_POLICY_KEY_CURRENT_TIME    "aws:CurrentTime"     /* "2024-05-01T12:00:00Z" */
#define S3_POLICY_KEY_EPOCH_TIME      "aws:EpochTime"       /* "1714564800" */
#define S3_POLICY_KEY_USERNAME        "aws:username"        /* authenticated user; absent when anonymous */
#define S3_POLICY_KEY_USERID          "aws:userid"          /* same (IOLake's user id is its name) */
#define S3_POLICY_KEY_PRINCIPAL_TYPE  "aws:PrincipalType"   /* "User" or "Anonymous" */
#define S3_POLICY_KEY_REFERER         "aws:Referer"         /* Referer header, if sent */
#define S3_POLICY_KEY_USER_AGENT      "aws:UserAgent"       /* User-Agent header, if sent */
#define S3_POLICY_KEY_PREFIX          "s3:prefix"           /* ListObjects prefix (present, maybe "", when sent) */
#define S3_POLICY_KEY_DELIMITER       "s3:delimiter"        /* ListObjects delimiter, when sent */
#define S3_POLICY_KEY_MAX_KEYS        "s3:max-keys"         /* ListObjects max-keys, when sent */
#define S3_POLICY_KEY_X_AMZ_ACL       "s3:x-amz-acl"        /* canned ACL header of PUT / PutObjectAcl / PutBucketAcl */
#define S3_POLICY_KEY_SSE             "s3:x-amz-server-side-encryption"  /* header, when sent */
#define S3_POLICY_KEY_CONTENT_SHA256  "s3:x-amz-content-sha256"  /* "UNSIGNED-PAYLOAD", "STREAMING-...", or the hex digest */
#define S3_POLICY_KEY_SIGNATURE_VERSION "s3:signatureversion" /* "AWS4-HMAC-SHA256" for authenticated requests */
#define S3_POLICY_KEY_AUTH_TYPE       "s3:authType"         /* "REST-HEADER" or "REST-QUERY-STRING" */
#define S3_POLICY_KEY_SIGNATURE_AGE   "s3:signatureAge"     /* ms since the signature's date */
#define S3_POLICY_KEY_TLS_VERSION     "s3:TlsVersion"       /* "1.2", "1.3" over TLS */
#define S3_POLICY_KEY_EXISTING_TAG    "s3:ExistingObjectTag/" /* + tag key: the object's tag value */
#define S3_POLICY_KEY_REQUEST_TAG_KEYS "s3:RequestObjectTagKeys" /* multi-valued: tag keys of a PUT / PutObjectTagging */
#define S3_POLICY_KEY_REQUEST_TAG     "s3:RequestObjectTag/"  /* + tag key: its value in the request */
#define S3_POLICY_KEY_VERSION_ID      "s3:VersionId"        /* versionId query parameter, when sent */
#define S3_POLICY_KEY_COPY_SOURCE     "s3:x-amz-copy-source" /* CopyObject's source, when sent */
#define S3_POLICY_KEY_METADATA_DIRECTIVE "s3:x-amz-metadata-directive"
#define S3_POLICY_KEY_STORAGE_CLASS   "s3:x-amz-storage-class"
#define S3_POLICY_KEY_LOCK_MODE       "s3:object-lock-mode"
#define S3_POLICY_KEY_LOCK_RETAIN_UNTIL "s3:object-lock-retain-until-date"
#define S3_POLICY_KEY_LOCK_REMAINING  "s3:object-lock-remaining-retention-days"
#define S3_POLICY_KEY_LOCK_LEGAL_HOLD "s3:object-lock-legal-hold"

#endif
