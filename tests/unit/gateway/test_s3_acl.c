/*
 * test_s3_acl.c — the ACL values (gateway/s3_acl): canonical ids, canned
 * ACLs and their expansion, the x-amz-acl / x-amz-grant-* headers (and
 * their errors), the AccessControlPolicy document both ways, the record
 * form; and xml_parse's bounded parser under them. The per-thread cache
 * of the last canonical id answers what the derivation would.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "gateway/s3_acl.h"
#include "gateway/xml_parse.h"

/* ------------------------------------------------------------ headers */

struct hdrs {
	const char *name[8], *value[8];
	int n;
};

static const char *get_hdr(void *ctx, const char *name, size_t *len)
{
	struct hdrs *h = ctx;
	for (int i = 0; i < h->n; i++)
		if (!strcmp(h->name[i], name)) {
			*len = strlen(h->value[i]);
			return h->value[i];
		}
	return NULL;
}

static enum s3_err from1(const char *name, const char *value, struct s3_acl *a, bool *present)
{
	struct hdrs h = { .n = name ? 1 : 0 };
	h.name[0] = name;
	h.value[0] = value;
	return s3_acl_from_headers(get_hdr, &h, a, present);
}

static char alice_hex[S3_ID_HEX + 1], bob_hex[S3_ID_HEX + 1];
static uint8_t alice[S3_ID_LEN], bob[S3_ID_LEN];

static void setup(void)
{
	s3_acl_user_id_hex("alice", alice_hex);
	s3_acl_user_id_hex("bob", bob_hex);
	s3_acl_user_id("alice", alice);
	s3_acl_user_id("bob", bob);
}

START_TEST(test_ids)
{
	setup();
	/* SHA-256("iolake-user:alice"), stable, 64 lower-case hex. */
	uint8_t d[32];
	hash_sha256("iolake-user:alice", 17, d);
	char hex[65];
	hash_hex(d, 32, hex);
	hex[64] = 0;
	ck_assert_str_eq(alice_hex, hex);
	ck_assert_uint_eq(strlen(alice_hex), 64);
	ck_assert_str_ne(alice_hex, bob_hex);
	struct s3_principal p;
	s3_principal_init(&p, "alice", false);
	ck_assert_int_eq(memcmp(p.id, alice, 32), 0);
	s3_principal_init(&p, "", true);
	ck_assert_ptr_null(p.user);
	ck_assert(!p.admin);
}
END_TEST

START_TEST(test_headers)
{
	setup();
	struct s3_acl *a = malloc(sizeof(*a));
	bool present;
	ck_assert_int_eq(from1(NULL, NULL, a, &present), S3E_OK);
	ck_assert(!present);
	static const char *const canned[] = { "private", "public-read", "public-read-write",
					      "authenticated-read", "bucket-owner-read",
					      "bucket-owner-full-control", "log-delivery-write" };
	for (unsigned i = 0; i < 7; i++) {
		ck_assert_int_eq(from1("x-amz-acl", canned[i], a, &present), S3E_OK);
		ck_assert(present);
		ck_assert_uint_eq(a->canned, i + 1);
		ck_assert_str_eq(s3_acl_canned_name(a->canned), canned[i]);
	}
	ck_assert_int_eq(from1("x-amz-acl", "public", a, &present), S3E_InvalidArgument);

	char v[400];
	snprintf(v, sizeof(v), "id=\"%s\", uri=\"http://acs.amazonaws.com/groups/global/AllUsers\"",
		 bob_hex);
	ck_assert_int_eq(from1("x-amz-grant-read", v, a, &present), S3E_OK);
	ck_assert(present);
	ck_assert_uint_eq(a->canned, S3_CANNED_NONE);
	ck_assert_uint_eq(a->n, 2);
	ck_assert_uint_eq(a->g[0].perm, S3_PERM_READ);
	ck_assert_int_eq(memcmp(a->g[0].id, bob, 32), 0);
	ck_assert_uint_eq(a->g[1].group, S3_GROUP_ALL_USERS);
	/* Unquoted, upper-case hex, spaces. */
	char up[80];
	for (int i = 0; i < 64; i++)
		up[i] = (char)(bob_hex[i] >= 'a' ? bob_hex[i] - 32 : bob_hex[i]);
	up[64] = 0;
	snprintf(v, sizeof(v), "  id = %s ", up);
	ck_assert_int_eq(from1("x-amz-grant-full-control", v, a, &present), S3E_OK);
	ck_assert_uint_eq(a->n, 1);
	ck_assert_uint_eq(a->g[0].perm, S3_PERM_FULL);
	ck_assert_int_eq(memcmp(a->g[0].id, bob, 32), 0);

	ck_assert_int_eq(from1("x-amz-grant-read", "id=\"abc\"", a, &present), S3E_InvalidArgument);
	ck_assert_int_eq(from1("x-amz-grant-read", "uri=\"http://x/y\"", a, &present),
			 S3E_InvalidArgument);
	ck_assert_int_eq(from1("x-amz-grant-read", "emailAddress=\"a@b.c\"", a, &present),
			 S3E_UnresolvableGrantByEmailAddress);
	ck_assert_int_eq(from1("x-amz-grant-read", "", a, &present), S3E_InvalidArgument);
	ck_assert_int_eq(from1("x-amz-grant-read", "id", a, &present), S3E_InvalidArgument);
	ck_assert_int_eq(from1("x-amz-grant-read", "id=\"unterminated", a, &present),
			 S3E_InvalidArgument);
	ck_assert_int_eq(from1("x-amz-grant-read", "foo=bar", a, &present), S3E_InvalidArgument);

	/* Canned and grants together: InvalidRequest. */
	struct hdrs h = { .n = 2 };
	h.name[0] = "x-amz-acl";
	h.value[0] = "private";
	h.name[1] = "x-amz-grant-read";
	h.value[1] = "uri=\"http://acs.amazonaws.com/groups/global/AllUsers\"";
	ck_assert_int_eq(s3_acl_from_headers(get_hdr, &h, a, &present), S3E_InvalidRequest);
	free(a);
}
END_TEST

START_TEST(test_expand_and_perms)
{
	setup();
	struct s3_acl *a = malloc(sizeof(*a)), *e = malloc(sizeof(*e));
	struct s3_principal pa, pb, anon;
	s3_principal_init(&pa, "alice", false);
	s3_principal_init(&pb, "bob", false);
	s3_principal_init(&anon, NULL, false);
	/* An object of alice in bob's bucket. */
	static const struct {
		enum s3_canned c;
		unsigned n;                 /* grants */
		unsigned alice, bob, anon;  /* permission bits */
	} t[] = {
		{ S3_CANNED_PRIVATE, 1, S3_PERM_FULL, 0, 0 },
		{ S3_CANNED_PUBLIC_READ, 2, S3_PERM_FULL, S3_PERM_READ, S3_PERM_READ },
		{ S3_CANNED_PUBLIC_READ_WRITE, 3, S3_PERM_FULL, S3_PERM_READ | S3_PERM_WRITE,
		  S3_PERM_READ | S3_PERM_WRITE },
		{ S3_CANNED_AUTHENTICATED_READ, 2, S3_PERM_FULL, S3_PERM_READ, 0 },
		{ S3_CANNED_BUCKET_OWNER_READ, 2, S3_PERM_FULL, S3_PERM_READ, 0 },
		{ S3_CANNED_BUCKET_OWNER_FULL_CONTROL, 2, S3_PERM_FULL, S3_PERM_FULL, 0 },
		{ S3_CANNED_LOG_DELIVERY_WRITE, 3, S3_PERM_FULL, 0, 0 },
	};
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		s3_acl_canned(a, t[i].c);
		s3_acl_expand(a, alice, bob, e);
		ck_assert_msg(e->n == t[i].n, "%s: %u grants", s3_acl_canned_name(t[i].c), e->n);
		ck_assert_uint_eq(s3_acl_perms(e, &pa), t[i].alice);
		ck_assert_uint_eq(s3_acl_perms(e, &pb), t[i].bob);
		ck_assert_uint_eq(s3_acl_perms(e, &anon), t[i].anon);
	}
	/* On the owner's own bucket the bucket-owner-* ACLs are private. */
	s3_acl_canned(a, S3_CANNED_BUCKET_OWNER_FULL_CONTROL);
	s3_acl_expand(a, alice, alice, e);
	ck_assert_uint_eq(e->n, 1);
	ck_assert(s3_acl_owner_only(e, alice));
	s3_acl_canned(a, S3_CANNED_PUBLIC_READ);
	s3_acl_expand(a, alice, alice, e);
	ck_assert(!s3_acl_owner_only(e, alice));
	free(a);
	free(e);
}
END_TEST

static const char doc_fmt[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	"<AccessControlPolicy xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
	"<Owner><ID>%s</ID><DisplayName>alice</DisplayName></Owner><AccessControlList>"
	"<Grant><Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
	"xsi:type=\"CanonicalUser\"><ID>%s</ID></Grantee><Permission>FULL_CONTROL</Permission></Grant>"
	"<Grant><Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"Group\">"
	"<URI>http://acs.amazonaws.com/groups/global/AuthenticatedUsers</URI></Grantee>"
	"<Permission>%s</Permission></Grant>"
	"</AccessControlList></AccessControlPolicy>";

START_TEST(test_xml)
{
	setup();
	struct s3_acl *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	char doc[2048];
	snprintf(doc, sizeof(doc), doc_fmt, alice_hex, bob_hex, "READ_ACP");
	ck_assert_int_eq(s3_acl_from_xml(doc, strlen(doc), alice, a), S3E_OK);
	ck_assert_uint_eq(a->n, 2);
	ck_assert_uint_eq(a->g[0].perm, S3_PERM_FULL);
	ck_assert_int_eq(memcmp(a->g[0].id, bob, 32), 0);
	ck_assert_uint_eq(a->g[1].group, S3_GROUP_AUTH_USERS);
	ck_assert_uint_eq(a->g[1].perm, S3_PERM_READ_ACP);

	/* Rendered and parsed back: the same grants. */
	struct xml_w w;
	xml_init(&w, 0);
	s3_acl_render(&w, a, "alice", "alice");
	const char *out;
	size_t len;
	ck_assert_int_eq(xml_finish(&w, &out, &len), 0);
	ck_assert_ptr_nonnull(strstr(out, "<DisplayName>alice</DisplayName>"));
	ck_assert_ptr_nonnull(strstr(out, "xsi:type=\"CanonicalUser\""));
	ck_assert_int_eq(s3_acl_from_xml(out, len, alice, b), S3E_OK);
	ck_assert_uint_eq(b->n, a->n);
	ck_assert_int_eq(memcmp(b->g, a->g, a->n * sizeof(a->g[0])), 0);
	xml_free(&w);

	/* Another Owner: AccessDenied (an ACL does not change owners). */
	ck_assert_int_eq(s3_acl_from_xml(doc, strlen(doc), bob, a), S3E_AccessDenied);
	/* An unknown permission; a grantee of no kind; DOCTYPE; no list. */
	snprintf(doc, sizeof(doc), doc_fmt, alice_hex, bob_hex, "EVERYTHING");
	ck_assert_int_eq(s3_acl_from_xml(doc, strlen(doc), alice, a), S3E_MalformedACLError);
	const char *bad[] = {
		"<AccessControlPolicy><AccessControlList><Grant><Grantee></Grantee>"
		"<Permission>READ</Permission></Grant></AccessControlList></AccessControlPolicy>",
		"<!DOCTYPE x [<!ENTITY a \"b\">]><AccessControlPolicy><AccessControlList/>"
		"</AccessControlPolicy>",
		"<AccessControlPolicy></AccessControlPolicy>",
		"<Other><AccessControlList/></Other>",
		"<AccessControlPolicy><AccessControlList><Grant><Permission>READ</Permission>"
		"</Grant></AccessControlList></AccessControlPolicy>",
		"<AccessControlPolicy><AccessControlList>",
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(s3_acl_from_xml(bad[i], strlen(bad[i]), alice, a) == S3E_MalformedACLError,
			      "bad[%u]", i);
	/* An e-mail grantee; a bad id; an unknown group. */
	const char *email = "<AccessControlPolicy><AccessControlList><Grant><Grantee "
			    "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
			    "xsi:type=\"AmazonCustomerByEmail\"><EmailAddress>a@b</EmailAddress>"
			    "</Grantee><Permission>READ</Permission></Grant></AccessControlList>"
			    "</AccessControlPolicy>";
	ck_assert_int_eq(s3_acl_from_xml(email, strlen(email), alice, a),
			 S3E_UnresolvableGrantByEmailAddress);
	const char *badid = "<AccessControlPolicy><AccessControlList><Grant><Grantee><ID>xyz</ID>"
			    "</Grantee><Permission>READ</Permission></Grant></AccessControlList>"
			    "</AccessControlPolicy>";
	ck_assert_int_eq(s3_acl_from_xml(badid, strlen(badid), alice, a), S3E_InvalidArgument);
	const char *badg = "<AccessControlPolicy><AccessControlList><Grant><Grantee><URI>http://x"
			   "</URI></Grantee><Permission>READ</Permission></Grant></AccessControlList>"
			   "</AccessControlPolicy>";
	ck_assert_int_eq(s3_acl_from_xml(badg, strlen(badg), alice, a), S3E_InvalidArgument);
	/* 101 grants: over the bound. */
	size_t cap = 200 * 200;
	char *big = malloc(cap), *p = big;
	p += sprintf(p, "<AccessControlPolicy><AccessControlList>");
	for (int i = 0; i < 101; i++)
		p += sprintf(p, "<Grant><Grantee><URI>http://acs.amazonaws.com/groups/global/AllUsers"
				"</URI></Grantee><Permission>READ</Permission></Grant>");
	p += sprintf(p, "</AccessControlList></AccessControlPolicy>");
	ck_assert_int_eq(s3_acl_from_xml(big, (size_t)(p - big), alice, a), S3E_InvalidArgument);
	free(big);
	free(a);
	free(b);
}
END_TEST

START_TEST(test_records)
{
	setup();
	struct s3_acl *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	struct s3_acl_msg *m = malloc(sizeof(*m));
	ck_assert(s3_acl_from_msg(NULL, a));
	ck_assert_uint_eq(a->canned, S3_CANNED_PRIVATE);
	s3_acl_canned(a, S3_CANNED_PUBLIC_READ);
	s3_acl_to_msg(a, m);
	ck_assert_uint_eq(m->m.n_grants, 0);
	size_t n = iolake__meta__acl__get_packed_size(&m->m);
	ck_assert_uint_le(n, 2);   /* a canned ACL costs a record 2 bytes */
	ck_assert(s3_acl_from_msg(&m->m, b));
	ck_assert_uint_eq(b->canned, S3_CANNED_PUBLIC_READ);
	char v[200];
	snprintf(v, sizeof(v), "id=\"%s\", uri=\"http://acs.amazonaws.com/groups/s3/LogDelivery\"",
		 bob_hex);
	bool present;
	ck_assert_int_eq(from1("x-amz-grant-write-acp", v, a, &present), S3E_OK);
	s3_acl_to_msg(a, m);
	uint8_t buf[512];
	n = iolake__meta__acl__pack(&m->m, buf);
	Iolake__Meta__Acl *u = iolake__meta__acl__unpack(NULL, n, buf);
	ck_assert_ptr_nonnull(u);
	ck_assert(s3_acl_from_msg(u, b));
	ck_assert_uint_eq(b->n, 2);
	ck_assert_int_eq(memcmp(b->g, a->g, 2 * sizeof(a->g[0])), 0);
	/* A grant naming a user without a 32-byte id does not decode. */
	u->grants[0]->user_id.len = 3;
	ck_assert(!s3_acl_from_msg(u, b));
	ck_assert_uint_eq(b->canned, S3_CANNED_PRIVATE);
	iolake__meta__acl__free_unpacked(u, NULL);
	free(a);
	free(b);
	free(m);
}
END_TEST

START_TEST(test_ownership_xml)
{
	char v[32];
	const char *ok = "<OwnershipControls xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Rule>"
			 "<ObjectOwnership>ObjectWriter</ObjectOwnership></Rule></OwnershipControls>";
	ck_assert_int_eq(xmlp_ownership(ok, strlen(ok), 1024, v, sizeof(v)), 0);
	ck_assert_str_eq(v, "ObjectWriter");
	const char *two = "<OwnershipControls><Rule><ObjectOwnership>A</ObjectOwnership></Rule>"
			  "<Rule><ObjectOwnership>B</ObjectOwnership></Rule></OwnershipControls>";
	ck_assert_int_eq(xmlp_ownership(two, strlen(two), 1024, v, sizeof(v)), -EBADMSG);
	const char *none = "<OwnershipControls/>";
	ck_assert_int_eq(xmlp_ownership(none, strlen(none), 1024, v, sizeof(v)), -EBADMSG);
	ck_assert_int_eq(xmlp_ownership(ok, strlen(ok), 10, v, sizeof(v)), -E2BIG);
}
END_TEST

/* s3_acl_user_id keeps the last id derived per thread: what it answers
 * must be the derivation's, whatever came before (a name that is a
 * prefix of the last, a longer one, one past the cache's buffer, none). */
static void fresh_id(const char *user, uint8_t id[S3_ID_LEN])
{
	char buf[400];
	int n = snprintf(buf, sizeof(buf), "iolake-user:%s", user ? user : "");
	hash_sha256(buf, (size_t)n, id);
}

START_TEST(test_id_cache)
{
	char longname[200];
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	char long2[200];
	memcpy(long2, longname, sizeof(long2));
	long2[150] = 'y';
	const char *seq[] = { "alice", "alice", "alic", "alice", "alicex", "bob", "", NULL, "bob",
			      longname, long2, longname, "alice", NULL, "" };
	for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		uint8_t got[S3_ID_LEN], want[S3_ID_LEN];
		s3_acl_user_id(seq[i], got);
		fresh_id(seq[i], want);
		ck_assert_msg(memcmp(got, want, S3_ID_LEN) == 0, "step %zu (%s)", i,
			      seq[i] ? seq[i] : "NULL");
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("s3_acl");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_ids);
	tcase_add_test(tc, test_id_cache);
	tcase_add_test(tc, test_headers);
	tcase_add_test(tc, test_expand_and_perms);
	tcase_add_test(tc, test_xml);
	tcase_add_test(tc, test_records);
	tcase_add_test(tc, test_ownership_xml);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
