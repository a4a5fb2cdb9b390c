/*
 * s3_multipart.c — the multipart upload operations: CreateMultipartUpload,
 * UploadPart (the PutObject pipeline of s3_object.c with a part commit),
 * CompleteMultipartUpload, AbortMultipartUpload, ListParts,
 * ListMultipartUploads (prefix, delimiter with CommonPrefixes, key /
 * upload-id markers: meta's ListUploads does the listing as ListObjects
 * does, meta/list.h). Records in meta (meta.proto MultipartUpload, Part);
 * each non-empty part is one gw_data PUT of its own whose encoded layout
 * travels in Part.segment.data_layout and, after Complete, in the object
 * record's Segment.data_layout (one segment per non-empty part).
 *
 * Space: the shards of a part are freed by whoever commits the meta change
 * that stops naming it, after that commit (as s3_object.c does for object
 * versions): UploadPart for the part it replaced (PutPart is conditional
 * on the replaced part's generation, so racing uploads of one part number
 * each free exactly the part they replaced), Complete for the listed parts
 * it left out, Abort for every listed part. Complete and Abort list the
 * parts first and commit on the condition that no PutPart was applied
 * since (the upload's parts_generation): a part uploaded in between makes
 * them list again, so every part they drop is one they saw.
 *
 * Thread: the gateway loop; no blocking call.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/log.h"
#include "gateway/gw_map.h"
#include "gateway/s3_ops_int.h"
#include "gateway/xml_parse.h"

#define MPU_MIN_PART (5ull << 20)         /* every part but the last */
#define MPU_MAX_PARTS 10000
#define MPU_XML_MAX (MPU_MAX_PARTS * 200) /* CompleteMultipartUpload body */
#define LIST_MAX 1000

typedef Iolake__Meta__Status mstatus;
#define ST(x) IOLAKE__META__STATUS__STATUS_##x

/* The upload id of the request when it is one of ours (16 hex digits). */
static bool upload_id_ok(const struct s3_req *r)
{
	if (!r->upload_id || r->upload_id_len != 16)
		return false;
	for (size_t i = 0; i < 16; i++) {
		char ch = r->upload_id[i];
		if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
			return false;
	}
	return true;
}

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
		gw_rec_drop_encoded(o->map, o->data, p->segment->data_layout.data, p->segment->data_layout.len);
}

static struct opx *new_upload_opx(struct s3_call *c)
{
	if (!upload_id_ok(s3_call_req(c))) {
		s3_call_error(c, S3E_NoSuchUpload, NULL);
		return NULL;
	}
	struct opx *x = opx_new(c);
	if (!x)
		s3_call_error(c, S3E_InternalError, NULL);
	return x;
}

/* ------------------------------------------------------------ CreateMultipartUpload */

static void on_create(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t idx)
{
	(void)idx;
	struct opx *x = ud;
	if (!opx_back(x))
		return;
	if (err) {
		s3o_fail(x, s3o_meta_err(err), NULL);
		return;
	}
	if (res->status == ST(NOT_FOUND)) {
		s3o_fail(x, S3E_NoSuchBucket, NULL);
		return;
	}
	if (res->status == ST(TOO_LARGE)) {
		s3o_fail(x, S3E_InvalidArgument, "Your metadata headers exceed the maximum allowed metadata size.");
		return;
	}
	if (res->status != ST(OK)) {
		s3o_fail(x, S3E_InternalError, NULL);
		return;
	}
	struct xml_w *w = s3_call_xml(x->c);
	xml_decl(w);
	xml_open_ns(w, "InitiateMultipartUploadResult", S3_XMLNS);
	xml_elem(w, "Bucket", x->bucket);
	xml_elem(w, "Key", x->key);
	xml_elem(w, "UploadId", res->upload_id);
	xml_close(w);
	s3_call_send_xml(x->c, 200);
}

static void op_create(struct s3_call *c)
{
	struct opx *x = opx_new(c);
	if (!x) {
		s3_call_error(c, S3E_InternalError, NULL);
		return;
	}
	struct s3o_hdr_bufs hb;
	Iolake__Meta__ObjectRecord meta = IOLAKE__META__OBJECT_RECORD__INIT;
	if (s3o_rec_from_headers(c, &meta, &hb)) {
		s3o_fail(x, S3E_InternalError, NULL);
		return;
	}
	uint32_t pg = 0;
	if (gw_map_object_pg(x->o->map, x->bucket, x->key, &pg) == 0)
		meta.pg = pg;
	meta.owner = (char *)s3o_owner_of(x->o, c);
	Iolake__Meta__MultipartUpload u = IOLAKE__META__MULTIPART_UPLOAD__INIT;
	u.bucket = x->bucket;
	u.key = x->key;
	u.upload_id = "";
	u.initiated_ms = s3o_wall_ms();
	u.owner = meta.owner;
	u.meta = &meta;
	Iolake__Meta__CreateMultipart cm = IOLAKE__META__CREATE_MULTIPART__INIT;
	cm.upload = &u;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_CREATE_MULTIPART;
	op.create_multipart = &cm;
	if (s3o_msubmit(x, &op, on_create))
		s3o_fail(x, S3E_ServiceUnavailable, NULL);
	s3o_user_meta_free(&hb.um);
}

/* ------------------------------------------------------------ UploadPart */

struct mpu_part {
	char upload_id[17];
	uint32_t part_number;
	bool copy;                       /* UploadPartCopy: answer CopyPartResult */
	Iolake__Meta__Part *prev;        /* the part this one replaces */
};

static void part_free(void *p)
{
	struct mpu_part *mp = p;
	s3o_free_msg(mp->prev);
	free(mp);
}

static void part_commit(struct opx *x);

static void part_respond(struct opx *x)
{
	struct mpu_part *mp = x->part;
	char etag[40];
	snprintf(etag, sizeof(etag), "\"%s\"", x->etag);
	if (!mp->copy) {
		http_add_header(s3_call_stream(x->c), "ETag", etag);
		http_respond(s3_call_stream(x->c), 200, NULL, 0, NULL, NULL);
		return;
	}
	char d[40];
	s3o_iso_date(x->mtime_ms, d);
	struct xml_w *w = s3_call_xml(x->c);
	xml_decl(w);
	xml_open_ns(w, "CopyPartResult", S3_XMLNS);
	xml_elem(w, "LastModified", d);
	xml_elem(w, "ETag", etag);
	xml_close(w);
	s3_call_send_xml(x->c, 200);
}

static void on_part_commit(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t idx)
{
	(void)idx;
	struct opx *x = ud;
	struct mpu_part *mp = x->part;
	x->pending--;
	int st = err ? -1 : (int)res->status;
	if (st == ST(OK)) {
		drop_part(x->o, mp->prev);
		if (x->c)
			part_respond(x);
		opx_maybe_free(x);
		return;
	}
	if (st == ST(CONFLICT) && x->c && ++x->tries < COMMIT_TRIES) {
		part_commit(x);   /* another upload of this part number won: go again */
		return;
	}
	if (err == 0 || !iol_err_retryable(err))
		s3o_put_drop_new(x);
	if (!x->c) {
		opx_maybe_free(x);
		return;
	}
	if (st == ST(NOT_FOUND))
		s3o_fail(x, S3E_NoSuchUpload, NULL);
	else
		s3o_fail(x, err ? s3o_meta_err(err) : S3E_InternalError, NULL);
}

static void part_submit(struct opx *x)
{
	struct mpu_part *mp = x->part;
	Iolake__Meta__Segment sg = IOLAKE__META__SEGMENT__INIT;
	Iolake__Meta__Part p = IOLAKE__META__PART__INIT;
	p.upload_id = mp->upload_id;
	p.part_number = mp->part_number;
	p.size = x->size;
	p.etag = x->etag;
	p.mtime_ms = x->mtime_ms;
	uint8_t *lbuf = NULL;
	if (!x->is_inline) {
		const struct gw_data_layout *l = gw_data_put_layout(x->put);
		ssize_t n = (ssize_t)gw_data_layout_encoded_len(l);
		if (!(lbuf = malloc((size_t)n)) || gw_data_layout_encode(l, lbuf, (size_t)n) != n) {
			free(lbuf);
			s3o_put_drop_new(x);
			s3o_fail(x, S3E_InternalError, NULL);
			return;
		}
		sg.length = x->size;
		sg.stripe_count = l->nsegs;
		sg.part_number = mp->part_number;
		sg.data_layout.data = lbuf;
		sg.data_layout.len = (size_t)n;
		p.segment = &sg;
	}
	Iolake__Meta__PutPart pp = IOLAKE__META__PUT_PART__INIT;
	pp.bucket = x->bucket;
	pp.key = x->key;
	pp.upload_id = mp->upload_id;
	pp.part = &p;
	pp.conditional = true;
	pp.if_generation = mp->prev ? mp->prev->generation : 0;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_PUT_PART;
	op.put_part = &pp;
	int rc = s3o_msubmit(x, &op, on_part_commit);
	free(lbuf);
	if (rc) {
		s3o_put_drop_new(x);
		s3o_fail(x, S3E_ServiceUnavailable, NULL);
	}
}

static void on_part_prev(void *ud, int err, const ProtobufCMessage *resp)
{
	struct opx *x = ud;
	struct mpu_part *mp = x->part;
	if (!x->c)
		s3o_put_drop_new(x);   /* before opx_back may free x */
	if (!opx_back(x))
		return;
	const Iolake__Meta__GetUploadResponse *r = (const void *)resp;
	if (err && err != IOL_ENOT_FOUND) {
		s3o_put_drop_new(x);
		s3o_fail(x, s3o_meta_err(err), NULL);
		return;
	}
	if (err || r->status != ST(OK)) {
		s3o_put_drop_new(x);
		s3o_fail(x, S3E_NoSuchUpload, NULL);
		return;
	}
	s3o_free_msg(mp->prev);
	mp->prev = r->part ? (Iolake__Meta__Part *)s3o_copy_msg(&r->part->base) : NULL;
	if (r->part && !mp->prev) {
		s3o_put_drop_new(x);
		s3o_fail(x, S3E_InternalError, NULL);
		return;
	}
	part_submit(x);
}

/* Data durable (x->etag set): read the part it replaces, then commit
 * conditionally on that part's generation. */
static void part_commit(struct opx *x)
{
	struct mpu_part *mp = x->part;
	Iolake__Meta__GetUploadRequest req = IOLAKE__META__GET_UPLOAD_REQUEST__INIT;
	req.bucket = x->bucket;
	req.key = x->key;
	req.upload_id = mp->upload_id;
	req.part_number = mp->part_number;
	if (s3o_mcall(x, META_M_GET_UPLOAD, &req.base, on_part_prev)) {
		s3o_put_drop_new(x);
		s3o_fail(x, S3E_ServiceUnavailable, NULL);
	}
}

int s3_mpu_part_setup(struct opx *x, bool copy)
{
	const struct s3_req *r = s3_call_req(x->c);
	struct mpu_part *mp = calloc(1, sizeof(*mp));
	if (!mp)
		return -ENOMEM;
	memcpy(mp->upload_id, r->upload_id, 16);
	mp->part_number = r->part_number;
	mp->copy = copy;
	x->part = mp;
	x->part_free = part_free;
	x->commit = part_commit;
	return 0;
}

static void on_part_upload(void *ud, int err, const ProtobufCMessage *resp)
{
	struct opx *x = ud;
	if (!opx_back(x))
		return;
	const Iolake__Meta__GetUploadResponse *r = (const void *)resp;
	if (err && err != IOL_ENOT_FOUND)
		s3o_fail(x, s3o_meta_err(err), NULL);
	else if (err || r->status != ST(OK))
		s3o_fail(x, S3E_NoSuchUpload, NULL);
	else
		s3o_put_stream(x);
}

static void op_upload_part(struct s3_call *c)
{
	if (!upload_id_ok(s3_call_req(c))) {
		s3_call_error(c, S3E_NoSuchUpload, NULL);
		return;
	}
	struct opx *x = s3o_put_begin(c, false);
	if (!x)
		return;
	if (s3_mpu_part_setup(x, false)) {
		s3o_fail(x, S3E_InternalError, NULL);
		return;
	}
	Iolake__Meta__GetUploadRequest req = IOLAKE__META__GET_UPLOAD_REQUEST__INIT;
	req.bucket = x->bucket;
	req.key = x->key;
	req.upload_id = ((struct mpu_part *)x->part)->upload_id;
	if (s3o_mcall(x, META_M_GET_UPLOAD, &req.base, on_part_upload))
		s3o_fail(x, S3E_ServiceUnavailable, NULL);
}

/* ------------------------------------------------------------ Complete */

struct mpu_complete {
	char upload_id[17];
	char *body;
	size_t len, cap;
	bool too_big;
	struct xmlp_part *parts;          /* as requested, ETags normalised */
	size_t n;
	Iolake__Meta__ListPartsResponse *listed;  /* the upload's parts before the commit */
};

static void complete_free(void *p)
{
	struct mpu_complete *m = p;
	free(m->body);
	free(m->parts);
	s3o_free_msg(m->listed);
	free(m);
}

static void complete_read_cur(struct opx *x);
static void complete_list(struct opx *x);
static void abort_list(struct opx *x);

/* The listed upload's parts_generation: the commit's condition. */
static uint64_t listed_parts_gen(const struct mpu_complete *m)
{
	return m->listed && m->listed->upload ? m->listed->upload->parts_generation : 0;
}

static void complete_respond(struct opx *x, const char *etag)
{
	struct s3_call *c = x->c;
	const struct http_request *hr = s3_call_http(c);
	char q[64];
	snprintf(q, sizeof(q), "\"%s\"", etag);
	size_t loc_n = 16 + hr->host_len + strlen(x->bucket) + strlen(x->key);
	char *loc = malloc(loc_n);
	if (loc)
		snprintf(loc, loc_n, "http://%.*s/%s/%s", (int)hr->host_len, hr->host ? hr->host : "",
			 x->bucket, x->key);
	struct xml_w *w = s3_call_xml(c);
	xml_decl(w);
	xml_open_ns(w, "CompleteMultipartUploadResult", S3_XMLNS);
	xml_elem(w, "Location", loc ? loc : "");
	xml_elem(w, "Bucket", x->bucket);
	xml_elem(w, "Key", x->key);
	xml_elem(w, "ETag", q);
	xml_close(w);
	free(loc);
	s3_call_send_xml(c, 200);
}

/* After the commit: the listed parts the object does not name. */
static void complete_drop_unused(struct opx *x)
{
	struct mpu_complete *m = x->ext;
	const Iolake__Meta__ListPartsResponse *l = m->listed;
	size_t j = 0;
	for (size_t i = 0; l && i < l->n_parts; i++) {
		uint32_t pn = l->parts[i]->part_number;
		while (j < m->n && m->parts[j].part_number < pn)
			j++;
		if (!(j < m->n && m->parts[j].part_number == pn))
			drop_part(x->o, l->parts[i]);
	}
}

static void on_complete_commit(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t idx)
{
	(void)idx;
	struct opx *x = ud;
	x->pending--;
	int st = err ? -1 : (int)res->status;
	if (st == ST(OK)) {
		gw_rec_drop_shards(x->o->map, x->o->data, x->cur);
		complete_drop_unused(x);
		if (x->c)
			complete_respond(x, res->etag);
		opx_maybe_free(x);
		return;
	}
	if (!x->c) {
		opx_maybe_free(x);
		return;
	}
	if (st == ST(CONFLICT) && ++x->tries < COMMIT_TRIES)
		complete_list(x);   /* a part or the object changed: from the listing again */
	else if (st == ST(NOT_FOUND))
		s3o_fail(x, S3E_NoSuchUpload, NULL);
	else if (st == ST(INVALID_PART))
		s3o_fail(x, S3E_InvalidPart, NULL);
	else if (st == ST(INVALID))
		s3o_fail(x, S3E_InvalidPartOrder, NULL);
	else if (st == ST(TOO_LARGE))
		s3o_fail(x, S3E_EntityTooLarge, "The object's record (one layout per part) is too large");
	else
		s3o_fail(x, err ? s3o_meta_err(err) : S3E_InternalError, NULL);
}

static void complete_submit(struct opx *x)
{
	struct mpu_complete *m = x->ext;
	Iolake__Meta__PartRef *refs = calloc(m->n, sizeof(*refs));
	Iolake__Meta__PartRef **prefs = calloc(m->n, sizeof(*prefs));
	if (!refs || !prefs) {
		free(refs), free(prefs);
		s3o_fail(x, S3E_InternalError, NULL);
		return;
	}
	for (size_t i = 0; i < m->n; i++) {
		iolake__meta__part_ref__init(&refs[i]);
		refs[i].part_number = m->parts[i].part_number;
		refs[i].etag = m->parts[i].etag;
		prefs[i] = &refs[i];
	}
	Iolake__Meta__CompleteMultipart cm = IOLAKE__META__COMPLETE_MULTIPART__INIT;
	cm.bucket = x->bucket;
	cm.key = x->key;
	cm.upload_id = m->upload_id;
	cm.parts = prefs;
	cm.n_parts = m->n;
	cm.time_ms = s3o_wall_ms();
	cm.parts_conditional = true;
	cm.if_parts_generation = listed_parts_gen(m);
	if (x->cur)
		cm.if_generation = x->cur->generation;
	else
		cm.if_none_match = true;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_COMPLETE_MULTIPART;
	op.complete_multipart = &cm;
	if (s3o_msubmit(x, &op, on_complete_commit))
		s3o_fail(x, S3E_ServiceUnavailable, NULL);
	free(refs);
	free(prefs);
}

static void on_complete_cur(void *ud, int err, const ProtobufCMessage *resp)
{
	struct opx *x = ud;
	if (!opx_back(x))
		return;
	if (err && err != IOL_ENOT_FOUND) {
		s3o_fail(x, s3o_meta_err(err), NULL);
		return;
	}
	const Iolake__Meta__HeadObjectResponse *r = (const void *)resp;
	s3o_free_msg(x->cur);
	x->cur = NULL;
	if (!err && r->status == ST(OK) && r->record &&
	    !(x->cur = (Iolake__Meta__ObjectRecord *)s3o_copy_msg(&r->record->base))) {
		s3o_fail(x, S3E_InternalError, NULL);
		return;
	}
	complete_submit(x);
}

/* The record the object replaces (its shards become ours to free). */
static void complete_read_cur(struct opx *x)
{
	Iolake__Meta__HeadObjectRequest req = IOLAKE__META__HEAD_OBJECT_REQUEST__INIT;
	req.bucket = x->bucket;
	req.key = x->key;
	if (s3o_mcall(x, META_M_HEAD_OBJECT, &req.base, on_complete_cur))
		s3o_fail(x, S3E_ServiceUnavailable, NULL);
}

/* Keep a ListParts answer in m->listed (Complete and Abort act on the
 * parts they saw); false after answering the error. */
static bool take_listing(struct opx *x, struct mpu_complete *m, int err,
			 const ProtobufCMessage *resp)
{
	const Iolake__Meta__ListPartsResponse *r = (const void *)resp;
	if (err && err != IOL_ENOT_FOUND) {
		s3o_fail(x, s3o_meta_err(err), NULL);
		return false;
	}
	if (err || r->status != ST(OK)) {
		s3o_fail(x, S3E_NoSuchUpload, NULL);
		return false;
	}
	s3o_free_msg(m->listed);
	if (!(m->listed = (Iolake__Meta__ListPartsResponse *)s3o_copy_msg(&r->base))) {
		s3o_fail(x, S3E_InternalError, NULL);
		return false;
	}
	return true;
}

static void on_complete_listed(void *ud, int err, const ProtobufCMessage *resp)
{
	struct opx *x = ud;
	struct mpu_complete *m = x->ext;
	if (!opx_back(x))
		return;
	if (!take_listing(x, m, err, resp))
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
			s3o_fail(x, S3E_InvalidPart, NULL);
			return;
		}
		if (i + 1 < m->n && r->parts[j]->size < MPU_MIN_PART) {
			char msg[128];
			snprintf(msg, sizeof(msg),
				 "Your proposed upload is smaller than the minimum allowed size (part %u)",
				 (unsigned)m->parts[i].part_number);
			s3o_fail(x, S3E_EntityTooSmall, msg);
			return;
		}
	}
	complete_read_cur(x);
}

static void on_complete_body(struct s3_call *c, const char *data, size_t len)
{
	struct opx *x = s3_call_user(c);
	struct mpu_complete *m = x->ext;
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
	struct opx *x = s3_call_user(c);
	struct mpu_complete *m = x->ext;
	if (verdict) {
		s3o_fail(x, verdict, NULL);
		return;
	}
	if (m->too_big) {
		s3o_fail(x, S3E_MalformedXML, NULL);
		return;
	}
	m->parts = calloc(MPU_MAX_PARTS, sizeof(*m->parts));
	if (!m->parts) {
		s3o_fail(x, S3E_InternalError, NULL);
		return;
	}
	int rc = xmlp_complete_mpu(m->body ? m->body : "", m->len, MPU_XML_MAX, m->parts,
				   MPU_MAX_PARTS, &m->n);
	if (rc || m->n == 0) {
		s3o_fail(x, S3E_MalformedXML, NULL);
		return;
	}
	for (size_t i = 0; i < m->n; i++) {
		if (i > 0 && m->parts[i].part_number <= m->parts[i - 1].part_number) {
			s3o_fail(x, S3E_InvalidPartOrder, NULL);
			return;
		}
		char e[33];
		if (!etag_norm(m->parts[i].etag, e)) {
			s3o_fail(x, S3E_InvalidPart, NULL);
			return;
		}
		memcpy(m->parts[i].etag, e, 33);
	}
	complete_list(x);
}

/* Every part of the upload, to validate the request against and to know
 * which ones the commit will drop. */
static void complete_list(struct opx *x)
{
	struct mpu_complete *m = x->ext;
	Iolake__Meta__ListPartsRequest req = IOLAKE__META__LIST_PARTS_REQUEST__INIT;
	req.bucket = x->bucket;
	req.key = x->key;
	req.upload_id = m->upload_id;
	req.max_parts = MPU_MAX_PARTS;
	if (s3o_mcall(x, META_M_LIST_PARTS, &req.base, on_complete_listed))
		s3o_fail(x, S3E_ServiceUnavailable, NULL);
}

/* The opx of a Complete or an Abort, with its mpu_complete; NULL when
 * the call was already answered. */
static struct opx *new_complete_opx(struct s3_call *c)
{
	struct opx *x = new_upload_opx(c);
	if (!x)
		return NULL;
	struct mpu_complete *m = calloc(1, sizeof(*m));
	if (!m) {
		s3o_fail(x, S3E_InternalError, NULL);
		return NULL;
	}
	memcpy(m->upload_id, s3_call_req(c)->upload_id, 16);
	x->ext = m;
	x->ext_free = complete_free;
	return x;
}

static void op_complete(struct s3_call *c)
{
	struct opx *x = new_complete_opx(c);
	if (!x)
		return;
	if (!s3_call_http(c)->has_body) {
		s3o_fail(x, S3E_MalformedXML, NULL);
		return;
	}
	enum s3_err e = s3_call_read_body(c, on_complete_body, on_complete_body_end);
	if (e)
		s3o_fail(x, e, NULL);
}

/* ------------------------------------------------------------ Abort */

static void on_abort_commit(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t idx)
{
	(void)idx;
	struct opx *x = ud;
	struct mpu_complete *m = x->ext;
	x->pending--;
	int st = err ? -1 : (int)res->status;
	if (st == ST(OK))
		for (size_t i = 0; i < m->listed->n_parts; i++)
			drop_part(x->o, m->listed->parts[i]);
	if (!x->c) {
		opx_maybe_free(x);
		return;
	}
	if (st == ST(OK))
		http_respond(s3_call_stream(x->c), 204, NULL, 0, NULL, NULL);
	else if (st == ST(CONFLICT) && ++x->tries < COMMIT_TRIES)
		abort_list(x);   /* a part was uploaded since the listing */
	else if (st == ST(NOT_FOUND))
		s3o_fail(x, S3E_NoSuchUpload, NULL);
	else
		s3o_fail(x, err ? s3o_meta_err(err) : S3E_InternalError, NULL);
}

static void on_abort_listed(void *ud, int err, const ProtobufCMessage *resp)
{
	struct opx *x = ud;
	struct mpu_complete *m = x->ext;
	if (!opx_back(x))
		return;
	if (!take_listing(x, m, err, resp))
		return;
	Iolake__Meta__AbortMultipart am = IOLAKE__META__ABORT_MULTIPART__INIT;
	am.bucket = x->bucket;
	am.key = x->key;
	am.upload_id = m->upload_id;
	am.parts_conditional = true;
	am.if_parts_generation = listed_parts_gen(m);
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_ABORT_MULTIPART;
	op.abort_multipart = &am;
	if (s3o_msubmit(x, &op, on_abort_commit))
		s3o_fail(x, S3E_ServiceUnavailable, NULL);
}

static void op_abort(struct s3_call *c)
{
	struct opx *x = new_complete_opx(c);
	if (x)
		abort_list(x);
}

static void abort_list(struct opx *x)
{
	struct mpu_complete *m = x->ext;
	Iolake__Meta__ListPartsRequest req = IOLAKE__META__LIST_PARTS_REQUEST__INIT;
	req.bucket = x->bucket;
	req.key = x->key;
	req.upload_id = m->upload_id;
	req.max_parts = MPU_MAX_PARTS;
	if (s3o_mcall(x, META_M_LIST_PARTS, &req.base, on_abort_listed))
		s3o_fail(x, S3E_ServiceUnavailable, NULL);
}

/* ------------------------------------------------------------ listings */

/* A non-negative integer query parameter; def when absent, -1 when bad. */
static long qnum(const struct s3_req *r, const char *name, long def)
{
	const char *v = s3o_qval(r, name);
	if (!v)
		return def;
	char *end;
	long n = strtol(v, &end, 10);
	return (!*v || *end || n < 0) ? -1 : n;
}

static void owner_elems(struct xml_w *w, const char *tag, const char *owner)
{
	xml_open(w, tag);
	xml_elem(w, "ID", owner && *owner ? owner : "root");
	xml_elem(w, "DisplayName", owner && *owner ? owner : "root");
	xml_close(w);
}

static void on_list_parts(void *ud, int err, const ProtobufCMessage *resp)
{
	struct opx *x = ud;
	if (!opx_back(x))
		return;
	const Iolake__Meta__ListPartsResponse *r = (const void *)resp;
	if (err && err != IOL_ENOT_FOUND) {
		s3o_fail(x, s3o_meta_err(err), NULL);
		return;
	}
	if (err || r->status != ST(OK)) {
		s3o_fail(x, S3E_NoSuchUpload, NULL);
		return;
	}
	const struct s3_req *q = s3_call_req(x->c);
	long marker = qnum(q, "part-number-marker", 0), max = qnum(q, "max-parts", LIST_MAX);
	const char *owner = r->upload ? r->upload->owner : NULL;
	struct xml_w *w = s3_call_xml(x->c);
	xml_decl(w);
	xml_open_ns(w, "ListPartsResult", S3_XMLNS);
	xml_elem(w, "Bucket", x->bucket);
	xml_elem(w, "Key", x->key);
	xml_elem_n(w, "UploadId", q->upload_id, q->upload_id_len);
	owner_elems(w, "Initiator", owner);
	owner_elems(w, "Owner", owner);
	xml_elem(w, "StorageClass", "STANDARD");
	xml_elem_u64(w, "PartNumberMarker", (uint64_t)marker);
	if (r->n_parts)
		xml_elem_u64(w, "NextPartNumberMarker", r->parts[r->n_parts - 1]->part_number);
	xml_elem_u64(w, "MaxParts", (uint64_t)max);
	xml_elem_bool(w, "IsTruncated", r->truncated);
	for (size_t i = 0; i < r->n_parts; i++) {
		const Iolake__Meta__Part *p = r->parts[i];
		char d[40], e[40];
		s3o_iso_date(p->mtime_ms, d);
		snprintf(e, sizeof(e), "\"%s\"", p->etag);
		xml_open(w, "Part");
		xml_elem_u64(w, "PartNumber", p->part_number);
		xml_elem(w, "LastModified", d);
		xml_elem(w, "ETag", e);
		xml_elem_u64(w, "Size", p->size);
		xml_close(w);
	}
	xml_close(w);
	s3_call_send_xml(x->c, 200);
}

static void op_list_parts(struct s3_call *c)
{
	const struct s3_req *q = s3_call_req(c);
	long marker = qnum(q, "part-number-marker", 0), max = qnum(q, "max-parts", LIST_MAX);
	if (marker < 0 || max < 0 || marker > MPU_MAX_PARTS) {
		s3_call_error(c, S3E_InvalidArgument, "part-number-marker and max-parts must be integers");
		return;
	}
	struct opx *x = new_upload_opx(c);
	if (!x)
		return;
	char id[17];
	memcpy(id, q->upload_id, 16);
	id[16] = 0;
	Iolake__Meta__ListPartsRequest req = IOLAKE__META__LIST_PARTS_REQUEST__INIT;
	req.bucket = x->bucket;
	req.key = x->key;
	req.upload_id = id;
	req.part_number_marker = (uint32_t)marker;
	/* max-parts=0 answers an empty, truncated page (meta reads 0 as "all"). */
	req.max_parts = max == 0 ? 1 : max > LIST_MAX ? LIST_MAX : (uint32_t)max;
	if (s3o_mcall(x, META_M_LIST_PARTS, &req.base, on_list_parts))
		s3o_fail(x, S3E_ServiceUnavailable, NULL);
}

static void on_list_uploads(void *ud, int err, const ProtobufCMessage *resp)
{
	struct opx *x = ud;
	if (!opx_back(x))
		return;
	const Iolake__Meta__ListUploadsResponse *r = (const void *)resp;
	if (err && err != IOL_ENOT_FOUND) {
		s3o_fail(x, s3o_meta_err(err), NULL);
		return;
	}
	if (!err && r->status == ST(INVALID)) {
		s3o_fail(x, S3E_InvalidArgument, "Prefix, delimiter or key-marker too long");
		return;
	}
	if (err || r->status != ST(OK)) {
		s3o_fail(x, S3E_NoSuchBucket, NULL);
		return;
	}
	const struct s3_req *q = s3_call_req(x->c);
	const char *prefix = s3o_qval(q, "prefix"), *km = s3o_qval(q, "key-marker");
	const char *um = s3o_qval(q, "upload-id-marker"), *enc = s3o_qval(q, "encoding-type");
	const char *delim = s3o_qval(q, "delimiter");
	bool url = enc && strcmp(enc, "url") == 0;
	long max = qnum(q, "max-uploads", LIST_MAX);
	struct xml_w *w = s3_call_xml(x->c);
	xml_decl(w);
	xml_open_ns(w, "ListMultipartUploadsResult", S3_XMLNS);
	xml_elem(w, "Bucket", x->bucket);
	s3o_key_elem(w, "KeyMarker", km ? km : "", url);
	xml_elem(w, "UploadIdMarker", um ? um : "");
	if (r->truncated) {
		/* A page ending on a common prefix names it, with no upload id:
		 * the next page starts after every key under it. (An older meta
		 * leaves next_key_marker empty: the last upload.) */
		const char *nk = r->next_key_marker, *nu = r->next_upload_id_marker;
		if ((!nk || !*nk) && r->n_uploads) {
			nk = r->uploads[r->n_uploads - 1]->key;
			nu = r->uploads[r->n_uploads - 1]->upload_id;
		}
		if (nk && *nk)
			s3o_key_elem(w, "NextKeyMarker", nk, url);
		if (nu && *nu)
			xml_elem(w, "NextUploadIdMarker", nu);
	}
	if (prefix)
		s3o_key_elem(w, "Prefix", prefix, url);
	if (delim && *delim)
		s3o_key_elem(w, "Delimiter", delim, url);
	xml_elem_u64(w, "MaxUploads", (uint64_t)(max > LIST_MAX ? LIST_MAX : max));
	if (url)
		xml_elem(w, "EncodingType", "url");
	xml_elem_bool(w, "IsTruncated", r->truncated);
	for (size_t i = 0; i < r->n_uploads; i++) {
		const Iolake__Meta__MultipartUpload *u = r->uploads[i];
		char d[40];
		s3o_iso_date(u->initiated_ms, d);
		xml_open(w, "Upload");
		s3o_key_elem(w, "Key", u->key, url);
		xml_elem(w, "UploadId", u->upload_id);
		owner_elems(w, "Initiator", u->owner);
		owner_elems(w, "Owner", u->owner);
		xml_elem(w, "StorageClass", "STANDARD");
		xml_elem(w, "Initiated", d);
		xml_close(w);
	}
	for (size_t i = 0; i < r->n_common_prefixes; i++) {
		xml_open(w, "CommonPrefixes");
		s3o_key_elem(w, "Prefix", r->common_prefixes[i], url);
		xml_close(w);
	}
	xml_close(w);
	s3_call_send_xml(x->c, 200);
}

static void op_list_uploads(struct s3_call *c)
{
	const struct s3_req *q = s3_call_req(c);
	long max = qnum(q, "max-uploads", LIST_MAX);
	const char *enc = s3o_qval(q, "encoding-type");
	if (max < 0) {
		s3_call_error(c, S3E_InvalidArgument, "max-uploads must be a non-negative integer");
		return;
	}
	if (enc && strcmp(enc, "url") != 0) {
		s3_call_error(c, S3E_InvalidArgument, "Invalid Encoding Method specified in Request");
		return;
	}
	struct opx *x = opx_new(c);
	if (!x) {
		s3_call_error(c, S3E_InternalError, NULL);
		return;
	}
	const char *prefix = s3o_qval(q, "prefix"), *km = s3o_qval(q, "key-marker");
	const char *um = s3o_qval(q, "upload-id-marker"), *delim = s3o_qval(q, "delimiter");
	Iolake__Meta__ListUploadsRequest req = IOLAKE__META__LIST_UPLOADS_REQUEST__INIT;
	req.bucket = x->bucket;
	req.prefix = (char *)(prefix ? prefix : "");
	req.key_marker = (char *)(km ? km : "");
	req.upload_id_marker = (char *)(um && km ? um : "");
	req.delimiter = (char *)(delim ? delim : "");
	req.max_uploads = max == 0 ? 1 : max > LIST_MAX ? LIST_MAX : (uint32_t)max;
	if (s3o_mcall(x, META_M_LIST_UPLOADS, &req.base, on_list_uploads))
		s3o_fail(x, S3E_ServiceUnavailable, NULL);
}

void s3_multipart_bind(struct s3_server_cfg *s)
{
	s->ops[S3_OP_CreateMultipartUpload] = op_create;
	s->ops[S3_OP_UploadPart] = op_upload_part;
	s->ops[S3_OP_CompleteMultipartUpload] = op_complete;
	s->ops[S3_OP_AbortMultipartUpload] = op_abort;
	s->ops[S3_OP_ListParts] = op_list_parts;
	s->ops[S3_OP_ListMultipartUploads] = op_list_uploads;
}
