/*
 * s3_object.c — the object operations: PutObject (inline or streamed
 * through gw_data, committed to meta with a generation condition),
 * GetObject and HeadObject (whole, one range or one part, verified before
 * the first byte goes out; a multipart object is read segment by segment,
 * each with its own layout), DeleteObject. The PUT pipeline is shared:
 * UploadPart (s3_multipart.c) and the copies (s3_copy.c) reuse it with
 * their own commit and answer hooks (s3_ops_int.h). Contracts in
 * s3_ops.h; shared state and helpers in s3_ops_int.h.
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
#include "common/hash.h"
#include "common/log.h"
#include "gateway/gw_map.h"
#include "gateway/s3_ops_int.h"

/* ------------------------------------------------------------ PutObject */

static void put_commit(struct opx *x);
static void put_read_cur(struct opx *x);

static void put_respond(struct opx *x)
{
	char etag[40];
	snprintf(etag, sizeof(etag), "\"%s\"", x->etag);
	http_add_header(s3_call_stream(x->c), "ETag", etag);
	s3o_put_checksum_header(x->c);
	http_respond(s3_call_stream(x->c), 200, NULL, 0, NULL, NULL);
}

/* The new version's shards, when its record was not committed. */
void s3o_put_drop_new(struct opx *x)
{
	if (x->put && x->data_done) {
		gw_data_delete(x->o->data, &x->target, gw_data_put_layout(x->put), gw_rec_on_drop_done, NULL);
	}
}

static void on_put_commit(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t idx)
{
	(void)idx;
	struct opx *x = ud;
	x->pending--;
	int st = err ? -1 : (int)res->status;
	if (st == IOLAKE__META__STATUS__STATUS_OK) {
		gw_rec_drop_shards(x->o->map, x->o->data, x->cur);
		if (x->c)
			x->respond ? x->respond(x) : put_respond(x);
		opx_maybe_free(x);
		return;
	}
	if (st == IOLAKE__META__STATUS__STATUS_CONFLICT && x->c && ++x->tries < COMMIT_TRIES) {
		/* A concurrent writer committed first: read its record and go
		 * again; its shards become ours to delete. */
		put_read_cur(x);
		return;
	}
	/* Not committed (or unknown: a retried submit is deduplicated by
	 * meta, so an error here means the record did not change). */
	if (err == 0 || !iol_err_retryable(err))
		s3o_put_drop_new(x);
	if (!x->c) {
		opx_maybe_free(x);
		return;
	}
	if (st == IOLAKE__META__STATUS__STATUS_NOT_FOUND)
		s3o_fail(x, S3E_NoSuchBucket, NULL);
	else if (st == IOLAKE__META__STATUS__STATUS_TOO_LARGE)
		s3o_fail(x, S3E_InvalidArgument, "Your metadata headers exceed the maximum allowed metadata size.");
	else if (err)
		s3o_fail(x, s3o_meta_err(err), NULL);
	else
		s3o_fail(x, S3E_InternalError, NULL);
}

static bool is_user_meta(const struct sigv4_header *h)
{
	return h->name_len > 11 && strncasecmp(h->name, "x-amz-meta-", 11) == 0;
}

void s3o_user_meta_free(struct s3o_user_meta *um)
{
	free(um->ents), free(um->pents), free(um->names), free(um->vals);
	memset(um, 0, sizeof(*um));
}

int s3o_user_meta_get(struct s3_call *c, struct s3o_user_meta *um)
{
	const struct http_request *hr = s3_call_http(c);
	memset(um, 0, sizeof(*um));
	size_t n_um = 0;
	for (size_t i = 0; i < hr->n_headers; i++)
		n_um += is_user_meta(&hr->headers[i]);
	if (!n_um)
		return 0;
	um->ents = calloc(n_um, sizeof(*um->ents));
	um->pents = calloc(n_um, sizeof(*um->pents));
	size_t nb = 0, vb = 0;
	for (size_t i = 0; i < hr->n_headers; i++)
		if (is_user_meta(&hr->headers[i])) {
			nb += hr->headers[i].name_len;
			vb += hr->headers[i].value_len + 1;
		}
	um->names = malloc(nb + 1);
	um->vals = malloc(vb + 1);
	if (!um->ents || !um->pents || !um->names || !um->vals) {
		s3o_user_meta_free(um);
		return -ENOMEM;
	}
	char *np = um->names, *vp = um->vals;
	size_t j = 0;
	for (size_t i = 0; i < hr->n_headers; i++) {
		const struct sigv4_header *h = &hr->headers[i];
		if (!is_user_meta(h))
			continue;
		iolake__meta__object_record__user_meta_entry__init(&um->ents[j]);
		um->ents[j].key = np;
		for (size_t b = 11; b < h->name_len; b++)
			*np++ = (char)((h->name[b] >= 'A' && h->name[b] <= 'Z') ? h->name[b] + 32 : h->name[b]);
		*np++ = 0;
		um->ents[j].value = vp;
		memcpy(vp, h->value, h->value_len);
		vp += h->value_len;
		*vp++ = 0;
		um->pents[j] = &um->ents[j];
		j++;
	}
	um->n = n_um;
	return 0;
}

int s3o_rec_from_headers(struct s3_call *c, Iolake__Meta__ObjectRecord *r, struct s3o_hdr_bufs *b)
{
	r->content_type = s3o_hdr_str(c, "content-type", b->ct, sizeof(b->ct));
	r->content_encoding = s3o_hdr_str(c, "content-encoding", b->ce, sizeof(b->ce));
	/* aws-chunked is transfer framing, not the object's encoding. */
	if (r->content_encoding && strncasecmp(r->content_encoding, "aws-chunked", 11) == 0) {
		char *rest = r->content_encoding + 11;
		while (*rest == ',' || *rest == ' ')
			rest++;
		r->content_encoding = rest;
	}
	r->content_disposition = s3o_hdr_str(c, "content-disposition", b->cd, sizeof(b->cd));
	r->cache_control = s3o_hdr_str(c, "cache-control", b->cc, sizeof(b->cc));
	r->expires = s3o_hdr_str(c, "expires", b->ex, sizeof(b->ex));
	r->content_language = s3o_hdr_str(c, "content-language", b->cl, sizeof(b->cl));
	if (s3o_user_meta_get(c, &b->um))
		return -ENOMEM;
	r->n_user_meta = b->um.n;
	r->user_meta = b->um.pents;
	return 0;
}

static void put_commit(struct opx *x)
{
	struct s3_call *c = x->c;
	const Iolake__Meta__ObjectRecord *src = x->meta_from;
	struct s3o_hdr_bufs hb;
	Iolake__Meta__ObjectRecord r = IOLAKE__META__OBJECT_RECORD__INIT;
	struct s3o_user_meta *um = &hb.um;
	memset(um, 0, sizeof(*um));
	r.bucket = x->bucket;
	r.key = x->key;
	r.size = x->size;
	r.etag = x->etag;
	if (src) {
		/* CopyObject with the COPY directive: the source's headers and
		 * user metadata. */
		r.content_type = src->content_type;
		r.content_encoding = src->content_encoding;
		r.content_disposition = src->content_disposition;
		r.cache_control = src->cache_control;
		r.expires = src->expires;
		r.content_language = src->content_language;
		r.n_user_meta = src->n_user_meta;
		r.user_meta = src->user_meta;
	} else if (s3o_rec_from_headers(c, &r, &hb)) {
		s3o_fail(x, S3E_InternalError, NULL);
		s3o_put_drop_new(x);
		return;
	}
	r.mtime_ms = x->mtime_ms;
	r.owner = (char *)s3o_owner_of(x->o, c);
	r.pg = x->pg;
	Iolake__Meta__Checksum ck, *pck = &ck;
	if (s3o_record_checksum(c, &ck)) {
		r.n_checksums = 1;
		r.checksums = &pck;
	} else if (src) {
		r.n_checksums = src->n_checksums; /* the same bytes: the same sums */
		r.checksums = src->checksums;
	}
	uint8_t *lbuf = NULL;
	if (x->is_inline) {
		r.inline_data.data = x->inl;
		r.inline_data.len = x->inl_len;
	} else {
		const struct gw_data_layout *l = gw_data_put_layout(x->put);
		ssize_t n = (ssize_t)gw_data_layout_encoded_len(l);
		if (!(lbuf = malloc((size_t)n)) || gw_data_layout_encode(l, lbuf, (size_t)n) != n) {
			free(lbuf);
			s3o_user_meta_free(um);
			s3o_fail(x, S3E_InternalError, NULL);
			s3o_put_drop_new(x);
			return;
		}
		r.data_layout.data = lbuf;
		r.data_layout.len = (size_t)n;
	}
	void *tmem = NULL; /* x-amz-tagging (checked when the request came in) */
	const char *tmsg;
	char tdir[16];
	if (src && !(s3o_hdr_str(c, "x-amz-tagging-directive", tdir, sizeof(tdir)) &&
		     strcasecmp(tdir, "REPLACE") == 0)) {
		r.n_tags = src->n_tags; /* CopyObject: the source's tags by default */
		r.tags = src->tags;
	} else if (s3o_tagging_from_header(c, &r, &tmem, &tmsg)) {
		free(lbuf);
		s3o_user_meta_free(um);
		s3o_fail(x, S3E_InternalError, NULL);
		s3o_put_drop_new(x);
		return;
	}
	Iolake__Meta__PutObject po = IOLAKE__META__PUT_OBJECT__INIT;
	po.record = &r;
	if (x->cur)
		po.if_generation = x->cur->generation;
	else
		po.if_none_match = true;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_PUT_OBJECT;
	op.put_object = &po;
	x->committing = true;
	int rc = s3o_msubmit(x, &op, on_put_commit);
	free(lbuf);
	s3o_user_meta_free(um);
	s3o_tagging_mem_free(tmem);
	if (rc) {
		s3o_put_drop_new(x);
		s3o_fail(x, S3E_ServiceUnavailable, NULL);
	}
}

static void on_put_cur(void *ud, int err, const ProtobufCMessage *resp)
{
	struct opx *x = ud;
	if (!x->c)
		s3o_put_drop_new(x);   /* before opx_back may free x */
	if (!opx_back(x))
		return;
	s3o_free_msg(x->cur);
	x->cur = NULL;
	if (err && err != IOL_ENOT_FOUND) {
		s3o_put_drop_new(x);
		s3o_fail(x, s3o_meta_err(err), NULL);
		return;
	}
	const Iolake__Meta__HeadObjectResponse *r = (const void *)resp;
	if (!err && r->status == IOLAKE__META__STATUS__STATUS_OK && r->record)
		x->cur = (Iolake__Meta__ObjectRecord *)s3o_copy_msg(&r->record->base);
	enum s3_err ce = s3o_cond_put(x->c, x->cur); /* If-None-Match: *, If-Match */
	if (ce) {
		s3o_put_drop_new(x);
		s3o_fail(x, ce, NULL);
		return;
	}
	put_commit(x);
}

/* Read the current record (its generation is the commit's condition). */
static void put_read_cur(struct opx *x)
{
	Iolake__Meta__HeadObjectRequest req = IOLAKE__META__HEAD_OBJECT_REQUEST__INIT;
	req.bucket = x->bucket;
	req.key = x->key;
	if (s3o_mcall(x, META_M_HEAD_OBJECT, &req.base, on_put_cur)) {
		s3o_put_drop_new(x);
		s3o_fail(x, S3E_ServiceUnavailable, NULL);
	}
}

/* Body verified and data durable: commit. */
static void put_maybe_commit(struct opx *x)
{
	if (!x->c || !x->body_done || !x->data_done || x->committing)
		return;
	x->mtime_ms = s3o_wall_ms();
	if (x->is_inline) {
		uint8_t d[16];
		hash_md5(x->inl ? x->inl : (const uint8_t *)"", x->inl_len, d);
		hash_hex(d, 16, x->etag);
	} else {
		snprintf(x->etag, sizeof(x->etag), "%s", gw_data_put_etag(x->put));
	}
	x->committing = true;
	if (x->commit)
		x->commit(x);
	else
		put_read_cur(x);
}

void s3o_put_ready(struct opx *x)
{
	x->body_done = x->data_done = true;
	put_maybe_commit(x);
}

static void put_body_finish(struct opx *x);

/* Feed the spilled bytes; true when none are left. */
static bool put_drain_spill(struct opx *x)
{
	if (!x->spill_len)
		return true;
	ssize_t n = gw_data_put_write(x->put, x->spill, x->spill_len);
	if (n < 0) {
		x->spill_len = 0; /* the PUT failed: on_done reports */
		return false;
	}
	memmove(x->spill, x->spill + n, x->spill_len - (size_t)n);
	x->spill_len -= (size_t)n;
	return x->spill_len == 0;
}

static void on_put_writable(struct gw_data_put *p, void *ud)
{
	(void)p;
	struct opx *x = ud;
	if (!x->c || !x->put || !put_drain_spill(x))
		return;
	if (x->end_deferred) {
		x->end_deferred = false;
		put_body_finish(x);
	} else {
		http_resume(s3_call_stream(x->c));
	}
}

static void on_put_done(struct gw_data_put *p, int status, void *ud)
{
	struct opx *x = ud;
	if (status) {
		LOG_WARN("put failed", "bucket=%s key=%s err=%s", x->bucket, LOG_Q(x->key),
			 LOG_Q(gw_data_put_error(p)));
		s3o_fail(x, status == IOL_EUNAVAILABLE ? S3E_ServiceUnavailable : S3E_InternalError,
		     status == IOL_EUNAVAILABLE ? "Not enough storage nodes reachable to store the object" : NULL);
		return;
	}
	x->data_done = true;
	put_maybe_commit(x);
}

static void on_put_body(struct s3_call *c, const char *data, size_t len)
{
	struct opx *x = s3_call_user(c);
	if (x->is_inline) {
		if (x->inl_len + len > x->size)
			return; /* over-long: the verdict says IncompleteBody */
		memcpy(x->inl + x->inl_len, data, len);
		x->inl_len += len;
		return;
	}
	if (!x->put)
		return;
	size_t n = 0;
	if (!x->spill_len) {
		ssize_t w = gw_data_put_write(x->put, data, len);
		if (w < 0)
			return; /* failed or over-fed: on_done / the verdict reports */
		n = (size_t)w;
	}
	if (n == len)
		return;
	/* The window is full: keep the rest and stop the body until
	 * on_writable. */
	size_t rest = len - n;
	if (x->spill_len + rest > x->spill_cap) {
		size_t cap = x->spill_cap ? x->spill_cap : 65536;
		while (cap < x->spill_len + rest)
			cap *= 2;
		uint8_t *b = realloc(x->spill, cap);
		if (!b) {
			gw_data_put_abort(x->put);
			return;
		}
		x->spill = b;
		x->spill_cap = cap;
	}
	memcpy(x->spill + x->spill_len, data + n, rest);
	x->spill_len += rest;
	http_pause(s3_call_stream(c));
}

/* Every body byte has been fed: finish the PUT. */
static void put_body_finish(struct opx *x)
{
	if (x->put && gw_data_put_finish(x->put)) {
		gw_data_put_free(x->put);
		x->put = NULL;
		s3_call_error(x->c, S3E_IncompleteBody, NULL);
		return;
	}
	put_maybe_commit(x);
}

static void on_put_body_end(struct s3_call *c, enum s3_err verdict)
{
	struct opx *x = s3_call_user(c);
	if (verdict) {
		if (x->put) {
			gw_data_put_free(x->put);
			x->put = NULL;
		}
		s3_call_error(c, verdict, NULL);
		return;
	}
	x->body_done = true;
	if (x->is_inline) {
		if (x->inl_len != x->size) {
			s3_call_error(c, S3E_IncompleteBody, NULL);
			return;
		}
		x->data_done = true;
	} else if (x->spill_len) {
		x->end_deferred = true; /* on_writable finishes */
		return;
	} else {
		put_body_finish(x);
		return;
	}
	put_maybe_commit(x);
}

static void on_put_bucket(void *ud, int err, const ProtobufCMessage *resp)
{
	struct opx *x = ud;
	if (!opx_back(x))
		return;
	const Iolake__Meta__GetBucketResponse *r = (const void *)resp;
	if (err && err != IOL_ENOT_FOUND) {
		s3o_fail(x, s3o_meta_err(err), NULL);
		return;
	}
	if (err || r->status != IOLAKE__META__STATUS__STATUS_OK) {
		s3o_fail(x, S3E_NoSuchBucket, NULL);
		return;
	}
	s3o_put_stream(x);
}

void s3o_put_stream(struct opx *x)
{
	struct s3_call *c = x->c;
	if (!s3_call_http(c)->has_body) {
		/* No body at all: the front end already saw its end. Check the
		 * signed digest, Content-MD5 and checksum (of nothing) now. */
		enum s3_err v = x->size ? S3E_IncompleteBody : s3_call_check_empty_body(c);
		if (v) {
			s3o_fail(x, v, NULL);
			return;
		}
		x->body_done = x->data_done = true;
		put_maybe_commit(x);
		return;
	}
	if (!x->is_inline) {
		struct gw_data_put_cbs cbs = { .on_writable = on_put_writable, .on_done = on_put_done };
		if (gw_map_object_pg(x->o->map, x->bucket, x->key, &x->pg) ||
		    gw_map_target(x->o->map, x->pg, &x->target) ||
		    gw_data_put_start(x->o->data, &x->target, x->size, NULL, &cbs, x, &x->put)) {
			s3o_fail(x, S3E_ServiceUnavailable, "No cluster map yet");
			return;
		}
	} else if (gw_map_object_pg(x->o->map, x->bucket, x->key, &x->pg)) {
		x->pg = 0; /* inline data needs no PG */
	}
	enum s3_err e = s3_call_read_body(c, on_put_body, on_put_body_end);
	if (e) {
		s3o_fail(x, e, NULL);
		return;
	}
	http_resume(s3_call_stream(c));
}

struct opx *s3o_put_begin(struct s3_call *c, bool allow_inline)
{
	struct s3_ops *o = s3_call_ctx(c);
	const struct http_request *hr = s3_call_http(c);
	uint64_t size = hr->content_length;
	char num[24];
	if (s3o_hdr_str(c, "x-amz-decoded-content-length", num, sizeof(num))) {
		char *end;
		size = strtoull(num, &end, 10);
		if (!num[0] || *end) {
			s3_call_error(c, S3E_InvalidArgument, NULL);
			return NULL;
		}
	} else if (!hr->has_content_length) {
		s3_call_error(c, S3E_MissingContentLength, NULL);
		return NULL;
	}
	if (size > S3_MAX_PUT_BYTES) {
		s3_call_error(c, S3E_EntityTooLarge, NULL);
		return NULL;
	}
	const char *tmsg;
	void *tmem;
	enum s3_err te = s3o_tagging_from_header(c, NULL, &tmem, &tmsg);
	if (te) {
		s3_call_error(c, te, tmsg);
		return NULL;
	}
	struct opx *x = opx_new(c);
	if (!x) {
		s3_call_error(c, S3E_InternalError, NULL);
		return NULL;
	}
	x->size = size;
	x->is_inline = allow_inline ? size <= o->inline_max : size == 0;
	if (x->is_inline && size && !(x->inl = malloc(size))) {
		s3o_fail(x, S3E_InternalError, NULL);
		return NULL;
	}
	/* Hold the body (unread bytes would be discarded) until the
	 * caller's checks (the bucket exists, the upload exists) pass. */
	if (hr->has_body)
		http_pause(s3_call_stream(c));
	return x;
}

void s3o_put_object(struct s3_call *c)
{
	struct opx *x = s3o_put_begin(c, true);
	if (!x)
		return;
	Iolake__Meta__GetBucketRequest req = IOLAKE__META__GET_BUCKET_REQUEST__INIT;
	req.name = x->bucket;
	if (s3o_mcall(x, META_M_GET_BUCKET, &req.base, on_put_bucket))
		s3o_fail(x, S3E_ServiceUnavailable, NULL);
}

/* ------------------------------------------------------------ GetObject */

static void get_pump(struct opx *x);
static void on_get_readable_fwd(struct gw_data_get *g, void *ud);

static void add_object_headers(struct opx *x)
{
	struct http_stream *s = s3_call_stream(x->c);
	const Iolake__Meta__ObjectRecord *r = x->rec;
	char v[64];
	snprintf(v, sizeof(v), "\"%s\"", r->etag ? r->etag : "");
	http_add_header(s, "ETag", v);
	s3o_http_date(r->mtime_ms, v);
	http_add_header(s, "Last-Modified", v);
	http_add_header(s, "Accept-Ranges", "bytes");
	http_add_header(s, "Content-Type",
			r->content_type && *r->content_type ? r->content_type : "binary/octet-stream");
	if (r->content_encoding && *r->content_encoding)
		http_add_header(s, "Content-Encoding", r->content_encoding);
	if (r->content_disposition && *r->content_disposition)
		http_add_header(s, "Content-Disposition", r->content_disposition);
	if (r->content_language && *r->content_language)
		http_add_header(s, "Content-Language", r->content_language);
	if (r->cache_control && *r->cache_control)
		http_add_header(s, "Cache-Control", r->cache_control);
	if (r->expires && *r->expires)
		http_add_header(s, "Expires", r->expires);
	for (size_t i = 0; i < r->n_user_meta; i++) {
		char name[300];
		snprintf(name, sizeof(name), "x-amz-meta-%s", r->user_meta[i]->key);
		http_add_header(s, name, r->user_meta[i]->value);
	}
	s3o_tagging_count_header(s, r);
	/* The object's checksum only with the whole object (not a range,
	 * not one part). */
	if (!x->partial && !s3_call_req(x->c)->part_number && s3o_checksum_mode(x->c))
		s3o_checksum_headers(x->c, r);
	if (s3_call_req(x->c)->part_number && r->parts_count) {
		snprintf(v, sizeof(v), "%u", (unsigned)r->parts_count);
		http_add_header(s, "x-amz-mp-parts-count", v);
	}
	if (x->partial) {
		char cr[96];
		snprintf(cr, sizeof(cr), "bytes %llu-%llu/%llu", (unsigned long long)x->off,
			 (unsigned long long)(x->off + x->len - 1), (unsigned long long)r->size);
		http_add_header(s, "Content-Range", cr);
	}
}

/* Range: bytes=a-b | a- | -n. 0 (whole object: no or ignored header),
 * 1 (a satisfiable range in off and len), -1 (unsatisfiable). */
static int parse_range(struct s3_call *c, uint64_t size, uint64_t *off, uint64_t *len)
{
	char v[128];
	if (!s3o_hdr_str(c, "range", v, sizeof(v)))
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
	struct opx *x = arg;
	buf_unref(x->wbufs[x->whead++ % MAX_WRITES]);
	x->writes--;
	if (!x->c) {
		opx_maybe_free(x);
		return;
	}
	get_pump(x);
}

/* Multipart GET: start reading the next segment the range touches (its
 * own layout, its own gw_data GET). 0, or an error (the GET fails). */
static int mget_next(struct opx *x)
{
	const Iolake__Meta__ObjectRecord *r = x->rec;
	if (x->get) {
		gw_data_get_free(x->get);   /* before its layout goes */
		x->get = NULL;
	}
	gw_data_layout_clear(&x->lay);
	while (x->mseg < r->n_segments &&
	       r->segments[x->mseg]->offset + r->segments[x->mseg]->length <= x->mpos)
		x->mseg++;
	if (x->mseg >= r->n_segments || r->segments[x->mseg]->offset > x->mpos)
		return IOL_ECORRUPT;   /* a hole in the record */
	const Iolake__Meta__Segment *sg = r->segments[x->mseg];
	uint64_t seg_end = sg->offset + sg->length;
	uint64_t n = (seg_end < x->mend ? seg_end : x->mend) - x->mpos;
	int rc = gw_rec_seg_layout(sg, &x->lay);
	if (rc)
		return rc;
	struct gw_data_target t;
	if (gw_map_target(x->o->map, x->lay.pg, &t))
		return IOL_EUNAVAILABLE;
	rc = gw_data_get_start(x->o->data, &t, &x->lay, x->mpos - sg->offset, n, on_get_readable_fwd, x,
			       &x->get);
	if (rc)
		return rc;
	x->mpos += n;
	x->mseg++;
	return 0;
}

static void get_pump(struct opx *x)
{
	struct http_stream *s = s3_call_stream(x->c);
	while (!x->ended && x->writes < MAX_WRITES) {
		struct buf_slice sl;
		int rc = x->get ? gw_data_get_read(x->get, &sl) : IOL_EUNAVAILABLE;
		if (rc == 0 && x->mpu_get && x->mpos < x->mend) {
			rc = mget_next(x);
			if (rc == 0)
				continue;
		}
		if (rc == -EAGAIN)
			return;
		if (rc < 0) {
			LOG_WARN("get failed", "bucket=%s key=%s err=%s", x->bucket, LOG_Q(x->key),
				 LOG_Q(x->get ? gw_data_get_error(x->get) : iol_strerror(rc)));
			x->ended = true;
			if (!x->started) {
				s3o_fail(x, S3E_ServiceUnavailable,
				     "Not enough storage nodes reachable to read the object");
			} else {
				/* Bytes already went out: cut the connection, the
				 * client sees a short body, never wrong bytes. */
				http_set_close(s);
				http_respond_end(s);
			}
			return;
		}
		if (!x->started) {
			x->started = true;
			add_object_headers(x);
			http_respond_start(s, x->partial ? 206 : 200, (int64_t)x->len);
		}
		if (rc == 0) {
			x->ended = true;
			http_respond_end(s);
			return;
		}
		unsigned slot = (x->whead + x->writes) % MAX_WRITES;
		x->wbufs[slot] = sl.buf;
		x->writes++;
		if (http_write(s, sl.buf->data + sl.off, sl.len, on_get_written, x)) {
			x->writes--;
			buf_unref(sl.buf);
			x->ended = true;
			return;
		}
	}
}

static void on_get_readable(struct gw_data_get *g, void *ud)
{
	(void)g;
	struct opx *x = ud;
	if (x->c)
		get_pump(x);
}

static void on_get_readable_fwd(struct gw_data_get *g, void *ud)
{
	on_get_readable(g, ud);
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

static void get_respond(struct opx *x)
{
	const Iolake__Meta__ObjectRecord *r = x->rec;
	struct http_stream *s = s3_call_stream(x->c);
	uint32_t pn = s3_call_req(x->c)->part_number;
	int rg;
	if (pn) {
		if (s3o_hdr(x->c, "range")) {
			s3o_fail(x, S3E_InvalidRequest,
				 "Cannot specify both Range header and partNumber query parameter");
			return;
		}
		rg = part_range(r, pn, &x->off, &x->len);
		if (rg < 0) {
			s3o_fail(x, S3E_InvalidPartNumber, NULL);
			return;
		}
	} else {
		/* If-Range that does not match: the Range is ignored, whole 200. */
		rg = s3o_cond_range_ok(x, r) ? parse_range(x->c, r->size, &x->off, &x->len) : 0;
		if (rg < 0) {
			char cr[40]; /* RFC 7233, as S3: the size the range missed */
			snprintf(cr, sizeof(cr), "bytes */%llu", (unsigned long long)r->size);
			http_add_header(s, "Content-Range", cr);
			s3o_fail(x, S3E_InvalidRange, NULL);
			return;
		}
	}
	if (rg == 0) {
		x->off = 0;
		x->len = r->size;
	}
	/* An empty part has no byte range to name. */
	x->partial = rg == 1 && x->len > 0;
	if (x->head) {
		/* As S3: a satisfiable Range (or partNumber) changes only the
		 * status and Content-Length (plus Content-Range) of a HEAD. */
		add_object_headers(x);
		http_respond_start(s, x->partial ? 206 : 200, (int64_t)x->len);
		http_respond_end(s);
		return;
	}
	if (gw_rec_is_multipart(r)) {
		if (x->len == 0) {
			add_object_headers(x);
			http_respond(s, 200, NULL, 0, NULL, NULL);
			return;
		}
		x->mpu_get = true;
		x->mseg = 0;
		x->mpos = x->off;
		x->mend = x->off + x->len;
		int rc = mget_next(x);
		if (rc) {
			s3o_fail(x, rc == IOL_ECORRUPT ? S3E_InternalError : S3E_ServiceUnavailable,
				 rc == IOL_ECORRUPT ? "Unreadable object layout" : NULL);
			return;
		}
		get_pump(x);
		return;
	}
	if (gw_rec_is_inline(r)) {
		/* Inline: the record holds the body; it lives until finish. */
		if (r->inline_data.len < x->off + x->len) {
			s3o_fail(x, S3E_InternalError, NULL);
			return;
		}
		add_object_headers(x);
		http_respond(s, x->partial ? 206 : 200, r->inline_data.data + x->off, x->len,
			     on_inline_written, NULL);
		return;
	}
	struct gw_data_target t;
	int rc = gw_rec_layout(r, &x->lay);
	if (rc) {
		s3o_fail(x, rc == -ENOMEM ? S3E_ServiceUnavailable : S3E_InternalError,
		     rc == -ENOMEM ? NULL : "Unreadable object layout");
		return;
	}
	if (gw_map_target(x->o->map, x->lay.pg, &t)) {
		s3o_fail(x, S3E_ServiceUnavailable, "No cluster map yet");
		return;
	}
	rc = gw_data_get_start(x->o->data, &t, &x->lay, x->off, x->len, on_get_readable, x, &x->get);
	if (rc) {
		s3o_fail(x, rc == -EAGAIN || rc == -ENOMEM ? S3E_ServiceUnavailable : S3E_InternalError, NULL);
		return;
	}
	get_pump(x);
}

static void on_get_nobucket(void *ud, int err, const ProtobufCMessage *resp)
{
	struct opx *x = ud;
	if (!opx_back(x))
		return;
	const Iolake__Meta__GetBucketResponse *r = (const void *)resp;
	bool exists = !err && r->status == IOLAKE__META__STATUS__STATUS_OK;
	if (err && err != IOL_ENOT_FOUND)
		s3o_fail(x, s3o_meta_err(err), NULL);
	else if (s3_call_req(x->c)->op == S3_OP_DeleteObject)
		exists ? (void)http_respond(s3_call_stream(x->c), 204, NULL, 0, NULL, NULL)
		       : s3o_fail(x, S3E_NoSuchBucket, NULL);
	else
		s3o_fail(x, exists ? S3E_NoSuchKey : S3E_NoSuchBucket, NULL);
}

/* NOT_FOUND from meta: tell NoSuchKey from NoSuchBucket. */
static void check_bucket(struct opx *x)
{
	Iolake__Meta__GetBucketRequest req = IOLAKE__META__GET_BUCKET_REQUEST__INIT;
	req.name = x->bucket;
	if (s3o_mcall(x, META_M_GET_BUCKET, &req.base, on_get_nobucket))
		s3o_fail(x, S3E_ServiceUnavailable, NULL);
}

static void on_get_head(void *ud, int err, const ProtobufCMessage *resp)
{
	struct opx *x = ud;
	if (!opx_back(x))
		return;
	const Iolake__Meta__HeadObjectResponse *r = (const void *)resp;
	if (err && err != IOL_ENOT_FOUND) {
		s3o_fail(x, s3o_meta_err(err), NULL);
		return;
	}
	if (err || r->status != IOLAKE__META__STATUS__STATUS_OK || !r->record) {
		check_bucket(x);
		return;
	}
	x->rec = (Iolake__Meta__ObjectRecord *)s3o_copy_msg(&r->record->base);
	if (!x->rec) {
		s3o_fail(x, S3E_InternalError, NULL);
		return;
	}
	if (s3o_cond_get(x, x->rec)) /* answered 304 or 412 */
		return;
	get_respond(x);
}

void s3o_get_object(struct s3_call *c)
{
	struct opx *x = opx_new(c);
	if (!x) {
		s3_call_error(c, S3E_InternalError, NULL);
		return;
	}
	x->head = s3_call_req(c)->op == S3_OP_HeadObject;
	Iolake__Meta__HeadObjectRequest req = IOLAKE__META__HEAD_OBJECT_REQUEST__INIT;
	req.bucket = x->bucket;
	req.key = x->key;
	if (s3o_mcall(x, META_M_HEAD_OBJECT, &req.base, on_get_head))
		s3o_fail(x, S3E_ServiceUnavailable, NULL);
}

/* ------------------------------------------------------------ DeleteObject */

static void del_read_cur(struct opx *x);

static void on_del_commit(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t idx)
{
	(void)idx;
	struct opx *x = ud;
	x->pending--;
	int st = err ? -1 : (int)res->status;
	if (st == IOLAKE__META__STATUS__STATUS_OK)
		gw_rec_drop_shards(x->o->map, x->o->data, x->cur);
	if (!x->c) {
		opx_maybe_free(x);
		return;
	}
	if (st == IOLAKE__META__STATUS__STATUS_OK || st == IOLAKE__META__STATUS__STATUS_NOT_FOUND) {
		http_respond(s3_call_stream(x->c), 204, NULL, 0, NULL, NULL);
	} else if (st == IOLAKE__META__STATUS__STATUS_CONFLICT && ++x->tries < COMMIT_TRIES) {
		del_read_cur(x);
	} else {
		s3o_fail(x, err ? s3o_meta_err(err) : S3E_InternalError, NULL);
	}
}

static void on_del_cur(void *ud, int err, const ProtobufCMessage *resp)
{
	struct opx *x = ud;
	if (!opx_back(x))
		return;
	const Iolake__Meta__HeadObjectResponse *r = (const void *)resp;
	if (err && err != IOL_ENOT_FOUND) {
		s3o_fail(x, s3o_meta_err(err), NULL);
		return;
	}
	if (err || r->status != IOLAKE__META__STATUS__STATUS_OK || !r->record) {
		check_bucket(x); /* 204 when the bucket exists, as S3 */
		return;
	}
	s3o_free_msg(x->cur);
	x->cur = (Iolake__Meta__ObjectRecord *)s3o_copy_msg(&r->record->base);
	if (!x->cur) {
		s3o_fail(x, S3E_InternalError, NULL);
		return;
	}
	Iolake__Meta__DeleteObject d = IOLAKE__META__DELETE_OBJECT__INIT;
	d.bucket = x->bucket;
	d.key = x->key;
	d.if_generation = x->cur->generation;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_DELETE_OBJECT;
	op.delete_object = &d;
	if (s3o_msubmit(x, &op, on_del_commit))
		s3o_fail(x, S3E_ServiceUnavailable, NULL);
}

static void del_read_cur(struct opx *x)
{
	Iolake__Meta__HeadObjectRequest req = IOLAKE__META__HEAD_OBJECT_REQUEST__INIT;
	req.bucket = x->bucket;
	req.key = x->key;
	if (s3o_mcall(x, META_M_HEAD_OBJECT, &req.base, on_del_cur))
		s3o_fail(x, S3E_ServiceUnavailable, NULL);
}

void s3o_delete_object(struct s3_call *c)
{
	struct opx *x = opx_new(c);
	if (!x) {
		s3_call_error(c, S3E_InternalError, NULL);
		return;
	}
	del_read_cur(x);
}
