/*
 * xml.c — the XML writer. See xml.h for the contract.
 *
 * Growth doubles the buffer, capped at max_bytes, so a ListObjects page of
 * 1,000 keys costs a handful of reallocs at most; callers that render many
 * documents on one connection xml_reset and keep the buffer.
 *
 * Owns the writer's buffer. Does not parse (xml_parse does).
 */
#include "gateway/xml.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XML_DEFAULT_MAX (64u << 20)

void xml_init(struct xml_w *w, size_t max_bytes)
{
	memset(w, 0, sizeof(*w));
	w->max_bytes = max_bytes ? max_bytes : XML_DEFAULT_MAX;
}

void xml_free(struct xml_w *w)
{
	free(w->buf);
	w->buf = NULL;
	w->len = w->cap = 0;
}

void xml_reset(struct xml_w *w)
{
	w->len = 0;
	w->err = 0;
	w->depth = 0;
}

static bool reserve(struct xml_w *w, size_t more)
{
	if (w->err)
		return false;
	if (more > w->max_bytes - w->len) {
		w->err = -E2BIG;
		return false;
	}
	size_t need = w->len + more + 1; /* +1: keep a NUL after the text */
	if (need <= w->cap)
		return true;
	size_t cap = w->cap ? w->cap : 256;
	while (cap < need)
		cap *= 2;
	if (cap > w->max_bytes + 1)
		cap = w->max_bytes + 1;
	char *nb = realloc(w->buf, cap);
	if (!nb) {
		w->err = -ENOMEM;
		return false;
	}
	w->buf = nb;
	w->cap = cap;
	return true;
}

static void put(struct xml_w *w, const char *s, size_t n)
{
	if (!reserve(w, n))
		return;
	memcpy(w->buf + w->len, s, n);
	w->len += n;
	w->buf[w->len] = '\0';
}

static void puts_(struct xml_w *w, const char *s)
{
	put(w, s, strlen(s));
}

/* The escape for one byte, or NULL if it is copied as is. ref is scratch
 * for numeric references. */
static const char *escape_of(unsigned char c, char ref[8])
{
	switch (c) {
	case '&': return "&amp;";
	case '<': return "&lt;";
	case '>': return "&gt;";
	case '"': return "&quot;";
	case '\'': return "&apos;";
	case '\t':
	case '\n': return NULL;
	case '\r': return "&#13;";
	default:
		if (c < 0x20 || c == 0x7f) {
			snprintf(ref, 8, "&#x%X;", c);
			return ref;
		}
		return NULL;
	}
}

void xml_text(struct xml_w *w, const char *s, size_t n)
{
	char ref[8];
	size_t run = 0; /* start of the pending unescaped run */
	for (size_t i = 0; i < n; i++) {
		const char *e = escape_of((unsigned char)s[i], ref);
		if (!e)
			continue;
		put(w, s + run, i - run);
		puts_(w, e);
		run = i + 1;
	}
	put(w, s + run, n - run);
}

long xml_escape(char *dst, size_t cap, const char *s, size_t n)
{
	char ref[8];
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		const char *e = escape_of((unsigned char)s[i], ref);
		size_t el = e ? strlen(e) : 1;
		if (o + el + 1 > cap)
			return -ENOSPC;
		if (e)
			memcpy(dst + o, e, el);
		else
			dst[o] = s[i];
		o += el;
	}
	if (o + 1 > cap)
		return -ENOSPC;
	dst[o] = '\0';
	return (long)o;
}

void xml_decl(struct xml_w *w)
{
	puts_(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
}

void xml_open_ns(struct xml_w *w, const char *name, const char *xmlns)
{
	if (w->err)
		return;
	if (w->depth == XML_MAX_DEPTH) {
		w->err = -EINVAL;
		return;
	}
	put(w, "<", 1);
	puts_(w, name);
	if (xmlns) {
		puts_(w, " xmlns=\"");
		xml_text(w, xmlns, strlen(xmlns));
		put(w, "\"", 1);
	}
	put(w, ">", 1);
	w->stack[w->depth++] = name;
}

void xml_open_attrs(struct xml_w *w, const char *name, const char *const *attrs, size_t n)
{
	if (w->err)
		return;
	if (w->depth == XML_MAX_DEPTH) {
		w->err = -EINVAL;
		return;
	}
	put(w, "<", 1);
	puts_(w, name);
	for (size_t i = 0; i < n; i++) {
		put(w, " ", 1);
		puts_(w, attrs[2 * i]);
		put(w, "=\"", 2);
		xml_text(w, attrs[2 * i + 1], strlen(attrs[2 * i + 1]));
		put(w, "\"", 1);
	}
	put(w, ">", 1);
	w->stack[w->depth++] = name;
}

void xml_open(struct xml_w *w, const char *name)
{
	xml_open_ns(w, name, NULL);
}

void xml_close(struct xml_w *w)
{
	if (w->err)
		return;
	if (w->depth == 0) {
		w->err = -EINVAL;
		return;
	}
	const char *name = w->stack[--w->depth];
	put(w, "</", 2);
	puts_(w, name);
	put(w, ">", 1);
}

void xml_elem_n(struct xml_w *w, const char *name, const char *text, size_t n)
{
	xml_open(w, name);
	if (text)
		xml_text(w, text, n);
	xml_close(w);
}

void xml_elem(struct xml_w *w, const char *name, const char *text)
{
	xml_elem_n(w, name, text, text ? strlen(text) : 0);
}

void xml_elem_u64(struct xml_w *w, const char *name, uint64_t v)
{
	char num[24];
	int n = snprintf(num, sizeof(num), "%" PRIu64, v);
	xml_elem_n(w, name, num, (size_t)n);
}

void xml_elem_bool(struct xml_w *w, const char *name, bool v)
{
	xml_elem(w, name, v ? "true" : "false");
}

void xml_raw(struct xml_w *w, const char *s, size_t n)
{
	put(w, s, n);
}

int xml_finish(struct xml_w *w, const char **out, size_t *len)
{
	if (w->err)
		return w->err;
	if (w->depth != 0)
		return -EINVAL;
	if (!reserve(w, 0)) /* an empty document still gets a NUL'd buffer */
		return w->err;
	w->buf[w->len] = '\0';
	*out = w->buf;
	*len = w->len;
	return 0;
}
