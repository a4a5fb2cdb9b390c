/*
 * s3_multipart.c — the multipart upload's life around its parts:
 * CreateMultipartUpload, CompleteMultipartUpload, AbortMultipartUpload and
 * ListParts. Records in meta (meta.proto MultipartUpload, Part); each
 * non-empty part was one gw_data PUT of its own (s3_part.c) whose encoded
 * layout travels in Part.segment.data_layout. Uploads ask for part rows
 * (issue 18): parts stay rows under the key after Complete, the record a
 * summary (readers: s3_prows.h); older uploads' layouts go in the record.
 *
 * Space: the shards of a part are freed by whoever commits the meta change
 * that stops naming it, after that commit (as s3_put.c does for object
 * versions): Complete for the listed parts it left out (and the object
 * version it replaced), Abort for every listed part. Complete and Abort
 * list the parts first and commit on the condition that no PutPart was
 * applied since (the upload's parts_generation): a part uploaded in
 * between makes them list again, so every part they drop is one they saw.
 *
 * Checksums (AWS's "Checking object integrity"): CreateMultipartUpload's
 * x-amz-checksum-algorithm / -type go into the upload record; each part
 * carries one of that algorithm (s3_part.c); Complete checks the parts'
 * values the request lists against the stored ones (InvalidPart),
 * computes the object's from the stored ones of the parts it listed
 * (COMPOSITE: the algorithm over the concatenated values; FULL_OBJECT:
 * the CRCs combined by length, s3_checksum.h s3_ck_parts), checks a
 * whole-object x-amz-checksum-<algo> sent with it (BadDigest) and commits
 * the value with the object; the listing it relies on is the one the
 * commit's parts_generation condition holds.
 *
 * Does not upload parts (s3_part.c), list an upload's parts (ListParts,
 * s3_list_parts.c) nor a bucket's uploads (ListMultipartUploads,
 * s3_list.c).
 *
 * Thread: the gateway loop; no blocking call.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gateway/gw_map.h"
#include "gateway/gw_rec.h"
#include "gateway/s3_access.h"
#include "gateway/s3_attrs.h"
#include "gateway/s3_checksum.h"
#include "gateway/s3_cond_ops.h"
#include "gateway/s3_handlers.h"
#include "gateway/s3_lock.h"
#include "gateway/s3_list.h"
#include "gateway/s3_put.h"
#include "gateway/s3_rq.h"
#include "gateway/s3_sse.h"
#include "gateway/s3_util.h"
#include "gateway/s3_version.h"
#include "gateway/xml_parse.h"
#include "gateway/s3_quota.h"

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

struct create_rq {
	struct s3_rq rq;
	enum s3_ck_algo algo;             /* x-amz-checksum-algorithm (NONE: none) */
	bool full;                        /* x-amz-checksum-type FULL_OBJECT */
	struct s3_sse_obj sse;            /* the object's encryption (s3_sse.h) */
};

static const char *ck_type_name(bool full)
{
	return full ? "FULL_OBJECT" : "COMPOSITE";
}

/* x-amz-checksum-algorithm and x-amz-checksum-type of
 * CreateMultipartUpload into cr (the type defaults to FULL_OBJECT for
 * CRC64NVME, COMPOSITE for the others, as S3); false after answering. */
static bool create_checksum(struct create_rq *cr)
{
	struct s3_call *c = cr->rq.c;
	const struct sigv4_header *ha = s3u_hdr(c, "x-amz-checksum-algorithm");
	const struct sigv4_header *ht = s3u_hdr(c, "x-amz-checksum-type");
	if (!ha && !ht)
		return true;
	if (!ha) {
		s3_rq_fail(&cr->rq, S3E_InvalidRequest, "The x-amz-checksum-type header can only be "
			   "used with the x-amz-checksum-algorithm header.");
		return false;
	}
	cr->algo = s3_ck_from_name(ha->value, ha->value_len);
	if (!cr->algo) {
		s3_rq_fail(&cr->rq, S3E_InvalidRequest, "Checksum algorithm provided is unsupported. "
			   "Please try again with any of the valid types: [CRC32, CRC32C, CRC64NVME, "
			   "SHA1, SHA256]");
		return false;
	}
	cr->full = cr->algo == S3_CK_CRC64NVME;
	if (ht) {
		if (ht->value_len == 11 && strncasecmp(ht->value, "FULL_OBJECT", 11) == 0)
			cr->full = true;
		else if (ht->value_len == 9 && strncasecmp(ht->value, "COMPOSITE", 9) == 0)
			cr->full = false;
		else {
			s3_rq_fail(&cr->rq, S3E_InvalidRequest,
				   "Value for x-amz-checksum-type header is invalid.");
			return false;
		}
	}
	if (!s3_ck_type_ok(cr->algo, cr->full)) {
		char msg[128];
		snprintf(msg, sizeof(msg), "The %s checksum type cannot be used with the %s "
			 "checksum algorithm.", ck_type_name(cr->full), s3_ck_name(cr->algo));
		s3_rq_fail(&cr->rq, S3E_InvalidRequest, msg);
		return false;
	}
	return true;
}

static void on_create(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__OpResult *res)
{
	if (!rq->c)
		return;
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	struct create_rq *cr = container_of(rq, struct create_rq, rq);
	if (cr->algo) {
		http_add_header(s3_call_stream(rq->c), "x-amz-checksum-algorithm", s3_ck_name(cr->algo));
		http_add_header(s3_call_stream(rq->c), "x-amz-checksum-type", ck_type_name(cr->full));
	}
	s3_sse_headers(rq->c, &cr->sse);
	s3_sse_obj_wipe(&cr->sse);
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
	struct create_rq *cr = s3_rq_new(c, sizeof(*cr));
	if (!cr || !create_checksum(cr))
		return;
	struct s3_rq *rq = &cr->rq;
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
	const char *msg = NULL;
	const struct http_request *hr = s3_call_http(c);
	enum s3_err ae = s3_put_storage_class(hr->headers, hr->n_headers);
	if (!ae)
		ae = acc ? s3_access_for_object(rq, acc) : S3E_InternalError;
	/* Object lock: retention and legal hold, or the default from now (S3
	 * dates the object from its initiation); Complete takes them. */
	uint64_t now_ms = s3u_wall_ms();
	if (!ae)
		ae = s3_lock_to_record(rq, &meta, now_ms, &msg);
	if (!ae)   /* the encryption of the parts and the object (s3_sse.h) */
		ae = s3_sse_for_write(c, rq->bkt, &cr->sse, &msg);
	if (ae) {
		free(acc);
		s3_put_user_meta_free(&hb.um);
		s3_rq_fail(rq, ae, msg);
		return;
	}
	s3_access_to_record(acc, &meta);
	s3_sse_to_record(&cr->sse, &meta);
	Iolake__Meta__MultipartUpload u = IOLAKE__META__MULTIPART_UPLOAD__INIT;
	u.bucket = rq->bucket;
	u.key = rq->key;
	u.upload_id = "";
	u.initiated_ms = now_ms;
	u.owner = (char *)s3_rq_owner(rq);   /* the initiator */
	u.meta = &meta;
	u.checksum_algo = (Iolake__Meta__ChecksumAlgo)cr->algo;
	u.checksum_full_object = cr->full;
	u.part_rows = true;   /* parts as rows under the key (issue 18, state_prows.c) */
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
	/* The upload's checksum algorithm and type, and the object's value
	 * computed from the listed parts (algo NONE: none). */
	bool ck_full;
	struct s3_ck_value ck;
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
	if (m->listed && m->listed->upload && m->listed->upload->meta)
		s3_sse_record_headers(c, m->listed->upload->meta);
	struct xml_w *w = s3_call_xml(c);
	xml_decl(w);
	xml_open_ns(w, "CompleteMultipartUploadResult", S3_XMLNS);
	xml_elem(w, "Location", loc ? loc : "");
	xml_elem(w, "Bucket", m->rq.bucket);
	xml_elem(w, "Key", m->rq.key);
	xml_elem(w, "ETag", q);
	if (m->ck.algo) {
		Iolake__Meta__Checksum ck = IOLAKE__META__CHECKSUM__INIT;
		ck.algo = (Iolake__Meta__ChecksumAlgo)m->ck.algo;
		ck.value.data = m->ck.raw;
		ck.value.len = m->ck.len;
		ck.composite = !m->ck_full;
		s3_attrs_xml_checksum(w, &ck, (uint32_t)m->n);
		xml_elem(w, "ChecksumType", ck_type_name(m->ck_full));
	}
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
	Iolake__Meta__Checksum ck = IOLAKE__META__CHECKSUM__INIT;
	if (m->ck.algo) {
		ck.algo = (Iolake__Meta__ChecksumAlgo)m->ck.algo;
		ck.value.data = m->ck.raw;
		ck.value.len = m->ck.len;
		ck.composite = !m->ck_full;
		cm.checksum = &ck;
	}
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
	/* If-None-Match: * / If-Match on Complete, against the object it
	 * replaces (the commit is conditioned on that very record). */
	enum s3_err ce = s3_cond_ops_put(rq->c, m->cur);
	if (ce) {
		s3_rq_fail(rq, ce, NULL);
		return;
	}
	complete_submit(m);
}

/* The part's stored checksum of algorithm a; false when it has none. */
static bool part_value(const Iolake__Meta__Part *p, enum s3_ck_algo a, struct s3_ck_value *v)
{
	for (size_t i = 0; i < p->n_checksums; i++)
		if ((enum s3_ck_algo)p->checksums[i]->algo == a)
			return s3_attrs_value(p->checksums[i], v);
	return false;
}

/* The request's x-amz-checksum-type and x-amz-checksum-<algo> (the whole
 * object's value, checked against m->ck); false after answering. */
static bool complete_claim(struct cm_rq *m, enum s3_ck_algo algo)
{
	struct s3_call *c = m->rq.c;
	char msg[160];
	const struct sigv4_header *ht = s3u_hdr(c, "x-amz-checksum-type");
	if (ht && algo && (ht->value_len != strlen(ck_type_name(m->ck_full)) ||
			   strncasecmp(ht->value, ck_type_name(m->ck_full), ht->value_len) != 0)) {
		snprintf(msg, sizeof(msg), "The upload was created using the %s checksum mode. The "
			 "complete request must use the same checksum mode.", ck_type_name(m->ck_full));
		s3_rq_fail(&m->rq, S3E_InvalidRequest, msg);
		return false;
	}
	const struct http_request *hr = s3_call_http(c);
	for (size_t i = 0; i < hr->n_headers; i++) {
		const struct sigv4_header *h = &hr->headers[i];
		enum s3_ck_algo a = s3_ck_from_header(h->name, h->name_len);
		if (!a)
			continue;
		if (a != algo) {
			snprintf(msg, sizeof(msg), "The upload was created using %s%s checksum. The "
				 "complete request must use the same checksum algorithm.",
				 algo ? "a " : "no", algo ? s3_ck_name(algo) : "");
			s3_rq_fail(&m->rq, S3E_InvalidRequest, msg);
			return false;
		}
		/* A composite value may come with its "-<parts>". */
		size_t n = h->value_len;
		const char *dash = memchr(h->value, '-', n);
		if (dash && !m->ck_full)
			n = (size_t)(dash - h->value);
		struct s3_ck_value v;
		if (s3_ck_from_base64(a, h->value, n, &v)) {
			snprintf(msg, sizeof(msg), "Value for %s header is invalid.", s3_ck_header(a));
			s3_rq_fail(&m->rq, S3E_InvalidRequest, msg);
			return false;
		}
		if (!s3_ck_equal(&v, &m->ck)) {
			snprintf(msg, sizeof(msg), "The %s you specified did not match the calculated "
				 "checksum.", s3_ck_name(a));
			s3_rq_fail(&m->rq, S3E_BadDigest, msg);
			return false;
		}
	}
	return true;
}

/* Each listed part's checksum (when the request names one) against the
 * stored part's, then the object's value from the stored ones (an upload
 * with an algorithm), then the request's claim about it; false after
 * answering. */
static bool complete_checksums(struct cm_rq *m)
{
	const Iolake__Meta__ListPartsResponse *r = m->listed;
	enum s3_ck_algo algo = r->upload ? (enum s3_ck_algo)r->upload->checksum_algo : S3_CK_NONE;
	m->ck_full = r->upload && r->upload->checksum_full_object;
	m->ck.algo = S3_CK_NONE;
	struct s3_ck_parts acc;
	if (algo && s3_ck_parts_begin(&acc, algo, m->ck_full)) {
		s3_rq_fail(&m->rq, S3E_InternalError, NULL);
		return false;
	}
	char msg[160];
	size_t j = 0;
	for (size_t i = 0; i < m->n; i++) {
		/* on_complete_listed found every requested part */
		while (r->parts[j]->part_number < m->parts[i].part_number)
			j++;
		const Iolake__Meta__Part *p = r->parts[j];
		const struct xmlp_part *q = &m->parts[i];
		struct s3_ck_value stored, claimed;
		bool have = part_value(p, algo ? algo : (enum s3_ck_algo)q->ck_algo, &stored);
		const char *why = NULL;
		if (q->ck_algo && algo && q->ck_algo != algo)
			why = "is not of the upload's checksum algorithm";
		else if (q->ck_algo && s3_ck_from_base64((enum s3_ck_algo)q->ck_algo, q->ck,
							 strlen(q->ck), &claimed))
			why = "has an invalid checksum value";
		else if (q->ck_algo && have && !s3_ck_equal(&claimed, &stored))
			why = "has a checksum that does not match the part's";
		else if (algo && !have)
			why = "was uploaded without the upload's checksum";
		if (why) {
			if (algo)
				s3_ck_parts_final(&acc, &stored);
			snprintf(msg, sizeof(msg), "One or more of the specified parts could not be "
				 "found: part %u %s.", (unsigned)q->part_number, why);
			s3_rq_fail(&m->rq, S3E_InvalidPart, msg);
			return false;
		}
		if (algo)
			s3_ck_parts_add(&acc, &stored, p->size);
	}
	if (algo)
		s3_ck_parts_final(&acc, &m->ck);
	return complete_claim(m, algo);
}

/* The upload is gone: if the object is the one this upload made, the
 * Complete succeeded before (its answer was lost) and answers the same. */
static void on_complete_done_before(struct s3_rq *rq, enum s3_err e,
				    Iolake__Meta__ObjectRecord *rec)
{
	struct cm_rq *m = cm_of(rq);
	if (e || !rec || !rec->upload_id || strcmp(rec->upload_id, m->upload_id) != 0) {
		s3u_free_msg(rec);
		s3_rq_fail(rq, e && e != S3E_NoSuchKey ? e : S3E_NoSuchUpload, NULL);
		return;
	}
	m->ck.algo = S3_CK_NONE;
	if (rec->n_checksums && s3_attrs_value(rec->checksums[0], &m->ck))
		m->ck_full = !rec->checksums[0]->composite;
	m->n = rec->parts_count;
	complete_respond(m, rec->etag);
	s3u_free_msg(rec);
}

static void on_complete_listed(struct s3_rq *rq, enum s3_err e, const ProtobufCMessage *resp)
{
	struct cm_rq *m = cm_of(rq);
	if (e == S3E_NoSuchUpload) {
		s3_rq_head(rq, rq->bucket, rq->key, on_complete_done_before);
		return;
	}
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
		if (i + 1 < m->n && r->parts[j]->size < rq->o->min_part) {
			char msg[128];
			snprintf(msg, sizeof(msg),
				 "Your proposed upload is smaller than the minimum allowed size (part %u)",
				 (unsigned)m->parts[i].part_number);
			s3_rq_fail(rq, S3E_EntityTooSmall, msg);
			return;
		}
	}
	if (!complete_checksums(m))
		return;
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
	s3_call_checksum_not_body(c);   /* x-amz-checksum-*: the object's */
	/* Quotas: the object (its parts' bytes were checked as they came). */
	enum s3_err e = s3_quota_check(s3_rq_gate_bucket(&m->rq), 0, 1);
	if (!e)
		e = s3_call_read_body(c, on_complete_body, on_complete_body_end);
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

const struct s3_handler s3_multipart_handlers[] = {
	{ S3_OP_CreateMultipartUpload, op_create, S3_ACT_PutObject },
	{ S3_OP_CompleteMultipartUpload, op_complete, S3_ACT_PutObject },
	{ S3_OP_AbortMultipartUpload, op_abort, S3_ACT_AbortMultipartUpload },
	S3_HANDLERS_END,
};
