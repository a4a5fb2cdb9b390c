/*
 * s3_list_parts.c — ListParts: one page of an upload's parts (part number
 * marker, max-parts, encoding-type=url), with the upload's checksum
 * algorithm and type and each part's checksum, from meta's ListParts.
 *
 * Does not create, complete or abort uploads (s3_multipart.c) nor upload
 * parts (s3_part.c).
 *
 * Thread: the gateway loop; no blocking call.
 */
#include <stdio.h>
#include <string.h>

#include "gateway/s3_attrs.h"
#include "gateway/s3_checksum.h"
#include "gateway/s3_handlers.h"
#include "gateway/s3_list.h"
#include "gateway/s3_rq.h"
#include "gateway/s3_util.h"

#define MPU_MAX_PARTS 10000
#define LIST_MAX 1000

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
	const char *enc = s3u_qval(q, "encoding-type");   /* else refused in op_list_parts */
	bool url = enc && !strcmp(enc, "url");
	struct xml_w *w = s3_call_xml(rq->c);
	xml_decl(w);
	xml_open_ns(w, "ListPartsResult", S3_XMLNS);
	xml_elem(w, "Bucket", rq->bucket);
	s3_list_key_elem(w, "Key", rq->key, url);
	xml_elem_n(w, "UploadId", q->upload_id, q->upload_id_len);
	s3u_owner_elems(w, "Initiator", owner);
	s3u_owner_elems(w, "Owner", owner);
	xml_elem(w, "StorageClass", "STANDARD");
	if (r->upload && r->upload->checksum_algo) {
		xml_elem(w, "ChecksumAlgorithm", s3_ck_name((enum s3_ck_algo)r->upload->checksum_algo));
		xml_elem(w, "ChecksumType", r->upload->checksum_full_object ? "FULL_OBJECT" : "COMPOSITE");
	}
	/* max-parts=0: meta was asked for one part, to say whether any
	 * follow; the page itself is empty. */
	size_t shown = max == 0 ? 0 : r->n_parts;
	xml_elem_u64(w, "PartNumberMarker", (uint64_t)marker);
	if (shown)
		xml_elem_u64(w, "NextPartNumberMarker", r->parts[shown - 1]->part_number);
	xml_elem_u64(w, "MaxParts", (uint64_t)max);
	if (url)
		xml_elem(w, "EncodingType", "url");
	xml_elem_bool(w, "IsTruncated", r->truncated || shown < r->n_parts);
	for (size_t i = 0; i < shown; i++) {
		const Iolake__Meta__Part *p = r->parts[i];
		char d[40], et[40];
		s3u_iso_date(p->mtime_ms, d);
		snprintf(et, sizeof(et), "\"%s\"", p->etag);
		xml_open(w, "Part");
		xml_elem_u64(w, "PartNumber", p->part_number);
		xml_elem(w, "LastModified", d);
		xml_elem(w, "ETag", et);
		xml_elem_u64(w, "Size", p->size);
		if (p->n_checksums)
			s3_attrs_xml_checksum(w, p->checksums[0], 0);
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
	const char *enc = s3u_qval(q, "encoding-type");
	if (enc && strcmp(enc, "url")) {
		s3_call_error(c, S3E_InvalidArgument, "Invalid Encoding Method specified in Request");
		return;
	}
	if (!s3u_upload_id_ok(q)) {
		s3_call_error(c, S3E_NoSuchUpload, NULL);
		return;
	}
	struct s3_rq *rq = s3_rq_new(c, sizeof(*rq));
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

const struct s3_handler s3_list_parts_handlers[] = {
	{ S3_OP_ListParts, op_list_parts, S3_ACT_ListMultipartUploadParts },
	S3_HANDLERS_END,
};
