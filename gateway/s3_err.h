/*
 * s3_err.h — the S3 error codes the gateway answers with: ONE table giving
 * each its wire code, HTTP status and default message, and the rendering of
 * the S3 XML error body.
 *
 * Several entries may share a wire code with a different message (S3 says
 * "AccessDenied: Request has expired" for an expired presigned URL): the
 * enum names the situation, s3_err_code() the string clients switch on.
 *
 * Does not map meta's answers to these: that is s3_status's one table.
 *
 * Pure: no I/O, no allocation beyond the caller's xml_w; any thread.
 */
#ifndef GATEWAY_S3_ERR_H
#define GATEWAY_S3_ERR_H

#include <stddef.h>

#include "gateway/xml.h"

/*       enum name                    status  wire code                      default message */
#define S3_ERRORS(X)                                                                                   \
	X(AccessDenied,                 403, "AccessDenied",                 "Access Denied")            \
	X(CORSForbidden,                403, "AccessForbidden",              "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec.") \
	X(CORSNotEnabled,               403, "AccessForbidden",              "CORSResponse: CORS is not enabled for this bucket.") \
	X(CORSBadRequest,               400, "BadRequest",                   "Insufficient information. Origin request header needed.") \
	X(NoSuchCORSConfiguration,      404, "NoSuchCORSConfiguration",      "The CORS configuration does not exist") \
	X(NoSuchLifecycleConfiguration, 404, "NoSuchLifecycleConfiguration", "The lifecycle configuration does not exist") \
	X(NoSuchEncryptionConfiguration, 404, "ServerSideEncryptionConfigurationNotFoundError", "The server side encryption configuration was not found") \
	X(NoSuchWebsiteConfiguration,   404, "NoSuchWebsiteConfiguration",   "The specified bucket does not have a website configuration") \
	X(NoSuchReplicationConfiguration, 404, "ReplicationConfigurationNotFoundError", "The replication configuration was not found") \
	X(InvalidPolicyDocument,        400, "InvalidPolicyDocument",        "Invalid Policy") \
	X(MalformedPOSTRequest,         400, "MalformedPOSTRequest",         "The body of your POST request is not well-formed multipart/form-data.") \
	X(MaxPostPreDataLengthExceeded, 400, "MaxPostPreDataLengthExceededError", "Your POST request fields preceding the upload file were too large.") \
	X(IncorrectNumberOfFilesInPostRequest, 400, "IncorrectNumberOfFilesInPostRequest", "POST requires exactly one file upload per request.") \
	X(AccessControlListNotSupported, 400, "AccessControlListNotSupported", "The bucket does not allow ACLs") \
	X(RequestExpired,               403, "AccessDenied",                 "Request has expired")      \
	X(RequestNotYetValid,           403, "AccessDenied",                 "Request is not valid yet") \
	X(AuthorizationHeaderMalformed, 400, "AuthorizationHeaderMalformed", "The authorization header is malformed") \
	X(AuthorizationQueryParametersError, 400, "AuthorizationQueryParametersError", "Error parsing the X-Amz-Credential parameter") \
	X(BadDigest,                    400, "BadDigest",                    "The Content-MD5 or checksum value that you specified did not match what the server received.") \
	X(BucketAlreadyExists,          409, "BucketAlreadyExists",          "The requested bucket name is not available. The bucket namespace is shared by all users of the system. Please select a different name and try again.") \
	X(BucketAlreadyOwnedByYou,      409, "BucketAlreadyOwnedByYou",      "Your previous request to create the named bucket succeeded and you already own it.") \
	X(BucketNotEmpty,               409, "BucketNotEmpty",               "The bucket you tried to delete is not empty") \
	X(ObjectLocked,                 403, "AccessDenied",                 "Access Denied because object protected by object lock.") \
	X(ObjectLockConfigurationNotFound, 404, "ObjectLockConfigurationNotFoundError", "Object Lock configuration does not exist for this bucket") \
	X(NoSuchObjectLockConfiguration, 404, "NoSuchObjectLockConfiguration", "The specified object does not have a ObjectLock configuration") \
	X(InvalidBucketState,           409, "InvalidBucketState",           "The request is not valid with the current state of the bucket.") \
	X(LockNotEnabled,               400, "InvalidRequest",               "Bucket is missing Object Lock Configuration") \
	X(EntityTooLarge,               400, "EntityTooLarge",               "Your proposed upload exceeds the maximum allowed object size.") \
	X(RecordTooLarge,               400, "EntityTooLarge",               "The object's record (one layout per part) is too large") \
	X(EntityTooSmall,               400, "EntityTooSmall",               "Your proposed upload is smaller than the minimum allowed object size.") \
	X(ExpiredToken,                 400, "ExpiredToken",                 "The provided token has expired.") \
	X(IncompleteBody,               400, "IncompleteBody",               "You did not provide the number of bytes specified by the Content-Length HTTP header.") \
	X(InternalError,                500, "InternalError",                "We encountered an internal error. Please try again.") \
	X(InvalidAccessKeyId,           403, "InvalidAccessKeyId",           "The AWS Access Key Id you provided does not exist in our records.") \
	X(InvalidArgument,              400, "InvalidArgument",              "Invalid Argument")         \
	X(InvalidContinuationToken,     400, "InvalidArgument",              "The continuation token provided is incorrect") \
	X(ListArgumentTooLong,          400, "InvalidArgument",              "Prefix, delimiter or key-marker too long") \
	X(MetadataTooLarge,             400, "MetadataTooLarge",             "Your metadata headers exceed the maximum allowed metadata size.") \
	X(InvalidBucketName,            400, "InvalidBucketName",            "The specified bucket is not valid.") \
	X(InvalidBucketAclWithObjectOwnership, 400, "InvalidBucketAclWithObjectOwnership", "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting") \
	X(InvalidDigest,                400, "InvalidDigest",                "The Content-MD5 you specified is not valid.") \
	X(InvalidPart,                  400, "InvalidPart",                  "One or more of the specified parts could not be found. The part might not have been uploaded, or the specified entity tag might not have matched the part's entity tag.") \
	X(InvalidPartNumber,            416, "InvalidPartNumber",            "The requested partnumber is not satisfiable") \
	X(InvalidPartOrder,             400, "InvalidPartOrder",             "The list of parts was not in ascending order. The parts list must be specified in order by part number.") \
	X(InvalidRange,                 416, "InvalidRange",                 "The requested range is not satisfiable") \
	X(InvalidRequest,               400, "InvalidRequest",               "Invalid Request")          \
	X(InvalidStorageClass,          400, "InvalidStorageClass",          "The storage class you specified is not valid") \
	X(InvalidTag,                   400, "InvalidTag",                   "The TagKey you have provided is invalid") \
	X(InvalidURI,                   400, "InvalidURI",                   "Couldn't parse the specified URI.") \
	X(KeyTooLongError,              400, "KeyTooLongError",              "Your key is too long")     \
	X(MalformedACLError,            400, "MalformedACLError",            "The XML you provided was not well-formed or did not validate against our published schema") \
	X(MalformedPolicy,              400, "MalformedPolicy",              "Policies must be valid JSON and the first byte must be '{'") \
	X(PolicyTooLarge,               400, "MalformedPolicy",              "Policy exceeds the maximum allowed document size.") \
	X(NoSuchVersion,                404, "NoSuchVersion",                "The specified version does not exist.") \
	X(InvalidVersionId,             400, "InvalidArgument",              "Invalid version id specified") \
	X(MalformedXML,                 400, "MalformedXML",                 "The XML you provided was not well-formed or did not validate against our published schema.") \
	X(MaxMessageLengthExceeded,     400, "MaxMessageLengthExceeded",     "Your request was too big.") \
	X(MethodNotAllowed,             405, "MethodNotAllowed",             "The specified method is not allowed against this resource.") \
	X(MissingContentLength,         411, "MissingContentLength",         "You must provide the Content-Length HTTP header.") \
	X(MissingSecurityHeader,        400, "MissingSecurityHeader",        "Your request was missing a required header") \
	X(NoSuchBucket,                 404, "NoSuchBucket",                 "The specified bucket does not exist") \
	X(NoSuchKey,                    404, "NoSuchKey",                    "The specified key does not exist.") \
	X(NoSuchUpload,                 404, "NoSuchUpload",                 "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.") \
	X(NoSuchBucketPolicy,           404, "NoSuchBucketPolicy",           "The bucket policy does not exist") \
	X(NoSuchPublicAccessBlockConfiguration, 404, "NoSuchPublicAccessBlockConfiguration", "The public access block configuration was not found") \
	X(NoSuchTagSet,                 404, "NoSuchTagSet",                 "The TagSet does not exist") \
	X(OperationAborted,             409, "OperationAborted",             "A conflicting conditional operation is currently in progress against this resource. Try again.") \
	X(OwnershipControlsNotFoundError, 404, "OwnershipControlsNotFoundError", "The bucket ownership controls were not found") \
	X(UnresolvableGrantByEmailAddress, 400, "UnresolvableGrantByEmailAddress", "The email address you provided does not match any account on record.") \
	X(NotImplemented,               501, "NotImplemented",               "A header you provided implies functionality that is not implemented") \
	X(QuotaExceeded,                403, "QuotaExceeded",                "The bucket's or its owner's quota would be exceeded") \
	X(PreconditionFailed,           412, "PreconditionFailed",           "At least one of the pre-conditions you specified did not hold") \
	X(RequestTimeTooSkewed,         403, "RequestTimeTooSkewed",         "The difference between the request time and the server's time is too large.") \
	X(RequestTimeout,               400, "RequestTimeout",               "Your socket connection to the server was not read from or written to within the timeout period.") \
	X(ServiceUnavailable,           503, "ServiceUnavailable",           "Please reduce your request rate.") \
	X(SignatureDoesNotMatch,        403, "SignatureDoesNotMatch",        "The request signature we calculated does not match the signature you provided. Check your key and signing method.") \
	X(SlowDown,                     503, "SlowDown",                     "Please reduce your request rate.") \
	X(UnexpectedContent,            400, "UnexpectedContent",            "This request does not support content") \
	X(XAmzContentSHA256Mismatch,    400, "XAmzContentSHA256Mismatch",    "The provided 'x-amz-content-sha256' header does not match what was computed.")

enum s3_err {
	S3E_OK = 0,
#define S3_ERR_ENUM(name, status, code, msg) S3E_##name,
	S3_ERRORS(S3_ERR_ENUM)
#undef S3_ERR_ENUM
	S3E__COUNT
};

/* HTTP status of e (200 for S3E_OK; 500 for an out-of-range value). */
int s3_err_status(enum s3_err e);

/* Wire code ("NoSuchKey"); "InternalError" for an out-of-range value. */
const char *s3_err_code(enum s3_err e);

/* Default message. */
const char *s3_err_message(enum s3_err e);

/* The enum's own name ("RequestExpired"), for logs and metrics labels. */
const char *s3_err_name(enum s3_err e);

/* Render the S3 error document into w:
 *   <?xml version="1.0" encoding="UTF-8"?>
 *   <Error><Code>..</Code><Message>..</Message><Region>..</Region>
 *   <Resource>..</Resource><RequestId>..</RequestId></Error>
 * message NULL -> the default; region/resource/request_id NULL -> element
 * omitted. Region is the one a request signed for the wrong region should
 * have named, as S3 adds it (s3cmd, for one, re-signs with it). All text
 * is escaped. Returns xml_finish's result (0, -ENOMEM, -E2BIG); on 0 the
 * body is w->buf[0..w->len). */
int s3_err_render(struct xml_w *w, enum s3_err e, const char *message, const char *region,
		  const char *resource, const char *request_id);

#endif
