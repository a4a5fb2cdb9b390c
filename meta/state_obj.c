/*
 * state_obj.c — the object ops of the meta state machine: PutObject and
 * DeleteObject (with their conditions), object tags and object ACLs.
 *
 * Also the bucket digest (issue 19): what GetBucket answers beside the
 * record, and what a PutObject authorized on a gateway's cached copy of
 * the record is checked against (if_bucket_digest), in apply, in Raft
 * order: such a PUT commits only on exactly the record it was decided on.
 *
 * Not here: versions (state_ver.c decides what an overwrite or delete
 * does under versioning), multipart uploads (state_mpu.c), the GC queue
 * an op fills (state_gc.c), the dispatch (state.c apply_body).
 */
#include "meta/state.h"
#include "meta/secret.h"
#include "meta/state_internal.h"
#include "meta/state_ver.h"
#include "meta/wire.h"

#include <rocksdb/c.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/hash.h"
#include "common/place.h"

/* Current record for a conditional write. 0 (with *cur possibly NULL),
 * IOL_ECONFLICT or a storage error. */
int check_condition(struct tx *t, const struct key *k, bool if_none_match,
		    uint64_t if_generation, Iolake__Meta__ObjectRecord **cur)
{
	*cur = NULL;
	int rc = tx_get_msg(t, k, &iolake__meta__object_record__descriptor, (void **)cur);
	if (rc && rc != IOL_ENOT_FOUND)
		return rc;
	/* A delete marker is no object: If-None-Match: * writes over it. */
	if (if_none_match && *cur && !(*cur)->is_delete_marker)
		return IOL_ECONFLICT;
	if (if_generation && (!*cur || (*cur)->generation != if_generation))
		return IOL_ECONFLICT;
	return 0;
}

/* Bucket.lc_cursor: the lifecycle worker's progress, committed once a
 * batch (state_lc.c). Nothing a PUT is authorized or placed on, so it is
 * left out of the digest; were it in, every batch would fail the next PUT
 * of every gateway that caches the bucket (and make it re-read). */
#define BUCKET_LC_CURSOR_FIELD 56

uint64_t meta_state_bucket_digest(const void *stored, size_t len)
{
	const uint8_t *p = stored, *end = p + len, *cut = NULL, *cut_end = NULL;
	struct meta_wire_field f;
	int cursors = 0;
	while (p < end) {
		const uint8_t *at = p;
		if (!meta_wire_next(&p, end, &f)) {
			cursors = 0;   /* does not scan: the record as stored */
			break;
		}
		if (f.num == BUCKET_LC_CURSOR_FIELD) {
			cursors++;
			cut = at;
			cut_end = p;
		}
	}
	uint8_t d[SHA256_LEN];
	/* protobuf-c writes a field once; a record with two cursors (none
	 * meta wrote) is hashed whole: a digest that changes costs a re-read,
	 * one that does not would be wrong. */
	if (cursors == 1)
		hash_sha256_2(stored, (size_t)(cut - (const uint8_t *)stored), cut_end,
			      (size_t)(end - cut_end), d);
	else
		hash_sha256(stored, len, d);
	uint64_t v = get_be64((const char *)d);
	return v ? v : 1;   /* 0 means "no check" on the wire */
}

int meta_state_get_bucket_digest(struct meta_state *s, const char *name, uint64_t *digest)
{
	*digest = 0;
	if (!valid_bucket(name))
		return -EINVAL;
	struct key k;
	k_init(&k, 'B');
	k_str(&k, name);
	char *v;
	size_t n;
	int rc = db_get(s, &k, &v, &n);
	if (rc)
		return rc;
	*digest = meta_state_bucket_digest(v, n);
	rocksdb_free(v);
	return 0;
}

/* Whether a PUT decided on the cached record with digest `want` may
 * commit: the stored record is that one (through the batch: an earlier op
 * of this entry that changed it counts), and no quota applies, neither the
 * bucket's nor its owner's (the gateway checks quotas against fresh usage,
 * so it never caches a bucket one applies to; a quota set since is seen
 * here). 1 yes, 0 no, or a storage error. */
static int bucket_digest_holds(struct tx *t, const char *bucket, uint64_t want)
{
	struct apply_memo *m = &t->s->memo;
	if (m->digest_ok == want && !strcmp(m->digest_bucket, bucket))
		return 1;   /* held for an earlier PutObject (struct apply_memo) */
	struct key k;
	k_init(&k, 'B');
	k_str(&k, bucket);
	char *v;
	size_t n;
	int rc = tx_get(t, &k, &v, &n);
	if (rc == IOL_ENOT_FOUND)
		return 0;   /* gone, or held by range groups (not this state's) */
	if (rc)
		return rc;
	bool same = meta_state_bucket_digest(v, n) == want;
	Iolake__Meta__Bucket *b = same ? iolake__meta__bucket__unpack(NULL, n, (const uint8_t *)v)
				       : NULL;
	rocksdb_free(v);
	if (!same)
		return 0;
	if (!b)
		return IOL_ECORRUPT;
	int ok = !b->quota;
	if (ok && b->owner && b->owner[0] && strlen(b->owner) <= 64) {   /* as state_quota's */
		Iolake__Meta__User *u = NULL;
		struct key uk;
		k_init(&uk, 'u');
		k_str(&uk, b->owner);
		rc = tx_get_msg(t, &uk, &iolake__meta__user__descriptor, (void **)&u);
		if (rc && rc != IOL_ENOT_FOUND)
			ok = rc;
		else
			ok = !(u && u->quota);
		meta_state_free_msg(u);
	}
	meta_state_free_msg(b);
	if (ok == 1) {
		m->digest_ok = want;
		snprintf(m->digest_bucket, sizeof(m->digest_bucket), "%s", bucket);
	}
	return ok;
}

int op_put_object(struct tx *t, Iolake__Meta__PutObject *op, struct meta_op_result *r)
{
	Iolake__Meta__ObjectRecord *rec = op->record, *cur = NULL;
	if (!rec || !valid_bucket(rec->bucket) || !valid_key(rec->key) || !valid_acl(rec->acl))
		return -EINVAL;
	int rc = range_check(t, rec->bucket, rec->key);
	if (rc)
		return rc;
	if (op->if_bucket_digest) {
		rc = bucket_digest_holds(t, rec->bucket, op->if_bucket_digest);
		if (rc < 0)
			return rc;
		if (rc == 0) {
			r->bucket_changed = true;
			return IOL_ECONFLICT;
		}
	}
	struct key k;
	key_object(&k, rec->bucket, rec->key);
	rc = check_condition(t, &k, op->if_none_match, op->if_generation, &cur);
	uint64_t queued = t->gc_added;
	if (rc == 0)
		rc = meta_ver_put_current(t, &k, rec, cur, r);
	r->replaced_shards = rc == 0 && t->gc_added != queued;
	meta_state_free_msg(cur);
	return rc;
}

int op_delete_object(struct tx *t, const Iolake__Meta__DeleteObject *op,
			    struct meta_op_result *r)
{
	if (!valid_bucket(op->bucket) || !valid_key(op->key))
		return -EINVAL;
	if (t->range_id) {
		int rrc = range_check(t, op->bucket, op->key);
		if (rrc)
			return rrc;
	}
	Iolake__Meta__ObjectRecord *cur = NULL;
	struct key k;
	key_object(&k, op->bucket, op->key);
	int rc = check_condition(t, &k, false, op->if_generation, &cur);
	if (rc == 0 && meta_ver_delete_is_versioned(t, cur)) {
		rc = meta_ver_delete(t, op, cur, &k, r);
		meta_state_free_msg(cur);
		return rc;
	}
	if (rc == 0 && !cur)
		rc = IOL_ENOT_FOUND;
	if (rc == 0)
		rc = lock_check(t, cur);   /* object lock (state_lock.c) */
	if (rc == 0) {
		gc_record(t, cur);
		ref_record(t, cur, cur->generation, false);
		range_count(t, -1, -(int64_t)cur->size, 0);
		tx_del(t, &k);
	}
	meta_state_free_msg(cur);
	return rc;
}

/* ---- tagging (only tags change: same generation, nothing queued for GC) */

/* Tag sets as the gateway checks them (S3: 10 per object, 50 per bucket,
 * keys up to 128 and values up to 256 characters, i.e. at most 4x as many
 * UTF-8 bytes); apply re-checks the byte bounds so a record stays small. */
bool valid_tags(size_t n, const char *const *keys, const char *const *vals)
{
	if (n > META_TAGS_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		size_t kl = keys[i] ? strlen(keys[i]) : 0, vl = vals[i] ? strlen(vals[i]) : 0;
		if (kl == 0 || kl > META_TAG_KEY_MAX_BYTES || vl > META_TAG_VALUE_MAX_BYTES)
			return false;
		for (size_t j = 0; j < i; j++)
			if (strcmp(keys[i], keys[j]) == 0)
				return false;
	}
	return true;
}

int op_set_object_tags(struct tx *t, const Iolake__Meta__SetObjectTags *op)
{
	const char *keys[META_TAGS_MAX], *vals[META_TAGS_MAX];
	if (!valid_bucket(op->bucket) || !valid_key(op->key) || op->n_tags > META_TAGS_MAX)
		return -EINVAL;
	TAGS_SPLIT(op->n_tags, op->tags, keys, vals);
	if (!valid_tags(op->n_tags, keys, vals))
		return -EINVAL;
	if (t->range_id) {
		int rrc = range_check(t, op->bucket, op->key);
		if (rrc)
			return rrc;
	}
	Iolake__Meta__ObjectRecord *cur = NULL;
	struct key k;
	/* the current version, or the one Op.version_id names (issue 17) */
	int rc = meta_ver_target(t, op->bucket, op->key, op->if_generation, &cur, &k);
	if (rc)
		goto out;
	Iolake__Meta__ObjectRecord__TagsEntry ents[META_TAGS_MAX], *pents[META_TAGS_MAX];
	for (size_t i = 0; i < op->n_tags; i++) {
		iolake__meta__object_record__tags_entry__init(&ents[i]);
		ents[i].key = (char *)keys[i];
		ents[i].value = (char *)vals[i];
		pents[i] = &ents[i];
	}
	/* Swap the new tags in for the write, then back so the unpacked
	 * record frees only what it allocated. */
	size_t old_n = cur->n_tags;
	Iolake__Meta__ObjectRecord__TagsEntry **old = cur->tags;
	cur->n_tags = op->n_tags;
	cur->tags = op->n_tags ? pents : NULL;
	rc = tx_put_msg(t, &k, &cur->base);
	cur->n_tags = old_n;
	cur->tags = old;
out:
	meta_state_free_msg(cur);
	return rc;
}

int op_set_object_acl(struct tx *t, const Iolake__Meta__SetObjectAcl *op)
{
	if (!valid_bucket(op->bucket) || !valid_key(op->key) || !valid_acl(op->acl))
		return -EINVAL;
	if (t->range_id) {
		int rrc = range_check(t, op->bucket, op->key);
		if (rrc)
			return rrc;
	}
	Iolake__Meta__ObjectRecord *cur = NULL;
	struct key k;
	/* the current version, or the one Op.version_id names (issue 17) */
	int rc = meta_ver_target(t, op->bucket, op->key, op->if_generation, &cur, &k);
	if (rc == 0) {
		/* Swap the new ACL in for the write, then back (as tags). */
		Iolake__Meta__Acl *old = cur->acl;
		cur->acl = op->acl;
		rc = tx_put_msg(t, &k, &cur->base);
		cur->acl = old;
	}
	meta_state_free_msg(cur);
	return rc;
}
