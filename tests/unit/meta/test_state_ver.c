/*
 * test_state_ver.c — the version rules of meta's apply (meta/state_ver.c)
 * on real RocksDB under /dev/shm: PutBucketVersioning; overwrites under
 * Enabled keep every version (nothing queued for GC), under Suspended the
 * null version replaces the null one (exactly its shards queued) and
 * keeps the versioned ones, unversioned overwrites free as before; delete
 * markers (ListObjects skips the key, HeadObject still reads the marker);
 * DELETE of one version frees exactly it and promotes the next newest;
 * version ids ordered by apply; tags on one version (not on a marker);
 * ListVersions paging by key and version
 * markers returns every version once, in order; a bucket whose versions
 * are all deleted can be deleted.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "meta/list.h"
#include "meta/state.h"
#include "meta/state_ver.h"
#include "meta_test_util.h"

#define ENABLED IOLAKE__META__VERSIONING_STATE__VERSIONING_ENABLED
#define SUSPENDED IOLAKE__META__VERSIONING_STATE__VERSIONING_SUSPENDED

static struct meta_op_result res[META_BATCH_MAX_OPS];
static uint64_t idx;

static struct meta_state *fresh(char dir[64])
{
	tmpdir(dir);
	struct meta_state *s = NULL;
	ck_assert_int_eq(meta_state_open(dir, NULL, &s), 0);
	idx = 0;
	struct tb *t = tb_new();
	tb_create_bucket(t, 0, 0, "verb", "alice");
	ck_assert_int_eq(tb_apply(s, ++idx, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);
	return s;
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
	ck_assert_int_eq(tb_apply(s, ++idx, t, res), 1);
	return res[0].err;
}

/* PUT of size bytes (over 4096: one segment, i.e. shards) as mode says;
 * the new version id into vid (may be NULL). */
static void put(struct meta_state *s, int mode, const char *key, uint64_t size, char *vid)
{
	struct tb *t = tb_new();
	tb_put(t, 0, 0, "verb", key, size);
	t->ops[0]->versioning = mode;
	ck_assert_int_eq(tb_apply(s, ++idx, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);
	if (vid)
		snprintf(vid, 24, "%s", res[0].version_id);
}

static int del(struct meta_state *s, int mode, const char *key, const char *vid)
{
	struct tb *t = tb_new();
	tb_delete(t, 0, 0, "verb", key);
	t->ops[0]->versioning = mode;
	t->ops[0]->version_id = tb_str(t, vid ? vid : "");
	t->ops[0]->time_ms = 1700000000000ULL;
	ck_assert_int_eq(tb_apply(s, ++idx, t, res), 1);
	return res[0].err;
}

static uint64_t gc(struct meta_state *s)
{
	uint64_t n;
	ck_assert_int_eq(meta_state_gc_count(s, &n), 0);
	return n;
}

/* Every version of the bucket through ListVersions pages of max entries:
 * "key/vid" strings ("key/" for a common prefix) into out. */
static size_t list_all(struct meta_state *s, unsigned max, const char *delim, char out[][64],
		       size_t cap)
{
	size_t n = 0;
	char km[64] = "", vm[24] = "";
	for (;;) {
		Iolake__Meta__ListVersionsRequest q = IOLAKE__META__LIST_VERSIONS_REQUEST__INIT;
		Iolake__Meta__ListVersionsResponse r = IOLAKE__META__LIST_VERSIONS_RESPONSE__INIT;
		q.bucket = "verb";
		q.key_marker = km;
		q.version_id_marker = vm;
		q.delimiter = (char *)delim;
		q.max_keys = max;
		ck_assert_int_eq(meta_state_list_versions(s, &q, NULL, NULL, &r), 0);
		ck_assert_uint_le(r.n_entries, max);
		for (size_t i = 0; i < r.n_entries; i++) {
			const Iolake__Meta__VersionEntry *e = r.entries[i];
			ck_assert_uint_lt(n, cap);
			if (e->record)
				snprintf(out[n++], 64, "%s/%s%s", e->record->key,
					 e->record->version_id[0] ? e->record->version_id : "null",
					 e->is_latest ? "*" : "");
			else
				snprintf(out[n++], 64, "%s", e->prefix);
		}
		bool more = r.truncated;
		if (more) {
			const Iolake__Meta__VersionEntry *l = r.entries[r.n_entries - 1];
			snprintf(km, sizeof(km), "%s", l->record ? l->record->key : l->prefix);
			snprintf(vm, sizeof(vm), "%s",
				 !l->record ? "" : l->record->version_id[0] ? l->record->version_id : "null");
		}
		meta_state_list_versions_free(&r);
		if (!more)
			return n;
	}
}

START_TEST(test_enabled_keeps_every_version)
{
	char dir[64], v[3][24], got[16][64];
	struct meta_state *s = fresh(dir);
	ck_assert_int_eq(set_versioning(s, "verb", 0), -EINVAL);
	ck_assert_int_eq(set_versioning(s, "nosuch", ENABLED), IOL_ENOT_FOUND);
	ck_assert_int_eq(set_versioning(s, "verb", ENABLED), 0);
	Iolake__Meta__Bucket *b = NULL;
	ck_assert_int_eq(meta_state_get_bucket(s, "verb", &b), 0);
	ck_assert_int_eq(b->versioning, ENABLED);
	meta_state_free_msg(b);

	for (int i = 0; i < 3; i++)
		put(s, ENABLED, "k", 10000 + i, v[i]);
	ck_assert_uint_eq(gc(s), 0);   /* nothing freed */
	ck_assert_int_eq(strlen(v[0]), 16);
	ck_assert_int_lt(strcmp(v[0], v[1]), 0);   /* ordered by apply */
	ck_assert_int_lt(strcmp(v[1], v[2]), 0);
	ck_assert(res[0].retained);
	for (int i = 0; i < 3; i++) {
		Iolake__Meta__ObjectRecord *r = NULL;
		ck_assert_int_eq(meta_state_get_version(s, "verb", "k", v[i], &r), 0);
		ck_assert_uint_eq(r->size, 10000 + (uint64_t)i);
		meta_state_free_msg(r);
	}
	Iolake__Meta__ObjectRecord *r = NULL;
	ck_assert_int_eq(meta_state_get_version(s, "verb", "k", "0000000000000001", &r), IOL_ENOT_FOUND);
	ck_assert_int_eq(meta_state_get_version(s, "verb", "k", "bad", &r), -EINVAL);
	ck_assert_int_eq(meta_state_get_version(s, "verb", "k", "null", &r), IOL_ENOT_FOUND);

	size_t n = list_all(s, 1, "", got, 16);
	ck_assert_uint_eq(n, 3);
	char want[64];
	snprintf(want, sizeof(want), "k/%s*", v[2]);
	ck_assert_str_eq(got[0], want);
	snprintf(want, sizeof(want), "k/%s", v[1]);
	ck_assert_str_eq(got[1], want);
	snprintf(want, sizeof(want), "k/%s", v[0]);
	ck_assert_str_eq(got[2], want);

	/* a delete marker: ListObjects skips the key; nothing freed */
	ck_assert_int_eq(del(s, ENABLED, "k", NULL), 0);
	ck_assert(res[0].delete_marker);
	char mk[24];
	snprintf(mk, sizeof(mk), "%s", res[0].version_id);
	ck_assert_uint_eq(gc(s), 0);
	struct meta_list_req lr = { .bucket = "verb", .max_keys = 10, .want_records = true };
	struct meta_list_page pg;
	memset(&pg, 0, sizeof(pg));
	ck_assert_int_eq(meta_list(s, &lr, &pg), 0);
	ck_assert_uint_eq(pg.n, 0);
	meta_list_page_free(&pg);
	ck_assert_int_eq(meta_state_head_object(s, "verb", "k", &r), 0);
	ck_assert(r->is_delete_marker);
	meta_state_free_msg(r);
	ck_assert_uint_eq(list_all(s, 2, "", got, 16), 4);

	/* delete the marker: the newest version is current again */
	ck_assert_int_eq(del(s, ENABLED, "k", mk), 0);
	ck_assert(res[0].delete_marker);
	ck_assert_int_eq(meta_state_head_object(s, "verb", "k", &r), 0);
	ck_assert_str_eq(r->version_id, v[2]);
	meta_state_free_msg(r);
	ck_assert_uint_eq(gc(s), 0);   /* a marker owns no shards */

	/* delete the middle version: exactly its shards queued */
	ck_assert_int_eq(del(s, ENABLED, "k", v[1]), 0);
	ck_assert_uint_eq(gc(s), 1);
	ck_assert_int_eq(meta_state_get_version(s, "verb", "k", v[1], &r), IOL_ENOT_FOUND);
	ck_assert_int_eq(del(s, ENABLED, "k", v[1]), IOL_ENOT_FOUND);   /* gone already */
	ck_assert_int_eq(del(s, ENABLED, "k", "xyz"), -EINVAL);

	/* delete the rest: the key is gone and the bucket can go */
	ck_assert_int_eq(del(s, ENABLED, "k", v[2]), 0);
	ck_assert_int_eq(del(s, ENABLED, "k", v[0]), 0);
	ck_assert_uint_eq(gc(s), 3);
	ck_assert_int_eq(meta_state_head_object(s, "verb", "k", &r), IOL_ENOT_FOUND);
	ck_assert_uint_eq(list_all(s, 5, "", got, 16), 0);
	struct tb *t = tb_new();
	tb_delete_bucket(t, 0, 0, "verb");
	ck_assert_int_eq(tb_apply(s, ++idx, t, res), 1);
	ck_assert_int_eq(res[0].err, 0);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

START_TEST(test_suspended_null_replaces_null)
{
	char dir[64], v1[24], n1[24], got[16][64];
	struct meta_state *s = fresh(dir);
	put(s, 0, "k", 9000, n1);        /* before versioning: the null version */
	ck_assert_str_eq(n1, "");
	ck_assert_int_eq(set_versioning(s, "verb", ENABLED), 0);
	put(s, ENABLED, "k", 9001, v1);  /* keeps the null one */
	ck_assert_uint_eq(gc(s), 0);
	Iolake__Meta__ObjectRecord *r = NULL;
	ck_assert_int_eq(meta_state_get_version(s, "verb", "k", "null", &r), 0);
	ck_assert_uint_eq(r->size, 9000);
	meta_state_free_msg(r);

	ck_assert_int_eq(set_versioning(s, "verb", SUSPENDED), 0);
	put(s, SUSPENDED, "k", 9002, NULL);   /* replaces the older null: freed */
	ck_assert_uint_eq(gc(s), 1);
	ck_assert(res[0].retained);           /* the versioned current is kept */
	put(s, SUSPENDED, "k", 9003, NULL);   /* replaces the current null */
	ck_assert_uint_eq(gc(s), 2);
	ck_assert(!res[0].retained);
	ck_assert_int_eq(meta_state_get_version(s, "verb", "k", "null", &r), 0);
	ck_assert_uint_eq(r->size, 9003);
	meta_state_free_msg(r);
	ck_assert_int_eq(meta_state_get_version(s, "verb", "k", v1, &r), 0);
	meta_state_free_msg(r);
	ck_assert_uint_eq(list_all(s, 1, "", got, 16), 2);
	ck_assert_str_eq(got[0], "k/null*");

	/* a suspended delete: a null marker over the null version (freed) */
	ck_assert_int_eq(del(s, SUSPENDED, "k", NULL), 0);
	ck_assert(res[0].delete_marker);
	ck_assert_str_eq(res[0].version_id, "");
	ck_assert_uint_eq(gc(s), 3);
	ck_assert_uint_eq(list_all(s, 10, "", got, 16), 2);
	ck_assert_str_eq(got[0], "k/null*");
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

START_TEST(test_unversioned_unchanged)
{
	char dir[64];
	struct meta_state *s = fresh(dir);
	put(s, 0, "k", 9000, NULL);
	put(s, 0, "k", 9001, NULL);
	ck_assert(!res[0].retained);
	ck_assert_uint_eq(gc(s), 1);
	ck_assert_int_eq(del(s, 0, "k", NULL), 0);
	ck_assert(!res[0].delete_marker);
	ck_assert_uint_eq(gc(s), 2);
	Iolake__Meta__ObjectRecord *r = NULL;
	ck_assert_int_eq(meta_state_head_object(s, "verb", "k", &r), IOL_ENOT_FOUND);
	ck_assert_int_eq(del(s, 0, "k", NULL), IOL_ENOT_FOUND);

	/* An op stamped UNSET by a gateway that read the bucket before
	 * versioning came on never removes the 'O' row of a key with older
	 * versions: it makes a null marker (suspended rules). */
	char v1[24], got[8][64];
	ck_assert_int_eq(set_versioning(s, "verb", ENABLED), 0);
	put(s, ENABLED, "j", 9000, v1);
	put(s, SUSPENDED, "j", 9001, NULL);   /* a null current over v1 */
	uint64_t before = gc(s);
	ck_assert_int_eq(del(s, 0, "j", NULL), 0);
	ck_assert(res[0].delete_marker);
	ck_assert_uint_eq(gc(s), before + 1);   /* the null version freed, v1 kept */
	ck_assert_uint_eq(list_all(s, 10, "", got, 8), 2);
	ck_assert_str_eq(got[0], "j/null*");
	char want[64];
	snprintf(want, sizeof(want), "j/%s", v1);
	ck_assert_str_eq(got[1], want);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

static int set_tag(struct meta_state *s, const char *key, const char *vid, const char *val)
{
	struct tb *t = tb_new();
	Iolake__Meta__Op *op = tb_op(t, 0, 0);
	Iolake__Meta__SetObjectTags *st = tb_alloc(t, sizeof(*st));
	iolake__meta__set_object_tags__init(st);
	st->bucket = tb_str(t, "verb");
	st->key = tb_str(t, key);
	Iolake__Meta__SetObjectTags__TagsEntry *e = tb_alloc(t, sizeof(*e));
	iolake__meta__set_object_tags__tags_entry__init(e);
	e->key = tb_str(t, "v");
	e->value = tb_str(t, val);
	st->n_tags = 1;
	st->tags = tb_alloc(t, sizeof(*st->tags));
	st->tags[0] = e;
	op->body_case = IOLAKE__META__OP__BODY_PUT_OBJECT_TAGS;
	op->put_object_tags = st;
	op->version_id = tb_str(t, vid ? vid : "");
	ck_assert_int_eq(tb_apply(s, ++idx, t, res), 1);
	return res[0].err;
}

START_TEST(test_version_tags)
{
	char dir[64], v1[24], v2[24];
	struct meta_state *s = fresh(dir);
	ck_assert_int_eq(set_versioning(s, "verb", ENABLED), 0);
	put(s, ENABLED, "k", 100, v1);
	put(s, ENABLED, "k", 100, v2);
	ck_assert_int_eq(set_tag(s, "k", v1, "old"), 0);
	ck_assert_int_eq(set_tag(s, "k", NULL, "cur"), 0);
	Iolake__Meta__ObjectRecord *r = NULL;
	ck_assert_int_eq(meta_state_get_version(s, "verb", "k", v1, &r), 0);
	ck_assert_uint_eq(r->n_tags, 1);
	ck_assert_str_eq(r->tags[0]->value, "old");
	meta_state_free_msg(r);
	ck_assert_int_eq(meta_state_get_version(s, "verb", "k", v2, &r), 0);
	ck_assert_str_eq(r->tags[0]->value, "cur");
	meta_state_free_msg(r);
	ck_assert_int_eq(set_tag(s, "k", "00000000000000ff", "x"), IOL_ENOT_FOUND);
	ck_assert_int_eq(set_tag(s, "k", "null", "x"), IOL_ENOT_FOUND);
	ck_assert_int_eq(del(s, ENABLED, "k", NULL), 0);
	ck_assert_int_eq(set_tag(s, "k", NULL, "x"), IOL_ENOT_FOUND);   /* a marker */
	ck_assert_int_eq(set_tag(s, "k", v1, "again"), 0);              /* its old versions */
	ck_assert_uint_eq(gc(s), 0);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

START_TEST(test_list_versions_paging)
{
	enum { KEYS = 40, VERS = 5 };
	static char got[KEYS * VERS + 8][64], want[KEYS * VERS][64];
	char dir[64], vid[24];
	struct meta_state *s = fresh(dir);
	ck_assert_int_eq(set_versioning(s, "verb", ENABLED), 0);
	char ids[KEYS][VERS][24];
	for (int v = 0; v < VERS; v++)
		for (int k = 0; k < KEYS; k++) {
			char key[32];
			snprintf(key, sizeof(key), "d%d/key%03d", k % 3, k);
			put(s, ENABLED, key, 100, vid);
			snprintf(ids[k][v], 24, "%s", vid);
		}
	/* expected: keys ascending, versions newest first */
	size_t nw = 0;
	for (int d = 0; d < 3; d++)
		for (int k = 0; k < KEYS; k++) {
			if (k % 3 != d)
				continue;
			for (int v = VERS - 1; v >= 0; v--)
				snprintf(want[nw++], 64, "d%d/key%03d/%s%s", d, k, ids[k][v],
					 v == VERS - 1 ? "*" : "");
		}
	for (unsigned max = 1; max <= 13; max += 4) {
		size_t n = list_all(s, max, "", got, KEYS * VERS + 8);
		ck_assert_uint_eq(n, nw);
		for (size_t i = 0; i < n; i++)
			ck_assert_str_eq(got[i], want[i]);
	}
	size_t n = list_all(s, 2, "/", got, 8);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(got[0], "d0/");
	ck_assert_str_eq(got[2], "d2/");

	/* a range [d1/key010, d2/) sees only its keys */
	Iolake__Meta__ListVersionsRequest q = IOLAKE__META__LIST_VERSIONS_REQUEST__INIT;
	Iolake__Meta__ListVersionsResponse r = IOLAKE__META__LIST_VERSIONS_RESPONSE__INIT;
	q.bucket = "verb";
	q.max_keys = 1000;
	ck_assert_int_eq(meta_state_list_versions(s, &q, "d1/key010", "d2/", &r), 0);
	for (size_t i = 0; i < r.n_entries; i++) {
		ck_assert_int_ge(strcmp(r.entries[i]->record->key, "d1/key010"), 0);
		ck_assert_int_lt(strcmp(r.entries[i]->record->key, "d2/"), 0);
	}
	ck_assert(!r.truncated);
	ck_assert_uint_gt(r.n_entries, 0);
	meta_state_list_versions_free(&r);
	meta_state_close(s);
	rm_rf(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("state_ver");
	TCase *tc = tcase_create("state_ver");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_enabled_keeps_every_version);
	tcase_add_test(tc, test_suspended_null_replaces_null);
	tcase_add_test(tc, test_unversioned_unchanged);
	tcase_add_test(tc, test_list_versions_paging);
	tcase_add_test(tc, test_version_tags);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
