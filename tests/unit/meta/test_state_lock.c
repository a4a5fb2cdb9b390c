/*
 * test_state_lock.c — object lock in meta's apply (meta/state_lock.c) on
 * real RocksDB under /dev/shm: the one check over every path that removes
 * or replaces a version — DeleteObject with a version id (also of a
 * DeleteObjects and the lifecycle worker, which send the same op), an
 * unversioned DeleteObject, an overwrite of a held null version
 * (unversioned and suspended, also a suspended write that would free an
 * older null version), CompleteMultipart over a held version, Abort next
 * to one — until the version's date, at the op's stamped time (not the
 * applier's clock; time 0 holds everything), and then not; a refused op
 * writes nothing (no GC entry, the record and the upload intact); a
 * delete without a version id only adds a marker; GOVERNANCE lifted only
 * by bypass, COMPLIANCE and legal hold never; retention only extended;
 * the bucket's lock configuration and versioning rules; and no locked
 * record ever reaches the GC queue.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "meta/state.h"
#include "meta/state_ver.h"
#include "meta_test_util.h"

#define ENABLED IOLAKE__META__VERSIONING_STATE__VERSIONING_ENABLED
#define SUSPENDED IOLAKE__META__VERSIONING_STATE__VERSIONING_SUSPENDED
#define UNSET IOLAKE__META__VERSIONING_STATE__VERSIONING_UNSET
#define GOV IOLAKE__META__LOCK_MODE__LOCK_GOVERNANCE
#define COMP IOLAKE__META__LOCK_MODE__LOCK_COMPLIANCE
#define NONE IOLAKE__META__LOCK_MODE__LOCK_NONE

#define T0 1700000000000ULL   /* "now" of the ops */
#define UNTIL (T0 + 5000)     /* the retention's date */
#define AFTER (UNTIL + 1)

static struct meta_op_result res[META_BATCH_MAX_OPS];
static uint64_t idx;

static int apply1(struct meta_state *s, struct tb *t)
{
	ck_assert_int_eq(tb_apply(s, ++idx, t, res), 1);
	return res[0].err;
}

static int set_versioning(struct meta_state *s, const char *b, int state)
{
	struct tb *t = tb_new();
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__SetBucketVersioning *v = tb_alloc(t, sizeof(*v));
	iolake__meta__set_bucket_versioning__init(v);
	v->name = tb_str(t, b);
	v->state = state;
	op->body_case = IOLAKE__META__OP__BODY_SET_BUCKET_VERSIONING;
	op->set_bucket_versioning = v;
	return apply1(s, t);
}

static int set_lock_config(struct meta_state *s, const char *b, int mode, uint32_t days,
			   uint32_t years)
{
	struct tb *t = tb_new();
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__SetObjectLockConfig *sc = tb_alloc(t, sizeof(*sc));
	Iolake__Meta__ObjectLockConfig *c = tb_alloc(t, sizeof(*c));
	iolake__meta__set_object_lock_config__init(sc);
	iolake__meta__object_lock_config__init(c);
	c->enabled = true;
	c->default_mode = mode;
	c->default_days = days;
	c->default_years = years;
	sc->name = tb_str(t, b);
	sc->config = c;
	op->body_case = IOLAKE__META__OP__BODY_SET_OBJECT_LOCK_CONFIG;
	op->set_object_lock_config = sc;
	return apply1(s, t);
}

/* A bucket made with lock enabled (and so versioning ENABLED). */
static struct meta_state *fresh(char dir[64], const char *bucket)
{
	tmpdir(dir);
	struct meta_state *s = NULL;
	ck_assert_int_eq(meta_state_open(dir, NULL, &s), 0);
	idx = 0;
	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, bucket, "alice");
	Iolake__Meta__Bucket *b = t->ops[0]->create_bucket->bucket;
	b->versioning = ENABLED;
	b->object_lock = tb_alloc(t, sizeof(*b->object_lock));
	iolake__meta__object_lock_config__init(b->object_lock);
	b->object_lock->enabled = true;
	ck_assert_int_eq(apply1(s, t), 0);
	return s;
}

/* PUT of key (8 KiB: shards) under versioning mode, with a lock; the new
 * version id into vid (may be NULL). Returns the op's error. */
static int put_locked(struct meta_state *s, int mode, const char *bucket, const char *key,
		      int lmode, uint64_t until, bool hold, char *vid)
{
	struct tb *t = tb_new();
	Iolake__Meta__PutObject *p = tb_put(t, 0, 0, bucket, key, 8192);
	p->record->lock_mode = lmode;
	p->record->lock_until_ms = until;
	p->record->legal_hold = hold;
	t->ops[0]->versioning = mode;
	t->ops[0]->time_ms = T0;
	int rc = apply1(s, t);
	if (vid)
		snprintf(vid, 24, "%s", res[0].version_id);
	return rc;
}

static int del_at(struct meta_state *s, int mode, const char *bucket, const char *key,
		  const char *vid, uint64_t now, bool bypass)
{
	struct tb *t = tb_new();
	tb_delete(t, 0, 0, bucket, key);
	t->ops[0]->versioning = mode;
	t->ops[0]->version_id = tb_str(t, vid ? vid : "");
	t->ops[0]->time_ms = now;
	t->ops[0]->bypass_governance = bypass;
	return apply1(s, t);
}

static int retention(struct meta_state *s, const char *bucket, const char *key, const char *vid,
		     int mode, uint64_t until, uint64_t now, bool bypass)
{
	struct tb *t = tb_new();
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__SetObjectRetention *r = tb_alloc(t, sizeof(*r));
	iolake__meta__set_object_retention__init(r);
	r->bucket = tb_str(t, bucket);
	r->key = tb_str(t, key);
	r->mode = mode;
	r->until_ms = until;
	op->body_case = IOLAKE__META__OP__BODY_SET_OBJECT_RETENTION;
	op->set_object_retention = r;
	op->version_id = tb_str(t, vid ? vid : "");
	op->time_ms = now;
	op->bypass_governance = bypass;
	return apply1(s, t);
}

static int legal_hold(struct meta_state *s, const char *bucket, const char *key, const char *vid,
		      bool on)
{
	struct tb *t = tb_new();
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__SetObjectLegalHold *h = tb_alloc(t, sizeof(*h));
	iolake__meta__set_object_legal_hold__init(h);
	h->bucket = tb_str(t, bucket);
	h->key = tb_str(t, key);
	h->on = on;
	op->body_case = IOLAKE__META__OP__BODY_SET_OBJECT_LEGAL_HOLD;
	op->set_object_legal_hold = h;
	op->version_id = tb_str(t, vid ? vid : "");
	op->time_ms = T0;
	return apply1(s, t);
}

static uint64_t gc(struct meta_state *s)
{
	uint64_t n;
	ck_assert_int_eq(meta_state_gc_count(s, &n), 0);
	return n;
}

static bool has_version(struct meta_state *s, const char *bucket, const char *key, const char *vid)
{
	Iolake__Meta__ObjectRecord *r = NULL;
	int rc = meta_state_get_version(s, bucket, key, vid, &r);
	meta_state_free_msg(r);
	ck_assert(rc == 0 || rc == IOL_ENOT_FOUND);
	return rc == 0;
}

static uint64_t gc_violations(void)
{
	uint64_t refused, viol;
	meta_lock_stats(&refused, &viol);
	return viol;
}

START_TEST(test_held_pure)
{
	Iolake__Meta__ObjectRecord r = IOLAKE__META__OBJECT_RECORD__INIT;
	ck_assert(!meta_lock_held(NULL, false, T0));
	ck_assert(!meta_lock_held(&r, false, T0));
	r.lock_mode = COMP;
	r.lock_until_ms = UNTIL;
	ck_assert(meta_lock_held(&r, false, T0));
	ck_assert(meta_lock_held(&r, true, T0));          /* COMPLIANCE: no bypass */
	ck_assert(meta_lock_held(&r, true, 0));           /* no time: in force */
	ck_assert(meta_lock_held(&r, false, UNTIL - 1));
	ck_assert(!meta_lock_held(&r, false, UNTIL));     /* on its date: free */
	r.lock_mode = GOV;
	ck_assert(meta_lock_held(&r, false, T0));
	ck_assert(!meta_lock_held(&r, true, T0));         /* GOVERNANCE: bypass lifts it */
	r.lock_mode = 7;                                  /* unknown: as COMPLIANCE */
	ck_assert(meta_lock_held(&r, true, T0));
	r.lock_mode = NONE;
	r.lock_until_ms = 0;
	r.legal_hold = true;
	ck_assert(meta_lock_held(&r, true, UINT64_MAX));  /* a hold has no date */
}
END_TEST

START_TEST(test_config_rules)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = NULL;
	ck_assert_int_eq(meta_state_open(dir, NULL, &s), 0);
	idx = 0;
	/* lock without versioning ENABLED is refused at creation */
	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "nolock", "alice");
	Iolake__Meta__Bucket *b = t->ops[0]->create_bucket->bucket;
	b->object_lock = tb_alloc(t, sizeof(*b->object_lock));
	iolake__meta__object_lock_config__init(b->object_lock);
	b->object_lock->enabled = true;
	ck_assert_int_eq(apply1(s, t), -EINVAL);
	t = tb_new();
	tb_create_bucket(t, 0, 0, "plain", "alice");
	ck_assert_int_eq(apply1(s, t), 0);
	/* enabling on an existing bucket needs versioning ENABLED */
	ck_assert_int_eq(set_lock_config(s, "plain", NONE, 0, 0), -EINVAL);
	ck_assert_int_eq(set_versioning(s, "plain", SUSPENDED), 0);
	ck_assert_int_eq(set_lock_config(s, "plain", NONE, 0, 0), -EINVAL);
	ck_assert_int_eq(set_versioning(s, "plain", ENABLED), 0);
	ck_assert_int_eq(set_lock_config(s, "nosuch", NONE, 0, 0), IOL_ENOT_FOUND);
	/* a default needs exactly one of days and years */
	ck_assert_int_eq(set_lock_config(s, "plain", GOV, 0, 0), -EINVAL);
	ck_assert_int_eq(set_lock_config(s, "plain", GOV, 1, 1), -EINVAL);
	ck_assert_int_eq(set_lock_config(s, "plain", GOV, 36501, 0), -EINVAL);
	ck_assert_int_eq(set_lock_config(s, "plain", NONE, 3, 0), -EINVAL);
	ck_assert_int_eq(set_lock_config(s, "plain", COMP, 3, 0), 0);
	Iolake__Meta__Bucket *got = NULL;
	ck_assert_int_eq(meta_state_get_bucket(s, "plain", &got), 0);
	ck_assert(got->object_lock && got->object_lock->enabled);
	ck_assert_int_eq(got->object_lock->default_mode, COMP);
	ck_assert_uint_eq(got->object_lock->default_days, 3);
	ck_assert_int_eq(got->versioning, ENABLED);
	meta_state_free_msg(got);
	/* the default can change or go, lock stays; versioning stays on */
	ck_assert_int_eq(set_lock_config(s, "plain", GOV, 0, 2), 0);
	ck_assert_int_eq(set_lock_config(s, "plain", NONE, 0, 0), 0);
	ck_assert_int_eq(set_versioning(s, "plain", SUSPENDED), -EINVAL);
	ck_assert_int_eq(set_versioning(s, "plain", ENABLED), 0);
	ck_assert_int_eq(meta_state_get_bucket(s, "plain", &got), 0);
	ck_assert(got->object_lock && got->object_lock->enabled && !got->object_lock->default_mode);
	ck_assert_int_eq(got->versioning, ENABLED);
	meta_state_free_msg(got);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

/* COMPLIANCE through every path, by anybody (bypass or not), until its
 * date; nothing written by a refused op. */
START_TEST(test_compliance_every_path)
{
	char dir[64], v1[24], v2[24], mk[24];
	struct meta_state *s = fresh(dir, "mpb");
	ck_assert_int_eq(put_locked(s, ENABLED, "mpb", "big", COMP, UNTIL, false, v1), 0);
	ck_assert_str_ne(v1, "");
	uint64_t g0 = gc(s);
	/* DeleteObject / DeleteObjects / lifecycle: the version by id */
	ck_assert_int_eq(del_at(s, ENABLED, "mpb", "big", v1, T0, false), META_ELOCKED);
	ck_assert_int_eq(del_at(s, ENABLED, "mpb", "big", v1, T0, true), META_ELOCKED);
	ck_assert_int_eq(del_at(s, ENABLED, "mpb", "big", v1, 0, true), META_ELOCKED);
	ck_assert_int_eq(del_at(s, ENABLED, "mpb", "big", v1, UNTIL - 1, true), META_ELOCKED);
	ck_assert(has_version(s, "mpb", "big", v1));
	ck_assert_uint_eq(gc(s), g0);
	/* a delete without a version id adds a marker (allowed, as S3) */
	ck_assert_int_eq(del_at(s, ENABLED, "mpb", "big", NULL, T0, false), 0);
	ck_assert(res[0].delete_marker);
	snprintf(mk, sizeof(mk), "%s", res[0].version_id);
	ck_assert(has_version(s, "mpb", "big", v1));
	/* the marker itself is no locked version */
	ck_assert_int_eq(del_at(s, ENABLED, "mpb", "big", mk, T0, false), 0);
	/* an overwrite under versioning keeps it (a new version on top) */
	ck_assert_int_eq(put_locked(s, ENABLED, "mpb", "big", NONE, 0, false, v2), 0);
	ck_assert(has_version(s, "mpb", "big", v1));
	/* once v1 is noncurrent: still refused by id */
	ck_assert_int_eq(del_at(s, ENABLED, "mpb", "big", v1, T0, true), META_ELOCKED);
	ck_assert_uint_eq(gc(s), g0);
	/* its date passed (at the op's time): it goes, its shards queued */
	ck_assert_int_eq(del_at(s, ENABLED, "mpb", "big", v1, UNTIL, false), 0);
	ck_assert(!has_version(s, "mpb", "big", v1));
	ck_assert_uint_eq(gc(s), g0 + 1);
	ck_assert_int_eq(del_at(s, ENABLED, "mpb", "big", v2, T0, false), 0);
	ck_assert_uint_eq(gc_violations(), 0);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

/* A held null version (a key written before versioning, locked by
 * PutObjectRetention?versionId=null; or an op stamped by a gateway that
 * had not seen the bucket's state): unversioned and suspended writes and
 * deletes that would free it are refused. */
START_TEST(test_null_version_paths)
{
	char dir[64], v1[24];
	struct meta_state *s = fresh(dir, "mpb");
	ck_assert_int_eq(put_locked(s, UNSET, "mpb", "k", COMP, UNTIL, false, NULL), 0);
	uint64_t g0 = gc(s);
	ck_assert_int_eq(put_locked(s, UNSET, "mpb", "k", NONE, 0, false, NULL), META_ELOCKED);
	ck_assert_int_eq(put_locked(s, SUSPENDED, "mpb", "k", NONE, 0, false, NULL), META_ELOCKED);
	ck_assert_int_eq(del_at(s, UNSET, "mpb", "k", NULL, T0, true), META_ELOCKED);
	ck_assert_int_eq(del_at(s, SUSPENDED, "mpb", "k", NULL, T0, true), META_ELOCKED);
	ck_assert_int_eq(del_at(s, ENABLED, "mpb", "k", "null", T0, true), META_ELOCKED);
	ck_assert_uint_eq(gc(s), g0);
	ck_assert(has_version(s, "mpb", "k", "null"));
	/* versioned on top, then a suspended write would free the older null
	 * version: refused, and the current one stays as it was */
	ck_assert_int_eq(put_locked(s, ENABLED, "mpb", "k", NONE, 0, false, v1), 0);
	ck_assert_int_eq(put_locked(s, SUSPENDED, "mpb", "k", NONE, 0, false, NULL), META_ELOCKED);
	ck_assert_int_eq(del_at(s, SUSPENDED, "mpb", "k", NULL, T0, false), META_ELOCKED);
	ck_assert(has_version(s, "mpb", "k", v1));
	ck_assert(has_version(s, "mpb", "k", "null"));
	ck_assert_uint_eq(gc(s), g0);
	/* with the date passed the suspended write frees it */
	struct tb *t = tb_new();
	tb_put(t, 0, 0, "mpb", "k", 8192);
	t->ops[0]->versioning = SUSPENDED;
	t->ops[0]->time_ms = AFTER;
	ck_assert_int_eq(apply1(s, t), 0);
	ck_assert_uint_eq(gc(s), g0 + 1);
	ck_assert(has_version(s, "mpb", "k", v1));
	ck_assert_uint_eq(gc_violations(), 0);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

/* CompleteMultipart that would replace a held null version: refused,
 * nothing written (the upload and its parts stay, completable later);
 * Abort beside a held version leaves the version alone. */
START_TEST(test_multipart_over_held)
{
	char dir[64];
	struct meta_state *s = fresh(dir, "mpb");
	ck_assert_int_eq(put_locked(s, UNSET, "mpb", "big", COMP, UNTIL, false, NULL), 0);
	const char *etag = "0123456789abcdef0123456789abcdef";
	char up[2][17];
	for (int i = 0; i < 2; i++) {
		struct tb *t = tb_new();
		tb_create_upload(t, "mpb", "big");
		ck_assert_int_eq(apply1(s, t), 0);
		snprintf(up[i], sizeof(up[i]), "%s", res[0].upload_id);
		t = tb_new();
		tb_part(t, up[i], 1, 6000, etag);
		ck_assert_int_eq(apply1(s, t), 0);
	}
	uint64_t g0 = gc(s);
	uint32_t nums[] = { 1 };
	const char *etags[] = { etag };
	struct tb *t = tb_new();
	tb_complete(t, up[0], nums, etags, 1);
	t->ops[0]->versioning = UNSET;
	t->ops[0]->time_ms = T0;
	t->ops[0]->bypass_governance = true;
	ck_assert_int_eq(apply1(s, t), META_ELOCKED);
	ck_assert_uint_eq(gc(s), g0);
	Iolake__Meta__MultipartUpload *u = NULL;
	ck_assert_int_eq(meta_state_get_upload(s, "mpb", "big", up[0], &u), 0);
	meta_state_free_msg(u);
	Iolake__Meta__Part *p = NULL;
	ck_assert_int_eq(meta_state_get_part(s, up[0], 1, &p), 0);
	meta_state_free_msg(p);
	/* Abort of the other upload: the held version stays */
	t = tb_new();
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__AbortMultipart *a = tb_alloc(t, sizeof(*a));
	iolake__meta__abort_multipart__init(a);
	a->bucket = tb_str(t, "mpb");
	a->key = tb_str(t, "big");
	a->upload_id = tb_str(t, up[1]);
	op->body_case = IOLAKE__META__OP__BODY_ABORT_MULTIPART;
	op->abort_multipart = a;
	ck_assert_int_eq(apply1(s, t), 0);
	ck_assert(has_version(s, "mpb", "big", "null"));
	ck_assert_uint_eq(gc(s), g0 + 1);   /* the aborted upload's part only */
	/* under versioning the Complete keeps the held version below it */
	t = tb_new();
	tb_complete(t, up[0], nums, etags, 1);
	t->ops[0]->versioning = ENABLED;
	t->ops[0]->time_ms = T0;
	ck_assert_int_eq(apply1(s, t), 0);
	ck_assert(res[0].retained);
	ck_assert(has_version(s, "mpb", "big", "null"));
	ck_assert_uint_eq(gc_violations(), 0);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

START_TEST(test_governance_bypass)
{
	char dir[64], v1[24];
	struct meta_state *s = fresh(dir, "mpb");
	ck_assert_int_eq(put_locked(s, ENABLED, "mpb", "g", GOV, UNTIL, false, v1), 0);
	ck_assert_int_eq(del_at(s, ENABLED, "mpb", "g", v1, T0, false), META_ELOCKED);
	ck_assert(has_version(s, "mpb", "g", v1));
	ck_assert_int_eq(del_at(s, ENABLED, "mpb", "g", v1, T0, true), 0);
	ck_assert(!has_version(s, "mpb", "g", v1));
	ck_assert_uint_eq(gc_violations(), 0);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

START_TEST(test_legal_hold)
{
	char dir[64], v1[24];
	struct meta_state *s = fresh(dir, "mpb");
	ck_assert_int_eq(put_locked(s, ENABLED, "mpb", "h", NONE, 0, true, v1), 0);
	ck_assert_int_eq(del_at(s, ENABLED, "mpb", "h", v1, UINT64_MAX / 2, true), META_ELOCKED);
	ck_assert_int_eq(legal_hold(s, "mpb", "h", v1, false), 0);
	ck_assert_int_eq(legal_hold(s, "mpb", "h", v1, true), 0);
	/* with a GOVERNANCE retention too: bypass lifts the retention only */
	ck_assert_int_eq(retention(s, "mpb", "h", v1, GOV, UNTIL, T0, false), 0);
	ck_assert_int_eq(del_at(s, ENABLED, "mpb", "h", v1, T0, true), META_ELOCKED);
	ck_assert_int_eq(del_at(s, ENABLED, "mpb", "h", v1, AFTER, true), META_ELOCKED);
	ck_assert_int_eq(legal_hold(s, "mpb", "h", v1, false), 0);
	ck_assert_int_eq(del_at(s, ENABLED, "mpb", "h", v1, T0, false), META_ELOCKED);
	ck_assert_int_eq(del_at(s, ENABLED, "mpb", "h", v1, T0, true), 0);
	ck_assert_int_eq(legal_hold(s, "mpb", "h", v1, true), IOL_ENOT_FOUND);
	/* a marker holds nothing */
	ck_assert_int_eq(put_locked(s, ENABLED, "mpb", "h", NONE, 0, false, NULL), 0);
	ck_assert_int_eq(del_at(s, ENABLED, "mpb", "h", NULL, T0, false), 0);
	ck_assert_int_eq(legal_hold(s, "mpb", "h", NULL, true), IOL_ENOT_FOUND);
	ck_assert_uint_eq(gc_violations(), 0);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

static int lock_of(struct meta_state *s, const char *key, const char *vid, uint64_t *until)
{
	Iolake__Meta__ObjectRecord *r = NULL;
	ck_assert_int_eq(meta_state_get_version(s, "mpb", key, vid, &r), 0);
	int m = r->lock_mode;
	*until = r->lock_until_ms;
	meta_state_free_msg(r);
	return m;
}

START_TEST(test_retention_only_extends)
{
	char dir[64], c1[24], g1[24];
	uint64_t u;
	struct meta_state *s = fresh(dir, "mpb");
	ck_assert_int_eq(put_locked(s, ENABLED, "mpb", "c", COMP, UNTIL, false, c1), 0);
	/* COMPLIANCE: extended yes; shortened, to GOVERNANCE, removed: no */
	ck_assert_int_eq(retention(s, "mpb", "c", c1, COMP, UNTIL + 1000, T0, false), 0);
	ck_assert_int_eq(retention(s, "mpb", "c", c1, COMP, UNTIL, T0, true), META_ELOCKED);
	ck_assert_int_eq(retention(s, "mpb", "c", c1, GOV, UNTIL + 2000, T0, true), META_ELOCKED);
	ck_assert_int_eq(retention(s, "mpb", "c", c1, NONE, 0, T0, true), META_ELOCKED);
	ck_assert_int_eq(retention(s, "mpb", "c", c1, COMP, UNTIL + 1000, T0, false), 0);
	ck_assert_int_eq(lock_of(s, "c", c1, &u), COMP);
	ck_assert_uint_eq(u, UNTIL + 1000);
	/* malformed: a mode without a date or the reverse */
	ck_assert_int_eq(retention(s, "mpb", "c", c1, COMP, 0, T0, false), -EINVAL);
	ck_assert_int_eq(retention(s, "mpb", "c", c1, NONE, UNTIL, T0, false), -EINVAL);
	/* past its date (at the op's time) anything goes; time 0 holds */
	ck_assert_int_eq(retention(s, "mpb", "c", c1, NONE, 0, 0, true), META_ELOCKED);
	ck_assert_int_eq(retention(s, "mpb", "c", c1, GOV, UNTIL, UNTIL + 1000, false), 0);
	ck_assert_int_eq(lock_of(s, "c", c1, &u), GOV);
	/* GOVERNANCE: extended, or to COMPLIANCE... only with bypass */
	ck_assert_int_eq(put_locked(s, ENABLED, "mpb", "g", GOV, UNTIL, false, g1), 0);
	ck_assert_int_eq(retention(s, "mpb", "g", g1, GOV, UNTIL + 10, T0, false), 0);
	ck_assert_int_eq(retention(s, "mpb", "g", g1, GOV, UNTIL, T0, false), META_ELOCKED);
	ck_assert_int_eq(retention(s, "mpb", "g", g1, COMP, UNTIL + 10, T0, false), META_ELOCKED);
	ck_assert_int_eq(retention(s, "mpb", "g", g1, NONE, 0, T0, false), META_ELOCKED);
	ck_assert_int_eq(retention(s, "mpb", "g", g1, GOV, UNTIL, T0, true), 0);
	ck_assert_uint_eq((lock_of(s, "g", g1, &u), u), UNTIL);
	ck_assert_int_eq(retention(s, "mpb", "g", g1, NONE, 0, T0, true), 0);
	ck_assert_int_eq(lock_of(s, "g", g1, &u), NONE);
	ck_assert_int_eq(del_at(s, ENABLED, "mpb", "g", g1, T0, false), 0);
	/* of the current version when no id is named; a missing one */
	ck_assert_int_eq(put_locked(s, ENABLED, "mpb", "n", NONE, 0, false, NULL), 0);
	ck_assert_int_eq(retention(s, "mpb", "n", NULL, COMP, UNTIL, T0, false), 0);
	ck_assert_int_eq(retention(s, "mpb", "nosuch", NULL, COMP, UNTIL, T0, false), IOL_ENOT_FOUND);
	ck_assert_int_eq(del_at(s, UNSET, "mpb", "n", NULL, T0, false), 0);   /* marker: allowed */
	ck_assert_uint_eq(gc_violations(), 0);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

/* A record with a bad lock field is refused; one retried (same request
 * id) is answered from the request table, not applied again. */
START_TEST(test_bad_records_and_retry)
{
	char dir[64], v1[24];
	struct meta_state *s = fresh(dir, "mpb");
	ck_assert_int_eq(put_locked(s, ENABLED, "mpb", "b", 9, UNTIL, false, NULL), -EINVAL);
	ck_assert_int_eq(put_locked(s, ENABLED, "mpb", "b", COMP, 0, false, NULL), -EINVAL);
	ck_assert_int_eq(put_locked(s, ENABLED, "mpb", "b", NONE, UNTIL, false, NULL), -EINVAL);
	ck_assert_int_eq(put_locked(s, ENABLED, "mpb", "b", COMP, UNTIL, false, v1), 0);
	for (int i = 0; i < 2; i++) {
		struct tb *t = tb_new();
		tb_delete(t, 7, 1, "mpb", "b");
		t->ops[0]->versioning = ENABLED;
		t->ops[0]->version_id = tb_str(t, v1);
		t->ops[0]->time_ms = i ? AFTER : T0;   /* the retry's time is ignored */
		ck_assert_int_eq(apply1(s, t), META_ELOCKED);
		ck_assert(res[0].deduped == (i == 1));
	}
	ck_assert(has_version(s, "mpb", "b", v1));
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("state_lock");
	TCase *tc = tcase_create("state_lock");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_held_pure);
	tcase_add_test(tc, test_config_rules);
	tcase_add_test(tc, test_compliance_every_path);
	tcase_add_test(tc, test_null_version_paths);
	tcase_add_test(tc, test_multipart_over_held);
	tcase_add_test(tc, test_governance_bypass);
	tcase_add_test(tc, test_legal_hold);
	tcase_add_test(tc, test_retention_only_extends);
	tcase_add_test(tc, test_bad_records_and_retry);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
