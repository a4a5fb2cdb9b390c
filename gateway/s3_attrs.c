/*
 * s3_attrs.c — an object's checksums on the S3 surface: the record's
 * Checksum entries filled from a PUT's verified body (s3_call_checksum),
 * the x-amz-checksum-<algo> response headers of PutObject and of a
 * whole-object GetObject / HeadObject sent with x-amz-checksum-mode:
 * ENABLED (or, with partNumber=, the part's own), and
 * GetObjectAttributes (ETag, Checksum, ObjectSize, StorageClass,
 * ObjectParts: PartsCount, and the parts' sizes and checksums in
 * pages when the upload named a checksum algorithm).
 *
 * Invariant: a checksum goes out only for the bytes it was computed over —
 * the whole object, or one part read with partNumber= (that part's
 * value); a range gets none (a client would check the range's bytes
 * against the object's value). A multipart object's value is composite
 * ("<base64>-<parts>", x-amz-checksum-type COMPOSITE), which SDKs do not
 * check against a body, or FULL_OBJECT (the CRC of the whole object),
 * which they do.
 *
 * Owns nothing beyond the request's base; does not compute checksums
 * (gateway/s3_checksum and the front end do) nor store them (s3_put.c
 * commits what s3_attrs_record_checksum fills).
 *
 * Thread: the gateway loop.
 */
#include "gateway/s3_attrs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gateway/s3_handlers.h"
#include "gateway/s3_rq.h"
#include "gateway/s3_util.h"

bool s3_attrs_record_checksum(const struct s3_call *c, Iolake__Meta__Checksum *out)
{
	const struct s3_ck_value *v = s3_call_checksum(c);
	if (!v->algo)
		return false;
	iolake__meta__checksum__init(out);
	out->algo = (Iolake__Meta__ChecksumAlgo)v->algo;
	out->value.data = (uint8_t *)v->raw;
	out->value.len = v->len;
	return true;
}

/* The record's checksum as S3 spells it ("<base64>" or "<base64>-N");
 * false when it is not one we can show. */
static bool format_value(const Iolake__Meta__ObjectRecord *r, const Iolake__Meta__Checksum *ck,
			 char *out, size_t cap)
{
	struct s3_ck_value v = { .algo = (enum s3_ck_algo)ck->algo };
	if (!s3_ck_len(v.algo) || ck->value.len != s3_ck_len(v.algo))
		return false;
	v.len = (uint8_t)ck->value.len;
	memcpy(v.raw, ck->value.data, v.len);
	char b64[S3_CK_B64_MAX];
	s3_ck_to_base64(&v, b64);
	if (ck->composite)
		snprintf(out, cap, "%s-%u", b64, r->parts_count);
	else
		snprintf(out, cap, "%s", b64);
	return true;
}

bool s3_attrs_value(const Iolake__Meta__Checksum *ck, struct s3_ck_value *v)
{
	memset(v, 0, sizeof(*v));
	if (!ck || !s3_ck_len((enum s3_ck_algo)ck->algo) ||
	    ck->value.len != s3_ck_len((enum s3_ck_algo)ck->algo))
		return false;
	v->algo = (enum s3_ck_algo)ck->algo;
	v->len = (uint8_t)ck->value.len;
	memcpy(v->raw, ck->value.data, v->len);
	return true;
}

void s3_attrs_xml_checksum(struct xml_w *w, const Iolake__Meta__Checksum *ck, uint32_t parts)
{
	struct s3_ck_value v;
	if (!s3_attrs_value(ck, &v))
		return;
	char b64[S3_CK_B64_MAX], val[S3_CK_B64_MAX + 16], name[32];
	s3_ck_to_base64(&v, b64);
	if (ck->composite && parts)
		snprintf(val, sizeof(val), "%s-%u", b64, parts);
	else
		snprintf(val, sizeof(val), "%s", b64);
	snprintf(name, sizeof(name), "Checksum%s", s3_ck_name(v.algo));
	xml_elem(w, name, val);
}

void s3_attrs_part_checksum_headers(struct s3_call *c, const Iolake__Meta__ObjectRecord *r,
				    uint32_t part_number)
{
	/* part_list ascends by part number; parts may be sparse (1, 3, 7). */
	size_t lo = 0, hi = r->n_part_list;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r->part_list[mid]->part_number < part_number)
			lo = mid + 1;
		else
			hi = mid;
	}
	const Iolake__Meta__ObjectPart *p = lo < r->n_part_list &&
		r->part_list[lo]->part_number == part_number ? r->part_list[lo] : NULL;
	struct s3_ck_value v;
	char b64[S3_CK_B64_MAX];
	if (!p || !s3_attrs_value(p->checksum, &v) || !s3_ck_to_base64(&v, b64))
		return;
	struct http_stream *s = s3_call_stream(c);
	http_add_header(s, s3_ck_header(v.algo), b64);
	http_add_header(s, "x-amz-checksum-type", "COMPOSITE");
}

static const char *checksum_type(const Iolake__Meta__Checksum *ck)
{
	return ck->composite ? "COMPOSITE" : "FULL_OBJECT";
}

void s3_attrs_put_checksum_header(struct s3_call *c)
{
	const struct s3_ck_value *v = s3_call_checksum(c);
	char b64[S3_CK_B64_MAX];
	if (!v->algo || !s3_ck_to_base64(v, b64))
		return;
	http_add_header(s3_call_stream(c), s3_ck_header(v->algo), b64);
	http_add_header(s3_call_stream(c), "x-amz-checksum-type", "FULL_OBJECT");
}

bool s3_attrs_checksum_mode(struct s3_call *c)
{
	const struct sigv4_header *h = s3u_hdr(c, "x-amz-checksum-mode");
	return h && h->value_len == 7 && strncasecmp(h->value, "ENABLED", 7) == 0;
}

void s3_attrs_checksum_headers(struct s3_call *c, const Iolake__Meta__ObjectRecord *r)
{
	for (size_t i = 0; i < r->n_checksums; i++) {
		char v[S3_CK_B64_MAX + 16];
		if (!format_value(r, r->checksums[i], v, sizeof(v)))
			continue;
		struct http_stream *s = s3_call_stream(c);
		http_add_header(s, s3_ck_header((enum s3_ck_algo)r->checksums[i]->algo), v);
		http_add_header(s, "x-amz-checksum-type", checksum_type(r->checksums[i]));
		return; /* one algorithm per object */
	}
}

/* ------------------------------------------------------------ GetObjectAttributes */

enum {
	A_ETAG = 1 << 0,
	A_CHECKSUM = 1 << 1,
	A_PARTS = 1 << 2,
	A_STORAGE = 1 << 3,
	A_SIZE = 1 << 4,
};

/* x-amz-object-attributes: a comma-separated list of names. The mask, or
 * -1 when a name is unknown, 0 when the header is absent or empty. */
static int parse_attributes(struct s3_call *c)
{
	static const struct {
		const char *name;
		int bit;
	} names[] = { { "ETag", A_ETAG }, { "Checksum", A_CHECKSUM }, { "ObjectParts", A_PARTS },
		      { "StorageClass", A_STORAGE }, { "ObjectSize", A_SIZE } };
	const struct http_request *hr = s3_call_http(c);
	int mask = 0;
	/* SDKs send one header with commas; a client may repeat it. */
	for (size_t i = 0; i < hr->n_headers; i++) {
		const struct sigv4_header *h = &hr->headers[i];
		if (h->name_len != 23 || strncasecmp(h->name, "x-amz-object-attributes", 23) != 0)
			continue;
		const char *p = h->value, *end = h->value + h->value_len;
		while (p < end) {
			const char *q = memchr(p, ',', (size_t)(end - p));
			if (!q)
				q = end;
			const char *a = p, *b = q;
			while (a < b && (*a == ' ' || *a == '\t'))
				a++;
			while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
				b--;
			if (b > a) {
				int bit = 0;
				for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
					if (strlen(names[k].name) == (size_t)(b - a) &&
					    memcmp(names[k].name, a, (size_t)(b - a)) == 0)
						bit = names[k].bit;
				if (!bit)
					return -1;
				mask |= bit;
			}
			p = q + 1;
		}
	}
	return mask;
}

/* A page of the object's parts (ObjectRecord.part_list, ascending): the
 * parts after x-amz-part-number-marker, at most x-amz-max-parts (1,000 by
 * default and at most), found by binary search. */
static void attrs_parts(struct s3_call *c, struct xml_w *w, const Iolake__Meta__ObjectRecord *r)
{
	char v[24];
	unsigned long long marker = 0, max = 1000;
	if (s3u_hdr_str(c, "x-amz-part-number-marker", v, sizeof(v)))
		marker = strtoull(v, NULL, 10);
	if (s3u_hdr_str(c, "x-amz-max-parts", v, sizeof(v)))
		max = strtoull(v, NULL, 10);
	if (max > 1000)
		max = 1000;
	size_t lo = 0, hi = r->n_part_list;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r->part_list[mid]->part_number <= marker)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t end = lo + max < r->n_part_list ? lo + max : r->n_part_list;
	xml_elem_u64(w, "PartNumberMarker", marker);
	if (end > lo)
		xml_elem_u64(w, "NextPartNumberMarker", r->part_list[end - 1]->part_number);
	xml_elem_u64(w, "MaxParts", max);
	xml_elem_bool(w, "IsTruncated", end < r->n_part_list);
	for (size_t i = lo; i < end; i++) {
		const Iolake__Meta__ObjectPart *p = r->part_list[i];
		xml_open(w, "Part");
		xml_elem_u64(w, "PartNumber", p->part_number);
		xml_elem_u64(w, "Size", p->size);
		s3_attrs_xml_checksum(w, p->checksum, 0);
		xml_close(w);
	}
}

static void attrs_respond(struct s3_rq *rq, int mask, const Iolake__Meta__ObjectRecord *r)
{
	struct s3_call *c = rq->c;
	char date[40];
	s3u_http_date(r->mtime_ms, date);
	http_add_header(s3_call_stream(c), "Last-Modified", date);
	struct xml_w *w = s3_call_xml(c);
	xml_decl(w);
	xml_open_ns(w, "GetObjectAttributesResponse", S3_XMLNS);
	if (mask & A_ETAG)
		xml_elem(w, "ETag", r->etag ? r->etag : "");
	if ((mask & A_CHECKSUM) && r->n_checksums) {
		char v[S3_CK_B64_MAX + 16], name[32];
		const Iolake__Meta__Checksum *ck = r->checksums[0];
		if (format_value(r, ck, v, sizeof(v))) {
			xml_open(w, "Checksum");
			snprintf(name, sizeof(name), "Checksum%s", s3_ck_name((enum s3_ck_algo)ck->algo));
			xml_elem(w, name, v);
			xml_elem(w, "ChecksumType", checksum_type(ck));
			xml_close(w);
		}
	}
	if ((mask & A_PARTS) && r->parts_count) {
		xml_open(w, "ObjectParts");
		xml_elem_u64(w, "PartsCount", r->parts_count);   /* TotalPartsCount in the SDKs */
		if (r->n_part_list)
			attrs_parts(c, w, r);
		xml_close(w);
	}
	if (mask & A_STORAGE)
		xml_elem(w, "StorageClass",
			 r->storage_class && *r->storage_class ? r->storage_class : "STANDARD");
	if (mask & A_SIZE)
		xml_elem_u64(w, "ObjectSize", r->size);
	xml_close(w);
	s3_call_send_xml(c, 200);
}

static void on_attrs_head(struct s3_rq *rq, enum s3_err e, Iolake__Meta__ObjectRecord *rec)
{
	if (e == S3E_NoSuchKey)
		s3_rq_no_such_key(rq, rq->bucket);
	else if (e)
		s3_rq_fail(rq, e, NULL);
	else
		attrs_respond(rq, parse_attributes(rq->c), rec); /* checked before the call */
	s3u_free_msg(rec);
}

static void op_get_object_attributes(struct s3_call *c)
{
	int mask = parse_attributes(c);
	if (mask <= 0) {
		s3_call_error(c, S3E_InvalidArgument, mask < 0 ? "Invalid attribute name specified."
							: "The x-amz-object-attributes header "
							  "specifying the attributes to be retrieved "
							  "is either missing or empty");
		return;
	}
	struct s3_rq *rq = s3_rq_new(c, sizeof(*rq));
	if (rq)
		s3_rq_head(rq, rq->bucket, rq->key, on_attrs_head);
}

const struct s3_handler s3_attrs_handlers[] = {
	{ S3_OP_GetObjectAttributes, op_get_object_attributes, S3_ACT_GetObjectAttributes },
	S3_HANDLERS_END,
};
