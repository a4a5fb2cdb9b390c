/*
 * s3_tagging.c — object and bucket tagging: Put/Get/DeleteObjectTagging,
 * Put/Get/DeleteBucketTagging, the x-amz-tagging header of PutObject and
 * x-amz-tagging-count of GetObject/HeadObject; and the pure tag-set
 * functions of s3_tagging.h.
 *
 * Invariant: a tag change never replaces the object's data. Object tags
 * are written by meta's SetObjectTags conditioned on the generation just
 * read (a concurrent overwrite makes it CONFLICT and we re-read and go
 * again, so tags meant for the old version never land on the new one);
 * the generation stays, nothing is queued for GC and this module never
 * deletes shards.
 *
 * Owns the request's body (the Tagging document) and, for an object, the
 * record it read. Does not store a PUT's tags itself (s3_put.c commits
 * what s3_tagging_from_header builds).
 *
 * Thread: the gateway loop; no blocking call.
 */
#include "gateway/s3_tagging.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/err.h"
#include "gateway/s3_body.h"
#include "gateway/s3_handlers.h"
#include "gateway/s3_rq.h"
#include "gateway/s3_util.h"
#include "gateway/s3_version.h"
#include "gateway/xml_parse.h"

/* ------------------------------------------------------------ tag sets (pure) */

int s3_tags_parse_header(const char *s, size_t len, struct s3_tagset *ts, char *arena,
			 size_t arena_cap)
{
	size_t used = 0;
	ts->n = 0;
	if (arena_cap < S3_TAGS_HEADER_ARENA(len))
		return -ENOBUFS;
	size_t i = 0;
	while (i < len) {
		size_t end = i;
		while (end < len && s[end] != '&')
			end++;
		if (end == i)
			return -EINVAL; /* "&&" or a leading/trailing '&' */
		if (ts->n == S3_TAGS_BUCKET_MAX)
			return -E2BIG;
		size_t eq = i;
		while (eq < end && s[eq] != '=')
			eq++;
		long kn = s3_pct_decode(arena + used, s + i, eq - i, true);
		if (kn < 0)
			return -EINVAL;
		ts->keys[ts->n] = arena + used;
		used += (size_t)kn;
		arena[used++] = 0;
		size_t vs = eq < end ? eq + 1 : end;
		long vn = s3_pct_decode(arena + used, s + vs, end - vs, true);
		if (vn < 0)
			return -EINVAL;
		ts->values[ts->n] = arena + used;
		used += (size_t)vn;
		arena[used++] = 0;
		ts->n++;
		i = end < len ? end + 1 : end;
		if (end < len && i == len)
			return -EINVAL; /* trailing '&' */
	}
	return 0;
}

/* Code points of well-formed UTF-8 (no overlongs, no surrogates), or -1. */
static long utf8_chars(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	long n = 0;
	while (*s) {
		unsigned c = *s, need, min;
		if (c < 0x80)
			need = 0, min = 0;
		else if ((c & 0xe0) == 0xc0)
			need = 1, min = 0x80, c &= 0x1f;
		else if ((c & 0xf0) == 0xe0)
			need = 2, min = 0x800, c &= 0x0f;
		else if ((c & 0xf8) == 0xf0)
			need = 3, min = 0x10000, c &= 0x07;
		else
			return -1;
		s++;
		for (unsigned k = 0; k < need; k++, s++) {
			if ((*s & 0xc0) != 0x80)
				return -1;
			c = (c << 6) | (*s & 0x3f);
		}
		if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
			return -1;
		n++;
	}
	return n;
}

enum s3_err s3_tags_check(const struct s3_tagset *ts, size_t max, const char **msg)
{
	*msg = NULL;
	if (ts->n > max) {
		*msg = max == S3_TAGS_OBJECT_MAX ? "Object tags cannot be greater than 10"
						 : "Bucket tag count cannot be greater than 50";
		return S3E_InvalidTag;
	}
	for (size_t i = 0; i < ts->n; i++) {
		long kc = utf8_chars(ts->keys[i]), vc = utf8_chars(ts->values[i]);
		if (kc < 0 || vc < 0) {
			*msg = "The TagKey or TagValue you have provided is not valid UTF-8";
			return S3E_InvalidTag;
		}
		if (kc == 0 || kc > S3_TAG_KEY_MAX) {
			*msg = kc ? "The TagKey you have provided is too long, max 128"
				  : "The TagKey you have provided is invalid";
			return S3E_InvalidTag;
		}
		if (vc > S3_TAG_VALUE_MAX) {
			*msg = "The TagValue you have provided is too long, max 256";
			return S3E_InvalidTag;
		}
		if (strncmp(ts->keys[i], "aws:", 4) == 0) {
			*msg = "Your TagKey cannot be prefixed with aws:";
			return S3E_InvalidTag;
		}
		for (size_t j = 0; j < i; j++)
			if (strcmp(ts->keys[i], ts->keys[j]) == 0) {
				*msg = "Cannot provide multiple Tags with the same key";
				return S3E_InvalidTag;
			}
	}
	return S3E_OK;
}

/* ------------------------------------------------------------ requests */

struct tag_rq {
	struct s3_rq rq;
	struct s3_body body;               /* Put*Tagging: the Tagging document */
	Iolake__Meta__ObjectRecord *rec;   /* object tags: the record read */
};

static struct tag_rq *tag_of(struct s3_rq *rq)
{
	return container_of(rq, struct tag_rq, rq);
}

static void tag_fini(struct s3_rq *rq)
{
	struct tag_rq *t = tag_of(rq);
	s3_body_free(&t->body);
	s3u_free_msg(t->rec);
}

static struct tag_rq *tag_new(struct s3_call *c)
{
	struct tag_rq *t = s3_rq_new(c, sizeof(*t));
	if (t)
		t->rq.fini = tag_fini;
	return t;
}

/* The body's Tagging document into ts (strings in *arena, the caller
 * frees it), checked against max: S3E_OK or the error with *msg. */
static enum s3_err parse_tagging(const struct s3_body *b, size_t max, struct s3_tagset *ts,
				 char **arena, const char **msg)
{
	*msg = NULL;
	size_t cap = b->len + 1;
	if (!(*arena = malloc(cap)))
		return S3E_InternalError;
	struct xmlp_tagging t = { .keys = ts->keys, .values = ts->values,
				  .max_tags = S3_TAGS_BUCKET_MAX, .arena = *arena, .arena_cap = cap };
	int rc = xmlp_tagging(b->buf ? (const char *)b->buf : "", b->len, S3_TAGGING_BODY_MAX, &t);
	ts->n = t.n_tags;
	if (rc == -E2BIG && t.n_tags == S3_TAGS_BUCKET_MAX) {
		ts->n = max + 1; /* more than any limit: s3_tags_check words it */
		return s3_tags_check(ts, max, msg);
	}
	if (rc)
		return S3E_MalformedXML;
	return s3_tags_check(ts, max, msg);
}

/* ------------------------------------------------------------ records */

static void tagset_of_record(const Iolake__Meta__ObjectRecord *r, struct s3_tagset *ts)
{
	ts->n = 0;
	for (size_t i = 0; i < r->n_tags && i < S3_TAGS_BUCKET_MAX; i++) {
		ts->keys[ts->n] = r->tags[i]->key;
		ts->values[ts->n++] = r->tags[i]->value;
	}
}

void s3_tagging_count_header(struct http_stream *s, const Iolake__Meta__ObjectRecord *r)
{
	if (r->n_tags == 0)
		return;
	char v[24];
	snprintf(v, sizeof(v), "%zu", r->n_tags);
	http_add_header(s, "x-amz-tagging-count", v);
}

enum s3_err s3_tagging_from_header(struct s3_call *c, Iolake__Meta__ObjectRecord *r, void **mem,
				   const char **msg)
{
	*mem = NULL;
	*msg = NULL;
	const struct sigv4_header *h = s3u_hdr(c, "x-amz-tagging");
	if (!h)
		return S3E_OK;
	struct s3_tagset ts;
	size_t cap = S3_TAGS_HEADER_ARENA(h->value_len);
	char *arena = malloc(cap);
	if (!arena)
		return S3E_InternalError;
	int rc = s3_tags_parse_header(h->value, h->value_len, &ts, arena, cap);
	enum s3_err e = S3E_OK;
	if (rc == -E2BIG) {
		ts.n = S3_TAGS_OBJECT_MAX + 1;
		e = s3_tags_check(&ts, S3_TAGS_OBJECT_MAX, msg);
	} else if (rc) {
		*msg = "The header 'x-amz-tagging' shall be encoded as UTF-8 then URLEncoded URL query parameters without tag name duplicates.";
		e = S3E_InvalidArgument;
	} else {
		e = s3_tags_check(&ts, S3_TAGS_OBJECT_MAX, msg);
	}
	if (e || !r || ts.n == 0) {
		free(arena);
		return e;
	}
	/* One block: entries, pointers, then the arena's strings. */
	size_t head = ts.n * (sizeof(Iolake__Meta__ObjectRecord__TagsEntry) + sizeof(void *));
	uint8_t *m = malloc(head);
	if (!m) {
		free(arena);
		return S3E_InternalError;
	}
	Iolake__Meta__ObjectRecord__TagsEntry *ents = (void *)m;
	Iolake__Meta__ObjectRecord__TagsEntry **p = (void *)(m + ts.n * sizeof(*ents));
	for (size_t i = 0; i < ts.n; i++) {
		iolake__meta__object_record__tags_entry__init(&ents[i]);
		ents[i].key = (char *)ts.keys[i];
		ents[i].value = (char *)ts.values[i];
		p[i] = &ents[i];
	}
	r->n_tags = ts.n;
	r->tags = p;
	/* The arena must outlive the record too: chain it after the block. */
	void **both = malloc(2 * sizeof(void *));
	if (!both) {
		free(m), free(arena);
		r->n_tags = 0, r->tags = NULL;
		return S3E_InternalError;
	}
	both[0] = m;
	both[1] = arena;
	*mem = both;
	return S3E_OK;
}

void s3_tagging_mem_free(void *mem)
{
	void **both = mem;
	if (!both)
		return;
	free(both[0]);
	free(both[1]);
	free(both);
}

static void send_tagset(struct s3_rq *rq, const struct s3_tagset *ts)
{
	struct xml_w *w = s3_call_xml(rq->c);
	xml_decl(w);
	xml_open_ns(w, "Tagging", S3_XMLNS);
	xml_open(w, "TagSet");
	for (size_t i = 0; i < ts->n; i++) {
		xml_open(w, "Tag");
		xml_elem(w, "Key", ts->keys[i]);
		xml_elem(w, "Value", ts->values[i]);
		xml_close(w);
	}
	xml_close(w);
	xml_close(w);
	s3_call_send_xml(rq->c, 200);
}

/* ------------------------------------------------------------ object tagging */

static void otag_read(struct tag_rq *t);

static void on_otag_commit(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__OpResult *res)
{
	if (!rq->c)
		return;
	if (e == S3E_OK) {
		bool del = s3_call_req(rq->c)->op == S3_OP_DeleteObjectTagging;
		http_respond(s3_call_stream(rq->c), del ? 204 : 200, NULL, 0, NULL, NULL);
	} else if (s3_rq_conflict(res) && ++rq->tries < S3_COMMIT_TRIES) {
		otag_read(tag_of(rq)); /* overwritten meanwhile: tag the new version */
	} else if (e == S3E_NoSuchKey) {
		s3_rq_no_such_key(rq, rq->bucket);
	} else {
		s3_rq_fail(rq, e, NULL);
	}
}

/* Submit SetObjectTags for the record just read (t->rec). */
static void otag_commit(struct tag_rq *t)
{
	struct s3_rq *rq = &t->rq;
	struct s3_tagset ts = { .n = 0 };
	char *arena = NULL;
	const char *msg;
	if (s3_call_req(rq->c)->op == S3_OP_PutObjectTagging) {
		enum s3_err e = parse_tagging(&t->body, S3_TAGS_OBJECT_MAX, &ts, &arena, &msg);
		if (e) { /* checked before the read: only no memory here */
			free(arena);
			s3_rq_fail(rq, e, msg);
			return;
		}
	}
	Iolake__Meta__SetObjectTags__TagsEntry ents[S3_TAGS_OBJECT_MAX], *p[S3_TAGS_OBJECT_MAX];
	Iolake__Meta__SetObjectTags st = IOLAKE__META__SET_OBJECT_TAGS__INIT;
	for (size_t i = 0; i < ts.n; i++) {
		iolake__meta__set_object_tags__tags_entry__init(&ents[i]);
		ents[i].key = (char *)ts.keys[i];
		ents[i].value = (char *)ts.values[i];
		p[i] = &ents[i];
	}
	st.bucket = rq->bucket;
	st.key = rq->key;
	st.if_generation = t->rec->generation;
	st.n_tags = ts.n;
	st.tags = p;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_PUT_OBJECT_TAGS;
	op.put_object_tags = &st;
	bool bad;
	const char *vid = s3_ver_query(rq, &bad);
	op.version_id = (char *)(vid ? vid : "");   /* a version's tags (issue 17) */
	s3_rq_submit(rq, &op, S3_SUBJ_OBJECT_TAGS, on_otag_commit);
	free(arena);
}

static void on_otag_head(struct s3_rq *rq, enum s3_err e, Iolake__Meta__ObjectRecord *rec)
{
	struct tag_rq *t = tag_of(rq);
	s3u_free_msg(t->rec);
	t->rec = rec;
	if (e == S3E_NoSuchKey) {
		s3_rq_no_such_key(rq, rq->bucket);
		return;
	}
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	if (rec->version_id[0] || s3_ver_bucket_versioned(rq))
		http_add_header(s3_call_stream(rq->c), "x-amz-version-id",
				rec->version_id[0] ? rec->version_id : "null");
	if (s3_call_req(rq->c)->op == S3_OP_GetObjectTagging) {
		struct s3_tagset ts;
		tagset_of_record(rec, &ts);
		send_tagset(rq, &ts);
		return;
	}
	otag_commit(t);
}

static void otag_read(struct tag_rq *t)
{
	bool bad;
	const char *vid = s3_ver_query(&t->rq, &bad);
	if (bad)
		s3_rq_fail(&t->rq, S3E_InvalidVersionId, NULL);
	else if (vid)
		s3_ver_read(&t->rq, vid, on_otag_head);   /* a version's tags (issue 17) */
	else
		s3_rq_head(&t->rq, t->rq.bucket, t->rq.key, on_otag_head);
}

static void on_otag_body(struct s3_rq *rq, enum s3_err verdict)
{
	struct tag_rq *t = tag_of(rq);
	if (verdict) {
		s3_rq_fail(rq, verdict, NULL);
		return;
	}
	/* Refuse a bad document before touching meta. */
	struct s3_tagset ts;
	char *arena = NULL;
	const char *msg;
	enum s3_err e = parse_tagging(&t->body, S3_TAGS_OBJECT_MAX, &ts, &arena, &msg);
	free(arena);
	if (e) {
		s3_rq_fail(rq, e, msg);
		return;
	}
	otag_read(t);
}

static void op_object_tagging(struct s3_call *c)
{
	struct tag_rq *t = tag_new(c);
	if (!t)
		return;
	if (s3_call_req(c)->op != S3_OP_PutObjectTagging) {
		otag_read(t);
		return;
	}
	enum s3_err e = s3_body_read(&t->rq, &t->body, S3_TAGGING_BODY_MAX, on_otag_body);
	if (e)
		s3_rq_fail(&t->rq, e, NULL);
}

/* ------------------------------------------------------------ bucket tagging */

static void on_btag_commit(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__OpResult *res)
{
	(void)res;
	if (!rq->c)
		return;
	if (e == S3E_OK)
		http_respond(s3_call_stream(rq->c), 204, NULL, 0, NULL, NULL);
	else
		s3_rq_fail(rq, e, NULL);
}

static void btag_commit(struct s3_rq *rq, const struct s3_tagset *ts)
{
	Iolake__Meta__SetBucketTags__TagsEntry ents[S3_TAGS_BUCKET_MAX], *p[S3_TAGS_BUCKET_MAX];
	Iolake__Meta__SetBucketTags st = IOLAKE__META__SET_BUCKET_TAGS__INIT;
	for (size_t i = 0; i < ts->n; i++) {
		iolake__meta__set_bucket_tags__tags_entry__init(&ents[i]);
		ents[i].key = (char *)ts->keys[i];
		ents[i].value = (char *)ts->values[i];
		p[i] = &ents[i];
	}
	st.name = rq->bucket;
	st.n_tags = ts->n;
	st.tags = p;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_PUT_BUCKET_TAGS;
	op.put_bucket_tags = &st;
	s3_rq_submit(rq, &op, S3_SUBJ_BUCKET, on_btag_commit);
}

static void on_btag_body(struct s3_rq *rq, enum s3_err verdict)
{
	struct tag_rq *t = tag_of(rq);
	if (verdict) {
		s3_rq_fail(rq, verdict, NULL);
		return;
	}
	struct s3_tagset ts;
	char *arena = NULL;
	const char *msg;
	enum s3_err e = parse_tagging(&t->body, S3_TAGS_BUCKET_MAX, &ts, &arena, &msg);
	if (e)
		s3_rq_fail(rq, e, msg);
	else
		btag_commit(rq, &ts); /* the op is copied: arena can go */
	free(arena);
}

static void on_btag_get(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__Bucket *b)
{
	if (!e && !b)
		e = S3E_NoSuchBucket;
	if (!e && b->n_tags == 0)
		e = S3E_NoSuchTagSet;
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	struct s3_tagset ts = { .n = 0 };
	for (size_t i = 0; i < b->n_tags && i < S3_TAGS_BUCKET_MAX; i++) {
		ts.keys[ts.n] = b->tags[i]->key;
		ts.values[ts.n++] = b->tags[i]->value;
	}
	send_tagset(rq, &ts);
}

static void op_bucket_tagging(struct s3_call *c)
{
	struct tag_rq *t = tag_new(c);
	if (!t)
		return;
	enum s3_op op = s3_call_req(c)->op;
	if (op == S3_OP_GetBucketTagging) {
		s3_rq_bucket(&t->rq, t->rq.bucket, on_btag_get);
	} else if (op == S3_OP_DeleteBucketTagging) {
		struct s3_tagset none = { .n = 0 };
		btag_commit(&t->rq, &none);
	} else {
		enum s3_err e = s3_body_read(&t->rq, &t->body, S3_TAGGING_BODY_MAX, on_btag_body);
		if (e)
			s3_rq_fail(&t->rq, e, NULL);
	}
}

const struct s3_handler s3_tagging_handlers[] = {
	{ S3_OP_PutObjectTagging, op_object_tagging, S3_ACT_PutObjectTagging },
	{ S3_OP_GetObjectTagging, op_object_tagging, S3_ACT_GetObjectTagging },
	{ S3_OP_DeleteObjectTagging, op_object_tagging, S3_ACT_DeleteObjectTagging },
	{ S3_OP_PutBucketTagging, op_bucket_tagging, S3_ACT_PutBucketTagging },
	{ S3_OP_GetBucketTagging, op_bucket_tagging, S3_ACT_GetBucketTagging },
	{ S3_OP_DeleteBucketTagging, op_bucket_tagging, S3_ACT_PutBucketTagging },
	S3_HANDLERS_END,
};
