/*
 * s3_copy.c — CopyObject and UploadPartCopy over one server-side copy
 * pump: the source's bytes (inline in its record, one layout, or one
 * layout per multipart segment) are read through gw_data GETs and fed to
 * the destination's PUT pipeline (s3_object.c: inline, or a gw_data PUT),
 * whose commit is PutObject's (CopyObject: the source's metadata with the
 * COPY directive, the request's with REPLACE; answered with
 * CopyObjectResult) or a part's (UploadPartCopy: s3_multipart.c,
 * answered with CopyPartResult). The destination's data is whole and
 * durable before anything is committed; a failed copy deletes what it
 * wrote.
 *
 * Checks before any byte moves: the destination bucket (or upload), the
 * source record, the x-amz-copy-source-if-* conditions (412
 * PreconditionFailed), the range (UploadPartCopy), 5 GiB.
 *
 * Reads are pulled only as fast as the PUT takes them: a piece the PUT's
 * window refused is held (one at a time) until on_writable.
 *
 * Thread: the gateway loop; no blocking call.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/err.h"
#include "common/log.h"
#include "gateway/gw_map.h"
#include "gateway/s3_ops_int.h"

#define ST(x) IOLAKE__META__STATUS__STATUS_##x

/* The source reader: bytes [pos, end) of a record, in order. */
struct src_reader {
	struct opx *x;
	const Iolake__Meta__ObjectRecord *rec;   /* cp->src */
	uint64_t pos, end;
	uint32_t seg;                 /* multipart: next segment to look at */
	struct gw_data_layout lay;    /* of the GET in flight */
	struct gw_data_get *get;
	bool get_done;                /* the GET in flight handed out everything */
};

struct copy {
	bool part;                    /* UploadPartCopy */
	bool replace;                 /* x-amz-metadata-directive: REPLACE */
	char *src_bucket, *src_key;
	uint64_t off, len;            /* source range */
	bool has_range;
	Iolake__Meta__ObjectRecord *src;
	struct src_reader rd;
	struct buf *held;             /* a piece the PUT has not taken yet */
	size_t held_off, held_len;
	const uint8_t *held_p;
	bool read_done, failed, finished;
};

static void reader_clear(struct src_reader *rd)
{
	if (rd->get) {
		gw_data_get_free(rd->get);
		rd->get = NULL;
	}
	gw_data_layout_clear(&rd->lay);
}

static void copy_free(void *p)
{
	struct copy *cp = p;
	reader_clear(&cp->rd);
	if (cp->held)
		buf_unref(cp->held);
	s3o_free_msg(cp->src);
	free(cp->src_bucket);
	free(cp->src_key);
	free(cp);
}

static void pump(struct opx *x);

static void on_src_readable(struct gw_data_get *g, void *ud)
{
	(void)g;
	struct opx *x = ud;
	if (x->c)
		pump(x);
}

/* Start the GET of the next run of the source: the whole layout of a
 * simple record, or the next segment of a multipart one. */
static int reader_next(struct src_reader *rd)
{
	struct opx *x = rd->x;
	const Iolake__Meta__ObjectRecord *r = rd->rec;
	reader_clear(rd);
	rd->get_done = false;
	uint64_t base = 0, n = rd->end - rd->pos;
	int rc;
	if (gw_rec_is_multipart(r)) {
		while (rd->seg < r->n_segments &&
		       r->segments[rd->seg]->offset + r->segments[rd->seg]->length <= rd->pos)
			rd->seg++;
		if (rd->seg >= r->n_segments || r->segments[rd->seg]->offset > rd->pos)
			return IOL_ECORRUPT;
		const Iolake__Meta__Segment *sg = r->segments[rd->seg++];
		base = sg->offset;
		if (sg->offset + sg->length < rd->end)
			n = sg->offset + sg->length - rd->pos;
		rc = gw_rec_seg_layout(sg, &rd->lay);
	} else {
		rc = gw_rec_layout(r, &rd->lay);
	}
	if (rc)
		return rc;
	struct gw_data_target t;
	if (gw_map_target(x->o->map, rd->lay.pg, &t))
		return IOL_EUNAVAILABLE;
	rc = gw_data_get_start(x->o->data, &t, &rd->lay, rd->pos - base, n, on_src_readable, x,
			       &rd->get);
	if (rc)
		return rc;
	rd->pos += n;
	return 0;
}

/* The next piece: 1 (*out is a reference), 0 (end), -EAGAIN, or an error. */
static int reader_read(struct src_reader *rd, struct buf_slice *out)
{
	const Iolake__Meta__ObjectRecord *r = rd->rec;
	if (gw_rec_is_inline(r)) {
		if (rd->pos >= rd->end)
			return 0;
		if (r->inline_data.len < rd->end)
			return IOL_ECORRUPT;
		struct buf *b = buf_copy(r->inline_data.data + rd->pos, rd->end - rd->pos);
		if (!b)
			return -ENOMEM;
		out->buf = b;
		out->off = 0;
		out->len = rd->end - rd->pos;
		rd->pos = rd->end;
		return 1;
	}
	for (;;) {
		if (rd->get && !rd->get_done) {
			int rc = gw_data_get_read(rd->get, out);
			if (rc != 0)
				return rc;
			rd->get_done = true;
		}
		if (rd->pos >= rd->end)
			return 0;
		int rc = reader_next(rd);
		if (rc)
			return rc;
	}
}

/* ------------------------------------------------------------ the pump */

static void copy_fail(struct opx *x, enum s3_err e, const char *msg)
{
	struct copy *cp = x->ext;
	if (cp->failed)
		return;
	cp->failed = true;
	reader_clear(&cp->rd);
	if (x->put && !x->data_done) {
		gw_data_put_free(x->put);   /* deletes what it wrote */
		x->put = NULL;
	}
	s3o_fail(x, e, msg);
}

/* Offer the held piece to the destination; true when it was all taken. */
static bool feed_held(struct opx *x)
{
	struct copy *cp = x->ext;
	while (cp->held_len) {
		size_t n;
		if (x->is_inline) {
			if (x->inl_len + cp->held_len > x->size)
				return false;
			memcpy(x->inl + x->inl_len, cp->held_p, cp->held_len);
			x->inl_len += cp->held_len;
			n = cp->held_len;
		} else {
			ssize_t w = gw_data_put_write(x->put, cp->held_p, cp->held_len);
			if (w < 0)
				return false;   /* on_done reports */
			if (w == 0)
				return false;   /* window full: on_writable */
			n = (size_t)w;
		}
		cp->held_p += n;
		cp->held_len -= n;
	}
	buf_unref(cp->held);
	cp->held = NULL;
	return true;
}

static void pump(struct opx *x)
{
	struct copy *cp = x->ext;
	while (x->c && !cp->failed && !cp->read_done) {
		if (cp->held && !feed_held(x))
			return;
		struct buf_slice sl;
		int rc = reader_read(&cp->rd, &sl);
		if (rc == -EAGAIN)
			return;
		if (rc < 0) {
			LOG_WARN("copy source read failed", "bucket=%s key=%s err=%s", cp->src_bucket,
				 LOG_Q(cp->src_key),
				 LOG_Q(cp->rd.get ? gw_data_get_error(cp->rd.get) : iol_strerror(rc)));
			copy_fail(x, rc == IOL_ECORRUPT ? S3E_InternalError : S3E_ServiceUnavailable,
				  rc == IOL_ECORRUPT ? "Unreadable source layout"
						     : "Not enough storage nodes reachable to read the source");
			return;
		}
		if (rc == 0) {
			cp->read_done = true;
			reader_clear(&cp->rd);
			break;
		}
		cp->held = sl.buf;
		cp->held_p = sl.buf->data + sl.off;
		cp->held_len = sl.len;
	}
	if (!x->c || cp->failed || !cp->read_done || cp->finished)
		return;
	cp->finished = true;
	if (x->is_inline) {
		if (x->inl_len != x->size) {
			copy_fail(x, S3E_InternalError, "Source shorter than its record");
			return;
		}
		s3o_put_ready(x);
	} else if (gw_data_put_finish(x->put)) {
		copy_fail(x, S3E_InternalError, "Source shorter than its record");
	}
	/* else on_done commits */
}

static void on_dst_writable(struct gw_data_put *p, void *ud)
{
	(void)p;
	struct opx *x = ud;
	if (x->c)
		pump(x);
}

static void on_dst_done(struct gw_data_put *p, int status, void *ud)
{
	struct opx *x = ud;
	if (status) {
		LOG_WARN("copy put failed", "bucket=%s key=%s err=%s", x->bucket, LOG_Q(x->key),
			 LOG_Q(gw_data_put_error(p)));
		copy_fail(x, status == IOL_EUNAVAILABLE ? S3E_ServiceUnavailable : S3E_InternalError,
			  status == IOL_EUNAVAILABLE ? "Not enough storage nodes reachable to store the object"
						     : NULL);
		return;
	}
	s3o_put_ready(x);
}

static void copy_start(struct opx *x)
{
	struct copy *cp = x->ext;
	x->size = cp->len;
	x->is_inline = cp->part ? cp->len == 0 : cp->len <= x->o->inline_max;
	if (x->is_inline && cp->len && !(x->inl = malloc(cp->len))) {
		s3o_fail(x, S3E_InternalError, NULL);
		return;
	}
	if (gw_map_object_pg(x->o->map, x->bucket, x->key, &x->pg)) {
		if (!x->is_inline) {
			s3o_fail(x, S3E_ServiceUnavailable, "No cluster map yet");
			return;
		}
		x->pg = 0;
	}
	if (!x->is_inline) {
		struct gw_data_put_cbs cbs = { .on_writable = on_dst_writable, .on_done = on_dst_done };
		if (gw_map_target(x->o->map, x->pg, &x->target) ||
		    gw_data_put_start(x->o->data, &x->target, x->size, NULL, &cbs, x, &x->put)) {
			s3o_fail(x, S3E_ServiceUnavailable, "No cluster map yet");
			return;
		}
	}
	if (!cp->replace && !cp->part)
		x->meta_from = cp->src;
	cp->rd.x = x;
	cp->rd.rec = cp->src;
	cp->rd.pos = cp->off;
	cp->rd.end = cp->off + cp->len;
	pump(x);
}

/* ------------------------------------------------------------ conditions */

/* An HTTP date (RFC 7231 IMF-fixdate) as Unix seconds; -1 when it is not
 * one (S3 then ignores the condition). */
static long long http_time(const char *s)
{
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	const char *end = strptime(s, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	if (!end || *end)
		return -1;
	return (long long)timegm(&tm);
}

static bool etag_matches(const char *cond, const char *etag)
{
	/* A list of quoted or bare ETags, or "*". */
	char buf[512];
	snprintf(buf, sizeof(buf), "%s", cond);
	char *save = NULL;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		while (*t == ' ')
			t++;
		size_t n = strlen(t);
		while (n && t[n - 1] == ' ')
			t[--n] = 0;
		if (strcmp(t, "*") == 0)
			return true;
		if (n >= 2 && t[0] == '"' && t[n - 1] == '"') {
			t[n - 1] = 0;
			t++;
		}
		if (strcmp(t, etag) == 0)
			return true;
	}
	return false;
}

/* x-amz-copy-source-if-*: true when the copy may go ahead. As S3: a
 * matching if-match overrides a failing if-unmodified-since, and a
 * failing if-none-match is not rescued by if-modified-since. */
static bool conditions_hold(struct s3_call *c, const Iolake__Meta__ObjectRecord *src)
{
	char v[512];
	const char *etag = src->etag ? src->etag : "";
	long long mtime = (long long)(src->mtime_ms / 1000);
	bool has_match = s3o_hdr_str(c, "x-amz-copy-source-if-match", v, sizeof(v)) != NULL;
	if (has_match && !etag_matches(v, etag))
		return false;
	if (!has_match && s3o_hdr_str(c, "x-amz-copy-source-if-unmodified-since", v, sizeof(v))) {
		long long t = http_time(v);
		if (t >= 0 && mtime > t)
			return false;
	}
	bool has_none = s3o_hdr_str(c, "x-amz-copy-source-if-none-match", v, sizeof(v)) != NULL;
	if (has_none && etag_matches(v, etag))
		return false;
	if (!has_none && s3o_hdr_str(c, "x-amz-copy-source-if-modified-since", v, sizeof(v))) {
		long long t = http_time(v);
		if (t >= 0 && mtime <= t)
			return false;
	}
	return true;
}

/* x-amz-copy-source-range: bytes=a-b within size. */
static bool parse_copy_range(const char *v, uint64_t size, uint64_t *off, uint64_t *len)
{
	if (strncmp(v, "bytes=", 6) != 0)
		return false;
	char *end;
	const char *p = v + 6;
	unsigned long long a = strtoull(p, &end, 10);
	if (end == p || *end != '-')
		return false;
	p = end + 1;
	unsigned long long b = strtoull(p, &end, 10);
	if (end == p || *end || b < a || b >= size)
		return false;
	*off = a;
	*len = b - a + 1;
	return true;
}

/* ------------------------------------------------------------ the steps */

static void on_src_bucket(void *ud, int err, const ProtobufCMessage *resp)
{
	struct opx *x = ud;
	if (!opx_back(x))
		return;
	const Iolake__Meta__GetBucketResponse *r = (const void *)resp;
	if (err && err != IOL_ENOT_FOUND)
		s3o_fail(x, s3o_meta_err(err), NULL);
	else
		s3o_fail(x, !err && r->status == ST(OK) ? S3E_NoSuchKey : S3E_NoSuchBucket, NULL);
}

static void on_src(void *ud, int err, const ProtobufCMessage *resp)
{
	struct opx *x = ud;
	struct copy *cp = x->ext;
	if (!opx_back(x))
		return;
	const Iolake__Meta__HeadObjectResponse *r = (const void *)resp;
	if (err && err != IOL_ENOT_FOUND) {
		s3o_fail(x, s3o_meta_err(err), NULL);
		return;
	}
	if (err || r->status != ST(OK) || !r->record) {
		Iolake__Meta__GetBucketRequest req = IOLAKE__META__GET_BUCKET_REQUEST__INIT;
		req.name = cp->src_bucket;
		if (s3o_mcall(x, META_M_GET_BUCKET, &req.base, on_src_bucket))
			s3o_fail(x, S3E_ServiceUnavailable, NULL);
		return;
	}
	if (!(cp->src = (Iolake__Meta__ObjectRecord *)s3o_copy_msg(&r->record->base))) {
		s3o_fail(x, S3E_InternalError, NULL);
		return;
	}
	if (!conditions_hold(x->c, cp->src)) {
		s3o_fail(x, S3E_PreconditionFailed, NULL);
		return;
	}
	cp->off = 0;
	cp->len = cp->src->size;
	char v[128];
	if (cp->part && s3o_hdr_str(x->c, "x-amz-copy-source-range", v, sizeof(v)) &&
	    !parse_copy_range(v, cp->src->size, &cp->off, &cp->len)) {
		char msg[128];
		snprintf(msg, sizeof(msg), "Range specified is not valid for source object of size: %llu",
			 (unsigned long long)cp->src->size);
		s3o_fail(x, S3E_InvalidArgument, msg);
		return;
	}
	if (cp->len > S3_MAX_PUT_BYTES) {
		s3o_fail(x, S3E_InvalidRequest,
			 "The specified copy source is larger than the maximum allowable size for a copy source: 5368709120");
		return;
	}
	copy_start(x);
}

static void read_src(struct opx *x)
{
	struct copy *cp = x->ext;
	Iolake__Meta__HeadObjectRequest req = IOLAKE__META__HEAD_OBJECT_REQUEST__INIT;
	req.bucket = cp->src_bucket;
	req.key = cp->src_key;
	if (s3o_mcall(x, META_M_HEAD_OBJECT, &req.base, on_src))
		s3o_fail(x, S3E_ServiceUnavailable, NULL);
}

/* The destination exists (bucket, or upload for a part): read the source. */
static void on_dst(void *ud, int err, const ProtobufCMessage *resp)
{
	struct opx *x = ud;
	struct copy *cp = x->ext;
	if (!opx_back(x))
		return;
	/* GetBucketResponse and GetUploadResponse both lead with status. */
	Iolake__Meta__Status st = err ? ST(NOT_FOUND)
				      : cp->part ? ((const Iolake__Meta__GetUploadResponse *)resp)->status
						 : ((const Iolake__Meta__GetBucketResponse *)resp)->status;
	if (err && err != IOL_ENOT_FOUND)
		s3o_fail(x, s3o_meta_err(err), NULL);
	else if (st != ST(OK))
		s3o_fail(x, cp->part ? S3E_NoSuchUpload : S3E_NoSuchBucket, NULL);
	else
		read_src(x);
}

static void copy_respond(struct opx *x)
{
	char d[40], etag[40];
	s3o_iso_date(x->mtime_ms, d);
	snprintf(etag, sizeof(etag), "\"%s\"", x->etag);
	struct xml_w *w = s3_call_xml(x->c);
	xml_decl(w);
	xml_open_ns(w, "CopyObjectResult", S3_XMLNS);
	xml_elem(w, "LastModified", d);
	xml_elem(w, "ETag", etag);
	xml_close(w);
	s3_call_send_xml(x->c, 200);
}

/* x-amz-copy-source: [/]bucket/key[?versionId=…], percent-encoded. */
static enum s3_err parse_source(struct s3_call *c, struct copy *cp)
{
	const struct sigv4_header *h = s3o_hdr(c, "x-amz-copy-source");
	if (!h || !h->value_len)
		return S3E_InvalidArgument;
	char *dec = malloc(h->value_len + 1);
	if (!dec)
		return S3E_InternalError;
	size_t n = h->value_len;
	const char *q = memchr(h->value, '?', n);
	if (q) {
		/* Only the current version exists here. */
		if (strncmp(q + 1, "versionId=null", n - (size_t)(q + 1 - h->value)) != 0 ||
		    n - (size_t)(q + 1 - h->value) != 14) {
			free(dec);
			return S3E_NotImplemented;
		}
		n = (size_t)(q - h->value);
	}
	long dn = s3_pct_decode(dec, h->value, n, false);
	if (dn < 0) {
		free(dec);
		return S3E_InvalidArgument;
	}
	dec[dn] = 0;
	char *p = dec + (dec[0] == '/');
	char *slash = strchr(p, '/');
	if (!slash || slash == p || !slash[1] || !s3_bucket_name_valid(p, (size_t)(slash - p)) ||
	    strlen(slash + 1) > 1024 || memchr(dec, 0, (size_t)dn)) {
		free(dec);
		return S3E_InvalidArgument;
	}
	*slash = 0;
	cp->src_bucket = strdup(p);
	cp->src_key = strdup(slash + 1);
	free(dec);
	return cp->src_bucket && cp->src_key ? S3E_OK : S3E_InternalError;
}

static void copy_begin(struct s3_call *c, bool part)
{
	struct opx *x = opx_new(c);
	if (!x) {
		s3_call_error(c, S3E_InternalError, NULL);
		return;
	}
	struct copy *cp = calloc(1, sizeof(*cp));
	if (!cp) {
		s3o_fail(x, S3E_InternalError, NULL);
		return;
	}
	cp->part = part;
	x->ext = cp;
	x->ext_free = copy_free;
	enum s3_err e = parse_source(c, cp);
	if (e) {
		s3o_fail(x, e, e == S3E_InvalidArgument ? "Invalid copy source" : NULL);
		return;
	}
	char v[32];
	if (!part && s3o_hdr_str(c, "x-amz-metadata-directive", v, sizeof(v))) {
		if (strcmp(v, "REPLACE") == 0)
			cp->replace = true;
		else if (strcmp(v, "COPY") != 0) {
			s3o_fail(x, S3E_InvalidArgument, "Unknown metadata directive.");
			return;
		}
	}
	if (!part && !cp->replace && strcmp(cp->src_bucket, x->bucket) == 0 &&
	    strcmp(cp->src_key, x->key) == 0) {
		s3o_fail(x, S3E_InvalidRequest,
			 "This copy request is illegal because it is trying to copy an object to itself "
			 "without changing the object's metadata, storage class, website redirect "
			 "location or encryption attributes.");
		return;
	}
	int rc;
	if (part) {
		const struct s3_req *r = s3_call_req(c);
		bool id_ok = r->upload_id && r->upload_id_len == 16;
		for (size_t i = 0; id_ok && i < 16; i++)
			id_ok = (r->upload_id[i] >= '0' && r->upload_id[i] <= '9') ||
				(r->upload_id[i] >= 'a' && r->upload_id[i] <= 'f');
		if (!id_ok) {
			s3o_fail(x, S3E_NoSuchUpload, NULL);
			return;
		}
		if (s3_mpu_part_setup(x, true)) {
			s3o_fail(x, S3E_InternalError, NULL);
			return;
		}
		Iolake__Meta__GetUploadRequest req = IOLAKE__META__GET_UPLOAD_REQUEST__INIT;
		char id[17];
		memcpy(id, r->upload_id, 16);
		id[16] = 0;
		req.bucket = x->bucket;
		req.key = x->key;
		req.upload_id = id;
		rc = s3o_mcall(x, META_M_GET_UPLOAD, &req.base, on_dst);
	} else {
		x->respond = copy_respond;
		Iolake__Meta__GetBucketRequest req = IOLAKE__META__GET_BUCKET_REQUEST__INIT;
		req.name = x->bucket;
		rc = s3o_mcall(x, META_M_GET_BUCKET, &req.base, on_dst);
	}
	if (rc)
		s3o_fail(x, S3E_ServiceUnavailable, NULL);
}

static void op_copy_object(struct s3_call *c)
{
	copy_begin(c, false);
}

static void op_upload_part_copy(struct s3_call *c)
{
	copy_begin(c, true);
}

void s3_copy_bind(struct s3_server_cfg *s)
{
	s->ops[S3_OP_CopyObject] = op_copy_object;
	s->ops[S3_OP_UploadPartCopy] = op_upload_part_copy;
}
