/*
 * json.h — a strict, bounded RFC 8259 JSON parser into a read-only tree.
 *
 * Owns: the grammar (RFC 8259 section 2-8, nothing more: no comments, no
 * trailing commas, no NaN/Infinity, no single quotes, no byte order
 * mark), UTF-8 validation of the whole input (RFC 3629: no overlong
 * forms, no encoded surrogates, nothing above U+10FFFF), \u escapes
 * decoded to UTF-8 (a surrogate pair to one code point; a lone surrogate
 * is an error, which RFC 8259 section 8.2 leaves to the parser), and
 * numbers kept as their text next to a parsed double and, when exact, an
 * int64.
 *
 * Bounded: the caller gives the maximum input size; nesting depth and
 * the members of one object or array have limits too (json_limits). The
 * tree lives in one arena per document (a chain of blocks, freed by
 * json_free in one go); its size is linear in the input (at most a few
 * dozen bytes per input byte), and recursion depth is the nesting limit.
 *
 * Duplicate keys in one object are either an error (JSON_REJECT_DUP_KEYS)
 * or reported: the object is flagged and the document keeps the offset of
 * the first duplicate. RFC 8259 section 4 says names SHOULD be unique and
 * that behaviour with duplicates is unpredictable; AWS's policy language
 * rejects some, so callers decide.
 *
 * Pure and reentrant: no globals, no I/O. The double of a number comes
 * from strtod on text the grammar has already checked, so it assumes
 * the "C" locale's decimal point, which IOLake's processes never change.
 * Knows nothing about what the document means.
 */
#ifndef COMMON_JSON_H
#define COMMON_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSON_DEFAULT_MAX_DEPTH 32
#define JSON_DEFAULT_MAX_MEMBERS 4096

/* json_limits.flags */
#define JSON_REJECT_DUP_KEYS 0x1u   /* a repeated key in an object is an error */

struct json_limits {
	size_t max_bytes;        /* input longer than this: -E2BIG before parsing */
	uint32_t max_depth;      /* nested arrays/objects; 0: JSON_DEFAULT_MAX_DEPTH */
	uint32_t max_members;    /* per object or array; 0: JSON_DEFAULT_MAX_MEMBERS */
	uint32_t flags;          /* JSON_REJECT_DUP_KEYS */
};

enum json_type {
	JSON_NULL,
	JSON_FALSE,
	JSON_TRUE,
	JSON_NUMBER,
	JSON_STRING,
	JSON_ARRAY,
	JSON_OBJECT,
};

struct json_value {
	enum json_type type;
	uint32_t offset;                /* byte offset of the value's first byte in the input */
	const struct json_value *next;  /* next item of the enclosing array/object, or NULL */
	const char *key;                /* inside an object: the member's name (decoded, NUL-terminated) */
	size_t key_len;                 /* its length; the name may contain U+0000 */
	union {
		struct {
			const char *s;  /* decoded UTF-8, NUL-terminated, may contain U+0000 */
			size_t len;
		} str;
		struct {
			const char *text;   /* as written, NUL-terminated */
			size_t len;
			double d;           /* nearest double (±HUGE_VAL if out of range) */
			int64_t i;          /* exact value when is_int */
			bool is_int;        /* no fraction or exponent, fits int64 */
		} num;
		struct {
			const struct json_value *first; /* items (or members) in document order */
			uint32_t n;
			bool dup_keys;      /* object only: some key appears twice */
		} list;
	} u;
};

struct json_doc;

struct json_error {
	size_t offset;          /* byte offset where parsing stopped */
	const char *msg;        /* static text, e.g. "invalid UTF-8" */
};

/* Parses in[0..len) (no NUL needed). On 0, *out holds the document; free
 * it with json_free. Returns 0, -EBADMSG (not JSON, invalid UTF-8, a
 * duplicate key under JSON_REJECT_DUP_KEYS), -E2BIG (len > max_bytes),
 * -ELOOP (deeper than max_depth), -EMSGSIZE (an object or array with more
 * than max_members), -ENOMEM. On error *out is NULL and err (if not NULL)
 * says where and why. lim may be NULL: max_bytes unbounded (SIZE_MAX),
 * default depth and members, duplicates reported. */
int json_parse(const char *in, size_t len, const struct json_limits *lim, struct json_doc **out,
	       struct json_error *err);

void json_free(struct json_doc *d);

/* The document's top-level value; never NULL. */
const struct json_value *json_root(const struct json_doc *d);

/* Offset of the first duplicate key in the document, or -1 if none. */
long json_first_dup(const struct json_doc *d);

/* Bytes of the input outside insignificant whitespace (the document's
 * size with the whitespace between tokens removed). */
size_t json_compact_len(const struct json_doc *d);

/* The first member of object o named key (exact bytes), or NULL (also if
 * o is not an object). */
const struct json_value *json_get(const struct json_value *o, const char *key);

/* Storage that lives as long as the document (zeroed, aligned for any
 * type), for a consumer building its own structures next to the tree;
 * NULL when out of memory. */
void *json_doc_alloc(struct json_doc *d, size_t n);

/* "null", "false", "true", "number", "string", "array", "object". */
const char *json_type_name(enum json_type t);

#endif
