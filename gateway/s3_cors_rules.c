/*
 * s3_cors_rules.c — CORS configurations as values. See s3_cors_rules.h.
 */
#include "gateway/s3_cors_rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const methods[] = { "GET", "PUT", "POST", "DELETE", "HEAD" };

static bool method_ok(const char *m)
{
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (strcmp(m, methods[i]) == 0)
			return true;
	return false;
}

static size_t stars(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += *s == '*';
	return n;
}

void s3_cors_doc_free(struct s3_cors_doc *d)
{
	free(d->rules);
	free(d->prules);
	free(d->strs);
	memset(d, 0, sizeof(*d));
}

/* Slot of field f of a rule: its count and array in the record. */
static size_t *rule_count(Iolake__Meta__CorsRule *r, enum xmlp_cors_field f, char ****arr)
{
	switch (f) {
	case XMLP_CORS_ORIGIN: *arr = &r->allowed_origins; return &r->n_allowed_origins;
	case XMLP_CORS_METHOD: *arr = &r->allowed_methods; return &r->n_allowed_methods;
	case XMLP_CORS_HEADER: *arr = &r->allowed_headers; return &r->n_allowed_headers;
	case XMLP_CORS_EXPOSE: *arr = &r->expose_headers; return &r->n_expose_headers;
	default: return NULL;
	}
}

static enum s3_err check_item(const struct xmlp_cors_item *it, const char **msg, char *buf,
			      size_t cap)
{
	switch (it->field) {
	case XMLP_CORS_ID:
		if (it->len > S3_CORS_ID_MAX) {
			*msg = "The ID of a CORSRule can not be longer than 255 characters";
			return S3E_InvalidRequest;
		}
		return S3E_OK;
	case XMLP_CORS_METHOD:
		if (!method_ok(it->value)) {
			snprintf(buf, cap, "Found unsupported HTTP method in CORS config. "
				 "Unsupported method is %.64s", it->value);
			*msg = buf;
			return S3E_InvalidRequest;
		}
		return S3E_OK;
	case XMLP_CORS_ORIGIN:
	case XMLP_CORS_HEADER:
		if (stars(it->value) > 1) {
			snprintf(buf, cap, "%s \"%.128s\" can not have more than one wildcard.",
				 it->field == XMLP_CORS_ORIGIN ? "AllowedOrigin" : "AllowedHeader",
				 it->value);
			*msg = buf;
			return S3E_InvalidRequest;
		}
		return S3E_OK;
	case XMLP_CORS_MAX_AGE: {
		char *end;
		long v = strtol(it->value, &end, 10);
		if (!it->len || *end || v < 0 || v > 0x7fffffff)
			return S3E_MalformedXML;
		return S3E_OK;
	}
	default:
		return S3E_OK;
	}
}

enum s3_err s3_cors_build(const struct xmlp_cors *x, struct s3_cors_doc *d, const char **msg,
			  char *msg_buf, size_t msg_cap)
{
	*msg = NULL;
	memset(d, 0, sizeof(*d));
	iolake__meta__cors_config__init(&d->cfg);
	if (x->n_rules == 0)
		return S3E_MalformedXML;
	d->rules = calloc(x->n_rules, sizeof(*d->rules));
	d->prules = calloc(x->n_rules, sizeof(*d->prules));
	d->strs = calloc(x->n_items + 1, sizeof(*d->strs));
	if (!d->rules || !d->prules || !d->strs)
		return S3E_InternalError;
	for (size_t i = 0; i < x->n_rules; i++) {
		iolake__meta__cors_rule__init(&d->rules[i]);
		d->prules[i] = &d->rules[i];
	}
	/* Count each rule's strings per field, then hand out slices. */
	for (size_t i = 0; i < x->n_items; i++) {
		const struct xmlp_cors_item *it = &x->items[i];
		enum s3_err e = check_item(it, msg, msg_buf, msg_cap);
		if (e)
			return e;
		Iolake__Meta__CorsRule *r = &d->rules[it->rule];
		char ***arr;
		size_t *n = rule_count(r, it->field, &arr);
		if (n)
			(*n)++;
		else if (it->field == XMLP_CORS_ID)
			r->id = (char *)it->value;
		else if (it->field == XMLP_CORS_MAX_AGE) {
			r->has_max_age = true;
			r->max_age_seconds = (int32_t)strtol(it->value, NULL, 10);
		}
	}
	char **next = d->strs;
	for (size_t i = 0; i < x->n_rules; i++) {
		Iolake__Meta__CorsRule *r = &d->rules[i];
		if (!r->n_allowed_origins || !r->n_allowed_methods)
			return S3E_MalformedXML;
		for (int f = XMLP_CORS_ORIGIN; f <= XMLP_CORS_EXPOSE; f++) {
			char ***arr;
			size_t *n = rule_count(r, (enum xmlp_cors_field)f, &arr);
			*arr = *n ? next : NULL;
			next += *n;
			*n = 0;
		}
	}
	for (size_t i = 0; i < x->n_items; i++) {
		const struct xmlp_cors_item *it = &x->items[i];
		char ***arr;
		size_t *n = rule_count(&d->rules[it->rule], it->field, &arr);
		if (n)
			(*arr)[(*n)++] = (char *)it->value;
	}
	d->cfg.n_rules = x->n_rules;
	d->cfg.rules = d->prules;
	return S3E_OK;
}

static void elems(struct xml_w *w, const char *tag, char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		xml_elem(w, tag, v[i]);
}

void s3_cors_render(struct xml_w *w, const Iolake__Meta__CorsConfig *c)
{
	xml_decl(w);
	xml_open_ns(w, "CORSConfiguration", "http://s3.amazonaws.com/doc/2006-03-01/");
	for (size_t i = 0; c && i < c->n_rules; i++) {
		const Iolake__Meta__CorsRule *r = c->rules[i];
		xml_open(w, "CORSRule");
		if (r->id && r->id[0])
			xml_elem(w, "ID", r->id);
		elems(w, "AllowedHeader", r->allowed_headers, r->n_allowed_headers);
		elems(w, "AllowedMethod", r->allowed_methods, r->n_allowed_methods);
		elems(w, "AllowedOrigin", r->allowed_origins, r->n_allowed_origins);
		elems(w, "ExposeHeader", r->expose_headers, r->n_expose_headers);
		if (r->has_max_age) {
			char num[16];
			snprintf(num, sizeof(num), "%d", r->max_age_seconds);
			xml_elem(w, "MaxAgeSeconds", num);
		}
		xml_close(w);
	}
	xml_close(w);
}

static bool ch_eq(char a, char b, bool icase)
{
	if (icase) {
		if (a >= 'A' && a <= 'Z')
			a = (char)(a - 'A' + 'a');
		if (b >= 'A' && b <= 'Z')
			b = (char)(b - 'A' + 'a');
	}
	return a == b;
}

bool s3_cors_glob(const char *p, size_t pl, const char *s, size_t sl, bool icase)
{
	/* Iterative glob with one backtrack point: linear enough for the
	 * one '*' S3 allows, correct for more. */
	size_t pi = 0, si = 0, star = (size_t)-1, mark = 0;
	while (si < sl) {
		if (pi < pl && p[pi] == '*') {
			star = pi++;
			mark = si;
		} else if (pi < pl && ch_eq(p[pi], s[si], icase)) {
			pi++;
			si++;
		} else if (star != (size_t)-1) {
			pi = star + 1;
			si = ++mark;
		} else {
			return false;
		}
	}
	while (pi < pl && p[pi] == '*')
		pi++;
	return pi == pl;
}

static bool any_glob(char **pats, size_t n, const char *s, size_t sl, bool icase)
{
	for (size_t i = 0; i < n; i++)
		if (s3_cors_glob(pats[i], strlen(pats[i]), s, sl, icase))
			return true;
	return false;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

/* Every comma-separated name of h is admitted by the rule's AllowedHeaders. */
static bool headers_ok(const Iolake__Meta__CorsRule *r, const char *h, size_t hl)
{
	size_t i = 0;
	while (i < hl) {
		size_t j = i;
		while (j < hl && h[j] != ',')
			j++;
		size_t a = i, b = j;
		while (a < b && is_space(h[a]))
			a++;
		while (b > a && is_space(h[b - 1]))
			b--;
		if (b > a && !any_glob(r->allowed_headers, r->n_allowed_headers, h + a, b - a, true))
			return false;
		i = j + 1;
	}
	return true;
}

int s3_cors_match(const Iolake__Meta__CorsConfig *c, const char *origin, size_t origin_len,
		  const char *method, size_t method_len, const char *req_headers,
		  size_t req_headers_len)
{
	for (size_t i = 0; c && i < c->n_rules; i++) {
		const Iolake__Meta__CorsRule *r = c->rules[i];
		if (!any_glob(r->allowed_origins, r->n_allowed_origins, origin, origin_len, false))
			continue;
		bool m = false;
		for (size_t k = 0; k < r->n_allowed_methods && !m; k++)
			m = strlen(r->allowed_methods[k]) == method_len &&
			    memcmp(r->allowed_methods[k], method, method_len) == 0;
		if (!m)
			continue;
		if (req_headers && !headers_ok(r, req_headers, req_headers_len))
			continue;
		return (int)i;
	}
	return -1;
}

bool s3_cors_any_origin(const Iolake__Meta__CorsRule *r, const char *origin, size_t origin_len)
{
	for (size_t i = 0; i < r->n_allowed_origins; i++) {
		const char *o = r->allowed_origins[i];
		if (s3_cors_glob(o, strlen(o), origin, origin_len, false))
			return strcmp(o, "*") == 0;
	}
	return false;
}
