/*
 * state_user.c — users, access keys and grants in the meta state
 * machine: PutUser, DeleteUser, PutAccessKey (sealed secrets only),
 * DeleteAccessKey, SetUserGrant, SetUserAdmin, ResealAccessKey.
 *
 * Not here: sealing (meta/secret.c, before proposing); the credentials
 * epoch every one of these but PutUser bumps lives in the map
 * (state_map.c creds_changed).
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

int op_put_user(struct tx *t, const Iolake__Meta__PutUser *op)
{
	if (!op->user || !valid_name(op->user->name))
		return -EINVAL;
	struct key k;
	k_init(&k, 'u');
	k_str(&k, op->user->name);
	if (tx_exists(t, &k))
		return IOL_EEXISTS;
	Iolake__Meta__User u = *op->user;
	u.n_access_keys = 0;   /* apply keeps this list */
	u.access_keys = NULL;
	u.n_grants = 0;        /* and SetUserGrant this one */
	u.grants = NULL;
	return tx_put_msg(t, &k, &u.base);
}


int op_delete_user(struct tx *t, const Iolake__Meta__DeleteUser *op,
			  struct meta_op_result *r)
{
	Iolake__Meta__User *u = NULL;
	if (!valid_name(op->name))
		return -EINVAL;
	struct key k, ak;
	k_init(&k, 'u');
	k_str(&k, op->name);
	int rc = tx_get_msg(t, &k, &iolake__meta__user__descriptor, (void **)&u);
	if (rc)
		return rc;
	for (size_t i = 0; i < u->n_access_keys; i++) {
		k_init(&ak, 'K');
		k_str(&ak, u->access_keys[i]);
		tx_del(t, &ak);
	}
	tx_del(t, &k);
	meta_state_free_msg(u);
	return creds_changed(t, r);
}

#define USER_KEYS_MAX 64
#define USER_GRANTS_MAX 32   /* gateways cache them: S3_GRANTS_MAX */

/* A key's secret: sealed (meta/secret.h's blob, which apply does not
 * open: the cluster key is not in the state), or in clear as older
 * members and a meta without --secret-key-file write it. */
static bool valid_secret(const Iolake__Meta__AccessKey *a)
{
	if (a->secret_sealed.len) {
		struct meta_secret_blob b;
		return (!a->secret_key || !a->secret_key[0]) &&
		       meta_secret_blob_parse(a->secret_sealed.data, a->secret_sealed.len, &b) == 0 &&
		       b.ct_len >= 16;
	}
	return a->secret_key && strlen(a->secret_key) >= 16 &&
	       strlen(a->secret_key) <= NAME_MAX_BYTES;
}

/* A new key bumps creds_epoch too: a gateway that was asked for this id
 * before it existed has its "no such key" cached, and would refuse the
 * new key until that entry expired. */
int op_put_access_key(struct tx *t, const Iolake__Meta__PutAccessKey *op,
		      struct meta_op_result *r)
{
	const Iolake__Meta__AccessKey *a = op->key;
	Iolake__Meta__User *u = NULL;
	if (!a || !valid_name(a->access_key_id) || !valid_name(a->user) || !valid_secret(a))
		return -EINVAL;
	struct key uk, k;
	k_init(&uk, 'u');
	k_str(&uk, a->user);
	int rc = tx_get_msg(t, &uk, &iolake__meta__user__descriptor, (void **)&u);
	if (rc)
		return rc;
	k_init(&k, 'K');
	k_str(&k, a->access_key_id);
	if (tx_exists(t, &k)) {
		rc = IOL_EEXISTS;
	} else if (u->n_access_keys >= USER_KEYS_MAX) {
		rc = IOL_ETOO_LARGE;
	} else {
		char *ids[USER_KEYS_MAX];
		if (u->n_access_keys)
			memcpy(ids, u->access_keys, u->n_access_keys * sizeof(*ids));
		ids[u->n_access_keys] = a->access_key_id;
		Iolake__Meta__User nu = *u;
		nu.access_keys = ids;
		nu.n_access_keys = u->n_access_keys + 1;
		rc = tx_put_msg(t, &uk, &nu.base);
		if (!rc)
			rc = tx_put_msg(t, &k, &a->base);
		if (!rc)
			rc = creds_changed(t, r);
	}
	meta_state_free_msg(u);
	return rc;
}

int op_delete_access_key(struct tx *t, const Iolake__Meta__DeleteAccessKey *op,
				struct meta_op_result *r)
{
	Iolake__Meta__AccessKey *a = NULL;
	Iolake__Meta__User *u = NULL;
	if (!valid_name(op->access_key_id))
		return -EINVAL;
	struct key k, uk;
	k_init(&k, 'K');
	k_str(&k, op->access_key_id);
	int rc = tx_get_msg(t, &k, &iolake__meta__access_key__descriptor, (void **)&a);
	if (rc)
		return rc;
	k_init(&uk, 'u');
	k_str(&uk, a->user);
	if (tx_get_msg(t, &uk, &iolake__meta__user__descriptor, (void **)&u) == 0) {
		size_t w = 0;
		for (size_t i = 0; i < u->n_access_keys; i++)
			if (strcmp(u->access_keys[i], op->access_key_id) != 0)
				u->access_keys[w++] = u->access_keys[i];
			else
				free(u->access_keys[i]);
		u->n_access_keys = w;
		tx_put_msg(t, &uk, &u->base);
	}
	tx_del(t, &k);
	meta_state_free_msg(u);
	meta_state_free_msg(a);
	return creds_changed(t, r);
}

/* Issue 16: a user's grants, admin flag and a key's secret replaced.
 * Each bumps creds_epoch (creds_changed), as removals do: gateways cache a
 * user's grants and admin flag with its key's secret. */

static int get_user(struct tx *t, const char *name, struct key *k, Iolake__Meta__User **u)
{
	if (!valid_name(name))
		return -EINVAL;
	k_init(k, 'u');
	k_str(k, name);
	return tx_get_msg(t, k, &iolake__meta__user__descriptor, (void **)u);
}

/* Whether g still names a live bucket (the one it was granted on). */
static bool grant_live(struct tx *t, const Iolake__Meta__BucketGrant *g)
{
	Iolake__Meta__Bucket *b = NULL;
	struct key k;
	if (!valid_bucket(g->bucket))
		return false;
	k_init(&k, 'B');
	k_str(&k, g->bucket);
	if (tx_get_msg(t, &k, &iolake__meta__bucket__descriptor, (void **)&b))
		return false;
	bool live = b->created_ms == g->bucket_created_ms;
	meta_state_free_msg(b);
	return live;
}

int op_set_user_grant(struct tx *t, const Iolake__Meta__SetUserGrant *op,
			     struct meta_op_result *r)
{
	Iolake__Meta__User *u = NULL;
	Iolake__Meta__Bucket *b = NULL;
	struct key k, bk;
	if (!valid_bucket(op->bucket) || (unsigned)op->level > IOLAKE__META__GRANT_LEVEL__GRANT_FULL)
		return -EINVAL;
	int rc = get_user(t, op->user, &k, &u);
	if (rc)
		return rc;
	if (op->level != IOLAKE__META__GRANT_LEVEL__GRANT_NONE) {
		k_init(&bk, 'B');
		k_str(&bk, op->bucket);
		rc = tx_get_msg(t, &bk, &iolake__meta__bucket__descriptor, (void **)&b);
		if (rc)
			goto out;
	}
	/* Keep the other live grants (stale ones go: their bucket is gone
	 * or another of the name), then this one. */
	Iolake__Meta__BucketGrant *keep[USER_GRANTS_MAX + 1], mine = IOLAKE__META__BUCKET_GRANT__INIT;
	size_t n = 0;
	for (size_t i = 0; i < u->n_grants; i++)
		if (strcmp(u->grants[i]->bucket, op->bucket) != 0 && grant_live(t, u->grants[i]) &&
		    n < USER_GRANTS_MAX)
			keep[n++] = u->grants[i];
	if (b) {
		if (n >= USER_GRANTS_MAX) {
			rc = IOL_ETOO_LARGE;
			goto out;
		}
		mine.bucket = op->bucket;
		mine.level = op->level;
		mine.bucket_created_ms = b->created_ms;
		keep[n++] = &mine;
	}
	Iolake__Meta__User nu = *u;
	nu.grants = keep;
	nu.n_grants = n;
	rc = tx_put_msg(t, &k, &nu.base);
	if (!rc)
		rc = creds_changed(t, r);
out:
	meta_state_free_msg(b);
	meta_state_free_msg(u);
	return rc;
}

int op_set_user_admin(struct tx *t, const Iolake__Meta__SetUserAdmin *op,
			     struct meta_op_result *r)
{
	Iolake__Meta__User *u = NULL;
	struct key k;
	int rc = get_user(t, op->user, &k, &u);
	if (rc)
		return rc;
	u->admin = op->admin;
	rc = tx_put_msg(t, &k, &u->base);
	meta_state_free_msg(u);
	return rc ? rc : creds_changed(t, r);
}

int op_reseal_access_key(struct tx *t, const Iolake__Meta__ResealAccessKey *op,
				struct meta_op_result *r)
{
	const Iolake__Meta__AccessKey *a = op->key;
	Iolake__Meta__AccessKey *old = NULL;
	if (!a || !valid_name(a->access_key_id) || !valid_secret(a))
		return -EINVAL;
	struct key k;
	k_init(&k, 'K');
	k_str(&k, a->access_key_id);
	int rc = tx_get_msg(t, &k, &iolake__meta__access_key__descriptor, (void **)&old);
	if (rc)
		return rc;
	if (!a->user || strcmp(a->user, old->user) != 0) {
		rc = IOL_ECONFLICT;
	} else {
		Iolake__Meta__AccessKey nk = *old;
		nk.secret_key = a->secret_key;
		nk.secret_sealed = a->secret_sealed;
		rc = tx_put_msg(t, &k, &nk.base);
	}
	meta_state_free_msg(old);
	return rc ? rc : creds_changed(t, r);
}
