/*
 * s3_ops.c — the S3 operations' shared core: struct s3_ops, per-request
 * struct opx and their helpers (s3_ops_int.h), credentials over meta,
 * bucket operations, ListObjects v1/v2, metrics and lifecycle. Object
 * operations are in s3_object.c. Contracts in s3_ops.h.
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
#include "gateway/s3_ops_int.h"

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
#include "gateway/s3_status.h"
#include "meta/client.h"
#include "meta/list.h"

/* ------------------------------------------------------------ helpers */

ProtobufCMessage *s3o_copy_msg(const ProtobufCMessage *m)
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

void s3o_free_msg(void *m)
{
	if (m)
		protobuf_c_message_free_unpacked(m, NULL);
}

uint64_t s3o_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void s3o_http_date(uint64_t ms, char out[40])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 40, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

void s3o_iso_date(uint64_t ms, char out[40])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	size_t n = strftime(out, 40, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, 40 - n, ".%03uZ", (unsigned)(ms % 1000));
}

const struct sigv4_header *s3o_hdr(struct s3_call *c, const char *name)
{
	return http_request_header(s3_call_http(c), name);
}

/* A header value as a NUL-terminated copy into buf (truncated), or NULL. */
char *s3o_hdr_str(struct s3_call *c, const char *name, char *buf, size_t cap)
{
	const struct sigv4_header *h = s3o_hdr(c, name);
	if (!h)
		return NULL;
	size_t n = h->value_len < cap - 1 ? h->value_len : cap - 1;
	memcpy(buf, h->value, n);
	buf[n] = 0;
	return buf;
}

void opx_maybe_free(struct opx *x)
{
	if (x->c || x->pending || x->writes)
		return;
	if (x->put)
		gw_data_put_free(x->put);
	if (x->get)
		gw_data_get_free(x->get);
	gw_data_layout_clear(&x->lay);
	free(x->spill);
	if (x->ext_free)
		x->ext_free(x->ext);
	if (x->part_free)
		x->part_free(x->part);
	s3o_free_msg(x->cur);
	s3o_free_msg(x->rec);
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

struct opx *opx_new(struct s3_call *c)
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
bool opx_back(struct opx *x)
{
	x->pending--;
	if (x->c)
		return true;
	opx_maybe_free(x);
	return false;
}

int s3o_mcall(struct opx *x, unsigned method, const ProtobufCMessage *req, meta_client_cb cb)
{
	x->pending++;
	int rc = meta_client_call(x->o->mc, method, req, cb, x);
	if (rc)
		x->pending--;
	return rc;
}

int s3o_msubmit(struct opx *x, Iolake__Meta__Op *op, meta_client_submit_cb cb)
{
	x->pending++;
	int rc = meta_client_submit(x->o->mc, op, cb, x);
	if (rc)
		x->pending--;
	return rc;
}

/* A meta failure as the S3 error to answer with. */
enum s3_err s3o_meta_err(int err)
{
	return s3_status_client_err(err);
}

void s3o_fail(struct opx *x, enum s3_err e, const char *msg)
{
	if (!x->c)
		return;
	if (e == S3E_ServiceUnavailable)
		metrics_counter_inc(x->o->m_unavail);
	s3_call_error(x->c, e, msg);
}

const char *s3o_owner_of(struct s3_ops *o, struct s3_call *c)
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
		s3o_fail(x, s3o_meta_err(err), NULL);
		return;
	}
	const Iolake__Meta__ListBucketsResponse *r = (const void *)resp;
	const char *owner = s3o_owner_of(x->o, x->c);
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
		s3o_iso_date(r->buckets[i]->created_ms, d);
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
	if (s3o_mcall(x, META_M_LIST_BUCKETS, &req.base, on_list_buckets))
		s3o_fail(x, S3E_ServiceUnavailable, NULL);
}

static void on_create_bucket(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t idx)
{
	(void)idx;
	struct opx *x = ud;
	if (!opx_back(x))
		return;
	if (err) {
		s3o_fail(x, err == -EINVAL ? S3E_InvalidBucketName : s3o_meta_err(err), NULL);
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
		s3o_fail(x, S3E_BucketAlreadyOwnedByYou, NULL);
		return;
	case IOLAKE__META__STATUS__STATUS_INVALID:
		s3o_fail(x, S3E_InvalidBucketName, NULL);
		return;
	default:
		s3o_fail(x, S3E_InternalError, NULL);
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
	b.owner = (char *)s3o_owner_of(x->o, c);
	b.created_ms = s3o_wall_ms();
	b.region = x->o->region;
	Iolake__Meta__CreateBucket cb = IOLAKE__META__CREATE_BUCKET__INIT;
	cb.bucket = &b;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_CREATE_BUCKET;
	op.create_bucket = &cb;
	if (s3o_msubmit(x, &op, on_create_bucket))
		s3o_fail(x, S3E_ServiceUnavailable, NULL);
}

static void on_delete_bucket(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t idx)
{
	(void)idx;
	struct opx *x = ud;
	if (!opx_back(x))
		return;
	if (err) {
		s3o_fail(x, s3o_meta_err(err), NULL);
		return;
	}
	switch (res->status) {
	case IOLAKE__META__STATUS__STATUS_OK:
		http_respond(s3_call_stream(x->c), 204, NULL, 0, NULL, NULL);
		return;
	case IOLAKE__META__STATUS__STATUS_NOT_FOUND:
		s3o_fail(x, S3E_NoSuchBucket, NULL);
		return;
	case IOLAKE__META__STATUS__STATUS_BUCKET_NOT_EMPTY:
		s3o_fail(x, S3E_BucketNotEmpty, NULL);
		return;
	default:
		s3o_fail(x, S3E_InternalError, NULL);
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
	if (s3o_msubmit(x, &op, on_delete_bucket))
		s3o_fail(x, S3E_ServiceUnavailable, NULL);
}

/* HeadBucket and GetBucketLocation. */
static void on_get_bucket(void *ud, int err, const ProtobufCMessage *resp)
{
	struct opx *x = ud;
	if (!opx_back(x))
		return;
	if (err && err != IOL_ENOT_FOUND) {
		s3o_fail(x, s3o_meta_err(err), NULL);
		return;
	}
	const Iolake__Meta__GetBucketResponse *r = (const void *)resp;
	if (err || r->status != IOLAKE__META__STATUS__STATUS_OK || !r->bucket) {
		s3o_fail(x, S3E_NoSuchBucket, NULL);
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
	if (s3o_mcall(x, META_M_GET_BUCKET, &req.base, on_get_bucket))
		s3o_fail(x, S3E_ServiceUnavailable, NULL);
}

/* ------------------------------------------------------------ listing */

static bool url_keep(unsigned char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
	       ch == '-' || ch == '_' || ch == '.' || ch == '~' || ch == '/';
}

void s3o_key_elem(struct xml_w *w, const char *name, const char *v, bool url)
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

const char *s3o_qval(const struct s3_req *r, const char *name)
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
		s3o_fail(x, S3E_NoSuchBucket, NULL);
		return;
	}
	if (err == -EINVAL) {
		s3o_fail(x, S3E_InvalidArgument, "The continuation token provided is incorrect");
		return;
	}
	if (err) {
		s3o_fail(x, s3o_meta_err(err), NULL);
		return;
	}
	const Iolake__Meta__ListObjectsResponse *r = (const void *)resp;
	if (r->status == IOLAKE__META__STATUS__STATUS_NOT_FOUND) {
		s3o_fail(x, S3E_NoSuchBucket, NULL);
		return;
	}
	if (r->status != IOLAKE__META__STATUS__STATUS_OK) {
		s3o_fail(x, S3E_InvalidArgument, "The continuation token provided is incorrect");
		return;
	}
	const struct s3_req *q = s3_call_req(x->c);
	bool v2 = q->op == S3_OP_ListObjectsV2;
	const char *enc = s3o_qval(q, "encoding-type");
	bool url = enc && strcmp(enc, "url") == 0;
	const char *prefix = s3o_qval(q, "prefix"), *delim = s3o_qval(q, "delimiter");
	const char *mk = s3o_qval(q, "max-keys");
	unsigned max_keys = mk ? (unsigned)strtoul(mk, NULL, 10) : 1000;
	if (max_keys > 1000)
		max_keys = 1000;
	struct xml_w *w = s3_call_xml(x->c);
	xml_decl(w);
	xml_open_ns(w, "ListBucketResult", S3_XMLNS);
	xml_elem(w, "Name", x->bucket);
	s3o_key_elem(w, "Prefix", prefix ? prefix : "", url);
	if (v2) {
		const char *sa = s3o_qval(q, "start-after"), *tok = s3o_qval(q, "continuation-token");
		if (sa)
			s3o_key_elem(w, "StartAfter", sa, url);
		if (tok)
			xml_elem(w, "ContinuationToken", tok);
		xml_elem_u64(w, "KeyCount", r->n_entries);
	} else {
		const char *marker = s3o_qval(q, "marker");
		s3o_key_elem(w, "Marker", marker ? marker : "", url);
		if (r->truncated && delim && *delim && r->n_entries)
			s3o_key_elem(w, "NextMarker", r->entries[r->n_entries - 1]->name, url);
	}
	xml_elem_u64(w, "MaxKeys", max_keys);
	if (delim && *delim)
		s3o_key_elem(w, "Delimiter", delim, url);
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
		s3o_iso_date(rec ? rec->mtime_ms : 0, d);
		snprintf(etag, sizeof(etag), "\"%s\"", rec && rec->etag ? rec->etag : "");
		xml_open(w, "Contents");
		s3o_key_elem(w, "Key", e->name, url);
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
		s3o_key_elem(w, "Prefix", r->entries[i]->name, url);
		xml_close(w);
	}
	xml_close(w);
	s3_call_send_xml(x->c, 200);
}

static void op_list_objects(struct s3_call *c)
{
	const struct s3_req *q = s3_call_req(c);
	const char *mk = s3o_qval(q, "max-keys");
	if (mk) {
		char *end;
		long v = strtol(mk, &end, 10);
		if (!*mk || *end || v < 0) {
			s3_call_error(c, S3E_InvalidArgument, "Provided max-keys not an integer or within integer range");
			return;
		}
	}
	const char *enc = s3o_qval(q, "encoding-type");
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
	req.prefix = (char *)(s3o_qval(q, "prefix") ? s3o_qval(q, "prefix") : "");
	req.delimiter = (char *)(s3o_qval(q, "delimiter") ? s3o_qval(q, "delimiter") : "");
	const char *sa = v2 ? s3o_qval(q, "start-after") : s3o_qval(q, "marker");
	const char *tok = v2 ? s3o_qval(q, "continuation-token") : NULL;
	req.start_after = (char *)(sa ? sa : "");
	req.token = (char *)(tok ? tok : "");
	unsigned long m = mk ? strtoul(mk, NULL, 10) : 1000;
	req.max_keys = m > 1000 ? 1000 : (uint32_t)m;
	req.want_records = true;
	if (s3o_mcall(x, META_M_LIST_OBJECTS, &req.base, on_list_objects))
		s3o_fail(x, S3E_ServiceUnavailable, NULL);
}

/* ------------------------------------------------------------ layout */

/* Whether r's body lives in the record itself. */
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

/* gw_data saw a degraded PG: queue a rescan flag (never on the request's
 * critical path: gw_heal only sets a bit). */
static void on_degraded(void *ud, uint32_t pg, enum gw_data_degraded why)
{
	struct s3_ops *o = ud;
	gw_heal_flag(o->heal, pg,
		     why == GW_DATA_PUT_PARTIAL ? GW_HEAL_PUT_PARTIAL : GW_HEAL_READ_BAD_SHARD);
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
	dop.on_degraded = on_degraded;
	dop.degraded_ud = o;
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
	rc = gw_heal_new(loop, o->mc, o->reg, NULL, &o->heal);
	if (rc) {
		gw_map_close(o->map);
		goto err_mc;
	}
	if (cfg->gc_interval_ms) {
		struct gw_gc_opts go = { .interval_ms = cfg->gc_interval_ms };
		rc = gw_gc_start(loop, o->mc, o->map, o->data, o->reg, &go, &o->gc);
		if (rc) {
			gw_heal_close(o->heal);
			gw_map_close(o->map);
			goto err_mc;
		}
	}
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
	s->ops[S3_OP_PutObject] = s3o_put_object;
	s->ops[S3_OP_GetObject] = s3o_get_object;
	s->ops[S3_OP_HeadObject] = s3o_get_object;
	s->ops[S3_OP_DeleteObject] = s3o_delete_object;
	s3_delete_multi_bind(s);
	s3_tagging_bind(s);
	s3_attrs_bind(s);
	s3_multipart_bind(s);
	s3_copy_bind(s);
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
	gw_gc_close(o->gc);   /* before the client: its calls come back below */
	gw_heal_close(o->heal);
	meta_client_close(o->mc);
	gw_map_close(o->map);   /* pending shard calls come back CANCELLED */
	data_free_when_idle(o->loop, o->data);
	if (o->own_reg)
		metrics_registry_free(o->reg);
	free(o);
}
