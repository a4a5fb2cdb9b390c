/*
 * s3_policy_tab.c — AWS's tables for the bucket policy engine: S3 action
 * names with the resource type each applies to, condition operators, and
 * condition keys. Data only; see s3_policy.h.
 *
 * Sources: AWS Service Authorization Reference, "Actions, resources, and
 * condition keys for Amazon S3" (actions and their resource types, S3
 * condition keys); IAM User Guide, "IAM JSON policy elements: Condition
 * operators" and "AWS global condition context keys". Actions of other
 * resource types (account, access point, job, Storage Lens...) are valid
 * names but apply to no bucket or object ARN, so a bucket policy naming
 * only them fails with "Action does not apply to any resource(s) in
 * statement", as on AWS.
 */
#include <string.h>
#include <strings.h>

#include "gateway/s3_policy_int.h"

#define O ACT_OBJECT
#define B ACT_BUCKET
#define A ACT_OTHER

const struct act_info s3p_actions[] = {
	/* Object resource (arn:aws:s3:::bucket/key) */
	{ "AbortMultipartUpload", O },
	{ "BypassGovernanceRetention", O },
	{ "DeleteObject", O },
	{ "DeleteObjectTagging", O },
	{ "DeleteObjectVersion", O },
	{ "DeleteObjectVersionTagging", O },
	{ "GetObject", O },
	{ "GetObjectAcl", O },
	{ "GetObjectAttributes", O },
	{ "GetObjectLegalHold", O },
	{ "GetObjectRetention", O },
	{ "GetObjectTagging", O },
	{ "GetObjectTorrent", O },
	{ "GetObjectVersion", O },
	{ "GetObjectVersionAcl", O },
	{ "GetObjectVersionAttributes", O },
	{ "GetObjectVersionForReplication", O },
	{ "GetObjectVersionTagging", O },
	{ "GetObjectVersionTorrent", O },
	{ "InitiateReplication", O },
	{ "ListMultipartUploadParts", O },
	{ "ObjectOwnerOverrideToBucketOwner", O },
	{ "PutObject", O },
	{ "PutObjectAcl", O },
	{ "PutObjectLegalHold", O },
	{ "PutObjectRetention", O },
	{ "PutObjectTagging", O },
	{ "PutObjectVersionAcl", O },
	{ "PutObjectVersionTagging", O },
	{ "ReplicateDelete", O },
	{ "ReplicateObject", O },
	{ "ReplicateTags", O },
	{ "RestoreObject", O },
	/* Bucket resource (arn:aws:s3:::bucket) */
	{ "CreateBucket", B },
	{ "CreateBucketMetadataTableConfiguration", B },
	{ "DeleteBucket", B },
	{ "DeleteBucketMetadataTableConfiguration", B },
	{ "DeleteBucketPolicy", B },
	{ "DeleteBucketWebsite", B },
	{ "GetAccelerateConfiguration", B },
	{ "GetAnalyticsConfiguration", B },
	{ "GetBucketAcl", B },
	{ "GetBucketCORS", B },
	{ "GetBucketLocation", B },
	{ "GetBucketLogging", B },
	{ "GetBucketMetadataTableConfiguration", B },
	{ "GetBucketNotification", B },
	{ "GetBucketObjectLockConfiguration", B },
	{ "GetBucketOwnershipControls", B },
	{ "GetBucketPolicy", B },
	{ "GetBucketPolicyStatus", B },
	{ "GetBucketPublicAccessBlock", B },
	{ "GetBucketRequestPayment", B },
	{ "GetBucketTagging", B },
	{ "GetBucketVersioning", B },
	{ "GetBucketWebsite", B },
	{ "GetEncryptionConfiguration", B },
	{ "GetIntelligentTieringConfiguration", B },
	{ "GetInventoryConfiguration", B },
	{ "GetLifecycleConfiguration", B },
	{ "GetMetricsConfiguration", B },
	{ "GetReplicationConfiguration", B },
	{ "ListBucket", B },
	{ "ListBucketMultipartUploads", B },
	{ "ListBucketVersions", B },
	{ "PutAccelerateConfiguration", B },
	{ "PutAnalyticsConfiguration", B },
	{ "PutBucketAcl", B },
	{ "PutBucketCORS", B },
	{ "PutBucketLogging", B },
	{ "PutBucketNotification", B },
	{ "PutBucketObjectLockConfiguration", B },
	{ "PutBucketOwnershipControls", B },
	{ "PutBucketPolicy", B },
	{ "PutBucketPublicAccessBlock", B },
	{ "PutBucketRequestPayment", B },
	{ "PutBucketTagging", B },
	{ "PutBucketVersioning", B },
	{ "PutBucketWebsite", B },
	{ "PutEncryptionConfiguration", B },
	{ "PutIntelligentTieringConfiguration", B },
	{ "PutInventoryConfiguration", B },
	{ "PutLifecycleConfiguration", B },
	{ "PutMetricsConfiguration", B },
	{ "PutReplicationConfiguration", B },
	/* Account, access point, batch job and Storage Lens resources */
	{ "CreateAccessPoint", A },
	{ "CreateJob", A },
	{ "DeleteAccessPoint", A },
	{ "DeleteAccessPointPolicy", A },
	{ "DeleteStorageLensConfiguration", A },
	{ "DescribeJob", A },
	{ "GetAccessPoint", A },
	{ "GetAccessPointPolicy", A },
	{ "GetAccessPointPolicyStatus", A },
	{ "GetAccountPublicAccessBlock", A },
	{ "GetStorageLensConfiguration", A },
	{ "GetStorageLensDashboard", A },
	{ "ListAccessPoints", A },
	{ "ListAllMyBuckets", A },
	{ "ListJobs", A },
	{ "ListStorageLensConfigurations", A },
	{ "PutAccessPointPolicy", A },
	{ "PutAccountPublicAccessBlock", A },
	{ "PutStorageLensConfiguration", A },
	{ "UpdateJobPriority", A },
	{ "UpdateJobStatus", A },
};

const size_t s3p_n_actions = sizeof(s3p_actions) / sizeof(s3p_actions[0]);

#undef O
#undef B
#undef A

bool s3_policy_action_valid(const char *name)
{
	if (strncasecmp(name, "s3:", 3) != 0)
		return false;
	for (size_t i = 0; i < s3p_n_actions; i++)
		if (strcasecmp(name + 3, s3p_actions[i].name) == 0)
			return true;
	return false;
}

static const char *const action_names[] = {
#define S3_ACTION_NAME(name, str) str,
	S3_POLICY_ACTIONS(S3_ACTION_NAME)
#undef S3_ACTION_NAME
};

const char *s3_policy_action_name(enum s3_action a)
{
	return (unsigned)a < S3_ACTION__COUNT ? action_names[a] : NULL;
}

/* ---------------------------------------------------------------- operators */

static const struct {
	const char *name;
	uint8_t base;
	bool negate;
} operators[] = {
	{ "StringEquals", COP_STR_EQ, false },
	{ "StringNotEquals", COP_STR_EQ, true },
	{ "StringEqualsIgnoreCase", COP_STR_EQ_IC, false },
	{ "StringNotEqualsIgnoreCase", COP_STR_EQ_IC, true },
	{ "StringLike", COP_STR_LIKE, false },
	{ "StringNotLike", COP_STR_LIKE, true },
	{ "NumericEquals", COP_NUM_EQ, false },
	{ "NumericNotEquals", COP_NUM_EQ, true },
	{ "NumericLessThan", COP_NUM_LT, false },
	{ "NumericLessThanEquals", COP_NUM_LE, false },
	{ "NumericGreaterThan", COP_NUM_GT, false },
	{ "NumericGreaterThanEquals", COP_NUM_GE, false },
	{ "DateEquals", COP_DATE_EQ, false },
	{ "DateNotEquals", COP_DATE_EQ, true },
	{ "DateLessThan", COP_DATE_LT, false },
	{ "DateLessThanEquals", COP_DATE_LE, false },
	{ "DateGreaterThan", COP_DATE_GT, false },
	{ "DateGreaterThanEquals", COP_DATE_GE, false },
	{ "Bool", COP_BOOL, false },
	{ "BinaryEquals", COP_BIN_EQ, false },
	{ "IpAddress", COP_IP, false },
	{ "NotIpAddress", COP_IP, true },
	{ "ArnEquals", COP_ARN_LIKE, false },
	{ "ArnNotEquals", COP_ARN_LIKE, true },
	{ "ArnLike", COP_ARN_LIKE, false },
	{ "ArnNotLike", COP_ARN_LIKE, true },
	{ "Null", COP_NULL, false },
};

int s3p_operator(const char *name, size_t len, enum cond_base *base, bool *negate)
{
	for (size_t i = 0; i < sizeof(operators) / sizeof(operators[0]); i++) {
		if (strlen(operators[i].name) == len && strncasecmp(name, operators[i].name, len) == 0) {
			*base = operators[i].base;
			*negate = operators[i].negate;
			return 0;
		}
	}
	return -1;
}

/* ---------------------------------------------------------------- keys */

static const char LIST_ONLY[] = "ListBucket\0ListBucketVersions\0";
static const char ACL_ONLY[] = "PutObject\0PutObjectAcl\0PutObjectVersionAcl\0PutBucketAcl\0CreateBucket\0";
static const char VERSION_ONLY[] =
	"GetObjectVersion\0GetObjectVersionAcl\0GetObjectVersionAttributes\0"
	"GetObjectVersionTagging\0GetObjectVersionTorrent\0DeleteObjectVersion\0"
	"DeleteObjectVersionTagging\0PutObjectVersionAcl\0PutObjectVersionTagging\0";

static const struct {
	const char *name;       /* ends in '/': a prefix, the rest is a tag key */
	const char *only;       /* the actions AWS accepts the key with, or NULL: any */
} keys[] = {
	/* Global keys (IAM User Guide, "AWS global condition context keys"). */
	{ "aws:CalledVia", NULL },
	{ "aws:CalledViaFirst", NULL },
	{ "aws:CalledViaLast", NULL },
	{ "aws:CurrentTime", NULL },
	{ "aws:EpochTime", NULL },
	{ "aws:FederatedProvider", NULL },
	{ "aws:MultiFactorAuthAge", NULL },
	{ "aws:MultiFactorAuthPresent", NULL },
	{ "aws:PrincipalAccount", NULL },
	{ "aws:PrincipalArn", NULL },
	{ "aws:PrincipalIsAWSService", NULL },
	{ "aws:PrincipalOrgID", NULL },
	{ "aws:PrincipalOrgPaths", NULL },
	{ "aws:PrincipalServiceName", NULL },
	{ "aws:PrincipalServiceNamesList", NULL },
	{ "aws:PrincipalTag/", NULL },
	{ "aws:PrincipalType", NULL },
	{ "aws:Referer", NULL },
	{ "aws:RequestedRegion", NULL },
	{ "aws:RequestTag/", NULL },
	{ "aws:ResourceAccount", NULL },
	{ "aws:ResourceOrgID", NULL },
	{ "aws:ResourceOrgPaths", NULL },
	{ "aws:ResourceTag/", NULL },
	{ "aws:SecureTransport", NULL },
	{ "aws:SourceAccount", NULL },
	{ "aws:SourceArn", NULL },
	{ "aws:SourceIdentity", NULL },
	{ "aws:SourceIp", NULL },
	{ "aws:SourceOrgID", NULL },
	{ "aws:SourceOrgPaths", NULL },
	{ "aws:SourceOwner", NULL },
	{ "aws:SourceVpc", NULL },
	{ "aws:SourceVpcArn", NULL },
	{ "aws:SourceVpce", NULL },
	{ "aws:TagKeys", NULL },
	{ "aws:TokenIssueTime", NULL },
	{ "aws:UserAgent", NULL },
	{ "aws:userid", NULL },
	{ "aws:username", NULL },
	{ "aws:ViaAWSService", NULL },
	{ "aws:VpcSourceIp", NULL },
	{ "aws:VpceAccount", NULL },
	{ "aws:VpceOrgID", NULL },
	{ "aws:VpceOrgPaths", NULL },
	/* S3 keys (Service Authorization Reference, "Condition keys for
	 * Amazon S3"). */
	{ "s3:AccessGrantsInstanceArn", NULL },
	{ "s3:AccessPointNetworkOrigin", NULL },
	{ "s3:authType", NULL },
	{ "s3:BucketTag/", NULL },
	{ "s3:DataAccessPointAccount", NULL },
	{ "s3:DataAccessPointArn", NULL },
	{ "s3:delimiter", LIST_ONLY },
	{ "s3:ExistingJobOperation", NULL },
	{ "s3:ExistingJobPriority", NULL },
	{ "s3:ExistingObjectTag/", NULL },
	{ "s3:if-match", NULL },
	{ "s3:if-none-match", NULL },
	{ "s3:InventoryAccessibleOptionalFields", NULL },
	{ "s3:JobSuspendedCause", NULL },
	{ "s3:LocationConstraint", NULL },
	{ "s3:max-keys", LIST_ONLY },
	{ "s3:object-lock-legal-hold", NULL },
	{ "s3:object-lock-mode", NULL },
	{ "s3:object-lock-remaining-retention-days", NULL },
	{ "s3:object-lock-retain-until-date", NULL },
	{ "s3:prefix", LIST_ONLY },
	{ "s3:RequestJobOperation", NULL },
	{ "s3:RequestJobPriority", NULL },
	{ "s3:RequestObjectTag/", NULL },
	{ "s3:RequestObjectTagKeys", NULL },
	{ "s3:ResourceAccount", NULL },
	{ "s3:signatureAge", NULL },
	{ "s3:signatureversion", NULL },
	{ "s3:TlsVersion", NULL },
	{ "s3:VersionId", VERSION_ONLY },
	{ "s3:x-amz-acl", ACL_ONLY },
	{ "s3:x-amz-content-sha256", NULL },
	{ "s3:x-amz-copy-source", NULL },
	{ "s3:x-amz-grant-full-control", ACL_ONLY },
	{ "s3:x-amz-grant-read", ACL_ONLY },
	{ "s3:x-amz-grant-read-acp", ACL_ONLY },
	{ "s3:x-amz-grant-write", ACL_ONLY },
	{ "s3:x-amz-grant-write-acp", ACL_ONLY },
	{ "s3:x-amz-metadata-directive", NULL },
	{ "s3:x-amz-object-ownership", NULL },
	{ "s3:x-amz-server-side-encryption", NULL },
	{ "s3:x-amz-server-side-encryption-aws-kms-key-id", NULL },
	{ "s3:x-amz-server-side-encryption-customer-algorithm", NULL },
	{ "s3:x-amz-storage-class", NULL },
	{ "s3:x-amz-website-redirect-location", NULL },
};

bool s3p_condition_key(const char *key, const char **only)
{
	*only = NULL;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		size_t n = strlen(keys[i].name);
		if (keys[i].name[n - 1] == '/') {
			/* A tag key after the prefix: 1 to 128 characters. */
			if (strncasecmp(key, keys[i].name, n) == 0 && key[n] != '\0') {
				*only = keys[i].only;
				return true;
			}
		} else if (strcasecmp(key, keys[i].name) == 0) {
			*only = keys[i].only;
			return true;
		}
	}
	return false;
}

bool s3p_public_restricting_key(const char *key)
{
	static const char *const fixed[] = {
		"aws:SourceIp",       "aws:SourceArn",       "aws:SourceVpc",
		"aws:SourceVpce",     "aws:SourceOwner",     "aws:SourceAccount",
		"aws:userid",         "aws:PrincipalOrgID",  "aws:PrincipalAccount",
		"aws:PrincipalArn",   "s3:DataAccessPointArn", "s3:DataAccessPointAccount",
		"s3:x-amz-server-side-encryption-aws-kms-key-id",
	};
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (strcasecmp(key, fixed[i]) == 0)
			return true;
	return false;
}

bool s3p_key_eq(const char *a, const char *b)
{
	/* Up to and including the first '/': any case; after it, exact. */
	for (;; a++, b++) {
		unsigned char ca = (unsigned char)*a, cb = (unsigned char)*b;
		if (ca >= 'A' && ca <= 'Z')
			ca += 'a' - 'A';
		if (cb >= 'A' && cb <= 'Z')
			cb += 'a' - 'A';
		if (ca != cb)
			return false;
		if (ca == '\0')
			return true;
		if (ca == '/')
			return strcmp(a + 1, b + 1) == 0;
	}
}
