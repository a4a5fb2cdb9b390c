/*
 * admin_api_quota.c — quotas (issue 20; docs/admin-api.md "Quotas"):
 *   GET    /api/v1/buckets/{b}/quota   the bucket's quota and usage, its
 *                                      owner's quota and usage
 *   GET    /api/v1/users/{u}/quota     the user's quota and its usage over
 *                                      the buckets it owns
 *   PUT    the same, {"max_bytes": N, "max_objects": N}: SetQuota (0 on a
 *          dimension: no limit there; both 0 clears)
 *   DELETE the same: SetQuota without a quota (clear)
 * The usage is meta's (meta/state_quota.c): the root counts the records of
 * buckets without key ranges; a bucket held in range groups has "usage":
 * null. Enforcement is the S3 front end's (gateway/s3_quota.c).
 */
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "gateway/admin_api_int.h"

void admin_write_quota(struct jsonw *w, const char *k, const Iolake__Meta__Quota *q)
{
	jsonw_key(w, k);
	if (!q) {
		jsonw_null(w);
		return;
	}
	jsonw_obj_begin(w);
	jsonw_ku64(w, "max_bytes", q->max_bytes);
	jsonw_ku64(w, "max_objects", q->max_objects);
	jsonw_obj_end(w);
}

static void write_usage(struct jsonw *w, const char *k, const Iolake__Meta__Usage *u)
{
	jsonw_key(w, k);
	if (!u) {
		jsonw_null(w);
		return;
	}
	jsonw_obj_begin(w);
	jsonw_ku64(w, "objects", u->objects);
	jsonw_ku64(w, "bytes", u->bytes);
	jsonw_obj_end(w);
}

/* ------------------------------------------------------------ GET bucket */

static void on_bucket(struct admin_call *c, void *ud, int err, const ProtobufCMessage *resp)
{
	(void)ud;
	const Iolake__Meta__GetBucketResponse *r = (const void *)resp;
	if (err) {
		admin_reply_meta_error(c, err);
		return;
	}
	if (r->status != IOLAKE__META__STATUS__STATUS_OK || !r->bucket) {
		admin_reply_error(c, 404, "NotFound", "no such bucket");
		return;
	}
	const Iolake__Meta__Bucket *b = r->bucket;
	struct jsonw w;
	jsonw_init(&w, 0);
	jsonw_obj_begin(&w);
	jsonw_kstr(&w, "bucket", b->name);
	admin_write_quota(&w, "quota", b->quota);
	write_usage(&w, "usage", b->usage);
	jsonw_kstr(&w, "owner", b->owner);
	admin_write_quota(&w, "owner_quota", b->owner_quota);
	write_usage(&w, "owner_usage", b->owner_usage);
	jsonw_obj_end(&w);
	admin_reply_json(c, 200, &w);
}

/* ------------------------------------------------------------ GET user */

struct user_quota {
	Iolake__Meta__Quota *quota;        /* copied from the user; NULL: none */
	bool found;
};

static void user_quota_free(void *p)
{
	struct user_quota *s = p;
	admin_msg_free(s->quota ? &s->quota->base : NULL);
	free(s);
}

static void on_owned(struct admin_call *c, void *ud, int err, const ProtobufCMessage *resp)
{
	(void)ud;
	struct user_quota *s = admin_call_state(c);
	if (err) {
		admin_reply_meta_error(c, err);
		return;
	}
	const Iolake__Meta__ListBucketsResponse *r = (const void *)resp;
	uint64_t objects = 0, bytes = 0, counted = 0;
	for (size_t i = 0; i < r->n_buckets; i++)
		if (r->buckets[i]->usage) {
			objects += r->buckets[i]->usage->objects;
			bytes += r->buckets[i]->usage->bytes;
			counted++;
		}
	struct jsonw w;
	jsonw_init(&w, 0);
	jsonw_obj_begin(&w);
	jsonw_kstr(&w, "user", admin_call_route(c)->name);
	admin_write_quota(&w, "quota", s->quota);
	jsonw_key(&w, "usage");
	jsonw_obj_begin(&w);
	jsonw_ku64(&w, "objects", objects);
	jsonw_ku64(&w, "bytes", bytes);
	jsonw_ku64(&w, "buckets", r->n_buckets);
	/* buckets held in range groups have no usage here */
	jsonw_ku64(&w, "buckets_counted", counted);
	jsonw_obj_end(&w);
	jsonw_obj_end(&w);
	admin_reply_json(c, 200, &w);
}

static void on_user(struct admin_call *c, void *ud, int err, const ProtobufCMessage *resp)
{
	(void)ud;
	struct user_quota *s = admin_call_state(c);
	if (err) {
		admin_reply_meta_error(c, err);
		return;
	}
	const Iolake__Meta__ListUsersResponse *r = (const void *)resp;
	const char *name = admin_call_route(c)->name;
	for (size_t i = 0; i < r->n_users && !s->found; i++)
		if (!strcmp(r->users[i]->name, name)) {
			s->found = true;
			if (r->users[i]->quota &&
			    !(s->quota = (Iolake__Meta__Quota *)admin_msg_copy(&r->users[i]->quota->base))) {
				admin_reply_error(c, 500, "InternalError", "out of memory");
				return;
			}
		}
	if (!s->found) {
		admin_reply_error(c, 404, "NoSuchUser", "no such user");
		return;
	}
	Iolake__Meta__ListBucketsRequest q = IOLAKE__META__LIST_BUCKETS_REQUEST__INIT;
	q.owner = (char *)name;
	int rc = admin_meta_call(c, META_M_LIST_BUCKETS, &q.base, on_owned, NULL);
	if (rc)
		admin_reply_meta_error(c, rc);
}

void admin_h_quota_get(struct admin_call *c)
{
	const struct admin_route *rt = admin_call_route(c);
	int rc;
	if (rt->quota_user) {
		struct user_quota *s = calloc(1, sizeof(*s));
		if (!s) {
			admin_reply_error(c, 500, "InternalError", "out of memory");
			return;
		}
		admin_call_set_state(c, s, user_quota_free);
		Iolake__Meta__ListUsersRequest q = IOLAKE__META__LIST_USERS_REQUEST__INIT;
		rc = admin_meta_call(c, META_M_LIST_USERS, &q.base, on_user, NULL);
	} else {
		Iolake__Meta__GetBucketRequest q = IOLAKE__META__GET_BUCKET_REQUEST__INIT;
		q.name = (char *)rt->name;
		rc = admin_meta_call(c, META_M_GET_BUCKET, &q.base, on_bucket, NULL);
	}
	if (rc)
		admin_reply_meta_error(c, rc);
}

/* ------------------------------------------------------------ PUT, DELETE */

static void on_set(struct admin_call *c, int err, const Iolake__Meta__OpResult *res)
{
	const struct admin_quota_set *q = admin_call_state(c);
	const struct admin_route *rt = admin_call_route(c);
	if (err) {
		admin_reply_meta_error(c, err);
		return;
	}
	if (res->status != IOLAKE__META__STATUS__STATUS_OK) {
		admin_reply_status(c, res->status, rt->quota_user ? "no such user" : "no such bucket");
		return;
	}
	struct jsonw w;
	jsonw_init(&w, 0);
	jsonw_obj_begin(&w);
	jsonw_kstr(&w, rt->quota_user ? "user" : "bucket", rt->name);
	Iolake__Meta__Quota mq = IOLAKE__META__QUOTA__INIT;
	if (q) {
		mq.max_bytes = q->max_bytes;
		mq.max_objects = q->max_objects;
	}
	admin_write_quota(&w, "quota", q && (q->max_bytes || q->max_objects) ? &mq : NULL);
	jsonw_obj_end(&w);
	admin_reply_json(c, 200, &w);
}

static void submit(struct admin_call *c, const struct admin_quota_set *in)
{
	const struct admin_route *rt = admin_call_route(c);
	Iolake__Meta__Quota mq = IOLAKE__META__QUOTA__INIT;
	Iolake__Meta__SetQuota sq = IOLAKE__META__SET_QUOTA__INIT;
	sq.user = rt->quota_user;
	sq.name = (char *)rt->name;
	if (in) {
		mq.max_bytes = in->max_bytes;
		mq.max_objects = in->max_objects;
		sq.quota = &mq;
	}
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_SET_QUOTA;
	op.set_quota = &sq;
	int rc = admin_meta_submit(c, &op, on_set);
	if (rc)
		admin_reply_meta_error(c, rc);
}

void admin_h_quota_set(struct admin_call *c)
{
	struct admin_quota_set *q = calloc(1, sizeof(*q));
	if (!q) {
		admin_reply_error(c, 500, "InternalError", "out of memory");
		return;
	}
	admin_call_set_state(c, q, NULL);
	size_t len;
	const char *body = admin_call_body(c, &len);
	const char *why = "";
	int rc = admin_parse_quota_set(body, len, q, &why);
	if (rc) {
		admin_reply_error(c, 400, rc == -EBADMSG ? "MalformedJSON" : "InvalidRequest", why);
		return;
	}
	submit(c, q);
}

void admin_h_quota_clear(struct admin_call *c)
{
	submit(c, NULL);
}
