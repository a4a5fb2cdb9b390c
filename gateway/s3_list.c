/*
 * s3_list.c — the listings of a bucket: ListObjects (v1 and v2) and
 * ListMultipartUploads. meta does the listing (prefix, delimiter and
 * common prefixes, markers, continuation tokens: meta/list.h); this module
 * checks the query, asks for one page and renders it, keys percent-encoded
 * with encoding-type=url.
 *
 * Owns no state beyond the request's base. Does not list a bucket's
 * buckets (ListBuckets, s3_bucket.c) nor an upload's parts (ListParts,
 * s3_multipart.c).
 *
 * Thread: the gateway loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gateway/s3_handlers.h"
#include "gateway/s3_list.h"
#include "gateway/s3_rq.h"
#include "gateway/s3_util.h"

#define LIST_MAX 1000

static bool url_keep(unsigned char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
	       ch == '-' || ch == '_' || ch == '.' || ch == '~' || ch == '/';
}

/* <name>v</name>, v percent-encoded when url (encoding-type=url). Also
 * ListObjectVersions' (s3_version.c, through s3_list.h). */
void s3_list_key_elem(struct xml_w *w, const char *name, const char *v, bool url)
{
	if (!url) {
		xml_elem(w, name, v);
		return;
	}
	size_t n = strlen(v);
	char *e = malloc(3 * n + 1), *p = e;
	if (!e) {
		xml_elem(w, name, "");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)v[i];
		if (url_keep(ch))
			*p++ = (char)ch;
		else
			p += sprintf(p, "%%%02X", ch);
	}
	*p = 0;
	xml_elem(w, name, e);
	free(e);
}

/* A listing's request, once encoding-type is absent or "url"; NULL after
 * answering. */
static struct s3_rq *list_rq(struct s3_call *c)
{
	const char *enc = s3u_qval(s3_call_req(c), "encoding-type");
	if (enc && strcmp(enc, "url") != 0) {
		s3_call_error(c, S3E_InvalidArgument, "Invalid Encoding Method specified in Request");
		return NULL;
	}
	return s3_rq_new(c, sizeof(struct s3_rq));
}

static bool want_url(const struct s3_req *q)
{
	const char *enc = s3u_qval(q, "encoding-type");
	return enc && strcmp(enc, "url") == 0;
}

/* ------------------------------------------------------------ ListObjects */

static void on_list_objects(struct s3_rq *rq, enum s3_err e, const ProtobufCMessage *resp)
{
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	const Iolake__Meta__ListObjectsResponse *r = (const void *)resp;
	const struct s3_req *q = s3_call_req(rq->c);
	bool v2 = q->op == S3_OP_ListObjectsV2;
	bool url = want_url(q);
	/* v1 lists each object's owner; v2 only when asked (fetch-owner=true). */
	const char *fo = v2 ? s3u_qval(q, "fetch-owner") : NULL;
	bool owners = !v2 || (fo && !strcasecmp(fo, "true"));
	const char *prefix = s3u_qval(q, "prefix"), *delim = s3u_qval(q, "delimiter");
	const char *mk = s3u_qval(q, "max-keys");
	unsigned max_keys = mk ? (unsigned)strtoul(mk, NULL, 10) : LIST_MAX;
	if (max_keys > LIST_MAX)
		max_keys = LIST_MAX;
	struct xml_w *w = s3_call_xml(rq->c);
	xml_decl(w);
	xml_open_ns(w, "ListBucketResult", S3_XMLNS);
	xml_elem(w, "Name", rq->bucket);
	s3_list_key_elem(w, "Prefix", prefix ? prefix : "", url);
	if (v2) {
		const char *sa = s3u_qval(q, "start-after"), *tok = s3u_qval(q, "continuation-token");
		if (sa)
			s3_list_key_elem(w, "StartAfter", sa, url);
		if (tok)
			xml_elem(w, "ContinuationToken", tok);
		xml_elem_u64(w, "KeyCount", r->n_entries);
	} else {
		const char *marker = s3u_qval(q, "marker");
		s3_list_key_elem(w, "Marker", marker ? marker : "", url);
		if (r->truncated && delim && *delim && r->n_entries)
			s3_list_key_elem(w, "NextMarker", r->entries[r->n_entries - 1]->name, url);
	}
	xml_elem_u64(w, "MaxKeys", max_keys);
	if (delim && *delim)
		s3_list_key_elem(w, "Delimiter", delim, url);
	if (url)
		xml_elem(w, "EncodingType", "url");
	xml_elem_bool(w, "IsTruncated", r->truncated);
	if (v2 && r->truncated && r->next_token && *r->next_token)
		xml_elem(w, "NextContinuationToken", r->next_token);
	for (size_t i = 0; i < r->n_entries; i++) {
		const Iolake__Meta__ListEntry *en = r->entries[i];
		if (en->is_prefix)
			continue;
		char d[40], etag[80];
		const Iolake__Meta__ObjectRecord *rec = en->record;
		s3u_iso_date(rec ? rec->mtime_ms : 0, d);
		snprintf(etag, sizeof(etag), "\"%s\"", rec && rec->etag ? rec->etag : "");
		xml_open(w, "Contents");
		s3_list_key_elem(w, "Key", en->name, url);
		xml_elem(w, "LastModified", d);
		xml_elem(w, "ETag", etag);
		xml_elem_u64(w, "Size", rec ? rec->size : 0);
		if (owners)
			s3u_owner_elems(w, "Owner", rec ? rec->owner : NULL);
		xml_elem(w, "StorageClass", "STANDARD");
		xml_close(w);
	}
	for (size_t i = 0; i < r->n_entries; i++) {
		if (!r->entries[i]->is_prefix)
			continue;
		xml_open(w, "CommonPrefixes");
		s3_list_key_elem(w, "Prefix", r->entries[i]->name, url);
		xml_close(w);
	}
	xml_close(w);
	s3_call_send_xml(rq->c, 200);
}

static void op_list_objects(struct s3_call *c)
{
	const struct s3_req *q = s3_call_req(c);
	const char *mk = s3u_qval(q, "max-keys");
	if (mk) {
		char *end;
		long v = strtol(mk, &end, 10);
		if (!*mk || *end || v < 0) {
			s3_call_error(c, S3E_InvalidArgument, "Provided max-keys not an integer or within integer range");
			return;
		}
	}
	struct s3_rq *rq = list_rq(c);
	if (!rq)
		return;
	bool v2 = q->op == S3_OP_ListObjectsV2;
	Iolake__Meta__ListObjectsRequest req = IOLAKE__META__LIST_OBJECTS_REQUEST__INIT;
	req.bucket = rq->bucket;
	req.prefix = (char *)(s3u_qval(q, "prefix") ? s3u_qval(q, "prefix") : "");
	req.delimiter = (char *)(s3u_qval(q, "delimiter") ? s3u_qval(q, "delimiter") : "");
	const char *sa = v2 ? s3u_qval(q, "start-after") : s3u_qval(q, "marker");
	const char *tok = v2 ? s3u_qval(q, "continuation-token") : NULL;
	req.start_after = (char *)(sa ? sa : "");
	req.token = (char *)(tok ? tok : "");
	unsigned long m = mk ? strtoul(mk, NULL, 10) : LIST_MAX;
	req.max_keys = m > LIST_MAX ? LIST_MAX : (uint32_t)m;
	req.want_records = true;
	s3_rq_call(rq, META_M_LIST_OBJECTS, &req.base, S3_SUBJ_LISTING, on_list_objects);
}

/* ------------------------------------------------------------ ListMultipartUploads */

static void on_list_uploads(struct s3_rq *rq, enum s3_err e, const ProtobufCMessage *resp)
{
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	const Iolake__Meta__ListUploadsResponse *r = (const void *)resp;
	const struct s3_req *q = s3_call_req(rq->c);
	const char *prefix = s3u_qval(q, "prefix"), *km = s3u_qval(q, "key-marker");
	const char *um = s3u_qval(q, "upload-id-marker");
	const char *delim = s3u_qval(q, "delimiter");
	bool url = want_url(q);
	long max = s3u_qnum(q, "max-uploads", LIST_MAX);
	/* max-uploads=0: meta was asked for one entry, to tell whether the
	 * empty page is truncated (as S3 answers it). */
	bool none = max == 0;
	bool truncated = none ? r->n_uploads + r->n_common_prefixes > 0 : r->truncated;
	struct xml_w *w = s3_call_xml(rq->c);
	xml_decl(w);
	xml_open_ns(w, "ListMultipartUploadsResult", S3_XMLNS);
	xml_elem(w, "Bucket", rq->bucket);
	s3_list_key_elem(w, "KeyMarker", km ? km : "", url);
	xml_elem(w, "UploadIdMarker", um ? um : "");
	if (r->truncated && !none) {
		/* A page ending on a common prefix names it, with no upload id:
		 * the next page starts after every key under it. (An older meta
		 * leaves next_key_marker empty: the last upload.) */
		const char *nk = r->next_key_marker, *nu = r->next_upload_id_marker;
		if ((!nk || !*nk) && r->n_uploads) {
			nk = r->uploads[r->n_uploads - 1]->key;
			nu = r->uploads[r->n_uploads - 1]->upload_id;
		}
		if (nk && *nk)
			s3_list_key_elem(w, "NextKeyMarker", nk, url);
		if (nu && *nu)
			xml_elem(w, "NextUploadIdMarker", nu);
	}
	if (prefix)
		s3_list_key_elem(w, "Prefix", prefix, url);
	if (delim && *delim)
		s3_list_key_elem(w, "Delimiter", delim, url);
	xml_elem_u64(w, "MaxUploads", (uint64_t)(max > LIST_MAX ? LIST_MAX : max));
	if (url)
		xml_elem(w, "EncodingType", "url");
	xml_elem_bool(w, "IsTruncated", truncated);
	for (size_t i = 0; i < (none ? 0 : r->n_uploads); i++) {
		const Iolake__Meta__MultipartUpload *u = r->uploads[i];
		char d[40];
		s3u_iso_date(u->initiated_ms, d);
		xml_open(w, "Upload");
		s3_list_key_elem(w, "Key", u->key, url);
		xml_elem(w, "UploadId", u->upload_id);
		s3u_owner_elems(w, "Initiator", u->owner);
		s3u_owner_elems(w, "Owner", u->owner);
		xml_elem(w, "StorageClass", "STANDARD");
		xml_elem(w, "Initiated", d);
		xml_close(w);
	}
	for (size_t i = 0; i < (none ? 0 : r->n_common_prefixes); i++) {
		xml_open(w, "CommonPrefixes");
		s3_list_key_elem(w, "Prefix", r->common_prefixes[i], url);
		xml_close(w);
	}
	xml_close(w);
	s3_call_send_xml(rq->c, 200);
}

static void op_list_uploads(struct s3_call *c)
{
	const struct s3_req *q = s3_call_req(c);
	long max = s3u_qnum(q, "max-uploads", LIST_MAX);
	if (max < 0) {
		s3_call_error(c, S3E_InvalidArgument, "max-uploads must be a non-negative integer");
		return;
	}
	struct s3_rq *rq = list_rq(c);
	if (!rq)
		return;
	const char *prefix = s3u_qval(q, "prefix"), *km = s3u_qval(q, "key-marker");
	const char *um = s3u_qval(q, "upload-id-marker"), *delim = s3u_qval(q, "delimiter");
	Iolake__Meta__ListUploadsRequest req = IOLAKE__META__LIST_UPLOADS_REQUEST__INIT;
	req.bucket = rq->bucket;
	req.prefix = (char *)(prefix ? prefix : "");
	req.key_marker = (char *)(km ? km : "");
	req.upload_id_marker = (char *)(um && km ? um : "");
	req.delimiter = (char *)(delim ? delim : "");
	req.max_uploads = max == 0 ? 1 : max > LIST_MAX ? LIST_MAX : (uint32_t)max;
	s3_rq_call(rq, META_M_LIST_UPLOADS, &req.base, S3_SUBJ_UPLOADS, on_list_uploads);
}

const struct s3_handler s3_list_handlers[] = {
	{ S3_OP_ListObjects, op_list_objects, S3_ACT_ListBucket },
	{ S3_OP_ListObjectsV2, op_list_objects, S3_ACT_ListBucket },
	{ S3_OP_ListMultipartUploads, op_list_uploads, S3_ACT_ListBucketMultipartUploads },
	S3_HANDLERS_END,
};
