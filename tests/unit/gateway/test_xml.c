/*
 * test_xml.c — the XML writer: exact output for nested documents, escaping
 * of markup and control characters, sticky errors (size cap, depth,
 * unbalanced close), buffer reuse after reset.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "gateway/xml.h"

START_TEST(test_document)
{
	struct xml_w w;
	xml_init(&w, 0);
	xml_decl(&w);
	xml_open_ns(&w, "ListAllMyBucketsResult", "http://s3.amazonaws.com/doc/2006-03-01/");
	xml_open(&w, "Buckets");
	xml_open(&w, "Bucket");
	xml_elem(&w, "Name", "a&b");
	xml_elem_u64(&w, "Size", 18446744073709551615ull);
	xml_elem_bool(&w, "IsTruncated", false);
	xml_elem(&w, "Empty", NULL);
	xml_close(&w);
	xml_close(&w);
	xml_close(&w);
	const char *out;
	size_t len;
	ck_assert_int_eq(xml_finish(&w, &out, &len), 0);
	const char *want = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
			   "<ListAllMyBucketsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
			   "<Buckets><Bucket><Name>a&amp;b</Name><Size>18446744073709551615</Size>"
			   "<IsTruncated>false</IsTruncated><Empty></Empty></Bucket></Buckets>"
			   "</ListAllMyBucketsResult>";
	ck_assert_str_eq(out, want);
	ck_assert_uint_eq(len, strlen(want));

	/* Reset keeps the buffer and starts over. */
	char *before = w.buf;
	xml_reset(&w);
	xml_elem(&w, "K", "v");
	ck_assert_int_eq(xml_finish(&w, &out, &len), 0);
	ck_assert_str_eq(out, "<K>v</K>");
	ck_assert_ptr_eq(w.buf, before);
	xml_free(&w);
}
END_TEST

START_TEST(test_escape)
{
	struct xml_w w;
	xml_init(&w, 0);
	const char s[] = "<a href=\"x\">'&'</a>\x01\t\n\r\x7f\xc3\xa9";
	xml_elem_n(&w, "T", s, sizeof(s) - 1);
	const char *out;
	size_t len;
	ck_assert_int_eq(xml_finish(&w, &out, &len), 0);
	ck_assert_str_eq(out, "<T>&lt;a href=&quot;x&quot;&gt;&apos;&amp;&apos;&lt;/a&gt;"
			      "&#x1;\t\n&#13;&#x7F;\xc3\xa9</T>");
	xml_free(&w);

	char dst[32];
	ck_assert_int_eq(xml_escape(dst, sizeof(dst), "a<b", 3), 6);
	ck_assert_str_eq(dst, "a&lt;b");
	ck_assert_int_eq(xml_escape(dst, 6, "a<b", 3), -ENOSPC); /* needs 7 with NUL */
	ck_assert_int_eq(xml_escape(dst, 7, "a<b", 3), 6);
}
END_TEST

START_TEST(test_errors)
{
	struct xml_w w;
	const char *out;
	size_t len;

	xml_init(&w, 16);
	xml_elem(&w, "Name", "0123456789"); /* 21 bytes > 16 */
	xml_elem(&w, "X", "y");             /* ignored: sticky */
	ck_assert_int_eq(xml_finish(&w, &out, &len), -E2BIG);
	ck_assert_uint_le(w.len, 16);
	xml_free(&w);

	xml_init(&w, 0);
	xml_close(&w);
	ck_assert_int_eq(xml_finish(&w, &out, &len), -EINVAL);
	xml_free(&w);

	xml_init(&w, 0);
	xml_open(&w, "Open");
	ck_assert_int_eq(xml_finish(&w, &out, &len), -EINVAL);
	xml_free(&w);

	xml_init(&w, 0);
	for (int i = 0; i <= XML_MAX_DEPTH; i++)
		xml_open(&w, "D");
	ck_assert_int_eq(xml_finish(&w, &out, &len), -EINVAL);
	xml_free(&w);

	xml_init(&w, 0);
	ck_assert_int_eq(xml_finish(&w, &out, &len), 0);
	ck_assert_uint_eq(len, 0);
	ck_assert_str_eq(out, "");
	xml_free(&w);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("xml");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_document);
	tcase_add_test(tc, test_escape);
	tcase_add_test(tc, test_errors);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
