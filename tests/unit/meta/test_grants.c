/*
 * test_grants.c — the user ops of issue 16 in the meta state machine, on
 * real RocksDB under /dev/shm: SetUserGrant (bucket must exist, bound to
 * its created_ms, replaced per bucket, revoked, stale grants dropped on
 * the next write, at most 32), SetUserAdmin, ResealAccessKey (same user
 * only), PutAccessKey with a sealed secret (a malformed blob, or both
 * forms at once, refused), and each of them bumping creds_epoch, which is
 * how gateways learn to drop what they cached.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "meta/secret.h"
#include "meta/state.h"
#include "meta_test_util.h"

static struct meta_op_result res[META_BATCH_MAX_OPS];

static void tb_user(struct tb *t, const char *name)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__PutUser *pu = tb_alloc(t, sizeof(*pu));
	Iolake__Meta__User *u = tb_alloc(t, sizeof(*u));
	iolake__meta__put_user__init(pu);
	iolake__meta__user__init(u);
	u->name = tb_str(t, name);
	pu->user = u;
	op->body_case = IOLAKE__META__OP__BODY_PUT_USER;
	op->put_user = pu;
}

static void tb_grant(struct tb *t, const char *user, const char *bucket, int level)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	op->body_case = IOLAKE__META__OP__BODY_SET_USER_GRANT;
	op->set_user_grant = tb_alloc(t, sizeof(*op->set_user_grant));
	iolake__meta__set_user_grant__init(op->set_user_grant);
	op->set_user_grant->user = tb_str(t, user);
	op->set_user_grant->bucket = tb_str(t, bucket);
	op->set_user_grant->level = (Iolake__Meta__GrantLevel)level;
}

static void tb_admin(struct tb *t, const char *user, bool on)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	op->body_case = IOLAKE__META__OP__BODY_SET_USER_ADMIN;
	op->set_user_admin = tb_alloc(t, sizeof(*op->set_user_admin));
	iolake__meta__set_user_admin__init(op->set_user_admin);
	op->set_user_admin->user = tb_str(t, user);
	op->set_user_admin->admin = on;
}

/* A key: clear secret when blob is NULL, else that sealed blob. */
static Iolake__Meta__AccessKey *tb_key(struct tb *t, bool reseal, const char *id,
				       const char *user, const char *clear, const uint8_t *blob,
				       size_t blob_len)
{
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__AccessKey *k = tb_alloc(t, sizeof(*k));
	iolake__meta__access_key__init(k);
	k->access_key_id = tb_str(t, id);
	k->user = tb_str(t, user);
	if (clear)
		k->secret_key = tb_str(t, clear);
	if (blob) {
		k->secret_sealed.data = tb_alloc(t, blob_len);
		memcpy(k->secret_sealed.data, blob, blob_len);
		k->secret_sealed.len = blob_len;
	}
	if (reseal) {
		op->body_case = IOLAKE__META__OP__BODY_RESEAL_ACCESS_KEY;
		op->reseal_access_key = tb_alloc(t, sizeof(*op->reseal_access_key));
		iolake__meta__reseal_access_key__init(op->reseal_access_key);
		op->reseal_access_key->key = k;
	} else {
		op->body_case = IOLAKE__META__OP__BODY_PUT_ACCESS_KEY;
		op->put_access_key = tb_alloc(t, sizeof(*op->put_access_key));
		iolake__meta__put_access_key__init(op->put_access_key);
		op->put_access_key->key = k;
	}
	return k;
}

static uint64_t creds_epoch(struct meta_state *s)
{
	Iolake__Meta__ClusterMap *m;
	ck_assert_int_eq(meta_state_get_map(s, &m), 0);
	uint64_t e = m->creds_epoch;
	meta_state_free_msg(m);
	return e;
}

START_TEST(test_grants)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	struct tb *t = tb_new();
	tb_init_map(t, 64, 4, 2);
	tb_user(t, "alice");
	tb_user(t, "bob");
	tb_create_bucket(t, 1, 1, "bk1", "alice");
	tb_create_bucket(t, 1, 2, "bk2", "alice");
	tb_grant(t, "bob", "bk1", IOLAKE__META__GRANT_LEVEL__GRANT_READ);
	tb_grant(t, "bob", "bk2", IOLAKE__META__GRANT_LEVEL__GRANT_WRITE);
	tb_grant(t, "bob", "bk1", IOLAKE__META__GRANT_LEVEL__GRANT_FULL);   /* replaces */
	tb_grant(t, "bob", "nope", IOLAKE__META__GRANT_LEVEL__GRANT_READ); /* no bucket */
	tb_grant(t, "carol", "bk1", IOLAKE__META__GRANT_LEVEL__GRANT_READ); /* no user */
	tb_grant(t, "bob", "bk1", 7);                                       /* bad level */
	tb_grant(t, "bob", "Bad..Name", IOLAKE__META__GRANT_LEVEL__GRANT_READ);
	ck_assert_int_eq(tb_apply(s, 1, t, res), 12);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(res[i].err, 0);
	ck_assert_int_eq(res[8].err, IOL_ENOT_FOUND);
	ck_assert_int_eq(res[9].err, IOL_ENOT_FOUND);
	ck_assert_int_eq(res[10].err, -EINVAL);
	ck_assert_int_eq(res[11].err, -EINVAL);
	ck_assert_uint_eq(creds_epoch(s), 3);   /* three grants applied */
	ck_assert_uint_gt(res[6].epoch, res[5].epoch);
	Iolake__Meta__User *u;
	ck_assert_int_eq(meta_state_get_user(s, "bob", &u), 0);
	ck_assert_uint_eq(u->n_grants, 2);
	ck_assert_str_eq(u->grants[0]->bucket, "bk2");
	ck_assert_int_eq(u->grants[0]->level, IOLAKE__META__GRANT_LEVEL__GRANT_WRITE);
	ck_assert_uint_eq(u->grants[0]->bucket_created_ms, 1700000000002ULL);
	ck_assert_str_eq(u->grants[1]->bucket, "bk1");
	ck_assert_int_eq(u->grants[1]->level, IOLAKE__META__GRANT_LEVEL__GRANT_FULL);
	ck_assert_uint_eq(u->grants[1]->bucket_created_ms, 1700000000001ULL);
	meta_state_free_msg(u);

	/* b2 deleted and made again: bob's grant names the old one (its
	 * created_ms) and is dropped at the next write of his grants; a
	 * revoke needs no bucket. PutUser keeps no grants it is given. */
	t = tb_new();
	tb_delete_bucket(t, 1, 3, "bk2");
	tb_create_bucket(t, 1, 4, "bk2", "alice");
	tb_grant(t, "bob", "bk1", IOLAKE__META__GRANT_LEVEL__GRANT_NONE);
	tb_grant(t, "bob", "gone", IOLAKE__META__GRANT_LEVEL__GRANT_NONE);
	ck_assert_int_eq(tb_apply(s, 2, t, res), 4);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(res[i].err, 0);
	ck_assert_int_eq(meta_state_get_user(s, "bob", &u), 0);
	ck_assert_uint_eq(u->n_grants, 0);
	meta_state_free_msg(u);

	/* At most 32 grants. */
	t = tb_new();
	char name[24];
	for (int i = 0; i < 33; i++) {
		snprintf(name, sizeof(name), "many-%02d", i);
		tb_create_bucket(t, 2, (uint64_t)i + 1, name, "alice");
		tb_grant(t, "bob", name, IOLAKE__META__GRANT_LEVEL__GRANT_READ);
	}
	ck_assert_int_eq(tb_apply(s, 3, t, res), 66);
	for (int i = 0; i < 64; i++)
		ck_assert_int_eq(res[i].err, 0);
	ck_assert_int_eq(res[65].err, IOL_ETOO_LARGE);

	/* Admin on and off, each bumping creds_epoch. */
	uint64_t e0 = creds_epoch(s);
	t = tb_new();
	tb_admin(t, "bob", true);
	tb_admin(t, "nobody", true);
	ck_assert_int_eq(tb_apply(s, 4, t, res), 2);
	ck_assert_int_eq(res[0].err, 0);
	ck_assert_int_eq(res[1].err, IOL_ENOT_FOUND);
	ck_assert_int_eq(meta_state_get_user(s, "bob", &u), 0);
	ck_assert(u->admin);
	ck_assert_uint_eq(u->n_grants, 32);   /* the admin flag leaves grants be */
	meta_state_free_msg(u);
	ck_assert_uint_eq(creds_epoch(s), e0 + 1);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

START_TEST(test_sealed_keys)
{
	char dir[64];
	tmpdir(dir);
	struct meta_state *s = open_at(dir);
	struct meta_secret key;
	uint8_t raw[META_SECRET_KEY_BYTES] = { 42 };
	meta_secret_init(&key, raw);
	uint8_t blob[META_SECRET_BLOB_MAX], blob2[META_SECRET_BLOB_MAX];
	const char *sec = "secret-secret-alice-0001";
	int n = meta_secret_seal(&key, "AKALICE", sec, strlen(sec), blob);
	int n2 = meta_secret_seal(&key, "AKALICE", "a-new-secret-000000", 19, blob2);
	struct tb *t = tb_new();
	tb_init_map(t, 64, 4, 2);
	tb_user(t, "alice");
	tb_user(t, "bob");
	tb_key(t, false, "AKALICE", "alice", NULL, blob, (size_t)n);          /* sealed */
	tb_key(t, false, "AKOLD", "alice", "secret-secret-old-0001", NULL, 0); /* clear */
	tb_key(t, false, "AKBOTH", "alice", "secret-secret-both-001", blob, (size_t)n);
	tb_key(t, false, "AKBAD", "alice", NULL, blob, 20);                   /* short blob */
	tb_key(t, true, "AKOLD", "alice", NULL, blob2, (size_t)n2);           /* reseal */
	tb_key(t, true, "AKALICE", "bob", NULL, blob2, (size_t)n2);           /* not bob's */
	tb_key(t, true, "AKNONE", "alice", NULL, blob2, (size_t)n2);
	ck_assert_int_eq(tb_apply(s, 1, t, res), 10);
	ck_assert_int_eq(res[3].err, 0);
	ck_assert_int_eq(res[4].err, 0);
	ck_assert_int_eq(res[5].err, -EINVAL);
	ck_assert_int_eq(res[6].err, -EINVAL);
	ck_assert_int_eq(res[7].err, 0);
	ck_assert_int_eq(res[8].err, IOL_ECONFLICT);
	ck_assert_int_eq(res[9].err, IOL_ENOT_FOUND);
	ck_assert_uint_gt(res[7].epoch, 0);   /* a reseal bumps creds_epoch too */
	/* A new key bumps it (a gateway drops its cached "no such key");
	 * a refused one does not. */
	ck_assert_uint_eq(res[3].epoch, res[0].epoch + 1);
	ck_assert_uint_eq(res[4].epoch, res[3].epoch + 1);
	ck_assert_uint_eq(res[5].epoch, 0);
	ck_assert_uint_eq(res[7].epoch, res[4].epoch + 1);
	ck_assert_uint_eq(creds_epoch(s), 3);   /* two new keys, one reseal */
	Iolake__Meta__AccessKey *k;
	char out[META_SECRET_MAX + 1];
	ck_assert_int_eq(meta_state_get_access_key(s, "AKALICE", &k), 0);
	ck_assert_str_eq(k->secret_key, "");
	ck_assert_int_eq(meta_secret_of_key(&key, k, out, sizeof(out), NULL), (int)strlen(sec));
	ck_assert_str_eq(out, sec);
	meta_state_free_msg(k);
	ck_assert_int_eq(meta_state_get_access_key(s, "AKOLD", &k), 0);
	ck_assert_str_eq(k->secret_key, "");   /* the clear one is gone */
	ck_assert_uint_eq(k->secret_sealed.len, (size_t)n2);
	ck_assert_str_eq(k->user, "alice");
	meta_state_free_msg(k);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("grants");
	TCase *tc = tcase_create("grants");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_grants);
	tcase_add_test(tc, test_sealed_keys);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
