/*
 * test_xml_doc.c — the expat reader under the request documents
 * (gateway/xml_doc.c): the hooks see each element's path, attributes and
 * own text; xml_doc_at matches whole paths only; the limits (body, depth,
 * text) and the refusal of any DOCTYPE hold with a caller's smaller limits
 * too; long text is cut and flagged when the caller asks for that; a
 * hook's error ends the parse with no further hook called.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gateway/xml_doc.h"

/* What the hooks saw, as one line: "+A/B[attr=v]" on open, "-A/B=text"
 * on close. */
struct seen {
	char log[1024];
	size_t n;
	int stop_at_close;     /* stop with -EINVAL at the nth close (1-based) */
	int closes;
};

static void path_of(const struct xml_doc *d, char *out, size_t cap)
{
	size_t n = 0;
	out[0] = 0;
	for (int i = 0; i < d->depth; i++)
		n += (size_t)snprintf(out + n, cap - n, "%s%s", i ? "/" : "", d->path[i]);
}

static void on_start(struct xml_doc *d)
{
	struct seen *s = d->ud;
	char p[256];
	path_of(d, p, sizeof(p));
	s->n += (size_t)snprintf(s->log + s->n, sizeof(s->log) - s->n, "+%s", p);
	for (const char **a = d->attrs; a && a[0]; a += 2)
		s->n += (size_t)snprintf(s->log + s->n, sizeof(s->log) - s->n, "[%s=%s]", a[0], a[1]);
	s->n += (size_t)snprintf(s->log + s->n, sizeof(s->log) - s->n, " ");
}

static void on_end(struct xml_doc *d)
{
	struct seen *s = d->ud;
	char p[256];
	path_of(d, p, sizeof(p));
	s->n += (size_t)snprintf(s->log + s->n, sizeof(s->log) - s->n, "-%s=%s%s ", p, d->text,
				 d->text_over ? "(cut)" : "");
	ck_assert_uint_eq(strlen(d->text), d->text_len);
	if (++s->closes == s->stop_at_close)
		xml_doc_stop(d, -EINVAL);
}

static int parse(const char *x, struct seen *s, int max_depth, size_t text_max, bool long_ok)
{
	struct xml_doc d = { .max_depth = max_depth, .text_max = text_max, .long_text_ok = long_ok,
			     .on_start = on_start, .on_end = on_end, .ud = s };
	return xml_doc_parse(&d, x, strlen(x), 4096);
}

START_TEST(test_walk)
{
	struct seen s = { 0 };
	const char *x = "<?xml version=\"1.0\"?><A xmlns=\"u\"><B k=\"v\">one &amp; two</B>"
			"<C><D>x</D>tail</C></A>";
	ck_assert_int_eq(parse(x, &s, 0, 0, false), 0);
	ck_assert_str_eq(s.log, "+A[xmlns=u] +A/B[k=v] -A/B=one & two +A/C +A/C/D -A/C/D=x "
				"-A/C=tail -A= ");
}
END_TEST

static bool at_hook_result;
static void at_end(struct xml_doc *d)
{
	if (d->depth == 3)
		at_hook_result = xml_doc_at(d, "A/B/C") && !xml_doc_at(d, "A/B") &&
				 !xml_doc_at(d, "A/B/C/D") && !xml_doc_at(d, "A/B/Cx") &&
				 !xml_doc_at(d, "A/B/") && !xml_doc_at(d, "") &&
				 !strcmp(xml_doc_name(d), "C") && !strcmp(xml_doc_parent(d), "B");
}

START_TEST(test_at)
{
	struct xml_doc d = { .on_end = at_end };
	const char *x = "<A><B><C>t</C></B></A>";
	at_hook_result = false;
	ck_assert_int_eq(xml_doc_parse(&d, x, strlen(x), 100), 0);
	ck_assert(at_hook_result);
	ck_assert_str_eq(xml_doc_parent(&d), "");   /* nothing open after the parse */
	ck_assert_str_eq(xml_doc_name(&d), "");
}
END_TEST

START_TEST(test_limits)
{
	struct seen s = { 0 };
	/* body over max_len: refused before parsing */
	struct xml_doc d = { .on_start = on_start, .on_end = on_end, .ud = &s };
	ck_assert_int_eq(xml_doc_parse(&d, "<A/>", 4, 3), -E2BIG);
	ck_assert_uint_eq(s.n, 0);
	/* depth: the caller's, and never past XML_DOC_DEPTH_MAX */
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(parse("<A><B><C/></B></A>", &s, 3, 0, false), 0);
	ck_assert_int_eq(parse("<A><B><C><D/></C></B></A>", &s, 3, 0, false), -EBADMSG);
	char deep[256] = "";
	for (int i = 0; i < XML_DOC_DEPTH_MAX + 1; i++)
		strcat(deep, "<x>");
	for (int i = 0; i < XML_DOC_DEPTH_MAX + 1; i++)
		strcat(deep, "</x>");
	ck_assert_int_eq(parse(deep, &s, 100, 0, false), -EBADMSG);
	/* text: -EBADMSG past text_max, or cut and flagged */
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(parse("<A>12345</A>", &s, 0, 5, false), 0);
	ck_assert_int_eq(parse("<A>123456</A>", &s, 0, 5, false), -EBADMSG);
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(parse("<A><B>123456</B><C>ok</C></A>", &s, 0, 5, true), 0);
	ck_assert_str_eq(s.log, "+A +A/B -A/B=(cut) +A/C -A/C=ok -A= ");
	/* not XML, not one document */
	ck_assert_int_eq(parse("<A>", &s, 0, 0, false), -EBADMSG);
	ck_assert_int_eq(parse("<A/><B/>", &s, 0, 0, false), -EBADMSG);
	ck_assert_int_eq(parse("", &s, 0, 0, false), -EBADMSG);
	ck_assert_int_eq(xml_doc_parse(&d, NULL, 0, 10), -EBADMSG);
}
END_TEST

START_TEST(test_doctype)
{
	struct seen s = { 0 };
	const char *laughs = "<?xml version=\"1.0\"?><!DOCTYPE A [<!ENTITY a \"aaaaaaaaaa\">"
			     "<!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\">]><A>&b;</A>";
	ck_assert_int_eq(parse(laughs, &s, 0, 0, false), -EBADMSG);
	ck_assert_uint_eq(s.n, 0);   /* refused at the DOCTYPE: no element seen */
	const char *xxe = "<!DOCTYPE A SYSTEM \"file:///etc/passwd\"><A/>";
	ck_assert_int_eq(parse(xxe, &s, 0, 0, false), -EBADMSG);
	ck_assert_uint_eq(s.n, 0);
	/* an undeclared entity is not well-formed */
	ck_assert_int_eq(parse("<A>&nope;</A>", &s, 0, 0, false), -EBADMSG);
}
END_TEST

START_TEST(test_stop)
{
	struct seen s = { .stop_at_close = 1 };
	ck_assert_int_eq(parse("<A><B>1</B><C>2</C></A>", &s, 0, 0, false), -EINVAL);
	ck_assert_str_eq(s.log, "+A +A/B -A/B=1 ");   /* nothing after the stop */
	/* the first error stays */
	struct xml_doc d = { 0 };
	xml_doc_stop(&d, -EINVAL);
	xml_doc_stop(&d, -E2BIG);
	ck_assert_int_eq(d.err, -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("xml_doc");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_walk);
	tcase_add_test(tc, test_at);
	tcase_add_test(tc, test_limits);
	tcase_add_test(tc, test_doctype);
	tcase_add_test(tc, test_stop);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
