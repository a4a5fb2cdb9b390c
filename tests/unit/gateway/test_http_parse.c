/*
 * test_http_parse.c — gateway/http_parse.c alone, fed requests whole and
 * a byte at a time (every fragment boundary http-parser can hand the
 * callbacks): repeated Content-Length headers (RFC 9112 section 6.3),
 * whitespace between a field name and its colon (section 5.1).
 *
 * Oracles: the request head the parser hands on (its headers, length,
 * body flags), the body bytes it delivers, and the status it fails with.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "gateway/http_parse.h"

struct seen {
	int heads, completes;
	size_t n_headers, n_content_length;
	uint64_t content_length;
	bool has_content_length, chunked;
	char cl_value[32];
	char body[64];
	size_t body_len;
};

static void on_head(void *ud, struct http_request *r)
{
	struct seen *s = ud;
	s->heads++;
	s->n_headers = r->n_headers;
	s->content_length = r->content_length;
	s->has_content_length = r->has_content_length;
	s->chunked = r->chunked;
	for (size_t i = 0; i < r->n_headers; i++) {
		const struct sigv4_header *h = &r->headers[i];
		if (h->name_len == 14 && strncasecmp(h->name, "content-length", 14) == 0) {
			s->n_content_length++;
			snprintf(s->cl_value, sizeof(s->cl_value), "%.*s", (int)h->value_len, h->value);
		}
	}
}

static void on_body(void *ud, const char *d, size_t n)
{
	struct seen *s = ud;
	ck_assert_uint_le(s->body_len + n, sizeof(s->body));
	memcpy(s->body + s->body_len, d, n);
	s->body_len += n;
}

static void on_complete(void *ud)
{
	((struct seen *)ud)->completes++;
}

static const struct http_parse_cb cb = { on_head, on_body, on_complete };

/* Parse req whole (step 0) or step bytes at a time; the error status. */
static int parse(const char *req, size_t step, struct seen *s)
{
	static struct http_parse hp;
	memset(s, 0, sizeof(*s));
	http_parse_init(&hp, &cb, s);
	size_t len = strlen(req), off = 0;
	while (off < len && !http_parse_error(&hp) && !s->completes) {
		size_t n = step ? (len - off < step ? len - off : step) : len - off;
		size_t used = http_parse_feed(&hp, req + off, n);
		if (!used)
			break;
		off += used;
	}
	return http_parse_error(&hp);
}

static const size_t steps[] = { 0, 1, 2, 3, 5, 7 };

START_TEST(test_repeat_same_value)
{
	/* What rclone's presigned PUT sends (Go writes its own header and
	 * the signed one). */
	const char *req = "PUT /b/k HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
			  "X-Amz-Meta-A: 1\r\ncontent-length: 5 \r\n\r\nhello";
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		struct seen s;
		ck_assert_int_eq(parse(req, steps[i], &s), 0);
		ck_assert_int_eq(s.heads, 1);
		ck_assert_int_eq(s.completes, 1);
		ck_assert(s.has_content_length);
		ck_assert_uint_eq(s.content_length, 5);
		ck_assert_uint_eq(s.n_content_length, 1);   /* one, as it was signed */
		ck_assert_str_eq(s.cl_value, "5");
		ck_assert_uint_eq(s.n_headers, 3);           /* Host, Content-Length, X-Amz-Meta-A */
		ck_assert_uint_eq(s.body_len, 5);
		ck_assert(memcmp(s.body, "hello", 5) == 0);
	}
}
END_TEST

START_TEST(test_repeat_refused)
{
	static const char *const bad[] = {
		/* two values */
		"PUT / HTTP/1.1\r\nContent-Length: 5\r\ncontent-length: 6\r\n\r\nhelloX",
		"PUT / HTTP/1.1\r\nContent-Length: 6\r\nContent-Length: 5\r\n\r\nhello!",
		/* the same number written another way */
		"PUT / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 05\r\n\r\nhello",
		/* three, the third other */
		"PUT / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\nContent-Length: 4\r\n\r\nhello",
		/* whitespace before the colon (RFC 9112 section 5.1), alone
		 * or as a second Content-Length */
		"PUT / HTTP/1.1\r\nContent-Length : 5\r\n\r\nhello",
		"PUT / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length : 5\r\n\r\nhello",
		"GET / HTTP/1.1\r\nX-A\t: 1\r\n\r\n",
		/* with Transfer-Encoding, repeats or not */
		"PUT / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n"
		"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n"
		"Content-Length: 5\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
	};
	for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++)
		for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
			struct seen s;
			ck_assert_msg(parse(bad[b], steps[i], &s) == 400, "request %zu step %zu", b,
				      steps[i]);
			ck_assert_int_eq(s.heads, 0);
		}
}
END_TEST

START_TEST(test_near_names)
{
	/* A header whose name starts as Content-Length does not lose the
	 * first one's framing, wherever the name is split. */
	const char *req = "PUT / HTTP/1.1\r\nContent-Length: 3\r\nContent-Lengthy: 9\r\n"
			  "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		struct seen s;
		ck_assert_int_eq(parse(req, steps[i], &s), 400);   /* CL with TE, as before */
	}
	req = "PUT / HTTP/1.1\r\nContent-Length: 3\r\nContent-Lengthy: 9\r\n\r\nabc";
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		struct seen s;
		ck_assert_int_eq(parse(req, steps[i], &s), 0);
		ck_assert_uint_eq(s.content_length, 3);
		ck_assert_uint_eq(s.n_content_length, 1);
		ck_assert_uint_eq(s.n_headers, 2);
		ck_assert_uint_eq(s.body_len, 3);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("http_parse");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_repeat_same_value);
	tcase_add_test(tc, test_repeat_refused);
	tcase_add_test(tc, test_near_names);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
