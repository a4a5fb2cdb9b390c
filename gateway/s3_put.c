/*
 * s3_put.c — PutObject and the PUT pipeline it shares with UploadPart and
 * the copies (contracts in s3_put.h): size checks, the body streamed
 * inline or through gw_data with back-pressure (bytes the data path's
 * window refused wait in a spill buffer while the body is paused), the
 * commit once the body's verdict is OK and the data durable, and
 * PutObject's record commit.
 *
 * The record commit (issue 19: one meta round trip for a small PUT): a
 * request with a condition (If-Match, If-None-Match, ...), or whose data
 * went to the OSDs, reads the current record, checks the condition
 * against it and commits conditioned on its generation (CONFLICT: read
 * again), then deletes the replaced version's shards at once. An inline
 * PUT (at most --inline-max-size) without a condition commits
 * unconditionally, reading nothing: meta's apply queues the replaced
 * version's shards for GC (meta/state_ver.c free_version) as it does for
 * every replaced version, and says so (OpResult.replaced_shards), and the
 * gateway's GC worker is asked for a round soon (gw_gc_kick). A commit
 * that carried the cached bucket's digest and was refused as
 * bucket_changed reads the bucket, decides again and commits again
 * (gw_bcache.h).
 *
 * Also what a PUT stores from its headers (Content-*, Cache-Control,
 * Expires, x-amz-meta-*), which CreateMultipartUpload stores too.
 *
 * Does not answer GET/HEAD (s3_get.c), parts (s3_part.c) or copies'
 * sources (s3_copy.c). Nothing is acknowledged before the record commit.
 *
 * Thread: the gateway loop; no blocking call.
 */
#include "gateway/s3_put.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/err.h"
#include "common/hash.h"
#include "common/log.h"
#include "gateway/gw_bcache.h"
#include "gateway/gw_gc.h"
#include "gateway/gw_map.h"
#include "gateway/gw_rec.h"
#include "gateway/s3_access.h"
#include "gateway/s3_attrs.h"
#include "gateway/s3_cond.h"
#include "gateway/s3_cond_ops.h"
#include "gateway/s3_handlers.h"
#include "gateway/s3_lock.h"
#include "gateway/s3_tagging.h"
#include "gateway/s3_util.h"
#include "gateway/s3_version.h"
#include "gateway/s3_lifecycle.h"
#include "gateway/s3_quota.h"

void s3_put_drop_new(struct s3_put *p)
{
	gw_rec_drop_new(p->rq.o->data, &p->target, p->put, p->data_done, &p->new_settled);
}

void s3_put_stop(struct s3_rq *rq)
{
	struct s3_put *p = s3_put_of(rq);
	/* An unfinished data PUT deletes what it wrote. */
	if (p->put && !p->data_done) {
		gw_data_put_free(p->put);
		p->put = NULL;
	}
}

void s3_put_fini(struct s3_rq *rq)
{
	struct s3_put *p = s3_put_of(rq);
	/* Ended with no commit holding the new shards (the client left while
	 * the current record was being read): they are nobody's. */
	s3_put_drop_new(p);
	gw_md5b_cancel(&p->etag_md5);   /* before its bytes (p->inl) go */
	if (p->put)
		gw_data_put_free(p->put);
	free(p->spill);
	s3u_free_msg(p->cur);
	free(p->inl);
	s3_sse_put_free(p->sse);
	p->sse = NULL;
}

int s3_put_encrypt(struct s3_put *p, const struct s3_sse_obj *o)
{
	if (o->kind == IOLAKE__META__SSE_KIND__SSE_NONE)
		return 0;
	if (!(p->sse = s3_sse_put_new(o, p->size))) {
		s3_rq_fail(&p->rq, S3E_InternalError, NULL);
		return -ENOMEM;
	}
	if (p->size) {
		p->is_inline = false;   /* the record never holds plaintext */
		free(p->inl);
		p->inl = NULL;
	}
	return 0;
}

int s3_put_data_start(struct s3_put *p, const struct gw_data_put_cbs *cbs, void *ud)
{
	int rc = gw_data_put_start(p->rq.o->data, &p->target,
				   p->sse ? s3_sse_put_stored_len(p->sse) : p->size,
				   p->sse ? s3_sse_put_oid(p->sse) : NULL, cbs, ud, &p->put);
	if (!rc && p->sse)
		gw_data_put_no_etag(p->put);   /* the encryptor makes the ETag */
	return rc;
}

/* ------------------------------------------------------------ the record commit */

static void put_read_cur(struct s3_put *p);
static void put_refresh_bucket(struct s3_put *p);

static void put_respond(struct s3_put *p)
{
	struct s3_call *c = p->rq.c;
	char etag[40];
	snprintf(etag, sizeof(etag), "\"%s\"", p->etag);
	http_add_header(s3_call_stream(c), "ETag", etag);
	if (p->sse)
		s3_sse_headers(c, s3_sse_put_obj(p->sse));
	s3_ver_headers(&p->rq);
	s3_lc_expiration_put(&p->rq, p->size, p->mtime_ms);
	s3_attrs_put_checksum_header(c);
	http_respond(s3_call_stream(c), 200, NULL, 0, NULL, NULL);
}

enum s3_put_outcome s3_put_committed(struct s3_put *p, enum s3_err e,
				     const Iolake__Meta__OpResult *res)
{
	struct s3_rq *rq = &p->rq;
	if (e == S3E_OK) {
		p->new_settled = true;
		return S3_PUT_COMMITTED;
	}
	/* A concurrent writer committed first: read again and go again (its
	 * shards become ours to delete). */
	if (s3_rq_conflict(res) && rq->c && ++rq->tries < S3_COMMIT_TRIES)
		return S3_PUT_RETRY;
	/* Not committed, or unknown: a failure after which meta may have
	 * applied it leaves the shards (a record may name them now). */
	if (s3_rq_in_doubt(rq))
		p->new_settled = true;
	else
		s3_put_drop_new(p);
	s3_rq_fail(rq, e, NULL);
	return S3_PUT_FAILED;
}

static void on_put_commit(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__OpResult *res)
{
	struct s3_put *p = s3_put_of(rq);
	switch (s3_put_committed(p, e, res)) {
	case S3_PUT_COMMITTED:
		if (!res->retained)   /* versioning keeps the replaced version */
			gw_rec_drop_shards(rq->o->map, rq->o->data, p->cur);
		if (!p->cur_read && res->replaced_shards)
			s3_ops_kick_gc(rq->o);   /* not read, so not deleted here */
		if (rq->c)
			p->respond ? p->respond(p) : put_respond(p);
		break;
	case S3_PUT_RETRY:
		if (res->bucket_changed)
			put_refresh_bucket(p);
		else
			put_read_cur(p);
		break;
	case S3_PUT_FAILED:
		break;
	}
}

/* The ACL "headers" of a POST: its form fields. */
static const char *form_hdr(void *ctx, const char *name, size_t *len)
{
	const struct s3_put *p = ctx;
	size_t nl = strlen(name);
	for (size_t i = 0; i < p->n_form_hdrs; i++) {
		const struct sigv4_header *h = &p->form_hdrs[i];
		if (h->name_len == nl && strncasecmp(h->name, name, nl) == 0) {
			*len = h->value_len;
			return h->value;
		}
	}
	return NULL;
}

static enum s3_err put_access(struct s3_put *p, struct s3_obj_access *acc)
{
	if (p->form_hdrs)
		return s3_access_for_object_from(&p->rq, acc, form_hdr, p);
	return s3_access_for_object(&p->rq, acc);
}

/* The request cannot commit: its new shards go, and e is answered. */
static void put_abandon(struct s3_put *p, enum s3_err e)
{
	s3_rq_fail(&p->rq, e, NULL);
	s3_put_drop_new(p);
}

static void put_commit(struct s3_put *p)
{
	struct s3_rq *rq = &p->rq;
	struct s3_call *c = rq->c;
	const Iolake__Meta__ObjectRecord *src = p->meta_from;
	struct s3_put_hdrs hb;
	Iolake__Meta__ObjectRecord r = IOLAKE__META__OBJECT_RECORD__INIT;
	struct s3_put_user_meta *um = &hb.um;
	memset(um, 0, sizeof(*um));
	r.bucket = rq->bucket;
	r.key = rq->key;
	r.size = p->size;
	r.etag = p->etag;
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
	} else if (p->form_hdrs ? s3_put_rec_from_list(p->form_hdrs, p->n_form_hdrs, &r, &hb)
				: s3_put_rec_from_headers(c, &r, &hb)) {
		put_abandon(p, S3E_InternalError);
		return;
	}
	r.mtime_ms = p->mtime_ms;
	/* Owner and ACL: the bucket's Object Ownership and x-amz-acl /
	 * x-amz-grant-* (checked when the request came in). */
	struct s3_obj_access *acc = malloc(sizeof(*acc));
	enum s3_err ae = acc ? put_access(p, acc) : S3E_InternalError;
	if (ae) {
		free(acc);
		s3_put_user_meta_free(um);
		put_abandon(p, ae);
		return;
	}
	s3_access_to_record(acc, &r);
	r.pg = p->pg;
	if (p->sse)
		s3_sse_to_record(s3_sse_put_obj(p->sse), &r);
	Iolake__Meta__Checksum ck, *pck = &ck;
	if (s3_attrs_record_checksum(c, &ck)) {
		r.n_checksums = 1;
		r.checksums = &pck;
	} else if (src && !(src->n_checksums && src->checksums[0]->composite)) {
		/* The same bytes: the same sums (a composite one names the
		 * source's parts, which the copy does not have). */
		r.n_checksums = src->n_checksums;
		r.checksums = src->checksums;
	}
	uint8_t *lbuf;
	if (gw_rec_set_body(&r, p->is_inline ? NULL : p->put, p->inl, p->inl_len, &lbuf)) {
		free(acc);
		s3_put_user_meta_free(um);
		put_abandon(p, S3E_InternalError);
		return;
	}
	void *tmem = NULL; /* x-amz-tagging (checked when the request came in) */
	const char *tmsg;
	char tdir[16];
	if (src && !(s3u_hdr_str(c, "x-amz-tagging-directive", tdir, sizeof(tdir)) &&
		     strcasecmp(tdir, "REPLACE") == 0)) {
		r.n_tags = src->n_tags; /* CopyObject: the source's tags by default */
		r.tags = src->tags;
	} else if (s3_tagging_from_header(c, &r, &tmem, &tmsg)) {
		free(lbuf);
		free(acc);
		s3_put_user_meta_free(um);
		put_abandon(p, S3E_InternalError);
		return;
	}
	/* Object lock: the write's own retention and legal hold, or the
	 * bucket's default (checked when the request came in). */
	const char *lmsg;
	enum s3_err le = s3_lock_to_record(rq, &r, p->mtime_ms, &lmsg);
	if (le) {
		free(lbuf);
		free(acc);
		s3_put_user_meta_free(um);
		s3_tagging_mem_free(tmem);
		s3_rq_fail(rq, le, lmsg);
		s3_put_drop_new(p);
		return;
	}
	/* if_none: there was none when the condition was checked; the
	 * digest 0: decided on a fresh read, unchecked. */
	Iolake__Meta__PutObject po;
	Iolake__Meta__Op op;
	gw_rec_put_op(&op, &po, &r, p->cur, p->cur_read, rq->bkt_digest);
	p->committing = true;
	int rc = s3_rq_submit(rq, &op, S3_SUBJ_OBJECT, on_put_commit);
	free(lbuf);
	free(acc);
	s3_put_user_meta_free(um);
	s3_tagging_mem_free(tmem);
	if (rc)
		s3_put_drop_new(p);
}

static void on_put_cur(struct s3_rq *rq, enum s3_err e, Iolake__Meta__ObjectRecord *rec)
{
	struct s3_put *p = s3_put_of(rq);
	s3u_free_msg(p->cur);
	p->cur = rec;
	if (e && e != S3E_NoSuchKey) {
		put_abandon(p, e);
		return;
	}
	enum s3_err ce = s3_cond_ops_put(rq->c, p->cur); /* If-None-Match: *, If-Match */
	if (ce) {
		put_abandon(p, ce);
		return;
	}
	put_commit(p);
}

/* Read the current record (its generation is the commit's condition),
 * or for an inline PUT no condition needs it for, commit unconditionally
 * at once (see the top of this file). */
static void put_read_cur(struct s3_put *p)
{
	struct s3_cond_in in;
	s3_cond_in_from(&in, s3_call_http(p->rq.c));
	if (p->is_inline && !p->cur_read && !s3_cond_any(&in)) {
		put_commit(p);
		return;
	}
	p->cur_read = true;
	if (s3_rq_head(&p->rq, p->rq.bucket, p->rq.key, on_put_cur))
		s3_put_drop_new(p);
}

/* The commit found the bucket changed since the record the request was
 * decided on (a cached one): decide again on the record meta holds now,
 * as the gate and op_put_object did, and commit again. Encryption is
 * settled before the body was stored: a bucket whose default changed
 * under the request gets a retryable 503, never a differently encrypted
 * object. */
static void on_put_bucket(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__Bucket *b)
{
	struct s3_put *p = s3_put_of(rq);
	if (!e && !b)
		e = S3E_NoSuchBucket;
	Iolake__Meta__Bucket *copy = e ? NULL : (Iolake__Meta__Bucket *)s3u_copy_msg(&b->base);
	if (!e && !copy)
		e = S3E_InternalError;
	if (e) {
		put_abandon(p, e);
		return;
	}
	s3_rq_keep_bucket(rq, copy, rq->bkt_read_digest);
	const char *msg = NULL;
	if (s3_rq_decide(rq, S3_ACT_PutObject, copy, NULL) == S3_DENY)
		e = S3E_AccessDenied;
	if (!e)
		e = s3_put_check_headers(rq);
	if (!e)
		e = s3_quota_check(copy, p->size, 1);
	if (!e)
		e = s3_lock_check_headers(rq, true, &msg);
	if (!e) {
		struct s3_sse_obj so;
		e = s3_sse_for_write(rq->c, copy, &so, &msg);
		Iolake__Meta__SseKind had = p->sse ? s3_sse_put_obj(p->sse)->kind
						   : IOLAKE__META__SSE_KIND__SSE_NONE;
		if (!e && so.kind != had) {
			e = S3E_ServiceUnavailable;
			msg = "The bucket's encryption changed during the request; retry";
		}
		s3_sse_obj_wipe(&so);
	}
	if (e) {
		s3_rq_fail(rq, e, msg);
		s3_put_drop_new(p);
		return;
	}
	put_commit(p);
}

static void put_refresh_bucket(struct s3_put *p)
{
	struct s3_rq *rq = &p->rq;
	gw_bcache_drop(rq->o->bcache, rq->bucket, true);
	rq->bkt_served = true;   /* read it afresh */
	if (s3_rq_bucket(rq, rq->bucket, on_put_bucket))
		s3_put_drop_new(p);
}

/* ------------------------------------------------------------ the body */

static void put_commit_begin(struct s3_put *p)
{
	if (p->commit)
		p->commit(p);
	else
		put_read_cur(p);
}

/* The inline body's MD5, hashed with the turn's others: the ETag. */
static void on_put_etag(struct gw_md5b_item *it)
{
	struct s3_put *p = container_of(it, struct s3_put, etag_md5);
	hash_hex(it->digest, 16, p->etag);
	if (p->rq.c)   /* else the client left while it was queued */
		put_commit_begin(p);
}

/* Body verified and data durable: commit. */
static void put_maybe_commit(struct s3_put *p)
{
	if (!p->rq.c || !p->body_done || !p->data_done || p->committing)
		return;
	p->mtime_ms = s3u_wall_ms();
	p->committing = true;
	if (p->is_inline) {
		struct gw_md5b_item *it = &p->etag_md5;
		it->data = p->inl ? p->inl : (const uint8_t *)"";
		it->len = p->inl_len;
		it->done = on_put_etag;
		if (gw_md5b_queue(p->rq.o->md5b, it))
			return;
		hash_md5(it->data, it->len, it->digest);
		hash_hex(it->digest, 16, p->etag);
	} else if (p->sse) {
		s3_sse_put_etag(p->sse, p->etag);
	} else {
		snprintf(p->etag, sizeof(p->etag), "%s", gw_data_put_etag(p->put));
	}
	put_commit_begin(p);
}

void s3_put_ready(struct s3_put *p)
{
	p->body_done = p->data_done = true;
	put_maybe_commit(p);
}

static void put_body_finish(struct s3_put *p);

/* Feed the spilled bytes; true when none are left. */
static bool put_drain_spill(struct s3_put *p)
{
	if (!p->spill_len)
		return true;
	ssize_t n = gw_data_put_write(p->put, p->spill, p->spill_len);
	if (n < 0) {
		p->spill_len = 0; /* the PUT failed: on_done reports */
		return false;
	}
	memmove(p->spill, p->spill + n, p->spill_len - (size_t)n);
	p->spill_len -= (size_t)n;
	return p->spill_len == 0;
}

static void on_put_writable(struct gw_data_put *dp, void *ud)
{
	(void)dp;
	struct s3_put *p = ud;
	if (!p->rq.c || !p->put || !put_drain_spill(p))
		return;
	if (p->end_deferred) {
		p->end_deferred = false;
		put_body_finish(p);
	} else {
		http_resume(s3_call_stream(p->rq.c));
	}
}

static void on_put_done(struct gw_data_put *dp, int status, void *ud)
{
	struct s3_put *p = ud;
	if (status) {
		LOG_WARN("put failed", "bucket=%s key=%s err=%s", p->rq.bucket, LOG_Q(p->rq.key),
			 LOG_Q(gw_data_put_error(dp)));
		const char *msg;
		enum s3_err e = s3u_data_put_err(status, &msg);
		s3_rq_fail(&p->rq, e, msg);
		return;
	}
	p->data_done = true;
	put_maybe_commit(p);
}

/* Stored bytes (the body, or its ciphertext) to gw_data. */
static void put_feed_stored(struct s3_put *p, const char *data, size_t len)
{
	struct s3_call *c = p->rq.c;
	size_t n = 0;
	if (!p->spill_len) {
		ssize_t w = gw_data_put_write(p->put, data, len);
		if (w < 0)
			return; /* failed or over-fed: on_done / the verdict reports */
		n = (size_t)w;
	}
	if (n == len)
		return;
	/* The window is full: keep the rest and stop the body until
	 * on_writable. */
	size_t rest = len - n;
	if (p->spill_len + rest > p->spill_cap) {
		size_t cap = p->spill_cap ? p->spill_cap : 65536;
		while (cap < p->spill_len + rest)
			cap *= 2;
		uint8_t *b = realloc(p->spill, cap);
		if (!b) {
			gw_data_put_abort(p->put);
			return;
		}
		p->spill = b;
		p->spill_cap = cap;
	}
	memcpy(p->spill + p->spill_len, data + n, rest);
	p->spill_len += rest;
	http_pause(s3_call_stream(c));
}

void s3_put_feed(struct s3_put *p, const char *data, size_t len)
{
	if (p->is_inline) {
		if (p->inl_len + len > p->size)
			return; /* over-long: the verdict says IncompleteBody */
		memcpy(p->inl + p->inl_len, data, len);
		p->inl_len += len;
		return;
	}
	if (!p->put)
		return;
	if (!p->sse) {
		put_feed_stored(p, data, len);
		return;
	}
	struct buf *b;
	if (s3_sse_put_feed(p->sse, (const uint8_t *)data, len, &b)) {
		gw_data_put_abort(p->put);   /* on_done reports */
		return;
	}
	if (b) {
		put_feed_stored(p, (const char *)b->data, b->len);
		buf_unref(b);
	}
}

static void on_put_body(struct s3_call *c, const char *data, size_t len)
{
	s3_put_feed(s3_put_of(s3_call_user(c)), data, len);
}

/* The body read straight into the segment being filled, where
 * put_feed_stored hands it on uncopied: only when the bytes stored are
 * the bytes received (no SSE) and none wait in the spill (they go first). */
static size_t on_put_buf(struct s3_call *c, size_t want, char **buf)
{
	struct s3_put *p = s3_put_of(s3_call_user(c));
	if (p->is_inline || !p->put || p->sse || p->spill_len)
		return 0;
	uint8_t *b;
	size_t n = gw_data_put_buf(p->put, want, &b);
	*buf = (char *)b;
	return n;
}

/* Every body byte has been fed: finish the PUT. The data PUT may have
 * failed while the body came in (its shards short of their quorum): that
 * is the cluster's failure, not an incomplete body. */
static void put_body_finish(struct s3_put *p)
{
	int rc = p->put ? gw_data_put_finish(p->put) : 0;
	if (rc) {
		if (rc != -EMSGSIZE)
			LOG_WARN("put failed", "bucket=%s key=%s err=%s", p->rq.bucket,
				 LOG_Q(p->rq.key), LOG_Q(gw_data_put_error(p->put)));
		gw_data_put_free(p->put);
		p->put = NULL;
		const char *msg;
		enum s3_err e = s3u_data_put_err(rc, &msg);
		s3_rq_fail(&p->rq, e, msg);
		return;
	}
	put_maybe_commit(p);
}

static void on_put_body_end(struct s3_call *c, enum s3_err verdict)
{
	struct s3_put *p = s3_put_of(s3_call_user(c));
	if (verdict) {
		if (p->put) {
			gw_data_put_free(p->put);
			p->put = NULL;
		}
		s3_call_error(c, verdict, NULL);
		return;
	}
	if (p->is_inline)   /* s3_put_feed copied every span into p->inl */
		http_body_released(s3_call_stream(c));
	s3_put_feed_end(p);
}

void s3_put_feed_end(struct s3_put *p)
{
	struct s3_call *c = p->rq.c;
	p->body_done = true;
	if (p->is_inline) {
		if (p->inl_len != p->size) {
			s3_call_error(c, S3E_IncompleteBody, NULL);
			return;
		}
		p->data_done = true;
	} else if (p->spill_len) {
		p->end_deferred = true; /* on_writable finishes */
		return;
	} else {
		put_body_finish(p);
		return;
	}
	put_maybe_commit(p);
}

int s3_put_open(struct s3_put *p)
{
	struct s3_rq *rq = &p->rq;
	if (!p->is_inline) {
		struct gw_data_put_cbs cbs = { .on_writable = on_put_writable, .on_done = on_put_done };
		if (gw_map_object_pg(rq->o->map, rq->bucket, rq->key, &p->pg) ||
		    s3_rq_target(rq, p->pg, &p->target) || s3_put_data_start(p, &cbs, p)) {
			s3_rq_fail(rq, S3E_ServiceUnavailable, "No cluster map yet");
			return -EAGAIN;
		}
	} else {
		if (p->size && !p->inl && !(p->inl = malloc(p->size))) {
			s3_rq_fail(rq, S3E_InternalError, NULL);
			return -ENOMEM;
		}
		if (gw_map_object_pg(rq->o->map, rq->bucket, rq->key, &p->pg))
			p->pg = 0; /* inline data needs no PG */
	}
	return 0;
}

void s3_put_stream(struct s3_put *p)
{
	struct s3_rq *rq = &p->rq;
	struct s3_call *c = rq->c;
	if (!s3_call_http(c)->has_body) {
		/* No body at all: the front end already saw its end. Check the
		 * signed digest, Content-MD5 and checksum (of nothing) now. */
		enum s3_err v = p->size ? S3E_IncompleteBody : s3_call_check_empty_body(c);
		if (v) {
			s3_rq_fail(rq, v, NULL);
			return;
		}
		p->body_done = p->data_done = true;
		put_maybe_commit(p);
		return;
	}
	if (s3_put_open(p))
		return;
	enum s3_err e = s3_call_read_body(c, on_put_body, on_put_body_end);
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	s3_call_body_buf(c, on_put_buf);
	http_resume(s3_call_stream(c));
}

struct s3_put *s3_put_begin(struct s3_call *c, size_t size, bool allow_inline)
{
	struct s3_ops *o = s3_call_ctx(c);
	const struct http_request *hr = s3_call_http(c);
	uint64_t len;
	enum s3_err e = s3u_body_size(c, true, &len);
	if (e) {
		s3_call_error(c, e, NULL);
		return NULL;
	}
	if (len > S3_MAX_PUT_BYTES) {
		s3_call_error(c, S3E_EntityTooLarge, NULL);
		return NULL;
	}
	const char *tmsg;
	void *tmem;
	enum s3_err te = s3_tagging_from_header(c, NULL, &tmem, &tmsg);
	if (te) {
		s3_call_error(c, te, tmsg);
		return NULL;
	}
	struct s3_put *p = s3_rq_new(c, size);
	if (!p)
		return NULL;
	p->rq.stop = s3_put_stop;
	p->rq.fini = s3_put_fini;
	p->size = len;
	p->is_inline = allow_inline ? len <= o->inline_max : len == 0;
	if (p->is_inline && len && !(p->inl = malloc(len))) {
		s3_rq_fail(&p->rq, S3E_InternalError, NULL);
		return NULL;
	}
	/* Hold the body (unread bytes would be discarded) until the
	 * caller's checks (the bucket exists, the upload exists) pass. */
	if (hr->has_body)
		http_pause(s3_call_stream(c));
	return p;
}

/* ------------------------------------------------------------ PutObject */

void s3_put_on_checked(struct s3_rq *rq, enum s3_err e, const ProtobufCMessage *resp)
{
	(void)resp;
	if (e)
		s3_rq_fail(rq, e, NULL);
	else
		s3_put_stream(s3_put_of(rq));
}

/* The storage class and ACL headers of a write, checked before its body
 * is read (and again at the commit, which stores the ACL). */
enum s3_err s3_put_check_headers(struct s3_rq *rq)
{
	struct s3_put *p = s3_put_of(rq);
	const struct http_request *hr = s3_call_http(rq->c);
	enum s3_err e = p->form_hdrs ? s3_put_storage_class(p->form_hdrs, p->n_form_hdrs)
				     : s3_put_storage_class(hr->headers, hr->n_headers);
	if (e)
		return e;
	struct s3_obj_access *acc = malloc(sizeof(*acc));
	e = acc ? put_access(p, acc) : S3E_InternalError;
	free(acc);
	return e;
}

static void op_put_object(struct s3_call *c)
{
	struct s3_put *p = s3_put_begin(c, sizeof(*p), true);
	if (!p)
		return;
	/* The gate read the bucket (it exists; p->rq.bkt). */
	const char *msg = NULL;
	enum s3_err e = s3_put_check_headers(&p->rq);
	if (!e)
		e = s3_quota_check(s3_rq_gate_bucket(&p->rq), p->size, 1);
	if (!e)
		e = s3_lock_check_headers(&p->rq, true, &msg);   /* object lock */
	if (e) {
		s3_rq_fail(&p->rq, e, msg);
		return;
	}
	struct s3_sse_obj so;
	e = s3_sse_for_write(c, p->rq.bkt, &so, &msg);
	int rc = e ? 0 : s3_put_encrypt(p, &so);
	s3_sse_obj_wipe(&so);
	if (e)
		s3_rq_fail(&p->rq, e, msg);
	else if (!rc)
		s3_put_stream(p);
}

const struct s3_handler s3_put_handlers[] = {
	{ S3_OP_PutObject, op_put_object, S3_ACT_PutObject },
	S3_HANDLERS_END,
};
