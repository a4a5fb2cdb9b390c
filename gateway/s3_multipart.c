/*
 * s3_multipart.c — the multipart upload's life around its parts:
 * CreateMultipartUpload, CompleteMultipartUpload, AbortMultipartUpload and
 * ListParts. Records in meta (meta.proto MultipartUpload, Part); each
 * non-empty part was one gw_data PUT of its own (s3_part.c) whose encoded
 * layout travels in Part.segment.data_layout and, after Complete, in the
 * object record's Segment.data_layout (one segment per non-empty part).
 *
 * Space: the shards of a part are freed by whoever commits the meta change
 * that stops naming it, after that commit (as s3_put.c does for object
 * versions): Complete for the listed parts it left out (and the object
 * version it replaced), Abort for every listed part. Complete and Abort
 * list the parts first and commit on the condition that no PutPart was
 * applied since (the upload's parts_generation): a part uploaded in
 * between makes them list again, so every part they drop is one they saw.
 *
 * Does not upload parts (s3_part.c) nor list a bucket's uploads
 * (ListMultipartUploads, s3_list.c).
 *
 * Thread: the gateway loop; no blocking call.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/gw_map.h"
#include "gateway/gw_rec.h"
#include "gateway/s3_access.h"
#include "gateway/s3_handlers.h"
#include "gateway/s3_put.h"
#include "gateway/s3_rq.h"
#include "gateway/s3_util.h"
#include "gateway/s3_version.h"
#include "gateway/xml_parse.h"

#define MPU_MIN_PART (5ull << 20)         /* every part but the last */
#define MPU_MAX_PARTS 10000
#define MPU_XML_MAX (MPU_MAX_PARTS * 200) /* CompleteMultipartUpload body */
#define LIST_MAX 1000

/* An ETag as sent ("…" or …) into out (33 bytes), lower-case; false when
 * it is not an MD5 hex. */
static bool etag_norm(const char *in, char out[33])
{
	size_t n = strlen(in);
	if (n >= 2 && in[0] == '"' && in[n - 1] == '"')
		in++, n -= 2;
	if (n != 32)
		return false;
	for (size_t i = 0; i < 32; i++) {
		char ch = in[i];
		if (ch >= 'A' && ch <= 'F')
			ch = (char)(ch + 32);
		if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
			return false;
		out[i] = ch;
	}
	out[32] = 0;
	return true;
}

static void drop_part(struct s3_ops *o, const Iolake__Meta__Part *p)
{
	if (p && p->segment)
		gw_rec_drop_encoded(o->map, o->data, p->segment->data_layout.data,
				    p->segment->data_layout.len);
}

/* The request of an operation on an existing upload (size bytes); NULL
 * after answering (NoSuchUpload: not one of our ids; no memory). */
static void *new_upload_rq(struct s3_call *c, size_t size)
{
	if (!s3u_upload_id_ok(s3_call_req(c))) {
		s3_call_error(c, S3E_NoSuchUpload, NULL);
		return NULL;
	}
	return s3_rq_new(c, size);
}

/* ------------------------------------------------------------ CreateMultipartUpload */

static void on_create(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__OpResult *res)
{
	if (!rq->c)
		return;
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	struct xml_w *w = s3_call_xml(rq->c);
	xml_decl(w);
	xml_open_ns(w, "InitiateMultipartUploadResult", S3_XMLNS);
	xml_elem(w, "Bucket", rq->bucket);
	xml_elem(w, "Key", rq->key);
	xml_elem(w, "UploadId", res->upload_id);
	xml_close(w);
	s3_call_send_xml(rq->c, 200);
}

static void op_create(struct s3_call *c)
{
	struct s3_rq *rq = s3_rq_new(c, sizeof(*rq));
	if (!rq)
		return;
	struct s3_put_hdrs hb;
	Iolake__Meta__ObjectRecord meta = IOLAKE__META__OBJECT_RECORD__INIT;
	if (s3_put_rec_from_headers(c, &meta, &hb)) {
		s3_rq_fail(rq, S3E_InternalError, NULL);
		return;
	}
	uint32_t pg = 0;
	if (gw_map_object_pg(rq->o->map, rq->bucket, rq->key, &pg) == 0)
		meta.pg = pg;
	/* The object's owner and ACL, taken by Complete from the upload. */
	struct s3_obj_access *acc = malloc(sizeof(*acc));
	enum s3_err ae = acc ? s3_access_for_object(rq, acc) : S3E_InternalError;
	if (ae) {
		free(acc);
		s3_put_user_meta_free(&hb.um);
		s3_rq_fail(rq, ae, NULL);
		return;
	}
	s3_access_to_record(acc, &meta);
	Iolake__Meta__MultipartUpload u = IOLAKE__META__MULTIPART_UPLOAD__INIT;
	u.bucket = rq->bucket;
	u.key = rq->key;
	u.upload_id = "";
	u.initiated_ms = s3u_wall_ms();
	u.owner = (char *)s3_rq_owner(rq);   /* the initiator */
	u.meta = &meta;
	Iolake__Meta__CreateMultipart cm = IOLAKE__META__CREATE_MULTIPART__INIT;
	cm.upload = &u;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_CREATE_MULTIPART;
	op.create_multipart = &cm;
	s3_rq_submit(rq, &op, S3_SUBJ_OBJECT, on_create);
	free(acc);
	s3_put_user_meta_free(&hb.um);
}

/* ------------------------------------------------------------ Complete and Abort */

struct cm_rq {
	struct s3_rq rq;
	char upload_id[17];
	char *body;                       /* CompleteMultipartUpload's document */
	size_t len, cap;
	bool too_big;
	struct xmlp_part *parts;          /* as requested, ETags normalised */
	size_t n;
	Iolake__Meta__ListPartsResponse *listed;  /* the upload's parts before the commit */
	Iolake__Meta__ObjectRecord *cur;  /* the record the object replaces */
};

static struct cm_rq *cm_of(struct s3_rq *rq)
{
	return container_of(rq, struct cm_rq, rq);
}

static void cm_fini(struct s3_rq *rq)
{
	struct cm_rq *m = cm_of(rq);
	free(m->body);
	free(m->parts);
	s3u_free_msg(m->listed);
	s3u_free_msg(m->cur);
}

/* The request of a Complete or an Abort; NULL after answering. */
static struct cm_rq *new_cm_rq(struct s3_call *c)
{
	struct cm_rq *m = new_upload_rq(c, sizeof(*m));
	if (!m)
		return NULL;
	m->rq.fini = cm_fini;
	memcpy(m->upload_id, s3_call_req(c)->upload_id, 16);
	return m;
}

/* Every part of the upload: Complete validates the request against them,
 * and both know which parts their commit drops. */
static void list_parts(struct cm_rq *m, s3_rq_read_cb cb)
{
	Iolake__Meta__ListPartsRequest req = IOLAKE__META__LIST_PARTS_REQUEST__INIT;
	req.bucket = m->rq.bucket;
	req.key = m->rq.key;
	req.upload_id = m->upload_id;
	req.max_parts = MPU_MAX_PARTS;
	s3_rq_call(&m->rq, META_M_LIST_PARTS, &req.base, S3_SUBJ_UPLOAD_READ, cb);
}

/* Keep a ListParts answer in m->listed; false after answering. */
static bool take_listing(struct cm_rq *m, enum s3_err e, const ProtobufCMessage *resp)
{
	if (e) {
		s3_rq_fail(&m->rq, e, NULL);
		return false;
	}
	s3u_free_msg(m->listed);
	if (!(m->listed = (Iolake__Meta__ListPartsResponse *)s3u_copy_msg(resp))) {
		s3_rq_fail(&m->rq, S3E_InternalError, NULL);
		return false;
	}
	return true;
}

/* The listed upload's parts_generation: the commit's condition. */
static uint64_t listed_parts_gen(const struct cm_rq *m)
{
	return m->listed && m->listed->upload ? m->listed->upload->parts_generation : 0;
}

static void on_complete_listed(struct s3_rq *rq, enum s3_err e, const ProtobufCMessage *resp);

static void complete_respond(struct cm_rq *m, const char *etag)
{
	struct s3_call *c = m->rq.c;
	const struct http_request *hr = s3_call_http(c);
	char q[64];
	snprintf(q, sizeof(q), "\"%s\"", etag);
	size_t loc_n = 16 + hr->host_len + strlen(m->rq.bucket) + strlen(m->rq.key);
	char *loc = malloc(loc_n);
	if (loc)
		snprintf(loc, loc_n, "http://%.*s/%s/%s", (int)hr->host_len, hr->host ? hr->host : "",
			 m->rq.bucket, m->rq.key);
	s3_ver_headers(&m->rq);
	struct xml_w *w = s3_call_xml(c);
	xml_decl(w);
	xml_open_ns(w, "CompleteMultipartUploadResult", S3_XMLNS);
	xml_elem(w, "Location", loc ? loc : "");
	xml_elem(w, "Bucket", m->rq.bucket);
	xml_elem(w, "Key", m->rq.key);
	xml_elem(w, "ETag", q);
	xml_close(w);
	free(loc);
	s3_call_send_xml(c, 200);
}

/* After the commit: the listed parts the object does not name. */
static void complete_drop_unused(struct cm_rq *m)
{
	const Iolake__Meta__ListPartsResponse *l = m->listed;
	size_t j = 0;
	for (size_t i = 0; l && i < l->n_parts; i++) {
		uint32_t pn = l->parts[i]->part_number;
		while (j < m->n && m->parts[j].part_number < pn)
			j++;
		if (!(j < m->n && m->parts[j].part_number == pn))
			drop_part(m->rq.o, l->parts[i]);
	}
}

static void on_complete_commit(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__OpResult *res)
{
	struct cm_rq *m = cm_of(rq);
	if (e == S3E_OK) {
		if (!res->retained)   /* versioning keeps the replaced version */
			gw_rec_drop_shards(rq->o->map, rq->o->data, m->cur);
		complete_drop_unused(m);
		if (rq->c)
			complete_respond(m, res->etag);
		return;
	}
	if (!rq->c)
		return;
	if (s3_rq_conflict(res) && ++rq->tries < S3_COMMIT_TRIES)
		list_parts(m, on_complete_listed);   /* a part or the object changed: again */
	else
		s3_rq_fail(rq, e, NULL);
}

static void complete_submit(struct cm_rq *m)
{
	Iolake__Meta__PartRef *refs = calloc(m->n, sizeof(*refs));
	Iolake__Meta__PartRef **prefs = calloc(m->n, sizeof(*prefs));
	if (!refs || !prefs) {
		free(refs), free(prefs);
		s3_rq_fail(&m->rq, S3E_InternalError, NULL);
		return;
	}
	for (size_t i = 0; i < m->n; i++) {
		iolake__meta__part_ref__init(&refs[i]);
		refs[i].part_number = m->parts[i].part_number;
		refs[i].etag = m->parts[i].etag;
		prefs[i] = &refs[i];
	}
	Iolake__Meta__CompleteMultipart cm = IOLAKE__META__COMPLETE_MULTIPART__INIT;
	cm.bucket = m->rq.bucket;
	cm.key = m->rq.key;
	cm.upload_id = m->upload_id;
	cm.parts = prefs;
	cm.n_parts = m->n;
	cm.time_ms = s3u_wall_ms();
	cm.parts_conditional = true;
	cm.if_parts_generation = listed_parts_gen(m);
	if (m->cur)
		cm.if_generation = m->cur->generation;
	else
		cm.if_none_match = true;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_COMPLETE_MULTIPART;
	op.complete_multipart = &cm;
	s3_rq_submit(&m->rq, &op, S3_SUBJ_COMPLETE, on_complete_commit);
	free(refs);
	free(prefs);
}

/* The record the object replaces (its shards become ours to free). */
static void on_complete_cur(struct s3_rq *rq, enum s3_err e, Iolake__Meta__ObjectRecord *rec)
{
	struct cm_rq *m = cm_of(rq);
	if (e && e != S3E_NoSuchKey) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	s3u_free_msg(m->cur);
	m->cur = rec;
	complete_submit(m);
}

static void on_complete_listed(struct s3_rq *rq, enum s3_err e, const ProtobufCMessage *resp)
{
	struct cm_rq *m = cm_of(rq);
	if (!take_listing(m, e, resp))
		return;
	const Iolake__Meta__ListPartsResponse *r = m->listed;
	/* Both lists ascend: every requested part must be stored with that
	 * ETag, and all but the last at least 5 MiB. */
	size_t j = 0;
	for (size_t i = 0; i < m->n; i++) {
		while (j < r->n_parts && r->parts[j]->part_number < m->parts[i].part_number)
			j++;
		if (j == r->n_parts || r->parts[j]->part_number != m->parts[i].part_number ||
		    strcmp(r->parts[j]->etag, m->parts[i].etag) != 0) {
			s3_rq_fail(rq, S3E_InvalidPart, NULL);
			return;
		}
		if (i + 1 < m->n && r->parts[j]->size < MPU_MIN_PART) {
			char msg[128];
			snprintf(msg, sizeof(msg),
				 "Your proposed upload is smaller than the minimum allowed size (part %u)",
				 (unsigned)m->parts[i].part_number);
			s3_rq_fail(rq, S3E_EntityTooSmall, msg);
			return;
		}
	}
	s3_rq_head(rq, rq->bucket, rq->key, on_complete_cur);
}

static void on_complete_body(struct s3_call *c, const char *data, size_t len)
{
	struct cm_rq *m = cm_of(s3_call_user(c));
	if (m->too_big || m->len + len > MPU_XML_MAX) {
		m->too_big = true;
		return;
	}
	if (m->len + len > m->cap) {
		size_t cap = m->cap ? m->cap : 4096;
		while (cap < m->len + len)
			cap *= 2;
		char *b = realloc(m->body, cap);
		if (!b) {
			m->too_big = true;
			return;
		}
		m->body = b;
		m->cap = cap;
	}
	memcpy(m->body + m->len, data, len);
	m->len += len;
}

static void on_complete_body_end(struct s3_call *c, enum s3_err verdict)
{
	struct cm_rq *m = cm_of(s3_call_user(c));
	struct s3_rq *rq = &m->rq;
	if (verdict) {
		s3_rq_fail(rq, verdict, NULL);
		return;
	}
	if (m->too_big) {
		s3_rq_fail(rq, S3E_MalformedXML, NULL);
		return;
	}
	m->parts = calloc(MPU_MAX_PARTS, sizeof(*m->parts));
	if (!m->parts) {
		s3_rq_fail(rq, S3E_InternalError, NULL);
		return;
	}
	int rc = xmlp_complete_mpu(m->body ? m->body : "", m->len, MPU_XML_MAX, m->parts,
				   MPU_MAX_PARTS, &m->n);
	if (rc || m->n == 0) {
		s3_rq_fail(rq, S3E_MalformedXML, NULL);
		return;
	}
	for (size_t i = 0; i < m->n; i++) {
		if (i > 0 && m->parts[i].part_number <= m->parts[i - 1].part_number) {
			s3_rq_fail(rq, S3E_InvalidPartOrder, NULL);
			return;
		}
		char e[33];
		if (!etag_norm(m->parts[i].etag, e)) {
			s3_rq_fail(rq, S3E_InvalidPart, NULL);
			return;
		}
		memcpy(m->parts[i].etag, e, 33);
	}
	list_parts(m, on_complete_listed);
}

static void op_complete(struct s3_call *c)
{
	struct cm_rq *m = new_cm_rq(c);
	if (!m)
		return;
	if (!s3_call_http(c)->has_body) {
		s3_rq_fail(&m->rq, S3E_MalformedXML, NULL);
		return;
	}
	enum s3_err e = s3_call_read_body(c, on_complete_body, on_complete_body_end);
	if (e)
		s3_rq_fail(&m->rq, e, NULL);
}

static void on_abort_listed(struct s3_rq *rq, enum s3_err e, const ProtobufCMessage *resp);

static void on_abort_commit(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__OpResult *res)
{
	struct cm_rq *m = cm_of(rq);
	if (e == S3E_OK)
		for (size_t i = 0; i < m->listed->n_parts; i++)
			drop_part(rq->o, m->listed->parts[i]);
	if (!rq->c)
		return;
	if (e == S3E_OK)
		http_respond(s3_call_stream(rq->c), 204, NULL, 0, NULL, NULL);
	else if (s3_rq_conflict(res) && ++rq->tries < S3_COMMIT_TRIES)
		list_parts(m, on_abort_listed);   /* a part was uploaded since the listing */
	else
		s3_rq_fail(rq, e, NULL);
}

static void on_abort_listed(struct s3_rq *rq, enum s3_err e, const ProtobufCMessage *resp)
{
	struct cm_rq *m = cm_of(rq);
	if (!take_listing(m, e, resp))
		return;
	Iolake__Meta__AbortMultipart am = IOLAKE__META__ABORT_MULTIPART__INIT;
	am.bucket = rq->bucket;
	am.key = rq->key;
	am.upload_id = m->upload_id;
	am.parts_conditional = true;
	am.if_parts_generation = listed_parts_gen(m);
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_ABORT_MULTIPART;
	op.abort_multipart = &am;
	s3_rq_submit(rq, &op, S3_SUBJ_UPLOAD, on_abort_commit);
}

static void op_abort(struct s3_call *c)
{
	struct cm_rq *m = new_cm_rq(c);
	if (m)
		list_parts(m, on_abort_listed);
}

/* ------------------------------------------------------------ ListParts */

static void on_list_parts(struct s3_rq *rq, enum s3_err e, const ProtobufCMessage *resp)
{
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	const Iolake__Meta__ListPartsResponse *r = (const void *)resp;
	const struct s3_req *q = s3_call_req(rq->c);
	long marker = s3u_qnum(q, "part-number-marker", 0), max = s3u_qnum(q, "max-parts", LIST_MAX);
	const char *owner = r->upload ? r->upload->owner : NULL;
	struct xml_w *w = s3_call_xml(rq->c);
	xml_decl(w);
	xml_open_ns(w, "ListPartsResult", S3_XMLNS);
	xml_elem(w, "Bucket", rq->bucket);
	xml_elem(w, "Key", rq->key);
	xml_elem_n(w, "UploadId", q->upload_id, q->upload_id_len);
	s3u_owner_elems(w, "Initiator", owner);
	s3u_owner_elems(w, "Owner", owner);
	xml_elem(w, "StorageClass", "STANDARD");
	xml_elem_u64(w, "PartNumberMarker", (uint64_t)marker);
	if (r->n_parts)
		xml_elem_u64(w, "NextPartNumberMarker", r->parts[r->n_parts - 1]->part_number);
	xml_elem_u64(w, "MaxParts", (uint64_t)max);
	xml_elem_bool(w, "IsTruncated", r->truncated);
	for (size_t i = 0; i < r->n_parts; i++) {
		const Iolake__Meta__Part *p = r->parts[i];
		char d[40], et[40];
		s3u_iso_date(p->mtime_ms, d);
		snprintf(et, sizeof(et), "\"%s\"", p->etag);
		xml_open(w, "Part");
		xml_elem_u64(w, "PartNumber", p->part_number);
		xml_elem(w, "LastModified", d);
		xml_elem(w, "ETag", et);
		xml_elem_u64(w, "Size", p->size);
		xml_close(w);
	}
	xml_close(w);
	s3_call_send_xml(rq->c, 200);
}

static void op_list_parts(struct s3_call *c)
{
	const struct s3_req *q = s3_call_req(c);
	long marker = s3u_qnum(q, "part-number-marker", 0), max = s3u_qnum(q, "max-parts", LIST_MAX);
	if (marker < 0 || max < 0 || marker > MPU_MAX_PARTS) {
		s3_call_error(c, S3E_InvalidArgument, "part-number-marker and max-parts must be integers");
		return;
	}
	struct s3_rq *rq = new_upload_rq(c, sizeof(*rq));
	if (!rq)
		return;
	char id[17];
	memcpy(id, q->upload_id, 16);
	id[16] = 0;
	Iolake__Meta__ListPartsRequest req = IOLAKE__META__LIST_PARTS_REQUEST__INIT;
	req.bucket = rq->bucket;
	req.key = rq->key;
	req.upload_id = id;
	req.part_number_marker = (uint32_t)marker;
	/* max-parts=0 answers an empty, truncated page (meta reads 0 as "all"). */
	req.max_parts = max == 0 ? 1 : max > LIST_MAX ? LIST_MAX : (uint32_t)max;
	s3_rq_call(rq, META_M_LIST_PARTS, &req.base, S3_SUBJ_UPLOAD_READ, on_list_parts);
}

const struct s3_handler s3_multipart_handlers[] = {
	{ S3_OP_CreateMultipartUpload, op_create, S3_ACT_PutObject },
	{ S3_OP_CompleteMultipartUpload, op_complete, S3_ACT_PutObject },
	{ S3_OP_AbortMultipartUpload, op_abort, S3_ACT_AbortMultipartUpload },
	{ S3_OP_ListParts, op_list_parts, S3_ACT_ListMultipartUploadParts },
	S3_HANDLERS_END,
};
