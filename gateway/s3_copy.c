/*
 * s3_copy.c — CopyObject and UploadPartCopy over one server-side copy
 * pump: the source's bytes (inline in its record, one layout, or one
 * layout per multipart segment) are read through gw_data GETs and fed to
 * the destination's PUT pipeline (s3_put.h: inline, or a gw_data PUT),
 * whose commit is PutObject's (CopyObject: the source's metadata with the
 * COPY directive, the request's with REPLACE; answered with
 * CopyObjectResult) or a part's (UploadPartCopy: s3_part.h, answered
 * with CopyPartResult). The destination's data is whole and durable
 * before anything is committed; a failed copy deletes what it wrote.
 *
 * Checks before any byte moves: the destination bucket (or upload), the
 * source record, the x-amz-copy-source-if-* conditions (412
 * PreconditionFailed), the range (UploadPartCopy), 5 GiB.
 *
 * Reads are pulled only as fast as the PUT takes them: a piece the PUT's
 * window refused is held (one at a time) until on_writable.
 *
 * Owns the source's record, its reader (layout and gw_data GET) and the
 * piece held; the destination's state is the PUT pipeline's. Never shares
 * a layout between two records: a copy writes new shards (gw_gc.c relies
 * on it).
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
#include "gateway/gw_rec.h"
#include "gateway/s3_handlers.h"
#include "gateway/s3_lock.h"
#include "gateway/s3_part.h"
#include "gateway/s3_prows.h"
#include "gateway/s3_put.h"
#include "gateway/s3_util.h"
#include "gateway/s3_version.h"
#include "gateway/s3_quota.h"

/* The source reader: bytes [pos, end) of a record, in order. */
struct src_reader {
	struct copy_rq *cr;
	const Iolake__Meta__ObjectRecord *rec;   /* cr->src */
	uint64_t pos, end;
	uint32_t seg;                 /* multipart: next segment to look at */
	struct gw_data_layout lay;    /* of the GET in flight */
	struct gw_data_get *get;
	bool get_done;                /* the GET in flight handed out everything */
	/* A source whose layouts are in part rows (issue 18, s3_prows.h). */
	bool rows, rows_wait;
	struct s3_prows prows;
};

struct copy_rq {
	struct s3_put put;            /* the destination */
	struct s3_part part;          /* UploadPartCopy's commit */
	bool is_part;                 /* UploadPartCopy */
	bool replace;                 /* x-amz-metadata-directive: REPLACE */
	char *src_bucket, *src_key;
	char *src_vid;                /* x-amz-copy-source's versionId; NULL: current */
	uint64_t off, len;            /* source range */
	Iolake__Meta__ObjectRecord *src;
	struct src_reader rd;
	int src_err;                  /* a failed read of the source (src_read_failed) */
	struct buf *held;             /* a piece the PUT has not taken yet */
	size_t held_len;
	const uint8_t *held_p;
	bool read_done, failed, finished;
	/* Encryption (s3_sse.h): the source's key and decryptor (NULL: a
	 * plain source), and what the destination gets. */
	struct s3_sse_obj src_sse, dst_sse;
	struct s3_sse_get *src_dec;
};

static struct copy_rq *copy_of(struct s3_rq *rq)
{
	return container_of(rq, struct copy_rq, put.rq);
}

static void reader_clear(struct src_reader *rd)
{
	if (rd->get) {
		gw_data_get_free(rd->get);
		rd->get = NULL;
	}
	gw_data_layout_clear(&rd->lay);
}

static void copy_fini(struct s3_rq *rq)
{
	struct copy_rq *cr = copy_of(rq);
	reader_clear(&cr->rd);
	s3_prows_clear(&cr->rd.prows);
	if (cr->held)
		buf_unref(cr->held);
	s3_sse_get_free(cr->src_dec);
	s3_sse_obj_wipe(&cr->src_sse);
	s3_sse_obj_wipe(&cr->dst_sse);
	s3u_free_msg(cr->src);
	free(cr->src_bucket);
	free(cr->src_key);
	free(cr->src_vid);
	s3_part_fini(&cr->part);
	s3_put_fini(rq);
}

static void pump(struct copy_rq *cr);
static void copy_fail(struct copy_rq *cr, enum s3_err e, const char *msg);
static void src_read_failed(struct copy_rq *cr, int rc);

static void on_src_readable(struct gw_data_get *g, void *ud)
{
	(void)g;
	struct copy_rq *cr = ud;
	if (cr->put.rq.c)
		pump(cr);
}

/* The source's part rows came (issue 18): go on reading. */
static void on_src_rows(struct s3_rq *rq, enum s3_err e, const ProtobufCMessage *resp)
{
	struct copy_rq *cr = copy_of(rq);
	cr->rd.rows_wait = false;
	e = s3_prows_take(&cr->rd.prows, e, resp);
	if (e)
		src_read_failed(cr, e == S3E_InternalError ? IOL_ECORRUPT : IOL_EUNAVAILABLE);
	else
		pump(cr);
}

/* Start the GET of the next run of the source: the whole layout of a
 * simple record, or the next segment of a multipart one (-EAGAIN while
 * the part row of a part-rows source is read). */
static int reader_next(struct src_reader *rd)
{
	struct s3_ops *o = rd->cr->put.rq.o;
	const Iolake__Meta__ObjectRecord *r = rd->rec;
	if (rd->rows_wait)
		return -EAGAIN;
	reader_clear(rd);
	rd->get_done = false;
	uint64_t base = 0, n = rd->end - rd->pos, run = r->size;   /* run: the stored run's plaintext */
	int rc;
	if (rd->rows) {
		const Iolake__Meta__Segment *sg = NULL;
		rc = s3_prows_seg(&rd->prows, rd->pos, &sg);
		if (rc == -EAGAIN) {
			if (s3_prows_fetch(&rd->prows, &rd->cr->put.rq, on_src_rows)) {
				copy_fail(rd->cr, S3E_OK, NULL);   /* answered already */
				return -EAGAIN;
			}
			rd->rows_wait = true;
			return -EAGAIN;
		}
		if (rc)
			return rc;
		base = sg->offset;
		run = sg->length;
		if (sg->offset + sg->length < rd->end)
			n = sg->offset + sg->length - rd->pos;
		rc = gw_rec_seg_layout(r, sg, &rd->lay);
	} else if (gw_rec_is_multipart(r)) {
		while (rd->seg < r->n_segments &&
		       r->segments[rd->seg]->offset + r->segments[rd->seg]->length <= rd->pos)
			rd->seg++;
		if (rd->seg >= r->n_segments || r->segments[rd->seg]->offset > rd->pos)
			return IOL_ECORRUPT;
		const Iolake__Meta__Segment *sg = r->segments[rd->seg++];
		base = sg->offset;
		run = sg->length;
		if (sg->offset + sg->length < rd->end)
			n = sg->offset + sg->length - rd->pos;
		rc = gw_rec_seg_layout(r, sg, &rd->lay);
	} else {
		rc = gw_rec_layout(r, &rd->lay);
	}
	if (rc)
		return rc;
	struct gw_data_target t;
	if (s3_rq_target(&rd->cr->put.rq, rd->lay.pg, &t))
		return IOL_EUNAVAILABLE;
	uint64_t soff = rd->pos - base, slen = n;
	struct s3_sse_get *dec = rd->cr->src_dec;
	if (dec && (rc = s3_sse_get_run(dec, &rd->lay, run, soff, n, &soff, &slen)))
		return rc;
	rc = gw_data_get_start(o->data, &t, &rd->lay, soff, slen, on_src_readable, rd->cr, &rd->get);
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
			int rc = rd->cr->src_dec ? s3_sse_get_read(rd->cr->src_dec, rd->get, out)
						 : gw_data_get_read(rd->get, out);
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

static void copy_fail(struct copy_rq *cr, enum s3_err e, const char *msg)
{
	struct s3_put *p = &cr->put;
	if (cr->failed)
		return;
	cr->failed = true;
	reader_clear(&cr->rd);
	if (p->put && !p->data_done) {
		gw_data_put_free(p->put);   /* deletes what it wrote */
		p->put = NULL;
	}
	if (e)   /* S3E_OK: the error was answered already */
		s3_rq_fail(&p->rq, e, msg);
}

/* Offer the held piece to the destination; true when it was all taken. */
static bool feed_held(struct copy_rq *cr)
{
	struct s3_put *p = &cr->put;
	while (cr->held_len) {
		size_t n;
		if (p->is_inline) {
			if (p->inl_len + cr->held_len > p->size)
				return false;
			memcpy(p->inl + p->inl_len, cr->held_p, cr->held_len);
			p->inl_len += cr->held_len;
			n = cr->held_len;
		} else {
			ssize_t w = gw_data_put_write(p->put, cr->held_p, cr->held_len);
			if (w < 0)
				return false;   /* on_done reports */
			if (w == 0)
				return false;   /* window full: on_writable */
			n = (size_t)w;
		}
		cr->held_p += n;
		cr->held_len -= n;
	}
	buf_unref(cr->held);
	cr->held = NULL;
	return true;
}

static void pump(struct copy_rq *cr)
{
	struct s3_put *p = &cr->put;
	while (p->rq.c && !cr->failed && !cr->read_done) {
		if (cr->held && !feed_held(cr))
			return;
		struct buf_slice sl;
		int rc = reader_read(&cr->rd, &sl);
		if (rc == -EAGAIN)
			return;
		if (rc < 0) {
			LOG_WARN("copy source read failed", "bucket=%s key=%s err=%s", cr->src_bucket,
				 LOG_Q(cr->src_key),
				 LOG_Q(cr->rd.get ? gw_data_get_error(cr->rd.get) : iol_strerror(rc)));
			src_read_failed(cr, rc);
			return;
		}
		if (rc == 0) {
			cr->read_done = true;
			reader_clear(&cr->rd);
			s3_part_ck_final(&cr->part);
			break;
		}
		s3_part_ck_update(&cr->part, sl.buf->data + sl.off, sl.len);
		if (p->sse) {
			/* The destination's ciphertext: whole chunks, or nothing yet. */
			struct buf *b;
			rc = s3_sse_put_feed(p->sse, sl.buf->data + sl.off, sl.len, &b);
			buf_unref(sl.buf);
			if (rc) {
				copy_fail(cr, S3E_InternalError, NULL);
				return;
			}
			if (!b)
				continue;
			sl.buf = b;
			sl.off = 0;
			sl.len = b->len;
		}
		cr->held = sl.buf;
		cr->held_p = sl.buf->data + sl.off;
		cr->held_len = sl.len;
	}
	if (!p->rq.c || cr->failed || !cr->read_done || cr->finished)
		return;
	cr->finished = true;
	if (p->is_inline) {
		if (p->inl_len != p->size) {
			copy_fail(cr, S3E_InternalError, "Source shorter than its record");
			return;
		}
		s3_put_ready(p);
	} else if (gw_data_put_finish(p->put)) {
		copy_fail(cr, S3E_InternalError, "Source shorter than its record");
	}
	/* else on_done commits */
}

/* The source as it is now, after a read of it failed: overwritten or
 * deleted since the copy started (its shards or part rows were freed
 * under the copy), or still the same (the data path failed). */
static void on_src_recheck(struct s3_rq *rq, enum s3_err e, Iolake__Meta__ObjectRecord *rec)
{
	struct copy_rq *cr = copy_of(rq);
	bool changed = e == S3E_NoSuchKey ||
		       (e == S3E_OK && rec && rec->generation != cr->src->generation);
	s3u_free_msg(rec);
	if (changed)
		s3_rq_fail(rq, S3E_ServiceUnavailable,
			   "The copy source was overwritten or deleted while it was read; nothing "
			   "was written. Retry the copy.");
	else if (cr->src_err == IOL_ECORRUPT)
		s3_rq_fail(rq, S3E_InternalError, "Unreadable source layout");
	else
		s3_rq_fail(rq, S3E_ServiceUnavailable,
			   "Not enough storage nodes reachable to read the source");
}

/* A read of the source failed (rc): the copy stops, what it wrote is
 * deleted, nothing is committed (never a broken object). Whether the
 * source changed under it decides the answer: a copy racing an
 * overwrite of its source fails cleanly, retryable (503), since the
 * shards it started from are freed by the overwrite's commit. */
static void src_read_failed(struct copy_rq *cr, int rc)
{
	struct s3_rq *rq = &cr->put.rq;
	if (cr->failed)
		return;   /* answered already */
	copy_fail(cr, S3E_OK, NULL);   /* stop and clean up; answered below */
	cr->src_err = rc;
	if (cr->src_vid || !rq->c) {   /* a version named never changes */
		on_src_recheck(rq, S3E_OK, (Iolake__Meta__ObjectRecord *)s3u_copy_msg(&cr->src->base));
		return;
	}
	s3_rq_head(rq, cr->src_bucket, cr->src_key, on_src_recheck);
}

static void on_dst_writable(struct gw_data_put *dp, void *ud)
{
	(void)dp;
	struct copy_rq *cr = ud;
	if (cr->put.rq.c)
		pump(cr);
}

static void on_dst_done(struct gw_data_put *dp, int status, void *ud)
{
	struct copy_rq *cr = ud;
	if (status) {
		LOG_WARN("copy put failed", "bucket=%s key=%s err=%s", cr->put.rq.bucket,
			 LOG_Q(cr->put.rq.key), LOG_Q(gw_data_put_error(dp)));
		copy_fail(cr, status == IOL_EUNAVAILABLE ? S3E_ServiceUnavailable : S3E_InternalError,
			  status == IOL_EUNAVAILABLE ? "Not enough storage nodes reachable to store the object"
						     : NULL);
		return;
	}
	s3_put_ready(&cr->put);
}

static void copy_start(struct copy_rq *cr)
{
	struct s3_put *p = &cr->put;
	struct s3_rq *rq = &p->rq;
	p->size = cr->len;
	p->is_inline = cr->is_part ? cr->len == 0 : cr->len <= rq->o->inline_max;
	if (s3_put_encrypt(p, &cr->dst_sse))
		return;
	if (cr->len && cr->src_sse.kind != IOLAKE__META__SSE_KIND__SSE_NONE &&
	    !(cr->src_dec = s3_sse_get_new(&cr->src_sse))) {
		s3_rq_fail(rq, S3E_InternalError, NULL);
		return;
	}
	if (p->is_inline && cr->len && !(p->inl = malloc(cr->len))) {
		s3_rq_fail(rq, S3E_InternalError, NULL);
		return;
	}
	if (gw_map_object_pg(rq->o->map, rq->bucket, rq->key, &p->pg)) {
		if (!p->is_inline) {
			s3_rq_fail(rq, S3E_ServiceUnavailable, "No cluster map yet");
			return;
		}
		p->pg = 0;
	}
	if (!p->is_inline) {
		struct gw_data_put_cbs cbs = { .on_writable = on_dst_writable, .on_done = on_dst_done };
		if (s3_rq_target(rq, p->pg, &p->target) || s3_put_data_start(p, &cbs, cr)) {
			s3_rq_fail(rq, S3E_ServiceUnavailable, "No cluster map yet");
			return;
		}
	}
	if (!cr->replace && !cr->is_part)
		p->meta_from = cr->src;
	cr->rd.cr = cr;
	cr->rd.rec = cr->src;
	cr->rd.pos = cr->off;
	cr->rd.end = cr->off + cr->len;
	cr->rd.rows = s3_prows_is(cr->src) && cr->len > 0;
	if (cr->rd.rows && s3_prows_init(&cr->rd.prows, cr->src)) {
		copy_fail(cr, S3E_InternalError, "Unreadable source layout");
		return;
	}
	pump(cr);
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
	bool has_match = s3u_hdr_str(c, "x-amz-copy-source-if-match", v, sizeof(v)) != NULL;
	if (has_match && !etag_matches(v, etag))
		return false;
	if (!has_match && s3u_hdr_str(c, "x-amz-copy-source-if-unmodified-since", v, sizeof(v))) {
		long long t = http_time(v);
		if (t >= 0 && mtime > t)
			return false;
	}
	bool has_none = s3u_hdr_str(c, "x-amz-copy-source-if-none-match", v, sizeof(v)) != NULL;
	if (has_none && etag_matches(v, etag))
		return false;
	if (!has_none && s3u_hdr_str(c, "x-amz-copy-source-if-modified-since", v, sizeof(v))) {
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

static void src_ready(struct s3_rq *rq, Iolake__Meta__ObjectRecord *rec);

/* x-amz-copy-source with a versionId: that version (a delete marker is
 * not a copy source: 400 InvalidRequest, as S3). */
static void on_src_version(struct s3_rq *rq, enum s3_err e, const ProtobufCMessage *resp)
{
	const Iolake__Meta__GetVersionResponse *r = (const void *)resp;
	e = s3_ver_answer_err(e, r);
	if (e == S3E_OK && r->record->is_delete_marker) {
		s3_rq_fail(rq, S3E_InvalidRequest,
			   "The source of a copy request may not specifically refer to a delete marker by version id.");
		return;
	}
	Iolake__Meta__ObjectRecord *rec =
		e ? NULL : (Iolake__Meta__ObjectRecord *)s3u_copy_msg(&r->record->base);
	if (!e && !rec)
		e = S3E_InternalError;
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	src_ready(rq, rec);
}

static void on_src(struct s3_rq *rq, enum s3_err e, Iolake__Meta__ObjectRecord *rec)
{
	struct copy_rq *cr = copy_of(rq);
	if (cr->src_vid && (e == S3E_OK || e == S3E_NoSuchKey)) {
		/* allowed (decided on the current version, or the bucket when
		 * the key is deleted): now the version named */
		s3u_free_msg(rec);
		Iolake__Meta__GetVersionRequest req = IOLAKE__META__GET_VERSION_REQUEST__INIT;
		req.bucket = cr->src_bucket;
		req.key = cr->src_key;
		req.version_id = cr->src_vid;
		s3_rq_call(rq, META_M_GET_VERSION, &req.base, S3_SUBJ_OBJECT_READ, on_src_version);
		return;
	}
	if (e) {   /* NoSuchKey here means the source bucket exists */
		s3_rq_fail(rq, e, NULL);
		return;
	}
	src_ready(rq, rec);
}

static void src_ready(struct s3_rq *rq, Iolake__Meta__ObjectRecord *rec)
{
	struct copy_rq *cr = copy_of(rq);
	cr->src = rec;
	if (!conditions_hold(rq->c, cr->src)) {
		s3_rq_fail(rq, S3E_PreconditionFailed, NULL);
		return;
	}
	const char *smsg;
	enum s3_err e = s3_sse_for_read(rq->c, rec, true, &cr->src_sse, &smsg);
	if (e) {
		s3_rq_fail(rq, e, smsg);
		return;
	}
	cr->off = 0;
	cr->len = cr->src->size;
	char v[128];
	if (cr->is_part && s3u_hdr_str(rq->c, "x-amz-copy-source-range", v, sizeof(v)) &&
	    !parse_copy_range(v, cr->src->size, &cr->off, &cr->len)) {
		char msg[128];
		snprintf(msg, sizeof(msg), "Range specified is not valid for source object of size: %llu",
			 (unsigned long long)cr->src->size);
		s3_rq_fail(rq, S3E_InvalidArgument, msg);
		return;
	}
	if (cr->len > S3_MAX_PUT_BYTES) {
		s3_rq_fail(rq, S3E_InvalidRequest,
			   "The specified copy source is larger than the maximum allowable size for a copy source: 5368709120");
		return;
	}
	enum s3_err qe = s3_quota_check(s3_rq_gate_bucket(rq), cr->len, cr->is_part ? 0 : 1);
	if (qe) {
		s3_rq_fail(rq, qe, NULL);
		return;
	}
	copy_start(cr);
}

/* The destination exists (bucket, or upload for a part): read the source. */
static void on_dst(struct s3_rq *rq, enum s3_err e, const ProtobufCMessage *resp)
{
	struct copy_rq *cr = copy_of(rq);
	const Iolake__Meta__GetUploadResponse *u = (const void *)resp;
	const char *msg = NULL;
	if (!e && cr->is_part && u && u->upload &&
	    s3_part_ck_begin(&cr->part, (enum s3_ck_algo)u->upload->checksum_algo))
		e = S3E_InternalError;   /* the part carries the upload's checksum */
	/* The destination's encryption: the upload's (a part), else the
	 * request's or the bucket's default. */
	if (!e && cr->is_part && u && u->upload && u->upload->meta)
		e = s3_sse_for_read(rq->c, u->upload->meta, false, &cr->dst_sse, &msg);
	else if (!e && !cr->is_part)
		e = s3_sse_for_write(rq->c, rq->bkt, &cr->dst_sse, &msg);
	if (e)
		s3_rq_fail(rq, e, msg);
	else   /* the copy's second question: may the caller read the source? */
		s3_rq_head_authz(rq, cr->src_bucket, cr->src_key, S3_ACT_GetObject, on_src);
}

static void copy_respond(struct s3_put *p)
{
	char d[40], etag[40];
	s3u_iso_date(p->mtime_ms, d);
	snprintf(etag, sizeof(etag), "\"%s\"", p->etag);
	s3_ver_headers(&p->rq);
	struct copy_rq *cr = copy_of(&p->rq);
	s3_sse_headers(p->rq.c, &cr->dst_sse);
	if (cr->src && (cr->src_vid || cr->src->version_id[0]))
		http_add_header(s3_call_stream(p->rq.c), "x-amz-copy-source-version-id",
				cr->src->version_id[0] ? cr->src->version_id : "null");
	struct xml_w *w = s3_call_xml(p->rq.c);
	xml_decl(w);
	xml_open_ns(w, "CopyObjectResult", S3_XMLNS);
	xml_elem(w, "LastModified", d);
	xml_elem(w, "ETag", etag);
	xml_close(w);
	s3_call_send_xml(p->rq.c, 200);
}

/* x-amz-copy-source: [/]bucket/key[?versionId=…], percent-encoded. */
static enum s3_err parse_source(struct s3_call *c, struct copy_rq *cr)
{
	const struct sigv4_header *h = s3u_hdr(c, "x-amz-copy-source");
	if (!h || !h->value_len)
		return S3E_InvalidArgument;
	char *dec = malloc(h->value_len + 1);
	if (!dec)
		return S3E_InternalError;
	size_t n = h->value_len;
	const char *q = memchr(h->value, '?', n);
	if (q) {
		/* ?versionId=<id>: 16 hex digits, or null (issue 17) */
		size_t qn = n - (size_t)(q + 1 - h->value);
		const char *vid = q + 1 + 10;
		size_t vn = qn - 10;
		bool ok = qn > 10 && !strncmp(q + 1, "versionId=", 10) &&
			  ((vn == 4 && !strncmp(vid, "null", 4)) || vn == 16);
		for (size_t i = 0; ok && vn == 16 && i < 16; i++)
			ok = (vid[i] >= '0' && vid[i] <= '9') || (vid[i] >= 'a' && vid[i] <= 'f');
		if (!ok) {
			free(dec);
			return S3E_InvalidVersionId;
		}
		if (!(cr->src_vid = strndup(vid, vn))) {
			free(dec);
			return S3E_InternalError;
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
	cr->src_bucket = strdup(p);
	cr->src_key = strdup(slash + 1);
	free(dec);
	return cr->src_bucket && cr->src_key ? S3E_OK : S3E_InternalError;
}

static void copy_begin(struct s3_call *c, bool is_part)
{
	struct copy_rq *cr = s3_rq_new(c, sizeof(*cr));
	if (!cr)
		return;
	struct s3_rq *rq = &cr->put.rq;
	rq->stop = s3_put_stop;
	rq->fini = copy_fini;
	cr->is_part = is_part;
	enum s3_err e = parse_source(c, cr);
	if (e) {
		s3_rq_fail(rq, e, e == S3E_InvalidArgument ? "Invalid copy source" : NULL);
		return;
	}
	char v[32];
	if (!is_part && s3u_hdr_str(c, "x-amz-metadata-directive", v, sizeof(v))) {
		if (strcmp(v, "REPLACE") == 0)
			cr->replace = true;
		else if (strcmp(v, "COPY") != 0) {
			s3_rq_fail(rq, S3E_InvalidArgument, "Unknown metadata directive.");
			return;
		}
	}
	/* (A version copied onto its own key is S3's way to restore it; a
	 * copy onto itself that changes the encryption or names the storage
	 * class is allowed too — a class this store does not have is then
	 * refused with the headers below, as for any copy.) */
	if (!is_part && !cr->replace && !cr->src_vid && strcmp(cr->src_bucket, rq->bucket) == 0 &&
	    strcmp(cr->src_key, rq->key) == 0 && !s3u_hdr(c, "x-amz-server-side-encryption") &&
	    !s3u_hdr(c, "x-amz-server-side-encryption-customer-algorithm") &&
	    !s3u_hdr(c, "x-amz-storage-class")) {
		s3_rq_fail(rq, S3E_InvalidRequest,
			   "This copy request is illegal because it is trying to copy an object to itself "
			   "without changing the object's metadata, storage class, website redirect "
			   "location or encryption attributes.");
		return;
	}
	if (!is_part) {
		/* The gate read the destination bucket and decided s3:PutObject
		 * on it; the storage class and ACL the copy asks for are
		 * checked now. */
		cr->put.respond = copy_respond;
		const char *msg = NULL;
		e = s3_put_check_headers(rq);
		if (!e)
			e = s3_lock_check_headers(rq, false, &msg);   /* object lock */
		if (e)
			s3_rq_fail(rq, e, msg);
		else
			on_dst(rq, S3E_OK, NULL);
		return;
	}
	if (!s3u_upload_id_ok(s3_call_req(c))) {
		s3_rq_fail(rq, S3E_NoSuchUpload, NULL);
		return;
	}
	s3_part_setup(&cr->put, &cr->part, true);
	Iolake__Meta__GetUploadRequest req = IOLAKE__META__GET_UPLOAD_REQUEST__INIT;
	req.bucket = rq->bucket;
	req.key = rq->key;
	req.upload_id = cr->part.upload_id;
	s3_rq_call(rq, META_M_GET_UPLOAD, &req.base, S3_SUBJ_UPLOAD_READ, on_dst);
}

static void op_copy_object(struct s3_call *c)
{
	copy_begin(c, false);
}

static void op_upload_part_copy(struct s3_call *c)
{
	copy_begin(c, true);
}

const struct s3_handler s3_copy_handlers[] = {
	{ S3_OP_CopyObject, op_copy_object, S3_ACT_PutObject },
	{ S3_OP_UploadPartCopy, op_upload_part_copy, S3_ACT_PutObject },
	S3_HANDLERS_END,
};
