/*
 * s3_delete.c — DeleteObject and DeleteObjects (POST /bucket?delete, a
 * Delete XML document of up to 1,000 keys). Each key is deleted the same
 * way: read the record, delete it conditioned on its generation (a
 * CONFLICT reads again), free its shards after the commit. A key that
 * does not exist counts as deleted, as in S3 (DeleteObject answers 204
 * when the bucket exists). DeleteObjects answers one result per key
 * (Deleted, or Error with Code and Message; quiet mode only the errors)
 * and, like S3, wants Content-MD5 (or an x-amz-checksum-* header), which
 * the front end verifies.
 *
 * Concurrency: DeleteObjects runs up to WINDOW keys at once; the meta
 * client coalesces their concurrent submits into shared Raft entries.
 * Every key whose delete was submitted frees its shards when the commit
 * comes back, even if the client has gone meanwhile; keys not started by
 * then are left alone. Each key in flight holds one pending of the
 * request, so the request (keys, results) outlives the last of them.
 *
 * Versioning (issue 17): with a versionId, or in a bucket that has
 * versioning, a key is not read first: the DeleteObject names the version
 * (or none, for a delete marker) and meta decides what goes, queueing its
 * shards for the GC worker (nothing for us to free); the answers carry
 * x-amz-version-id / x-amz-delete-marker, and DeleteObjects' <Deleted>
 * VersionId, DeleteMarker and DeleteMarkerVersionId.
 *
 * Does not delete buckets (s3_bucket.c) or uploads (s3_multipart.c).
 *
 * Thread: the gateway loop; no blocking call.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gateway/gw_rec.h"
#include "gateway/s3_body.h"
#include "gateway/s3_handlers.h"
#include "gateway/s3_rq.h"
#include "gateway/s3_util.h"
#include "gateway/s3_version.h"
#include "gateway/xml_parse.h"

#define DM_KEYS_MAX 1000
#define DM_BODY_MAX (2u << 20)   /* 1,000 keys of 1,024 bytes, escaped, fit */
#define WINDOW 64

/* The DeleteObject op of (bucket, key) conditioned on cur's generation,
 * into the caller's op and d. */
static void delete_op(Iolake__Meta__Op *op, Iolake__Meta__DeleteObject *d, const char *bucket,
		      const char *key, const Iolake__Meta__ObjectRecord *cur)
{
	iolake__meta__delete_object__init(d);
	d->bucket = (char *)bucket;
	d->key = (char *)key;
	d->if_generation = cur->generation;
	iolake__meta__op__init(op);
	op->body_case = IOLAKE__META__OP__BODY_DELETE_OBJECT;
	op->delete_object = d;
}

/* ------------------------------------------------------------ DeleteObject */

struct del_rq {
	struct s3_rq rq;
	Iolake__Meta__ObjectRecord *cur;   /* the record being deleted */
};

static struct del_rq *del_of(struct s3_rq *rq)
{
	return container_of(rq, struct del_rq, rq);
}

static void del_fini(struct s3_rq *rq)
{
	s3u_free_msg(del_of(rq)->cur);
}

static void del_read_cur(struct del_rq *d);

static void on_del_commit(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__OpResult *res)
{
	struct del_rq *d = del_of(rq);
	if (s3_rq_applied(res) && !res->retained && d->cur)
		gw_rec_drop_shards(rq->o->map, rq->o->data, d->cur);
	if (!rq->c)
		return;
	if (!e) {
		if (s3_rq_applied(res))
			s3_ver_headers(rq);
		http_respond(s3_call_stream(rq->c), 204, NULL, 0, NULL, NULL);
	}
	else if (s3_rq_conflict(res) && ++rq->tries < S3_COMMIT_TRIES)
		del_read_cur(d);
	else
		s3_rq_fail(rq, e, NULL);
}

/* No such object: 204 when the bucket exists, as S3. */
static void on_del_bucket(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__Bucket *b)
{
	(void)b;
	if (e)
		s3_rq_fail(rq, e, NULL);
	else
		http_respond(s3_call_stream(rq->c), 204, NULL, 0, NULL, NULL);
}

static void on_del_cur(struct s3_rq *rq, enum s3_err e, Iolake__Meta__ObjectRecord *rec)
{
	struct del_rq *d = del_of(rq);
	if (e == S3E_NoSuchKey) {
		s3_rq_bucket(rq, rq->bucket, on_del_bucket);
		return;
	}
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	s3u_free_msg(d->cur);
	d->cur = rec;
	Iolake__Meta__DeleteObject del;
	Iolake__Meta__Op op;
	delete_op(&op, &del, rq->bucket, rq->key, d->cur);
	s3_rq_submit(rq, &op, S3_SUBJ_OBJECT_DEL, on_del_commit);
}

static void del_read_cur(struct del_rq *d)
{
	s3_rq_head(&d->rq, d->rq.bucket, d->rq.key, on_del_cur);
}

static void op_delete_object(struct s3_call *c)
{
	struct del_rq *d = s3_rq_new(c, sizeof(*d));
	if (!d)
		return;
	d->rq.fini = del_fini;
	bool bad;
	const char *vid = s3_ver_query(&d->rq, &bad);
	if (bad) {
		s3_rq_fail(&d->rq, S3E_InvalidVersionId, NULL);
		return;
	}
	if (vid || s3_ver_bucket_versioned(&d->rq)) {
		/* Versioning: meta decides what goes (a marker, or exactly
		 * the version named) and queues its shards for the GC worker;
		 * nothing to read first, nothing for us to free. */
		Iolake__Meta__DeleteObject del = IOLAKE__META__DELETE_OBJECT__INIT;
		Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
		del.bucket = d->rq.bucket;
		del.key = d->rq.key;
		op.body_case = IOLAKE__META__OP__BODY_DELETE_OBJECT;
		op.delete_object = &del;
		op.version_id = (char *)(vid ? vid : "");
		s3_rq_submit(&d->rq, &op, S3_SUBJ_OBJECT_DEL, on_del_commit);
		return;
	}
	del_read_cur(d);
}

/* ------------------------------------------------------------ DeleteObjects */

struct dm_rq;

struct dm_key {
	struct dm_rq *d;
	struct s3_head head;         /* its HeadObject in flight */
	const char *key;             /* into d->arena */
	size_t key_len;
	int tries;
	bool done;
	enum s3_err err;             /* S3E_OK: Deleted */
	Iolake__Meta__ObjectRecord *cur;   /* record being deleted */
	/* Versioning: the <VersionId> asked ("": none; into d->arena), and
	 * what meta did: the version deleted or the marker made, a marker? */
	const char *vid;
	char res_vid[24];
	bool res_marker;
};

struct dm_rq {
	struct s3_rq rq;
	struct s3_body body;
	bool quiet;
	size_t n, next, inflight, finished;
	char *arena;
	struct dm_key *k;
};

static struct dm_rq *dm_of(struct s3_rq *rq)
{
	return container_of(rq, struct dm_rq, rq);
}

static int key_read(struct dm_key *k);
static int key_submit_versioned(struct dm_key *k);

static bool vid_ok(const char *v)
{
	if (!strcmp(v, "null"))
		return true;
	bool ok = strlen(v) == 16;
	for (size_t i = 0; ok && i < 16; i++)
		ok = (v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'f');
	return ok;
}

static void dm_fini(struct s3_rq *rq)
{
	struct dm_rq *d = dm_of(rq);
	for (size_t i = 0; d->k && i < d->n; i++)
		s3u_free_msg(d->k[i].cur);
	free(d->k);
	free(d->arena);
	s3_body_free(&d->body);
}

static void dm_respond(struct dm_rq *d)
{
	struct xml_w *w = s3_call_xml(d->rq.c);
	xml_decl(w);
	xml_open_ns(w, "DeleteResult", S3_XMLNS);
	for (size_t i = 0; i < d->n; i++) {
		const struct dm_key *k = &d->k[i];
		if (k->err == S3E_OK && d->quiet)
			continue;
		xml_open(w, k->err == S3E_OK ? "Deleted" : "Error");
		xml_elem_n(w, "Key", k->key, k->key_len);
		if (k->vid && k->vid[0])
			xml_elem(w, "VersionId", k->vid);
		if (k->err == S3E_OK && k->res_marker) {
			xml_elem(w, "DeleteMarker", "true");
			xml_elem(w, "DeleteMarkerVersionId", k->res_vid[0] ? k->res_vid : "null");
		}
		if (k->err != S3E_OK) {
			xml_elem(w, "Code", s3_err_code(k->err));
			xml_elem(w, "Message", s3_err_message(k->err));
		}
		xml_close(w);
	}
	xml_close(w);
	s3_call_send_xml(d->rq.c, 200);
}

static void key_finish(struct dm_key *k, enum s3_err e)
{
	k->done = true;
	k->err = e;
	k->d->finished++;
}

/* Start keys while the window has room and the client is there. Keys that
 * fail at once are only counted. */
static void dm_pump(struct dm_rq *d)
{
	while (d->rq.c && d->next < d->n && d->inflight < WINDOW) {
		struct dm_key *k = &d->k[d->next++];
		if (k->key_len > S3_KEY_MAX) {
			key_finish(k, S3E_KeyTooLongError);
			continue;
		}
		/* A bucket policy decides each key (s3_rq's gate let the
		 * request through for that). */
		const Iolake__Meta__Bucket *b = d->rq.bkt;
		if (b && b->policy && b->policy[0] &&
		    s3_rq_decide_key(&d->rq, S3_ACT_DeleteObject, k->key, b, NULL) == S3_DENY) {
			key_finish(k, S3E_AccessDenied);
			continue;
		}
		bool versioned = (k->vid && k->vid[0]) || s3_ver_bucket_versioned(&d->rq);
		if (k->vid && k->vid[0] && !vid_ok(k->vid)) {
			key_finish(k, S3E_InvalidVersionId);
			continue;
		}
		/* Each key in flight holds one pending of the request. */
		d->rq.pending++;
		d->inflight++;
		if (versioned ? key_submit_versioned(k) : key_read(k)) {
			d->rq.pending--;
			d->inflight--;
			key_finish(k, S3E_ServiceUnavailable);
		}
	}
}

/* After progress: start more; once nothing is in flight and every key is
 * answered, respond (nothing when the client is gone). */
static void dm_settle(struct dm_rq *d)
{
	dm_pump(d);
	if (d->inflight == 0 && d->finished == d->n && d->rq.c)
		dm_respond(d);
}

/* The key in flight is answered: gives back its pending. */
static void key_done(struct dm_key *k, enum s3_err e)
{
	struct dm_rq *d = k->d;
	key_finish(k, e);
	d->inflight--;
	dm_settle(d);
	s3_rq_back(&d->rq); /* may free d when the exchange is over */
}

static void on_key_commit(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t idx)
{
	(void)idx;
	struct dm_key *k = ud;
	struct s3_rq *rq = &k->d->rq;
	enum s3_err e = s3_status_err(S3_SUBJ_OBJECT_DEL, err, err ? 0 : (int)res->status);
	if (s3_rq_applied(res) && !res->retained && k->cur)
		gw_rec_drop_shards(rq->o->map, rq->o->data, k->cur);
	if (s3_rq_applied(res)) {
		snprintf(k->res_vid, sizeof(k->res_vid), "%s", res->version_id);
		k->res_marker = res->delete_marker;
	}
	if (e == S3E_OK) {
		key_done(k, S3E_OK);
	} else if (s3_rq_conflict(res) && rq->c && ++k->tries < S3_COMMIT_TRIES) {
		if (key_read(k)) /* overwritten meanwhile: delete the new version */
			key_done(k, S3E_ServiceUnavailable);
	} else {
		key_done(k, e);
	}
}

static void on_key_head(struct s3_head *h, enum s3_err e, Iolake__Meta__ObjectRecord *rec)
{
	struct dm_key *k = container_of(h, struct dm_key, head);
	struct s3_rq *rq = &k->d->rq;
	if (e == S3E_NoSuchKey) {
		key_done(k, S3E_OK); /* nothing there: Deleted, as S3 */
		return;
	}
	if (e) {
		key_done(k, e);
		return;
	}
	if (!rq->c) {
		s3u_free_msg(rec);
		key_done(k, S3E_InternalError); /* client gone: change nothing */
		return;
	}
	s3u_free_msg(k->cur);
	k->cur = rec;
	Iolake__Meta__DeleteObject del;
	Iolake__Meta__Op op;
	delete_op(&op, &del, rq->bucket, k->key, k->cur);
	s3_rq_stamp_op(rq, &op);   /* versioning: a marker, the shards kept */
	/* The key's pending carries over to the submit. */
	if (meta_client_submit(rq->o->mc, &op, on_key_commit, k))
		key_done(k, S3E_ServiceUnavailable);
}

/* Versioning (a VersionId, or a versioned bucket): meta decides what
 * goes and queues its shards; nothing to read first. 0 or the meta
 * client's error (no callback then). */
static int key_submit_versioned(struct dm_key *k)
{
	struct s3_rq *rq = &k->d->rq;
	Iolake__Meta__DeleteObject del = IOLAKE__META__DELETE_OBJECT__INIT;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	del.bucket = rq->bucket;
	del.key = (char *)k->key;
	op.body_case = IOLAKE__META__OP__BODY_DELETE_OBJECT;
	op.delete_object = &del;
	op.version_id = (char *)(k->vid ? k->vid : "");
	s3_rq_stamp_op(rq, &op);
	return meta_client_submit(rq->o->mc, &op, on_key_commit, k);
}

/* Read the key's record (the caller holds the key's pending). 0 or the
 * meta client's error (no callback then). */
static int key_read(struct dm_key *k)
{
	struct s3_rq *rq = &k->d->rq;
	return s3_head_start(rq->o->mc, &k->head, rq->bucket, k->key, on_key_head);
}

static void on_dm_bucket(struct s3_rq *rq, enum s3_err e, const Iolake__Meta__Bucket *b)
{
	(void)b;
	if (e) {
		s3_rq_fail(rq, e, NULL);
		return;
	}
	rq->pending++; /* held across the start of the keys */
	dm_settle(dm_of(rq));
	s3_rq_back(rq);
}

static void on_dm_body(struct s3_rq *rq, enum s3_err verdict)
{
	struct dm_rq *d = dm_of(rq);
	if (verdict) {
		s3_rq_fail(rq, verdict, NULL);
		return;
	}
	const char **keys = calloc(DM_KEYS_MAX, sizeof(*keys));
	const char **vids = calloc(DM_KEYS_MAX, sizeof(*vids));
	size_t *lens = calloc(DM_KEYS_MAX, sizeof(*lens));
	d->arena = malloc(d->body.len + 1);
	d->k = calloc(DM_KEYS_MAX, sizeof(*d->k));
	if (!keys || !vids || !lens || !d->arena || !d->k) {
		free(keys), free(vids), free(lens);
		s3_rq_fail(rq, S3E_InternalError, NULL);
		return;
	}
	struct xmlp_delete del = { .keys = keys, .key_lens = lens, .max_keys = DM_KEYS_MAX,
				   .arena = d->arena, .arena_cap = d->body.len + 1,
				   .version_ids = vids };
	int rc = xmlp_delete((const char *)d->body.buf, d->body.len, DM_BODY_MAX, &del);
	if (rc) {
		free(keys), free(vids), free(lens);
		s3_rq_fail(rq, S3E_MalformedXML, NULL);
		return;
	}
	d->quiet = del.quiet;
	d->n = del.n_keys;
	for (size_t i = 0; i < d->n; i++)
		d->k[i] = (struct dm_key){ .d = d, .key = keys[i], .key_len = lens[i],
					   .vid = vids[i] };
	free(keys), free(vids), free(lens);
	s3_rq_bucket(rq, rq->bucket, on_dm_bucket);
}

/* Content-MD5, or one of the flexible checksums newer SDKs send instead. */
static bool has_integrity_header(struct s3_call *c)
{
	if (s3u_hdr(c, "content-md5"))
		return true;
	const struct http_request *hr = s3_call_http(c);
	for (size_t i = 0; i < hr->n_headers; i++) {
		const struct sigv4_header *h = &hr->headers[i];
		if (h->name_len > 15 && strncasecmp(h->name, "x-amz-checksum-", 15) == 0 &&
		    !(h->name_len == 19 && strncasecmp(h->name + 15, "mode", 4) == 0) &&
		    !(h->name_len == 24 && strncasecmp(h->name + 15, "algorithm", 9) == 0))
			return true;
	}
	return false;
}

static void op_delete_objects(struct s3_call *c)
{
	if (!has_integrity_header(c)) {
		s3_call_error(c, S3E_InvalidRequest, "Missing required header for this request: Content-Md5.");
		return;
	}
	struct dm_rq *d = s3_rq_new(c, sizeof(*d));
	if (!d)
		return;
	d->rq.fini = dm_fini;
	enum s3_err e = s3_body_read(&d->rq, &d->body, DM_BODY_MAX, on_dm_body);
	if (e)
		s3_rq_fail(&d->rq, e, NULL);
}

const struct s3_handler s3_delete_handlers[] = {
	{ S3_OP_DeleteObject, op_delete_object, S3_ACT_DeleteObject },
	{ S3_OP_DeleteObjects, op_delete_objects, S3_ACT_DeleteObject },
	S3_HANDLERS_END,
};
