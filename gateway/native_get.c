/*
 * native_get.c — the native protocol's reads: Get (a byte range of at most
 * NATIVE_CHUNK_MAX, its bytes as the answer's payload) and Head. The
 * record and its bucket (without its usage: no_usage, as S3's GET gate)
 * come in one HeadObject, used in place (a copy of the record only for a
 * Get that reads shards); s3_rq_decide answers
 * s3:GetObject on them (a missing key: NoSuchKey only to a caller who may
 * list the bucket, as S3); the bytes come inline from the record, from one
 * gw_data GET of its layout, or segment by segment for a multipart object
 * (its segments, or its part rows read a window at a time: s3_prows).
 *
 * The answer goes only once every byte of the range is read and verified
 * (gw_data checks each piece): an object that cannot be read is an error,
 * never a short payload. A Get with if_etag fails PreconditionFailed when
 * the object changed, which lets a client read a large object in ranges
 * without mixing two versions.
 *
 * Owns the call's copy of the record, its layout, its gw_data GET and the
 * payload buffer. Does not decrypt (an SSE object is refused: read it over
 * S3). Thread: the gateway loop.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/log.h"
#include "common/rpc_bufcache.h"
#include "gateway/gw_map.h"
#include "gateway/gw_rec.h"
#include "gateway/native_int.h"
#include "gateway/s3_prows.h"
#include "gateway/s3_util.h"

struct nget {
	struct native_call *nc;
	Iolake__Meta__ObjectRecord *rec;
	struct gw_data_get *get;
	struct gw_data_layout lay;      /* the GET's: outlives get */
	struct buf *out;                /* the payload, filled in order */
	size_t out_len;
	uint64_t off, len;
	bool mpu, rows, rows_init;
	uint32_t mseg;
	uint64_t mpos, mend;            /* object bytes [mpos, mend) still to start */
	struct s3_prows prows;
};

static void get_free(struct nget *g)
{
	if (g->get)
		gw_data_get_free(g->get);
	gw_data_layout_clear(&g->lay);
	if (g->rows_init)
		s3_prows_clear(&g->prows);
	buf_unref(g->out);
	s3u_free_msg(g->rec);
	free(g);
}

static void get_fail(struct nget *g, enum s3_err e, const char *msg)
{
	struct native_call *nc = g->nc;
	get_free(g);
	native_fail(nc, e, msg);
}

static void fill_resp(Iolake__Native__GetResponse *r, const Iolake__Meta__ObjectRecord *rec)
{
	r->size = rec->size;
	r->etag = rec->etag;
	r->mtime_ms = rec->mtime_ms;
	r->content_type = rec->content_type;
}

/* Answer with rec's attributes (g->rec, or the borrowed HeadObject answer
 * while its callback runs) and the range's bytes; frees g. */
static void get_respond(struct nget *g, const Iolake__Meta__ObjectRecord *rec)
{
	Iolake__Native__GetResponse r = IOLAKE__NATIVE__GET_RESPONSE__INIT;
	fill_resp(&r, rec);
	r.offset = g->off;
	r.length = g->len;
	struct buf_slice p = { .buf = g->out, .off = 0, .len = g->out_len };
	native_ok(g->nc, &r.base, g->len ? &p : NULL);
	g->nc = NULL;
	get_free(g);
}

static void pump(struct nget *g);

static void on_readable(struct gw_data_get *dg, void *ud)
{
	(void)dg;
	pump(ud);
}

static void on_rows(void *ud, int err, const ProtobufCMessage *resp)
{
	struct nget *g = ud;
	const Iolake__Meta__GetPartRowsResponse *r = (const void *)resp;
	enum s3_err e = s3_status_err(S3_SUBJ_OBJECT_READ, err, err ? 0 : (int)r->status);
	if ((e = s3_prows_take(&g->prows, e, resp))) {
		get_fail(g, e, NULL);
		return;
	}
	pump(g);
}

/* GetPartRows from the row s3_prows_seg missed on (s3_prows_fetch's
 * request, without an S3 exchange). */
static int rows_fetch(struct nget *g)
{
	Iolake__Meta__GetPartRowsRequest req;
	s3_prows_request(&g->prows, &req);
	return meta_client_call(g->nc->s->o->mc, META_M_GET_PART_ROWS, &req.base, on_rows, g);
}

/* The next segment of a multipart object the range touches: 0 (its GET
 * started), -EAGAIN (its part row is being read), or an error. */
static int mget_next(struct nget *g)
{
	struct s3_ops *o = g->nc->s->o;
	const Iolake__Meta__ObjectRecord *r = g->rec;
	if (g->get) {
		gw_data_get_free(g->get);   /* before its layout goes */
		g->get = NULL;
	}
	gw_data_layout_clear(&g->lay);
	const Iolake__Meta__Segment *sg = NULL;
	int rc;
	if (g->rows) {
		rc = s3_prows_seg(&g->prows, g->mpos, &sg);
		if (rc == -EAGAIN)
			return rows_fetch(g) ? IOL_EUNAVAILABLE : -EAGAIN;
		if (rc)
			return rc;
	} else {
		while (g->mseg < r->n_segments &&
		       r->segments[g->mseg]->offset + r->segments[g->mseg]->length <= g->mpos)
			g->mseg++;
		if (g->mseg >= r->n_segments || r->segments[g->mseg]->offset > g->mpos)
			return IOL_ECORRUPT;   /* a hole in the record */
		sg = r->segments[g->mseg];
	}
	uint64_t seg_end = sg->offset + sg->length;
	uint64_t n = (seg_end < g->mend ? seg_end : g->mend) - g->mpos;
	if ((rc = gw_rec_seg_layout(r, sg, &g->lay)))
		return rc;
	struct gw_data_target t;
	if (gw_map_target(o->map, g->lay.pg, &t))
		return IOL_EUNAVAILABLE;
	rc = gw_data_get_start(o->data, &t, &g->lay, g->mpos - sg->offset, n, on_readable, g,
			       &g->get);
	if (rc)
		return rc;
	g->mpos += n;
	g->mseg++;
	return 0;
}

/* Take what the data path has ready; answer once the range is whole. */
static void pump(struct nget *g)
{
	for (;;) {
		if (!g->get) {
			int rc = mget_next(g);
			if (rc == -EAGAIN)
				return;
			if (rc) {
				get_fail(g, S3E_ServiceUnavailable, iol_strerror(rc));
				return;
			}
		}
		struct buf_slice s;
		int rc = gw_data_get_read(g->get, &s);
		if (rc == -EAGAIN)
			return;
		if (rc < 0) {
			LOG_WARN("native get failed", "bucket=%s key=%s err=%s", g->rec->bucket,
				 LOG_Q(g->rec->key), LOG_Q(gw_data_get_error(g->get)));
			get_fail(g, S3E_ServiceUnavailable, "the object cannot be read now");
			return;
		}
		if (rc == 1) {
			if (g->out_len + s.len > g->len) {
				buf_unref(s.buf);
				get_fail(g, S3E_InternalError, "the data path returned too many bytes");
				return;
			}
			memcpy(g->out->data + g->out_len, buf_slice_data(&s), s.len);
			g->out_len += s.len;
			buf_unref(s.buf);
			continue;
		}
		/* this GET is over */
		if (g->mpu && g->mpos < g->mend) {
			gw_data_get_free(g->get);
			g->get = NULL;
			continue;
		}
		if (g->out_len != g->len) {
			get_fail(g, S3E_InternalError, "short read");
			return;
		}
		get_respond(g, g->rec);
		return;
	}
}

/* The record of a (the HeadObject answer, valid during its callback): an
 * inline or empty range is answered from it at once; a GET of shards keeps
 * it (g->rec): taken out of a when the caller owns the answer (own:
 * rpc_answer_take), else a copy. */
static void get_start(struct native_call *nc, Iolake__Meta__HeadObjectResponse *a, bool own)
{
	const Iolake__Meta__ObjectRecord *rec = a->record;
	const Iolake__Native__GetRequest *m = (const void *)nc->msg;
	struct nget *g = calloc(1, sizeof(*g));
	if (!g) {
		native_fail(nc, S3E_InternalError, NULL);
		return;
	}
	g->nc = nc;
	if (m->if_etag && m->if_etag[0] && strcmp(m->if_etag, rec->etag)) {
		get_fail(g, S3E_PreconditionFailed, "the object changed (if_etag)");
		return;
	}
	if (rec->sse != IOLAKE__META__SSE_KIND__SSE_NONE) {
		get_fail(g, S3E_NotImplemented, "an encrypted object: read it over S3");
		return;
	}
	if (m->offset > rec->size || (m->offset == rec->size && rec->size)) {
		get_fail(g, S3E_InvalidRange, NULL);
		return;
	}
	g->off = m->offset;
	uint64_t rest = rec->size - m->offset;
	g->len = m->length && m->length < rest ? m->length : rest;
	if (g->len > NATIVE_CHUNK_MAX)
		g->len = NATIVE_CHUNK_MAX;
	if (!g->len) {
		get_respond(g, rec);
		return;
	}
	if (gw_rec_is_inline(rec)) {
		if (rec->inline_data.len != rec->size) {
			get_fail(g, S3E_InternalError, "inline body does not match the record");
			return;
		}
		if (!(g->out = buf_copy(rec->inline_data.data + g->off, g->len))) {
			get_fail(g, S3E_InternalError, NULL);
			return;
		}
		g->out_len = g->len;
		get_respond(g, rec);
		return;
	}
	if (!(g->rec = s3u_keep_sub(own, &a->record))) {
		get_fail(g, S3E_InternalError, NULL);
		return;
	}
	rec = g->rec;   /* the GET's from here on */
	/* A recycled block: a fresh 4 MiB buffer per GET was 1,024 page
	 * faults (issue 19). */
	if (!(g->out = rpc_buf_new(g->len))) {
		get_fail(g, S3E_InternalError, NULL);
		return;
	}
	struct s3_ops *o = nc->s->o;
	int rc;
	if (gw_rec_is_multipart(rec)) {
		g->mpu = true;
		g->mpos = g->off;
		g->mend = g->off + g->len;
		if (s3_prows_is(rec)) {
			g->rows = true;
			if ((rc = s3_prows_init(&g->prows, rec))) {
				get_fail(g, S3E_InternalError, iol_strerror(rc));
				return;
			}
			g->rows_init = true;
		}
		pump(g);
		return;
	}
	struct gw_data_target t;
	if ((rc = gw_rec_layout(rec, &g->lay))) {
		get_fail(g, S3E_InternalError, iol_strerror(rc));
		return;
	}
	if (gw_map_target(o->map, g->lay.pg, &t) ||
	    gw_data_get_start(o->data, &t, &g->lay, g->off, g->len, on_readable, g, &g->get)) {
		get_fail(g, S3E_ServiceUnavailable, NULL);
		return;
	}
	pump(g);
}

/* The HeadObject answer (record and bucket), used in place: it is valid
 * while this callback runs (the local RPC's arena), which is as long as a
 * Head, an inline Get or a refusal needs it; no copy of the bucket is
 * made, and of the record only for a Get of shards, and not even then
 * when meta gave its answer in process (rpc_answer_take). The errors are
 * s3_head_start's. */
static void on_get_meta(void *ud, int err, const ProtobufCMessage *resp)
{
	struct native_call *nc = ud;
	const Iolake__Meta__HeadObjectResponse *r = (const void *)resp;
	enum s3_err e = s3_status_err(S3_SUBJ_OBJECT_READ, err, err ? 0 : (int)r->status);
	if (!err && !r->bucket)
		e = S3E_NoSuchBucket;
	if (e == S3E_OK && !r->record)
		e = S3E_NoSuchKey;
	if (e && e != S3E_NoSuchKey) {
		native_fail(nc, e, NULL);
		return;
	}
	const Iolake__Meta__ObjectRecord *rec = e ? NULL : r->record;
	/* rec NULL: may the caller learn that it is missing (ListBucket)? */
	if (s3_rq_decide(&nc->rq, S3_ACT_GetObject, r->bucket, rec) != S3_ALLOW) {
		native_fail(nc, S3E_AccessDenied, NULL);
		return;
	}
	if (!rec) {
		native_fail(nc, S3E_NoSuchKey, NULL);
		return;
	}
	if (nc->method == NATIVE_M_HEAD) {
		Iolake__Native__GetResponse a = IOLAKE__NATIVE__GET_RESPONSE__INIT;
		fill_resp(&a, rec);
		native_ok(nc, &a.base, NULL);
		return;
	}
	bool own = rpc_answer_take(resp);
	get_start(nc, (Iolake__Meta__HeadObjectResponse *)r, own);   /* written only when own */
	if (own)
		s3u_free_msg((void *)r);
}

void native_get_step(struct native_call *nc)
{
	if (!nc->rq.key || !nc->rq.key[0]) {
		native_fail(nc, S3E_InvalidArgument, "a key is needed");
		return;
	}
	/* With its bucket; a read decides on ACL and policy, never on quota:
	 * without its usage, as S3's GET gate asks (s3_gate.c). */
	Iolake__Meta__HeadObjectRequest req = IOLAKE__META__HEAD_OBJECT_REQUEST__INIT;
	req.bucket = nc->rq.bucket;
	req.key = nc->rq.key;
	req.with_bucket = true;
	req.no_usage = true;
	if (meta_client_call(nc->s->o->mc, META_M_HEAD_OBJECT, &req.base, on_get_meta, nc))
		native_fail(nc, S3E_ServiceUnavailable, NULL);
}
