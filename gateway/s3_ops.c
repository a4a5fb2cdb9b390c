/*
 * s3_ops.c — S3 bucket, object and listing operations over meta (records)
 * and gw_data (shards). Contracts in s3_ops.h.
 *
 * Owns: a meta client (records, credentials), the map cache (gw_map), the
 * data path (gw_data), and one struct opx per live request. An opx lives
 * until the exchange finished (s3_finish_fn) AND every meta call, data
 * operation callback and response write it started has come back
 * (`pending`, `writes`): callbacks of a finished request only drop their
 * results.
 *
 * Invariants: nothing is acknowledged before its meta commit; a GET starts
 * its response only once the first bytes are verified (so an unreadable
 * object is a 503 error, never a short or wrong body); the shards of a
 * version are deleted only by whoever committed the record replacing or
 * removing it, after that commit.
 *
 * Thread: one loop; no blocking call.
 */
#include "gateway/s3_ops.h"

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
#include "meta/client.h"
#include "meta/list.h"

#define S3_XMLNS "http://s3.amazonaws.com/doc/2006-03-01/"
#define COMMIT_TRIES 8
#define MAX_WRITES 4            /* response writes in flight per GET */
#define USER_CACHE 64

struct user_ent {
	char key[S3_AUTH_SECRET_MAX];
	char user[64];
};

struct s3_ops {
	uv_loop_t *loop;
	struct meta_client *mc;
	struct gw_map *map;
	struct gw_data *data;
	char region[64];
	uint32_t inline_max;
	unsigned quorum;
	struct metrics_registry *reg;
	bool own_reg;
	struct metrics_counter *m_req[S3_OP__COUNT];
	struct metrics_counter *m_unavail;
	struct user_ent users[USER_CACHE]; /* access key -> user (owners) */
	unsigned users_next;
};

/* One request in flight. */
struct opx {
	struct s3_ops *o;
	struct s3_call *c;          /* NULL once the exchange is over */
	unsigned pending;           /* meta calls and data callbacks owed */
	unsigned writes;            /* response writes in flight */
	struct buf *wbufs[MAX_WRITES];
	unsigned whead;
	char bucket[S3_BUCKET_MAX + 1];
	char *key;
	int tries;
	/* PutObject */
	uint64_t size;
	bool is_inline, body_done, data_done, bucket_checked, cur_checked, committing;
	uint8_t *inl;
	size_t inl_len;
	struct gw_data_put *put;
	struct gw_data_target target;
	/* Body bytes gw_data could not take yet (its window was full): the
	 * body is paused and they go in first when it is writable again. */
	uint8_t *spill;
	size_t spill_len, spill_cap;
	bool end_deferred;          /* body end seen while bytes were spilled */
	uint32_t pg;
	Iolake__Meta__ObjectRecord *cur;   /* record being replaced / deleted */
	char etag[33];
	uint64_t mtime_ms;
	/* GetObject / HeadObject */
	Iolake__Meta__ObjectRecord *rec;
	struct gw_data_get *get;
	struct gw_data_layout lay;  /* the GET's layout: outlives get */
	uint64_t off, len;
	bool partial, started, ended, head;
};

/* ------------------------------------------------------------ helpers */

static ProtobufCMessage *copy_msg(const ProtobufCMessage *m)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	uint8_t *b = malloc(len ? len : 1);
	if (!b)
		return NULL;
	protobuf_c_message_pack(m, b);
	ProtobufCMessage *c = protobuf_c_message_unpack(m->descriptor, NULL, len, b);
	free(b);
	return c;
}

static void free_msg(void *m)
{
	if (m)
		protobuf_c_message_free_unpacked(m, NULL);
}

static uint64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void http_date(uint64_t ms, char out[40])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 40, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

static void iso_date(uint64_t ms, char out[40])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	size_t n = strftime(out, 40, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, 40 - n, ".%03uZ", (unsigned)(ms % 1000));
}

static const struct sigv4_header *hdr(struct s3_call *c, const char *name)
{
	return http_request_header(s3_call_http(c), name);
}

/* A header value as a NUL-terminated copy into buf (truncated), or NULL. */
static char *hdr_str(struct s3_call *c, const char *name, char *buf, size_t cap)
{
	const struct sigv4_header *h = hdr(c, name);
	if (!h)
		return NULL;
	size_t n = h->value_len < cap - 1 ? h->value_len : cap - 1;
	memcpy(buf, h->value, n);
	buf[n] = 0;
	return buf;
}

static void opx_maybe_free(struct opx *x)
{
	if (x->c || x->pending || x->writes)
		return;
	if (x->put)
		gw_data_put_free(x->put);
	if (x->get)
		gw_data_get_free(x->get);
	gw_data_layout_clear(&x->lay);
	free(x->spill);
	free_msg(x->cur);
	free_msg(x->rec);
	free(x->inl);
	free(x->key);
	free(x);
}

static void on_call_finish(struct s3_call *c, int err)
{
	(void)err;
	struct opx *x = s3_call_user(c);
	if (!x)
		return;
	x->c = NULL;
	/* Stop the data path: an unfinished PUT deletes what it wrote. */
	if (x->put && !x->data_done) {
		gw_data_put_free(x->put);
		x->put = NULL;
	}
	if (x->get) {
		gw_data_get_free(x->get);
		x->get = NULL;
	}
	opx_maybe_free(x);
}

static struct opx *opx_new(struct s3_call *c)
{
	struct s3_ops *o = s3_call_ctx(c);
	const struct s3_req *r = s3_call_req(c);
	struct opx *x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->o = o;
	x->c = c;
	if (r->bucket)
		snprintf(x->bucket, sizeof(x->bucket), "%s", r->bucket);
	if (r->key && !(x->key = strdup(r->key))) {
		free(x);
		return NULL;
	}
	s3_call_set_user(c, x);
	s3_call_on_finish(c, on_call_finish);
	metrics_counter_inc(o->m_req[r->op]);
	return x;
}

/* Take back one owed callback; false when the request is gone. */
static bool opx_back(struct opx *x)
{
	x->pending--;
	if (x->c)
		return true;
	opx_maybe_free(x);
	return false;
}

static int mcall(struct opx *x, unsigned method, const ProtobufCMessage *req, meta_client_cb cb)
{
	x->pending++;
	int rc = meta_client_call(x->o->mc, method, req, cb, x);
	if (rc)
		x->pending--;
	return rc;
}

static int msubmit(struct opx *x, Iolake__Meta__Op *op, meta_client_submit_cb cb)
{
	x->pending++;
	int rc = meta_client_submit(x->o->mc, op, cb, x);
	if (rc)
		x->pending--;
	return rc;
}

/* A meta failure as the S3 error to answer with. */
static enum s3_err meta_err(int err)
{
	if (err == -EAGAIN || iol_err_retryable(err))
		return S3E_ServiceUnavailable;
	return S3E_InternalError;
}

static void fail(struct opx *x, enum s3_err e, const char *msg)
{
	if (!x->c)
		return;
	if (e == S3E_ServiceUnavailable)
		metrics_counter_inc(x->o->m_unavail);
	s3_call_error(x->c, e, msg);
}

static const char *owner_of(struct s3_ops *o, struct s3_call *c)
{
	const char *ak = s3_call_auth(c)->claim.access_key;
	for (unsigned i = 0; i < USER_CACHE; i++)
		if (strcmp(o->users[i].key, ak) == 0)
			return o->users[i].user;
	return ak;
}

/* ------------------------------------------------------------ credentials */

struct lookup {
	struct s3_ops *o;
	struct s3_cred_lookup *l;
};

static void on_access_key(void *ud, int err, const ProtobufCMessage *resp)
{
	struct lookup *lk = ud;
	struct s3_cred_lookup *l = lk->l;
	struct s3_ops *o = lk->o;
	free(lk);
	if (err) {
		l->done(l, err == IOL_ENOT_FOUND ? -ENOENT : -EIO, NULL);
		return;
	}
	const Iolake__Meta__GetAccessKeyResponse *r = (const void *)resp;
	if (r->status != IOLAKE__META__STATUS__STATUS_OK || !r->key || r->key->disabled ||
	    !r->key->secret_key) {
		l->done(l, -ENOENT, NULL);
		return;
	}
	struct user_ent *u = &o->users[o->users_next++ % USER_CACHE];
	snprintf(u->key, sizeof(u->key), "%s", l->access_key);
	snprintf(u->user, sizeof(u->user), "%s", r->key->user ? r->key->user : "");
	l->done(l, 0, r->key->secret_key);
}

static void cred_lookup(void *ctx, struct s3_cred_lookup *l)
{
	struct s3_ops *o = ctx;
	struct lookup *lk = malloc(sizeof(*lk));
	if (!lk) {
		l->done(l, -ENOMEM, NULL);
		return;
	}
	lk->o = o;
	lk->l = l;
	Iolake__Meta__GetAccessKeyRequest req = IOLAKE__META__GET_ACCESS_KEY_REQUEST__INIT;
	req.access_key_id = (char *)l->access_key;
	int rc = meta_client_call(o->mc, META_M_GET_ACCESS_KEY, &req.base, on_access_key, lk);
	if (rc) {
		free(lk);
		l->done(l, rc, NULL);
	}
}

/* ------------------------------------------------------------ buckets */

static void on_list_buckets(void *ud, int err, const ProtobufCMessage *resp)
{
	struct opx *x = ud;
	if (!opx_back(x))
		return;
	if (err) {
		fail(x, meta_err(err), NULL);
		return;
	}
	const Iolake__Meta__ListBucketsResponse *r = (const void *)resp;
	const char *owner = owner_of(x->o, x->c);
	struct xml_w *w = s3_call_xml(x->c);
	xml_decl(w);
	xml_open_ns(w, "ListAllMyBucketsResult", S3_XMLNS);
	xml_open(w, "Owner");
	xml_elem(w, "ID", owner);
	xml_elem(w, "DisplayName", owner);
	xml_close(w);
	xml_open(w, "Buckets");
	for (size_t i = 0; i < r->n_buckets; i++) {
		char d[40];
		iso_date(r->buckets[i]->created_ms, d);
		xml_open(w, "Bucket");
		xml_elem(w, "Name", r->buckets[i]->name);
		xml_elem(w, "CreationDate", d);
		xml_close(w);
	}
	xml_close(w);
	xml_close(w);
	s3_call_send_xml(x->c, 200);
}

static void op_list_buckets(struct s3_call *c)
{
	struct opx *x = opx_new(c);
	if (!x) {
		s3_call_error(c, S3E_InternalError, NULL);
		return;
	}
	Iolake__Meta__ListBucketsRequest req = IOLAKE__META__LIST_BUCKETS_REQUEST__INIT;
	req.owner = "";
	if (mcall(x, META_M_LIST_BUCKETS, &req.base, on_list_buckets))
		fail(x, S3E_ServiceUnavailable, NULL);
}

static void on_create_bucket(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t idx)
{
	(void)idx;
	struct opx *x = ud;
	if (!opx_back(x))
		return;
	if (err) {
		fail(x, err == -EINVAL ? S3E_InvalidBucketName : meta_err(err), NULL);
		return;
	}
	switch (res->status) {
	case IOLAKE__META__STATUS__STATUS_OK: {
		char loc[S3_BUCKET_MAX + 2];
		snprintf(loc, sizeof(loc), "/%s", x->bucket);
		http_add_header(s3_call_stream(x->c), "Location", loc);
		http_respond(s3_call_stream(x->c), 200, NULL, 0, NULL, NULL);
		return;
	}
	case IOLAKE__META__STATUS__STATUS_EXISTS:
		fail(x, S3E_BucketAlreadyOwnedByYou, NULL);
		return;
	case IOLAKE__META__STATUS__STATUS_INVALID:
		fail(x, S3E_InvalidBucketName, NULL);
		return;
	default:
		fail(x, S3E_InternalError, NULL);
	}
}

static void op_create_bucket(struct s3_call *c)
{
	struct opx *x = opx_new(c);
	if (!x) {
		s3_call_error(c, S3E_InternalError, NULL);
		return;
	}
	Iolake__Meta__Bucket b = IOLAKE__META__BUCKET__INIT;
	b.name = x->bucket;
	b.owner = (char *)owner_of(x->o, c);
	b.created_ms = wall_ms();
	b.region = x->o->region;
	Iolake__Meta__CreateBucket cb = IOLAKE__META__CREATE_BUCKET__INIT;
	cb.bucket = &b;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_CREATE_BUCKET;
	op.create_bucket = &cb;
	if (msubmit(x, &op, on_create_bucket))
		fail(x, S3E_ServiceUnavailable, NULL);
}

static void on_delete_bucket(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t idx)
{
	(void)idx;
	struct opx *x = ud;
	if (!opx_back(x))
		return;
	if (err) {
		fail(x, meta_err(err), NULL);
		return;
	}
	switch (res->status) {
	case IOLAKE__META__STATUS__STATUS_OK:
		http_respond(s3_call_stream(x->c), 204, NULL, 0, NULL, NULL);
		return;
	case IOLAKE__META__STATUS__STATUS_NOT_FOUND:
		fail(x, S3E_NoSuchBucket, NULL);
		return;
	case IOLAKE__META__STATUS__STATUS_BUCKET_NOT_EMPTY:
		fail(x, S3E_BucketNotEmpty, NULL);
		return;
	default:
		fail(x, S3E_InternalError, NULL);
	}
}

static void op_delete_bucket(struct s3_call *c)
{
	struct opx *x = opx_new(c);
	if (!x) {
		s3_call_error(c, S3E_InternalError, NULL);
		return;
	}
	Iolake__Meta__DeleteBucket db = IOLAKE__META__DELETE_BUCKET__INIT;
	db.name = x->bucket;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_DELETE_BUCKET;
	op.delete_bucket = &db;
	if (msubmit(x, &op, on_delete_bucket))
		fail(x, S3E_ServiceUnavailable, NULL);
}

/* HeadBucket and GetBucketLocation. */
static void on_get_bucket(void *ud, int err, const ProtobufCMessage *resp)
{
	struct opx *x = ud;
	if (!opx_back(x))
		return;
	if (err && err != IOL_ENOT_FOUND) {
		fail(x, meta_err(err), NULL);
		return;
	}
	const Iolake__Meta__GetBucketResponse *r = (const void *)resp;
	if (err || r->status != IOLAKE__META__STATUS__STATUS_OK || !r->bucket) {
		fail(x, S3E_NoSuchBucket, NULL);
		return;
	}
	if (s3_call_req(x->c)->op == S3_OP_HeadBucket) {
		http_add_header(s3_call_stream(x->c), "x-amz-bucket-region", x->o->region);
		http_respond(s3_call_stream(x->c), 200, NULL, 0, NULL, NULL);
		return;
	}
	struct xml_w *w = s3_call_xml(x->c);
	xml_decl(w);
	xml_open_ns(w, "LocationConstraint", S3_XMLNS);
	/* us-east-1 is reported as an empty constraint, as S3 does. */
	const char *reg = r->bucket->region && *r->bucket->region ? r->bucket->region : x->o->region;
	if (strcmp(reg, "us-east-1") != 0)
		xml_text(w, reg, strlen(reg));
	xml_close(w);
	s3_call_send_xml(x->c, 200);
}

static void op_get_bucket(struct s3_call *c)
{
	struct opx *x = opx_new(c);
	if (!x) {
		s3_call_error(c, S3E_InternalError, NULL);
		return;
	}
	Iolake__Meta__GetBucketRequest req = IOLAKE__META__GET_BUCKET_REQUEST__INIT;
	req.name = x->bucket;
	if (mcall(x, META_M_GET_BUCKET, &req.base, on_get_bucket))
		fail(x, S3E_ServiceUnavailable, NULL);
}

/* ------------------------------------------------------------ listing */

static bool url_keep(unsigned char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
	       ch == '-' || ch == '_' || ch == '.' || ch == '~' || ch == '/';
}

/* Element with text, percent-encoded when encoding-type=url. */
static void list_elem(struct xml_w *w, const char *name, const char *v, bool url)
{
	if (!url) {
		xml_elem(w, name, v);
		return;
	}
	size_t n = strlen(v);
	char *e = malloc(3 * n + 1), *p = e;
	if (!e) {
		xml_elem(w, name, "");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)v[i];
		if (url_keep(ch))
			*p++ = (char)ch;
		else
			p += sprintf(p, "%%%02X", ch);
	}
	*p = 0;
	xml_elem(w, name, e);
	free(e);
}

static const char *qval(const struct s3_req *r, const char *name)
{
	const struct s3_qparam *q = s3_req_query(r, name);
	return q && q->has_value ? q->value : NULL;
}

static void on_list_objects(void *ud, int err, const ProtobufCMessage *resp)
{
	struct opx *x = ud;
	if (!opx_back(x))
		return;
	if (err == IOL_ENOT_FOUND) {
		fail(x, S3E_NoSuchBucket, NULL);
		return;
	}
	if (err == -EINVAL) {
		fail(x, S3E_InvalidArgument, "The continuation token provided is incorrect");
		return;
	}
	if (err) {
		fail(x, meta_err(err), NULL);
		return;
	}
	const Iolake__Meta__ListObjectsResponse *r = (const void *)resp;
	if (r->status == IOLAKE__META__STATUS__STATUS_NOT_FOUND) {
		fail(x, S3E_NoSuchBucket, NULL);
		return;
	}
	if (r->status != IOLAKE__META__STATUS__STATUS_OK) {
		fail(x, S3E_InvalidArgument, "The continuation token provided is incorrect");
		return;
	}
	const struct s3_req *q = s3_call_req(x->c);
	bool v2 = q->op == S3_OP_ListObjectsV2;
	const char *enc = qval(q, "encoding-type");
	bool url = enc && strcmp(enc, "url") == 0;
	const char *prefix = qval(q, "prefix"), *delim = qval(q, "delimiter");
	const char *mk = qval(q, "max-keys");
	unsigned max_keys = mk ? (unsigned)strtoul(mk, NULL, 10) : 1000;
	if (max_keys > 1000)
		max_keys = 1000;
	struct xml_w *w = s3_call_xml(x->c);
	xml_decl(w);
	xml_open_ns(w, "ListBucketResult", S3_XMLNS);
	xml_elem(w, "Name", x->bucket);
	list_elem(w, "Prefix", prefix ? prefix : "", url);
	if (v2) {
		const char *sa = qval(q, "start-after"), *tok = qval(q, "continuation-token");
		if (sa)
			list_elem(w, "StartAfter", sa, url);
		if (tok)
			xml_elem(w, "ContinuationToken", tok);
		xml_elem_u64(w, "KeyCount", r->n_entries);
	} else {
		const char *marker = qval(q, "marker");
		list_elem(w, "Marker", marker ? marker : "", url);
		if (r->truncated && delim && *delim && r->n_entries)
			list_elem(w, "NextMarker", r->entries[r->n_entries - 1]->name, url);
	}
	xml_elem_u64(w, "MaxKeys", max_keys);
	if (delim && *delim)
		list_elem(w, "Delimiter", delim, url);
	if (url)
		xml_elem(w, "EncodingType", "url");
	xml_elem_bool(w, "IsTruncated", r->truncated);
	if (v2 && r->truncated && r->next_token && *r->next_token)
		xml_elem(w, "NextContinuationToken", r->next_token);
	for (size_t i = 0; i < r->n_entries; i++) {
		const Iolake__Meta__ListEntry *e = r->entries[i];
		if (e->is_prefix)
			continue;
		char d[40], etag[80];
		const Iolake__Meta__ObjectRecord *rec = e->record;
		iso_date(rec ? rec->mtime_ms : 0, d);
		snprintf(etag, sizeof(etag), "\"%s\"", rec && rec->etag ? rec->etag : "");
		xml_open(w, "Contents");
		list_elem(w, "Key", e->name, url);
		xml_elem(w, "LastModified", d);
		xml_elem(w, "ETag", etag);
		xml_elem_u64(w, "Size", rec ? rec->size : 0);
		if (!v2) {
			const char *own = rec && rec->owner && *rec->owner ? rec->owner : "root";
			xml_open(w, "Owner");
			xml_elem(w, "ID", own);
			xml_elem(w, "DisplayName", own);
			xml_close(w);
		}
		xml_elem(w, "StorageClass", "STANDARD");
		xml_close(w);
	}
	for (size_t i = 0; i < r->n_entries; i++) {
		if (!r->entries[i]->is_prefix)
			continue;
		xml_open(w, "CommonPrefixes");
		list_elem(w, "Prefix", r->entries[i]->name, url);
		xml_close(w);
	}
	xml_close(w);
	s3_call_send_xml(x->c, 200);
}

static void op_list_objects(struct s3_call *c)
{
	const struct s3_req *q = s3_call_req(c);
	const char *mk = qval(q, "max-keys");
	if (mk) {
		char *end;
		long v = strtol(mk, &end, 10);
		if (!*mk || *end || v < 0) {
			s3_call_error(c, S3E_InvalidArgument, "Provided max-keys not an integer or within integer range");
			return;
		}
	}
	const char *enc = qval(q, "encoding-type");
	if (enc && strcmp(enc, "url") != 0) {
		s3_call_error(c, S3E_InvalidArgument, "Invalid Encoding Method specified in Request");
		return;
	}
	struct opx *x = opx_new(c);
	if (!x) {
		s3_call_error(c, S3E_InternalError, NULL);
		return;
	}
	bool v2 = q->op == S3_OP_ListObjectsV2;
	Iolake__Meta__ListObjectsRequest req = IOLAKE__META__LIST_OBJECTS_REQUEST__INIT;
	req.bucket = x->bucket;
	req.prefix = (char *)(qval(q, "prefix") ? qval(q, "prefix") : "");
	req.delimiter = (char *)(qval(q, "delimiter") ? qval(q, "delimiter") : "");
	const char *sa = v2 ? qval(q, "start-after") : qval(q, "marker");
	const char *tok = v2 ? qval(q, "continuation-token") : NULL;
	req.start_after = (char *)(sa ? sa : "");
	req.token = (char *)(tok ? tok : "");
	unsigned long m = mk ? strtoul(mk, NULL, 10) : 1000;
	req.max_keys = m > 1000 ? 1000 : (uint32_t)m;
	req.want_records = true;
	if (mcall(x, META_M_LIST_OBJECTS, &req.base, on_list_objects))
		fail(x, S3E_ServiceUnavailable, NULL);
}

/* ------------------------------------------------------------ layout */

/* Whether r's body lives in the record itself. */
static bool rec_is_inline(const Iolake__Meta__ObjectRecord *r)
{
	return r->data_layout.len == 0;
}

/* The record's shard layout into *l (release with gw_data_layout_clear):
 * 0, IOL_ECORRUPT (malformed, or not matching the record's size),
 * -ENOMEM. */
static int rec_layout(const Iolake__Meta__ObjectRecord *r, struct gw_data_layout *l)
{
	int rc = gw_data_layout_decode(r->data_layout.data, r->data_layout.len, l);
	if (rc)
		return rc;
	if (l->size != r->size) {
		gw_data_layout_clear(l);
		return IOL_ECORRUPT;
	}
	return 0;
}

static void on_drop_done(void *ud, int status, uint32_t failed)
{
	(void)ud;
	if (status)
		LOG_WARN("shard delete incomplete", "failed=%u", failed);
}

/* Best effort: delete the shards of a version no record names any more. */
static void drop_shards(struct s3_ops *o, const Iolake__Meta__ObjectRecord *r)
{
	struct gw_data_layout l = { 0 };
	struct gw_data_target t;
	if (!r || rec_is_inline(r) || rec_layout(r, &l))
		return;
	if (gw_map_target(o->map, l.pg, &t) == 0)
		gw_data_delete(o->data, &t, &l, on_drop_done, NULL);
	gw_data_layout_clear(&l);
}

/* ------------------------------------------------------------ PutObject */

static void put_commit(struct opx *x);
static void put_read_cur(struct opx *x);

static void put_respond(struct opx *x)
{
	char etag[40];
	snprintf(etag, sizeof(etag), "\"%s\"", x->etag);
	http_add_header(s3_call_stream(x->c), "ETag", etag);
	http_respond(s3_call_stream(x->c), 200, NULL, 0, NULL, NULL);
}

/* The new version's shards, when its record was not committed. */
static void put_drop_new(struct opx *x)
{
	if (x->put && x->data_done) {
		gw_data_delete(x->o->data, &x->target, gw_data_put_layout(x->put), on_drop_done, NULL);
	}
}

static void on_put_commit(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t idx)
{
	(void)idx;
	struct opx *x = ud;
	x->pending--;
	int st = err ? -1 : (int)res->status;
	if (st == IOLAKE__META__STATUS__STATUS_OK) {
		drop_shards(x->o, x->cur);
		if (x->c)
			put_respond(x);
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
		put_drop_new(x);
	if (!x->c) {
		opx_maybe_free(x);
		return;
	}
	if (st == IOLAKE__META__STATUS__STATUS_NOT_FOUND)
		fail(x, S3E_NoSuchBucket, NULL);
	else if (st == IOLAKE__META__STATUS__STATUS_TOO_LARGE)
		fail(x, S3E_InvalidArgument, "Your metadata headers exceed the maximum allowed metadata size.");
	else if (err)
		fail(x, meta_err(err), NULL);
	else
		fail(x, S3E_InternalError, NULL);
}

static bool is_user_meta(const struct sigv4_header *h)
{
	return h->name_len > 11 && strncasecmp(h->name, "x-amz-meta-", 11) == 0;
}

static void put_commit(struct opx *x)
{
	struct s3_call *c = x->c;
	const struct http_request *hr = s3_call_http(c);
	char ct[256], ce[256], cd[512], cc[256], ex[128], cl[64];
	Iolake__Meta__ObjectRecord r = IOLAKE__META__OBJECT_RECORD__INIT;
	r.bucket = x->bucket;
	r.key = x->key;
	r.size = x->size;
	r.etag = x->etag;
	r.content_type = hdr_str(c, "content-type", ct, sizeof(ct));
	r.content_encoding = hdr_str(c, "content-encoding", ce, sizeof(ce));
	/* aws-chunked is transfer framing, not the object's encoding. */
	if (r.content_encoding && strncasecmp(r.content_encoding, "aws-chunked", 11) == 0) {
		char *rest = r.content_encoding + 11;
		while (*rest == ',' || *rest == ' ')
			rest++;
		r.content_encoding = rest;
	}
	r.content_disposition = hdr_str(c, "content-disposition", cd, sizeof(cd));
	r.cache_control = hdr_str(c, "cache-control", cc, sizeof(cc));
	r.expires = hdr_str(c, "expires", ex, sizeof(ex));
	r.content_language = hdr_str(c, "content-language", cl, sizeof(cl));
	r.mtime_ms = x->mtime_ms;
	r.owner = (char *)owner_of(x->o, c);
	r.pg = x->pg;
	size_t n_um = 0;
	for (size_t i = 0; i < hr->n_headers; i++)
		n_um += is_user_meta(&hr->headers[i]);
	Iolake__Meta__ObjectRecord__UserMetaEntry *ents = NULL, **pents = NULL;
	char *names = NULL, *vals = NULL;
	if (n_um) {
		ents = calloc(n_um, sizeof(*ents));
		pents = calloc(n_um, sizeof(*pents));
		size_t nb = 0, vb = 0;
		for (size_t i = 0; i < hr->n_headers; i++)
			if (is_user_meta(&hr->headers[i])) {
				nb += hr->headers[i].name_len;
				vb += hr->headers[i].value_len + 1;
			}
		names = malloc(nb + 1);
		vals = malloc(vb + 1);
		if (!ents || !pents || !names || !vals) {
			free(ents), free(pents), free(names), free(vals);
			fail(x, S3E_InternalError, NULL);
			put_drop_new(x);
			return;
		}
		char *np = names, *vp = vals;
		size_t j = 0;
		for (size_t i = 0; i < hr->n_headers; i++) {
			const struct sigv4_header *h = &hr->headers[i];
			if (!is_user_meta(h))
				continue;
			iolake__meta__object_record__user_meta_entry__init(&ents[j]);
			ents[j].key = np;
			for (size_t b = 11; b < h->name_len; b++)
				*np++ = (char)((h->name[b] >= 'A' && h->name[b] <= 'Z') ? h->name[b] + 32 : h->name[b]);
			*np++ = 0;
			ents[j].value = vp;
			memcpy(vp, h->value, h->value_len);
			vp += h->value_len;
			*vp++ = 0;
			pents[j] = &ents[j];
			j++;
		}
		r.n_user_meta = n_um;
		r.user_meta = pents;
	}
	uint8_t *lbuf = NULL;
	if (x->is_inline) {
		r.inline_data.data = x->inl;
		r.inline_data.len = x->inl_len;
	} else {
		const struct gw_data_layout *l = gw_data_put_layout(x->put);
		ssize_t n = (ssize_t)gw_data_layout_encoded_len(l);
		if (!(lbuf = malloc((size_t)n)) || gw_data_layout_encode(l, lbuf, (size_t)n) != n) {
			free(lbuf), free(ents), free(pents), free(names), free(vals);
			fail(x, S3E_InternalError, NULL);
			put_drop_new(x);
			return;
		}
		r.data_layout.data = lbuf;
		r.data_layout.len = (size_t)n;
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
	int rc = msubmit(x, &op, on_put_commit);
	free(lbuf), free(ents), free(pents), free(names), free(vals);
	if (rc) {
		put_drop_new(x);
		fail(x, S3E_ServiceUnavailable, NULL);
	}
}

static void on_put_cur(void *ud, int err, const ProtobufCMessage *resp)
{
	struct opx *x = ud;
	if (!opx_back(x)) {
		put_drop_new(x);
		return;
	}
	free_msg(x->cur);
	x->cur = NULL;
	if (err && err != IOL_ENOT_FOUND) {
		put_drop_new(x);
		fail(x, meta_err(err), NULL);
		return;
	}
	const Iolake__Meta__HeadObjectResponse *r = (const void *)resp;
	if (!err && r->status == IOLAKE__META__STATUS__STATUS_OK && r->record)
		x->cur = (Iolake__Meta__ObjectRecord *)copy_msg(&r->record->base);
	put_commit(x);
}

/* Read the current record (its generation is the commit's condition). */
static void put_read_cur(struct opx *x)
{
	Iolake__Meta__HeadObjectRequest req = IOLAKE__META__HEAD_OBJECT_REQUEST__INIT;
	req.bucket = x->bucket;
	req.key = x->key;
	if (mcall(x, META_M_HEAD_OBJECT, &req.base, on_put_cur)) {
		put_drop_new(x);
		fail(x, S3E_ServiceUnavailable, NULL);
	}
}

/* Body verified and data durable: commit. */
static void put_maybe_commit(struct opx *x)
{
	if (!x->c || !x->body_done || !x->data_done || x->committing)
		return;
	x->mtime_ms = wall_ms();
	if (x->is_inline) {
		uint8_t d[16];
		hash_md5(x->inl ? x->inl : (const uint8_t *)"", x->inl_len, d);
		hash_hex(d, 16, x->etag);
	} else {
		snprintf(x->etag, sizeof(x->etag), "%s", gw_data_put_etag(x->put));
	}
	x->committing = true;
	put_read_cur(x);
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
		fail(x, status == IOL_EUNAVAILABLE ? S3E_ServiceUnavailable : S3E_InternalError,
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
		fail(x, meta_err(err), NULL);
		return;
	}
	if (err || r->status != IOLAKE__META__STATUS__STATUS_OK) {
		fail(x, S3E_NoSuchBucket, NULL);
		return;
	}
	struct s3_call *c = x->c;
	if (!s3_call_http(c)->has_body) {
		/* No body at all: the front end already saw its end. Check the
		 * signed digest (of nothing) here. */
		static const uint8_t empty_sha[32] = {
			0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4,
			0xc8, 0x99, 0x6f, 0xb9, 0x24, 0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b,
			0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52, 0xb8, 0x55 };
		const struct s3_auth_result *ar = s3_call_auth(c);
		if (x->size) {
			fail(x, S3E_IncompleteBody, NULL);
			return;
		}
		if (ar->payload == S3_PAYLOAD_SHA256 && memcmp(ar->payload_sha256, empty_sha, 32)) {
			fail(x, S3E_XAmzContentSHA256Mismatch, NULL);
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
			fail(x, S3E_ServiceUnavailable, "No cluster map yet");
			return;
		}
	} else if (gw_map_object_pg(x->o->map, x->bucket, x->key, &x->pg)) {
		x->pg = 0; /* inline data needs no PG */
	}
	enum s3_err e = s3_call_read_body(c, on_put_body, on_put_body_end);
	if (e) {
		fail(x, e, NULL);
		return;
	}
	http_resume(s3_call_stream(c));
}

static void op_put_object(struct s3_call *c)
{
	struct s3_ops *o = s3_call_ctx(c);
	const struct http_request *hr = s3_call_http(c);
	uint64_t size = hr->content_length;
	char num[24];
	if (hdr_str(c, "x-amz-decoded-content-length", num, sizeof(num))) {
		char *end;
		size = strtoull(num, &end, 10);
		if (!num[0] || *end) {
			s3_call_error(c, S3E_InvalidArgument, NULL);
			return;
		}
	} else if (!hr->has_content_length) {
		s3_call_error(c, S3E_MissingContentLength, NULL);
		return;
	}
	if (size > S3_MAX_PUT_BYTES) {
		s3_call_error(c, S3E_EntityTooLarge, NULL);
		return;
	}
	struct opx *x = opx_new(c);
	if (!x) {
		s3_call_error(c, S3E_InternalError, NULL);
		return;
	}
	x->size = size;
	x->is_inline = size <= o->inline_max;
	if (x->is_inline && size && !(x->inl = malloc(size))) {
		fail(x, S3E_InternalError, NULL);
		return;
	}
	/* Hold the body (unread bytes would be discarded) until the bucket
	 * is known to exist. */
	if (hr->has_body)
		http_pause(s3_call_stream(c));
	Iolake__Meta__GetBucketRequest req = IOLAKE__META__GET_BUCKET_REQUEST__INIT;
	req.name = x->bucket;
	if (mcall(x, META_M_GET_BUCKET, &req.base, on_put_bucket))
		fail(x, S3E_ServiceUnavailable, NULL);
}

/* ------------------------------------------------------------ GetObject */

static void get_pump(struct opx *x);

static void add_object_headers(struct opx *x)
{
	struct http_stream *s = s3_call_stream(x->c);
	const Iolake__Meta__ObjectRecord *r = x->rec;
	char v[64];
	snprintf(v, sizeof(v), "\"%s\"", r->etag ? r->etag : "");
	http_add_header(s, "ETag", v);
	http_date(r->mtime_ms, v);
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
	if (!hdr_str(c, "range", v, sizeof(v)))
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

static void get_pump(struct opx *x)
{
	struct http_stream *s = s3_call_stream(x->c);
	while (!x->ended && x->writes < MAX_WRITES) {
		struct buf_slice sl;
		int rc = gw_data_get_read(x->get, &sl);
		if (rc == -EAGAIN)
			return;
		if (rc < 0) {
			LOG_WARN("get failed", "bucket=%s key=%s err=%s", x->bucket, LOG_Q(x->key),
				 LOG_Q(gw_data_get_error(x->get)));
			x->ended = true;
			if (!x->started) {
				fail(x, S3E_ServiceUnavailable,
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

static void on_inline_written(struct http_stream *s, int status, void *arg)
{
	(void)s, (void)status, (void)arg; /* the record lives until finish */
}

static void get_respond(struct opx *x)
{
	const Iolake__Meta__ObjectRecord *r = x->rec;
	struct http_stream *s = s3_call_stream(x->c);
	int rg = parse_range(x->c, r->size, &x->off, &x->len);
	if (rg < 0) {
		fail(x, S3E_InvalidRange, NULL);
		return;
	}
	if (rg == 0) {
		x->off = 0;
		x->len = r->size;
	}
	x->partial = rg == 1;
	if (x->head) {
		add_object_headers(x);
		http_respond_start(s, 200, (int64_t)r->size);
		http_respond_end(s);
		return;
	}
	if (rec_is_inline(r)) {
		/* Inline: the record holds the body; it lives until finish. */
		if (r->inline_data.len < x->off + x->len) {
			fail(x, S3E_InternalError, NULL);
			return;
		}
		add_object_headers(x);
		http_respond(s, x->partial ? 206 : 200, r->inline_data.data + x->off, x->len,
			     on_inline_written, NULL);
		return;
	}
	struct gw_data_target t;
	int rc = rec_layout(r, &x->lay);
	if (rc) {
		fail(x, rc == -ENOMEM ? S3E_ServiceUnavailable : S3E_InternalError,
		     rc == -ENOMEM ? NULL : "Unreadable object layout");
		return;
	}
	if (gw_map_target(x->o->map, x->lay.pg, &t)) {
		fail(x, S3E_ServiceUnavailable, "No cluster map yet");
		return;
	}
	rc = gw_data_get_start(x->o->data, &t, &x->lay, x->off, x->len, on_get_readable, x, &x->get);
	if (rc) {
		fail(x, rc == -EAGAIN || rc == -ENOMEM ? S3E_ServiceUnavailable : S3E_InternalError, NULL);
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
		fail(x, meta_err(err), NULL);
	else if (s3_call_req(x->c)->op == S3_OP_DeleteObject)
		exists ? (void)http_respond(s3_call_stream(x->c), 204, NULL, 0, NULL, NULL)
		       : fail(x, S3E_NoSuchBucket, NULL);
	else
		fail(x, exists ? S3E_NoSuchKey : S3E_NoSuchBucket, NULL);
}

/* NOT_FOUND from meta: tell NoSuchKey from NoSuchBucket. */
static void check_bucket(struct opx *x)
{
	Iolake__Meta__GetBucketRequest req = IOLAKE__META__GET_BUCKET_REQUEST__INIT;
	req.name = x->bucket;
	if (mcall(x, META_M_GET_BUCKET, &req.base, on_get_nobucket))
		fail(x, S3E_ServiceUnavailable, NULL);
}

static void on_get_head(void *ud, int err, const ProtobufCMessage *resp)
{
	struct opx *x = ud;
	if (!opx_back(x))
		return;
	const Iolake__Meta__HeadObjectResponse *r = (const void *)resp;
	if (err && err != IOL_ENOT_FOUND) {
		fail(x, meta_err(err), NULL);
		return;
	}
	if (err || r->status != IOLAKE__META__STATUS__STATUS_OK || !r->record) {
		check_bucket(x);
		return;
	}
	x->rec = (Iolake__Meta__ObjectRecord *)copy_msg(&r->record->base);
	if (!x->rec) {
		fail(x, S3E_InternalError, NULL);
		return;
	}
	get_respond(x);
}

static void op_get_object(struct s3_call *c)
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
	if (mcall(x, META_M_HEAD_OBJECT, &req.base, on_get_head))
		fail(x, S3E_ServiceUnavailable, NULL);
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
		drop_shards(x->o, x->cur);
	if (!x->c) {
		opx_maybe_free(x);
		return;
	}
	if (st == IOLAKE__META__STATUS__STATUS_OK || st == IOLAKE__META__STATUS__STATUS_NOT_FOUND) {
		http_respond(s3_call_stream(x->c), 204, NULL, 0, NULL, NULL);
	} else if (st == IOLAKE__META__STATUS__STATUS_CONFLICT && ++x->tries < COMMIT_TRIES) {
		del_read_cur(x);
	} else {
		fail(x, err ? meta_err(err) : S3E_InternalError, NULL);
	}
}

static void on_del_cur(void *ud, int err, const ProtobufCMessage *resp)
{
	struct opx *x = ud;
	if (!opx_back(x))
		return;
	const Iolake__Meta__HeadObjectResponse *r = (const void *)resp;
	if (err && err != IOL_ENOT_FOUND) {
		fail(x, meta_err(err), NULL);
		return;
	}
	if (err || r->status != IOLAKE__META__STATUS__STATUS_OK || !r->record) {
		check_bucket(x); /* 204 when the bucket exists, as S3 */
		return;
	}
	free_msg(x->cur);
	x->cur = (Iolake__Meta__ObjectRecord *)copy_msg(&r->record->base);
	if (!x->cur) {
		fail(x, S3E_InternalError, NULL);
		return;
	}
	Iolake__Meta__DeleteObject d = IOLAKE__META__DELETE_OBJECT__INIT;
	d.bucket = x->bucket;
	d.key = x->key;
	d.if_generation = x->cur->generation;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_DELETE_OBJECT;
	op.delete_object = &d;
	if (msubmit(x, &op, on_del_commit))
		fail(x, S3E_ServiceUnavailable, NULL);
}

static void del_read_cur(struct opx *x)
{
	Iolake__Meta__HeadObjectRequest req = IOLAKE__META__HEAD_OBJECT_REQUEST__INIT;
	req.bucket = x->bucket;
	req.key = x->key;
	if (mcall(x, META_M_HEAD_OBJECT, &req.base, on_del_cur))
		fail(x, S3E_ServiceUnavailable, NULL);
}

static void op_delete_object(struct s3_call *c)
{
	struct opx *x = opx_new(c);
	if (!x) {
		s3_call_error(c, S3E_InternalError, NULL);
		return;
	}
	del_read_cur(x);
}

/* ------------------------------------------------------------ lifecycle */

static bool ready_hook(void *ctx)
{
	return s3_ops_ready(ctx);
}

static int metrics_hook(void *ctx, char **text, size_t *len)
{
	struct s3_ops *o = ctx;
	return metrics_render(o->reg, text, len);
}

#define EC_GAUGE(field)                                       \
	static double g_##field(void *arg)                    \
	{                                                     \
		struct gw_data_stats st;                        \
		gw_data_stats(((struct s3_ops *)arg)->data, &st); \
		return (double)st.field;                      \
	}
EC_GAUGE(puts)
EC_GAUGE(puts_failed)
EC_GAUGE(gets)
EC_GAUGE(gets_failed)
EC_GAUGE(decodes)
EC_GAUGE(shard_put_failures)
EC_GAUGE(shard_get_failures)
EC_GAUGE(buffered_bytes)

static double g_epoch(void *arg)
{
	return (double)gw_map_epoch(((struct s3_ops *)arg)->map);
}

static double g_up(void *arg)
{
	return (double)gw_map_osds_up(((struct s3_ops *)arg)->map);
}

static void register_metrics(struct s3_ops *o)
{
	for (int i = 1; i < S3_OP__COUNT; i++)
		o->m_req[i] = metrics_counter_new(o->reg, "iolake_gw_requests_total",
						  "S3 requests dispatched, by operation",
						  METRICS_LABELS("op", s3_op_name(i)));
	o->m_unavail = metrics_counter_new(o->reg, "iolake_gw_unavailable_total",
					   "requests answered 503 ServiceUnavailable", NULL);
	static const struct {
		const char *name, *help;
		metrics_gauge_fn fn;
	} g[] = {
		{ "iolake_gw_data_puts", "erasure-coded PUTs completed", g_puts },
		{ "iolake_gw_data_puts_failed", "erasure-coded PUTs failed", g_puts_failed },
		{ "iolake_gw_data_gets", "erasure-coded GETs started", g_gets },
		{ "iolake_gw_data_gets_failed", "GETs that could not read enough shards", g_gets_failed },
		{ "iolake_gw_data_decodes", "segments rebuilt from parity", g_decodes },
		{ "iolake_gw_data_shard_put_failures", "PutShard calls failed", g_shard_put_failures },
		{ "iolake_gw_data_shard_get_failures", "GetShard calls failed or mismatching", g_shard_get_failures },
		{ "iolake_gw_data_buffered_bytes", "segment and decode buffer bytes held", g_buffered_bytes },
		{ "iolake_gw_map_epoch", "cluster map epoch held", g_epoch },
		{ "iolake_gw_osds_up", "OSDs up in the map held", g_up },
	};
	for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++)
		metrics_gauge_fn_new(o->reg, g[i].name, g[i].help, NULL, g[i].fn, o);
}

int s3_ops_new(uv_loop_t *loop, const struct s3_ops_cfg *cfg, struct s3_ops **out)
{
	if (!cfg->n_meta)
		return -EINVAL;
	struct s3_ops *o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	int rc = -ENOMEM;
	o->loop = loop;
	snprintf(o->region, sizeof(o->region), "%s", cfg->region ? cfg->region : "us-east-1");
	o->inline_max = cfg->inline_max_bytes ? cfg->inline_max_bytes : 4096;
	o->reg = cfg->metrics;
	if (!o->reg) {
		o->reg = metrics_registry_new();
		o->own_reg = true;
		if (!o->reg)
			goto err_free;
	}
	struct gw_data_opts dop = cfg->data;
	if (!dop.k && !dop.m)
		dop.k = 4, dop.m = 2;
	/* 1 MiB segments (256 KiB shards at 4+2), not gw_data's 4 MiB: a
	 * PUT holds window + 1 segments and their parity, and the gateway
	 * serves many PUTs at once. */
	if (!dop.segment_bytes)
		dop.segment_bytes = 1u << 20;
	dop.inline_max_bytes = o->inline_max;
	rc = gw_data_new(loop, &dop, &o->data);
	if (rc)
		goto err_reg;
	o->quorum = dop.write_quorum ? dop.write_quorum : dop.k + (dop.m ? 1 : 0);
	struct meta_client_opts mo = { .members = cfg->meta, .n_members = cfg->n_meta,
				       .retry_for_ms = 10000 };
	rc = meta_client_new(loop, &mo, &o->mc);
	if (rc)
		goto err_ec;
	rc = gw_map_start(loop, cfg->meta, cfg->n_meta, &o->map);
	if (rc)
		goto err_mc;
	register_metrics(o);
	*out = o;
	return 0;
err_mc:
	meta_client_close(o->mc);
err_ec:
	gw_data_free(o->data);
err_reg:
	if (o->own_reg)
		metrics_registry_free(o->reg);
err_free:
	free(o);
	return rc;
}

static uint64_t creds_generation_hook(void *ctx)
{
	return gw_map_creds_epoch(((struct s3_ops *)ctx)->map);
}

void s3_ops_bind(struct s3_ops *o, struct s3_server_cfg *s)
{
	s->ops_ctx = o;
	s->creds.lookup = cred_lookup;
	s->creds.ctx = o;
	s->ready = ready_hook;
	s->creds_generation = creds_generation_hook;
	s->metrics = metrics_hook;
	s->ops[S3_OP_ListBuckets] = op_list_buckets;
	s->ops[S3_OP_CreateBucket] = op_create_bucket;
	s->ops[S3_OP_HeadBucket] = op_get_bucket;
	s->ops[S3_OP_GetBucketLocation] = op_get_bucket;
	s->ops[S3_OP_DeleteBucket] = op_delete_bucket;
	s->ops[S3_OP_ListObjects] = op_list_objects;
	s->ops[S3_OP_ListObjectsV2] = op_list_objects;
	s->ops[S3_OP_PutObject] = op_put_object;
	s->ops[S3_OP_GetObject] = op_get_object;
	s->ops[S3_OP_HeadObject] = op_get_object;
	s->ops[S3_OP_DeleteObject] = op_delete_object;
}

bool s3_ops_ready(struct s3_ops *o)
{
	return gw_map_epoch(o->map) > 0 && gw_map_osds_up(o->map) >= o->quorum;
}

/* gw_data_free requires no live operation; deletes started after a commit
 * (and calls of freed PUTs/GETs) end once their channels closed, a few
 * loop turns after gw_map_close. Poll for that, then free. */
struct data_reaper {
	uv_timer_t t;
	struct gw_data *d;
};

static void on_reaper_closed(uv_handle_t *h)
{
	free(h->data);
}

static void on_reaper(uv_timer_t *t)
{
	struct data_reaper *r = t->data;
	struct gw_data_stats st;
	gw_data_stats(r->d, &st);
	if (st.live_ops)
		return;
	gw_data_free(r->d);
	uv_timer_stop(t);
	uv_close((uv_handle_t *)t, on_reaper_closed);
}

static void data_free_when_idle(uv_loop_t *loop, struct gw_data *d)
{
	struct gw_data_stats st;
	gw_data_stats(d, &st);
	struct data_reaper *r = st.live_ops ? malloc(sizeof(*r)) : NULL;
	if (!r) {
		if (st.live_ops) /* no memory to wait with: leak d rather than abort */
			return;
		gw_data_free(d);
		return;
	}
	r->d = d;
	uv_timer_init(loop, &r->t);
	r->t.data = r;
	uv_timer_start(&r->t, on_reaper, 1, 5);
}

void s3_ops_free(struct s3_ops *o)
{
	if (!o)
		return;
	meta_client_close(o->mc);
	gw_map_close(o->map);   /* pending shard calls come back CANCELLED */
	data_free_when_idle(o->loop, o->data);
	if (o->own_reg)
		metrics_registry_free(o->reg);
	free(o);
}
