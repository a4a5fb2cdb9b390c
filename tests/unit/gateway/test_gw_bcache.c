/*
 * test_gw_bcache.c — the gateway's bucket cache (gateway/gw_bcache.c)
 * with a pinned clock: records kept only when cacheable, returned as
 * copies with their digest until the TTL, dropped by name; absent
 * entries (issue 16) hit only within the TTL, never look like a record,
 * are voided by a CreateBucket submitted or answered anywhere in the
 * process (also one that started before the entry was made), and give
 * way to a record of the same name. A collision evicts.
 *
 * Oracles: what get/absent return, and the metrics counters.
 */
#include <check.h>
#include <string.h>

#include "common/metrics.h"
#include "gateway/gw_bcache.h"

static Iolake__Meta__Bucket bucket(const char *name, Iolake__Meta__Usage *u)
{
	Iolake__Meta__Bucket b = IOLAKE__META__BUCKET__INIT;
	b.name = (char *)name;
	b.owner = "alice";
	b.usage = u;
	return b;
}

START_TEST(test_records)
{
	struct gw_bcache *c = gw_bcache_new(16, 1000, NULL);
	ck_assert_ptr_nonnull(c);
	Iolake__Meta__Usage u = IOLAKE__META__USAGE__INIT;
	Iolake__Meta__Bucket b = bucket("photos", &u);
	uint64_t d = 0;
	/* Not cacheable: no digest, or no usage (a range group's record). */
	gw_bcache_put(c, &b, 0, 100);
	ck_assert_ptr_null(gw_bcache_get(c, "photos", 100, &d));
	b.usage = NULL;
	gw_bcache_put(c, &b, 7, 100);
	ck_assert_ptr_null(gw_bcache_get(c, "photos", 100, &d));
	b.usage = &u;
	gw_bcache_put(c, &b, 7, 100);
	Iolake__Meta__Bucket *got = gw_bcache_get(c, "photos", 1099, &d);
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(got->owner, "alice");
	ck_assert_uint_eq(d, 7);
	protobuf_c_message_free_unpacked(&got->base, NULL);
	ck_assert_ptr_null(gw_bcache_get(c, "photos", 1100, &d)); /* the TTL */
	gw_bcache_put(c, &b, 8, 2000);
	gw_bcache_drop(c, "photos", false);
	ck_assert_ptr_null(gw_bcache_get(c, "photos", 2000, &d));
	gw_bcache_free(c);
}
END_TEST

START_TEST(test_absent)
{
	struct metrics_registry *reg = metrics_registry_new();
	struct gw_bcache *c = gw_bcache_new(16, 1000, reg);
	uint64_t d = 0;
	ck_assert(!gw_bcache_absent(c, "nope", 0));
	gw_bcache_put_absent(c, "nope", 100, gw_bcache_gen());
	ck_assert(gw_bcache_absent(c, "nope", 1099));
	ck_assert(!gw_bcache_absent(c, "nope2", 100));
	ck_assert(!gw_bcache_absent(c, "nope", 1100));              /* the TTL */
	gw_bcache_put_absent(c, "nope", 2000, gw_bcache_gen());
	ck_assert_ptr_null(gw_bcache_get(c, "nope", 2000, &d));     /* never a record */
	ck_assert(gw_bcache_absent(c, "nope", 2000));
	/* A create anywhere in the process voids it. */
	gw_bcache_bucket_created();
	ck_assert(!gw_bcache_absent(c, "nope", 2001));
	/* A read that began before a create does not make an entry. */
	uint64_t g = gw_bcache_gen();
	gw_bcache_bucket_created();
	gw_bcache_put_absent(c, "nope", 2002, g);
	ck_assert(!gw_bcache_absent(c, "nope", 2002));
	/* A record of the name replaces the absent entry. */
	gw_bcache_put_absent(c, "nope", 3000, gw_bcache_gen());
	Iolake__Meta__Usage u = IOLAKE__META__USAGE__INIT;
	Iolake__Meta__Bucket b = bucket("nope", &u);
	gw_bcache_put(c, &b, 9, 3000);
	ck_assert(!gw_bcache_absent(c, "nope", 3000));
	Iolake__Meta__Bucket *got = gw_bcache_get(c, "nope", 3000, &d);
	ck_assert_ptr_nonnull(got);
	protobuf_c_message_free_unpacked(&got->base, NULL);
	/* Counted: the two hits above (at 1099 and 2000). */
	struct metrics_counter *m =
		metrics_counter_find(reg, "iolake_gw_bucket_cache_absent_hits_total", NULL);
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(metrics_counter_get(m), 2);
	gw_bcache_free(c);
	metrics_registry_free(reg);
}
END_TEST

START_TEST(test_collision_evicts)
{
	struct gw_bcache *c = gw_bcache_new(1, 1000, NULL); /* one slot: all collide */
	gw_bcache_put_absent(c, "a", 0, gw_bcache_gen());
	gw_bcache_put_absent(c, "b", 0, gw_bcache_gen());
	ck_assert(!gw_bcache_absent(c, "a", 0));
	ck_assert(gw_bcache_absent(c, "b", 0));
	ck_assert_ptr_null(gw_bcache_new(3, 1000, NULL)); /* not a power of two */
	gw_bcache_free(c);
	gw_bcache_put_absent(NULL, "a", 0, 0);              /* no cache: nothing */
	ck_assert(!gw_bcache_absent(NULL, "a", 0));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gw_bcache");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_records);
	tcase_add_test(tc, test_absent);
	tcase_add_test(tc, test_collision_evicts);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
