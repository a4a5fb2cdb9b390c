/*
 * admin_api_buckets.c — GET /api/v1/buckets: every bucket (name, owner,
 * creation time, region) from meta's ListBuckets, with its object count
 * and bytes.
 *
 * Meta counts the records of buckets without key ranges (each bucket of
 * ListBuckets carries its usage: meta/state_quota.c; noncurrent versions
 * are records too); the others are counted by listing the bucket's records (ListObjects with records, ADMIN_LIST_PAGE keys a page),
 * bucket after bucket: the cost grows with the objects, so it is bounded.
 * A bucket with more than ADMIN_COUNT_MAX objects, or any bucket after the
 * first ADMIN_COUNT_BUCKETS, is reported with "objects": null and
 * "count": "partial" / "not counted" (objects_at_least says what was
 * seen). Incomplete multipart uploads are not counted. Query ?count=0
 * skips counting.
 */
#include <stdlib.h>
#include <string.h>

#include "gateway/admin_api_int.h"

#define ADMIN_LIST_PAGE 1000
#define ADMIN_COUNT_MAX 10000          /* objects counted per bucket */
#define ADMIN_COUNT_BUCKETS 100        /* buckets counted per request */

struct bucket_count {
	uint64_t objects, bytes;
	int how;                           /* 0 not counted, 1 complete, 2 partial, 3 error */
};

struct buckets_state {
	Iolake__Meta__ListBucketsResponse *list;
	struct bucket_count *counts;
	size_t i;                          /* the bucket being counted */
	char *token;                       /* its next page */
	bool count;
};

static void buckets_free(void *p)
{
	struct buckets_state *s = p;
	if (s->list)
		admin_msg_free(&s->list->base);
	free(s->counts);
	free(s->token);
	free(s);
}

static void reply(struct admin_call *c, struct buckets_state *s)
{
	static const char *const how[] = { "not counted", "complete", "partial", "error" };
	struct jsonw w;
	jsonw_init(&w, 0);
	jsonw_obj_begin(&w);
	jsonw_key(&w, "buckets");
	jsonw_arr_begin(&w);
	for (size_t i = 0; i < s->list->n_buckets; i++) {
		const Iolake__Meta__Bucket *b = s->list->buckets[i];
		const struct bucket_count *n = &s->counts[i];
		jsonw_obj_begin(&w);
		jsonw_kstr(&w, "name", b->name);
		jsonw_kstr(&w, "owner", b->owner);
		jsonw_ku64(&w, "created_ms", b->created_ms);
		jsonw_kstr(&w, "region", b->region);
		admin_write_quota(&w, "quota", b->quota);
		jsonw_kstr(&w, "count", how[n->how]);
		if (n->how == 1) {
			jsonw_ku64(&w, "objects", n->objects);
			jsonw_ku64(&w, "bytes", n->bytes);
		} else {
			jsonw_key(&w, "objects");
			jsonw_null(&w);
			jsonw_key(&w, "bytes");
			jsonw_null(&w);
			jsonw_ku64(&w, "objects_at_least", n->objects);
			jsonw_ku64(&w, "bytes_at_least", n->bytes);
		}
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_ku64(&w, "count_limit_objects", ADMIN_COUNT_MAX);
	jsonw_ku64(&w, "count_limit_buckets", ADMIN_COUNT_BUCKETS);
	jsonw_obj_end(&w);
	admin_reply_json(c, 200, &w);
}

static void next_page(struct admin_call *c, struct buckets_state *s);

static void on_page(struct admin_call *c, void *ud, int err, const ProtobufCMessage *resp)
{
	(void)ud;
	struct buckets_state *s = admin_call_state(c);
	struct bucket_count *n = &s->counts[s->i];
	const Iolake__Meta__ListObjectsResponse *r = (const void *)resp;
	free(s->token);
	s->token = NULL;
	if (err || r->status != IOLAKE__META__STATUS__STATUS_OK) {
		/* gone since the listing, or meta failed: say so for this one */
		n->how = 3;
	} else {
		for (size_t j = 0; j < r->n_entries; j++) {
			if (r->entries[j]->is_prefix)
				continue;
			n->objects++;
			if (r->entries[j]->record)
				n->bytes += r->entries[j]->record->size;
		}
		if (r->truncated && n->objects >= ADMIN_COUNT_MAX) {
			n->how = 2;
		} else if (r->truncated && r->next_token && *r->next_token) {
			s->token = strdup(r->next_token);
			if (s->token) {
				next_page(c, s);
				return;
			}
			n->how = 3;
		} else {
			n->how = 1;
		}
	}
	s->i++;
	next_page(c, s);
}

static void next_page(struct admin_call *c, struct buckets_state *s)
{
	while (s->i < s->list->n_buckets &&
	       (!s->count || s->i >= ADMIN_COUNT_BUCKETS || s->counts[s->i].how == 1))
		s->i++;
	if (s->i >= s->list->n_buckets) {
		reply(c, s);
		return;
	}
	Iolake__Meta__ListObjectsRequest req = IOLAKE__META__LIST_OBJECTS_REQUEST__INIT;
	req.bucket = s->list->buckets[s->i]->name;
	req.token = s->token ? s->token : "";
	req.max_keys = ADMIN_LIST_PAGE;
	req.want_records = true;
	int rc = admin_meta_call(c, META_M_LIST_OBJECTS, &req.base, on_page, NULL);
	if (rc) {
		s->counts[s->i++].how = 3;
		next_page(c, s);
	}
}

static void on_list(struct admin_call *c, void *ud, int err, const ProtobufCMessage *resp)
{
	(void)ud;
	if (err) {
		admin_reply_meta_error(c, err);
		return;
	}
	struct buckets_state *s = calloc(1, sizeof(*s));
	if (s) {
		s->list = (Iolake__Meta__ListBucketsResponse *)admin_msg_copy(resp);
		s->counts = s->list ? calloc(s->list->n_buckets + 1, sizeof(*s->counts)) : NULL;
	}
	if (!s || !s->list || !s->counts) {
		if (s)
			buckets_free(s);
		admin_reply_error(c, 500, "InternalError", "out of memory");
		return;
	}
	size_t ql;
	const char *q = admin_call_query(c, &ql);
	s->count = !(ql == 7 && !memcmp(q, "count=0", 7));
	/* Buckets whose records the root counts come with their usage
	 * (meta/state_quota.c): no listing for them. */
	for (size_t i = 0; i < s->list->n_buckets; i++) {
		const Iolake__Meta__Usage *u = s->list->buckets[i]->usage;
		if (u)
			s->counts[i] = (struct bucket_count){ u->objects, u->bytes, 1 };
	}
	admin_call_set_state(c, s, buckets_free);
	next_page(c, s);
}

void admin_h_buckets(struct admin_call *c)
{
	Iolake__Meta__ListBucketsRequest req = IOLAKE__META__LIST_BUCKETS_REQUEST__INIT;
	int rc = admin_meta_call(c, META_M_LIST_BUCKETS, &req.base, on_list, NULL);
	if (rc)
		admin_reply_meta_error(c, rc);
}
