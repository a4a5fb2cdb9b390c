/*
 * jsonw.h — a small JSON writer into a growable buffer: objects, arrays,
 * strings (escaped per RFC 8259: quote, backslash and control characters;
 * other bytes copied as they are, so the caller hands it UTF-8), integers
 * and booleans, with the commas placed for the caller.
 *
 * Owns: one malloc'd buffer per writer (doubling, up to max_bytes). Errors
 * are sticky: after a failed append (out of memory, over max_bytes,
 * nesting deeper than JSONW_MAX_DEPTH) every call is a no-op and
 * jsonw_finish reports it, so a caller writes a whole document and checks
 * once. Pure: no I/O, no globals. The reader is common/json.h.
 */
#ifndef COMMON_JSONW_H
#define COMMON_JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSONW_MAX_DEPTH 32

struct jsonw {
	char *buf;
	size_t len, cap, max_bytes;
	int err;                        /* 0, -ENOMEM, -E2BIG, -ELOOP */
	unsigned depth;
	bool need_comma[JSONW_MAX_DEPTH + 1];
	bool after_key;                 /* a key was written: no comma before its value */
};

/* max_bytes 0: 16 MiB. */
void jsonw_init(struct jsonw *w, size_t max_bytes);
/* Release the buffer (also after jsonw_finish took it: then a no-op). */
void jsonw_free(struct jsonw *w);

void jsonw_obj_begin(struct jsonw *w);
void jsonw_obj_end(struct jsonw *w);
void jsonw_arr_begin(struct jsonw *w);
void jsonw_arr_end(struct jsonw *w);
/* A member name inside an object; the next value call is its value. */
void jsonw_key(struct jsonw *w, const char *k);

void jsonw_str(struct jsonw *w, const char *s);
void jsonw_strn(struct jsonw *w, const char *s, size_t n);
void jsonw_u64(struct jsonw *w, uint64_t v);
void jsonw_i64(struct jsonw *w, int64_t v);
void jsonw_bool(struct jsonw *w, bool v);
void jsonw_null(struct jsonw *w);
/* Raw JSON text, as given (the caller vouches for it). */
void jsonw_raw(struct jsonw *w, const char *s, size_t n);

/* Key + value shorthands. */
void jsonw_kstr(struct jsonw *w, const char *k, const char *v);
void jsonw_ku64(struct jsonw *w, const char *k, uint64_t v);
void jsonw_ki64(struct jsonw *w, const char *k, int64_t v);
void jsonw_kbool(struct jsonw *w, const char *k, bool v);

/* 0 and the document (malloc'd, NUL-terminated, the caller's to free)
 * with its length, or the first error (the buffer is freed). The writer
 * is empty afterwards. */
int jsonw_finish(struct jsonw *w, char **out, size_t *len);

#endif
