/*
 * xml_doc.c — the expat reader under the gateway's S3 documents (see
 * xml_doc.h): a stack of element names, the innermost element's text in a
 * bounded buffer, the caller's hooks at each open and close.
 *
 * Owns nothing beyond one parse. Does not choose S3 errors.
 */
#include "gateway/xml_doc.h"

#include <errno.h>
#include <expat.h>
#include <string.h>

void xml_doc_stop(struct xml_doc *d, int err)
{
	if (!d->err)
		d->err = err;
	if (d->parser)
		XML_StopParser(d->parser, XML_FALSE);
}

static void XMLCALL el_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
	struct xml_doc *d = ud;
	if (d->err)
		return;
	if (d->depth == d->max_depth) {
		xml_doc_stop(d, -EBADMSG);
		return;
	}
	d->path[d->depth++] = name;
	d->text_len = 0;
	d->text_over = false;
	d->attrs = attrs;
	if (d->on_start)
		d->on_start(d);
	d->attrs = NULL;
}

static void XMLCALL el_end(void *ud, const XML_Char *name)
{
	(void)name;
	struct xml_doc *d = ud;
	if (d->err)
		return;
	d->text[d->text_len] = '\0';
	if (d->on_end)
		d->on_end(d);
	d->depth--;
	d->text_len = 0;
}

static void XMLCALL chars(void *ud, const XML_Char *t, int n)
{
	struct xml_doc *d = ud;
	if (d->err || n <= 0)
		return;
	if ((size_t)n > d->text_max - d->text_len) {
		if (d->long_text_ok)
			d->text_over = true;   /* an error only where the caller reads it */
		else
			xml_doc_stop(d, -EBADMSG);
		return;
	}
	memcpy(d->text + d->text_len, t, (size_t)n);
	d->text_len += (size_t)n;
}

/* No DOCTYPE at all: no entities to expand, no external resources. */
static void XMLCALL doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
			    const XML_Char *pubid, int has_internal)
{
	(void)name, (void)sysid, (void)pubid, (void)has_internal;
	xml_doc_stop(ud, -EBADMSG);
}

static void XMLCALL entity_decl(void *ud, const XML_Char *name, int is_param,
				const XML_Char *value, int value_len, const XML_Char *base,
				const XML_Char *sysid, const XML_Char *pubid,
				const XML_Char *notation)
{
	(void)name, (void)is_param, (void)value, (void)value_len, (void)base, (void)sysid;
	(void)pubid, (void)notation;
	xml_doc_stop(ud, -EBADMSG);
}

int xml_doc_parse(struct xml_doc *d, const char *body, size_t len, size_t max_len)
{
	if (len > max_len)
		return -E2BIG;
	if (d->max_depth <= 0 || d->max_depth > XML_DOC_DEPTH_MAX)
		d->max_depth = XML_DOC_DEPTH_MAX;
	if (d->text_max == 0 || d->text_max > XML_DOC_TEXT_MAX)
		d->text_max = XML_DOC_TEXT_MAX;
	d->depth = 0;
	d->text_len = 0;
	d->text_over = false;
	d->err = 0;
	XML_Parser p = XML_ParserCreate("UTF-8");
	if (!p)
		return -ENOMEM;
	d->parser = p;
	XML_SetUserData(p, d);
	XML_SetElementHandler(p, el_start, el_end);
	XML_SetCharacterDataHandler(p, chars);
	XML_SetStartDoctypeDeclHandler(p, doctype);
	XML_SetEntityDeclHandler(p, entity_decl);
	XML_SetParamEntityParsing(p, XML_PARAM_ENTITY_PARSING_NEVER);
	enum XML_Status st = XML_Parse(p, body ? body : "", (int)len, XML_TRUE);
	if (st != XML_STATUS_OK && !d->err)
		d->err = -EBADMSG;
	XML_ParserFree(p);
	d->parser = NULL;
	return d->err;
}

bool xml_doc_at(const struct xml_doc *d, const char *path)
{
	int i = 0;
	for (const char *s = path; i < d->depth; i++) {
		size_t n = strcspn(s, "/");
		if (strncmp(d->path[i], s, n) != 0 || d->path[i][n] != '\0')
			return false;
		s += n;
		if (*s == '\0')
			return i + 1 == d->depth;
		s++;
	}
	return false;
}

const char *xml_doc_name(const struct xml_doc *d)
{
	return d->depth >= 1 ? d->path[d->depth - 1] : "";
}

const char *xml_doc_parent(const struct xml_doc *d)
{
	return d->depth >= 2 ? d->path[d->depth - 2] : "";
}
