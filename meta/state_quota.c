/*
 * state_quota.c — quotas in the state machine (issue 20; meta.proto Quota,
 * Usage, SetQuota; docs/architecture.md "Quotas"): the SetQuota op, the
 * root's per-bucket usage rows kept by apply, and the usage a root
 * member's bucket reads carry for the gateway's check.
 *
 *   'N' bucket   ->  Usage   objects and bytes of a bucket whose records
 *                            live in the root (range id 0), moved by
 *                            every range_count of a root op
 *
 * A bucket with key ranges counts in its range groups' open-range rows
 * instead ('r', state_range.c); the root has no usage row for it, so its
 * reads carry no usage and its quota is not enforced (not built: the
 * gateway would have to add up every group's counters).
 *
 * Not here: enforcement (gateway/s3_quota.c: a write is checked against
 * the usage read with the bucket record for that request), the admin
 * API's endpoints (gateway/admin_api_quota.c).
 *
 * Within an entry the usage row of the last bucket counted is moved in
 * the apply's memo (struct tx usage_*) and written once, by quota_flush.
 *
 * Thread: apply (op_set_quota, quota_count, quota_flush, quota_forget) and any reader
 * (meta_state_quota_fill).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "meta/state_internal.h"
#include "meta/state_quota.h"

static void key_usage(struct key *k, const char *bucket)
{
	k_init(k, 'N');
	k_str(k, bucket);
}

/* The usage row of bucket; zeros when absent. */
static int tx_usage(struct tx *t, const struct key *k, uint64_t *objects, uint64_t *bytes)
{
	char *v;
	size_t n;
	*objects = *bytes = 0;
	int rc = tx_get(t, k, &v, &n);
	if (rc == IOL_ENOT_FOUND)
		return 0;
	if (rc)
		return rc;
	if (n == 16) {
		*objects = get_be64(v);
		*bytes = get_be64(v + 8);
	}
	rocksdb_free(v);
	return 0;
}

/* Counts saturate at 0: a bucket made before usage rows existed starts
 * at nothing, and its older records' deletes must not wrap it. */
static uint64_t add_sat(uint64_t v, int64_t d)
{
	if (d < 0 && (uint64_t)(-d) > v)
		return 0;
	return v + (uint64_t)d;
}

static void usage_put(struct tx *t, const struct key *k, uint64_t objects, uint64_t bytes)
{
	char v[16];
	put_be64(v, objects);
	put_be64(v + 8, bytes);
	rocksdb_writebatch_wi_put(t->wb, k->b, k->n, v, sizeof(v));
}

void quota_flush(struct tx *t)
{
	if (!t->usage_dirty)
		return;
	struct key k;
	key_usage(&k, t->usage_bucket);
	usage_put(t, &k, t->usage_objects, t->usage_bytes);
	t->usage_dirty = false;
}

void quota_count(struct tx *t, const char *bucket, int64_t objects, int64_t bytes)
{
	if ((!objects && !bytes) || !bucket || !bucket[0])
		return;
	struct key k;
	uint64_t o, b;
	if (strlen(bucket) > BUCKET_MAX) {
		/* Not a bucket apply made (valid_bucket): no memo, as before. */
		key_usage(&k, bucket);
		if (tx_usage(t, &k, &o, &b)) {
			t->io_err = -EIO;
			return;
		}
		usage_put(t, &k, add_sat(o, objects), add_sat(b, bytes));
		return;
	}
	if (strcmp(t->usage_bucket, bucket)) {
		quota_flush(t);
		t->usage_bucket[0] = 0;
		key_usage(&k, bucket);
		if (tx_usage(t, &k, &o, &b)) {
			t->io_err = -EIO;
			return;
		}
		memcpy(t->usage_bucket, bucket, strlen(bucket) + 1);
		t->usage_objects = o;
		t->usage_bytes = b;
	}
	t->usage_objects = add_sat(t->usage_objects, objects);
	t->usage_bytes = add_sat(t->usage_bytes, bytes);
	t->usage_dirty = true;
}

const char *quota_op_bucket(const Iolake__Meta__Op *op)
{
	switch (op->body_case) {
	case IOLAKE__META__OP__BODY_PUT_OBJECT:
		return op->put_object->record ? op->put_object->record->bucket : NULL;
	case IOLAKE__META__OP__BODY_DELETE_OBJECT: return op->delete_object->bucket;
	case IOLAKE__META__OP__BODY_COMPLETE_MULTIPART: return op->complete_multipart->bucket;
	default: return NULL;
	}
}

void quota_forget(struct tx *t, const char *bucket)
{
	if (!strcmp(t->usage_bucket, bucket)) {
		t->usage_bucket[0] = 0;   /* its moves die with the row */
		t->usage_dirty = false;
	}
	struct key k;
	key_usage(&k, bucket);
	tx_del(t, &k);
}

static bool valid_user_name(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	return n >= 1 && n <= 64 && !strchr(s, '/');
}

int op_set_quota(struct tx *t, const Iolake__Meta__SetQuota *op)
{
	struct key k;
	const ProtobufCMessageDescriptor *d;
	if (!op->name)
		return -EINVAL;
	if (op->user) {
		if (!valid_user_name(op->name))
			return -EINVAL;
		k_init(&k, 'u');
		d = &iolake__meta__user__descriptor;
	} else {
		if (!valid_bucket(op->name))
			return -EINVAL;
		k_init(&k, 'B');
		d = &iolake__meta__bucket__descriptor;
	}
	k_str(&k, op->name);
	ProtobufCMessage *m = NULL;
	int rc = tx_get_msg(t, &k, d, (void **)&m);
	if (rc)
		return rc;
	Iolake__Meta__Quota q = IOLAKE__META__QUOTA__INIT;
	if (op->quota) {
		q.max_bytes = op->quota->max_bytes;
		q.max_objects = op->quota->max_objects;
	}
	Iolake__Meta__Quota **slot = op->user ? &((Iolake__Meta__User *)m)->quota
					      : &((Iolake__Meta__Bucket *)m)->quota;
	Iolake__Meta__Quota *old = *slot;
	/* A quota of no limit at all is stored as none. */
	*slot = op->quota && (q.max_bytes || q.max_objects) ? &q : NULL;
	rc = tx_put_msg(t, &k, m);
	*slot = old;
	meta_state_free_msg(m);
	return rc;
}

/* ---- reads */

static int db_usage(struct meta_state *s, const char *bucket, uint64_t *objects, uint64_t *bytes,
		    bool *row)
{
	struct key k;
	char *v;
	size_t n;
	bool dummy;
	row = row ? row : &dummy;
	*objects = *bytes = 0;
	*row = false;
	key_usage(&k, bucket);
	int rc = db_get(s, &k, &v, &n);
	if (rc == IOL_ENOT_FOUND)
		return 0;
	if (rc)
		return rc;
	*row = true;
	if (n == 16) {
		*objects = get_be64(v);
		*bytes = get_be64(v + 8);
	}
	rocksdb_free(v);
	return 0;
}

static Iolake__Meta__Usage *new_usage(uint64_t objects, uint64_t bytes)
{
	Iolake__Meta__Usage *u = malloc(sizeof(*u));
	if (u) {
		iolake__meta__usage__init(u);
		u->objects = objects;
		u->bytes = bytes;
	}
	return u;
}

static Iolake__Meta__Quota *copy_quota(const Iolake__Meta__Quota *q)
{
	Iolake__Meta__Quota *c = malloc(sizeof(*c));
	if (c) {
		iolake__meta__quota__init(c);
		c->max_bytes = q->max_bytes;
		c->max_objects = q->max_objects;
	}
	return c;
}

/* Whether the root's range table has rows for bucket (its records then
 * live in range groups, which count them). */
static bool db_has_ranges(struct meta_state *s, const char *bucket)
{
	struct key p;
	k_init(&p, 'Q');
	k_str(&p, bucket);
	k_byte(&p, 0);
	rocksdb_iterator_t *it = rocksdb_create_iterator(s->db, s->ro);
	rocksdb_iter_seek(it, p.b, p.n);
	bool has = false;
	if (rocksdb_iter_valid(it)) {
		size_t kn;
		const char *kb = rocksdb_iter_key(it, &kn);
		has = kn >= p.n && memcmp(kb, p.b, p.n) == 0;
	}
	rocksdb_iter_destroy(it);
	return has;
}

int meta_state_bucket_usage(struct meta_state *s, const char *bucket, uint64_t *objects,
			    uint64_t *bytes)
{
	if (!valid_bucket(bucket))
		return -EINVAL;
	return db_usage(s, bucket, objects, bytes, NULL);
}

int meta_state_owner_usage(struct meta_state *s, const char *owner, uint64_t *objects,
			   uint64_t *bytes)
{
	Iolake__Meta__Bucket **v = NULL;
	size_t n = 0;
	*objects = *bytes = 0;
	int rc = meta_state_list_buckets(s, owner, &v, &n);
	for (size_t i = 0; i < n; i++) {
		uint64_t o, b;
		if (!rc)
			rc = db_usage(s, v[i]->name, &o, &b, NULL);
		if (!rc) {
			*objects += o;
			*bytes += b;
		}
		meta_state_free_msg(v[i]);
	}
	free(v);
	return rc;
}

int meta_state_usage_fill(struct meta_state *s, Iolake__Meta__Bucket *b)
{
	/* What a client sent or an old record holds is replaced. */
	meta_state_free_msg(b->usage);
	meta_state_free_msg(b->owner_quota);
	meta_state_free_msg(b->owner_usage);
	b->usage = b->owner_usage = NULL;
	b->owner_quota = NULL;
	uint64_t o, by;
	bool row;
	int rc = db_usage(s, b->name, &o, &by, &row);
	if (rc)
		return rc;
	/* A row exists only for a bucket the root counts; without one, an
	 * empty bucket (or one made before usage rows) unless the range
	 * table has rows for it (the iterator only then: the common path is
	 * one point read). */
	if (!row && db_has_ranges(s, b->name))
		return 0;
	return (b->usage = new_usage(o, by)) ? 0 : -ENOMEM;
}

int meta_state_quota_fill(struct meta_state *s, Iolake__Meta__Bucket *b)
{
	uint64_t o, by;
	int rc = meta_state_usage_fill(s, b);
	if (rc)
		return rc;
	struct key k;
	Iolake__Meta__User *u = NULL;
	if (!valid_user_name(b->owner))
		return 0;
	k_init(&k, 'u');
	k_str(&k, b->owner);
	rc = read_msg(s, &k, &iolake__meta__user__descriptor, (void **)&u);
	if (rc == IOL_ENOT_FOUND)
		return 0;
	if (rc)
		return rc;
	if (u->quota) {
		rc = meta_state_owner_usage(s, b->owner, &o, &by);
		if (!rc && (!(b->owner_quota = copy_quota(u->quota)) ||
			    !(b->owner_usage = new_usage(o, by))))
			rc = -ENOMEM;
	}
	meta_state_free_msg(u);
	return rc;
}
