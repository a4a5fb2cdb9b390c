/*
 * xml.h — a small streaming XML writer into one growable, bounded buffer,
 * for S3 response bodies (ListBuckets, ListObjects, errors, ...).
 *
 * Owns: its buffer (malloc'd, grown by doubling up to max_bytes). Invariant:
 * buf[0..len) is always well-formed XML so far, and every element opened is
 * closed by xml_close in LIFO order (a fixed stack of XML_MAX_DEPTH names).
 * Errors are sticky: the first failure (no memory, over max_bytes, depth)
 * is remembered, later calls do nothing, and xml_finish reports it, so a
 * renderer writes straight-line code and checks once.
 *
 * Escaping: text and attribute values escape & < > " '; control characters
 * other than TAB, LF and CR are written as numeric references (&#x1;), as S3
 * does for such keys; CR is written as &#13; so it survives parsing. Bytes
 * are otherwise copied as given (the caller supplies UTF-8).
 *
 * No I/O, no globals; any thread, one writer per thread at a time.
 */
#ifndef GATEWAY_XML_H
#define GATEWAY_XML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define XML_MAX_DEPTH 16

struct xml_w {
	char *buf;
	size_t len;
	size_t cap;
	size_t max_bytes;       /* hard limit on len; exceeded -> -E2BIG */
	int err;                /* sticky: 0 or negative errno */
	int depth;
	const char *stack[XML_MAX_DEPTH]; /* element names: static strings */
};

/* Start a writer. No allocation happens until the first write. max_bytes 0
 * means 64 MiB. */
void xml_init(struct xml_w *w, size_t max_bytes);

/* Release the buffer; w may be xml_init-ed again. */
void xml_free(struct xml_w *w);

/* Reset to empty, keeping the buffer for reuse. */
void xml_reset(struct xml_w *w);

/* <?xml version="1.0" encoding="UTF-8"?> and a newline. */
void xml_decl(struct xml_w *w);

/* Open <name> (name must outlive the element: use string literals). With
 * xmlns non-NULL, writes <name xmlns="...">. */
void xml_open(struct xml_w *w, const char *name);
void xml_open_ns(struct xml_w *w, const char *name, const char *xmlns);

/* Open <name a0="v0" a1="v1" ...> with n attribute pairs (attrs[2i] the
 * name, written as is: literals; attrs[2i+1] the value, escaped). */
void xml_open_attrs(struct xml_w *w, const char *name, const char *const *attrs, size_t n);

/* Close the innermost open element. */
void xml_close(struct xml_w *w);

/* Escaped text inside the current element. */
void xml_text(struct xml_w *w, const char *s, size_t n);

/* <name>escaped text</name> ; text may be NULL (treated as empty). */
void xml_elem(struct xml_w *w, const char *name, const char *text);
void xml_elem_n(struct xml_w *w, const char *name, const char *text, size_t n);
void xml_elem_u64(struct xml_w *w, const char *name, uint64_t v);
void xml_elem_bool(struct xml_w *w, const char *name, bool v);

/* Raw bytes, unescaped (caller guarantees they are well-formed XML). */
void xml_raw(struct xml_w *w, const char *s, size_t n);

/* Check the document: 0 when everything succeeded and every element is
 * closed (*out and *len then describe it, owned by w), -ENOMEM, -E2BIG, or
 * -EINVAL (depth overflow / unbalanced close / elements left open). */
int xml_finish(struct xml_w *w, const char **out, size_t *len);

/* Escape n bytes of s into dst (cap bytes, NUL-terminated). Returns the
 * escaped length, or -ENOSPC if it does not fit. For callers that build
 * XML fragments by hand. */
long xml_escape(char *dst, size_t cap, const char *s, size_t n);

#endif
