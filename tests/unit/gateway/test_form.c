/*
 * test_form.c — the streaming multipart/form-data parser (gateway/form):
 * a browser's form (fields, then the file) parsed whole, byte by byte
 * and in random chunk sizes with the same result; a file holding
 * near-delimiters ("\r\n--bound", CRs, a delimiter without its CRLF)
 * passed on intact; the boundary from Content-Type (quoted, unquoted,
 * refusals); preamble and epilogue skipped; refusals (truncated body, no
 * Content-Disposition, garbage after a delimiter, fields over 20 KiB,
 * header block over its limit); a callback's error stops the parse.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/form.h"

struct got {
	char log[1 << 16];          /* "name=value;" for fields, "<file:name:ctype>" */
	size_t log_len;
	char *file;
	size_t file_len, file_cap;
	int begins, ends;
	int fail_on_field;          /* non-zero: on_field returns it */
};

static void logf_(struct got *g, const char *s, size_t n)
{
	if (g->log_len + n < sizeof(g->log)) {
		memcpy(g->log + g->log_len, s, n);
		g->log_len += n;
		g->log[g->log_len] = '\0';
	}
}

static int on_field(void *ud, const char *name, const char *value, size_t vl)
{
	struct got *g = ud;
	if (g->fail_on_field)
		return g->fail_on_field;
	logf_(g, name, strlen(name));
	logf_(g, "=", 1);
	logf_(g, value, vl);
	logf_(g, ";", 1);
	return 0;
}

static int on_file_begin(void *ud, const char *filename, const char *ct)
{
	struct got *g = ud;
	g->begins++;
	char b[2400];
	int n = snprintf(b, sizeof(b), "<file:%s:%s>", filename, ct);
	logf_(g, b, (size_t)n);
	return 0;
}

static int on_file_data(void *ud, const char *d, size_t n)
{
	struct got *g = ud;
	ck_assert_uint_gt(n, 0);
	if (g->file_len + n > g->file_cap) {
		g->file_cap = (g->file_len + n) * 2;
		g->file = realloc(g->file, g->file_cap);
	}
	memcpy(g->file + g->file_len, d, n);
	g->file_len += n;
	return 0;
}

static int on_file_end(void *ud)
{
	((struct got *)ud)->ends++;
	return 0;
}

static const struct form_cbs cbs = { on_field, on_file_begin, on_file_data, on_file_end };

/* Feed body in chunks: chunk 0 = whole, 1 = byte by byte, -1 = random. */
static int parse(const char *b, size_t n, const char *boundary, int chunk, struct got *g)
{
	memset(g, 0, offsetof(struct got, fail_on_field));
	struct form *f = malloc(sizeof(*f));
	form_init(f, boundary, strlen(boundary), &cbs, g);
	int rc = 0;
	for (size_t i = 0; i < n && !rc;) {
		size_t c = chunk == 0 ? n : chunk == 1 ? 1 : 1 + (size_t)(random() % 97);
		if (c > n - i)
			c = n - i;
		rc = form_feed(f, b + i, c);
		i += c;
	}
	if (!rc)
		rc = form_finish(f);
	free(f);
	return rc;
}

static size_t build(char *out, const char *boundary, const char *file, size_t file_len)
{
	size_t n = (size_t)sprintf(out,
		"--%s\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nuser/${filename}\r\n"
		"--%s\r\ncontent-disposition: form-data; name=\"x-amz-meta-note\"\r\n\r\nline1\r\nline2\r\n"
		"--%s\r\nContent-Disposition: form-data; name=\"empty\"\r\n\r\n\r\n"
		"--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a b.bin\"\r\n"
		"Content-Type: application/octet-stream\r\n\r\n",
		boundary, boundary, boundary, boundary);
	memcpy(out + n, file, file_len);
	n += file_len;
	n += (size_t)sprintf(out + n, "\r\n--%s--\r\n", boundary);
	return n;
}

START_TEST(test_chunkings)
{
	const char *bd = "----WebKitFormBoundaryX3bY";
	/* A file full of near-delimiters. */
	static char file[8192];
	size_t fl = 0;
	const char *tricky[] = { "\r", "\r\n", "\r\n-", "\r\n--", "\r\n----WebKitFormBoundaryX3b",
				 "\r\r\n--", "--", "----WebKitFormBoundaryX3bY", "\n\r\n--" };
	for (int r = 0; r < 40; r++) {
		const char *t = tricky[r % 9];
		memcpy(file + fl, t, strlen(t));
		fl += strlen(t);
		for (int k = 0; k < r % 7; k++)
			file[fl++] = (char)(r * 31 + k);
		file[fl++] = '\0';
	}
	static char body[16384];
	size_t n = build(body, bd, file, fl);
	struct got *g = malloc(sizeof(*g)), *g2 = malloc(sizeof(*g2));
	g->fail_on_field = g2->fail_on_field = 0;
	ck_assert_int_eq(parse(body, n, bd, 0, g), 0);
	ck_assert_str_eq(g->log, "key=user/${filename};x-amz-meta-note=line1\r\nline2;empty=;"
				 "<file:a b.bin:application/octet-stream>");
	ck_assert_int_eq(g->begins, 1);
	ck_assert_int_eq(g->ends, 1);
	ck_assert_uint_eq(g->file_len, fl);
	ck_assert(memcmp(g->file, file, fl) == 0);
	srandom(7);
	for (int mode = 1; mode >= -1; mode -= 2)
		for (int rep = 0; rep < (mode == 1 ? 1 : 200); rep++) {
			ck_assert_int_eq(parse(body, n, bd, mode, g2), 0);
			ck_assert_str_eq(g2->log, g->log);
			ck_assert_uint_eq(g2->file_len, fl);
			ck_assert(memcmp(g2->file, file, fl) == 0);
			free(g2->file);
		}
	free(g->file);
	free(g);
	free(g2);
}
END_TEST

START_TEST(test_boundary)
{
	char b[FORM_BOUNDARY_MAX + 1];
	const char *ct = "multipart/form-data; boundary=----WebKitFormBoundaryX3bY";
	ck_assert_int_eq(form_boundary(ct, strlen(ct), b), 26);
	ck_assert_str_eq(b, "----WebKitFormBoundaryX3bY");
	ct = "Multipart/Form-Data;charset=utf-8;  Boundary=\"a b:c\"";
	ck_assert_int_eq(form_boundary(ct, strlen(ct), b), 5);
	ck_assert_str_eq(b, "a b:c");
	const char *bad[] = { "multipart/mixed; boundary=x", "multipart/form-data",
			      "multipart/form-data; boundary=", "multipart/form-data; boundary=\"x",
			      "multipart/form-data; boundary=a\rb", "text/plain",
			      "multipart/form-data; boundary=\"ends with space \"",
			      "multipart/form-data; boundary=12345678901234567890123456789012345678901234567890123456789012345678901" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_int_eq(form_boundary(bad[i], strlen(bad[i]), b), -EINVAL);
}
END_TEST

START_TEST(test_refused)
{
	struct got *g = malloc(sizeof(*g));
	g->fail_on_field = 0;
	static char body[64 * 1024];
	/* Preamble and epilogue are skipped. */
	const char *ok = "preamble\r\n--b\r\nContent-Disposition: form-data; name=a\r\n\r\n1\r\n--b--\r\nepilogue";
	ck_assert_int_eq(parse(ok, strlen(ok), "b", 0, g), 0);
	ck_assert_str_eq(g->log, "a=1;");
	/* Truncated: no closing delimiter. */
	const char *trunc = "--b\r\nContent-Disposition: form-data; name=a\r\n\r\n1\r\n--b";
	ck_assert_int_eq(parse(trunc, strlen(trunc), "b", 0, g), -EBADMSG);
	/* No Content-Disposition; not form-data; no name. */
	const char *nod = "--b\r\nContent-Type: text/plain\r\n\r\n1\r\n--b--\r\n";
	ck_assert_int_eq(parse(nod, strlen(nod), "b", 0, g), -EBADMSG);
	const char *att = "--b\r\nContent-Disposition: attachment; name=a\r\n\r\n1\r\n--b--\r\n";
	ck_assert_int_eq(parse(att, strlen(att), "b", 0, g), -EBADMSG);
	const char *non = "--b\r\nContent-Disposition: form-data; filename=a\r\n\r\n1\r\n--b--\r\n";
	ck_assert_int_eq(parse(non, strlen(non), "b", 0, g), -EBADMSG);
	/* Garbage after a delimiter. */
	const char *gar = "--bX\r\nContent-Disposition: form-data; name=a\r\n\r\n1\r\n--b--\r\n";
	ck_assert_int_eq(parse(gar, strlen(gar), "b", 0, g), -EBADMSG);
	/* Fields over 20 KiB in all. */
	size_t n = 0;
	for (int i = 0; i < 3; i++) {
		n += (size_t)sprintf(body + n, "--b\r\nContent-Disposition: form-data; name=f%d\r\n\r\n", i);
		memset(body + n, 'v', 7000);
		n += 7000;
		n += (size_t)sprintf(body + n, "\r\n");
	}
	n += (size_t)sprintf(body + n, "--b--\r\n");
	ck_assert_int_eq(parse(body, n, "b", -1, g), -E2BIG);
	/* A header block over FORM_HEAD_MAX. */
	n = (size_t)sprintf(body, "--b\r\nX-Long: ");
	memset(body + n, 'h', FORM_HEAD_MAX);
	n += FORM_HEAD_MAX;
	n += (size_t)sprintf(body + n, "\r\n\r\n--b--\r\n");
	ck_assert_int_eq(parse(body, n, "b", 0, g), -E2BIG);
	/* A callback's error stops the parse and sticks. */
	g->fail_on_field = -EPERM;
	ck_assert_int_eq(parse(ok, strlen(ok), "b", 1, g), -EPERM);
	free(g);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("form");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_chunkings);
	tcase_add_test(tc, test_boundary);
	tcase_add_test(tc, test_refused);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
