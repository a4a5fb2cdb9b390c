/*
 * xml_parse.c — S3 request XML over expat. See xml_parse.h.
 *
 * One small SAX core: a stack of element names (depth-bounded), the text
 * of the innermost element gathered into a bounded buffer, and an
 * end-element hook per document type that sees the path and the text.
 *
 * Owns nothing beyond one parse. Does not choose S3 errors: callers
 * answer a failure with MalformedXML.
 */
#include "gateway/xml_parse.h"

#include <errno.h>
#include <expat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sax {
	XML_Parser p;
	int err;                         /* 0 or negative */
	int depth;
	const char *path[XMLP_MAX_DEPTH];/* names: valid during the callbacks */
	size_t text_len;
	char text[XMLP_TEXT_MAX + 1];
	void (*on_start)(struct sax *s);
	void (*on_end)(struct sax *s);
	void *ud;
};

static void stop(struct sax *s, int err)
{
	if (!s->err)
		s->err = err;
	XML_StopParser(s->p, XML_FALSE);
}

static void XMLCALL el_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
	(void)attrs;
	struct sax *s = ud;
	if (s->err)
		return;
	if (s->depth == XMLP_MAX_DEPTH) {
		stop(s, -EBADMSG);
		return;
	}
	s->path[s->depth++] = name;
	s->text_len = 0;
	if (s->on_start)
		s->on_start(s);
}

static void XMLCALL el_end(void *ud, const XML_Char *name)
{
	(void)name;
	struct sax *s = ud;
	if (s->err)
		return;
	s->text[s->text_len] = '\0';
	s->on_end(s);
	s->depth--;
	s->text_len = 0;
}

static void XMLCALL chars(void *ud, const XML_Char *t, int n)
{
	struct sax *s = ud;
	if (s->err)
		return;
	if ((size_t)n > XMLP_TEXT_MAX - s->text_len) {
		stop(s, -EBADMSG);
		return;
	}
	memcpy(s->text + s->text_len, t, (size_t)n);
	s->text_len += (size_t)n;
}

/* No DOCTYPE at all: no entities to expand, no external resources. */
static void XMLCALL doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
			    const XML_Char *pubid, int has_internal)
{
	(void)name, (void)sysid, (void)pubid, (void)has_internal;
	stop(ud, -EBADMSG);
}

static void XMLCALL entity_decl(void *ud, const XML_Char *name, int is_param,
				const XML_Char *value, int value_len, const XML_Char *base,
				const XML_Char *sysid, const XML_Char *pubid,
				const XML_Char *notation)
{
	(void)name, (void)is_param, (void)value, (void)value_len, (void)base, (void)sysid;
	(void)pubid, (void)notation;
	stop(ud, -EBADMSG);
}

static int sax_run(struct sax *s, const char *body, size_t len, size_t max_len)
{
	if (len > max_len)
		return -E2BIG;
	s->p = XML_ParserCreate("UTF-8");
	if (!s->p)
		return -ENOMEM;
	XML_SetUserData(s->p, s);
	XML_SetElementHandler(s->p, el_start, el_end);
	XML_SetCharacterDataHandler(s->p, chars);
	XML_SetStartDoctypeDeclHandler(s->p, doctype);
	XML_SetEntityDeclHandler(s->p, entity_decl);
	XML_SetParamEntityParsing(s->p, XML_PARAM_ENTITY_PARSING_NEVER);
	enum XML_Status st = XML_Parse(s->p, body, (int)len, XML_TRUE);
	if (st != XML_STATUS_OK && !s->err)
		s->err = -EBADMSG;
	XML_ParserFree(s->p);
	return s->err;
}

static bool at(const struct sax *s, int depth, const char *a, const char *b, const char *c)
{
	if (s->depth != depth)
		return false;
	const char *want[3] = { a, b, c };
	for (int i = 0; i < depth; i++)
		if (strcmp(s->path[i], want[i]) != 0)
			return false;
	return true;
}

/* ------------------------------------------------------------ CompleteMultipartUpload */

struct mpu {
	struct xmlp_part *parts;
	size_t max, n;
	bool have_num, have_etag;
	struct xmlp_part cur;
};

static void mpu_start(struct sax *s)
{
	struct mpu *m = s->ud;
	if (s->depth == 1 && strcmp(s->path[0], "CompleteMultipartUpload") != 0)
		stop(s, -EBADMSG);
	else if (at(s, 2, "CompleteMultipartUpload", "Part", NULL)) {
		memset(&m->cur, 0, sizeof(m->cur));
		m->have_num = m->have_etag = false;
	}
}

static void mpu_end(struct sax *s)
{
	struct mpu *m = s->ud;
	if (at(s, 3, "CompleteMultipartUpload", "Part", "PartNumber")) {
		char *end;
		unsigned long v = strtoul(s->text, &end, 10);
		if (!s->text[0] || *end || v < 1 || v > 10000) {
			stop(s, -EBADMSG);
			return;
		}
		m->cur.part_number = (uint32_t)v;
		m->have_num = true;
	} else if (at(s, 3, "CompleteMultipartUpload", "Part", "ETag")) {
		if (s->text_len == 0 || s->text_len > XMLP_ETAG_MAX) {
			stop(s, -EBADMSG);
			return;
		}
		memcpy(m->cur.etag, s->text, s->text_len + 1);
		m->have_etag = true;
	} else if (at(s, 2, "CompleteMultipartUpload", "Part", NULL)) {
		if (!m->have_num || !m->have_etag) {
			stop(s, -EBADMSG);
			return;
		}
		if (m->n == m->max) {
			stop(s, -E2BIG);
			return;
		}
		m->parts[m->n++] = m->cur;
	}
}

int xmlp_complete_mpu(const char *body, size_t len, size_t max_len, struct xmlp_part *parts,
		      size_t max_parts, size_t *n)
{
	struct mpu m = { .parts = parts, .max = max_parts };
	struct sax s = { .on_start = mpu_start, .on_end = mpu_end, .ud = &m };
	int rc = sax_run(&s, body, len, max_len);
	*n = m.n;
	if (rc == 0 && m.n == 0)
		rc = -EBADMSG; /* S3: MalformedXML for an empty part list */
	return rc;
}

/* ------------------------------------------------------------ Delete */

struct del {
	struct xmlp_delete *d;
	bool have_key;
};

static void del_start(struct sax *s)
{
	struct del *x = s->ud;
	if (s->depth == 1 && strcmp(s->path[0], "Delete") != 0)
		stop(s, -EBADMSG);
	else if (at(s, 2, "Delete", "Object", NULL))
		x->have_key = false;
}

static void del_end(struct sax *s)
{
	struct del *x = s->ud;
	struct xmlp_delete *d = x->d;
	if (at(s, 2, "Delete", "Quiet", NULL)) {
		if (strcmp(s->text, "true") == 0)
			d->quiet = true;
		else if (strcmp(s->text, "false") == 0)
			d->quiet = false;
		else
			stop(s, -EBADMSG);
	} else if (at(s, 3, "Delete", "Object", "Key")) {
		if (x->have_key || s->text_len == 0) {
			stop(s, -EBADMSG);
			return;
		}
		if (d->n_keys == d->max_keys) {
			stop(s, -EBADMSG);
			return;
		}
		if (s->text_len + 1 > d->arena_cap - d->arena_len) {
			stop(s, -E2BIG);
			return;
		}
		char *k = d->arena + d->arena_len;
		memcpy(k, s->text, s->text_len + 1);
		d->arena_len += s->text_len + 1;
		d->keys[d->n_keys] = k;
		d->key_lens[d->n_keys] = s->text_len;
		d->n_keys++;
		x->have_key = true;
	} else if (at(s, 2, "Delete", "Object", NULL)) {
		if (!x->have_key)
			stop(s, -EBADMSG);
	}
}

int xmlp_delete(const char *body, size_t len, size_t max_len, struct xmlp_delete *d)
{
	d->quiet = false;
	d->n_keys = 0;
	d->arena_len = 0;
	struct del x = { .d = d };
	struct sax s = { .on_start = del_start, .on_end = del_end, .ud = &x };
	int rc = sax_run(&s, body, len, max_len);
	if (rc == 0 && d->n_keys == 0)
		rc = -EBADMSG;
	return rc;
}

/* ------------------------------------------------------------ Tagging */

/* at() one level deeper: Tagging/TagSet/Tag/{Key,Value}. */
static bool at4(const struct sax *s, const char *leaf)
{
	return s->depth == 4 && strcmp(s->path[0], "Tagging") == 0 && strcmp(s->path[1], "TagSet") == 0 &&
	       strcmp(s->path[2], "Tag") == 0 && strcmp(s->path[3], leaf) == 0;
}

struct tagp {
	struct xmlp_tagging *t;
	bool have_set, have_key, have_value;
	const char *key, *value;
};

static void tag_start(struct sax *s)
{
	struct tagp *x = s->ud;
	if (s->depth == 1 && strcmp(s->path[0], "Tagging") != 0)
		stop(s, -EBADMSG);
	else if (at(s, 2, "Tagging", "TagSet", NULL))
		x->have_set = true;
	else if (at(s, 3, "Tagging", "TagSet", "Tag"))
		x->have_key = x->have_value = false;
}

/* Copy the element's text into the arena; NULL (and stopped) when full. */
static const char *tag_copy(struct sax *s, struct xmlp_tagging *t)
{
	if (s->text_len + 1 > t->arena_cap - t->arena_len) {
		stop(s, -E2BIG);
		return NULL;
	}
	char *p = t->arena + t->arena_len;
	memcpy(p, s->text, s->text_len + 1);
	t->arena_len += s->text_len + 1;
	return p;
}

static void tag_end(struct sax *s)
{
	struct tagp *x = s->ud;
	struct xmlp_tagging *t = x->t;
	bool is_key = at4(s, "Key");
	if (is_key || at4(s, "Value")) {
		bool *have = is_key ? &x->have_key : &x->have_value;
		if (*have) {
			stop(s, -EBADMSG);
			return;
		}
		const char *p = tag_copy(s, t);
		if (!p)
			return;
		*(is_key ? &x->key : &x->value) = p;
		*have = true;
	} else if (at(s, 3, "Tagging", "TagSet", "Tag")) {
		if (!x->have_key || !x->have_value) {
			stop(s, -EBADMSG);
			return;
		}
		if (t->n_tags == t->max_tags) {
			stop(s, -E2BIG);
			return;
		}
		t->keys[t->n_tags] = x->key;
		t->values[t->n_tags] = x->value;
		t->n_tags++;
	}
}

int xmlp_tagging(const char *body, size_t len, size_t max_len, struct xmlp_tagging *t)
{
	t->n_tags = 0;
	t->arena_len = 0;
	struct tagp x = { .t = t };
	struct sax s = { .on_start = tag_start, .on_end = tag_end, .ud = &x };
	int rc = sax_run(&s, body, len, max_len);
	if (rc == 0 && !x.have_set)
		rc = -EBADMSG;
	return rc;
}
