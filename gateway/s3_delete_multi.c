/*
 * s3_delete_multi.c — DeleteObjects (POST /bucket?delete): a Delete XML
 * document of up to 1,000 keys, each deleted as DeleteObject does (read
 * the record, delete it conditioned on its generation, free its shards
 * after the commit), with one result per key: Deleted, or Error with Code
 * and Message. A key that does not exist counts as Deleted, as in S3.
 * Quiet mode reports only the errors.
 *
 * Like S3, the request must carry Content-MD5 (or an x-amz-checksum-*
 * header); the front end verifies the MD5 over the body.
 *
 * Concurrency: up to WINDOW keys in flight; the meta client coalesces
 * their concurrent submits into shared Raft entries. Every key whose
 * delete was submitted frees its shards when the commit comes back, even
 * if the client has gone meanwhile; keys not started by then are left
 * alone.
 *
 * Owns a struct dm per request (keys, per-key results), alive until the
 * last key is done; the opx (body, response) lives by its pending count.
 *
 * Thread: the gateway loop; no blocking call.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/err.h"
#include "gateway/s3_ops_int.h"
#include "gateway/xml_parse.h"

#define DM_KEYS_MAX 1000
#define DM_BODY_MAX (2u << 20)   /* 1,000 keys of 1,024 bytes, escaped, fit */
#define WINDOW 64

struct dm;

struct dm_key {
	struct dm *d;
	const char *key;             /* into d->arena */
	size_t key_len;
	int tries;
	bool done;
	enum s3_err err;             /* S3E_OK: Deleted */
	Iolake__Meta__ObjectRecord *cur;   /* record being deleted */
};

struct dm {
	struct opx *x;
	bool quiet;
	size_t n, next, inflight, finished;
	char *arena;
	struct dm_key *k;
};

static int key_read(struct dm_key *k);

static void dm_free(struct dm *d)
{
	for (size_t i = 0; i < d->n; i++)
		s3o_free_msg(d->k[i].cur);
	free(d->k);
	free(d->arena);
	free(d);
}

static void dm_respond(struct dm *d)
{
	struct opx *x = d->x;
	struct xml_w *w = s3_call_xml(x->c);
	xml_decl(w);
	xml_open_ns(w, "DeleteResult", S3_XMLNS);
	for (size_t i = 0; i < d->n; i++) {
		const struct dm_key *k = &d->k[i];
		if (k->err == S3E_OK && d->quiet)
			continue;
		xml_open(w, k->err == S3E_OK ? "Deleted" : "Error");
		xml_elem_n(w, "Key", k->key, k->key_len);
		if (k->err != S3E_OK) {
			xml_elem(w, "Code", s3_err_code(k->err));
			xml_elem(w, "Message", s3_err_message(k->err));
		}
		xml_close(w);
	}
	xml_close(w);
	s3_call_send_xml(x->c, 200);
}

static void key_finish(struct dm_key *k, enum s3_err e)
{
	k->done = true;
	k->err = e;
	k->d->finished++;
}

/* Start keys while the window has room and the client is there. Never
 * frees d: keys that fail at once are only counted. */
static void dm_pump(struct dm *d)
{
	struct opx *x = d->x;
	while (x->c && d->next < d->n && d->inflight < WINDOW) {
		struct dm_key *k = &d->k[d->next++];
		if (k->key_len > S3_KEY_MAX) {
			key_finish(k, S3E_KeyTooLongError);
			continue;
		}
		/* Each key in flight holds one pending of the opx. */
		x->pending++;
		d->inflight++;
		if (key_read(k)) {
			x->pending--;
			d->inflight--;
			key_finish(k, S3E_ServiceUnavailable);
		}
	}
}

/* After progress: start more; once nothing is in flight and every key is
 * answered (or the client is gone), respond and free d. */
static void dm_settle(struct dm *d)
{
	struct opx *x = d->x;
	dm_pump(d);
	if (d->inflight == 0 && (d->finished == d->n || !x->c)) {
		if (x->c)
			dm_respond(d);
		dm_free(d);
	}
}

/* The key in flight is answered: gives back its pending. */
static void key_done(struct dm_key *k, enum s3_err e)
{
	struct dm *d = k->d;
	struct opx *x = d->x;
	key_finish(k, e);
	d->inflight--;
	dm_settle(d);
	opx_back(x); /* may free x when the exchange is over */
}

static enum s3_err meta_fail(int err)
{
	return err ? s3o_meta_err(err) : S3E_InternalError;
}

static void on_key_commit(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t idx)
{
	(void)idx;
	struct dm_key *k = ud;
	int st = err ? -1 : (int)res->status;
	if (st == IOLAKE__META__STATUS__STATUS_OK)
		gw_rec_drop_shards(k->d->x->o->map, k->d->x->o->data, k->cur);
	if (st == IOLAKE__META__STATUS__STATUS_OK || st == IOLAKE__META__STATUS__STATUS_NOT_FOUND) {
		key_done(k, S3E_OK);
	} else if (st == IOLAKE__META__STATUS__STATUS_CONFLICT && k->d->x->c &&
		   ++k->tries < COMMIT_TRIES) {
		if (key_read(k)) /* overwritten meanwhile: delete the new version */
			key_done(k, S3E_ServiceUnavailable);
	} else {
		key_done(k, meta_fail(err));
	}
}

static void on_key_head(void *ud, int err, const ProtobufCMessage *resp)
{
	struct dm_key *k = ud;
	struct opx *x = k->d->x;
	const Iolake__Meta__HeadObjectResponse *r = (const void *)resp;
	if (err && err != IOL_ENOT_FOUND) {
		key_done(k, meta_fail(err));
		return;
	}
	if (err || r->status != IOLAKE__META__STATUS__STATUS_OK || !r->record) {
		key_done(k, S3E_OK); /* nothing there: Deleted, as S3 */
		return;
	}
	if (!x->c) {
		key_done(k, S3E_InternalError); /* client gone: change nothing */
		return;
	}
	s3o_free_msg(k->cur);
	k->cur = (Iolake__Meta__ObjectRecord *)s3o_copy_msg(&r->record->base);
	if (!k->cur) {
		key_done(k, S3E_InternalError);
		return;
	}
	Iolake__Meta__DeleteObject del = IOLAKE__META__DELETE_OBJECT__INIT;
	del.bucket = x->bucket;
	del.key = (char *)k->key;
	del.if_generation = k->cur->generation;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_DELETE_OBJECT;
	op.delete_object = &del;
	/* The key's pending carries over to the submit. */
	if (meta_client_submit(x->o->mc, &op, on_key_commit, k))
		key_done(k, S3E_ServiceUnavailable);
}

/* Read the key's record (the caller holds the key's pending). 0 or the
 * meta client's error (no callback then). */
static int key_read(struct dm_key *k)
{
	struct opx *x = k->d->x;
	Iolake__Meta__HeadObjectRequest req = IOLAKE__META__HEAD_OBJECT_REQUEST__INIT;
	req.bucket = x->bucket;
	req.key = (char *)k->key;
	return meta_client_call(x->o->mc, META_M_HEAD_OBJECT, &req.base, on_key_head, k);
}

static void on_dm_bucket(void *ud, int err, const ProtobufCMessage *resp)
{
	struct dm *d = ud;
	struct opx *x = d->x;
	const Iolake__Meta__GetBucketResponse *r = (const void *)resp;
	x->pending++; /* held across the start of the keys */
	if (!opx_back(x) || (err && err != IOL_ENOT_FOUND) ||
	    err || r->status != IOLAKE__META__STATUS__STATUS_OK) {
		dm_free(d);
		if (err && err != IOL_ENOT_FOUND)
			s3o_fail(x, s3o_meta_err(err), NULL);
		else
			s3o_fail(x, S3E_NoSuchBucket, NULL);
		opx_back(x);
		return;
	}
	dm_settle(d);
	opx_back(x);
}

static void on_dm_body(struct s3_call *c, enum s3_err verdict)
{
	struct opx *x = s3_call_user(c);
	if (!verdict && x->inl_len != x->size)
		verdict = S3E_IncompleteBody;
	if (verdict) {
		s3o_fail(x, verdict, NULL);
		return;
	}
	struct dm *d = calloc(1, sizeof(*d));
	const char **keys = calloc(DM_KEYS_MAX, sizeof(*keys));
	size_t *lens = calloc(DM_KEYS_MAX, sizeof(*lens));
	if (d) {
		d->arena = malloc(x->inl_len + 1);
		d->k = calloc(DM_KEYS_MAX, sizeof(*d->k));
	}
	if (!d || !keys || !lens || !d->arena || !d->k) {
		if (d)
			dm_free(d);
		free(keys), free(lens);
		s3o_fail(x, S3E_InternalError, NULL);
		return;
	}
	struct xmlp_delete del = { .keys = keys, .key_lens = lens, .max_keys = DM_KEYS_MAX,
				   .arena = d->arena, .arena_cap = x->inl_len + 1 };
	int rc = xmlp_delete((const char *)x->inl, x->inl_len, DM_BODY_MAX, &del);
	if (rc) {
		dm_free(d);
		free(keys), free(lens);
		s3o_fail(x, S3E_MalformedXML, NULL);
		return;
	}
	d->x = x;
	d->quiet = del.quiet;
	d->n = del.n_keys;
	for (size_t i = 0; i < d->n; i++)
		d->k[i] = (struct dm_key){ .d = d, .key = keys[i], .key_len = lens[i] };
	free(keys), free(lens);
	Iolake__Meta__GetBucketRequest req = IOLAKE__META__GET_BUCKET_REQUEST__INIT;
	req.name = x->bucket;
	x->pending++;
	if (meta_client_call(x->o->mc, META_M_GET_BUCKET, &req.base, on_dm_bucket, d)) {
		x->pending--;
		dm_free(d);
		s3o_fail(x, S3E_ServiceUnavailable, NULL);
	}
}

/* Content-MD5, or one of the flexible checksums newer SDKs send instead. */
static bool has_integrity_header(struct s3_call *c)
{
	if (s3o_hdr(c, "content-md5"))
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
	struct opx *x = opx_new(c);
	if (!x) {
		s3_call_error(c, S3E_InternalError, NULL);
		return;
	}
	enum s3_err e = s3o_small_body(x, DM_BODY_MAX, on_dm_body);
	if (e)
		s3o_fail(x, e, NULL);
}

void s3_delete_multi_bind(struct s3_server_cfg *s)
{
	s->ops[S3_OP_DeleteObjects] = op_delete_objects;
}
