/*
 * native_list.c — the native protocol's List and Delete.
 *
 * List: the bucket read (GetBucket), s3:ListBucket decided on it, then one
 * ListObjects page from meta (prefix, delimiter, start_after or the last
 * page's token, at most 1,000 keys) answered as entries and common
 * prefixes. Delete: the record and its bucket read, s3:DeleteObject
 * decided on the bucket, the DeleteObject op conditioned on the record's
 * generation (CONFLICT reads again), the deleted version's shards freed
 * unless versioning retains it; a missing key in an existing bucket is a
 * success, as S3's 204.
 *
 * Thread: the gateway loop.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "gateway/gw_rec.h"
#include "gateway/native_int.h"
#include "gateway/s3_util.h"

/* ------------------------------------------------------------ List */

static void on_list(void *ud, int err, const ProtobufCMessage *resp)
{
	struct native_call *nc = ud;
	const Iolake__Meta__ListObjectsResponse *r = (const void *)resp;
	enum s3_err e = s3_status_err(S3_SUBJ_LISTING, err, err ? 0 : (int)r->status);
	if (e) {
		native_fail(nc, e, NULL);
		return;
	}
	size_t ne = 0, np = 0;
	for (size_t i = 0; i < r->n_entries; i++)
		r->entries[i]->is_prefix ? np++ : ne++;
	Iolake__Native__ListEntry *ents = calloc(ne + 1, sizeof(*ents));
	Iolake__Native__ListEntry **pents = calloc(ne + 1, sizeof(*pents));
	char **prefs = calloc(np + 1, sizeof(*prefs));
	if (!ents || !pents || !prefs) {
		free(ents), free(pents), free(prefs);
		native_fail(nc, S3E_InternalError, NULL);
		return;
	}
	Iolake__Native__ListResponse lr = IOLAKE__NATIVE__LIST_RESPONSE__INIT;
	for (size_t i = 0; i < r->n_entries; i++) {
		const Iolake__Meta__ListEntry *le = r->entries[i];
		if (le->is_prefix) {
			prefs[lr.n_common_prefixes++] = le->name;
			continue;
		}
		Iolake__Native__ListEntry *x = &ents[lr.n_entries];
		iolake__native__list_entry__init(x);
		x->key = le->name;
		if (le->record) {
			x->size = le->record->size;
			x->etag = le->record->etag;
			x->mtime_ms = le->record->mtime_ms;
		}
		pents[lr.n_entries++] = x;
	}
	lr.entries = pents;
	lr.common_prefixes = prefs;
	lr.truncated = r->truncated;
	lr.next_token = r->truncated ? r->next_token : (char *)"";
	lr.next_start_after = r->n_entries ? r->entries[r->n_entries - 1]->name : (char *)"";
	native_ok(nc, &lr.base, NULL);
	free(ents), free(pents), free(prefs);
}

static void on_list_bucket(void *ud, int err, const ProtobufCMessage *resp)
{
	struct native_call *nc = ud;
	const Iolake__Meta__GetBucketResponse *r = (const void *)resp;
	enum s3_err e = s3_status_err(S3_SUBJ_BUCKET_READ, err, err ? 0 : (int)r->status);
	if (!e && !r->bucket)
		e = S3E_NoSuchBucket;
	if (!e && !(nc->rq.bkt = (Iolake__Meta__Bucket *)s3u_copy_msg(&r->bucket->base)))
		e = S3E_InternalError;
	if (e) {
		native_fail(nc, e, NULL);
		return;
	}
	if (s3_rq_decide(&nc->rq, S3_ACT_ListBucket, nc->rq.bkt, NULL) != S3_ALLOW) {
		native_fail(nc, S3E_AccessDenied, NULL);
		return;
	}
	const Iolake__Native__ListRequest *m = (const void *)nc->msg;
	Iolake__Meta__ListObjectsRequest req = IOLAKE__META__LIST_OBJECTS_REQUEST__INIT;
	req.bucket = nc->rq.bucket;
	req.prefix = m->prefix;
	req.delimiter = m->delimiter;
	req.start_after = m->start_after;
	req.token = m->token;
	req.max_keys = m->max_keys && m->max_keys < NATIVE_LIST_MAX ? m->max_keys : NATIVE_LIST_MAX;
	req.want_records = true;
	if (meta_client_call(nc->s->o->mc, META_M_LIST_OBJECTS, &req.base, on_list, nc))
		native_fail(nc, S3E_ServiceUnavailable, NULL);
}

void native_list_step(struct native_call *nc)
{
	Iolake__Meta__GetBucketRequest req = IOLAKE__META__GET_BUCKET_REQUEST__INIT;
	req.name = nc->rq.bucket;
	if (meta_client_call(nc->s->o->mc, META_M_GET_BUCKET, &req.base, on_list_bucket, nc))
		native_fail(nc, S3E_ServiceUnavailable, NULL);
}

/* ------------------------------------------------------------ Delete */

static void on_del_head(struct s3_head *h, enum s3_err e, Iolake__Meta__ObjectRecord *rec);

static void on_del_commit(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct native_call *nc = ud;
	Iolake__Meta__ObjectRecord *cur = nc->rq.obj;
	enum s3_err e = s3_status_err(S3_SUBJ_OBJECT_DEL, err, err ? 0 : (int)res->status);
	bool applied = !err && res->status == IOLAKE__META__STATUS__STATUS_OK;
	if (applied && !res->retained && cur)
		gw_rec_drop_shards(nc->s->o->map, nc->s->o->data, cur);
	if (!e) {
		Iolake__Native__DeleteResponse r = IOLAKE__NATIVE__DELETE_RESPONSE__INIT;
		native_ok(nc, &r.base, NULL);
	} else if (!err && res->status == IOLAKE__META__STATUS__STATUS_CONFLICT &&
		   ++nc->rq.tries < S3_COMMIT_TRIES) {
		native_head(nc, nc->rq.bucket, nc->rq.key, on_del_head);
	} else {
		native_fail(nc, e, NULL);
	}
}

static void on_del_head(struct s3_head *h, enum s3_err e, Iolake__Meta__ObjectRecord *rec)
{
	struct native_call *nc = native_call_of_head(h);
	if (e && e != S3E_NoSuchKey) {
		s3u_free_msg(rec);
		native_fail(nc, e, NULL);
		return;
	}
	if (s3_rq_decide(&nc->rq, S3_ACT_DeleteObject, nc->rq.bkt, NULL) != S3_ALLOW) {
		s3u_free_msg(rec);
		native_fail(nc, S3E_AccessDenied, NULL);
		return;
	}
	if (!rec) {   /* gone already: done, as S3's 204 */
		Iolake__Native__DeleteResponse r = IOLAKE__NATIVE__DELETE_RESPONSE__INIT;
		native_ok(nc, &r.base, NULL);
		return;
	}
	s3u_free_msg(nc->rq.obj);
	nc->rq.obj = rec;   /* freed with the call */
	Iolake__Meta__DeleteObject d = IOLAKE__META__DELETE_OBJECT__INIT;
	d.bucket = nc->rq.bucket;
	d.key = nc->rq.key;
	d.if_generation = rec->generation;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_DELETE_OBJECT;
	op.delete_object = &d;
	s3_rq_stamp_op(&nc->rq, &op);   /* versioning, the time of a marker */
	if (meta_client_submit(nc->s->o->mc, &op, on_del_commit, nc))
		native_fail(nc, S3E_ServiceUnavailable, NULL);
}

void native_delete_step(struct native_call *nc)
{
	if (!nc->rq.key || !nc->rq.key[0]) {
		native_fail(nc, S3E_InvalidArgument, "a key is needed");
		return;
	}
	native_head(nc, nc->rq.bucket, nc->rq.key, on_del_head);
}
