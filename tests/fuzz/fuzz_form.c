/*
 * fuzz_form.c — libFuzzer target for the streaming multipart/form-data
 * parser (gateway/form) and the boundary of a Content-Type value.
 *
 * Input: a Content-Type value up to the first '\n', then the body. The
 * body is parsed twice, whole and in chunks whose sizes come from the
 * input's own bytes; the two runs must agree (the same fields, the same
 * file bytes, the same result). Every chunk is copied into an exactly
 * sized buffer, so a read past it is an ASan report. Checked too: the
 * fields stay within FORM_FIELDS_MAX, file begin/end pair up.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "gateway/form.h"

struct acc {
	uint8_t digest[32];
	struct hash_stream *h;
	size_t field_bytes, file_bytes;
	int begins, ends, fields;
};

static int on_field(void *ud, const char *name, const char *value, size_t vl)
{
	struct acc *a = ud;
	a->fields++;
	a->field_bytes += strlen(name) + vl;
	if (a->field_bytes > FORM_FIELDS_MAX)
		abort();
	hash_stream_update(a->h, "F", 1);
	hash_stream_update(a->h, name, strlen(name) + 1);
	hash_stream_update(a->h, value, vl);
	return 0;
}

static int on_file_begin(void *ud, const char *fn, const char *ct)
{
	struct acc *a = ud;
	if (a->begins != a->ends)
		abort();
	a->begins++;
	hash_stream_update(a->h, "B", 1);
	hash_stream_update(a->h, fn, strlen(fn) + 1);
	hash_stream_update(a->h, ct, strlen(ct) + 1);
	return 0;
}

static int on_file_data(void *ud, const char *d, size_t n)
{
	struct acc *a = ud;
	if (!n || a->begins != a->ends + 1)
		abort();
	a->file_bytes += n;
	hash_stream_update(a->h, d, n);
	return 0;
}

static int on_file_end(void *ud)
{
	struct acc *a = ud;
	a->ends++;
	if (a->begins != a->ends)
		abort();
	hash_stream_update(a->h, "E", 1);
	return 0;
}

static const struct form_cbs cbs = { on_field, on_file_begin, on_file_data, on_file_end };

static int run(const char *bd, int bl, const uint8_t *b, size_t n, const uint8_t *sizes,
	       size_t ns, struct acc *a)
{
	static struct form f;
	memset(a, 0, sizeof(*a));
	a->h = hash_stream_new(HASH_SHA256);
	form_init(&f, bd, (size_t)bl, &cbs, a);
	int rc = 0;
	size_t k = 0;
	for (size_t i = 0; i < n && !rc;) {
		size_t c = sizes ? 1 + (ns ? sizes[k++ % ns] % 64 : 0) : n;
		if (c > n - i)
			c = n - i;
		char *chunk = malloc(c);
		memcpy(chunk, b + i, c);
		rc = form_feed(&f, chunk, c);
		free(chunk);
		i += c;
	}
	if (!rc)
		rc = form_finish(&f);
	hash_stream_final(a->h, a->digest);
	hash_stream_free(a->h);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	if (!nl)
		return 0;
	size_t ctl = (size_t)(nl - data);
	char *ct = malloc(ctl ? ctl : 1);
	memcpy(ct, data, ctl);
	char bd[FORM_BOUNDARY_MAX + 1];
	int bl = form_boundary(ct, ctl, bd);
	free(ct);
	if (bl < 0)
		return 0;
	if (bl == 0 || bl > FORM_BOUNDARY_MAX || strlen(bd) != (size_t)bl)
		abort();
	const uint8_t *body = nl + 1;
	size_t n = size - ctl - 1;
	struct acc a1, a2;
	int r1 = run(bd, bl, body, n, NULL, 0, &a1);
	int r2 = run(bd, bl, body, n, data, ctl + 1, &a2);
	/* The same verdict; when both passed, the same events and bytes. */
	if (r1 != r2)
		abort();
	if (r1 == 0 && (memcmp(a1.digest, a2.digest, 32) != 0 || a1.file_bytes != a2.file_bytes))
		abort();
	return 0;
}
