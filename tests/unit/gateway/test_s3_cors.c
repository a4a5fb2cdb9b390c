/*
 * test_s3_cors.c — CORS configurations as values (gateway/s3_cors_rules
 * over xml_parse's xmlp_cors): the documents aws-cli and boto3 send, the
 * refusals S3 makes (no rule, a rule without origin or method, an
 * unsupported method, two wildcards, a non-integer MaxAgeSeconds, 101
 * rules), the rendering of GetBucketCors, and the matching of origins,
 * methods and requested headers (first rule wins, wildcards, case).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/s3_cors_rules.h"

struct built {
	struct xmlp_cors_item items[512];
	char arena[16384];
	struct xmlp_cors x;
	struct s3_cors_doc d;
	char msgbuf[320];
	const char *msg;
};

/* Parse and build doc: 0 (built), the parse error, or the S3 error as a
 * positive number. */
static int build(struct built *b, const char *doc)
{
	memset(b, 0, sizeof(*b));
	b->x = (struct xmlp_cors){ .items = b->items, .max_items = 512, .arena = b->arena,
				   .arena_cap = sizeof(b->arena) };
	int rc = xmlp_cors(doc, strlen(doc), S3_CORS_BODY_MAX, &b->x);
	if (rc)
		return rc;
	return (int)s3_cors_build(&b->x, &b->d, &b->msg, b->msgbuf, sizeof(b->msgbuf));
}

static const char *const doc1 =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
	"<CORSConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
	"<CORSRule><ID>web</ID><AllowedOrigin>http://www.example.com</AllowedOrigin>"
	"<AllowedOrigin>http://*.example.org</AllowedOrigin>"
	"<AllowedMethod>PUT</AllowedMethod><AllowedMethod>POST</AllowedMethod>"
	"<AllowedHeader>x-amz-*</AllowedHeader><AllowedHeader>Content-Type</AllowedHeader>"
	"<ExposeHeader>ETag</ExposeHeader><ExposeHeader>x-amz-request-id</ExposeHeader>"
	"<MaxAgeSeconds>3000</MaxAgeSeconds></CORSRule>"
	"<CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule>"
	"</CORSConfiguration>";

START_TEST(test_build)
{
	struct built *b = malloc(sizeof(*b));
	ck_assert_int_eq(build(b, doc1), 0);
	const Iolake__Meta__CorsConfig *c = &b->d.cfg;
	ck_assert_uint_eq(c->n_rules, 2);
	ck_assert_str_eq(c->rules[0]->id, "web");
	ck_assert_uint_eq(c->rules[0]->n_allowed_origins, 2);
	ck_assert_str_eq(c->rules[0]->allowed_origins[1], "http://*.example.org");
	ck_assert_uint_eq(c->rules[0]->n_allowed_methods, 2);
	ck_assert_str_eq(c->rules[0]->allowed_methods[1], "POST");
	ck_assert_uint_eq(c->rules[0]->n_allowed_headers, 2);
	ck_assert_uint_eq(c->rules[0]->n_expose_headers, 2);
	ck_assert(c->rules[0]->has_max_age);
	ck_assert_int_eq(c->rules[0]->max_age_seconds, 3000);
	ck_assert_uint_eq(c->rules[1]->n_allowed_headers, 0);
	ck_assert(!c->rules[1]->has_max_age);

	/* Rendered back: one CORSRule each, the values as stored. */
	struct xml_w w;
	xml_init(&w, 1 << 16);
	s3_cors_render(&w, c);
	const char *out;
	size_t len;
	ck_assert_int_eq(xml_finish(&w, &out, &len), 0);
	char *buf = strndup(out, len);
	ck_assert_ptr_nonnull(strstr(buf, "<CORSRule><ID>web</ID><AllowedHeader>x-amz-*</AllowedHeader>"));
	ck_assert_ptr_nonnull(strstr(buf, "<MaxAgeSeconds>3000</MaxAgeSeconds></CORSRule>"
					  "<CORSRule><AllowedMethod>GET</AllowedMethod>"
					  "<AllowedOrigin>*</AllowedOrigin></CORSRule>"));
	free(buf);
	xml_free(&w);
	s3_cors_doc_free(&b->d);
	free(b);
}
END_TEST

START_TEST(test_refused)
{
	struct built *b = malloc(sizeof(*b));
	/* No rule at all, wrong root, malformed. */
	ck_assert_int_eq(build(b, "<CORSConfiguration></CORSConfiguration>"), -EBADMSG);
	ck_assert_int_eq(build(b, "<CORS><CORSRule/></CORS>"), -EBADMSG);
	ck_assert_int_eq(build(b, "<CORSConfiguration><CORSRule>"), -EBADMSG);
	/* A rule without an origin, or without a method. */
	ck_assert_int_eq(build(b, "<CORSConfiguration><CORSRule><AllowedMethod>GET</AllowedMethod>"
				  "</CORSRule></CORSConfiguration>"), S3E_MalformedXML);
	s3_cors_doc_free(&b->d);
	ck_assert_int_eq(build(b, "<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin>"
				  "</CORSRule></CORSConfiguration>"), S3E_MalformedXML);
	s3_cors_doc_free(&b->d);
	/* An unsupported method, named in the message. */
	ck_assert_int_eq(build(b, "<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin>"
				  "<AllowedMethod>PATCH</AllowedMethod></CORSRule></CORSConfiguration>"),
			 S3E_InvalidRequest);
	ck_assert_str_eq(b->msg, "Found unsupported HTTP method in CORS config. Unsupported method is PATCH");
	s3_cors_doc_free(&b->d);
	/* Methods are case-sensitive, as S3's. */
	ck_assert_int_eq(build(b, "<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin>"
				  "<AllowedMethod>get</AllowedMethod></CORSRule></CORSConfiguration>"),
			 S3E_InvalidRequest);
	s3_cors_doc_free(&b->d);
	/* Two wildcards in an origin or a header. */
	ck_assert_int_eq(build(b, "<CORSConfiguration><CORSRule><AllowedOrigin>http://*.*.com</AllowedOrigin>"
				  "<AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>"),
			 S3E_InvalidRequest);
	ck_assert_str_eq(b->msg, "AllowedOrigin \"http://*.*.com\" can not have more than one wildcard.");
	s3_cors_doc_free(&b->d);
	ck_assert_int_eq(build(b, "<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin>"
				  "<AllowedMethod>GET</AllowedMethod><AllowedHeader>*a*</AllowedHeader>"
				  "</CORSRule></CORSConfiguration>"), S3E_InvalidRequest);
	s3_cors_doc_free(&b->d);
	/* MaxAgeSeconds not an integer. */
	ck_assert_int_eq(build(b, "<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin>"
				  "<AllowedMethod>GET</AllowedMethod><MaxAgeSeconds>ten</MaxAgeSeconds>"
				  "</CORSRule></CORSConfiguration>"), S3E_MalformedXML);
	s3_cors_doc_free(&b->d);
	/* 100 rules pass, 101 do not. */
	static char big[102 * 128];
	for (int n = 100; n <= 101; n++) {
		size_t len = (size_t)snprintf(big, sizeof(big), "<CORSConfiguration>");
		for (int i = 0; i < n; i++)
			len += (size_t)snprintf(big + len, sizeof(big) - len,
						"<CORSRule><AllowedOrigin>*</AllowedOrigin>"
						"<AllowedMethod>GET</AllowedMethod></CORSRule>");
		snprintf(big + len, sizeof(big) - len, "</CORSConfiguration>");
		ck_assert_int_eq(build(b, big), n == 100 ? 0 : -E2BIG);
		s3_cors_doc_free(&b->d);
	}
	free(b);
}
END_TEST

static bool glob(const char *p, const char *s, bool icase)
{
	return s3_cors_glob(p, strlen(p), s, strlen(s), icase);
}

START_TEST(test_glob)
{
	ck_assert(glob("*", "", false));
	ck_assert(glob("*", "http://a.example", false));
	ck_assert(glob("http://*.example.org", "http://www.example.org", false));
	ck_assert(!glob("http://*.example.org", "http://example.org", false));
	ck_assert(!glob("http://*.example.org", "http://www.example.org.evil", false));
	ck_assert(glob("x-amz-*", "x-amz-date", false));
	ck_assert(!glob("x-amz-*", "X-Amz-Date", false));
	ck_assert(glob("x-amz-*", "X-Amz-Date", true));
	ck_assert(glob("a*b*c", "aXXbYYc", false));
	ck_assert(!glob("a*b*c", "aXXbYY", false));
	ck_assert(glob("abc", "abc", false));
	ck_assert(!glob("abc", "abcd", false));
}
END_TEST

static int match(const Iolake__Meta__CorsConfig *c, const char *o, const char *m, const char *h)
{
	return s3_cors_match(c, o, strlen(o), m, strlen(m), h, h ? strlen(h) : 0);
}

START_TEST(test_match)
{
	struct built *b = malloc(sizeof(*b));
	ck_assert_int_eq(build(b, doc1), 0);
	const Iolake__Meta__CorsConfig *c = &b->d.cfg;
	ck_assert_int_eq(match(c, "http://www.example.com", "PUT", NULL), 0);
	ck_assert_int_eq(match(c, "http://a.example.org", "POST", "content-type, X-Amz-Date"), 0);
	/* A header no AllowedHeader admits: the first rule fails; the second
	 * does not allow POST. */
	ck_assert_int_eq(match(c, "http://a.example.org", "POST", "content-type, authorization"), -1);
	/* GET only in the second rule (any origin), without headers. */
	ck_assert_int_eq(match(c, "http://www.example.com", "GET", NULL), 1);
	ck_assert_int_eq(match(c, "http://www.example.com", "GET", "x-amz-date"), -1);
	ck_assert_int_eq(match(c, "http://www.example.com", "DELETE", NULL), -1);
	/* Origins are case-sensitive; an empty header list is no header. */
	ck_assert_int_eq(match(c, "HTTP://WWW.EXAMPLE.COM", "PUT", NULL), -1);
	ck_assert_int_eq(match(c, "http://www.example.com", "PUT", " , "), 0);
	ck_assert(!s3_cors_any_origin(c->rules[0], "http://www.example.com", 22));
	ck_assert(s3_cors_any_origin(c->rules[1], "http://www.example.com", 22));
	s3_cors_doc_free(&b->d);
	free(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("s3_cors");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_build);
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_glob);
	tcase_add_test(tc, test_match);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
