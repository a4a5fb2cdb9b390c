/*
 * fuzz_policy.c — libFuzzer target for gateway/s3_policy (and the
 * common/json parser under it).
 *
 * Input: the whole input is a bucket policy for bucket "examplebucket",
 * copied into an exactly-sized malloc'd buffer (no NUL terminator), so a
 * read past the end is an ASan report. When it parses, it is evaluated
 * for a fixed set of requests (anonymous and named principals, the owner,
 * bucket and object actions, single- and multi-valued condition keys,
 * IPv4 and IPv6 sources, dates, numbers) plus requests whose key and
 * condition values are bytes of the input itself, and is_public and the
 * user list are computed. Checked: a failed parse leaves *out NULL and a
 * non-empty message; each verdict is one of the three, the same when
 * asked twice; a policy without an Allow never allows and one without a
 * Deny never denies (read from the document independently of the
 * engine); is_public implies an Allow exists. Leaks are LeakSanitizer's.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/s3_policy.h"

static const char *const one_ip4[] = { "192.0.2.7" };
static const char *const one_ip6[] = { "2001:db8:1234:5678::1" };
static const char *const f[] = { "false" };
static const char *const t[] = { "true" };
static const char *const now[] = { "2024-05-01T12:00:00Z" };
static const char *const epoch[] = { "1714564800" };
static const char *const prefix[] = { "home/alice/" };
static const char *const slash[] = { "/" };
static const char *const maxk[] = { "1000" };
static const char *const acl[] = { "bucket-owner-full-control" };
static const char *const alice[] = { "alice" };
static const char *const tagkeys[] = { "Project", "Owner", "CostCenter" };
static const char *const tag[] = { "production" };
static const char *const ua[] = { "aws-cli/2.15 Python/3.11" };

static const struct s3_policy_kv ctx_full[] = {
	{ "aws:SourceIp", one_ip4, 1 },
	{ "aws:SecureTransport", f, 1 },
	{ "aws:CurrentTime", now, 1 },
	{ "aws:EpochTime", epoch, 1 },
	{ "s3:prefix", prefix, 1 },
	{ "s3:delimiter", slash, 1 },
	{ "s3:max-keys", maxk, 1 },
	{ "s3:x-amz-acl", acl, 1 },
	{ "aws:username", alice, 1 },
	{ "aws:userid", alice, 1 },
	{ "s3:RequestObjectTagKeys", tagkeys, 3 },
	{ "s3:ExistingObjectTag/environment", tag, 1 },
	{ "aws:UserAgent", ua, 1 },
};

static const struct s3_policy_kv ctx_v6[] = {
	{ "aws:SourceIp", one_ip6, 1 },
	{ "aws:SecureTransport", t, 1 },
	{ "s3:RequestObjectTagKeys", NULL, 0 },
};

static const struct s3_policy_req reqs[] = {
	{ NULL, false, "s3:GetObject", "public/a.jpg", ctx_full, 13 },
	{ NULL, false, "s3:ListBucket", NULL, ctx_full, 13 },
	{ "alice", false, "s3:PutObject", "home/alice/x", ctx_full, 13 },
	{ "alice", false, "s3:GetObject", "home/alice/x", ctx_v6, 3 },
	{ "bob", true, "s3:DeleteBucket", NULL, NULL, 0 },
	{ "Dave", false, "s3:PutObjectAcl", "k", ctx_v6, 3 },
	{ "carol", true, "s3:GetBucketPolicy", NULL, ctx_full, 13 },
	{ NULL, false, "s3:RestoreObject", "", NULL, 0 },
};

/* May the document hold a statement with this Effect? Read from the
 * bytes, independently of the engine: the word appears, or some \u
 * escape could spell it. */
static bool mentions(const char *b, size_t n, const char *value)
{
	return memmem(b, n, "\\u", 2) || memmem(b, n, value, strlen(value));
}

static int count_user(const char *user, void *arg)
{
	if (!user || !*user)
		abort();
	(*(int *)arg)++;
	return 0;
}

static void check_verdict(const struct s3_policy *p, const struct s3_policy_req *r, bool may_allow,
			  bool may_deny)
{
	enum s3_policy_verdict v = s3_policy_eval(p, r);
	if (v != S3_POLICY_NONE && v != S3_POLICY_ALLOW && v != S3_POLICY_DENY)
		abort();
	if (v != s3_policy_eval(p, r))
		abort();
	if ((v == S3_POLICY_ALLOW && !may_allow) || (v == S3_POLICY_DENY && !may_deny))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *b = malloc(size ? size : 1);
	memcpy(b, data, size);
	struct s3_policy *p = (struct s3_policy *)&p;   /* must be reset */
	char err[160];
	err[0] = '\0';
	int rc = s3_policy_parse(b, size, "examplebucket", &p, err, sizeof(err));
	if (rc) {
		if (p || !err[0] || (rc != -EBADMSG && rc != -E2BIG && rc != -ENOMEM))
			abort();
		free(b);
		return 0;
	}
	bool may_allow = mentions(b, size, "Allow");
	bool may_deny = mentions(b, size, "Deny");
	for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++)
		check_verdict(p, &reqs[i], may_allow, may_deny);

	/* Requests made of the input's own bytes: keys, values, actions. */
	char s1[96], s2[96];
	size_t n1 = size < sizeof(s1) - 1 ? size : sizeof(s1) - 1;
	size_t n2 = size > n1 ? size - n1 : 0;
	if (n2 > sizeof(s2) - 1)
		n2 = sizeof(s2) - 1;
	memcpy(s1, b + size - n1, n1);
	memcpy(s2, b + (size - n1) / 2, n2);
	for (size_t i = 0; i < n1; i++)
		s1[i] = s1[i] ? s1[i] : '_';
	for (size_t i = 0; i < n2; i++)
		s2[i] = s2[i] ? s2[i] : '_';
	s1[n1] = s2[n2] = '\0';
	const char *v1[] = { s1 }, *v12[] = { s1, s2 };
	struct s3_policy_kv kv[] = {
		{ "aws:SourceIp", v1, 1 },    { "aws:CurrentTime", v1, 1 }, { "s3:prefix", v12, 2 },
		{ "aws:username", v1, 1 },    { "s3:max-keys", v1, 1 },     { "aws:Referer", v12, 2 },
		{ s2, v1, 1 },                { "aws:SecureTransport", v1, 1 },
	};
	const struct s3_policy_req fr[] = {
		{ s2, false, "s3:GetObject", s1, kv, 8 },
		{ s1, true, s2, NULL, kv, 8 },
		{ NULL, false, "s3:ListBucket", NULL, kv, 8 },
	};
	for (size_t i = 0; i < sizeof(fr) / sizeof(fr[0]); i++)
		check_verdict(p, &fr[i], may_allow, may_deny);

	if (s3_policy_is_public(p) && !may_allow)
		abort();
	int users = 0;
	if (s3_policy_users(p, count_user, &users) != 0)
		abort();
	(void)s3_policy_mentions_key(p, "s3:ExistingObjectTag/");
	(void)s3_policy_mentions_key(p, s2);
	const char *ver = s3_policy_version(p);
	if (strcmp(ver, "2012-10-17") != 0 && strcmp(ver, "2008-10-17") != 0)
		abort();
	s3_policy_free(p);
	free(b);
	return 0;
}
