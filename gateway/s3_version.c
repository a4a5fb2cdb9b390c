/*
 * s3_version.c — bucket versioning in the gateway (issue 17; contracts in
 * s3_version.h): PutBucketVersioning / GetBucketVersioning, the state
 * stamped on object writes and deletes, the version headers, and
 * ListObjectVersions.
 *
 * ListObjectVersions walks the bucket's key ranges in order: each call
 * (ListVersions, routed by its `key` like HeadObject) answers the part of
 * the page its range holds and the range's end; while the page is not
 * full and the range was exhausted, the next call starts at that end.
 * A common prefix spanning two ranges is listed once (the second range's
 * repeat of the last prefix is dropped). O(page) per request.
 *
 * Does not decide what a version delete or overwrite frees: meta's apply
 * does (meta/state_ver.c), and says so in OpResult.retained.
 *
 * Thread: the gateway loop.
 */
#include "gateway/s3_version.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/http.h"
#include "gateway/s3_body.h"
#include "gateway/s3_handlers.h"
#include "gateway/s3_list.h"
#include "gateway/s3_util.h"
#include "gateway/xml.h"
#include "gateway/xml_parse.h"

#define ENABLED IOLAKE__META__VERSIONING_STATE__VERSIONING_ENABLED
#define SUSPENDED IOLAKE__META__VERSIONING_STATE__VERSIONING_SUSPENDED
#define VER_BODY_MAX 1024
#define LIST_MAX 1000
#define LIST_CALLS_MAX 64        /* ranges one page may visit */

bool s3_ver_bucket_versioned(const struct s3_rq *rq)
{
	const Iolake__Meta__Bucket *b = s3_rq_gate_bucket(rq);
	return b && b->versioning != IOLAKE__META__VERSIONING_STATE__VERSIONING_UNSET;
}

const char *s3_ver_query(const struct s3_rq *rq, bool *bad)
{
	*bad = false;
	const char *v = rq->c ? s3u_qval(s3_call_req(rq->c), "versionId") : NULL;
	if (!v)
		return NULL;
	if (!strcmp(v, "null"))
		return v;
	bool ok = strlen(v) == 16;
	for (size_t i = 0; ok && i < 16; i++)
		ok = (v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'f');
	*bad = !ok;
	return v;
}

static void add_vid(struct s3_rq *rq, const char *vid)
{
	http_add_header(s3_call_stream(rq->c), "x-amz-version-id", vid && vid[0] ? vid : "null");
}

void s3_ver_headers(struct s3_rq *rq)
{
	if (!rq->c || !s3_ver_bucket_versioned(rq))
		return;
	add_vid(rq, rq->ver_id);
	if (rq->ver_marker)
		http_add_header(s3_call_stream(rq->c), "x-amz-delete-marker", "true");
}

void s3_ver_record_headers(struct s3_rq *rq, const Iolake__Meta__ObjectRecord *rec)
{
	if (!rq->c || !rec)
		return;
	if (rec->version_id[0] || s3_ver_bucket_versioned(rq))
		add_vid(rq, rec->version_id);
	if (rec->is_delete_marker)
		http_add_header(s3_call_stream(rq->c), "x-amz-delete-marker", "true");
}

enum s3_err s3_ver_answer_err(enum s3_err e, const Iolake__Meta__GetVersionResponse *r)
{
	if (e == S3E_OK && r->status != IOLAKE__META__STATUS__STATUS_OK)
		e = r->status == IOLAKE__META__STATUS__STATUS_NOT_FOUND ? S3E_NoSuchVersion
									 : S3E_InvalidVersionId;
	if (e == S3E_NoSuchKey || (e == S3E_OK && !r->record))
		e = S3E_NoSuchVersion;
	return e;
}

static void on_ver_read(struct s3_rq *rq, enum s3_err e, const ProtobufCMessage *resp)
{
	const Iolake__Meta__GetVersionResponse *r = (const void *)resp;
	Iolake__Meta__ObjectRecord *rec = NULL;
	e = s3_ver_answer_err(e, r);
	if (e == S3E_OK && r->record->is_delete_marker) {
		if (rq->c) {
			http_add_header(s3_call_stream(rq->c), "x-amz-delete-marker", "true");
			add_vid(rq, r->record->version_id);
		}
		e = S3E_MethodNotAllowed;
	}
	if (e == S3E_OK && !(rec = (Iolake__Meta__ObjectRecord *)s3u_copy_msg(&r->record->base)))
		e = S3E_InternalError;
	rq->ver_cb(rq, e, rec);
}

int s3_ver_read(struct s3_rq *rq, const char *vid, s3_rq_head_cb cb)
{
	rq->ver_cb = cb;
	Iolake__Meta__GetVersionRequest req = IOLAKE__META__GET_VERSION_REQUEST__INIT;
	req.bucket = rq->bucket;
	req.key = rq->key;
	req.version_id = (char *)vid;
	return s3_rq_call(rq, META_M_GET_VERSION, &req.base, S3_SUBJ_OBJECT_READ, on_ver_read);
}

/* ------------------------------------------------------------ Put/GetBucketVersioning */

struct ver_rq {
	struct s3_rq rq;
	struct s3_body body;
	/* ListObjectVersions: the pages of the ranges visited */
	ProtobufCMessage *pages[LIST_CALLS_MAX];
	size_t n_pages;
	unsigned max, got;
	char *next_key;               /* where the next range starts */
};

static struct ver_rq *ver_of(struct s3_rq *rq)
{
	return container_of(rq, struct ver_rq, rq);
}

static void ver_fini(struct s3_rq *rq)
{
	struct ver_rq *v = ver_of(rq);
	s3_body_free(&v->body);
	for (size_t i = 0; i < v->n_pages; i++)
		s3u_free_msg(v->pages[i]);
	free(v->next_key);
}

static struct ver_rq *ver_new(struct s3_call *c)
{
	struct ver_rq *v = s3_rq_new(c, sizeof(*v));
	if (v)
		v->rq.fini = ver_fini;
	return v;
}

static void on_set_done(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__OpResult *res)
{
	(void)res;
	if (!rq->c)
		return;
	if (e)
		s3_rq_fail(rq, e, NULL);
	else
		http_respond(s3_call_stream(rq->c), 200, NULL, 0, NULL, NULL);
}

static void on_ver_body(struct s3_rq *rq, enum s3_err verdict)
{
	struct ver_rq *v = ver_of(rq);
	if (verdict) {
		s3_rq_fail(rq, verdict, NULL);
		return;
	}
	char st[16], mfa[16];
	if (xmlp_versioning((const char *)v->body.buf, v->body.len, VER_BODY_MAX, st, mfa,
			    sizeof(st))) {
		s3_rq_fail(rq, S3E_MalformedXML, NULL);
		return;
	}
	if (!strcmp(mfa, "Enabled")) {
		s3_rq_fail(rq, S3E_NotImplemented, "MFA delete is not supported");
		return;
	}
	if (mfa[0] && strcmp(mfa, "Disabled")) {
		s3_rq_fail(rq, S3E_MalformedXML, NULL);
		return;
	}
	Iolake__Meta__SetBucketVersioning sv = IOLAKE__META__SET_BUCKET_VERSIONING__INIT;
	sv.name = rq->bucket;
	if (!strcmp(st, "Enabled")) {
		sv.state = ENABLED;
	} else if (!strcmp(st, "Suspended")) {
		sv.state = SUSPENDED;
		const Iolake__Meta__Bucket *b = s3_rq_gate_bucket(rq);
		if (b && b->object_lock && b->object_lock->enabled) {
			/* object lock keeps versioning on (meta refuses it too) */
			s3_rq_fail(rq, S3E_InvalidBucketState,
				   "An Object Lock configuration is present on this bucket, so the "
				   "versioning state cannot be changed.");
			return;
		}
	} else if (!st[0] && !mfa[0]) {
		on_set_done(rq, S3E_OK, NULL);   /* nothing asked: nothing changes */
		return;
	} else {
		s3_rq_fail(rq, S3E_MalformedXML, NULL);
		return;
	}
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_SET_BUCKET_VERSIONING;
	op.set_bucket_versioning = &sv;
	/* INVALID from meta: a lock bucket (InvalidBucketState) */
	s3_rq_submit(rq, &op, S3_SUBJ_BUCKET_LOCK, on_set_done);
}

static void on_get_bucket(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__Bucket *b)
{
	if (!e && !b)
		e = S3E_NoSuchBucket;
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	struct xml_w *w = s3_call_xml(rq->c);
	xml_decl(w);
	xml_open_ns(w, "VersioningConfiguration", S3_XMLNS);
	if (b->versioning == ENABLED)
		xml_elem(w, "Status", "Enabled");
	else if (b->versioning == SUSPENDED)
		xml_elem(w, "Status", "Suspended");
	xml_close(w);
	s3_call_send_xml(rq->c, 200);
}

static void op_versioning(struct s3_call *c)
{
	struct ver_rq *v = ver_new(c);
	if (!v)
		return;
	if (s3_call_req(c)->op == S3_OP_GetBucketVersioning) {
		s3_rq_bucket(&v->rq, v->rq.bucket, on_get_bucket);
		return;
	}
	enum s3_err e = s3_body_read(&v->rq, &v->body, VER_BODY_MAX, on_ver_body);
	if (e)
		s3_rq_fail(&v->rq, e, NULL);
}

/* ------------------------------------------------------------ ListObjectVersions */

static void list_call(struct ver_rq *v);

static void vid_elem(struct xml_w *w, const char *name, const char *vid)
{
	xml_elem(w, name, vid && vid[0] ? vid : "null");
}

static void list_render(struct ver_rq *v)
{
	struct s3_rq *rq = &v->rq;
	const struct s3_req *q = s3_call_req(rq->c);
	const char *prefix = s3u_qval(q, "prefix"), *delim = s3u_qval(q, "delimiter");
	const char *km = s3u_qval(q, "key-marker"), *vm = s3u_qval(q, "version-id-marker");
	const char *enc = s3u_qval(q, "encoding-type");
	bool url = enc && !strcmp(enc, "url");
	struct xml_w *w = s3_call_xml(rq->c);
	xml_decl(w);
	xml_open_ns(w, "ListVersionsResult", S3_XMLNS);
	xml_elem(w, "Name", rq->bucket);
	s3_list_key_elem(w, "Prefix", prefix ? prefix : "", url);
	s3_list_key_elem(w, "KeyMarker", km ? km : "", url);
	xml_elem(w, "VersionIdMarker", vm ? vm : "");
	const Iolake__Meta__VersionEntry *last = NULL;
	bool truncated = false;
	for (size_t p = 0; p < v->n_pages; p++) {
		const Iolake__Meta__ListVersionsResponse *pg = (const void *)v->pages[p];
		if (pg->n_entries)
			last = pg->entries[pg->n_entries - 1];
		if (p == v->n_pages - 1)
			truncated = pg->truncated || (v->got >= v->max && v->next_key);
	}
	if (truncated && last) {
		if (last->record) {
			s3_list_key_elem(w, "NextKeyMarker", last->record->key, url);
			vid_elem(w, "NextVersionIdMarker", last->record->version_id);
		} else {
			s3_list_key_elem(w, "NextKeyMarker", last->prefix, url);
		}
	}
	xml_elem_u64(w, "MaxKeys", v->max);
	if (delim)
		s3_list_key_elem(w, "Delimiter", delim, url);
	if (url)
		xml_elem(w, "EncodingType", "url");
	xml_elem_bool(w, "IsTruncated", truncated && last);
	for (size_t p = 0; p < v->n_pages; p++) {
		const Iolake__Meta__ListVersionsResponse *pg = (const void *)v->pages[p];
		for (size_t i = 0; i < pg->n_entries; i++) {
			const Iolake__Meta__VersionEntry *en = pg->entries[i];
			const Iolake__Meta__ObjectRecord *r = en->record;
			if (!r)
				continue;
			char d[40], etag[80];
			s3u_iso_date(r->mtime_ms, d);
			xml_open(w, r->is_delete_marker ? "DeleteMarker" : "Version");
			s3_list_key_elem(w, "Key", r->key, url);
			vid_elem(w, "VersionId", r->version_id);
			xml_elem_bool(w, "IsLatest", en->is_latest);
			xml_elem(w, "LastModified", d);
			if (!r->is_delete_marker) {
				snprintf(etag, sizeof(etag), "\"%s\"", r->etag ? r->etag : "");
				xml_elem(w, "ETag", etag);
				xml_elem_u64(w, "Size", r->size);
				xml_elem(w, "StorageClass", "STANDARD");
			}
			s3u_owner_elems(w, "Owner", r->owner);
			xml_close(w);
		}
	}
	for (size_t p = 0; p < v->n_pages; p++) {
		const Iolake__Meta__ListVersionsResponse *pg = (const void *)v->pages[p];
		for (size_t i = 0; i < pg->n_entries; i++) {
			if (pg->entries[i]->record)
				continue;
			xml_open(w, "CommonPrefixes");
			s3_list_key_elem(w, "Prefix", pg->entries[i]->prefix, url);
			xml_close(w);
		}
	}
	xml_close(w);
	s3_call_send_xml(rq->c, 200);
}

/* The last common prefix listed so far ("" when the page's last entry
 * is not one). */
static const char *last_prefix(const struct ver_rq *v)
{
	for (size_t p = v->n_pages; p-- > 0;) {
		const Iolake__Meta__ListVersionsResponse *pg = (const void *)v->pages[p];
		if (pg->n_entries)
			return pg->entries[pg->n_entries - 1]->record ? ""
								       : pg->entries[pg->n_entries - 1]->prefix;
	}
	return "";
}

static void on_list_page(struct s3_rq *rq, enum s3_err e, const ProtobufCMessage *resp)
{
	struct ver_rq *v = ver_of(rq);
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	Iolake__Meta__ListVersionsResponse *pg =
		(Iolake__Meta__ListVersionsResponse *)s3u_copy_msg(resp);
	if (!pg) {
		s3_rq_fail(rq, S3E_InternalError, NULL);
		return;
	}
	/* A common prefix that spans two ranges: listed once. */
	const char *lp = last_prefix(v);
	if (lp[0] && pg->n_entries && !pg->entries[0]->record &&
	    !strcmp(pg->entries[0]->prefix, lp)) {
		protobuf_c_message_free_unpacked(&pg->entries[0]->base, NULL);
		memmove(pg->entries, pg->entries + 1, (pg->n_entries - 1) * sizeof(*pg->entries));
		pg->n_entries--;
	}
	v->pages[v->n_pages++] = &pg->base;
	v->got += (unsigned)pg->n_entries;
	free(v->next_key);
	v->next_key = NULL;
	const char *prefix = s3u_qval(s3_call_req(rq->c), "prefix");
	size_t pl = prefix ? strlen(prefix) : 0;
	bool more = !pg->truncated && pg->range_end[0] &&
		    (!pl || strncmp(pg->range_end, prefix, pl) <= 0);
	if (more && !(v->next_key = strdup(pg->range_end))) {
		s3_rq_fail(rq, S3E_InternalError, NULL);
		return;
	}
	if (!more || v->got >= v->max || v->n_pages == LIST_CALLS_MAX) {
		list_render(v);
		return;
	}
	list_call(v);
}

static void list_call(struct ver_rq *v)
{
	struct s3_rq *rq = &v->rq;
	const struct s3_req *q = s3_call_req(rq->c);
	const char *prefix = s3u_qval(q, "prefix"), *delim = s3u_qval(q, "delimiter");
	const char *km = s3u_qval(q, "key-marker"), *vm = s3u_qval(q, "version-id-marker");
	Iolake__Meta__ListVersionsRequest req = IOLAKE__META__LIST_VERSIONS_REQUEST__INIT;
	req.bucket = rq->bucket;
	req.prefix = (char *)(prefix ? prefix : "");
	req.delimiter = (char *)(delim ? delim : "");
	req.max_keys = v->max - v->got;
	if (v->next_key) {
		/* the next range: from its start, after the last entry listed */
		req.key = v->next_key;
		const Iolake__Meta__ListVersionsResponse *pg = NULL;
		for (size_t p = v->n_pages; p-- > 0 && !pg;)
			if (((const Iolake__Meta__ListVersionsResponse *)v->pages[p])->n_entries)
				pg = (const void *)v->pages[p];
		if (pg) {
			const Iolake__Meta__VersionEntry *l = pg->entries[pg->n_entries - 1];
			req.key_marker = l->record ? l->record->key : l->prefix;
			req.version_id_marker = "";
			if (l->record)
				req.version_id_marker = l->record->version_id[0] ? l->record->version_id
										: (char *)"null";
		} else {
			req.key_marker = (char *)(km ? km : "");
			req.version_id_marker = (char *)(vm ? vm : "");
		}
	} else {
		req.key_marker = (char *)(km ? km : "");
		req.version_id_marker = (char *)(km && vm ? vm : "");
		const char *from = km && (!prefix || strcmp(km, prefix) > 0) ? km : prefix;
		req.key = (char *)(from ? from : "");
	}
	s3_rq_call(rq, META_M_LIST_VERSIONS, &req.base, S3_SUBJ_LISTING, on_list_page);
}

static void op_list_versions(struct s3_call *c)
{
	const struct s3_req *q = s3_call_req(c);
	const char *enc = s3u_qval(q, "encoding-type");
	if (enc && strcmp(enc, "url")) {
		s3_call_error(c, S3E_InvalidArgument, "Invalid Encoding Method specified in Request");
		return;
	}
	long mk = s3u_qnum(q, "max-keys", LIST_MAX);
	if (mk < 0) {
		s3_call_error(c, S3E_InvalidArgument, "max-keys must be a non-negative integer");
		return;
	}
	const char *km = s3u_qval(q, "key-marker"), *vm = s3u_qval(q, "version-id-marker");
	if (vm && (!km || !km[0])) {
		s3_call_error(c, S3E_InvalidArgument,
			      "A version-id marker cannot be specified without a key marker.");
		return;
	}
	struct ver_rq *v = ver_new(c);
	if (!v)
		return;
	v->max = mk > LIST_MAX ? LIST_MAX : (unsigned)mk;
	if (v->max == 0) {
		list_render(v);
		return;
	}
	list_call(v);
}

const struct s3_handler s3_version_handlers[] = {
	{ S3_OP_PutBucketVersioning, op_versioning, S3_ACT_PutBucketVersioning },
	{ S3_OP_GetBucketVersioning, op_versioning, S3_ACT_GetBucketVersioning },
	{ S3_OP_ListObjectVersions, op_list_versions, S3_ACT_ListBucketVersions },
	S3_HANDLERS_END,
};
