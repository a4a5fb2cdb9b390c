/*
 * s3_get.c — GetObject and HeadObject: the record read from meta (a
 * linearizable leader read), conditional headers (304 / 412), the range
 * (Range with If-Range, or partNumber), then the bytes: inline from the
 * record, one gw_data GET of the record's layout, or a multipart object
 * read segment by segment (each its own layout and its own gw_data GET).
 *
 * Invariant: the response starts only once the first bytes are verified,
 * so an object that cannot be read is a 503, never a short or wrong body;
 * a later segment failing cuts the connection (a short body, never wrong
 * bytes). At most GET_WRITES response writes are in flight; the data path
 * reads ahead only as fast as they complete. The slices ready at once (a
 * segment's data shards) go out as one write (http_writev), the head
 * before them and the response's end after the last: a healthy GET of one
 * segment is one writev to the socket, not one per shard.
 *
 * Owns the request's copy of the record, its layout and its gw_data GET.
 * Does not write anything, nor answer GetObjectAttributes (s3_attrs.c).
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
#include "gateway/gw_rec.h"
#include "gateway/s3_attrs.h"
#include "gateway/s3_cond_ops.h"
#include "gateway/s3_handlers.h"
#include "gateway/s3_prows.h"
#include "gateway/s3_rq.h"
#include "gateway/s3_lock.h"
#include "gateway/s3_sse.h"
#include "gateway/s3_tagging.h"
#include "gateway/s3_util.h"
#include "gateway/s3_version.h"
#include "gateway/s3_lifecycle.h"

#define GET_WRITES 4               /* response writes in flight per GET */
#define GET_BATCH HTTP_WRITEV_MAX  /* slices in one response write */

/* One response write: the slices it holds until it completes. */
struct get_wr {
	unsigned n;
	struct buf *b[GET_BATCH];
};

struct get_rq {
	struct s3_rq rq;
	Iolake__Meta__ObjectRecord *rec;
	struct gw_data_get *get;
	struct gw_data_layout lay;     /* the GET's layout: outlives get */
	uint64_t off, len;             /* the bytes answered */
	bool partial, started, ended, head;
	unsigned writes;               /* response writes in flight */
	unsigned whead;
	struct get_wr wr[GET_WRITES];
	/* A multipart object: the segments the range touches, one at a time. */
	bool mpu;
	uint32_t mseg;                 /* segment being read */
	uint64_t mpos, mend;           /* object bytes [mpos, mend) still to read */
	bool rows;                     /* its layouts in part rows (issue 18) */
	bool rows_wait;                /* a GetPartRows is in flight */
	struct s3_prows prows;
	/* An encrypted object (s3_sse.h): its key, and the decryptor the
	 * stored bytes go through (NULL: not encrypted, or no body). */
	struct s3_sse_obj sse;
	struct s3_sse_get *dec;
};

static struct get_rq *get_of(struct s3_rq *rq)
{
	return container_of(rq, struct get_rq, rq);
}

static void get_stop(struct s3_rq *rq)
{
	struct get_rq *g = get_of(rq);
	if (g->get) {
		gw_data_get_free(g->get);
		g->get = NULL;
	}
}

static void get_fini(struct s3_rq *rq)
{
	struct get_rq *g = get_of(rq);
	get_stop(rq);
	gw_data_layout_clear(&g->lay);
	s3_prows_clear(&g->prows);
	s3u_free_msg(g->rec);
	s3_sse_get_free(g->dec);
	s3_sse_obj_wipe(&g->sse);
}

static void get_pump(struct get_rq *g);

/* GetObject's and HeadObject's response-* query parameters (AWS
 * "Overriding response header values"): each replaces one stored header in
 * the answer. Signed requests only (checked in op_get_object). */
enum { OV_TYPE, OV_LANGUAGE, OV_EXPIRES, OV_CACHE, OV_DISPOSITION, OV_ENCODING };
static const struct {
	const char *param, *header;
} overrides[] = {
	[OV_TYPE] = { "response-content-type", "Content-Type" },
	[OV_LANGUAGE] = { "response-content-language", "Content-Language" },
	[OV_EXPIRES] = { "response-expires", "Expires" },
	[OV_CACHE] = { "response-cache-control", "Cache-Control" },
	[OV_DISPOSITION] = { "response-content-disposition", "Content-Disposition" },
	[OV_ENCODING] = { "response-content-encoding", "Content-Encoding" },
};
#define N_OVERRIDES (sizeof(overrides) / sizeof(overrides[0]))

/* Whether the query names any override ("response-..."): when not, as
 * for a presigned GET's X-Amz-* parameters, the six headers below look
 * nothing up. */
static bool any_override(const struct s3_req *r)
{
	for (uint32_t i = 0; i < r->n_q; i++)
		if (r->q[i].name_len > 9 && memcmp(r->q[i].name, "response-", 9) == 0)
			return true;
	return false;
}

/* Header overrides[ov] with the stored value, or the request's override
 * (look: any_override). */
static void add_overridable(struct s3_call *c, bool look, unsigned ov, const char *stored)
{
	const char *v = look ? s3u_qval(s3_call_req(c), overrides[ov].param) : NULL;
	if (v)
		stored = v;
	if (stored && *stored)
		http_add_header(s3_call_stream(c), overrides[ov].header, stored);
}

/* Overrides on an anonymous request, or a value that is not a header
 * value: the error, else S3E_OK. */
static enum s3_err check_overrides(struct s3_call *c, const char **msg)
{
	for (size_t i = 0; i < N_OVERRIDES; i++) {
		const char *v = s3u_qval(s3_call_req(c), overrides[i].param);
		if (!v)
			continue;
		if (s3_call_auth(c)->anonymous) {
			*msg = "Request specific response headers cannot be used for anonymous GET "
			       "requests.";
			return S3E_InvalidRequest;
		}
		for (const char *p = v; *p; p++)
			if ((unsigned char)*p < 0x20 && *p != '\t') {
				*msg = "A response header override holds a control character.";
				return S3E_InvalidArgument;
			}
	}
	return S3E_OK;
}

static void add_object_headers(struct get_rq *g)
{
	struct s3_call *c = g->rq.c;
	struct http_stream *s = s3_call_stream(c);
	const Iolake__Meta__ObjectRecord *r = g->rec;
	char v[64];
	snprintf(v, sizeof(v), "\"%s\"", r->etag ? r->etag : "");
	http_add_header(s, "ETag", v);
	s3u_http_date(r->mtime_ms, v);
	http_add_header(s, "Last-Modified", v);
	http_add_header(s, "Accept-Ranges", "bytes");
	s3_ver_record_headers(&g->rq, r);
	if (!s3u_qval(s3_call_req(c), "versionId"))
		s3_lc_expiration_header(&g->rq, r);
	s3_lock_record_headers(&g->rq, r);
	bool ov = any_override(s3_call_req(c));
	add_overridable(c, ov, OV_TYPE,
			r->content_type && *r->content_type ? r->content_type : "binary/octet-stream");
	add_overridable(c, ov, OV_ENCODING, r->content_encoding);
	add_overridable(c, ov, OV_DISPOSITION, r->content_disposition);
	add_overridable(c, ov, OV_LANGUAGE, r->content_language);
	add_overridable(c, ov, OV_CACHE, r->cache_control);
	add_overridable(c, ov, OV_EXPIRES, r->expires);
	for (size_t i = 0; i < r->n_user_meta; i++) {
		char name[300];
		snprintf(name, sizeof(name), "x-amz-meta-%s", r->user_meta[i]->key);
		http_add_header(s, name, r->user_meta[i]->value);
	}
	s3_tagging_count_header(s, r);
	s3_sse_headers(c, &g->sse);
	/* The object's checksum only with the whole object (not a range,
	 * not one part). */
	if (!g->partial && !s3_call_req(c)->part_number && s3_attrs_checksum_mode(c))
		s3_attrs_checksum_headers(c, r);
	else if (s3_call_req(c)->part_number && s3_attrs_checksum_mode(c))
		s3_attrs_part_checksum_headers(c, r, s3_call_req(c)->part_number);
	if (s3_call_req(c)->part_number && r->parts_count) {
		snprintf(v, sizeof(v), "%u", (unsigned)r->parts_count);
		http_add_header(s, "x-amz-mp-parts-count", v);
	}
	if (g->partial) {
		char cr[96];
		snprintf(cr, sizeof(cr), "bytes %llu-%llu/%llu", (unsigned long long)g->off,
			 (unsigned long long)(g->off + g->len - 1), (unsigned long long)r->size);
		http_add_header(s, "Content-Range", cr);
	}
}

/* Range: bytes=a-b | a- | -n. 0 (whole object: no or ignored header),
 * 1 (a satisfiable range in off and len), -1 (unsatisfiable). */
static int parse_range(struct s3_call *c, uint64_t size, uint64_t *off, uint64_t *len)
{
	char v[128];
	if (!s3u_hdr_str(c, "range", v, sizeof(v)))
		return 0;
	if (strncmp(v, "bytes=", 6) != 0 || strchr(v, ','))
		return 0;
	char *p = v + 6, *end;
	if (*p == '-') {
		unsigned long long n = strtoull(p + 1, &end, 10);
		if (end == p + 1 || *end)
			return 0;
		if (n == 0 || size == 0)
			return -1;
		if (n > size)
			n = size;
		*off = size - n;
		*len = n;
		return 1;
	}
	unsigned long long a = strtoull(p, &end, 10), b;
	if (end == p || *end != '-')
		return 0;
	p = end + 1;
	if (!*p) {
		b = size ? size - 1 : 0;
	} else {
		b = strtoull(p, &end, 10);
		if (*end || b < a)
			return 0;
	}
	if (a >= size)
		return -1;
	if (b >= size)
		b = size - 1;
	*off = a;
	*len = b - a + 1;
	return 1;
}

static void on_get_written(struct http_stream *s, int status, void *arg)
{
	(void)s, (void)status;
	struct get_rq *g = arg;
	struct get_wr *w = &g->wr[g->whead++ % GET_WRITES];
	for (unsigned i = 0; i < w->n; i++)
		buf_unref(w->b[i]);
	w->n = 0;
	g->writes--;
	if (s3_rq_back(&g->rq))
		get_pump(g);
}

static void on_get_readable(struct gw_data_get *dg, void *ud)
{
	(void)dg;
	struct get_rq *g = ud;
	if (g->rq.c)
		get_pump(g);
}

static int mget_next(struct get_rq *g);

static void mget_fail(struct get_rq *g, int rc);

/* The part rows of the next segment came (issue 18): go on reading. */
static void on_get_rows(struct s3_rq *rq, enum s3_err e, const ProtobufCMessage *resp)
{
	struct get_rq *g = get_of(rq);
	g->rows_wait = false;
	e = s3_prows_take(&g->prows, e, resp);
	int rc = e ? IOL_EUNAVAILABLE : mget_next(g);
	if (rc == 0)
		get_pump(g);
	else if (rc != -EAGAIN)
		mget_fail(g, e == S3E_InternalError ? IOL_ECORRUPT : rc);
}

/* The segment holding g->mpos: from the record, or from its part rows
 * (then -EAGAIN while they are fetched; mget_next runs again after). */
static int mget_seg(struct get_rq *g, const Iolake__Meta__Segment **sg)
{
	const Iolake__Meta__ObjectRecord *r = g->rec;
	if (g->rows) {
		int rc = s3_prows_seg(&g->prows, g->mpos, sg);
		if (rc == -EAGAIN) {
			if (s3_prows_fetch(&g->prows, &g->rq, on_get_rows)) {
				g->ended = true;   /* answered ServiceUnavailable */
				return -EAGAIN;
			}
			g->rows_wait = true;
		}
		return rc;
	}
	while (g->mseg < r->n_segments &&
	       r->segments[g->mseg]->offset + r->segments[g->mseg]->length <= g->mpos)
		g->mseg++;
	if (g->mseg >= r->n_segments || r->segments[g->mseg]->offset > g->mpos)
		return IOL_ECORRUPT;   /* a hole in the record */
	*sg = r->segments[g->mseg];
	return 0;
}

/* Multipart GET: start reading the next segment the range touches (its
 * own layout, its own gw_data GET). 0, -EAGAIN (its part row is being
 * read), or an error (the GET fails). */
static int mget_next(struct get_rq *g)
{
	struct s3_ops *o = g->rq.o;
	if (g->get) {
		gw_data_get_free(g->get);   /* before its layout goes */
		g->get = NULL;
	}
	gw_data_layout_clear(&g->lay);
	const Iolake__Meta__Segment *sg = NULL;
	int rc = mget_seg(g, &sg);
	if (rc)
		return rc;
	uint64_t seg_end = sg->offset + sg->length;
	uint64_t n = (seg_end < g->mend ? seg_end : g->mend) - g->mpos;
	rc = gw_rec_seg_layout(g->rec, sg, &g->lay);
	if (rc)
		return rc;
	struct gw_data_target t;
	if (s3_rq_target(&g->rq, g->lay.pg, &t))
		return IOL_EUNAVAILABLE;
	uint64_t soff = g->mpos - sg->offset, slen = n;
	if (g->dec && (rc = s3_sse_get_run(g->dec, &g->lay, sg->length, soff, n, &soff, &slen)))
		return rc;
	rc = gw_data_get_start(o->data, &t, &g->lay, soff, slen, on_get_readable, g, &g->get);
	if (rc)
		return rc;
	g->mpos += n;
	g->mseg++;
	return 0;
}

/* The GET cannot go on (why): answered e (msg) before the first byte,
 * else the connection is cut: the client sees a short body, never wrong
 * bytes. */
static void get_fail(struct get_rq *g, enum s3_err e, const char *msg, const char *why)
{
	struct http_stream *s = s3_call_stream(g->rq.c);
	LOG_WARN("get failed", "bucket=%s key=%s err=%s", g->rq.bucket, LOG_Q(g->rq.key),
		 LOG_Q(why));
	if (g->ended)
		return;
	g->ended = true;
	if (!g->started) {
		s3_rq_fail(&g->rq, e, msg);
	} else {
		http_set_close(s);
		http_respond_end(s);
	}
}

static void mget_fail(struct get_rq *g, int rc)
{
	bool bad = rc == IOL_ECORRUPT;
	get_fail(g, bad ? S3E_InternalError : S3E_ServiceUnavailable,
		 bad ? "Unreadable object layout" : NULL, iol_strerror(rc));
}

/* The next slice of the answer: 1 (sl holds a ref), 0 (all read),
 * -EAGAIN (not yet), or an error. */
static int get_next(struct get_rq *g, struct buf_slice *sl)
{
	for (;;) {
		int rc = !g->get ? IOL_EUNAVAILABLE
			 : g->dec ? s3_sse_get_read(g->dec, g->get, sl)
				  : gw_data_get_read(g->get, sl);
		if (rc != 0 || !g->mpu || g->mpos >= g->mend)
			return rc;
		if ((rc = mget_next(g)))
			return rc;
	}
}

static void wr_drop(struct get_wr *w)
{
	for (unsigned i = 0; i < w->n; i++)
		buf_unref(w->b[i]);
	w->n = 0;
}

static void get_pump(struct get_rq *g)
{
	struct http_stream *s = s3_call_stream(g->rq.c);
	if (g->rows_wait)
		return;   /* on_get_rows pumps */
	while (!g->ended && g->writes < GET_WRITES) {
		struct get_wr *w = &g->wr[(g->whead + g->writes) % GET_WRITES];
		uv_buf_t iov[GET_BATCH];
		struct buf_slice sl;
		int rc;
		while ((rc = get_next(g, &sl)) == 1) {
			w->b[w->n] = sl.buf;
			iov[w->n++] = uv_buf_init((char *)sl.buf->data + sl.off, (unsigned)sl.len);
			if (w->n == GET_BATCH)
				break;
		}
		if (g->ended) {   /* answered while reading (mget_seg) */
			wr_drop(w);
			return;
		}
		if (rc < 0 && rc != -EAGAIN) {
			wr_drop(w);
			get_fail(g, S3E_ServiceUnavailable,
				 "Not enough storage nodes reachable to read the object",
				 g->get ? gw_data_get_error(g->get) : iol_strerror(rc));
			return;
		}
		if (rc == -EAGAIN && !w->n)
			return;
		if (!g->started) {
			g->started = true;
			add_object_headers(g);
			http_respond_start(s, g->partial ? 206 : 200, (int64_t)g->len);
		}
		bool last = rc == 0;
		if (last && !w->n) {
			g->ended = true;
			http_respond_end(s);
			return;
		}
		g->writes++;
		g->rq.pending++;
		if (http_writev(s, iov, w->n, last, on_get_written, g)) {
			g->writes--;
			g->rq.pending--;
			wr_drop(w);
			g->ended = true;
			return;
		}
		if (last) {
			g->ended = true;
			return;
		}
		if (rc == -EAGAIN)
			return;   /* nothing more ready: its reader or on_get_rows pumps */
	}
}

static void on_inline_written(struct http_stream *s, int status, void *arg)
{
	(void)s, (void)status, (void)arg; /* the record lives until finish */
}

/* partNumber=N: that part's bytes of a multipart object (1: the whole of
 * any other). 1 (a part of a multipart object, in off/len), 0 (the whole
 * object), -1 (no such part). */
static int part_range(const Iolake__Meta__ObjectRecord *r, uint32_t pn, uint64_t *off,
		      uint64_t *len)
{
	if (!gw_rec_is_multipart(r) || r->parts_count == 0)
		return pn == 1 ? 0 : -1;
	if (pn > r->parts_count)
		return -1;
	if (s3_prows_is(r))
		return s3_prows_part_range(r, pn, off, len);
	/* Empty parts have no segment: they sit where the next one starts. */
	*off = 0;
	*len = 0;
	for (size_t i = 0; i < r->n_segments; i++) {
		const Iolake__Meta__Segment *sg = r->segments[i];
		if (sg->part_number == pn) {
			*off = sg->offset;
			*len = sg->length;
			break;
		}
		if (sg->part_number > pn)
			break;
		*off = sg->offset + sg->length;
	}
	return 1;
}

/* The range asked for into g->off / g->len / g->partial; false after
 * answering (InvalidRequest, InvalidPartNumber, InvalidRange). */
static bool get_range(struct get_rq *g)
{
	struct s3_call *c = g->rq.c;
	const Iolake__Meta__ObjectRecord *r = g->rec;
	uint32_t pn = s3_call_req(c)->part_number;
	int rg;
	if (pn) {
		if (s3u_hdr(c, "range")) {
			s3_rq_fail(&g->rq, S3E_InvalidRequest,
				   "Cannot specify both Range header and partNumber query parameter");
			return false;
		}
		rg = part_range(r, pn, &g->off, &g->len);
		if (rg < 0) {
			s3_rq_fail(&g->rq, S3E_InvalidPartNumber, NULL);
			return false;
		}
	} else {
		/* If-Range that does not match: the Range is ignored, whole 200. */
		rg = s3_cond_ops_range_ok(c, r) ? parse_range(c, r->size, &g->off, &g->len) : 0;
		if (rg < 0) {
			char cr[40]; /* RFC 7233, as S3: the size the range missed */
			snprintf(cr, sizeof(cr), "bytes */%llu", (unsigned long long)r->size);
			http_add_header(s3_call_stream(c), "Content-Range", cr);
			s3_rq_fail(&g->rq, S3E_InvalidRange, NULL);
			return false;
		}
	}
	if (rg == 0) {
		g->off = 0;
		g->len = r->size;
	}
	/* An empty part has no byte range to name. */
	g->partial = rg == 1 && g->len > 0;
	return true;
}

static void get_respond(struct get_rq *g)
{
	const Iolake__Meta__ObjectRecord *r = g->rec;
	struct s3_ops *o = g->rq.o;
	struct http_stream *s = s3_call_stream(g->rq.c);
	const char *msg;
	enum s3_err e = s3_sse_for_read(g->rq.c, r, false, &g->sse, &msg);
	if (e) {
		s3_rq_fail(&g->rq, e, msg);
		return;
	}
	if (!get_range(g))
		return;
	if (!g->head && g->sse.kind != IOLAKE__META__SSE_KIND__SSE_NONE && g->len &&
	    !(g->dec = s3_sse_get_new(&g->sse))) {
		s3_rq_fail(&g->rq, S3E_ServiceUnavailable, NULL);
		return;
	}
	if (g->head) {
		/* As S3: a satisfiable Range (or partNumber) changes only the
		 * status and Content-Length (plus Content-Range) of a HEAD. */
		add_object_headers(g);
		http_respond_start(s, g->partial ? 206 : 200, (int64_t)g->len);
		http_respond_end(s);
		return;
	}
	if (gw_rec_is_multipart(r)) {
		if (g->len == 0) {
			add_object_headers(g);
			http_respond(s, 200, NULL, 0, NULL, NULL);
			return;
		}
		g->mpu = true;
		g->mseg = 0;
		g->mpos = g->off;
		g->mend = g->off + g->len;
		g->rows = s3_prows_is(r);
		int rc = g->rows ? s3_prows_init(&g->prows, r) : 0;
		if (rc == 0)
			rc = mget_next(g);
		if (rc == -EAGAIN)
			return;   /* its part row first: on_get_rows goes on */
		if (rc) {
			s3_rq_fail(&g->rq, rc == IOL_ECORRUPT ? S3E_InternalError : S3E_ServiceUnavailable,
				   rc == IOL_ECORRUPT ? "Unreadable object layout" : NULL);
			return;
		}
		get_pump(g);
		return;
	}
	if (gw_rec_is_inline(r)) {
		/* Inline: the record holds the body; it lives until finish. */
		if (r->inline_data.len < g->off + g->len) {
			s3_rq_fail(&g->rq, S3E_InternalError, NULL);
			return;
		}
		add_object_headers(g);
		http_respond(s, g->partial ? 206 : 200, r->inline_data.data + g->off, g->len,
			     on_inline_written, NULL);
		return;
	}
	struct gw_data_target t;
	int rc = gw_rec_layout(r, &g->lay);
	if (rc) {
		s3_rq_fail(&g->rq, rc == -ENOMEM ? S3E_ServiceUnavailable : S3E_InternalError,
			   rc == -ENOMEM ? NULL : "Unreadable object layout");
		return;
	}
	if (s3_rq_target(&g->rq, g->lay.pg, &t)) {
		s3_rq_fail(&g->rq, S3E_ServiceUnavailable, "No cluster map yet");
		return;
	}
	uint64_t soff = g->off, slen = g->len;
	if (g->dec && (rc = s3_sse_get_run(g->dec, &g->lay, r->size, g->off, g->len, &soff, &slen))) {
		s3_rq_fail(&g->rq, S3E_InternalError, "Unreadable object layout");
		return;
	}
	rc = gw_data_get_start(o->data, &t, &g->lay, soff, slen, on_get_readable, g, &g->get);
	if (rc) {
		s3_rq_fail(&g->rq, rc == -EAGAIN || rc == -ENOMEM ? S3E_ServiceUnavailable
								 : S3E_InternalError, NULL);
		return;
	}
	get_pump(g);
}

static void on_get_head(struct s3_rq *rq, enum s3_err e, Iolake__Meta__ObjectRecord *rec)
{
	struct get_rq *g = get_of(rq);
	g->rec = rec;
	if (e == S3E_NoSuchKey && rq->head.marker && rq->c) {
		/* the current version is a delete marker: 404, as S3 says it */
		s3_rq_marker_headers(rq);
		s3_rq_fail(rq, S3E_NoSuchKey, NULL);
	} else if (e == S3E_NoSuchKey)
		s3_rq_no_such_key(rq, rq->bucket);
	else if (e)
		s3_rq_fail(rq, e, NULL);
	else if (!s3_cond_ops_get(rq, rec)) /* else answered 304 or 412 */
		get_respond(g);
}

/* GET/HEAD ?versionId: that version; a delete marker is 405. */
static void on_get_version(struct s3_rq *rq, enum s3_err e, const ProtobufCMessage *resp)
{
	struct get_rq *g = get_of(rq);
	const Iolake__Meta__GetVersionResponse *r = (const void *)resp;
	e = s3_ver_answer_err(e, r);
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	if (r->record->is_delete_marker) {
		char d[40];
		struct http_stream *s = s3_call_stream(rq->c);
		http_add_header(s, "x-amz-delete-marker", "true");
		http_add_header(s, "x-amz-version-id",
				r->record->version_id[0] ? r->record->version_id : "null");
		s3u_http_date(r->record->mtime_ms, d);
		http_add_header(s, "Last-Modified", d);
		s3_rq_fail(rq, S3E_MethodNotAllowed, NULL);
		return;
	}
	/* The record itself when meta gave its answer in process, else a copy. */
	Iolake__Meta__GetVersionResponse *own = (void *)rpc_answer_take(resp);
	g->rec = s3u_keep_sub(own, &((Iolake__Meta__GetVersionResponse *)r)->record);
	s3u_free_msg(own);
	if (!g->rec)
		s3_rq_fail(rq, S3E_InternalError, NULL);
	else if (!s3_cond_ops_get(rq, g->rec))
		get_respond(g);
}

static void op_get_object(struct s3_call *c)
{
	struct get_rq *g = s3_rq_new(c, sizeof(*g));
	if (!g)
		return;
	g->rq.stop = get_stop;
	g->rq.fini = get_fini;
	g->head = s3_call_req(c)->op == S3_OP_HeadObject;
	const char *msg = NULL;
	enum s3_err e = check_overrides(c, &msg);
	if (e) {
		s3_rq_fail(&g->rq, e, msg);
		return;
	}
	bool bad;
	const char *vid = s3_ver_query(&g->rq, &bad);
	if (bad) {
		s3_rq_fail(&g->rq, S3E_InvalidVersionId, NULL);
		return;
	}
	if (vid) {
		Iolake__Meta__GetVersionRequest req = IOLAKE__META__GET_VERSION_REQUEST__INIT;
		req.bucket = g->rq.bucket;
		req.key = g->rq.key;
		req.version_id = (char *)vid;
		s3_rq_call(&g->rq, META_M_GET_VERSION, &req.base, S3_SUBJ_OBJECT_READ, on_get_version);
		return;
	}
	s3_rq_head(&g->rq, g->rq.bucket, g->rq.key, on_get_head);
}

const struct s3_handler s3_get_handlers[] = {
	{ S3_OP_GetObject, op_get_object, S3_ACT_GetObject },
	{ S3_OP_HeadObject, op_get_object, S3_ACT_GetObject },
	S3_HANDLERS_END,
};
