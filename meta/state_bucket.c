/*
 * state_bucket.c — bucket ops of the meta state machine: CreateBucket,
 * DeleteBucket, the bucket's access (ACL, ownership, policy, public
 * access block), tags and CORS; the checks apply makes of each.
 *
 * Not here: versioning's bucket state (state_ver.c), key ranges of a
 * bucket (state_range.c).
 */
#include "meta/state.h"
#include "meta/secret.h"
#include "meta/state_internal.h"
#include "meta/state_ver.h"

#include <rocksdb/c.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/hash.h"
#include "common/place.h"

/* --------------------------------------------------------- operations */

/* An ACL as apply accepts it: at most META_ACL_GRANTS_MAX grants, each a
 * known permission and either a group or a 32-byte user id; a canned
 * name is known. (What S3 allows where is the gateway's.) */
bool valid_acl(const Iolake__Meta__Acl *a)
{
	if (!a)
		return true;
	if ((unsigned)a->canned > IOLAKE__META__CANNED_ACL__CANNED_LOG_DELIVERY_WRITE ||
	    a->n_grants > META_ACL_GRANTS_MAX)
		return false;
	for (size_t i = 0; i < a->n_grants; i++) {
		const Iolake__Meta__AclGrant *g = a->grants[i];
		if (g->permission < IOLAKE__META__ACL_PERMISSION__ACL_PERM_READ ||
		    g->permission > IOLAKE__META__ACL_PERMISSION__ACL_PERM_FULL_CONTROL ||
		    (unsigned)g->group > IOLAKE__META__ACL_GROUP__ACL_GROUP_LOG_DELIVERY ||
		    (g->group == IOLAKE__META__ACL_GROUP__ACL_GROUP_NONE) != (g->user_id.len == 32) ||
		    (g->group != IOLAKE__META__ACL_GROUP__ACL_GROUP_NONE && g->user_id.len))
			return false;
	}
	return true;
}

static bool valid_ownership(Iolake__Meta__ObjectOwnership o)
{
	return (unsigned)o <= IOLAKE__META__OBJECT_OWNERSHIP__OWNERSHIP_OBJECT_WRITER;
}

/* A bucket policy as apply accepts it: its size only (the gateway parsed
 * and validated the document with its policy engine before proposing). */
static bool valid_policy(const char *p)
{
	return !p || strlen(p) <= META_POLICY_MAX;
}

int op_create_bucket(struct tx *t, const Iolake__Meta__CreateBucket *op)
{
	if (!op->bucket || !valid_bucket(op->bucket->name) || !valid_name(op->bucket->owner) ||
	    !valid_acl(op->bucket->acl) || !valid_ownership(op->bucket->object_ownership) ||
	    !valid_policy(op->bucket->policy) ||
	    !lock_valid_config(op->bucket->object_lock, op->bucket->versioning))
		return -EINVAL;
	struct key k;
	k_init(&k, 'B');
	k_str(&k, op->bucket->name);
	if (tx_exists(t, &k))
		return IOL_EEXISTS;
	Iolake__Meta__Bucket b = *op->bucket;
	b.generation = t->gen;
	int rc = tx_put_msg(t, &k, &b.base);
	return rc ? rc : create_bucket_range(t, b.name);
}

int op_delete_bucket(struct tx *t, const Iolake__Meta__DeleteBucket *op)
{
	if (!valid_bucket(op->name))
		return -EINVAL;
	struct key k, o;
	k_init(&k, 'B');
	k_str(&k, op->name);
	if (!tx_exists(t, &k))
		return IOL_ENOT_FOUND;
	if (bucket_moving(t, op->name))
		return IOL_ECONFLICT;   /* records in flight between groups */
	/* Objects or unfinished uploads keep a bucket. */
	for (const char *tab = "OU"; *tab; tab++) {
		k_init(&o, *tab);
		k_str(&o, op->name);
		k_byte(&o, 0);
		if (prefix_nonempty(t, &o))
			return META_ENOTEMPTY;
	}
	tx_del(t, &k);
	t->s->memo.bucket_ok[0] = 0;
	delete_bucket_ranges(t, op->name);
	return 0;
}

bool bucket_exists(struct tx *t, const char *bucket)
{
	if (t->s->memo.bucket_ok[0] && !strcmp(t->s->memo.bucket_ok, bucket))
		return true;
	struct key k;
	k_init(&k, 'B');
	k_str(&k, bucket);
	if (!tx_exists(t, &k))
		return false;
	snprintf(t->s->memo.bucket_ok, sizeof(t->s->memo.bucket_ok), "%s", bucket);
	return true;
}

/* Whether b, packed, unpacks again: an op's messages may carry unknown
 * fields protobuf-c accepted on the way in but not on the way out (an
 * overlong tag naming field 0), and a bucket record that no longer
 * unpacks would stop every later op on the bucket (the apply fuzzer,
 * fuzz_meta_apply, found this with SetBucketLifecycle). */
static bool packs_back(const Iolake__Meta__Bucket *b)
{
	size_t n = protobuf_c_message_get_packed_size(&b->base);
	uint8_t *buf = malloc(n ? n : 1);
	if (!buf)
		return false;
	protobuf_c_message_pack(&b->base, buf);
	Iolake__Meta__Bucket *back = iolake__meta__bucket__unpack(NULL, n, buf);
	free(buf);
	if (!back)
		return false;
	iolake__meta__bucket__free_unpacked(back, NULL);
	return true;
}

int bucket_config_update(struct tx *t, const char *name, bucket_edit_fn edit, const void *op)
{
	Iolake__Meta__Bucket *b = NULL;
	struct key k;
	k_init(&k, 'B');
	k_str(&k, name);
	int rc = tx_get_msg(t, &k, &iolake__meta__bucket__descriptor, (void **)&b);
	if (rc)
		return rc;
	/* edit may point b's fields at the op's memory: put the record back
	 * as read before freeing it (b owns only what it read). */
	Iolake__Meta__Bucket as_read = *b;
	rc = edit(t, b, op);
	if (!rc)
		rc = packs_back(b) ? tx_put_msg(t, &k, &b->base) : -EINVAL;
	*b = as_read;
	meta_state_free_msg(b);
	return rc;
}

static int edit_access(struct tx *t, Iolake__Meta__Bucket *b, const void *arg)
{
	const Iolake__Meta__SetBucketAccess *op = arg;
	if (op->conditional && b->generation != op->if_generation)
		return IOL_ECONFLICT;
	if (op->set_acl)
		b->acl = op->acl;
	if (op->set_ownership)
		b->object_ownership = op->object_ownership;
	if (op->set_policy)
		b->policy = op->policy ? op->policy : (char *)"";
	if (op->set_public_access_block)
		b->public_access_block = op->public_access_block;
	b->generation = t->gen;
	return 0;
}

int op_set_bucket_access(struct tx *t, const Iolake__Meta__SetBucketAccess *op)
{
	if (!valid_bucket(op->name) || !valid_acl(op->acl) ||
	    !valid_ownership(op->object_ownership) || !valid_policy(op->policy))
		return -EINVAL;
	return bucket_config_update(t, op->name, edit_access, op);
}

struct tag_set {
	size_t n;
	Iolake__Meta__Bucket__TagsEntry **tags;
};

static int edit_tags(struct tx *t, Iolake__Meta__Bucket *b, const void *arg)
{
	(void)t;
	const struct tag_set *ts = arg;
	b->n_tags = ts->n;
	b->tags = ts->tags;
	return 0;
}

int op_set_bucket_tags(struct tx *t, const Iolake__Meta__SetBucketTags *op)
{
	const char *keys[META_TAGS_MAX], *vals[META_TAGS_MAX];
	if (!valid_bucket(op->name) || op->n_tags > META_TAGS_MAX)
		return -EINVAL;
	TAGS_SPLIT(op->n_tags, op->tags, keys, vals);
	if (!valid_tags(op->n_tags, keys, vals))
		return -EINVAL;
	Iolake__Meta__Bucket__TagsEntry ents[META_TAGS_MAX], *pents[META_TAGS_MAX];
	for (size_t i = 0; i < op->n_tags; i++) {
		iolake__meta__bucket__tags_entry__init(&ents[i]);
		ents[i].key = (char *)keys[i];
		ents[i].value = (char *)vals[i];
		pents[i] = &ents[i];
	}
	struct tag_set ts = { .n = op->n_tags, .tags = op->n_tags ? pents : NULL };
	return bucket_config_update(t, op->name, edit_tags, &ts);
}

/* A CORS configuration as apply accepts it: its shape only (the gateway
 * validated the rules' values before proposing). */
static bool valid_cors(const Iolake__Meta__CorsConfig *c)
{
	if (!c)
		return true;
	if (c->n_rules > META_CORS_RULES_MAX)
		return false;
	for (size_t i = 0; i < c->n_rules; i++) {
		const Iolake__Meta__CorsRule *r = c->rules[i];
		if (!r || r->n_allowed_origins == 0 || r->n_allowed_methods == 0)
			return false;
	}
	return true;
}

static int edit_cors(struct tx *t, Iolake__Meta__Bucket *b, const void *arg)
{
	(void)t;
	const Iolake__Meta__SetBucketCors *op = arg;
	b->cors = op->cors && op->cors->n_rules ? op->cors : NULL;
	return 0;
}

int op_set_bucket_cors(struct tx *t, const Iolake__Meta__SetBucketCors *op)
{
	if (!valid_bucket(op->name) || !valid_cors(op->cors))
		return -EINVAL;
	return bucket_config_update(t, op->name, edit_cors, op);
}
