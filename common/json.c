/*
 * json.c — RFC 8259 parser. See json.h.
 *
 * Recursive descent over the input, one function per production; the
 * recursion is bounded by max_depth, checked before descending. Every
 * node and every decoded string is carved from the document's arena, a
 * chain of malloc'd blocks (each at least ARENA_BLOCK bytes) that
 * json_free releases in one pass.
 */
#include "common/json.h"

#include <errno.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_BLOCK 4096

struct block {
	struct block *next;
	size_t cap;
	size_t used;
	alignas(max_align_t) unsigned char data[];
};

struct json_doc {
	struct block *blocks;
	const struct json_value *root;
	long first_dup;
	size_t compact_len;
};

struct parser {
	const unsigned char *in;
	size_t len;
	size_t pos;
	size_t ws;              /* whitespace bytes skipped, for compact_len */
	uint32_t depth;
	uint32_t max_depth;
	uint32_t max_members;
	uint32_t flags;
	struct json_doc *doc;
	int rc;                 /* first error */
	size_t err_at;
	const char *err_msg;
};

/* ------------------------------------------------------------ arena */

static void *arena_alloc(struct json_doc *d, size_t n)
{
	const size_t a = alignof(max_align_t);
	n = (n + a - 1) & ~(a - 1);
	struct block *b = d->blocks;
	if (!b || b->cap - b->used < n) {
		size_t cap = n > ARENA_BLOCK ? n : ARENA_BLOCK;
		b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		b->cap = cap;
		b->used = 0;
		b->next = d->blocks;
		d->blocks = b;
	}
	void *p = b->data + b->used;
	b->used += n;
	memset(p, 0, n);
	return p;
}

void *json_doc_alloc(struct json_doc *d, size_t n)
{
	return arena_alloc(d, n ? n : 1);
}

void json_free(struct json_doc *d)
{
	if (!d)
		return;
	/* The doc itself lives in its first (oldest) block: walk, then free. */
	struct block *b = d->blocks;
	while (b) {
		struct block *next = b->next;
		free(b);
		b = next;
	}
}

/* ------------------------------------------------------------ errors */

static int fail(struct parser *p, int rc, size_t at, const char *msg)
{
	if (!p->rc) {
		p->rc = rc;
		p->err_at = at;
		p->err_msg = msg;
	}
	return rc;
}

static void *alloc(struct parser *p, size_t n)
{
	void *m = arena_alloc(p->doc, n);
	if (!m)
		fail(p, -ENOMEM, p->pos, "out of memory");
	return m;
}

/* ------------------------------------------------------------ lexing */

static void skip_ws(struct parser *p)
{
	size_t start = p->pos;
	while (p->pos < p->len) {
		unsigned char c = p->in[p->pos];
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		p->pos++;
	}
	p->ws += p->pos - start;
}

static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Four hex digits at in[at]; -1 if not. */
static long hex4(const struct parser *p, size_t at)
{
	if (p->len - at < 4)
		return -1;
	long v = 0;
	for (int i = 0; i < 4; i++) {
		int h = hexval(p->in[at + i]);
		if (h < 0)
			return -1;
		v = v << 4 | h;
	}
	return v;
}

/* Length of the valid UTF-8 sequence at in[at] (RFC 3629 table 4), or 0. */
static size_t utf8_seq(const struct parser *p, size_t at)
{
	const unsigned char *s = p->in + at;
	size_t left = p->len - at;
	unsigned char c = s[0];
	if (c < 0x80)
		return 1;
	if (c < 0xC2)                    /* continuation byte or overlong 2-byte */
		return 0;
	size_t n;
	unsigned char lo = 0x80, hi = 0xBF;
	if (c < 0xE0) {
		n = 2;
	} else if (c < 0xF0) {
		n = 3;
		if (c == 0xE0)
			lo = 0xA0;       /* overlong */
		else if (c == 0xED)
			hi = 0x9F;       /* UTF-16 surrogates */
	} else if (c < 0xF5) {
		n = 4;
		if (c == 0xF0)
			lo = 0x90;       /* overlong */
		else if (c == 0xF4)
			hi = 0x8F;       /* above U+10FFFF */
	} else {
		return 0;
	}
	if (left < n || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xBF)
			return 0;
	return n;
}

static size_t put_utf8(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xC0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xE0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
		o[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	o[0] = (char)(0xF0 | cp >> 18);
	o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
	o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
	o[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

/* A string starting at the opening quote. Decoded output is never longer
 * than the raw text (an escape of 6 or 12 bytes yields at most 4), so one
 * allocation of the raw length suffices; the first pass finds the
 * closing quote and validates. */
static int parse_string(struct parser *p, const char **out, size_t *out_len)
{
	size_t start = p->pos++;        /* past '"' */
	size_t i = p->pos;
	for (;;) {
		if (i >= p->len)
			return fail(p, -EBADMSG, start, "unterminated string");
		unsigned char c = p->in[i];
		if (c == '"')
			break;
		if (c < 0x20)
			return fail(p, -EBADMSG, i, "control character in string");
		if (c == '\\') {
			if (i + 1 >= p->len)
				return fail(p, -EBADMSG, start, "unterminated string");
			unsigned char e = p->in[i + 1];
			if (e == 'u') {
				long u = hex4(p, i + 2);
				if (u < 0)
					return fail(p, -EBADMSG, i, "invalid \\u escape");
				if (u >= 0xD800 && u <= 0xDBFF) {
					long lo = (p->len - i >= 12 && p->in[i + 6] == '\\' &&
						   p->in[i + 7] == 'u') ? hex4(p, i + 8) : -1;
					if (lo < 0xDC00 || lo > 0xDFFF)
						return fail(p, -EBADMSG, i, "unpaired surrogate escape");
					i += 12;
				} else if (u >= 0xDC00 && u <= 0xDFFF) {
					return fail(p, -EBADMSG, i, "unpaired surrogate escape");
				} else {
					i += 6;
				}
				continue;
			}
			if (!strchr("\"\\/bfnrt", e) || e == '\0')
				return fail(p, -EBADMSG, i, "invalid escape");
			i += 2;
			continue;
		}
		size_t n = utf8_seq(p, i);
		if (!n)
			return fail(p, -EBADMSG, i, "invalid UTF-8");
		i += n;
	}
	size_t raw = i - p->pos;
	char *o = alloc(p, raw + 1);
	if (!o)
		return p->rc;
	size_t n = 0;
	for (size_t j = p->pos; j < i;) {
		unsigned char c = p->in[j];
		if (c != '\\') {
			o[n++] = (char)c;
			j++;
			continue;
		}
		unsigned char e = p->in[j + 1];
		j += 2;
		switch (e) {
		case 'b': o[n++] = '\b'; break;
		case 'f': o[n++] = '\f'; break;
		case 'n': o[n++] = '\n'; break;
		case 'r': o[n++] = '\r'; break;
		case 't': o[n++] = '\t'; break;
		case 'u': {
			uint32_t cp = (uint32_t)hex4(p, j);
			j += 4;
			if (cp >= 0xD800 && cp <= 0xDBFF) {
				uint32_t lo = (uint32_t)hex4(p, j + 2);
				cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
				j += 6;
			}
			n += put_utf8(o + n, cp);
			break;
		}
		default: o[n++] = (char)e; break;   /* " \ / */
		}
	}
	o[n] = '\0';
	p->pos = i + 1;
	*out = o;
	*out_len = n;
	return 0;
}

static bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static int parse_number(struct parser *p, struct json_value *v)
{
	size_t start = p->pos, i = p->pos;
	const unsigned char *s = p->in;
	bool integral = true;
	if (i < p->len && s[i] == '-')
		i++;
	if (i >= p->len || !is_digit(s[i]))
		return fail(p, -EBADMSG, start, "invalid number");
	if (s[i] == '0') {
		i++;
		if (i < p->len && is_digit(s[i]))
			return fail(p, -EBADMSG, start, "leading zero in number");
	} else {
		while (i < p->len && is_digit(s[i]))
			i++;
	}
	if (i < p->len && s[i] == '.') {
		integral = false;
		i++;
		if (i >= p->len || !is_digit(s[i]))
			return fail(p, -EBADMSG, i, "invalid number");
		while (i < p->len && is_digit(s[i]))
			i++;
	}
	if (i < p->len && (s[i] == 'e' || s[i] == 'E')) {
		integral = false;
		i++;
		if (i < p->len && (s[i] == '+' || s[i] == '-'))
			i++;
		if (i >= p->len || !is_digit(s[i]))
			return fail(p, -EBADMSG, i, "invalid number");
		while (i < p->len && is_digit(s[i]))
			i++;
	}
	size_t n = i - start;
	char *t = alloc(p, n + 1);
	if (!t)
		return p->rc;
	memcpy(t, s + start, n);
	t[n] = '\0';
	v->type = JSON_NUMBER;
	v->u.num.text = t;
	v->u.num.len = n;
	v->u.num.d = strtod(t, NULL);
	if (integral) {
		/* Accumulate negatively: INT64_MIN has no positive twin. */
		bool neg = t[0] == '-';
		int64_t acc = 0;
		bool ok = true;
		for (const char *c = t + neg; *c; c++) {
			int dgt = *c - '0';
			if (acc < (INT64_MIN + dgt) / 10) {
				ok = false;
				break;
			}
			acc = acc * 10 - dgt;
		}
		if (ok && !neg && acc == INT64_MIN)
			ok = false;
		if (ok) {
			v->u.num.i = neg ? acc : -acc;
			v->u.num.is_int = true;
		}
	}
	p->pos = i;
	return 0;
}

static int parse_literal(struct parser *p, struct json_value *v, const char *word, enum json_type t)
{
	size_t n = strlen(word);
	if (p->len - p->pos < n || memcmp(p->in + p->pos, word, n) != 0)
		return fail(p, -EBADMSG, p->pos, "unexpected character");
	p->pos += n;
	v->type = t;
	return 0;
}

/* ------------------------------------------------------------ structure */

static int parse_value(struct parser *p, struct json_value *v);

static int enter(struct parser *p)
{
	if (p->depth >= p->max_depth)
		return fail(p, -ELOOP, p->pos, "nesting too deep");
	p->depth++;
	p->pos++;       /* past '[' or '{' */
	return 0;
}

static int parse_array(struct parser *p, struct json_value *v)
{
	if (enter(p))
		return p->rc;
	v->type = JSON_ARRAY;
	const struct json_value **tail = &v->u.list.first;
	skip_ws(p);
	if (p->pos < p->len && p->in[p->pos] == ']') {
		p->pos++;
		p->depth--;
		return 0;
	}
	for (;;) {
		if (v->u.list.n == p->max_members)
			return fail(p, -EMSGSIZE, p->pos, "too many array items");
		struct json_value *item = alloc(p, sizeof(*item));
		if (!item || parse_value(p, item))
			return p->rc;
		*tail = item;
		tail = &item->next;
		v->u.list.n++;
		skip_ws(p);
		if (p->pos >= p->len)
			return fail(p, -EBADMSG, p->pos, "unterminated array");
		unsigned char c = p->in[p->pos++];
		if (c == ']')
			break;
		if (c != ',')
			return fail(p, -EBADMSG, p->pos - 1, "expected ',' or ']'");
	}
	p->depth--;
	return 0;
}

static bool key_seen(const struct json_value *obj, const char *k, size_t n)
{
	for (const struct json_value *m = obj->u.list.first; m; m = m->next)
		if (m->key_len == n && memcmp(m->key, k, n) == 0)
			return true;
	return false;
}

/* Duplicate detection compares each key with the earlier ones: quadratic,
 * bounded by max_members. */
static int parse_object(struct parser *p, struct json_value *v)
{
	if (enter(p))
		return p->rc;
	v->type = JSON_OBJECT;
	const struct json_value **tail = &v->u.list.first;
	skip_ws(p);
	if (p->pos < p->len && p->in[p->pos] == '}') {
		p->pos++;
		p->depth--;
		return 0;
	}
	for (;;) {
		skip_ws(p);
		if (p->pos >= p->len || p->in[p->pos] != '"')
			return fail(p, -EBADMSG, p->pos, "expected a string key");
		if (v->u.list.n == p->max_members)
			return fail(p, -EMSGSIZE, p->pos, "too many object members");
		size_t key_at = p->pos;
		const char *k;
		size_t kn;
		if (parse_string(p, &k, &kn))
			return p->rc;
		if (key_seen(v, k, kn)) {
			if (p->flags & JSON_REJECT_DUP_KEYS)
				return fail(p, -EBADMSG, key_at, "duplicate key");
			v->u.list.dup_keys = true;
			if (p->doc->first_dup < 0)
				p->doc->first_dup = (long)key_at;
		}
		skip_ws(p);
		if (p->pos >= p->len || p->in[p->pos] != ':')
			return fail(p, -EBADMSG, p->pos, "expected ':'");
		p->pos++;
		struct json_value *m = alloc(p, sizeof(*m));
		if (!m || parse_value(p, m))
			return p->rc;
		m->key = k;
		m->key_len = kn;
		*tail = m;
		tail = &m->next;
		v->u.list.n++;
		skip_ws(p);
		if (p->pos >= p->len)
			return fail(p, -EBADMSG, p->pos, "unterminated object");
		unsigned char c = p->in[p->pos++];
		if (c == '}')
			break;
		if (c != ',')
			return fail(p, -EBADMSG, p->pos - 1, "expected ',' or '}'");
	}
	p->depth--;
	return 0;
}

static int parse_value(struct parser *p, struct json_value *v)
{
	skip_ws(p);
	if (p->pos >= p->len)
		return fail(p, -EBADMSG, p->pos, "unexpected end of input");
	v->offset = (uint32_t)p->pos;
	switch (p->in[p->pos]) {
	case '{': return parse_object(p, v);
	case '[': return parse_array(p, v);
	case '"':
		v->type = JSON_STRING;
		return parse_string(p, &v->u.str.s, &v->u.str.len);
	case 't': return parse_literal(p, v, "true", JSON_TRUE);
	case 'f': return parse_literal(p, v, "false", JSON_FALSE);
	case 'n': return parse_literal(p, v, "null", JSON_NULL);
	default:
		if (p->in[p->pos] == '-' || is_digit(p->in[p->pos]))
			return parse_number(p, v);
		return fail(p, -EBADMSG, p->pos, "unexpected character");
	}
}

int json_parse(const char *in, size_t len, const struct json_limits *lim, struct json_doc **out,
	       struct json_error *err)
{
	struct json_limits dflt = { .max_bytes = SIZE_MAX };
	if (!lim)
		lim = &dflt;
	*out = NULL;
	if (len > lim->max_bytes || len > UINT32_MAX) {
		if (err)
			*err = (struct json_error){ .offset = lim->max_bytes, .msg = "input too large" };
		return -E2BIG;
	}
	/* The doc header is the first allocation of its own arena. */
	struct json_doc boot = { .first_dup = -1 };
	struct json_doc *d = arena_alloc(&boot, sizeof(*d));
	if (!d) {
		if (err)
			*err = (struct json_error){ .offset = 0, .msg = "out of memory" };
		return -ENOMEM;
	}
	*d = boot;
	struct parser p = {
		.in = (const unsigned char *)in,
		.len = len,
		.max_depth = lim->max_depth ? lim->max_depth : JSON_DEFAULT_MAX_DEPTH,
		.max_members = lim->max_members ? lim->max_members : JSON_DEFAULT_MAX_MEMBERS,
		.flags = lim->flags,
		.doc = d,
	};
	struct json_value *root = alloc(&p, sizeof(*root));
	if (root && parse_value(&p, root) == 0) {
		skip_ws(&p);
		if (p.pos != p.len)
			fail(&p, -EBADMSG, p.pos, "trailing characters after the document");
	}
	if (p.rc) {
		if (err)
			*err = (struct json_error){ .offset = p.err_at, .msg = p.err_msg };
		json_free(d);
		return p.rc;
	}
	d->root = root;
	d->compact_len = len - p.ws;
	*out = d;
	return 0;
}

const struct json_value *json_root(const struct json_doc *d)
{
	return d->root;
}

long json_first_dup(const struct json_doc *d)
{
	return d->first_dup;
}

size_t json_compact_len(const struct json_doc *d)
{
	return d->compact_len;
}

const struct json_value *json_get(const struct json_value *o, const char *key)
{
	if (!o || o->type != JSON_OBJECT)
		return NULL;
	size_t n = strlen(key);
	for (const struct json_value *m = o->u.list.first; m; m = m->next)
		if (m->key_len == n && memcmp(m->key, key, n) == 0)
			return m;
	return NULL;
}

const char *json_type_name(enum json_type t)
{
	static const char *const names[] = { "null", "false", "true", "number",
					     "string", "array", "object" };
	return (unsigned)t < sizeof(names) / sizeof(names[0]) ? names[t] : "?";
}
