/*
 * state_lock.c — object lock in the meta state machine (issue 17): the
 * one check every op that would remove or replace a version's data goes
 * through (lock_check), the bucket's lock configuration, and a version's
 * retention and legal hold.
 *
 * Why here: apply is the only place every delete and overwrite passes
 * through, whoever sent it (a gateway's DeleteObject, DeleteObjects, a
 * Complete over a key, the lifecycle worker's deletes, which are the
 * same ops), and it decides against the state as committed, not against
 * a gateway's read of it. The callers of lock_check are the places that
 * free a version (state_ver.c's free_version and the unversioned
 * DeleteObject); a version freed is a version whose shards go to the GC
 * queue, so passing the check is also what lets shards be queued.
 *
 * Time: the op's time_ms (stamped by the gateway that sent it), never the
 * applier's clock, so every member decides alike. An op without one
 * (time 0) finds every retention in force: fail closed.
 *
 * Rules (AWS's "Object Lock"): a legal hold holds until removed, whatever
 * the mode; COMPLIANCE holds until its date for everybody; GOVERNANCE
 * holds until its date unless the op carries bypass_governance (the
 * gateway sets it only for a caller that sent the header and may
 * s3:BypassGovernanceRetention). A retention in force may be extended;
 * shortened, removed or changed in mode only GOVERNANCE, with bypass.
 *
 * Runs on the apply thread. Does not decide who may bypass (the gateway),
 * nor compute default retention dates (the gateway stamps them on the
 * record it writes: the range group holds no bucket record).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "common/log.h"
#include "meta/state_internal.h"
#include "meta/state_ver.h"

#define GOVERNANCE IOLAKE__META__LOCK_MODE__LOCK_GOVERNANCE
#define COMPLIANCE IOLAKE__META__LOCK_MODE__LOCK_COMPLIANCE
#define LOCK_NONE IOLAKE__META__LOCK_MODE__LOCK_NONE
#define ENABLED IOLAKE__META__VERSIONING_STATE__VERSIONING_ENABLED

/* Refusals by lock_check, and locked records that reached gc_record
 * (which must stay 0: a path that frees a version without the check). */
static _Atomic uint64_t n_refused, n_gc_violations;

bool meta_lock_held(const Iolake__Meta__ObjectRecord *r, bool bypass, uint64_t now_ms)
{
	if (!r)
		return false;
	if (r->legal_hold)
		return true;
	if (r->lock_mode == LOCK_NONE || r->lock_until_ms <= now_ms)
		return false;
	/* An unknown mode holds like COMPLIANCE: fail closed. */
	return !(r->lock_mode == GOVERNANCE && bypass);
}

int lock_check(struct tx *t, const Iolake__Meta__ObjectRecord *v)
{
	if (!meta_lock_held(v, t->bypass, t->time_ms))
		return 0;
	atomic_fetch_add(&n_refused, 1);
	return META_ELOCKED;
}

bool lock_gc_refuse(struct tx *t, const Iolake__Meta__ObjectRecord *r)
{
	/* Every path that frees a version ran lock_check first; a record
	 * that is still held here means one did not. Its shards are not
	 * queued (the data stays; a leak is better than a loss). */
	if (!meta_lock_held(r, t->bypass, t->time_ms))
		return false;
	atomic_fetch_add(&n_gc_violations, 1);
	LOG_ERROR("meta: a locked version reached the GC queue; not queued", "bucket=%s key=%s vid=%s",
		  r->bucket, r->key, r->version_id);
	return true;
}

void meta_lock_stats(uint64_t *refused, uint64_t *gc_violations)
{
	*refused = atomic_load(&n_refused);
	*gc_violations = atomic_load(&n_gc_violations);
}

bool lock_valid_record(const Iolake__Meta__ObjectRecord *r)
{
	if (r->lock_mode != LOCK_NONE && r->lock_mode != GOVERNANCE && r->lock_mode != COMPLIANCE)
		return false;
	/* A date without a mode (or a mode without a date) is no retention. */
	return (r->lock_mode == LOCK_NONE) == (r->lock_until_ms == 0);
}

bool lock_valid_config(const Iolake__Meta__ObjectLockConfig *c, int versioning)
{
	if (!c)
		return true;
	if (!c->enabled)
		return !c->default_mode && !c->default_days && !c->default_years;
	if (versioning != ENABLED)
		return false;
	if (c->default_mode == LOCK_NONE)
		return !c->default_days && !c->default_years;
	if (c->default_mode != GOVERNANCE && c->default_mode != COMPLIANCE)
		return false;
	/* exactly one of days and years, positive (S3: days up to 36,500,
	 * years up to 100) */
	if (!c->default_days == !c->default_years)
		return false;
	return c->default_days <= 36500 && c->default_years <= 100;
}

static int edit_lock(struct tx *t, Iolake__Meta__Bucket *b, const void *arg)
{
	(void)t;
	const Iolake__Meta__SetObjectLockConfig *op = arg;
	if (!lock_valid_config(op->config, b->versioning))
		return -EINVAL;
	b->object_lock = op->config;
	return 0;
}

int op_set_object_lock_config(struct tx *t, const Iolake__Meta__SetObjectLockConfig *op)
{
	if (!valid_bucket(op->name) || !op->config || !op->config->enabled)
		return -EINVAL;
	return bucket_config_update(t, op->name, edit_lock, op);
}

bool lock_bucket_enabled(const Iolake__Meta__Bucket *b)
{
	return b && b->object_lock && b->object_lock->enabled;
}

/* Whether a retention in force (cur) may become (mode, until). */
static bool retention_change_ok(const Iolake__Meta__ObjectRecord *cur, int mode, uint64_t until,
				bool bypass, uint64_t now_ms)
{
	if (cur->lock_mode == LOCK_NONE || cur->lock_until_ms <= now_ms)
		return true;   /* none in force: anything */
	bool extends = mode == (int)cur->lock_mode && until >= cur->lock_until_ms;
	if (cur->lock_mode == GOVERNANCE)
		return extends || bypass;
	return extends;   /* COMPLIANCE (or unknown): only ever extended */
}

int op_set_object_retention(struct tx *t, const Iolake__Meta__SetObjectRetention *op)
{
	if (!valid_bucket(op->bucket) || !valid_key(op->key))
		return -EINVAL;
	Iolake__Meta__ObjectRecord probe = IOLAKE__META__OBJECT_RECORD__INIT;
	probe.lock_mode = op->mode;
	probe.lock_until_ms = op->until_ms;
	if (!lock_valid_record(&probe))
		return -EINVAL;
	if (t->range_id) {
		int rrc = range_check(t, op->bucket, op->key);
		if (rrc)
			return rrc;
	}
	Iolake__Meta__ObjectRecord *cur = NULL;
	struct key k;
	int rc = meta_ver_target(t, op->bucket, op->key, 0, &cur, &k);
	if (rc)
		return rc;
	if (!retention_change_ok(cur, op->mode, op->until_ms, t->bypass, t->time_ms)) {
		atomic_fetch_add(&n_refused, 1);
		rc = META_ELOCKED;
	} else {
		cur->lock_mode = op->mode;
		cur->lock_until_ms = op->until_ms;
		rc = tx_put_msg(t, &k, &cur->base);
	}
	meta_state_free_msg(cur);
	return rc;
}

int op_set_object_legal_hold(struct tx *t, const Iolake__Meta__SetObjectLegalHold *op)
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
	int rc = meta_ver_target(t, op->bucket, op->key, 0, &cur, &k);
	if (rc)
		return rc;
	cur->legal_hold = op->on;
	rc = tx_put_msg(t, &k, &cur->base);
	meta_state_free_msg(cur);
	return rc;
}
