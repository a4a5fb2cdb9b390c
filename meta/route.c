/*
 * route.c — routing of object and multipart calls by key range (contracts
 * in route.h; the table and the listing walk are meta/range.c).
 *
 * Owns a direct-mapped cache of ROUTE_SLOTS buckets' range tables and the
 * routed calls in flight. A table is read from the root's leader
 * (GetRanges, linearizable) on a miss and dropped on WRONG_RANGE or a
 * group no member hosts, so a PUT costs no extra round trip once its
 * bucket is cached. Writes are fenced by the range group's apply, so a
 * stale table is never unsafe, only retried.
 *
 * Not here: leaders, redirects, retries on unreachable members and
 * exactly-once request ids (client.c, under every inner call).
 *
 * Size: ~1,300 lines, over the house's ~1,000, because the five routed
 * kinds (single calls, submits, the two listing walks, DeleteBucket's
 * seals, CheckShards' fan-out) share the routed-call struct and its
 * refuse / re-read / open steps. The planned split: the listing walks
 * into route_list.c behind a small internal header with struct rcall.
 */
#include "meta/route.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/hash.h"
#include "common/log.h"
#include "common/loop.h"
#include "common/pb_block.h"
#include "meta/list.h"
#include "meta/range.h"

#define ROUTE_SLOTS 256
#define ROUTE_TRIES 6            /* table re-reads per routed call */
#define ROUTE_TTL_MS 60000       /* a cached table is re-read after this */
#define BUCKET_TTL_MS 1000       /* a bucket record served beside a HeadObject */
#define WRONG_RANGE IOLAKE__META__STATUS__STATUS_WRONG_RANGE
#define MOVE_WAIT_MAX_MS 30000   /* a call waits out a range's move this long */
#define HEAD_RETRY 1             /* head_err: refused, retry (errors are < 0) */

/* A bucket record read from the root for a HeadObject routed to a range
 * group (the gateway authorizes on both): kept BUCKET_TTL_MS, and dropped
 * whole whenever this client submits an op to the root (its own bucket
 * changes are seen at once; another client's within the TTL). */
struct bucket_slot {
	char name[64];
	ProtobufCMessage *resp;        /* GetBucketResponse, OK */
	uint64_t at_ms;
};

struct rcall;

struct meta_route {
	struct meta_client *c;
	struct rcall *waiting;         /* calls waiting out a range's move */
	struct meta_range_table slot[ROUTE_SLOTS];
	bool valid[ROUTE_SLOTS];
	struct bucket_slot bkt[ROUTE_SLOTS];
};

enum kind { K_CALL, K_SUBMIT, K_LIST, K_UPLOADS, K_DELETE_BUCKET, K_CHECK };

struct rcall {
	struct meta_route *r;
	enum kind kind;
	unsigned method;
	ProtobufCMessage *req;         /* owned copy (submits: the Op) */
	bool req_block;                /* req is a pb_block_copy (submits, plain calls) */
	meta_client_cb cb;
	meta_client_submit_cb scb;
	void *ud;
	char bucket[64];
	const char *key;               /* in req */
	int tries;
	/* A range of the table is moving (sealed while its records are
	 * copied): the call waits and re-reads, not counting tries. */
	uv_timer_t *wait;
	uint64_t waited_ms, wait_ms;
	struct rcall *wait_next;
	uint64_t open_id;              /* refused range: open it if the table still says so */
	bool no_bucket;                /* GetRanges: no such bucket (the root answers) */
	/* HeadObject with_bucket in a range group: the root's bucket record */
	int waiting;
	ProtobufCMessage *head_copy, *bucket_copy;
	int head_err, bucket_err;
	/* listings: the table as it was when the walk (re)started, so that
	 * another bucket taking the cache slot cannot change it mid-page */
	struct meta_range_table tab;
	bool tab_ok, reseek;
	bool walking;                  /* the walk began (list_start passed) */
	struct meta_range_walk walk;
	size_t ri;                     /* range asked now */
	ProtobufCMessage **pages;
	size_t n_pages, cap_pages;
	char upload_id_marker[17];     /* uploads: the marker's upload id ("": none) */
	/* DeleteBucket */
	struct meta_range_table del;
	size_t sealed;
	Iolake__Meta__Status del_status;
	int del_err;
	/* CheckShards over every group: referenced by any of them */
	protobuf_c_boolean *refd;
	size_t n_refd;
	int check_err;
};

/* ------------------------------------------------------------ cache */

static size_t slot_of(const char *bucket)
{
	return hash_fnv1a_str(bucket) % ROUTE_SLOTS;
}

static const struct meta_range_table *table_get(struct meta_route *r, const char *bucket)
{
	size_t i = slot_of(bucket);
	if (!r->valid[i] || strcmp(r->slot[i].bucket, bucket) ||
	    loop_now_ms() - r->slot[i].fetched_ms > ROUTE_TTL_MS)
		return NULL;
	return &r->slot[i];
}

static void table_drop(struct meta_route *r, const char *bucket)
{
	size_t i = slot_of(bucket);
	if (r->valid[i] && !strcmp(r->slot[i].bucket, bucket)) {
		meta_range_table_clear(&r->slot[i]);
		r->valid[i] = false;
	}
}

int meta_route_new(struct meta_client *c, struct meta_route **out)
{
	struct meta_route *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->c = c;
	*out = r;
	return 0;
}

void meta_route_root_changed(struct meta_route *r)
{
	for (size_t i = 0; i < ROUTE_SLOTS; i++) {
		if (r->bkt[i].resp)
			protobuf_c_message_free_unpacked(r->bkt[i].resp, NULL);
		r->bkt[i].resp = NULL;
	}
}

static void finish_err(struct rcall *k, int err);
static void wait_closed(uv_handle_t *h);

void meta_route_free(struct meta_route *r)
{
	if (!r)
		return;
	while (r->waiting) {
		struct rcall *k = r->waiting;
		r->waiting = k->wait_next;
		uv_timer_stop(k->wait);
		uv_close((uv_handle_t *)k->wait, wait_closed);
		k->wait = NULL;
		finish_err(k, IOL_ESHUTDOWN);
	}
	meta_route_root_changed(r);
	for (size_t i = 0; i < ROUTE_SLOTS; i++)
		meta_range_table_clear(&r->slot[i]);
	free(r);
}

/* ------------------------------------------------------------ what is routed */

/* The bucket and key an op names; false when it is not an object op. */
static bool op_target(const Iolake__Meta__Op *op, const char **bucket, const char **key)
{
	switch (op->body_case) {
	case IOLAKE__META__OP__BODY_PUT_OBJECT:
		if (!op->put_object->record)
			return false;
		*bucket = op->put_object->record->bucket;
		*key = op->put_object->record->key;
		return true;
	case IOLAKE__META__OP__BODY_DELETE_OBJECT:
		*bucket = op->delete_object->bucket;
		*key = op->delete_object->key;
		return true;
	case IOLAKE__META__OP__BODY_CREATE_MULTIPART:
		if (!op->create_multipart->upload)
			return false;
		*bucket = op->create_multipart->upload->bucket;
		*key = op->create_multipart->upload->key;
		return true;
	case IOLAKE__META__OP__BODY_PUT_PART:
		*bucket = op->put_part->bucket;
		*key = op->put_part->key;
		return true;
	case IOLAKE__META__OP__BODY_COMPLETE_MULTIPART:
		*bucket = op->complete_multipart->bucket;
		*key = op->complete_multipart->key;
		return true;
	case IOLAKE__META__OP__BODY_ABORT_MULTIPART:
		*bucket = op->abort_multipart->bucket;
		*key = op->abort_multipart->key;
		return true;
	case IOLAKE__META__OP__BODY_PUT_OBJECT_TAGS:
		*bucket = op->put_object_tags->bucket;
		*key = op->put_object_tags->key;
		return true;
	case IOLAKE__META__OP__BODY_SET_OBJECT_ACL:
		*bucket = op->set_object_acl->bucket;
		*key = op->set_object_acl->key;
		return true;
	case IOLAKE__META__OP__BODY_SET_OBJECT_RETENTION:   /* object lock (issue 17) */
		*bucket = op->set_object_retention->bucket;
		*key = op->set_object_retention->key;
		return true;
	case IOLAKE__META__OP__BODY_SET_OBJECT_LEGAL_HOLD:
		*bucket = op->set_object_legal_hold->bucket;
		*key = op->set_object_legal_hold->key;
		return true;
	case IOLAKE__META__OP__BODY_FREE_PART_ROWS:   /* issue 18: part rows */
		*bucket = op->free_part_rows->bucket;
		*key = op->free_part_rows->key;
		return true;
	default:
		return false;
	}
}

bool meta_route_wants_op(const Iolake__Meta__Op *op)
{
	const char *b, *k;
	if (op->range_id)
		return false;
	if (op->body_case == IOLAKE__META__OP__BODY_DELETE_BUCKET)
		return op->delete_bucket->name && op->delete_bucket->name[0];
	return op_target(op, &b, &k) && b && k;
}

/* A uint64 field by number (0 when absent). */
static uint64_t *u64_field(const ProtobufCMessage *m, unsigned num)
{
	const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(m->descriptor, num);
	if (!f || f->type != PROTOBUF_C_TYPE_UINT64 || f->label == PROTOBUF_C_LABEL_REPEATED)
		return NULL;
	return (uint64_t *)((char *)m + f->offset);
}

static const char *str_field(const ProtobufCMessage *m, unsigned num)
{
	const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(m->descriptor, num);
	if (!f || f->type != PROTOBUF_C_TYPE_STRING)
		return NULL;
	return *(char *const *)((const char *)m + f->offset);
}

bool meta_route_wants_call(unsigned method, const ProtobufCMessage *req)
{
	switch (method) {
	case META_M_HEAD_OBJECT:
	case META_M_GET_UPLOAD:
	case META_M_LIST_PARTS:
	case META_M_LIST_OBJECTS:
	case META_M_LIST_UPLOADS:
	case META_M_GET_VERSION:     /* issue 17: routed as HeadObject, */
	case META_M_LIST_VERSIONS:   /* by its key field (2) */
	case META_M_GET_PART_ROWS:   /* issue 18: by its key field (2) */
		break;
	case META_M_CHECK_SHARDS: {
		const uint64_t *g = u64_field(req, 100);
		return g && !*g;
	}
	default:
		return false;
	}
	const uint64_t *g = u64_field(req, 100), *rid = u64_field(req, 33);
	const char *b = str_field(req, 1);
	return g && rid && !*g && !*rid && b && b[0];
}

/* ------------------------------------------------------------ finishing */

static void rc_free(struct rcall *k)
{
	if (k->req_block)
		pb_block_free(k->req);
	else if (k->req)
		protobuf_c_message_free_unpacked(k->req, NULL);
	if (k->head_copy)
		protobuf_c_message_free_unpacked(k->head_copy, NULL);
	if (k->bucket_copy)
		protobuf_c_message_free_unpacked(k->bucket_copy, NULL);
	for (size_t i = 0; i < k->n_pages; i++)
		protobuf_c_message_free_unpacked(k->pages[i], NULL);
	free(k->pages);
	meta_range_table_clear(&k->del);
	meta_range_table_clear(&k->tab);
	free(k->refd);
	free(k);
}

static void finish_call(struct rcall *k, int err, const ProtobufCMessage *resp)
{
	k->cb(k->ud, err, err ? NULL : resp);
	rc_free(k);
}

static void finish_submit(struct rcall *k, int err, const Iolake__Meta__OpResult *res,
			  uint64_t index)
{
	k->scb(k->ud, err, err ? NULL : res, err ? 0 : index);
	rc_free(k);
}

static void finish_status(struct rcall *k, Iolake__Meta__Status st)
{
	Iolake__Meta__OpResult res = IOLAKE__META__OP_RESULT__INIT;
	res.status = st;
	finish_submit(k, 0, &res, 0);
}

static void finish_err(struct rcall *k, int err)
{
	if (k->scb)
		finish_submit(k, err, NULL, 0);
	else
		finish_call(k, err, NULL);
}

/* ------------------------------------------------------------ steps */

static void step(struct rcall *k);
static void fetch(struct rcall *k);

/* The call was refused for its range (or its group is hosted nowhere):
 * read the table again and retry, or give up with what we have. */
static bool refused(struct rcall *k, uint64_t range_id)
{
	if (++k->tries >= ROUTE_TRIES)
		return false;
	table_drop(k->r, k->bucket);
	k->open_id = range_id;
	k->reseek = true;
	fetch(k);
	return true;
}

static void wait_closed(uv_handle_t *h)
{
	free(h);
}

static void on_waited(uv_timer_t *t)
{
	struct rcall *k = t->data;
	struct rcall **pp = &k->r->waiting;
	while (*pp && *pp != k)
		pp = &(*pp)->wait_next;
	if (*pp)
		*pp = k->wait_next;
	uv_close((uv_handle_t *)t, wait_closed);
	k->wait = NULL;
	fetch(k);
}

/* The call was refused and the fresh table shows a range moving: wait
 * (2, 4, ... 64 ms) and read the table again, up to MOVE_WAIT_MAX_MS in
 * all. true when waiting. */
static bool wait_move(struct rcall *k, const struct meta_range_table *t)
{
	bool moving = false;
	for (size_t i = 0; t && i < t->n; i++)
		moving = moving || t->v[i].moving;
	if (!moving || !k->open_id || k->waited_ms >= MOVE_WAIT_MAX_MS)
		return false;
	uv_timer_t *tm = malloc(sizeof(*tm));
	if (!tm || uv_timer_init(meta_client_loop(k->r->c), tm)) {
		free(tm);
		return false;
	}
	k->wait_ms = k->wait_ms ? (k->wait_ms * 2 > 64 ? 64 : k->wait_ms * 2) : 2;
	k->waited_ms += k->wait_ms;
	if (k->tries > 0)
		k->tries--;   /* a move is not a stale table */
	tm->data = k;
	k->wait = tm;
	k->wait_next = k->r->waiting;
	k->r->waiting = k;
	uv_timer_start(tm, on_waited, k->wait_ms, 0);
	return true;
}

static void on_fetched(void *ud, int err, const ProtobufCMessage *resp)
{
	struct rcall *k = ud;
	struct meta_route *r = k->r;
	const Iolake__Meta__GetRangesResponse *g = (const void *)resp;
	k->no_bucket = false;
	if (err == -EOPNOTSUPP) {
		g = NULL;   /* a member older than ranges: the root holds everything */
	} else if (err) {
		finish_err(k, err);
		return;
	} else if (g->status == IOLAKE__META__STATUS__STATUS_NOT_FOUND ||
		   g->status == IOLAKE__META__STATUS__STATUS_INVALID) {
		k->no_bucket = true;   /* the root answers it (NoSuchBucket) */
		step(k);
		return;
	}
	size_t i = slot_of(k->bucket);
	meta_range_table_clear(&r->slot[i]);
	r->valid[i] = false;
	int rc = meta_range_table_set(&r->slot[i], k->bucket, g ? g->ranges : NULL,
				      g ? g->n_ranges : 0);
	if (rc) {
		LOG_WARN("range table unusable", "bucket=%s err=%s", k->bucket, iol_strerror(rc));
		finish_err(k, rc == -ENOMEM ? -ENOMEM : -EIO);
		return;
	}
	r->slot[i].fetched_ms = loop_now_ms();
	r->valid[i] = true;
	if (wait_move(k, &r->slot[i]))
		return;
	step(k);
}

static void fetch(struct rcall *k)
{
	Iolake__Meta__GetRangesRequest q = IOLAKE__META__GET_RANGES_REQUEST__INIT;
	q.bucket = k->bucket;
	int rc = meta_client_call_direct(k->r->c, META_M_GET_RANGES, &q.base, on_fetched, k);
	if (rc)
		finish_err(k, rc);
}

/* The range the call goes to: NULL for the root (no ranges, no bucket). */
static const struct meta_range_ent *route_of(struct rcall *k, const char *key)
{
	const struct meta_range_table *t = table_get(k->r, k->bucket);
	if (k->no_bucket || !t || t->n == 0)
		return NULL;
	return &t->v[meta_range_find(t, key)];
}

/* ---- opening a range its group has not opened yet */

static void on_opened(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)res;
	(void)index;
	struct rcall *k = ud;
	if (err) {
		finish_err(k, err);
		return;
	}
	step(k);
}

/* When the table still names the range just refused, its group may not
 * have opened it (a bucket just made, a split just done): open it (a
 * no-op on a range open or sealed there). true when an open was sent. */
static bool open_if_needed(struct rcall *k, const struct meta_range_ent *e)
{
	if (!e || !k->open_id || e->id != k->open_id)
		return false;
	k->open_id = 0;
	Iolake__Meta__RangeDesc d = IOLAKE__META__RANGE_DESC__INIT;
	d.id = e->id;
	d.bucket = k->bucket;
	d.start = e->start;
	d.end = e->end;
	d.group = e->group;
	Iolake__Meta__OpenRange o = IOLAKE__META__OPEN_RANGE__INIT;
	o.range = &d;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_OPEN_RANGE;
	op.open_range = &o;
	int rc = meta_client_submit_group(k->r->c, e->group, &op, on_opened, k);
	if (rc)
		finish_err(k, rc);
	return true;
}

/* ---- single calls and submits */

static void on_submitted(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	struct rcall *k = ud;
	Iolake__Meta__Op *op = (Iolake__Meta__Op *)k->req;
	if (!err && res->status == WRONG_RANGE && refused(k, op->range_id))
		return;
	if (err == IOL_ENOT_FOUND && op->range_id && refused(k, op->range_id))
		return;
	finish_submit(k, err, res, index);
}

static void send_submit(struct rcall *k)
{
	Iolake__Meta__Op *op = (Iolake__Meta__Op *)k->req;
	const struct meta_range_ent *e = route_of(k, k->key);
	if (open_if_needed(k, e))
		return;
	op->range_id = e ? e->id : 0;
	/* k keeps op until on_submitted has run and finished it: the client
	 * borrows it rather than copying it again. */
	int rc = meta_client_submit_group_ref(k->r->c, e ? e->group : 0, op, on_submitted, k);
	if (rc)
		finish_err(k, rc);
}

static int resp_status(const ProtobufCMessage *m)
{
	const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(m->descriptor, 1);
	if (!f || f->type != PROTOBUF_C_TYPE_ENUM)
		return 0;
	return *(const int *)((const char *)m + f->offset);
}

static void head_merge(struct rcall *k)
{
	if (k->head_err || k->bucket_err) {
		finish_call(k, k->head_err ? k->head_err : k->bucket_err, NULL);
		return;
	}
	Iolake__Meta__HeadObjectResponse out = *(Iolake__Meta__HeadObjectResponse *)k->head_copy;
	const Iolake__Meta__GetBucketResponse *b = (const void *)k->bucket_copy;
	out.bucket = b->status == IOLAKE__META__STATUS__STATUS_OK ? b->bucket : NULL;
	if (!out.bucket)
		out.record = NULL;   /* no bucket: no object either */
	finish_call(k, 0, &out.base);
}

static void on_head_bucket(void *ud, int err, const ProtobufCMessage *resp)
{
	struct rcall *k = ud;
	k->bucket_err = err;
	if (!err && !(k->bucket_copy = meta_client_copy_msg(resp)))
		k->bucket_err = -ENOMEM;
	if (!k->bucket_err &&
	    ((const Iolake__Meta__GetBucketResponse *)resp)->status == IOLAKE__META__STATUS__STATUS_OK) {
		struct bucket_slot *b = &k->r->bkt[slot_of(k->bucket)];
		if (b->resp)
			protobuf_c_message_free_unpacked(b->resp, NULL);
		b->resp = meta_client_copy_msg(resp);
		b->at_ms = loop_now_ms();
		snprintf(b->name, sizeof(b->name), "%s", k->bucket);
	}
	if (--k->waiting == 0)
		head_merge(k);
}

static void on_called(void *ud, int err, const ProtobufCMessage *resp)
{
	struct rcall *k = ud;
	uint64_t rid = *u64_field(k->req, 33);
	bool wrong = (!err && resp_status(resp) == WRONG_RANGE) ||
		     (err == IOL_ENOT_FOUND && rid);
	if (k->waiting) {
		/* HeadObject beside the root's GetBucket: wait for both. */
		if (wrong && k->tries + 1 < ROUTE_TRIES) {
			k->head_err = HEAD_RETRY;
		} else {
			k->head_err = err;
			if (!err && !(k->head_copy = meta_client_copy_msg(resp)))
				k->head_err = -ENOMEM;
		}
		if (--k->waiting)
			return;
		if (k->head_err == HEAD_RETRY) {
			k->head_err = 0;
			if (k->bucket_copy)
				protobuf_c_message_free_unpacked(k->bucket_copy, NULL);
			k->bucket_copy = NULL;
			k->bucket_err = 0;
			if (refused(k, rid))
				return;
		}
		head_merge(k);
		return;
	}
	if (wrong && refused(k, rid))
		return;
	finish_call(k, err, resp);
}

static void send_call(struct rcall *k)
{
	const struct meta_range_ent *e = route_of(k, k->key);
	if (open_if_needed(k, e))
		return;
	*u64_field(k->req, 33) = e ? e->id : 0;
	*u64_field(k->req, 100) = e ? e->group : 0;
	bool with_bucket = false;
	if (k->method == META_M_HEAD_OBJECT && e) {
		Iolake__Meta__HeadObjectRequest *h = (void *)k->req;
		with_bucket = h->with_bucket;
		h->with_bucket = false;   /* the bucket lives in the root */
	}
	struct bucket_slot *bs = &k->r->bkt[slot_of(k->bucket)];
	if (with_bucket && bs->resp && !strcmp(bs->name, k->bucket) &&
	    loop_now_ms() - bs->at_ms < BUCKET_TTL_MS) {
		k->bucket_copy = meta_client_copy_msg(bs->resp);
		if (!k->bucket_copy) {
			finish_err(k, -ENOMEM);
			return;
		}
		k->waiting = 1;   /* only the HeadObject */
	} else if (with_bucket) {
		k->waiting = 2;
		Iolake__Meta__GetBucketRequest q = IOLAKE__META__GET_BUCKET_REQUEST__INIT;
		q.name = k->bucket;
		int rc = meta_client_call_direct(k->r->c, META_M_GET_BUCKET, &q.base,
						 on_head_bucket, k);
		if (rc) {
			finish_err(k, rc);
			return;
		}
	}
	int rc = meta_client_call_direct(k->r->c, k->method, k->req, on_called, k);
	if (with_bucket)
		((Iolake__Meta__HeadObjectRequest *)k->req)->with_bucket = true;
	if (rc) {
		if (with_bucket) {
			/* the GetBucket is on its way: let it find the error */
			k->head_err = rc;
			if (--k->waiting == 0)
				head_merge(k);
			return;
		}
		finish_err(k, rc);
	}
}

/* ---- listings: ranges in order, one page */

static int keep_page(struct rcall *k, const ProtobufCMessage *resp)
{
	if (k->n_pages == k->cap_pages) {
		size_t cap = k->cap_pages ? 2 * k->cap_pages : 4;
		ProtobufCMessage **v = realloc(k->pages, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		k->pages = v;
		k->cap_pages = cap;
	}
	ProtobufCMessage *c = meta_client_copy_msg(resp);
	if (!c)
		return -ENOMEM;
	k->pages[k->n_pages++] = c;
	return 0;
}

static bool more_ranges(struct rcall *k, const char *prefix)
{
	const struct meta_range_table *t = k->tab_ok ? &k->tab : NULL;
	return t && k->ri + 1 < t->n && meta_range_may_hold_prefix(t, k->ri + 1, prefix);
}

static void list_deliver(struct rcall *k)
{
	Iolake__Meta__ListObjectsResponse out = IOLAKE__META__LIST_OBJECTS_RESPONSE__INIT;
	size_t n = 0;
	for (size_t p = 0; p < k->n_pages; p++)
		n += ((Iolake__Meta__ListObjectsResponse *)k->pages[p])->n_entries;
	Iolake__Meta__ListEntry **v = calloc(n + 1, sizeof(*v));
	char tok[META_LIST_TOKEN_MAX];
	if (!v) {
		finish_call(k, -ENOMEM, NULL);
		return;
	}
	for (size_t p = 0; p < k->n_pages; p++) {
		Iolake__Meta__ListObjectsResponse *pg = (void *)k->pages[p];
		for (size_t i = 0; i < pg->n_entries; i++)
			v[out.n_entries++] = pg->entries[i];
	}
	out.entries = v;
	out.truncated = k->walk.truncated && out.n_entries > 0;
	tok[0] = 0;
	if (out.truncated)
		meta_list_token_encode(k->walk.marker, k->walk.marker_len, tok);
	out.next_token = tok;
	k->cb(k->ud, 0, &out.base);
	free(v);
	rc_free(k);
}

/* A listing page from the range at k->ri: true when it was kept (in
 * k->pages); false when the call went on otherwise (a stale range re-read
 * and retried, an error or no memory answered). */
static bool take_page(struct rcall *k, int err, int status, const ProtobufCMessage *resp)
{
	const struct meta_range_table *t = k->tab_ok ? &k->tab : NULL;
	uint64_t rid = t && k->ri < t->n ? t->v[k->ri].id : 0;
	if (((!err && status == WRONG_RANGE) || (err == IOL_ENOT_FOUND && rid)) &&
	    refused(k, rid))
		return false;
	if (err || status != IOLAKE__META__STATUS__STATUS_OK) {
		finish_call(k, err, resp);
		return false;
	}
	if (keep_page(k, resp)) {
		finish_call(k, -ENOMEM, NULL);
		return false;
	}
	return true;
}

static void list_send(struct rcall *k);

static void on_list_page(void *ud, int err, const ProtobufCMessage *resp)
{
	struct rcall *k = ud;
	Iolake__Meta__ListObjectsRequest *q = (void *)k->req;
	const Iolake__Meta__ListObjectsResponse *pg = (const void *)resp;
	if (!take_page(k, err, err ? 0 : pg->status, resp))
		return;
	/* Keep only what the walk takes (a prefix listed by the range
	 * before is dropped). */
	Iolake__Meta__ListObjectsResponse *mine = (void *)k->pages[k->n_pages - 1];
	size_t n = mine->n_entries;
	const char **names = calloc(n + 1, sizeof(*names));
	size_t *lens = calloc(n + 1, sizeof(*lens));
	bool *take = calloc(n + 1, sizeof(*take));
	if (!names || !lens || !take) {
		free(names);
		free(lens);
		free(take);
		finish_call(k, -ENOMEM, NULL);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		names[i] = mine->entries[i]->name;
		lens[i] = strlen(names[i]);
	}
	meta_range_walk_take(&k->walk, names, lens, n, pg->truncated, more_ranges(k, q->prefix),
			     take);
	size_t w = 0;
	for (size_t i = 0; i < n; i++) {
		if (take[i])
			mine->entries[w++] = mine->entries[i];
		else
			protobuf_c_message_free_unpacked(&mine->entries[i]->base, NULL);
	}
	mine->n_entries = w;
	free(names);
	free(lens);
	free(take);
	if (k->walk.done) {
		list_deliver(k);
		return;
	}
	k->ri++;
	list_send(k);
}

static void list_send(struct rcall *k)
{
	Iolake__Meta__ListObjectsRequest *q = (void *)k->req;
	const struct meta_range_table *t = k->tab_ok ? &k->tab : NULL;
	if (k->no_bucket || !t || t->n == 0) {
		/* The root lists it (or says NoSuchBucket): as before. */
		int rc = meta_client_call_direct(k->r->c, k->method, k->req, on_called, k);
		if (rc)
			finish_err(k, rc);
		return;
	}
	if (k->reseek || k->ri >= t->n) {
		/* after a refusal, restart from the range holding the marker */
		const char *from = strcmp(k->walk.marker, q->prefix) > 0 ? k->walk.marker : q->prefix;
		k->ri = meta_range_find(t, from);
		k->reseek = false;
		if (open_if_needed(k, &t->v[k->ri]))
			return;
		k->open_id = 0;
	}
	const struct meta_range_ent *e = &t->v[k->ri];
	Iolake__Meta__ListObjectsRequest s = *q;
	s.start_after = k->walk.marker;
	s.token = "";
	s.max_keys = k->walk.max - (unsigned)k->walk.n;
	s.range_id = e->id;
	s.group = e->group;
	int rc = meta_client_call_direct(k->r->c, META_M_LIST_OBJECTS, &s.base, on_list_page, k);
	if (rc)
		finish_err(k, rc);
}

static void list_start(struct rcall *k)
{
	Iolake__Meta__ListObjectsRequest *q = (void *)k->req;
	const struct meta_range_table *t = k->tab_ok ? &k->tab : NULL;
	char marker[META_KEY_MAX + 1];
	if (k->no_bucket || !t || t->n == 0 || q->max_keys == 0) {
		k->ri = 0;
		if (!k->no_bucket && t && t->n) {
			/* an empty page of a bucket with ranges: any range answers it */
			q->range_id = t->v[0].id;
			q->group = t->v[0].group;
		}
		int rc = meta_client_call_direct(k->r->c, k->method, k->req, on_called, k);
		if (rc)
			finish_err(k, rc);
		return;
	}
	if (q->token[0]) {
		if (meta_list_token_decode(q->token, marker, sizeof(marker)) < 0) {
			/* the first range answers INVALID, as the root would */
			q->range_id = t->v[0].id;
			q->group = t->v[0].group;
			int rc = meta_client_call_direct(k->r->c, k->method, k->req, on_called, k);
			if (rc)
				finish_err(k, rc);
			return;
		}
	} else {
		snprintf(marker, sizeof(marker), "%s", q->start_after);
	}
	unsigned max = q->max_keys > META_LIST_MAX_KEYS ? META_LIST_MAX_KEYS : q->max_keys;
	meta_range_walk_init(&k->walk, max, marker);
	const char *from = strcmp(marker, q->prefix) > 0 ? marker : q->prefix;
	k->ri = meta_range_find(t, from);
	k->walking = true;
	k->reseek = false;
	list_send(k);
}

/* ---- ListMultipartUploads: the same walk; an entry is a common prefix
 * or "key 0x00 upload id", so uploads of one key stay apart. */

static void uploads_deliver(struct rcall *k)
{
	Iolake__Meta__ListUploadsResponse out = IOLAKE__META__LIST_UPLOADS_RESPONSE__INIT;
	size_t nu = 0, nc = 0;
	for (size_t p = 0; p < k->n_pages; p++) {
		Iolake__Meta__ListUploadsResponse *pg = (void *)k->pages[p];
		nu += pg->n_uploads;
		nc += pg->n_common_prefixes;
	}
	Iolake__Meta__MultipartUpload **u = calloc(nu + 1, sizeof(*u));
	char **c = calloc(nc + 1, sizeof(*c));
	if (!u || !c) {
		free(u);
		free(c);
		finish_call(k, -ENOMEM, NULL);
		return;
	}
	for (size_t p = 0; p < k->n_pages; p++) {
		Iolake__Meta__ListUploadsResponse *pg = (void *)k->pages[p];
		for (size_t i = 0; i < pg->n_uploads; i++)
			u[out.n_uploads++] = pg->uploads[i];
		for (size_t i = 0; i < pg->n_common_prefixes; i++)
			c[out.n_common_prefixes++] = pg->common_prefixes[i];
	}
	out.uploads = u;
	out.common_prefixes = c;
	out.truncated = k->walk.truncated && (out.n_uploads || out.n_common_prefixes);
	char km[META_KEY_MAX + 1] = "", um[17] = "";
	if (out.truncated) {
		/* the last entry: "key 0x00 id" or a common prefix */
		const char *z = memchr(k->walk.marker, 0, k->walk.marker_len);
		size_t kl = z ? (size_t)(z - k->walk.marker) : k->walk.marker_len;
		memcpy(km, k->walk.marker, kl);
		km[kl] = 0;
		if (z)
			snprintf(um, sizeof(um), "%.*s", (int)(k->walk.marker_len - kl - 1), z + 1);
	}
	out.next_key_marker = km;
	out.next_upload_id_marker = um;
	k->cb(k->ud, 0, &out.base);
	free(u);
	free(c);
	rc_free(k);
}

static void uploads_send(struct rcall *k);

static int upload_name(const Iolake__Meta__MultipartUpload *u, char *buf, size_t cap)
{
	size_t kl = strlen(u->key), il = strlen(u->upload_id);
	if (kl + 1 + il > cap)
		return -1;
	memcpy(buf, u->key, kl);
	buf[kl] = 0;
	memcpy(buf + kl + 1, u->upload_id, il);
	return (int)(kl + 1 + il);
}

static void on_uploads_page(void *ud, int err, const ProtobufCMessage *resp)
{
	struct rcall *k = ud;
	Iolake__Meta__ListUploadsRequest *q = (void *)k->req;
	const Iolake__Meta__ListUploadsResponse *pg = (const void *)resp;
	if (!take_page(k, err, err ? 0 : pg->status, resp))
		return;
	Iolake__Meta__ListUploadsResponse *mine = (void *)k->pages[k->n_pages - 1];
	/* Merge the page's two ordered lists back into listing order. */
	size_t n = mine->n_uploads + mine->n_common_prefixes, iu = 0, ic = 0;
	char (*bufs)[META_KEY_MAX + 18] = calloc(n + 1, sizeof(*bufs));
	const char **names = calloc(n + 1, sizeof(*names));
	size_t *lens = calloc(n + 1, sizeof(*lens));
	bool *take = calloc(n + 1, sizeof(*take)), *is_up = calloc(n + 1, sizeof(*is_up));
	if (!bufs || !names || !lens || !take || !is_up)
		goto oom;
	for (size_t i = 0; i < n; i++) {
		int ul = iu < mine->n_uploads ? upload_name(mine->uploads[iu], bufs[i], sizeof(bufs[i]))
					      : -1;
		const char *cp = ic < mine->n_common_prefixes ? mine->common_prefixes[ic] : NULL;
		bool up = ul >= 0 && (!cp || memcmp(bufs[i], cp, strlen(cp) + 1) < 0);
		if (up) {
			names[i] = bufs[i];
			lens[i] = (size_t)ul;
			iu++;
		} else {
			names[i] = cp;
			lens[i] = strlen(cp);
			ic++;
		}
		is_up[i] = up;
	}
	meta_range_walk_take(&k->walk, names, lens, n, pg->truncated, more_ranges(k, q->prefix),
			     take);
	size_t wu = 0, wc = 0;
	iu = ic = 0;
	for (size_t i = 0; i < n; i++) {
		if (is_up[i]) {
			if (take[i])
				mine->uploads[wu++] = mine->uploads[iu];
			else
				protobuf_c_message_free_unpacked(&mine->uploads[iu]->base, NULL);
			iu++;
		} else {
			if (take[i])
				mine->common_prefixes[wc++] = mine->common_prefixes[ic];
			else
				free(mine->common_prefixes[ic]);
			ic++;
		}
	}
	mine->n_uploads = wu;
	mine->n_common_prefixes = wc;
	free(bufs);
	free(names);
	free(lens);
	free(take);
	free(is_up);
	if (k->walk.done) {
		uploads_deliver(k);
		return;
	}
	k->ri++;
	uploads_send(k);
	return;
oom:
	free(bufs);
	free(names);
	free(lens);
	free(take);
	free(is_up);
	finish_call(k, -ENOMEM, NULL);
}

static void uploads_send(struct rcall *k)
{
	Iolake__Meta__ListUploadsRequest *q = (void *)k->req;
	const struct meta_range_table *t = k->tab_ok ? &k->tab : NULL;
	if (k->no_bucket || !t || t->n == 0) {
		int rc = meta_client_call_direct(k->r->c, k->method, k->req, on_called, k);
		if (rc)
			finish_err(k, rc);
		return;
	}
	char km[META_KEY_MAX + 1];
	const char *z = memchr(k->walk.marker, 0, k->walk.marker_len);
	size_t kl = z ? (size_t)(z - k->walk.marker) : k->walk.marker_len;
	memcpy(km, k->walk.marker, kl);
	km[kl] = 0;
	if (k->reseek || k->ri >= t->n) {
		const char *from = strcmp(km, q->prefix) > 0 ? km : q->prefix;
		k->ri = meta_range_find(t, from);
		k->reseek = false;
		if (open_if_needed(k, &t->v[k->ri]))
			return;
		k->open_id = 0;
	}
	char um[17] = "";
	if (z)
		snprintf(um, sizeof(um), "%.*s", (int)(k->walk.marker_len - kl - 1), z + 1);
	else if (k->walk.n == 0)
		snprintf(um, sizeof(um), "%s", k->upload_id_marker);
	const struct meta_range_ent *e = &t->v[k->ri];
	Iolake__Meta__ListUploadsRequest s = *q;
	s.key_marker = km;
	s.upload_id_marker = um;
	s.max_uploads = k->walk.max - (unsigned)k->walk.n;
	s.range_id = e->id;
	s.group = e->group;
	int rc = meta_client_call_direct(k->r->c, META_M_LIST_UPLOADS, &s.base, on_uploads_page, k);
	if (rc)
		finish_err(k, rc);
}

static void uploads_start(struct rcall *k)
{
	Iolake__Meta__ListUploadsRequest *q = (void *)k->req;
	const struct meta_range_table *t = k->tab_ok ? &k->tab : NULL;
	unsigned max = q->max_uploads == 0 || q->max_uploads > META_LIST_MAX_KEYS
			       ? META_LIST_MAX_KEYS
			       : q->max_uploads;
	if (k->no_bucket || !t || t->n == 0) {
		uploads_send(k);
		return;
	}
	/* The marker as a walk entry: "key" (after every upload of it) or
	 * "key 0x00 id". */
	char m[META_KEY_MAX + 18];
	size_t kl = strnlen(q->key_marker, META_KEY_MAX), il = strnlen(q->upload_id_marker, 16);
	memcpy(m, q->key_marker, kl);
	m[kl] = 0;
	meta_range_walk_init(&k->walk, max, m);
	snprintf(k->upload_id_marker, sizeof(k->upload_id_marker), "%s", kl ? q->upload_id_marker : "");
	if (kl && il) {
		memcpy(k->walk.marker + kl + 1, q->upload_id_marker, il);
		k->walk.marker[kl + 1 + il] = 0;
		k->walk.marker_len = kl + 1 + il;
	}
	const char *from = strcmp(m, q->prefix) > 0 ? m : q->prefix;
	k->ri = meta_range_find(t, from);
	k->walking = true;
	k->reseek = false;
	uploads_send(k);
}

/* ---- DeleteBucket: seal every range, then the root deletes */

static void unseal_next(struct rcall *k);

static void on_unsealed(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)res;
	(void)index;
	struct rcall *k = ud;
	if (err)
		LOG_WARN("unseal failed: the bucket's range stays sealed until DeleteBucket is retried",
			 "bucket=%s err=%s", k->bucket, iol_strerror(err));
	unseal_next(k);
}

static Iolake__Meta__Op seal_op(struct rcall *k, size_t i, bool unseal,
				Iolake__Meta__SealRange *s, Iolake__Meta__RangeDesc *d)
{
	const struct meta_range_ent *e = &k->del.v[i];
	iolake__meta__range_desc__init(d);
	d->id = e->id;
	d->bucket = k->bucket;
	d->start = e->start;
	d->end = e->end;
	d->group = e->group;
	iolake__meta__seal_range__init(s);
	s->range = d;
	s->unseal = unseal;
	Iolake__Meta__Op op = IOLAKE__META__OP__INIT;
	op.body_case = IOLAKE__META__OP__BODY_SEAL_RANGE;
	op.seal_range = s;
	return op;
}

static void unseal_next(struct rcall *k)
{
	if (k->sealed == 0) {
		if (k->del_err)
			finish_err(k, k->del_err);
		else
			finish_status(k, k->del_status);
		return;
	}
	size_t i = --k->sealed;
	Iolake__Meta__SealRange s;
	Iolake__Meta__RangeDesc d;
	Iolake__Meta__Op op = seal_op(k, i, true, &s, &d);
	if (meta_client_submit_group(k->r->c, k->del.v[i].group, &op, on_unsealed, k))
		unseal_next(k);
}

static void on_root_deleted(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	struct rcall *k = ud;
	table_drop(k->r, k->bucket);
	meta_route_root_changed(k->r);
	if (!err && res->status != IOLAKE__META__STATUS__STATUS_OK &&
	    res->status != IOLAKE__META__STATUS__STATUS_NOT_FOUND) {
		k->del_status = res->status;
		unseal_next(k);
		return;
	}
	finish_submit(k, err, res, index);
}

static void seal_next(struct rcall *k);

static void on_sealed(void *ud, int err, const Iolake__Meta__OpResult *res, uint64_t index)
{
	(void)index;
	struct rcall *k = ud;
	if (err || res->status != IOLAKE__META__STATUS__STATUS_OK) {
		k->del_err = err;
		k->del_status = err ? IOLAKE__META__STATUS__STATUS_INTERNAL : res->status;
		unseal_next(k);
		return;
	}
	k->sealed++;
	seal_next(k);
}

static void seal_next(struct rcall *k)
{
	int rc;
	if (k->sealed == k->del.n) {
		rc = meta_client_submit_group(k->r->c, 0, (Iolake__Meta__Op *)k->req, on_root_deleted, k);
	} else {
		Iolake__Meta__SealRange s;
		Iolake__Meta__RangeDesc d;
		Iolake__Meta__Op op = seal_op(k, k->sealed, false, &s, &d);
		rc = meta_client_submit_group(k->r->c, k->del.v[k->sealed].group, &op, on_sealed, k);
	}
	if (rc) {
		k->del_err = rc;
		unseal_next(k);
	}
}

static void delete_start(struct rcall *k)
{
	const struct meta_range_table *t = table_get(k->r, k->bucket);
	if (k->no_bucket || !t || t->n == 0) {
		int rc = meta_client_submit_group(k->r->c, 0, (Iolake__Meta__Op *)k->req,
						  on_root_deleted, k);
		if (rc)
			finish_err(k, rc);
		return;
	}
	/* A copy: the cache may change while the seals go. */
	Iolake__Meta__RangeDesc *ds = calloc(t->n, sizeof(*ds)), **dp = calloc(t->n, sizeof(*dp));
	int rc = ds && dp ? 0 : -ENOMEM;
	for (size_t i = 0; !rc && i < t->n; i++) {
		iolake__meta__range_desc__init(&ds[i]);
		ds[i].id = t->v[i].id;
		ds[i].group = t->v[i].group;
		ds[i].bucket = k->bucket;
		ds[i].start = t->v[i].start;
		ds[i].end = t->v[i].end;
		dp[i] = &ds[i];
	}
	if (!rc)
		rc = meta_range_table_set(&k->del, k->bucket, dp, t->n);
	free(ds);
	free(dp);
	if (rc) {
		finish_err(k, rc);
		return;
	}
	k->sealed = 0;
	seal_next(k);
}

/* ---- CheckShards: a shard is unreferenced only when no group names it.
 * The groups come from the root's table, read for every call (a group
 * made since a cached read could hold the only reference); any group that
 * does not answer makes the whole answer an error, which the orphan
 * sweep treats as "referenced" (it deletes nothing). */

static void on_checked_one(void *ud, int err, const ProtobufCMessage *resp)
{
	struct rcall *k = ud;
	const Iolake__Meta__CheckShardsResponse *r = (const void *)resp;
	if (!err && (r->status != IOLAKE__META__STATUS__STATUS_OK || r->n_referenced != k->n_refd))
		err = -EPROTO;
	if (err && !k->check_err)
		k->check_err = err;
	for (size_t i = 0; !err && i < k->n_refd; i++)
		k->refd[i] = k->refd[i] || r->referenced[i];
	if (--k->waiting)
		return;
	if (k->check_err) {
		finish_call(k, k->check_err, NULL);
		return;
	}
	Iolake__Meta__CheckShardsResponse out = IOLAKE__META__CHECK_SHARDS_RESPONSE__INIT;
	out.referenced = k->refd;
	out.n_referenced = k->n_refd;
	finish_call(k, 0, &out.base);
}

static void on_check_groups(void *ud, int err, const ProtobufCMessage *resp)
{
	struct rcall *k = ud;
	const Iolake__Meta__GetRangesResponse *g = (const void *)resp;
	if (err && err != -EOPNOTSUPP) {
		finish_call(k, err, NULL);
		return;
	}
	Iolake__Meta__CheckShardsRequest *q = (void *)k->req;
	size_t n = 1 + (err ? 0 : g->n_groups);
	k->n_refd = q->n_object_ids;
	k->refd = calloc(k->n_refd + 1, sizeof(*k->refd));
	if (!k->refd) {
		finish_call(k, -ENOMEM, NULL);
		return;
	}
	/* While records move between groups (meta/range_move.h) a shard's
	 * reference moves from one group's index to another's; answers read
	 * at different moments could miss it in both. Every shard is then
	 * "referenced": the orphan sweep deletes nothing until the move is
	 * over. */
	for (size_t i = 0; !err && i < g->n_ranges; i++)
		if (g->ranges[i]->move_phase != IOLAKE__META__RANGE_MOVE_PHASE__MOVE_NONE) {
			for (size_t j = 0; j < k->n_refd; j++)
				k->refd[j] = true;
			Iolake__Meta__CheckShardsResponse out = IOLAKE__META__CHECK_SHARDS_RESPONSE__INIT;
			out.referenced = k->refd;
			out.n_referenced = k->n_refd;
			finish_call(k, 0, &out.base);
			return;
		}
	/* Every call is started before any answer can run (answers come on
	 * a later loop turn), so waiting counts them all. */
	k->waiting = (int)n;
	for (size_t i = 0; i < n; i++) {
		q->group = i == 0 ? 0 : g->groups[i - 1];
		int rc = meta_client_call_direct(k->r->c, META_M_CHECK_SHARDS, &q->base,
						 on_checked_one, k);
		if (rc) {
			if (!k->check_err)
				k->check_err = rc;
			if (--k->waiting == 0) {
				finish_call(k, k->check_err, NULL);
				return;
			}
		}
	}
}

static void check_start(struct rcall *k)
{
	Iolake__Meta__GetRangesRequest q = IOLAKE__META__GET_RANGES_REQUEST__INIT;
	q.bucket = "";
	int rc = meta_client_call_direct(k->r->c, META_M_GET_RANGES, &q.base, on_check_groups, k);
	if (rc)
		finish_err(k, rc);
}

/* ------------------------------------------------------------ entry */

/* A private copy of the bucket's cached table for a listing walk. */
static int snapshot_table(struct rcall *k)
{
	const struct meta_range_table *t = table_get(k->r, k->bucket);
	k->tab_ok = false;
	meta_range_table_clear(&k->tab);
	if (!t)
		return 0;   /* no bucket: the root answers */
	Iolake__Meta__RangeDesc *ds = calloc(t->n + 1, sizeof(*ds)), **dp = calloc(t->n + 1, sizeof(*dp));
	int rc = ds && dp ? 0 : -ENOMEM;
	for (size_t i = 0; !rc && i < t->n; i++) {
		iolake__meta__range_desc__init(&ds[i]);
		ds[i].id = t->v[i].id;
		ds[i].group = t->v[i].group;
		ds[i].bucket = k->bucket;
		ds[i].start = t->v[i].start;
		ds[i].end = t->v[i].end;
		dp[i] = &ds[i];
	}
	if (!rc)
		rc = meta_range_table_set(&k->tab, k->bucket, dp, t->n);
	free(ds);
	free(dp);
	k->tab_ok = rc == 0;
	return rc;
}

static void step(struct rcall *k)
{
	if ((k->kind == K_LIST || k->kind == K_UPLOADS) && snapshot_table(k)) {
		finish_err(k, -ENOMEM);
		return;
	}
	switch (k->kind) {
	case K_SUBMIT: send_submit(k); break;
	case K_CALL: send_call(k); break;
	case K_LIST:
		if (k->walking)
			list_send(k);
		else
			list_start(k);
		break;
	case K_UPLOADS:
		if (k->walking)
			uploads_send(k);
		else
			uploads_start(k);
		break;
	case K_DELETE_BUCKET: delete_start(k); break;
	case K_CHECK: check_start(k); break;
	}
}

static void start(struct rcall *k)
{
	if (k->kind == K_CHECK) {
		check_start(k);
		return;
	}
	if (k->kind == K_DELETE_BUCKET)
		table_drop(k->r, k->bucket);   /* seal what the root says now */
	if (table_get(k->r, k->bucket))
		step(k);
	else
		fetch(k);
}

int meta_route_call(struct meta_route *r, unsigned method, const ProtobufCMessage *req,
		    meta_client_cb cb, void *ud)
{
	struct rcall *k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->r = r;
	k->method = method;
	k->cb = cb;
	k->ud = ud;
	k->kind = method == META_M_LIST_OBJECTS ? K_LIST
		  : method == META_M_LIST_UPLOADS ? K_UPLOADS
		  : method == META_M_CHECK_SHARDS ? K_CHECK
						  : K_CALL;
	/* A plain call's request only has its scalars set (the range's id
	 * and group, with_bucket): one block (pb_block.h). The listings'
	 * requests have their strings replaced page by page: a free copy. */
	k->req_block = k->kind == K_CALL;
	k->req = k->req_block ? pb_block_copy(req) : meta_client_copy_msg(req);
	if (!k->req) {
		free(k);
		return -ENOMEM;
	}
	const char *b = k->kind == K_CHECK ? "" : str_field(k->req, 1);
	snprintf(k->bucket, sizeof(k->bucket), "%s", b ? b : "");
	k->key = k->kind == K_CALL ? str_field(k->req, 2) : "";
	if (!k->key)
		k->key = "";
	start(k);
	return 0;
}

int meta_route_submit(struct meta_route *r, const Iolake__Meta__Op *op,
		      meta_client_submit_cb cb, void *ud)
{
	struct rcall *k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->r = r;
	k->method = META_M_SUBMIT;
	k->scb = cb;
	k->ud = ud;
	k->req = pb_block_copy(&op->base);
	k->req_block = true;
	if (!k->req) {
		free(k);
		return -ENOMEM;
	}
	Iolake__Meta__Op *mine = (Iolake__Meta__Op *)k->req;
	const char *b = NULL, *key = NULL;
	if (mine->body_case == IOLAKE__META__OP__BODY_DELETE_BUCKET) {
		k->kind = K_DELETE_BUCKET;
		b = mine->delete_bucket->name;
	} else {
		k->kind = K_SUBMIT;
		op_target(mine, &b, &key);
	}
	snprintf(k->bucket, sizeof(k->bucket), "%s", b ? b : "");
	k->key = key ? key : "";
	start(k);
	return 0;
}
