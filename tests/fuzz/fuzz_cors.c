/*
 * fuzz_cors.c — libFuzzer target for CORS configurations: the
 * CORSConfiguration parser (xml_parse's xmlp_cors), the checks and record
 * built from it (s3_cors_build), and the matching of a request against
 * the built rules (s3_cors_match, s3_cors_glob).
 *
 * Input: a CORSConfiguration document, then optionally "\n--\n" and an
 * origin, method and Access-Control-Request-Headers value separated by
 * '\n'. Everything is copied into exactly-sized buffers (no NUL), so a read
 * past the end is an ASan report. Checked: every string of a built record
 * lies in the arena and is NUL-terminated, counts within their limits,
 * and a match names an existing rule that admits the origin.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/s3_cors_rules.h"

static void inside(const char *base, size_t cap, const char *p)
{
	if (p < base || p >= base + cap || !memchr(p, '\0', (size_t)(base + cap - p)))
		abort();
}

static void check_strs(const char *arena, size_t cap, char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		inside(arena, cap, v[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *sep = memmem(data, size, "\n--\n", 4);
	size_t doc_len = sep ? (size_t)(sep - (const char *)data) : size;
	char *doc = malloc(doc_len ? doc_len : 1);
	memcpy(doc, data, doc_len);
	enum { MAXI = 1024 };
	struct xmlp_cors_item *items = malloc(MAXI * sizeof(*items));
	size_t cap = doc_len + 1;
	char *arena = malloc(cap);
	struct xmlp_cors x = { .items = items, .max_items = MAXI, .arena = arena, .arena_cap = cap };
	if (xmlp_cors(doc, doc_len, S3_CORS_BODY_MAX, &x) == 0) {
		if (x.n_rules == 0 || x.n_rules > XMLP_CORS_RULES_MAX || x.n_items > MAXI)
			abort();
		struct s3_cors_doc d;
		const char *msg;
		char buf[320];
		if (s3_cors_build(&x, &d, &msg, buf, sizeof(buf)) == S3E_OK) {
			for (size_t i = 0; i < d.cfg.n_rules; i++) {
				const Iolake__Meta__CorsRule *r = d.cfg.rules[i];
				if (!r->n_allowed_origins || !r->n_allowed_methods)
					abort();
				check_strs(arena, cap, r->allowed_origins, r->n_allowed_origins);
				check_strs(arena, cap, r->allowed_methods, r->n_allowed_methods);
				check_strs(arena, cap, r->allowed_headers, r->n_allowed_headers);
				check_strs(arena, cap, r->expose_headers, r->n_expose_headers);
			}
			if (sep) {
				const char *q = sep + 4, *end = (const char *)data + size;
				const char *f[3] = { q, q, q };
				size_t l[3] = { 0, 0, 0 };
				for (int k = 0; k < 3 && q <= end; k++) {
					const char *nl = memchr(q, '\n', (size_t)(end - q));
					f[k] = q;
					l[k] = (size_t)((nl ? nl : end) - q);
					q = nl ? nl + 1 : end + 1;
				}
				char *o = malloc(l[0] ? l[0] : 1), *m = malloc(l[1] ? l[1] : 1);
				char *h = malloc(l[2] ? l[2] : 1);
				memcpy(o, f[0], l[0]);
				memcpy(m, f[1], l[1]);
				memcpy(h, f[2], l[2]);
				int i = s3_cors_match(&d.cfg, o, l[0], m, l[1], h, l[2]);
				if (i >= (int)d.cfg.n_rules)
					abort();
				if (i >= 0) {
					const Iolake__Meta__CorsRule *r = d.cfg.rules[i];
					bool any = false;
					for (size_t k = 0; k < r->n_allowed_origins; k++)
						any |= s3_cors_glob(r->allowed_origins[k],
								    strlen(r->allowed_origins[k]), o, l[0],
								    false);
					if (!any)
						abort();
					(void)s3_cors_any_origin(r, o, l[0]);
				}
				free(o);
				free(m);
				free(h);
			}
		}
		s3_cors_doc_free(&d);
	}
	free(arena);
	free(items);
	free(doc);
	return 0;
}
