/*
 * test_policy.c — gateway/s3_policy, the bucket policy engine.
 *
 * Parse errors: each malformed case with S3's MalformedPolicy text.
 * Evaluation: the S3 User Guide's bucket policy examples (anonymous read
 * on a prefix, IP allow and deny lists with IPv6, HTTPS only,
 * bucket-owner-full-control, s3:prefix and s3:delimiter on ListBucket,
 * NotPrincipal with Deny, tag keys with ForAnyValue/ForAllValues,
 * existing object tags, Referer), each on requests that match and
 * requests that do not; explicit Deny over Allow; wildcards in actions
 * (case-insensitive) and resources (case-sensitive); IfExists; Null;
 * numbers and dates; policy variables; the principal mapping; and
 * is_public on the User Guide's public and non-public examples.
 */
#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/s3_acl.h"
#include "gateway/s3_policy.h"

#define BUCKET "examplebucket"
#define V "\"Version\":\"2012-10-17\","

static struct s3_policy *P(const char *json)
{
	char err[256] = "";
	struct s3_policy *p = NULL;
	int rc = s3_policy_parse(json, strlen(json), BUCKET, &p, err, sizeof(err));
	ck_assert_msg(rc == 0, "parse failed (%d: %s): %s", rc, err, json);
	return p;
}

/* The MalformedPolicy text for json (which must fail with -EBADMSG). */
static const char *E(const char *json)
{
	static char err[256];
	struct s3_policy *p = (struct s3_policy *)1;
	err[0] = '\0';
	int rc = s3_policy_parse(json, strlen(json), BUCKET, &p, err, sizeof(err));
	ck_assert_msg(rc == -EBADMSG, "rc %d for %s", rc, json);
	ck_assert_ptr_null(p);
	return err;
}

/* One statement with the given members (JSON text without braces). */
static char *stmt(const char *members)
{
	static char buf[4096];
	snprintf(buf, sizeof(buf), "{" V "\"Statement\":[{%s}]}", members);
	return buf;
}

/* Evaluates p for principal/owner/action/key and condition keys given as
 * (key, value) pairs up to NULL; a value with '\x1f' separators is a
 * multi-valued key. */
static enum s3_policy_verdict ev(const struct s3_policy *p, const char *principal, bool owner,
				 const char *action, const char *key, ...)
{
	struct s3_policy_kv kv[16];
	const char *vals[16][8];
	char store[16][256];
	size_t n = 0;
	va_list ap;
	va_start(ap, key);
	for (const char *k; (k = va_arg(ap, const char *)) != NULL; n++) {
		const char *v = va_arg(ap, const char *);
		ck_assert(n < 16);
		snprintf(store[n], sizeof(store[n]), "%s", v);
		size_t nv = 0;
		char *save = NULL;
		if (store[n][0] == '\0') {
			vals[n][nv++] = store[n];     /* one empty value */
		} else {
			for (char *t = strtok_r(store[n], "\x1f", &save); t; t = strtok_r(NULL, "\x1f", &save))
				vals[n][nv++] = t;
		}
		kv[n] = (struct s3_policy_kv){ .key = k, .vals = vals[n], .n = nv };
	}
	va_end(ap);
	struct s3_policy_req r = { .principal = principal, .is_bucket_owner = owner, .action = action,
				   .key = key, .ctx = kv, .n_ctx = n };
	return s3_policy_eval(p, &r);
}

#define NONE S3_POLICY_NONE
#define ALLOW S3_POLICY_ALLOW
#define DENY S3_POLICY_DENY

/* ------------------------------------------------------------------ parse errors */

START_TEST(test_parse_errors)
{
	static const struct {
		const char *json;
		const char *msg;
	} cases[] = {
		{ "", "Policies must be valid JSON and the first byte must be '{'" },
		{ " {}", "Policies must be valid JSON and the first byte must be '{'" },
		{ "[]", "Policies must be valid JSON and the first byte must be '{'" },
		{ "{", "This policy contains invalid Json" },
		{ "{\"Statement\": [],}", "This policy contains invalid Json" },
		{ "{\"Statement\": \"\xc0\xaf\"}", "This policy contains invalid Json" },
		{ "{" V "\"Statement\": []}", "Could not parse the policy: Statement is empty!" },
		{ "{" V "\"Id\": \"x\"}", "Missing required field Statement" },
		{ "{\"Version\":\"2012-10-18\",\"Statement\":{}}", "The policy must contain a valid version string" },
		{ "{\"Version\":2012,\"Statement\":{}}", "The policy must contain a valid version string" },
		{ "{" V "\"Statement\": \"x\"}", "Invalid policy syntax." },
		{ "{" V "\"Statement\": [1]}", "Invalid policy syntax." },
		{ "{" V "\"Foo\": 1, \"Statement\": {}}", "Invalid policy syntax." },
		{ "{" V "\"Id\": 5, \"Statement\": {}}", "Invalid policy syntax." },
		/* A repeated key anywhere: refused rather than one kept. */
		{ "{" V "\"Statement\": {\"Effect\":\"Allow\",\"Effect\":\"Deny\",\"Principal\":\"*\","
		  "\"Action\":\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::examplebucket/*\"}}", "Invalid policy syntax." },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(strcmp(E(cases[i].json), cases[i].msg) == 0, "case %zu: got '%s'", i,
			      E(cases[i].json));

#define OK_P "\"Principal\":\"*\","
#define OK_A "\"Action\":\"s3:GetObject\","
#define OK_R "\"Resource\":\"arn:aws:s3:::examplebucket/*\""
	static const struct {
		const char *members;
		const char *msg;
	} st[] = {
		{ OK_P OK_A OK_R, "Missing required field Effect" },
		{ "\"Effect\":\"allow\"," OK_P OK_A OK_R, "Invalid effect: allow" },
		{ "\"Effect\":\"Permit\"," OK_P OK_A OK_R, "Invalid effect: Permit" },
		{ "\"Effect\":true," OK_P OK_A OK_R, "Invalid policy syntax." },
		{ "\"Effect\":\"Allow\"," OK_A OK_R, "Missing required field Principal" },
		{ "\"Effect\":\"Allow\"," OK_P OK_R, "Missing required field Action" },
		{ "\"Effect\":\"Allow\"," OK_P OK_A "\"Sid\":\"x\"", "Missing required field Resource" },
		{ "\"Effect\":\"Allow\",\"Principle\":\"*\"," OK_A OK_R, "Invalid policy syntax." },
		{ "\"Effect\":\"Allow\"," OK_P "\"NotPrincipal\":{\"AWS\":\"bob\"}," OK_A OK_R, "Invalid policy syntax." },
		{ "\"Effect\":\"Allow\"," OK_P OK_A "\"NotAction\":\"s3:PutObject\"," OK_R, "Invalid policy syntax." },
		{ "\"Effect\":\"Allow\"," OK_P OK_A OK_R ",\"Sid\":7", "Invalid policy syntax." },
		/* Principals */
		{ "\"Effect\":\"Allow\",\"Principal\":\"alice\"," OK_A OK_R, "Invalid principal in policy" },
		{ "\"Effect\":\"Allow\",\"Principal\":{}," OK_A OK_R, "Invalid principal in policy" },
		{ "\"Effect\":\"Allow\",\"Principal\":[\"*\"]," OK_A OK_R, "Invalid principal in policy" },
		{ "\"Effect\":\"Allow\",\"Principal\":{\"AWS\":[]}," OK_A OK_R, "Invalid principal in policy" },
		{ "\"Effect\":\"Allow\",\"Principal\":{\"AWS\":5}," OK_A OK_R, "Invalid principal in policy" },
		{ "\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"arn:aws:iam::123456789012:role/admin\"}," OK_A OK_R,
		  "Invalid principal in policy" },
		{ "\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"arn:aws:iam::*:root\"}," OK_A OK_R,
		  "Invalid principal in policy" },
		{ "\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"arn:aws:iam::123456789012:user/ali*\"}," OK_A OK_R,
		  "Invalid principal in policy" },
		{ "\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"ali ce\"}," OK_A OK_R, "Invalid principal in policy" },
		{ "\"Effect\":\"Allow\",\"Principal\":{\"Federated\":\"cognito-identity.amazonaws.com\"}," OK_A OK_R,
		  "Invalid principal in policy" },
		{ "\"Effect\":\"Allow\",\"Principal\":{\"aws\":\"alice\"}," OK_A OK_R, "Invalid principal in policy" },
		/* Actions */
		{ "\"Effect\":\"Allow\"," OK_P "\"Action\":\"s3:GetObjekt\"," OK_R, "Policy has invalid action" },
		{ "\"Effect\":\"Allow\"," OK_P "\"Action\":\"iam:PassRole\"," OK_R, "Policy has invalid action" },
		{ "\"Effect\":\"Allow\"," OK_P "\"Action\":\"s3:Foo*\"," OK_R, "Policy has invalid action" },
		{ "\"Effect\":\"Allow\"," OK_P "\"Action\":\"GetObject\"," OK_R, "Policy has invalid action" },
		{ "\"Effect\":\"Allow\"," OK_P "\"Action\":\"s3:DeleteBucketTagging\"," OK_R, "Policy has invalid action" },
		{ "\"Effect\":\"Allow\"," OK_P "\"Action\":[]," OK_R, "Policy has invalid action" },
		{ "\"Effect\":\"Allow\"," OK_P "\"Action\":[\"s3:GetObject\",\"s3:Nope\"]," OK_R, "Policy has invalid action" },
		{ "\"Effect\":\"Allow\"," OK_P "\"Action\":5," OK_R, "Invalid policy syntax." },
		{ "\"Effect\":\"Allow\"," OK_P "\"Action\":[\"s3:GetObject\",5]," OK_R, "Invalid policy syntax." },
		{ "\"Effect\":\"Allow\"," OK_P "\"Action\":\"s3:Get\\u0000Object\"," OK_R, "Invalid policy syntax." },
		{ "\"Effect\\u0000x\":\"Allow\"," OK_P OK_A OK_R, "Invalid policy syntax." },
		{ "\"Effect\":\"Allow\",\"Principal\":{\"AWS\\u0000\":\"alice\"}," OK_A OK_R, "Invalid policy syntax." },
		/* Resources: every one must be this bucket or in it, case-sensitive. */
		{ "\"Effect\":\"Allow\"," OK_P OK_A "\"Resource\":\"arn:aws:s3:::otherbucket/*\"", "Policy has invalid resource" },
		{ "\"Effect\":\"Allow\"," OK_P OK_A "\"Resource\":\"arn:aws:s3:::examplebucket2/*\"", "Policy has invalid resource" },
		{ "\"Effect\":\"Allow\"," OK_P OK_A "\"Resource\":\"arn:aws:s3:::ExampleBucket/*\"", "Policy has invalid resource" },
		{ "\"Effect\":\"Allow\"," OK_P OK_A "\"Resource\":\"examplebucket/*\"", "Policy has invalid resource" },
		{ "\"Effect\":\"Allow\"," OK_P OK_A "\"Resource\":[\"arn:aws:s3:::examplebucket/*\",\"arn:aws:s3:::x/*\"]",
		  "Policy has invalid resource" },
		{ "\"Effect\":\"Allow\"," OK_P OK_A "\"Resource\":[]", "Policy has invalid resource" },
		{ "\"Effect\":\"Allow\"," OK_P OK_A "\"Resource\":{}", "Invalid policy syntax." },
		/* Action and resource types must meet. */
		{ "\"Effect\":\"Allow\"," OK_P OK_A "\"Resource\":\"arn:aws:s3:::examplebucket\"",
		  "Action does not apply to any resource(s) in statement" },
		{ "\"Effect\":\"Allow\"," OK_P "\"Action\":\"s3:ListBucket\"," OK_R,
		  "Action does not apply to any resource(s) in statement" },
		{ "\"Effect\":\"Allow\"," OK_P "\"Action\":[\"s3:GetObject\",\"s3:ListBucket\"]," OK_R,
		  "Action does not apply to any resource(s) in statement" },
		{ "\"Effect\":\"Allow\"," OK_P "\"Action\":\"s3:ListAllMyBuckets\",\"Resource\":\"arn:aws:s3:::examplebucket\"",
		  "Action does not apply to any resource(s) in statement" },
		/* Conditions */
		{ "\"Effect\":\"Allow\"," OK_P OK_A OK_R ",\"Condition\":{\"StringEqualz\":{\"aws:Referer\":\"x\"}}",
		  "Invalid Condition type : StringEqualz" },
		{ "\"Effect\":\"Allow\"," OK_P OK_A OK_R ",\"Condition\":{\"NullIfExists\":{\"aws:Referer\":\"true\"}}",
		  "Invalid Condition type : NullIfExists" },
		{ "\"Effect\":\"Allow\"," OK_P OK_A OK_R ",\"Condition\":{\"ForAnyValue:Null\":{\"aws:Referer\":\"true\"}}",
		  "Invalid Condition type : ForAnyValue:Null" },
		{ "\"Effect\":\"Allow\"," OK_P OK_A OK_R ",\"Condition\":{\"ForSomeValues:StringLike\":{\"aws:Referer\":\"x\"}}",
		  "Invalid Condition type : ForSomeValues:StringLike" },
		{ "\"Effect\":\"Allow\"," OK_P OK_A OK_R ",\"Condition\":{\"StringEquals\":{\"aws:Referrer\":\"x\"}}",
		  "Policy has an invalid condition key" },
		{ "\"Effect\":\"Allow\"," OK_P OK_A OK_R ",\"Condition\":{\"StringEquals\":{\"s3:ExistingObjectTag/\":\"x\"}}",
		  "Policy has an invalid condition key" },
		{ "\"Effect\":\"Allow\"," OK_P OK_A OK_R ",\"Condition\":{\"StringEquals\":{\"s3:prefix\":\"home/\"}}",
		  "Conditions do not apply to combination of actions and resources in statement" },
		{ "\"Effect\":\"Allow\"," OK_P OK_A OK_R ",\"Condition\":{\"StringEquals\":{\"s3:x-amz-acl\":\"private\"}}",
		  "Conditions do not apply to combination of actions and resources in statement" },
		{ "\"Effect\":\"Allow\"," OK_P OK_A OK_R ",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":\"300.1.1.1\"}}",
		  "Invalid policy syntax." },
		{ "\"Effect\":\"Allow\"," OK_P OK_A OK_R ",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":\"10.0.0.0/33\"}}",
		  "Invalid policy syntax." },
		{ "\"Effect\":\"Allow\"," OK_P OK_A OK_R ",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":\"2001:db8::/129\"}}",
		  "Invalid policy syntax." },
		{ "\"Effect\":\"Allow\"," OK_P OK_A OK_R ",\"Condition\":{\"NumericLessThan\":{\"aws:EpochTime\":\"ten\"}}",
		  "Invalid policy syntax." },
		{ "\"Effect\":\"Allow\"," OK_P OK_A OK_R ",\"Condition\":{\"DateLessThan\":{\"aws:CurrentTime\":\"2024-13-01\"}}",
		  "Invalid policy syntax." },
		{ "\"Effect\":\"Allow\"," OK_P OK_A OK_R ",\"Condition\":{\"DateLessThan\":{\"aws:CurrentTime\":\"2023-02-29\"}}",
		  "Invalid policy syntax." },
		{ "\"Effect\":\"Allow\"," OK_P OK_A OK_R ",\"Condition\":{\"Bool\":{\"aws:SecureTransport\":\"yes\"}}",
		  "Invalid policy syntax." },
		{ "\"Effect\":\"Allow\"," OK_P OK_A OK_R ",\"Condition\":{\"Null\":{\"aws:Referer\":\"maybe\"}}",
		  "Invalid policy syntax." },
		{ "\"Effect\":\"Allow\"," OK_P OK_A OK_R ",\"Condition\":{\"StringEquals\":{\"aws:Referer\":{}}}",
		  "Invalid policy syntax." },
		{ "\"Effect\":\"Allow\"," OK_P OK_A OK_R ",\"Condition\":{\"StringEquals\":{\"aws:Referer\":[]}}",
		  "Invalid policy syntax." },
		{ "\"Effect\":\"Allow\"," OK_P OK_A OK_R ",\"Condition\":{\"StringEquals\":{\"aws:Referer\":null}}",
		  "Invalid policy syntax." },
		{ "\"Effect\":\"Allow\"," OK_P OK_A OK_R ",\"Condition\":{\"StringEquals\":\"x\"}", "Invalid policy syntax." },
		{ "\"Effect\":\"Allow\"," OK_P OK_A OK_R ",\"Condition\":[]", "Invalid policy syntax." },
		{ "\"Effect\":\"Allow\"," OK_P OK_A OK_R ",\"Condition\":{\"ArnLike\":{\"aws:SourceArn\":\"arn:aws:s3\"}}",
		  "Invalid policy syntax." },
	};
	for (size_t i = 0; i < sizeof(st) / sizeof(st[0]); i++) {
		const char *got = E(stmt(st[i].members));
		ck_assert_msg(strcmp(got, st[i].msg) == 0, "statement case %zu: got '%s' want '%s'", i, got,
			      st[i].msg);
	}

	/* Sids must be unique. */
	ck_assert_str_eq(E("{" V "\"Statement\":[{\"Sid\":\"a\",\"Effect\":\"Allow\"," OK_P OK_A OK_R "},"
			   "{\"Sid\":\"a\",\"Effect\":\"Deny\"," OK_P OK_A OK_R "}]}"),
			 "Statement IDs (SID) in a single policy must be unique.");

	/* A short error buffer is truncated, still terminated. */
	char small[8];
	struct s3_policy *p;
	ck_assert_int_eq(s3_policy_parse("{", 1, BUCKET, &p, small, sizeof(small)), -EBADMSG);
	ck_assert_str_eq(small, "This po");
	ck_assert_int_eq(s3_policy_parse("{", 1, BUCKET, &p, NULL, 0), -EBADMSG);
}
END_TEST

/* AWS: "Bucket policies are limited to 20 KB in size"; indentation is not
 * counted, and the raw body has its own, larger cap. */
START_TEST(test_size_limit)
{
	size_t cap = 64 * 1024;
	char *b = malloc(cap * 3);
	for (int round = 0; round < 3; round++) {
		/* round 0: exactly 20 KiB compact; 1: one byte over; 2: 20 KiB
		 * compact, with 10 spaces after every resource. */
		size_t n = 0;
		n += (size_t)sprintf(b + n, "{" V "\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\","
					      "\"Action\":\"s3:GetObject\",\"Resource\":[");
		size_t one = strlen("\"arn:aws:s3:::examplebucket/k0000\",");
		size_t want = round == 1 ? 20481 : 20480;
		size_t tail = strlen("\"arn:aws:s3:::examplebucket/last\"]}]}");
		size_t k = 0, compact = n;
		while (compact + one + tail <= want) {
			n += (size_t)sprintf(b + n, "\"arn:aws:s3:::examplebucket/k%04zu\",", k++);
			compact += one;
			if (round == 2)
				for (int s = 0; s < 10; s++)
					b[n++] = ' ';
		}
		/* Pad the last name to reach exactly `want` compact bytes. */
		size_t pad = want - compact - tail;
		n += (size_t)sprintf(b + n, "\"arn:aws:s3:::examplebucket/");
		memset(b + n, 'x', pad);
		n += pad;
		n += (size_t)sprintf(b + n, "last\"]}]}");
		char err[128];
		struct s3_policy *p = NULL;
		int rc = s3_policy_parse(b, n, BUCKET, &p, err, sizeof(err));
		if (round == 1) {
			ck_assert_int_eq(rc, -E2BIG);
			ck_assert_str_eq(err, "Policy exceeds the maximum allowed document size.");
		} else {
			ck_assert_msg(rc == 0, "round %d: %d %s", round, rc, err);
			if (round == 2)
				ck_assert_uint_gt(n, 20480 + 3000);
			ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k0007", NULL), ALLOW);
			s3_policy_free(p);
		}
	}
	/* Over the raw cap: refused before parsing. */
	memset(b, ' ', S3_POLICY_MAX_INPUT_BYTES + 1);
	b[0] = '{';
	char err[128];
	struct s3_policy *p;
	ck_assert_int_eq(s3_policy_parse(b, S3_POLICY_MAX_INPUT_BYTES + 1, BUCKET, &p, err, sizeof(err)),
			 -E2BIG);
	free(b);
}
END_TEST

/* ------------------------------------------------------------------ AWS's examples */

/* "Granting read-only permission to an anonymous user" on a prefix. */
START_TEST(test_example_public_read_prefix)
{
	struct s3_policy *p = P("{" V "\"Statement\":[{\"Sid\":\"PublicRead\",\"Effect\":\"Allow\","
				"\"Principal\":\"*\",\"Action\":[\"s3:GetObject\",\"s3:GetObjectVersion\"],"
				"\"Resource\":[\"arn:aws:s3:::examplebucket/public/*\"]}]}");
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "public/a.jpg", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "public/deep/er/b", NULL), ALLOW);
	ck_assert_int_eq(ev(p, "alice", false, "s3:GetObject", "public/a.jpg", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "private/a.jpg", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "public", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "Public/a.jpg", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:PutObject", "public/a.jpg", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:ListBucket", NULL, NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", NULL, NULL), NONE);  /* bucket level */
	ck_assert(s3_policy_is_public(p));
	ck_assert_str_eq(s3_policy_version(p), "2012-10-17");
	s3_policy_free(p);
}
END_TEST

/* "Restricting access to specific IP addresses": allow a range minus one
 * address. */
START_TEST(test_example_ip_allow)
{
	struct s3_policy *p = P("{" V "\"Id\":\"S3PolicyId1\",\"Statement\":[{\"Sid\":\"IPAllow\","
				"\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\","
				"\"Resource\":[\"arn:aws:s3:::examplebucket\",\"arn:aws:s3:::examplebucket/*\"],"
				"\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":\"54.240.143.0/24\"},"
				"\"NotIpAddress\":{\"aws:SourceIp\":\"54.240.143.188/32\"}}}]}");
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:SourceIp", "54.240.143.1", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:ListBucket", NULL, "aws:SourceIp", "54.240.143.255", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:SourceIp", "54.240.143.188", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:SourceIp", "54.240.144.1", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:SourceIp", "2001:db8::1", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:SourceIp", "garbage", NULL), NONE);
	/* No address at all: IpAddress on an absent key is false. */
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", NULL), NONE);
	/* Pinned to a /24: not public (S3 User Guide, "The meaning of public"). */
	ck_assert(!s3_policy_is_public(p));
	s3_policy_free(p);
}
END_TEST

/* Deny everything from outside an IPv4 and an IPv6 range ("Allowing an
 * IPv6 address range"). */
START_TEST(test_example_ip_deny_ipv6)
{
	struct s3_policy *p = P("{" V "\"Statement\":[{\"Sid\":\"IPDeny\",\"Effect\":\"Deny\",\"Principal\":\"*\","
				"\"Action\":\"s3:*\",\"Resource\":[\"arn:aws:s3:::examplebucket\","
				"\"arn:aws:s3:::examplebucket/*\"],\"Condition\":{\"NotIpAddress\":{\"aws:SourceIp\":"
				"[\"192.0.2.0/24\",\"2001:DB8:1234:5678::/64\"]}}},"
				"{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"alice\"},\"Action\":\"s3:*\","
				"\"Resource\":\"arn:aws:s3:::examplebucket/*\"}]}");
	ck_assert_int_eq(ev(p, "alice", false, "s3:GetObject", "k", "aws:SourceIp", "192.0.2.7", NULL), ALLOW);
	ck_assert_int_eq(ev(p, "alice", false, "s3:GetObject", "k", "aws:SourceIp", "203.0.113.1", NULL), DENY);
	ck_assert_int_eq(ev(p, "alice", false, "s3:GetObject", "k", "aws:SourceIp", "2001:db8:1234:5678::1", NULL), ALLOW);
	ck_assert_int_eq(ev(p, "alice", false, "s3:GetObject", "k", "aws:SourceIp",
			    "2001:db8:1234:5678:ffff:ffff:ffff:ffff", NULL), ALLOW);
	ck_assert_int_eq(ev(p, "alice", false, "s3:GetObject", "k", "aws:SourceIp", "2001:db8:1234:5679::1", NULL), DENY);
	ck_assert_int_eq(ev(p, "alice", false, "s3:GetObject", "k", "aws:SourceIp", "::ffff:192.0.2.7", NULL), ALLOW);
	ck_assert_int_eq(ev(p, "alice", false, "s3:GetObject", "k", "aws:SourceIp", "::ffff:192.0.3.7", NULL), DENY);
	ck_assert_int_eq(ev(p, "bob", false, "s3:GetObject", "k", "aws:SourceIp", "192.0.2.7", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:ListBucket", NULL, "aws:SourceIp", "10.1.1.1", NULL), DENY);
	/* A negated operator on an absent key is true: the Deny applies. */
	ck_assert_int_eq(ev(p, "alice", false, "s3:GetObject", "k", NULL), DENY);
	ck_assert(!s3_policy_is_public(p));
	s3_policy_free(p);
}
END_TEST

/* "Managing access based on HTTP or HTTPS requests". */
START_TEST(test_example_secure_transport)
{
	struct s3_policy *p = P("{" V "\"Statement\":[{\"Sid\":\"RestrictToTLSRequestsOnly\",\"Action\":\"s3:*\","
				"\"Effect\":\"Deny\",\"Resource\":[\"arn:aws:s3:::examplebucket\","
				"\"arn:aws:s3:::examplebucket/*\"],\"Condition\":{\"Bool\":{\"aws:SecureTransport\":"
				"\"false\"}},\"Principal\":\"*\"}]}");
	ck_assert_int_eq(ev(p, "alice", true, "s3:GetObject", "k", "aws:SecureTransport", "false", NULL), DENY);
	ck_assert_int_eq(ev(p, "alice", true, "s3:PutObject", "k", "aws:SecureTransport", "FALSE", NULL), DENY);
	ck_assert_int_eq(ev(p, "alice", true, "s3:GetObject", "k", "aws:SecureTransport", "true", NULL), NONE);
	ck_assert_int_eq(ev(p, "alice", true, "s3:GetObject", "k", NULL), NONE);
	ck_assert(!s3_policy_is_public(p));
	s3_policy_free(p);

	/* The JSON boolean form. */
	p = P(stmt("\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:*\",\"Resource\":\"arn:aws:s3:::examplebucket/*\","
		   "\"Condition\":{\"Bool\":{\"aws:SecureTransport\":false}}"));
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:SecureTransport", "false", NULL), DENY);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:SecureTransport", "true", NULL), NONE);
	s3_policy_free(p);
}
END_TEST

/* "Granting cross-account permissions to upload objects while ensuring
 * the bucket owner has full control". */
START_TEST(test_example_bucket_owner_full_control)
{
	struct s3_policy *p = P("{" V "\"Statement\":[{\"Sid\":\"AllowPut\",\"Effect\":\"Allow\","
				"\"Principal\":{\"AWS\":\"arn:aws:iam::111122223333:user/Dave\"},"
				"\"Action\":\"s3:PutObject\",\"Resource\":\"arn:aws:s3:::examplebucket/*\","
				"\"Condition\":{\"StringEquals\":{\"s3:x-amz-acl\":\"bucket-owner-full-control\"}}},"
				"{\"Sid\":\"DenyOtherAcl\",\"Effect\":\"Deny\",\"Principal\":\"*\","
				"\"Action\":\"s3:PutObject\",\"Resource\":\"arn:aws:s3:::examplebucket/*\","
				"\"Condition\":{\"StringNotEquals\":{\"s3:x-amz-acl\":\"bucket-owner-full-control\"}}}]}");
	ck_assert_int_eq(ev(p, "Dave", false, "s3:PutObject", "k", "s3:x-amz-acl", "bucket-owner-full-control", NULL), ALLOW);
	ck_assert_int_eq(ev(p, "Dave", false, "s3:PutObject", "k", "s3:x-amz-acl", "private", NULL), DENY);
	ck_assert_int_eq(ev(p, "Dave", false, "s3:PutObject", "k", NULL), DENY);
	ck_assert_int_eq(ev(p, "dave", false, "s3:PutObject", "k", "s3:x-amz-acl", "bucket-owner-full-control", NULL), NONE);
	ck_assert_int_eq(ev(p, "Dave", false, "s3:GetObject", "k", NULL), NONE);
	ck_assert(!s3_policy_is_public(p));
	s3_policy_free(p);
}
END_TEST

/* "Limiting access to a prefix / home folder" with s3:prefix and
 * s3:delimiter on ListBucket, and ${aws:username}. */
START_TEST(test_example_list_prefix)
{
	struct s3_policy *p = P("{" V "\"Statement\":["
				"{\"Sid\":\"AllowRootAndHomeListing\",\"Effect\":\"Allow\",\"Principal\":{\"AWS\":[\"alice\",\"bob\"]},"
				"\"Action\":\"s3:ListBucket\",\"Resource\":\"arn:aws:s3:::examplebucket\","
				"\"Condition\":{\"StringEquals\":{\"s3:prefix\":[\"\",\"home/\"],\"s3:delimiter\":[\"/\"]}}},"
				"{\"Sid\":\"AllowListingOwnFolder\",\"Effect\":\"Allow\",\"Principal\":{\"AWS\":[\"alice\",\"bob\"]},"
				"\"Action\":\"s3:ListBucket\",\"Resource\":\"arn:aws:s3:::examplebucket\","
				"\"Condition\":{\"StringLike\":{\"s3:prefix\":[\"home/${aws:username}/*\"]}}},"
				"{\"Sid\":\"AllowAllS3ActionsInUserFolder\",\"Effect\":\"Allow\",\"Principal\":{\"AWS\":[\"alice\",\"bob\"]},"
				"\"Action\":\"s3:*Object\",\"Resource\":\"arn:aws:s3:::examplebucket/home/${aws:username}/*\"},"
				"{\"Sid\":\"MaxKeys\",\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:ListBucket\","
				"\"Resource\":\"arn:aws:s3:::examplebucket\",\"Condition\":{\"NumericGreaterThan\":{\"s3:max-keys\":\"100\"}}}]}");
	ck_assert_int_eq(ev(p, "alice", false, "s3:ListBucket", NULL, "s3:prefix", "", "s3:delimiter", "/", NULL), ALLOW);
	ck_assert_int_eq(ev(p, "alice", false, "s3:ListBucket", NULL, "s3:prefix", "home/", "s3:delimiter", "/", NULL), ALLOW);
	/* Both keys are required (conditions AND): no delimiter, no listing. */
	ck_assert_int_eq(ev(p, "alice", false, "s3:ListBucket", NULL, "s3:prefix", "home/", NULL), NONE);
	ck_assert_int_eq(ev(p, "alice", false, "s3:ListBucket", NULL, "s3:prefix", "etc/", "s3:delimiter", "/", NULL), NONE);
	ck_assert_int_eq(ev(p, "alice", false, "s3:ListBucket", NULL, "s3:prefix", "home/alice/docs",
			    "aws:username", "alice", NULL), ALLOW);
	ck_assert_int_eq(ev(p, "alice", false, "s3:ListBucket", NULL, "s3:prefix", "home/bob/docs",
			    "aws:username", "alice", NULL), NONE);
	/* No aws:username: the variable cannot resolve, the pattern matches nothing. */
	ck_assert_int_eq(ev(p, "alice", false, "s3:ListBucket", NULL, "s3:prefix", "home/alice/docs", NULL), NONE);
	ck_assert_int_eq(ev(p, "bob", false, "s3:PutObject", "home/bob/x", "aws:username", "bob", NULL), ALLOW);
	ck_assert_int_eq(ev(p, "bob", false, "s3:DeleteObject", "home/bob/x", "aws:username", "bob", NULL), ALLOW);
	ck_assert_int_eq(ev(p, "bob", false, "s3:GetObjectAcl", "home/bob/x", "aws:username", "bob", NULL), NONE);
	ck_assert_int_eq(ev(p, "bob", false, "s3:PutObject", "home/alice/x", "aws:username", "bob", NULL), NONE);
	ck_assert_int_eq(ev(p, "carol", false, "s3:PutObject", "home/carol/x", "aws:username", "carol", NULL), NONE);
	/* A user name with a wildcard in it is literal text, not a pattern. */
	ck_assert_int_eq(ev(p, "bob", false, "s3:PutObject", "home/alice/x", "aws:username", "*", NULL), NONE);
	ck_assert_int_eq(ev(p, "alice", false, "s3:ListBucket", NULL, "s3:prefix", "", "s3:delimiter", "/",
			    "s3:max-keys", "1000", NULL), DENY);
	ck_assert_int_eq(ev(p, "alice", false, "s3:ListBucket", NULL, "s3:prefix", "", "s3:delimiter", "/",
			    "s3:max-keys", "100", NULL), ALLOW);
	ck_assert(!s3_policy_is_public(p));
	s3_policy_free(p);
}
END_TEST

/* NotPrincipal with Deny ("AWS JSON policy elements: NotPrincipal"):
 * deny everyone but the named user and the owning account. */
START_TEST(test_example_not_principal_deny)
{
	struct s3_policy *p = P("{" V "\"Statement\":[{\"Effect\":\"Deny\",\"NotPrincipal\":{\"AWS\":["
				"\"arn:aws:iam::444455556666:user/Bob\",\"arn:aws:iam::444455556666:root\"]},"
				"\"Action\":\"s3:*\",\"Resource\":[\"arn:aws:s3:::examplebucket\",\"arn:aws:s3:::examplebucket/*\"]}]}");
	ck_assert_int_eq(ev(p, "Bob", false, "s3:GetObject", "k", NULL), NONE);
	ck_assert_int_eq(ev(p, "carol", true, "s3:DeleteBucket", NULL, NULL), NONE);  /* the owner's "account" */
	ck_assert_int_eq(ev(p, "alice", false, "s3:GetObject", "k", NULL), DENY);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", NULL), DENY);        /* anonymous too */
	ck_assert(!s3_policy_is_public(p));
	s3_policy_free(p);

	/* NotPrincipal with Allow grants everyone else: public. */
	p = P(stmt("\"Effect\":\"Allow\",\"NotPrincipal\":{\"AWS\":\"mallory\"},\"Action\":\"s3:GetObject\"," OK_R));
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", NULL), ALLOW);
	ck_assert_int_eq(ev(p, "mallory", false, "s3:GetObject", "k", NULL), NONE);
	ck_assert(s3_policy_is_public(p));
	s3_policy_free(p);
}
END_TEST

/* Tag keys: "ForAllValues" to limit which tags may be set, "ForAnyValue"
 * to require one (S3 User Guide, "Tagging and access control policies"). */
START_TEST(test_example_tag_keys)
{
	struct s3_policy *p = P("{" V "\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"alice\"},"
				"\"Action\":[\"s3:PutObjectTagging\"],\"Resource\":\"arn:aws:s3:::examplebucket/*\","
				"\"Condition\":{\"ForAllValues:StringLike\":{\"s3:RequestObjectTagKeys\":[\"Owner\",\"Creation*\"]}}},"
				"{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"bob\"},"
				"\"Action\":\"s3:PutObject\",\"Resource\":\"arn:aws:s3:::examplebucket/*\","
				"\"Condition\":{\"ForAnyValue:StringEquals\":{\"s3:RequestObjectTagKeys\":[\"Project\"]}}},"
				"{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:PutObject\",\"Resource\":\"arn:aws:s3:::examplebucket/*\","
				"\"Condition\":{\"ForAnyValue:StringNotLike\":{\"s3:RequestObjectTagKeys\":[\"Project\",\"Cost*\"]}}}]}");
	ck_assert_int_eq(ev(p, "alice", false, "s3:PutObjectTagging", "k", "s3:RequestObjectTagKeys", "Owner", NULL), ALLOW);
	ck_assert_int_eq(ev(p, "alice", false, "s3:PutObjectTagging", "k", "s3:RequestObjectTagKeys",
			    "Owner\x1f" "CreationDate", NULL), ALLOW);
	ck_assert_int_eq(ev(p, "alice", false, "s3:PutObjectTagging", "k", "s3:RequestObjectTagKeys",
			    "Owner\x1f" "Secret", NULL), NONE);
	/* ForAllValues over no keys at all is true (IAM: "also returns true
	 * if there are no context keys in the request"). */
	ck_assert_int_eq(ev(p, "alice", false, "s3:PutObjectTagging", "k", NULL), ALLOW);
	ck_assert_int_eq(ev(p, "bob", false, "s3:PutObject", "k", "s3:RequestObjectTagKeys", "Project\x1f" "CostCenter", NULL), ALLOW);
	ck_assert_int_eq(ev(p, "bob", false, "s3:PutObject", "k", "s3:RequestObjectTagKeys", "CostCenter", NULL), NONE);
	/* ForAnyValue over no keys is false: bob's Allow does not apply, nor the Deny. */
	ck_assert_int_eq(ev(p, "bob", false, "s3:PutObject", "k", NULL), NONE);
	/* Deny when any key is outside the allowed ones. */
	ck_assert_int_eq(ev(p, "bob", false, "s3:PutObject", "k", "s3:RequestObjectTagKeys", "Project\x1f" "Evil", NULL), DENY);
	ck_assert_int_eq(ev(p, "bob", false, "s3:PutObject", "k", "s3:RequestObjectTagKeys", "Project\x1f" "Cost1", NULL), ALLOW);
	s3_policy_free(p);
}
END_TEST

START_TEST(test_example_existing_tag_and_referer)
{
	struct s3_policy *p = P("{" V "\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\","
				"\"Action\":\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::examplebucket/*\","
				"\"Condition\":{\"StringEquals\":{\"s3:ExistingObjectTag/environment\":\"production\"}}},"
				"{\"Sid\":\"Referer\",\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
				"\"Resource\":\"arn:aws:s3:::examplebucket/site/*\",\"Condition\":{\"StringLike\":"
				"{\"aws:Referer\":[\"http://www.example.com/*\",\"http://example.com/*\"]}}}]}");
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "a", "s3:ExistingObjectTag/environment", "production", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "a", "s3:ExistingObjectTag/environment", "Production", NULL), NONE);
	/* The key's prefix is case-insensitive, the tag key is not. */
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "a", "S3:existingobjecttag/environment", "production", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "a", "s3:ExistingObjectTag/Environment", "production", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "site/i.png", "aws:Referer", "http://example.com/page", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "site/i.png", "aws:Referer", "http://evil.example/", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "site/i.png", NULL), NONE);
	/* Referer is not one of the keys that keep a grant from being public. */
	ck_assert(s3_policy_is_public(p));
	s3_policy_free(p);
}
END_TEST

/* ------------------------------------------------------------------ semantics */

START_TEST(test_deny_wins)
{
	const char *allow = "{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\","
			    "\"Resource\":[\"arn:aws:s3:::examplebucket\",\"arn:aws:s3:::examplebucket/*\"]}";
	const char *deny = "{\"Effect\":\"Deny\",\"Principal\":{\"AWS\":\"alice\"},"
			   "\"Action\":[\"s3:DeleteObject\",\"s3:DeleteBucket\"],"
			   "\"Resource\":[\"arn:aws:s3:::examplebucket\",\"arn:aws:s3:::examplebucket/*\"]}";
	char buf[1024];
	for (int order = 0; order < 2; order++) {
		snprintf(buf, sizeof(buf), "{" V "\"Statement\":[%s,%s]}", order ? deny : allow,
			 order ? allow : deny);
		struct s3_policy *p = P(buf);
		ck_assert_int_eq(ev(p, "alice", false, "s3:DeleteObject", "k", NULL), DENY);
		ck_assert_int_eq(ev(p, "alice", true, "s3:DeleteBucket", NULL, NULL), DENY);
		ck_assert_int_eq(ev(p, "alice", false, "s3:GetObject", "k", NULL), ALLOW);
		ck_assert_int_eq(ev(p, "bob", false, "s3:DeleteObject", "k", NULL), ALLOW);
		ck_assert_int_eq(ev(p, NULL, false, "s3:DeleteObject", "k", NULL), ALLOW);
		s3_policy_free(p);
	}
}
END_TEST

START_TEST(test_action_wildcards)
{
	struct s3_policy *p = P(stmt("\"Effect\":\"Allow\",\"Principal\":\"*\","
				     "\"Action\":[\"s3:Get*\",\"S3:PUTOBJECT\",\"s3:?eleteObject\"],"
				     "\"Resource\":[\"arn:aws:s3:::examplebucket\",\"arn:aws:s3:::examplebucket/*\"]"));
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:getobject", "k", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "S3:GETBUCKETACL", NULL, NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:PutObject", "k", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:DeleteObject", "k", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:DeleteObjectTagging", "k", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:PutObjectAcl", "k", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:ListBucket", NULL, NULL), NONE);
	s3_policy_free(p);

	p = P(stmt("\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"*\",\"Resource\":\"arn:aws:s3:::examplebucket/*\""));
	ck_assert_int_eq(ev(p, NULL, false, "s3:RestoreObject", "k", NULL), ALLOW);
	s3_policy_free(p);

	/* NotAction: everything but listing. */
	p = P(stmt("\"Effect\":\"Deny\",\"Principal\":\"*\",\"NotAction\":\"s3:List*\",\"Resource\":\"arn:aws:s3:::examplebucket\""));
	ck_assert_int_eq(ev(p, NULL, false, "s3:ListBucket", NULL, NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:DeleteBucket", NULL, NULL), DENY);
	/* Object requests are outside the statement's resource. */
	ck_assert_int_eq(ev(p, NULL, false, "s3:DeleteObject", "k", NULL), NONE);
	s3_policy_free(p);
}
END_TEST

START_TEST(test_resource_wildcards)
{
	struct s3_policy *p = P(stmt("\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
				     "\"Resource\":[\"arn:aws:s3:::examplebucket/*.jpg\",\"arn:aws:s3:::examplebucket/photo?.png\","
				     "\"arn:aws:s3:::examplebucket/a${*}b\",\"arn:aws:s3:::examplebucket/q${?}\"]"));
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "x/y.jpg", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", ".jpg", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "x/y.JPG", NULL), NONE);   /* case-sensitive */
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "x/y.jpgx", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "photo1.png", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "photo10.png", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "photo.png", NULL), NONE);
	/* '?' is one character, not one byte. */
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "photo\xc3\xa9.png", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "photo\xf0\x9f\x98\x80.png", NULL), ALLOW);
	/* ${*} and ${?} are the characters themselves. */
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "a*b", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "axb", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "q?", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "qx", NULL), NONE);
	s3_policy_free(p);

	/* A bucket pattern with a wildcard covers the bucket and its objects;
	 * the bucket's object pattern (bucket, slash, star) is not the bucket
	 * itself. */
	p = P(stmt("\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":[\"s3:ListBucket\",\"s3:GetObject\"],"
		   "\"Resource\":\"arn:aws:s3:::example*\""));
	ck_assert_int_eq(ev(p, NULL, false, "s3:ListBucket", NULL, NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", NULL), ALLOW);
	s3_policy_free(p);
	p = P(stmt("\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\",\"Resource\":\"arn:aws:s3:::examplebucket/*\""));
	ck_assert_int_eq(ev(p, NULL, false, "s3:ListBucket", NULL, NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", NULL), ALLOW);
	s3_policy_free(p);
	p = P(stmt("\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\",\"Resource\":\"*\""));
	ck_assert_int_eq(ev(p, NULL, false, "s3:ListBucket", NULL, NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", NULL), ALLOW);
	s3_policy_free(p);

	/* NotResource: everything but one prefix. */
	p = P(stmt("\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:PutObject\","
		   "\"NotResource\":\"arn:aws:s3:::examplebucket/uploads/*\""));
	ck_assert_int_eq(ev(p, NULL, false, "s3:PutObject", "uploads/a", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:PutObject", "etc/a", NULL), DENY);
	s3_policy_free(p);

	/* Keys with wildcard-like and odd bytes are matched literally. */
	p = P(stmt("\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
		   "\"Resource\":\"arn:aws:s3:::examplebucket/dir/*/end\""));
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "dir/x/y/z/end", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "dir//end", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "dir/end", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "dir/*/en", NULL), NONE);
	s3_policy_free(p);
}
END_TEST

START_TEST(test_ipv6)
{
	struct s3_policy *p = P(stmt("\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\"," OK_R ","
				     "\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":[\"2001:db8::/32\",\"::1\",\"10.0.0.0/8\","
				     "\"192.0.2.5/24\"]}}"));
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:SourceIp", "2001:db8:ffff::1", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:SourceIp", "2001:db9::1", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:SourceIp", "::1", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:SourceIp", "::2", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:SourceIp", "10.200.3.4", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:SourceIp", "::ffff:10.200.3.4", NULL), ALLOW);
	/* Host bits in the policy's CIDR are ignored: 192.0.2.5/24 is 192.0.2.0/24. */
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:SourceIp", "192.0.2.200", NULL), ALLOW);
	/* An IPv4 network never contains an IPv6 address that is not mapped. */
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:SourceIp", "::a00:1", NULL), NONE);
	s3_policy_free(p);

	p = P(stmt("\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\"," OK_R ","
		   "\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":\"0.0.0.0/0\"}}"));
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:SourceIp", "203.0.113.9", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:SourceIp", "2001:db8::1", NULL), NONE);
	s3_policy_free(p);
}
END_TEST

START_TEST(test_if_exists_and_null)
{
	/* Allow uploads whose ACL, if sent, is private. */
	struct s3_policy *p = P(stmt("\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"alice\"},\"Action\":\"s3:PutObject\"," OK_R ","
				     "\"Condition\":{\"StringEqualsIfExists\":{\"s3:x-amz-acl\":\"private\"}}"));
	ck_assert_int_eq(ev(p, "alice", false, "s3:PutObject", "k", NULL), ALLOW);
	ck_assert_int_eq(ev(p, "alice", false, "s3:PutObject", "k", "s3:x-amz-acl", "private", NULL), ALLOW);
	ck_assert_int_eq(ev(p, "alice", false, "s3:PutObject", "k", "s3:x-amz-acl", "public-read", NULL), NONE);
	s3_policy_free(p);

	/* The negated IfExists form in a Deny: an absent key makes any
	 * IfExists condition true ("If the key is not present, evaluate the
	 * condition element as true"), so the Deny applies then too. */
	p = P(stmt("\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:PutObject\"," OK_R ","
		   "\"Condition\":{\"StringNotEqualsIfExists\":{\"s3:x-amz-server-side-encryption\":\"AES256\"}}"));
	ck_assert_int_eq(ev(p, "alice", false, "s3:PutObject", "k", NULL), DENY);
	ck_assert_int_eq(ev(p, "alice", false, "s3:PutObject", "k", "s3:x-amz-server-side-encryption", "AES256", NULL), NONE);
	ck_assert_int_eq(ev(p, "alice", false, "s3:PutObject", "k", "s3:x-amz-server-side-encryption", "aws:kms", NULL), DENY);
	s3_policy_free(p);

	/* "Null": true = the key is absent (require encryption headers). */
	p = P(stmt("\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:PutObject\"," OK_R ","
		   "\"Condition\":{\"Null\":{\"s3:x-amz-server-side-encryption\":\"true\"}}"));
	ck_assert_int_eq(ev(p, "alice", false, "s3:PutObject", "k", NULL), DENY);
	ck_assert_int_eq(ev(p, "alice", false, "s3:PutObject", "k", "s3:x-amz-server-side-encryption", "AES256", NULL), NONE);
	ck_assert_int_eq(ev(p, "alice", false, "s3:PutObject", "k", "s3:x-amz-server-side-encryption", "", NULL), NONE);
	s3_policy_free(p);
	p = P(stmt("\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\"," OK_R ","
		   "\"Condition\":{\"Null\":{\"aws:username\":false}}"));
	ck_assert_int_eq(ev(p, "alice", false, "s3:GetObject", "k", "aws:username", "alice", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", NULL), NONE);
	s3_policy_free(p);

	/* A key given with no values counts as absent. */
	p = P(stmt("\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\"," OK_R ","
		   "\"Condition\":{\"StringLikeIfExists\":{\"aws:UserAgent\":\"curl/*\"}}"));
	struct s3_policy_kv kv = { .key = "aws:UserAgent", .vals = NULL, .n = 0 };
	struct s3_policy_req r = { .action = "s3:GetObject", .key = "k", .ctx = &kv, .n_ctx = 1 };
	ck_assert_int_eq(s3_policy_eval(p, &r), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:UserAgent", "curl/8.0", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:UserAgent", "wget", NULL), NONE);
	s3_policy_free(p);
}
END_TEST

START_TEST(test_numeric)
{
	struct s3_policy *p = P(stmt("\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:ListBucket\","
				     "\"Resource\":\"arn:aws:s3:::examplebucket\",\"Condition\":{"
				     "\"NumericLessThanEquals\":{\"s3:max-keys\":10},"
				     "\"NumericNotEquals\":{\"s3:max-keys\":[\"3\",\"4.0\"]},"
				     "\"NumericGreaterThan\":{\"s3:max-keys\":\"1.5\"}}"));
	ck_assert_int_eq(ev(p, NULL, false, "s3:ListBucket", NULL, "s3:max-keys", "10", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:ListBucket", NULL, "s3:max-keys", "2", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:ListBucket", NULL, "s3:max-keys", "11", NULL), NONE);
	/* NumericNotEquals with two values: neither may match (a logical AND). */
	ck_assert_int_eq(ev(p, NULL, false, "s3:ListBucket", NULL, "s3:max-keys", "3", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:ListBucket", NULL, "s3:max-keys", "4", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:ListBucket", NULL, "s3:max-keys", "1", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:ListBucket", NULL, "s3:max-keys", "1e1", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:ListBucket", NULL, "s3:max-keys", "ten", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:ListBucket", NULL, NULL), NONE);
	s3_policy_free(p);

	p = P(stmt("\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:ListBucket\","
		   "\"Resource\":\"arn:aws:s3:::examplebucket\",\"Condition\":{\"NumericEquals\":{\"s3:max-keys\":-0.5}}"));
	ck_assert_int_eq(ev(p, NULL, false, "s3:ListBucket", NULL, "s3:max-keys", "-.5", NULL), DENY);
	ck_assert_int_eq(ev(p, NULL, false, "s3:ListBucket", NULL, "s3:max-keys", "-0.50", NULL), DENY);
	ck_assert_int_eq(ev(p, NULL, false, "s3:ListBucket", NULL, "s3:max-keys", "0.5", NULL), NONE);
	s3_policy_free(p);
}
END_TEST

START_TEST(test_dates)
{
	/* Access only in a window; times in ISO 8601 with zones and in epoch seconds. */
	struct s3_policy *p = P(stmt("\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\"," OK_R ","
				     "\"Condition\":{\"DateGreaterThanEquals\":{\"aws:CurrentTime\":\"2024-05-01T12:00:00Z\"},"
				     "\"DateLessThan\":{\"aws:CurrentTime\":\"2024-06\"}}"));
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:CurrentTime", "2024-05-01T12:00:00Z", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:CurrentTime", "2024-05-01T11:59:59.999Z", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:CurrentTime", "2024-05-01T14:00:00+02:00", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:CurrentTime", "2024-05-01T07:00-05:00", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:CurrentTime", "2024-05-01T06:59-05:00", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:CurrentTime", "2024-05-31T23:59:59Z", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:CurrentTime", "2024-06-01T00:00:00Z", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:CurrentTime", "1714564800", NULL), ALLOW);  /* 2024-05-01T12:00Z */
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:CurrentTime", "1714564799", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:CurrentTime", "yesterday", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", NULL), NONE);
	s3_policy_free(p);

	p = P(stmt("\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\"," OK_R ","
		   "\"Condition\":{\"DateEquals\":{\"aws:EpochTime\":[\"2000-02-29\",1700000000]}}"));
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:EpochTime", "951782400", NULL), DENY);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:EpochTime", "1700000000", NULL), DENY);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:EpochTime", "2023-11-14T22:13:20Z", NULL), DENY);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:EpochTime", "1700000001", NULL), NONE);
	s3_policy_free(p);

	p = P(stmt("\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\"," OK_R ","
		   "\"Condition\":{\"DateNotEquals\":{\"aws:CurrentTime\":\"1969-12-31T23:59:59Z\"}}"));
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:CurrentTime", "1970-01-01T00:00:00Z", NULL), DENY);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:CurrentTime", "1969-12-31T23:59:59.000Z", NULL), NONE);
	s3_policy_free(p);
}
END_TEST

START_TEST(test_string_ops)
{
	struct s3_policy *p = P(stmt("\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\"," OK_R ","
				     "\"Condition\":{\"StringEqualsIgnoreCase\":{\"aws:UserAgent\":\"Boto3/1.0\"},"
				     "\"StringNotEquals\":{\"aws:PrincipalType\":[\"Anonymous\",\"AssumedRole\"]}}"));
	ck_assert_int_eq(ev(p, "alice", false, "s3:GetObject", "k", "aws:UserAgent", "BOTO3/1.0",
			    "aws:PrincipalType", "User", NULL), ALLOW);
	ck_assert_int_eq(ev(p, "alice", false, "s3:GetObject", "k", "aws:UserAgent", "boto3/1.*",
			    "aws:PrincipalType", "User", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:UserAgent", "Boto3/1.0",
			    "aws:PrincipalType", "Anonymous", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:UserAgent", "Boto3/1.0",
			    "aws:PrincipalType", "AssumedRole", NULL), NONE);
	s3_policy_free(p);

	/* StringEquals treats * literally; StringLike does not. Condition key
	 * names are case-insensitive, in the policy and in the request. */
	p = P(stmt("\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\"," OK_R ","
		   "\"Condition\":{\"StringEquals\":{\"AWS:REFERER\":\"a*\"}}"));
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:referer", "a*", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:referer", "ab", NULL), NONE);
	s3_policy_free(p);

	/* Operator names are matched without regard to case; ArnLike per part. */
	p = P(stmt("\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\"," OK_R ","
		   "\"Condition\":{\"arnlike\":{\"aws:SourceArn\":\"arn:aws:iam::*:user/dev-*\"}}"));
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:SourceArn", "arn:aws:iam::123:user/dev-a", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:SourceArn", "arn:aws:iam::123:user/ops-a", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:SourceArn", "arn:aws:iam:x:123:user/dev-a", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:SourceArn", "not-an-arn", NULL), NONE);
	s3_policy_free(p);
	/* A variable (with its own colon) inside one part of the ARN. */
	p = P(stmt("\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\"," OK_R ","
		   "\"Condition\":{\"ArnEquals\":{\"aws:SourceArn\":\"arn:aws:iam::${aws:PrincipalAccount}:user/x\"}}"));
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:SourceArn", "arn:aws:iam::42:user/x",
			    "aws:PrincipalAccount", "42", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", "aws:SourceArn", "arn:aws:iam::43:user/x",
			    "aws:PrincipalAccount", "42", NULL), NONE);
	s3_policy_free(p);
}
END_TEST

START_TEST(test_variables)
{
	/* Defaults, escapes; a multi-valued key does not resolve. */
	struct s3_policy *p = P(stmt("\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
				     "\"Resource\":[\"arn:aws:s3:::examplebucket/${aws:username, 'guest'}/*\","
				     "\"arn:aws:s3:::examplebucket/tag/${s3:RequestObjectTagKeys}\","
				     "\"arn:aws:s3:::examplebucket/q/${aws:Referer,'it''s'}\"]"));
	ck_assert_int_eq(ev(p, "alice", false, "s3:GetObject", "alice/x", "aws:username", "alice", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "guest/x", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "alice/x", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "tag/a", "s3:RequestObjectTagKeys", "a", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "tag/a", "s3:RequestObjectTagKeys", "a\x1f" "b", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "q/it's", NULL), ALLOW);
	s3_policy_free(p);

	/* Version 2008-10-17 (or none) has no variables: the text is literal. */
	p = P("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
	      "\"Resource\":\"arn:aws:s3:::examplebucket/${aws:username}/*\"}}");
	ck_assert_str_eq(s3_policy_version(p), "2008-10-17");
	ck_assert_int_eq(ev(p, "alice", false, "s3:GetObject", "alice/x", "aws:username", "alice", NULL), NONE);
	ck_assert_int_eq(ev(p, "alice", false, "s3:GetObject", "${aws:username}/x", NULL), ALLOW);
	s3_policy_free(p);

	/* A variable that resolves to nothing, after a star. */
	p = P(stmt("\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
		   "\"Resource\":\"arn:aws:s3:::examplebucket/x*${aws:Referer}\""));
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "xyz", "aws:Referer", "", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "x", "aws:Referer", "", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "xyz", "aws:Referer", "z", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "xyz", "aws:Referer", "y", NULL), NONE);
	s3_policy_free(p);
	p = P(stmt("\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
		   "\"Resource\":\"arn:aws:s3:::examplebucket/x*${aws:Referer}*\""));
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "x", "aws:Referer", "", NULL), ALLOW);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "x", "aws:Referer", "q", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "xaqb", "aws:Referer", "q", NULL), ALLOW);
	s3_policy_free(p);

	/* A malformed variable is literal text. */
	p = P(stmt("\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
		   "\"Resource\":\"arn:aws:s3:::examplebucket/${oops\""));
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "${oops", NULL), ALLOW);
	s3_policy_free(p);

	/* Variables in condition values. */
	p = P(stmt("\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:ListBucket\","
		   "\"Resource\":\"arn:aws:s3:::examplebucket\","
		   "\"Condition\":{\"StringEquals\":{\"s3:prefix\":\"${aws:username}/\"}}"));
	ck_assert_int_eq(ev(p, "bob", false, "s3:ListBucket", NULL, "s3:prefix", "bob/", "aws:username", "bob", NULL), ALLOW);
	ck_assert_int_eq(ev(p, "bob", false, "s3:ListBucket", NULL, "s3:prefix", "eve/", "aws:username", "bob", NULL), NONE);
	s3_policy_free(p);
}
END_TEST

static int collect(const char *user, void *arg)
{
	char *out = arg;
	strcat(out, user);
	strcat(out, ",");
	return strcmp(user, "stop") == 0 ? 7 : 0;
}

START_TEST(test_principals)
{
	struct s3_policy *p = P("{" V "\"Statement\":["
				"{\"Sid\":\"1\",\"Effect\":\"Allow\",\"Principal\":{\"AWS\":[\"alice\","
				"\"arn:aws:iam::111122223333:user/division/team/bob\"],\"CanonicalUser\":\"carol\"},"
				"\"Action\":\"s3:GetObject\"," OK_R "},"
				"{\"Sid\":\"2\",\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"arn:aws:iam::111122223333:root\"},"
				"\"Action\":\"s3:PutObject\"," OK_R "},"
				"{\"Sid\":\"3\",\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"444455556666\",\"Service\":"
				"[\"logging.s3.amazonaws.com\"]},\"Action\":\"s3:DeleteObject\"," OK_R "},"
				"{\"Sid\":\"4\",\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"*\"},"
				"\"Action\":\"s3:GetObjectTagging\"," OK_R "},"
				"{\"Sid\":\"5\",\"Effect\":\"Allow\",\"Principal\":{\"AWS\":[\"alice\",\"dave\"]},"
				"\"Action\":\"s3:GetObjectAcl\"," OK_R "}]}");
	ck_assert_int_eq(ev(p, "alice", false, "s3:GetObject", "k", NULL), ALLOW);
	ck_assert_int_eq(ev(p, "bob", false, "s3:GetObject", "k", NULL), ALLOW);
	ck_assert_int_eq(ev(p, "carol", false, "s3:GetObject", "k", NULL), ALLOW);
	ck_assert_int_eq(ev(p, "Alice", false, "s3:GetObject", "k", NULL), NONE);   /* names are exact */
	ck_assert_int_eq(ev(p, "division", false, "s3:GetObject", "k", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObject", "k", NULL), NONE);
	/* ":root" and a bare account id: the bucket owner only. */
	ck_assert_int_eq(ev(p, "erin", true, "s3:PutObject", "k", NULL), ALLOW);
	ck_assert_int_eq(ev(p, "alice", false, "s3:PutObject", "k", NULL), NONE);
	ck_assert_int_eq(ev(p, NULL, true, "s3:PutObject", "k", NULL), NONE);
	ck_assert_int_eq(ev(p, "erin", true, "s3:DeleteObject", "k", NULL), ALLOW);
	ck_assert_int_eq(ev(p, "erin", false, "s3:DeleteObject", "k", NULL), NONE);  /* Service never */
	/* {"AWS": "*"} is everyone, anonymous included. */
	ck_assert_int_eq(ev(p, NULL, false, "s3:GetObjectTagging", "k", NULL), ALLOW);
	ck_assert(s3_policy_is_public(p));

	char names[256] = "";
	ck_assert_int_eq(s3_policy_users(p, collect, names), 0);
	ck_assert_str_eq(names, "alice,bob,carol,dave,");
	s3_policy_free(p);

	/* {"CanonicalUser": <64 hex>} is the id ACLs show as Owner ID
	 * (s3_acl_user_id_hex), matched against the request's. */
	char frank[S3_ID_HEX + 1], gina[S3_ID_HEX + 1], doc[512];
	s3_acl_user_id_hex("frank", frank);
	s3_acl_user_id_hex("gina", gina);
	snprintf(doc, sizeof(doc), "{" V "\"Statement\":{\"Effect\":\"Allow\",\"Principal\":"
		 "{\"CanonicalUser\":\"%s\"},\"Action\":\"s3:GetObject\"," OK_R "}}", frank);
	p = P(doc);
	struct s3_policy_req rq = { .principal = "frank", .principal_id = frank,
				    .action = "s3:GetObject", .key = "k" };
	ck_assert_int_eq(s3_policy_eval(p, &rq), ALLOW);
	rq.principal = "gina";
	rq.principal_id = gina;
	ck_assert_int_eq(s3_policy_eval(p, &rq), NONE);
	rq.principal = NULL;       /* anonymous never matches a user */
	rq.principal_id = frank;
	ck_assert_int_eq(s3_policy_eval(p, &rq), NONE);
	s3_policy_free(p);

	p = P(stmt("\"Effect\":\"Allow\",\"Principal\":{\"AWS\":[\"a\",\"stop\",\"z\"]},\"Action\":\"s3:GetObject\"," OK_R));
	names[0] = '\0';
	ck_assert_int_eq(s3_policy_users(p, collect, names), 7);
	ck_assert_str_eq(names, "a,stop,");
	ck_assert(!s3_policy_is_public(p));
	s3_policy_free(p);
}
END_TEST

/* S3 User Guide, "The meaning of public": the examples it calls public
 * and the ways it shows of making them non-public. */
START_TEST(test_is_public)
{
	static const struct {
		const char *cond;       /* Condition member, or "" */
		bool pub;
	} cases[] = {
		{ "", true },
		{ ",\"Condition\":{\"StringLike\":{\"aws:SourceVpc\":\"vpc-*\"}}", true },
		{ ",\"Condition\":{\"StringEquals\":{\"aws:SourceVpc\":\"vpc-91237329\"}}", false },
		{ ",\"Condition\":{\"StringEquals\":{\"aws:SourceVpc\":[\"vpc-1\",\"vpc-?\"]}}", true },
		{ ",\"Condition\":{\"StringEquals\":{\"aws:SourceVpce\":\"vpce-1a2b3c4d\"}}", false },
		{ ",\"Condition\":{\"StringEquals\":{\"aws:SourceAccount\":\"111122223333\"}}", false },
		{ ",\"Condition\":{\"StringEquals\":{\"aws:PrincipalOrgID\":\"o-abc\"}}", false },
		{ ",\"Condition\":{\"StringEquals\":{\"aws:userid\":\"AIDAEXAMPLE\"}}", false },
		{ ",\"Condition\":{\"StringLike\":{\"aws:userid\":\"AROLEID:*\"}}", true },
		{ ",\"Condition\":{\"StringEquals\":{\"aws:SourceAccount\":\"${aws:username}\"}}", true },
		{ ",\"Condition\":{\"ArnEquals\":{\"aws:SourceArn\":\"arn:aws:cloudfront::111122223333:distribution/E1\"}}", false },
		{ ",\"Condition\":{\"ArnLike\":{\"aws:SourceArn\":\"arn:aws:cloudfront::*:distribution/*\"}}", true },
		{ ",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":\"192.0.2.0/24\"}}", false },
		{ ",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":[\"192.0.2.0/24\",\"10.0.0.0/8\"]}}", false },
		{ ",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":\"0.0.0.0/1\"}}", true },
		{ ",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":[\"192.0.2.0/24\",\"0.0.0.0/0\"]}}", true },
		{ ",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":\"2001:db8::/32\"}}", false },
		{ ",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":\"2001::/16\"}}", true },
		{ ",\"Condition\":{\"NotIpAddress\":{\"aws:SourceIp\":\"192.0.2.0/24\"}}", true },
		{ ",\"Condition\":{\"StringNotEquals\":{\"aws:SourceVpc\":\"vpc-1\"}}", true },
		{ ",\"Condition\":{\"StringEqualsIfExists\":{\"aws:SourceVpc\":\"vpc-1\"}}", true },
		{ ",\"Condition\":{\"ForAllValues:StringEquals\":{\"aws:SourceVpc\":\"vpc-1\"}}", true },
		{ ",\"Condition\":{\"Bool\":{\"aws:SecureTransport\":\"true\"}}", true },
		{ ",\"Condition\":{\"StringEquals\":{\"aws:username\":\"alice\"}}", true },
		{ ",\"Condition\":{\"Bool\":{\"aws:SecureTransport\":\"true\"},\"StringEquals\":{\"aws:SourceVpc\":\"vpc-1\"}}", false },
	};
	char buf[1024];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(buf, sizeof(buf), "{" V "\"Statement\":[{\"Principal\":\"*\",\"Resource\":\"arn:aws:s3:::examplebucket/*\","
			 "\"Action\":\"s3:PutObject\",\"Effect\":\"Allow\"%s}]}", cases[i].cond);
		struct s3_policy *p = P(buf);
		ck_assert_msg(s3_policy_is_public(p) == cases[i].pub, "case %zu: %s", i, cases[i].cond);
		s3_policy_free(p);
	}
	/* A grant to a named user, or a Deny to everyone, is not public. */
	struct s3_policy *p = P(stmt("\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"alice\"},\"Action\":\"s3:*\"," OK_R));
	ck_assert(!s3_policy_is_public(p));
	s3_policy_free(p);
	p = P(stmt("\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:*\"," OK_R));
	ck_assert(!s3_policy_is_public(p));
	s3_policy_free(p);
	ck_assert(!s3_policy_is_public(NULL));
}
END_TEST

START_TEST(test_mentions_key)
{
	struct s3_policy *p = P("{" V "\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\","
				"\"Action\":\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::examplebucket/${aws:username}/*\","
				"\"Condition\":{\"StringEquals\":{\"s3:ExistingObjectTag/Env\":\"prod\"},"
				"\"ArnLike\":{\"aws:SourceArn\":\"arn:aws:s3:::${aws:Referer}:*:*:*\"}}}]}");
	ck_assert(s3_policy_mentions_key(p, "s3:ExistingObjectTag/"));
	ck_assert(s3_policy_mentions_key(p, "s3:existingobjecttag/Env"));
	ck_assert(!s3_policy_mentions_key(p, "s3:ExistingObjectTag/env"));
	ck_assert(s3_policy_mentions_key(p, "AWS:USERNAME"));
	ck_assert(s3_policy_mentions_key(p, "aws:SourceArn"));
	ck_assert(s3_policy_mentions_key(p, "aws:Referer"));
	ck_assert(!s3_policy_mentions_key(p, "aws:SourceIp"));
	ck_assert(!s3_policy_mentions_key(p, "s3:RequestObjectTag/"));
	ck_assert(!s3_policy_mentions_key(NULL, "aws:SourceIp"));
	s3_policy_free(p);
}
END_TEST

START_TEST(test_action_table)
{
	for (int a = 0; a < S3_ACTION__COUNT; a++)
		ck_assert_msg(s3_policy_action_valid(s3_policy_action_name((enum s3_action)a)), "%s",
			      s3_policy_action_name((enum s3_action)a));
	ck_assert_str_eq(s3_policy_action_name(S3_ACTION_GET_OBJECT), "s3:GetObject");
	ck_assert_ptr_null(s3_policy_action_name(S3_ACTION__COUNT));
	ck_assert(s3_policy_action_valid("S3:getobject"));
	ck_assert(s3_policy_action_valid("s3:GetBucketCORS"));
	ck_assert(!s3_policy_action_valid("s3:Get*"));
	ck_assert(!s3_policy_action_valid("GetObject"));
	ck_assert(!s3_policy_action_valid("s3:DeleteBucketTagging"));
	ck_assert(!s3_policy_action_valid("s3:"));
	/* Each IOLake action can be granted in a policy on its resource type. */
	for (int a = 0; a < S3_ACTION__COUNT; a++) {
		const char *name = s3_policy_action_name((enum s3_action)a);
		char buf[512];
		snprintf(buf, sizeof(buf), "{" V "\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\","
			 "\"Action\":\"%s\",\"Resource\":[\"arn:aws:s3:::examplebucket\",\"arn:aws:s3:::examplebucket/*\"]}}", name);
		char err[128];
		struct s3_policy *p;
		int rc = s3_policy_parse(buf, strlen(buf), BUCKET, &p, err, sizeof(err));
		if (a == S3_ACTION_LIST_ALL_MY_BUCKETS) {
			ck_assert_int_eq(rc, -EBADMSG);     /* an account-level action */
			continue;
		}
		ck_assert_msg(rc == 0, "%s: %s", name, err);
		bool object = strstr(name, "Object") || strstr(name, "Multipart");
		if (a == S3_ACTION_LIST_BUCKET_MULTIPART_UPLOADS)
			object = false;
		ck_assert_int_eq(ev(p, NULL, false, name, object ? "k" : NULL, NULL), ALLOW);
		s3_policy_free(p);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("policy");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_parse_errors);
	tcase_add_test(tc, test_size_limit);
	tcase_add_test(tc, test_example_public_read_prefix);
	tcase_add_test(tc, test_example_ip_allow);
	tcase_add_test(tc, test_example_ip_deny_ipv6);
	tcase_add_test(tc, test_example_secure_transport);
	tcase_add_test(tc, test_example_bucket_owner_full_control);
	tcase_add_test(tc, test_example_list_prefix);
	tcase_add_test(tc, test_example_not_principal_deny);
	tcase_add_test(tc, test_example_tag_keys);
	tcase_add_test(tc, test_example_existing_tag_and_referer);
	tcase_add_test(tc, test_deny_wins);
	tcase_add_test(tc, test_action_wildcards);
	tcase_add_test(tc, test_resource_wildcards);
	tcase_add_test(tc, test_ipv6);
	tcase_add_test(tc, test_if_exists_and_null);
	tcase_add_test(tc, test_numeric);
	tcase_add_test(tc, test_dates);
	tcase_add_test(tc, test_string_ops);
	tcase_add_test(tc, test_variables);
	tcase_add_test(tc, test_principals);
	tcase_add_test(tc, test_is_public);
	tcase_add_test(tc, test_mentions_key);
	tcase_add_test(tc, test_action_table);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
