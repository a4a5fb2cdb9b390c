/*
 * test_s3_policy_wiring.c — the pieces that wire bucket policies and
 * PublicAccessBlock into the gateway's one authorization point:
 *   - s3_policy_cache: hits by (bucket, generation), a new generation is a
 *     new entry, LRU eviction at the bound, a broken document cached as
 *     broken;
 *   - s3_policy_ctx: which condition keys a request carries, and when;
 *   - s3_authz_decide with a compiled policy: AWS's order (admin, the
 *     owner's policy operations, explicit Deny, the missing-object rule,
 *     Allow, ACLs), the four PublicAccessBlock settings' effect on the
 *     decision, fail-closed on a broken policy;
 *   - s3_pab: public ACLs, the configuration XML.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "gateway/s3_authz.h"
#include "gateway/s3_pab.h"
#include "gateway/s3_policy.h"
#include "gateway/s3_policy_cache.h"
#include "gateway/s3_policy_ctx.h"

/* ------------------------------------------------------------ cache */

#define DOC_PUB "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\"," \
		"\"Principal\":\"*\",\"Action\":\"s3:GetObject\"," \
		"\"Resource\":\"arn:aws:s3:::%s/pub/*\"}]}"

static char *doc_for(const char *bucket, char *buf, size_t cap)
{
	snprintf(buf, cap,
		 "{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"bob\"},"
		 "\"Action\":\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::%s/*\"}]}",
		 bucket);
	return buf;
}

START_TEST(test_cache_hits_and_generations)
{
	struct s3_policy_cache *c = s3_policy_cache_new(4);
	ck_assert_ptr_nonnull(c);
	char d[512];
	doc_for("b1", d, sizeof(d));
	const struct s3_policy_entry *e1 = s3_policy_cache_get(c, "b1", 7, d, strlen(d));
	ck_assert_ptr_nonnull(e1);
	ck_assert_ptr_nonnull(e1->policy);
	ck_assert(!e1->broken);
	ck_assert(!e1->is_public);
	const struct s3_policy *p1 = e1->policy;
	/* Same (bucket, generation): the same compiled policy, not parsed. */
	const struct s3_policy_entry *again = s3_policy_cache_get(c, "b1", 7, d, strlen(d));
	ck_assert_ptr_eq(again->policy, p1);
	struct s3_policy_cache_stats st;
	s3_policy_cache_stats(c, &st);
	ck_assert_uint_eq(st.hits, 1);
	ck_assert_uint_eq(st.misses, 1);
	/* A new generation is another document: parsed again. */
	const struct s3_policy_entry *e2 = s3_policy_cache_get(c, "b1", 8, d, strlen(d));
	ck_assert_ptr_nonnull(e2->policy);
	s3_policy_cache_stats(c, &st);
	ck_assert_uint_eq(st.misses, 2);
	ck_assert_uint_eq(st.entries, 2);
	/* A public one says so. */
	char pub[512];
	snprintf(pub, sizeof(pub), DOC_PUB, "b2");
	const struct s3_policy_entry *ep = s3_policy_cache_get(c, "b2", 1, pub, strlen(pub));
	ck_assert(ep->is_public);
	s3_policy_cache_free(c);
}
END_TEST

START_TEST(test_cache_lru_bound)
{
	struct s3_policy_cache *c = s3_policy_cache_new(2);
	char da[512], db[512], dc[512];
	doc_for("a", da, sizeof(da));
	doc_for("b", db, sizeof(db));
	doc_for("c", dc, sizeof(dc));
	s3_policy_cache_get(c, "a", 1, da, strlen(da));
	s3_policy_cache_get(c, "b", 1, db, strlen(db));
	s3_policy_cache_get(c, "a", 1, da, strlen(da));   /* a is now the most recent */
	s3_policy_cache_get(c, "c", 1, dc, strlen(dc));   /* evicts b */
	struct s3_policy_cache_stats st;
	s3_policy_cache_stats(c, &st);
	ck_assert_uint_eq(st.evictions, 1);
	ck_assert_uint_eq(st.entries, 2);
	uint64_t misses = st.misses;
	s3_policy_cache_get(c, "a", 1, da, strlen(da));
	s3_policy_cache_stats(c, &st);
	ck_assert_uint_eq(st.misses, misses);             /* a stayed */
	s3_policy_cache_get(c, "b", 1, db, strlen(db));
	s3_policy_cache_stats(c, &st);
	ck_assert_uint_eq(st.misses, misses + 1);         /* b was evicted */
	ck_assert_uint_eq(st.evictions, 2);               /* ... and evicted c */
	/* Many buckets through a small cache: bounded, every answer right. */
	for (int i = 0; i < 200; i++) {
		char name[16], d[512];
		snprintf(name, sizeof(name), "bk%d", i % 7);
		doc_for(name, d, sizeof(d));
		const struct s3_policy_entry *e = s3_policy_cache_get(c, name, (uint64_t)(i % 3), d,
								      strlen(d));
		ck_assert_ptr_nonnull(e->policy);
		struct s3_policy_req r = { .principal = "bob", .action = "s3:GetObject", .key = "k" };
		ck_assert_int_eq(s3_policy_eval(e->policy, &r), S3_POLICY_ALLOW);
	}
	s3_policy_cache_stats(c, &st);
	ck_assert_uint_le(st.entries, 2);
	s3_policy_cache_free(c);
}
END_TEST

START_TEST(test_cache_broken)
{
	struct s3_policy_cache *c = s3_policy_cache_new(2);
	const char *bad = "{\"Statement\": 3}";
	const struct s3_policy_entry *e = s3_policy_cache_get(c, "x", 1, bad, strlen(bad));
	ck_assert_ptr_nonnull(e);
	ck_assert(e->broken);
	ck_assert_ptr_null(e->policy);
	struct s3_policy_cache_stats st;
	s3_policy_cache_stats(c, &st);
	ck_assert_uint_eq(st.broken, 1);
	/* Cached as broken: not parsed again. */
	e = s3_policy_cache_get(c, "x", 1, bad, strlen(bad));
	ck_assert(e->broken);
	s3_policy_cache_stats(c, &st);
	ck_assert_uint_eq(st.misses, 1);
	s3_policy_cache_free(c);
}
END_TEST

/* ------------------------------------------------------------ context */

static const char *ctx_val(const struct s3_policy_ctx *c, const char *key)
{
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->kv[i].key, key) == 0)
			return c->kv[i].vals[0];
	return NULL;
}

START_TEST(test_ctx_keys)
{
	struct s3_policy_ctx c;
	struct s3_policy_ctx_in in = { .user = "bob", .peer_addr = "127.0.0.1", .tls = false,
				       .action = S3_ACT_ListBucket, .prefix = "", .delimiter = "/",
				       .x_amz_acl = "public-read", .x_amz_acl_len = 11,
				       .now_ms = 1714564800123ull };
	s3_policy_ctx_build(&c, &in);
	ck_assert_str_eq(ctx_val(&c, "aws:SourceIp"), "127.0.0.1");
	ck_assert_str_eq(ctx_val(&c, "aws:SecureTransport"), "false");
	ck_assert_str_eq(ctx_val(&c, "aws:username"), "bob");
	ck_assert_str_eq(ctx_val(&c, "aws:PrincipalType"), "User");
	ck_assert_str_eq(ctx_val(&c, "aws:CurrentTime"), "2024-05-01T12:00:00Z");
	ck_assert_str_eq(ctx_val(&c, "aws:EpochTime"), "1714564800");
	ck_assert_str_eq(ctx_val(&c, "s3:prefix"), "");    /* sent empty: present */
	ck_assert_str_eq(ctx_val(&c, "s3:delimiter"), "/");
	ck_assert_ptr_null(ctx_val(&c, "s3:max-keys"));     /* not sent */
	ck_assert_ptr_null(ctx_val(&c, "s3:x-amz-acl"));    /* not a PUT */

	/* Anonymous, over TLS, a PUT with a canned ACL; no peer known. */
	in = (struct s3_policy_ctx_in){ .user = "", .peer_addr = "", .tls = true,
					.action = S3_ACT_PutObject, .prefix = "p",
					.x_amz_acl = "public-read-write-and-more", .x_amz_acl_len = 17 };
	s3_policy_ctx_build(&c, &in);
	ck_assert_ptr_null(ctx_val(&c, "aws:SourceIp"));
	ck_assert_str_eq(ctx_val(&c, "aws:SecureTransport"), "true");
	ck_assert_ptr_null(ctx_val(&c, "aws:username"));
	ck_assert_str_eq(ctx_val(&c, "aws:PrincipalType"), "Anonymous");
	ck_assert_ptr_null(ctx_val(&c, "s3:prefix"));       /* not a listing */
	ck_assert_str_eq(ctx_val(&c, "s3:x-amz-acl"), "public-read-write");
	ck_assert_uint_le(c.n, S3_POLICY_CTX_MAX);
}
END_TEST

/* ------------------------------------------------------------ decisions */

static struct s3_policy *compile(const char *bucket, const char *json)
{
	struct s3_policy *p = NULL;
	char err[256];
	int rc = s3_policy_parse(json, strlen(json), bucket, &p, err, sizeof(err));
	ck_assert_msg(rc == 0, "parse: %s", err);
	return p;
}

struct ask {
	const char *user;          /* NULL: anonymous */
	bool admin;
	enum s3_authz_action act;
	const char *key;
	enum s3_canned bacl, oacl;
	bool have_obj;
	const struct s3_policy *pol;
	bool broken;
	struct s3_pab pab;
	const char *peer;
};

/* A bucket "bkt" of alice's under ObjectWriter; objects alice's. */
static enum s3_verdict decide(const struct ask *a)
{
	struct s3_principal p;
	s3_principal_init(&p, a->user, a->admin);
	struct s3_acl ba, oa;
	s3_acl_canned(&ba, a->bacl ? a->bacl : S3_CANNED_PRIVATE);
	s3_acl_canned(&oa, a->oacl ? a->oacl : S3_CANNED_PRIVATE);
	struct s3_authz_rec orec = { .owner = "alice", .acl = &oa };
	struct s3_policy_ctx ctx;
	struct s3_policy_ctx_in in = { .user = a->user, .peer_addr = a->peer ? a->peer : "127.0.0.1",
				       .action = a->act, .now_ms = 1714564800000ull };
	s3_policy_ctx_build(&ctx, &in);
	struct s3_authz_req q = {
		.who = &p, .action = a->act, .bucket_name = "bkt", .key = a->key,
		.bucket = { .owner = "alice", .acl = &ba }, .ownership = S3_OWN_WRITER,
		.object = a->have_obj ? &orec : NULL,
		.policy = a->pol, .policy_public = a->pol && s3_policy_is_public(a->pol),
		.policy_broken = a->broken, .pab = a->pab, .ctx = ctx.kv, .n_ctx = ctx.n,
	};
	return s3_authz_decide(&q);
}

#define A S3_ALLOW
#define D S3_DENY

START_TEST(test_order)
{
	struct s3_policy *p = compile(
		"bkt",
		"{\"Version\":\"2012-10-17\",\"Statement\":["
		"{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
		" \"Resource\":\"arn:aws:s3:::bkt/pub/*\"},"
		"{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"bob\"},"
		" \"Action\":[\"s3:PutObject\",\"s3:DeleteObject\"],\"Resource\":\"arn:aws:s3:::bkt/bob/*\"},"
		"{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:*\","
		" \"Resource\":\"arn:aws:s3:::bkt/secret/*\"}]}");
	/* Allow on one prefix; nothing else. */
	ck_assert_int_eq(decide(&(struct ask){ .act = S3_ACT_GetObject, .key = "pub/a",
					       .have_obj = true, .pol = p }), A);
	ck_assert_int_eq(decide(&(struct ask){ .act = S3_ACT_GetObject, .key = "priv/a",
					       .have_obj = true, .pol = p }), D);
	ck_assert_int_eq(decide(&(struct ask){ .act = S3_ACT_ListBucket, .pol = p }), D);
	ck_assert_int_eq(decide(&(struct ask){ .act = S3_ACT_PutObject, .key = "pub/a", .pol = p }), D);
	/* Missing object: AccessDenied without s3:ListBucket, though GetObject is allowed. */
	ck_assert_int_eq(decide(&(struct ask){ .act = S3_ACT_GetObject, .key = "pub/zz",
					       .pol = p }), D);
	ck_assert_int_eq(decide(&(struct ask){ .act = S3_ACT_GetObject, .key = "pub/zz",
					       .bacl = S3_CANNED_PUBLIC_READ, .pol = p }), A);
	/* A user granted what ACLs cannot say. */
	ck_assert_int_eq(decide(&(struct ask){ .user = "bob", .act = S3_ACT_PutObject,
					       .key = "bob/x", .pol = p }), A);
	ck_assert_int_eq(decide(&(struct ask){ .user = "bob", .act = S3_ACT_DeleteObject,
					       .key = "bob/x", .pol = p }), A);
	ck_assert_int_eq(decide(&(struct ask){ .user = "bob", .act = S3_ACT_DeleteObject,
					       .key = "alice/x", .pol = p }), D);
	ck_assert_int_eq(decide(&(struct ask){ .user = "carol", .act = S3_ACT_PutObject,
					       .key = "bob/x", .pol = p }), D);
	/* Explicit Deny beats an ACL grant, the owner and a policy Allow... */
	ck_assert_int_eq(decide(&(struct ask){ .act = S3_ACT_GetObject, .key = "secret/a",
					       .oacl = S3_CANNED_PUBLIC_READ, .have_obj = true,
					       .pol = p }), D);
	ck_assert_int_eq(decide(&(struct ask){ .user = "alice", .act = S3_ACT_GetObject,
					       .key = "secret/a", .have_obj = true, .pol = p }), D);
	/* ... not an admin, and never the owner's policy operations. */
	ck_assert_int_eq(decide(&(struct ask){ .user = "root", .admin = true, .act = S3_ACT_GetObject,
					       .key = "secret/a", .have_obj = true, .pol = p }), A);
	ck_assert_int_eq(decide(&(struct ask){ .user = "alice", .act = S3_ACT_PutBucketPolicy,
					       .pol = p }), A);
	/* Without a matching statement the ACLs decide as before. */
	ck_assert_int_eq(decide(&(struct ask){ .act = S3_ACT_GetObject, .key = "priv/a",
					       .oacl = S3_CANNED_PUBLIC_READ, .have_obj = true,
					       .pol = p }), A);
	ck_assert_int_eq(decide(&(struct ask){ .user = "alice", .act = S3_ACT_GetObject,
					       .key = "priv/a", .have_obj = true, .pol = p }), A);
	s3_policy_free(p);
}
END_TEST

START_TEST(test_deny_all_and_broken)
{
	struct s3_policy *p = compile(
		"bkt", "{\"Statement\":[{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:*\","
		       "\"Resource\":[\"arn:aws:s3:::bkt\",\"arn:aws:s3:::bkt/*\"]}]}");
	static const enum s3_authz_action policy_ops[] = { S3_ACT_GetBucketPolicy,
							   S3_ACT_PutBucketPolicy,
							   S3_ACT_DeleteBucketPolicy };
	for (int broken = 0; broken < 2; broken++) {
		const struct s3_policy *pol = broken ? NULL : p;
		for (size_t i = 0; i < 3; i++) {
			ck_assert_int_eq(decide(&(struct ask){ .user = "alice", .act = policy_ops[i],
							       .pol = pol, .broken = broken }), A);
			ck_assert_int_eq(decide(&(struct ask){ .user = "bob", .act = policy_ops[i],
							       .pol = pol, .broken = broken }), D);
		}
		ck_assert_int_eq(decide(&(struct ask){ .user = "alice", .act = S3_ACT_ListBucket,
						       .pol = pol, .broken = broken }), D);
		ck_assert_int_eq(decide(&(struct ask){ .user = "alice", .act = S3_ACT_PutBucketPublicAccessBlock,
						       .pol = pol, .broken = broken }), D);
		ck_assert_int_eq(decide(&(struct ask){ .act = S3_ACT_ListBucket,
						       .bacl = S3_CANNED_PUBLIC_READ, .pol = pol,
						       .broken = broken }), D);
	}
	s3_policy_free(p);
}
END_TEST

START_TEST(test_conditions)
{
	struct s3_policy *p = compile(
		"bkt", "{\"Version\":\"2012-10-17\",\"Statement\":["
		       "{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
		       " \"Resource\":\"arn:aws:s3:::bkt/*\","
		       " \"Condition\":{\"IpAddress\":{\"aws:SourceIp\":\"127.0.0.0/8\"}}}]}");
	ck_assert_int_eq(decide(&(struct ask){ .act = S3_ACT_GetObject, .key = "k", .have_obj = true,
					       .pol = p, .peer = "127.0.0.1" }), A);
	ck_assert_int_eq(decide(&(struct ask){ .act = S3_ACT_GetObject, .key = "k", .have_obj = true,
					       .pol = p, .peer = "10.1.2.3" }), D);
	ck_assert(!s3_policy_is_public(p));
	s3_policy_free(p);
}
END_TEST

START_TEST(test_pab_decisions)
{
	struct s3_policy *pub = compile(
		"bkt", "{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\","
		       "\"Action\":\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::bkt/*\"},"
		       "{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"alice\"},"
		       "\"Action\":\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::bkt/*\"}]}");
	struct s3_policy *bob = compile(
		"bkt", "{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"bob\"},"
		       "\"Action\":\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::bkt/*\"}]}");
	struct s3_pab rpb = { .restrict_public_buckets = true };
	struct s3_pab ignore = { .ignore_public_acls = true };
	/* RestrictPublicBuckets: a public policy grants nobody but the owner. */
	ck_assert_int_eq(decide(&(struct ask){ .act = S3_ACT_GetObject, .key = "k", .have_obj = true,
					       .pol = pub }), A);
	ck_assert_int_eq(decide(&(struct ask){ .act = S3_ACT_GetObject, .key = "k", .have_obj = true,
					       .pol = pub, .pab = rpb }), D);
	ck_assert_int_eq(decide(&(struct ask){ .user = "bob", .act = S3_ACT_GetObject, .key = "k",
					       .have_obj = true, .pol = pub, .pab = rpb }), D);
	ck_assert_int_eq(decide(&(struct ask){ .user = "alice", .act = S3_ACT_GetObject, .key = "k",
					       .have_obj = true, .pol = pub, .pab = rpb }), A);
	/* ... nor does it touch a policy that is not public. */
	ck_assert_int_eq(decide(&(struct ask){ .user = "bob", .act = S3_ACT_GetObject, .key = "k",
					       .have_obj = true, .pol = bob, .pab = rpb }), A);
	/* ... nor the ACLs. */
	ck_assert_int_eq(decide(&(struct ask){ .act = S3_ACT_GetObject, .key = "k", .have_obj = true,
					       .oacl = S3_CANNED_PUBLIC_READ, .pab = rpb }), A);
	/* IgnorePublicAcls: AllUsers and AuthenticatedUsers grants give nothing. */
	ck_assert_int_eq(decide(&(struct ask){ .act = S3_ACT_GetObject, .key = "k", .have_obj = true,
					       .oacl = S3_CANNED_PUBLIC_READ, .pab = ignore }), D);
	ck_assert_int_eq(decide(&(struct ask){ .user = "bob", .act = S3_ACT_GetObject, .key = "k",
					       .have_obj = true, .oacl = S3_CANNED_AUTHENTICATED_READ,
					       .pab = ignore }), D);
	ck_assert_int_eq(decide(&(struct ask){ .act = S3_ACT_ListBucket,
					       .bacl = S3_CANNED_PUBLIC_READ_WRITE, .pab = ignore }), D);
	ck_assert_int_eq(decide(&(struct ask){ .act = S3_ACT_PutObject, .key = "k",
					       .bacl = S3_CANNED_PUBLIC_READ_WRITE, .pab = ignore }), D);
	ck_assert_int_eq(decide(&(struct ask){ .user = "alice", .act = S3_ACT_ListBucket,
					       .pab = ignore }), A);
	/* ... but not a policy. */
	ck_assert_int_eq(decide(&(struct ask){ .act = S3_ACT_GetObject, .key = "k", .have_obj = true,
					       .pol = pub, .pab = ignore }), A);
	s3_policy_free(pub);
	s3_policy_free(bob);
}
END_TEST

/* ------------------------------------------------------------ s3_pab */

START_TEST(test_pab_values)
{
	struct s3_acl a;
	static const struct {
		enum s3_canned c;
		bool pub;
	} canned[] = {
		{ S3_CANNED_PRIVATE, false }, { S3_CANNED_PUBLIC_READ, true },
		{ S3_CANNED_PUBLIC_READ_WRITE, true }, { S3_CANNED_AUTHENTICATED_READ, true },
		{ S3_CANNED_BUCKET_OWNER_READ, false }, { S3_CANNED_BUCKET_OWNER_FULL_CONTROL, false },
		{ S3_CANNED_LOG_DELIVERY_WRITE, false },
	};
	for (size_t i = 0; i < sizeof(canned) / sizeof(canned[0]); i++) {
		s3_acl_canned(&a, canned[i].c);
		ck_assert_msg(s3_pab_acl_is_public(&a) == canned[i].pub, "%s",
			      s3_acl_canned_name(canned[i].c));
	}
	memset(&a, 0, sizeof(a));
	a.canned = S3_CANNED_NONE;
	a.n = 1;
	a.g[0] = (struct s3_grant){ .perm = S3_PERM_FULL, .group = S3_GROUP_NONE };
	ck_assert(!s3_pab_acl_is_public(&a));
	a.g[a.n++] = (struct s3_grant){ .perm = S3_PERM_READ_ACP, .group = S3_GROUP_AUTH_USERS };
	ck_assert(s3_pab_acl_is_public(&a));
	s3_pab_drop_public(&a);
	ck_assert_uint_eq(a.n, 1);
	ck_assert(!s3_pab_acl_is_public(&a));

	struct s3_pab p;
	const char *x = "<PublicAccessBlockConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
			"<BlockPublicAcls>true</BlockPublicAcls><RestrictPublicBuckets>TRUE"
			"</RestrictPublicBuckets><IgnorePublicAcls>false</IgnorePublicAcls>"
			"</PublicAccessBlockConfiguration>";
	ck_assert_int_eq(s3_pab_from_xml(x, strlen(x), &p), S3E_OK);
	ck_assert(p.block_public_acls && !p.ignore_public_acls && !p.block_public_policy &&
		  p.restrict_public_buckets);
	Iolake__Meta__PublicAccessBlock m;
	s3_pab_to_msg(&p, &m);
	struct s3_pab back;
	s3_pab_from_msg(&m, &back);
	ck_assert(memcmp(&p, &back, sizeof(p)) == 0);
	s3_pab_from_msg(NULL, &back);
	ck_assert(!back.block_public_acls && !back.restrict_public_buckets);
	static const char *const bad[] = {
		"<PublicAccessBlockConfiguration><BlockPublicAcls>yes</BlockPublicAcls>"
		"</PublicAccessBlockConfiguration>",
		"<PublicAccessBlockConfiguration><BlockPublicAcls>true</BlockPublicAcls>"
		"<BlockPublicAcls>false</BlockPublicAcls></PublicAccessBlockConfiguration>",
		"<OwnershipControls/>",
		"<PublicAccessBlockConfiguration>",
		"",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(s3_pab_from_xml(bad[i], strlen(bad[i]), &p) == S3E_MalformedXML, "%s",
			      bad[i]);
	char big[S3_PAB_XML_MAX + 64];
	memset(big, ' ', sizeof(big));
	ck_assert_int_eq(s3_pab_from_xml(big, sizeof(big), &p), S3E_MaxMessageLengthExceeded);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("s3_policy_wiring");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_cache_hits_and_generations);
	tcase_add_test(tc, test_cache_lru_bound);
	tcase_add_test(tc, test_cache_broken);
	tcase_add_test(tc, test_ctx_keys);
	tcase_add_test(tc, test_order);
	tcase_add_test(tc, test_deny_all_and_broken);
	tcase_add_test(tc, test_conditions);
	tcase_add_test(tc, test_pab_decisions);
	tcase_add_test(tc, test_pab_values);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
