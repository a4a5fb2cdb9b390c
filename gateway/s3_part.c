/*
 * s3_part.c — UploadPart, and the part commit it shares with
 * UploadPartCopy (s3_part.h). A part is the PUT pipeline (s3_put.h) with
 * no inline body (only an empty part has no shards) and this commit; its
 * encoded layout travels in Part.segment.data_layout, its additional
 * checksum (the upload's algorithm, verified against the request's header
 * or trailer, else computed) in Part.checksums.
 *
 * Space: the part it replaced (listed by the GetUpload just before the
 * commit) is freed by this request after its commit; a PutPart that lost a
 * race (CONFLICT) reads again and retries, so each replaced part is freed
 * exactly once.
 *
 * Does not create, complete, abort or list uploads (s3_multipart.c).
 *
 * Thread: the gateway loop; no blocking call.
 */
#include "gateway/s3_part.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/gw_rec.h"
#include "gateway/s3_attrs.h"
#include "gateway/s3_handlers.h"
#include "gateway/s3_util.h"
#include "gateway/s3_quota.h"

static void part_commit(struct s3_put *p);

static void part_respond(struct s3_put *p, const struct s3_part *mp)
{
	struct s3_call *c = p->rq.c;
	char etag[40];
	snprintf(etag, sizeof(etag), "\"%s\"", p->etag);
	if (p->sse)
		s3_sse_headers(c, s3_sse_put_obj(p->sse));
	if (!mp->copy) {
		http_add_header(s3_call_stream(c), "ETag", etag);
		const struct s3_ck_value *v = s3_call_checksum(c);
		char b64[S3_CK_B64_MAX];
		if (v->algo && s3_ck_to_base64(v, b64))
			http_add_header(s3_call_stream(c), s3_ck_header(v->algo), b64);
		http_respond(s3_call_stream(c), 200, NULL, 0, NULL, NULL);
		return;
	}
	char d[40];
	s3u_iso_date(p->mtime_ms, d);
	struct xml_w *w = s3_call_xml(c);
	xml_decl(w);
	xml_open_ns(w, "CopyPartResult", S3_XMLNS);
	xml_elem(w, "LastModified", d);
	xml_elem(w, "ETag", etag);
	char b64[S3_CK_B64_MAX], name[32];
	if (mp->ck_value.algo && s3_ck_to_base64(&mp->ck_value, b64)) {
		snprintf(name, sizeof(name), "Checksum%s", s3_ck_name(mp->ck_value.algo));
		xml_elem(w, name, b64);
	}
	xml_close(w);
	s3_call_send_xml(c, 200);
}

static void on_part_commit(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__OpResult *res)
{
	struct s3_put *p = s3_put_of(rq);
	struct s3_part *mp = p->commit_ud;
	switch (s3_put_committed(p, e, res)) {
	case S3_PUT_COMMITTED:
		if (mp->prev && mp->prev->segment)
			gw_rec_drop_encoded(rq->o->map, rq->o->data, mp->prev->segment->data_layout.data,
					    mp->prev->segment->data_layout.len);
		if (rq->c)
			part_respond(p, mp);
		break;
	case S3_PUT_RETRY:
		part_commit(p);   /* another upload of this part number won: go again */
		break;
	case S3_PUT_FAILED:
		break;
	}
}

static void part_submit(struct s3_put *p)
{
	struct s3_rq *rq = &p->rq;
	struct s3_part *mp = p->commit_ud;
	Iolake__Meta__Segment sg = IOLAKE__META__SEGMENT__INIT;
	Iolake__Meta__Part part = IOLAKE__META__PART__INIT;
	part.upload_id = mp->upload_id;
	part.part_number = mp->part_number;
	part.size = p->size;
	part.etag = p->etag;
	part.mtime_ms = p->mtime_ms;
	/* The body's checksum: the upload's algorithm (s3_call_checksum_want)
	 * or the one the request named. */
	Iolake__Meta__Checksum ck, *pck = &ck;
	if (mp->copy && mp->ck_value.algo) {
		iolake__meta__checksum__init(&ck);
		ck.algo = (Iolake__Meta__ChecksumAlgo)mp->ck_value.algo;
		ck.value.data = mp->ck_value.raw;
		ck.value.len = mp->ck_value.len;
		part.n_checksums = 1;
		part.checksums = &pck;
	} else if (!mp->copy && rq->c && s3_attrs_record_checksum(rq->c, &ck)) {
		part.n_checksums = 1;
		part.checksums = &pck;
	}
	uint8_t *lbuf = NULL;
	if (!p->is_inline) {
		if (gw_rec_put_layout(p->put, &lbuf, &sg.data_layout.len)) {
			s3_put_drop_new(p);
			s3_rq_fail(rq, S3E_InternalError, NULL);
			return;
		}
		sg.length = p->size;
		sg.stripe_count = gw_data_put_layout(p->put)->nsegs;
		sg.part_number = mp->part_number;
		sg.data_layout.data = lbuf;
		part.segment = &sg;
	}
	Iolake__Meta__PutPart pp = IOLAKE__META__PUT_PART__INIT;
	pp.bucket = rq->bucket;
	pp.key = rq->key;
	pp.upload_id = mp->upload_id;
	pp.part = &part;
	pp.conditional = true;
	pp.if_generation = mp->prev ? mp->prev->generation : 0;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_PUT_PART;
	op.put_part = &pp;
	int rc = s3_rq_submit(rq, &op, S3_SUBJ_UPLOAD, on_part_commit);
	free(lbuf);
	if (rc)
		s3_put_drop_new(p);
}

static void on_part_prev(struct s3_rq *rq, enum s3_err e, const ProtobufCMessage *resp)
{
	struct s3_put *p = s3_put_of(rq);
	struct s3_part *mp = p->commit_ud;
	if (e) {
		s3_put_drop_new(p);
		s3_rq_fail(rq, e, NULL);
		return;
	}
	const Iolake__Meta__GetUploadResponse *r = (const void *)resp;
	s3u_free_msg(mp->prev);
	mp->prev = r->part ? (Iolake__Meta__Part *)s3u_copy_msg(&r->part->base) : NULL;
	if (r->part && !mp->prev) {
		s3_put_drop_new(p);
		s3_rq_fail(rq, S3E_InternalError, NULL);
		return;
	}
	part_submit(p);
}

/* Data durable (p->etag set): read the part it replaces, then commit
 * conditionally on that part's generation. */
static void part_commit(struct s3_put *p)
{
	struct s3_part *mp = p->commit_ud;
	Iolake__Meta__GetUploadRequest req = IOLAKE__META__GET_UPLOAD_REQUEST__INIT;
	req.bucket = p->rq.bucket;
	req.key = p->rq.key;
	req.upload_id = mp->upload_id;
	req.part_number = mp->part_number;
	if (s3_rq_call(&p->rq, META_M_GET_UPLOAD, &req.base, S3_SUBJ_UPLOAD_READ, on_part_prev))
		s3_put_drop_new(p);
}

void s3_part_setup(struct s3_put *p, struct s3_part *mp, bool copy)
{
	const struct s3_req *r = s3_call_req(p->rq.c);
	memcpy(mp->upload_id, r->upload_id, 16);
	mp->upload_id[16] = 0;
	mp->part_number = r->part_number;
	mp->copy = copy;
	p->commit = part_commit;
	p->commit_ud = mp;
}

void s3_part_fini(struct s3_part *mp)
{
	s3u_free_msg(mp->prev);
	if (mp->ck) {
		s3_ck_free(mp->ck);
		free(mp->ck);
		mp->ck = NULL;
	}
}

int s3_part_ck_begin(struct s3_part *mp, enum s3_ck_algo a)
{
	mp->ck_value.algo = S3_CK_NONE;
	if (!a)
		return 0;
	if (!mp->ck) {
		if (!(mp->ck = malloc(sizeof(*mp->ck))))
			return -ENOMEM;
		if (s3_ck_init(mp->ck)) {
			free(mp->ck);
			mp->ck = NULL;
			return -ENOMEM;
		}
	}
	s3_ck_begin(mp->ck, a);
	return 0;
}

void s3_part_ck_update(struct s3_part *mp, const void *data, size_t len)
{
	if (mp->ck)
		s3_ck_update(mp->ck, data, len);
}

void s3_part_ck_final(struct s3_part *mp)
{
	if (mp->ck)
		s3_ck_final(mp->ck, &mp->ck_value);
}

/* ------------------------------------------------------------ UploadPart */

struct part_rq {
	struct s3_put put;
	struct s3_part part;
};

static void part_rq_fini(struct s3_rq *rq)
{
	struct part_rq *pr = container_of(rq, struct part_rq, put.rq);
	s3_part_fini(&pr->part);
	s3_put_fini(rq);
}

/* The upload exists: its checksum algorithm is the part's (a part naming
 * another is InvalidRequest; one naming none gets it computed). */
static void on_upload_checked(struct s3_rq *rq, enum s3_err e, const ProtobufCMessage *resp)
{
	const Iolake__Meta__GetUploadResponse *r = (const void *)resp;
	if (!e && rq->c && r && r->upload)
		s3_call_checksum_want(rq->c, (enum s3_ck_algo)r->upload->checksum_algo);
	if (!e && rq->c && r && r->upload && r->upload->meta) {
		/* The upload's encryption (its key, for SSE-C) is the part's. */
		struct s3_sse_obj so;
		const char *msg;
		e = s3_sse_for_read(rq->c, r->upload->meta, false, &so, &msg);
		int rc = e ? 0 : s3_put_encrypt(s3_put_of(rq), &so);
		s3_sse_obj_wipe(&so);
		if (e) {
			s3_rq_fail(rq, e, msg);
			return;
		}
		if (rc)
			return;
	}
	s3_put_on_checked(rq, e, resp);
}

static void op_upload_part(struct s3_call *c)
{
	if (!s3u_upload_id_ok(s3_call_req(c))) {
		s3_call_error(c, S3E_NoSuchUpload, NULL);
		return;
	}
	struct part_rq *pr = (struct part_rq *)s3_put_begin(c, sizeof(*pr), false);
	if (!pr)
		return;
	pr->put.rq.fini = part_rq_fini;
	s3_part_setup(&pr->put, &pr->part, false);
	enum s3_err qe = s3_quota_check(s3_rq_gate_bucket(&pr->put.rq), pr->put.size, 0);
	if (qe) {
		s3_rq_fail(&pr->put.rq, qe, NULL);
		return;
	}
	Iolake__Meta__GetUploadRequest req = IOLAKE__META__GET_UPLOAD_REQUEST__INIT;
	req.bucket = pr->put.rq.bucket;
	req.key = pr->put.rq.key;
	req.upload_id = pr->part.upload_id;
	s3_rq_call(&pr->put.rq, META_M_GET_UPLOAD, &req.base, S3_SUBJ_UPLOAD_READ, on_upload_checked);
}

const struct s3_handler s3_part_handlers[] = {
	{ S3_OP_UploadPart, op_upload_part, S3_ACT_PutObject },
	S3_HANDLERS_END,
};
