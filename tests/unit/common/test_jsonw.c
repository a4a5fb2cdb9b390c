/*
 * test_jsonw.c — the JSON writer: commas and nesting, escaping (quote,
 * backslash, control bytes; UTF-8 passed through), numbers, sticky
 * errors (size bound, depth), and every document read back by
 * common/json.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/jsonw.h"

START_TEST(test_document)
{
	struct jsonw w;
	jsonw_init(&w, 0);
	jsonw_obj_begin(&w);
	jsonw_kstr(&w, "s", "a\"b\\c\n\t\x01\xc3\xa9");
	jsonw_ku64(&w, "u", UINT64_MAX);
	jsonw_ki64(&w, "i", -5);
	jsonw_kbool(&w, "t", true);
	jsonw_key(&w, "n");
	jsonw_null(&w);
	jsonw_key(&w, "a");
	jsonw_arr_begin(&w);
	jsonw_u64(&w, 1);
	jsonw_obj_begin(&w);
	jsonw_obj_end(&w);
	jsonw_arr_begin(&w);
	jsonw_arr_end(&w);
	jsonw_str(&w, NULL);
	jsonw_arr_end(&w);
	jsonw_obj_end(&w);
	char *doc;
	size_t len;
	ck_assert_int_eq(jsonw_finish(&w, &doc, &len), 0);
	ck_assert_str_eq(doc, "{\"s\":\"a\\\"b\\\\c\\n\\t\\u0001\xc3\xa9\",\"u\":18446744073709551615,"
			      "\"i\":-5,\"t\":true,\"n\":null,\"a\":[1,{},[],\"\"]}");
	ck_assert_uint_eq(len, strlen(doc));
	struct json_doc *d;
	ck_assert_int_eq(json_parse(doc, len, NULL, &d, NULL), 0);
	const struct json_value *s = json_get(json_root(d), "s");
	ck_assert_str_eq(s->u.str.s, "a\"b\\c\n\t\x01\xc3\xa9");
	json_free(d);
	free(doc);
	jsonw_free(&w);
}
END_TEST

START_TEST(test_errors)
{
	struct jsonw w;
	char *doc;
	size_t len;
	jsonw_init(&w, 16);
	jsonw_obj_begin(&w);
	jsonw_kstr(&w, "key", "a value too long for sixteen bytes");
	jsonw_obj_end(&w);
	ck_assert_int_eq(jsonw_finish(&w, &doc, &len), -E2BIG);
	jsonw_init(&w, 0);
	for (int i = 0; i < JSONW_MAX_DEPTH + 2; i++)
		jsonw_arr_begin(&w);
	ck_assert_int_eq(jsonw_finish(&w, &doc, &len), -ELOOP);
	jsonw_free(&w);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("jsonw");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_document);
	tcase_add_test(tc, test_errors);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
