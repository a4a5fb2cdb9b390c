/*
 * post_policy.h — the policy document of an S3 browser POST upload
 * (AWS "Creating a POST Policy"): base64 JSON with an expiration and
 * conditions, parsed and evaluated against the form's fields.
 *
 * Conditions: {"field": "value"} and ["eq", "$field", "value"] (exact
 * match), ["starts-with", "$field", "prefix"] ("" matches anything),
 * ["content-length-range", min, max] (the file's size, checked at its
 * end). Field names compare ASCII case-insensitively, values exactly;
 * "bucket" is the request's bucket. Every form field must be named by a
 * condition except x-amz-signature, signature, AWSAccessKeyId, file,
 * policy and x-ignore-* (AWS: "Extra input fields").
 *
 * Errors as AWS: InvalidPolicyDocument for a document that is not one
 * ("Invalid Policy: …"), AccessDenied "Invalid according to Policy: …"
 * for an expired policy, a failed condition or an extra field,
 * EntityTooLarge / EntityTooSmall for content-length-range.
 *
 * Owns the parsed document (post_policy_free). Pure: no I/O; any thread.
 */
#ifndef GATEWAY_POST_POLICY_H
#define GATEWAY_POST_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gateway/s3_err.h"

#define POST_POLICY_MAX (20 * 1024)    /* the base64 text */
#define POST_POLICY_CONDS_MAX 64

enum post_cond_op { POST_EQ, POST_STARTS_WITH, POST_RANGE };

struct post_cond {
	enum post_cond_op op;
	const char *field;             /* without '$'; NULL for a range */
	const char *value;
	size_t value_len;
	int64_t min, max;              /* POST_RANGE */
};

struct post_policy {
	int64_t expiration_ms;         /* Unix milliseconds */
	struct post_cond conds[POST_POLICY_CONDS_MAX];
	size_t n_conds;
	bool has_range;
	int64_t range_min, range_max;
	struct json_doc *doc;          /* the strings above live in it */
	char *json;                    /* the decoded document */
};

/* One form field as the POST handler gathered it. */
struct post_field {
	const char *name;
	const char *value;
	size_t value_len;
};

/* Decode and parse the policy field's base64 text. S3E_OK, or
 * InvalidPolicyDocument with *msg ("Invalid Policy: …"), InternalError.
 * p is the caller's to free either way. */
enum s3_err post_policy_parse(const char *b64, size_t len, struct post_policy *p, const char **msg);
void post_policy_free(struct post_policy *p);

/* The fields (the key already with ${filename} put in) against p at
 * now_ms for bucket. S3E_OK, or AccessDenied with the reason in msg. */
enum s3_err post_policy_check(const struct post_policy *p, int64_t now_ms, const char *bucket,
			      const struct post_field *f, size_t n, char *msg, size_t cap);

/* The file's size against content-length-range: S3E_OK, EntityTooLarge,
 * EntityTooSmall. */
enum s3_err post_policy_check_size(const struct post_policy *p, uint64_t size);

/* "2007-12-01T12:00:00.000Z" (fraction optional) to Unix ms; 0 or -EINVAL. */
int post_policy_parse_time(const char *s, size_t n, int64_t *ms);

#endif
