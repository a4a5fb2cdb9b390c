/*
 * xml_doc.h — the one expat reader under every S3 request document the
 * gateway parses (xml_parse.c's CompleteMultipartUpload, Delete, Tagging,
 * ACL, ownership, versioning, CORS, public access block and encryption
 * bodies; s3_lock_parse.c's object lock documents; lc_rule.c's lifecycle
 * configuration).
 *
 * It owns the limits and the hostile-input rules in one place: a body
 * over the caller's max is refused before parsing; element depth at most
 * max_depth (XML_DOC_DEPTH_MAX at most); one element's text at most
 * text_max bytes (XML_DOC_TEXT_MAX at most); any DOCTYPE, and so any
 * entity declaration, internal or external, stops the parse, so no entity
 * is ever expanded ("billion laughs", XXE). Namespaces are not checked
 * (clients differ on sending the S3 xmlns).
 *
 * It walks the document as a path of open element names and calls the
 * caller's hooks: on_start as each element opens (its attributes at hand),
 * on_end as it closes, with the element's own text. What the elements
 * mean, and which S3 error a failure is, stays with the caller.
 *
 * Pure: no I/O, no allocation beyond expat's for one parse; any thread.
 */
#ifndef GATEWAY_XML_DOC_H
#define GATEWAY_XML_DOC_H

#include <stdbool.h>
#include <stddef.h>

#define XML_DOC_DEPTH_MAX 8
#define XML_DOC_TEXT_MAX 2048

struct xml_doc;
typedef void (*xml_doc_hook)(struct xml_doc *d);

struct xml_doc {
	/* Set by the caller before xml_doc_parse. */
	int max_depth;          /* 0: XML_DOC_DEPTH_MAX; an element deeper: -EBADMSG */
	size_t text_max;        /* 0: XML_DOC_TEXT_MAX */
	bool long_text_ok;      /* text past text_max: cut and text_over set, rather
				   than -EBADMSG (for documents that ignore most text) */
	xml_doc_hook on_start;  /* may be NULL */
	xml_doc_hook on_end;    /* may be NULL */
	void *ud;               /* the caller's */

	/* Valid during the hooks. */
	int depth;                           /* open elements, this one included */
	const char *path[XML_DOC_DEPTH_MAX]; /* their names, outermost first */
	const char **attrs;                  /* on_start only: name, value, ..., NULL */
	size_t text_len;                     /* on_end: the element's text after its
						last child, NUL-terminated */
	bool text_over;                      /* long_text_ok: this element's text was cut */
	char text[XML_DOC_TEXT_MAX + 1];

	/* The reader's. */
	void *parser;
	int err;
};

/* Parse body (len bytes; NULL when len is 0) through d's hooks. Returns
 * 0, the first error a hook gave xml_doc_stop, -EBADMSG (not well-formed
 * XML, a DOCTYPE, too deep, text too long), -E2BIG (len > max_len) or
 * -ENOMEM. The hooks are not called again after an error. */
int xml_doc_parse(struct xml_doc *d, const char *body, size_t len, size_t max_len);

/* From a hook: end the parse with err (negative; the first one stays).
 * Also safe outside a parse, where it only records err. */
void xml_doc_stop(struct xml_doc *d, int err);

/* Whether the open elements are exactly path, names separated by '/'
 * ("Delete/Object/Key"). */
bool xml_doc_at(const struct xml_doc *d, const char *path);

/* The name of the element the hook is called for, and of its parent
 * ("" at the root). */
const char *xml_doc_name(const struct xml_doc *d);
const char *xml_doc_parent(const struct xml_doc *d);

#endif
