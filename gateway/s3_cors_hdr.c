/*
 * s3_cors_hdr.c — CORS headers of answers. See s3_cors_hdr.h.
 */
#include "gateway/s3_cors_hdr.h"

#include <stdio.h>
#include <string.h>

#include "gateway/s3_cors_rules.h"
#include "gateway/s3_util.h"

#define CORS_HDR_MAX 4096       /* one joined header value */

static void add_joined(struct http_stream *s, const char *name, char **v, size_t n)
{
	if (!n)
		return;
	char buf[CORS_HDR_MAX];
	size_t len = 0;
	for (size_t i = 0; i < n; i++) {
		int w = snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? ", " : "", v[i]);
		if (w < 0 || (size_t)w >= sizeof(buf) - len)
			break;
		len += (size_t)w;
	}
	http_add_header_n(s, name, strlen(name), buf, len);
}

/* The headers of an admitted request (rule r, for origin). */
static void allow_headers(struct http_stream *s, const Iolake__Meta__CorsRule *r,
			  const struct sigv4_header *origin)
{
	if (s3_cors_any_origin(r, origin->value, origin->value_len)) {
		http_add_header(s, "Access-Control-Allow-Origin", "*");
	} else {
		http_add_header_n(s, "Access-Control-Allow-Origin", 27, origin->value,
				  origin->value_len);
		http_add_header(s, "Access-Control-Allow-Credentials", "true");
	}
	add_joined(s, "Access-Control-Allow-Methods", r->allowed_methods, r->n_allowed_methods);
	add_joined(s, "Access-Control-Expose-Headers", r->expose_headers, r->n_expose_headers);
	if (r->has_max_age) {
		char num[16];
		snprintf(num, sizeof(num), "%d", r->max_age_seconds);
		http_add_header(s, "Access-Control-Max-Age", num);
	}
}

static const char vary[] = "Origin, Access-Control-Request-Headers, Access-Control-Request-Method";

void s3_cors_headers(struct s3_call *c, const Iolake__Meta__Bucket *b)
{
	if (!c || !b || !b->cors || !b->cors->n_rules)
		return;
	const struct sigv4_header *origin = s3u_hdr(c, "origin");
	if (!origin)
		return;
	struct http_stream *s = s3_call_stream(c);
	const char *m = s3_call_http(c)->method_name;
	int i = s3_cors_match(b->cors, origin->value, origin->value_len, m, strlen(m), NULL, 0);
	if (i >= 0)
		allow_headers(s, b->cors->rules[i], origin);
	http_add_header(s, "Vary", vary);
}

void s3_cors_preflight_headers(struct s3_call *c, const Iolake__Meta__CorsRule *r,
			       const struct sigv4_header *req_headers)
{
	struct http_stream *s = s3_call_stream(c);
	const struct sigv4_header *origin = s3u_hdr(c, "origin");
	if (!origin)
		return;
	allow_headers(s, r, origin);
	if (req_headers && req_headers->value_len)
		http_add_header_n(s, "Access-Control-Allow-Headers", 28, req_headers->value,
				  req_headers->value_len);
	http_add_header(s, "Vary", vary);
}
