/*
 * jsonw.c — see jsonw.h. Writes tokens in order; the only state is the
 * comma flag per nesting level and whether a key awaits its value.
 */
#include "common/jsonw.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jsonw_init(struct jsonw *w, size_t max_bytes)
{
	memset(w, 0, sizeof(*w));
	w->max_bytes = max_bytes ? max_bytes : 16u << 20;
}

void jsonw_free(struct jsonw *w)
{
	free(w->buf);
	w->buf = NULL;
	w->len = w->cap = 0;
}

static void put(struct jsonw *w, const char *s, size_t n)
{
	if (w->err)
		return;
	if (w->len + n + 1 > w->max_bytes) {
		w->err = -E2BIG;
		return;
	}
	if (w->len + n + 1 > w->cap) {
		size_t cap = w->cap ? w->cap : 256;
		while (cap < w->len + n + 1)
			cap *= 2;
		char *b = realloc(w->buf, cap);
		if (!b) {
			w->err = -ENOMEM;
			return;
		}
		w->buf = b;
		w->cap = cap;
	}
	memcpy(w->buf + w->len, s, n);
	w->len += n;
	w->buf[w->len] = 0;
}

/* Before any value or key: a comma unless first in its container or the
 * value of a key just written. */
static void sep(struct jsonw *w)
{
	if (w->after_key) {
		w->after_key = false;
		return;
	}
	if (w->need_comma[w->depth])
		put(w, ",", 1);
	w->need_comma[w->depth] = true;
}

static void open_(struct jsonw *w, char c)
{
	sep(w);
	if (w->depth >= JSONW_MAX_DEPTH) {
		if (!w->err)
			w->err = -ELOOP;
		return;
	}
	put(w, &c, 1);
	w->need_comma[++w->depth] = false;
}

static void close_(struct jsonw *w, char c)
{
	if (w->depth)
		w->depth--;
	w->after_key = false;
	put(w, &c, 1);
}

void jsonw_obj_begin(struct jsonw *w) { open_(w, '{'); }
void jsonw_obj_end(struct jsonw *w) { close_(w, '}'); }
void jsonw_arr_begin(struct jsonw *w) { open_(w, '['); }
void jsonw_arr_end(struct jsonw *w) { close_(w, ']'); }

static void quoted(struct jsonw *w, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	put(w, "\"", 1);
	size_t run = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		put(w, s + run, i - run);
		run = i + 1;
		char e[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
		if (c == '"' || c == '\\') {
			e[1] = (char)c;
			put(w, e, 2);
		} else if (c == '\n') {
			put(w, "\\n", 2);
		} else if (c == '\t') {
			put(w, "\\t", 2);
		} else if (c == '\r') {
			put(w, "\\r", 2);
		} else {
			put(w, e, 6);
		}
	}
	put(w, s + run, n - run);
	put(w, "\"", 1);
}

void jsonw_key(struct jsonw *w, const char *k)
{
	sep(w);
	quoted(w, k, strlen(k));
	put(w, ":", 1);
	w->after_key = true;
}

void jsonw_strn(struct jsonw *w, const char *s, size_t n)
{
	sep(w);
	quoted(w, s ? s : "", s ? n : 0);
}

void jsonw_str(struct jsonw *w, const char *s)
{
	jsonw_strn(w, s, s ? strlen(s) : 0);
}

void jsonw_u64(struct jsonw *w, uint64_t v)
{
	char b[24];
	int n = snprintf(b, sizeof(b), "%" PRIu64, v);
	sep(w);
	put(w, b, (size_t)n);
}

void jsonw_i64(struct jsonw *w, int64_t v)
{
	char b[24];
	int n = snprintf(b, sizeof(b), "%" PRId64, v);
	sep(w);
	put(w, b, (size_t)n);
}

void jsonw_bool(struct jsonw *w, bool v)
{
	sep(w);
	put(w, v ? "true" : "false", v ? 4 : 5);
}

void jsonw_null(struct jsonw *w)
{
	sep(w);
	put(w, "null", 4);
}

void jsonw_raw(struct jsonw *w, const char *s, size_t n)
{
	sep(w);
	put(w, s, n);
}

void jsonw_kstr(struct jsonw *w, const char *k, const char *v)
{
	jsonw_key(w, k);
	jsonw_str(w, v);
}

void jsonw_ku64(struct jsonw *w, const char *k, uint64_t v)
{
	jsonw_key(w, k);
	jsonw_u64(w, v);
}

void jsonw_ki64(struct jsonw *w, const char *k, int64_t v)
{
	jsonw_key(w, k);
	jsonw_i64(w, v);
}

void jsonw_kbool(struct jsonw *w, const char *k, bool v)
{
	jsonw_key(w, k);
	jsonw_bool(w, v);
}

int jsonw_finish(struct jsonw *w, char **out, size_t *len)
{
	int err = w->err;
	if (!err && !w->buf)
		put(w, "", 0);
	err = w->err;
	if (err) {
		jsonw_free(w);
		jsonw_init(w, w->max_bytes);
		return err;
	}
	*out = w->buf;
	*len = w->len;
	w->buf = NULL;
	jsonw_init(w, w->max_bytes);
	return 0;
}
