/*
 * form.h — a streaming multipart/form-data parser (RFC 7578 over RFC
 * 2046's multipart framing), for S3's browser POST uploads.
 *
 * The body is fed in chunks of any size (one byte at a time works): the
 * delimiter "\r\n--<boundary>" is found across chunk boundaries. Parts
 * named "file" (ASCII case-insensitive) are the upload: their bytes are
 * handed on as spans as they arrive, never buffered. Every other part is
 * a field, gathered whole and handed on with its name; the names and
 * values of all fields together may take at most FORM_FIELDS_MAX bytes
 * (S3 refuses more than 20 KiB of fields before the file).
 *
 * Part headers: Content-Disposition (form-data; name="…"; filename="…")
 * and Content-Type are understood, others ignored; a part's headers at
 * most FORM_HEAD_MAX bytes. A preamble before the first delimiter and an
 * epilogue after the last are skipped.
 *
 * Owns the fields' buffer inside struct form (no allocation). Pure: no
 * I/O, any thread; the callbacks run inside form_feed.
 */
#ifndef GATEWAY_FORM_H
#define GATEWAY_FORM_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define FORM_BOUNDARY_MAX 70          /* RFC 2046 */
#define FORM_FIELDS_MAX (20 * 1024)   /* the fields' names and values in all */
#define FORM_HEAD_MAX 2048            /* one part's header block */
#define FORM_NAME_MAX 256             /* a part's name */
#define FORM_FILENAME_MAX 1024
#define FORM_CTYPE_MAX 256

/* The consumer. Each returns 0 to go on, or a negative error that stops
 * the parse (form_feed returns it). Strings are valid during the call
 * and NUL-terminated (a value may contain NUL: use its length). */
struct form_cbs {
	int (*on_field)(void *ud, const char *name, const char *value, size_t value_len);
	/* The file part starts: its filename (may be empty) and Content-Type
	 * ("" when absent). */
	int (*on_file_begin)(void *ud, const char *filename, const char *content_type);
	int (*on_file_data)(void *ud, const char *data, size_t len);
	int (*on_file_end)(void *ud);
};

enum form_state { FORM_PREAMBLE, FORM_AFTER, FORM_AFTER_DASH, FORM_AFTER_CR, FORM_HEAD,
		  FORM_BODY, FORM_DONE, FORM_ERROR };

struct form {
	const struct form_cbs *cbs;
	void *ud;
	enum form_state st;
	int err;
	char delim[4 + FORM_BOUNDARY_MAX];    /* "\r\n--" boundary */
	size_t dlen;
	size_t dm;                            /* delimiter bytes matched, withheld */
	bool in_file;
	char head[FORM_HEAD_MAX];
	size_t head_len;
	char name[FORM_NAME_MAX + 1];
	char filename[FORM_FILENAME_MAX + 1];
	char ctype[FORM_CTYPE_MAX + 1];
	char fields[FORM_FIELDS_MAX + 1];
	size_t fields_len;                    /* bytes used by finished fields */
	size_t val_len;                       /* the current field's value so far */
	size_t part_at;                       /* in the chunk being fed: where the
					       * current part's body starts */
};

/* The boundary parameter of a Content-Type value ("multipart/form-data;
 * boundary=…", quoted or not) into out (FORM_BOUNDARY_MAX + 1 bytes).
 * Returns its length, or -EINVAL (not multipart/form-data, no boundary,
 * longer than 70, a character RFC 2046 does not allow). */
int form_boundary(const char *ct, size_t len, char *out);

/* Start a parse for boundary (from form_boundary). */
void form_init(struct form *f, const char *boundary, size_t blen, const struct form_cbs *cbs,
	       void *ud);

/* Feed len bytes. Returns 0, -EBADMSG (malformed framing or part
 * headers), -E2BIG (the fields or a header block over their limits), or
 * a callback's error; after an error every later call returns it. */
int form_feed(struct form *f, const char *data, size_t len);

/* The body ended: 0 when the closing delimiter was seen, else -EBADMSG
 * (or the earlier error). */
int form_finish(struct form *f);

#endif
