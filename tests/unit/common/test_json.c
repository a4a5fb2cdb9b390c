/*
 * test_json.c — common/json: RFC 8259's grammar accepted and refused
 * (every value type, whitespace, numbers, escapes, the examples of RFC
 * 8259 section 13), UTF-8 validation (overlong forms, encoded
 * surrogates, truncated sequences, above U+10FFFF), \u escapes and
 * surrogate pairs, the limits (size, depth, members), duplicate keys,
 * error offsets, and a deep input that must not recurse past the limit.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

static int parse(const char *s, struct json_doc **d)
{
	return json_parse(s, strlen(s), NULL, d, NULL);
}

/* Parses s, expects rc; frees. */
static void expect(const char *s, int rc)
{
	struct json_doc *d;
	struct json_error e;
	int got = json_parse(s, strlen(s), NULL, &d, &e);
	ck_assert_msg(got == rc, "%s: got %d want %d (%s at %zu)", s, got, rc, got ? e.msg : "-",
		      got ? e.offset : 0);
	if (got == 0)
		json_free(d);
	else
		ck_assert_ptr_null(d);
}

START_TEST(test_values)
{
	struct json_doc *d;
	ck_assert_int_eq(parse(" { \"a\" : [1, -2.5e3, true, false, null, \"x\", {}, []] , \"b\":{\"c\":\"d\"}}\n", &d), 0);
	const struct json_value *r = json_root(d);
	ck_assert_int_eq(r->type, JSON_OBJECT);
	ck_assert_uint_eq(r->u.list.n, 2);
	const struct json_value *a = json_get(r, "a");
	ck_assert_ptr_nonnull(a);
	ck_assert_int_eq(a->type, JSON_ARRAY);
	ck_assert_uint_eq(a->u.list.n, 8);
	const struct json_value *v = a->u.list.first;
	ck_assert_int_eq(v->type, JSON_NUMBER);
	ck_assert(v->u.num.is_int);
	ck_assert_int_eq(v->u.num.i, 1);
	v = v->next;
	ck_assert_str_eq(v->u.num.text, "-2.5e3");
	ck_assert(!v->u.num.is_int);
	ck_assert(v->u.num.d == -2500.0);
	v = v->next;
	ck_assert_int_eq(v->type, JSON_TRUE);
	v = v->next;
	ck_assert_int_eq(v->type, JSON_FALSE);
	v = v->next;
	ck_assert_int_eq(v->type, JSON_NULL);
	v = v->next;
	ck_assert_int_eq(v->type, JSON_STRING);
	ck_assert_str_eq(v->u.str.s, "x");
	v = v->next;
	ck_assert_int_eq(v->type, JSON_OBJECT);
	ck_assert_uint_eq(v->u.list.n, 0);
	v = v->next;
	ck_assert_int_eq(v->type, JSON_ARRAY);
	ck_assert_ptr_null(v->next);
	const struct json_value *b = json_get(r, "b");
	ck_assert_str_eq(b->key, "b");
	ck_assert_str_eq(json_get(b, "c")->u.str.s, "d");
	ck_assert_ptr_null(json_get(r, "z"));
	ck_assert_ptr_null(json_get(a, "a"));           /* not an object */
	ck_assert_uint_eq(json_get(r, "a")->offset, 9);
	json_free(d);

	/* RFC 8259: any value at top level, surrounded by whitespace. */
	const char *scalars[] = { "0", "-0", "1e5", "\"\"", "true", "false", "null", " \t\r\n 42 \t\r\n" };
	for (size_t i = 0; i < sizeof(scalars) / sizeof(scalars[0]); i++)
		expect(scalars[i], 0);
	ck_assert_str_eq(json_type_name(JSON_OBJECT), "object");
}
END_TEST

/* RFC 8259 section 13's two examples. */
START_TEST(test_rfc_examples)
{
	const char *img =
		"{\n  \"Image\": {\n    \"Width\":  800,\n    \"Height\": 600,\n"
		"    \"Title\":  \"View from 15th Floor\",\n    \"Thumbnail\": {\n"
		"        \"Url\":    \"http://www.example.com/image/481989943\",\n"
		"        \"Height\": 125,\n        \"Width\":  100\n    },\n"
		"    \"Animated\" : false,\n    \"IDs\": [116, 943, 234, 38793]\n  }\n}";
	struct json_doc *d;
	ck_assert_int_eq(parse(img, &d), 0);
	const struct json_value *im = json_get(json_root(d), "Image");
	ck_assert_int_eq(json_get(im, "Width")->u.num.i, 800);
	ck_assert_str_eq(json_get(json_get(im, "Thumbnail"), "Url")->u.str.s,
			 "http://www.example.com/image/481989943");
	ck_assert_uint_eq(json_get(im, "IDs")->u.list.n, 4);
	/* The compact length: the input without whitespace between tokens. */
	size_t ws = 0;
	bool in_str = false;
	for (const char *c = img; *c; c++) {
		if (*c == '"')
			in_str = !in_str;
		if (!in_str && strchr(" \n", *c))
			ws++;
	}
	ck_assert_uint_eq(json_compact_len(d), strlen(img) - ws);
	json_free(d);

	const char *geo =
		"[{\"precision\": \"zip\", \"Latitude\": 37.7668, \"Longitude\": -122.3959,"
		" \"Address\": \"\", \"City\": \"SAN FRANCISCO\", \"State\": \"CA\", \"Zip\": \"94107\","
		" \"Country\": \"US\"}, {\"precision\": \"zip\", \"Latitude\": 37.371991,"
		" \"Longitude\": -122.026020, \"Address\": \"\", \"City\": \"SUNNYVALE\","
		" \"State\": \"CA\", \"Zip\": \"94085\", \"Country\": \"US\"}]";
	ck_assert_int_eq(parse(geo, &d), 0);
	const struct json_value *second = json_root(d)->u.list.first->next;
	ck_assert(fabs(json_get(second, "Longitude")->u.num.d - -122.026020) < 1e-9);
	json_free(d);
}
END_TEST

START_TEST(test_grammar_errors)
{
	const char *bad[] = {
		"", " ", "{", "}", "[", "[1,]", "[,1]", "{\"a\":1,}", "{,}", "{\"a\"}", "{\"a\" 1}",
		"{a:1}", "{'a':1}", "['a']", "[1 2]", "{\"a\":1 \"b\":2}", "tru", "True", "nul",
		"NaN", "Infinity", "-Infinity", "+1", "01", "-01", "1.", ".5", "1e", "1e+", "-",
		"0x10", "1 2", "{} {}", "[] x", "// c\n1", "/* c */ 1", "\"abc", "\"\\x\"",
		"\"\\u12\"", "\"\\u12G4\"", "\"a\tb\"", "\"a\nb\"", "\xef\xbb\xbf{}", "\x00",
		"\"\\\"", "[\"\\",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect(bad[i], -EBADMSG);
	/* An embedded NUL outside a string. */
	struct json_doc *d;
	ck_assert_int_eq(json_parse("[1,\0 2]", 7, NULL, &d, NULL), -EBADMSG);
	/* Error offsets point at the problem. */
	struct json_error e;
	ck_assert_int_eq(json_parse("[1, 2,, 3]", 10, NULL, &d, &e), -EBADMSG);
	ck_assert_uint_eq(e.offset, 6);
	ck_assert_int_eq(json_parse("{\"a\": tx}", 9, NULL, &d, &e), -EBADMSG);
	ck_assert_uint_eq(e.offset, 6);
	ck_assert_str_eq(e.msg, "unexpected character");
	ck_assert_int_eq(json_parse("[1] 2", 5, NULL, &d, &e), -EBADMSG);
	ck_assert_uint_eq(e.offset, 4);
}
END_TEST

START_TEST(test_numbers)
{
	struct json_doc *d;
	ck_assert_int_eq(parse("[9223372036854775807, -9223372036854775808, 9223372036854775808,"
			       " -9223372036854775809, 1E400, -0.0, 123456789012345678901234567890, 0.1,"
			       " 1e-400]", &d), 0);
	const struct json_value *v = json_root(d)->u.list.first;
	ck_assert(v->u.num.is_int);
	ck_assert(v->u.num.i == INT64_MAX);
	v = v->next;
	ck_assert(v->u.num.is_int);
	ck_assert(v->u.num.i == INT64_MIN);
	v = v->next;
	ck_assert(!v->u.num.is_int);     /* one past INT64_MAX */
	ck_assert(v->u.num.d == 9223372036854775808.0);
	v = v->next;
	ck_assert(!v->u.num.is_int);
	v = v->next;
	ck_assert(isinf(v->u.num.d));   /* out of double's range: kept as text */
	ck_assert_str_eq(v->u.num.text, "1E400");
	v = v->next;
	ck_assert(!v->u.num.is_int);
	ck_assert(v->u.num.d == 0.0 && signbit(v->u.num.d));
	v = v->next;
	ck_assert(!v->u.num.is_int);
	ck_assert_str_eq(v->u.num.text, "123456789012345678901234567890");
	v = v->next;
	ck_assert(v->u.num.d == 0.1);
	v = v->next;
	ck_assert(v->u.num.d == 0.0);
	json_free(d);
}
END_TEST

START_TEST(test_strings)
{
	struct json_doc *d;
	ck_assert_int_eq(parse("[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\", \"\\u0041\\u00e9\\u20AC\", \"\\ud83d\\ude00\","
			       " \"a\\u0000b\", \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\", \"\\uD834\\uDD1E\","
			       " \"\\uFFFF\\uE000\\u007f\"]", &d), 0);
	const struct json_value *v = json_root(d)->u.list.first;
	ck_assert_str_eq(v->u.str.s, "\"\\/\b\f\n\r\t");
	v = v->next;
	ck_assert_str_eq(v->u.str.s, "A\xc3\xa9\xe2\x82\xac");
	v = v->next;
	ck_assert_str_eq(v->u.str.s, "\xf0\x9f\x98\x80");    /* U+1F600 from a pair */
	v = v->next;
	ck_assert_uint_eq(v->u.str.len, 3);                  /* U+0000 kept, length says so */
	ck_assert(memcmp(v->u.str.s, "a\0b", 4) == 0);
	v = v->next;
	ck_assert_str_eq(v->u.str.s, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
	v = v->next;
	ck_assert_str_eq(v->u.str.s, "\xf0\x9d\x84\x9e");    /* U+1D11E */
	v = v->next;
	ck_assert_str_eq(v->u.str.s, "\xef\xbf\xbf\xee\x80\x80\x7f");
	json_free(d);

	/* Keys are decoded too. */
	ck_assert_int_eq(parse("{\"\\u0061b\": 1}", &d), 0);
	ck_assert_ptr_nonnull(json_get(json_root(d), "ab"));
	json_free(d);

	/* Lone or reversed surrogates in escapes. */
	const char *bad[] = {
		"\"\\ud800\"", "\"\\udc00\"", "\"\\ud800x\"", "\"\\ud800\\u0041\"",
		"\"\\ude00\\ud83d\"", "\"\\ud800\\ud800\"", "\"\\ud800\\\"",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect(bad[i], -EBADMSG);
}
END_TEST

START_TEST(test_utf8)
{
	const char *bad[] = {
		"\"\x80\"",                  /* lone continuation */
		"\"\xbf\"",
		"\"\xc0\xaf\"",              /* overlong '/' */
		"\"\xc1\xbf\"",
		"\"\xe0\x80\xaf\"",          /* overlong, 3 bytes */
		"\"\xe0\x9f\xbf\"",
		"\"\xf0\x80\x80\xaf\"",      /* overlong, 4 bytes */
		"\"\xf0\x8f\xbf\xbf\"",
		"\"\xed\xa0\x80\"",          /* encoded surrogate U+D800 */
		"\"\xed\xbf\xbf\"",          /* U+DFFF */
		"\"\xf4\x90\x80\x80\"",      /* U+110000 */
		"\"\xf5\x80\x80\x80\"",
		"\"\xff\"", "\"\xfe\"",
		"\"\xc3\"",                  /* truncated */
		"\"\xe2\x82\"",
		"\"\xf0\x9f\x98\"",
		"\"\xc3\x28\"",              /* bad continuation */
		"\"\xe2\x28\xa1\"",
		"\xc3\xa9",                  /* valid UTF-8, but not inside a string */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect(bad[i], -EBADMSG);
	/* Boundaries that are valid. */
	const char *good[] = {
		"\"\xc2\x80\"", "\"\xdf\xbf\"", "\"\xe0\xa0\x80\"", "\"\xed\x9f\xbf\"",
		"\"\xee\x80\x80\"", "\"\xef\xbf\xbf\"", "\"\xf0\x90\x80\x80\"", "\"\xf4\x8f\xbf\xbf\"",
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		expect(good[i], 0);
	struct json_doc *d;
	struct json_error e;
	ck_assert_int_eq(json_parse("[\"ok\", \"\xc0\xaf\"]", 13, NULL, &d, &e), -EBADMSG);
	ck_assert_uint_eq(e.offset, 8);
	ck_assert_str_eq(e.msg, "invalid UTF-8");
}
END_TEST

START_TEST(test_limits)
{
	struct json_doc *d;
	struct json_error e;
	struct json_limits lim = { .max_bytes = 10 };
	ck_assert_int_eq(json_parse("[1,2,3,4,5]", 11, &lim, &d, &e), -E2BIG);
	ck_assert_int_eq(json_parse("[1,2,3,4]", 9, &lim, &d, &e), 0);
	json_free(d);

	/* Depth: 32 by default; 32 nested arrays pass, 33 do not. */
	char deep[200];
	for (int depth = 31; depth <= 34; depth++) {
		memset(deep, '[', (size_t)depth);
		memset(deep + depth, ']', (size_t)depth);
		int rc = json_parse(deep, 2 * (size_t)depth, NULL, &d, &e);
		if (depth <= 32) {
			ck_assert_int_eq(rc, 0);
			json_free(d);
		} else {
			ck_assert_int_eq(rc, -ELOOP);
			ck_assert_uint_eq(e.offset, 32);
		}
	}
	lim = (struct json_limits){ .max_bytes = 1000, .max_depth = 2 };
	ck_assert_int_eq(json_parse("{\"a\":[1]}", 9, &lim, &d, &e), 0);
	json_free(d);
	ck_assert_int_eq(json_parse("{\"a\":[{}]}", 10, &lim, &d, &e), -ELOOP);
	/* A megabyte of '[' fails at the limit without recursing into it. */
	size_t big = 1 << 20;
	char *b = malloc(big);
	memset(b, '[', big);
	ck_assert_int_eq(json_parse(b, big, NULL, &d, &e), -ELOOP);
	memset(b, '{', big);
	ck_assert_int_eq(json_parse(b, big, NULL, &d, &e), -EBADMSG);   /* '{' needs a key */
	free(b);

	/* Members per object or array. */
	lim = (struct json_limits){ .max_bytes = 1000, .max_members = 3 };
	ck_assert_int_eq(json_parse("[1,2,3]", 7, &lim, &d, &e), 0);
	json_free(d);
	ck_assert_int_eq(json_parse("[1,2,3,4]", 9, &lim, &d, &e), -EMSGSIZE);
	ck_assert_int_eq(json_parse("{\"a\":1,\"b\":2,\"c\":3,\"d\":4}", 25, &lim, &d, &e), -EMSGSIZE);
	ck_assert_int_eq(json_parse("[[1,2,3],[1,2,3],[1,2,3]]", 25, &lim, &d, &e), 0);
	json_free(d);

	/* Many values: the arena grows past its first block. */
	size_t n = 100000;
	char *many = malloc(2 * n + 2);
	char *w = many;
	*w++ = '[';
	for (size_t i = 0; i < n; i++) {
		*w++ = '7';
		*w++ = ',';
	}
	w[-1] = ']';
	lim = (struct json_limits){ .max_bytes = 2 * n + 2, .max_members = (uint32_t)n };
	ck_assert_int_eq(json_parse(many, (size_t)(w - many), &lim, &d, &e), 0);
	ck_assert_uint_eq(json_root(d)->u.list.n, n);
	json_free(d);
	free(many);
	/* Storage tied to the document. */
	ck_assert_int_eq(parse("{}", &d), 0);
	char *extra = json_doc_alloc(d, 100000);
	ck_assert_ptr_nonnull(extra);
	memset(extra, 1, 100000);
	json_free(d);
}
END_TEST

START_TEST(test_duplicates)
{
	struct json_doc *d;
	struct json_error e;
	const char *dup = "{\"a\": 1, \"b\": {\"x\": 1, \"x\": 2}, \"a\": 3}";
	ck_assert_int_eq(parse(dup, &d), 0);
	ck_assert_int_eq(json_first_dup(d), 23);
	const struct json_value *r = json_root(d);
	ck_assert(r->u.list.dup_keys);
	ck_assert(json_get(r, "b")->u.list.dup_keys);
	ck_assert_int_eq(json_get(r, "a")->u.num.i, 1);  /* json_get: the first */
	json_free(d);
	ck_assert_int_eq(parse("{\"a\": 1, \"b\": {\"a\": 1}}", &d), 0);
	ck_assert_int_eq(json_first_dup(d), -1);
	ck_assert(!json_root(d)->u.list.dup_keys);
	json_free(d);
	/* Rejected outright; keys compare decoded. */
	struct json_limits lim = { .max_bytes = 100, .flags = JSON_REJECT_DUP_KEYS };
	ck_assert_int_eq(json_parse(dup, strlen(dup), &lim, &d, &e), -EBADMSG);
	ck_assert_str_eq(e.msg, "duplicate key");
	ck_assert_uint_eq(e.offset, 23);
	const char *esc = "{\"ab\": 1, \"a\\u0062\": 2}";
	ck_assert_int_eq(json_parse(esc, strlen(esc), &lim, &d, &e), -EBADMSG);
	const char *nul = "{\"a\": 1, \"a\\u0000\": 2}";
	ck_assert_int_eq(json_parse(nul, strlen(nul), &lim, &d, &e), 0);
	json_free(d);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("json");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_values);
	tcase_add_test(tc, test_rfc_examples);
	tcase_add_test(tc, test_grammar_errors);
	tcase_add_test(tc, test_numbers);
	tcase_add_test(tc, test_strings);
	tcase_add_test(tc, test_utf8);
	tcase_add_test(tc, test_limits);
	tcase_add_test(tc, test_duplicates);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
