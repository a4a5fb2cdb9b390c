/*
 * fuzz_json.c — libFuzzer target for common/json.
 *
 * Input: byte 0 picks the limits (depth 1..32, members, duplicate
 * policy); the rest is the document, copied into an exactly-sized
 * malloc'd buffer (no NUL terminator), so a read past the end is an ASan
 * report. Checked on every accepted document: depth and member counts
 * within the limits, every string NUL-terminated at its length and valid
 * UTF-8, numbers' text matches the grammar, offsets inside the input, the
 * compact length at most the input length; then the oracle: the tree
 * written back as JSON parses again to an equal tree.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

struct out {
	char *b;
	size_t n, cap;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->n + n > o->cap) {
		o->cap = (o->n + n) * 2 + 64;
		o->b = realloc(o->b, o->cap);
		if (!o->b)
			abort();
	}
	memcpy(o->b + o->n, s, n);
	o->n += n;
}

static void put_str(struct out *o, const char *s, size_t n)
{
	put(o, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\') {
			char e[2] = { '\\', (char)c };
			put(o, e, 2);
		} else if (c < 0x20) {
			char e[8];
			snprintf(e, sizeof(e), "\\u%04x", c);
			put(o, e, 6);
		} else {
			put(o, (const char *)&c, 1);
		}
	}
	put(o, "\"", 1);
}

/* Independent UTF-8 check (RFC 3629), by decoding. */
static int utf8_ok(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t len;
		if (s[i] < 0x80) {
			i++;
			continue;
		} else if ((s[i] & 0xE0) == 0xC0) {
			cp = s[i] & 0x1F, len = 2;
		} else if ((s[i] & 0xF0) == 0xE0) {
			cp = s[i] & 0x0F, len = 3;
		} else if ((s[i] & 0xF8) == 0xF0) {
			cp = s[i] & 0x07, len = 4;
		} else {
			return 0;
		}
		if (n - i < len)
			return 0;
		for (size_t k = 1; k < len; k++) {
			if ((s[i + k] & 0xC0) != 0x80)
				return 0;
			cp = cp << 6 | (s[i + k] & 0x3F);
		}
		static const uint32_t min[] = { 0, 0, 0x80, 0x800, 0x10000 };
		if (cp < min[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return 0;
		i += len;
	}
	return 1;
}

static void check(const struct json_value *v, size_t in_len, unsigned depth, const struct json_limits *lim,
		  struct out *o)
{
	if (v->offset >= in_len)
		abort();
	switch (v->type) {
	case JSON_NULL: put(o, "null", 4); break;
	case JSON_TRUE: put(o, "true", 4); break;
	case JSON_FALSE: put(o, "false", 5); break;
	case JSON_NUMBER:
		if (strlen(v->u.num.text) != v->u.num.len || !strchr("-0123456789", v->u.num.text[0]))
			abort();
		put(o, v->u.num.text, v->u.num.len);
		break;
	case JSON_STRING:
		if (v->u.str.s[v->u.str.len] != '\0' || !utf8_ok((const unsigned char *)v->u.str.s, v->u.str.len))
			abort();
		put_str(o, v->u.str.s, v->u.str.len);
		break;
	case JSON_ARRAY:
	case JSON_OBJECT: {
		if (depth + 1 > lim->max_depth || v->u.list.n > lim->max_members)
			abort();
		bool obj = v->type == JSON_OBJECT;
		put(o, obj ? "{" : "[", 1);
		uint32_t n = 0;
		for (const struct json_value *m = v->u.list.first; m; m = m->next, n++) {
			if (n)
				put(o, ",", 1);
			if (obj) {
				if (!m->key || m->key[m->key_len] != '\0' ||
				    !utf8_ok((const unsigned char *)m->key, m->key_len))
					abort();
				put_str(o, m->key, m->key_len);
				put(o, ":", 1);
			}
			check(m, in_len, depth + 1, lim, o);
		}
		if (n != v->u.list.n)
			abort();
		put(o, obj ? "}" : "]", 1);
		break;
	}
	default:
		abort();
	}
}

static int same(const struct json_value *a, const struct json_value *b)
{
	if (a->type != b->type)
		return 0;
	switch (a->type) {
	case JSON_NUMBER:
		return a->u.num.len == b->u.num.len && memcmp(a->u.num.text, b->u.num.text, a->u.num.len) == 0 &&
		       a->u.num.is_int == b->u.num.is_int && (!a->u.num.is_int || a->u.num.i == b->u.num.i);
	case JSON_STRING:
		return a->u.str.len == b->u.str.len && memcmp(a->u.str.s, b->u.str.s, a->u.str.len) == 0;
	case JSON_ARRAY:
	case JSON_OBJECT: {
		if (a->u.list.n != b->u.list.n || a->u.list.dup_keys != b->u.list.dup_keys)
			return 0;
		const struct json_value *x = a->u.list.first, *y = b->u.list.first;
		for (; x && y; x = x->next, y = y->next) {
			if (a->type == JSON_OBJECT &&
			    (x->key_len != y->key_len || memcmp(x->key, y->key, x->key_len) != 0))
				return 0;
			if (!same(x, y))
				return 0;
		}
		return !x && !y;
	}
	default:
		return 1;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	struct json_limits lim = {
		.max_bytes = 1 << 16,
		.max_depth = 1 + (data[0] & 31),
		.max_members = data[0] & 0x40 ? 4 : 4096,
		.flags = data[0] & 0x80 ? JSON_REJECT_DUP_KEYS : 0,
	};
	size_t n = size - 1;
	char *b = malloc(n ? n : 1);
	memcpy(b, data + 1, n);
	struct json_doc *d;
	struct json_error e;
	int rc = json_parse(b, n, &lim, &d, &e);
	if (rc == 0) {
		if (json_compact_len(d) > n)
			abort();
		if ((lim.flags & JSON_REJECT_DUP_KEYS) && json_first_dup(d) >= 0)
			abort();
		struct out o = { 0 };
		check(json_root(d), n, 0, &lim, &o);
		struct json_doc *d2;
		struct json_limits lim2 = lim;
		lim2.max_bytes = o.n;
		if (json_parse(o.b, o.n, &lim2, &d2, &e) != 0 || !same(json_root(d), json_root(d2)))
			abort();
		if (json_compact_len(d2) != o.n)
			abort();
		json_free(d2);
		free(o.b);
		json_free(d);
	} else if (!e.msg || e.offset > n || d) {
		abort();
	}
	free(b);
	return 0;
}
