/*
 * test_lc_rule.c — lifecycle configurations as values (gateway/lc_rule):
 * the documents boto3 sends parsed into rules (Filter forms, And, tags,
 * sizes, Days / Date / ExpiredObjectDeleteMarker, noncurrent, abort), S3's
 * refusals, the rendering round trip, and the matcher: prefix, tags, size
 * bounds, And, disabled rules, days rounded up to the next day boundary
 * against a fixed Date, noncurrent versions kept by
 * NewerNoncurrentVersions, lone delete markers, uploads, and the
 * x-amz-expiration value.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/lc_rule.h"

#define NS "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\""
#define DAY 1000ull   /* the test clock: one day is a second */

static Iolake__Meta__LifecycleConfig *parse_ok(const char *doc)
{
	Iolake__Meta__LifecycleConfig *c = NULL;
	const char *msg = NULL;
	char buf[320];
	enum s3_err e = lc_parse(doc, strlen(doc), &c, &msg, buf, sizeof(buf));
	ck_assert_msg(e == S3E_OK, "parse failed: %s (%s)", s3_err_code(e), msg ? msg : "");
	return c;
}

static enum s3_err parse_err(const char *doc)
{
	Iolake__Meta__LifecycleConfig *c = NULL;
	const char *msg = NULL;
	char buf[320];
	enum s3_err e = lc_parse(doc, strlen(doc), &c, &msg, buf, sizeof(buf));
	ck_assert_ptr_null(c);
	return e;
}

static const char *DOC =
	"<LifecycleConfiguration " NS ">"
	"<Rule><ID>exp</ID><Filter><Prefix>logs/</Prefix></Filter><Status>Enabled</Status>"
	"<Expiration><Days>3</Days></Expiration></Rule>"
	"<Rule><ID>and</ID><Filter><And><Prefix>t/</Prefix>"
	"<Tag><Key>class</Key><Value>tmp</Value></Tag>"
	"<Tag><Key>team</Key><Value>a</Value></Tag>"
	"<ObjectSizeGreaterThan>100</ObjectSizeGreaterThan>"
	"<ObjectSizeLessThan>1000</ObjectSizeLessThan></And></Filter>"
	"<Status>Enabled</Status><Expiration><Date>2030-01-01T00:00:00.000Z</Date></Expiration>"
	"</Rule>"
	"<Rule><ID>nc</ID><Filter></Filter><Status>Enabled</Status>"
	"<NoncurrentVersionExpiration><NoncurrentDays>2</NoncurrentDays>"
	"<NewerNoncurrentVersions>2</NewerNoncurrentVersions></NoncurrentVersionExpiration>"
	"<AbortIncompleteMultipartUpload><DaysAfterInitiation>5</DaysAfterInitiation>"
	"</AbortIncompleteMultipartUpload></Rule>"
	"<Rule><ID>dm</ID><Prefix>dm/</Prefix><Status>Enabled</Status>"
	"<Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration>"
	"</Rule>"
	"<Rule><ID>off</ID><Filter><Prefix>logs/</Prefix></Filter><Status>Disabled</Status>"
	"<Expiration><Days>1</Days></Expiration></Rule>"
	"</LifecycleConfiguration>";

START_TEST(test_parse)
{
	Iolake__Meta__LifecycleConfig *c = parse_ok(DOC);
	ck_assert_uint_eq(c->n_rules, 5);
	Iolake__Meta__LifecycleRule **r = c->rules;
	ck_assert_str_eq(r[0]->id, "exp");
	ck_assert_str_eq(r[0]->prefix, "logs/");
	ck_assert_uint_eq(r[0]->exp_days, 3);
	ck_assert_uint_eq(r[0]->filter_form, 1);
	ck_assert_uint_eq(r[1]->filter_form, 2);
	ck_assert_uint_eq(r[1]->n_tags, 2);
	ck_assert(r[1]->has_size_gt && r[1]->size_gt == 100);
	ck_assert(r[1]->has_size_lt && r[1]->size_lt == 1000);
	ck_assert_uint_eq(r[1]->exp_date_ms, 1893456000000ull);
	ck_assert(r[2]->has_noncurrent);
	ck_assert_uint_eq(r[2]->noncurrent_days, 2);
	ck_assert_uint_eq(r[2]->newer_noncurrent, 2);
	ck_assert_uint_eq(r[2]->abort_days, 5);
	ck_assert_uint_eq(r[3]->filter_form, 0);
	ck_assert(r[3]->exp_delete_marker);
	ck_assert(!r[4]->enabled);

	/* Rendered and parsed again: the same rules. */
	struct xml_w w;
	xml_init(&w, 1 << 20);
	lc_render(&w, c);
	const char *out;
	size_t n;
	ck_assert_int_eq(xml_finish(&w, &out, &n), 0);
	Iolake__Meta__LifecycleConfig *c2 = NULL;
	const char *msg = NULL;
	ck_assert_int_eq(lc_parse(out, n, &c2, &msg, NULL, 0), S3E_OK);
	ck_assert_uint_eq(c2->n_rules, 5);
	for (size_t i = 0; i < 5; i++) {
		ck_assert_str_eq(c2->rules[i]->id, c->rules[i]->id);
		ck_assert_str_eq(c2->rules[i]->prefix, c->rules[i]->prefix);
		ck_assert_uint_eq(c2->rules[i]->filter_form, c->rules[i]->filter_form);
		ck_assert_uint_eq(c2->rules[i]->exp_days, c->rules[i]->exp_days);
		ck_assert_uint_eq(c2->rules[i]->exp_date_ms, c->rules[i]->exp_date_ms);
		ck_assert_uint_eq(c2->rules[i]->n_tags, c->rules[i]->n_tags);
	}
	xml_free(&w);
	lc_config_free(c2);
	lc_config_free(c);
}
END_TEST

#define RULE(body) "<LifecycleConfiguration><Rule>" body "</Rule></LifecycleConfiguration>"

START_TEST(test_refused)
{
	ck_assert_int_eq(parse_err("not xml"), S3E_MalformedXML);
	ck_assert_int_eq(parse_err("<LifecycleConfiguration></LifecycleConfiguration>"),
			 S3E_MalformedXML);
	/* No Status; no Filter nor Prefix; both. */
	ck_assert_int_eq(parse_err(RULE("<Filter/><Expiration><Days>1</Days></Expiration>")),
			 S3E_MalformedXML);
	ck_assert_int_eq(parse_err(RULE("<Status>Enabled</Status>"
					"<Expiration><Days>1</Days></Expiration>")),
			 S3E_MalformedXML);
	ck_assert_int_eq(parse_err(RULE("<Prefix/><Filter/><Status>Enabled</Status>"
					"<Expiration><Days>1</Days></Expiration>")),
			 S3E_MalformedXML);
	/* Two conditions under Filter without And. */
	ck_assert_int_eq(parse_err(RULE("<Filter><Prefix>a</Prefix><ObjectSizeLessThan>5"
					"</ObjectSizeLessThan></Filter><Status>Enabled</Status>"
					"<Expiration><Days>1</Days></Expiration>")),
			 S3E_MalformedXML);
	/* Days with Date, Days with the marker flag. */
	ck_assert_int_eq(parse_err(RULE("<Filter/><Status>Enabled</Status><Expiration><Days>1"
					"</Days><Date>2030-01-01T00:00:00Z</Date></Expiration>")),
			 S3E_MalformedXML);
	ck_assert_int_eq(parse_err(RULE("<Filter/><Status>Enabled</Status><Expiration><Days>1"
					"</Days><ExpiredObjectDeleteMarker>true"
					"</ExpiredObjectDeleteMarker></Expiration>")),
			 S3E_MalformedXML);
	ck_assert_int_eq(parse_err(RULE("<Filter/><Status>On</Status>"
					"<Expiration><Days>1</Days></Expiration>")),
			 S3E_MalformedXML);
	ck_assert_int_eq(parse_err(RULE("<Filter/><Status>Enabled</Status><Bogus/>"
					"<Expiration><Days>1</Days></Expiration>")),
			 S3E_MalformedXML);
	/* Values. */
	ck_assert_int_eq(parse_err(RULE("<Filter/><Status>Enabled</Status>"
					"<Expiration><Days>0</Days></Expiration>")),
			 S3E_InvalidArgument);
	ck_assert_int_eq(parse_err(RULE("<Filter/><Status>Enabled</Status>"
					"<Expiration><Days>-1</Days></Expiration>")),
			 S3E_InvalidArgument);
	ck_assert_int_eq(parse_err(RULE("<Filter/><Status>Enabled</Status><Expiration><Date>"
					"2030-01-01T10:00:00Z</Date></Expiration>")),
			 S3E_InvalidArgument);
	ck_assert_int_eq(parse_err(RULE("<Filter><And><ObjectSizeGreaterThan>10"
					"</ObjectSizeGreaterThan><ObjectSizeLessThan>10"
					"</ObjectSizeLessThan></And></Filter><Status>Enabled</Status>"
					"<Expiration><Days>1</Days></Expiration>")),
			 S3E_InvalidArgument);
	/* Combinations. */
	ck_assert_int_eq(parse_err(RULE("<Filter/><Status>Enabled</Status>")), S3E_InvalidRequest);
	ck_assert_int_eq(parse_err(RULE("<Filter><Tag><Key>a</Key><Value>b</Value></Tag></Filter>"
					"<Status>Enabled</Status><AbortIncompleteMultipartUpload>"
					"<DaysAfterInitiation>1</DaysAfterInitiation>"
					"</AbortIncompleteMultipartUpload>")),
			 S3E_InvalidRequest);
	ck_assert_int_eq(parse_err(RULE("<Filter/><Status>Enabled</Status><Transition><Days>1"
					"</Days><StorageClass>GLACIER</StorageClass></Transition>")),
			 S3E_NotImplemented);
	/* Duplicate IDs. */
	ck_assert_int_eq(parse_err("<LifecycleConfiguration>"
				   "<Rule><ID>x</ID><Filter/><Status>Enabled</Status>"
				   "<Expiration><Days>1</Days></Expiration></Rule>"
				   "<Rule><ID>x</ID><Filter/><Status>Enabled</Status>"
				   "<Expiration><Days>2</Days></Expiration></Rule>"
				   "</LifecycleConfiguration>"),
			 S3E_InvalidArgument);
	/* 1,001 rules. */
	size_t cap = 1100 * 128, n = 0;
	char *big = malloc(cap);
	n += (size_t)snprintf(big + n, cap - n, "<LifecycleConfiguration>");
	for (int i = 0; i < 1001; i++)
		n += (size_t)snprintf(big + n, cap - n,
				      "<Rule><ID>r%d</ID><Filter/><Status>Enabled</Status>"
				      "<Expiration><Days>1</Days></Expiration></Rule>", i);
	snprintf(big + n, cap - n, "</LifecycleConfiguration>");
	ck_assert_int_eq(parse_err(big), S3E_MalformedXML);
	free(big);
	/* An entity declaration is refused. */
	ck_assert_int_eq(parse_err("<!DOCTYPE a [<!ENTITY x \"y\">]><LifecycleConfiguration/>"),
			 S3E_MalformedXML);
}
END_TEST

static Iolake__Meta__ObjectRecord__TagsEntry tag(const char *k, const char *v)
{
	Iolake__Meta__ObjectRecord__TagsEntry t = IOLAKE__META__OBJECT_RECORD__TAGS_ENTRY__INIT;
	t.key = (char *)k;
	t.value = (char *)v;
	return t;
}

START_TEST(test_match)
{
	Iolake__Meta__LifecycleConfig *c = parse_ok(DOC);
	Iolake__Meta__LifecycleRule **r = c->rules;
	Iolake__Meta__ObjectRecord__TagsEntry t1 = tag("class", "tmp"), t2 = tag("team", "a"),
					      t3 = tag("team", "b");
	Iolake__Meta__ObjectRecord__TagsEntry *both[] = { &t2, &t1 }, *wrong[] = { &t1, &t3 };
	struct lc_obj o = { .key = "logs/x", .size = 5 };
	/* prefix */
	ck_assert(lc_rule_matches(r[0], &o));
	o.key = "log/x";
	ck_assert(!lc_rule_matches(r[0], &o));
	ck_assert(!lc_rule_matches(r[4], &(struct lc_obj){ .key = "logs/x" })); /* disabled */
	/* And: prefix, every tag (any order), 100 < size < 1000 */
	o = (struct lc_obj){ .key = "t/a", .size = 500, .tags = both, .n_tags = 2 };
	ck_assert(lc_rule_matches(r[1], &o));
	o.size = 100;
	ck_assert(!lc_rule_matches(r[1], &o));
	o.size = 1000;
	ck_assert(!lc_rule_matches(r[1], &o));
	o.size = 101;
	ck_assert(lc_rule_matches(r[1], &o));
	o.tags = wrong;
	ck_assert(!lc_rule_matches(r[1], &o));
	o.tags = both;
	o.n_tags = 1;
	ck_assert(!lc_rule_matches(r[1], &o));
	o.n_tags = 2;
	o.key = "u/a";
	ck_assert(!lc_rule_matches(r[1], &o));
	/* Empty filter: everything. */
	ck_assert(lc_rule_matches(r[2], &(struct lc_obj){ .key = "anything" }));
	lc_config_free(c);
}
END_TEST

START_TEST(test_due)
{
	/* Days round up to the next day boundary; a boundary stays. */
	ck_assert_uint_eq(lc_due_ms(0, 1, DAY), 1000);
	ck_assert_uint_eq(lc_due_ms(1, 1, DAY), 2000);
	ck_assert_uint_eq(lc_due_ms(999, 1, DAY), 2000);
	ck_assert_uint_eq(lc_due_ms(1000, 3, DAY), 4000);
	ck_assert_uint_eq(lc_due_ms(1, 1, 0), 2 * LC_DAY_MS);   /* 0: real days */

	Iolake__Meta__LifecycleConfig *c = parse_ok(DOC);
	const Iolake__Meta__LifecycleRule *which = NULL;
	struct lc_obj o = { .key = "logs/a", .size = 1 };
	ck_assert_uint_eq(lc_current_expiry(c, &o, 1500, DAY, &which), 5000);
	ck_assert_str_eq(which->id, "exp");   /* the disabled 1-day rule does not count */
	o.key = "other";
	ck_assert_uint_eq(lc_current_expiry(c, &o, 1500, DAY, &which), 0);
	ck_assert_ptr_null(which);
	/* A Date is the date, whatever the clock. */
	Iolake__Meta__ObjectRecord__TagsEntry t1 = tag("class", "tmp"), t2 = tag("team", "a");
	Iolake__Meta__ObjectRecord__TagsEntry *both[] = { &t1, &t2 };
	o = (struct lc_obj){ .key = "t/a", .size = 500, .tags = both, .n_tags = 2 };
	ck_assert_uint_eq(lc_current_expiry(c, &o, 1500, DAY, &which), 1893456000000ull);
	ck_assert_str_eq(which->id, "and");

	/* Noncurrent: 2 days after becoming noncurrent, beyond the 2 newest. */
	o = (struct lc_obj){ .key = "k", .size = 1 };
	ck_assert(!lc_noncurrent_due(c, &o, 1000, 3, 2999, DAY));
	ck_assert(lc_noncurrent_due(c, &o, 1000, 3, 3000, DAY));
	ck_assert(!lc_noncurrent_due(c, &o, 1000, 2, 100000, DAY));
	ck_assert(!lc_noncurrent_due(c, &o, 1000, 1, 100000, DAY));
	/* Markers: the flag (any age) under dm/; elsewhere only Days rules. */
	ck_assert(lc_marker_due(c, "dm/x", 5000, 5000, DAY));
	ck_assert(!lc_marker_due(c, "x", 5000, 1000000, DAY));
	ck_assert(!lc_marker_due(c, "logs/x", 5000, 7999, DAY));
	ck_assert(lc_marker_due(c, "logs/x", 5000, 8000, DAY));
	/* Uploads: 5 days after initiation. */
	ck_assert(!lc_upload_due(c, "u", 500, 5999, DAY));
	ck_assert(lc_upload_due(c, "u", 500, 6000, DAY));
	lc_config_free(c);
}
END_TEST

START_TEST(test_header)
{
	char v[128];
	size_t n = lc_expiration_header(1893456000000ull, "a\"b", v, sizeof(v));
	ck_assert_uint_gt(n, 0);
	ck_assert_str_eq(v, "expiry-date=\"Tue, 01 Jan 2030 00:00:00 GMT\", rule-id=\"a\\\"b\"");
	ck_assert_uint_eq(lc_expiration_header(0, "x", v, 20), 0);   /* too small */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("lc_rule");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_parse);
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_match);
	tcase_add_test(tc, test_due);
	tcase_add_test(tc, test_header);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
