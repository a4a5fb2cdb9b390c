/*
 * native_put.c — the native protocol's writes: Put (one call, the body in
 * its payload) and the uploads of larger bodies (PutBegin, PutAppend in
 * order, PutCommit; PutAbort), over the modules S3's PutObject uses: the
 * current record and its bucket read first (one HeadObject with the
 * bucket), s3_rq_decide for s3:PutObject, the quota, the body inline in
 * the record or through gw_data to the PG's OSDs, then the record commit
 * conditioned on the generation read (CONFLICT reads again), and the
 * replaced version's shards freed (gw_rec_drop_shards) unless versioning
 * retains it. Nothing is acknowledged before the commit.
 *
 * A Put of at most --inline-max-size bytes takes S3's one-round-trip path
 * (s3_put.c, issue 19): its bucket from the loop's bucket cache (gw_bcache,
 * else one shared GetBucket, gw_bread, which fills the cache), no read of
 * the current record, and a commit that names no generation but carries
 * the cached bucket's digest (meta refuses it as bucket_changed if the
 * bucket changed since: the bucket is read afresh, the write decided
 * again and committed again). Meta's apply queues the replaced version's
 * shards for GC and says so (OpResult.replaced_shards): the GC worker is
 * asked for a round soon.
 *
 * An upload (struct native_upload) is the state of one PUT, made once the
 * write is authorized; a Put's lives for its call, a PutBegin's across
 * calls (listed in the server, bound to its signer's access key, aborted
 * when idle). Its new shards are deleted unless a commit took them (or may
 * have: a retryable meta failure leaves them to the GC).
 *
 * Does not: SSE, object lock, checksums, user metadata (refused or not
 * offered natively: docs/native-protocol.md). Thread: the gateway loop.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "common/err.h"
#include "common/hash.h"
#include "common/log.h"
#include "gateway/gw_bcache.h"
#include "gateway/gw_bread.h"
#include "gateway/gw_map.h"
#include "gateway/gw_rec.h"
#include "gateway/native_int.h"
#include "gateway/s3_access.h"
#include "gateway/s3_quota.h"
#include "gateway/s3_util.h"

struct native_upload {
	struct native_srv *s;
	struct native_upload *next;     /* in s->uploads (PutBegin's only) */
	bool listed;
	char id[33];
	char access_key[129];
	struct s3_rq rq;                /* the signer, bucket, key, the bucket record (rq.bkt,
					 * rq.bkt_digest when it came from the cache) */
	bool uncond;                    /* an inline Put: commits naming no current record */
	struct native_call *nc;         /* the call waiting on this upload, or NULL */
	uint64_t size, fed;
	bool skip_md5;
	char *content_type;
	bool is_inline;
	uint8_t *inl;
	struct gw_data_put *put;
	struct gw_data_target target;
	uint32_t pg;
	Iolake__Meta__ObjectRecord *cur;   /* the record being replaced, or NULL */
	struct s3_head head;
	/* The payload of the waiting call not yet taken by gw_data. */
	const uint8_t *pend;
	size_t pend_len;
	bool data_done, committing, settled, dead;
	unsigned owed;                  /* meta callbacks owed */
	int tries;
	char etag[48];
	uint64_t mtime_ms;
	uint64_t last_ms;
};

/* ------------------------------------------------------------ lifecycle */

/* Delete the new body's shards unless a commit took them or may have. */
static void drop_new(struct native_upload *u)
{
	gw_rec_drop_new(u->s->o->data, &u->target, u->put, u->data_done, &u->settled);
}

static void unlist(struct native_upload *u)
{
	if (!u->listed)
		return;
	for (struct native_upload **pp = &u->s->uploads; *pp; pp = &(*pp)->next)
		if (*pp == u) {
			*pp = u->next;
			break;
		}
	u->listed = false;
	u->s->n_uploads--;
}

static void upload_maybe_free(struct native_upload *u)
{
	if (!u->dead || u->owed || u->nc)
		return;
	struct native_srv *s = u->s;
	drop_new(u);
	if (u->put)
		gw_data_put_free(u->put);   /* an unfinished PUT deletes what it wrote */
	s3u_free_msg(u->cur);
	s3u_free_msg(u->rq.bkt);
	free(u->rq.key);
	free(u->rq.grants);
	free(u->inl);
	free(u->content_type);
	free(u);
	native_srv_unref(s);
}

/* The upload is over (committed, failed or aborted). */
static void upload_end(struct native_upload *u)
{
	unlist(u);
	u->dead = true;
	upload_maybe_free(u);
}

/* Answer the waiting call with e and end the upload. */
static void upload_fail(struct native_upload *u, enum s3_err e, const char *msg)
{
	struct native_call *nc = u->nc;
	u->nc = NULL;
	if (nc)
		native_fail(nc, e, msg);
	upload_end(u);
}

/* ------------------------------------------------------------ commit */

static void commit(struct native_upload *u);
static void bucket_refresh(struct native_upload *u);

static const char *no_hdr(void *ctx, const char *name, size_t *len)
{
	(void)ctx, (void)name, (void)len;
	return NULL;   /* a native PUT names no ACL: the bucket's ownership decides */
}

static void on_commit(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct native_upload *u = ud;
	u->owed--;
	enum s3_err e = s3_status_err(S3_SUBJ_OBJECT, err, err ? 0 : (int)res->status);
	if (e == S3E_OK) {
		u->settled = true;
		if (!res->retained)   /* versioning keeps the replaced version */
			gw_rec_drop_shards(u->s->o->map, u->s->o->data, u->cur);
		if (u->uncond && res->replaced_shards)
			s3_ops_kick_gc(u->s->o);   /* not read, so not deleted here */
		struct native_call *nc = u->nc;
		u->nc = NULL;
		if (nc) {
			Iolake__Native__PutResponse r = IOLAKE__NATIVE__PUT_RESPONSE__INIT;
			r.etag = u->etag;
			r.size = u->size;
			native_ok(nc, &r.base, NULL);
		}
		upload_end(u);
		return;
	}
	if (!err && res->status == IOLAKE__META__STATUS__STATUS_CONFLICT && !u->dead &&
	    ++u->tries < S3_COMMIT_TRIES) {
		if (res->bucket_changed)
			bucket_refresh(u);   /* decided on a cached bucket that changed */
		else
			commit(u);   /* a concurrent writer first: read again, go again */
		return;
	}
	if (err && iol_err_retryable(err))
		u->settled = true;   /* meta may have applied it: the shards stay */
	upload_fail(u, e, NULL);
}

static void commit_submit(struct native_upload *u)
{
	struct s3_rq *rq = &u->rq;
	Iolake__Meta__ObjectRecord r = IOLAKE__META__OBJECT_RECORD__INIT;
	r.bucket = rq->bucket;
	r.key = rq->key;
	r.size = u->size;
	r.etag = u->etag;
	r.content_type = u->content_type;
	r.mtime_ms = u->mtime_ms;
	struct s3_obj_access *acc = malloc(sizeof(*acc));
	enum s3_err ae = acc ? s3_access_for_object_from(rq, acc, no_hdr, NULL) : S3E_InternalError;
	if (ae) {
		free(acc);
		drop_new(u);
		upload_fail(u, ae, NULL);
		return;
	}
	s3_access_to_record(acc, &r);
	r.pg = u->pg;
	uint8_t *lbuf;
	if (gw_rec_set_body(&r, u->is_inline ? NULL : u->put, u->inl, u->size, &lbuf)) {
		free(acc);
		drop_new(u);
		upload_fail(u, S3E_InternalError, NULL);
		return;
	}
	Iolake__Meta__PutObject po;
	Iolake__Meta__Op op;
	/* Read before the body (u->cur, or none: if_none), or an inline Put
	 * naming neither; the digest of a cached bucket, else 0. */
	gw_rec_put_op(&op, &po, &r, u->cur, !u->uncond, u->rq.bkt_digest);
	s3_rq_stamp_op(rq, &op);   /* the bucket's versioning */
	int rc = meta_client_submit(u->s->o->mc, &op, on_commit, u);
	free(lbuf);
	free(acc);
	if (rc) {
		drop_new(u);
		upload_fail(u, S3E_ServiceUnavailable, NULL);
		return;
	}
	u->owed++;
}

static void on_cur(struct s3_head *h, enum s3_err e, Iolake__Meta__ObjectRecord *rec)
{
	struct native_upload *u = container_of(h, struct native_upload, head);
	u->owed--;
	s3u_free_msg(u->cur);
	u->cur = rec;
	if (u->dead) {
		upload_maybe_free(u);
		return;
	}
	if (e && e != S3E_NoSuchKey) {
		drop_new(u);
		upload_fail(u, e, NULL);
		return;
	}
	commit_submit(u);
}

/* Read the current record again (its generation conditions the commit). */
static void commit(struct native_upload *u)
{
	u->uncond = false;   /* conditioned on what it reads */
	u->head.with_bucket = false;
	if (s3_head_start(u->s->o->mc, &u->head, u->rq.bucket, u->rq.key, on_cur)) {
		drop_new(u);
		upload_fail(u, S3E_ServiceUnavailable, NULL);
		return;
	}
	u->owed++;
}

/* The body is whole and durable: the ETag, then the commit on the record
 * read before the body (a CONFLICT reads again). */
static void data_ready(struct native_upload *u)
{
	u->data_done = true;
	u->mtime_ms = s3u_wall_ms();
	uint8_t d[16];
	if (u->skip_md5) {
		/* An opaque "<hex>-0": no multipart object has 0 parts. */
		if (u->is_inline)
			RAND_bytes(d, sizeof(d));
		else
			memcpy(d, gw_data_put_layout(u->put)->object_id, 16);
		hash_hex(d, 16, u->etag);
		strcat(u->etag, "-0");
	} else if (u->is_inline) {
		hash_md5(u->inl ? u->inl : (const uint8_t *)"", u->size, d);
		hash_hex(d, 16, u->etag);
	} else {
		snprintf(u->etag, sizeof(u->etag), "%s", gw_data_put_etag(u->put));
	}
	u->committing = true;
	commit_submit(u);
}

/* ------------------------------------------------------------ the body */

static void on_data_done(struct gw_data_put *dp, int status, void *ud)
{
	struct native_upload *u = ud;
	if (status) {
		LOG_WARN("native put failed", "bucket=%s key=%s err=%s", u->rq.bucket,
			 LOG_Q(u->rq.key), LOG_Q(gw_data_put_error(dp)));
		gw_data_put_free(u->put);
		u->put = NULL;
		const char *msg;
		enum s3_err e = s3u_data_put_err(status, &msg);
		upload_fail(u, e, msg);
		return;
	}
	data_ready(u);
}

/* Every byte fed: finish the data PUT (or the inline body) and commit. */
static void body_end(struct native_upload *u)
{
	if (u->is_inline) {
		data_ready(u);
		return;
	}
	int rc = gw_data_put_finish(u->put);
	if (rc) {   /* short, or failed while fed (see s3u_data_put_err) */
		const char *msg;
		enum s3_err e = s3u_data_put_err(rc, &msg);
		upload_fail(u, e, msg);
	}
	/* else on_data_done follows */
}

/* The waiting call's payload is all taken. */
static void fed_all(struct native_upload *u)
{
	struct native_call *nc = u->nc;
	if (nc->method == NATIVE_M_PUT) {
		body_end(u);
		return;
	}
	/* PutAppend: answered once its bytes are in. */
	u->nc = NULL;
	u->last_ms = loop_now_ms();
	Iolake__Native__PutAppendResponse r = IOLAKE__NATIVE__PUT_APPEND_RESPONSE__INIT;
	r.offset = u->fed;
	native_ok(nc, &r.base, NULL);
}

/* Feed what is pending; gw_data's window may take less (on_writable then
 * feeds on). */
static void feed(struct native_upload *u)
{
	if (u->is_inline) {
		memcpy(u->inl + u->fed, u->pend, u->pend_len);
		u->fed += u->pend_len;
		u->pend_len = 0;
		fed_all(u);
		return;
	}
	while (u->pend_len) {
		ssize_t n = gw_data_put_write(u->put, u->pend, u->pend_len);
		if (n < 0)
			return;   /* the PUT failed: on_data_done reports */
		if (n == 0)
			return;   /* window full: on_writable */
		u->pend += n;
		u->pend_len -= (size_t)n;
		u->fed += (uint64_t)n;
	}
	fed_all(u);
}

static void on_writable(struct gw_data_put *dp, void *ud)
{
	(void)dp;
	struct native_upload *u = ud;
	if (u->nc && u->pend_len)
		feed(u);
}

/* Start the data path: an inline buffer, or a gw_data PUT to the PG. */
static enum s3_err upload_open(struct native_upload *u)
{
	struct s3_ops *o = u->s->o;
	u->is_inline = u->size <= o->inline_max;
	if (u->is_inline) {
		if (u->size && !(u->inl = malloc(u->size)))
			return S3E_InternalError;
		if (gw_map_object_pg(o->map, u->rq.bucket, u->rq.key, &u->pg))
			u->pg = 0;   /* inline data needs no PG */
		return S3E_OK;
	}
	struct gw_data_put_cbs cbs = { .on_writable = on_writable, .on_done = on_data_done };
	if (gw_map_object_pg(o->map, u->rq.bucket, u->rq.key, &u->pg) ||
	    gw_map_target(o->map, u->pg, &u->target) ||
	    gw_data_put_start(o->data, &u->target, u->size, NULL, &cbs, u, &u->put))
		return S3E_ServiceUnavailable;
	if (u->skip_md5)
		gw_data_put_no_etag(u->put);
	return S3E_OK;
}

/* ------------------------------------------------------------ the steps */

/* The checks of a write on the bucket and the record read: S3E_OK, or the
 * error (AccessDenied first, as S3's gate). */
static enum s3_err write_check(struct s3_rq *rq, enum s3_err e, uint64_t size, const char **msg)
{
	*msg = NULL;
	if (e && e != S3E_NoSuchKey)
		return e;
	const Iolake__Meta__Bucket *b = rq->bkt;
	if (!b)
		return S3E_NoSuchBucket;
	if (s3_rq_decide(rq, S3_ACT_PutObject, b, NULL) != S3_ALLOW)
		return S3E_AccessDenied;
	if (size > NATIVE_OBJECT_MAX)
		return S3E_EntityTooLarge;
	if (b->default_sse != IOLAKE__META__SSE_KIND__SSE_NONE ||
	    (b->object_lock && b->object_lock->enabled)) {
		*msg = "bucket with default encryption or object lock: write it over S3";
		return S3E_NotImplemented;
	}
	return s3_quota_check(b, size, 1);
}

/* An upload from an authorized call: the call's principal, bucket, key and
 * bucket record move into it. */
static struct native_upload *upload_new(struct native_call *nc, uint64_t size, bool skip_md5,
					const char *content_type, Iolake__Meta__ObjectRecord *cur)
{
	struct native_upload *u = calloc(1, sizeof(*u));
	if (!u || (content_type && content_type[0] && !(u->content_type = strdup(content_type)))) {
		free(u);
		s3u_free_msg(cur);
		return NULL;
	}
	u->s = nc->s;
	nc->s->live++;
	u->rq = nc->rq;            /* moved: the call keeps none of its pointers */
	u->rq.who.user = u->rq.user;
	u->rq.who.grants = u->rq.grants;
	nc->rq.bkt = NULL;
	nc->rq.obj = NULL;
	nc->rq.key = NULL;
	nc->rq.grants = NULL;
	snprintf(u->access_key, sizeof(u->access_key), "%s", native_call_key(nc));
	u->size = size;
	u->skip_md5 = skip_md5;
	u->cur = cur;
	u->last_ms = loop_now_ms();
	return u;
}

/* An authorized Put: its upload takes the payload (cur: the record read,
 * or NULL; uncond: an inline Put that read none). */
static void put_go(struct native_call *nc, Iolake__Meta__ObjectRecord *cur, bool uncond)
{
	const Iolake__Native__PutRequest *m = (const void *)nc->msg;
	struct native_upload *u = upload_new(nc, nc->payload.len, m->skip_md5, m->content_type, cur);
	if (!u) {
		native_fail(nc, S3E_InternalError, NULL);
		return;
	}
	u->uncond = uncond;
	u->nc = nc;
	enum s3_err ce = upload_open(u);
	if (ce) {
		upload_fail(u, ce, NULL);
		return;
	}
	u->pend = nc->payload.buf ? buf_slice_data(&nc->payload) : (const uint8_t *)"";
	u->pend_len = nc->payload.len;
	feed(u);
}

static void on_put_head(struct s3_head *h, enum s3_err e, Iolake__Meta__ObjectRecord *rec)
{
	struct native_call *nc = native_call_of_head(h);
	const char *msg;
	enum s3_err ce = write_check(&nc->rq, e, nc->payload.len, &msg);
	if (ce) {
		s3u_free_msg(rec);
		native_fail(nc, ce, msg);
		return;
	}
	put_go(nc, rec, false);
}

/* ------------------------------------------------------------ the inline Put */

/* A GetBucket's answer into rq->bkt (a copy, cached when it may be, with
 * rq->bkt_digest the digest a commit may carry, else 0): S3E_OK or the
 * error. */
static enum s3_err bucket_take(struct s3_rq *rq, int err, const ProtobufCMessage *resp)
{
	const Iolake__Meta__GetBucketResponse *r = (const void *)resp;
	enum s3_err e = s3_status_err(S3_SUBJ_BUCKET_READ, err, err ? 0 : (int)r->status);
	if (e)
		return e;
	if (!r->bucket)
		return S3E_NoSuchBucket;
	Iolake__Meta__Bucket *copy = (Iolake__Meta__Bucket *)s3u_copy_msg(&r->bucket->base);
	if (!copy)
		return S3E_InternalError;
	s3_rq_keep_bucket(rq, copy, r->bucket_digest);
	return S3E_OK;
}

static void on_inline_bucket(void *ud, int err, const ProtobufCMessage *resp)
{
	struct native_call *nc = ud;
	const char *msg = NULL;
	enum s3_err e = bucket_take(&nc->rq, err, resp);
	if (!e)
		e = write_check(&nc->rq, S3E_OK, nc->payload.len, &msg);
	if (e) {
		native_fail(nc, e, msg);
		return;
	}
	put_go(nc, NULL, true);
}

/* The bucket from the cache when it allows the write (a refusal, or a
 * miss, is decided on a fresh read), then the Put. */
static void put_inline(struct native_call *nc)
{
	struct s3_ops *o = nc->s->o;
	uint64_t digest = 0;
	Iolake__Meta__Bucket *b = gw_bcache_get(o->bcache, nc->rq.bucket, loop_now_ms(), &digest);
	if (b) {
		const char *msg;
		nc->rq.bkt = b;
		if (write_check(&nc->rq, S3E_OK, nc->payload.len, &msg) == S3E_OK) {
			nc->rq.bkt_digest = digest;
			put_go(nc, NULL, true);
			return;
		}
		s3u_free_msg(b);
		nc->rq.bkt = NULL;
	}
	if (gw_bread_read(o->bread, o->mc, nc->rq.bucket, &nc->rq.bread_w, on_inline_bucket, nc))
		native_fail(nc, S3E_ServiceUnavailable, NULL);
}

static void on_refresh_bucket(void *ud, int err, const ProtobufCMessage *resp)
{
	struct native_upload *u = ud;
	u->owed--;
	if (u->dead) {
		upload_maybe_free(u);
		return;
	}
	const char *msg = NULL;
	enum s3_err e = bucket_take(&u->rq, err, resp);
	if (!e)
		e = write_check(&u->rq, S3E_OK, u->size, &msg);
	if (e) {
		drop_new(u);
		upload_fail(u, e, msg);
		return;
	}
	commit_submit(u);
}

/* The commit found the cached bucket changed: read it afresh, decide
 * again, commit again. */
static void bucket_refresh(struct native_upload *u)
{
	struct s3_ops *o = u->s->o;
	gw_bcache_drop(o->bcache, u->rq.bucket, true);
	if (gw_bread_read(o->bread, o->mc, u->rq.bucket, &u->rq.bread_w, on_refresh_bucket, u)) {
		drop_new(u);
		upload_fail(u, S3E_ServiceUnavailable, NULL);
		return;
	}
	u->owed++;
}

void native_put_step(struct native_call *nc)
{
	if (!nc->rq.key || !nc->rq.key[0]) {
		native_fail(nc, S3E_InvalidArgument, "a key is needed");
		return;
	}
	if (nc->payload.len > NATIVE_CHUNK_MAX) {
		native_fail(nc, S3E_EntityTooLarge, "a Put carries at most 16 MiB: use PutBegin");
		return;
	}
	if (nc->payload.len <= nc->s->o->inline_max) {
		put_inline(nc);
		return;
	}
	native_head(nc, nc->rq.bucket, nc->rq.key, on_put_head);
}

static void on_begin_head(struct s3_head *h, enum s3_err e, Iolake__Meta__ObjectRecord *rec)
{
	struct native_call *nc = native_call_of_head(h);
	const Iolake__Native__PutBeginRequest *m = (const void *)nc->msg;
	const char *msg;
	enum s3_err ce = write_check(&nc->rq, e, m->size, &msg);
	if (!ce && nc->s->n_uploads >= nc->s->uploads_max) {
		ce = S3E_SlowDown;
		msg = "too many uploads in progress on this gateway";
	}
	if (ce) {
		s3u_free_msg(rec);
		native_fail(nc, ce, msg);
		return;
	}
	struct native_upload *u = upload_new(nc, m->size, m->skip_md5, m->content_type, rec);
	if (!u) {
		native_fail(nc, S3E_InternalError, NULL);
		return;
	}
	if ((ce = upload_open(u))) {
		native_fail(nc, ce, NULL);
		upload_end(u);
		return;
	}
	uint8_t id[16];
	RAND_bytes(id, sizeof(id));
	hash_hex(id, sizeof(id), u->id);
	u->next = u->s->uploads;
	u->s->uploads = u;
	u->listed = true;
	u->s->n_uploads++;
	Iolake__Native__PutBeginResponse r = IOLAKE__NATIVE__PUT_BEGIN_RESPONSE__INIT;
	r.upload = u->id;
	native_ok(nc, &r.base, NULL);
}

void native_put_begin_step(struct native_call *nc)
{
	if (!nc->rq.key || !nc->rq.key[0]) {
		native_fail(nc, S3E_InvalidArgument, "a key is needed");
		return;
	}
	native_head(nc, nc->rq.bucket, nc->rq.key, on_begin_head);
}

/* The upload named by id, begun by the same access key and not busy with
 * another call; NULL after answering. */
static struct native_upload *find_upload(struct native_call *nc, const char *id)
{
	struct native_upload *u = nc->s->uploads;
	while (u && (!id || strcmp(u->id, id)))
		u = u->next;
	if (!u || strcmp(u->access_key, native_call_key(nc))) {
		native_fail(nc, S3E_NoSuchUpload, NULL);
		return NULL;
	}
	if (u->nc) {
		native_fail(nc, S3E_InvalidRequest, "another call of this upload is in progress");
		return NULL;
	}
	return u;
}

void native_put_append_step(struct native_call *nc)
{
	const Iolake__Native__PutAppendRequest *m = (const void *)nc->msg;
	struct native_upload *u = find_upload(nc, m->upload);
	if (!u)
		return;
	if (m->offset != u->fed) {
		native_fail(nc, S3E_InvalidArgument, "offset is not the bytes taken so far");
		return;
	}
	if (nc->payload.len > u->size - u->fed) {
		native_fail(nc, S3E_InvalidArgument, "more bytes than PutBegin announced");
		return;
	}
	u->nc = nc;
	u->pend = nc->payload.buf ? buf_slice_data(&nc->payload) : (const uint8_t *)"";
	u->pend_len = nc->payload.len;
	feed(u);
}

void native_put_commit_step(struct native_call *nc)
{
	const Iolake__Native__PutCommitRequest *m = (const void *)nc->msg;
	struct native_upload *u = find_upload(nc, m->upload);
	if (!u)
		return;
	if (u->fed != u->size) {
		native_fail(nc, S3E_IncompleteBody, NULL);
		return;
	}
	unlist(u);
	u->nc = nc;
	body_end(u);
}

void native_put_abort_step(struct native_call *nc)
{
	const Iolake__Native__PutAbortRequest *m = (const void *)nc->msg;
	struct native_upload *u = find_upload(nc, m->upload);
	if (!u)
		return;
	upload_end(u);
	Iolake__Native__PutAbortResponse r = IOLAKE__NATIVE__PUT_ABORT_RESPONSE__INIT;
	native_ok(nc, &r.base, NULL);
}

void native_uploads_reap(struct native_srv *s, uint64_t now_ms, uint64_t idle_ms)
{
	struct native_upload *u = s->uploads, *next;
	for (; u; u = next) {
		next = u->next;
		if (u->nc || (idle_ms && u->last_ms + idle_ms > now_ms))
			continue;
		LOG_INFO("native upload aborted", "bucket=%s key=%s idle_ms=%llu", u->rq.bucket,
			 LOG_Q(u->rq.key), (unsigned long long)(now_ms - u->last_ms));
		upload_end(u);
	}
}
